//! [`ReadOnly`]: the registry and hooks fields of a world, shared-only outside the crate.

use core::marker::PhantomData;
use core::ops::Deref;

use allocator_api2::alloc::Allocator;

use crate::world::store::error::InitError;
use crate::world::store::registry::EntityRegistry;

/// Shared-only access to a world's registry (and its hooks): systems read it while they
/// mutate pools (disjoint field borrows); structural changes go through
/// [`WorldOps`](crate::world::world_ops::WorldOps), which keeps pools, groups and the registry in step. No public
/// path leads to `&mut T`, and the only public constructors make a new value, so a world's
/// registry has never been changed by anything but the world (no pool was bound to it, no slot
/// released, behind the world's back).
///
/// `M` marks a world registry with its world type's group list
/// ([`Roster::Groups`](crate::world::store::roster::Roster::Groups)). A world's pools carry the packing of its
/// groups, which a world type declaring other groups would neither keep nor undo; with the
/// marker, the registry (and with it, through the owner token, every pool bound to it) cannot
/// be moved into such a world at all:
///
/// ```compile_fail,E0308
/// # use ludus::prelude::*;
/// # #[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
/// # #[repr(C)]
/// # pub struct A(u32);
/// # #[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
/// # #[repr(C)]
/// # pub struct B(u32);
/// ludus::world! { pub struct Grouped { pub a: A, pub b: B } groups { ab(a: A, b: B) } }
/// ludus::world! { pub struct Plain { pub a: A, pub b: B } }
/// let mut g = Grouped::try_new(4).unwrap();
/// let mut p = Plain::try_new(4).unwrap();
/// std::mem::swap(&mut g.registry, &mut p.registry); // error: mismatched types
/// ```
///
/// The marker is invariant (`PhantomData<fn(M) -> M>`): with a covariant one, a group list
/// over a higher-ranked type (`PhantomData<for<'a> fn(&'a u8)>` is a component) coerced
/// to another world's list over its subtype's supertype, and a registry moved by value:
///
/// ```compile_fail,E0308
/// # #![allow(coherence_leak_check)]
/// # use core::marker::PhantomData;
/// # use ludus::prelude::*;
/// # #[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
/// # #[repr(C)]
/// # pub struct B(u32);
/// pub type Hr = PhantomData<for<'a> fn(&'a u8)>;
/// pub type St = PhantomData<fn(&'static u8)>;
/// ludus::world! { pub struct W1 { pub x: Hr, pub y: St, pub b: B } groups { g(x: Hr, b: B) } }
/// ludus::world! { pub struct W2 { pub x: Hr, pub y: St, pub b: B } groups { g(y: St, b: B) } }
/// let W1 { registry, __ludus_hooks, x, y, b } = W1::try_new(8).unwrap();
/// let _w2 = W2 { registry, __ludus_hooks, x, y, b }; // error: mismatched types
/// ```
///
/// World types that declare the same groups share the marker, and their parts move freely
/// (each world's operations then check the owner tokens as always).
pub struct ReadOnly<T, M = ()>(pub(crate) T, PhantomData<fn(M) -> M>);

impl<T, M> ReadOnly<T, M> {
    /// Wraps `value` (crate only: the public constructors make new values).
    pub(crate) fn wrap(value: T) -> Self {
        Self(value, PhantomData)
    }
}

impl<T: core::fmt::Debug, M> core::fmt::Debug for ReadOnly<T, M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.0.fmt(f)
    }
}

impl<A: Allocator + Clone, M> ReadOnly<EntityRegistry<A>, M> {
    /// A new registry of `capacity` slots for a world, without an owner token yet (see
    /// [`EntityRegistry::try_unbound_in`]); the `world!` constructors call it and then
    /// [`WorldOps::try_bind`](crate::world::world_ops::WorldOps::try_bind).
    ///
    /// # Errors
    /// As [`EntityRegistry::try_unbound_in`].
    pub fn try_new_world_registry(capacity: usize, alloc: A) -> Result<Self, InitError> {
        EntityRegistry::try_unbound_in(capacity, alloc).map(Self::wrap)
    }
}

impl ReadOnly<()> {
    /// The hooks of a plain world (none); the `world!` constructors call it.
    ///
    /// # Errors
    /// None: the signature is that of every hooks constructor.
    pub fn no_hooks_in<A>(_capacity: usize, _alloc: A) -> Result<Self, InitError> {
        Ok(Self::wrap(()))
    }
}

impl<T, M> Deref for ReadOnly<T, M> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}
