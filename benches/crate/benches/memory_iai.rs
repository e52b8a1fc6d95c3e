//! Instruction counts (iai-callgrind): allocate/free through a domain vs the raw backend, and a
//! LinearArena allocation vs bumpalo.
#![allow(missing_docs)] // the iai-callgrind macros generate undocumented items

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use ludus::memory::{AllocationDomain, AllocationLayout, BoundDomain, LinearArena};

const N: usize = 64;

/// `N` allocate/free pairs of 64 bytes through `$d`: a domain or a bound handle (one byte
/// API, inlined into each benchmark).
macro_rules! pairs {
    ($d:expr) => {{
        let d = $d;
        let l = AllocationLayout::new(64, 8).unwrap();
        let mut sum = 0;
        for _ in 0..N {
            let p = d.try_allocate(black_box(l)).unwrap();
            sum += p.map_or(0, |p| p.as_ptr().addr() & 1);
            // SAFETY: `p` came from `d`'s domain with `l`.
            unsafe { d.free(black_box(p), l) };
        }
        sum
    }};
}

// The first pairs of a thread: the count includes leasing its counter slot.
#[library_benchmark]
fn domain_alloc_free() -> usize {
    pairs!(AllocationDomain::core())
}

/// One allocation and free outside the count: the thread leases its counter slot (once per
/// thread) before the measured pairs.
fn warm_slot() -> &'static AllocationDomain {
    let d = AllocationDomain::core();
    let l = AllocationLayout::new(64, 8).unwrap();
    let p = d.try_allocate(l).unwrap();
    // SAFETY: `p` came from `d` with `l`.
    unsafe { d.free(p, l) };
    d
}

// The steady state: the same pairs on a thread that already holds its slot.
#[library_benchmark]
#[bench::warm(setup = warm_slot)]
fn domain_alloc_free_warm(d: &'static AllocationDomain) -> usize {
    pairs!(d)
}

/// The core domain bound to a shard of its own, outside the count.
fn bound() -> BoundDomain<'static> {
    AllocationDomain::core().bind().unwrap()
}

// The same pairs through a handle that holds its own shard (no per-call shard search).
#[library_benchmark]
#[bench::warm(setup = bound)]
fn bound_alloc_free(b: BoundDomain<'static>) -> usize {
    pairs!(&b)
}

#[library_benchmark]
fn raw_alloc_free() -> usize {
    let l = Layout::from_size_align(64, 8).unwrap();
    let mut sum = 0;
    for _ in 0..N {
        // SAFETY: nonzero size; freed once with its layout.
        unsafe {
            let p = System.alloc(black_box(l));
            sum += p.addr() & 1;
            System.dealloc(black_box(p), l);
        }
    }
    sum
}

#[library_benchmark]
fn arena_alloc_256() -> u64 {
    // Uninitialized backing, like bumpalo's chunk: no zeroing in the count.
    let mut backing: Vec<u8> = Vec::with_capacity(256 * 8 + 8);
    let arena = LinearArena::from_uninit(backing.spare_capacity_mut());
    let mut sum = 0;
    for i in 0..256u64 {
        if let Ok(x) = arena.try_alloc_pod(black_box(i)) {
            sum += *x;
        }
    }
    sum
}

#[library_benchmark]
fn bumpalo_alloc_256() -> u64 {
    let bump = bumpalo::Bump::with_capacity(256 * 8 + 8);
    let mut sum = 0;
    for i in 0..256u64 {
        sum += *bump.alloc(black_box(i));
    }
    sum
}

library_benchmark_group!(
    name = domain;
    benchmarks = domain_alloc_free, domain_alloc_free_warm, bound_alloc_free, raw_alloc_free
);

library_benchmark_group!(
    name = arena;
    benchmarks = arena_alloc_256, bumpalo_alloc_256
);

main!(library_benchmark_groups = domain, arena);
