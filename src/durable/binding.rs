//! [`WorldBindingTable`]: durable keys ↔ runtime handles at the world boundary.
//!
//! Two derived mappings, published and removed together:
//!
//! - **forward**, `PersistentObjectKey → slot`: a preallocated open-addressing table at most
//!   half full (`entries = next_pow2(2 × capacity)`) of 8-byte entries: the bound slot and the
//!   high half of the key's hash. The key, generation and kind live once, in the slot's reverse
//!   entry, so the forward table is a sixth of a table of whole keys (2 MiB at 100k bindings)
//!   and a hit reads one forward entry, then the reverse entry it names, where the key is
//!   confirmed (exact equality). Entries come in groups of sixteen, each group with sixteen
//!   control bytes (one 16-byte aligned load): a byte per entry, `EMPTY` or seven bits of the
//!   key's keyed hash. A probe walks groups from the key's home group and reads a key only
//!   where its control byte and its hash's high half match (one SSE2 compare of the sixteen
//!   bytes where the build has SSE2, a byte loop elsewhere). Deletion keeps probe sequences
//!   intact without tombstones.
//! - **reverse**, per registry slot: the key, kind and generation of the binding (what
//!   `key_of`, iteration in slot order and a detach read), so a recycled slot never inherits a
//!   former object's key.
//!
//! Keys are untrusted input (level files, saves, mods). The entry index comes from a keyed hash
//! (folded 64×64→128 multiplies over the key's words, mixed with a per-table secret drawn from
//! the standard library's randomly keyed hasher), and no probe walks more than [`MAX_PROBE`]
//! entries: a key whose probe would be longer is refused with
//! [`CandidateRejection::ProbeLimit`], so even a collision set crafted against a leaked secret
//! costs at most `MAX_PROBE` compares per key, never a quadratic activation.
//!
//! Everything is allocated at init; nothing allocates afterwards.

use core::hash::{BuildHasher, Hasher};

use allocator_api2::alloc::{Allocator, Global};
use allocator_api2::vec::Vec;

use crate::identity::{InstanceId, OwnerToken, PersistentObjectKey, UuidError, UuidPolicy};
use crate::world::raw::keys::EntityId;
use crate::world::store::error::InitError;
use crate::world::store::error::Rejection;
use crate::world::store::registry::EntityRegistry;
use crate::world::store::reserve::filled;

/// The longest probe sequence (in buckets) an insertion or lookup walks.
pub const MAX_PROBE: usize = 128;

/// The largest binding capacity (buckets are indexed by `u32`).
pub const MAX_BINDINGS: usize = 1 << 30;

// A reservation's slot (`u32::MAX - k`, `k` below `MAX_BINDINGS`) lies past every registry
// slot: `live_limit` and `EntityRegistry::is_alive` both rely on it to never report one live.
const _: () =
    assert!(crate::world::store::registry::MAX_CAPACITY < u32::MAX as usize - MAX_BINDINGS);

/// The caller's kind of a bound object (asset kind or gameplay capability), stored with the
/// binding and compared at resolve. [`BindingKind::ANY`] is a plain binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BindingKind(pub u32);

impl BindingKind {
    /// No particular kind.
    pub const ANY: Self = Self(0);
}

/// One candidate of [`WorldBindingTable::try_activate`]: bind `key` (of `kind`) to `entity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Activation {
    /// The live, active entity to bind.
    pub entity: EntityId,
    /// Its durable key: the activating instance scope and the authored source object.
    pub key: PersistentObjectKey,
    /// Its kind.
    pub kind: BindingKind,
}

impl Activation {
    /// A binding of `key` to `entity` with no particular kind.
    pub const fn new(entity: EntityId, key: PersistentObjectKey) -> Self {
        Self {
            entity,
            key,
            kind: BindingKind::ANY,
        }
    }
}

/// Why one candidate of an activation batch was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CandidateRejection {
    /// The entity is not live and active in the table's registry.
    #[error("entity rejected: {0}")]
    Entity(Rejection),
    /// A half of the key is not a nonnil version-4 UUID.
    #[error("invalid key: {0}")]
    InvalidKey(UuidError),
    /// The key is already bound to another live entity.
    #[error("key already bound to {existing:?}")]
    KeyBound {
        /// The entity holding the key.
        existing: EntityId,
    },
    /// The entity already has a binding.
    #[error("entity already bound to {existing}")]
    EntityBound {
        /// Its current key.
        existing: PersistentObjectKey,
    },
    /// The key is reserved by a duplication in progress (only a hand-written roster that
    /// activates from inside a duplication meets it).
    #[error("key reserved by a duplication in progress")]
    KeyReserved,
    /// An earlier candidate of the same batch has the same key.
    #[error("key repeats candidate {first}")]
    DuplicateKey {
        /// Index of the earlier candidate.
        first: usize,
    },
    /// An earlier candidate of the same batch binds the same entity.
    #[error("entity repeats candidate {first}")]
    DuplicateEntity {
        /// Index of the earlier candidate.
        first: usize,
    },
    /// The key's probe sequence is longer than [`MAX_PROBE`] (a crafted collision set).
    #[error("probe sequence longer than {MAX_PROBE} buckets (colliding keys)")]
    ProbeLimit,
}

/// Failure of [`WorldBindingTable::try_activate`]; nothing was published.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ActivationError {
    /// The batch does not fit the table's fixed capacity.
    #[error("binding capacity exhausted: {requested} requested, {available} free of {capacity}")]
    CapacityExhausted {
        /// Candidates in the batch.
        requested: usize,
        /// Bindings still free.
        available: usize,
        /// The table's fixed capacity.
        capacity: usize,
    },
    /// Candidate `index` was refused.
    #[error("candidate {index} refused: {reason}")]
    Candidate {
        /// Position in the batch.
        index: usize,
        /// Why.
        reason: CandidateRejection,
    },
    /// The table is not attached to this registry (a disabled table, or another world's).
    #[error("binding table belongs to another registry or is disabled")]
    ForeignRegistry,
}

/// Why a reference is invalid rather than merely missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InvalidReference {
    /// A half of the key is nil or not a version-4 UUID.
    #[error("malformed key: {0}")]
    Key(UuidError),
    /// The catalog does not know the key's instance scope.
    #[error("unknown instance scope")]
    UnknownScope,
}

/// What [`WorldBindingTable::try_resolve`] found, with the full handle on success. No I/O,
/// no implicit loading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// A live binding exists; check activity (pending destruction) and capability before use.
    Resolved(EntityId),
    /// The catalog knows the key but its instance is not loaded; the caller may stream it.
    NotResident,
    /// No known target in the available scope (not proof of deletion).
    Missing,
    /// Bound, but to another kind than required.
    TypeMismatch {
        /// The bound entity.
        entity: EntityId,
        /// Its kind.
        found: BindingKind,
    },
    /// A malformed key or an unknown instance scope.
    InvalidReference(InvalidReference),
    /// The catalog knows more than one object under this key.
    Conflict,
}

impl Resolution {
    /// The handle when [`Resolved`](Self::Resolved).
    #[inline]
    pub fn entity(self) -> Option<EntityId> {
        match self {
            Self::Resolved(e) => Some(e),
            _ => None,
        }
    }
}

/// What an authoritative catalog (a save index, a streaming manifest) knows of a key that has
/// no live binding. The caller supplies it at resolve; the table never loads anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogEntry {
    /// Known, in an instance that is not loaded.
    NotResident,
    /// Not known in a scope the catalog knows.
    Unknown,
    /// The instance scope itself is unknown.
    UnknownScope,
    /// Known more than once (duplicate identity).
    Conflict,
}

/// The seam through which [`WorldBindingTable::try_resolve_with`] asks about keys that are
/// not bound. Implemented for closures `Fn(&PersistentObjectKey) -> CatalogEntry`.
pub trait ResidencyCatalog {
    /// What the catalog knows of `key` (which has no live binding).
    fn lookup(&self, key: &PersistentObjectKey) -> CatalogEntry;
}

impl<F: Fn(&PersistentObjectKey) -> CatalogEntry> ResidencyCatalog for F {
    fn lookup(&self, key: &PersistentObjectKey) -> CatalogEntry {
        self(key)
    }
}

/// The catalog that knows nothing: every unbound valid key is `Missing`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCatalog;

impl ResidencyCatalog for NoCatalog {
    fn lookup(&self, _: &PersistentObjectKey) -> CatalogEntry {
        CatalogEntry::Unknown
    }
}

/// A key's instance half and object half as native words (the bytes reinterpreted).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Words {
    instance: [u64; 2],
    object: [u64; 2],
}

impl Words {
    const ZERO: Words = Words {
        instance: [0; 2],
        object: [0; 2],
    };

    /// Whether the two keys are equal: `==` without its branch per half.
    #[inline(always)]
    fn same(&self, other: &Words) -> bool {
        (self.instance[0] ^ other.instance[0]
            | self.instance[1] ^ other.instance[1]
            | self.object[0] ^ other.object[0]
            | self.object[1] ^ other.object[1])
            == 0
    }
}

#[inline(always)]
fn words(key: &PersistentObjectKey) -> Words {
    let w: [u64; 4] = bytemuck::pod_read_unaligned(bytemuck::bytes_of(key));
    Words {
        instance: [w[0], w[1]],
        object: [w[2], w[3]],
    }
}

#[inline(always)]
fn key_of(w: &Words) -> PersistentObjectKey {
    let all = [w.instance[0], w.instance[1], w.object[0], w.object[1]];
    bytemuck::pod_read_unaligned(bytemuck::bytes_of(&all))
}

#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Whether both halves of `key` are nonnil version-4 UUIDs.
#[inline(always)]
pub(crate) fn check_key(key: &PersistentObjectKey) -> Result<(), UuidError> {
    if is_v4_pair(&words(key)) {
        return Ok(());
    }
    check_key_slow(key)
}

/// [`UuidPolicy::DurableV4`] of both halves at once, on the key's words: version 4 (the high
/// nibble of byte 6) and the RFC variant (the top two bits of byte 8); a version-4 UUID is
/// never nil.
#[inline(always)]
fn is_v4_pair(w: &Words) -> bool {
    // Read as little-endian: byte 6 is bits 48..56 of a half's first word, byte 8 bits 0..8 of
    // its second.
    let (i0, o0) = (u64::from_le(w.instance[0]), u64::from_le(w.object[0]));
    let (i1, o1) = (u64::from_le(w.instance[1]), u64::from_le(w.object[1]));
    let versions = ((i0 >> 52) & 0xf) | ((o0 >> 48) & 0xf0);
    let variants = ((i1 >> 6) & 0x3) | ((o1 >> 4) & 0xc);
    ((versions << 4) | variants) == 0x44a
}

/// [`check_key`]'s refusal, naming the first failing half (out of line).
#[cold]
fn check_key_slow(key: &PersistentObjectKey) -> Result<(), UuidError> {
    UuidPolicy::DurableV4.check(key.instance.as_uuid())?;
    UuidPolicy::DurableV4.check(key.object.as_uuid())?;
    Ok(())
}

/// A forward entry (8 bytes): the slot of the binding, whose reverse entry holds the key, its
/// generation and kind, and the high half of the key's hash (its home group, read when a
/// deletion moves entries back, and compared before the key is read). Its contents mean
/// nothing while its control byte is `EMPTY`. A reservation of a duplication in progress has
/// `slot == u32::MAX - k` (beyond every registry slot), `k` its place among the reserved keys,
/// which hold its key.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct Entry {
    slot: u32,
    home: u32,
}

const VACANT: Entry = Entry { slot: 0, home: 0 };

/// Entries per group (one 16-byte load of control bytes).
const GROUP: usize = 16;

/// A control byte: an empty entry (high bit set); a full one holds seven bits of its hash.
const EMPTY: u8 = 0x80;

/// The control bytes of one group of entries (byte `k`: entry `k`), aligned for one vector
/// load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(16))]
struct Group([u8; GROUP]);

/// A group of empty entries.
const ALL_EMPTY: Group = Group([EMPTY; GROUP]);

impl Group {
    /// The entries whose control byte is `byte`, one bit each (bit `k`: entry `k`; exact).
    #[inline(always)]
    fn matches(self, byte: u8) -> u32 {
        control::eq_mask(self.0, byte)
    }

    /// The empty entries, one bit each (exact: only `EMPTY` has its high bit set).
    #[inline(always)]
    fn empties(self) -> u32 {
        control::high_mask(self.0)
    }
}

/// Bit masks of a group's control bytes: SSE2 (one compare and one move-mask per group)
/// where the build enables it (x86 and x86-64), a byte loop elsewhere (`tests` holds the two
/// equal).
#[cfg(all(
    any(target_arch = "x86", target_arch = "x86_64"),
    target_feature = "sse2"
))]
mod control {
    #[cfg(target_arch = "x86")]
    use core::arch::x86::{__m128i, _mm_cmpeq_epi8, _mm_movemask_epi8, _mm_set1_epi8};
    #[cfg(target_arch = "x86_64")]
    use core::arch::x86_64::{__m128i, _mm_cmpeq_epi8, _mm_movemask_epi8, _mm_set1_epi8};

    /// Bit `k` set where byte `k` of `g` is `byte`.
    #[inline(always)]
    pub(super) fn eq_mask(g: [u8; super::GROUP], byte: u8) -> u32 {
        let v: __m128i = bytemuck::cast(g);
        // SAFETY: the three intrinsics need SSE2, which this build enables for every function
        // (the module's `cfg(target_feature = "sse2")`), so every CPU that runs it has SSE2.
        // They touch no memory: `v` is a value.
        unsafe { _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(byte as i8))) as u32 }
    }

    /// Bit `k` set where byte `k` of `g` has its high bit set.
    #[inline(always)]
    pub(super) fn high_mask(g: [u8; super::GROUP]) -> u32 {
        let v: __m128i = bytemuck::cast(g);
        // SAFETY: as in `eq_mask`: SSE2 is enabled for the whole build; no memory is touched.
        unsafe { _mm_movemask_epi8(v) as u32 }
    }
}

/// The portable form of `control` (a byte loop).
#[cfg_attr(
    all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "sse2"
    ),
    allow(dead_code)
)]
mod portable {
    /// Bit `k` set where byte `k` of `g` is `byte`.
    #[inline(always)]
    pub(super) fn eq_mask(g: [u8; super::GROUP], byte: u8) -> u32 {
        g.iter()
            .enumerate()
            .fold(0, |m, (k, &b)| m | u32::from(b == byte) << k)
    }

    /// Bit `k` set where byte `k` of `g` has its high bit set.
    #[inline(always)]
    pub(super) fn high_mask(g: [u8; super::GROUP]) -> u32 {
        g.iter()
            .enumerate()
            .fold(0, |m, (k, &b)| m | u32::from(b >> 7) << k)
    }
}

#[cfg(not(all(
    any(target_arch = "x86", target_arch = "x86_64"),
    target_feature = "sse2"
)))]
use portable as control;

/// The control byte of a key with hash `tag` (bits independent of its home group's).
#[inline(always)]
fn h2(tag: u64) -> u8 {
    (tag & 0x7f) as u8
}

/// The entry (within its group) of the lowest bit of a nonzero mask of `matches` or
/// `empties`.
#[inline(always)]
fn lowest(mask: u32) -> usize {
    mask.trailing_zeros() as usize & (GROUP - 1)
}

/// How many keys ahead a batch asks for a key's home group.
const PREFETCH: usize = 16;

/// How many keys ahead of the one it confirms [`WorldBindingTable::lookup_batch`] hashes (the
/// depth of its pipeline; its later stages run 24 and 12 keys ahead).
pub const LOOKUP_BATCH: usize = 40;

/// Tables up to this footprint (forward and reverse) are looked up key by key even in a
/// batch: they stay in cache, where the batch's passes cost more than they save (1k keys:
/// 26 against 17 ns per lookup).
const CACHED_TABLE: usize = 256 * 1024;

/// A reverse entry: the binding of the slot's incarnation `generation` (0: none); its key is
/// the one the forward entry naming the slot is confirmed against.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct Reverse {
    generation: u32,
    kind: u32,
    key: Words,
}

const UNBOUND: Reverse = Reverse {
    generation: 0,
    kind: 0,
    key: Words {
        instance: [0; 2],
        object: [0; 2],
    },
};

/// Where a probe for a key ended.
enum Probe {
    /// The key is at this entry (a binding or a reservation).
    Found(usize),
    /// The key is absent; this empty entry ends its probe sequence.
    Vacant(usize),
    /// The probe sequence is longer than [`MAX_PROBE`].
    Limit,
}

/// Counters for observability: conflicts refused and the longest probe seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BindingStats {
    /// Candidates refused because their key or entity was already bound (or repeated in the
    /// batch).
    pub conflicts: u64,
    /// Candidates refused at the probe limit.
    pub probe_limit_hits: u64,
    /// The longest probe sequence an insertion walked (buckets).
    pub longest_probe: u32,
    /// Stale bindings dropped (their entity was released without a detach).
    pub stale_dropped: u64,
}

/// Durable key ↔ handle bindings of one registry, fixed capacity (module docs).
pub struct WorldBindingTable<A: Allocator + Clone = Global> {
    /// Owner token of the registry whose entities this table binds (0: unattached).
    owner: OwnerToken,
    /// The control bytes of each group of [`GROUP`] entries.
    ctrl: Vec<Group, A>,
    entries: Vec<Entry, A>,
    /// Groups minus one (a power of two minus one); 0 for a disabled table.
    mask: usize,
    /// One entry per registry slot.
    reverse: Vec<Reverse, A>,
    len: usize,
    capacity: usize,
    secret: [u64; 4],
    revision: u64,
    stats: BindingStats,
    /// Keys reserved by a duplication or transaction in progress, with the index of each
    /// one's entry (capacity: `capacity`). Entries never move while keys are reserved (a
    /// reservation only fills a vacant entry; nothing is removed until they are published or
    /// released).
    scratch: Vec<(Words, u32), A>,
    /// Keys are opaque 32-byte values (a stable-id index), not pairs of v4 UUIDs.
    raw: bool,
}

impl<A: Allocator + Clone> core::fmt::Debug for WorldBindingTable<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("WorldBindingTable")
            .field("owner", &self.owner)
            .field("len", &self.len)
            .field("capacity", &self.capacity)
            .field("entries", &self.entries.len())
            .field("revision", &self.revision)
            .field("stats", &self.stats)
            .finish()
    }
}

/// A per-table secret from the standard library's randomly keyed hasher (the same source
/// `HashMap` seeds from; each `RandomState` is keyed differently).
fn fresh_secret() -> [u64; 4] {
    let mut s = [0u64; 4];
    for (i, w) in s.iter_mut().enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        *w = h.finish();
    }
    s
}

impl WorldBindingTable<Global> {
    /// A table for up to `capacity` bindings of `registry`'s entities, on the global allocator.
    ///
    /// # Errors
    /// As [`try_new_in`](Self::try_new_in).
    pub fn try_new(
        registry: &EntityRegistry<impl Allocator + Clone>,
        capacity: usize,
    ) -> Result<Self, InitError> {
        Self::try_new_in(registry.owner(), registry.capacity(), capacity, Global)
    }
}

impl<A: Allocator + Clone> WorldBindingTable<A> {
    /// A table for up to `capacity` bindings (at most `slots`) of the entities of the registry
    /// with owner token `owner` and `slots` slots, allocating from `alloc`.
    ///
    /// # Errors
    /// [`InitError::CapacityTooLarge`] beyond [`MAX_BINDINGS`]; [`InitError::Allocation`].
    pub fn try_new_in(
        owner: OwnerToken,
        slots: usize,
        capacity: usize,
        alloc: A,
    ) -> Result<Self, InitError> {
        let capacity = capacity.min(slots);
        if capacity > MAX_BINDINGS {
            return Err(InitError::CapacityTooLarge {
                requested: capacity,
                max: MAX_BINDINGS,
            });
        }
        let entries = if capacity == 0 {
            0
        } else {
            (2 * capacity).next_power_of_two().max(16)
        };
        Ok(Self {
            owner,
            ctrl: filled(entries / GROUP, ALL_EMPTY, alloc.clone())?,
            entries: filled(entries, VACANT, alloc.clone())?,
            mask: (entries / GROUP).saturating_sub(1),
            reverse: filled(
                if capacity == 0 { 0 } else { slots },
                UNBOUND,
                alloc.clone(),
            )?,
            len: 0,
            capacity,
            secret: fresh_secret(),
            revision: 0,
            stats: BindingStats::default(),
            // Written once at init: the first large transaction or duplication does not
            // fault its pages in.
            scratch: crate::world::store::reserve::resident(capacity, (Words::ZERO, 0), alloc)?,
            raw: false,
        })
    }

    /// As [`try_new_in`](Self::try_new_in), for opaque 32-byte keys (no UUID validation): the
    /// stable-id index of a durable world.
    pub(crate) fn try_new_raw_in(
        owner: OwnerToken,
        slots: usize,
        capacity: usize,
        alloc: A,
    ) -> Result<Self, InitError> {
        let mut t = Self::try_new_in(owner, slots, capacity, alloc)?;
        t.raw = true;
        Ok(t)
    }

    /// Attaches an unattached table to its registry's owner token (a world does this at
    /// init, after the token is issued); a no-op when already attached.
    pub(crate) fn attach(&mut self, owner: OwnerToken) {
        if self.owner == 0 {
            self.owner = owner;
        }
    }

    /// Fixes the hashing secret (tests of crafted collision sets). Clears the table.
    #[cfg(feature = "test-hooks")]
    pub fn test_hook_set_secret(&mut self, secret: [u64; 4]) {
        self.clear();
        self.secret = secret;
    }

    /// Owner token of the registry this table binds (0 when unattached).
    #[inline]
    pub fn owner(&self) -> OwnerToken {
        self.owner
    }

    /// Live bindings.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// No bindings.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The fixed number of bindings the table can hold.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Advances on every publish (one per activated batch) and every removal: compare it with
    /// the value seen when a negative result was cached.
    #[inline]
    pub fn binding_revision(&self) -> u64 {
        self.revision
    }

    /// Conflict and probe counters.
    #[inline]
    pub fn stats(&self) -> BindingStats {
        self.stats
    }

    /// Bytes of fixed storage (forward entries and control bytes, reverse entries).
    pub fn footprint_bytes(&self) -> usize {
        self.ctrl.len() * core::mem::size_of::<Group>()
            + self.entries.len() * core::mem::size_of::<Entry>()
            + self.reverse.len() * core::mem::size_of::<Reverse>()
    }

    /// The keyed 64-bit hash of a key (its tag): the high half picks the home group, the low
    /// seven bits are the control byte.
    #[inline(always)]
    fn tag(&self, w: &Words) -> u64 {
        let s = &self.secret;
        let object = fold(w.object[0] ^ s[0], w.object[1] ^ s[1]);
        let instance = fold(w.instance[0] ^ s[2], w.instance[1] ^ s[3]);
        object ^ instance.rotate_left(32)
    }

    #[inline(always)]
    fn home(&self, tag: u64) -> usize {
        (tag >> 32) as usize & self.mask
    }

    #[inline(always)]
    fn entry(&self, i: usize) -> &Entry {
        &self.entries[i]
    }

    /// The control byte of entry `i`.
    #[inline(always)]
    fn control(&self, i: usize) -> u8 {
        self.ctrl[i / GROUP].0[i % GROUP]
    }

    /// Sets the control byte of entry `i`.
    #[inline(always)]
    fn set_control(&mut self, i: usize, byte: u8) {
        self.ctrl[i / GROUP].0[i % GROUP] = byte;
    }

    /// Fills entry `i` (empty) with `e`, whose key has hash `tag`.
    #[inline(always)]
    fn fill(&mut self, i: usize, tag: u64, e: Entry) {
        self.entries[i] = e;
        self.set_control(i, h2(tag));
    }

    /// Whether entry `i` is full.
    #[inline(always)]
    fn is_full(&self, i: usize) -> bool {
        self.control(i) & EMPTY == 0
    }

    /// Looks `w` up: its entry, or the first empty entry of its probe sequence (groups from
    /// its home, stopping at the first group with an empty entry).
    #[inline(always)]
    fn probe(&self, w: &Words) -> Probe {
        self.probe_tagged(w, self.tag(w))
    }

    /// [`probe`](Self::probe) with the key's tag already computed.
    #[inline(always)]
    fn probe_tagged(&self, w: &Words, tag: u64) -> Probe {
        if self.ctrl.is_empty() {
            return Probe::Limit;
        }
        let byte = h2(tag);
        let high = (tag >> 32) as u32;
        let mut g = self.home(tag);
        for _ in 0..MAX_PROBE / GROUP {
            let ctrl = self.ctrl[g];
            let mut hits = ctrl.matches(byte);
            while hits != 0 {
                let i = g * GROUP + lowest(hits);
                let e = *self.entry(i);
                if e.home == high && self.key_at(e).is_some_and(|k| k.same(w)) {
                    return Probe::Found(i);
                }
                hits &= hits - 1;
            }
            let empty = ctrl.empties();
            if empty != 0 {
                return Probe::Vacant(g * GROUP + lowest(empty));
            }
            g = (g + 1) & self.mask;
        }
        Probe::Limit
    }

    /// The key of full entry `e`: its slot's reverse entry's, or a reservation's (`None` for a
    /// reservation no longer held: it matches no key).
    #[inline(always)]
    fn key_at(&self, e: Entry) -> Option<&Words> {
        match self.reverse.get(e.slot as usize) {
            Some(r) => Some(&r.key),
            None => self
                .scratch
                .get((u32::MAX - e.slot) as usize)
                .map(|(w, _)| w),
        }
    }

    /// The binding of key `w`, if any: its slot and reverse entry ([`probe`](Self::probe)'s
    /// hit path alone, what every lookup takes). A reservation is passed over: its key is in
    /// the table once, so a probe that skips it ends at an empty entry.
    #[inline(always)]
    fn find(&self, w: &Words) -> Option<(u32, &Reverse)> {
        let tag = self.tag(w);
        let byte = h2(tag);
        let high = (tag >> 32) as u32;
        let mut g = self.home(tag);
        // The home group's entries are asked for with its control bytes, not after them: a
        // hit then waits for one of the two reads, not for both in turn.
        if let Some(first) = self.entries.get(g * GROUP..(g + 1) * GROUP) {
            crate::hint::prefetch(&first[0]);
            crate::hint::prefetch(&first[GROUP / 2]);
        }
        for _ in 0..MAX_PROBE / GROUP {
            let ctrl = *self.ctrl.get(g)?;
            let mut hits = ctrl.matches(byte);
            while hits != 0 {
                let e = self.entries[g * GROUP + lowest(hits)];
                if e.home == high {
                    if let Some(r) = self.reverse.get(e.slot as usize) {
                        if r.key.same(w) {
                            return Some((e.slot, r));
                        }
                    }
                }
                hits &= hits - 1;
            }
            if ctrl.empties() != 0 {
                return None;
            }
            g = (g + 1) & self.mask;
        }
        None
    }

    /// The entity of the binding of `slot` whose reverse entry is `r`.
    #[inline(always)]
    fn entity_at(&self, slot: u32, r: &Reverse) -> EntityId {
        EntityId::from_raw_parts(self.owner, slot, r.generation)
    }

    /// The entity bound at full entry `i`, `None` for a reservation.
    #[inline(always)]
    fn bound_at(&self, i: usize) -> Option<EntityId> {
        let slot = self.entry(i).slot;
        self.reverse
            .get(slot as usize)
            .map(|r| self.entity_at(slot, r))
    }

    /// Empties entry `i` and keeps every probe sequence intact (no tombstone): an entry of a
    /// later group whose probe passed the hole's group moves into the hole, and so on until a
    /// group that was not full (no probe sequence runs past it).
    fn remove_entry(&mut self, i: usize) {
        let mut hole = i;
        let mut g = hole / GROUP;
        let was_full = self.ctrl[g].empties() == 0;
        self.set_control(hole, EMPTY);
        if !was_full {
            // No probe sequence passed a group with an empty entry: nothing moves.
            return;
        }
        // Every other group at most, never the hole's own again: an entry of that group never
        // passed it (so a table of one group moves nothing on a removal).
        for _ in 0..self.mask {
            g = (g + 1) & self.mask;
            let was_full = self.ctrl[g].empties() == 0;
            let hole_group = hole / GROUP;
            let movable = (g * GROUP..(g + 1) * GROUP).find(|&j| {
                self.is_full(j) && {
                    let home = self.entries[j].home as usize & self.mask;
                    // The entry may move to the hole's group unless its home lies cyclically
                    // in `(hole_group, g]`.
                    (g.wrapping_sub(home) & self.mask) >= (g.wrapping_sub(hole_group) & self.mask)
                }
            });
            if let Some(j) = movable {
                self.entries[hole] = self.entries[j];
                self.set_control(hole, self.control(j));
                self.set_control(j, EMPTY);
                hole = j;
            }
            if !was_full {
                break;
            }
        }
    }

    /// Removes the binding of `key` (forward and reverse), if any; true when one was removed.
    fn unbind_key(&mut self, w: &Words) -> bool {
        match self.probe(w) {
            Probe::Found(i) => {
                self.unbind_at(i, w);
                true
            }
            _ => false,
        }
    }

    /// Removes the binding of key `w`, found at entry `i` (forward and reverse).
    fn unbind_at(&mut self, i: usize, w: &Words) {
        let slot = self.entry(i).slot as usize;
        self.remove_entry(i);
        // The reverse entry is this key's (a slot's entry names the key it binds).
        if let Some(r) = self.reverse.get_mut(slot).filter(|r| r.key == *w) {
            *r = UNBOUND;
        }
        self.len -= 1;
    }

    /// Drops every binding (the revision advances when there was one).
    #[cfg(feature = "test-hooks")]
    fn clear(&mut self) {
        if self.len > 0 {
            self.ctrl.iter_mut().for_each(|c| *c = ALL_EMPTY);
            self.reverse.iter_mut().for_each(|r| *r = UNBOUND);
            self.len = 0;
            self.revision += 1;
        }
    }

    /// Validates and publishes a batch of bindings, all or nothing: every entity live and
    /// active in `registry`, every key nonnil v4, neither already bound, no repeat inside the
    /// batch. On success both maps are published and the revision advances once.
    ///
    /// # Errors
    /// [`ActivationError`], naming the first refused candidate; nothing is published.
    pub fn try_activate<B: Allocator + Clone>(
        &mut self,
        registry: &EntityRegistry<B>,
        batch: &[Activation],
    ) -> Result<(), ActivationError> {
        if self.owner == 0 || self.owner != registry.owner() {
            return Err(ActivationError::ForeignRegistry);
        }
        if batch.len() > self.capacity - self.len {
            return Err(ActivationError::CapacityExhausted {
                requested: batch.len(),
                available: self.capacity - self.len,
                capacity: self.capacity,
            });
        }
        // The keys are random: each candidate's home control bytes are asked for `2 × PREFETCH`
        // candidates ahead of its placement, and the entry its insert will likely fill (the
        // first empty one of its home group) `PREFETCH` ahead; its tag is kept until then (one
        // hash per key).
        const RING: usize = 2 * PREFETCH;
        let mut tags = [0u64; RING];
        for (j, ahead) in batch.iter().take(RING).enumerate() {
            tags[j] = self.tag(&words(&ahead.key));
            self.prefetch_control(tags[j]);
        }
        for &t in tags.iter().take(batch.len().min(PREFETCH)) {
            self.prefetch_vacancy(t);
        }
        for (index, c) in batch.iter().enumerate() {
            let tag = tags[index % RING];
            if let Some(ahead) = batch.get(index + RING) {
                tags[index % RING] = self.tag(&words(&ahead.key));
                self.prefetch_control(tags[index % RING]);
            }
            if index + PREFETCH < batch.len() {
                self.prefetch_vacancy(tags[(index + PREFETCH) % RING]);
            }
            if let Err(reason) = self.insert_candidate(registry, batch, index, c, tag) {
                // Roll back the candidates inserted so far: none was observable.
                for done in &batch[..index] {
                    self.unbind_key(&words(&done.key));
                }
                match reason {
                    CandidateRejection::ProbeLimit => self.stats.probe_limit_hits += 1,
                    CandidateRejection::Entity(_) | CandidateRejection::InvalidKey(_) => {}
                    _ => self.stats.conflicts += 1,
                }
                return Err(ActivationError::Candidate { index, reason });
            }
        }
        if !batch.is_empty() {
            self.revision += 1;
        }
        Ok(())
    }

    fn insert_candidate<B: Allocator + Clone>(
        &mut self,
        registry: &EntityRegistry<B>,
        batch: &[Activation],
        index: usize,
        c: &Activation,
        tag: u64,
    ) -> Result<(), CandidateRejection> {
        if !registry.is_active(c.entity) {
            return Err(CandidateRejection::Entity(
                registry
                    .diagnose(c.entity)
                    .err()
                    .unwrap_or(Rejection::Stale),
            ));
        }
        let w = words(&c.key);
        if !self.raw && !is_v4_pair(&w) {
            check_key_slow(&c.key).map_err(CandidateRejection::InvalidKey)?;
        }
        let slot = c.entity.slot() as usize;
        // A table sized for fewer slots than its registry refuses the others.
        let Some(bound) = self.reverse.get(slot).map(|r| r.generation) else {
            return Err(CandidateRejection::Entity(Rejection::OutOfRange));
        };
        if bound != 0 {
            self.slot_already_bound(batch, index, c)?;
        }
        debug_assert_eq!(tag, self.tag(&w));
        let vacant = loop {
            match self.probe_tagged(&w, tag) {
                Probe::Vacant(i) => break i,
                Probe::Limit => return Err(CandidateRejection::ProbeLimit),
                Probe::Found(i) => {
                    // A reservation (its slot is past every slot): counted nowhere, and its
                    // duplication will publish or release it; never dropped as stale here.
                    let Some(existing) = self.bound_at(i) else {
                        return Err(CandidateRejection::KeyReserved);
                    };
                    if !registry.is_alive(existing) {
                        // Stale: drop it (a removal: the revision advances) and probe again
                        // (the shift may have moved the gap). Each turn removes an entry, so
                        // the loop ends.
                        self.unbind_at(i, &w);
                        self.stats.stale_dropped += 1;
                        self.revision += 1;
                        continue;
                    }
                    return Err(match batch[..index].iter().position(|d| d.key == c.key) {
                        Some(first) => CandidateRejection::DuplicateKey { first },
                        None => CandidateRejection::KeyBound { existing },
                    });
                }
            }
        };
        let groups = (vacant / GROUP).wrapping_sub(self.home(tag)) & self.mask;
        let probe_len = (groups * GROUP + vacant % GROUP) as u32 + 1;
        self.stats.longest_probe = self.stats.longest_probe.max(probe_len);
        self.fill(
            vacant,
            tag,
            Entry {
                slot: slot as u32,
                home: (tag >> 32) as u32,
            },
        );
        self.reverse[slot] = Reverse {
            key: w,
            generation: c.entity.generation(),
            kind: c.kind.0,
        };
        self.len += 1;
        Ok(())
    }

    /// The candidate's slot holds a binding: refused when it is this entity's, else a stale
    /// binding of the slot's former incarnation (released without a detach), dropped. Dropping
    /// it is a removal (the revision advances), whatever the batch's fate.
    #[cold]
    fn slot_already_bound(
        &mut self,
        batch: &[Activation],
        index: usize,
        c: &Activation,
    ) -> Result<(), CandidateRejection> {
        let rev = self.reverse[c.entity.slot() as usize];
        if rev.generation == c.entity.generation() {
            return Err(
                match batch[..index].iter().position(|d| d.entity == c.entity) {
                    Some(first) => CandidateRejection::DuplicateEntity { first },
                    None => CandidateRejection::EntityBound {
                        existing: key_of(&rev.key),
                    },
                },
            );
        }
        self.unbind_key(&rev.key);
        self.stats.stale_dropped += 1;
        self.revision += 1;
        Ok(())
    }

    /// Asks for the control bytes of the home group of the key with `tag`.
    #[inline(always)]
    fn prefetch_control(&self, tag: u64) {
        if let Some(c) = self.ctrl.get(self.home(tag)) {
            crate::hint::prefetch(c);
        }
    }

    /// Asks for the entry an insert of the key with `tag` will likely fill: the first empty
    /// one of its home group (its control bytes read; nothing when the group is full).
    #[inline(always)]
    fn prefetch_vacancy(&self, tag: u64) {
        let g = self.home(tag);
        let Some(&ctrl) = self.ctrl.get(g) else {
            return;
        };
        let empty = ctrl.empties();
        if empty != 0 {
            if let Some(e) = self.entries.get(g * GROUP + lowest(empty)) {
                crate::hint::prefetch(e);
            }
        }
    }

    /// Where inserting `keys`, in order, into this table once it is empty would stop: the
    /// index of the first key whose probe would pass [`MAX_PROBE`] entries, or `None` when
    /// all of them fit. Exactly what [`try_activate`](Self::try_activate) of those keys into
    /// the empty table does (each takes the first vacant entry from its home group; nothing is
    /// removed meanwhile), without touching the table: a restore that empties the table and
    /// refills it checks first that the refill cannot fail.
    pub(crate) fn first_overflow_when_empty(
        &self,
        keys: impl Iterator<Item = PersistentObjectKey>,
    ) -> Option<usize> {
        let mut fill = vec![0u8; self.ctrl.len()];
        for (index, key) in keys.enumerate() {
            let mut g = self.home(self.tag(&words(&key)));
            let mut placed = false;
            for _ in 0..MAX_PROBE / GROUP {
                let Some(f) = fill.get_mut(g) else { break };
                if usize::from(*f) < GROUP {
                    *f += 1;
                    placed = true;
                    break;
                }
                g = (g + 1) & self.mask;
            }
            if !placed {
                return Some(index);
            }
        }
        None
    }

    /// Reserves a free `key` in the forward map for a duplication in progress: a placeholder
    /// entry whose slot, `u32::MAX - k` (beyond every registry slot), names the key's place
    /// `k` among the reserved keys, so it matches that key exactly. False when the key is taken,
    /// its probe is too long, or `capacity - len` keys are reserved already.
    pub(crate) fn reserve(&mut self, key: &PersistentObjectKey) -> bool {
        let w = words(key);
        self.reserve_tagged(&w, self.tag(&w))
    }

    /// [`reserve`](Self::reserve) of the key with words `w` and hash `tag`.
    fn reserve_tagged(&mut self, w: &Words, tag: u64) -> bool {
        if self.scratch.len() >= self.capacity - self.len {
            return false;
        }
        match self.probe_tagged(w, tag) {
            Probe::Vacant(i) => {
                let slot = u32::MAX - self.scratch.len() as u32;
                self.fill(
                    i,
                    tag,
                    Entry {
                        slot,
                        home: (tag >> 32) as u32,
                    },
                );
                self.scratch.push((*w, i as u32));
                true
            }
            _ => false,
        }
    }

    /// [`reserve`](Self::reserve) of `key(0)`, `key(1)`, … `key(n - 1)` in order, each key's
    /// control bytes asked for `2 × PREFETCH` keys ahead of its turn and the entry it will
    /// likely fill `PREFETCH` ahead (random keys in a large table miss the cache at each
    /// step). False at the first key that is `None` or refused; the keys reserved before it
    /// stay reserved (the caller abandons them).
    pub(crate) fn reserve_each(
        &mut self,
        n: usize,
        key: impl Fn(usize) -> Option<PersistentObjectKey>,
    ) -> bool {
        const RING: usize = 2 * PREFETCH;
        let mut ahead = [(Words::ZERO, 0u64, false); RING];
        let hash = |t: &Self, ahead: &mut [(Words, u64, bool); RING], j: usize| {
            ahead[j % RING] = match key(j) {
                Some(k) => {
                    let w = words(&k);
                    let tag = t.tag(&w);
                    t.prefetch_control(tag);
                    (w, tag, true)
                }
                None => (Words::ZERO, 0, false),
            };
        };
        for j in 0..n.min(RING) {
            hash(self, &mut ahead, j);
        }
        for &(_, tag, some) in ahead.iter().take(n.min(PREFETCH)) {
            if some {
                self.prefetch_vacancy(tag);
            }
        }
        for i in 0..n {
            let (w, tag, some) = ahead[i % RING];
            if i + RING < n {
                hash(self, &mut ahead, i + RING);
            }
            if i + PREFETCH < n {
                let (_, t, s) = ahead[(i + PREFETCH) % RING];
                if s {
                    self.prefetch_vacancy(t);
                }
            }
            if !some || !self.reserve_tagged(&w, tag) {
                return false;
            }
        }
        true
    }

    /// Whether every reservation still sits where `reserve` put it (nothing removed or moved
    /// an entry of the table since: see `publish_scratch`).
    pub(crate) fn scratch_intact(&self) -> bool {
        self.scratch.iter().enumerate().all(|(k, &(_, i))| {
            let i = i as usize;
            i < self.entries.len() && self.is_full(i) && self.entry(i).slot == u32::MAX - k as u32
        })
    }

    /// Whether no key is reserved.
    pub(crate) fn scratch_is_empty(&self) -> bool {
        self.scratch.is_empty()
    }

    /// How many keys are reserved.
    pub(crate) fn scratch_len(&self) -> usize {
        self.scratch.len()
    }

    /// Binds reserved key `k` to `entity` (forward and reverse). False, publishing nothing,
    /// when the reservation is not where `reserve` put it, or `entity`'s slot is outside the
    /// table or already holds a binding (a slot's reverse entry holds the key of the one
    /// forward entry that names it: a second key would take it from the first); the caller
    /// then ends the batch with [`abandon_scratch`](Self::abandon_scratch), which releases
    /// what was not published.
    #[must_use]
    pub(crate) fn publish_scratch(
        &mut self,
        k: usize,
        entity: EntityId,
        kind: BindingKind,
    ) -> bool {
        let Some(&(w, i)) = self.scratch.get(k) else {
            return false;
        };
        // The reservation's entry, where `reserve` put it (see `scratch`); checked all the
        // same, so that a misuse publishes nothing rather than the wrong entry.
        let i = i as usize;
        if self.entries.len() <= i || !self.is_full(i) || self.entry(i).slot != u32::MAX - k as u32
        {
            return false;
        }
        match self.reverse.get_mut(entity.slot() as usize) {
            Some(r) if r.generation == 0 => {
                *r = Reverse {
                    key: w,
                    generation: entity.generation(),
                    kind: kind.0,
                };
            }
            _ => return false,
        }
        self.entries[i].slot = entity.slot();
        true
    }

    /// Ends a reservation batch, finished or not: keys still reserved are released, keys
    /// already published are kept and counted as the bindings they are (one revision when
    /// there are any). A batch cut short anywhere, a panic included, leaves the table as if it
    /// had stopped cleanly after its last publication.
    pub(crate) fn abandon_scratch(&mut self) {
        let mut published = 0;
        for k in 0..self.scratch.len() {
            let w = self.scratch[k].0;
            if let Probe::Found(i) = self.probe(&w) {
                if self.entry(i).slot == u32::MAX - k as u32 {
                    self.remove_entry(i);
                } else {
                    published += 1;
                }
            }
        }
        self.close_scratch(published);
    }

    /// Completes a duplication that published `k` reserved keys: one revision.
    pub(crate) fn finish_scratch(&mut self, k: usize) {
        if k != self.scratch.len() {
            // Not every key published: release the rest (a reservation's key lives in
            // `scratch`, so none may outlive it).
            return self.abandon_scratch();
        }
        self.close_scratch(k);
    }

    /// Ends a reservation batch of which `k` keys were published (and the rest released).
    fn close_scratch(&mut self, k: usize) {
        self.len += k;
        if k > 0 {
            self.revision += 1;
        }
        self.scratch.clear();
    }

    /// Removes `entity`'s binding (inside the destruction order, before its slot is
    /// released); returns the key it had. The revision advances when one was removed.
    pub fn detach(&mut self, entity: EntityId) -> Option<PersistentObjectKey> {
        let key = self.key_of(entity)?;
        self.unbind_key(&words(&key));
        self.revision += 1;
        Some(key)
    }

    /// Whether `entity`'s slot may hold a binding (cheap pre-check for destroy).
    #[inline(always)]
    pub(crate) fn may_bind(&self, slot: u32) -> bool {
        self.reverse
            .get(slot as usize)
            .is_some_and(|r| r.generation != 0)
    }

    /// The key bound to `entity` (reverse mapping, one slot read), validated by owner and
    /// generation.
    #[inline]
    pub fn key_of(&self, entity: EntityId) -> Option<PersistentObjectKey> {
        self.binding_of(entity).map(|(k, _)| k)
    }

    /// The key and kind bound to `entity`.
    #[inline]
    pub fn binding_of(&self, entity: EntityId) -> Option<(PersistentObjectKey, BindingKind)> {
        if entity.owner() != self.owner || self.owner == 0 {
            return None;
        }
        let r = self.reverse.get(entity.slot() as usize)?;
        (r.generation != 0 && r.generation == entity.generation())
            .then(|| (key_of(&r.key), BindingKind(r.kind)))
    }

    /// Whether `key` has a binding (live or stale).
    pub fn contains_key(&self, key: &PersistentObjectKey) -> bool {
        matches!(self.probe(&words(key)), Probe::Found(..))
    }

    /// [`lookup`](Self::lookup) of every key of `keys`, the entity (or `None`) written to the
    /// same place of `out`; returns how many resolved. The keys go through a pipeline: a key
    /// is hashed and its group's control bytes asked for [`LOOKUP_BATCH`] keys before it is
    /// confirmed, matched against them (its forward entry asked for) 24 keys before, and its
    /// forward entry read (the reverse entry it names asked for) 12 keys before. Random keys in
    /// a large table miss the cache at each step, and the pipeline keeps several keys' misses
    /// in flight instead of one lookup's at a time. A control-byte match that does not
    /// confirm is looked up again whole, so the result always equals `lookup`'s. A table small
    /// enough to stay in cache is looked up key by key.
    ///
    /// # Panics
    /// When `out` is shorter than `keys`.
    pub fn lookup_batch<B: Allocator + Clone>(
        &self,
        registry: &EntityRegistry<B>,
        keys: &[PersistentObjectKey],
        out: &mut [Option<EntityId>],
    ) -> usize {
        self.lookup_batch_in::<B, false>(registry, keys, out)
    }

    /// [`lookup_batch`](Self::lookup_batch) on the table of a world whose registry is
    /// `registry` (see [`is_live_binding`](Self::is_live_binding)).
    pub(crate) fn lookup_batch_attached<B: Allocator + Clone>(
        &self,
        registry: &EntityRegistry<B>,
        keys: &[PersistentObjectKey],
        out: &mut [Option<EntityId>],
    ) -> usize {
        self.lookup_batch_in::<B, true>(registry, keys, out)
    }

    fn lookup_batch_in<B: Allocator + Clone, const ATTACHED: bool>(
        &self,
        registry: &EntityRegistry<B>,
        keys: &[PersistentObjectKey],
        out: &mut [Option<EntityId>],
    ) -> usize {
        assert!(
            out.len() >= keys.len(),
            "lookup_batch: `out` is shorter than `keys`"
        );
        let mut found = 0;
        if self.footprint_bytes() <= CACHED_TABLE {
            // A table this small stays in cache: the passes would only add work.
            let limit = self.live_limit::<B, ATTACHED>(registry);
            for (key, o) in keys.iter().zip(out.iter_mut()) {
                *o = self.lookup_limited(registry, key, limit).map(|(e, _)| e);
                found += usize::from(o.is_some());
            }
            return found;
        }
        self.lookup_passes::<B, ATTACHED>(registry, keys, out)
    }

    /// [`lookup_batch`](Self::lookup_batch) as a software pipeline, whatever the table's size
    /// (`out` at least as long as `keys`): key `i + TAG_AHEAD` is hashed and its control bytes
    /// asked for, key `i + MATCH_AHEAD` is matched against them and its forward entry asked
    /// for, key `i + SLOT_AHEAD` reads that entry and asks for the reverse entry it names, and
    /// key `i` is confirmed there.
    fn lookup_passes<B: Allocator + Clone, const ATTACHED: bool>(
        &self,
        registry: &EntityRegistry<B>,
        keys: &[PersistentObjectKey],
        out: &mut [Option<EntityId>],
    ) -> usize {
        // Each stage's lead covers the miss it waits for at 1M keys (forward entries and
        // reverse entries both past the cache): 16 / 12 / 8 read ~10% slower there.
        const RING: usize = 64;
        const TAG_AHEAD: usize = LOOKUP_BATCH;
        const MATCH_AHEAD: usize = 24;
        const SLOT_AHEAD: usize = 12;
        const _: () =
            assert!(TAG_AHEAD < RING && SLOT_AHEAD < MATCH_AHEAD && MATCH_AHEAD < TAG_AHEAD);
        let mut tags = [0u64; RING];
        // The first entry of a key's probe sequence whose control byte matches (`usize::MAX`:
        // none), then the slot that entry names when its hash's high half matches too
        // (`u32::MAX`: none, or a reservation's).
        let mut at = [usize::MAX; RING];
        let mut slots = [u32::MAX; RING];
        let n = keys.len();
        let mut found = 0;
        let limit = self.live_limit::<B, ATTACHED>(registry);
        let hash = |tags: &mut [u64; RING], j: usize| {
            let t = self.tag(&words(&keys[j]));
            tags[j % RING] = t;
            self.prefetch_control(t);
        };
        let first = |at: &mut [usize; RING], tags: &[u64; RING], j: usize| {
            let a = self.first_match(tags[j % RING]);
            at[j % RING] = a;
            if let Some(e) = self.entries.get(a) {
                crate::hint::prefetch(e);
            }
        };
        let slot = |slots: &mut [u32; RING], at: &[usize; RING], tags: &[u64; RING], j: usize| {
            slots[j % RING] = match self.entries.get(at[j % RING]) {
                Some(e) if e.home == (tags[j % RING] >> 32) as u32 => {
                    if let Some(r) = self.reverse.get(e.slot as usize) {
                        // Both ends: a reverse entry may straddle two lines.
                        crate::hint::prefetch(r);
                        crate::hint::prefetch(&r.key.object[1]);
                    }
                    e.slot
                }
                _ => u32::MAX,
            };
        };
        for j in 0..n.min(TAG_AHEAD) {
            hash(&mut tags, j);
        }
        for j in 0..n.min(MATCH_AHEAD) {
            first(&mut at, &tags, j);
        }
        for j in 0..n.min(SLOT_AHEAD) {
            slot(&mut slots, &at, &tags, j);
        }
        for (i, (key, o)) in keys.iter().zip(out.iter_mut()).enumerate() {
            if i + TAG_AHEAD < n {
                hash(&mut tags, i + TAG_AHEAD);
            }
            if i + MATCH_AHEAD < n {
                first(&mut at, &tags, i + MATCH_AHEAD);
            }
            if i + SLOT_AHEAD < n {
                slot(&mut slots, &at, &tags, i + SLOT_AHEAD);
            }
            *o = if at[i % RING] == usize::MAX {
                None
            } else {
                let s = slots[i % RING];
                match self.reverse.get(s as usize) {
                    Some(r) if r.key.same(&words(key)) => {
                        let id = self.entity_at(s, r);
                        if ATTACHED {
                            // One compare (see `is_live_binding`): checked here.
                            Self::live_below(registry, limit, s, id).then_some(id)
                        } else {
                            // The registry's entry is read after the pipeline.
                            registry.prefetch_slot(s);
                            Some(id)
                        }
                    }
                    // A false match (control byte, hash or key), or a reservation: the whole
                    // probe decides.
                    _ => self.lookup_limited(registry, key, limit).map(|(e, _)| e),
                }
            };
            if ATTACHED {
                found += usize::from(o.is_some());
            }
        }
        if ATTACHED {
            return found;
        }
        for o in out.iter_mut().take(n) {
            if let Some(e) = *o {
                if !self.is_live_binding::<B, ATTACHED>(registry, e.slot(), e) {
                    *o = None;
                }
            }
            found += usize::from(o.is_some());
        }
        found
    }

    /// The index of the first entry of `tag`'s probe sequence whose control byte matches, or
    /// `usize::MAX` when the sequence ends (an empty entry) or reaches [`MAX_PROBE`] first.
    #[inline(always)]
    fn first_match(&self, tag: u64) -> usize {
        if self.ctrl.is_empty() {
            return usize::MAX;
        }
        let byte = h2(tag);
        let mut g = self.home(tag);
        for _ in 0..MAX_PROBE / GROUP {
            let ctrl = self.ctrl[g];
            let hits = ctrl.matches(byte);
            if hits != 0 {
                return g * GROUP + lowest(hits);
            }
            if ctrl.empties() != 0 {
                return usize::MAX;
            }
            g = (g + 1) & self.mask;
        }
        usize::MAX
    }

    /// The live binding of `key`, validated against `registry` (owner and generation); a
    /// stale one reads as absent.
    #[inline(always)]
    pub fn lookup<B: Allocator + Clone>(
        &self,
        registry: &EntityRegistry<B>,
        key: &PersistentObjectKey,
    ) -> Option<(EntityId, BindingKind)> {
        self.lookup_in::<B, false>(registry, key)
    }

    /// [`lookup`](Self::lookup); `ATTACHED`: this is the binding table of a world whose
    /// registry is `registry` (see [`is_live_binding`](Self::is_live_binding)).
    #[inline(always)]
    fn lookup_in<B: Allocator + Clone, const ATTACHED: bool>(
        &self,
        registry: &EntityRegistry<B>,
        key: &PersistentObjectKey,
    ) -> Option<(EntityId, BindingKind)> {
        self.lookup_limited(registry, key, self.live_limit::<B, ATTACHED>(registry))
    }

    /// [`lookup_in`](Self::lookup_in) with its [`live_limit`](Self::live_limit) computed.
    #[inline(always)]
    fn lookup_limited<B: Allocator + Clone>(
        &self,
        registry: &EntityRegistry<B>,
        key: &PersistentObjectKey,
        limit: usize,
    ) -> Option<(EntityId, BindingKind)> {
        // A reservation is never live: its slot lies beyond every slot.
        let (slot, r) = self.find(&words(key))?;
        let e = self.entity_at(slot, r);
        Self::live_below(registry, limit, slot, e).then_some((e, BindingKind(r.kind)))
    }

    /// Whether the binding found for `e` (at `slot`) names a live entity of `registry`.
    ///
    /// The checked form reads the registry's entry of the slot. `ATTACHED` (the table of a
    /// world, looked up with that world's registry) skips that read when the owners match: a
    /// world detaches a slot's binding before it releases the slot (`WorldOps::destroy` and
    /// `structural::destroy_run` are its only releases, and the registry is read-only outside
    /// them), activation binds only live entities, and a duplication publishes only copies alive in
    /// the registry of the table it publishes to, so every binding of its table names a live
    /// entity (`tests/durable/model.rs` resolves every key after every operation;
    /// `tests/soundness/durable.rs` tries a roster that switches parts). A
    /// reservation, whose slot lies beyond every registry slot, is never live.
    #[inline(always)]
    fn is_live_binding<B: Allocator + Clone, const ATTACHED: bool>(
        &self,
        registry: &EntityRegistry<B>,
        slot: u32,
        e: EntityId,
    ) -> bool {
        Self::live_below(registry, self.live_limit::<B, ATTACHED>(registry), slot, e)
    }

    /// Whether `e`, found bound at `slot`, is live: below `limit` (a
    /// [`live_limit`](Self::live_limit)) without a read, else as `registry` says.
    #[inline(always)]
    fn live_below<B: Allocator + Clone>(
        registry: &EntityRegistry<B>,
        limit: usize,
        slot: u32,
        e: EntityId,
    ) -> bool {
        (slot as usize) < limit || registry.is_alive(e)
    }

    /// The slots below which a binding found is live without reading `registry`: the reverse
    /// table's length when `ATTACHED` and the owners match (see
    /// [`is_live_binding`](Self::is_live_binding)), else 0 (the registry decides). A
    /// reservation's slot is past it (and the registry rejects that slot too). One value per
    /// batch: a loop compares each slot against it.
    #[inline(always)]
    fn live_limit<B: Allocator + Clone, const ATTACHED: bool>(
        &self,
        registry: &EntityRegistry<B>,
    ) -> usize {
        let attached = ATTACHED && self.owner != 0 && self.owner == registry.owner();
        if attached {
            self.reverse.len()
        } else {
            0
        }
    }

    /// Resolves `key` to a live entity of any kind; unbound keys are `Missing` (no catalog).
    #[inline]
    pub fn try_resolve<B: Allocator + Clone>(
        &self,
        registry: &EntityRegistry<B>,
        key: &PersistentObjectKey,
    ) -> Resolution {
        self.try_resolve_with(registry, key, None, &NoCatalog)
    }

    /// Resolves `key`, requiring `kind` when given, asking `catalog` about unbound keys. A
    /// stale binding reads as unbound (call [`prune`](Self::prune) to drop it).
    #[inline(always)]
    pub fn try_resolve_with<B: Allocator + Clone, C: ResidencyCatalog + ?Sized>(
        &self,
        registry: &EntityRegistry<B>,
        key: &PersistentObjectKey,
        kind: Option<BindingKind>,
        catalog: &C,
    ) -> Resolution {
        self.resolve_in::<B, C, false>(registry, key, kind, catalog)
    }

    /// [`try_resolve_with`](Self::try_resolve_with) on the table of a world whose registry
    /// is `registry` (see [`is_live_binding`](Self::is_live_binding)).
    #[inline(always)]
    pub(crate) fn resolve_attached<B: Allocator + Clone, C: ResidencyCatalog + ?Sized>(
        &self,
        registry: &EntityRegistry<B>,
        key: &PersistentObjectKey,
        kind: Option<BindingKind>,
        catalog: &C,
    ) -> Resolution {
        self.resolve_in::<B, C, true>(registry, key, kind, catalog)
    }

    #[inline(always)]
    fn resolve_in<B: Allocator + Clone, C: ResidencyCatalog + ?Sized, const ATTACHED: bool>(
        &self,
        registry: &EntityRegistry<B>,
        key: &PersistentObjectKey,
        kind: Option<BindingKind>,
        catalog: &C,
    ) -> Resolution {
        if let Some((e, found)) = self.lookup_in::<B, ATTACHED>(registry, key) {
            return match kind {
                Some(k) if k != found => Resolution::TypeMismatch { entity: e, found },
                _ => Resolution::Resolved(e),
            };
        }
        self.resolve_miss(key, catalog)
    }

    /// The unbound half of a resolve. Inlined: with the key check on the key's words a miss
    /// costs a few instructions, less than a call that returns the resolution through memory
    /// (`binding_iai`: −3.5% per lookup at one miss in ten).
    #[inline(always)]
    fn resolve_miss<C: ResidencyCatalog + ?Sized>(
        &self,
        key: &PersistentObjectKey,
        catalog: &C,
    ) -> Resolution {
        // Bound keys are valid by construction: only a miss needs the key checked.
        if !self.raw {
            if let Err(e) = check_key(key) {
                return Resolution::InvalidReference(InvalidReference::Key(e));
            }
        }
        match catalog.lookup(key) {
            CatalogEntry::NotResident => Resolution::NotResident,
            CatalogEntry::Unknown => Resolution::Missing,
            CatalogEntry::UnknownScope => {
                Resolution::InvalidReference(InvalidReference::UnknownScope)
            }
            CatalogEntry::Conflict => Resolution::Conflict,
        }
    }

    /// As [`try_resolve_with`](Self::try_resolve_with), dropping a stale binding of `key`
    /// (its entity released without a detach: only a standalone table, used without a world,
    /// can hold one) before reporting it `Missing`.
    pub fn try_resolve_mut<B: Allocator + Clone, C: ResidencyCatalog + ?Sized>(
        &mut self,
        registry: &EntityRegistry<B>,
        key: &PersistentObjectKey,
        kind: Option<BindingKind>,
        catalog: &C,
    ) -> Resolution {
        self.prune(registry, key);
        self.try_resolve_with(registry, key, kind, catalog)
    }

    /// Drops `key`'s binding when its entity is no longer alive in `registry`; true when one
    /// was dropped (the revision advances). Another table's registry (or any registry, for a
    /// table not attached to one) drops nothing: none of this table's entities lives there.
    pub fn prune<B: Allocator + Clone>(
        &mut self,
        registry: &EntityRegistry<B>,
        key: &PersistentObjectKey,
    ) -> bool {
        if self.owner == 0 || self.owner != registry.owner() {
            return false;
        }
        let w = words(key);
        if let Probe::Found(i) = self.probe(&w) {
            // A reservation is no binding: left to its duplication.
            if self.bound_at(i).is_some_and(|e| !registry.is_alive(e)) {
                self.unbind_key(&w);
                self.stats.stale_dropped += 1;
                self.revision += 1;
                return true;
            }
        }
        false
    }

    /// Every binding (key, entity, kind), in slot order (never hash order, so nothing
    /// observable depends on the secret).
    pub fn iter(&self) -> impl Iterator<Item = (PersistentObjectKey, EntityId, BindingKind)> + '_ {
        self.reverse
            .iter()
            .enumerate()
            .filter(|(_, r)| r.generation != 0)
            .map(|(slot, r)| {
                (
                    key_of(&r.key),
                    EntityId::from_raw_parts(self.owner, slot as u32, r.generation),
                    BindingKind(r.kind),
                )
            })
    }

    /// The bindings under `instance`, in slot order: `(slot, generation, object)`, the object
    /// UUID as its big-endian integer (integer order is byte order). Reads the entries' words
    /// as they are stored, never assembling a whole key (what a save's first pass walks).
    pub(crate) fn iter_instance(
        &self,
        instance: InstanceId,
    ) -> impl Iterator<Item = (u32, u32, u128)> + '_ {
        let want: [u64; 2] = bytemuck::pod_read_unaligned(instance.as_uuid().as_bytes());
        self.reverse
            .iter()
            .enumerate()
            .filter(move |(_, r)| r.generation != 0 && r.key.instance == want)
            .map(|(slot, r)| {
                // The words hold the UUID's bytes in memory order: each is a big-endian half.
                let [hi, lo] = r.key.object;
                let object = u128::from(u64::from_be(hi)) << 64 | u128::from(u64::from_be(lo));
                (slot as u32, r.generation, object)
            })
    }

    /// Corrupts the table for a test of [`check_consistent`](Self::check_consistent): its
    /// count of bindings drifts by one, every entry left as it was.
    #[cfg(test)]
    pub(crate) fn plant_count_drift(&mut self) {
        self.len += 1;
    }

    /// Checks both maps against each other (O(buckets)); for tests.
    pub fn check_consistent(&self) -> bool {
        let mut forward = 0;
        for i in 0..self.entries.len() {
            if !self.is_full(i) {
                continue;
            }
            let b = *self.entry(i);
            forward += 1;
            let Some(r) = self.reverse.get(b.slot as usize) else {
                return false;
            };
            let tag = self.tag(&r.key);
            // Reachable from its key at this very entry: no two entries name one slot.
            let reachable = matches!(self.probe(&r.key), Probe::Found(j) if j == i);
            if r.generation == 0
                || self.control(i) != h2(tag)
                || b.home != (tag >> 32) as u32
                || !reachable
            {
                return false;
            }
        }
        let reverse = self.reverse.iter().filter(|r| r.generation != 0).count();
        forward == self.len && reverse == self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::SourceObjectId;

    fn key(i: u128, o: u128) -> PersistentObjectKey {
        let v4 = |x: u128| {
            uuid::Builder::from_random_bytes(
                x.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c).to_le_bytes(),
            )
            .into_uuid()
        };
        PersistentObjectKey::new(
            InstanceId::from_uuid(v4(i)).unwrap(),
            SourceObjectId::from_uuid(v4(o)).unwrap(),
        )
    }

    fn setup(n: usize) -> (EntityRegistry, WorldBindingTable, std::vec::Vec<EntityId>) {
        let mut reg = EntityRegistry::try_with_capacity(n).unwrap();
        reg.set_structural_phase(true);
        let es = (0..n).map(|_| reg.try_create().unwrap()).collect();
        let table = WorldBindingTable::try_new(&reg, n).unwrap();
        (reg, table, es)
    }

    /// A key equals only itself: a key differing in any one bit of any of its four words is
    /// another key.
    #[test]
    fn keys_differing_in_any_word_are_not_the_same() {
        let k = words(&key(3, 4));
        assert!(k.same(&k));
        for word in 0..4 {
            for bit in [0, 31, 63] {
                let mut other = k;
                let w = match word {
                    0 => &mut other.instance[0],
                    1 => &mut other.instance[1],
                    2 => &mut other.object[0],
                    _ => &mut other.object[1],
                };
                *w ^= 1 << bit;
                assert!(!k.same(&other) && !other.same(&k), "word {word}, bit {bit}");
            }
        }
    }

    /// Keys whose whole hash is equal (a secret whose halves make swapped words collide) are
    /// told apart by the whole key: each resolves to its own entity, in one batch and key by
    /// key, and a removal leaves the others found.
    #[test]
    fn a_full_hash_collision_is_told_apart_by_the_whole_key() {
        let (reg, mut t, es) = setup(64);
        t.secret = [5, 5, 9, 9];
        t.raw = true;
        let w = words(&key(3, 4));
        let swap = |w: Words, instance: bool, object: bool| {
            let [i0, i1] = w.instance;
            let [o0, o1] = w.object;
            Words {
                instance: if instance { [i1, i0] } else { [i0, i1] },
                object: if object { [o1, o0] } else { [o0, o1] },
            }
        };
        let keys: std::vec::Vec<PersistentObjectKey> =
            [(false, false), (true, false), (false, true), (true, true)]
                .iter()
                .map(|&(i, o)| key_of(&swap(w, i, o)))
                .collect();
        assert!(keys.iter().all(|k| t.tag(&words(k)) == t.tag(&w)));
        let batch: std::vec::Vec<_> = keys
            .iter()
            .zip(&es)
            .map(|(&k, &e)| Activation::new(e, k))
            .collect();
        t.try_activate(&reg, &batch).unwrap();
        for (k, &e) in keys.iter().zip(&es) {
            assert_eq!(t.lookup(&reg, k).map(|(e, _)| e), Some(e));
        }
        let mut out = std::vec![None; 4];
        assert_eq!(t.lookup_passes::<_, false>(&reg, &keys, &mut out), 4);
        assert_eq!(
            out,
            es[..4]
                .iter()
                .map(|&e| Some(e))
                .collect::<std::vec::Vec<_>>()
        );
        assert_eq!(t.detach(es[1]), Some(keys[1]));
        assert!(t.check_consistent());
        for (j, k) in keys.iter().enumerate() {
            let want = (j != 1).then_some(es[j]);
            assert_eq!(t.lookup(&reg, k).map(|(e, _)| e), want);
        }
    }

    /// The group masks the table uses (SSE2 where the build has it) equal the portable byte
    /// loop's, on groups of every mix of empty, matching and other bytes.
    #[test]
    fn group_masks_match_the_portable_loop() {
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..if cfg!(miri) { 500 } else { 20_000 } {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let byte = (x >> 57) as u8;
            let mut g = [0u8; GROUP];
            for (k, b) in g.iter_mut().enumerate() {
                // Per byte: empty, the probed byte, or another byte (high bit set or not).
                *b = match (x >> (2 * k)) & 3 {
                    0 => EMPTY,
                    1 => byte,
                    _ => (x >> (k + 20)) as u8,
                };
            }
            let group = Group(g);
            assert_eq!(group.matches(byte), portable::eq_mask(g, byte), "{g:02x?}");
            assert_eq!(group.empties(), portable::high_mask(g), "{g:02x?}");
            let high = g.iter().filter(|&&b| b & 0x80 != 0).count();
            assert_eq!(group.empties().count_ones() as usize, high, "{g:02x?}");
            let hits = g.iter().filter(|&&b| b == byte).count();
            assert_eq!(group.matches(byte).count_ones() as usize, hits, "{g:02x?}");
        }
    }

    /// The word-level check agrees with the per-UUID policy on keys whose version and variant
    /// bytes take every value (the rest random), nil halves included, and names the same error.
    #[test]
    fn key_check_matches_the_policy() {
        let mut x = 0x853c_49e6_748f_ea9b_u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..if cfg!(miri) { 500 } else { 20_000u32 } {
            let mut bytes = [0u8; 32];
            for b in bytes.chunks_mut(8) {
                b.copy_from_slice(&next().to_le_bytes());
            }
            // Version and variant bytes of both halves: every value over the rounds.
            for (half, at) in [(0usize, 6usize), (0, 8), (16, 6), (16, 8)] {
                bytes[half + at] = (next() >> 56) as u8;
            }
            match round % 4 {
                0 => bytes[..16].fill(0),
                1 => bytes[16..].fill(0),
                _ => {}
            }
            if round % 3 == 0 {
                // Mostly valid: both halves v4 with the RFC variant, one byte perturbed at most.
                for half in [0, 16] {
                    bytes[half + 6] = 0x40 | (bytes[half + 6] & 0x0f);
                    bytes[half + 8] = 0x80 | (bytes[half + 8] & 0x3f);
                }
                if round % 2 == 0 {
                    let at = [6, 8, 22, 24][(round / 6 % 4) as usize];
                    bytes[at] ^= 1 << (round / 24 % 8);
                }
            }
            let key: PersistentObjectKey = bytemuck::pod_read_unaligned(&bytes);
            let policy = UuidPolicy::DurableV4
                .check(key.instance.as_uuid())
                .and(UuidPolicy::DurableV4.check(key.object.as_uuid()))
                .map(|_| ());
            assert_eq!(check_key(&key), policy, "{bytes:02x?}");
            // The fast path alone (`check_key` falls back to the per-UUID check when it says
            // no, which would hide a fast path that refuses too much).
            assert_eq!(is_v4_pair(&words(&key)), policy.is_ok(), "{bytes:02x?}");
        }
    }

    #[test]
    fn activate_resolve_detach() {
        let (mut reg, mut t, es) = setup(8);
        let batch: std::vec::Vec<_> = (0..4)
            .map(|i| Activation::new(es[i], key(1, i as u128)))
            .collect();
        t.try_activate(&reg, &batch).unwrap();
        assert_eq!(t.binding_revision(), 1);
        for a in &batch {
            assert_eq!(t.try_resolve(&reg, &a.key), Resolution::Resolved(a.entity));
            assert_eq!(t.key_of(a.entity), Some(a.key));
        }
        assert!(t.check_consistent());
        assert_eq!(t.detach(es[0]), Some(batch[0].key));
        assert_eq!(t.try_resolve(&reg, &batch[0].key), Resolution::Missing);
        assert_eq!(t.binding_revision(), 2);
        // Released without a detach: the stale binding reads Missing, the recycled slot has
        // no key.
        reg.try_release(es[1]).unwrap();
        let again = reg.try_create().unwrap();
        assert_eq!(again.slot(), es[1].slot());
        assert_eq!(t.try_resolve(&reg, &batch[1].key), Resolution::Missing);
        assert_eq!(t.key_of(again), None);
        assert!(t.contains_key(&batch[1].key), "stale, not yet dropped");
        let rev = t.binding_revision();
        assert_eq!(
            t.try_resolve_mut(&reg, &batch[1].key, None, &NoCatalog),
            Resolution::Missing
        );
        assert!(!t.contains_key(&batch[1].key), "dropped");
        assert_eq!(t.binding_revision(), rev + 1);
        assert!(!t.prune(&reg, &batch[1].key));
        assert!(t.check_consistent());
    }

    /// `iter_instance` yields exactly one scope's bindings, in slot order, with the object
    /// UUID as its big-endian integer; `iter` agrees.
    #[test]
    fn iter_instance_is_one_scope_in_slot_order() {
        let (reg, mut t, es) = setup(12);
        let batch: std::vec::Vec<_> = (0..10)
            .rev()
            .map(|i| Activation::new(es[i], key(1 + i as u128 % 3, i as u128)))
            .collect();
        t.try_activate(&reg, &batch).unwrap();
        for scope in 1..=3u128 {
            let instance = key(scope, 0).instance;
            let got: std::vec::Vec<_> = t.iter_instance(instance).collect();
            let want: std::vec::Vec<_> = t
                .iter()
                .filter(|(k, _, _)| k.instance == instance)
                .map(|(k, e, _)| {
                    let object = u128::from_be_bytes(*k.object.as_uuid().as_bytes());
                    (e.slot(), e.generation(), object)
                })
                .collect();
            let slots: std::vec::Vec<u32> = (0..10).filter(|i| 1 + i % 3 == scope as u32).collect();
            assert_eq!(got.iter().map(|g| g.0).collect::<std::vec::Vec<_>>(), slots);
            assert_eq!(got, want);
            for (slot, _, object) in got {
                assert_eq!(
                    object,
                    key(scope, u128::from(slot)).object.as_uuid().as_u128()
                );
            }
        }
    }

    /// `lookup_batch` equals `lookup` key by key: hits, misses, stale bindings, a reservation
    /// in progress, and a tag collision (a secret with equal object words makes a key with
    /// its object words swapped collide with the bound one), over several blocks.
    #[test]
    fn lookup_batch_equals_lookup() {
        let n = 3 * LOOKUP_BATCH + 5;
        let (mut reg, mut t, es) = setup(2 * n);
        t.secret = [7, 7, 11, 13];
        let batch: std::vec::Vec<_> = (0..n)
            .map(|i| Activation::new(es[i], key(1, i as u128)))
            .collect();
        t.try_activate(&reg, &batch).unwrap();
        for e in es.iter().take(n).step_by(5) {
            reg.try_release(*e).unwrap();
        }
        assert!(t.reserve(&key(1, 10_000)));
        let swapped = |k: &PersistentObjectKey| {
            let w = words(k);
            key_of(&Words {
                instance: w.instance,
                object: [w.object[1], w.object[0]],
            })
        };
        assert_eq!(
            t.tag(&words(&swapped(&batch[1].key))),
            t.tag(&words(&batch[1].key))
        );
        // Both keys of a colliding pair bound (swapped words are not v4 UUIDs: opaque keys).
        t.raw = true;
        let pairs: std::vec::Vec<_> = (0..4)
            .map(|i| Activation::new(es[n + i], swapped(&batch[2 * i + 1].key)))
            .collect();
        t.try_activate(&reg, &pairs).unwrap();
        let mut queries: std::vec::Vec<PersistentObjectKey> = batch.iter().map(|a| a.key).collect();
        queries.extend((0..n as u128).map(|o| key(2, o)));
        queries.push(key(1, 10_000));
        queries.extend(batch.iter().take(7).map(|a| swapped(&a.key)));
        queries.reverse();
        let want: std::vec::Vec<_> = queries
            .iter()
            .map(|k| t.lookup(&reg, k).map(|(e, _)| e))
            .collect();
        // The key-by-key path of a small table, and the passes a large one takes.
        let mut out = std::vec![Some(EntityId::NULL); queries.len()];
        assert_eq!(
            t.lookup_passes::<_, false>(&reg, &queries, &mut out),
            t.lookup_batch(&reg, &queries, &mut std::vec![None; queries.len()])
        );
        let found = t.lookup_passes::<_, false>(&reg, &queries, &mut out);
        assert_eq!(out, want);
        let mut small = std::vec![Some(EntityId::NULL); queries.len()];
        assert_eq!(t.lookup_batch(&reg, &queries, &mut small), found);
        assert_eq!(small, want);
        assert_eq!(found, want.iter().flatten().count());
        // Live bound keys, and the swapped keys of batch 1, 3 and 5 (bound in `pairs`).
        assert_eq!(found, n - n.div_ceil(5) + 3);
        // The attached form (a world's: liveness is one compare, checked inside the pipeline)
        // equals its key-by-key lookup, the reservation included (never live).
        let attached: std::vec::Vec<_> = queries
            .iter()
            .map(|k| t.lookup_in::<_, true>(&reg, k).map(|(e, _)| e))
            .collect();
        let mut out = std::vec![Some(EntityId::NULL); queries.len()];
        let found = t.lookup_passes::<_, true>(&reg, &queries, &mut out);
        assert_eq!(out, attached);
        assert_eq!(found, attached.iter().flatten().count());
        assert_eq!(queries[7], key(1, 10_000));
        assert_eq!((out[7], attached[7]), (None, None), "the reserved key");
        assert!(t.contains_key(&queries[7]), "reserved, so in the table");
        assert!(
            t.find(&words(&queries[7])).is_none(),
            "and bound to nothing"
        );
        for a in &pairs {
            assert_eq!(t.lookup(&reg, &a.key).map(|(e, _)| e), Some(a.entity));
        }
        t.abandon_scratch();
    }

    /// Reservations: a taken or repeated key is refused; a batch abandoned half way keeps what
    /// it published and leaves no placeholder behind.
    #[test]
    fn reservations_publish_or_abandon_cleanly() {
        let (reg, mut t, es) = setup(8);
        t.try_activate(&reg, &[Activation::new(es[0], key(1, 0))])
            .unwrap();
        assert!(!t.reserve(&key(1, 0)), "a bound key");
        for o in 1..4 {
            assert!(t.reserve(&key(1, o)));
        }
        assert!(!t.reserve(&key(1, 2)), "a reserved key");
        assert!(t.publish_scratch(0, es[1], BindingKind(0)));
        // A slot that holds a binding takes no second one: nothing published.
        assert!(!t.publish_scratch(1, es[0], BindingKind(0)));
        assert_eq!(t.key_of(es[0]), Some(key(1, 0)));
        t.abandon_scratch();
        assert_eq!((t.len(), t.binding_revision()), (2, 2));
        assert_eq!(t.key_of(es[1]), Some(key(1, 1)));
        assert!(!t.contains_key(&key(1, 2)) && !t.contains_key(&key(1, 3)));
        assert!(t.check_consistent());
        // The abandoned keys can be reserved again.
        assert!(t.reserve(&key(1, 2)));
        t.abandon_scratch();
        assert!(t.check_consistent() && t.scratch_is_empty());
    }

    /// A removal in a table of one group moves nothing: the hole is in the only group, which
    /// no probe passes (a reservation there stays where `reserve` put it).
    #[test]
    fn a_removal_in_a_one_group_table_moves_nothing() {
        let (reg, mut t, es) = setup(8);
        assert_eq!(t.ctrl.len(), 1);
        assert!(t.reserve(&key(1, 9)));
        let batch: std::vec::Vec<_> = (0..3)
            .map(|i| Activation::new(es[i], key(1, i as u128)))
            .collect();
        t.try_activate(&reg, &batch).unwrap();
        let at = |t: &WorldBindingTable, k: &PersistentObjectKey| match t.probe(&words(k)) {
            Probe::Found(i) => i,
            _ => usize::MAX,
        };
        let before: std::vec::Vec<_> = [key(1, 9), key(1, 0), key(1, 2)]
            .iter()
            .map(|k| at(&t, k))
            .collect();
        assert!(t.unbind_key(&words(&key(1, 1))));
        let after: std::vec::Vec<_> = [key(1, 9), key(1, 0), key(1, 2)]
            .iter()
            .map(|k| at(&t, k))
            .collect();
        assert_eq!(before, after);
        assert!(t.scratch_intact());
        t.abandon_scratch();
        assert!(t.check_consistent());
    }

    #[test]
    fn failed_batch_publishes_nothing() {
        let (reg, mut t, es) = setup(8);
        let ok = [Activation::new(es[0], key(1, 0))];
        t.try_activate(&reg, &ok).unwrap();
        let bad = [
            Activation::new(es[1], key(1, 1)),
            Activation::new(es[2], key(1, 2)),
            Activation::new(es[3], key(1, 1)),
        ];
        assert_eq!(
            t.try_activate(&reg, &bad),
            Err(ActivationError::Candidate {
                index: 2,
                reason: CandidateRejection::DuplicateKey { first: 0 }
            })
        );
        assert_eq!((t.len(), t.binding_revision()), (1, 1));
        assert_eq!(t.key_of(es[1]), None);
        assert!(t.check_consistent());
    }

    /// Random activations and detaches against a model, in a small table, once with a random
    /// secret and once with a weak one and opaque keys whose object's second word is zero:
    /// every key of an instance then has the same hash (one home group, one control byte), so
    /// clusters run over several groups and every detach moves entries back.
    #[test]
    fn churn_keeps_every_probe_sequence_intact() {
        for weak in [false, true] {
            let n = 64;
            let (reg, mut t, es) = setup(n);
            if weak {
                t.secret = [0; 4];
                t.raw = true;
            }
            let mut bound: std::vec::Vec<Option<PersistentObjectKey>> = vec![None; n];
            let mut x = 0x1234_5678_u64;
            let rounds = if cfg!(miri) { 200 } else { 4000 };
            for round in 0..rounds as u32 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let i = (x % n as u64) as usize;
                match bound[i] {
                    Some(k) => {
                        assert_eq!(t.detach(es[i]), Some(k));
                        bound[i] = None;
                    }
                    None => {
                        let k = key(u128::from(x % 3), u128::from(round));
                        let k = if weak {
                            // `fold(object[0], 0) == 0`: the hash is the instance's alone.
                            let mut b: [u8; 32] = bytemuck::cast(k);
                            b[24..32].fill(0);
                            bytemuck::cast(b)
                        } else {
                            k
                        };
                        match t.try_activate(&reg, &[Activation::new(es[i], k)]) {
                            Ok(()) => bound[i] = Some(k),
                            Err(ActivationError::Candidate {
                                reason: CandidateRejection::ProbeLimit,
                                ..
                            }) => {}
                            Err(e) => panic!("{e:?}"),
                        }
                    }
                }
                // The whole-table check is the slow part under Miri: there, every 16th round.
                if !cfg!(miri) || round % 16 == 0 {
                    assert!(t.check_consistent(), "round {round}");
                }
                if round % 97 == 0 {
                    for (j, k) in bound.iter().enumerate() {
                        if let Some(k) = k {
                            assert_eq!(t.try_resolve(&reg, k), Resolution::Resolved(es[j]));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_table_for_fewer_slots_refuses_the_others() {
        let (reg, _, es) = setup(8);
        let mut t = WorldBindingTable::try_new_in(reg.owner(), 2, 2, Global).unwrap();
        assert_eq!(
            t.try_activate(&reg, &[Activation::new(es[5], key(1, 5))]),
            Err(ActivationError::Candidate {
                index: 0,
                reason: CandidateRejection::Entity(Rejection::OutOfRange)
            })
        );
        t.try_activate(&reg, &[Activation::new(es[1], key(1, 1))])
            .unwrap();
        assert!(t.check_consistent());
    }
}
