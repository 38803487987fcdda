//! The runtime of executables produced by `snet build`.
//!
//! `snet build` generates a C `main` that calls [`snet_runner_main`] with the
//! program text (embedded at build time), the entry network's name and the
//! table of box trampolines; this crate's static library
//! (`libsnet_runner.a`) holds everything else: the front end (the program is
//! compiled again at start — milliseconds, and the executable can never run
//! a graph that disagrees with its trampolines), the engine, the record
//! reader and writer, and the C4SNet ABI. The executable takes the same
//! options and gives the same errors and exit statuses as `snet run`.

use std::ffi::{c_char, c_int, CStr};
use std::fs::File;
use std::io::{self, BufReader, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;

use c4snet::{BoxEntry, C4SNet};
use snet_engine::{
    Config, EngineError, InputLimit, LanguageInterface, SingleNode, Sink, Source, SourceError,
};
use snet_io::{BackgroundWriter, Item, RecordReader, RecordWriter};

pub mod iobench;
pub mod pingpong;

pub use iobench::iobench_command;

/// Prints one line on stderr with a single `write`: under `mpirun` every
/// rank's stderr is forwarded into one stream, and `eprintln!` (several
/// writes per line) let the ranks' report lines interleave mid-line.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::say_raw(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// Writes `text` to stderr in one `write_all` on the locked handle.
fn say_raw(text: &str) {
    let _ = io::stderr().lock().write_all(text.as_bytes());
}

/// The global allocator: mimalloc (the engine allocates and frees many small
/// records and entities from several threads; mimalloc's per-thread free
/// lists beat glibc here), or the system allocator when the environment
/// variable `SNET_SYSTEM_ALLOC` is set at start-up, so that valgrind's leak
/// checker sees every allocation (`.ci/leakcheck.sh`). The choice is made
/// once, at the first allocation, and never changes. Declared here so that
/// both `snet` and every built program use it.
#[global_allocator]
static GLOBAL: SnetAlloc = SnetAlloc;

pub struct SnetAlloc;

/// 0: not decided yet, 1: mimalloc, 2: system.
static ALLOCATOR: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

impl SnetAlloc {
    #[inline]
    fn system(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        match ALLOCATOR.load(Relaxed) {
            1 => false,
            2 => true,
            _ => {
                // SAFETY: getenv with a NUL-terminated name; it does not allocate.
                let sys = !unsafe { libc::getenv(c"SNET_SYSTEM_ALLOC".as_ptr()) }.is_null();
                // First decision wins (the first allocation happens before any thread starts).
                let _ = ALLOCATOR.compare_exchange(0, if sys { 2 } else { 1 }, Relaxed, Relaxed);
                ALLOCATOR.load(Relaxed) == 2
            }
        }
    }
}

// SAFETY: forwards every call to one allocator, the same one for the life
// of the process, so memory is always freed by its allocator (`mi_free`
// frees blocks of `mi_malloc` and `mi_malloc_aligned` alike); requests go to
// mimalloc's plain entry points only where its blocks' natural alignment
// satisfies them (`plain`).
unsafe impl std::alloc::GlobalAlloc for SnetAlloc {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe {
            if self.system() {
                std::alloc::System.alloc(l)
            } else if plain(l.size(), l.align()) {
                mi_malloc(l.size()).cast()
            } else {
                mimalloc::MiMalloc.alloc(l)
            }
        }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        // SAFETY: `p` came from the same allocator (the choice never changes).
        unsafe {
            if self.system() {
                std::alloc::System.dealloc(p, l)
            } else {
                mimalloc::MiMalloc.dealloc(p, l)
            }
        }
    }
    unsafe fn alloc_zeroed(&self, l: std::alloc::Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe {
            if self.system() {
                std::alloc::System.alloc_zeroed(l)
            } else if plain(l.size(), l.align()) {
                mi_zalloc(l.size()).cast()
            } else {
                mimalloc::MiMalloc.alloc_zeroed(l)
            }
        }
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, n: usize) -> *mut u8 {
        // SAFETY: as in `dealloc`.
        unsafe {
            if self.system() {
                std::alloc::System.realloc(p, l, n)
            } else if plain(n, l.align()) {
                mi_realloc(p.cast(), n).cast()
            } else {
                mimalloc::MiMalloc.realloc(p, l, n)
            }
        }
    }
}

/// Whether mimalloc's plain `mi_malloc` serves a request: every mimalloc
/// block is a whole number of 8-byte words from a 16-aligned page start,
/// so an alignment of up to 8 that is not above the size needs nothing
/// more. (The `mimalloc` crate sends every request through
/// `mi_malloc_aligned`, whose fast path needs a free block at hand in the
/// size's page; when the page's free list is empty -- in a loop that frees
/// each block before allocating the next, that is every time -- a size
/// that is not a power of two takes the over-allocating path: ~250
/// instructions instead of ~20, measured with callgrind on the shm
/// transport's round trip.)
#[inline]
fn plain(size: usize, align: usize) -> bool {
    align <= 8 && align <= size
}

extern "C" {
    /// mimalloc's option setter (linked in by the `mimalloc` crate).
    fn mi_option_set(option: c_int, value: std::ffi::c_long);
    /// mimalloc's own allocation entry points (same library).
    fn mi_malloc(size: usize) -> *mut std::ffi::c_void;
    fn mi_zalloc(size: usize) -> *mut std::ffi::c_void;
    fn mi_realloc(p: *mut std::ffi::c_void, size: usize) -> *mut std::ffi::c_void;
}

/// Turns transparent huge pages off for this process before anything
/// allocates (see [`tune_allocator`]): run by the loader ahead of the
/// constructors of the libraries, mimalloc's included.
extern "C" fn disable_huge_pages() {
    // SAFETY: prctl with an integer flag; no memory is passed. A failure
    // (an old kernel) leaves huge pages on, which only costs memory.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

#[used]
#[link_section = ".init_array.00100"]
static DISABLE_HUGE_PAGES: extern "C" fn() = disable_huge_pages;

/// Keeps peak memory low: commit arena memory on demand, return freed
/// pages at once (values of `mi_option_e`, the same in mimalloc 2 and 3),
/// and no transparent huge pages for this process. Call first thing.
///
/// Huge pages doubled the peak RSS of the benchmarks (a 2 MiB page is
/// resident as soon as one byte of it is touched: `identity.snet` over
/// 100k records at 2 workers, 33 → 10 MB) for no measurable speed.
/// mimalloc's own `allow_thp` option is read when it initialises, before
/// `main`, so the process asks the kernel instead (`PR_SET_THP_DISABLE`,
/// inherited by the node processes it forks).
pub fn tune_allocator() {
    disable_huge_pages();
    if GLOBAL.system() {
        return;
    }
    const MI_OPTION_ARENA_EAGER_COMMIT: c_int = 4;
    const MI_OPTION_PURGE_DELAY: c_int = 15;
    // SAFETY: mi_option_set only stores an integer option; called before any
    // worker thread exists.
    unsafe {
        mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0);
        mi_option_set(MI_OPTION_PURGE_DELAY, 0);
    }
}

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
    /// Bound admitted input by a formula in `output`, e.g. "8 + 2*output".
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
    #[arg(long, value_name = "KIND", value_parser = ["shm", "loopback", "mpi"])]
    pub transport: Option<String>,
    /// Shared memory: how a node notices a message. `poll` spins (lowest
    /// latency, a busy core per node), `interrupt` sleeps in the kernel
    /// until a sender wakes it, `sparse` polls while busy and sleeps when
    /// idle (senders wake only a sleeper).
    #[arg(long, value_name = "MODE", default_value = "sparse", value_parser = ["poll", "interrupt", "sparse"])]
    pub notify: String,
    /// Shared memory: how field bytes move. `chunked` through the message
    /// rings (two copies), `single-copy` copied once into a shared arena,
    /// `zero-copy` fields live in the arena and only an offset moves.
    #[arg(long, value_name = "MODE", default_value = "zero-copy", value_parser = ["chunked", "single-copy", "zero-copy"])]
    pub fields: String,
    /// Fields of at most this many bytes travel inline with their records
    /// between nodes; larger ones travel by reference and are fetched only
    /// where a box needs them.
    #[arg(long, value_name = "BYTES", default_value_t = snet_engine::DEFAULT_INLINE_FIELDS)]
    pub inline_fields: usize,
    /// Testing aid: place random components of the program on random
    /// nodes (chosen from SEED), which must change no output.
    #[arg(long, value_name = "SEED", hide = true)]
    pub scatter: Option<u64>,
}

struct ReaderSource<R: io::BufRead>(RecordReader<R>);

/// A reader of C4SNet fields, named `name` in errors.
fn reader<R: io::BufRead>(input: R, name: &str) -> RecordReader<R> {
    RecordReader::with_name(input, name).with_codecs(c4snet::text_codecs())
}

/// A writer of C4SNet fields.
fn writer<W: Write>(out: W) -> RecordWriter<W> {
    RecordWriter::new(out).with_codecs(c4snet::text_codecs())
}

impl<R: io::BufRead + Send> Source for ReaderSource<R> {
    fn next_record(&mut self) -> Result<Option<snet_core::Record>, SourceError> {
        match self.0.next() {
            Ok(Some(Item::Data(r))) => Ok(Some(r)),
            Ok(Some(Item::Terminate)) | Ok(None) => Ok(None),
            Err(e) => Err(SourceError::new(e)),
        }
    }

    fn next_ready(&mut self) -> Option<Option<snet_core::Record>> {
        match self.0.next_buffered()? {
            Item::Data(r) => Some(Some(r)),
            Item::Terminate => Some(None),
        }
    }

    fn line(&self) -> Option<u64> {
        Some(self.0.line())
    }
}

/// Writes records to a [`RecordWriter`]; `flush` is the output thread's
/// handle for [`Sink::idle_flush`] (records then leave the writer one by
/// one, and the thread bounds their delay).
struct WriterSink<W: Write> {
    writer: RecordWriter<W>,
    flush: Option<snet_io::FlushSoon>,
}

impl<W: Write + Send> Sink for WriterSink<W> {
    fn idle_flush(&self) -> Option<snet_engine::IdleFlush> {
        self.flush.clone().map(|f| {
            let f: snet_engine::IdleFlush = Arc::new(move || f.flush_soon());
            f
        })
    }
    fn write(&mut self, rec: &snet_core::Record) -> io::Result<()> {
        self.writer.write(rec)
    }
    fn finish(&mut self) -> io::Result<()> {
        self.writer.write_terminate()?;
        self.writer.flush()
    }
    fn abort(&mut self) -> io::Result<()> {
        self.writer.flush()
    }
}

/// Runs `graph` with `opts`; returns the exit status (0 ok, 1 run error, 2 usage/I-O).
pub fn run(
    graph: Arc<snet_core::Graph>,
    opts: &RunOptions,
    language: &(dyn LanguageInterface + Sync),
) -> u8 {
    // fast_exit: the process ends right after the run; freeing the entity graph would only cost time.
    // Under the leak checker (system allocator) the graph is freed so that leaks stand out.
    let mut config = Config {
        box_concurrency: opts.box_concurrency.max(1),
        fast_exit: !GLOBAL.system(),
        ..Config::default()
    };
    // Fields are C4SNet's (the record format's default interface): its
    // codec moves them between nodes, its text codec reads and writes them.
    config.codecs.add(c4snet::codec());
    if let Some(w) = opts.workers {
        if w == 0 {
            say!("error: --workers must be at least 1");
            return 2;
        }
        config.workers = w;
    }
    if let Some(b) = opts.box_stack {
        config.box_stack = b;
    }
    if let Some(l) = &opts.input_limit {
        match InputLimit::parse(l) {
            Ok(l) => config.input_limit = Some(l),
            Err(e) => {
                say!("error: --input-limit: {e}");
                return 2;
            }
        }
    }
    config.inline_fields = opts.inline_fields;
    if opts.nodes == Some(0) {
        say!("error: --nodes must be at least 1");
        return 2;
    }
    let start = std::time::Instant::now();
    let result = match opts.transport.as_deref() {
        Some("shm") => return run_shm(graph, &config, opts, language),
        Some("mpi") => return run_mpi(graph, &config, opts, language),
        None if mpi_launched() => return run_mpi(graph, &config, opts, language),
        Some("loopback") => {
            let nodes = opts.nodes.unwrap_or(1);
            let io = match open_io(opts) {
                Ok(io) => io,
                Err(code) => return code,
            };
            let graph = scatter(graph, opts, nodes);
            snet_engine::run_loopback(graph, &config, Some(io), language, nodes)
        }
        _ => {
            if let Some(n) = opts.nodes.filter(|&n| n > 1) {
                say!(
                    "error: --nodes {n} needs a transport: --transport shm (processes on this machine), --transport loopback, or start the program with mpirun"
                );
                return 2;
            }
            let io = match open_io(opts) {
                Ok(io) => io,
                Err(code) => return code,
            };
            let graph = scatter(graph, opts, 1);
            snet_engine::run(graph, &config, Some(io), language, &SingleNode).map(|s| vec![s])
        }
    };
    match result {
        Ok(stats) => {
            if opts.stats {
                if stats.len() == 1 {
                    let s = &stats[0];
                    say!(
                        "snet: {} input, {} output records, {} entities, {} steals, {} suspensions, {} workers, {:.3} s",
                        s.input_records,
                        s.output_records,
                        s.entities_created,
                        s.steals,
                        s.suspensions,
                        config.workers,
                        start.elapsed().as_secs_f64()
                    );
                } else {
                    for s in &stats {
                        say!("snet: {s}");
                    }
                    say!(
                        "snet: {} nodes, {} workers each, {:.3} s",
                        stats.len(),
                        config.workers,
                        start.elapsed().as_secs_f64()
                    );
                }
            }
            0
        }
        Err(e) => report_error(&e),
    }
}

/// Prints a run's error; returns the exit status.
fn report_error(e: &EngineError) -> u8 {
    if let EngineError::Input(s) = e {
        if let Some(o) = s.downcast_ref::<OpenError>() {
            say!("error: {o}");
            return 2;
        }
    }
    say!("error: {e}");
    match e {
        EngineError::Output(_) => 2,
        _ => 1,
    }
}

fn scatter(graph: Arc<snet_core::Graph>, opts: &RunOptions, nodes: u32) -> Arc<snet_core::Graph> {
    match opts.scatter {
        Some(seed) => Arc::new(graph.scatter(nodes, seed, 0.3)),
        None => graph,
    }
}

/// The input or output file could not be opened.
#[derive(Debug)]
struct OpenError(String);

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OpenError {}

/// Opens the input and output streams (node 0's).
/// Node 0's record streams.
type Streams = (Box<dyn Source>, Box<dyn Sink>);

fn open_io(opts: &RunOptions) -> Result<Streams, u8> {
    open_streams(opts).map_err(|e| {
        say!("error: {e}");
        2
    })
}

fn open_streams(opts: &RunOptions) -> Result<Streams, OpenError> {
    let source: Box<dyn Source> = match &opts.input {
        None => Box::new(ReaderSource(reader(
            BufReader::with_capacity(1 << 16, io::stdin()),
            "<stdin>",
        ))),
        Some(p) => match File::open(p) {
            Ok(f) => Box::new(ReaderSource(reader(
                BufReader::with_capacity(1 << 16, f),
                &p.display().to_string(),
            ))),
            Err(e) => return Err(OpenError(format!("cannot open input {}: {e}", p.display()))),
        },
    };
    // The output's `write` calls run on a thread of their own (beside the
    // workers, which only format records into its chunks).
    let background = |out: Box<dyn Write + Send>| {
        BackgroundWriter::new(out, "snet-writer")
            .map(|w| {
                let flush = Some(w.flush_soon_handle());
                Box::new(WriterSink {
                    writer: writer(w).unbuffered(),
                    flush,
                }) as Box<dyn Sink>
            })
            .map_err(|e| OpenError(format!("cannot start the output thread: {e}")))
    };
    let sink = match &opts.output {
        None => background(Box::new(io::stdout()))?,
        Some(p) => match File::create(p) {
            Ok(f) => background(Box::new(f))?,
            Err(e) => {
                return Err(OpenError(format!(
                    "cannot create output {}: {e}",
                    p.display()
                )))
            }
        },
    };
    Ok((source, sink))
}

/// A source that fails at once: node 0 of an MPI run whose input or output
/// cannot be opened still runs, so that every node hears of the failure.
struct FailedSource(Option<OpenError>);

impl Source for FailedSource {
    fn next_record(&mut self) -> Result<Option<snet_core::Record>, SourceError> {
        let e = self
            .0
            .take()
            .unwrap_or_else(|| OpenError("input unavailable".into()));
        Err(SourceError::new(e))
    }
}

/// Node `me`'s record streams in a multi-process run: node 0's input and
/// output; if it cannot open them, a source that fails at once, so that
/// the run starts anyway and every node hears of the failure.
fn node_streams(me: u32, opts: &RunOptions) -> Option<Streams> {
    (me == 0).then(|| match open_streams(opts) {
        Ok(io) => io,
        Err(e) => (
            Box::new(FailedSource(Some(e))) as Box<dyn Source>,
            Box::new(NullSink) as Box<dyn Sink>,
        ),
    })
}

/// The exit status of node `me` (not node 0) of a multi-process run: its
/// `--stats` line, and only errors of its own transport (node 0 reports
/// the others, which reached it).
fn other_node_status(me: u32, result: &Result<snet_engine::Stats, EngineError>) -> u8 {
    match result {
        Ok(_) => 0,
        Err(e @ EngineError::Distribution(_)) => {
            say!("error: node {me}: {e}");
            1
        }
        Err(_) => 1,
    }
}

struct NullSink;

impl Sink for NullSink {
    fn write(&mut self, _: &snet_core::Record) -> io::Result<()> {
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn abort(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(feature = "mpi")]
pub fn mpi_launched() -> bool {
    snet_mpi::launched()
}

#[cfg(not(feature = "mpi"))]
pub fn mpi_launched() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

#[cfg(not(feature = "mpi"))]
fn run_mpi(
    _: Arc<snet_core::Graph>,
    _: &Config,
    _: &RunOptions,
    _: &(dyn LanguageInterface + Sync),
) -> u8 {
    say!("error: this snet was built without MPI (cargo feature `mpi`); rebuild with it to run under mpirun");
    2
}

/// One node of an MPI run: node = rank. Node 0 reads and writes the
/// records; every node prints its own `--stats` line, and only node 0
/// prints errors (the others' failures reach it), except a transport
/// failure, which a node reports itself.
#[cfg(feature = "mpi")]
fn run_mpi(
    graph: Arc<snet_core::Graph>,
    config: &Config,
    opts: &RunOptions,
    language: &(dyn LanguageInterface + Sync),
) -> u8 {
    use snet_engine::dist::Transport;
    let start = std::time::Instant::now();
    let t = match snet_mpi::MpiTransport::start() {
        Ok(t) => t,
        Err(e) => {
            say!("error: cannot start MPI: {e}");
            return 2;
        }
    };
    let (me, nodes) = (t.node(), t.nodes());
    if nodes > 1 {
        c4snet::crash::set_node(me);
    }
    if let Some(n) = opts.nodes.filter(|&n| n != nodes) {
        if me == 0 {
            say!("error: --nodes {n}, but mpirun started {nodes} processes (leave out --nodes under mpirun)");
        }
        t.finish();
        return 2;
    }
    let graph = scatter(graph, opts, nodes);
    let io = node_streams(me, opts);
    let result = snet_engine::run(graph, config, io, language, &t);
    // Report first, then finalize with the other ranks: a rank that ends
    // with a nonzero status makes mpirun stop the job, and node 0's report
    // must be out by then.
    let code = match result {
        Ok(s) => {
            if opts.stats {
                say!("snet: {s}");
                if me == 0 {
                    say!(
                        "snet: {nodes} nodes (mpi), {} workers each, {:.3} s",
                        config.workers,
                        start.elapsed().as_secs_f64()
                    );
                }
            }
            0
        }
        Err(e) if me == 0 => report_error(&e),
        Err(_) => other_node_status(me, &result),
    };
    t.finish();
    code
}

/// Node 0's or a started node's endpoint of a shared-memory run, and (on
/// node 0) the node processes it started.
type ShmEndpoint = (Arc<snet_shm::ShmTransport>, Option<snet_shm::launch::Nodes>);

/// Joins the shared-memory run this process was started for, or (node 0)
/// creates one of `nodes` nodes and starts the other node processes.
fn shm_endpoint(nodes: u32, notify: &str, fields: &str) -> Result<ShmEndpoint, String> {
    use snet_shm::launch;
    if let Some(started) = launch::started_as_node() {
        let (k, fd) = started?;
        let t = launch::attach_as_node(k, fd)?;
        return Ok((Arc::new(t), None));
    }
    let notify =
        snet_shm::Mode::parse(notify).ok_or_else(|| format!("no notify mode `{notify}`"))?;
    let fields =
        snet_shm::FieldMode::parse(fields).ok_or_else(|| format!("no field mode `{fields}`"))?;
    let g = snet_shm::Geometry::new(nodes, notify, fields);
    let seg = snet_shm::Segment::create(g)
        .map_err(|e| format!("cannot create the shared-memory segment: {e}"))?;
    let t = Arc::new(snet_shm::ShmTransport::new(seg, 0).map_err(|e| e.to_string())?);
    let started = if nodes > 1 {
        Some(launch::Nodes::start(&t).map_err(|e| e.to_string())?)
    } else {
        None
    };
    Ok((t, started))
}

/// One node of a shared-memory run (`--transport shm`). Node 0 is the
/// process the user started: it starts the other nodes (copies of itself,
/// see `snet_shm::launch`), reads and writes the records, waits for the
/// others to end and reports; a node that died makes the run fail naming
/// it. The other nodes print only their `--stats` line and errors of their
/// own transport.
fn run_shm(
    graph: Arc<snet_core::Graph>,
    config: &Config,
    opts: &RunOptions,
    language: &(dyn LanguageInterface + Sync),
) -> u8 {
    use snet_engine::dist::Transport;
    let start = std::time::Instant::now();
    let (t, started) = match shm_endpoint(opts.nodes.unwrap_or(1), &opts.notify, &opts.fields) {
        Ok(e) => e,
        Err(e) => {
            say!("error: shm: {e}");
            return 2;
        }
    };
    let (me, nodes) = (t.node(), t.nodes());
    if nodes > 1 {
        c4snet::crash::set_node(me);
    }
    t.install_field_allocator();
    let graph = scatter(graph, opts, nodes);
    let io = node_streams(me, opts);
    let result = snet_engine::run(graph, config, io, language, &*t);
    if me != 0 {
        if let (Ok(s), true) = (&result, opts.stats) {
            say!("snet: {s}");
            say!("snet: shm node {me}: {}", t.counters());
        }
        return other_node_status(me, &result);
    }
    // Node 0: the others end right after the run (a failed run: they were
    // told, or are killed after a short grace).
    let grace = Duration::from_secs(if result.is_ok() { 30 } else { 3 });
    let ended = started.map(|n| n.wait(grace)).unwrap_or_default();
    match result {
        Ok(s) => {
            if let Some(e) = ended.iter().find(|e| e.status != 0) {
                say!(
                    "error: node {} {} after the run",
                    e.node,
                    snet_shm::segment::describe_status(e.status)
                );
                return 1;
            }
            if opts.stats {
                say!("snet: {s}");
                say!("snet: shm node 0: {}", t.counters());
                if !ended.is_empty() {
                    let cpu: Vec<String> = ended
                        .iter()
                        .map(|e| format!("node {} {:.3} s", e.node, e.cpu.as_secs_f64()))
                        .collect();
                    say!("snet: cpu time: {}", cpu.join(", "));
                }
                let g = t.geometry();
                say!(
                    "snet: {nodes} nodes (shm, notify {}, fields {}), {} workers each, {:.3} s",
                    g.notify.name(),
                    g.fields.name(),
                    config.workers,
                    start.elapsed().as_secs_f64()
                );
            }
            0
        }
        Err(e) => report_error(&e),
    }
}

/// Runs the transport conformance suite (`snet selftest`): with
/// `transport` `loopback`, every case on `nodes` in-process nodes; with
/// `mpi`, this process is one rank and runs `cases` in order with the
/// other ranks (SPMD). Node 0 prints a line per case. `peer-dies` kills the
/// last rank outright, so under MPI it must be run alone, and `mpirun`
/// (not this process) reports the death.
pub fn selftest(
    transport: &str,
    nodes: u32,
    cases: &[String],
    window: usize,
    shm: (&str, &str),
) -> u8 {
    use snet_engine::dist::{conformance, loopback::Loopback};
    let cases: Vec<&str> = if cases.is_empty() {
        conformance::CASES
            .iter()
            .copied()
            .filter(|c| transport == "loopback" || *c != "peer-dies")
            .collect()
    } else {
        cases.iter().map(String::as_str).collect()
    };
    if let Some(bad) = cases.iter().find(|c| !conformance::CASES.contains(c)) {
        say!(
            "error: no case `{bad}` (cases: {})",
            conformance::CASES.join(", ")
        );
        return 2;
    }
    match transport {
        "loopback" => {
            for case in cases {
                let r = conformance::run_in_threads_cases(
                    &[case],
                    &|| Loopback::with_window(nodes.max(2), window),
                    &|t: &Loopback| t.kill(),
                );
                match r {
                    Ok(()) => println!("loopback, {} nodes: {case} ok", nodes.max(2)),
                    Err(e) => {
                        say!("error: loopback: {e}");
                        return 1;
                    }
                }
            }
            0
        }
        "mpi" => selftest_mpi(&cases, window),
        "shm" => selftest_shm(&cases, nodes.max(2), window, shm.0, shm.1),
        other => {
            say!("error: no transport `{other}`");
            2
        }
    }
}

/// The suite over shared memory: node 0 starts the other node processes
/// (as a run does); every node runs the cases in order. `peer-dies` kills
/// the last node with SIGKILL, and node 0's watcher reports it to all.
/// `window` is the ring's slot count (rounded up to a power of two).
fn selftest_shm(cases: &[&str], nodes: u32, window: usize, notify: &str, fields: &str) -> u8 {
    use snet_engine::dist::{conformance, Transport};
    if snet_shm::launch::started_as_node().is_none() {
        // SAFETY: before any other thread of ours exists (node processes
        // inherit the variable).
        unsafe {
            std::env::set_var(
                "SNET_SHM_SLOTS",
                window.max(2).next_power_of_two().to_string(),
            )
        };
    }
    let (t, started) = match shm_endpoint(nodes, notify, fields) {
        Ok(e) => e,
        Err(e) => {
            say!("error: shm: {e}");
            return 2;
        }
    };
    let die = || {
        // SAFETY: kill(2) on this very process; SIGKILL cannot be caught.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    };
    let g = t.geometry();
    let mut status = 0;
    for case in cases {
        match conformance::run_case(case, &*t, &die) {
            Ok(()) if t.node() == 0 => println!(
                "shm (notify {}, fields {}), {} nodes: {case} ok",
                g.notify.name(),
                g.fields.name(),
                t.nodes()
            ),
            Ok(()) => {}
            Err(e) => {
                say!("error: node {}: case {case}: {e}", t.node());
                status = 1;
                break;
            }
        }
    }
    t.close();
    if let Some(n) = started {
        let died = cases.contains(&"peer-dies").then_some(t.nodes() - 1);
        for e in n.wait(Duration::from_secs(if status == 0 { 30 } else { 3 })) {
            if e.status != 0 && Some(e.node) != died {
                say!(
                    "error: node {} {}",
                    e.node,
                    snet_shm::segment::describe_status(e.status)
                );
                status = 1;
            }
        }
    }
    status
}

#[cfg(not(feature = "mpi"))]
fn selftest_mpi(_: &[&str], _: usize) -> u8 {
    say!("error: this snet was built without MPI (cargo feature `mpi`)");
    2
}

#[cfg(feature = "mpi")]
fn selftest_mpi(cases: &[&str], window: usize) -> u8 {
    use snet_engine::dist::{conformance, Transport};
    if !mpi_launched() {
        say!(
            "error: `snet selftest --transport mpi` runs one process per node: start it with mpirun, e.g. `mpirun -np 2 snet selftest` (as root, or with more processes than cores, Open MPI also needs `--allow-run-as-root` / `--oversubscribe`)"
        );
        return 2;
    }
    let t = match snet_mpi::MpiTransport::with_window(window) {
        Ok(t) => t,
        Err(e) => {
            say!("error: cannot start MPI: {e}");
            return 2;
        }
    };
    let die = || {
        // SAFETY: kill(2) on this very process; SIGKILL cannot be caught.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    };
    let mut status = 0;
    for case in cases {
        match conformance::run_case(case, &t, &die) {
            Ok(()) if t.node() == 0 => println!("mpi, {} nodes: {case} ok", t.nodes()),
            Ok(()) => {}
            Err(e) => {
                say!("error: node {}: case {case}: {e}", t.node());
                status = 1;
                break;
            }
        }
    }
    t.finish();
    status
}

/// The communication benchmark's ping-pong (`snet pingpong`, see
/// [`pingpong`]): over `transport` (`shm`, `mpi` under mpirun, or the
/// hand-written `raw-spin` / `raw-futex`), for each of `sizes`.
pub fn pingpong_command(transport: &str, notify: &str, fields: &str, sizes: &[usize]) -> u8 {
    use snet_engine::dist::Transport;
    let result = match transport {
        "raw-spin" | "raw-futex" => pingpong::raw(transport == "raw-futex", 20000),
        "shm" => {
            let (t, started) = match shm_endpoint(2, notify, fields) {
                Ok(e) => e,
                Err(e) => {
                    say!("error: shm: {e}");
                    return 2;
                }
            };
            t.install_field_allocator();
            let g = t.geometry();
            let r = pingpong::over_transport(&*t, sizes, ("shm", g.notify.name(), g.fields.name()));
            t.close();
            if let Some(n) = started {
                for e in n.wait(Duration::from_secs(10)) {
                    if e.status != 0 {
                        say!(
                            "error: node {} {}",
                            e.node,
                            snet_shm::segment::describe_status(e.status)
                        );
                        return 1;
                    }
                }
            }
            r
        }
        "mpi" => pingpong_mpi(sizes),
        other => Err(format!("no transport `{other}`")),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            say!("error: pingpong: {e}");
            1
        }
    }
}

#[cfg(feature = "mpi")]
fn pingpong_mpi(sizes: &[usize]) -> Result<(), String> {
    use snet_engine::dist::Transport;
    let t = snet_mpi::MpiTransport::start().map_err(|e| format!("cannot start MPI: {e}"))?;
    let r = if t.nodes() == 2 {
        pingpong::over_transport(&t, sizes, ("mpi", "-", "-"))
    } else {
        Err("the MPI ping-pong needs exactly 2 ranks (mpirun -np 2)".into())
    };
    t.finish();
    r
}

#[cfg(not(feature = "mpi"))]
fn pingpong_mpi(_: &[usize]) -> Result<(), String> {
    Err("this snet was built without MPI (cargo feature `mpi`)".into())
}

/// Linker flags for the MPI library this runner was built with (`snet
/// build` adds them; empty without the `mpi` feature).
#[cfg(feature = "mpi")]
pub const MPI_LINK_ARGS: &str = snet_mpi::LINK_ARGS;
#[cfg(not(feature = "mpi"))]
pub const MPI_LINK_ARGS: &str = "";

/// The entry point of a built executable.
///
/// # Safety
/// `argv` holds `argc` NUL-terminated strings; `program` and `name` are
/// NUL-terminated; `entry` is null or NUL-terminated; `boxes` points to
/// `nboxes` entries whose trampolines were generated from `program`'s box
/// declarations (as `snet build` does).
#[no_mangle]
pub unsafe extern "C" fn snet_runner_main(
    argc: c_int,
    argv: *const *const c_char,
    program: *const c_char,
    name: *const c_char,
    entry: *const c_char,
    boxes: *const BoxEntry,
    nboxes: usize,
) -> c_int {
    tune_allocator();
    let args: Vec<String> = (0..argc.max(0) as usize)
        .map(|i| {
            // SAFETY: the generated `main` passes its own `argc`/`argv`:
            // `argc` valid, NUL-terminated strings.
            unsafe { CStr::from_ptr(*argv.add(i)) }
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let opts = match RunOptions::try_parse_from(&args) {
        Ok(o) => o,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    // SAFETY: NUL-terminated (contract).
    let program = unsafe { CStr::from_ptr(program) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: NUL-terminated (contract).
    let name = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    let entry = (!entry.is_null()).then(|| {
        // SAFETY: not null, so NUL-terminated (contract).
        unsafe { CStr::from_ptr(entry) }
            .to_string_lossy()
            .into_owned()
    });
    let compiled = snet_front::compile(&name, &program, entry.as_deref());
    let errors: Vec<_> = compiled
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .cloned()
        .collect();
    let graph = match compiled.graph {
        Some(g) if errors.is_empty() => Arc::new(g),
        _ => {
            say_raw(&snet_front::render(&errors, &name, &program, false));
            return 1;
        }
    };
    // SAFETY: the table matches the program (contract).
    let language = unsafe { C4SNet::from_raw_table(boxes, nboxes) };
    c_int::from(run(graph, &opts, &language))
}

/// `--box-stack`: bytes, with an optional K, M or G suffix (powers of 1024).
fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (digits, shift) = match t.as_bytes().last().map(u8::to_ascii_uppercase) {
        Some(b'K') => (&t[..t.len() - 1], 10),
        Some(b'M') => (&t[..t.len() - 1], 20),
        Some(b'G') => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    let n: usize = digits
        .parse()
        .map_err(|_| format!("`{s}` is not a size (bytes, or a number with K, M or G)"))?;
    let n = n
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("`{s}` is too large"))?;
    if n < 64 << 10 {
        return Err(format!(
            "`{s}` is too small: a box's stack needs at least 64K"
        ));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MALFORMED: &str = r#"<?xml version="1.0" ?>
<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="a">1</tag></record>
<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="a">12x</tag></record>
<record type="terminate" />
"#;

    fn source() -> ReaderSource<&'static [u8]> {
        ReaderSource(reader(MALFORMED.as_bytes(), "in.xml"))
    }

    /// The reader's `ReadError` survives the `Source` interface whole: its
    /// kind and position can be inspected, and the message is its own.
    #[test]
    fn a_source_error_is_the_readers_error() {
        let mut src = source();
        assert!(src.next_record().expect("first record").is_some());
        let e = src.next_record().expect_err("12x is not an integer");
        let read = e
            .downcast_ref::<snet_io::ReadError>()
            .expect("a snet_io::ReadError");
        assert!(
            matches!(read.kind(), snet_io::ReadErrorKind::NonIntegerTag { value, .. } if value == "12x"),
            "{read:?}"
        );
        assert_eq!(read.position().line, 3);
        assert_eq!(e.to_string(), read.to_string());
    }

    /// ... and so does the run's error: `EngineError::Input` holds it.
    #[test]
    fn a_runs_input_error_holds_the_readers_error() {
        let compiled = snet_front::compile("t.snet", "net idf connect [{<a>} -> {<a>}];", None);
        let graph = Arc::new(compiled.graph.expect("compiles"));
        let config = Config {
            workers: 1,
            ..Config::default()
        };
        let sink = WriterSink {
            writer: writer(Vec::new()),
            flush: None,
        };
        let err = snet_engine::run(
            graph,
            &config,
            Some((Box::new(source()), Box::new(sink))),
            &snet_engine::NoBoxes,
            &SingleNode,
        )
        .expect_err("malformed input");
        let EngineError::Input(e) = &err else {
            panic!("not an input error: {err:?}")
        };
        let read = e.downcast_ref::<snet_io::ReadError>().expect("ReadError");
        assert_eq!(read.position().line, 3);
        assert_eq!(err.to_string(), format!("malformed input: {read}"));
        assert!(
            err.to_string().starts_with("malformed input: in.xml:3:"),
            "{err}"
        );
    }

    #[test]
    fn box_stack_sizes() {
        assert_eq!(super::parse_size("64K"), Ok(64 << 10));
        assert_eq!(super::parse_size("8m"), Ok(8 << 20));
        assert_eq!(super::parse_size("1G"), Ok(1 << 30));
        assert_eq!(super::parse_size("1048576"), Ok(1 << 20));
        assert!(super::parse_size("12K").unwrap_err().contains("too small"));
        assert!(super::parse_size("lots")
            .unwrap_err()
            .contains("not a size"));
        assert!(super::parse_size("99999999999999999999G").is_err());
    }
}
