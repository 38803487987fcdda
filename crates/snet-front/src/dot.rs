//! Graphviz output of a property graph.
//!
//! Boxes, filters and synchrocells are nodes (a filter's label is the filter
//! itself); combinators are labelled clusters (`subgraph cluster_*`), serial
//! composition is an edge. A named net used several times is drawn in full
//! once; later uses are a single `net NAME` node, as they share the template.

use std::collections::HashSet;
use std::fmt::Write;

use snet_core::{
    BinOp, ExprTree, FilterDef, Func, Graph, NodeId, NodeKind, OutItem, Pattern, TagValue, UnOp,
};

use crate::hir::fmt_variant;

/// `g` as a Graphviz `digraph` in DOT text, from its entry node (nodes not
/// reachable from there are not drawn).
pub fn to_dot(g: &Graph) -> String {
    to_dot_decorated(g, &|_, _| None)
}

/// What a drawing adds to a component (`snet graph --profile`): a fill
/// colour and lines under its label.
#[derive(Clone, Debug, Default)]
pub struct Decor {
    /// A Graphviz colour (`#rrggbb`).
    pub fill: Option<String>,
    /// Lines added to the label.
    pub note: String,
}

/// What `decor` says about a node of the graph.
pub type Decorate<'a> = &'a (dyn Fn(&Graph, NodeId) -> Option<Decor> + Sync);

/// [`to_dot`], each component (box, filter, synchrocell, combinator)
/// decorated as `decor` says.
pub fn to_dot_decorated(g: &Graph, decor: Decorate) -> String {
    let mut d = Dot {
        g,
        out: String::new(),
        drawn: HashSet::new(),
        next: 0,
        decor,
    };
    d.out
        .push_str("digraph snet {\n  rankdir=LR;\n  node [fontname=\"monospace\", fontsize=10];\n");
    d.out
        .push_str("  input [shape=point]; output [shape=point];\n");
    let (i, o) = d.node(g.entry, 1);
    let _ = writeln!(d.out, "  input -> {i};\n  {o} -> output;");
    d.out.push_str("}\n");
    d.out
}

/// Why `dot -Tsvg` gave no SVG ([`to_svg`]).
#[derive(Debug)]
pub enum SvgError {
    /// Graphviz's `dot` could not be started.
    Start(std::io::Error),
    /// Writing the DOT text to it failed.
    Write(std::io::Error),
    /// Waiting for it failed.
    Wait(std::io::Error),
    /// It failed; its messages.
    Failed(String),
}

impl std::fmt::Display for SvgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SvgError::Start(e) => write!(f, "cannot run Graphviz `dot` ({e}); install Graphviz for SVG output (Debian: `apt-get install graphviz`; scripts/setup.sh does it), or leave out --svg to get DOT text"),
            SvgError::Write(e) => write!(f, "writing to `dot`: {e}"),
            SvgError::Wait(e) => write!(f, "waiting for `dot`: {e}"),
            SvgError::Failed(msg) => write!(f, "`dot` failed: {msg}"),
        }
    }
}

impl std::error::Error for SvgError {}

/// Runs `dot -Tsvg` on a DOT text.
pub fn to_svg(dot_text: &str) -> Result<String, SvgError> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(SvgError::Start)?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(dot_text.as_bytes())
            .map_err(SvgError::Write)?;
    }
    let out = child.wait_with_output().map_err(SvgError::Wait)?;
    if !out.status.success() {
        return Err(SvgError::Failed(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

struct Dot<'g> {
    g: &'g Graph,
    out: String,
    drawn: HashSet<NodeId>,
    next: usize,
    decor: Decorate<'g>,
}

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Dot<'_> {
    fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}{}", self.next)
    }

    fn leaf(&mut self, label: &str, shape: &str, indent: usize) -> (String, String) {
        let id = self.fresh("n");
        let _ = writeln!(
            self.out,
            "{}{id} [shape={shape}, label=\"{}\"];",
            "  ".repeat(indent),
            esc(label)
        );
        (id.clone(), id)
    }

    /// A leaf standing for graph node `node`, decorated.
    fn leaf_of(
        &mut self,
        node: NodeId,
        label: &str,
        shape: &str,
        indent: usize,
    ) -> (String, String) {
        let Some(d) = (self.decor)(self.g, node) else {
            return self.leaf(label, shape, indent);
        };
        let id = self.fresh("n");
        let fill = match &d.fill {
            Some(c) => format!(", style=\"{}filled\", fillcolor=\"{c}\"", style_of(shape)),
            None => String::new(),
        };
        let shape = match d.fill {
            Some(_) => shape.split(',').next().unwrap_or(shape),
            None => shape,
        };
        let _ = writeln!(
            self.out,
            "{}{id} [shape={shape}{fill}, label=\"{}\"];",
            "  ".repeat(indent),
            esc(&format!("{label}\n{}", d.note))
        );
        (id.clone(), id)
    }

    /// A combinator's cluster label, decorated.
    fn cluster_label(&self, node: NodeId, label: &str) -> (String, Option<String>) {
        match (self.decor)(self.g, node) {
            Some(d) => (format!("{label}\n{}", d.note), d.fill),
            None => (label.to_string(), None),
        }
    }

    fn cluster(
        &mut self,
        label: &str,
        indent: usize,
        f: impl FnOnce(&mut Self, usize) -> (String, String),
    ) -> (String, String) {
        self.cluster_of(None, label, indent, f)
    }

    /// A cluster for graph node `node` (decorated: its label gets the
    /// note, its frame the colour).
    fn cluster_of(
        &mut self,
        node: Option<NodeId>,
        label: &str,
        indent: usize,
        f: impl FnOnce(&mut Self, usize) -> (String, String),
    ) -> (String, String) {
        let (label, colour) = match node {
            Some(n) => self.cluster_label(n, label),
            None => (label.to_string(), None),
        };
        let id = self.fresh("cluster_");
        let pad = "  ".repeat(indent);
        let frame = match colour {
            Some(c) => format!(" color=\"{c}\"; penwidth=3;"),
            None => String::new(),
        };
        let _ = writeln!(
            self.out,
            "{pad}subgraph {id} {{\n{pad}  label=\"{}\"; style=rounded;{frame}",
            esc(&label)
        );
        let r = f(self, indent + 1);
        let _ = writeln!(self.out, "{pad}}}");
        r
    }

    fn edge(&mut self, from: &str, to: &str, attrs: &str, indent: usize) {
        let _ = writeln!(self.out, "{}{from} -> {to}{attrs};", "  ".repeat(indent));
    }

    /// Draws node `id`; returns the DOT nodes where records enter and leave it.
    fn node(&mut self, id: NodeId, indent: usize) -> (String, String) {
        let g = self.g;
        let node = g.node(id);
        match &node.kind {
            NodeKind::Box(b) => {
                let b = g.box_def(*b);
                let ins: Vec<String> = b.inputs.iter().map(|l| l.to_string()).collect();
                let outs: Vec<String> = b
                    .outputs
                    .iter()
                    .map(|o| {
                        format!(
                            "({})",
                            o.iter()
                                .map(|l| l.to_string())
                                .collect::<Vec<_>>()
                                .join(",")
                        )
                    })
                    .collect();
                let inline = match &b.code {
                    Some(c) => format!("\n<<< {} | ... >>>", c.language),
                    None => String::new(),
                };
                let label = format!(
                    "box {}\n({}) -> {}{inline}",
                    b.name,
                    ins.join(","),
                    outs.join(" | ")
                );
                self.leaf_of(id, &label, "box", indent)
            }
            NodeKind::Filter(f) => self.leaf_of(id, &fmt_filter(f), "box, style=rounded", indent),
            NodeKind::Synchrocell(s) => self.leaf_of(
                id,
                &format!("[| {} |]", fmt_patterns(&s.patterns)),
                "box, style=\"rounded,bold\"",
                indent,
            ),
            NodeKind::Serial(a, b) => {
                let (ai, ao) = self.node(*a, indent);
                let (bi, bo) = self.node(*b, indent);
                self.edge(&ao, &bi, "", indent);
                (ai, bo)
            }
            NodeKind::Parallel { branches, det } => {
                let label = if *det { "parallel ||" } else { "parallel |" };
                let branches = branches.clone();
                self.cluster_of(Some(id), label, indent, |d, ind| {
                    let i = d.fresh("p");
                    let o = d.fresh("p");
                    let pad = "  ".repeat(ind);
                    let _ = writeln!(d.out, "{pad}{i} [shape=point]; {o} [shape=point];");
                    for b in branches {
                        let (bi, bo) = d.node(b, ind);
                        d.edge(&i, &bi, "", ind);
                        d.edge(&bo, &o, "", ind);
                    }
                    (i, o)
                })
            }
            NodeKind::Star { body, exits, det } => {
                let label = format!("{} {}", if *det { "**" } else { "*" }, fmt_patterns(exits));
                let body = *body;
                self.cluster_of(Some(id), &label, indent, |d, ind| {
                    let (i, o) = d.node(body, ind);
                    d.edge(&o, &i, " [style=dashed, label=\"next replica\"]", ind);
                    (i, o)
                })
            }
            NodeKind::Split { body, tag, det } => {
                let label = format!("{} {tag}", if *det { "!!" } else { "!" });
                let body = *body;
                self.cluster_of(Some(id), &label, indent, |d, ind| d.node(body, ind))
            }
            NodeKind::Feedback { body, back } => {
                let label = format!("\\ {}", fmt_patterns(back));
                let body = *body;
                self.cluster_of(Some(id), &label, indent, |d, ind| {
                    let (i, o) = d.node(body, ind);
                    d.edge(&o, &i, " [style=dashed, label=\"back\"]", ind);
                    (i, o)
                })
            }
            NodeKind::Place { body, node } => {
                let body = *body;
                self.cluster_of(Some(id), &format!("@ {node}"), indent, |d, ind| {
                    d.node(body, ind)
                })
            }
            NodeKind::DynPlace { body, tag, det, .. } => {
                let label = format!("{} {tag}", if *det { "!!@" } else { "!@" });
                let body = *body;
                self.cluster_of(Some(id), &label, indent, |d, ind| d.node(body, ind))
            }
            NodeKind::Net { name, body } => {
                if !self.drawn.insert(id) {
                    return self.leaf(&format!("net {name}"), "component", indent);
                }
                let body = *body;
                self.cluster(&format!("net {name}"), indent, |d, ind| d.node(body, ind))
            }
            NodeKind::Observe { body, observer } => {
                let label = format!("observer {} {}", observer.oid, observer.point.as_str());
                let (oi, oo) = self.leaf(&label, "note", indent);
                let (bi, bo) = self.node(*body, indent);
                match observer.point {
                    snet_core::ObservePoint::Before => {
                        self.edge(&oo, &bi, "", indent);
                        (oi, bo)
                    }
                    snet_core::ObservePoint::After => {
                        self.edge(&bo, &oi, "", indent);
                        (bi, oo)
                    }
                }
            }
        }
    }
}

/// The style words of a leaf's shape (`box, style=rounded` → `rounded,`).
fn style_of(shape: &str) -> String {
    match shape.split_once("style=") {
        Some((_, st)) => format!("{},", st.trim_matches('"')),
        None => String::new(),
    }
}

fn fmt_patterns(pats: &[Pattern]) -> String {
    pats.iter()
        .map(|p| match &p.guard {
            Some(g) => format!("{} if <{}>", fmt_variant(&p.variant), fmt_expr(g.tree())),
            None => fmt_variant(&p.variant),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `[{a,<t>} -> {b=a, <t=t+1>}]` (or `[]`).
pub fn fmt_filter(f: &FilterDef) -> String {
    let is_identity = f.pattern.is_empty()
        && f.arms.len() == 1
        && f.arms[0].guard.is_none()
        && f.arms[0].outputs.len() == 1
        && f.arms[0].outputs[0].items.is_empty();
    if is_identity {
        return "[]".to_string();
    }
    let mut s = format!("[{} -> ", fmt_variant(&f.pattern));
    for arm in &f.arms {
        let outs: Vec<String> = arm
            .outputs
            .iter()
            .map(|o| {
                let items: Vec<String> = o
                    .items
                    .iter()
                    .map(|i| match i {
                        OutItem::Field { dst, src } if dst == src => dst.to_string(),
                        OutItem::Field { dst, src } => format!("{dst}={src}"),
                        OutItem::Tag {
                            dst,
                            value: TagValue::Copy,
                        } => dst.to_string(),
                        OutItem::Tag {
                            dst,
                            value: TagValue::Expr(e),
                        } => {
                            let text = dst.to_string();
                            format!("{}={}>", &text[..text.len() - 1], fmt_expr(e.tree()))
                        }
                    })
                    .collect();
                format!("{{{}}}", items.join(", "))
            })
            .collect();
        match &arm.guard {
            Some(g) => {
                let _ = write!(
                    s,
                    "if <{}> then {} else ",
                    fmt_expr(g.tree()),
                    outs.join("; ")
                );
            }
            None => s.push_str(&outs.join("; ")),
        }
    }
    s.push(']');
    s
}

/// A tag expression in source syntax (sub-expressions parenthesised).
pub fn fmt_expr(e: &ExprTree) -> String {
    fn sub(e: &ExprTree) -> String {
        match e {
            ExprTree::Binary(..) | ExprTree::Cond(..) => format!("({})", fmt_expr(e)),
            _ => fmt_expr(e),
        }
    }
    match e {
        ExprTree::Int(v) => v.to_string(),
        ExprTree::Label(l) => l.name().to_string(),
        ExprTree::Unary(op, a) => format!("{}{}", if *op == UnOp::Neg { "-" } else { "!" }, sub(a)),
        ExprTree::Binary(op, a, b) => {
            let o = match op {
                BinOp::Add => "+",
                BinOp::Sub => "-",
                BinOp::Mul => "*",
                BinOp::Div => "/",
                BinOp::Mod => "%",
                BinOp::Eq => "==",
                BinOp::Ne => "!=",
                BinOp::Lt => "<",
                BinOp::Le => "<=",
                BinOp::Gt => ">",
                BinOp::Ge => ">=",
                BinOp::And => "&&",
                BinOp::Or => "||",
            };
            format!("{} {o} {}", sub(a), sub(b))
        }
        ExprTree::Cond(c, a, b) => format!("{} ? {} : {}", sub(c), sub(a), sub(b)),
        ExprTree::Call(f, args) => {
            let name = match f {
                Func::Abs => "abs",
                Func::Min => "min",
                Func::Max => "max",
            };
            format!(
                "{name}({})",
                args.iter().map(fmt_expr).collect::<Vec<_>>().join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svg_errors_read_as_before() {
        let e = SvgError::Start(std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!(e.to_string(), "cannot run Graphviz `dot` (entity not found); install Graphviz for SVG output (Debian: `apt-get install graphviz`; scripts/setup.sh does it), or leave out --svg to get DOT text");
        assert_eq!(
            SvgError::Failed("Error: syntax".into()).to_string(),
            "`dot` failed: Error: syntax"
        );
        // A DOT text `dot` rejects, where Graphviz is installed.
        if let Err(SvgError::Failed(msg)) = to_svg("digraph {") {
            assert!(!msg.is_empty());
        }
    }
}
