//! Components as users write them: newtypes and tuple structs keep their own serde forms in
//! records and level files (`"health": 5`, `"velocity": [1.5, -2]`, a newtype reference as
//! its target's UUID), restore through both readers, and name their fields `"0"`, `"1"`, … in
//! a schema (record duplication remaps a newtype reference).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::common::{document, instance, object};
use bytemuck::{Pod, Zeroable};
use ludus::content::{
    duplicate_entities, restore_level_from_slice, restore_world, restore_world_from_slice,
    save_level, save_world, save_world_bytes, RestoreErrorKind, Schema, WorldV2,
};
use ludus::identity::test_entropy::SeqEntropy;
use ludus::identity::PersistentObjectKey;
use ludus::prelude::*;
use serde::{Deserialize, Serialize};

/// Hit points, as the docs write a component.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable, Serialize, Deserialize)]
#[repr(C)]
pub struct Health(pub u32);

/// A tuple struct.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable, Serialize, Deserialize)]
#[repr(C)]
pub struct Velocity(pub f32, pub f32);

/// A newtype reference.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable, Serialize, Deserialize)]
#[repr(C)]
pub struct Follows(#[serde(with = "ludus::content::entity_ref")] pub EntityId);

impl EntityRefs for Follows {
    fn visit_entities(&mut self, visit: &mut dyn FnMut(&mut EntityId)) {
        visit(&mut self.0);
    }
}

ludus::world! {
    pub struct Shapes { pub health: Health, pub velocity: Velocity, pub follows: Follows }
    durable { entity_refs { Follows } }
}

const SCHEMA: &str = "ludus.shapes.v1";

fn shapes() -> Shapes {
    let config = DurableConfig {
        name_bytes: 4096,
        ..DurableConfig::default()
    };
    let mut w = Shapes::try_new_durable(16, config).unwrap();
    w.begin_structural();
    w
}

/// Three entities bound under instance 0: 0 follows 1, 1 follows nobody, 2 has no follows.
fn world() -> (Shapes, Vec<EntityId>) {
    let mut w = shapes();
    let a = w.spawn((Health(5), Velocity(1.5, -2.0))).unwrap();
    let b = w.spawn((Health(7),)).unwrap();
    let c = w.spawn((Velocity(0.0, 0.25),)).unwrap();
    w.insert(a, Follows(b)).unwrap();
    w.insert(b, Follows(EntityId::NULL)).unwrap();
    let es = vec![a, b, c];
    let batch: Vec<Activation> = es
        .iter()
        .enumerate()
        .map(|(i, &e)| Activation::new(e, PersistentObjectKey::new(instance(0), object(i as u64))))
        .collect();
    w.activate(&batch).unwrap();
    (w, es)
}

/// Each entity's values, the reference as its target's object id.
type Row = (
    Option<Health>,
    Option<Velocity>,
    Option<Option<ludus::identity::SourceObjectId>>,
);

fn rows(w: &Shapes) -> BTreeMap<ludus::identity::SourceObjectId, Row> {
    w.durable()
        .bindings()
        .iter()
        .map(|(key, e, _)| {
            let follows = w.follows.get(e).map(|f| w.key_of(f.0).map(|k| k.object));
            (
                key.object,
                (
                    w.health.get(e).copied(),
                    w.velocity.get(e).copied(),
                    follows,
                ),
            )
        })
        .collect()
}

#[test]
fn newtypes_and_tuple_structs_keep_their_serde_forms_through_records_and_levels() {
    let (w, _) = world();
    let bytes = save_world_bytes(&w, instance(0), SCHEMA, document()).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains("\"health\":5"), "{text}");
    assert!(text.contains("\"velocity\":[1.5,-2.0]"), "{text}");
    assert!(
        text.contains(&format!("\"follows\":\"{}\"", object(1))),
        "{text}"
    );
    assert!(text.contains("\"follows\":\"\""), "{text}");
    let record = WorldV2::from_slice(Path::new("shapes.json"), &bytes).unwrap();
    assert_eq!(record.to_bytes(), bytes, "canonical");
    let mut tree = shapes();
    tree.spawn((Health(0),)).unwrap();
    restore_world(&record, instance(0), &mut tree).unwrap();
    assert_eq!(rows(&tree), rows(&w));
    let mut streamed = shapes();
    restore_world_from_slice(Path::new("shapes.json"), &bytes, instance(0), &mut streamed).unwrap();
    assert_eq!(rows(&streamed), rows(&w));
    assert_eq!(
        save_world_bytes(&streamed, instance(0), SCHEMA, document()).unwrap(),
        bytes
    );
    let level = save_level(&w, instance(0)).unwrap().to_bytes();
    let mut from_level = shapes();
    restore_level_from_slice(
        Path::new("l.json"),
        &level,
        Some(instance(0)),
        &mut from_level,
    )
    .unwrap();
    assert_eq!(rows(&from_level), rows(&w));
}

#[test]
fn a_form_of_the_wrong_shape_is_refused_at_its_component() {
    let (w, _) = world();
    let text =
        String::from_utf8(save_world_bytes(&w, instance(0), SCHEMA, document()).unwrap()).unwrap();
    for (from, to) in [
        ("\"health\":5", "\"health\":{\"hp\":5}"),
        ("\"velocity\":[1.5,-2.0]", "\"velocity\":[1.5]"),
        (
            "\"velocity\":[1.5,-2.0]",
            "\"velocity\":{\"0\":1.5,\"1\":-2.0}",
        ),
    ] {
        assert!(text.contains(from), "{from}");
        let bytes = text.replacen(from, to, 1).into_bytes();
        let mut fresh = shapes();
        let err = restore_world_from_slice(Path::new("bad.json"), &bytes, instance(0), &mut fresh)
            .unwrap_err();
        assert!(
            matches!(err.kind, RestoreErrorKind::Component { .. }),
            "{to}: {err}"
        );
        assert_eq!(fresh.registry.len(), 0, "{to}: nothing restored");
    }
}

#[test]
fn a_schema_names_a_newtypes_field_zero_and_duplication_remaps_it() {
    let (w, _) = world();
    let record = save_world(&w, instance(0), SCHEMA, document()).unwrap();
    let schema = Schema {
        name: SCHEMA.into(),
        components: [
            ("follows".to_owned(), BTreeSet::from(["0".to_owned()])),
            ("health".to_owned(), BTreeSet::new()),
            ("velocity".to_owned(), BTreeSet::new()),
        ]
        .into_iter()
        .collect(),
    };
    let dup = duplicate_entities(
        &record,
        &schema,
        &[object(0), object(1)],
        &mut SeqEntropy::new(3),
    )
    .unwrap();
    let copy_of = |o| dup.copies.iter().find(|(from, _)| *from == o).unwrap().1;
    let copy = dup
        .record
        .entities
        .iter()
        .find(|e| e.uuid == copy_of(object(0)))
        .unwrap();
    assert_eq!(
        copy.components["follows"],
        serde_json::json!(copy_of(object(1)).to_string()),
        "the copy follows the copy of its target"
    );
}
