//! `AllocationLayout`: a checked `{ size, align }` request.
//!
//! Invariant of every value: `align` is a nonzero power of two and `size` rounded up to `align`
//! does not exceed `isize::MAX`, so every later padding/rounding sum is overflow-free and the
//! value converts losslessly into [`core::alloc::Layout`].

use core::alloc::Layout;
use core::ptr::NonNull;

/// Why a layout request was rejected. Nothing was allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// The alignment is zero or not a power of two.
    #[error("alignment {align} is not a nonzero power of two")]
    BadAlignment {
        /// The rejected alignment.
        align: usize,
    },
    /// The size (or `count * size_of::<T>()`), rounded up to the alignment, exceeds `isize::MAX`.
    #[error("size overflows: {count} x {elem_size} bytes at alignment {align}")]
    SizeOverflow {
        /// Number of elements requested (1 for a plain byte request).
        count: usize,
        /// Bytes per element.
        elem_size: usize,
        /// The requested alignment.
        align: usize,
    },
}

/// A byte request: `size` bytes at an address that is a multiple of `align`.
///
/// # Examples
/// ```
/// use ludus::memory::{AllocationLayout, LayoutError};
/// let l = AllocationLayout::new(24, 8).unwrap();
/// assert_eq!((l.size(), l.align()), (24, 8));
/// assert_eq!(AllocationLayout::new(8, 3), Err(LayoutError::BadAlignment { align: 3 }));
/// assert!(AllocationLayout::new(usize::MAX, 1).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AllocationLayout {
    size: usize,
    align: usize,
}

impl AllocationLayout {
    /// A layout of `size` bytes at alignment `align`.
    ///
    /// # Errors
    /// [`LayoutError::BadAlignment`] unless `align` is a nonzero power of two;
    /// [`LayoutError::SizeOverflow`] if `size` rounded up to `align` exceeds `isize::MAX`.
    #[inline]
    pub const fn new(size: usize, align: usize) -> Result<Self, LayoutError> {
        if !align.is_power_of_two() {
            return Err(LayoutError::BadAlignment { align });
        }
        Self::sized(size, align)
    }

    /// `new` past its alignment check: `align` is a nonzero power of two, only the size can
    /// fail.
    #[inline]
    const fn sized(size: usize, align: usize) -> Result<Self, LayoutError> {
        // `isize::MAX - (align - 1)` cannot underflow: align <= 2^(bits-1) <= isize::MAX + 1.
        if size > isize::MAX as usize - (align - 1) {
            return Err(LayoutError::SizeOverflow {
                count: 1,
                elem_size: size,
                align,
            });
        }
        Ok(Self { size, align })
    }

    /// The layout of one `T`.
    pub const fn of<T>() -> Self {
        Self {
            size: size_of::<T>(),
            align: align_of::<T>(),
        }
    }

    /// The layout of `count` contiguous `T`s.
    ///
    /// # Errors
    /// [`LayoutError::SizeOverflow`] if `count * size_of::<T>()` overflows or exceeds the limit.
    pub const fn array<T>(count: usize) -> Result<Self, LayoutError> {
        let overflow = LayoutError::SizeOverflow {
            count,
            elem_size: size_of::<T>(),
            align: align_of::<T>(),
        };
        match size_of::<T>().checked_mul(count) {
            Some(size) => match Self::new(size, align_of::<T>()) {
                Ok(l) => Ok(l),
                Err(_) => Err(overflow),
            },
            None => Err(overflow),
        }
    }

    /// The same alignment with another size.
    ///
    /// # Errors
    /// [`LayoutError::SizeOverflow`] as for [`AllocationLayout::new`].
    #[inline]
    pub const fn with_size(self, size: usize) -> Result<Self, LayoutError> {
        // `align` is a nonzero power of two (the type's invariant).
        Self::sized(size, self.align)
    }

    /// Requested bytes.
    #[inline]
    pub const fn size(self) -> usize {
        self.size
    }

    /// Requested alignment (a nonzero power of two).
    #[inline]
    pub const fn align(self) -> usize {
        self.align
    }

    /// A non-null, well-aligned pointer with no provenance: the result of an empty request.
    #[inline]
    pub fn dangling(self) -> NonNull<u8> {
        // `align` is nonzero, so the fallback is never taken.
        NonNull::new(core::ptr::without_provenance_mut(self.align)).unwrap_or(NonNull::dangling())
    }

    /// The equivalent `core::alloc::Layout` (always representable, by the type invariant).
    /// Unchecked: it runs on every allocation and free, and re-checking cost ~10 instructions
    /// per call.
    #[inline(always)]
    pub const fn to_layout(self) -> Layout {
        // SAFETY: the fields are private and every constructor (`new` and `with_size` through
        // `sized`, `of`, `array`, `From<Layout>`) establishes the type invariant: `align` is a
        // nonzero power of two and `size <= isize::MAX - (align - 1)`, which is exactly
        // `Layout::from_size_align`'s condition.
        unsafe { Layout::from_size_align_unchecked(self.size, self.align) }
    }
}

impl From<Layout> for AllocationLayout {
    #[inline]
    fn from(l: Layout) -> Self {
        // `Layout` upholds the same invariant.
        Self {
            size: l.size(),
            align: l.align(),
        }
    }
}

impl From<AllocationLayout> for Layout {
    #[inline]
    fn from(l: AllocationLayout) -> Self {
        l.to_layout()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_must_be_a_nonzero_power_of_two() {
        for a in [0usize, 3, 6, 12, usize::MAX] {
            assert_eq!(
                AllocationLayout::new(1, a),
                Err(LayoutError::BadAlignment { align: a })
            );
        }
        for shift in 0..usize::BITS {
            assert!(AllocationLayout::new(0, 1 << shift).is_ok());
        }
    }

    #[test]
    fn size_limit_accounts_for_rounding() {
        let max = isize::MAX as usize;
        assert!(AllocationLayout::new(max, 1).is_ok());
        assert!(AllocationLayout::new(max + 1, 1).is_err());
        assert!(AllocationLayout::new(max - 7, 8).is_ok());
        assert!(AllocationLayout::new(max - 6, 8).is_err());
        assert!(AllocationLayout::new(usize::MAX, 1 << (usize::BITS - 1)).is_err());
    }

    #[test]
    fn array_checks_multiplication() {
        assert_eq!(AllocationLayout::array::<u64>(3).unwrap().size(), 24);
        assert!(AllocationLayout::array::<u64>(usize::MAX / 4).is_err());
        assert_eq!(AllocationLayout::array::<()>(usize::MAX).unwrap().size(), 0);
    }

    #[test]
    fn converts_to_and_from_core_layout() {
        let l = AllocationLayout::new(40, 16).unwrap();
        let c: Layout = l.into();
        assert_eq!(AllocationLayout::from(c), l);
        assert_eq!(l.dangling().as_ptr().addr(), 16);
    }
}
