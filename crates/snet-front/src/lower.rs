//! Lowering: the checked program to [`snet_core::Graph`].
//!
//! One node per construct, each with its source location and the input and
//! output types from the checker. A named net becomes one
//! [`NodeKind::Net`] boundary node, lowered once and *shared* by every use
//! (the engine instantiates each use separately). Serial chains
//! `A .. B .. C ..` become a balanced tree of binary [`NodeKind::Serial`]
//! nodes, so that a long pipeline is not a deep tree. Only what the entry
//! net reaches is lowered.

use std::sync::Arc;

use snet_core::{BoxCode, BoxDef, BoxId, Graph, Loc, Node, NodeId, NodeKind, Observer, Rank, Type};

use crate::check::Checked;
use crate::diag::{Diagnostic, Diagnostics, LineIndex, Span};
use crate::hir::*;

pub fn lower(
    hir: &Hir,
    checked: &Checked,
    entry: NetIdx,
    file: &str,
    src: &str,
    diags: &mut Diagnostics,
) -> Graph {
    let mut l = Lower {
        hir,
        checked,
        src,
        file: Arc::from(file),
        lines: LineIndex::new(src),
        graph: Graph {
            nodes: Vec::new(),
            boxes: Vec::new(),
            entry: NodeId(0),
        },
        nets: vec![None; hir.nets.len()],
        boxes: vec![None; hir.boxes.len()],
        diags,
    };
    let entry = l.net(entry);
    l.graph.entry = entry;
    l.graph
}

struct Lower<'a, 'd> {
    hir: &'a Hir,
    checked: &'a Checked,
    src: &'a str,
    file: Arc<str>,
    lines: LineIndex,
    graph: Graph,
    nets: Vec<Option<NodeId>>,
    boxes: Vec<Option<BoxId>>,
    diags: &'d mut Diagnostics,
}

impl Lower<'_, '_> {
    fn loc(&self, span: &Span) -> Loc {
        let (line, col) = self.lines.line_col(self.src, span.start);
        Loc {
            file: self.file.clone(),
            line: line as u32,
            col: col as u32,
        }
    }

    fn add(&mut self, kind: NodeKind, at: &Span, h: HId) -> NodeId {
        let node = Node {
            kind,
            loc: self.loc(at),
            input: Type(self.checked.inputs[h].clone()),
            output: Type(self.checked.outputs[h].clone()),
        };
        self.graph.add(node)
    }

    fn net(&mut self, n: NetIdx) -> NodeId {
        if let Some(id) = self.nets[n] {
            return id;
        }
        let net = &self.hir.nets[n];
        let body = match net.body {
            Some(b) => self.expr(b),
            None => {
                self.diags.push(
                    Diagnostic::error(
                        net.name_span.clone(),
                        format!("net `{}` has no body, so it cannot run", net.name),
                    )
                    .with_label("declared with a signature only")
                    .with_note("add `connect EXPRESSION` to run a program that uses it"),
                );
                self.graph.add(Node {
                    kind: NodeKind::Parallel {
                        branches: Vec::new(),
                        det: false,
                    },
                    loc: self.loc(&net.name_span),
                    input: Type::default(),
                    output: Type::default(),
                })
            }
        };
        let (input, output) = &self.checked.nets[n];
        let node = Node {
            kind: NodeKind::Net {
                name: net.qual.clone(),
                body,
            },
            loc: self.loc(&net.name_span),
            input: Type(input.clone()),
            output: Type(output.clone()),
        };
        let id = self.graph.add(node);
        let id = self.observe(id, &net.observers, &net.name);
        self.nets[n] = Some(id);
        id
    }

    /// Wraps `body` in the observers metadata asks for (before inside, after outside).
    fn observe(
        &mut self,
        body: NodeId,
        specs: &[crate::metadata::ObserverSpec],
        position: &str,
    ) -> NodeId {
        let mut id = body;
        for spec in specs {
            for &point in &spec.points {
                let inner = self.graph.node(id);
                let (input, output) = (inner.input.clone(), inner.output.clone());
                let loc = self.loc(&spec.span);
                let observer = Arc::new(Observer {
                    oid: spec.oid,
                    position: position.to_string(),
                    point,
                    data: spec.data,
                    code: spec.code.clone(),
                    interactive: spec.interactive,
                    dest: spec.dest.clone(),
                    loc: loc.clone(),
                });
                id = self.graph.add(Node {
                    kind: NodeKind::Observe { body: id, observer },
                    loc,
                    input,
                    output,
                });
            }
        }
        id
    }

    fn box_id(&mut self, b: BoxIdx) -> BoxId {
        if let Some(id) = self.boxes[b] {
            return id;
        }
        let info = &self.hir.boxes[b];
        let code = info.code.as_ref().map(|c| BoxCode {
            language: c.language.name.clone(),
            code: c.code.clone(),
            language_span: c.language.span.clone(),
            span: c.code_span.clone(),
            loc: self.loc(&c.code_span),
        });
        self.graph.boxes.push(BoxDef {
            name: info.name.clone(),
            inputs: info.inputs.clone(),
            init: info.init,
            outputs: info.outputs.clone(),
            interface: info.interface.clone(),
            code,
            loc: self.loc(&info.span),
        });
        let id = (self.graph.boxes.len() - 1) as BoxId;
        self.boxes[b] = Some(id);
        id
    }

    fn expr(&mut self, h: HId) -> NodeId {
        let node = self.hir.node(h);
        let span = node.span.clone();
        let op = node.op.clone();
        let kind = match &node.kind {
            HKind::Net(n) => return self.net(*n),
            HKind::Serial(parts, ops) => return self.serial(h, 0, parts, ops),
            HKind::Box(b) => NodeKind::Box(self.box_id(*b)),
            HKind::Filter { def, .. } => NodeKind::Filter(def.clone()),
            HKind::Synchrocell { def, .. } => NodeKind::Synchrocell(def.clone()),
            HKind::Parallel { branches, det } => {
                let branches = branches.iter().map(|b| self.expr(*b)).collect();
                NodeKind::Parallel {
                    branches,
                    det: *det,
                }
            }
            HKind::Star {
                body, exits, det, ..
            } => NodeKind::Star {
                body: self.expr(*body),
                exits: exits.clone(),
                det: *det,
            },
            HKind::Split { body, tag, det } => NodeKind::Split {
                body: self.expr(*body),
                tag: *tag,
                det: *det,
            },
            HKind::Feedback { body, back, .. } => NodeKind::Feedback {
                body: self.expr(*body),
                back: back.clone(),
            },
            HKind::Place { body, node } => NodeKind::Place {
                body: self.expr(*body),
                node: Rank(*node),
            },
            HKind::DynPlace { body, tag, det } => NodeKind::DynPlace {
                body: self.expr(*body),
                tag: *tag,
                det: *det,
                per_node: Vec::new(),
            },
            // Only reachable if errors were reported, in which case the graph is dropped.
            HKind::Error => NodeKind::Parallel {
                branches: Vec::new(),
                det: false,
            },
        };
        let at = match &node.kind {
            HKind::Star { .. }
            | HKind::Split { .. }
            | HKind::Feedback { .. }
            | HKind::Place { .. }
            | HKind::DynPlace { .. }
            | HKind::Parallel { .. } => op,
            _ => span,
        };
        let id = self.add(kind, &at, h);
        match &node.kind {
            HKind::Box(b) if !self.hir.boxes[*b].observers.is_empty() => {
                let info = &self.hir.boxes[*b];
                self.observe(id, &info.observers, &info.name)
            }
            _ => id,
        }
    }

    /// A balanced tree of binary serial nodes over `parts` (`ops[i]` sits
    /// between parts i and i+1), which start at index `first` of chain `h`.
    fn serial(&mut self, h: HId, first: usize, parts: &[HId], ops: &[Span]) -> NodeId {
        if parts.len() == 1 {
            return self.expr(parts[0]);
        }
        let mid = parts.len() / 2;
        let left = self.serial(h, first, &parts[..mid], &ops[..mid - 1]);
        let right = self.serial(h, first + mid, &parts[mid..], &ops[mid..]);
        // A sub-chain needs what the rest of the whole chain needs.
        let input = self.checked.suffixes.get(&h).map_or_else(
            || self.checked.inputs[parts[0]].clone(),
            |s| s[first].clone(),
        );
        let node = Node {
            kind: NodeKind::Serial(left, right),
            loc: self.loc(&ops[mid - 1]),
            input: Type(input),
            output: Type(self.checked.outputs[parts[parts.len() - 1]].clone()),
        };
        self.graph.add(node)
    }
}
