//! The transport conformance suite: what every backend must do
//! (the contract at the top of [`crate`]).
//!
//! The suite is SPMD, like a run: every node of a test run calls
//! [`run_case`] with its own endpoint, so the same cases run on backends
//! whose endpoints live in one process (loopback: one thread per node, see
//! [`run_in_threads`]) and on backends whose nodes are processes (MPI, shared
//! memory: each process calls [`run_case`]). Cases need at least two nodes;
//! a case returns `Err` with what went wrong.
//!
//! | case | checks |
//! |---|---|
//! | `ordering` | every node sends to every other on every channel; per (sender, channel) and per connection the order holds, nothing lost or duplicated |
//! | `payloads` | empty header and payload, small, 1 MiB and 64 MiB payloads arrive intact; small and empty messages right behind big ones do not overtake them |
//! | `flow-control` | a receiver that does not read holds its senders back (never more than the window buffered, by the backend's count and by the sender's own count of returned sends while the receiver pauses), and then gets everything |
//! | `shutdown` | messages sent right before `close` are all delivered, a big payload included; `recv` on a closed endpoint reports `Closed` |
//! | `peer-dies` | the last node dies: the others' `recv` report it (`PeerGone` naming it), never hang |

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::{Channel, Payload, Rank, Received, Transport, TransportError};

/// The names of the cases, in the order they should run.
pub const CASES: [&str; 5] = [
    "ordering",
    "payloads",
    "flow-control",
    "shutdown",
    "peer-dies",
];

/// Longest a case waits for a message before it calls the backend hung.
const PATIENCE: Duration = Duration::from_secs(60);

fn recv(t: &dyn Transport) -> Result<Received, String> {
    let start = Instant::now();
    loop {
        match t.recv(Duration::from_millis(100)) {
            Ok(Some(m)) => return Ok(m),
            Ok(None) if start.elapsed() < PATIENCE => continue,
            Ok(None) => return Err(format!("node {}: no message for {PATIENCE:?}", t.node())),
            Err(e) => return Err(format!("node {}: recv failed: {e}", t.node())),
        }
    }
}

fn send(t: &dyn Transport, to: u32, ch: Channel, h: &[u8], p: &[u8]) -> Result<(), String> {
    t.send(Rank(to), ch, h, Payload::owned(p.to_vec()))
        .map_err(|e| format!("node {} -> {to}: send failed: {e}", t.node()))
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// A barrier over the transport: everyone tells node 0, node 0 answers.
fn barrier(t: &dyn Transport, tag: u8) -> Result<(), String> {
    barrier_after(t, tag, 0)
}

/// As [`barrier`], when node 0 already received `early` of the arrivals.
fn barrier_after(t: &dyn Transport, tag: u8, early: u32) -> Result<(), String> {
    let me = t.node().0;
    if me == 0 {
        for _ in early + 1..t.nodes() {
            let m = recv(t)?;
            if m.header[..] != [0xB0, tag] {
                return Err(format!("barrier {tag}: unexpected message {:?}", m.header));
            }
        }
        for n in 1..t.nodes() {
            send(t, n, Channel::Control, &[0xB1, tag], &[])?;
        }
    } else {
        send(t, 0, Channel::Control, &[0xB0, tag], &[])?;
        let m = recv(t)?;
        if m.header[..] != [0xB1, tag] {
            return Err(format!("barrier {tag}: unexpected message {:?}", m.header));
        }
    }
    Ok(())
}

/// Runs case `name` on this node. `die` makes this node die abruptly (as if
/// killed); only the `peer-dies` case calls it, on the last node.
pub fn run_case(name: &str, t: &dyn Transport, die: &dyn Fn()) -> Result<(), String> {
    let me = t.node().0;
    let n = t.nodes();
    if n < 2 {
        return Err("the transport suite needs at least two nodes".into());
    }
    match name {
        "ordering" => {
            const PER: u32 = 300;
            const CONNS: u32 = 37;
            let total = (n - 1) * PER * 3;
            // Receive on a thread of its own, as the input manager does: a
            // node blocked in `send` (its peer's window full) must still
            // take its own input, or two such nodes would wait for each
            // other (the contract only promises that a node which keeps
            // reading is never held up by its own unread input).
            let early = std::thread::scope(|s| {
                let receiver = s.spawn(move || -> Result<u32, String> {
                    let mut got = 0;
                    let mut early = 0;
                    let mut seen = Seen::new();
                    let mut conns = HashMap::new();
                    // The first violation is reported after everything
                    // arrived: a receiver that stopped taking would leave
                    // its senders blocked (window full) and the case hung.
                    let mut first = Ok(());
                    while got < total {
                        let m = match recv(t) {
                            Ok(m) => m,
                            Err(e) => {
                                // Nothing more arrives: release this node's
                                // sender (blocked on a full window, it would
                                // hold the report back forever).
                                t.close();
                                return Err(e);
                            }
                        };
                        if m.header[..] == [0xB0, 0] {
                            early += 1; // a node that finished early arrived at the barrier
                            continue;
                        }
                        if first.is_ok() {
                            first = check_ordering(&m, &mut seen, &mut conns);
                        }
                        got += 1;
                    }
                    first.map(|()| early)
                });
                let sent = (|| {
                    for k in 0..PER {
                        for to in (0..n).filter(|&x| x != me) {
                            for ch in Channel::ALL {
                                let conn = (k * 7 + to) % CONNS;
                                let mut h = Vec::new();
                                h.extend_from_slice(&me.to_le_bytes());
                                h.extend_from_slice(&k.to_le_bytes());
                                h.extend_from_slice(&conn.to_le_bytes());
                                h.push(ch as u8);
                                let p = if ch == Channel::Field {
                                    pattern((k % 50) as usize, k as u8)
                                } else {
                                    Vec::new()
                                };
                                send(t, to, ch, &h, &p)?;
                            }
                        }
                    }
                    Ok::<(), String>(())
                })();
                let early = receiver
                    .join()
                    .unwrap_or_else(|_| Err("the receiver panicked".into()));
                // The receiver's failure first: the sender's may only be
                // the close that released it.
                early.and_then(|early| sent.map(|()| early))
            })?;
            barrier_after(t, 0, early)
        }
        "payloads" => {
            // The messages after the big ones arrive (header and all) while
            // the big payload before them may still be arriving: they must
            // not overtake it.
            let sizes = [0usize, 1, 100, 1 << 20, 64 << 20, 0, 1 << 20, 1, 0];
            if me == 0 {
                for (i, &s) in sizes.iter().enumerate() {
                    let h: Vec<u8> = if i == 0 { Vec::new() } else { vec![i as u8; i] };
                    send(t, 1, Channel::Field, &h, &pattern(s, i as u8))?;
                }
            } else if me == 1 {
                for (i, &s) in sizes.iter().enumerate() {
                    let m = recv(t)?;
                    let want_h: Vec<u8> = if i == 0 { Vec::new() } else { vec![i as u8; i] };
                    if m.from.0 != 0 || m.channel != Channel::Field || m.header[..] != want_h[..] {
                        return Err(format!(
                            "payload {i}: wrong header/sender/channel (header {:?}, {} payload bytes: out of order?)",
                            m.header,
                            m.payload.len()
                        ));
                    }
                    if m.payload != pattern(s, i as u8)
                        || !(m.payload.as_ptr() as usize).is_multiple_of(16)
                    {
                        return Err(format!("payload {i} ({s} bytes) arrived damaged"));
                    }
                }
            }
            barrier(t, 1)
        }
        "flow-control" => {
            let window = t.window();
            let k = window.map_or(1000, |w| w * 10);
            // Node 1 pauses twice, having taken 0 and then `window`
            // messages; it tells node 0 when a pause has lasted long enough
            // for node 0 to use all the credit it has ([0xC0, p]) and before
            // it reads again ([0xC1, p]). In between, node 0's sends that
            // returned must stay within what node 1 took plus the window:
            // checked on node 0's own count, not on `buffered` (which is the
            // backend's own bookkeeping, and wrong with it).
            let taken_at_pause = |p: u8| usize::from(p) * window.unwrap_or(0);
            if me == 0 {
                let sent = AtomicUsize::new(0);
                let early = std::thread::scope(|s| {
                    let sender = s.spawn(|| -> Result<(), String> {
                        for i in 0..k {
                            send(t, 1, Channel::Records, &(i as u64).to_le_bytes(), &[0; 100])?;
                            sent.fetch_add(1, Ordering::SeqCst);
                            if let (Some(b), Some(w)) = (t.buffered(Rank(1)), window) {
                                if b > w {
                                    return Err(format!(
                                        "{b} messages buffered at node 1, window {w}"
                                    ));
                                }
                            }
                        }
                        Ok(())
                    });
                    let watched = (|| -> Result<u32, String> {
                        let mut early = 0;
                        // The next message from node 1, counting barrier
                        // arrivals of nodes that have nothing to do here.
                        let mut next = |wait: bool| -> Result<Option<Vec<u8>>, String> {
                            loop {
                                let m = if wait {
                                    Some(recv(t)?)
                                } else {
                                    t.recv(Duration::ZERO)
                                        .map_err(|e| format!("node 0: recv failed: {e}"))?
                                };
                                match m {
                                    Some(m) if m.header[..] == [0xB0, 2] => early += 1,
                                    Some(m) if m.from.0 == 1 => return Ok(Some(m.header.to_vec())),
                                    Some(m) => {
                                        return Err(format!(
                                            "flow-control: unexpected message {:?} from {}",
                                            m.header, m.from.0
                                        ))
                                    }
                                    None => return Ok(None),
                                }
                            }
                        };
                        let mut first = Ok(());
                        for p in 0..2u8 {
                            let h = next(true)?;
                            if h.as_deref() != Some(&[0xC0, p][..]) {
                                return Err(format!("flow-control: expected pause {p}, got {h:?}"));
                            }
                            let n = sent.load(Ordering::SeqCst);
                            // Node 1 announces the end of the pause before it
                            // reads again: if that is here already, `n` may
                            // include sends it allowed since (no verdict).
                            let resumed = match next(false)? {
                                None => false,
                                Some(h) if h == [0xC1, p] => true,
                                Some(h) => {
                                    return Err(format!(
                                        "flow-control: unexpected {h:?} in pause {p}"
                                    ))
                                }
                            };
                            if let Some(w) = window {
                                let bound = taken_at_pause(p) + w;
                                if !resumed && n > bound && first.is_ok() {
                                    first = Err(format!(
                                        "{n} sends to node 1 returned while it had taken {} and was not reading (window {w})",
                                        taken_at_pause(p)
                                    ));
                                }
                            }
                            if !resumed {
                                let h = next(true)?;
                                if h.as_deref() != Some(&[0xC1, p][..]) {
                                    return Err(format!(
                                        "flow-control: expected the end of pause {p}, got {h:?}"
                                    ));
                                }
                            }
                        }
                        first.map(|()| early)
                    })();
                    let sent = sender
                        .join()
                        .unwrap_or_else(|_| Err("the sender panicked".into()));
                    sent.and(watched)
                })?;
                return barrier_after(t, 2, early);
            } else if me == 1 {
                let mut first = Ok(());
                let mut take = |from: usize, to: usize| -> Result<(), String> {
                    for i in from..to {
                        let m = recv(t)?;
                        if m.header[..] != (i as u64).to_le_bytes() && first.is_ok() {
                            first = Err(format!("flow-control: message {i} out of order"));
                        }
                    }
                    Ok(())
                };
                let mut taken = 0;
                for p in 0..2u8 {
                    let upto = taken_at_pause(p).min(k);
                    take(taken, upto)?;
                    taken = upto;
                    // Read nothing for a while: node 0 must be held back.
                    std::thread::sleep(Duration::from_millis(200));
                    send(t, 0, Channel::Control, &[0xC0, p], &[])?;
                    std::thread::sleep(Duration::from_millis(300));
                    send(t, 0, Channel::Control, &[0xC1, p], &[])?;
                }
                take(taken, k)?;
                first?;
            }
            barrier(t, 2)
        }
        "shutdown" => {
            // The last message carries a big payload: still on its way when
            // `close` is called.
            const BIG: usize = 16 << 20;
            if me == 0 {
                for i in 0..100u32 {
                    send(t, 1, Channel::Records, &i.to_le_bytes(), &[])?;
                }
                send(
                    t,
                    1,
                    Channel::Field,
                    &100u32.to_le_bytes(),
                    &pattern(BIG, 9),
                )?;
                t.close();
                // A closed endpoint says so (nothing was sent to node 0
                // in this case).
                match t.recv(Duration::from_millis(100)) {
                    Err(TransportError::Closed) => {}
                    Ok(None) => return Err("recv after close: no Closed (timed out)".into()),
                    Ok(Some(m)) => {
                        return Err(format!("recv after close: a message {:?}", m.header))
                    }
                    Err(e) => return Err(format!("recv after close: {e}, not Closed")),
                }
            } else if me == 1 {
                for i in 0..=100u32 {
                    let m = recv(t)?;
                    if m.header[..] != i.to_le_bytes() {
                        return Err(format!("shutdown: message {i} lost or out of order"));
                    }
                    if i == 100 && m.payload != pattern(BIG, 9) {
                        return Err("shutdown: the last message's payload arrived damaged".into());
                    }
                }
            }
            Ok(())
        }
        "peer-dies" => {
            let victim = n - 1;
            if me == victim {
                die();
                return Ok(());
            }
            let start = Instant::now();
            loop {
                match t.recv(Duration::from_millis(100)) {
                    Err(TransportError::PeerGone { node, .. }) if node == Rank(victim) => {
                        return Ok(())
                    }
                    Err(e) => {
                        return Err(format!("node {me}: expected PeerGone({victim}), got {e}"))
                    }
                    Ok(_) if start.elapsed() < PATIENCE => continue,
                    Ok(_) => return Err(format!("node {me}: node {victim} died unnoticed")),
                }
            }
        }
        other => Err(format!("no case {other}")),
    }
}

type Seen = HashMap<(u32, u8), u32>;

fn check_ordering(
    m: &Received,
    seen: &mut Seen,
    conns: &mut HashMap<(u32, u8, u32), u32>,
) -> Result<(), String> {
    if m.header.len() != 13 {
        return Err(format!("ordering: bad header {:?}", m.header));
    }
    let from = u32::from_le_bytes(m.header[0..4].try_into().expect("4"));
    let k = u32::from_le_bytes(m.header[4..8].try_into().expect("4"));
    let conn = u32::from_le_bytes(m.header[8..12].try_into().expect("4"));
    let ch = m.header[12];
    if from != m.from.0 || ch != m.channel as u8 {
        return Err(format!(
            "ordering: message claims {from}/{ch}, came from {}/{:?}",
            m.from.0, m.channel
        ));
    }
    let next = seen.entry((from, ch)).or_insert(0);
    if k != *next {
        return Err(format!(
            "ordering: from node {from} channel {ch}: got #{k}, expected #{next}"
        ));
    }
    *next += 1;
    let c = conns.entry((from, ch, conn)).or_insert(0);
    if k < *c {
        return Err(format!("ordering: connection {conn} went backwards"));
    }
    *c = k;
    if ch == Channel::Field as u8 && m.payload != pattern((k % 50) as usize, k as u8) {
        return Err(format!("ordering: payload of #{k} from {from} damaged"));
    }
    Ok(())
}

/// Runs every case on endpoints that live in this process, one thread per
/// node. `make` creates a fresh set of endpoints for a case; `kill` makes
/// an endpoint die abruptly.
pub fn run_in_threads<T: Transport>(
    make: &dyn Fn() -> Vec<T>,
    kill: &(dyn Fn(&T) + Sync),
) -> Result<(), String> {
    run_in_threads_cases(&CASES, make, kill)
}

/// As [`run_in_threads`], for the named cases only.
pub fn run_in_threads_cases<T: Transport>(
    cases: &[&str],
    make: &dyn Fn() -> Vec<T>,
    kill: &(dyn Fn(&T) + Sync),
) -> Result<(), String> {
    for &case in cases {
        let endpoints = make();
        let results: Vec<Result<(), String>> = std::thread::scope(|s| {
            let hs: Vec<_> = endpoints
                .iter()
                .map(|t| s.spawn(move || run_case(case, t, &|| kill(t))))
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err("a node panicked".into())))
                .collect()
        });
        for (i, r) in results.into_iter().enumerate() {
            r.map_err(|e| format!("case {case}, node {i}: {e}"))?;
        }
        for t in &endpoints {
            t.close();
        }
    }
    Ok(())
}
