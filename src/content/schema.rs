//! World schema files, `ludus.world-schema` version 1: each component's entity-typed
//! properties.
//!
//! ```json
//! {
//!   "format": "ludus.world-schema",
//!   "version": 1,
//!   "schema": "ludus.world-demo.v1",
//!   "components": {
//!     "enemy": { "entity_properties": ["target"] },
//!     "transform": { "entity_properties": [] }
//!   }
//! }
//! ```
//!
//! `schema` is the name World records carry in their own `schema` member. Every component a
//! record uses must be listed, those without entity-typed properties with `[]`: a component
//! the schema does not know could hide a reference that `identity apply` would then leave
//! unrewritten, so it is refused instead. An entity-typed property holds one entity reference
//! as a string (`""` for no target).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::error::{Fault, Located, Shape};
use super::json::{self, Object};
use super::json_path::{index, key, Step};
use super::record::{is_component_name, is_schema_name};

/// The `format` member of a schema file.
pub const SCHEMA_FORMAT: &str = "ludus.world-schema";
/// The one schema-file version this crate reads.
pub const SCHEMA_VERSION: u64 = 1;

/// A World schema: its name, and per component the names of its entity-typed properties.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Schema {
    /// The schema name World records refer to.
    pub name: String,
    /// Component name → names of its entity-typed properties.
    pub components: BTreeMap<String, BTreeSet<String>>,
}

/// Why bytes are not a valid schema file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaErrorKind {
    /// Syntax, duplicate, unknown or missing members, or a wrong JSON type.
    #[error(transparent)]
    Shape(#[from] Shape),
    /// `format` is not `ludus.world-schema`.
    #[error("unsupported schema format {found} (expected \"{SCHEMA_FORMAT}\")")]
    UnsupportedFormat {
        /// The `format` value, as JSON text.
        found: String,
    },
    /// `version` is not 1.
    #[error("unsupported schema version {found} (expected {SCHEMA_VERSION})")]
    UnsupportedVersion {
        /// The `version` value, as JSON text.
        found: String,
    },
    /// `schema` breaks the schema-name rule.
    #[error("invalid schema name {name:?} (1-128 ASCII letters, digits, `_ - . :`)")]
    InvalidSchemaName {
        /// The name.
        name: String,
    },
    /// A component name breaks the legacy-id rule.
    #[error("invalid component name {name:?} (1-64 ASCII letters, digits, `_ - . :`)")]
    InvalidComponentName {
        /// The name.
        name: String,
    },
    /// A property is listed twice for one component.
    #[error("entity property {name:?} is listed twice")]
    RepeatedProperty {
        /// The property name.
        name: String,
    },
}

/// A rejected schema file: file, position and [`SchemaErrorKind`].
pub type SchemaError = Located<SchemaErrorKind>;

impl Schema {
    /// Reads a schema file.
    ///
    /// # Errors
    /// [`SchemaError`]: the first rule broken, with its line and column in `bytes`.
    pub fn from_slice(file: &Path, bytes: &[u8]) -> Result<Self, SchemaError> {
        let value = json::parse_located(file, bytes)?;
        decode(value).map_err(|f| f.locate(file, bytes))
    }

    /// Whether `property` of `component` is entity-typed; `None` when the schema does not
    /// know the component.
    pub fn is_entity_property(&self, component: &str, property: &str) -> Option<bool> {
        self.components
            .get(component)
            .map(|props| props.contains(property))
    }
}

fn decode(value: Value) -> Result<Schema, Fault<SchemaErrorKind>> {
    let root: &[Step] = &[];
    let mut obj = Object::new(value, root).map_err(Fault::convert)?;
    match obj.get("format") {
        Some(Value::String(s)) if s == SCHEMA_FORMAT => {}
        Some(other) => {
            return Err(Fault::new(
                SchemaErrorKind::UnsupportedFormat {
                    found: json::text_of(other),
                },
                &key(root, "format"),
            ))
        }
        None => return Err(Fault::new(Shape::MissingMember { name: "format" }, root)),
    }
    match obj.get("version") {
        Some(v) if v.as_u64() == Some(SCHEMA_VERSION) => {}
        Some(other) => {
            return Err(Fault::new(
                SchemaErrorKind::UnsupportedVersion {
                    found: json::text_of(other),
                },
                &key(root, "version"),
            ))
        }
        None => return Err(Fault::new(Shape::MissingMember { name: "version" }, root)),
    }
    obj.deny_unknown(&["format", "version", "schema", "components"])
        .map_err(Fault::convert)?;
    let name_at = key(root, "schema");
    let name = obj
        .take("schema")
        .and_then(|v| json::string(v, &name_at))
        .map_err(Fault::convert)?;
    if !is_schema_name(&name) {
        return Err(Fault::new(
            SchemaErrorKind::InvalidSchemaName { name },
            &name_at,
        ));
    }
    let comps_at = key(root, "components");
    let comps = obj.take("components").map_err(Fault::convert)?;
    let comps = Object::new(comps, &comps_at).map_err(Fault::convert)?;
    let mut components = BTreeMap::new();
    for (component, value) in comps.into_members() {
        let at = key(&comps_at, &component);
        if !is_component_name(&component) {
            return Err(Fault::new(
                SchemaErrorKind::InvalidComponentName { name: component },
                &at,
            ));
        }
        let mut c = Object::new(value, &at).map_err(Fault::convert)?;
        c.deny_unknown(&["entity_properties"])
            .map_err(Fault::convert)?;
        let list_at = key(&at, "entity_properties");
        let items = c
            .take("entity_properties")
            .and_then(|v| json::array(v, &list_at))
            .map_err(Fault::convert)?;
        let mut props = BTreeSet::new();
        for (i, item) in items.into_iter().enumerate() {
            let item_at = index(&list_at, i);
            let prop = json::string(item, &item_at).map_err(Fault::convert)?;
            if props.contains(&prop) {
                return Err(Fault::new(
                    SchemaErrorKind::RepeatedProperty { name: prop },
                    &item_at,
                ));
            }
            props.insert(prop);
        }
        components.insert(component, props);
    }
    Ok(Schema { name, components })
}
