//! The byte contract of an allocation domain, one test per rule (storage and alignment,
//! overflow and zero sizes, null and cross-thread frees charged to the origin, failures counted
//! once without retry, resizes from null, to zero, preserving the prefix, failing without
//! change), run against every backend this build has (system always; mimalloc with
//! `--features mimalloc`).

use core::ptr::NonNull;

use ludus::memory::{
    AllocFailed, AllocationDomain, AllocationLayout, Backend, LayoutError, MemoryUsage, ResizeError,
};

use crate::support::failing;

/// Every general backend of this build.
fn backends() -> Vec<Backend> {
    #[allow(unused_mut)]
    let mut v = vec![Backend::System];
    #[cfg(feature = "mimalloc")]
    v.push(Backend::Mimalloc);
    v
}

fn domain(backend: Backend) -> &'static AllocationDomain {
    crate::support::domain("contract", backend)
}

/// Ownership of a raw block moved to another thread.
struct SendBlock(Option<NonNull<u8>>);
// SAFETY: the block is plain bytes owned by exactly one thread at a time (moved, not shared).
unsafe impl Send for SendBlock {}

impl SendBlock {
    /// Moves the whole wrapper into a closure (edition 2021 would capture only the field).
    fn take(self) -> Option<NonNull<u8>> {
        self.0
    }
}

fn layout(size: usize, align: usize) -> AllocationLayout {
    AllocationLayout::new(size, align).unwrap()
}

fn fill(p: NonNull<u8>, len: usize, seed: u8) {
    for i in 0..len {
        // SAFETY: `p` is a live block of at least `len` bytes.
        unsafe { p.as_ptr().add(i).write(seed.wrapping_add(i as u8)) };
    }
}

fn holds(p: NonNull<u8>, len: usize, seed: u8) -> bool {
    // SAFETY: `p` is a live block of at least `len` initialized bytes.
    (0..len).all(|i| unsafe { p.as_ptr().add(i).read() } == seed.wrapping_add(i as u8))
}

#[test]
fn valid_nonzero_request_gives_writable_aligned_storage_and_counts_requested_size() {
    for b in backends() {
        let d = domain(b);
        let l = layout(100, 8);
        let p = d
            .try_allocate(l)
            .unwrap()
            .expect("nonzero request yields a block");
        assert_eq!(p.as_ptr().addr() % 8, 0);
        fill(p, 100, 3);
        assert!(holds(p, 100, 3));
        let u = d.usage();
        assert_eq!(
            (
                u.live_bytes,
                u.live_blocks,
                u.allocations,
                u.allocated_bytes
            ),
            (100, 1, 1, 100)
        );
        // SAFETY: `p` came from `d` with `l`.
        unsafe { d.free(Some(p), l) };
        assert_eq!(d.usage().live_bytes, 0);
    }
}

#[test]
fn alignment_is_a_nonzero_power_of_two_and_extended_alignments_are_honoured() {
    assert_eq!(
        AllocationLayout::new(8, 0),
        Err(LayoutError::BadAlignment { align: 0 })
    );
    assert_eq!(
        AllocationLayout::new(8, 24),
        Err(LayoutError::BadAlignment { align: 24 })
    );
    for b in backends() {
        let d = domain(b);
        for shift in 0..=12 {
            let align = 1usize << shift;
            for size in [1, align, 3 * align + 1] {
                let l = layout(size, align);
                let p = d.try_allocate(l).unwrap().unwrap();
                assert_eq!(
                    p.as_ptr().addr() % align,
                    0,
                    "{} size {size} align {align}",
                    b.name()
                );
                fill(p, size, 1);
                // SAFETY: `p` came from `d` with `l`.
                unsafe { d.free(Some(p), l) };
            }
        }
        assert_eq!(d.usage().live_blocks, 0);
    }
}

#[test]
fn arithmetic_overflow_is_rejected_before_the_backend() {
    assert!(AllocationLayout::new(isize::MAX as usize, 2).is_err());
    assert!(AllocationLayout::array::<[u64; 4]>(usize::MAX / 16).is_err());
    let (d, inj) = failing(0);
    let l = layout(16, 16);
    let mut p = d.try_allocate(l).unwrap();
    let before = d.usage();
    let requests = inj.requests();
    // SAFETY: `p` came from `d` with `l`.
    let r = unsafe { d.try_reallocate(&mut p, l, usize::MAX - 8) };
    assert!(matches!(
        r,
        Err(ResizeError::Layout(LayoutError::SizeOverflow { .. }))
    ));
    assert_eq!(
        inj.requests(),
        requests,
        "no backend call for an invalid layout"
    );
    assert_eq!(d.usage(), before);
    // SAFETY: `p` is still the block of `d` with `l`.
    unsafe { d.free(p, l) };
}

#[test]
fn zero_size_is_an_empty_success_without_counter_change() {
    for b in backends() {
        let d = domain(b);
        for align in [1, 8, 4096] {
            assert_eq!(d.try_allocate(layout(0, align)), Ok(None));
        }
        assert_eq!(
            d.usage(),
            MemoryUsage {
                valid: true,
                ..Default::default()
            }
        );
    }
    // A zero-size request never reaches the backend, so even an armed injector is not consulted.
    let (d, inj) = failing(1);
    assert_eq!(d.try_allocate(layout(0, 8)), Ok(None));
    assert_eq!(inj.requests(), 0);
}

#[test]
fn null_free_is_a_noop() {
    for b in backends() {
        let d = domain(b);
        // SAFETY: freeing `None` is always allowed.
        unsafe { d.free(None, layout(64, 8)) };
        assert_eq!(
            d.usage(),
            MemoryUsage {
                valid: true,
                ..Default::default()
            }
        );
    }
}

#[test]
fn free_with_original_domain_and_layout_charges_the_origin_exactly() {
    for b in backends() {
        let (a, other) = (domain(b), domain(b));
        let l = layout(48, 16);
        let p = a.try_allocate(l).unwrap();
        // The block is freed on another thread: the origin domain is still charged.
        let sent = SendBlock(p);
        std::thread::spawn(move || {
            let p = sent.take();
            // SAFETY: `p` came from `a` with `l` and is not used elsewhere.
            unsafe { a.free(p, l) }
        })
        .join()
        .unwrap();
        let u = a.usage();
        assert_eq!(
            (u.live_bytes, u.live_blocks, u.frees, u.freed_bytes),
            (0, 0, 1, 48)
        );
        assert_eq!(other.usage().frees, 0);
    }
}

#[test]
fn failed_allocation_reports_and_counts_one_failure_without_retry() {
    let (d, inj) = failing(1);
    let l = layout(32, 8);
    assert_eq!(d.try_allocate(l), Err(AllocFailed { size: 32, align: 8 }));
    assert_eq!(inj.requests(), 1, "no retry loop");
    let u = d.usage();
    assert_eq!(
        (u.failures, u.allocations, u.live_bytes, u.live_blocks),
        (1, 0, 0, 0)
    );
    // The next request succeeds: failure is a status, not a state.
    let p = d.try_allocate(l).unwrap();
    // SAFETY: `p` came from `d` with `l`.
    unsafe { d.free(p, l) };
}

#[test]
fn resize_of_null_allocates() {
    for b in backends() {
        let d = domain(b);
        let mut p = None;
        // SAFETY: `None` with old size 0.
        unsafe { d.try_reallocate(&mut p, layout(0, 32), 40) }.unwrap();
        let q = p.expect("allocated");
        assert_eq!(q.as_ptr().addr() % 32, 0);
        assert_eq!((d.usage().allocations, d.usage().live_bytes), (1, 40));
        // A null block with a nonzero old size is refused, unchanged.
        let mut n = None;
        // SAFETY: `None` is never dereferenced.
        let r = unsafe { d.try_reallocate(&mut n, layout(8, 8), 16) };
        assert_eq!(r, Err(ResizeError::NullWithSize { old_size: 8 }));
        assert!(n.is_none());
        // SAFETY: `p` is `d`'s block of 40 bytes at 32.
        unsafe { d.free(p, layout(40, 32)) };
    }
}

#[test]
fn resize_to_zero_frees_and_nulls() {
    for b in backends() {
        let d = domain(b);
        let l = layout(24, 8);
        let mut p = d.try_allocate(l).unwrap();
        // SAFETY: `p` is `d`'s block with `l`.
        unsafe { d.try_reallocate(&mut p, l, 0) }.unwrap();
        assert!(p.is_none());
        let u = d.usage();
        assert_eq!(
            (u.live_bytes, u.live_blocks, u.frees, u.freed_bytes),
            (0, 0, 1, 24)
        );
    }
}

#[test]
fn resize_preserves_prefix_alignment_and_is_one_logical_record() {
    for b in backends() {
        let d = domain(b);
        let l = layout(64, 64);
        let mut p = d.try_allocate(l).unwrap();
        fill(p.unwrap(), 64, 9);
        // Grow: one record, both-block overlap is not double counted at completion.
        // SAFETY: `p` is `d`'s block with `l`.
        unsafe { d.try_reallocate(&mut p, l, 4096) }.unwrap();
        let q = p.unwrap();
        assert_eq!(q.as_ptr().addr() % 64, 0);
        assert!(holds(q, 64, 9));
        let u = d.usage();
        assert_eq!((u.allocations, u.frees, u.reallocations), (1, 0, 1));
        assert_eq!(
            (u.live_bytes, u.live_blocks, u.high_water_bytes),
            (4096, 1, 4096)
        );
        // Shrink keeps the first bytes.
        // SAFETY: `p` is `d`'s block of 4096 at 64.
        unsafe { d.try_reallocate(&mut p, layout(4096, 64), 16) }.unwrap();
        assert!(holds(p.unwrap(), 16, 9));
        let u = d.usage();
        assert_eq!(
            (
                u.live_bytes,
                u.reallocations,
                u.allocated_bytes,
                u.freed_bytes
            ),
            (16, 2, 4096, 4080)
        );
        // Equal size: unchanged, no record.
        let same = p;
        // SAFETY: `p` is `d`'s block of 16 at 64.
        unsafe { d.try_reallocate(&mut p, layout(16, 64), 16) }.unwrap();
        assert_eq!(p, same);
        assert_eq!(d.usage().reallocations, 2);
        // SAFETY: as above.
        unsafe { d.free(p, layout(16, 64)) };
        assert_eq!(d.usage().live_bytes, 0);
    }
}

#[test]
fn failed_resize_leaves_pointer_contents_and_live_counters_unchanged() {
    let (d, inj) = failing(0);
    let l = layout(128, 16);
    let mut p = d.try_allocate(l).unwrap();
    fill(p.unwrap(), 128, 5);
    let before = d.usage();
    let old = p;
    inj.arm(1);
    // SAFETY: `p` is `d`'s block with `l`.
    let r = unsafe { d.try_reallocate(&mut p, l, 1 << 20) };
    assert_eq!(
        r,
        Err(ResizeError::Exhausted(AllocFailed {
            size: 1 << 20,
            align: 16
        }))
    );
    assert_eq!(p, old);
    assert!(holds(p.unwrap(), 128, 5));
    let after = d.usage();
    assert_eq!(
        after,
        MemoryUsage {
            failures: before.failures + 1,
            ..before
        }
    );
    // SAFETY: `p` is still `d`'s block with `l`.
    unsafe { d.free(p, l) };
}

#[test]
fn typed_objects_go_through_container_relocation_not_byte_resize() {
    // A Vec of owning Strings grows through the adapter; the container relocates elements.
    for b in backends() {
        let d = domain(b);
        let mut v: allocator_api2::vec::Vec<String, _> =
            allocator_api2::vec::Vec::new_in(d.allocator());
        for i in 0..100 {
            v.push(i.to_string());
        }
        assert!(v.iter().enumerate().all(|(i, s)| *s == i.to_string()));
        drop(v);
        let u = d.usage();
        assert_eq!((u.live_bytes, u.live_blocks), (0, 0));
        assert!(u.reallocations > 0 && u.valid);
    }
}
