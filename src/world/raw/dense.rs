//! The lookup and mutation core of a [`ComponentPool`](crate::world::store::pool::ComponentPool): dense keys and
//! values, and a sparse map from slot to dense index.
//!
//! ```text
//!  keys:   i: 0        1        2        3          values: [T] [T] [T] [T]
//!          [0|g3]   [1|g1]   [7|g2]   [2|g5]
//!  sparse: slot 2 → 3, slot 7 → 2, every other slot → NO_ENTRY   (slots 0 and 1 sit on
//!          their diagonal)
//! ```
//!
//! Invariants, for every dense `i < len` with `keys[i] = {slot s, generation g}`: the pool
//! holds the entity `(owner, s, g)` at `i`, and no slot appears twice in `keys[..len]`. An
//! entry at `i == s` is *on its diagonal* (where entities spawned in creation order land);
//! for an entry off its diagonal `sparse[s] == i`, and every other slot (on its diagonal, or
//! without an entry) has `sparse[s] == NO_ENTRY`: the map is *exact*, and an append on the
//! diagonal writes nothing to it. A lookup of `(owner, s, g)`: owner equal to the pool's, then
//! `keys[s] == {s, g}` (on the diagonal: no sparse load), else `keys[sparse[s]] == {s, g}`. The
//! full owner is validated with no registry access, and the key compare keeps lookups
//! memory-safe and correct whatever the map holds (as in Briggs & Torczon's sparse sets). Only
//! a join's probe of a shared world pool trusts the map without a compare ([`Probe::Exact`]):
//! an index it names is bounds-checked there, so a broken map could yield a wrong value but
//! never reach memory outside the pool.
//!
//! The sparse map has one entry per registry slot, filled at init (so its pages are resident
//! before the first write, not faulted in during a frame).
//!
//! Two summaries serve joins (see [`query`](crate::world::query::column)), kept exact by every change:
//! a *membership bitset* with bit `s` set iff some entry holds slot `s` (any generation), and
//! the *order* fact `sorted`: when set, `keys[..len]` ascend strictly by slot (then the entry
//! of the `r`-th set bit is at dense index `r`); it may be clear for keys that do ascend.
//! Joins do not trust them for memory safety (a join confirms each index it fetches mutably
//! against the key there, or uses ranks, distinct by arithmetic; a shared column's index is
//! only bounds-checked). `destroy` does rely on the bitset being exact (it
//! skips the pools whose bit is clear, and the release invariant needs every entry removed):
//! every change goes through [`DenseMut`], whose methods keep it exact.
//!
//! Mutation goes through [`DenseMut`], which holds the arrays' pointers and the length in locals
//! (registers) for a run of changes and writes the length back when dropped: the length is not
//! stored to memory and reloaded between two changes of a batch.

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec;

use crate::identity::OwnerToken;
use crate::world::raw::keys::EntityId;
use crate::world::raw::keys::{EntityKey, Owners};

/// Where a slot's entry sits when it is off its diagonal (exact, module invariants; lookups
/// still validate it by the key there, except a shared join probe's `Probe::Exact`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct Sparse(u32);

/// A sparse entry naming no dense index (every dense index is below the capacity, itself at
/// most `u32::MAX`), so a probe with it loads no key.
pub(crate) const NO_ENTRY: Sparse = Sparse(u32::MAX);

/// The generation of an entry marked by [`DenseMut::remove_compacting`]: no registry issues
/// generation 0, so a mark matches no key, and it keeps its slot for an undo.
const MARK_GENERATION: u32 = 0;

/// The mark of `slot`'s entry.
#[inline(always)]
const fn marked(slot: u32) -> EntityKey {
    EntityKey::new(slot, MARK_GENERATION)
}

/// Dense index of `key` (module invariants).
#[inline(always)]
fn locate(keys: &[EntityKey], sparse: &[Sparse], key: EntityKey) -> Option<usize> {
    let s = key.slot() as usize;
    if keys.get(s) == Some(&key) {
        return Some(s);
    }
    let d = sparse.get(s)?.0 as usize;
    (keys.get(d) == Some(&key)).then_some(d)
}

/// Dense index of the entry for `slot`, whatever its generation.
#[inline(always)]
fn locate_slot(keys: &[EntityKey], sparse: &[Sparse], slot: u32) -> Option<usize> {
    let s = slot as usize;
    if keys.get(s).is_some_and(|k| k.slot() == slot) {
        return Some(s);
    }
    let d = sparse.get(s)?.0 as usize;
    keys.get(d).is_some_and(|k| k.slot() == slot).then_some(d)
}

/// The dense index `sparse` names for slot `s` (`usize::MAX` past its end). A compare and
/// a load: no `Option` of a reference, whose `None` a join's walk would test as a null
/// pointer where the slice's pointer is not known to be non-null.
#[inline(always)]
fn sparse_entry(sparse: &[Sparse], s: usize) -> usize {
    if s < sparse.len() {
        sparse[s].0 as usize
    } else {
        usize::MAX
    }
}

/// Which lookup a probe tries first ([`Index::dense_of_key_by`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    /// The driver's row, then the diagonal, then the sparse entry: pools filled in the same
    /// order as the driver.
    Near,
    /// The diagonal, then the sparse entry: pools filled in slot order.
    Diagonal,
    /// The sparse entry, then the diagonal: pools in an order of their own (a group's, or
    /// scrambled by churn), where the diagonal rarely holds the key.
    Sparse,
    /// The sparse entry with no key compare, else the diagonal: a shared column of a world
    /// pool probed with the keys of another world pool of the same owner. Both hold live
    /// entities only, one generation per slot, so the entry of the key's slot is the key's;
    /// the exact map names its index, or `NO_ENTRY` when it is on its diagonal or absent.
    /// Safe for shared columns only: two keys could name one index if the map were broken,
    /// which a `&mut` column must rule out (its probes compare keys).
    Exact,
}

/// Driver keys [`Index::probe_for`] samples.
pub(crate) const PROBE_SAMPLE: usize = 16;

/// Bits per membership word.
pub(crate) const WORD_BITS: usize = 64;

/// Whether `slot`'s bit is set in a membership bitset (false past its end).
#[inline(always)]
pub(crate) fn member(bits: &[u64], slot: u32) -> bool {
    let s = slot as usize;
    bits.get(s / WORD_BITS)
        .is_some_and(|w| w >> (s % WORD_BITS) & 1 != 0)
}

/// Membership words for `capacity` slots.
#[inline]
pub(crate) const fn words_for(capacity: usize) -> usize {
    capacity.div_ceil(WORD_BITS)
}

/// A pool's order fact (module invariants): when `sorted`, its keys ascend strictly by slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Order {
    pub(crate) sorted: bool,
}

impl Order {
    /// The order of an empty pool.
    pub(crate) const EMPTY: Order = Order { sorted: true };
}

/// A pool's lookup structures, borrowed apart from its values (for gets and joins).
#[derive(Debug, Clone, Copy)]
pub struct Index<'p> {
    pub(crate) owner: OwnerToken,
    pub(crate) keys: &'p [EntityKey],
    pub(crate) sparse: &'p [Sparse],
    /// Membership bitset, one bit per slot.
    pub(crate) bits: &'p [u64],
    pub(crate) order: Order,
    /// The pool's layout stamp (see `ComponentPool`): equal nonzero stamps of two pools of one
    /// owner mean equal keys.
    pub(crate) layout: u64,
    /// Every entry is of a live entity (a world's pool).
    pub(crate) live: bool,
    /// The pool's cluster stamp (see `ComponentPool`): 0, or shared only by pools clustered
    /// together and unchanged since; then `runs` are its runs and `cluster_bit` its bit in
    /// their signatures.
    pub(crate) cluster: u64,
    pub(crate) cluster_bit: u32,
    pub(crate) runs: &'p [Run],
}

/// Most pools clustered together ([`cluster`](fn@crate::world::cluster)): a run's signature is a set
/// of them.
pub(crate) const MAX_CLUSTER: usize = 6;

/// Most members in one owned group (a pool keeps one packed length per group it is in).
pub const MAX_GROUP_MEMBERS: usize = 8;
/// Most runs in a clustered pool: one per signature holding the pool's own bit.
pub(crate) const MAX_RUNS: usize = 1 << (MAX_CLUSTER - 1);

/// Entries `start..start + len` of a clustered pool: every entity held by exactly the pools of
/// `sig` (bits of the cluster's pools), in slot order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) sig: u32,
    pub(crate) start: u32,
    pub(crate) len: u32,
}

impl Run {
    pub(crate) const EMPTY: Run = Run {
        sig: 0,
        start: 0,
        len: 0,
    };
}

impl<'p> Index<'p> {
    /// Dense index of `entity`, validated against the full owner.
    #[inline(always)]
    pub(crate) fn dense_of(&self, entity: EntityId) -> Option<usize> {
        if entity.owner() != self.owner {
            return None;
        }
        locate(self.keys, self.sparse, EntityKey::of(entity))
    }

    /// Number of dense entries.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// Dense index of `key` (a key of this pool's owner), trying `hint` first (pools filled
    /// in the same order share dense positions).
    #[inline(always)]
    pub(crate) fn dense_of_key_near(&self, key: EntityKey, hint: usize) -> Option<usize> {
        if self.keys.get(hint) == Some(&key) {
            Some(hint)
        } else {
            locate(self.keys, self.sparse, key)
        }
    }

    /// Dense index of `key` (a key of this pool's owner) by `probe`'s order of lookups.
    /// `Near`, `Diagonal` and `Sparse` end with both of [`locate`]'s lookups, so each finds
    /// every entry, and the order only decides which loads a hit costs. `Exact` trusts the
    /// exact sparse map without a key compare (correct for a live key of a world pool's
    /// owner; only bounds-checked otherwise).
    #[inline(always)]
    pub(crate) fn dense_of_key_by(
        &self,
        key: EntityKey,
        hint: usize,
        probe: Probe,
    ) -> Option<usize> {
        match probe {
            Probe::Near => self.dense_of_key_near(key, hint),
            Probe::Diagonal => locate(self.keys, self.sparse, key),
            Probe::Sparse => {
                let s = key.slot() as usize;
                if let Some(&Sparse(d)) = self.sparse.get(s) {
                    if self.keys.get(d as usize) == Some(&key) {
                        return Some(d as usize);
                    }
                }
                (self.keys.get(s) == Some(&key)).then_some(s)
            }
            Probe::Exact => {
                let s = key.slot() as usize;
                let d = sparse_entry(self.sparse, s);
                if d < self.keys.len() {
                    Some(d)
                } else {
                    (self.keys.get(s) == Some(&key)).then_some(s)
                }
            }
        }
    }

    /// Whether the lookup structures are exact (`O(capacity)`; for tests and debugging): the
    /// sparse map names the index of every entry off its diagonal and `NO_ENTRY` for every
    /// other slot, the membership bitset holds exactly the entries' slots, no slot is stored
    /// twice, and a set `sorted` fact means ascending slots.
    pub(crate) fn is_exact(&self) -> bool {
        let entries_ok = self.keys.iter().enumerate().all(|(i, k)| {
            let want = if k.slot() as usize == i {
                NO_ENTRY
            } else {
                Sparse(i as u32)
            };
            self.sparse.get(k.slot() as usize) == Some(&want) && member(self.bits, k.slot())
        });
        let members: usize = self.bits.iter().map(|w| w.count_ones() as usize).sum();
        let others_ok = self.sparse.iter().enumerate().all(|(s, &d)| {
            d == NO_ENTRY
                || self
                    .keys
                    .get(d.0 as usize)
                    .is_some_and(|k| k.slot() as usize == s && d.0 as usize != s)
        });
        let sorted_ok =
            !self.order.sorted || self.keys.windows(2).all(|w| w[0].slot() < w[1].slot());
        // Every key's slot is a member and has its own index, so keys are distinct slots; with
        // as many members as keys, no other slot is a member.
        entries_ok && others_ok && members == self.keys.len() && sorted_ok
    }

    /// The probe order for looking up `driver`'s keys here, from where a sample of up to
    /// [`PROBE_SAMPLE`] of them (spread over `driver`) sit: at the driver's row (`Near`), on
    /// their diagonal (`Diagonal`), or elsewhere (`Sparse`, read first). `Near` unless
    /// another order serves at least half of the sampled keys this pool holds.
    pub(crate) fn probe_for(&self, driver: &[EntityKey]) -> Probe {
        let n = driver.len();
        let k = n.min(PROBE_SAMPLE);
        let (mut near, mut diagonal, mut held) = (0, 0, 0);
        for j in 0..k {
            let i = j * (n / k);
            let key = driver[i];
            if self.keys.get(i) == Some(&key) {
                near += 1;
            } else if self.keys.get(key.slot() as usize) == Some(&key) {
                diagonal += 1;
            } else if locate(self.keys, self.sparse, key).is_none() {
                continue;
            }
            held += 1;
        }
        if held == 0 || 2 * near >= held {
            Probe::Near
        } else if 2 * diagonal >= held - near {
            Probe::Diagonal
        } else {
            Probe::Sparse
        }
    }

    /// Dense index of `slot`'s entry when it has one (any generation), else any index or
    /// none: a join confirms the key there. Branch-free on the diagonal test.
    /// Both candidates are loaded and one is selected without a branch: in a join the
    /// diagonal test is unpredictable, and a mispredicted branch would serialise the lookups
    /// of consecutive matches, which otherwise overlap.
    #[inline(always)]
    pub(crate) fn slot_hint(&self, slot: usize) -> usize {
        let c = slot.min(self.keys.len().wrapping_sub(1));
        let on_diagonal = self.keys.get(c).is_some_and(|k| k.slot() as usize == slot);
        let sparse = sparse_entry(self.sparse, slot);
        let keep = usize::from(on_diagonal).wrapping_neg();
        (c & keep) | (sparse & !keep)
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

/// A pool's dense arrays under a run of membership changes. Holds the vectors' element
/// pointers and the common length in locals; [`finish`](Self::finish) writes the length back
/// to both vectors. No `Drop`: a drop guard would pin the struct in memory. The methods check
/// before they change a length (sparse indexing cannot fail for a stored key or a key its
/// registry issued: the map has an entry per slot), so a panic leaves both lengths as they
/// were and every element below them initialized (a panic after some writes, which no caller
/// can reach, may leave bits, sparse entries or order changed, never memory unsafety).
///
/// Invariant: `keys` and `values` point to the buffers of `keys_vec` and `values_vec`, each
/// allocated for at least `capacity` elements (reserved at init, never reallocated), of which
/// the first `len` are initialized; `len <= capacity`.
pub(crate) struct DenseMut<'p, T, A: Allocator> {
    capacity: usize,
    len: usize,
    keys: *mut EntityKey,
    values: *mut T,
    sparse: &'p mut [Sparse],
    bits: &'p mut [u64],
    order: Order,
    order_out: &'p mut Order,
    keys_vec: &'p mut Vec<EntityKey, A>,
    values_vec: &'p mut Vec<T, A>,
}

impl<'p, T: Copy, A: Allocator> DenseMut<'p, T, A> {
    /// Takes over a pool's arrays.
    ///
    /// # Safety
    /// - `keys_vec` and `values_vec` have equal lengths, and each has reserved at least
    ///   `capacity` elements (`capacity()`): the struct invariant, on which every write
    ///   through the element pointers rests.
    /// - The arrays hold the module invariants (no slot twice in the keys, an exact sparse
    ///   map and bitset): the methods keep them only from there, and a join's memory safety
    ///   rests on no pool holding a key twice.
    ///
    /// (`sparse` and `bits` covering the capacity is checked by their indexing; debug builds
    /// check every array's size here.)
    #[inline(always)]
    pub(crate) unsafe fn new(
        capacity: usize,
        keys_vec: &'p mut Vec<EntityKey, A>,
        values_vec: &'p mut Vec<T, A>,
        sparse: &'p mut [Sparse],
        bits: &'p mut [u64],
        order: &'p mut Order,
    ) -> Self {
        // The pool's own invariants (private fields, established at init): documented here.
        debug_assert!(
            keys_vec.len() == values_vec.len()
                && keys_vec.capacity() >= capacity
                && values_vec.capacity() >= capacity
                && sparse.len() == capacity
                && bits.len() == words_for(capacity),
            "pool arrays: {} keys, {} values, capacity {capacity}",
            keys_vec.len(),
            values_vec.len()
        );
        Self {
            capacity,
            len: keys_vec.len(),
            keys: keys_vec.as_mut_ptr(),
            values: values_vec.as_mut_ptr(),
            sparse,
            bits,
            order: *order,
            order_out: order,
            keys_vec,
            values_vec,
        }
    }

    /// Writes the length back to both vectors, and the order facts.
    #[inline(always)]
    pub(crate) fn finish(self) {
        *self.order_out = self.order;
        // SAFETY: the first `len` elements of both buffers are initialized (struct invariant)
        // and `len <= capacity <= capacity()` of both vectors.
        unsafe {
            self.keys_vec.set_len(self.len);
            self.values_vec.set_len(self.len);
        }
    }

    /// The initialized keys.
    #[inline(always)]
    fn keys(&self) -> &[EntityKey] {
        // SAFETY: `keys[..len]` is initialized (struct invariant) and nothing writes it while
        // the returned borrow of `self` lives.
        unsafe { core::slice::from_raw_parts(self.keys, self.len) }
    }

    /// Whether some entry holds `slot` (its membership bit).
    #[inline(always)]
    pub(crate) fn holds_slot(&self, slot: u32) -> bool {
        member(self.bits, slot)
    }

    /// Puts the entries in order of their signature, then of their slot, and returns the
    /// runs (ascending signature). An entry's signature is `own` plus the bit of every
    /// `others` pool whose membership bitset holds its slot. The `r`-th entry of that order
    /// is swapped into dense index `r`: each swap places one entry for good (`O(len)` swaps,
    /// plus a pass over the bitset per signature). Entries outside `runs` cannot exist: each
    /// member slot has exactly one signature.
    pub(crate) fn sort_by_signature(
        &mut self,
        own: u32,
        others: &[(u32, &[u64])],
        runs: &mut [Run; MAX_RUNS],
    ) -> usize {
        let (mut r, mut n) = (0, 0);
        let all = others.iter().fold(own, |a, &(bit, _)| a | bit);
        // Ascending signatures, the same order in every pool of the cluster.
        for sig in (1..=all).filter(|s| s & own != 0 && s & !all == 0) {
            let start = r;
            for w in 0..self.bits.len() {
                let mut m = self.bits[w];
                for &(bit, bits) in others {
                    let o = bits.get(w).copied().unwrap_or(0);
                    m &= if sig & bit != 0 { o } else { !o };
                }
                r = self.place_members(w, m, r);
            }
            if r > start {
                runs[n] = Run {
                    sig,
                    start: start as u32,
                    len: (r - start) as u32,
                };
                n += 1;
            }
        }
        n
    }

    /// Dense index of `key`.
    #[inline(always)]
    pub(crate) fn find(&self, key: EntityKey) -> Option<usize> {
        locate(self.keys(), self.sparse, key)
    }

    /// Dense index of `slot`'s entry, whatever its generation.
    #[inline(always)]
    pub(crate) fn find_slot(&self, slot: u32) -> Option<usize> {
        locate_slot(self.keys(), self.sparse, slot)
    }

    /// Gives `key` the value `value`: replaces its value (returning the previous one), reuses
    /// the entry of a former incarnation of its slot in place, or appends. Returns the
    /// previous value and whether `key` newly joined.
    #[inline(always)]
    pub(crate) fn insert(&mut self, key: EntityKey, value: T) -> (Option<T>, bool) {
        let Some(i) = locate_slot(self.keys(), self.sparse, key.slot()) else {
            // SAFETY: `key`'s slot has no entry: `locate_slot` finds every entry of a slot,
            // the sparse map being exact (`new`'s contract, kept by every method).
            unsafe { self.append(key, value) };
            return (None, true);
        };
        // SAFETY: `locate_slot` returns an index below `len`, in bounds and initialized in
        // both arrays (struct invariant).
        let (stored, slot_value) = unsafe { (&mut *self.keys.add(i), &mut *self.values.add(i)) };
        if *stored == key {
            return (Some(core::mem::replace(slot_value, value)), false);
        }
        // A former incarnation of this slot was released without leaving the pool: its entry
        // is reused in place by the new incarnation.
        *stored = key;
        *slot_value = value;
        (None, true)
    }

    /// Appends `key` at dense index `len`. The writes are checked against the capacity.
    ///
    /// # Safety
    /// - `key`'s slot has no entry (looked up, or known from the pool's provenance
    ///   invariant): else the pool would hold the slot twice, and a later in-place reuse
    ///   could make two entries equal, which joins rely on never happening.
    #[inline(always)]
    pub(crate) unsafe fn append(&mut self, key: EntityKey, value: T) {
        let i = self.len;
        // Holds whenever the precondition does (stored slots are distinct and below the
        // capacity, and `key`'s is not among them); checked because the writes rely on it.
        if i >= self.capacity {
            out_of_range(i, self.capacity);
        }
        if key.slot() as usize != i {
            // On its diagonal the slot keeps `NO_ENTRY` (it had no entry).
            self.set_sparse(key.slot(), i);
        }
        self.set_bit(key.slot());
        if self.order.sorted && i > 0 {
            // SAFETY: `0 < i == len`: the last initialized key.
            let last = unsafe { self.keys.add(i - 1).read() };
            self.order.sorted = last.slot() < key.slot();
        }
        // SAFETY: `i < capacity`, within both allocations (struct invariant); the length
        // grows by one to cover exactly the newly initialized elements.
        unsafe {
            self.keys.add(i).write(key);
            self.values.add(i).write(value);
        }
        self.len = i + 1;
    }

    /// Gives each of `entities` the value at the same index of `values` (the last of a
    /// repeated entity wins) and returns how many newly joined. `alive` is checked for each
    /// entity in the first pass, which only appends entities without an entry; a failure
    /// truncates those appends away (clearing their bits and sparse entries) and returns the
    /// entity: all or nothing. Replacements (and in-place reuse of a former incarnation's
    /// entry) wait for a second pass, run only when there are any.
    pub(crate) fn insert_all(
        &mut self,
        entities: &[EntityId],
        values: &[T],
        alive: impl Fn(EntityId) -> bool,
    ) -> Result<usize, EntityId> {
        let start = self.len;
        let order = self.order;
        let mut later = false;
        for (&entity, &value) in entities.iter().zip(values) {
            if !alive(entity) {
                self.truncate_appends(start, order);
                return Err(entity);
            }
            let key = EntityKey::of(entity);
            if locate_slot(self.keys(), self.sparse, key.slot()).is_some() {
                later = true;
            } else {
                // SAFETY: `key`'s slot has no entry: `locate_slot` finds every entry of a
                // slot, the sparse map being exact (`new`'s contract, kept by every method,
                // `append` included).
                unsafe { self.append(key, value) };
            }
        }
        let mut joined = self.len - start;
        if later {
            for (&entity, &value) in entities.iter().zip(values) {
                joined += usize::from(self.insert(EntityKey::of(entity), value).1);
            }
        }
        Ok(joined)
    }

    /// Undoes the appends of entries `start..len` (their bits and sparse entries cleared) and
    /// restores the order fact from before them.
    #[cold]
    fn truncate_appends(&mut self, start: usize, order: Order) {
        for i in start..self.len {
            // SAFETY: `start <= i < len`: an appended entry, initialized.
            let slot = unsafe { self.keys.add(i).read() }.slot();
            self.clear_bit(slot);
            self.clear_sparse(slot);
        }
        self.order = order;
        self.len = start;
    }

    /// Appends `count` entries for the slots `first..first + count` at `generation`, whose
    /// values the caller already wrote at `len..len + count`. Panics (changing nothing) unless
    /// `len + count <= capacity` and the slots are below the capacity: one check per batch.
    ///
    /// # Safety
    /// - Values `len..len + count` are initialized.
    /// - None of the slots has an entry: else the pool would hold a slot twice, and a later
    ///   in-place reuse could make two entries equal, which joins rely on never happening.
    pub(crate) unsafe fn append_written(&mut self, first: u32, count: usize, generation: u32) {
        let len = self.len;
        let fits = count <= self.capacity - len
            && count <= self.capacity - (first as usize).min(self.capacity);
        if !fits {
            bad_batch(first, count, len);
        }
        debug_assert!(
            (first..first + count as u32)
                .all(|s| locate_slot(self.keys(), self.sparse, s).is_none()),
            "fresh slots {first}..+{count} already have entries"
        );
        for k in 0..count {
            let key = EntityKey::new(first + k as u32, generation);
            // SAFETY: `len + k < len + count <= capacity` (checked above), within the
            // allocation (struct invariant).
            unsafe { self.keys.add(len + k).write(key) };
        }
        self.len = len + count;
        if count > 0 {
            set_bits(self.bits, first as usize, count);
            if self.order.sorted && len > 0 {
                // SAFETY: `0 < len`: the last key before the batch.
                let last = unsafe { self.keys.add(len - 1).read() };
                self.order.sorted = last.slot() < first;
            }
        }
        if count > 0 && first as usize != len {
            // `first + count <= capacity == sparse.len()` (checked above): one bounds check.
            let fresh = &mut self.sparse[first as usize..first as usize + count];
            for (k, entry) in fresh.iter_mut().enumerate() {
                *entry = Sparse((len + k) as u32);
            }
        }
    }

    /// Gives `old`'s entry to `new` (a later incarnation of the same slot) with `value`, in
    /// place: the same dense index, so the sparse entry, the membership bit and the order facts
    /// stay exact. `false` (nothing changed) when `old` has no entry or the slots differ.
    #[inline(always)]
    pub(crate) fn replace_key(&mut self, old: EntityKey, new: EntityKey, value: T) -> bool {
        let Some(i) = self.find(old) else {
            return false;
        };
        if new.slot() != old.slot() || i >= self.len {
            return false;
        }
        // SAFETY: `i < len` (checked): in bounds and initialized; `T` and `EntityKey` are
        // `Copy`, so the overwritten values need no drop.
        unsafe {
            self.keys.add(i).write(new);
            self.values.add(i).write(value);
        }
        true
    }

    /// Removes `key`'s entry by swap removal, returning its value.
    #[inline(always)]
    pub(crate) fn remove(&mut self, key: EntityKey) -> Option<T> {
        let i = self.find(key)?;
        Some(self.remove_at(i, key.slot()))
    }

    /// Swap-removes dense index `i < len`, which holds `slot`'s entry: the last entry moves
    /// into the hole.
    #[inline(always)]
    fn remove_at(&mut self, i: usize, slot: u32) -> T {
        if i >= self.len {
            out_of_range(i, self.len);
        }
        let last = self.len - 1;
        // SAFETY: 1. `i <= last < len`, so every access is in bounds and initialized;
        // 2. element `last` moves into `i` (a self-copy when `i == last`) and the length drops
        // to `last`, so the initialized prefix stays exact; 3. `T` and `EntityKey` are `Copy`.
        let (value, moved) = unsafe {
            let value = self.values.add(i).read();
            let moved = self.keys.add(last).read();
            self.values.add(i).write(self.values.add(last).read());
            self.keys.add(i).write(moved);
            (value, moved)
        };
        self.len = last;
        self.clear_bit(slot);
        self.order.sorted &= i == last;
        self.clear_sparse(slot);
        if i != last {
            self.place(moved.slot(), i);
        }
        value
    }

    /// Removes the entry of every entity of `batch` (duplicates and entities without one are
    /// skipped) by marking them and then compacting the survivors in one pass, which keeps
    /// their relative order; returns the number removed. Cheaper than swap removals when the
    /// batch is a large part of the pool: no entry is moved twice and the scan is sequential.
    ///
    /// `alive` is checked for each entity as it is marked; the first that fails unmarks
    /// everything (an entry only gets marked for an alive entity, so its generation is
    /// `generation_of` its slot) and is returned: all or nothing, with one pass over `batch`.
    pub(crate) fn remove_compacting(
        &mut self,
        batch: &[EntityId],
        alive: impl Fn(EntityId) -> bool,
        generation_of: impl Fn(u32) -> u32,
    ) -> Result<usize, EntityId> {
        let mut removed = 0;
        for &entity in batch {
            if !alive(entity) {
                self.unmark(generation_of);
                return Err(entity);
            }
            let key = EntityKey::of(entity);
            if let Some(i) = self.find(key) {
                // SAFETY: `find` returns an index below `len`. A mark matches no key a
                // registry issues (generation 0), so a repeated entity is not found again.
                unsafe { self.keys.add(i).write(marked(key.slot())) };
                self.clear_sparse(key.slot());
                self.clear_bit(key.slot());
                removed += 1;
            }
        }
        if removed == 0 {
            return Ok(0);
        }
        if removed == self.len {
            // Every entry was marked (a slot has one entry, and a marked one is not found
            // again): no survivor to compact, and their sparse entries and bits are cleared.
            self.len = 0;
            self.order.sorted = true;
            return Ok(removed);
        }
        let mut kept = 0;
        for i in 0..self.len {
            // SAFETY: `kept <= i < len`: reads and writes stay within the initialized prefix,
            // and `kept` only moves entries down over marks or onto themselves.
            let key = unsafe { self.keys.add(i).read() };
            if key.generation() == MARK_GENERATION {
                continue;
            }
            if kept != i {
                // SAFETY: 1. `kept < i < len`: both in the initialized prefix, so the reads
                //    and writes are in bounds and read initialized elements;
                // 2. every entry at `kept..i` is a mark or a survivor already moved below
                //    `kept`: none is lost.
                unsafe {
                    self.keys.add(kept).write(key);
                    self.values.add(kept).write(self.values.add(i).read());
                }
                self.place(key.slot(), kept);
            }
            kept += 1;
        }
        self.len = kept;
        Ok(removed)
    }

    /// Restores every marked entry with its slot's current generation and sparse entry.
    #[cold]
    fn unmark(&mut self, generation_of: impl Fn(u32) -> u32) {
        for i in 0..self.len {
            // SAFETY: `i < len`, initialized.
            let key = unsafe { self.keys.add(i).read() };
            if key.generation() == MARK_GENERATION {
                let slot = key.slot();
                // SAFETY: `i < len`: in bounds, and overwriting an initialized `Copy` key.
                unsafe {
                    self.keys
                        .add(i)
                        .write(EntityKey::new(slot, generation_of(slot)))
                };
                self.place(slot, i);
                self.set_bit(slot);
            }
        }
    }

    /// Swaps dense positions `i` and `j` (both `< len`).
    #[inline]
    pub(crate) fn swap(&mut self, i: usize, j: usize) {
        if i.max(j) >= self.len {
            out_of_range(i.max(j), self.len);
        }
        if i == j {
            return;
        }
        self.order.sorted = false;
        // SAFETY: `i, j < len` (checked) and distinct: in bounds, initialized, no overlap.
        unsafe {
            core::ptr::swap_nonoverlapping(self.keys.add(i), self.keys.add(j), 1);
            core::ptr::swap_nonoverlapping(self.values.add(i), self.values.add(j), 1);
        }
        for at in [i, j] {
            // SAFETY: `at < len`.
            let slot = unsafe { self.keys.add(at).read() }.slot();
            self.place(slot, at);
        }
    }

    /// Puts the entries in ascending slot order: the `r`-th member slot (in bit order) is
    /// swapped into dense index `r`. Each swap places one entry for good: `O(len)`.
    pub(crate) fn sort_by_slot(&mut self) {
        let mut r = 0;
        for w in 0..self.bits.len() {
            r = self.place_members(w, self.bits[w], r);
        }
        self.order.sorted = true;
    }

    /// Swaps the entries of the member slots set in `m` (a subset of membership word `w`)
    /// into dense indices `r..`, in bit order, and returns the next index. The caller placed
    /// exactly the entries below `r`, so every other entry sits at an index `>= r` and each
    /// swap places one entry for good.
    #[inline(always)]
    fn place_members(&mut self, w: usize, mut m: u64, mut r: usize) -> usize {
        while m != 0 {
            let slot = (w * WORD_BITS + m.trailing_zeros() as usize) as u32;
            m &= m - 1;
            // Every member slot has an entry (bitset invariant).
            let Some(d) = self.find_slot(slot) else {
                broken_bitset(slot)
            };
            self.swap(r, d);
            r += 1;
        }
        r
    }

    /// Records that `slot`'s entry sits at dense index `i`, off its diagonal.
    #[inline(always)]
    fn set_sparse(&mut self, slot: u32, i: usize) {
        self.sparse[slot as usize] = Sparse(i as u32);
    }

    /// Records that `slot`'s entry moved to dense index `i`: its index, or `NO_ENTRY` on its
    /// diagonal.
    #[inline(always)]
    fn place(&mut self, slot: u32, i: usize) {
        self.sparse[slot as usize] = if slot as usize == i {
            NO_ENTRY
        } else {
            Sparse(i as u32)
        };
    }

    /// Marks `slot` as a member.
    #[inline(always)]
    fn set_bit(&mut self, slot: u32) {
        let s = slot as usize;
        self.bits[s / WORD_BITS] |= 1 << (s % WORD_BITS);
    }

    /// Marks `slot` as no member.
    #[inline(always)]
    fn clear_bit(&mut self, slot: u32) {
        let s = slot as usize;
        self.bits[s / WORD_BITS] &= !(1 << (s % WORD_BITS));
    }

    /// Forgets `slot`'s sparse entry.
    #[inline(always)]
    fn clear_sparse(&mut self, slot: u32) {
        self.sparse[slot as usize] = NO_ENTRY;
    }
}

/// Sets bits `first..first + count` of `bits` (panics when they do not fit).
fn set_bits(bits: &mut [u64], first: usize, count: usize) {
    let end = first + count;
    let (w0, w1) = (first / WORD_BITS, (end - 1) / WORD_BITS);
    let low = !0u64 << (first % WORD_BITS);
    let high = !0u64 >> (WORD_BITS - 1 - (end - 1) % WORD_BITS);
    if w0 == w1 {
        bits[w0] |= low & high;
        return;
    }
    bits[w0] |= low;
    bits[w0 + 1..w1].fill(!0);
    bits[w1] |= high;
}

/// Panics for a dense index `i` not below `len` (a broken pool invariant). Out of line and
/// taking values: formatting a struct field's reference would keep a [`DenseMut`] in memory
/// instead of registers.
#[cold]
#[inline(never)]
#[track_caller]
fn out_of_range(i: usize, len: usize) -> ! {
    panic!("dense index {i} out of range for length {len}")
}

/// Panics for a member bit without an entry (a broken pool invariant).
#[cold]
#[inline(never)]
#[track_caller]
fn broken_bitset(slot: u32) -> ! {
    panic!("membership bit of slot {slot} set without an entry")
}

/// Panics for a batch of fresh slots that does not fit the pool.
#[cold]
#[inline(never)]
#[track_caller]
fn bad_batch(first: u32, count: usize, len: usize) -> ! {
    panic!("batch of {count} fresh slots from {first} does not fit a pool of length {len}")
}
