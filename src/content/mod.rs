//! Durable content at the world boundary: World records, the migration manifest, and the
//! `ludus-cook identity` commands.
//!
//! * [`WorldV1`] / [`WorldV2`] ([`WorldRecord`] for either) — World records with legacy ids
//!   or durable UUIDs; strict readers, canonical writers.
//! * [`Schema`] — a World schema file: each component's entity-typed properties.
//! * [`Manifest`] — `ludus.identity-migration` version 1, the committed map from legacy ids to
//!   UUIDs; [`generate_manifest`] and [`extend_manifest`] mint it from an injected
//!   [`EntropySource`](crate::identity::EntropySource); [`apply`] replays it onto a version-1
//!   document without minting.
//! * [`publish`] — atomic, create-new publication of whole files.
//! * [`cook`] — the commands over files, which the `ludus-cook` package (`cook/`) wraps.
//! * [`RecordComponent`] / [`RecordList`] and [`entity_ref`] — a world's components as record
//!   components, by roster name, entity-typed fields as the target's UUID.
//! * [`restore_world`] / [`restore_world_from_slice`] — two-pass restore of a version-2 record
//!   into a world, all or nothing, one binding activation; [`save_world`] /
//!   [`save_world_bytes`] — the reverse, in canonical UUID order.
//! * [`duplicate_entities`] / [`duplicate_placements`] — graph duplication of record entities
//!   (fresh source ids) and of placements (fresh instance ids).
//! * [`LevelFile`] and [`restore_level`] — `ludus.level` version 1: UUIDs, names, parents,
//!   components.
//!
//! Every reader refuses unknown and duplicate members and reports each rejection as a
//! [`Located`] error: the file, serde_json's line and column, and a typed kind. Formats, rules
//! and exit codes: `docs/content.md`.

mod apply;
mod canonical;
pub mod cook;
mod error;
mod json;
mod json_path;
mod level;
mod level_builder;
mod level_restore;
mod manifest;
mod mapping;
mod migrate;
mod path;
mod plan;
pub mod publish;
mod record;
mod record_copy;
mod restore;
mod restore_error;
mod save;
mod schema;
mod stream;

pub use apply::{apply, ApplyClass, ApplyErrorKind, ApplyFault, Origin};
pub use error::{Fault, Located, Shape};
pub use json_path::{JsonPath, Step};
pub use level::{LevelEntity, LevelError, LevelErrorKind, LevelFile, LEVEL_FORMAT, LEVEL_VERSION};
pub use level_builder::{LevelBuildError, LevelBuilder, LevelRef};
#[cfg(feature = "test-hooks")]
#[doc(hidden)]
pub use level_restore::restore_level_failing;
pub use level_restore::{restore_level, restore_level_from_slice};
pub use manifest::{
    Manifest, ManifestDocument, ManifestError, ManifestErrorKind, ManifestObject, MANIFEST_FORMAT,
    MANIFEST_VERSION,
};
pub use mapping::{bits_uuid, entity_ref, uuid_bits, RecordComponent, RecordList, RecordVisitor};
pub use migrate::{extend_manifest, generate_manifest, Extension, MigrateError};
pub use path::{DocPath, PathError, DOC_PATH_MAX};
#[doc(hidden)]
pub use plan::FailPoint;
pub use publish::PublishError;
pub use record::{
    is_component_name, is_schema_name, property, property_mut, Components, EntityV1, EntityV2,
    RecordError, RecordErrorKind, WorldRecord, WorldV1, WorldV2, SCHEMA_NAME_MAX,
};
pub use record_copy::{
    duplicate_entities, duplicate_placements, DuplicateError, Duplicated, Placement,
};
pub use restore::{restore_world, restore_world_from_slice, Restored};
#[cfg(feature = "test-hooks")]
#[doc(hidden)]
pub use restore::{restore_world_failing, streams, streams_level};
pub use restore_error::{RestoreError, RestoreErrorKind};
pub use save::{save_level, save_world, save_world_bytes, SaveError};
pub use schema::{Schema, SchemaError, SchemaErrorKind, SCHEMA_FORMAT, SCHEMA_VERSION};
