//! C4SNet field values: typed arrays ([`CData`] of a [`CType`]) and the
//! value the field store keeps for them, [`C4Data`].
//!
//! A [`C4Data`] is what a C4SNet [`Field`] holds: the array and the name of
//! the box that made it (for messages). It implements the store's hooks
//! ([`FieldData`]): interface and codec `C4SNet`; serialised as a 9-byte
//! header (the `c4snet_type_t` value as one byte, the element count as a
//! little-endian `u64`) and the elements' raw bytes, in the node's own byte
//! order (every node of a run is one build on one platform); copied by
//! copying the array; freed when the last reference (a [`Field`] or a C
//! `c4snet_data_t *`, the same `Arc`) goes. A `CTYPE_pointer` array is not
//! [`portable`](FieldData::portable): an address means nothing on another
//! node. [`codec`] decodes the serialised form.

use std::alloc::{self, Layout};
use std::any::Any;
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

use snet_core::{Field, FieldCodec, FieldData};

/// The interface name of C4SNet fields in the record format.
pub const INTERFACE: &str = "C4SNet";

/// The name of the [`FieldCodec`] of [`C4Data`].
pub const CODEC: &str = "C4SNet";

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

const HEADER_LEN: usize = 1 + 8;

impl FieldData for C4Data {
    fn interface(&self) -> &str {
        INTERFACE
    }
    fn codec(&self) -> &str {
        CODEC
    }
    fn encoded_len(&self) -> usize {
        HEADER_LEN + self.data.bytes().len()
    }
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.data.ctype as u8);
        out.extend_from_slice(&(self.data.len as u64).to_le_bytes());
        out.extend_from_slice(self.data.bytes());
    }
    fn portable(&self) -> Result<(), String> {
        if self.data.ctype != CType::Pointer {
            return Ok(());
        }
        let what = "holds C4SNet pointers (CTYPE_pointer), which cannot be sent to another node";
        Err(match &self.made_by {
            Some(name) => format!("field made by box `{name}` {what}"),
            None => format!("field {what}"),
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

/// Decodes what [`C4Data`]'s `encode` wrote.
struct C4Codec;

impl FieldCodec for C4Codec {
    fn name(&self) -> &str {
        CODEC
    }
    fn decode(&self, b: &[u8]) -> Result<Arc<dyn FieldData>, String> {
        let bad = || "truncated C4SNet field bytes".to_string();
        let t = CType::from_raw(i32::from(*b.first().ok_or_else(bad)?))
            .ok_or("bad C4SNet element type")?;
        let len = b.get(1..HEADER_LEN).ok_or_else(bad)?;
        let len = usize::try_from(u64::from_le_bytes(len.try_into().expect("8 bytes")))
            .map_err(|_| bad())?;
        let bytes = &b[HEADER_LEN..];
        if Some(bytes.len()) != len.checked_mul(t.size()) {
            return Err(bad());
        }
        Ok(Arc::new(C4Data::new(CData::from_bytes(t, len, bytes))))
    }
}

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
            let mut b = Vec::new();
            v.encode(&mut b);
            assert_eq!(b.len(), v.encoded_len());
            let back = codecs.decode(v.codec(), &b).unwrap();
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
        let mut b = Vec::new();
        data_field(CData::zeroed(CType::Int, 2))
            .get()
            .unwrap()
            .encode(&mut b);
        assert!(codecs.decode(CODEC, &b[..b.len() - 1]).is_err());
        assert!(codecs.decode(CODEC, &b[..5]).is_err());
        b[0] = 99;
        assert!(codecs.decode(CODEC, &b).is_err());
    }

    #[test]
    fn pointers_stay_home_and_name_their_maker() {
        let p = C4Data::made_by(CData::zeroed(CType::Pointer, 1), Some("foo".into()));
        assert_eq!(
            p.portable(),
            Err("field made by box `foo` holds C4SNet pointers (CTYPE_pointer), which cannot be sent to another node".into())
        );
        assert!(p.deep_copy().portable().unwrap_err().contains("box `foo`"));
        let q = data_field(CData::zeroed(CType::Pointer, 2));
        assert_eq!(
            q.get().unwrap().portable(),
            Err(
                "field holds C4SNet pointers (CTYPE_pointer), which cannot be sent to another node"
                    .into()
            )
        );
        assert_eq!(format!("{q:?}"), "(pointer[2])..");
    }
}
