//! The roster trait implemented by [`world!`](crate::world!) and the read-only registry field.

use core::ops::Deref;

use allocator_api2::alloc::Allocator;
use bytemuck::Pod;

use super::{ComponentPool, EntityId, WorldError};

/// A world that stores components of type `T` in one pool. Implemented by
/// [`world!`](crate::world!) for each declared component; component types of one world must
/// be distinct (use newtypes).
pub trait Stores<T: Pod> {
    /// Allocator of the pool.
    type Alloc: Allocator + Clone;
    /// The pool of `T`.
    fn pool(&self) -> &ComponentPool<T, Self::Alloc>;
    /// The pool of `T`, mutably: values only (membership changes need the world).
    fn pool_mut(&mut self) -> &mut ComponentPool<T, Self::Alloc>;
    /// Inserts through the world, keeping owned groups packed.
    ///
    /// # Errors
    /// As [`ComponentPool::insert`].
    fn insert_component(&mut self, entity: EntityId, value: T) -> Result<Option<T>, WorldError>;
    /// Removes through the world, keeping owned groups packed.
    ///
    /// # Errors
    /// As [`ComponentPool::remove`].
    fn remove_component(&mut self, entity: EntityId) -> Result<Option<T>, WorldError>;
    /// Inserts into an entity the caller validated (phase, liveness, revision budget), keeping
    /// owned groups packed; the caller advances the revision.
    #[doc(hidden)]
    fn insert_validated(&mut self, entity: EntityId, value: T);
}

/// A tuple of distinct component types spawned together by a world's `spawn`.
pub trait Bundle<W> {
    /// Number of components.
    const LEN: u64;
    /// Inserts every component into a freshly created entity.
    #[doc(hidden)]
    fn insert_validated(self, world: &mut W, entity: EntityId);
}

macro_rules! tuple_bundle {
    ($len:literal; $($t:ident $i:tt),+) => {
        impl<W: $(Stores<$t> +)+, $($t: Pod),+> Bundle<W> for ($($t,)+) {
            const LEN: u64 = $len;
            #[inline]
            fn insert_validated(self, world: &mut W, entity: EntityId) {
                $( <W as Stores<$t>>::insert_validated(world, entity, self.$i); )+
            }
        }
    };
}

tuple_bundle!(1; T0 0);
tuple_bundle!(2; T0 0, T1 1);
tuple_bundle!(3; T0 0, T1 1, T2 2);
tuple_bundle!(4; T0 0, T1 1, T2 2, T3 3);
tuple_bundle!(5; T0 0, T1 1, T2 2, T3 3, T4 4);
tuple_bundle!(6; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5);
tuple_bundle!(7; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6);
tuple_bundle!(8; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7);

/// Shared-only access to a world's registry: systems read it while they mutate pools
/// (disjoint field borrows); structural changes go through the world's methods.
#[derive(Debug)]
pub struct ReadOnly<T>(T);

impl<T> ReadOnly<T> {
    /// Wraps a value.
    #[doc(hidden)]
    pub fn new(value: T) -> Self {
        Self(value)
    }

    /// Exclusive access, for the world's own structural methods only.
    #[doc(hidden)]
    pub fn __get_mut(this: &mut Self) -> &mut T {
        &mut this.0
    }
}

impl<T> Deref for ReadOnly<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}
