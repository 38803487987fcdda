//! `C4SNetOutValues` and `C4SNet.h`'s macro `C4SNetOut`.
//!
//! Boxes written in Rust call `C4SNetOutValues` as the macro's expansion
//! does (the common case of `csrc/out.c` and its checked way); boxes
//! written in C and compiled against the header into a C box library
//! (`library_source`, `LIBRARY_GLUE`) call `C4SNetOut` in C99, C11 and
//! C17 (the macro: no values, many, fields and tags mixed, arguments
//! evaluated once), in C89 and C++ (the variadic function), and through
//! `(C4SNetOut)`.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use c4snet::abi::{C4SNetAlloc, C4SNetFree};
use c4snet::library::{interface, library_source, Library, LIBRARY_GLUE};
use c4snet::{data_field, data_of, BoxFn, C4SNet, CData, CType, SnetArg, HEADER};
use snet_core::{BoxDef, Field, Label, Loc, Record, Value};
use snet_engine::{BoxError, BoxImpl, Emit, LanguageInterface};

extern "C" {
    fn C4SNetOutValues(hnd: *mut c_void, variant: c_int, values: *const u64, count: c_int);
}

/// The records a box emitted, with their variants.
struct Collect(Vec<(usize, Record)>);

impl Emit for Collect {
    fn emit(&mut self, variant: usize, rec: Record) -> Result<(), BoxError> {
        self.0.push((variant, rec));
        Ok(())
    }
}

fn def(name: &str, inputs: &[Label], outputs: &[&[Label]]) -> BoxDef {
    BoxDef::declared(
        name,
        "C4SNet",
        inputs.to_vec(),
        outputs.iter().map(|v| v.to_vec()).collect(),
        Loc::start_of("test.snet"),
    )
}

fn run(b: &dyn BoxImpl, input: &Record) -> Result<Vec<(usize, Record)>, BoxError> {
    let mut out = Collect(Vec::new());
    b.invoke(input, &mut out)?;
    Ok(out.0)
}

fn tag(n: &str) -> Label {
    Label::tag(n)
}

fn with_tag(n: &str, v: i64) -> Record {
    let mut r = Record::new();
    r.set(tag(n), Value::Int(v));
    r
}

/// The element of a one-element `int` field.
fn int_of(f: &Field) -> i32 {
    let d = data_of(f).expect("a C4SNet field");
    i32::from_ne_bytes(d.bytes()[..4].try_into().expect("an int"))
}

fn new_int(v: i32) -> *mut c4snet::abi::CField {
    let mut buf: *mut c_void = std::ptr::null_mut();
    // SAFETY: as box code does: a new field of one int, filled in.
    unsafe {
        let f = C4SNetAlloc(CType::Int as c_int, 1, &mut buf);
        *buf.cast::<i32>() = v;
        f
    }
}

/// `(<a>) -> (<p>, <q>, <r>) | () | (<t>, f)`: each variant once, as the
/// macro passes them (a tag by its value, negative ones too; a field by
/// its address).
unsafe extern "C" fn every(hnd: *mut c_void, args: *const SnetArg) {
    // SAFETY: one tag argument.
    let a = unsafe { (*args).tag };
    let tags = [a as u64, (a + 1) as u64, (-7i32) as u64];
    let mixed = [(a * 2) as u64, new_int(a) as u64];
    // SAFETY: the counts are the variants'; the field is owned and passed on.
    unsafe {
        C4SNetOutValues(hnd, 1, tags.as_ptr(), 3);
        C4SNetOutValues(hnd, 2, std::ptr::null(), 0);
        C4SNetOutValues(hnd, 3, mixed.as_ptr(), 2);
    }
}

/// Variant 1 of `every` with the count in the input's `<n>` (3 is right).
unsafe extern "C" fn count(hnd: *mut c_void, args: *const SnetArg) {
    // SAFETY: one tag argument.
    let n = unsafe { (*args).tag };
    let words = [1u64, 2, 3, 4];
    // SAFETY: `n` words at most are read, and only when `n` is right.
    unsafe { C4SNetOutValues(hnd, 1, words.as_ptr(), n) }
}

/// A field and a count in `<n>` (1 is right): the field is not taken when
/// the count is wrong.
unsafe extern "C" fn count_field(hnd: *mut c_void, args: *const SnetArg) {
    // SAFETY: one tag argument.
    let n = unsafe { (*args).tag };
    let f = new_int(5);
    let words = [f as u64, 0];
    // SAFETY: as above; after an error the field is still the box's.
    unsafe {
        C4SNetOutValues(hnd, 1, words.as_ptr(), n);
        if n != 1 {
            C4SNetFree(f);
        }
    }
}

/// Variant `<v>` with no values.
unsafe extern "C" fn variant(hnd: *mut c_void, args: *const SnetArg) {
    // SAFETY: one tag argument.
    let v = unsafe { (*args).tag };
    // SAFETY: no values.
    unsafe { C4SNetOutValues(hnd, v, std::ptr::null(), 0) }
}

fn resolve(name: &str, call: BoxFn, d: &BoxDef) -> Arc<dyn BoxImpl> {
    let lang = C4SNet::from_table(HashMap::from([(name.to_string(), call)]));
    lang.resolve(d).expect("resolves")
}

#[test]
fn values_in_an_array_make_the_variants_records() {
    let d = def(
        "every",
        &[tag("a")],
        &[
            &[tag("p"), tag("q"), tag("r")],
            &[],
            &[tag("t"), Label::field("f")],
        ],
    );
    let b = resolve("every", every, &d);
    let out = run(&*b, &with_tag("a", -3)).expect("runs");
    assert_eq!(out.len(), 3);
    assert_eq!(out[0].0, 1);
    let r = &out[0].1;
    assert_eq!(
        (r.int(tag("p")), r.int(tag("q")), r.int(tag("r"))),
        (Some(-3), Some(-2), Some(-7))
    );
    assert_eq!((out[1].0, out[1].1.len()), (2, 0));
    assert_eq!(out[2].0, 3);
    assert_eq!(out[2].1.int(tag("t")), Some(-6));
    let f = out[2].1.field(Label::field("f")).expect("the field");
    assert_eq!(int_of(f), -3);
    assert_eq!(Arc::strong_count(f.get().expect("local")), 1, "owned once");
}

#[test]
fn a_count_other_than_the_variants_is_an_error_naming_both() {
    let d = def("count", &[tag("n")], &[&[tag("p"), tag("q"), tag("r")]]);
    let b = resolve("count", count, &d);
    let out = run(&*b, &with_tag("n", 3)).expect("the right count");
    assert_eq!(out[0].1.int(tag("r")), Some(3));
    for (n, text) in [
        (
            2,
            "C4SNetOut called with 2 values for output variant 1, which declares 3",
        ),
        (
            4,
            "C4SNetOut called with 4 values for output variant 1, which declares 3",
        ),
        (
            0,
            "C4SNetOut called with 0 values for output variant 1, which declares 3",
        ),
    ] {
        let e = run(&*b, &with_tag("n", n)).expect_err("a wrong count");
        assert!(matches!(e, BoxError::Misuse(_)), "{e:?}");
        assert_eq!(e.to_string(), text);
    }

    let d = def("count_field", &[tag("n")], &[&[Label::field("f")]]);
    let b = resolve("count_field", count_field, &d);
    let out = run(&*b, &with_tag("n", 1)).expect("the right count");
    assert_eq!(int_of(out[0].1.field(Label::field("f")).unwrap()), 5);
    let e = run(&*b, &with_tag("n", 2)).expect_err("a wrong count");
    assert_eq!(
        e.to_string(),
        "C4SNetOut called with 2 values for output variant 1, which declares 1"
    );
}

#[test]
fn an_undeclared_variant_is_reported_as_by_the_variadic_call() {
    let d = def("variant", &[tag("v")], &[&[], &[]]);
    let b = resolve("variant", variant, &d);
    assert_eq!(run(&*b, &with_tag("v", 2)).expect("declared")[0].0, 2);
    for v in [0, 3, -1] {
        let e = run(&*b, &with_tag("v", v)).expect_err("not declared");
        assert_eq!(
            e,
            BoxError::VariantOutOfRange {
                variant: v,
                declared: 2,
                call: Some("C4SNetOut"),
            }
        );
    }
}

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

fn cxx() -> String {
    std::env::var("CXX").unwrap_or_else(|_| "c++".into())
}

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("c4snet-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    std::fs::write(dir.join("C4SNet.h"), HEADER).expect("write");
    dir
}

/// Compiles `source` (written to `dir/name`) with `compiler` and `flags`;
/// the compiler's messages, or an error with them.
fn compile(
    dir: &Path,
    compiler: &str,
    flags: &[&str],
    name: &str,
    source: &str,
) -> Result<String, String> {
    std::fs::write(dir.join(name), source).expect("write");
    let out = Command::new(compiler)
        .args(flags)
        .args(["-fPIC", "-c", "-I"])
        .arg(dir)
        .arg("-o")
        .arg(dir.join(format!("{name}.o")))
        .arg(dir.join(name))
        .output()
        .unwrap_or_else(|e| panic!("{compiler} is needed for this test: {e}"));
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.success() {
        Ok(text)
    } else {
        Err(text)
    }
}

/// Box code in C99 and later: the macro.
const MACRO_BOXES: &str = r#"#include "C4SNet.h"

static int bump(int *k) { return ++*k; }

/* (<a>) -> () | (<k>, <p>, <q>) */
void *none(void *hnd, int a)
{
    int k = 0;
    C4SNetOut(hnd, 1);
    /* each argument evaluated once: k ends at 2 */
    C4SNetOut(hnd, 2, a, bump(&k), bump(&k) * 10);
    C4SNetOut(hnd, 2, k, 0, 0);
    return hnd;
}

/* (<a>, f) -> (<t1>, f1, <t2>, ..., f16): 32 values, tags and fields by turns */
void *many(void *hnd, int a, c4snet_data_t *f)
{
    c4snet_data_t *g[16];
    for (int i = 0; i < 16; i++)
        g[i] = C4SNetShallowCopy(f);
    C4SNetFree(f);
    C4SNetOut(hnd, 1, a + 1, g[0], a + 2, g[1], a + 3, g[2], a + 4, g[3],
              a + 5, g[4], a + 6, g[5], a + 7, g[6], a + 8, g[7],
              a + 9, g[8], a + 10, g[9], a + 11, g[10], a + 12, g[11],
              a + 13, g[12], a + 14, g[13], a + 15, g[14], a + 16, g[15]);
    return hnd;
}

/* (<a>) -> (<p>): two values for one */
void *wrong(void *hnd, int a)
{
    C4SNetOut(hnd, 1, a, a);
    return hnd;
}

/* (<a>) -> (<p>): the function itself, which reads only the variant's values */
void *paren(void *hnd, int a)
{
    (C4SNetOut)(hnd, 1, a, a);
    return hnd;
}
"#;

/// `wrong` in C89 (the function, which reads the variant's one value and
/// leaves the other); `#undef` in C11 does the same.
const C89_BOX: &str = "#include \"C4SNet.h\"\n\
/* (<a>) -> (<p>) */\n\
void *old(void *hnd, int a)\n{\n    C4SNetOut(hnd, 1, a, a);\n    return hnd;\n}\n";
const UNDEF_BOX: &str = "#include \"C4SNet.h\"\n#undef C4SNetOut\n\
void *undef(void *hnd, int a)\n{\n    C4SNetOut(hnd, 1, a, a);\n    return hnd;\n}\n";
const CXX_BOX: &str = "#include \"C4SNet.h\"\n\
extern \"C\" void *cxx(void *hnd, int a)\n{\n    C4SNetOut(hnd, 1, a, a);\n    return hnd;\n}\n";

#[test]
fn the_macro_compiles_cleanly_in_c99_c11_and_c17() {
    let dir = scratch("macro-std");
    for std in ["-std=c99", "-std=c11", "-std=c17"] {
        let flags = [std, "-Wall", "-Wextra", "-pedantic", "-Werror"];
        let text = compile(&dir, &cc(), &flags, "boxes.c", MACRO_BOXES)
            .unwrap_or_else(|e| panic!("{std}: {e}"));
        assert!(text.is_empty(), "{std}: {text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn more_values_than_the_macro_counts_do_not_compile() {
    let dir = scratch("macro-many");
    let call = |n: usize, v: &str| {
        let values: String = (0..n)
            .map(|i| format!(", {}", v.replace('#', &i.to_string())))
            .collect();
        format!("#include \"C4SNet.h\"\nvoid f(void *h, int x) {{ (void)x; C4SNetOut(h, 1{values}); }}\n")
    };
    for v in ["x", "#", "x + #", "(x)"] {
        assert!(
            compile(&dir, &cc(), &["-std=c11"], "ok.c", &call(32, v)).is_ok(),
            "32 values of {v}"
        );
        for n in [33, 64] {
            let e =
                compile(&dir, &cc(), &["-std=c11"], "many.c", &call(n, v)).expect_err("too many");
            assert!(
                e.contains("C4SNetOut: more than 32 values"),
                "{n} values of {v}: {e}"
            );
        }
        for n in [65, 66, 100] {
            compile(&dir, &cc(), &["-std=c11"], "many.c", &call(n, v)).expect_err("too many");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Builds a C box library of `objects` (compiled in `dir`) for `defs`.
fn library(dir: &Path, defs: &[&BoxDef], objects: &[&str]) -> Library {
    compile(dir, &cc(), &[], "snet_library.c", &library_source(defs)).expect("the table compiles");
    compile(dir, &cc(), &[], "snet_c4snet.c", LIBRARY_GLUE).expect("the glue compiles");
    let lib = dir.join("libboxes.so");
    let mut objs = vec![
        "snet_library.c.o".to_string(),
        "snet_c4snet.c.o".to_string(),
    ];
    objs.extend(objects.iter().map(|o| format!("{o}.o")));
    let built = Command::new(cc())
        .args(["-shared", "-Wl,-z,defs", "-o"])
        .arg(&lib)
        .args(objs.iter().map(|o| dir.join(o)))
        .status()
        .expect("run cc");
    assert!(built.success());
    Library::open(&lib).expect("loads")
}

#[test]
fn c_boxes_call_the_macro_in_c99_and_the_function_in_c89_and_cxx() {
    let dir = scratch("macro-run");
    let a = [tag("a")];
    let p: &[Label] = &[tag("p")];
    let defs = [
        def("none", &a, &[&[], &[tag("k"), tag("p"), tag("q")]]),
        def(
            "many",
            &[tag("a"), Label::field("f")],
            &[&(1..=16)
                .flat_map(|i| [tag(&format!("t{i}")), Label::field(&format!("f{i}"))])
                .collect::<Vec<_>>()],
        ),
        def("wrong", &a, &[p]),
        def("paren", &a, &[p]),
        def("old", &a, &[p]),
        def("undef", &a, &[p]),
        def("cxx", &a, &[p]),
    ];
    let strict = ["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror"];
    compile(&dir, &cc(), &strict, "boxes.c", MACRO_BOXES).expect("C99 boxes");
    compile(
        &dir,
        &cc(),
        &["-std=c89", "-Wall", "-Wextra"],
        "old.c",
        C89_BOX,
    )
    .expect("C89 box");
    compile(
        &dir,
        &cc(),
        &["-std=c11", "-Wall", "-Wextra"],
        "undef.c",
        UNDEF_BOX,
    )
    .expect("C11 box");
    compile(
        &dir,
        &cxx(),
        &["-std=c++17", "-Wall", "-Wextra"],
        "cxx.cpp",
        CXX_BOX,
    )
    .expect("C++ box");
    let refs: Vec<&BoxDef> = defs.iter().collect();
    let lib = library(&dir, &refs, &["boxes.c", "old.c", "undef.c", "cxx.cpp"]);
    let lang = interface(
        defs.iter()
            .map(|d| {
                (
                    d.name.clone(),
                    lib.find(d).expect("its signature").expect("defined"),
                )
            })
            .collect(),
    );
    let b = |name: &str| {
        lang.resolve(defs.iter().find(|d| d.name == name).unwrap())
            .expect("resolves")
    };

    let out = run(&*b("none"), &with_tag("a", 5)).expect("runs");
    assert_eq!(out.len(), 3);
    assert_eq!((out[0].0, out[0].1.len()), (1, 0), "no values");
    let r = &out[1].1;
    let mut bumps = [r.int(tag("p")).unwrap(), r.int(tag("q")).unwrap()];
    bumps.sort();
    assert!(bumps == [1, 20] || bumps == [2, 10], "{bumps:?}");
    assert_eq!(r.int(tag("k")), Some(5));
    assert_eq!(
        out[2].1.int(tag("k")),
        Some(2),
        "each argument evaluated once"
    );

    let f = data_field(CData::from_bytes(CType::Int, 1, &9i32.to_ne_bytes()));
    let mut input = with_tag("a", 100);
    input.set(Label::field("f"), Value::Field(f.clone()));
    let out = run(&*b("many"), &input).expect("runs");
    let r = &out[0].1;
    for i in 1..=16 {
        assert_eq!(r.int(tag(&format!("t{i}"))), Some(100 + i64::from(i)));
        let g = r.field(Label::field(&format!("f{i}"))).expect("the field");
        assert!(Arc::ptr_eq(g.get().unwrap(), f.get().unwrap()));
    }
    drop(out);
    assert_eq!(
        Arc::strong_count(f.get().unwrap()),
        2,
        "f, the input's; nothing leaked"
    );

    let e = run(&*b("wrong"), &with_tag("a", 1)).expect_err("two values for one");
    assert_eq!(
        e.to_string(),
        "C4SNetOut called with 2 values for output variant 1, which declares 1"
    );
    for name in ["paren", "old", "undef", "cxx"] {
        let out = run(&*b(name), &with_tag("a", 4)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out[0].1.int(tag("p")), Some(4), "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
