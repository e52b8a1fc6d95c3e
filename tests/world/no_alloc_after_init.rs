//! Zero allocations after init: a world and a command buffer do all their work (creates,
//! batches, inserts, removes, group and join iteration, commits, destroys) without a call to
//! their allocator, proven once with a counting allocator and once with an allocation domain's
//! counters (a standalone registry and pool too); dropping everything frees every init block.

use allocator_api2::alloc::{AllocError, Allocator, Global, Layout};
use core::ptr::NonNull;
use ludus::world::WorldOps;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytemuck::{Pod, Zeroable};
use ludus::memory::AllocationDomain;
use ludus::world::{CommandBuffer, ComponentPool, EntityRegistry};
use ludus::EntityId;

use crate::support::{Health, Position, Velocity};

/// Counts every allocation, growth, shrink and deallocation routed through it.
#[derive(Clone, Default)]
struct CountingAllocator {
    calls: Arc<AtomicUsize>,
}

impl CountingAllocator {
    fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }
}

// SAFETY: every method forwards to `Global` with the caller's arguments, so `Global`'s
// guarantees (valid, correctly sized and aligned blocks; frees of its own blocks) carry over.
unsafe impl Allocator for CountingAllocator {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        Global.allocate(layout)
    }
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `Global` with `layout` (see `allocate`).
        unsafe { Global.deallocate(ptr, layout) }
    }
    unsafe fn grow(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded caller obligations.
        unsafe { Global.grow(ptr, old, new) }
    }
    unsafe fn shrink(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded caller obligations.
        unsafe { Global.shrink(ptr, old, new) }
    }
}

/// A 4x4 matrix.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Transform([f32; 16]);

ludus::world! {
    struct Scene { transform: Transform, position: Position, velocity: Velocity }
    groups { moving(position: Position, velocity: Velocity) }
}

ludus::world! {
    struct Game { position: Position, velocity: Velocity, health: Health }
    groups { moving(position: Position, velocity: Velocity) }
}

#[test]
fn world_and_commands_allocate_nothing_after_init() {
    let alloc = CountingAllocator::default();
    const N: usize = if cfg!(miri) { 64 } else { 4096 };
    let mut g = Scene::try_new_in(N, alloc.clone()).unwrap();
    let mut cmd = CommandBuffer::try_with_capacity_in(256, 4096, alloc.clone()).unwrap();
    let after_init = alloc.calls();
    assert!(
        after_init > 0,
        "init allocated through the counting allocator"
    );

    for round in 0..3 {
        let mut ids = Vec::with_capacity(N); // test bookkeeping on the global allocator
        let mut batch = [EntityId::NULL; 16];
        g.create_batch(&mut batch).unwrap();
        ids.extend_from_slice(&batch);
        while g.registry.available() > 8 {
            ids.push(g.create().unwrap());
        }
        for (i, e) in ids.iter().enumerate() {
            g.insert(*e, Position([i as f32; 3])).unwrap();
            g.insert(*e, Transform([0.0; 16])).unwrap();
            if i % 2 == round % 2 {
                g.insert(*e, Velocity([1.0; 3])).unwrap();
            }
        }
        let spawned = g
            .spawn((Transform([1.0; 16]), Position([0.0; 3]), Velocity([0.0; 3])))
            .unwrap();
        ids.push(spawned);
        let (_, pos, vel) = g.moving();
        for (p, v) in pos.iter_mut().zip(vel.iter()) {
            p.0[0] += v.0[0];
        }
        for (_, (t, p)) in ludus::join((&mut g.transform, &g.position)) {
            t.0[0] = p.0[0];
        }
        for e in ids.iter().step_by(3) {
            g.remove::<Position>(*e).unwrap();
        }
        for e in ids.iter().take(32) {
            cmd.destroy(&g.registry, *e).unwrap();
        }
        let p = cmd.create().unwrap();
        cmd.insert(&g.registry, p, Velocity([2.0; 3])).unwrap();
        g.commit(&mut cmd).unwrap();
        for e in &ids {
            let _ = g.destroy(*e);
        }
        let new = cmd.resolve(p).unwrap();
        g.destroy(new).unwrap();
        assert_eq!(g.registry.len(), 0);
    }
    assert_eq!(alloc.calls(), after_init, "no allocator call after init");
    drop(g);
    drop(cmd);
    assert_eq!(alloc.calls(), 2 * after_init, "every init block freed once");
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
