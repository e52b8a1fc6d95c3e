//! Memory workloads, each a criterion group whose function ids are contenders:
//! `ludus_system` / `ludus_mimalloc` (a domain with sharded counters over that backend),
//! `ludus_exact_system` / `ludus_exact_mimalloc` (the same with exact counters),
//! `ludus_bound_system` / `ludus_bound_mimalloc` (a sharded domain through a `BoundDomain`
//! handle; single-thread workloads only), `raw_system` /
//! `raw_mimalloc` (the same backend called directly, no accounting), and for transient batches
//! `ludus_arena` vs `bumpalo`, `vec_reuse` and `heap`. Seeds are fixed; payload bytes are touched
//! and checksummed so no work can be optimized away.
//!
//! Thread scaling runs 1 and 2 threads (the measurement machine has 2 cores).
//!
//! `LUDUS_MEMORY_INTERLEAVED=ROUNDS cargo bench -p ludus-benches --bench memory [--features
//! mimalloc]` runs the accounting gate's workloads interleaved instead (see [`interleaved`]):
//! on a shared machine, separate criterion groups land in different phases and their medians
//! cannot resolve a few percent.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::mpsc;

use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use ludus::memory::{
    AllocationDomain, AllocationLayout, Backend, BoundDomain, CounterMode, LinearArena,
};

/// One way to get and return bytes.
trait Heap {
    fn alloc(&self, l: Layout) -> *mut u8;
    /// # Safety
    /// `p` came from `alloc` with `l`.
    unsafe fn free(&self, p: *mut u8, l: Layout);
}

/// A ludus domain (counters on).
struct Domain(&'static AllocationDomain);

/// A ludus domain through a handle holding its own counter shard (single-thread workloads:
/// the handle is not `Sync`).
struct Bound(BoundDomain<'static>);

/// `Heap` over ludus's byte API, which the domain and a bound handle share.
macro_rules! ludus_heap {
    ($($t:ty),*) => {$(
        impl Heap for $t {
            #[inline]
            fn alloc(&self, l: Layout) -> *mut u8 {
                match self.0.try_allocate(AllocationLayout::from(l)) {
                    Ok(Some(p)) => p.as_ptr(),
                    _ => std::ptr::null_mut(),
                }
            }
            #[inline]
            unsafe fn free(&self, p: *mut u8, l: Layout) {
                // SAFETY: forwarded contract.
                unsafe {
                    self.0
                        .free(std::ptr::NonNull::new(p), AllocationLayout::from(l))
                }
            }
        }
    )*};
}

ludus_heap!(Domain, Bound);

/// A backend called directly (counters off).
struct Raw<G: GlobalAlloc + Sync>(G);

impl<G: GlobalAlloc + Sync> Heap for Raw<G> {
    #[inline]
    fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: every workload size is nonzero.
        unsafe { self.0.alloc(l) }
    }
    #[inline]
    unsafe fn free(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded contract.
        unsafe { self.0.dealloc(p, l) }
    }
}

fn domain(backend: Backend, mode: CounterMode) -> &'static AllocationDomain {
    Box::leak(Box::new(
        AllocationDomain::with_mode("bench", backend, mode).unwrap(),
    ))
}

/// The contenders of every general-allocation workload.
fn heaps() -> Vec<(&'static str, Box<dyn Heap + Sync>)> {
    #[allow(unused_mut)]
    let mut v: Vec<(&'static str, Box<dyn Heap + Sync>)> = vec![
        (
            "ludus_system",
            Box::new(Domain(domain(Backend::System, CounterMode::Sharded))),
        ),
        (
            "ludus_exact_system",
            Box::new(Domain(domain(Backend::System, CounterMode::Exact))),
        ),
        ("raw_system", Box::new(Raw(System))),
    ];
    #[cfg(feature = "mimalloc")]
    {
        v.push((
            "ludus_mimalloc",
            Box::new(Domain(domain(Backend::Mimalloc, CounterMode::Sharded))),
        ));
        v.push((
            "ludus_exact_mimalloc",
            Box::new(Domain(domain(Backend::Mimalloc, CounterMode::Exact))),
        ));
        v.push(("raw_mimalloc", Box::new(Raw(mimalloc::MiMalloc))));
    }
    v
}

/// The contenders of the single-thread workloads: every one of [`heaps`], and a
/// [`BoundDomain`] per backend (`ludus_bound_*`, sharded counters).
fn single_heaps() -> Vec<(&'static str, Box<dyn Heap>)> {
    let mut v: Vec<(&'static str, Box<dyn Heap>)> = Vec::new();
    for (name, h) in heaps() {
        v.push((name, h));
    }
    #[allow(unused_mut)]
    let mut bound = vec![("ludus_bound_system", Backend::System)];
    #[cfg(feature = "mimalloc")]
    bound.push(("ludus_bound_mimalloc", Backend::Mimalloc));
    for (name, backend) in bound {
        let d = domain(backend, CounterMode::Sharded);
        v.push((name, Box::new(Bound(d.bind().unwrap()))));
    }
    v
}

/// xorshift64*: a fixed-seed generator so every contender sees the same sequence.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut rng = Rng(seed);
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        v.swap(i, rng.below(i + 1));
    }
    v
}

#[inline]
fn touch(p: *mut u8, size: usize) -> u64 {
    // SAFETY: `p` is a live block of `size` bytes.
    unsafe {
        p.write_bytes(0xA5, size);
        u64::from(p.add(size - 1).read())
    }
}

const SMALL_SIZES: [usize; 6] = [8, 16, 48, 64, 96, 256];

/// Many small blocks: a retained set of `n` blocks around cache-line sizes, touched, freed in
/// shuffled order.
fn small_blocks<H: Heap + ?Sized>(
    h: &H,
    blocks: &mut Vec<(*mut u8, Layout)>,
    order: &[usize],
) -> u64 {
    let mut sum = 0;
    for i in 0..order.len() {
        let l = Layout::from_size_align(SMALL_SIZES[i % SMALL_SIZES.len()], 8).unwrap();
        let p = h.alloc(l);
        sum += touch(p, l.size());
        blocks.push((p, l));
    }
    for &i in order {
        let (p, l) = blocks[i];
        // SAFETY: each block is freed once with its layout.
        unsafe { h.free(p, l) };
    }
    blocks.clear();
    sum
}

fn bench_small_blocks(c: &mut Criterion) {
    let n = 4096;
    let order = shuffled(n, 0x5EED);
    let mut g = c.benchmark_group("small_blocks");
    g.throughput(Throughput::Elements(n as u64));
    for (name, h) in single_heaps() {
        let mut blocks = Vec::with_capacity(n);
        g.bench_function(name, |b| b.iter(|| small_blocks(&*h, &mut blocks, &order)));
    }
    g.finish();
}

/// Mixed sizes and lifetimes: 512 long-lived anchors replaced at random (log-uniform sizes up to
/// 8 KiB) plus a transient burst of 64 blocks every 256 steps.
fn mixed<H: Heap + ?Sized>(
    h: &H,
    slots: &mut [(*mut u8, Layout)],
    burst: &mut Vec<(*mut u8, Layout)>,
) -> u64 {
    let mut rng = Rng(0xD1CE);
    let mut sum = 0;
    let size = |rng: &mut Rng| 16usize << rng.below(10);
    for step in 0..4096 {
        let i = rng.below(slots.len());
        let (p, l) = slots[i];
        if !p.is_null() {
            // SAFETY: live anchor freed once.
            unsafe { h.free(p, l) };
        }
        let l = Layout::from_size_align(size(&mut rng), 16).unwrap();
        let p = h.alloc(l);
        sum += touch(p, l.size().min(64));
        slots[i] = (p, l);
        if step % 256 == 255 {
            for _ in 0..64 {
                let l = Layout::from_size_align(size(&mut rng).min(512), 8).unwrap();
                let p = h.alloc(l);
                sum += touch(p, l.size());
                burst.push((p, l));
            }
            for (p, l) in burst.drain(..) {
                // SAFETY: transient block freed once.
                unsafe { h.free(p, l) };
            }
        }
    }
    for s in slots.iter_mut() {
        if !s.0.is_null() {
            // SAFETY: live anchor freed once.
            unsafe { h.free(s.0, s.1) };
        }
        *s = (std::ptr::null_mut(), s.1);
    }
    sum
}

fn bench_mixed(c: &mut Criterion) {
    let mut g = c.benchmark_group("mixed_lifetimes");
    for (name, h) in single_heaps() {
        let mut slots = vec![(std::ptr::null_mut(), Layout::new::<u8>()); 512];
        let mut burst = Vec::with_capacity(64);
        g.bench_function(name, |b| b.iter(|| mixed(&*h, &mut slots, &mut burst)));
    }
    g.finish();
}

/// Large blocks: 4 MiB at 4 KiB alignment, one byte per page touched or none.
///
/// glibc raises its mmap threshold dynamically when a large mmapped block is freed, and
/// criterion's own analysis between contenders frees such blocks; so whichever contender ran
/// second used to get recycled heap pages while the first paid fresh page faults (183× apart on
/// identical calls). Pinning the threshold (which disables the dynamic adjustment) makes every
/// contender get a fresh mapping per allocation, in any order. A benchmark setting, not the
/// library's: ludus never configures the process allocator.
fn bench_large(c: &mut Criterion) {
    #[cfg(target_env = "gnu")]
    // SAFETY: `mallopt` only adjusts glibc's tuning parameters; called before this group's
    // allocations, on the bench's main thread.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
    let l = Layout::from_size_align(4 << 20, 4096).unwrap();
    for (group, touched) in [("large_touched", true), ("large_untouched", false)] {
        let mut g = c.benchmark_group(group);
        for (name, h) in single_heaps() {
            g.bench_function(name, |b| {
                b.iter(|| {
                    let p = h.alloc(l);
                    let mut sum = 0u64;
                    if touched {
                        for off in (0..l.size()).step_by(4096) {
                            // SAFETY: `off < size`.
                            unsafe {
                                p.add(off).write(1);
                                sum += u64::from(p.add(off).read());
                            }
                        }
                    }
                    // SAFETY: freed once with its layout.
                    unsafe { h.free(black_box(p), l) };
                    sum
                })
            });
        }
        g.finish();
    }
}

/// Thread scaling: each thread runs the small-blocks workload on the same domain.
fn bench_threads(c: &mut Criterion) {
    let n = 2048;
    let order = shuffled(n, 0xBEEF);
    for threads in [1usize, 2] {
        let mut g = c.benchmark_group(format!("threads_{threads}"));
        g.throughput(Throughput::Elements((n * threads) as u64));
        for (name, h) in heaps() {
            g.bench_function(name, |b| {
                b.iter(|| {
                    std::thread::scope(|s| {
                        let hs: Vec<_> = (0..threads)
                            .map(|_| {
                                s.spawn(|| {
                                    let mut blocks = Vec::with_capacity(n);
                                    (0..4)
                                        .map(|_| small_blocks(&*h, &mut blocks, &order))
                                        .sum::<u64>()
                                })
                            })
                            .collect();
                        hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
                    })
                })
            });
        }
        g.finish();
    }
}

/// Remote frees: a producer allocates and touches, a consumer frees (batches of 64).
fn bench_remote(c: &mut Criterion) {
    struct Batch(Vec<(*mut u8, Layout)>);
    // SAFETY: the blocks are plain bytes moved, not shared, between threads.
    unsafe impl Send for Batch {}
    let mut g = c.benchmark_group("remote_free");
    g.throughput(Throughput::Elements(4096));
    for (name, h) in heaps() {
        g.bench_function(name, |b| {
            b.iter(|| {
                let (tx, rx) = mpsc::sync_channel::<Batch>(4);
                std::thread::scope(|s| {
                    s.spawn(|| {
                        for batch in rx {
                            for (p, l) in batch.0 {
                                // SAFETY: each block freed once with its layout.
                                unsafe { h.free(p, l) };
                            }
                        }
                    });
                    let mut sum = 0;
                    for _ in 0..64 {
                        let mut v = Vec::with_capacity(64);
                        for i in 0..64 {
                            let l = Layout::from_size_align(SMALL_SIZES[i % SMALL_SIZES.len()], 8)
                                .unwrap();
                            let p = h.alloc(l);
                            sum += touch(p, l.size());
                            v.push((p, l));
                        }
                        tx.send(Batch(v)).unwrap();
                    }
                    drop(tx);
                    sum
                })
            })
        });
    }
    g.finish();
}

/// A 32-byte plain record, the payload of the transient batch.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Rec {
    a: [u64; 3],
    b: u32,
    c: u32,
}

fn rec(i: usize) -> Rec {
    Rec {
        a: [i as u64; 3],
        b: i as u32,
        c: !(i as u32),
    }
}

/// Transient batches: 256 records allocated one by one, read back, then all released.
fn bench_transient(c: &mut Criterion) {
    const N: usize = 256;
    let mut g = c.benchmark_group("transient_batch");
    g.throughput(Throughput::Elements(N as u64));

    let mut backing = vec![0u8; N * 32 + 64];
    let mut arena = LinearArena::new(&mut backing);
    g.bench_function("ludus_arena", |b| {
        b.iter(|| {
            let mut sum = 0u64;
            for i in 0..N {
                if let Ok(r) = arena.try_alloc_pod(rec(black_box(i))) {
                    sum += r.a[0] + u64::from(r.c);
                }
            }
            arena.reset();
            sum
        })
    });

    let mut bump = bumpalo::Bump::with_capacity(N * 32 + 64);
    g.bench_function("bumpalo", |b| {
        b.iter(|| {
            let mut sum = 0u64;
            for i in 0..N {
                let r = bump.alloc(rec(black_box(i)));
                sum += r.a[0] + u64::from(r.c);
            }
            bump.reset();
            sum
        })
    });

    let mut v: Vec<Rec> = Vec::with_capacity(N);
    g.bench_function("vec_reuse", |b| {
        b.iter(|| {
            let mut sum = 0u64;
            for i in 0..N {
                v.push(rec(black_box(i)));
                let r = v.last().unwrap();
                sum += r.a[0] + u64::from(r.c);
            }
            v.clear();
            sum
        })
    });

    let d = Domain(domain(Backend::BUILD, CounterMode::Sharded));
    let mut held: Vec<*mut Rec> = Vec::with_capacity(N);
    g.bench_function("heap", |b| {
        b.iter(|| {
            let mut sum = 0u64;
            let l = Layout::new::<Rec>();
            for i in 0..N {
                let p = d.alloc(l).cast::<Rec>();
                // SAFETY: `p` is a fresh block for one `Rec`.
                unsafe {
                    p.write(rec(black_box(i)));
                    sum += (*p).a[0] + u64::from((*p).c);
                }
                held.push(p);
            }
            for p in held.drain(..) {
                // SAFETY: freed once with its layout.
                unsafe { d.free(p.cast(), l) };
            }
            sum
        })
    });
    g.finish();
}

/// Accounting overhead, worst case: a bare 64-byte allocate/free pair, counters on vs off.
fn bench_accounting(c: &mut Criterion) {
    let l = Layout::from_size_align(64, 8).unwrap();
    let mut g = c.benchmark_group("alloc_free_64");
    g.throughput(Throughput::Elements(1));
    for (name, h) in single_heaps() {
        g.bench_with_input(BenchmarkId::from_parameter(name), &l, |b, &l| {
            b.iter(|| {
                let p = h.alloc(black_box(l));
                // SAFETY: freed once with its layout.
                unsafe { h.free(black_box(p), l) };
            })
        });
    }
    g.finish();
}

/// Active capture cost per event (feature `capture`): the same pair with a session attached,
/// begun again every batch so the buffer never fills (the drain is outside the timing).
#[cfg(feature = "capture")]
fn bench_capture(c: &mut Criterion) {
    use ludus::memory::ActivityCapture;
    const BATCH: u64 = 1 << 14;
    let mut g = c.benchmark_group("capture_alloc_free_64");
    g.throughput(Throughput::Elements(1));
    let l = AllocationLayout::new(64, 8).unwrap();
    let d = domain(Backend::BUILD, CounterMode::Sharded);
    let cap = ActivityCapture::leak(2 * BATCH as usize, 64).unwrap();
    for (name, active) in [("ludus_idle", false), ("ludus_capturing", true)] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = std::time::Duration::ZERO;
                let mut left = iters;
                while left > 0 {
                    let n = left.min(BATCH);
                    left -= n;
                    let session = active.then(|| cap.begin(&[d]).unwrap());
                    let t = std::time::Instant::now();
                    for _ in 0..n {
                        let p = d.try_allocate(black_box(l)).unwrap();
                        // SAFETY: `p` came from `d` with `l`.
                        unsafe { d.free(black_box(p), l) };
                    }
                    total += t.elapsed();
                    if let Some(s) = session {
                        let r = s.end();
                        assert!(r.loss.is_complete());
                        black_box(r.events.len());
                    }
                }
                total
            })
        });
    }
    g.finish();
}

#[cfg(not(feature = "capture"))]
fn bench_capture(_: &mut Criterion) {}

/// The counters alone (no backend): one allocation and one free recorded, per mode.
fn bench_counters(c: &mut Criterion) {
    use ludus::memory::DomainCounters;
    let mut g = c.benchmark_group("counters_pair");
    g.throughput(Throughput::Elements(1));
    for (name, mode) in [
        ("ludus_sharded", CounterMode::Sharded),
        ("ludus_exact", CounterMode::Exact),
    ] {
        let counters = DomainCounters::new(mode);
        g.bench_function(name, |b| {
            b.iter(|| {
                counters.on_allocate(black_box(64));
                counters.on_free(black_box(64));
            })
        });
    }
    g.finish();
}

/// `LUDUS_MEMORY_INTERLEAVED=ROUNDS`: instead of criterion, the accounting gate's workloads
/// (bare pair, small blocks, mixed lifetimes) run interleaved: every contender warms up, then
/// each of `ROUNDS` rounds times one ~2 ms sample of every contender, in an order rotated per
/// round, so a phase of the shared machine hits all contenders alike. Prints a markdown table:
/// the median time per workload run and, per ludus contender, the median over rounds of its
/// ratio to the raw backend it wraps (the sample taken in the same round).
fn interleaved(rounds: usize) {
    use std::time::{Duration, Instant};
    type Run<'a> = Box<dyn FnMut() -> u64 + 'a>;
    let n = 4096;
    let order = shuffled(n, 0x5EED);
    println!("| workload | contender | median per run | ÷ raw, median of rounds | min..max of round ratios |");
    println!("| --- | --- | ---: | ---: | ---: |");
    for workload in ["alloc_free_64 (x1000)", "small_blocks", "mixed_lifetimes"] {
        /// One contender's workload run, monomorphized: the byte API inlines into the loop
        /// as it does in an engine (`try_allocate` and `free` are `#[inline(always)]`).
        fn run<'a, H: Heap + 'a>(workload: &str, h: H, order: &'a [usize]) -> Run<'a> {
            let pair = Layout::from_size_align(64, 8).unwrap();
            match workload {
                "small_blocks" => {
                    let mut blocks = Vec::with_capacity(order.len());
                    Box::new(move || small_blocks(&h, &mut blocks, order))
                }
                "mixed_lifetimes" => {
                    let mut slots = vec![(std::ptr::null_mut(), Layout::new::<u8>()); 512];
                    let mut burst = Vec::with_capacity(64);
                    Box::new(move || mixed(&h, &mut slots, &mut burst))
                }
                _ => Box::new(move || {
                    let mut sum = 0u64;
                    for _ in 0..1000 {
                        let p = h.alloc(black_box(pair));
                        sum += p.addr() as u64 & 1;
                        // SAFETY: freed once with its layout.
                        unsafe { h.free(black_box(p), pair) };
                    }
                    sum
                }),
            }
        }
        let order = &order;
        let sharded = |b| Domain(domain(b, CounterMode::Sharded));
        let bound = |b| Bound(domain(b, CounterMode::Sharded).bind().unwrap());
        #[allow(unused_mut)]
        let mut runs: Vec<(&str, Run<'_>)> = vec![
            ("raw_system", run(workload, Raw(System), order)),
            (
                "ludus_system",
                run(workload, sharded(Backend::System), order),
            ),
            (
                "ludus_bound_system",
                run(workload, bound(Backend::System), order),
            ),
        ];
        #[cfg(feature = "mimalloc")]
        runs.extend([
            (
                "raw_mimalloc",
                run(workload, Raw(mimalloc::MiMalloc), order),
            ),
            (
                "ludus_mimalloc",
                run(workload, sharded(Backend::Mimalloc), order),
            ),
            (
                "ludus_bound_mimalloc",
                run(workload, bound(Backend::Mimalloc), order),
            ),
        ]);
        // Warm-up, and the iterations that make a ~2 ms sample.
        let mut iters = Vec::new();
        for (_, run) in &mut runs {
            let t = Instant::now();
            let mut k = 0u64;
            while t.elapsed() < Duration::from_millis(300) {
                black_box(run());
                k += 1;
            }
            iters.push(((k as f64 * 2.0 / 300.0).ceil() as u64).max(1));
        }
        let mut times = vec![Vec::with_capacity(rounds); runs.len()];
        for r in 0..rounds {
            for j in 0..runs.len() {
                let i = (j + r) % runs.len();
                let t = Instant::now();
                for _ in 0..iters[i] {
                    black_box(runs[i].1());
                }
                times[i].push(t.elapsed().as_secs_f64() / iters[i] as f64);
            }
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let names: Vec<&str> = runs.iter().map(|r| r.0).collect();
        for (i, name) in names.iter().enumerate() {
            let raw = if name.ends_with("mimalloc") {
                "raw_mimalloc"
            } else {
                "raw_system"
            };
            let ratio = names
                .iter()
                .position(|n| *n == raw)
                .filter(|_| name.starts_with("ludus"));
            let cell = match ratio {
                Some(k) => {
                    let mut r: Vec<f64> = (0..rounds).map(|x| times[i][x] / times[k][x]).collect();
                    let (lo, hi) = (
                        r.iter().copied().fold(f64::INFINITY, f64::min),
                        r.iter().copied().fold(0.0, f64::max),
                    );
                    format!("{:.3}× | {lo:.2}..{hi:.2}", median(&mut r))
                }
                None => "— | —".to_string(),
            };
            let mut t = times[i].clone();
            println!(
                "| {workload} | {name} | {:.2} µs | {cell} |",
                median(&mut t) * 1e6
            );
        }
    }
}

criterion_group!(
    benches,
    bench_counters,
    bench_capture,
    bench_small_blocks,
    bench_mixed,
    bench_large,
    bench_threads,
    bench_remote,
    bench_transient,
    bench_accounting
);
fn main() {
    if let Some(rounds) = std::env::var("LUDUS_MEMORY_INTERLEAVED")
        .ok()
        .and_then(|r| r.parse().ok())
    {
        return interleaved(rounds);
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
