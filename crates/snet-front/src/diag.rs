//! Diagnostics: what the front end found, with byte spans, rendered only at the edge.
//!
//! Every pass pushes [`Diagnostic`]s into a [`Diagnostics`] sink and carries
//! on; nothing aborts at the first problem. [`render`] turns them into the
//! familiar `error: ... --> file:line:col` text with a source excerpt and
//! carets, using `codespan-reporting` (chosen because its output is stable,
//! rustc-like, and it needs no global state,
//! which keeps the snapshot tests simple).

use std::collections::HashSet;
use std::ops::Range;

use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term;
use codespan_reporting::term::termcolor::Buffer;

/// A byte range in the source file.
pub type Span = Range<usize>;

/// How bad a diagnostic is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The program runs as it is, but probably not as meant.
    Warning,
    /// The program is rejected: [`crate::compile`] makes no graph.
    Error,
}

impl Severity {
    /// `warning` or `error`, as messages and `snet check --json` write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One problem in the program.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    /// Whether it rejects the program.
    pub severity: Severity,
    /// The one-line headline.
    pub message: String,
    /// Where the problem is (absent only for whole-file problems such as an unknown entry net).
    pub span: Option<Span>,
    /// Text under the primary caret.
    pub label: String,
    /// Other places involved, each with its own text.
    pub secondary: Vec<(Span, String)>,
    /// Extra lines (`= note: ...`).
    pub notes: Vec<String>,
}

impl Diagnostic {
    /// An error at `span` with the headline `message` (no label, secondary
    /// spans or notes yet: see the `with_*` methods).
    pub fn error(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Error, Some(span), message)
    }

    /// A warning at `span` with the headline `message`.
    pub fn warning(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Warning, Some(span), message)
    }

    /// A diagnostic of any severity; `span` is `None` only for a problem of the
    /// whole file.
    pub fn new(severity: Severity, span: Option<Span>, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity,
            message: message.into(),
            span,
            label: String::new(),
            secondary: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The diagnostic with `label` as the text under the primary caret
    /// (replacing any earlier one).
    pub fn with_label(mut self, label: impl Into<String>) -> Diagnostic {
        self.label = label.into();
        self
    }

    /// The diagnostic with one more place involved, `span`, marked `label`.
    pub fn with_secondary(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        self.secondary.push((span, label.into()));
        self
    }

    /// The diagnostic with one more `= note:` line.
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    /// Whether it is an error (rather than a warning).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// 1-based line and column (in characters) of the primary span, if any.
    pub fn line_col(&self, source: &str) -> Option<(usize, usize)> {
        self.span
            .as_ref()
            .map(|s| LineIndex::new(source).line_col(source, s.start))
    }
}

/// Collects diagnostics, dropping exact duplicates (the checker may visit a
/// construct once per context that reaches it).
#[derive(Default)]
pub struct Diagnostics {
    list: Vec<Diagnostic>,
    seen: HashSet<Diagnostic>,
}

/// Beyond this many errors the rest are dropped: a garbage file should not
/// produce megabytes of output.
const MAX_DIAGNOSTICS: usize = 200;

impl Diagnostics {
    /// Adds `d`, unless an identical diagnostic is there already or the
    /// limit of 200 has been reached (the rest of a garbage file's errors
    /// would say nothing new).
    pub fn push(&mut self, d: Diagnostic) {
        if self.list.len() >= MAX_DIAGNOSTICS {
            return;
        }
        if self.seen.insert(d.clone()) {
            self.list.push(d);
        }
    }

    /// A point to roll back to (see [`Diagnostics::rollback`]).
    pub fn mark(&self) -> usize {
        self.list.len()
    }

    /// Forgets every diagnostic pushed since `mark`, so that pushing it again
    /// later is not taken for a duplicate.
    pub fn rollback(&mut self, mark: usize) {
        for d in self.list.drain(mark..) {
            self.seen.remove(&d);
        }
    }

    /// The diagnostics so far, in the order they were pushed.
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.list.iter()
    }

    /// How many errors were pushed since `mark` (see [`Diagnostics::mark`]).
    pub fn error_count_since(&self, mark: usize) -> usize {
        self.list[mark..].iter().filter(|d| d.is_error()).count()
    }

    /// Turns the errors pushed since `mark` that `which` selects into
    /// warnings, each with `note`.
    pub fn downgrade_since(
        &mut self,
        mark: usize,
        which: impl Fn(&Diagnostic) -> bool,
        note: &str,
    ) {
        for d in &mut self.list[mark..] {
            if d.is_error() && which(d) {
                self.seen.remove(d);
                d.severity = Severity::Warning;
                d.notes.push(note.to_string());
                self.seen.insert(d.clone());
            }
        }
    }

    /// Whether any error has been pushed.
    pub fn has_errors(&self) -> bool {
        self.list.iter().any(Diagnostic::is_error)
    }

    /// How many errors have been pushed (kept: duplicates and those past the
    /// limit do not count).
    pub fn error_count(&self) -> usize {
        self.list.iter().filter(|d| d.is_error()).count()
    }

    /// The diagnostics in source order (errors before warnings at the same place).
    pub fn into_sorted(self) -> Vec<Diagnostic> {
        let mut list = self.list;
        list.sort_by(|a, b| {
            let key = |d: &Diagnostic| {
                (
                    d.span.as_ref().map_or(0, |s| s.start),
                    std::cmp::Reverse(d.severity),
                )
            };
            key(a).cmp(&key(b)).then_with(|| a.message.cmp(&b.message))
        });
        list
    }
}

/// Line starts of a source text, for turning byte offsets into positions.
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    /// The line starts of `source` (each byte after a `\n`).
    pub fn new(source: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(source.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    /// 1-based line and character column of byte `offset`.
    pub fn line_col(&self, source: &str, offset: usize) -> (usize, usize) {
        let offset = offset.min(source.len());
        let line = self
            .starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        let start = self.starts[line];
        let col = source
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count());
        (line + 1, col + 1)
    }
}

/// Clamps a span to the source and to character boundaries so the renderer
/// can never be handed an invalid range.
fn clamp(span: &Span, source: &str) -> Span {
    let fix = |mut i: usize| {
        i = i.min(source.len());
        while !source.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let start = fix(span.start);
    let end = fix(span.end.max(span.start));
    start..end
}

/// Renders diagnostics as text (`color` adds ANSI colours).
pub fn render(diags: &[Diagnostic], file_name: &str, source: &str, color: bool) -> String {
    let file = SimpleFile::new(file_name, source);
    let config = term::Config::default();
    let mut buf = if color {
        Buffer::ansi()
    } else {
        Buffer::no_color()
    };
    for d in diags {
        let mut labels = Vec::new();
        if let Some(span) = &d.span {
            labels.push(cs::Label::primary((), clamp(span, source)).with_message(d.label.clone()));
        }
        for (span, text) in &d.secondary {
            labels.push(cs::Label::secondary((), clamp(span, source)).with_message(text.clone()));
        }
        let c = match d.severity {
            Severity::Error => cs::Diagnostic::error(),
            Severity::Warning => cs::Diagnostic::warning(),
        }
        .with_message(d.message.clone())
        .with_labels(labels)
        .with_notes(d.notes.clone());
        if term::emit(&mut buf, &config, &file, &c).is_err() {
            // Cannot happen with a clamped span on a single in-memory file; fall back to one line.
            let (line, col) = d.line_col(source).unwrap_or((1, 1));
            buf_push(
                &mut buf,
                &format!(
                    "{}: {}:{}:{}: {}\n",
                    d.severity.as_str(),
                    file_name,
                    line,
                    col,
                    d.message
                ),
            );
        }
    }
    String::from_utf8_lossy(buf.as_slice()).into_owned()
}

fn buf_push(buf: &mut Buffer, s: &str) {
    use std::io::Write;
    let _ = buf.write_all(s.as_bytes());
}

/// Whether standard error is a terminal that wants colour (for the CLI's default).
pub fn stderr_wants_color() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters() {
        let src = "ab\ncé d\n";
        let idx = LineIndex::new(src);
        assert_eq!(idx.line_col(src, 0), (1, 1));
        assert_eq!(idx.line_col(src, 3), (2, 1));
        assert_eq!(idx.line_col(src, 7), (2, 4));
        assert_eq!(idx.line_col(src, 100), (3, 1));
    }

    #[test]
    fn render_is_robust_to_bad_spans() {
        let src = "né";
        let d = Diagnostic::error(2..99, "boom").with_label("here");
        let out = render(&[d], "f.snet", src, false);
        assert!(out.contains("error: boom"), "{out}");
        assert!(out.contains("f.snet:1:2"), "{out}");
    }
}
