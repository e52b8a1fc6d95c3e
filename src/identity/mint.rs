//! Minting version-4 UUIDs from an injected [`EntropySource`], alone or against an index.

use uuid::Uuid;

use super::entropy::{EntropyError, EntropySource};

/// How many candidates [`mint_unique`] tries before reporting [`IdentityConflict`].
pub const MINT_ATTEMPTS: usize = 4;

/// Every candidate minted for an index was already taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("identity conflict: {MINT_ATTEMPTS} freshly minted candidates were all taken")]
pub struct IdentityConflict;

/// Why [`mint_unique`] produced no id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MintError {
    /// The entropy source failed; nothing was minted.
    #[error(transparent)]
    Entropy(#[from] EntropyError),
    /// Every candidate collided with the index.
    #[error(transparent)]
    Conflict(#[from] IdentityConflict),
}

/// Mints one version-4 UUID (RFC 9562 variant) from 16 bytes of `source`.
///
/// # Examples
/// ```
/// use ludus::identity::{mint_v4, OsEntropy};
/// let id = mint_v4(&mut OsEntropy).unwrap();
/// assert_eq!((id.get_version_num(), id.get_variant()), (4, uuid::Variant::RFC4122));
/// ```
///
/// # Errors
/// [`EntropyError`] if `source` fails: no id is returned and no fallback is used.
#[inline]
pub fn mint_v4<S: EntropySource + ?Sized>(source: &mut S) -> Result<Uuid, EntropyError> {
    let mut bytes = [0u8; 16];
    source.fill(&mut bytes)?;
    Ok(uuid::Builder::from_random_bytes(bytes).into_uuid())
}

/// Mints a version-4 UUID that `is_taken` reports free, trying at most [`MINT_ATTEMPTS`]
/// candidates. `is_taken` must compare full 16-byte identity (after any hash match).
///
/// # Examples
/// ```
/// use ludus::identity::{mint_unique, OsEntropy};
/// let taken = [uuid::Uuid::from_u128(1)];
/// let id = mint_unique(&mut OsEntropy, |c| taken.contains(c)).unwrap();
/// assert!(!taken.contains(&id));
/// ```
///
/// # Errors
/// [`MintError::Entropy`] as soon as `source` fails; [`MintError::Conflict`] when all
/// [`MINT_ATTEMPTS`] candidates were taken.
pub fn mint_unique<S, F>(source: &mut S, mut is_taken: F) -> Result<Uuid, MintError>
where
    S: EntropySource + ?Sized,
    F: FnMut(&Uuid) -> bool,
{
    for _ in 0..MINT_ATTEMPTS {
        let candidate = mint_v4(source)?;
        if !is_taken(&candidate) {
            return Ok(candidate);
        }
    }
    Err(MintError::Conflict(IdentityConflict))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::test_entropy::{FailingEntropy, FixedEntropy, SeqEntropy};
    use crate::identity::OsEntropy;
    use std::collections::HashSet;

    #[test]
    fn mint_sets_version_and_variant_over_any_bytes() {
        for pattern in [[0u8; 16], [0xff; 16]] {
            let id = mint_v4(&mut FixedEntropy::new(pattern)).unwrap();
            assert_eq!(id.get_version_num(), 4);
            assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
            assert!(!id.is_nil());
        }
    }

    #[test]
    fn os_sample_is_v4_rfc_and_distinct() {
        let n = if cfg!(miri) { 64 } else { 4096 };
        let mut seen = HashSet::new();
        for _ in 0..n {
            let id = mint_v4(&mut OsEntropy).unwrap();
            assert_eq!(id.get_version_num(), 4);
            assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
            assert!(seen.insert(id), "duplicate {id}");
        }
    }

    #[test]
    fn failure_leaves_previous_value_untouched() {
        let mut source = FailingEntropy::new(SeqEntropy::new(1), 2);
        let mut slot = mint_v4(&mut source).unwrap();
        let before = slot;
        let r = mint_v4(&mut source).map(|id| slot = id);
        assert_eq!(r, Err(EntropyError::Source { code: 1 }));
        assert_eq!(slot, before);
    }

    #[test]
    fn conflict_after_exactly_four_candidates() {
        let mut source = SeqEntropy::new(3);
        let mut asked = Vec::new();
        let r = mint_unique(&mut source, |c| {
            asked.push(*c);
            true
        });
        assert_eq!(r, Err(MintError::Conflict(IdentityConflict)));
        assert_eq!(asked.len(), MINT_ATTEMPTS);
        assert_eq!(source.fills_made(), MINT_ATTEMPTS as u64);
        assert_eq!(asked.iter().collect::<HashSet<_>>().len(), MINT_ATTEMPTS);
    }

    #[test]
    fn fourth_candidate_free_succeeds() {
        let mut source = SeqEntropy::new(3);
        let mut calls = 0;
        let id = mint_unique(&mut source, |_| {
            calls += 1;
            calls < MINT_ATTEMPTS
        })
        .unwrap();
        assert_eq!(calls, MINT_ATTEMPTS);
        let mut replay = SeqEntropy::new(3);
        let fourth = (0..MINT_ATTEMPTS)
            .map(|_| mint_v4(&mut replay).unwrap())
            .last();
        assert_eq!(Some(id), fourth);
    }

    #[test]
    fn entropy_failure_is_not_a_conflict() {
        let mut source = FailingEntropy::new(SeqEntropy::new(3), 3);
        let mut calls = 0;
        let r = mint_unique(&mut source, |_| {
            calls += 1;
            true
        });
        assert_eq!(r, Err(MintError::Entropy(EntropyError::Source { code: 1 })));
        assert_eq!((calls, source.calls()), (2, 3));
    }

    #[test]
    fn constant_source_conflicts_with_its_own_output() {
        let mut source = FixedEntropy::new([0x42; 16]);
        let first = mint_v4(&mut source).unwrap();
        let r = mint_unique(&mut source, |c| *c == first);
        assert_eq!(r, Err(MintError::Conflict(IdentityConflict)));
    }
}
