//! Process registry, near-limit counters and the gauges export.

use ludus::memory::{
    domain_tag, gauges_json, AllocationDomain, AllocationLayout, Backend, DomainRegistry,
    MemoryUsage, RegisterError, CORE_DOMAIN_NAME,
};

#[test]
fn core_needs_no_registration_and_registering_is_idempotent() {
    let core = AllocationDomain::core();
    assert_eq!(core.name(), CORE_DOMAIN_NAME);
    assert_eq!(core.tag(), domain_tag("core"));
    assert_eq!(core.backend().name(), Backend::BUILD.name());
    let a = AllocationDomain::register("tests/render").unwrap();
    let b = AllocationDomain::register("tests/render").unwrap();
    assert!(core::ptr::eq(a, b));
    assert!(AllocationDomain::all().any(|d| core::ptr::eq(d, a)));
    assert_eq!(
        AllocationDomain::register("bad name").unwrap_err(),
        RegisterError::BadCharacter { index: 3 }
    );
}

#[test]
fn colliding_names_are_rejected_by_the_process_registry() {
    // "c8906" and "cc10a0" share an FNV-1a tag.
    assert_eq!(domain_tag("c8906"), domain_tag("cc10a0"));
    AllocationDomain::register("c8906").unwrap();
    assert_eq!(
        AllocationDomain::register("cc10a0").unwrap_err(),
        RegisterError::TagCollision {
            tag: domain_tag("c8906")
        }
    );
}

#[test]
fn registered_domains_are_shared_across_threads() {
    let hs: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(|| {
                AllocationDomain::register("tests/shared").unwrap() as *const _ as usize
            })
        })
        .collect();
    let addrs: Vec<usize> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(addrs.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn full_registry_keeps_existing_names() {
    let r = DomainRegistry::<3>::new();
    for n in ["x", "y", "z"] {
        r.register(n).unwrap();
    }
    assert_eq!(
        r.register("w").unwrap_err(),
        RegisterError::RegistryFull { capacity: 3 }
    );
    assert_eq!(r.register("y").unwrap().name(), "y");
    assert_eq!(
        r.domains().map(|d| d.name()).collect::<Vec<_>>(),
        ["core", "x", "y", "z"]
    );
}

#[test]
fn near_limit_counters_turn_invalid_and_stay_invalid() {
    let start = MemoryUsage {
        live_bytes: usize::MAX - 10,
        live_blocks: 1,
        high_water_bytes: usize::MAX - 10,
        allocations: 1,
        allocated_bytes: u64::MAX - 10,
        valid: true,
        ..Default::default()
    };
    let d = AllocationDomain::with_counters("near", Backend::BUILD, start).unwrap();
    let l = AllocationLayout::new(8, 8).unwrap();
    let p = d.try_allocate(l).unwrap();
    assert!(d.usage().valid, "within range");
    let q = d.try_allocate(l).unwrap();
    assert!(!d.usage().valid, "live bytes wrapped");
    // SAFETY: both blocks came from `d` with `l`.
    unsafe {
        d.free(q, l);
        d.free(p, l);
    }
    assert!(!d.usage().valid, "sticky");
}

#[test]
fn gauges_export_every_domain_with_validity() {
    let d = AllocationDomain::register("tests/gauges").unwrap();
    let l = AllocationLayout::new(64, 8).unwrap();
    let p = d.try_allocate(l).unwrap();
    let json: serde_json::Value = serde_json::from_str(&gauges_json()).unwrap();
    let domains = json["domains"].as_array().unwrap();
    assert_eq!(domains[0]["name"], "core");
    let g = domains
        .iter()
        .find(|x| x["name"] == "tests/gauges")
        .unwrap();
    assert_eq!(g["live_bytes"], 64);
    assert_eq!(g["live_blocks"], 1);
    assert_eq!(g["valid"], true);
    assert_eq!(g["counter_mode"], "sharded");
    assert_eq!(g["tag"], domain_tag("tests/gauges"));
    assert_eq!(g["backend"], Backend::BUILD.name());
    // SAFETY: `p` came from `d` with `l`.
    unsafe { d.free(p, l) };
}
