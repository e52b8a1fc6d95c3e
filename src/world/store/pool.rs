//! `ComponentPool<T>`: dense keys + dense values for one plain-data type, with a sparse map
//! for entries not stored at their own slot index. Layout, invariants and the lookup are in
//! [`dense`](crate::world::raw::dense); this file is the pool's API.

use crate::world::store::component::Component;
use allocator_api2::alloc::{Allocator, Global};
use allocator_api2::vec::Vec;

use crate::identity::OwnerToken;
use crate::world::raw::dense::MAX_GROUP_MEMBERS;
use crate::world::raw::dense::{
    words_for, DenseMut, Index, Order, Run, Sparse, MAX_RUNS, NO_ENTRY,
};
use crate::world::raw::keys::EntityId;
use crate::world::raw::keys::{EntityKey, Owners};
use crate::world::store::error::InitError;
use crate::world::store::error::WorldError;
use crate::world::store::registry::EntityRegistry;
use crate::world::store::reserve;

/// Dense storage of one component type `T` for the entities of one registry.
///
/// Sized to the registry's capacity at init; insert and remove allocate nothing. Dense order is
/// insertion order, changed only by swap removal (the last element moves into the hole), by
/// large removal batches (which compact, keeping the survivors' order), by owned groups
/// (which swap members to the front), by [`sort_by_slot`](Self::sort_by_slot) and
/// [`cluster`](fn@crate::world::cluster), and by a commit's in-place `respawn` (the replacement takes
/// the old entity's row, where both have the pool's type, instead of being appended).
///
/// A pool answers for the entries it holds: `get` validates a handle against the stored key
/// (slot, generation and the pool's owner token), not against the registry. A standalone pool
/// whose entity was released without being removed keeps answering for that old handle until
/// the entry is removed or the slot's next incarnation is inserted over it. A world never
/// leaves such entries: `destroy` removes the entity from every pool before it releases the
/// slot, so through a world a stale handle reads `None`.
///
/// *Provenance invariant*: every entry was stored for an entity alive, at that moment, in the
/// registry whose owner token the pool holds. Every insert path checks it — the pool's own
/// `insert`s against the `&mut EntityRegistry` they are given after comparing its owner token,
/// a world's paths the same way, spawns for entities they have just created — and owner tokens
/// are unique in the process (the constructors taking a token source are `unsafe`). Hence a
/// slot its registry has never created has no entry, which the batch spawn relies on. Binding
/// takes `&mut EntityRegistry`, which counts its pools; a world's registry (created behind
/// [`ReadOnly`](crate::world::store::read_only::ReadOnly)) releases slots only in
/// [`WorldOps::destroy`](crate::world::world_ops::WorldOps::destroy), a commit's run of destroys and a commit's
/// in-place `respawn`, which all first check that they reach every pool bound to it (*release
/// invariant*): the first two remove the entity from every pool before the release, the last
/// hands each of its rows to the slot's next incarnation, created right after the release
/// with nothing in between. So a reused slot of a world has no entry but its new entity's.
///
/// # Examples
/// ```
/// use ludus::world::{ComponentPool, EntityRegistry};
/// let mut reg = EntityRegistry::try_with_capacity(8)?;
/// let mut hp = ComponentPool::<u32>::try_new(&mut reg)?;
/// let e = reg.try_create()?;
/// hp.insert(&mut reg, e, 100)?;
/// *hp.get_mut(e).unwrap() -= 1;
/// assert_eq!(hp.get(e), Some(&99));
/// assert_eq!(hp.values(), &[99]);
/// assert_eq!(hp.owners().get(0), Some(e));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ComponentPool<T: Component, A: Allocator + Clone = Global> {
    owner: OwnerToken,
    /// Entity capacity (the registry's), fixed at init.
    capacity: usize,
    /// Per group size `k + 1`: the length of the packed prefix of the world's group of that
    /// many members this pool belongs to (equal in every member pool, see
    /// [`group`](crate::world::command::group)); 0 for sizes of no group of this pool. A pool's groups are
    /// nested, so their sizes differ.
    packed: [usize; MAX_GROUP_MEMBERS],
    /// Dense index per slot, for entries off their diagonal; `len == capacity`, filled at
    /// init (see [`dense`](crate::world::raw::dense)).
    sparse: Vec<Sparse, A>,
    /// Dense keys; `len` is the pool length; reserved `capacity`.
    keys: Vec<EntityKey, A>,
    /// Dense values; `values.len() == keys.len()`; reserved `capacity`.
    values: Vec<T, A>,
    /// Membership bitset, one bit per slot ([`dense`](crate::world::raw::dense)); `len == words_for(capacity)`.
    bits: Vec<u64, A>,
    /// Whether the keys ascend by slot, and the slots' bound ([`dense`](crate::world::raw::dense)).
    order: Order,
    /// *Layout stamp*: 0, or a stamp that only pools with equal keys share (*layout
    /// invariant*: two pools of one owner with the same nonzero stamp hold equal key arrays).
    /// Every change of the keys resets it to 0 ([`dense_mut`](Self::dense_mut)); only a
    /// world's spawn (identical appends to pools that were equal), destroy (the same swap
    /// removal in each) and in-place respawn (the same row re-keyed in each,
    /// [`replace_key`](Self::replace_key)) hand a shared stamp on. Lets a join of such pools
    /// zip their slices.
    layout: u64,
    /// Bound by a world (`WorldOps::try_bind`): every entry is of an entity alive in the
    /// registry (the release invariant), so two such pools holding a slot hold the same
    /// generation there.
    live: bool,
    /// *Cluster stamp* ([`cluster`](fn@crate::world::cluster)): 0, or a stamp that only pools
    /// clustered together share while none of them changed its keys since but by an in-place
    /// respawn (a row re-keyed where it stands: [`replace_key`](Self::replace_key)); reset
    /// with the layout stamp by [`dense_mut`](Self::dense_mut). Then `runs[..run_count]`
    /// partition the entries by their signature as the last `cluster` recorded it, in
    /// ascending order; restricted to the pools still holding the stamp, a run's signature is
    /// the membership of each entity in it (*cluster invariant*). `cluster_bit` is this
    /// pool's bit in the signatures.
    cluster: u64,
    cluster_bit: u32,
    /// The bits of every pool of the cluster.
    cluster_all: u32,
    runs: [Run; MAX_RUNS],
    run_count: usize,
}

impl<T: Component> ComponentPool<T, Global> {
    /// A pool for `registry`'s entities on the global allocator.
    ///
    /// # Errors
    /// [`InitError::Allocation`].
    pub fn try_new<B: Allocator + Clone>(
        registry: &mut EntityRegistry<B>,
    ) -> Result<Self, InitError> {
        Self::try_new_in(registry, Global)
    }
}

impl<T: Component, A: Allocator + Clone> ComponentPool<T, A> {
    /// A pool for `registry`'s entities whose three arrays come from `alloc`. Binding takes
    /// the registry exclusively (it counts its pools), so no pool can be bound to a world's
    /// registry behind the world's back.
    ///
    /// # Errors
    /// [`InitError::Allocation`].
    pub fn try_new_in<B: Allocator + Clone>(
        registry: &mut EntityRegistry<B>,
        alloc: A,
    ) -> Result<Self, InitError> {
        let mut pool = Self::try_unbound_in(registry.capacity(), alloc)?;
        pool.bind(registry);
        Ok(pool)
    }

    /// A pool of `capacity` entries bound to no registry yet (owner 0 matches no handle and
    /// refuses every change); lets a world allocate its pools before its registry issues the
    /// owner token, so a failed init consumes no token. See [`bind`](Self::bind).
    ///
    /// # Errors
    /// [`InitError::Allocation`].
    pub fn try_unbound_in(capacity: usize, alloc: A) -> Result<Self, InitError> {
        Ok(Self {
            owner: 0,
            capacity,
            packed: [0; MAX_GROUP_MEMBERS],
            sparse: reserve::filled(capacity, NO_ENTRY, alloc.clone())?,
            keys: reserve::reserve(capacity, alloc.clone())?,
            values: reserve::reserve(capacity, alloc.clone())?,
            bits: reserve::filled(words_for(capacity), 0, alloc)?,
            order: Order::EMPTY,
            layout: 0,
            live: false,
            cluster: 0,
            cluster_bit: 0,
            cluster_all: 0,
            runs: [Run::EMPTY; MAX_RUNS],
            run_count: 0,
        })
    }

    /// Binds an unbound pool (from [`try_unbound_in`](Self::try_unbound_in)) to `registry`,
    /// which counts it ([`EntityRegistry::bound_pools`]); returns false, changing nothing, when
    /// the pool is already bound, the registry has no owner token yet, or their capacities
    /// differ.
    pub fn bind<B: Allocator + Clone>(&mut self, registry: &mut EntityRegistry<B>) -> bool {
        let ok = self.owner == 0
            && registry.owner() != 0
            && self.is_empty()
            && self.capacity == registry.capacity();
        if ok {
            self.owner = registry.owner();
            registry.note_bound_pool();
        }
        ok
    }

    /// [`bind`](Self::bind) for a world's registry (behind [`ReadOnly`](crate::world::store::read_only::ReadOnly)),
    /// whose slots are released only after every bound pool left them, or (an in-place
    /// respawn) right before their next incarnation takes over every row they had.
    pub(crate) fn bind_world<B: Allocator + Clone>(
        &mut self,
        registry: &mut EntityRegistry<B>,
    ) -> bool {
        self.live = self.bind(registry);
        self.live
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

    /// Entity capacity, fixed at init (the registry's).
    #[inline]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Owner token of the registry this pool belongs to.
    #[inline]
    pub fn owner(&self) -> OwnerToken {
        self.owner
    }

    #[inline(always)]
    pub(crate) fn index(&self) -> Index<'_> {
        Index {
            owner: self.owner,
            keys: &self.keys,
            sparse: &self.sparse,
            bits: &self.bits,
            order: self.order,
            layout: self.layout,
            live: self.live,
            cluster: self.cluster,
            cluster_bit: self.cluster_bit,
            runs: recorded_runs(&self.runs, self.run_count),
        }
    }

    /// Whether the dense order is ascending slot order (then joins find each entry by
    /// counting membership bits instead of a lookup). True after inserts in slot order (a
    /// batch spawn, a fresh world filled in creation order) and after
    /// [`sort_by_slot`](Self::sort_by_slot); a swap removal of any entry but the last, or a
    /// group's packing, clears it.
    #[inline]
    pub fn is_slot_sorted(&self) -> bool {
        self.order.sorted
    }

    /// Puts the dense arrays in ascending slot order, in `O(len)` swaps with no allocation,
    /// and returns true; refuses (false, changing nothing) when the pool belongs to an owned
    /// group that packs entities (its prefix order belongs to the group). Not a membership
    /// change: allowed in every phase, handles stay valid.
    pub fn sort_by_slot(&mut self) -> bool {
        if self.packs_a_group() {
            return false;
        }
        if self.order.sorted {
            return true;
        }
        let mut dense = self.dense_mut();
        dense.sort_by_slot();
        dense.finish();
        true
    }

    /// Sorts the entries by signature (`own` plus the bits of the `others` pools holding the
    /// entity), then slot, and records the runs under the cluster `stamp` (see
    /// [`cluster`](fn@crate::world::cluster), which checked the pools). At most `MAX_CLUSTER - 1`
    /// others.
    pub(crate) fn sort_by_signature(&mut self, own: u32, others: &[(u32, &[u64])], stamp: u64) {
        let mut runs = [Run::EMPTY; MAX_RUNS];
        let mut dense = self.dense_mut();
        let n = dense.sort_by_signature(own, others, &mut runs);
        dense.finish();
        self.runs = runs;
        self.run_count = n;
        self.cluster_bit = own;
        self.cluster_all = others.iter().fold(own, |a, &(bit, _)| a | bit);
        self.cluster = stamp;
    }

    /// The cluster stamp (0: none), this pool's bit and the bits of its whole cluster.
    #[inline(always)]
    pub(crate) fn cluster_id(&self) -> (u64, u32, u32) {
        (self.cluster, self.cluster_bit, self.cluster_all)
    }

    /// The membership bitset (one bit per slot).
    #[inline(always)]
    pub(crate) fn member_bits(&self) -> &[u64] {
        &self.bits
    }

    /// Whether the pool's lookup structures are exact (`O(capacity)`; for tests and
    /// debugging): the sparse map names the dense index of each entry off its diagonal (not
    /// at the index equal to its slot) and no index for any other slot, the membership bitset
    /// holds exactly the entries' slots, no slot is stored twice, and the order fact
    /// ([`is_slot_sorted`](Self::is_slot_sorted)) holds.
    pub fn check_index(&self) -> bool {
        self.index().is_exact()
    }

    /// Whether a world bound this pool (every entry is of a live entity: the release
    /// invariant).
    #[inline(always)]
    pub(crate) fn is_world_pool(&self) -> bool {
        self.live
    }

    /// Whether this pool belongs to an owned group that packs entities.
    #[inline(always)]
    pub(crate) fn packs_a_group(&self) -> bool {
        self.packed.iter().any(|&n| n > 0)
    }

    /// Whether some entry holds `slot` (any generation): its membership bit.
    #[inline(always)]
    pub(crate) fn holds_slot(&self, slot: u32) -> bool {
        crate::world::raw::dense::member(&self.bits, slot)
    }

    /// The layout stamp (see the field).
    #[inline(always)]
    pub(crate) fn layout(&self) -> u64 {
        self.layout
    }

    /// The stamp this pool may share with another pool before an identical change to both:
    /// `Some(1)` when empty (all empty pools of an owner are equal), its nonzero stamp, or
    /// `None` (its keys are its own).
    #[inline(always)]
    pub(crate) fn layout_class(&self) -> Option<u64> {
        if self.keys.is_empty() {
            Some(1)
        } else {
            (self.layout != 0).then_some(self.layout)
        }
    }

    /// Restores or sets the layout stamp after a change the caller made identically to every
    /// pool of the class (layout invariant; world code only).
    #[inline(always)]
    pub(crate) fn set_layout(&mut self, stamp: u64) {
        self.layout = stamp;
    }

    /// Dense index of `entity`'s value, validated against the full owner.
    #[inline(always)]
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
            bits: &self.bits,
            order: self.order,
            layout: self.layout,
            live: self.live,
            cluster: self.cluster,
            cluster_bit: self.cluster_bit,
            runs: recorded_runs(&self.runs, self.run_count),
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

    /// Runs `update` on every value in dense order and hands `selected` the owner of each
    /// value for which it returned `true`, in dense order: a timer or lifetime pass that
    /// collects what expired.
    ///
    /// Values are visited in blocks of [`SELECT_BLOCK`]: `update` runs over a whole block, its
    /// results are gathered into a bit mask without branches, and only then are the block's
    /// selected owners read. The update loop holds no push, so an inlinable, branch-free
    /// `update` can compile to a vector loop (it does for a lifetime decrement and compare on
    /// the baseline x86-64 target), and owners are loaded only where something was selected.
    ///
    /// Calls to `update` and `selected` interleave per block, not per value: `update` must not
    /// depend on what `selected` has seen (a shared budget of selections would be overrun). A
    /// panic in `update` leaves the pool valid, with the values before it updated, but the
    /// selections of its block are never handed to `selected`.
    pub fn update_select(
        &mut self,
        mut update: impl FnMut(&mut T) -> bool,
        mut selected: impl FnMut(EntityId),
    ) {
        let (owners, values) = self.split_mut();
        for (block, chunk) in values.chunks_mut(SELECT_BLOCK).enumerate() {
            let mut flags = [0u8; SELECT_BLOCK];
            for (flag, value) in flags.iter_mut().zip(chunk.iter_mut()) {
                *flag = u8::from(update(value));
            }
            let mut mask = gather_flags(&flags);
            while mask != 0 {
                let i = block * SELECT_BLOCK + mask.trailing_zeros() as usize;
                // Owners and values are parallel (the pool's invariant).
                if let Some(e) = owners.get(i) {
                    selected(e);
                }
                mask &= mask - 1;
            }
        }
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
        registry.check_member_change(entity)
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

    /// Appends the value of an entity whose slot has no entry here, without looking it up.
    ///
    /// # Safety
    /// `entity`'s slot has no entry in this pool (for the world's spawns: see the release
    /// invariant in [`WorldOps::destroy`](crate::world::world_ops::WorldOps::destroy) and the provenance
    /// invariant above).
    #[inline(always)]
    pub(crate) unsafe fn insert_first(&mut self, entity: EntityId, value: T) {
        debug_assert_eq!(entity.owner(), self.owner, "{entity:?}");
        let mut dense = self.dense_mut();
        debug_assert!(
            dense.find_slot(entity.slot()).is_none(),
            "{entity:?}: its slot already has an entry"
        );
        // SAFETY: `entity`'s slot has no entry in this pool (this function's contract).
        unsafe { dense.append(EntityKey::of(entity), value) };
        dense.finish();
    }

    /// [`insert`](Self::insert) after the caller checked the change (phase, `entity` alive in
    /// this pool's registry, budget); returns the previous value and whether `entity` newly
    /// joined the pool (the caller then advances the registry's revision). Whatever the
    /// caller checked, the pool keeps its own invariants: one entry per slot.
    #[inline(always)]
    pub(crate) fn insert_validated(&mut self, entity: EntityId, value: T) -> (Option<T>, bool) {
        debug_assert_eq!(entity.owner(), self.owner);
        let mut dense = self.dense_mut();
        let inserted = dense.insert(EntityKey::of(entity), value);
        dense.finish();
        inserted
    }

    /// The dense arrays under a run of membership changes; resets the layout stamp (the
    /// keys may change).
    #[inline(always)]
    fn dense_mut(&mut self) -> DenseMut<'_, T, A> {
        self.layout = 0;
        self.cluster = 0;
        // SAFETY: 1. `keys` and `values` have equal lengths and reserved `capacity` each: both
        //    are reserved at init and change only through `DenseMut`, which never grows them
        //    past the capacity and sets both lengths at once (`finish`);
        // 2. the arrays hold the dense module's invariants: they are established empty at
        //    init and every change goes through `DenseMut`'s methods, which keep them.
        unsafe {
            DenseMut::new(
                self.capacity,
                &mut self.keys,
                &mut self.values,
                &mut self.sparse,
                &mut self.bits,
                &mut self.order,
            )
        }
    }

    /// Length of the packed prefix of this pool's group of `size` members (0 when it is in
    /// no such group of a world).
    #[inline(always)]
    pub(crate) fn packed(&self, size: usize) -> usize {
        size.checked_sub(1)
            .and_then(|k| self.packed.get(k))
            .copied()
            .unwrap_or(0)
    }

    /// Sets the prefix length of this pool's group of `size` members (the world's group code
    /// only).
    #[inline(always)]
    pub(crate) fn set_packed(&mut self, size: usize, packed: usize) {
        if let Some(n) = size.checked_sub(1).and_then(|k| self.packed.get_mut(k)) {
            *n = packed;
        }
    }

    /// Gives each of `entities` the value at the same index of `values` (replacing previous
    /// ones), all or nothing; returns how many entities newly joined the pool. A repeated
    /// entity keeps its last value.
    ///
    /// # Errors
    /// [`WorldError::LengthMismatch`], [`WorldError::InvalidPhase`],
    /// [`WorldError::ForeignPool`], [`WorldError::Rejected`] (the first entity not alive) or
    /// [`WorldError::RevisionExhausted`]; nothing changes.
    pub fn insert_batch<B: Allocator + Clone>(
        &mut self,
        registry: &mut EntityRegistry<B>,
        entities: &[EntityId],
        values: &[T],
    ) -> Result<usize, WorldError> {
        self.check_batch(registry, entities, values.len())?;
        let joined = self.insert_batch_checked(registry, entities, values)?;
        registry.advance_revision(joined as u64);
        Ok(joined)
    }

    /// Removes each of `entities`' values, all or nothing; returns how many were removed.
    ///
    /// Dense order afterwards: a batch at least half as long as the pool marks its entries and
    /// compacts the survivors in one pass, keeping their relative order; a smaller batch swap
    /// removes entry by entry, in batch order (as [`remove`](Self::remove)). Either way the
    /// order depends only on the operation sequence.
    ///
    /// # Errors
    /// As [`insert_batch`](Self::insert_batch), except the length mismatch; nothing changes.
    pub fn remove_batch<B: Allocator + Clone>(
        &mut self,
        registry: &mut EntityRegistry<B>,
        entities: &[EntityId],
    ) -> Result<usize, WorldError> {
        registry.check_phase()?;
        if registry.owner() != self.owner {
            return Err(WorldError::ForeignPool);
        }
        registry.check_revisions(entities.len() as u64)?;
        let removed = self.remove_batch_checked(registry, entities)?;
        registry.advance_revision(removed as u64);
        Ok(removed)
    }

    fn check_batch<B: Allocator + Clone>(
        &self,
        registry: &EntityRegistry<B>,
        entities: &[EntityId],
        values: usize,
    ) -> Result<(), WorldError> {
        if entities.len() != values {
            return Err(WorldError::LengthMismatch {
                entities: entities.len(),
                values,
            });
        }
        registry.check_phase()?;
        if registry.owner() != self.owner {
            return Err(WorldError::ForeignPool);
        }
        registry.check_revisions(entities.len() as u64)
    }

    /// [`insert_batch`](Self::insert_batch) after the caller checked the lengths, the phase,
    /// the revision budget and that this pool belongs to `registry`; checks that every entity
    /// is alive in the same pass as the appends and returns the number that newly joined.
    ///
    /// # Errors
    /// [`WorldError::Rejected`] for the first entity not alive; nothing changes.
    // Out of line: its loops get the registers to themselves.
    #[inline(never)]
    pub(crate) fn insert_batch_checked<B: Allocator + Clone>(
        &mut self,
        registry: &EntityRegistry<B>,
        entities: &[EntityId],
        values: &[T],
    ) -> Result<usize, WorldError> {
        debug_assert_eq!(registry.owner(), self.owner);
        debug_assert_eq!(entities.len(), values.len());
        let mut dense = self.dense_mut();
        let joined = dense.insert_all(entities, values, |e| registry.is_alive(e));
        dense.finish();
        joined.map_err(|dead| registry.check_alive(dead).unwrap_err())
    }

    /// [`remove_batch`](Self::remove_batch) after the caller checked the phase, the revision
    /// budget and that this pool belongs to `registry`; checks that every entity is alive
    /// (fused into the marking pass of a large batch) and returns the number removed.
    ///
    /// # Errors
    /// [`WorldError::Rejected`] for the first entity not alive; nothing changes.
    // Out of line: its loops get the registers to themselves.
    #[inline(never)]
    pub(crate) fn remove_batch_checked<B: Allocator + Clone>(
        &mut self,
        registry: &EntityRegistry<B>,
        entities: &[EntityId],
    ) -> Result<usize, WorldError> {
        debug_assert_eq!(registry.owner(), self.owner);
        if entities.len() >= self.len() / 2 {
            // A large batch: mark (checking liveness on the way), then compact the survivors
            // in one pass (their relative order is kept).
            let mut dense = self.dense_mut();
            let removed = dense.remove_compacting(
                entities,
                |e| registry.is_alive(e),
                |slot| registry.generation_at(slot),
            );
            dense.finish();
            return removed.map_err(|dead| registry.check_alive(dead).unwrap_err());
        }
        // The caller checked phase and budget; a small batch checks liveness first, since swap
        // removals cannot be undone.
        registry.check_all_alive(entities)?;
        let mut dense = self.dense_mut();
        let mut removed = 0;
        for &entity in entities {
            removed += usize::from(dense.remove(EntityKey::of(entity)).is_some());
        }
        dense.finish();
        Ok(removed)
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

    /// [`remove`](Self::remove) after the caller checked the change; the caller advances the
    /// revision when a value is returned.
    #[inline(always)]
    pub(crate) fn remove_validated(&mut self, entity: EntityId) -> Option<T> {
        if entity.owner() != self.owner {
            return None;
        }
        self.remove_key(EntityKey::of(entity))
    }

    /// Removes the entry of `key` (an entity of this pool's registry: the caller compared the
    /// owner tokens), returning its value.
    #[inline(always)]
    pub(crate) fn remove_key(&mut self, key: EntityKey) -> Option<T> {
        if !self.holds_slot(key.slot()) {
            // Not a member: one bitset word read, the keys and the stamp untouched.
            return None;
        }
        let mut dense = self.dense_mut();
        let removed = dense.remove(key);
        dense.finish();
        removed
    }

    /// Gives `old`'s entry to `new` (the next incarnation of its slot) with `value`, at the
    /// same dense index (a commit's in-place replacement). Both stamps are kept: the caller
    /// replaces `old` in every pool still holding it, so pools sharing a layout stamp held
    /// `old` at the same index and all end with `new` there; and among the pools that keep a
    /// cluster stamp the slot's membership is unchanged (a pool that lost or gained it reset
    /// its own), so the row's run stays exact for them. `false` when `old` has no entry
    /// (nothing changed).
    pub(crate) fn replace_key(&mut self, old: EntityKey, new: EntityKey, value: T) -> bool {
        let (layout, cluster) = (self.layout, self.cluster);
        let mut dense = self.dense_mut();
        let replaced = dense.replace_key(old, new, value);
        dense.finish();
        self.layout = layout;
        self.cluster = cluster;
        replaced
    }

    /// Removes the entries of `keys` in order (entities of this pool's registry: the caller
    /// compared the owner tokens; each key held at most once), each by swap removal as
    /// [`remove_key`](Self::remove_key) would, under one borrow of the dense arrays; returns
    /// how many it held. A key whose slot is not a member costs one bitset word.
    #[inline(always)]
    pub(crate) fn remove_keys(&mut self, keys: impl Iterator<Item = EntityKey>) -> u64 {
        let mut dense = self.dense_mut();
        let mut removed = 0;
        for key in keys {
            if dense.holds_slot(key.slot()) {
                removed += u64::from(dense.remove(key).is_some());
            }
        }
        dense.finish();
        removed
    }

    /// Swaps dense positions `i` and `j` (both `< len`), keeping the lookup invariant.
    /// Used by owned groups; order-only, not a membership change.
    #[inline]
    pub(crate) fn swap_dense(&mut self, i: usize, j: usize) {
        let mut dense = self.dense_mut();
        dense.swap(i, j);
        dense.finish();
    }

    /// Reserves `n` dense entries past the end for a batch of fresh slots, returning a writer
    /// for their values; `None` (changing nothing) when fewer than `n` entries are free.
    #[inline]
    pub(crate) fn batch_writer(&mut self, n: usize) -> Option<BatchWriter<'_, T, A>> {
        let len = self.values.len();
        if self.capacity - len < n || self.values.capacity() - len < n {
            return None;
        }
        // SAFETY: `len <= capacity()` of the allocation, so the pointer is at most one past
        // the end.
        let next = unsafe { self.values.as_mut_ptr().add(len) };
        Some(BatchWriter {
            next,
            reserved: n,
            pool: self,
        })
    }
}

/// Writes a batch's values into a pool's reserved, unused dense capacity, then publishes them
/// as the entries of fresh slots. Holds the pool exclusively, so nothing else changes it
/// between the reservation and the publish.
pub struct BatchWriter<'p, T: Component, A: Allocator + Clone> {
    /// `values.as_mut_ptr() + len` of the pool when reserved; `reserved` entries are free.
    next: *mut T,
    reserved: usize,
    pool: &'p mut ComponentPool<T, A>,
}

impl<T: Component, A: Allocator + Clone> BatchWriter<'_, T, A> {
    /// Where the batch's values go, as a copyable cursor (kept in a register by the write
    /// loop; a `&mut` to the writer would be reloaded on every write).
    #[inline(always)]
    pub(crate) fn cursor(&self) -> BatchCursor<T> {
        BatchCursor { next: self.next }
    }

    /// Publishes the first `count` written values as the entries of the fresh slots
    /// `first..first + count` at `generation`. Panics, publishing nothing, when `count`
    /// exceeds the reservation or the slots do not fit the pool (checked once per batch).
    ///
    /// # Safety
    /// Values `0..count` were written with [`write`](Self::write), and none of the slots has
    /// an entry in this pool (for example: slots the pool's registry has just created for the
    /// first time; provenance invariant of [`ComponentPool`]).
    pub(crate) unsafe fn publish(self, first: u32, count: usize, generation: u32) {
        if count > self.reserved {
            out_of_reservation(count, self.reserved);
        }
        let mut dense = self.pool.dense_mut();
        // SAFETY: 1. the values `len..len + count` were written through `next` (this
        //    function's contract), which was the pool's `len` when reserved and is unchanged
        //    (the writer borrows the pool exclusively);
        // 2. the slots have no entry (this function's contract).
        // `append_written` checks the capacity itself.
        unsafe { dense.append_written(first, count, generation) };
        dense.finish();
    }
}

impl<T: Component, A: Allocator + Clone> core::fmt::Debug for BatchWriter<'_, T, A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("BatchWriter")
            .field("reserved", &self.reserved)
            .finish()
    }
}

/// The write position of a [`BatchWriter`]: copyable, valid while the writer lives and has not
/// published.
pub struct BatchCursor<T> {
    next: *mut T,
}

impl<T> Clone for BatchCursor<T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for BatchCursor<T> {}

impl<T> core::fmt::Debug for BatchCursor<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("BatchCursor")
    }
}

impl<T: Component> BatchCursor<T> {
    /// Writes the `k`-th value of the batch.
    ///
    /// # Safety
    /// The writer this cursor came from is alive and has not published, and `k` is below the
    /// `n` it was reserved for.
    #[inline(always)]
    pub(crate) unsafe fn write(self, k: usize, value: T) {
        // SAFETY: `k < n` (caller) and the writer's pool had `n` unused entries past its
        // length at `next`; the writer is alive and unpublished (caller) and borrows the pool
        // exclusively, so nothing changed it: the write is in bounds of the allocation and
        // overwrites no published value.
        unsafe { self.next.add(k).write(value) }
    }
}

/// Values per block of [`ComponentPool::update_select`]: one bit each in a `u64` mask.
pub const SELECT_BLOCK: usize = 64;

/// Bit `i` of the result is `flags[i]`, each flag 0 or 1: eight flags per multiply (the
/// constant's bytes place flag `j` of a word at bit `56 + j`, and no two products overlap).
#[inline(always)]
fn gather_flags(flags: &[u8; SELECT_BLOCK]) -> u64 {
    let mut mask = 0u64;
    for (k, word) in flags.chunks_exact(8).enumerate() {
        let word = u64::from_le_bytes(word.try_into().expect("chunks of eight bytes"));
        mask |= (word.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * k);
    }
    mask
}

/// Panics for a publish larger than its reservation.
#[cold]
#[inline(never)]
#[track_caller]
fn out_of_reservation(count: usize, reserved: usize) -> ! {
    panic!("publish of {count} values, {reserved} reserved")
}

impl<T: Component, A: Allocator + Clone> core::fmt::Debug for ComponentPool<T, A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ComponentPool")
            .field("type", &core::any::type_name::<T>())
            .field("owner", &self.owner)
            .field("len", &self.len())
            .field("capacity", &self.capacity)
            .finish()
    }
}

/// A pool's recorded runs, `runs[..count]`. `count <= MAX_RUNS` holds (`sort_by_signature`
/// fills at most the array); the `min` instead of a bounds check keeps this free of a panic
/// path, so an [`Index`] built for a lookup, which never reads its runs, costs nothing for
/// them. (A free function over the two fields, so it borrows them apart from the values.)
#[inline(always)]
fn recorded_runs(runs: &[Run; MAX_RUNS], count: usize) -> &[Run] {
    &runs[..count.min(MAX_RUNS)]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pattern of one 8-flag word, at each of the eight word positions, with the other
    /// words all clear and all set (under Miri, every 17th pattern: the function has no
    /// unsafe code, and the whole set costs a minute there).
    #[test]
    fn gather_flags_sets_bit_i_for_flag_i() {
        let step = if cfg!(miri) { 17 } else { 1 };
        for others in [0u8, 1] {
            for k in 0..SELECT_BLOCK / 8 {
                for pattern in (0..=255u8).step_by(step) {
                    let mut flags = [others; SELECT_BLOCK];
                    for j in 0..8 {
                        flags[8 * k + j] = pattern >> j & 1;
                    }
                    let naive = flags
                        .iter()
                        .enumerate()
                        .fold(0u64, |m, (i, &f)| m | u64::from(f) << i);
                    assert_eq!(
                        gather_flags(&flags),
                        naive,
                        "word {k}, pattern {pattern:#x}"
                    );
                }
            }
        }
    }

    /// Every probe order finds exactly the entries `dense_of` finds (other generations and
    /// removed entries included; `Exact`, which trusts the sparse map, for the live keys it
    /// is meant for), and `probe_for` picks the order that matches where a driver's keys sit:
    /// at the driver's rows, on their diagonal, or elsewhere.
    #[test]
    fn probes_find_every_entry_and_follow_the_layout() {
        use crate::world::raw::dense::Probe;
        const N: u32 = 40;
        let mut reg = EntityRegistry::try_with_capacity(64).unwrap();
        let mut pool = || ComponentPool::<u32>::try_new(&mut reg).unwrap();
        let (mut driver, mut twin, mut diagonal, mut shuffled) = (pool(), pool(), pool(), pool());
        let e: std::vec::Vec<EntityId> = (0..N).map(|_| reg.try_create().unwrap()).collect();
        for i in 0..N as usize {
            let r = e[N as usize - 1 - i];
            driver.insert(&mut reg, r, 0).unwrap();
            twin.insert(&mut reg, r, 1).unwrap();
            diagonal.insert(&mut reg, e[i], 2).unwrap();
            shuffled.insert(&mut reg, e[i * 7 % N as usize], 3).unwrap();
        }
        for &gone in &[e[3], e[20], e[33]] {
            twin.remove(&mut reg, gone).unwrap();
            diagonal.remove(&mut reg, gone).unwrap();
            shuffled.remove(&mut reg, gone).unwrap();
        }
        let keys = driver.index().keys;
        assert_eq!(twin.index().probe_for(keys), Probe::Near);
        assert_eq!(diagonal.index().probe_for(keys), Probe::Diagonal);
        assert_eq!(shuffled.index().probe_for(keys), Probe::Sparse);
        assert_eq!(driver.index().probe_for(&[]), Probe::Near);
        for p in [&twin, &diagonal, &shuffled] {
            let ix = p.index();
            assert!(p.check_index());
            for (i, &id) in e.iter().enumerate() {
                let key = EntityKey::of(id);
                assert_eq!(ix.dense_of_key_by(key, i, Probe::Exact), ix.dense_of(id));
                let stale = EntityId::from_raw_parts(id.owner(), id.slot(), id.generation() + 1);
                for x in [id, stale] {
                    let key = EntityKey::of(x);
                    for probe in [Probe::Near, Probe::Diagonal, Probe::Sparse] {
                        for hint in [i, N as usize - 1 - i, usize::MAX] {
                            assert_eq!(ix.dense_of_key_by(key, hint, probe), ix.dense_of(x));
                        }
                    }
                }
            }
        }
    }

    /// Debug builds check `publish`'s precondition that the slots have no entry.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "already have entries")]
    fn publishing_slots_that_have_entries_panics_in_debug() {
        let mut reg = EntityRegistry::try_with_capacity(8).unwrap();
        let mut pool = ComponentPool::<u32>::try_new(&mut reg).unwrap();
        for _ in 0..3 {
            let e = reg.try_create().unwrap();
            pool.insert(&mut reg, e, 1).unwrap();
        }
        let writer = pool.batch_writer(2).unwrap();
        let cursor = writer.cursor();
        // SAFETY: `0, 1 < 2`, the reservation, and both values are written; the publish breaks
        // its precondition on purpose (slot 2 has an entry), which the debug check refuses
        // before any write.
        unsafe {
            cursor.write(0, 7);
            cursor.write(1, 8);
            writer.publish(2, 2, 1);
        }
    }

    /// The capacity is checked in release builds too.
    #[test]
    #[should_panic(expected = "does not fit")]
    fn publishing_past_the_capacity_panics() {
        let mut reg = EntityRegistry::try_with_capacity(4).unwrap();
        let mut pool = ComponentPool::<u32>::try_new(&mut reg).unwrap();
        let writer = pool.batch_writer(2).unwrap();
        let cursor = writer.cursor();
        // SAFETY: `0, 1 < 2` and both values are written; slots 3 and 4 have no entry, and
        // slot 4 is past the capacity, which `publish` refuses before any write.
        unsafe {
            cursor.write(0, 7);
            cursor.write(1, 8);
            writer.publish(3, 2, 1);
        }
    }

    #[test]
    fn publishing_fresh_slots_appends_them() {
        let mut reg = EntityRegistry::try_with_capacity(8).unwrap();
        let mut pool = ComponentPool::<u32>::try_new(&mut reg).unwrap();
        let e = reg.try_create().unwrap();
        pool.insert(&mut reg, e, 1).unwrap();
        let writer = pool.batch_writer(2).unwrap();
        let cursor = writer.cursor();
        // SAFETY: as above.
        unsafe {
            cursor.write(0, 7);
            cursor.write(1, 8);
            writer.publish(1, 2, 1);
        }
        assert_eq!(pool.values(), &[1, 7, 8]);
        let owner = reg.owner();
        assert_eq!(pool.get(EntityId::from_raw_parts(owner, 2, 1)), Some(&8));
        assert!(pool.batch_writer(5).is_some() && pool.batch_writer(6).is_none());
    }
}
