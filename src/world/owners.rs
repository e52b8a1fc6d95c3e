//! [`EntityKey`] (a handle without its owner token, what pools store per dense entry) and
//! [`Owners`], a view of a pool's dense keys under its owner token.

use super::EntityId;
use crate::identity::OwnerToken;

/// An entity handle without its owner token: what a pool stores per dense entry (the owner is
/// the pool's).
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(8))]
pub struct EntityKey {
    /// Registry slot.
    pub slot: u32,
    /// Generation of the incarnation.
    pub generation: u32,
}

impl EntityKey {
    /// The key of `entity` (its owner dropped).
    #[inline(always)]
    pub const fn of(entity: EntityId) -> Self {
        Self {
            slot: entity.slot(),
            generation: entity.generation(),
        }
    }

    /// The full handle under `owner`.
    #[inline(always)]
    pub const fn entity(self, owner: OwnerToken) -> EntityId {
        EntityId::from_raw_parts(owner, self.slot, self.generation)
    }

    /// Both fields as one word, so equality is a single 8-byte compare.
    #[inline(always)]
    fn bits(self) -> u64 {
        bytemuck::cast(self)
    }
}

impl PartialEq for EntityKey {
    #[inline(always)]
    fn eq(&self, other: &Self) -> bool {
        self.bits() == other.bits()
    }
}

impl Eq for EntityKey {}

impl core::hash::Hash for EntityKey {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.bits().hash(state);
    }
}

/// A pool's dense owners: `get(i)` holds `values()[i]`. A view over the dense keys and the
/// pool's owner token.
#[derive(Clone, Copy)]
pub struct Owners<'p> {
    pub(crate) owner: OwnerToken,
    pub(crate) keys: &'p [EntityKey],
}

impl<'p> Owners<'p> {
    /// Number of owners (the pool's length, or a group's).
    #[inline]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when there are none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The owner of dense index `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<EntityId> {
        self.keys.get(i).map(|k| k.entity(self.owner))
    }

    /// The dense keys (handles without the owner token).
    #[inline]
    pub fn keys(&self) -> &'p [EntityKey] {
        self.keys
    }

    /// The owner token shared by every entry.
    #[inline]
    pub fn owner(&self) -> OwnerToken {
        self.owner
    }

    /// Iterates the owners in dense order.
    #[inline]
    pub fn iter(&self) -> OwnersIter<'p> {
        OwnersIter {
            owner: self.owner,
            keys: self.keys.iter(),
        }
    }

    /// The first `n` owners (a group's packed prefix).
    #[inline]
    pub(crate) fn prefix(self, n: usize) -> Self {
        Self {
            owner: self.owner,
            keys: &self.keys[..n],
        }
    }
}

impl core::fmt::Debug for Owners<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'p> IntoIterator for Owners<'p> {
    type Item = EntityId;
    type IntoIter = OwnersIter<'p>;
    #[inline]
    fn into_iter(self) -> OwnersIter<'p> {
        self.iter()
    }
}

impl PartialEq<[EntityId]> for Owners<'_> {
    fn eq(&self, other: &[EntityId]) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter().copied())
    }
}

impl PartialEq<&[EntityId]> for Owners<'_> {
    fn eq(&self, other: &&[EntityId]) -> bool {
        *self == **other
    }
}

impl<const N: usize> PartialEq<&[EntityId; N]> for Owners<'_> {
    fn eq(&self, other: &&[EntityId; N]) -> bool {
        *self == other[..]
    }
}

impl PartialEq for Owners<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

/// Iterator over [`Owners`], in dense order.
#[derive(Debug, Clone)]
pub struct OwnersIter<'p> {
    owner: OwnerToken,
    keys: core::slice::Iter<'p, EntityKey>,
}

impl Iterator for OwnersIter<'_> {
    type Item = EntityId;
    #[inline]
    fn next(&mut self) -> Option<EntityId> {
        self.keys.next().map(|k| k.entity(self.owner))
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.keys.size_hint()
    }
}

impl DoubleEndedIterator for OwnersIter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<EntityId> {
        self.keys.next_back().map(|k| k.entity(self.owner))
    }
}

impl ExactSizeIterator for OwnersIter<'_> {}
