//! The roster trait implemented by [`world!`](crate::world!) and the read-only registry field.

use core::ops::Deref;

use allocator_api2::alloc::Allocator;
use bytemuck::Pod;

use super::{BatchCursor, ComponentPool, EntityId, WorldError};

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
    /// Inserts a batch through the world, all or nothing, keeping owned groups packed.
    ///
    /// # Errors
    /// As [`ComponentPool::insert_batch`].
    fn insert_batch(&mut self, entities: &[EntityId], values: &[T]) -> Result<usize, WorldError>;
    /// Removes a batch through the world, all or nothing, keeping owned groups packed.
    ///
    /// # Errors
    /// As [`ComponentPool::remove_batch`].
    fn remove_batch(&mut self, entities: &[EntityId]) -> Result<usize, WorldError>;
    /// Inserts into an entity the caller just created (validated, in no pool), keeping owned
    /// groups packed; the caller advances the revision.
    #[doc(hidden)]
    fn insert_validated(&mut self, entity: EntityId, value: T);
    /// Whether `T`'s pool belongs to an owned group (constant-folded).
    #[doc(hidden)]
    fn grouped() -> bool;
    /// Packs `entity` into `T`'s owned group if it now holds every member.
    #[doc(hidden)]
    fn pack_joined(&mut self, entity: EntityId);
}

mod sealed {
    /// Implemented for component tuples only: `spawn_batch` relies on the tuple impls keeping
    /// the cursor and publish contracts.
    pub trait Sealed {}
}

/// A tuple of distinct component types spawned together by a world's `spawn` (implemented for
/// tuples of 1 to 8 components; sealed).
pub trait Bundle<W>: sealed::Sealed {
    /// Number of components.
    const LEN: u64;
    /// Whether any component's pool belongs to an owned group (constant-folded).
    #[doc(hidden)]
    fn grouped() -> bool;
    /// One [`BatchCursor`] per component.
    #[doc(hidden)]
    type Cursors: Copy;
    /// Inserts every component into a freshly created entity.
    #[doc(hidden)]
    fn insert_validated(self, world: &mut W, entity: EntityId);
    /// Reserves `n` entries past the end of every component's pool; `None` (changing nothing
    /// observable) when one has fewer free.
    #[doc(hidden)]
    fn batch_cursors(world: &mut W, n: usize) -> Option<Self::Cursors>;
    /// Writes the `k`-th bundle of a batch.
    ///
    /// # Safety
    /// As [`BatchCursor::write`] for every component: `k < n` of `batch_cursors`, and no pool
    /// changed since.
    #[doc(hidden)]
    unsafe fn write(self, cursors: Self::Cursors, k: usize);
    /// Publishes `count` written bundles as the fresh slots `first..first + count`.
    ///
    /// # Safety
    /// As [`ComponentPool::publish_batch`] for every component.
    #[doc(hidden)]
    unsafe fn publish(world: &mut W, first: u32, count: usize, generation: u32);
    /// Packs a freshly published entity into the owned groups its components complete.
    #[doc(hidden)]
    fn pack(world: &mut W, entity: EntityId);
}

macro_rules! tuple_bundle {
    ($len:literal; $($t:ident $i:tt),+) => {
        impl<$($t: Pod),+> sealed::Sealed for ($($t,)+) {}

        impl<W: $(Stores<$t> +)+, $($t: Pod),+> Bundle<W> for ($($t,)+) {
            const LEN: u64 = $len;
            #[inline(always)]
            fn grouped() -> bool {
                false $( || <W as Stores<$t>>::grouped() )+
            }
            type Cursors = ($(BatchCursor<$t>,)+);
            #[inline]
            fn insert_validated(self, world: &mut W, entity: EntityId) {
                $( <W as Stores<$t>>::insert_validated(world, entity, self.$i); )+
            }
            #[inline]
            fn batch_cursors(world: &mut W, n: usize) -> Option<Self::Cursors> {
                Some(($( <W as Stores<$t>>::pool_mut(world).batch_cursor(n)?, )+))
            }
            #[inline(always)]
            unsafe fn write(self, cursors: Self::Cursors, k: usize) {
                // SAFETY: forwarded contract (`k < n`, pools unchanged since the cursors).
                $( unsafe { cursors.$i.write(k, self.$i) }; )+
            }
            #[inline]
            unsafe fn publish(world: &mut W, first: u32, count: usize, generation: u32) {
                // SAFETY: forwarded contract, per component pool.
                $( unsafe { <W as Stores<$t>>::pool_mut(world).publish_batch(first, count, generation) }; )+
            }
            #[inline]
            fn pack(world: &mut W, entity: EntityId) {
                $( <W as Stores<$t>>::pack_joined(world, entity); )+
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
