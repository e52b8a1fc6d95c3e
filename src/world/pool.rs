//! `ComponentPool<T>`: sparse slot map + dense owners + dense values for one plain-data type.
//!
//! ```text
//!  sparse (per slot, len == capacity)      dense (len == pool length, capacity == capacity)
//!  slot 0 [dense 1 | gen 3]  ───────┐       i:      0        1        2
//!  slot 1 [ABSENT  | gen 0]         └────▶  owners: [e(5,1)] [e(0,3)] [e(2,7)]
//!  slot 2 [dense 2 | gen 7]                 values: [  T   ] [  T   ] [  T   ]
//!  slot 5 [dense 0 | gen 1]
//! ```
//!
//! Invariants, for every dense `i < len`: `sparse[owners[i].slot] == {dense: i, generation:
//! owners[i].generation}` and `owners[i].owner == self.owner`; every other sparse entry is
//! `ABSENT`. The sparse map grows lazily: `sparse.len()` is one past the highest slot ever
//! inserted (every slot beyond it is implicitly `ABSENT`), within the capacity reserved at
//! init, so it never reallocates and a pool touches only the sparse pages its entities use.
//! The pool is bound to one registry's owner token, so the owner, the sparse index
//! (slot) and the cached generation together equal the full dense owner: a lookup validates
//! the full 16-byte owner with one sparse load and no registry access.

use allocator_api2::alloc::{Allocator, Global};
use allocator_api2::vec::Vec;
use bytemuck::Pod;

use super::{fixed, EntityId, EntityRegistry, InitError, WorldError};
use crate::identity::OwnerToken;

/// Sparse entry: the dense index (stored bitwise-inverted, so the all-zero entry is `ABSENT`
/// and the array can come zeroed from the allocator) and the generation of the owner there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Zeroable)]
#[repr(C, align(8))]
pub(crate) struct Sparse {
    not_dense: u32,
    generation: u32,
}

impl Sparse {
    #[inline(always)]
    fn new(dense: usize, generation: u32) -> Self {
        Self {
            not_dense: !(dense as u32),
            generation,
        }
    }

    #[inline(always)]
    fn dense(self) -> usize {
        !self.not_dense as usize
    }

    #[inline(always)]
    fn is_absent(self) -> bool {
        self.not_dense == 0
    }
}

/// No dense entry: dense index `u32::MAX` is beyond every dense range and generation 0 matches
/// no handle a registry issues.
const ABSENT: Sparse = Sparse {
    not_dense: 0,
    generation: 0,
};

/// A pool's sparse map, borrowed apart from its dense arrays (for joins).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SparseView<'p> {
    owner: OwnerToken,
    sparse: &'p [Sparse],
}

impl SparseView<'_> {
    /// Dense index of `entity` in a pool of `len` entries, validated like
    /// [`ComponentPool::dense_index`].
    #[inline(always)]
    pub(crate) fn dense_of(&self, entity: EntityId, len: usize) -> Option<usize> {
        if entity.owner() != self.owner {
            return None;
        }
        let s = *self.sparse.get(entity.slot() as usize)?;
        (s.generation == entity.generation() && s.dense() < len).then(|| s.dense())
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
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ComponentPool<T: Pod, A: Allocator + Clone = Global> {
    owner: OwnerToken,
    /// Entity capacity (the registry's), fixed at init.
    capacity: usize,
    /// `len <= capacity`, reserved `capacity`: entries past `len` are implicitly `ABSENT`.
    sparse: Vec<Sparse, A>,
    /// Dense owners; `len` is the pool length.
    owners: Vec<EntityId, A>,
    /// Dense values; `values.len() == owners.len()`.
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
            owners: fixed::reserve(capacity, alloc.clone())?,
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
    fn sparse_of(&self, entity: EntityId) -> Option<Sparse> {
        if entity.owner() != self.owner {
            return None;
        }
        let s = *self.sparse.get(entity.slot() as usize)?;
        (s.generation == entity.generation()).then_some(s)
    }

    /// Dense index of `entity`'s value, validated against the full owner.
    #[inline]
    pub fn dense_index(&self, entity: EntityId) -> Option<usize> {
        let s = self.sparse_of(entity)?;
        let i = s.dense();
        // ABSENT has generation 0, which no handle matching a present entry carries; a handle
        // with generation 0 reaches here with i == u32::MAX and fails the range check.
        (i < self.values.len()).then(|| {
            debug_assert_eq!(self.owners[i], entity, "sparse/dense mismatch at {i}");
            i
        })
    }

    /// True when `entity` (this incarnation) holds a `T`.
    #[inline]
    pub fn contains(&self, entity: EntityId) -> bool {
        self.dense_index(entity).is_some()
    }

    /// `entity`'s value; `None` for absent, stale or foreign handles. Validates the full
    /// owner: the pool's owner token (a register compare), then the slot's sparse entry
    /// (8 bytes: generation and dense index), then loads the value.
    #[inline]
    pub fn get(&self, entity: EntityId) -> Option<&T> {
        let s = self.sparse_of(entity)?;
        // ABSENT (generation 0) with a generation-0 handle yields dense u32::MAX: out of range.
        debug_assert!(self.owners.get(s.dense()).is_none_or(|o| *o == entity));
        let slot = entity.slot() as usize;
        if s.dense() == slot {
            // Pools filled in creation order keep `dense == slot`: the value address does not
            // wait for the sparse load, so both loads overlap under branch prediction.
            return self.values.get(slot);
        }
        self.values.get(s.dense())
    }

    /// `entity`'s value, mutably; value mutation is allowed in every phase.
    #[inline]
    pub fn get_mut(&mut self, entity: EntityId) -> Option<&mut T> {
        let s = self.sparse_of(entity)?;
        debug_assert!(self.owners.get(s.dense()).is_none_or(|o| *o == entity));
        self.values.get_mut(s.dense())
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

    /// Dense owners: `owners()[i]` holds `values()[i]`.
    #[inline]
    pub fn owners(&self) -> &[EntityId] {
        &self.owners
    }

    /// Owners, values and the sparse map as disjoint borrows (for joins).
    #[inline]
    pub(crate) fn join_parts(&mut self) -> (&[EntityId], &mut [T], SparseView<'_>) {
        let sparse = SparseView {
            owner: self.owner,
            sparse: &self.sparse,
        };
        (&self.owners, &mut self.values, sparse)
    }

    /// The sparse map with the pool's owner token (for joins).
    #[inline]
    pub(crate) fn sparse_view(&self) -> SparseView<'_> {
        SparseView {
            owner: self.owner,
            sparse: &self.sparse,
        }
    }

    /// Owners and values, the latter mutable, as parallel slices.
    #[inline]
    pub fn split_mut(&mut self) -> (&[EntityId], &mut [T]) {
        (&self.owners, &mut self.values)
    }

    /// Iterates `(entity, &value)` in dense order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (EntityId, &T)> + '_ {
        self.owners.iter().copied().zip(self.values.iter())
    }

    /// Iterates `(entity, &mut value)` in dense order.
    pub fn iter_mut(&mut self) -> impl ExactSizeIterator<Item = (EntityId, &mut T)> + '_ {
        self.owners.iter().copied().zip(self.values.iter_mut())
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

    #[inline]
    fn check_structural<B: Allocator + Clone>(
        &self,
        registry: &EntityRegistry<B>,
        entity: EntityId,
    ) -> Result<(), WorldError> {
        registry.check_phase()?;
        if registry.owner() != self.owner {
            return Err(WorldError::ForeignPool);
        }
        registry.check_alive(entity)
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
        self.check_structural(registry, entity)?;
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
    #[inline(always)]
    pub fn insert_validated(&mut self, entity: EntityId, value: T) -> (Option<T>, bool) {
        debug_assert_eq!(entity.owner(), self.owner);
        let slot = entity.slot() as usize;
        let i = self.values.len();
        if slot == self.sparse.len() && i < self.capacity {
            // Spawn fast path: a slot this pool has never seen (fresh slots are issued in
            // increasing order). `slot < capacity` (the registry's) and `i < capacity`, so the
            // three pushes stay within the capacity reserved at init.
            let pushed = self
                .sparse
                .push_within_capacity(Sparse::new(i, entity.generation()))
                .is_ok()
                & self
                    .owners
                    // Rebuilt from its parts (equal by the precondition): stored as two
                    // words, without reloading a spilled 16-byte handle.
                    .push_within_capacity(EntityId::from_raw_parts(
                        self.owner,
                        slot as u32,
                        entity.generation(),
                    ))
                    .is_ok()
                & self.values.push_within_capacity(value).is_ok();
            debug_assert!(pushed, "pool arrays at capacity {}", self.capacity);
            return (None, true);
        }
        self.insert_general(entity, value)
    }

    /// [`insert_validated`](Self::insert_validated) for a slot the sparse map already covers.
    #[inline]
    fn insert_general(&mut self, entity: EntityId, value: T) -> (Option<T>, bool) {
        let slot = entity.slot() as usize;
        debug_assert!(
            slot < self.capacity,
            "slot {slot} beyond capacity {}",
            self.capacity
        );
        let s = self.sparse.get(slot).copied().unwrap_or(ABSENT);
        if !s.is_absent() {
            let i = s.dense();
            if s.generation == entity.generation() {
                return (Some(core::mem::replace(&mut self.values[i], value)), false);
            }
            // A former incarnation of this slot was released without leaving the pool: its
            // entry is reused in place by the new incarnation.
            self.owners[i] = entity;
            self.values[i] = value;
            self.sparse[slot].generation = entity.generation();
            return (None, true);
        }
        let i = self.values.len();
        debug_assert!(i < self.capacity, "pool full: {i}");
        let entry = Sparse::new(i, entity.generation());
        if slot < self.sparse.len() {
            self.sparse[slot] = entry;
        } else {
            // Within the reserved capacity: no reallocation.
            self.sparse.resize(slot, ABSENT);
            self.sparse.push(entry);
        }
        self.owners.push(entity);
        self.values.push(value);
        (None, true)
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
        if self.values.is_empty() {
            return None; // also spares a destroy from touching this pool's sparse pages
        }
        let i = self.dense_index(entity)?;
        Some(self.remove_at(i))
    }

    /// Swap-removes dense index `i < len`, fixing the moved owner's sparse entry.
    #[inline]
    fn remove_at(&mut self, i: usize) -> T {
        let removed = self.owners.swap_remove(i);
        let value = self.values.swap_remove(i);
        self.sparse[removed.slot() as usize] = ABSENT;
        if let Some(moved) = self.owners.get(i) {
            self.sparse[moved.slot() as usize].not_dense = !(i as u32);
        }
        value
    }

    /// Swaps dense positions `i` and `j` (both `< len`), keeping the sparse map consistent.
    /// Used by owned groups; order-only, not a membership change.
    #[doc(hidden)]
    #[inline(always)]
    pub fn swap_dense(&mut self, i: usize, j: usize) {
        if i == j {
            return;
        }
        self.owners.swap(i, j);
        self.values.swap(i, j);
        self.sparse[self.owners[i].slot() as usize].not_dense = !(i as u32);
        self.sparse[self.owners[j].slot() as usize].not_dense = !(j as u32);
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
