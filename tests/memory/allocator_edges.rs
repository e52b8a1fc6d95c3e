//! The allocator-api2 interface of a domain at its corners: zero sizes and dangling pointers
//! (no backend request, no record), huge sizes and alignments refused cleanly with the block
//! kept, and `grow_zeroed` as one resize record.

use core::alloc::Layout;
use core::ptr::NonNull;

use allocator_api2::alloc::Allocator;
use ludus::memory::{AllocationDomain, AllocationLayout, Backend, CounterMode, DomainAllocator};

use crate::support::{domain, failing_in, keep};

#[test]
fn zero_size_and_dangling_corners() {
    let (d, _inj) = failing_in(CounterMode::Exact, 0);
    let a = d.allocator();
    for align in [1usize, 8, 4096, 1 << 20] {
        let z = Layout::from_size_align(0, align).unwrap();
        let p = a.allocate(z).unwrap();
        assert_eq!(p.len(), 0);
        assert_eq!(p.cast::<u8>().as_ptr().addr() % align, 0);
        // SAFETY: zero-size block of `a`.
        unsafe {
            // grow zero -> zero at another alignment, then to a real block, back to zero.
            let q = a
                .grow(p.cast(), z, Layout::from_size_align(0, 2).unwrap())
                .unwrap();
            let r = a
                .grow_zeroed(
                    q.cast(),
                    Layout::from_size_align(0, 2).unwrap(),
                    Layout::from_size_align(10, align).unwrap(),
                )
                .unwrap();
            assert!(r.cast::<u8>().as_ptr().addr() % align == 0);
            let s = a
                .shrink(
                    r.cast(),
                    Layout::from_size_align(10, align).unwrap(),
                    Layout::from_size_align(0, align).unwrap(),
                )
                .unwrap();
            a.deallocate(s.cast(), Layout::from_size_align(0, align).unwrap());
            // A dangling pointer of a *different* value with size 0 is a no-op too.
            a.deallocate(NonNull::dangling(), Layout::from_size_align(0, 1).unwrap());
        }
    }
    let u = d.usage();
    assert_eq!(
        (u.live_bytes, u.live_blocks, u.allocations, u.frees),
        (0, 0, 4, 4)
    );
    // Zero-size boxes and vectors of ZSTs.
    let b = a.try_new_box(()).unwrap();
    drop(b);
    let mut v: allocator_api2::vec::Vec<(), DomainAllocator> = allocator_api2::vec::Vec::new_in(a);
    v.extend(core::iter::repeat_n((), 1000));
    drop(v);
    assert_eq!(d.usage().allocations, 4);
}

#[test]
#[cfg_attr(miri, ignore = "huge requests: Miri reports resource exhaustion")]
fn huge_requests_fail_cleanly() {
    let d = domain("edges/huge", Backend::System);
    let a = d.allocator();
    let max = isize::MAX as usize;
    for (size, align) in [
        (max, 1),
        (max - 4095, 4096),
        (max / 2, 1 << 30),
        (1 << 62, 8),
    ] {
        let l = Layout::from_size_align(size, align).unwrap();
        assert!(a.allocate(l).is_err(), "{size} {align}");
        let al = AllocationLayout::new(size, align).unwrap();
        assert!(d.try_allocate(al).is_err());
    }
    let mut p = d
        .try_allocate(AllocationLayout::new(16, 8).unwrap())
        .unwrap();
    // SAFETY: `p` is d's block with layout (16, 8).
    unsafe {
        assert!(d
            .try_reallocate(&mut p, AllocationLayout::new(16, 8).unwrap(), max)
            .is_err());
        assert!(d
            .try_reallocate(&mut p, AllocationLayout::new(16, 8).unwrap(), max - 7)
            .is_err());
        d.free(p, AllocationLayout::new(16, 8).unwrap());
    }
    let u = d.usage();
    assert_eq!((u.live_bytes, u.live_blocks, u.failures), (0, 0, 9));
    assert!(u.valid);
    // grow through the adapter to a huge size
    let l = Layout::from_size_align(16, 8).unwrap();
    let p = a.allocate(l).unwrap();
    // SAFETY: p is a's block with l.
    unsafe {
        assert!(a
            .grow(p.cast(), l, Layout::from_size_align(max - 7, 8).unwrap())
            .is_err());
        assert!(a
            .grow(
                p.cast(),
                l,
                Layout::from_size_align(max - 4095, 4096).unwrap()
            )
            .is_err());
        a.deallocate(p.cast(), l);
    }
    let u = d.usage();
    assert_eq!((u.live_bytes, u.live_blocks, u.failures), (0, 0, 11));
}

#[test]
#[cfg_attr(miri, ignore = "huge alignments: Miri reports resource exhaustion")]
fn huge_alignments_fail_cleanly_and_keep_the_block() {
    let d = domain("edges/huge-align", Backend::System);
    let a = d.allocator();
    for shift in [40u32, 50, 62] {
        let l = Layout::from_size_align(1, 1 << shift).unwrap();
        assert!(a.allocate(l).is_err());
    }
    let l = Layout::from_size_align(8, 8).unwrap();
    let p = a.allocate(l).unwrap().cast::<u8>();
    // SAFETY: p is a's block with l.
    unsafe {
        p.as_ptr().write(42);
        assert!(a
            .grow(p, l, Layout::from_size_align(16, 1 << 50).unwrap())
            .is_err());
        assert!(a
            .shrink(p, l, Layout::from_size_align(4, 1 << 50).unwrap())
            .is_err());
        assert_eq!(p.as_ptr().read(), 42);
        a.deallocate(p, l);
    }
    let u = d.usage();
    assert_eq!((u.live_bytes, u.live_blocks, u.failures), (0, 0, 5));
    assert!(u.valid);
}

/// `grow_zeroed` at equal alignment is one resize record and charges no transient old + new
/// overlap to the high-water mark (allocator-api2's default implementation allocates, copies
/// and frees: two records and a peak of 3 000 here).
#[test]
fn grow_zeroed_is_one_resize_record() {
    let d = keep(
        AllocationDomain::with_mode("edges/grow-zeroed", Backend::System, CounterMode::Exact)
            .unwrap(),
    );
    let a = d.allocator();
    let old = Layout::from_size_align(1000, 8).unwrap();
    let new = Layout::from_size_align(2000, 8).unwrap();
    let p = a.allocate(old).unwrap().cast::<u8>();
    // SAFETY: p is a's block with `old`; new.size() >= old.size().
    let q = unsafe { a.grow_zeroed(p, old, new) }.unwrap().cast::<u8>();
    let u = d.usage();
    // SAFETY: q is a's block with `new`.
    unsafe { a.deallocate(q, new) };
    assert_eq!(
        (u.allocations, u.frees, u.reallocations, u.high_water_bytes),
        (1, 0, 1, 2000),
        "{u:?}"
    );
}
