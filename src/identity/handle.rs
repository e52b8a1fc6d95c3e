//! `Handle<Tag>`: a nonowning, generational, owner-scoped runtime reference.
//!
//! ```text
//!  0              8        12       16
//!  +--------------+--------+--------+
//!  | owner  (u64) |  slot  |  gen   |   all zero = null   (little-endian targets)
//!  +--------------+--------+--------+
//! ```
//!
//! Stored as two `u64` words, owner and `slot | generation << 32`, so the compiler moves a
//! handle in two general registers (a pair) rather than as a 16-byte vector that must be
//! spilled and reloaded field by field; on little-endian targets the bytes are exactly the
//! table above.
//!
//! A handle names one incarnation (slot + generation) inside one registry lifetime (owner
//! token). It holds no pointer and no UUID. It has no `From`/`Into`/`TryFrom` conversion to or
//! from an integer and cannot be cast with `as`; its fields are read with [`Handle::owner`],
//! [`Handle::slot`] and [`Handle::generation`]. It is, however, [`bytemuck::Pod`]: its 16 bytes
//! can be read and written through bytemuck (`bytes_of`, `cast` to `[u8; 16]`, `[u64; 2]` or
//! `u128`, `cast_slice`), e.g. to copy handles as bytes. There is no serde impl, and the bytes are
//! no persistence format (an owner token means nothing once its registry is gone). Reading bytes
//! gives no validity: a handle rebuilt from bytes is as unchecked as one from
//! [`Handle::from_raw_parts`]. Equality compares all three fields; equality and
//! [`Handle::is_null`] say nothing about liveness — only the owning registry can validate a
//! handle.

use core::fmt;
use core::hash::{Hash, Hasher};
use core::marker::PhantomData;

/// Names a handle domain at compile time, so handles of different domains cannot be mixed.
///
/// `NAME` and `OWNER` only shape the `Debug` output: `Entity{World=42, Slot=17, Generation=9}`.
pub trait HandleTag: 'static {
    /// Domain name printed by `Debug`, e.g. `"Entity"`.
    const NAME: &'static str;
    /// Label of the owner field printed by `Debug`, e.g. `"World"`.
    const OWNER: &'static str;
}

/// A 16-byte typed generational handle: owner `u64`, slot `u32`, generation `u32`.
///
/// Invariants of a *valid-looking* handle (necessary, not sufficient for liveness):
/// `owner != 0` and `generation != 0`. Slot 0 is a valid first slot. The all-zero value is the
/// canonical null.
#[repr(C)]
pub struct Handle<Tag: HandleTag> {
    owner: u64,
    /// `slot | generation << 32`.
    incarnation: u64,
    _tag: PhantomData<Tag>,
}

/// A tag private to this file, so the size check below names nothing outside `identity`. The
/// tag is a `PhantomData`, so the size is the same for every tag.
enum SizeCheckTag {}
impl HandleTag for SizeCheckTag {
    const NAME: &'static str = "SizeCheck";
    const OWNER: &'static str = "Owner";
}
const _: () = assert!(core::mem::size_of::<Handle<SizeCheckTag>>() == 16);

impl<Tag: HandleTag> Handle<Tag> {
    /// The canonical null handle (all fields zero). Never validates against any registry.
    pub const NULL: Self = Self::from_raw_parts(0, 0, 0);

    /// Assembles a handle from its fields. Forged values are harmless: registries reject any
    /// handle whose owner, slot or generation does not match a live incarnation.
    ///
    /// # Examples
    /// ```
    /// use ludus::identity::{Handle, HandleTag};
    /// enum Voice {}
    /// impl HandleTag for Voice {
    ///     const NAME: &'static str = "Voice";
    ///     const OWNER: &'static str = "Session";
    /// }
    /// let h = Handle::<Voice>::from_raw_parts(42, 17, 9);
    /// assert_eq!((h.owner(), h.slot(), h.generation()), (42, 17, 9));
    /// assert_eq!(format!("{h:?}"), "Voice{Session=42, Slot=17, Generation=9}");
    /// ```
    #[inline(always)]
    pub const fn from_raw_parts(owner: u64, slot: u32, generation: u32) -> Self {
        Self {
            owner,
            incarnation: slot as u64 | (generation as u64) << 32,
            _tag: PhantomData,
        }
    }

    /// Owner token of the registry lifetime that issued the handle.
    #[inline(always)]
    pub const fn owner(self) -> u64 {
        self.owner
    }

    /// Slot index inside the owner.
    #[inline(always)]
    pub const fn slot(self) -> u32 {
        self.incarnation as u32
    }

    /// Incarnation of the slot.
    #[inline(always)]
    pub const fn generation(self) -> u32 {
        (self.incarnation >> 32) as u32
    }

    /// True for the all-zero value only.
    #[inline(always)]
    pub const fn is_null(self) -> bool {
        self.owner == 0 && self.incarnation == 0
    }

    /// `None` for the null handle, else `Some(self)`: an optional reference held as plain
    /// state (a component field) is a handle with null for none.
    #[inline(always)]
    pub const fn non_null(self) -> Option<Self> {
        if self.is_null() {
            None
        } else {
            Some(self)
        }
    }

    /// The handle of `Some`, null for `None` ([`non_null`](Self::non_null)'s inverse for every
    /// non-null handle).
    #[inline(always)]
    pub const fn from_option(handle: Option<Self>) -> Self {
        match handle {
            Some(h) => h,
            None => Self::NULL,
        }
    }

    /// True when the handle could name something: nonzero owner and nonzero generation.
    /// This is a shape check, not a liveness check.
    #[inline(always)]
    pub const fn is_well_formed(self) -> bool {
        self.owner != 0 && self.generation() != 0
    }
}

impl<Tag: HandleTag> Clone for Handle<Tag> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<Tag: HandleTag> Copy for Handle<Tag> {}

impl<Tag: HandleTag> PartialEq for Handle<Tag> {
    #[inline(always)]
    fn eq(&self, other: &Self) -> bool {
        self.owner == other.owner && self.incarnation == other.incarnation
    }
}
impl<Tag: HandleTag> Eq for Handle<Tag> {}

impl<Tag: HandleTag> Hash for Handle<Tag> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.owner.hash(state);
        self.slot().hash(state);
        self.generation().hash(state);
    }
}

impl<Tag: HandleTag> PartialOrd for Handle<Tag> {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<Tag: HandleTag> Ord for Handle<Tag> {
    /// Orders by (owner, slot, generation); an ordering for sorted containers, not for gameplay.
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        let key = |h: &Self| (h.owner, h.slot(), h.generation());
        key(self).cmp(&key(other))
    }
}

impl<Tag: HandleTag> Default for Handle<Tag> {
    fn default() -> Self {
        Self::NULL
    }
}

impl<Tag: HandleTag> fmt::Debug for Handle<Tag> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{{{}={}, Slot={}, Generation={}}}",
            Tag::NAME,
            Tag::OWNER,
            self.owner,
            self.slot(),
            self.generation()
        )
    }
}

// SAFETY: `Handle` is `repr(C)` with fields u64, u64 (16 bytes, no padding) plus a
// zero-sized `PhantomData`; the all-zero bit pattern is the null handle.
unsafe impl<Tag: HandleTag> bytemuck::Zeroable for Handle<Tag> {}
// SAFETY: as above — every bit pattern is a (possibly invalid, never unsound) handle, there is
// no padding, no pointer and no interior mutability; `Tag: 'static` satisfies `Pod: 'static`.
unsafe impl<Tag: HandleTag> bytemuck::Pod for Handle<Tag> {}

#[cfg(test)]
mod tests {
    use super::*;

    struct Voice;
    impl HandleTag for Voice {
        const NAME: &'static str = "Voice";
        const OWNER: &'static str = "Session";
    }
    type VoiceHandle = Handle<Voice>;

    #[test]
    #[cfg(target_endian = "little")]
    fn bytes_are_owner_slot_generation_on_little_endian() {
        let h = VoiceHandle::from_raw_parts(0x0102_0304_0506_0708, 0x1112_1314, 0x2122_2324);
        let mut want = [0u8; 16];
        want[..8].copy_from_slice(&0x0102_0304_0506_0708u64.to_le_bytes());
        want[8..12].copy_from_slice(&0x1112_1314u32.to_le_bytes());
        want[12..].copy_from_slice(&0x2122_2324u32.to_le_bytes());
        assert_eq!(bytemuck::bytes_of(&h), &want);
        assert_eq!((h.slot(), h.generation()), (0x1112_1314, 0x2122_2324));
    }

    #[test]
    fn null_is_all_zero_and_default() {
        assert!(VoiceHandle::NULL.is_null());
        assert_eq!(VoiceHandle::NULL.non_null(), None);
        assert_eq!(VoiceHandle::from_option(None), VoiceHandle::NULL);
        let h = VoiceHandle::from_raw_parts(3, 0, 1);
        assert_eq!(h.non_null(), Some(h));
        assert_eq!(VoiceHandle::from_option(Some(h)), h);
        assert_eq!(VoiceHandle::default(), VoiceHandle::NULL);
        assert_eq!(bytemuck::bytes_of(&VoiceHandle::NULL), &[0u8; 16]);
        assert!(!VoiceHandle::NULL.is_well_formed());
    }

    #[test]
    fn slot_zero_is_valid_but_owner_or_generation_zero_is_not() {
        assert!(VoiceHandle::from_raw_parts(1, 0, 1).is_well_formed());
        assert!(!VoiceHandle::from_raw_parts(0, 0, 1).is_well_formed());
        assert!(!VoiceHandle::from_raw_parts(1, 0, 0).is_well_formed());
        assert!(!VoiceHandle::from_raw_parts(0, 5, 1).is_null());
    }

    #[test]
    fn equality_compares_every_field() {
        let h = VoiceHandle::from_raw_parts(7, 3, 2);
        assert_eq!(h, VoiceHandle::from_raw_parts(7, 3, 2));
        assert_ne!(h, VoiceHandle::from_raw_parts(8, 3, 2), "owner differs");
        assert_ne!(h, VoiceHandle::from_raw_parts(7, 4, 2), "slot differs");
        assert_ne!(
            h,
            VoiceHandle::from_raw_parts(7, 3, 3),
            "generation differs"
        );
    }

    #[test]
    fn debug_names_domain_and_fields() {
        let h = VoiceHandle::from_raw_parts(42, 17, 9);
        assert_eq!(format!("{h:?}"), "Voice{Session=42, Slot=17, Generation=9}");
    }

    #[test]
    fn pod_round_trip_preserves_fields() {
        let h = VoiceHandle::from_raw_parts(u64::MAX, u32::MAX, 1);
        let bytes: [u8; 16] = bytemuck::cast(h);
        let back: VoiceHandle = bytemuck::cast(bytes);
        assert_eq!(back, h);
    }
}
