//! The global symbols a static library (`ar` archive) defines, read from
//! its symbol table (the `/` member GNU `ar` and `llvm-ar` write first, or
//! `/SYM64/` for big archives): `snet build` refuses a box whose C
//! function would have the name of a symbol of the runtime library, which
//! the linker would otherwise report as a duplicate definition (or, for a
//! weak symbol, silently replace).
//!
//! The format (System V / GNU): the magic `!<arch>\n`, then members, each
//! a 60-byte header (name, dates, ids, mode, size in decimal at bytes
//! 48..58, the end mark `` `\n ``) and its data padded to an even length.
//! The symbol table's data is a big-endian count (4 bytes, 8 in
//! `/SYM64/`), that many member offsets of the same width, then the
//! symbol names, each ended by a NUL.

use std::collections::HashSet;
use std::io::Read;
use std::path::Path;

const MAGIC: &[u8; 8] = b"!<arch>\n";
const HEADER: usize = 60;

/// The names in the symbol table of the archive at `path`; an empty set
/// if it has none (an archive made without one links only as a whole,
/// which the linker then reports itself).
pub fn global_symbols(path: &Path) -> std::io::Result<HashSet<String>> {
    let mut f = std::fs::File::open(path)?;
    let bad = |what: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not a static library ({what})"),
        )
    };
    let mut head = Vec::with_capacity(MAGIC.len() + HEADER);
    f.by_ref()
        .take((MAGIC.len() + HEADER) as u64)
        .read_to_end(&mut head)?;
    if head.len() < MAGIC.len() || &head[..MAGIC.len()] != MAGIC {
        return Err(bad("no archive magic"));
    }
    if head.len() == MAGIC.len() {
        // An archive of no members: no symbols.
        return Ok(HashSet::new());
    }
    if head.len() < MAGIC.len() + HEADER {
        return Err(bad("a member header cut short"));
    }
    let h = &head[MAGIC.len()..];
    let name = std::str::from_utf8(&h[..16]).map_err(|_| bad("member name"))?;
    let width = match name.trim_end() {
        "/" => 4,
        "/SYM64/" => 8,
        _ => return Ok(HashSet::new()),
    };
    let size: usize = std::str::from_utf8(&h[48..58])
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| bad("member size"))?;
    let mut data = vec![0u8; size];
    f.read_exact(&mut data)?;
    symbol_names(&data, width).ok_or_else(|| bad("symbol table"))
}

/// The names of a symbol table's data (`width`: 4 or 8 bytes per number).
fn symbol_names(data: &[u8], width: usize) -> Option<HashSet<String>> {
    let number = |at: usize| -> Option<usize> {
        let b = data.get(at..at + width)?;
        let v = b.iter().fold(0u64, |v, &x| v << 8 | u64::from(x));
        usize::try_from(v).ok()
    };
    let count = number(0)?;
    let names = width.checked_mul(count.checked_add(1)?)?;
    let mut out = HashSet::with_capacity(count.min(1 << 20));
    let mut rest = data.get(names..)?;
    for _ in 0..count {
        let end = rest.iter().position(|&b| b == 0)?;
        out.insert(String::from_utf8_lossy(&rest[..end]).into_owned());
        rest = &rest[end + 1..];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_cut_archives_read_as_such() {
        // A directory of its own: tests run in parallel in one process.
        let dir = std::env::temp_dir().join(format!("snet-archive-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.a");
        std::fs::write(&empty, MAGIC).unwrap();
        assert!(global_symbols(&empty).unwrap().is_empty());
        let cut = dir.join("cut.a");
        std::fs::write(&cut, b"!<arch>\n/     ").unwrap();
        let e = global_symbols(&cut).unwrap_err().to_string();
        assert_eq!(e, "not a static library (a member header cut short)");
        let other = dir.join("other.a");
        std::fs::write(&other, b"hello").unwrap();
        let e = global_symbols(&other).unwrap_err().to_string();
        assert_eq!(e, "not a static library (no archive magic)");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An archive of one symbol table (as `ar` writes it) and no members.
    fn archive(names: &[&str], sym64: bool) -> Vec<u8> {
        let width = if sym64 { 8 } else { 4 };
        let mut data = Vec::new();
        let num = |v: u64, d: &mut Vec<u8>| d.extend_from_slice(&v.to_be_bytes()[8 - width..]);
        num(names.len() as u64, &mut data);
        for _ in names {
            num(0, &mut data);
        }
        for n in names {
            data.extend_from_slice(n.as_bytes());
            data.push(0);
        }
        let name = if sym64 { "/SYM64/" } else { "/" };
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(
            format!(
                "{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
                0,
                0,
                0,
                0,
                data.len()
            )
            .as_bytes(),
        );
        out.extend_from_slice(&data);
        out
    }

    #[test]
    fn reads_both_symbol_table_forms() {
        let dir = std::env::temp_dir().join(format!("snet-archive-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for sym64 in [false, true] {
            let p = dir.join(format!("lib{sym64}.a"));
            std::fs::write(&p, archive(&["mi_malloc", "snet_runner_main"], sym64)).unwrap();
            let s = global_symbols(&p).unwrap();
            assert_eq!(s.len(), 2, "{sym64}");
            assert!(s.contains("mi_malloc") && s.contains("snet_runner_main"));
        }
        let p = dir.join("not.a");
        std::fs::write(&p, b"!<arch>\nshort").unwrap();
        assert!(global_symbols(&p).is_err());
        std::fs::write(&p, [&MAGIC[..], &[b' '; 60]].concat()).unwrap();
        assert!(global_symbols(&p).unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
