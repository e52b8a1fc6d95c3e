//! Pools and registry: the fixed-capacity [`EntityRegistry`](registry::EntityRegistry) and
//! the sparse/dense [`ComponentPool`](pool::ComponentPool), their errors, the read-only wrapper
//! a world hands out, and the [`Roster`](roster::Roster) that says which pools a world has.

pub(crate) mod component;
pub(crate) mod error;
pub(crate) mod hooks;
pub(crate) mod pool;
pub(crate) mod read_only;
pub(crate) mod registry;
pub(crate) mod reserve;
pub(crate) mod roster;
