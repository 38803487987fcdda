//! The distribution layer interface (`runtime.md` §1, §3).
//!
//! One engine runs on every node; the distribution layer says which node this
//! is and how many exist, and (in later layers) carries records across nodes.
//! A single-process run uses [`SingleNode`]: everything is node 0, static
//! placement is a no-op, and dynamic placement accepts only node 0.

/// What the engine needs to know about the set of nodes.
pub trait Distribution: Sync {
    /// This process's node number.
    fn node(&self) -> u32;
    /// Number of nodes in the run.
    fn nodes(&self) -> u32;
}

/// The trivial distribution: one node.
#[derive(Copy, Clone, Debug, Default)]
pub struct SingleNode;

impl Distribution for SingleNode {
    fn node(&self) -> u32 {
        0
    }
    fn nodes(&self) -> u32 {
        1
    }
}
