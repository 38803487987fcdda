//! Fields across the C boundary, through a real box invocation: boxes
//! written in Rust as trampolines call the C4SNet ABI (`C4SNetAlloc`,
//! `C4SNetOut`) as C box code does.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};

use c4snet::abi::C4SNetAlloc;
use c4snet::{data_field, data_of, BoxFn, C4Data, C4SNet, CData, CType, SnetArg};
use snet_core::{BoxDef, Field, FieldData, Label, Loc, Record, ReleaseRemote, RemoteField, Value};
use snet_engine::{BoxError, BoxImpl, Emit, LanguageInterface};

extern "C" {
    fn C4SNetOut(hnd: *mut c_void, variant: c_int, ...);
}

/// `void *pass(void *hnd, c4snet_data_t *x)`: outputs `x` unchanged.
unsafe extern "C" fn pass(hnd: *mut c_void, args: *const SnetArg) {
    // SAFETY: one field argument, an owned reference handed on to C4SNetOut.
    unsafe { C4SNetOut(hnd, 1, (*args).field) }
}

/// `void *make(void *hnd, c4snet_data_t *x)`: frees `x`, outputs a new pointer field.
unsafe extern "C" fn make(hnd: *mut c_void, args: *const SnetArg) {
    // SAFETY: as C box code: the argument is owned, the new field is handed on.
    unsafe {
        c4snet::abi::C4SNetFree((*args).field);
        let mut buf: *mut c_void = std::ptr::null_mut();
        let f = C4SNetAlloc(CType::Pointer as c_int, 1, &mut buf);
        C4SNetOut(hnd, 1, f);
    }
}

struct Collect(Vec<Record>);

impl Emit for Collect {
    fn emit(&mut self, _variant: usize, rec: Record) -> Result<(), BoxError> {
        self.0.push(rec);
        Ok(())
    }
}

fn resolve(name: &str, call: BoxFn) -> Arc<dyn BoxImpl> {
    let lang = C4SNet::from_table(HashMap::from([(name.to_string(), call)]));
    lang.resolve(&BoxDef::declared(
        name,
        "C4SNet",
        vec![Label::field("x")],
        vec![vec![Label::field("y")]],
        Loc::start_of("test.snet"),
    ))
    .expect("resolves")
}

fn run(b: &dyn BoxImpl, x: Field) -> Result<Field, BoxError> {
    let mut input = Record::new();
    input.set(Label::field("x"), Value::Field(x));
    let mut out = Collect(Vec::new());
    b.invoke(&input, &mut out)?;
    assert_eq!(out.0.len(), 1);
    Ok(out.0[0].field(Label::field("y")).expect("output").clone())
}

#[test]
fn a_field_passes_through_a_box_as_the_same_allocation() {
    let b = resolve("pass", pass);
    let x = data_field(CData::from_bytes(CType::Int, 1, &5i32.to_ne_bytes()));
    let y = run(&*b, x.clone()).expect("runs");
    assert!(Arc::ptr_eq(x.get().unwrap(), y.get().unwrap()));
    assert_eq!(
        Arc::strong_count(x.get().unwrap()),
        2,
        "x and y, nothing leaked"
    );
    // C4SNet text (read without the text codec) is parsed for the box.
    let y = run(&*b, Field::text("C4SNet", false, "(int[2])1,2")).expect("runs");
    assert_eq!(data_of(&y).expect("C4SNet data").len(), 2);
    let e = run(&*b, Field::text("SAC", false, "x")).expect_err("not C4SNet");
    assert!(
        matches!(&e, BoxError::Unconvertible { label, language: "C", .. } if *label == Label::field("x")),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "field `x` cannot be passed to C: field of interface \"SAC\" is not a C4SNet field"
    );
}

#[test]
fn a_remote_field_must_be_fetched_before_the_box_runs() {
    struct Released(Mutex<u64>);
    impl ReleaseRemote for Released {
        fn release(&self, _home: snet_core::Rank, _id: u64, weight: u64) {
            *self.0.lock().unwrap() += weight;
        }
    }
    let log = Arc::new(Released(Mutex::new(0)));
    let b = resolve("pass", pass);
    let r = Arc::new(RemoteField::new(
        snet_core::Rank(1),
        9,
        "C4SNet",
        13,
        4,
        log.clone(),
    ));
    let e = run(&*b, Field::remote(r.clone())).expect_err("not fetched");
    assert_eq!(
        e,
        BoxError::NotLocal {
            label: Label::field("x")
        }
    );
    assert_eq!(e.to_string(), "field `x` is not on this node");
    let value: Arc<dyn FieldData> = Arc::new(C4Data::new(CData::zeroed(CType::Int, 1)));
    r.fill(value.clone());
    let y = run(&*b, Field::remote(r.clone())).expect("fetched");
    assert!(Arc::ptr_eq(y.get().unwrap(), &value));
    drop((r, y));
    assert_eq!(*log.0.lock().unwrap(), 4, "the weight goes home");
}

#[test]
fn a_pointer_field_names_the_box_that_made_it() {
    let b = resolve("make_ptr", make);
    let y = run(&*b, data_field(CData::zeroed(CType::Int, 1))).expect("runs");
    let v = y.get().expect("local");
    let made = v.as_any().downcast_ref::<C4Data>().expect("C4SNet data");
    assert_eq!(made.maker(), Some("make_ptr"));
    assert_eq!(
        v.portable().map_err(|e| e.to_string()),
        Err("field made by box `make_ptr` holds C4SNet pointers (CTYPE_pointer), which cannot be sent to another node".into())
    );
}
