//! Owned groups (as in EnTT): entities holding every member component are packed at the front
//! `[0..len)` of each member pool's dense arrays, in the same order, so a group iteration is a
//! straight zip of dense slices with no probing.
//!
//! Invariant, for every member pool `p` and `i < len`: `p.owners().get(i) == first.owners().get(i)`,
//! and an entity is in `[0..len)` exactly when it holds every member. A pool belongs to at most
//! one group. The world keeps the invariant on every insert, remove and destroy: gaining the
//! last member swaps the entity to position `len` in every member; losing one swaps it to
//! `len - 1` first.

use bytemuck::Pod;

use super::owners::Owners;
use super::{ComponentPool, EntityId};
use allocator_api2::alloc::Allocator;

/// Object-safe view of a pool used to check group invariants.
#[doc(hidden)]
pub trait GroupMember {
    /// Dense index of `entity`, if present.
    fn member_index(&self, entity: EntityId) -> Option<usize>;
    /// Dense owners.
    fn member_owners(&self) -> Owners<'_>;
}

impl<T: Pod, A: Allocator + Clone> GroupMember for ComponentPool<T, A> {
    fn member_index(&self, entity: EntityId) -> Option<usize> {
        self.dense_index(entity)
    }
    fn member_owners(&self) -> Owners<'_> {
        self.owners()
    }
}

/// Length of an owned group's packed prefix.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OwnedGroup {
    len: usize,
}

impl OwnedGroup {
    /// Number of packed entities.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no entity holds every member.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Given an entity's dense index in every member (after it gained a member): whether it
    /// now holds every member and is outside the prefix, i.e. must be packed.
    #[doc(hidden)]
    #[inline]
    pub fn must_pack(&self, indices: &[Option<usize>]) -> bool {
        indices
            .iter()
            .all(|i| matches!(i, Some(i) if *i >= self.len))
    }

    /// Given an entity's dense index in every member (before it loses a member): whether it is
    /// packed, i.e. must be unpacked.
    #[doc(hidden)]
    #[inline]
    pub fn must_unpack(&self, indices: &[Option<usize>]) -> bool {
        indices
            .iter()
            .all(|i| matches!(i, Some(i) if *i < self.len))
    }

    /// Grows the prefix by one; returns the position the packed entity must be swapped to in
    /// every member.
    #[doc(hidden)]
    #[inline]
    pub fn grow(&mut self) -> usize {
        self.len += 1;
        self.len - 1
    }

    /// Shrinks the prefix by one; returns the position the unpacked entity must be swapped to
    /// in every member.
    #[doc(hidden)]
    #[inline]
    pub fn shrink(&mut self) -> usize {
        debug_assert!(self.len > 0);
        self.len -= 1;
        self.len
    }

    /// Checks the invariant (O(len)); used by debug assertions and tests.
    #[doc(hidden)]
    pub fn is_consistent(&self, members: &[&dyn GroupMember]) -> bool {
        let Some(first) = members.first() else {
            return true;
        };
        let head = first.member_owners();
        head.len() >= self.len
            && members.iter().all(|m| {
                let o = m.member_owners();
                o.len() >= self.len
                    && o.prefix(self.len) == head.prefix(self.len)
                    && o.iter()
                        .skip(self.len)
                        .all(|e| members.iter().any(|n| n.member_index(e).is_none()))
            })
    }
}
