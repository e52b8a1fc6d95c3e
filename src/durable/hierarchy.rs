//! [`Hierarchy`]: names, parent links, ordered children and protection, per registry slot.
//!
//! One 32-byte node per slot links a live entity to its parent, its first and last child and
//! its siblings (slot + 1, 0 meaning none), so children keep insertion order and appending,
//! unlinking and reparenting are O(1). The world keeps the links in step with the registry:
//! every destroy detaches the entity's node before its slot is released (reparenting the
//! children by the world's [`OrphanPolicy`]), so a link always names a live entity; reads
//! validate the parent's generation anyway and never return a stale handle.
//!
//! Names and labels are never identity: UTF-8 bytes in one arena whose size is fixed at init.
//! A slot's name and label (a record's legacy id: at most [`MAX_LABEL_LEN`] bytes) are stored
//! together as one record `[slot: u32][len: u16][name bytes][label bytes]`; replacing or
//! dropping either leaves the old record dead, and when the arena is full but the live records
//! fit it is compacted in place (one pass, no scratch memory). Nothing allocates after init.

use allocator_api2::alloc::{Allocator, Global};
use allocator_api2::vec::Vec;

use crate::world::raw::keys::EntityId;
use crate::world::store::error::InitError;
use crate::world::store::reserve::filled;

/// What happens to the children of a destroyed entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OrphanPolicy {
    /// Each child becomes a root, keeping its own subtree (the default).
    #[default]
    Detach,
    /// The children take the destroyed entity's place under its parent, in order.
    ToGrandparent,
}

/// Failure of a hierarchy or name change; nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HierarchyError {
    /// The new parent is the child itself or one of its descendants.
    #[error("reparenting would create a cycle")]
    Cycle,
    /// The entity is protected: it cannot be reparented (destroys and duplicates of it are
    /// refused with [`WorldError::Protected`](crate::world::store::error::WorldError::Protected)).
    #[error("entity is protected")]
    Protected,
    /// The name does not fit the name arena, even after compaction. The arena's size is
    /// fixed at init: `DurableConfig::name_bytes`.
    #[error("names of {requested} bytes do not fit: {free} of the name arena's {budget} bytes free (DurableConfig::name_bytes)")]
    NameBudget {
        /// Bytes the name (or a restore's names up to the first that does not fit) needs,
        /// with a 6-byte record header per name.
        requested: usize,
        /// Bytes free after compaction.
        free: usize,
        /// The arena's fixed size.
        budget: usize,
    },
    /// The name is longer than [`MAX_NAME_LEN`] bytes (less its label's), whatever the
    /// arena's size.
    #[error(
        "a name of {len} bytes is longer than the {MAX_NAME_LEN} a name and its label may have"
    )]
    NameTooLong {
        /// The name's length in bytes.
        len: usize,
    },
    /// A label longer than [`MAX_LABEL_LEN`] bytes or not of the legacy-id rule (ASCII
    /// letters, digits, `_ - . :`); `""` is no label (it clears one).
    #[error("a label is 1-64 ASCII letters, digits or `_ - . :`")]
    InvalidLabel,
    /// The index is beyond the parent's children.
    #[error("child index {index} out of range ({len} children)")]
    ChildIndex {
        /// Requested position.
        index: usize,
        /// Number of children.
        len: usize,
    },
    /// The entity is not a child of that parent.
    #[error("not a child of that parent")]
    NotAChild,
    /// Only a root can be protected.
    #[error("only a root can be protected")]
    NotRoot,
}

const NAME_HEADER: usize = 6;

/// The largest name arena: a node stores its name's offset as a `u32`.
pub const MAX_NAME_BYTES: usize = u32::MAX as usize;
/// The longest name, in bytes: a name record stores its length (name and label) as a `u16`.
pub const MAX_NAME_LEN: usize = u16::MAX as usize;
/// The longest label, in bytes (the legacy-id rule's).
pub const MAX_LABEL_LEN: usize = crate::identity::LEGACY_ID_MAX;
const PROTECTED: u32 = 1 << 31;
/// Where a node keeps its label's length (7 bits).
const LABEL_SHIFT: u32 = 16;
const LABEL_BITS: u32 = 0x7f << LABEL_SHIFT;

/// Links of one slot; `0` means none, otherwise `slot + 1`.
#[derive(Clone, Copy, Debug, Default)]
struct Node {
    parent: u32,
    parent_generation: u32,
    first: u32,
    last: u32,
    next: u32,
    prev: u32,
    /// Offset of the name's bytes in the arena (after its header; the label follows them);
    /// meaningful when the record is not empty.
    name_at: u32,
    /// Name length in the low 16 bits, the label's in [`LABEL_BITS`], [`PROTECTED`] in the top
    /// bit.
    name_len: u32,
}

impl Node {
    fn len(&self) -> usize {
        (self.name_len & MAX_NAME_LEN as u32) as usize
    }

    fn label_len(&self) -> usize {
        ((self.name_len & LABEL_BITS) >> LABEL_SHIFT) as usize
    }

    /// Bytes of the record's name and label.
    fn record_len(&self) -> usize {
        self.len() + self.label_len()
    }
}

#[inline(always)]
fn link(slot: u32) -> u32 {
    slot + 1
}

#[inline(always)]
fn unlink(l: u32) -> Option<u32> {
    l.checked_sub(1)
}

/// The first entity, in index order of the walks, whose parent link closes a loop in the
/// forest of `n` entities where `parent(i)` is entity `i`'s parent; `None` when the links
/// are acyclic. Linear in `n` however the entities are ordered: every entity is walked
/// through once.
pub(crate) fn first_cycle(n: usize, parent: impl Fn(usize) -> Option<usize>) -> Option<usize> {
    // 0: not seen, 1: on the current walk, 2: known to reach a root.
    let mut state = std::vec![0u8; n];
    let mut walk = std::vec::Vec::new();
    for start in 0..n {
        let mut at = Some(start);
        while let Some(i) = at.filter(|&i| i < n) {
            match state[i] {
                2 => break,
                1 => return Some(i),
                _ => {}
            }
            state[i] = 1;
            walk.push(i);
            at = parent(i);
        }
        for i in walk.drain(..) {
            state[i] = 2;
        }
    }
    None
}

/// Names and links of every slot of one registry (module docs).
pub struct Hierarchy<A: Allocator + Clone = Global> {
    nodes: Vec<Node, A>,
    names: Vec<u8, A>,
    /// Append position in the arena.
    used: usize,
    /// Bytes of live records (headers included).
    live: usize,
    /// Entities with a parent.
    linked: usize,
}

impl<A: Allocator + Clone> core::fmt::Debug for Hierarchy<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Hierarchy")
            .field("slots", &self.nodes.len())
            .field("name_budget", &self.names.len())
            .field("name_bytes_live", &self.live)
            .field("linked", &self.linked)
            .finish()
    }
}

impl<A: Allocator + Clone> Hierarchy<A> {
    /// Nodes for `slots` slots and a name arena of `name_bytes` bytes.
    ///
    /// # Errors
    /// [`InitError::CapacityTooLarge`] for an arena over [`MAX_NAME_BYTES`] (a node stores
    /// its name's offset in 32 bits); [`InitError::Allocation`].
    pub(crate) fn try_new_in(slots: usize, name_bytes: usize, alloc: A) -> Result<Self, InitError> {
        if name_bytes > MAX_NAME_BYTES {
            return Err(InitError::CapacityTooLarge {
                requested: name_bytes,
                max: MAX_NAME_BYTES,
            });
        }
        Ok(Self {
            nodes: filled(slots, Node::default(), alloc.clone())?,
            names: filled(name_bytes, 0, alloc)?,
            used: 0,
            live: 0,
            linked: 0,
        })
    }

    /// Slots covered (0 when disabled).
    pub(crate) fn slots(&self) -> usize {
        self.nodes.len()
    }

    /// The name arena's fixed size in bytes.
    pub fn name_budget(&self) -> usize {
        self.names.len()
    }

    /// Bytes of the arena held by live names (with their 6-byte headers).
    pub fn name_bytes_live(&self) -> usize {
        self.live
    }

    /// Bytes of fixed storage.
    pub fn footprint_bytes(&self) -> usize {
        self.nodes.len() * core::mem::size_of::<Node>() + self.names.len()
    }

    fn node(&self, slot: u32) -> Option<&Node> {
        self.nodes.get(slot as usize)
    }

    /// The name of the (caller-validated) slot, or `""`.
    pub(crate) fn name(&self, slot: u32) -> &str {
        match self.node(slot) {
            Some(n) if n.len() > 0 => {
                let at = n.name_at as usize;
                core::str::from_utf8(&self.names[at..at + n.len()]).unwrap_or("")
            }
            _ => "",
        }
    }

    /// The label of the (caller-validated) slot, or `""`.
    pub(crate) fn label(&self, slot: u32) -> &str {
        match self.node(slot) {
            Some(n) if n.label_len() > 0 => {
                let at = n.name_at as usize + n.len();
                core::str::from_utf8(&self.names[at..at + n.label_len()]).unwrap_or("")
            }
            _ => "",
        }
    }

    /// The bytes of the (caller-validated) slot's name and label, unchecked: the arena holds
    /// only bytes copied from `&str`s, so they are UTF-8 unless the arena is corrupt, and a
    /// caller that needs text checks them ([`name`](Self::name) and [`label`](Self::label)
    /// read `""` for bytes that are not). One node read for both.
    #[inline(always)]
    pub(crate) fn name_and_label_bytes(&self, slot: u32) -> (&[u8], &[u8]) {
        let Some(n) = self.node(slot).filter(|n| n.record_len() > 0) else {
            return (&[], &[]);
        };
        let at = n.name_at as usize;
        let both = self
            .names
            .get(at..at + n.len() + n.label_len())
            .unwrap_or(&[]);
        both.split_at_checked(n.len()).unwrap_or((&[], &[]))
    }

    /// The parent link of a slot: its slot and generation.
    pub(crate) fn parent(&self, slot: u32) -> Option<(u32, u32)> {
        let n = self.node(slot)?;
        unlink(n.parent).map(|p| (p, n.parent_generation))
    }

    pub(crate) fn is_protected(&self, slot: u32) -> bool {
        self.node(slot).is_some_and(|n| n.name_len & PROTECTED != 0)
    }

    pub(crate) fn has_links(&self, slot: u32) -> bool {
        self.node(slot)
            .is_some_and(|n| n.parent != 0 || n.first != 0 || n.name_len != 0)
    }

    /// Children of a slot, in order.
    pub(crate) fn children(&self, slot: u32) -> Children<'_, A> {
        Children {
            hierarchy: self,
            next: self.node(slot).map_or(0, |n| n.first),
        }
    }

    pub(crate) fn first_child(&self, slot: u32) -> Option<u32> {
        self.node(slot).and_then(|n| unlink(n.first))
    }

    pub(crate) fn next_sibling(&self, slot: u32) -> Option<u32> {
        self.node(slot).and_then(|n| unlink(n.next))
    }

    /// Whether `ancestor` is `slot` or one of its ancestors. O(1) when `ancestor` has no
    /// children (a leaf is nobody's ancestor: building a chain top-down or parenting fresh
    /// entities never walks), else walks `slot`'s ancestors (at most `slots` links).
    pub(crate) fn is_ancestor_or_self(&self, ancestor: u32, slot: u32) -> bool {
        if ancestor == slot {
            return true;
        }
        if self.first_child(ancestor).is_none() {
            return false;
        }
        let mut s = Some(slot);
        for _ in 0..=self.nodes.len() {
            match s {
                Some(x) if x == ancestor => return true,
                Some(x) => s = self.parent(x).map(|(p, _)| p),
                None => return false,
            }
        }
        false
    }

    pub(crate) fn set_protected(&mut self, slot: u32, on: bool) -> Result<(), HierarchyError> {
        let n = &mut self.nodes[slot as usize];
        if on && n.parent != 0 {
            return Err(HierarchyError::NotRoot);
        }
        if on {
            n.name_len |= PROTECTED;
        } else {
            n.name_len &= !PROTECTED;
        }
        Ok(())
    }

    /// Unlinks `slot` from its parent's child list (no-op for a root).
    fn cut(&mut self, slot: u32) {
        let n = self.nodes[slot as usize];
        let Some(p) = unlink(n.parent) else { return };
        match unlink(n.prev) {
            Some(prev) => self.nodes[prev as usize].next = n.next,
            None => self.nodes[p as usize].first = n.next,
        }
        match unlink(n.next) {
            Some(next) => self.nodes[next as usize].prev = n.prev,
            None => self.nodes[p as usize].last = n.prev,
        }
        let n = &mut self.nodes[slot as usize];
        n.parent = 0;
        n.parent_generation = 0;
        n.prev = 0;
        n.next = 0;
        self.linked -= 1;
    }

    /// Links a root `slot` under `parent`, before `before` (a child of `parent`) or last.
    fn splice(&mut self, slot: u32, parent: EntityId, before: Option<u32>) {
        let p = parent.slot();
        let prev = match before {
            Some(b) => self.nodes[b as usize].prev,
            None => self.nodes[p as usize].last,
        };
        let next = before.map_or(0, link);
        {
            let n = &mut self.nodes[slot as usize];
            n.parent = link(p);
            n.parent_generation = parent.generation();
            n.prev = prev;
            n.next = next;
        }
        match unlink(prev) {
            Some(x) => self.nodes[x as usize].next = link(slot),
            None => self.nodes[p as usize].first = link(slot),
        }
        match before {
            Some(b) => self.nodes[b as usize].prev = link(slot),
            None => self.nodes[p as usize].last = link(slot),
        }
        self.linked += 1;
    }

    /// Moves `slot` under `parent` (appended last) or to the root; the caller checked
    /// liveness, protection and cycles.
    pub(crate) fn set_parent(&mut self, slot: u32, parent: Option<EntityId>) {
        self.cut(slot);
        if let Some(p) = parent {
            self.splice(slot, p, None);
        }
    }

    /// Moves the child `slot` of its parent to position `index` among its siblings.
    pub(crate) fn move_child(&mut self, slot: u32, index: usize) -> Result<(), HierarchyError> {
        let (p, pg) = self.parent(slot).ok_or(HierarchyError::NotAChild)?;
        let len = self.children(p).count();
        if index >= len {
            return Err(HierarchyError::ChildIndex { index, len });
        }
        self.cut(slot);
        let before = self.children(p).nth(index);
        self.splice(slot, EntityId::from_raw_parts(0, p, pg), before);
        Ok(())
    }

    /// Detaches a slot whose entity is being destroyed: unlinks it, reparents its children
    /// by `policy` (under [`OrphanPolicy::ToGrandparent`] they take the slot's place under
    /// `grandparent`, the destroyed entity's parent, when it has one), drops its name and
    /// protection.
    pub(crate) fn detach(
        &mut self,
        slot: u32,
        policy: OrphanPolicy,
        grandparent: Option<EntityId>,
    ) {
        if slot as usize >= self.nodes.len() {
            return;
        }
        let me = self.nodes[slot as usize];
        let place = unlink(me.next);
        let grandparent = match policy {
            OrphanPolicy::Detach => None,
            OrphanPolicy::ToGrandparent => grandparent,
        };
        // Unlink `slot` first so its children can take its place.
        self.cut(slot);
        while let Some(c) = unlink(self.nodes[slot as usize].first) {
            self.cut(c);
            if let Some(g) = grandparent {
                self.splice(c, g, place);
            }
        }
        self.drop_name(slot);
        self.nodes[slot as usize] = Node::default();
    }

    /// Drops the slot's record (name and label).
    fn drop_name(&mut self, slot: u32) {
        let n = &mut self.nodes[slot as usize];
        let len = n.record_len();
        if len > 0 {
            self.live -= NAME_HEADER + len;
            n.name_len &= PROTECTED;
            n.name_at = 0;
        }
    }

    /// Whether a record of a `name`-byte name and a `label`-byte label replacing `slot`'s fits
    /// (after a compaction).
    fn record_fits(&self, slot: u32, name: usize, label: usize) -> Result<(), HierarchyError> {
        let old = self
            .node(slot)
            .map_or(0, |n| Self::name_cost(n.record_len()));
        let len = name.saturating_add(label);
        let need = Self::name_cost(len);
        if len > MAX_NAME_LEN {
            return Err(HierarchyError::NameTooLong { len: name });
        }
        let free = self.names.len() - (self.live - old);
        if need > free {
            return Err(HierarchyError::NameBudget {
                requested: need,
                free,
                budget: self.names.len(),
            });
        }
        Ok(())
    }

    /// Bytes a set of names needs (for all-or-nothing batch checks).
    pub(crate) fn name_cost(len: usize) -> usize {
        if len == 0 {
            0
        } else {
            NAME_HEADER + len
        }
    }

    /// Bytes free for new names after a compaction.
    pub(crate) fn name_free(&self) -> usize {
        self.names.len() - self.live
    }

    /// Sets (or with `""` clears) the name of a caller-validated slot; its label stays.
    pub(crate) fn set_name(&mut self, slot: u32, name: &str) -> Result<(), HierarchyError> {
        let mut label = [0u8; MAX_LABEL_LEN];
        let kept = self.label(slot).len();
        label[..kept].copy_from_slice(self.label(slot).as_bytes());
        self.set_record(slot, name.as_bytes(), &label[..kept])
    }

    /// Sets (or with `""` clears) the label of a caller-validated slot; its name stays.
    ///
    /// # Errors
    /// [`HierarchyError::InvalidLabel`] for a label of another rule than the legacy-id rule;
    /// the budget errors of [`set_name`](Self::set_name) (`NameTooLong` when the name and the
    /// label together pass [`MAX_NAME_LEN`]).
    pub(crate) fn set_label(&mut self, slot: u32, label: &str) -> Result<(), HierarchyError> {
        if !label.is_empty() && !crate::identity::is_legacy_id(label) {
            return Err(HierarchyError::InvalidLabel);
        }
        let Some(&n) = self.node(slot) else {
            return Ok(());
        };
        self.record_fits(slot, n.len(), label.len())?;
        let name = n.len();
        let need = Self::name_cost(name + label.len());
        if name == 0 {
            return self.set_record(slot, &[], label.as_bytes());
        }
        // The name stays where it is until it is copied: compact with the record live, and
        // when the new record still does not fit behind the live ones, rotate this record to
        // the end of them and rewrite it in place (it fits there: `record_fits`).
        if self.used + need > self.names.len() {
            self.compact();
        }
        let old = self.nodes[slot as usize];
        let src = old.name_at as usize;
        let at = if self.used + need <= self.names.len() {
            let at = self.used;
            self.names.copy_within(src..src + name, at + NAME_HEADER);
            self.used += need;
            self.live += need;
            self.drop_name(slot);
            at
        } else {
            let start = src - NAME_HEADER;
            let size = NAME_HEADER + old.record_len();
            self.names[start..self.used].rotate_left(size);
            let mut read = start;
            while read < self.used - size {
                let (moved, len) = self.header(read);
                if let Some(m) = self.nodes.get_mut(moved as usize) {
                    m.name_at = (read + NAME_HEADER) as u32;
                }
                read += NAME_HEADER + len;
            }
            let at = self.used - size;
            self.used = at + need;
            self.live = self.live - size + need;
            at
        };
        let total = name + label.len();
        self.names[at..at + 4].copy_from_slice(&slot.to_le_bytes());
        self.names[at + 4..at + 6].copy_from_slice(&(total as u16).to_le_bytes());
        self.names[at + NAME_HEADER + name..at + need].copy_from_slice(label.as_bytes());
        let n = &mut self.nodes[slot as usize];
        n.name_at = (at + NAME_HEADER) as u32;
        n.name_len = (n.name_len & PROTECTED) | (label.len() as u32) << LABEL_SHIFT | name as u32;
        Ok(())
    }

    /// Names and labels a caller-validated slot in one record (a restore's: one arena write
    /// for both).
    ///
    /// # Errors
    /// As [`set_label`](Self::set_label).
    pub(crate) fn set_name_and_label(
        &mut self,
        slot: u32,
        name: &str,
        label: &str,
    ) -> Result<(), HierarchyError> {
        if !label.is_empty() && !crate::identity::is_legacy_id(label) {
            return Err(HierarchyError::InvalidLabel);
        }
        self.set_record(slot, name.as_bytes(), label.as_bytes())
    }

    /// Replaces the slot's record by `name` and `label` (neither stored in the arena).
    fn set_record(&mut self, slot: u32, name: &[u8], label: &[u8]) -> Result<(), HierarchyError> {
        self.record_fits(slot, name.len(), label.len())?;
        self.drop_name(slot);
        let total = name.len() + label.len();
        if total == 0 {
            return Ok(());
        }
        let need = NAME_HEADER + total;
        if self.used + need > self.names.len() {
            self.compact();
        }
        let at = self.used;
        self.names[at..at + 4].copy_from_slice(&slot.to_le_bytes());
        self.names[at + 4..at + 6].copy_from_slice(&(total as u16).to_le_bytes());
        self.names[at + 6..at + 6 + name.len()].copy_from_slice(name);
        self.names[at + 6 + name.len()..at + need].copy_from_slice(label);
        self.used += need;
        self.live += need;
        let n = &mut self.nodes[slot as usize];
        n.name_at = (at + NAME_HEADER) as u32;
        n.name_len =
            (n.name_len & PROTECTED) | (label.len() as u32) << LABEL_SHIFT | name.len() as u32;
        Ok(())
    }

    /// Gives `to` a copy of `from`'s name (the caller checked the budget).
    pub(crate) fn copy_name(&mut self, from: u32, to: u32) {
        let len = self.nodes[from as usize].len();
        if len == 0 || from == to {
            return;
        }
        self.drop_name(to);
        let need = NAME_HEADER + len;
        if self.used + need > self.names.len() {
            self.compact();
        }
        if self.used + need > self.names.len() {
            return;
        }
        let src = self.nodes[from as usize].name_at as usize;
        let at = self.used;
        self.names[at..at + 4].copy_from_slice(&to.to_le_bytes());
        self.names[at + 4..at + 6].copy_from_slice(&(len as u16).to_le_bytes());
        self.names.copy_within(src..src + len, at + NAME_HEADER);
        self.used += need;
        self.live += need;
        let n = &mut self.nodes[to as usize];
        n.name_at = (at + NAME_HEADER) as u32;
        n.name_len = (n.name_len & PROTECTED) | len as u32;
    }

    /// The slot and length (name and label) of the record whose header is at `at`.
    fn header(&self, at: usize) -> (u32, usize) {
        let slot = u32::from_le_bytes(self.names[at..at + 4].try_into().unwrap_or([0; 4]));
        let len = u16::from_le_bytes(self.names[at + 4..at + 6].try_into().unwrap_or([0; 2]));
        (slot, usize::from(len))
    }

    /// Moves every live record to the front of the arena, in order.
    fn compact(&mut self) {
        let (mut read, mut write) = (0, 0);
        while read < self.used {
            let (slot, len) = self.header(read);
            let size = NAME_HEADER + len;
            let alive = self
                .nodes
                .get(slot as usize)
                .is_some_and(|n| n.record_len() == len && n.name_at as usize == read + NAME_HEADER);
            if alive {
                self.names.copy_within(read..read + size, write);
                self.nodes[slot as usize].name_at = (write + NAME_HEADER) as u32;
                write += size;
            }
            read += size;
        }
        self.used = write;
        debug_assert_eq!(write, self.live);
    }

    /// Entities with a parent.
    pub fn linked(&self) -> usize {
        self.linked
    }
}

/// Child slots of one parent, in order.
pub(crate) struct Children<'h, A: Allocator + Clone> {
    hierarchy: &'h Hierarchy<A>,
    next: u32,
}

impl<A: Allocator + Clone> Iterator for Children<'_, A> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        let s = unlink(self.next)?;
        self.next = self.hierarchy.nodes[s as usize].next;
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(slot: u32) -> EntityId {
        EntityId::from_raw_parts(1, slot, 1)
    }

    fn kids(h: &Hierarchy, p: u32) -> std::vec::Vec<u32> {
        h.children(p).collect()
    }

    #[test]
    fn links_order_and_policies() {
        let mut h = Hierarchy::try_new_in(8, 64, Global).unwrap();
        for c in [1, 2, 3] {
            h.set_parent(c, Some(e(0)));
        }
        h.set_parent(4, Some(e(2)));
        assert_eq!(kids(&h, 0), [1, 2, 3]);
        h.move_child(3, 0).unwrap();
        assert_eq!(kids(&h, 0), [3, 1, 2]);
        assert!(h.is_ancestor_or_self(0, 4));
        // Grandparent policy: 2's child 4 takes 2's place.
        h.detach(2, OrphanPolicy::ToGrandparent, Some(e(0)));
        assert_eq!(kids(&h, 0), [3, 1, 4]);
        h.detach(0, OrphanPolicy::Detach, None);
        assert_eq!(h.parent(3), None);
        assert_eq!(h.linked(), 0);
    }

    #[test]
    fn names_compact_within_budget() {
        let mut h = Hierarchy::try_new_in(4, 32, Global).unwrap();
        h.set_name(0, "abcdefghij").unwrap(); // 16 bytes
        h.set_name(1, "0123456789").unwrap(); // 32
        assert!(matches!(
            h.set_name(2, "x"),
            Err(HierarchyError::NameBudget { .. })
        ));
        h.set_name(0, "").unwrap();
        h.set_name(2, "klmnopqrst").unwrap(); // compacts
        assert_eq!(
            (h.name(1), h.name(2), h.name(0)),
            ("0123456789", "klmnopqrst", "")
        );
        assert_eq!(h.name_bytes_live(), 32);
    }

    #[test]
    fn name_and_label_bytes_are_what_each_reads() {
        let mut h = Hierarchy::try_new_in(6, 256, Global).unwrap();
        h.set_name(0, "größe").unwrap();
        h.set_label(0, "lbl_0").unwrap();
        h.set_label(1, "only_label").unwrap();
        h.set_name(2, "名前").unwrap();
        h.set_name(3, "x").unwrap();
        h.set_label(3, "x").unwrap();
        h.set_name(3, "").unwrap(); // the label stays
        h.set_name(4, "gone").unwrap();
        h.set_name(4, "").unwrap(); // compaction moves the others
        h.set_name(5, "é").unwrap();
        for slot in 0..6 {
            assert_eq!(
                h.name_and_label_bytes(slot),
                (h.name(slot).as_bytes(), h.label(slot).as_bytes()),
                "slot {slot}"
            );
        }
        assert_eq!(
            h.name_and_label_bytes(0),
            ("größe".as_bytes(), &b"lbl_0"[..])
        );
        assert_eq!(h.name_and_label_bytes(1), (&b""[..], &b"only_label"[..]));
        assert_eq!(h.name_and_label_bytes(3), (&b""[..], &b"x"[..]));
        assert_eq!(h.name_and_label_bytes(4), (&b""[..], &b""[..]));
        assert_eq!(h.name_and_label_bytes(9), (&b""[..], &b""[..]));
    }
}
