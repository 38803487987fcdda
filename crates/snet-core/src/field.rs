//! Fields: opaque handles over values a language interface owns.
//!
//! S-Net never looks inside a field. A [`Field`] is a cheap, shared handle
//! (flow inheritance and filters share, never copy) that is either
//! - *local*: an `Arc<dyn FieldData>`, the value itself, kept in the store
//!   of the language interface that made it (the `c4snet` crate keeps
//!   C4SNet typed arrays), or
//! - *remote* ([`RemoteField`]): a reference to a value that lives on
//!   another node of a distributed run (thesis 4.2.4, 6.1.3: the data
//!   manager). Its bytes are fetched only when a box on this node needs
//!   them, then cached in the handle.
//!
//! The store's hooks are the [`FieldData`] methods (serialise:
//! `encode_meta` and `body`; copy: `deep_copy`; free: dropping the last
//! `Arc`) and a [`FieldCodec`] per codec name (deserialise), collected in
//! [`Codecs`] (the run's set is `snet_engine::Config::codecs`; each
//! language interface adds its own).
//!
//! A serialised value has two parts: a small *meta* part the value writes
//! (C4SNet: the element type and count) and a *body*, the value's own
//! memory (C4SNet: the array's bytes). The engine puts the meta in a
//! message header and hands the body to the transport as it is, so a
//! value's bytes are sent straight from its memory; the receiving
//! transport receives the body into a [`FieldBytes`], which the codec
//! adopts as the new value's storage: no pack or unpack copy on either
//! side. The engine moves these bytes and never interprets them, so a
//! store may make the meta an offset into a shared segment and the body
//! empty (the shared-memory transport's zero-copy mode).
//!
//! This crate knows no box language. Its one value type is [`TextField`]:
//! a value of any interface kept as the exact text it was read as (what the
//! record reader makes of a field whose interface has no text codec
//! registered), with the codec [`TEXT_CODEC`], the only one in
//! [`Codecs::default`].

use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use crate::{FieldBytes, Rank};

/// A field value, as a language interface keeps it: the hooks the
/// engine calls without knowing what the value is.
pub trait FieldData: Any + Send + Sync {
    /// The box-language interface the record format names (`C4SNet`, ...).
    fn interface(&self) -> &str;
    /// The name of the [`FieldCodec`] that decodes what
    /// [`FieldData::encode_meta`] and [`FieldData::body`] give.
    fn codec(&self) -> &str;
    /// Serialise: appends the meta part (what the codec needs besides the
    /// body to rebuild the value; small, copied into message headers).
    fn encode_meta(&self, out: &mut Vec<u8>);
    /// Serialise: the body, the value's own bytes (sent from here as they
    /// are; the codec adopts the received copy as the new value's storage).
    fn body(&self) -> &[u8];
    /// Serialise: the size of meta and body together (statistics, inline
    /// thresholds). The default encodes the meta to measure it; values
    /// that know the size cheaply say so.
    fn encoded_len(&self) -> usize {
        let mut meta = Vec::new();
        self.encode_meta(&mut meta);
        meta.len() + self.body().len()
    }
    /// `Err` if the value must not leave this process (a C4SNet
    /// `CTYPE_pointer`).
    fn portable(&self) -> Result<(), NotPortable> {
        Ok(())
    }
    /// Copy: a new value with the same contents, shared with nobody.
    fn deep_copy(&self) -> Arc<dyn FieldData>;
    /// The remote reference this value stands for, if it is one (only
    /// [`RemoteField`] says yes).
    fn remote(&self) -> Option<&RemoteField> {
        None
    }
    /// The value as [`Any`], so that its language interface can downcast it
    /// to its own type ([`Field::downcast_ref`]); implementations return `self`.
    fn as_any(&self) -> &dyn Any;
    /// As [`FieldData::as_any`] for a shared handle, so that the value can be
    /// downcast without a copy; implementations return `self`.
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
    /// A short description for `Debug` output (default: `<INTERFACE field>`).
    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} field>", self.interface())
    }
}

/// Deserialise: turns what [`FieldData::encode_meta`] and
/// [`FieldData::body`] gave back into a value.
pub trait FieldCodec: Send + Sync {
    /// The name [`FieldData::codec`] returns for the values it decodes.
    fn name(&self) -> &str;
    /// A value from its meta part and its body; the value may keep `body`
    /// as its storage (no copy).
    fn decode(&self, meta: &[u8], body: FieldBytes) -> Result<Arc<dyn FieldData>, DecodeError>;
}

/// Why a field value must not leave its process ([`FieldData::portable`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotPortable {
    /// What the value holds that cannot travel (e.g. `C4SNet pointers
    /// (CTYPE_pointer)`).
    pub holds: &'static str,
    /// The box that made the value, if known.
    pub made_by: Option<String>,
}

impl fmt::Display for NotPortable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.made_by {
            Some(name) => write!(f, "field made by box `{name}` holds {}", self.holds)?,
            None => write!(f, "field holds {}", self.holds)?,
        }
        f.write_str(", which cannot be sent to another node")
    }
}

impl std::error::Error for NotPortable {}

/// Why received field bytes do not make a value ([`FieldCodec::decode`]).
#[derive(Clone, Debug)]
pub enum DecodeError {
    /// No codec of this name in the program.
    UnknownCodec(String),
    /// The meta part or the body is cut short or too long.
    Truncated,
    /// Text that is not UTF-8.
    NotUtf8,
    /// Malformed in the codec's own terms (its typed error).
    Invalid(Arc<dyn std::error::Error + Send + Sync>),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::UnknownCodec(name) => write!(f, "no field codec `{name}` in this program"),
            DecodeError::Truncated => f.write_str("truncated field bytes"),
            DecodeError::NotUtf8 => f.write_str("field text is not UTF-8"),
            DecodeError::Invalid(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Errors compare by kind, and a codec's own errors by their text.
impl PartialEq for DecodeError {
    fn eq(&self, other: &DecodeError) -> bool {
        match (self, other) {
            (DecodeError::UnknownCodec(a), DecodeError::UnknownCodec(b)) => a == b,
            (DecodeError::Truncated, DecodeError::Truncated) => true,
            (DecodeError::NotUtf8, DecodeError::NotUtf8) => true,
            (DecodeError::Invalid(a), DecodeError::Invalid(b)) => a.to_string() == b.to_string(),
            _ => false,
        }
    }
}

impl Eq for DecodeError {}

/// The codecs of a run, by name. Every node of a run must hold the same set.
#[derive(Clone)]
pub struct Codecs(Vec<Arc<dyn FieldCodec>>);

impl Default for Codecs {
    /// The codec of [`TextField`] only.
    fn default() -> Codecs {
        Codecs(vec![Arc::new(TextFieldCodec)])
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

    /// The codec registered under `name`, if any.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn FieldCodec>> {
        self.0.iter().find(|c| c.name() == name)
    }

    /// Decodes the meta part and body of a value whose codec is `name`.
    pub fn decode(
        &self,
        name: &str,
        meta: &[u8],
        body: FieldBytes,
    ) -> Result<Arc<dyn FieldData>, DecodeError> {
        match self.get(name) {
            Some(c) => c.decode(meta, body),
            None => Err(DecodeError::UnknownCodec(name.to_string())),
        }
    }
}

/// A value of any interface kept as the exact text it was read as from a
/// record stream, with its interface and mode (`binary`: read from a
/// `mode="binary"` record). The record writer writes it back verbatim
/// unless a text codec of its interface is registered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextField {
    interface: Box<str>,
    binary: bool,
    text: Box<str>,
}

/// The codec name of [`TextField`].
pub const TEXT_CODEC: &str = "text";

impl TextField {
    /// The value of interface `interface` read as `text` (in binary mode if
    /// `binary`); the text is kept exactly as given.
    pub fn new(interface: &str, binary: bool, text: &str) -> TextField {
        TextField {
            interface: interface.into(),
            binary,
            text: text.into(),
        }
    }

    /// The name of the language interface the value belongs to (`C4SNet`).
    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// Read in binary mode?
    pub fn binary(&self) -> bool {
        self.binary
    }

    /// The text as it was read, written back verbatim.
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl FieldData for TextField {
    fn interface(&self) -> &str {
        &self.interface
    }
    fn codec(&self) -> &str {
        TEXT_CODEC
    }
    fn encoded_len(&self) -> usize {
        1 + 4 + self.interface.len() + self.text.len()
    }
    /// `[binary: u8][interface length: u32 LE][interface]`.
    fn encode_meta(&self, out: &mut Vec<u8>) {
        out.push(u8::from(self.binary));
        out.extend_from_slice(&(self.interface.len() as u32).to_le_bytes());
        out.extend_from_slice(self.interface.as_bytes());
    }
    /// The text.
    fn body(&self) -> &[u8] {
        self.text.as_bytes()
    }
    fn deep_copy(&self) -> Arc<dyn FieldData> {
        Arc::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.text)
    }
}

struct TextFieldCodec;

impl FieldCodec for TextFieldCodec {
    fn name(&self) -> &str {
        TEXT_CODEC
    }
    fn decode(&self, meta: &[u8], body: FieldBytes) -> Result<Arc<dyn FieldData>, DecodeError> {
        let binary = *meta.first().ok_or(DecodeError::Truncated)? != 0;
        let n = meta.get(1..5).ok_or(DecodeError::Truncated)?;
        let n = u32::from_le_bytes(n.try_into().expect("4")) as usize;
        if meta.len() != 5 + n {
            return Err(DecodeError::Truncated);
        }
        let interface = &meta[5..];
        fn s(x: &[u8]) -> Result<&str, DecodeError> {
            std::str::from_utf8(x).map_err(|_| DecodeError::NotUtf8)
        }
        // The text is copied: a `TextField` keeps a `Box<str>`.
        Ok(Arc::new(TextField::new(s(interface)?, binary, s(&body)?)))
    }
}

/// Gives a remote reference's weight back to the field's home node when
/// the last handle on this node is dropped (the distribution layer).
pub trait ReleaseRemote: Send + Sync {
    /// Gives `weight` units of the reference to field `id` back to its home
    /// node `home`; called once, when the last handle on this node is dropped,
    /// with all the weight the node still held (never zero).
    fn release(&self, home: Rank, id: u64, weight: u64);
}

/// A reference to a field that lives on node `home` (the data manager).
///
/// References are counted by *weight* (weighted reference counting): the
/// home issues a weight with every reference it sends, a node forwarding a
/// reference gives away part of the weight it holds, and dropping the last
/// handle gives the rest back. The home frees the value when all weight it
/// issued has come back. See `snet_engine::dist::fields`.
pub struct RemoteField {
    /// The node that holds the value and counts its references.
    pub home: Rank,
    /// The value's number in its home's field store (unique on that node).
    pub id: u64,
    /// Interface and codec of the value.
    pub interface: Box<str>,
    /// The size in bytes of the value's encoding (what fetching it moves).
    pub len: u64,
    weight: AtomicU64,
    cache: OnceLock<Arc<dyn FieldData>>,
    release: Arc<dyn ReleaseRemote>,
}

impl RemoteField {
    /// A reference to field `id` of node `home`, holding `weight` units of
    /// its weight, to be given back through `release` when dropped.
    pub fn new(
        home: Rank,
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

    /// The weight this node holds now.
    pub fn weight(&self) -> u64 {
        self.weight.load(Ordering::Relaxed)
    }

    /// Takes all the weight held (the reference leaves this node for good:
    /// its handle is dropped with nothing left to give back).
    pub fn take_weight(&self) -> u64 {
        self.weight.swap(0, Ordering::Relaxed)
    }
}

/// A remote reference is a field value of its own kind: its interface and
/// size are known; its bytes only once fetched (the engine fetches before a
/// box or the output sees a field, and never encodes an unfetched one).
impl FieldData for RemoteField {
    fn interface(&self) -> &str {
        &self.interface
    }
    fn codec(&self) -> &str {
        self.cached().map_or("", |v| v.codec())
    }
    fn encoded_len(&self) -> usize {
        self.len as usize
    }
    fn encode_meta(&self, out: &mut Vec<u8>) {
        self.cached()
            .expect("a remote field is fetched before it is encoded")
            .encode_meta(out)
    }
    fn body(&self) -> &[u8] {
        self.cached()
            .expect("a remote field is fetched before it is encoded")
            .body()
    }
    fn deep_copy(&self) -> Arc<dyn FieldData> {
        self.cached()
            .expect("a remote field is fetched before it is copied")
            .deep_copy()
    }
    fn remote(&self) -> Option<&RemoteField> {
        Some(self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.cached() {
            Some(v) => v.describe(f),
            None => write!(f, "<field {} on node {}>", self.id, self.home),
        }
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

/// A shared field handle: one `Arc<dyn FieldData>`, the value itself or
/// a [`RemoteField`] standing for it. Kept one fat pointer wide (with a
/// niche), so that a record entry holding a field or an integer stays 16
/// bytes and records stay small enough to move cheaply.
#[derive(Clone)]
pub struct Field(Arc<dyn FieldData>);

impl Field {
    /// A local field holding `value`.
    pub fn new(value: Arc<dyn FieldData>) -> Field {
        Field(value)
    }

    /// A field standing for the remote value `r` (fetched on demand; dropping
    /// the last handle gives its weight back).
    pub fn remote(r: Arc<RemoteField>) -> Field {
        Field(r)
    }

    /// A local [`TextField`].
    pub fn text(interface: &str, binary: bool, text: &str) -> Field {
        Field::new(Arc::new(TextField::new(interface, binary, text)))
    }

    /// The value, if it is on this node (a local field, or a remote one fetched already).
    #[inline]
    pub fn get(&self) -> Option<&Arc<dyn FieldData>> {
        match self.0.remote() {
            None => Some(&self.0),
            Some(r) => r.cached(),
        }
    }

    /// The remote reference, if the value lives on another node.
    pub fn as_remote(&self) -> Option<&RemoteField> {
        self.0.remote()
    }

    /// The local value, if this is a local field.
    pub fn as_local(&self) -> Option<&Arc<dyn FieldData>> {
        match self.0.remote() {
            None => Some(&self.0),
            Some(_) => None,
        }
    }

    /// The value as a `T`, if it is on this node and is a `T`.
    pub fn downcast_ref<T: FieldData>(&self) -> Option<&T> {
        self.get()?.as_any().downcast_ref::<T>()
    }

    /// The interface of the value (known for a remote field too).
    pub fn interface(&self) -> &str {
        self.0.interface()
    }

    /// Is this the only handle on the value (no clone of it anywhere)?
    pub fn is_only_handle(&self) -> bool {
        Arc::strong_count(&self.0) == 1
    }

    /// Are two handles the same value (not just equal contents)?
    pub fn same(&self, other: &Field) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The address of the value (or of the remote reference) behind the
    /// handle: the same for every clone of it.
    pub fn address(&self) -> usize {
        Arc::as_ptr(&self.0) as *const () as usize
    }
}

impl fmt::Debug for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.get() {
            Some(v) => v.describe(f),
            None => self.0.describe(f),
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
            Field::text("C4SNet", false, "(int)5 é"),
            Field::text("", false, ""),
        ] {
            let v = f.get().unwrap();
            assert!(v.portable().is_ok());
            let mut meta = Vec::new();
            v.encode_meta(&mut meta);
            assert_eq!(meta.len() + v.body().len(), v.encoded_len());
            let back = codecs
                .decode(v.codec(), &meta, FieldBytes::copy_from(v.body()))
                .unwrap();
            let mut meta2 = Vec::new();
            back.encode_meta(&mut meta2);
            assert_eq!((meta, v.body()), (meta2, back.body()));
            assert_eq!(back.interface(), v.interface());
            assert_eq!(
                back.as_any().downcast_ref::<TextField>(),
                f.downcast_ref::<TextField>()
            );
            let copy = v.deep_copy();
            assert!(!Arc::ptr_eq(&copy, v));
            assert_eq!(copy.as_any().downcast_ref::<TextField>(), f.downcast_ref());
        }
        let empty = FieldBytes::default;
        assert!(codecs
            .decode(TEXT_CODEC, &[0, 9, 0, 0, 0, b'x'], empty())
            .is_err());
        assert!(codecs.decode(TEXT_CODEC, &[0, 0, 0, 0, 0], empty()).is_ok());
        assert!(codecs
            .decode(TEXT_CODEC, &[0, 0, 0, 0, 0], FieldBytes::copy_from(&[0xff]))
            .is_err());
        assert!(codecs.decode("C4SNet", &[], empty()).is_err());
        let t = Field::text("SAC", true, "abc");
        assert_eq!(t.interface(), "SAC");
        assert_eq!(format!("{t:?}"), "\"abc\"");
    }

    #[test]
    fn weight_splits_and_returns_on_drop() {
        use std::sync::Mutex;
        struct Log(Mutex<Vec<(Rank, u64, u64)>>);
        impl ReleaseRemote for Log {
            fn release(&self, home: Rank, id: u64, weight: u64) {
                self.0.lock().unwrap().push((home, id, weight));
            }
        }
        let log = Arc::new(Log(Mutex::new(Vec::new())));
        let r = RemoteField::new(Rank(2), 7, "C4SNet", 8, 5, log.clone());
        assert_eq!(r.split_weight(), Some(2));
        assert_eq!(r.weight(), 3);
        r.add_weight(1);
        assert_eq!(r.split_weight(), Some(2));
        assert_eq!(r.split_weight(), Some(1));
        assert_eq!(r.split_weight(), None);
        drop(r);
        assert_eq!(*log.0.lock().unwrap(), vec![(Rank(2), 7, 1)]);
    }
}
