//! Loading a program, registering its boxes, choosing where it runs.

use std::ffi::OsString;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use snet_core::Graph;

use crate::boxes::{BoxInput, BoxResult, Emitter, RustBoxes};

/// A compiled S-Net program with its Rust boxes and run options.
///
/// Load it from a string or a file, register a function for every box the
/// entry network uses ([`Network::add_box`]), choose workers and nodes,
/// then [`Network::run`] it to completion or [`Network::start`] it and
/// stream records through it. A `Network` can run any number of times.
///
/// ```
/// use snet::{Field, Network, Record};
///
/// let mut net = Network::from_source(
///     "square.snet",
///     "box square((x) -> (y)); net main connect square;",
/// )?;
/// net.add_box("square", |input, out| {
///     let x = input.field("x")?.as_slice::<f64>().unwrap_or_default();
///     let y: Vec<f64> = x.iter().map(|v| v * v).collect();
///     out.emit(1, Record::new().with_field("y", Field::from_slice(&y)))?;
///     Ok(())
/// })
/// .workers(2);
/// let input = (1..=3).map(|i| Record::new().with_field("x", Field::scalar(i as f64)).with_tag("i", i));
/// let mut out = net.run(input)?;
/// out.sort_by_key(|r| r.tag("i")); // `<i>` flowed around the box
/// let ys: Vec<f64> = out.iter().map(|r| r.field("y").unwrap().as_slice::<f64>().unwrap()[0]).collect();
/// assert_eq!(ys, [1.0, 4.0, 9.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Network {
    pub(crate) graph: Arc<Graph>,
    pub(crate) boxes: RustBoxes,
    pub(crate) workers: usize,
    pub(crate) nodes: u32,
    pub(crate) transport: Transport,
    pub(crate) box_concurrency: usize,
    /// A hash of the program's name, text and entry: with the node count
    /// and the box names, what a node process checks it joins (`shm.rs`).
    pub(crate) source_hash: u64,
    warnings: Vec<Diagnostic>,
    /// The codecs of custom field values ([`Network::add_codec`]).
    pub(crate) codecs: Vec<Arc<dyn crate::CustomCodec>>,
    /// The command node processes are started with, if not a copy of
    /// this program ([`Network::node_command`]).
    pub(crate) node_command: Option<(PathBuf, Vec<OsString>)>,
    /// The trace file, every how many input records one is followed, and
    /// the profile file ([`Network::trace`], [`Network::profile`]).
    pub(crate) trace: Option<PathBuf>,
    pub(crate) trace_sample: u64,
    pub(crate) profile: Option<PathBuf>,
}

/// A box the program declares, as [`Network::box_signatures`] lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoxSignature {
    /// The box's name.
    pub name: String,
    /// Its input labels in signature (argument) order, as S-Net writes
    /// them (`x`, `<t>`, `<#b>`).
    pub inputs: Vec<String>,
    /// Its output variants in signature order (variant k is
    /// `outputs[k-1]`), each its labels in order.
    pub outputs: Vec<Vec<String>>,
    /// Its box-language interface (`C4SNet` unless the program says).
    pub interface: String,
}

/// How the nodes of a run with [`Network::nodes`] above 1 talk.
///
/// ```
/// use snet::{Network, Record, Transport};
///
/// let mut net = Network::from_source("p.snet", "box f((<n>) -> (<n>)); net p connect f @ 1;")?;
/// net.add_box("f", |input, out| {
///     assert_eq!(snet::node_process(), Some(1)); // `f @ 1` runs in node process 1
///     out.emit(1, Record::new().with_tag("n", input.tag("n")? * 2))?;
///     Ok(())
/// })
/// .nodes(2)
/// .transport(Transport::Shm); // node 1 is a copy of this program
/// if snet::node_process().is_none() {
///     println!("starting"); // only in the process the user started
/// }
/// let out = net.run([Record::new().with_tag("n", 21)])?; // a node process never returns from here
/// assert_eq!(out[0].tag("n"), Some(42));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// Every node is an engine in this process, the nodes connected by
    /// in-memory queues (the default).
    #[default]
    Loopback,
    /// Node 0 is this process; nodes 1 to N-1 are processes on this
    /// machine, started as copies of this program, sharing memory with it.
    /// Each node process runs the program's `main` again until it reaches
    /// the same run, joins it there as its node, and ends when the run
    /// ends: see [`node_process`](crate::node_process) for what that asks
    /// of the program.
    Shm,
}

impl fmt::Debug for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let boxes = self.boxes.names();
        f.debug_struct("Network")
            .field("boxes", &boxes)
            .field("workers", &self.workers)
            .field("nodes", &self.nodes)
            .field("transport", &self.transport)
            .field("box_concurrency", &self.box_concurrency)
            .finish_non_exhaustive()
    }
}

/// How serious a [`Diagnostic`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The program cannot run.
    Error,
    /// The program runs, but probably not as meant.
    Warning,
}

/// One message about the program, as `snet check` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The headline (without `error: `).
    pub message: String,
    /// Line and column (1-based) of the place it is about, if it has one.
    pub position: Option<(usize, usize)>,
}

/// Why a program could not be loaded: the file could not be read, or the
/// program has errors. `Display` renders the diagnostics as `snet check`
/// does (source lines and carets, no colour).
///
/// ```
/// let err = snet::Network::from_source("bad.snet", "net n connect nosuch;").unwrap_err();
/// assert!(err.to_string().contains("nosuch"));
/// assert_eq!(err.diagnostics()[0].position, Some((1, 15)));
/// ```
#[derive(Clone, Debug)]
pub struct LoadError {
    rendered: String,
    diagnostics: Vec<Diagnostic>,
}

impl LoadError {
    /// The program's diagnostics (errors and warnings, in source order);
    /// empty when the file could not be read.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.rendered.trim_end())
    }
}

impl std::error::Error for LoadError {}

fn to_diagnostics(ds: &[snet_front::Diagnostic], source: &str) -> Vec<Diagnostic> {
    ds.iter()
        .map(|d| Diagnostic {
            severity: if d.is_error() {
                Severity::Error
            } else {
                Severity::Warning
            },
            message: d.message.clone(),
            position: d.line_col(source),
        })
        .collect()
}

impl Network {
    /// Compiles the program `text`, named `name` in messages; the entry
    /// network is the last net defined.
    pub fn from_source(name: &str, text: &str) -> Result<Network, LoadError> {
        Network::compile(name, text, None)
    }

    /// As [`Network::from_source`], with the entry network `entry`.
    pub fn from_source_with_entry(
        name: &str,
        text: &str,
        entry: &str,
    ) -> Result<Network, LoadError> {
        Network::compile(name, text, Some(entry))
    }

    /// Reads and compiles the program in file `path`.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Network, LoadError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        match std::fs::read_to_string(path) {
            Ok(text) => Network::compile(&name, &text, None),
            Err(e) => Err(LoadError {
                rendered: format!("error: cannot read {name}: {}", snet_front::os_reason(&e)),
                diagnostics: Vec::new(),
            }),
        }
    }

    fn compile(name: &str, text: &str, entry: Option<&str>) -> Result<Network, LoadError> {
        let compiled = snet_front::compile(name, text, entry);
        let diagnostics = to_diagnostics(&compiled.diagnostics, text);
        match compiled.graph {
            Some(g) if !compiled.diagnostics.iter().any(|d| d.is_error()) => Ok(Network {
                graph: Arc::new(g),
                boxes: RustBoxes::default(),
                workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
                nodes: 1,
                transport: Transport::Loopback,
                box_concurrency: 1,
                source_hash: {
                    let mut h = std::hash::DefaultHasher::new();
                    (name, text, entry).hash(&mut h);
                    h.finish()
                },
                warnings: diagnostics,
                codecs: Vec::new(),
                node_command: None,
                trace: None,
                trace_sample: 1000,
                profile: None,
            }),
            _ => Err(LoadError {
                rendered: snet_front::render(&compiled.diagnostics, name, text, false),
                diagnostics,
            }),
        }
    }

    /// The program's warnings (it has no errors, or it would not have
    /// loaded).
    pub fn warnings(&self) -> &[Diagnostic] {
        &self.warnings
    }

    /// Registers `f` as the box named `name` (replacing an earlier one).
    /// A name the program has no box of makes the run fail
    /// ([`RunErrorKind::UnknownBox`](crate::RunErrorKind), naming the
    /// nearest box name).
    /// It is called once per input record, on any worker, possibly on
    /// several at once (so it is `Fn + Send + Sync`); it reads its input
    /// from the [`BoxInput`] and emits outputs through the [`Emitter`].
    /// Boxes keep no state between calls, as S-Net requires.
    pub fn add_box<F>(&mut self, name: &str, f: F) -> &mut Network
    where
        F: Fn(&BoxInput<'_>, &mut Emitter<'_>) -> BoxResult + Send + Sync + 'static,
    {
        self.boxes.table.insert(name.to_string(), Arc::new(f));
        self
    }

    /// The message for functions registered ([`Network::add_box`]) under
    /// names the program has no box of, if there are any: the run then
    /// fails with it ([`RunErrorKind::UnknownBox`](crate::RunErrorKind)).
    pub(crate) fn unknown_boxes(&self) -> Option<String> {
        let declared: Vec<&str> = self.graph.boxes.iter().map(|b| b.name.as_str()).collect();
        let mut unknown: Vec<&str> = self
            .boxes
            .table
            .keys()
            .map(String::as_str)
            .filter(|n| !declared.contains(n))
            .collect();
        if unknown.is_empty() {
            return None;
        }
        unknown.sort_unstable();
        let lines: Vec<String> = unknown
            .iter()
            .map(|n| {
                let hint = match snet_front::suggest::nearest(n, declared.iter().copied()) {
                    Some(c) => format!("; did you mean `{c}`?"),
                    None => String::new(),
                };
                format!("Network::add_box(\"{n}\", ...): the program has no box `{n}`{hint}")
            })
            .collect();
        Some(lines.join("\n"))
    }

    /// The number of worker threads per node (default: one per core).
    pub fn workers(&mut self, n: usize) -> &mut Network {
        self.workers = n.max(1);
        self
    }

    /// The number of nodes (default 1). With more than one, each node
    /// runs its own engine and workers, the program's placements (`A @ 1`,
    /// `A !@ <t>`) put boxes on them, and fields travel between them as
    /// they would between machines; [`Network::transport`] says whether
    /// the nodes are in this process (the default) or processes of their
    /// own.
    pub fn nodes(&mut self, n: u32) -> &mut Network {
        self.nodes = n.max(1);
        self
    }

    /// How the nodes talk (default [`Transport::Loopback`]; with one node
    /// it makes no difference).
    pub fn transport(&mut self, t: Transport) -> &mut Network {
        self.transport = t;
        self
    }

    /// How many calls of one box instance may run at once (default 1);
    /// outputs keep their input order either way.
    pub fn box_concurrency(&mut self, n: usize) -> &mut Network {
        self.box_concurrency = n.max(1);
        self
    }

    /// Writes a trace of each run to `path`, as `snet run --trace` does
    /// (Trace Event Format JSON, for Perfetto or `chrome://tracing`: one
    /// process per node, one thread per worker, an event per box call,
    /// synchrocell firing and entity batch, boxes by name), following the
    /// records of every `sample`th input record hop by hop (`snet run
    /// --trace-sample`; 0: none). With node processes each writes its part
    /// beside the file and node 0 merges them when the run has ended.
    pub fn trace(&mut self, path: impl Into<PathBuf>, sample: u64) -> &mut Network {
        self.trace = Some(path.into());
        self.trace_sample = sample;
        self
    }

    /// Writes no trace and no profile (the default).
    pub fn no_trace(&mut self) -> &mut Network {
        self.trace = None;
        self.profile = None;
        self
    }

    /// Writes the profile of each run to `path` as JSON, as `snet run
    /// --profile-json` does (per node and component: calls, records in and
    /// out, busy time, longest inbox; what `snet graph --profile` draws).
    pub fn profile(&mut self, path: impl Into<PathBuf>) -> &mut Network {
        self.profile = Some(path.into());
        self
    }

    /// The boxes the program declares, in declaration order, with their
    /// signatures: what an embedding for another language needs to call a
    /// function with a box's inputs and to match its outputs to variants.
    ///
    /// ```
    /// let net = snet::Network::from_source("p.snet", "box f((x, <n>) -> (y) | (<e>)); net p connect f;")?;
    /// let f = &net.box_signatures()[0];
    /// assert_eq!((f.name.as_str(), &f.inputs[..]), ("f", &["x".to_string(), "<n>".to_string()][..]));
    /// assert_eq!(f.outputs, [vec!["y".to_string()], vec!["<e>".to_string()]]);
    /// # Ok::<(), snet::LoadError>(())
    /// ```
    pub fn box_signatures(&self) -> Vec<BoxSignature> {
        let text =
            |ls: &[snet_core::Label]| ls.iter().map(|l| crate::record::label_text(*l)).collect();
        let mut seen = std::collections::HashSet::new();
        self.graph
            .boxes
            .iter()
            .filter(|b| seen.insert(b.name.clone()))
            .map(|b| BoxSignature {
                name: b.name.clone(),
                inputs: text(&b.inputs),
                outputs: b.outputs.iter().map(|v| text(v)).collect(),
                interface: b.interface.clone(),
            })
            .collect()
    }

    /// Registers the codec of custom field values ([`crate::CustomValue`])
    /// of its name, so that they can cross between nodes. Every process of
    /// a run registers the same codecs.
    pub fn add_codec(&mut self, codec: Arc<dyn crate::CustomCodec>) -> &mut Network {
        self.codecs.retain(|c| c.name() != codec.name());
        self.codecs.push(codec);
        self
    }

    /// Takes the C boxes of the C box library at `path` (a shared object
    /// compiled from [`Network::c_library_files`] and the boxes' C
    /// sources): every box of the program the library defines runs its C
    /// function, unless a function is registered for it
    /// ([`Network::add_box`], which wins). Returns the names of those
    /// boxes. Fails naming the library when it cannot be loaded (the
    /// loader's message names a symbol it lacks), was not made by snet, or
    /// was made for another declaration of one of the boxes. Every process
    /// of a [`Transport::Shm`] run loads the same libraries.
    ///
    /// Fields pass between C boxes and the others as C4SNet data
    /// ([`Field`](crate::Field) is a C4SNet array already).
    pub fn add_c_library(&mut self, path: impl AsRef<Path>) -> Result<Vec<String>, LoadError> {
        let fail = |e: c4snet::library::LibraryError| LoadError {
            rendered: format!("error: {e}"),
            diagnostics: Vec::new(),
        };
        let lib = c4snet::library::Library::open(path.as_ref()).map_err(fail)?;
        let mut names = Vec::new();
        for def in self.c_boxes() {
            if lib.find(def).map_err(fail)?.is_some() {
                names.push(def.name.clone());
            }
        }
        self.boxes.c_libraries.push(Arc::new(lib));
        Ok(names)
    }

    /// The program's boxes of the C4SNet interface, each name once.
    fn c_boxes(&self) -> Vec<&snet_core::BoxDef> {
        let mut seen = std::collections::HashSet::new();
        self.graph
            .boxes
            .iter()
            .filter(|b| b.interface == c4snet::INTERFACE && seen.insert(b.name.as_str()))
            .collect()
    }

    /// The files to compile, with the C sources of the program's C boxes,
    /// into a C box library for [`Network::add_c_library`]: `(file name,
    /// text)` of the generated box table (`snet_library.c`), the C4SNet
    /// functions of the library (`snet_c4snet.c`) and the header the box
    /// sources include (`C4SNet.h`). For example, with the three written
    /// to a directory `gen`:
    ///
    /// ```text
    /// cc -shared -fPIC -Wl,-z,defs -I gen -o libboxes.so gen/snet_library.c gen/snet_c4snet.c boxes.c
    /// ```
    ///
    /// (`-z defs` makes the link report a box function used but defined
    /// nowhere, by name.) The box table refers to every C box of the
    /// program weakly: boxes the sources do not define are left to other
    /// languages.
    pub fn c_library_files(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "snet_library.c",
                c4snet::library::library_source(&self.c_boxes()),
            ),
            ("snet_c4snet.c", c4snet::library::LIBRARY_GLUE.to_string()),
            ("C4SNet.h", c4snet::HEADER.to_string()),
        ]
    }

    /// Starts the node processes of a [`Transport::Shm`] run as
    /// `program args...` instead of as copies of this program (the same
    /// executable with the same arguments). For programs run by an
    /// interpreter, whose node processes run a module of their own that
    /// rebuilds the network and reaches [`Network::run`] (the Python
    /// package does this); the node processes get the same environment
    /// variables either way.
    pub fn node_command(
        &mut self,
        program: impl Into<PathBuf>,
        args: Vec<OsString>,
    ) -> &mut Network {
        self.node_command = Some((program.into(), args));
        self
    }
}
