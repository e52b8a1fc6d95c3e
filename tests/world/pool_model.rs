//! Property test: a standalone `ComponentPool` against a per-slot model, including the misuse a
//! world never allows (releasing an entity that still holds a value), so stale entries, reuse in
//! place, stale sparse indices, swap removal and batch compaction all meet stale and foreign
//! handles. Every handle ever seen must read exactly what the model says.

use std::collections::HashMap;

use ludus::world::{ComponentPool, EntityRegistry, WorldError};
use ludus::EntityId;
use proptest::prelude::*;

const CAPACITY: usize = 6;

#[derive(Debug, Clone)]
enum Op {
    Create,
    /// Release through the registry only: the pool keeps a stale entry.
    Release(usize),
    Insert(usize, u32),
    Remove(usize),
    InsertBatch(Vec<usize>, u32),
    RemoveBatch(Vec<usize>),
}

fn op() -> impl Strategy<Value = Op> {
    let picks = || proptest::collection::vec(any::<usize>(), 0..6);
    prop_oneof![
        3 => Just(Op::Create),
        2 => any::<usize>().prop_map(Op::Release),
        4 => (any::<usize>(), any::<u32>()).prop_map(|(i, v)| Op::Insert(i, v)),
        3 => any::<usize>().prop_map(Op::Remove),
        2 => (picks(), any::<u32>()).prop_map(|(p, v)| Op::InsertBatch(p, v)),
        2 => picks().prop_map(Op::RemoveBatch),
    ]
}

/// The pool as a model: per slot, the generation of the stored entry and its value.
type Model = HashMap<u32, (u32, u32)>;

fn pick(handles: &[EntityId], i: usize) -> EntityId {
    handles
        .get(i % handles.len().max(1))
        .copied()
        .unwrap_or(EntityId::NULL)
}

/// What an insert of `e` does to the model: the previous value and whether `e` joined.
fn model_insert(m: &mut Model, e: EntityId, v: u32) -> (Option<u32>, bool) {
    match m.insert(e.slot(), (e.generation(), v)) {
        Some((g, old)) if g == e.generation() => (Some(old), false),
        _ => (None, true),
    }
}

fn model_remove(m: &mut Model, e: EntityId) -> Option<u32> {
    match m.get(&e.slot()) {
        Some(&(g, v)) if g == e.generation() => {
            m.remove(&e.slot());
            Some(v)
        }
        _ => None,
    }
}

fn run(ops: Vec<Op>) {
    let mut reg = EntityRegistry::try_with_capacity(CAPACITY).unwrap();
    let mut other = EntityRegistry::try_with_capacity(CAPACITY).unwrap();
    let mut pool = ComponentPool::<u32>::try_new(&mut reg).unwrap();
    let mut model = Model::new();
    let foreign = other.try_create().unwrap();
    let mut handles = vec![foreign];
    for op in ops {
        match op {
            Op::Create => {
                if let Ok(e) = reg.try_create() {
                    handles.push(e);
                }
            }
            Op::Release(i) => {
                let e = pick(&handles, i);
                let _ = reg.try_release(e);
            }
            Op::Insert(i, v) => {
                let e = pick(&handles, i);
                match pool.insert(&mut reg, e, v) {
                    Ok(prev) => {
                        assert!(reg.is_alive(e));
                        assert_eq!(prev, model_insert(&mut model, e, v).0, "insert {e:?}");
                    }
                    Err(_) => assert!(!reg.is_alive(e), "refused a live {e:?}"),
                }
            }
            Op::Remove(i) => {
                let e = pick(&handles, i);
                match pool.remove(&mut reg, e) {
                    Ok(prev) => assert_eq!(prev, model_remove(&mut model, e), "remove {e:?}"),
                    Err(_) => assert!(!reg.is_alive(e), "refused a live {e:?}"),
                }
            }
            Op::InsertBatch(picks, v) => {
                let es: Vec<EntityId> = picks.iter().map(|&i| pick(&handles, i)).collect();
                let vs: Vec<u32> = (0..es.len() as u32).map(|k| v.wrapping_add(k)).collect();
                let all_alive = es.iter().all(|&e| reg.is_alive(e));
                match pool.insert_batch(&mut reg, &es, &vs) {
                    Ok(joined) => {
                        assert!(all_alive);
                        let want = es
                            .iter()
                            .zip(&vs)
                            .filter(|&(&e, &v)| model_insert(&mut model, e, v).1)
                            .count();
                        assert_eq!(joined, want);
                    }
                    Err(err) => {
                        assert!(!all_alive, "{err:?}");
                        assert!(matches!(err, WorldError::Rejected(_)), "{err:?}");
                    }
                }
            }
            Op::RemoveBatch(picks) => {
                let es: Vec<EntityId> = picks.iter().map(|&i| pick(&handles, i)).collect();
                let all_alive = es.iter().all(|&e| reg.is_alive(e));
                match pool.remove_batch(&mut reg, &es) {
                    Ok(removed) => {
                        assert!(all_alive);
                        let want = es
                            .iter()
                            .filter(|&&e| model_remove(&mut model, e).is_some())
                            .count();
                        assert_eq!(removed, want);
                    }
                    Err(err) => assert!(!all_alive, "{err:?}"),
                }
            }
        }
        // Every handle ever seen reads exactly the model; the dense arrays hold exactly the
        // model's entries, stale ones included.
        for &e in &handles {
            let want = match model.get(&e.slot()) {
                Some(&(g, v)) if g == e.generation() && e.owner() == reg.owner() => Some(v),
                _ => None,
            };
            assert_eq!(pool.get(e).copied(), want, "get {e:?}");
            assert_eq!(pool.contains(e), want.is_some());
            if let Some(i) = pool.dense_index(e) {
                assert_eq!(pool.owners().get(i), Some(e));
            }
        }
        assert_eq!(pool.len(), model.len());
        assert!(
            pool.check_index(),
            "sparse map, bitset or order fact inexact"
        );
        let mut stored: Vec<(u32, u32, u32)> = pool
            .iter()
            .map(|(e, &v)| (e.slot(), e.generation(), v))
            .collect();
        stored.sort_unstable();
        let mut want: Vec<(u32, u32, u32)> = model.iter().map(|(&s, &(g, v))| (s, g, v)).collect();
        want.sort_unstable();
        assert_eq!(stored, want);
    }
}

proptest! {
    #![proptest_config(crate::support::proptest_config(512, 4))]
    #[test]
    fn pool_matches_model_with_stale_entries(
        ops in proptest::collection::vec(op(), 1..if cfg!(miri) { 40 } else { 80 })
    ) {
        run(ops);
    }
}
