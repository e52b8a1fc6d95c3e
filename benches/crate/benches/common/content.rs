//! The content benches' world, record and baselines (`content.rs`, `content_iai.rs`).
#![allow(dead_code)]

use std::collections::HashMap;

use bytemuck::{Pod, Zeroable};
use ludus::content::{Components, EntityV1, EntityV2, WorldV1, WorldV2};
use ludus::identity::{AssetId, InstanceId, SourceObjectId};
use ludus::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;
use uuid::Uuid;

#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable, Serialize, Deserialize)]
#[repr(C)]
pub struct Pos {
    pub x: f32,
    pub y: f32,
}

#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable, Serialize, Deserialize)]
#[repr(C)]
pub struct Hp {
    pub hp: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable, Serialize, Deserialize)]
#[repr(C)]
pub struct Enemy {
    #[serde(with = "ludus::content::entity_ref")]
    pub target: EntityId,
    pub speed: u32,
    #[serde(skip)]
    pub _pad: u32,
}

impl EntityRefs for Enemy {
    fn visit_entities(&mut self, visit: &mut dyn FnMut(&mut EntityId)) {
        visit(&mut self.target);
    }
}

ludus::world! {
    pub struct Level { pub pos: Pos, pub hp: Hp, pub enemy: Enemy }
    durable { entity_refs { Enemy } }
}

// The baseline's plain structs (the same members; targets as strings).
#[derive(Serialize, Deserialize)]
pub struct RecordT {
    pub version: u32,
    pub schema: String,
    pub document: Uuid,
    pub entities: Vec<EntityT>,
}

#[derive(Serialize, Deserialize)]
pub struct EntityT {
    pub uuid: Uuid,
    pub label: String,
    pub name: String,
    pub components: ComponentsT,
}

#[derive(Serialize, Deserialize)]
pub struct ComponentsT {
    pub enemy: EnemyT,
    pub hp: HpT,
    pub pos: PosT,
}

#[derive(Serialize, Deserialize)]
pub struct EnemyT {
    pub speed: u32,
    pub target: String,
}

#[derive(Serialize, Deserialize)]
pub struct HpT {
    pub hp: u32,
}

#[derive(Serialize, Deserialize)]
pub struct PosT {
    pub x: f32,
    pub y: f32,
}

pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A distinct nonnil v4 UUID per index (scattered bits, so hashing is not trivially ordered).
pub fn uuid_of(i: usize) -> Uuid {
    let hi = mix(i as u64 ^ 0x5eed);
    let v = (u128::from(hi) << 64) | (i as u128 + 1);
    uuid::Builder::from_random_bytes(v.to_be_bytes()).into_uuid()
}

pub fn props(v: serde_json::Value) -> serde_json::Value {
    assert!(v.is_object(), "not an object");
    v
}

/// The target of entity `i`: 30% of entities, half forward, half backward.
pub fn target(i: usize, n: usize) -> Option<usize> {
    let h = mix(i as u64) as usize;
    match i % 20 {
        r if r < 3 && i + 1 < n => Some(i + 1 + h % (n - i - 1)),
        r if r < 6 && i > 0 => Some(h % i),
        _ => None,
    }
}

pub fn record(n: usize) -> WorldV2 {
    let entities = (0..n)
        .map(|i| {
            let mut c = Components::new();
            c.insert("pos".into(), props(json!({"x": i as f32 * 0.5, "y": 1.25})));
            c.insert("hp".into(), props(json!({"hp": (i % 1000) as u32})));
            let t = target(i, n).map_or(String::new(), |t| uuid_of(t).to_string());
            c.insert(
                "enemy".into(),
                props(json!({"target": t, "speed": (i % 7) as u32})),
            );
            EntityV2 {
                uuid: SourceObjectId::from_uuid(uuid_of(i)).unwrap(),
                label: format!("e{i}"),
                name: format!("e{i}"),
                parent: None,
                components: c,
            }
        })
        .collect();
    WorldV2 {
        schema: "ludus.bench.v1".into(),
        document: AssetId::from_uuid(uuid_of(usize::MAX - 1)).unwrap(),
        entities,
    }
}

pub fn instance() -> InstanceId {
    InstanceId::from_uuid(uuid_of(usize::MAX - 2)).unwrap()
}

/// A fresh durable world for `n` entities, in the structural phase.
pub fn fresh(n: usize) -> Level {
    // The default name arena (32 bytes per slot): each entity's record holds its name and its
    // label (`e{i}` both, up to 18 bytes with the header at 100k).
    let mut w = Level::try_new_durable(n, DurableConfig::default()).unwrap();
    w.begin_structural();
    w
}

/// The restore baseline: typed parse, then `HashMap<Uuid, usize>` fixup.
pub fn typed_parse_fixup(bytes: &[u8]) -> (RecordT, Vec<Option<usize>>) {
    let r: RecordT = serde_json::from_slice(bytes).unwrap();
    let mut index: HashMap<Uuid, usize> = HashMap::with_capacity(r.entities.len());
    for (i, e) in r.entities.iter().enumerate() {
        index.insert(e.uuid, i);
    }
    let links = r
        .entities
        .iter()
        .map(|e| {
            let t = &e.components.enemy.target;
            if t.is_empty() {
                None
            } else {
                Some(index[&Uuid::parse_str(t).unwrap()])
            }
        })
        .collect();
    (r, links)
}

/// A version-1 world of `n` entities of the record's shape (legacy ids `e{i}`, names
/// `entity {i}`, targets by legacy id): the `identity apply` input.
pub fn world_v1(n: usize) -> WorldV1 {
    let entities = (0..n)
        .map(|i| {
            let mut c = Components::new();
            c.insert("pos".into(), props(json!({"x": i as f32 * 0.5, "y": 1.25})));
            c.insert("hp".into(), props(json!({"hp": (i % 1000) as u32})));
            let t = target(i, n).map_or(String::new(), |t| format!("e{t}"));
            c.insert(
                "enemy".into(),
                props(json!({"target": t, "speed": (i % 7) as u32})),
            );
            EntityV1 {
                id: format!("e{i}"),
                name: format!("entity {i}"),
                parent: None,
                components: c,
            }
        })
        .collect();
    WorldV1 {
        schema: "ludus.bench.v1".into(),
        entities,
    }
}

/// The world schema of these records (`enemy.target` is entity-typed).
pub const SCHEMA_JSON: &[u8] = br#"{"format": "ludus.world-schema", "version": 1,
    "schema": "ludus.bench.v1", "components": {"enemy": {"entity_properties": ["target"]},
    "hp": {"entity_properties": []}, "pos": {"entity_properties": []}}}"#;
