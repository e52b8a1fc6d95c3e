//! Reading the pools: columns (required, optional, excluded), joins and their plans,
//! clustering, and typed access to a roster's pools.

pub(crate) mod cluster;
pub(crate) mod column;
pub(crate) mod join;
pub(crate) mod pool_access;
