//! Entropy sources for minting durable ids.
//!
//! Production names [`OsEntropy`] (the OS CSPRNG through `getrandom`). Deterministic sources for
//! fixtures live in [`test_entropy`](super::test_entropy) and are never a default: nothing in the
//! crate picks a source for the caller except [`OsEntropy`].

/// No entropy could be obtained. Nothing was minted; there is no fallback.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EntropyError {
    /// The operating system's random source failed.
    #[error("entropy unavailable: OS random source failed: {0}")]
    Os(getrandom::Error),
    /// An injected source (platform adapter or test fixture) reported failure with its own code.
    #[error("entropy unavailable: injected source failed with code {code}")]
    Source {
        /// Source-defined failure code.
        code: u32,
    },
}

/// A provider of cryptographically random bytes.
///
/// Contract: `fill` either writes `dest.len()` random bytes and returns `Ok`, or returns `Err`;
/// on `Err` the content of `dest` is unspecified and callers must discard it. Implementations
/// never substitute clock values, addresses, counters or a non-cryptographic PRNG.
pub trait EntropySource {
    /// Fills `dest` entirely with random bytes.
    ///
    /// # Errors
    /// [`EntropyError`] when the source cannot deliver; `dest` must then be discarded.
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), EntropyError>;
}

impl<S: EntropySource + ?Sized> EntropySource for &mut S {
    #[inline]
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), EntropyError> {
        (**self).fill(dest)
    }
}

/// The operating system's CSPRNG (`getrandom::fill`): one system call per `fill`.
///
/// For many ids in a row, wrap it in a [`BatchedMinter`](super::BatchedMinter).
///
/// # Examples
/// ```
/// use ludus::identity::{mint_v4, OsEntropy};
/// let id = mint_v4(&mut OsEntropy).unwrap();
/// assert_eq!(id.get_version_num(), 4);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OsEntropy;

impl EntropySource for OsEntropy {
    #[inline]
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), EntropyError> {
        getrandom::fill(dest).map_err(EntropyError::Os)
    }
}
