//! Model checks of the engine's concurrent protocols, run by `loom` against
//! the real code (every concurrent module takes its atomics and locks from
//! [`crate::sync`], which under `--cfg loom` are loom's).
//!
//! Run all of them (a minute or so on two cores):
//!
//! ```text
//! LOOM_MAX_PREEMPTIONS=3 RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!   cargo test --release -q -p snet-engine --lib loom_tests
//! ```
//!
//! One module per protocol, each documenting what it checks and its sizes:
//! - [`termination`]: credit termination across nodes (the real managers,
//!   schedulers and `Net`, over a transport simulated with loom locks);
//! - [`markers`]: marker weights (`Marker::split`, `Arrivals`) through a real
//!   deterministic collector;
//! - [`licence`]: the read-licence hand-off (`Entity::offer`,
//!   `next_or_release`);
//! - [`sleep`]: the scheduler's sleep/wake and quiescence protocol (`Sleep`);
//! - [`suspend`]: suspended box calls (pinned tasks, the backlog rule) and
//!   runs of calls (a call stack taking its next inputs itself), and the
//!   chain cut (a walk into the next box queued for a searching worker).
//!
//! `README.md` next to this file lists the mutations each model was shown
//! to catch. A model's preemption bound is `LOOM_MAX_PREEMPTIONS`, capped
//! per model (see [`check`]) so that the whole set stays fast.

mod licence;
mod markers;
mod sleep;
mod suspend;
mod termination;

use std::sync::Arc;

use snet_core::{Graph, Rank};

use crate::dist::Net;
use crate::program::Program;
use crate::runtime::Runtime;

/// Runs `f` under loom with at most `max_preemptions` preemptions (fewer if
/// `LOOM_MAX_PREEMPTIONS` says so; that bound if it is unset). With
/// `SNET_LOOM_FULL` set, `LOOM_MAX_PREEMPTIONS` alone decides (deeper, and
/// much slower for the termination models).
pub(crate) fn check(max_preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    let full = std::env::var_os("SNET_LOOM_FULL").is_some();
    let bound = match b.preemption_bound {
        Some(p) if full => p,
        Some(p) => p.min(max_preemptions),
        None => max_preemptions,
    };
    b.preemption_bound = Some(bound);
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = runs.clone();
    let start = std::time::Instant::now();
    b.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f()
    });
    // Shown with `--nocapture`.
    println!(
        "{}: {} executions, preemption bound {bound}, {:.1?}",
        std::thread::current().name().unwrap_or("model"),
        runs.load(std::sync::atomic::Ordering::Relaxed),
        start.elapsed()
    );
}

/// A runtime for node `me` of `nodes` with an empty program: enough for
/// entities built by hand (remote, output, collector) and the managers.
pub(crate) fn runtime(me: u32, nodes: u32) -> Runtime {
    let graph = Graph {
        nodes: Vec::new(),
        boxes: Vec::new(),
        entry: snet_core::NodeId(0),
    };
    Runtime::new(
        Program::new(Arc::new(graph)),
        Vec::new(),
        Net::new(Rank(me), nodes, crate::DEFAULT_INLINE_FIELDS),
        1,
    )
}
