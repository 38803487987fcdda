//! `snet build`: one command from `PROG.snet` and box sources to an executable.
//!
//! 1. Compile the program (diagnostics as for `snet check`); collect the
//!    boxes the entry network uses (all must use the C4SNet interface; boxes
//!    of the same name must agree on their argument kinds). A box with an
//!    inline body `{ <<< C | code >>> }` must be written in C; any other
//!    language is reported at its name.
//! 2. Generate one C file: for each box its prototype and a trampoline
//!    `__snet_call_NAME(void *__snet_h, const __snet_arg_t *__snet_a)` that
//!    calls `NAME(__snet_h, __snet_a[0].field, __snet_a[1].tag, ...)`, the
//!    table of trampolines, the program text as a byte array and a `main`
//!    that calls `snet_runner_main` (crate `snet-runner`). Every identifier
//!    it defines but `main` has the prefix `__snet_`, reserved by C, and it
//!    includes no header, so any box name that is a valid C identifier
//!    works, except those [`box_name_problem`] refuses up front (`main`, C
//!    keywords, C4SNet.h's names, the runtime library's API) and those the
//!    runtime library defines as global symbols (read from its symbol
//!    table, [`crate::archive`]: mimalloc's `mi_*`, ...). If boxes have inline C
//!    bodies, a second file defines each as the box function
//!    `void *NAME(void *hnd, c4snet_data_t *FIELD, int TAG, ...)` (parameters
//!    named after the input labels, in signature order) with `#line`
//!    directives, so C compiler messages point into the program. A header,
//!    `snet_boxes.h`, declares the function of every other box with its C
//!    type, `#line`-marked at the box's name in the program.
//! 3. Run the C compiler (`$CC`, default `cc`) once over the user's files
//!    (`.c`, `.o`, `.a`, `.so`), the generated files and the runtime library
//!    `libsnet_runner.a`, with `-I` a directory holding `C4SNet.h` and the
//!    original toolchain's `bool.h` (both written from copies embedded in
//!    this binary), then the user's `-I` directories, then the directory of
//!    the program and of every source file (so `#include <dec.h>` finds a
//!    header next to the sources, as the original toolchain arranged), and
//!    `-include snet_boxes.h`, so that every C source sees the box
//!    prototypes first and the compiler rejects a box function defined
//!    (or declared) with another type.
//! 4. If the compiler rejects a box function's type, report each such box
//!    with the prototype it needs and the place of the C declaration, then
//!    the compiler's own messages (gcc's and clang's texts are understood).
//!    If the link fails because box symbols are undefined, report each such
//!    box by name and source location; if a box with an inline body is also
//!    defined in a box source, report both.
//! 5. If every rejected box function only has parameters beyond its
//!    signature (all others as it says: code written for the original
//!    toolchain, which passed nothing for them), build again: those boxes
//!    get no prototype in the header, and their trampolines
//!    ([`c4snet::trampoline_source_extra`], passing 0 for each extra
//!    parameter) are compiled in a wrapper that includes the C source
//!    defining them, where the function's own type is known; one warning
//!    per box names the parameters. (C sources only: in C++ such a
//!    function is another overload.) A box defined only in a `.o`,
//!    `.a` or `.so` is not checked: no compiler sees its source.
//!
//! `libsnet_runner.a` is looked up in `$SNET_RUNNER_LIB`, next to the `snet`
//! executable, in `../lib/snet/` relative to it (an installed layout), and
//! in `deps/` next to it, where cargo leaves it (with a hash in its name)
//! when it builds `snet-runner` as a dependency of `snet-cli` — so a plain
//! `cargo build --release` (or `cargo test --release`) is enough.

mod diagnose;
mod generate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use c4snet::codegen::{self, box_name_problem, inline_params_problem};
use snet_core::{BoxCode, BoxDef};
use snet_front::Diagnostic;

/// What `snet build` was asked to do.
pub struct BuildArgs {
    pub file: PathBuf,
    pub inputs: Vec<PathBuf>,
    pub output: PathBuf,
    pub include: Vec<PathBuf>,
    pub lib_dirs: Vec<PathBuf>,
    pub libs: Vec<String>,
    pub cflags: Vec<String>,
    pub cxxflags: Vec<String>,
    pub entry: Option<String>,
    pub keep: bool,
    /// Keep debug information in the program (`--debug`, or `-g` in the C flags).
    pub debug: bool,
    pub color: bool,
    /// Write a C box library (a shared object, `c4snet::library`) instead
    /// of an executable (`--library`).
    pub library: bool,
}

/// What box sources are compiled with beyond `-O2`, if the compiler
/// takes it (GCC and Clang do): every loop starts on a 32-byte boundary.
/// A box's hot loop otherwise lies wherever the code linked before it
/// ends, the runtime's cold code included, so a change of the runtime's
/// size moved it: the Cholesky benchmark's dot-product loop (22 bytes)
/// crossed a 64-byte line after one such change and the whole run took
/// 1.24x as long, on the same instructions. Aligned, a small loop keeps
/// its place within a line whatever comes before it. The user's
/// `--cflags` come after it, so `-falign-loops=...` there wins.
fn loop_alignment(cc: &str) -> &'static [&'static str] {
    const FLAGS: &[&str] = &["-falign-loops=32"];
    let takes = Command::new(cc)
        .args(FLAGS)
        .args(["-x", "c", "-E", "-o", "/dev/null", "/dev/null"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if takes {
        FLAGS
    } else {
        &[]
    }
}

/// Whether the program keeps its debug information: `--debug`, or a `-g`
/// option among the C or C++ flags (the user asked for it).
fn keeps_debug_info(a: &BuildArgs) -> bool {
    let wants_g = |f: &String| f.starts_with("-g") && f != "-g0";
    a.debug || a.cflags.iter().any(wants_g) || a.cxxflags.iter().any(wants_g)
}

/// Rust's standard library needs these when linked from a static library (`--print native-static-libs`).
const NATIVE_LIBS: [&str; 7] = [
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];

/// Whether an inline body is C (the only language `snet build` compiles).
fn is_c(code: &BoxCode) -> bool {
    code.language == "C" || code.language == "c"
}

/// Whether box source `f` can be read: it opens, and reading from it
/// works (a directory opens but does not read). The error is the OS's.
fn readable(f: &Path) -> std::io::Result<()> {
    use std::io::Read as _;
    std::fs::File::open(f).and_then(|mut h| h.read(&mut [0u8; 1]).map(|_| ()))
}

/// Whether box source `f` is C++ (by its extension, as gcc and clang tell).
pub fn is_cxx(f: &Path) -> bool {
    f.extension()
        .is_some_and(|e| e == "cpp" || e == "cc" || e == "cxx" || e == "c++" || e == "C")
}

/// The directories `-I` should name for the program and its sources:
/// each distinct directory, in order of first appearance.
fn source_dirs(program: &Path, inputs: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let sources = inputs.iter().filter(|p| {
        !p.extension()
            .is_some_and(|e| e == "o" || e == "a" || e == "so")
    });
    for f in std::iter::once(program).chain(sources.map(PathBuf::as_path)) {
        let dir = match f.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

fn find_runner_lib() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SNET_RUNNER_LIB") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    // Through a symlink (`~/bin/snet -> PREFIX/bin/snet`), look beside the real file.
    let exe = exe.canonicalize().unwrap_or(exe);
    let dir = exe.parent()?;
    let direct: Vec<PathBuf> = [
        dir.join("libsnet_runner.a"),
        dir.join("../lib/snet/libsnet_runner.a"),
    ]
    .into_iter()
    .filter(|p| p.exists())
    .collect();
    // Built as a dependency of this crate, cargo leaves it (hashed) in
    // deps/, maybe beside others (`cargo test`'s, other features'). The
    // library built with this snet holds its build identity: it is taken
    // first wherever it is, so a library left beside the executable by an
    // older build (another profile, another commit) is never linked
    // silently while the matching one is in deps/. Without a match: the
    // library beside the executable (an installed snet), else the newest.
    let mut deps: Vec<(PathBuf, Option<std::time::SystemTime>)> =
        std::fs::read_dir(dir.join("deps"))
            .map(|rd| {
                rd.flatten()
                    .filter(|e| {
                        let n = e.file_name();
                        let n = n.to_string_lossy();
                        n.starts_with("libsnet_runner-") && n.ends_with(".a")
                    })
                    .map(|e| (e.path(), e.metadata().and_then(|m| m.modified()).ok()))
                    .collect()
            })
            .unwrap_or_default();
    deps.sort_by_key(|(_, modified)| std::cmp::Reverse(*modified));
    let mark = snet_runner::BUILD_ID.as_bytes();
    let built_with_me =
        |p: &PathBuf| std::fs::read(p).is_ok_and(|b| b.windows(mark.len()).any(|w| w == mark));
    direct
        .iter()
        .chain(deps.iter().map(|(p, _)| p))
        .find(|p| built_with_me(p))
        .or_else(|| direct.first())
        .or_else(|| deps.first().map(|(p, _)| p))
        .cloned()
}

/// Runs `snet build`; returns the exit status.
pub fn build(a: BuildArgs) -> u8 {
    let source = match std::fs::read_to_string(&a.file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "error: cannot read {}: {}",
                a.file.display(),
                snet_front::os_reason(&e)
            );
            return 2;
        }
    };
    let name = a.file.display().to_string();
    let compiled = snet_front::compile(&name, &source, a.entry.as_deref());
    if !compiled.diagnostics.is_empty() {
        eprint!(
            "{}",
            snet_front::render(&compiled.diagnostics, &name, &source, a.color)
        );
    }
    let graph = match compiled.graph {
        Some(g) if !compiled.diagnostics.iter().any(|d| d.is_error()) => g,
        _ => return 1,
    };
    // Boxes by name; one trampoline per name, and at most one inline body per name.
    let mut boxes: BTreeMap<&str, &BoxDef> = BTreeMap::new();
    let mut problems: Vec<Diagnostic> = Vec::new();
    let mut bad = false;
    let cxx = a.inputs.iter().any(|f| is_cxx(f));
    for b in generate::used_boxes(&graph) {
        if let Some(why) = box_name_problem(&b.name, cxx) {
            if !boxes.contains_key(b.name.as_str()) {
                eprintln!(
                    "error: box `{}` ({}) cannot be built as a C function: {why}",
                    b.name, b.loc
                );
            }
            boxes.insert(&b.name, b);
            bad = true;
            continue;
        }
        if let Some(code) = &b.code {
            if !is_c(code) {
                problems.push(
                    Diagnostic::error(
                        code.language_span.clone(),
                        format!("box `{}` has an inline body in {}, which `snet build` cannot compile", b.name, code.language),
                    )
                    .with_label(format!("{} code", code.language))
                    .with_note("`snet build` compiles inline C (`<<< C | ... >>>`) and C4SNet boxes in .c files"),
                );
                continue;
            }
            if let Some(why) = inline_params_problem(b) {
                problems.push(
                    Diagnostic::error(code.language_span.clone(), why)
                        .with_label("the inline C body of this box")
                        .with_note(
                            "the box function's parameters are named after the box's input labels",
                        ),
                );
                continue;
            }
        }
        if b.interface != "C4SNet" {
            eprintln!(
                "error: box `{}` ({}) uses interface `{}`; `snet build` supports C4SNet",
                b.name, b.loc, b.interface
            );
            bad = true;
            continue;
        }
        let kinds = |d: &BoxDef| d.inputs.iter().map(|l| l.is_field()).collect::<Vec<_>>();
        match boxes.get(b.name.as_str()).copied() {
            Some(prev) if kinds(prev) != kinds(b) => {
                eprintln!(
                    "error: box `{}` is declared with different argument kinds at {} and {}; one C function cannot serve both",
                    b.name, prev.loc, b.loc
                );
                bad = true;
            }
            Some(prev) => match (&prev.code, &b.code) {
                (Some(p), Some(c)) if p.code != c.code => {
                    let (first, second) = if p.span.start <= c.span.start {
                        (p, c)
                    } else {
                        (c, p)
                    };
                    problems.push(
                        Diagnostic::error(
                            second.language_span.clone(),
                            format!("box `{}` has two different inline bodies", b.name),
                        )
                        .with_label("second body")
                        .with_secondary(first.language_span.clone(), "first body")
                        .with_note("both would be the C function of the same name"),
                    );
                }
                // Keep the declaration that carries the body: it defines the function.
                (None, Some(_)) => {
                    boxes.insert(&b.name, b);
                }
                _ => {}
            },
            None => {
                boxes.insert(&b.name, b);
            }
        }
    }
    if !problems.is_empty() {
        eprint!("{}", snet_front::render(&problems, &name, &source, a.color));
        bad = true;
    }
    if bad {
        return 1;
    }
    if a.library && cxx {
        eprintln!(
            "error: --library takes C sources (a C box library's trampolines are C): build C++ boxes into a program"
        );
        return 2;
    }
    let runner = if a.library { None } else { find_runner_lib() };
    if runner.is_none() && !a.library {
        eprintln!(
            "error: cannot find the runtime library libsnet_runner.a (looked next to the snet executable and in ../lib/snet/ beside it)\n\
             help: install snet with `scripts/install.sh PREFIX` from the source tree, which puts the library in PREFIX/lib/snet \
             (`cargo install` copies only the executable); in the source tree, `cargo build --release` builds it next to target/release/snet; \
             or set SNET_RUNNER_LIB to the library's path"
        );
        return 2;
    }
    // A box's C function named like a symbol of the runtime library would
    // clash with it at the link (a duplicate definition, or a weak symbol
    // silently replaced): refused here, by name and declaration.
    if let Some(runner) = &runner {
        match crate::archive::global_symbols(runner) {
            Ok(symbols) => {
                let clash: Vec<&&BoxDef> = boxes
                    .values()
                    .filter(|b| symbols.contains(b.name.as_str()))
                    .collect();
                for b in &clash {
                    eprintln!(
                    "error: box `{}` ({}) cannot be built as a C function: `{}` is a symbol of snet's runtime library ({} defines it, and the program is linked with it): rename the box",
                    b.name,
                    b.loc,
                    b.name,
                    runner.file_name().map_or_else(|| runner.display().to_string(), |n| n.to_string_lossy().into_owned())
                );
                }
                if !clash.is_empty() {
                    return 1;
                }
            }
            Err(e) => {
                eprintln!(
                    "error: cannot read the runtime library {}: {}",
                    runner.display(),
                    snet_front::os_reason(&e)
                );
                return 2;
            }
        }
    }
    for f in &a.inputs {
        if let Err(e) = readable(f) {
            eprintln!(
                "error: cannot read {}: {}",
                f.display(),
                snet_front::os_reason(&e)
            );
            return 2;
        }
    }
    static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let tmp = std::env::temp_dir().join(format!(
        "snet-build-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let boxes: Vec<&BoxDef> = boxes.into_values().collect();
    let gen = tmp.join(if a.library {
        "snet_library.c"
    } else if cxx {
        "snet_main.cpp"
    } else {
        "snet_main.c"
    });
    // A library's own C4SNet functions (forwarding to the runtime that loads it).
    let glue = a.library.then(|| tmp.join("snet_c4snet.c"));
    let protos = tmp.join("snet_boxes.h");
    let inline = boxes
        .iter()
        .any(|b| b.code.is_some())
        .then(|| tmp.join("snet_inline.c"));
    let setup = std::fs::create_dir_all(&tmp)
        .and_then(|_| std::fs::write(tmp.join("C4SNet.h"), c4snet::HEADER))
        .and_then(|_| std::fs::write(tmp.join("bool.h"), c4snet::BOOL_HEADER))
        .and_then(|_| {
            let text = if a.library {
                c4snet::library::library_source(&boxes)
            } else {
                generate::generate(&boxes, &source, &name, a.entry.as_deref(), cxx)
            };
            std::fs::write(&gen, text)
        })
        .and_then(|_| match &glue {
            Some(f) => std::fs::write(f, c4snet::library::LIBRARY_GLUE),
            None => Ok(()),
        })
        .and_then(|_| {
            std::fs::write(
                &protos,
                codegen::prototypes_header(&boxes, &source, |_| false),
            )
        })
        .and_then(|_| match &inline {
            Some(f) => std::fs::write(f, generate::generate_inline(&boxes, &source, &name)),
            None => Ok(()),
        });
    if let Err(e) = setup {
        eprintln!("error: cannot write to {}: {e}", tmp.display());
        return 2;
    }
    let dirs: Vec<PathBuf> = a
        .include
        .iter()
        .cloned()
        .chain(source_dirs(&a.file, &a.inputs))
        .collect();
    // C++ sources (and then the generated main, whose trampolines catch
    // exceptions) become objects first; the C compiler links them below.
    let mut objects: BTreeMap<PathBuf, PathBuf> = BTreeMap::new();
    if cxx {
        let cxx_cmd = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
        let flags: Vec<String> = loop_alignment(&cxx_cmd)
            .iter()
            .map(|f| f.to_string())
            .chain(a.cxxflags.iter().cloned())
            .collect();
        let sources = a.inputs.iter().filter(|f| is_cxx(f)).chain([&gen]);
        for (i, f) in sources.enumerate() {
            let dir = tmp.join(format!("cxx{i}"));
            let file_name = f.file_name().unwrap_or_default().to_string_lossy();
            let obj = dir.join(format!("{file_name}.o"));
            if let Err(e) = std::fs::create_dir_all(&dir) {
                eprintln!("error: cannot write to {}: {e}", dir.display());
                return 2;
            }
            if let Err(status) = compile_cxx(&cxx_cmd, f, &obj, &tmp, &protos, &dirs, &flags) {
                if !a.keep {
                    let _ = std::fs::remove_dir_all(&tmp);
                }
                return status;
            }
            objects.insert(f.clone(), obj);
        }
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let align = loop_alignment(&cc);
    let compiled = |f: &PathBuf| objects.get(f).cloned().unwrap_or_else(|| f.clone());
    // The inputs as the C compiler gets them: C++ sources as their objects,
    // and (second try) box sources wrapped with the trampolines of their
    // box functions that have extra parameters.
    let link = |wrapped: &BTreeMap<PathBuf, PathBuf>| {
        let mut cmd = Command::new(&cc);
        if a.library {
            // A shared object whose every symbol is defined (box functions
            // are referred to weakly: a box it lacks is left to another
            // language, but a function a box calls must be there).
            cmd.args(["-shared", "-fPIC", "-Wl,-z,defs"]);
        }
        cmd.arg("-O2")
            .args(align)
            .args(&a.cflags)
            .arg("-I")
            .arg(&tmp);
        // Every C source sees the box prototypes first, so the compiler checks each box function's type.
        cmd.arg("-include").arg(&protos);
        for d in &dirs {
            cmd.arg("-I").arg(d);
        }
        cmd.args(
            a.inputs
                .iter()
                .map(|f| wrapped.get(f).cloned().unwrap_or_else(|| compiled(f))),
        )
        .arg(compiled(&gen))
        .args(&inline)
        .args(&glue)
        .args(&runner);
        for d in &a.lib_dirs {
            cmd.arg("-L").arg(d);
        }
        for l in &a.libs {
            cmd.arg(format!("-l{l}"));
        }
        if cxx {
            // The C++ standard library (and through it the C++ runtime: exceptions, RTTI).
            cmd.arg("-lstdc++");
        }
        if runner.is_some() {
            cmd.args(NATIVE_LIBS)
                .args(snet_runner::MPI_LINK_ARGS.split_whitespace());
        }
        cmd.arg("-o").arg(&a.output);
        if !keeps_debug_info(&a) {
            // The runtime library's debug information and symbol table are
            // most of the program (25 MB of a one-box program's 30; 4.8 MB
            // without); messages and crash reports name boxes and places
            // from snet's own tables, never from them.
            cmd.arg("-Wl,--strip-all");
        }
        cmd.output()
    };
    let mut out = link(&BTreeMap::new());
    // Box functions with parameters beyond their signatures (code written
    // for the original toolchain): built again with those parameters
    // receiving 0, with a warning.
    if let Ok(o) = &out {
        if !o.status.success() && !cxx && !a.library {
            let err = String::from_utf8_lossy(&o.stderr).into_owned();
            if let Some(extra) = diagnose::extra_parameters(&err, &boxes, &a.inputs) {
                match generate::rebuild_files(
                    &extra,
                    &boxes,
                    &source,
                    &name,
                    a.entry.as_deref(),
                    &tmp,
                    &gen,
                    &protos,
                ) {
                    Ok(wrapped) => {
                        for (b, e) in &extra {
                            if let Some(def) = boxes.iter().find(|d| d.name == *b) {
                                eprintln!("{}", diagnose::extra_warning(def, e));
                            }
                        }
                        out = link(&wrapped);
                    }
                    Err(e) => {
                        eprintln!("error: cannot write to {}: {e}", tmp.display());
                        return 2;
                    }
                }
            }
        }
    }
    let status = match out {
        Err(e) => {
            eprintln!("error: cannot run the C compiler `{cc}`: {e}");
            2
        }
        Ok(out) if out.status.success() => {
            eprint!("{}", String::from_utf8_lossy(&out.stderr));
            0
        }
        Ok(out) => {
            diagnose::report_failure(&diagnose::Failure {
                err: &String::from_utf8_lossy(&out.stderr),
                status: out.status,
                cc: &cc,
                cxx,
                boxes: &boxes,
                inputs: &a.inputs,
                dirs: &dirs,
                program: &name,
                source: &source,
                color: a.color,
            });
            1
        }
    };
    if a.keep {
        eprintln!("snet: generated files kept in {}", tmp.display());
    } else {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    status
}

/// Compiles C++ source `src` to `obj` with the C++ compiler `cxx`
/// (`$CXX`, default `c++`) and `flags` after `-O2`, seeing
/// `C4SNet.h` (in `tmp`) and the box prototypes (`protos`, which declares
/// them `extern "C"`, so a box function defined with the right type gets C
/// linkage without saying so). On failure prints the compiler's messages
/// and returns the exit status.
fn compile_cxx(
    cxx: &str,
    src: &Path,
    obj: &Path,
    tmp: &Path,
    protos: &Path,
    dirs: &[PathBuf],
    flags: &[String],
) -> Result<(), u8> {
    let mut cmd = Command::new(cxx);
    cmd.arg("-O2").args(flags).arg("-I").arg(tmp);
    cmd.arg("-include").arg(protos);
    for d in dirs {
        cmd.arg("-I").arg(d);
    }
    cmd.arg("-c").arg(src).arg("-o").arg(obj);
    match cmd.output() {
        Err(e) => {
            eprintln!(
                "error: cannot run the C++ compiler `{cxx}` (for {}): {e}",
                src.display()
            );
            Err(2)
        }
        Ok(out) if out.status.success() => {
            eprint!("{}", String::from_utf8_lossy(&out.stderr));
            Ok(())
        }
        Ok(out) => {
            let err = String::from_utf8_lossy(&out.stderr);
            eprint!("{err}");
            if err.contains("conflicting declaration of C function") {
                eprintln!("{}", diagnose::PROTOTYPE_RULE);
            }
            eprintln!(
                "error: the C++ compiler failed on {} ({})",
                src.display(),
                out.status
            );
            Err(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_loops_are_aligned_where_the_compiler_takes_it() {
        // The C compiler of the test machine (GCC or Clang) takes it.
        assert_eq!(loop_alignment("cc"), ["-falign-loops=32"]);
        // A compiler that refuses it (`false` fails whatever it is given),
        // or none at all, gets nothing more than before.
        assert!(loop_alignment("false").is_empty());
        assert!(loop_alignment("no-such-compiler-here").is_empty());
    }

    #[test]
    fn include_dirs_are_the_program_and_source_directories() {
        let dirs = source_dirs(
            Path::new("prog.snet"),
            &[
                PathBuf::from("a.c"),
                PathBuf::from("lib/b.c"),
                PathBuf::from("lib/c.c"),
                PathBuf::from("obj/x.o"),
            ],
        );
        assert_eq!(dirs, [PathBuf::from("."), PathBuf::from("lib")]);
    }

    #[test]
    fn os_errors_read_without_the_error_number() {
        let e = readable(Path::new("surely/not/here.c")).unwrap_err();
        assert_eq!(snet_front::os_reason(&e), "No such file or directory");
        let e = readable(Path::new(".")).unwrap_err();
        assert_eq!(snet_front::os_reason(&e), "Is a directory");
        let custom = std::io::Error::other("odd");
        assert_eq!(snet_front::os_reason(&custom), "odd");
    }
}
