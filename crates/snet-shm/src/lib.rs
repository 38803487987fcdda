//! The shared-memory transport (`--transport shm`): the counterpart of the
//! SCC's distribution library (thesis ch. 5-6.2; `runtime.md` §4,
//! `distributed.md` §3).
//!
//! N node processes on one machine share a segment (an anonymous memfd,
//! mode 0600, mapped by every process, possibly at different addresses, so
//! it holds offsets, never pointers). Each node has one receive [`Ring`]
//! there: many producers (the other nodes' output managers), one
//! [`Consumer`] (the node's input manager); field values can live in the
//! segment's [`Arena`].
//!
//! - [`segment`]: the segment's layout, creation and node state words;
//! - [`transport`]: [`ShmTransport`], the distribution layer's transport
//!   (message frames, chunking, the three field modes, faults);
//! - [`launch`]: node 0 starts and watches the other node processes;
//! - [`ring`]: the bounded MPSC ring of fixed-size slots (protocol at the top);
//! - [`notify`]: how the consumer waits and producers wake it: [`Notify::Poll`],
//!   [`Notify::Interrupt`], [`Notify::Sparse`] (protocol and no-lost-wake-up
//!   argument at the top);
//! - [`arena`]: the field arena, a buddy allocator of reference-counted
//!   blocks that any process may allocate and free (fields pass between
//!   processes as offsets; layout, lock, refcounts and failures at the top);
//! - `sync`: the atomics, fences and futex, swappable by loom.
//!
//! ```
//! use snet_shm::{HeapRegion, Notify, Ring};
//! let len = Ring::layout(8, 240).unwrap();
//! let region = HeapRegion::new(len); // a shared mapping in the transport
//! // SAFETY: the region outlives the ring.
//! let ring = unsafe { Ring::init(region.as_ptr(), len, 8, 240, Notify::Sparse) }.unwrap();
//! ring.try_push_parts(&[b"head", b"body"]).unwrap();
//! ring.after_push();
//! let mut rx = ring.consumer().unwrap();
//! assert!(rx.wait(None));
//! assert_eq!(rx.try_pop(|m| m.to_vec()).unwrap(), b"headbody");
//! ```
//!
//! # The rings' contract with the transport (`transport.rs` keeps it)
//!
//! * Create the segment private to the user (mode 0600), lay out one ring
//!   per node at offsets every process computes the same way, [`Ring::init`]
//!   each before the other processes attach (or let them retry
//!   [`Ring::attach`] while it says `NotInitialised`), and unlink the
//!   segment at the end of a run and after a crash.
//! * Take exactly one [`Consumer`] per ring (the claim enforces it, across
//!   processes too), in the node's input manager.
//! * Call [`Ring::after_push`] after every push (or batch of pushes) before
//!   waiting for anything, in particular before backing off from a full
//!   ring: there is no "room again" notification, a producer facing a full
//!   ring retries (spin, yield, nap), and the transport's flow-control window
//!   should keep that rare.
//! * Chunk messages larger than [`Ring::max_message`], and move field bytes
//!   (single-copy or zero-copy) outside the ring.
//! * Treat a head that stays [`Head::Pending`] as the symptom of a producer
//!   process that died mid-push: find the dead process (its exit, a pidfd)
//!   and fail the run, as for any vanished peer, or, to go on without it,
//!   give each producing node a reservation word
//!   ([`Ring::set_reservation_word`]) and skip the dead one's slot with
//!   [`Consumer::abandon_head`] (`transport.rs`, "Replacing a lost node").
//! * Wake the input manager for shutdown with [`Ring::kick`] (after setting
//!   its stop flag).
//!
//! Checks: unit tests (also under Miri), loom models (`loom_tests/`, see
//! its README), and `tests/stress.rs` (threads and processes, all modes,
//! idle CPU use).

#![warn(missing_docs)]

pub mod arena;
pub mod notify;
pub mod ring;
#[cfg(not(loom))]
#[cfg_attr(not(feature = "transport"), allow(dead_code))]
mod spin;
mod sync;

#[cfg(feature = "transport")]
pub mod launch;
#[cfg(feature = "transport")]
pub mod segment;
#[cfg(feature = "transport")]
pub mod transport;

pub use arena::{Arena, ArenaError, ArenaStats};
pub use notify::{Notify, UnknownMode};
pub use ring::{Claimed, Consumer, Head, HeapRegion, PushError, Ring, RingError};
#[cfg(feature = "transport")]
pub use segment::{FieldMode, Geometry, Segment};
#[cfg(feature = "transport")]
pub use transport::{Counters, ShmError, ShmTransport};

#[cfg(all(test, loom))]
mod loom_tests;
