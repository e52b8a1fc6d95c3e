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
    let mut saved: Vec<(SourceObjectId, EntityId)> = durable
        .bindings()
        .iter()
        .filter(|(k, e, _)| k.instance == instance && registry.is_alive(*e))
        .map(|(k, e, _)| (k.object, e))
        .collect();
    saved.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    // A name is the label unless an earlier entity took it or it spells a saved UUID.
    let is_saved_uuid = |name: &str| {
        name.len() == UUID_TEXT_LEN
            && name.parse::<Uuid>().is_ok_and(|u| {
                saved
                    .binary_search_by(|(o, _)| o.as_bytes().cmp(u.as_bytes()))
                    .is_ok()
            })
    };
    let mut labels: hashbrown::HashSet<&str> = hashbrown::HashSet::with_capacity(saved.len());
    let mut order: Vec<usize> = (0..W::NAMES.len()).collect();
    order.sort_by_key(|&k| W::NAMES[k]);
    let mut out = Vec::with_capacity(128 + saved.len() * 256);
    out.extend_from_slice(b"{\n  \"version\": 2,\n  \"schema\": ");
    canonical::string(&mut out, schema);
    out.extend_from_slice(b",\n  \"document\": \"");
    push_uuid(&mut out, &document.as_uuid());
    out.extend_from_slice(b"\",\n  \"entities\": [");
    let mut ctx = Ctx::default();
    for (i, &(uuid, e)) in saved.iter().enumerate() {
        let name = world.name(e).map_err(SaveError::World)?;
        out.extend_from_slice(if i == 0 {
            b"\n    {\n      \"uuid\": \""
        } else {
            b",\n    {\n      \"uuid\": \""
        });
        push_uuid(&mut out, &uuid.as_uuid());
        out.extend_from_slice(b"\",\n      \"label\": ");
        if is_legacy_id(name) && !is_saved_uuid(name) && labels.insert(name) {
            canonical::string(&mut out, name);
        } else {
            out.push(b'"');
            push_uuid(&mut out, &uuid.as_uuid());
            out.push(b'"');
        }
        out.extend_from_slice(b",\n      \"name\": ");
        canonical::string(&mut out, name);
        out.extend_from_slice(b",\n      \"components\": {");
        let mut save = SaveComponents {
            world,
            instance,
            entity: e,
            uuid,
            out: &mut out,
            ctx: &mut ctx,
            any: false,
            result: Ok(()),
        };
        for &k in &order {
            W::Components::visit_at(0, k, &mut save);
        }
        save.result?;
        if save.any {
            out.extend_from_slice(b"\n      }\n    }");
        } else {
            out.extend_from_slice(b"}\n    }");
        }
    }
    out.extend_from_slice(if saved.is_empty() {
        b"]\n}\n"
    } else {
        b"\n  ]\n}\n"
    });
    Ok(out)
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
        self.out.extend_from_slice(if self.any {
            b",\n        "
        } else {
            b"\n        "
        });
        canonical::string(self.out, component);
        self.out.extend_from_slice(b": ");
        let at = self.out.len();
        if let Err(e) = canonical::write(self.out, 4, self.ctx, &copy) {
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
