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
//!    keywords, C4SNet.h's names, the runtime library's). If boxes have inline C
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

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use c4snet::codegen::{
    self, box_name_problem, c_quote, expected_prototype, inline_params_problem, Naming,
};
use snet_core::{BoxCode, BoxDef, Graph, NodeKind};
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

/// Boxes reachable from the entry network, by name.
fn used_boxes(graph: &Graph) -> Vec<&BoxDef> {
    let mut seen = vec![false; graph.nodes.len()];
    let mut stack = vec![graph.entry];
    let mut out = Vec::new();
    while let Some(n) = stack.pop() {
        if std::mem::replace(&mut seen[n.index()], true) {
            continue;
        }
        if let NodeKind::Box(b) = graph.node(n).kind {
            out.push(graph.box_def(b));
        }
        stack.extend(graph.children(n));
    }
    out
}

fn c_string_bytes(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 5);
    for (i, b) in s.bytes().enumerate() {
        if i % 16 == 0 {
            out.push_str("\n    ");
        }
        let _ = write!(out, "{b},");
    }
    out.push_str("0\n");
    out
}

/// The generated C file (trampolines, box table, embedded program, `main`);
/// C++ when `cxx` (the program has C++ box sources): then every trampoline
/// catches what a box throws ([`c4snet::trampoline_source_cxx`]).
pub fn generate(
    boxes: &[&BoxDef],
    program: &str,
    name: &str,
    entry: Option<&str>,
    cxx: bool,
) -> String {
    generate_with(boxes, program, name, entry, cxx, &BTreeMap::new())
}

/// [`generate`], where the boxes in `extra` (by name) have C functions
/// with parameters beyond their signatures: their trampolines are
/// compiled with the box sources that define them
/// ([`c4snet::trampoline_source_extra`]) and only declared here.
///
/// Every identifier this file defines starts with
/// [`c4snet::GENERATED_PREFIX`] (`main` aside), and it includes no header
/// in C, so that no box function's name can collide with it.
fn generate_with(
    boxes: &[&BoxDef],
    program: &str,
    name: &str,
    entry: Option<&str>,
    cxx: bool,
    extra: &BTreeMap<String, Extra>,
) -> String {
    let mut c = String::new();
    if cxx {
        c.push_str("/* Generated by `snet build`: box trampolines (catching C++ exceptions), the box table and main. */\n");
        c.push_str("#include <exception>\n\n");
        c.push_str("extern \"C\" {\n");
    } else {
        c.push_str("/* Generated by `snet build`: box trampolines, the box table and main. */\n");
    }
    c.push_str("struct cdata;\n");
    c.push_str(codegen::ARG_UNION);
    c.push_str(
        "struct __snet_box_entry { const char *name; void (*call)(void *, const __snet_arg_t *); };\n",
    );
    c.push_str("int snet_runner_main(int, char **, const char *, const char *, const char *, const struct __snet_box_entry *, __SIZE_TYPE__);\n");
    if cxx {
        c.push_str("void snet_c4snet_box_threw(void *, const char *);\n");
    }
    c.push('\n');
    for b in boxes {
        if extra.contains_key(&b.name) {
            let _ = writeln!(
                c,
                "void __snet_call_{}(void *, const __snet_arg_t *);\n",
                b.name
            );
            continue;
        }
        c.push_str(&if cxx {
            c4snet::trampoline_source_cxx(b)
        } else {
            c4snet::trampoline_source(b)
        });
        c.push('\n');
    }
    if cxx {
        c.push_str("}\n\n");
    }
    c.push_str("static const struct __snet_box_entry __snet_boxes[] = {\n");
    for b in boxes {
        let _ = writeln!(c, "    {{ {}, __snet_call_{} }},", c_quote(&b.name), b.name);
    }
    c.push_str("    { 0, 0 }\n};\n\n");
    // Unsigned: C++ rejects bytes above 127 in a `char` initialiser (narrowing).
    let _ = writeln!(
        c,
        "static const unsigned char __snet_program[] = {{{}}};",
        c_string_bytes(program)
    );
    let _ = writeln!(
        c,
        "static const char __snet_program_name[] = {};",
        c_quote(name)
    );
    let entry = entry.map_or("0".to_string(), c_quote);
    let _ = writeln!(
        c,
        "\nint main(int __snet_argc, char **__snet_argv)\n{{\n    return snet_runner_main(__snet_argc, __snet_argv, (const char *)__snet_program, __snet_program_name, {entry}, __snet_boxes, {});\n}}",
        boxes.len()
    );
    c
}

/// Whether an inline body is C (the only language `snet build` compiles).
fn is_c(code: &BoxCode) -> bool {
    code.language == "C" || code.language == "c"
}

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
const PROTOTYPE_RULE: &str = "note: a box's C function returns `void *` and takes the handle (`void *hnd`), then one parameter per input label in signature order: `c4snet_data_t *` for a field, `int` for a tag or binding tag (parameter names do not matter)";

/// The generated C file holding the inline C bodies as box functions.
/// `source` is the program text (for the columns of `#line`), `file` its name.
pub fn generate_inline(boxes: &[&BoxDef], source: &str, file: &str) -> String {
    let mut c = String::new();
    c.push_str("/* Generated by `snet build`: the inline C box bodies of the program. */\n");
    c.push_str("#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n");
    c.push_str("#include \"C4SNet.h\"\n#include <bool.h>\n");
    let file = c_quote(file);
    for b in boxes {
        let Some(code) = &b.code else { continue };
        let _ = writeln!(
            c,
            "\n#line {} {file}\nvoid *{}({})\n{{",
            b.loc.line,
            b.name,
            codegen::parameters(b, Naming::Labels)
        );
        // The code starts mid-line: pad the first line so that columns match
        // the program (keeping tabs, so the compiler counts them alike).
        let start = code.span.start.min(source.len());
        let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
        let pad: String = source[line_start..start]
            .chars()
            .map(|ch| if ch == '\t' { '\t' } else { ' ' })
            .collect();
        let _ = writeln!(c, "#line {} {file}\n{pad}{}", code.loc.line, code.code);
        c.push_str("    return hnd;\n}\n");
    }
    c
}

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
    let direct = [
        dir.join("libsnet_runner.a"),
        dir.join("../lib/snet/libsnet_runner.a"),
    ];
    if let Some(p) = direct.into_iter().find(|p| p.exists()) {
        return Some(p);
    }
    // Built as a dependency of this crate, cargo leaves it (hashed) in
    // deps/, maybe beside others (`cargo test`'s, other features'): the one
    // built with this snet holds its build identity; else the newest.
    let candidates: Vec<std::fs::DirEntry> = std::fs::read_dir(dir.join("deps"))
        .ok()?
        .flatten()
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with("libsnet_runner-") && n.ends_with(".a")
        })
        .collect();
    let mark = snet_runner::BUILD_ID.as_bytes();
    let built_with_me = |e: &&std::fs::DirEntry| {
        std::fs::read(e.path()).is_ok_and(|b| b.windows(mark.len()).any(|w| w == mark))
    };
    candidates
        .iter()
        .find(built_with_me)
        .or_else(|| {
            candidates
                .iter()
                .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        })
        .map(|e| e.path())
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
    for b in used_boxes(&graph) {
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
    let Some(runner) = find_runner_lib() else {
        eprintln!(
            "error: cannot find the runtime library libsnet_runner.a (looked next to the snet executable and in ../lib/snet/ beside it)\n\
             help: install snet with `scripts/install.sh PREFIX` from the source tree, which puts the library in PREFIX/lib/snet \
             (`cargo install` copies only the executable); in the source tree, `cargo build --release` builds it next to target/release/snet; \
             or set SNET_RUNNER_LIB to the library's path"
        );
        return 2;
    };
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
    let gen = tmp.join(if cxx { "snet_main.cpp" } else { "snet_main.c" });
    let protos = tmp.join("snet_boxes.h");
    let inline = boxes
        .iter()
        .any(|b| b.code.is_some())
        .then(|| tmp.join("snet_inline.c"));
    let setup = std::fs::create_dir_all(&tmp)
        .and_then(|_| std::fs::write(tmp.join("C4SNet.h"), c4snet::HEADER))
        .and_then(|_| std::fs::write(tmp.join("bool.h"), c4snet::BOOL_HEADER))
        .and_then(|_| {
            std::fs::write(
                &gen,
                generate(&boxes, &source, &name, a.entry.as_deref(), cxx),
            )
        })
        .and_then(|_| {
            std::fs::write(
                &protos,
                codegen::prototypes_header(&boxes, &source, |_| false),
            )
        })
        .and_then(|_| match &inline {
            Some(f) => std::fs::write(f, generate_inline(&boxes, &source, &name)),
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
        let sources = a.inputs.iter().filter(|f| is_cxx(f)).chain([&gen]);
        for (i, f) in sources.enumerate() {
            let dir = tmp.join(format!("cxx{i}"));
            let file_name = f.file_name().unwrap_or_default().to_string_lossy();
            let obj = dir.join(format!("{file_name}.o"));
            if let Err(e) = std::fs::create_dir_all(&dir) {
                eprintln!("error: cannot write to {}: {e}", dir.display());
                return 2;
            }
            if let Err(status) = compile_cxx(f, &obj, &tmp, &protos, &dirs, &a.cxxflags) {
                if !a.keep {
                    let _ = std::fs::remove_dir_all(&tmp);
                }
                return status;
            }
            objects.insert(f.clone(), obj);
        }
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let compiled = |f: &PathBuf| objects.get(f).cloned().unwrap_or_else(|| f.clone());
    // The inputs as the C compiler gets them: C++ sources as their objects,
    // and (second try) box sources wrapped with the trampolines of their
    // box functions that have extra parameters.
    let link = |wrapped: &BTreeMap<PathBuf, PathBuf>| {
        let mut cmd = Command::new(&cc);
        cmd.arg("-O2").args(&a.cflags).arg("-I").arg(&tmp);
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
        .arg(&runner);
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
        cmd.args(NATIVE_LIBS)
            .args(snet_runner::MPI_LINK_ARGS.split_whitespace())
            .arg("-o")
            .arg(&a.output);
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
        if !o.status.success() && !cxx {
            let err = String::from_utf8_lossy(&o.stderr).into_owned();
            if let Some(extra) = extra_parameters(&err, &boxes, &a.inputs) {
                match rebuild_files(
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
                                eprintln!("{}", extra_warning(def, e));
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
            let err = String::from_utf8_lossy(&out.stderr);
            let names: Vec<&str> = boxes
                .iter()
                .filter(|b| b.code.is_none())
                .map(|b| b.name.as_str())
                .collect();
            let mismatches = signature_mismatches(&err, &names);
            let missing: Vec<&&BoxDef> = boxes
                .iter()
                .filter(|b| err.contains(&format!("undefined reference to `{}'", b.name)))
                .collect();
            let twice: Vec<Diagnostic> = boxes
                .iter()
                .filter_map(|b| {
                    let code = b.code.as_ref()?;
                    let files = duplicate_definition(&err, &b.name, &a.inputs)?;
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
                        .with_label(
                            "the inline body defines the C function `".to_string() + &b.name + "`",
                        )
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
                        eprint!("{}", mismatch_message(b, m, outside(&m.file, &dirs)));
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
                eprint!("{}", snet_front::render(&twice, &name, &source, a.color));
            } else if missing.is_empty() {
                eprint!("{err}");
                eprintln!("error: the C compiler failed ({})", out.status);
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
                        if a.inputs.is_empty() {
                            "any box source (none given)".to_string()
                        } else {
                            a.inputs
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

/// A box function with parameters beyond its signature's: the C source
/// that defines it (its trampoline is compiled there), where the compiler
/// saw it, and the extra parameters' types as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extra {
    source: PathBuf,
    at: String,
    params: Vec<String>,
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
fn extra_parameters(
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
fn extra_warning(b: &BoxDef, e: &Extra) -> String {
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

/// Writes the generated files again for boxes with extra parameters:
/// `gen` without their trampolines, `protos` without their prototypes,
/// and per C source defining one a wrapper that includes it and then
/// defines their trampolines; returns the wrappers by source.
#[allow(clippy::too_many_arguments)]
fn rebuild_files(
    extra: &BTreeMap<String, Extra>,
    boxes: &[&BoxDef],
    source: &str,
    name: &str,
    entry: Option<&str>,
    tmp: &Path,
    gen: &Path,
    protos: &Path,
) -> std::io::Result<BTreeMap<PathBuf, PathBuf>> {
    std::fs::write(gen, generate_with(boxes, source, name, entry, false, extra))?;
    std::fs::write(
        protos,
        codegen::prototypes_header(boxes, source, |n| extra.contains_key(n)),
    )?;
    let mut wrapped: BTreeMap<PathBuf, String> = BTreeMap::new();
    for (b, e) in extra {
        let Some(def) = boxes.iter().find(|d| d.name == *b) else {
            continue;
        };
        let text = wrapped.entry(e.source.clone()).or_insert_with(|| {
            let path = e.source.canonicalize().unwrap_or_else(|_| e.source.clone());
            format!(
                "/* Generated by `snet build`: a box source and the trampolines of its box functions with extra parameters. */\n#include {}\n",
                c_quote(&path.display().to_string())
            )
        });
        text.push_str(&c4snet::trampoline_source_extra(def, e.params.len()));
    }
    let mut out = BTreeMap::new();
    for (i, (src, text)) in wrapped.into_iter().enumerate() {
        let w = tmp.join(format!("snet_extra{i}.c"));
        std::fs::write(&w, text)?;
        out.insert(src, w);
    }
    Ok(out)
}

/// Compiles C++ source `src` to `obj` with `$CXX` (default `c++`), seeing
/// `C4SNet.h` (in `tmp`) and the box prototypes (`protos`, which declares
/// them `extern "C"`, so a box function defined with the right type gets C
/// linkage without saying so). On failure prints the compiler's messages
/// and returns the exit status.
fn compile_cxx(
    src: &Path,
    obj: &Path,
    tmp: &Path,
    protos: &Path,
    dirs: &[PathBuf],
    flags: &[String],
) -> Result<(), u8> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let mut cmd = Command::new(&cxx);
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
                eprintln!("{PROTOTYPE_RULE}");
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
    fn generated_main_embeds_program_and_trampolines() {
        let c = snet_front::compile(
            "t.snet",
            "box foo((a, <t>) -> (b));\nnet n connect foo;",
            None,
        );
        let g = c.graph.expect("compiles");
        let boxes = used_boxes(&g);
        let src = generate(&boxes, "box", "t.snet", None, false);
        assert!(
            src.contains("void *foo(void *, struct cdata *, int);"),
            "{src}"
        );
        assert!(
            src.contains("(void)foo(__snet_h, __snet_a[0].field, __snet_a[1].tag);"),
            "{src}"
        );
        assert!(src.contains("{ \"foo\", __snet_call_foo },"));
        assert!(src.contains("98,111,120,0"));
    }

    #[test]
    fn cxx_trampolines_catch_what_boxes_throw() {
        let c = snet_front::compile(
            "t.snet",
            "box foo((a, <t>) -> (b));\nnet n connect foo;",
            None,
        );
        let g = c.graph.expect("compiles");
        let boxes = used_boxes(&g);
        let src = generate(&boxes, "b\u{e9}", "t.snet", None, true);
        for want in [
            "#include <exception>",
            "extern \"C\" {",
            "void snet_c4snet_box_threw(void *, const char *);",
            "try {\n        (void)foo(__snet_h, __snet_a[0].field, __snet_a[1].tag);",
            "catch (const std::exception &__snet_e) {\n        snet_c4snet_box_threw(__snet_h, __snet_e.what());",
            "catch (...) {\n        snet_c4snet_box_threw(__snet_h, 0);",
            // Bytes above 127 in an unsigned array: C++ rejects them as `char` (narrowing).
            "static const unsigned char __snet_program[] = {\n    98,195,169,0",
        ] {
            assert!(src.contains(want), "{want:?} not in:\n{src}");
        }
        assert!(!generate(&boxes, "b", "t.snet", None, false).contains("catch"));
        assert!(
            is_cxx(Path::new("x/a.cpp")) && is_cxx(Path::new("b.cc")) && is_cxx(Path::new("c.cxx"))
        );
        assert!(!is_cxx(Path::new("a.c")) && !is_cxx(Path::new("a.o")));
    }

    #[test]
    fn inline_bodies_become_box_functions_with_line_directives() {
        let src = "box f((a, <t>, <#b>) -> (a)) {\n\t  <<< C | C4SNetOut(hnd, 1, a); >>>\n}\nnet n connect f;";
        let c = snet_front::compile("dir/p.snet", src, None);
        let g = c.graph.expect("compiles");
        let boxes = used_boxes(&g);
        let gen = generate_inline(&boxes, src, "dir/p.snet");
        assert!(
            gen.contains("#include \"C4SNet.h\"\n#include <bool.h>\n"),
            "{gen}"
        );
        assert!(
            gen.contains(
                "#line 1 \"dir/p.snet\"\nvoid *f(void *hnd, c4snet_data_t *a, int t, int b)\n{\n"
            ),
            "{gen}"
        );
        // The code keeps its line and column: 9 columns pad the line (its tab stays
        // a tab), then the code begins with the space after `|`.
        assert!(
            gen.contains(
                "#line 2 \"dir/p.snet\"\n\t          C4SNetOut(hnd, 1, a); \n    return hnd;\n}\n"
            ),
            "{gen}"
        );
    }

    #[test]
    fn inline_parameters_must_be_c_names() {
        for (sig, bad) in [
            ("(a, <int>)", Some("C keyword")),
            ("(hnd)", Some("handle")),
            ("(a, <a>)", Some("both")),
            ("(a, <b>)", None),
        ] {
            let src = format!("box f({sig} -> ()) {{ <<< C | >>> }}\nnet n connect f;");
            let c = snet_front::compile("p.snet", &src, None);
            let g = c.graph.expect("compiles");
            let why = inline_params_problem(g.box_def(0));
            assert_eq!(
                why.as_deref().map(|w| bad.is_some_and(|b| w.contains(b))),
                bad.map(|_| true),
                "{sig}: {why:?}"
            );
        }
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
    fn prototype_header_declares_each_box_function_at_its_name() {
        let src = "box greet((name, <times>, <#k>) -> (msg));\n\tbox  init(-> (<a>));\nbox inl((<a>) -> (<a>)) { <<< C | >>> }\nnet n connect greet | (init .. inl);";
        let c = snet_front::compile("dir/p.snet", src, None);
        let g = c.graph.expect("compiles");
        let mut boxes = used_boxes(&g);
        boxes.sort_by_key(|b| b.name.clone());
        let h = codegen::prototypes_header(&boxes, src, |_| false);
        assert!(h.contains("struct cdata;\n"), "{h}");
        // The name sits at its column in the program: `box ` is 4 columns.
        assert!(
            h.contains(
                "void *\n#line 1 \"dir/p.snet\"\n    greet(void *, struct cdata *, int, int);\n"
            ),
            "{h}"
        );
        assert!(
            h.contains("void *\n#line 2 \"dir/p.snet\"\n\t     init(void *);\n"),
            "{h}"
        );
        // An inline box gets its prototype from its generated definition.
        assert!(!h.contains("inl("), "{h}");
        let greet = boxes.iter().find(|b| b.name == "greet").unwrap();
        assert_eq!(
            expected_prototype(greet),
            "void *greet(void *hnd, c4snet_data_t *name, int times, int k);"
        );
    }

    #[test]
    fn expected_prototype_drops_names_that_are_not_c_names() {
        let c = snet_front::compile("p.snet", "box f((a, <int>) -> ());\nnet n connect f;", None);
        let g = c.graph.expect("compiles");
        assert_eq!(
            expected_prototype(g.box_def(0)),
            "void *f(void *, c4snet_data_t *, int);"
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
