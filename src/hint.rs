//! Cache hints for walks whose next reads are known ahead (UUID-order passes over data laid
//! out in slot order).

/// Asks for the cache line holding `*value` ahead of its use; nothing where there is no hint.
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse", not(miri)))]
    // SAFETY: `_mm_prefetch` needs SSE, which this cfg requires; a prefetch is a hint that
    // never faults and reads nothing into the program, and `value` is a live reference anyway.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            (value as *const T).cast(),
        );
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse", not(miri))))]
    let _ = value;
}

/// Asks for every cache line of `bytes` ahead of their use (the last one too when `bytes`
/// straddles a line boundary).
#[inline(always)]
pub(crate) fn prefetch_bytes(bytes: &[u8]) {
    for line in bytes.chunks(64) {
        prefetch(&line[0]);
    }
    if let Some(last) = bytes.last() {
        prefetch(last);
    }
}
