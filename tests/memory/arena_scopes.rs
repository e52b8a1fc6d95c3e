//! `LinearArena` / `ScratchScope` under a seeded random walk checked against a model after
//! every step (nested scopes, panics inside scopes, resets, initialized and uninitialized
//! buffers, every base address residue), the arena's edge inputs (empty buffer, huge sizes and
//! alignments), and scopes that are forgotten or unwound through.

use std::mem::MaybeUninit;
use std::panic::{catch_unwind, AssertUnwindSafe};

use ludus::memory::{AllocationLayout, ArenaError, LinearArena, ScratchScope};

use crate::support::Rng;

/// The model: a cursor over the real buffer address, the high-water, and every live range
/// (start offset, len, fill byte) across all open levels.
struct Model {
    base: usize,
    cap: usize,
    used: usize,
    high: usize,
    uninit: bool,
    live: Vec<(usize, usize, u8)>,
    steps: usize,
}

static STATS: [std::sync::atomic::AtomicUsize; 4] =
    [const { std::sync::atomic::AtomicUsize::new(0) }; 4];
fn stat(i: usize) {
    STATS[i].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

impl Model {
    /// Expected outcome of a request: `Ok(offset)` or the exact error.
    fn expect(&self, size: usize, align: usize) -> Result<usize, ArenaError> {
        let addr = self.base + self.used;
        let pad = (align - addr % align) % align;
        let remaining = self.cap - self.used;
        match pad.checked_add(size) {
            Some(need) if need <= remaining => Ok(self.used + pad),
            _ => Err(ArenaError::Exhausted {
                size,
                align,
                remaining,
            }),
        }
    }
    fn commit(&mut self, off: usize, size: usize, fill: u8) {
        self.used = off + size;
        self.high = self.high.max(self.used);
        if size > 0 {
            for &(s, l, _) in &self.live {
                assert!(
                    off + size <= s || s + l <= off,
                    "overlap [{off},+{size}) vs [{s},+{l})"
                );
            }
            self.live.push((off, size, fill));
        }
    }
}

/// One live allocation held by the walker (its bytes, pattern).
struct Held<'a> {
    bytes: &'a mut [u8],
    fill: u8,
}

fn check_held(m: &Model, held: &[Held<'_>]) {
    for h in held {
        assert!(
            h.bytes.iter().all(|&b| b == h.fill),
            "step {}: contents of a live block changed (fill {:#x})",
            m.steps,
            h.fill
        );
    }
}

fn pick_layout(r: &mut Rng) -> (usize, usize) {
    let align = match r.below(20) {
        0 => 1usize << 63,
        1 => 1usize << (20 + r.below(40)),
        _ => 1usize << r.below(7),
    };
    let size = match r.below(20) {
        0 => 0,
        1 => isize::MAX as usize - (align - 1), // the largest valid layout at `align`
        2 => 1 + r.below(300),
        _ => r.below(24),
    };
    (size, align)
}

/// Allocates through `alloc` (arena or scope) and checks it against the model.
#[allow(clippy::type_complexity)]
fn step_alloc<'a>(
    m: &mut Model,
    r: &mut Rng,
    held: &mut Vec<Held<'a>>,
    alloc: &dyn Fn(u8, AllocationLayout, &mut Rng) -> Result<&'a mut [u8], ArenaError>,
) {
    m.steps += 1;
    let kind = r.below(6) as u8;
    let (size, align) = match kind {
        0 => pick_layout(r),
        1 => (8, 8),              // u64 pod
        2 => (2 * r.below(9), 2), // u16 slice fill
        3 => (3 * r.below(5), 1), // [u8;3] slice copy
        4 => (4 * r.below(7), 4), // u32 zeroed
        _ => (0, 1),              // ZST slice of any length
    };
    let (size, layout) = match AllocationLayout::new(size, align) {
        Ok(l) => (size, l),
        Err(_) => (0, AllocationLayout::new(0, align).unwrap()),
    };
    let want = m.expect(size, align);
    let before = (m.used, m.high);
    let got = alloc(kind, layout, r);
    match (want, got) {
        (Ok(off), Ok(bytes)) => {
            assert_eq!(bytes.len(), size);
            if size > 0 {
                assert_eq!(
                    bytes.as_ptr().addr(),
                    m.base + off,
                    "step {}: wrong address",
                    m.steps
                );
            }
            if m.uninit && kind == 0 {
                assert!(
                    bytes.iter().all(|&b| b == 0),
                    "from_uninit bytes not zeroed"
                );
            }
            if kind == 4 {
                assert!(bytes.iter().all(|&b| b == 0), "zeroed slice not zero");
            }
            stat(0);
            let fill = (r.next() as u8) | 1;
            bytes.fill(fill);
            m.commit(off, size, fill);
            held.push(Held { bytes, fill });
        }
        (Err(e), Err(g)) => {
            stat(1);
            if size > 0 || kind == 0 {
                assert_eq!(e, g, "step {}", m.steps);
            }
            assert_eq!((m.used, m.high), before);
        }
        (w, g) => panic!(
            "step {}: model {w:?} vs arena {:?} (size {size} align {align})",
            m.steps,
            g.map(|b| b.len())
        ),
    }
}

/// Allocation through a scope, dispatched on `kind` so every typed helper runs.
fn scope_alloc<'s>(
    s: &ScratchScope<'s>,
    kind: u8,
    l: AllocationLayout,
    r: &mut Rng,
) -> Result<&'s mut [u8], ArenaError> {
    Ok(match kind {
        0 => s.try_alloc_bytes(l)?,
        1 => bytemuck::bytes_of_mut(s.try_alloc_pod(r.next())?),
        2 => bytemuck::cast_slice_mut(s.try_alloc_slice_fill(l.size() / 2, 0xABCDu16)?),
        3 => {
            let src = vec![[7u8, 8, 9]; l.size() / 3];
            bytemuck::cast_slice_mut(s.try_alloc_slice_copy(&src)?)
        }
        4 => bytemuck::cast_slice_mut(s.try_alloc_slice_zeroed::<u32>(l.size() / 4)?),
        _ => {
            let n = s.try_alloc_slice_fill(usize::MAX, ())?.len();
            assert_eq!(n, usize::MAX);
            &mut []
        }
    })
}

fn arena_alloc<'a>(
    a: &'a LinearArena<'_>,
    kind: u8,
    l: AllocationLayout,
    r: &mut Rng,
) -> Result<&'a mut [u8], ArenaError> {
    Ok(match kind {
        0 => a.try_alloc_bytes(l)?,
        1 => bytemuck::bytes_of_mut(a.try_alloc_pod(r.next())?),
        2 => bytemuck::cast_slice_mut(a.try_alloc_slice_fill(l.size() / 2, 0xABCDu16)?),
        3 => {
            let src = vec![[7u8, 8, 9]; l.size() / 3];
            bytemuck::cast_slice_mut(a.try_alloc_slice_copy(&src)?)
        }
        4 => bytemuck::cast_slice_mut(a.try_alloc_slice_zeroed::<u32>(l.size() / 4)?),
        _ => {
            let n = a.try_alloc_slice_fill(usize::MAX, ())?.len();
            assert_eq!(n, usize::MAX);
            &mut []
        }
    })
}

/// One scope level: allocate, recurse (sometimes panicking inside), verify, and check that
/// closing restores exactly the cursor at opening.
fn walk_scope<'s>(
    s: &mut ScratchScope<'s>,
    m: &mut Model,
    r: &mut Rng,
    depth: u32,
    budget: &mut u32,
) {
    let marker = m.used;
    let live_at_open = m.live.len();
    assert_eq!(s.used(), m.used);
    let mut held: Vec<Held<'s>> = Vec::new();
    while *budget > 0 {
        *budget -= 1;
        match r.below(10) {
            0..=5 => {
                let sr: &ScratchScope<'s> = s;
                step_alloc(m, r, &mut held, &|k, l, r| scope_alloc(sr, k, l, r));
            }
            6 if depth < 4 => {
                let panics = r.below(4) == 0;
                let mark = m.used;
                let live = m.live.len();
                let res = catch_unwind(AssertUnwindSafe(|| {
                    s.scope(|inner| {
                        walk_scope(inner, m, r, depth + 1, budget);
                        if panics {
                            // Allocate something, then unwind through the scope.
                            let _x = inner.try_alloc_pod(1u8);
                            std::panic::panic_any(());
                        }
                    })
                }));
                assert_eq!(res.is_err(), panics);
                stat(2 + usize::from(panics));
                // The inner level (and anything it did before the panic) is rewound.
                m.used = mark;
                m.live.truncate(live);
                m.high = m.high.max(s.high_water()).max(m.used);
                assert_eq!(s.used(), mark, "inner scope did not rewind to its marker");
            }
            7 => check_held(m, &held),
            8 => break,
            _ => {}
        }
        assert_eq!(s.used(), m.used);
        assert_eq!(s.high_water(), m.high, "step {}", m.steps);
        assert_eq!(s.remaining(), m.cap - m.used);
        assert_eq!(s.capacity(), m.cap);
    }
    check_held(m, &held);
    // High water: the arena reports max(high, used); the model tracks what it saw.
    assert_eq!(s.high_water(), m.high);
    drop(held);
    m.used = marker;
    m.live.truncate(live_at_open);
}

fn run_walk(seed: u64, rounds: u32, per_round: u32, uninit: bool) {
    let mut r = Rng::seeded(seed);
    // Random offset into an 8-aligned backing so the base is at every residue.
    let cap = 64 + r.below(400);
    let off = r.below(16);
    let mut backing = vec![0u64; (cap + off).div_ceil(8) + 1];
    let mut backing_u: Vec<MaybeUninit<u8>> = Vec::with_capacity(cap + off);
    // SAFETY: `MaybeUninit<u8>` needs no initialization, and the capacity is `cap + off`.
    unsafe { backing_u.set_len(cap + off) };
    let bytes: &mut [u8] = &mut bytemuck::cast_slice_mut(&mut backing)[off..off + cap];
    let ubytes = &mut backing_u[off..off + cap];
    let base = if uninit {
        ubytes.as_ptr().addr()
    } else {
        bytes.as_ptr().addr()
    };
    let mut arena = if uninit {
        LinearArena::from_uninit(ubytes)
    } else {
        LinearArena::new(bytes)
    };
    let mut m = Model {
        base,
        cap,
        used: 0,
        high: 0,
        uninit,
        live: Vec::new(),
        steps: 0,
    };
    assert_eq!(arena.capacity(), cap);
    for _ in 0..rounds {
        // Arena-level allocations, verified, then dropped before scope/reset.
        {
            let mut held: Vec<Held<'_>> = Vec::new();
            let a = &arena;
            for _ in 0..r.below(per_round as usize / 4 + 1) {
                step_alloc(&mut m, &mut r, &mut held, &|k, l, r| {
                    arena_alloc(a, k, l, r)
                });
            }
            check_held(&m, &held);
        }
        m.live.clear(); // arena-level allocations are dead (no longer borrowed) but not rewound
        let mut budget = per_round;
        let used = m.used;
        let (mm, rr) = (&mut m, &mut r);
        arena.scope(|s| walk_scope(s, mm, rr, 0, &mut budget));
        assert_eq!(arena.used(), used);
        assert_eq!(arena.high_water(), m.high);
        if r.below(3) == 0 {
            arena.reset();
            m.used = 0;
            assert_eq!(arena.used(), 0);
            assert_eq!(
                arena.high_water(),
                m.high,
                "reset must not lower high water"
            );
        }
        // A panic straight through a top-level scope.
        if r.below(4) == 0 {
            let used = arena.used();
            let res = catch_unwind(AssertUnwindSafe(|| {
                arena.scope(|s| {
                    let _ = s.try_alloc_slice_fill(5, 3u8);
                    panic!("top-level");
                })
            }));
            assert!(res.is_err());
            assert_eq!(arena.used(), used);
            m.high = arena.high_water();
        }
    }
}

/// Silences the walk's deliberate panics (payload `()` or "top-level"), keeps all others.
fn quiet_deliberate_panics() {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let p = info.payload();
        if p.is::<()>() || p.downcast_ref::<&str>() == Some(&"top-level") {
            return;
        }
        prev(info);
    }));
}

#[test]
fn arena_random_walk_against_model() {
    quiet_deliberate_panics();
    let (seeds, rounds, per) = if cfg!(miri) {
        (16, 4, 40)
    } else {
        (400, 30, 120)
    };
    for seed in 0..seeds {
        for uninit in [false, true] {
            let res = catch_unwind(|| run_walk(seed, rounds, per, uninit));
            if let Err(e) = res {
                eprintln!("failing seed {seed} uninit {uninit}");
                std::panic::resume_unwind(e);
            }
        }
    }
    let s: Vec<_> = STATS
        .iter()
        .map(|a| a.load(std::sync::atomic::Ordering::Relaxed))
        .collect();
    eprintln!(
        "walk: {} allocs ok, {} refused, {} nested scopes, {} panicking scopes",
        s[0], s[1], s[2], s[3]
    );
    assert!(s.iter().all(|&n| n > 0));
}

#[test]
fn arena_edge_inputs() {
    // Empty buffer: every nonzero request fails cleanly, ZSTs still work.
    let mut empty: [u8; 0] = [];
    let a = LinearArena::new(&mut empty);
    assert_eq!((a.capacity(), a.used(), a.remaining()), (0, 0, 0));
    assert!(matches!(
        a.try_alloc_pod(1u8),
        Err(ArenaError::Exhausted { .. })
    ));
    assert_eq!(
        a.try_alloc_slice_fill(usize::MAX, ()).unwrap().len(),
        usize::MAX
    );
    assert!(
        a.try_alloc_bytes(AllocationLayout::new(0, 1 << 63).unwrap())
            .is_err()
            || a.used() == 0
    );
    assert_eq!(a.used(), 0);

    // Huge alignments and sizes on a small buffer: typed errors, no cursor move.
    let mut bytes = [0u8; 64];
    let a = LinearArena::new(&mut bytes);
    a.try_alloc_pod(1u8).unwrap();
    for align in [1usize << 12, 1 << 40, 1 << 62, 1 << 63] {
        for size in [0usize, 1, isize::MAX as usize - (align - 1)] {
            let Ok(l) = AllocationLayout::new(size, align) else {
                assert_eq!((align, size), (1 << 63, 1));
                continue;
            };
            let r = a.try_alloc_bytes(l);
            if let Ok(b) = &r {
                assert_eq!(b.len(), size);
                assert_eq!(b.as_ptr().addr() % align, 0);
            } else {
                assert_eq!(a.used(), 1);
            }
            assert!(a.used() <= a.capacity());
        }
    }
    assert!(a.try_alloc_slice_zeroed::<u128>(usize::MAX / 8).is_err());
    assert!(a.try_alloc_slice_fill::<u64>(usize::MAX / 4, 0).is_err());
    assert!(a.try_alloc_slice_copy::<u8>(&[]).unwrap().is_empty());
}

#[test]
fn forgetting_a_scope_reference_or_panicking_never_corrupts_the_parent() {
    let mut bytes = [0u8; 256];
    let mut arena = LinearArena::new(&mut bytes);
    arena.scope(|outer| {
        let a = outer.try_alloc_slice_fill(16, 0x5Au8).unwrap();
        let mark = outer.used();
        // `mem::forget` of the only thing safe code can hold (a `&mut ScratchScope`) is a no-op.
        outer.scope(|inner| {
            let _ = inner.try_alloc_slice_fill(32, 0x11u8).unwrap();
            #[allow(forgetting_references)]
            std::mem::forget(&mut *inner);
        });
        assert_eq!(outer.used(), mark);
        // A panic in a doubly nested scope, caught in the middle one.
        outer.scope(|mid| {
            let b = mid.try_alloc_slice_fill(8, 0x22u8).unwrap();
            let r = catch_unwind(AssertUnwindSafe(|| {
                mid.scope(|inner| {
                    inner.try_alloc_slice_fill(64, 0x33u8).unwrap();
                    panic!("inner");
                })
            }));
            assert!(r.is_err());
            assert!(b.iter().all(|&x| x == 0x22));
            let c = mid.try_alloc_slice_fill(8, 0x44u8).unwrap();
            assert!(c.iter().all(|&x| x == 0x44));
        });
        assert_eq!(outer.used(), mark);
        assert!(a.iter().all(|&x| x == 0x5A));
    });
    assert_eq!(arena.used(), 0);
    // Reuse after everything above.
    let x = arena.try_alloc_pod(9u64).unwrap();
    assert_eq!(*x, 9);
}
