//! The data manager (thesis 4.2.4, 6.1.3): fields travel by reference.
//!
//! Every node has one [`FieldStore`]. A record that leaves a node carries
//! its small fields inline (at most `inline_limit` encoded bytes) and
//! references to the others; a field's bytes move only when a box on
//! another node needs them (or node 0 writes the field out), fetched on
//! demand and cached in the node's proxy for that field.
//!
//! # Weighted reference counting
//!
//! * **Export.** Sending a local field makes it an *export* of this node
//!   (its *home*): the store keeps the field alive under an id, and every
//!   reference sent carries a weight ([`ISSUE`]) that is added to the
//!   export's outstanding weight.
//! * **Proxies.** A node receiving a reference to a field homed elsewhere
//!   keeps one proxy per field ([`RemoteField`]), holding the sum of the
//!   weights it received; records on the node share it (and its cached
//!   value). Forwarding the reference gives away half of the proxy's weight,
//!   so no message to the home is needed.
//! * **Return.** Dropping a proxy's last handle sends its weight home
//!   (`Release`); a reference that arrives back home returns its weight at
//!   once. The home drops the export when its outstanding weight is zero.
//!   Weight is only ever moved, never created away from the home, so the
//!   outstanding weight is zero exactly when no reference exists anywhere.
//! * **Exhausted weight.** A proxy down to one unit cannot split; it is
//!   then exported by the forwarding node itself (an indirection: fetches
//!   of that reference go through the forwarding node).
//!
//! A record waiting for a remote field never blocks a worker: the entity
//! that needs the field (a box, the output) parks its input, asks the store
//! ([`FieldStore::request`]), and is offered [`Item::Wake`] when the bytes
//! have arrived (split-phase, as an Active Message handler completes a get).

use std::sync::{Arc, Weak};

use rustc_hash::FxHashMap;
use snet_core::{Codecs, Field, FieldBytes, FieldData, Rank, ReleaseRemote, RemoteField};

use crate::entity::{Entity, Item};
use crate::sync::{lock, AtomicBool, Mutex, Ordering};

/// The weight a home issues with each reference it sends.
pub(crate) const ISSUE: u64 = 1 << 40;

/// Who waits for a fetched field.
pub(crate) enum Waiter {
    /// An entity that parked its input: offered [`Item::Wake`].
    Entity(Arc<Entity>),
    /// Another node that asked this node for a field it exported by
    /// indirection: answered with the bytes under that export's id.
    Node { node: Rank, id: u64 },
}

struct Export {
    field: Field,
    /// Weight issued with references and not returned yet.
    outstanding: u64,
    /// The key in `by_value`.
    key: usize,
}

#[derive(Default)]
struct State {
    exports: FxHashMap<u64, Export>,
    /// Export id by the address of the exported value (one export per value).
    by_value: FxHashMap<usize, u64>,
    next_id: u64,
    proxies: FxHashMap<(Rank, u64), Weak<RemoteField>>,
    /// Fetches in flight, by (home, id).
    waiting: FxHashMap<(Rank, u64), Vec<Waiter>>,
    fetched: u64,
    fetched_bytes: u64,
    exported: u64,
}

/// What must be sent after a store operation (the store never sends itself).
pub(crate) enum Send {
    /// Ask `home` for field `id`.
    Fetch { home: Rank, id: u64 },
    /// Answer `node`'s request for `id` with `value`.
    Bytes {
        node: Rank,
        id: u64,
        value: Arc<dyn FieldData>,
    },
}

/// One node's field store.
pub(crate) struct FieldStore {
    me: Rank,
    state: Mutex<State>,
    release: Arc<dyn ReleaseRemote>,
    /// A reference to another node's field was ever made here
    /// ([`FieldStore::proxied`]).
    proxied: AtomicBool,
}

/// A field-store request another node made that cannot be met (a
/// protocol bug, or bytes no codec can read).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// A record refers to field `id` of node `home` (this node), which
    /// does not exist.
    NoSuchField { id: u64, home: Rank },
    /// Node `asker` asked for field `id`, which node `home` (this node)
    /// does not hold.
    NotHeld { asker: Rank, id: u64, home: Rank },
    /// More weight of field `id` came back to node `home` (this node)
    /// than it issued.
    TooMuchWeight { id: u64, home: Rank },
    /// A fetched value's bytes do not decode.
    Decode(snet_core::DecodeError),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::NoSuchField { id, home } => write!(
                f,
                "a record refers to field {id} of node {home}, which does not exist (a protocol bug)"
            ),
            StoreError::NotHeld { asker, id, home } => write!(
                f,
                "node {asker} asked for field {id}, which node {home} does not hold (a protocol bug)"
            ),
            StoreError::TooMuchWeight { id, home } => write!(
                f,
                "more weight of field {id} came back to node {home} than it issued (a protocol bug)"
            ),
            StoreError::Decode(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for StoreError {}

impl FieldStore {
    pub(crate) fn new(me: Rank, release: Arc<dyn ReleaseRemote>) -> FieldStore {
        FieldStore {
            me,
            state: Mutex::new(State::default()),
            release,
            proxied: AtomicBool::new(false),
        }
    }

    /// Exports `f` (a local field, or a proxy that cannot split its weight):
    /// returns its id and the weight to send with this reference.
    pub(crate) fn export(&self, f: &Field) -> (u64, u64) {
        use std::collections::hash_map::Entry;
        let mut st = lock(&self.state);
        let st = &mut *st;
        let k = f.address();
        // One look-up in each map (a field exported once a record on
        // `bench/soak`, by node 0's worker under the lock its input
        // manager takes for each reference that comes back).
        let id = match st.by_value.entry(k) {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                let id = st.next_id;
                st.next_id += 1;
                st.exported += 1;
                e.insert(id);
                id
            }
        };
        st.exports
            .entry(id)
            .or_insert_with(|| Export {
                field: f.clone(),
                outstanding: 0,
                key: k,
            })
            .outstanding += ISSUE;
        (id, ISSUE)
    }

    /// Weight of export `id` came back to this node, `home`: the field.
    /// Weight no reference had (an unknown export, more than is out) is a
    /// peer's protocol error, never a panic: it may be garbage.
    fn give_back(st: &mut State, home: Rank, id: u64, weight: u64) -> Result<Field, StoreError> {
        use std::collections::hash_map::Entry;
        let Entry::Occupied(mut e) = st.exports.entry(id) else {
            return Err(StoreError::NoSuchField { id, home });
        };
        let x = e.get_mut();
        x.outstanding = x
            .outstanding
            .checked_sub(weight)
            .ok_or(StoreError::TooMuchWeight { id, home })?;
        if x.outstanding > 0 {
            return Ok(x.field.clone());
        }
        // The last weight: the export goes, its field with it to the caller.
        let x = e.remove();
        st.by_value.remove(&x.key);
        Ok(x.field)
    }

    /// A reference to one of this node's exports came back with `weight`:
    /// the field, as a handle of this node.
    pub(crate) fn returned(&self, id: u64, weight: u64) -> Result<Field, StoreError> {
        let mut st = lock(&self.state);
        FieldStore::give_back(&mut st, self.me, id, weight)
    }

    /// All the weight of `f`, a reference to another node's field, if `f`
    /// is the last handle on it here: the caller sends the reference with
    /// it in a record that is dropped once sent, so nothing is released
    /// afterwards (a `Release` frame, and its home's look-up, a record on
    /// `bench/soak`'s nodes other than 0). Under the state lock: a
    /// reference arriving meanwhile ([`FieldStore::proxy`]) cannot take up
    /// the handle between the check and the take. `None` if another
    /// handle exists or no weight is held.
    pub(crate) fn take_last(&self, f: &Field) -> Option<u64> {
        let r = f.as_remote()?;
        // A handle shared already cannot become the only one but by the
        // others' drops (then it is split, as before): no lock for it. One
        // that is the only one can gain another only under the lock.
        if !f.is_only_handle() {
            return None;
        }
        let st = lock(&self.state);
        let w = if f.is_only_handle() {
            r.take_weight()
        } else {
            0
        };
        drop(st);
        (w > 0).then_some(w)
    }

    /// `Release` from another node.
    pub(crate) fn released(&self, id: u64, weight: u64) -> Result<(), StoreError> {
        let mut st = lock(&self.state);
        FieldStore::give_back(&mut st, self.me, id, weight).map(drop)
    }

    /// Whether this node ever held a reference to another node's field
    /// (a [`RemoteField`], whose drop gives its weight back by queueing a
    /// message). Made only here, before the record holding it goes
    /// anywhere; so a caller that holds a lock every record it asks
    /// about passed through since it was made (node 0's state lock, for
    /// the records of its log) sees `true` if any of them may hold one.
    pub(crate) fn proxied(&self) -> bool {
        self.proxied.load(Ordering::Relaxed)
    }

    /// A reference to field `id` of node `home` arrived with `weight`.
    pub(crate) fn proxy(
        &self,
        home: Rank,
        id: u64,
        weight: u64,
        interface: &str,
        len: u64,
    ) -> Field {
        let mut st = lock(&self.state);
        if let Some(p) = st.proxies.get(&(home, id)).and_then(Weak::upgrade) {
            p.add_weight(weight);
            return Field::remote(p);
        }
        let p = Arc::new(RemoteField::new(
            home,
            id,
            interface,
            len,
            weight,
            self.release.clone(),
        ));
        self.proxied.store(true, Ordering::Relaxed);
        st.proxies.insert((home, id), Arc::downgrade(&p));
        if st.proxies.len() > 64 && st.proxies.len().is_power_of_two() {
            st.proxies.retain(|_, w| w.strong_count() > 0);
        }
        Field::remote(p)
    }

    /// `waiter` needs the value of `r`: returns the fetch to send, if this
    /// is the first request for it.
    pub(crate) fn request(&self, r: &RemoteField, waiter: Waiter) -> Option<Send> {
        let mut st = lock(&self.state);
        let list = st.waiting.entry((r.home, r.id)).or_default();
        list.push(waiter);
        (list.len() == 1).then_some(Send::Fetch {
            home: r.home,
            id: r.id,
        })
    }

    /// Another node asks for export `id`.
    pub(crate) fn fetch(&self, node: Rank, id: u64) -> Result<Option<Send>, StoreError> {
        let field = {
            let st = lock(&self.state);
            st.exports
                .get(&id)
                .map(|e| e.field.clone())
                .ok_or(StoreError::NotHeld {
                    asker: node,
                    id,
                    home: self.me,
                })?
        };
        if let Some(v) = field.get() {
            return Ok(Some(Send::Bytes {
                node,
                id,
                value: v.clone(),
            }));
        }
        // An indirection: fetch from the field's home first.
        let r = field.as_remote().expect("an export is local or a proxy");
        Ok(self.request(r, Waiter::Node { node, id }))
    }

    /// The value of field `id` of node `home` arrived (its meta part and
    /// body, decoded by the codec named `codec`; the body becomes the
    /// value's storage): fills the proxy and returns the entities to wake
    /// and the answers to send.
    pub(crate) fn arrived(
        &self,
        home: Rank,
        id: u64,
        codec: &str,
        meta: &[u8],
        body: FieldBytes,
        codecs: &Codecs,
    ) -> Result<(Vec<Arc<Entity>>, Vec<Send>), StoreError> {
        let len = meta.len() + body.len();
        // The codec adopts the received buffer as the value's storage.
        let value = codecs
            .decode(codec, meta, body)
            .map_err(StoreError::Decode)?;
        let mut st = lock(&self.state);
        st.fetched += 1;
        st.fetched_bytes += len as u64;
        if let Some(p) = st.proxies.get(&(home, id)).and_then(Weak::upgrade) {
            p.fill(value.clone());
        }
        let waiters = st.waiting.remove(&(home, id)).unwrap_or_default();
        drop(st);
        let mut wake = Vec::new();
        let mut send = Vec::new();
        for w in waiters {
            match w {
                Waiter::Entity(e) => wake.push(e),
                Waiter::Node { node, id } => send.push(Send::Bytes {
                    node,
                    id,
                    value: value.clone(),
                }),
            }
        }
        Ok((wake, send))
    }

    /// (exports alive, proxies alive, fields fetched, bytes fetched, exports made).
    pub(crate) fn counts(&self) -> (u64, u64, u64, u64, u64) {
        let st = lock(&self.state);
        let proxies = st.proxies.values().filter(|w| w.strong_count() > 0).count();
        (
            st.exports.len() as u64,
            proxies as u64,
            st.fetched,
            st.fetched_bytes,
            st.exported,
        )
    }
}

/// Asks for every field of `rec` named in `labels` that is not on this node yet.
/// Returns true if the record can go ahead (all present).
pub(crate) fn ensure_local(
    rec: &snet_core::Record,
    labels: impl Iterator<Item = snet_core::Label>,
    me: &Arc<Entity>,
    ctx: &crate::runtime::Ctx,
) -> bool {
    let mut ready = true;
    for l in labels {
        if let Some(f) = rec.field(l) {
            if f.get().is_none() {
                let r = f.as_remote().expect("a field that is not here is remote");
                ready = false;
                ctx.rt.net.request(r, me.clone());
            }
        }
    }
    ready
}

/// An entity's parked input while it waits for fields (see the module docs).
#[derive(Default)]
pub(crate) struct Parked(Option<std::collections::VecDeque<Item>>);

impl Parked {
    /// Is the entity waiting? Then `item` joins the parked input (returns None).
    pub(crate) fn hold(&mut self, item: Item) -> Option<Item> {
        match &mut self.0 {
            Some(q) => {
                if !matches!(item, Item::Wake) {
                    q.push_back(item);
                }
                None
            }
            None if matches!(item, Item::Wake) => None,
            None => Some(item),
        }
    }

    /// Parks `item` (the one that needs a field) at the front.
    pub(crate) fn park(&mut self, item: Item) {
        self.0.get_or_insert_with(Default::default).push_front(item);
    }

    /// The parking protocol for one incoming item: the items the entity
    /// may process now, in stream order. `Wake` brings back the parked
    /// input; an item arriving while the entity waits joins it; the first
    /// record `ready` refuses (it asked for its fields) is parked, with
    /// everything behind it.
    pub(crate) fn admit(
        &mut self,
        item: Item,
        ready: impl Fn(&snet_core::Record) -> bool,
    ) -> std::collections::VecDeque<Item> {
        let mut todo = match item {
            Item::Wake => self.resume(),
            other => match self.hold(other) {
                Some(it) => std::iter::once(it).collect(),
                None => return Default::default(),
            },
        };
        let mut now = std::collections::VecDeque::new();
        while let Some(it) = todo.pop_front() {
            let Some(it) = self.hold(it) else {
                continue;
            };
            if let Item::Rec(r) = &it {
                if !ready(&r.rec) {
                    self.park(it);
                    continue;
                }
            }
            now.push_back(it);
        }
        now
    }

    /// On `Wake`: the parked input, to be processed again in order.
    pub(crate) fn resume(&mut self) -> std::collections::VecDeque<Item> {
        self.0.take().unwrap_or_default()
    }
}
