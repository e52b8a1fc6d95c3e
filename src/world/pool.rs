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
//! `ABSENT`. The pool is bound to one registry's owner token, so the owner, the sparse index
//! (slot) and the cached generation together equal the full dense owner: a lookup validates
//! the full 16-byte owner with one sparse load and no registry access.

use allocator_api2::alloc::{Allocator, Global};
use allocator_api2::vec::Vec;
use bytemuck::Pod;

use super::{fixed, EntityId, EntityRegistry, InitError, WorldError};
use crate::identity::OwnerToken;

/// Sparse entry: dense index and the generation of the owner stored there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(8))]
pub(crate) struct Sparse {
    dense: u32,
    generation: u32,
}

/// No dense entry: `dense` is out of every dense range and generation 0 matches no live handle.
const ABSENT: Sparse = Sparse {
    dense: u32::MAX,
    generation: 0,
};

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
    /// `len == capacity`.
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
            sparse: fixed::filled(capacity, ABSENT, alloc.clone())?,
            owners: fixed::reserve(capacity, alloc.clone())?,
            values: fixed::reserve(capacity, alloc)?,
        })
    }

    /// Binds an unbound, empty pool to `registry`; returns false (changing nothing) when the
    /// pool is bound, not empty or sized differently.
    #[doc(hidden)]
    pub fn bind<B: Allocator + Clone>(&mut self, registry: &EntityRegistry<B>) -> bool {
        let ok = self.owner == 0 && self.is_empty() && self.sparse.len() == registry.capacity();
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
        let i = s.dense as usize;
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

    /// `entity`'s value; `None` for absent, stale or foreign handles.
    #[inline]
    pub fn get(&self, entity: EntityId) -> Option<&T> {
        let s = self.sparse_of(entity)?;
        self.values.get(s.dense as usize)
    }

    /// `entity`'s value, mutably; value mutation is allowed in every phase.
    #[inline]
    pub fn get_mut(&mut self, entity: EntityId) -> Option<&mut T> {
        let s = self.sparse_of(entity)?;
        self.values.get_mut(s.dense as usize)
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
        self.check_structural(registry, entity)?;
        let slot = entity.slot() as usize;
        let s = self.sparse[slot];
        if s.dense != ABSENT.dense {
            let i = s.dense as usize;
            if s.generation == entity.generation() {
                return Ok(Some(core::mem::replace(&mut self.values[i], value)));
            }
            // A former incarnation of this slot was released without leaving the pool: its
            // entry is reused in place by the new incarnation.
            registry.check_revisions(1)?;
            self.owners[i] = entity;
            self.values[i] = value;
            self.sparse[slot].generation = entity.generation();
            registry.bump_revision();
            return Ok(None);
        }
        registry.check_revisions(1)?;
        let i = self.values.len();
        debug_assert!(i < self.sparse.len(), "pool full: {i}");
        self.sparse[slot] = Sparse {
            dense: i as u32,
            generation: entity.generation(),
        };
        self.owners.push(entity);
        self.values.push(value);
        registry.bump_revision();
        Ok(None)
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
        self.check_structural(registry, entity)?;
        let Some(i) = self.dense_index(entity) else {
            return Ok(None);
        };
        registry.check_revisions(1)?;
        let value = self.remove_at(i);
        registry.bump_revision();
        Ok(Some(value))
    }

    /// Swap-removes dense index `i < len`, fixing the moved owner's sparse entry.
    #[inline]
    fn remove_at(&mut self, i: usize) -> T {
        let removed = self.owners.swap_remove(i);
        let value = self.values.swap_remove(i);
        self.sparse[removed.slot() as usize] = ABSENT;
        if let Some(moved) = self.owners.get(i) {
            self.sparse[moved.slot() as usize].dense = i as u32;
        }
        value
    }

    /// Swaps dense positions `i` and `j` (both `< len`), keeping the sparse map consistent.
    /// Used by owned groups; order-only, not a membership change.
    #[doc(hidden)]
    #[inline]
    pub fn swap_dense(&mut self, i: usize, j: usize) {
        if i == j {
            return;
        }
        self.owners.swap(i, j);
        self.values.swap(i, j);
        self.sparse[self.owners[i].slot() as usize].dense = i as u32;
        self.sparse[self.owners[j].slot() as usize].dense = j as u32;
    }
}

impl<T: Pod, A: Allocator + Clone> core::fmt::Debug for ComponentPool<T, A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ComponentPool")
            .field("type", &core::any::type_name::<T>())
            .field("owner", &self.owner)
            .field("len", &self.len())
            .field("capacity", &self.sparse.len())
            .finish()
    }
}
