//! Reading the C compiler's and linker's messages after a failed `snet
//! build`: box functions declared with another type than their box's
//! (gcc's and clang's texts), box functions with parameters beyond their
//! signatures, box functions defined twice, and the messages that name
//! the boxes in them.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use c4snet::codegen::{self, expected_prototype, Naming};
use snet_core::BoxDef;
use snet_front::Diagnostic;

/// How a box source's C declaration of a box function disagrees with the box.
#[derive(Clone, Debug, PartialEq, Eq)]
enum MismatchKind {
    /// Another type; the compiler's spelling of it, if it gave one (gcc does).
    Type(Option<String>),
    /// Declared `static`: the runtime cannot reach it.
    Static,
    /// The name is declared as something other than a function.
    NotFunction,
}

/// A declaration of box `name`'s function of another type than the box's,
/// at `file`:`line`, as the C compiler reported it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Mismatch {
    name: String,
    file: String,
    line: u32,
    kind: MismatchKind,
}

/// `text` without ANSI colour sequences (`--cflags -fdiagnostics-color`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(ch) = chars.next() {
        if ch == '\u{1b}' {
            // ESC [ parameters final-byte
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(ch);
        }
    }
    out
}

/// The declarations of box functions of another type than the prototype
/// header's, from the C compiler's messages `err` (gcc and clang, quotes
/// plain or typographic): `conflicting types for 'NAME'`, gcc's K&R
/// `number of arguments doesn't match prototype` in `NAME`, `static
/// declaration of 'NAME' follows non-static declaration`, and `NAME`
/// redeclared as another kind of symbol. At most one per box and place.
fn signature_mismatches(err: &str, names: &[&str]) -> Vec<Mismatch> {
    let text = strip_ansi(err).replace(['\u{2018}', '\u{2019}'], "'");
    let mut out: Vec<Mismatch> = Vec::new();
    let mut function: Option<&str> = None;
    for line in text.lines() {
        if let Some(i) = line.find(": In function '") {
            let rest = &line[i + ": In function '".len()..];
            function = rest.strip_suffix("':");
            continue;
        }
        if line.ends_with(": At top level:") {
            function = None;
            continue;
        }
        let Some(i) = line.find(": error: ") else {
            continue;
        };
        let (place, msg) = (&line[..i], &line[i + ": error: ".len()..]);
        // FILE:LINE[:COL]
        let mut parts = place.rsplitn(3, ':');
        let (last, mid, first) = (parts.next(), parts.next(), parts.next());
        let number = |s: Option<&str>| s.and_then(|s| s.parse::<u32>().ok());
        let (file, line) = match (number(last), number(mid), first, mid) {
            (Some(_), Some(line), Some(file), _) => (file, line),
            (Some(line), None, _, Some(file)) => (file, line),
            _ => continue,
        };
        let found = names.iter().find_map(|&name| {
            let q = format!("'{name}'");
            let kind = if let Some(rest) = msg.strip_prefix(&format!("conflicting types for {q}")) {
                let have = rest
                    .strip_prefix("; have '")
                    .and_then(|t| t.split('\'').next())
                    .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "));
                MismatchKind::Type(have)
            } else if msg.starts_with(&format!("static declaration of {q}")) {
                MismatchKind::Static
            } else if msg.starts_with(&format!("{q} redeclared as different kind of symbol"))
                || msg.starts_with(&format!("redefinition of {q} as different kind of symbol"))
            {
                MismatchKind::NotFunction
            } else if function == Some(name) && msg.ends_with("doesn't match prototype") {
                MismatchKind::Type(None)
            } else {
                return None;
            };
            Some(Mismatch {
                name: name.to_string(),
                file: file.to_string(),
                line,
                kind,
            })
        });
        if let Some(m) = found {
            if !out
                .iter()
                .any(|o| o.name == m.name && o.file == m.file && o.line == m.line)
            {
                out.push(m);
            }
        }
    }
    out
}

/// gcc's spelling of a function type with the function's name put in:
/// `void *(void *, int)` becomes `void *NAME(void *, int)` (left as it is
/// when its return type has parentheses of its own).
fn with_name(ty: &str, name: &str) -> String {
    match ty.find('(') {
        Some(i) if !ty[i + 1..].starts_with('*') && !ty[i + 1..].starts_with('^') => {
            let sep = if ty[..i].ends_with(['*', ' ']) {
                ""
            } else {
                " "
            };
            format!("{}{sep}{name}{}", &ty[..i], &ty[i..])
        }
        _ => ty.to_string(),
    }
}

/// Whether `file` (as the compiler named it) lies outside `dirs` (the
/// program's, the sources' and the `-I` directories): a system header, whose
/// declaration of a box's name is not the box's function but, say, the C
/// library's.
fn outside(file: &str, dirs: &[PathBuf]) -> bool {
    let Ok(f) = Path::new(file).canonicalize() else {
        return false;
    };
    !dirs
        .iter()
        .filter_map(|d| d.canonicalize().ok())
        .any(|d| f.starts_with(d))
}

/// The error for a box whose C function does not match it; `foreign` if
/// the declaration is outside the program's sources (see [`outside`]).
fn mismatch_message(b: &BoxDef, m: &Mismatch, foreign: bool) -> String {
    let at = format!("{}:{}", m.file, m.line);
    let mut s = match &m.kind {
        _ if foreign => format!(
            "error: box `{}` ({}) has the name of a C function declared with another type at {at}, outside the program's sources (the C library's?): rename the box\n",
            b.name, b.loc
        ),
        MismatchKind::Type(_) => format!(
            "error: box `{}` ({}) does not match its C function at {at}\n",
            b.name, b.loc
        ),
        MismatchKind::Static => format!(
            "error: box `{}` ({}): its C function at {at} is `static`, which the runtime cannot call\n",
            b.name, b.loc
        ),
        MismatchKind::NotFunction => format!(
            "error: box `{}` ({}): `{}` at {at} is not a function\n",
            b.name, b.loc, b.name
        ),
    };
    let _ = writeln!(s, "  expected: {}", expected_prototype(b));
    if let MismatchKind::Type(Some(ty)) = &m.kind {
        let _ = writeln!(s, "     found: {}", with_name(ty, &b.name));
    }
    s
}

/// Below the mismatches: the rule they break.
pub(super) const PROTOTYPE_RULE: &str = "note: a box's C function returns `void *` and takes the handle (`void *hnd`), then one parameter per input label in signature order: `c4snet_data_t *` for a field, `int` for a tag or binding tag (parameter names do not matter)";

/// If the linker reports box `name` defined twice, the box sources among
/// `inputs` its message names (possibly none it can tell).
fn duplicate_definition(err: &str, name: &str, inputs: &[PathBuf]) -> Option<Vec<String>> {
    let gnu = format!("multiple definition of `{name}'");
    let lld = format!("duplicate symbol: {name}");
    let lines: Vec<&str> = err.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains(&gnu) || l.trim_end().ends_with(&lld))?;
    // GNU ld names both files on the line; lld on the `>>>` lines below it.
    let mut text = lines[at].to_string();
    for l in lines[at + 1..]
        .iter()
        .take_while(|l| l.trim_start().starts_with(">>>"))
    {
        text.push_str(l);
    }
    let named = inputs
        .iter()
        .filter(|p| {
            let base = p
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            !base.is_empty() && text.contains(&base)
        })
        .map(|p| p.display().to_string())
        .collect();
    Some(named)
}

/// A box function with parameters beyond its signature's: the C source
/// that defines it (its trampoline is compiled there), where the compiler
/// saw it, and the extra parameters' types as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Extra {
    pub(super) source: PathBuf,
    at: String,
    pub(super) params: Vec<String>,
}

/// A C type as compared here: blanks only where needed, `struct cdata` as
/// `c4snet_data_t`, a top-level `const` of a non-pointer dropped.
fn normal_type(t: &str) -> String {
    let words = t.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut t = words
        .replace(" *", "*")
        .replace("* ", "*")
        .replace("struct cdata", "c4snet_data_t");
    if !t.contains('*') {
        t = t
            .split(' ')
            .filter(|w| *w != "const")
            .collect::<Vec<_>>()
            .join(" ");
    }
    t
}

/// The top-level comma-separated items of `list` (no parentheses around).
fn split_params(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for ch in list.chars() {
        match ch {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// A parameter declaration without its name: `int T` -> `int`,
/// `c4snet_data_t *x` -> `c4snet_data_t *`; as it is if it names no
/// parameter (`int`, `void *`). `None` for what this does not read
/// (arrays, function pointers).
fn param_type(p: &str) -> Option<String> {
    if p.contains(['(', '[']) {
        return None;
    }
    let p = p.trim();
    let cut = p
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    let (ty, last) = (p[..cut].trim(), &p[cut..]);
    const TYPE_WORDS: [&str; 12] = [
        "int", "char", "short", "long", "unsigned", "signed", "float", "double", "void", "_Bool",
        "bool", "const",
    ];
    if ty.is_empty() || (TYPE_WORDS.contains(&last) && !ty.ends_with('*')) {
        return Some(p.to_string());
    }
    Some(ty.to_string())
}

/// The parameters of box `name`'s function as written in its declaration
/// at `file`:`line` (names included).
fn source_params(name: &str, file: &str, line: u32) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(file).ok()?;
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1) as usize)
        .map(str::len)
        .sum();
    let rest = &text[start..];
    let at = rest.find(name)?;
    let after = rest[at + name.len()..].trim_start();
    let inner = after.strip_prefix('(')?;
    let mut depth = 1;
    let end = inner.find(|c: char| {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        depth == 0
    })?;
    Some(split_params(&inner[..end]))
}

/// The parameter types of box `name`'s function as the compiler reported
/// it: from gcc's `have 'void *(void *, int)'` (`found`), else from the
/// declaration at `file`:`line` (clang names no type).
fn found_params(name: &str, found: Option<&str>, file: &str, line: u32) -> Option<Vec<String>> {
    if let Some(ty) = found {
        let open = ty.find('(')?;
        if normal_type(&ty[..open]) != "void*" {
            return None;
        }
        let inner = ty[open + 1..].strip_suffix(')')?;
        return Some(split_params(inner));
    }
    source_params(name, file, line)?
        .iter()
        .map(|p| param_type(p))
        .collect()
}

/// The boxes whose C functions disagree with their signatures only by
/// parameters beyond them (every other parameter as the signature
/// says), from the compiler's messages `err`, if every disagreement is of
/// that kind (otherwise `None`: the errors stand); each with the C source
/// among `inputs` that defines it.
pub(super) fn extra_parameters(
    err: &str,
    boxes: &[&BoxDef],
    inputs: &[PathBuf],
) -> Option<BTreeMap<String, Extra>> {
    let names: Vec<&str> = boxes
        .iter()
        .filter(|b| b.code.is_none())
        .map(|b| b.name.as_str())
        .collect();
    let mismatches = signature_mismatches(err, &names);
    if mismatches.is_empty() {
        return None;
    }
    let mut out: BTreeMap<String, Extra> = BTreeMap::new();
    for m in &mismatches {
        let b = boxes.iter().find(|b| b.name == m.name)?;
        let MismatchKind::Type(found) = &m.kind else {
            return None;
        };
        let params = found_params(&b.name, found.as_deref(), &m.file, m.line)?;
        let want: Vec<String> = codegen::parameter_list(b, Naming::Unnamed)
            .map(|p| normal_type(&p))
            .collect();
        if params.len() <= want.len() || params.iter().zip(&want).any(|(p, w)| normal_type(p) != *w)
        {
            return None;
        }
        let mut extra = params[want.len()..].to_vec();
        // As written, with their names, where the declaration can be read.
        if let Some(written) = source_params(&b.name, &m.file, m.line) {
            if written.len() == params.len() {
                extra = written[want.len()..].to_vec();
            }
        }
        if params[want.len()..]
            .iter()
            .any(|p| normal_type(p) == "void" || p.contains("..."))
        {
            return None;
        }
        let at = format!("{}:{}", m.file, m.line);
        let is_input = |file: &str| {
            let f = Path::new(file).canonicalize().ok();
            inputs
                .iter()
                .any(|i| i.extension().is_some_and(|x| x == "c") && i.canonicalize().ok() == f)
        };
        match out.get_mut(&b.name) {
            Some(e) if e.params.len() != extra.len() => return None,
            // Name the definition (a C source) rather than a header's declaration.
            Some(e) => {
                if is_input(&m.file) && !is_input(&e.at[..e.at.rfind(':').unwrap_or(0)]) {
                    e.at = at;
                    e.params = extra;
                }
            }
            None => {
                // The C source that defines it: where the compiler saw it,
                // if that is a C source given, else the first that calls
                // it by name.
                let source = inputs
                    .iter()
                    .filter(|f| f.extension().is_some_and(|x| x == "c"))
                    .find(|f| Path::new(&m.file).canonicalize().ok() == f.canonicalize().ok())
                    .or_else(|| {
                        inputs
                            .iter()
                            .filter(|f| f.extension().is_some_and(|x| x == "c"))
                            .find(|f| {
                                std::fs::read_to_string(f).is_ok_and(|t| {
                                    t.match_indices(b.name.as_str()).any(|(i, _)| {
                                        t[i + b.name.len()..].trim_start().starts_with('(')
                                    })
                                })
                            })
                    })?
                    .clone();
                out.insert(
                    b.name.clone(),
                    Extra {
                        source,
                        at,
                        params: extra,
                    },
                );
            }
        }
    }
    Some(out)
}

/// The warning for box `b`, whose C function has the parameters `e`
/// beyond its signature.
pub(super) fn extra_warning(b: &BoxDef, e: &Extra) -> String {
    let n = e.params.len();
    format!(
        "warning: box `{}` ({}): its C function at {} has {n} parameter{} more than the signature gives values for ({}); {} 0 (NULL for a pointer) on every call\n  signature: {}",
        b.name,
        b.loc,
        e.at,
        if n == 1 { "" } else { "s" },
        e.params
            .iter()
            .map(|p| format!("`{p}`"))
            .collect::<Vec<_>>()
            .join(", "),
        if n == 1 { "it receives" } else { "they receive" },
        expected_prototype(b)
    )
}

/// A failed compiler run of `snet build`, as [`report_failure`] reads it.
pub(super) struct Failure<'a> {
    /// The compiler's messages.
    pub err: &'a str,
    /// How it ended.
    pub status: std::process::ExitStatus,
    /// The C compiler's command (`$CC`).
    pub cc: &'a str,
    /// Whether the program has C++ sources.
    pub cxx: bool,
    /// The boxes built (one per name).
    pub boxes: &'a [&'a BoxDef],
    /// The box sources given.
    pub inputs: &'a [PathBuf],
    /// The program's, the sources' and the `-I` directories.
    pub dirs: &'a [PathBuf],
    /// The program's file name and text, for diagnostics.
    pub program: &'a str,
    pub source: &'a str,
    /// Whether diagnostics are coloured.
    pub color: bool,
}

/// Reports why the C compiler failed in terms of the program's boxes:
/// box functions of another type (with the prototype each needs), boxes
/// defined twice (inline body and box source), boxes not defined; else
/// the compiler's own messages.
pub(super) fn report_failure(f: &Failure) {
    let Failure {
        err,
        status,
        cc,
        cxx,
        boxes,
        inputs,
        dirs,
        program: name,
        source,
        color,
    } = *f;
    let names: Vec<&str> = boxes
        .iter()
        .filter(|b| b.code.is_none())
        .map(|b| b.name.as_str())
        .collect();
    let mismatches = signature_mismatches(err, &names);
    let missing: Vec<&&BoxDef> = boxes
        .iter()
        .filter(|b| err.contains(&format!("undefined reference to `{}'", b.name)))
        .collect();
    let twice: Vec<Diagnostic> = boxes
        .iter()
        .filter_map(|b| {
            let code = b.code.as_ref()?;
            let files = duplicate_definition(err, &b.name, inputs)?;
            let where_ = if files.is_empty() {
                "one of the box sources".to_string()
            } else {
                files.join(" and ")
            };
            Some(
                Diagnostic::error(
                    code.language_span.clone(),
                    format!(
                        "box `{}` is defined twice: by its inline body and in {where_}",
                        b.name
                    ),
                )
                .with_label("the inline body defines the C function `".to_string() + &b.name + "`")
                .with_note(format!(
                    "remove the inline body or the function `{}` in {where_}",
                    b.name
                )),
            )
        })
        .collect();
    if !mismatches.is_empty() {
        for m in &mismatches {
            if let Some(b) = boxes.iter().find(|b| b.name == m.name) {
                eprint!("{}", mismatch_message(b, m, outside(&m.file, dirs)));
            }
        }
        eprintln!("{PROTOTYPE_RULE}");
        eprintln!("the C compiler (`{cc}`) reported:");
        eprint!("{err}");
    } else if !twice.is_empty() {
        for line in err.lines().filter(|l| {
            !l.contains("multiple definition")
                && !l.contains("ld returned")
                && !l.contains(": in function")
                && !l.contains("duplicate symbol")
                && !l.trim_start().starts_with(">>>")
        }) {
            eprintln!("{line}");
        }
        eprint!("{}", snet_front::render(&twice, name, source, color));
    } else if missing.is_empty() {
        eprint!("{err}");
        eprintln!("error: the C compiler failed ({})", status);
    } else {
        // Keep the compiler's other messages (they may explain why), drop the linker noise.
        for line in err.lines().filter(|l| {
            !l.contains("undefined reference")
                && !l.contains("ld returned")
                && !l.contains(": in function")
        }) {
            eprintln!("{line}");
        }
        for b in missing {
            eprintln!(
                "error: box `{}` ({}) is not defined: no function `{}` in {}",
                b.name,
                b.loc,
                b.name,
                if inputs.is_empty() {
                    "any box source (none given)".to_string()
                } else {
                    inputs
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            );
            if cxx {
                eprintln!(
                        "note: in C++, a function `{}` of another type is another overload, not the box function; it must be `{}`",
                        b.name,
                        expected_prototype(b)
                    );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buildcmd::generate::used_boxes;

    #[test]
    fn extra_parameters_are_found_from_gcc_or_the_source() {
        let c = snet_front::compile(
            "p.snet",
            "box ident((x, <n>) -> (x));\nnet n connect ident;",
            None,
        );
        let g = c.graph.expect("compiles");
        let boxes = used_boxes(&g);
        let dir = std::env::temp_dir().join(format!("snet-extra-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("ident.c");
        std::fs::write(
            &src,
            "#include \"C4SNet.h\"\n\nvoid *ident( void *hnd, c4snet_data_t *x,\n  int n, int T, char *s)\n{ return hnd; }\n",
        )
        .unwrap();
        let f = src.display().to_string();
        // gcc names the type it found; clang does not (read from the source).
        let gcc = format!("{f}:3:7: error: conflicting types for \u{2018}ident\u{2019}; have \u{2018}void *(void *, c4snet_data_t *, int,  int,  char *)\u{2019}\n");
        let clang = format!("{f}:3:7: error: conflicting types for 'ident'\n");
        for err in [gcc, clang] {
            let e = extra_parameters(&err, &boxes, std::slice::from_ref(&src)).expect(&err);
            let e = &e["ident"];
            assert_eq!(e.params, ["int T", "char *s"]);
            assert_eq!(e.source, src);
        }
        // A missing, swapped or wrongly typed parameter stays an error.
        for bad in [
            "void *(void *, c4snet_data_t *)",
            "void *(void *, int, c4snet_data_t *, int)",
            "void *(void *, char *, int, int)",
            "int (void *, c4snet_data_t *, int, int)",
        ] {
            let err = format!("{f}:3:7: error: conflicting types for 'ident'; have '{bad}'\n");
            assert_eq!(
                extra_parameters(&err, &boxes, std::slice::from_ref(&src)),
                None,
                "{bad}"
            );
        }
        let t = c4snet::trampoline_source_extra(boxes[0], 2);
        assert!(
            t.contains("(void)ident(__snet_h, __snet_a[0].field, __snet_a[1].tag, 0, 0);"),
            "{t}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn duplicate_definitions_are_found_in_linker_messages() {
        let inputs = [PathBuf::from("src/f.c"), PathBuf::from("g.c")];
        let gnu = "/usr/bin/ld: /tmp/cc1.o: in function `f':\nsnet_inline.c:(.text+0x0): multiple definition of `f'; /tmp/cc2.o:f.c:(.text+0x0): first defined here\n";
        assert_eq!(
            duplicate_definition(gnu, "f", &inputs),
            Some(vec!["src/f.c".to_string()])
        );
        assert_eq!(duplicate_definition(gnu, "g", &inputs), None);
        let lld = "ld.lld: error: duplicate symbol: f\n>>> defined at g.c\n>>>            /tmp/g-1.o:(f)\n>>> defined at snet_inline.c\n";
        assert_eq!(
            duplicate_definition(lld, "f", &inputs),
            Some(vec!["g.c".to_string()])
        );
    }

    #[test]
    fn gcc_and_clang_mismatch_messages_are_translated() {
        let names = ["greet", "other"];
        let gcc = "greet.c:3:7: error: conflicting types for \u{2018}greet\u{2019}; have \u{2018}void *(void *, int,  c4snet_data_t *)\u{2019} {aka \u{2018}void *(void *, int,  struct cdata *)\u{2019}}\n    3 | void *greet(void *hnd, int times, c4snet_data_t *name)\n      |       ^~~~~\nIn file included from <command-line>:\nhello.snet:1:5: note: previous declaration of \u{2018}greet\u{2019} with type \u{2018}void *(void *, c4snet_data_t *, int)\u{2019}\n";
        let m = signature_mismatches(gcc, &names);
        assert_eq!(
            m,
            [Mismatch {
                name: "greet".into(),
                file: "greet.c".into(),
                line: 3,
                kind: MismatchKind::Type(Some("void *(void *, int, c4snet_data_t *)".into())),
            }]
        );
        // The C locale's plain quotes, a return type without `*`, colours.
        let plain = "\u{1b}[01m\u{1b}[Ksrc/g.c:12:6:\u{1b}[m\u{1b}[K \u{1b}[01;31m\u{1b}[Kerror: \u{1b}[m\u{1b}[Kconflicting types for 'other'; have 'void(void *)'\n";
        assert_eq!(
            signature_mismatches(plain, &names),
            [Mismatch {
                name: "other".into(),
                file: "src/g.c".into(),
                line: 12,
                kind: MismatchKind::Type(Some("void(void *)".into())),
            }]
        );
        let clang = "greet.c:2:7: error: conflicting types for 'greet'\nvoid *greet(void *hnd) { return hnd; }\n      ^\nhello.snet:1:5: note: previous declaration is here\nlib.c:1:12: error: static declaration of 'other' follows non-static declaration\n";
        let m = signature_mismatches(clang, &names);
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!(m[0].kind, MismatchKind::Type(None));
        assert_eq!(
            (m[1].name.as_str(), m[1].file.as_str(), m[1].line),
            ("other", "lib.c", 1)
        );
        assert_eq!(m[1].kind, MismatchKind::Static);
        // gcc on a K&R definition: the function is named on the line before.
        let knr = "knr.c: In function \u{2018}greet\u{2019}:\nknr.c:2:1: error: number of arguments doesn\u{2019}t match prototype\nhello.snet:1:5: error: prototype declaration\nknr.c: At top level:\nknr.c:9:1: error: argument \u{2018}x\u{2019} doesn\u{2019}t match prototype\n";
        assert_eq!(
            signature_mismatches(knr, &names),
            [Mismatch {
                name: "greet".into(),
                file: "knr.c".into(),
                line: 2,
                kind: MismatchKind::Type(None),
            }]
        );
        // Other errors, and conflicts over names that are not boxes, are not mismatches.
        let other = "a.c:1:5: error: conflicting types for 'greeting'\na.c:2:1: error: expected ';' before '}' token\n";
        assert!(signature_mismatches(other, &names).is_empty());
    }

    #[test]
    fn mismatch_message_names_box_prototype_and_place() {
        let c = snet_front::compile(
            "hello.snet",
            "box greet((name, <times>) -> (msg));\nnet n connect greet;",
            None,
        );
        let g = c.graph.expect("compiles");
        let m = Mismatch {
            name: "greet".into(),
            file: "greet.c".into(),
            line: 3,
            kind: MismatchKind::Type(Some("void *(void *, c4snet_data_t *)".into())),
        };
        assert_eq!(
            mismatch_message(g.box_def(0), &m, false),
            "error: box `greet` (hello.snet:1:1) does not match its C function at greet.c:3\n  expected: void *greet(void *hnd, c4snet_data_t *name, int times);\n     found: void *greet(void *, c4snet_data_t *)\n"
        );
        assert!(mismatch_message(g.box_def(0), &m, true)
            .starts_with("error: box `greet` (hello.snet:1:1) has the name of a C function declared with another type at greet.c:3, outside the program's sources"));
        assert_eq!(with_name("void(int)", "f"), "void f(int)");
        assert_eq!(
            with_name("int (*(void *))(int)", "f"),
            "int (*(void *))(int)"
        );
    }

    #[test]
    fn declarations_outside_the_sources_are_foreign() {
        // `cargo test` runs in the package's directory; the test executable is in target/.
        let here = [PathBuf::from(".")];
        assert!(!outside("src/buildcmd.rs", &here));
        let exe = std::env::current_exe().unwrap();
        assert!(outside(&exe.display().to_string(), &here));
        assert!(!outside(
            &exe.display().to_string(),
            &[exe.parent().unwrap().to_path_buf()]
        ));
        // A place the compiler made up (or that is gone) is taken for the sources'.
        assert!(!outside("<built-in>", &here));
    }
}
