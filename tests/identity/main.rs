//! Durable identity below the world: UUID and persistent-id text, typed ids, minting and its
//! entropy sources, handles and generations, owner-token sources.
//!
//! Under Miri the edge tests that are safe code only are ignored; the tests that reach unsafe
//! code (formatting's `from_utf8_unchecked`, the handles' `Pod` impls, token sources, the OS
//! entropy source) run at a reduced scale.

#[path = "../support/mod.rs"]
mod support;

mod generations;
mod minting;
mod text;
mod tokens;
