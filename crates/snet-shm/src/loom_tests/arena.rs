//! The arena's protocol ([`crate::arena`]): the cross-process lock (loom's
//! futex stand-in, no timeouts, so no dead-owner path), the refcount
//! hand-over (Release decrement, Acquire fence before the free), splitting
//! and coalescing, through `Arena::alloc`, `retain` and `release`.
//!
//! The arena's data bytes have shadow loom cells (one per 4 KiB unit):
//! `alloc` writes them when it zeroes a dirty block, a model's holders read
//! (`touch_read`) or write (`touch_write`) their blocks, so loom's race
//! detector reports a block reused (zeroed, written) before every earlier
//! holder's accesses happen before its free. At the end of each execution
//! `Arena::verify` checks the structure (map, free lists, counters, no
//! uncoalesced buddies) and that the arena is one free block again:
//! nothing lost, nothing freed twice.
//!
//! Models:
//! * `arena_last_two_releases_and_alloc`: an arena of two 4 KiB blocks; a
//!   block with two references held by two threads that read it and
//!   release (racing for the last reference, hence the free and the merge),
//!   while the main thread allocates a block, writes it and releases it
//!   (it gets the other half, or the freed block after a merge and a
//!   split). Bound 3.
//! * `arena_two_allocators`: an arena of four 4 KiB blocks; two threads
//!   each allocate (4 KiB and 8 KiB), write and release, while the main
//!   thread frees a block it held: splits and merges interleaved. Bound 3.

use std::sync::Arc;

use loom::thread;

use super::check;
use crate::arena::MIN_BLOCK;
use crate::{Arena, HeapRegion};

/// An arena in a heap region shared by a model's threads (one handle: the
/// loom futex stand-in and shadow cells live in it).
struct Shared {
    // Declared first: dropped before the region it points into.
    arena: Arena,
    _region: HeapRegion,
}

fn shared(capacity: usize) -> Arc<Shared> {
    let len = Arena::layout(capacity);
    let region = HeapRegion::new(len);
    // SAFETY: zeroed, aligned, and it lives in `Shared` as long as the arena.
    let arena = unsafe { Arena::init(region.as_ptr(), len) }.unwrap();
    Arc::new(Shared {
        arena,
        _region: region,
    })
}

/// The arena is one free block again, and consistent.
fn assert_empty(a: &Arena, capacity: usize) {
    let free = a.verify();
    assert_eq!(free, [(capacity.trailing_zeros(), 0)], "a block lost");
    let s = a.stats();
    assert_eq!((s.live_blocks, s.free_blocks), (0, 1));
}

#[test]
fn arena_last_two_releases_and_alloc() {
    check(3, || {
        let s = shared(2 * MIN_BLOCK);
        let x = s.arena.alloc(0).unwrap();
        s.arena.touch_write(x);
        s.arena.retain(x);
        let holders: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                thread::spawn(move || {
                    s.arena.touch_read(x);
                    // SAFETY: one of the two references.
                    unsafe { s.arena.release(x) };
                })
            })
            .collect();
        let y = s.arena.alloc(0).unwrap();
        s.arena.touch_write(y);
        // SAFETY: our reference.
        unsafe { s.arena.release(y) };
        for h in holders {
            h.join().unwrap();
        }
        assert_empty(&s.arena, 2 * MIN_BLOCK);
    });
}

#[test]
fn arena_two_allocators() {
    check(3, || {
        let s = shared(4 * MIN_BLOCK);
        let x = s.arena.alloc(0).unwrap();
        s.arena.touch_write(x);
        let workers: Vec<_> = [0, MIN_BLOCK]
            .into_iter()
            .map(|len| {
                let s = s.clone();
                thread::spawn(move || {
                    if let Some(y) = s.arena.alloc(len) {
                        s.arena.touch_write(y);
                        // SAFETY: our reference.
                        unsafe { s.arena.release(y) };
                    }
                })
            })
            .collect();
        // SAFETY: our reference.
        unsafe { s.arena.release(x) };
        for w in workers {
            w.join().unwrap();
        }
        assert_empty(&s.arena, 4 * MIN_BLOCK);
    });
}
