//! The hidden benchmark commands of `snet` (`bench/comm` and `bench/run`
//! run them): [`pingpong`], the communication ping-pong between two nodes
//! of a transport, and [`iobench`], the record reader and writer alone.
//! They live here, in the `snet` command only, and not in the runner
//! library that every built program links.

pub mod iobench;
mod pin;
pub mod pingpong;
