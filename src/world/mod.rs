//! Gameplay world storage: the fixed-capacity [`EntityRegistry`], sparse/dense
//! [`ComponentPool`]s, structural phases, deferred [`CommandBuffer`]s, [`join`]s and owned
//! groups, tied together by the [`world!`](crate::world!) roster macro.
//!
//! See `docs/world.md` for the data layout, invariants and iteration order.
//!
//! A value borrowed from a pool cannot outlive a structural change (the borrow checker
//! enforces the seed's "borrowed until structural mutation"):
//!
//! ```compile_fail
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
//! ```compile_fail
//! #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
//! #[repr(C)]
//! struct Hp(u32);
//! ludus::world! { struct W { hp: Hp } }
//! let mut w = W::try_new(2).unwrap();
//! let e = w.create().unwrap();
//! let registry = &w.registry;
//! w.hp.insert(registry, e, Hp(1)).unwrap(); // error: expected `&mut EntityRegistry`
//! ```
//!
//! The same code with a later borrow compiles:
//!
//! ```
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

use crate::identity::{Handle, HandleTag};

mod commands;
mod dense;
mod error;
mod fixed;
mod group;
mod macros;
mod owners;
mod pool;
mod query;
mod registry;
mod stores;

pub use commands::{CommandBuffer, CommitTarget, Provisional, Target};
pub use error::{CommandError, InitError, Rejection, WorldError};
pub use group::{GroupMember, OwnedGroup};
pub use owners::{EntityKey, Owners, OwnersIter};
pub use pool::{BatchCursor, ComponentPool};
pub use query::{join, Column, ColumnMut, ColumnRef, IntoColumn, IntoJoin, Join};
pub use registry::{EntityRegistry, MAX_CAPACITY};
pub use stores::{Bundle, ReadOnly, Stores};

/// Tag of entity handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntityTag {}

impl HandleTag for EntityTag {
    const NAME: &'static str = "Entity";
    const OWNER: &'static str = "World";
}

/// A runtime entity handle: owner (world token) `u64`, slot `u32`, generation `u32`.
pub type EntityId = Handle<EntityTag>;

/// Paths used by [`world!`](crate::world!) expansions; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::identity::FIRST_GENERATION;
    pub use allocator_api2::alloc::{Allocator, Global};
    pub use bytemuck;
    pub use core::any::TypeId;

    /// The first `n` of `owners` (a group's packed prefix).
    pub fn owners_prefix(owners: super::Owners<'_>, n: usize) -> super::Owners<'_> {
        owners.prefix(n)
    }
}
