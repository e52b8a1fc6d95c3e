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

use std::collections::HashSet;

use serde_json::Value;
use uuid::Uuid;

use super::mapping::{rewrite_refs, uuid_bits, RecordComponent, RecordList, RecordVisitor};
use super::record::{is_schema_name, Components, EntityV2, WorldV2};
use crate::identity::{is_legacy_id, AssetId, InstanceId, SourceObjectId};
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
    /// A component's serde form is not an object of properties, or failed to serialise.
    #[error("entity {entity}, component {component:?}: {message}")]
    Component {
        /// The entity.
        entity: SourceObjectId,
        /// The component.
        component: String,
        /// What went wrong.
        message: String,
    },
}

/// Saves every entity bound under `instance` as a version-2 record (module docs).
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
    let texts: HashSet<String> = saved.iter().map(|(o, _)| o.to_string()).collect();
    let mut labels: HashSet<String> = HashSet::with_capacity(saved.len());
    let mut entities = Vec::with_capacity(saved.len());
    for &(uuid, e) in &saved {
        let name = world.name(e).map_err(SaveError::World)?.to_owned();
        let label = if is_legacy_id(&name) && !texts.contains(&name) && !labels.contains(&name) {
            name.clone()
        } else {
            uuid.to_string()
        };
        labels.insert(label.clone());
        let mut save = SaveComponents {
            world,
            instance,
            entity: e,
            uuid,
            components: Components::new(),
            result: Ok(()),
        };
        W::Components::each_record(0, &mut save);
        save.result?;
        entities.push(EntityV2 {
            uuid,
            label,
            name,
            components: save.components,
        });
    }
    Ok(WorldV2 {
        schema: schema.to_owned(),
        document,
        entities,
    })
}

/// Saves as [`save_world`] and returns the record's canonical bytes.
///
/// # Errors
/// As [`save_world`].
pub fn save_world_bytes<W: DurableOps>(
    world: &W,
    instance: InstanceId,
    schema: &str,
    document: AssetId,
) -> Result<Vec<u8>, SaveError>
where
    W::Components: RecordList,
{
    save_world(world, instance, schema, document).map(|r| r.to_bytes())
}

struct SaveComponents<'w, W: Roster> {
    world: &'w W,
    instance: InstanceId,
    entity: EntityId,
    uuid: SourceObjectId,
    components: Components,
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
        let fail = |message: String| SaveError::Component {
            entity: self.uuid,
            component: component.to_owned(),
            message,
        };
        match serde_json::to_value(copy) {
            Ok(Value::Object(props)) => {
                self.components
                    .insert(component.to_owned(), props.into_iter().collect());
            }
            Ok(_) => self.result = Err(fail("its serde form is not an object".into())),
            Err(e) => self.result = Err(fail(e.to_string())),
        }
    }
}
