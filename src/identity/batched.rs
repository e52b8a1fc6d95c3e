//! Batched minting: one entropy call buys [`BATCH_IDS`] ids.
//!
//! The buffer is fork-safe: it remembers the process fork count it was filled under and discards
//! itself (zeroed) when a forked child touches it, so a child never mints its parent's ids.
//! Bytes handed out are zeroed in the buffer at once; the whole buffer is zeroed on discard,
//! failure and drop (best effort: the compiler may not elide these stores, but copies made by the
//! OS, such as swap, are out of reach, and so are the copies a move of the minter leaves behind:
//! the buffer is inline, so box the minter to keep it in one place).

use uuid::Uuid;

use super::entropy::{EntropyError, EntropySource, OsEntropy};
use super::fork_watch::{process_fork_counter, ForkCounter};

/// Bytes fetched per refill.
pub const BATCH_BYTES: usize = 4096;

/// Ids minted per refill.
pub const BATCH_IDS: usize = BATCH_BYTES / 16;

/// A buffering [`EntropySource`] and v4 minter over an inner source (the OS by default).
///
/// Invariants: `buf[..next]` is consumed and zero; `buf[next..]` is unread output of one
/// successful inner `fill` made while the fork count was `filled_under`. Not `Clone`: a copy
/// would hand out the same ids twice.
///
/// # Examples
/// ```
/// use ludus::identity::BatchedMinter;
/// let mut minter = BatchedMinter::new();
/// let (a, b) = (minter.mint().unwrap(), minter.mint().unwrap());
/// assert!(a != b && a.get_version_num() == 4);
/// ```
pub struct BatchedMinter<S: EntropySource = OsEntropy> {
    source: S,
    buf: [u8; BATCH_BYTES],
    next: usize,
    filled_under: u64,
    /// `None`: fork detection unavailable, so every request goes straight to `source`.
    forks: Option<&'static ForkCounter>,
}

impl BatchedMinter<OsEntropy> {
    /// A minter over the OS CSPRNG. Allocates nothing; the first mint fills the buffer.
    pub fn new() -> Self {
        Self::with_source(OsEntropy)
    }
}

impl Default for BatchedMinter<OsEntropy> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: EntropySource> BatchedMinter<S> {
    /// A minter over an explicit source (a platform adapter, or a test fixture).
    pub fn with_source(source: S) -> Self {
        Self::with_fork_counter(source, process_fork_counter())
    }

    /// A minter watching `forks` (tests simulate a fork by bumping their own counter).
    pub(crate) fn with_fork_counter(source: S, forks: Option<&'static ForkCounter>) -> Self {
        Self {
            source,
            buf: [0; BATCH_BYTES],
            next: BATCH_BYTES,
            filled_under: forks.map_or(0, ForkCounter::get),
            forks,
        }
    }

    /// Mints one version-4 UUID from the buffer, refilling it when empty.
    ///
    /// # Errors
    /// [`EntropyError`] when a refill fails; the buffer is then empty and zeroed, nothing was
    /// minted, and the next call retries the source.
    #[inline]
    pub fn mint(&mut self) -> Result<Uuid, EntropyError> {
        let bytes = match self.take_buffered::<16>() {
            Some(bytes) => bytes,
            None => {
                let mut bytes = [0u8; 16];
                self.fill(&mut bytes)?;
                bytes
            }
        };
        Ok(uuid::Builder::from_random_bytes(bytes).into_uuid())
    }

    /// Fast path: `N` unread bytes of a buffer filled in this process (no fork since), zeroed
    /// in the buffer as they are taken; `None` when the slow path must run.
    #[inline(always)]
    fn take_buffered<const N: usize>(&mut self) -> Option<[u8; N]> {
        if self.forks?.get() != self.filled_under {
            return None;
        }
        let chunk = self.buf.get_mut(self.next..)?.first_chunk_mut::<N>()?;
        let bytes = *chunk;
        *chunk = [0; N];
        self.next += N;
        Some(bytes)
    }

    /// Unread bytes left in the buffer (0 after a fork was detected, before the next request).
    pub fn buffered_bytes(&self) -> usize {
        BATCH_BYTES - self.next
    }

    /// Zeroes and empties the buffer.
    fn discard(&mut self) {
        self.buf.fill(0);
        self.next = BATCH_BYTES;
    }

    /// Replaces the buffer with a fresh inner fill (which overwrites every byte); on failure
    /// leaves it empty and zeroed.
    #[cold]
    fn refill(&mut self) -> Result<(), EntropyError> {
        self.next = BATCH_BYTES;
        match self.source.fill(&mut self.buf) {
            Ok(()) => {
                self.next = 0;
                Ok(())
            }
            Err(e) => {
                self.discard();
                Err(e)
            }
        }
    }
}

impl<S: EntropySource> EntropySource for BatchedMinter<S> {
    #[inline]
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), EntropyError> {
        let Some(forks) = self.forks else {
            return self.source.fill(dest);
        };
        let count = forks.get();
        if count != self.filled_under {
            self.discard();
            self.filled_under = count;
        }
        if dest.len() > BATCH_BYTES {
            return self.source.fill(dest);
        }
        if dest.len() > self.buffered_bytes() {
            self.refill()?;
        }
        let end = self.next + dest.len();
        let taken = &mut self.buf[self.next..end];
        dest.copy_from_slice(taken);
        taken.fill(0);
        self.next = end;
        Ok(())
    }
}

impl<S: EntropySource> Drop for BatchedMinter<S> {
    fn drop(&mut self) {
        self.buf.fill(0);
        core::hint::black_box(&self.buf);
    }
}

impl<S: EntropySource + core::fmt::Debug> core::fmt::Debug for BatchedMinter<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("BatchedMinter")
            .field("source", &self.source)
            .field("buffered_bytes", &self.buffered_bytes())
            .field("fork_safe_buffering", &self.forks.is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::test_entropy::{FailingEntropy, SeqEntropy};
    use std::collections::HashSet;

    /// A fork counter private to the calling test (a `static`, so Miri sees no leak).
    macro_rules! own_counter {
        () => {{
            static FORKS: ForkCounter = ForkCounter::new();
            &FORKS
        }};
    }

    /// The ids `SeqEntropy::new(seed)` yields on its `fill`-th fill when cut into 16-byte ids.
    fn ids_of_fill(seed: u64, fill: u64) -> Vec<Uuid> {
        let mut s = SeqEntropy::new(seed);
        let mut buf = [0u8; BATCH_BYTES];
        for _ in 0..fill {
            s.fill(&mut buf).unwrap();
        }
        buf.chunks(16)
            .map(|c| uuid::Builder::from_random_bytes(c.try_into().unwrap()).into_uuid())
            .collect()
    }

    #[test]
    fn one_fill_buys_a_batch_in_order_and_is_zeroed_as_consumed() {
        let mut m = BatchedMinter::with_fork_counter(SeqEntropy::new(5), Some(own_counter!()));
        let expected = ids_of_fill(5, 1);
        for (i, want) in expected.iter().enumerate() {
            assert_eq!(m.mint().unwrap(), *want, "id {i}");
            assert_eq!(m.buf[m.next - 16..m.next], [0; 16], "id {i} left in buffer");
        }
        assert!(m.buf.iter().all(|&b| b == 0));
        assert_eq!(m.source.fills_made(), 1);
        assert_eq!(m.mint().unwrap(), ids_of_fill(5, 2)[0]);
        assert_eq!(m.source.fills_made(), 2);
    }

    #[test]
    fn simulated_fork_discards_the_buffer() {
        let forks = own_counter!();
        let mut m = BatchedMinter::with_fork_counter(SeqEntropy::new(9), Some(forks));
        let parent = ids_of_fill(9, 1);
        assert_eq!(m.mint().unwrap(), parent[0]);
        forks.bump();
        let child = m.mint().unwrap();
        assert!(!parent.contains(&child));
        assert_eq!(child, ids_of_fill(9, 2)[0]);
    }

    #[test]
    fn failed_refill_mints_nothing_and_retries_later() {
        // Call 1 fills, call 2 fails, every later call fails too.
        let source = FailingEntropy::new(SeqEntropy::new(2), 2);
        let mut m = BatchedMinter::with_fork_counter(source, Some(own_counter!()));
        let mut slot = Uuid::nil();
        for _ in 0..BATCH_IDS {
            slot = m.mint().unwrap();
        }
        let last = slot;
        let r = m.mint().map(|id| slot = id);
        assert_eq!(r, Err(EntropyError::Source { code: 1 }));
        assert_eq!(slot, last);
        assert_eq!(m.buffered_bytes(), 0);
        assert!(
            m.buf.iter().all(|&b| b == 0),
            "failed fill left bytes behind"
        );
        assert!(m.mint().is_err());
        assert_eq!(m.source.calls(), 3);
    }

    #[test]
    fn without_fork_detection_every_request_hits_the_source() {
        let mut m = BatchedMinter::with_fork_counter(SeqEntropy::new(4), None);
        m.mint().unwrap();
        m.mint().unwrap();
        assert_eq!(m.source.fills_made(), 2);
        assert_eq!(m.buffered_bytes(), 0);
    }

    #[test]
    fn odd_sized_requests_never_repeat_bytes() {
        let mut m = BatchedMinter::with_fork_counter(SeqEntropy::new(8), Some(own_counter!()));
        let mut out = Vec::new();
        for len in [1usize, 15, 100, 4000, 17, BATCH_BYTES + 1] {
            let mut d = vec![0u8; len];
            m.fill(&mut d).unwrap();
            assert!(
                m.buf[..m.next].iter().all(|&b| b == 0),
                "consumed bytes left behind"
            );
            out.push(d);
        }
        let windows: Vec<&[u8]> = out.iter().flat_map(|d| d.chunks_exact(8)).collect();
        assert_eq!(windows.iter().collect::<HashSet<_>>().len(), windows.len());
    }

    #[test]
    fn os_batched_sample_is_v4_rfc_and_distinct() {
        let n = if cfg!(miri) { 300 } else { 4096 };
        let mut m = BatchedMinter::new();
        let mut seen = HashSet::new();
        for _ in 0..n {
            let id = m.mint().unwrap();
            assert_eq!(id.get_version_num(), 4);
            assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
            assert!(seen.insert(id), "duplicate {id}");
        }
    }

    /// Real fork: the child must not mint from the parent's buffer. Skipped under Miri, which
    /// cannot `fork`; `simulated_fork_discards_the_buffer` covers the logic there.
    #[test]
    #[cfg(unix)]
    #[cfg_attr(miri, ignore)]
    fn forked_child_never_reuses_parent_buffer() {
        let mut m = BatchedMinter::with_source(SeqEntropy::new(77));
        let first = m.mint().unwrap();
        let mut fds = [0i32; 2];
        // SAFETY: `fds` is a valid, writable array of two `c_int`s as `pipe` requires.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let (read_fd, write_fd) = (fds[0], fds[1]);
        // SAFETY: the child below only mints (no allocation, no locks: the atfork handler's
        // registration `OnceLock` is already initialised by `with_source`), writes to a pipe and
        // calls `_exit`, all of which are safe after `fork` in a multi-threaded process.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let bytes = m.mint().map(|id| *id.as_bytes()).unwrap_or([0; 16]);
            // SAFETY: `write_fd` is the open write end of the pipe; `bytes` is 16 readable bytes.
            let n = unsafe { libc::write(write_fd, bytes.as_ptr().cast(), 16) };
            // SAFETY: `_exit` ends the child without running the parent's destructors or atexit.
            unsafe { libc::_exit(if n == 16 { 0 } else { 1 }) };
        }
        let mut child = [0u8; 16];
        // SAFETY: `read_fd` is the open read end of the pipe; `child` is 16 writable bytes.
        let n = unsafe { libc::read(read_fd, child.as_mut_ptr().cast(), 16) };
        let mut status = 0;
        // SAFETY: `pid` is our child; `status` is a valid `c_int` to write.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        // SAFETY: both descriptors are open and owned by this test.
        unsafe {
            libc::close(read_fd);
            libc::close(write_fd);
        }
        assert_eq!(n, 16);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        let child = Uuid::from_bytes(child);

        let parent_next: Vec<Uuid> = (1..BATCH_IDS).map(|_| m.mint().unwrap()).collect();
        assert_ne!(child, first);
        assert!(
            !parent_next.contains(&child),
            "child reused a parent id {child}"
        );
        assert_eq!(parent_next, ids_of_fill(77, 1)[1..]);
        assert_eq!(child, ids_of_fill(77, 2)[0], "child should have refilled");
    }
}
