//! Level files: strict reading with one fixture per rejection rule, the level-file UUID policy
//! (versions 1–8), a second insert of a uuid refused, canonical bytes, and restore building the
//! hierarchy with forward parent references, all or nothing.

use std::path::{Path, PathBuf};

use crate::common::*;
use ludus::content::{
    restore_level, restore_level_from_slice, LevelErrorKind as L, LevelFile, RestoreErrorKind as K,
    Shape,
};
use ludus::identity::{PersistentObjectKey, UuidError};
use ludus::prelude::*;

fn read(name: &str) -> (PathBuf, Vec<u8>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/content/level")
        .join(name);
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

type Check = fn(&L) -> bool;

/// (fixture, line of the offending value, kind).
const REJECTIONS: &[(&str, usize, Check)] = &[
    ("syntax.json", 23, |k| {
        matches!(k, L::Shape(Shape::Syntax { .. }))
    }),
    (
        "duplicate-member.json",
        23,
        |k| matches!(k, L::Shape(Shape::DuplicateMember { name }) if name == "name"),
    ),
    (
        "unknown-member-handle.json",
        23,
        |k| matches!(k, L::Shape(Shape::UnknownMember { name }) if name == "handle"),
    ),
    (
        "unknown-member-root.json",
        4,
        |k| matches!(k, L::Shape(Shape::UnknownMember { name }) if name == "document"),
    ),
    ("missing-member.json", 20, |k| {
        matches!(k, L::Shape(Shape::MissingMember { name: "parent" }))
    }),
    ("wrong-type.json", 24, |k| {
        matches!(
            k,
            L::Shape(Shape::WrongType {
                expected: "an object"
            })
        )
    }),
    ("unsupported-format.json", 2, |k| {
        matches!(k, L::UnsupportedFormat { .. })
    }),
    ("unsupported-version.json", 3, |k| {
        matches!(k, L::UnsupportedVersion { .. })
    }),
    ("nil-uuid.json", 21, |k| {
        matches!(
            k,
            L::InvalidUuid {
                reason: UuidError::Nil,
                ..
            }
        )
    }),
    ("version-0-uuid.json", 21, |k| {
        matches!(
            k,
            L::InvalidUuid {
                reason: UuidError::Version { found: 0 },
                ..
            }
        )
    }),
    ("version-9-uuid.json", 21, |k| {
        matches!(
            k,
            L::InvalidUuid {
                reason: UuidError::Version { found: 9 },
                ..
            }
        )
    }),
    ("variant-uuid.json", 21, |k| {
        matches!(
            k,
            L::InvalidUuid {
                reason: UuidError::Variant { found: 0xc },
                ..
            }
        )
    }),
    ("braced-uuid.json", 21, |k| {
        matches!(
            k,
            L::InvalidUuid {
                reason: UuidError::Length { found: 38 },
                ..
            }
        )
    }),
    ("repeated-uuid.json", 27, |k| {
        matches!(k, L::RepeatedUuid { .. })
    }),
    ("unresolved-parent.json", 29, |k| {
        matches!(k, L::UnresolvedParent { .. })
    }),
    ("parent-cycle.json", 23, |k| matches!(k, L::ParentCycle)),
    ("self-parent.json", 23, |k| matches!(k, L::ParentCycle)),
    (
        "invalid-component-name.json",
        31,
        |k| matches!(k, L::InvalidComponentName { name } if name == "h p"),
    ),
];

/// The valid fixture, compiled in (Miri isolates the file system).
const VALID: &[u8] = include_bytes!("../fixtures/content/level/valid.json");

#[test]
#[cfg_attr(miri, ignore = "reads fixture files; Miri isolates the file system")]
fn every_rejection_rule_has_a_fixture_and_a_position() {
    let mut wrong = Vec::new();
    for (name, line, check) in REJECTIONS {
        let (path, bytes) = read(name);
        let err = LevelFile::from_slice(&path, &bytes).unwrap_err();
        assert!(check(&err.kind), "{name}: {err}");
        if err.line != *line {
            wrong.push(format!("{name}: {err}"));
            continue;
        }
        assert!(
            err.to_string().contains(&format!("{name}:{line}:")),
            "{err}"
        );
        // Restoring the bytes refuses the same way and leaves the world alone.
        let mut w = level(8);
        let before = snapshot(&w, true);
        let err = restore_level_from_slice(&path, &bytes, None, &mut w).unwrap_err();
        assert!(
            matches!(&err.kind, K::Level(k) if check(k)),
            "{name}: {err}"
        );
        assert_eq!(snapshot(&w, true), before);
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn the_valid_level_reads_canonically_and_accepts_versions_one_to_eight() {
    let (path, bytes) = (Path::new("valid.json"), VALID.to_vec());
    let level = LevelFile::from_slice(path, &bytes).unwrap();
    let versions: Vec<usize> = level
        .entities
        .iter()
        .map(|e| e.uuid.get_version_num())
        .collect();
    assert_eq!(versions, [4, 7, 1]);
    assert_eq!(
        String::from_utf8(level.to_bytes()).unwrap(),
        String::from_utf8(bytes).unwrap()
    );
    for v in 1..=8u128 {
        let mut l = level.clone();
        let u = uuid::Uuid::from_u128(0x1190_a5c2_7b1e_0c3d_9e4f_5a6b_7c8d_9e0f | (v << 76));
        l.entities[0].uuid = u;
        l.check().unwrap_or_else(|e| panic!("version {v}: {e:?}"));
    }
}

#[test]
fn restore_builds_the_hierarchy_with_forward_parents() {
    let (path, bytes) = (Path::new("valid.json"), VALID.to_vec());
    let level = LevelFile::from_slice(path, &bytes).unwrap();
    let mut w = level_world();
    let r = restore_level(&level, None, &mut w).unwrap();
    let [door, room, guard] = r.entities[..] else {
        panic!()
    };
    assert_eq!(w.parent(door).unwrap(), Some(room), "a forward parent");
    assert_eq!(w.parent(guard).unwrap(), Some(room));
    assert_eq!(w.parent(room).unwrap(), None);
    assert_eq!(
        w.children(room).collect::<Vec<_>>(),
        [door, guard],
        "file order"
    );
    assert_eq!(w.name(door).unwrap(), "door");
    assert_eq!(
        w.get::<Enemy>(door).unwrap().target,
        guard,
        "a forward reference"
    );
    assert_eq!(w.get::<Hp>(guard), Some(&Hp { hp: 7 }));
    assert_eq!(
        w.durable().bindings().len(),
        0,
        "no instance: nothing bound"
    );
}

fn level_world() -> Level {
    level(16)
}

#[test]
fn binding_needs_version_four_uuids_and_refusals_change_nothing() {
    let (path, bytes) = (Path::new("valid.json"), VALID.to_vec());
    let level = LevelFile::from_slice(path, &bytes).unwrap();
    let mut w = level_world();
    let before = snapshot(&w, true);
    let err = restore_level(&level, Some(instance(0)), &mut w).unwrap_err();
    assert!(matches!(err.kind, K::Unbindable { .. }), "{err}");
    assert_eq!(snapshot(&w, true), before);
    // All version 4: bound.
    let mut v4 = level.clone();
    for (i, e) in v4.entities.iter_mut().enumerate() {
        e.uuid = object(i as u64).as_uuid();
    }
    v4.entities[0].parent = Some(object(1).as_uuid());
    v4.entities[2].parent = Some(object(1).as_uuid());
    v4.entities[0].components.get_mut("enemy").unwrap()["target"] = serde_json::json!(uuid_text(2));
    let r = restore_level(&v4, Some(instance(0)), &mut w).unwrap();
    assert_eq!(w.key_of(r.entities[2]).unwrap().object, object(2));
    // A second restore under the same instance: a duplicate identity, nothing changes.
    let before = snapshot(&w, true);
    let err = restore_level(&v4, Some(instance(0)), &mut w).unwrap_err();
    assert!(matches!(err.kind, K::DuplicateIdentity { .. }), "{err}");
    assert_eq!(snapshot(&w, true), before);
    // An unresolved reference in the last entity.
    let mut bad = v4.clone();
    bad.entities[2].components.insert(
        "enemy".into(),
        props(serde_json::json!({"target": uuid_text(77), "speed": 1})),
    );
    let err = restore_level(&bad, Some(instance(1)), &mut w).unwrap_err();
    assert!(matches!(err.kind, K::UnresolvedReference { .. }), "{err}");
    assert_eq!(snapshot(&w, true), before);
}

/// As for World records: a pool swapped in from another world is refused before pass 1, and
/// the world (counters included) is as it was.
#[test]
fn a_swapped_in_pool_is_refused_before_pass_one() {
    let (path, bytes) = (Path::new("valid.json"), VALID.to_vec());
    let level_file = LevelFile::from_slice(path, &bytes).unwrap();
    let (mut a, mut b) = (level_world(), level_world());
    let before = snapshot(&a, true);
    std::mem::swap(&mut a.hp, &mut b.hp);
    let err = restore_level(&level_file, None, &mut a).unwrap_err();
    std::mem::swap(&mut a.hp, &mut b.hp);
    assert!(
        matches!(
            err.kind,
            K::World(DurableError::World(WorldError::ForeignPool))
        ),
        "{err}"
    );
    assert_eq!(snapshot(&a, true), before, "counters included");
}

/// A chain of entities, entity `k` the parent of entity `k + 1`, listed in `order`.
fn chain(order: &[usize]) -> LevelFile {
    let uuid = |k: usize| object(k as u64).as_uuid();
    LevelFile {
        entities: order
            .iter()
            .map(|&k| ludus::content::LevelEntity {
                uuid: uuid(k),
                label: String::new(),
                name: String::new(),
                parent: (k > 0).then(|| uuid(k - 1)),
                components: ludus::content::Components::new(),
            })
            .collect(),
    }
}

/// Deep chains restore whatever order the file lists them in (parent first, child first,
/// shuffled), each entity under its own parent; a loop anywhere in the file is refused.
#[test]
fn deep_chains_restore_in_any_order() {
    let n = if cfg!(miri) { 40 } else { 20_000 };
    let parent_first: Vec<usize> = (0..n).collect();
    let child_first: Vec<usize> = (0..n).rev().collect();
    let mut shuffled = parent_first.clone();
    let mut rng = crate::support::Rng::seeded(7);
    for i in (1..n).rev() {
        shuffled.swap(i, rng.below(i + 1));
    }
    for order in [parent_first, child_first, shuffled] {
        let file = chain(&order);
        let mut w = level(n);
        // Through the streaming reader (the bytes), checked against the tree reader's plan.
        let bytes = file.to_bytes();
        assert!(ludus::content::streams_level::<Level>(&bytes));
        let r = restore_level_from_slice(Path::new("chain.json"), &bytes, None, &mut w).unwrap();
        let mut tree = level(n);
        let slots = |r: &ludus::content::Restored| r.entities.iter().map(|e| e.slot()).collect();
        let (fast, slow): (Vec<u32>, Vec<u32>) = (
            slots(&r),
            slots(&restore_level(&file, None, &mut tree).unwrap()),
        );
        assert!(fast == slow, "both readers create the same slots");
        let mut handle = vec![EntityId::NULL; n];
        for (at, &k) in order.iter().enumerate() {
            handle[k] = r.entities[at];
        }
        for k in 0..n {
            let want = (k > 0).then(|| handle[k - 1]);
            assert_eq!(w.parent(handle[k]).unwrap(), want, "entity {k}");
        }
    }
    // The root's parent set to the last entity closes a loop: refused, nothing restored.
    let mut file = chain(&(0..n).collect::<Vec<_>>());
    file.entities[0].parent = Some(object(n as u64 - 1).as_uuid());
    let mut w = level(n);
    let err = restore_level(&file, None, &mut w).unwrap_err();
    assert!(matches!(err.kind, K::Level(L::ParentCycle)), "{err}");
    let bytes = file.to_bytes();
    assert!(!ludus::content::streams_level::<Level>(&bytes));
    let err = restore_level_from_slice(Path::new("loop.json"), &bytes, None, &mut w).unwrap_err();
    assert!(matches!(err.kind, K::Level(L::ParentCycle)), "{err}");
    assert_eq!(w.registry.len(), 0);
}

/// The rollback after pass 1, through a level with names, a hierarchy and bindings, into a
/// world that already holds a named hierarchy of its own: whichever point fails, every entity
/// of the level is destroyed again, no binding, name or link of it survives, the world's own
/// hierarchy is as it was, and the same level then restores.
#[test]
fn a_level_restore_failing_after_pass_one_leaves_names_links_and_bindings_as_they_were() {
    use ludus::content::{restore_level_failing, FailPoint};
    let n = 6;
    let uuid = |k: usize| object(100 + k as u64).as_uuid();
    let file = LevelFile {
        entities: (0..n)
            .map(|k| ludus::content::LevelEntity {
                uuid: uuid(k),
                label: String::new(),
                name: format!("level-{k}"),
                parent: (k > 0).then(|| uuid((k - 1) / 2)),
                components: ludus::content::Components::new(),
            })
            .collect(),
    };
    for fail in [FailPoint::AfterCreate, FailPoint::BeforeActivate] {
        let mut w = level(32);
        let root = w.spawn((Hp { hp: 1 },)).unwrap();
        let leaf = w.spawn((Hp { hp: 2 },)).unwrap();
        w.set_name(root, "root").unwrap();
        w.set_parent(leaf, Some(root)).unwrap();
        let before = snapshot(&w, false);
        let err = restore_level_failing(&file, Some(instance(3)), &mut w, fail).unwrap_err();
        assert!(matches!(err.kind, K::World(_)), "{fail:?}: {err}");
        assert_eq!(snapshot(&w, false), before, "{fail:?}");
        assert_eq!(w.children(root).collect::<Vec<_>>(), [leaf], "{fail:?}");
        assert_eq!(w.name(root).unwrap(), "root");
        for k in 0..n {
            let key = PersistentObjectKey::new(instance(3), object(100 + k as u64));
            assert_eq!(w.resolve(&key), Resolution::Missing, "{fail:?}");
        }
        let r = restore_level(&file, Some(instance(3)), &mut w).unwrap();
        assert_eq!(w.parent(r.entities[5]).unwrap(), Some(r.entities[2]));
        assert_eq!(w.name(r.entities[5]).unwrap(), "level-5");
    }
}

#[test]
fn a_typed_builder_writes_a_level_both_readers_restore() {
    use ludus::content::{LevelBuildError, LevelBuilder};
    use ludus::identity::test_entropy::SeqEntropy;
    let mut entropy = SeqEntropy::new(0x1e7e1);
    let mut b = LevelBuilder::<Level>::new();
    let room = b.entity("room", &mut entropy).unwrap();
    let door = b.entity("door", &mut entropy).unwrap();
    let guard = b.entity("guard", &mut entropy).unwrap();
    b.set_parent(door, room).unwrap();
    b.set_parent(guard, room).unwrap();
    b.set_label(guard, "guard-a").unwrap();
    b.insert(door, Pos { x: 1.5, y: -2.0 }).unwrap();
    b.insert(
        guard,
        Enemy {
            target: door.entity(),
            speed: 4,
            _pad: 0,
        },
    )
    .unwrap();
    // Refusals change nothing.
    assert_eq!(b.set_parent(room, guard), Err(LevelBuildError::Cycle));
    assert!(matches!(
        b.set_label(door, "guard-a"),
        Err(LevelBuildError::Label(_))
    ));
    let handle = level(4).spawn((Hp { hp: 1 },)).unwrap();
    let bad = Enemy {
        target: handle,
        speed: 1,
        _pad: 0,
    };
    assert!(matches!(
        b.insert(room, bad),
        Err(LevelBuildError::Component { .. })
    ));
    assert!(matches!(
        b.insert(room, 7u32),
        Err(LevelBuildError::UnknownComponent(_))
    ));
    let other = LevelBuilder::<Level>::new()
        .entity("x", &mut SeqEntropy::new(1))
        .unwrap();
    assert_eq!(
        b.set_parent(other, room),
        Err(LevelBuildError::ForeignRef(other.uuid()))
    );
    let file = b.build().unwrap();
    let bytes = file.to_bytes();
    assert_eq!(
        LevelFile::from_slice(Path::new("built.json"), &bytes).unwrap(),
        file
    );
    let mut w = level(16);
    restore_level_from_slice(Path::new("built.json"), &bytes, Some(instance(2)), &mut w).unwrap();
    let at = |r: ludus::content::LevelRef| {
        let object = ludus::identity::SourceObjectId::from_uuid(r.uuid()).unwrap();
        w.resolve(&ludus::identity::PersistentObjectKey::new(
            instance(2),
            object,
        ))
        .entity()
        .unwrap()
    };
    assert_eq!(
        w.children(at(room)).collect::<Vec<_>>(),
        [at(door), at(guard)]
    );
    assert_eq!(w.get::<Enemy>(at(guard)).unwrap().target, at(door));
    assert_eq!(w.get::<Pos>(at(door)), Some(&Pos { x: 1.5, y: -2.0 }));
    assert_eq!(
        (w.name(at(guard)), w.label(at(guard))),
        (Ok("guard"), Ok("guard-a"))
    );
    let mut tree = level(16);
    restore_level(&file, Some(instance(2)), &mut tree).unwrap();
    assert_eq!(
        tree.checkpoint_digest().unwrap(),
        w.checkpoint_digest().unwrap()
    );
}
