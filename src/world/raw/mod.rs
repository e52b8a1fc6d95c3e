//! Raw storage: the unsafe primitives of the world, behind a narrow interface.
//!
//! [`dense`] holds a pool's arrays (the sparse slot map, the dense keys and values, the
//! membership bitset) and the cursor that writes them with the length in a register; [`keys`]
//! the entity handle and the packed dense keys. Everything above this module is safe code over
//! these primitives, or states the obligation it discharges at each call.

pub(crate) mod dense;
pub(crate) mod keys;
