//! The simulation world the persistent-identity tests share: positions and hit points, in a
//! durable world in its structural phase.

use bytemuck::{Pod, Zeroable};
use ludus::durable::{ComponentValue, HexBytes};
use ludus::prelude::*;

/// A position.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Pos {
    /// x.
    pub x: f32,
    /// y.
    pub y: f32,
}

/// Hit points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
pub struct Hp(pub u32);

ludus::world! {
    /// The simulation world.
    pub struct Sim {
        /// Positions.
        pub pos: Pos,
        /// Hit points.
        pub hp: Hp,
    }
    durable
}

/// A durable `Sim` of `capacity` entities and `name_bytes` of names, in the structural phase.
pub fn durable_sim(capacity: usize, name_bytes: usize) -> Sim {
    let config = DurableConfig {
        name_bytes,
        ..DurableConfig::default()
    };
    let mut w = Sim::try_new_durable(capacity, config).unwrap();
    w.begin_structural();
    w
}

/// Hit points `v` as a transaction's component value.
pub fn hp_value(v: u32) -> ComponentValue {
    ComponentValue {
        component: "hp".into(),
        bytes: HexBytes::from(bytemuck::bytes_of(&Hp(v)).to_vec()),
        refs: Vec::new(),
    }
}

/// Makes 32 bytes a binding key (both halves nonnil version-4 RFC UUIDs) by setting their
/// version and variant bits.
pub fn as_binding_key(mut bytes: [u8; 32]) -> ludus::identity::PersistentObjectKey {
    for half in [0, 16] {
        bytes[half + 6] = bytes[half + 6] & 0x0f | 0x40;
        bytes[half + 8] = bytes[half + 8] & 0x3f | 0x80;
    }
    bytemuck::cast(bytes)
}

/// An authored entity of a checkpoint, bound under `key` (kind 0): its id is the key's bytes.
pub fn authored_entity(
    key: ludus::identity::PersistentObjectKey,
    components: Vec<ComponentValue>,
) -> ludus::durable::CheckpointEntity {
    let id = ludus::identity::PersistentId::Authored(bytemuck::cast(key));
    ludus::durable::CheckpointEntity {
        id,
        identity: Some(id),
        name: String::new(),
        label: String::new(),
        parent: None,
        position: 0,
        binding: Some(ludus::durable::EntityBinding { key, kind: 0 }),
        protected: false,
        components,
    }
}
