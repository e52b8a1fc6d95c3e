//! Owner-token issuance: nonzero, monotonic, never wrapping.
//!
//! A [`TokenSource`] is an instance so tests (and loom) can start one near the limit; the
//! process-wide source is one `static` instance of the same type, reached through
//! [`issue_owner_token`]. Tokens are unique numbers only: `Relaxed` ordering suffices because a
//! token publishes nothing (the registry that receives it is published by its own means).

use crate::sync::{AtomicU64, Ordering};

/// An owner token: the nonzero identity of one registry lifetime.
pub type OwnerToken = u64;

/// Every token value has been issued; the source refuses instead of wrapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("identity exhausted: the owner-token source has issued its terminal value")]
pub struct IdentityExhausted;

/// Issues tokens `1..=limit` in increasing order, each once, then reports [`IdentityExhausted`]
/// to every later caller.
///
/// Invariant: `last` is the most recently issued token (0 before the first) and never exceeds
/// `limit`; it only ever increases.
#[derive(Debug)]
pub struct TokenSource {
    last: AtomicU64,
    limit: u64,
}

impl TokenSource {
    /// A fresh source issuing `1..=u64::MAX`.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            last: AtomicU64::new(0),
            limit: u64::MAX,
        }
    }

    /// A fresh source issuing `1..=u64::MAX` (loom atomics are not `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            last: AtomicU64::new(0),
            limit: u64::MAX,
        }
    }

    /// A source whose next token is `last + 1` and whose final token is `limit`.
    /// Meant for exhaustion tests; `last >= limit` yields an already exhausted source.
    ///
    /// # Examples
    /// ```
    /// use ludus::identity::{IdentityExhausted, TokenSource};
    /// let s = TokenSource::starting_after(u64::MAX - 1, u64::MAX);
    /// assert_eq!(s.issue(), Ok(u64::MAX));
    /// assert_eq!(s.issue(), Err(IdentityExhausted));
    /// ```
    pub fn starting_after(last: u64, limit: u64) -> Self {
        Self {
            last: AtomicU64::new(last.min(limit)),
            limit,
        }
    }

    /// Issues the next token.
    ///
    /// # Errors
    /// [`IdentityExhausted`] once `limit` has been issued; the source stays exhausted.
    pub fn issue(&self) -> Result<OwnerToken, IdentityExhausted> {
        let limit = self.limit;
        self.last
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
                if last < limit {
                    Some(last + 1)
                } else {
                    None
                }
            })
            .map(|prev| prev + 1)
            .map_err(|_| IdentityExhausted)
    }

    /// The most recently issued token (0 if none). Diagnostic only: racy by nature.
    pub fn last_issued(&self) -> OwnerToken {
        self.last.load(Ordering::Relaxed)
    }
}

#[cfg(not(loom))]
impl Default for TokenSource {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(not(loom))]
static PROCESS_TOKENS: TokenSource = TokenSource::new();

/// Issues a token from the one process-wide source shared by every registry in this process.
///
/// # Errors
/// [`IdentityExhausted`] after `u64::MAX` tokens — never a wrap.
#[cfg(not(loom))]
pub fn issue_owner_token() -> Result<OwnerToken, IdentityExhausted> {
    PROCESS_TOKENS.issue()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn tokens_start_at_one_and_increase() {
        let s = TokenSource::new();
        assert_eq!(s.issue(), Ok(1));
        assert_eq!(s.issue(), Ok(2));
        assert_eq!(s.last_issued(), 2);
    }

    #[test]
    fn exhaustion_is_reported_not_wrapped_and_stays() {
        let s = TokenSource::starting_after(u64::MAX - 2, u64::MAX);
        assert_eq!(s.issue(), Ok(u64::MAX - 1));
        assert_eq!(s.issue(), Ok(u64::MAX));
        for _ in 0..3 {
            assert_eq!(s.issue(), Err(IdentityExhausted));
        }
        assert_eq!(s.last_issued(), u64::MAX);
    }

    #[test]
    fn small_limit_exhausts_early() {
        let s = TokenSource::starting_after(0, 2);
        assert_eq!(s.issue(), Ok(1));
        assert_eq!(s.issue(), Ok(2));
        assert_eq!(s.issue(), Err(IdentityExhausted));
        let dead = TokenSource::starting_after(9, 3);
        assert_eq!(dead.issue(), Err(IdentityExhausted));
    }

    #[test]
    fn process_source_is_nonzero_and_monotonic() {
        let a = issue_owner_token().unwrap();
        let b = issue_owner_token().unwrap();
        assert!(a != 0 && b > a);
    }

    #[test]
    fn threads_never_share_a_token() {
        // Miri interleaves threads at every step: fewer tokens say as much there.
        const PER: u64 = if cfg!(miri) { 200 } else { 1000 };
        let s = std::sync::Arc::new(TokenSource::new());
        let mut all: Vec<u64> = std::thread::scope(|scope| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    let s = &s;
                    scope.spawn(move || (0..PER).map(|_| s.issue().unwrap()).collect::<Vec<_>>())
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        all.sort_unstable();
        assert_eq!(all, (1..=4 * PER).collect::<Vec<_>>());
    }
}
