//! The property graph: what the front end produces and the engine executes.
//!
//! It is immutable and built once per program. Node templates are addressed
//! by [`NodeId`]; every dynamic replica the engine creates (star stages, split
//! replicas, feedback instances) shares its template. Everything a runtime
//! entity needs is precomputed here: sorted label sets, compiled tag
//! expressions, each node's input type for best-match routing, and a source
//! location for error messages.

use smallvec::SmallVec;
use std::fmt;
use std::sync::Arc;

use crate::expr::Expr;
use crate::label::{Label, LabelKind};

/// A node template of the network graph: its index in [`Graph::nodes`].
/// Not a machine node (a [`Rank`]): the two never mix.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The index in [`Graph::nodes`].
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
/// A machine node of a distributed run: its number, `0..nodes` (what
/// `@ k` names, what MPI calls a rank, what `--nodes N` counts). Not a
/// graph node (a [`NodeId`]): the two are different types so that they
/// cannot be swapped. A count of nodes stays a plain `u32`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rank(pub u32);

impl Rank {
    /// Node 0: the node that reads the input and writes the output.
    pub const ROOT: Rank = Rank(0);

    /// The number as an index (into per-node tables).
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// Every node of a run of `nodes` nodes, in order.
    pub fn all(nodes: u32) -> impl Iterator<Item = Rank> + Clone {
        (0..nodes).map(Rank)
    }
}

impl fmt::Display for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Index of a box declaration in [`Graph::boxes`].
pub type BoxId = u32;

/// A source location, for runtime messages: `file:line:col`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loc {
    /// The source file's name as the user gave it.
    pub file: Arc<str>,
    /// The line, from 1.
    pub line: u32,
    /// The column, from 1, counted in characters.
    pub col: u32,
}

impl Loc {
    /// The first line and column of `file`: where a component made
    /// without a program text (by a tool or a test) is said to be.
    pub fn start_of(file: &str) -> Self {
        Loc {
            file: file.into(),
            line: 1,
            col: 1,
        }
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// A variant: a set of labels, kept sorted and without duplicates.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Variant(SmallVec<[Label; 4]>);

impl Variant {
    /// The variant of `labels` (sorted, duplicates dropped).
    pub fn new(labels: impl IntoIterator<Item = Label>) -> Variant {
        let mut v: SmallVec<[Label; 4]> = labels.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        Variant(v)
    }

    /// The variant with no label (`{}`), which every record matches.
    pub fn empty() -> Variant {
        Variant(SmallVec::new())
    }

    /// The labels in label order (fields, tags, binding tags).
    #[inline]
    pub fn labels(&self) -> &[Label] {
        &self.0
    }

    /// The number of labels.
    #[inline]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the variant is `{}`.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `l` is one of the labels.
    pub fn contains(&self, l: Label) -> bool {
        if self.0.len() <= 8 {
            self.0.contains(&l)
        } else {
            self.0.binary_search(&l).is_ok()
        }
    }

    /// The binding tags, in order.
    pub fn btags(&self) -> impl Iterator<Item = Label> + '_ {
        self.0
            .iter()
            .copied()
            .filter(|l| l.kind() == LabelKind::BTag)
    }

    /// `self` is a subtype of `other` (language.md §1): a superset with the
    /// same binding tags.
    pub fn is_subtype_of(&self, other: &Variant) -> bool {
        other.0.iter().all(|l| self.contains(*l)) && self.btags().all(|b| other.contains(b))
    }

    /// The labels of both.
    pub fn union(&self, other: &Variant) -> Variant {
        Variant::new(self.0.iter().chain(other.0.iter()).copied())
    }
}

/// The one way every message writes a record type or a set of labels:
/// `{a, b, <t>, <#k>}`, fields then tags then binding tags, each kind by
/// name (an order that does not depend on interning), `, ` between them.
impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut labels: SmallVec<[Label; 8]> = self.0.iter().copied().collect();
        labels.sort_by_key(|l| (l.kind(), l.name()));
        f.write_str("{")?;
        for (i, l) in labels.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{l}")?;
        }
        f.write_str("}")
    }
}

/// A type: a non-empty set of variants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Type(pub Vec<Variant>);

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, v) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{v}")?;
        }
        Ok(())
    }
}

/// A variant with an optional guard (star exits, feedback patterns, synchrocell slots).
#[derive(Clone, Debug, PartialEq)]
pub struct Pattern {
    /// The labels a record must carry (it may carry more).
    pub variant: Variant,
    /// A tag expression that must also be non-zero on the record, if any.
    pub guard: Option<Expr>,
}

/// One output item of a filter outspec.
#[derive(Clone, Debug, PartialEq)]
pub enum OutItem {
    /// `f` (src == dst) or `f=g`: the field `dst` gets the value of input field `src`.
    Field {
        /// The output record's field.
        dst: Label,
        /// The input record's field whose value it gets.
        src: Label,
    },
    /// `<t>`, `<t=e>`, `<#b>`, `<#b=e>`: `dst` is a tag or binding tag.
    Tag {
        /// The output record's tag or binding tag.
        dst: Label,
        /// Where its value comes from.
        value: TagValue,
    },
}

/// The value of a tag a filter outputs.
#[derive(Clone, Debug, PartialEq)]
pub enum TagValue {
    /// `<t>`: copy the input's tag of the same label, or 0 when absent.
    Copy,
    /// `<t=e>`: evaluate on the input record.
    Expr(Expr),
}

/// One output record of a filter: `{ item, item, ... }`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct OutSpec {
    /// The record's items in source order; each output label at most once.
    pub items: Vec<OutItem>,
}

/// One arm of a filter's `if <g> then outputs else ...` chain.
#[derive(Clone, Debug, PartialEq)]
pub struct FilterArm {
    /// `None` for the final (unconditional) arm.
    pub guard: Option<Expr>,
    /// May be empty: the filter consumes the record.
    pub outputs: Vec<OutSpec>,
}

/// `[ pattern -> action ]`. The last arm always has no guard.
#[derive(Clone, Debug, PartialEq)]
pub struct FilterDef {
    /// The labels the filter takes from its input (other labels flow
    /// past it to every output record).
    pub pattern: Variant,
    /// The arms in source order; the first whose guard holds makes the
    /// output. Never empty.
    pub arms: Vec<FilterArm>,
}

/// `[| p1 if <g1>, p2, ... |]`.
#[derive(Clone, Debug, PartialEq)]
pub struct SynchrocellDef {
    /// One slot per pattern, in source order: a record is stored in the
    /// first empty slot whose pattern (and guard) it matches; when every
    /// slot is full the cell emits their merge and is the identity after.
    pub patterns: Vec<Pattern>,
}

/// A box declaration: `box name((in...) -> (out...) | (out...))`.
#[derive(Clone, Debug, PartialEq)]
pub struct BoxDef {
    /// The name as declared (the name of the function a language
    /// interface calls, and of the box in messages).
    pub name: String,
    /// Input labels in signature (argument) order.
    pub inputs: Vec<Label>,
    /// No input list at all (`box init(-> (A));`): an initialiser. A box
    /// with an empty input list (`box t(() -> (A));`) is not one: it takes
    /// every record, and all its labels flow past it.
    pub init: bool,
    /// Output variants in signature order (variant k is `outputs[k-1]`), labels in argument order.
    pub outputs: Vec<Vec<Label>>,
    /// Box-language interface from metadata (`C4SNet` by default).
    pub interface: String,
    /// The box's code written inline in the program, if any.
    pub code: Option<BoxCode>,
    /// Where the box is declared.
    pub loc: Loc,
}

/// Box code written in the program: `box f(..) { <<< LANGUAGE | code >>> }`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoxCode {
    /// The language name as written (`C`, `SAC`, ...).
    pub language: String,
    /// The code between `|` and `>>>`, verbatim.
    pub code: String,
    /// Byte range of the language name in the program text.
    pub language_span: std::ops::Range<usize>,
    /// Byte range of `code` in the program text.
    pub span: std::ops::Range<usize>,
    /// Where `code` starts.
    pub loc: Loc,
}

impl BoxDef {
    /// A box declared as `box name((inputs) -> (outputs) | ...)` for the
    /// language `interface`, without code in the program: what a tool or
    /// a test makes without parsing a program.
    pub fn declared(
        name: &str,
        interface: &str,
        inputs: Vec<Label>,
        outputs: Vec<Vec<Label>>,
        loc: Loc,
    ) -> Self {
        BoxDef {
            name: name.into(),
            inputs,
            init: false,
            outputs,
            interface: interface.into(),
            code: None,
            loc,
        }
    }

    /// An initialiser: `box init(-> (A));`, called once at network start.
    pub fn is_init(&self) -> bool {
        self.init
    }

    /// The input labels as a variant (sorted; the record type the box
    /// takes, before flow inheritance adds what passes it by).
    pub fn input_variant(&self) -> Variant {
        Variant::new(self.inputs.iter().copied())
    }
}

/// What a node template is: a component of the language, its operands as
/// [`NodeId`]s of the same graph.
#[derive(Clone, Debug, PartialEq)]
pub enum NodeKind {
    /// A box: calls the declared box of [`Graph::boxes`] per record.
    Box(BoxId),
    /// A filter `[ pattern -> action ]`.
    Filter(FilterDef),
    /// A synchrocell `[| p1, p2, ... |]`.
    Synchrocell(SynchrocellDef),
    /// `A .. B`.
    Serial(NodeId, NodeId),
    /// `A | B | ...` or `A || B || ...`: routing by the branches' [`Node::input`] types.
    Parallel {
        /// The branches in source order.
        branches: Vec<NodeId>,
        /// `||`: the output keeps the order of the input.
        det: bool,
    },
    /// `A * pats` or `A ** pats`.
    Star {
        /// The replicated component.
        body: NodeId,
        /// Records matching one of these (with its guard) leave before
        /// the next replica.
        exits: Vec<Pattern>,
        /// `**`: the output keeps the order of the input.
        det: bool,
    },
    /// `A ! <t>` or `A !! <t>`.
    Split {
        /// The replicated component, one replica per value of `tag`.
        body: NodeId,
        /// The tag whose value picks the replica.
        tag: Label,
        /// `!!`: the output keeps the order of the input.
        det: bool,
    },
    /// `A \ pats`.
    Feedback {
        /// The component, instantiated once.
        body: NodeId,
        /// Outputs of `body` matching one of these go back to its input.
        back: Vec<Pattern>,
    },
    /// `A @ n`.
    Place {
        /// The placed component.
        body: NodeId,
        /// The machine node it runs on.
        node: Rank,
    },
    /// `A !@ <t>`, or `A !!@ <t>` (output in input order) when `det`.
    DynPlace {
        /// The replicated component; the replica for value `v` runs on node `v`.
        body: NodeId,
        /// The tag whose value names the node.
        tag: Label,
        /// `!!@`: the output keeps the order of the input.
        det: bool,
        /// Empty as written. In the graph a run that survives a lost node
        /// executes ([`Graph::placed_for_replay`]), for a body that places
        /// something: the component the replica for value `v` runs, at
        /// index `v` (one per node of the run), instantiated where the
        /// dynamic placement runs (node 0): `body` with `@ v` pushed down
        /// to the parts that place nothing.
        per_node: Vec<NodeId>,
    },
    /// A named net's boundary (transparent at run time; kept for messages and graphs).
    Net {
        /// The net's qualified name (`outer/inner` for a nested net).
        name: String,
        /// The net's body.
        body: NodeId,
    },
    /// An observer (metadata `<observer />` on a box or a net): `body`
    /// runs unchanged, and every record entering it (before) or leaving it
    /// (after) is reported to the observer's destination first. Added by
    /// the front end only where metadata asks for one.
    Observe {
        /// The observed component.
        body: NodeId,
        /// What is reported, where, and at which point.
        observer: Arc<Observer>,
    },
}

/// Where an observer sees records, relative to its component.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ObservePoint {
    /// The records entering the component.
    Before,
    /// The records the component emits.
    After,
}

impl ObservePoint {
    /// `before` or `after`, as in the observer's messages.
    pub fn as_str(self) -> &'static str {
        match self {
            ObservePoint::Before => "before",
            ObservePoint::After => "after",
        }
    }
}

/// How much of each record an observer reports.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ObserveData {
    /// The labels only.
    Labels,
    /// Labels and tag values (the default).
    Tags,
    /// Labels, tag values and field values in their text form.
    AllValues,
}

/// Where an observer's messages go.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ObserveDest {
    /// Standard error (`<observer />` without a file or an address).
    Stderr,
    /// Appended to a file (`<observer_file value="PATH" />`).
    File(String),
    /// Sent over TCP (`<observer_address value="HOST" />`, `<observer_port value="N" />`).
    Tcp {
        /// The listener's host name or address.
        host: String,
        /// The listener's TCP port.
        port: u16,
    },
}

impl fmt::Display for ObserveDest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ObserveDest::Stderr => f.write_str("standard error"),
            ObserveDest::File(p) => write!(f, "file {p}"),
            ObserveDest::Tcp { host, port } => write!(f, "{host}:{port}"),
        }
    }
}

/// One observer of a component, at one point (a `both` observer is two
/// [`NodeKind::Observe`] nodes sharing an `oid`).
#[derive(Clone, Debug, PartialEq)]
pub struct Observer {
    /// The observer's number: the `<observer />` element's rank in the
    /// program text, from 1.
    pub oid: u32,
    /// The observed component's name (`position=` in messages).
    pub position: String,
    /// Whether it reports the records entering or leaving the component.
    pub point: ObservePoint,
    /// How much of each record it reports.
    pub data: ObserveData,
    /// `<observer_code value=".." />`, copied into every message.
    pub code: Option<String>,
    /// Each observed record waits for the listener's `<observer oid="N"/>`.
    pub interactive: bool,
    /// Where the messages go.
    pub dest: ObserveDest,
    /// Where the `<observer />` element is written.
    pub loc: Loc,
}

/// A node template.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The component and its operands.
    pub kind: NodeKind,
    /// Where the construct is written.
    pub loc: Loc,
    /// The input type records of this node may have (after the checker's
    /// inference, as declared for boxes, filters and nets with signatures).
    /// Parallel routing scores branches by these variants.
    pub input: Type,
    /// The output type the checker inferred (informational).
    pub output: Type,
}

impl Node {
    /// A one-word description for messages: "filter", "parallel", ...
    pub fn describe(&self) -> &'static str {
        match &self.kind {
            NodeKind::Box(_) => "box",
            NodeKind::Filter(_) => "filter",
            NodeKind::Synchrocell(_) => "synchrocell",
            NodeKind::Serial(..) => "serial composition",
            NodeKind::Parallel { det: false, .. } => "parallel composition",
            NodeKind::Parallel { det: true, .. } => "deterministic parallel composition",
            NodeKind::Star { det: false, .. } => "serial replication",
            NodeKind::Star { det: true, .. } => "deterministic serial replication",
            NodeKind::Split { det: false, .. } => "parallel replication",
            NodeKind::Split { det: true, .. } => "deterministic parallel replication",
            NodeKind::Feedback { .. } => "feedback",
            NodeKind::Place { .. } => "placement",
            NodeKind::DynPlace { det: false, .. } => "dynamic placement",
            NodeKind::DynPlace { det: true, .. } => "deterministic dynamic placement",
            NodeKind::Net { .. } => "net",
            NodeKind::Observe { .. } => "observer",
        }
    }
}

/// The whole program, ready to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    /// The node templates, addressed by [`NodeId`]; operands refer only to
    /// nodes of this vector.
    pub nodes: Vec<Node>,
    /// The declared boxes, addressed by [`BoxId`].
    pub boxes: Vec<BoxDef>,
    /// The entry network's node.
    pub entry: NodeId,
}

/// A placement combinator as written, and where: see [`Graph::on_one_node`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// `@ 1`, `!@ <node>` or `!!@ <node>`.
    pub what: String,
    /// Where it is written.
    pub loc: Loc,
}

impl Graph {
    /// The network of the one box `def` taking records of type `input`,
    /// placed where the box is declared: what a tool or a test runs
    /// without parsing a program.
    pub fn one_box(def: BoxDef, input: Type) -> Graph {
        let loc = def.loc.clone();
        let mut g = Graph {
            nodes: Vec::new(),
            boxes: vec![def],
            entry: NodeId(0),
        };
        g.entry = g.add(Node {
            kind: NodeKind::Box(0),
            loc,
            input,
            output: Type::default(),
        });
        g
    }

    /// The node template `id` (panics if `id` is not of this graph).
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    /// The box declaration `id` (panics if `id` is not of this graph).
    pub fn box_def(&self, id: BoxId) -> &BoxDef {
        &self.boxes[id as usize]
    }

    /// Adds a node and returns its id (builders: the front end's lowering, tests).
    pub fn add(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        NodeId((self.nodes.len() - 1) as u32)
    }

    /// A copy of the graph in which random components are placed on random
    /// nodes (`A` becomes `A @ k`), for testing that placement changes no
    /// output (`distributed.md` §2). Each node template reachable from the
    /// entry, the entry included, is wrapped with probability `share`; the
    /// choice is a pure function of `seed`.
    pub fn scatter(&self, nodes: u32, seed: u64, share: f64) -> Graph {
        let mut g = self.clone();
        let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            // xorshift64*: small, deterministic, good enough for test choices.
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        let original = g.nodes.len() as u32;
        let mut wrapper: Vec<Option<NodeId>> = vec![None; original as usize];
        for id in (0..original).map(NodeId) {
            let r = (next() >> 11) as f64 / (1u64 << 53) as f64;
            let at = (next() % u64::from(nodes.max(1))) as u32;
            if r < share {
                let body = self.node(id);
                let w = g.add(Node {
                    kind: NodeKind::Place {
                        body: id,
                        node: Rank(at),
                    },
                    loc: body.loc.clone(),
                    input: body.input.clone(),
                    output: body.output.clone(),
                });
                wrapper[id.index()] = Some(w);
            }
        }
        let map = |c: NodeId| wrapper.get(c.index()).copied().flatten().unwrap_or(c);
        for id in 0..original as usize {
            map_children(&mut g.nodes[id].kind, &mut |c| map(c));
        }
        g.entry = map(g.entry);
        g
    }

    /// The graph a one-node run executes, as the original non-distributed
    /// runtime runs a program written for several nodes: every static
    /// placement `A @ k` runs on node 0, and every dynamic placement
    /// `A !@ <t>` / `A !!@ <t>` becomes the split `A ! <t>` / `A !! <t>`
    /// (one replica per tag value, all on node 0; no value is out of range).
    /// `None` if nothing reachable from the entry is placed; otherwise the
    /// new graph and the placement that comes first in the program text
    /// (for the run's one warning).
    pub fn on_one_node(&self) -> Option<(Graph, Placement)> {
        let mut g = self.clone();
        let mut first: Option<Placement> = None;
        let mut seen = vec![false; self.nodes.len()];
        let mut stack = vec![self.entry];
        while let Some(id) = stack.pop() {
            if std::mem::replace(&mut seen[id.index()], true) {
                continue;
            }
            stack.extend(self.children(id));
            let node = &mut g.nodes[id.index()];
            let what = match &node.kind {
                NodeKind::Place { node: at, .. } => format!("@ {at}"),
                NodeKind::DynPlace { tag, det, .. } => {
                    format!("{}@ {tag}", if *det { "!!" } else { "!" })
                }
                _ => continue,
            };
            node.kind = match node.kind.clone() {
                NodeKind::Place { body, .. } => NodeKind::Place {
                    body,
                    node: Rank::ROOT,
                },
                NodeKind::DynPlace { body, tag, det, .. } => NodeKind::Split { body, tag, det },
                k => k,
            };
            let key = |p: &Placement| (p.loc.file.clone(), p.loc.line, p.loc.col);
            let here = Placement {
                what,
                loc: node.loc.clone(),
            };
            if first.as_ref().is_none_or(|f| key(&here) < key(f)) {
                first = Some(here);
            }
        }
        first.map(|f| (g, f))
    }

    /// The graph a run that survives a lost node (issue 40, `--on-node-loss
    /// respawn`) over `nodes` nodes executes: the same program, in which
    /// every record that crosses nodes starts or ends at node 0, whose
    /// custody log keeps what it sends, so replay covers every node.
    ///
    /// * Every static placement on a node other than 0 that *encloses* a
    ///   placement (`@` on any node, or `!@`) is pushed down to the
    ///   largest parts of its body that enclose none. `((A @ 2) .. B) @
    ///   1` runs as `(A @ 2) .. (B @ 1)`, `((A @ 2) | B) @ 1` as `(A @ 2)
    ///   | (B @ 1)`, `((A !@ <n>) .. B) @ 1` as `(A !@ <n>) .. (B @ 1)`;
    ///   the combinators that enclosed the inner placement (serial and
    ///   parallel compositions, stars, splits, feedback loops,
    ///   deterministic ones too, nets, observers) run on node 0 instead,
    ///   and a placement on the outer node itself inside is dropped
    ///   (`((A @ 1) .. B) @ 1` runs as `(A @ 1) .. (B @ 1)`).
    /// * Every dynamic placement whose body places something gets one
    ///   body per node ([`NodeKind::DynPlace`]'s `per_node`): for value
    ///   `v`, the body pushed down the same way as if it were `body @ v`
    ///   (for `v = 0`, the body itself). The split runs on node 0 and
    ///   instantiates that body there when the value's first record
    ///   arrives: `((A @ 2) .. B) !@ <n>` runs the replica of `v` as `(A
    ///   @ 2) .. (B @ v)`. The replica's node is its value when it is
    ///   made, as before; each replica makes its own instances (and
    ///   connections), so cells stay per replica; a `!@` inside stays a
    ///   component of the pushed body, on node 0, and gets its own
    ///   bodies per node if it needs them.
    ///
    /// Placement never changes a program's output, only where its parts
    /// run. Its cost: records between two placed parts pass node 0 (a run
    /// that ends on a loss keeps the direct connection).
    /// New nodes keep the location and types of the construct they come
    /// from (a pushed placement, its outer placement's location). `None`
    /// if no placement encloses another.
    pub fn placed_for_replay(&self, nodes: u32) -> Option<Graph> {
        use std::collections::HashMap;
        let mut g = self.clone();
        let mut lifted = HashMap::new();
        let mut pushed = HashMap::new();
        let entry = g.lift(self.entry, nodes, &mut lifted, &mut pushed);
        (g.nodes.len() != self.nodes.len()).then(|| {
            g.entry = entry;
            g
        })
    }

    /// [`Graph::placed_for_replay`] of the component `id`: its children
    /// first, then, for a placement on a node other than 0 enclosing one,
    /// its body pushed down ([`Graph::push_place`]), and for a dynamic
    /// placement enclosing one, its bodies per node. A component whose
    /// children do not change stays.
    fn lift(
        &mut self,
        id: NodeId,
        nodes: u32,
        lifted: &mut std::collections::HashMap<NodeId, NodeId>,
        pushed: &mut Pushed,
    ) -> NodeId {
        if let Some(&l) = lifted.get(&id) {
            return l;
        }
        let mut kind = self.node(id).kind.clone();
        let mut changed = false;
        map_children(&mut kind, &mut |c| {
            let l = self.lift(c, nodes, lifted, pushed);
            changed |= l != c;
            l
        });
        let out = match kind {
            NodeKind::Place { body, node } if node != Rank::ROOT && self.places_inside(body) => {
                self.push_place(body, node, id, pushed)
            }
            NodeKind::DynPlace {
                body,
                tag,
                det,
                per_node,
            } if per_node.is_empty() && self.places_inside(body) => {
                let per_node = (0..nodes)
                    .map(|v| match Rank(v) {
                        Rank::ROOT => body,
                        v => self.push_place(body, v, id, pushed),
                    })
                    .collect();
                let kind = NodeKind::DynPlace {
                    body,
                    tag,
                    det,
                    per_node,
                };
                self.derived(id, kind)
            }
            kind if changed => self.derived(id, kind),
            _ => id,
        };
        lifted.insert(id, out);
        out
    }

    /// Component `id` placed on node `k` (by the placement `place`, static
    /// or dynamic), pushed down to the largest parts that place nothing
    /// themselves: those get the placement, the combinators above them
    /// stay unplaced, a placement on `k` inside is dropped, one on
    /// another node (or a dynamic one) stays where it is.
    fn push_place(&mut self, id: NodeId, k: Rank, place: NodeId, pushed: &mut Pushed) -> NodeId {
        if let Some(&p) = pushed.get(&(id, place, k)) {
            return p;
        }
        let out = if !self.places_inside(id) {
            let body = self.node(id);
            let node = Node {
                kind: NodeKind::Place { body: id, node: k },
                loc: self.node(place).loc.clone(),
                input: body.input.clone(),
                output: body.output.clone(),
            };
            self.add(node)
        } else {
            match self.node(id).kind.clone() {
                NodeKind::Place { body, node } if node == k => {
                    self.push_place(body, k, place, pushed)
                }
                NodeKind::Place { .. } | NodeKind::DynPlace { .. } => id,
                mut kind => {
                    map_children(&mut kind, &mut |c| self.push_place(c, k, place, pushed));
                    self.derived(id, kind)
                }
            }
        };
        pushed.insert((id, place, k), out);
        out
    }

    /// A new node of kind `kind` with `id`'s location and types.
    fn derived(&mut self, id: NodeId, kind: NodeKind) -> NodeId {
        let from = self.node(id);
        let node = Node {
            kind,
            loc: from.loc.clone(),
            input: from.input.clone(),
            output: from.output.clone(),
        };
        self.add(node)
    }

    /// Whether a placement (`@`, `!@`, `!!@`) is at or under `root`.
    fn places_inside(&self, root: NodeId) -> bool {
        let mut stack = vec![root];
        while let Some(id) = stack.pop() {
            if matches!(
                self.node(id).kind,
                NodeKind::Place { .. } | NodeKind::DynPlace { .. }
            ) {
                return true;
            }
            stack.extend(self.children(id));
        }
        false
    }

    /// What a run over `nodes` nodes that replays the records lost with
    /// node `k` (issue 40) cannot restore if `k` is lost, in the graph
    /// such a run executes ([`Graph::placed_for_replay`]: no static
    /// placement on a node other than 0 encloses another there, and a
    /// dynamic placement that encloses one runs each replica's body on
    /// node 0, its parts that place nothing on the replica's node): the
    /// first construct, in the program's text, that may run on `k` and is
    /// not a function of each record or restored by custody. After the
    /// rewrite no placement is inside a placement that may run on a node
    /// other than 0, so this finds nothing in a run of two or more nodes
    /// today; it stays as the check of that claim (a placement inside a
    /// placement that may run on `k` would be named).
    /// `None`: everything that may run on `k` is a function of each
    /// record (boxes, filters, splits, stars, feedback loops, placed
    /// farms `!@`, deterministic combinators inside or around a placement
    /// on `k`, whose markers custody keeps like records: `snet-engine`'s
    /// `dist::custody`, `CommitOrder`; one with a synchrocell inside links
    /// its output: [`Graph::det_outputs_to_link`]) or a synchrocell whose decisions
    /// custody groups protect, which replay restores; a cell is named by
    /// its instance path (so one in a star's or split's replica, or in a
    /// net used twice, is too; one in a placement inside a feedback loop
    /// on node 0, alone, per tag or a star's fused chain, whose records
    /// can come back after node 0's end-of-stream drain, starts on a
    /// replacement with the records the drain parked). A placement inside
    /// a static placement on another node, or inside a dynamic
    /// placement's replica, is none of these: pushed down, it is two
    /// placements that node 0 connects. A dynamic placement's body counts
    /// as running on every node, `k` and others.
    pub fn replay_boundary(&self, k: Rank, nodes: u32) -> Option<Placement> {
        let mut first: Option<Placement> = None;
        let found = |node: &Node, first: &mut Option<Placement>| {
            let key = |l: &Loc| (l.file.clone(), l.line, l.col);
            if first.as_ref().is_none_or(|f| key(&node.loc) < key(&f.loc)) {
                *first = Some(Placement {
                    what: node.describe().to_string(),
                    loc: node.loc.clone(),
                });
            }
        };
        if let Some(g) = self.placed_for_replay(nodes) {
            return g.replay_boundary(k, nodes);
        }
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![(self.entry, ReplayAt::default())];
        while let Some((id, at)) = stack.pop() {
            // A template shared by several places is visited once per context.
            if !seen.insert((id, at)) {
                continue;
            }
            let node = self.node(id);
            let mut inner = at;
            match &node.kind {
                NodeKind::Place { node: n, .. } => {
                    if *n == k {
                        if at.elsewhere {
                            found(node, &mut first);
                        }
                        inner.on_k = true;
                    } else {
                        // (On node 0 inside a placement on `k`: its
                        // records come back to `k` past the log.)
                        if at.on_k {
                            found(node, &mut first);
                        }
                        inner.elsewhere |= *n != Rank::ROOT;
                    }
                }
                NodeKind::DynPlace { per_node, .. } if !per_node.is_empty() => {
                    // Runs here (node 0 after the rewrite), and so does
                    // each replica's body; the parts that place nothing
                    // are placements on the replica's node.
                    if at.on_k || at.elsewhere {
                        found(node, &mut first);
                    }
                    stack.extend(per_node.iter().map(|&c| (c, at)));
                    continue;
                }
                NodeKind::DynPlace { .. } => {
                    if at.on_k || at.elsewhere {
                        found(node, &mut first);
                    }
                    // Replicas on `k` and on other nodes.
                    inner.on_k = true;
                    inner.elsewhere = true;
                }
                _ if at.on_k => {
                    if let Some(bad) = self.replay_step(id, &inner, &mut stack) {
                        found(self.node(bad), &mut first);
                    }
                    continue;
                }
                _ => {}
            }
            stack.extend(self.children(id).into_iter().map(|c| (c, inner)));
        }
        first
    }

    /// One step of [`Graph::replay_boundary`]'s walk inside a placement on
    /// the lost node (and of [`Graph::replayable`]'s): pushes the
    /// children of `id` to visit, in their context; returns `id` if replay
    /// cannot restore it (see there).
    fn replay_step(
        &self,
        id: NodeId,
        at: &ReplayAt,
        stack: &mut Vec<(NodeId, ReplayAt)>,
    ) -> Option<NodeId> {
        // A synchrocell anywhere in the placement (in a star's or split's
        // replica too) is named by its instance path, the same in every
        // incarnation of the node (`snet-engine`'s `CellId`).
        match &self.node(id).kind {
            // (A cell in a placement inside a feedback loop on node 0,
            // alone, per tag or a star's fused chain, is restored: the
            // drain parks what it stores and a replacement's cell starts
            // with it, `snet-engine`'s `dist::custody`.)
            NodeKind::Place { .. } | NodeKind::DynPlace { .. } => return Some(id),
            // (A deterministic combinator whose inside holds a synchrocell
            // links its output: [`Graph::det_outputs_to_link`].)
            _ => {}
        }
        stack.extend(self.children(id).into_iter().map(|c| (c, *at)));
        None
    }

    /// Whether replaying its records restores what an instance of
    /// `template`, placed on a node other than 0, held: it places
    /// nothing on another node. Boxes, filters, parallel composition,
    /// splits, stars and feedback loops are functions of each record, and
    /// so are deterministic combinators (a replacement's collector starts
    /// afresh with the replayed records, which node 0 sends again in
    /// their order; with a synchrocell inside, their output is linked:
    /// [`Graph::det_outputs_to_link`]); synchrocells'
    /// decisions are protected by custody groups (`snet-engine`'s
    /// `dist::custody`).
    pub fn replayable(&self, template: NodeId) -> bool {
        let mut stack = vec![(
            template,
            ReplayAt {
                on_k: true,
                ..ReplayAt::default()
            },
        )];
        while let Some((id, at)) = stack.pop() {
            if self.replay_step(id, &at, &mut stack).is_some() {
                return false;
            }
        }
        true
    }

    /// The deterministic combinators (`||`, `!!`, `**`, `!!@`) whose
    /// output a node other than 0 of a run that survives a lost node must
    /// *link* (issue 40), by node index: those with a synchrocell inside.
    /// There, each record leaving the combinator (its collector, or a
    /// split of cells' one FIFO entity) commits with or after the record
    /// that left it before (`snet-engine`'s `dist::custody::PathLast`).
    /// A record a cell stores, or one passing a cell whose slot is taken,
    /// keeps its custody group open while the combinator moves on; without
    /// the link, later records would commit first and reach node 0 out of
    /// the combinator's order (even without a loss). With it, commits
    /// follow the combinator's order, so what node 0 has is a prefix of
    /// that order and a replacement, sent the rest in input order, makes
    /// the rest in that order (ARCHITECTURE.md, "Markers and a lost
    /// node"). Elsewhere (no cell inside, or on node 0) nothing is linked.
    pub fn det_outputs_to_link(&self) -> Vec<bool> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, node)| {
                matches!(
                    node.kind,
                    NodeKind::Parallel { det: true, .. }
                        | NodeKind::Split { det: true, .. }
                        | NodeKind::Star { det: true, .. }
                ) && self.holds_cell(NodeId(i as u32))
            })
            .collect()
    }

    /// Whether a synchrocell is under `root`.
    fn holds_cell(&self, root: NodeId) -> bool {
        let mut stack = vec![root];
        while let Some(id) = stack.pop() {
            if matches!(self.node(id).kind, NodeKind::Synchrocell(_)) {
                return true;
            }
            stack.extend(self.children(id));
        }
        false
    }

    /// The merges whose inputs a node other than 0 of a run that
    /// survives a lost node must *link* (issue 40), by node index: every
    /// parallel composition, star, split and feedback loop inside a
    /// placement body that has several synchrocell instances behind a
    /// race ([`Graph::raced_cell`]). There, a record leaving one input of
    /// the merge commits with or after the record that left that input
    /// before it (`snet-engine`'s `dist::custody::PathLast`), so that a
    /// cell's committed decision never shows an order of the race that
    /// another cell's lost decision, decided again by the replay, could
    /// contradict. Elsewhere nothing is linked (a lone cell, a star's
    /// chain of cells, cells on a path that keeps its order are safe
    /// without). A merge outside such a body is `false`; one shared by a
    /// body that needs links and one that does not is linked in both.
    pub fn merges_to_link(&self) -> Vec<bool> {
        let mut link = vec![false; self.nodes.len()];
        for node in &self.nodes {
            let body = match &node.kind {
                NodeKind::Place { body, .. } | NodeKind::DynPlace { body, .. } => *body,
                _ => continue,
            };
            if self.raced_cell(body).is_none() {
                continue;
            }
            let mut stack = vec![body];
            while let Some(id) = stack.pop() {
                if std::mem::replace(&mut link[id.index()], true) {
                    continue;
                }
                stack.extend(self.children(id));
            }
        }
        // Merges only: not the entities the engine fuses into one FIFO
        // (filters in parallel or starred, a star or split of cells).
        for (l, node) in link.iter_mut().zip(&self.nodes) {
            *l &= match &node.kind {
                NodeKind::Parallel {
                    det: false,
                    branches,
                } => !branches.iter().all(|&b| self.filters_only(b)),
                NodeKind::Star {
                    det: false, body, ..
                } => !self.filters_only(*body) && self.fused_cell(*body).is_none(),
                NodeKind::Split {
                    det: false, body, ..
                } => self.fused_cell(*body).is_none(),
                NodeKind::Feedback { .. } => true,
                _ => false,
            };
        }
        link
    }

    /// A synchrocell under `root` (a placement's body on the lost node)
    /// that is one of several cell instances (a cell per tag value, or
    /// two cells of the placement) with a race before it on the node, a
    /// merge of records whose order is not fixed (parallel branches other
    /// than filters, stars, splits and feedback loops). One cell's
    /// committed decision can show the race's order while another's group
    /// is lost with the node, and the replay races again: the other cell
    /// could then take a record that order rules out (found by
    /// `snet-engine`'s group model,
    /// `group_model_two_cells_fed_by_one_race_are_a_known_flaw`). Replay
    /// restores such cells only if the merges before them link their
    /// inputs ([`Graph::merges_to_link`]: the model's `HybridFifo`). A
    /// single cell, or a star's chain of cells, behind a race needs no
    /// links, nor does any number of cells on a path that keeps its order.
    /// Cells are counted by instance: a net used twice makes two, and a
    /// split's replicas make one per tag value (a star's stages are a
    /// chain when its replica keeps order).
    fn raced_cell(&self, root: NodeId) -> Option<NodeId> {
        // Cell occurrences under each node (0, 1 or "2": several), shared
        // templates counted once per use.
        fn count(g: &Graph, id: NodeId, memo: &mut HashMap<NodeId, u8>) -> u8 {
            if let Some(&n) = memo.get(&id) {
                return n;
            }
            let n = match g.node(id).kind {
                NodeKind::Synchrocell(_) => 1,
                _ => g
                    .children(id)
                    .into_iter()
                    .fold(0u8, |n, c| n.saturating_add(count(g, c, memo)).min(2)),
            };
            memo.insert(id, n);
            n
        }
        use std::collections::HashMap;
        let cells = count(self, root, &mut HashMap::new());
        if cells == 0 {
            return None;
        }
        let several = cells > 1;
        let mut first = None;
        self.raced_walk(root, false, false, several, &mut first);
        first
    }

    /// [`Graph::raced_cell`]'s walk: `raced`, a race lies before `id` on
    /// the node; `per_tag`, `id` is a cell fused with a split.
    fn raced_walk(
        &self,
        id: NodeId,
        raced: bool,
        per_tag: bool,
        several: bool,
        first: &mut Option<NodeId>,
    ) {
        match &self.node(id).kind {
            NodeKind::Synchrocell(_) => {
                if raced && (several || per_tag) && first.is_none() {
                    *first = Some(id);
                }
            }
            NodeKind::Serial(a, b) => {
                self.raced_walk(*a, raced, false, several, first);
                self.raced_walk(*b, raced || !self.keeps_order(*a), false, several, first);
            }
            NodeKind::Split { body, .. } => match self.fused_cell(*body) {
                Some(cell) => self.raced_walk(cell, raced, true, several, first),
                // A replica per tag value: as many instances of its cells.
                None => self.raced_walk(*body, raced, false, true, first),
            },
            // The stages' cells are a chain fed by the star's input, as
            // the fused star's are, if the replica keeps the order;
            // otherwise each stage's cells are behind the race of the
            // replica before.
            NodeKind::Star { body, .. } if self.fused_cell(*body).is_none() => {
                self.raced_walk(*body, raced, false, several, first);
                if !self.keeps_order(*body) {
                    self.raced_walk(*body, true, false, true, first);
                }
            }
            // Records come back into the body behind later ones.
            NodeKind::Feedback { body, .. } => self.raced_walk(*body, true, false, several, first),
            _ => {
                for c in self.children(id) {
                    self.raced_walk(c, raced, false, several, first);
                }
            }
        }
    }

    /// Whether the records leaving an instance of `id` on one node keep
    /// the order they came in (per input record: boxes, filters and
    /// synchrocells do, and the engine fuses filter-only stars and
    /// parallel compositions, and a split of cells, into entities that
    /// do); other merges (parallel branches, stars, splits, feedback
    /// loops) are races.
    fn keeps_order(&self, id: NodeId) -> bool {
        match &self.node(id).kind {
            NodeKind::Box(_) | NodeKind::Filter(_) | NodeKind::Synchrocell(_) => true,
            NodeKind::Serial(a, b) => self.keeps_order(*a) && self.keeps_order(*b),
            NodeKind::Net { body, .. } | NodeKind::Observe { body, .. } => self.keeps_order(*body),
            NodeKind::Parallel { branches, .. } => {
                branches.len() == 1 && self.keeps_order(branches[0])
                    || branches.iter().all(|&b| self.filters_only(b))
            }
            NodeKind::Star { body, .. } => self.filters_only(*body),
            NodeKind::Split { body, .. } => self.fused_cell(*body).is_some(),
            _ => false,
        }
    }

    /// The synchrocell a star or split with this `body` runs fused with
    /// (through net boundaries, as `snet-engine`'s program does).
    fn fused_cell(&self, body: NodeId) -> Option<NodeId> {
        let mut b = body;
        while let NodeKind::Net { body, .. } = &self.node(b).kind {
            b = *body;
        }
        matches!(self.node(b).kind, NodeKind::Synchrocell(_)).then_some(b)
    }

    /// Whether `id` is made of filters only.
    fn filters_only(&self, id: NodeId) -> bool {
        match &self.node(id).kind {
            NodeKind::Filter(_) => true,
            NodeKind::Serial(a, b) => self.filters_only(*a) && self.filters_only(*b),
            NodeKind::Net { body, .. } | NodeKind::Observe { body, .. } => self.filters_only(*body),
            NodeKind::Parallel { branches, .. } => branches.iter().all(|&b| self.filters_only(b)),
            _ => false,
        }
    }

    /// Direct children of a node, in order.
    pub fn children(&self, id: NodeId) -> SmallVec<[NodeId; 2]> {
        match &self.node(id).kind {
            NodeKind::Box(_) | NodeKind::Filter(_) | NodeKind::Synchrocell(_) => SmallVec::new(),
            NodeKind::Serial(a, b) => SmallVec::from_slice(&[*a, *b]),
            NodeKind::Parallel { branches, .. } => branches.iter().copied().collect(),
            NodeKind::Star { body, .. }
            | NodeKind::Split { body, .. }
            | NodeKind::Feedback { body, .. }
            | NodeKind::Place { body, .. }
            | NodeKind::DynPlace { body, .. }
            | NodeKind::Net { body, .. }
            | NodeKind::Observe { body, .. } => SmallVec::from_slice(&[*body]),
        }
    }
}

/// Replaces each operand of `kind` by `f` of it, in order.
fn map_children(kind: &mut NodeKind, f: &mut impl FnMut(NodeId) -> NodeId) {
    match kind {
        NodeKind::Box(_) | NodeKind::Filter(_) | NodeKind::Synchrocell(_) => {}
        NodeKind::Serial(a, b) => {
            *a = f(*a);
            *b = f(*b);
        }
        NodeKind::Parallel { branches, .. } => branches.iter_mut().for_each(|b| *b = f(*b)),
        NodeKind::DynPlace { body, per_node, .. } => {
            *body = f(*body);
            per_node.iter_mut().for_each(|b| *b = f(*b));
        }
        NodeKind::Star { body, .. }
        | NodeKind::Split { body, .. }
        | NodeKind::Feedback { body, .. }
        | NodeKind::Place { body, .. }
        | NodeKind::Net { body, .. }
        | NodeKind::Observe { body, .. } => *body = f(*body),
    }
}

/// [`Graph::push_place`]'s results: by component, placement and node.
type Pushed = std::collections::HashMap<(NodeId, NodeId, Rank), NodeId>;

/// Where [`Graph::replay_boundary`]'s walk is.
#[derive(Copy, Clone, Default, PartialEq, Eq, Hash)]
struct ReplayAt {
    /// Inside a placement that may run on the lost node.
    on_k: bool,
    /// Inside a placement on another node than 0 and the lost one.
    elsewhere: bool,
}
