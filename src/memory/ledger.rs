//! Validation ledger (feature `validation`): a bounded table of live blocks that catches double
//! free, wrong layout and wrong domain before the backend is touched.
//!
//! Storage is a fixed open-addressing table (linear probing, backward-shift deletion) reserved
//! up front; it never grows. When it is full it marks itself incomplete and stops recording:
//! from then on a missing entry is "unknown", not proof of an invalid free. A lock guards the
//! table only (never a backend call or user code).

use core::ptr::NonNull;

use super::domain::AllocationDomain;
use super::layout::AllocationLayout;
use crate::sync::{yield_now, AtomicBool, Ordering, UnsafeCell};

/// Live blocks the process ledger can track.
pub const LEDGER_CAPACITY: usize = 1 << 14;

/// A contract violation the ledger proved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LedgerViolation {
    /// The pointer is not a live block (double free, interior or foreign pointer).
    #[error("free of a block that is not live (double free or foreign pointer) at {addr:#x}")]
    NotLive {
        /// The offending address.
        addr: usize,
    },
    /// The block is live but was allocated with another layout.
    #[error("wrong layout at {addr:#x}: allocated {allocated:?}, freed as {given:?}")]
    WrongLayout {
        /// The offending address.
        addr: usize,
        /// Layout at allocation.
        allocated: AllocationLayout,
        /// Layout passed to free/resize.
        given: AllocationLayout,
    },
    /// The block is live but belongs to another domain.
    #[error("wrong domain at {addr:#x}: the block belongs to another domain")]
    WrongDomain {
        /// The offending address.
        addr: usize,
    },
}

#[derive(Clone, Copy)]
struct Entry {
    /// 0 = empty.
    addr: usize,
    layout: AllocationLayout,
    /// Address of the owning `AllocationDomain`.
    domain: usize,
}

const EMPTY: Entry = Entry {
    addr: 0,
    layout: AllocationLayout::of::<u8>(),
    domain: 0,
};

/// A bounded live-block table of `N` entries (a power of two).
pub struct Ledger<const N: usize> {
    lock: AtomicBool,
    incomplete: AtomicBool,
    table: UnsafeCell<[Entry; N]>,
}

// SAFETY: `table` is only accessed inside `with_table`, under `lock` (Acquire/Release); the
// loom model `loom-tests/tests/memory_ledger.rs` checks that exclusion.
unsafe impl<const N: usize> Sync for Ledger<N> {}

impl<const N: usize> core::fmt::Debug for Ledger<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Ledger")
            .field("capacity", &N)
            .field("complete", &self.is_complete())
            .finish()
    }
}

fn slot_of<const N: usize>(addr: usize) -> usize {
    // Fibonacci hashing of the address (low bits are alignment zeros).
    (addr.wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as usize) >> 7) & (N - 1)
}

impl<const N: usize> Ledger<N> {
    /// An empty, complete ledger.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        assert!(N.is_power_of_two());
        Self {
            lock: AtomicBool::new(false),
            incomplete: AtomicBool::new(false),
            table: UnsafeCell::new([EMPTY; N]),
        }
    }

    /// An empty, complete ledger (loom's atomics are not `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        assert!(N.is_power_of_two());
        Self {
            lock: AtomicBool::new(false),
            incomplete: AtomicBool::new(false),
            table: UnsafeCell::new([EMPTY; N]),
        }
    }

    /// `false` once the table overflowed: later misses are not proof of misuse.
    pub fn is_complete(&self) -> bool {
        !self.incomplete.load(Ordering::Relaxed)
    }

    fn with_table<R>(&self, f: impl FnOnce(&mut [Entry; N]) -> R) -> R {
        while self
            .lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            yield_now();
        }
        /// Releases the lock when dropped: also when `f` panics, so a panic never leaves every
        /// later allocation spinning.
        struct Unlock<'a>(&'a AtomicBool);
        impl Drop for Unlock<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        let _unlock = Unlock(&self.lock);
        // SAFETY: the lock gives exclusive access until `_unlock` releases it (Release), after
        // `f` returned or unwound; `f` cannot re-enter the ledger (it only touches the table).
        self.table.with_mut(|t| f(unsafe { &mut *t }))
    }

    /// Index of `addr`'s entry, if present.
    fn find(t: &[Entry; N], addr: usize) -> Option<usize> {
        let mut i = slot_of::<N>(addr);
        for _ in 0..N {
            match t[i].addr {
                0 => return None,
                a if a == addr => return Some(i),
                _ => i = (i + 1) & (N - 1),
            }
        }
        None
    }

    /// Records a new live block; on a full table marks the ledger incomplete.
    pub fn record(&self, p: NonNull<u8>, layout: AllocationLayout, domain: &AllocationDomain) {
        let e = Entry {
            addr: p.as_ptr().addr(),
            layout,
            domain: core::ptr::from_ref(domain).addr(),
        };
        let full = self.with_table(|t| {
            let mut i = slot_of::<N>(e.addr);
            for _ in 0..N {
                if t[i].addr == 0 || t[i].addr == e.addr {
                    t[i] = e;
                    return false;
                }
                i = (i + 1) & (N - 1);
            }
            true
        });
        if full {
            self.incomplete.store(true, Ordering::Relaxed);
        }
    }

    /// Validates `p` as a live block of `domain` with `layout` and removes it.
    ///
    /// # Errors
    /// The proven violation; nothing is removed. A miss after exhaustion is not an error.
    pub fn try_remove(
        &self,
        p: NonNull<u8>,
        layout: AllocationLayout,
        domain: &AllocationDomain,
    ) -> Result<(), LedgerViolation> {
        let addr = p.as_ptr().addr();
        self.with_table(|t| {
            let i = match Self::find(t, addr) {
                Some(i) => i,
                None => return self.miss(addr).map(|_| ()),
            };
            Self::validate(&t[i], addr, layout, domain)?;
            // Backward-shift deletion keeps every probe chain unbroken.
            let mut hole = i;
            let mut j = (i + 1) & (N - 1);
            // At most N - 1 followers: a full table has no empty slot to stop at.
            while t[j].addr != 0 && j != i {
                let home = slot_of::<N>(t[j].addr);
                // Move `j` into the hole if its home is not in the cyclic range (hole, j].
                if (j.wrapping_sub(home) & (N - 1)) >= (j.wrapping_sub(hole) & (N - 1)) {
                    t[hole] = t[j];
                    hole = j;
                }
                j = (j + 1) & (N - 1);
            }
            t[hole] = EMPTY;
            Ok(())
        })
    }

    fn miss(&self, addr: usize) -> Result<Option<usize>, LedgerViolation> {
        if self.is_complete() {
            Err(LedgerViolation::NotLive { addr })
        } else {
            Ok(None)
        }
    }

    fn validate(
        e: &Entry,
        addr: usize,
        layout: AllocationLayout,
        domain: &AllocationDomain,
    ) -> Result<(), LedgerViolation> {
        if e.domain != core::ptr::from_ref(domain).addr() {
            return Err(LedgerViolation::WrongDomain { addr });
        }
        if e.layout != layout {
            return Err(LedgerViolation::WrongLayout {
                addr,
                allocated: e.layout,
                given: layout,
            });
        }
        Ok(())
    }

    /// Validates without removing.
    ///
    /// # Errors
    /// As for [`try_remove`](Self::try_remove).
    pub fn try_check(
        &self,
        p: NonNull<u8>,
        layout: AllocationLayout,
        domain: &AllocationDomain,
    ) -> Result<(), LedgerViolation> {
        let addr = p.as_ptr().addr();
        self.with_table(|t| match Self::find(t, addr) {
            Some(i) => Self::validate(&t[i], addr, layout, domain),
            None => self.miss(addr).map(|_| ()),
        })
    }

    /// Removes (validated) and panics on a violation: the terminal path for integrity errors.
    pub(crate) fn remove(
        &self,
        p: NonNull<u8>,
        layout: AllocationLayout,
        domain: &AllocationDomain,
    ) {
        if let Err(v) = self.try_remove(p, layout, domain) {
            panic!("ludus memory validation ({}): {v}", domain.name());
        }
    }
}

impl<const N: usize> Default for Ledger<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// The process-wide ledger every domain reports to.
#[cfg(not(loom))]
pub(crate) static PROCESS: Ledger<LEDGER_CAPACITY> = Ledger::new();

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_panic_under_the_lock_releases_it() {
        let ledger: Ledger<8> = Ledger::new();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            ledger.with_table(|_| panic!("inside the lock"));
        }));
        assert!(r.is_err());
        assert!(!ledger.lock.load(Ordering::Relaxed), "the lock stayed held");
        // And the table is usable again.
        assert_eq!(ledger.with_table(|t| t.len()), 8);
    }
}
