//! Gameplay world storage: the fixed-capacity [`EntityRegistry`], sparse/dense
//! [`ComponentPool`]s, structural phases, deferred [`CommandBuffer`]s, [`join`]s and owned
//! groups, tied together by the [`world!`](crate::world!) roster macro.
//!
//! See `docs/world.md` for the data layout, invariants and iteration order.
//!
//! A value borrowed from a pool cannot outlive a structural change (the borrow checker
//! enforces "borrowed until the next structural change"):
//!
//! ```compile_fail,E0502
//! use ludus::prelude::*;
//! #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
//! #[repr(C)]
//! struct Hp(u32);
//! ludus::world! { struct W { hp: Hp } }
//! let mut w = W::try_new(2).unwrap();
//! let e = w.create().unwrap();
//! w.insert(e, Hp(1)).unwrap();
//! let hp = w.get::<Hp>(e).unwrap();
//! w.destroy(e).unwrap(); // error[E0502]: `w` is also borrowed as immutable
//! let _ = hp.0;
//! ```
//!
//! Systems holding the read-only registry cannot reach a pool's structural methods:
//!
//! ```compile_fail,E0308
//! use ludus::prelude::*;
//! #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
//! #[repr(C)]
//! struct Hp(u32);
//! ludus::world! { struct W { hp: Hp } }
//! let mut w = W::try_new(2).unwrap();
//! let e = w.create().unwrap();
//! let registry = &w.registry;
//! w.hp.insert(registry, e, Hp(1)).unwrap(); // error[E0308]: expected `&mut EntityRegistry`
//! ```
//!
//! and no path leads from the read-only registry to `&mut EntityRegistry` (its field is private
//! to the crate):
//!
//! ```compile_fail,E0616
//! use ludus::prelude::*;
//! #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
//! #[repr(C)]
//! struct Hp(u32);
//! ludus::world! { struct W { hp: Hp } }
//! let mut w = W::try_new(2).unwrap();
//! let e = w.create().unwrap();
//! w.registry.0.try_release(e).unwrap(); // error[E0616]: field `0` is private
//! ```
//!
//! A bundle naming one component type twice is refused before anything changes:
//!
//! ```
//! use ludus::prelude::*;
//! #[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
//! #[repr(C)]
//! struct Hp(u32);
//! ludus::world! { struct W { hp: Hp } }
//! let mut w = W::try_new(2).unwrap();
//! assert!(matches!(w.spawn((Hp(1), Hp(2))), Err(WorldError::DuplicateComponent { .. })));
//! assert_eq!((w.registry.len(), w.hp.len()), (0, 0));
//! ```
//!
//! The same code with a later borrow compiles:
//!
//! ```
//! use ludus::prelude::*;
//! #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
//! #[repr(C)]
//! struct Hp(u32);
//! ludus::world! { struct W { hp: Hp } }
//! let mut w = W::try_new(2).unwrap();
//! let e = w.create().unwrap();
//! w.insert(e, Hp(1)).unwrap();
//! assert_eq!(w.get::<Hp>(e).unwrap().0, 1);
//! w.destroy(e).unwrap();
//! ```

pub(crate) mod command;
mod macros;
pub(crate) mod query;
pub(crate) mod raw;
pub(crate) mod store;
pub(crate) mod world_ops;

pub use command::buffer::{BundleSink, CommandBuffer, CommandBundle, Provisional, Target};
pub use command::spawn::Bundle;
/// Typed insert without the compile-time roster bound (content restore dispatches by type).
pub(crate) use command::structural::insert as insert_value;
/// Whether a world's pools are exactly those bound to its registry (content restore checks it
/// before pass 1).
pub(crate) use command::structural::roster_intact;
pub use query::cluster::{cluster, ClusterError, IntoCluster};
pub use query::column::{
    opt, without, Column, ColumnMut, ColumnRef, IntoColumn, Opt, OptMut, OptRef, Without,
};
pub use query::join::{join, IntoJoin, Join, JoinPlan};
pub use raw::dense::MAX_GROUP_MEMBERS;
pub use raw::keys::{EntityId, EntityKey, EntityTag, Owners, OwnersIter};
pub use store::component::{Component, PlainArray};
pub use store::error::{CommandError, InitError, Rejection, WorldError};
pub use store::pool::{ComponentPool, SELECT_BLOCK};
pub use store::read_only::ReadOnly;
pub use store::registry::{EntityRegistry, MAX_CAPACITY};
pub use store::roster::Stores;
pub use world_ops::{WorldDiagnostics, WorldOps};

/// The plumbing of [`world!`](crate::world!) and of hand-written rosters: the [`Roster`]
/// trait, the type lists through which generic code visits a world's pools, the typed pool
/// queries, and the [`EntityHooks`] a world runs around each destroy. A program that declares
/// its worlds with `world!` names none of these.
///
/// [`Roster`]: roster::Roster
/// [`EntityHooks`]: roster::EntityHooks
pub mod roster {
    pub use crate::world::query::pool_access::{GroupQuery, PoolAccess, PoolQuery};
    pub use crate::world::store::hooks::EntityHooks;
    pub use crate::world::store::roster::{
        ComponentList, GroupList, GroupVisitor, HookedParts, Parts, PartsRef, PoolVisitor,
        PoolsMut, PoolsMutList, PoolsRef, PoolsRefList, Roster, TypeVisitor,
    };
}

/// Paths the [`world!`](crate::world!) expansion names. Hidden because it is no API of its
/// own: re-exports of the allocator trait and the default allocator, so user crates need no
/// direct `allocator-api2` dependency.
#[doc(hidden)]
pub mod __private {
    pub use allocator_api2::alloc::{Allocator, Global};
    /// Named by `#[derive(EntityRefs)]` on a generic struct.
    pub use bytemuck::Zeroable;

    /// The bound of a world's allocator parameter.
    pub trait Alloc: Allocator + Clone + 'static {}
    impl<A: Allocator + Clone + 'static> Alloc for A {}
}
