//! `snet build` and `snet check` on files they cannot read: the message
//! names the file and gives the OS's reason, as people read it (no
//! `(os error N)`), and the exit status is 2. Nothing is compiled. And what
//! `snet build` leaves out of a program by default (debug information).

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

/// Whether the ELF file has a `.debug_info` section (read from its section
/// headers: the bytes `.debug_info` also occur in the standard library's
/// backtrace code).
fn has_debug_info(exe: &Path) -> bool {
    let b = std::fs::read(exe).expect("the program");
    let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap()) as usize;
    assert_eq!(&b[..5], b"\x7fELF\x02", "a 64-bit ELF file");
    let (shoff, shentsize, shnum, shstrndx) =
        (u64_at(0x28), u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    let names = u64_at(shoff + shstrndx * shentsize + 0x18);
    (0..shnum).any(|i| {
        let start = names + u32_at(shoff + i * shentsize);
        b[start..].starts_with(b".debug_info\0")
    })
}

/// A built program carries no debug information or symbol table unless
/// asked (`--debug`, or `-g` in `--cflags`): they are 25 MB of a one-box
/// program's 30 (issue 37 §5). Stripped, a box's error still names the
/// box, its declaration and the input record (snet's own tables, not DWARF).
#[test]
fn programs_are_small_without_debug_info_and_still_name_boxes() {
    let dir = scratch("strip");
    let prog = dir.join("prog.snet");
    std::fs::write(&prog, "box f((<x>) -> (<y>));\nnet n connect f;\n").unwrap();
    let src = dir.join("f.c");
    std::fs::write(
        &src,
        "#include \"C4SNet.h\"\nvoid *f(void *hnd, int x) { C4SNetOut(hnd, x == 2 ? 7 : 1, x); return hnd; }\n",
    )
    .unwrap();
    let build = |exe: &Path, extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "build".as_ref(),
            prog.as_os_str(),
            src.as_os_str(),
            "-o".as_ref(),
            exe.as_os_str(),
        ];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        let out = snet(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let small = dir.join("small");
    build(&small, &[]);
    let size = std::fs::metadata(&small).unwrap().len();
    assert!(!has_debug_info(&small));
    // About 5.0 MB at 3f9c024 (the runtime: engine, shm launcher and
    // transport, MPI glue, C4SNet); with debug information about 30.
    assert!(size < 6_000_000, "{size} bytes");
    let input = "<record type=\"data\"><tag label=\"x\">1</tag></record>\n\
                 <record type=\"data\"><tag label=\"x\">2</tag></record>\n";
    let inp = dir.join("in.xml");
    std::fs::write(&inp, input).unwrap();
    let out = Command::new(&small)
        .arg("-i")
        .arg(&inp)
        .output()
        .expect("run the program");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("box `f`") && err.contains("prog.snet:2:15") && err.contains("input record 2"),
        "{err}"
    );
    let big = dir.join("big");
    build(&big, &["--debug"]);
    assert!(has_debug_info(&big));
    build(&big, &["--cflags", "-O1 -g"]);
    assert!(has_debug_info(&big));
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

/// `snet build --library` writes a shared object with the box table a
/// loader reads (`__snet_c4snet_library`) and no `main`; a function a box
/// calls that nothing defines is named (the link uses `-z defs`), and C++
/// sources are refused.
#[test]
fn libraries_are_shared_objects_whose_symbols_are_all_defined() {
    let dir = scratch("library");
    let prog = dir.join("prog.snet");
    std::fs::write(
        &prog,
        "box f((<x>) -> (<x>));\nbox g((<x>) -> (<x>));\nnet n connect f .. g;\n",
    )
    .unwrap();
    let good = dir.join("f.c");
    std::fs::write(
        &good,
        "#include \"C4SNet.h\"\nvoid *f(void *hnd, int x) { C4SNetOut(hnd, 1, x); return hnd; }\n",
    )
    .unwrap();
    let lib = dir.join("libf.so");
    let out = snet(&[
        "build".as_ref(),
        "--library".as_ref(),
        prog.as_os_str(),
        good.as_os_str(),
        "-o".as_ref(),
        lib.as_os_str(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let syms = Command::new("nm")
        .arg("-D")
        .arg("--defined-only")
        .arg(&lib)
        .output()
        .expect("run nm");
    let syms = String::from_utf8_lossy(&syms.stdout);
    assert!(
        syms.contains("__snet_c4snet_library") && syms.contains("C4SNetOut"),
        "{syms}"
    );
    assert!(!syms.lines().any(|l| l.ends_with(" main")), "{syms}");

    let bad = dir.join("bad.c");
    std::fs::write(
        &bad,
        "int helper(int);\nvoid *f(void *hnd, int x) { helper(x); return hnd; }\n",
    )
    .unwrap();
    let out = snet(&[
        "build".as_ref(),
        "--library".as_ref(),
        prog.as_os_str(),
        bad.as_os_str(),
        "-o".as_ref(),
        lib.as_os_str(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("undefined reference to `helper'"), "{err}");

    let cxx = dir.join("f.cpp");
    std::fs::write(&cxx, "").unwrap();
    let out = snet(&[
        "build".as_ref(),
        "--library".as_ref(),
        prog.as_os_str(),
        cxx.as_os_str(),
        "-o".as_ref(),
        lib.as_os_str(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--library takes C sources"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_runtime_library_built_with_this_snet_wins_over_a_stale_one_beside_it() {
    // A copy of this snet whose directory holds a stale library (here not
    // even a runtime: an empty archive) and, in deps/, the libraries cargo
    // built, one of them with this snet: that one is linked.
    let dir = scratch("stale-runtime");
    let bin = dir.join("bin");
    std::fs::create_dir_all(bin.join("deps")).unwrap();
    let real = Path::new(env!("CARGO_BIN_EXE_snet"));
    let snet_copy = bin.join("snet");
    std::fs::copy(real, &snet_copy).unwrap();
    std::fs::write(bin.join("libsnet_runner.a"), "!<arch>\n").unwrap();
    let mut linked = 0;
    for e in std::fs::read_dir(real.parent().unwrap().join("deps")).unwrap() {
        let e = e.unwrap();
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with("libsnet_runner-") && n.ends_with(".a") {
            std::os::unix::fs::symlink(e.path(), bin.join("deps").join(&n)).unwrap();
            linked += 1;
        }
    }
    assert!(linked > 0, "cargo left no runtime library in deps/");
    std::fs::write(
        dir.join("prog.snet"),
        "box inc((<x>) -> (<x>));\nnet n connect inc;\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("boxes.c"),
        "#include \"C4SNet.h\"\nvoid *inc(void *h, int x) { C4SNetOut(h, 1, x + 1); return h; }\n",
    )
    .unwrap();
    let out = Command::new(&snet_copy)
        .current_dir(&dir)
        .env_remove("SNET_RUNNER_LIB")
        .args(["build", "prog.snet", "boxes.c", "-o", "prog"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(
        dir.join("in.xml"),
        "<record><tag label=\"x\">41</tag></record>\n",
    )
    .unwrap();
    let run = Command::new(dir.join("prog"))
        .current_dir(&dir)
        .args(["-i", "in.xml", "-w", "1"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success() && stdout.contains(">42<"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
