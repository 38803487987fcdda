//! Fields: opaque handles over values a language interface owns.
//!
//! S-Net never looks inside a field. A [`Field`] is a cheap, shared handle
//! (flow inheritance and filters share, never copy) that is either
//! - *local*: an `Arc<dyn FieldData>`, the value itself, kept by the
//!   language interface that made it (the "field store": C4SNet keeps typed
//!   arrays, text of other interfaces is kept verbatim), or
//! - *remote* ([`RemoteField`]): a reference to a value that lives on
//!   another node of a distributed run (thesis 4.2.4, 6.1.3: the data
//!   manager). Its bytes are fetched only when a box on this node needs
//!   them, then cached in the handle.
//!
//! The store's hooks are the [`FieldData`] methods (serialise: `encode`;
//! copy: `deep_copy`; free: dropping the last `Arc`) and a [`FieldCodec`]
//! per codec name (deserialise), collected in [`Codecs`]. The engine moves
//! bytes between nodes with these hooks and never interprets them, so a
//! store may make `encode` write an offset into a shared segment instead
//! of the value (the shared-memory transport's zero-copy mode).

use std::alloc::{self, Layout};
use std::any::Any;
use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// C4SNet element types, in the order (and with the values) of `c4snet_type_t`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[repr(C)]
pub enum CType {
    UChar = 0,
    Char,
    UShort,
    Short,
    UInt,
    Int,
    ULong,
    Long,
    Float,
    Double,
    LDouble,
    Pointer,
}

impl CType {
    pub const ALL: [CType; 12] = [
        CType::UChar,
        CType::Char,
        CType::UShort,
        CType::Short,
        CType::UInt,
        CType::Int,
        CType::ULong,
        CType::Long,
        CType::Float,
        CType::Double,
        CType::LDouble,
        CType::Pointer,
    ];

    pub fn from_raw(v: i32) -> Option<CType> {
        CType::ALL.get(usize::try_from(v).ok()?).copied()
    }

    /// Bytes per element on this platform (x86_64/aarch64 LP64; `long double`
    /// is 16 bytes of storage).
    pub fn size(self) -> usize {
        match self {
            CType::UChar | CType::Char => 1,
            CType::UShort | CType::Short => 2,
            CType::UInt | CType::Int | CType::Float => 4,
            CType::ULong | CType::Long | CType::Double | CType::Pointer => 8,
            CType::LDouble => 16,
        }
    }

    /// The name used in the textual record format: `(unsigned short)...`.
    pub fn c_name(self) -> &'static str {
        match self {
            CType::UChar => "unsigned char",
            CType::Char => "char",
            CType::UShort => "unsigned short",
            CType::Short => "short",
            CType::UInt => "unsigned int",
            CType::Int => "int",
            CType::ULong => "unsigned long",
            CType::Long => "long",
            CType::Float => "float",
            CType::Double => "double",
            CType::LDouble => "long double",
            CType::Pointer => "pointer",
        }
    }

    pub fn from_c_name(s: &str) -> Option<CType> {
        CType::ALL.iter().copied().find(|t| t.c_name() == s)
    }
}

/// A C4SNet typed array: `len` elements of `ctype`, 16-byte aligned.
pub struct CData {
    ctype: CType,
    len: usize,
    ptr: NonNull<u8>,
}

// SAFETY: CData owns its buffer exclusively; the C4SNet contract lets a box
// write into a field only between allocating it and handing it to C4SNetOut,
// i.e. while no other thread can reach it. Shared reads are plain byte reads.
unsafe impl Send for CData {}
// SAFETY: see the `Send` impl: concurrent access is read-only by contract.
unsafe impl Sync for CData {}

impl CData {
    fn layout(ctype: CType, len: usize) -> Layout {
        let bytes = ctype
            .size()
            .checked_mul(len.max(1))
            .expect("field size overflows");
        Layout::from_size_align(bytes, 16).expect("field layout")
    }

    /// A zero-filled array of `len` elements.
    pub fn zeroed(ctype: CType, len: usize) -> CData {
        let layout = CData::layout(ctype, len);
        // SAFETY: the layout has a non-zero size (len.max(1) elements of size >= 1).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| alloc::handle_alloc_error(layout));
        CData { ctype, len, ptr }
    }

    /// An array holding a copy of `bytes` (`bytes.len()` must be `len * size`).
    pub fn from_bytes(ctype: CType, len: usize, bytes: &[u8]) -> CData {
        let mut d = CData::zeroed(ctype, len);
        d.bytes_mut().copy_from_slice(&bytes[..ctype.size() * len]);
        d
    }

    pub fn ctype(&self) -> CType {
        self.ctype
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: ptr points to an allocation of at least len*size bytes, initialised (zeroed or copied).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len * self.ctype.size()) }
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, and `&mut self` gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len * self.ctype.size()) }
    }
}

impl Clone for CData {
    fn clone(&self) -> CData {
        CData::from_bytes(self.ctype, self.len, self.bytes())
    }
}

impl Drop for CData {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with exactly this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), CData::layout(self.ctype, self.len)) }
    }
}

/// A field value, as a language interface keeps it: the hooks the
/// engine calls without knowing what the value is.
pub trait FieldData: Any + Send + Sync {
    /// The box-language interface the record format names (`C4SNet`, ...).
    fn interface(&self) -> &str;
    /// The name of the [`FieldCodec`] that decodes what [`FieldData::encode`] writes.
    fn codec(&self) -> &str;
    /// Serialise: the bytes that `encode` appends (statistics, inline thresholds).
    fn encoded_len(&self) -> usize;
    /// Serialise: appends the value's bytes for another node.
    fn encode(&self, out: &mut Vec<u8>);
    /// `Err` (with a message naming who made it) if the value must not
    /// leave this process (a C4SNet `CTYPE_pointer`).
    fn portable(&self) -> Result<(), String> {
        Ok(())
    }
    /// Copy: a new value with the same contents, shared with nobody.
    fn deep_copy(&self) -> Arc<dyn FieldData>;
    fn as_any(&self) -> &dyn Any;
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

/// Deserialise: turns the bytes [`FieldData::encode`] wrote back into a value.
pub trait FieldCodec: Send + Sync {
    /// The name [`FieldData::codec`] returns for the values it decodes.
    fn name(&self) -> &str;
    fn decode(&self, bytes: &[u8]) -> Result<Arc<dyn FieldData>, String>;
}

/// The codecs of a run, by name. Every node of a run must hold the same set.
#[derive(Clone)]
pub struct Codecs(Vec<Arc<dyn FieldCodec>>);

impl Default for Codecs {
    /// The built-in codec of [`FieldValue`] (text and C4SNet data).
    fn default() -> Codecs {
        Codecs(vec![Arc::new(ValueCodec)])
    }
}

impl fmt::Debug for Codecs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|c| c.name()))
            .finish()
    }
}

impl Codecs {
    /// Adds (or replaces) a codec.
    pub fn add(&mut self, codec: Arc<dyn FieldCodec>) {
        self.0.retain(|c| c.name() != codec.name());
        self.0.push(codec);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn FieldCodec>> {
        self.0.iter().find(|c| c.name() == name)
    }

    /// Decodes bytes written by a value whose codec is `name`.
    pub fn decode(&self, name: &str, bytes: &[u8]) -> Result<Arc<dyn FieldData>, String> {
        match self.get(name) {
            Some(c) => c.decode(bytes),
            None => Err(format!("no field codec `{name}` in this program")),
        }
    }
}

/// What a field holds when it is text or a C4SNet array.
///
/// (Transitional: the C4SNet half moves to the `c4snet` crate.)
pub enum FieldValue {
    /// Text exactly as read from a record stream, with its interface and mode.
    Text {
        interface: Box<str>,
        binary: bool,
        text: Box<str>,
    },
    /// A C4SNet typed array.
    Data(CData),
}

const VALUE_CODEC: &str = "snet-value";

impl FieldData for FieldValue {
    fn interface(&self) -> &str {
        match self {
            FieldValue::Text { interface, .. } => interface,
            FieldValue::Data(_) => "C4SNet",
        }
    }
    fn codec(&self) -> &str {
        VALUE_CODEC
    }
    fn encoded_len(&self) -> usize {
        match self {
            FieldValue::Text {
                interface, text, ..
            } => 2 + 4 + interface.len() + text.len(),
            FieldValue::Data(d) => 2 + 8 + d.bytes().len(),
        }
    }
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            FieldValue::Text {
                interface,
                binary,
                text,
            } => {
                out.push(0);
                out.push(*binary as u8);
                out.extend_from_slice(&(interface.len() as u32).to_le_bytes());
                out.extend_from_slice(interface.as_bytes());
                out.extend_from_slice(text.as_bytes());
            }
            FieldValue::Data(d) => {
                out.push(1);
                out.push(d.ctype as u8);
                out.extend_from_slice(&(d.len as u64).to_le_bytes());
                out.extend_from_slice(d.bytes());
            }
        }
    }
    fn portable(&self) -> Result<(), String> {
        match self {
            FieldValue::Data(d) if d.ctype == CType::Pointer => Err(
                "it holds C4SNet pointers (CTYPE_pointer), which mean nothing on another node"
                    .into(),
            ),
            _ => Ok(()),
        }
    }
    fn deep_copy(&self) -> Arc<dyn FieldData> {
        Arc::new(match self {
            FieldValue::Text {
                interface,
                binary,
                text,
            } => FieldValue::Text {
                interface: interface.clone(),
                binary: *binary,
                text: text.clone(),
            },
            FieldValue::Data(d) => FieldValue::Data(d.clone()),
        })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

struct ValueCodec;

impl FieldCodec for ValueCodec {
    fn name(&self) -> &str {
        VALUE_CODEC
    }
    fn decode(&self, b: &[u8]) -> Result<Arc<dyn FieldData>, String> {
        let bad = || "truncated field bytes".to_string();
        match b.first() {
            Some(0) => {
                let binary = *b.get(1).ok_or_else(bad)? != 0;
                let n = u32::from_le_bytes(b.get(2..6).ok_or_else(bad)?.try_into().expect("4"))
                    as usize;
                let interface = b.get(6..6 + n).ok_or_else(bad)?;
                let text = &b[6 + n..];
                let s = |x: &[u8]| {
                    std::str::from_utf8(x)
                        .map(Box::from)
                        .map_err(|_| "field text is not UTF-8".to_string())
                };
                Ok(Arc::new(FieldValue::Text {
                    interface: s(interface)?,
                    binary,
                    text: s(text)?,
                }))
            }
            Some(1) => {
                let t = CType::from_raw(i32::from(*b.get(1).ok_or_else(bad)?))
                    .ok_or("bad C4SNet type")?;
                let len = u64::from_le_bytes(b.get(2..10).ok_or_else(bad)?.try_into().expect("8"))
                    as usize;
                let bytes = &b[10..];
                if Some(bytes.len()) != len.checked_mul(t.size()) {
                    return Err(bad());
                }
                Ok(Arc::new(FieldValue::Data(CData::from_bytes(t, len, bytes))))
            }
            _ => Err("unknown field encoding".into()),
        }
    }
}

/// Gives a remote reference's weight back to the field's home node when
/// the last handle on this node is dropped (the distribution layer).
pub trait ReleaseRemote: Send + Sync {
    fn release(&self, home: u32, id: u64, weight: u64);
}

/// A reference to a field that lives on node `home` (the data manager).
///
/// References are counted by *weight* (weighted reference counting): the
/// home issues a weight with every reference it sends, a node forwarding a
/// reference gives away part of the weight it holds, and dropping the last
/// handle gives the rest back. The home frees the value when all weight it
/// issued has come back. See `snet_engine::dist::fields`.
pub struct RemoteField {
    pub home: u32,
    pub id: u64,
    /// Interface and codec of the value, and its encoded size.
    pub interface: Box<str>,
    pub len: u64,
    weight: AtomicU64,
    cache: OnceLock<Arc<dyn FieldData>>,
    release: Arc<dyn ReleaseRemote>,
}

impl RemoteField {
    pub fn new(
        home: u32,
        id: u64,
        interface: &str,
        len: u64,
        weight: u64,
        release: Arc<dyn ReleaseRemote>,
    ) -> RemoteField {
        RemoteField {
            home,
            id,
            interface: interface.into(),
            len,
            weight: AtomicU64::new(weight),
            cache: OnceLock::new(),
            release,
        }
    }

    /// The value, once fetched.
    pub fn cached(&self) -> Option<&Arc<dyn FieldData>> {
        self.cache.get()
    }

    /// Stores the fetched value (the first store wins).
    pub fn fill(&self, v: Arc<dyn FieldData>) {
        let _ = self.cache.set(v);
    }

    /// Adds weight (another reference to the same field arrived).
    pub fn add_weight(&self, w: u64) {
        self.weight.fetch_add(w, Ordering::Relaxed);
    }

    /// Takes half the weight held, for a reference sent on; `None` when
    /// only one unit is left (the caller must send another kind of reference).
    pub fn split_weight(&self) -> Option<u64> {
        self.weight
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
                (w >= 2).then(|| w - w / 2)
            })
            .ok()
            .map(|w| w / 2)
    }

    pub fn weight(&self) -> u64 {
        self.weight.load(Ordering::Relaxed)
    }
}

impl Drop for RemoteField {
    fn drop(&mut self) {
        let w = *self.weight.get_mut();
        if w > 0 {
            self.release.release(self.home, self.id, w);
        }
    }
}

#[derive(Clone)]
enum Repr {
    Local(Arc<dyn FieldData>),
    Remote(Arc<RemoteField>),
}

/// A shared field handle.
#[derive(Clone)]
pub struct Field(Repr);

impl Field {
    /// A local field holding `value`.
    pub fn new(value: Arc<dyn FieldData>) -> Field {
        Field(Repr::Local(value))
    }

    pub fn remote(r: Arc<RemoteField>) -> Field {
        Field(Repr::Remote(r))
    }

    pub fn text(interface: &str, binary: bool, text: &str) -> Field {
        Field::new(Arc::new(FieldValue::Text {
            interface: interface.into(),
            binary,
            text: text.into(),
        }))
    }

    pub fn data(d: CData) -> Field {
        Field::new(Arc::new(FieldValue::Data(d)))
    }

    /// The value, if it is on this node (a local field, or a remote one fetched already).
    pub fn get(&self) -> Option<&Arc<dyn FieldData>> {
        match &self.0 {
            Repr::Local(v) => Some(v),
            Repr::Remote(r) => r.cached(),
        }
    }

    /// The remote reference, if the value lives on another node.
    pub fn as_remote(&self) -> Option<&Arc<RemoteField>> {
        match &self.0 {
            Repr::Local(_) => None,
            Repr::Remote(r) => Some(r),
        }
    }

    /// The local value, if this is a local field.
    pub fn as_local(&self) -> Option<&Arc<dyn FieldData>> {
        match &self.0 {
            Repr::Local(v) => Some(v),
            Repr::Remote(_) => None,
        }
    }

    /// The value as a [`FieldValue`] (text or C4SNet data).
    ///
    /// # Panics
    /// If the value is not on this node or is another kind of value (the
    /// engine fetches every field before a box or the output sees it).
    pub fn value(&self) -> &FieldValue {
        self.get()
            .and_then(|v| v.as_any().downcast_ref::<FieldValue>())
            .expect("a local text or C4SNet field")
    }

    /// Are two handles the same value (not just equal contents)?
    pub fn same(&self, other: &Field) -> bool {
        match (&self.0, &other.0) {
            (Repr::Local(a), Repr::Local(b)) => Arc::ptr_eq(a, b),
            (Repr::Remote(a), Repr::Remote(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl fmt::Debug for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Remote(r) if r.cached().is_none() => {
                write!(f, "<field {} on node {}>", r.id, r.home)
            }
            _ => match self
                .get()
                .and_then(|v| v.as_any().downcast_ref::<FieldValue>())
            {
                Some(FieldValue::Text { text, .. }) => write!(f, "{text:?}"),
                Some(FieldValue::Data(d)) => write!(f, "({}[{}])..", d.ctype.c_name(), d.len),
                None => write!(f, "<{} field>", self.get().map_or("?", |v| v.interface())),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_survive_the_codec() {
        let codecs = Codecs::default();
        for f in [
            Field::text("SAC", true, "abc"),
            Field::data(CData::from_bytes(CType::Int, 2, &[1, 0, 0, 0, 2, 0, 0, 0])),
        ] {
            let v = f.get().unwrap();
            let mut b = Vec::new();
            v.encode(&mut b);
            assert_eq!(b.len(), v.encoded_len());
            let back = codecs.decode(v.codec(), &b).unwrap();
            let mut b2 = Vec::new();
            back.encode(&mut b2);
            assert_eq!(b, b2);
            assert_eq!(back.interface(), v.interface());
        }
        let p = Field::data(CData::zeroed(CType::Pointer, 1));
        assert!(p.get().unwrap().portable().is_err());
    }

    #[test]
    fn weight_splits_and_returns_on_drop() {
        use std::sync::Mutex;
        struct Log(Mutex<Vec<(u32, u64, u64)>>);
        impl ReleaseRemote for Log {
            fn release(&self, home: u32, id: u64, weight: u64) {
                self.0.lock().unwrap().push((home, id, weight));
            }
        }
        let log = Arc::new(Log(Mutex::new(Vec::new())));
        let r = RemoteField::new(2, 7, "C4SNet", 8, 5, log.clone());
        assert_eq!(r.split_weight(), Some(2));
        assert_eq!(r.weight(), 3);
        r.add_weight(1);
        assert_eq!(r.split_weight(), Some(2));
        assert_eq!(r.split_weight(), Some(1));
        assert_eq!(r.split_weight(), None);
        drop(r);
        assert_eq!(*log.0.lock().unwrap(), vec![(2, 7, 1)]);
    }
}
