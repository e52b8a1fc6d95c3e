//! Fixed-capacity arrays: reserved once at init through an allocator, never grown.

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec;

use super::InitError;

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

/// A vector of `capacity` all-zero values from one `allocate_zeroed` call, so untouched pages
/// stay untouched (the OS supplies zero pages lazily for large blocks).
///
/// # Errors
/// As [`reserve`].
pub(crate) fn zeroed<T: bytemuck::Zeroable, A: Allocator>(
    capacity: usize,
    alloc: A,
) -> Result<Vec<T, A>, InitError> {
    let layout = core::alloc::Layout::array::<T>(capacity).map_err(|_| InitError::Allocation)?;
    if layout.size() == 0 {
        let mut v = Vec::new_in(alloc);
        v.resize_with(capacity, T::zeroed);
        return Ok(v);
    }
    let block = alloc
        .allocate_zeroed(layout)
        .map_err(|_| InitError::Allocation)?;
    // SAFETY: 1. `block` comes from `alloc` with `layout` = `[T; capacity]`, non-zero sized,
    // so it is valid, aligned for `T` and owned by `alloc`; a block larger than requested may
    // be described by the requested capacity (allocator "fit" rules);
    // 2. every byte is zero and all-zero is a valid `T` (`Zeroable`), so `capacity` elements
    // are initialized.
    Ok(unsafe { Vec::from_raw_parts_in(block.cast::<T>().as_ptr(), capacity, capacity, alloc) })
}
