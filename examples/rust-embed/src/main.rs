//! A Rust program that keeps an S-Net network running as a service: each
//! line of standard input is a number; the network (`factors.snet`, boxes
//! written in Rust below) answers with its factorisation, one line per
//! number, as soon as it is computed.
//!
//! usage: rust-embed [WORKERS [NODES]] < numbers
//!
//! With NODES above 1 the network runs on that many processes sharing
//! memory (`Transport::Shm`), number `n` factorised on node `n % NODES`:
//! the node processes are copies of this program, which run `main` up to
//! `start` and join the run there (everything before it is free of side
//! effects, as a node process needs).

use std::io::{BufRead, Write};
use std::process::ExitCode;

use snet::{Field, Network, Record, Transport};

/// The prime factors of `n` (>= 2), smallest first.
fn factorise(mut n: i64) -> Vec<i64> {
    let mut factors = Vec::new();
    let mut d = 2;
    while d * d <= n {
        while n % d == 0 {
            factors.push(d);
            n /= d;
        }
        d += 1;
    }
    if n > 1 {
        factors.push(n);
    }
    factors
}

fn network(workers: usize, nodes: u32) -> Result<Network, snet::LoadError> {
    let entry = if nodes > 1 { "spread" } else { "factors" };
    let mut net =
        Network::from_source_with_entry("factors.snet", include_str!("../factors.snet"), entry)?;
    net.add_box("factorise", |input, out| {
        let n = input.tag("n")?;
        if n < 2 {
            return Err(format!("{n} has no prime factorisation").into());
        }
        let factors = factorise(n);
        if factors.len() == 1 {
            out.emit(2, Record::new().with_tag("n", n).with_tag("prime", 1))?;
        } else {
            let f = Field::from_slice(&factors);
            out.emit(1, Record::new().with_field("factors", f).with_tag("n", n))?;
        }
        Ok(())
    })
    .add_box("describe", |input, out| {
        let factors = input
            .field("factors")?
            .as_slice::<i64>()
            .ok_or("factors are not i64")?;
        let parts: Vec<String> = factors.iter().map(i64::to_string).collect();
        let text = format!("{} = {}", input.tag("n")?, parts.join(" * "));
        out.emit(1, Record::new().with_field("text", Field::text(&text)))?;
        Ok(())
    })
    .workers(workers)
    .nodes(nodes)
    .transport(Transport::Shm);
    Ok(net)
}

fn answer(r: &Record) -> String {
    match (r.field("text").and_then(Field::to_text), r.tag("n")) {
        (Some(text), _) => text,
        (None, Some(n)) => format!("{n} is prime"),
        (None, None) => format!("unexpected output {r}"),
    }
}

fn main() -> ExitCode {
    let usage = || {
        eprintln!("usage: rust-embed [WORKERS [NODES]] < numbers");
        ExitCode::from(2)
    };
    let arg = |i| std::env::args().nth(i).map(|a| a.parse::<usize>());
    let workers = match arg(1) {
        None => 2,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => return usage(),
    };
    let nodes = match arg(2) {
        None => 1,
        Some(Ok(n)) if n > 0 => u32::try_from(n).unwrap_or(u32::MAX),
        Some(_) => return usage(),
    };
    let net = match network(workers, nodes) {
        Ok(net) => net,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    let running = net.start();
    let stdout = std::io::stdout();
    let mut stdout = stdout.lock();
    for (i, line) in std::io::stdin().lock().lines().enumerate() {
        let Ok(line) = line else { break };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let Ok(n) = line.parse::<i64>() else {
            eprintln!("line {}: not a number: {line}", i + 1);
            continue;
        };
        // One record in, one answer out: a request and its reply.
        let mut request = Record::new().with_tag("n", n);
        if nodes > 1 {
            request.set_tag("nodes", i64::from(nodes));
        }
        if running.send(request).is_err() {
            break; // the run failed: `finish` below says why
        }
        let Some(reply) = running.recv() else { break };
        let _ = writeln!(stdout, "{}", answer(&reply));
        let _ = stdout.flush();
    }
    match running.finish() {
        Ok(rest) => {
            for r in rest {
                let _ = writeln!(stdout, "{}", answer(&r));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
