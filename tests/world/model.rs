//! Property test: registry + pools + owned groups against a `HashMap` model over random
//! operation sequences, with live, stale and foreign handles: once with one group, once with
//! nested groups (`ab` inside which `abc` packs: every pool but one serves two groups).

use ludus::world::WorldDiagnostics;
use ludus::world::WorldOps;
use std::collections::{HashMap, HashSet};

use bytemuck::{Pod, Zeroable};
use ludus::identity::TERMINAL_GENERATION;
use ludus::world::{CommandBuffer, CommandError, Provisional, Rejection, Stores, WorldError};
use ludus::EntityId;
use proptest::prelude::*;

/// Component A.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
pub struct A(u32);
/// Component B.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
pub struct B(u64);
/// Component C (not grouped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
pub struct C(u16);

ludus::world! {
    struct World { a: A, b: B, c: C }
    groups { ab(a: A, b: B) }
}

ludus::world! {
    /// Nested groups: `abc`'s prefix lies inside `ab`'s in pools `a` and `b`.
    struct Nested { a: A, b: B, c: C }
    groups { abc(a: A, b: B, c: C), ab(a: A, b: B) }
}

/// A world type the model runs against.
trait ModelWorld: WorldOps + Stores<A> + Stores<B> + Stores<C> {
    fn fresh() -> Self;
    /// The nested group's length, if the type declares it.
    fn abc_len(&mut self) -> Option<usize>;
}

impl ModelWorld for World {
    fn fresh() -> Self {
        World::try_new(CAPACITY).unwrap()
    }
    fn abc_len(&mut self) -> Option<usize> {
        None
    }
}

impl ModelWorld for Nested {
    fn fresh() -> Self {
        Nested::try_new(CAPACITY).unwrap()
    }
    fn abc_len(&mut self) -> Option<usize> {
        let (ids, a, b, c) = self.abc();
        assert!(a.len() == ids.len() && b.len() == ids.len() && c.len() == ids.len());
        // The nested prefix is the start of the outer one, in the same order.
        let inner: Vec<EntityId> = ids.iter().collect();
        let (outer, ..) = self.ab();
        assert_eq!(outer.iter().take(inner.len()).collect::<Vec<_>>(), inner);
        Some(inner.len())
    }
}

const CAPACITY: usize = 6;
const COMMANDS: usize = 8;
const BYTES: usize = 40;

#[derive(Debug, Clone)]
enum Op {
    Create,
    Spawn(u32, u64),
    Destroy(usize),
    InsertA(usize, u32),
    InsertB(usize, u64),
    InsertC(usize, u16),
    RemoveA(usize),
    RemoveB(usize),
    RemoveC(usize),
    Phase(bool),
    CmdCreateWithA(u32),
    /// `CommandBuffer::spawn` of an `(A, B)` bundle: one create and two inserts, all or nothing.
    CmdSpawnAB(u32, u64),
    CmdDestroy(usize),
    /// `CommandBuffer::respawn` of an entity as an `(A, B)` bundle: a destroy and a spawn,
    /// applied in place when the entity holds exactly A and B.
    CmdRespawnAB(usize, u32, u64),
    CmdInsertB(usize, u64),
    CmdRemoveA(usize),
    Commit,
    /// `spawn_batch` of `(A, B)` bundles (reuses freed slots, then takes fresh ones in bulk).
    SpawnBatch(u8, u32),
    /// `insert_batch` of `B` values (all or nothing).
    InsertBatchB(Vec<usize>, u64),
    /// `remove_batch` of `A` (all or nothing; `A` is grouped).
    RemoveBatchA(Vec<usize>),
    /// `insert_batch` of `C` (ungrouped: the pool's own batch loop).
    InsertBatchC(Vec<usize>, u16),
    /// `remove_batch` of `C` (ungrouped: swap removal or compaction by batch size).
    RemoveBatchC(Vec<usize>),
}

/// A recorded command, as the model sees it.
#[derive(Debug, Clone, Copy)]
enum Recorded {
    Create(Provisional),
    InsertAOnCreated(Provisional, u32),
    InsertBOnCreated(Provisional, u64),
    Destroy(EntityId),
    InsertB(EntityId, u64),
    RemoveA(EntityId),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Create),
        2 => (any::<u32>(), any::<u64>()).prop_map(|(a, b)| Op::Spawn(a, b)),
        2 => any::<usize>().prop_map(Op::Destroy),
        3 => (any::<usize>(), any::<u32>()).prop_map(|(i, v)| Op::InsertA(i, v)),
        3 => (any::<usize>(), any::<u64>()).prop_map(|(i, v)| Op::InsertB(i, v)),
        1 => (any::<usize>(), any::<u16>()).prop_map(|(i, v)| Op::InsertC(i, v)),
        2 => any::<usize>().prop_map(Op::RemoveA),
        2 => any::<usize>().prop_map(Op::RemoveB),
        1 => any::<usize>().prop_map(Op::RemoveC),
        1 => any::<bool>().prop_map(Op::Phase),
        1 => any::<u32>().prop_map(Op::CmdCreateWithA),
        1 => (any::<u32>(), any::<u64>()).prop_map(|(a, b)| Op::CmdSpawnAB(a, b)),
        1 => any::<usize>().prop_map(Op::CmdDestroy),
        2 => (any::<usize>(), any::<u32>(), any::<u64>()).prop_map(|(i, a, b)| Op::CmdRespawnAB(i, a, b)),
        1 => (any::<usize>(), any::<u64>()).prop_map(|(i, v)| Op::CmdInsertB(i, v)),
        1 => any::<usize>().prop_map(Op::CmdRemoveA),
        1 => Just(Op::Commit),
        1 => (0u8..4, any::<u32>()).prop_map(|(n, a)| Op::SpawnBatch(n, a)),
        1 => (proptest::collection::vec(any::<usize>(), 0..4), any::<u64>())
            .prop_map(|(i, v)| Op::InsertBatchB(i, v)),
        1 => proptest::collection::vec(any::<usize>(), 0..4).prop_map(Op::RemoveBatchA),
        1 => (proptest::collection::vec(any::<usize>(), 0..5), any::<u16>())
            .prop_map(|(i, v)| Op::InsertBatchC(i, v)),
        1 => proptest::collection::vec(any::<usize>(), 0..5).prop_map(Op::RemoveBatchC),
    ]
}

#[derive(Default, Clone, Copy, Debug, PartialEq)]
struct Row {
    a: Option<A>,
    b: Option<B>,
    c: Option<C>,
}

struct Model {
    alive: HashMap<EntityId, Row>,
    retired: usize,
    structural: bool,
    /// The registry's owner token.
    owner: u64,
    /// Released, reusable slots with the generation they come back at (LIFO: last on top).
    free: Vec<(u32, u32)>,
    /// Slots `>= high` were never created.
    high: u32,
    /// Last creation sequence issued, and each alive entity's.
    last_sequence: u64,
    sequence: HashMap<EntityId, u64>,
}

impl Model {
    /// The handle the next create must return: the most recently released slot, else the
    /// next fresh one (slot 1 starts near the terminal generation, see `run`).
    fn create(&mut self, row: Row) -> EntityId {
        let (slot, generation) = self.free.pop().unwrap_or_else(|| {
            self.high += 1;
            let slot = self.high - 1;
            (
                slot,
                if slot == 1 {
                    TERMINAL_GENERATION - 1
                } else {
                    1
                },
            )
        });
        let e = EntityId::from_raw_parts(self.owner, slot, generation);
        self.last_sequence += 1;
        self.sequence.insert(e, self.last_sequence);
        self.alive.insert(e, row);
        e
    }

    /// Releases an alive entity: its slot comes back at the next generation, or retires.
    fn destroy(&mut self, e: EntityId) {
        self.alive.remove(&e).unwrap();
        self.sequence.remove(&e);
        if e.generation() == TERMINAL_GENERATION {
            self.retired += 1;
        } else {
            self.free.push((e.slot(), e.generation() + 1));
        }
    }
}

fn pick(handles: &[EntityId], i: usize) -> EntityId {
    if handles.is_empty() {
        EntityId::NULL
    } else {
        handles[i % handles.len()]
    }
}

fn expect_change(m: &Model, e: EntityId) -> Result<(), ()> {
    if m.structural && m.alive.contains_key(&e) {
        Ok(())
    } else {
        Err(())
    }
}

fn check_error(got: WorldError, m: &Model) {
    if !m.structural {
        assert_eq!(got, WorldError::InvalidPhase);
    } else {
        assert!(matches!(got, WorldError::Rejected(_)), "{got:?}");
    }
}

/// `insert_batch` of `values` against the model: all or nothing, the newly joined count.
fn insert_batch<W: ModelWorld + Stores<T>, T: Pod + PartialEq + std::fmt::Debug>(
    w: &mut W,
    m: &mut Model,
    es: &[EntityId],
    values: &[T],
    field: fn(&mut Row) -> &mut Option<T>,
) {
    let ok = m.structural && es.iter().all(|e| m.alive.contains_key(e));
    match (w.insert_batch(es, values), ok) {
        (Ok(joined), true) => {
            let mut want = 0;
            for (e, v) in es.iter().zip(values) {
                let row = m.alive.get_mut(e).unwrap();
                want += usize::from(field(row).replace(*v).is_none());
            }
            assert_eq!(joined, want);
        }
        (Err(got), false) => check_error(got, m),
        (got, want) => panic!("insert_batch {es:?}: {got:?} vs {want:?}"),
    }
}

/// `remove_batch::<T>` against the model: all or nothing, the removed count.
fn remove_batch<W: ModelWorld + Stores<T>, T: Pod + std::fmt::Debug>(
    w: &mut W,
    m: &mut Model,
    es: &[EntityId],
    field: fn(&mut Row) -> &mut Option<T>,
) {
    let ok = m.structural && es.iter().all(|e| m.alive.contains_key(e));
    match (w.remove_batch::<T>(es), ok) {
        (Ok(removed), true) => {
            let want = es
                .iter()
                .filter(|e| field(m.alive.get_mut(e).unwrap()).take().is_some())
                .count();
            assert_eq!(removed, want);
        }
        (Err(got), false) => check_error(got, m),
        (got, want) => panic!("remove_batch {es:?}: {got:?} vs {want:?}"),
    }
}

/// Whether a create of `recorded`, applied in order from `free` free slots, finds none: a
/// destroy earlier in the batch frees its slot (unless it retires at the terminal generation).
fn batch_runs_out(recorded: &[Recorded], mut free: usize) -> bool {
    for r in recorded {
        match r {
            Recorded::Create(_) if free == 0 => return true,
            Recorded::Create(_) => free -= 1,
            Recorded::Destroy(e) if e.generation() != TERMINAL_GENERATION => free += 1,
            _ => {}
        }
    }
    false
}

/// Structural changes between two model states: entities created or released, and component
/// values joining or leaving a pool.
fn structural_changes(before: &HashMap<EntityId, Row>, after: &HashMap<EntityId, Row>) -> u64 {
    let present = |r: Option<&Row>| {
        r.map_or([false; 3], |r| {
            [r.a.is_some(), r.b.is_some(), r.c.is_some()]
        })
    };
    let mut changes = 0;
    for e in before
        .keys()
        .chain(after.keys().filter(|e| !before.contains_key(e)))
    {
        let (b, a) = (before.get(e), after.get(e));
        changes += u64::from(b.is_some() != a.is_some());
        let (pb, pa) = (present(b), present(a));
        changes += (0..3).filter(|&k| pb[k] != pa[k]).count() as u64;
    }
    changes
}

fn run<W: ModelWorld>(ops: Vec<Op>) {
    let mut w = W::fresh();
    let mut foreign = W::fresh();
    // Slot 1 starts two steps before the terminal generation, so retirement happens.
    assert!(w.test_hook_advance_free_generation(1, TERMINAL_GENERATION - 1));
    let f = foreign.create().unwrap();
    foreign.insert(f, A(1)).unwrap();
    foreign.insert(f, B(1)).unwrap();

    let mut m = Model {
        alive: HashMap::new(),
        retired: 0,
        structural: true,
        owner: w.registry().owner(),
        free: Vec::new(),
        high: 0,
        last_sequence: 0,
        sequence: HashMap::new(),
    };
    // Provisionals of epochs before the last commit or clear: they never resolve again.
    let mut stale_provisionals: Vec<Provisional> = Vec::new();
    let mut cmd = CommandBuffer::try_with_capacity(COMMANDS, BYTES).unwrap();
    let mut recorded: Vec<Recorded> = Vec::new();
    let mut bytes = 0usize;
    let mut pending: HashSet<EntityId> = HashSet::new();
    let mut handles: Vec<EntityId> = vec![f];
    let mut revision = w.registry().structural_revision();
    for op in ops {
        let mut before = m.alive.clone();
        let op_name = format!("{op:?}");
        match op {
            Op::Create => {
                let got = w.create();
                if !m.structural {
                    assert_eq!(got, Err(WorldError::InvalidPhase));
                } else if m.alive.len() + m.retired == CAPACITY {
                    assert!(matches!(got, Err(WorldError::CapacityExhausted { .. })));
                } else {
                    let e = got.unwrap();
                    assert!(!handles.contains(&e), "fresh handle {e:?}");
                    assert_eq!(e, m.create(Row::default()), "LIFO reuse, then fresh slots");
                    handles.push(e);
                }
            }
            Op::Spawn(a, b) => {
                let got = w.spawn((A(a), B(b)));
                if !m.structural {
                    assert_eq!(got, Err(WorldError::InvalidPhase));
                } else if m.alive.len() + m.retired == CAPACITY {
                    assert!(matches!(got, Err(WorldError::CapacityExhausted { .. })));
                } else {
                    let e = got.unwrap();
                    assert!(!handles.contains(&e), "fresh handle {e:?}");
                    handles.push(e);
                    let row = Row {
                        a: Some(A(a)),
                        b: Some(B(b)),
                        c: None,
                    };
                    assert_eq!(e, m.create(row), "LIFO reuse, then fresh slots");
                }
            }
            Op::Destroy(i) => {
                let e = pick(&handles, i);
                match (w.destroy(e), expect_change(&m, e)) {
                    (Ok(()), Ok(())) => m.destroy(e),
                    (Err(got), Err(())) => check_error(got, &m),
                    (got, want) => panic!("destroy {e:?}: {got:?} vs {want:?}"),
                }
            }
            Op::InsertA(i, v) => {
                let e = pick(&handles, i);
                match (w.insert(e, A(v)), expect_change(&m, e)) {
                    (Ok(prev), Ok(())) => {
                        let row = m.alive.get_mut(&e).unwrap();
                        assert_eq!(prev, row.a.replace(A(v)));
                    }
                    (Err(got), Err(())) => check_error(got, &m),
                    (got, want) => panic!("insert A {e:?}: {got:?} vs {want:?}"),
                }
            }
            Op::InsertB(i, v) => {
                let e = pick(&handles, i);
                match (w.insert(e, B(v)), expect_change(&m, e)) {
                    (Ok(prev), Ok(())) => {
                        let row = m.alive.get_mut(&e).unwrap();
                        assert_eq!(prev, row.b.replace(B(v)));
                    }
                    (Err(got), Err(())) => check_error(got, &m),
                    (got, want) => panic!("insert B {e:?}: {got:?} vs {want:?}"),
                }
            }
            Op::InsertC(i, v) => {
                let e = pick(&handles, i);
                match (w.insert(e, C(v)), expect_change(&m, e)) {
                    (Ok(prev), Ok(())) => {
                        let row = m.alive.get_mut(&e).unwrap();
                        assert_eq!(prev, row.c.replace(C(v)));
                    }
                    (Err(got), Err(())) => check_error(got, &m),
                    (got, want) => panic!("insert C {e:?}: {got:?} vs {want:?}"),
                }
            }
            Op::RemoveA(i) => {
                let e = pick(&handles, i);
                match (w.remove::<A>(e), expect_change(&m, e)) {
                    (Ok(prev), Ok(())) => assert_eq!(prev, m.alive.get_mut(&e).unwrap().a.take()),
                    (Err(got), Err(())) => check_error(got, &m),
                    (got, want) => panic!("remove A {e:?}: {got:?} vs {want:?}"),
                }
            }
            Op::RemoveB(i) => {
                let e = pick(&handles, i);
                match (w.remove::<B>(e), expect_change(&m, e)) {
                    (Ok(prev), Ok(())) => assert_eq!(prev, m.alive.get_mut(&e).unwrap().b.take()),
                    (Err(got), Err(())) => check_error(got, &m),
                    (got, want) => panic!("remove B {e:?}: {got:?} vs {want:?}"),
                }
            }
            Op::RemoveC(i) => {
                let e = pick(&handles, i);
                match (w.remove::<C>(e), expect_change(&m, e)) {
                    (Ok(prev), Ok(())) => assert_eq!(prev, m.alive.get_mut(&e).unwrap().c.take()),
                    (Err(got), Err(())) => check_error(got, &m),
                    (got, want) => panic!("remove C {e:?}: {got:?} vs {want:?}"),
                }
            }
            Op::CmdCreateWithA(v) => {
                let room = recorded.len() < COMMANDS;
                match cmd.create() {
                    Ok(p) => {
                        assert!(room);
                        recorded.push(Recorded::Create(p));
                        let room = recorded.len() < COMMANDS && bytes + 4 <= BYTES;
                        match cmd.insert(w.registry(), p, A(v)) {
                            Ok(()) => {
                                assert!(room);
                                bytes += 4;
                                recorded.push(Recorded::InsertAOnCreated(p, v));
                            }
                            Err(e) => assert!(
                                matches!(e, CommandError::BufferFull { .. }) && !room,
                                "{e:?}"
                            ),
                        }
                    }
                    Err(e) => assert!(
                        matches!(e, CommandError::BufferFull { .. }) && !room,
                        "{e:?}"
                    ),
                }
            }
            Op::CmdSpawnAB(a, b) => {
                let room = recorded.len() + 3 <= COMMANDS && bytes + 12 <= BYTES;
                match cmd.spawn(w.registry(), (A(a), B(b))) {
                    Ok(p) => {
                        assert!(room);
                        bytes += 12;
                        recorded.push(Recorded::Create(p));
                        recorded.push(Recorded::InsertAOnCreated(p, a));
                        recorded.push(Recorded::InsertBOnCreated(p, b));
                    }
                    Err(e) => assert!(
                        matches!(e, CommandError::BufferFull { .. }) && !room,
                        "{e:?}"
                    ),
                }
                assert_eq!(cmd.len(), recorded.len(), "all or nothing");
            }
            Op::CmdDestroy(i) => {
                let e = pick(&handles, i);
                let active = m.alive.contains_key(&e) && !pending.contains(&e);
                let room = recorded.len() < COMMANDS;
                match cmd.destroy(w.registry(), e) {
                    Ok(()) => {
                        assert!(room && active);
                        pending.insert(e);
                        recorded.push(Recorded::Destroy(e));
                    }
                    Err(CommandError::BufferFull { .. }) => assert!(!room),
                    Err(CommandError::Rejected(r)) => {
                        assert!(room && !active, "{r:?}");
                        if m.alive.contains_key(&e) {
                            assert_eq!(r, Rejection::Pending);
                        }
                    }
                    Err(other) => panic!("{other:?}"),
                }
            }
            Op::CmdRespawnAB(i, a, b) => {
                let e = pick(&handles, i);
                let active = m.alive.contains_key(&e) && !pending.contains(&e);
                let room = recorded.len() + 4 <= COMMANDS && bytes + 12 <= BYTES;
                match cmd.respawn(w.registry(), e, (A(a), B(b))) {
                    Ok(p) => {
                        assert!(room && active);
                        pending.insert(e);
                        bytes += 12;
                        recorded.push(Recorded::Destroy(e));
                        recorded.push(Recorded::Create(p));
                        recorded.push(Recorded::InsertAOnCreated(p, a));
                        recorded.push(Recorded::InsertBOnCreated(p, b));
                    }
                    Err(CommandError::BufferFull { .. }) => assert!(!room),
                    Err(CommandError::Rejected(r)) => {
                        assert!(room && !active, "{r:?}");
                        if m.alive.contains_key(&e) {
                            assert_eq!(r, Rejection::Pending);
                        }
                    }
                    Err(other) => panic!("{other:?}"),
                }
                assert_eq!(cmd.len(), recorded.len(), "all or nothing");
            }
            Op::CmdInsertB(i, v) => {
                let e = pick(&handles, i);
                let active = m.alive.contains_key(&e) && !pending.contains(&e);
                let room = recorded.len() < COMMANDS && bytes + 8 <= BYTES;
                match cmd.insert(w.registry(), e, B(v)) {
                    Ok(()) => {
                        assert!(room && active);
                        bytes += 8;
                        recorded.push(Recorded::InsertB(e, v));
                    }
                    Err(CommandError::Rejected(_)) => assert!(!active),
                    Err(CommandError::BufferFull { .. }) => assert!(active && !room),
                    Err(other) => panic!("{other:?}"),
                }
            }
            Op::CmdRemoveA(i) => {
                let e = pick(&handles, i);
                let active = m.alive.contains_key(&e) && !pending.contains(&e);
                let room = recorded.len() < COMMANDS;
                match cmd.remove::<A, _>(w.registry(), e) {
                    Ok(()) => {
                        assert!(room && active);
                        recorded.push(Recorded::RemoveA(e));
                    }
                    Err(CommandError::Rejected(_)) => assert!(!active),
                    Err(CommandError::BufferFull { .. }) => assert!(active && !room),
                    Err(other) => panic!("{other:?}"),
                }
            }
            Op::Commit => {
                // Expected preflight outcome, in the order the buffer checks.
                let creates = recorded
                    .iter()
                    .filter(|r| matches!(r, Recorded::Create(_)))
                    .count();
                let dead_target = recorded.iter().any(|r| match r {
                    Recorded::Destroy(e) | Recorded::InsertB(e, _) | Recorded::RemoveA(e) => {
                        !m.alive.contains_key(e)
                    }
                    _ => false,
                });
                let expected = if !m.structural {
                    Err(WorldError::InvalidPhase)
                } else if dead_target {
                    Err(WorldError::Rejected(Rejection::Free))
                } else if batch_runs_out(&recorded, CAPACITY - m.alive.len() - m.retired) {
                    Err(WorldError::CapacityExhausted {
                        requested: creates,
                        available: CAPACITY - m.alive.len() - m.retired,
                        capacity: CAPACITY,
                        retired: m.retired,
                    })
                } else {
                    Ok(())
                };
                let got = w.commit(&mut cmd);
                let got_ok = got.is_ok();
                let last_creates = if got_ok { creates } else { 0 };
                match (got, expected) {
                    (Ok(()), Ok(())) => {
                        for r in &recorded {
                            // Commands apply one by one: an insert and a destroy of the same
                            // entity are two changes each, even though they cancel out.
                            let prev = m.alive.clone();
                            match *r {
                                Recorded::Create(p) => {
                                    let e = cmd.resolve(p).unwrap();
                                    assert!(!handles.contains(&e));
                                    handles.push(e);
                                    assert_eq!(e, m.create(Row::default()), "commit order");
                                    stale_provisionals.push(p);
                                }
                                Recorded::InsertBOnCreated(p, v) => {
                                    let e = cmd.resolve(p).unwrap();
                                    m.alive.get_mut(&e).unwrap().b = Some(B(v));
                                }
                                Recorded::InsertAOnCreated(p, v) => {
                                    let e = cmd.resolve(p).unwrap();
                                    m.alive.get_mut(&e).unwrap().a = Some(A(v));
                                }
                                Recorded::Destroy(e) => m.destroy(e),
                                Recorded::InsertB(e, v) => {
                                    m.alive.get_mut(&e).unwrap().b = Some(B(v));
                                }
                                Recorded::RemoveA(e) => {
                                    m.alive.get_mut(&e).unwrap().a = None;
                                }
                            }
                            revision += structural_changes(&prev, &m.alive);
                        }
                        before = m.alive.clone();
                        assert!(cmd.is_empty());
                    }
                    (Err(got), Err(want)) => {
                        // Nothing applied (checked below against the unchanged model); drop
                        // the batch and its pending marks.
                        match want {
                            WorldError::Rejected(_) => {
                                assert!(matches!(got, WorldError::Rejected(_)), "{got:?}")
                            }
                            want => assert_eq!(got, want),
                        }
                        assert_eq!(cmd.len(), recorded.len(), "failed commit keeps the buffer");
                        cmd.clear(w.registry()).unwrap();
                        for r in &recorded {
                            if let Recorded::Create(p) = *r {
                                assert_eq!(cmd.resolve(p), None, "cleared before commit");
                                stale_provisionals.push(p);
                            }
                        }
                    }
                    (got, want) => panic!("commit: {got:?} vs {want:?} for {recorded:?}"),
                }
                recorded.clear();
                pending.clear();
                bytes = 0;
                // Only the last commit's provisionals resolve; older epochs never do, and a
                // buffer refuses to record against them.
                let last = stale_provisionals.len();
                for (k, &p) in stale_provisionals.iter().enumerate() {
                    let current = got_ok && k >= last - last_creates;
                    assert_eq!(
                        cmd.resolve(p).is_some(),
                        current,
                        "provisional {k} of {last}"
                    );
                    assert_eq!(
                        cmd.insert(w.registry(), p, C(1)),
                        Err(CommandError::ForeignProvisional)
                    );
                }
            }
            Op::SpawnBatch(n, a) => {
                let n = usize::from(n);
                let bundles = (0..n as u32).map(|k| (A(a.wrapping_add(k)), B(u64::from(k))));
                let mut out = [EntityId::NULL; 4];
                let got = w.spawn_batch_into(bundles, &mut out);
                if !m.structural && n > 0 {
                    assert_eq!(got, Err(WorldError::InvalidPhase));
                } else if m.alive.len() + m.retired + n > CAPACITY {
                    assert!(matches!(got, Err(WorldError::CapacityExhausted { .. })));
                } else if n > 0 {
                    assert_eq!(got, Ok(n));
                    // Bundle `k` took the slot the `k`-th create would have.
                    for k in 0..n as u32 {
                        let row = Row {
                            a: Some(A(a.wrapping_add(k))),
                            b: Some(B(u64::from(k))),
                            c: None,
                        };
                        let e = m.create(row);
                        assert_eq!(out[k as usize], e, "handle of bundle {k}");
                        assert_eq!(w.get::<B>(e), Some(&B(u64::from(k))), "bundle {k} at {e:?}");
                        assert!(!handles.contains(&e));
                        handles.push(e);
                    }
                }
            }
            Op::InsertBatchB(picks, v) => {
                let es: Vec<EntityId> = picks.iter().map(|&i| pick(&handles, i)).collect();
                let values: Vec<B> = (0..es.len() as u64).map(|k| B(v.wrapping_add(k))).collect();
                insert_batch(&mut w, &mut m, &es, &values, |row| &mut row.b);
                // A length mismatch is refused first, changing nothing.
                let short = &values[..values.len().saturating_sub(1)];
                let want = if !es.is_empty() {
                    Err(WorldError::LengthMismatch {
                        entities: es.len(),
                        values: es.len() - 1,
                    })
                } else if m.structural {
                    Ok(0)
                } else {
                    Err(WorldError::InvalidPhase)
                };
                assert_eq!(w.insert_batch(&es, short), want);
            }
            Op::RemoveBatchA(picks) => {
                let es: Vec<EntityId> = picks.iter().map(|&i| pick(&handles, i)).collect();
                remove_batch::<W, A>(&mut w, &mut m, &es, |row| &mut row.a);
            }
            Op::InsertBatchC(picks, v) => {
                let es: Vec<EntityId> = picks.iter().map(|&i| pick(&handles, i)).collect();
                let values: Vec<C> = (0..es.len() as u16).map(|k| C(v.wrapping_add(k))).collect();
                insert_batch(&mut w, &mut m, &es, &values, |row| &mut row.c);
            }
            Op::RemoveBatchC(picks) => {
                let es: Vec<EntityId> = picks.iter().map(|&i| pick(&handles, i)).collect();
                remove_batch::<W, C>(&mut w, &mut m, &es, |row| &mut row.c);
            }
            Op::Phase(open) => {
                if open {
                    w.begin_structural();
                } else {
                    w.end_structural();
                }
                m.structural = open;
            }
        }
        // Every structural change advanced the revision once: a create, a release, a value
        // joining or leaving a pool (a replacement is no change).
        revision += structural_changes(&before, &m.alive);
        assert_eq!(
            w.registry().structural_revision(),
            revision,
            "after {op_name}"
        );
        // Every handle ever seen (live, stale, foreign) reads exactly the model.
        for &e in &handles {
            let row = m.alive.get(&e).copied();
            assert_eq!(w.registry().is_alive(e), row.is_some(), "{e:?}");
            assert_eq!(
                w.registry().is_active(e),
                row.is_some() && !pending.contains(&e),
                "{e:?}"
            );
            let row = row.unwrap_or_default();
            assert_eq!(w.get::<A>(e).copied(), row.a);
            assert_eq!(w.get::<B>(e).copied(), row.b);
            assert_eq!(w.get::<C>(e).copied(), row.c);
        }
        assert_eq!(w.registry().len(), m.alive.len());
        assert_eq!(w.registry().retired(), m.retired);
        assert_eq!(w.registry().last_sequence(), m.last_sequence);
        for (&e, &seq) in &m.sequence {
            assert_eq!(
                w.registry().creation_sequence(e),
                Some(seq),
                "sequence of {e:?}"
            );
        }
        assert_eq!(
            w.pool::<A>().len(),
            m.alive.values().filter(|r| r.a.is_some()).count()
        );
        assert_eq!(
            w.pool::<B>().len(),
            m.alive.values().filter(|r| r.b.is_some()).count()
        );
        assert!(w.check_groups());
        assert!(w.check_pools());
        let both = m
            .alive
            .values()
            .filter(|r| r.a.is_some() && r.b.is_some())
            .count();
        assert_eq!(w.group_mut::<(A, B)>().0.len(), both);
        if let Some(n) = w.abc_len() {
            let all = m
                .alive
                .values()
                .filter(|r| r.a.is_some() && r.b.is_some() && r.c.is_some())
                .count();
            assert_eq!(n, all);
        }
    }
}

proptest! {
    #![proptest_config(crate::support::proptest_config(256, 4))]
    #[test]
    fn world_matches_model(ops in proptest::collection::vec(op(), 1..if cfg!(miri) { 40 } else { 200 })) {
        run::<World>(ops);
    }

    #[test]
    fn nested_groups_match_the_model(ops in proptest::collection::vec(op(), 1..if cfg!(miri) { 40 } else { 200 })) {
        run::<Nested>(ops);
    }
}
