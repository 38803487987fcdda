//! The MPI transport's errors: [`MpiError`] (its own failures, carried
//! in [`snet_transport::TransportError::Failed`]) and [`MpiCallError`] (a
//! failed MPI call with MPI's text for it).

use std::ffi::{c_char, c_int};

use crate::ffi;

/// What MPI says about error `code` (`MPI_Error_string`; on the
/// communication thread only).
pub(crate) fn mpi_error(code: c_int) -> MpiCallError {
    let mut buf = [0 as c_char; 512];
    // SAFETY: the shim writes at most buf.len() bytes, NUL-terminated.
    unsafe { ffi::snet_mpi_error_string(code, buf.as_mut_ptr(), buf.len()) };
    // SAFETY: NUL-terminated by the shim.
    let s = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
    MpiCallError {
        code,
        text: s.to_string_lossy().into_owned(),
    }
}

/// A failed MPI call: its error code and MPI's own text for it (taken
/// when the call failed: only the communication thread may ask MPI).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MpiCallError {
    /// The code the call returned.
    pub code: c_int,
    /// MPI's text for it (`MPI_Error_string`).
    pub text: String,
}

impl std::fmt::Display for MpiCallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MPI error {}: {}", self.code, self.text)
    }
}

impl std::error::Error for MpiCallError {}

/// The MPI transport's own failures ([`snet_transport::TransportError::Failed`]).
#[derive(Debug)]
pub enum MpiError {
    /// [`crate::MpiTransport::start`] was called before in this process.
    StartedTwice,
    /// The communication thread could not be started.
    Thread(std::io::Error),
    /// The communication thread ended before it said whether MPI started.
    ThreadDied,
    /// Something else in this process initialised MPI.
    InitialisedElsewhere,
    /// `MPI_Init_thread` failed.
    Init(MpiCallError),
    /// The library does not provide `MPI_THREAD_FUNNELED`.
    NotFunneled,
    /// An MPI call failed.
    Call(MpiCallError),
    /// Node `from` sent a message this node cannot read (`what`).
    Malformed {
        /// The sending node.
        from: u32,
        /// What is wrong with the message.
        what: &'static str,
    },
}

impl std::fmt::Display for MpiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MpiError::StartedTwice => f.write_str("MPI can be started only once in a process"),
            MpiError::Thread(e) => write!(f, "cannot start the MPI thread: {e}"),
            MpiError::ThreadDied => f.write_str("the MPI thread died"),
            MpiError::InitialisedElsewhere => {
                f.write_str("MPI was initialised by someone else in this process")
            }
            MpiError::Init(e) => write!(f, "MPI_Init_thread failed: {e}"),
            MpiError::NotFunneled => {
                f.write_str("this MPI library does not support MPI_THREAD_FUNNELED")
            }
            MpiError::Call(e) => write!(f, "{e}"),
            MpiError::Malformed { from, what } => {
                write!(f, "node {from} sent a malformed message: {what}")
            }
        }
    }
}

impl std::error::Error for MpiError {}
