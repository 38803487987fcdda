//! The snet front end: S-Net source text to a checked [`snet_core::Graph`].
//!
//! The public surface is what the tools use: [`compile`] (source text to
//! a [`Compiled`]: the graph, the diagnostics, every net's signature), the
//! `snet check` and `snet graph` commands ([`check_command`],
//! [`graph_command`]), [`diag`] (diagnostics and their rendering), [`dot`]
//! (Graphviz output of a graph) and [`suggest`] (the "did you mean"
//! hints). The passes behind [`compile`] are private, each in its own
//! module:
//! - `lexer`: text to tokens;
//! - `metadata`: `<metadata>` blocks and which box interface their rules
//!   select (public only to the fuzz targets, built with `--cfg fuzzing`);
//! - `parser`: tokens to the syntax tree (`ast`), with error recovery;
//! - `resolve`: names, scopes, labels and tag expressions, into `hir`;
//! - `check`: type inference with flow inheritance and the static type checks;
//! - `lower`: the property graph the engine runs.
//!
//! Every pass reports problems and carries on, so one run shows all of them.
//! No input makes the front end panic or overflow its stack: recursion is
//! bounded by the parser's nesting limits, and the passes run on a thread
//! with a generous stack (see [`compile`]).

#![warn(missing_docs)]

mod ast;
mod check;
pub mod diag;
pub mod dot;
mod hir;
mod lexer;
mod lower;
/// The `<metadata>` reader, public to the fuzz target `metadata` (`fuzz/`;
/// built only with `--cfg fuzzing`).
#[cfg(fuzzing)]
pub mod metadata;
#[cfg(not(fuzzing))]
mod metadata;
mod parser;
mod resolve;
pub mod suggest;

use std::path::Path;

pub use diag::{render, Diagnostic, Severity};
use snet_core::Variant;

/// A net's inferred signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetSignature {
    /// Nested nets are qualified by their enclosing nets: `outer/inner`.
    pub name: String,
    /// The net's input type, one entry per variant (as declared, or as
    /// inferred for a net without a signature).
    pub input: Vec<Variant>,
    /// The net's output type, one entry per variant.
    pub output: Vec<Variant>,
    /// Whether this is the entry network.
    pub entry: bool,
}

impl NetSignature {
    /// `IN -> OUT` with labels and variants in a stable order.
    pub fn display(&self) -> String {
        format!(
            "{} -> {}",
            hir::fmt_type(&self.input),
            hir::fmt_type(&self.output)
        )
    }
}

/// What [`compile`] produces.
pub struct Compiled {
    /// The graph, if there were no errors.
    pub graph: Option<snet_core::Graph>,
    /// Errors and warnings in source order.
    pub diagnostics: Vec<Diagnostic>,
    /// Every net, in definition order.
    pub nets: Vec<NetSignature>,
}

impl Compiled {
    /// Whether any diagnostic is an error (then [`Compiled::graph`] is
    /// `None`; warnings alone leave the graph).
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Stack for the compiling thread: the passes recurse over the program, and
/// a chain of thousands of nets each using the previous one is legal.
const STACK_SIZE: usize = 256 << 20;

/// Runs `f` on a thread with a large stack (falls back to the current thread
/// if no thread can be spawned). A panic in `f` is propagated.
fn with_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    let cell = std::sync::Mutex::new(Some(f));
    let take = || cell.lock().unwrap_or_else(|e| e.into_inner()).take();
    std::thread::scope(|s| {
        let spawned = std::thread::Builder::new()
            .name("snet-front".into())
            .stack_size(STACK_SIZE)
            .spawn_scoped(s, || take().map(|f| f()));
        let result = match spawned {
            Ok(handle) => match handle.join() {
                Ok(v) => v,
                Err(panic) => std::panic::resume_unwind(panic),
            },
            Err(_) => None,
        };
        // If no thread could be spawned, run here.
        result
            .or_else(|| take().map(|f| f()))
            .expect("the closure runs exactly once")
    })
}

/// Compiles `source` (named `file_name` in messages and locations). `entry`
/// selects the entry net by name instead of the last top-level one.
pub fn compile(file_name: &str, source: &str, entry: Option<&str>) -> Compiled {
    with_big_stack(|| compile_here(file_name, source, entry))
}

fn compile_here(file_name: &str, source: &str, entry: Option<&str>) -> Compiled {
    let mut diags = diag::Diagnostics::default();
    let program = parser::parse_program(source, &mut diags);
    let hir = resolve::resolve(&program, source.len(), entry, &mut diags);
    let checked = check::check(&hir, source, &mut diags);
    let nets = hir
        .nets
        .iter()
        .zip(&checked.nets)
        .enumerate()
        .map(|(i, (n, (input, output)))| NetSignature {
            name: n.qual.clone(),
            input: input.clone(),
            output: output.clone(),
            entry: hir.entry == Some(i),
        })
        .collect();
    let graph = match hir.entry {
        Some(e) if !diags.has_errors() => {
            let g = lower::lower(&hir, &checked, e, file_name, source, &mut diags);
            (!diags.has_errors()).then_some(g)
        }
        _ => None,
    };
    Compiled {
        graph,
        diagnostics: diags.into_sorted(),
        nets,
    }
}

/// The OS's reason for an I/O error as people read it (`No such file or
/// directory`), without the `(os error 2)` that Rust's text appends: every
/// `cannot read FILE: REASON` message of the tools uses it.
pub fn os_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match (e.raw_os_error(), text.rfind(" (os error ")) {
        (Some(_), Some(i)) => text[..i].to_string(),
        _ => text,
    }
}

fn read(path: &Path) -> Result<String, (String, String, i32)> {
    match std::fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(s) => Ok(s),
            Err(e) => Err((
                String::new(),
                format!(
                    "error: {} is not UTF-8 text (invalid byte at offset {})\n",
                    path.display(),
                    e.utf8_error().valid_up_to()
                ),
                1,
            )),
        },
        Err(e) => Err((
            String::new(),
            format!("error: cannot read {}: {}\n", path.display(), os_reason(&e)),
            2,
        )),
    }
}

fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_type(vs: &[Variant]) -> String {
    let mut vars: Vec<Vec<String>> = vs.iter().map(hir::variant_names).collect();
    vars.sort();
    let parts: Vec<String> = vars
        .iter()
        .map(|v| {
            format!(
                "[{}]",
                v.iter().map(|l| json_str(l)).collect::<Vec<_>>().join(",")
            )
        })
        .collect();
    format!("[{}]", parts.join(","))
}

/// `snet check`: prints each net's signature (`net NAME : IN -> OUT`), or a
/// JSON document with `json`, and the diagnostics. Exit code 0 if there are
/// no errors, 1 if there are, 2 if the file cannot be read.
pub fn check_command(
    path: &Path,
    json: bool,
    entry: Option<&str>,
    color: bool,
) -> (String, String, i32) {
    let source = match read(path) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let file_name = path.display().to_string();
    let c = compile(&file_name, &source, entry);
    let code = i32::from(c.has_errors());
    if json {
        let index = diag::LineIndex::new(&source);
        let nets: Vec<String> = c
            .nets
            .iter()
            .map(|n| {
                format!(
                    "{{\"name\":{},\"entry\":{},\"input\":{},\"output\":{}}}",
                    json_str(&n.name),
                    n.entry,
                    json_type(&n.input),
                    json_type(&n.output)
                )
            })
            .collect();
        let diags: Vec<String> = c
            .diagnostics
            .iter()
            .map(|d| {
                let (line, col) = d
                    .span
                    .as_ref()
                    .map_or((0, 0), |s| index.line_col(&source, s.start));
                format!(
                    "{{\"severity\":{},\"message\":{},\"line\":{line},\"col\":{col}}}",
                    json_str(d.severity.as_str()),
                    json_str(&d.message)
                )
            })
            .collect();
        let out = format!(
            "{{\"nets\":[{}],\"diagnostics\":[{}]}}\n",
            nets.join(","),
            diags.join(",")
        );
        return (out, String::new(), code);
    }
    let mut out = String::new();
    if !c.has_errors() {
        for n in &c.nets {
            out.push_str(&format!("net {} : {}\n", n.name, n.display()));
        }
    }
    (
        out,
        render(&c.diagnostics, &file_name, &source, color),
        code,
    )
}

/// `snet graph`: the network as Graphviz DOT, or SVG through `dot -Tsvg`.
pub fn graph_command(path: &Path, entry: Option<&str>, svg: bool) -> (String, String, i32) {
    graph_command_decorated(path, entry, svg, &|_, _| None)
}

/// [`graph_command`], each component decorated by `decor` (`snet graph --profile`).
pub fn graph_command_decorated(
    path: &Path,
    entry: Option<&str>,
    svg: bool,
    decor: dot::Decorate,
) -> (String, String, i32) {
    let source = match read(path) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let file_name = path.display().to_string();
    let c = compile(&file_name, &source, entry);
    let diags = render(&c.diagnostics, &file_name, &source, false);
    let Some(graph) = c.graph else {
        return (String::new(), diags, 1);
    };
    let text = with_big_stack(|| dot::to_dot_decorated(&graph, decor));
    if !svg {
        return (text, diags, 0);
    }
    match dot::to_svg(&text) {
        Ok(svg) => (svg, diags, 0),
        Err(e) => (String::new(), format!("{diags}error: {e}\n"), 1),
    }
}
