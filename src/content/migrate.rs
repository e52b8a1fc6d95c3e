//! Generate once, extend explicitly: minting the identities of a migration manifest.
//!
//! Both functions are pure apart from the injected [`EntropySource`]: they take parsed
//! version-1 documents and return a [`Manifest`] value, writing nothing. Minting follows path
//! order, then per document its `AssetId` first and its objects in legacy-id order; every
//! candidate is checked against every identity already in the manifest and every one minted so
//! far, and replaced at most [`MINT_ATTEMPTS`](crate::identity::MINT_ATTEMPTS) times in all
//! before the call fails with an identity conflict. On any failure nothing is returned, so a
//! caller that publishes only on success publishes nothing.

use std::collections::HashSet;

use uuid::Uuid;

use crate::identity::{AssetId, EntropyError, EntropySource, MintError, SourceObjectId};

use super::json_path::{index, key, JsonPath, Step};
use super::manifest::{Manifest, ManifestDocument, ManifestObject};
use super::path::DocPath;
use super::record::WorldV1;

/// Why no manifest was produced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigrateError {
    /// The same document was listed twice, or a listed path equals a committed one only
    /// ignoring ASCII case (one file on a case-insensitive file system, two in the manifest).
    #[error("document {path} is listed twice, or differs from a manifest path only in ASCII case")]
    RepeatedDocument {
        /// The path.
        path: DocPath,
    },
    /// The entropy source failed: nothing was minted.
    #[error(transparent)]
    Entropy(#[from] EntropyError),
    /// Every candidate for one identity collided with an identity already taken.
    #[error("identity-conflict: every candidate for {what} collided with an existing identity")]
    Conflict {
        /// Which identity (`document levels/a.json`, `object guard-a of levels/a.json`).
        what: String,
    },
    /// `extend` only: a committed object has no entity in the document any more.
    #[error("stale-manifest: object {legacy_id:?} of {path} has no entity in the document")]
    Stale {
        /// The document.
        path: DocPath,
        /// The object's legacy id.
        legacy_id: String,
        /// Where the object sits in the manifest.
        at: JsonPath,
    },
}

/// Mints a manifest for `documents` (any order; they are sorted by path here).
///
/// # Errors
/// [`MigrateError::RepeatedDocument`], [`MigrateError::Entropy`] (nothing minted survives),
/// [`MigrateError::Conflict`].
///
/// # Examples
///
/// ```
/// use ludus::content::{generate_manifest, DocPath, WorldV1};
/// use ludus::identity::test_entropy::SeqEntropy;
/// use std::path::Path;
/// let world = WorldV1::from_slice(Path::new("a.json"), br#"{"version": 1, "schema": "demo",
///     "entities": [{"id": "b", "name": "", "components": {}},
///                  {"id": "a", "name": "", "components": {}}]}"#)?;
/// let path: DocPath = "a.json".parse()?;
/// let manifest = generate_manifest(&[(path, &world)], &mut SeqEntropy::new(7))?;
/// let ids: Vec<_> = manifest.documents[0].objects.iter().map(|o| o.legacy_id.as_str()).collect();
/// assert_eq!(ids, ["a", "b"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn generate_manifest(
    documents: &[(DocPath, &WorldV1)],
    entropy: &mut dyn EntropySource,
) -> Result<Manifest, MigrateError> {
    extend_manifest(&Manifest::default(), documents, entropy).map(|e| e.manifest)
}

/// A manifest grown by [`extend_manifest`], and how many identities it minted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extension {
    /// The whole new manifest (documents not listed are kept as they were).
    pub manifest: Manifest,
    /// Identities minted (0: the old manifest already described every listed document).
    pub minted: usize,
}

/// Mints only the identities `old` lacks for `documents`: a new document gets an `AssetId`
/// and one `SourceObjectId` per entity; a known one keeps every committed identity and gains
/// one per new entity. Documents of `old` that are not listed are kept unchanged.
///
/// # Errors
/// As [`generate_manifest`], and [`MigrateError::Stale`] when a listed document lost an
/// entity the manifest names (identities are retired explicitly, never dropped in passing).
pub fn extend_manifest(
    old: &Manifest,
    documents: &[(DocPath, &WorldV1)],
    entropy: &mut dyn EntropySource,
) -> Result<Extension, MigrateError> {
    let mut listed: Vec<&(DocPath, &WorldV1)> = documents.iter().collect();
    listed.sort_by(|a, b| a.0.cmp(&b.0));
    let mut folded = HashSet::with_capacity(listed.len());
    for (path, _) in &listed {
        if !folded.insert(path.folded()) {
            return Err(MigrateError::RepeatedDocument { path: path.clone() });
        }
    }
    let mut taken: HashSet<Uuid> = old.uuids().collect();
    let mut minted = 0usize;
    let mut out: Vec<ManifestDocument> = Vec::with_capacity(old.documents.len() + listed.len());
    let mut old_docs = old.documents.iter().peekable();
    for (path, world) in listed {
        while let Some(d) = old_docs.next_if(|d| d.path < *path) {
            out.push(d.clone());
        }
        let committed = old_docs.next_if(|d| d.path == *path);
        if committed.is_none()
            && old
                .documents
                .iter()
                .any(|d| d.path.folded() == path.folded())
        {
            return Err(MigrateError::RepeatedDocument { path: path.clone() });
        }
        let mut ids: Vec<&str> = world.entities.iter().map(|e| e.id.as_str()).collect();
        ids.sort_unstable();
        let (document, mut objects) = match committed {
            Some(d) => {
                if let Some(lost) = d
                    .objects
                    .iter()
                    .position(|o| ids.binary_search(&o.legacy_id.as_str()).is_err())
                {
                    let (di, _) = old.document(path).unwrap_or((0, d));
                    let at = key(&index(&[Step::Key("documents".into())], di), "objects");
                    return Err(MigrateError::Stale {
                        path: path.clone(),
                        legacy_id: d.objects[lost].legacy_id.clone(),
                        at: key(&index(&at, lost), "legacy_id"),
                    });
                }
                (d.document, d.objects.clone())
            }
            None => {
                let id = AssetId::mint_unique(entropy, |c| taken.contains(&c.as_uuid()))
                    .map_err(|e| conflict(e, || format!("document {path}")))?;
                taken.insert(id.as_uuid());
                minted += 1;
                (id, Vec::with_capacity(ids.len()))
            }
        };
        let committed_objects = objects.len();
        for id in ids {
            let known = objects[..committed_objects]
                .binary_search_by(|o: &ManifestObject| o.legacy_id.as_str().cmp(id))
                .is_ok();
            if known {
                continue;
            }
            let object = SourceObjectId::mint_unique(entropy, |c| taken.contains(&c.as_uuid()))
                .map_err(|e| conflict(e, || format!("object {id:?} of {path}")))?;
            taken.insert(object.as_uuid());
            minted += 1;
            objects.push(ManifestObject {
                legacy_id: id.to_owned(),
                object,
            });
        }
        objects.sort_by(|a, b| a.legacy_id.cmp(&b.legacy_id));
        out.push(ManifestDocument {
            path: path.clone(),
            document,
            objects,
        });
    }
    out.extend(old_docs.cloned());
    let manifest = Manifest { documents: out };
    debug_assert_eq!(
        manifest.check(),
        Ok(()),
        "extend produced an invalid manifest"
    );
    Ok(Extension { manifest, minted })
}

fn conflict(e: MintError, what: impl FnOnce() -> String) -> MigrateError {
    match e {
        MintError::Entropy(e) => MigrateError::Entropy(e),
        MintError::Conflict(_) => MigrateError::Conflict { what: what() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::record::EntityV1;
    use crate::identity::test_entropy::{FailingEntropy, FixedEntropy, SeqEntropy};
    use crate::identity::MINT_ATTEMPTS;

    fn world(ids: &[&str]) -> WorldV1 {
        WorldV1 {
            schema: "demo".into(),
            entities: ids
                .iter()
                .map(|id| EntityV1 {
                    id: (*id).into(),
                    ..EntityV1::default()
                })
                .collect(),
        }
    }

    fn p(s: &str) -> DocPath {
        s.parse().unwrap()
    }

    #[test]
    fn mints_in_path_then_legacy_id_order() {
        let (a, b) = (world(&["z", "m"]), world(&["k"]));
        let m = generate_manifest(
            &[(p("b.json"), &a), (p("a.json"), &b)],
            &mut SeqEntropy::new(5),
        )
        .unwrap();
        let mut replay = SeqEntropy::new(5);
        let mut next = || AssetId::mint(&mut replay).unwrap().as_uuid();
        let order = [
            m.documents[0].document.as_uuid(),
            m.documents[0].objects[0].object.as_uuid(),
            m.documents[1].document.as_uuid(),
            m.documents[1].objects[0].object.as_uuid(),
            m.documents[1].objects[1].object.as_uuid(),
        ];
        assert_eq!(order, [next(), next(), next(), next(), next()]);
        assert_eq!(m.documents[1].objects[0].legacy_id, "m");
        assert_eq!(m.check(), Ok(()));
    }

    #[test]
    fn entropy_failure_anywhere_returns_nothing() {
        let w = world(&["a", "b", "c"]);
        for fail_on in 1..=4 {
            let mut source = FailingEntropy::new(SeqEntropy::new(1), fail_on);
            let r = generate_manifest(&[(p("w.json"), &w)], &mut source);
            assert_eq!(
                r,
                Err(MigrateError::Entropy(EntropyError::Source { code: 1 }))
            );
        }
    }

    #[test]
    fn colliding_entropy_is_an_identity_conflict_after_four_candidates() {
        let w = world(&["a"]);
        let mut source = FixedEntropy::new([7; 16]);
        let r = generate_manifest(&[(p("w.json"), &w)], &mut source);
        assert!(
            matches!(r, Err(MigrateError::Conflict { ref what }) if what.contains("\"a\"")),
            "{r:?}"
        );
        // Against a committed manifest: the first candidates collide, a later one is free.
        let mut seq = SeqEntropy::new(9);
        let first = generate_manifest(&[(p("a.json"), &w)], &mut seq).unwrap();
        let mut replay = SeqEntropy::new(9);
        let e = extend_manifest(&first, &[(p("b.json"), &w)], &mut replay).unwrap();
        assert_eq!(e.minted, 2);
        assert_eq!(replay.fills_made(), 4, "two collisions replaced, two fresh");
        const { assert!(MINT_ATTEMPTS >= 3) };
    }

    #[test]
    fn repeated_documents_are_refused() {
        let w = world(&["a"]);
        let r = generate_manifest(
            &[(p("A.json"), &w), (p("a.json"), &w)],
            &mut SeqEntropy::new(1),
        );
        assert!(matches!(r, Err(MigrateError::RepeatedDocument { .. })));
    }

    #[test]
    fn extend_keeps_committed_and_mints_only_new() {
        let small = world(&["a", "c"]);
        let old = generate_manifest(
            &[(p("m.json"), &small), (p("z.json"), &small)],
            &mut SeqEntropy::new(3),
        )
        .unwrap();
        let grown = world(&["c", "b", "a"]);
        let e = extend_manifest(
            &old,
            &[(p("m.json"), &grown), (p("b.json"), &small)],
            &mut SeqEntropy::new(4),
        )
        .unwrap();
        assert_eq!(e.minted, 1 + 1 + 2);
        let m = &e.manifest;
        assert_eq!(
            m.documents
                .iter()
                .map(|d| d.path.as_str())
                .collect::<Vec<_>>(),
            ["b.json", "m.json", "z.json"]
        );
        assert_eq!(m.documents[1].document, old.documents[0].document);
        assert_eq!(m.documents[1].object("a"), old.documents[0].object("a"));
        assert_eq!(m.documents[1].object("c"), old.documents[0].object("c"));
        assert!(m.documents[1].object("b").is_some());
        assert_eq!(m.documents[2], old.documents[1]);
        let again =
            extend_manifest(m, &[(p("m.json"), &grown)], &mut FixedEntropy::new([0; 16])).unwrap();
        assert_eq!((again.minted, &again.manifest), (0, m));
    }

    #[test]
    fn extend_refuses_a_path_that_differs_from_a_committed_one_only_in_case() {
        let w = world(&["a"]);
        let old = generate_manifest(&[(p("Levels/w.json"), &w)], &mut SeqEntropy::new(3)).unwrap();
        let r = extend_manifest(&old, &[(p("levels/w.json"), &w)], &mut SeqEntropy::new(4));
        assert!(
            matches!(r, Err(MigrateError::RepeatedDocument { .. })),
            "{r:?}"
        );
    }

    #[test]
    fn extend_refuses_a_lost_entity() {
        let w = world(&["a", "b"]);
        let old = generate_manifest(&[(p("w.json"), &w)], &mut SeqEntropy::new(3)).unwrap();
        let r = extend_manifest(
            &old,
            &[(p("w.json"), &world(&["b"]))],
            &mut SeqEntropy::new(4),
        );
        match r {
            Err(MigrateError::Stale { legacy_id, at, .. }) => {
                assert_eq!(legacy_id, "a");
                assert_eq!(
                    at,
                    [
                        Step::Key("documents".into()),
                        Step::Index(0),
                        Step::Key("objects".into()),
                        Step::Index(0),
                        Step::Key("legacy_id".into())
                    ]
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
