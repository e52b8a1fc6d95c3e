//! The binding benches' shared fixture (`binding.rs`, `binding_iai.rs`): the world, a
//! deterministic generator of keys and shuffles, and a durable world of `n` spawned entities.

use ludus::identity::{InstanceId, PersistentObjectKey, SourceObjectId};
use ludus::prelude::*;
use uuid::Uuid;

/// A small Pod component read after each lookup.
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Hp(pub u32);

ludus::world! {
    /// The bench world: one component.
    pub struct Level { pub hp: Hp }
    durable
}

/// splitmix64: deterministic keys and shuffles.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A random version-4 UUID.
    pub fn uuid(&mut self) -> Uuid {
        let bytes = (u128::from(self.next()) << 64 | u128::from(self.next())).to_le_bytes();
        uuid::Builder::from_random_bytes(bytes).into_uuid()
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    #[allow(dead_code)] // the criterion bench shuffles its stream; the iai one does not
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }
}

pub fn key(instance: InstanceId, object: Uuid) -> PersistentObjectKey {
    PersistentObjectKey::new(instance, SourceObjectId::from_uuid(object).unwrap())
}

/// A durable world of `n` entities (`Hp(i)`, structural phase open), their handles, and `n`
/// fresh object UUIDs.
pub fn spawned(n: usize, rng: &mut Rng) -> (Level, Vec<EntityId>, Vec<Uuid>) {
    let mut w = Level::try_new_durable(n, DurableConfig::default()).unwrap();
    w.begin_structural();
    let mut ids = vec![EntityId::NULL; n];
    let spawned = w
        .spawn_batch_into((0..n as u32).map(|i| (Hp(i),)), &mut ids)
        .unwrap();
    assert_eq!(spawned, n);
    let objects = (0..n).map(|_| rng.uuid()).collect();
    (w, ids, objects)
}
