//! World ↔ record mapping: which roster component is which record component, and how its
//! entity-typed fields travel.
//!
//! A world's components map to record components **by name**: the roster's field names
//! ([`Roster::NAMES`](crate::world::roster::Roster::NAMES)) are the component names of the record.
//! Each component's properties are its serde form ([`RecordComponent`]:
//! [`Component`](crate::world::Component) + `Serialize` + `DeserializeOwned`, a blanket impl),
//! so a `#[derive(Serialize, Deserialize)]` struct is a record component. Entity-typed fields
//! are the ones the component's [`EntityRefs`](crate::durable::EntityRefs) impl visits
//! (declared in the world's `entity_refs { .. }` clause); they carry [`entity_ref`] as their
//! serde adapter, so in a record they hold the target's UUID, `""` for no target:
//!
//! ```
//! use ludus::durable::EntityRefs;
//! use ludus::world::EntityId;
//! #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable, serde::Serialize, serde::Deserialize)]
//! #[repr(C)]
//! pub struct Follow {
//!     #[serde(with = "ludus::content::entity_ref")]
//!     pub target: EntityId,
//!     pub distance: f32,
//!     #[serde(skip)]
//!     pub _pad: u32,
//! }
//! impl EntityRefs for Follow {
//!     fn visit_entities(&mut self, visit: &mut dyn FnMut(&mut EntityId)) {
//!         visit(&mut self.target);
//!     }
//! }
//! ```
//!
//! How a handle becomes a UUID without a context: between the record and the world the
//! restore and save passes hold the UUID's 128 bits *in the `EntityId` field itself*
//! ([`uuid_bits`], [`bits_uuid`]). Restore deserialises the field as those bits, then rewrites
//! every visited field to the real handle of its target (pass 2); save copies the value,
//! rewrites every visited field to its target's UUID bits through the reverse binding, and
//! serialises the copy. Neither ever lets such a value reach a pool, and no runtime owner,
//! slot or generation is read from or written to a record.

use core::any::TypeId;

use crate::world::Component;
use serde::de::DeserializeOwned;
use serde::Serialize;
use uuid::Uuid;

use crate::durable::DurableRoster;
use crate::world::roster::{ComponentList, Roster};
use crate::world::EntityId;

/// A component that World records carry: plain data with a serde form (its properties).
/// Implemented for every such type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be saved in a World record: it needs serde's Serialize and Deserialize",
    note = "derive Serialize and Deserialize; an `EntityId` field takes \
            `#[serde(with = \"ludus::content::entity_ref\")]`, and its component type goes in the \
            world's `durable {{ entity_refs {{ .. }} }}` clause"
)]
pub trait RecordComponent: Component + Serialize + DeserializeOwned {}

impl<T: Component + Serialize + DeserializeOwned> RecordComponent for T {}

/// Calls back with one record component type and its position in the roster.
pub trait RecordVisitor {
    /// Called with the type at roster position `index`.
    fn visit<T: RecordComponent>(&mut self, index: usize);
}

/// A roster's component list whose every type is a [`RecordComponent`]: what restore and
/// save need of a world (`W::Components: RecordList`). Implemented for every such list.
pub trait RecordList: ComponentList {
    /// Calls `v` with the type at roster position `index`, where this list's head sits at
    /// position `head`; false when there is none.
    fn visit_at<V: RecordVisitor>(head: usize, index: usize, v: &mut V) -> bool;
    /// Calls `v` with every type in order, this list's head being at position `head`.
    fn each_record<V: RecordVisitor>(head: usize, v: &mut V);
}

impl RecordList for () {
    #[inline(always)]
    fn visit_at<V: RecordVisitor>(_: usize, _: usize, _: &mut V) -> bool {
        false
    }
    #[inline(always)]
    fn each_record<V: RecordVisitor>(_: usize, _: &mut V) {}
}

impl<H: RecordComponent, T: RecordList> RecordList for (H, T) {
    #[inline(always)]
    fn visit_at<V: RecordVisitor>(head: usize, index: usize, v: &mut V) -> bool {
        if head == index {
            v.visit::<H>(head);
            true
        } else {
            T::visit_at(head + 1, index, v)
        }
    }
    fn each_record<V: RecordVisitor>(head: usize, v: &mut V) {
        v.visit::<H>(head);
        T::each_record(head + 1, v);
    }
}

/// The roster position of the component named `name` in `W`'s records.
pub(crate) fn component_index<W: Roster>(name: &str) -> Option<usize> {
    W::NAMES.iter().position(|n| *n == name)
}

/// The 128 bits of `uuid` held in an `EntityId` (owner: high 64 bits, slot, generation); the
/// nil UUID is the null handle. Only restore and save hold such values, never a pool (unless a
/// type with an entity-typed field is missing from the world's `entity_refs`: restore then
/// cannot see the field, and its bits, slot ≥ 2³¹, name no entity).
#[inline]
pub fn uuid_bits(uuid: Uuid) -> EntityId {
    let v = uuid.as_u128();
    EntityId::from_raw_parts((v >> 64) as u64, (v >> 32) as u32, v as u32)
}

/// The UUID whose bits `e` holds (inverse of [`uuid_bits`]).
#[inline]
pub fn bits_uuid(e: EntityId) -> Uuid {
    Uuid::from_u128(
        (u128::from(e.owner()) << 64) | (u128::from(e.slot()) << 32) | u128::from(e.generation()),
    )
}

/// The serde adapter of an entity-typed field (`#[serde(with = "ludus::content::entity_ref")]`):
/// the target's canonical UUID text, `""` for no target. Parsing accepts the level-file policy
/// (versions 1–8); a World record's restore then requires the target to be one of the record's
/// own (version-4) entities.
pub mod entity_ref {
    use std::borrow::Cow;

    use serde::{de, Deserialize, Deserializer, Serializer};

    use super::{bits_uuid, uuid_bits};
    use crate::identity::{format_uuid, parse_uuid, UuidPolicy, UUID_TEXT_LEN};
    use crate::world::EntityId;

    /// Writes the UUID whose bits the field holds (save has rewritten the handle), `""` for
    /// null.
    ///
    /// # Errors
    /// When the bits are not a UUID of the level-file policy (a handle that was not mapped).
    pub fn serialize<S: Serializer>(e: &EntityId, s: S) -> Result<S::Ok, S::Error> {
        if e.is_null() {
            return s.serialize_str("");
        }
        let uuid = UuidPolicy::LevelFile
            .check(bits_uuid(*e))
            .map_err(|_| serde::ser::Error::custom("entity handle not mapped to a uuid"))?;
        let mut buf = [0u8; UUID_TEXT_LEN];
        s.serialize_str(format_uuid(&uuid, &mut buf))
    }

    /// Reads a UUID (or `""`) into the field's bits; restore resolves them in pass 2.
    ///
    /// # Errors
    /// Text that is neither `""` nor canonical UUID text of the level-file policy.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<EntityId, D::Error> {
        let text = <Cow<'de, str>>::deserialize(d)?;
        if text.is_empty() {
            return Ok(EntityId::NULL);
        }
        parse_uuid(text.as_bytes(), UuidPolicy::LevelFile)
            .map(uuid_bits)
            .map_err(|e| de::Error::custom(format_args!("invalid entity reference {text:?}: {e}")))
    }
}

/// Rewrites every entity-typed field of the values of `T` held as bytes in `values`
/// (`size_of::<T>()` each) with `f`, when `T` is one of `W`'s [`EntityRefs`](crate::durable::EntityRefs) types; does
/// nothing otherwise.
pub(crate) fn rewrite_refs<W: DurableRoster, T: Component>(
    values: &mut [u8],
    f: &mut dyn FnMut(usize, &mut EntityId),
) {
    crate::durable::rewrite_refs_of::<W>(TypeId::of::<T>(), values, f);
}

/// Whether `T` is one of `W`'s [`EntityRefs`](crate::durable::EntityRefs) types.
pub(crate) fn has_refs<W: DurableRoster, T: 'static>() -> bool {
    crate::durable::has_refs_of::<W>(TypeId::of::<T>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_bits_round_trip() {
        for v in [
            0u128,
            1,
            u128::MAX,
            0x0123_4567_89ab_4def_8123_4567_89ab_cdef,
        ] {
            let u = Uuid::from_u128(v);
            assert_eq!(bits_uuid(uuid_bits(u)), u);
        }
        assert!(uuid_bits(Uuid::nil()).is_null());
    }
}
