//! C4SNet field values: typed arrays ([`CData`] of a [`CType`]) and the
//! value the field store keeps for them, [`C4Data`].
//!
//! A [`C4Data`] is what a C4SNet [`Field`] holds: the array and the name of
//! the box that made it (for messages). It implements the store's hooks
//! ([`FieldData`]): interface and codec `C4SNet`; serialised as a 9-byte
//! meta part (the `c4snet_type_t` value as one byte, the element count as
//! a little-endian `u64`) and, as the body, the array's own bytes in the
//! node's own byte order (every node of a run is one build on one
//! platform): sent from the array's memory, and a received body (a
//! [`FieldBytes`]) becomes the new array's storage as it is
//! ([`CData::from_field_bytes`]), so a field crosses nodes without a copy
//! on either side. Copied by copying the array; freed when the last
//! reference (a [`Field`] or a C `c4snet_data_t *`, the same `Arc`) goes.
//! A `CTYPE_pointer` array is not [`portable`](FieldData::portable): an
//! address means nothing on another node. [`codec`] decodes the serialised
//! form.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use snet_core::{DecodeError, Field, FieldBytes, FieldCodec, FieldData, NotPortable};

/// The interface name of C4SNet fields in the record format.
pub const INTERFACE: &str = "C4SNet";

/// The name of the [`FieldCodec`] of [`C4Data`].
pub const CODEC: &str = "C4SNet";

/// C4SNet element types, in the order (and with the values) of `c4snet_type_t`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[repr(C)]
pub enum CType {
    /// `unsigned char` (`CTYPE_uchar`).
    UChar = 0,
    /// `char` (`CTYPE_char`).
    Char,
    /// `unsigned short` (`CTYPE_ushort`).
    UShort,
    /// `short` (`CTYPE_short`).
    Short,
    /// `unsigned int` (`CTYPE_uint`).
    UInt,
    /// `int` (`CTYPE_int`).
    Int,
    /// `unsigned long` (`CTYPE_ulong`).
    ULong,
    /// `long` (`CTYPE_long`).
    Long,
    /// `float` (`CTYPE_float`).
    Float,
    /// `double` (`CTYPE_double`).
    Double,
    /// `long double` (`CTYPE_ldouble`).
    LDouble,
    /// `void *` (`CTYPE_pointer`): meaningful only in its process.
    Pointer,
}

impl CType {
    /// Every type, in the order of their values.
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

    /// The type with `c4snet_type_t` value `v`, if there is one.
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

    /// The type whose C name ([`CType::c_name`]) is `s`, if there is one.
    pub fn from_c_name(s: &str) -> Option<CType> {
        CType::ALL.iter().copied().find(|t| t.c_name() == s)
    }
}

/// A C4SNet typed array: `len` elements of `ctype`, 16-byte aligned, kept
/// in a [`FieldBytes`] (so that an array can adopt a buffer received from
/// another node). The buffer holds room for at least one element, so the
/// pointer a C box gets for an empty array is a real, aligned allocation.
///
/// A box may write into an array through [`CData::as_ptr`] only between
/// allocating it and handing it to `C4SNetOut`, i.e. while no other thread
/// can reach it (the C4SNet contract); shared reads are plain byte reads.
pub struct CData {
    ctype: CType,
    len: usize,
    buf: FieldBytes,
}

impl CData {
    /// Bytes of `len` elements of `ctype`.
    fn size_of(ctype: CType, len: usize) -> usize {
        ctype.size().checked_mul(len).expect("field size overflows")
    }

    /// A zero-filled array of `len` elements.
    pub fn zeroed(ctype: CType, len: usize) -> CData {
        let buf = FieldBytes::for_field(CData::size_of(ctype, len.max(1)));
        CData { ctype, len, buf }
    }

    /// An array holding a copy of `bytes` (`bytes.len()` must be `len * size`).
    pub fn from_bytes(ctype: CType, len: usize, bytes: &[u8]) -> CData {
        if len == 0 {
            return CData::zeroed(ctype, 0);
        }
        let buf = FieldBytes::for_field_copy(&bytes[..CData::size_of(ctype, len)]);
        CData { ctype, len, buf }
    }

    /// An array of `len` elements whose storage is `buf` itself (no copy;
    /// an empty array gets a fresh one-element buffer instead). `Err` if
    /// `buf` is not `len` elements long.
    pub fn from_field_bytes(
        ctype: CType,
        len: usize,
        buf: FieldBytes,
    ) -> Result<CData, C4DecodeError> {
        if Some(buf.len()) != len.checked_mul(ctype.size()) {
            return Err(C4DecodeError::Size {
                bytes: buf.len(),
                len,
                ctype,
            });
        }
        if len == 0 {
            return Ok(CData::zeroed(ctype, 0));
        }
        Ok(CData { ctype, len, buf })
    }

    /// The element type.
    pub fn ctype(&self) -> CType {
        self.ctype
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements (a pointer into the buffer, valid as long as the array).
    pub fn as_ptr(&self) -> *mut u8 {
        // The buffer's pointer is not derived from a reference, so a box
        // may write through it (under the contract above).
        self.buf.as_ptr() as *mut u8
    }

    /// The elements' bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len * self.ctype.size()]
    }

    /// The elements' bytes, to write.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let n = self.len * self.ctype.size();
        &mut self.buf[..n]
    }
}

impl Clone for CData {
    fn clone(&self) -> CData {
        CData::from_bytes(self.ctype, self.len, self.bytes())
    }
}

/// A C4SNet field value: the array, and the box that made it.
pub struct C4Data {
    data: CData,
    made_by: Option<Arc<str>>,
}

impl C4Data {
    /// A value made outside any box (read from the input, decoded).
    pub fn new(data: CData) -> C4Data {
        C4Data {
            data,
            made_by: None,
        }
    }

    /// A value made by the box `name` (`None`: outside any box).
    pub fn made_by(data: CData, name: Option<Arc<str>>) -> C4Data {
        C4Data {
            data,
            made_by: name,
        }
    }

    /// The typed array.
    pub fn data(&self) -> &CData {
        &self.data
    }

    /// The name of the box that made the value, if a box did.
    pub fn maker(&self) -> Option<&str> {
        self.made_by.as_deref()
    }

    /// A local field holding this value.
    pub fn into_field(self) -> Field {
        Field::new(Arc::new(self))
    }
}

impl std::ops::Deref for C4Data {
    type Target = CData;
    fn deref(&self) -> &CData {
        &self.data
    }
}

/// A field holding `d` (made outside any box).
pub fn data_field(d: CData) -> Field {
    C4Data::new(d).into_field()
}

/// The C4SNet data of a field, if its value is on this node and is C4SNet data.
pub fn data_of(f: &Field) -> Option<&CData> {
    f.downcast_ref::<C4Data>().map(C4Data::data)
}

/// The size of the meta part: the element type and count.
const META_LEN: usize = 1 + 8;

impl FieldData for C4Data {
    fn interface(&self) -> &str {
        INTERFACE
    }
    fn codec(&self) -> &str {
        CODEC
    }
    fn encoded_len(&self) -> usize {
        META_LEN + self.data.bytes().len()
    }
    /// `[c4snet_type_t: u8][element count: u64 LE]`.
    fn encode_meta(&self, out: &mut Vec<u8>) {
        out.push(self.data.ctype as u8);
        out.extend_from_slice(&(self.data.len as u64).to_le_bytes());
    }
    /// The array's own bytes.
    fn body(&self) -> &[u8] {
        self.data.bytes()
    }
    fn portable(&self) -> Result<(), NotPortable> {
        if self.data.ctype != CType::Pointer {
            return Ok(());
        }
        Err(NotPortable {
            holds: "C4SNet pointers (CTYPE_pointer)",
            made_by: self.made_by.as_deref().map(str::to_string),
        })
    }
    fn deep_copy(&self) -> Arc<dyn FieldData> {
        Arc::new(C4Data {
            data: self.data.clone(),
            made_by: self.made_by.clone(),
        })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}[{}])..", self.data.ctype.c_name(), self.data.len)
    }
}

/// Decodes what [`C4Data`]'s `encode_meta` and `body` gave, adopting the
/// body as the array's storage.
struct C4Codec;

impl FieldCodec for C4Codec {
    fn name(&self) -> &str {
        CODEC
    }
    fn decode(&self, meta: &[u8], body: FieldBytes) -> Result<Arc<dyn FieldData>, DecodeError> {
        let bad = |e: C4DecodeError| DecodeError::Invalid(Arc::new(e));
        if meta.len() != META_LEN {
            return Err(bad(C4DecodeError::Meta));
        }
        let t =
            CType::from_raw(i32::from(meta[0])).ok_or(bad(C4DecodeError::ElementType(meta[0])))?;
        let len = u64::from_le_bytes(meta[1..].try_into().expect("8 bytes"));
        let len = usize::try_from(len).map_err(|_| bad(C4DecodeError::Meta))?;
        let data = CData::from_field_bytes(t, len, body).map_err(bad)?;
        Ok(Arc::new(C4Data::new(data)))
    }
}

/// What is wrong with received C4SNet field bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum C4DecodeError {
    /// The meta part has the wrong length or an impossible count.
    Meta,
    /// An element type C4SNet does not have.
    ElementType(u8),
    /// The body's `bytes` do not hold `len` elements of `ctype`.
    Size {
        /// The body's length in bytes.
        bytes: usize,
        /// The element count of the meta part.
        len: usize,
        /// The element type of the meta part.
        ctype: CType,
    },
}

impl fmt::Display for C4DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            C4DecodeError::Meta => f.write_str("malformed C4SNet field meta data"),
            C4DecodeError::ElementType(t) => write!(f, "bad C4SNet element type {t}"),
            C4DecodeError::Size { bytes, len, ctype } => write!(
                f,
                "malformed C4SNet field: {bytes} bytes do not hold {len} elements of C type {}",
                ctype.c_name()
            ),
        }
    }
}

impl std::error::Error for C4DecodeError {}

/// The [`FieldCodec`] of C4SNet values, for `snet_engine::Config::codecs`.
pub fn codec() -> Arc<dyn FieldCodec> {
    Arc::new(C4Codec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_survive_the_codec() {
        let mut codecs = snet_core::Codecs::default();
        codecs.add(codec());
        for d in [
            CData::from_bytes(CType::Int, 2, &[1, 0, 0, 0, 2, 0, 0, 0]),
            CData::zeroed(CType::LDouble, 0),
            CData::from_bytes(CType::Char, 3, b"abc"),
        ] {
            let f = data_field(d);
            let v = f.get().unwrap();
            assert!(v.portable().is_ok());
            let mut meta = Vec::new();
            v.encode_meta(&mut meta);
            assert_eq!(meta.len() + v.body().len(), v.encoded_len());
            let back = codecs
                .decode(v.codec(), &meta, FieldBytes::copy_from(v.body()))
                .unwrap();
            assert_eq!(back.interface(), "C4SNet");
            let back = back.as_any().downcast_ref::<C4Data>().unwrap();
            let d = data_of(&f).unwrap();
            assert_eq!(
                (back.ctype(), back.len(), back.bytes()),
                (d.ctype(), d.len(), d.bytes())
            );
            let copy = v.deep_copy();
            assert!(!Arc::ptr_eq(&copy, v));
            let copy = copy.as_any().downcast_ref::<C4Data>().unwrap();
            assert_eq!(copy.bytes(), d.bytes());
            assert_ne!(copy.as_ptr(), d.as_ptr());
        }
        let mut meta = Vec::new();
        let v = data_field(CData::zeroed(CType::Int, 2));
        let v = v.get().unwrap();
        v.encode_meta(&mut meta);
        let body = || FieldBytes::copy_from(v.body());
        assert!(codecs.decode(CODEC, &meta, body()).is_ok());
        assert!(codecs
            .decode(CODEC, &meta, FieldBytes::copy_from(&v.body()[1..]))
            .is_err());
        assert!(codecs.decode(CODEC, &meta[..5], body()).is_err());
        meta[0] = 99;
        assert!(codecs.decode(CODEC, &meta, body()).is_err());
    }

    #[test]
    fn a_received_body_becomes_the_array_without_a_copy() {
        let codec = codec();
        let mut meta = Vec::new();
        C4Data::new(CData::zeroed(CType::Double, 3)).encode_meta(&mut meta);
        let mut buf = FieldBytes::zeroed(24);
        buf[8..16].copy_from_slice(&2.5f64.to_ne_bytes());
        let at = buf.as_ptr();
        let v = codec.decode(&meta, buf).unwrap();
        let d = v.as_any().downcast_ref::<C4Data>().unwrap();
        assert_eq!(
            d.as_ptr() as *const u8,
            at,
            "the buffer handed in is the array"
        );
        assert_eq!((d.ctype(), d.len()), (CType::Double, 3));
        assert_eq!(d.bytes()[8..16], 2.5f64.to_ne_bytes());
        assert_eq!(v.body().as_ptr(), at, "and the body sent on from it");
        // The length must match.
        let e = CData::from_field_bytes(CType::Int, 2, FieldBytes::zeroed(7)).err();
        assert_eq!(
            e.map(|e| e.to_string()).as_deref(),
            Some("malformed C4SNet field: 7 bytes do not hold 2 elements of C type int")
        );
        // An empty array still points at a real, aligned element.
        let e = CData::from_field_bytes(CType::LDouble, 0, FieldBytes::default()).unwrap();
        assert!(e.is_empty() && e.bytes().is_empty());
        assert_eq!(e.as_ptr() as usize % 16, 0);
        // SAFETY: an empty array has room for one element (what C code may touch by mistake).
        unsafe { e.as_ptr().add(15).write(1) };
    }

    #[test]
    fn a_field_is_sent_from_its_own_memory() {
        let d = CData::from_bytes(CType::Int, 2, &[1, 0, 0, 0, 2, 0, 0, 0]);
        let at = d.as_ptr() as *const u8;
        let f = data_field(d);
        let p = snet_engine::dist::Payload::field_body(f.get().unwrap().clone());
        assert_eq!(p.bytes().as_ptr(), at, "the payload is the array itself");
        assert_eq!(p.bytes(), [1, 0, 0, 0, 2, 0, 0, 0]);
        drop(f);
        assert_eq!(p.len(), 8, "the payload keeps the value alive");
    }

    #[test]
    fn arrays_are_aligned_and_empty_ones_are_real() {
        for t in CType::ALL {
            for n in [0, 1, 3] {
                let d = CData::zeroed(t, n);
                assert_eq!(d.as_ptr() as usize % 16, 0);
                assert_eq!(d.bytes().len(), n * t.size());
                let c = d.clone();
                assert_eq!(c.bytes(), d.bytes());
                assert_eq!(c.as_ptr() as usize % 16, 0);
            }
        }
    }

    #[test]
    fn pointers_stay_home_and_name_their_maker() {
        let p = C4Data::made_by(CData::zeroed(CType::Pointer, 1), Some("foo".into()));
        let text = |r: Result<(), NotPortable>| r.map_err(|e| e.to_string());
        assert_eq!(
            text(p.portable()),
            Err("field made by box `foo` holds C4SNet pointers (CTYPE_pointer), which cannot be sent to another node".into())
        );
        assert_eq!(
            p.deep_copy().portable().unwrap_err().made_by.as_deref(),
            Some("foo")
        );
        let q = data_field(CData::zeroed(CType::Pointer, 2));
        assert_eq!(
            text(q.get().unwrap().portable()),
            Err(
                "field holds C4SNet pointers (CTYPE_pointer), which cannot be sent to another node"
                    .into()
            )
        );
        assert_eq!(format!("{q:?}"), "(pointer[2])..");
    }
}
