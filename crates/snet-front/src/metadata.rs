//! `<metadata>` blocks: XML-like annotations that stand where a definition
//! may stand (top level and inside net bodies, any number of them).
//!
//! A small, lenient XML reader: elements with attributes, self-closing
//! elements, comments and `<? ?>` processing instructions; text is ignored.
//! Two kinds of element matter to this project: `interface` values (which
//! box-language interface implements a box) and observers
//! (`<observer />` and its `observer_*` siblings inside a `<box>` or
//! `<net>` element, [`Metadata::box_observers`], scoped as interfaces
//! are); every other element (SAC options, ...) is kept in the tree and
//! otherwise ignored.
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

use snet_core::{ObserveData, ObserveDest, ObservePoint};

use crate::diag::{Diagnostic, Diagnostics, Span};

/// The default box-language interface.
pub const DEFAULT_INTERFACE: &str = "C4SNet";

/// One `<metadata>` block as written.
#[derive(Clone, Debug, Default)]
pub struct Block {
    /// The children of `<metadata>`.
    pub elements: Vec<Element>,
}

/// One element of a block: `<name attr="value" ...>children</name>` or
/// `<name ... />`. Text between elements is not kept.
#[derive(Clone, Debug)]
pub struct Element {
    /// The tag name as written (case kept).
    pub name: String,
    /// The attributes in source order, values with their quotes removed.
    pub attrs: Vec<(String, String)>,
    /// The nested elements in source order (empty for `<name ... />`).
    pub children: Vec<Element>,
    /// The element from its `<` to the end of its closing tag.
    pub span: Span,
}

impl Element {
    /// The value of attribute `name` (the first, if it is written twice).
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
    /// The blocks in source order.
    pub blocks: Vec<ScopedBlock>,
}

/// A block and the names of the nets whose body holds it (outermost first;
/// empty at top level).
#[derive(Clone, Debug)]
pub struct ScopedBlock {
    /// The enclosing nets' names, outermost first.
    pub scope: Vec<String>,
    /// The block.
    pub block: Block,
}

/// A `<box name=..>` mentioned in the metadata, for "no such box" warnings.
pub struct BoxMention<'a> {
    /// The box name the element gives.
    pub name: &'a str,
    /// The `<box>` element.
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

/// An observer as its metadata asks for it (see [`observer_spec`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ObserverSpec {
    /// The observer's number: the `<observer />` element's rank among all
    /// of the program's, in text order, from 1.
    pub oid: u32,
    /// Where it observes: one point, or both (`observer_type` `both`,
    /// the default: before and after, one graph node each).
    pub points: Vec<ObservePoint>,
    /// How much of each record it reports.
    pub data: ObserveData,
    /// `<observer_code value=".." />`, copied into every message.
    pub code: Option<String>,
    /// Whether each observed record waits for the listener's reply.
    pub interactive: bool,
    /// Where its messages go.
    pub dest: ObserveDest,
    /// The `<observer />` element.
    pub span: Span,
}

impl Metadata {
    /// The observers of box `name` declared inside the nets `net_path`
    /// (outermost first): every applicable `<box name="..">` element (as
    /// for interfaces, module doc) with an `<observer />` child.
    pub fn box_observers(&self, net_path: &[&str], name: &str) -> Vec<ObserverSpec> {
        self.observers_of("box", net_path, name)
    }

    /// The observers of net `name` declared inside the nets `net_path`:
    /// every applicable `<net name="..">` element with an `<observer />` child.
    pub fn net_observers(&self, net_path: &[&str], name: &str) -> Vec<ObserverSpec> {
        self.observers_of("net", net_path, name)
    }

    fn observers_of(&self, kind: &str, net_path: &[&str], name: &str) -> Vec<ObserverSpec> {
        let mut out = Vec::new();
        for sb in &self.blocks {
            let depth0 = sb.scope.len();
            if depth0 > net_path.len() || sb.scope.iter().zip(net_path).any(|(a, b)| a != b) {
                continue;
            }
            walk(&sb.block.elements, &mut Vec::new(), &mut |el, nets| {
                if el.name == kind
                    && el.attr("name") == Some(name)
                    && embed(nets, net_path, depth0).is_some()
                {
                    if let Some(Ok(spec)) = observer_spec(el, |s| self.oid(s)) {
                        out.push(spec);
                    }
                }
            });
        }
        out.sort_by_key(|s| s.oid);
        out
    }

    /// The number of the `<observer />` element at `at`.
    fn oid(&self, at: usize) -> u32 {
        let mut starts = Vec::new();
        for sb in &self.blocks {
            walk(&sb.block.elements, &mut Vec::new(), &mut |el, _| {
                if el.name == "observer" {
                    starts.push(el.span.start);
                }
            });
        }
        starts.iter().filter(|s| **s < at).count() as u32 + 1
    }

    /// Reports every malformed observer (`<box>` and `<net>` elements with
    /// observer children).
    pub fn check_observers(&self, diags: &mut Diagnostics) {
        for sb in &self.blocks {
            walk(&sb.block.elements, &mut Vec::new(), &mut |el, _| {
                if el.name == "box" || el.name == "net" {
                    if let Some(Err(d)) = observer_spec(el, |_| 0) {
                        diags.push(*d);
                    }
                }
            });
        }
    }
}

/// The observer of a `<box>` or `<net>` element, from its children
/// (`None` without an `<observer />` child); `oid` numbers the
/// `<observer />` element by its offset.
pub fn observer_spec(
    el: &Element,
    oid: impl Fn(usize) -> u32,
) -> Option<Result<ObserverSpec, Box<Diagnostic>>> {
    let obs = el.children.iter().find(|c| c.name == "observer")?;
    let child = |n: &str| el.children.iter().find(|c| c.name == n);
    let value = |n: &str| -> Result<Option<(String, Span)>, Box<Diagnostic>> {
        match child(n) {
            None => Ok(None),
            Some(c) => match c.attr("value") {
                Some(v) => Ok(Some((unescape(v), c.span.clone()))),
                None => Err(Box::new(
                    Diagnostic::error(c.span.clone(), format!("`<{n}>` needs a `value` attribute"))
                        .with_label("no value"),
                )),
            },
        }
    };
    let spec = (|| {
        let bad = |span: Span, what: &str, allowed: &str| {
            Box::new(
                Diagnostic::error(span, format!("malformed observer: {what}"))
                    .with_label(format!("expected {allowed}")),
            )
        };
        let points = match value("observer_type")?
            .as_ref()
            .map(|(v, sp)| (v.as_str(), sp.clone()))
        {
            None | Some(("both", _)) => vec![ObservePoint::Before, ObservePoint::After],
            Some(("before", _)) => vec![ObservePoint::Before],
            Some(("after", _)) => vec![ObservePoint::After],
            Some((v, sp)) => {
                return Err(bad(
                    sp,
                    &format!("unknown observer_type `{v}`"),
                    "`before`, `after` or `both`",
                ))
            }
        };
        let data = match value("observer_data")?
            .as_ref()
            .map(|(v, sp)| (v.as_str(), sp.clone()))
        {
            None | Some(("tags", _)) => ObserveData::Tags,
            Some(("labels", _)) => ObserveData::Labels,
            Some(("allvalues", _)) => ObserveData::AllValues,
            Some((v, sp)) => {
                return Err(bad(
                    sp,
                    &format!("unknown observer_data `{v}`"),
                    "`labels`, `tags` or `allvalues`",
                ))
            }
        };
        let code = value("observer_code")?.map(|(v, _)| v);
        let file = value("observer_file")?;
        let address = value("observer_address")?;
        let port = match value("observer_port")?
            .as_ref()
            .map(|(v, sp)| (v.as_str(), sp.clone()))
        {
            None => None,
            Some((v, sp)) => match v.trim().parse::<u16>() {
                Ok(p) if p > 0 => Some(p),
                _ => {
                    return Err(bad(
                        sp,
                        &format!("observer_port `{v}` is not a port"),
                        "a number from 1 to 65535",
                    ))
                }
            },
        };
        let dest = match (file, address, port) {
            (Some((_, sp)), Some(_), _) | (Some((_, sp)), _, Some(_)) => {
                return Err(bad(
                    sp,
                    "both a file and an address",
                    "either `<observer_file>` or `<observer_address>` with `<observer_port>`",
                ))
            }
            (Some((f, _)), None, None) => ObserveDest::File(f),
            (None, Some((_, sp)), None) => {
                return Err(bad(
                    sp,
                    "an address without a port",
                    "`<observer_port value=\"N\" />` beside it",
                ))
            }
            (None, a, Some(port)) => ObserveDest::Tcp {
                host: a.map_or_else(|| "localhost".to_string(), |(a, _)| a),
                port,
            },
            (None, None, None) => ObserveDest::Stderr,
        };
        let interactive = child("observer_interactive").is_some();
        if interactive && !matches!(dest, ObserveDest::Tcp { .. }) {
            return Err(Box::new(Diagnostic::error(
                obs.span.clone(),
                "an interactive observer needs a listener to answer it",
            )
            .with_label("observer_interactive here")
            .with_note(
                "give `<observer_address value=\"HOST\" />` and `<observer_port value=\"N\" />`",
            )));
        }
        Ok(ObserverSpec {
            oid: oid(obs.span.start),
            points,
            data,
            code,
            interactive,
            dest,
            span: obs.span.clone(),
        })
    })();
    Some(spec)
}

/// An attribute value with XML's predefined entities replaced.
fn unescape(v: &str) -> String {
    v.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
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
        Some(el) => Some((
            Block {
                elements: el.children,
            },
            r.pos,
        )),
        None => Some((
            Block {
                elements: Vec::new(),
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
    fn observers_are_scoped_numbered_and_checked() {
        let m = blocks(&[
            (
                &[],
                r#"<metadata>
                  <box name="f"> <observer /> <observer_file value="a&amp;b.log" />
                     <observer_type value="after" /> <observer_data value="labels" /> </box>
                  <net name="n"> <observer /> <observer_port value="7000" />
                     <observer_interactive /> <observer_code value="c" /> </net>
                  <box name="g"> <interface value="C4SNet" /> </box>
                </metadata>"#,
            ),
            (
                &["n"],
                r#"<metadata><box name="f"> <observer /> </box></metadata>"#,
            ),
        ]);
        let f = m.box_observers(&[], "f");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].oid, 1);
        assert_eq!(f[0].points, vec![ObservePoint::After]);
        assert_eq!(f[0].data, ObserveData::Labels);
        assert_eq!(f[0].dest, ObserveDest::File("a&b.log".into()));
        // A box `f` inside `n` has the top-level observer and n's own.
        let inner = m.box_observers(&["n"], "f");
        assert_eq!(inner.iter().map(|s| s.oid).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(inner[1].dest, ObserveDest::Stderr);
        assert_eq!(
            inner[1].points,
            vec![ObservePoint::Before, ObservePoint::After]
        );
        assert_eq!(inner[1].data, ObserveData::Tags);
        assert!(m.box_observers(&[], "g").is_empty());
        let n = m.net_observers(&[], "n");
        assert_eq!(n.len(), 1);
        assert_eq!(n[0].oid, 2);
        assert!(n[0].interactive);
        assert_eq!(n[0].code.as_deref(), Some("c"));
        assert_eq!(
            n[0].dest,
            ObserveDest::Tcp {
                host: "localhost".into(),
                port: 7000
            }
        );
        let mut d = Diagnostics::default();
        m.check_observers(&mut d);
        assert!(!d.has_errors());

        for (bad, says) in [
            (
                r#"<observer_type value="sideways" />"#,
                "unknown observer_type `sideways`",
            ),
            (
                r#"<observer_data value="all" />"#,
                "unknown observer_data `all`",
            ),
            (
                r#"<observer_port value="x" />"#,
                "observer_port `x` is not a port",
            ),
            (
                r#"<observer_address value="h" />"#,
                "an address without a port",
            ),
            (
                r#"<observer_file value="f" /> <observer_port value="1" />"#,
                "both a file and an address",
            ),
            (r#"<observer_interactive />"#, "needs a listener"),
            (r#"<observer_code />"#, "needs a `value` attribute"),
        ] {
            let m = meta(&format!(
                "<metadata><box name=\"f\"><observer />{bad}</box></metadata>"
            ));
            let mut d = Diagnostics::default();
            m.check_observers(&mut d);
            let all = format!("{:?}", d.into_sorted());
            assert!(all.contains(says), "{bad}: {all}");
        }
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
