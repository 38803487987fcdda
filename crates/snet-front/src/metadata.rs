//! The XML-like `<metadata>` block that may open a program.
//!
//! A small, lenient XML reader: elements with attributes, self-closing
//! elements, comments and `<? ?>` processing instructions; text is ignored.
//! Only `interface` values matter to this project (which box-language
//! interface implements a box); every other element (observers, SAC
//! options, ...) is kept in the tree and otherwise ignored.
//!
//! Interface lookup for a box `b` declared inside nets `n1/n2/...`, most
//! specific first: a `<box name="b">` (top level, or inside `<net>` elements
//! whose names all enclose `b`, longer paths winning), then the nearest
//! `<net name="ni">` carrying an `<interface>`, then `<boxdefault>`, then
//! `<default>`, then `C4SNet`.

use crate::diag::{Diagnostic, Diagnostics, Span};

/// The default box-language interface.
pub const DEFAULT_INTERFACE: &str = "C4SNet";

#[derive(Clone, Debug, Default)]
pub struct Metadata {
    pub elements: Vec<Element>,
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

/// A `<box name=..>` mentioned in the metadata, for "no such box" warnings.
pub struct BoxMention<'a> {
    pub name: &'a str,
    pub span: Span,
}

impl Metadata {
    /// The interface of box `name` declared inside the nets `net_path` (outermost first).
    pub fn box_interface(&self, net_path: &[&str], name: &str) -> String {
        let mut best: Option<(usize, &str)> = None; // (path length, value) of the best <box> rule
        let mut net_level: Option<(usize, &str)> = None; // (depth in net_path, value)
        let mut defaults: [Option<&str>; 2] = [None, None]; // boxdefault, default
        self.walk(
            &self.elements,
            &mut Vec::new(),
            &mut |el, path| match el.name.as_str() {
                "box" if el.attr("name") == Some(name) => {
                    if let Some(v) = el.interface() {
                        if path.iter().all(|p| net_path.contains(p))
                            && !matches!(best, Some((n, _)) if path.len() < n)
                        {
                            best = Some((path.len(), v));
                        }
                    }
                }
                "net" => {
                    if let (Some(n), Some(v)) = (el.attr("name"), el.interface()) {
                        if let Some(depth) = net_path.iter().rposition(|p| *p == n) {
                            if !matches!(net_level, Some((d, _)) if depth < d) {
                                net_level = Some((depth, v));
                            }
                        }
                    }
                }
                "boxdefault" if path.is_empty() => defaults[0] = defaults[0].or(el.interface()),
                "default" if path.is_empty() => defaults[1] = defaults[1].or(el.interface()),
                _ => {}
            },
        );
        best.map(|(_, v)| v)
            .or(net_level.map(|(_, v)| v))
            .or(defaults[0])
            .or(defaults[1])
            .unwrap_or(DEFAULT_INTERFACE)
            .to_string()
    }

    /// Every `<box name="...">` element.
    pub fn box_mentions(&self) -> Vec<BoxMention<'_>> {
        let mut out = Vec::new();
        collect_boxes(&self.elements, &mut out);
        out
    }

    fn walk<'a>(
        &'a self,
        els: &'a [Element],
        path: &mut Vec<&'a str>,
        f: &mut dyn FnMut(&'a Element, &[&'a str]),
    ) {
        for el in els {
            f(el, path);
            let pushed = el.name == "net" && el.attr("name").is_some();
            if pushed {
                path.push(el.attr("name").unwrap_or_default());
            }
            self.walk(&el.children, path, f);
            if pushed {
                path.pop();
            }
        }
    }
}

fn collect_boxes<'a>(els: &'a [Element], out: &mut Vec<BoxMention<'a>>) {
    for el in els {
        if el.name == "box" {
            if let Some(n) = el.attr("name") {
                out.push(BoxMention {
                    name: n,
                    span: el.span.clone(),
                });
            }
        }
        collect_boxes(&el.children, out);
    }
}

/// Elements may nest at most this deep (keeps the reader's recursion bounded).
const MAX_NESTING: usize = 64;

/// If the text at `pos` opens a `<metadata>` element, reads it and returns the
/// block and the offset just after `</metadata>`.
pub fn parse(src: &str, pos: usize, diags: &mut Diagnostics) -> Option<(Metadata, usize)> {
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
                Metadata {
                    elements: el.children,
                    span,
                },
                r.pos,
            ))
        }
        None => Some((Metadata::default(), src.len())),
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

    fn meta(src: &str) -> Metadata {
        let mut d = Diagnostics::default();
        let (m, _) = parse(src, 0, &mut d).expect("metadata");
        assert!(!d.has_errors(), "{:?}", d.into_sorted());
        m
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
