//! Interned labels.
//!
//! A [`Label`] is a 32-bit handle: the two top bits hold its [`LabelKind`], the
//! rest an index into a process-wide name table. Labels order by kind first
//! (fields, then tags, then binding tags) and then by interning order, which is
//! all records and variants need: they keep their labels sorted by this order
//! and match by merging two sorted lists.
//!
//! The name table only grows (names are leaked `&'static str`), which bounds it
//! by the number of distinct label names the program and its input mention.

use std::collections::HashMap;
use std::fmt;
use std::sync::{OnceLock, RwLock};

/// What a label names.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LabelKind {
    /// `a`: opaque box-language data.
    Field = 0,
    /// `<t>`: an integer tag.
    Tag = 1,
    /// `<#b>`: a binding tag (an integer that also restricts subtyping).
    BTag = 2,
}

/// An interned label: kind plus name.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Label(u32);

const KIND_SHIFT: u32 = 30;
const INDEX_MASK: u32 = (1 << KIND_SHIFT) - 1;

struct Names {
    index: HashMap<&'static str, u32>,
    names: Vec<&'static str>,
}

fn names() -> &'static RwLock<Names> {
    static NAMES: OnceLock<RwLock<Names>> = OnceLock::new();
    NAMES.get_or_init(|| {
        RwLock::new(Names {
            index: HashMap::new(),
            names: Vec::new(),
        })
    })
}

fn intern(name: &str) -> u32 {
    {
        let table = names().read().unwrap_or_else(|e| e.into_inner());
        if let Some(&i) = table.index.get(name) {
            return i;
        }
    }
    let mut table = names().write().unwrap_or_else(|e| e.into_inner());
    if let Some(&i) = table.index.get(name) {
        return i;
    }
    let i = table.names.len() as u32;
    assert!(i <= INDEX_MASK, "more than 2^30 distinct label names");
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    table.names.push(leaked);
    table.index.insert(leaked, i);
    i
}

impl Label {
    /// A placeholder that names nothing (padding in fixed-size buffers;
    /// never in a record).
    pub const PAD: Label = Label(u32::MAX);

    /// Interns `name` and returns the label of the given kind.
    pub fn new(kind: LabelKind, name: &str) -> Label {
        Label((kind as u32) << KIND_SHIFT | intern(name))
    }
    /// The field `name` (written `name` in S-Net).
    pub fn field(name: &str) -> Label {
        Label::new(LabelKind::Field, name)
    }
    /// The tag `<name>`.
    pub fn tag(name: &str) -> Label {
        Label::new(LabelKind::Tag, name)
    }
    /// The binding tag `<#name>`.
    pub fn btag(name: &str) -> Label {
        Label::new(LabelKind::BTag, name)
    }

    /// Whether the label is a field, a tag or a binding tag.
    pub fn kind(self) -> LabelKind {
        match self.0 >> KIND_SHIFT {
            0 => LabelKind::Field,
            1 => LabelKind::Tag,
            _ => LabelKind::BTag,
        }
    }

    /// Whether the label is a field (its value opaque data, not an integer).
    pub fn is_field(self) -> bool {
        self.kind() == LabelKind::Field
    }

    /// The same name with another kind (`<a>` for `a`, ...).
    pub fn with_kind(self, kind: LabelKind) -> Label {
        Label((kind as u32) << KIND_SHIFT | (self.0 & INDEX_MASK))
    }

    /// The bare name, without `<` `>` or `#`.
    pub fn name(self) -> &'static str {
        let table = names().read().unwrap_or_else(|e| e.into_inner());
        table.names[(self.0 & INDEX_MASK) as usize]
    }

    /// Raw handle, stable for the life of the process.
    pub fn raw(self) -> u32 {
        self.0
    }

    /// The label whose [`Label::raw`] handle is `raw` (a handle this
    /// process made: any other names no label, and its name panics).
    pub fn from_raw(raw: u32) -> Label {
        Label(raw)
    }
}

impl fmt::Display for Label {
    /// S-Net surface syntax: `a`, `<t>`, `<#b>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            LabelKind::Field => write!(f, "{}", self.name()),
            LabelKind::Tag => write!(f, "<{}>", self.name()),
            LabelKind::BTag => write!(f, "<#{}>", self.name()),
        }
    }
}

impl fmt::Debug for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_stable_and_kinds_differ() {
        let a = Label::field("a");
        let ta = Label::tag("a");
        assert_eq!(a, Label::field("a"));
        assert_ne!(a, ta);
        assert_eq!(a.with_kind(LabelKind::Tag), ta);
        assert_eq!(ta.name(), "a");
        assert_eq!(format!("{a} {ta} {}", Label::btag("a")), "a <a> <#a>");
        assert!(a < ta && ta < Label::btag("a"));
    }
}
