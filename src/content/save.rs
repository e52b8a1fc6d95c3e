//! Save: a world's entities of one instance scope → a version-2 World record (version 3 with
//! parent links).
//!
//! The entities saved are those bound under `instance` in the world's binding table; each
//! record entity's `uuid` is its `SourceObjectId`, its `name` the world's name, its
//! components every roster component it holds, by roster name, as their serde form. Every
//! entity-typed field becomes its saved target's UUID (`""` for no target or a target that is
//! no longer alive); a live target outside the saved scope is refused, since a World record
//! has no way to name it. Entities are written in ascending UUID order (the canonical entity
//! order: independent of slots, dense order and binding order), so save → restore → save gives
//! the same bytes. With parent links the record is version 3: each entity names its parent
//! (which must be saved too), and the order is each root in UUID order followed by its saved
//! descendants depth first in child order, so a restore keeps child order.
//!
//! Labels: an entity's label is the one the world holds (restored from a record or level, or
//! set with `set_label`); without one, save derives it: the entity's name when it follows the
//! legacy-id rule and neither a held label nor an earlier entity (in UUID order) took it, else
//! the UUID's canonical text. Two held labels that are equal refuse the save. Runtime owner, slot and generation are never written.

use uuid::Uuid;

use super::canonical::{self, Ctx, Key};
use super::error::Line;
use super::level::{LevelEntity, LevelFile, LEVEL_FORMAT};
use super::mapping::{
    has_refs, rewrite_refs, uuid_bits, RecordComponent, RecordList, RecordVisitor,
};
use super::record::{is_schema_name, WorldV2};
use crate::buckets::{sort_by_high32, sort_ties};
use crate::durable::{DurableError, DurableOps};
use crate::hint::{prefetch, prefetch_bytes};
use crate::identity::{
    format_uuid, is_legacy_id_bytes, AssetId, InstanceId, SourceObjectId, UUID_TEXT_LEN,
};
use crate::world::roster::PoolsRefList;
use crate::world::store::component::{self, Component};
use crate::world::{EntityId, WorldError};

/// Why a world was not saved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaveError {
    /// The world's durable tables are empty (a world of no capacity) or another registry's.
    #[error(transparent)]
    World(#[from] DurableError),
    /// The schema name breaks the schema-name rule.
    #[error("invalid schema name {name:?}")]
    InvalidSchemaName {
        /// The name.
        name: String,
    },
    /// An entity's parent is not saved with it (unbound, or bound in another instance scope):
    /// a record's parents are entities of the record.
    #[error("entity {entity}: its parent is not in the saved scope")]
    UnsavedParent {
        /// The child.
        entity: SourceObjectId,
    },
    /// An entity-typed field names a live entity that is not saved with it (unbound, or bound
    /// in another instance scope).
    #[error("entity {entity}, component {component:?}: its target is not in the saved scope")]
    UnsavedTarget {
        /// The referring entity.
        entity: SourceObjectId,
        /// The component holding the link.
        component: String,
    },
    /// Two saved entities hold the same label, or a label spells the UUID of another saved
    /// entity whose label is its UUID: a record's labels are unique, and replacing a label the
    /// world holds would drop it.
    #[error("entity {entity}: label {label} is held twice")]
    RepeatedLabel {
        /// The entity whose label repeats.
        entity: SourceObjectId,
        /// The label.
        label: String,
    },
    /// The saved bytes did not read back as a record (a bug: the writer and the reader
    /// disagree).
    #[error("the saved record does not read back: {}", Line(.0))]
    Reread(String),
    /// A component's serde form has no JSON form (a non-finite float, a map with keys that
    /// are not strings).
    #[error("entity {entity}, component {component:?}: {}", Line(message))]
    Component {
        /// The entity.
        entity: SourceObjectId,
        /// The component.
        component: String,
        /// What went wrong.
        message: String,
    },
}

/// Saves every entity bound under `instance` as a version-2 record (module docs): the record
/// that [`save_world_bytes`] writes.
///
/// # Errors
/// [`SaveError`]; nothing is written anywhere.
pub fn save_world<W: DurableOps>(
    world: &W,
    instance: InstanceId,
    schema: &str,
    document: AssetId,
) -> Result<WorldV2, SaveError>
where
    W::Components: RecordList,
{
    saved_record(world, instance, schema, document, Labels::Record)
}

/// The record [`write_record`] writes, read back.
fn saved_record<W: DurableOps>(
    world: &W,
    instance: InstanceId,
    schema: &str,
    document: AssetId,
    labels: Labels,
) -> Result<WorldV2, SaveError>
where
    W::Components: RecordList,
{
    let bytes = write_record(world, instance, schema, document, labels)?;
    WorldV2::from_slice(std::path::Path::new("saved"), &bytes)
        .map_err(|e| SaveError::Reread(e.to_string()))
}

/// Saves every entity bound under `instance` and returns the record's canonical bytes
/// (exactly `WorldV2::to_bytes` of the record), written straight from the pools.
///
/// # Errors
/// [`SaveError`]; nothing is written anywhere.
pub fn save_world_bytes<W: DurableOps>(
    world: &W,
    instance: InstanceId,
    schema: &str,
    document: AssetId,
) -> Result<Vec<u8>, SaveError>
where
    W::Components: RecordList,
{
    write_record(world, instance, schema, document, Labels::Record)
}

/// Which form the labels are settled for.
#[derive(Clone, Copy)]
enum Labels {
    /// A World record: every entity has a label, derived when not held.
    Record,
    /// A level file's intermediate record: only held labels are written (by the level), so a
    /// held label that spells another entity's UUID collides with nothing there.
    Level,
}

/// [`save_world_bytes`], labels settled for `labels`.
fn write_record<W: DurableOps>(
    world: &W,
    instance: InstanceId,
    schema: &str,
    document: AssetId,
    labels: Labels,
) -> Result<Vec<u8>, SaveError>
where
    W::Components: RecordList,
{
    if !is_schema_name(schema) {
        return Err(SaveError::InvalidSchemaName {
            name: schema.to_owned(),
        });
    }
    let (registry, durable) = (world.registry(), world.durable());
    if !durable.is_enabled() {
        return Err(DurableError::Disabled.into());
    }
    if durable.owner() != registry.owner() {
        return Err(DurableError::World(WorldError::ForeignPool).into());
    }
    let mut order: Vec<usize> = (0..W::NAMES.len()).collect();
    order.sort_by_key(|&k| W::NAMES[k]);
    // Each component's written key, once: `"name":` as an entity's first component, and
    // `,"name":` after another.
    let keys: Vec<[Key; 2]> = W::NAMES
        .iter()
        .map(|n| {
            let mut k = Vec::with_capacity(n.len() + 4);
            k.push(b',');
            canonical::string(&mut k, n);
            k.push(b':');
            [Key::new(&k[1..]), Key::new(&k)]
        })
        .collect();
    // Pass 1, in slot order (the binding table and the names are read front to back): by
    // slot, each saved entity's UUID, name, generation and whether its name may be its label;
    // the UUID order's sort keys and the label candidates' name hashes. Everything after this
    // pass reads per-slot tables, so no per-entity row is ever moved.
    let hierarchy = durable.hierarchy();
    let mut saved = Saved::with_slots(registry.created_slots());
    let mut keyed: Vec<u64> = Vec::with_capacity(durable.bindings().len());
    let mut named: Vec<u64> = Vec::with_capacity(durable.bindings().len());
    let mut name_bytes = 0;
    let owner = registry.owner();
    // Whether a saved entity has a parent (read with its name: the same node).
    let mut parented = false;
    for (slot, generation, object) in durable.bindings().iter_instance(instance) {
        if !registry.is_alive(EntityId::from_raw_parts(owner, slot, generation)) {
            continue;
        }
        parented |= hierarchy.parent(slot).is_some();
        let (name, label) = hierarchy.name_and_label_bytes(slot);
        let (name, plain) = text_or_empty(name);
        name_bytes += name.len();
        let text = match text_or_empty(label) {
            (b"", _) => name,
            (stored, _) => stored,
        };
        saved.push(slot, generation, object, (name, plain), text);
        keyed.push(sort_key(object, slot));
        if saved.label(slot) {
            named.push(u64::from(name_hash(text)) << 32 | u64::from(slot));
        }
    }
    // The canonical order: the UUIDs' top 32 bits, ties by the whole UUID.
    sort_by_high32(&mut keyed);
    sort_ties(&mut keyed, |a, b| saved.key(a).cmp(&saved.key(b)));
    saved.rank(&keyed);
    settle_labels(&mut saved, &keyed, named, labels)?;
    // With parent links (version 3), the document order is the hierarchy's: each root in UUID
    // order followed by its saved descendants, depth first in child order, so a restore
    // appends every child in its place. Every parent must be saved.
    let mut doc = Vec::new();
    if parented {
        for &v in &keyed {
            let slot = v as u32;
            if let Some((p, g)) = hierarchy.parent(slot) {
                if saved.of(p, g).is_none() {
                    return Err(SaveError::UnsavedParent {
                        entity: object_id(saved.key(slot)),
                    });
                }
            }
        }
        doc = hierarchy_order(&saved, &keyed, hierarchy);
        saved.rank(&doc);
    }
    let keyed = if parented { doc } else { keyed };
    // Pass 2, over each pool in dense order: every saved entity's value, links rewritten to
    // UUIDs, copied to its rank in a column of its own (so pass 3 reads front to back too).
    let mut gather = Gather {
        world,
        rows: keyed.len(),
        saved: &saved,
        columns: Vec::with_capacity(W::NAMES.len()),
        outside: Vec::new(),
        foreign: false,
    };
    W::Components::each_record(0, &mut gather);
    let Gather {
        columns,
        mut outside,
        foreign,
        ..
    } = gather;
    if foreign {
        return Err(DurableError::World(WorldError::ForeignPool).into());
    }
    // Only the first such entity in UUID order can be reported.
    let first = outside.iter().map(|&(rank, _)| rank).min();
    outside.retain(|&(rank, _)| Some(rank) == first);
    // Pass 3, in UUID order, straight into the output: the uuid, label and name of each
    // entity, then its components from the columns. The slots' rows and the names are read
    // out of order, so they are prefetched ahead (the rows `2 * PREFETCH` entities ahead, the
    // name bytes they point at `PREFETCH` ahead).
    let mut out =
        Vec::with_capacity(128 + schema.len() + 2 * name_bytes + keyed.len() * ROW_BYTES_GUESS);
    out.extend_from_slice(if parented {
        b"{\n  \"version\": 3,\n  \"schema\": "
    } else {
        b"{\n  \"version\": 2,\n  \"schema\": "
    });
    canonical::string(&mut out, schema);
    out.extend_from_slice(b",\n  \"document\": \"");
    push_uuid(&mut out, &document.as_uuid());
    out.extend_from_slice(b"\",\n  \"entities\": [");
    // An entity's first bytes, its UUID written in place: `,` (skipped for the first entity),
    // the line break and indent, `{"uuid":"<uuid>","label":"`.
    let mut head = *b",\n    {\"uuid\":\"________-____-____-____-____________\",\"label\":\"";
    let uuid_at = head.len() - UUID_TEXT_LEN - b"\",\"label\":\"".len();
    let mut ctx = Ctx::new(out);
    for (rank, &v) in keyed.iter().enumerate() {
        if let Some(&far) = keyed.get(rank + 2 * PREFETCH) {
            saved.prefetch_slot(far as u32);
        }
        if let Some(&ahead) = keyed.get(rank + PREFETCH) {
            prefetch_bytes(saved.name(ahead as u32));
        }
        let slot = v as u32;
        let Row { object, name, text } = saved.rows[slot as usize];
        let label = saved.label(slot);
        let out = ctx.out();
        let uuid =
            <&mut [u8; UUID_TEXT_LEN]>::try_from(&mut head[uuid_at..uuid_at + UUID_TEXT_LEN])
                .expect("the head holds a UUID's text");
        format_uuid(&Uuid::from_u128(object), uuid);
        // Two copies of constant length (inlined), not one of a length known at run time.
        if rank == 0 {
            out.extend_from_slice(&head[1..]);
        } else {
            out.extend_from_slice(&head);
        }
        // A legacy id needs no escape.
        if label {
            out.extend_from_slice(text);
        } else {
            out.extend_from_slice(&head[uuid_at..uuid_at + UUID_TEXT_LEN]);
        }
        // A legacy-id name needs no escape either.
        if saved.is_plain(slot) {
            out.extend_from_slice(b"\",\"name\":\"");
            out.extend_from_slice(name);
            out.push(b'"');
        } else {
            out.extend_from_slice(b"\",\"name\":");
            // UTF-8: checked in pass 1 (not again unless the name needs an escape).
            canonical::string_of_utf8(out, name);
        }
        if parented {
            out.extend_from_slice(b",\"parent\":\"");
            if let Some((p, _)) = hierarchy.parent(slot) {
                push_uuid(out, &Uuid::from_u128(saved.key(p)));
            }
            out.push(b'"');
        }
        out.extend_from_slice(b",\"components\":{");
        let mut save = SaveComponents {
            rank,
            uuid: object,
            columns: &columns,
            outside: &outside,
            names: W::NAMES,
            keys: &keys,
            ctx: &mut ctx,
            any: false,
            result: Ok(()),
        };
        for &c in &order {
            W::Components::visit_at(0, c, &mut save);
        }
        save.result?;
        ctx.out().extend_from_slice(b"}}");
    }
    let mut out = ctx.into_out();
    out.extend_from_slice(if keyed.is_empty() {
        b"]\n}\n"
    } else {
        b"\n  ]\n}\n"
    });
    Ok(out)
}

/// Saves every entity bound under `instance` as a level file: per entity its UUID (the
/// `SourceObjectId`), name, parent and components, in the order [`save_world`] writes them
/// (each root in UUID order, then its descendants depth first in child order), so
/// [`restore_level`](super::restore_level) rebuilds the same hierarchy. A level has no
/// document id, and writes an entity's label only when the world holds one (a record derives
/// one for every entity); everything else a World record holds, it holds.
///
/// # Errors
/// As [`save_world`] (an unsaved parent or target, a component without a JSON form, a world
/// without durable tables).
pub fn save_level<W: DurableOps>(world: &W, instance: InstanceId) -> Result<LevelFile, SaveError>
where
    W::Components: RecordList,
{
    // The record's document id appears nowhere in a level, but it must differ from every
    // entity's: the first of a fixed sequence of version-4 UUIDs that no saved entity has.
    let taken: std::collections::HashSet<u128> = world
        .durable()
        .bindings()
        .iter_instance(instance)
        .map(|(_, _, object)| object)
        .collect();
    let document = (1u128..)
        .map(|k| 0x0000_0000_0000_4000_8000_0000_0000_0000 | k)
        .find(|u| !taken.contains(u))
        .and_then(|u| AssetId::from_uuid(Uuid::from_u128(u)).ok())
        .ok_or(SaveError::World(DurableError::Disabled))?;
    let record = saved_record(world, instance, LEVEL_FORMAT, document, Labels::Level)?;
    let label = |object: SourceObjectId| {
        let key = crate::identity::PersistentObjectKey::new(instance, object);
        let entity = world.resolve(&key).entity();
        entity.map_or(String::new(), |e| {
            world.label(e).map(str::to_owned).unwrap_or_default()
        })
    };
    Ok(LevelFile {
        entities: record
            .entities
            .into_iter()
            .map(|e| LevelEntity {
                uuid: e.uuid.as_uuid(),
                label: label(e.uuid),
                name: e.name,
                parent: e.parent.map(|p| p.as_uuid()),
                components: e.components,
            })
            .collect(),
    })
}

/// How many entities ahead pass 3 asks for a name's bytes (the one read out of order).
const PREFETCH: usize = 8;

/// Output bytes reserved per entity beyond its uuid, label and name: address space only, the
/// pages are touched as they are written (and the `Vec` grows past it if a world needs more).
const ROW_BYTES_GUESS: usize = 256;

/// The saved entities, by slot: every table covers the registry's created slots (sized once,
/// before pass 1 writes them front to back).
struct Saved<'w> {
    /// Each saved slot's row: what pass 3 reads of it, out of slot order, in one place.
    rows: Vec<Row<'w>>,
    /// `(generation << 32) | (rank + 1)`, where the rank is the index in UUID order; 0 for a
    /// slot not saved.
    ranks: Vec<u64>,
    /// One bit per slot: its candidate is its label (else its UUID is).
    labels: Vec<u64>,
    /// One bit per slot: its candidate is a stored label (never replaced: a repeat refuses).
    stored: Vec<u64>,
    /// One bit per slot: its name is a legacy id (written without an escape scan).
    plain: Vec<u64>,
}

/// A saved slot's UUID, name and label candidate: one row (48 bytes on 64-bit targets), so
/// pass 3, which reads slots out of order, asks for one or two lines per entity, not for an
/// entry of each of three tables.
#[derive(Clone, Copy)]
#[repr(C)]
struct Row<'w> {
    /// The UUID, as its big-endian integer (integer order is byte order): pass 2 turns a link
    /// into its target's UUID with one read.
    object: u128,
    /// The name's bytes (UTF-8: [`text_or_empty`]).
    name: &'w [u8],
    /// The label candidate: the stored label, else the name.
    text: &'w [u8],
}

const NO_ROW: Row<'static> = Row {
    object: 0,
    name: b"",
    text: b"",
};

/// Bytes read from the name arena as text: themselves when they are a legacy id (ASCII, with
/// no check beyond the rule's own scan) or UTF-8, else nothing (as the hierarchy's `name` and
/// `label` read them); and whether they are a legacy id.
#[inline(always)]
fn text_or_empty(bytes: &[u8]) -> (&[u8], bool) {
    if is_legacy_id_bytes(bytes) {
        (bytes, true)
    } else if core::str::from_utf8(bytes).is_ok() {
        (bytes, false)
    } else {
        (b"", false)
    }
}

impl<'w> Saved<'w> {
    /// Tables for slots `0..slots` (every live entity's slot is below the registry's created
    /// slots), so that `push` never grows them.
    fn with_slots(slots: usize) -> Self {
        let words = slots.div_ceil(64);
        Self {
            rows: vec![NO_ROW; slots],
            ranks: vec![0; slots],
            labels: vec![0; words],
            stored: vec![0; words],
            plain: vec![0; words],
        }
    }

    /// Adds a saved slot (below the tables' length: a live entity's, `with_slots`): its name,
    /// and its label candidate `text` (`stored`: the world's label; else the name) when it may
    /// be its label.
    fn push(
        &mut self,
        slot: u32,
        generation: u32,
        object: u128,
        (name, plain): (&'w [u8], bool),
        text: &'w [u8],
    ) {
        let at = slot as usize;
        self.rows[at] = Row { object, name, text };
        self.ranks[at] = u64::from(generation) << 32;
        let stored = !core::ptr::eq(text, name) && !text.is_empty();
        let (word, bit) = (at / 64, 1u64 << (slot % 64));
        for (set, on) in [(&mut self.stored, stored), (&mut self.plain, plain)] {
            if on {
                set[word] |= bit;
            } else {
                set[word] &= !bit;
            }
        }
        self.set_label(slot, stored || plain);
    }

    /// Whether a saved slot's name is a legacy id.
    #[inline(always)]
    fn is_plain(&self, slot: u32) -> bool {
        self.plain[slot as usize / 64] >> (slot % 64) & 1 != 0
    }

    /// The label candidate of a saved slot.
    #[inline(always)]
    fn text(&self, slot: u32) -> &'w [u8] {
        self.rows[slot as usize].text
    }

    /// Whether a saved slot's candidate is a stored label.
    #[inline(always)]
    fn is_stored(&self, slot: u32) -> bool {
        self.stored[slot as usize / 64] >> (slot % 64) & 1 != 0
    }

    /// Sets each saved slot's rank: its index in `keyed` (`key << 32 | slot`, in document
    /// order).
    fn rank(&mut self, keyed: &[u64]) {
        for (rank, &v) in keyed.iter().enumerate() {
            let r = &mut self.ranks[v as u32 as usize];
            *r = *r >> 32 << 32 | (rank as u64 + 1);
        }
    }

    /// Whether `slot` holds a saved entity (its live incarnation: the hierarchy links live
    /// entities only).
    #[inline(always)]
    fn holds(&self, slot: u32) -> bool {
        self.ranks.get(slot as usize).is_some_and(|&r| r != 0)
    }

    /// The UUID of a saved slot.
    #[inline(always)]
    fn key(&self, slot: u32) -> u128 {
        self.rows[slot as usize].object
    }

    #[inline(always)]
    fn name(&self, slot: u32) -> &'w [u8] {
        self.rows[slot as usize].name
    }

    #[inline(always)]
    fn label(&self, slot: u32) -> bool {
        self.labels[slot as usize / 64] >> (slot % 64) & 1 != 0
    }

    fn set_label(&mut self, slot: u32, label: bool) {
        let (word, bit) = (slot as usize / 64, 1u64 << (slot % 64));
        if label {
            self.labels[word] |= bit;
        } else {
            self.labels[word] &= !bit;
        }
    }

    /// The rank of a saved slot.
    #[inline(always)]
    fn rank_of(&self, slot: u32) -> u32 {
        (self.ranks[slot as usize] as u32).wrapping_sub(1)
    }

    /// The rank of the saved entity `(slot, generation)`.
    #[inline(always)]
    fn of(&self, slot: u32, generation: u32) -> Option<usize> {
        let e = *self.ranks.get(slot as usize)?;
        ((e >> 32) as u32 == generation && e as u32 != 0).then(|| (e as u32 - 1) as usize)
    }

    /// Asks for the row of `slot`: its first and last field, each within one line (16-byte
    /// fields at 16-byte offsets), so both lines of a row that straddles two.
    #[inline(always)]
    fn prefetch_slot(&self, slot: u32) {
        if let Some(row) = self.rows.get(slot as usize) {
            prefetch(&row.object);
            prefetch(&row.text);
        }
    }

    /// Whether `uuid` is a saved entity's: binary searches of `keyed` (UUID order), for the
    /// run of its top 32 bits, then within that run by the whole UUID (so crafted UUIDs that
    /// share their top bits cost `log n` each, not a walk of their run).
    fn contains(&self, keyed: &[u64], uuid: u128) -> bool {
        self.slot_of(keyed, uuid).is_some()
    }

    /// The slot of the saved entity with `uuid` (as [`contains`](Self::contains) finds it).
    fn slot_of(&self, keyed: &[u64], uuid: u128) -> Option<u32> {
        let top = (uuid >> 96) as u64;
        let from = keyed.partition_point(|&v| v >> 32 < top);
        let to = keyed.partition_point(|&v| v >> 32 <= top);
        let run = &keyed[from..to];
        run.binary_search_by(|&v| self.key(v as u32).cmp(&uuid))
            .ok()
            .map(|at| run[at] as u32)
    }
}

/// The canonical (UUID) order's sort key of a saved slot: its UUID's top 32 bits, then the slot.
fn sort_key(object: u128, slot: u32) -> u64 {
    ((object >> 96) as u64) << 32 | u64::from(slot)
}

/// Labels: a stored label is the label; a legacy-id name is the label unless it spells a saved
/// UUID, a stored label has the same text, or an entity earlier in UUID order has the same
/// name; every other entity's label is its UUID. `named` holds each candidate's `text hash <<
/// 32 | slot`; duplicates are found by sorting it by hash and each run of tied hashes by
/// (text, stored first, rank), so a crafted set of colliding names costs `n log n` compares,
/// never `n²`.
///
/// # Errors
/// [`SaveError::RepeatedLabel`] when two stored labels are equal, or a stored label spells
/// the UUID of another saved entity whose label is its UUID (the first such holder in document
/// order is named): the record would hold a label twice, and replacing a stored one would drop
/// it. (For a level's intermediate record such a stored label becomes its own UUID there, and
/// so does every stored label that spells a UUID so exposed: the level writes the stored ones.)
fn settle_labels(
    saved: &mut Saved<'_>,
    keyed: &[u64],
    mut named: Vec<u64>,
    labels: Labels,
) -> Result<(), SaveError> {
    // Candidates as long as a UUID's text: a derived one that spells a saved UUID is dropped
    // now (whatever the others' labels: the order of this pass does not matter); a stored one
    // is checked once the repeats are settled (below).
    let mut spelling = Vec::new();
    for &v in &named {
        let slot = v as u32;
        if saved.text(slot).len() != UUID_TEXT_LEN {
            continue;
        }
        if saved.is_stored(slot) {
            spelling.push(slot);
        } else {
            let spelled = Uuid::try_parse_ascii(saved.text(slot)).ok();
            if spelled.is_some_and(|u| saved.contains(keyed, u.as_u128())) {
                saved.set_label(slot, false);
            }
        }
    }
    sort_by_high32(&mut named);
    let order = |s: u32| (saved.text(s), !saved.is_stored(s), saved.rank_of(s));
    sort_ties(&mut named, |a, b| order(a).cmp(&order(b)));
    let repeated = |saved: &Saved<'_>, slot: u32| SaveError::RepeatedLabel {
        entity: object_id(saved.key(slot)),
        label: String::from_utf8_lossy(saved.text(slot)).into_owned(),
    };
    for w in 1..named.len() {
        let (a, b) = (named[w - 1] as u32, named[w] as u32);
        if named[w - 1] >> 32 == named[w] >> 32 && saved.text(a) == saved.text(b) {
            if saved.is_stored(b) {
                return Err(repeated(saved, b));
            }
            saved.set_label(b, false);
        }
    }
    // A stored label that spells another saved entity's UUID, where that entity's label is
    // its UUID: `(spelled entity, holder)` pairs, sorted by the spelled entity.
    let mut spells: Vec<(u32, u32)> = spelling
        .into_iter()
        .filter_map(|slot| {
            let spelled = Uuid::try_parse_ascii(saved.text(slot)).ok()?.as_u128();
            let other = saved.slot_of(keyed, spelled)?;
            (other != slot).then_some((other, slot))
        })
        .collect();
    let clashing = spells.iter().filter(|&&(o, _)| !saved.label(o));
    match labels {
        // The first holder in document order, whatever the slots.
        Labels::Record => match clashing.map(|&(_, s)| s).min_by_key(|&s| saved.rank_of(s)) {
            Some(slot) => Err(repeated(saved, slot)),
            None => Ok(()),
        },
        // A holder whose label becomes its UUID makes every label that spells that UUID a
        // repeat in turn, so drops are followed to the end: each label drops at most once, and
        // the labels dropped do not depend on the order they are found in.
        Labels::Level => {
            let mut work: Vec<u32> = clashing.map(|&(_, s)| s).collect();
            spells.sort_unstable();
            while let Some(slot) = work.pop() {
                if !saved.label(slot) {
                    continue;
                }
                saved.set_label(slot, false);
                let from = spells.partition_point(|&(o, _)| o < slot);
                let spelling_it = spells[from..].iter().take_while(|&&(o, _)| o == slot);
                work.extend(spelling_it.map(|&(_, s)| s));
            }
            Ok(())
        }
    }
}

/// `keyed` (UUID order, every saved entity's parent saved) in the hierarchy's document order:
/// each root in UUID order, then its saved descendants depth first in child order (children
/// that are not saved, bound elsewhere, are skipped: their own saved descendants would have
/// an unsaved parent). Iterative: a chain a million deep takes no stack.
fn hierarchy_order<A: allocator_api2::alloc::Allocator + Clone>(
    saved: &Saved<'_>,
    keyed: &[u64],
    hierarchy: &crate::durable::Hierarchy<A>,
) -> Vec<u64> {
    let entry = |slot: u32| sort_key(saved.key(slot), slot);
    let saved_from = |mut at: Option<u32>| {
        while let Some(s) = at {
            if saved.holds(s) {
                return Some(s);
            }
            at = hierarchy.next_sibling(s);
        }
        None
    };
    let mut doc = Vec::with_capacity(keyed.len());
    for &v in keyed {
        let root = v as u32;
        if hierarchy.parent(root).is_some() {
            continue;
        }
        let mut at = root;
        'walk: loop {
            doc.push(entry(at));
            if let Some(child) = saved_from(hierarchy.first_child(at)) {
                at = child;
                continue;
            }
            // Up until a node with a saved next sibling, or back at the root.
            while at != root {
                if let Some(sibling) = saved_from(hierarchy.next_sibling(at)) {
                    at = sibling;
                    continue 'walk;
                }
                match hierarchy.parent(at) {
                    Some((p, _)) => at = p,
                    None => break,
                }
            }
            break;
        }
    }
    doc
}

/// The `SourceObjectId` of a saved UUID (for errors only).
fn object_id(uuid: u128) -> SourceObjectId {
    SourceObjectId::from_uuid(Uuid::from_u128(uuid))
        .expect("a binding table holds only version-4 object ids")
}

/// A cheap hash of a name (64-bit multiply-rotate over 8-byte words, folded to 32 bits); only
/// its collisions' cost matters, and [`settle_labels`] bounds that.
fn name_hash(name: &[u8]) -> u32 {
    let mix = |h: u64, word: u64| (h.rotate_left(23) ^ word).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut h = name.len() as u64;
    let mut words = name.chunks_exact(8);
    for w in &mut words {
        h = mix(h, u64::from_le_bytes(w.try_into().unwrap_or_default()));
    }
    // The last 1..=7 bytes as one word, without a copy: two 4-byte reads that may overlap, or
    // the first, middle and last byte (the length, mixed in first, tells the cases apart).
    let tail = words.remainder();
    let n = tail.len();
    let four = |at: usize| {
        tail.get(at..at + 4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let word = match n {
        0 => None,
        1..=3 => {
            Some(u64::from(tail[0]) | u64::from(tail[n / 2]) << 8 | u64::from(tail[n - 1]) << 16)
        }
        _ => Some(u64::from(four(0)) | u64::from(four(n - 4)) << 32),
    };
    if let Some(word) = word {
        h = mix(h, word);
    }
    (h >> 32) as u32 ^ h as u32
}

fn push_uuid(out: &mut Vec<u8>, uuid: &Uuid) {
    let mut buf = [0u8; UUID_TEXT_LEN];
    out.extend_from_slice(format_uuid(uuid, &mut buf).as_bytes());
}

/// One component's values in UUID order: `bytes[rank * size_of::<T>()..]` holds the value of
/// the entity at `rank` when bit `rank` of `present` is set (links already UUIDs).
struct Column {
    bytes: Vec<u8>,
    present: Vec<u64>,
}

impl Column {
    /// The value at `rank`, if that entity has one.
    #[inline(always)]
    fn get<T: Component>(&self, rank: usize) -> Option<T> {
        let size = core::mem::size_of::<T>();
        (self.present[rank / 64] >> (rank % 64) & 1 != 0).then(|| {
            // A pool's value with entity fields rewritten (each an `EntityId`, any pattern).
            component::read(&self.bytes[rank * size..(rank + 1) * size])
                .expect("a saved column holds valid values")
        })
    }
}

/// Pass 2: one [`Column`] per roster component, and the (rank, component) pairs whose link
/// names a live entity outside the saved scope.
struct Gather<'a, W> {
    world: &'a W,
    /// Saved entities.
    rows: usize,
    saved: &'a Saved<'a>,
    columns: Vec<Column>,
    outside: Vec<(usize, usize)>,
    /// A pool belongs to another registry.
    foreign: bool,
}

impl<W: DurableOps> RecordVisitor for Gather<'_, W> {
    fn visit<T: RecordComponent>(&mut self, index: usize) {
        let n = self.rows;
        let size = core::mem::size_of::<T>();
        let mut column = Column {
            bytes: vec![0; n * size],
            present: vec![0; n.div_ceil(64)],
        };
        if let Some(pool) = self.world.parts_ref().1.get::<T>() {
            let registry = self.world.registry();
            if pool.owner() != registry.owner() {
                // Swapped in from another world: its entries are not this world's entities.
                self.foreign = true;
                self.columns.push(column);
                return;
            }
            for (key, value) in pool.owners().keys().iter().zip(pool.values()) {
                let Some(rank) = self.saved.of(key.slot(), key.generation()) else {
                    continue;
                };
                let at = &mut column.bytes[rank * size..(rank + 1) * size];
                at.copy_from_slice(bytemuck::bytes_of(value));
                if has_refs::<W, T>() {
                    let saved = self.saved;
                    let mut outside = false;
                    rewrite_refs::<W, T>(at, &mut |_, r| {
                        if r.is_null() {
                            return;
                        }
                        if r.owner() == registry.owner()
                            && saved.of(r.slot(), r.generation()).is_some()
                        {
                            *r = uuid_bits(Uuid::from_u128(saved.key(r.slot())));
                            return;
                        }
                        if registry.is_alive(*r) {
                            outside = true;
                            *r = uuid_bits(Uuid::nil());
                        } else {
                            *r = EntityId::NULL;
                        }
                    });
                    if outside {
                        self.outside.push((rank, index));
                    }
                }
                column.present[rank / 64] |= 1 << (rank % 64);
            }
        }
        debug_assert_eq!(self.columns.len(), index);
        self.columns.push(column);
    }
}

/// Pass 3: the components of the entity at `rank`, in the order visited (by name).
struct SaveComponents<'a> {
    rank: usize,
    /// Its UUID (big-endian integer).
    uuid: u128,
    columns: &'a [Column],
    /// The (rank, component) pairs with a link outside the saved scope, of one rank at most.
    outside: &'a [(usize, usize)],
    names: &'static [&'static str],
    /// Each component's written keys (first, after another), by roster index.
    keys: &'a [[Key; 2]],
    /// The writer, holding the output.
    ctx: &'a mut Ctx,
    any: bool,
    result: Result<(), SaveError>,
}

impl RecordVisitor for SaveComponents<'_> {
    fn visit<T: RecordComponent>(&mut self, index: usize) {
        if self.result.is_err() {
            return;
        }
        let Some(copy) = self.columns[index].get::<T>(self.rank) else {
            return;
        };
        let component = self.names[index];
        if self.outside.contains(&(self.rank, index)) {
            self.result = Err(SaveError::UnsavedTarget {
                entity: object_id(self.uuid),
                component: component.to_owned(),
            });
            return;
        }
        let out = self.ctx.out();
        let mark = out.len();
        self.keys[index][usize::from(self.any)].write(out);
        if let Err(e) = self.ctx.value(&copy) {
            self.ctx.out().truncate(mark);
            self.result = Err(SaveError::Component {
                entity: object_id(self.uuid),
                component: component.to_owned(),
                message: e.0.into(),
            });
            return;
        }
        self.any = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line() {
        let entity: SourceObjectId = "67e55044-10b1-426f-9247-bb680e5fe0c8".parse().unwrap();
        let e = SaveError::Component {
            entity,
            component: "enemy".into(),
            message: "custom\nerror".into(),
        };
        assert_eq!(
            e.to_string(),
            format!(r#"entity {entity}, component "enemy": custom\nerror"#)
        );
        let e = SaveError::Reread("w:1:1: two\nlines".into());
        assert_eq!(
            e.to_string(),
            r"the saved record does not read back: w:1:1: two\nlines"
        );
    }
}
