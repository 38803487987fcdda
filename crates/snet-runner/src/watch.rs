//! What a run shows while it runs: the live dump on `SIGUSR1` and
//! `--watchdog` (the engine's `snet_engine::Watch`, printed by each node's
//! monitor thread), and the `--progress` line.
//!
//! `SIGUSR1` is handled in every run: the handler only adds one to a
//! counter the monitors watch (an atomic add is async-signal-safe), so the
//! dump is written by a normal thread. Chosen crates: `signal-hook` (the
//! usual safe way to register a signal handler in Rust) and `indicatif`
//! (the usual terminal progress line; it draws nothing when standard error
//! is not a terminal, which is checked here too).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use snet_engine::Watch;

use crate::RunOptions;

/// The run's [`Watch`]: SIGUSR1 handled, `--watchdog`, `--progress`.
pub(crate) fn watch(opts: &RunOptions) -> Watch {
    let requests = Arc::new(AtomicU64::new(0));
    let r = requests.clone();
    // SAFETY: the handler only does an atomic add (async-signal-safe).
    let registered = unsafe {
        signal_hook::low_level::register(signal_hook::consts::SIGUSR1, move || {
            r.fetch_add(1, Ordering::Relaxed);
        })
    };
    if let Err(e) = registered {
        eprintln!("warning: SIGUSR1 will not print what the run is doing: {e}");
    }
    let progress = (opts.progress && std::io::stderr().is_terminal()).then(progress_line);
    Watch {
        requests,
        quiet: opts.watchdog,
        progress,
    }
}

/// The `--progress` line: called by node 0's monitor every 100 ms with the
/// records admitted and written so far.
fn progress_line() -> snet_engine::Progress {
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    let start = std::time::Instant::now();
    Arc::new(move |input: u64, output: u64, done: bool| {
        let secs = start.elapsed().as_secs_f64().max(1e-3);
        bar.set_message(format!(
            "{input} records in, {output} out, {:.0} records/s",
            output as f64 / secs
        ));
        if done {
            bar.finish_and_clear();
        } else {
            bar.tick();
        }
    })
}
