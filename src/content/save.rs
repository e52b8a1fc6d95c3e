//! Save: a world's entities of one instance scope → a version-2 World record.
//!
//! The entities saved are those bound under `instance` in the world's binding table; each
//! record entity's `uuid` is its `SourceObjectId`, its `name` the world's name, its
//! components every roster component it holds, by roster name, as their serde form. Every
//! entity-typed field becomes its target's UUID through the reverse binding (`""` for no
//! target or a target that is no longer alive); a live target outside the saved scope is
//! refused, since a World record has no way to name it. Entities are written in ascending
//! UUID order (the canonical entity order: independent of slots, dense order and binding
//! order), so save → restore → save gives the same bytes.
//!
//! Labels: the world keeps no label, so save derives one: the entity's name when it follows
//! the legacy-id rule and no earlier entity (in UUID order) took it, else the UUID's canonical
//! text. Runtime owner, slot and generation are never written.

use uuid::Uuid;

use super::canonical::{self, Ctx};
use super::error::Line;
use super::mapping::{rewrite_refs, uuid_bits, RecordComponent, RecordList, RecordVisitor};
use super::record::{is_schema_name, WorldV2};
use crate::buckets::{bucket_sort, top16};
use crate::hint::prefetch_bytes;
use crate::identity::{
    format_uuid, is_legacy_id, AssetId, InstanceId, SourceObjectId, UUID_TEXT_LEN,
};
use crate::world::{DurableError, DurableOps, EntityId, PoolsRefList, Roster, WorldError};

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
    // Pass 1, in slot order (the pools, names and registry are read front to back): each
    // entity's text after its label, into `body`. A failure is kept, not returned, so the one
    // reported is the first in UUID order, as if the entities were written in that order.
    let mut rows: Vec<Row> = Vec::with_capacity(durable.bindings().len());
    let mut body: Vec<u8> = Vec::with_capacity(rows.capacity() * 192);
    let mut failure: Option<(u128, SaveError)> = None;
    let mut ctx = Ctx::default();
    for (k, e, _) in durable.bindings().iter() {
        if k.instance != instance || !registry.is_alive(e) {
            continue;
        }
        let key = u128::from_be_bytes(*k.object.as_bytes());
        if failure.as_ref().is_some_and(|(f, _)| *f < key) {
            continue;
        }
        let name = world.name(e).map_err(SaveError::World)?;
        let start = body.len();
        body.extend_from_slice(NAME_MEMBER);
        canonical::string(&mut body, name);
        body.extend_from_slice(b",\"components\":{");
        let mut save = SaveComponents {
            world,
            instance,
            entity: e,
            uuid: k.object,
            out: &mut body,
            ctx: &mut ctx,
            any: false,
            result: Ok(()),
        };
        for &c in &order {
            W::Components::visit_at(0, c, &mut save);
        }
        if let Err(err) = save.result {
            body.truncate(start);
            ctx = Ctx::default();
            failure = Some((key, err));
            continue;
        }
        body.extend_from_slice(b"}}");
        rows.push(Row {
            key,
            hash: name_hash(name.as_bytes()),
            start,
            end: body.len(),
            label: if is_legacy_id(name) { name.len() } else { 0 },
        });
    }
    if let Some((_, err)) = failure {
        return Err(err);
    }
    bucket_sort(&mut rows, |r| top16(r.key), |a, b| a.key.cmp(&b.key));
    settle_labels(&mut rows, &body);
    // Pass 2, in UUID order: the uuid and label of each entity, then its text from pass 1.
    let mut out = Vec::with_capacity(128 + schema.len() + body.len() + rows.len() * 128);
    out.extend_from_slice(b"{\n  \"version\": 2,\n  \"schema\": ");
    canonical::string(&mut out, schema);
    out.extend_from_slice(b",\n  \"document\": \"");
    push_uuid(&mut out, &document.as_uuid());
    out.extend_from_slice(b"\",\n  \"entities\": [");
    let mut text = [0u8; UUID_TEXT_LEN];
    for (i, r) in rows.iter().enumerate() {
        if let Some(ahead) = rows.get(i + PREFETCH) {
            prefetch_bytes(&body[ahead.start..ahead.end]);
        }
        let uuid = format_uuid(&Uuid::from_u128(r.key), &mut text).as_bytes();
        out.extend_from_slice(if i == 0 {
            b"\n    {\"uuid\":\""
        } else {
            b",\n    {\"uuid\":\""
        });
        out.extend_from_slice(uuid);
        out.extend_from_slice(b"\",\"label\":");
        if r.label == 0 {
            out.push(b'"');
            out.extend_from_slice(uuid);
            out.push(b'"');
        } else {
            // A legacy id needs no escape: its quoted text follows the name member's key.
            let at = r.start + NAME_MEMBER.len();
            out.extend_from_slice(&body[at..at + r.label + 2]);
        }
        out.extend_from_slice(&body[r.start..r.end]);
    }
    out.extend_from_slice(if rows.is_empty() {
        b"]\n}\n"
    } else {
        b"\n  ]\n}\n"
    });
    Ok(out)
}

/// What precedes an entity's name in its text.
const NAME_MEMBER: &[u8] = b",\"name\":";

/// How many rows ahead pass 2 prefetches an entity's text (its reads are in UUID order, a
/// random walk over a buffer far larger than the caches).
const PREFETCH: usize = 8;

/// One saved entity: its UUID (as a big-endian integer: integer order is byte order), the hash
/// of its name, its text `start..end` in the pass-1 buffer, and the length of its name when
/// that name is its label (0: the label is the UUID).
#[derive(Clone, Copy)]
struct Row {
    key: u128,
    hash: u64,
    start: usize,
    end: usize,
    label: usize,
}

impl Row {
    /// The name, when it is a legacy id (those are written unescaped).
    fn name<'b>(&self, body: &'b [u8]) -> &'b [u8] {
        let at = self.start + NAME_MEMBER.len() + 1;
        &body[at..at + self.label]
    }
}

/// Labels, over rows in UUID order: a legacy-id name is the label unless it spells a saved
/// UUID or an earlier row has the same name. Duplicates are found by sorting (hash, name,
/// rank), so a crafted set of colliding names costs `n log n` compares, never `n²`.
fn settle_labels(rows: &mut [Row], body: &[u8]) {
    for i in 0..rows.len() {
        if rows[i].label == UUID_TEXT_LEN {
            let spelled = std::str::from_utf8(rows[i].name(body))
                .ok()
                .and_then(|n| n.parse::<Uuid>().ok());
            if spelled.is_some_and(|u| rows.binary_search_by_key(&u.as_u128(), |r| r.key).is_ok()) {
                rows[i].label = 0;
            }
        }
    }
    // (hash, rank): sorted on their own, so the rows are read only where two hashes tie.
    let mut named: Vec<(u64, usize)> = (0..rows.len())
        .filter(|&i| rows[i].label != 0)
        .map(|i| (rows[i].hash, i))
        .collect();
    bucket_sort(
        &mut named,
        |&(h, _)| (h >> 48) as u16,
        |&(ha, a), &(hb, b)| {
            ha.cmp(&hb)
                .then_with(|| rows[a].name(body).cmp(rows[b].name(body)))
                .then(a.cmp(&b))
        },
    );
    let taken: Vec<usize> = named
        .windows(2)
        .filter(|w| w[0].0 == w[1].0 && rows[w[0].1].name(body) == rows[w[1].1].name(body))
        .map(|w| w[1].1)
        .collect();
    for i in taken {
        rows[i].label = 0;
    }
}

/// A cheap hash of a name (64-bit multiply-rotate over 8-byte words); only its collisions'
/// cost matters, and [`settle_labels`] bounds that.
fn name_hash(name: &[u8]) -> u64 {
    let mut h = name.len() as u64;
    for chunk in name.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        h = (h.rotate_left(23) ^ u64::from_le_bytes(word)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    h
}

fn push_uuid(out: &mut Vec<u8>, uuid: &Uuid) {
    let mut buf = [0u8; UUID_TEXT_LEN];
    out.extend_from_slice(format_uuid(uuid, &mut buf).as_bytes());
}

struct SaveComponents<'w, W: Roster> {
    world: &'w W,
    instance: InstanceId,
    entity: EntityId,
    uuid: SourceObjectId,
    out: &'w mut Vec<u8>,
    ctx: &'w mut Ctx,
    any: bool,
    result: Result<(), SaveError>,
}

impl<W: DurableOps> RecordVisitor for SaveComponents<'_, W> {
    fn visit<T: RecordComponent>(&mut self, index: usize) {
        if self.result.is_err() {
            return;
        }
        let Some(value) = self
            .world
            .parts_ref()
            .1
            .get::<T>()
            .and_then(|p| p.get(self.entity))
        else {
            return;
        };
        let component = W::NAMES[index];
        let mut copy = *value;
        let (registry, durable) = (self.world.registry(), self.world.durable_ref());
        let mut outside = false;
        rewrite_refs::<W, T>(bytemuck::bytes_of_mut(&mut copy), &mut |_, r| {
            if r.is_null() {
                return;
            }
            if !registry.is_alive(*r) {
                *r = EntityId::NULL;
                return;
            }
            match durable.bindings().key_of(*r) {
                Some(k) if k.instance == self.instance => *r = uuid_bits(k.object.as_uuid()),
                _ => {
                    outside = true;
                    *r = uuid_bits(Uuid::nil());
                }
            }
        });
        if outside {
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
        canonical::string(self.out, component);
        self.out.push(b':');
        let at = self.out.len();
        if let Err(e) = canonical::write(self.out, self.ctx, &copy) {
            self.out.truncate(mark);
            self.result = Err(SaveError::Component {
                entity: self.uuid,
                component: component.to_owned(),
                message: e.0,
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
