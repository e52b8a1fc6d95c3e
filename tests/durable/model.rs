//! Property test: a durable world (binding table, hierarchy, names, protection, duplication,
//! unload/reload, an owned group and an `entity_refs` component) against a plain-Rust model
//! over random operation sequences, with live, pending, stale, retired, null and foreign
//! handles, and valid, unbound, stale and malformed keys.
//!
//! After every step everything observable is compared with the model: each handle's key,
//! parent, children (in order), name, protection and components; each key's resolution (with
//! and without a kind, with a catalog); the binding table's own iteration order and
//! consistency; the owned group; the outliner rows; the counts; the binding revision. A second
//! world binds some of the same keys: its handles never resolve or report anything here.

use std::collections::{BTreeMap, HashMap};

use bytemuck::{Pod, Zeroable};
use ludus::durable::{
    ActivationError, BindingKind, CandidateRejection, CatalogEntry, HierarchyError,
    InvalidReference, NoCatalog, OrphanPolicy, WorldCounts,
};
use ludus::identity::test_entropy::{FailingEntropy, FixedEntropy, SeqEntropy};
use ludus::identity::{
    EntropySource, IdentityConflict, InstanceId, MintError, PersistentObjectKey, SourceObjectId,
    UuidError, MINT_ATTEMPTS, TERMINAL_GENERATION,
};
use ludus::prelude::*;
use ludus::world::WorldDiagnostics;
use ludus::world::{CommandError, Rejection};
use proptest::prelude::*;

use crate::support::Follow;

/// A position (grouped with [`Vel`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
pub struct Pos(pub u32);

/// A velocity (grouped with [`Pos`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
pub struct Vel(pub u32);

ludus::world! {
    struct Level { pos: Pos, vel: Vel, follow: Follow }
    groups { moving(pos: Pos, vel: Vel) }
    durable { entity_refs { Follow } }
}

/// A world's size: entity slots and bindings (fewer bindings than slots, so activation and
/// duplication run out of binding room).
#[derive(Debug, Clone, Copy)]
struct Size {
    capacity: usize,
    bindings: usize,
}

/// The plain property's world: a binding table of four groups of four entries.
const SMALL: Size = Size {
    capacity: 8,
    bindings: 5,
};
/// The colliding property's world: more than two full groups of colliding keys, so a deletion
/// shifts entries back across several groups.
const LARGE: Size = Size {
    capacity: 16,
    bindings: 12,
};
/// A small name arena: refusals and compactions happen.
const NAME_BYTES: usize = 40;
const NAME_HEADER: usize = 6;
/// Destroys a command buffer holds.
const COMMANDS: usize = 3;
const NAMES: [&str; 7] = [
    "",
    "a",
    "bb",
    "root",
    "child-1",
    "a-longer-name",
    "0123456789abcdef",
];
/// Instance scopes of the key pool (the last one the catalog reports `NotResident`).
const INSTANCES: u128 = 3;
const OBJECTS: u128 = 4;

fn uuid_of(n: u128) -> uuid::Uuid {
    uuid::Builder::from_random_bytes(
        (n.wrapping_mul(0x2545_f491_4f6c_dd1d_9e37_79b9) ^ n.rotate_left(64)).to_le_bytes(),
    )
    .into_uuid()
}

/// Instance scope `i`. Every scope's first 8 bytes are [`SHARED`]'s (see
/// [`colliding_secret`]); the rest differ.
fn instance(i: u128) -> InstanceId {
    InstanceId::from_uuid(shared_prefix(1000 + i)).unwrap()
}

fn object(o: u128) -> SourceObjectId {
    SourceObjectId::from_uuid(uuid_of(2000 + o)).unwrap()
}

/// The first 8 bytes every instance scope and every colliding object id share.
const SHARED: u64 = 0x1234_5678_9abc_4def;

/// A v4 UUID whose first 8 bytes are [`SHARED`]'s (its version nibble set), the rest from `n`.
fn shared_prefix(n: u128) -> uuid::Uuid {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&SHARED.to_le_bytes());
    b[8..].copy_from_slice(&((n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1).to_le_bytes());
    uuid::Builder::from_random_bytes(b).into_uuid()
}

/// An object id whose first 8 bytes are [`SHARED`]'s, like every instance scope's.
fn colliding_object(o: u128) -> SourceObjectId {
    SourceObjectId::from_uuid(shared_prefix(2000 + o)).unwrap()
}

/// A leaked secret (see `tests/durable/world.rs`): each half of the keyed hash mixes a key's
/// first word with the secret's, so with the shared first word as the secret every key made of
/// an [`instance`] and a [`colliding_object`] hashes alike. Bindings then overflow their home
/// group, lookups compare keys whose hashes are equal, and deletions shift entries back.
fn colliding_secret() -> [u64; 4] {
    let w = u64::from_ne_bytes(shared_prefix(0).as_bytes()[..8].try_into().unwrap());
    [w, 0, w, 0]
}

/// A key of the pool and whether it is well formed (the error a resolve or an activation
/// must report otherwise).
#[derive(Debug, Clone, Copy)]
struct KeySpec {
    key: PersistentObjectKey,
    valid: Result<(), UuidError>,
}

fn raw_key(instance: [u8; 16], object: [u8; 16]) -> PersistentObjectKey {
    let mut b = [0u8; 32];
    b[..16].copy_from_slice(&instance);
    b[16..].copy_from_slice(&object);
    bytemuck::cast(b)
}

/// Valid keys (every instance × object, the objects [`colliding_object`]s when `colliding`,
/// and in each instance the first id
/// `SeqEntropy::new(0)` and `FixedEntropy::new([0; 16])` mint, so a duplication may collide
/// with a bound key and retry), then malformed ones.
fn key_pool(colliding: bool) -> Vec<KeySpec> {
    let mut keys = Vec::new();
    for i in 0..INSTANCES {
        for o in 0..OBJECTS {
            keys.push(KeySpec {
                key: PersistentObjectKey::new(
                    instance(i),
                    if colliding {
                        colliding_object(i * 16 + o)
                    } else {
                        object(i * 16 + o)
                    },
                ),
                valid: Ok(()),
            });
        }
        for source in [Entropy::Seq(0), Entropy::Fixed(0)] {
            let minted = SourceObjectId::mint(&mut *source.source()).unwrap();
            keys.push(KeySpec {
                key: PersistentObjectKey::new(instance(i), minted),
                valid: Ok(()),
            });
        }
    }
    let inst = *instance(0).as_bytes();
    let obj = *object(99).as_bytes();
    let mut v1 = obj;
    v1[6] = (v1[6] & 0x0f) | 0x10;
    let mut variant = obj;
    variant[8] &= 0x3f;
    keys.push(KeySpec {
        key: raw_key([0; 16], [0; 16]),
        valid: Err(UuidError::Nil),
    });
    keys.push(KeySpec {
        key: raw_key(inst, [0; 16]),
        valid: Err(UuidError::Nil),
    });
    keys.push(KeySpec {
        key: raw_key([0; 16], obj),
        valid: Err(UuidError::Nil),
    });
    keys.push(KeySpec {
        key: raw_key(inst, v1),
        valid: Err(UuidError::Version { found: 1 }),
    });
    keys.push(KeySpec {
        key: raw_key(inst, variant),
        valid: Err(UuidError::Variant {
            found: variant[8] >> 4,
        }),
    });
    keys
}

/// The entropy a duplication is given.
#[derive(Debug, Clone, Copy)]
enum Entropy {
    /// `SeqEntropy::new(seed)`: few seeds, so later duplications collide with ids minted
    /// earlier and the retry path runs.
    Seq(u64),
    /// `FailingEntropy` over `SeqEntropy::new(seed)`, failing from fill `fail_on` on.
    Failing(u64, u64),
    /// `FixedEntropy`: the same id every time (a second bound source in a scope conflicts).
    Fixed(u8),
}

impl Entropy {
    fn source(self) -> Box<dyn EntropySource> {
        match self {
            Entropy::Seq(s) => Box::new(SeqEntropy::new(s)),
            Entropy::Failing(s, n) => Box::new(FailingEntropy::new(SeqEntropy::new(s), n)),
            Entropy::Fixed(b) => Box::new(FixedEntropy::new([b; 16])),
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// Spawn a bundle: 0 `create`, 1 `(Pos,)`, 2 `(Pos, Vel)`, 3 `(Follow,)`,
    /// 4 `(Pos, Vel, Follow)` (the follow target: mostly a live entity, else any handle).
    Spawn(u8, u32, usize),
    Destroy(usize),
    CmdDestroy(usize),
    Commit,
    Phase(bool),
    /// Candidates: entity pick (mostly an unbound active entity), key pick (mostly a free
    /// well-formed key), kind.
    Activate(Vec<(usize, usize, u8)>),
    ResolveRequired(usize, Option<u8>),
    Unload(u8),
    /// Spawn fresh entities for the keys of the last unload and bind them again.
    Reload,
    SetParent(usize, Option<usize>),
    MoveChild(usize, u8),
    Policy(bool),
    DestroySubtree(usize),
    SetName(usize, u8),
    SetProtected(usize, bool),
    /// Selection picks, entropy, and whether `out` is one too long.
    Duplicate(Vec<usize>, Entropy, bool),
    SetFollow(usize, usize),
    ToggleVel(usize, u32),
}

fn entropy() -> impl Strategy<Value = Entropy> {
    prop_oneof![
        4 => (0u64..3).prop_map(Entropy::Seq),
        2 => (0u64..3, 1u64..5).prop_map(|(s, n)| Entropy::Failing(s, n)),
        1 => (0u8..2).prop_map(Entropy::Fixed),
    ]
}

fn spawn_op() -> impl Strategy<Value = Op> {
    (0u8..5, any::<u32>(), any::<usize>()).prop_map(|(b, v, t)| Op::Spawn(b, v, t))
}

fn activate_op() -> impl Strategy<Value = Op> {
    proptest::collection::vec((any::<usize>(), any::<usize>(), 0u8..3), 0..4).prop_map(Op::Activate)
}

/// A few spawns, then any operations.
fn ops() -> impl Strategy<Value = Vec<Op>> {
    (
        proptest::collection::vec(spawn_op(), 0..8),
        proptest::collection::vec(op(), 1..LEN),
    )
        .prop_map(|(mut a, b)| {
            a.extend(b);
            a
        })
}

/// Many spawns and activations (a well-filled table), then any operations.
fn crowded_ops() -> impl Strategy<Value = Vec<Op>> {
    (
        proptest::collection::vec(spawn_op(), 6..CROWD),
        proptest::collection::vec(activate_op(), 2..6),
        proptest::collection::vec(op(), 1..LEN),
    )
        .prop_map(|(mut a, b, c)| {
            a.extend(b);
            a.extend(c);
            a
        })
}

fn op() -> impl Strategy<Value = Op> {
    let pick = any::<usize>;
    prop_oneof![
        10 => spawn_op(),
        3 => pick().prop_map(Op::Destroy),
        2 => pick().prop_map(Op::CmdDestroy),
        1 => Just(Op::Commit),
        1 => proptest::bool::weighted(0.75).prop_map(Op::Phase),
        6 => activate_op(),
        1 => (0usize..64, proptest::option::of(0u8..3)).prop_map(|(k, t)| Op::ResolveRequired(k, t)),
        1 => (0u8..INSTANCES as u8).prop_map(Op::Unload),
        1 => Just(Op::Reload),
        8 => (pick(), proptest::option::weighted(0.8, pick())).prop_map(|(c, p)| Op::SetParent(c, p)),
        2 => (pick(), 0u8..4).prop_map(|(c, i)| Op::MoveChild(c, i)),
        1 => any::<bool>().prop_map(Op::Policy),
        1 => pick().prop_map(Op::DestroySubtree),
        3 => (pick(), 0u8..NAMES.len() as u8).prop_map(|(e, n)| Op::SetName(e, n)),
        1 => (pick(), any::<bool>()).prop_map(|(e, on)| Op::SetProtected(e, on)),
        4 => (proptest::collection::vec(pick(), 0..4), entropy(), proptest::bool::weighted(0.05))
            .prop_map(|(s, e, l)| Op::Duplicate(s, e, l)),
        2 => (pick(), pick()).prop_map(|(e, t)| Op::SetFollow(e, t)),
        1 => (pick(), any::<u32>()).prop_map(|(e, v)| Op::ToggleVel(e, v)),
    ]
}

/// A live entity of the model.
#[derive(Debug, Clone)]
struct Ent {
    id: EntityId,
    pos: Option<Pos>,
    vel: Option<Vel>,
    follow: Option<Follow>,
    key: Option<(PersistentObjectKey, BindingKind)>,
    name: String,
    parent: Option<EntityId>,
    children: Vec<EntityId>,
    protected: bool,
    pending: bool,
}

impl Ent {
    fn new(id: EntityId) -> Self {
        Self {
            id,
            pos: None,
            vel: None,
            follow: None,
            key: None,
            name: String::new(),
            parent: None,
            children: Vec::new(),
            protected: false,
            pending: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Slot {
    /// Never created (the next create at this generation).
    Never(u32),
    Live(u32),
    /// Released: the next create at this generation.
    Free(u32),
    Retired,
}

struct Model {
    owner: u64,
    /// Binding capacity.
    bindings: usize,
    slots: Vec<Slot>,
    /// Released slots, LIFO.
    free: Vec<u32>,
    high: u32,
    retired: usize,
    /// Live entities by slot (so iteration is slot order).
    alive: BTreeMap<u32, Ent>,
    bound: HashMap<PersistentObjectKey, EntityId>,
    binding_revision: u64,
    conflicts: u64,
    unresolved: u64,
    policy: OrphanPolicy,
    structural: bool,
    /// Destroys recorded in the command buffer.
    recorded: Vec<EntityId>,
    /// Keys of the last successful unload.
    unloaded: Vec<PersistentObjectKey>,
    keys: Vec<KeySpec>,
}

impl Model {
    fn get(&self, e: EntityId) -> Option<&Ent> {
        if e.owner() != self.owner {
            return None;
        }
        self.alive.get(&e.slot()).filter(|x| x.id == e)
    }

    fn get_mut(&mut self, e: EntityId) -> Option<&mut Ent> {
        if e.owner() != self.owner {
            return None;
        }
        self.alive.get_mut(&e.slot()).filter(|x| x.id == e)
    }

    fn ent(&mut self, e: EntityId) -> &mut Ent {
        self.get_mut(e).expect("model: not alive")
    }

    /// The registry's `diagnose`: why `e` is not active.
    fn diagnose(&self, e: EntityId) -> Result<(), Rejection> {
        if e.is_null() {
            return Err(Rejection::Null);
        }
        if e.owner() != self.owner {
            return Err(Rejection::ForeignOwner);
        }
        match self.slots.get(e.slot() as usize) {
            None => Err(Rejection::OutOfRange),
            Some(Slot::Retired) => Err(Rejection::Retired),
            Some(Slot::Never(_) | Slot::Free(_)) => Err(Rejection::Free),
            Some(Slot::Live(g)) if *g != e.generation() => Err(Rejection::Stale),
            Some(Slot::Live(_)) => match self.get(e) {
                Some(x) if x.pending => Err(Rejection::Pending),
                _ => Ok(()),
            },
        }
    }

    fn is_active(&self, e: EntityId) -> bool {
        self.get(e).is_some_and(|x| !x.pending)
    }

    /// `check_alive`: alive (pending allowed), else the diagnosis.
    fn check_alive(&self, e: EntityId) -> Result<(), WorldError> {
        if self.get(e).is_some() {
            Ok(())
        } else {
            Err(WorldError::Rejected(
                self.diagnose(e).err().unwrap_or(Rejection::Stale),
            ))
        }
    }

    fn inactive(&self, e: EntityId) -> Rejection {
        self.diagnose(e).err().unwrap_or(Rejection::Stale)
    }

    fn available(&self) -> usize {
        self.free.len() + (self.slots.len() - self.high as usize)
    }

    fn capacity_error(&self, requested: usize) -> WorldError {
        WorldError::CapacityExhausted {
            requested,
            available: self.available(),
            capacity: self.slots.len(),
            retired: self.retired,
        }
    }

    /// The next create: the last released slot, else the next fresh one.
    fn create(&mut self) -> EntityId {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.high += 1;
            self.high - 1
        });
        let generation = match self.slots[slot as usize] {
            Slot::Never(g) | Slot::Free(g) => g,
            s => panic!("model: create into {s:?}"),
        };
        self.slots[slot as usize] = Slot::Live(generation);
        let id = EntityId::from_raw_parts(self.owner, slot, generation);
        self.alive.insert(slot, Ent::new(id));
        id
    }

    /// Destroys a live entity: binding removed, children reparented by policy, name and
    /// protection dropped, slot released (or retired).
    fn destroy(&mut self, e: EntityId) {
        let x = self
            .alive
            .remove(&e.slot())
            .expect("model: destroy of a dead entity");
        assert_eq!(x.id, e);
        if let Some((k, _)) = x.key {
            self.bound.remove(&k);
            self.binding_revision += 1;
        }
        let grandparent = match self.policy {
            OrphanPolicy::Detach => None,
            OrphanPolicy::ToGrandparent => x.parent,
        };
        if let Some(p) = x.parent {
            let siblings = &mut self.ent(p).children;
            let at = siblings.iter().position(|&c| c == e).unwrap();
            siblings.remove(at);
            if let Some(g) = grandparent {
                let siblings = &mut self.ent(g).children;
                for (k, &c) in x.children.iter().enumerate() {
                    siblings.insert(at + k, c);
                }
            }
        }
        for &c in &x.children {
            self.ent(c).parent = grandparent;
        }
        self.slots[e.slot() as usize] = if e.generation() == TERMINAL_GENERATION {
            self.retired += 1;
            Slot::Retired
        } else {
            self.free.push(e.slot());
            Slot::Free(e.generation() + 1)
        };
    }

    fn is_ancestor_or_self(&self, ancestor: EntityId, mut e: EntityId) -> bool {
        loop {
            if e == ancestor {
                return true;
            }
            match self.get(e).and_then(|x| x.parent) {
                Some(p) => e = p,
                None => return false,
            }
        }
    }

    fn name_live(&self) -> usize {
        self.alive
            .values()
            .filter(|x| !x.name.is_empty())
            .map(|x| NAME_HEADER + x.name.len())
            .sum()
    }

    fn name_cost(name: &str) -> usize {
        if name.is_empty() {
            0
        } else {
            NAME_HEADER + name.len()
        }
    }

    fn key_valid(&self, k: &PersistentObjectKey) -> Result<(), UuidError> {
        self.keys
            .iter()
            .find(|s| s.key == *k)
            .map_or(Ok(()), |s| s.valid)
    }

    fn add_key(&mut self, key: PersistentObjectKey) {
        if !self.keys.iter().any(|s| s.key == key) {
            self.keys.push(KeySpec { key, valid: Ok(()) });
        }
    }

    /// The outliner: roots (parentless, shown) in slot order, each followed by its subtree
    /// depth first, children in order.
    fn outliner(&self) -> Vec<(EntityId, u32, Option<PersistentObjectKey>, String)> {
        fn walk(
            m: &Model,
            e: EntityId,
            depth: u32,
            rows: &mut Vec<(EntityId, u32, Option<PersistentObjectKey>, String)>,
        ) {
            let x = m.get(e).unwrap();
            rows.push((e, depth, x.key.map(|(k, _)| k), x.name.clone()));
            for &c in &x.children {
                walk(m, c, depth + 1, rows);
            }
        }
        let mut rows = Vec::new();
        for x in self.alive.values() {
            // Shown: a binding, a name, children, or protection. `DurableOps::outliner`'s doc
            // lists only "a binding, a name, a parent or children", but a root's row is
            // decided by `Hierarchy::has_links`, which also counts the protection bit: a
            // protected entity with nothing else is listed (kept here as the behaviour; a
            // protected root is the "World Settings" kind of entity an outliner shows).
            let shown =
                x.key.is_some() || !x.name.is_empty() || !x.children.is_empty() || x.protected;
            if x.parent.is_none() && shown {
                walk(self, x.id, 0, &mut rows);
            }
        }
        rows
    }
}

/// Picks a handle: mostly a live one (in slot order), else any handle ever seen (stale,
/// foreign, null included).
fn pick(m: &Model, handles: &[EntityId], i: usize) -> EntityId {
    if i % 5 != 0 && !m.alive.is_empty() {
        let live: Vec<EntityId> = m.alive.values().map(|x| x.id).collect();
        live[(i / 5) % live.len()]
    } else {
        handles[(i / 5) % handles.len()]
    }
}

/// Picks a live entity with the property `want` half the time (when there is one), else as
/// [`pick`]: steers destroys to inner nodes and moves to children.
fn pick_where(m: &Model, handles: &[EntityId], i: usize, want: fn(&Ent) -> bool) -> EntityId {
    let some: Vec<EntityId> = m.alive.values().filter(|x| want(x)).map(|x| x.id).collect();
    if i % 2 == 0 && !some.is_empty() {
        some[(i / 2) % some.len()]
    } else {
        pick(m, handles, i / 2)
    }
}

/// An inner node: a parent and children (a destroy under `ToGrandparent` splices them in).
fn inner(x: &Ent) -> bool {
    x.parent.is_some() && !x.children.is_empty()
}

/// Picks an activation candidate: mostly a live, active, unbound entity, else as [`pick`].
fn pick_unbound(m: &Model, handles: &[EntityId], i: usize) -> EntityId {
    let free: Vec<EntityId> = m
        .alive
        .values()
        .filter(|x| !x.pending && x.key.is_none())
        .map(|x| x.id)
        .collect();
    if i % 5 != 0 && !free.is_empty() {
        free[(i / 5) % free.len()]
    } else {
        pick(m, handles, i / 5)
    }
}

/// Picks a key: mostly a well-formed unbound one, else any key of the pool.
fn pick_key(m: &Model, k: usize) -> PersistentObjectKey {
    let free: Vec<PersistentObjectKey> = m
        .keys
        .iter()
        .filter(|s| s.valid.is_ok() && !m.bound.contains_key(&s.key))
        .map(|s| s.key)
        .collect();
    if k % 5 != 0 && !free.is_empty() {
        free[(k / 5) % free.len()]
    } else {
        m.keys[(k / 5) % m.keys.len()].key
    }
}

fn spawn(
    w: &mut Level,
    m: &mut Model,
    handles: &mut Vec<EntityId>,
    bundle: u8,
    v: u32,
    target: EntityId,
) {
    let (pos, vel, follow) = match bundle {
        0 => (None, None, None),
        1 => (Some(Pos(v)), None, None),
        2 => (Some(Pos(v)), Some(Vel(v ^ 1)), None),
        3 => (None, None, Some(Follow { target })),
        _ => (Some(Pos(v)), Some(Vel(v ^ 1)), Some(Follow { target })),
    };
    let got = match bundle {
        0 => w.create(),
        1 => w.spawn((pos.unwrap(),)),
        2 => w.spawn((pos.unwrap(), vel.unwrap())),
        3 => w.spawn((follow.unwrap(),)),
        _ => w.spawn((pos.unwrap(), vel.unwrap(), follow.unwrap())),
    };
    let want = if !m.structural {
        Err(WorldError::InvalidPhase)
    } else if m.available() == 0 {
        Err(m.capacity_error(1))
    } else {
        Ok(())
    };
    match (got, want) {
        (Ok(e), Ok(())) => {
            assert_eq!(e, m.create(), "LIFO reuse, then fresh slots");
            assert!(!handles.contains(&e), "fresh handle {e:?}");
            handles.push(e);
            let x = m.ent(e);
            (x.pos, x.vel, x.follow) = (pos, vel, follow);
        }
        (Err(got), Err(want)) => assert_eq!(got, want),
        (got, want) => panic!("spawn: {got:?} vs {want:?}"),
    }
}

/// The outcome the model predicts for an activation batch (and applies on success).
fn activate(w: &mut Level, m: &mut Model, batch: &[Activation]) {
    let want = predict_activation(m, batch);
    let got = w.activate(batch);
    assert_eq!(
        got,
        want.map_err(DurableError::Activation),
        "activate {batch:?}"
    );
    if got.is_ok() {
        for c in batch {
            m.bound.insert(c.key, c.entity);
            m.ent(c.entity).key = Some((c.key, c.kind));
        }
        if !batch.is_empty() {
            m.binding_revision += 1;
        }
    }
}

fn predict_activation(m: &mut Model, batch: &[Activation]) -> Result<(), ActivationError> {
    let available = m.bindings - m.bound.len();
    if batch.len() > available {
        return Err(ActivationError::CapacityExhausted {
            requested: batch.len(),
            available,
            capacity: m.bindings,
        });
    }
    for (index, c) in batch.iter().enumerate() {
        let refuse = |reason| Err(ActivationError::Candidate { index, reason });
        if !m.is_active(c.entity) {
            return refuse(CandidateRejection::Entity(m.inactive(c.entity)));
        }
        if let Err(e) = m.key_valid(&c.key) {
            return refuse(CandidateRejection::InvalidKey(e));
        }
        let earlier = &batch[..index];
        let conflict = if let Some((existing, _)) = m.get(c.entity).unwrap().key {
            Some(CandidateRejection::EntityBound { existing })
        } else if let Some(first) = earlier.iter().position(|d| d.entity == c.entity) {
            Some(CandidateRejection::DuplicateEntity { first })
        } else if let Some(&existing) = m.bound.get(&c.key) {
            Some(CandidateRejection::KeyBound { existing })
        } else {
            earlier
                .iter()
                .position(|d| d.key == c.key)
                .map(|first| CandidateRejection::DuplicateKey { first })
        };
        if let Some(reason) = conflict {
            m.conflicts += 1;
            return refuse(reason);
        }
    }
    Ok(())
}

fn destroy_subtree(w: &mut Level, m: &mut Model, e: EntityId) {
    let got = w.destroy_subtree(e);
    let want = if let Err(r) = m.check_alive(e) {
        Err(r)
    } else if m.get(e).unwrap().protected {
        Err(WorldError::Protected)
    } else if !m.structural {
        Err(WorldError::InvalidPhase)
    } else {
        Ok(())
    };
    match (got, want) {
        (Ok(n), Ok(())) => {
            let mut destroyed = 0;
            loop {
                // The deepest first child is a leaf.
                let mut leaf = e;
                while let Some(&c) = m.get(leaf).unwrap().children.first() {
                    leaf = c;
                }
                m.destroy(leaf);
                destroyed += 1;
                if leaf == e {
                    break;
                }
            }
            assert_eq!(n, destroyed);
        }
        (Err(got), Err(want)) => assert_eq!(got, DurableError::World(want)),
        (got, want) => panic!("destroy_subtree {e:?}: {got:?} vs {want:?}"),
    }
}

fn unload(w: &mut Level, m: &mut Model, scope: InstanceId) {
    let got = w.unload(scope);
    let members: Vec<EntityId> = m
        .alive
        .values()
        .filter(|x| x.key.is_some_and(|(k, _)| k.instance == scope))
        .map(|x| x.id)
        .collect();
    let want = if !m.structural {
        Err(WorldError::InvalidPhase)
    } else if members.iter().any(|&e| m.get(e).unwrap().protected) {
        Err(WorldError::Protected)
    } else {
        Ok(members.len())
    };
    assert_eq!(got, want.map_err(DurableError::World), "unload");
    if got.is_ok() {
        m.unloaded.clear();
        for e in members {
            m.unloaded.push(m.get(e).unwrap().key.unwrap().0);
            m.destroy(e);
        }
    }
}

/// Predicts a duplication: the error, or the minted keys (one per bound source, in order).
fn predict_duplicate(
    m: &Model,
    selection: &[EntityId],
    out_len: usize,
    entropy: Entropy,
) -> Result<Vec<PersistentObjectKey>, DurableError> {
    if selection.len() != out_len {
        return Err(DurableError::LengthMismatch {
            selection: selection.len(),
            out: out_len,
        });
    }
    if !m.structural {
        return Err(WorldError::InvalidPhase.into());
    }
    let (mut bound, mut name_bytes) = (0, 0);
    for (i, &e) in selection.iter().enumerate() {
        if !m.is_active(e) {
            return Err(WorldError::Rejected(m.inactive(e)).into());
        }
        let x = m.get(e).unwrap();
        if x.protected {
            return Err(WorldError::Protected.into());
        }
        if selection[..i].contains(&e) {
            return Err(DurableError::DuplicateSelection { index: i });
        }
        bound += usize::from(x.key.is_some());
        name_bytes += Model::name_cost(&x.name);
    }
    let free_bindings = m.bindings - m.bound.len();
    if bound > free_bindings {
        return Err(ActivationError::CapacityExhausted {
            requested: bound,
            available: free_bindings,
            capacity: m.bindings,
        }
        .into());
    }
    let name_free = NAME_BYTES - m.name_live();
    if name_bytes > name_free {
        return Err(HierarchyError::NameBudget {
            requested: name_bytes,
            free: name_free,
            budget: NAME_BYTES,
        }
        .into());
    }
    if m.available() < selection.len() {
        return Err(m.capacity_error(selection.len()).into());
    }
    // Minting: each candidate is checked against the bound keys and those minted so far.
    let mut source = entropy.source();
    let mut minted: Vec<PersistentObjectKey> = Vec::new();
    for &e in selection {
        let Some((key, _)) = m.get(e).unwrap().key else {
            continue;
        };
        let mut found = None;
        for _ in 0..MINT_ATTEMPTS {
            let object = SourceObjectId::mint(&mut *source).map_err(MintError::Entropy)?;
            let candidate = PersistentObjectKey::new(key.instance, object);
            if !m.bound.contains_key(&candidate) && !minted.contains(&candidate) {
                found = Some(candidate);
                break;
            }
        }
        minted.push(found.ok_or(MintError::Conflict(IdentityConflict))?);
    }
    Ok(minted)
}

fn duplicate(
    w: &mut Level,
    m: &mut Model,
    handles: &mut Vec<EntityId>,
    selection: &[EntityId],
    entropy: Entropy,
    long: bool,
) {
    let mut out = vec![EntityId::NULL; selection.len() + usize::from(long)];
    let want = predict_duplicate(m, selection, out.len(), entropy);
    let got = w.duplicate(selection, &mut *entropy.source(), &mut out);
    match (got, want) {
        (Ok(()), Ok(minted)) => {
            let mut copies = Vec::new();
            for _ in selection {
                let e = m.create();
                assert!(!handles.contains(&e), "fresh handle {e:?}");
                handles.push(e);
                copies.push(e);
            }
            assert_eq!(out, copies, "copies take the slots of as many creates");
            let inside = |r: EntityId| selection.iter().position(|&s| s == r).map(|j| copies[j]);
            // Components (references inside the selection rewritten to the copies).
            for (&src, &dst) in selection.iter().zip(&copies) {
                let x = m.get(src).unwrap().clone();
                let y = m.ent(dst);
                y.pos = x.pos;
                y.vel = x.vel;
                y.follow = x.follow.map(|f| Follow {
                    target: inside(f.target).unwrap_or(f.target),
                });
            }
            // Parents, names and keys, in selection order.
            let mut k = 0;
            for (&src, &dst) in selection.iter().zip(&copies) {
                let x = m.get(src).unwrap().clone();
                let parent = x.parent.map(|p| inside(p).unwrap_or(p));
                if let Some(p) = parent {
                    m.ent(p).children.push(dst);
                }
                let y = m.ent(dst);
                y.parent = parent;
                y.name = x.name.clone();
                if let Some((key, kind)) = x.key {
                    let new = minted[k];
                    k += 1;
                    assert_eq!(new.instance, key.instance);
                    y.key = Some((new, kind));
                    m.bound.insert(new, dst);
                    m.add_key(new);
                }
            }
            if k > 0 {
                m.binding_revision += 1;
            }
        }
        (Err(got), Err(want)) => assert_eq!(got, want, "duplicate {selection:?} {entropy:?}"),
        (got, want) => panic!("duplicate {selection:?} {entropy:?}: {got:?} vs {want:?}"),
    }
}

/// Everything observable, compared with the model.
fn check(
    w: &mut Level,
    foreign: &Level,
    foreign_keys: &[(PersistentObjectKey, EntityId)],
    m: &Model,
    handles: &[EntityId],
    step: &str,
) {
    let ctx = || format!("after {step}");
    for &h in handles {
        let x = m.get(h);
        assert_eq!(
            w.registry.is_alive(h),
            x.is_some(),
            "alive {h:?}, {}",
            ctx()
        );
        assert_eq!(
            w.registry.is_active(h),
            m.is_active(h),
            "active {h:?}, {}",
            ctx()
        );
        assert_eq!(
            w.key_of(h),
            x.and_then(|x| x.key.map(|(k, _)| k)),
            "key_of {h:?}, {}",
            ctx()
        );
        assert_eq!(
            w.durable().bindings().binding_of(h),
            x.and_then(|x| x.key),
            "binding_of {h:?}, {}",
            ctx()
        );
        assert_eq!(
            w.is_protected(h),
            x.is_some_and(|x| x.protected),
            "protected {h:?}, {}",
            ctx()
        );
        let kids: Vec<EntityId> = w.children(h).collect();
        assert_eq!(
            kids,
            x.map_or(Vec::new(), |x| x.children.clone()),
            "children of {h:?}, {}",
            ctx()
        );
        match x {
            Some(x) => {
                assert_eq!(w.parent(h), Ok(x.parent), "parent of {h:?}, {}", ctx());
                assert_eq!(w.name(h), Ok(x.name.as_str()), "name of {h:?}, {}", ctx());
            }
            None => {
                let why = DurableError::World(m.check_alive(h).unwrap_err());
                assert_eq!(w.parent(h), Err(why), "parent of {h:?}, {}", ctx());
                assert_eq!(w.name(h), Err(why), "name of {h:?}, {}", ctx());
            }
        }
        assert_eq!(
            w.get::<Pos>(h).copied(),
            x.and_then(|x| x.pos),
            "Pos of {h:?}, {}",
            ctx()
        );
        assert_eq!(
            w.get::<Vel>(h).copied(),
            x.and_then(|x| x.vel),
            "Vel of {h:?}, {}",
            ctx()
        );
        assert_eq!(
            w.get::<Follow>(h).copied(),
            x.and_then(|x| x.follow),
            "Follow of {h:?}, {}",
            ctx()
        );
        // The foreign world never knows this world's handles.
        if h.owner() != foreign.registry.owner() {
            assert_eq!(foreign.key_of(h), None, "foreign key_of {h:?}, {}", ctx());
        }
    }
    // Every key of the pool (bound, unbound, stale, minted, malformed).
    let resident = instance(INSTANCES - 1);
    let catalog = |k: &PersistentObjectKey| {
        if k.instance == resident {
            CatalogEntry::NotResident
        } else {
            CatalogEntry::Unknown
        }
    };
    for spec in &m.keys {
        let k = &spec.key;
        let (want, with_catalog) = match (m.bound.get(k), spec.valid) {
            (Some(&e), _) => (Resolution::Resolved(e), Resolution::Resolved(e)),
            (None, Err(err)) => {
                let r = Resolution::InvalidReference(InvalidReference::Key(err));
                (r, r)
            }
            (None, Ok(())) if k.instance == resident => {
                (Resolution::Missing, Resolution::NotResident)
            }
            (None, Ok(())) => (Resolution::Missing, Resolution::Missing),
        };
        assert_eq!(w.resolve(k), want, "resolve {k}, {}", ctx());
        assert_eq!(
            w.resolve_with(k, None, &catalog),
            with_catalog,
            "resolve_with {k}, {}",
            ctx()
        );
        if let Some(&e) = m.bound.get(k) {
            let kind = m.get(e).unwrap().key.unwrap().1;
            let other = BindingKind(kind.0 + 1);
            assert_eq!(
                w.resolve_with(k, Some(kind), &NoCatalog),
                Resolution::Resolved(e)
            );
            assert_eq!(
                w.resolve_with(k, Some(other), &NoCatalog),
                Resolution::TypeMismatch {
                    entity: e,
                    found: kind
                },
                "{}",
                ctx()
            );
        }
    }
    // The foreign world is untouched and separate.
    for &(k, e) in foreign_keys {
        assert_eq!(foreign.resolve(&k), Resolution::Resolved(e));
        assert_eq!(foreign.key_of(e), Some(k));
        assert_eq!(w.key_of(e), None, "a foreign handle reports no key here");
    }
    assert!(foreign.durable().bindings().check_consistent());
    // The table's own view, in slot order.
    let table: Vec<_> = w.durable().bindings().iter().collect();
    let model: Vec<_> = m
        .alive
        .values()
        .filter_map(|x| x.key.map(|(k, kind)| (k, x.id, kind)))
        .collect();
    assert_eq!(table, model, "binding table, {}", ctx());
    assert!(
        w.durable().bindings().check_consistent(),
        "bindings consistent, {}",
        ctx()
    );
    assert!(w.check_groups(), "groups, {}", ctx());
    assert!(w.check_pools(), "pool indexes, {}", ctx());
    let grouped = m
        .alive
        .values()
        .filter(|x| x.pos.is_some() && x.vel.is_some())
        .count();
    assert_eq!(w.moving().0.len(), grouped, "group size, {}", ctx());
    assert_eq!(
        w.binding_revision(),
        m.binding_revision,
        "binding revision, {}",
        ctx()
    );
    assert_eq!(w.durable().orphan_policy(), m.policy);
    let rows: Vec<(EntityId, u32, Option<PersistentObjectKey>, String)> = w
        .outliner()
        .map(|r| (r.entity, r.depth, r.key, r.name.to_string()))
        .collect();
    assert_eq!(rows, m.outliner(), "outliner, {}", ctx());
    let peak = m.slots[..m.high as usize]
        .iter()
        .map(|s| match *s {
            Slot::Never(g) | Slot::Live(g) | Slot::Free(g) => g,
            Slot::Retired => TERMINAL_GENERATION,
        })
        .max()
        .unwrap_or(0);
    let want = WorldCounts {
        capacity: m.slots.len(),
        live: m.alive.len(),
        pending: m.alive.values().filter(|x| x.pending).count(),
        free: m.available(),
        retired: m.retired,
        peak_generation: peak,
        bindings: m.bound.len(),
        binding_capacity: m.bindings,
        binding_conflicts: m.conflicts,
        probe_limit_hits: 0,
        unresolved_references: m.unresolved,
        stale_completions: 0,
        linked: m.alive.values().filter(|x| x.parent.is_some()).count(),
        name_bytes: m.name_live(),
        name_budget: NAME_BYTES,
    };
    assert_eq!(w.counts(), want, "counts, {}", ctx());
}

/// Applies `ops` to a fresh world and the model, comparing after every step; `colliding`: the
/// key pool's objects collide under the table's secret (set through the test hook).
fn run(ops: Vec<Op>, size: Size, colliding: bool) {
    let config = DurableConfig {
        name_bytes: NAME_BYTES,
        bindings: size.bindings,
        orphans: OrphanPolicy::Detach,
        ..DurableConfig::default()
    };
    let mut w = Level::try_new_durable(size.capacity, config).unwrap();
    // Slot 1 starts one step before the terminal generation: it retires after two destroys.
    assert!(w.test_hook_advance_free_generation(1, TERMINAL_GENERATION - 1));
    // A second world binding some of the same keys; its entities share slots and generations
    // with this world's first ones.
    let mut foreign = Level::try_new_durable(size.capacity, config).unwrap();
    let pool = key_pool(colliding);
    if colliding {
        w.test_hook_set_binding_secret(colliding_secret());
    }
    let mut foreign_keys = Vec::new();
    let mut handles = vec![EntityId::NULL];
    for (i, spec) in pool.iter().take(3).enumerate() {
        let f = foreign.spawn((Pos(i as u32),)).unwrap();
        foreign.activate(&[Activation::new(f, spec.key)]).unwrap();
        foreign.set_name(f, "foreign").unwrap();
        foreign_keys.push((spec.key, f));
        handles.push(f);
    }
    let mut slots = vec![Slot::Never(1); size.capacity];
    slots[1] = Slot::Never(TERMINAL_GENERATION - 1);
    let mut m = Model {
        owner: w.registry.owner(),
        bindings: size.bindings,
        slots,
        free: Vec::new(),
        high: 0,
        retired: 0,
        alive: BTreeMap::new(),
        bound: HashMap::new(),
        binding_revision: 0,
        conflicts: 0,
        unresolved: 0,
        policy: OrphanPolicy::Detach,
        structural: true,
        recorded: Vec::new(),
        unloaded: Vec::new(),
        keys: pool,
    };
    let mut cmd = CommandBuffer::try_with_capacity(COMMANDS, 64).unwrap();
    check(&mut w, &foreign, &foreign_keys, &m, &handles, "init");
    for (step, op) in ops.into_iter().enumerate() {
        let op_name = format!("step {step}: {op:?}");
        match op {
            Op::Spawn(bundle, v, t) => {
                let target = pick(&m, &handles, t);
                spawn(&mut w, &mut m, &mut handles, bundle, v, target);
            }
            Op::Destroy(i) => {
                let e = pick_where(&m, &handles, i, inner);
                let want = if !m.structural {
                    Err(WorldError::InvalidPhase)
                } else if let Err(r) = m.check_alive(e) {
                    Err(r)
                } else if m.get(e).unwrap().protected {
                    Err(WorldError::Protected)
                } else {
                    Ok(())
                };
                assert_eq!(w.destroy(e), want, "destroy {e:?}");
                if want.is_ok() {
                    m.destroy(e);
                }
            }
            Op::CmdDestroy(i) => {
                let e = pick_where(&m, &handles, i, inner);
                let got = cmd.destroy(&w.registry, e);
                if m.recorded.len() >= COMMANDS {
                    assert!(
                        matches!(got, Err(CommandError::BufferFull { .. })),
                        "{got:?}"
                    );
                } else if !m.is_active(e) {
                    assert_eq!(got, Err(CommandError::Rejected(m.inactive(e))));
                } else {
                    assert_eq!(got, Ok(()));
                    m.ent(e).pending = true;
                    m.recorded.push(e);
                }
            }
            Op::Commit => {
                let mut want = if m.structural {
                    Ok(())
                } else {
                    Err(WorldError::InvalidPhase)
                };
                if want.is_ok() {
                    for &e in &m.recorded {
                        if let Err(r) = m.check_alive(e) {
                            want = Err(r);
                            break;
                        }
                        if m.get(e).unwrap().protected {
                            want = Err(WorldError::Protected);
                            break;
                        }
                    }
                }
                assert_eq!(w.commit(&mut cmd), want, "commit of {:?}", m.recorded);
                let recorded = std::mem::take(&mut m.recorded);
                if want.is_ok() {
                    for e in recorded {
                        m.destroy(e);
                    }
                } else {
                    // Drop the batch: its pending marks are cleared.
                    cmd.clear(&w.registry).unwrap();
                    for e in recorded {
                        if let Some(x) = m.get_mut(e) {
                            x.pending = false;
                        }
                    }
                }
                assert!(cmd.is_empty());
            }
            Op::Phase(open) => {
                if open {
                    w.begin_structural();
                } else {
                    w.end_structural();
                }
                m.structural = open;
            }
            Op::Activate(cands) => {
                let batch: Vec<Activation> = cands
                    .iter()
                    .map(|&(e, k, kind)| Activation {
                        entity: pick_unbound(&m, &handles, e),
                        key: pick_key(&m, k),
                        kind: BindingKind(u32::from(kind)),
                    })
                    .collect();
                activate(&mut w, &mut m, &batch);
            }
            Op::ResolveRequired(k, kind) => {
                let key = m.keys[k % m.keys.len()].key;
                let kind = kind.map(|k| BindingKind(u32::from(k)));
                let got = w.resolve_required(&key, kind, &NoCatalog);
                let want = w.resolve_with(&key, kind, &NoCatalog);
                match m.bound.get(&key) {
                    Some(&e) if kind.is_none_or(|k| m.get(e).unwrap().key.unwrap().1 == k) => {
                        assert_eq!(got, Ok(e));
                    }
                    _ => {
                        assert_eq!(got, Err(want));
                        assert!(want.entity().is_none());
                        m.unresolved += 1;
                    }
                }
            }
            Op::Unload(i) => unload(&mut w, &mut m, instance(u128::from(i))),
            Op::Reload => {
                if m.structural {
                    let keys: Vec<PersistentObjectKey> = m
                        .unloaded
                        .iter()
                        .copied()
                        .filter(|k| !m.bound.contains_key(k))
                        .take(m.available().min(m.bindings - m.bound.len()))
                        .collect();
                    let mut batch = Vec::new();
                    for k in keys {
                        let e = w.create().unwrap();
                        assert_eq!(e, m.create());
                        assert!(!handles.contains(&e), "reload gives fresh handles");
                        handles.push(e);
                        batch.push(Activation::new(e, k));
                    }
                    activate(&mut w, &mut m, &batch);
                    for a in &batch {
                        assert_eq!(w.resolve(&a.key), Resolution::Resolved(a.entity));
                    }
                }
            }
            Op::SetParent(c, p) => {
                let child = pick(&m, &handles, c);
                let parent = p.map(|p| pick(&m, &handles, p));
                let want = if let Err(r) = m.check_alive(child) {
                    Err(DurableError::World(r))
                } else if m.get(child).unwrap().protected {
                    Err(HierarchyError::Protected.into())
                } else if let Some(Err(r)) = parent.map(|p| m.check_alive(p)) {
                    Err(DurableError::World(r))
                } else if parent.is_some_and(|p| m.is_ancestor_or_self(child, p)) {
                    Err(HierarchyError::Cycle.into())
                } else {
                    Ok(())
                };
                assert_eq!(
                    w.set_parent(child, parent),
                    want,
                    "set_parent {child:?} {parent:?}"
                );
                if want.is_ok() {
                    if let Some(old) = m.ent(child).parent.take() {
                        m.ent(old).children.retain(|&x| x != child);
                    }
                    if let Some(p) = parent {
                        m.ent(p).children.push(child);
                    }
                    m.ent(child).parent = parent;
                }
            }
            Op::MoveChild(c, index) => {
                let child = pick_where(&m, &handles, c, |x| x.parent.is_some());
                let index = usize::from(index);
                let want = match m.check_alive(child) {
                    Err(r) => Err(DurableError::World(r)),
                    Ok(()) => match m.get(child).unwrap().parent {
                        None => Err(HierarchyError::NotAChild.into()),
                        Some(p) => {
                            let len = m.get(p).unwrap().children.len();
                            if index >= len {
                                Err(HierarchyError::ChildIndex { index, len }.into())
                            } else {
                                Ok(p)
                            }
                        }
                    },
                };
                assert_eq!(
                    w.move_child(child, index),
                    want.map(|_| ()),
                    "move_child {child:?} {index}"
                );
                if let Ok(p) = want {
                    let kids = &mut m.ent(p).children;
                    kids.retain(|&x| x != child);
                    kids.insert(index, child);
                }
            }
            Op::Policy(to_grandparent) => {
                let policy = if to_grandparent {
                    OrphanPolicy::ToGrandparent
                } else {
                    OrphanPolicy::Detach
                };
                w.set_orphan_policy(policy);
                m.policy = policy;
            }
            Op::DestroySubtree(i) => {
                let e = pick(&m, &handles, i);
                destroy_subtree(&mut w, &mut m, e);
            }
            Op::SetName(i, n) => {
                let e = pick(&m, &handles, i);
                let name = NAMES[usize::from(n)];
                let want = match m.check_alive(e) {
                    Err(r) => Err(DurableError::World(r)),
                    Ok(()) => {
                        let old = Model::name_cost(&m.get(e).unwrap().name);
                        let need = Model::name_cost(name);
                        let free = NAME_BYTES - (m.name_live() - old);
                        if need > free {
                            Err(HierarchyError::NameBudget {
                                requested: need,
                                free,
                                budget: NAME_BYTES,
                            }
                            .into())
                        } else {
                            Ok(())
                        }
                    }
                };
                assert_eq!(w.set_name(e, name), want, "set_name {e:?} {name:?}");
                if want.is_ok() {
                    m.ent(e).name = name.to_string();
                }
            }
            Op::SetProtected(i, on) => {
                let e = pick(&m, &handles, i);
                let want = match m.check_alive(e) {
                    Err(r) => Err(DurableError::World(r)),
                    Ok(()) if on && m.get(e).unwrap().parent.is_some() => {
                        Err(HierarchyError::NotRoot.into())
                    }
                    Ok(()) => Ok(()),
                };
                assert_eq!(w.set_protected(e, on), want, "set_protected {e:?} {on}");
                if want.is_ok() {
                    m.ent(e).protected = on;
                }
            }
            Op::Duplicate(picks, entropy, long) => {
                let selection: Vec<EntityId> =
                    picks.iter().map(|&i| pick(&m, &handles, i)).collect();
                duplicate(&mut w, &mut m, &mut handles, &selection, entropy, long);
            }
            Op::SetFollow(i, t) => {
                let e = pick(&m, &handles, i);
                let target = pick(&m, &handles, t);
                let want = if !m.structural {
                    Err(WorldError::InvalidPhase)
                } else {
                    m.check_alive(e)
                };
                let prev = m.get(e).and_then(|x| x.follow);
                assert_eq!(w.insert(e, Follow { target }), want.map(|()| prev));
                if want.is_ok() {
                    m.ent(e).follow = Some(Follow { target });
                }
            }
            Op::ToggleVel(i, v) => {
                let e = pick(&m, &handles, i);
                let want = if !m.structural {
                    Err(WorldError::InvalidPhase)
                } else {
                    m.check_alive(e)
                };
                let prev = m.get(e).and_then(|x| x.vel);
                if prev.is_some() {
                    assert_eq!(w.remove::<Vel>(e), want.map(|()| prev));
                    if want.is_ok() {
                        m.ent(e).vel = None;
                    }
                } else {
                    assert_eq!(w.insert(e, Vel(v)), want.map(|()| None));
                    if want.is_ok() {
                        m.ent(e).vel = Some(Vel(v));
                    }
                }
            }
        }
        check(&mut w, &foreign, &foreign_keys, &m, &handles, &op_name);
    }
}

/// A case the model found: two bound sources in two instance scopes, one fixed id for both
/// copies (so the two new keys differ only in their scope) and keys whose hashes are equal (a
/// leaked secret). A reservation matches its own key only: matching every key with its tag
/// would refuse the second one as taken (`MintError::Conflict`) though no key was bound or
/// reserved twice.
#[test]
fn a_reservation_is_matched_by_its_whole_key() {
    let mut w = Level::try_new_durable(4, DurableConfig::default()).unwrap();
    w.test_hook_set_binding_secret(colliding_secret());
    let (a, b) = (w.create().unwrap(), w.create().unwrap());
    w.activate(&[
        Activation::new(
            a,
            PersistentObjectKey::new(instance(0), colliding_object(0)),
        ),
        Activation::new(
            b,
            PersistentObjectKey::new(instance(1), colliding_object(1)),
        ),
    ])
    .unwrap();
    let mut out = [EntityId::NULL; 2];
    assert_eq!(
        w.duplicate(&[a, b], &mut FixedEntropy::new([0; 16]), &mut out),
        Ok(()),
        "two different keys (same object id, two scopes) are both free"
    );
    let object = SourceObjectId::mint(&mut FixedEntropy::new([0; 16])).unwrap();
    assert_eq!(
        w.key_of(out[0]),
        Some(PersistentObjectKey::new(instance(0), object))
    );
    assert_eq!(
        w.key_of(out[1]),
        Some(PersistentObjectKey::new(instance(1), object))
    );
}

/// The properties' configuration: `cases` cases, `miri_cases` under Miri (far slower).
fn config(cases: u32, miri_cases: u32) -> ProptestConfig {
    let mut config = crate::support::proptest_config(cases, miri_cases);
    // ChaCha (the default generator) dominates the run time of an unoptimized build.
    config.rng_algorithm = proptest::test_runner::RngAlgorithm::XorShift;
    config
}

/// Ops per case (short sequences, many cases).
const LEN: usize = if cfg!(miri) { 10 } else { 48 };
/// Most spawns before the colliding property's operations.
const CROWD: usize = if cfg!(miri) { 9 } else { LARGE.capacity };

// 10,000 cases in all (6 under Miri).
proptest! {
    #![proptest_config(config(5_000, 4))]

    #[test]
    fn durable_world_matches_model(ops in ops()) {
        run(ops, SMALL, false);
    }
}

proptest! {
    #![proptest_config(config(5_000, 2))]

    /// The same in a larger world starting under the grandparent orphan policy, with keys that
    /// collide in the binding table (the pool's keys share one hash) and a well-filled table.
    #[test]
    fn durable_world_matches_model_colliding_keys(ops in crowded_ops()) {
        let mut ops = ops;
        ops.insert(0, Op::Policy(true));
        run(ops, LARGE, true);
    }
}
