//! `snet build` and `snet check` on files they cannot read: the message
//! names the file and gives the OS's reason, as people read it (no
//! `(os error N)`), and the exit status is 2. Nothing is compiled.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn snet(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_snet"))
        .args(args)
        .output()
        .expect("run snet")
}

/// A fresh directory under the target directory's scratch space.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("build-inputs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

#[test]
fn unreadable_box_sources_are_reported_with_the_os_reason() {
    let dir = scratch("sources");
    let prog = dir.join("prog.snet");
    std::fs::write(&prog, "box f((<x>) -> (<x>));\nnet n connect f;\n").unwrap();
    let missing = dir.join("util.c");
    let a_dir = dir.join("lib.c");
    std::fs::create_dir(&a_dir).unwrap();
    for (source, reason) in [
        (&missing, "No such file or directory"),
        (&a_dir, "Is a directory"),
    ] {
        let out = snet(&[
            "build".as_ref(),
            prog.as_os_str(),
            source.as_os_str(),
            "-o".as_ref(),
            dir.join("prog").as_os_str(),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(
            err,
            format!("error: cannot read {}: {reason}\n", source.display()),
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unreadable_programs_are_reported_with_the_os_reason() {
    let dir = scratch("programs");
    let prog = dir.join("absent.snet");
    let exe = dir.join("prog");
    for cmd in ["check", "graph", "run", "build"] {
        let mut args = vec![cmd.as_ref(), prog.as_os_str()];
        if cmd == "build" {
            args.extend(["-o".as_ref(), exe.as_os_str()]);
        }
        let out = snet(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {err}");
        assert_eq!(
            err,
            format!(
                "error: cannot read {}: No such file or directory\n",
                prog.display()
            ),
            "{cmd}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A box function with parameters beyond its signature (code written for
/// the original toolchain) builds, with one warning per box naming the box,
/// its declaration and the parameters that receive no value
/// (`tests/conformance/c/sig-extra-params` checks what they receive).
#[test]
fn extra_trailing_parameters_build_with_a_warning() {
    let case =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/c/sig-extra-params");
    let dir = scratch("extra");
    let out = snet(&[
        "build".as_ref(),
        case.join("prog.snet").as_os_str(),
        case.join("count.c").as_os_str(),
        case.join("scale.c").as_os_str(),
        "-o".as_ref(),
        dir.join("prog").as_os_str(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for want in [
        "prog.snet:1:1): its C function at ",
        "count.c:6 has 3 parameters more than the signature gives values for (`int step`, `char *tag`, `double ratio`); they receive 0 (NULL for a pointer) on every call",
        "signature: void *count(void *hnd, int n);",
        "scale.c:4 has 1 parameter more than the signature gives values for (`c4snet_data_t *unused`); it receives 0",
    ] {
        assert!(err.contains(want), "{want:?} not in:\n{err}");
    }
    assert_eq!(err.matches("warning: box `count`").count(), 1, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
