//! [`PersistentId`]: the stable id of a persistent entity, in one of two namespaces.
//!
//! - `spawned:<uuid>`: a runtime spawn, minted once at ingress as a version-4 UUID. The
//!   namespace is reserved: authored content can never claim it.
//! - `authored:<64 hex digits>`: an authored object. For legacy world format 1 it is the SHA-256
//!   of (world id, place id, object id) under [`PersistentId::authored_legacy`]'s encoding; a
//!   display name, row order or release label is not part of it.
//!
//! Text is parsed strictly — exact namespace, exact length, lowercase only, version 4 and the
//! RFC variant for spawned ids, nonnil — with one [`PersistentIdError`] per rejection.

use core::fmt;
use core::str::FromStr;

use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::uuid_codec::{format_uuid, UUID_TEXT_LEN};
use super::{mint_v4, EntropyError, EntropySource};

/// Prefix of the spawned namespace.
pub const SPAWNED_PREFIX: &str = "spawned:";
/// Prefix of the authored namespace.
pub const AUTHORED_PREFIX: &str = "authored:";
/// Longest legacy id (world, place or object) of format-1 content.
pub const LEGACY_ID_MAX: usize = 64;

/// A stable entity id (module docs). Ordered by namespace (authored first), then bytes.
///
/// The variants are public, so a value built directly need not be canonical (a nil or
/// non-v4 `Spawned`, an all-zero `Authored`). The validating ways in are
/// [`spawned`](Self::spawned), `FromStr`, serde and [`from_key`](Self::from_key); the world
/// re-checks every id it takes at its boundaries (persistent spawn, transactions,
/// checkpoints) and refuses a non-canonical one.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PersistentId {
    /// An authored object: a 32-byte digest (or authored id); canonical when not all zero.
    Authored([u8; 32]),
    /// A runtime spawn: canonical when a nonnil version-4 UUID.
    Spawned(Uuid),
}

/// Why a text form or a legacy triple is not a [`PersistentId`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PersistentIdError {
    /// Neither `spawned:` nor `authored:` starts the text (namespaces are lowercase).
    #[error("unknown namespace: expected `spawned:` or `authored:`")]
    Namespace,
    /// The text after the namespace has the wrong length.
    #[error("{namespace} id must be {expected} bytes after the prefix, found {found}")]
    Length {
        /// The namespace.
        namespace: &'static str,
        /// Required length.
        expected: usize,
        /// Found length.
        found: usize,
    },
    /// A hyphen is missing or misplaced in a spawned UUID.
    #[error("separator expected at byte {index}")]
    Separator {
        /// Byte offset within the whole text.
        index: usize,
    },
    /// An uppercase hex digit (canonical ids are lowercase).
    #[error("uppercase digit at byte {index}: canonical ids are lowercase")]
    Uppercase {
        /// Byte offset within the whole text.
        index: usize,
    },
    /// Not a hex digit.
    #[error("hex digit expected at byte {index}")]
    NonHex {
        /// Byte offset within the whole text.
        index: usize,
    },
    /// A spawned UUID that is not version 4.
    #[error("spawned ids are version-4 UUIDs, found version {found}")]
    Version {
        /// The version nibble.
        found: u8,
    },
    /// A spawned UUID without the RFC 9562 variant.
    #[error("spawned ids carry the RFC 9562 variant, found nibble {found:#x}")]
    Variant {
        /// The variant nibble.
        found: u8,
    },
    /// The all-zero id.
    #[error("nil is not an identity")]
    Nil,
    /// A legacy id (world, place or object) breaks the rule: 1 to 64 ASCII letters, digits,
    /// `_ - . :`.
    #[error("legacy {field} id is not 1-64 of [A-Za-z0-9_.:-]")]
    LegacyId {
        /// Which of the three.
        field: &'static str,
    },
}

fn hex_value(b: u8, index: usize) -> Result<u8, PersistentIdError> {
    match b {
        b'0'..=b'9' => Ok(b - b'0'),
        b'a'..=b'f' => Ok(b - b'a' + 10),
        b'A'..=b'F' => Err(PersistentIdError::Uppercase { index }),
        _ => Err(PersistentIdError::NonHex { index }),
    }
}

/// Decodes `2 × out.len()` lowercase hex digits at `text` (`base` is its offset, for errors),
/// skipping hyphens at `hyphens` (offsets within `text`).
fn decode_hex(
    text: &[u8],
    base: usize,
    hyphens: &[usize],
    out: &mut [u8],
) -> Result<(), PersistentIdError> {
    let mut at = 0;
    for byte in out.iter_mut() {
        let mut v = 0u8;
        for _ in 0..2 {
            while hyphens.contains(&at) {
                if text[at] != b'-' {
                    return Err(PersistentIdError::Separator { index: base + at });
                }
                at += 1;
            }
            if text[at] == b'-' {
                return Err(PersistentIdError::Separator { index: base + at });
            }
            v = v << 4 | hex_value(text[at], base + at)?;
            at += 1;
        }
        *byte = v;
    }
    Ok(())
}

/// Whether `id` follows the legacy-id rule.
pub fn is_legacy_id(id: &str) -> bool {
    is_legacy_id_bytes(id.as_bytes())
}

/// [`is_legacy_id`] of bytes: such bytes are ASCII, so they are UTF-8.
#[inline]
pub(crate) fn is_legacy_id_bytes(id: &[u8]) -> bool {
    (1..=LEGACY_ID_MAX).contains(&id.len())
        && id
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'))
}

impl PersistentId {
    /// Mints a spawned id from `source` (once, at trusted ingress).
    ///
    /// # Errors
    /// [`EntropyError`]: nothing is minted, nothing falls back.
    pub fn mint_spawned<S: EntropySource + ?Sized>(source: &mut S) -> Result<Self, EntropyError> {
        mint_v4(source).map(Self::Spawned)
    }

    /// A spawned id from a UUID, which must be a nonnil version-4 RFC UUID.
    ///
    /// # Errors
    /// [`PersistentIdError::Nil`], `Version`, `Variant`.
    pub fn spawned(uuid: Uuid) -> Result<Self, PersistentIdError> {
        if uuid.is_nil() {
            return Err(PersistentIdError::Nil);
        }
        let b = uuid.as_bytes();
        if b[6] >> 4 != 4 {
            return Err(PersistentIdError::Version { found: b[6] >> 4 });
        }
        if b[8] >> 6 != 0b10 {
            return Err(PersistentIdError::Variant { found: b[8] >> 4 });
        }
        Ok(Self::Spawned(uuid))
    }

    /// The authored id of a legacy format-1 object: SHA-256 over the three ids, each encoded
    /// as its byte length (one byte, 1 to 64) followed by its bytes, after the domain tag
    /// `ludus.authored.v1\0`. The length prefixes make the encoding unambiguous: `("ab", "c")`
    /// and `("a", "bc")` differ.
    ///
    /// # Errors
    /// [`PersistentIdError::LegacyId`] when an id breaks the legacy-id rule.
    pub fn authored_legacy(
        world: &str,
        place: &str,
        object: &str,
    ) -> Result<Self, PersistentIdError> {
        let mut h = Sha256::new();
        h.update(b"ludus.authored.v1\0");
        for (field, id) in [("world", world), ("place", place), ("object", object)] {
            if !is_legacy_id(id) {
                return Err(PersistentIdError::LegacyId { field });
            }
            h.update([id.len() as u8]);
            h.update(id.as_bytes());
        }
        Ok(Self::Authored(h.finalize().into()))
    }

    /// Whether the id is in the spawned namespace.
    pub fn is_spawned(&self) -> bool {
        matches!(self, Self::Spawned(_))
    }

    /// The 32-byte index key: a spawned UUID followed by 16 zero bytes, or the authored digest.
    /// (With the namespace tag it is the whole id: see [`PersistentId::from_key`].)
    pub fn key_bytes(&self) -> [u8; 32] {
        match self {
            Self::Authored(d) => *d,
            Self::Spawned(u) => {
                let mut k = [0u8; 32];
                k[..16].copy_from_slice(u.as_bytes());
                k
            }
        }
    }

    /// The namespace tag: 1 authored, 2 spawned.
    pub fn namespace_tag(&self) -> u32 {
        match self {
            Self::Authored(_) => 1,
            Self::Spawned(_) => 2,
        }
    }

    /// The id of a namespace tag and index key, validated as the text form would be.
    ///
    /// # Errors
    /// [`PersistentIdError::Namespace`] for an unknown tag or a spawned key with nonzero
    /// padding; as [`spawned`](Self::spawned); `Nil` for an all-zero authored digest.
    pub fn from_key(tag: u32, key: [u8; 32]) -> Result<Self, PersistentIdError> {
        match tag {
            1 if key == [0; 32] => Err(PersistentIdError::Nil),
            1 => Ok(Self::Authored(key)),
            2 if key[16..] == [0; 16] => {
                let mut u = [0u8; 16];
                u.copy_from_slice(&key[..16]);
                Self::spawned(Uuid::from_bytes(u))
            }
            _ => Err(PersistentIdError::Namespace),
        }
    }
}

impl FromStr for PersistentId {
    type Err = PersistentIdError;

    fn from_str(text: &str) -> Result<Self, PersistentIdError> {
        let b = text.as_bytes();
        if let Some(rest) = b.strip_prefix(SPAWNED_PREFIX.as_bytes()) {
            if rest.len() != UUID_TEXT_LEN {
                return Err(PersistentIdError::Length {
                    namespace: "spawned",
                    expected: UUID_TEXT_LEN,
                    found: rest.len(),
                });
            }
            let mut u = [0u8; 16];
            decode_hex(rest, SPAWNED_PREFIX.len(), &[8, 13, 18, 23], &mut u)?;
            Self::spawned(Uuid::from_bytes(u))
        } else if let Some(rest) = b.strip_prefix(AUTHORED_PREFIX.as_bytes()) {
            if rest.len() != 64 {
                return Err(PersistentIdError::Length {
                    namespace: "authored",
                    expected: 64,
                    found: rest.len(),
                });
            }
            let mut d = [0u8; 32];
            decode_hex(rest, AUTHORED_PREFIX.len(), &[], &mut d)?;
            if d == [0; 32] {
                return Err(PersistentIdError::Nil);
            }
            Ok(Self::Authored(d))
        } else {
            Err(PersistentIdError::Namespace)
        }
    }
}

impl fmt::Display for PersistentId {
    /// The canonical text form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Spawned(u) => {
                let mut buf = [0u8; UUID_TEXT_LEN];
                write!(f, "{SPAWNED_PREFIX}{}", format_uuid(u, &mut buf))
            }
            Self::Authored(d) => {
                f.write_str(AUTHORED_PREFIX)?;
                d.iter().try_for_each(|b| write!(f, "{b:02x}"))
            }
        }
    }
}

impl fmt::Debug for PersistentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PersistentId({self})")
    }
}

impl serde::Serialize for PersistentId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for PersistentId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::test_entropy::{FailingEntropy, SeqEntropy};

    const SPAWNED: &str = "spawned:67e55044-10b1-426f-9247-bb680e5fe0c8";

    #[test]
    fn text_round_trips_and_rejects_each_way() {
        let id: PersistentId = SPAWNED.parse().unwrap();
        assert_eq!(id.to_string(), SPAWNED);
        let authored = PersistentId::authored_legacy("w", "p", "o").unwrap();
        assert_eq!(authored.to_string().parse::<PersistentId>(), Ok(authored));
        let cases = [
            (
                "Spawned:67e55044-10b1-426f-9247-bb680e5fe0c8",
                PersistentIdError::Namespace,
            ),
            (
                "67e55044-10b1-426f-9247-bb680e5fe0c8",
                PersistentIdError::Namespace,
            ),
            (
                "spawned:67e55044-10b1-426f-9247-bb680e5fe0c",
                PersistentIdError::Length {
                    namespace: "spawned",
                    expected: 36,
                    found: 35,
                },
            ),
            (
                "spawned:67E55044-10b1-426f-9247-bb680e5fe0c8",
                PersistentIdError::Uppercase { index: 10 },
            ),
            (
                "spawned:67e55044_10b1-426f-9247-bb680e5fe0c8",
                PersistentIdError::Separator { index: 16 },
            ),
            (
                "spawned:67e55044-10b1-426f-9247-bb680e5fe0cg",
                PersistentIdError::NonHex { index: 43 },
            ),
            (
                "spawned:67e55044-10b1-126f-9247-bb680e5fe0c8",
                PersistentIdError::Version { found: 1 },
            ),
            (
                "spawned:67e55044-10b1-426f-c247-bb680e5fe0c8",
                PersistentIdError::Variant { found: 0xc },
            ),
            (
                "spawned:00000000-0000-0000-0000-000000000000",
                PersistentIdError::Nil,
            ),
        ];
        for (text, err) in cases {
            assert_eq!(text.parse::<PersistentId>(), Err(err), "{text}");
        }
        let nil = format!("authored:{}", "0".repeat(64));
        assert_eq!(nil.parse::<PersistentId>(), Err(PersistentIdError::Nil));
    }

    #[test]
    fn legacy_encoding_is_unambiguous_and_checked() {
        let a = PersistentId::authored_legacy("w", "ab", "c").unwrap();
        let b = PersistentId::authored_legacy("w", "a", "bc").unwrap();
        assert_ne!(a, b);
        assert_eq!(a, PersistentId::authored_legacy("w", "ab", "c").unwrap());
        assert_eq!(
            PersistentId::authored_legacy("w", "", "c"),
            Err(PersistentIdError::LegacyId { field: "place" })
        );
        assert_eq!(
            PersistentId::authored_legacy("w w", "p", "c"),
            Err(PersistentIdError::LegacyId { field: "world" })
        );
        let long = "x".repeat(65);
        assert!(PersistentId::authored_legacy("w", "p", &long).is_err());
    }

    #[test]
    fn minting_and_keys() {
        let id = PersistentId::mint_spawned(&mut SeqEntropy::new(1)).unwrap();
        assert!(id.is_spawned());
        assert_eq!(
            PersistentId::from_key(id.namespace_tag(), id.key_bytes()),
            Ok(id)
        );
        assert!(
            PersistentId::mint_spawned(&mut FailingEntropy::new(SeqEntropy::new(1), 1)).is_err()
        );
        let mut bad = id.key_bytes();
        bad[20] = 1;
        assert_eq!(
            PersistentId::from_key(2, bad),
            Err(PersistentIdError::Namespace)
        );
    }
}
