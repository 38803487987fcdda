//! Starting and watching the node processes of a shared-memory run.
//!
//! Node 0 (the process the user started) creates the segment and starts
//! nodes 1..N as copies of itself: the same executable (`snet`, or a
//! program made by `snet build`) with the same arguments, and two
//! environment variables, [`NODE_VAR`] (the node's number) and [`FD_VAR`]
//! (the segment's inherited descriptor). Their standard input and output
//! are closed (only node 0 reads and writes records); standard error is
//! shared. A node process names its main thread `snet-node-K` (what `ps`
//! and `/proc/PID/comm` show).
//!
//! * **Fork where it is safe, else exec**: while node 0 has one thread
//!   (a built program or `snet run` at this point: the program parsed and
//!   checked, no engine thread yet), it *forks* nodes 1..N: each child
//!   sets the variables itself and joins the run with node 0's checked
//!   program and everything else already in memory. An exec'd node pays
//!   the dynamic linking of the program and its libraries (three quarters
//!   of a node's 3.2 million start-up instructions, Open MPI's libraries
//!   mostly), the parse and the check again: a few milliseconds of CPU on
//!   a core the running nodes share. With more than one thread (the
//!   `snet` library's run thread), with [`NodeCommand::Command`], for
//!   every replacement (started by the launcher thread), and with
//!   [`EXEC_VAR`]`=1`, node processes are exec'd as before.
//! * **A node dies with node 0**: each node process asks the kernel for
//!   `SIGKILL` when its parent ends (`PR_SET_PDEATHSIG`, set between fork
//!   and exec, and checked against a parent that died before it was set).
//!   The parent here is the *thread* that started it, so node 0 starts its
//!   nodes from a thread that lives as long as the run (the main thread).
//!   A forked node asks the same right after the fork.
//! * **Node 0 notices a death**: one thread per node process waits for it;
//!   when it ends, the segment's node word says how (`EXITED` for status 0
//!   after its transport closed in order, else `DEAD` with the status or
//!   signal), which wakes every node's input manager (`segment.rs`), so a
//!   dead node is reported within one wait (at most 100 ms) everywhere. A
//!   process that ends with status 0 *before* its transport closed (a box
//!   calling `_exit(0)`, say) did not finish its part of the run: it is
//!   `DEAD` with status 0 ([`Ended::early`]), never taken for a clean exit.
//! * **A lost node is replaced** (`--on-node-loss respawn`): node 0's
//!   transport ([`ShmTransport`]'s `Transport::replace`) asks the
//!   *launcher thread* to start node K again, the same way, with
//!   [`INCARNATION_VAR`] set to the new incarnation. That thread is
//!   started beside the first nodes and lives until every node's current
//!   process has ended (a node dies with the thread that started it).
//!   The end of a replaced process is not its node's ([`Ended`] is the
//!   current process's).
//! * **Nothing is left behind**: the segment is a memfd, not a file
//!   (`segment.rs`), and [`run`] kills node processes that outlive
//!   a run by more than a grace period.
//!
//! [`run`] is the one way to take part in a run: every caller (`snet run
//! --transport shm`, built programs, `snet selftest`, `snet pingpong`, the
//! `snet` library's `Transport::Shm`) goes through it, so segment
//! creation, node launch and the grace wait are written once.

use std::io;
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::segment::{state, Segment};
use crate::transport::ShmTransport;

/// The environment variable holding a started node's number.
pub const NODE_VAR: &str = "SNET_SHM_NODE";
/// The environment variable holding the segment's descriptor number.
pub const FD_VAR: &str = "SNET_SHM_FD";
/// The environment variable holding a started node's incarnation: 0 for
/// the process node 0 started first, one more for each replacement
/// (`--on-node-loss respawn`). Boxes may read it (tests do, to fail once).
pub const INCARNATION_VAR: &str = "SNET_SHM_INCARNATION";

/// Why a started node cannot join its run.
#[derive(Debug)]
pub enum LaunchError {
    /// [`NODE_VAR`] does not hold a node number (its value).
    BadNode(String),
    /// [`NODE_VAR`] is set, but [`FD_VAR`] holds no descriptor.
    NoDescriptor,
    /// The inherited segment cannot be mapped.
    Map(io::Error),
    /// The node's endpoint cannot be made.
    Endpoint(snet_transport::TransportError),
}

impl std::fmt::Display for LaunchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LaunchError::BadNode(v) => write!(f, "{NODE_VAR}={v} is not a node number"),
            LaunchError::NoDescriptor => {
                write!(f, "{NODE_VAR} is set, but {FD_VAR} holds no descriptor")
            }
            LaunchError::Map(e) => write!(f, "cannot map the shared segment: {e}"),
            LaunchError::Endpoint(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for LaunchError {}

/// If node 0 of a shared-memory run started this process: its node number
/// and the segment's descriptor (or what is wrong with the variables).
pub fn started_as_node() -> Option<Result<(u32, RawFd), LaunchError>> {
    let node = std::env::var(NODE_VAR).ok()?;
    let parse = || -> Result<(u32, RawFd), LaunchError> {
        let k = node
            .parse()
            .map_err(|_| LaunchError::BadNode(node.clone()))?;
        let fd = std::env::var(FD_VAR)
            .ok()
            .and_then(|v| v.parse().ok())
            .ok_or(LaunchError::NoDescriptor)?;
        Ok((k, fd))
    };
    Some(parse())
}

/// This process's endpoint as a started node: maps the inherited segment.
fn attach_as_node(node: u32, fd: RawFd) -> Result<ShmTransport, LaunchError> {
    let seg = Segment::attach(fd).map_err(LaunchError::Map)?;
    ShmTransport::new(seg, node).map_err(LaunchError::Endpoint)
}

/// How node 0 starts the other node processes of a [`run`].
#[derive(Copy, Clone, Debug)]
pub enum NodeCommand<'a> {
    /// Copies of this process: this executable with this process's
    /// arguments (`snet`, or a program made by `snet build`).
    ThisProgram,
    /// `exe args...` (an interpreter's program whose nodes run a module of
    /// its own: the Python package).
    Command {
        /// The executable.
        exe: &'a std::path::Path,
        /// Its arguments.
        args: &'a [std::ffi::OsString],
    },
}

/// How a process takes part in a [`run`]: the segment's shape (node 0
/// creates it; a started node finds it in its inherited segment), how the
/// other nodes are started, and the environment variables they get
/// besides [`NODE_VAR`] and [`FD_VAR`].
#[derive(Copy, Clone, Debug)]
pub struct Launch<'a> {
    /// The segment node 0 creates (nodes, notification, field mode).
    pub geometry: crate::Geometry,
    /// What node 0 starts as nodes 1..N.
    pub command: NodeCommand<'a>,
    /// Variables set in every node process (the `snet` library names the
    /// network a node process is to join).
    pub env: &'a [(&'a str, &'a str)],
}

/// Why a [`run`] could not start.
#[derive(Debug)]
pub enum SetupError {
    /// This process was started as a node and cannot join its run.
    Join(LaunchError),
    /// Node 0 cannot create the segment.
    Create(io::Error),
    /// Node 0's endpoint cannot be made.
    Endpoint(snet_transport::TransportError),
    /// Node 0 cannot start the node processes.
    Start(io::Error),
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetupError::Join(e) => write!(f, "{e}"),
            SetupError::Create(e) => write!(f, "cannot create the shared-memory segment: {e}"),
            SetupError::Endpoint(e) => write!(f, "{e}"),
            SetupError::Start(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SetupError {}

/// How long node 0 waits for the node processes after its part of a run
/// before it kills them: they end right after a run that went well; after
/// a failure they were told (or cannot be), so the wait is short.
pub fn grace(went_well: bool) -> Duration {
    Duration::from_secs(if went_well { 30 } else { 3 })
}

/// What a [`run`] gives back: the part's own result, this process's
/// endpoint (its counters and geometry for reports) and, on node 0, how
/// the other node processes ended (empty on a started node).
pub struct Ran<T> {
    /// What the part returned.
    pub output: T,
    /// This process's endpoint.
    pub transport: Arc<ShmTransport>,
    /// How nodes 1..N ended, by node (node 0 only).
    pub ended: Vec<Ended>,
}

/// Takes part in a shared-memory run: a process started as a node (see
/// [`started_as_node`]) maps its inherited segment; any other process is
/// node 0, which creates the segment of `launch.geometry` and starts nodes
/// 1..N (`launch.command`, with `launch.env`) from the calling thread,
/// which must live as long as the run (see the module docs). Then `part`
/// runs this process's part on the endpoint and says whether it went well;
/// node 0 then waits for the node processes ([`grace`] of that) and
/// returns how they ended.
pub fn run<T>(
    launch: &Launch<'_>,
    part: impl FnOnce(&Arc<ShmTransport>) -> (T, bool),
) -> Result<Ran<T>, SetupError> {
    if let Some(started) = started_as_node() {
        let (k, fd) = started.map_err(SetupError::Join)?;
        name_node(k);
        let t = Arc::new(attach_as_node(k, fd).map_err(SetupError::Join)?);
        let (output, _) = part(&t);
        return Ok(Ran {
            output,
            transport: t,
            ended: Vec::new(),
        });
    }
    let seg = Segment::create(launch.geometry).map_err(SetupError::Create)?;
    let t = Arc::new(ShmTransport::new(seg, 0).map_err(SetupError::Endpoint)?);
    let nodes = if launch.geometry.nodes > 1 {
        // Copies of this process are forked where that is safe (see the
        // module docs): the children need neither exec nor start-up.
        let mut forked = Vec::new();
        if matches!(launch.command, NodeCommand::ThisProgram) && may_fork() {
            // SAFETY: getpid has no preconditions.
            let parent = unsafe { libc::getpid() };
            for k in 1..launch.geometry.nodes {
                match fork_node(parent, k) {
                    Ok(Some(pid)) => forked.push((k, pid)),
                    Ok(None) => return as_forked_node(k, t, launch.env, part),
                    Err(e) => {
                        kill_and_reap(&forked);
                        return Err(SetupError::Start(io::Error::new(
                            e.kind(),
                            format!("cannot start node {k} (fork): {e}"),
                        )));
                    }
                }
            }
        }
        let started = match launch.command {
            NodeCommand::ThisProgram => Nodes::start_with_env(&t, launch.env, &forked),
            NodeCommand::Command { exe, args } => {
                Nodes::start_command(&t, exe, args, launch.env, &forked)
            }
        };
        Some(started.map_err(SetupError::Start)?)
    } else {
        None
    };
    let (output, went_well) = part(&t);
    let ended = nodes.map(|n| n.wait(grace(went_well))).unwrap_or_default();
    Ok(Ran {
        output,
        transport: t,
        ended,
    })
}

/// The environment variable that, set to `1`, makes node 0 start every
/// node process with exec (as a replacement is always started) instead of
/// forking it: for comparisons, and for tools that find node processes by
/// their environment (`/proc/PID/environ` shows a forked node node 0's).
pub const EXEC_VAR: &str = "SNET_SHM_EXEC";

/// Whether node 0 may fork its node processes: it starts copies of itself
/// ([`NodeCommand::ThisProgram`]), [`EXEC_VAR`] does not ask for exec, and
/// this process has one thread. A fork copies only the calling thread: a
/// lock another thread held (the allocator's, standard output's) would
/// stay locked in the child for ever. Built programs and `snet run` reach
/// here on their main thread before the engine starts any; the `snet`
/// library (whose run has a thread of its own) and the Python package
/// (which starts a command) exec.
fn may_fork() -> bool {
    if std::env::var_os(EXEC_VAR).is_some_and(|v| v == "1") {
        return false;
    }
    // A thread that ended may linger in the list a moment: then exec.
    std::fs::read_dir("/proc/self/task").is_ok_and(|d| d.count() == 1)
}

/// Forks a node process of node 0 (`parent`): its pid in the parent,
/// `None` in the child, which from here on is a started node as an exec'd
/// one is at its start: dies with node 0, standard input and output
/// `/dev/null`, named `snet-node-K`. The child's set-up failing ends it with status 1, which
/// node 0's watcher reports like any node's end.
fn fork_node(parent: libc::pid_t, k: u32) -> io::Result<Option<u32>> {
    use std::io::Write;
    // Output buffered now would be written twice, once by each process.
    let _ = std::io::stdout().flush();
    // SAFETY: this process has one thread (`may_fork`), so the child's
    // copy holds no lock that a thread it lacks was holding.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid > 0 {
        return Ok(Some(pid as u32));
    }
    // SAFETY: plain system calls in the child, on its own descriptors.
    unsafe {
        // As an exec'd node's pre_exec: dies with node 0's thread (this
        // one), and not at all if node 0 died before the request.
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 || libc::getppid() != parent {
            libc::_exit(1);
        }
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null < 0 || libc::dup2(null, 0) < 0 || libc::dup2(null, 1) < 0 {
            libc::_exit(1);
        }
        if null > 1 {
            libc::close(null);
        }
    }
    // At once: tools tell node 0 from its nodes by the name.
    name_node(k);
    Ok(None)
}

/// The rest of [`run`] in a forked node process `k`: node 0's endpoint
/// (`node0`, this process's copy of it) is left alone, the variables an
/// exec'd node finds are set (its code, and its boxes, may read them),
/// and the node joins the run on a mapping of its own.
fn as_forked_node<T>(
    k: u32,
    node0: Arc<ShmTransport>,
    env: &[(&str, &str)],
    part: impl FnOnce(&Arc<ShmTransport>) -> (T, bool),
) -> Result<Ran<T>, SetupError> {
    let fd = node0.segment().fd();
    // Node 0's endpoint is node 0's: dropping this copy would close the
    // descriptor the node maps below. Its mapping stays, unused.
    std::mem::forget(node0);
    // SAFETY: the process has one thread (the fork copied only this one).
    unsafe {
        std::env::set_var(NODE_VAR, k.to_string());
        std::env::set_var(FD_VAR, fd.to_string());
        std::env::set_var(INCARNATION_VAR, "0");
        for (a, b) in env {
            std::env::set_var(a, b);
        }
    }
    let t = Arc::new(attach_as_node(k, fd).map_err(SetupError::Join)?);
    let (output, _) = part(&t);
    Ok(Ran {
        output,
        transport: t,
        ended: Vec::new(),
    })
}

/// Names the calling thread (in a node process, its main thread, whose
/// name `ps` and `/proc/PID/comm` show) `snet-node-K`.
fn name_node(k: u32) {
    if let Ok(name) = std::ffi::CString::new(format!("snet-node-{k}")) {
        // SAFETY: a NUL-terminated name (the kernel keeps 15 bytes of it).
        unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
    }
}

/// Kills and reaps forked node processes (node 0's set-up failed).
fn kill_and_reap(forked: &[(u32, u32)]) {
    for &(_, pid) in forked {
        // SAFETY: kill(2) on a child we forked and have not reaped.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        reap(pid);
    }
}

/// How a node process ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Ended {
    /// The node the process ran.
    pub node: u32,
    /// Its exit status, or minus the signal that killed it.
    pub status: i32,
    /// The CPU time (user and system) it used.
    pub cpu: Duration,
    /// It ended with status 0 before its transport closed: it left the
    /// run before the run's end (a failure, like a nonzero status).
    pub early: bool,
}

impl Ended {
    /// Whether the node ended as a node of a finished run does.
    pub fn clean(&self) -> bool {
        self.status == 0 && !self.early
    }

    /// How it ended, in words (`exited with status 3`, `killed by
    /// signal 9 (Killed)`, `exited with status 0 before its run ended`).
    pub fn describe(&self) -> String {
        crate::segment::describe_status(self.status)
    }
}

/// The node processes node 0 started, and the thread that starts
/// replacements.
struct Nodes {
    /// By node: the pid of its current process.
    pids: Arc<Mutex<Vec<(u32, u32)>>>,
    /// Every process's end, with its pid (a replaced incarnation's too).
    ended: mpsc::Receiver<(u32, Ended)>,
    /// The replacement thread: requests, and the thread to join.
    launcher: Option<(mpsc::Sender<Request>, std::thread::JoinHandle<()>)>,
}

/// A request to the replacement thread: start node `k` as incarnation
/// `gen` and answer; or end (`None`).
type Request = Option<(u32, u32, mpsc::Sender<io::Result<()>>)>;

/// How node processes are started: everything a start needs, owned, so
/// that the replacement thread can start a node again.
struct Starter {
    exe: std::path::PathBuf,
    args: Vec<std::ffi::OsString>,
    env: Vec<(String, String)>,
    fd: RawFd,
    parent: libc::pid_t,
    t: Arc<ShmTransport>,
    tx: mpsc::Sender<(u32, Ended)>,
}

impl Starter {
    /// Starts node `k`'s process, incarnation `gen` (its number in
    /// [`INCARNATION_VAR`]), and the thread that waits for its end; the
    /// process's pid.
    fn start(&self, k: u32, gen: u32) -> io::Result<u32> {
        let (fd, parent) = (self.fd, self.parent);
        let mut cmd = Command::new(&self.exe);
        cmd.args(&self.args)
            .env(NODE_VAR, k.to_string())
            .env(FD_VAR, fd.to_string())
            .env(INCARNATION_VAR, gen.to_string())
            .envs(self.env.iter().map(|(a, b)| (a, b)))
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
        let child = cmd.spawn().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot start node {k} ({}): {e}", self.exe.display()),
            )
        })?;
        let pid = child.id();
        self.watch(k, pid)?;
        Ok(pid)
    }

    /// Records node `k`'s process `pid` in the segment and starts the
    /// thread that waits for its end.
    fn watch(&self, k: u32, pid: u32) -> io::Result<()> {
        self.t.segment().set_pid(k, pid);
        let tx = self.tx.clone();
        let t = self.t.clone();
        std::thread::Builder::new()
            .name(format!("snet-shm-watch-{k}"))
            .spawn(move || {
                let (status, cpu) = reap(pid);
                let seg = t.segment();
                // A node closes its transport (CLOSED) before it ends
                // normally; status 0 without that is an early end.
                let early = status == 0 && seg.state(k).0 != state::CLOSED;
                if status == 0 && !early {
                    seg.set_state(k, state::EXITED, 0);
                } else {
                    seg.set_state(k, state::DEAD, status);
                }
                let _ = tx.send((
                    pid,
                    Ended {
                        node: k,
                        status,
                        cpu,
                        early,
                    },
                ));
            })?;
        Ok(())
    }
}

impl Nodes {
    /// Starts nodes 1..N of `t`'s segment as copies of this process, with
    /// the environment variables `env` set in every node process besides
    /// [`NODE_VAR`] and [`FD_VAR`]. Call it from the thread that lives as
    /// long as the run (see the module docs).
    /// `forked`: the nodes already started by fork, with their pids.
    fn start_with_env(
        t: &Arc<ShmTransport>,
        env: &[(&str, &str)],
        forked: &[(u32, u32)],
    ) -> io::Result<Nodes> {
        let exe = std::env::current_exe()?;
        let args: Vec<_> = std::env::args_os().skip(1).collect();
        Nodes::start_command(t, &exe, &args, env, forked)
    }

    /// As `start_with_env`, with the node processes started as
    /// `exe args...` instead of copies of this process (an interpreter's
    /// program whose nodes run a module of its own: the Python package).
    /// Also starts the thread that starts replacements
    /// ([`ShmTransport::on_replace`]): a node process dies with the
    /// thread that started it, and this one lives until [`Nodes::wait`]
    /// has seen every node end.
    fn start_command(
        t: &Arc<ShmTransport>,
        exe: &std::path::Path,
        args: &[std::ffi::OsString],
        env: &[(&str, &str)],
        forked: &[(u32, u32)],
    ) -> io::Result<Nodes> {
        let (tx, ended) = mpsc::channel();
        let starter = Starter {
            exe: exe.to_path_buf(),
            args: args.to_vec(),
            env: env
                .iter()
                .map(|&(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            fd: t.segment().fd(),
            // SAFETY: getpid has no preconditions.
            parent: unsafe { libc::getpid() },
            t: t.clone(),
            tx,
        };
        let mut nodes = Nodes {
            pids: Arc::new(Mutex::new(Vec::new())),
            ended,
            launcher: None,
        };
        // Forked nodes are running already (killed with the rest if a
        // start fails); each is watched from now on (it cannot end
        // unnoticed: unreaped, it waits for its watcher).
        lock(&nodes.pids).extend_from_slice(forked);
        for k in 1..t.segment().geometry().nodes {
            let started = match forked.iter().find(|f| f.0 == k) {
                Some(&(_, pid)) => starter.watch(k, pid),
                None => starter
                    .start(k, 0)
                    .map(|pid| lock(&nodes.pids).push((k, pid))),
            };
            match started {
                Ok(()) => {}
                Err(e) => {
                    nodes.kill_all();
                    return Err(e);
                }
            }
        }
        let (req_tx, req_rx) = mpsc::channel::<Request>();
        let pids = nodes.pids.clone();
        let thread = std::thread::Builder::new()
            .name("snet-shm-launcher".into())
            .spawn(move || {
                while let Ok(Some((k, gen, answer))) = req_rx.recv() {
                    let r = starter.start(k, gen).map(|pid| {
                        if let Some(p) = lock(&pids).iter_mut().find(|p| p.0 == k) {
                            p.1 = pid;
                        }
                    });
                    let _ = answer.send(r);
                }
            });
        let thread = match thread {
            Ok(h) => h,
            Err(e) => {
                nodes.kill_all();
                return Err(e);
            }
        };
        let requests = Mutex::new(req_tx.clone());
        t.on_replace(Box::new(move |k, gen| {
            let (answer, answered) = mpsc::channel();
            let sent = lock(&requests).send(Some((k, gen, answer)));
            sent.map_err(|_| io::Error::other("the run is over"))?;
            answered
                .recv()
                .map_err(|_| io::Error::other("the launcher thread is gone"))?
        }));
        nodes.launcher = Some((req_tx, thread));
        Ok(nodes)
    }

    /// Waits until every node's current process has ended; a process
    /// still running `grace` from now is killed. Returns how each ended,
    /// by node (a replaced incarnation's end is not the node's).
    fn wait(mut self, grace: Duration) -> Vec<Ended> {
        let deadline = Instant::now() + grace;
        let mut ended: Vec<Ended> = Vec::new();
        let mut killed = false;
        let current = |pid: u32, node: u32| lock(&self.pids).contains(&(node, pid));
        let want = lock(&self.pids).len();
        let mut stale = Vec::new();
        while ended.len() < want {
            // Ends that came before their node was replaced are not its.
            stale.retain(|&(pid, e): &(u32, Ended)| {
                if current(pid, e.node) {
                    ended.push(e);
                    false
                } else {
                    true
                }
            });
            if ended.len() >= want {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self
                .ended
                .recv_timeout(if killed { Duration::from_secs(5) } else { left })
            {
                Ok((pid, e)) if current(pid, e.node) => ended.push(e),
                Ok(other) => stale.push(other),
                Err(mpsc::RecvTimeoutError::Timeout) if !killed => {
                    self.kill_all();
                    killed = true;
                }
                Err(_) => break,
            }
        }
        // Every node has ended: the replacement thread may end too.
        if let Some((tx, thread)) = self.launcher.take() {
            let _ = tx.send(None);
            let _ = thread.join();
        }
        ended.sort_unstable_by_key(|e| e.node);
        ended
    }

    fn kill_all(&self) {
        for &(_, pid) in lock(&self.pids).iter() {
            // SAFETY: kill(2) on a child we started and have not reaped
            // (its watcher reaps it only after it ended).
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Waits for child `pid` to end: its status (exit status, or minus the
/// signal) and the CPU time it used (`wait4(2)`'s resource usage).
fn reap(pid: u32) -> (i32, Duration) {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waiting for our own child, with valid out pointers.
        let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
        if r == pid as libc::pid_t {
            break;
        }
        if r < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        return (-libc::SIGKILL, Duration::ZERO);
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    let cpu = tv(usage.ru_utime) + tv(usage.ru_stime);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        -libc::WTERMSIG(status)
    } else {
        -libc::SIGKILL
    };
    (code, cpu)
}
