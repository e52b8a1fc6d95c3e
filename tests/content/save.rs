//! Save: world → version-2 record through the reverse binding, in canonical entity order;
//! save → restore → save is byte-identical; references survive the round trip.

use crate::common::*;
use ludus::content::{
    restore_level, restore_world, save_level, save_world, save_world_bytes, EntityV2, SaveError,
    WorldV2,
};
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
        text.contains(&format!("\"target\":\"{}\"", uuid_text(1))),
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
    let es = restore_world(&record, instance(0), &mut w)
        .unwrap()
        .entities;
    // The record's labels are kept, and saved again.
    let labels = |w: &Level| -> Vec<String> {
        let saved = save_world(w, instance(0), SCHEMA, document()).unwrap();
        saved.check().unwrap();
        saved.entities.iter().map(|e| e.label.clone()).collect()
    };
    assert_eq!(w.label(es[0]), Ok("e0"));
    assert_eq!(labels(&w), ["e0", "e1", "e2"]);
    // Without one, a label is derived: the name when valid and unique, else the UUID.
    for &e in &es {
        w.set_label(e, "").unwrap();
    }
    let derived = labels(&w);
    assert_eq!(derived.iter().filter(|l| *l == "guard").count(), 1);
    assert_eq!(derived[2], uuid_text(2));
    // A held label wins over a derived one; two equal held labels refuse the save.
    w.set_label(es[2], "guard").unwrap();
    let held = labels(&w);
    assert_eq!(held[2], "guard");
    assert!(held[..2].iter().all(|l| l != "guard"), "{held:?}");
    w.set_label(es[1], "guard").unwrap();
    assert!(matches!(
        save_world(&w, instance(0), SCHEMA, document()),
        Err(SaveError::RepeatedLabel { .. })
    ));
    assert!(matches!(
        save_level(&w, instance(0)),
        Err(SaveError::RepeatedLabel { .. })
    ));
}

#[test]
fn a_held_label_spelling_another_uuid_refuses_a_record_not_a_level() {
    let mut w = level(8);
    let es = restore_world(&ring(3), instance(0), &mut w)
        .unwrap()
        .entities;
    // Entity 1's label is derived (its UUID); entity 0 holds that text.
    w.set_label(es[1], "").unwrap();
    w.set_label(es[0], &uuid_text(1)).unwrap();
    assert!(matches!(
        save_world(&w, instance(0), SCHEMA, document()),
        Err(SaveError::RepeatedLabel { .. })
    ));
    // A level writes held labels only: nothing collides, and a restore holds it again.
    let file = save_level(&w, instance(0)).unwrap();
    let labels: Vec<&str> = file.entities.iter().map(|e| e.label.as_str()).collect();
    assert!(labels.contains(&uuid_text(1).as_str()), "{labels:?}");
    let mut fresh = level(8);
    let back = restore_level(&file, Some(instance(0)), &mut fresh).unwrap();
    let key = PersistentObjectKey::new(instance(0), object(0));
    let e0 = fresh.resolve(&key).entity().unwrap();
    assert_eq!(fresh.label(e0), Ok(uuid_text(1).as_str()));
    assert_eq!(back.entities.len(), 3);
    assert_eq!(save_level(&fresh, instance(0)).unwrap(), file);
}

/// `ring(4)` restored in record order, or reversed (slots then run against UUID order), with
/// `labels` set: `(entity, label)`, `""` for a derived label (the entity's UUID).
fn labelled(reversed: bool, labels: &[(u64, String)]) -> Level {
    let mut record = ring(4);
    if reversed {
        record.entities.reverse();
    }
    let mut w = level(8);
    restore_world(&record, instance(0), &mut w).unwrap();
    for (n, label) in labels {
        let key = PersistentObjectKey::new(instance(0), object(*n));
        let e = w.resolve(&key).entity().unwrap();
        w.set_label(e, label).unwrap();
    }
    w
}

/// Held labels that spell UUIDs in a chain save the same whatever the slots: a level's
/// intermediate record follows the chain to its end, and a record names the first holder in
/// UUID order.
#[test]
fn held_labels_spelling_uuids_save_the_same_whatever_the_slots() {
    // 1's label is its UUID. 0 holds that text, so in a level's intermediate record 0's label
    // becomes 0's UUID, which 2 holds: 2's becomes its UUID too.
    let chain = [
        (1, String::new()),
        (3, String::new()),
        (0, uuid_text(1)),
        (2, uuid_text(0)),
    ];
    let (fwd, rev) = (labelled(false, &chain), labelled(true, &chain));
    let file = save_level(&fwd, instance(0)).unwrap();
    assert_eq!(save_level(&rev, instance(0)).unwrap(), file);
    let held: Vec<&str> = file.entities.iter().map(|e| e.label.as_str()).collect();
    assert!(held.contains(&uuid_text(1).as_str()), "{held:?}");
    assert!(held.contains(&uuid_text(0).as_str()), "{held:?}");
    let mut fresh = level(8);
    restore_level(&file, Some(instance(0)), &mut fresh).unwrap();
    assert_eq!(save_level(&fresh, instance(0)).unwrap(), file);
    // Two holders whose spelled entities' labels are their UUIDs: 0 and 2.
    let both = [
        (1, String::new()),
        (3, String::new()),
        (0, uuid_text(3)),
        (2, uuid_text(1)),
    ];
    for labels in [&chain, &both] {
        for reversed in [false, true] {
            let w = labelled(reversed, labels);
            let err = save_world(&w, instance(0), SCHEMA, document()).unwrap_err();
            assert!(
                matches!(&err, SaveError::RepeatedLabel { entity, .. } if *entity == object(0)),
                "{err}"
            );
            assert!(save_level(&w, instance(0)).is_ok());
        }
    }
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
    // A world without room has no durable tables (a plain world has no save at all).
    let plain = Level::try_new_durable(0, DurableConfig::default()).unwrap();
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

/// The label rule of a plain model: 1–64 ASCII letters, digits, `_ - . :`.
fn model_legacy(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(&b))
}

/// A v4 UUID text from `bits`; `shared` puts it in one bucket (the top 16 bits fixed).
fn crafted_uuid(bits: u64, shared: bool) -> String {
    let hi = if shared {
        0xabcd_0000 | (bits >> 48) as u32 & 0xffff
    } else {
        (bits >> 32) as u32
    };
    format!(
        "{hi:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        (bits >> 16) as u16,
        (bits >> 4) as u16 & 0xfff,
        bits as u16 & 0xfff,
        bits.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 16
    )
}

/// Enough entities for the bucketed sorts (4096 and more), half of them sharing their top 16
/// UUID bits, in scrambled slot order, with repeated names, names that spell saved UUIDs and
/// names that are not legacy ids: the saved order and labels match a plain model.
#[test]
#[cfg_attr(miri, ignore = "5000 entities: too slow under Miri")]
fn a_large_save_matches_a_plain_model() {
    let n = 5000u64;
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let uuids: Vec<String> = (0..n).map(|i| crafted_uuid(next(), i % 2 == 0)).collect();
    let entities: Vec<EntityV2> = (0..n as usize)
        .map(|i| {
            let name = match i % 5 {
                0 => format!("dup{}", i % 7),
                1 => uuids[(i * 13) % n as usize].clone(),
                2 => format!("not legal {i}"),
                _ => format!("e{i}"),
            };
            let mut e = entity(i as u64, Some(&uuids[(i * 31 + 7) % n as usize]));
            e.uuid = uuids[i].parse().unwrap();
            e.label = format!("l{i}");
            e.name = name;
            e
        })
        .collect();
    let record = WorldV2 {
        schema: SCHEMA.into(),
        document: document(),
        entities,
    };
    let config = DurableConfig {
        name_bytes: 1 << 20,
        ..DurableConfig::default()
    };
    let mut w = Level::try_new_durable(n as usize, config).unwrap();
    w.begin_structural();
    let restored = restore_world(&record, instance(0), &mut w)
        .unwrap()
        .entities;
    // The record's labels are held and saved as they are.
    let kept = save_world(&w, instance(0), SCHEMA, document()).unwrap();
    let label_of: std::collections::HashMap<_, _> =
        record.entities.iter().map(|e| (e.uuid, &e.label)).collect();
    assert!(kept.entities.iter().all(|e| label_of[&e.uuid] == &e.label));
    // Without them, save derives every label.
    for &e in &restored {
        w.set_label(e, "").unwrap();
    }
    let bytes = save_world_bytes(&w, instance(0), SCHEMA, document()).unwrap();
    let saved = WorldV2::from_slice(Path::new("saved"), &bytes).unwrap();
    assert_eq!(saved.to_bytes(), bytes);
    // The model: UUID byte order; a legacy-id name is the label unless it spells a saved
    // UUID or an earlier entity took it.
    let mut expected: Vec<(Vec<u8>, String, String)> = record
        .entities
        .iter()
        .map(|e| {
            (
                e.uuid.as_bytes().to_vec(),
                e.uuid.to_string(),
                e.name.clone(),
            )
        })
        .collect();
    expected.sort();
    let all: std::collections::HashSet<&str> = uuids.iter().map(String::as_str).collect();
    let mut taken = std::collections::HashSet::new();
    let labels: Vec<(String, String)> = expected
        .iter()
        .map(|(_, uuid, name)| {
            let label = if model_legacy(name) && !all.contains(name.as_str()) && taken.insert(name)
            {
                name.clone()
            } else {
                uuid.clone()
            };
            (uuid.clone(), label)
        })
        .collect();
    let got: Vec<(String, String)> = saved
        .entities
        .iter()
        .map(|e| (e.uuid.to_string(), e.label.clone()))
        .collect();
    assert_eq!(got, labels);
    let names: Vec<&str> = saved.entities.iter().map(|e| e.name.as_str()).collect();
    let want: Vec<&str> = expected.iter().map(|(_, _, n)| n.as_str()).collect();
    assert_eq!(names, want);
    // Every reference resolved (through the restore's bucketed index) and saved back.
    let by_uuid: std::collections::HashMap<_, _> = record
        .entities
        .iter()
        .map(|e| (e.uuid, &e.components))
        .collect();
    for e in &saved.entities {
        assert_eq!(&e.components, by_uuid[&e.uuid], "{}", e.uuid);
    }
}

/// Of several entities that cannot be saved, the one reported is the first in UUID order,
/// whatever the slot order.
#[test]
fn the_failure_reported_is_the_first_in_uuid_order() {
    let mut record = ring(4);
    record.entities.reverse();
    let mut w = level(16);
    let r = restore_world(&record, instance(0), &mut w).unwrap();
    let loose = w.create().unwrap();
    // Document order is 3, 2, 1, 0, so slots run against UUID order.
    for &e in &r.entities[1..] {
        w.insert(
            e,
            Enemy {
                target: loose,
                speed: 1,
                _pad: 0,
            },
        )
        .unwrap();
    }
    let err = save_world(&w, instance(0), SCHEMA, document()).unwrap_err();
    assert!(
        matches!(err, SaveError::UnsavedTarget { entity, .. } if entity == object(0)),
        "{err}"
    );
}

/// A pool swapped in from another world (the world's pool fields are public) is refused: its
/// entries would otherwise be saved under this world's entities of the same slot and
/// generation (restore refuses it the same way).
#[test]
fn a_swapped_in_pool_is_refused() {
    let (mut a, mut b) = (level(8), level(8));
    restore_world(&ring(2), instance(0), &mut a).unwrap();
    restore_world(&ring(2), instance(0), &mut b).unwrap();
    for (_, hp) in b.hp.iter_mut() {
        hp.hp += 1000;
    }
    let before = save_world_bytes(&a, instance(0), SCHEMA, document()).unwrap();
    std::mem::swap(&mut a.hp, &mut b.hp);
    let err = save_world_bytes(&a, instance(0), SCHEMA, document()).unwrap_err();
    assert!(
        matches!(
            err,
            SaveError::World(DurableError::World(WorldError::ForeignPool))
        ),
        "{err}"
    );
    std::mem::swap(&mut a.hp, &mut b.hp);
    let after = save_world_bytes(&a, instance(0), SCHEMA, document()).unwrap();
    assert_eq!(after, before);
}
