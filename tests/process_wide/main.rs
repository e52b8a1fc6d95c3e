//! Tests that use up or count a process-wide resource, kept apart from the tests that draw on
//! it: the owner-token sequence (every registry draws a token, so a test counting tokens cannot
//! share a process with tests that create worlds) and the memory layer's thread slots (a test
//! holding every slot would make another test's `bind` fail). The thread-slot tests also run one
//! at a time ([`one_at_a_time`]): one of them needs a free slot while the others take them all.

use std::sync::{Mutex, MutexGuard};

#[path = "../support/mod.rs"]
mod support;

mod owner_tokens;
mod thread_slots;

/// Held for the whole of a test that takes thread slots; a failed test does not block the rest.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static SLOTS: Mutex<()> = Mutex::new(());
    SLOTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
