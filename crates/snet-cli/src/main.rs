//! `snet`: the command-line front door.
//!
//! Subcommands: `check` (parse, resolve, type-check; print signatures),
//! `graph` (Graphviz of the network), `run` (execute on the FRONT engine),
//! `build` (an executable from a program and its C boxes, [`buildcmd`]).
//! Exit status: 0 success, 1 errors in the program or its run, 2 usage or
//! I/O problems (unreadable files).

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use bench::pingpong::PingpongTarget;
use clap::{Parser, Subcommand};
use snet_runner::{FieldMode, Notify, TransportKind};

mod archive;
mod bench;
mod buildcmd;
mod profile;

/// `snet --version`: the package version and the git revision it was built
/// from (`build.rs`).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (git ",
    env!("SNET_GIT_REV"),
    ")"
);

#[derive(Parser)]
#[command(
    name = "snet",
    version = VERSION,
    about = "S-Net: declarative coordination of streaming networks, run on the FRONT engine"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Parse, resolve and type-check a program; print each net's signature.
    Check {
        /// The S-Net program.
        file: PathBuf,
        /// Print signatures and diagnostics as JSON.
        #[arg(long)]
        json: bool,
        /// Entry network (default: the last top-level net).
        #[arg(long)]
        entry: Option<String>,
    },
    /// Write the network as Graphviz DOT (or SVG with --svg).
    Graph {
        file: PathBuf,
        /// Render SVG through Graphviz `dot` (must be installed).
        #[arg(long)]
        svg: bool,
        #[arg(long)]
        entry: Option<String>,
        /// Output file (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Colour each component by its busy share and label it with its
        /// counts, from a profile written by `snet run --profile-json FILE`.
        #[arg(long, value_name = "FILE")]
        profile: Option<PathBuf>,
    },
    /// Run a program on a record stream.
    Run {
        /// The S-Net program.
        file: PathBuf,
        /// Entry network (default: the last top-level net).
        #[arg(long)]
        entry: Option<String>,
        #[command(flatten)]
        opts: snet_runner::RunOptions,
    },
    /// Build an executable from a program and its C or C++ box code (C4SNet).
    ///
    /// The executable takes the options of `snet run` (-i, -o, -w,
    /// --input-limit, --box-concurrency, --stats).
    Build {
        /// The S-Net program.
        file: PathBuf,
        /// Box code: C or C++ (.cpp, .cc, .cxx) sources, objects, static or shared libraries.
        inputs: Vec<PathBuf>,
        /// The executable to write (with --library, the library).
        #[arg(short, long)]
        output: PathBuf,
        /// Extra include directory for the C sources (C4SNet.h is always found).
        #[arg(short = 'I', value_name = "DIR")]
        include: Vec<PathBuf>,
        /// Extra library directory.
        #[arg(short = 'L', value_name = "DIR")]
        lib_dirs: Vec<PathBuf>,
        /// Link with library LIB.
        #[arg(short = 'l', value_name = "LIB")]
        libs: Vec<String>,
        /// Extra C compiler flags (one argument, split at spaces), e.g. --cflags "-O3 -fopenmp".
        #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
        cflags: Option<String>,
        /// Extra C++ compiler flags for .cpp/.cc/.cxx sources (one argument, split at spaces), e.g. --cxxflags "-std=c++17".
        #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
        cxxflags: Option<String>,
        /// Entry network (default: the last top-level net).
        #[arg(long)]
        entry: Option<String>,
        /// Keep the generated C file and header (the directory is printed).
        #[arg(long)]
        keep: bool,
        /// Keep debug information and symbols (the runtime library's and your sources'):
        /// without it the program is linked without any, several times
        /// smaller. A `-g` in --cflags keeps it too.
        #[arg(long)]
        debug: bool,
        /// Write a C box library (a shared object) instead of an executable:
        /// the C boxes of a program whose other boxes are Python functions
        /// (the Python package's `add_c_boxes`) or Rust functions
        /// (`Network::add_c_library`). C sources only.
        #[arg(long)]
        library: bool,
    },
    /// The communication benchmark's ping-pong between node 0 and node 1
    /// (one JSON line per message size; `bench/comm` runs it everywhere).
    #[command(hide = true)]
    Pingpong {
        /// `shm`, `mpi` (under `mpirun -np 2`), `raw-spin` or `raw-futex`
        /// (hand-written 8-byte ping-pongs over a shared page).
        #[arg(long, default_value = "shm", value_enum)]
        transport: PingpongTarget,
        #[arg(long, default_value = "poll", value_parser = snet_runner::notify_parser())]
        notify: Notify,
        #[arg(long, default_value = "zero-copy", value_parser = snet_runner::fields_parser())]
        fields: FieldMode,
        /// Field sizes in bytes, comma separated (default: 8 B to 256 MiB,
        /// doubling); 0: an 8-byte message without a field.
        #[arg(long, value_delimiter = ',')]
        sizes: Vec<usize>,
    },
    /// The record I/O benchmark: the XML reader and writer alone on FILE,
    /// against a plain read of it (one JSON line; `bench/run --only io`).
    #[command(hide = true)]
    Iobench {
        file: PathBuf,
        /// Rounds (medians are reported).
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Write into this file instead of a sink.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Read through quick-xml only (the reader's fast path off).
        #[arg(long)]
        fallback: bool,
    },
    /// Check that a transport between nodes works: runs the transport
    /// conformance suite (ordering, payloads up to 64 MiB, flow control,
    /// shutdown). Under MPI: `mpirun -np 2 snet selftest`; shared memory:
    /// `snet selftest --transport shm --nodes 3`.
    Selftest {
        /// `mpi` (the default under mpirun), `shm` (node processes on this
        /// machine, started by this one) or `loopback`.
        #[arg(long, value_enum)]
        transport: Option<TransportKind>,
        /// Shared memory: the notification mode.
        #[arg(long, default_value = "sparse", value_parser = snet_runner::notify_parser())]
        notify: Notify,
        /// Shared memory: the field transfer mode.
        #[arg(long, default_value = "zero-copy", value_parser = snet_runner::fields_parser())]
        fields: FieldMode,
        /// Nodes of a loopback or shm run (MPI: the number of processes).
        #[arg(long, default_value_t = 4)]
        nodes: u32,
        /// Run only this case (repeatable): ordering, payloads,
        /// flow-control, shutdown, peer-dies (kills the last node; under
        /// MPI and shm only when named, and alone).
        #[arg(long = "case", value_name = "CASE")]
        cases: Vec<String>,
        /// Flow-control window in messages (small, to exercise it; shm:
        /// slots per ring).
        #[arg(long, default_value_t = 8)]
        window: usize,
    },
}

fn main() -> ExitCode {
    snet_runner::tune_allocator();
    let cli = Cli::parse();
    let color = io::stderr().is_terminal();
    match cli.cmd {
        Cmd::Check { file, json, entry } => {
            let (out, err, code) = snet_front::check_command(&file, json, entry.as_deref(), color);
            print!("{out}");
            eprint!("{err}");
            ExitCode::from(code.clamp(0, 255) as u8)
        }
        Cmd::Graph {
            file,
            svg,
            entry,
            output,
            profile,
        } => {
            let (out, err, code) = match profile {
                None => snet_front::graph_command(&file, entry.as_deref(), svg),
                Some(p) => match profile::load(&p) {
                    Ok(prof) => {
                        let drawn = snet_front::graph_command_decorated(
                            &file,
                            entry.as_deref(),
                            svg,
                            &|g, n| prof.decor(g, n),
                        );
                        // A profile of another program would draw nothing
                        // (or half): an error naming the mismatch.
                        match prof.mismatch(&p, &file).filter(|_| drawn.2 == 0) {
                            Some(e) => {
                                eprint!("{}", drawn.1);
                                eprintln!("error: {e}");
                                return ExitCode::from(2);
                            }
                            None => drawn,
                        }
                    }
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::from(2);
                    }
                },
            };
            eprint!("{err}");
            if code == 0 {
                if let Err(e) = write_output(output.as_deref(), out.as_bytes()) {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            }
            ExitCode::from(code.clamp(0, 255) as u8)
        }
        Cmd::Pingpong {
            transport,
            notify,
            fields,
            sizes,
        } => {
            let sizes = if sizes.is_empty() {
                (3..=28).map(|k| 1usize << k).collect()
            } else {
                sizes
            };
            ExitCode::from(bench::pingpong::pingpong_command(
                transport, notify, fields, &sizes,
            ))
        }
        Cmd::Iobench {
            file,
            rounds,
            output,
            fallback,
        } => ExitCode::from(bench::iobench::iobench_command(
            &file,
            rounds,
            output.as_deref(),
            fallback,
        )),
        Cmd::Selftest {
            transport,
            nodes,
            cases,
            window,
            notify,
            fields,
        } => {
            let transport = transport.unwrap_or_else(|| {
                if snet_runner::mpi_launched() {
                    TransportKind::Mpi
                } else {
                    TransportKind::Loopback
                }
            });
            ExitCode::from(snet_runner::selftest(
                transport,
                nodes,
                &cases,
                window,
                (notify, fields),
            ))
        }
        Cmd::Build {
            file,
            inputs,
            output,
            include,
            lib_dirs,
            libs,
            cflags,
            cxxflags,
            entry,
            keep,
            debug,
            library,
        } => ExitCode::from(buildcmd::build(buildcmd::BuildArgs {
            file,
            inputs,
            output,
            include,
            lib_dirs,
            libs,
            cflags: cflags
                .map(|f| f.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
            cxxflags: cxxflags
                .map(|f| f.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
            entry,
            keep,
            debug,
            color,
            library,
        })),
        Cmd::Run { file, entry, opts } => match compile(&file, entry.as_deref(), color) {
            Ok(graph) => ExitCode::from(snet_runner::run(graph, &opts, &snet_engine::NoBoxes)),
            Err(code) => ExitCode::from(code),
        },
    }
}

fn write_output(path: Option<&Path>, bytes: &[u8]) -> io::Result<()> {
    match path {
        Some(p) => std::fs::write(p, bytes)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display()))),
        None => io::stdout().write_all(bytes),
    }
}

/// Compiles a program; prints diagnostics; `None` if it has errors.
fn compile(file: &Path, entry: Option<&str>, color: bool) -> Result<Arc<snet_core::Graph>, u8> {
    let source = match std::fs::read_to_string(file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "error: cannot read {}: {}",
                file.display(),
                snet_front::os_reason(&e)
            );
            return Err(2);
        }
    };
    let name = file.display().to_string();
    let compiled = snet_front::compile(&name, &source, entry);
    if !compiled.diagnostics.is_empty() {
        eprint!(
            "{}",
            snet_front::render(&compiled.diagnostics, &name, &source, color)
        );
    }
    match compiled.graph {
        Some(g) if !compiled.diagnostics.iter().any(|d| d.is_error()) => Ok(Arc::new(g)),
        _ => Err(1),
    }
}
