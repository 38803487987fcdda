//! TEMPORARY bump arena for compiling the transport (not committed).
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
#[derive(Debug)]
pub struct ArenaError;
impl std::fmt::Display for ArenaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("arena")
    }
}
pub struct ArenaStats {
    pub live_blocks: u64,
}
pub struct Arena {
    base: *mut u8,
    len: usize,
}
unsafe impl Send for Arena {}
unsafe impl Sync for Arena {}
const H: usize = 64;
impl Arena {
    pub fn layout(cap: usize) -> usize {
        cap + 4096
    }
    pub unsafe fn init(base: *mut u8, len: usize) -> Result<Arena, ArenaError> {
        unsafe {
            (*(base as *const AtomicU64)).store(4096, Ordering::SeqCst);
        }
        Ok(Arena { base, len })
    }
    pub unsafe fn attach(base: *mut u8, len: usize) -> Result<Arena, ArenaError> {
        Ok(Arena { base, len })
    }
    fn top(&self) -> &AtomicU64 {
        unsafe { &*(self.base as *const AtomicU64) }
    }
    pub fn alloc(&self, len: usize) -> Option<u64> {
        let need = (H + len).next_multiple_of(64) as u64;
        let at = self.top().fetch_add(need, Ordering::SeqCst);
        if at + need > self.len as u64 {
            return None;
        }
        unsafe {
            (*(self.base.add(at as usize) as *const AtomicU64)).store(len as u64, Ordering::SeqCst);
            (*(self.base.add(at as usize + 8) as *const AtomicU32)).store(1, Ordering::SeqCst);
        }
        Some(at + H as u64)
    }
    pub fn data(&self, off: u64) -> *mut u8 {
        unsafe { self.base.add(off as usize) }
    }
    pub fn capacity(&self, off: u64) -> usize {
        unsafe {
            (*(self.base.add(off as usize - H) as *const AtomicU64)).load(Ordering::SeqCst) as usize
        }
    }
    pub fn offset_of(&self, ptr: *const u8, len: usize) -> Option<u64> {
        let p = ptr as usize;
        let b = self.base as usize;
        if p < b + 4096 + H || p >= b + self.len || (p - b) % 64 != 0 {
            return None;
        }
        let off = (p - b) as u64;
        if self.capacity(off) >= len {
            Some(off)
        } else {
            None
        }
    }
    pub fn retain(&self, off: u64) {
        unsafe {
            (*(self.base.add(off as usize - H + 8) as *const AtomicU32))
                .fetch_add(1, Ordering::SeqCst);
        }
    }
    pub unsafe fn release(&self, off: u64) {
        unsafe {
            (*(self.base.add(off as usize - H + 8) as *const AtomicU32))
                .fetch_sub(1, Ordering::SeqCst);
        }
    }
}
