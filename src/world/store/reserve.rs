//! Fixed-capacity arrays: reserved once at init through an allocator, never grown.

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec;

use crate::world::store::error::InitError;

/// An empty vector whose capacity is at least `capacity`, reserved in one allocation.
/// Callers keep `len <= capacity`, so `push` never reallocates.
///
/// # Errors
/// [`InitError::Allocation`] when the allocator refuses or the byte size overflows.
pub(crate) fn reserve<T, A: Allocator>(capacity: usize, alloc: A) -> Result<Vec<T, A>, InitError> {
    let mut v = Vec::new_in(alloc);
    v.try_reserve_exact(capacity)
        .map_err(|_| InitError::Allocation)?;
    Ok(v)
}

/// A vector of `capacity` copies of `value`, written at init so that its pages are resident
/// before the first structural change needs them.
///
/// # Errors
/// As [`reserve`].
pub(crate) fn filled<T: Copy, A: Allocator>(
    capacity: usize,
    value: T,
    alloc: A,
) -> Result<Vec<T, A>, InitError> {
    let mut v = reserve(capacity, alloc)?;
    v.resize(capacity, value);
    Ok(v)
}

/// An empty vector whose capacity of at least `capacity` is written once at init, so that its
/// pages are resident before the first pushes need them (no page fault in the first frame
/// that records into it).
///
/// # Errors
/// As [`reserve`].
pub(crate) fn resident<T: Copy, A: Allocator>(
    capacity: usize,
    value: T,
    alloc: A,
) -> Result<Vec<T, A>, InitError> {
    let mut v = filled(capacity, value, alloc)?;
    v.clear();
    Ok(v)
}
