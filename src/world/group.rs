//! Owned groups (as in EnTT): entities holding every member component are packed at the front
//! `[0..len)` of each member pool's dense arrays, in the same order, so a group iteration is a
//! straight zip of dense slices with no probing.
//!
//! Invariant, for every member pool `p` and `i < len`: `p.owners()[i] == first.owners()[i]`,
//! and an entity is in `[0..len)` exactly when it holds every member. A pool belongs to at most
//! one group. The world keeps the invariant on every insert, remove and destroy: gaining the
//! last member swaps the entity to position `len` in every member; losing one swaps it to
//! `len - 1` first.

use bytemuck::Pod;

use super::{ComponentPool, EntityId};
use allocator_api2::alloc::Allocator;

/// Object-safe view of a pool used for group maintenance.
#[doc(hidden)]
pub trait GroupMember {
    /// Dense index of `entity`, if present.
    fn member_index(&self, entity: EntityId) -> Option<usize>;
    /// Swaps two dense positions.
    fn member_swap(&mut self, i: usize, j: usize);
    /// Dense owners.
    fn member_owners(&self) -> &[EntityId];
}

impl<T: Pod, A: Allocator + Clone> GroupMember for ComponentPool<T, A> {
    fn member_index(&self, entity: EntityId) -> Option<usize> {
        self.dense_index(entity)
    }
    fn member_swap(&mut self, i: usize, j: usize) {
        self.swap_dense(i, j);
    }
    fn member_owners(&self) -> &[EntityId] {
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

    /// After `entity` gained a member: packs it if it now holds every member.
    #[doc(hidden)]
    pub fn pack(&mut self, members: &mut [&mut dyn GroupMember], entity: EntityId) {
        let mut indices = [0usize; 16];
        assert!(members.len() <= indices.len(), "at most 16 group members");
        for (m, slot) in members.iter().zip(indices.iter_mut()) {
            match m.member_index(entity) {
                Some(i) if i >= self.len => *slot = i,
                _ => return, // missing a member, or already packed
            }
        }
        for (m, &i) in members.iter_mut().zip(indices.iter()) {
            m.member_swap(i, self.len);
        }
        self.len += 1;
    }

    /// Before `entity` loses a member: unpacks it if it is packed.
    #[doc(hidden)]
    pub fn unpack(&mut self, members: &mut [&mut dyn GroupMember], entity: EntityId) {
        let mut indices = [0usize; 16];
        assert!(members.len() <= indices.len(), "at most 16 group members");
        for (m, slot) in members.iter().zip(indices.iter_mut()) {
            match m.member_index(entity) {
                Some(i) if i < self.len => *slot = i,
                _ => return,
            }
        }
        self.len -= 1;
        for (m, &i) in members.iter_mut().zip(indices.iter()) {
            m.member_swap(i, self.len);
        }
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
                    && o[..self.len] == head[..self.len]
                    && o[self.len..]
                        .iter()
                        .all(|e| members.iter().any(|n| n.member_index(*e).is_none()))
            })
    }
}
