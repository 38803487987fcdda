//! `snet graph --profile FILE`: a profile written by `snet run
//! --profile-json` drawn on the network. Components are matched by their
//! kind and position in the source (line and column: the file's name may
//! be written differently in the run and in the drawing); counts are
//! summed over nodes, and the busy share is of all nodes' worker time.
//! The colour goes from white (idle) to red (the busiest component).

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;
use snet_core::{Graph, NodeId};
use snet_front::dot::Decor;

#[derive(Default, Clone, Copy)]
struct Counts {
    calls: u64,
    records_in: u64,
    records_out: u64,
    busy_ns: u64,
}

pub struct Profile {
    /// By (kind, line, column).
    by_pos: HashMap<(String, u32, u32), Counts>,
    /// By (kind, line, column): the component's name and `file:line:col`
    /// as the profile gives them (for the mismatch message).
    named: HashMap<(String, u32, u32), (String, String)>,
    /// The components drawn so far (`decor` was asked for them).
    drawn: std::sync::Mutex<std::collections::HashSet<(String, u32, u32)>>,
    /// Worker time of all nodes (wall time × workers), nanoseconds.
    worker_ns: f64,
    /// The largest busy time of a component (the reddest).
    max_busy: u64,
}

/// `file:line:col` → (line, col).
fn position(loc: &str) -> Option<(u32, u32)> {
    let mut it = loc.rsplitn(3, ':');
    let col = it.next()?.parse().ok()?;
    let line = it.next()?.parse().ok()?;
    Some((line, col))
}

/// Why a profile could not be loaded ([`load`]); each names the file.
#[derive(Debug)]
pub enum LoadError {
    /// The file could not be read.
    Read(std::path::PathBuf, std::io::Error),
    /// It is not JSON.
    NotJson(std::path::PathBuf, serde_json::Error),
    /// It is JSON without a `nodes` array.
    NoNodes(std::path::PathBuf),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Read(p, e) => write!(f, "cannot read the profile {}: {e}", p.display()),
            LoadError::NotJson(p, e) => write!(
                f,
                "{} is not a profile written by `snet run --profile-json`: {e}",
                p.display()
            ),
            LoadError::NoNodes(p) => write!(
                f,
                "{} is not a profile written by `snet run --profile-json` (no `nodes`)",
                p.display()
            ),
        }
    }
}

impl std::error::Error for LoadError {}

/// Reads a profile written by `snet run --profile-json`.
pub fn load(path: &Path) -> Result<Profile, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|e| LoadError::Read(path.to_path_buf(), e))?;
    let v: Value =
        serde_json::from_str(&text).map_err(|e| LoadError::NotJson(path.to_path_buf(), e))?;
    let nodes = v["nodes"]
        .as_array()
        .ok_or_else(|| LoadError::NoNodes(path.to_path_buf()))?;
    let mut p = Profile {
        by_pos: HashMap::new(),
        named: HashMap::new(),
        drawn: Default::default(),
        worker_ns: 0.0,
        max_busy: 0,
    };
    let num = |c: &Value, k: &str| c[k].as_u64().unwrap_or(0);
    for node in nodes {
        p.worker_ns += num(node, "wall_ns") as f64 * num(node, "workers").max(1) as f64;
        for c in node["components"].as_array().into_iter().flatten() {
            let Some((line, col)) = c["loc"].as_str().and_then(position) else {
                continue;
            };
            let kind = c["kind"].as_str().unwrap_or("").to_string();
            p.named.entry((kind.clone(), line, col)).or_insert_with(|| {
                (
                    c["name"].as_str().unwrap_or("").to_string(),
                    c["loc"].as_str().unwrap_or("").to_string(),
                )
            });
            let e = p.by_pos.entry((kind, line, col)).or_default();
            e.calls += num(c, "calls");
            e.records_in += num(c, "records_in");
            e.records_out += num(c, "records_out");
            e.busy_ns += num(c, "busy_ns");
        }
    }
    p.max_busy = p.by_pos.values().map(|c| c.busy_ns).max().unwrap_or(0);
    Ok(p)
}

impl Profile {
    /// After drawing `program` with [`Profile::decor`]: an error if the
    /// profile is not of this program (a component of the profile that
    /// the drawing has not, or a profile that matches nothing of it).
    pub fn mismatch(&self, profile: &Path, program: &Path) -> Option<String> {
        let drawn = self.drawn.lock().unwrap_or_else(|e| e.into_inner());
        let mut missing: Vec<&(String, u32, u32)> =
            self.by_pos.keys().filter(|k| !drawn.contains(*k)).collect();
        if missing.is_empty() && (!drawn.is_empty() || self.by_pos.is_empty()) {
            return None;
        }
        missing.sort();
        // The program the profile is of, as its components' places name it.
        let of = self
            .named
            .values()
            .filter_map(|(_, loc)| loc.rsplitn(3, ':').nth(2))
            .min()
            .unwrap_or("another program");
        let first = missing
            .first()
            .and_then(|k| self.named.get(*k).map(|(name, loc)| (k, name, loc)))
            .map(|(k, name, loc)| {
                let what = if name.is_empty() || *name == k.0 {
                    k.0.clone()
                } else {
                    format!("{} `{name}`", k.0)
                };
                format!(
                    "; e.g. its {what} at {loc}: {} has no {} at line {}, column {}",
                    program.display(),
                    k.0,
                    k.1,
                    k.2
                )
            })
            .unwrap_or_default();
        Some(format!(
            "the profile {} is not of {}: it is of {of} ({} of its {} components are not in this program{first}); profile this program with `snet run {} --profile-json FILE`",
            profile.display(),
            program.display(),
            missing.len(),
            self.by_pos.len(),
            program.display()
        ))
    }

    pub fn decor(&self, g: &Graph, n: NodeId) -> Option<Decor> {
        let node = g.node(n);
        let key = (node.describe().to_string(), node.loc.line, node.loc.col);
        let c = self.by_pos.get(&key)?;
        self.drawn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key);
        let share = c.busy_ns as f64 / self.worker_ns.max(1.0);
        // White to red by busy time relative to the busiest component.
        let heat = c.busy_ns as f64 / (self.max_busy.max(1) as f64);
        let other = (255.0 - 190.0 * heat).round().clamp(0.0, 255.0) as u8;
        let calls = if node.describe() == "box" || node.describe() == "synchrocell" {
            format!("{} calls, ", c.calls)
        } else {
            String::new()
        };
        Some(Decor {
            // Nearly idle components keep their plain look (a cluster's frame stays black).
            fill: (heat >= 0.05).then(|| format!("#ff{other:02x}{other:02x}")),
            note: format!(
                "{calls}{} in, {} out\nbusy {:.1} ms ({:.1}%)",
                c.records_in,
                c.records_out,
                c.busy_ns as f64 / 1e6,
                100.0 * share
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_errors_name_the_file_and_why() {
        let dir = std::env::temp_dir().join(format!("snet-profile-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.json");
        let e = load(&missing).err().expect("missing file");
        assert_eq!(
            e.to_string(),
            format!(
                "cannot read the profile {}: No such file or directory (os error 2)",
                missing.display()
            )
        );
        let bad = dir.join("bad.json");
        std::fs::write(&bad, "not json").unwrap();
        let e = load(&bad).err().expect("not JSON");
        assert!(
            e.to_string().starts_with(&format!(
                "{} is not a profile written by `snet run --profile-json`: expected",
                bad.display()
            )),
            "{e}"
        );
        let empty = dir.join("empty.json");
        std::fs::write(&empty, "{}").unwrap();
        let e = load(&empty).err().expect("no nodes");
        assert_eq!(
            e.to_string(),
            format!(
                "{} is not a profile written by `snet run --profile-json` (no `nodes`)",
                empty.display()
            )
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
