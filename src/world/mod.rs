//! Gameplay world storage: the fixed-capacity [`EntityRegistry`], sparse/dense component pools,
//! structural phases, deferred commands and joins.

use crate::identity::{Handle, HandleTag};

/// Tag of entity handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntityTag {}

impl HandleTag for EntityTag {
    const NAME: &'static str = "Entity";
    const OWNER: &'static str = "World";
}

/// A runtime entity handle: owner (world token) `u64`, slot `u32`, generation `u32`.
pub type EntityId = Handle<EntityTag>;
