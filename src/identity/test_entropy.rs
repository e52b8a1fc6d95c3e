//! Deterministic entropy sources for tests and fixtures only.
//!
//! These sources are predictable by construction. They implement no `Default`, and no
//! production API of the crate names them; inject them explicitly where a test needs
//! reproducible ids or a failure at a chosen point.

use super::entropy::{EntropyError, EntropySource};

/// Every `fill` writes bytes derived from a call counter and the byte offset, so two fills never
/// return the same bytes and a test can tell exactly which fill produced an id.
///
/// # Examples
/// ```
/// use ludus::identity::{mint_v4, test_entropy::SeqEntropy};
/// let (mut a, mut b) = (SeqEntropy::new(7), SeqEntropy::new(7));
/// let first = mint_v4(&mut a).unwrap();
/// assert_eq!(mint_v4(&mut b).unwrap(), first); // same seed, same sequence
/// assert_ne!(mint_v4(&mut a).unwrap(), first); // every fill differs
/// assert_eq!(a.fills_made(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct SeqEntropy {
    seed: u64,
    fills: u64,
}

impl SeqEntropy {
    /// A sequence identified by `seed`.
    pub const fn new(seed: u64) -> Self {
        Self { seed, fills: 0 }
    }

    /// Number of successful `fill` calls so far.
    pub const fn fills_made(&self) -> u64 {
        self.fills
    }
}

/// SplitMix64 finaliser: a bijection, so distinct `(seed, fill, word)` inputs give distinct words.
const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl EntropySource for SeqEntropy {
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), EntropyError> {
        self.fills += 1;
        let base = mix(self.seed ^ mix(self.fills));
        for (word, chunk) in dest.chunks_mut(8).enumerate() {
            let bytes = mix(base.wrapping_add(word as u64)).to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        Ok(())
    }
}

/// Repeats one byte pattern forever (e.g. to force a collision).
#[derive(Debug, Clone)]
pub struct FixedEntropy {
    pattern: [u8; 16],
}

impl FixedEntropy {
    /// A source whose every 16-byte window is `pattern`.
    pub const fn new(pattern: [u8; 16]) -> Self {
        Self { pattern }
    }
}

impl EntropySource for FixedEntropy {
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), EntropyError> {
        for (i, b) in dest.iter_mut().enumerate() {
            *b = self.pattern[i % 16];
        }
        Ok(())
    }
}

/// Wraps a source and fails its `fail_on`-th call (1-based) and every call after it, after
/// scribbling `0xEE` over `dest` to model a source that fails half way.
#[derive(Debug, Clone)]
pub struct FailingEntropy<S> {
    inner: S,
    fail_on: u64,
    calls: u64,
}

impl<S: EntropySource> FailingEntropy<S> {
    /// Fails from call number `fail_on` on (1 fails immediately).
    pub const fn new(inner: S, fail_on: u64) -> Self {
        Self {
            inner,
            fail_on,
            calls: 0,
        }
    }

    /// Number of `fill` calls made, failed ones included.
    pub const fn calls(&self) -> u64 {
        self.calls
    }
}

impl<S: EntropySource> EntropySource for FailingEntropy<S> {
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), EntropyError> {
        self.calls += 1;
        if self.calls >= self.fail_on {
            let half = dest.len() / 2;
            dest[..half].fill(0xEE);
            return Err(EntropyError::Source { code: 1 });
        }
        self.inner.fill(dest)
    }
}
