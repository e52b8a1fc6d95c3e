//! The `world!` roster macro: a thin shell. It declares the struct and implements
//! [`Roster`](crate::world::roster::Roster) (the component and group type lists, and borrows of the
//! fields); every algorithm is generic Rust in [`WorldOps`](crate::world::WorldOps).

/// Declares a world: one [`EntityRegistry`](crate::world::EntityRegistry) and one
/// [`ComponentPool`](crate::world::ComponentPool) per component, with optional owned groups,
/// and, with a `durable` clause, durable identity.
///
/// ```text
/// ludus::world! {
///     pub struct Game { pub position: Position, pub velocity: Velocity, pub health: Health }
///     groups { moving(position: Position, velocity: Velocity) }   // optional
/// }
/// ludus::world! {
///     pub struct Level { pub position: Position, pub follow: Follow }
///     durable { entity_refs { Follow } }   // or `durable` alone
/// }
/// ```
///
/// The struct `Game<A = Global>` gets a read-only field `registry`, a private field holding
/// the world's destroy hooks, and one pool field per component (with the visibility you write);
/// it implements [`Roster`](crate::world::roster::Roster) and [`Stores<T>`](crate::world::Stores) for
/// each component type. Every operation is a method of [`WorldOps`](crate::world::WorldOps)
/// (bring it into scope with `use ludus::prelude::*`): `create`, `create_batch`, `spawn`,
/// `spawn_batch`, `destroy`, `insert`, `remove`, `insert_batch`, `remove_batch`, `get`,
/// `get_mut`, `contains`, `pool`, `pool_mut`, `pools_mut`, `split_mut`, `group_mut`, `commit`,
/// `begin_structural`, `end_structural`, `clear_pending`.
///
/// Without the `durable` clause the world is plain: its hooks are `()` (its destroys pay
/// nothing for durable identity), it has no durable methods, and its constructors are
/// `try_new(capacity)` and `try_new_in(capacity, alloc)`. With it the hooks are the world's
/// [`Durable`](crate::durable::Durable) tables (the binding table, names and hierarchy:
/// `docs/durable.md`, read through `w.durable()`), the world implements
/// [`DurableRoster`](crate::durable::DurableRoster) (its `Refs` are the `entity_refs` types:
/// the components with `EntityId` fields, [`EntityRefs`](crate::durable::EntityRefs), which
/// duplication, save and restore remap) and so has the methods of [`DurableOps`](crate::durable::DurableOps),
/// [`PersistentOps`](crate::durable::PersistentOps) and
/// [`CheckpointOps`](crate::durable::CheckpointOps), and its constructors are
/// `try_new_durable(capacity, config)` and `try_new_durable_in(capacity, config, alloc)` (no
/// `try_new`). Every constructor takes all memory at init; a failed init consumes no owner
/// token. The macro also adds one method per group, `moving()`, returning `(Owners, &mut
/// [Position], &mut [Velocity])`: the packed prefix of the members' dense arrays, in the same
/// order.
///
/// Component types must be distinct [`Component`](crate::world::Component) types (a repeated
/// type is a compile error: conflicting `Stores` impls); groups that share a pool must be
/// nested (EnTT's nested groups: `moving(position: Position, velocity: Velocity)` and
/// `swirling(position: Position, velocity: Velocity, rotation: Rotation)` are both zips of
/// slices, the larger group's prefix inside the smaller one's), and a group has 1 to
/// [`MAX_GROUP_MEMBERS`](crate::world::MAX_GROUP_MEMBERS) members (the constructor fails with
/// `GroupOverlap` otherwise). Field and group names must differ from each other and from
/// `registry`, the one name the macro reserves.
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
    // Type lists `(A, (B, (C, ())))` and field borrows in the same shape.
    (@list) => { () };
    (@list $head:ty $(, $rest:ty)*) => { ($head, $crate::world!(@list $($rest),*)) };
    (@mut $s:ident;) => { () };
    (@mut $s:ident; $f:ident $(, $rest:ident)*) => {
        (::core::option::Option::Some(&mut $s.$f), $crate::world!(@mut $s; $($rest),*))
    };
    (@ref $s:ident;) => { () };
    (@ref $s:ident; $f:ident $(, $rest:ident)*) => { (&$s.$f, $crate::world!(@ref $s; $($rest),*)) };
    // The struct, its constructors, roster and group methods, with hooks of type `$hooks` made
    // by `$make` and the world bound by `$bind`.
    (@world [$hooks:ty; $new:ident, $new_in:ident ($($cfg:ident : $cty:ty)?); $make:path; $bind:path]
        $(#[$meta:meta])* $vis:vis struct $name:ident { $( $(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty ),+ $(,)? }
        $( groups { $( $group:ident ( $( $gfield:ident : $gty:ty ),+ $(,)? ) ),* $(,)? } )?) => {
        $(#[$meta])*
        $vis struct $name<__LudusAlloc: $crate::world::__private::Alloc = $crate::world::__private::Global> {
            /// The registry, read-only outside the world's structural methods.
            pub registry: $crate::world::ReadOnly<
                $crate::world::EntityRegistry<__LudusAlloc>,
                $crate::world!(@list $($( $crate::world!(@list $($gty),+) ),*)?),
            >,
            __ludus_hooks: $crate::world::ReadOnly<$hooks>,
            $( $(#[$fmeta])* $fvis $field: $crate::world::ComponentPool<$ty, __LudusAlloc>, )+
        }
        #[allow(dead_code)]
        impl $name<$crate::world::__private::Global> {
            /// The world on the global allocator: see the constructor of the same name with `_in`.
            #[allow(clippy::missing_errors_doc)]
            pub fn $new(capacity: usize $(, $cfg: $cty)?) -> ::core::result::Result<Self, $crate::world::InitError> {
                Self::$new_in(capacity, $($cfg,)? $crate::world::__private::Global)
            }
        }
        #[allow(dead_code)]
        impl<__LudusAlloc: $crate::world::__private::Alloc> $name<__LudusAlloc> {
            /// A world of `capacity` entities allocating every array from `alloc` now; the
            /// owner token is issued after every array was allocated.
            ///
            /// # Errors
            /// As [`WorldOps::try_bind`]($crate::world::WorldOps::try_bind) (a durable world also:
            /// `UnknownRefComponent`, `UndeclaredEntityRefs`), and allocation.
            pub fn $new_in(capacity: usize, $($cfg: $cty,)? alloc: __LudusAlloc)
                -> ::core::result::Result<Self, $crate::world::InitError> {
                let mut world = Self {
                    registry: $crate::world::ReadOnly::try_new_world_registry(capacity, alloc.clone())?,
                    __ludus_hooks: $make(capacity, $($cfg,)? alloc.clone())?,
                    $( $field: $crate::world::ComponentPool::try_unbound_in(capacity, alloc.clone())?, )+
                };
                $bind(&mut world).map(|()| world)
            }
            $($(
                /// The owned group's packed prefix: entities and each member's values, in the
                /// same dense order.
                pub fn $group(&mut self) -> ($crate::world::Owners<'_> $(, &mut [$gty])+) {
                    $crate::world::WorldOps::group_mut::<($($gty,)+)>(self)
                }
            )*)?
        }
        impl<__LudusAlloc: $crate::world::__private::Alloc> $crate::world::roster::Roster for $name<__LudusAlloc> {
            type Alloc = __LudusAlloc;
            type Components = $crate::world!(@list $($ty),+);
            type Groups = $crate::world!(@list $($( $crate::world!(@list $($gty),+) ),*)?);
            type Hooks = $hooks;
            const NAMES: &'static [&'static str] = &[$(stringify!($field)),+];
            #[inline(always)]
            fn hooked_parts(&mut self) -> $crate::world::roster::HookedParts<'_, Self> {
                (&mut self.registry, &mut self.__ludus_hooks, $crate::world!(@mut self; $($field),+))
            }
            #[inline(always)]
            fn hooks(&self) -> &$hooks {
                &self.__ludus_hooks
            }
            #[inline(always)]
            fn parts_ref(&self) -> $crate::world::roster::PartsRef<'_, Self> {
                (&*self.registry, $crate::world!(@ref self; $($field),+))
            }
        }
        $( impl<__LudusAlloc: $crate::world::__private::Alloc> $crate::world::Stores<$ty> for $name<__LudusAlloc> {} )+
        impl<__LudusAlloc: $crate::world::__private::Alloc> ::core::fmt::Debug for $name<__LudusAlloc> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(stringify!($name)).field("registry", &*self.registry)
                    .field("hooks", &*self.__ludus_hooks) $( .field(stringify!($field), &self.$field) )+ .finish()
            }
        }
    };
    // A durable world: its hooks are its durable tables.
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($fields:tt)+ } $( groups { $($groups:tt)* } )?
     durable $( { entity_refs { $( $rty:ty ),* $(,)? } } )?) => {
        $crate::world!(@world [$crate::durable::Durable<__LudusAlloc>; try_new_durable, try_new_durable_in
            (config: $crate::durable::DurableConfig); $crate::world::ReadOnly::try_new_durable;
            $crate::durable::roster::try_bind_durable] $(#[$meta])* $vis struct $name { $($fields)+ } $( groups { $($groups)* } )?);
        impl<__LudusAlloc: $crate::world::__private::Alloc> $crate::durable::DurableRoster for $name<__LudusAlloc> { type Refs = $crate::world!(@list $($($rty),*)?);
            fn undeclared_entity_refs() -> ::core::option::Option<&'static str> { $crate::__undeclared_refs!([$($($rty),*)?] $($fields)+) }
        }
    };
    // A plain world: no hooks.
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($fields:tt)+ } $( groups { $($groups:tt)* } )?) => {
        $crate::world!(@world [(); try_new, try_new_in (); $crate::world::ReadOnly::no_hooks_in;
            $crate::world::WorldOps::try_bind] $(#[$meta])* $vis struct $name { $($fields)+ } $( groups { $($groups)* } )?);
    };
}

/// The first field of a durable `world!` whose type implements `EntityRefs` but is not among
/// the declared `entity_refs` types (`DurableRoster::undeclared_entity_refs`).
#[doc(hidden)]
#[macro_export]
macro_rules! __undeclared_refs {
    ([$($rty:ty),*] $( $(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty ),+ $(,)?) => {{
        #[allow(unused_imports)]
        use $crate::durable::roster::{DeclaresRefs as _, NoRefs as _};
        let declared: &[::core::any::TypeId] = &[$(::core::any::TypeId::of::<$rty>()),*];
        $(
            if (&&$crate::durable::roster::RefsProbe::<$ty>::NEW).declares_refs()
                && !declared.contains(&::core::any::TypeId::of::<$ty>())
            {
                return ::core::option::Option::Some(stringify!($field));
            }
        )+
        ::core::option::Option::None
    }};
}
