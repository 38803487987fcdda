//! The documentation runs as written.
//!
//! For `README.md`, `docs/tutorial-c-boxes.md`, `docs/observability.md`,
//! `docs/python.md` and every
//! `examples/*/README.md`, this test takes the shell blocks in order and
//! runs them, one document at a time, in one `bash` in a scratch copy of the
//! repository's files (`git ls-files`: tracked files and new, not ignored
//! ones). Every command must exit 0. Another test checks that no Markdown
//! file outside `tests/` links to `shared/`, a directory a user's clone does
//! not have, and that every relative Markdown link names a file; another that
//! the README's layout table and ARCHITECTURE.md's table of crates name
//! every crate under `crates/`, and that every path the layout table lists
//! exists. The conventions for writers are in `docs/writing-docs.md`.
//!
//! # Markers
//!
//! * Only fenced blocks whose info string is `sh` are commands. Blocks
//!   fenced as `text`, `c`, `xml`, `snet` (or anything else) are never run:
//!   use `text` for synopses and output. Indented code blocks that look
//!   like commands are an error: fence them.
//! * `<!-- docs-test: skip -->` (optionally with a reason before `-->`) as
//!   the last non-blank line before a `sh` block: the block is not run (a
//!   placeholder such as `prog.snet`, a cluster's hostfile, the scripts
//!   that run this test).
//! * `<!-- docs-test: fails -->` before a `sh` block: every command in it
//!   must exit non-zero (an error shown on purpose).
//! * `<!-- docs-test: file PATH -->` before any fenced block: the block's
//!   text is written to `PATH` (relative to the current directory of the
//!   commands at that point) before the commands after it run, so a
//!   tutorial's files are the ones it shows.
//!
//! # How a command runs
//!
//! Each document starts at the top of its scratch copy (commands of an
//! example's README begin with `cd examples/NAME`). A command is a line of a
//! block (lines ending in `\` continue it; blank lines and `#` comments are
//! left out); `cd` and `export` carry over to the next command, as in a
//! terminal. The environment:
//!
//! * `PATH` starts with the directory of the `snet` this test was built with,
//!   and `target/release` of the scratch copy is a link to that directory,
//!   so `export PATH="$PWD/target/release:$PATH"` works as documented;
//! * `cargo build ...` is a stand-in that does nothing (snet is built
//!   already; building the workspace again in the copy would take minutes);
//! * `mpirun` gets what the other tests give it and a user's machine does
//!   not need (`--allow-run-as-root --oversubscribe --bind-to none` and a
//!   session directory of its own), or, without Open MPI, is skipped;
//! * `pip install ./python` is a stand-in: the snet Python package (its
//!   sources and the extension module `cargo build -p snet-python` made,
//!   built by this test if missing) is on `PYTHONPATH`;
//! * `HOME` is a scratch directory, so commands that install (e.g. into
//!   `$HOME/.local`) write into the copy.
//!
//! A document that has not finished after [`HANG`] is killed and fails: a
//! guard against hangs, not a performance check. On failure the scratch
//! copy is kept and its path printed.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A document still running after this long is killed and fails.
const HANG: Duration = Duration::from_secs(20 * 60);

const MARKER: &str = "<!-- docs-test:";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// The repository's files, as git lists them (tracked, and untracked ones
/// that are not ignored); `None` outside a git checkout.
fn repo_files(root: &Path) -> Option<Vec<String>> {
    let out = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(root)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let mut files: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .split('\0')
        .filter(|f| !f.is_empty())
        .map(str::to_string)
        .collect();
    files.sort();
    files.dedup();
    Some(files)
}

/// What the documents ask for, in order.
#[derive(Debug)]
enum Step {
    /// A shell command from line `line`; `fails`: it must exit non-zero.
    Run {
        line: usize,
        cmd: String,
        fails: bool,
    },
    /// Write `text` to `path`.
    File {
        line: usize,
        path: String,
        text: String,
    },
}

/// A marker and what it asks.
#[derive(Clone, Debug, PartialEq)]
enum Mark {
    Skip,
    Fails,
    File(String),
}

fn parse_marker(line: &str) -> Result<Option<Mark>, String> {
    let t = line.trim();
    let Some(rest) = t.strip_prefix(MARKER) else {
        return Ok(None);
    };
    let Some(body) = rest.strip_suffix("-->") else {
        return Err(format!("a marker must end with `-->` on its line: {t}"));
    };
    let body = body.trim();
    let (word, arg) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    match word {
        "skip" => Ok(Some(Mark::Skip)),
        "fails" => Ok(Some(Mark::Fails)),
        "file" if !arg.trim().is_empty() => Ok(Some(Mark::File(arg.trim().to_string()))),
        _ => Err(format!("unknown marker `{t}` (skip, fails, or file PATH)")),
    }
}

/// Whether an indented line outside fences reads like a command, which
/// would be a block this test cannot see.
fn looks_like_command(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("    ") else {
        return false;
    };
    let rest = rest.trim_start();
    [
        "snet ", "./", "../", "mpirun ", "cc ", "cd ", "cargo ", "scripts/",
    ]
    .iter()
    .any(|p| rest.starts_with(p))
}

/// The steps of one Markdown document, or the problems with its markers.
fn steps(doc: &str) -> Result<Vec<Step>, Vec<String>> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    let mut mark: Option<(usize, Mark)> = None;
    let lines: Vec<&str> = doc.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let n = i + 1;
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            let fence_indent = line.len() - trimmed.len();
            let info = info.trim().to_string();
            let mut body = Vec::new();
            i += 1;
            while i < lines.len() && !lines[i].trim_start().starts_with("```") {
                let l = lines[i];
                // Inside a list item the block is indented like its fence.
                let strip = l.len() - l.trim_start().len();
                body.push((i + 1, &l[strip.min(fence_indent)..]));
                i += 1;
            }
            i += 1; // the closing fence
            let m = mark.take();
            match m {
                Some((_, Mark::File(path))) => {
                    let mut text = String::new();
                    for (_, l) in &body {
                        text.push_str(l);
                        text.push('\n');
                    }
                    out.push(Step::File {
                        line: n,
                        path,
                        text,
                    });
                }
                Some((_, Mark::Skip)) if info == "sh" => {}
                Some((ml, m)) if info != "sh" => errors.push(format!(
                    "line {ml}: `{m:?}` marker before a ```{info} block (only ```sh blocks run)"
                )),
                m => {
                    if info != "sh" {
                        continue;
                    }
                    let fails = m.is_some_and(|(_, m)| m == Mark::Fails);
                    let mut pending: Option<(usize, String)> = None;
                    for (ln, l) in body {
                        let (start, mut cmd) = match pending.take() {
                            Some((s, c)) => (s, c),
                            None => {
                                let t = l.trim();
                                if t.is_empty() || t.starts_with('#') {
                                    continue;
                                }
                                (ln, String::new())
                            }
                        };
                        if l.ends_with('\\') {
                            cmd.push_str(l);
                            cmd.push('\n');
                            pending = Some((start, cmd));
                        } else {
                            cmd.push_str(l);
                            out.push(Step::Run {
                                line: start,
                                cmd,
                                fails,
                            });
                        }
                    }
                    if let Some((s, _)) = pending {
                        errors.push(format!(
                            "line {s}: the block ends inside a `\\` continuation"
                        ));
                    }
                }
            }
            continue;
        }
        match parse_marker(line) {
            Ok(Some(m)) => {
                if let Some((ml, _)) = &mark {
                    errors.push(format!("line {ml}: marker not followed by a fenced block"));
                }
                mark = Some((n, m));
            }
            Ok(None) => {
                if !line.trim().is_empty() {
                    if let Some((ml, _)) = mark.take() {
                        errors.push(format!("line {ml}: marker not followed by a fenced block"));
                    }
                }
                if looks_like_command(line) {
                    errors.push(format!(
                        "line {n}: an indented command the test cannot see; put it in a ```sh block: {}",
                        line.trim()
                    ));
                }
            }
            Err(e) => errors.push(format!("line {n}: {e}")),
        }
        i += 1;
    }
    if let Some((ml, _)) = mark {
        errors.push(format!("line {ml}: marker not followed by a fenced block"));
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// `s` as one single-quoted shell word.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The bash script that runs `steps` of `doc` in order, stopping at the
/// first command that does not end as it should.
fn script(doc: &str, steps: &[Step]) -> String {
    let mut s = String::from("cd \"$DOCS_TEST_ROOT\" || exit 99\n");
    for step in steps {
        match step {
            Step::Run { line, cmd, fails } => {
                let at = format!("{doc}:{line}");
                let _ = writeln!(
                    s,
                    "printf '%s\\n' {} >&2",
                    quote(&format!("docs-test: {at}: $ {cmd}"))
                );
                let _ = writeln!(s, "{cmd}");
                let bad = if *fails { "-eq" } else { "-ne" };
                let want = if *fails { "a failure" } else { "exit status 0" };
                let _ = writeln!(
                    s,
                    "__rc=$?; if [ $__rc {bad} 0 ]; then printf '%s %s\\n' {} \"$__rc\" >&2; exit 101; fi",
                    quote(&format!("docs-test: FAILED at {at} (wanted {want}): $ {cmd}\ndocs-test: exit status"))
                );
            }
            Step::File { line, path, text } => {
                let mut eof = String::from("DOCS_TEST_EOF");
                while text.contains(&eof) {
                    eof.push('_');
                }
                let _ = writeln!(
                    s,
                    "printf '%s\\n' {} >&2",
                    quote(&format!("docs-test: {doc}:{line}: writing {path}"))
                );
                let _ = writeln!(
                    s,
                    "mkdir -p \"$(dirname {p})\" && cat > {p} <<'{eof}' || exit 102\n{text}{eof}",
                    p = quote(path)
                );
            }
        }
    }
    s
}

/// Where `mpirun` is, if it is.
fn real_mpirun() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("mpirun"))
        .find(|p| p.is_file())
}

fn write_exe(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write shim");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod shim");
}

/// A scratch copy of the repository for `name`, with the shims of the
/// module header; returns (copy, shim directory, home).
fn scratch_copy(root: &Path, files: &[String], name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let base = std::env::temp_dir().join(format!("snet-docs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let copy = base.join("repo");
    for f in files {
        let from = root.join(f);
        let Ok(meta) = std::fs::symlink_metadata(&from) else {
            continue; // deleted in the working tree
        };
        let to = copy.join(f);
        std::fs::create_dir_all(to.parent().expect("a file has a parent")).expect("mkdir");
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&from).expect("readlink");
            std::os::unix::fs::symlink(target, &to).expect("symlink");
        } else {
            std::fs::copy(&from, &to).unwrap_or_else(|e| panic!("copy {f}: {e}"));
        }
    }
    let bin = Path::new(env!("CARGO_BIN_EXE_snet"))
        .parent()
        .expect("snet's directory")
        .to_path_buf();
    std::fs::create_dir_all(copy.join("target")).expect("mkdir target");
    std::os::unix::fs::symlink(&bin, copy.join("target/release")).expect("link target/release");

    let shims = base.join("shims");
    let home = base.join("home");
    let tmp = base.join("tmp");
    for d in [&shims, &home, &tmp] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    write_exe(
        &shims.join("cargo"),
        "#!/bin/sh\n\
         # docs test: snet is built already (see crates/snet-cli/tests/docs.rs).\n\
         case \"$1\" in\n\
         build) echo \"docs-test: 'cargo $*' stands in (snet is built already)\"; exit 0 ;;\n\
         *) echo \"docs-test: 'cargo $*' is not available in the docs test\" >&2; exit 1 ;;\n\
         esac\n",
    );
    let mpirun = match real_mpirun() {
        Some(real) => format!(
            "#!/bin/sh\n\
             # docs test: the flags the other tests give mpirun (common/mod.rs).\n\
             d=$(mktemp -d {tmp}/ompi.XXXXXX) || exit 1\n\
             OMPI_MCA_orte_tmpdir_base=\"$d\" exec {real} --allow-run-as-root --oversubscribe --bind-to none \"$@\"\n",
            tmp = quote(&tmp.to_string_lossy()),
            real = quote(&real.to_string_lossy()),
        ),
        None => "#!/bin/sh\necho \"docs-test: mpirun is not installed: skipped 'mpirun $*'\"\n".into(),
    };
    write_exe(&shims.join("mpirun"), &mpirun);
    write_exe(
        &shims.join("pip"),
        "#!/bin/sh\n\
         # docs test: the snet Python package is on PYTHONPATH already (see crates/snet-cli/tests/docs.rs).\n\
         case \"$1 $2\" in\n\
         \"install ./python\"|\"install ../../python\") echo \"docs-test: 'pip $*' stands in (the package is built already)\"; exit 0 ;;\n\
         *) echo \"docs-test: 'pip $*' is not available in the docs test\" >&2; exit 1 ;;\n\
         esac\n",
    );
    (copy, shims, home)
}

/// Runs the shell blocks of `doc` (a path relative to the repository) in a
/// scratch copy; panics with the output of the failing command.
fn run_document(doc: &str) {
    let root = repo_root();
    let Some(files) = repo_files(&root) else {
        eprintln!("docs test skipped: not a git checkout (no `git ls-files`)");
        return;
    };
    let text = std::fs::read_to_string(root.join(doc)).unwrap_or_else(|e| panic!("{doc}: {e}"));
    let steps = steps(&text).unwrap_or_else(|e| panic!("{doc}: markers:\n{}", e.join("\n")));
    let name = doc.replace(['/', '.'], "_");
    let (copy, shims, home) = scratch_copy(&root, &files, &name);
    let bin = Path::new(env!("CARGO_BIN_EXE_snet")).parent().expect("dir");
    let mut path = vec![shims.clone(), bin.to_path_buf()];
    if let Some(p) = std::env::var_os("PATH") {
        path.extend(std::env::split_paths(&p));
    }
    let tmp = copy.parent().expect("base").join("tmp");
    let pypkg = python_package(&root, bin, copy.parent().expect("base"));

    let mut child = Command::new("bash")
        .arg("-c")
        .arg(script(doc, &steps))
        .current_dir(&copy)
        .env("DOCS_TEST_ROOT", &copy)
        .env("PATH", std::env::join_paths(path).expect("PATH"))
        .env("HOME", &home)
        .env("TMPDIR", &tmp)
        .env("PYTHONPATH", &pypkg)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start bash");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped")));
    let err = drain(Box::new(child.stderr.take().expect("piped")));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if start.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = String::from_utf8_lossy(&out.join().unwrap_or_default()).into_owned();
    let err = String::from_utf8_lossy(&err.join().unwrap_or_default()).into_owned();
    let ran = err
        .lines()
        .filter(|l| l.starts_with("docs-test: ") && l.contains(": $ "))
        .count();
    match status {
        Some(s) if s.success() => {
            eprintln!("{doc}: {ran} commands ran");
            let _ = std::fs::remove_dir_all(copy.parent().expect("base"));
        }
        _ => panic!(
            "{doc}: {}\nscratch copy kept: {}\n--- stderr (tail) ---\n{}\n--- stdout (tail) ---\n{}",
            match status {
                None => format!("no end after {HANG:?}"),
                Some(s) => format!("failed ({s})"),
            },
            copy.display(),
            tail(&err, 60),
            tail(&out, 30)
        ),
    }
}

/// The snet Python package, as `pip install ./python` would install it:
/// its Python sources and the extension module (`lib_snet.so`, beside the
/// `snet` this test was built with; built here if it is not), in a
/// directory for `PYTHONPATH`.
fn python_package(root: &Path, bin: &Path, base: &Path) -> PathBuf {
    let lib = bin.join("lib_snet.so");
    if !lib.is_file() {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let ok = Command::new(cargo)
            .args(["build", "--release", "-q", "-p", "snet-python"])
            .current_dir(root)
            .status()
            .expect("run cargo build -p snet-python");
        assert!(ok.success(), "cargo build --release -p snet-python failed");
    }
    let dir = base.join("pypkg");
    let pkg = dir.join("snet");
    std::fs::create_dir_all(&pkg).expect("mkdir pypkg");
    for e in std::fs::read_dir(root.join("python/snet"))
        .expect("python/snet")
        .flatten()
    {
        if e.path().extension().is_some_and(|x| x == "py") {
            std::fs::copy(e.path(), pkg.join(e.file_name())).expect("copy a package source");
        }
    }
    std::fs::copy(&lib, pkg.join("_snet.abi3.so")).expect("copy lib_snet.so");
    dir
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[test]
fn readme_runs_as_written() {
    run_document("README.md");
}

#[test]
fn tutorial_runs_as_written() {
    run_document("docs/tutorial-c-boxes.md");
}

/// The tutorial works for a user who installed `snet` and has no clone
/// (issue 37 §5: step 7 did `cd ../examples/c-boxes`): after step 0 (which
/// builds snet in a clone), no command names a path of the source tree or
/// leaves the tutorial's directory.
#[test]
fn tutorial_needs_no_source_tree_after_step_0() {
    let doc = std::fs::read_to_string(repo_root().join("docs/tutorial-c-boxes.md")).unwrap();
    let step1 = doc.find("\n## 1.").expect("a step 1");
    let first_line = doc[..step1].lines().count();
    let steps = steps(&doc).expect("the tutorial's steps");
    let mut bad = Vec::new();
    for s in &steps {
        if let Step::Run { line, cmd, .. } = s {
            let tree = [
                "examples/",
                "crates/",
                "scripts/",
                "target/",
                "tests/",
                "../",
            ];
            if *line > first_line && tree.iter().any(|t| cmd.contains(t)) {
                bad.push(format!("line {line}: {cmd}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "commands that need the source tree:\n{}",
        bad.join("\n")
    );
}

#[test]
fn observability_runs_as_written() {
    run_document("docs/observability.md");
}

#[test]
fn python_runs_as_written() {
    run_document("docs/python.md");
}

#[test]
fn example_readmes_run_as_written() {
    let root = repo_root();
    let mut docs: Vec<String> = std::fs::read_dir(root.join("examples"))
        .expect("examples/")
        .flatten()
        .filter(|e| e.path().join("README.md").is_file())
        .map(|e| format!("examples/{}/README.md", e.file_name().to_string_lossy()))
        .collect();
    docs.sort();
    assert!(!docs.is_empty(), "no examples/*/README.md");
    for doc in docs {
        run_document(&doc);
    }
}

/// Every document the test runs has well-formed markers and no command
/// hidden in an indented block (checked without running anything).
#[test]
fn markers_are_well_formed() {
    let root = repo_root();
    let mut docs = vec![
        "README.md".to_string(),
        "docs/tutorial-c-boxes.md".to_string(),
        "docs/observability.md".to_string(),
        "docs/python.md".to_string(),
    ];
    for e in std::fs::read_dir(root.join("examples"))
        .expect("examples/")
        .flatten()
    {
        if e.path().join("README.md").is_file() {
            docs.push(format!(
                "examples/{}/README.md",
                e.file_name().to_string_lossy()
            ));
        }
    }
    let mut problems = BTreeMap::new();
    for doc in docs {
        let text = std::fs::read_to_string(root.join(&doc)).expect("read");
        match steps(&text) {
            Err(e) => {
                problems.insert(doc, e);
            }
            Ok(s) if !s.iter().any(|s| matches!(s, Step::Run { .. })) => {
                problems.insert(doc, vec!["no ```sh block: nothing of it is tested".into()]);
            }
            Ok(_) => {}
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// No Markdown file outside `tests/` points into `shared/`, which a clone of
/// the repository does not have, and every relative link names a file.
#[test]
fn markdown_links_stay_in_the_repository() {
    let root = repo_root();
    let Some(files) = repo_files(&root) else {
        eprintln!("skipped: not a git checkout");
        return;
    };
    let mut bad = Vec::new();
    for f in files
        .iter()
        .filter(|f| f.ends_with(".md") && !f.starts_with("tests/"))
    {
        let Ok(text) = std::fs::read_to_string(root.join(f)) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            let hit = line.match_indices("shared/").any(|(i, _)| {
                line[..i]
                    .chars()
                    .next_back()
                    .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '-'))
            });
            if hit {
                bad.push(format!("{f}:{}: {}", n + 1, line.trim()));
            }
            // Relative Markdown links `[text](path#anchor)` must name a file.
            for (i, _) in line.match_indices("](") {
                let rest = &line[i + 2..];
                let Some(end) = rest.find(')') else { continue };
                let target = rest[..end].split('#').next().unwrap_or("");
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let dir = Path::new(f).parent().unwrap_or(Path::new(""));
                if !root.join(dir).join(target).exists() {
                    bad.push(format!("{f}:{}: no such file: {target}", n + 1));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "links that leave the repository (use docs/ instead) or name no file:\n{}",
        bad.join("\n")
    );
}

/// The first column of each row of the first Markdown table after the
/// heading `heading` (a line equal to it), code spans unwrapped.
fn table_first_column(doc: &str, heading: &str) -> Result<Vec<String>, String> {
    let mut lines = doc.lines().skip_while(|l| l.trim() != heading);
    if lines.next().is_none() {
        return Err(format!("no heading `{heading}`"));
    }
    let rows: Vec<&str> = lines
        .skip_while(|l| !l.trim_start().starts_with('|'))
        .take_while(|l| l.trim_start().starts_with('|'))
        .skip(2) // the header and the `|---|` line
        .collect();
    if rows.is_empty() {
        return Err(format!("no table under `{heading}`"));
    }
    Ok(rows
        .iter()
        .filter_map(|row| row.trim().trim_start_matches('|').split('|').next())
        .map(|cell| cell.trim().trim_matches('`').to_string())
        .collect())
}

/// What is wrong with the README's layout table (`## Layout`) and
/// ARCHITECTURE.md's table of crates for a tree whose `crates/` holds
/// `crates`: a crate missing from either table, a listed path that does
/// not exist (`exists` is asked with the path as the table spells it,
/// without a trailing `/`).
fn layout_problems(
    readme: &str,
    architecture: &str,
    crates: &[String],
    exists: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let mut bad = Vec::new();
    match table_first_column(readme, "## Layout") {
        Err(e) => bad.push(format!("README.md: {e}")),
        Ok(paths) => {
            for c in crates {
                let want = format!("crates/{c}");
                if !paths.iter().any(|p| p.trim_end_matches('/') == want) {
                    bad.push(format!("README.md, ## Layout: no row for `{want}`"));
                }
            }
            for p in &paths {
                if !exists(p.trim_end_matches('/')) {
                    bad.push(format!("README.md, ## Layout: `{p}` does not exist"));
                }
            }
        }
    }
    match table_first_column(
        architecture,
        "## Crates, what each may depend on, invariants",
    ) {
        Err(e) => bad.push(format!("ARCHITECTURE.md: {e}")),
        Ok(names) => {
            for c in crates {
                if !names.contains(c) {
                    bad.push(format!(
                        "ARCHITECTURE.md, table of crates: no row for `{c}`"
                    ));
                }
            }
            for n in &names {
                if !crates.contains(n) {
                    bad.push(format!(
                        "ARCHITECTURE.md, table of crates: `{n}` is not under crates/"
                    ));
                }
            }
        }
    }
    bad
}

/// The README's layout table and ARCHITECTURE.md's table of crates match
/// the tree: every crate (a directory of `crates/` with a `Cargo.toml`) has
/// a row in both, and every path the layout lists exists.
#[test]
fn layout_tables_match_the_tree() {
    let root = repo_root();
    let read =
        |f: &str| std::fs::read_to_string(root.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    let mut crates: Vec<String> = std::fs::read_dir(root.join("crates"))
        .expect("crates/")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    crates.sort();
    assert!(crates.len() >= 10, "crates found: {crates:?}");
    let bad = layout_problems(
        &read("README.md"),
        &read("ARCHITECTURE.md"),
        &crates,
        &|p| root.join(p).exists(),
    );
    assert!(
        bad.is_empty(),
        "the layout tables do not match the tree:\n{}",
        bad.join("\n")
    );
}

#[test]
fn layout_problems_are_found() {
    let readme = "# x\n\n## Layout\n\n| path | what |\n|---|---|\n\
                  | `crates/a` | one |\n| `crates/b` | two |\n| `bench/` | three |\n\ntext\n";
    let arch = "## Crates, what each may depend on, invariants\n\n| crate | job |\n|---|---|\n\
                | `a` | one |\n| `b` | two |\n";
    let crates = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let all = |_: &str| true;
    assert!(layout_problems(readme, arch, &crates(&["a", "b"]), &all).is_empty());
    // A crate the tables do not list.
    let bad = layout_problems(readme, arch, &crates(&["a", "b", "c"]), &all);
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(bad[0].contains("no row for `crates/c`") && bad[1].contains("no row for `c`"));
    // A listed path that is not there, and a crate that is gone.
    let bad = layout_problems(readme, arch, &crates(&["a"]), &|p: &str| p != "bench");
    assert!(
        bad.iter().any(|b| b.contains("`bench/` does not exist")),
        "{bad:?}"
    );
    assert!(
        bad.iter().any(|b| b.contains("`b` is not under crates/")),
        "{bad:?}"
    );
    assert!(!layout_problems("no table", arch, &crates(&["a", "b"]), &all).is_empty());
}

#[test]
fn markers_parse() {
    let doc = "text\n\n<!-- docs-test: skip (a placeholder) -->\n```sh\nsnet run prog.snet\n```\n\n\
               <!-- docs-test: file a b.snet -->\n```\nnet n connect [];\n```\n\
               ```sh\nsnet check 'a b.snet' \\\n  --json   # a comment\n# only a comment\n\n./x\n```\n\
               <!-- docs-test: fails -->\n```sh\nfalse\n```\n";
    let s = steps(doc).expect("well-formed");
    assert_eq!(s.len(), 4, "{s:?}");
    assert!(
        matches!(&s[0], Step::File { path, text, .. } if path == "a b.snet" && text == "net n connect [];\n")
    );
    assert!(
        matches!(&s[1], Step::Run { line: 13, cmd, fails: false } if cmd == "snet check 'a b.snet' \\\n  --json   # a comment")
    );
    assert!(matches!(&s[2], Step::Run { line: 17, cmd, .. } if cmd == "./x"));
    assert!(matches!(&s[3], Step::Run { fails: true, .. }));
    assert!(steps("<!-- docs-test: skip -->\n```text\nx\n```\n").is_err());
    assert!(steps("<!-- docs-test: maybe -->\n```sh\nx\n```\n").is_err());
    assert!(steps("<!-- docs-test: skip -->\nprose\n```sh\nx\n```\n").is_err());
    assert!(steps("Run it:\n\n    snet run x.snet\n").is_err());
}
