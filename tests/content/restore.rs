//! Two-pass restore of version-2 World records: forward references, names, bindings, and
//! every refusal leaving the whole world unchanged (capacity, an unresolved link last, a
//! duplicate identity, malformed components, budgets), plus the rollback after pass 1.

use std::path::Path;

use crate::common::*;
use ludus::content::{
    restore_world, restore_world_failing, restore_world_from_slice, FailPoint, RecordErrorKind,
    RestoreErrorKind as K, Step, WorldV2,
};
use ludus::durable::HierarchyError;
use ludus::identity::PersistentObjectKey;
use ludus::prelude::*;
use serde_json::json;

#[test]
fn restore_creates_links_names_and_binds_forward_references_included() {
    let record = ring(5);
    let mut w = level(16);
    let before = w.binding_revision();
    let restored = restore_world(&record, instance(0), &mut w).unwrap();
    assert_eq!(restored.entities.len(), 5);
    assert_eq!(w.binding_revision(), before + 1, "one atomic activation");
    for (i, &e) in restored.entities.iter().enumerate() {
        let key = PersistentObjectKey::new(instance(0), object(i as u64));
        assert_eq!(w.resolve(&key), Resolution::Resolved(e));
        assert_eq!(w.name(e).unwrap(), format!("entity {i}"));
        assert_eq!(
            w.get::<Pos>(e),
            Some(&Pos {
                x: i as f32,
                y: 0.5
            })
        );
        assert_eq!(w.get::<Hp>(e), Some(&Hp { hp: 10 + i as u32 }));
        let target = w.get::<Enemy>(e).unwrap().target;
        assert_eq!(target, restored.entities[(i + 1) % 5], "entity {i}");
    }
}

#[test]
fn no_target_and_missing_components_restore_as_such() {
    let mut record = ring(2);
    record.entities[0] = entity(0, Some(""));
    record.entities[1] = entity(1, None);
    let mut w = level(4);
    let r = restore_world(&record, instance(0), &mut w).unwrap();
    assert!(w.get::<Enemy>(r.entities[0]).unwrap().target.is_null());
    assert!(w.get::<Enemy>(r.entities[1]).is_none());
}

#[test]
fn two_instances_of_one_record_are_two_graphs() {
    let record = ring(3);
    let mut w = level(8);
    let a = restore_world(&record, instance(0), &mut w).unwrap();
    let b = restore_world(&record, instance(1), &mut w).unwrap();
    for i in 0..3 {
        assert_ne!(a.entities[i], b.entities[i]);
        assert_eq!(
            w.get::<Enemy>(b.entities[i]).unwrap().target,
            b.entities[(i + 1) % 3]
        );
    }
}

/// Restores `record` into a world already holding other state, expects `check` of the error,
/// and compares the whole world before and after, counters included.
fn refused(record: &WorldV2, w: &mut Level, check: impl Fn(&K, &[Step]) -> bool) {
    let before = snapshot(w, true);
    let err = restore_world(record, instance(0), w).unwrap_err();
    assert!(check(&err.kind, &err.path), "{err}");
    assert_eq!(snapshot(w, true), before, "{err}");
}

fn busy_world(capacity: usize) -> Level {
    let mut w = level(capacity);
    let prior = ring(2);
    restore_world(&prior, instance(7), &mut w).unwrap();
    let e = w.create().unwrap();
    w.insert(e, Hp { hp: 1 }).unwrap();
    w
}

fn at_entity(path: &[Step], i: usize) -> bool {
    path.get(1) == Some(&Step::Index(i))
}

#[test]
fn capacity_refusal_changes_nothing() {
    let mut w = busy_world(6);
    refused(&ring(4), &mut w, |k, _| {
        matches!(
            k,
            K::World(DurableError::World(WorldError::CapacityExhausted { .. }))
        )
    });
    // Exactly the free slots fit.
    restore_world(&ring(3), instance(0), &mut w).unwrap();
}

#[test]
fn an_unresolved_link_in_the_last_entity_changes_nothing() {
    let mut w = busy_world(32);
    let mut record = ring(6);
    record.entities[5] = entity(5, Some(&uuid_text(99)));
    refused(&record, &mut w, |k, p| {
        matches!(k, K::UnresolvedReference { uuid, component } if *uuid == uuid_text(99) && component == "enemy")
            && at_entity(p, 5)
    });
    assert_eq!(w.durable().counters().unresolved_references, 0);
}

#[test]
fn a_duplicate_identity_changes_nothing() {
    let mut w = busy_world(32);
    let record = ring(3);
    restore_world(&record, instance(0), &mut w).unwrap();
    refused(&record, &mut w, |k, p| {
        matches!(k, K::DuplicateIdentity { key } if key.object == object(0)) && at_entity(p, 0)
    });
    // Only the last one already bound: still refused whole.
    let mut fresh = level(32);
    restore_world(&ring(1), instance(0), &mut fresh).unwrap();
    let mut last = ring(3);
    last.entities.reverse();
    refused(&last, &mut fresh, |k, p| {
        matches!(k, K::DuplicateIdentity { .. }) && at_entity(p, 2)
    });
}

#[test]
fn malformed_components_change_nothing() {
    let mut w = busy_world(32);
    let cases: Vec<(serde_json::Value, &str)> = vec![
        (json!({"x": 1.0}), "missing"),
        (json!({"x": 1.0, "y": 2.0, "z": 3.0}), "unknown property"),
        (json!({"x": "one", "y": 2.0}), "invalid type"),
    ];
    for (pos, msg) in cases {
        let mut record = ring(3);
        record.entities[2]
            .components
            .insert("pos".into(), props(pos));
        refused(&record, &mut w, |k, p| {
            matches!(k, K::Component { component, message } if component == "pos" && message.contains(msg))
                && at_entity(p, 2)
        });
    }
    for target in ["not-a-uuid", "00000000-0000-0000-0000-000000000000", " "] {
        let mut record = ring(3);
        record.entities[2] = entity(2, Some(target));
        refused(
            &record,
            &mut w,
            |k, _| matches!(k, K::Component { message, .. } if message.contains("invalid entity reference")),
        );
    }
    let mut record = ring(3);
    record.entities[1]
        .components
        .insert("velocity".into(), props(json!({})));
    refused(
        &record,
        &mut w,
        |k, _| matches!(k, K::UnknownComponent { name } if name == "velocity"),
    );
    // A record rule (labels repeated) is refused too, for in-memory records.
    let mut record = ring(3);
    record.entities[2].label = "e0".into();
    refused(&record, &mut w, |k, _| {
        matches!(k, K::Record(RecordErrorKind::RepeatedLegacyId { .. }))
    });
}

#[test]
fn world_refusals_change_nothing() {
    let mut w = busy_world(32);
    w.end_structural();
    refused(&ring(2), &mut w, |k, _| {
        matches!(k, K::World(DurableError::World(WorldError::InvalidPhase)))
    });
    // A world without room has no durable tables (a plain world has no restore at all).
    let mut plain = Level::try_new_durable(0, DurableConfig::default()).unwrap();
    plain.begin_structural();
    let err = restore_world(&ring(2), instance(0), &mut plain).unwrap_err();
    assert!(
        matches!(err.kind, K::World(DurableError::Disabled)),
        "{err}"
    );
    assert_eq!(plain.registry.len(), 0);
    // Names beyond the budget.
    let config = DurableConfig {
        name_bytes: 40,
        ..DurableConfig::default()
    };
    let mut small = Level::try_new_durable(8, config).unwrap();
    small.begin_structural();
    let before = snapshot(&small, true);
    let err = restore_world(&ring(3), instance(0), &mut small).unwrap_err();
    // "entity 0" to "entity 2" with labels "e0" to "e2" take 16 bytes each: the third is
    // the first that does not fit, and the error names it and the budget's setting.
    assert_eq!(
        err.kind,
        K::World(DurableError::Hierarchy(HierarchyError::NameBudget {
            requested: 48,
            free: 40,
            budget: 40
        })),
        "{err}"
    );
    let text = err.to_string();
    assert!(text.starts_with("at $.entities[2]"), "{text}");
    assert!(text.contains("DurableConfig::name_bytes"), "{text}");
    assert_eq!(snapshot(&small, true), before);
}

#[test]
fn a_failure_after_pass_one_releases_every_entity_and_publishes_nothing() {
    for fail in [FailPoint::AfterCreate, FailPoint::BeforeActivate] {
        let mut w = busy_world(32);
        let before = snapshot(&w, false);
        let err = restore_world_failing(&ring(5), instance(0), &mut w, fail).unwrap_err();
        assert!(matches!(err.kind, K::World(_)));
        assert_eq!(snapshot(&w, false), before, "{fail:?}");
        for i in 0..5 {
            let key = PersistentObjectKey::new(instance(0), object(i));
            assert_eq!(w.resolve(&key), Resolution::Missing);
        }
        // The world is usable: the same record restores now.
        restore_world(&ring(5), instance(0), &mut w).unwrap();
    }
}

#[test]
fn from_slice_locates_every_refusal() {
    let mut w = level(8);
    let mut record = ring(2);
    record.entities[1] = entity(1, Some(&uuid_text(42)));
    let bytes = record.to_bytes();
    let err =
        restore_world_from_slice(Path::new("w.json"), &bytes, instance(0), &mut w).unwrap_err();
    let text = String::from_utf8(bytes.clone()).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains("\"enemy\"") && text.lines().count() > 0)
        .unwrap();
    assert!(err.line > line, "{err}");
    assert!(err.to_string().starts_with("w.json:"), "{err}");
    assert!(matches!(err.kind, K::UnresolvedReference { .. }));
    let err = restore_world_from_slice(
        Path::new("w.json"),
        b"{\"version\": 4}",
        instance(0),
        &mut w,
    )
    .unwrap_err();
    assert!(matches!(
        err.kind,
        K::Record(RecordErrorKind::UnsupportedVersion { .. })
    ));
    assert_eq!(w.registry.len(), 0);
    // Invalid UTF-8 in a name: refused at its line, nothing created.
    let mut bad = ring(2).to_bytes();
    let at = bad.windows(8).rposition(|x| x == b"entity 1").unwrap();
    bad[at + 7] = 0xff;
    let line = 1 + bad[..at].iter().filter(|&&b| b == b'\n').count();
    let err = restore_world_from_slice(Path::new("w.json"), &bad, instance(0), &mut w).unwrap_err();
    assert_eq!(err.line, line, "{err}");
    assert!(matches!(err.kind, K::Record(_)), "{err}");
    assert_eq!(w.registry.len(), 0);
    // The canonical bytes restore.
    restore_world_from_slice(
        Path::new("w.json"),
        &ring(2).to_bytes(),
        instance(0),
        &mut w,
    )
    .unwrap();
}

#[test]
fn the_streaming_reader_takes_any_member_order_and_declines_escaped_labels() {
    let text = format!(
        r#"{{"entities": [{{"components": {{"hp": {{"hp": 3}}, "enemy": {{"target": "{t}", "speed": 1}}}},
            "name": "b", "label": "b", "uuid": "{b}"}},
            {{"name": "a", "uuid": "{a}", "components": {{}}, "label": "a"}}],
          "document": "{d}", "schema": "s", "version": 2}}"#,
        t = uuid_text(0),
        a = uuid_text(0),
        b = uuid_text(1),
        d = document(),
    );
    assert!(ludus::content::streams::<Level>(text.as_bytes()));
    let mut w = level(4);
    let r = restore_world_from_slice(Path::new("w"), text.as_bytes(), instance(0), &mut w).unwrap();
    assert_eq!(w.get::<Enemy>(r.entities[0]).unwrap().target, r.entities[1]);
    // An escaped label is valid: the tree reader takes it.
    let escaped = text.replace(r#""label": "a""#, r#""label": "\u0061x""#);
    assert!(!ludus::content::streams::<Level>(escaped.as_bytes()));
    let mut w = level(4);
    restore_world_from_slice(Path::new("w"), escaped.as_bytes(), instance(0), &mut w).unwrap();
    assert_eq!(w.registry.len(), 2);
    // A repeated label or uuid, or the document's uuid on an entity: the streaming reader
    // declines, the tree reader names the rule.
    let mut w = level(4);
    for (bad, check) in [
        (
            text.replace(r#""label": "a""#, r#""label": "b""#),
            (|k: &K| matches!(k, K::Record(RecordErrorKind::RepeatedLegacyId { .. })))
                as fn(&K) -> bool,
        ),
        (text.replace(&uuid_text(0), &uuid_text(1)), |k: &K| {
            matches!(k, K::Record(RecordErrorKind::RepeatedUuid { .. }))
        }),
        (
            text.replace(&uuid_text(1), &document().to_string()),
            |k: &K| matches!(k, K::Record(RecordErrorKind::RepeatedUuid { .. })),
        ),
    ] {
        assert!(!ludus::content::streams::<Level>(bad.as_bytes()));
        let err = restore_world_from_slice(Path::new("w"), bad.as_bytes(), instance(0), &mut w)
            .unwrap_err();
        assert!(check(&err.kind), "{err}");
        assert_eq!(w.registry.len(), 0);
    }
}

/// A pool swapped in from another world (the world's pool fields are public) is refused before
/// pass 1: the restore creates nothing, so nothing is left alive when pass 2 could not insert
/// (without the check, two pass-1 entities would be left alive and the counters advanced).
#[test]
fn a_swapped_in_pool_is_refused_before_pass_one() {
    let (mut a, mut b) = (level(8), level(8));
    let before = snapshot(&a, true);
    std::mem::swap(&mut a.hp, &mut b.hp);
    let err = restore_world(&ring(2), instance(0), &mut a).unwrap_err();
    std::mem::swap(&mut a.hp, &mut b.hp);
    assert!(
        matches!(
            err.kind,
            K::World(DurableError::World(WorldError::ForeignPool))
        ),
        "{err}"
    );
    assert_eq!(snapshot(&a, true), before, "counters included");
    assert_eq!(snapshot(&b, true), snapshot(&level(8), true));
}
