//! Joins over 2..=6 pools, driven by the smallest pool.
//!
//! The driver is walked in dense order; every other column is probed by key: first at the
//! driver's dense index, then at the slot's own index, then through its sparse map. Iteration
//! order is therefore the driver's dense order: deterministic for a given operation sequence. For a straight zip without probing, use an
//! owned group.

use core::marker::PhantomData;

use allocator_api2::alloc::Allocator;
use bytemuck::Pod;

use super::dense::Index;
use super::{ComponentPool, EntityId};

mod sealed {
    use super::EntityId;

    /// The probing machinery of a [`Column`](super::Column), out of reach of other crates.
    pub trait Sealed {
        /// What the join yields for this column.
        type Item;
        fn dense_len(&self) -> usize;
        fn owner_at(&self, i: usize) -> EntityId;
        fn index_of(&self, entity: EntityId) -> Option<usize>;
        fn holds(&self, i: usize, entity: EntityId) -> bool;
        /// `entity`'s dense index, trying `hint` first (pools filled in the same order share
        /// dense positions, so a join of them never probes a sparse map).
        #[inline(always)]
        fn index_near(&self, entity: EntityId, hint: usize) -> Option<usize> {
            if self.holds(hint, entity) {
                Some(hint)
            } else {
                self.index_of(entity)
            }
        }
        /// # Safety
        /// `i < self.dense_len()`, and for columns yielding `&mut` each `i` is fetched at most
        /// once during the column's lifetime.
        unsafe fn fetch(&mut self, i: usize) -> Self::Item;
    }
}

use sealed::Sealed;

/// One column of a join, made from `&ComponentPool<T>` (items `&T`) or `&mut ComponentPool<T>`
/// (items `&mut T`). Sealed: its probing methods are private to the crate.
pub trait Column: sealed::Sealed {}

impl<C: sealed::Sealed> Column for C {}

/// Converts a pool borrow into a [`Column`].
pub trait IntoColumn {
    /// The column type.
    type Column: Column;
    /// Performs the conversion.
    fn into_column(self) -> Self::Column;
}

/// Shared column: yields `&'p T`.
#[derive(Debug)]
pub struct ColumnRef<'p, T: Pod> {
    index: Index<'p>,
    values: &'p [T],
}

impl<'p, T: Pod> Sealed for ColumnRef<'p, T> {
    type Item = &'p T;
    #[inline(always)]
    fn dense_len(&self) -> usize {
        self.index.len()
    }
    #[inline(always)]
    fn owner_at(&self, i: usize) -> EntityId {
        self.index.owner_at(i)
    }
    #[inline(always)]
    fn index_of(&self, entity: EntityId) -> Option<usize> {
        self.index.dense_of(entity)
    }
    #[inline(always)]
    fn holds(&self, i: usize, entity: EntityId) -> bool {
        self.index.holds(i, entity)
    }
    /// # Safety
    /// As `Column`'s `fetch`: `i < dense_len()`, each `i` at most once for `&mut`.
    #[inline(always)]
    unsafe fn fetch(&mut self, i: usize) -> &'p T {
        &self.values[i]
    }
}

impl<'p, T: Pod, A: Allocator + Clone> IntoColumn for &'p ComponentPool<T, A> {
    type Column = ColumnRef<'p, T>;
    #[inline]
    fn into_column(self) -> Self::Column {
        ColumnRef {
            index: self.index(),
            values: self.values(),
        }
    }
}

/// Exclusive column: yields `&'p mut T` for distinct dense indices.
#[derive(Debug)]
pub struct ColumnMut<'p, T: Pod> {
    index: Index<'p>,
    /// From the pool's exclusive `&'p mut [T]`; valid for `index.len()` elements.
    values: *mut T,
    _values: PhantomData<&'p mut [T]>,
}

impl<'p, T: Pod> Sealed for ColumnMut<'p, T> {
    type Item = &'p mut T;
    #[inline(always)]
    fn dense_len(&self) -> usize {
        self.index.len()
    }
    #[inline(always)]
    fn owner_at(&self, i: usize) -> EntityId {
        self.index.owner_at(i)
    }
    #[inline(always)]
    fn index_of(&self, entity: EntityId) -> Option<usize> {
        self.index.dense_of(entity)
    }
    #[inline(always)]
    fn holds(&self, i: usize, entity: EntityId) -> bool {
        self.index.holds(i, entity)
    }
    /// # Safety
    /// As `Column`'s `fetch`: `i < dense_len()`, each `i` at most once for `&mut`.
    #[inline(always)]
    unsafe fn fetch(&mut self, i: usize) -> &'p mut T {
        debug_assert!(
            i < self.index.len(),
            "fetch {i} beyond {}",
            self.index.len()
        );
        // SAFETY: 1. `i < keys.len() == values.len()` (caller), so the pointer is in bounds;
        // 2. each `i` is fetched at most once (caller), so no two live `&mut` alias;
        // 3. `values` derives from an exclusive borrow of the dense values held for 'p, which
        //    nothing else reads or writes meanwhile (keys and sparse are separate arrays).
        unsafe { &mut *self.values.add(i) }
    }
}

impl<'p, T: Pod, A: Allocator + Clone> IntoColumn for &'p mut ComponentPool<T, A> {
    type Column = ColumnMut<'p, T>;
    #[inline]
    fn into_column(self) -> Self::Column {
        let (index, values) = self.join_parts();
        debug_assert_eq!(index.len(), values.len());
        ColumnMut {
            index,
            values: values.as_mut_ptr(),
            _values: PhantomData,
        }
    }
}

/// A join iterator over a tuple of columns, yielding `(entity, (items...))` for every entity
/// present in all of them, in the dense order of the smallest column (ties: the first).
#[derive(Debug)]
pub struct Join<C> {
    columns: C,
    driver: usize,
    next: usize,
    end: usize,
}

/// Joins a tuple of 2..=6 pool borrows (`&pool` or `&mut pool`).
///
/// # Examples
/// ```
/// use ludus::world::{join, ComponentPool, EntityRegistry};
/// let mut reg = EntityRegistry::try_with_capacity(4)?;
/// let mut pos = ComponentPool::<f32>::try_new(&mut reg)?;
/// let mut vel = ComponentPool::<f32>::try_new(&mut reg)?;
/// for i in 0..3 {
///     let e = reg.try_create()?;
///     pos.insert(&mut reg, e, 0.0)?;
///     if i != 1 { vel.insert(&mut reg, e, 1.5)?; }
/// }
/// for (_e, (p, v)) in join((&mut pos, &vel)) {
///     *p += *v;
/// }
/// assert_eq!(pos.values(), &[1.5, 0.0, 1.5]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn join<Q: IntoJoin>(query: Q) -> Join<Q::Columns> {
    query.into_join()
}

/// A tuple of pool borrows that can be joined.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be joined",
    note = "`join` takes a tuple of 2 to 6 pool borrows, `&pool` or `&mut pool`, e.g. `join((&mut w.position, &w.velocity))`; for one pool iterate it directly"
)]
pub trait IntoJoin {
    /// The tuple of columns.
    type Columns;
    /// Builds the join.
    fn into_join(self) -> Join<Self::Columns>;
}

macro_rules! tuple_join {
    ($($c:ident $i:tt),+) => {
        impl<$($c: IntoColumn),+> IntoJoin for ($($c,)+) {
            type Columns = ($($c::Column,)+);
            fn into_join(self) -> Join<Self::Columns> {
                let columns = ($(self.$i.into_column(),)+);
                let mut driver = 0;
                let mut end = usize::MAX;
                $(
                    if columns.$i.dense_len() < end {
                        end = columns.$i.dense_len();
                        driver = $i;
                    }
                )+
                Join { columns, driver, next: 0, end }
            }
        }

        impl<$($c: Column),+> Iterator for Join<($($c,)+)> {
            type Item = (EntityId, ($(<$c as Sealed>::Item,)+));

            #[inline]
            fn next(&mut self) -> Option<Self::Item> {
                'rows: while self.next < self.end {
                    let i = self.next;
                    self.next += 1;
                    let entity = match self.driver {
                        $($i => self.columns.$i.owner_at(i),)+
                        _ => unreachable!(),
                    };
                    let indices = ($(
                        if self.driver == $i {
                            i
                        } else {
                            match self.columns.$i.index_near(entity, i) {
                                Some(d) => d,
                                None => continue 'rows,
                            }
                        },
                    )+);
                    // SAFETY: every index is in bounds of its column (the driver's `i < end ==
                    // driver len`; the others come from `index_near`, which checks the range),
                    // and each is fetched once: driver rows are visited once each and hold
                    // distinct entities, and `index_near` returns the one dense index holding
                    // the entity, so distinct entities get distinct indices.
                    return Some((entity, unsafe { ($(self.columns.$i.fetch(indices.$i),)+) }));
                }
                None
            }

            fn size_hint(&self) -> (usize, Option<usize>) {
                (0, Some(self.end - self.next))
            }
        }
    };
}

tuple_join!(C0 0, C1 1);
tuple_join!(C0 0, C1 1, C2 2);
tuple_join!(C0 0, C1 1, C2 2, C3 3);
tuple_join!(C0 0, C1 1, C2 2, C3 3, C4 4);
tuple_join!(C0 0, C1 1, C2 2, C3 3, C4 4, C5 5);
