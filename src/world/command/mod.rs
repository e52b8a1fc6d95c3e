//! Changing the pools' structure: owned groups, spawning bundles, and the deferred
//! [`CommandBuffer`](buffer::CommandBuffer) with its commit.

pub(crate) mod buffer;
pub(crate) mod group;
pub(crate) mod spawn;
pub(crate) mod structural;
