//! Replay, never re-mint: a version-1 document + its committed manifest + the World schema →
//! the version-2 record.
//!
//! [`apply`] is a pure function of its inputs: it reads no clock, no entropy and no file, so
//! the same inputs give the same record, and [`WorldV2::to_bytes`] makes the bytes the same.
//! It refuses inputs the manifest does not describe exactly.

use serde_json::Value;

use super::error::Text;
use super::json_path::{index, key, JsonPath, Step};
use super::manifest::Manifest;
use super::path::DocPath;
use super::record::{property_mut, EntityV2, WorldV1, WorldV2};
use super::schema::Schema;
use crate::identity::{format_uuid, SourceObjectId, UUID_TEXT_LEN};

/// Why a version-1 document was not replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyErrorKind {
    /// The document names another schema than the schema file.
    #[error("document uses schema {world:?}, the schema file describes {schema:?}")]
    SchemaMismatch {
        /// The document's `schema`.
        world: String,
        /// The schema file's `schema`.
        schema: String,
    },
    /// `unsupported`: the document uses the Editor's scene extension (an entity has a
    /// `parent` member); parent links are not migrated.
    #[error(
        "unsupported: entity {id:?} uses the scene extension (`parent`), which is not migrated"
    )]
    Unsupported {
        /// The entity's legacy id.
        id: String,
    },
    /// `stale-manifest`: the manifest has no entry for this document.
    #[error("stale-manifest: the manifest has no document {path}")]
    MissingDocument {
        /// The document path.
        path: DocPath,
    },
    /// `stale-manifest`: an entity has no committed UUID.
    #[error("stale-manifest: entity {id:?} has no committed uuid in the manifest")]
    EntityWithoutUuid {
        /// The entity's legacy id.
        id: String,
    },
    /// `stale-manifest`: a manifest object has no entity in the document.
    #[error("stale-manifest: manifest object {legacy_id:?} has no entity in the document")]
    ObjectWithoutEntity {
        /// The object's legacy id.
        legacy_id: String,
    },
    /// A component the schema does not list (it could hide a reference).
    #[error("component {component:?} is not in the schema")]
    UnknownComponent {
        /// The component name.
        component: String,
    },
    /// An entity-typed property that does not hold a string.
    #[error(
        "entity property {}.{} must hold a legacy id string (\"\" for none)",
        Text(component),
        Text(property)
    )]
    NotAReference {
        /// The component.
        component: String,
        /// The property.
        property: String,
    },
    /// `unresolved-reference`: a reference names an id that is not in the document.
    #[error(
        "unresolved-reference: {}.{} names {target:?}, which is not an entity of the document",
        Text(component),
        Text(property)
    )]
    UnresolvedReference {
        /// The component.
        component: String,
        /// The property.
        property: String,
        /// The legacy id it names.
        target: String,
    },
}

impl ApplyErrorKind {
    /// The refusal's class, as `identity apply` names it and maps it to an exit code.
    pub fn class(&self) -> ApplyClass {
        match self {
            Self::Unsupported { .. } => ApplyClass::Unsupported,
            Self::MissingDocument { .. }
            | Self::EntityWithoutUuid { .. }
            | Self::ObjectWithoutEntity { .. } => ApplyClass::StaleManifest,
            Self::UnresolvedReference { .. } => ApplyClass::UnresolvedReference,
            Self::SchemaMismatch { .. }
            | Self::UnknownComponent { .. }
            | Self::NotAReference { .. } => ApplyClass::InvalidInput,
        }
    }
}

/// The classes of [`ApplyErrorKind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyClass {
    /// The inputs disagree with the schema.
    InvalidInput,
    /// `stale-manifest`.
    StaleManifest,
    /// `unresolved-reference`.
    UnresolvedReference,
    /// `unsupported`.
    Unsupported,
}

/// Which input a fault is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The version-1 document.
    World,
    /// The manifest.
    Manifest,
}

/// A refusal of [`apply`]: what, in which input, and where in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyFault {
    /// What is wrong.
    pub kind: ApplyErrorKind,
    /// Which input holds the offending value.
    pub origin: Origin,
    /// Its path in that input.
    pub path: JsonPath,
}

fn fault(kind: ApplyErrorKind, origin: Origin, path: &[Step]) -> ApplyFault {
    ApplyFault {
        kind,
        origin,
        path: path.to_vec(),
    }
}

/// Replays `manifest`'s identities for the document at `path` onto `world`.
///
/// Checks, in order: the schema name; the scene extension (`unsupported`); the manifest entry
/// for `path`, every entity's committed UUID and every manifest object's entity
/// (`stale-manifest`); then, entity by entity, that each component is in `schema` and each
/// entity-typed property holds `""` or the id of an entity of the document
/// (`unresolved-reference`). Entities keep their document order; `label` is the legacy id.
///
/// # Errors
/// [`ApplyFault`]: the first refusal, with the input and path it is in.
pub fn apply(
    world: &WorldV1,
    path: &DocPath,
    manifest: &Manifest,
    schema: &Schema,
) -> Result<WorldV2, ApplyFault> {
    apply_owned(world.clone(), path, manifest, schema)
}

/// [`apply`], consuming the document (its component values move into the record instead of
/// being copied: what `ludus-cook identity apply` runs).
///
/// # Errors
/// As [`apply`].
pub(crate) fn apply_owned(
    world: WorldV1,
    path: &DocPath,
    manifest: &Manifest,
    schema: &Schema,
) -> Result<WorldV2, ApplyFault> {
    let entities_at = [Step::Key("entities".into())];
    if world.schema != schema.name {
        return Err(fault(
            ApplyErrorKind::SchemaMismatch {
                world: world.schema.clone(),
                schema: schema.name.clone(),
            },
            Origin::World,
            &[Step::Key("schema".into())],
        ));
    }
    if let Some(i) = world.entities.iter().position(|e| e.parent.is_some()) {
        return Err(fault(
            ApplyErrorKind::Unsupported {
                id: world.entities[i].id.clone(),
            },
            Origin::World,
            &key(&index(&entities_at, i), "parent"),
        ));
    }
    let Some((doc_index, doc)) = manifest.document(path) else {
        return Err(fault(
            ApplyErrorKind::MissingDocument { path: path.clone() },
            Origin::World,
            &[],
        ));
    };
    // One hash index of the manifest's objects (a binary search over strings costs a dozen
    // compares, and their cache misses, per entity and per reference).
    let object_of: hashbrown::HashMap<&str, SourceObjectId> = doc
        .objects
        .iter()
        .map(|o| (o.legacy_id.as_str(), o.object))
        .collect();
    let mut uuids = Vec::with_capacity(world.entities.len());
    for (i, e) in world.entities.iter().enumerate() {
        match object_of.get(e.id.as_str()).copied() {
            Some(uuid) => uuids.push(uuid),
            None => {
                return Err(fault(
                    ApplyErrorKind::EntityWithoutUuid { id: e.id.clone() },
                    Origin::World,
                    &key(&index(&entities_at, i), "id"),
                ))
            }
        }
    }
    let ids: hashbrown::HashSet<&str> = world.entities.iter().map(|e| e.id.as_str()).collect();
    if let Some(j) = doc
        .objects
        .iter()
        .position(|o| !ids.contains(o.legacy_id.as_str()))
    {
        let objects = key(
            &index(&[Step::Key("documents".into())], doc_index),
            "objects",
        );
        return Err(fault(
            ApplyErrorKind::ObjectWithoutEntity {
                legacy_id: doc.objects[j].legacy_id.clone(),
            },
            Origin::Manifest,
            &key(&index(&objects, j), "legacy_id"),
        ));
    }
    drop(ids);
    let mut entities = Vec::with_capacity(world.entities.len());
    for (i, (e, uuid)) in world.entities.into_iter().zip(uuids).enumerate() {
        let comps_at = || key(&index(&entities_at, i), "components");
        // The component maps are rewritten in place and move into the record.
        let mut components = e.components;
        for (name, props) in components.iter_mut() {
            let Some(refs) = schema.components.get(name) else {
                return Err(fault(
                    ApplyErrorKind::UnknownComponent {
                        component: name.clone(),
                    },
                    Origin::World,
                    &key(&comps_at(), name),
                ));
            };
            let out = props;
            for property in refs {
                let Some(value) = property_mut(out, property) else {
                    continue;
                };
                let at = || key(&key(&comps_at(), name), property);
                let Value::String(target) = value else {
                    return Err(fault(
                        ApplyErrorKind::NotAReference {
                            component: name.clone(),
                            property: property.clone(),
                        },
                        Origin::World,
                        &at(),
                    ));
                };
                if target.is_empty() {
                    continue;
                }
                match object_of.get(target.as_str()) {
                    Some(uuid) => {
                        let mut text = [0u8; UUID_TEXT_LEN];
                        let text = format_uuid(&uuid.as_uuid(), &mut text);
                        target.clear();
                        target.push_str(text);
                    }
                    None => {
                        return Err(fault(
                            ApplyErrorKind::UnresolvedReference {
                                component: name.clone(),
                                property: property.clone(),
                                target: target.clone(),
                            },
                            Origin::World,
                            &at(),
                        ))
                    }
                }
            }
        }
        entities.push(EntityV2 {
            uuid,
            label: e.id,
            name: e.name,
            // A version-1 document with parent links is refused above (`unsupported`).
            parent: None,
            components,
        });
    }
    Ok(WorldV2 {
        schema: world.schema,
        document: doc.document,
        entities,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_messages_escape_property_names() {
        let e = ApplyErrorKind::NotAReference {
            component: "enemy".into(),
            property: "tar\nget".into(),
        };
        assert_eq!(
            e.to_string(),
            r#"entity property enemy.tar\nget must hold a legacy id string ("" for none)"#
        );
        let e = ApplyErrorKind::UnresolvedReference {
            component: "enemy".into(),
            property: "tar\nget".into(),
            target: "gh\nost".into(),
        };
        assert_eq!(
            e.to_string(),
            r#"unresolved-reference: enemy.tar\nget names "gh\nost", which is not an entity of the document"#
        );
    }
}
