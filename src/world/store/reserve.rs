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
    let spare = &mut v.spare_capacity_mut()[..capacity];
    if let Some(first) = spare.first_mut() {
        first.write(value);
    }
    // Doubling copies of the written prefix: a few `memcpy`s however long the array (an
    // element-by-element fill is a loop of `capacity` steps, slow in debug builds and Miri).
    let mut done = capacity.min(1);
    while done < capacity {
        let n = done.min(capacity - done);
        let (head, tail) = spare.split_at_mut(done);
        tail[..n].copy_from_slice(&head[..n]);
        done += n;
    }
    // SAFETY: `reserve` gave a capacity of at least `capacity`, and its first `capacity`
    // elements are initialized: element 0 written above, each later one copied from an
    // initialized one (the prefix doubles until `done == capacity`).
    unsafe { v.set_len(capacity) };
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

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api2::alloc::Global;

    #[test]
    fn filled_writes_every_element_and_resident_none() {
        for n in [0usize, 1, 2, 3, 4, 5, 7, 8, 9, 63, 64, 65, 1000] {
            let v = filled(n, (n as u32, 7u8), Global).unwrap();
            assert_eq!(v.len(), n);
            assert!(v.iter().all(|&x| x == (n as u32, 7)), "{n}");
            let r = resident(n, 3u16, Global).unwrap();
            assert!(r.is_empty() && r.capacity() >= n);
        }
    }
}
