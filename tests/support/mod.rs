//! What the integration test binaries share: the seeded generator of the random walks, the test
//! components, memory domains kept for the life of the process, and proptest settings. Every
//! binary includes this file (`#[path = "../support/mod.rs"] mod support;`) and uses a part of it.
#![allow(dead_code)]

use std::collections::HashSet;
use std::fmt::Debug;
use std::ptr::NonNull;
use std::str::FromStr;
use std::sync::Mutex;

use bytemuck::{Pod, Zeroable};
use ludus::durable::EntityRefs;
use ludus::identity::{InstanceId, PersistentObjectKey, SourceObjectId};
use ludus::memory::{
    AllocationDomain, AllocationLayout, Backend, CounterMode, FailureInjector, MemoryUsage,
};
use ludus::world::ComponentPool;
use ludus::EntityId;
use proptest::test_runner::{Config as ProptestConfig, FileFailurePersistence};

// ---------------------------------------------------------------------------------------------
// Seeded choices
// ---------------------------------------------------------------------------------------------

/// xorshift64: the seeded random walks' choices, reproducible from the seed alone. The state
/// must not be zero (it would stay zero); [`Rng::seeded`] accepts any seed.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// A generator for any `seed`, zero included: splitmix64 spreads the seed over the state
    /// (distinct seeds, distinct states).
    pub fn seeded(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Rng(if z == 0 { 0x9E37_79B9_7F4A_7C15 } else { z })
    }

    /// The next 64 bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A choice in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// True `pct` times in a hundred.
    pub fn chance(&mut self, pct: u32) -> bool {
        self.below(100) < pct as usize
    }
}

// ---------------------------------------------------------------------------------------------
// Test components
// ---------------------------------------------------------------------------------------------

macro_rules! components {
    ($($(#[$doc:meta])* $name:ident),+ $(,)?) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
        #[repr(C)]
        pub struct $name(pub u32);
    )+};
}

components!(
    /// Component a.
    A,
    /// Component b.
    B,
    /// Component c.
    C,
    /// Component d.
    D,
    /// Component e.
    E,
    /// Component f.
    F,
    /// Component g.
    G,
    /// Component h.
    H,
);

/// A one-dimensional position.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Pos(pub f32);

/// A 3-D position.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Position(pub [f32; 3]);

/// A 3-D velocity.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Velocity(pub [f32; 3]);

/// Hit points.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Health(pub u32);

/// A component with an entity-typed field (declared in a world's `entity_refs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
pub struct Follow {
    /// The followed entity (any handle: live, stale, foreign, null).
    pub target: EntityId,
}

impl EntityRefs for Follow {
    fn visit_entities(&mut self, visit: &mut dyn FnMut(&mut EntityId)) {
        visit(&mut self.target);
    }
}

// ---------------------------------------------------------------------------------------------
// World helpers
// ---------------------------------------------------------------------------------------------

/// An entity's (slot, generation): what two worlds replaying the same commands agree on.
pub fn sg(e: EntityId) -> (u32, u32) {
    (e.slot(), e.generation())
}

/// Whether a pool holds each slot at most once.
pub fn keys_unique<T: Pod>(pool: &ComponentPool<T>) -> bool {
    let mut seen = HashSet::new();
    pool.owners().iter().all(|e| seen.insert(e.slot()))
}

/// A version-4 UUID made from `n`, parsed as any typed id (`InstanceId`, `SourceObjectId`, ...):
/// the same `n` always gives the same id.
pub fn id<T: FromStr>(n: u128) -> T
where
    T::Err: Debug,
{
    let bytes = (n.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ n).to_le_bytes();
    let u = uuid::Builder::from_random_bytes(bytes).into_uuid();
    u.to_string().parse().unwrap()
}

/// The persistent key of object [`id`]`(object)` in instance [`id`]`(instance)`.
pub fn key(instance: u128, object: u128) -> PersistentObjectKey {
    PersistentObjectKey::new(id::<InstanceId>(instance), id::<SourceObjectId>(object))
}

// ---------------------------------------------------------------------------------------------
// Memory domains
// ---------------------------------------------------------------------------------------------

/// Process-lifetime test objects stay reachable from here, so leak checkers (Miri) see them as
/// deliberately kept rather than lost.
static DOMAINS: Mutex<Vec<&'static AllocationDomain>> = Mutex::new(Vec::new());
static INJECTORS: Mutex<Vec<&'static FailureInjector>> = Mutex::new(Vec::new());

/// Gives a standalone domain the process lifetime its allocator handle needs.
pub fn keep(d: AllocationDomain) -> &'static AllocationDomain {
    let d: &'static AllocationDomain = Box::leak(Box::new(d));
    DOMAINS.lock().unwrap().push(d);
    d
}

/// A fresh standalone domain (own counters, so parallel tests do not interfere).
pub fn domain(name: &str, backend: Backend) -> &'static AllocationDomain {
    keep(AllocationDomain::with_backend(name, backend).unwrap())
}

/// A sharded domain over the system allocator that refuses backend request `k` (0: never).
pub fn failing(k: u64) -> (&'static AllocationDomain, &'static FailureInjector) {
    failing_in(CounterMode::Sharded, k)
}

/// [`failing`] with counters in `mode`.
pub fn failing_in(
    mode: CounterMode,
    k: u64,
) -> (&'static AllocationDomain, &'static FailureInjector) {
    let inj: &'static FailureInjector = Box::leak(Box::new(FailureInjector::fail_nth(k)));
    INJECTORS.lock().unwrap().push(inj);
    let d = keep(AllocationDomain::with_mode("failing", Backend::Failing(inj), mode).unwrap());
    (d, inj)
}

/// A standalone domain of the build's backend with counters in `mode`.
pub fn thread_domain(mode: CounterMode) -> &'static AllocationDomain {
    keep(AllocationDomain::with_mode("threads", Backend::BUILD, mode).unwrap())
}

/// A block and its layout, moved (never shared) between threads.
pub struct Block(pub NonNull<u8>, pub AllocationLayout);

// SAFETY: a `Block` owns its bytes exclusively; moving it to another thread moves that
// ownership (the domain's free may run on any thread).
unsafe impl Send for Block {}

/// A block of `size` bytes (alignment 8) from `d`.
pub fn alloc_block(d: &AllocationDomain, size: usize) -> Block {
    let l = AllocationLayout::new(size, 8).unwrap();
    Block(d.try_allocate(l).unwrap().unwrap(), l)
}

/// Frees a block of `d` (from [`alloc_block`]).
pub fn free_block(d: &AllocationDomain, b: Block) {
    // SAFETY: `b` came from `alloc_block` on `d` with its layout and is freed once (it is moved
    // in).
    unsafe { d.free(Some(b.0), b.1) };
}

/// Nothing live, `allocations` blocks of `bytes` bytes in all allocated and freed, valid.
pub fn assert_quiescent(u: MemoryUsage, allocations: u64, bytes: u64) {
    assert_eq!((u.live_bytes, u.live_blocks), (0, 0), "{u:?}");
    assert_eq!(
        (u.allocations, u.frees),
        (allocations, allocations),
        "{u:?}"
    );
    assert_eq!((u.allocated_bytes, u.freed_bytes), (bytes, bytes), "{u:?}");
    assert!(u.valid);
}

// ---------------------------------------------------------------------------------------------
// Proptest settings
// ---------------------------------------------------------------------------------------------

/// `cases` cases (`miri_cases` under Miri). A failing case is kept in
/// `<source file>.proptest-regressions` beside the test's source file and replayed first on
/// every later run; under Miri, whose isolation forbids the file system, nothing is kept.
pub fn proptest_config(cases: u32, miri_cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::with_cases(if cfg!(miri) { miri_cases } else { cases });
    // XorShift: ChaCha (the default generator) dominates the run time of an unoptimized build,
    // Miri's most of all (a world model: 77 s → 31 s of Miri's clock).
    config.rng_algorithm = proptest::test_runner::RngAlgorithm::XorShift;
    config.failure_persistence = if cfg!(miri) {
        None
    } else {
        Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        )))
    };
    config
}

/// `cases` cases (`miri_cases` under Miri), no failure file.
pub fn proptest_config_unpersisted(cases: u32, miri_cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases: if cfg!(miri) { miri_cases } else { cases },
        failure_persistence: None,
        rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
        ..ProptestConfig::default()
    }
}
