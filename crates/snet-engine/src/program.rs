//! The program: the property graph plus what the engine computes once per
//! template.
//!
//! Every template node that becomes an entity gets a typed [`Template`]
//! here (its definition behind an `Arc`), so that an entity binds its
//! definition when it is created and never looks its node up again while
//! it processes records.

use snet_core::{BoxDef, Graph, Label, NodeId, NodeKind, Pattern, SynchrocellDef, Variant};

use crate::sync::Arc;

/// `A * pats`, `A ** pats`.
pub(crate) struct StarDef {
    pub node: NodeId,
    pub body: NodeId,
    pub exits: Vec<Pattern>,
    pub det: bool,
    /// The synchrocell of a fused repeated synchronisation `[| .. |] * pats`.
    pub fused: Option<Arc<SynchrocellDef>>,
    /// A body of filters only (one, or a serial chain, through net
    /// boundaries): the star runs as one entity
    /// ([`crate::star::FilterStar`]). The filters' template nodes, in order.
    pub filters: Option<Vec<NodeId>>,
}

/// The filters of `body`, left to right, when it is a filter or a serial
/// chain of filters (looking through net boundaries; not through a
/// placement, whose body runs where it is placed).
fn filter_body(graph: &Graph, body: NodeId) -> Option<Vec<NodeId>> {
    fn walk(graph: &Graph, n: NodeId, out: &mut Vec<NodeId>) -> bool {
        match &graph.node(n).kind {
            NodeKind::Filter(_) => {
                out.push(n);
                true
            }
            NodeKind::Net { body, .. } => walk(graph, *body, out),
            NodeKind::Serial(a, b) => walk(graph, *a, out) && walk(graph, *b, out),
            _ => false,
        }
    }
    let mut out = Vec::new();
    walk(graph, body, &mut out).then_some(out)
}

/// `A ! <t>`, `A !! <t>`, `A !@ <t>`, `A !!@ <t>`.
pub(crate) struct SplitDef {
    pub node: NodeId,
    pub body: NodeId,
    pub tag: Label,
    pub det: bool,
    /// Dynamic placement: the tag's value also names the replica's node.
    pub placement: bool,
    /// A dynamic placement of a run that survives a lost node, whose body
    /// places something: the component replica `v` runs, instantiated
    /// here (`snet_core::NodeKind::DynPlace`'s `per_node`); empty
    /// otherwise (the body, on node `v`).
    pub per_node: Vec<NodeId>,
    /// A lone synchrocell body `[| .. |] ! <t>` (not placed): run as one
    /// entity keeping one cell per tag value ([`crate::split::SplitSynchrocell`]),
    /// with the synchrocell's template node (for messages).
    pub fused: Option<(NodeId, Arc<SynchrocellDef>)>,
}

/// `A | B | ...`, `A || B || ...`.
pub(crate) struct ParallelDef {
    pub node: NodeId,
    pub branches: Vec<NodeId>,
    pub det: bool,
    /// (variant, branch index), best (largest) first.
    pub routes: Vec<(Variant, usize)>,
    /// The branches that hold an initialiser box firing at the start of
    /// the branch's instance; they are instantiated with the parallel
    /// composition, not lazily.
    pub init_branches: Vec<usize>,
    /// Not deterministic and no branch places anything on another node: the
    /// branches can all be created with the composition, which then needs no
    /// state and runs inside its senders' sends (`ParallelEntity`).
    pub eager: bool,
    /// Every branch is filters only (see [`StarDef::filters`]): the
    /// composition runs as one entity ([`crate::parallel::FilterParallel`]).
    pub filters: Option<Vec<Vec<NodeId>>>,
}

/// `A \ pats`.
pub(crate) struct FeedbackDef {
    pub node: NodeId,
    pub body: NodeId,
    pub back: Vec<Pattern>,
}

/// A box's declaration and where it is used.
pub(crate) struct BoxTemplate {
    pub node: NodeId,
    pub def: Arc<BoxDef>,
    /// `def`'s input labels as a variant, built once (matching and flow
    /// inheritance need it on every call).
    pub input: snet_core::Variant,
}

/// What an entity of a template node needs, typed by kind.
pub(crate) enum Template {
    Box(Arc<BoxTemplate>),
    Filter(Arc<crate::filter::Filter>),
    Synchrocell(Arc<SynchrocellDef>),
    Star(Arc<StarDef>),
    Split(Arc<SplitDef>),
    Parallel(Arc<ParallelDef>),
    Feedback(Arc<FeedbackDef>),
    /// Serial compositions, nets and placements: wired at instantiation,
    /// no entity of their own.
    Structure,
}

/// Per-template data computed once.
pub(crate) struct Program {
    pub graph: Arc<Graph>,
    pub templates: Vec<Template>,
    /// Per node: an instance may receive ordering markers of an enclosing
    /// owner (see [`may_see_markers`]).
    pub markers: Vec<bool>,
    /// Per node: a merge whose inputs are linked on a node other than 0
    /// of a run that survives a lost node ([`Graph::merges_to_link`],
    /// `crate::dist::custody::PathLast`).
    pub links: Vec<bool>,
    /// Per node: a deterministic combinator whose output is linked on a
    /// node other than 0 of a run that survives a lost node
    /// ([`Graph::det_outputs_to_link`]).
    pub det_links: Vec<bool>,
}

macro_rules! typed {
    ($name:ident, $variant:ident, $t:ty) => {
        /// The typed template of `node` (a bug in the caller if it has another kind).
        pub(crate) fn $name(&self, node: NodeId) -> &Arc<$t> {
            match &self.templates[node.index()] {
                Template::$variant(t) => t,
                _ => panic!(
                    "node {node} is a {}, not a {}",
                    self.graph.node(node).describe(),
                    stringify!($name)
                ),
            }
        }
    };
}

impl Program {
    pub(crate) fn new(graph: Arc<Graph>) -> Program {
        let starts = starts_initialiser(&graph);
        let templates = graph
            .nodes
            .iter()
            .enumerate()
            .map(|(id, node)| {
                let id = NodeId(id as u32);
                match &node.kind {
                    NodeKind::Box(b) => Template::Box(Arc::new(BoxTemplate {
                        node: id,
                        def: Arc::new(graph.box_def(*b).clone()),
                        input: graph.box_def(*b).input_variant(),
                    })),
                    NodeKind::Filter(f) => {
                        Template::Filter(Arc::new(crate::filter::Filter::new(f.clone())))
                    }
                    NodeKind::Synchrocell(s) => Template::Synchrocell(Arc::new(s.clone())),
                    NodeKind::Parallel { branches, det } => {
                        let mut routes: Vec<(Variant, usize)> = branches
                            .iter()
                            .enumerate()
                            .flat_map(|(i, b)| {
                                graph.node(*b).input.0.iter().map(move |v| (v.clone(), i))
                            })
                            .collect();
                        // Stable: among equal scores the earlier branch wins.
                        routes.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
                        let filters: Option<Vec<Vec<NodeId>>> =
                            branches.iter().map(|b| filter_body(&graph, *b)).collect();
                        Template::Parallel(Arc::new(ParallelDef {
                            filters,
                            node: id,
                            branches: branches.clone(),
                            det: *det,
                            routes,
                            init_branches: branches
                                .iter()
                                .enumerate()
                                .filter(|(_, b)| starts[(**b).index()])
                                .map(|(i, _)| i)
                                .collect(),
                            eager: !*det && !branches.iter().any(|&b| places(&graph, b)),
                        }))
                    }
                    NodeKind::Star { body, exits, det } => {
                        // A lone synchrocell body (through net boundaries, not
                        // through a placement: a placed body runs where it is
                        // placed) is fused with the star.
                        let mut b = *body;
                        while let NodeKind::Net { body, .. } = &graph.node(b).kind {
                            b = *body;
                        }
                        let fused = match &graph.node(b).kind {
                            NodeKind::Synchrocell(s) => Some(Arc::new(s.clone())),
                            _ => None,
                        };
                        Template::Star(Arc::new(StarDef {
                            node: id,
                            body: *body,
                            exits: exits.clone(),
                            det: *det,
                            filters: if fused.is_none() {
                                filter_body(&graph, *body)
                            } else {
                                None
                            },
                            fused,
                        }))
                    }
                    NodeKind::Split { body, tag, det } => {
                        // As for the star: a lone synchrocell body, through
                        // net boundaries but not through a placement.
                        let mut b = *body;
                        while let NodeKind::Net { body, .. } = &graph.node(b).kind {
                            b = *body;
                        }
                        let fused = match &graph.node(b).kind {
                            NodeKind::Synchrocell(s) => Some((b, Arc::new(s.clone()))),
                            _ => None,
                        };
                        Template::Split(Arc::new(SplitDef {
                            node: id,
                            body: *body,
                            tag: *tag,
                            det: *det,
                            placement: false,
                            per_node: Vec::new(),
                            fused,
                        }))
                    }
                    NodeKind::DynPlace {
                        body,
                        tag,
                        det,
                        per_node,
                    } => Template::Split(Arc::new(SplitDef {
                        node: id,
                        body: *body,
                        tag: *tag,
                        det: *det,
                        placement: true,
                        per_node: per_node.clone(),
                        fused: None,
                    })),
                    NodeKind::Feedback { body, back } => {
                        Template::Feedback(Arc::new(FeedbackDef {
                            node: id,
                            body: *body,
                            back: back.clone(),
                        }))
                    }
                    NodeKind::Serial(..)
                    | NodeKind::Place { .. }
                    | NodeKind::Net { .. }
                    | NodeKind::Observe { .. } => Template::Structure,
                }
            })
            .collect();
        let markers = may_see_markers(&graph);
        let links = graph.merges_to_link();
        let det_links = graph.det_outputs_to_link();
        Program {
            graph,
            templates,
            markers,
            links,
            det_links,
        }
    }

    typed!(box_template, Box, BoxTemplate);
    typed!(filter, Filter, crate::filter::Filter);
    typed!(synchrocell, Synchrocell, SynchrocellDef);
    typed!(star, Star, StarDef);
    typed!(split, Split, SplitDef);
    typed!(parallel, Parallel, ParallelDef);
    typed!(feedback, Feedback, FeedbackDef);
}

/// Per node: may an instance of it receive an ordering marker (or a
/// feedback round marker) of an owner around it? Markers travel only from
/// a deterministic dispatcher (`||`, `**`, `!!`, `!!@`) to its collector,
/// and from a feedback router through its loop's body: so exactly the
/// nodes inside the body of a deterministic combinator or of a feedback
/// loop, anywhere the entry network reaches them (a template shared by
/// several uses counts if any use does).
fn may_see_markers(graph: &Graph) -> Vec<bool> {
    let n = graph.nodes.len();
    // Visited without and with markers around.
    let mut seen = [vec![false; n], vec![false; n]];
    if graph.entry.index() >= n {
        // No network (the model checks' scheduler-only nodes).
        return vec![false; n];
    }
    let mut stack = vec![(graph.entry, false)];
    while let Some((node, marked)) = stack.pop() {
        if std::mem::replace(&mut seen[marked as usize][node.index()], true) {
            continue;
        }
        let inner = marked
            || match &graph.node(node).kind {
                NodeKind::Parallel { det, .. }
                | NodeKind::Star { det, .. }
                | NodeKind::Split { det, .. }
                | NodeKind::DynPlace { det, .. } => *det,
                NodeKind::Feedback { .. } => true,
                _ => false,
            };
        stack.extend(graph.children(node).into_iter().map(|c| (c, inner)));
    }
    let [_, marked] = seen;
    marked
}

/// Whether `root` or a component inside it places work on a node.
fn places(graph: &Graph, root: NodeId) -> bool {
    let mut seen = vec![false; graph.nodes.len()];
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if std::mem::replace(&mut seen[n.index()], true) {
            continue;
        }
        if matches!(
            graph.node(n).kind,
            NodeKind::Place { .. } | NodeKind::DynPlace { .. }
        ) {
            return true;
        }
        stack.extend(graph.children(n));
    }
    false
}

/// For each node: does an instance of it hold an initialiser box that fires
/// when the instance is created, i.e. one reachable without entering the
/// body of a star, split or dynamic placement (whose replicas are created
/// by records)? Computed bottom-up over the template DAG without recursion
/// (long serial chains nest deeply). The front end rejects recursive nets;
/// should a graph still hold a cycle, the edge back to an open node counts
/// as `false` instead of looping.
fn starts_initialiser(graph: &Graph) -> Vec<bool> {
    const UNSEEN: u8 = 0;
    const OPEN: u8 = 1;
    const DONE: u8 = 2;
    let replicated = |id: NodeId| {
        matches!(
            graph.node(id).kind,
            NodeKind::Star { .. } | NodeKind::Split { .. } | NodeKind::DynPlace { .. }
        )
    };
    let n = graph.nodes.len();
    let mut state = vec![UNSEEN; n];
    let mut starts = vec![false; n];
    for root in (0..n as u32).map(NodeId) {
        // (node, children already pushed)
        let mut stack = vec![(root, false)];
        while let Some((id, expanded)) = stack.pop() {
            if expanded {
                starts[id.index()] = match &graph.node(id).kind {
                    NodeKind::Box(b) => graph.box_def(*b).is_init(),
                    _ if replicated(id) => false,
                    _ => graph.children(id).iter().any(|c| starts[(*c).index()]),
                };
                state[id.index()] = DONE;
                continue;
            }
            if state[id.index()] != UNSEEN {
                continue;
            }
            state[id.index()] = OPEN;
            stack.push((id, true));
            if !replicated(id) {
                let children = graph.children(id);
                stack.extend(
                    children
                        .iter()
                        .filter(|c| state[(**c).index()] == UNSEEN)
                        .map(|c| (*c, false)),
                );
            }
        }
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;
    use snet_core::{BoxDef, Loc, Node, Type};
    use snet_core::{Graph, NodeKind, Rank};

    fn node(g: &mut Graph, kind: NodeKind) -> NodeId {
        let loc = Loc::start_of("t.snet");
        g.add(Node {
            kind,
            loc,
            input: Type::default(),
            output: Type::default(),
        })
    }

    /// Markers reach exactly what lies inside a deterministic combinator
    /// or a feedback loop; a template shared by a marked and an unmarked
    /// use counts as marked.
    #[test]
    fn markers_reach_bodies_of_deterministic_combinators_and_loops() {
        let mut g = Graph {
            nodes: vec![],
            boxes: vec![],
            entry: NodeId(0),
        };
        let filter = |g: &mut Graph| {
            node(
                g,
                NodeKind::Filter(snet_core::FilterDef {
                    pattern: snet_core::Variant::empty(),
                    arms: vec![snet_core::FilterArm {
                        guard: None,
                        outputs: vec![Default::default()],
                    }],
                }),
            )
        };
        let (a, b, c, d, shared) = (
            filter(&mut g),
            filter(&mut g),
            filter(&mut g),
            filter(&mut g),
            filter(&mut g),
        );
        let inner = node(
            &mut g,
            NodeKind::Feedback {
                body: c,
                back: vec![],
            },
        );
        let outer = node(
            &mut g,
            NodeKind::Feedback {
                body: inner,
                back: vec![],
            },
        );
        let ndpar = node(
            &mut g,
            NodeKind::Parallel {
                branches: vec![a, shared],
                det: false,
            },
        );
        let dpar = node(
            &mut g,
            NodeKind::Parallel {
                branches: vec![b, shared],
                det: true,
            },
        );
        let dstar = node(
            &mut g,
            NodeKind::Star {
                body: d,
                exits: vec![],
                det: true,
            },
        );
        let s1 = node(&mut g, NodeKind::Serial(ndpar, dpar));
        let s2 = node(&mut g, NodeKind::Serial(outer, dstar));
        let entry = node(&mut g, NodeKind::Serial(s1, s2));
        g.entry = entry;
        let m = may_see_markers(&g);
        let want = [
            (entry, false),
            (s1, false),
            (s2, false),
            (ndpar, false),
            (a, false),
            (dpar, false),
            (b, true),
            (shared, true),
            (outer, false),
            (inner, true),
            (c, true),
            (dstar, false),
            (d, true),
        ];
        for (id, marked) in want {
            assert_eq!(m[id.index()], marked, "node {id}: {:?}", g.node(id).kind);
        }
    }

    #[test]
    fn initialisers_start_with_their_instance_unless_replicated() {
        let loc = Loc::start_of("t.snet");
        let mut g = Graph {
            nodes: vec![],
            boxes: vec![],
            entry: NodeId(0),
        };
        for (name, inputs) in [("init", vec![]), ("work", vec![snet_core::Label::tag("x")])] {
            let def = BoxDef {
                name: name.into(),
                init: inputs.is_empty(),
                inputs,
                outputs: vec![vec![]],
                interface: "C4SNet".into(),
                loc: loc.clone(),
                code: None,
            };
            g.boxes.push(def);
        }
        let init = node(&mut g, NodeKind::Box(0));
        let work = node(&mut g, NodeKind::Box(1));
        let net = node(
            &mut g,
            NodeKind::Net {
                name: "n".into(),
                body: init,
            },
        );
        let placed = node(
            &mut g,
            NodeKind::Place {
                body: net,
                node: Rank::ROOT,
            },
        );
        let par = node(
            &mut g,
            NodeKind::Parallel {
                branches: vec![work, placed],
                det: false,
            },
        );
        let star = node(
            &mut g,
            NodeKind::Star {
                body: par,
                exits: vec![],
                det: false,
            },
        );
        let split = node(
            &mut g,
            NodeKind::Split {
                body: init,
                tag: snet_core::Label::tag("k"),
                det: true,
            },
        );
        let fb = node(
            &mut g,
            NodeKind::Feedback {
                body: par,
                back: vec![],
            },
        );
        let ser = node(&mut g, NodeKind::Serial(star, fb));
        let starts = starts_initialiser(&g);
        let want = [
            (init, true),
            (work, false),
            (net, true),
            (placed, true),
            (par, true),
            (star, false),
            (split, false),
            (fb, true),
            (ser, true),
        ];
        for (id, s) in want {
            assert_eq!(starts[id.index()], s, "node {id}: {:?}", g.node(id).kind);
        }
        let mut g = g;
        g.entry = ser;
        let prog = Program::new(Arc::new(g));
        assert_eq!(prog.parallel(par).init_branches, vec![1]);
    }

    #[test]
    fn a_cycle_does_not_loop() {
        let mut g = Graph {
            nodes: vec![],
            boxes: vec![],
            entry: NodeId(0),
        };
        let a = node(
            &mut g,
            NodeKind::Net {
                name: "a".into(),
                body: NodeId(1),
            },
        );
        let _b = node(
            &mut g,
            NodeKind::Net {
                name: "b".into(),
                body: a,
            },
        );
        assert_eq!(starts_initialiser(&g), vec![false, false]);
    }
}
