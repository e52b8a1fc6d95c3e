//! Restore of a level file into a world: [`restore_level`] stages a [`LevelFile`] with the
//! World-record engine ([`Plan`]), parents included, and applies it all or nothing.

use std::path::Path;

use super::error::{Fault, Located};

use super::level::LevelFile;
use super::mapping::RecordList;
use super::plan::Plan;
use super::restore::{apply_plan, decode_components, unresolved, Restored};
use super::restore_error::{RestoreError, RestoreErrorKind};
use crate::durable::DurableOps;
use crate::identity::InstanceId;

/// Restores a level into `world`: one entity per level entity with its components, name and
/// parent (children in file order, forward parents included); with `instance`, each entity is
/// also bound under `PersistentObjectKey(instance, uuid)`, which needs version-4 UUIDs.
/// All or nothing, as [`restore_world`](super::restore_world).
///
/// # Errors
/// [`RestoreError`]: `Level` for a broken level rule (a parent not in the file, a cycle),
/// else as [`restore_world`](super::restore_world), plus `Unbindable` for a binding asked of
/// a UUID that is not version 4; the world is unchanged.
pub fn restore_level<W: DurableOps>(
    level: &LevelFile,
    instance: Option<InstanceId>,
    world: &mut W,
) -> Result<Restored, RestoreError>
where
    W::Components: RecordList,
{
    let plan = plan_level::<W>(level)?;
    apply_plan(&plan, world, instance, None)
}

/// Stages a level file for `W` (checked, decoded and resolved; no world touched).
fn plan_level<W: DurableOps>(level: &LevelFile) -> Result<Plan, RestoreError>
where
    W::Components: RecordList,
{
    level.check().map_err(Fault::convert)?;
    let mut plan = Plan::new::<W>(level.entities.len());
    for e in &level.entities {
        plan.push_entity(e.uuid, &e.name, &e.label);
    }
    // Unique by `check`.
    let unique = plan.seal();
    debug_assert!(unique);
    for (i, e) in level.entities.iter().enumerate() {
        plan.entities[i].parent = e.parent.and_then(|p| plan.lookup(p));
        decode_components::<W>(&mut plan, i, &e.components)?;
    }
    plan.resolve::<W>().map_err(|u| unresolved::<W>(&u))?;
    Ok(plan)
}

/// [`restore_level`] failing on purpose at `fail` (after every check passed), to exercise the
/// rollback. Test seam (`test-hooks`).
#[cfg(feature = "test-hooks")]
#[doc(hidden)]
pub fn restore_level_failing<W: DurableOps>(
    level: &LevelFile,
    instance: Option<InstanceId>,
    world: &mut W,
    fail: super::plan::FailPoint,
) -> Result<Restored, RestoreError>
where
    W::Components: RecordList,
{
    let plan = plan_level::<W>(level)?;
    apply_plan(&plan, world, instance, Some(fail))
}

/// [`restore_level`] from the bytes of a level file, every rejection located in them.
///
/// # Errors
/// [`Located`] [`RestoreErrorKind`]; the world is unchanged.
pub fn restore_level_from_slice<W: DurableOps>(
    file: &Path,
    bytes: &[u8],
    instance: Option<InstanceId>,
    world: &mut W,
) -> Result<Restored, Located<RestoreErrorKind>>
where
    W::Components: RecordList,
{
    // One streaming pass straight into the restore's staging, as for records; a refused (or
    // declined) file is read by the tree reader, which names the first broken rule.
    if let Some(mut plan) = super::stream::plan_level_bytes::<W>(bytes) {
        if plan.resolve::<W>().is_ok() {
            return apply_plan(&plan, world, instance, None).map_err(|f| f.locate(file, bytes));
        }
    }
    let level = LevelFile::from_slice(file, bytes).map_err(|e| Located {
        file: e.file,
        line: e.line,
        column: e.column,
        kind: RestoreErrorKind::Level(e.kind),
    })?;
    restore_level(&level, instance, world).map_err(|f| f.locate(file, bytes))
}
