//! [`ReadOnly`]: the registry field of a world, shared-only outside the crate.

use core::ops::Deref;

/// Shared-only access to a world's registry: systems read it while they mutate pools
/// (disjoint field borrows); structural changes go through [`WorldOps`](super::WorldOps),
/// which keeps pools, groups and the registry in step. No public path leads to `&mut T`.
#[derive(Debug)]
pub struct ReadOnly<T>(pub(crate) T);

impl<T> ReadOnly<T> {
    /// Wraps a value (the `world!` constructors do).
    pub fn new(value: T) -> Self {
        Self(value)
    }
}

impl<T> Deref for ReadOnly<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}
