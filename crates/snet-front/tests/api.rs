//! The public API as the CLI uses it: `compile`, `check_command`, `graph_command`.

use std::path::PathBuf;

use snet_core::{NodeKind, Variant};
use snet_front::{check_command, compile, graph_command};

/// The kinds of the nodes of `src`'s graph that `which` marks (a flag
/// per node), sorted.
fn linked_kinds(src: &str, which: fn(&snet_core::Graph) -> Vec<bool>) -> Vec<String> {
    let g = compile("b.snet", src, None).graph.expect("graph");
    let mut kinds: Vec<String> = which(&g)
        .iter()
        .enumerate()
        .filter(|(_, l)| **l)
        .map(|(i, _)| g.node(snet_core::NodeId(i as u32)).describe().to_string())
        .collect();
    kinds.sort();
    kinds
}

fn temp(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("snet-front-api-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const PIPE: &str = "net pipeline ({<X>} | {<Y>} -> {<X>})
{
  net inc connect [{<X>} -> {<X=X+1>}];
}
connect (inc | [{<Y>} -> {<X=Y>}]) .. inc .. inc .. inc;";

#[test]
fn named_nets_share_one_template_and_routing_types_are_input_patterns() {
    let c = compile("p.snet", PIPE, None);
    assert!(c.diagnostics.is_empty(), "{:?}", c.diagnostics);
    let g = c.graph.expect("graph");
    let nets: Vec<_> = g
        .nodes
        .iter()
        .filter(|n| matches!(&n.kind, NodeKind::Net { name, .. } if name == "pipeline/inc"))
        .collect();
    assert_eq!(nets.len(), 1, "one template for four uses");
    let par = g
        .nodes
        .iter()
        .find(|n| matches!(n.kind, NodeKind::Parallel { .. }))
        .expect("parallel");
    let NodeKind::Parallel {
        branches,
        det: false,
    } = &par.kind
    else {
        unreachable!()
    };
    let inputs: Vec<String> = branches
        .iter()
        .map(|b| g.node(*b).input.to_string())
        .collect();
    assert_eq!(inputs, ["{<X>}", "{<Y>}"]);
    assert!(matches!(g.node(g.entry).kind, NodeKind::Net { .. }));
    assert_eq!(g.node(g.entry).loc.line, 1);
    // Serial chains are balanced: depth is logarithmic.
    fn depth(g: &snet_core::Graph, id: snet_core::NodeId) -> usize {
        match &g.node(id).kind {
            NodeKind::Serial(a, b) => 1 + depth(g, *a).max(depth(g, *b)),
            _ => 0,
        }
    }
    let NodeKind::Net { body, .. } = &g.node(g.entry).kind else {
        unreachable!()
    };
    assert_eq!(depth(&g, *body), 2);
}

#[test]
fn boxes_keep_signature_order_and_interface() {
    let src = r#"<metadata><box name="f"><interface value="Py"/></box></metadata>
        box f((b, <a>, <#c>) -> (z, y) | ());
        box g((z, y) -> (q));
        net n connect (f .. (g | [])) !! <#c>;"#;
    let c = compile("b.snet", src, None);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    let g = c.graph.unwrap();
    let f = g.boxes.iter().find(|b| b.name == "f").unwrap();
    assert_eq!(f.interface, "Py");
    assert_eq!(
        f.inputs.iter().map(|l| l.to_string()).collect::<Vec<_>>(),
        ["b", "<a>", "<#c>"]
    );
    assert_eq!(
        f.outputs[0]
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>(),
        ["z", "y"]
    );
    assert_eq!(
        g.boxes.iter().find(|b| b.name == "g").unwrap().interface,
        "C4SNet"
    );
}

#[test]
fn metadata_blocks_in_net_bodies_set_their_boxes_interfaces() {
    let src = r#"<metadata><boxdefault><interface value="TOP"/></boxdefault></metadata>
        box f((a) -> (b));
        net n {
          box f((b) -> (c));
          <metadata><box name="f"><interface value="NF"/></box></metadata>
          net k {
            <metadata><default><interface value="KD"/></default></metadata>
            box g((c) -> (d));
          } connect g;
        } connect f .. k
        <metadata><box name="h"><interface value="H"/></box></metadata>
        box h((d) -> (e));
        net main connect f .. n .. h;"#;
    let c = compile("m.snet", src, None);
    assert!(c.diagnostics.is_empty(), "{:?}", c.diagnostics);
    let g = c.graph.unwrap();
    let mut got: Vec<(String, u32, String)> = g
        .boxes
        .iter()
        .map(|b| (b.name.clone(), b.loc.line, b.interface.clone()))
        .collect();
    got.sort();
    let want = [
        ("f", 2, "TOP"),
        ("f", 4, "NF"),
        ("g", 8, "KD"),
        ("h", 12, "H"),
    ];
    assert_eq!(got, want.map(|(n, l, i)| (n.to_string(), l, i.to_string())));
}

#[test]
fn inline_box_code_reaches_the_graph() {
    let src = "box f((a, <t>) -> (b)) {\n  <<< C | C4SNetOut(hnd, 1, a); >>>\n}\nnet n connect f !!@ <t>;";
    let c = compile("i.snet", src, None);
    assert!(c.diagnostics.is_empty(), "{:?}", c.diagnostics);
    let g = c.graph.unwrap();
    let code = g.boxes[0].code.as_ref().expect("inline code");
    assert_eq!(code.language, "C");
    assert_eq!(code.code, " C4SNetOut(hnd, 1, a); ");
    assert_eq!(&src[code.span.clone()], code.code);
    assert_eq!(&src[code.language_span.clone()], "C");
    assert_eq!((code.loc.line, code.loc.col), (2, 10));
    assert!(g
        .nodes
        .iter()
        .any(|n| matches!(n.kind, NodeKind::DynPlace { det: true, .. })));
    let dot = snet_front::dot::to_dot(&g);
    assert!(
        dot.contains("!!@ <t>") && dot.contains("<<< C | ... >>>"),
        "{dot}"
    );
}

#[test]
fn entry_override_and_unknown_entry() {
    let src = "box f((a) -> (b)); net one connect f; net two connect f .. [{b} -> {c=b}];";
    let c = compile("e.snet", src, Some("one"));
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    assert!(c.nets.iter().any(|n| n.entry && n.name == "one"));
    let c = compile("e.snet", src, Some("three"));
    assert!(c.has_errors() && c.graph.is_none());
    let c = compile("e.snet", src, None);
    let two = c.nets.iter().find(|n| n.entry).unwrap();
    assert_eq!(two.name, "two");
    assert_eq!(
        two.output,
        vec![Variant::new([snet_core::Label::field("c")])]
    );
}

#[test]
fn check_command_text_json_and_exit_codes() {
    let p = temp("ok.snet", PIPE);
    let (out, err, code) = check_command(&p, false, None, false);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("net pipeline : {<X>} | {<Y>} -> {<X>}\n"),
        "{out}"
    );
    assert!(out.contains("net pipeline/inc : {<X>} -> {<X>}\n"), "{out}");
    let (json, _, code) = check_command(&p, true, None, false);
    assert_eq!(code, 0);
    assert!(
        json.starts_with("{\"nets\":[{\"name\":\"pipeline\",\"entry\":true"),
        "{json}"
    );
    assert!(json.contains("\"input\":[[\"<X>\"],[\"<Y>\"]]"), "{json}");

    let bad = temp("bad.snet", "box f((a) -> (b));\nnet n connect f .. f;\n");
    let (_, err, code) = check_command(&bad, false, None, false);
    assert_eq!(code, 1);
    assert!(err.contains("bad.snet:2:17"), "{err}");
    let (json, _, _) = check_command(&bad, true, None, false);
    assert!(
        json.contains("\"severity\":\"error\"") && json.contains("\"line\":2,\"col\":17"),
        "{json}"
    );

    let (_, err, code) = check_command(&PathBuf::from("/nonexistent/x.snet"), false, None, false);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read"));
}

#[test]
fn graph_command_draws_clusters_and_filters() {
    let p = temp(
        "g.snet",
        "box f((a) -> (b)); net n connect (f | [{c} -> {b=c}]) * {b} .. [| {b}, {x} |];",
    );
    let (dot, err, code) = graph_command(&p, None, false);
    assert_eq!(code, 0, "{err}");
    assert!(dot.starts_with("digraph snet {"));
    assert!(dot.contains("subgraph cluster_"));
    assert!(dot.contains("[{c} -> {b=c}]"), "{dot}");
    assert!(dot.contains("[| {b}, {x} |]"), "{dot}");
    assert!(dot.contains("box f"));
    let (_, _, code) = graph_command(&temp("gb.snet", "net n connect nope;"), None, false);
    assert_eq!(code, 1);
}

/// One node runs every placement (`Graph::on_one_node`): `@ k` on node 0,
/// `!@` / `!!@` as the splits `!` / `!!`; the first placement in the text
/// is the one the warning names; only a box without an input list is an
/// initialiser.
#[test]
fn one_node_runs_every_placement_and_empty_input_lists_are_not_initialisers() {
    let src = "net p {
  box t(() -> (<time>));
}
connect (t .. ([{<x>} -> {<y=x>}] !!@ <n>)) | ([{<z>} -> {<z>}] @ 3) | ([{<w>} -> {<w>}] !@ <m>);";
    let c = compile("p.snet", src, None);
    assert!(
        c.diagnostics.iter().all(|d| !d.is_error()),
        "{:?}",
        c.diagnostics
    );
    let g = c.graph.expect("graph");
    let (one, first) = g.on_one_node().expect("the program has placements");
    assert_eq!(first.what, "!!@ <n>");
    assert_eq!((first.loc.line, first.loc.col), (4, 35), "the `!!@`");
    for n in &one.nodes {
        match &n.kind {
            NodeKind::Place { node, .. } => assert_eq!(*node, snet_core::Rank(0)),
            NodeKind::DynPlace { .. } => panic!("a dynamic placement is left"),
            _ => {}
        }
    }
    let splits: Vec<bool> = one
        .nodes
        .iter()
        .filter_map(|n| match n.kind {
            NodeKind::Split { det, .. } => Some(det),
            _ => None,
        })
        .collect();
    assert_eq!(splits.len(), 2);
    assert!(splits.contains(&true) && splits.contains(&false));
    // Nothing placed: nothing to do.
    let plain = compile("q.snet", "net q connect [{<x>} -> {<y=x>}];", None);
    assert!(plain.graph.expect("graph").on_one_node().is_none());
    // `box i( -> ...)` is an initialiser, `box t(() -> ...)` is not.
    let init = compile(
        "r.snet",
        "net r { box i( -> (<x>)); } connect i .. [{<x>} -> {<y=x>}];",
        None,
    );
    let init = init.graph.expect("graph");
    assert!(init.boxes.iter().all(|b| b.is_init()) && !init.boxes.is_empty());
    assert!(g.boxes.iter().all(|b| b.name != "t" || !b.is_init()));
    assert!(g.boxes.iter().any(|b| b.name == "t"));
}

/// What replaying a lost node cannot restore yet (`Graph::replay_boundary`):
/// chains of placements and synchrocells replay cannot name that may run
/// on the lost node, the first in the text; boxes, filters, splits,
/// stars, feedback loops, `!@` farms, synchrocells (alone, or fused with
/// a star or split, or several behind a race whose inputs are then
/// linked: `Graph::merges_to_link`) and deterministic combinators (their
/// ordering markers, inside or around a placement on the node; with a
/// cell inside, their output linked: `Graph::det_outputs_to_link`) are
/// fine.
#[test]
fn replay_boundary_names_the_first_construct_a_lost_node_held() {
    let boundary = |src: &str, k: u32| {
        let c = compile("b.snet", src, None);
        assert!(
            c.diagnostics.iter().all(|d| !d.is_error()),
            "{:?}",
            c.diagnostics
        );
        c.graph
            .expect("graph")
            .replay_boundary(snet_core::Rank(k), 4)
            .map(|p| (p.what, p.loc.line, p.loc.col))
    };
    let stateless = "net s connect ([{<x>} -> {<x>, <y=x>}] @ 1) .. ([{<x>} -> {<x>}] ! <x>) .. ([{<x>} -> {<x>}] !@ <x>);";
    assert_eq!(boundary(stateless, 1), None);
    assert_eq!(boundary(stateless, 2), None);
    // Synchrocells, stars and feedback loops on node 2: restored.
    let cell = "net c connect ([{<x>} -> {<x>}] @ 1) ..\n  ([| {<x>}, {<w>} |] @ 2);";
    assert_eq!(boundary(cell, 1), None);
    assert_eq!(boundary(cell, 2), None);
    let merge = "net m connect ([| {<x>}, {<w>} |] * {<x>, <w>}) @ 2;";
    assert_eq!(boundary(merge, 2), None);
    // Several cells behind a race (a merge whose order is not fixed) on
    // the node: one cell's committed decision may show the race's order
    // while another's is lost and raced again, unless the records of each
    // input of the merge commit in the order they left it: the merge's
    // inputs are linked (`Graph::merges_to_link`), and replay restores
    // them. Behind filters, boxes and cells (order kept), or as the only
    // cell, nothing is linked.
    let linked = |src: &str| linked_kinds(src, snet_core::Graph::merges_to_link);
    let split = "net s connect ([{<x>} -> {<x>}] .. ([| {<x>}, {<w>} |] ! <x>)) @ 2;";
    assert_eq!(boundary(split, 2), None);
    assert_eq!(linked(split), Vec::<String>::new());
    let filters =
        "net f connect (([{<x>} -> {<x>}] | [{<w>} -> {<w>}]) .. ([| {<x>}, {<w>} |] ! <x>)) @ 2;";
    assert_eq!(boundary(filters, 2), None);
    assert_eq!(linked(filters), Vec::<String>::new());
    let one = "net o { box a((<x>) -> (<x>)); box b((<w>) -> (<w>)); }\nconnect ((a | b) .. [| {<x>}, {<w>} |]) @ 2;";
    assert_eq!(boundary(one, 2), None);
    assert_eq!(linked(one), Vec::<String>::new());
    let raced = "net r { box a((<x>) -> (<x>)); box b((<w>) -> (<w>)); }\nconnect ((a | b) .. ([| {<x>}, {<w>} |] ! <x>)) @ 2;";
    assert_eq!(boundary(raced, 2), None);
    assert_eq!(linked(raced), ["parallel composition"]);
    let two = "net t { box a((<x>) -> (<x>)); box b((<w>) -> (<w>)); }\nconnect ((a | b) .. [| {<x>}, {<w>} |] .. [| {<x>}, {<v>} |]) @ 2;";
    assert_eq!(boundary(two, 2), None);
    assert_eq!(linked(two), ["parallel composition"]);
    let boxes = "net b { box a((<x>) -> (<x>)); }\nconnect ((a * {<y>}) .. (a ! <x>) .. ([| {<x>}, {<w>} |] ! <x>)) @ 2;";
    assert_eq!(boundary(boxes, 2), None);
    assert_eq!(
        linked(boxes),
        ["parallel replication", "serial replication"]
    );
    let chained =
        "net c connect (([| {<x>}, {<w>} |] * {<x>, <w>}) .. ([| {<x>}, {<w>} |] ! <x>)) !@ <n>;";
    assert_eq!(boundary(chained, 1), None);
    assert_eq!(linked(chained), Vec::<String>::new(), "fused: no merge");
    let looped_k = "net l connect (([{<x>} -> {<x>}] \\ {<y>}) .. [| {<x>}, {<w>} |] .. [| {<x>}, {<v>} |]) @ 1;";
    assert_eq!(boundary(looped_k, 1), None);
    assert_eq!(linked(looped_k), ["feedback"]);
    let star = "net t connect ([{<x>} -> {<x>}] * {<x>}) !@ <x>;";
    assert_eq!(boundary(star, 3), None);
    let lp = "net l connect ([{<x>} -> {<x>, <y>}] \\ {<x>, <z>}) @ 1;";
    assert_eq!(boundary(lp, 1), None);
    // A cell inside a star's or a split's replica is named by its
    // instance path (the stage, the tag value): restored.
    let deep = "net p connect (([| {<x>}, {<w>} |] .. [{<x>} -> {<x>}]) * {<y>}) @ 1;";
    assert_eq!(boundary(deep, 1), None);
    let per_tag = "net p connect (([{<x>} -> {<x>}] .. [| {<x>}, {<w>} |]) ! <x>) @ 1;";
    assert_eq!(boundary(per_tag, 1), None);
    let both = "net p connect ((([| {<x>}, {<w>} |] * {<x>, <w>}) .. [{<x>} -> {<x>}]) ! <w>) @ 1;";
    assert_eq!(boundary(both, 1), None);
    assert_eq!(linked(deep), Vec::<String>::new(), "a chain of stages");
    assert_eq!(linked(per_tag), Vec::<String>::new());
    // But a replica's cells are several instances: behind a race (before
    // the split, or inside the star's replica before the next stage's
    // cell) the merges are linked.
    let raced_split = "net r { box a((<x>) -> (<x>)); box b((<w>) -> (<w>)); }\nconnect ((a | b) .. (([{<x>} -> {<x>}] .. [| {<x>}, {<w>} |]) ! <x>)) @ 2;";
    assert_eq!(boundary(raced_split, 2), None);
    assert_eq!(
        linked(raced_split),
        ["parallel composition", "parallel replication"]
    );
    let raced_star = "net r { box a((<x>) -> (<x>)); box b((<w>) -> (<w>)); }\nconnect (([| {<x>}, {<w>} |] .. (a | b)) * {<y>}) @ 2;";
    assert_eq!(boundary(raced_star, 2), None);
    assert_eq!(
        linked(raced_star),
        ["parallel composition", "serial replication"]
    );
    // A net used twice is two cell instances (counted as two, named
    // apart): behind a race, linked.
    let twice = "net r { box a((<x>) -> (<x>)); box b((<w>) -> (<w>)); net c connect [| {<x>}, {<w>} |]; }\nconnect ((a | b) .. c .. c) @ 2;";
    assert_eq!(boundary(twice, 2), None);
    assert_eq!(linked(twice), ["parallel composition"]);
    let twice_in_order = "net r { net c connect [| {<x>}, {<w>} |]; } connect (c .. c) @ 2;";
    assert_eq!(boundary(twice_in_order, 2), None);
    assert_eq!(linked(twice_in_order), Vec::<String>::new());
    // A cell in a placement inside a feedback loop on node 0 (its records
    // can come back after the end of the stream's drain, which parks the
    // records cells store): restored, alone, in a split's or a star's
    // replica, a cell per tag, and a cell that is a star's whole replica
    // (fused: a replacement's star starts the positions it creates with
    // their parked records), in a loop or a star on node 0.
    for looped in [
        "net f connect ([| {<x>}, {<w>} |] @ 1) \\ {<z>};",
        "net f connect (([| {<x>}, {<w>} |] ! <x>) @ 1) \\ {<z>};",
        "net f connect ((([| {<x>}, {<w>} |] .. [{<x>} -> {<x>}]) * {<w>}) @ 1) \\ {<z>};",
        "net f connect (([| {<x>}, {<w>} |] * {<x>, <w>}) @ 1) \\ {<z>};",
        "net f connect ((([| {<x>}, {<w>} |] * {<x>, <w>}) @ 1) \\ {<z>}) * {<v>};",
    ] {
        assert_eq!(boundary(looped, 1), None, "{looped}");
    }
    // Deterministic combinators inside a placement on the node (their
    // owner and collector there) ...
    for inside in [
        "net s connect ([{<x>} -> {<x>}] ** {<x>}) @ 1;",
        "net s connect ([{<x>} -> {<x>}] !! <x>) @ 1;",
        "net s connect ([{<x>} -> {<x>}] || [{<w>} -> {<w>}]) @ 1;",
        "net s connect ([{<x>} -> {<x>}] !!@ <x>);",
    ] {
        assert_eq!(boundary(inside, 1), None, "{inside}");
    }
    // ... and around one (their markers' copies on the node).
    for around in [
        "net d connect ([{<x>} -> {<x>}] @ 1) !! <x>;",
        "net d connect ([{<x>} -> {<x>}] @ 1) || ([{<w>} -> {<w>}] @ 2);",
        "net d connect ([{<x>} -> {<x>, <y>}] .. ([{<x>} -> {<x>}] @ 1)) ** {<y>};",
        "net d connect (([{<x>} -> {<x>}] @ 1) \\ {<z>}) !! <x>;",
    ] {
        assert_eq!(boundary(around, 1), None, "{around}");
        assert_eq!(boundary(around, 2), None, "{around}");
    }
    // A deterministic combinator on the node with a cell inside it: a
    // stored record holds its outputs back while the collector moves on,
    // so the records leaving the combinator are linked in its order
    // (`Graph::det_outputs_to_link`) and replay restores it. Without a
    // cell inside, or a combinator around the placement: not linked.
    let det_linked = |src: &str| linked_kinds(src, snet_core::Graph::det_outputs_to_link);
    for (inside, kind) in [
        (
            "net d connect ([| {<x>}, {<w>} |] || [{<v>} -> {<v>}]) @ 1;",
            "deterministic parallel composition",
        ),
        (
            "net d connect ([| {<x>}, {<w>} |] !! <x>) @ 1;",
            "deterministic parallel replication",
        ),
        (
            "net d connect (([| {<x>}, {<w>} |] .. [{<x>} -> {<x>}]) ** {<y>}) @ 1;",
            "deterministic serial replication",
        ),
    ] {
        assert_eq!(boundary(inside, 1), None, "{inside}");
        assert_eq!(det_linked(inside), [kind], "{inside}");
    }
    assert_eq!(
        det_linked("net s connect ([{<x>} -> {<x>}] !! <x>) @ 1;"),
        Vec::<String>::new()
    );
    // One around the placement orders at node 0: a cell inside is fine.
    let det_cell_around = "net d connect ([| {<x>}, {<w>} |] @ 1) !! <x>;";
    assert_eq!(boundary(det_cell_around, 1), None);
    // (Linked wherever it runs: on node 0, which receives no custody,
    // the engine makes no link.)
    assert_eq!(
        det_linked(det_cell_around),
        ["deterministic parallel replication"]
    );
    // Nor around a star-fused cell in a placement inside a loop (until
    // the fused star restored parked records, this one was named).
    let det_cell = "net d connect (([| {<x>}, {<w>} |] * {<x>, <w>}) @ 1) \\ {<z>} !! <x>;";
    assert_eq!(boundary(det_cell, 1), None);
    // A placement inside a placement on another node (on node 0 or the
    // outer node too, or a dynamic one): a run that survives a lost node
    // pushes the outer placement down (`Graph::placed_for_replay`), so
    // records between the two pass node 0's log. Not a boundary.
    let nested = "net n connect (([{<x>} -> {<x>}] @ 2) .. [{<x>} -> {<x>}]) @ 1;";
    for k in [1, 2] {
        assert_eq!(boundary(nested, k), None);
        for inner in ["@ 0", "@ 1", "!@ <x>"] {
            let src = nested.replace("@ 2", inner);
            assert_eq!(boundary(&src, k), None, "{src}");
        }
    }
    // Inside a dynamic placement's replica, a placement on another node,
    // on node 0 or on the node itself, or a dynamic one: each replica's
    // body runs on node 0 with the parts that place nothing placed on the
    // replica's node (`Graph::placed_for_replay`), so records between
    // them pass node 0's log. Not a boundary, for any node. (Until the
    // replicas were pushed down, each of these was named on every node.)
    for inner in ["@ 2", "@ 0", "@ 1", "!@ <y>"] {
        let src = format!(
            "net n connect (([{{<x>, <y>}} -> {{<x>, <y>}}] {inner}) .. [{{<x>}} -> {{<x>}}]) !@ <x>;"
        );
        for k in [1, 2, 3] {
            assert_eq!(boundary(&src, k), None, "{src}, node {k}");
        }
        let deep = format!(
            "net n connect (({src_body}) !@ <y>) @ 1;",
            src_body = &src[14..src.len() - 1]
        );
        for k in [1, 2, 3] {
            assert_eq!(boundary(&deep, k), None, "{deep}, node {k}");
        }
    }
}

/// The graph a run that survives a lost node executes (here over 3
/// nodes): each placement on a node other than 0 that encloses a
/// placement is pushed down to the largest parts that place nothing; the
/// combinators above run on node 0, a placement on the outer node inside
/// is dropped, a dynamic placement stays (its body too). A dynamic
/// placement whose body places something gets one body per node `v`,
/// the body pushed down as `body @ v` (the body itself for node 0).
#[test]
fn placed_for_replay_pushes_an_outer_placement_below_the_inner_ones() {
    fn shape(g: &snet_core::Graph, id: snet_core::NodeId) -> String {
        use snet_core::NodeKind as K;
        let s = |id| shape(g, id);
        match &g.node(id).kind {
            K::Box(b) => g.box_def(*b).name.clone(),
            K::Filter(_) => "f".into(),
            K::Synchrocell(_) => "cell".into(),
            K::Serial(a, b) => format!("({} .. {})", s(*a), s(*b)),
            K::Parallel { branches, det } => {
                let sep = if *det { " || " } else { " | " };
                let b: Vec<String> = branches.iter().map(|&b| s(b)).collect();
                format!("({})", b.join(sep))
            }
            K::Star { body, det, .. } => {
                format!("({} {} p)", s(*body), if *det { "**" } else { "*" })
            }
            K::Split { body, det, .. } => {
                format!("({} {} <t>)", s(*body), if *det { "!!" } else { "!" })
            }
            K::Feedback { body, .. } => format!("({} \\ p)", s(*body)),
            K::Place { body, node } => format!("({} @ {node})", s(*body)),
            K::DynPlace {
                body,
                det,
                per_node,
                ..
            } => {
                let op = if *det { "!!@" } else { "!@" };
                if per_node.is_empty() {
                    format!("({} {op} <t>)", s(*body))
                } else {
                    let p: Vec<String> = per_node.iter().map(|&b| s(b)).collect();
                    format!("({} {op} <t> per node: {})", s(*body), p.join("; "))
                }
            }
            K::Net { body, .. } | K::Observe { body, .. } => s(*body),
        }
    }
    let pushed = |connect: &str| {
        let src = format!(
            "net n {{ box a((<x>) -> (<x>)); box b((<x>) -> (<x>)); }}\nconnect {connect};"
        );
        let g = compile("p.snet", &src, None).graph.expect("graph");
        g.placed_for_replay(3).map(|p| {
            // Once is enough: the rewritten graph is its own rewrite.
            assert!(p.placed_for_replay(3).is_none(), "{connect}");
            shape(&p, p.entry)
        })
    };
    assert_eq!(pushed("(a @ 2) .. (b @ 1)"), None, "nothing nested");
    assert_eq!(pushed("((a @ 2) .. b) @ 0"), None, "node 0 is not pushed");
    for (connect, want) in [
        ("((a @ 2) .. b) @ 1", "((a @ 2) .. (b @ 1))"),
        ("((a @ 2) | b) @ 1", "((a @ 2) | (b @ 1))"),
        (
            "(((a @ 2) .. b) || b) @ 1",
            "(((a @ 2) .. (b @ 1)) || (b @ 1))",
        ),
        ("((a @ 2) * {<y>}) @ 1", "((a @ 2) * p)"),
        (
            "((b .. (a @ 2)) !! <x>) @ 1",
            "(((b @ 1) .. (a @ 2)) !! <t>)",
        ),
        ("((a @ 0) \\ {<y>}) @ 1", "((a @ 0) \\ p)"),
        ("((a @ 1) .. b) @ 1", "((a @ 1) .. (b @ 1))"),
        ("((a !@ <x>) .. b) @ 1", "((a !@ <t>) .. (b @ 1))"),
        (
            "((((a @ 3) .. b) @ 2) .. b) @ 1",
            "(((a @ 3) .. (b @ 2)) .. (b @ 1))",
        ),
        (
            "((a @ 2) .. b) !@ <x>",
            "(((a @ 2) .. b) !@ <t> per node: ((a @ 2) .. b); ((a @ 2) .. (b @ 1)); \
             ((a @ 2) .. (b @ 2)))",
        ),
        (
            "((a @ 0) .. b) !!@ <x>",
            "(((a @ 0) .. b) !!@ <t> per node: ((a @ 0) .. b); ((a @ 0) .. (b @ 1)); \
             ((a @ 0) .. (b @ 2)))",
        ),
        (
            "((b .. (a @ 2)) * {<y>}) !@ <x>",
            "(((b .. (a @ 2)) * p) !@ <t> per node: ((b .. (a @ 2)) * p); \
             (((b @ 1) .. (a @ 2)) * p); (((b @ 2) .. (a @ 2)) * p))",
        ),
        (
            "((a !@ <y>) .. b) !@ <x>",
            "(((a !@ <t>) .. b) !@ <t> per node: ((a !@ <t>) .. b); \
             ((a !@ <t>) .. (b @ 1)); ((a !@ <t>) .. (b @ 2)))",
        ),
        (
            "((((a @ 1) .. b) !@ <y>) .. b) !@ <x>",
            "(((((a @ 1) .. b) !@ <t> per node: ((a @ 1) .. b); ((a @ 1) .. (b @ 1)); \
             ((a @ 1) .. (b @ 2))) .. b) !@ <t> per node: \
             ((((a @ 1) .. b) !@ <t> per node: ((a @ 1) .. b); ((a @ 1) .. (b @ 1)); \
             ((a @ 1) .. (b @ 2))) .. b); \
             ((((a @ 1) .. b) !@ <t> per node: ((a @ 1) .. b); ((a @ 1) .. (b @ 1)); \
             ((a @ 1) .. (b @ 2))) .. (b @ 1)); \
             ((((a @ 1) .. b) !@ <t> per node: ((a @ 1) .. b); ((a @ 1) .. (b @ 1)); \
             ((a @ 1) .. (b @ 2))) .. (b @ 2)))",
        ),
        (
            "(((a @ 2) .. b) !@ <x>) @ 1",
            "(((a @ 2) .. b) !@ <t> per node: ((a @ 2) .. b); ((a @ 2) .. (b @ 1)); \
             ((a @ 2) .. (b @ 2)))",
        ),
    ] {
        assert_eq!(pushed(connect), Some(want.to_string()), "{connect}");
    }
    // A dynamic placement whose body places nothing (a farm, cells in its
    // replicas too) stays as it is.
    for connect in ["(a .. b) !@ <x>", "(a .. [| {<x>}, {<y>} |]) !@ <x>"] {
        assert_eq!(pushed(connect), None, "{connect}");
    }
}
