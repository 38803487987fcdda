//! `snet`: the command-line front door.
//!
//! Subcommands: `check` (parse, resolve, type-check; print signatures),
//! `graph` (Graphviz of the network), `run` (execute on the FRONT engine),
//! `build` (an executable from a program and its C boxes, [`buildcmd`]).
//! Exit status: 0 success, 1 errors in the program or its run, 2 usage or
//! I/O problems (unreadable files).

use std::fs::File;
use std::io::{self, BufReader, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};

mod buildcmd;

use snet_engine::{Config, EngineError, InputLimit, SingleNode, Sink, Source, SourceError};
use snet_io::{Item, RecordReader, RecordWriter};

/// mimalloc: the engine allocates and frees many small records and entities
/// from several threads; mimalloc's per-thread free lists beat glibc here.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

extern "C" {
    /// mimalloc's option setter (linked in by the `mimalloc` crate).
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// Keeps peak memory low: commit arena memory on demand and return freed
/// pages at once (values of mimalloc 2's `mi_option_e`).
fn tune_allocator() {
    const MI_OPTION_ARENA_EAGER_COMMIT: std::ffi::c_int = 4;
    const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;
    // SAFETY: mi_option_set only stores an integer option; called before any
    // worker thread exists.
    unsafe {
        mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0);
        mi_option_set(MI_OPTION_PURGE_DELAY, 0);
    }
}

#[derive(Parser)]
#[command(name = "snet", version, about = "S-Net: declarative coordination of streaming networks, run on the FRONT engine")]
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
    },
    /// Run a program on a record stream.
    Run {
        file: PathBuf,
        /// Input record stream (default: standard input).
        #[arg(short, long)]
        input: Option<PathBuf>,
        /// Output record stream (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Worker threads (default: one per core).
        #[arg(short, long)]
        workers: Option<usize>,
        /// Bound admitted input by a formula in `output`, e.g. "8 + 2*output".
        #[arg(long, value_name = "FORMULA")]
        input_limit: Option<String>,
        /// Concurrent invocations allowed per box entity.
        #[arg(long, default_value_t = 1)]
        box_concurrency: usize,
        /// Entry network (default: the last top-level net).
        #[arg(long)]
        entry: Option<String>,
        /// Print run statistics to standard error.
        #[arg(long)]
        stats: bool,
    },
    /// Build an executable from a program and its C box code (C4SNet).
    ///
    /// The executable takes the options of `snet run` (-i, -o, -w,
    /// --input-limit, --box-concurrency, --stats).
    Build {
        /// The S-Net program.
        file: PathBuf,
        /// Box code: C sources, objects, static or shared libraries.
        inputs: Vec<PathBuf>,
        /// The executable to write.
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
        /// Entry network (default: the last top-level net).
        #[arg(long)]
        entry: Option<String>,
        /// Keep the generated C file and header (the directory is printed).
        #[arg(long)]
        keep: bool,
    },
}

fn main() -> ExitCode {
    tune_allocator();
    let cli = Cli::parse();
    let color = io::stderr().is_terminal();
    match cli.cmd {
        Cmd::Check { file, json, entry } => {
            let (out, err, code) = snet_front::check_command(&file, json, entry.as_deref(), color);
            print!("{out}");
            eprint!("{err}");
            ExitCode::from(code.clamp(0, 255) as u8)
        }
        Cmd::Graph { file, svg, entry, output } => {
            let (out, err, code) = snet_front::graph_command(&file, entry.as_deref(), svg);
            eprint!("{err}");
            if code == 0 {
                if let Err(e) = write_output(output.as_deref(), out.as_bytes()) {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            }
            ExitCode::from(code.clamp(0, 255) as u8)
        }
        Cmd::Build { file, inputs, output, include, lib_dirs, libs, cflags, entry, keep } => {
            ExitCode::from(buildcmd::build(buildcmd::BuildArgs {
                file,
                inputs,
                output,
                include,
                lib_dirs,
                libs,
                cflags: cflags.map(|f| f.split_whitespace().map(str::to_string).collect()).unwrap_or_default(),
                entry,
                keep,
                color,
            }))
        }
        Cmd::Run { file, input, output, workers, input_limit, box_concurrency, entry, stats } => {
            run(RunArgs { file, input, output, workers, input_limit, box_concurrency, entry, stats, color })
        }
    }
}

fn write_output(path: Option<&Path>, bytes: &[u8]) -> io::Result<()> {
    match path {
        Some(p) => std::fs::write(p, bytes).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display()))),
        None => io::stdout().write_all(bytes),
    }
}

struct RunArgs {
    file: PathBuf,
    input: Option<PathBuf>,
    output: Option<PathBuf>,
    workers: Option<usize>,
    input_limit: Option<String>,
    box_concurrency: usize,
    entry: Option<String>,
    stats: bool,
    color: bool,
}

/// Compiles a program; prints diagnostics; `None` if it has errors.
fn compile(file: &Path, entry: Option<&str>, color: bool) -> Result<Arc<snet_core::Graph>, u8> {
    let source = match std::fs::read_to_string(file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", file.display());
            return Err(2);
        }
    };
    let name = file.display().to_string();
    let compiled = snet_front::compile(&name, &source, entry);
    if !compiled.diagnostics.is_empty() {
        eprint!("{}", snet_front::render(&compiled.diagnostics, &name, &source, color));
    }
    match compiled.graph {
        Some(g) if !compiled.diagnostics.iter().any(|d| d.is_error()) => Ok(Arc::new(g)),
        _ => Err(1),
    }
}

struct ReaderSource<R: io::BufRead>(RecordReader<R>);

impl<R: io::BufRead + Send> Source for ReaderSource<R> {
    fn next_record(&mut self) -> Result<Option<snet_core::Record>, SourceError> {
        match self.0.next() {
            Ok(Some(Item::Data(r))) => Ok(Some(r)),
            Ok(Some(Item::Terminate)) | Ok(None) => Ok(None),
            Err(e) => Err(SourceError(e.to_string())),
        }
    }
}

struct WriterSink<W: Write>(RecordWriter<W>);

impl<W: Write + Send> Sink for WriterSink<W> {
    fn write(&mut self, rec: &snet_core::Record) -> io::Result<()> {
        self.0.write(rec)
    }
    fn finish(&mut self) -> io::Result<()> {
        self.0.write_terminate()?;
        self.0.flush()
    }
    fn abort(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

fn run(a: RunArgs) -> ExitCode {
    let graph = match compile(&a.file, a.entry.as_deref(), a.color) {
        Ok(g) => g,
        Err(code) => return ExitCode::from(code),
    };
    let mut config = Config { box_concurrency: a.box_concurrency, fast_exit: true, ..Config::default() };
    if let Some(w) = a.workers {
        if w == 0 {
            eprintln!("error: --workers must be at least 1");
            return ExitCode::from(2);
        }
        config.workers = w;
    }
    if let Some(l) = &a.input_limit {
        match InputLimit::parse(l) {
            Ok(l) => config.input_limit = Some(l),
            Err(e) => {
                eprintln!("error: --input-limit: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let source: Box<dyn Source> = match &a.input {
        None => Box::new(ReaderSource(RecordReader::with_name(BufReader::with_capacity(1 << 16, io::stdin()), "<stdin>"))),
        Some(p) => match File::open(p) {
            Ok(f) => Box::new(ReaderSource(RecordReader::with_name(
                BufReader::with_capacity(1 << 16, f),
                &p.display().to_string(),
            ))),
            Err(e) => {
                eprintln!("error: cannot open input {}: {e}", p.display());
                return ExitCode::from(2);
            }
        },
    };
    let sink: Box<dyn Sink> = match &a.output {
        None => Box::new(WriterSink(RecordWriter::new(BufWriter::with_capacity(1 << 16, io::stdout())))),
        Some(p) => match File::create(p) {
            Ok(f) => Box::new(WriterSink(RecordWriter::new(BufWriter::with_capacity(1 << 16, f)))),
            Err(e) => {
                eprintln!("error: cannot create output {}: {e}", p.display());
                return ExitCode::from(2);
            }
        },
    };
    let start = std::time::Instant::now();
    let result = snet_engine::run(graph, &config, source, sink, &snet_engine::NoBoxes, &SingleNode);
    match result {
        Ok(stats) => {
            if a.stats {
                eprintln!(
                    "snet: {} input, {} output records, {} entities, {} steals, {} workers, {:.3} s",
                    stats.input_records,
                    stats.output_records,
                    stats.entities_created,
                    stats.steals,
                    config.workers,
                    start.elapsed().as_secs_f64()
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            report(&e);
            ExitCode::from(match e {
                EngineError::Output(_) => 2,
                _ => 1,
            })
        }
    }
}

fn report(e: &EngineError) {
    eprintln!("error: {e}");
}
