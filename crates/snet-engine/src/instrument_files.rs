//! The files of what the engine recorded ([`crate::instrument`]): a trace
//! (`--trace FILE`) and a profile (`--profile-json FILE`), written the same
//! way by every program that runs a network (`snet run`, built programs,
//! the `snet` library and the Python package).
//!
//! Every node records its own events and counters. Nodes run in one
//! process are written together ([`finish_local`]). In a multi-process
//! run (shared memory, MPI) node K ≥ 1 writes its part of each file beside
//! it (`FILE.node-K`, written under a temporary name and renamed, so a
//! part that exists is complete) before its process ends; node 0, after
//! the run, waits for every part (at most [`PART_WAIT`]), merges them into
//! FILE in node order and removes them ([`finish_node`]). A trace is one
//! JSON array of Trace Event Format events (each node a process, `pid` =
//! node); a profile file one JSON object with a `nodes` array.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use snet_core::Rank;

use crate::instrument::{Instrument, NodeReport, TID_WRITER};

/// How long node 0 waits for the other nodes' parts after the run.
pub const PART_WAIT: Duration = Duration::from_secs(20);

/// A trace or profile file (or a node's part of one) that could not be
/// written, or node parts node 0 never found.
#[derive(Debug)]
pub enum FilesError {
    /// Writing `path` failed; `what` names the file when it is known
    /// (`trace`, `profile`).
    Write {
        /// The file's kind, as the message names it, if known.
        what: Option<&'static str>,
        /// The file (or part, or its temporary name).
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The merged file was written without the parts of these nodes.
    MissingParts {
        /// The merged file.
        path: PathBuf,
        /// The nodes whose parts never appeared.
        nodes: Vec<Rank>,
    },
}

impl std::fmt::Display for FilesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FilesError::Write { what, path, error } => {
                f.write_str("cannot write ")?;
                if let Some(what) = what {
                    write!(f, "the {what} ")?;
                }
                write!(f, "{}: {error}", path.display())
            }
            FilesError::MissingParts { path, nodes } => {
                let nodes: Vec<String> = nodes.iter().map(|k| k.to_string()).collect();
                write!(
                    f,
                    "{}: no part from node {} (it may run on another machine: see docs/observability.md)",
                    path.display(),
                    nodes.join(", ")
                )
            }
        }
    }
}

impl std::error::Error for FilesError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FilesError::Write { error, .. } => Some(error),
            FilesError::MissingParts { .. } => None,
        }
    }
}

fn write_error(
    what: Option<&'static str>,
    path: &Path,
) -> impl FnOnce(std::io::Error) -> FilesError {
    let path = path.to_path_buf();
    move |error| FilesError::Write { what, path, error }
}

/// The files to write: the trace and the profile (JSON), each if asked for.
#[derive(Clone, Debug, Default)]
pub struct Files<'a> {
    /// The trace file (Trace Event Format JSON).
    pub trace: Option<&'a Path>,
    /// The profile file (JSON, what `snet graph --profile` draws).
    pub profile: Option<&'a Path>,
    /// Print each node's profile table on standard error.
    pub table: bool,
}

fn part_path(file: &Path, node: Rank) -> PathBuf {
    let mut s = file.as_os_str().to_owned();
    s.push(format!(".node-{node}"));
    PathBuf::from(s)
}

/// Writes `text` to `path` whole: under a temporary name, then renamed.
fn write_whole(path: &Path, text: &str) -> Result<(), FilesError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(write_error(None, &tmp))?;
    std::fs::rename(&tmp, path).map_err(write_error(None, path))
}

fn trace_text(reports: &[NodeReport]) -> String {
    let mut s = String::new();
    for r in reports {
        r.trace_events(&mut s);
    }
    s
}

fn profile_text(reports: &[NodeReport]) -> String {
    let mut parts = Vec::new();
    for r in reports {
        let mut s = String::new();
        r.profile_json(&mut s);
        parts.push(s);
    }
    parts.join(",\n")
}

/// Writes the trace file: the events of every part, as one JSON array.
fn write_trace(path: &Path, parts: &mut [String]) -> std::io::Result<()> {
    use std::io::Write as _;
    // Every event line ends with `,`: the last one must not.
    if let Some(last) = parts.iter_mut().rev().find(|p| !p.is_empty()) {
        while last.ends_with('\n') || last.ends_with(',') {
            last.pop();
        }
    }
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    f.write_all(b"[\n")?;
    for p in parts.iter() {
        f.write_all(p.as_bytes())?;
    }
    f.write_all(b"\n]\n")?;
    f.flush()
}

fn profile_file(parts: &[String]) -> String {
    let parts: Vec<&String> = parts.iter().filter(|p| !p.is_empty()).collect();
    let body: Vec<&str> = parts.iter().map(|s| s.as_str()).collect();
    format!("{{\"nodes\":[\n{}\n]}}\n", body.join(",\n"))
}

fn print_tables(reports: &[NodeReport]) {
    use std::io::Write as _;
    for r in reports {
        let mut s = String::new();
        r.profile_table(&mut s);
        // One write: nodes may share standard error.
        let _ = std::io::stderr().lock().write_all(s.as_bytes());
    }
}

/// After a run whose nodes all ran in this process: writes the files and
/// prints the tables. The error names a file that could not be written.
pub fn finish_local(files: &Files<'_>, ins: &Instrument) -> Result<(), FilesError> {
    let mut reports = ins.take_reports();
    if let Some(r) = reports.first_mut() {
        r.name_thread(TID_WRITER, "writer");
    }
    if files.table {
        print_tables(&reports);
    }
    if let Some(f) = files.trace {
        write_trace(f, &mut [trace_text(&reports)]).map_err(write_error(Some("trace"), f))?;
    }
    if let Some(f) = files.profile {
        std::fs::write(f, profile_file(&[profile_text(&reports)]))
            .map_err(write_error(Some("profile"), f))?;
    }
    Ok(())
}

/// After node `me`'s run in a multi-process run of `nodes` nodes. Node
/// K ≥ 1 writes its parts; node 0 gathers them (see the module docs).
pub fn finish_node(
    files: &Files<'_>,
    ins: &Instrument,
    me: Rank,
    nodes: u32,
) -> Result<(), FilesError> {
    let mut reports = ins.take_reports();
    if me == Rank::ROOT {
        if let Some(r) = reports.first_mut() {
            r.name_thread(TID_WRITER, "writer");
        }
    }
    if files.table {
        print_tables(&reports);
    }
    let wanted = [
        (files.trace, trace_text(&reports), true),
        (files.profile, profile_text(&reports), false),
    ];
    if me != Rank::ROOT {
        for (file, text, _) in wanted {
            if let Some(f) = file {
                write_whole(&part_path(f, me), &text)?;
            }
        }
        return Ok(());
    }
    let deadline = Instant::now() + PART_WAIT;
    for (file, text, is_trace) in wanted {
        let Some(f) = file else { continue };
        let mut parts = vec![text];
        let mut missing = Vec::new();
        for k in Rank::all(nodes).skip(1) {
            let p = part_path(f, k);
            while !p.exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            match std::fs::read_to_string(&p) {
                Ok(t) => {
                    parts.push(t);
                    let _ = std::fs::remove_file(&p);
                }
                Err(_) => missing.push(k),
            }
        }
        let written = if is_trace {
            write_trace(f, &mut parts)
        } else {
            std::fs::write(f, profile_file(&parts))
        };
        written.map_err(write_error(None, f))?;
        if !missing.is_empty() {
            return Err(FilesError::MissingParts {
                path: f.to_path_buf(),
                nodes: missing,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_as_the_messages_users_knew() {
        let gone = || std::io::Error::from(std::io::ErrorKind::NotFound);
        let e = write_error(Some("trace"), Path::new("d/t.json"))(gone());
        assert_eq!(
            e.to_string(),
            format!("cannot write the trace d/t.json: {}", gone())
        );
        let e = write_error(None, Path::new("p.json.node-1.tmp"))(gone());
        assert_eq!(
            e.to_string(),
            format!("cannot write p.json.node-1.tmp: {}", gone())
        );
        assert!(std::error::Error::source(&e).is_some());
        let e = FilesError::MissingParts {
            path: PathBuf::from("t.json"),
            nodes: vec![Rank(2), Rank(3)],
        };
        assert_eq!(
            e.to_string(),
            "t.json: no part from node 2, 3 (it may run on another machine: see docs/observability.md)"
        );
    }
}
