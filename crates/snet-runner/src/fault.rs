//! Test-only fault injection: `SNET_TEST_FAULT=KIND@NODE` makes node NODE's
//! transport misbehave in one of a few ways, so that the fault-matrix tests
//! (`crates/snet-cli/tests/faults.rs`) can put a fault at a moment a
//! kill from outside cannot hit reliably. Without the variable the
//! transport is used as it is (no wrapper, no cost). Not for users: it
//! exists to show what a failure does (`docs/distributed.md`).
//!
//! | KIND | what node NODE does |
//! |---|---|
//! | `garbage` | sends its third message with a header of `0xff` bytes |
//! | `die-sending-field` | starts sending a payload of 1 MiB or more and is killed (`SIGKILL`) 2 ms into the send |
//! | `die-at-shutdown` | is killed (`SIGKILL`) when node 0's shutdown notice reaches it |
//! | `die-at-start` | is killed (`SIGKILL`) before its engine starts (every incarnation of it, under `--on-node-loss respawn`) |
//! | `die-after-given` | is killed (`SIGKILL`) when it is about to send the message after its first given field (`--on-node-loss respawn`, zero-copy fields: the field is at node 0, the record holding it never comes); its first incarnation only |

use std::time::Duration;

use snet_core::Rank;

use snet_engine::dist::hooked::{Hooked, Hooks};
use snet_engine::dist::wire::{FrameRef, MessageReader};
use snet_engine::dist::{Channel, Payload, Received, Transport, TransportError};

/// The variable that arms a fault.
pub const VAR: &str = "SNET_TEST_FAULT";

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    Garbage,
    DieSendingField,
    DieAtShutdown,
    DieAtStart,
    DieAfterGiven,
}

/// A transport with a fault armed on this node (the transport crate's
/// one test wrapper, with this fault as its hooks).
pub(crate) type Faulty<'a> = Hooked<&'a dyn Transport, Fault>;

/// The fault armed on this node.
pub(crate) struct Fault(Kind, std::sync::atomic::AtomicBool);

/// `inner`, wrapped if [`VAR`] arms a fault on this node.
pub(crate) fn wrap(inner: &dyn Transport) -> Option<Faulty<'_>> {
    let v = std::env::var(VAR).ok()?;
    let (kind, node) = v.split_once('@')?;
    let kind = match kind {
        "garbage" => Kind::Garbage,
        "die-sending-field" => Kind::DieSendingField,
        "die-at-shutdown" => Kind::DieAtShutdown,
        "die-at-start" => Kind::DieAtStart,
        "die-after-given" => Kind::DieAfterGiven,
        _ => return None,
    };
    if kind == Kind::DieAtStart && node.parse().map(Rank) == Ok(inner.node()) {
        die();
    }
    (node.parse().map(Rank) == Ok(inner.node()))
        .then(|| Hooked::new(inner, Fault(kind, Default::default())))
}

/// Whether this process is its node's first (`SNET_SHM_INCARNATION`
/// unset or 0).
fn first_incarnation() -> bool {
    std::env::var("SNET_SHM_INCARNATION").map_or(true, |g| g == "0")
}

fn die() {
    // SAFETY: kill(2) of this very process; SIGKILL cannot be caught.
    unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
}

impl<'x> Hooks<dyn Transport + 'x> for Fault {
    fn sending(
        &self,
        _: &(dyn Transport + 'x),
        n: u64,
        _: Rank,
        _: Channel,
        header: &[u8],
        payload: &Payload,
    ) -> Option<Vec<u8>> {
        match self.0 {
            Kind::Garbage if n == 2 => return Some(vec![0xff; header.len().max(16)]),
            Kind::DieSendingField if payload.bytes().len() >= 1 << 20 => {
                std::thread::spawn(|| {
                    std::thread::sleep(Duration::from_millis(2));
                    die();
                });
            }
            Kind::DieAfterGiven if first_incarnation() => {
                use std::sync::atomic::Ordering::Relaxed;
                if self.1.load(Relaxed) {
                    die();
                }
                if let Ok((_, mut r)) = MessageReader::new(header) {
                    while let Ok(Some(f)) = r.next_frame() {
                        if matches!(f, FrameRef::Given { .. }) {
                            self.1.store(true, Relaxed);
                        }
                    }
                }
            }
            _ => {}
        }
        None
    }

    fn received(
        &self,
        _: &(dyn Transport + 'x),
        _: u64,
        m: &Received,
    ) -> Result<(), TransportError> {
        if self.0 == Kind::DieAtShutdown {
            if let Ok((_, mut r)) = MessageReader::new(&m.header) {
                while let Ok(Some(f)) = r.next_frame() {
                    if f == FrameRef::Shutdown {
                        die();
                    }
                }
            }
        }
        Ok(())
    }
}
