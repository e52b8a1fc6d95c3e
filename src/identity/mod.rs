//! Identity primitives: runtime handles (owner token + slot + generation) and durable UUIDs.
//!
//! Runtime handles name one incarnation inside one registry lifetime and are never serialized.
//! Durable ids (UUIDs wrapped in [`AssetId`], [`SourceObjectId`], [`InstanceId`]) survive saves
//! and restarts and are resolved to handles only at explicit boundaries.

mod generation;
mod handle;
mod token;

pub use generation::{next_generation, GenerationStep, FIRST_GENERATION, TERMINAL_GENERATION};
pub use handle::{Handle, HandleTag};
#[cfg(not(loom))]
pub use token::issue_owner_token;
pub use token::{IdentityExhausted, OwnerToken, TokenSource};
