//! `KeyedTable`: the `binding` benches' contender with hashbrown's layout and the binding
//! table's hash (`binding.rs`, `binding_iai.rs`).

use ludus::identity::PersistentObjectKey;
use ludus::prelude::*;

/// `hashbrown::HashTable` of `(key, handle)` pairs with the binding table's own keyed hash and
/// its capacity reserved at init: hashbrown's layout (control bytes, the key in the bucket,
/// quadratic group probing, no probe bound) in place of the library's, the hash unchanged.
///
/// The hash is the table's: a folded 64×64→128-bit multiply of each key half's two words,
/// each word XORed with a word of a per-table secret, the instance's fold rotated by 32 bits.
#[derive(Clone)]
pub struct KeyedTable {
    secret: [u64; 4],
    table: hashbrown::HashTable<(PersistentObjectKey, EntityId)>,
}

#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

impl KeyedTable {
    /// Room for `n` pairs, allocated now; hashed with `secret`.
    pub fn with_capacity(n: usize, secret: [u64; 4]) -> Self {
        Self {
            secret,
            table: hashbrown::HashTable::with_capacity(n),
        }
    }

    /// A secret drawn from the standard library's randomly keyed hasher, as the table's is.
    #[allow(dead_code)] // the iai bench fixes its secret
    pub fn random_secret() -> [u64; 4] {
        use std::hash::{BuildHasher, Hasher};
        core::array::from_fn(|i| {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(i);
            h.finish()
        })
    }

    #[inline(always)]
    fn hash(secret: &[u64; 4], k: &PersistentObjectKey) -> u64 {
        let w: [u64; 4] = bytemuck::pod_read_unaligned(bytemuck::bytes_of(k));
        let object = fold(w[2] ^ secret[0], w[3] ^ secret[1]);
        let instance = fold(w[0] ^ secret[2], w[1] ^ secret[3]);
        object ^ instance.rotate_left(32)
    }

    /// Drops every pair, keeping the storage.
    #[allow(dead_code)] // the iai bench builds fresh tables only
    pub fn clear(&mut self) {
        self.table.clear();
    }

    /// The handle bound to `k`.
    #[inline]
    pub fn get(&self, k: &PersistentObjectKey) -> Option<EntityId> {
        let h = Self::hash(&self.secret, k);
        self.table.find(h, |(q, _)| q == k).map(|&(_, e)| e)
    }

    /// Binds `k` to `e`; `false` (nothing changed) when `k` is already bound, as activation
    /// refuses a bound key.
    #[inline]
    pub fn insert(&mut self, k: PersistentObjectKey, e: EntityId) -> bool {
        let s = self.secret;
        let h = Self::hash(&s, &k);
        match self
            .table
            .entry(h, |(q, _)| *q == k, |(q, _)| Self::hash(&s, q))
        {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(v) => {
                v.insert((k, e));
                true
            }
        }
    }
}
