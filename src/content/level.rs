//! Level files, `ludus.level` version 1: per entity its UUID, name, parent UUID and components;
//! never a handle or a subsystem id.
//!
//! ```json
//! {
//!   "format": "ludus.level",
//!   "version": 1,
//!   "entities": [
//!     { "uuid": "0190a5c2-7b1e-7c3d-9e4f-5a6b7c8d9e0f", "name": "room", "parent": "",
//!       "components": {} },
//!     { "uuid": "5d1f0e7a-93c2-4b8e-a4f6-1e2d3c4b5a69", "name": "door",
//!       "parent": "0190a5c2-7b1e-7c3d-9e4f-5a6b7c8d9e0f", "components": { "pos": { "x": 1 } } }
//!   ]
//! }
//! ```
//!
//! UUIDs follow the level-file policy ([`UuidPolicy::LevelFile`]: versions 1–8, RFC variant,
//! never nil). A second entity with a UUID already in the file is refused, as is a parent that
//! is not in the file or a parent chain that loops; a parent may come later in the file.
//! Entity-typed component properties hold a UUID of the file (`""`: no target).
//! [`restore_level`](super::restore_level) builds the entities, their components, names and
//! hierarchy with the World-record engine (all or nothing), children in file order.

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use super::error::{Fault, Located, Shape};
use super::json::{self, Object};
use super::json_path::{entity_path, index, key, Step};
use super::record::{canonical_all, compact, is_component_name, Components};
use crate::durable::first_cycle;
use crate::identity::{is_legacy_id, UuidError, UuidPolicy};

/// The `format` member of a level file.
pub const LEVEL_FORMAT: &str = "ludus.level";
/// The one level-file version this crate reads.
pub const LEVEL_VERSION: u64 = 1;

/// A level file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LevelFile {
    /// The entities, in file order.
    pub entities: Vec<LevelEntity>,
}

/// One entity of a level file.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelEntity {
    /// Its persistent id (level-file policy).
    pub uuid: Uuid,
    /// Its display name.
    pub name: String,
    /// Its label (a record's legacy id: legacy-id rule, unique in the file), `""` for none
    /// (written only when set).
    pub label: String,
    /// Its parent's UUID; `None` (written `""`) for a root.
    pub parent: Option<Uuid>,
    /// Its components; entity-typed properties hold a UUID of the file, `""` for none.
    pub components: Components,
}

/// Why bytes are not a valid level file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LevelErrorKind {
    /// Syntax, duplicate, unknown or missing members, or a wrong JSON type.
    #[error(transparent)]
    Shape(#[from] Shape),
    /// `format` is not `ludus.level`.
    #[error("unsupported level format {found} (expected \"{LEVEL_FORMAT}\")")]
    UnsupportedFormat {
        /// The `format` value, as JSON text.
        found: String,
    },
    /// `version` is not 1.
    #[error("unsupported level version {found} (expected {LEVEL_VERSION})")]
    UnsupportedVersion {
        /// The `version` value, as JSON text.
        found: String,
    },
    /// A UUID is not canonical text of the level-file policy.
    #[error("invalid uuid {text:?}: {reason}")]
    InvalidUuid {
        /// The text.
        text: String,
        /// Why.
        reason: UuidError,
    },
    /// A second entity with a UUID already in the file.
    #[error("uuid {uuid} is inserted twice")]
    RepeatedUuid {
        /// The UUID.
        uuid: String,
    },
    /// A component name breaks the legacy-id rule.
    #[error("invalid component name {name:?} (1-64 ASCII letters, digits, `_ - . :`)")]
    InvalidComponentName {
        /// The name.
        name: String,
    },
    /// A parent UUID that no entity of the file has.
    #[error("parent {uuid} is not in the file")]
    UnresolvedParent {
        /// The UUID.
        uuid: String,
    },
    /// The parent chain from this entity loops.
    #[error("parent links form a cycle")]
    ParentCycle,
    /// A label that breaks the legacy-id rule (empty labels are written as no member).
    #[error("label {label:?} is not 1-64 ASCII letters, digits or `_ - . :`")]
    InvalidLabel {
        /// The label.
        label: String,
    },
    /// A second entity with a label already in the file.
    #[error("label {label} repeated")]
    RepeatedLabel {
        /// The label.
        label: String,
    },
}

/// A rejected level file: file, position and [`LevelErrorKind`].
pub type LevelError = Located<LevelErrorKind>;

type R<T> = Result<T, Fault<LevelErrorKind>>;

impl LevelFile {
    /// Reads a level file.
    ///
    /// # Errors
    /// [`LevelError`]: the first rule broken, with its line and column in `bytes`.
    pub fn from_slice(file: &Path, bytes: &[u8]) -> Result<Self, LevelError> {
        let value = json::parse_located(file, bytes)?;
        decode(value).map_err(|f| f.locate(file, bytes))
    }

    /// Checks the rules on an in-memory level (UUIDs under the policy and unique, component
    /// names, parents in the file, no cycle).
    ///
    /// # Errors
    /// The first broken rule, with the path of the offending value.
    pub fn check(&self) -> R<()> {
        let mut at_index: HashMap<Uuid, usize> = HashMap::with_capacity(self.entities.len());
        let mut labels = std::collections::HashSet::new();
        for (i, e) in self.entities.iter().enumerate() {
            let at = entity_path(i);
            check_uuid(e.uuid, &key(&at, "uuid"))?;
            if !e.label.is_empty() {
                let label = || e.label.clone();
                if !is_legacy_id(&e.label) {
                    return Err(Fault::new(
                        LevelErrorKind::InvalidLabel { label: label() },
                        &key(&at, "label"),
                    ));
                }
                if !labels.insert(e.label.as_str()) {
                    return Err(Fault::new(
                        LevelErrorKind::RepeatedLabel { label: label() },
                        &key(&at, "label"),
                    ));
                }
            }
            if at_index.insert(e.uuid, i).is_some() {
                return Err(Fault::new(
                    LevelErrorKind::RepeatedUuid {
                        uuid: e.uuid.to_string(),
                    },
                    &key(&at, "uuid"),
                ));
            }
            if let Some(name) = e.components.keys().find(|n| !is_component_name(n)) {
                return Err(Fault::new(
                    LevelErrorKind::InvalidComponentName { name: name.clone() },
                    &key(&key(&at, "components"), name),
                ));
            }
        }
        let parents = self.parent_indices(&at_index)?;
        // One walk over the whole document (linear however the entities are ordered).
        if let Some(i) = first_cycle(parents.len(), |i| parents[i]) {
            return Err(Fault::new(
                LevelErrorKind::ParentCycle,
                &key(&entity_path(i), "parent"),
            ));
        }
        Ok(())
    }

    fn parent_indices(&self, at_index: &HashMap<Uuid, usize>) -> R<Vec<Option<usize>>> {
        self.entities
            .iter()
            .enumerate()
            .map(|(i, e)| match e.parent {
                None => Ok(None),
                Some(p) => at_index.get(&p).copied().map(Some).ok_or_else(|| {
                    Fault::new(
                        LevelErrorKind::UnresolvedParent {
                            uuid: p.to_string(),
                        },
                        &key(&entity_path(i), "parent"),
                    )
                }),
            })
            .collect()
    }

    /// The canonical bytes of this level: the World records' line layout (the envelope's
    /// members one per line, then one entity per line as compact JSON, members in a fixed
    /// order, component and property names sorted), and a final newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        #[derive(Serialize)]
        struct EntityOut<'a> {
            uuid: String,
            #[serde(skip_serializing_if = "str::is_empty")]
            label: &'a str,
            name: &'a str,
            parent: String,
            components: &'a Components,
        }
        let components = canonical_all(self.entities.iter().map(|e| &e.components));
        let mut out = Vec::with_capacity(64 + self.entities.len() * 160);
        out.extend_from_slice(b"{\n  \"format\": ");
        compact(&mut out, LEVEL_FORMAT);
        out.extend_from_slice(
            format!(",\n  \"version\": {LEVEL_VERSION},\n  \"entities\": [").as_bytes(),
        );
        for (i, (e, components)) in self.entities.iter().zip(&components).enumerate() {
            out.extend_from_slice(if i == 0 { b"\n    " } else { b",\n    " });
            let entity = EntityOut {
                uuid: e.uuid.to_string(),
                label: &e.label,
                name: &e.name,
                parent: e.parent.map(|p| p.to_string()).unwrap_or_default(),
                components,
            };
            compact(&mut out, &entity);
        }
        out.extend_from_slice(if self.entities.is_empty() {
            b"]\n}\n"
        } else {
            b"\n  ]\n}\n"
        });
        out
    }
}

fn check_uuid(uuid: Uuid, at: &[Step]) -> R<()> {
    UuidPolicy::LevelFile
        .check(uuid)
        .map(|_| ())
        .map_err(|reason| {
            Fault::new(
                LevelErrorKind::InvalidUuid {
                    text: uuid.to_string(),
                    reason,
                },
                at,
            )
        })
}

fn parse_uuid_text(text: String, at: &[Step]) -> R<Uuid> {
    UuidPolicy::LevelFile
        .parse(&text)
        .map_err(|reason| Fault::new(LevelErrorKind::InvalidUuid { text, reason }, at))
}

fn decode(value: Value) -> R<LevelFile> {
    let root: &[Step] = &[];
    let mut obj = Object::new(value, root).map_err(Fault::convert)?;
    match obj.get("format") {
        Some(Value::String(s)) if s == LEVEL_FORMAT => {}
        Some(other) => {
            return Err(Fault::new(
                LevelErrorKind::UnsupportedFormat {
                    found: json::text_of(other),
                },
                &key(root, "format"),
            ))
        }
        None => return Err(Fault::new(Shape::MissingMember { name: "format" }, root)),
    }
    match obj.get("version") {
        Some(v) if v.as_u64() == Some(LEVEL_VERSION) => {}
        Some(other) => {
            return Err(Fault::new(
                LevelErrorKind::UnsupportedVersion {
                    found: json::text_of(other),
                },
                &key(root, "version"),
            ))
        }
        None => return Err(Fault::new(Shape::MissingMember { name: "version" }, root)),
    }
    obj.deny_unknown(&["format", "version", "entities"])
        .map_err(Fault::convert)?;
    let entities_at = key(root, "entities");
    let items = obj
        .take("entities")
        .and_then(|v| json::array(v, &entities_at))
        .map_err(Fault::convert)?;
    let mut entities = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        entities.push(decode_entity(item, &index(&entities_at, i))?);
    }
    let level = LevelFile { entities };
    level.check()?;
    Ok(level)
}

fn string_member(obj: &mut Object<'_>, name: &'static str) -> R<String> {
    let at = key(obj.path(), name);
    obj.take(name)
        .and_then(|v| json::string(v, &at))
        .map_err(Fault::convert)
}

fn decode_entity(value: Value, at: &[Step]) -> R<LevelEntity> {
    let mut obj = Object::new(value, at).map_err(Fault::convert)?;
    obj.deny_unknown(&["uuid", "label", "name", "parent", "components"])
        .map_err(Fault::convert)?;
    let uuid = string_member(&mut obj, "uuid")?;
    let uuid = parse_uuid_text(uuid, &key(at, "uuid"))?;
    // Optional; `""` written out is refused (an absent member is no label).
    let label = match obj.get("label").is_some() {
        true => {
            let label = string_member(&mut obj, "label")?;
            if !is_legacy_id(&label) {
                return Err(Fault::new(
                    LevelErrorKind::InvalidLabel { label },
                    &key(at, "label"),
                ));
            }
            label
        }
        false => String::new(),
    };
    let name = string_member(&mut obj, "name")?;
    let parent = string_member(&mut obj, "parent")?;
    let parent = if parent.is_empty() {
        None
    } else {
        Some(parse_uuid_text(parent, &key(at, "parent"))?)
    };
    let c_at = key(at, "components");
    let value = obj.take("components").map_err(Fault::convert)?;
    let map = Object::new(value, &c_at).map_err(Fault::convert)?;
    let mut components = Components::new();
    for (name, form) in map.into_members() {
        // A struct's form is an object of properties; a newtype's, a tuple struct's or a
        // unit struct's is any other value (the component's type decides at restore).
        let form = match form {
            Value::Object(_) => {
                let p_at = key(&c_at, &name);
                let props = Object::new(form, &p_at).map_err(Fault::convert)?;
                Value::Object(props.into_members().into_iter().collect())
            }
            other => other,
        };
        components.insert(name, form);
    }
    Ok(LevelEntity {
        uuid,
        label,
        name,
        parent,
        components,
    })
}
