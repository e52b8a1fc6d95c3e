//! What the content tests share: the world, records and state snapshots of the restore, save,
//! level, duplicate and fuzz tests, and the byte edits the robustness tests apply to documents.
#![allow(dead_code)]

use bytemuck::{Pod, Zeroable};
use ludus::content::{EntityV2, WorldV2};
use ludus::identity::{AssetId, InstanceId, SourceObjectId};
use ludus::prelude::*;
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable, Serialize, Deserialize)]
#[repr(C)]
pub struct Pos {
    pub x: f32,
    pub y: f32,
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

#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable, Serialize, Deserialize)]
#[repr(C)]
pub struct Hp {
    pub hp: u32,
}

ludus::world! {
    pub struct Level { pub pos: Pos, pub enemy: Enemy, pub hp: Hp }
    durable { entity_refs { Enemy } }
}

/// A durable world of `capacity` entities, in the structural phase.
pub fn level(capacity: usize) -> Level {
    // A small name arena: Miri pays for every byte initialised.
    let config = DurableConfig {
        name_bytes: 4096,
        ..DurableConfig::default()
    };
    let mut w = Level::try_new_durable(capacity, config).unwrap();
    w.begin_structural();
    w
}

/// A version-4 UUID text made from `n` (nonnil).
pub fn uuid_text(n: u64) -> String {
    format!("00000000-0000-4000-8000-{:012x}", n + 1)
}

pub fn object(n: u64) -> SourceObjectId {
    uuid_text(n).parse().unwrap()
}

pub fn instance(n: u64) -> InstanceId {
    format!("11111111-0000-4000-8000-{:012x}", n + 1)
        .parse()
        .unwrap()
}

pub fn document() -> AssetId {
    "0b7e8c1d-2f43-4a96-9d51-6c2e4f8a1b3d".parse().unwrap()
}

pub fn props(v: serde_json::Value) -> serde_json::Value {
    assert!(v.is_object(), "not an object");
    v
}

/// An entity with a position, hp and (when `target` is given) an enemy component.
pub fn entity(n: u64, target: Option<&str>) -> EntityV2 {
    let mut components = ludus::content::Components::new();
    components.insert("pos".into(), props(json!({"x": n as f32, "y": 0.5})));
    components.insert("hp".into(), props(json!({"hp": 10 + n})));
    if let Some(t) = target {
        components.insert("enemy".into(), props(json!({"target": t, "speed": 2})));
    }
    EntityV2 {
        uuid: object(n),
        label: format!("e{n}"),
        name: format!("entity {n}"),
        parent: None,
        components,
    }
}

/// A record of `n` entities where entity `i` targets entity `(i + 1) % n` (forward
/// references, the last one backward).
pub fn ring(n: u64) -> WorldV2 {
    WorldV2 {
        schema: "ludus.test.v1".into(),
        document: document(),
        entities: (0..n)
            .map(|i| entity(i, Some(&uuid_text((i + 1) % n))))
            .collect(),
    }
}

/// Everything observable about a world: registry counters (when `counters`), every slot's
/// handle, components, name, parent and binding, and the binding revision.
pub fn snapshot(w: &Level, counters: bool) -> String {
    let r = &w.registry;
    let mut out = format!(
        "len {} avail {} retired {} pools {} {} {} bindings {} rev {}\n",
        r.len(),
        r.available(),
        r.retired(),
        w.pos.len(),
        w.enemy.len(),
        w.hp.len(),
        w.durable().bindings().len(),
        w.binding_revision(),
    );
    if counters {
        out += &format!(
            "seq {} srev {}\n",
            r.last_sequence(),
            r.structural_revision()
        );
    }
    for slot in 0..r.capacity() as u32 {
        if let Some(e) = r.live_at(slot) {
            out += &format!(
                "{e:?} {:?} {:?} {:?} name {:?} parent {:?} key {:?}\n",
                w.get::<Pos>(e),
                w.get::<Enemy>(e),
                w.get::<Hp>(e),
                w.name(e).ok(),
                w.parent(e).ok(),
                w.key_of(e)
            );
        }
    }
    out
}

/// The schema of [`Level`]'s records.
pub fn schema() -> ludus::content::Schema {
    let mut components = std::collections::BTreeMap::new();
    components.insert("pos".to_owned(), Default::default());
    components.insert("hp".to_owned(), Default::default());
    components.insert(
        "enemy".to_owned(),
        ["target".to_owned()].into_iter().collect(),
    );
    ludus::content::Schema {
        name: "ludus.test.v1".into(),
        components,
    }
}

/// `snapshot` with owner tokens blanked, to compare two worlds.
pub fn normalized(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("World=") {
        out.push_str(&rest[..i + 6]);
        rest = rest[i + 6..].trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

/// Where an edit lands in bytes of a given length plus one.
pub trait At {
    fn at(&self, size: usize) -> usize;
}

impl At for prop::sample::Index {
    fn at(&self, size: usize) -> usize {
        self.index(size)
    }
}

/// Applies byte edits (position, byte, op: 0 overwrite, 1 insert, 2 remove) in order.
pub fn mutate(mut bytes: Vec<u8>, edits: &[(impl At, u8, u8)]) -> Vec<u8> {
    for (at, byte, op) in edits {
        let i = at.at(bytes.len() + 1);
        match op {
            0 if i < bytes.len() => bytes[i] = *byte,
            1 => bytes.insert(i, *byte),
            _ if i < bytes.len() => {
                bytes.remove(i);
            }
            _ => {}
        }
    }
    bytes
}

/// `1..max` edits of bytes drawn from `alphabet`.
pub fn edits(
    alphabet: &'static [u8],
    max: usize,
) -> impl Strategy<Value = Vec<(prop::sample::Index, u8, u8)>> {
    prop::collection::vec(
        (
            any::<prop::sample::Index>(),
            prop::sample::select(alphabet.to_vec()),
            0u8..3,
        ),
        1..max,
    )
}
