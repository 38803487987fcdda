//! One transport wrapper for tests that inject faults or watch the
//! traffic: [`Hooked`] passes everything to the transport it wraps and
//! calls its [`Hooks`] around each message sent and received. The fault
//! tests of the runner (`SNET_TEST_FAULT`), the engine's custody tests (a
//! node killed at its `n`th message) and its zero-copy test (the payload
//! pointers seen) are hooks of this one wrapper. Without hooks nothing
//! wraps a transport: a run pays nothing for it.

use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::{Channel, Payload, Rank, Received, Transport, TransportError};

/// What a [`Hooked`] transport does besides passing messages on. Every
/// method has a default that does nothing. `inner` is the wrapped
/// transport (a test may kill it).
pub trait Hooks<I: ?Sized>: Send + Sync {
    /// Before the `n`th message sent (from 0): another header to send
    /// instead of `header`, if any.
    fn sending(
        &self,
        _inner: &I,
        _n: u64,
        _to: Rank,
        _channel: Channel,
        _header: &[u8],
        _payload: &Payload,
    ) -> Option<Vec<u8>> {
        None
    }

    /// After the `n`th message received (from 0), before it is handed
    /// on: `Err` is returned instead of the message.
    fn received(&self, _inner: &I, _n: u64, _m: &Received) -> Result<(), TransportError> {
        Ok(())
    }

    /// The region to report as [`Transport::shared_region`] instead of
    /// the wrapped transport's, if any (a test's memory standing for a
    /// shared arena).
    fn shared_region(&self, _inner: &I) -> Option<std::ops::Range<usize>> {
        None
    }
}

/// A transport (`T`: the transport itself in a box, or a reference to
/// it) with [`Hooks`] around its messages.
pub struct Hooked<T, H> {
    inner: T,
    hooks: H,
    sent: AtomicU64,
    received: AtomicU64,
}

impl<T, H> Hooked<T, H> {
    /// `inner` with `hooks`.
    pub fn new(inner: T, hooks: H) -> Hooked<T, H> {
        Hooked {
            inner,
            hooks,
            sent: AtomicU64::new(0),
            received: AtomicU64::new(0),
        }
    }

    /// The hooks.
    pub fn hooks(&self) -> &H {
        &self.hooks
    }
}

impl<T, H> Transport for Hooked<T, H>
where
    T: Deref + Send + Sync,
    T::Target: Transport,
    H: Hooks<T::Target>,
{
    fn node(&self) -> Rank {
        self.inner.node()
    }

    fn nodes(&self) -> u32 {
        self.inner.nodes()
    }

    fn send_to_peer(
        &self,
        to: Rank,
        channel: Channel,
        header: &[u8],
        payload: Payload,
    ) -> Result<(), TransportError> {
        let n = self.sent.fetch_add(1, Ordering::Relaxed);
        let other = self
            .hooks
            .sending(&*self.inner, n, to, channel, header, &payload);
        let header = other.as_deref().unwrap_or(header);
        self.inner.send_to_peer(to, channel, header, payload)
    }

    fn recv(&self, timeout: Duration) -> Result<Option<Received>, TransportError> {
        let m = self.inner.recv(timeout)?;
        if let Some(m) = &m {
            let n = self.received.fetch_add(1, Ordering::Relaxed);
            self.hooks.received(&*self.inner, n, m)?;
        }
        Ok(m)
    }

    fn close(&self) {
        self.inner.close()
    }

    fn buffered(&self, to: Rank) -> Option<usize> {
        self.inner.buffered(to)
    }

    fn window(&self) -> Option<usize> {
        self.inner.window()
    }

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn replace(&self, node: Rank) -> Result<bool, TransportError> {
        self.inner.replace(node)
    }

    fn shared_region(&self) -> Option<std::ops::Range<usize>> {
        self.hooks
            .shared_region(&*self.inner)
            .or_else(|| self.inner.shared_region())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Loopback;

    /// Counts what it sees and swaps the second header sent.
    struct Count;

    impl Hooks<Loopback> for Count {
        fn sending(
            &self,
            _: &Loopback,
            n: u64,
            _: Rank,
            _: Channel,
            _: &[u8],
            _: &Payload,
        ) -> Option<Vec<u8>> {
            (n == 1).then(|| b"swapped".to_vec())
        }

        fn received(&self, inner: &Loopback, n: u64, _: &Received) -> Result<(), TransportError> {
            if n == 2 {
                inner.kill();
                return Err(TransportError::Closed);
            }
            Ok(())
        }
    }

    #[test]
    fn hooks_see_each_message_and_may_change_or_stop_it() {
        let mut ts = Loopback::create(2).into_iter();
        let (a, b) = (ts.next().unwrap(), ts.next().unwrap());
        let b = Hooked::new(Box::new(b), Count);
        for h in [b"one".as_slice(), b"two", b"three"] {
            a.send(Rank(1), Channel::Records, h, Payload::none())
                .unwrap();
        }
        let got = |t: &dyn Transport| t.recv(Duration::from_secs(5));
        assert_eq!(&got(&b).unwrap().unwrap().header[..], b"one");
        assert_eq!(&got(&b).unwrap().unwrap().header[..], b"two");
        assert_eq!(got(&b), Err(TransportError::Closed));
        // (The hook killed node 1.)
        let e = a.send(Rank(1), Channel::Records, b"x", Payload::none());
        assert!(matches!(e, Err(TransportError::PeerGone { .. })), "{e:?}");
        let a = Hooked::new(&a, Count);
        let _ = a.send(Rank(1), Channel::Records, b"y", Payload::none());
        let _ = a.send(Rank(1), Channel::Records, b"z", Payload::none());
        assert_eq!(a.sent.load(Ordering::Relaxed), 2);
    }
}
