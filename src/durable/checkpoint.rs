//! Checkpoints keyed by stable ids, their canonical bytes and SHA-256 digest, restore, and
//! deterministic replay of a transaction log.
//!
//! A [`Checkpoint`] holds, per entity with a stable id — spawned or authored, one identity
//! per entity (see [`persistent`](crate::durable::PersistentOps)) — the id, its identity
//! record, its name, its parent and position among the parent's children, its binding (key and
//! kind), whether it is protected, and every component value by roster name — never a handle,
//! owner, slot or address: a parent and a value's references are stable ids
//! ([`ComponentValue`]), so a restore puts every link back on its restored target and the
//! digest covers links, names, bindings and the hierarchy. Its canonical encoding (below)
//! sorts entities by id and components by name, so the digest is independent of slot order,
//! dense order and hash order:
//!
//! ```text
//! "ludus.checkpoint.v4\0"
//! schema:                     components: u32 LE, per component ascending by name:
//!                             name length: u32 LE, name, size: u32 LE, align: u32 LE,
//!                             entity fields: u32 LE, per field its offset: u32 LE
//! entities: u64 LE
//! per entity, ascending id:   namespace tag: u8, key: [u8; 32], has identity: u8,
//!                             components: u32 LE,
//!                             name length: u32 LE, name,
//!                             label length: u32 LE, label,
//!                             parent: 0: u8 for a root, else its namespace tag: u8,
//!                             key: [u8; 32] and the position among its children: u32 LE,
//!                             binding: 0: u8 for none, else 1: u8, key: [u8; 32],
//!                             kind: u32 LE,
//!                             protected: u8,
//!                             per component ascending by name:
//!                             name length: u32 LE, name, value length: u32 LE, value bytes,
//!                             references: u32 LE, per reference: namespace tag: u8 (0: no
//!                             target), key: [u8; 32] (zero for no target)
//! ```
//!
//! Values are the components' bytes in the machine's byte order (little-endian on every
//! platform ludus is built for), every entity-typed field zero; a component without entity
//! fields has no references.

use core::any::TypeId;

use crate::world::Component;
use allocator_api2::alloc::Allocator;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::buckets::bucket_sort;
use crate::durable::binding::{
    check_key, Activation, ActivationError, BindingKind, CandidateRejection,
};
use crate::durable::error::DurableError;
use crate::durable::hierarchy::{first_cycle, Hierarchy, HierarchyError, MAX_NAME_LEN};
use crate::durable::persistent::{
    check_persistent_world, create_bound, holds_value, identified, insert_values, is_canonical,
    refs_well_formed, schema, ComponentValue, PersistentOps, Transaction, TxError,
    IDENTITY_COMPONENT,
};
use crate::durable::tables::Durable;
use crate::durable::tables::{enabled_mut, has_refs_of, rewrite_refs_of, DurableRoster};
use crate::hint::prefetch_bytes;
use crate::identity::{PersistentId, PersistentObjectKey, TERMINAL_GENERATION};
use crate::world::raw::keys::EntityId;
use crate::world::store::error::WorldError;
use crate::world::store::pool::ComponentPool;
use crate::world::store::roster::{ComponentList, PoolsRefList, Roster, TypeVisitor};

/// The checkpoint format name.
pub const CHECKPOINT_FORMAT: &str = "ludus.checkpoint";
/// The checkpoint version: 4 (authored entities with their bindings, and protection; version 3
/// had spawned entities only, version 2 no names or hierarchy, version 1 raw handles: all
/// refused).
pub const CHECKPOINT_VERSION: u32 = 4;
/// The replay-log format name.
pub const REPLAY_FORMAT: &str = "ludus.replay";

/// One entity of a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointEntity {
    /// Its stable id.
    pub id: PersistentId,
    /// Its identity record (`persistent_identity`): required and equal to `id` in the
    /// spawned namespace, equal to `id` whenever present.
    pub identity: Option<PersistentId>,
    /// Its name (`""`: none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Its label (`""`: none; else the legacy-id rule).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label: String,
    /// Its parent, an entity of the checkpoint (`None`: a root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<PersistentId>,
    /// Its position among its parent's children that have a stable id (a restore links each
    /// parent's children in ascending position; 0 for a root).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub position: u32,
    /// Its binding: required for an authored id, whose key is the id's 32 bytes; a spawned
    /// entity may be bound too (its key then also resolves it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binding: Option<EntityBinding>,
    /// Whether it is protected (only a root can be).
    #[serde(default, skip_serializing_if = "is_false")]
    pub protected: bool,
    /// Its component values, by roster name (ascending in a canonical checkpoint).
    pub components: Vec<ComponentValue>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// An entity's binding in a checkpoint: its key and kind ([`BindingKind`]'s number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntityBinding {
    /// The binding key.
    pub key: PersistentObjectKey,
    /// The binding kind.
    pub kind: u32,
}

/// The state of every entity with a stable id (module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// [`CHECKPOINT_FORMAT`].
    pub format: String,
    /// [`CHECKPOINT_VERSION`].
    pub version: u32,
    /// The shape of every component of the roster that wrote it, ascending by name
    /// ([`ComponentShape::roster`]): a restore refuses a checkpoint of another shape.
    pub schema: Vec<ComponentShape>,
    /// Entities in ascending id order.
    pub entities: Vec<CheckpointEntity>,
}

/// The shape of one roster component, as a checkpoint records it: its roster name, the size
/// and alignment of its type, and the byte offset of each entity-typed field (in the
/// order its [`EntityRefs`](crate::durable::EntityRefs) impl visits them). Two rosters whose
/// components have the same shapes read each other's values the same way; any other
/// difference refuses the restore ([`CheckpointError::Schema`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentShape {
    /// The roster name.
    pub name: String,
    /// `size_of` the component type.
    pub size: u32,
    /// `align_of` the component type.
    pub align: u32,
    /// The offset of each entity-typed field (`u32::MAX`: a visited entity that is no field
    /// of the value).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entity_fields: Vec<u32>,
}

impl ComponentShape {
    /// The shapes of `W`'s components, ascending by name.
    pub fn roster<W: DurableRoster>() -> Vec<ComponentShape> {
        struct Shapes(Vec<(TypeId, u32, u32)>);
        impl TypeVisitor for Shapes {
            fn visit<T: Component>(&mut self) {
                self.0.push((
                    TypeId::of::<T>(),
                    core::mem::size_of::<T>() as u32,
                    core::mem::align_of::<T>() as u32,
                ));
            }
        }
        let mut shapes = Shapes(Vec::new());
        W::Components::each(&mut shapes);
        let mut out: Vec<ComponentShape> = W::NAMES
            .iter()
            .zip(shapes.0)
            .map(|(name, (ty, size, align))| ComponentShape {
                name: (*name).to_owned(),
                size,
                align,
                entity_fields: entity_fields::<W>(ty, size as usize),
            })
            .collect();
        out.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        out
    }
}

/// The offset of each entity field of `W`'s component type `ty` (`size` bytes): a zeroed value
/// (a valid one: `EntityRefs: Zeroable`) whose visited fields are set to distinct markers,
/// each marker then found in its bytes.
fn entity_fields<W: DurableRoster>(ty: TypeId, size: usize) -> Vec<u32> {
    let marker =
        |k: usize| EntityId::from_raw_parts(0xa5a5_5a5a_c3c3_3c3c, k as u32 + 1, 0x5a5a_a5a5);
    let mut value = vec![0u8; size];
    let mut visited = 0;
    rewrite_refs_of::<W>(ty, &mut value, &mut |_, e| {
        *e = marker(visited);
        visited += 1;
    });
    (0..visited)
        .map(|k| {
            let m = bytemuck::bytes_of(&marker(k)).to_vec();
            value
                .windows(m.len())
                .position(|w| w == m.as_slice())
                .map_or(u32::MAX, |at| at as u32)
        })
        .collect()
}

/// Why a checkpoint (or replay log) was refused; the world is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    /// Unknown format name or version.
    #[error("unsupported checkpoint format {format} version {version}")]
    Format {
        /// The format given.
        format: String,
        /// The version given.
        version: u32,
    },
    /// Entities are not in strictly ascending id order (unsorted or repeated).
    #[error("entity {index}: ids unsorted or repeated")]
    Order {
        /// Position.
        index: usize,
    },
    /// A spawned-namespace entity without its identity record.
    #[error("entity {index}: identity removed")]
    IdentityMissing {
        /// Position.
        index: usize,
    },
    /// An identity record that differs from the entity's id.
    #[error("entity {index}: forged identity")]
    IdentityForged {
        /// Position.
        index: usize,
    },
    /// An id that is not canonical, or whose key bytes equal another entity's (a spawned and
    /// an authored id can share them).
    #[error("entity {index}: id not canonical or its key bytes repeated")]
    Id {
        /// Position.
        index: usize,
    },
    /// A component the world does not name, of the wrong size, holding no valid value (a
    /// `bool` byte other than 0 or 1), repeated, the reserved identity name, or whose
    /// references are malformed (entity fields not null, not one identity per field).
    #[error("entity {index}: bad component {component}")]
    Component {
        /// Position.
        index: usize,
        /// The component.
        component: String,
    },
    /// A component references an id that is not one of the checkpoint's entities.
    #[error("entity {index}: component {component} references {target}, not in the checkpoint")]
    UnresolvedReference {
        /// Position.
        index: usize,
        /// The component.
        component: String,
        /// The identity referenced.
        target: PersistentId,
    },
    /// An authored entity whose binding is missing or whose key is not its id's bytes, a
    /// binding key that is not two nonnil version-4 UUIDs or that two entities share, or a
    /// protected entity that is not a root.
    #[error("entity {index}: its binding or protection cannot be restored")]
    Binding {
        /// Position.
        index: usize,
    },
    /// A parent that is not an entity of the checkpoint, or parent links that form a cycle.
    #[error("entity {index}: its parent is not in the checkpoint, or the links loop")]
    Parent {
        /// Position.
        index: usize,
    },
    /// Writing a checkpoint: an entity's parent is a live entity without a stable id, which no
    /// checkpoint can name (never dropped: refused).
    #[error("{id}: its parent has no stable id")]
    UnidentifiedParent {
        /// The child.
        id: PersistentId,
    },
    /// Writing a checkpoint: an entity's component references a live entity without a
    /// stable id, which no checkpoint can name (never dropped: refused).
    #[error("{id}: component {component} references a live entity without a stable id")]
    UnidentifiedReference {
        /// The referencing entity.
        id: PersistentId,
        /// The component.
        component: String,
    },
    /// The checkpoint was written by a roster of another shape: `component` is the first name
    /// (ascending) whose shape differs or that only one of the two has.
    #[error("the checkpoint's component {component} has another shape than this world's")]
    Schema {
        /// The component.
        component: String,
    },
    /// The world refused (phase, capacity, budgets, disabled).
    #[error(transparent)]
    World(#[from] DurableError),
}

/// Bytes of an entity's header: tag, key, identity flag, component count.
const ENTITY_HEADER: usize = 1 + 32 + 1 + 4;

/// The canonical encoding's first bytes (format and version).
const MAGIC: &[u8; 20] = b"ludus.checkpoint.v4\0";

/// Bytes of an encoded reference: namespace tag (0: none), key.
const REF: usize = 33;

/// Bytes of an encoded binding and protection, at most: flag, key, kind, protected.
const BINDING: usize = 1 + 32 + 4 + 1;

/// Appends a parent as encoded: `0` for a root, else its namespace tag, key and the
/// position (`parent` as [`ref_bytes`] makes it).
fn push_parent(out: &mut Vec<u8>, parent: &[u8; REF], position: u32) {
    if parent[0] == 0 {
        out.push(0);
    } else {
        out.extend_from_slice(parent);
        out.extend_from_slice(&position.to_le_bytes());
    }
}

/// Appends the encoding's head: the format line, the schema and the entity count.
fn push_head(out: &mut Vec<u8>, schema: &[ComponentShape], entities: usize) {
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&len32(schema.len()));
    for c in schema {
        out.extend_from_slice(&len32(c.name.len()));
        out.extend_from_slice(c.name.as_bytes());
        out.extend_from_slice(&c.size.to_le_bytes());
        out.extend_from_slice(&c.align.to_le_bytes());
        out.extend_from_slice(&len32(c.entity_fields.len()));
        c.entity_fields
            .iter()
            .for_each(|f| out.extend_from_slice(&f.to_le_bytes()));
    }
    out.extend_from_slice(&(entities as u64).to_le_bytes());
}

/// Appends a binding as encoded (`0` for none, else `1`, key, kind) and the protection byte.
fn push_binding(
    out: &mut Vec<u8>,
    binding: Option<(PersistentObjectKey, BindingKind)>,
    protected: bool,
) {
    match binding {
        None => out.push(0),
        Some((key, kind)) => {
            out.push(1);
            out.extend_from_slice(bytemuck::bytes_of(&key));
            out.extend_from_slice(&kind.0.to_le_bytes());
        }
    }
    out.push(u8::from(protected));
}

/// A binding and protection as [`push_binding`] encodes them, at a fixed size: flag, key and
/// kind (zero when unbound), protected.
fn staged_binding(
    binding: Option<(PersistentObjectKey, BindingKind)>,
    protected: bool,
) -> [u8; BINDING] {
    let mut b = [0u8; BINDING];
    if let Some((key, kind)) = binding {
        b[0] = 1;
        b[1..33].copy_from_slice(bytemuck::bytes_of(&key));
        b[33..37].copy_from_slice(&kind.0.to_le_bytes());
    }
    b[BINDING - 1] = u8::from(protected);
    b
}

/// A reference as encoded: `[0; 33]` for none.
fn ref_bytes(id: Option<&PersistentId>) -> [u8; REF] {
    let mut b = [0u8; REF];
    if let Some(id) = id {
        b[0] = id.namespace_tag() as u8;
        b[1..].copy_from_slice(&id.key_bytes());
    }
    b
}

/// A length as 4 little-endian bytes (saturating: only a value of 4 GiB or more, which no
/// restore accepts, could exceed it).
fn len32(n: usize) -> [u8; 4] {
    u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes()
}

/// Writes the canonical encoding.
struct Encoder {
    out: Vec<u8>,
}

impl Encoder {
    /// An encoder for `entities` entities of at most `per_entity` bytes each.
    /// The encoding's head: the format line, the schema and the entity count.
    fn new(schema: &[ComponentShape], entities: usize, reserve: usize) -> Self {
        let mut out = Vec::with_capacity(reserve);
        push_head(&mut out, schema, entities);
        Self { out }
    }

    fn entity(&mut self, e: &CheckpointEntity) {
        let id = &e.id;
        self.entity_raw(
            id.namespace_tag() as u8,
            &id.key_bytes(),
            e.identity.is_some(),
            e.components.len(),
        );
        self.out.extend_from_slice(&len32(e.name.len()));
        self.out.extend_from_slice(e.name.as_bytes());
        self.out.extend_from_slice(&len32(e.label.len()));
        self.out.extend_from_slice(e.label.as_bytes());
        push_parent(&mut self.out, &ref_bytes(e.parent.as_ref()), e.position);
        push_binding(
            &mut self.out,
            e.binding.map(|b| (b.key, BindingKind(b.kind))),
            e.protected,
        );
    }

    fn entity_raw(&mut self, tag: u8, key: &[u8; 32], identity: bool, components: usize) {
        self.out.push(tag);
        self.out.extend_from_slice(key);
        self.out.push(u8::from(identity));
        self.out.extend_from_slice(&len32(components));
    }

    fn component(&mut self, c: &ComponentValue) {
        self.out.extend_from_slice(&len32(c.component.len()));
        self.out.extend_from_slice(c.component.as_bytes());
        self.out.extend_from_slice(&len32(c.bytes.len()));
        self.out.extend_from_slice(&c.bytes);
        self.out.extend_from_slice(&len32(c.refs.len()));
        for r in &c.refs {
            self.out.extend_from_slice(&ref_bytes(r.as_ref()));
        }
    }
}

impl Checkpoint {
    /// The canonical bytes (module docs); components are sorted by name here, so any
    /// component order gives the same bytes.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        // Exactly the bytes written (never a product an untrusted checkpoint could inflate).
        let total = self.entities.iter().fold(0usize, |t, e| {
            let head = ENTITY_HEADER + 8 + e.name.len() + e.label.len() + REF + 4 + BINDING;
            // (At most: a root's parent is one byte.)
            e.components.iter().fold(t.saturating_add(head), |t, c| {
                t.saturating_add(12 + c.component.len() + c.bytes.len())
                    .saturating_add(c.refs.len().saturating_mul(REF))
            })
        });
        let head = self.schema.iter().fold(32usize, |t, c| {
            t.saturating_add(16 + c.name.len())
                .saturating_add(c.entity_fields.len().saturating_mul(4))
        });
        let mut enc = Encoder::new(
            &self.schema,
            self.entities.len(),
            total.saturating_add(head),
        );
        let mut order: Vec<&ComponentValue> = Vec::new();
        for e in &self.entities {
            enc.entity(e);
            order.clear();
            order.extend(&e.components);
            order.sort_by(|a, b| a.component.cmp(&b.component));
            for c in &order {
                enc.component(c);
            }
        }
        enc.out
    }

    /// SHA-256 of the canonical bytes.
    pub fn digest(&self) -> [u8; 32] {
        Sha256::digest(self.canonical_bytes()).into()
    }
}

/// Lowercase hex of a digest.
pub fn digest_hex(d: &[u8; 32]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of one component of one entity, if it has it.
struct ValueOf<'w, W: Roster> {
    world: &'w W,
    entity: EntityId,
    want: TypeId,
    out: Option<&'w [u8]>,
}

impl<'w, W: Roster> TypeVisitor for ValueOf<'w, W> {
    fn visit<T: Component>(&mut self) {
        if TypeId::of::<T>() == self.want {
            let pools = self.world.parts_ref().1;
            self.out = pools
                .get::<T>()
                .and_then(|p| p.get(self.entity))
                .map(bytemuck::bytes_of);
        }
    }
}

/// An entity with a stable id, keyed for sorting: `(namespace tag, key bytes as two
/// big-endian halves)` orders exactly as [`PersistentId`]'s `Ord` (namespace, then bytes).
type Keyed = ((u8, u128, u128), EntityId);

/// The stable id of live `e` as encoded (namespace tag, key): its spawned id, else its binding
/// key as an authored id; `None` when it has neither.
#[inline]
fn identity_ref<A: Allocator + Clone>(durable: &Durable<A>, e: EntityId) -> Option<[u8; REF]> {
    let (key, tag) = match durable.stable.binding_of(e) {
        Some((key, kind)) => (key, kind.0 as u8),
        None => (durable.bindings.binding_of(e)?.0, AUTHORED),
    };
    let mut r = [0u8; REF];
    r[0] = tag;
    r[1..].copy_from_slice(bytemuck::bytes_of(&key));
    Some(r)
}

/// The authored namespace's tag.
const AUTHORED: u8 = 1;

/// Every live entity with a stable id, in slot order per table: `(namespace tag, key,
/// entity)`, the stable-id index's first, then the bound entities without a spawned id.
fn identities<W: PersistentOps>(world: &W) -> impl Iterator<Item = (u8, [u8; 32], EntityId)> + '_ {
    let (registry, durable) = (world.registry(), world.durable());
    let spawned = durable
        .stable
        .iter()
        .filter(move |(_, e, _)| registry.is_alive(*e))
        .map(|(key, e, kind)| (kind.0 as u8, bytemuck::cast(key), e));
    let authored = durable
        .bindings
        .iter()
        .filter(move |(_, e, _)| registry.is_alive(*e) && durable.stable.binding_of(*e).is_none())
        .map(|(key, e, _)| (AUTHORED, bytemuck::cast(key), e));
    spawned.chain(authored)
}

/// How many entities [`identities`] yields at most.
fn identities_bound<W: PersistentOps>(world: &W) -> usize {
    let durable = world.durable();
    durable.stable.len() + durable.bindings.len()
}

/// Every entity with a stable id, ascending by id.
fn stable_entities<W: PersistentOps>(world: &W) -> Vec<Keyed> {
    let mut v: Vec<Keyed> = identities(world)
        .map(|(tag, b, e)| {
            let hi = u128::from_be_bytes(b[..16].try_into().unwrap_or_default());
            let lo = u128::from_be_bytes(b[16..].try_into().unwrap_or_default());
            ((tag, hi, lo), e)
        })
        .collect();
    v.sort_unstable_by_key(|k| k.0);
    v
}

/// The id of a sorted entry.
fn id_of(k: &(u8, u128, u128)) -> Option<PersistentId> {
    let mut b = [0u8; 32];
    b[..16].copy_from_slice(&k.1.to_be_bytes());
    b[16..].copy_from_slice(&k.2.to_be_bytes());
    PersistentId::from_key(u32::from(k.0), b).ok()
}

/// Roster components sorted by name: `(name, type)`.
fn by_name<W: Roster>() -> Vec<(&'static str, TypeId)> {
    let mut names: Vec<(&'static str, TypeId)> =
        schema::<W>().into_iter().map(|(n, t, ..)| (n, t)).collect();
    names.sort_unstable_by(|a, b| a.0.cmp(b.0));
    names
}

fn value<W: Roster>(world: &W, entity: EntityId, want: TypeId) -> Option<&[u8]> {
    let mut v = ValueOf {
        world,
        entity,
        want,
        out: None,
    };
    W::Components::dispatch(want, &mut v);
    v.out
}

/// Each slot's position among the children of its parent that have a stable id, for every
/// such child of an entity with a stable id (0 elsewhere): one walk of each such parent's
/// children. Children without a stable id are not counted: a restore rebuilds only the
/// checkpoint's children, so the positions it makes are these.
fn positions<W: PersistentOps>(world: &W) -> Vec<u32> {
    let (registry, durable) = (world.registry(), world.durable());
    let h = &durable.hierarchy;
    let mut pos = vec![0u32; h.slots()];
    for (_, _, e) in identities(world) {
        let mut i = 0;
        for c in h.children(e.slot()) {
            let stable = registry
                .live_at(c)
                .is_some_and(|child| identity_ref(durable, child).is_some());
            if let (true, Some(p)) = (stable, pos.get_mut(c as usize)) {
                *p = i;
                i += 1;
            }
        }
    }
    pos
}

/// The parent of the live entity at `slot` as encoded (`[0; 33]` for a root), or `Err` when
/// the parent has no stable id.
fn parent_ref<W: PersistentOps>(world: &W, slot: u32) -> Result<[u8; REF], ()> {
    let (registry, durable) = (world.registry(), world.durable());
    let Some((slot, generation)) = durable.hierarchy.parent(slot) else {
        return Ok([0; REF]);
    };
    let parent = EntityId::from_raw_parts(registry.owner(), slot, generation);
    identity_ref(durable, parent).ok_or(())
}

/// Bytes hashed at a time by `checkpoint_digest` (a chunk stays in the L2 cache until hashed).
const DIGEST_CHUNK: usize = 32 * 1024;

/// One roster component, as `write_canonical` writes it.
trait Column {
    /// Copies `entity`'s value into `to` (exactly [`size`](Self::size) bytes); false,
    /// copying nothing, when it has none.
    fn stage(&self, entity: EntityId, to: &mut [u8]) -> bool;
    /// Appends the component as encoded (name length, name, value length, value) for the
    /// value staged in `staged` (exactly [`size`](Self::size) bytes).
    fn emit(&self, staged: &[u8], out: &mut Vec<u8>);
    /// Bytes of a value.
    fn size(&self) -> usize;
    /// Bytes of one component as encoded.
    fn encoded(&self) -> usize;
}

/// A pool and the bytes written before each of its values (`head`, padded to [`HEAD`] bytes
/// when they fit, so the common case is a fixed-size copy).
struct PoolColumn<'w, T: Component, A: Allocator + Clone> {
    pool: &'w ComponentPool<T, A>,
    head: Vec<u8>,
    padded: Option<[u8; HEAD]>,
}

/// Bytes of a padded component head: name length, name, value length.
const HEAD: usize = 32;

impl<T: Component, A: Allocator + Clone> Column for PoolColumn<'_, T, A> {
    #[inline]
    fn stage(&self, entity: EntityId, to: &mut [u8]) -> bool {
        match self.pool.get(entity) {
            Some(v) => {
                to.copy_from_slice(bytemuck::bytes_of(v));
                true
            }
            None => false,
        }
    }

    #[inline]
    fn emit(&self, staged: &[u8], out: &mut Vec<u8>) {
        match &self.padded {
            Some(padded) => {
                let at = out.len() + self.head.len();
                out.extend_from_slice(padded);
                out.truncate(at);
            }
            None => out.extend_from_slice(&self.head),
        }
        // A constant length once monomorphized.
        out.extend_from_slice(&staged[..core::mem::size_of::<T>()]);
    }

    fn size(&self) -> usize {
        core::mem::size_of::<T>()
    }

    fn encoded(&self) -> usize {
        self.head.len() + core::mem::size_of::<T>()
    }
}

/// One roster component as `write_canonical` writes it: name, column, type, and whether the
/// type has entity fields.
type Named<'w> = (&'static str, Box<dyn Column + 'w>, TypeId, bool);

/// Collects a [`PoolColumn`] per named roster component.
struct Columns<'w, W: DurableRoster> {
    world: &'w W,
    at: usize,
    out: Vec<Named<'w>>,
}

impl<'w, W: DurableRoster> TypeVisitor for Columns<'w, W> {
    fn visit<T: Component>(&mut self) {
        let name = W::NAMES.get(self.at).copied();
        self.at += 1;
        let pools = self.world.parts_ref().1;
        if let (Some(name), Some(pool)) = (name, pools.get::<T>()) {
            let mut head = len32(name.len()).to_vec();
            head.extend_from_slice(name.as_bytes());
            head.extend_from_slice(&len32(core::mem::size_of::<T>()));
            let padded = (head.len() <= HEAD).then(|| {
                let mut p = [0u8; HEAD];
                p[..head.len()].copy_from_slice(&head);
                p
            });
            let ty = TypeId::of::<T>();
            self.out.push((
                name,
                Box::new(PoolColumn { pool, head, padded }),
                ty,
                has_refs_of::<W>(ty),
            ));
        }
    }
}

/// An entity with a stable id, as `write_canonical` orders it: `prefix` holds the key's
/// leading bits (below the namespace tag's two when the rows' tags differ), so it orders as
/// the ids do up to ties, which the whole id (staged) breaks; `staged` is its place in the
/// staging buffer.
#[derive(Clone, Copy)]
struct Row {
    prefix: u64,
    staged: u32,
    tag: u8,
}

/// Staged bytes of an id: namespace tag, key.
const KEYED: usize = 33;

/// How many records ahead `write_canonical` asks for a record's staged bytes.
const PREFETCH: usize = 8;

/// Writes the canonical bytes (module docs) to `out`, calling `flush(out)` whenever `out`
/// holds `chunk` bytes or more, and once at the end.
///
/// Pass 1 walks the stable-id index and then the binding table, each in slot order (so the
/// registry and the pools are read about front to back): a row per entity, and its id and component values copied into a staging
/// buffer (per entity: tag, key, a presence byte per component, the values). The rows are
/// bucket-sorted by id; pass 2 writes each record in id order from its staged bytes, asked
/// for [`PREFETCH`] records ahead (id order is a random walk over slot order; staging keeps
/// it to one place per record instead of the binding table's and two per component).
///
/// # Errors
/// [`CheckpointError::UnidentifiedReference`] when a value references a live entity without
/// a stable id (what was flushed before stays flushed).
fn write_canonical<W: PersistentOps>(
    world: &W,
    out: &mut Vec<u8>,
    chunk: usize,
    mut flush: impl FnMut(&mut Vec<u8>),
) -> Result<(), CheckpointError> {
    let mut columns = Columns {
        world,
        at: 0,
        out: Vec::new(),
    };
    W::Components::each(&mut columns);
    let mut columns = columns.out;
    columns.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let record = ENTITY_HEADER + BINDING + columns.iter().map(|c| c.1.encoded() + 4).sum::<usize>();
    // Staged entity: namespace tag, key, a presence byte per column, then each column's
    // value at its offset.
    let mut offsets = Vec::with_capacity(columns.len());
    let mut stride = KEYED + columns.len();
    for (_, c, ..) in &columns {
        offsets.push(stride..stride + c.size());
        stride += c.size();
    }
    // Then the entity's binding and protection as encoded (fixed size: see `staged_binding`)
    // and its slot (its name, parent and position are read in pass 2).
    let binding_at = stride;
    stride += BINDING;
    let slot_at = stride;
    stride += 4;
    let positions = positions(world);
    let durable = world.durable();
    let hierarchy = &durable.hierarchy;
    let registry = world.registry();
    let most = identities_bound(world);
    let mut rows: Vec<Row> = Vec::with_capacity(most);
    let mut staging = vec![0u8; most * stride];
    // Every tag below 4 (what `from_key` accepts: 1 and 2), and whether they differ.
    let (mut tags_fit, mut first, mut mixed) = (true, None, false);
    for (tag, key, e) in identities(world) {
        let at = rows.len() * stride;
        let Some(staged) = staging.get_mut(at..at + stride) else {
            break; // Unreachable: `identities_bound` entities at most.
        };
        let kind = BindingKind(u32::from(tag));
        staged[0] = tag;
        staged[1..KEYED].copy_from_slice(&key);
        for (k, (_, c, ..)) in columns.iter().enumerate() {
            let to = &mut staged[offsets[k].clone()];
            staged[KEYED + k] = u8::from(c.stage(e, to));
        }
        staged[binding_at..binding_at + BINDING].copy_from_slice(&staged_binding(
            durable.bindings.binding_of(e),
            hierarchy.is_protected(e.slot()),
        ));
        staged[slot_at..slot_at + 4].copy_from_slice(&e.slot().to_le_bytes());
        tags_fit &= kind.0 < 4;
        mixed |= *first.get_or_insert(kind.0) != kind.0;
        rows.push(Row {
            prefix: u64::from_be_bytes(key[..8].try_into().unwrap_or_default()),
            staged: rows.len() as u32,
            tag: kind.0 as u8,
        });
    }
    // One namespace (the usual case): the key's leading bits order the rows. Several: the
    // tag goes above them.
    if mixed {
        for r in &mut rows {
            r.prefix = u64::from(r.tag & 3) << 62 | r.prefix >> 2;
        }
    }
    let staged = |r: &Row| {
        let at = r.staged as usize * stride;
        staging.get(at..at + stride).unwrap_or_default()
    };
    // The id of a row: (namespace tag, key) as staged.
    let id = |r: &Row| staged(r).get(..KEYED).unwrap_or_default();
    if !mixed || tags_fit {
        bucket_sort(
            &mut rows,
            |r| (r.prefix >> 48) as u16,
            |a, b| a.prefix.cmp(&b.prefix).then_with(|| id(a).cmp(id(b))),
        );
    } else {
        // Unreachable for ids `from_key` accepts (tags 1 and 2); kept exact regardless.
        rows.sort_unstable_by_key(id);
    }
    // Room for a padded head past the last record, so that the fixed-size copies of
    // `PoolColumn::emit` never grow `out`.
    out.reserve(
        HEAD + if chunk == usize::MAX {
            28 + rows.len() * record
        } else {
            chunk + record
        },
    );
    push_head(out, &ComponentShape::roster::<W>(), rows.len());
    // The references of the value being written, as encoded.
    let mut refs: Vec<[u8; REF]> = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        if let Some(ahead) = rows.get(i + PREFETCH) {
            prefetch_bytes(staged(ahead));
        }
        let start = out.len();
        let staged = staged(row);
        let mut head = [0u8; ENTITY_HEADER];
        head[..KEYED].copy_from_slice(&staged[..KEYED]);
        head[33] = 1;
        out.extend_from_slice(&head);
        // Name, parent and position.
        let slot = u32::from_le_bytes(staged[slot_at..slot_at + 4].try_into().unwrap_or_default());
        let (name, label) = (hierarchy.name(slot), hierarchy.label(slot));
        out.extend_from_slice(&len32(name.len()));
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&len32(label.len()));
        out.extend_from_slice(label.as_bytes());
        let parent = parent_ref(world, slot).map_err(|()| CheckpointError::UnidentifiedParent {
            id: id_of_staged(&staged[..KEYED]),
        })?;
        let position = positions.get(slot as usize).copied().unwrap_or(0);
        push_parent(out, &parent, position);
        let binding = &staged[binding_at..binding_at + BINDING];
        match binding[0] {
            0 => out.push(0),
            _ => out.extend_from_slice(&binding[..BINDING - 1]),
        }
        out.push(binding[BINDING - 1]);
        let mut count = 0u32;
        for (k, (name, c, ty, has_refs)) in columns.iter().enumerate() {
            if staged.get(KEYED + k) != Some(&1) {
                continue;
            }
            c.emit(&staged[offsets[k].clone()], out);
            count += 1;
            if !*has_refs {
                out.extend_from_slice(&[0; 4]);
                continue;
            }
            // The value just written: each entity field becomes zero, its target an id.
            let at = out.len() - c.size();
            let mut unidentified = false;
            refs.clear();
            rewrite_refs_of::<W>(*ty, &mut out[at..], &mut |_, e| {
                let mut r = [0u8; REF];
                if registry.is_alive(*e) {
                    match identity_ref(durable, *e) {
                        Some(id) => r = id,
                        None => unidentified = true,
                    }
                }
                refs.push(r);
                *e = EntityId::NULL;
            });
            if unidentified {
                return Err(CheckpointError::UnidentifiedReference {
                    id: id_of_staged(&staged[..KEYED]),
                    component: (*name).to_owned(),
                });
            }
            out.extend_from_slice(&len32(refs.len()));
            refs.iter().for_each(|r| out.extend_from_slice(r));
        }
        out[start + 34..start + 38].copy_from_slice(&count.to_le_bytes());
        if out.len() >= chunk {
            flush(out);
        }
    }
    flush(out);
    Ok(())
}

/// The id in encoded reference bytes (namespace tag, key); `None` for tag 0 (no target, a
/// root) or bytes `from_key` refuses.
fn id_of_ref(r: &[u8]) -> Option<PersistentId> {
    let key: [u8; 32] = r.get(1..KEYED)?.try_into().ok()?;
    match r.first()? {
        0 => None,
        &tag => PersistentId::from_key(u32::from(tag), key).ok(),
    }
}

/// The id of a staged entity (namespace tag, key). Every bound id is canonical (the identity
/// invariant), so `from_key` accepts it; were one not, the error would name the all-ones
/// authored id instead.
fn id_of_staged(keyed: &[u8]) -> PersistentId {
    id_of_ref(keyed).unwrap_or(PersistentId::Authored([!0; 32]))
}

/// Checkpoints, restore and replay of every durable world with stable ids.
pub trait CheckpointOps: PersistentOps {
    /// The checkpoint of every entity with a stable id (ids ascending, components by name,
    /// references and parents as stable ids, names).
    ///
    /// # Errors
    /// [`CheckpointError::UnidentifiedReference`] when a value references a live entity
    /// without a stable id; [`CheckpointError::UnidentifiedParent`] when an entity's parent
    /// has none.
    fn checkpoint(&self) -> Result<Checkpoint, CheckpointError> {
        let names = by_name::<Self>();
        let positions = positions(self);
        let mut entities = Vec::new();
        for (k, e) in stable_entities(self) {
            let Some(id) = id_of(&k) else { continue };
            let parent = parent_ref(self, e.slot())
                .map_err(|()| CheckpointError::UnidentifiedParent { id })?;
            let parent = id_of_ref(&parent);
            let position = match parent {
                Some(_) => positions.get(e.slot() as usize).copied().unwrap_or(0),
                None => 0,
            };
            let mut components = Vec::new();
            for (n, t) in &names {
                let Some(bytes) = value(self, e, *t) else {
                    continue;
                };
                let v = identified(Some(self), n, *t, bytes).map_err(|_| {
                    CheckpointError::UnidentifiedReference {
                        id,
                        component: (*n).to_owned(),
                    }
                })?;
                components.push(v);
            }
            let durable = self.durable();
            entities.push(CheckpointEntity {
                id,
                identity: Some(id),
                name: durable.hierarchy.name(e.slot()).to_owned(),
                label: durable.hierarchy.label(e.slot()).to_owned(),
                parent,
                position,
                binding: durable
                    .bindings
                    .binding_of(e)
                    .map(|(key, kind)| EntityBinding { key, kind: kind.0 }),
                protected: durable.hierarchy.is_protected(e.slot()),
                components,
            });
        }
        Ok(Checkpoint {
            format: CHECKPOINT_FORMAT.to_owned(),
            version: CHECKPOINT_VERSION,
            schema: ComponentShape::roster::<Self>(),
            entities,
        })
    }

    /// The canonical bytes of [`checkpoint`](Self::checkpoint), written straight from the
    /// pools (no intermediate checkpoint).
    ///
    /// # Errors
    /// As [`checkpoint`](Self::checkpoint).
    fn checkpoint_bytes(&self) -> Result<Vec<u8>, CheckpointError> {
        let mut out = Vec::new();
        write_canonical(self, &mut out, usize::MAX, |_| {})?;
        Ok(out)
    }

    /// SHA-256 of [`checkpoint_bytes`](Self::checkpoint_bytes): equal to
    /// `checkpoint()?.digest()`. The bytes are hashed as they are written, a chunk at a time,
    /// never held whole.
    ///
    /// # Errors
    /// As [`checkpoint`](Self::checkpoint).
    fn checkpoint_digest(&self) -> Result<[u8; 32], CheckpointError> {
        let mut sha = Sha256::new();
        let mut chunk = Vec::new();
        write_canonical(self, &mut chunk, DIGEST_CHUNK, |c| {
            sha.update(&c[..]);
            c.clear();
        })?;
        Ok(sha.finalize().into())
    }

    /// Replaces every entity with a stable id by the checkpoint's, all or nothing: the whole
    /// checkpoint is validated first (format, schema, order, identity records, components and
    /// their references, parents, bindings and protection, names and labels, capacity, the
    /// refill of both identity tables, budgets); then the current ones are destroyed
    /// (their handles go stale) and fresh entities are created and bound by stable id, their
    /// values written, named and linked under their parents in position order. Entities
    /// without a stable id are kept (children of a destroyed entity follow the orphan
    /// policy).
    ///
    /// # Errors
    /// [`CheckpointError`]; nothing changes.
    fn restore(&mut self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        if checkpoint.format != CHECKPOINT_FORMAT || checkpoint.version != CHECKPOINT_VERSION {
            return Err(CheckpointError::Format {
                format: checkpoint.format.clone(),
                version: checkpoint.version,
            });
        }
        check_persistent_world(self)?;
        let own = ComponentShape::roster::<Self>();
        if checkpoint.schema != own {
            let differs = own
                .iter()
                .zip(&checkpoint.schema)
                .find(|(a, b)| a != b)
                .map(|(a, b)| a.name.clone().min(b.name.clone()));
            let extra = || {
                let (long, short) = match own.len() > checkpoint.schema.len() {
                    true => (&own, &checkpoint.schema),
                    false => (&checkpoint.schema, &own),
                };
                long[short.len()].name.clone()
            };
            return Err(CheckpointError::Schema {
                component: differs.unwrap_or_else(extra),
            });
        }
        let schema = schema::<Self>();
        let mut keys = std::collections::HashSet::with_capacity(checkpoint.entities.len());
        // Whether any value references an entity.
        let mut linked = false;
        for (index, e) in checkpoint.entities.iter().enumerate() {
            if index > 0 && checkpoint.entities[index - 1].id >= e.id {
                return Err(CheckpointError::Order { index });
            }
            if !is_canonical(&e.id) || !keys.insert(e.id.key_bytes()) {
                return Err(CheckpointError::Id { index });
            }
            match e.identity {
                None if e.id.is_spawned() => {
                    return Err(CheckpointError::IdentityMissing { index })
                }
                Some(i) if i != e.id => return Err(CheckpointError::IdentityForged { index }),
                _ => {}
            }
            for (k, c) in e.components.iter().enumerate() {
                let known = schema
                    .iter()
                    .find(|(n, _, s, _)| *n == c.component && *s == c.bytes.len())
                    .is_some_and(|(_, t, _, check)| {
                        holds_value(*check, &c.bytes) && refs_well_formed::<Self>(*t, c)
                    });
                let repeated = e.components[..k].iter().any(|d| d.component == c.component);
                if !known || repeated || c.component == IDENTITY_COMPONENT {
                    return Err(CheckpointError::Component {
                        index,
                        component: c.component.to_string(),
                    });
                }
                // Every reference names an entity of the checkpoint (ids ascend: binary
                // search; the order of the ones after `index` is checked when it gets there,
                // before anything changes).
                linked |= !c.refs.is_empty();
                let missing = c.refs.iter().flatten().find(|t| {
                    checkpoint
                        .entities
                        .binary_search_by(|x| x.id.cmp(t))
                        .is_err()
                });
                if let Some(target) = missing {
                    return Err(CheckpointError::UnresolvedReference {
                        index,
                        component: c.component.to_string(),
                        target: *target,
                    });
                }
            }
        }
        // Parents: entities of the checkpoint (ids ascend: binary search), without a loop.
        let n = checkpoint.entities.len();
        let mut parents = Vec::with_capacity(n);
        for (index, e) in checkpoint.entities.iter().enumerate() {
            parents.push(match e.parent {
                None => None,
                Some(p) => Some(
                    checkpoint
                        .entities
                        .binary_search_by(|x| x.id.cmp(&p))
                        .map_err(|_| CheckpointError::Parent { index })?,
                ),
            });
        }
        if let Some(index) = first_cycle(n, |i| parents[i]) {
            return Err(CheckpointError::Parent { index });
        }
        // Bindings and protection: an authored id is bound under its own bytes, every key is
        // bindable and bound once, only a root is protected.
        let mut binding_keys = std::collections::HashSet::new();
        for (index, e) in checkpoint.entities.iter().enumerate() {
            let own = match (&e.id, &e.binding) {
                (PersistentId::Authored(id), Some(b)) => bytemuck::bytes_of(&b.key) == id,
                (PersistentId::Authored(_), None) => false,
                (PersistentId::Spawned(_), _) => true,
            };
            let key_ok = e
                .binding
                .is_none_or(|b| check_key(&b.key).is_ok() && binding_keys.insert(b.key));
            if !own || !key_ok || (e.protected && e.parent.is_some()) {
                return Err(CheckpointError::Binding { index });
            }
        }
        let old = stable_entities(self);
        // Every entry of the world's two tables is a live entity's (the destroy hook removes
        // it), and every such entity has a stable id, so once `old` is destroyed both tables
        // are empty: the refill below cannot fail if it fits an empty table.
        // The refill, in creation order: each binding key, each spawned id's index key (with
        // the entity's position, for the error).
        let entities = || checkpoint.entities.iter().enumerate();
        let bound: Vec<(usize, PersistentObjectKey)> = entities()
            .filter_map(|(i, e)| e.binding.map(|b| (i, b.key)))
            .collect();
        let spawned: Vec<(usize, PersistentObjectKey)> = entities()
            .filter(|(_, e)| e.id.is_spawned())
            .map(|(i, e)| (i, bytemuck::cast(e.id.key_bytes())))
            .collect();
        let durable = self.durable();
        for (table, keys) in [(&durable.bindings, &bound), (&durable.stable, &spawned)] {
            if keys.len() > table.capacity() {
                return Err(DurableError::from(ActivationError::CapacityExhausted {
                    requested: keys.len(),
                    available: table.capacity(),
                    capacity: table.capacity(),
                })
                .into());
            }
            if let Some(k) = table.first_overflow_when_empty(keys.iter().map(|(_, key)| *key)) {
                return Err(DurableError::from(ActivationError::Candidate {
                    index: keys[k].0,
                    reason: CandidateRejection::ProbeLimit,
                })
                .into());
            }
        }
        // Names and labels: each label of the legacy-id rule, each name no longer than a name
        // may be, and all of them in the arena once the current stable entities' are gone.
        let h = &self.durable().hierarchy;
        let record = |e: &CheckpointEntity| e.name.len().saturating_add(e.label.len());
        if checkpoint
            .entities
            .iter()
            .any(|e| !e.label.is_empty() && !crate::identity::is_legacy_id(&e.label))
        {
            return Err(DurableError::from(HierarchyError::InvalidLabel).into());
        }
        if let Some(e) = checkpoint
            .entities
            .iter()
            .find(|e| record(e) > MAX_NAME_LEN)
        {
            let len = e.name.len();
            return Err(DurableError::from(HierarchyError::NameTooLong { len }).into());
        }
        let need: usize = checkpoint
            .entities
            .iter()
            .map(|e| Hierarchy::<Self::Alloc>::name_cost(record(e)))
            .sum();
        let released: usize = old
            .iter()
            .map(|(_, e)| {
                let held = h.name(e.slot()).len() + h.label(e.slot()).len();
                Hierarchy::<Self::Alloc>::name_cost(held)
            })
            .sum();
        if need > h.name_free() + released {
            return Err(DurableError::from(HierarchyError::NameBudget {
                requested: need,
                free: h.name_free() + released,
                budget: h.name_budget(),
            })
            .into());
        }
        let freed = old
            .iter()
            .filter(|(_, e)| e.generation() != TERMINAL_GENERATION)
            .count();
        let registry = self.registry();
        if registry.available() + freed < n {
            return Err(DurableError::from(registry.capacity_error(n)).into());
        }
        if u64::MAX - registry.last_sequence() < n as u64 {
            return Err(DurableError::from(WorldError::SequenceExhausted).into());
        }
        let pools = Self::Components::LEN as u64;
        let revisions = old.len() as u64 * (1 + pools)
            + checkpoint
                .entities
                .iter()
                .map(|e| 1 + e.components.len() as u64)
                .sum::<u64>();
        registry
            .check_revisions(revisions)
            .map_err(DurableError::from)?;
        // A protected entity is replaced only by the checkpoint's entity of the same id,
        // protected too: a restore never takes a protected identity away.
        let kept_protected = |k: &(u8, u128, u128)| {
            id_of(k).is_some_and(|id| {
                checkpoint
                    .entities
                    .binary_search_by(|x| x.id.cmp(&id))
                    .is_ok_and(|i| checkpoint.entities[i].protected)
            })
        };
        if old
            .iter()
            .any(|(k, e)| self.is_protected(*e) && !kept_protected(k))
        {
            return Err(DurableError::from(WorldError::Protected).into());
        }
        // Apply: nothing below can fail, but for a roster that hands out other parts than
        // it was checked with.
        for (_, e) in &old {
            if self.is_protected(*e) {
                let (_, durable) = enabled_mut(self)?;
                durable
                    .hierarchy
                    .set_protected(e.slot(), false)
                    .map_err(DurableError::from)?;
            }
            self.destroy(*e).map_err(DurableError::from)?;
        }
        // With references, every entity and its id first, so that each reference resolves
        // whatever its order; without, one pass.
        let mut scratch = Vec::new();
        let mut created = Vec::with_capacity(n);
        let mut activations = Vec::with_capacity(bound.len());
        for e in &checkpoint.entities {
            let entity = match e.id {
                PersistentId::Spawned(_) => create_bound(self, &e.id),
                PersistentId::Authored(_) => self.create(),
            }
            .map_err(DurableError::from)?;
            created.push(entity);
            if let Some(b) = e.binding {
                activations.push(Activation {
                    entity,
                    key: b.key,
                    kind: BindingKind(b.kind),
                });
            }
            if !linked {
                insert_values(self, &schema, entity, &e.components, &mut scratch)
                    .map_err(DurableError::from)?;
            }
        }
        self.activate(&activations)?;
        if linked {
            for (e, &entity) in checkpoint.entities.iter().zip(&created) {
                insert_values(self, &schema, entity, &e.components, &mut scratch)
                    .map_err(DurableError::from)?;
            }
        }
        // Names, then each parent's children in ascending position (checked above: acyclic,
        // and the entities are fresh, so no ancestor walk).
        let mut linked_children: Vec<(usize, u32, usize)> = parents
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.map(|p| (p, checkpoint.entities[i].position, i)))
            .collect();
        linked_children.sort_unstable();
        let (_, durable) = enabled_mut(self)?;
        for (e, &entity) in checkpoint.entities.iter().zip(&created) {
            if !e.name.is_empty() || !e.label.is_empty() {
                durable
                    .hierarchy
                    .set_name_and_label(entity.slot(), &e.name, &e.label)
                    .map_err(DurableError::from)?;
            }
        }
        for (p, _, i) in linked_children {
            durable
                .hierarchy
                .set_parent(created[i].slot(), Some(created[p]));
        }
        for (e, &entity) in checkpoint.entities.iter().zip(&created) {
            if e.protected {
                durable
                    .hierarchy
                    .set_protected(entity.slot(), true)
                    .map_err(DurableError::from)?;
            }
        }
        Ok(())
    }

    /// Replays `log` onto this world: every transaction in tick order, each all or nothing;
    /// stops at the first refused one. Mints nothing. The log's format and tick order are
    /// checked before anything is applied.
    ///
    /// # Errors
    /// [`ReplayError`]: a bad format or ticks not strictly increasing (nothing applied), or a
    /// refused transaction (the ones before it stay applied, as they would have live).
    fn replay(&mut self, log: &ReplayLog) -> Result<(), ReplayError> {
        if log.format != REPLAY_FORMAT || log.version != 1 {
            return Err(ReplayError::Format);
        }
        if let Some(w) = log.entries.windows(2).find(|w| w[0].tick >= w[1].tick) {
            return Err(ReplayError::TickOrder { tick: w[1].tick });
        }
        for entry in &log.entries {
            self.transact(&entry.transaction)
                .map_err(|error| ReplayError::Transaction {
                    tick: entry.tick,
                    error,
                })?;
        }
        Ok(())
    }
}

impl<R: crate::durable::durable_ops::DurableOps> CheckpointOps for R {}

/// One accepted transaction at its tick.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayEntry {
    /// The simulation tick (integers all the way: no float conversion in JSON).
    pub tick: u64,
    /// The recorded transaction (prepared ids included).
    pub transaction: Transaction,
}

/// A log of accepted transactions, replayable onto a fresh world.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayLog {
    /// [`REPLAY_FORMAT`].
    pub format: String,
    /// 1.
    pub version: u32,
    /// Entries in strictly increasing tick order.
    pub entries: Vec<ReplayEntry>,
}

/// Why a replay stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// Unknown format name or version.
    #[error("unsupported replay log format")]
    Format,
    /// Ticks not strictly increasing.
    #[error("tick {tick} is not after the previous one")]
    TickOrder {
        /// The offending tick.
        tick: u64,
    },
    /// A transaction was refused.
    #[error("transaction at tick {tick} refused: {error}")]
    Transaction {
        /// Its tick.
        tick: u64,
        /// Why.
        error: TxError,
    },
}
