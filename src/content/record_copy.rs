//! Copies inside durable content: graph duplication of a record's entities (fresh source ids)
//! and of placements (fresh instance ids), as pure transactions: the input is borrowed, the
//! output is a whole new record (or placement list), and any failure returns an error and no
//! output at all.
//!
//! [`duplicate_entities`]: validate the record (its rules, the schema naming every component
//! and every entity-typed property holding a string), validate the selection (every UUID in
//! the record, none twice), mint one fresh `SourceObjectId` per selected entity — each
//! candidate checked against every identity in the record (entities and document) and those
//! minted so far, at most [`MINT_ATTEMPTS`](crate::identity::MINT_ATTEMPTS) candidates, then
//! [`IdentityConflict`](crate::identity::IdentityConflict) — build the old → new table, clone
//! the selected entities, rewrite each clone's entity-typed properties whose target is in the
//! selection, keep the others (external references) as they are, and re-emit the whole record
//! with the clones appended in selection order. Only durable ids are produced; no runtime
//! handle is read or written.
//!
//! [`duplicate_placements`]: a placement names a source document under an instance scope;
//! duplicating one mints a fresh `InstanceId` (checked against every instance of the list and
//! those minted so far) and keeps the document and so every source-object id, so restoring
//! the same record under the copy's scope makes a second, independent graph.

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use uuid::Uuid;

use super::error::{Fault, Text};
use super::record::{property_mut, EntityV2, RecordErrorKind, WorldV2};
use super::schema::Schema;
use crate::identity::{
    is_legacy_id, mint_unique, AssetId, EntropySource, InstanceId, MintError, SourceObjectId,
    LEGACY_ID_MAX,
};

/// Why a duplication produced nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DuplicateError {
    /// The record breaks a record rule.
    #[error("malformed record: {0}")]
    Record(Fault<RecordErrorKind>),
    /// The record follows another schema than the one given.
    #[error("record schema {record:?} is not {schema:?}")]
    SchemaMismatch {
        /// The record's schema name.
        record: String,
        /// The schema given.
        schema: String,
    },
    /// A selected entity has a component the schema does not list (its references could not
    /// be rewritten).
    #[error("entity {entity}: component {component:?} is not in the schema")]
    UnknownComponent {
        /// The entity.
        entity: SourceObjectId,
        /// The component.
        component: String,
    },
    /// An entity-typed property of a selected entity does not hold a string.
    #[error(
        "entity {entity}: {}.{} is not an entity reference",
        Text(component),
        Text(property)
    )]
    NotAReference {
        /// The entity.
        entity: SourceObjectId,
        /// The component.
        component: String,
        /// The property.
        property: String,
    },
    /// A selected id is not in the record (or placement list).
    #[error("selection names {uuid}, which is not there")]
    UnknownSelection {
        /// The id.
        uuid: Uuid,
    },
    /// A selected id is named twice.
    #[error("selection names {uuid} twice")]
    RepeatedSelection {
        /// The id.
        uuid: Uuid,
    },
    /// Entropy was unavailable, or every candidate collided (`IdentityConflict`).
    #[error(transparent)]
    Mint(#[from] MintError),
}

/// A duplicated record: the whole new record and, per selected entity, `(original, copy)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Duplicated {
    /// The input record with the copies appended.
    pub record: WorldV2,
    /// `(original uuid, copy uuid)` in selection order.
    pub copies: Vec<(SourceObjectId, SourceObjectId)>,
}

/// Duplicates the `selection` of `record` as one graph transaction (module docs).
///
/// # Errors
/// [`DuplicateError`]; nothing is produced and `entropy` may have been drawn from.
pub fn duplicate_entities<S: EntropySource + ?Sized>(
    record: &WorldV2,
    schema: &Schema,
    selection: &[SourceObjectId],
    entropy: &mut S,
) -> Result<Duplicated, DuplicateError> {
    record.check().map_err(DuplicateError::Record)?;
    if record.schema != schema.name {
        return Err(DuplicateError::SchemaMismatch {
            record: record.schema.clone(),
            schema: schema.name.clone(),
        });
    }
    let index: HashMap<Uuid, usize> = record
        .entities
        .iter()
        .enumerate()
        .map(|(i, e)| (e.uuid.as_uuid(), i))
        .collect();
    let mut chosen = Vec::with_capacity(selection.len());
    let mut seen = HashSet::with_capacity(selection.len());
    for s in selection {
        let uuid = s.as_uuid();
        let Some(&i) = index.get(&uuid) else {
            return Err(DuplicateError::UnknownSelection { uuid });
        };
        if !seen.insert(uuid) {
            return Err(DuplicateError::RepeatedSelection { uuid });
        }
        check_references(&record.entities[i], schema)?;
        chosen.push(i);
    }
    // Mint: every identity of the record and every id minted so far is taken.
    let mut taken: HashSet<Uuid> = index.keys().copied().collect();
    taken.insert(record.document.as_uuid());
    let mut map: HashMap<Uuid, SourceObjectId> = HashMap::with_capacity(chosen.len());
    let mut copies = Vec::with_capacity(chosen.len());
    for &i in &chosen {
        let fresh = mint_unique(entropy, |c| taken.contains(c))?;
        taken.insert(fresh);
        // `mint_unique` yields nonnil version-4 UUIDs only.
        let fresh = SourceObjectId::from_uuid(fresh)
            .map_err(|_| MintError::Conflict(crate::identity::IdentityConflict))?;
        let old = record.entities[i].uuid;
        map.insert(old.as_uuid(), fresh);
        copies.push((old, fresh));
    }
    let mut labels: HashSet<String> = record.entities.iter().map(|e| e.label.clone()).collect();
    let mut out = record.clone();
    out.entities.reserve(chosen.len());
    for (&i, &(_, fresh)) in chosen.iter().zip(&copies) {
        let mut copy = record.entities[i].clone();
        copy.uuid = fresh;
        copy.label = fresh_label(&copy.label, &fresh, &mut labels);
        // A parent in the selection becomes its copy; any other stays (the copy is a sibling
        // of its original, as an editor's duplicate is).
        if let Some(new) = copy.parent.and_then(|p| map.get(&p.as_uuid())) {
            copy.parent = Some(*new);
        }
        for (component, props) in copy.components.iter_mut() {
            let Some(refs) = schema.components.get(component) else {
                continue;
            };
            for property in refs {
                if let Some(Value::String(text)) = property_mut(props, property) {
                    let target = text.parse::<SourceObjectId>().ok();
                    if let Some(new) = target.and_then(|t| map.get(&t.as_uuid())) {
                        *text = new.to_string();
                    }
                }
            }
        }
        out.entities.push(copy);
    }
    debug_assert!(out.check().is_ok());
    Ok(Duplicated {
        record: out,
        copies,
    })
}

/// Every component of `e` is in the schema and every entity-typed property a string.
fn check_references(e: &EntityV2, schema: &Schema) -> Result<(), DuplicateError> {
    for (component, props) in &e.components {
        let Some(refs) = schema.components.get(component) else {
            return Err(DuplicateError::UnknownComponent {
                entity: e.uuid,
                component: component.clone(),
            });
        };
        for property in refs {
            if let Some(v) = super::record::property(props, property) {
                if !v.is_string() {
                    return Err(DuplicateError::NotAReference {
                        entity: e.uuid,
                        component: component.clone(),
                        property: property.clone(),
                    });
                }
            }
        }
    }
    Ok(())
}

/// A label for a copy: `LABEL.copy`, `LABEL.copy2`, … when it fits the legacy-id rule and is
/// free, else the copy's UUID text (unique: no two identities of a record share a UUID, and
/// no other label holds it, or the first free `UUID.N`).
fn fresh_label(label: &str, uuid: &SourceObjectId, labels: &mut HashSet<String>) -> String {
    let mut pick = |candidate: String| {
        (is_legacy_id(&candidate) && !labels.contains(&candidate)).then(|| {
            labels.insert(candidate.clone());
            candidate
        })
    };
    for n in 1..=9 {
        let candidate = if n == 1 {
            format!("{label}.copy")
        } else {
            format!("{label}.copy{n}")
        };
        if candidate.len() <= LEGACY_ID_MAX {
            if let Some(l) = pick(candidate) {
                return l;
            }
        }
    }
    let text = uuid.to_string();
    if let Some(l) = pick(text.clone()) {
        return l;
    }
    // Labels are finite: some suffix is free.
    (1u64..)
        .find_map(|n| pick(format!("{text}.{n}")))
        .unwrap_or(text)
}

/// One placement: a source document under an instance scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Placement {
    /// The placement's instance scope.
    pub instance: InstanceId,
    /// The source document placed.
    pub document: AssetId,
}

/// Duplicates the placements whose instances are `selection`: each copy gets a fresh
/// `InstanceId` and keeps its document (and so every source-object id); the whole list is
/// returned with the copies appended in selection order.
///
/// # Errors
/// `UnknownSelection`, `RepeatedSelection`, `Mint`; nothing is produced.
pub fn duplicate_placements<S: EntropySource + ?Sized>(
    placements: &[Placement],
    selection: &[InstanceId],
    entropy: &mut S,
) -> Result<Vec<Placement>, DuplicateError> {
    let mut taken: HashSet<Uuid> = placements.iter().map(|p| p.instance.as_uuid()).collect();
    let mut seen = HashSet::with_capacity(selection.len());
    let mut chosen = Vec::with_capacity(selection.len());
    for s in selection {
        let uuid = s.as_uuid();
        let Some(p) = placements.iter().find(|p| p.instance == *s) else {
            return Err(DuplicateError::UnknownSelection { uuid });
        };
        if !seen.insert(uuid) {
            return Err(DuplicateError::RepeatedSelection { uuid });
        }
        chosen.push(*p);
    }
    let mut out = placements.to_vec();
    out.reserve(chosen.len());
    for p in chosen {
        let fresh = mint_unique(entropy, |c| taken.contains(c))?;
        taken.insert(fresh);
        let instance = InstanceId::from_uuid(fresh)
            .map_err(|_| MintError::Conflict(crate::identity::IdentityConflict))?;
        out.push(Placement {
            instance,
            document: p.document,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_a_reference_escapes_property_names() {
        let entity: SourceObjectId = "67e55044-10b1-426f-9247-bb680e5fe0c8".parse().unwrap();
        let e = DuplicateError::NotAReference {
            entity,
            component: "enemy".into(),
            property: "tar\nget".into(),
        };
        assert_eq!(
            e.to_string(),
            format!(r"entity {entity}: enemy.tar\nget is not an entity reference")
        );
    }
}
