//! Observers (metadata `<observer />` on a box or a net): an entity the
//! front end's [`NodeKind::Observe`](snet_core::NodeKind::Observe) node
//! puts in front of (before) or behind (after) the observed component.
//!
//! For every record it reports one message to the observer's destination
//! (standard error, a file opened for appending, or a TCP listener), then
//! passes the record on unchanged; every other item passes at once. It
//! holds a licence like any stateful entity, so the stream keeps its
//! order, and the rest of the network is untouched: a network without
//! observers has no such entity and pays nothing.
//!
//! *Destinations* are opened by the node the observer runs on, at its
//! first record, once per node for each destination (the observers and
//! instances that name the same file or address share the handle, each
//! message written whole under its lock).
//!
//! *Interactive* observers wait, after each message, for the listener's
//! `<observer oid="N"/>` with their own number; the record goes on then. A
//! listener that closes the connection, or a write that fails, stops the
//! run with an error naming the observer ([`ObserverError`]).
//!
//! *Field values* (`allvalues`) are written in their text form by the
//! run's [`FieldText`]; in a distributed run a field still held by another
//! node is fetched first (the record waits, parked, as at the output).

use std::collections::HashMap;
use std::fmt;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use snet_core::{FieldData, LabelKind, ObserveData, ObserveDest, Observer, Record, Value};

use crate::entity::{Entity, Item};
use crate::runtime::Ctx;
use crate::EngineError;

/// Writes a field value's text form (textual mode, not XML-escaped) into
/// `out`; `false` if it has none. Set by whoever knows the interfaces'
/// text codecs ([`crate::Config::field_text`]).
#[derive(Clone)]
pub struct FieldText(pub Arc<FieldTextFn>);

/// See [`FieldText`].
pub type FieldTextFn = dyn Fn(&dyn FieldData, &mut Vec<u8>) -> bool + Send + Sync;

impl fmt::Debug for FieldText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FieldText")
    }
}

/// An observer could not report: the run stops with this error.
#[derive(Debug, Clone)]
pub struct ObserverError {
    /// The observer that failed.
    pub observer: Arc<Observer>,
    /// What failed (opening its file, connecting to its listener, writing
    /// a message), with the reason.
    pub what: String,
}

impl fmt::Display for ObserverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.observer;
        write!(
            f,
            "observer {} of `{}` ({}, declared at {}): {}: {}",
            o.oid,
            o.position,
            o.point.as_str(),
            o.loc,
            o.dest,
            self.what
        )
    }
}

impl std::error::Error for ObserverError {}

/// An open destination.
enum Conn {
    Stderr,
    File(std::fs::File),
    Tcp { w: TcpStream, r: TcpStream },
}

/// A node's observer destinations, opened on first use.
#[derive(Default)]
pub(crate) struct Observers {
    pub text: Option<FieldText>,
    open: Mutex<HashMap<ObserveDest, Arc<Mutex<Conn>>>>,
}

impl Observers {
    pub(crate) fn new(text: Option<FieldText>) -> Observers {
        Observers {
            text,
            open: Mutex::new(HashMap::new()),
        }
    }

    fn conn(&self, dest: &ObserveDest) -> Result<Arc<Mutex<Conn>>, ConnError> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = open.get(dest) {
            return Ok(c.clone());
        }
        let conn = match dest {
            ObserveDest::Stderr => Conn::Stderr,
            ObserveDest::File(path) => Conn::File(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(ConnError::Open)?,
            ),
            ObserveDest::Tcp { host, port } => {
                let addrs = (host.as_str(), *port)
                    .to_socket_addrs()
                    .map_err(ConnError::Resolve)?;
                let mut last = None;
                let mut stream = None;
                for a in addrs {
                    match TcpStream::connect_timeout(&a, Duration::from_secs(10)) {
                        Ok(s) => {
                            stream = Some(s);
                            break;
                        }
                        Err(e) => last = Some(e),
                    }
                }
                let w = stream.ok_or(ConnError::Connect(last))?;
                let _ = w.set_nodelay(true);
                let r = w.try_clone().map_err(|e| ConnError::Connect(Some(e)))?;
                Conn::Tcp { w, r }
            }
        };
        let c = Arc::new(Mutex::new(conn));
        open.insert(dest.clone(), c.clone());
        Ok(c)
    }
}

pub(crate) struct ObserverEntity {
    obs: Arc<Observer>,
    next: Arc<Entity>,
    /// Records parked while their fields are fetched (allvalues, distributed runs).
    parked: crate::dist::fields::Parked,
    /// The message being built (kept to reuse its buffer).
    msg: Vec<u8>,
}

impl ObserverEntity {
    /// Where this entity sends what it makes ([`crate::runtime::Kind::toward_remote`]).
    pub(crate) fn next(&self) -> &Arc<Entity> {
        &self.next
    }

    pub(crate) fn new(obs: Arc<Observer>, next: Arc<Entity>) -> ObserverEntity {
        ObserverEntity {
            obs,
            next,
            parked: Default::default(),
            msg: Vec::new(),
        }
    }

    pub(crate) fn process(
        &mut self,
        item: Item,
        ctx: &mut Ctx,
        me: &Arc<Entity>,
    ) -> Result<(), EngineError> {
        if !(ctx.rt.net.distributed() && self.obs.data == ObserveData::AllValues) {
            return self.pass(item, ctx);
        }
        let ready = |rec: &Record| {
            let fields = rec.labels().filter(|l| l.is_field());
            crate::dist::fields::ensure_local(rec, fields, me, ctx)
        };
        for it in self.parked.admit(item, ready) {
            self.pass(it, ctx)?;
        }
        Ok(())
    }

    fn pass(&mut self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        match &item {
            Item::Rec(r) => self.report(&r.rec, ctx)?,
            Item::Wake => return Ok(()),
            Item::Marker(_) | Item::Resume => {}
        }
        ctx.send(&self.next, item);
        Ok(())
    }

    fn fail(&self, what: String) -> EngineError {
        EngineError::Observer(ObserverError {
            observer: self.obs.clone(),
            what,
        })
    }

    /// Writes the message for `rec` and, if interactive, waits for the answer.
    fn report(&mut self, rec: &Record, ctx: &Ctx) -> Result<(), EngineError> {
        self.msg.clear();
        message(
            &self.obs,
            rec,
            ctx.rt.observers.text.as_ref(),
            &mut self.msg,
        );
        let conn = ctx
            .rt
            .observers
            .conn(&self.obs.dest)
            .map_err(|e| self.fail(e.to_string()))?;
        let mut conn = conn.lock().unwrap_or_else(|e| e.into_inner());
        let written = match &mut *conn {
            Conn::Stderr => std::io::stderr().lock().write_all(&self.msg),
            Conn::File(f) => f.write_all(&self.msg),
            Conn::Tcp { w, .. } => w.write_all(&self.msg),
        };
        written.map_err(|e| self.fail(format!("cannot write: {e}")))?;
        if self.obs.interactive {
            if let Conn::Tcp { r, .. } = &mut *conn {
                wait_answer(r, self.obs.oid).map_err(|e| self.fail(e.to_string()))?;
            }
        }
        Ok(())
    }
}

/// Why an observer's destination could not be opened ([`Observers::conn`]).
enum ConnError {
    /// The file could not be opened.
    Open(std::io::Error),
    /// The host name did not resolve.
    Resolve(std::io::Error),
    /// No address of the host took the connection (the last one's error;
    /// none if the name resolved to no address).
    Connect(Option<std::io::Error>),
}

impl std::fmt::Display for ConnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnError::Open(e) => write!(f, "cannot open: {e}"),
            ConnError::Resolve(e) => write!(f, "cannot resolve: {e}"),
            ConnError::Connect(Some(e)) => write!(f, "cannot connect: {e}"),
            ConnError::Connect(None) => f.write_str("cannot connect: no address"),
        }
    }
}

/// Why an interactive observer got no answer ([`wait_answer`]).
enum NoAnswer {
    /// The listener closed the connection first.
    Closed,
    /// Reading the answer failed.
    Read(std::io::Error),
}

impl std::fmt::Display for NoAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoAnswer::Closed => f.write_str("the listener closed the connection before answering"),
            NoAnswer::Read(e) => write!(f, "cannot read the listener's answer: {e}"),
        }
    }
}

/// Reads the listener's answers until `<observer oid="OID"/>` (answers for
/// other numbers are skipped); an error if the connection ends first.
fn wait_answer(r: &mut TcpStream, oid: u32) -> Result<(), NoAnswer> {
    let mut tag = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match r.read(&mut byte) {
            Ok(0) => return Err(NoAnswer::Closed),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(NoAnswer::Read(e)),
        }
        match byte[0] {
            b'<' => {
                tag.clear();
                tag.push(b'<');
            }
            b'>' if !tag.is_empty() => {
                tag.push(b'>');
                if answer_oid(&tag) == Some(oid) {
                    return Ok(());
                }
                tag.clear();
            }
            b if !tag.is_empty() && tag.len() < 256 => tag.push(b),
            _ => {}
        }
    }
}

/// The number in `<observer oid="N" />` (any spacing, either quote).
fn answer_oid(tag: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(tag).ok()?;
    let rest = s.strip_prefix("<observer")?;
    if !rest.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let at = rest.find("oid")?;
    let rest = rest[at + 3..].trim_start().strip_prefix('=')?.trim_start();
    let q = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let rest = &rest[1..];
    rest[..rest.find(q)?].trim().parse().ok()
}

/// Appends `s` XML-escaped.
fn escape(s: &[u8], out: &mut Vec<u8>) {
    for &b in s {
        match b {
            b'<' => out.extend_from_slice(b"&lt;"),
            b'>' => out.extend_from_slice(b"&gt;"),
            b'&' => out.extend_from_slice(b"&amp;"),
            b'"' => out.extend_from_slice(b"&quot;"),
            b'\'' => out.extend_from_slice(b"&apos;"),
            _ => out.push(b),
        }
    }
}

/// The observer's message for `rec`, as the original runtime writes it.
pub(crate) fn message(obs: &Observer, rec: &Record, text: Option<&FieldText>, out: &mut Vec<u8>) {
    out.extend_from_slice(b"<?xml version=\"1.0\"?>\n<observer xmlns=\"snet-home.org\" oid=\"");
    out.extend_from_slice(obs.oid.to_string().as_bytes());
    out.extend_from_slice(b"\" position=\"");
    escape(obs.position.as_bytes(), out);
    out.extend_from_slice(b"\" type=\"");
    out.extend_from_slice(obs.point.as_str().as_bytes());
    out.push(b'"');
    if let Some(code) = &obs.code {
        out.extend_from_slice(b" code=\"");
        escape(code.as_bytes(), out);
        out.push(b'"');
    }
    out.extend_from_slice(b">\n<record type=\"data\" mode=\"textual\" >\n");
    let mut value = Vec::new();
    for (label, v) in rec.entries() {
        let name = label.name().as_bytes();
        match (label.kind(), v) {
            (LabelKind::Field, Value::Field(f)) if obs.data == ObserveData::AllValues => {
                out.extend_from_slice(b"<field label=\"");
                escape(name, out);
                out.extend_from_slice(b"\" interface=\"");
                escape(f.interface().as_bytes(), out);
                out.extend_from_slice(b"\" >");
                value.clear();
                if let Some(d) = f.get() {
                    let known = text.is_some_and(|t| (t.0)(&**d, &mut value));
                    if !known {
                        if let Some(t) = f.downcast_ref::<snet_core::TextField>() {
                            value.extend_from_slice(t.text().as_bytes());
                        }
                    }
                }
                escape(&value, out);
                out.extend_from_slice(b"</field>\n");
            }
            (LabelKind::Field, _) => {
                out.extend_from_slice(b"<field label=\"");
                escape(name, out);
                out.extend_from_slice(b"\" />\n");
            }
            (kind, v) => {
                let el: &[u8] = if kind == LabelKind::Tag {
                    b"tag"
                } else {
                    b"btag"
                };
                out.push(b'<');
                out.extend_from_slice(el);
                out.extend_from_slice(b" label=\"");
                escape(name, out);
                match v {
                    Value::Int(n) if obs.data != ObserveData::Labels => {
                        out.extend_from_slice(b"\" >");
                        out.extend_from_slice(n.to_string().as_bytes());
                        out.extend_from_slice(b"</");
                        out.extend_from_slice(el);
                        out.extend_from_slice(b">\n");
                    }
                    _ => out.extend_from_slice(b"\" />\n"),
                }
            }
        }
    }
    out.extend_from_slice(b"</record>\n</observer>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_by_number() {
        assert_eq!(answer_oid(b"<observer oid=\"3\"/>"), Some(3));
        assert_eq!(answer_oid(b"<observer  oid = '12' />"), Some(12));
        assert_eq!(answer_oid(b"<observers oid=\"3\"/>"), None);
        assert_eq!(answer_oid(b"<observer id=\"3\"/>"), None);
    }
}
