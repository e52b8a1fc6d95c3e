//! `DomainAllocator`: allocator-api2 containers and hashbrown maps are attributed to a domain
//! and reconcile to zero when dropped.

use allocator_api2::vec::Vec;
use ludus::memory::{AllocationDomain, Backend, DomainAllocator};

fn domain() -> &'static AllocationDomain {
    crate::support::domain("adapter", Backend::BUILD)
}

#[test]
fn vec_growing_and_dropping_reconciles_to_zero() {
    let d = domain();
    let mut v: Vec<u32, DomainAllocator> = Vec::new_in(d.allocator());
    let n = if cfg!(miri) { 300 } else { 10_000 };
    for i in 0..n {
        v.push(i);
        assert_eq!(d.usage().live_bytes, v.capacity() * 4);
        assert_eq!(d.usage().live_blocks, 1);
    }
    v.shrink_to_fit();
    assert_eq!(d.usage().live_bytes, n as usize * 4);
    drop(v);
    let u = d.usage();
    assert_eq!((u.live_bytes, u.live_blocks), (0, 0));
    assert_eq!(u.allocations, u.frees);
    assert_eq!(u.allocated_bytes, u.freed_bytes);
    assert!(u.high_water_bytes >= n as usize * 4);
    assert!(u.valid);
}

#[test]
fn boxes_and_hashbrown_maps_are_attributed() {
    let d = domain();
    let a = d.allocator();
    let b = a.try_new_box([7u64; 4]).unwrap();
    assert_eq!(d.usage().live_bytes, 32);
    let mut m: hashbrown::HashMap<u32, u64, hashbrown::DefaultHashBuilder, DomainAllocator> =
        hashbrown::HashMap::with_hasher_in(Default::default(), a);
    for i in 0..100 {
        m.insert(i, u64::from(i) * 2);
    }
    assert!(d.usage().live_bytes > 32);
    assert_eq!(m[&40], 80);
    drop(m);
    assert_eq!(d.usage().live_bytes, 32);
    assert_eq!(b[3], 7);
    drop(b);
    assert_eq!(d.usage().live_blocks, 0);
    // Zero-size boxes never touch the backend.
    let z = a.try_new_box(()).unwrap();
    drop(z);
    assert_eq!(d.usage().allocations, d.usage().frees);
}

#[test]
fn over_aligned_elements_and_alignment_changes_are_respected() {
    #[derive(Clone, Copy)]
    #[repr(align(256))]
    struct Wide(#[allow(dead_code)] u8);
    let d = domain();
    let mut v: Vec<Wide, DomainAllocator> = Vec::new_in(d.allocator());
    for i in 0..20 {
        v.push(Wide(i));
        assert_eq!(v.as_ptr().addr() % 256, 0);
    }
    drop(v);
    assert_eq!(d.usage().live_bytes, 0);
}

#[test]
fn failing_growth_leaves_the_vec_and_counters_intact() {
    let (d, inj) = crate::support::failing(0);
    let mut v: Vec<u8, DomainAllocator> = Vec::new_in(d.allocator());
    v.extend_from_slice(&[1, 2, 3]);
    let before = d.usage();
    inj.arm(1);
    assert!(v.try_reserve(1 << 16).is_err());
    assert_eq!(&v[..], &[1, 2, 3]);
    let after = d.usage();
    assert_eq!(after.failures, before.failures + 1);
    assert_eq!(
        (after.live_bytes, after.live_blocks),
        (before.live_bytes, before.live_blocks)
    );
    inj.arm(1);
    assert!(d.allocator().try_new_box(5u64).is_err());
    drop(v);
    assert_eq!(d.usage().live_bytes, 0);
}

#[test]
fn core_allocator_is_copy_send_sync_and_charges_core() {
    fn assert_traits<T: Copy + Clone + core::fmt::Debug + Send + Sync>() {}
    assert_traits::<DomainAllocator>();
    let a = DomainAllocator::core();
    assert!(core::ptr::eq(a.domain(), AllocationDomain::core()));
    assert_eq!(a, AllocationDomain::core().allocator());
    let before = AllocationDomain::core().usage().allocations;
    let b = a.try_new_box(1u128).unwrap();
    assert!(AllocationDomain::core().usage().allocations > before);
    drop(b);
}
