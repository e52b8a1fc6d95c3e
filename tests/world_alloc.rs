//! Zero allocations after init, proven with a counting allocator (the domain allocator's
//! counters prove the same once the memory module lands).

use allocator_api2::alloc::{AllocError, Allocator, Global, Layout};
use core::ptr::NonNull;
use ludus::world::WorldOps;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytemuck::{Pod, Zeroable};
use ludus::world::CommandBuffer;
use ludus::EntityId;

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
/// Position.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Position([f32; 3]);
/// Velocity.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Velocity([f32; 3]);

ludus::world! {
    struct Game { transform: Transform, position: Position, velocity: Velocity }
    groups { moving(position: Position, velocity: Velocity) }
}

#[test]
fn world_and_commands_allocate_nothing_after_init() {
    let alloc = CountingAllocator::default();
    const N: usize = if cfg!(miri) { 64 } else { 4096 };
    let mut g = Game::try_new_in(N, alloc.clone()).unwrap();
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
