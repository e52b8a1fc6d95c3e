//! Registry contracts: validation order, foreign owners, retirement, exhaustion, phases.

use allocator_api2::alloc::{AllocError, Allocator, Global, Layout};
use core::ptr::NonNull;
use ludus::identity::{TokenSource, FIRST_GENERATION, TERMINAL_GENERATION};
use ludus::world::{EntityRegistry, InitError, Rejection, WorldError};
use ludus::EntityId;

/// An allocator that refuses every request.
#[derive(Clone, Copy)]
struct Refusing;

// SAFETY: `allocate` never returns memory, so there is nothing to deallocate; `deallocate`
// is unreachable through a block this allocator handed out.
unsafe impl Allocator for Refusing {
    fn allocate(&self, _: Layout) -> Result<NonNull<[u8]>, AllocError> {
        Err(AllocError)
    }
    unsafe fn deallocate(&self, _: NonNull<u8>, _: Layout) {}
}

#[test]
fn create_validate_release_reuse_lifo() {
    let mut reg = EntityRegistry::try_with_capacity(4).unwrap();
    let a = reg.try_create().unwrap();
    let b = reg.try_create().unwrap();
    assert_eq!((a.slot(), a.generation()), (0, FIRST_GENERATION));
    assert_eq!(b.slot(), 1);
    assert_eq!(a.owner(), reg.owner());
    assert!(reg.is_alive(a) && reg.is_active(a));
    assert_eq!(reg.creation_sequence(a), Some(1));
    assert_eq!(reg.creation_sequence(b), Some(2));
    reg.try_release(a).unwrap();
    reg.try_release(b).unwrap();
    assert!(!reg.is_alive(a));
    assert_eq!(
        reg.try_release(a),
        Err(WorldError::Rejected(Rejection::Free))
    );
    // LIFO: b's slot comes back first, at the next generation.
    let c = reg.try_create().unwrap();
    assert_eq!((c.slot(), c.generation()), (1, 2));
    assert_eq!(reg.diagnose(b), Err(Rejection::Stale));
    assert!(!reg.is_alive(b));
    assert_eq!(reg.len(), 1);
    assert_eq!(reg.structural_revision(), 5);
}

#[test]
fn foreign_handle_with_same_slot_and_generation_is_rejected() {
    let mut r1 = EntityRegistry::try_with_capacity(2).unwrap();
    let mut r2 = EntityRegistry::try_with_capacity(2).unwrap();
    let e1 = r1.try_create().unwrap();
    let e2 = r2.try_create().unwrap();
    assert_eq!((e1.slot(), e1.generation()), (e2.slot(), e2.generation()));
    assert_ne!(e1.owner(), e2.owner());
    assert!(!r2.is_alive(e1) && !r1.is_alive(e2));
    assert_eq!(r2.diagnose(e1), Err(Rejection::ForeignOwner));
    assert_eq!(
        r2.try_release(e1),
        Err(WorldError::Rejected(Rejection::ForeignOwner))
    );
    assert!(r2.is_alive(e2), "failed release changed nothing");
}

#[test]
fn diagnose_reports_each_reason() {
    let mut reg = EntityRegistry::try_with_capacity(3).unwrap();
    let owner = reg.owner();
    let live = reg.try_create().unwrap();
    assert_eq!(reg.diagnose(live), Ok(()));
    assert_eq!(reg.diagnose(EntityId::NULL), Err(Rejection::Null));
    assert_eq!(
        reg.diagnose(EntityId::from_raw_parts(owner + 1000, 0, 1)),
        Err(Rejection::ForeignOwner)
    );
    assert_eq!(
        reg.diagnose(EntityId::from_raw_parts(0, 0, 1)),
        Err(Rejection::ForeignOwner)
    );
    assert_eq!(
        reg.diagnose(EntityId::from_raw_parts(owner, 3, 1)),
        Err(Rejection::OutOfRange)
    );
    assert_eq!(
        reg.diagnose(EntityId::from_raw_parts(owner, 2, 1)),
        Err(Rejection::Free)
    );
    assert_eq!(
        reg.diagnose(EntityId::from_raw_parts(owner, 0, 2)),
        Err(Rejection::Stale)
    );
    assert_eq!(
        reg.diagnose(EntityId::from_raw_parts(owner, 0, 0)),
        Err(Rejection::Stale)
    );
    // Pending: alive but not active.
    let mut cmd = ludus::CommandBuffer::try_with_capacity(1, 0).unwrap();
    cmd.destroy(&reg, live).unwrap();
    assert!(reg.is_alive(live) && !reg.is_active(live) && reg.is_pending(live));
    assert_eq!(reg.diagnose(live), Err(Rejection::Pending));
    // Retired.
    assert!(reg.test_hook_advance_free_generation(1, TERMINAL_GENERATION));
    let last = reg.try_create().unwrap();
    reg.try_release(last).unwrap();
    assert_eq!(reg.diagnose(last), Err(Rejection::Retired));
}

#[test]
fn terminal_generation_retires_the_slot_for_good() {
    let mut reg = EntityRegistry::try_with_capacity(2).unwrap();
    assert!(reg.test_hook_advance_free_generation(0, TERMINAL_GENERATION - 1));
    let a = reg.try_create().unwrap();
    assert_eq!(a.generation(), TERMINAL_GENERATION - 1);
    reg.try_release(a).unwrap();
    let b = reg.try_create().unwrap();
    assert_eq!((b.slot(), b.generation()), (0, TERMINAL_GENERATION));
    reg.try_release(b).unwrap();
    assert_eq!(reg.retired(), 1);
    assert_eq!(reg.available(), 1, "a retired slot counts against capacity");
    let c = reg.try_create().unwrap();
    assert_eq!(c.slot(), 1, "the retired slot is never reused");
    assert!(matches!(
        reg.try_create(),
        Err(WorldError::CapacityExhausted { .. })
    ));
    assert!(!reg.is_alive(b) && !reg.is_alive(a));
    assert!(
        !reg.test_hook_advance_free_generation(0, 5),
        "retired slot is not free"
    );
}

#[test]
fn capacity_exhaustion_is_typed_and_changes_nothing() {
    let mut reg = EntityRegistry::try_with_capacity(2).unwrap();
    let mut out = [EntityId::NULL; 3];
    assert!(matches!(
        reg.try_create_batch(&mut out),
        Err(WorldError::CapacityExhausted { .. })
    ));
    assert_eq!(out, [EntityId::NULL; 3], "output untouched");
    assert_eq!(
        (reg.len(), reg.structural_revision(), reg.last_sequence()),
        (0, 0, 0)
    );
    let mut two = [EntityId::NULL; 2];
    reg.try_create_batch(&mut two).unwrap();
    assert!(two.iter().all(|e| reg.is_active(*e)));
    assert!(matches!(
        reg.try_create(),
        Err(WorldError::CapacityExhausted { .. })
    ));
    let mut zero = EntityRegistry::try_with_capacity(0).unwrap();
    assert!(matches!(
        zero.try_create(),
        Err(WorldError::CapacityExhausted { .. })
    ));
}

#[test]
fn sequence_and_revision_exhaustion() {
    let mut reg = EntityRegistry::try_with_capacity(4).unwrap();
    assert!(reg.test_hook_advance_counters(u64::MAX - 1, 0));
    let e = reg.try_create().unwrap();
    assert_eq!(reg.creation_sequence(e), Some(u64::MAX));
    assert_eq!(reg.try_create(), Err(WorldError::SequenceExhausted));
    assert_eq!(reg.len(), 1);

    let mut reg = EntityRegistry::try_with_capacity(4).unwrap();
    assert!(reg.test_hook_advance_counters(0, u64::MAX - 1));
    let e = reg.try_create().unwrap();
    assert_eq!(reg.structural_revision(), u64::MAX);
    assert_eq!(reg.try_create(), Err(WorldError::RevisionExhausted));
    assert_eq!(reg.try_release(e), Err(WorldError::RevisionExhausted));
    assert!(reg.is_alive(e));
    let mut batch = [EntityId::NULL; 2];
    assert!(reg.test_hook_advance_counters(10, u64::MAX));
    assert_eq!(
        reg.try_create_batch(&mut batch),
        Err(WorldError::RevisionExhausted)
    );
    assert_eq!(reg.len(), 1);
}

#[test]
fn structural_phase_refuses_create_and_release() {
    let mut reg = EntityRegistry::try_with_capacity(2).unwrap();
    let e = reg.try_create().unwrap();
    reg.set_structural_phase(false);
    assert_eq!(reg.try_create(), Err(WorldError::InvalidPhase));
    assert_eq!(reg.try_release(e), Err(WorldError::InvalidPhase));
    assert!(reg.is_alive(e));
    reg.set_structural_phase(true);
    reg.try_release(e).unwrap();
}

/// A registry from a token range of its own (far above anything the process-wide source
/// reaches in a test run), as the unsafe constructor's contract asks.
fn private_tokens(last: u64, limit: u64) -> TokenSource {
    TokenSource::starting_after(u64::MAX - 100 + last, u64::MAX - 100 + limit)
}

#[test]
fn failed_init_consumes_no_token() {
    let tokens = private_tokens(0, 10);
    // SAFETY: `tokens` issues from a range no other registry of the process uses.
    let refused = unsafe { EntityRegistry::try_with_capacity_and_tokens(8, Refusing, &tokens) };
    assert_eq!(refused.unwrap_err(), InitError::Allocation);
    assert_eq!(tokens.last_issued(), u64::MAX - 100);
    // SAFETY: as above.
    let too_large =
        unsafe { EntityRegistry::try_with_capacity_and_tokens(usize::MAX, Global, &tokens) };
    assert!(matches!(too_large, Err(InitError::CapacityTooLarge { .. })));
    assert_eq!(tokens.last_issued(), u64::MAX - 100);
    // SAFETY: as above.
    let reg = unsafe { EntityRegistry::try_with_capacity_and_tokens(8, Global, &tokens) };
    assert_eq!(reg.unwrap().owner(), u64::MAX - 99);
}

#[test]
fn token_exhaustion_is_an_init_error() {
    let tokens = private_tokens(5, 5);
    // SAFETY: an exhausted private source issues nothing.
    let got = unsafe { EntityRegistry::try_with_capacity_and_tokens(1, Global, &tokens) };
    assert_eq!(got.unwrap_err(), InitError::IdentityExhausted);
}

#[test]
fn test_hooks_never_rewind() {
    let mut reg = EntityRegistry::try_with_capacity(4).unwrap();
    let e = reg.try_create().unwrap();
    let (seq, rev) = (reg.last_sequence(), reg.structural_revision());
    assert!(
        !reg.test_hook_advance_counters(seq - 1, rev),
        "sequence rewind refused"
    );
    assert!(
        !reg.test_hook_advance_counters(seq, rev - 1),
        "revision rewind refused"
    );
    assert_eq!((reg.last_sequence(), reg.structural_revision()), (seq, rev));
    reg.try_release(e).unwrap();
    // Slot 0 is free at generation 2: advancing to 2 or below would revive `e`'s generation.
    assert!(!reg.test_hook_advance_free_generation(0, 1));
    assert!(!reg.test_hook_advance_free_generation(0, 2));
    assert!(reg.test_hook_advance_free_generation(0, 7));
    let again = reg.try_create().unwrap();
    assert_eq!((again.slot(), again.generation()), (0, 7));
    assert!(!reg.is_alive(e));
    assert!(
        !reg.test_hook_advance_free_generation(0, 9),
        "alive slot refused"
    );
}
