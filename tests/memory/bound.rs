//! `BoundDomain`: a handle holding its own counter shard charges exactly what the domain's own
//! byte API would. A model test mixes the domain and two handles over one sequence of
//! allocations, frees and resizes; threads bind, hand blocks to each other and exit; the
//! allocator-api2 impl and refused requests go through the handle too.

use std::ptr::NonNull;
use std::sync::mpsc;

use crate::support::{domain, failing, keep};
use allocator_api2::vec::Vec as AVec;
use ludus::memory::{
    AllocationDomain, AllocationLayout, Backend, BindError, BoundDomain, CounterMode, MemoryUsage,
};
use proptest::prelude::*;

/// Which door a call goes through.
#[derive(Debug, Clone, Copy)]
enum Via {
    Domain,
    Handle(usize),
}

#[derive(Debug, Clone)]
enum Op {
    Alloc { size: usize, via: Via },
    Free { pick: usize, via: Via },
    Resize { pick: usize, size: usize, via: Via },
}

fn via() -> impl Strategy<Value = Via> {
    prop_oneof![Just(Via::Domain), (0..2usize).prop_map(Via::Handle)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1..300usize, via()).prop_map(|(size, via)| Op::Alloc { size, via }),
        2 => (any::<usize>(), via()).prop_map(|(pick, via)| Op::Free { pick, via }),
        1 => (any::<usize>(), 0..300usize, via())
            .prop_map(|(pick, size, via)| Op::Resize { pick, size, via }),
    ]
}

/// What the domain's figures must be: a plain tally of the same calls.
#[derive(Debug, Default)]
struct Model {
    live: usize,
    blocks: usize,
    allocations: u64,
    frees: u64,
    allocated: u64,
    freed: u64,
    reallocations: u64,
    peak: usize,
}

impl Model {
    fn grow(&mut self, n: usize) {
        self.live += n;
        self.allocated += n as u64;
        self.peak = self.peak.max(self.live);
    }
    fn shrink(&mut self, n: usize) {
        self.live -= n;
        self.freed += n as u64;
    }
    fn check(&self, u: MemoryUsage) {
        assert_eq!(
            (u.live_bytes, u.live_blocks),
            (self.live, self.blocks),
            "{u:?}"
        );
        assert_eq!((u.allocations, u.frees), (self.allocations, self.frees));
        assert_eq!(
            (u.allocated_bytes, u.freed_bytes),
            (self.allocated, self.freed)
        );
        assert_eq!(u.reallocations, self.reallocations);
        // Sharded: a bound of the true peak, never above what was ever handed out.
        assert!(
            u.high_water_bytes >= self.peak,
            "{u:?} vs peak {}",
            self.peak
        );
        assert!(u.high_water_bytes as u64 <= self.allocated, "{u:?}");
        assert!(u.valid);
    }
}

struct Doors<'d> {
    domain: &'d AllocationDomain,
    handles: [BoundDomain<'d>; 2],
}

impl Doors<'_> {
    fn alloc(&self, via: Via, l: AllocationLayout) -> Option<NonNull<u8>> {
        match via {
            Via::Domain => self.domain.try_allocate(l),
            Via::Handle(i) => self.handles[i].try_allocate(l),
        }
        .unwrap()
    }
    /// # Safety
    /// `p` is a live block of the domain with layout `l`.
    unsafe fn free(&self, via: Via, p: NonNull<u8>, l: AllocationLayout) {
        // SAFETY: forwarded.
        unsafe {
            match via {
                Via::Domain => self.domain.free(Some(p), l),
                Via::Handle(i) => self.handles[i].free(Some(p), l),
            }
        }
    }
    /// # Safety
    /// `*p` is a live block of the domain with layout `l`.
    unsafe fn resize(&self, via: Via, p: &mut Option<NonNull<u8>>, l: AllocationLayout, n: usize) {
        // SAFETY: forwarded.
        unsafe {
            match via {
                Via::Domain => self.domain.try_reallocate(p, l, n),
                Via::Handle(i) => self.handles[i].try_reallocate(p, l, n),
            }
        }
        .unwrap()
    }
}

proptest! {
    #![proptest_config(crate::support::proptest_config_unpersisted(256, 2))]

    #[test]
    fn handles_and_the_domain_charge_one_tally(ops in prop::collection::vec(op(), 1..80)) {
        let d = AllocationDomain::with_mode("bound/model", Backend::BUILD, CounterMode::Sharded)
            .unwrap();
        let doors = Doors { domain: &d, handles: [d.bind().unwrap(), d.bind().unwrap()] };
        let mut live: Vec<(NonNull<u8>, AllocationLayout)> = Vec::new();
        let mut m = Model::default();
        for op in ops {
            match op {
                Op::Alloc { size, via } => {
                    let l = AllocationLayout::new(size, 8).unwrap();
                    live.push((doors.alloc(via, l).unwrap(), l));
                    m.grow(size);
                    m.allocations += 1;
                    m.blocks += 1;
                }
                Op::Free { pick, via } if !live.is_empty() => {
                    let (p, l) = live.swap_remove(pick % live.len());
                    // SAFETY: a live block of `d` with its layout, freed once.
                    unsafe { doors.free(via, p, l) };
                    m.shrink(l.size());
                    m.frees += 1;
                    m.blocks -= 1;
                }
                Op::Resize { pick, size, via } if !live.is_empty() => {
                    let i = pick % live.len();
                    let (p, l) = live[i];
                    let mut q = Some(p);
                    // SAFETY: a live block of `d` with layout `l`; `q` replaces it.
                    unsafe { doors.resize(via, &mut q, l, size) };
                    if size == 0 {
                        // A resize to zero is a free.
                        live.swap_remove(i);
                        m.shrink(l.size());
                        m.frees += 1;
                        m.blocks -= 1;
                    } else {
                        live[i] = (q.unwrap(), l.with_size(size).unwrap());
                        if size != l.size() {
                            m.reallocations += 1;
                            if size > l.size() { m.grow(size - l.size()) } else { m.shrink(l.size() - size) }
                        }
                    }
                }
                _ => {}
            }
            m.check(d.usage());
        }
        for (p, l) in live.drain(..) {
            // SAFETY: a live block of `d` with its layout, freed once.
            unsafe { doors.free(Via::Handle(1), p, l) };
            m.shrink(l.size());
            m.frees += 1;
            m.blocks -= 1;
        }
        m.check(d.usage());
    }
}

/// A block and its layout, moved (never shared) between threads.
struct Block(NonNull<u8>, AllocationLayout);
// SAFETY: a `Block` owns its bytes exclusively; moving it moves that ownership.
unsafe impl Send for Block {}

#[test]
fn handles_on_threads_free_each_others_blocks() {
    let d = keep(
        AllocationDomain::with_mode("bound/threads", Backend::BUILD, CounterMode::Sharded).unwrap(),
    );
    let (threads, per) = if cfg!(miri) { (2, 4) } else { (4, 200) };
    let mut senders = Vec::new();
    let mut receivers = Vec::new();
    for _ in 0..threads {
        let (tx, rx) = mpsc::channel::<Block>();
        senders.push(tx);
        receivers.push(rx);
    }
    std::thread::scope(|s| {
        for (t, rx) in receivers.into_iter().enumerate() {
            let next = senders[(t + 1) % threads].clone();
            s.spawn(move || {
                // Tests run in parallel and share the process's slots: a thread that finds
                // none left uses the domain itself, which must charge the same.
                let bound = d.bind();
                for i in 0..per {
                    let l = AllocationLayout::new(8 + i % 64, 8).unwrap();
                    let p = match &bound {
                        Ok(b) => b.try_allocate(l),
                        Err(_) => d.try_allocate(l),
                    };
                    next.send(Block(p.unwrap().unwrap(), l)).unwrap();
                }
                drop(next);
                for b in rx.iter().take(per) {
                    // SAFETY: a block of `d` with its layout, handed over and freed once.
                    unsafe {
                        match &bound {
                            Ok(h) => h.free(Some(b.0), b.1),
                            Err(_) => d.free(Some(b.0), b.1),
                        }
                    }
                }
            });
        }
    });
    drop(senders);
    let u = d.usage();
    let n = (threads * per) as u64;
    let bytes: u64 = (0..per).map(|i| 8 + (i % 64) as u64).sum::<u64>() * threads as u64;
    assert_eq!((u.live_bytes, u.live_blocks), (0, 0), "{u:?}");
    assert_eq!((u.allocations, u.frees), (n, n));
    assert_eq!((u.allocated_bytes, u.freed_bytes), (bytes, bytes));
    assert!(u.valid);
}

#[test]
fn a_handle_is_an_allocator_api2_allocator() {
    let d = keep(
        AllocationDomain::with_mode("bound/adapter", Backend::BUILD, CounterMode::Sharded).unwrap(),
    );
    let b = d.bind().unwrap();
    let mut v: AVec<u64, &BoundDomain<'_>> = AVec::new_in(&b);
    v.extend(0..1000u64);
    assert_eq!(v.iter().sum::<u64>(), 999 * 1000 / 2);
    assert_eq!(d.usage().live_bytes, v.capacity() * 8);
    v.truncate(10);
    v.shrink_to_fit();
    assert_eq!(d.usage().live_bytes, 80, "shrink is one resize record");
    drop(v);
    let u = d.usage();
    assert_eq!((u.live_bytes, u.live_blocks), (0, 0));
    assert!(u.reallocations >= 1);
    assert!(u.valid);
}

#[test]
fn a_refused_request_through_a_handle_counts_one_failure() {
    let (d, _inj) = failing(2);
    let b = d.bind().unwrap();
    let l = AllocationLayout::new(32, 8).unwrap();
    let mut p = b.try_allocate(l).unwrap();
    assert!(b.try_allocate(l).is_err(), "the second request is refused");
    let u = d.usage();
    assert_eq!((u.live_bytes, u.live_blocks, u.failures), (32, 1, 1));
    // SAFETY: `p` is `d`'s block with layout `l`; the third request is granted.
    unsafe { b.try_reallocate(&mut p, l, 64) }.unwrap();
    // SAFETY: `p` is `d`'s block with layout `l` resized to 64.
    unsafe { b.free(p, l.with_size(64).unwrap()) };
    let u = d.usage();
    assert_eq!((u.live_bytes, u.live_blocks, u.failures), (0, 0, 1));
    assert_eq!((u.allocations, u.frees, u.reallocations), (1, 1, 1));
    assert!(u.valid);
}

#[test]
fn exact_domains_are_not_bound() {
    let d = domain("bound/exact", Backend::BUILD);
    assert!(
        d.bind().is_ok(),
        "standalone domains are sharded by default"
    );
    let e = keep(
        AllocationDomain::with_mode("bound/exact", Backend::BUILD, CounterMode::Exact).unwrap(),
    );
    assert_eq!(e.bind().err(), Some(BindError::ExactMode));
}
