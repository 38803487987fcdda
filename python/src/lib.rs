//! `snet._snet`: the extension module under the `snet` Python package.
//!
//! It sits on the `snet` Rust library (`crates/snet`), which wires a run:
//! this module only converts between Python values and records, calls
//! Python functions as boxes, and hands errors over as exceptions. The
//! Python half of the package (`snet/__init__.py`) builds the API users
//! see on top of it; `docs/python.md` describes both.
//!
//! * **Fields.** A Python `int` (fitting 64 bits), `float`, `str` and
//!   `bytes` become C4SNet data (a `long`, a `double`, a `char` array, an
//!   `unsigned char` array), which C boxes and the XML record format share;
//!   any other object stays the object itself ([`PyValue`], a custom field
//!   value of the library), encoded by `snet._fields` only when it crosses
//!   to another node process (a pickle, or the raw buffer of a
//!   `bytearray` or numpy array).
//! * **Boxes.** A box function is called with the GIL held, its outputs
//!   collected as records, and only then (the GIL released) emitted: the
//!   engine may pause a call in `emit` and resume it on another worker, so
//!   no interpreter state may be held across it.

#![warn(missing_docs)]

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use snet::{BoxFailure, BoxInput, CustomCodec, CustomError, CustomValue, Emitter, Field, Record};

pyo3::create_exception!(snet, SnetError, PyException, "Base of the errors of snet.");
pyo3::create_exception!(
    snet,
    LoadError,
    SnetError,
    "A program that does not compile; str() renders it as `snet check` does."
);
pyo3::create_exception!(
    snet,
    RunError,
    SnetError,
    "A run that failed; `box_name` names the box whose error ended it, if one did."
);
pyo3::create_exception!(
    snet,
    XmlError,
    SnetError,
    "A record stream in the XML format that cannot be read, or a record it cannot hold."
);

/// The functions of `snet._fields`, looked up once.
fn helper<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    static MODULE: GILOnceCell<Py<PyModule>> = GILOnceCell::new();
    let m = MODULE.get_or_try_init(py, || py.import("snet._fields").map(Bound::unbind))?;
    m.bind(py).getattr(name)
}

/// The text of an exception with its traceback, as Python prints it.
fn describe_exception(py: Python<'_>, e: &PyErr) -> String {
    match helper(py, "format_exception").and_then(|f| f.call1((e.value(py), e.traceback(py)))) {
        Ok(t) => t.extract::<String>().unwrap_or_else(|_| e.to_string()),
        Err(_) => e.to_string(),
    }
}

/// Maps the library's run error to `snet.RunError` (with `box_name`).
/// The one place to adapt when the library's error type grows.
fn run_error(py: Python<'_>, e: &snet::RunError) -> PyErr {
    let err = RunError::new_err(e.to_string());
    let _ = err
        .value(py)
        .setattr("box_name", e.box_name().map(str::to_string));
    err
}

// ---------------------------------------------------------------------------
// Python objects as field values.

/// A Python object kept as a field value (a custom value of the library).
struct PyValue(Py<PyAny>);

const PY_CODEC: &str = "python";

impl CustomValue for PyValue {
    fn interface(&self) -> &str {
        "Python"
    }
    fn codec(&self) -> &str {
        PY_CODEC
    }
    fn encode(&self) -> Result<Vec<u8>, CustomError> {
        Python::with_gil(|py| {
            let b = helper(py, "encode")
                .and_then(|f| f.call1((self.0.bind(py),)))
                .map_err(|e| describe_exception(py, &e))?;
            let b = b.downcast::<PyBytes>().map_err(|e| e.to_string())?;
            Ok(b.as_bytes().to_vec())
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Decodes [`PyValue`]s that crossed from another node process.
struct PyCodec;

impl CustomCodec for PyCodec {
    fn name(&self) -> &str {
        PY_CODEC
    }
    fn decode(&self, bytes: &[u8]) -> Result<Arc<dyn CustomValue>, CustomError> {
        Python::with_gil(|py| {
            let v = helper(py, "decode")
                .and_then(|f| f.call1((PyBytes::new(py, bytes),)))
                .map_err(|e| describe_exception(py, &e))?;
            Ok(Arc::new(PyValue(v.unbind())) as Arc<dyn CustomValue>)
        })
    }
}

/// The bytes of a slice of numbers.
fn raw_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: `T` is a plain number type here (C4SNet's element types),
    // so its `size_of_val(v)` bytes are initialised.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// A field's value as a Python object.
fn field_to_py(py: Python<'_>, f: &Field) -> PyResult<PyObject> {
    if let Some(v) = f.custom_value() {
        if let Some(p) = v.as_any().downcast_ref::<PyValue>() {
            return Ok(p.0.clone_ref(py));
        }
        return Err(PyTypeError::new_err(format!(
            "a field of interface {} has no Python value",
            v.interface()
        )));
    }
    macro_rules! numbers {
        ($t:ty, $code:expr) => {{
            let s = f.as_slice::<$t>().unwrap_or_default();
            if s.len() == 1 {
                return Ok(s[0]
                    .into_pyobject(py)
                    .map_err(PyErr::from)?
                    .into_any()
                    .unbind());
            }
            let bytes = PyBytes::new(py, raw_bytes(s));
            return Ok(helper(py, "make_array")?.call1(($code, bytes))?.unbind());
        }};
    }
    match f.element_type() {
        Some("char") => Ok(PyString::new(py, &f.to_text().unwrap_or_default())
            .into_any()
            .unbind()),
        Some("unsigned char") => Ok(PyBytes::new(py, f.as_slice::<u8>().unwrap_or_default())
            .into_any()
            .unbind()),
        Some("short") => numbers!(i16, "h"),
        Some("unsigned short") => numbers!(u16, "H"),
        Some("int") => numbers!(i32, "i"),
        Some("unsigned int") => numbers!(u32, "I"),
        Some("long") => numbers!(i64, "q"),
        Some("unsigned long") => numbers!(u64, "Q"),
        Some("float") => numbers!(f32, "f"),
        Some("double") => numbers!(f64, "d"),
        Some(other) => Err(PyTypeError::new_err(format!(
            "a C4SNet field of type {other} has no Python value"
        ))),
        None => Err(PyTypeError::new_err("a field whose value is not here")),
    }
}

/// `array.array`, looked up once.
fn array_type(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static ARRAY: GILOnceCell<Py<PyAny>> = GILOnceCell::new();
    ARRAY
        .get_or_try_init(py, || {
            py.import("array")
                .and_then(|m| m.getattr("array"))
                .map(Bound::unbind)
        })
        .map(|t| t.bind(py))
}

/// A Python object as a field value: C4SNet data for `int`, `float`,
/// `str`, `bytes` and `array.array` (an array of its C type), the object
/// itself otherwise.
fn py_to_field(obj: &Bound<'_, PyAny>) -> Field {
    let py = obj.py();
    if let Ok(t) = array_type(py) {
        if obj.get_type().is(t) {
            if let Some(f) = helper(py, "typed_buffer")
                .and_then(|h| h.call1((obj,)))
                .ok()
                .filter(|t| !t.is_none())
                .and_then(|t| t.extract::<(String, Vec<u8>)>().ok())
                .and_then(|(ctype, bytes)| typed_field(&ctype, &bytes))
            {
                return f;
            }
        }
    }
    plain_to_field(obj)
}

/// C4SNet data of `bytes` holding numbers of C type `ctype`.
fn typed_field(ctype: &str, bytes: &[u8]) -> Option<Field> {
    macro_rules! from {
        ($t:ty) => {{
            let n = std::mem::size_of::<$t>();
            let v: Vec<$t> = bytes
                .chunks_exact(n)
                .map(|c| <$t>::from_ne_bytes(c.try_into().unwrap_or_default()))
                .collect();
            Field::from_slice(&v)
        }};
    }
    Some(match ctype {
        "char" => from!(i8),
        "unsigned char" => Field::from_slice(bytes),
        "short" => from!(i16),
        "unsigned short" => from!(u16),
        "int" => from!(i32),
        "unsigned int" => from!(u32),
        "long" => from!(i64),
        "unsigned long" => from!(u64),
        "float" => from!(f32),
        "double" => from!(f64),
        _ => return None,
    })
}

/// [`py_to_field`] for the four kinds of Python value C4SNet holds as
/// they are; any other object stays the object.
fn plain_to_field(obj: &Bound<'_, PyAny>) -> Field {
    if obj.is_exact_instance_of::<PyInt>() {
        if let Ok(v) = obj.extract::<i64>() {
            return Field::scalar(v);
        }
    } else if obj.is_exact_instance_of::<PyFloat>() {
        if let Ok(v) = obj.extract::<f64>() {
            return Field::scalar(v);
        }
    } else if obj.is_exact_instance_of::<PyString>() {
        if let Ok(s) = obj.extract::<String>() {
            return Field::text(&s);
        }
    } else if let Ok(b) = obj.downcast_exact::<PyBytes>() {
        return Field::from_slice(b.as_bytes());
    }
    Field::custom(Arc::new(PyValue(obj.clone().unbind())))
}

/// A field value for the XML record format: C4SNet data, converting an
/// object with a typed buffer (`array.array`, numpy, `bytearray`).
fn py_to_c4_field(py: Python<'_>, label: &str, obj: &Bound<'_, PyAny>) -> PyResult<Field> {
    let f = py_to_field(obj);
    if f.custom_value().is_none() {
        return Ok(f);
    }
    let typed = helper(py, "typed_buffer")?.call1((obj,))?;
    if typed.is_none() {
        return Err(XmlError::new_err(format!(
            "field {label} holds a Python {}, which the XML record format cannot hold \
             (it holds int, float, str, bytes and typed arrays)",
            obj.get_type().name()?
        )));
    }
    let (ctype, bytes): (String, Vec<u8>) = typed.extract()?;
    typed_field(&ctype, &bytes)
        .ok_or_else(|| XmlError::new_err(format!("field {label}: no C type {ctype}")))
}

/// A record as a dict: fields by name, tags as `'<t>'`, binding tags as
/// `'<#b>'`.
fn record_to_py(py: Python<'_>, r: &Record) -> PyResult<PyObject> {
    let d = PyDict::new(py);
    for label in r.labels() {
        let v = if let Some(name) = label.strip_prefix("<#").or_else(|| label.strip_prefix('<')) {
            let name = name.trim_end_matches('>');
            PyInt::new(py, r.tag(name).unwrap_or_default())
                .into_any()
                .unbind()
        } else {
            match r.field(&label) {
                Some(f) => field_to_py(py, f)?,
                None => continue,
            }
        };
        d.set_item(label, v)?;
    }
    Ok(d.into_any().unbind())
}

/// A dict (or any mapping of str to values) as a record.
fn py_to_record(obj: &Bound<'_, PyAny>, xml: bool) -> PyResult<Record> {
    let py = obj.py();
    let d = obj.downcast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!(
            "a record is a dict of labels ('x', '<t>', '<#b>') to values, not a {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    let mut r = Record::new();
    for (k, v) in d.iter() {
        let k: String = k.extract()?;
        let tag = |v: &Bound<'_, PyAny>| {
            v.extract::<i64>().map_err(|_| {
                PyTypeError::new_err(format!("tag {k} must be an int, not {}", type_name(v)))
            })
        };
        if let Some(name) = k.strip_prefix("<#").and_then(|n| n.strip_suffix('>')) {
            r = r.with_btag(name, tag(&v)?);
        } else if let Some(name) = k.strip_prefix('<').and_then(|n| n.strip_suffix('>')) {
            r.set_tag(name, tag(&v)?);
        } else if xml {
            r.set_field(&k, py_to_c4_field(py, &k, &v)?);
        } else {
            r.set_field(&k, py_to_field(&v));
        }
    }
    Ok(r)
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Python functions as boxes.

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Field,
    Tag,
    BTag,
}

fn parse_label(text: &str) -> (String, Kind) {
    if let Some(n) = text.strip_prefix("<#") {
        (n.trim_end_matches('>').to_string(), Kind::BTag)
    } else if let Some(n) = text.strip_prefix('<') {
        (n.trim_end_matches('>').to_string(), Kind::Tag)
    } else {
        (text.to_string(), Kind::Field)
    }
}

/// Labels by name and kind, in signature order.
type Labels = Vec<(String, Kind)>;

/// An output variant: its labels, and for each the keys an output dict
/// may give it by (its plain name, and as written: `<t>`, `<#b>`),
/// made once so that a lookup hashes no new string.
struct Variant {
    labels: Labels,
    keys: Vec<(Py<PyString>, Py<PyString>)>,
}

/// A Python function registered as a box, with its signature.
struct PyBox {
    name: String,
    func: Py<PyAny>,
    /// Where the function is defined (`module.f (file:line)`).
    origin: String,
    inputs: Labels,
    /// Each output variant's labels, with their dict keys.
    variants: Vec<Variant>,
    /// The variants as the program writes them: `(y) | (<e>)`.
    variants_text: String,
}

type Outputs = Vec<(usize, Record)>;

thread_local! {
    static THREAD_STATE_KEPT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Gives this worker thread an interpreter thread state that outlives
/// each box call. `Python::with_gil` on a thread the interpreter does not
/// know makes a thread state and deletes it again when it returns, which
/// costs more than a small box's call; holding one `PyGILState_Ensure`
/// for the thread's life keeps the state (the GIL is released at once),
/// so each call only takes and drops the GIL. The state (a few hundred
/// bytes) is not freed when the worker thread ends.
fn keep_thread_state() {
    if THREAD_STATE_KEPT.with(std::cell::Cell::get) {
        return;
    }
    // SAFETY: the interpreter is initialised (this extension module is
    // loaded in it) and this thread holds no GIL here (box calls start
    // without it): `PyGILState_Ensure` takes the GIL with a new thread
    // state, and `PyEval_SaveThread` releases the GIL while the thread
    // state stays this thread's (the counter of the Ensure never drops).
    unsafe {
        let _ = pyo3::ffi::PyGILState_Ensure();
        let _ = pyo3::ffi::PyEval_SaveThread();
    }
    THREAD_STATE_KEPT.with(|k| k.set(true));
}

impl PyBox {
    fn call(&self, input: &BoxInput<'_>, out: &mut Emitter<'_>) -> snet::BoxResult {
        keep_thread_state();
        let outputs = Python::with_gil(|py| self.call_py(py, input))?;
        for (variant, r) in outputs {
            out.emit(variant, r)?;
        }
        Ok(())
    }

    fn call_py(&self, py: Python<'_>, input: &BoxInput<'_>) -> Result<Outputs, BoxFailure> {
        let fail = |e: PyErr| {
            format!(
                "Python function {} raised an exception:\n{}",
                self.origin,
                describe_exception(py, &e).trim_end()
            )
        };
        let mut args = Vec::with_capacity(self.inputs.len());
        for (name, kind) in &self.inputs {
            let v = match kind {
                Kind::Field => {
                    let f = input.field(name).map_err(|e| e.to_string())?;
                    field_to_py(py, f).map_err(fail)?
                }
                _ => {
                    let t = input.tag(name).map_err(|e| e.to_string())?;
                    PyInt::new(py, t).into_any().unbind()
                }
            };
            args.push(v);
        }
        let args = PyTuple::new(py, args).map_err(fail)?;
        let result = self.func.bind(py).call1(args).map_err(fail)?;
        let mut outputs = Vec::new();
        if result.is_none() {
            return Ok(outputs);
        }
        if let Ok(d) = result.downcast::<PyDict>() {
            outputs.push(self.output(d)?);
            return Ok(outputs);
        }
        let items = result.try_iter().map_err(|_| {
            format!(
                "Python function {} returned a {}: a box returns None, a dict of its \
                 output labels, or an iterable (a list, a generator) of such dicts",
                self.origin,
                type_name(&result)
            )
        })?;
        for item in items {
            let item = item.map_err(fail)?;
            let d = item.downcast::<PyDict>().map_err(|_| {
                format!(
                    "Python function {} gave a {} as an output: each output is a dict \
                     of the labels of one of its output variants {}",
                    self.origin,
                    type_name(&item),
                    self.variants_text
                )
            })?;
            outputs.push(self.output(d)?);
        }
        Ok(outputs)
    }

    /// The record of output dict `d`, and its variant (from 1): the
    /// variant whose labels are exactly the dict's keys (each looked up
    /// by its plain name, then as written, `<t>`).
    fn output(&self, d: &Bound<'_, PyDict>) -> Result<(usize, Record), BoxFailure> {
        let py = d.py();
        let n = d.len();
        'variants: for (i, v) in self.variants.iter().enumerate() {
            if v.labels.len() != n {
                continue;
            }
            let mut r = Record::new();
            for ((name, kind), (plain, written)) in v.labels.iter().zip(&v.keys) {
                let found = match d.get_item(plain.bind(py)) {
                    Ok(Some(x)) => Some(x),
                    _ => d.get_item(written.bind(py)).ok().flatten(),
                };
                let Some(value) = found else {
                    continue 'variants;
                };
                match kind {
                    Kind::Field => r.set_field(name, py_to_field(&value)),
                    Kind::Tag | Kind::BTag => {
                        let t = value.extract::<i64>().map_err(|_| {
                            format!(
                                "Python function {} gave tag <{name}> the value of a {}, not an int",
                                self.origin,
                                type_name(&value)
                            )
                        })?;
                        if *kind == Kind::Tag {
                            r.set_tag(name, t);
                        } else {
                            r = r.with_btag(name, t);
                        }
                    }
                }
            }
            return Ok((i + 1, r));
        }
        let keys: Vec<String> = d.keys().iter().map(|k| k.to_string()).collect();
        Err(format!(
            "Python function {} gave an output with labels ({}), which match none of \
             the box's output variants {}",
            self.origin,
            keys.join(", "),
            self.variants_text
        )
        .into())
    }
}

// ---------------------------------------------------------------------------
// The network and a run.

/// A compiled program with its Python boxes (the `snet.Network` wrapper's
/// engine half).
#[pyclass(module = "snet._snet")]
struct RawNetwork {
    net: snet::Network,
}

fn load_error(e: &snet::LoadError) -> PyErr {
    LoadError::new_err(e.to_string())
}

#[pymethods]
impl RawNetwork {
    #[new]
    #[pyo3(signature = (name, text, entry=None))]
    fn new(name: &str, text: &str, entry: Option<&str>) -> PyResult<RawNetwork> {
        let mut net = match entry {
            Some(e) => snet::Network::from_source_with_entry(name, text, e),
            None => snet::Network::from_source(name, text),
        }
        .map_err(|e| load_error(&e))?;
        net.add_codec(Arc::new(PyCodec));
        Ok(RawNetwork { net })
    }

    /// The error loading `path` gives (a file that cannot be read).
    #[staticmethod]
    fn file_error(path: PathBuf) -> PyErr {
        match snet::Network::from_file(&path) {
            Err(e) => load_error(&e),
            Ok(_) => LoadError::new_err(format!("error: cannot read {}", path.display())),
        }
    }

    /// `[(name, inputs, outputs, interface)]` of the declared boxes.
    #[allow(clippy::type_complexity)]
    fn signatures(&self) -> Vec<(String, Vec<String>, Vec<Vec<String>>, String)> {
        self.net
            .box_signatures()
            .into_iter()
            .map(|s| (s.name, s.inputs, s.outputs, s.interface))
            .collect()
    }

    /// The program's warnings, as `snet check` words them.
    fn warnings(&self) -> Vec<String> {
        self.net
            .warnings()
            .iter()
            .map(|d| match d.position {
                Some((l, c)) => format!("{l}:{c}: warning: {}", d.message),
                None => format!("warning: {}", d.message),
            })
            .collect()
    }

    /// Registers `func` (called as `func(*inputs)`) as box `name`;
    /// `origin` is where it is defined, for messages.
    fn add_box(&mut self, name: &str, func: Bound<'_, PyAny>, origin: String) -> PyResult<()> {
        let sigs = self.net.box_signatures();
        let Some(sig) = sigs.iter().find(|s| s.name == name) else {
            let names: Vec<&str> = sigs.iter().map(|s| s.name.as_str()).collect();
            return Err(PyValueError::new_err(format!(
                "the program declares no box `{name}` (its boxes: {})",
                names.join(", ")
            )));
        };
        let py = func.py();
        let variants = sig
            .outputs
            .iter()
            .map(|v| Variant {
                labels: v.iter().map(|l| parse_label(l)).collect(),
                keys: v
                    .iter()
                    .map(|l| {
                        let plain = PyString::intern(py, &parse_label(l).0).unbind();
                        (plain, PyString::intern(py, l).unbind())
                    })
                    .collect(),
            })
            .collect();
        let variants_text = sig
            .outputs
            .iter()
            .map(|v| format!("({})", v.join(", ")))
            .collect::<Vec<_>>()
            .join(" | ");
        let b = Arc::new(PyBox {
            name: name.to_string(),
            func: func.unbind(),
            origin,
            inputs: sig.inputs.iter().map(|l| parse_label(l)).collect(),
            variants,
            variants_text,
        });
        self.net
            .add_box(&b.name.clone(), move |input, out| b.call(input, out));
        Ok(())
    }

    /// Takes the C boxes of the C box library at `path`; returns the
    /// names of the program's boxes it defines.
    fn add_c_library(&mut self, path: PathBuf) -> PyResult<Vec<String>> {
        self.net.add_c_library(&path).map_err(|e| load_error(&e))
    }

    /// `[(file name, text)]` to compile with C box sources into a C box
    /// library of this program.
    fn c_library_files(&self) -> Vec<(String, String)> {
        self.net
            .c_library_files()
            .into_iter()
            .map(|(n, t)| (n.to_string(), t))
            .collect()
    }

    /// Sets the run options.
    #[pyo3(signature = (workers, nodes, transport, box_concurrency, trace=None, trace_sample=1000, profile=None))]
    #[allow(clippy::too_many_arguments)]
    fn configure(
        &mut self,
        workers: Option<usize>,
        nodes: u32,
        transport: &str,
        box_concurrency: usize,
        trace: Option<PathBuf>,
        trace_sample: u64,
        profile: Option<PathBuf>,
    ) -> PyResult<()> {
        let t = match transport {
            "shm" => snet::Transport::Shm,
            "loopback" => snet::Transport::Loopback,
            other => {
                return Err(PyValueError::new_err(format!(
                    "transport {other:?}: the Python package runs nodes as processes on shared \
                     memory (\"shm\") or as threads of this process (\"loopback\")"
                )))
            }
        };
        if let Some(w) = workers {
            self.net.workers(w);
        }
        self.net
            .nodes(nodes)
            .transport(t)
            .box_concurrency(box_concurrency);
        self.net.no_trace();
        if let Some(p) = trace {
            self.net.trace(p, trace_sample);
        }
        if let Some(p) = profile {
            self.net.profile(p);
        }
        Ok(())
    }

    /// Node processes run `program args...`.
    fn node_command(&mut self, program: PathBuf, args: Vec<OsString>) {
        self.net.node_command(program, args);
    }

    /// Starts a run. In a node process of a shared-memory run this joins
    /// that run and ends the process with it.
    fn start(&self, py: Python<'_>) -> RawRunning {
        let running = py.allow_threads(|| self.net.start());
        RawRunning {
            running: Mutex::new(Some(running)),
        }
    }
}

/// A started run (the `snet.Running` wrapper's engine half).
#[pyclass(module = "snet._snet")]
struct RawRunning {
    running: Mutex<Option<snet::Running>>,
}

/// How long a wait for outputs lasts before the interpreter is asked
/// whether Ctrl-C was pressed.
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

/// A `Running` borrowed while its mutex is held, for a closure run
/// without the GIL.
struct Held<'a>(&'a snet::Running);

// SAFETY: a `Held` is made only from a reference out of a locked
// `RawRunning::running` and lives inside that lock's scope, so no other
// thread uses the `Running` (whose receiver is not `Sync`) meanwhile.
unsafe impl Send for Held<'_> {}

impl RawRunning {
    fn lock(&self) -> MutexGuard<'_, Option<snet::Running>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the `Running` with its lock held and the GIL released
    /// (the run's boxes need the GIL meanwhile); `None` once the run was
    /// taken (finished or dropped).
    fn without_gil<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&snet::Running) -> T + Send,
    ) -> Option<T> {
        let g = self.lock();
        let held = Held(g.as_ref()?);
        Some(py.allow_threads(move || {
            let h = held; // the whole `Held`, not its field
            f(h.0)
        }))
    }
}

impl Drop for RawRunning {
    /// Dropping a `Running` waits for its run to end, and the run's boxes
    /// need the GIL: wait without it.
    fn drop(&mut self) {
        let running = self.lock().take();
        if let Some(r) = running {
            Python::with_gil(|py| py.allow_threads(move || drop(r)));
        }
    }
}

#[pymethods]
impl RawRunning {
    /// Sends a record (a dict) into the network; `False` if the run has
    /// ended (failed: `recv` gives the outputs it finished, then raises
    /// its error).
    fn send(&self, py: Python<'_>, record: &Bound<'_, PyAny>) -> PyResult<bool> {
        let r = py_to_record(record, false)?;
        Ok(self
            .without_gil(py, move |running| running.send(r).is_ok())
            .unwrap_or(false))
    }

    /// Sends the records of `records` (a list of dicts) with the GIL
    /// released once; the number sent (fewer if the run ended).
    fn send_many(&self, py: Python<'_>, records: &Bound<'_, PyList>) -> PyResult<usize> {
        let rs = records
            .iter()
            .map(|r| py_to_record(&r, false))
            .collect::<PyResult<Vec<Record>>>()?;
        Ok(self
            .without_gil(py, move |running| {
                let mut n = 0;
                for r in rs {
                    if running.send(r).is_err() {
                        break;
                    }
                    n += 1;
                }
                n
            })
            .unwrap_or(0))
    }

    /// The outputs waiting now, at most `max` (a list, maybe empty),
    /// taken with the GIL released once.
    fn try_recv_many(&self, py: Python<'_>, max: usize) -> PyResult<Py<PyList>> {
        let got: Vec<Record> = self
            .without_gil(py, |running| {
                std::iter::from_fn(|| running.try_recv())
                    .take(max)
                    .collect()
            })
            .unwrap_or_default();
        let list = PyList::empty(py);
        for r in &got {
            list.append(record_to_py(py, r)?)?;
        }
        Ok(list.unbind())
    }

    /// Ends the input.
    fn close(&self) {
        if let Some(r) = self.lock().as_mut() {
            r.close_input();
        }
    }

    /// The next output (a dict), waiting for it; `None` when the run has
    /// ended well and every output was received; raises the run's error
    /// when it failed.
    fn recv(&self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        loop {
            let got = self
                .without_gil(py, |running| running.recv_timeout(SIGNAL_CHECK))
                .unwrap_or(Some(None));
            match got {
                Some(Some(r)) => return record_to_py(py, &r).map(Some),
                Some(None) => {
                    let running = self.lock().take();
                    return match running.map(|r| py.allow_threads(|| r.finish())) {
                        Some(Err(e)) => Err(run_error(py, &e)),
                        _ => Ok(None),
                    };
                }
                None => py.check_signals()?,
            }
        }
    }

    /// The next output if one is waiting (`None` otherwise).
    fn try_recv(&self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        let got = self.lock().as_ref().and_then(snet::Running::try_recv);
        got.map(|r| record_to_py(py, &r)).transpose()
    }
}

// ---------------------------------------------------------------------------
// The XML record format.

/// The records of an XML stream (`text`, named `name` in errors).
#[pyfunction]
fn read_xml(py: Python<'_>, text: &str, name: &str) -> PyResult<Py<PyList>> {
    let list = PyList::empty(py);
    for r in snet::XmlReader::with_name(text.as_bytes(), name) {
        let r = r.map_err(|e| XmlError::new_err(e.to_string()))?;
        list.append(record_to_py(py, &r)?)?;
    }
    Ok(list.unbind())
}

/// `records` (dicts) as an XML stream, ended by the terminate record.
#[pyfunction]
fn write_xml(records: &Bound<'_, PyAny>) -> PyResult<String> {
    let mut w = snet::XmlWriter::new(Vec::new());
    for r in records.try_iter()? {
        let r = py_to_record(&r?, true)?;
        w.write(&r).map_err(|e| XmlError::new_err(e.to_string()))?;
    }
    let bytes = w.finish().map_err(|e| XmlError::new_err(e.to_string()))?;
    String::from_utf8(bytes).map_err(|e| XmlError::new_err(e.to_string()))
}

/// `Some(k)` in node process k of a shared-memory run.
#[pyfunction]
fn node_process() -> Option<u32> {
    snet::node_process()
}

#[pymodule(gil_used = false)]
fn _snet(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<RawNetwork>()?;
    m.add_class::<RawRunning>()?;
    m.add_function(wrap_pyfunction!(read_xml, m)?)?;
    m.add_function(wrap_pyfunction!(write_xml, m)?)?;
    m.add_function(wrap_pyfunction!(node_process, m)?)?;
    m.add("SnetError", py.get_type::<SnetError>())?;
    m.add("LoadError", py.get_type::<LoadError>())?;
    m.add("RunError", py.get_type::<RunError>())?;
    m.add("XmlError", py.get_type::<XmlError>())?;
    Ok(())
}
