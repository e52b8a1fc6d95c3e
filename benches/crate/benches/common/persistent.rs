//! The persistent benches' shared fixture (`persistent.rs`, `persistent_iai.rs`): the world,
//! the prepared transaction, and the copy-and-hash baseline of `checkpoint_digest`.

use ludus::durable::{PreparedSpawn, Transaction, TxCommand};
use ludus::identity::test_entropy::SeqEntropy;
use ludus::prelude::*;
use sha2::{Digest, Sha256};

/// The canonical encoding's header (`checkpoint.rs` module docs).
pub const HEADER: &[u8] = b"ludus.checkpoint.v1\0";

/// A position.
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Pos {
    x: f32,
    y: f32,
}

/// Hit points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Hp(u32);

ludus::world! {
    /// The bench world: two small components (as in `tests/durable/persistent.rs`).
    pub struct Sim { pub pos: Pos, pub hp: Hp }
    durable
}

ludus::world! {
    /// The same components in a plain world (no durable tables): the reference spawn.
    pub struct PlainSim { pub pos: Pos, pub hp: Hp }
}

pub fn bundle(i: usize) -> (Pos, Hp) {
    (
        Pos {
            x: i as f32,
            y: -(i as f32),
        },
        Hp(i as u32),
    )
}

/// `n` bundles and the transaction creating them (prepared spawns, one seed each).
pub fn prepared(n: usize) -> (Vec<(Pos, Hp)>, Transaction) {
    let bundles: Vec<(Pos, Hp)> = (0..n).map(bundle).collect();
    let commands = bundles
        .iter()
        .enumerate()
        .map(|(i, &b)| TxCommand::Create {
            spawn: PreparedSpawn::prepare::<Sim, _, _>(b, &mut SeqEntropy::new(i as u64)).unwrap(),
        })
        .collect();
    let tx = Transaction {
        label: "bench".into(),
        commands,
    };
    (bundles, tx)
}

/// A fresh durable world, structural phase open.
pub fn durable(capacity: usize) -> Sim {
    let mut w = Sim::try_new_durable(capacity, DurableConfig::default()).unwrap();
    w.begin_structural();
    w
}

/// A fresh plain world, structural phase open.
pub fn plain(capacity: usize) -> PlainSim {
    let mut w = PlainSim::try_new(capacity).unwrap();
    w.begin_structural();
    w
}

/// The id bytes of every entity, in dense order, as a stable-id index holds them.
pub fn id_bytes(w: &Sim) -> Vec<u8> {
    w.pos
        .owners()
        .iter()
        .flat_map(|e| {
            let id = w.stable_id(e).unwrap();
            let mut b = vec![id.namespace_tag() as u8];
            b.extend_from_slice(&id.key_bytes());
            b
        })
        .collect()
}

/// The baseline of `checkpoint_digest`: as many bytes as the canonical form (`len`), copied
/// from the pools and the id bytes, and hashed.
pub fn copy_hash(w: &Sim, len: usize, ids: &[u8]) -> [u8; 32] {
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(HEADER);
    out.extend_from_slice(&(w.pos.len() as u64).to_le_bytes());
    out.extend_from_slice(ids);
    out.extend_from_slice(bytemuck::cast_slice(w.pos.values()));
    out.extend_from_slice(bytemuck::cast_slice(w.hp.values()));
    out.resize(len, 0);
    Sha256::digest(&out).into()
}
