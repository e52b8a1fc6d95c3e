//! Zero allocations after init, proven by an allocation domain's counters: a world, a command
//! buffer and a standalone registry + pool allocate from one `DomainAllocator`; after init the
//! domain's allocation count never moves, and dropping everything reconciles it to zero.

use bytemuck::{Pod, Zeroable};
use ludus::memory::AllocationDomain;
use ludus::world::WorldOps;
use ludus::world::{CommandBuffer, ComponentPool, EntityRegistry};
use ludus::EntityId;

/// Position.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Position([f32; 3]);
/// Velocity.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Velocity([f32; 3]);
/// Health.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Health(u32);

ludus::world! {
    struct Game { position: Position, velocity: Velocity, health: Health }
    groups { moving(position: Position, velocity: Velocity) }
}

#[test]
fn domain_counters_prove_zero_allocations_after_init() {
    let domain = AllocationDomain::register("world/zero-alloc-test").unwrap();
    let alloc = domain.allocator();
    const N: usize = if cfg!(miri) { 48 } else { 4096 };

    let mut game = Game::try_new_in(N, alloc).unwrap();
    let mut cmd = CommandBuffer::try_with_capacity_in(128, 2048, alloc).unwrap();
    let mut registry = EntityRegistry::try_with_capacity_in(N, alloc).unwrap();
    let mut pool = ComponentPool::<u64, _>::try_new_in(&mut registry, alloc).unwrap();
    let after_init = domain.usage();
    assert!(after_init.valid);
    assert!(after_init.live_blocks > 0 && after_init.live_bytes > 0);

    let mut ids = Vec::with_capacity(N); // test bookkeeping on the global allocator
    for round in 0..3u32 {
        ids.clear();
        // Batches: spawn_batch (fresh slots in bulk in round 0, reused ones later), insert_batch and
        // remove_batch (swap removal and compaction) allocate nothing either.
        let spawned = game
            .spawn_batch((0..N / 4).map(|i| (Position([i as f32; 3]), Health(round))))
            .unwrap();
        let batch: Vec<EntityId> = game.position.owners().iter().collect();
        assert_eq!(batch.len(), spawned);
        let velocities = vec![Velocity([2.0; 3]); batch.len()];
        game.insert_batch(&batch, &velocities).unwrap();
        game.remove_batch::<Health>(&batch[..4]).unwrap();
        game.remove_batch::<Health>(&batch).unwrap();
        for e in batch {
            game.destroy(e).unwrap();
        }

        while game.registry.available() > 8 {
            let e = if ids.len() % 2 == 0 {
                game.spawn((Position([1.0; 3]), Velocity([1.0; 3])))
                    .unwrap()
            } else {
                game.create().unwrap()
            };
            game.insert(e, Health(round)).unwrap();
            ids.push(e);
        }
        let (_, pos, vel) = game.moving();
        for (p, v) in pos.iter_mut().zip(vel.iter()) {
            p.0[0] += v.0[0];
        }
        for (_, (h, p)) in ludus::join((&mut game.health, &game.position)) {
            h.0 += p.0[0] as u32;
        }
        for e in ids.iter().take(16) {
            cmd.destroy(&game.registry, *e).unwrap();
        }
        let p = cmd.create().unwrap();
        cmd.insert(&game.registry, p, Health(7)).unwrap();
        cmd.remove::<Velocity, _>(&game.registry, ids[20]).unwrap();
        game.commit(&mut cmd).unwrap();
        for e in ids.iter().skip(16) {
            game.destroy(*e).unwrap();
        }
        game.destroy(cmd.resolve(p).unwrap()).unwrap();

        let mut batch = [EntityId::NULL; 8];
        registry.try_create_batch(&mut batch).unwrap();
        for e in batch {
            pool.insert(&mut registry, e, u64::from(round)).unwrap();
        }
        for e in batch {
            pool.remove(&mut registry, e).unwrap();
            registry.try_release(e).unwrap();
        }
        pool.insert_batch(&mut registry, &[], &[]).unwrap();
        assert_eq!(game.registry.len(), 0);
    }
    let after_work = domain.usage();
    assert_eq!(
        after_work.allocations, after_init.allocations,
        "no allocation after init"
    );
    assert_eq!(
        after_work.reallocations, after_init.reallocations,
        "no growth"
    );
    assert_eq!(after_work.live_bytes, after_init.live_bytes);
    assert_eq!(after_work.failures, 0);

    drop((game, cmd, pool, registry));
    let end = domain.usage();
    assert_eq!(
        (end.live_bytes, end.live_blocks),
        (0, 0),
        "every init block freed"
    );
    assert!(end.valid);
}
