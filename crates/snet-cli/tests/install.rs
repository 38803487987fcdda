//! `scripts/install.sh` and the installed `snet`: install this test's own
//! build into a temporary prefix, then, in a fresh directory outside the
//! source tree and without `SNET_RUNNER_LIB`, build a program with a C box
//! through the installed `snet` and run it; compile a box object against
//! the installed headers; check `--version`, a symlinked `snet`, and the
//! advice given by a `snet` installed without its library.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::output_guarded;

const PROG: &str = "box scale((v, <k>) -> (v, <k>));\nnet scaled connect scale;\n";

/// Includes both installed headers: `bool.h` is what programs written for
/// the original toolchain include.
const BOX: &str = r#"#include <bool.h>
#include "C4SNet.h"

void *scale(void *hnd, c4snet_data_t *v, int k)
{
    int n = (int)C4SNetArraySize(v);
    int *src = C4SNetGetData(v);
    int *dst;
    bool same = k == 1;
    c4snet_data_t *out = C4SNetAlloc(CTYPE_int, n, (void **)&dst);
    for (int i = 0; i < n; i++)
        dst[i] = same ? src[i] : src[i] * k;
    C4SNetFree(v);
    C4SNetOut(hnd, 1, out, k);
    return hnd;
}
"#;

const INPUT: &str = r#"<?xml version="1.0" ?>
<record type="data" mode="textual" interface="C4SNet"><field label="v" interface="C4SNet">(int[3])1,2,3</field><tag label="k">2</tag></record>
<record type="data" mode="textual" interface="C4SNet"><field label="v" interface="C4SNet">(int[2])-4,5</field><tag label="k">-3</tag></record>
<record type="terminate" />
"#;

/// A directory of its own under the system's temporary directory (outside
/// the source tree), empty.
fn fresh_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("snet-install-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("make a temporary directory");
    d
}

/// `cmd` with no trace of the source tree's runtime library in its environment.
fn clean(program: &Path, dir: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(dir).env_remove("SNET_RUNNER_LIB");
    cmd
}

fn must(what: &str, out: Output) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `exe -i input.xml` in `dir` and checks both records came out scaled.
fn check_run(exe: &Path, dir: &Path) {
    let mut cmd = clean(exe, dir);
    cmd.args(["-i", "input.xml"]);
    let out = must(&format!("{}", exe.display()), output_guarded(cmd));
    for want in ["(int[3])2,4,6", "(int[2])12,-15"] {
        assert!(out.contains(want), "no {want} in the output:\n{out}");
    }
    assert_eq!(out.matches("type=\"data\"").count(), 2, "output:\n{out}");
    assert!(out.contains("type=\"terminate\""), "output:\n{out}");
}

/// Installs this test's build into a fresh prefix; returns the prefix.
fn install(name: &str) -> PathBuf {
    let built = Path::new(env!("CARGO_BIN_EXE_snet"))
        .parent()
        .expect("the profile directory");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/install.sh");
    let prefix = fresh_dir(name);
    let mut cmd = Command::new(&script);
    cmd.arg("--from").arg(built).arg(&prefix);
    must("scripts/install.sh", output_guarded(cmd));
    for f in [
        "bin/snet",
        "lib/snet/libsnet_runner.a",
        "include/snet/C4SNet.h",
        "include/snet/bool.h",
    ] {
        assert!(prefix.join(f).is_file(), "{f} is not installed");
    }
    prefix
}

#[test]
fn installed_snet_builds_and_runs_a_c_box_program_from_anywhere() {
    let prefix = install("prefix");
    let snet = prefix.join("bin/snet");

    // --version and -V name the version and the git revision.
    let own = must(
        "snet --version",
        output_guarded({
            let mut c = Command::new(env!("CARGO_BIN_EXE_snet"));
            c.arg("--version");
            c
        }),
    );
    for flag in ["--version", "-V"] {
        let mut cmd = clean(&snet, &prefix);
        cmd.arg(flag);
        let v = must("installed snet --version", output_guarded(cmd));
        let head = format!("snet {} (git ", env!("CARGO_PKG_VERSION"));
        assert!(
            v.starts_with(&head) && v.trim_end().ends_with(')'),
            "{flag}: {v}"
        );
        assert_eq!(v, own, "the installed snet is this build");
    }

    // A user's directory, far from the source tree.
    let work = fresh_dir("work");
    std::fs::write(work.join("prog.snet"), PROG).unwrap();
    std::fs::write(work.join("scale.c"), BOX).unwrap();
    std::fs::write(work.join("input.xml"), INPUT).unwrap();
    let mut cmd = clean(&snet, &work);
    cmd.args(["build", "prog.snet", "scale.c", "-o", "prog"]);
    must("installed snet build", output_guarded(cmd));
    check_run(&work.join("prog"), &work);

    // A box object compiled by the user against the installed headers.
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut cc = clean(Path::new(&compiler), &work);
    cc.arg("-c")
        .arg("-I")
        .arg(prefix.join("include/snet"))
        .args(["scale.c", "-o", "scale.o"]);
    must("cc -I PREFIX/include/snet", output_guarded(cc));
    let mut cmd = clean(&snet, &work);
    cmd.args(["build", "prog.snet", "scale.o", "-o", "prog-obj"]);
    must("installed snet build with an object", output_guarded(cmd));
    check_run(&work.join("prog-obj"), &work);

    // Called through a symlink elsewhere, snet finds the library beside the real file.
    let links = fresh_dir("links");
    std::os::unix::fs::symlink(&snet, links.join("snet")).unwrap();
    let mut cmd = clean(&links.join("snet"), &work);
    cmd.args(["build", "prog.snet", "scale.c", "-o", "prog-link"]);
    must("snet build through a symlink", output_guarded(cmd));
    check_run(&work.join("prog-link"), &work);

    for d in [prefix, work, links] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn snet_without_its_library_says_how_to_install_it() {
    // What `cargo install` leaves: the executable alone.
    let bin = fresh_dir("bare");
    std::fs::copy(env!("CARGO_BIN_EXE_snet"), bin.join("snet")).unwrap();
    std::fs::write(bin.join("prog.snet"), PROG).unwrap();
    std::fs::write(bin.join("scale.c"), BOX).unwrap();
    let mut cmd = clean(&bin.join("snet"), &bin);
    cmd.args(["build", "prog.snet", "scale.c", "-o", "prog"]);
    let out = output_guarded(cmd);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr:\n{err}");
    assert!(
        err.contains("libsnet_runner.a") && err.contains("scripts/install.sh"),
        "stderr:\n{err}"
    );
    let _ = std::fs::remove_dir_all(bin);
}

/// `install.sh --from DIR` (and `--no-build`) installs the runtime library
/// built with DIR's `snet`, not the newest one in DIR (issue 37 §5: it
/// picked a `deps/libsnet_runner-*.a` that `cargo test` had left), and
/// refuses, saying why, when DIR holds none built with it.
#[test]
fn install_takes_the_library_built_with_this_snet_or_none() {
    let built = Path::new(env!("CARGO_BIN_EXE_snet"))
        .parent()
        .expect("the profile directory");
    let mark = snet_runner::BUILD_ID.as_bytes();
    let holds_mark =
        |p: &Path| std::fs::read(p).is_ok_and(|b| b.windows(mark.len()).any(|w| w == mark));
    let mut libs = vec![built.join("libsnet_runner.a")];
    if let Ok(rd) = std::fs::read_dir(built.join("deps")) {
        libs.extend(rd.flatten().map(|e| e.path()).filter(|p| {
            let n = p.file_name().unwrap_or_default().to_string_lossy();
            n.starts_with("libsnet_runner-") && n.ends_with(".a")
        }));
    }
    let right = libs
        .into_iter()
        .find(|p| holds_mark(p))
        .expect("the runtime library built with this snet");
    // A profile directory: this snet, its library in deps/, and a newer
    // library of another build (a copy without the identity).
    let from = fresh_dir("from");
    std::fs::create_dir_all(from.join("deps")).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_snet"), from.join("snet")).unwrap();
    std::fs::copy(&right, from.join("deps/libsnet_runner-1111.a")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut other = std::fs::read(&right).unwrap();
    let at = other
        .windows(mark.len())
        .position(|w| w == mark)
        .expect("the mark");
    other[at + mark.len() - 2] ^= 1;
    std::fs::write(from.join("deps/libsnet_runner-2222.a"), &other).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/install.sh");
    let prefix = fresh_dir("prefix-pick");
    let mut cmd = Command::new(&script);
    cmd.arg("--from").arg(&from).arg(&prefix);
    must("scripts/install.sh", output_guarded(cmd));
    let installed = std::fs::read(prefix.join("lib/snet/libsnet_runner.a")).unwrap();
    assert!(
        installed == std::fs::read(&right).unwrap(),
        "install.sh installed another build's runtime library"
    );
    // Only the other build's library: a clear refusal.
    std::fs::remove_file(from.join("deps/libsnet_runner-1111.a")).unwrap();
    let mut cmd = Command::new(&script);
    cmd.arg("--from").arg(&from).arg(&prefix);
    let out = output_guarded(cmd);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no libsnet_runner.a built with") && err.contains("cargo build --release"),
        "{err}"
    );
    for d in [from, prefix] {
        let _ = std::fs::remove_dir_all(d);
    }
}
