//! The memory workload benches' shared contenders (`memory_threads.rs`, `memory_frag.rs`,
//! `memory_latency.rs`): one [`Heap`] per contender, a fixed-seed generator, a touched
//! small-block window and helpers to check a ludus domain's reconciliation at quiescence.
//!
//! Contenders: `raw_system` / `raw_mimalloc` call the backend directly (no accounting);
//! `ludus_system` / `ludus_mimalloc` go through an [`AllocationDomain`] with counters over that
//! backend. A ludus domain whose backend is the build's ([`Backend::BUILD`]) is a registered
//! process domain (`AllocationDomain::register`); the other one (`ludus_system` in a `mimalloc`
//! build) is a standalone domain over that backend (`AllocationDomain::with_backend`), since the
//! registry hands out the build's backend only. Both run the same counter code, sharded per
//! thread (the default `CounterMode`). `ludus_exact_system` / `ludus_exact_mimalloc` are
//! standalone domains with `CounterMode::Exact` (one shared set of atomics): the before/after of
//! counter sharding in one run.

// Each bench target uses a part of this module.
#![allow(dead_code)]

use std::alloc::{handle_alloc_error, GlobalAlloc, Layout, System};

use ludus::memory::{AllocationDomain, AllocationLayout, Backend, CounterMode};

/// One way to get and return bytes: a backend called directly or a ludus domain.
#[derive(Clone, Copy, Debug)]
pub enum Heap {
    /// `std::alloc::System`, no accounting.
    System,
    /// mimalloc through its `GlobalAlloc` methods, no accounting.
    #[cfg(feature = "mimalloc")]
    Mimalloc,
    /// A ludus domain (counters on).
    Domain(&'static AllocationDomain),
}

impl Heap {
    /// A block for `l`; aborts through [`handle_alloc_error`] when the backend refuses, and
    /// returns a dangling-free null only for a zero size (never requested by the workloads).
    #[inline]
    pub fn alloc(self, l: Layout) -> *mut u8 {
        if l.size() == 0 {
            return std::ptr::null_mut();
        }
        let p = match self {
            // SAFETY: `l` has a nonzero size (checked above), the `GlobalAlloc::alloc` contract.
            Heap::System => unsafe { System.alloc(l) },
            #[cfg(feature = "mimalloc")]
            // SAFETY: `l` has a nonzero size (checked above), the `GlobalAlloc::alloc` contract.
            Heap::Mimalloc => unsafe { mimalloc::MiMalloc.alloc(l) },
            Heap::Domain(d) => match d.try_allocate(AllocationLayout::from(l)) {
                Ok(Some(p)) => p.as_ptr(),
                _ => std::ptr::null_mut(),
            },
        };
        if p.is_null() {
            handle_alloc_error(l);
        }
        p
    }

    /// Returns a block.
    ///
    /// # Safety
    /// `p` came from [`Heap::alloc`] of this same heap with layout `l` and is freed once.
    #[inline]
    pub unsafe fn free(self, p: *mut u8, l: Layout) {
        match self {
            // SAFETY: the caller's contract: `p` is a live block of `System` with layout `l`.
            Heap::System => unsafe { System.dealloc(p, l) },
            #[cfg(feature = "mimalloc")]
            // SAFETY: the caller's contract: `p` is a live block of mimalloc with layout `l`.
            Heap::Mimalloc => unsafe { mimalloc::MiMalloc.dealloc(p, l) },
            // SAFETY: the caller's contract: `p` came from `d` with layout `l`, freed once.
            Heap::Domain(d) => unsafe {
                d.free(std::ptr::NonNull::new(p), AllocationLayout::from(l))
            },
        }
    }

    /// The ludus domain behind this heap, if any.
    pub fn domain(self) -> Option<&'static AllocationDomain> {
        match self {
            Heap::Domain(d) => Some(d),
            _ => None,
        }
    }
}

/// One contender of the memory workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)] // without `mimalloc` every variant is a system one
pub enum Contender {
    /// `std::alloc::System` directly.
    RawSystem,
    /// A ludus domain over the system allocator.
    LudusSystem,
    /// A ludus domain over the system allocator with exact (shared-atomic) counters.
    LudusExactSystem,
    /// mimalloc directly.
    #[cfg(feature = "mimalloc")]
    RawMimalloc,
    /// A ludus domain over mimalloc.
    #[cfg(feature = "mimalloc")]
    LudusMimalloc,
    /// A ludus domain over mimalloc with exact (shared-atomic) counters.
    #[cfg(feature = "mimalloc")]
    LudusExactMimalloc,
}

impl Contender {
    /// Every contender of this build, raw before ludus per backend.
    pub fn all() -> Vec<Contender> {
        #[allow(unused_mut)]
        let mut v = vec![
            Contender::RawSystem,
            Contender::LudusSystem,
            Contender::LudusExactSystem,
        ];
        #[cfg(feature = "mimalloc")]
        v.extend([
            Contender::RawMimalloc,
            Contender::LudusMimalloc,
            Contender::LudusExactMimalloc,
        ]);
        v
    }

    /// The criterion function id / result key.
    pub const fn name(self) -> &'static str {
        match self {
            Contender::RawSystem => "raw_system",
            Contender::LudusSystem => "ludus_system",
            Contender::LudusExactSystem => "ludus_exact_system",
            #[cfg(feature = "mimalloc")]
            Contender::RawMimalloc => "raw_mimalloc",
            #[cfg(feature = "mimalloc")]
            Contender::LudusMimalloc => "ludus_mimalloc",
            #[cfg(feature = "mimalloc")]
            Contender::LudusExactMimalloc => "ludus_exact_mimalloc",
        }
    }

    /// The contender named `s` in this build.
    pub fn parse(s: &str) -> Option<Contender> {
        Contender::all().into_iter().find(|c| c.name() == s)
    }

    /// Whether this contender goes through a ludus domain.
    pub const fn is_ludus(self) -> bool {
        match self {
            Contender::LudusSystem | Contender::LudusExactSystem => true,
            #[cfg(feature = "mimalloc")]
            Contender::LudusMimalloc | Contender::LudusExactMimalloc => true,
            _ => false,
        }
    }

    /// The backend's short name ("system", "mimalloc").
    pub const fn backend_name(self) -> &'static str {
        match self {
            Contender::RawSystem | Contender::LudusSystem | Contender::LudusExactSystem => "system",
            #[cfg(feature = "mimalloc")]
            Contender::RawMimalloc | Contender::LudusMimalloc | Contender::LudusExactMimalloc => {
                "mimalloc"
            }
        }
    }

    /// The heap of this contender. A ludus contender gets the domain `{domain}.{backend}`
    /// (registered when the backend is the build's, see the module docs); a raw one ignores
    /// `domain`. Calling it again with the same name returns the same registered domain.
    pub fn heap(self, domain: &str) -> Heap {
        match self {
            Contender::RawSystem => Heap::System,
            Contender::LudusSystem => Heap::Domain(ludus_domain(domain, Backend::System)),
            Contender::LudusExactSystem => Heap::Domain(exact_domain(domain, Backend::System)),
            #[cfg(feature = "mimalloc")]
            Contender::RawMimalloc => Heap::Mimalloc,
            #[cfg(feature = "mimalloc")]
            Contender::LudusMimalloc => Heap::Domain(ludus_domain(domain, Backend::Mimalloc)),
            #[cfg(feature = "mimalloc")]
            Contender::LudusExactMimalloc => Heap::Domain(exact_domain(domain, Backend::Mimalloc)),
        }
    }
}

/// The standalone exact-mode domain `{name}.exact.{backend}`, made once per name (leaked).
fn exact_domain(name: &str, backend: Backend) -> &'static AllocationDomain {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static MADE: Mutex<Option<HashMap<String, &'static AllocationDomain>>> = Mutex::new(None);
    let full = format!("{name}.exact.{}", backend.name());
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    made.get_or_insert_with(HashMap::new)
        .entry(full.clone())
        .or_insert_with(|| {
            Box::leak(Box::new(
                AllocationDomain::with_mode(&full, backend, CounterMode::Exact)
                    .unwrap_or_else(|e| panic!("creating domain {full:?}: {e}")),
            ))
        })
}

/// The domain `{name}.{backend}`: registered if `backend` is the build's, else standalone
/// (leaked, process lifetime like a registered one).
fn ludus_domain(name: &str, backend: Backend) -> &'static AllocationDomain {
    let full = format!("{name}.{}", backend.name());
    if backend.name() == Backend::BUILD.name() {
        AllocationDomain::register(&full)
            .unwrap_or_else(|e| panic!("registering domain {full:?}: {e}"))
    } else {
        Box::leak(Box::new(
            AllocationDomain::with_backend(&full, backend)
                .unwrap_or_else(|e| panic!("creating domain {full:?}: {e}")),
        ))
    }
}

/// xorshift64*: a fixed-seed generator so every contender sees the same sequence.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n > 0`; the modulo bias is irrelevant here).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A size from `min` to `max` (powers of two), log-uniform with a uniform offset inside
    /// each octave, rounded up to 8 bytes.
    pub fn log_size(&mut self, min: usize, max: usize) -> usize {
        let octaves = (max / min).trailing_zeros() as usize;
        let base = min << self.below(octaves.max(1));
        let size = base + self.below(base.max(1));
        size.min(max).next_multiple_of(8)
    }
}

/// The small-block sizes (bytes): around cache lines and common size-class boundaries.
pub const SMALL_SIZES: [usize; 9] = [16, 24, 32, 48, 64, 96, 128, 192, 256];

/// Every workload block is 8-aligned.
pub const ALIGN: usize = 8;

/// The layout of a workload block of `size` bytes.
#[inline]
pub fn layout(size: usize) -> Layout {
    match Layout::from_size_align(size, ALIGN) {
        Ok(l) => l,
        Err(_) => panic!("bad workload size {size}"),
    }
}

/// A live block: its address and size (alignment [`ALIGN`]).
#[derive(Clone, Copy, Debug)]
pub struct Block {
    /// Start of the block; null for an empty slot.
    pub ptr: *mut u8,
    /// Its size in bytes.
    pub size: usize,
}

// SAFETY: a `Block` is the unique owner of plain bytes; moving it to another thread moves that
// ownership (every backend here frees from any thread), and nothing else aliases the bytes.
unsafe impl Send for Block {}

impl Block {
    /// An empty slot.
    pub const EMPTY: Block = Block {
        ptr: std::ptr::null_mut(),
        size: 0,
    };

    /// Allocates `size` bytes from `h` and writes every byte; returns the block and a checksum
    /// contribution read back from it.
    #[inline]
    pub fn new_touched(h: Heap, size: usize) -> (Block, u64) {
        let p = h.alloc(layout(size));
        // SAFETY: `p` is a fresh live block of `size > 0` bytes (alloc aborts on null).
        let sum = unsafe {
            p.write_bytes((size & 0xFF) as u8 | 1, size);
            u64::from(p.add(size - 1).read())
        };
        (Block { ptr: p, size }, sum)
    }

    /// Reads the block's first byte (the consumer side of a handoff) and frees it.
    ///
    /// # Safety
    /// The block came from [`Block::new_touched`] with `h` and is freed once.
    #[inline]
    pub unsafe fn read_and_free(self, h: Heap) -> u64 {
        // SAFETY: the caller's contract: the block is live and was written in full.
        let first = unsafe { self.ptr.read() };
        // SAFETY: the caller's contract: a live block of `h` with this layout, freed once.
        unsafe { h.free(self.ptr, layout(self.size)) };
        u64::from(first)
    }
}

/// One thread's fixed plan for the small-block window: the size of each allocation and the
/// window slot it replaces (a retained set with shuffled frees).
#[derive(Clone, Debug)]
pub struct Plan {
    /// Sizes of successive allocations, from [`SMALL_SIZES`].
    pub sizes: Vec<u32>,
    /// The window slot each allocation replaces (its previous block is freed first).
    pub slots: Vec<u32>,
    /// Window length (blocks retained between steps).
    pub window: usize,
}

impl Plan {
    /// `ops` allocations into a window of `window` blocks, from `seed`.
    pub fn new(ops: usize, window: usize, seed: u64) -> Plan {
        let mut rng = Rng(seed | 1);
        Plan {
            sizes: (0..ops)
                .map(|_| SMALL_SIZES[rng.below(SMALL_SIZES.len())] as u32)
                .collect(),
            slots: (0..ops).map(|_| rng.below(window) as u32).collect(),
            window,
        }
    }

    /// Allocations per run.
    pub fn ops(&self) -> usize {
        self.sizes.len()
    }

    /// Runs the plan once on `h`: each step frees the slot's previous block (if any) and puts
    /// a fresh touched one there; at the end every retained block is freed, so a run leaves
    /// nothing live. `window` is scratch of `self.window` slots (all empty on entry and exit).
    pub fn run(&self, h: Heap, window: &mut [Block]) -> u64 {
        debug_assert_eq!(window.len(), self.window);
        let mut sum = 0u64;
        for (&size, &slot) in self.sizes.iter().zip(&self.slots) {
            let old = std::mem::replace(&mut window[slot as usize], Block::EMPTY);
            if !old.ptr.is_null() {
                // SAFETY: the slot's block came from `h` in this run and leaves the window here.
                sum = sum.wrapping_add(unsafe { old.read_and_free(h) });
            }
            let (b, s) = Block::new_touched(h, size as usize);
            sum = sum.wrapping_add(s);
            window[slot as usize] = b;
        }
        for slot in window.iter_mut() {
            let b = std::mem::replace(slot, Block::EMPTY);
            if !b.ptr.is_null() {
                // SAFETY: a block of this run, taken out of the window, freed once.
                sum = sum.wrapping_add(unsafe { b.read_and_free(h) });
            }
        }
        sum
    }
}

/// The live bytes and blocks of each ludus domain among `heaps` (raw heaps are skipped).
pub fn live(heaps: &[Heap]) -> Vec<(&'static str, usize, usize)> {
    heaps
        .iter()
        .filter_map(|h| h.domain())
        .map(|d| {
            let u = d.usage();
            (d.name(), u.live_bytes, u.live_blocks)
        })
        .collect()
}

/// Panics unless `h`'s domain (if it is a ludus heap) holds no live bytes or blocks: what a
/// workload that freed everything must leave.
pub fn assert_quiescent(h: Heap) {
    if let Some(d) = h.domain() {
        let u = d.usage();
        assert!(
            u.live_bytes == 0 && u.live_blocks == 0,
            "domain {} did not reconcile at quiescence: {u:?}",
            d.name()
        );
    }
}

/// Panics unless every domain's live bytes and blocks are back at `before` (reconciliation at a
/// quiescent boundary: every thread of the workload has finished).
pub fn assert_reconciled(what: &str, before: &[(&'static str, usize, usize)], heaps: &[Heap]) {
    let after = live(heaps);
    for (b, a) in before.iter().zip(&after) {
        assert!(
            b == a,
            "{what}: domain {} did not reconcile at quiescence: live (bytes, blocks) {:?} before, {:?} after",
            b.0,
            (b.1, b.2),
            (a.1, a.2)
        );
    }
}
