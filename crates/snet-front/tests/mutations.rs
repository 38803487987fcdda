//! Property: `compile` never panics, whatever it is given. Inputs are corpus
//! programs with random token- and byte-level damage (deletions, insertions,
//! swaps, truncations), plus free-form text over S-Net's alphabet.

use std::path::Path;

use proptest::prelude::*;

fn corpus() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/front");
    let mut out = Vec::new();
    for sub in ["valid", "invalid", "warn"] {
        if let Ok(rd) = std::fs::read_dir(root.join(sub)) {
            for e in rd.flatten() {
                if e.path().extension().is_some_and(|x| x == "snet") {
                    if let Ok(s) = std::fs::read_to_string(e.path()) {
                        out.push(s);
                    }
                }
            }
        }
    }
    out.sort();
    if out.is_empty() {
        out.push("net n ({a} -> {b}) { box f((a) -> (b)); } connect f .. [{b} -> {b}] | [] * {b} if <1>;".into());
    }
    out
}

const PIECES: &[&str] = &[
    "net",
    "box",
    "connect",
    "type",
    "typesig",
    "if",
    "then",
    "else",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "[|",
    "|]",
    "<",
    ">",
    "<#",
    "..",
    "...",
    "|",
    "||",
    "*",
    "**",
    "!",
    "!!",
    "!@",
    "!!@",
    "@",
    "\\",
    "->",
    ";",
    ",",
    "=",
    "==",
    "0x",
    "07",
    "9999999999999999999999",
    "a",
    "<t>",
    "/*",
    "*/",
    "//",
    "\n",
    " ",
    "abs(",
    "min(",
    "?",
    ":",
    "<metadata>",
    "</metadata>",
    "<metadata/>",
    "<box name=\"f\">",
    "<<<",
    ">>>",
    "<<< C |",
    "{ <<< C | x >> 1; } >>> }",
    "é",
    "\u{0}",
];

#[derive(Debug, Clone)]
enum Edit {
    Delete(usize, usize),
    Insert(usize, usize),
    Swap(usize, usize),
    Truncate(usize),
}

fn apply(src: &str, edits: &[Edit]) -> String {
    let mut s: Vec<char> = src.chars().collect();
    for e in edits {
        let n = s.len().max(1);
        match *e {
            Edit::Delete(at, len) => {
                let at = at % n;
                let end = (at + len % 8).min(s.len());
                if at < s.len() {
                    s.drain(at..end);
                }
            }
            Edit::Insert(at, piece) => {
                let at = (at % n).min(s.len());
                let p = PIECES[piece % PIECES.len()];
                for (i, c) in p.chars().enumerate() {
                    s.insert(at + i, c);
                }
            }
            Edit::Swap(a, b) => {
                if !s.is_empty() {
                    let len = s.len();
                    s.swap(a % len, b % len);
                }
            }
            Edit::Truncate(at) => s.truncate(at % n),
        }
    }
    s.into_iter().collect()
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<usize>()).prop_map(|(a, l)| Edit::Delete(a, l)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, p)| Edit::Insert(a, p)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::Swap(a, b)),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn mutated_corpus_programs_never_panic(which in any::<usize>(), edits in proptest::collection::vec(edit(), 1..8)) {
        let corpus = corpus();
        let src = apply(&corpus[which % corpus.len()], &edits);
        let c = snet_front::compile("m.snet", &src, None);
        let _ = snet_front::render(&c.diagnostics, "m.snet", &src, false);
        if let Some(g) = &c.graph {
            let _ = snet_front::dot::to_dot(g);
        }
    }

    #[test]
    fn token_soup_never_panics(pieces in proptest::collection::vec(0..PIECES.len(), 0..60)) {
        let src: String = pieces.iter().map(|&i| PIECES[i]).collect::<Vec<_>>().join(" ");
        let c = snet_front::compile("s.snet", &src, None);
        let _ = snet_front::render(&c.diagnostics, "s.snet", &src, false);
    }
}
