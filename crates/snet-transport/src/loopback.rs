//! The loopback transport: every node of a run inside one process.
//!
//! Each node gets an endpoint ([`Loopback::create`]); a message is moved
//! into the receiver's mailbox (the payload is copied once, as a
//! transport between processes would). Flow control is a window of
//! [`WINDOW`] messages per sender at each receiver: a sender whose window is
//! full waits until the receiver takes one. The mailbox is one FIFO, so
//! order holds per pair of nodes (stronger than the per-channel contract).
//! Dropping an endpoint without [`Transport::close`] (a node thread that
//! panicked) or calling [`Loopback::kill`] marks the node dead: sends to it
//! fail and every other node's `recv` reports it. [`Transport::replace`]
//! gives a dead node a new endpoint (a new *incarnation*: the old one's
//! endpoint stays closed) and hands it to the function set with
//! [`Loopback::on_replace`], which starts the node again.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::{Channel, FieldBytes, Gone, Payload, Rank, Received, Transport, TransportError};

/// Messages one node may have in flight to another.
pub const WINDOW: usize = 64;

struct Mailbox {
    queue: VecDeque<Received>,
    /// Per sender: messages in `queue`.
    inflight: Vec<usize>,
    /// Dead nodes this mailbox's owner has not been told about yet.
    unreported: Vec<Rank>,
}

struct Hub {
    boxes: Vec<(Mutex<Mailbox>, Condvar)>,
    /// Per node: 0 alive, 1 closed, 2 dead, and its incarnation.
    state: Mutex<Vec<(u8, u32)>>,
    window: usize,
    /// Where [`Transport::replace`] hands a replacement's endpoint.
    spawn: Mutex<Option<std::sync::mpsc::Sender<Loopback>>>,
}

/// One node's endpoint of an in-process run.
pub struct Loopback {
    me: Rank,
    /// Its incarnation (0, then one more per replacement).
    gen: u32,
    hub: Arc<Hub>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Loopback {
    /// Endpoints for `nodes` nodes, node `i` at index `i`.
    pub fn create(nodes: u32) -> Vec<Loopback> {
        Loopback::with_window(nodes, WINDOW)
    }

    /// As [`Loopback::create`], with another flow-control window (tests).
    pub fn with_window(nodes: u32, window: usize) -> Vec<Loopback> {
        let n = nodes.max(1) as usize;
        let hub = Arc::new(Hub {
            boxes: (0..n)
                .map(|_| {
                    (
                        Mutex::new(Mailbox {
                            queue: VecDeque::new(),
                            inflight: vec![0; n],
                            unreported: Vec::new(),
                        }),
                        Condvar::new(),
                    )
                })
                .collect(),
            state: Mutex::new(vec![(0, 0); n]),
            window: window.max(1),
            spawn: Mutex::new(None),
        });
        Rank::all(nodes.max(1))
            .map(|me| Loopback {
                me,
                gen: 0,
                hub: hub.clone(),
            })
            .collect()
    }

    /// Replacements made by [`Transport::replace`] go to `to` (the code
    /// that runs the nodes starts each on its own thread).
    pub fn on_replace(&self, to: std::sync::mpsc::Sender<Loopback>) {
        *lock(&self.hub.spawn) = Some(to);
    }

    /// Marks this node dead, as if its process had been killed (tests).
    pub fn kill(&self) {
        self.leave(2);
    }

    fn leave(&self, how: u8) {
        {
            let mut st = lock(&self.hub.state);
            if st[self.me.index()] != (0, self.gen) {
                return;
            }
            st[self.me.index()].0 = how;
        }
        for (i, (m, cv)) in self.hub.boxes.iter().enumerate() {
            let mut mb = lock(m);
            if how == 2 && i != self.me.index() {
                mb.unreported.push(self.me);
            }
            drop(mb);
            cv.notify_all();
        }
    }

    fn peer_state(&self, node: Rank) -> u8 {
        lock(&self.hub.state)[node.index()].0
    }

    /// This endpoint's own state: an old incarnation's is closed.
    fn own_state(&self) -> u8 {
        let (s, gen) = lock(&self.hub.state)[self.me.index()];
        if gen == self.gen {
            s
        } else {
            1
        }
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        // An endpoint dropped without `close` is a node that died.
        self.leave(2);
    }
}

impl Transport for Loopback {
    fn node(&self) -> Rank {
        self.me
    }

    fn nodes(&self) -> u32 {
        self.hub.boxes.len() as u32
    }

    fn send_to_peer(
        &self,
        to: Rank,
        channel: Channel,
        header: &[u8],
        payload: Payload,
    ) -> Result<(), TransportError> {
        let (m, cv) = &self.hub.boxes[to.index()];
        let mut mb = lock(m);
        loop {
            match self.peer_state(to) {
                0 => {}
                1 => return Err(TransportError::Closed),
                _ => {
                    return Err(TransportError::PeerGone {
                        node: to,
                        why: Gone::EndpointDropped,
                    })
                }
            }
            if self.own_state() != 0 {
                return Err(TransportError::Closed);
            }
            if mb.inflight[self.me.index()] < self.hub.window {
                break;
            }
            mb = cv.wait(mb).unwrap_or_else(|e| e.into_inner());
        }
        mb.inflight[self.me.index()] += 1;
        mb.queue.push_back(Received {
            from: self.me,
            channel,
            header: header.into(),
            payload: FieldBytes::copy_from(payload.bytes()),
        });
        drop(mb);
        cv.notify_all();
        Ok(())
    }

    fn recv(&self, timeout: Duration) -> Result<Option<Received>, TransportError> {
        let (m, cv) = &self.hub.boxes[self.me.index()];
        let mut mb = lock(m);
        let deadline = std::time::Instant::now() + timeout;
        loop {
            // An old incarnation takes nothing from its replacement.
            if lock(&self.hub.state)[self.me.index()].1 != self.gen {
                return Err(TransportError::Closed);
            }
            if let Some(node) = mb.unreported.pop() {
                return Err(TransportError::PeerGone {
                    node,
                    why: Gone::EndpointDropped,
                });
            }
            if let Some(r) = mb.queue.pop_front() {
                mb.inflight[r.from.index()] -= 1;
                drop(mb);
                // Wake senders waiting for window space.
                cv.notify_all();
                return Ok(Some(r));
            }
            if self.own_state() != 0 {
                return Err(TransportError::Closed);
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            mb = cv
                .wait_timeout(mb, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    fn close(&self) {
        self.leave(1);
    }

    fn buffered(&self, to: Rank) -> Option<usize> {
        let (m, _) = self.hub.boxes.get(to.index())?;
        Some(lock(m).inflight[self.me.index()])
    }

    fn window(&self) -> Option<usize> {
        Some(self.hub.window)
    }

    fn name(&self) -> &str {
        "loopback"
    }

    fn replace(&self, node: Rank) -> Result<bool, TransportError> {
        let spawn = lock(&self.hub.spawn).clone();
        let Some(spawn) = spawn else {
            return Ok(false);
        };
        let k = node.index();
        let gen = {
            let mut st = lock(&self.hub.state);
            match st.get_mut(k) {
                Some(s) if s.0 == 2 => {
                    *s = (0, s.1 + 1);
                    s.1
                }
                _ => return Ok(false),
            }
        };
        // What was sent to the old incarnation is lost with it, and what
        // it sent that was not received yet is dropped.
        for (i, (m, cv)) in self.hub.boxes.iter().enumerate() {
            let mut mb = lock(m);
            if i == k {
                mb.queue.clear();
                mb.inflight.iter_mut().for_each(|n| *n = 0);
                mb.unreported.clear();
            } else {
                mb.queue.retain(|r| r.from != node);
                mb.inflight[k] = 0;
                mb.unreported.retain(|&n| n != node);
            }
            drop(mb);
            cv.notify_all();
        }
        let ep = Loopback {
            me: node,
            gen,
            hub: self.hub.clone(),
        };
        Ok(spawn.send(ep).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_passes_the_transport_conformance_suite() {
        for nodes in [2, 3, 4] {
            crate::conformance::run_in_threads(
                &|| Loopback::with_window(nodes, 8),
                &|t: &Loopback| t.kill(),
            )
            .unwrap_or_else(|e| panic!("{nodes} nodes: {e}"));
        }
    }

    #[test]
    fn send_refuses_this_node_and_nodes_the_run_lacks() {
        let ts = Loopback::create(2);
        for to in [1, 2, 7].map(Rank) {
            let e = ts[1]
                .send(to, Channel::Records, b"h", Payload::none())
                .unwrap_err();
            assert_eq!(e, TransportError::NoRoute { from: Rank(1), to });
            assert_eq!(e.to_string(), format!("node 1 cannot send to node {to}"));
        }
        ts[1]
            .send(Rank(0), Channel::Records, b"h", Payload::none())
            .unwrap();
    }
}
