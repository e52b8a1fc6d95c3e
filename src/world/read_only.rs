//! [`ReadOnly`]: the registry field of a world, shared-only outside the crate.

use core::ops::Deref;

use allocator_api2::alloc::Allocator;

use super::{EntityRegistry, InitError};

/// Shared-only access to a world's registry: systems read it while they mutate pools
/// (disjoint field borrows); structural changes go through [`WorldOps`](super::WorldOps),
/// which keeps pools, groups and the registry in step. No public path leads to `&mut T`, and
/// the only public constructor makes a new registry, so a world's registry has never been
/// changed by anything but the world (no pool was bound to it, no slot released, behind the
/// world's back).
#[derive(Debug)]
pub struct ReadOnly<T>(pub(crate) T);

impl<A: Allocator + Clone> ReadOnly<EntityRegistry<A>> {
    /// A new registry of `capacity` slots for a world, without an owner token yet (see
    /// [`EntityRegistry::try_unbound_in`]); the `world!` constructors call it and then
    /// [`WorldOps::try_bind`](super::WorldOps::try_bind).
    ///
    /// # Errors
    /// As [`EntityRegistry::try_unbound_in`].
    pub fn try_new_world_registry(capacity: usize, alloc: A) -> Result<Self, InitError> {
        EntityRegistry::try_unbound_in(capacity, alloc).map(Self)
    }
}

impl<T> Deref for ReadOnly<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}
