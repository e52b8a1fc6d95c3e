//! The `world!` roster: destroy order, phases, groups, joins and commands.

use bytemuck::{Pod, Zeroable};
use ludus::world::WorldDiagnostics;
use ludus::world::WorldOps;
use ludus::world::{join, CommandBuffer, CommandError, InitError, Rejection, WorldError};
use ludus::EntityId;

/// 2-D position.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Position([f32; 2]);
/// 2-D velocity.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Velocity([f32; 2]);
/// Hit points.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Health(u32);

ludus::world! {
    /// Test world.
    pub struct Game {
        /// Positions.
        pub position: Position,
        /// Velocities.
        pub velocity: Velocity,
        /// Hit points.
        pub health: Health,
    }
    groups { moving(position: Position, velocity: Velocity) }
}

ludus::world! {
    struct Plain { hp: Health }
}

fn spawn(g: &mut Game, p: f32, v: Option<f32>) -> EntityId {
    let e = g.create().unwrap();
    g.insert(e, Position([p, 0.0])).unwrap();
    if let Some(v) = v {
        g.insert(e, Velocity([v, 0.0])).unwrap();
    }
    g.insert(e, Health(1)).unwrap();
    e
}

#[test]
fn destroy_removes_from_every_pool_then_releases() {
    let mut g = Game::try_new(8).unwrap();
    let a = spawn(&mut g, 1.0, Some(1.0));
    let b = spawn(&mut g, 2.0, None);
    g.destroy(a).unwrap();
    assert!(!g.registry.is_alive(a));
    assert_eq!(
        (g.position.len(), g.velocity.len(), g.health.len()),
        (1, 0, 1)
    );
    assert_eq!(g.get::<Position>(b), Some(&Position([2.0, 0.0])));
    assert_eq!(g.destroy(a), Err(WorldError::Rejected(Rejection::Free)));
    assert!(g.check_groups());
}

#[test]
fn structural_changes_refused_outside_the_phase() {
    let mut g = Game::try_new(4).unwrap();
    let e = spawn(&mut g, 0.0, Some(1.0));
    let rev = g.registry.structural_revision();
    g.end_structural();
    assert_eq!(g.create(), Err(WorldError::InvalidPhase));
    assert_eq!(g.destroy(e), Err(WorldError::InvalidPhase));
    assert_eq!(g.insert(e, Health(3)), Err(WorldError::InvalidPhase));
    assert_eq!(g.remove::<Velocity>(e), Err(WorldError::InvalidPhase));
    assert_eq!(g.registry.structural_revision(), rev);
    // Values stay writable.
    g.get_mut::<Health>(e).unwrap().0 = 9;
    assert_eq!(g.health.get(e), Some(&Health(9)));
    assert_eq!(g.moving().0.len(), 1);
    g.begin_structural();
    g.destroy(e).unwrap();
}

#[test]
fn systems_read_the_registry_while_writing_pools() {
    let mut g = Game::try_new(4).unwrap();
    let e = spawn(&mut g, 0.0, Some(2.0));
    g.end_structural();
    let registry = &g.registry;
    for (id, h) in g.health.iter_mut() {
        if registry.is_active(id) {
            h.0 += 1;
        }
    }
    assert_eq!(g.get::<Health>(e), Some(&Health(2)));
}

#[test]
fn owned_group_packs_and_unpacks() {
    let mut g = Game::try_new(16).unwrap();
    let a = spawn(&mut g, 1.0, None);
    let b = spawn(&mut g, 2.0, Some(20.0));
    let c = spawn(&mut g, 3.0, None);
    let d = spawn(&mut g, 4.0, Some(40.0));
    assert!(g.check_groups());
    {
        let (ids, pos, vel) = g.moving();
        assert_eq!(ids, &[b, d]);
        for (p, v) in pos.iter_mut().zip(vel.iter()) {
            p.0[0] += v.0[0];
        }
    }
    assert_eq!(g.get::<Position>(b), Some(&Position([22.0, 0.0])));
    assert_eq!(g.get::<Position>(d), Some(&Position([44.0, 0.0])));
    g.insert(a, Velocity([1.0, 0.0])).unwrap();
    assert_eq!(g.moving().0, &[b, d, a]);
    g.remove::<Position>(b).unwrap();
    assert!(g.check_groups());
    assert_eq!(g.moving().0.len(), 2);
    g.remove::<Health>(d).unwrap(); // not a member: group unchanged
    assert_eq!(g.moving().0.len(), 2);
    g.destroy(a).unwrap();
    assert_eq!(g.moving().0, &[d]);
    g.insert(c, Velocity([0.0, 0.0])).unwrap();
    g.insert(b, Position([0.0, 0.0])).unwrap();
    assert!(g.check_groups());
    let (ids, _, _) = g.moving();
    let mut ids: Vec<EntityId> = ids.iter().collect();
    ids.sort();
    let mut want = vec![b, c, d];
    want.sort();
    assert_eq!(ids, want);
}

#[test]
fn join_is_driven_by_the_smallest_pool() {
    let mut g = Game::try_new(16).unwrap();
    let es: Vec<EntityId> = (0..6)
        .map(|i| spawn(&mut g, i as f32, (i % 2 == 0).then_some(1.0)))
        .collect();
    let seen: Vec<EntityId> = join((&g.health, &g.velocity)).map(|(e, _)| e).collect();
    assert_eq!(g.velocity.owners(), &seen[..], "driver is velocity (3 < 6)");
    for (_, (p, v, h)) in join((&mut g.position, &g.velocity, &mut g.health)) {
        p.0[0] += v.0[0];
        h.0 += 1;
    }
    // The exclusive column drives (velocity is the smaller pool), and a hint miss falls back
    // to the sparse map (position was reordered by the group).
    for (_, (v, p)) in join((&mut g.velocity, &g.position)) {
        v.0[1] = p.0[0];
    }
    for (e, v) in g.velocity.iter() {
        assert_eq!(v.0[1], g.position.get(e).unwrap().0[0]);
    }
    for (i, e) in es.iter().enumerate() {
        let moved = i % 2 == 0;
        let want = i as f32 + if moved { 1.0 } else { 0.0 };
        assert_eq!(g.position.get(*e).unwrap().0[0], want);
        assert_eq!(g.health.get(*e).unwrap().0, 1 + moved as u32);
    }
}

#[test]
fn commit_applies_in_order_and_resolves_provisionals() {
    let mut g = Game::try_new(8).unwrap();
    let old = spawn(&mut g, 1.0, Some(1.0));
    let keep = spawn(&mut g, 2.0, None);
    let mut cmd = CommandBuffer::try_with_capacity(8, 64).unwrap();
    g.end_structural();
    let p = cmd.create().unwrap();
    cmd.insert(&g.registry, p, Health(5)).unwrap();
    cmd.insert(&g.registry, p, Position([9.0, 9.0])).unwrap();
    cmd.insert(&g.registry, keep, Velocity([3.0, 0.0])).unwrap();
    cmd.destroy(&g.registry, old).unwrap();
    assert!(g.registry.is_alive(old) && !g.registry.is_active(old));
    assert_eq!(
        g.get::<Health>(old),
        Some(&Health(1)),
        "pending keeps values"
    );
    assert_eq!(
        cmd.destroy(&g.registry, old),
        Err(CommandError::Rejected(Rejection::Pending))
    );
    assert_eq!(
        cmd.insert(&g.registry, old, Health(0)),
        Err(CommandError::Rejected(Rejection::Pending))
    );
    assert_eq!(g.commit(&mut cmd), Err(WorldError::InvalidPhase));
    g.begin_structural();
    g.commit(&mut cmd).unwrap();
    assert!(cmd.is_empty());
    let new = cmd.resolve(p).unwrap();
    assert_eq!(g.get::<Health>(new), Some(&Health(5)));
    assert_eq!(g.get::<Position>(new), Some(&Position([9.0, 9.0])));
    assert!(!g.registry.is_alive(old));
    assert_eq!(g.moving().0, &[keep]);
    // A provisional from an older epoch is refused.
    assert_eq!(
        cmd.insert(&g.registry, p, Health(1)),
        Err(CommandError::ForeignProvisional)
    );
}

#[test]
fn a_full_world_replaces_entities_in_one_commit() {
    let mut g = Game::try_new(2).unwrap();
    let a = spawn(&mut g, 1.0, None);
    let b = spawn(&mut g, 2.0, None);
    let mut cmd = CommandBuffer::try_with_capacity(8, 64).unwrap();
    // A create before any destroy finds no slot: refused, nothing applied.
    let early = cmd.create().unwrap();
    cmd.destroy(&g.registry, a).unwrap();
    assert!(matches!(
        g.commit(&mut cmd),
        Err(WorldError::CapacityExhausted { .. })
    ));
    cmd.clear(&g.registry).unwrap();
    assert_eq!(cmd.resolve(early), None);
    // Destroys first: each create takes the slot just freed (LIFO).
    cmd.destroy(&g.registry, a).unwrap();
    cmd.destroy(&g.registry, b).unwrap();
    let p = cmd.create().unwrap();
    cmd.insert(&g.registry, p, Health(9)).unwrap();
    let q = cmd.create().unwrap();
    g.commit(&mut cmd).unwrap();
    let (p, q) = (cmd.resolve(p).unwrap(), cmd.resolve(q).unwrap());
    assert_eq!((p.slot(), q.slot()), (b.slot(), a.slot()));
    assert_eq!(g.registry.len(), 2);
    assert_eq!(g.get::<Health>(p), Some(&Health(9)));
    assert!(!g.registry.is_alive(a) && !g.registry.is_alive(b));
}

#[test]
fn failed_commit_applies_nothing() {
    let mut g = Game::try_new(3).unwrap();
    let a = spawn(&mut g, 1.0, None);
    let b = spawn(&mut g, 2.0, None);
    let mut cmd = CommandBuffer::try_with_capacity(8, 64).unwrap();
    // Three creates, one free slot and one freed by the batch's destroy: preflight fails.
    cmd.insert(&g.registry, a, Velocity([1.0, 1.0])).unwrap();
    cmd.destroy(&g.registry, b).unwrap();
    let p1 = cmd.create().unwrap();
    cmd.insert(&g.registry, p1, Health(7)).unwrap();
    let _p2 = cmd.create().unwrap();
    let _p3 = cmd.create().unwrap();
    let rev = g.registry.structural_revision();
    assert!(matches!(
        g.commit(&mut cmd),
        Err(WorldError::CapacityExhausted { .. })
    ));
    assert_eq!(g.registry.structural_revision(), rev);
    assert_eq!((g.registry.len(), g.velocity.len()), (2, 0));
    assert!(g.registry.is_pending(b));
    assert_eq!(cmd.len(), 6, "buffer kept");
    // Clearing unmarks the pending destroy.
    cmd.clear(&g.registry).unwrap();
    assert!(g.registry.is_active(b));
    // A target destroyed behind the buffer's back fails the whole batch.
    cmd.insert(&g.registry, a, Velocity([1.0, 1.0])).unwrap();
    cmd.insert(&g.registry, b, Health(2)).unwrap();
    g.destroy(b).unwrap();
    let rev = g.registry.structural_revision();
    assert_eq!(
        g.commit(&mut cmd),
        Err(WorldError::Rejected(Rejection::Free))
    );
    assert_eq!(g.registry.structural_revision(), rev);
    assert_eq!(g.velocity.len(), 0);
    // A type the world does not store fails the whole batch.
    cmd.clear(&g.registry).unwrap();
    cmd.insert(&g.registry, a, Velocity([1.0, 1.0])).unwrap();
    cmd.insert(&g.registry, a, 5u8).unwrap();
    assert_eq!(g.commit(&mut cmd), Err(WorldError::UnknownComponent));
    assert_eq!(g.velocity.len(), 0);
    // Revision budget short: nothing applied.
    cmd.clear(&g.registry).unwrap();
    cmd.insert(&g.registry, a, Velocity([1.0, 1.0])).unwrap();
    cmd.destroy(&g.registry, a).unwrap();
    let reg_rev = u64::MAX - 2; // insert (1) + destroy (3 pools + 1) needs 5
    set_revision(&mut g, reg_rev);
    assert_eq!(g.commit(&mut cmd), Err(WorldError::RevisionExhausted));
    assert_eq!((g.velocity.len(), g.registry.is_alive(a)), (0, true));
}

fn set_revision(g: &mut Game, revision: u64) {
    let seq = g.registry.last_sequence();
    assert!(g.test_hook_advance_counters(seq, revision));
}

#[test]
fn bounded_buffer_refuses_when_full_and_marks_nothing() {
    let g = Game::try_new(4).unwrap();
    let mut g = g;
    let a = spawn(&mut g, 0.0, None);
    let mut cmd = CommandBuffer::try_with_capacity(1, 4).unwrap();
    assert_eq!(
        cmd.insert(&g.registry, a, Position([0.0, 0.0])),
        Err(CommandError::BufferFull {
            commands: 0,
            command_capacity: 1,
            bytes_requested: 8,
            bytes_free: 4
        }),
        "8 bytes > 4"
    );
    cmd.create().unwrap();
    assert_eq!(
        cmd.destroy(&g.registry, a),
        Err(CommandError::BufferFull {
            commands: 1,
            command_capacity: 1,
            bytes_requested: 0,
            bytes_free: 4
        })
    );
    assert!(g.registry.is_active(a), "refused destroy marks nothing");
}

#[test]
fn overlapping_groups_are_an_init_error() {
    ludus::world! {
        struct Bad { a: Health, b: Position }
        groups { one(a: Health, b: Position), two(b: Position, a: Health) }
    }
    assert_eq!(Bad::try_new(4).err(), Some(InitError::GroupOverlap));
    ludus::world! {
        struct Crossing { a: Health, b: Position, c: Velocity }
        groups { one(a: Health, b: Position), two(b: Position, c: Velocity) }
    }
    assert_eq!(Crossing::try_new(4).err(), Some(InitError::GroupOverlap));
    ludus::world! {
        struct Twice { a: Health, b: Position }
        groups { one(a: Health, b: Position, a2: Health) }
    }
    assert_eq!(Twice::try_new(4).err(), Some(InitError::GroupOverlap));
    // Nested groups (one's members a strict subset of the other's) are fine, in any order.
    ludus::world! {
        struct Nested { a: Health, b: Position, c: Velocity }
        groups { abc(a: Health, b: Position, c: Velocity), ab(a: Health, b: Position) }
    }
    assert!(Nested::try_new(4).is_ok());
    let p = Plain::try_new(2).unwrap();
    assert_eq!(p.hp.len(), 0);
}

#[test]
fn spawn_checks_once_and_joins_groups() {
    let mut g = Game::try_new(2).unwrap();
    let e = g
        .spawn((Position([1.0, 0.0]), Velocity([2.0, 0.0]), Health(3)))
        .unwrap();
    assert_eq!(g.registry.structural_revision(), 4);
    assert_eq!(g.moving().0, &[e]);
    assert_eq!(g.get::<Health>(e), Some(&Health(3)));
    g.end_structural();
    assert_eq!(g.spawn((Health(1),)), Err(WorldError::InvalidPhase));
    g.begin_structural();
    g.spawn((Health(1),)).unwrap();
    assert!(matches!(
        g.spawn((Health(1),)),
        Err(WorldError::CapacityExhausted { .. })
    ));
    assert_eq!(g.health.len(), 2);
    let mut g = Game::try_new(2).unwrap();
    set_revision(&mut g, u64::MAX - 2);
    assert_eq!(
        g.spawn((Position([0.0; 2]), Velocity([0.0; 2]), Health(0))),
        Err(WorldError::RevisionExhausted)
    );
    assert_eq!((g.registry.len(), g.position.len()), (0, 0));
}

#[test]
fn spawn_batch_is_all_or_nothing() {
    let mut g = Game::try_new(4).unwrap();
    let too_many = (0..5).map(|i| (Health(i), Position([i as f32, 0.0])));
    assert!(matches!(
        g.spawn_batch(too_many),
        Err(WorldError::CapacityExhausted { .. })
    ));
    assert_eq!((g.registry.len(), g.health.len()), (0, 0));
    let n = g
        .spawn_batch((0..3).map(|i| (Position([i as f32, 0.0]), Velocity([1.0, 0.0]))))
        .unwrap();
    assert_eq!(n, 3);
    assert_eq!(g.moving().0.len(), 3);
    assert_eq!(g.registry.structural_revision(), 9);
    assert!(g.check_groups());
}

/// An iterator whose `len` promises more than it yields.
struct Liar(std::ops::Range<u32>, usize);

impl Iterator for Liar {
    type Item = (Health,);
    fn next(&mut self) -> Option<(Health,)> {
        self.0.next().map(|i| (Health(i),))
    }
}

impl ExactSizeIterator for Liar {
    fn len(&self) -> usize {
        self.0.len() + self.1
    }
}

#[test]
fn spawn_batch_publishes_only_what_the_iterator_yields() {
    let mut w = Plain::try_new(8).unwrap();
    assert_eq!(w.spawn_batch(Liar(0..2, 3)), Ok(2));
    assert_eq!(
        (w.registry.len(), w.hp.values()),
        (2, &[Health(0), Health(1)][..])
    );
    // Budgets are checked against the promised length: 5 + 2 > 6 free slots is refused.
    assert!(matches!(
        w.spawn_batch(Liar(0..2, 5)),
        Err(WorldError::CapacityExhausted { .. })
    ));
    assert_eq!(w.registry.len(), 2);
}

#[test]
fn spawn_batch_panicking_iterator_publishes_no_fresh_entity() {
    let mut w = Plain::try_new(8).unwrap();
    let a = w.spawn((Health(1),)).unwrap();
    w.destroy(a).unwrap(); // one free slot: the batch reuses it first, one at a time
    let rev = w.registry.structural_revision();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        w.spawn_batch((0..4).map(|i| {
            assert!(i < 2, "bundle {i}");
            (Health(i),)
        }))
    }));
    assert!(caught.is_err());
    // The reused slot was spawned before the panic; the fresh part was never published.
    assert_eq!(w.registry.len(), 1);
    assert_eq!(w.hp.len(), 1);
    assert_eq!(w.registry.structural_revision(), rev + 2);
    let e = w.hp.owners().get(0).unwrap();
    assert_eq!((e.slot(), w.get::<Health>(e)), (a.slot(), Some(&Health(0))));
    assert_eq!(w.spawn_batch((0..3).map(|i| (Health(10 + i),))), Ok(3));
    assert_eq!(
        w.hp.values(),
        &[Health(0), Health(10), Health(11), Health(12)]
    );
}

#[test]
fn spawn_batch_keeps_groups_packed() {
    let mut g = Game::try_new(16).unwrap();
    let lone = g.spawn((Position([9.0, 0.0]),)).unwrap();
    let n = g
        .spawn_batch((0..5).map(|i| (Position([i as f32, 0.0]), Velocity([1.0, 0.0]))))
        .unwrap();
    assert_eq!(n, 5);
    assert!(g.check_groups());
    let (ids, ps, vs) = g.moving();
    assert_eq!((ids.len(), ps.len(), vs.len()), (5, 5, 5));
    assert!(!ids.iter().any(|e| e == lone));
}

#[test]
fn world_batches_keep_groups_packed() {
    let mut g = Game::try_new(16).unwrap();
    let es: Vec<EntityId> = (0..6).map(|i| spawn(&mut g, i as f32, None)).collect();
    let vs = vec![Velocity([1.0, 1.0]); 4];
    assert_eq!(g.insert_batch(&es[1..5], &vs), Ok(4));
    assert!(g.check_groups());
    assert_eq!(g.moving().0.len(), 4);
    assert_eq!(g.remove_batch::<Position>(&[es[2], es[5]]), Ok(2));
    assert!(g.check_groups());
    assert_eq!(g.moving().0.len(), 3);
    g.destroy(es[1]).unwrap();
    assert_eq!(
        g.remove_batch::<Velocity>(&[es[3], es[1]]),
        Err(WorldError::Rejected(Rejection::Free))
    );
    assert_eq!(g.moving().0.len(), 2, "a refused batch changes nothing");
}

#[test]
fn spawn_batch_into_hands_out_the_handles() {
    let mut g = Game::try_new(8).unwrap();
    let a = spawn(&mut g, 0.0, Some(1.0));
    g.destroy(a).unwrap();
    let mut short = [EntityId::NULL; 2];
    let bundles = || (0..3).map(|i| (Position([i as f32, 0.0]), Velocity([1.0, 0.0])));
    assert_eq!(
        g.spawn_batch_into(bundles(), &mut short),
        Err(WorldError::LengthMismatch {
            entities: 2,
            values: 3
        })
    );
    assert_eq!(short, [EntityId::NULL; 2], "untouched");
    let mut out = [EntityId::NULL; 4];
    assert_eq!(g.spawn_batch_into(bundles(), &mut out), Ok(3));
    assert_eq!(out[0].slot(), a.slot(), "the released slot first");
    for (i, &e) in out[..3].iter().enumerate() {
        assert_eq!(g.get::<Position>(e), Some(&Position([i as f32, 0.0])));
    }
    assert_eq!(out[3], EntityId::NULL);
    assert_eq!(g.moving().0.len(), 3);
    assert!(g.check_groups());
}

#[test]
fn one_command_spawns_a_whole_bundle() {
    let mut g = Game::try_new(4).unwrap();
    let mut cmd = CommandBuffer::try_with_capacity(4, 64).unwrap();
    g.end_structural();
    let p = cmd
        .spawn(
            &g.registry,
            (Position([1.0, 2.0]), Velocity([3.0, 4.0]), Health(5)),
        )
        .unwrap();
    assert_eq!(cmd.len(), 4, "one create and three inserts");
    // Refused all or nothing: no room for 1 + 2 more commands, a type named twice.
    assert!(matches!(
        cmd.spawn(&g.registry, (Health(1), Health(2))),
        Err(CommandError::DuplicateComponent { .. })
    ));
    assert!(matches!(
        cmd.spawn(&g.registry, (Health(1), Velocity([0.0, 0.0]))),
        Err(CommandError::BufferFull { .. })
    ));
    assert_eq!(cmd.len(), 4);
    g.begin_structural();
    g.commit(&mut cmd).unwrap();
    let e = cmd.resolve(p).unwrap();
    assert_eq!(g.get::<Velocity>(e), Some(&Velocity([3.0, 4.0])));
    assert_eq!(g.get::<Health>(e), Some(&Health(5)));
    assert_eq!(g.moving().0, &[e]);
}

ludus::world! {
    /// Component fields named like the durable layer's parts: the macro reserves only
    /// `registry`.
    pub struct Named {
        /// A field called `durable`.
        pub durable: Health,
        /// A field called `hooks`.
        pub hooks: Position,
    }
    durable
}

#[test]
fn field_names_other_than_registry_are_free() {
    use ludus::durable::{DurableConfig, DurableRoster};
    let mut w = Named::try_new_durable(4, DurableConfig::default()).unwrap();
    let e = w.spawn((Health(3), Position([1.0, 2.0]))).unwrap();
    assert_eq!(w.durable.get(e), Some(&Health(3)));
    assert_eq!(w.hooks.get(e), Some(&Position([1.0, 2.0])));
    assert_eq!(w.durable().bindings().len(), 0);
}
