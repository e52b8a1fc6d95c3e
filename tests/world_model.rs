//! Property test: registry + pools + an owned group against a `HashMap` model over random
//! operation sequences, with live, stale and foreign handles.

use std::collections::HashMap;

use bytemuck::{Pod, Zeroable};
use ludus::identity::TERMINAL_GENERATION;
use ludus::world::WorldError;
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

const CAPACITY: usize = 6;

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

fn run(ops: Vec<Op>) {
    let mut w = World::try_new(CAPACITY).unwrap();
    let mut foreign = World::try_new(CAPACITY).unwrap();
    // Slot 1 starts two steps before the terminal generation, so retirement happens.
    let registry = ludus::world::ReadOnly::__get_mut(&mut w.registry);
    assert!(registry.test_hook_set_free_generation(1, TERMINAL_GENERATION - 1));
    let f = foreign.create().unwrap();
    foreign.insert(f, A(1)).unwrap();
    foreign.insert(f, B(1)).unwrap();

    let mut m = Model {
        alive: HashMap::new(),
        retired: 0,
        structural: true,
    };
    let mut handles: Vec<EntityId> = vec![f];
    for op in ops {
        match op {
            Op::Create => {
                let got = w.create();
                if !m.structural {
                    assert_eq!(got, Err(WorldError::InvalidPhase));
                } else if m.alive.len() + m.retired == CAPACITY {
                    assert_eq!(got, Err(WorldError::CapacityExhausted));
                } else {
                    let e = got.unwrap();
                    assert!(!handles.contains(&e), "fresh handle {e:?}");
                    handles.push(e);
                    m.alive.insert(e, Row::default());
                }
            }
            Op::Spawn(a, b) => {
                let got = w.spawn((A(a), B(b)));
                if !m.structural {
                    assert_eq!(got, Err(WorldError::InvalidPhase));
                } else if m.alive.len() + m.retired == CAPACITY {
                    assert_eq!(got, Err(WorldError::CapacityExhausted));
                } else {
                    let e = got.unwrap();
                    assert!(!handles.contains(&e), "fresh handle {e:?}");
                    handles.push(e);
                    let row = Row {
                        a: Some(A(a)),
                        b: Some(B(b)),
                        c: None,
                    };
                    m.alive.insert(e, row);
                }
            }
            Op::Destroy(i) => {
                let e = pick(&handles, i);
                match (w.destroy(e), expect_change(&m, e)) {
                    (Ok(()), Ok(())) => {
                        m.alive.remove(&e);
                        if e.generation() == TERMINAL_GENERATION {
                            m.retired += 1;
                        }
                    }
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
            Op::Phase(open) => {
                if open {
                    w.begin_structural();
                } else {
                    w.end_structural();
                }
                m.structural = open;
            }
        }
        // Every handle ever seen (live, stale, foreign) reads exactly the model.
        for &e in &handles {
            let row = m.alive.get(&e).copied();
            assert_eq!(w.registry.is_alive(e), row.is_some(), "{e:?}");
            let row = row.unwrap_or_default();
            assert_eq!(w.get::<A>(e).copied(), row.a);
            assert_eq!(w.get::<B>(e).copied(), row.b);
            assert_eq!(w.get::<C>(e).copied(), row.c);
        }
        assert_eq!(w.registry.len(), m.alive.len());
        assert_eq!(w.registry.retired(), m.retired);
        assert_eq!(
            w.a.len(),
            m.alive.values().filter(|r| r.a.is_some()).count()
        );
        assert_eq!(
            w.b.len(),
            m.alive.values().filter(|r| r.b.is_some()).count()
        );
        assert!(w.check_groups());
        let both = m
            .alive
            .values()
            .filter(|r| r.a.is_some() && r.b.is_some())
            .count();
        assert_eq!(w.ab().0.len(), both);
    }
}

fn config() -> ProptestConfig {
    let mut config = ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 256 },
        ..ProptestConfig::default()
    };
    if cfg!(miri) {
        config.failure_persistence = None; // Miri's isolation forbids the file system
    }
    config
}

proptest! {
    #![proptest_config(config())]
    #[test]
    fn world_matches_model(ops in proptest::collection::vec(op(), 1..if cfg!(miri) { 40 } else { 200 })) {
        run(ops);
    }
}
