//! Pending-destruction marks are set through `&EntityRegistry` while systems record commands,
//! possibly from several threads at once. The registry's real `meta` atomics (through the crate's
//! `sync` shim) must let exactly one recorder mark an entity, and readers must see either the
//! active or the pending state, never a torn or lost one.
#![cfg(loom)]

use allocator_api2::alloc::Global;
use loom::sync::Arc;
use loom::thread;
use ludus::identity::TokenSource;
use ludus::world::{CommandBuffer, CommandError, EntityRegistry, Rejection};
use ludus_loom_tests::model;

// SAFETY (every unsafe constructor call below): under loom there is no process-wide token
// source; each model iteration builds all of its registries and buffers from its one
// `TokenSource`, so their tokens are distinct.

#[test]
fn two_recorders_one_entity_exactly_one_marks() {
    model(|| {
        let tokens = Arc::new(TokenSource::new());
        // SAFETY: one token source per model (above).
        let mut reg =
            unsafe { EntityRegistry::try_with_capacity_and_tokens(4, Global, &tokens) }.unwrap();
        let e = reg.try_create().unwrap();
        let reg = Arc::new(reg);
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let reg = reg.clone();
                let tokens = tokens.clone();
                thread::spawn(move || {
                    let mut cmd =
                        // SAFETY: one token source per model (above).
            unsafe { CommandBuffer::try_with_capacity_and_tokens(1, 0, Global, &tokens) }.unwrap();
                    cmd.destroy(&*reg, e)
                })
            })
            .collect();
        let results: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        let ok = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(ok, 1, "{results:?}");
        assert!(results
            .iter()
            .any(|r| *r == Err(CommandError::Rejected(Rejection::Pending))));
        assert!(reg.is_alive(e) && !reg.is_active(e) && reg.is_pending(e));
    });
}

#[test]
fn recorders_on_distinct_entities_do_not_interfere() {
    model(|| {
        let tokens = Arc::new(TokenSource::new());
        // SAFETY: one token source per model (above).
        let mut reg =
            unsafe { EntityRegistry::try_with_capacity_and_tokens(4, Global, &tokens) }.unwrap();
        let a = reg.try_create().unwrap();
        let b = reg.try_create().unwrap();
        let reg = Arc::new(reg);
        let r2 = reg.clone();
        let t2 = tokens.clone();
        let t = thread::spawn(move || {
            let mut cmd = // SAFETY: one token source per model (above).
            unsafe { CommandBuffer::try_with_capacity_and_tokens(1, 0, Global, &t2) }.unwrap();
            cmd.destroy(&*r2, a).unwrap();
            // A reader on this thread sees its own mark, and b in either state.
            assert!(r2.is_pending(a));
            assert!(r2.is_alive(b));
        });
        let mut cmd = // SAFETY: one token source per model (above).
            unsafe { CommandBuffer::try_with_capacity_and_tokens(1, 0, Global, &tokens) }.unwrap();
        cmd.destroy(&*reg, b).unwrap();
        assert!(reg.is_alive(a));
        t.join().unwrap();
        assert!(reg.is_pending(a) && reg.is_pending(b));
    });
}
