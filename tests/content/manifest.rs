//! The migration manifest reader: one fixture per rejection rule (each refused with its own
//! error kind, at the line of the offending value), canonical output, and robustness.

use std::path::{Path, PathBuf};

use ludus::content::{
    generate_manifest, DocPath, EntityV1, Manifest, ManifestErrorKind as K, PathError, Shape,
    WorldV1,
};
use ludus::identity::test_entropy::SeqEntropy;
use ludus::identity::UuidError;
use proptest::prelude::*;

fn fixture(name: &str) -> (PathBuf, Vec<u8>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/content/manifest")
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path, bytes)
}

type Check = fn(&K) -> bool;

/// Every rejection fixture: its file, the line the error must point at, and the kind.
const REJECTIONS: &[(&str, usize, Check)] = &[
    ("syntax.json", 3, |k| {
        matches!(k, K::Shape(Shape::Syntax { .. }))
    }),
    (
        "syntax-trailing.json",
        22,
        |k| matches!(k, K::Shape(Shape::Syntax { message }) if message.contains("trailing")),
    ),
    ("not-utf8.json", 9, |k| {
        matches!(k, K::Shape(Shape::Syntax { .. }))
    }),
    ("not-an-object.json", 1, |k| {
        matches!(
            k,
            K::Shape(Shape::WrongType {
                expected: "an object"
            })
        )
    }),
    (
        "duplicate-member.json",
        4,
        |k| matches!(k, K::Shape(Shape::DuplicateMember { name }) if name == "version"),
    ),
    (
        "duplicate-member-nested.json",
        9,
        |k| matches!(k, K::Shape(Shape::DuplicateMember { name }) if name == "object"),
    ),
    (
        "unknown-member.json",
        4,
        |k| matches!(k, K::Shape(Shape::UnknownMember { name }) if name == "comment"),
    ),
    (
        "unknown-member-object.json",
        17,
        |k| matches!(k, K::Shape(Shape::UnknownMember { name }) if name == "note"),
    ),
    ("missing-member.json", 13, |k| {
        matches!(k, K::Shape(Shape::MissingMember { name: "document" }))
    }),
    ("wrong-type.json", 16, |k| {
        matches!(
            k,
            K::Shape(Shape::WrongType {
                expected: "an array"
            })
        )
    }),
    (
        "unsupported-format.json",
        2,
        |k| matches!(k, K::UnsupportedFormat { found } if found == "\"ludus.identity-migration.v2\""),
    ),
    (
        "unsupported-version.json",
        3,
        |k| matches!(k, K::UnsupportedVersion { found } if found == "2"),
    ),
    ("invalid-path-absolute.json", 6, |k| {
        matches!(
            k,
            K::InvalidPath {
                reason: PathError::Absolute,
                ..
            }
        )
    }),
    ("invalid-path-dotdot.json", 6, |k| {
        matches!(
            k,
            K::InvalidPath {
                reason: PathError::DotComponent,
                ..
            }
        )
    }),
    ("invalid-path-backslash.json", 6, |k| {
        matches!(
            k,
            K::InvalidPath {
                reason: PathError::Byte { found: b'\\', .. },
                ..
            }
        )
    }),
    (
        "invalid-legacy-id.json",
        9,
        |k| matches!(k, K::InvalidLegacyId { id } if id == "guard a"),
    ),
    ("invalid-uuid-nil.json", 9, |k| {
        matches!(
            k,
            K::InvalidUuid {
                reason: UuidError::Nil,
                ..
            }
        )
    }),
    ("invalid-uuid-version.json", 7, |k| {
        matches!(
            k,
            K::InvalidUuid {
                reason: UuidError::Version { found: 1 },
                ..
            }
        )
    }),
    ("invalid-uuid-variant.json", 7, |k| {
        matches!(
            k,
            K::InvalidUuid {
                reason: UuidError::Variant { .. },
                ..
            }
        )
    }),
    ("invalid-uuid-text.json", 17, |k| {
        matches!(
            k,
            K::InvalidUuid {
                reason: UuidError::Length { found: 38 },
                ..
            }
        )
    }),
    ("unsorted-documents.json", 14, |k| {
        matches!(k, K::UnsortedDocuments { path, previous }
            if path == "levels/b.world.json" && previous == "levels/c.world.json")
    }),
    (
        "repeated-document.json",
        14,
        |k| matches!(k, K::RepeatedDocument { path } if path == "levels/a.world.json"),
    ),
    (
        "repeated-document-case.json",
        14,
        |k| matches!(k, K::RepeatedDocument { path } if path == "levels/a.world.json"),
    ),
    ("unsorted-objects.json", 10, |k| {
        matches!(k, K::UnsortedObjects { legacy_id, previous }
            if legacy_id == "guard-b" && previous == "guard-c")
    }),
    (
        "repeated-object.json",
        10,
        |k| matches!(k, K::RepeatedObject { legacy_id } if legacy_id == "guard-a"),
    ),
    ("repeated-uuid.json", 17, |k| {
        matches!(k, K::RepeatedUuid { .. })
    }),
    ("repeated-uuid-document.json", 15, |k| {
        matches!(k, K::RepeatedUuid { .. })
    }),
    ("repeated-uuid-case.json", 17, |k| {
        matches!(k, K::RepeatedUuid { .. })
    }),
];

#[test]
#[cfg_attr(miri, ignore = "reads fixture files; Miri isolates the file system")]
fn the_valid_fixture_reads_and_writes_back_byte_identical() {
    let (path, bytes) = fixture("valid.json");
    let m = Manifest::from_slice(&path, &bytes).unwrap();
    assert_eq!(m.documents.len(), 2);
    assert_eq!(m.documents[0].objects.len(), 2);
    assert_eq!(
        String::from_utf8(m.to_bytes()).unwrap(),
        String::from_utf8(bytes).unwrap()
    );
}

#[test]
#[cfg_attr(miri, ignore = "reads fixture files; Miri isolates the file system")]
fn each_rejection_fixture_is_refused_with_its_own_error_at_its_line() {
    for (name, line, check) in REJECTIONS {
        let (path, bytes) = fixture(name);
        let err = Manifest::from_slice(&path, &bytes)
            .err()
            .unwrap_or_else(|| panic!("{name}: accepted"));
        assert!(check(&err.kind), "{name}: wrong kind {:?}", err.kind);
        assert_eq!(err.line, *line, "{name}: {err}");
        assert!(err.column >= 1, "{name}: {err}");
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("{}:{line}:", path.display())) && !text.contains('\n'),
            "{name}: {text}"
        );
    }
}

#[test]
#[cfg_attr(miri, ignore = "reads fixture files; Miri isolates the file system")]
fn every_rejection_fixture_is_in_the_table() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/content/manifest");
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "valid.json")
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = REJECTIONS.iter().map(|(n, ..)| (*n).to_owned()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
}

#[test]
#[cfg_attr(miri, ignore = "reads fixture files; Miri isolates the file system")]
fn the_golden_manifest_is_canonical() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/content/golden/identity-migration.json");
    let bytes = std::fs::read(&path).unwrap();
    let m = Manifest::from_slice(&path, &bytes).unwrap();
    assert_eq!(m.to_bytes(), bytes);
}

#[test]
fn the_empty_manifest_is_canonical_too() {
    let empty = Manifest::default().to_bytes();
    assert_eq!(
        String::from_utf8(empty.clone()).unwrap(),
        "{\n  \"format\": \"ludus.identity-migration\",\n  \"version\": 1,\n  \"documents\": []\n}\n"
    );
    assert_eq!(
        Manifest::from_slice(Path::new("e"), &empty).unwrap(),
        Manifest::default()
    );
}

fn world(ids: &[String]) -> WorldV1 {
    WorldV1 {
        schema: "demo".into(),
        entities: ids
            .iter()
            .map(|id| EntityV1 {
                id: id.clone(),
                ..EntityV1::default()
            })
            .collect(),
    }
}

proptest! {
    #![proptest_config(crate::support::proptest_config_unpersisted(256, 4))]

    /// Generated manifests are valid, round-trip exactly, and their bytes are canonical.
    #[test]
    fn generated_manifests_round_trip(
        docs in prop::collection::btree_map(
            "[a-z]{1,6}(/[a-z0-9]{1,6}){0,2}\\.json",
            prop::collection::btree_set("[A-Za-z0-9_.:-]{1,12}", 0..6),
            0..5,
        ),
        seed in any::<u64>(),
    ) {
        let worlds: Vec<(DocPath, WorldV1)> = docs
            .iter()
            .map(|(p, ids)| (p.parse().unwrap(), world(&ids.iter().cloned().collect::<Vec<_>>())))
            .collect();
        let listed: Vec<(DocPath, &WorldV1)> = worlds.iter().map(|(p, w)| (p.clone(), w)).collect();
        let folded: std::collections::HashSet<String> =
            docs.keys().map(|p| p.to_ascii_lowercase()).collect();
        let m = match generate_manifest(&listed, &mut SeqEntropy::new(seed)) {
            Ok(m) => m,
            Err(_) => { prop_assert!(folded.len() < docs.len()); return Ok(()); }
        };
        prop_assert_eq!(m.check(), Ok(()));
        let bytes = m.to_bytes();
        let back = Manifest::from_slice(Path::new("gen.json"), &bytes).unwrap();
        prop_assert_eq!(&back, &m);
        prop_assert_eq!(back.to_bytes(), bytes);
    }

    /// Arbitrary bytes never panic the reader; an error always names a position.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        if let Err(e) = Manifest::from_slice(Path::new("fuzz.json"), &bytes) {
            prop_assert!(e.line >= 1);
        }
    }

    /// Mutated valid manifests (bytes replaced, inserted, removed) never panic the reader,
    /// and whatever it accepts obeys every rule and writes back canonically.
    #[test]
    #[cfg_attr(miri, ignore = "reads fixture files; Miri isolates the file system")]
    fn mutated_fixtures_never_panic(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
    ) {
        let (_, mut bytes) = fixture("valid.json");
        for (at, byte, op) in edits {
            let i = at.index(bytes.len() + 1);
            match op {
                0 if i < bytes.len() => bytes[i] = byte,
                1 => bytes.insert(i, byte),
                _ if i < bytes.len() => { bytes.remove(i); }
                _ => {}
            }
        }
        match Manifest::from_slice(Path::new("mutated.json"), &bytes) {
            Ok(m) => {
                prop_assert_eq!(m.check(), Ok(()));
                let again = Manifest::from_slice(Path::new("c"), &m.to_bytes()).unwrap();
                prop_assert_eq!(again, m);
            }
            Err(e) => prop_assert!(e.line >= 1),
        }
    }
}
