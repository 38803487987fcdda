//! The checker's unit tests: inferred signatures, warnings and errors of
//! small programs.

use crate::compile;

/// The entry net's inferred signature, or the first error message.
fn sig(src: &str) -> String {
    let c = compile("t.snet", src, None);
    if let Some(e) = c.diagnostics.iter().find(|d| d.is_error()) {
        return format!("error: {}", e.message);
    }
    let n = c.nets.iter().find(|n| n.entry).expect("entry");
    n.display()
}

fn warnings(src: &str) -> Vec<String> {
    compile("t.snet", src, None)
        .diagnostics
        .into_iter()
        .filter(|d| !d.is_error())
        .map(|d| d.message)
        .collect()
}

#[test]
fn flow_inheritance_through_boxes_and_filters() {
    assert_eq!(
        sig("box f((a) -> (b) | (c)); net n connect [{a, x} -> {a}; {a, <t=1>}] .. f;"),
        "{a, x} -> {b, <t>} | {b} | {c, <t>} | {c}"
    );
    // The emitted label wins over the inherited one of the same name.
    assert_eq!(
        sig("box f((a) -> (a, b)); net n connect [{a, b} -> {a, b}] .. f;"),
        "{a, b} -> {a, b}"
    );
}

#[test]
fn binding_tags_block_subtyping() {
    assert!(
        sig("box f((a, <#k>) -> (b, <#k>)); box g((b) -> (c)); net n connect f .. g;")
            .starts_with("error:")
    );
    assert_eq!(
        sig("box f((a, <#k>) -> (b, <#k>)); box g((b, <#k>) -> (c)); net n connect f .. g;"),
        "{a, <#k>} -> {c}"
    );
}

#[test]
fn synchrocell_merges_with_the_first_patterns_record() {
    assert_eq!(
        sig("net n connect [{a} -> {a, <t=1>}; {b=a}] .. [| {a}, {b} |];"),
        "{a} -> {a, <t>} | {a, b, <t>} | {b}"
    );
    // No record reaching the cell can carry b: the filter consumes it.
    assert_eq!(
        warnings("net n connect [{a, b} -> {a}] .. [| {a}, {b} |];").len(),
        1
    );
    // Records that carry b from the input fill the second slot: no warning.
    assert!(warnings("net n connect [{a} -> {a}] .. [| {a}, {b} |];").is_empty());
}

#[test]
fn star_and_feedback_reach_fixpoints() {
    assert_eq!(
        sig("box f((a) -> (a, <t>) | (b)); net n connect f * {b};"),
        "{a} -> {b, <t>} | {b}"
    );
    assert_eq!(
        sig("box f((a) -> (a, <n>) | (b)); net n connect f \\ {a, <n>};"),
        "{a} -> {b, <n>} | {b}"
    );
    // An exit pattern no record can match (the filter consumes `never`).
    let w = warnings("net n connect [{a, never} -> {a}] .. ([{a} -> {a, <x>}] * {never});");
    assert!(w.iter().any(|m| m.contains("can never match")), "{w:?}");
    // A record carrying `never` from the input leaves at once: no warning.
    let w = warnings("net n connect [{a} -> {a, <x>}] * {never};");
    assert!(w.is_empty(), "{w:?}");
}

#[test]
fn declared_signatures_are_checked_and_used() {
    assert!(sig("box f((a) -> (b)); net n ({a} -> {c}) connect f;")
        .starts_with("error: net `n` can emit {b}"));
    assert_eq!(
        sig("box f((a) -> (b) | (c)); net m ({a} -> ...) connect f; net n connect m;"),
        "{a} -> {b} | {c}"
    );
    assert_eq!(
        sig("box f((a) -> (b)); net n ({a} -> {b}, {x} -> ...) connect f | [{x} -> {y=x}];"),
        "{a} | {x} -> {b} | {y}"
    );
}

#[test]
fn inherited_requirements() {
    // Serial: <B> flows around a into b.
    assert_eq!(
        sig("box a((<A>) -> (<A>)); box b((<B>) -> (<B>)); net n connect a .. b;"),
        "{<A>, <B>} -> {<A>, <B>}"
    );
    // A box with the empty input list lets everything flow.
    assert_eq!(
        sig("box t(() -> (time)); box r((a) -> (b)); net n connect t .. r;"),
        "{a} -> {b, time}"
    );
    // A consumed label cannot be supplied: an error, not an extension.
    assert!(
        sig("box a((x, <k>) -> (y)); box b((y, <k>) -> (z)); net n connect a .. b;")
            .starts_with("error:")
    );
    // Nor can a binding tag the earlier pattern lacks.
    assert!(
        sig("box f((a) -> (b)); box g((b, <#k>) -> (c)); net n connect f .. g;")
            .starts_with("error:")
    );
    // A star never extends its entry into an unguarded exit; {stuck}
    // fails only on the path that goes round again, {b} leaves: a warning.
    let src = "box f((a) -> (b) | (stuck)); net n connect f * {b};";
    assert_eq!(sig(src), "{a} -> {b}");
    assert!(warnings(src)
        .iter()
        .any(|w| w.contains("enters the next replica, which cannot accept it")));
    // Nothing ever leaves: no input can make it work, an error.
    assert!(sig("box f((a) -> (stuck)); net n connect f * {b};").starts_with("error:"));
    // Requirements only some outputs need: accepted, with a warning.
    let src = "box s((raw) -> (c) | (bad)); box c((c) -> (d)); net n connect s .. c;";
    assert_eq!(sig(src), "{c, raw} -> {bad, d} | {d}");
    assert!(warnings(src)
        .iter()
        .any(|w| w.contains("only if it inherits {c}")));
}

#[test]
fn parallel_branches_route_by_inherited_input_types() {
    let c = compile(
        "t.snet",
        "box d((D) -> (D)); box l((B) -> (B)); box r((C) -> (C)); net n connect (d .. l) | (d .. r);",
        None,
    );
    let g = c.graph.expect("graph");
    let mut types: Vec<String> = Vec::new();
    for node in &g.nodes {
        if let snet_core::NodeKind::Parallel { branches, .. } = &node.kind {
            for b in branches {
                for v in &g.node(*b).input.0 {
                    let mut names: Vec<String> = v.labels().iter().map(|l| l.to_string()).collect();
                    names.sort();
                    types.push(names.join(","));
                }
            }
        }
    }
    assert_eq!(types, ["B,D", "C,D"]);
}

#[test]
fn long_chains_of_nets_do_not_overflow() {
    let mut src = String::from("net n0 connect [{a} -> {a}];\n");
    for i in 1..3000 {
        src.push_str(&format!(
            "net n{i} connect n{} .. [{{a}} -> {{a}}];\n",
            i - 1
        ));
    }
    assert_eq!(sig(&src), "{a} -> {a}");
}

#[test]
fn only_minimal_extensions_are_kept() {
    // {x} reaches g2 with {p, q, s} in one step, but {p, q} (two steps:
    // {x, p} goes to f2, whose {w} needs q) is enough.
    assert_eq!(
        sig(
            "box f1((x) -> (y)); box f2((x, p) -> (w)); box g1((y, p) -> (z)); \
             box g2((y, p, q, s) -> (z)); box g3((w, q) -> (z)); \
             net n connect (f1 | f2) .. (g1 | g2 | g3);"
        ),
        "{p, q, x} | {q, w, x} -> {y, z} | {z}"
    );
}

#[test]
fn sub_chains_of_a_serial_chain_keep_their_suffix_types() {
    // The lowering splits `a .. b .. c` into `a .. (b .. c)`: the inner
    // node needs what `b .. c` needs, the outer one what the whole needs.
    let c = compile(
        "t.snet",
        "box a((<A>) -> (<A>)); box b((<B>) -> (<B>)); box c((C) -> (C)); net n connect a .. b .. c;",
        None,
    );
    let g = c.graph.expect("graph");
    let mut types: Vec<String> = Vec::new();
    for node in &g.nodes {
        if let snet_core::NodeKind::Serial(..) = node.kind {
            for v in &node.input.0 {
                let mut names: Vec<String> = v.labels().iter().map(|l| l.to_string()).collect();
                names.sort();
                types.push(names.join(","));
            }
        }
    }
    types.sort();
    assert_eq!(types, ["<A>,<B>,C", "<B>,C"]);
}

#[test]
fn no_extension_through_a_wrapped_star_exit_or_synchrocell() {
    // Inheriting `done` would make the record leave the loop before it
    // enters f, also when the star sits at the head of a net or chain.
    let src = "box f((a) -> (a) | (done) | (fail)); box g((done) -> (out)); \
               net loop connect f * {done}, {fail}; net n connect loop .. g;";
    assert!(
        sig(src).starts_with("error: net `loop` can emit {fail}"),
        "{}",
        sig(src)
    );
    let src = "box f((a) -> (a) | (done) | (fail)); box g((done) -> (out)); \
               net n connect (f * {done}, {fail} .. []) .. g;";
    assert!(sig(src).starts_with("error:"), "{}", sig(src));
    // b is what the cell's second record brings, also when the cell is
    // wrapped in a chain or a net: {a} is not extended to {a, b}. The
    // {a} the cell passes on unmerged (a second {a}) matches no branch,
    // a warning: one {a} and one {b} make the program work.
    let src = "box f((a, b) -> (c)); net n connect ([| {a}, {b} |] .. []) .. (f | [{b} -> ]);";
    assert_eq!(sig(src), "{a} | {b} -> {c}");
    assert_eq!(warnings(src).len(), 1, "{:?}", warnings(src));
    let src = "box f((a, b) -> (c)); net cell connect [| {a}, {b} |]; \
               net n connect cell .. (f | [{b} -> ]);";
    assert_eq!(sig(src), "{a} | {b} -> {c}");
}

#[test]
fn what_only_a_synchrocells_leftovers_break_is_a_warning() {
    // The cell passes on a record matching a pattern only when that
    // slot is already filled: with one {<a>} and one {<b>}, only the
    // merged record reaches the filter (issue 37), also through a chain
    // and a net around the cell.
    for src in [
        "net n connect [| {<a>}, {<b>} |] .. [{<a>, <b>} -> {<s = a + b>}];",
        "net n connect ([| {<a>}, {<b>} |] .. []) .. [{<a>, <b>} -> {<s>}];",
        "net c connect [| {<a>}, {<b>} |]; net n connect c .. [{<a>, <b>} -> {<s>}];",
    ] {
        assert_eq!(sig(src), "{<a>} | {<b>} -> {<s>}", "{src}");
        let w = warnings(src);
        assert_eq!(w.len(), 2, "{src}: {w:?}");
    }
    // A record no pattern matches always passes on: still an error.
    // (The binding tag keeps the inference from extending it.)
    let src = "net n connect [| {<a>}, {<b>} |] .. [{<a>, <b>} -> {<s>}]; \
               net m connect [{<x>} -> {<a>}; {<b>}; {<z>, <#t>}] .. n;";
    assert_eq!(
        sig(src),
        "error: `[| {<a>}, {<b>} |]` can emit {<z>, <#t>}, which `[{<a>, <b>} -> {<s>}]` does not accept"
    );
    // Nor does a cell that can never fire hide what it passes on.
    let src = "net n connect [{<a>} -> {<a>}] .. [| {<a>}, {<b>} |] .. [{<a>, <b>} -> {<s>}];";
    assert!(sig(src).starts_with("error: "), "{}", sig(src));
}

/// Known gap, not fixed: extensions are verified by flowing one variant
/// at a time, so a synchrocell never fires inside the inference and what
/// its merged record needs from the first pattern's record is never
/// found. With inputs {a, <k>} and {b} this program works (the merged
/// record takes <k> from the {a, <k>} record); the checker rejects it.
#[test]
#[ignore = "known gap: requirements of a synchrocell's merged record are not inferred"]
fn requirements_through_a_synchrocell_merge() {
    assert_eq!(
        sig("box f((a, b, <k>) -> (c)); net n connect [| {a}, {b} |] * {a, b} .. f;"),
        "{a, <k>} | {b} -> {c}"
    );
}

/// Known bug, not fixed: a speculative flow drops the records a
/// component rejects inside (the errors are rolled back), so an
/// extension that routes a record into a dead end "fits" because nothing
/// comes out. Here {x, z} is taken for the star (q's {zz} dies at r),
/// next to the working {x, y}, and the forward check then rejects the
/// program; without {x, z} it checks cleanly.
#[test]
#[ignore = "known bug: an extension may fit by losing records inside the component"]
fn an_extension_never_fits_by_losing_records() {
    let src = "box p((x) -> (x2)); box q((x, z) -> (zz)); box r((x2) -> (x) | (w)); \
               net n connect ((p | q) .. r) * {w, z}, {w, y};";
    assert!(!sig(src).starts_with("error:"), "{}", sig(src));
}

#[test]
fn star_and_feedback_requirements_take_several_rounds() {
    // Every input variant must carry z.
    let all_carry_z = |s: &str| {
        let input = s.split(" -> ").next().unwrap_or("");
        !s.starts_with("error:") && input.split(" | ").all(|v| v.contains('z'))
    };
    // Round 1 extends g's {c}: its {b} leaves only with z. Then f's {c}
    // no longer fits the next replica, which now needs z: round 2.
    let s = sig("box f((a) -> (c)); box g((c) -> (c) | (b)); net n connect (f | g) * {b, z};");
    assert!(all_carry_z(&s), "{s}");
    // The same for what a feedback loop sends back.
    let s = sig(
        "box f((a) -> (c)); box g((c) -> (e)); box h((e, z) -> (out)); \
                 net n connect (f | g | h) \\ {c}, {e};",
    );
    assert!(all_carry_z(&s), "{s}");
}

#[test]
fn speculative_flows_report_nothing() {
    // Looking for u1's z, the inference tries {x, z}, which q takes and
    // whose {v} r rejects; that try must leave no error behind.
    let src = "box p((x) -> (y)); box q((x, z) -> (v) | (y)); box r((y) -> (y)); \
               box u1((y, z) -> (out)); box u2((y, w) -> (out)); \
               net n connect ((p | q) .. r) .. (u1 | u2);";
    assert_eq!(sig(src), "{w, x, y, z} | {w, x} -> {out, v} | {out}");
}

#[test]
fn extensions_with_and_without_a_binding_tag_are_both_kept() {
    // {m} and {m, <#k>} are incomparable: neither matches the other.
    assert_eq!(
        sig("box g1((m) -> (x)); box g2((m, <#k>) -> (y)); net n connect [] .. (g1 | g2);"),
        "{m, <#k>} | {m} -> {x} | {y}"
    );
}
