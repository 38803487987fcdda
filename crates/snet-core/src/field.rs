//! Fields: opaque, reference-counted values.
//!
//! S-Net never looks inside a field. A field is either
//! - [`FieldValue::Data`]: a C4SNet typed array ([`CData`]) that boxes read and
//!   write through `C4SNet.h` — what the record reader makes of every C4SNet
//!   value, so that it is written back in the canonical form, or
//! - [`FieldValue::Text`]: a value of another box language's interface, kept
//!   as the exact text it was read as and written back byte for byte (or a
//!   C4SNet value a tool chose to keep as written, see snet-io).
//!
//! [`Field`] is an `Arc`: flow inheritance and filters share, never copy.
//! The C ABI hands the same allocation to C code as `c4snet_data_t *`
//! (`Arc::into_raw`), so the C reference count *is* the `Arc` count.

use std::alloc::{self, Layout};
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

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

/// What a field holds.
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

/// A shared field.
#[derive(Clone)]
pub struct Field(pub Arc<FieldValue>);

impl Field {
    pub fn text(interface: &str, binary: bool, text: &str) -> Field {
        Field(Arc::new(FieldValue::Text {
            interface: interface.into(),
            binary,
            text: text.into(),
        }))
    }

    pub fn data(d: CData) -> Field {
        Field(Arc::new(FieldValue::Data(d)))
    }

    pub fn value(&self) -> &FieldValue {
        &self.0
    }
}

impl fmt::Debug for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.0 {
            FieldValue::Text { text, .. } => write!(f, "{text:?}"),
            FieldValue::Data(d) => write!(f, "({}[{}])..", d.ctype.c_name(), d.len),
        }
    }
}
