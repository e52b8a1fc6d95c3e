//! [`Charge`]: where the byte API records a success. A domain's own counters and a
//! [`BoundDomain`](super::BoundDomain)'s shard writer implement it, so one generic byte API
//! serves both.

/// Where a byte-API call charges a success: the domain's counters (through the calling
/// thread's slot in sharded mode), or a [`BoundDomain`](super::BoundDomain)'s own shard.
/// Refusals always count in the domain's `failures`.
pub(crate) trait Charge: Copy {
    fn on_allocate(self, size: usize);
    fn on_free(self, size: usize);
    fn on_resize(self, old: usize, new: usize);
}
