//! [`FieldBytes`]: an owned byte buffer aligned for any C element type.
//!
//! The bytes of a field travel between nodes in one of these: a transport
//! receives a payload straight into one (MPI receives into it, the
//! shared-memory transport copies into it once), and a language interface
//! adopts it as the value's storage without another copy (C4SNet arrays
//! keep their elements in one). The alignment ([`FieldBytes::ALIGN`]) is
//! enough for every C4SNet element type, `long double` included.

use std::alloc::{self, Layout};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// An owned, fixed-length, 16-byte aligned byte buffer.
pub struct FieldBytes {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: FieldBytes owns its allocation exclusively, like a Box<[u8]>.
unsafe impl Send for FieldBytes {}
// SAFETY: shared access is read-only (`&self` gives `&[u8]`).
unsafe impl Sync for FieldBytes {}

impl FieldBytes {
    /// The alignment of every buffer.
    pub const ALIGN: usize = 16;

    fn layout(len: usize) -> Layout {
        // An empty buffer still allocates one byte, so the pointer is always real.
        Layout::from_size_align(len.max(1), Self::ALIGN).expect("field buffer too large")
    }

    /// `len` zero bytes. (Large buffers come from the allocator's
    /// zeroed pages: no bytes are written until someone writes them.)
    pub fn zeroed(len: usize) -> FieldBytes {
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| alloc::handle_alloc_error(layout));
        FieldBytes { ptr, len }
    }

    /// A copy of `bytes`.
    pub fn copy_from(bytes: &[u8]) -> FieldBytes {
        let mut b = FieldBytes::zeroed(bytes.len());
        b.copy_from_slice(bytes);
        b
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Deref for FieldBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr points to an initialised allocation of at least len bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for FieldBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`; `&mut self` gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for FieldBytes {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with this very layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.len)) }
    }
}

impl Default for FieldBytes {
    fn default() -> FieldBytes {
        FieldBytes::zeroed(0)
    }
}

impl Clone for FieldBytes {
    fn clone(&self) -> FieldBytes {
        FieldBytes::copy_from(self)
    }
}

impl PartialEq for FieldBytes {
    fn eq(&self, other: &FieldBytes) -> bool {
        **self == **other
    }
}

impl Eq for FieldBytes {}

impl PartialEq<[u8]> for FieldBytes {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}

impl PartialEq<Vec<u8>> for FieldBytes {
    fn eq(&self, other: &Vec<u8>) -> bool {
        **self == **other
    }
}

impl fmt::Debug for FieldBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.len <= 32 {
            write!(f, "FieldBytes({:?})", &**self)
        } else {
            write!(f, "FieldBytes({} bytes)", self.len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_and_hold_their_bytes() {
        for n in [0, 1, 15, 16, 17, 4096] {
            let b = FieldBytes::copy_from(&(0..n).map(|i| i as u8).collect::<Vec<_>>());
            assert_eq!(b.as_ptr() as usize % FieldBytes::ALIGN, 0);
            assert_eq!(b.len(), n);
            assert!(b.iter().enumerate().all(|(i, &x)| x == i as u8));
            assert_eq!(b.clone(), b);
        }
        assert!(FieldBytes::zeroed(100).iter().all(|&x| x == 0));
    }
}
