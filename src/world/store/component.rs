//! The bound on every component type: plain state whose bytes can be copied out, and checked
//! when they are read back.

use core::ops::{Deref, DerefMut};

use bytemuck::checked::CheckedCastError;
use bytemuck::{AnyBitPattern, CheckedBitPattern, NoUninit, Zeroable};

use crate::world::store::error::WorldError;

/// Plain state a [`ComponentPool`](crate::ComponentPool) holds: `Copy`, `'static`, no
/// uninitialized byte ([`NoUninit`]: no padding, so its bytes can be copied out) and a bit
/// pattern that can be checked ([`CheckedBitPattern`]). Every [`bytemuck::Pod`] type is one; so
/// are `bool`, `char`, the `NonZero*` integers, fieldless `#[repr(u8)]` (or wider) enums, and
/// structs of those that derive `NoUninit` and `CheckedBitPattern`.
///
/// Pools, joins and spawns move values as `T`. Wherever a value is read back from bytes
/// (command buffers, transaction values, prepared commands, checkpoints, record and level
/// restores) its pattern is checked first: a `bool` byte other than 0 or 1, or an enum
/// discriminant no variant has, is refused with a typed error and nothing changes.
///
/// Not in the class: `Option<EntityId>` (its `None` leaves 16 bytes uninitialized; the null
/// reference is [`EntityId::NULL`](crate::EntityId::NULL), all zeros, converted with
/// [`Handle::non_null`](crate::Handle::non_null) and
/// [`Handle::from_option`](crate::Handle::from_option)). A bare array of `bool` or enums is
/// not one either (bytemuck checks no array's pattern); [`PlainArray`] is that array.
///
/// Implemented for every type with both bytemuck traits; nothing else can implement it.
pub trait Component: NoUninit + CheckedBitPattern {}

impl<T: NoUninit + CheckedBitPattern> Component for T {}

/// An array of any plain-state type, a [`Component`] (or a field of one) where a bare array is
/// not: bytemuck checks the pattern of no array, so `[bool; 4]` or `[Mode; 2]` (an enum) has no
/// checked form; `PlainArray<bool, 4>` has one, element by element. It is the array
/// (`repr(transparent)`, `Deref` to `[T; N]`), with the array's serde form.
///
/// ```
/// use bytemuck::{CheckedBitPattern, NoUninit};
/// use ludus::prelude::*;
/// use ludus::world::PlainArray;
/// #[derive(Clone, Copy, Debug, PartialEq, NoUninit, CheckedBitPattern)]
/// #[repr(C)]
/// struct Lights { on: PlainArray<bool, 4>, level: u32 }
/// ludus::world! { struct W { lights: Lights } }
/// let mut w = W::try_new(4).unwrap();
/// w.begin_structural();
/// let lights = Lights { on: [true, false, true, true].into(), level: 3 };
/// let e = w.spawn((lights,)).unwrap();
/// assert!(w.lights.get(e).unwrap().on[2]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct PlainArray<T, const N: usize>(pub [T; N]);

// SAFETY: `repr(transparent)` over `[T; N]`; an array has no byte between its elements (its
// stride is the element's size, a multiple of its alignment) and `T: NoUninit` none inside
// one, so no byte is uninitialized. `Copy + 'static` follow from `T`'s.
unsafe impl<T: NoUninit, const N: usize> NoUninit for PlainArray<T, N> {}

// SAFETY: 1. `Bits = [T::Bits; N]` has the layout of `[T; N]`, hence of `Self` (transparent):
// `T` has the layout of `T::Bits` (`T: CheckedBitPattern`'s contract) and arrays of equal
// element layout and length are laid out alike; 2. an array is valid exactly when each element
// is, which `is_valid_bit_pattern` checks with `T`'s own check; 3. `Copy` as `T`.
unsafe impl<T: CheckedBitPattern, const N: usize> CheckedBitPattern for PlainArray<T, N>
where
    [T::Bits; N]: AnyBitPattern,
{
    type Bits = [T::Bits; N];

    #[inline]
    fn is_valid_bit_pattern(bits: &Self::Bits) -> bool {
        bits.iter().all(T::is_valid_bit_pattern)
    }
}

// SAFETY: all zeros is an array of zeroed `T`s, each valid (`T: Zeroable`).
unsafe impl<T: Zeroable, const N: usize> Zeroable for PlainArray<T, N> {}

impl<T, const N: usize> Deref for PlainArray<T, N> {
    type Target = [T; N];
    #[inline(always)]
    fn deref(&self) -> &[T; N] {
        &self.0
    }
}

impl<T, const N: usize> DerefMut for PlainArray<T, N> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T; N] {
        &mut self.0
    }
}

impl<T, const N: usize> From<[T; N]> for PlainArray<T, N> {
    #[inline(always)]
    fn from(a: [T; N]) -> Self {
        Self(a)
    }
}

impl<T, const N: usize> serde::Serialize for PlainArray<T, N>
where
    [T; N]: serde::Serialize,
{
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de, T, const N: usize> serde::Deserialize<'de> for PlainArray<T, N>
where
    [T; N]: serde::Deserialize<'de>,
{
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <[T; N]>::deserialize(d).map(Self)
    }
}

/// `T` read from `bytes` (unaligned), or `None` when their length is not `T`'s size or their
/// pattern is not a valid `T`.
#[inline(always)]
pub(crate) fn read<T: Component>(bytes: &[u8]) -> Option<T> {
    bytemuck::checked::try_pod_read_unaligned(bytes).ok()
}

/// Whether `bytes` hold a valid `T` (its size, a valid pattern).
#[inline]
pub(crate) fn is_valid<T: Component>(bytes: &[u8]) -> bool {
    read::<T>(bytes).is_some()
}

/// Whether every pattern of `T`'s size is a `T` (its checked form is itself, as for every
/// `Pod` type): reading one back then checks the length alone. A constant once monomorphized.
#[inline(always)]
pub(crate) fn any_pattern<T: Component>() -> bool {
    core::any::TypeId::of::<T>() == core::any::TypeId::of::<<T as CheckedBitPattern>::Bits>()
}

/// `T` read from `bytes`: [`WorldError::UnknownComponent`] for another size (the bytes are
/// some other type's), [`WorldError::InvalidValue`] for a pattern no `T` has.
#[inline(always)]
pub(crate) fn try_read<T: Component>(bytes: &[u8]) -> Result<T, WorldError> {
    bytemuck::checked::try_pod_read_unaligned(bytes).map_err(|e| match e {
        CheckedCastError::InvalidBitPattern => WorldError::InvalidValue,
        _ => WorldError::UnknownComponent,
    })
}
