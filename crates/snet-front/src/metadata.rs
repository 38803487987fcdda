//! `<metadata>` blocks: XML-like annotations that stand where a definition
//! may stand (top level and inside net bodies, any number of them).
//!
//! A small, lenient XML reader: elements with attributes, self-closing
//! elements, comments and `<? ?>` processing instructions; text is ignored.
//! Only `interface` values matter to this project (which box-language
//! interface implements a box); every other element (observers, SAC
//! options, ...) is kept in the tree and otherwise ignored.
//!
//! ## Which rules apply to a box
//!
//! A block stands in a *scope*: the top level, or the body of a net `n`
//! (written `net n { <metadata>...</metadata> ... }`). Its rules apply only
//! to boxes declared in that scope or in nets nested in it: a block in `n`'s
//! body never affects a box declared outside `n`, even one `n` uses. Inside a
//! block, an element nested in `<net name="m">` elements applies only to boxes
//! declared inside nets of those names, below the block's scope, outermost
//! first (the names need not be adjacent: `<net name="a"><box name="f">`
//! also reaches a box `f` in `a/b`). So `<box name="f">` in a block inside
//! `n` refers to the boxes called `f` declared in `n` (or deeper), and a
//! top-level `<box name="f">` to every box called `f`.
//!
//! ## Precedence (most specific first)
//!
//! For a box `b` declared inside nets `n1/n2/.../nk`:
//! 1. A `<box name="b">` element with an `<interface>` child beats every
//!    other rule. Among several, the one attached deepest wins (the block's
//!    scope plus the `<net>` elements around it: a rule in `n2`'s body, or
//!    inside `<net name="n2">`, beats a top-level one); at equal depth the
//!    one written last wins.
//! 2. Otherwise the net-level rules: `<net name="ni">` with a direct
//!    `<interface>` child (attached to `ni`), `<boxdefault>` and `<default>`
//!    (attached to the net whose body holds the block, or to the `<net>`
//!    element they sit in; depth 0 at top level). The rule attached to the
//!    innermost net around the box wins; at equal depth `<net>` beats
//!    `<boxdefault>`, which beats `<default>`; then the one written last.
//! 3. Otherwise [`DEFAULT_INTERFACE`] (`C4SNet`).

use crate::diag::{Diagnostic, Diagnostics, Span};

/// The default box-language interface.
pub const DEFAULT_INTERFACE: &str = "C4SNet";

/// One `<metadata>` block as written.
#[derive(Clone, Debug, Default)]
pub struct Block {
    /// The children of `<metadata>`.
    pub elements: Vec<Element>,
    /// The whole block, `<metadata>` to `</metadata>`.
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Element {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Element>,
    pub span: Span,
}

impl Element {
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The `value` of a direct `<interface>` child.
    fn interface(&self) -> Option<&str> {
        self.children
            .iter()
            .find(|c| c.name == "interface")
            .and_then(|c| c.attr("value"))
    }
}

/// Every metadata block of a program, each with the scope it stands in.
#[derive(Clone, Debug, Default)]
pub struct Metadata {
    pub blocks: Vec<ScopedBlock>,
}

/// A block and the names of the nets whose body holds it (outermost first;
/// empty at top level).
#[derive(Clone, Debug)]
pub struct ScopedBlock {
    pub scope: Vec<String>,
    pub block: Block,
}

/// A `<box name=..>` mentioned in the metadata, for "no such box" warnings.
pub struct BoxMention<'a> {
    pub name: &'a str,
    pub span: Span,
    /// The scope of the block that mentions it.
    pub scope: &'a [String],
}

/// How an applicable rule ranks (compared as a tuple, the greatest wins):
/// box rules first, then depth, then kind, then source position.
type Rank = (bool, usize, u8, usize);

impl Metadata {
    /// The interface of box `name` declared inside the nets `net_path`
    /// (outermost first), by the precedence in the module doc.
    pub fn box_interface(&self, net_path: &[&str], name: &str) -> String {
        let mut found: Vec<(Rank, &str)> = Vec::new();
        for sb in &self.blocks {
            let depth0 = sb.scope.len();
            if depth0 > net_path.len() || sb.scope.iter().zip(net_path).any(|(a, b)| a != b) {
                continue;
            }
            walk(&sb.block.elements, &mut Vec::new(), &mut |el, nets| {
                // Where the element's `<net>` ancestors sit in `net_path` (None: not applicable).
                let Some(attached) = embed(nets, net_path, depth0) else {
                    return;
                };
                let at = el.span.start;
                match el.name.as_str() {
                    "box" if el.attr("name") == Some(name) => {
                        if let Some(v) = el.interface() {
                            found.push(((true, attached, 0, at), v));
                        }
                    }
                    "net" => {
                        if let (Some(n), Some(v)) = (el.attr("name"), el.interface()) {
                            // `n` must be a net around the box, below the ancestors.
                            if let Some(i) = net_path[attached..].iter().rposition(|p| *p == n) {
                                found.push(((false, attached + i + 1, 2, at), v));
                            }
                        }
                    }
                    "boxdefault" => {
                        if let Some(v) = el.interface() {
                            found.push(((false, attached, 1, at), v));
                        }
                    }
                    "default" => {
                        if let Some(v) = el.interface() {
                            found.push(((false, attached, 0, at), v));
                        }
                    }
                    _ => {}
                }
            });
        }
        // Ranks are distinct (they end with the element's offset).
        found
            .into_iter()
            .max_by_key(|(rank, _)| *rank)
            .map_or(DEFAULT_INTERFACE, |(_, v)| v)
            .to_string()
    }

    /// Every `<box name="...">` element, with the scope of its block.
    pub fn box_mentions(&self) -> Vec<BoxMention<'_>> {
        let mut out = Vec::new();
        for sb in &self.blocks {
            walk(&sb.block.elements, &mut Vec::new(), &mut |el, _| {
                if el.name == "box" {
                    if let Some(n) = el.attr("name") {
                        out.push(BoxMention {
                            name: n,
                            span: el.span.clone(),
                            scope: &sb.scope,
                        });
                    }
                }
            });
        }
        out
    }
}

/// Calls `f` on every element with the names of its `<net name=..>` ancestors.
fn walk<'a>(
    els: &'a [Element],
    nets: &mut Vec<&'a str>,
    f: &mut dyn FnMut(&'a Element, &[&'a str]),
) {
    for el in els {
        f(el, nets);
        let name = if el.name == "net" {
            el.attr("name")
        } else {
            None
        };
        if let Some(n) = name {
            nets.push(n);
        }
        walk(&el.children, nets, f);
        if name.is_some() {
            nets.pop();
        }
    }
}

/// Matches the `<net>` ancestor names `nets` against `net_path[from..]` in
/// order (not necessarily adjacent), each as deep as possible. Returns the
/// depth the element is attached to: `from` without ancestors, else the
/// position of the last ancestor's net plus one; `None` if they do not match.
fn embed(nets: &[&str], net_path: &[&str], from: usize) -> Option<usize> {
    let mut end = net_path.len();
    let mut last = None;
    for n in nets.iter().rev() {
        let i = net_path[from..end].iter().rposition(|p| p == n)? + from;
        last.get_or_insert(i + 1);
        end = i;
    }
    Some(last.unwrap_or(from))
}

/// Elements may nest at most this deep (keeps the reader's recursion bounded).
const MAX_NESTING: usize = 64;

/// If the text at `pos` opens a `<metadata>` element, reads it and returns the
/// block and the offset just after `</metadata>`. A malformed block is
/// reported and runs to the end of the text.
pub fn parse(src: &str, pos: usize, diags: &mut Diagnostics) -> Option<(Block, usize)> {
    let rest = &src[pos..];
    let after = rest.strip_prefix("<metadata")?;
    if !after.starts_with(|c: char| c == '>' || c == '/' || c.is_ascii_whitespace()) {
        return None;
    }
    let mut r = Reader {
        src,
        pos,
        diags,
        depth: 0,
    };
    match r.element() {
        Some(el) => {
            let span = el.span.clone();
            Some((
                Block {
                    elements: el.children,
                    span,
                },
                r.pos,
            ))
        }
        None => Some((
            Block {
                elements: Vec::new(),
                span: pos..src.len(),
            },
            src.len(),
        )),
    }
}

struct Reader<'a, 'd> {
    src: &'a str,
    pos: usize,
    diags: &'d mut Diagnostics,
    depth: usize,
}

impl Reader<'_, '_> {
    fn rest(&self) -> &str {
        &self.src[self.pos..]
    }

    fn skip_ws(&mut self) {
        let n = self.rest().len() - self.rest().trim_start().len();
        self.pos += n;
    }

    fn name(&mut self) -> String {
        let n = self
            .rest()
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || c == ':' || c == '.'))
            .unwrap_or(self.rest().len());
        let s = self.rest()[..n].to_string();
        self.pos += n;
        s
    }

    fn fail(&mut self, span: Span, msg: &str, label: &str) -> Option<Element> {
        self.diags
            .push(Diagnostic::error(span, format!("malformed metadata: {msg}")).with_label(label));
        self.pos = self.src.len();
        None
    }

    /// Reads one element starting at `<name`. On malformed input reports and gives up on the block.
    fn element(&mut self) -> Option<Element> {
        let start = self.pos;
        self.pos += 1; // '<'
        let name = self.name();
        if name.is_empty() {
            return self.fail(
                start..start + 1,
                "expected an element name after `<`",
                "here",
            );
        }
        let mut attrs = Vec::new();
        loop {
            self.skip_ws();
            let r = self.rest();
            if r.starts_with("/>") {
                self.pos += 2;
                return Some(Element {
                    name,
                    attrs,
                    children: Vec::new(),
                    span: start..self.pos,
                });
            }
            if r.starts_with('>') {
                self.pos += 1;
                break;
            }
            let at = self.pos;
            let key = self.name();
            if key.is_empty() {
                return self.fail(
                    at..at + 1,
                    &format!("unexpected text in the tag of `<{name}>`"),
                    "here",
                );
            }
            self.skip_ws();
            if !self.rest().starts_with('=') {
                return self.fail(
                    at..self.pos,
                    &format!("attribute `{key}` has no value"),
                    "expected `=\"...\"`",
                );
            }
            self.pos += 1;
            self.skip_ws();
            let quote = match self.rest().chars().next() {
                Some(q @ ('"' | '\'')) => q,
                _ => {
                    return self.fail(
                        at..self.pos,
                        &format!("attribute `{key}` needs a quoted value"),
                        "here",
                    )
                }
            };
            self.pos += 1;
            let Some(end) = self.rest().find(quote) else {
                return self.fail(
                    at..self.src.len(),
                    "unterminated attribute value",
                    "opened here",
                );
            };
            attrs.push((key, self.rest()[..end].to_string()));
            self.pos += end + 1;
        }
        if self.depth >= MAX_NESTING {
            return self.fail(start..self.pos, "elements nested too deeply", "here");
        }
        self.depth += 1;
        let mut children = Vec::new();
        loop {
            // Skip text up to the next tag.
            match self.rest().find('<') {
                Some(i) => self.pos += i,
                None => {
                    self.depth -= 1;
                    return self.fail(
                        start..start + 1 + name.len(),
                        &format!("`<{name}>` is never closed"),
                        "opened here",
                    );
                }
            }
            let r = self.rest();
            if r.starts_with("<!--") {
                match r.find("-->") {
                    Some(i) => self.pos += i + 3,
                    None => {
                        return self.fail(
                            self.pos..self.pos + 4,
                            "unterminated comment",
                            "opened here",
                        )
                    }
                }
            } else if r.starts_with("<?") || r.starts_with("<!") {
                match r.find('>') {
                    Some(i) => self.pos += i + 1,
                    None => {
                        return self.fail(
                            self.pos..self.pos + 2,
                            "unterminated declaration",
                            "opened here",
                        )
                    }
                }
            } else if r.starts_with("</") {
                let at = self.pos;
                self.pos += 2;
                let close = self.name();
                self.skip_ws();
                if !self.rest().starts_with('>') {
                    return self.fail(at..self.pos, "expected `>`", "in this closing tag");
                }
                self.pos += 1;
                self.depth -= 1;
                if close != name {
                    return self.fail(
                        at..self.pos,
                        &format!("`</{close}>` closes `<{name}>`"),
                        &format!("expected `</{name}>`"),
                    );
                }
                return Some(Element {
                    name,
                    attrs,
                    children,
                    span: start..self.pos,
                });
            } else {
                children.push(self.element()?);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks given as (scope, text); the offsets of each text are shifted
    /// so that later blocks come later in the "file".
    fn blocks(list: &[(&[&str], &str)]) -> Metadata {
        let mut m = Metadata::default();
        let mut file = String::new();
        for (scope, text) in list {
            let at = file.len();
            file.push_str(text);
            let mut d = Diagnostics::default();
            let (block, _) = parse(&file, at, &mut d).expect("metadata");
            assert!(!d.has_errors(), "{:?}", d.into_sorted());
            m.blocks.push(ScopedBlock {
                scope: scope.iter().map(|s| s.to_string()).collect(),
                block,
            });
        }
        m
    }

    fn meta(src: &str) -> Metadata {
        blocks(&[(&[], src)])
    }

    fn iface(value: &str) -> String {
        format!("<interface value=\"{value}\"/>")
    }

    #[test]
    fn interfaces_resolve_most_specific_first() {
        let m = meta(
            r#"<metadata><?xml version="1.0"?><!-- c -->
              <default> <interface value="D"/> </default>
              <boxdefault> <interface value="BD"/> </boxdefault>
              <box name="foo"> <interface value="F"/> </box>
              <net name="outer"> <interface value="N"/>
                 <box name="foo"><interface value="NF"/></box>
                 <observer file="x"/>
              </net>
            </metadata>"#,
        );
        assert_eq!(m.box_interface(&[], "foo"), "F");
        assert_eq!(m.box_interface(&["outer"], "foo"), "NF");
        assert_eq!(m.box_interface(&["outer"], "bar"), "N");
        assert_eq!(m.box_interface(&[], "bar"), "BD");
        assert_eq!(Metadata::default().box_interface(&[], "bar"), "C4SNet");
    }

    #[test]
    fn blocks_apply_to_their_scope_only() {
        let m = blocks(&[
            (
                &[],
                &format!(
                    "<metadata><boxdefault>{}</boxdefault></metadata>",
                    iface("TOP")
                ),
            ),
            (
                &["n"],
                &format!(
                    "<metadata><box name=\"f\">{}</box><default>{}</default></metadata>",
                    iface("NF"),
                    iface("ND")
                ),
            ),
            (
                &["m"],
                &format!("<metadata><box name=\"f\">{}</box></metadata>", iface("MF")),
            ),
        ]);
        // `<box name="f">` in n's body: boxes f in n and below, not elsewhere.
        assert_eq!(m.box_interface(&["n"], "f"), "NF");
        assert_eq!(m.box_interface(&["n", "inner"], "f"), "NF");
        assert_eq!(m.box_interface(&["m"], "f"), "MF");
        assert_eq!(m.box_interface(&[], "f"), "TOP");
        assert_eq!(m.box_interface(&["other"], "f"), "TOP");
        // n's `<default>` is nearer than the top-level `<boxdefault>`.
        assert_eq!(m.box_interface(&["n"], "g"), "ND");
        assert_eq!(m.box_interface(&["n", "inner"], "g"), "ND");
        assert_eq!(m.box_interface(&["m"], "g"), "TOP");
    }

    #[test]
    fn precedence_between_rules() {
        let top = format!(
            "<metadata><box name=\"f\">{}</box><net name=\"n\">{}</net>\
             <net name=\"n\"><net name=\"k\"><box name=\"f\">{}</box></net></net></metadata>",
            iface("TOPF"),
            iface("NETN"),
            iface("NKF")
        );
        let inner = format!(
            "<metadata><boxdefault>{}</boxdefault><default>{}</default></metadata>",
            iface("NBD"),
            iface("ND")
        );
        let deeper = format!("<metadata><default>{}</default></metadata>", iface("KD"));
        let m = blocks(&[(&[], &top), (&["n"], &inner), (&["n", "k"], &deeper)]);
        // A box rule beats net-level rules however deep they are.
        assert_eq!(m.box_interface(&["n", "k"], "f"), "NKF");
        assert_eq!(m.box_interface(&["n"], "f"), "TOPF");
        // Net-level rules at depth 1: <net name="n"> beats n's <boxdefault> and <default>.
        assert_eq!(m.box_interface(&["n"], "g"), "NETN");
        // Deeper beats kind: k's <default> (depth 2) beats <net name="n"> (depth 1).
        assert_eq!(m.box_interface(&["n", "k"], "g"), "KD");
        // `<net name="k">` ancestors need not be adjacent, but must be in order.
        let loose = format!(
            "<metadata><net name=\"a\"><box name=\"f\">{}</box></net></metadata>",
            iface("AF")
        );
        let m = blocks(&[(&[], &loose)]);
        assert_eq!(m.box_interface(&["a", "b"], "f"), "AF");
        assert_eq!(m.box_interface(&["b"], "f"), "C4SNet");
        // Equal rank: the later rule wins.
        let twice = format!(
            "<metadata><box name=\"f\">{}</box><box name=\"f\">{}</box></metadata>",
            iface("FIRST"),
            iface("SECOND")
        );
        assert_eq!(blocks(&[(&[], &twice)]).box_interface(&[], "f"), "SECOND");
    }

    #[test]
    fn malformed_metadata_is_reported() {
        for bad in [
            "<metadata><box name=\"x\"></metadata>",
            "<metadata><a b></metadata>",
            "<metadata>",
        ] {
            let mut d = Diagnostics::default();
            parse(bad, 0, &mut d);
            assert!(d.has_errors(), "{bad}");
        }
        let mut d = Diagnostics::default();
        assert!(parse("<metadatax>", 0, &mut d).is_none());
    }
}
