//! Concurrent domain registration on the crate's real `DomainRegistry`: the same name yields
//! the same domain; of two names sharing a tag exactly one wins; a full registry refuses.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use ludus::memory::{DomainRegistry, RegisterError};

/// Two distinct names with equal FNV-1a tags.
const COLLIDING: (&str, &str) = ("c8906", "cc10a0");

#[test]
fn same_name_registers_one_domain() {
    loom::model(|| {
        let r = Arc::new(DomainRegistry::<2>::new());
        let h = {
            let r = r.clone();
            thread::spawn(move || r.register("render").unwrap() as *const _ as usize)
        };
        let mine = r.register("render").unwrap() as *const _ as usize;
        assert_eq!(h.join().unwrap(), mine);
        assert_eq!(r.domains().count(), 2);
    });
}

#[test]
fn colliding_names_one_rejected() {
    loom::model(|| {
        let r = Arc::new(DomainRegistry::<2>::new());
        let h = {
            let r = r.clone();
            thread::spawn(move || r.register(COLLIDING.1).map(|d| d.name().len()))
        };
        let mine = r.register(COLLIDING.0).map(|d| d.name().len());
        let theirs = h.join().unwrap();
        assert!(mine.is_ok() != theirs.is_ok(), "{mine:?} {theirs:?}");
        for e in [mine, theirs].into_iter().filter_map(Result::err) {
            assert!(matches!(e, RegisterError::TagCollision { .. }));
        }
        assert_eq!(r.domains().count(), 2);
    });
}

#[test]
fn full_registry_refuses_the_late_name() {
    loom::model(|| {
        let r = Arc::new(DomainRegistry::<1>::new());
        let h = {
            let r = r.clone();
            thread::spawn(move || r.register("a").is_ok())
        };
        let mine = r.register("b");
        let theirs = h.join().unwrap();
        assert!(mine.is_ok() != theirs);
        if let Err(e) = mine {
            assert_eq!(e, RegisterError::RegistryFull { capacity: 1 });
        }
        assert_eq!(r.domains().count(), 2);
    });
}
