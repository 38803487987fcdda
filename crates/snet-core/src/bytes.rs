//! [`FieldBytes`]: an owned byte buffer aligned for any C element type.
//!
//! The bytes of a field travel between nodes in one of these: a transport
//! receives a payload straight into one (MPI receives into it, the
//! shared-memory transport copies into it once), and a language interface
//! adopts it as the value's storage without another copy (C4SNet arrays
//! keep their elements in one). The alignment ([`FieldBytes::ALIGN`]) is
//! enough for every C4SNet element type, `long double` included.
//!
//! A buffer is either the heap's (the usual case) or *external*: memory
//! someone else owns, such as a block of the shared-memory transport's
//! field arena, kept alive by an owner object that is dropped with the
//! buffer ([`FieldBytes::from_external`]). A process may install one
//! [`FieldAllocator`] ([`set_field_allocator`]): language interfaces
//! allocate field values through [`FieldBytes::for_field`], which asks it
//! first (the shared-memory transport's zero-copy mode puts fields in its
//! arena this way, so passing one to another node passes only an offset).

use std::alloc::{self, Layout};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::OnceLock;

/// An owned, fixed-length, 16-byte aligned byte buffer.
pub struct FieldBytes {
    ptr: NonNull<u8>,
    len: usize,
    /// `None`: the heap's allocation (freed on drop); `Some`: external
    /// memory, released by dropping its owner.
    owner: Option<Box<dyn Send + Sync>>,
}

// SAFETY: FieldBytes owns its allocation exclusively, like a Box<[u8]>
// (external memory: by the contract of `from_external`).
unsafe impl Send for FieldBytes {}
// SAFETY: shared access is read-only (`&self` gives `&[u8]`).
unsafe impl Sync for FieldBytes {}

thread_local! {
    /// Bytes of field values this thread made ([`FieldBytes::for_field`],
    /// [`FieldBytes::for_field_copy`]) since [`take_new_field_bytes`].
    static NEW_FIELD_BYTES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A field value of this size or more has been made in this process (set
/// once, never cleared): until then [`new_field_bytes`] is 0 without
/// looking at the thread's count. The engine asks after every output of a
/// box call that may hold a field (an output of tags alone placed at
/// once holds none, and does not ask); a process whose fields are all small (or that has none, as
/// most fine-grained programs) pays one load of a line nobody writes
/// instead of a thread-local access per output (pipe10: 18 instructions a
/// call). Below this size, [`new_field_bytes`] could only matter past
/// 256 outputs of one call, and the engine suspends a call after 64
/// outputs anyway.
static BIG_FIELDS_MADE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The size of field value that sets [`BIG_FIELDS_MADE`]: 64 KiB.
const BIG_FIELD: usize = 64 << 10;

/// Counts `len` new bytes of field values made by this thread.
#[inline]
fn count_new_field_bytes(len: usize) {
    use std::sync::atomic::Ordering::Relaxed;
    NEW_FIELD_BYTES.with(|n| n.set(n.get().saturating_add(len)));
    if len >= BIG_FIELD && !BIG_FIELDS_MADE.load(Relaxed) {
        BIG_FIELDS_MADE.store(true, Relaxed);
    }
}

/// Bytes of field values this thread made since it last called
/// [`take_new_field_bytes`]: the engine suspends a box call whose waiting
/// outputs hold many of them, so that they go downstream (and their memory
/// can be freed and reused) before the call makes more. 0 until a field
/// value of 64 KiB or more has been made in the process (below that the
/// engine's limit of outputs a call is reached first).
#[inline]
pub fn new_field_bytes() -> usize {
    if !BIG_FIELDS_MADE.load(std::sync::atomic::Ordering::Relaxed) {
        return 0;
    }
    NEW_FIELD_BYTES.with(std::cell::Cell::get)
}

/// Whether [`new_field_bytes`] may be above 0 at all: a field of
/// 64 KiB or more was made in the process. While it is not, a caller
/// that only compares the count with a limit of its own need not read
/// the count (a thread-local).
#[inline(always)]
pub fn big_fields_made() -> bool {
    BIG_FIELDS_MADE.load(std::sync::atomic::Ordering::Relaxed)
}

/// [`new_field_bytes`], and starts counting again from 0.
#[inline]
pub fn take_new_field_bytes() -> usize {
    if !BIG_FIELDS_MADE.load(std::sync::atomic::Ordering::Relaxed) {
        return 0;
    }
    NEW_FIELD_BYTES.with(|n| n.replace(0))
}

/// Where language interfaces get field storage from, when installed
/// ([`set_field_allocator`]).
pub trait FieldAllocator: Send + Sync {
    /// `len` zero bytes, aligned to [`FieldBytes::ALIGN`], or `None` to let
    /// the heap serve this one (no room, or not worth it).
    fn alloc_zeroed(&self, len: usize) -> Option<FieldBytes>;

    /// `len` bytes of unspecified (but initialised) contents, aligned as
    /// [`FieldAllocator::alloc_zeroed`], for a caller that overwrites all
    /// of them at once (a copy), or `None`; by default `alloc_zeroed`.
    fn alloc_for_copy(&self, len: usize) -> Option<FieldBytes> {
        self.alloc_zeroed(len)
    }
}

static FIELD_ALLOCATOR: OnceLock<&'static dyn FieldAllocator> = OnceLock::new();

/// Installs this process's field allocator (once; `false` if one was
/// installed already).
pub fn set_field_allocator(a: &'static dyn FieldAllocator) -> bool {
    FIELD_ALLOCATOR.set(a).is_ok()
}

impl FieldBytes {
    /// The alignment of every buffer.
    pub const ALIGN: usize = 16;

    fn layout(len: usize) -> Layout {
        // A whole number of alignment units: allocators serve such a size
        // from their ordinary size classes (mimalloc takes a slow
        // over-allocating path for a size below the alignment: ~250
        // instructions for an 8-byte field instead of ~20).
        let size = len
            .checked_next_multiple_of(Self::ALIGN)
            .expect("field buffer too large");
        Layout::from_size_align(size, Self::ALIGN).expect("field buffer too large")
    }

    /// `len` zero bytes. (Large buffers come from the allocator's
    /// zeroed pages: no bytes are written until someone writes them.)
    pub fn zeroed(len: usize) -> FieldBytes {
        if len == 0 {
            return FieldBytes::empty();
        }
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| alloc::handle_alloc_error(layout));
        FieldBytes {
            ptr,
            len,
            owner: None,
        }
    }

    /// No bytes, without an allocation (messages without a payload are
    /// common): the pointer is aligned, not null, and never dereferenced.
    pub fn empty() -> FieldBytes {
        #[repr(align(16))]
        struct Unit;
        const _: () = assert!(std::mem::align_of::<Unit>() == FieldBytes::ALIGN);
        FieldBytes {
            ptr: NonNull::<Unit>::dangling().cast(),
            len: 0,
            owner: None,
        }
    }

    /// Storage for a field value of `len` bytes, zeroed: from the installed
    /// [`FieldAllocator`] if it serves the request, else the heap. Counted
    /// in this thread's [`new_field_bytes`].
    pub fn for_field(len: usize) -> FieldBytes {
        count_new_field_bytes(len);
        FIELD_ALLOCATOR
            .get()
            .and_then(|a| a.alloc_zeroed(len))
            .unwrap_or_else(|| FieldBytes::zeroed(len))
    }

    /// Storage for a field value holding a copy of `bytes`: from the
    /// installed [`FieldAllocator`] if it serves the request (without
    /// zeroing first), else the heap. Counted in this thread's
    /// [`new_field_bytes`].
    pub fn for_field_copy(bytes: &[u8]) -> FieldBytes {
        count_new_field_bytes(bytes.len());
        match FIELD_ALLOCATOR
            .get()
            .and_then(|a| a.alloc_for_copy(bytes.len()))
        {
            Some(mut b) => {
                b.copy_from_slice(bytes);
                b
            }
            None => FieldBytes::copy_from(bytes),
        }
    }

    /// `len` bytes at `ptr` that `owner` keeps alive: dropping the buffer
    /// drops `owner` (which releases the memory), nothing else.
    ///
    /// # Safety
    /// `ptr` is [`FieldBytes::ALIGN`]-aligned and valid for reads and writes
    /// of `len` initialised bytes for as long as `owner` lives, and nobody
    /// else writes them meanwhile (readers elsewhere are fine: the buffer
    /// is written only through `&mut FieldBytes`).
    pub unsafe fn from_external(
        ptr: NonNull<u8>,
        len: usize,
        owner: Box<dyn Send + Sync>,
    ) -> FieldBytes {
        debug_assert!((ptr.as_ptr() as usize).is_multiple_of(Self::ALIGN));
        FieldBytes {
            ptr,
            len,
            owner: Some(owner),
        }
    }

    /// Whether the bytes are external (see [`FieldBytes::from_external`]).
    pub fn is_external(&self) -> bool {
        self.owner.is_some()
    }

    /// A copy of `bytes`.
    pub fn copy_from(bytes: &[u8]) -> FieldBytes {
        if bytes.is_empty() {
            return FieldBytes::empty();
        }
        let layout = Self::layout(bytes.len());
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| alloc::handle_alloc_error(layout));
        // SAFETY: a fresh allocation of at least `bytes.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), raw, bytes.len()) };
        FieldBytes {
            ptr,
            len: bytes.len(),
            owner: None,
        }
    }

    /// The first byte, aligned to [`FieldBytes::ALIGN`] (a dangling but
    /// aligned pointer when the buffer is empty): for a language interface
    /// that hands the bytes to C.
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// As [`FieldBytes::as_ptr`], for writing the bytes in place.
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
        if self.owner.take().is_some() {
            return; // the owner released the external memory
        }
        if self.len == 0 {
            return; // `empty`: nothing was allocated
        }
        // SAFETY: allocated in `zeroed` or `copy_from` with this very layout.
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

    #[test]
    fn external_bytes_are_released_by_their_owner_only() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        struct Owner(Arc<AtomicUsize>, #[allow(dead_code)] FieldBytes);
        impl Drop for Owner {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let drops = Arc::new(AtomicUsize::new(0));
        let mut backing = FieldBytes::copy_from(&[7; 48]);
        let ptr = NonNull::new(backing.as_mut_ptr()).unwrap();
        // SAFETY: `backing` lives in the owner, as long as the buffer.
        let b =
            unsafe { FieldBytes::from_external(ptr, 40, Box::new(Owner(drops.clone(), backing))) };
        assert!(b.is_external() && b.len() == 40 && b.iter().all(|&x| x == 7));
        let c = b.clone();
        assert!(!c.is_external() && c == b);
        drop(b);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        drop(c);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }
}
