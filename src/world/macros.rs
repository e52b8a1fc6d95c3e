//! The `world!` roster macro.

/// Declares a world: one [`EntityRegistry`](crate::world::EntityRegistry) and one
/// [`ComponentPool`](crate::world::ComponentPool) per component, with optional owned groups.
///
/// ```text
/// ludus::world! {
///     pub struct Game { pub position: Position, pub velocity: Velocity, pub health: Health }
///     groups { moving(position: Position, velocity: Velocity) }
/// }
/// ```
///
/// The struct `Game<A = Global>` gets a read-only field `registry`, one pool field per
/// component (with the visibility you write) and a private [`OwnedGroup`](crate::world::OwnedGroup)
/// field per group. Methods:
///
/// * `try_new(capacity)`, `try_new_in(capacity, alloc)`: all memory at init; a failed init
///   consumes no owner token.
/// * `begin_structural()`, `end_structural()`, `is_structural_phase()`.
/// * `create()`, `create_batch(&mut [EntityId])`, `destroy(e)` (removes `e` from every pool,
///   then releases its slot), `insert(e, value)`, `remove::<T>(e)`, `get::<T>(e)`,
///   `get_mut::<T>(e)`, `contains::<T>(e)`, `pool::<T>()`, `pool_mut::<T>()`.
/// * `commit(&mut CommandBuffer)`: all-or-nothing.
/// * per group `moving()`: `(Owners, &mut [Position], &mut [Velocity])`, the packed
///   prefix of the members' dense arrays, in the same order.
///
/// Component types must be distinct and [`bytemuck::Pod`]; a pool belongs to at most one group;
/// field and group names must differ from each other and from `registry`.
///
/// # Examples
/// ```
/// #[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// pub struct Position(pub f32);
/// #[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// pub struct Velocity(pub f32);
///
/// ludus::world! {
///     pub struct Game { pub position: Position, pub velocity: Velocity }
///     groups { moving(position: Position, velocity: Velocity) }
/// }
///
/// let mut game = Game::try_new(16)?;
/// let e = game.create()?;
/// game.insert(e, Position(1.0))?;
/// game.insert(e, Velocity(0.5))?;
/// game.end_structural();
/// let (ids, pos, vel) = game.moving();
/// for (p, v) in pos.iter_mut().zip(vel.iter()) {
///     p.0 += v.0;
/// }
/// assert_eq!(ids, &[e]);
/// assert_eq!(game.get::<Position>(e), Some(&Position(1.5)));
/// assert!(game.destroy(e).is_err()); // not in the structural phase
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[macro_export]
macro_rules! world {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty ),+ $(,)?
        }
        $( groups {
            $( $group:ident ( $gfirst:ident : $gfirst_ty:ty $(, $gfield:ident : $gty:ty )* $(,)? ) ),* $(,)?
        } )?
    ) => {
        $(#[$meta])*
        $vis struct $name<
            __LudusAlloc: $crate::world::__private::Allocator + ::core::clone::Clone = $crate::world::__private::Global,
        > {
            /// The registry, read-only outside the world's structural methods.
            pub registry: $crate::world::ReadOnly<$crate::world::EntityRegistry<__LudusAlloc>>,
            $( $(#[$fmeta])* $fvis $field: $crate::world::ComponentPool<$ty, __LudusAlloc>, )+
            $($( $group: $crate::world::OwnedGroup, )*)?
        }

        impl $name<$crate::world::__private::Global> {
            /// A world of `capacity` entities on the global allocator.
            ///
            /// # Errors
            /// [`InitError`]($crate::world::InitError).
            #[allow(dead_code)]
            pub fn try_new(capacity: usize) -> ::core::result::Result<Self, $crate::world::InitError> {
                Self::try_new_in(capacity, $crate::world::__private::Global)
            }
        }

        #[allow(dead_code)]
        impl<__LudusAlloc: $crate::world::__private::Allocator + ::core::clone::Clone> $name<__LudusAlloc> {
            /// A world of `capacity` entities allocating from `alloc`; the owner token is
            /// issued only after every array was allocated.
            ///
            /// # Errors
            /// [`InitError`]($crate::world::InitError).
            pub fn try_new_in(
                capacity: usize,
                alloc: __LudusAlloc,
            ) -> ::core::result::Result<Self, $crate::world::InitError> {
                let grouped: &[$crate::world::__private::TypeId] = &[
                    $($( $crate::world::__private::TypeId::of::<$gfirst_ty>(),
                         $( $crate::world::__private::TypeId::of::<$gty>(), )* )*)?
                ];
                for (i, t) in grouped.iter().enumerate() {
                    if grouped[..i].contains(t) {
                        return ::core::result::Result::Err($crate::world::InitError::GroupOverlap);
                    }
                }
                let mut world = Self {
                    registry: $crate::world::ReadOnly::new(
                        $crate::world::EntityRegistry::try_unbound_in(capacity, alloc.clone())?,
                    ),
                    $( $field: $crate::world::ComponentPool::try_unbound_in(capacity, alloc.clone())?, )+
                    $($( $group: ::core::default::Default::default(), )*)?
                };
                $crate::world::ReadOnly::__get_mut(&mut world.registry).issue_owner()?;
                $( let bound = world.$field.bind(&world.registry); debug_assert!(bound); )+
                ::core::result::Result::Ok(world)
            }

            /// Opens the structural phase.
            #[inline]
            pub fn begin_structural(&mut self) {
                $crate::world::ReadOnly::__get_mut(&mut self.registry).set_structural_phase(true);
            }

            /// Closes the structural phase: structural changes fail with `InvalidPhase`.
            #[inline]
            pub fn end_structural(&mut self) {
                $crate::world::ReadOnly::__get_mut(&mut self.registry).set_structural_phase(false);
            }

            /// Whether structural changes are accepted.
            #[inline]
            pub fn is_structural_phase(&self) -> bool {
                self.registry.is_structural_phase()
            }

            /// The registry.
            #[inline]
            pub fn registry(&self) -> &$crate::world::EntityRegistry<__LudusAlloc> {
                &self.registry
            }

            /// Creates an entity with no components.
            ///
            /// # Errors
            /// As [`EntityRegistry::try_create`]($crate::world::EntityRegistry::try_create).
            #[inline]
            pub fn create(&mut self) -> ::core::result::Result<$crate::EntityId, $crate::world::WorldError> {
                $crate::world::ReadOnly::__get_mut(&mut self.registry).try_create()
            }

            /// Creates `out.len()` entities, all or nothing.
            ///
            /// # Errors
            /// As [`EntityRegistry::try_create_batch`]($crate::world::EntityRegistry::try_create_batch).
            pub fn create_batch(
                &mut self,
                out: &mut [$crate::EntityId],
            ) -> ::core::result::Result<(), $crate::world::WorldError> {
                $crate::world::ReadOnly::__get_mut(&mut self.registry).try_create_batch(out)
            }

            /// Destroys `entity`: leaves every owned group, is removed from every pool, then
            /// its registry slot is released (generation advanced or slot retired).
            ///
            /// # Errors
            /// `InvalidPhase`, `Rejected` (not alive) or `RevisionExhausted`; nothing changes.
            pub fn destroy(&mut self, entity: $crate::EntityId) -> ::core::result::Result<(), $crate::world::WorldError> {
                const POOLS: u64 = [$( stringify!($field) ),+].len() as u64;
                let registry = $crate::world::ReadOnly::__get_mut(&mut self.registry);
                registry.check_entity_change(entity, POOLS + 1)?;
                $($(
                    $crate::__world_group_op!(self, unpack, entity, $group, $gfirst $(, $gfield)*);
                )*)?
                let mut removed = 0u64;
                $( removed += u64::from(self.$field.remove_validated(entity).is_some()); )+
                // Durable-binding hook: detach the entity's binding here, before the slot is
                // released (seed 000, "Destruction and physical retirement").
                let registry = $crate::world::ReadOnly::__get_mut(&mut self.registry);
                registry.release_charged(entity, removed);
                ::core::result::Result::Ok(())
            }

            /// Creates an entity holding every component of `bundle` (a tuple of distinct
            /// component types), checking phase and budgets once.
            ///
            /// # Errors
            /// As [`create`](Self::create) (also `RevisionExhausted` for the inserts); nothing
            /// changes.
            #[inline]
            pub fn spawn<B: $crate::world::Bundle<Self>>(
                &mut self,
                bundle: B,
            ) -> ::core::result::Result<$crate::EntityId, $crate::world::WorldError> {
                let registry = $crate::world::ReadOnly::__get_mut(&mut self.registry);
                let entity = registry.try_create_charged(B::LEN)?;
                bundle.insert_validated(self, entity);
                ::core::result::Result::Ok(entity)
            }

            /// Spawns one entity per bundle of `bundles`: phase, capacity, sequence and revision
            /// budgets are checked once for the iterator's reported length (an iterator that
            /// yields fewer spawns fewer). The entities take the slots that as many `create`s
            /// would (released slots first, LIFO, then fresh ones in increasing order); returns
            /// the number spawned. Their handles are in each pool's `owners()` (the last entries
            /// of an ungrouped pool). If the iterator panics, the bundles already placed in
            /// released slots stay spawned and none of the fresh-slot part is published.
            ///
            /// # Errors
            /// As [`spawn`](Self::spawn), for the whole batch; nothing changes.
            pub fn spawn_batch<B, I>(
                &mut self,
                bundles: I,
            ) -> ::core::result::Result<usize, $crate::world::WorldError>
            where
                B: $crate::world::Bundle<Self>,
                I: ::core::iter::IntoIterator<Item = B>,
                I::IntoIter: ::core::iter::ExactSizeIterator,
            {
                let bundles = bundles.into_iter();
                let n = bundles.len();
                let registry = $crate::world::ReadOnly::__get_mut(&mut self.registry);
                registry.check_create_budget(n)?;
                let revisions = (n as u64)
                    .checked_mul(1 + B::LEN)
                    .ok_or($crate::world::WorldError::RevisionExhausted)?;
                registry.check_revisions(revisions)?;
                let mut bundles = bundles.take(n);
                // Released slots are reused first (LIFO), one entity at a time; the rest (all
                // of them, if the registry cannot batch) too.
                let reuse = if registry.fresh_batchable() {
                    n.min(registry.available() - registry.fresh_available())
                } else {
                    n
                };
                let mut spawned = 0;
                for bundle in bundles.by_ref().take(reuse) {
                    let registry = $crate::world::ReadOnly::__get_mut(&mut self.registry);
                    // Cannot fail: the whole batch's budget was checked above.
                    let entity = registry.try_create_charged(B::LEN)?;
                    bundle.insert_validated(self, entity);
                    spawned += 1;
                }
                let rest = n - reuse;
                if rest == 0 {
                    return ::core::result::Result::Ok(spawned);
                }
                // The rest take fresh slots: values are written straight into each pool's
                // reserved capacity, then published together (nothing is published if the
                // iterator panics).
                let cursors = B::batch_cursors(self, rest).expect("world pools hold at most `capacity - available` entries");
                let mut count = 0;
                // Internal iteration (`for_each` → `fold`) lets each bundle go straight from
                // the producer into the pools instead of through a stack copy per `next`.
                bundles.for_each(|bundle| {
                    if count < rest {
                        // SAFETY: `count < rest`, the `n` the cursors reserved; no pool
                        // changes until `publish`.
                        unsafe { bundle.write(cursors, count) };
                        count += 1;
                    }
                });
                let registry = $crate::world::ReadOnly::__get_mut(&mut self.registry);
                let first = registry.create_fresh_batch(count);
                registry.advance_revision(B::LEN * count as u64);
                let generation = $crate::world::__private::FIRST_GENERATION;
                // SAFETY: the cursors came from these pools for `rest >= count` entries, the
                // bundles `0..count` were written, nothing changed the pools since, and
                // `first..first + count` were never-used slots (in no pool).
                unsafe { B::publish(self, first, count, generation) };
                if B::grouped() {
                    let owner = self.registry.owner();
                    for slot in first..first + count as u32 {
                        B::pack(self, $crate::EntityId::from_raw_parts(owner, slot, generation));
                    }
                }
                spawned += count;
                ::core::result::Result::Ok(spawned)
            }

            /// Gives `entity` a component value (replacing a previous one).
            ///
            /// # Errors
            /// As [`ComponentPool::insert`]($crate::world::ComponentPool::insert).
            #[inline]
            pub fn insert<T: $crate::world::__private::bytemuck::Pod>(
                &mut self,
                entity: $crate::EntityId,
                value: T,
            ) -> ::core::result::Result<::core::option::Option<T>, $crate::world::WorldError>
            where
                Self: $crate::world::Stores<T>,
            {
                <Self as $crate::world::Stores<T>>::insert_component(self, entity, value)
            }

            /// Removes `entity`'s `T`, returning it.
            ///
            /// # Errors
            /// As [`ComponentPool::remove`]($crate::world::ComponentPool::remove).
            #[inline]
            pub fn remove<T: $crate::world::__private::bytemuck::Pod>(
                &mut self,
                entity: $crate::EntityId,
            ) -> ::core::result::Result<::core::option::Option<T>, $crate::world::WorldError>
            where
                Self: $crate::world::Stores<T>,
            {
                <Self as $crate::world::Stores<T>>::remove_component(self, entity)
            }

            /// Gives each of `entities` the value at the same index of `values`, all or nothing
            /// (phase and budget checked once, liveness in the same pass as the appends and
            /// undone on a dead entity); returns how many newly joined the pool.
            ///
            /// # Errors
            /// As [`ComponentPool::insert_batch`]($crate::world::ComponentPool::insert_batch).
            pub fn insert_batch<T: $crate::world::__private::bytemuck::Pod>(
                &mut self,
                entities: &[$crate::EntityId],
                values: &[T],
            ) -> ::core::result::Result<usize, $crate::world::WorldError>
            where
                Self: $crate::world::Stores<T>,
            {
                <Self as $crate::world::Stores<T>>::insert_batch(self, entities, values)
            }

            /// Removes the `T` of each of `entities`, all or nothing; returns how many were
            /// removed. Dense order afterwards as for
            /// [`ComponentPool::remove_batch`]($crate::world::ComponentPool::remove_batch)
            /// (a grouped component is removed entity by entity).
            ///
            /// # Errors
            /// As [`ComponentPool::remove_batch`]($crate::world::ComponentPool::remove_batch).
            pub fn remove_batch<T: $crate::world::__private::bytemuck::Pod>(
                &mut self,
                entities: &[$crate::EntityId],
            ) -> ::core::result::Result<usize, $crate::world::WorldError>
            where
                Self: $crate::world::Stores<T>,
            {
                <Self as $crate::world::Stores<T>>::remove_batch(self, entities)
            }

            /// `entity`'s `T`.
            #[inline]
            pub fn get<T: $crate::world::__private::bytemuck::Pod>(&self, entity: $crate::EntityId) -> ::core::option::Option<&T>
            where
                Self: $crate::world::Stores<T>,
            {
                <Self as $crate::world::Stores<T>>::pool(self).get(entity)
            }

            /// `entity`'s `T`, mutably (allowed in every phase).
            #[inline]
            pub fn get_mut<T: $crate::world::__private::bytemuck::Pod>(&mut self, entity: $crate::EntityId) -> ::core::option::Option<&mut T>
            where
                Self: $crate::world::Stores<T>,
            {
                <Self as $crate::world::Stores<T>>::pool_mut(self).get_mut(entity)
            }

            /// Whether `entity` holds a `T`.
            #[inline]
            pub fn contains<T: $crate::world::__private::bytemuck::Pod>(&self, entity: $crate::EntityId) -> bool
            where
                Self: $crate::world::Stores<T>,
            {
                <Self as $crate::world::Stores<T>>::pool(self).contains(entity)
            }

            /// The pool of `T`.
            #[inline]
            pub fn pool<T: $crate::world::__private::bytemuck::Pod>(&self) -> &$crate::world::ComponentPool<T, __LudusAlloc>
            where
                Self: $crate::world::Stores<T, Alloc = __LudusAlloc>,
            {
                <Self as $crate::world::Stores<T>>::pool(self)
            }

            /// The pool of `T`, mutably (values only).
            #[inline]
            pub fn pool_mut<T: $crate::world::__private::bytemuck::Pod>(&mut self) -> &mut $crate::world::ComponentPool<T, __LudusAlloc>
            where
                Self: $crate::world::Stores<T, Alloc = __LudusAlloc>,
            {
                <Self as $crate::world::Stores<T>>::pool_mut(self)
            }

            /// Applies `commands` all or nothing.
            ///
            /// # Errors
            /// As [`CommandBuffer::commit`]($crate::world::CommandBuffer::commit).
            pub fn commit<B: $crate::world::__private::Allocator + ::core::clone::Clone>(
                &mut self,
                commands: &mut $crate::world::CommandBuffer<B>,
            ) -> ::core::result::Result<(), $crate::world::WorldError> {
                commands.commit(self)
            }

            /// Checks every owned group's invariant (O(n)); for tests and debugging.
            #[doc(hidden)]
            pub fn check_groups(&self) -> bool {
                true $($( && self.$group.is_consistent(
                    &[&self.$gfirst as &dyn $crate::world::GroupMember
                      $(, &self.$gfield as &dyn $crate::world::GroupMember)*],
                ) )*)?
            }

            #[inline(always)]
            fn __grouped<T: 'static>() -> bool {
                false $($(
                    || $crate::world::__private::TypeId::of::<T>() == $crate::world::__private::TypeId::of::<$gfirst_ty>()
                    $( || $crate::world::__private::TypeId::of::<T>() == $crate::world::__private::TypeId::of::<$gty>() )*
                )*)?
            }

            #[inline]
            fn __pack<T: 'static>(&mut self, entity: $crate::EntityId) {
                let _ = entity;
                $($(
                    if $crate::world::__private::TypeId::of::<T>() == $crate::world::__private::TypeId::of::<$gfirst_ty>()
                        $( || $crate::world::__private::TypeId::of::<T>() == $crate::world::__private::TypeId::of::<$gty>() )*
                    {
                        $crate::__world_group_op!(self, pack, entity, $group, $gfirst $(, $gfield)*);
                    }
                )*)?
            }

            #[inline]
            fn __unpack<T: 'static>(&mut self, entity: $crate::EntityId) {
                let _ = entity;
                $($(
                    if $crate::world::__private::TypeId::of::<T>() == $crate::world::__private::TypeId::of::<$gfirst_ty>()
                        $( || $crate::world::__private::TypeId::of::<T>() == $crate::world::__private::TypeId::of::<$gty>() )*
                    {
                        $crate::__world_group_op!(self, unpack, entity, $group, $gfirst $(, $gfield)*);
                    }
                )*)?
            }

            $($(
                /// The owned group's packed prefix: entities and each member's values, in the
                /// same dense order.
                pub fn $group(&mut self) -> ($crate::world::Owners<'_>, &mut [$gfirst_ty] $(, &mut [$gty])*) {
                    let n = self.$group.len();
                    debug_assert!(self.check_groups());
                    let (owners, first) = self.$gfirst.split_mut();
                    ($crate::world::__private::owners_prefix(owners, n), &mut first[..n] $(, &mut self.$gfield.values_mut()[..n])*)
                }
            )*)?
        }

        $(
            impl<__LudusAlloc: $crate::world::__private::Allocator + ::core::clone::Clone> $crate::world::Stores<$ty> for $name<__LudusAlloc> {
                type Alloc = __LudusAlloc;
                #[inline(always)]
                fn pool(&self) -> &$crate::world::ComponentPool<$ty, __LudusAlloc> {
                    &self.$field
                }
                #[inline(always)]
                fn pool_mut(&mut self) -> &mut $crate::world::ComponentPool<$ty, __LudusAlloc> {
                    &mut self.$field
                }
                #[inline]
                fn insert_component(
                    &mut self,
                    entity: $crate::EntityId,
                    value: $ty,
                ) -> ::core::result::Result<::core::option::Option<$ty>, $crate::world::WorldError> {
                    // Pools are bound to this registry at init: no owner check needed.
                    self.registry.check_member_change(entity)?;
                    let (previous, joined) = self.$field.insert_validated(entity, value);
                    if joined {
                        $crate::world::ReadOnly::__get_mut(&mut self.registry).advance_revision(1);
                        self.__pack::<$ty>(entity);
                    }
                    ::core::result::Result::Ok(previous)
                }
                fn insert_batch(
                    &mut self,
                    entities: &[$crate::EntityId],
                    values: &[$ty],
                ) -> ::core::result::Result<usize, $crate::world::WorldError> {
                    if entities.len() != values.len() {
                        return ::core::result::Result::Err($crate::world::WorldError::LengthMismatch {
                            entities: entities.len(),
                            values: values.len(),
                        });
                    }
                    let joined = if Self::__grouped::<$ty>() {
                        self.registry.check_member_changes(entities)?;
                        let mut joined = 0;
                        for (&entity, &value) in entities.iter().zip(values) {
                            if self.$field.insert_validated(entity, value).1 {
                                self.__pack::<$ty>(entity);
                                joined += 1;
                            }
                        }
                        joined
                    } else {
                        self.registry.check_phase()?;
                        self.registry.check_revisions(entities.len() as u64)?;
                        self.$field.insert_batch_checked(&self.registry, entities, values)?
                    };
                    $crate::world::ReadOnly::__get_mut(&mut self.registry).advance_revision(joined as u64);
                    ::core::result::Result::Ok(joined)
                }
                fn remove_batch(
                    &mut self,
                    entities: &[$crate::EntityId],
                ) -> ::core::result::Result<usize, $crate::world::WorldError> {
                    let removed = if Self::__grouped::<$ty>() {
                        self.registry.check_member_changes(entities)?;
                        let mut removed = 0;
                        for &entity in entities {
                            self.__unpack::<$ty>(entity);
                            removed += usize::from(self.$field.remove_validated(entity).is_some());
                        }
                        removed
                    } else {
                        self.registry.check_phase()?;
                        self.registry.check_revisions(entities.len() as u64)?;
                        self.$field.remove_batch_checked(&self.registry, entities)?
                    };
                    $crate::world::ReadOnly::__get_mut(&mut self.registry).advance_revision(removed as u64);
                    ::core::result::Result::Ok(removed)
                }
                #[inline]
                fn insert_validated(&mut self, entity: $crate::EntityId, value: $ty) {
                    self.$field.append_validated(entity, value);
                    self.__pack::<$ty>(entity);
                }
                #[inline(always)]
                fn grouped() -> bool {
                    Self::__grouped::<$ty>()
                }
                #[inline]
                fn pack_joined(&mut self, entity: $crate::EntityId) {
                    self.__pack::<$ty>(entity);
                }
                fn remove_component(
                    &mut self,
                    entity: $crate::EntityId,
                ) -> ::core::result::Result<::core::option::Option<$ty>, $crate::world::WorldError> {
                    self.registry.check_member_change(entity)?;
                    self.__unpack::<$ty>(entity);
                    let value = self.$field.remove_validated(entity);
                    let registry = $crate::world::ReadOnly::__get_mut(&mut self.registry);
                    registry.advance_revision(u64::from(value.is_some()));
                    ::core::result::Result::Ok(value)
                }
            }
        )+

        impl<__LudusAlloc: $crate::world::__private::Allocator + ::core::clone::Clone> ::core::fmt::Debug for $name<__LudusAlloc> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("registry", &*self.registry)
                    $( .field(stringify!($field), &self.$field) )+
                    $($( .field(stringify!($group), &self.$group) )*)?
                    .finish()
            }
        }

        impl<__LudusAlloc: $crate::world::__private::Allocator + ::core::clone::Clone> $crate::world::CommitTarget for $name<__LudusAlloc> {
            const POOLS: u64 = [$( stringify!($field) ),+].len() as u64;
            type Alloc = __LudusAlloc;
            fn commit_registry(&self) -> &$crate::world::EntityRegistry<__LudusAlloc> {
                &self.registry
            }
            fn stores(&self, component: $crate::world::__private::TypeId) -> bool {
                false $( || component == $crate::world::__private::TypeId::of::<$ty>() )+
            }
            fn commit_create(&mut self) -> ::core::result::Result<$crate::EntityId, $crate::world::WorldError> {
                self.create()
            }
            fn commit_destroy(&mut self, entity: $crate::EntityId) -> ::core::result::Result<(), $crate::world::WorldError> {
                self.destroy(entity)
            }
            fn commit_insert(
                &mut self,
                entity: $crate::EntityId,
                component: $crate::world::__private::TypeId,
                bytes: &[u8],
            ) -> ::core::result::Result<(), $crate::world::WorldError> {
                $(
                    if component == $crate::world::__private::TypeId::of::<$ty>() {
                        let value: $ty = $crate::world::__private::bytemuck::pod_read_unaligned(bytes);
                        return self.insert::<$ty>(entity, value).map(|_| ());
                    }
                )+
                ::core::result::Result::Err($crate::world::WorldError::UnknownComponent)
            }
            fn commit_remove(
                &mut self,
                entity: $crate::EntityId,
                component: $crate::world::__private::TypeId,
            ) -> ::core::result::Result<(), $crate::world::WorldError> {
                $(
                    if component == $crate::world::__private::TypeId::of::<$ty>() {
                        return self.remove::<$ty>(entity).map(|_| ());
                    }
                )+
                ::core::result::Result::Err($crate::world::WorldError::UnknownComponent)
            }
        }
    };
}

/// Packs or unpacks one entity in one owned group with statically dispatched pool calls.
#[doc(hidden)]
#[macro_export]
macro_rules! __world_group_op {
    ($world:ident, pack, $entity:ident, $group:ident, $($member:ident),+) => {{
        let indices = [$( $world.$member.dense_index($entity) ),+];
        if $world.$group.must_pack(&indices) {
            let to = $world.$group.grow();
            let mut k = 0usize;
            $(
                match indices[k] {
                    ::core::option::Option::Some(i) if i != to => $world.$member.swap_dense(i, to),
                    _ => {}
                }
                k += 1;
            )+
            let _ = k;
        }
    }};
    ($world:ident, unpack, $entity:ident, $group:ident, $($member:ident),+) => {{
        let indices = [$( $world.$member.dense_index($entity) ),+];
        if $world.$group.must_unpack(&indices) {
            let to = $world.$group.shrink();
            let mut k = 0usize;
            $(
                match indices[k] {
                    ::core::option::Option::Some(i) if i != to => $world.$member.swap_dense(i, to),
                    _ => {}
                }
                k += 1;
            )+
            let _ = k;
        }
    }};
}
