//! The migration manifest, `ludus.identity-migration` version 1.
//!
//! One committed JSON file maps every legacy id of a set of version-1 documents to its UUIDs:
//!
//! ```json
//! {
//!   "format": "ludus.identity-migration",
//!   "version": 1,
//!   "documents": [
//!     {
//!       "path": "levels/first-room.world.json",
//!       "document": "0b7e8c1d-2f43-4a96-9d51-6c2e4f8a1b3d",
//!       "objects": [
//!         { "legacy_id": "guard-a", "object": "5d1f0e7a-93c2-4b8e-a4f6-1e2d3c4b5a69" }
//!       ]
//!     }
//!   ]
//! }
//! ```
//!
//! [`Manifest::to_bytes`] writes exactly this layout (one object per line, so adding an entity
//! adds one line to the diff). [`Manifest::from_slice`] accepts any JSON spelling of a valid
//! manifest and refuses everything listed in [`ManifestErrorKind`].

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;
use uuid::Uuid;

use crate::identity::{is_legacy_id, AssetId, SourceObjectId, UuidError};

use super::error::{Fault, Located, Shape};
use super::json::{self, uuid_member, InvalidUuid, Object};
use super::json_path::{index, key, Step};
use super::path::{DocPath, PathError};

/// The `format` member of a migration manifest.
pub const MANIFEST_FORMAT: &str = "ludus.identity-migration";
/// The one manifest version this crate reads and writes.
pub const MANIFEST_VERSION: u64 = 1;

/// A migration manifest: documents sorted by path, each with its objects sorted by legacy id.
///
/// The fields are public for building and inspection; [`Manifest::check`] says whether a value
/// obeys the rules the reader enforces, and [`Manifest::from_slice`] only returns values that do.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Manifest {
    /// The documents, sorted by path (byte order), no two equal ignoring ASCII case.
    pub documents: Vec<ManifestDocument>,
}

/// One document of a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestDocument {
    /// Path relative to the content root.
    pub path: DocPath,
    /// The document's committed `AssetId`.
    pub document: AssetId,
    /// The document's objects, sorted by legacy id (byte order).
    pub objects: Vec<ManifestObject>,
}

/// One object of a manifest document: a legacy id and its committed `SourceObjectId`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestObject {
    /// The version-1 id (1–64 ASCII letters, digits, `_ - . :`).
    pub legacy_id: String,
    /// The committed UUID.
    pub object: SourceObjectId,
}

/// Why bytes are not a valid migration manifest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestErrorKind {
    /// Syntax, duplicate, unknown or missing members, or a wrong JSON type.
    #[error(transparent)]
    Shape(#[from] Shape),
    /// `format` is not `ludus.identity-migration`.
    #[error("unsupported manifest format {found} (expected \"{MANIFEST_FORMAT}\")")]
    UnsupportedFormat {
        /// The `format` value, as JSON text.
        found: String,
    },
    /// `version` is not 1.
    #[error("unsupported manifest version {found} (expected {MANIFEST_VERSION})")]
    UnsupportedVersion {
        /// The `version` value, as JSON text.
        found: String,
    },
    /// A document path breaks the path rule.
    #[error("invalid document path {path:?}: {reason}")]
    InvalidPath {
        /// The path text.
        path: String,
        /// The rule it breaks.
        reason: PathError,
    },
    /// A legacy id breaks the legacy-id rule.
    #[error("invalid legacy id {id:?} (1-64 ASCII letters, digits, `_ - . :`)")]
    InvalidLegacyId {
        /// The id text.
        id: String,
    },
    /// A UUID is not canonical text of a nonnil version-4 UUID.
    #[error("invalid uuid {text:?}: {reason}")]
    InvalidUuid {
        /// The text.
        text: String,
        /// Why it is refused.
        reason: UuidError,
    },
    /// A document path sorts before the one listed ahead of it.
    #[error("documents are not sorted by path: {path:?} after {previous:?}")]
    UnsortedDocuments {
        /// The out-of-order path.
        path: String,
        /// The path before it.
        previous: String,
    },
    /// Two documents have the same path (or paths equal ignoring ASCII case).
    #[error("document {path:?} is listed twice (paths are compared ignoring ASCII case)")]
    RepeatedDocument {
        /// The repeated path.
        path: String,
    },
    /// A legacy id sorts before the one listed ahead of it in its document.
    #[error("objects are not sorted by legacy id: {legacy_id:?} after {previous:?}")]
    UnsortedObjects {
        /// The out-of-order id.
        legacy_id: String,
        /// The id before it.
        previous: String,
    },
    /// A document lists the same legacy id twice.
    #[error("legacy id {legacy_id:?} is listed twice in its document")]
    RepeatedObject {
        /// The repeated id.
        legacy_id: String,
    },
    /// A UUID appears twice anywhere in the manifest (documents and objects together).
    #[error("uuid {uuid} appears twice in the manifest")]
    RepeatedUuid {
        /// The repeated UUID.
        uuid: String,
    },
}

/// A rejected manifest: file, position and [`ManifestErrorKind`].
pub type ManifestError = Located<ManifestErrorKind>;

impl Manifest {
    /// Reads a manifest, refusing anything the rules do not allow.
    ///
    /// `file` only names the source in errors. Pure: reads nothing but `bytes`.
    ///
    /// # Errors
    /// [`ManifestError`]: the first rule broken, with its line and column in `bytes`.
    ///
    /// # Examples
    ///
    /// ```
    /// use ludus::content::{Manifest, ManifestErrorKind};
    /// use std::path::Path;
    /// let text = br#"{"format": "ludus.identity-migration", "version": 2, "documents": []}"#;
    /// let err = Manifest::from_slice(Path::new("m.json"), text).unwrap_err();
    /// assert!(matches!(err.kind, ManifestErrorKind::UnsupportedVersion { .. }));
    /// assert_eq!(err.to_string(), "m.json:1:51: unsupported manifest version 2 (expected 1)");
    /// ```
    pub fn from_slice(file: &Path, bytes: &[u8]) -> Result<Self, ManifestError> {
        let value = json::parse_located(file, bytes)?;
        decode(value)
            .and_then(|m| m.check().map(|()| m))
            .map_err(|fault| fault.locate(file, bytes))
    }

    /// Checks the rules on an in-memory manifest: sorted, unrepeated documents and objects,
    /// valid legacy ids, no UUID twice. (Paths and UUIDs are valid by their types.)
    ///
    /// # Errors
    /// The first broken rule, with the path of the offending value.
    pub fn check(&self) -> Result<(), Fault<ManifestErrorKind>> {
        let docs = [Step::Key("documents".into())];
        let mut folded = HashSet::with_capacity(self.documents.len());
        let mut uuids: HashSet<Uuid> =
            HashSet::with_capacity(self.documents.iter().map(|d| d.objects.len() + 1).sum());
        let mut previous: Option<&DocPath> = None;
        for (i, doc) in self.documents.iter().enumerate() {
            let at = index(&docs, i);
            let path = doc.path.as_str().to_owned();
            if previous.is_some_and(|p| p > &doc.path) {
                return Err(Fault::new(
                    ManifestErrorKind::UnsortedDocuments {
                        path,
                        previous: previous.map(DocPath::to_string).unwrap_or_default(),
                    },
                    &key(&at, "path"),
                ));
            }
            if !folded.insert(doc.path.folded()) {
                return Err(Fault::new(
                    ManifestErrorKind::RepeatedDocument { path },
                    &key(&at, "path"),
                ));
            }
            previous = Some(&doc.path);
            if !uuids.insert(doc.document.as_uuid()) {
                return Err(Fault::new(
                    ManifestErrorKind::RepeatedUuid {
                        uuid: doc.document.to_string(),
                    },
                    &key(&at, "document"),
                ));
            }
            let objects = key(&at, "objects");
            let mut last: Option<&str> = None;
            for (j, object) in doc.objects.iter().enumerate() {
                // The path is built only for a fault.
                let at = || index(&objects, j);
                let id = object.legacy_id.as_str();
                if !is_legacy_id(id) {
                    return Err(Fault::new(
                        ManifestErrorKind::InvalidLegacyId { id: id.to_owned() },
                        &key(&at(), "legacy_id"),
                    ));
                }
                match last {
                    Some(prev) if prev == id => {
                        return Err(Fault::new(
                            ManifestErrorKind::RepeatedObject {
                                legacy_id: id.to_owned(),
                            },
                            &key(&at(), "legacy_id"),
                        ))
                    }
                    Some(prev) if prev > id => {
                        return Err(Fault::new(
                            ManifestErrorKind::UnsortedObjects {
                                legacy_id: id.to_owned(),
                                previous: prev.to_owned(),
                            },
                            &key(&at(), "legacy_id"),
                        ))
                    }
                    _ => {}
                }
                last = Some(id);
                if !uuids.insert(object.object.as_uuid()) {
                    return Err(Fault::new(
                        ManifestErrorKind::RepeatedUuid {
                            uuid: object.object.to_string(),
                        },
                        &key(&at(), "object"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The canonical bytes: the layout of the module docs, two-space indent, one object per
    /// line, a final newline. Equal manifests give equal bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = String::with_capacity(128 + self.documents.len() * 160);
        out.push_str("{\n  \"format\": \"");
        out.push_str(MANIFEST_FORMAT);
        out.push_str("\",\n  \"version\": 1,\n  \"documents\": [");
        for (i, doc) in self.documents.iter().enumerate() {
            out.push_str(if i == 0 { "\n" } else { ",\n" });
            out.push_str("    {\n      \"path\": ");
            push_json_string(&mut out, doc.path.as_str());
            out.push_str(",\n      \"document\": \"");
            out.push_str(&doc.document.to_string());
            out.push_str("\",\n      \"objects\": [");
            for (j, object) in doc.objects.iter().enumerate() {
                out.push_str(if j == 0 { "\n" } else { ",\n" });
                out.push_str("        { \"legacy_id\": ");
                push_json_string(&mut out, &object.legacy_id);
                out.push_str(", \"object\": \"");
                out.push_str(&object.object.to_string());
                out.push_str("\" }");
            }
            out.push_str(if doc.objects.is_empty() {
                "]"
            } else {
                "\n      ]"
            });
            out.push_str("\n    }");
        }
        out.push_str(if self.documents.is_empty() {
            "]"
        } else {
            "\n  ]"
        });
        out.push_str("\n}\n");
        out.into_bytes()
    }

    /// The document with this path and its index (binary search over the sorted documents).
    pub fn document(&self, path: &DocPath) -> Option<(usize, &ManifestDocument)> {
        self.documents
            .binary_search_by(|d| d.path.cmp(path))
            .ok()
            .map(|i| (i, &self.documents[i]))
    }

    /// Every UUID in the manifest (documents and objects).
    pub fn uuids(&self) -> impl Iterator<Item = Uuid> + '_ {
        self.documents.iter().flat_map(|d| {
            core::iter::once(d.document.as_uuid())
                .chain(d.objects.iter().map(|o| o.object.as_uuid()))
        })
    }
}

impl ManifestDocument {
    /// The committed object UUID of `legacy_id` (binary search over the sorted objects).
    pub fn object(&self, legacy_id: &str) -> Option<SourceObjectId> {
        self.objects
            .binary_search_by(|o| o.legacy_id.as_str().cmp(legacy_id))
            .ok()
            .map(|i| self.objects[i].object)
    }
}

fn push_json_string(out: &mut String, s: &str) {
    // Serialising a &str cannot fail.
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

fn decode(value: Value) -> Result<Manifest, Fault<ManifestErrorKind>> {
    let root: &[Step] = &[];
    let mut obj = Object::new(value, root).map_err(Fault::convert)?;
    match obj.get("format") {
        Some(Value::String(s)) if s == MANIFEST_FORMAT => {}
        Some(other) => {
            return Err(Fault::new(
                ManifestErrorKind::UnsupportedFormat {
                    found: json::text_of(other),
                },
                &key(root, "format"),
            ))
        }
        None => return Err(Fault::new(Shape::MissingMember { name: "format" }, root)),
    }
    match obj.get("version") {
        Some(v) if v.as_u64() == Some(MANIFEST_VERSION) => {}
        Some(other) => {
            return Err(Fault::new(
                ManifestErrorKind::UnsupportedVersion {
                    found: json::text_of(other),
                },
                &key(root, "version"),
            ))
        }
        None => return Err(Fault::new(Shape::MissingMember { name: "version" }, root)),
    }
    obj.deny_unknown(&["format", "version", "documents"])
        .map_err(Fault::convert)?;
    let docs_path = key(root, "documents");
    let items = obj
        .take("documents")
        .and_then(|v| json::array(v, &docs_path))
        .map_err(Fault::convert)?;
    let mut documents = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        documents.push(decode_document(item, &index(&docs_path, i))?);
    }
    Ok(Manifest { documents })
}

fn decode_document(
    value: Value,
    at: &[Step],
) -> Result<ManifestDocument, Fault<ManifestErrorKind>> {
    let mut obj = Object::new(value, at).map_err(Fault::convert)?;
    obj.deny_unknown(&["path", "document", "objects"])
        .map_err(Fault::convert)?;
    let path_at = key(at, "path");
    let text = obj
        .take("path")
        .and_then(|v| json::string(v, &path_at))
        .map_err(Fault::convert)?;
    let path = DocPath::new(&text).map_err(|reason| {
        Fault::new(
            ManifestErrorKind::InvalidPath {
                path: text.clone(),
                reason,
            },
            &path_at,
        )
    })?;
    let document = uuid_member(&mut obj, "document")?;
    let objects_at = key(at, "objects");
    let items = obj
        .take("objects")
        .and_then(|v| json::array(v, &objects_at))
        .map_err(Fault::convert)?;
    let mut objects = Vec::with_capacity(items.len());
    // One path buffer for every object's faults: `objects[j]` (no allocation per object).
    let mut at = index(&objects_at, 0);
    let last = at.len() - 1;
    for (j, item) in items.into_iter().enumerate() {
        at[last] = Step::Index(j);
        let mut obj = Object::new(item, &at).map_err(Fault::convert)?;
        obj.deny_unknown(&["legacy_id", "object"])
            .map_err(Fault::convert)?;
        let legacy_id = match obj.take("legacy_id").map_err(Fault::convert)? {
            Value::String(s) => s,
            v => json::string(v, &key(&at, "legacy_id")).map_err(Fault::convert)?,
        };
        let object = uuid_member(&mut obj, "object")?;
        objects.push(ManifestObject { legacy_id, object });
    }
    Ok(ManifestDocument {
        path,
        document,
        objects,
    })
}

impl From<InvalidUuid> for ManifestErrorKind {
    fn from(e: InvalidUuid) -> Self {
        Self::InvalidUuid {
            text: e.text,
            reason: e.reason,
        }
    }
}
