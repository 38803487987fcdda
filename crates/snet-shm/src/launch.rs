//! Starting and watching the node processes of a shared-memory run.
//!
//! Node 0 (the process the user started) creates the segment and starts
//! nodes 1..N as copies of itself: the same executable (`snet`, or a
//! program made by `snet build`) with the same arguments, and two
//! environment variables, [`NODE_VAR`] (the node's number) and [`FD_VAR`]
//! (the segment's inherited descriptor). Their standard input and output
//! are closed (only node 0 reads and writes records); standard error is
//! shared.
//!
//! * **A node dies with node 0**: each node process asks the kernel for
//!   `SIGKILL` when its parent ends (`PR_SET_PDEATHSIG`, set between fork
//!   and exec, and checked against a parent that died before it was set).
//!   The parent here is the *thread* that started it, so node 0 starts its
//!   nodes from a thread that lives as long as the run (the main thread).
//! * **Node 0 notices a death**: one thread per node process waits for it;
//!   when it ends, the segment's node word says how (`EXITED` for status 0,
//!   else `DEAD` with the status or signal), which wakes every node's input
//!   manager (`segment.rs`), so a dead node is reported within one wait
//!   (at most 100 ms) everywhere.
//! * **Nothing is left behind**: the segment is a memfd, not a file
//!   (`segment.rs`), and [`Nodes::wait`] kills node processes that outlive
//!   a run by more than a grace period.

use std::io;
use std::os::fd::RawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::segment::{state, Segment};
use crate::transport::ShmTransport;

/// The environment variable holding a started node's number.
pub const NODE_VAR: &str = "SNET_SHM_NODE";
/// The environment variable holding the segment's descriptor number.
pub const FD_VAR: &str = "SNET_SHM_FD";

/// If node 0 of a shared-memory run started this process: its node number
/// and the segment's descriptor (or what is wrong with the variables).
pub fn started_as_node() -> Option<Result<(u32, RawFd), String>> {
    let node = std::env::var(NODE_VAR).ok()?;
    let parse = || -> Result<(u32, RawFd), String> {
        let k = node
            .parse()
            .map_err(|_| format!("{NODE_VAR}={node} is not a node number"))?;
        let fd = std::env::var(FD_VAR)
            .ok()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{NODE_VAR} is set, but {FD_VAR} holds no descriptor"))?;
        Ok((k, fd))
    };
    Some(parse())
}

/// This process's endpoint as a started node: maps the inherited segment.
pub fn attach_as_node(node: u32, fd: RawFd) -> Result<ShmTransport, String> {
    let seg = Segment::attach(fd).map_err(|e| format!("cannot map the shared segment: {e}"))?;
    ShmTransport::new(seg, node).map_err(|e| e.to_string())
}

/// How a node process ended: its exit status, or minus the signal.
pub type Status = i32;

/// The node processes node 0 started.
pub struct Nodes {
    pids: Vec<(u32, u32)>,
    ended: mpsc::Receiver<(u32, Status)>,
}

impl Nodes {
    /// Starts nodes 1..N of `t`'s segment as copies of this process.
    /// Call it from the thread that lives as long as the run (see the
    /// module docs).
    pub fn start(t: &Arc<ShmTransport>) -> io::Result<Nodes> {
        let exe = std::env::current_exe()?;
        let args: Vec<_> = std::env::args_os().skip(1).collect();
        let fd = t.segment().fd();
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        let (tx, ended) = mpsc::channel();
        let mut nodes = Nodes {
            pids: Vec::new(),
            ended,
        };
        for k in 1..t.segment().geometry().nodes {
            let mut cmd = Command::new(&exe);
            cmd.args(&args)
                .env(NODE_VAR, k.to_string())
                .env(FD_VAR, fd.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null());
            // SAFETY: the closure runs between fork and exec and calls only
            // async-signal-safe functions (prctl, getppid, fcntl, _exit).
            unsafe {
                cmd.pre_exec(move || {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    if libc::getppid() != parent {
                        libc::_exit(1); // node 0 died already
                    }
                    // Keep the segment's descriptor across exec.
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
            let mut child = match cmd.spawn() {
                Ok(c) => c,
                Err(e) => {
                    nodes.kill_all();
                    return Err(io::Error::new(
                        e.kind(),
                        format!("cannot start node {k} ({}): {e}", exe.display()),
                    ));
                }
            };
            t.segment().set_pid(k, child.id());
            nodes.pids.push((k, child.id()));
            let tx = tx.clone();
            let t = t.clone();
            std::thread::Builder::new()
                .name(format!("snet-shm-watch-{k}"))
                .spawn(move || {
                    let status = match child.wait() {
                        Ok(s) => s.code().unwrap_or_else(|| -s.signal().unwrap_or(0)),
                        Err(_) => -libc::SIGKILL,
                    };
                    let seg = t.segment();
                    if status == 0 {
                        seg.set_state(k, state::EXITED, 0);
                    } else {
                        seg.set_state(k, state::DEAD, status);
                    }
                    let _ = tx.send((k, status));
                })?;
        }
        Ok(nodes)
    }

    /// Waits until every node process has ended; a process still running
    /// `grace` from now is killed. Returns how each ended, by node.
    pub fn wait(self, grace: Duration) -> Vec<(u32, Status)> {
        let deadline = Instant::now() + grace;
        let mut ended: Vec<(u32, Status)> = Vec::new();
        let mut killed = false;
        while ended.len() < self.pids.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.ended.recv_timeout(if killed { Duration::from_secs(5) } else { left }) {
                Ok(e) => ended.push(e),
                Err(mpsc::RecvTimeoutError::Timeout) if !killed => {
                    self.kill_all();
                    killed = true;
                }
                Err(_) => break,
            }
        }
        ended.sort_unstable();
        ended
    }

    fn kill_all(&self) {
        for &(_, pid) in &self.pids {
            // SAFETY: kill(2) on a child we started and have not reaped
            // (its watcher reaps it only after it ended).
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
    }
}
