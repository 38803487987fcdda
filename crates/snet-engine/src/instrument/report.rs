//! Rendering what a node recorded ([`NodeReport`]): the Trace Event
//! Format's events (`--trace`), the profile's JSON and its table
//! (`--profile`). The recording side is the parent module; the files a run
//! writes are [`crate::instrument_files`].

use std::fmt::Write as _;

use snet_core::{Graph, NodeId, NodeKind, Rank};

use super::{Cat, CompStats, Ev, WorkerLog, SPECIAL};
/// A component as reports name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Component {
    /// The box's or net's name, or what the component is (`filter`, `synchrocell`, ...).
    pub name: String,
    /// `box`, `filter`, `synchrocell`, `parallel composition`, ... (`output`, `remote`, ...).
    pub kind: String,
    /// Where it is written (`file:line:col`; empty for runtime entities).
    pub loc: String,
    /// The named nets around it, outermost first, joined by `/`.
    pub path: String,
}

/// One thread's part of a node's trace.
pub(crate) struct ThreadTrace {
    pub tid: u32,
    pub name: String,
    events: Vec<Ev>,
}

/// What one node recorded: its threads' events and its components' counters.
pub(crate) struct NodeReport {
    pub node: Rank,
    /// Wall time of the node's run (from the workers' start to their end).
    pub start_ns: u64,
    pub end_ns: u64,
    /// Components with any activity, by slot (graph node index, or beyond).
    pub components: Vec<(u32, Component, CompStats)>,
    pub threads: Vec<ThreadTrace>,
    /// Worker threads (the busy share is of `workers × wall time`).
    pub workers: u32,
}

/// The named nets around each node (`main/sub`), found from the entry.
fn net_paths(graph: &Graph) -> Vec<String> {
    let mut paths = vec![String::new(); graph.nodes.len()];
    let mut seen = vec![false; graph.nodes.len()];
    let mut stack = vec![(graph.entry, String::new())];
    while let Some((n, path)) = stack.pop() {
        if std::mem::replace(&mut seen[n.index()], true) {
            continue;
        }
        let inner = match &graph.node(n).kind {
            NodeKind::Net { name, .. } if path.is_empty() => name.to_string(),
            NodeKind::Net { name, .. } => format!("{path}/{name}"),
            _ => path.clone(),
        };
        paths[n.index()] = path;
        for c in graph.children(n) {
            stack.push((c, inner.clone()));
        }
    }
    paths
}

fn component(graph: &Graph, paths: &[String], slot: u32) -> Component {
    let n = graph.nodes.len() as u32;
    if slot >= n {
        let (name, kind) = SPECIAL[((slot - n) as usize).min(SPECIAL.len() - 1)];
        return Component {
            name: name.into(),
            kind: kind.into(),
            loc: String::new(),
            path: String::new(),
        };
    }
    let node = graph.node(NodeId(slot));
    let name = match &node.kind {
        NodeKind::Box(b) => graph.box_def(*b).name.to_string(),
        NodeKind::Net { name, .. } => name.to_string(),
        _ => node.describe().to_string(),
    };
    Component {
        name,
        kind: node.describe().to_string(),
        loc: node.loc.to_string(),
        path: paths[slot as usize].clone(),
    }
}

impl NodeReport {
    pub(crate) fn new(
        node: Rank,
        graph: &Graph,
        logs: Vec<WorkerLog>,
        start_ns: u64,
        end_ns: u64,
        workers: u32,
    ) -> NodeReport {
        let paths = net_paths(graph);
        let slots = logs.first().map_or(0, |l| l.prof.len());
        let mut total = vec![CompStats::default(); slots];
        for l in &logs {
            for (t, s) in total.iter_mut().zip(&l.prof) {
                t.add(s);
            }
        }
        let components = total
            .into_iter()
            .enumerate()
            .filter(|(_, s)| *s != CompStats::default())
            .map(|(slot, s)| (slot as u32, component(graph, &paths, slot as u32), s))
            .collect();
        let mut threads: Vec<ThreadTrace> = logs
            .into_iter()
            .map(|l| ThreadTrace {
                tid: l.tid,
                name: l.name,
                events: l.events,
            })
            .collect();
        threads.sort_by_key(|t| t.tid);
        NodeReport {
            node,
            start_ns,
            end_ns,
            components,
            threads,
            workers,
        }
    }

    /// Adds named threads that record no events (the reader, the writer,
    /// the managers), so a viewer shows every thread of the node.
    pub(crate) fn name_thread(&mut self, tid: u32, name: &str) {
        self.threads.push(ThreadTrace {
            tid,
            name: name.into(),
            events: Vec::new(),
        });
    }

    /// The node's trace events in the Trace Event Format, one JSON object
    /// per line, each followed by a comma (so the parts of several nodes
    /// concatenate into one array). Timestamps are microseconds of
    /// `CLOCK_MONOTONIC`.
    pub(crate) fn trace_events(&self, out: &mut String) {
        let pid = self.node;
        let _ = writeln!(
            out,
            r#"{{"name":"process_name","ph":"M","pid":{pid},"tid":0,"args":{{"name":"node {pid}"}}}},"#
        );
        let _ = writeln!(
            out,
            r#"{{"name":"process_sort_index","ph":"M","pid":{pid},"tid":0,"args":{{"sort_index":{pid}}}}},"#
        );
        // Each component's name and args, escaped once.
        let top = self.components.iter().map(|c| c.0 + 1).max().unwrap_or(0) as usize;
        let mut heads: Vec<Option<(String, String)>> = vec![None; top];
        for (slot, c, _) in &self.components {
            heads[*slot as usize] = Some((
                format!("{{\"name\":{},\"cat\":\"", json_str(&c.name)),
                format!(
                    ",\"args\":{{\"net\":{},\"loc\":{}",
                    json_str(&c.path),
                    json_str(&c.loc)
                ),
            ));
        }
        let unknown = (
            "{\"name\":\"?\",\"cat\":\"".to_string(),
            ",\"args\":{\"net\":\"\",\"loc\":\"\"".to_string(),
        );
        let mut num = itoa::Buffer::new();
        for t in &self.threads {
            let tid = t.tid;
            let _ = writeln!(
                out,
                r#"{{"name":"thread_name","ph":"M","pid":{pid},"tid":{tid},"args":{{"name":{}}}}},"#,
                json_str(&t.name)
            );
            let _ = writeln!(
                out,
                r#"{{"name":"thread_sort_index","ph":"M","pid":{pid},"tid":{tid},"args":{{"sort_index":{tid}}}}},"#
            );
            // `,"pid":P,"tid":T,"ts":`
            let place = format!(",\"pid\":{pid},\"tid\":{tid},\"ts\":");
            out.reserve(t.events.len() * 120);
            for e in &t.events {
                match *e {
                    Ev::Slice {
                        slot,
                        cat,
                        ts,
                        dur,
                        items,
                    } => {
                        let (head, args) = heads
                            .get(slot as usize)
                            .and_then(|h| h.as_ref())
                            .unwrap_or(&unknown);
                        out.push_str(head);
                        out.push_str(cat.name());
                        out.push_str("\",\"ph\":\"X\"");
                        out.push_str(&place);
                        micros(out, &mut num, ts);
                        out.push_str(",\"dur\":");
                        micros(out, &mut num, dur);
                        out.push_str(args);
                        if cat == Cat::Batch {
                            out.push_str(",\"items\":");
                            out.push_str(num.format(items));
                        }
                        out.push_str("}},\n");
                    }
                    Ev::Flow { ph, id, ts, parent } => {
                        out.push_str("{\"name\":\"record\",\"cat\":\"flow\",\"ph\":\"");
                        out.push(ph as char);
                        out.push_str("\",\"id\":");
                        out.push_str(num.format(id));
                        out.push_str(&place);
                        micros(out, &mut num, ts);
                        out.push_str(",\"bp\":\"e\"");
                        if parent != 0 {
                            out.push_str(",\"args\":{\"parent\":");
                            out.push_str(num.format(parent));
                            out.push('}');
                        }
                        out.push_str("},\n");
                    }
                    Ev::Counter {
                        ts,
                        admitted,
                        written,
                        queued,
                    } => {
                        for (name, v) in [
                            ("input admitted", admitted as i64),
                            ("output written", written as i64),
                            ("items queued", queued.max(0)),
                        ] {
                            out.push_str("{\"name\":\"");
                            out.push_str(name);
                            out.push_str("\",\"ph\":\"C\"");
                            out.push_str(&place);
                            micros(out, &mut num, ts);
                            out.push_str(",\"args\":{\"value\":");
                            out.push_str(num.format(v));
                            out.push_str("}},\n");
                        }
                    }
                }
            }
        }
    }

    /// The node's profile as one JSON object.
    pub(crate) fn profile_json(&self, out: &mut String) {
        let wall = self.end_ns.saturating_sub(self.start_ns);
        let _ = write!(
            out,
            r#"{{"node":{},"workers":{},"wall_ns":{wall},"components":["#,
            self.node, self.workers
        );
        for (i, (_, c, s)) in self.components.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(
                out,
                "\n  {{\"name\":{},\"kind\":{},\"loc\":{},\"net\":{},\"calls\":{},\"records_in\":{},\"records_out\":{},\"busy_ns\":{},\"busy_share\":{:.4},\"max_inbox\":{},\"suspensions\":{}}}",
                json_str(&c.name),
                json_str(&c.kind),
                json_str(&c.loc),
                json_str(&c.path),
                s.calls,
                s.records_in,
                s.records_out,
                s.busy_ns,
                self.share(s),
                s.max_inbox,
                s.suspensions
            );
        }
        out.push_str("\n]}");
    }

    /// A component's busy time as a share of the node's worker time.
    pub(crate) fn share(&self, s: &CompStats) -> f64 {
        let wall = self.end_ns.saturating_sub(self.start_ns).max(1) as f64;
        s.busy_ns as f64 / (wall * f64::from(self.workers.max(1)))
    }

    /// The profile as a table for people (`--profile`), busiest first.
    pub(crate) fn profile_table(&self, out: &mut String) {
        let wall = self.end_ns.saturating_sub(self.start_ns);
        let _ = writeln!(
            out,
            "profile of node {} ({} workers, {:.3} s):",
            self.node,
            self.workers,
            wall as f64 / 1e9
        );
        let mut rows: Vec<&(u32, Component, CompStats)> = self.components.iter().collect();
        rows.sort_by(|a, b| b.2.busy_ns.cmp(&a.2.busy_ns).then(a.0.cmp(&b.0)));
        let head = [
            "component",
            "where",
            "calls",
            "in",
            "out",
            "busy ms",
            "share",
            "inbox",
            "susp",
        ];
        let mut table: Vec<[String; 9]> = vec![head.map(String::from)];
        for (_, c, s) in rows {
            let name = if c.kind == "box" || c.kind == "net" || c.loc.is_empty() {
                c.name.clone()
            } else {
                c.kind.clone()
            };
            table.push([
                name,
                c.loc.clone(),
                s.calls.to_string(),
                s.records_in.to_string(),
                s.records_out.to_string(),
                format!("{:.3}", s.busy_ns as f64 / 1e6),
                format!("{:.1}%", 100.0 * self.share(s)),
                s.max_inbox.to_string(),
                s.suspensions.to_string(),
            ]);
        }
        let mut width = [0usize; 9];
        for r in &table {
            for (w, c) in width.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        for r in &table {
            let mut line = String::new();
            for (i, (c, w)) in r.iter().zip(width).enumerate() {
                if i < 2 {
                    let _ = write!(line, "{c:<w$}  ");
                } else {
                    let _ = write!(line, "{c:>w$}  ");
                }
            }
            let _ = writeln!(out, "  {}", line.trim_end());
        }
    }
}

/// Nanoseconds written as microseconds with three decimals (exact).
fn micros(out: &mut String, num: &mut itoa::Buffer, ns: u64) {
    out.push_str(num.format(ns / 1000));
    let frac = ns % 1000;
    out.push('.');
    out.push(char::from(b'0' + (frac / 100) as u8));
    out.push(char::from(b'0' + (frac / 10 % 10) as u8));
    out.push(char::from(b'0' + (frac % 10) as u8));
}

/// A JSON string literal.
pub(super) fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}
