//! `ComponentPool<T>`: dense keys + dense values for one plain-data type, with a sparse map
//! consulted only for entities not stored at their own slot index.
//!
//! ```text
//!  keys:   i: 0        1        2        3          values: [T] [T] [T] [T]
//!          [0|g3]   [1|g1]   [7|g2]   [2|g5]
//!  sparse: slot 7 → 2, slot 2 → 3        (slots 0 and 1 sit at dense == slot: no entry)
//! ```
//!
//! Invariants, for every dense `i < len` with `keys[i] = {slot s, generation g}`: the pool
//! holds the entity `(owner, s, g)` at `i`; no slot appears twice in `keys[..len]`; and either
//! `i == s` or `sparse[s] == i`. Every other sparse entry is meaningless: a lookup trusts a
//! dense index only after the key stored there matches, so stale sparse entries are never
//! cleared (as in Briggs & Torczon's sparse sets). The sparse map grows lazily within the
//! capacity reserved at init (`sparse.len()` is one past the highest slot ever recorded) and
//! is never written for an entity stored at its own slot index, which is where entities
//! spawned in creation order land: such pools never touch their sparse map at all.
//!
//! A lookup of `(owner, s, g)`: the owner must be the pool's; then `keys[s] == {s, g}` (the
//! value sits at `s`), else `keys[sparse[s]] == {s, g}`. The full owner is validated with an
//! 8-byte compare and no registry access.

use allocator_api2::alloc::{Allocator, Global};
use allocator_api2::vec::Vec;
use bytemuck::Pod;

use super::{fixed, EntityId, EntityRegistry, InitError, WorldError};
use crate::identity::OwnerToken;

/// An entity handle without its owner token: what a pool stores per dense entry (the owner is
/// the pool's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(8))]
pub struct EntityKey {
    /// Registry slot.
    pub slot: u32,
    /// Generation of the incarnation.
    pub generation: u32,
}

impl EntityKey {
    /// The key of `entity` (its owner dropped).
    #[inline(always)]
    pub const fn of(entity: EntityId) -> Self {
        Self {
            slot: entity.slot(),
            generation: entity.generation(),
        }
    }

    /// The full handle under `owner`.
    #[inline(always)]
    pub const fn entity(self, owner: OwnerToken) -> EntityId {
        EntityId::from_raw_parts(owner, self.slot, self.generation)
    }
}

/// A pool's dense owners: `get(i)` holds `values()[i]`. A view over the dense keys and the
/// pool's owner token.
#[derive(Clone, Copy)]
pub struct Owners<'p> {
    owner: OwnerToken,
    keys: &'p [EntityKey],
}

impl<'p> Owners<'p> {
    /// Number of owners (the pool's length, or a group's).
    #[inline]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when there are none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The owner of dense index `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<EntityId> {
        self.keys.get(i).map(|k| k.entity(self.owner))
    }

    /// The dense keys (handles without the owner token).
    #[inline]
    pub fn keys(&self) -> &'p [EntityKey] {
        self.keys
    }

    /// The owner token shared by every entry.
    #[inline]
    pub fn owner(&self) -> OwnerToken {
        self.owner
    }

    /// Iterates the owners in dense order.
    #[inline]
    pub fn iter(&self) -> OwnersIter<'p> {
        OwnersIter {
            owner: self.owner,
            keys: self.keys.iter(),
        }
    }

    /// The first `n` owners (a group's packed prefix).
    #[inline]
    pub(crate) fn prefix(self, n: usize) -> Self {
        Self {
            owner: self.owner,
            keys: &self.keys[..n],
        }
    }
}

impl core::fmt::Debug for Owners<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'p> IntoIterator for Owners<'p> {
    type Item = EntityId;
    type IntoIter = OwnersIter<'p>;
    #[inline]
    fn into_iter(self) -> OwnersIter<'p> {
        self.iter()
    }
}

impl PartialEq<[EntityId]> for Owners<'_> {
    fn eq(&self, other: &[EntityId]) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter().copied())
    }
}

impl PartialEq<&[EntityId]> for Owners<'_> {
    fn eq(&self, other: &&[EntityId]) -> bool {
        *self == **other
    }
}

impl<const N: usize> PartialEq<&[EntityId; N]> for Owners<'_> {
    fn eq(&self, other: &&[EntityId; N]) -> bool {
        *self == other[..]
    }
}

impl PartialEq for Owners<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

/// Iterator over [`Owners`], in dense order.
#[derive(Debug, Clone)]
pub struct OwnersIter<'p> {
    owner: OwnerToken,
    keys: core::slice::Iter<'p, EntityKey>,
}

impl Iterator for OwnersIter<'_> {
    type Item = EntityId;
    #[inline]
    fn next(&mut self) -> Option<EntityId> {
        self.keys.next().map(|k| k.entity(self.owner))
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.keys.size_hint()
    }
}

impl DoubleEndedIterator for OwnersIter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<EntityId> {
        self.keys.next_back().map(|k| k.entity(self.owner))
    }
}

impl ExactSizeIterator for OwnersIter<'_> {}

/// A pool's lookup structures, borrowed apart from its values (for joins).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Index<'p> {
    owner: OwnerToken,
    keys: &'p [EntityKey],
    sparse: &'p [u32],
}

impl<'p> Index<'p> {
    /// Dense index of `entity`, validated against the full owner.
    #[inline(always)]
    pub(crate) fn dense_of(&self, entity: EntityId) -> Option<usize> {
        if entity.owner() != self.owner {
            return None;
        }
        let key = EntityKey::of(entity);
        let s = key.slot as usize;
        if self.keys.get(s) == Some(&key) {
            return Some(s);
        }
        let d = *self.sparse.get(s)? as usize;
        (self.keys.get(d) == Some(&key)).then_some(d)
    }

    /// Dense index of the entry for `slot`, whatever its generation.
    #[inline(always)]
    fn slot_entry(&self, slot: u32) -> Option<usize> {
        let s = slot as usize;
        if self.keys.get(s).is_some_and(|k| k.slot == slot) {
            return Some(s);
        }
        let d = *self.sparse.get(s)? as usize;
        self.keys
            .get(d)
            .is_some_and(|k| k.slot == slot)
            .then_some(d)
    }

    /// Number of dense entries.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// The owner of dense index `i < len`.
    #[inline(always)]
    pub(crate) fn owner_at(&self, i: usize) -> EntityId {
        self.keys[i].entity(self.owner)
    }

    /// Whether dense index `i` holds `entity` (full owner compared).
    #[inline(always)]
    pub(crate) fn holds(&self, i: usize, entity: EntityId) -> bool {
        entity.owner() == self.owner && self.keys.get(i) == Some(&EntityKey::of(entity))
    }

    /// The owners.
    #[inline(always)]
    pub(crate) fn owners(&self) -> Owners<'p> {
        Owners {
            owner: self.owner,
            keys: self.keys,
        }
    }
}

/// Dense storage of one component type `T` for the entities of one registry.
///
/// Sized to the registry's capacity at init; insert and remove allocate nothing. Dense order is
/// insertion order, changed only by swap removal (the last element moves into the hole) and by
/// owned groups (which swap members to the front).
///
/// # Examples
/// ```
/// use ludus::world::{ComponentPool, EntityRegistry};
/// let mut reg = EntityRegistry::try_with_capacity(8)?;
/// let mut hp = ComponentPool::<u32>::try_new(&reg)?;
/// let e = reg.try_create()?;
/// hp.insert(&mut reg, e, 100)?;
/// *hp.get_mut(e).unwrap() -= 1;
/// assert_eq!(hp.get(e), Some(&99));
/// assert_eq!(hp.values(), &[99]);
/// assert_eq!(hp.owners().get(0), Some(e));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ComponentPool<T: Pod, A: Allocator + Clone = Global> {
    owner: OwnerToken,
    /// Entity capacity (the registry's), fixed at init.
    capacity: usize,
    /// Dense index per slot, for entries not at `dense == slot`; reserved `capacity`, grown
    /// lazily (see the module invariants).
    sparse: Vec<u32, A>,
    /// Dense keys; `len` is the pool length; reserved `capacity`.
    keys: Vec<EntityKey, A>,
    /// Dense values; `values.len() == keys.len()`; reserved `capacity`.
    values: Vec<T, A>,
}

impl<T: Pod> ComponentPool<T, Global> {
    /// A pool for `registry`'s entities on the global allocator.
    ///
    /// # Errors
    /// [`InitError::Allocation`].
    pub fn try_new<B: Allocator + Clone>(registry: &EntityRegistry<B>) -> Result<Self, InitError> {
        Self::try_new_in(registry, Global)
    }
}

impl<T: Pod, A: Allocator + Clone> ComponentPool<T, A> {
    /// A pool for `registry`'s entities whose three arrays come from `alloc`.
    ///
    /// # Errors
    /// [`InitError::Allocation`].
    pub fn try_new_in<B: Allocator + Clone>(
        registry: &EntityRegistry<B>,
        alloc: A,
    ) -> Result<Self, InitError> {
        let mut pool = Self::try_unbound_in(registry.capacity(), alloc)?;
        pool.owner = registry.owner();
        Ok(pool)
    }

    /// A pool of `capacity` entries bound to no registry yet (owner 0 matches no handle);
    /// lets a world allocate its pools before its registry issues the owner token.
    ///
    /// # Errors
    /// [`InitError::Allocation`].
    #[doc(hidden)]
    pub fn try_unbound_in(capacity: usize, alloc: A) -> Result<Self, InitError> {
        Ok(Self {
            owner: 0,
            capacity,
            sparse: fixed::reserve(capacity, alloc.clone())?,
            keys: fixed::reserve(capacity, alloc.clone())?,
            values: fixed::reserve(capacity, alloc)?,
        })
    }

    /// Binds an unbound, empty pool to `registry`; returns false (changing nothing) when the
    /// pool is bound, not empty or sized differently.
    #[doc(hidden)]
    pub fn bind<B: Allocator + Clone>(&mut self, registry: &EntityRegistry<B>) -> bool {
        let ok = self.owner == 0 && self.is_empty() && self.capacity == registry.capacity();
        if ok {
            self.owner = registry.owner();
        }
        ok
    }

    /// Number of entities holding a `T`.
    #[inline]
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True when no entity holds a `T`.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Owner token of the registry this pool belongs to.
    pub fn owner(&self) -> OwnerToken {
        self.owner
    }

    #[inline(always)]
    pub(crate) fn index(&self) -> Index<'_> {
        Index {
            owner: self.owner,
            keys: &self.keys,
            sparse: &self.sparse,
        }
    }

    /// Dense index of `entity`'s value, validated against the full owner.
    #[inline]
    pub fn dense_index(&self, entity: EntityId) -> Option<usize> {
        self.index().dense_of(entity)
    }

    /// True when `entity` (this incarnation) holds a `T`.
    #[inline]
    pub fn contains(&self, entity: EntityId) -> bool {
        self.dense_index(entity).is_some()
    }

    /// `entity`'s value; `None` for absent, stale or foreign handles. Validates the full
    /// owner: the pool's owner token (a register compare), then the 8-byte key at the slot's
    /// own dense index, else at the index its sparse entry names.
    #[inline]
    pub fn get(&self, entity: EntityId) -> Option<&T> {
        let i = self.dense_index(entity)?;
        // SAFETY: `dense_of` returns only indices of matching keys, and `keys.len() ==
        // values.len()` (struct invariant), so `i` is in bounds of `values`.
        Some(unsafe { self.values.get_unchecked(i) })
    }

    /// `entity`'s value, mutably; value mutation is allowed in every phase.
    #[inline]
    pub fn get_mut(&mut self, entity: EntityId) -> Option<&mut T> {
        let i = self.dense_index(entity)?;
        // SAFETY: as in `get`: `i < keys.len() == values.len()`.
        Some(unsafe { self.values.get_unchecked_mut(i) })
    }

    /// Dense values, in dense order.
    #[inline]
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// Dense values, mutably, in dense order (for SIMD-friendly loops).
    #[inline]
    pub fn values_mut(&mut self) -> &mut [T] {
        &mut self.values
    }

    /// Dense owners: `owners().get(i)` holds `values()[i]`.
    #[inline]
    pub fn owners(&self) -> Owners<'_> {
        self.index().owners()
    }

    /// The lookup structures and the values as disjoint borrows (for joins).
    #[inline]
    pub(crate) fn join_parts(&mut self) -> (Index<'_>, &mut [T]) {
        let index = Index {
            owner: self.owner,
            keys: &self.keys,
            sparse: &self.sparse,
        };
        (index, &mut self.values)
    }

    /// Owners and values, the latter mutable, as parallel sequences.
    #[inline]
    pub fn split_mut(&mut self) -> (Owners<'_>, &mut [T]) {
        let (index, values) = self.join_parts();
        (index.owners(), values)
    }

    /// Iterates `(entity, &value)` in dense order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (EntityId, &T)> + '_ {
        self.owners().iter().zip(self.values.iter())
    }

    /// Iterates `(entity, &mut value)` in dense order.
    pub fn iter_mut(&mut self) -> impl ExactSizeIterator<Item = (EntityId, &mut T)> + '_ {
        let (owners, values) = self.split_mut();
        owners.into_iter().zip(values.iter_mut())
    }

    /// Parallel disjoint chunks of the dense values (feature `rayon`).
    #[cfg(feature = "rayon")]
    pub fn par_chunks_mut(&mut self, chunk: usize) -> rayon::slice::ChunksMut<'_, T>
    where
        T: Send,
    {
        use rayon::slice::ParallelSliceMut;
        self.values.par_chunks_mut(chunk.max(1))
    }

    /// `Ok` when [`insert`](Self::insert) / [`remove`](Self::remove) of `entity` would succeed.
    ///
    /// # Errors
    /// The error they would return.
    #[inline]
    pub fn check_change<B: Allocator + Clone>(
        &self,
        registry: &EntityRegistry<B>,
        entity: EntityId,
    ) -> Result<(), WorldError> {
        registry.check_phase()?;
        if registry.owner() != self.owner {
            return Err(WorldError::ForeignPool);
        }
        registry.check_alive(entity)?;
        registry.check_revisions(1)
    }

    /// Gives `entity` the value `value`, returning the previous value if it had one (a
    /// replacement is not a structural change).
    ///
    /// # Errors
    /// [`WorldError::InvalidPhase`], [`WorldError::ForeignPool`], [`WorldError::Rejected`]
    /// (the entity is not alive) or [`WorldError::RevisionExhausted`]; nothing changes.
    #[inline]
    pub fn insert<B: Allocator + Clone>(
        &mut self,
        registry: &mut EntityRegistry<B>,
        entity: EntityId,
        value: T,
    ) -> Result<Option<T>, WorldError> {
        self.check_change(registry, entity)?;
        let (previous, joined) = self.insert_validated(entity, value);
        registry.advance_revision(u64::from(joined));
        Ok(previous)
    }

    /// [`insert`](Self::insert) after the caller ran [`check_change`](Self::check_change);
    /// returns the previous value and whether `entity` newly joined the pool (the caller then
    /// advances the registry's revision).
    #[doc(hidden)]
    #[inline]
    pub fn insert_validated(&mut self, entity: EntityId, value: T) -> (Option<T>, bool) {
        debug_assert_eq!(entity.owner(), self.owner);
        let key = EntityKey::of(entity);
        let Some(i) = self.index().slot_entry(key.slot) else {
            self.append_validated(entity, value);
            return (None, true);
        };
        if self.keys[i] == key {
            return (Some(core::mem::replace(&mut self.values[i], value)), false);
        }
        // A former incarnation of this slot was released without leaving the pool: its entry
        // is reused in place by the new incarnation.
        self.keys[i] = key;
        self.values[i] = value;
        (None, true)
    }

    /// Appends `entity` (validated alive, holding no entry in this pool under any generation,
    /// as after a world's create) at dense index `len`.
    #[doc(hidden)]
    #[inline(always)]
    pub fn append_validated(&mut self, entity: EntityId, value: T) {
        debug_assert_eq!(entity.owner(), self.owner);
        debug_assert!(self.index().slot_entry(entity.slot()).is_none());
        let i = self.values.len();
        let key = EntityKey::of(entity);
        // `len < capacity`: every stored slot is distinct and below the registry's capacity.
        let pushed = self.keys.push_within_capacity(key).is_ok()
            & self.values.push_within_capacity(value).is_ok();
        assert!(pushed, "pool of capacity {} is full", self.capacity);
        if key.slot as usize != i {
            self.set_sparse(key.slot, i);
        }
    }

    /// Records that `slot`'s entry sits at dense index `i`.
    #[inline]
    fn set_sparse(&mut self, slot: u32, i: usize) {
        let s = slot as usize;
        if let Some(entry) = self.sparse.get_mut(s) {
            *entry = i as u32;
            return;
        }
        debug_assert!(
            s < self.capacity,
            "slot {s} beyond capacity {}",
            self.capacity
        );
        // Within the capacity reserved at init: no reallocation. The filler is meaningless.
        self.sparse.resize(s, 0);
        self.sparse.push(i as u32);
    }

    /// Removes `entity`'s value by swap removal: the last dense element moves into the hole.
    /// Returns the value, or `None` when the entity had none.
    ///
    /// # Errors
    /// [`WorldError::InvalidPhase`], [`WorldError::ForeignPool`], [`WorldError::Rejected`] or
    /// [`WorldError::RevisionExhausted`]; nothing changes.
    #[inline]
    pub fn remove<B: Allocator + Clone>(
        &mut self,
        registry: &mut EntityRegistry<B>,
        entity: EntityId,
    ) -> Result<Option<T>, WorldError> {
        self.check_change(registry, entity)?;
        let value = self.remove_validated(entity);
        registry.advance_revision(u64::from(value.is_some()));
        Ok(value)
    }

    /// [`remove`](Self::remove) after the caller ran [`check_change`](Self::check_change); the
    /// caller advances the revision when a value is returned.
    #[doc(hidden)]
    #[inline]
    pub fn remove_validated(&mut self, entity: EntityId) -> Option<T> {
        let i = self.dense_index(entity)?;
        Some(self.remove_at(i))
    }

    /// Swap-removes dense index `i < len`, recording the moved entry's new index.
    #[inline]
    fn remove_at(&mut self, i: usize) -> T {
        let last = self.values.len() - 1;
        let value = self.values.swap_remove(i);
        self.keys.swap_remove(i);
        if i != last {
            // SAFETY: `i < last == keys.len()` after the removal.
            let moved = unsafe { self.keys.get_unchecked(i) }.slot;
            if moved as usize != i {
                self.set_sparse(moved, i);
            }
        }
        value
    }

    /// Swaps dense positions `i` and `j` (both `< len`), keeping the lookup invariant.
    /// Used by owned groups; order-only, not a membership change.
    #[doc(hidden)]
    #[inline]
    pub fn swap_dense(&mut self, i: usize, j: usize) {
        if i == j {
            return;
        }
        self.keys.swap(i, j);
        self.values.swap(i, j);
        for at in [i, j] {
            let slot = self.keys[at].slot;
            if slot as usize != at {
                self.set_sparse(slot, at);
            }
        }
    }

    /// Reserves `n` dense entries past the end for a batch append, returning where to write
    /// their values; `None` (changing nothing) when fewer than `n` entries are free.
    #[doc(hidden)]
    #[inline]
    pub fn batch_cursor(&mut self, n: usize) -> Option<BatchCursor<T>> {
        let len = self.values.len();
        (self.capacity - len >= n && self.values.capacity() - len >= n).then(|| BatchCursor {
            // SAFETY: `len <= capacity` of the allocation, so `len` is at most one past the end.
            next: unsafe { self.values.as_mut_ptr().add(len) },
        })
    }

    /// Publishes `count` values written through [`batch_cursor`](Self::batch_cursor) as the
    /// entries of the fresh slots `first..first + count` at the first generation.
    ///
    /// # Safety
    /// The cursor came from this pool with `n >= count` and no structural change since; values
    /// `0..count` were written through it; the slots were never in this pool (fresh registry
    /// slots of a world) and are below the pool's capacity.
    #[doc(hidden)]
    pub unsafe fn publish_batch(&mut self, first: u32, count: usize, generation: u32) {
        let len = self.values.len();
        debug_assert!(len + count <= self.capacity);
        debug_assert!(first as usize + count <= self.capacity);
        // SAFETY: the caller wrote `count` values at `len..len + count`, within the reserved
        // capacity (`batch_cursor` checked), and `T: Pod` has no invalid bit patterns.
        unsafe { self.values.set_len(len + count) };
        self.keys.extend(
            (first..)
                .take(count)
                .map(|slot| EntityKey { slot, generation }),
        );
        if first as usize != len {
            for k in 0..count {
                self.set_sparse(first + k as u32, len + k);
            }
        }
    }
}

/// Where a batch writes its next values into a pool's reserved, unused dense capacity.
#[doc(hidden)]
#[derive(Debug)]
pub struct BatchCursor<T> {
    next: *mut T,
}

impl<T> Clone for BatchCursor<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for BatchCursor<T> {}

impl<T: Pod> BatchCursor<T> {
    /// Writes the `k`-th value of the batch.
    ///
    /// # Safety
    /// `k` is below the `n` the cursor was reserved for, and the pool has not changed since.
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn write(self, k: usize, value: T) {
        // SAFETY: `k < n` and the pool reserved `n` unused entries past its length at
        // `next` (caller), so the write is in bounds of the allocation and overwrites no
        // published value.
        unsafe { self.next.add(k).write(value) }
    }
}

impl<T: Pod, A: Allocator + Clone> core::fmt::Debug for ComponentPool<T, A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ComponentPool")
            .field("type", &core::any::type_name::<T>())
            .field("owner", &self.owner)
            .field("len", &self.len())
            .field("capacity", &self.capacity)
            .finish()
    }
}
