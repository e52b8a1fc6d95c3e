//! A world or command buffer whose init fails half way (at every allocation of the sequence)
//! consumes no owner token: the next token drawn is the one after the token drawn just before.
//! No other test of this binary creates a registry, so nothing else draws from the process-wide
//! token source meanwhile.

use allocator_api2::alloc::{AllocError, Allocator, Global, Layout};
use core::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ludus::identity::issue_owner_token;
use ludus::world::{CommandBuffer, InitError};

use crate::support::{Position, Velocity};

/// Grants the first `budget` allocations, refuses the rest.
#[derive(Clone)]
struct FailAfter {
    budget: Arc<AtomicUsize>,
}

// SAFETY: granted blocks come from `Global` with the caller's layout and go back to it.
unsafe impl Allocator for FailAfter {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let granted = self
            .budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| b.checked_sub(1))
            .is_ok();
        if granted {
            Global.allocate(layout)
        } else {
            Err(AllocError)
        }
    }
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: `ptr` was allocated by `Global` with `layout` (see `allocate`).
        unsafe { Global.deallocate(ptr, layout) }
    }
}

ludus::world! {
    struct Game { position: Position, velocity: Velocity }
}

#[test]
fn failed_world_and_buffer_inits_consume_no_token() {
    // Registry: 3 arrays; each pool: 4 arrays (sparse, keys, values, membership bits). Fail at
    // every point of the sequence.
    for budget in 0..11 {
        let before = issue_owner_token().unwrap();
        let alloc = FailAfter {
            budget: Arc::new(AtomicUsize::new(budget)),
        };
        assert_eq!(
            Game::try_new_in(16, alloc).err(),
            Some(InitError::Allocation),
            "budget {budget}"
        );
        let after = issue_owner_token().unwrap();
        assert_eq!(after, before + 1, "budget {budget}: a token was consumed");
    }
    for budget in 0..3 {
        let before = issue_owner_token().unwrap();
        let alloc = FailAfter {
            budget: Arc::new(AtomicUsize::new(budget)),
        };
        assert_eq!(
            CommandBuffer::try_with_capacity_in(4, 64, alloc).err(),
            Some(InitError::Allocation)
        );
        assert_eq!(issue_owner_token().unwrap(), before + 1);
    }
    let alloc = FailAfter {
        budget: Arc::new(AtomicUsize::new(11)),
    };
    let g = Game::try_new_in(16, alloc).unwrap();
    assert!(g.registry.owner() > 0);
}
