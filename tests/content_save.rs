//! Save: world → version-2 record through the reverse binding, in canonical entity order;
//! save → restore → save is byte-identical; references survive the round trip.

mod content_common;

use content_common::*;
use ludus::content::{restore_world, save_world, save_world_bytes, SaveError, WorldV2};
use ludus::identity::PersistentObjectKey;
use ludus::prelude::*;
use std::path::Path;

const SCHEMA: &str = "ludus.test.v1";

#[test]
fn save_restore_save_is_byte_identical() {
    let mut a = level(16);
    restore_world(&ring(6), instance(0), &mut a).unwrap();
    let first = save_world_bytes(&a, instance(0), SCHEMA, document()).unwrap();
    let record = WorldV2::from_slice(Path::new("saved.json"), &first).unwrap();
    assert_eq!(record.to_bytes(), first, "save writes canonical bytes");
    let mut b = level(16);
    // Something else in the fresh world first, so slots differ.
    let other = b.create().unwrap();
    b.insert(other, Hp { hp: 3 }).unwrap();
    restore_world(&record, instance(0), &mut b).unwrap();
    let second = save_world_bytes(&b, instance(0), SCHEMA, document()).unwrap();
    assert_eq!(
        String::from_utf8(second).unwrap(),
        String::from_utf8(first).unwrap()
    );
}

#[test]
fn the_entity_order_is_canonical_not_slot_or_record_order() {
    let mut forward = level(16);
    restore_world(&ring(5), instance(0), &mut forward).unwrap();
    let mut reversed = ring(5);
    reversed.entities.reverse();
    let mut backward = level(16);
    restore_world(&reversed, instance(0), &mut backward).unwrap();
    let a = save_world(&forward, instance(0), SCHEMA, document()).unwrap();
    let b = save_world(&backward, instance(0), SCHEMA, document()).unwrap();
    assert_eq!(a, b);
    let uuids: Vec<_> = a.entities.iter().map(|e| *e.uuid.as_bytes()).collect();
    let mut sorted = uuids.clone();
    sorted.sort();
    assert_eq!(uuids, sorted);
}

#[test]
fn handles_become_uuids_and_a_reference_resolves_across_the_round_trip() {
    let mut w = level(8);
    let r = restore_world(&ring(2), instance(0), &mut w).unwrap();
    let record = save_world(&w, instance(0), SCHEMA, document()).unwrap();
    let text = String::from_utf8(record.to_bytes()).unwrap();
    assert!(
        text.contains(&format!("\"target\": \"{}\"", uuid_text(1))),
        "{text}"
    );
    assert!(!text.contains("owner") && !text.contains("generation"));
    let mut fresh = level(8);
    let back = restore_world(&record, instance(0), &mut fresh).unwrap();
    let key = PersistentObjectKey::new(instance(0), object(0));
    let e = fresh.resolve(&key).entity().unwrap();
    let target = fresh.get::<Enemy>(e).unwrap().target;
    assert_eq!(fresh.key_of(target).unwrap().object, object(1));
    assert_ne!(r.entities, back.entities);
}

#[test]
fn labels_are_names_when_valid_and_unique_else_uuids() {
    let mut w = level(8);
    let mut record = ring(3);
    record.entities[0].name = "guard".into();
    record.entities[1].name = "guard".into();
    record.entities[2].name = "not a legacy id".into();
    restore_world(&record, instance(0), &mut w).unwrap();
    let saved = save_world(&w, instance(0), SCHEMA, document()).unwrap();
    let labels: Vec<&str> = saved.entities.iter().map(|e| e.label.as_str()).collect();
    assert_eq!(labels.iter().filter(|l| **l == "guard").count(), 1);
    assert_eq!(labels.len(), 3);
    saved.check().unwrap();
}

#[test]
fn dead_targets_save_as_no_target_and_outside_targets_are_refused() {
    let mut w = level(16);
    let r = restore_world(&ring(3), instance(0), &mut w).unwrap();
    w.destroy(r.entities[1]).unwrap();
    let saved = save_world(&w, instance(0), SCHEMA, document()).unwrap();
    assert_eq!(saved.entities.len(), 2);
    let e0 = saved.entities.iter().find(|e| e.uuid == object(0)).unwrap();
    assert_eq!(e0.components["enemy"]["target"], "");
    // A live target in another scope (or unbound) cannot be named by the record.
    let loose = w.create().unwrap();
    let e2 = r.entities[2];
    w.insert(
        e2,
        Enemy {
            target: loose,
            speed: 1,
            _pad: 0,
        },
    )
    .unwrap();
    let err = save_world(&w, instance(0), SCHEMA, document()).unwrap_err();
    assert!(
        matches!(err, SaveError::UnsavedTarget { entity, .. } if entity == object(2)),
        "{err}"
    );
    assert!(matches!(
        save_world(&w, instance(0), "bad name", document()),
        Err(SaveError::InvalidSchemaName { .. })
    ));
    let plain = Level::try_new(4).unwrap();
    assert!(matches!(
        save_world(&plain, instance(0), SCHEMA, document()),
        Err(SaveError::World(DurableError::Disabled))
    ));
}

#[test]
fn only_the_instance_scope_is_saved() {
    let mut w = level(16);
    restore_world(&ring(2), instance(0), &mut w).unwrap();
    restore_world(&ring(3), instance(1), &mut w).unwrap();
    assert_eq!(
        save_world(&w, instance(0), SCHEMA, document())
            .unwrap()
            .entities
            .len(),
        2
    );
    assert_eq!(
        save_world(&w, instance(1), SCHEMA, document())
            .unwrap()
            .entities
            .len(),
        3
    );
    assert!(save_world(&w, instance(2), SCHEMA, document())
        .unwrap()
        .entities
        .is_empty());
}
