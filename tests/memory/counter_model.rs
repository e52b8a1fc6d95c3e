//! A domain's counters against a model: a seeded random walk of allocations, frees, grows and
//! shrinks (zeroed or not, at the same or another alignment) through `DomainAllocator`,
//! `BoundDomain`, `by_ref` and a handle that alternates between the two, with injected backend
//! failures, checked field by field after every step (12 seeds × 5 000 steps per variant; 1 ×
//! 150 under Miri), block contents verified throughout; and threads sharing one allocator or
//! moving bound containers between them, reconciling exactly at the end.

use core::alloc::Layout;
use core::ptr::NonNull;

use allocator_api2::alloc::Allocator;
use ludus::memory::{
    AllocationDomain, Backend, CounterMode, DomainAllocator, FailureInjector, MemoryUsage,
};

use crate::support::{failing_in, Rng};

#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
struct Model {
    live_bytes: usize,
    live_blocks: usize,
    allocations: u64,
    frees: u64,
    allocated_bytes: u64,
    freed_bytes: u64,
    reallocations: u64,
    failures: u64,
    high_water: usize,
}

impl Model {
    fn alloc(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        self.live_bytes += n;
        self.live_blocks += 1;
        self.allocations += 1;
        self.allocated_bytes += n as u64;
        self.high_water = self.high_water.max(self.live_bytes);
    }
    fn free(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        self.live_bytes -= n;
        self.live_blocks -= 1;
        self.frees += 1;
        self.freed_bytes += n as u64;
    }
    fn resize(&mut self, old: usize, new: usize) {
        if new > old {
            self.live_bytes += new - old;
            self.allocated_bytes += (new - old) as u64;
        } else {
            self.live_bytes -= old - new;
            self.freed_bytes += (old - new) as u64;
        }
        self.reallocations += 1;
        self.high_water = self.high_water.max(self.live_bytes);
    }
    fn check(&self, u: MemoryUsage, step: usize, exact_hw: bool) {
        assert!(u.valid, "step {step}: invalid {u:?}");
        let got = Model {
            live_bytes: u.live_bytes,
            live_blocks: u.live_blocks,
            allocations: u.allocations,
            frees: u.frees,
            allocated_bytes: u.allocated_bytes,
            freed_bytes: u.freed_bytes,
            reallocations: u.reallocations,
            failures: u.failures,
            high_water: if exact_hw {
                u.high_water_bytes
            } else {
                self.high_water
            },
        };
        assert_eq!(got, *self, "step {step}");
        assert!(
            u.high_water_bytes >= self.high_water,
            "step {step}: hw below true peak"
        );
    }
}

struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
    seed: u8,
}

fn fill(b: &Block) {
    for i in 0..b.layout.size() {
        // SAFETY: the block is live and valid for `layout.size()` bytes.
        unsafe { b.ptr.as_ptr().add(i).write(b.seed.wrapping_add(i as u8)) };
    }
}

fn verify(ptr: NonNull<u8>, n: usize, seed: u8, step: usize) {
    for i in 0..n {
        // SAFETY: the block is live and valid for at least `n` bytes.
        let v = unsafe { ptr.as_ptr().add(i).read() };
        assert_eq!(v, seed.wrapping_add(i as u8), "step {step}: byte {i} lost");
    }
}

const ALIGNS: [usize; 7] = [1, 2, 4, 8, 16, 64, 256];

/// Does this call make a backend request (the injector counts allocations and resizes)?
fn requests_for_alloc(size: usize) -> bool {
    size != 0
}

/// The random walk over any `Allocator` on `d`, with failure injection through `inj`.
fn walk<A: Allocator>(
    a: &A,
    d: &AllocationDomain,
    inj: &FailureInjector,
    seed: u64,
    steps: usize,
    exact_hw: bool,
) {
    let mut rng = Rng::seeded(seed);
    let mut m = Model {
        failures: d.usage().failures,
        ..Model::default()
    };
    // Start from the domain's current state (must be empty of live blocks).
    let u0 = d.usage();
    assert_eq!((u0.live_bytes, u0.live_blocks), (0, 0));
    m.allocations = u0.allocations;
    m.frees = u0.frees;
    m.allocated_bytes = u0.allocated_bytes;
    m.freed_bytes = u0.freed_bytes;
    m.reallocations = u0.reallocations;
    m.high_water = u0.high_water_bytes;
    let mut live: Vec<Block> = Vec::new();
    let max = if cfg!(miri) { 96 } else { 700 };
    for step in 0..steps {
        // 1 in 8 steps: the next backend request fails.
        let fail = rng.below(8) == 0;
        inj.arm(if fail { 1 } else { 0 });
        let op = rng.below(10);
        let size = match rng.below(6) {
            0 => 0,
            _ => rng.below(max),
        };
        let align = ALIGNS[rng.below(ALIGNS.len())];
        let layout = Layout::from_size_align(size, align).unwrap();
        match op {
            0..=2 => {
                let zeroed = op == 2;
                let r = if zeroed {
                    a.allocate_zeroed(layout)
                } else {
                    a.allocate(layout)
                };
                let will_fail = fail && requests_for_alloc(size);
                match r {
                    Ok(s) => {
                        assert!(!will_fail, "step {step}: injected failure ignored");
                        assert_eq!(s.len(), size);
                        let p = s.cast::<u8>();
                        assert_eq!(p.as_ptr().addr() % align, 0, "step {step}: misaligned");
                        if zeroed {
                            for i in 0..size {
                                // SAFETY: fresh block of `size` bytes.
                                assert_eq!(unsafe { p.as_ptr().add(i).read() }, 0);
                            }
                        }
                        m.alloc(size);
                        let b = Block {
                            ptr: p,
                            layout,
                            seed: rng.next() as u8,
                        };
                        fill(&b);
                        live.push(b);
                    }
                    Err(_) => {
                        assert!(will_fail, "step {step}: spurious failure");
                        m.failures += 1;
                    }
                }
            }
            3 | 4 if !live.is_empty() => {
                let i = rng.below(live.len());
                let b = live.swap_remove(i);
                verify(b.ptr, b.layout.size(), b.seed, step);
                // SAFETY: live block of `a`'s domain with `b.layout`.
                unsafe { a.deallocate(b.ptr, b.layout) };
                m.free(b.layout.size());
            }
            5..=9 if !live.is_empty() => {
                let i = rng.below(live.len());
                let old = live[i].layout;
                let grow = op <= 7;
                let new_size = if grow {
                    old.size() + rng.below(max) * rng.below(2)
                } else {
                    rng.below(old.size() + 1)
                };
                let same_align = rng.below(2) == 0;
                let new_align = if same_align { old.align() } else { align };
                let new = Layout::from_size_align(new_size, new_align).unwrap();
                let zeroed = op == 7;
                let b = &live[i];
                // SAFETY: live block of `a`'s domain with `old`; sizes ordered as required.
                let r = unsafe {
                    if grow {
                        if zeroed {
                            a.grow_zeroed(b.ptr, old, new)
                        } else {
                            a.grow(b.ptr, old, new)
                        }
                    } else {
                        a.shrink(b.ptr, old, new)
                    }
                };
                // Predict the backend traffic.
                let (os, ns) = (old.size(), new_size);
                let will_fail;
                let mut after = m;
                // `grow_zeroed` is a `grow` whose tail is zeroed: the same records.
                if old.align() == new.align() {
                    if os == 0 {
                        will_fail = fail && ns != 0;
                        after.alloc(ns);
                    } else if ns == 0 {
                        will_fail = false;
                        after.free(os);
                    } else if ns == os {
                        will_fail = false;
                    } else {
                        will_fail = fail;
                        after.resize(os, ns);
                    }
                } else {
                    will_fail = fail && ns != 0;
                    after.alloc(ns);
                    after.free(os);
                }
                match r {
                    Ok(s) => {
                        assert!(
                            !will_fail,
                            "step {step}: injected failure ignored {old:?}->{new:?}"
                        );
                        assert_eq!(s.len(), ns);
                        let p = s.cast::<u8>();
                        assert_eq!(p.as_ptr().addr() % new.align(), 0, "step {step}");
                        verify(p, os.min(ns), live[i].seed, step);
                        if grow && zeroed {
                            for k in os..ns {
                                // SAFETY: block of `ns` bytes.
                                assert_eq!(unsafe { p.as_ptr().add(k).read() }, 0);
                            }
                        }
                        m = after;
                        live[i].ptr = p;
                        live[i].layout = new;
                        fill(&live[i]);
                    }
                    Err(_) => {
                        assert!(will_fail, "step {step}: spurious failure {old:?}->{new:?}");
                        m.failures += 1;
                        verify(live[i].ptr, os, live[i].seed, step);
                    }
                }
            }
            _ => {}
        }
        m.check(d.usage(), step, exact_hw);
    }
    inj.arm(0);
    for b in live.drain(..) {
        verify(b.ptr, b.layout.size(), b.seed, usize::MAX);
        // SAFETY: live block with its layout.
        unsafe { a.deallocate(b.ptr, b.layout) };
        m.free(b.layout.size());
    }
    m.check(d.usage(), usize::MAX, exact_hw);
    let u = d.usage();
    assert_eq!((u.live_bytes, u.live_blocks), (0, 0));
}

fn steps() -> usize {
    if cfg!(miri) {
        150
    } else {
        5_000
    }
}

fn seeds() -> u64 {
    if cfg!(miri) {
        1
    } else {
        12
    }
}

#[test]
fn differential_domain_allocator_exact() {
    for seed in 0..seeds() {
        let (d, inj) = failing_in(CounterMode::Exact, 0);
        walk(&d.allocator(), d, inj, 0x9E37 + seed, steps(), true);
    }
}

#[test]
fn differential_domain_allocator_sharded() {
    for seed in 0..seeds() {
        let (d, inj) = failing_in(CounterMode::Sharded, 0);
        walk(&d.allocator(), d, inj, 0x51ED + seed, steps(), false);
    }
}

#[test]
fn differential_bound_domain() {
    for seed in 0..seeds() {
        let (d, inj) = failing_in(CounterMode::Sharded, 0);
        let b = d.bind().unwrap();
        walk(
            &b,
            d,
            inj,
            0xB0 + seed,
            steps(),
            true, /* one writer: exact peak */
        );
        // by_ref of a bound handle
        walk(&b.by_ref(), d, inj, 0xB1 + seed, steps() / 2, false);
    }
}

#[test]
fn differential_mixed_handles_same_domain() {
    // Blocks allocated through one handle and resized/freed through another of the same domain.
    struct Mixed<'a> {
        a: DomainAllocator,
        b: ludus::memory::BoundDomain<'a>,
        flip: core::cell::Cell<u32>,
    }
    impl Mixed<'_> {
        fn pick(&self) -> &dyn Allocator {
            let f = self
                .flip
                .get()
                .wrapping_mul(1_103_515_245)
                .wrapping_add(12345);
            self.flip.set(f);
            if f & 0x100 == 0 {
                &self.a
            } else {
                &self.b
            }
        }
    }
    // SAFETY: forwards to two allocators of one domain, whose blocks are interchangeable.
    unsafe impl Allocator for Mixed<'_> {
        fn allocate(&self, l: Layout) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
            self.pick().allocate(l)
        }
        unsafe fn deallocate(&self, p: NonNull<u8>, l: Layout) {
            // SAFETY: the caller's contract, passed on; both handles free and resize each
            // other's blocks (one domain).
            unsafe { self.pick().deallocate(p, l) }
        }
        unsafe fn grow(
            &self,
            p: NonNull<u8>,
            o: Layout,
            n: Layout,
        ) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
            // SAFETY: the caller's contract, passed on; both handles free and resize each
            // other's blocks (one domain).
            unsafe { self.pick().grow(p, o, n) }
        }
        unsafe fn grow_zeroed(
            &self,
            p: NonNull<u8>,
            o: Layout,
            n: Layout,
        ) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
            // SAFETY: the caller's contract, passed on; both handles free and resize each
            // other's blocks (one domain).
            unsafe { self.pick().grow_zeroed(p, o, n) }
        }
        unsafe fn shrink(
            &self,
            p: NonNull<u8>,
            o: Layout,
            n: Layout,
        ) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
            // SAFETY: the caller's contract, passed on; both handles free and resize each
            // other's blocks (one domain).
            unsafe { self.pick().shrink(p, o, n) }
        }
    }
    for seed in 0..seeds() {
        let (d, inj) = failing_in(CounterMode::Sharded, 0);
        let m = Mixed {
            a: d.allocator(),
            b: d.bind().unwrap(),
            flip: core::cell::Cell::new(seed as u32),
        };
        walk(&m, d, inj, 0xC0 + seed, steps(), false);
    }
}

struct SendPtr(NonNull<u8>, usize);
// SAFETY: ownership of the block moves with the wrapper.
unsafe impl Send for SendPtr {}

#[test]
fn threads_share_a_copy_allocator_and_counters_stay_exact() {
    use std::sync::{Arc, Barrier, Mutex};
    for mode in [CounterMode::Exact, CounterMode::Sharded] {
        let d = crate::support::keep(
            AllocationDomain::with_mode("walk/threads", Backend::System, mode).unwrap(),
        );
        let a = d.allocator();
        let n = if cfg!(miri) { 3 } else { 8 };
        let iters = if cfg!(miri) { 40 } else { 20_000 };
        let bar = Arc::new(Barrier::new(n));
        let queue: Arc<Mutex<Vec<SendPtr>>> = Arc::new(Mutex::new(Vec::new()));
        let model = Arc::new(Mutex::new(Model::default()));
        let mut hs = Vec::new();
        for t in 0..n {
            let (bar, queue, model) = (bar.clone(), queue.clone(), model.clone());
            hs.push(std::thread::spawn(move || {
                bar.wait();
                let mut rng = Rng::seeded(t as u64 * 77 + 7);
                let mut local = Model::default();
                for _ in 0..iters {
                    let size = 1 + rng.below(200);
                    let l = Layout::from_size_align(size, 8).unwrap();
                    let p = a.allocate(l).unwrap().cast::<u8>();
                    local.allocations += 1;
                    local.allocated_bytes += size as u64;
                    queue.lock().unwrap().push(SendPtr(p, size));
                    let got = queue.lock().unwrap().pop();
                    if let Some(SendPtr(p, size)) = got {
                        // Grow (same or other alignment) on this thread, then free.
                        let old = Layout::from_size_align(size, 8).unwrap();
                        let new_align = if rng.below(2) == 0 { 8 } else { 32 };
                        let ns = size + 1 + rng.below(64);
                        let new = Layout::from_size_align(ns, new_align).unwrap();
                        // SAFETY: the block is `a`'s with `old`, owned by this thread now.
                        let q = unsafe { a.grow(p, old, new) }.unwrap().cast::<u8>();
                        if new_align == 8 {
                            local.reallocations += 1;
                            local.allocated_bytes += (ns - size) as u64;
                        } else {
                            local.allocations += 1;
                            local.allocated_bytes += ns as u64;
                            local.frees += 1;
                            local.freed_bytes += size as u64;
                        }
                        // SAFETY: as above, with `new`.
                        unsafe { a.deallocate(q, new) };
                        local.frees += 1;
                        local.freed_bytes += ns as u64;
                    }
                    if rng.below(64) == 0 {
                        // samples must never be out of range
                        let u = d.usage();
                        assert!(u.valid && u.allocated_bytes >= u.freed_bytes);
                    }
                }
                let mut m = model.lock().unwrap();
                m.allocations += local.allocations;
                m.frees += local.frees;
                m.allocated_bytes += local.allocated_bytes;
                m.freed_bytes += local.freed_bytes;
                m.reallocations += local.reallocations;
            }));
        }
        for h in hs {
            h.join().unwrap();
        }
        let rest: Vec<SendPtr> = core::mem::take(&mut *queue.lock().unwrap());
        let mut m = *model.lock().unwrap();
        for SendPtr(p, size) in rest {
            // SAFETY: remaining blocks of `a` with layout (size, 8).
            unsafe { a.deallocate(p, Layout::from_size_align(size, 8).unwrap()) };
            m.frees += 1;
            m.freed_bytes += size as u64;
        }
        let u = d.usage();
        assert_eq!((u.live_bytes, u.live_blocks), (0, 0), "{mode:?} {u:?}");
        assert_eq!(
            (
                u.allocations,
                u.frees,
                u.allocated_bytes,
                u.freed_bytes,
                u.reallocations
            ),
            (
                m.allocations,
                m.frees,
                m.allocated_bytes,
                m.freed_bytes,
                m.reallocations
            ),
            "{mode:?}"
        );
        assert!(u.valid);
    }
}

#[test]
fn bound_domain_containers_move_across_threads() {
    let d = crate::support::domain("walk/bound-move", Backend::System);
    let n = if cfg!(miri) { 2 } else { 16 };
    std::thread::scope(|s| {
        for t in 0..n {
            s.spawn(move || {
                let b = d.bind().unwrap();
                let mut v: allocator_api2::vec::Vec<u64, ludus::memory::BoundDomain<'_>> =
                    allocator_api2::vec::Vec::new_in(b);
                v.extend(0..(t as u64 * 10 + 5));
                // Move the vec (and its handle) to another thread, grow and drop there.
                std::thread::scope(|s2| {
                    s2.spawn(move || {
                        let mut v = v;
                        v.extend(0..100);
                        v.shrink_to_fit();
                        let mut m: hashbrown::HashMap<u64, u64, hashbrown::DefaultHashBuilder, _> =
                            hashbrown::HashMap::with_hasher_in(Default::default(), v.allocator());
                        for i in 0..50 {
                            m.insert(i, i);
                        }
                        drop(m);
                        drop(v);
                    });
                });
            });
        }
    });
    let u = d.usage();
    assert_eq!((u.live_bytes, u.live_blocks), (0, 0), "{u:?}");
    assert_eq!(u.allocated_bytes, u.freed_bytes);
    assert!(u.valid);
}
