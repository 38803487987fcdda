//! The C shim's functions (`csrc/shim.c`, compiled with the installed
//! MPI's own flags): MPI behind ints and opaque pointers, so that the
//! layout of MPI's handles and `MPI_Status` never reaches Rust. Only the
//! communication thread ([`crate::comm`]) calls them.

use std::ffi::{c_char, c_int, c_void};

extern "C" {
    pub(crate) fn snet_mpi_initialized() -> c_int;
    pub(crate) fn snet_mpi_init(rank: *mut c_int, size: *mut c_int, provided: *mut c_int) -> c_int;
    pub(crate) fn snet_mpi_thread_funneled() -> c_int;
    pub(crate) fn snet_mpi_finalize() -> c_int;
    pub(crate) fn snet_mpi_error_string(code: c_int, buf: *mut c_char, cap: usize);
    pub(crate) fn snet_mpi_isend(
        buf: *const c_void,
        len: usize,
        dest: c_int,
        tag: c_int,
        req: *mut *mut c_void,
    ) -> c_int;
    pub(crate) fn snet_mpi_test(req: *mut c_void, done: *mut c_int) -> c_int;
    pub(crate) fn snet_mpi_cancel(req: *mut c_void);
    pub(crate) fn snet_mpi_improbe(
        found: *mut c_int,
        source: *mut c_int,
        tag: *mut c_int,
        len: *mut usize,
        msg: *mut *mut c_void,
    ) -> c_int;
    pub(crate) fn snet_mpi_mrecv(buf: *mut c_void, len: usize, msg: *mut c_void) -> c_int;
    pub(crate) fn snet_mpi_imrecv(
        buf: *mut c_void,
        len: usize,
        msg: *mut c_void,
        req: *mut *mut c_void,
    ) -> c_int;
}
