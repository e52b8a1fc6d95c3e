//! Save: a world's entities of one instance scope → a version-2 World record.
//!
//! The entities saved are those bound under `instance` in the world's binding table; each
//! record entity's `uuid` is its `SourceObjectId`, its `name` the world's name, its
//! components every roster component it holds, by roster name, as their serde form. Every
//! entity-typed field becomes its saved target's UUID (`""` for no target or a target that is
//! no longer alive); a live target outside the saved scope is refused, since a World record
//! has no way to name it. Entities are written in ascending UUID order (the canonical entity
//! order: independent of slots, dense order and binding order), so save → restore → save gives
//! the same bytes.
//!
//! Labels: the world keeps no label, so save derives one: the entity's name when it follows
//! the legacy-id rule and no earlier entity (in UUID order) took it, else the UUID's canonical
//! text. Runtime owner, slot and generation are never written.

use uuid::Uuid;

use super::canonical::{self, Ctx, Key};
use super::error::Line;
use super::mapping::{
    has_refs, rewrite_refs, uuid_bits, RecordComponent, RecordList, RecordVisitor,
};
use super::record::{is_schema_name, WorldV2};
use crate::buckets::{bucket_sort, top16};
use crate::hint::prefetch_bytes;
use crate::identity::{
    format_uuid, is_legacy_id, AssetId, InstanceId, SourceObjectId, UUID_TEXT_LEN,
};
use crate::world::{DurableError, DurableOps, EntityId, EntityKey, PoolsRefList, WorldError};

/// Why a world was not saved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaveError {
    /// The world has no durable tables, or its durable part is another registry's.
    #[error(transparent)]
    World(#[from] DurableError),
    /// The schema name breaks the schema-name rule.
    #[error("invalid schema name {name:?}")]
    InvalidSchemaName {
        /// The name.
        name: String,
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
    /// The saved bytes did not read back as a record (a bug: the writer and the reader
    /// disagree).
    #[error("the saved record does not read back: {}", Line(.0))]
    Reread(String),
    /// A component's serde form is not an object of properties, or has no JSON form (a
    /// non-finite float, an enum variant with data).
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
    let bytes = save_world_bytes(world, instance, schema, document)?;
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
    if !is_schema_name(schema) {
        return Err(SaveError::InvalidSchemaName {
            name: schema.to_owned(),
        });
    }
    let (registry, durable) = (world.registry(), world.durable_ref());
    if !durable.is_enabled() {
        return Err(DurableError::Disabled.into());
    }
    if durable.owner() != registry.owner() {
        return Err(DurableError::World(WorldError::ForeignPool).into());
    }
    let mut order: Vec<usize> = (0..W::NAMES.len()).collect();
    order.sort_by_key(|&k| W::NAMES[k]);
    // Each component's written key (`"name":`), once.
    let keys: Vec<Key> = W::NAMES
        .iter()
        .map(|n| {
            let mut k = Vec::with_capacity(n.len() + 3);
            canonical::string(&mut k, n);
            k.push(b':');
            Key::new(&k)
        })
        .collect();
    // Pass 1, in slot order (the binding table and the names are read front to back): the
    // saved entities, their names and label candidates. Then the canonical (UUID) order.
    let mut rows: Vec<Row<'_>> = Vec::with_capacity(durable.bindings().len());
    let mut name_bytes = 0;
    // Each saved entity's UUID by slot (the slots ascend here, so this is written front to
    // back): pass 2 turns a link into its target's UUID with one read.
    let mut objects: Vec<[u8; 16]> = Vec::new();
    for (k, e, _) in durable.bindings().iter() {
        if k.instance != instance || !registry.is_alive(e) {
            continue;
        }
        let name = world.name(e).map_err(SaveError::World)?;
        name_bytes += name.len();
        objects.resize(e.slot() as usize, [0; 16]);
        objects.push(*k.object.as_bytes());
        rows.push(Row {
            object: k.object,
            slot: EntityKey::of(e),
            name,
            hash: name_hash(name.as_bytes()),
            label: is_legacy_id(name),
        });
    }
    bucket_sort(&mut rows, |r| top16(r.key()), |a, b| a.key().cmp(&b.key()));
    settle_labels(&mut rows);
    // Pass 2, over each pool in dense order: every saved entity's value, links rewritten to
    // UUIDs, copied to its rank in a column of its own (so pass 3 reads front to back too).
    let ranks = Ranks::new(&rows, objects.len());
    let mut gather = Gather {
        world,
        rows: rows.len(),
        objects: &objects,
        ranks: &ranks,
        columns: Vec::with_capacity(W::NAMES.len()),
        outside: Vec::new(),
    };
    W::Components::each_record(0, &mut gather);
    let Gather {
        columns,
        mut outside,
        ..
    } = gather;
    // Only the first such entity in UUID order can be reported.
    let first = outside.iter().map(|&(rank, _)| rank).min();
    outside.retain(|&(rank, _)| Some(rank) == first);
    // Pass 3, in UUID order, straight into the output: the uuid, label and name of each
    // entity, then its components from the columns. Only the names are read out of order, so
    // they are prefetched `PREFETCH` entities ahead.
    let mut out =
        Vec::with_capacity(128 + schema.len() + 2 * name_bytes + rows.len() * ROW_BYTES_GUESS);
    out.extend_from_slice(b"{\n  \"version\": 2,\n  \"schema\": ");
    canonical::string(&mut out, schema);
    out.extend_from_slice(b",\n  \"document\": \"");
    push_uuid(&mut out, &document.as_uuid());
    out.extend_from_slice(b"\",\n  \"entities\": [");
    let mut text = [0u8; UUID_TEXT_LEN];
    let mut ctx = Ctx::default();
    for (rank, r) in rows.iter().enumerate() {
        if let Some(ahead) = rows.get(rank + PREFETCH) {
            prefetch_bytes(ahead.name.as_bytes());
        }
        format_uuid(&r.object.as_uuid(), &mut text);
        out.extend_from_slice(if rank == 0 {
            b"\n    {\"uuid\":\""
        } else {
            b",\n    {\"uuid\":\""
        });
        out.extend_from_slice(&text); // a fixed-size copy
        out.extend_from_slice(b"\",\"label\":\"");
        // A legacy id needs no escape.
        if r.label {
            out.extend_from_slice(r.name.as_bytes());
        } else {
            out.extend_from_slice(&text);
        }
        out.extend_from_slice(b"\",\"name\":");
        if r.label {
            out.push(b'"');
            out.extend_from_slice(r.name.as_bytes());
            out.push(b'"');
        } else {
            canonical::string(&mut out, r.name);
        }
        out.extend_from_slice(b",\"components\":{");
        let mut save = SaveComponents {
            rank,
            uuid: r.object,
            columns: &columns,
            outside: &outside,
            names: W::NAMES,
            keys: &keys,
            out: &mut out,
            ctx: &mut ctx,
            any: false,
            result: Ok(()),
        };
        for &c in &order {
            W::Components::visit_at(0, c, &mut save);
        }
        save.result?;
        out.extend_from_slice(b"}}");
    }
    out.extend_from_slice(if rows.is_empty() {
        b"]\n}\n"
    } else {
        b"\n  ]\n}\n"
    });
    Ok(out)
}

/// How many entities ahead pass 3 asks for a name's bytes (the one read out of order).
const PREFETCH: usize = 8;

/// Output bytes reserved per entity beyond its uuid, label and name: address space only, the
/// pages are touched as they are written (and the `Vec` grows past it if a world needs more).
const ROW_BYTES_GUESS: usize = 256;

/// One saved entity: its UUID (its big-endian integer `key`: integer order is byte order),
/// its slot and generation, its name and that name's hash, and whether the name is its label
/// (else the UUID is).
#[derive(Clone, Copy)]
struct Row<'w> {
    object: SourceObjectId,
    slot: EntityKey,
    name: &'w str,
    hash: u32,
    label: bool,
}

impl Row<'_> {
    #[inline(always)]
    fn key(&self) -> u128 {
        u128::from_be_bytes(*self.object.as_bytes())
    }
}

/// Labels, over rows in UUID order: a legacy-id name is the label unless it spells a saved
/// UUID or an earlier row has the same name. Duplicates are found by sorting (hash, name,
/// rank), so a crafted set of colliding names costs `n log n` compares, never `n²`.
fn settle_labels(rows: &mut [Row<'_>]) {
    for i in 0..rows.len() {
        if rows[i].label && rows[i].name.len() == UUID_TEXT_LEN {
            let spelled = rows[i].name.parse::<Uuid>().ok();
            if spelled.is_some_and(|u| rows.binary_search_by_key(&u.as_u128(), Row::key).is_ok()) {
                rows[i].label = false;
            }
        }
    }
    // (hash, rank): sorted on their own, so the rows are read only where two hashes tie.
    let mut named: Vec<(u32, u32)> = (0..rows.len() as u32)
        .filter(|&i| rows[i as usize].label)
        .map(|i| (rows[i as usize].hash, i))
        .collect();
    bucket_sort(
        &mut named,
        |&(h, _)| (h >> 16) as u16,
        |&(ha, a), &(hb, b)| {
            ha.cmp(&hb)
                .then_with(|| rows[a as usize].name.cmp(rows[b as usize].name))
                .then(a.cmp(&b))
        },
    );
    let taken: Vec<usize> = named
        .windows(2)
        .map(|w| (w[0], w[1].0, w[1].1 as usize))
        .filter(|&((h, a), hb, b)| h == hb && rows[a as usize].name == rows[b].name)
        .map(|(_, _, b)| b)
        .collect();
    for i in taken {
        rows[i].label = false;
    }
}

/// A cheap hash of a name (64-bit multiply-rotate over 8-byte words, folded to 32 bits); only
/// its collisions' cost matters, and [`settle_labels`] bounds that.
fn name_hash(name: &[u8]) -> u32 {
    let mut h = name.len() as u64;
    for chunk in name.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        h = (h.rotate_left(23) ^ u64::from_le_bytes(word)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    (h >> 32) as u32 ^ h as u32
}

fn push_uuid(out: &mut Vec<u8>, uuid: &Uuid) {
    let mut buf = [0u8; UUID_TEXT_LEN];
    out.extend_from_slice(format_uuid(uuid, &mut buf).as_bytes());
}

/// Each saved entity's rank (its index in UUID order), by slot: `(generation << 32) | (rank +
/// 1)`, 0 for a slot not saved. Zeroed memory, so only the pages of saved slots are touched.
struct Ranks(Vec<u64>);

impl Ranks {
    fn new(rows: &[Row<'_>], slots: usize) -> Self {
        let mut table = vec![0u64; slots];
        for (rank, r) in rows.iter().enumerate() {
            table[r.slot.slot() as usize] =
                u64::from(r.slot.generation()) << 32 | (rank as u64 + 1);
        }
        Self(table)
    }

    /// The rank of the saved entity `(slot, generation)`.
    #[inline(always)]
    fn of(&self, slot: u32, generation: u32) -> Option<usize> {
        let e = *self.0.get(slot as usize)?;
        ((e >> 32) as u32 == generation && e as u32 != 0).then(|| (e as u32 - 1) as usize)
    }
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
    fn get<T: bytemuck::Pod>(&self, rank: usize) -> Option<T> {
        let size = core::mem::size_of::<T>();
        (self.present[rank / 64] >> (rank % 64) & 1 != 0)
            .then(|| bytemuck::pod_read_unaligned(&self.bytes[rank * size..(rank + 1) * size]))
    }
}

/// Pass 2: one [`Column`] per roster component, and the (rank, component) pairs whose link
/// names a live entity outside the saved scope.
struct Gather<'a, W> {
    world: &'a W,
    /// Saved entities.
    rows: usize,
    /// The UUID of each saved entity, by slot.
    objects: &'a [[u8; 16]],
    ranks: &'a Ranks,
    columns: Vec<Column>,
    outside: Vec<(usize, usize)>,
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
            for (key, value) in pool.owners().keys().iter().zip(pool.values()) {
                let Some(rank) = self.ranks.of(key.slot(), key.generation()) else {
                    continue;
                };
                let mut copy = *value;
                if has_refs::<W, T>() {
                    let (objects, ranks) = (self.objects, self.ranks);
                    let mut outside = false;
                    rewrite_refs::<W, T>(bytemuck::bytes_of_mut(&mut copy), &mut |_, r| {
                        if r.is_null() {
                            return;
                        }
                        if r.owner() == registry.owner()
                            && ranks.of(r.slot(), r.generation()).is_some()
                        {
                            *r = uuid_bits(Uuid::from_bytes(objects[r.slot() as usize]));
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
                column.bytes[rank * size..(rank + 1) * size]
                    .copy_from_slice(bytemuck::bytes_of(&copy));
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
    uuid: SourceObjectId,
    columns: &'a [Column],
    /// The (rank, component) pairs with a link outside the saved scope, of one rank at most.
    outside: &'a [(usize, usize)],
    names: &'static [&'static str],
    /// Each component's written key, by roster index.
    keys: &'a [Key],
    out: &'a mut Vec<u8>,
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
                entity: self.uuid,
                component: component.to_owned(),
            });
            return;
        }
        let mark = self.out.len();
        if self.any {
            self.out.push(b',');
        }
        self.keys[index].write(self.out);
        let at = self.out.len();
        if let Err(e) = canonical::write(self.out, self.ctx, &copy) {
            self.out.truncate(mark);
            self.result = Err(SaveError::Component {
                entity: self.uuid,
                component: component.to_owned(),
                message: e.0.into(),
            });
            return;
        }
        if self.out.get(at) != Some(&b'{') {
            self.out.truncate(mark);
            self.result = Err(SaveError::Component {
                entity: self.uuid,
                component: component.to_owned(),
                message: "its serde form is not an object".into(),
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
