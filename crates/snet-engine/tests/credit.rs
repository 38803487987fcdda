//! Termination credit stays small however long a distributed run streams
//! (issue 27's soak: the pools of a node that never became passive, and
//! node 0's, grew by about one piece per message).
//!
//! `[| {<a>}, {<b>} |] @ 1` on two loopback nodes, fed a long stream after
//! the cell fired, with a transport that reads the credit in every
//! message's header: no message may carry more than a few pieces, nor a
//! piece smaller than `2^-64`, whatever the number of records.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use snet_core::*;
use snet_engine::dist::wire::MessageReader;
use snet_engine::dist::{Payload, Received};
use snet_engine::{
    Channel, Config, InputLimit, Loopback, NoBoxes, Sink, Source, SourceError, Transport,
    TransportError,
};

/// The most pieces and the deepest piece seen in any header.
#[derive(Default)]
struct Seen {
    pieces: AtomicU64,
    deepest: AtomicU64,
    messages: AtomicU64,
}

struct Reading {
    inner: Loopback,
    seen: Arc<Seen>,
}

impl Transport for Reading {
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
        let (credit, _) = MessageReader::new(header).expect("a well-formed header");
        let s = &self.seen;
        s.messages.fetch_add(1, Ordering::Relaxed);
        s.pieces
            .fetch_max(credit.pieces().count() as u64, Ordering::Relaxed);
        s.deepest
            .fetch_max(credit.pieces().max().unwrap_or(0), Ordering::Relaxed);
        self.inner.send(to, channel, header, payload)
    }
    fn recv(&self, timeout: Duration) -> Result<Option<Received>, TransportError> {
        self.inner.recv(timeout)
    }
    fn close(&self) {
        self.inner.close()
    }
    fn name(&self) -> &str {
        "reading"
    }
}

/// `{<a>}`, `{<b>}` (the cell fires), then `n` more `{<a>}` passing through.
struct Stream {
    next: u64,
    n: u64,
}

impl Source for Stream {
    fn next_record(&mut self) -> Result<Option<Record>, SourceError> {
        if self.next >= self.n + 2 {
            return Ok(None);
        }
        let mut r = Record::new();
        let label = if self.next == 1 { "b" } else { "a" };
        r.set(Label::tag(label), Value::Int(self.next as i64));
        self.next += 1;
        Ok(Some(r))
    }
}

struct Count(Arc<AtomicU64>);

impl Sink for Count {
    fn write(&mut self, _: &Record) -> std::io::Result<()> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    fn abort(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn credit_stays_a_few_pieces_over_a_long_stream() {
    let (a, b) = (Label::tag("a"), Label::tag("b"));
    let loc = Loc {
        file: "test.snet".into(),
        line: 1,
        col: 1,
    };
    let input = Type(vec![Variant::new([a]), Variant::new([b])]);
    let mut g = Graph {
        nodes: vec![],
        boxes: vec![],
        entry: NodeId(0),
    };
    let pattern = |l| Pattern {
        variant: Variant::new([l]),
        guard: None,
    };
    let cell = g.add(Node {
        kind: NodeKind::Synchrocell(SynchrocellDef {
            patterns: vec![pattern(a), pattern(b)],
        }),
        loc: loc.clone(),
        input: input.clone(),
        output: Type::default(),
    });
    g.entry = g.add(Node {
        kind: NodeKind::Place {
            body: cell,
            node: Rank(1),
        },
        loc,
        input,
        output: Type::default(),
    });
    let g = Arc::new(g);

    let n = 40_000;
    let config = Config {
        workers: 2,
        // A steady stream: a few hundred records in flight, so messages
        // stay small and many (the soak's situation).
        input_limit: Some(InputLimit::parse("200 + output").unwrap()),
        ..Config::default()
    };
    let seen = Arc::new(Seen::default());
    let out = Arc::new(AtomicU64::new(0));
    let mut io = Some((
        Box::new(Stream { next: 0, n }) as Box<dyn Source>,
        Box::new(Count(out.clone())) as Box<dyn Sink>,
    ));
    std::thread::scope(|s| {
        let nodes: Vec<_> = Loopback::create(2)
            .into_iter()
            .map(|inner| {
                let t = Reading {
                    inner,
                    seen: seen.clone(),
                };
                let io = if t.node() == Rank::ROOT {
                    io.take()
                } else {
                    None
                };
                let (g, config) = (g.clone(), &config);
                s.spawn(move || snet_engine::run(g, config, io, &NoBoxes, &t))
            })
            .collect();
        for node in nodes {
            node.join().expect("node thread").expect("run");
        }
    });

    // The joined record and the n records that passed the fired cell.
    assert_eq!(out.load(Ordering::Relaxed), n + 1);
    let messages = seen.messages.load(Ordering::Relaxed);
    let pieces = seen.pieces.load(Ordering::Relaxed);
    let deepest = seen.deepest.load(Ordering::Relaxed);
    eprintln!(
        "{messages} messages; at most {pieces} pieces of credit in one, the smallest 2^-{deepest}"
    );
    assert!(messages > 200, "only {messages} messages: not a stream");
    assert!(pieces <= 64, "a message carried {pieces} pieces of credit");
    assert!(deepest <= 64, "a message carried a piece of 2^-{deepest}");
}
