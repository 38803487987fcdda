//! The C entry point of a built executable ([`snet_runner_main`]), called
//! by the `main` that `snet build` generates.

use std::ffi::{c_char, c_int, CStr};
use std::sync::Arc;

use clap::Parser;

use c4snet::{BoxEntry, C4SNet};

use crate::{run, say_raw, tune_allocator, RunOptions};

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
