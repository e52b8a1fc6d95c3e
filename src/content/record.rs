//! World records, version 1 (legacy ids) and version 2 (durable UUIDs).
//!
//! Both versions share one envelope (`docs/content.md` defines them exactly):
//!
//! ```json
//! { "version": 1, "schema": "ludus.world-demo.v1", "entities": [
//!   { "id": "guard-a", "name": "guard-a", "components": { "enemy": { "target": "player" } } } ] }
//! ```
//!
//! ```json
//! { "version": 2, "schema": "ludus.world-demo.v1",
//!   "document": "0b7e8c1d-2f43-4a96-9d51-6c2e4f8a1b3d", "entities": [
//!   { "uuid": "5d1f0e7a-93c2-4b8e-a4f6-1e2d3c4b5a69", "label": "guard-a", "name": "guard-a",
//!     "components": { "enemy": { "target": "8a2b4c6d-1e3f-4a5b-9c7d-2e4f6a8b0c1d" } } } ] }
//! ```
//!
//! Component values stay [`serde_json::Value`]s: which properties hold entity references is
//! the [`Schema`](super::Schema)'s business, not the record reader's. Reading never mints and
//! never rewrites anything; writing is canonical, so equal records give equal bytes. Version
//! 1 is written in serde_json's pretty layout, as the legacy tools wrote it. Version 2 uses the
//! **line layout**: the envelope's members one per line, then one
//! entity per line as compact JSON (members in a fixed order, component and property names
//! sorted), then a final newline. Editing one entity changes one line of a diff, and the
//! bytes are those of compact JSON plus about five per entity.
//!
//! ```text
//! {
//!   "version": 2,
//!   "schema": "ludus.world-demo.v1",
//!   "document": "0b7e8c1d-2f43-4a96-9d51-6c2e4f8a1b3d",
//!   "entities": [
//!     {"uuid":"5d1f0e7a-…","label":"guard-a","name":"guard-a","components":{…}},
//!     {"uuid":"8a2b4c6d-…","label":"player","name":"player","components":{}}
//!   ]
//! }
//! ```

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::path::Path;

// Sets keyed by untrusted ids: hashbrown's foldhash is seeded per set and cheaper than SipHash.
use hashbrown::HashSet;

use serde::Serialize;
use serde_json::Value;

use crate::durable::first_cycle;
use crate::identity::{is_legacy_id, AssetId, SourceObjectId, UuidError};

use super::error::{Fault, Located, Shape};
use super::json::{self, uuid_member, InvalidUuid, Object};
use super::json_path::{index, key, Step};

/// The longest schema name, in bytes.
pub const SCHEMA_NAME_MAX: usize = 128;

/// An entity's components: component name → the component's serde form, sorted by name. A
/// struct's form is an object of properties; a newtype's is its field's form, a tuple
/// struct's an array, a unit struct's `null` (see [`property`] for how a schema names their
/// fields).
pub type Components = BTreeMap<String, Value>;

/// The field `name` of a component's serde form `form`: an object's property, an array's
/// element at decimal index `name` (a tuple struct's field `.0`, `.1`, …), or, for any other
/// form (a newtype's), the form itself as field `"0"`.
pub fn property<'v>(form: &'v Value, name: &str) -> Option<&'v Value> {
    match form {
        Value::Object(props) => props.get(name),
        Value::Array(items) => name.parse::<usize>().ok().and_then(|i| items.get(i)),
        other => (name == "0").then_some(other),
    }
}

/// [`property`], mutably.
pub fn property_mut<'v>(form: &'v mut Value, name: &str) -> Option<&'v mut Value> {
    match form {
        Value::Object(props) => props.get_mut(name),
        Value::Array(items) => name.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
        other => (name == "0").then_some(other),
    }
}

/// Whether `name` is a valid schema name: 1–[`SCHEMA_NAME_MAX`] ASCII letters, digits,
/// `_ - . :`.
pub fn is_schema_name(name: &str) -> bool {
    (1..=SCHEMA_NAME_MAX).contains(&name.len()) && name.bytes().all(id_byte)
}

/// Whether `name` is a valid component name: the legacy-id rule (1–64 ASCII letters, digits,
/// `_ - . :`).
pub fn is_component_name(name: &str) -> bool {
    is_legacy_id(name)
}

fn id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':')
}

/// A version-1 World record: entities named by legacy ids.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WorldV1 {
    /// The World schema the components follow (a schema name).
    pub schema: String,
    /// The entities, in document order.
    pub entities: Vec<EntityV1>,
}

/// One entity of a version-1 record.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EntityV1 {
    /// The legacy id: unique in the document, 1–64 ASCII letters, digits, `_ - . :`.
    pub id: String,
    /// The display name (any string).
    pub name: String,
    /// The scene extension's parent link: a legacy id, or `""` for a root. Present only in
    /// documents that use the Editor's scene extension, which `identity apply` refuses.
    pub parent: Option<String>,
    /// The components; entity-typed properties hold a legacy id, `""` for no target.
    pub components: Components,
}

/// A version-2 World record: entities named by durable UUIDs. With parent links it is written
/// as version 3 (the hierarchy extension: every entity names its parent), without as version
/// 2; both read into this type.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldV2 {
    /// The World schema the components follow (a schema name).
    pub schema: String,
    /// The document's `AssetId`.
    pub document: AssetId,
    /// The entities, in document order.
    pub entities: Vec<EntityV2>,
}

/// One entity of a version-2 record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntityV2 {
    /// The entity's identity; unique in the record and distinct from the document's.
    pub uuid: SourceObjectId,
    /// The version-1 id, kept as a readable label: unique, legacy-id rule.
    pub label: String,
    /// The display name (any string).
    pub name: String,
    /// The parent's uuid, an entity of the same record; `None` for a root. Children keep the
    /// document order of their entities.
    pub parent: Option<SourceObjectId>,
    /// The components; entity-typed properties hold the target's uuid, `""` for no target.
    pub components: Components,
}

/// A World record of either version.
#[derive(Debug, Clone, PartialEq)]
pub enum WorldRecord {
    /// `"version": 1`.
    V1(WorldV1),
    /// `"version": 2`, or `3` (version 2 with parent links).
    V2(WorldV2),
}

/// Why bytes are not a valid World record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordErrorKind {
    /// Syntax, duplicate, unknown or missing members, or a wrong JSON type.
    #[error(transparent)]
    Shape(#[from] Shape),
    /// `version` is neither 1, 2 nor 3.
    #[error("unsupported World record version {found} (expected 1, 2 or 3)")]
    UnsupportedVersion {
        /// The `version` value, as JSON text.
        found: String,
    },
    /// A supported version, but not the one the caller asked for.
    #[error("World record version {found}, expected version {expected}")]
    WrongVersion {
        /// The version asked for.
        expected: u64,
        /// The version found.
        found: u64,
    },
    /// `schema` breaks the schema-name rule.
    #[error("invalid schema name {name:?} (1-128 ASCII letters, digits, `_ - . :`)")]
    InvalidSchemaName {
        /// The name.
        name: String,
    },
    /// An `id`, `label` or `parent` breaks the legacy-id rule.
    #[error("invalid legacy id {id:?} (1-64 ASCII letters, digits, `_ - . :`)")]
    InvalidLegacyId {
        /// The text.
        id: String,
    },
    /// A component name breaks the legacy-id rule.
    #[error("invalid component name {name:?} (1-64 ASCII letters, digits, `_ - . :`)")]
    InvalidComponentName {
        /// The name.
        name: String,
    },
    /// A UUID is not canonical text of a nonnil version-4 UUID.
    #[error("invalid uuid {text:?}: {reason}")]
    InvalidUuid {
        /// The text.
        text: String,
        /// Why it is refused.
        reason: UuidError,
    },
    /// Two entities share an `id` (version 1) or a `label` (version 2).
    #[error("legacy id {id:?} names two entities")]
    RepeatedLegacyId {
        /// The repeated id.
        id: String,
    },
    /// Two entities share a `uuid`, or an entity's `uuid` is the document's.
    #[error("uuid {uuid} names two identities in the record")]
    RepeatedUuid {
        /// The repeated UUID.
        uuid: String,
    },
    /// A `parent` names no entity of the record (version 3).
    #[error("parent {uuid} is not an entity of the record")]
    UnknownParent {
        /// The parent's UUID.
        uuid: String,
    },
    /// Parent links form a cycle (version 3).
    #[error("parent links form a cycle")]
    ParentCycle,
}

impl From<InvalidUuid> for RecordErrorKind {
    fn from(e: InvalidUuid) -> Self {
        Self::InvalidUuid {
            text: e.text,
            reason: e.reason,
        }
    }
}

/// A rejected World record: file, position and [`RecordErrorKind`].
pub type RecordError = Located<RecordErrorKind>;

type R<T> = Result<T, Fault<RecordErrorKind>>;

impl WorldRecord {
    /// Reads a World record of either version.
    ///
    /// # Errors
    /// [`RecordError`]: the first rule broken, with its line and column in `bytes`.
    pub fn from_slice(file: &Path, bytes: &[u8]) -> Result<Self, RecordError> {
        let value = json::parse_located(file, bytes)?;
        decode(value).map_err(|f| f.locate(file, bytes))
    }

    /// The record's version number.
    pub fn version(&self) -> u64 {
        match self {
            Self::V1(_) => 1,
            Self::V2(world) => world.version(),
        }
    }
}

impl WorldV1 {
    /// Reads a version-1 World record.
    ///
    /// # Errors
    /// [`RecordError`]; a valid version-2 record is refused with `WrongVersion`.
    ///
    /// # Examples
    ///
    /// ```
    /// use ludus::content::WorldV1;
    /// use std::path::Path;
    /// let text = br#"{"version": 1, "schema": "demo", "entities": [
    ///     {"id": "a", "name": "A", "components": {"enemy": {"target": ""}}}]}"#;
    /// let world = WorldV1::from_slice(Path::new("w.json"), text)?;
    /// assert_eq!(world.entities[0].id, "a");
    /// let bad = br#"{"version": 1, "schema": "demo", "entities": [], "extra": 0}"#;
    /// let err = WorldV1::from_slice(Path::new("w.json"), bad).unwrap_err();
    /// assert_eq!(err.to_string(), "w.json:1:59: unknown member `extra`");
    /// # Ok::<(), ludus::content::RecordError>(())
    /// ```
    pub fn from_slice(file: &Path, bytes: &[u8]) -> Result<Self, RecordError> {
        match WorldRecord::from_slice(file, bytes)? {
            WorldRecord::V1(world) => Ok(world),
            WorldRecord::V2(_) => Err(wrong_version(1, 2).locate(file, bytes)),
        }
    }

    /// Checks the rules on an in-memory record (schema name, ids unique and valid, component
    /// names valid, parents valid).
    ///
    /// # Errors
    /// The first broken rule, with the path of the offending value.
    pub fn check(&self) -> Result<(), Fault<RecordErrorKind>> {
        check_schema(&self.schema)?;
        let entities = [Step::Key("entities".into())];
        let mut ids = HashSet::with_capacity(self.entities.len());
        for (i, e) in self.entities.iter().enumerate() {
            // Paths are built only for a fault.
            let at = |member: &str| key(&index(&entities, i), member);
            check_label(&e.id, || at("id"), &mut ids)?;
            if let Some(parent) = &e.parent {
                if !parent.is_empty() && !is_legacy_id(parent) {
                    return Err(Fault::new(
                        RecordErrorKind::InvalidLegacyId { id: parent.clone() },
                        &at("parent"),
                    ));
                }
            }
            check_components(&e.components, || at("components"))?;
        }
        Ok(())
    }

    /// The canonical bytes of this record: serde_json's pretty layout (two-space indent), as
    /// the legacy tools wrote version 1, and a final newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        #[derive(Serialize)]
        struct Out<'a> {
            version: u64,
            schema: &'a str,
            entities: Vec<EntityOut<'a>>,
        }
        #[derive(Serialize)]
        struct EntityOut<'a> {
            id: &'a str,
            name: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            parent: Option<&'a str>,
            components: &'a Components,
        }
        let mut out = Vec::with_capacity(4096);
        let components = canonical_all(self.entities.iter().map(|e| &e.components));
        let record = Out {
            version: 1,
            schema: &self.schema,
            entities: self
                .entities
                .iter()
                .zip(&components)
                .map(|(e, components)| EntityOut {
                    id: &e.id,
                    name: &e.name,
                    parent: e.parent.as_deref(),
                    components,
                })
                .collect(),
        };
        // Serialising these types cannot fail: string keys, finite numbers, an in-memory writer.
        let _ = serde_json::to_writer_pretty(&mut out, &record);
        out.push(b'\n');
        out
    }
}

impl WorldV2 {
    /// Reads a version-2 World record.
    ///
    /// # Errors
    /// [`RecordError`]; a valid version-1 record is refused with `WrongVersion`.
    pub fn from_slice(file: &Path, bytes: &[u8]) -> Result<Self, RecordError> {
        match WorldRecord::from_slice(file, bytes)? {
            WorldRecord::V2(world) => Ok(world),
            WorldRecord::V1(_) => Err(wrong_version(2, 1).locate(file, bytes)),
        }
    }

    /// The version it is written as: 3 when an entity has a parent, else 2.
    pub fn version(&self) -> u64 {
        if self.entities.iter().any(|e| e.parent.is_some()) {
            3
        } else {
            2
        }
    }

    /// Checks the rules on an in-memory record (schema name, labels unique and valid, uuids
    /// unique and distinct from the document's, component names valid, parents entities of
    /// the record and acyclic).
    ///
    /// # Errors
    /// The first broken rule, with the path of the offending value.
    pub fn check(&self) -> Result<(), Fault<RecordErrorKind>> {
        check_schema(&self.schema)?;
        let entities = [Step::Key("entities".into())];
        let mut labels = HashSet::with_capacity(self.entities.len());
        let mut uuids = HashSet::with_capacity(self.entities.len() + 1);
        uuids.insert(self.document.as_uuid());
        for (i, e) in self.entities.iter().enumerate() {
            // Paths are built only for a fault.
            let at = |member: &str| key(&index(&entities, i), member);
            if !uuids.insert(e.uuid.as_uuid()) {
                return Err(Fault::new(
                    RecordErrorKind::RepeatedUuid {
                        uuid: e.uuid.to_string(),
                    },
                    &at("uuid"),
                ));
            }
            check_label(&e.label, || at("label"), &mut labels)?;
            check_components(&e.components, || at("components"))?;
        }
        if self.version() == 3 {
            self.check_parents()?;
        }
        Ok(())
    }

    /// Every parent an entity of the record, and no cycle (one walk over the whole record).
    fn check_parents(&self) -> Result<(), Fault<RecordErrorKind>> {
        let at = |i: usize| key(&index(&[Step::Key("entities".into())], i), "parent");
        let index_of: HashMap<SourceObjectId, usize> = self
            .entities
            .iter()
            .enumerate()
            .map(|(i, e)| (e.uuid, i))
            .collect();
        let mut parents = Vec::with_capacity(self.entities.len());
        for (i, e) in self.entities.iter().enumerate() {
            parents.push(match e.parent {
                None => None,
                Some(p) => Some(*index_of.get(&p).ok_or_else(|| {
                    Fault::new(
                        RecordErrorKind::UnknownParent {
                            uuid: p.to_string(),
                        },
                        &at(i),
                    )
                })?),
            });
        }
        match first_cycle(parents.len(), |i| parents[i]) {
            Some(i) => Err(Fault::new(RecordErrorKind::ParentCycle, &at(i))),
            None => Ok(()),
        }
    }

    /// The canonical bytes of this record (the line layout, module docs): version 3, with a
    /// `parent` member on every entity (`""` for a root), when an entity has a parent.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128 + self.entities.len() * 160);
        let v3 = self.version() == 3;
        out.extend_from_slice(if v3 {
            b"{\n  \"version\": 3,\n  \"schema\": "
        } else {
            b"{\n  \"version\": 2,\n  \"schema\": "
        });
        compact(&mut out, &self.schema);
        out.extend_from_slice(b",\n  \"document\": ");
        compact(&mut out, &self.document);
        out.extend_from_slice(b",\n  \"entities\": [");
        /// An entity as written: `EntityV2`'s members, its components canonical.
        #[derive(Serialize)]
        struct EntityOut<'a> {
            uuid: &'a SourceObjectId,
            label: &'a str,
            name: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            parent: Option<ParentOut>,
            components: &'a Components,
        }
        /// A parent as written: its uuid, `""` for a root.
        struct ParentOut(Option<SourceObjectId>);
        impl Serialize for ParentOut {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match &self.0 {
                    Some(p) => p.serialize(s),
                    None => s.serialize_str(""),
                }
            }
        }
        let components = canonical_all(self.entities.iter().map(|e| &e.components));
        for (i, (e, components)) in self.entities.iter().zip(&components).enumerate() {
            out.extend_from_slice(if i == 0 { b"\n    " } else { b",\n    " });
            let entity = EntityOut {
                uuid: &e.uuid,
                label: &e.label,
                name: &e.name,
                parent: v3.then_some(ParentOut(e.parent)),
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

/// Writes `value` as compact JSON (serde_json's `to_writer`).
pub(crate) fn compact<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Serialising these types cannot fail: string keys, finite numbers, an in-memory writer.
    let _ = serde_json::to_writer(&mut *out, value);
}

/// Each entity's components as the canonical writers write them ([`canonical_components`]).
pub(crate) fn canonical_all<'a>(
    components: impl Iterator<Item = &'a Components>,
) -> Vec<Cow<'a, Components>> {
    // One check per write, not per entity.
    let sorted = json::maps_sorted();
    components
        .map(|c| canonical_components(c, sorted))
        .collect()
}

/// `components` as the canonical writers write them: borrowed when maps iterate sorted
/// ([`maps_sorted`](json::maps_sorted)), else a copy whose values are [`sorted`](json::sorted).
fn canonical_components(components: &Components, maps_sorted: bool) -> Cow<'_, Components> {
    if maps_sorted {
        return Cow::Borrowed(components);
    }
    Cow::Owned(
        components
            .iter()
            .map(|(c, form)| (c.clone(), json::sorted(form)))
            .collect(),
    )
}

fn wrong_version(expected: u64, found: u64) -> Fault<RecordErrorKind> {
    Fault::new(
        RecordErrorKind::WrongVersion { expected, found },
        &[Step::Key("version".into())],
    )
}

fn check_schema(name: &str) -> R<()> {
    if is_schema_name(name) {
        Ok(())
    } else {
        Err(Fault::new(
            RecordErrorKind::InvalidSchemaName {
                name: name.to_owned(),
            },
            &[Step::Key("schema".into())],
        ))
    }
}

fn check_label<'a>(
    id: &'a str,
    at: impl FnOnce() -> Vec<Step>,
    seen: &mut HashSet<&'a str>,
) -> R<()> {
    if !is_legacy_id(id) {
        return Err(Fault::new(
            RecordErrorKind::InvalidLegacyId { id: id.to_owned() },
            &at(),
        ));
    }
    if !seen.insert(id) {
        return Err(Fault::new(
            RecordErrorKind::RepeatedLegacyId { id: id.to_owned() },
            &at(),
        ));
    }
    Ok(())
}

fn check_components(components: &Components, at: impl FnOnce() -> Vec<Step>) -> R<()> {
    match components.keys().find(|n| !is_component_name(n)) {
        Some(name) => Err(Fault::new(
            RecordErrorKind::InvalidComponentName { name: name.clone() },
            &key(&at(), name),
        )),
        None => Ok(()),
    }
}

fn decode(value: Value) -> R<WorldRecord> {
    let root: &[Step] = &[];
    let mut obj = Object::new(value, root).map_err(Fault::convert)?;
    let version = match obj.get("version") {
        None => return Err(Fault::new(Shape::MissingMember { name: "version" }, root)),
        Some(v) => match v.as_u64() {
            Some(n @ (1..=3)) => n,
            _ => {
                return Err(Fault::new(
                    RecordErrorKind::UnsupportedVersion {
                        found: json::text_of(v),
                    },
                    &key(root, "version"),
                ))
            }
        },
    };
    if version == 1 {
        obj.deny_unknown(&["version", "schema", "entities"])
    } else {
        obj.deny_unknown(&["version", "schema", "document", "entities"])
    }
    .map_err(Fault::convert)?;
    let schema_at = key(root, "schema");
    let schema = obj
        .take("schema")
        .and_then(|v| json::string(v, &schema_at))
        .map_err(Fault::convert)?;
    let document: Option<AssetId> = if version >= 2 {
        Some(uuid_member(&mut obj, "document")?)
    } else {
        None
    };
    let entities_at = key(root, "entities");
    let items = obj
        .take("entities")
        .and_then(|v| json::array(v, &entities_at))
        .map_err(Fault::convert)?;
    // One path buffer for every entity's faults: `entities[i]` (no allocation per entity).
    let mut at = index(&entities_at, 0);
    let record = match document {
        None => {
            let mut entities = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                at[1] = Step::Index(i);
                entities.push(decode_v1(item, &at)?);
            }
            let world = WorldV1 { schema, entities };
            world.check()?;
            WorldRecord::V1(world)
        }
        Some(document) => {
            let mut entities = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                at[1] = Step::Index(i);
                entities.push(decode_v2(item, &at, version == 3)?);
            }
            let world = WorldV2 {
                schema,
                document,
                entities,
            };
            world.check()?;
            WorldRecord::V2(world)
        }
    };
    Ok(record)
}

fn string_member(obj: &mut Object<'_>, name: &'static str) -> R<String> {
    match obj.take(name).map_err(Fault::convert)? {
        Value::String(s) => Ok(s),
        // The path is built only for a fault.
        v => json::string(v, &key(obj.path(), name)).map_err(Fault::convert),
    }
}

fn decode_v1(value: Value, at: &[Step]) -> R<EntityV1> {
    let mut obj = Object::new(value, at).map_err(Fault::convert)?;
    obj.deny_unknown(&["id", "name", "parent", "components"])
        .map_err(Fault::convert)?;
    let id = string_member(&mut obj, "id")?;
    let name = string_member(&mut obj, "name")?;
    let parent = match obj.take_optional("parent") {
        None => None,
        Some(v) => Some(json::string(v, &key(at, "parent")).map_err(Fault::convert)?),
    };
    let components = decode_components(&mut obj)?;
    Ok(EntityV1 {
        id,
        name,
        parent,
        components,
    })
}

/// A version-2 entity; with `parents` (version 3) its `parent` member is required: a uuid, or
/// `""` for a root.
fn decode_v2(value: Value, at: &[Step], parents: bool) -> R<EntityV2> {
    let mut obj = Object::new(value, at).map_err(Fault::convert)?;
    if parents {
        obj.deny_unknown(&["uuid", "label", "name", "parent", "components"])
    } else {
        obj.deny_unknown(&["uuid", "label", "name", "components"])
    }
    .map_err(Fault::convert)?;
    let uuid = uuid_member(&mut obj, "uuid")?;
    let label = string_member(&mut obj, "label")?;
    let name = string_member(&mut obj, "name")?;
    let parent =
        match parents {
            false => None,
            true => match string_member(&mut obj, "parent")? {
                text if text.is_empty() => None,
                text => Some(text.parse::<SourceObjectId>().map_err(|reason| {
                    Fault::new(InvalidUuid { text, reason }, &key(at, "parent"))
                })?),
            },
        };
    let components = decode_components(&mut obj)?;
    Ok(EntityV2 {
        uuid,
        label,
        name,
        parent,
        components,
    })
}

fn decode_components(obj: &mut Object<'_>) -> R<Components> {
    // Paths are built only for a fault.
    let map = match obj.take("components").map_err(Fault::convert)? {
        Value::Object(map) => map,
        _ => {
            let at = key(obj.path(), "components");
            return Err(Fault::new(
                Shape::WrongType {
                    expected: "an object",
                },
                &at,
            ));
        }
    };
    let mut components = Components::new();
    for (name, form) in map {
        // Inserted one by one: `BTreeMap`'s `collect` would stage them in a Vec and sort it.
        components.insert(name, form);
    }
    Ok(components)
}
