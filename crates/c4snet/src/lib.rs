//! C4SNet: the C box interface.
//!
//! - [`abi`]: the functions of `C4SNet.h` (`include/C4SNet.h`), exported
//!   with C linkage under their C names; `C4SNetOut` is variadic and lives in
//!   `csrc/out.c`, which calls back into [`invoke`];
//! - [`invoke`]: the engine side: [`C4SNet`], a
//!   [`snet_engine::LanguageInterface`] over a table of box trampolines, and
//!   the per-invocation handle the box passes back to `C4SNetOut`;
//! - [`crash`]: the signal handler that names the box a crash happened in.
//!
//! # Fields across the boundary
//!
//! A `c4snet_data_t *` is `Arc::into_raw` of an `Arc<FieldValue>` (the same
//! allocation a [`snet_core::Field`] shares) whose value is always
//! [`FieldValue::Data`](snet_core::FieldValue::Data). The C reference count
//! *is* the `Arc`'s strong count: `C4SNetShallowCopy` increments it,
//! `C4SNetFree` decrements it, a box's field arguments are fresh references
//! (the box owns them), and `C4SNetOut` takes the references it is given back
//! into `Field`s without touching the count.
//!
//! # The box calling convention
//!
//! `void *name(void *hnd, args...)`, one argument per input label in
//! signature order (`c4snet_data_t *` for fields, `int` for tags). Rust cannot
//! call a C function whose arity is known only at run time, so every box is
//! reached through a *trampoline* `void call(void *hnd, const snet_arg_t *args)`
//! that `snet build` generates in C, one per box, from the program's box
//! declarations ([`trampoline_source`]). The table of (name, trampoline) pairs
//! is handed to [`C4SNet::from_table`].

pub mod abi;
pub mod crash;
pub mod invoke;

pub use invoke::{trampoline_source, BoxEntry, BoxFn, C4SNet, SnetArg};

/// The checked-in header, for tools that write it next to generated code.
pub const HEADER: &str = include_str!("../include/C4SNet.h");

/// `bool.h` as the original toolchain installed it (`typedef int bool;`,
/// `true`, `false`; compatible with `<stdbool.h>` in either order), written
/// next to [`HEADER`] by `snet build` for box code that includes it.
pub const BOOL_HEADER: &str = include_str!("../include/bool.h");
