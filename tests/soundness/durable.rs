//! Durable-identity guarantees that user code reachable from the safe API cannot break: a
//! panic inside `duplicate` (in the entropy source, in an `EntityRefs` impl) leaves no
//! reservation and no copy, a foreign registry given to `prune` drops nothing, durable parts
//! swapped between worlds describe no entity, and a hand-written roster that switches parts,
//! links a copy or leaves a reservation behind mid-duplicate is refused with every binding
//! naming a live entity. CI runs these in debug, in release and under Miri.

use std::panic::{catch_unwind, AssertUnwindSafe};

use bytemuck::{Pod, Zeroable};
use ludus::durable::{ActivationError, CandidateRejection, NoCatalog, WorldBindingTable};
use ludus::identity::test_entropy::SeqEntropy;
use ludus::identity::{EntropyError, EntropySource, PersistentObjectKey, SourceObjectId};
use ludus::prelude::*;
use ludus::world::roster::HookedParts;
use ludus::world::EntityRegistry;

use crate::support::{key, Pos};

/// A link whose `EntityRefs` panics when it points at slot 7.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Bomb {
    /// The linked entity.
    pub target: EntityId,
}

impl EntityRefs for Bomb {
    fn visit_entities(&mut self, visit: &mut dyn FnMut(&mut EntityId)) {
        if self.target.slot() == 7 {
            panic!("visitor panicked");
        }
        visit(&mut self.target);
    }
}

ludus::world! {
    /// Positions and links.
    pub struct Level {
        /// Positions.
        pub pos: Pos,
        /// Links.
        pub bomb: Bomb,
    }
    durable { entity_refs { Bomb } }
}

fn level(capacity: usize) -> Level {
    let mut w = Level::try_new_durable(
        capacity,
        DurableConfig {
            name_bytes: 4096,
            ..DurableConfig::default()
        },
    )
    .unwrap();
    w.begin_structural();
    w
}

/// The binding revision, the bindings and the live entities: what a failed duplicate must
/// leave as it found them.
fn tallies(w: &Level) -> (u64, usize, usize) {
    (
        w.binding_revision(),
        w.durable().bindings().len(),
        w.registry.len(),
    )
}

/// An entropy source that panics on its `panic_on`-th fill.
struct PanicEntropy {
    inner: SeqEntropy,
    calls: u32,
    panic_on: u32,
}

impl EntropySource for PanicEntropy {
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), EntropyError> {
        self.calls += 1;
        if self.calls == self.panic_on {
            panic!("entropy backend died");
        }
        self.inner.fill(dest)
    }
}

/// A panic in the entropy source, after one key was reserved, releases the reservation: the
/// table stays consistent, and the next duplicate binds its copy in its own source's scope
/// (publishing the aborted call's reservation instead would let unloading instance 1 destroy
/// it).
/// The caller's `out` contents are never taken for copies.
#[test]
fn a_panicking_entropy_source_leaves_no_reservation() {
    let mut w = level(16);
    let a = w.spawn((Pos(1.0),)).unwrap();
    let b = w.spawn((Pos(2.0),)).unwrap();
    let c = w.spawn((Pos(3.0),)).unwrap();
    w.activate(&[
        Activation::new(a, key(1, 1)),
        Activation::new(b, key(1, 2)),
        Activation::new(c, key(2, 3)),
    ])
    .unwrap();
    let before = tallies(&w);
    // `out` holds live handles on entry: they are outputs, never copies to undo.
    let mut out = [a, b];
    let mut entropy = PanicEntropy {
        inner: SeqEntropy::new(9),
        calls: 0,
        panic_on: 2,
    };
    let r = catch_unwind(AssertUnwindSafe(|| {
        w.duplicate(&[a, b], &mut entropy, &mut out)
    }));
    assert!(r.is_err());
    assert!(w.durable().bindings().check_consistent());
    assert_eq!(tallies(&w), before);
    assert!(w.registry.is_alive(a) && w.registry.is_alive(b));
    let mut one = [EntityId::NULL];
    w.duplicate(&[c], &mut SeqEntropy::new(77), &mut one)
        .unwrap();
    assert!(w.durable().bindings().check_consistent());
    assert_eq!(w.key_of(one[0]).unwrap().instance, key(2, 0).instance);
    w.unload(key(1, 0).instance).unwrap();
    assert!(w.registry.is_alive(one[0]) && w.registry.is_alive(c));
}

/// A panic in a component's `EntityRefs` (after the copies were created) destroys the copies
/// and releases the reservations: the live count and the binding table are as before.
#[test]
fn a_panicking_entity_refs_impl_leaves_no_copy() {
    let mut w = level(16);
    let a = w.spawn((Pos(1.0),)).unwrap();
    w.insert(
        a,
        Bomb {
            target: EntityId::from_raw_parts(0, 7, 1),
        },
    )
    .unwrap();
    w.activate(&[Activation::new(a, key(1, 1))]).unwrap();
    let before = tallies(&w);
    let mut out = [EntityId::NULL];
    let r = catch_unwind(AssertUnwindSafe(|| {
        w.duplicate(&[a], &mut SeqEntropy::new(1), &mut out)
    }));
    assert!(r.is_err());
    assert!(w.durable().bindings().check_consistent());
    assert_eq!(tallies(&w), before);
    assert!(!w.registry.is_alive(out[0]));
    assert_eq!(w.pos.len(), 1);
}

/// `prune` and `try_resolve_mut` given another registry drop nothing (every entity reads as
/// dead there, so a live binding would look stale).
#[test]
fn a_foreign_registry_prunes_nothing() {
    let mut a = EntityRegistry::try_with_capacity(4).unwrap();
    a.set_structural_phase(true);
    let b = EntityRegistry::try_with_capacity(4).unwrap();
    let e = a.try_create().unwrap();
    let mut t = WorldBindingTable::try_new(&a, 4).unwrap();
    t.try_activate(&a, &[Activation::new(e, key(1, 1))])
        .unwrap();
    let revision = t.binding_revision();
    assert!(!t.prune(&b, &key(1, 1)));
    assert_ne!(
        t.try_resolve_mut(&b, &key(1, 1), None, &NoCatalog),
        Resolution::Resolved(e)
    );
    assert_eq!(t.binding_revision(), revision);
    assert_eq!(t.try_resolve(&a, &key(1, 1)), Resolution::Resolved(e));
    assert_eq!(t.key_of(e), Some(key(1, 1)));
}

/// A world whose durable part is another world's reports none of that part's names,
/// protection or counts for its own handles.
#[test]
fn a_swapped_durable_part_describes_no_entity() {
    let (mut a, mut b) = (level(4), level(4));
    let ea = a.spawn((Pos(1.0),)).unwrap();
    let eb = b.spawn((Pos(2.0),)).unwrap();
    assert_eq!(ea.slot(), eb.slot());
    b.set_name(eb, "B-secret").unwrap();
    b.set_protected(eb, true).unwrap();
    b.activate(&[Activation::new(eb, key(1, 1))]).unwrap();
    std::mem::swap(&mut a.__ludus_hooks, &mut b.__ludus_hooks);
    assert_eq!(a.outliner().count(), 0);
    assert!(!a.is_protected(ea));
    let counts = a.counts();
    assert_eq!((counts.bindings, counts.linked, counts.live), (0, 0, 1));
    std::mem::swap(&mut a.__ludus_hooks, &mut b.__ludus_hooks);
    assert_eq!(b.outliner().count(), 1);
    assert!(b.is_protected(eb));
    assert_eq!(b.counts().bindings, 1);
}

/// Durable tables swapped between two worlds do not serve the other world's registry: a
/// destroy, a commit's destroy and a respawn through them are refused (`ForeignPool`) and
/// change nothing, so one world's destroys never detach the other's bindings.
#[test]
fn a_world_never_destroys_through_another_worlds_tables() {
    let (mut a, mut b) = (level(4), level(4));
    let ea = a.spawn((Pos(1.0),)).unwrap();
    let eb = b.spawn((Pos(2.0),)).unwrap();
    assert_eq!(ea.slot(), eb.slot());
    b.activate(&[Activation::new(eb, key(1, 1))]).unwrap();
    std::mem::swap(&mut a.__ludus_hooks, &mut b.__ludus_hooks);
    assert_eq!(a.destroy(ea), Err(WorldError::ForeignPool));
    let mut cmd = CommandBuffer::try_with_capacity(4, 64).unwrap();
    cmd.destroy(&a.registry, ea).unwrap();
    assert_eq!(a.commit(&mut cmd), Err(WorldError::ForeignPool));
    cmd.clear(&a.registry).unwrap();
    cmd.respawn(&a.registry, ea, (Pos(3.0),)).unwrap();
    assert_eq!(a.commit(&mut cmd), Err(WorldError::ForeignPool));
    assert!(a.registry.is_alive(ea) && a.pos.len() == 1);
    std::mem::swap(&mut a.__ludus_hooks, &mut b.__ludus_hooks);
    assert_eq!(b.resolve(&key(1, 1)), Resolution::Resolved(eb));
    cmd.clear(&a.registry).unwrap();
    a.destroy(ea).unwrap();
    assert_eq!(b.resolve(&key(1, 1)), Resolution::Resolved(eb));
}

/// A hand-written roster holding two self-consistent (registry, durable) pairs: each
/// `hooked_parts` call hands out pair B when the low bit of `script` is set (the script
/// shifts by one per call), pair A otherwise.
struct Twin {
    reg_a: ludus::world::ReadOnly<EntityRegistry>,
    d_a: ludus::world::ReadOnly<ludus::durable::Durable>,
    reg_b: ludus::world::ReadOnly<EntityRegistry>,
    d_b: ludus::world::ReadOnly<ludus::durable::Durable>,
    script: std::rc::Rc<std::cell::Cell<u64>>,
}

impl ludus::durable::DurableRoster for Twin {
    type Refs = ();
}

impl ludus::world::roster::Roster for Twin {
    type Alloc = ludus::world::__private::Global;
    type Components = ();
    type Groups = ();
    type Hooks = ludus::durable::Durable;
    fn hooked_parts(&mut self) -> HookedParts<'_, Self> {
        let script = self.script.get();
        self.script.set(script >> 1);
        if script & 1 != 0 {
            (&mut self.reg_b, &mut self.d_b, ())
        } else {
            (&mut self.reg_a, &mut self.d_a, ())
        }
    }
    fn hooks(&self) -> &Self::Hooks {
        &self.d_a
    }
    fn parts_ref(&self) -> ludus::world::roster::PartsRef<'_, Self> {
        (&self.reg_a, ())
    }
}

/// An entropy source that, when asked for bytes, scripts the roster's next calls.
struct Scripting(SeqEntropy, std::rc::Rc<std::cell::Cell<u64>>, u64);

impl EntropySource for Scripting {
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), EntropyError> {
        self.1.set(self.2);
        self.0.fill(dest)
    }
}

/// The world's resolve trusts its table without a registry read, so no table may hold a
/// binding its registry does not back: a roster that hands out another pair for
/// `duplicate`'s creates (script `0b1`), its publication (`0b10`) or both would leave a binding
/// in one table naming a slot of the other registry, or a reservation count its table does not
/// hold. The duplicate is refused and every binding of both tables names a live entity.
#[test]
fn a_roster_switching_pairs_mid_duplicate_publishes_no_foreign_binding() {
    for script in [0b1u64, 0b10, 0b11] {
        let alloc = ludus::world::__private::Global;
        let cfg = DurableConfig::default();
        let flag = std::rc::Rc::new(std::cell::Cell::new(0u64));
        let mut w = Twin {
            reg_a: ludus::world::ReadOnly::try_new_world_registry(8, alloc).unwrap(),
            d_a: ludus::world::ReadOnly::try_new_durable(8, cfg, alloc).unwrap(),
            reg_b: ludus::world::ReadOnly::try_new_world_registry(8, alloc).unwrap(),
            d_b: ludus::world::ReadOnly::try_new_durable(8, cfg, alloc).unwrap(),
            script: flag.clone(),
        };
        w.try_bind().unwrap();
        flag.set(1);
        w.try_bind().unwrap();
        w.begin_structural();
        flag.set(1);
        w.begin_structural();
        // B's next create takes slot 2, A's next after `e` slot 1.
        for _ in 0..2 {
            flag.set(1);
            w.create().unwrap();
        }
        let e = w.create().unwrap();
        w.activate(&[Activation::new(e, key(1, 1))]).unwrap();
        let mut out = [EntityId::NULL];
        let mut entropy = Scripting(SeqEntropy::new(3), flag.clone(), script);
        assert!(
            w.duplicate(&[e], &mut entropy, &mut out).is_err(),
            "script {script:b}"
        );
        flag.set(0);
        for (reg, d) in [(&w.reg_a, &w.d_a), (&w.reg_b, &w.d_b)] {
            assert_eq!(d.bindings().len(), d.bindings().iter().count());
            for (k, h, _) in d.bindings().iter() {
                assert!(reg.is_alive(h), "script {script:b}: {k} names a dead {h:?}");
            }
        }
        assert_eq!(w.d_a.bindings().len(), 1);
        assert_eq!(w.resolve(&key(1, 1)), Resolution::Resolved(e));
        let mut batch = [None];
        let keys: Vec<_> = w.d_a.bindings().iter().map(|(k, _, _)| k).collect();
        w.resolve_batch(&keys, &mut batch).unwrap();
        assert_eq!(batch, [Some(e)]);
    }
}

/// Something a [`Hook`] does to its world from inside a `hooked_parts` call.
type Action = Box<dyn FnMut(&mut Level)>;

/// A hand-written roster over a `Level` that runs scripted world operations inside its
/// `hooked_parts` (user code called in the middle of every world operation), or hands out a
/// spare durable part (never attached to a registry) at chosen calls.
struct Hook {
    inner: Level,
    spare: ludus::world::ReadOnly<ludus::durable::Durable>,
    calls: u32,
    /// (call number, action).
    actions: Vec<(u32, Action)>,
    /// Calls that hand out the spare part.
    dodge: Vec<u32>,
}

impl ludus::durable::DurableRoster for Hook {
    type Refs = <Level as ludus::durable::DurableRoster>::Refs;
}

impl ludus::world::roster::Roster for Hook {
    type Alloc = ludus::world::__private::Global;
    type Components = <Level as ludus::world::roster::Roster>::Components;
    type Groups = <Level as ludus::world::roster::Roster>::Groups;
    type Hooks = ludus::durable::Durable;
    const NAMES: &'static [&'static str] = <Level as ludus::world::roster::Roster>::NAMES;
    fn hooked_parts(&mut self) -> HookedParts<'_, Self> {
        self.calls += 1;
        let n = self.calls;
        let (due, kept): (Vec<_>, Vec<_>) = self.actions.drain(..).partition(|(at, _)| *at == n);
        self.actions = kept;
        for (_, mut act) in due {
            act(&mut self.inner);
        }
        if self.dodge.contains(&n) {
            let (r, _, p) = self.inner.hooked_parts();
            return (r, &mut self.spare, p);
        }
        self.inner.hooked_parts()
    }
    fn parts_ref(&self) -> ludus::world::roster::PartsRef<'_, Self> {
        self.inner.parts_ref()
    }
    fn hooks(&self) -> &Self::Hooks {
        self.inner.durable()
    }
}

fn hook(capacity: usize) -> Hook {
    Hook {
        inner: level(capacity),
        spare: ludus::world::ReadOnly::try_new_durable(
            capacity,
            DurableConfig::default(),
            ludus::world::__private::Global,
        )
        .unwrap(),
        calls: 0,
        actions: Vec::new(),
        dodge: Vec::new(),
    }
}

/// Every binding names a live entity, `len` counts exactly the bindings, and the outliner
/// (a depth-first walk) ends: what no roster may break.
fn sound(w: &Level, what: &str) {
    let t = w.durable().bindings();
    assert_eq!(t.len(), t.iter().count(), "{what}: len");
    for (k, e, _) in t.iter() {
        assert!(w.registry.is_alive(e), "{what}: {k} names a dead {e:?}");
        assert_eq!(w.resolve(&k), Resolution::Resolved(e), "{what}");
    }
    // A cycle would make the walk run past every live entity (or never end).
    assert!(
        w.outliner().take(64).count() <= w.registry.len(),
        "{what}: outliner"
    );
}

/// Duplicates a bound entity `e` through a [`Hook`] that runs `act(world, e, copy)` inside its
/// `call`-th `hooked_parts` call of the duplicate, when a copy exists by then; returns the
/// hook (actions cleared, checked `sound`), whether the duplicate succeeded, and the copy.
fn duplicate_acting_on_copy(
    call: u32,
    mut act: impl FnMut(&mut Level, EntityId, EntityId) + 'static,
) -> (Hook, bool, EntityId) {
    let mut h = hook(8);
    let e = h.inner.create().unwrap();
    h.inner.activate(&[Activation::new(e, key(1, 1))]).unwrap();
    let at = h.calls + call;
    h.actions.push((
        at,
        Box::new(move |g: &mut Level| {
            let copy = (0..8)
                .filter_map(|s| g.registry.live_at(s))
                .find(|c| *c != e);
            if let Some(copy) = copy {
                act(g, e, copy);
            }
        }),
    ));
    let mut out = [EntityId::NULL];
    let done = h.duplicate(&[e], &mut SeqEntropy::new(5), &mut out).is_ok();
    h.actions.clear();
    sound(&h.inner, &format!("call {call}"));
    (h, done, out[0])
}

/// A roster that parents the source under its own copy between the creates and the
/// publication would make the copy its own parent (a cycle the outliner and `destroy_subtree`
/// never leave). The publication refuses when a copy is no longer blank, and the copies are
/// destroyed.
#[test]
fn a_roster_linking_a_copy_mid_duplicate_is_refused() {
    for call in 1..10 {
        let (h, done, copy) = duplicate_acting_on_copy(call, |g, e, copy| {
            g.set_parent(e, Some(copy)).unwrap();
        });
        if done {
            assert_ne!(h.inner.parent(copy).unwrap(), Some(copy), "call {call}");
        } else {
            assert!(!h.inner.registry.is_alive(copy), "call {call}: copy left");
        }
    }
}

/// A roster that binds a copy to another key between the creates and the publication would
/// give one slot two keys: the reverse table keeps one, the forward table both, and a world's
/// resolve trusts its forward entries without a registry read. The publication refuses a
/// bound copy, and the table stays whole whatever the call the roster acts at.
#[test]
fn a_roster_binding_a_copy_mid_duplicate_is_refused() {
    let mut acted = 0;
    for call in 1..10 {
        let bound = std::rc::Rc::new(std::cell::Cell::new(false));
        let flag = bound.clone();
        let (h, done, copy) = duplicate_acting_on_copy(call, move |g, _, copy| {
            flag.set(g.activate(&[Activation::new(copy, key(1, 2))]).is_ok());
        });
        let t = h.inner.durable().bindings();
        assert!(t.check_consistent(), "call {call}");
        if bound.get() {
            acted += 1;
            // The copy keeps the key the roster gave it, and only that one.
            if done {
                assert_eq!(t.key_of(copy), Some(key(1, 2)), "call {call}");
            }
        }
    }
    assert!(acted > 0, "the roster never bound a copy");
}

/// A reservation left behind (the roster handed the panic handler's cleanup a disabled part)
/// must not be dropped as stale by a later activation of its key, which would uncount a
/// binding `len` never counted (a debug build would panic inside `destroy`; a release build
/// would wrap): the activation is refused (`KeyReserved`) and the next duplicate releases the
/// leftover reservations first.
#[test]
fn a_leftover_reservation_is_never_dropped_as_stale() {
    /// Mints from fixed bytes; panics on its second fill.
    struct Once(u32);
    impl EntropySource for Once {
        fn fill(&mut self, dest: &mut [u8]) -> Result<(), EntropyError> {
            self.0 += 1;
            if self.0 == 2 {
                panic!("entropy panic");
            }
            SeqEntropy::new(9).fill(dest)
        }
    }
    // The key the first fill mints.
    let mut bytes = [0u8; 16];
    SeqEntropy::new(9).fill(&mut bytes).unwrap();
    let minted =
        SourceObjectId::from_uuid(uuid::Builder::from_random_bytes(bytes).into_uuid()).unwrap();
    let reserved = PersistentObjectKey::new(key(1, 1).instance, minted);
    let mut leftovers = 0;
    for dodge in 1..12 {
        let mut h = hook(8);
        let e = h.inner.create().unwrap();
        let f = h.inner.create().unwrap();
        h.inner
            .activate(&[Activation::new(e, key(1, 1)), Activation::new(f, key(1, 2))])
            .unwrap();
        h.dodge = vec![h.calls + dodge];
        let mut out = [EntityId::NULL; 2];
        let r = catch_unwind(AssertUnwindSafe(|| {
            h.duplicate(&[e, f], &mut Once(0), &mut out)
        }));
        h.dodge.clear();
        sound(&h.inner, &format!("dodge {dodge}"));
        if let Ok(refused) = r {
            // The spare part went to a call before the mint: refused, nothing reserved.
            assert!(refused.is_err(), "dodge {dodge}");
            continue;
        }
        let x = h.inner.create().unwrap();
        match h.inner.activate(&[Activation::new(x, reserved)]) {
            Err(DurableError::Activation(ActivationError::Candidate {
                reason: CandidateRejection::KeyReserved,
                ..
            })) => leftovers += 1,
            other => assert!(other.is_ok(), "dodge {dodge}: {other:?}"),
        }
        sound(&h.inner, &format!("dodge {dodge}: activation"));
        // A later duplicate starts clean, and destroying everything never underflows.
        let mut one = [EntityId::NULL];
        h.duplicate(&[e], &mut SeqEntropy::new(21), &mut one)
            .unwrap_or_else(|err| panic!("dodge {dodge}: {err}"));
        sound(&h.inner, &format!("dodge {dodge}: a later duplicate"));
        for s in 0..8 {
            if let Some(x) = h.inner.registry.live_at(s) {
                h.inner.destroy(x).unwrap();
            }
        }
        assert_eq!(h.inner.durable().bindings().len(), 0, "dodge {dodge}");
    }
    assert!(
        leftovers > 0,
        "no dodge left a reservation behind: the test tests nothing"
    );
}
