//! [`EntityHooks`]: the seam through which a layer above the core keeps per-entity tables of
//! its own in step with the world's destroys (EnTT's `on_destroy`, bevy's `on_despawn`).
//!
//! A plain world's hooks are `()`: every method is a constant, so the checks and the call fold
//! away. A durable world's hooks are its [`Durable`](crate::durable::Durable) tables: they
//! refuse to destroy a protected entity, and detach each destroyed one (binding removed,
//! children reparented, name dropped) before its components are removed and its slot released.

use crate::identity::OwnerToken;
use crate::world::raw::keys::EntityId;

/// What a world runs around each destroy (direct, by a commit, by a respawn).
///
/// Nothing unsafe relies on an implementation: hooks only decide whether a destroy may go
/// ahead and hear about it. A world checks [`serves`](Self::serves) with its pools before
/// every destroy (in release builds too), asks [`protects`](Self::protects) for every entity
/// before changing anything, then calls [`on_destroy`](Self::on_destroy) once per entity,
/// before the entity's components are removed and its slot released.
pub trait EntityHooks {
    /// Whether these hooks belong to the registry whose owner token is `owner`. A world whose
    /// hooks do not belong to its registry refuses every destroy (`ForeignPool`).
    fn serves(&self, owner: OwnerToken) -> bool;
    /// Whether unbound hooks can serve a registry of `capacity` slots (checked at bind).
    fn fits(&self, capacity: usize) -> bool;
    /// Binds the hooks to the registry whose owner token is `owner` (once, when the world is
    /// bound, after [`fits`](Self::fits) answered true).
    fn attach(&mut self, owner: OwnerToken);
    /// Whether `entity` may not be destroyed now (the destroy fails with `Protected`).
    fn protects(&self, entity: EntityId) -> bool;
    /// `entity` is being destroyed: every check passed; its components and slot go next.
    fn on_destroy(&mut self, owner: OwnerToken, entity: EntityId);
}

/// No hooks: a plain world.
impl EntityHooks for () {
    #[inline(always)]
    fn serves(&self, _: OwnerToken) -> bool {
        true
    }
    #[inline(always)]
    fn fits(&self, _: usize) -> bool {
        true
    }
    #[inline(always)]
    fn attach(&mut self, _: OwnerToken) {}
    #[inline(always)]
    fn protects(&self, _: EntityId) -> bool {
        false
    }
    #[inline(always)]
    fn on_destroy(&mut self, _: OwnerToken, _: EntityId) {}
}
