//! Records and fields as a Rust program sees them.
//!
//! A [`Record`] is a set of labelled values: fields (opaque data, here
//! C4SNet typed arrays), tags `<t>` and binding tags `<#b>` (integers). A
//! [`Field`] holds a typed array of one of the [`Element`] types; it is
//! the value the engine's field store already knows (C4SNet data), so a
//! field made by a Rust box crosses nodes, and meets C boxes and the XML
//! record format, exactly as one made by a C box.

use std::fmt;

use c4snet::{C4Data, CData, CType};
use snet_core::{Label, LabelKind, Value};

mod sealed {
    pub trait Sealed {}
}

/// An element type of a [`Field`]: a Rust number with a C4SNet type
/// (`i32` is C's `int`, `f64` its `double`, `u8` its `unsigned char`, ...).
///
/// Sealed: the set is C4SNet's (`long double` and pointers have no Rust
/// type here, and never reach a Rust box as a slice).
pub trait Element: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The C4SNet type with this representation.
    #[doc(hidden)]
    const CTYPE: CType;
}

macro_rules! element {
    ($($t:ty => $c:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const CTYPE: CType = CType::$c;
        }
    )*};
}

element! {
    u8 => UChar, i8 => Char, u16 => UShort, i16 => Short, u32 => UInt,
    i32 => Int, u64 => ULong, i64 => Long, f32 => Float, f64 => Double,
}

/// A field's value: a typed array (C4SNet data), shared by reference
/// count; cloning a `Field` shares it.
///
/// ```
/// use snet::Field;
///
/// let f = Field::from_slice(&[1.5f64, 2.5]);
/// assert_eq!(f.as_slice::<f64>(), Some(&[1.5, 2.5][..]));
/// assert_eq!(f.as_slice::<i32>(), None); // another element type
/// assert_eq!(Field::scalar(7i32).as_slice::<i32>(), Some(&[7][..]));
/// assert_eq!(Field::text("hi").to_text().as_deref(), Some("hi"));
/// ```
#[derive(Clone)]
#[repr(transparent)]
pub struct Field(pub(crate) snet_core::Field);

impl Field {
    /// A field holding a copy of `values`.
    pub fn from_slice<T: Element>(values: &[T]) -> Field {
        // SAFETY: `T` is a plain number type (sealed `Element`), so its
        // values are `size_of_val(values)` initialised bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
        };
        Field(C4Data::new(CData::from_bytes(T::CTYPE, values.len(), bytes)).into_field())
    }

    /// A field holding one value (an array of one element, which the
    /// record format writes without a length: `(int)7`).
    pub fn scalar<T: Element>(value: T) -> Field {
        Field::from_slice(&[value])
    }

    /// A field holding the bytes of `text` as C `char`s (not
    /// NUL-terminated: a C box reads it with `C4SNetGetString`).
    pub fn text(text: &str) -> Field {
        let chars: Vec<i8> = text.bytes().map(|b| b as i8).collect();
        Field::from_slice(&chars)
    }

    fn data(&self) -> Option<&CData> {
        c4snet::data_of(&self.0)
    }

    /// The elements, if the field holds an array of `T` (`None` for
    /// another element type).
    pub fn as_slice<T: Element>(&self) -> Option<&[T]> {
        let d = self.data()?;
        if d.ctype() != T::CTYPE {
            return None;
        }
        // SAFETY: the buffer holds `len` initialised elements of the
        // C type `T` stands for, 16-byte aligned (`CData`'s invariant),
        // and lives as long as `self` (the `Arc` it is in).
        Some(unsafe { std::slice::from_raw_parts(d.as_ptr().cast::<T>(), d.len()) })
    }

    /// The text of a `char` or `unsigned char` array (invalid UTF-8
    /// replaced), `None` for other element types.
    pub fn to_text(&self) -> Option<String> {
        let d = self.data()?;
        match d.ctype() {
            CType::Char | CType::UChar => Some(String::from_utf8_lossy(d.bytes()).into_owned()),
            _ => None,
        }
    }

    /// The number of elements (`None` if the value is not on this node,
    /// which a box and a run's output never see).
    pub fn len(&self) -> Option<usize> {
        self.data().map(CData::len)
    }

    /// Whether the array is empty (see [`Field::len`]).
    pub fn is_empty(&self) -> Option<bool> {
        self.len().map(|n| n == 0)
    }

    /// The C name of the element type (`int`, `double`, ...), as the
    /// record format writes it.
    pub fn element_type(&self) -> Option<&'static str> {
        self.data().map(|d| d.ctype().c_name())
    }
}

impl fmt::Debug for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.data() {
            Some(d) => write!(f, "Field({}[{}])", d.ctype().c_name(), d.len()),
            None => write!(f, "Field({:?})", self.0),
        }
    }
}

impl PartialEq for Field {
    /// Same element type and same bytes.
    fn eq(&self, other: &Field) -> bool {
        match (self.data(), other.data()) {
            (Some(a), Some(b)) => {
                a.ctype() == b.ctype() && a.len() == b.len() && a.bytes() == b.bytes()
            }
            _ => self.0.same(&other.0),
        }
    }
}

/// A record: fields, tags and binding tags, each label at most once.
///
/// ```
/// use snet::{Field, Record};
///
/// let r = Record::new()
///     .with_field("x", Field::scalar(2.0f64))
///     .with_tag("n", 3)
///     .with_btag("id", 9);
/// assert_eq!(r.tag("n"), Some(3));
/// assert_eq!(r.tag("id"), Some(9)); // a binding tag is a tag too
/// assert_eq!(r.field("x").and_then(|f| f.as_slice::<f64>()), Some(&[2.0][..]));
/// assert_eq!(r.to_string(), "{x, <n>=3, <#id>=9}");
/// ```
#[derive(Clone, Default)]
#[repr(transparent)]
pub struct Record(pub(crate) snet_core::Record);

fn find(rec: &snet_core::Record, name: &str, kinds: &[LabelKind]) -> Option<Label> {
    rec.labels()
        .find(|l| kinds.contains(&l.kind()) && l.name() == name)
}

impl Record {
    /// `r` seen as a `&Record` (the wrapper is a transparent newtype).
    pub(crate) fn view(r: &snet_core::Record) -> &Record {
        // SAFETY: `Record` is `#[repr(transparent)]` over `snet_core::Record`.
        unsafe { &*(r as *const snet_core::Record).cast::<Record>() }
    }

    /// An empty record.
    pub fn new() -> Record {
        Record(snet_core::Record::new())
    }

    /// With field `name` set to `value` (replacing any field of that name).
    pub fn with_field(mut self, name: &str, value: Field) -> Record {
        self.set_field(name, value);
        self
    }

    /// With tag `<name>` set to `value`.
    pub fn with_tag(mut self, name: &str, value: i64) -> Record {
        self.set_tag(name, value);
        self
    }

    /// With binding tag `<#name>` set to `value`.
    pub fn with_btag(mut self, name: &str, value: i64) -> Record {
        self.0.set(Label::btag(name), Value::Int(value));
        self
    }

    /// Sets field `name`.
    pub fn set_field(&mut self, name: &str, value: Field) {
        self.0.set(Label::field(name), Value::Field(value.0));
    }

    /// Sets tag `<name>`.
    pub fn set_tag(&mut self, name: &str, value: i64) {
        self.0.set(Label::tag(name), Value::Int(value));
    }

    /// The value of tag `<name>` or binding tag `<#name>`.
    pub fn tag(&self, name: &str) -> Option<i64> {
        let l = find(&self.0, name, &[LabelKind::Tag, LabelKind::BTag])?;
        self.0.int(l)
    }

    /// Field `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        let l = find(&self.0, name, &[LabelKind::Field])?;
        match self.0.get(l)? {
            Value::Field(f) => Some(Field::wrap_ref(f)),
            Value::Int(_) => None,
        }
    }

    /// The labels, in the record's order, as S-Net writes them (`x`,
    /// `<t>`, `<#b>`).
    pub fn labels(&self) -> Vec<String> {
        self.0.labels().map(label_text).collect()
    }

    /// The number of labels.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the record has no labels.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

pub(crate) fn label_text(l: Label) -> String {
    match l.kind() {
        LabelKind::Field => l.name().to_string(),
        LabelKind::Tag => format!("<{}>", l.name()),
        LabelKind::BTag => format!("<#{}>", l.name()),
    }
}

impl fmt::Display for Record {
    /// `{x, <n>=3}`: field names, then tags with their values, in the
    /// record's order.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, (l, v)) in self.0.entries().iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match v {
                Value::Int(n) => write!(f, "{}={n}", label_text(*l))?,
                Value::Field(_) => f.write_str(&label_text(*l))?,
            }
        }
        f.write_str("}")
    }
}

impl fmt::Debug for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Field {
    /// `f` seen as a `&Field` (the wrapper is a transparent newtype).
    fn wrap_ref(f: &snet_core::Field) -> &Field {
        // SAFETY: `Field` is `#[repr(transparent)]` over `snet_core::Field`,
        // so the two references have one layout and validity.
        unsafe { &*(f as *const snet_core::Field).cast::<Field>() }
    }
}
