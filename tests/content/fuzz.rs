//! Robustness of the content readers and restores (proptest-driven fuzzing: libFuzzer cannot
//! run in CI here). Every target must not panic on any input, and a refused restore must leave
//! the world exactly as it was. The committed corpus (`tests/fixtures/content/corpus/`, plus
//! every other content fixture) is replayed through every reader and restore. Case counts are
//! small enough for a few seconds per target, and shrink further under Miri.

use std::path::{Path, PathBuf};

use crate::common::*;
use ludus::content::{
    restore_level, restore_level_from_slice, restore_world, restore_world_from_slice,
    save_world_bytes, LevelFile, Manifest, RestoreErrorKind as K, Schema, WorldRecord, WorldV2,
};
use ludus::identity::{format_uuid, parse_uuid, UuidPolicy};
use ludus::prelude::*;
use proptest::prelude::*;

fn cases(n: u32) -> ProptestConfig {
    crate::support::proptest_config_unpersisted(n, 1)
}

/// Feeds `bytes` to every reader and both restores; panics only on a broken promise.
fn every_target(bytes: &[u8]) {
    let file = Path::new("fuzz");
    if let Ok(WorldRecord::V2(r)) = WorldRecord::from_slice(file, bytes) {
        assert_eq!(WorldV2::from_slice(file, &r.to_bytes()).as_ref(), Ok(&r));
    }
    let _ = Schema::from_slice(file, bytes);
    if let Ok(m) = Manifest::from_slice(file, bytes) {
        assert_eq!(Manifest::from_slice(file, &m.to_bytes()).as_ref(), Ok(&m));
    }
    if let Ok(l) = LevelFile::from_slice(file, bytes) {
        assert_eq!(LevelFile::from_slice(file, &l.to_bytes()).as_ref(), Ok(&l));
    }
    for policy in [UuidPolicy::DurableV4, UuidPolicy::LevelFile] {
        if let Ok(u) = parse_uuid(bytes, policy) {
            let mut buf = [0u8; 36];
            assert_eq!(
                format_uuid(&u, &mut buf).as_bytes(),
                bytes.to_ascii_lowercase()
            );
        }
    }
    let mut w = busy();
    let before = snapshot(&w, true);
    let fast = restore_world_from_slice(file, bytes, instance(0), &mut w);
    match &fast {
        Ok(r) => assert_eq!(w.registry.len(), 3 + r.entities.len()),
        Err(e) => {
            assert!(e.line >= 1);
            assert_eq!(snapshot(&w, true), before, "{e}");
        }
    }
    // Differential: the tree reader restores the same world, or refuses the same way.
    let mut tree = busy();
    let slow = match WorldV2::from_slice(file, bytes) {
        Ok(record) => {
            restore_world(&record, instance(0), &mut tree).map_err(|f| f.locate(file, bytes))
        }
        Err(e) => Err(ludus::content::Located {
            file: e.file,
            line: e.line,
            column: e.column,
            kind: K::Record(e.kind),
        }),
    };
    assert_eq!(fast.is_ok(), slow.is_ok(), "{fast:?} {slow:?}");
    if let (Err(a), Err(b)) = (&fast, &slow) {
        assert_eq!(a, b);
    }
    assert_eq!(
        normalized(&snapshot(&w, true)),
        normalized(&snapshot(&tree, true))
    );
    let mut w = busy();
    let before = snapshot(&w, true);
    let fast = restore_level_from_slice(file, bytes, None, &mut w);
    match &fast {
        Ok(r) => assert_eq!(w.registry.len(), 3 + r.entities.len()),
        Err(e) => assert_eq!(snapshot(&w, true), before, "{e}"),
    }
    // Differential for levels: the tree reader restores the same world, or refuses the same
    // way.
    let mut tree = busy();
    let slow = match LevelFile::from_slice(file, bytes) {
        Ok(level) => restore_level(&level, None, &mut tree).map_err(|f| f.locate(file, bytes)),
        Err(e) => Err(ludus::content::Located {
            file: e.file,
            line: e.line,
            column: e.column,
            kind: K::Level(e.kind),
        }),
    };
    assert_eq!(fast.is_ok(), slow.is_ok(), "{fast:?} {slow:?}");
    if let (Err(a), Err(b)) = (&fast, &slow) {
        assert_eq!(a, b);
    }
    assert_eq!(
        normalized(&snapshot(&w, true)),
        normalized(&snapshot(&tree, true))
    );
}

/// A world holding unrelated state: two restored entities and an unbound one.
fn busy() -> Level {
    let mut w = level(12);
    restore_world(&ring(2), instance(9), &mut w).unwrap();
    let e = w.create().unwrap();
    w.insert(e, Hp { hp: 1 }).unwrap();
    w
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/content")
}

#[test]
#[cfg_attr(miri, ignore = "reads fixture files; Miri isolates the file system")]
fn the_corpus_replays_through_every_target() {
    let mut all = Vec::new();
    files(&fixtures(), &mut all);
    all.sort();
    assert!(all.len() > 60, "{}", all.len());
    for path in all {
        let bytes = std::fs::read(&path).unwrap();
        let r = std::panic::catch_unwind(|| every_target(&bytes));
        assert!(r.is_ok(), "{}", path.display());
    }
}

/// Edits of JSON-significant bytes, digits, letters and bytes no JSON text holds.
fn json_edits() -> impl Strategy<Value = Vec<(prop::sample::Index, u8, u8)>> {
    edits(b"{}[]\",: 0145a-\\\nf\xff", 6)
}

/// One generated entity: components present, and what its enemy link points at.
#[derive(Debug, Clone)]
enum Link {
    None,
    Empty,
    To(prop::sample::Index),
    Dangling,
}

#[derive(Debug, Clone)]
struct Spec {
    pos: bool,
    hp: Option<u32>,
    link: Link,
    malformed: bool,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        any::<bool>(),
        prop::option::of(any::<u32>()),
        prop_oneof![
            2 => Just(Link::None),
            1 => Just(Link::Empty),
            4 => any::<prop::sample::Index>().prop_map(Link::To),
            1 => Just(Link::Dangling),
        ],
        prop::bool::weighted(0.05),
    )
        .prop_map(|(pos, hp, link, malformed)| Spec {
            pos,
            hp,
            link,
            malformed,
        })
}

fn record_of(specs: &[Spec]) -> WorldV2 {
    let n = specs.len();
    let mut record = ring(n as u64);
    for (i, s) in specs.iter().enumerate() {
        let c = &mut record.entities[i].components;
        c.clear();
        if s.pos {
            c.insert(
                "pos".into(),
                props(serde_json::json!({"x": i as f32, "y": 1.5})),
            );
        }
        if let Some(hp) = s.hp {
            c.insert("hp".into(), props(serde_json::json!({ "hp": hp })));
        }
        let target = match &s.link {
            Link::None => None,
            Link::Empty => Some(String::new()),
            Link::To(t) => Some(uuid_text(t.index(n) as u64)),
            Link::Dangling => Some(uuid_text(1000)),
        };
        if let Some(t) = target {
            c.insert(
                "enemy".into(),
                props(serde_json::json!({"target": t, "speed": 3})),
            );
        }
        if s.malformed {
            c.insert("pos".into(), props(serde_json::json!({"x": 1, "w": 2})));
        }
    }
    record
}

proptest! {
    #![proptest_config(cases(256))]

    /// Arbitrary bytes never panic a reader or a restore, and never change a world.
    #[test]
    fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        every_target(&bytes);
    }

    /// UUID-shaped text: parse and format agree.
    #[test]
    fn uuid_shaped_text(text in "[0-9a-fA-F{}:uUrRnN -]{30,40}") {
        every_target(text.as_bytes());
    }

    /// Generated valid records: both readers restore the same world.
    #[test]
    fn generated_records_read_alike(specs in prop::collection::vec(spec(), 0..8)) {
        let bytes = record_of(&specs).to_bytes();
        let valid = specs.iter().all(|s| !s.malformed);
        prop_assert_eq!(ludus::content::streams::<Level>(&bytes), valid);
        every_target(&bytes);
        // Save of what restored: canonical bytes, and save → restore → save is identical.
        let mut w = level(16);
        if restore_world_from_slice(Path::new("g"), &bytes, instance(0), &mut w).is_ok() {
            let saved = save_world_bytes(&w, instance(0), "ludus.test.v1", document()).unwrap();
            let record = WorldV2::from_slice(Path::new("s"), &saved).unwrap();
            prop_assert_eq!(&record.to_bytes(), &saved);
            let mut again = level(16);
            restore_world(&record, instance(0), &mut again).unwrap();
            let resaved = save_world_bytes(&again, instance(0), "ludus.test.v1", document()).unwrap();
            prop_assert_eq!(resaved, saved);
        }
    }

    /// Mutated valid documents of every format.
    #[test]
    fn mutated_documents(edits in json_edits(), which in 0u8..6) {
        let bytes = match which {
            0 => ring(3).to_bytes(),
            // Version 3 (parent links), and the same world as a level file.
            4 | 5 => {
                let mut r = ring(4);
                r.entities[1].parent = Some(object(0));
                r.entities[3].parent = Some(object(1));
                if which == 4 {
                    r.to_bytes()
                } else {
                    let mut w = level(8);
                    restore_world(&r, instance(0), &mut w).unwrap();
                    ludus::content::save_level(&w, instance(0)).unwrap().to_bytes()
                }
            }
            3 => {
                let mut r = ring(3);
                r.entities[1] = entity(1, Some(""));
                r.entities[2] = entity(2, None);
                r.to_bytes()
            }
            1 => std::str::from_utf8(LEVEL).unwrap().as_bytes().to_vec(),
            _ => MANIFEST.to_vec(),
        };
        every_target(&mutate(bytes, &edits));
    }

    /// Restore against a model: it succeeds exactly when every component decodes, every link
    /// names an entity of the record and the world has room; then every value and link is the
    /// model's, else the world is unchanged.
    #[test]
    fn restore_matches_the_model(
        specs in prop::collection::vec(spec(), 0..8),
        capacity in 3usize..12,
    ) {
        let record = record_of(&specs);
        let mut w = level(capacity);
        let e = w.create().unwrap();
        w.insert(e, Hp { hp: 1 }).unwrap();
        let free = capacity - 1;
        let before = snapshot(&w, true);
        let malformed = specs.iter().any(|s| s.malformed);
        let dangling = specs.iter().any(|s| matches!(s.link, Link::Dangling));
        match restore_world(&record, instance(0), &mut w) {
            Ok(r) => {
                prop_assert!(!malformed && !dangling && specs.len() <= free);
                for (i, s) in specs.iter().enumerate() {
                    let e = r.entities[i];
                    prop_assert_eq!(w.get::<Pos>(e).is_some(), s.pos);
                    prop_assert_eq!(w.get::<Hp>(e).map(|h| h.hp), s.hp);
                    let target = w.get::<Enemy>(e).map(|x| x.target);
                    let expected = match &s.link {
                        Link::None => None,
                        Link::Empty => Some(EntityId::NULL),
                        Link::To(t) => Some(r.entities[t.index(specs.len())]),
                        Link::Dangling => unreachable!(),
                    };
                    prop_assert_eq!(target, expected);
                    prop_assert_eq!(w.key_of(e).map(|k| k.object), Some(object(i as u64)));
                }
            }
            Err(err) => {
                prop_assert_eq!(snapshot(&w, true), before);
                let ok = if malformed {
                    matches!(err.kind, K::Component { .. })
                } else if dangling {
                    matches!(err.kind, K::UnresolvedReference { .. })
                } else {
                    specs.len() > free && matches!(err.kind, K::World(_))
                };
                prop_assert!(ok, "{}", err);
            }
        }
    }
}

const LEVEL: &[u8] = br#"{
  "format": "ludus.level",
  "version": 1,
  "entities": [
    { "uuid": "5d1f0e7a-93c2-4b8e-a4f6-1e2d3c4b5a69", "name": "door",
      "parent": "0190a5c2-7b1e-7c3d-9e4f-5a6b7c8d9e0f",
      "components": { "enemy": { "speed": 2, "target": "6ba7b810-9dad-11d1-80b4-00c04fd430c8" } } },
    { "uuid": "0190a5c2-7b1e-7c3d-9e4f-5a6b7c8d9e0f", "name": "room", "parent": "", "components": {} },
    { "uuid": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "name": "guard",
      "parent": "0190a5c2-7b1e-7c3d-9e4f-5a6b7c8d9e0f", "components": { "hp": { "hp": 7 } } }
  ]
}"#;

const MANIFEST: &[u8] = br#"{
  "format": "ludus.identity-migration",
  "version": 1,
  "documents": [
    {
      "path": "levels/first-room.world.json",
      "document": "0b7e8c1d-2f43-4a96-9d51-6c2e4f8a1b3d",
      "objects": [
        { "legacy_id": "guard-a", "object": "5d1f0e7a-93c2-4b8e-a4f6-1e2d3c4b5a69" }
      ]
    }
  ]
}"#;
