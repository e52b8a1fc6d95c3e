//! Typed durable ids: 16 canonical UUID bytes each, never nil, never mixed up.
//!
//! Each wrapper is `repr(transparent)` over `[u8; 16]` in RFC 9562 byte order, so it is `Pod`
//! with alignment 1 and packs without padding. The validating ways in are
//! [`AssetId::from_uuid`], [`FromStr`](core::str::FromStr), [`AssetId::mint`],
//! [`AssetId::mint_unique`] and serde; the ways out are [`AssetId::as_uuid`],
//! [`AssetId::as_bytes`] and `Display`. There is no `From` between kinds.
//!
//! `Pod` means bytemuck can conjure a value from any 16 bytes without validation (a zeroed one is
//! nil); such a value is not an identity, and every boundary that accepts bytes re-validates with
//! [`AssetId::from_uuid`].

use core::fmt;
use core::hash::{Hash, Hasher};
use core::marker::PhantomData;
use core::str::FromStr;

use bytemuck::{Pod, Zeroable};
use uuid::Uuid;

use super::entropy::{EntropyError, EntropySource};
use super::mint::{mint_unique, mint_v4, MintError};
use super::uuid_codec::{format_uuid, parse_uuid, UuidError, UuidPolicy, UUID_TEXT_LEN};

/// The 16 canonical bytes every kind wraps: ordered and compared as bytes, hashed as one
/// `u128`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Pod, Zeroable)]
#[repr(transparent)]
struct Canonical([u8; 16]);

impl Hash for Canonical {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u128(u128::from_ne_bytes(self.0));
    }
}

/// A durable id kind: `Pod` over its [`Canonical`] bytes, so the code every kind shares converts
/// with bytemuck.
trait Kind: Pod {}

/// Wraps a UUID that passed the [`UuidPolicy::DurableV4`] check.
#[inline]
fn wrap<T: Kind>(uuid: Uuid) -> T {
    bytemuck::cast(uuid.into_bytes())
}

/// A fresh id of kind `T` from `source`.
#[inline]
fn mint_kind<T: Kind, S: EntropySource + ?Sized>(source: &mut S) -> Result<T, EntropyError> {
    mint_v4(source).map(wrap)
}

/// An id of kind `T` that `is_taken` reports free (see [`mint_unique`]).
fn mint_unique_kind<T, S, F>(source: &mut S, mut is_taken: F) -> Result<T, MintError>
where
    T: Kind,
    S: EntropySource + ?Sized,
    F: FnMut(&T) -> bool,
{
    mint_unique(source, |uuid| is_taken(&wrap(*uuid))).map(wrap)
}

/// Parses canonical text under [`UuidPolicy::DurableV4`].
#[inline]
fn parse_kind<T: Kind>(text: &str) -> Result<T, UuidError> {
    parse_uuid(text.as_bytes(), UuidPolicy::DurableV4).map(wrap)
}

/// Hands `id`'s lowercase canonical text to `f`.
fn with_text<T: Kind, R>(id: &T, f: impl FnOnce(&str) -> R) -> R {
    let uuid = Uuid::from_bytes(bytemuck::cast(*id));
    let mut buf = [0u8; UUID_TEXT_LEN];
    f(format_uuid(&uuid, &mut buf))
}

/// Reads an id of kind `T` from its canonical text.
fn deserialize_kind<'de, T: Kind, D: serde::Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    struct Text<T>(PhantomData<T>);
    impl<T: Kind> serde::de::Visitor<'_> for Text<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a canonical version-4 UUID string (hex digits in either case)")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<T, E> {
            parse_kind(v).map_err(E::custom)
        }
    }
    d.deserialize_str(Text(PhantomData))
}

macro_rules! durable_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Pod, Zeroable)]
        #[repr(transparent)]
        pub struct $name(Canonical);

        impl Kind for $name {}

        impl $name {
            /// Wraps `uuid` after checking it under [`UuidPolicy::DurableV4`] (rejects nil).
            ///
            /// # Errors
            /// [`UuidError::Nil`], [`UuidError::Version`] or [`UuidError::Variant`].
            #[inline]
            pub const fn from_uuid(uuid: Uuid) -> Result<Self, UuidError> {
                match UuidPolicy::DurableV4.check(uuid) {
                    Ok(uuid) => Ok(Self(Canonical(uuid.into_bytes()))),
                    Err(e) => Err(e),
                }
            }

            /// The UUID value, for serialization boundaries.
            #[inline]
            pub const fn as_uuid(&self) -> Uuid {
                Uuid::from_bytes(self.0 .0)
            }

            /// The 16 canonical bytes.
            #[inline]
            pub const fn as_bytes(&self) -> &[u8; 16] {
                &self.0 .0
            }

            /// Mints a fresh id from `source`.
            ///
            /// # Errors
            /// [`EntropyError`] if the source fails; nothing is minted.
            #[inline]
            pub fn mint<S: EntropySource + ?Sized>(source: &mut S) -> Result<Self, EntropyError> {
                mint_kind(source)
            }

            /// Mints an id that `is_taken` reports free, trying at most
            /// [`MINT_ATTEMPTS`](super::MINT_ATTEMPTS) candidates (see [`mint_unique`]).
            ///
            /// # Errors
            /// [`MintError::Entropy`] if the source fails, [`MintError::Conflict`] if every
            /// candidate was taken.
            pub fn mint_unique<S, F>(source: &mut S, is_taken: F) -> Result<Self, MintError>
            where
                S: EntropySource + ?Sized,
                F: FnMut(&Self) -> bool,
            {
                mint_unique_kind(source, is_taken)
            }
        }

        impl fmt::Display for $name {
            /// Lowercase canonical text.
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                with_text(self, |text| f.pad(text))
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self)
            }
        }

        impl FromStr for $name {
            type Err = UuidError;

            /// Parses canonical text under [`UuidPolicy::DurableV4`].
            #[inline]
            fn from_str(text: &str) -> Result<Self, UuidError> {
                parse_kind(text)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<Ser: serde::Serializer>(&self, s: Ser) -> Result<Ser::Ok, Ser::Error> {
                with_text(self, |text| s.serialize_str(text))
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                deserialize_kind(d)
            }
        }
    };
}

durable_id! {
    /// Durable identity of a logical asset (document, texture, prefab...).
    ///
    /// # Examples
    /// ```
    /// use ludus::identity::AssetId;
    /// let id: AssetId = "67e55044-10b1-426f-9247-bb680e5fe0c8".parse().unwrap();
    /// assert_eq!(id.to_string(), "67e55044-10b1-426f-9247-bb680e5fe0c8");
    /// assert!("00000000-0000-0000-0000-000000000000".parse::<AssetId>().is_err());
    /// ```
    ///
    /// Kinds never convert into one another implicitly:
    /// ```compile_fail,E0308
    /// use ludus::identity::{AssetId, SourceObjectId};
    /// let asset: AssetId = "67e55044-10b1-426f-9247-bb680e5fe0c8".parse().unwrap();
    /// let object: SourceObjectId = asset;
    /// ```
    AssetId
}

durable_id! {
    /// Durable identity of an authored source object within its document.
    ///
    /// ```compile_fail,E0277
    /// use ludus::identity::{InstanceId, SourceObjectId};
    /// let object: SourceObjectId = "67e55044-10b1-426f-9247-bb680e5fe0c8".parse().unwrap();
    /// let instance = InstanceId::from(object);
    /// ```
    SourceObjectId
}

durable_id! {
    /// Durable identity of one placement (prefab instance or level placement/save scope).
    ///
    /// ```compile_fail,E0308
    /// use ludus::identity::{InstanceId, PersistentObjectKey, SourceObjectId};
    /// let i: InstanceId = "67e55044-10b1-426f-9247-bb680e5fe0c8".parse().unwrap();
    /// let o: SourceObjectId = "77e55044-10b1-426f-9247-bb680e5fe0c8".parse().unwrap();
    /// let swapped = PersistentObjectKey::new(o, i);
    /// ```
    InstanceId
}

/// The complete durable name of a placed object: which placement, which source object in it.
///
/// Ordered by instance, then object; 32 bytes, alignment 1.
///
/// # Examples
/// ```
/// use ludus::identity::{InstanceId, PersistentObjectKey, SourceObjectId};
/// let i: InstanceId = "67e55044-10b1-426f-9247-bb680e5fe0c8".parse().unwrap();
/// let o: SourceObjectId = "77e55044-10b1-426f-9247-bb680e5fe0c8".parse().unwrap();
/// let key = PersistentObjectKey::new(i, o);
/// assert_eq!((key.instance, key.object), (i, o));
/// ```
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    bytemuck::Pod,
    bytemuck::Zeroable,
    serde::Serialize,
    serde::Deserialize,
)]
#[repr(C)]
pub struct PersistentObjectKey {
    /// The placement scope.
    pub instance: InstanceId,
    /// The source object within that placement.
    pub object: SourceObjectId,
}

impl PersistentObjectKey {
    /// The key of `object` inside `instance`.
    #[inline]
    pub const fn new(instance: InstanceId, object: SourceObjectId) -> Self {
        Self { instance, object }
    }
}

impl fmt::Display for PersistentObjectKey {
    /// `instance/object`, both canonical.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.instance, self.object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::test_entropy::{FailingEntropy, SeqEntropy};
    use std::collections::HashSet;

    const TEXT: &str = "67e55044-10b1-426f-9247-bb680e5fe0c8";

    #[test]
    fn layout_is_canonical_bytes() {
        assert_eq!(core::mem::size_of::<AssetId>(), 16);
        assert_eq!(core::mem::align_of::<AssetId>(), 1);
        assert_eq!(core::mem::size_of::<PersistentObjectKey>(), 32);
        let id: AssetId = TEXT.parse().unwrap();
        assert_eq!(
            bytemuck::bytes_of(&id),
            Uuid::parse_str(TEXT).unwrap().as_bytes()
        );
        let key = PersistentObjectKey::new(TEXT.parse().unwrap(), TEXT.parse().unwrap());
        assert_eq!(&bytemuck::bytes_of(&key)[16..], id.as_bytes());
    }

    #[test]
    fn text_round_trip_and_validation() {
        let id: InstanceId = TEXT.to_uppercase().parse().unwrap();
        assert_eq!(id.to_string(), TEXT);
        assert_eq!(format!("{id:?}"), format!("InstanceId({TEXT})"));
        assert_eq!(format!("{id:>40}"), format!("    {TEXT}"));
        let v1 = "67e55044-10b1-126f-9247-bb680e5fe0c8";
        assert_eq!(
            v1.parse::<InstanceId>(),
            Err(UuidError::Version { found: 1 })
        );
        assert_eq!(AssetId::from_uuid(Uuid::nil()), Err(UuidError::Nil));
        let max = Uuid::max();
        assert_eq!(
            AssetId::from_uuid(max),
            Err(UuidError::Version { found: 15 })
        );
    }

    #[test]
    fn uuid_conversions_are_explicit_and_lossless() {
        let u = Uuid::parse_str(TEXT).unwrap();
        let a = AssetId::from_uuid(u).unwrap();
        assert_eq!(a.as_uuid(), u);
        let o = SourceObjectId::from_uuid(a.as_uuid()).unwrap();
        assert_eq!(o.as_bytes(), a.as_bytes());
    }

    #[test]
    fn order_and_hash_follow_bytes() {
        let mut s = SeqEntropy::new(11);
        let mut ids: Vec<SourceObjectId> = (0..32)
            .map(|_| SourceObjectId::mint(&mut s).unwrap())
            .collect();
        let set: HashSet<_> = ids.iter().copied().collect();
        assert_eq!(set.len(), 32);
        ids.sort();
        let mut uuids: Vec<Uuid> = ids.iter().map(SourceObjectId::as_uuid).collect();
        uuids.sort();
        assert_eq!(
            ids.iter().map(SourceObjectId::as_uuid).collect::<Vec<_>>(),
            uuids
        );
    }

    #[test]
    fn mint_failure_leaves_slot_unchanged() {
        let mut source = FailingEntropy::new(SeqEntropy::new(1), 2);
        let mut slot = AssetId::mint(&mut source).unwrap();
        let before = slot;
        assert!(AssetId::mint(&mut source).map(|id| slot = id).is_err());
        assert_eq!(slot, before);
    }

    #[test]
    fn typed_mint_unique_checks_typed_index() {
        let mut source = SeqEntropy::new(21);
        let taken: Vec<SourceObjectId> = (0..2)
            .map(|_| SourceObjectId::mint(&mut source).unwrap())
            .collect();
        let mut replay = SeqEntropy::new(21);
        let mut asked = 0;
        let fresh = SourceObjectId::mint_unique(&mut replay, |c| {
            asked += 1;
            taken.contains(c)
        })
        .unwrap();
        assert_eq!((asked, taken.contains(&fresh)), (3, false));
        let all_taken = SourceObjectId::mint_unique(&mut replay, |_| true);
        assert_eq!(
            all_taken,
            Err(MintError::Conflict(crate::identity::IdentityConflict))
        );
    }

    #[test]
    fn serde_uses_validated_text() {
        let i: InstanceId = TEXT.parse().unwrap();
        let o: SourceObjectId = "77e55044-10b1-426f-9247-bb680e5fe0c8".parse().unwrap();
        let key = PersistentObjectKey::new(i, o);
        let json = serde_json::to_string(&key).unwrap();
        assert_eq!(
            json,
            format!(r#"{{"instance":"{TEXT}","object":"77e55044-10b1-426f-9247-bb680e5fe0c8"}}"#)
        );
        assert_eq!(
            serde_json::from_str::<PersistentObjectKey>(&json).unwrap(),
            key
        );
        let bad = [
            r#""00000000-0000-0000-0000-000000000000""#,
            r#""{67e55044-10b1-426f-9247-bb680e5fe0c8}""#,
            r#""67e55044-10b1-126f-9247-bb680e5fe0c8""#,
            "42",
        ];
        for b in bad {
            assert!(serde_json::from_str::<AssetId>(b).is_err(), "{b}");
        }
    }
}
