//! The `world!` roster macro: a thin shell. It declares the struct and implements
//! [`Roster`](crate::world::Roster) (the component and group type lists, and borrows of the
//! fields); every algorithm is generic Rust in [`WorldOps`](crate::world::WorldOps).

/// Declares a world: one [`EntityRegistry`](crate::world::EntityRegistry) and one
/// [`ComponentPool`](crate::world::ComponentPool) per component, with optional owned groups.
///
/// ```text
/// ludus::world! {
///     pub struct Game { pub position: Position, pub velocity: Velocity, pub health: Health }
///     groups { moving(position: Position, velocity: Velocity) }
///     entity_refs { Target }   // optional: components with EntityId fields (EntityRefs)
/// }
/// ```
///
/// The struct `Game<A = Global>` gets read-only fields `registry` and `durable` (the binding
/// table, names and hierarchy: `docs/durable.md`) and one pool field per component (with the
/// visibility you write); it implements [`Roster`](crate::world::Roster)
/// and [`Stores<T>`](crate::world::Stores) for each component type. Every operation is a
/// method of [`WorldOps`](crate::world::WorldOps) (bring it into scope with
/// `use ludus::prelude::*`): `create`, `create_batch`, `spawn`, `spawn_batch`, `destroy`,
/// `insert`, `remove`, `insert_batch`, `remove_batch`, `get`, `get_mut`, `contains`, `pool`,
/// `pool_mut`, `pools_mut`, `split_mut`, `group_mut`, `commit`, `begin_structural`,
/// `end_structural`, `clear_pending`; the durable-identity operations are methods of
/// [`DurableOps`](crate::durable::DurableOps). The macro adds four constructors, `try_new(capacity)`,
/// `try_new_in(capacity, alloc)`, and with durable tables `try_new_durable(capacity, config)` and
/// `try_new_durable_in(capacity, config, alloc)` (all memory at init; a failed init consumes no
/// owner token),
/// and one method per group, `moving()`, returning `(Owners, &mut [Position], &mut
/// [Velocity])`: the packed prefix of the members' dense arrays, in the same order.
///
/// Component types must be distinct [`bytemuck::Pod`] types (a repeated type is a compile
/// error: conflicting `Stores` impls); groups that share a pool must be nested (EnTT's nested
/// groups: `moving(position: Position, velocity: Velocity)` and `swirling(position: Position,
/// velocity: Velocity, rotation: Rotation)` are both zips of slices, the larger group's prefix
/// inside the smaller one's), and a group has 1 to
/// [`MAX_GROUP_MEMBERS`](crate::world::MAX_GROUP_MEMBERS) members (`try_new` fails with
/// `GroupOverlap` otherwise). Field and group names must differ from each other and from
/// `registry`.
///
/// # Examples
/// ```
/// use ludus::prelude::*;
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
/// let e = game.spawn((Position(1.0), Velocity(0.5)))?;
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
    // Type lists: `(A, (B, (C, ())))`.
    (@list) => { () };
    (@list $head:ty $(, $rest:ty)*) => { ($head, $crate::world!(@list $($rest),*)) };
    // Field borrows in the same shape.
    (@mut $s:ident;) => { () };
    (@mut $s:ident; $f:ident $(, $rest:ident)*) => {
        (::core::option::Option::Some(&mut $s.$f), $crate::world!(@mut $s; $($rest),*))
    };
    (@ref $s:ident;) => { () };
    (@ref $s:ident; $f:ident $(, $rest:ident)*) => {
        (&$s.$f, $crate::world!(@ref $s; $($rest),*))
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty ),+ $(,)?
        }
        $( groups {
            $( $group:ident ( $( $gfield:ident : $gty:ty ),+ $(,)? ) ),* $(,)?
        } )?
        $( entity_refs { $( $rty:ty ),* $(,)? } )?
    ) => {
        $(#[$meta])*
        $vis struct $name<
            __LudusAlloc: $crate::world::__private::Allocator + ::core::clone::Clone + 'static = $crate::world::__private::Global,
        > {
            /// The registry, read-only outside the world's structural methods.
            pub registry: $crate::world::ReadOnly<
                $crate::world::EntityRegistry<__LudusAlloc>,
                $crate::world!(@list $($( $crate::world!(@list $($gty),+) ),*)?),
            >,
            /// Durable identity: binding table, names and hierarchy (disabled unless made
            /// with `try_new_durable`); read-only outside the world's methods.
            pub durable: $crate::world::ReadOnly<$crate::durable::Durable<__LudusAlloc>>,
            $( $(#[$fmeta])* $fvis $field: $crate::world::ComponentPool<$ty, __LudusAlloc>, )+
        }

        impl $name<$crate::world::__private::Global> {
            /// A world of `capacity` entities on the global allocator.
            ///
            /// # Errors
            /// As [`WorldOps::try_bind`]($crate::world::WorldOps::try_bind), and allocation.
            #[allow(dead_code)]
            pub fn try_new(capacity: usize) -> ::core::result::Result<Self, $crate::world::InitError> {
                Self::try_new_in(capacity, $crate::world::__private::Global)
            }

            /// A world of `capacity` entities with durable identity (binding table, names,
            /// hierarchy) sized by `config`, on the global allocator.
            ///
            /// # Errors
            /// As [`try_new`](Self::try_new).
            #[allow(dead_code)]
            pub fn try_new_durable(
                capacity: usize,
                config: $crate::durable::DurableConfig,
            ) -> ::core::result::Result<Self, $crate::world::InitError> {
                Self::try_new_durable_in(capacity, config, $crate::world::__private::Global)
            }
        }

        #[allow(dead_code)]
        impl<__LudusAlloc: $crate::world::__private::Allocator + ::core::clone::Clone + 'static> $name<__LudusAlloc> {
            /// A world of `capacity` entities allocating from `alloc`; the owner token is
            /// issued only after every array was allocated.
            ///
            /// # Errors
            /// As [`WorldOps::try_bind`]($crate::world::WorldOps::try_bind), and allocation.
            pub fn try_new_in(
                capacity: usize,
                alloc: __LudusAlloc,
            ) -> ::core::result::Result<Self, $crate::world::InitError> {
                Self::try_with_in(capacity, ::core::option::Option::None, alloc)
            }

            /// As [`try_new_durable`](Self::try_new_durable), allocating from `alloc`.
            ///
            /// # Errors
            /// As [`try_new`](Self::try_new).
            pub fn try_new_durable_in(
                capacity: usize,
                config: $crate::durable::DurableConfig,
                alloc: __LudusAlloc,
            ) -> ::core::result::Result<Self, $crate::world::InitError> {
                Self::try_with_in(capacity, ::core::option::Option::Some(config), alloc)
            }

            fn try_with_in(
                capacity: usize,
                config: ::core::option::Option<$crate::durable::DurableConfig>,
                alloc: __LudusAlloc,
            ) -> ::core::result::Result<Self, $crate::world::InitError> {
                let mut world = Self {
                    registry: $crate::world::ReadOnly::try_new_world_registry(capacity, alloc.clone())?,
                    durable: $crate::world::ReadOnly::try_new_durable(capacity, config, alloc.clone())?,
                    $( $field: $crate::world::ComponentPool::try_unbound_in(capacity, alloc.clone())?, )+
                };
                $crate::world::WorldOps::try_bind(&mut world)?;
                ::core::result::Result::Ok(world)
            }

            $($(
                /// The owned group's packed prefix: entities and each member's values, in the
                /// same dense order.
                pub fn $group(&mut self) -> ($crate::world::Owners<'_> $(, &mut [$gty])+) {
                    $crate::world::WorldOps::group_mut::<($($gty,)+)>(self)
                }
            )*)?
        }

        impl<__LudusAlloc: $crate::world::__private::Allocator + ::core::clone::Clone + 'static> $crate::world::Roster for $name<__LudusAlloc> {
            type Alloc = __LudusAlloc;
            type Components = $crate::world!(@list $($ty),+);
            type Groups = $crate::world!(@list $($( $crate::world!(@list $($gty),+) ),*)?);
            type Refs = $crate::world!(@list $($($rty),*)?);
            const NAMES: &'static [&'static str] = &[$(stringify!($field)),+];
            #[inline(always)]
            fn durable_parts(&mut self) -> $crate::world::DurableParts<'_, Self> {
                (&mut self.registry, &mut self.durable, $crate::world!(@mut self; $($field),+))
            }
            #[inline(always)]
            fn durable_ref(&self) -> &$crate::durable::Durable<__LudusAlloc> {
                &self.durable
            }
            #[inline(always)]
            fn parts_ref(&self) -> $crate::world::PartsRef<'_, Self> {
                (&*self.registry, $crate::world!(@ref self; $($field),+))
            }
        }

        $( impl<__LudusAlloc: $crate::world::__private::Allocator + ::core::clone::Clone + 'static> $crate::world::Stores<$ty> for $name<__LudusAlloc> {} )+

        impl<__LudusAlloc: $crate::world::__private::Allocator + ::core::clone::Clone + 'static> ::core::fmt::Debug for $name<__LudusAlloc> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("registry", &*self.registry)
                    .field("durable", &*self.durable)
                    $( .field(stringify!($field), &self.$field) )+
                    .finish()
            }
        }
    };
}
