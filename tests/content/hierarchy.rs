//! World records with parent links (version 3): save writes every entity's parent in the
//! hierarchy's document order, both readers restore parents and child order, and every
//! malformed link is refused with its own error and position.

use std::path::Path;

use crate::common::*;
use ludus::content::{
    duplicate_entities, restore_world, restore_world_from_slice, save_world, save_world_bytes,
    streams, RecordErrorKind as R, RestoreErrorKind as K, SaveError, WorldRecord, WorldV2,
};
use ludus::identity::test_entropy::SeqEntropy;
use ludus::identity::{PersistentObjectKey, SourceObjectId};
use ludus::prelude::*;

const SCHEMA: &str = "ludus.test.v1";

/// Everything of the hierarchy: per entity (by object id, ascending) its name, parent's object
/// id and children's object ids in order.
fn shape(
    w: &Level,
) -> Vec<(
    SourceObjectId,
    String,
    Option<SourceObjectId>,
    Vec<SourceObjectId>,
)> {
    let object = |e: EntityId| w.key_of(e).unwrap().object;
    let mut rows: Vec<_> = w
        .durable()
        .bindings()
        .iter()
        .map(|(key, e, _)| {
            (
                key.object,
                w.name(e).unwrap().to_owned(),
                w.parent(e).unwrap().map(object),
                w.children(e).map(object).collect(),
            )
        })
        .collect();
    rows.sort_by_key(|r| *r.0.as_bytes());
    rows
}

/// A world of `ring(n)` entities bound under instance 0, arranged: 0 the root of 3, 1 and 4
/// (in that child order, not UUID order), 4 the parent of 2; 5.. roots.
fn arranged(n: u64) -> (Level, Vec<EntityId>) {
    let mut w = level(32);
    let e = restore_world(&ring(n), instance(0), &mut w)
        .unwrap()
        .entities;
    for c in [3, 1, 4] {
        w.set_parent(e[c], Some(e[0])).unwrap();
    }
    w.set_parent(e[2], Some(e[4])).unwrap();
    (w, e)
}

#[test]
fn a_record_with_parents_round_trips_parents_child_order_and_names() {
    let (w, _) = arranged(7);
    let bytes = save_world_bytes(&w, instance(0), SCHEMA, document()).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.starts_with("{\n  \"version\": 3,"), "{text}");
    assert!(text.contains(&format!("\"parent\":\"{}\"", uuid_text(0))));
    assert!(
        text.contains("\"parent\":\"\""),
        "roots write an empty parent"
    );
    let record = WorldV2::from_slice(Path::new("saved.json"), &bytes).unwrap();
    assert_eq!(record.version(), 3);
    assert_eq!(record.to_bytes(), bytes, "save writes canonical bytes");
    // Document order: each root (UUID order) then its subtree depth first in child order.
    let order: Vec<SourceObjectId> = record.entities.iter().map(|e| e.uuid).collect();
    let objects = |ns: &[u64]| ns.iter().map(|&n| object(n)).collect::<Vec<_>>();
    assert_eq!(order, objects(&[0, 3, 1, 4, 2, 5, 6]));
    assert_eq!(
        save_world(&w, instance(0), SCHEMA, document()).unwrap(),
        record
    );
    // Both readers, into fresh worlds whose slots differ from the first's.
    for stream in [false, true] {
        let mut fresh = level(32);
        fresh.spawn((Hp { hp: 1 },)).unwrap();
        if stream {
            assert!(
                streams::<Level>(&bytes),
                "the streaming reader takes version 3"
            );
            restore_world_from_slice(Path::new("saved.json"), &bytes, instance(0), &mut fresh)
                .unwrap();
        } else {
            restore_world(&record, instance(0), &mut fresh).unwrap();
        }
        assert_eq!(shape(&fresh), shape(&w), "stream: {stream}");
        let again = save_world_bytes(&fresh, instance(0), SCHEMA, document()).unwrap();
        assert_eq!(again, bytes, "stream: {stream}");
    }
}

#[test]
fn a_record_without_parents_stays_version_two() {
    let mut w = level(8);
    restore_world(&ring(3), instance(0), &mut w).unwrap();
    let bytes = save_world_bytes(&w, instance(0), SCHEMA, document()).unwrap();
    assert!(bytes.starts_with(b"{\n  \"version\": 2,"));
    assert!(!String::from_utf8(bytes).unwrap().contains("parent"));
}

#[test]
fn a_parent_outside_the_saved_scope_is_refused() {
    let (mut w, e) = arranged(7);
    let loose = w.spawn((Hp { hp: 1 },)).unwrap();
    w.set_parent(e[5], Some(loose)).unwrap();
    let err = save_world_bytes(&w, instance(0), SCHEMA, document()).unwrap_err();
    assert_eq!(err, SaveError::UnsavedParent { entity: object(5) });
    // Under another instance: not saved with instance 0 either.
    w.set_parent(e[5], None).unwrap();
    let other = restore_world(&ring(2), instance(1), &mut w)
        .unwrap()
        .entities;
    w.set_parent(e[6], Some(other[0])).unwrap();
    let err = save_world_bytes(&w, instance(0), SCHEMA, document()).unwrap_err();
    assert_eq!(err, SaveError::UnsavedParent { entity: object(6) });
}

#[test]
fn a_deep_chain_saves_and_restores_without_recursion() {
    let n = if cfg!(miri) { 30 } else { 20_000 };
    // The default name arena (the test worlds' small one holds a few hundred names).
    let wide = || {
        let mut w = Level::try_new_durable(n + 1, DurableConfig::default()).unwrap();
        w.begin_structural();
        w
    };
    let mut w = wide();
    let e = restore_world(&ring(n as u64), instance(0), &mut w)
        .unwrap()
        .entities;
    for k in 1..n {
        w.set_parent(e[k], Some(e[k - 1])).unwrap();
    }
    let bytes = save_world_bytes(&w, instance(0), SCHEMA, document()).unwrap();
    let mut fresh = wide();
    restore_world_from_slice(Path::new("chain.json"), &bytes, instance(0), &mut fresh).unwrap();
    let at = |k: usize| {
        fresh
            .resolve(&PersistentObjectKey::new(instance(0), object(k as u64)))
            .entity()
            .unwrap()
    };
    for k in 1..n {
        assert_eq!(fresh.parent(at(k)).unwrap(), Some(at(k - 1)), "entity {k}");
    }
}

/// What a refusal's kind must match.
type Expected = fn(&R) -> bool;

/// Replaces `from` by `to` once in `text`.
fn edit(text: &str, from: &str, to: &str) -> Vec<u8> {
    assert!(text.contains(from), "{from}");
    text.replacen(from, to, 1).into_bytes()
}

#[test]
fn malformed_parent_links_are_refused_with_their_own_errors() {
    let (w, _) = arranged(5);
    let v3 =
        String::from_utf8(save_world_bytes(&w, instance(0), SCHEMA, document()).unwrap()).unwrap();
    let mut plain = level(8);
    restore_world(&ring(2), instance(0), &mut plain).unwrap();
    let v2 = String::from_utf8(save_world_bytes(&plain, instance(0), SCHEMA, document()).unwrap())
        .unwrap();
    let child_of_0 = format!("\"parent\":\"{}\"", uuid_text(0));
    let cases: Vec<(Vec<u8>, Expected)> = vec![
        // A parent member in version 2.
        (
            edit(&v2, ",\"components\"", ",\"parent\":\"\",\"components\""),
            |k| matches!(k, R::Shape(_)),
        ),
        // A version-3 entity without one.
        (edit(&v3, &child_of_0, "\"x\":1"), |k| {
            matches!(k, R::Shape(_))
        }),
        // A parent that is not an entity of the record.
        (
            edit(
                &v3,
                &child_of_0,
                &format!("\"parent\":\"{}\"", uuid_text(77)),
            ),
            |k| matches!(k, R::UnknownParent { .. }),
        ),
        // Not a UUID.
        (edit(&v3, &child_of_0, "\"parent\":\"guard\""), |k| {
            matches!(k, R::InvalidUuid { .. })
        }),
        // The root under its own child: a cycle.
        (
            edit(
                &v3,
                "\"parent\":\"\"",
                &format!("\"parent\":\"{}\"", uuid_text(3)),
            ),
            |k| matches!(k, R::ParentCycle),
        ),
    ];
    for (i, (bytes, expected)) in cases.iter().enumerate() {
        let err = WorldRecord::from_slice(Path::new("w.json"), bytes).unwrap_err();
        assert!(expected(&err.kind), "case {i}: {err}");
        let mut fresh = level(8);
        let before = snapshot(&fresh, true);
        assert!(
            !streams::<Level>(bytes),
            "case {i}: the fast reader declines"
        );
        let err = restore_world_from_slice(Path::new("w.json"), bytes, instance(0), &mut fresh)
            .unwrap_err();
        assert!(
            matches!(&err.kind, K::Record(k) if expected(k)),
            "case {i}: {err}"
        );
        assert_eq!(snapshot(&fresh, true), before, "case {i}");
    }
}

#[test]
fn duplicated_entities_keep_their_subtree_shape() {
    let (w, _) = arranged(6);
    let record = save_world(&w, instance(0), SCHEMA, document()).unwrap();
    // Copy 0's subtree part (0, 4, 2) and 5: 4's copy under 0's copy, 2's under 4's; 5's copy
    // a root.
    let selection = [object(0), object(4), object(2), object(5)];
    let dup = duplicate_entities(&record, &schema(), &selection, &mut SeqEntropy::new(4)).unwrap();
    let copy = |o: SourceObjectId| dup.copies.iter().find(|c| c.0 == o).unwrap().1;
    let parent_of = |u: SourceObjectId| {
        dup.record
            .entities
            .iter()
            .find(|e| e.uuid == u)
            .unwrap()
            .parent
    };
    assert_eq!(parent_of(copy(object(4))), Some(copy(object(0))));
    assert_eq!(parent_of(copy(object(2))), Some(copy(object(4))));
    assert_eq!(parent_of(copy(object(0))), None);
    assert_eq!(parent_of(copy(object(5))), None);
    dup.record.check().unwrap();
    let mut fresh = level(32);
    restore_world(&dup.record, instance(0), &mut fresh).unwrap();
}

#[test]
fn a_world_saves_as_a_level_file_and_restores_from_it() {
    let (w, _) = arranged(7);
    let level_file = ludus::content::save_level(&w, instance(0)).unwrap();
    level_file.check().unwrap();
    let bytes = level_file.to_bytes();
    let read =
        ludus::content::LevelFile::from_slice(Path::new("saved.level.json"), &bytes).unwrap();
    assert_eq!(read, level_file);
    // The same entities, names, parents and components as the World record holds.
    let record = save_world(&w, instance(0), SCHEMA, document()).unwrap();
    assert_eq!(read.entities.len(), record.entities.len());
    for (l, r) in read.entities.iter().zip(&record.entities) {
        assert_eq!(l.uuid, r.uuid.as_uuid());
        assert_eq!(l.name, r.name);
        assert_eq!(l.parent, r.parent.map(|p| p.as_uuid()));
        assert_eq!(l.components, r.components);
    }
    assert!(ludus::content::streams_level::<Level>(&bytes));
    let mut fresh = level(32);
    fresh.spawn((Hp { hp: 1 },)).unwrap();
    ludus::content::restore_level_from_slice(
        Path::new("saved.level.json"),
        &bytes,
        Some(instance(0)),
        &mut fresh,
    )
    .unwrap();
    assert_eq!(shape(&fresh), shape(&w));
    // References travel too: every enemy targets the next entity of the ring.
    for (key, e, _) in fresh.durable().bindings().iter() {
        let target = fresh.get::<Enemy>(e).unwrap().target;
        let n = u64::from_str_radix(&key.object.to_string()[24..], 16).unwrap() - 1;
        assert_eq!(fresh.key_of(target).unwrap().object, object((n + 1) % 7));
    }
    // A parent outside the scope is refused, as for records.
    let (mut w, e) = arranged(7);
    let loose = w.spawn((Hp { hp: 1 },)).unwrap();
    w.set_parent(e[5], Some(loose)).unwrap();
    assert_eq!(
        ludus::content::save_level(&w, instance(0)),
        Err(SaveError::UnsavedParent { entity: object(5) })
    );
}

/// A random forest over `n` ring entities: `links[k]` names entity `k`'s parent among
/// `0..n` (taken modulo the entities before it in `order`, so the links are acyclic), and the
/// links are made in `order`, which fixes each parent's child order.
fn forest(n: usize, links: &[Option<usize>], order: &[usize]) -> Level {
    let mut w = level(64);
    let e = restore_world(&ring(n as u64), instance(0), &mut w)
        .unwrap()
        .entities;
    let mut rank = vec![0; n];
    for (r, &k) in order.iter().enumerate() {
        rank[k] = r;
    }
    for &k in order {
        // A parent earlier in `order` than `k`: acyclic whatever the draw.
        let earlier: Vec<usize> = (0..n).filter(|&j| rank[j] < rank[k]).collect();
        if let (Some(pick), false) = (links[k], earlier.is_empty()) {
            w.set_parent(e[k], Some(e[earlier[pick % earlier.len()]]))
                .unwrap();
        }
    }
    w
}

proptest::proptest! {
    #![proptest_config(crate::support::proptest_config_unpersisted(512, 2))]

    /// Random forests (any depth, any child order, references around the ring) through both
    /// saved forms and both readers: the same names, parents, child order and references, and
    /// a record that saves again to the same bytes.
    #[test]
    fn random_forests_round_trip_through_records_and_levels(
        n in 1usize..24,
        links in proptest::collection::vec(proptest::option::of(0usize..64), 24),
        seed in proptest::prelude::any::<u64>(),
    ) {
        let mut order: Vec<usize> = (0..n).collect();
        let mut rng = crate::support::Rng::seeded(seed);
        for i in (1..n).rev() {
            order.swap(i, rng.below(i + 1));
        }
        let w = forest(n, &links[..n], &order);
        let bytes = save_world_bytes(&w, instance(0), SCHEMA, document()).unwrap();
        let level_bytes = ludus::content::save_level(&w, instance(0)).unwrap().to_bytes();
        for form in 0..3 {
            let mut fresh = level(64);
            fresh.spawn((Hp { hp: 9 },)).unwrap();
            match form {
                0 => {
                    let record = WorldV2::from_slice(Path::new("r"), &bytes).unwrap();
                    restore_world(&record, instance(0), &mut fresh).unwrap();
                }
                1 => {
                    restore_world_from_slice(Path::new("r"), &bytes, instance(0), &mut fresh)
                        .unwrap();
                }
                _ => {
                    ludus::content::restore_level_from_slice(
                        Path::new("l"),
                        &level_bytes,
                        Some(instance(0)),
                        &mut fresh,
                    )
                    .unwrap();
                }
            }
            proptest::prop_assert_eq!(shape(&fresh), shape(&w), "form {}", form);
            let target = |x: &Level, e: EntityId| x.key_of(x.get::<Enemy>(e).unwrap().target);
            for (key, e, _) in w.durable().bindings().iter() {
                let f = fresh.resolve(&key).entity().unwrap();
                proptest::prop_assert_eq!(target(&w, e), target(&fresh, f));
            }
            let again = save_world_bytes(&fresh, instance(0), SCHEMA, document()).unwrap();
            proptest::prop_assert_eq!(&again, &bytes, "form {}", form);
        }
    }
}
