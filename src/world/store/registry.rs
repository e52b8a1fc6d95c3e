//! `EntityRegistry`: fixed-capacity slot allocator that issues and validates [`EntityId`]s.
//!
//! ```text
//!  slot:        0         1          2           3     ...  meta.len() ..... capacity
//!  meta:      [g3|0]   [g2|FREE]  [g7|2|PEND]  [gMAX|RET]    (not stored: g1|FREE)
//!  sequence:  [  17  ] [  --  ]   [   4  ]    [  --  ]      (creation sequence while alive)
//!  free:      [1, ...]                 LIFO stack of released, reusable slots (top: free_len)
//! ```
//!
//! `meta[slot]` is `generation << 32 | low`: while the slot is live, `low` is the slot itself,
//! so the word equals the handle's own `slot | generation << 32` and `is_active` is one load and
//! one compare (`is_alive` masks the pending bit first); free and retired slots hold markers
//! above every slot in `low` (hence [`MAX_CAPACITY`] `= 2^31 - 2`). Slots `>= high` were never
//! created; `create` pops the free list first, then takes `high`. The per-slot arrays grow
//! lazily within the capacity reserved at init (no reallocation, and init writes nothing):
//! `meta.len() >= high` (entries in `[high, meta.len())` are free; slots past `meta.len()` are
//! implicitly free at [`FIRST_GENERATION`]) and `sequence.len() == high`. The free stack is
//! filled at init (its pages are resident before the first release) and `free[..free_len]`
//! holds the released slots; pops read independent addresses (a list threaded through the
//! slots would make every create wait for the previous one's load). Accounting invariant:
//! `alive + retired + free_len + (capacity - high) == capacity`.
//!
//! Pending-destruction marks are set through `&self` (command recording), so `meta` is atomic;
//! every access is `Relaxed`: the registry is mutated by one owner thread and read by jobs the
//! owner joins before the next structural change.

use allocator_api2::alloc::{Allocator, Global};
use allocator_api2::vec::Vec;

use crate::identity::{
    next_generation, GenerationStep, IdentityExhausted, OwnerToken, TokenSource, FIRST_GENERATION,
    TERMINAL_GENERATION,
};
use crate::sync::{AtomicU64, Ordering::Relaxed};
use crate::world::raw::keys::EntityId;
use crate::world::store::error::InitError;
use crate::world::store::error::Rejection;
use crate::world::store::error::WorldError;
use crate::world::store::reserve;

// `meta[slot] = generation << 32 | low`, where `low` is the slot itself while the slot is live
// (so a live, not pending slot's meta equals the incarnation word `slot | generation << 32` of
// its handle and `is_active` is one compare), with `PENDING` set while its destruction is
// recorded, and one of two markers (above every slot) while free or retired.
const LOW: u64 = u32::MAX as u64;
const PENDING: u64 = 1 << 31;
const FREE_LOW: u64 = LOW;
const RETIRED_LOW: u64 = LOW - 1;

/// Meta of a live, not pending incarnation: its handle's incarnation word.
#[inline(always)]
const fn live(slot: u32, generation: u32) -> u64 {
    (generation as u64) << 32 | slot as u64
}

/// Meta of a free slot that will be created at `generation`.
#[inline(always)]
const fn free(generation: u32) -> u64 {
    (generation as u64) << 32 | FREE_LOW
}

/// Meta of a retired slot.
const RETIRED: u64 = (TERMINAL_GENERATION as u64) << 32 | RETIRED_LOW;

/// The generation a meta word holds.
#[inline(always)]
const fn generation_of(meta: u64) -> u32 {
    (meta >> 32) as u32
}

/// A token from the process-wide source.
#[cfg(not(loom))]
pub(crate) fn process_owner_token() -> Result<OwnerToken, IdentityExhausted> {
    crate::identity::issue_owner_token()
}

/// Under loom there is no process-wide source (loom atomics cannot be `static`): models build
/// registries with [`EntityRegistry::try_with_capacity_and_tokens`].
#[cfg(loom)]
pub(crate) fn process_owner_token() -> Result<OwnerToken, IdentityExhausted> {
    Err(IdentityExhausted)
}

/// Largest supported capacity, `2^31 - 2`: a live slot's meta holds the slot in its low 31 bits
/// and the two values above every slot mark free and retired slots.
pub const MAX_CAPACITY: usize = (1 << 31) - 2;

/// A fixed-capacity registry of entity slots with generations, owner token, pending
/// destruction, creation sequence and structural revision.
///
/// All memory is allocated from `A` at init; create, validate and release allocate nothing.
///
/// # Examples
/// ```
/// use ludus::world::EntityRegistry;
/// let mut reg = EntityRegistry::try_with_capacity(2)?;
/// let e = reg.try_create()?;
/// assert!(reg.is_active(e));
/// reg.try_release(e)?;
/// assert!(!reg.is_alive(e));
/// let again = reg.try_create()?; // LIFO reuse of slot 0 at the next generation
/// assert_eq!((again.slot(), again.generation()), (0, 2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct EntityRegistry<A: Allocator + Clone = Global> {
    /// Owner token of this registry lifetime; nonzero.
    owner: OwnerToken,
    /// Slots fixed at init.
    capacity: usize,
    /// Per slot: `generation << 32 | low`; `high <= len <= capacity` (module docs).
    meta: Vec<AtomicU64, A>,
    /// Per created slot: creation sequence of the current incarnation (meaningful while
    /// alive); `len == high`.
    sequence: Vec<u64, A>,
    /// LIFO stack of released reusable slots in `[..free_len]`; `len == capacity`.
    free: Vec<u32, A>,
    /// Number of slots on the free stack.
    free_len: u32,
    /// Slots `>= high` have never been created.
    high: u32,
    alive: u32,
    retired: u32,
    /// Last creation sequence issued (0 before the first).
    last_sequence: u64,
    /// Advances on every structural change.
    revision: u64,
    /// `u64::MAX` inside the structural phase, 0 outside: `revision < revision_end` checks the
    /// phase and one more revision with a single compare.
    revision_end: u64,
    /// Pools bound to this registry so far (each binding needs `&mut self`; none is unbound).
    bound_pools: u32,
    /// Advances whenever every pending mark is cleared at once: buffers holding destroys of an
    /// older epoch lost their marks and refuse to commit.
    mark_epoch: u64,
    /// Last layout stamp handed to this registry's pools (see `ComponentPool`'s layout
    /// invariant); stamps 0 and 1 are reserved.
    layouts: u64,
}

impl EntityRegistry<Global> {
    /// A registry of `capacity` slots on the global allocator with a process-wide owner token.
    ///
    /// # Errors
    /// [`InitError`]: capacity too large, allocation failure or token exhaustion.
    pub fn try_with_capacity(capacity: usize) -> Result<Self, InitError> {
        Self::try_with_capacity_in(capacity, Global)
    }
}

impl<A: Allocator + Clone> EntityRegistry<A> {
    /// A registry of `capacity` slots whose arrays come from `alloc`.
    ///
    /// # Errors
    /// As [`EntityRegistry::try_with_capacity`].
    pub fn try_with_capacity_in(capacity: usize, alloc: A) -> Result<Self, InitError> {
        Self::init(capacity, alloc, process_owner_token)
    }

    /// As [`EntityRegistry::try_with_capacity_in`], taking the owner token from `tokens`
    /// (for tests of token exhaustion and loom models, where there is no process-wide
    /// source). The token is issued last, after every array succeeded.
    ///
    /// # Errors
    /// As [`EntityRegistry::try_with_capacity`].
    ///
    /// # Safety
    /// No other registry or command buffer alive in the process at the same time holds a
    /// token `tokens` issues: owner tokens are what keep one registry from validating (and
    /// releasing) another's handles, and one pool from holding two registries' entities.
    /// A [`TokenSource`] used only by one test or model, with every registry of that test
    /// made from it, satisfies this; the process-wide source's tokens never collide with it
    /// only if its range is disjoint, which nothing checks. Safe code cannot pick a token:
    ///
    /// ```compile_fail,E0133
    /// use ludus::identity::TokenSource;
    /// use ludus::world::EntityRegistry;
    /// let twin = TokenSource::new(); // issues 1, 2, … like the process-wide source
    /// let reg = EntityRegistry::try_with_capacity_and_tokens(4, allocator_api2::alloc::Global, &twin);
    /// ```
    pub unsafe fn try_with_capacity_and_tokens(
        capacity: usize,
        alloc: A,
        tokens: &TokenSource,
    ) -> Result<Self, InitError> {
        Self::init(capacity, alloc, || tokens.issue())
    }

    /// A registry with every array allocated but no owner token yet (owner 0 matches no
    /// handle and it refuses to create); a world allocates its pools next and then calls
    /// [`issue_owner`](Self::issue_owner), so a failed init consumes no token.
    ///
    /// # Errors
    /// As [`EntityRegistry::try_with_capacity`], except token exhaustion.
    pub fn try_unbound_in(capacity: usize, alloc: A) -> Result<Self, InitError> {
        Self::init(capacity, alloc, || Ok(0))
    }

    /// Issues the process-wide owner token to an unbound registry; returns `Ok` and changes
    /// nothing when it already has one.
    ///
    /// # Errors
    /// [`InitError::IdentityExhausted`].
    pub fn issue_owner(&mut self) -> Result<(), InitError> {
        if self.owner == 0 {
            self.owner = process_owner_token().map_err(|_| InitError::IdentityExhausted)?;
        }
        Ok(())
    }

    fn init(
        capacity: usize,
        alloc: A,
        token: impl FnOnce() -> Result<OwnerToken, IdentityExhausted>,
    ) -> Result<Self, InitError> {
        if capacity > MAX_CAPACITY {
            return Err(InitError::CapacityTooLarge {
                requested: capacity,
                max: MAX_CAPACITY,
            });
        }
        let meta = reserve::reserve(capacity, alloc.clone())?;
        let sequence = reserve::reserve(capacity, alloc.clone())?;
        let free = reserve::filled(capacity, 0, alloc)?;
        let owner = token().map_err(|_| InitError::IdentityExhausted)?;
        Ok(Self {
            owner,
            capacity,
            meta,
            sequence,
            free,
            free_len: 0,
            high: 0,
            alive: 0,
            retired: 0,
            last_sequence: 0,
            revision: 0,
            revision_end: u64::MAX,
            bound_pools: 0,
            mark_epoch: 0,
            layouts: 1,
        })
    }

    /// Owner token of this registry lifetime (nonzero).
    #[inline]
    pub fn owner(&self) -> OwnerToken {
        self.owner
    }

    /// Number of [`ComponentPool`](crate::world::store::pool::ComponentPool)s bound to this registry. Binding
    /// takes `&mut` of the registry, so a world's registry (behind [`ReadOnly`](crate::world::store::read_only::ReadOnly))
    /// gets exactly the pools its world bound at init.
    #[inline]
    pub fn bound_pools(&self) -> usize {
        self.bound_pools as usize
    }

    /// A layout stamp no pool of this registry holds yet; 0 (shares nothing) once exhausted.
    #[inline(always)]
    pub(crate) fn fresh_layout(&mut self) -> u64 {
        if self.layouts == u64::MAX {
            return 0;
        }
        self.layouts += 1;
        self.layouts
    }

    /// Counts one more pool bound to this registry.
    pub(crate) fn note_bound_pool(&mut self) {
        self.bound_pools = self.bound_pools.saturating_add(1);
    }

    /// Number of slots fixed at init.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Slots ever created: every slot that has held an entity is below it.
    #[inline]
    pub(crate) fn created_slots(&self) -> usize {
        self.high as usize
    }

    /// Number of alive entities (live or pending destruction).
    #[inline]
    pub fn len(&self) -> usize {
        self.alive as usize
    }

    /// True when no entity is alive.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.alive == 0
    }

    /// Slots retired at the terminal generation; they count against capacity forever.
    pub fn retired(&self) -> usize {
        self.retired as usize
    }

    /// How many more entities can be created now.
    #[inline]
    pub fn available(&self) -> usize {
        self.free_len as usize + (self.capacity() - self.high as usize)
    }

    /// Last creation sequence issued (0 before the first create).
    pub fn last_sequence(&self) -> u64 {
        self.last_sequence
    }

    /// Structural revision: advances on every create, release, pool insert and pool remove.
    #[inline]
    pub fn structural_revision(&self) -> u64 {
        self.revision
    }

    /// Whether structural changes are accepted now (true after init).
    #[inline]
    pub fn is_structural_phase(&self) -> bool {
        self.revision_end == u64::MAX
    }

    /// Opens (`true`) or closes (`false`) the structural phase. Outside it, create, release and
    /// pool membership changes fail with [`WorldError::InvalidPhase`], in release builds too.
    #[inline]
    pub fn set_structural_phase(&mut self, open: bool) {
        self.revision_end = if open { u64::MAX } else { 0 };
    }

    /// `generation | state` of `slot`; `None` beyond the stored prefix (free at the first
    /// generation, or out of range).
    #[inline(always)]
    fn stored_meta(&self, slot: u32) -> Option<u64> {
        self.meta.get(slot as usize).map(|m| m.load(Relaxed))
    }

    /// Asks for the cache line of `slot`'s entry ahead of a liveness check (a batch of
    /// lookups); nothing for a slot out of range.
    #[inline(always)]
    pub(crate) fn prefetch_slot(&self, slot: u32) {
        if let Some(m) = self.meta.get(slot as usize) {
            crate::hint::prefetch(m);
        }
    }

    #[inline]
    fn meta_of(&self, entity: EntityId) -> Option<u64> {
        if entity.owner() != self.owner {
            return None;
        }
        self.stored_meta(entity.slot())
    }

    /// True when `entity` names a live or pending incarnation of this registry: owner, range,
    /// liveness and generation all match.
    #[inline]
    pub fn is_alive(&self, entity: EntityId) -> bool {
        match self.meta_of(entity) {
            Some(m) => m & !PENDING == live(entity.slot(), entity.generation()),
            None => false,
        }
    }

    /// [`is_alive`](Self::is_alive) and not pending destruction.
    #[inline]
    pub fn is_active(&self, entity: EntityId) -> bool {
        self.meta_of(entity) == Some(live(entity.slot(), entity.generation()))
    }

    /// True when `entity` is alive and its destruction has been recorded.
    pub fn is_pending(&self, entity: EntityId) -> bool {
        self.meta_of(entity) == Some(live(entity.slot(), entity.generation()) | PENDING)
    }

    /// Creation sequence of an alive entity: a strictly increasing number per create, useful
    /// for ordering decisions independent of dense order.
    pub fn creation_sequence(&self, entity: EntityId) -> Option<u64> {
        self.is_alive(entity)
            .then(|| self.sequence[entity.slot() as usize])
    }

    /// The current generation of a created slot (`slot < high`).
    #[inline]
    pub(crate) fn generation_at(&self, slot: u32) -> u32 {
        generation_of(self.meta[slot as usize].load(Relaxed))
    }

    /// The live (or pending) entity at `slot`, if any.
    #[inline]
    pub fn live_at(&self, slot: u32) -> Option<EntityId> {
        let m = self.stored_meta(slot)?;
        (m & LOW & !PENDING == u64::from(slot))
            .then(|| EntityId::from_raw_parts(self.owner, slot, generation_of(m)))
    }

    /// Pending entities and the highest generation any created slot reached (O(capacity):
    /// for observability, not hot paths).
    pub fn census(&self) -> (usize, u32) {
        let (mut pending, mut peak) = (0, 0);
        for m in &self.meta[..self.high as usize] {
            let m = m.load(Relaxed);
            let low = m & LOW;
            pending += usize::from(low != FREE_LOW && low != RETIRED_LOW && m & PENDING != 0);
            peak = peak.max(generation_of(m));
        }
        (pending, peak)
    }

    /// Why `entity` is not active, or `Ok(())` when it is. Cold path for diagnostics.
    ///
    /// # Errors
    /// The first failing check, in order: null, owner, range, state, generation.
    #[cold]
    pub fn diagnose(&self, entity: EntityId) -> Result<(), Rejection> {
        if entity.is_null() {
            return Err(Rejection::Null);
        }
        if entity.owner() != self.owner {
            return Err(Rejection::ForeignOwner);
        }
        if entity.slot() as usize >= self.capacity {
            return Err(Rejection::OutOfRange);
        }
        let m = self
            .stored_meta(entity.slot())
            .unwrap_or(free(FIRST_GENERATION));
        if m & LOW == RETIRED_LOW {
            return Err(Rejection::Retired);
        }
        if m & LOW == FREE_LOW {
            return Err(Rejection::Free);
        }
        if generation_of(m) != entity.generation() {
            return Err(Rejection::Stale);
        }
        if m & PENDING != 0 {
            return Err(Rejection::Pending);
        }
        Ok(())
    }

    /// `Ok` when `entity` is alive (pending allowed), else the rejection reason.
    ///
    /// # Errors
    /// [`WorldError::Rejected`] with the [`diagnose`](Self::diagnose) reason.
    #[inline]
    pub fn check_alive(&self, entity: EntityId) -> Result<(), WorldError> {
        if self.is_alive(entity) {
            Ok(())
        } else {
            Err(self.rejected(entity))
        }
    }

    /// The error of a failed [`check_alive`](Self::check_alive), kept out of the hot path.
    #[cold]
    #[inline(never)]
    fn rejected(&self, entity: EntityId) -> WorldError {
        WorldError::Rejected(self.diagnose(entity).err().unwrap_or(Rejection::Stale))
    }

    /// `Ok` inside the structural phase.
    ///
    /// # Errors
    /// [`WorldError::InvalidPhase`].
    #[inline]
    pub fn check_phase(&self) -> Result<(), WorldError> {
        if self.is_structural_phase() {
            Ok(())
        } else {
            Err(WorldError::InvalidPhase)
        }
    }

    /// `Ok` when one membership change of `entity` (a pool insert or remove) is allowed now:
    /// structural phase, `entity` alive, one revision left. Fused into one budget compare and
    /// the liveness check.
    ///
    /// # Errors
    /// The first that fails, in that order: [`WorldError::InvalidPhase`],
    /// [`WorldError::Rejected`], [`WorldError::RevisionExhausted`].
    #[inline(always)]
    pub fn check_member_change(&self, entity: EntityId) -> Result<(), WorldError> {
        self.check_entity_change(entity, 1)
    }

    /// `Ok` when a structural change of `entity` costing `n >= 1` revisions is allowed now:
    /// structural phase, `entity` alive, `n` revisions left (one add and compare for the phase
    /// and the budget together).
    ///
    /// # Errors
    /// The first that fails, in that order: [`WorldError::InvalidPhase`],
    /// [`WorldError::Rejected`], [`WorldError::RevisionExhausted`].
    #[inline(always)]
    pub fn check_entity_change(&self, entity: EntityId, n: u64) -> Result<(), WorldError> {
        let budget = self
            .revision
            .checked_add(n)
            .is_some_and(|r| r <= self.revision_end);
        if budget && self.is_alive(entity) {
            Ok(())
        } else {
            Err(self.entity_change_error(entity, n))
        }
    }

    /// `Ok` when one membership change of each of `entities` is allowed now (a batch insert
    /// or remove): structural phase, every entity alive, `entities.len()` revisions left.
    ///
    /// # Errors
    /// [`WorldError::InvalidPhase`], then [`WorldError::Rejected`] for the first entity not
    /// alive, then [`WorldError::RevisionExhausted`].
    pub fn check_member_changes(&self, entities: &[EntityId]) -> Result<(), WorldError> {
        self.check_phase()?;
        self.check_all_alive(entities)?;
        self.check_revisions(entities.len() as u64)
    }

    /// `Ok` when every one of `entities` is alive.
    ///
    /// # Errors
    /// [`WorldError::Rejected`] for the first that is not.
    pub(crate) fn check_all_alive(&self, entities: &[EntityId]) -> Result<(), WorldError> {
        match entities.iter().find(|&&e| !self.is_alive(e)) {
            Some(&dead) => Err(self.rejected(dead)),
            None => Ok(()),
        }
    }

    #[cold]
    #[inline(never)]
    fn entity_change_error(&self, entity: EntityId, n: u64) -> WorldError {
        let checks = self
            .check_phase()
            .and_then(|()| self.check_alive(entity))
            .and_then(|()| self.check_revisions(n));
        checks.err().unwrap_or(WorldError::RevisionExhausted)
    }

    /// Checks that `n` more structural revisions are available.
    ///
    /// # Errors
    /// [`WorldError::RevisionExhausted`].
    #[inline]
    pub fn check_revisions(&self, n: u64) -> Result<(), WorldError> {
        if u64::MAX - self.revision >= n {
            Ok(())
        } else {
            Err(WorldError::RevisionExhausted)
        }
    }

    /// Advances the structural revision by `n` after the caller checked the budget with
    /// [`check_revisions`](Self::check_revisions) (saturates rather than wrapping).
    #[inline]
    pub(crate) fn advance_revision(&mut self, n: u64) {
        debug_assert!(
            u64::MAX - self.revision >= n,
            "revision {} + {n}",
            self.revision
        );
        self.revision = self.revision.saturating_add(n);
    }

    /// Checks that `n` entities can be created now (phase, capacity, sequence, revision).
    ///
    /// # Errors
    /// The first budget that is short.
    pub fn check_create_budget(&self, n: usize) -> Result<(), WorldError> {
        self.check_phase()?;
        if (self.owner == 0 && n > 0) || self.available() < n {
            return Err(self.capacity_error(n));
        }
        if u64::MAX - self.last_sequence < n as u64 {
            return Err(WorldError::SequenceExhausted);
        }
        self.check_revisions(n as u64)
    }

    /// The error for `requested` creates that do not fit (an unbound registry has no room).
    #[cold]
    pub(crate) fn capacity_error(&self, requested: usize) -> WorldError {
        WorldError::CapacityExhausted {
            requested,
            available: if self.owner == 0 { 0 } else { self.available() },
            capacity: self.capacity,
            retired: self.retired as usize,
        }
    }

    /// Creates one entity and charges `extra` more revisions (a spawn's inserts), after one
    /// fused check of phase, capacity, sequence and revision budget.
    ///
    /// # Errors
    /// As [`check_create_budget`](Self::check_create_budget)`(1)`, then
    /// [`WorldError::RevisionExhausted`] when `1 + extra` revisions are not left; nothing
    /// changes.
    #[inline(always)]
    pub(crate) fn try_create_charged(&mut self, extra: u64) -> Result<EntityId, WorldError> {
        let room = self.free_len != 0 || (self.high as usize) < self.capacity;
        let budget = self
            .revision
            .checked_add(1 + extra)
            .is_some_and(|r| r <= self.revision_end);
        if !(room & budget & (self.last_sequence != u64::MAX) & (self.owner != 0)) {
            return Err(self.create_error(extra));
        }
        let entity = self.create_unbudgeted();
        self.revision += extra; // within the budget checked above
        Ok(entity)
    }

    #[cold]
    #[inline(never)]
    fn create_error(&self, extra: u64) -> WorldError {
        let checks = self
            .check_create_budget(1)
            .and_then(|()| self.check_revisions(1 + extra));
        checks.err().unwrap_or(WorldError::RevisionExhausted)
    }

    /// Creates an entity. LIFO: the most recently released slot is reused first, then fresh
    /// slots in increasing order.
    ///
    /// # Errors
    /// [`WorldError::InvalidPhase`], [`WorldError::CapacityExhausted`],
    /// [`WorldError::SequenceExhausted`] or [`WorldError::RevisionExhausted`]; nothing changes.
    #[inline]
    pub fn try_create(&mut self) -> Result<EntityId, WorldError> {
        // One fused check: room, sequence, owner, and phase with one revision left
        // (`revision_end` is 0 outside the phase, so `revision < revision_end` covers both).
        let room = self.free_len != 0 || (self.high as usize) < self.capacity;
        let ok = room
            & (self.revision < self.revision_end)
            & (self.last_sequence != u64::MAX)
            & (self.owner != 0);
        if !ok {
            return Err(self.create_error(0));
        }
        Ok(self.create_unbudgeted())
    }

    /// Creates `out.len()` entities, all or nothing.
    ///
    /// # Errors
    /// As [`try_create`](Self::try_create), checked for the whole batch before any is created;
    /// `out` is untouched on error.
    pub fn try_create_batch(&mut self, out: &mut [EntityId]) -> Result<(), WorldError> {
        self.check_create_budget(out.len())?;
        for e in out {
            *e = self.create_unbudgeted();
        }
        Ok(())
    }

    /// Creates one entity; the caller checked [`check_create_budget`](Self::check_create_budget).
    #[inline(always)]
    fn create_unbudgeted(&mut self) -> EntityId {
        self.last_sequence += 1;
        self.alive += 1;
        self.revision += 1;
        let (slot, generation) = if self.free_len != 0 {
            self.free_len -= 1;
            let slot = self.free[self.free_len as usize];
            self.sequence[slot as usize] = self.last_sequence;
            let meta = &self.meta[slot as usize];
            let generation = generation_of(meta.load(Relaxed));
            meta.store(live(slot, generation), Relaxed);
            (slot, generation)
        } else {
            self.create_fresh()
        };
        debug_assert!(
            generation >= FIRST_GENERATION,
            "slot {slot} generation {generation}"
        );
        EntityId::from_raw_parts(self.owner, slot, generation)
    }

    /// Takes slot `high` live, recording `last_sequence`; returns it and its generation (the
    /// first, unless a test hook stored another).
    #[inline(always)]
    fn create_fresh(&mut self) -> (u32, u32) {
        let slot = self.high;
        self.high += 1;
        let s = slot as usize;
        let mut generation = FIRST_GENERATION;
        if let Some(meta) = self.meta.get(s) {
            generation = generation_of(meta.load(Relaxed));
            meta.store(live(slot, generation), Relaxed);
        } else {
            let pushed = self
                .meta
                .push_within_capacity(AtomicU64::new(live(slot, FIRST_GENERATION)));
            debug_assert!(
                pushed.is_ok() && s < self.capacity,
                "slot {s} beyond capacity"
            );
        }
        let pushed = self.sequence.push_within_capacity(self.last_sequence);
        debug_assert!(pushed.is_ok(), "sequence at capacity");
        (slot, generation)
    }

    /// Whether [`create_fresh_batch`](Self::create_fresh_batch) may be used: no generation is
    /// stored past `high` (only a test hook stores one).
    #[inline]
    pub(crate) fn fresh_batchable(&self) -> bool {
        self.meta.len() == self.high as usize
    }

    /// Creates `count` entities in the never-used slots `high..high + count`, all at
    /// [`FIRST_GENERATION`], and returns the first slot. The caller checked the budget,
    /// [`fresh_batchable`](Self::fresh_batchable) and that `count` fresh slots remain
    /// (`count <= capacity - high`); the free list is not consulted. Panics, changing nothing,
    /// when any of that fails (one check per batch).
    pub(crate) fn create_fresh_batch(&mut self, count: usize) -> u32 {
        let first = self.high;
        let ok = self.fresh_batchable()
            && self.owner != 0
            && count <= self.capacity - first as usize
            && u64::MAX - self.last_sequence >= count as u64
            && u64::MAX - self.revision >= count as u64;
        assert!(ok, "{count} fresh slots requested: budget not checked");
        let base = self.last_sequence;
        self.meta.extend(
            (first..)
                .take(count)
                .map(|slot| AtomicU64::new(live(slot, FIRST_GENERATION))),
        );
        self.sequence.extend((1..=count as u64).map(|k| base + k));
        self.high += count as u32;
        self.alive += count as u32;
        self.last_sequence += count as u64;
        self.revision += count as u64;
        first
    }

    /// Slots never created so far (`capacity - high`): what a batch can take fresh.
    #[inline]
    pub(crate) fn fresh_available(&self) -> usize {
        self.capacity - self.high as usize
    }

    /// Releases an alive (live or pending) entity: its generation advances, or the slot
    /// retires at the terminal generation. Remove the entity from every pool first (the world
    /// does this for you).
    ///
    /// # Errors
    /// [`WorldError::InvalidPhase`], [`WorldError::Rejected`] or
    /// [`WorldError::RevisionExhausted`]; nothing changes.
    #[inline]
    pub fn try_release(&mut self, entity: EntityId) -> Result<(), WorldError> {
        self.check_phase()?;
        self.check_alive(entity)?;
        self.check_revisions(1)?;
        self.release_validated(entity);
        Ok(())
    }

    /// Releases an entity the caller validated as alive (phase, liveness and revision budget
    /// checked).
    #[inline]
    fn release_validated(&mut self, entity: EntityId) {
        self.release_charged(entity, 0);
    }

    /// [`release_validated`](Self::release_validated), charging `extra` more revisions (the
    /// pool removals of a destroy) with the release's own; the caller checked `1 + extra`.
    #[inline(always)]
    pub(crate) fn release_charged(&mut self, entity: EntityId, extra: u64) {
        if !self.is_alive(entity) {
            // A release of a dead entity would put its slot on the free stack twice and let
            // two creates share one incarnation: refuse loudly (out of line, never taken by
            // the callers, which checked).
            not_alive(entity);
        }
        let slot = entity.slot();
        let meta = &self.meta[slot as usize];
        match next_generation(entity.generation()) {
            GenerationStep::Reuse(g) => {
                meta.store(free(g), Relaxed);
                self.free[self.free_len as usize] = slot;
                self.free_len += 1;
            }
            GenerationStep::Retire => {
                meta.store(RETIRED, Relaxed);
                self.retired += 1;
            }
        }
        self.alive -= 1;
        self.revision += 1 + extra;
    }

    /// Marks an active entity pending destruction (command recording).
    pub(crate) fn try_mark_pending(&self, entity: EntityId) -> Result<(), Rejection> {
        let active = live(entity.slot(), entity.generation());
        let marked = self.owner == entity.owner()
            && self.meta.get(entity.slot() as usize).is_some_and(|m| {
                m.compare_exchange(active, active | PENDING, Relaxed, Relaxed)
                    .is_ok()
            });
        if marked {
            Ok(())
        } else {
            Err(self.diagnose(entity).err().unwrap_or(Rejection::Stale))
        }
    }

    /// Clears a pending mark set by [`try_mark_pending`](Self::try_mark_pending).
    pub(crate) fn unmark_pending(&self, entity: EntityId) {
        if self.owner != entity.owner() {
            return;
        }
        if let Some(m) = self.meta.get(entity.slot() as usize) {
            let active = live(entity.slot(), entity.generation());
            let _ = m.compare_exchange(active | PENDING, active, Relaxed, Relaxed);
        }
    }

    /// The pending-mark epoch (see [`clear_pending_marks`](Self::clear_pending_marks)).
    #[inline]
    pub(crate) fn mark_epoch(&self) -> u64 {
        self.mark_epoch
    }

    /// Clears every pending-destruction mark and advances the mark epoch (every buffer holding
    /// destroys recorded before then refuses to commit); returns how many were cleared.
    pub(crate) fn clear_pending_marks(&mut self) -> usize {
        self.mark_epoch = self.mark_epoch.saturating_add(1);
        let mut cleared = 0;
        for m in &self.meta[..self.high as usize] {
            let v = m.load(Relaxed);
            let low = v & LOW;
            if low != FREE_LOW && low != RETIRED_LOW && low & PENDING != 0 {
                m.store(v & !PENDING, Relaxed);
                cleared += 1;
            }
        }
        cleared
    }

    /// Test hook (feature `test-hooks`): advances the last creation sequence and the
    /// structural revision to the given values, so exhaustion can be reached in a test.
    /// Never rewinds: returns false, changing nothing, when either value is below the
    /// current one.
    #[cfg(feature = "test-hooks")]
    pub fn test_hook_advance_counters(&mut self, last_sequence: u64, revision: u64) -> bool {
        if last_sequence < self.last_sequence || revision < self.revision {
            return false;
        }
        self.last_sequence = last_sequence;
        self.revision = revision;
        true
    }

    /// Test hook (feature `test-hooks`): advances the generation the *free* `slot` will be
    /// created with (so retirement can be reached in a test). Returns false, changing
    /// nothing, when the slot is out of range, alive or retired, or `generation` is not above
    /// the slot's current one: a handle released before keeps failing validation.
    #[cfg(feature = "test-hooks")]
    pub fn test_hook_advance_free_generation(&mut self, slot: u32, generation: u32) -> bool {
        let s = slot as usize;
        if s >= self.capacity {
            return false;
        }
        let current = self.stored_meta(slot).unwrap_or(free(FIRST_GENERATION));
        if current & LOW != FREE_LOW || generation <= generation_of(current) {
            return false;
        }
        while self.meta.len() <= s {
            // Materialize the implicit free entries up to `slot` (within capacity).
            self.meta.push(AtomicU64::new(free(FIRST_GENERATION)));
        }
        self.meta[s].store(free(generation), Relaxed);
        true
    }
}

impl<A: Allocator + Clone> core::fmt::Debug for EntityRegistry<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("EntityRegistry")
            .field("owner", &self.owner)
            .field("capacity", &self.capacity())
            .field("alive", &self.alive)
            .field("retired", &self.retired)
            .field("available", &self.available())
            .field("last_sequence", &self.last_sequence)
            .field("revision", &self.revision)
            .field("bound_pools", &self.bound_pools)
            .field("structural", &self.is_structural_phase())
            .finish()
    }
}

/// Panics for a release of an entity that is not alive (a caller skipped its check).
#[cold]
#[inline(never)]
#[track_caller]
fn not_alive(entity: EntityId) -> ! {
    panic!("release of {entity:?}, which is not alive")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second release of one incarnation would put its slot on the free stack twice and let
    /// two creates alias: the release the world uses re-checks liveness in release builds.
    #[test]
    #[should_panic(expected = "not alive")]
    fn release_of_a_dead_entity_panics() {
        let mut reg = EntityRegistry::try_with_capacity(2).unwrap();
        let e = reg.try_create().unwrap();
        reg.try_release(e).unwrap();
        reg.release_charged(e, 0);
    }

    /// An unbound registry (owner 0) creates nothing, in batches neither.
    #[test]
    #[should_panic(expected = "budget not checked")]
    fn unbound_registry_refuses_fresh_batches() {
        let mut reg = EntityRegistry::try_unbound_in(4, Global).unwrap();
        assert!(reg.check_create_budget(1).is_err());
        reg.create_fresh_batch(1);
    }
}
