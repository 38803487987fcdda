//! Records the git revision this `snet` is built from, for `snet --version`
//! (`snet 0.1.0 (git <rev>)`): `SNET_GIT_REV` is the short hash of `HEAD`,
//! or `unknown` outside snet's own git checkout (a source archive, a
//! registry).
//!
//! The script reruns when `HEAD` moves: it watches `HEAD` (a branch switch),
//! the branch's ref file and `HEAD`'s reflog (a commit, also on a branch
//! whose ref is packed). It does not mark a dirty tree: edits leave these
//! files alone, so a `-dirty` flag would go stale between reruns and lie.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(std::env::var_os("CARGO_MANIFEST_DIR")?)
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !s.is_empty()).then_some(s)
}

/// The file behind a path inside the git directory (worktrees keep `HEAD`
/// and refs in different directories; `--git-path` knows which).
fn git_path(name: &str) -> Option<PathBuf> {
    let p = PathBuf::from(git(&["rev-parse", "--git-path", name])?);
    let p = if p.is_relative() {
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?).join(p)
    } else {
        p
    };
    p.exists().then_some(p)
}

/// Whether the git checkout around this crate is snet's own (a source
/// archive unpacked inside some other repository is not).
fn in_own_checkout() -> Option<bool> {
    let top = PathBuf::from(git(&["rev-parse", "--show-toplevel"])?);
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?).join("../..");
    Some(top.canonicalize().ok()? == root.canonicalize().ok()?)
}

fn main() {
    let rev = match in_own_checkout() {
        Some(true) => git(&["rev-parse", "--short", "HEAD"]),
        _ => None,
    };
    if rev.is_some() {
        let branch = git(&["symbolic-ref", "-q", "HEAD"]);
        for name in ["HEAD", "logs/HEAD"].into_iter().chain(branch.as_deref()) {
            if let Some(p) = git_path(name) {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    } else {
        // Outside a checkout: nothing to watch but this script itself.
        println!("cargo:rerun-if-changed=build.rs");
    }
    println!(
        "cargo:rustc-env=SNET_GIT_REV={}",
        rev.as_deref().unwrap_or("unknown")
    );
}
