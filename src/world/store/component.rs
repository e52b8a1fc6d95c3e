//! The bound on every component type: plain state whose bytes can be copied out, and checked
//! when they are read back.

use bytemuck::checked::CheckedCastError;
use bytemuck::{CheckedBitPattern, NoUninit};

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
/// [`Handle::from_option`](crate::Handle::from_option)), and arrays of `bool` or enums
/// (bytemuck checks no array's pattern: wrap them in a struct of named fields, or use a `u8`
/// bit set).
///
/// Implemented for every type with both bytemuck traits; nothing else can implement it.
pub trait Component: NoUninit + CheckedBitPattern {}

impl<T: NoUninit + CheckedBitPattern> Component for T {}

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
