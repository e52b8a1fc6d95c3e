//! Identity primitives: runtime handles (owner token + slot + generation) and durable UUIDs.
//!
//! Runtime handles name one incarnation inside one registry lifetime and are never serialized.
//! Durable ids (UUIDs wrapped in [`AssetId`], [`SourceObjectId`], [`InstanceId`]) survive saves
//! and restarts and are resolved to handles only at explicit boundaries. UUID text follows
//! [`UuidPolicy`]; new ids are minted from an explicit [`EntropySource`] ([`OsEntropy`] in
//! production, optionally batched by a fork-safe [`BatchedMinter`]).

#[cfg(not(loom))]
mod batched;
mod durable_id;
mod entropy;
#[cfg(not(loom))]
mod fork_watch;
mod generation;
mod handle;
mod mint;
mod persistent_id;
pub mod test_entropy;
mod token;
mod uuid_codec;

#[cfg(not(loom))]
pub use batched::{BatchedMinter, BATCH_BYTES, BATCH_IDS};
pub use durable_id::{AssetId, InstanceId, PersistentObjectKey, SourceObjectId};
pub use entropy::{EntropyError, EntropySource, OsEntropy};
pub use generation::{next_generation, GenerationStep, FIRST_GENERATION, TERMINAL_GENERATION};
pub use handle::{Handle, HandleTag};
pub use mint::{mint_unique, mint_v4, IdentityConflict, MintError, MINT_ATTEMPTS};
pub(crate) use persistent_id::is_legacy_id_bytes;
pub use persistent_id::{
    is_legacy_id, PersistentId, PersistentIdError, AUTHORED_PREFIX, LEGACY_ID_MAX, SPAWNED_PREFIX,
};
#[cfg(not(loom))]
pub use token::issue_owner_token;
pub use token::{IdentityExhausted, OwnerToken, TokenSource};
pub use uuid_codec::{
    format_uuid, format_uuid_nul, parse_uuid, UuidError, UuidPolicy, UUID_TEXT_LEN,
};
