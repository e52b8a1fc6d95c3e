//! [`HexBytes`]: a component value's bytes, held inline when short, serialized as hex text.

use core::fmt;
use core::ops::{Deref, DerefMut};

use serde::{Deserialize, Serialize};

/// Longest value held inline (no heap block): a value of up to this many bytes costs a
/// prepared command no allocation of its own.
pub const INLINE_VALUE_BYTES: usize = 30;

/// Bytes, serialized as lowercase hex text.
///
/// Up to [`INLINE_VALUE_BYTES`] are held inline, longer values on the heap; which one holds
/// them is not observable (equality, order and hashing compare the bytes). Build one with
/// `From<Vec<u8>>` or `From<&[u8]>`; read and write the bytes through `Deref<Target = [u8]>`.
#[derive(Clone)]
pub struct HexBytes(Repr);

/// Inline when `len ≤ INLINE_VALUE_BYTES` (the only form [`HexBytes`] builds for such
/// lengths), else boxed.
#[derive(Clone)]
enum Repr {
    Inline {
        len: u8,
        buf: [u8; INLINE_VALUE_BYTES],
    },
    Heap(Box<[u8]>),
}

impl HexBytes {
    /// The bytes.
    #[inline(always)]
    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, buf } => &buf[..usize::from(*len)],
            Repr::Heap(b) => b,
        }
    }

    /// The bytes, writable (their length is fixed).
    #[inline(always)]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        match &mut self.0 {
            Repr::Inline { len, buf } => &mut buf[..usize::from(*len)],
            Repr::Heap(b) => b,
        }
    }
}

impl Default for HexBytes {
    fn default() -> Self {
        Self::from(&[][..])
    }
}

impl From<&[u8]> for HexBytes {
    fn from(bytes: &[u8]) -> Self {
        let mut buf = [0; INLINE_VALUE_BYTES];
        match buf.get_mut(..bytes.len()) {
            Some(head) => {
                head.copy_from_slice(bytes);
                // `bytes.len() ≤ INLINE_VALUE_BYTES < 256`.
                Self(Repr::Inline {
                    len: bytes.len() as u8,
                    buf,
                })
            }
            None => Self(Repr::Heap(bytes.into())),
        }
    }
}

impl From<Vec<u8>> for HexBytes {
    fn from(bytes: Vec<u8>) -> Self {
        if bytes.len() <= INLINE_VALUE_BYTES {
            Self::from(&bytes[..])
        } else {
            Self(Repr::Heap(bytes.into_boxed_slice()))
        }
    }
}

impl Deref for HexBytes {
    type Target = [u8];
    #[inline(always)]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl DerefMut for HexBytes {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
}

impl PartialEq for HexBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for HexBytes {}

impl PartialOrd for HexBytes {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for HexBytes {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl core::hash::Hash for HexBytes {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl fmt::Debug for HexBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl Serialize for HexBytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{self:?}"))
    }
}

impl<'de> Deserialize<'de> for HexBytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        let b = text.as_bytes();
        if b.len() % 2 != 0 {
            return Err(serde::de::Error::custom("hex text of odd length"));
        }
        let digit = |c: u8| match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            _ => Err(serde::de::Error::custom("lowercase hex digit expected")),
        };
        let byte = |p: &[u8]| Ok(digit(p[0])? << 4 | digit(p[1])?);
        let len = b.len() / 2;
        if len > INLINE_VALUE_BYTES {
            return b
                .chunks(2)
                .map(byte)
                .collect::<Result<Vec<u8>, D::Error>>()
                .map(Self::from);
        }
        // Short: decoded in place, no heap block.
        let mut buf = [0; INLINE_VALUE_BYTES];
        for (out, p) in buf.iter_mut().zip(b.chunks(2)) {
            *out = byte(p)?;
        }
        // `len ≤ INLINE_VALUE_BYTES < 256`.
        Ok(Self(Repr::Inline {
            len: len as u8,
            buf,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;
    use std::hash::{Hash, Hasher};

    fn hash(b: &HexBytes) -> u64 {
        let mut h = DefaultHasher::new();
        b.hash(&mut h);
        h.finish()
    }

    /// Every length on both sides of the inline limit reads back what was given, by either
    /// constructor, and compares, orders and hashes as its bytes do.
    #[test]
    fn every_length_reads_back_and_compares_as_its_bytes() {
        for n in 0..=2 * INLINE_VALUE_BYTES + 1 {
            let v: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37)).collect();
            let (a, b) = (HexBytes::from(v.clone()), HexBytes::from(&v[..]));
            assert_eq!((&a[..], &b[..]), (&v[..], &v[..]));
            assert_eq!(a, b);
            assert_eq!(hash(&a), hash(&b));
            assert!(matches!(a.0, Repr::Inline { .. }) == (n <= INLINE_VALUE_BYTES));
            let mut longer = v.clone();
            longer.push(0);
            assert!(a < HexBytes::from(longer));
        }
    }

    /// Values of different lengths, one held inline and one on the heap, compare, order and
    /// hash as their bytes do (a derived order would put every inline form first).
    #[test]
    fn values_in_different_forms_compare_as_their_bytes() {
        let n = INLINE_VALUE_BYTES;
        let cases: [(Vec<u8>, Vec<u8>); 5] = [
            (vec![0xff], vec![0; n + 1]),
            (vec![0; n], vec![0; n + 1]),
            (vec![1; n], vec![0; n + 1]),
            (vec![0xff; n], vec![0xff; n + 1]),
            (vec![], vec![0; 2 * n]),
        ];
        for (x, y) in cases {
            let (a, b) = (HexBytes::from(x.clone()), HexBytes::from(&y[..]));
            assert!(matches!(a.0, Repr::Inline { .. }) && matches!(b.0, Repr::Heap(_)));
            assert_eq!(a.cmp(&b), x.cmp(&y), "{x:?} {y:?}");
            assert_eq!(b.cmp(&a), y.cmp(&x));
            assert_eq!(a == b, x == y);
            let plain = |v: &[u8]| {
                let mut h = DefaultHasher::new();
                v.hash(&mut h);
                h.finish()
            };
            assert_eq!((hash(&a), hash(&b)), (plain(&x), plain(&y)));
        }
    }

    #[test]
    fn writes_through_deref_mut_keep_the_length() {
        for n in [3, INLINE_VALUE_BYTES + 3] {
            let mut a = HexBytes::from(vec![0u8; n]);
            a[2] = 9;
            assert_eq!(a.len(), n);
            assert_eq!(a.to_vec()[2], 9);
        }
    }

    #[test]
    fn hex_text_round_trips_and_refuses_what_is_not_lowercase_hex() {
        let a = HexBytes::from(vec![0x0a, 0xff, 0x10]);
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(text, "\"0aff10\"");
        assert_eq!(serde_json::from_str::<HexBytes>(&text).unwrap(), a);
        let long = HexBytes::from((0..=INLINE_VALUE_BYTES as u8 + 9).collect::<Vec<u8>>());
        let text = serde_json::to_string(&long).unwrap();
        assert_eq!(text.len(), 2 + 2 * long.len());
        assert_eq!(serde_json::from_str::<HexBytes>(&text).unwrap(), long);
        // Parsed values take the form built ones do.
        for n in [0, INLINE_VALUE_BYTES, INLINE_VALUE_BYTES + 1] {
            let v = HexBytes::from(vec![0xab; n]);
            let back: HexBytes = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
            assert_eq!(back, v);
            assert_eq!(
                matches!(back.0, Repr::Inline { .. }),
                n <= INLINE_VALUE_BYTES
            );
        }
        for bad in ["\"0AFF\"", "\"abc\"", "\"zz\"", "\"0g\""] {
            assert!(serde_json::from_str::<HexBytes>(bad).is_err(), "{bad}");
        }
    }
}
