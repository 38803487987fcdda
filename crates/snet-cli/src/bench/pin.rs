//! Pinning a thread to a CPU, for the ping-pongs (`snet pingpong` and
//! the `ringpong` example, which includes this file).

/// Pins the calling thread to CPU `k` (mod the CPUs the process could use
/// when it first pinned), as MPI benchmarks bind their ranks: a ping-pong
/// of two spinning threads or processes that the scheduler happens to start
/// on one CPU would measure time slices, not the transport. Best effort: an
/// error leaves the thread unpinned. The CPU list is read once: a thread
/// started by a pinned one inherits its single CPU, and must still be able
/// to pin itself elsewhere.
pub fn pin(k: u32) {
    static CPUS: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();
    if std::env::var_os("SNET_PINGPONG_PIN").is_some_and(|v| v == "0") {
        return;
    }
    let cpus = CPUS.get_or_init(|| {
        // SAFETY: a zeroed cpu_set_t is empty; the call fills it.
        unsafe {
            let mut allowed: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut allowed) != 0
            {
                return Vec::new();
            }
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &allowed))
                .collect()
        }
    });
    if cpus.len() < 2 {
        return;
    }
    // SAFETY: a zeroed cpu_set_t is empty; the calls fill and read it.
    unsafe {
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpus[k as usize % cpus.len()], &mut one);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one);
    }
}
