//! Two-pass restore of a version-2 World record into a world.
//!
//! `restore_world(record, instance, world)` stages the record ([`Plan`]), resolves every
//! entity-typed property against the record's own entities (forward references included),
//! checks the world, then creates one entity per record entity (pass 1, `SourceObjectId →
//! EntityId`), fills in components with the resolved handles, names and parents (pass 2), and publishes
//! every binding `PersistentObjectKey(instance, uuid) → entity` in one activation. All or
//! nothing: see [`plan`](super::plan) for the order and the guarantee.

use std::path::Path;

use super::error::{Fault, Located};
use super::json_path::{entity_path, key};
use super::mapping::{component_index, RecordList};
use super::plan::{FailPoint, Plan, Unresolved};
use super::record::{Components, WorldV2};
use super::restore_error::{RestoreError, RestoreErrorKind};
use crate::durable::DurableOps;
use crate::identity::InstanceId;
use crate::world::EntityId;

/// What a restore created: one live handle per document entity, in document order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// `entities[i]` is the entity of the document's `i`-th entity.
    pub entities: Vec<EntityId>,
}

/// Stages a version-2 record for `W` (decode and resolve; no world touched).
pub(crate) fn plan_record<W: DurableOps>(record: &WorldV2) -> Result<Plan, RestoreError>
where
    W::Components: RecordList,
{
    record.check().map_err(Fault::convert)?;
    let mut plan = Plan::new::<W>(record.entities.len());
    for e in &record.entities {
        plan.push_entity(e.uuid.as_uuid(), &e.name, &e.label);
    }
    // Unique by `check`.
    let unique = plan.seal();
    debug_assert!(unique);
    for (i, e) in record.entities.iter().enumerate() {
        // Parents are entities of the record (checked by `check`).
        plan.entities[i].parent = e.parent.and_then(|p| plan.lookup(p.as_uuid()));
        decode_components::<W>(&mut plan, i, &e.components)?;
    }
    plan.resolve::<W>().map_err(|u| unresolved::<W>(&u))?;
    Ok(plan)
}

/// Stages document entity `i`'s components (records and level files alike), each rejection
/// located at `entities[i].components.<name>`.
pub(crate) fn decode_components<W: DurableOps>(
    plan: &mut Plan,
    i: usize,
    components: &Components,
) -> Result<(), RestoreError>
where
    W::Components: RecordList,
{
    for (name, form) in components {
        let at = key(&key(&entity_path(i), "components"), name);
        let Some(k) = component_index::<W>(name) else {
            return Err(Fault::new(
                RestoreErrorKind::UnknownComponent { name: name.clone() },
                &at,
            ));
        };
        plan.decode::<W>(i, k, form).map_err(|message| {
            Fault::new(
                RestoreErrorKind::Component {
                    component: name.clone(),
                    message,
                },
                &at,
            )
        })?;
    }
    Ok(())
}

pub(crate) fn unresolved<W: DurableOps>(u: &Unresolved) -> RestoreError {
    let component = W::NAMES[u.component].to_owned();
    let at = key(&key(&entity_path(u.entity), "components"), &component);
    Fault::new(
        RestoreErrorKind::UnresolvedReference {
            component,
            uuid: u.uuid.to_string(),
        },
        &at,
    )
}

/// Applies a plan, turning a plan-entity index into the path of its `uuid`.
pub(crate) fn apply_plan<W: DurableOps>(
    plan: &Plan,
    world: &mut W,
    instance: Option<InstanceId>,
    fail: Option<FailPoint>,
) -> Result<Restored, RestoreError>
where
    W::Components: RecordList,
{
    plan.apply(world, instance, fail)
        .map(|entities| Restored { entities })
        .map_err(|(at, kind)| match at {
            Some(i) => Fault::new(kind, &key(&entity_path(i), "uuid")),
            None => Fault::new(kind, &[]),
        })
}

/// Restores a version-2 World record into `world`, binding each entity under
/// `PersistentObjectKey(instance, uuid)` (module docs).
///
/// The world must be durable (`try_new_durable`) and in the structural phase; its roster's
/// field names are the record's component names.
///
/// # Errors
/// [`RestoreError`]: the first rule broken, with the path of the offending value; the world
/// is unchanged.
pub fn restore_world<W: DurableOps>(
    record: &WorldV2,
    instance: InstanceId,
    world: &mut W,
) -> Result<Restored, RestoreError>
where
    W::Components: RecordList,
{
    let plan = plan_record::<W>(record)?;
    apply_plan(&plan, world, Some(instance), None)
}

/// [`restore_world`] from the bytes of a record, every rejection located in them (file, line,
/// column).
///
/// The bytes are read in one streaming pass straight into the restore's staging (no
/// `serde_json::Value` tree of the whole record); only a refused record is read a second time,
/// by the tree reader, to name the first broken rule and its position. Both readers accept
/// the same records and stage the same values.
///
/// # Errors
/// [`Located`] [`RestoreErrorKind`]; the world is unchanged.
pub fn restore_world_from_slice<W: DurableOps>(
    file: &Path,
    bytes: &[u8],
    instance: InstanceId,
    world: &mut W,
) -> Result<Restored, Located<RestoreErrorKind>>
where
    W::Components: RecordList,
{
    if let Some(mut plan) = super::stream::plan_bytes::<W>(bytes) {
        if plan.resolve::<W>().is_ok() {
            return apply_plan(&plan, world, Some(instance), None)
                .map_err(|f| f.locate(file, bytes));
        }
    }
    // Refused (or declined): the tree reader names the first broken rule and its position.
    let record = WorldV2::from_slice(file, bytes).map_err(|e| Located {
        file: e.file,
        line: e.line,
        column: e.column,
        kind: RestoreErrorKind::Record(e.kind),
    })?;
    restore_world(&record, instance, world).map_err(|f| f.locate(file, bytes))
}

/// [`restore_world`] failing on purpose at `fail` (after every check passed), to exercise the
/// rollback. Test seam (`test-hooks`).
#[cfg(feature = "test-hooks")]
#[doc(hidden)]
pub fn restore_world_failing<W: DurableOps>(
    record: &WorldV2,
    instance: InstanceId,
    world: &mut W,
    fail: FailPoint,
) -> Result<Restored, RestoreError>
where
    W::Components: RecordList,
{
    let plan = plan_record::<W>(record)?;
    apply_plan(&plan, world, Some(instance), Some(fail))
}

/// Whether the streaming reader (not the tree reader) stages `bytes` for `W`. Test seam
/// (`test-hooks`).
#[cfg(feature = "test-hooks")]
#[doc(hidden)]
pub fn streams<W: DurableOps>(bytes: &[u8]) -> bool
where
    W::Components: RecordList,
{
    super::stream::plan_bytes::<W>(bytes).is_some()
}

/// Whether the streaming reader (not the tree reader) stages the level file `bytes` for `W`.
/// Test seam (`test-hooks`).
#[cfg(feature = "test-hooks")]
#[doc(hidden)]
pub fn streams_level<W: DurableOps>(bytes: &[u8]) -> bool
where
    W::Components: RecordList,
{
    super::stream::plan_level_bytes::<W>(bytes).is_some()
}
