//! Pool contracts: full-owner lookups, swap removal, phases, foreign pools.

use ludus::world::{ComponentPool, EntityRegistry, Rejection, WorldError};
use ludus::EntityId;

#[test]
fn insert_get_replace_remove_swap() {
    let mut reg = EntityRegistry::try_with_capacity(8).unwrap();
    let mut pool = ComponentPool::<u64>::try_new(&mut reg).unwrap();
    let es: Vec<EntityId> = (0..4).map(|_| reg.try_create().unwrap()).collect();
    for (i, e) in es.iter().enumerate() {
        assert_eq!(pool.insert(&mut reg, *e, i as u64 * 10).unwrap(), None);
    }
    assert_eq!(pool.insert(&mut reg, es[2], 99).unwrap(), Some(20));
    assert_eq!(pool.values(), &[0, 10, 99, 30]);
    assert_eq!(pool.owners(), &es[..]);
    // Swap removal: the last element moves into the hole.
    assert_eq!(pool.remove(&mut reg, es[1]).unwrap(), Some(10));
    assert_eq!(pool.values(), &[0, 30, 99]);
    assert_eq!(pool.owners(), &[es[0], es[3], es[2]]);
    assert_eq!(pool.get(es[3]), Some(&30));
    assert_eq!(pool.dense_index(es[3]), Some(1));
    assert_eq!(pool.get(es[1]), None);
    assert_eq!(pool.remove(&mut reg, es[1]).unwrap(), None);
    *pool.get_mut(es[0]).unwrap() += 1;
    assert_eq!(pool.get(es[0]), Some(&1));
    // Removing the last element.
    assert_eq!(pool.remove(&mut reg, es[2]).unwrap(), Some(99));
    assert_eq!(pool.owners(), &[es[0], es[3]]);
}

#[test]
fn stale_and_foreign_handles_never_read_another_entity() {
    let mut reg = EntityRegistry::try_with_capacity(2).unwrap();
    let mut other = EntityRegistry::try_with_capacity(2).unwrap();
    let mut pool = ComponentPool::<u32>::try_new(&mut reg).unwrap();
    let old = reg.try_create().unwrap();
    pool.insert(&mut reg, old, 1).unwrap();
    pool.remove(&mut reg, old).unwrap();
    reg.try_release(old).unwrap();
    let new = reg.try_create().unwrap();
    assert_eq!(new.slot(), old.slot());
    pool.insert(&mut reg, new, 2).unwrap();
    assert_eq!(pool.get(old), None, "stale handle");
    assert_eq!(pool.get(new), Some(&2));
    let foreign = other.try_create().unwrap();
    let forged = EntityId::from_raw_parts(foreign.owner(), new.slot(), new.generation());
    assert_eq!(pool.get(forged), None, "foreign owner");
    assert!(!pool.contains(forged));
    let zero_gen = EntityId::from_raw_parts(reg.owner(), 1, 0);
    assert_eq!(pool.get(zero_gen), None, "absent slot, generation 0");
    assert_eq!(
        pool.get(EntityId::from_raw_parts(reg.owner(), 77, 1)),
        None,
        "out of range"
    );
    assert_eq!(
        pool.insert(&mut reg, forged, 5),
        Err(WorldError::Rejected(Rejection::ForeignOwner))
    );
    assert_eq!(
        pool.insert(&mut other, foreign, 5),
        Err(WorldError::ForeignPool)
    );
    assert_eq!(pool.values(), &[2]);
}

#[test]
fn entity_released_without_leaving_the_pool_is_not_visible_to_its_successor() {
    let mut reg = EntityRegistry::try_with_capacity(1).unwrap();
    let mut pool = ComponentPool::<u32>::try_new(&mut reg).unwrap();
    let old = reg.try_create().unwrap();
    pool.insert(&mut reg, old, 7).unwrap();
    reg.try_release(old).unwrap(); // misuse: the pool still holds `old`
    let new = reg.try_create().unwrap();
    assert_eq!(pool.get(new), None);
    assert!(!pool.contains(new));
    assert_eq!(pool.insert(&mut reg, new, 8).unwrap(), None);
    assert_eq!(
        (pool.len(), pool.get(new), pool.get(old)),
        (1, Some(&8), None)
    );
    assert_eq!(pool.owners(), &[new]);
}

#[test]
fn membership_changes_need_the_structural_phase_and_a_live_entity() {
    let mut reg = EntityRegistry::try_with_capacity(2).unwrap();
    let mut pool = ComponentPool::<u32>::try_new(&mut reg).unwrap();
    let e = reg.try_create().unwrap();
    pool.insert(&mut reg, e, 1).unwrap();
    reg.set_structural_phase(false);
    assert_eq!(pool.insert(&mut reg, e, 2), Err(WorldError::InvalidPhase));
    assert_eq!(pool.remove(&mut reg, e), Err(WorldError::InvalidPhase));
    *pool.get_mut(e).unwrap() = 3; // value mutation is allowed in every phase
    pool.values_mut()[0] += 1;
    reg.set_structural_phase(true);
    assert_eq!(pool.get(e), Some(&4));
    let dead = reg.try_create().unwrap();
    reg.try_release(dead).unwrap();
    assert_eq!(
        pool.insert(&mut reg, dead, 1),
        Err(WorldError::Rejected(Rejection::Free))
    );
    let rev = reg.structural_revision();
    assert!(reg.test_hook_advance_counters(reg.last_sequence(), u64::MAX));
    assert_eq!(pool.remove(&mut reg, e), Err(WorldError::RevisionExhausted));
    assert_eq!(pool.get(e), Some(&4));
    assert!(rev < u64::MAX);
}

#[test]
fn iteration_is_dense_order() {
    let mut reg = EntityRegistry::try_with_capacity(4).unwrap();
    let mut pool = ComponentPool::<u8>::try_new(&mut reg).unwrap();
    let es: Vec<EntityId> = (0..3).map(|_| reg.try_create().unwrap()).collect();
    for (i, e) in es.iter().enumerate().rev() {
        pool.insert(&mut reg, *e, i as u8).unwrap();
    }
    let seen: Vec<(EntityId, u8)> = pool.iter().map(|(e, v)| (e, *v)).collect();
    assert_eq!(seen, vec![(es[2], 2), (es[1], 1), (es[0], 0)]);
    for (_, v) in pool.iter_mut() {
        *v *= 2;
    }
    assert_eq!(pool.values(), &[4, 2, 0]);
}

#[test]
fn batches_apply_all_or_nothing() {
    let mut reg = EntityRegistry::try_with_capacity(8).unwrap();
    let mut other = EntityRegistry::try_with_capacity(8).unwrap();
    let mut pool = ComponentPool::<u32>::try_new(&mut reg).unwrap();
    let es: Vec<EntityId> = (0..4).map(|_| reg.try_create().unwrap()).collect();
    pool.insert(&mut reg, es[1], 7).unwrap();
    let dead = reg.try_create().unwrap();
    reg.try_release(dead).unwrap();
    let rev = reg.structural_revision();
    // One dead entity anywhere in the batch: nothing changes.
    let with_dead = [es[0], es[2], dead];
    assert_eq!(
        pool.insert_batch(&mut reg, &with_dead, &[1, 2, 3]),
        Err(WorldError::Rejected(Rejection::Free))
    );
    assert_eq!(
        pool.remove_batch(&mut reg, &[es[1], dead]),
        Err(WorldError::Rejected(Rejection::Free))
    );
    assert_eq!(
        pool.insert_batch(&mut reg, &es, &[1, 2]),
        Err(WorldError::LengthMismatch {
            entities: 4,
            values: 2
        })
    );
    let foreign = other.try_create().unwrap();
    assert_eq!(
        pool.insert_batch(&mut other, &[foreign], &[1]),
        Err(WorldError::ForeignPool)
    );
    reg.set_structural_phase(false);
    assert_eq!(
        pool.remove_batch(&mut reg, &es),
        Err(WorldError::InvalidPhase)
    );
    reg.set_structural_phase(true);
    assert_eq!((pool.values(), reg.structural_revision()), (&[7][..], rev));
    // A repeated entity keeps its last value; only joins advance the revision.
    let batch = [es[0], es[1], es[0], es[3]];
    assert_eq!(pool.insert_batch(&mut reg, &batch, &[1, 2, 3, 4]), Ok(2));
    assert_eq!(reg.structural_revision(), rev + 2);
    let got: Vec<Option<u32>> = es.iter().map(|&e| pool.get(e).copied()).collect();
    assert_eq!(got, [Some(3), Some(2), None, Some(4)]);
    assert_eq!(
        pool.remove_batch(&mut reg, &[es[3], es[2], es[3], es[1]]),
        Ok(2)
    );
    assert_eq!(pool.owners(), &[es[0]]);
    assert_eq!(reg.structural_revision(), rev + 4);
}

#[test]
fn owners_view_names_every_dense_entry() {
    let mut reg = EntityRegistry::try_with_capacity(4).unwrap();
    let mut pool = ComponentPool::<u8>::try_new(&mut reg).unwrap();
    let es: Vec<EntityId> = (0..3).map(|_| reg.try_create().unwrap()).collect();
    for &e in es.iter().rev() {
        pool.insert(&mut reg, e, 0).unwrap();
    }
    let owners = pool.owners();
    assert_eq!((owners.len(), owners.owner()), (3, reg.owner()));
    assert_eq!(owners.get(0), Some(es[2]));
    assert_eq!(owners.get(3), None);
    assert_eq!(owners.iter().rev().collect::<Vec<_>>(), es);
    assert_eq!(owners.keys()[1], ludus::world::EntityKey::of(es[1]));
    assert_eq!(
        format!("{owners:?}"),
        format!("{:?}", [es[2], es[1], es[0]])
    );
}

mod update_select {
    use super::*;
    use ludus::world::SELECT_BLOCK;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(crate::support::proptest_config(256, 4))]

        /// Against the obvious loop over `iter_mut`: the same values afterwards and the same
        /// owners selected, in dense order, over pools of several blocks and a partial one,
        /// scrambled by removals.
        #[test]
        fn equals_the_plain_loop(
            n in 0usize..(3 * SELECT_BLOCK + 9),
            removed in proptest::collection::vec(any::<usize>(), 0..40),
            modulus in 1u32..40,
        ) {
            let mut reg = EntityRegistry::try_with_capacity(n.max(1)).unwrap();
            let mut pool = ComponentPool::<u32>::try_new(&mut reg).unwrap();
            let es: Vec<EntityId> = (0..n).map(|_| reg.try_create().unwrap()).collect();
            for (i, &e) in es.iter().enumerate() {
                pool.insert(&mut reg, e, (i as u32).wrapping_mul(2_654_435_761)).unwrap();
            }
            for &r in &removed {
                if let Some(&e) = es.get(r % n.max(1)) {
                    pool.remove(&mut reg, e).unwrap();
                }
            }
            let step = |v: &mut u32| {
                *v = v.wrapping_mul(3).wrapping_add(1);
                *v % modulus == 0
            };
            let mut want_values: Vec<u32> = pool.values().to_vec();
            let want: Vec<EntityId> = pool
                .owners()
                .iter()
                .zip(want_values.iter_mut())
                .filter_map(|(e, v)| step(v).then_some(e))
                .collect();
            let mut got = Vec::new();
            pool.update_select(step, |e| got.push(e));
            prop_assert_eq!(pool.values(), &want_values[..]);
            prop_assert_eq!(got, want);
        }
    }
}
