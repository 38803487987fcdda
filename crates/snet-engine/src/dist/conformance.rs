//! The transport conformance suite: what every backend must do
//! ([`super::transport`]'s contract).
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
//! | `payloads` | empty header and payload, small, 1 MiB and 64 MiB payloads arrive intact |
//! | `flow-control` | a receiver that does not read holds its senders back (never more than the window buffered), and then gets everything |
//! | `shutdown` | messages sent right before `close` are all delivered |
//! | `peer-dies` | the last node dies: the others' `recv` report it (`PeerGone` naming it), never hang |

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::transport::{Channel, Payload, Transport, TransportError};

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

fn recv(t: &dyn Transport) -> Result<super::Received, String> {
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
    t.send(to, ch, h, Payload::owned(p.to_vec()))
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
    let me = t.node();
    if me == 0 {
        for _ in early + 1..t.nodes() {
            let m = recv(t)?;
            if m.header != [0xB0, tag] {
                return Err(format!("barrier {tag}: unexpected message {:?}", m.header));
            }
        }
        for n in 1..t.nodes() {
            send(t, n, Channel::Control, &[0xB1, tag], &[])?;
        }
    } else {
        send(t, 0, Channel::Control, &[0xB0, tag], &[])?;
        let m = recv(t)?;
        if m.header != [0xB1, tag] {
            return Err(format!("barrier {tag}: unexpected message {:?}", m.header));
        }
    }
    Ok(())
}

/// Runs case `name` on this node. `die` makes this node die abruptly (as if
/// killed); only the `peer-dies` case calls it, on the last node.
pub fn run_case(name: &str, t: &dyn Transport, die: &dyn Fn()) -> Result<(), String> {
    let me = t.node();
    let n = t.nodes();
    if n < 2 {
        return Err("the transport suite needs at least two nodes".into());
    }
    match name {
        "ordering" => {
            const PER: u32 = 300;
            const CONNS: u32 = 37;
            let total = (n - 1) * PER * 3;
            let mut got = 0;
            let mut early = 0;
            let mut seen = Seen::new();
            let mut conns = HashMap::new();
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
                // Receive what has arrived, so that bounded windows cannot
                // deadlock nodes that all send to each other.
                while let Some(m) = t
                    .recv(Duration::ZERO)
                    .map_err(|e| format!("node {me}: recv failed: {e}"))?
                {
                    if m.header == [0xB0, 0] {
                        early += 1; // a node that finished early arrived at the barrier
                        continue;
                    }
                    check_ordering(&m, &mut seen, &mut conns)?;
                    got += 1;
                }
            }
            while got < total {
                let m = recv(t)?;
                if m.header == [0xB0, 0] {
                    early += 1;
                    continue;
                }
                check_ordering(&m, &mut seen, &mut conns)?;
                got += 1;
            }
            barrier_after(t, 0, early)
        }
        "payloads" => {
            let sizes = [0usize, 1, 100, 1 << 20, 64 << 20];
            if me == 0 {
                for (i, &s) in sizes.iter().enumerate() {
                    let h: Vec<u8> = if i == 0 { Vec::new() } else { vec![i as u8; i] };
                    send(t, 1, Channel::Field, &h, &pattern(s, i as u8))?;
                }
            } else if me == 1 {
                for (i, &s) in sizes.iter().enumerate() {
                    let m = recv(t)?;
                    let want_h: Vec<u8> = if i == 0 { Vec::new() } else { vec![i as u8; i] };
                    if m.from != 0 || m.channel != Channel::Field || m.header != want_h {
                        return Err(format!("payload {i}: wrong header/sender/channel"));
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
            let k = t.window().map_or(1000, |w| w * 10);
            if me == 0 {
                for i in 0..k {
                    send(t, 1, Channel::Records, &(i as u64).to_le_bytes(), &[0; 100])?;
                    if let (Some(b), Some(w)) = (t.buffered(1), t.window()) {
                        if b > w {
                            return Err(format!("{b} messages buffered at node 1, window {w}"));
                        }
                    }
                }
            } else if me == 1 {
                // Read nothing for a while: node 0 must be held back.
                std::thread::sleep(Duration::from_millis(200));
                for i in 0..k {
                    let m = recv(t)?;
                    if m.header != (i as u64).to_le_bytes() {
                        return Err(format!("flow-control: message {i} out of order"));
                    }
                }
            }
            barrier(t, 2)
        }
        "shutdown" => {
            if me == 0 {
                for i in 0..100u32 {
                    send(t, 1, Channel::Records, &i.to_le_bytes(), &[])?;
                }
                t.close();
            } else if me == 1 {
                for i in 0..100u32 {
                    let m = recv(t)?;
                    if m.header != i.to_le_bytes() {
                        return Err(format!("shutdown: message {i} lost or out of order"));
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
                    Err(TransportError::PeerGone { node, .. }) if node == victim => return Ok(()),
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
    m: &super::Received,
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
    if from != m.from || ch != m.channel as u8 {
        return Err(format!(
            "ordering: message claims {from}/{ch}, came from {}/{:?}",
            m.from, m.channel
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
    for case in CASES {
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
