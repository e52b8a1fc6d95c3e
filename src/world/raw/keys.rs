//! [`EntityKey`] (a handle without its owner token, what pools store per dense entry) and
//! [`Owners`], a view of a pool's dense keys under its owner token.

use crate::identity::{Handle, HandleTag, OwnerToken};

/// Tag of entity handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntityTag {}

impl HandleTag for EntityTag {
    const NAME: &'static str = "Entity";
    const OWNER: &'static str = "World";
}

/// A runtime entity handle: owner (world token) `u64`, slot `u32`, generation `u32`.
pub type EntityId = Handle<EntityTag>;

/// An entity handle without its owner token: what a pool stores per dense entry (the owner is
/// the pool's). One word, `slot | generation << 32` (the handle's own second word), so a key
/// compare is a single 8-byte compare.
#[derive(Clone, Copy, PartialEq, Eq, Hash, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(transparent)]
pub struct EntityKey(u64);

impl EntityKey {
    /// The key of `slot` at `generation`.
    #[inline(always)]
    pub const fn new(slot: u32, generation: u32) -> Self {
        Self(slot as u64 | (generation as u64) << 32)
    }

    /// The key of `entity` (its owner dropped).
    #[inline(always)]
    pub const fn of(entity: EntityId) -> Self {
        Self::new(entity.slot(), entity.generation())
    }

    /// Registry slot.
    #[inline(always)]
    pub const fn slot(self) -> u32 {
        self.0 as u32
    }

    /// Generation of the incarnation.
    #[inline(always)]
    pub const fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// The full handle under `owner`.
    #[inline(always)]
    pub const fn entity(self, owner: OwnerToken) -> EntityId {
        EntityId::from_raw_parts(owner, self.slot(), self.generation())
    }
}

impl core::fmt::Debug for EntityKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Key{{Slot={}, Generation={}}}",
            self.slot(),
            self.generation()
        )
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
