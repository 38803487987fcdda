//! The options of `snet run` and of a built program ([`RunOptions`]).

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Parser, ValueEnum};
use snet_shm::{FieldMode, Notify};

/// Options of a built program (the `snet run` options that do not name the program).
#[derive(Parser, Debug)]
#[command(
    about = "An S-Net program built by `snet build`: reads records, runs the network, writes records"
)]
pub struct RunOptions {
    /// Input record stream (default: standard input).
    #[arg(short, long)]
    pub input: Option<PathBuf>,
    /// Output record stream (default: standard output).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Worker threads (default: one per core).
    #[arg(short, long)]
    pub workers: Option<usize>,
    /// Bound admitted input by a formula in `output` (records written so far)
    /// with `+ - * /` and parentheses, e.g. "8 + 2*output" or "20000 + output / 2".
    #[arg(long, value_name = "FORMULA")]
    pub input_limit: Option<String>,
    /// Concurrent invocations allowed per box entity.
    #[arg(long, default_value_t = 1)]
    pub box_concurrency: usize,
    /// Stack size of each box call, e.g. 512K, 8M, 1G (default 8M; only
    /// the pages a call uses take memory).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub box_stack: Option<usize>,
    /// Print run statistics to standard error (one line per node).
    #[arg(long)]
    pub stats: bool,
    /// Print what each node is doing (as on SIGUSR1) whenever nothing has
    /// moved on it for this many seconds.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub watchdog: Option<std::time::Duration>,
    /// Show one live line on standard error (records in and out, rate,
    /// elapsed time) when it is a terminal.
    #[arg(long)]
    pub progress: bool,
    /// Write a trace of the run to FILE (Trace Event Format JSON, for
    /// Perfetto or chrome://tracing): one process per node, one thread per
    /// worker, an event per box call, synchrocell firing and entity batch.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// With --trace: follow the records of every Nth input record hop by
    /// hop, starting with the first (records 1, 1+N, 1+2N, ...; flow
    /// arrows; 0: none).
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub trace_sample: u64,
    /// Print a table per component at the end (calls, records in and out,
    /// busy time and share, longest inbox, suspensions), per node.
    #[arg(long)]
    pub profile: bool,
    /// Write the profile of every node to FILE as JSON (what `snet graph
    /// --profile` draws).
    #[arg(long, value_name = "FILE")]
    pub profile_json: Option<PathBuf>,
    /// Run as this many nodes (Distributed S-Net; node 0 reads the input and
    /// writes the output). Needs `--transport shm` or `loopback`; under
    /// `mpirun` the node count is the number of processes.
    #[arg(long, value_name = "N")]
    pub nodes: Option<u32>,
    /// How the nodes talk: `shm` (one process per node on this machine,
    /// started by this one, talking through shared memory), `mpi` (the
    /// default when started by `mpirun`: one node per MPI process, node =
    /// rank), or `loopback`, which runs every node inside this process
    /// (each with its own engine, workers and field store), for testing
    /// and debugging distributed programs.
    #[arg(long, value_name = "KIND", value_enum)]
    pub transport: Option<TransportKind>,
    /// Shared memory: how a node notices a message. `poll` spins (lowest
    /// latency, a busy core per node), `interrupt` sleeps in the kernel
    /// until a sender wakes it, `sparse` polls while busy and sleeps when
    /// idle (senders wake only a sleeper).
    #[arg(long, value_name = "MODE", default_value = "sparse", value_parser = notify_parser())]
    pub notify: Notify,
    /// Shared memory: how field bytes move. `chunked` through the message
    /// rings (two copies), `single-copy` copied once into a shared arena,
    /// `zero-copy` fields live in the arena and only an offset moves.
    #[arg(long, value_name = "MODE", default_value = "zero-copy", value_parser = fields_parser())]
    pub fields: FieldMode,
    /// Fields of at most this many bytes travel inline with their records
    /// between nodes; larger ones travel by reference and are fetched only
    /// where a box needs them.
    #[arg(long, value_name = "BYTES", default_value_t = snet_engine::DEFAULT_INLINE_FIELDS)]
    pub inline_fields: usize,
    /// What a distributed run does when a node other than 0 is lost (its
    /// process killed, or a box ending it): `fail` ends the run; `respawn`
    /// (shared memory and loopback) starts the node again and sends it
    /// again the records it had not finished with, so the run goes on
    /// with the same output (boxes must be deterministic);
    /// `redistribute` is not built.
    #[arg(long, value_name = "MODE", value_enum, default_value = "fail")]
    pub on_node_loss: NodeLoss,
    /// Testing aid: place random components of the program on random
    /// nodes (chosen from SEED), which must change no output.
    #[arg(long, value_name = "SEED", hide = true)]
    pub scatter: Option<u64>,
}

/// How the nodes of a run talk (`--transport`; `snet selftest` takes the
/// same values).
#[derive(ValueEnum, Copy, Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // the names say it: shm, loopback, mpi
pub enum TransportKind {
    // No doc comments on the variants: clap would print them as a list in
    // `--help` instead of the one line of possible values.
    Shm,
    Loopback,
    Mpi,
}

/// What a distributed run does when a node other than 0 is lost
/// (`--on-node-loss`; `docs/distributed.md`, "What a failure does").
#[derive(ValueEnum, Copy, Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // the names say it; `--help` lists them on one line
pub enum NodeLoss {
    Fail,
    Respawn,
    Redistribute,
}

/// The parser of `--notify` ([`Notify`]'s names, in `--help` and in the
/// error for a bad value, as a plain list of possible values).
pub fn notify_parser() -> impl TypedValueParser<Value = Notify> {
    PossibleValuesParser::new(Notify::ALL.map(Notify::name)).try_map(|s| s.parse::<Notify>())
}

/// The parser of `--fields` ([`FieldMode`]'s names, as [`notify_parser`]).
pub fn fields_parser() -> impl TypedValueParser<Value = FieldMode> {
    PossibleValuesParser::new(FieldMode::ALL.map(FieldMode::name))
        .try_map(|s| s.parse::<FieldMode>())
}

/// A value of `--watchdog` or `--box-stack` that is refused (the value as
/// given).
#[derive(Debug, PartialEq, Eq)]
pub enum ValueError {
    /// Not a positive number of seconds.
    NotSeconds(String),
    /// Not a size.
    NotSize(String),
    /// A size too large to count in bytes.
    TooLarge(String),
    /// A box stack below 64K.
    StackTooSmall(String),
}

impl std::fmt::Display for ValueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValueError::NotSeconds(s) => write!(f, "`{s}` is not a positive number of seconds"),
            ValueError::NotSize(s) => {
                write!(f, "`{s}` is not a size (bytes, or a number with K, M or G)")
            }
            ValueError::TooLarge(s) => write!(f, "`{s}` is too large"),
            ValueError::StackTooSmall(s) => {
                write!(f, "`{s}` is too small: a box's stack needs at least 64K")
            }
        }
    }
}

impl std::error::Error for ValueError {}

/// `--watchdog`: a positive number of seconds.
fn parse_seconds(s: &str) -> Result<std::time::Duration, ValueError> {
    match s.trim().parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() && x < 1e9 => Ok(std::time::Duration::from_secs_f64(x)),
        _ => Err(ValueError::NotSeconds(s.to_string())),
    }
}

/// `--box-stack`: bytes, with an optional K, M or G suffix (powers of 1024).
fn parse_size(s: &str) -> Result<usize, ValueError> {
    let t = s.trim();
    let (digits, shift) = match t.as_bytes().last().map(u8::to_ascii_uppercase) {
        Some(b'K') => (&t[..t.len() - 1], 10),
        Some(b'M') => (&t[..t.len() - 1], 20),
        Some(b'G') => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    let n: usize = digits
        .parse()
        .map_err(|_| ValueError::NotSize(s.to_string()))?;
    let n = n
        .checked_mul(1 << shift)
        .ok_or_else(|| ValueError::TooLarge(s.to_string()))?;
    if n < 64 << 10 {
        return Err(ValueError::StackTooSmall(s.to_string()));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The three named options parse into their enums once, here; the
    /// defaults and the spellings are those of the command line.
    #[test]
    fn transport_notify_fields() {
        let o = RunOptions::try_parse_from(["prog"]).expect("no options");
        assert_eq!(
            (o.transport, o.notify, o.fields),
            (None, Notify::Sparse, FieldMode::ZeroCopy)
        );
        let o = RunOptions::try_parse_from([
            "prog",
            "--transport",
            "loopback",
            "--notify",
            "interrupt",
            "--fields",
            "single-copy",
        ])
        .expect("valid options");
        assert_eq!(
            (o.transport, o.notify, o.fields),
            (
                Some(TransportKind::Loopback),
                Notify::Interrupt,
                FieldMode::SingleCopy
            )
        );
        for (opt, bad) in [
            ("--transport", "tcp"),
            ("--notify", "busy"),
            ("--fields", "copy"),
        ] {
            let e = RunOptions::try_parse_from(["prog", opt, bad]).expect_err(bad);
            assert_eq!(e.kind(), clap::error::ErrorKind::InvalidValue, "{e}");
        }
    }

    #[test]
    fn box_stack_sizes() {
        assert_eq!(super::parse_size("64K"), Ok(64 << 10));
        assert_eq!(super::parse_size("8m"), Ok(8 << 20));
        assert_eq!(super::parse_size("1G"), Ok(1 << 30));
        assert_eq!(super::parse_size("1048576"), Ok(1 << 20));
        assert!(super::parse_size("12K")
            .unwrap_err()
            .to_string()
            .contains("too small"));
        assert!(super::parse_size("lots")
            .unwrap_err()
            .to_string()
            .contains("not a size"));
        assert!(super::parse_size("99999999999999999999G").is_err());
    }
}
