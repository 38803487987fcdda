//! The front-end corpus (`tests/front/` at the repository root) and the
//! benchmark programs (`../shared/bench/`), end to end through `compile`.
//!
//! - `valid/*.snet`: no errors; the entry signature matches `.expected-sig`
//!   (compared as sets); every net's signature is snapshot-tested.
//! - `invalid/*.snet`: at least one error; the first error is at the
//!   `LINE:COL` of `.expected`; the rendered diagnostics are snapshot-tested.
//! - `warn/*.snet`: no error, a warning at the `.expected` position.
//! - `../shared/bench/*.snet`: no errors (skipped if the directory is absent).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use snet_front::{compile, render, Compiled};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn programs(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "snet"))
        .collect();
    v.sort();
    v
}

fn stem(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

fn load(p: &Path) -> (String, String, Compiled) {
    let src = std::fs::read_to_string(p).unwrap();
    let name = format!(
        "{}/{}",
        p.parent().unwrap().file_name().unwrap().to_string_lossy(),
        p.file_name().unwrap().to_string_lossy()
    );
    let c = compile(&name, &src, None);
    (name, src, c)
}

fn line_col(src: &str, c: &Compiled, d: &snet_front::Diagnostic) -> String {
    let _ = c;
    match d.line_col(src) {
        Some((l, col)) => format!("{l}:{col}"),
        None => "-".into(),
    }
}

/// The words of an `.expected` file's third line that the rendered
/// diagnostics do not contain (compared case-insensitively).
fn missing_words(expected: &str, rendered: &str) -> Vec<String> {
    let rendered = rendered.to_lowercase();
    expected
        .lines()
        .nth(2)
        .unwrap_or("")
        .split_whitespace()
        .filter(|w| !rendered.contains(&w.to_lowercase()))
        .map(str::to_string)
        .collect()
}

/// `NAME: IN -> OUT` as a comparable set form.
type TypeSet = BTreeSet<BTreeSet<String>>;

fn sig_sets(line: &str) -> Option<(String, TypeSet, TypeSet)> {
    let (name, rest) = line.split_once(':')?;
    let (i, o) = rest.split_once("->")?;
    let ty = |s: &str| -> TypeSet {
        let s = s.trim();
        if s == "(none)" {
            return BTreeSet::new();
        }
        s.split('|')
            .map(|v| {
                v.trim()
                    .trim_start_matches('{')
                    .trim_end_matches('}')
                    .split(',')
                    .map(|l| l.trim().to_string())
                    .filter(|l| !l.is_empty())
                    .collect()
            })
            .collect()
    };
    Some((name.trim().to_string(), ty(i), ty(o)))
}

#[test]
fn valid_programs_check_cleanly() {
    let dir = repo().join("tests/front/valid");
    let files = programs(&dir);
    let mut failures = Vec::new();
    for p in &files {
        let (name, src, c) = load(p);
        let errors: Vec<_> = c
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .cloned()
            .collect();
        if !errors.is_empty() {
            failures.push(format!(
                "{name}: unexpected errors\n{}",
                render(&errors, &name, &src, false)
            ));
            continue;
        }
        let entry = c.nets.iter().find(|n| n.entry).expect("entry net");
        let got = format!("{}: {}", entry.name, entry.display());
        if let Ok(exp) = std::fs::read_to_string(p.with_extension("expected-sig")) {
            let exp = exp
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .to_string();
            if sig_sets(&exp) != sig_sets(&got) {
                failures.push(format!(
                    "{name}: signature\n  expected {exp}\n  got      {got}"
                ));
            }
        }
        let mut snap = String::new();
        for n in &c.nets {
            snap.push_str(&format!(
                "net {}{} : {}\n",
                n.name,
                if n.entry { " (entry)" } else { "" },
                n.display()
            ));
        }
        let warnings = render(&c.diagnostics, &name, &src, false);
        if !warnings.is_empty() {
            snap.push('\n');
            snap.push_str(&warnings);
        }
        insta::assert_snapshot!(format!("valid-{}", stem(p)), snap);
    }
    assert!(
        failures.is_empty(),
        "{} of {} valid programs failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn invalid_programs_report_errors() {
    let dir = repo().join("tests/front/invalid");
    let files = programs(&dir);
    let mut failures = Vec::new();
    for p in &files {
        let (name, src, c) = load(p);
        let first = c.diagnostics.iter().find(|d| d.is_error());
        let Some(first) = first else {
            failures.push(format!("{name}: no error reported"));
            continue;
        };
        assert!(c.graph.is_none(), "{name}: a graph despite errors");
        if let Ok(exp) = std::fs::read_to_string(p.with_extension("expected")) {
            let lines: Vec<&str> = exp.lines().collect();
            if let Some(pos) = lines.get(1).map(|l| l.trim()).filter(|l| l.contains(':')) {
                let got = line_col(&src, &c, first);
                if got != pos {
                    failures.push(format!(
                        "{name}: first error at {got}, expected {pos}\n{}",
                        render(&c.diagnostics, &name, &src, false)
                    ));
                }
            }
            let missing = missing_words(&exp, &render(&c.diagnostics, &name, &src, false));
            if !missing.is_empty() {
                failures.push(format!("{name}: diagnostics lack {missing:?}"));
            }
        }
        insta::assert_snapshot!(
            format!("invalid-{}", stem(p)),
            render(&c.diagnostics, &name, &src, false)
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {} invalid programs failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn warn_programs_warn() {
    let dir = repo().join("tests/front/warn");
    let files = programs(&dir);
    let mut failures = Vec::new();
    for p in &files {
        let (name, src, c) = load(p);
        let rendered = render(&c.diagnostics, &name, &src, false);
        if c.has_errors() {
            failures.push(format!("{name}: errors\n{rendered}"));
            continue;
        }
        let warnings: Vec<_> = c.diagnostics.iter().filter(|d| !d.is_error()).collect();
        if warnings.is_empty() {
            failures.push(format!("{name}: no warning"));
            continue;
        }
        if let Ok(exp) = std::fs::read_to_string(p.with_extension("expected")) {
            let lines: Vec<&str> = exp.lines().collect();
            if let Some(pos) = lines.get(1).map(|l| l.trim()).filter(|l| l.contains(':')) {
                if !warnings.iter().any(|w| line_col(&src, &c, w) == pos) {
                    failures.push(format!("{name}: no warning at {pos}\n{rendered}"));
                }
            }
            let missing = missing_words(&exp, &rendered);
            if !missing.is_empty() {
                failures.push(format!("{name}: diagnostics lack {missing:?}"));
            }
        }
        insta::assert_snapshot!(format!("warn-{}", stem(p)), rendered);
    }
    assert!(
        failures.is_empty(),
        "{} of {} warn programs failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn bench_programs_check_cleanly() {
    let dir = repo().join("../shared/bench");
    let files = programs(&dir);
    if files.is_empty() {
        eprintln!("skipping: {} has no programs", dir.display());
        return;
    }
    for p in &files {
        let (name, src, c) = load(p);
        assert!(
            !c.has_errors(),
            "{name}:\n{}",
            render(&c.diagnostics, &name, &src, false)
        );
        assert!(c.graph.is_some(), "{name}: no graph");
        let mut snap = String::new();
        for n in &c.nets {
            snap.push_str(&format!("net {} : {}\n", n.name, n.display()));
        }
        snap.push_str(&render(&c.diagnostics, &name, &src, false));
        insta::assert_snapshot!(format!("bench-{}", stem(p)), snap);
    }
}
