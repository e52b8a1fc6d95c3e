//! The columns of a join: pool borrows as required (`&pool`, `&mut pool`), optional
//! ([`opt`]) or excluded ([`without`]) columns. The join itself is in [`join`](fn@crate::world::join).

use core::marker::PhantomData;

use crate::world::store::component::Component;
use allocator_api2::alloc::Allocator;

use crate::identity::OwnerToken;
use crate::world::raw::dense::{Index, Order};
use crate::world::raw::keys::{EntityId, EntityKey};
use crate::world::store::pool::ComponentPool;
use sealed::Columns;

/// What a column asks of an entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The entity must hold the component; the join yields it.
    Required,
    /// The join yields `Some` when the entity holds it, `None` otherwise.
    Optional,
    /// The entity must not hold it; the join yields `()`.
    Excluded,
}

pub(crate) mod sealed {
    use super::{EntityId, EntityKey, Index, OwnerToken, Role, MAX_COLUMNS};

    /// The machinery of a [`Column`](super::Column), out of reach of other crates: the unsafe
    /// fetch primitives of one column. [`Columns`] gathers them for a tuple.
    pub trait Sealed {
        /// What the join yields for this column.
        type Item;
        /// What the column asks of an entity.
        const ROLE: Role;
        /// Whether the column's items never alias mutably (`&T`, `Option<&T>`, `()`): a
        /// probe of it may trust an exact sparse map without a key compare (`Probe::Exact`).
        const SHARED: bool;
        /// The pool's lookup structures.
        fn index(&self) -> Index<'_>;
        /// Makes the column hold no entity (a pool of another registry never holds the
        /// join's entities; its keys must not be compared with theirs).
        fn neutralize(&mut self);
        /// The item at dense index `i`; for an optional column `usize::MAX` means absent,
        /// an excluded column ignores `i`.
        ///
        /// # Safety
        /// - `i < self.index().len()`, or `i == usize::MAX` for an optional column.
        /// - For a column yielding `&mut` (not [`SHARED`](Self::SHARED)), no `i` is fetched
        ///   twice, nor lies in rows taken by [`rows`](Self::rows), during the column's
        ///   lifetime.
        unsafe fn fetch(&self, i: usize) -> Self::Item;
        /// The column's values in the rows an aligned plan walks, as one slice (`&mut [T]`,
        /// `&[T]`). The walk takes each column's rows as an argument of its own, which tells
        /// the compiler that the columns do not overlap, so it compiles like a zip of slices.
        type Rows;
        /// Where the walk finds row `i`: a pointer taken once from the rows.
        type Base: Copy;
        /// Rows `start..start + n`.
        ///
        /// # Safety
        /// - `start + n <= self.index().len()`.
        /// - For a column yielding `&mut`, none of those rows is fetched, nor lies in other
        ///   rows taken, during the column's lifetime.
        unsafe fn rows(&self, start: usize, n: usize) -> Self::Rows;
        /// How many values `rows` holds (`usize::MAX` for a column without values).
        fn rows_len(rows: &Self::Rows) -> usize;
        /// The base of `rows`.
        fn base(rows: &mut Self::Rows) -> Self::Base;
        /// The item at row `i` of the rows `base` was taken from.
        ///
        /// # Safety
        /// - `i` is below their [`rows_len`](Self::rows_len), and those rows are still
        ///   borrowed (`base` was taken from rows that live on, unused meanwhile).
        /// - For a column yielding `&mut`, each `i` is taken at most once.
        unsafe fn at(base: Self::Base, i: usize) -> Self::Item;
    }

    /// A tuple of 2..=6 [`Sealed`] columns as the join plans see it: the columns by position
    /// `k < LEN`, and the fetch of one entity's items from all of them. The plans
    /// (`join.rs`) are generic code over this trait; `tuple_columns!` implements it for each
    /// tuple, the only code of joins written per arity.
    pub trait Columns {
        /// The number of columns.
        const LEN: usize;
        /// Column `k`'s [`Sealed::ROLE`] for `k < LEN` (`Excluded` past them).
        const ROLES: [Role; MAX_COLUMNS];
        /// Column `k`'s [`Sealed::SHARED`] for `k < LEN` (`true` past them).
        const SHARED: [bool; MAX_COLUMNS];
        /// What the join yields for an entity: each column's item, in order.
        type Items;
        /// Each column's [`Sealed::Rows`], in order.
        type Rows;

        /// Whether column `k` is required.
        #[inline(always)]
        fn required(k: usize) -> bool {
            matches!(Self::ROLES[k], Role::Required)
        }
        /// Column `k`'s lookup structures (panics unless `k < LEN`).
        fn index(&self, k: usize) -> Index<'_>;
        /// [`Sealed::neutralize`] of column `k` (panics unless `k < LEN`).
        fn neutralize(&mut self, k: usize);
        /// The item at dense index `d[k]` of each column `k`.
        ///
        /// # Safety
        /// - Each required column's `d[k]` is below its length (`self.index(k).len()`); each
        ///   optional column's too, or `usize::MAX` (absent). Excluded columns ignore theirs.
        /// - No index of a column yielding `&mut` (not `SHARED[k]`) is fetched twice, nor
        ///   lies in rows taken by [`rows`](Self::rows), during the column's lifetime.
        unsafe fn fetch(&self, d: &[usize; MAX_COLUMNS]) -> Self::Items;
        /// Rows `start[k]..start[k] + n` of each column `k`, for [`walk`](Self::walk).
        ///
        /// # Safety
        /// - `start[k] + n <= self.index(k).len()` for every column but an excluded one.
        /// - None of the rows of a column yielding `&mut` is fetched, nor lies in other rows
        ///   taken, during the column's lifetime.
        unsafe fn rows(&self, start: &[usize; MAX_COLUMNS], n: usize) -> Self::Rows;
        /// Folds `f` over rows `0..n` of `rows`, row `i` paired with the entity of `keys[i]`,
        /// where `n` is the least of `keys.len()` and each column's row count. Not inlined:
        /// each column's rows are an argument of their own, so the compiler knows they do not
        /// overlap and compiles the walk like a zip of slices (one call per join or run).
        fn walk<Acc, F>(
            keys: &[EntityKey],
            owner: OwnerToken,
            acc: Acc,
            f: &mut F,
            rows: Self::Rows,
        ) -> Acc
        where
            F: FnMut(Acc, (EntityId, Self::Items)) -> Acc;
    }
}

/// Most columns in one join.
pub(crate) const MAX_COLUMNS: usize = 6;

/// The position of the first `Required` role of `roles` (`MAX_COLUMNS` for none).
pub(crate) const fn first_required(roles: &[Role; MAX_COLUMNS]) -> usize {
    let mut k = 0;
    while k < MAX_COLUMNS && !matches!(roles[k], Role::Required) {
        k += 1;
    }
    k
}

/// Whether some role of `roles` is `Required`.
pub(crate) const fn any_required(roles: &[Role; MAX_COLUMNS]) -> bool {
    first_required(roles) < MAX_COLUMNS
}

/// Panics for a column position past a tuple's columns (no plan asks for one).
#[cold]
#[inline(never)]
#[track_caller]
fn no_column(k: usize) -> ! {
    panic!("no join column {k}")
}

use sealed::Sealed;

/// One column of a join (sealed): made from `&pool` (items `&T`), `&mut pool` (`&mut T`),
/// [`opt`]`(&pool)` / `opt(&mut pool)` (`Option<&T>` / `Option<&mut T>`) or
/// [`without`]`(&pool)` (`()`, entities holding a `T` are skipped).
pub trait Column: sealed::Sealed {}

impl<C: sealed::Sealed> Column for C {}

/// Converts a pool borrow into a [`Column`].
pub trait IntoColumn {
    /// The column type.
    type Column: Column;
    /// Performs the conversion.
    fn into_column(self) -> Self::Column;
}

/// An empty index of `owner` (a neutralized column).
fn no_index<'p>(owner: OwnerToken) -> Index<'p> {
    Index {
        owner,
        keys: &[],
        sparse: &[],
        bits: &[],
        order: Order::EMPTY,
        layout: 0,
        live: true,
        cluster: 0,
        cluster_bit: 0,
        runs: &[],
    }
}

/// Shared column: yields `&'p T`.
#[derive(Debug)]
pub struct ColumnRef<'p, T: Component> {
    index: Index<'p>,
    values: &'p [T],
}

impl<'p, T: Component> Sealed for ColumnRef<'p, T> {
    type Item = &'p T;
    const ROLE: Role = Role::Required;
    const SHARED: bool = true;
    #[inline(always)]
    fn index(&self) -> Index<'_> {
        self.index
    }
    fn neutralize(&mut self) {
        self.index = no_index(self.index.owner);
        self.values = &[];
    }
    #[inline(always)]
    unsafe fn fetch(&self, i: usize) -> &'p T {
        debug_assert!(i < self.values.len());
        // SAFETY: `i < index.len()` (caller), which is `values.len()`: a pool holds a value
        // per key, and a neutralized column neither.
        unsafe { self.values.get_unchecked(i) }
    }
    type Rows = &'p [T];
    type Base = *const T;
    #[inline(always)]
    unsafe fn rows(&self, start: usize, n: usize) -> &'p [T] {
        // SAFETY: `start + n <= index.len() == values.len()` (caller; as in `fetch`).
        unsafe { self.values.get_unchecked(start..start + n) }
    }
    #[inline(always)]
    fn rows_len(rows: &&'p [T]) -> usize {
        rows.len()
    }
    #[inline(always)]
    fn base(rows: &mut &'p [T]) -> *const T {
        rows.as_ptr()
    }
    #[inline(always)]
    unsafe fn at(base: *const T, i: usize) -> &'p T {
        // SAFETY: `base` is the start of a live `&'p [T]` longer than `i` (caller).
        unsafe { &*base.add(i) }
    }
}

impl<'p, T: Component, A: Allocator + Clone> IntoColumn for &'p ComponentPool<T, A> {
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
pub struct ColumnMut<'p, T: Component> {
    index: Index<'p>,
    /// From the pool's exclusive `&'p mut [T]`; valid for `len` elements.
    values: *mut T,
    len: usize,
    _values: PhantomData<&'p mut [T]>,
}

impl<'p, T: Component> Sealed for ColumnMut<'p, T> {
    type Item = &'p mut T;
    const ROLE: Role = Role::Required;
    const SHARED: bool = false;
    #[inline(always)]
    fn index(&self) -> Index<'_> {
        self.index
    }
    fn neutralize(&mut self) {
        self.index = no_index(self.index.owner);
        self.len = 0;
    }
    #[inline(always)]
    unsafe fn fetch(&self, i: usize) -> &'p mut T {
        debug_assert!(i < self.len, "fetch {i} beyond {}", self.len);
        // SAFETY: 1. `i < index.len() == len` (caller; a pool holds a value per key, and a
        //    neutralized column neither), so the pointer is in bounds;
        // 2. `i` is fetched once and lies in no rows taken (caller), so no two live `&mut`
        //    alias;
        // 3. `values` derives from an exclusive borrow of the dense values held for 'p, which
        //    nothing else reads or writes meanwhile (keys, sparse and bits are separate).
        unsafe { &mut *self.values.add(i) }
    }
    type Rows = &'p mut [T];
    type Base = *mut T;
    #[inline(always)]
    unsafe fn rows(&self, start: usize, n: usize) -> &'p mut [T] {
        // SAFETY: 1. `start + n <= index.len() == len` (caller; as in `fetch`), so the range
        //    is inside the exclusive borrow `values` derives from;
        // 2. none of those rows is fetched, nor lies in other rows taken (caller), so this
        //    slice is the only way to them.
        unsafe { core::slice::from_raw_parts_mut(self.values.add(start), n) }
    }
    #[inline(always)]
    fn rows_len(rows: &&'p mut [T]) -> usize {
        rows.len()
    }
    #[inline(always)]
    fn base(rows: &mut &'p mut [T]) -> *mut T {
        rows.as_mut_ptr()
    }
    #[inline(always)]
    unsafe fn at(base: *mut T, i: usize) -> &'p mut T {
        // SAFETY: 1. `base` is the start of a live `&'p mut [T]` longer than `i` (caller), so
        //    the pointer is in bounds and its borrow exclusive;
        // 2. each `i` is taken once (caller), so no two live `&mut` alias.
        unsafe { &mut *base.add(i) }
    }
}

impl<'p, T: Component, A: Allocator + Clone> IntoColumn for &'p mut ComponentPool<T, A> {
    type Column = ColumnMut<'p, T>;
    #[inline]
    fn into_column(self) -> Self::Column {
        let (index, values) = self.join_parts();
        ColumnMut {
            index,
            len: values.len(),
            values: values.as_mut_ptr(),
            _values: PhantomData,
        }
    }
}

/// An optional column: `opt(&pool)` yields `Option<&T>`, `opt(&mut pool)` `Option<&mut T>`.
#[derive(Debug)]
pub struct Opt<P>(pub P);

/// Marks a pool borrow as an optional column of a join (as hecs' and bevy's `Option<&T>`).
///
/// ```
/// use ludus::world::{join, opt, ComponentPool, EntityRegistry};
/// let mut reg = EntityRegistry::try_with_capacity(4)?;
/// let mut pos = ComponentPool::<f32>::try_new(&mut reg)?;
/// let mut boost = ComponentPool::<f32>::try_new(&mut reg)?;
/// for i in 0..3 {
///     let e = reg.try_create()?;
///     pos.insert(&mut reg, e, 1.0)?;
///     if i == 1 { boost.insert(&mut reg, e, 10.0)?; }
/// }
/// for (_e, (p, b)) in join((&mut pos, opt(&boost))) {
///     *p *= b.copied().unwrap_or(2.0);
/// }
/// assert_eq!(pos.values(), &[2.0, 10.0, 2.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn opt<P>(pool: P) -> Opt<P> {
    Opt(pool)
}

/// Optional shared column: yields `Option<&'p T>`.
#[derive(Debug)]
pub struct OptRef<'p, T: Component>(ColumnRef<'p, T>);

impl<'p, T: Component> Sealed for OptRef<'p, T> {
    type Item = Option<&'p T>;
    const ROLE: Role = Role::Optional;
    const SHARED: bool = true;
    #[inline(always)]
    fn index(&self) -> Index<'_> {
        self.0.index
    }
    fn neutralize(&mut self) {
        self.0.neutralize();
    }
    #[inline(always)]
    unsafe fn fetch(&self, i: usize) -> Option<&'p T> {
        // SAFETY: `i < index.len()` unless it is the absent marker (caller), tested here; the
        // inner column has the same index.
        (i != usize::MAX).then(|| unsafe { self.0.fetch(i) })
    }
    type Rows = &'p [T];
    type Base = *const T;
    #[inline(always)]
    unsafe fn rows(&self, start: usize, n: usize) -> &'p [T] {
        // SAFETY: `start + n <= index.len()` (caller), the inner column's index.
        unsafe { self.0.rows(start, n) }
    }
    #[inline(always)]
    fn rows_len(rows: &&'p [T]) -> usize {
        rows.len()
    }
    #[inline(always)]
    fn base(rows: &mut &'p [T]) -> *const T {
        rows.as_ptr()
    }
    #[inline(always)]
    unsafe fn at(base: *const T, i: usize) -> Option<&'p T> {
        // SAFETY: `i` is below the live rows' length (caller); the inner column's rows are
        // these rows.
        Some(unsafe { ColumnRef::at(base, i) })
    }
}

impl<'p, T: Component, A: Allocator + Clone> IntoColumn for Opt<&'p ComponentPool<T, A>> {
    type Column = OptRef<'p, T>;
    #[inline]
    fn into_column(self) -> Self::Column {
        OptRef(self.0.into_column())
    }
}

/// Optional exclusive column: yields `Option<&'p mut T>`.
#[derive(Debug)]
pub struct OptMut<'p, T: Component>(ColumnMut<'p, T>);

impl<'p, T: Component> Sealed for OptMut<'p, T> {
    type Item = Option<&'p mut T>;
    const ROLE: Role = Role::Optional;
    const SHARED: bool = false;
    #[inline(always)]
    fn index(&self) -> Index<'_> {
        self.0.index
    }
    fn neutralize(&mut self) {
        self.0.neutralize();
    }
    #[inline(always)]
    unsafe fn fetch(&self, i: usize) -> Option<&'p mut T> {
        // SAFETY: 1. `i < index.len()` unless it is the absent marker (caller), tested here;
        //    the inner column has the same index;
        // 2. `i` is fetched once and lies in no rows taken (caller), here as in the inner column.
        (i != usize::MAX).then(|| unsafe { self.0.fetch(i) })
    }
    type Rows = &'p mut [T];
    type Base = *mut T;
    #[inline(always)]
    unsafe fn rows(&self, start: usize, n: usize) -> &'p mut [T] {
        // SAFETY: 1. `start + n <= index.len()` (caller), the inner column's index;
        // 2. none of those rows is fetched, nor lies in other rows taken (caller), here as in
        //    the inner column.
        unsafe { self.0.rows(start, n) }
    }
    #[inline(always)]
    fn rows_len(rows: &&'p mut [T]) -> usize {
        rows.len()
    }
    #[inline(always)]
    fn base(rows: &mut &'p mut [T]) -> *mut T {
        rows.as_mut_ptr()
    }
    #[inline(always)]
    unsafe fn at(base: *mut T, i: usize) -> Option<&'p mut T> {
        // SAFETY: 1. `i` is below the live rows' length (caller); the inner column's rows are
        //    these rows;
        // 2. each `i` is taken once (caller).
        Some(unsafe { ColumnMut::at(base, i) })
    }
}

impl<'p, T: Component, A: Allocator + Clone> IntoColumn for Opt<&'p mut ComponentPool<T, A>> {
    type Column = OptMut<'p, T>;
    #[inline]
    fn into_column(self) -> Self::Column {
        OptMut(self.0.into_column())
    }
}

/// An exclusion filter: entities holding a `T` are skipped.
#[derive(Debug)]
pub struct Without<'p>(Index<'p>);

/// Marks a pool as an exclusion filter of a join (as hecs' and bevy's `Without<T>`): the join
/// skips the entities it holds and yields `()` for it.
///
/// ```
/// use ludus::world::{join, without, ComponentPool, EntityRegistry};
/// let mut reg = EntityRegistry::try_with_capacity(4)?;
/// let mut pos = ComponentPool::<f32>::try_new(&mut reg)?;
/// let mut frozen = ComponentPool::<u8>::try_new(&mut reg)?;
/// for i in 0..3 {
///     let e = reg.try_create()?;
///     pos.insert(&mut reg, e, 0.0)?;
///     if i == 0 { frozen.insert(&mut reg, e, 1)?; }
/// }
/// for (_e, (p, ())) in join((&mut pos, without(&frozen))) {
///     *p += 1.0;
/// }
/// assert_eq!(pos.values(), &[0.0, 1.0, 1.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn without<T: Component, A: Allocator + Clone>(pool: &ComponentPool<T, A>) -> Without<'_> {
    Without(pool.index())
}

impl Sealed for Without<'_> {
    type Item = ();
    const ROLE: Role = Role::Excluded;
    const SHARED: bool = true;
    #[inline(always)]
    fn index(&self) -> Index<'_> {
        self.0
    }
    fn neutralize(&mut self) {
        self.0 = no_index(self.0.owner);
    }
    #[inline(always)]
    unsafe fn fetch(&self, _: usize) {}
    type Rows = ();
    type Base = ();
    #[inline(always)]
    unsafe fn rows(&self, _: usize, _: usize) {}
    #[inline(always)]
    fn rows_len(_: &()) -> usize {
        usize::MAX
    }
    #[inline(always)]
    fn base(_: &mut ()) {}
    #[inline(always)]
    unsafe fn at(_: (), _: usize) {}
}

impl<'p> IntoColumn for Without<'p> {
    type Column = Without<'p>;
    #[inline]
    fn into_column(self) -> Self {
        self
    }
}

/// The per-arity code of joins: [`Columns`] for a tuple of columns `$c` at
/// positions `$i`, with `$r` naming their rows in the walk.
macro_rules! tuple_columns {
    ($($c:ident $i:tt $r:ident),+) => {
        impl<$($c: Sealed),+> Columns for ($($c,)+) {
            const LEN: usize = [$($i),+].len();
            const ROLES: [Role; MAX_COLUMNS] = {
                let mut roles = [Role::Excluded; MAX_COLUMNS];
                $(roles[$i] = $c::ROLE;)+
                roles
            };
            const SHARED: [bool; MAX_COLUMNS] = {
                let mut shared = [true; MAX_COLUMNS];
                $(shared[$i] = $c::SHARED;)+
                shared
            };
            type Items = ($($c::Item,)+);
            type Rows = ($($c::Rows,)+);

            #[inline(always)]
            fn index(&self, k: usize) -> Index<'_> {
                match k {
                    $($i => self.$i.index(),)+
                    _ => no_column(k),
                }
            }

            fn neutralize(&mut self, k: usize) {
                match k {
                    $($i => self.$i.neutralize(),)+
                    _ => no_column(k),
                }
            }

            #[inline(always)]
            unsafe fn fetch(&self, d: &[usize; MAX_COLUMNS]) -> Self::Items {
                // SAFETY: column `k`'s `Sealed::fetch` at `d[k]` asks what this function's
                // caller promises for column `k`: 1. `d[k]` below its length, or the absent
                // marker of an optional column; 2. a `&mut` column's index fetched once, and
                // in no rows taken.
                unsafe { ($(self.$i.fetch(d[$i]),)+) }
            }

            #[inline(always)]
            unsafe fn rows(&self, start: &[usize; MAX_COLUMNS], n: usize) -> Self::Rows {
                // SAFETY: column `k`'s `Sealed::rows` asks what this function's caller
                // promises for column `k`: 1. `start[k] + n` within its length; 2. none of
                // a `&mut` column's rows fetched, nor in other rows taken.
                unsafe { ($(self.$i.rows(start[$i], n),)+) }
            }

            #[inline(always)]
            fn walk<Acc, F>(
                keys: &[EntityKey],
                owner: OwnerToken,
                acc: Acc,
                f: &mut F,
                ($($r,)+): Self::Rows,
            ) -> Acc
            where
                F: FnMut(Acc, (EntityId, Self::Items)) -> Acc,
            {
                #[inline(never)]
                #[allow(clippy::too_many_arguments)] // one per column: that is the point
                fn walk<$($c: Sealed,)+ Acc, F>(
                    keys: &[EntityKey],
                    owner: OwnerToken,
                    mut acc: Acc,
                    f: &mut F,
                    $(mut $r: $c::Rows,)+
                ) -> Acc
                where
                    F: FnMut(Acc, (EntityId, ($($c::Item,)+))) -> Acc,
                {
                    let n = keys.len()$(.min($c::rows_len(&$r)))+;
                    let base = ($($c::base(&mut $r),)+);
                    for (i, key) in keys[..n].iter().enumerate() {
                        // SAFETY: 1. `i < n`, within every column's rows, which live on
                        //    unused but through `base`;
                        // 2. each `i` is taken once, so no `&mut` item twice.
                        let items = unsafe { ($($c::at(base.$i, i),)+) };
                        acc = f(acc, (key.entity(owner), items));
                    }
                    acc
                }
                walk::<$($c,)+ Acc, F>(keys, owner, acc, f, $($r,)+)
            }
        }
    };
}

tuple_columns!(C0 0 r0, C1 1 r1);
tuple_columns!(C0 0 r0, C1 1 r1, C2 2 r2);
tuple_columns!(C0 0 r0, C1 1 r1, C2 2 r2, C3 3 r3);
tuple_columns!(C0 0 r0, C1 1 r1, C2 2 r2, C3 3 r3, C4 4 r4);
tuple_columns!(C0 0 r0, C1 1 r1, C2 2 r2, C3 3 r3, C4 4 r4, C5 5 r5);
