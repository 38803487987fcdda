//! C box libraries: C boxes in a shared object loaded at run time, next to
//! boxes of another language (Python, Rust) in one network.
//!
//! A built program (`snet build`) links its C boxes and their trampolines
//! into one executable. A program whose other boxes are registered at run
//! time (the `snet` library, the Python package) loads them instead from a
//! shared object holding:
//!
//! * the trampolines of the program's C4SNet boxes ([`library_source`]),
//!   each box function referenced *weakly*, so that the library reports
//!   which boxes it defines (a box defined nowhere in it is left to
//!   another language) and still links with `-z defs`;
//! * each box's signature as the program declared it, checked against the
//!   program that loads it (a trampoline passes arguments by the kinds of
//!   the declaration it was made from);
//! * its own C4SNet functions ([`LIBRARY_GLUE`], `csrc/library.c`),
//!   forwarding through a table of this crate's functions that the loader
//!   hands over (`__snet_c4snet_bind`): the process that loads the library
//!   need not export the runtime's symbols (an interpreter loads its
//!   extension module privately; a Rust executable exports nothing).
//!
//! [`Library::open`] loads one (`dlopen`, never closed: its code may run
//! until the process ends) and [`interface`] makes the C4SNet language
//! interface of the boxes taken from libraries.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_ulong, c_void, CStr, CString};
use std::fmt;
use std::fmt::Write as _;
use std::path::Path;

use snet_core::{BoxDef, Label, LabelKind};

use crate::abi::{self, CField};
use crate::invoke::{BoxEntry, BoxFn, C4SNet, SnetArg};

/// The C4SNet functions a library compiles in (they forward to the
/// runtime's): compile it with [`crate::HEADER`] as `C4SNet.h` beside it.
pub const LIBRARY_GLUE: &str = include_str!("../csrc/library.c");

/// The version of the table handed to a library (`csrc/library.c` checks it).
const API_VERSION: c_ulong = 2;

/// The symbol a library exports with its box table.
const TABLE_SYMBOL: &str = "__snet_c4snet_library";
/// The symbol that binds a library to the runtime's C4SNet functions.
const BIND_SYMBOL: &str = "__snet_c4snet_bind";

/// The runtime's functions handed to a library; `struct
/// __snet_c4snet_api` in `csrc/library.c`.
#[repr(C)]
struct Api {
    version: c_ulong,
    size: c_ulong,
    alloc: unsafe extern "C" fn(c_int, usize, *mut *mut c_void) -> *mut CField,
    create: unsafe extern "C" fn(c_int, usize, *const c_void) -> *mut CField,
    free: unsafe extern "C" fn(*mut CField),
    shallow_copy: unsafe extern "C" fn(*mut CField) -> *mut CField,
    deep_copy: unsafe extern "C" fn(*mut CField) -> *mut CField,
    size_of: unsafe extern "C" fn(*mut CField) -> c_int,
    array_size: unsafe extern "C" fn(*mut CField) -> usize,
    get_data: unsafe extern "C" fn(*mut CField) -> *mut c_void,
    get_type: unsafe extern "C" fn(*mut CField) -> c_int,
    get_string: unsafe extern "C" fn(*mut CField) -> *mut c_char,
    out_begin:
        unsafe extern "C" fn(*mut c_void, c_int, *mut *const c_int, *mut *mut c_void) -> c_int,
    out_end: unsafe extern "C" fn(*mut c_void, c_int, *const SnetArg, c_int),
    out_values: unsafe extern "C" fn(*mut c_void, c_int, *const u64, c_int),
}

static API: Api = Api {
    version: API_VERSION,
    size: std::mem::size_of::<Api>() as c_ulong,
    alloc: abi::C4SNetAlloc,
    create: abi::C4SNetCreate,
    free: abi::C4SNetFree,
    shallow_copy: abi::C4SNetShallowCopy,
    deep_copy: abi::C4SNetDeepCopy,
    size_of: abi::C4SNetSizeof,
    array_size: abi::C4SNetArraySize,
    get_data: abi::C4SNetGetData,
    get_type: abi::C4SNetGetType,
    get_string: abi::C4SNetGetString,
    out_begin: crate::invoke::snet_c4snet_out_begin,
    out_end: crate::invoke::snet_c4snet_out_end,
    out_values: crate::invoke::snet_c4snet_out_values,
};

/// A box's signature as S-Net writes it: `f((x, <t>) -> (y) | (<e>))`
/// (`f(-> (y))` for an initialiser). What a library records for each box
/// and the loader compares with the program's declaration.
pub fn signature_text(def: &BoxDef) -> String {
    fn label(l: &Label) -> String {
        match l.kind() {
            LabelKind::Field => l.name().to_string(),
            LabelKind::Tag => format!("<{}>", l.name()),
            LabelKind::BTag => format!("<#{}>", l.name()),
        }
    }
    fn list(ls: &[Label]) -> String {
        format!("({})", ls.iter().map(label).collect::<Vec<_>>().join(", "))
    }
    let outputs: Vec<String> = def.outputs.iter().map(|v| list(v)).collect();
    let inputs = if def.init {
        String::new()
    } else {
        format!("{} ", list(&def.inputs))
    };
    format!("{}({inputs}-> {})", def.name, outputs.join(" | "))
}

/// The generated C source of a box library for `boxes` (C4SNet boxes,
/// each name once): a weak prototype and a trampoline per box, the table,
/// the signatures, and `__snet_c4snet_library`, which reports them and
/// which boxes the library defines. Compile it with [`LIBRARY_GLUE`] and
/// the box sources into one shared object (`-shared -fPIC`).
pub fn library_source(boxes: &[&BoxDef]) -> String {
    let mut c = String::from(
        "/* Generated by snet: the box table of a C box library (see c4snet's library.rs). */\n\
         struct cdata;\n",
    );
    c.push_str(crate::codegen::ARG_UNION);
    c.push_str(
        "struct __snet_box_entry { const char *name; void (*call)(void *, const __snet_arg_t *); };\n\n",
    );
    for b in boxes {
        c.push_str(&crate::codegen::trampoline_source(b));
        // A box the library does not define is left to another language.
        let _ = writeln!(c, "#pragma weak {}\n", b.name);
    }
    c.push_str("static const struct __snet_box_entry __snet_boxes[] = {\n");
    for b in boxes {
        let _ = writeln!(
            c,
            "    {{ {}, __snet_call_{} }},",
            crate::codegen::c_quote(&b.name),
            b.name
        );
    }
    c.push_str("    { 0, 0 }\n};\n\nstatic const char *const __snet_signatures[] = {\n");
    for b in boxes {
        let _ = writeln!(c, "    {},", crate::codegen::c_quote(&signature_text(b)));
    }
    c.push_str("    0\n};\n\n");
    let _ = writeln!(
        c,
        "__attribute__((visibility(\"default\")))\n\
         unsigned long {TABLE_SYMBOL}(const struct __snet_box_entry **boxes, const char *const **signatures, const unsigned char **defined)\n\
         {{\n    static unsigned char present[{}];",
        boxes.len() + 1
    );
    for (i, b) in boxes.iter().enumerate() {
        let _ = writeln!(c, "    present[{i}] = {} != 0;", b.name);
    }
    let _ = writeln!(
        c,
        "    *boxes = __snet_boxes;\n    *signatures = __snet_signatures;\n    *defined = present;\n    return {};\n}}",
        boxes.len()
    );
    c
}

/// Why a C box library could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibraryError {
    /// The library's path, as given.
    pub path: String,
    /// What went wrong.
    pub reason: String,
}

impl fmt::Display for LibraryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "C box library {}: {}", self.path, self.reason)
    }
}

impl std::error::Error for LibraryError {}

/// A loaded C box library: the boxes it defines, with the signatures it
/// was made for.
#[derive(Clone, Debug)]
pub struct Library {
    path: String,
    boxes: HashMap<String, (BoxFn, String)>,
}

/// The message of the last `dlopen`/`dlsym` failure.
fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated message.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: non-null: a NUL-terminated string owned by libc.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

type TableFn = unsafe extern "C" fn(
    *mut *const BoxEntry,
    *mut *const *const c_char,
    *mut *const u8,
) -> c_ulong;
type BindFn = unsafe extern "C" fn(*const Api) -> c_int;

impl Library {
    /// Loads the library at `path` and binds it to this runtime. A path
    /// without a `/` is taken as relative to the current directory (not
    /// searched for in the system's library directories).
    pub fn open(path: &Path) -> Result<Library, LibraryError> {
        let shown = path.display().to_string();
        let fail = |reason: String| LibraryError {
            path: shown.clone(),
            reason,
        };
        let full = if path.components().count() == 1 {
            Path::new(".").join(path)
        } else {
            path.to_path_buf()
        };
        if !full.is_file() {
            return Err(fail("no such file".into()));
        }
        let c_path = CString::new(full.as_os_str().as_encoded_bytes())
            .map_err(|_| fail("the path holds a NUL byte".into()))?;
        // SAFETY: a NUL-terminated path; RTLD_NOW resolves every symbol
        // now (a box function the library refers to but lacks is reported
        // here, by name, not when the box runs).
        let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(fail(format!("cannot load it: {}", dl_error())));
        }
        let symbol = |name: &str| {
            let n = CString::new(name).unwrap_or_default();
            // SAFETY: a live handle and a NUL-terminated name.
            unsafe { libc::dlsym(handle, n.as_ptr()) }
        };
        let (table, bind) = (symbol(TABLE_SYMBOL), symbol(BIND_SYMBOL));
        if table.is_null() || bind.is_null() {
            return Err(fail(format!(
                "not a C box library made by snet (it has no {})",
                if table.is_null() {
                    TABLE_SYMBOL
                } else {
                    BIND_SYMBOL
                }
            )));
        }
        // SAFETY: the symbols of a snet box library have these types
        // (`library_source`, `csrc/library.c`).
        let (table, bind) = unsafe {
            (
                std::mem::transmute::<*mut c_void, TableFn>(table),
                std::mem::transmute::<*mut c_void, BindFn>(bind),
            )
        };
        // SAFETY: `API` lives for the program; the library copies it.
        if unsafe { bind(&API) } != 0 {
            return Err(fail(
                "it was made by another version of snet: build it again".into(),
            ));
        }
        let mut entries: *const BoxEntry = std::ptr::null();
        let mut signatures: *const *const c_char = std::ptr::null();
        let mut defined: *const u8 = std::ptr::null();
        // SAFETY: three valid out-pointers; the library returns its count.
        let n = unsafe { table(&mut entries, &mut signatures, &mut defined) } as usize;
        let mut boxes = HashMap::new();
        for i in 0..n {
            // SAFETY: the library's arrays hold `n` entries, signatures
            // and flags; names and signatures are NUL-terminated and
            // static in the library, which is never unloaded.
            let (entry, sig, present) = unsafe {
                (
                    *entries.add(i),
                    CStr::from_ptr(*signatures.add(i)),
                    *defined.add(i) != 0,
                )
            };
            if present {
                // SAFETY: as above.
                let name = unsafe { CStr::from_ptr(entry.name) };
                boxes.insert(
                    name.to_string_lossy().into_owned(),
                    (entry.call, sig.to_string_lossy().into_owned()),
                );
            }
        }
        Ok(Library { path: shown, boxes })
    }

    /// The path it was loaded from, as given.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The names of the boxes it defines.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.boxes.keys().map(String::as_str)
    }

    /// Box `def`'s trampoline, if the library defines the box: an error
    /// if it was made for another signature.
    pub fn find(&self, def: &BoxDef) -> Result<Option<BoxFn>, LibraryError> {
        let Some((call, sig)) = self.boxes.get(&def.name) else {
            return Ok(None);
        };
        let want = signature_text(def);
        if *sig != want {
            return Err(LibraryError {
                path: self.path.clone(),
                reason: format!(
                    "box `{}` was built for `{sig}`, but the program ({}) declares `{want}`: build the library from this program",
                    def.name, def.loc
                ),
            });
        }
        Ok(Some(*call))
    }
}

/// The C4SNet language interface of boxes taken from libraries (name to
/// trampoline). Unlike [`C4SNet::from_table`] it installs no crash
/// handlers: the process may be one the user started, whose signal
/// handlers are its own (node processes install them themselves).
pub fn interface(table: HashMap<String, BoxFn>) -> C4SNet {
    C4SNet::without_crash_handlers(table)
}
