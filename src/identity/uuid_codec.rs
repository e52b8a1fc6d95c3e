//! Canonical UUID text: strict parsing under an explicit version policy, and allocation-free
//! lowercase formatting into a caller buffer.
//!
//! The only accepted text is the 36-byte `8-4-4-4-12` form with hyphens at bytes 8, 13, 18, 23
//! and case-insensitive hex digits everywhere else. Braces, URNs, the 32-digit simple form,
//! whitespace and the nil UUID are rejected. The hot path validates all 32 digits branch-free (the
//! check vectorizes), packs digit values eight at a time in a `u64`, and only a failed parse pays
//! for locating the offending byte. Formatting likewise spreads four bytes into eight digits per
//! `u64` step.

use uuid::Uuid;

/// Length of canonical UUID text: `8-4-4-4-12`.
pub const UUID_TEXT_LEN: usize = 36;

/// Byte offsets of the four hyphens in canonical text.
const HYPHENS: [usize; 4] = [8, 13, 18, 23];

/// Which UUID versions and variants a schema accepts. Nil is rejected under every policy.
///
/// | policy        | versions | variant nibble (byte 8 high nibble) |
/// |---------------|----------|-------------------------------------|
/// | `DurableV4`   | 4        | `8`, `9`, `a`, `b` (RFC 9562)       |
/// | `LevelFile`   | 1 ..= 8  | `8`, `9`, `a`, `b` (RFC 9562)       |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UuidPolicy {
    /// Durable Ludus identity: version 4 with the RFC 9562 variant.
    DurableV4,
    /// Level-file identity: any RFC 9562 version 1 to 8 with the RFC variant.
    LevelFile,
}

/// Why a UUID text or value was rejected. Byte offsets index the input bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UuidError {
    /// The input is not exactly 36 bytes long (braced, URN, simple, padded or truncated text).
    #[error("uuid text must be exactly 36 bytes, found {found}")]
    Length {
        /// Byte length of the input.
        found: usize,
    },
    /// A hyphen is missing at 8, 13, 18 or 23, or appears where a digit belongs.
    #[error("uuid separator misplaced or wrong at byte {index} (found byte {found:#04x})")]
    Separator {
        /// Byte offset of the offending byte.
        index: usize,
        /// The offending byte.
        found: u8,
    },
    /// A digit position holds something other than `0-9`, `a-f`, `A-F` (whitespace included).
    #[error("uuid digit expected at byte {index} (found byte {found:#04x})")]
    NonHex {
        /// Byte offset of the offending byte.
        index: usize,
        /// The offending byte.
        found: u8,
    },
    /// The all-zero UUID: an optional-reference sentinel, never an identity.
    #[error("nil uuid is not an identity")]
    Nil,
    /// The version nibble is not accepted by the policy.
    #[error("uuid version {found} not accepted by the policy")]
    Version {
        /// The version nibble (0..=15).
        found: u8,
    },
    /// The variant nibble is not `8`, `9`, `a` or `b`.
    #[error("uuid variant nibble {found:#x} not accepted (expected 8, 9, a or b)")]
    Variant {
        /// The high nibble of byte 8 (0..=15).
        found: u8,
    },
}

impl UuidPolicy {
    /// Checks a decoded UUID against this policy: nil first, then version, then variant.
    ///
    /// # Examples
    /// ```
    /// use ludus::identity::{UuidError, UuidPolicy};
    /// let v7 = uuid::Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0001);
    /// assert_eq!(UuidPolicy::LevelFile.check(v7), Ok(v7));
    /// assert_eq!(UuidPolicy::DurableV4.check(v7), Err(UuidError::Version { found: 7 }));
    /// ```
    ///
    /// # Errors
    /// [`UuidError::Nil`], [`UuidError::Version`] or [`UuidError::Variant`].
    #[inline]
    pub const fn check(self, uuid: Uuid) -> Result<Uuid, UuidError> {
        let bytes = uuid.as_bytes();
        let version = bytes[6] >> 4;
        let version_ok = match self {
            UuidPolicy::DurableV4 => version == 4,
            UuidPolicy::LevelFile => version >= 1 && version <= 8,
        };
        if !version_ok {
            // Nil has version 0, which no policy accepts: testing for it here keeps it off the
            // accepting path.
            return Err(if uuid.is_nil() {
                UuidError::Nil
            } else {
                UuidError::Version { found: version }
            });
        }
        let variant = bytes[8] >> 4;
        if variant >> 2 != 0b10 {
            return Err(UuidError::Variant { found: variant });
        }
        Ok(uuid)
    }

    /// Parses canonical text and checks it against this policy.
    ///
    /// # Examples
    /// ```
    /// use ludus::identity::UuidPolicy;
    /// let id = UuidPolicy::DurableV4.parse("67E55044-10b1-426f-9247-bb680e5fe0c8").unwrap();
    /// assert_eq!(id.to_string(), "67e55044-10b1-426f-9247-bb680e5fe0c8");
    /// ```
    ///
    /// # Errors
    /// Any [`UuidError`]; see [`parse_uuid`].
    #[inline]
    pub fn parse(self, text: &str) -> Result<Uuid, UuidError> {
        parse_uuid(text.as_bytes(), self)
    }
}

/// Parses canonical 36-byte UUID text (case-insensitive hex) and checks `policy`.
///
/// Shape errors are reported at the first offending byte; value errors (nil, version, variant)
/// only for well-formed text.
///
/// # Examples
/// ```
/// use ludus::identity::{parse_uuid, UuidError, UuidPolicy};
/// let ok = parse_uuid(b"67e55044-10b1-426f-9247-bb680e5fe0c8", UuidPolicy::DurableV4);
/// assert!(ok.is_ok());
/// let braced = parse_uuid(b"{67e55044-10b1-426f-9247-bb680e5fe0c8}", UuidPolicy::DurableV4);
/// assert_eq!(braced, Err(UuidError::Length { found: 38 }));
/// ```
///
/// # Errors
/// [`UuidError::Length`], [`UuidError::Separator`], [`UuidError::NonHex`], then
/// [`UuidError::Nil`], [`UuidError::Version`], [`UuidError::Variant`].
#[inline]
pub fn parse_uuid(text: &[u8], policy: UuidPolicy) -> Result<Uuid, UuidError> {
    let Ok(text) = <&[u8; UUID_TEXT_LEN]>::try_from(text) else {
        return Err(UuidError::Length { found: text.len() });
    };
    match decode_canonical(text) {
        Some(bytes) => policy.check(Uuid::from_bytes(bytes)),
        None => Err(locate_shape_error(text)),
    }
}

/// Decodes canonical text, or `None` if any hyphen or digit is wrong. Branch-free until the end:
/// the digit check vectorizes and the values are combined eight digits at a time in a `u64`.
#[inline(always)]
fn decode_canonical(text: &[u8; UUID_TEXT_LEN]) -> Option<[u8; 16]> {
    let hyphens_ok =
        (text[8] == b'-') & (text[13] == b'-') & (text[18] == b'-') & (text[23] == b'-');
    let mut digits = [0u8; 32];
    digits[0..8].copy_from_slice(&text[0..8]);
    digits[8..12].copy_from_slice(&text[9..13]);
    digits[12..16].copy_from_slice(&text[14..18]);
    digits[16..20].copy_from_slice(&text[19..23]);
    digits[20..32].copy_from_slice(&text[24..36]);

    let mut bad = 0u8;
    for &c in &digits {
        let not_digit = c.wrapping_sub(b'0') >= 10;
        let not_alpha = (c | 0x20).wrapping_sub(b'a') >= 6;
        bad |= u8::from(not_digit & not_alpha);
    }
    let mut bytes = [0u8; 16];
    for (out, eight) in bytes.chunks_exact_mut(4).zip(digits.chunks_exact(8)) {
        let mut eight_digits = [0u8; 8];
        eight_digits.copy_from_slice(eight);
        out.copy_from_slice(&pack_nibbles(u64::from_le_bytes(eight_digits)).to_le_bytes());
    }
    if hyphens_ok & (bad == 0) {
        Some(bytes)
    } else {
        None
    }
}

/// Eight hex digits (little-endian bytes of `x`, all valid) to their four bytes, first digit
/// high. Letters have bit 6 set and low nibble 1..=6, so value = low nibble + 9 * bit 6.
#[inline(always)]
fn pack_nibbles(x: u64) -> u32 {
    const LOW: u64 = 0x0f0f_0f0f_0f0f_0f0f;
    const ONES: u64 = 0x0101_0101_0101_0101;
    const LANE: u64 = 0x00ff_00ff_00ff_00ff;
    let n = (x & LOW) + ((x >> 6) & ONES) * 9;
    // Each u16 lane j: low byte = digit 2j << 4 | digit 2j + 1.
    let pairs = ((n & LANE) << 4) | ((n >> 8) & LANE);
    let quads = (pairs | (pairs >> 8)) & 0x0000_ffff_0000_ffff;
    (quads | (quads >> 16)) as u32
}

/// The first shape error of text that [`decode_canonical`] rejected (cold path).
#[cold]
fn locate_shape_error(text: &[u8; UUID_TEXT_LEN]) -> UuidError {
    for (index, &found) in text.iter().enumerate() {
        if HYPHENS.contains(&index) {
            if found != b'-' {
                return UuidError::Separator { index, found };
            }
        } else if found == b'-' {
            return UuidError::Separator { index, found };
        } else if !found.is_ascii_hexdigit() {
            return UuidError::NonHex { index, found };
        }
    }
    // Unreachable for text `decode_canonical` rejected; report the first hyphen slot regardless.
    UuidError::Separator {
        index: HYPHENS[0],
        found: text[HYPHENS[0]],
    }
}

/// Writes `uuid` as lowercase canonical text into `buf` and returns it; allocates nothing.
///
/// # Examples
/// ```
/// use ludus::identity::format_uuid;
/// let id = uuid::Uuid::from_u128(0x67e55044_10b1_426f_9247_bb680e5fe0c8);
/// let mut buf = [0u8; 36];
/// assert_eq!(format_uuid(&id, &mut buf), "67e55044-10b1-426f-9247-bb680e5fe0c8");
/// ```
#[inline]
pub fn format_uuid<'b>(uuid: &Uuid, buf: &'b mut [u8; UUID_TEXT_LEN]) -> &'b str {
    encode_lower(uuid.as_bytes(), buf);
    ascii_str(buf)
}

/// Writes `uuid` as lowercase canonical text followed by a NUL byte (for C callers) and returns
/// the 36-byte text without the NUL.
///
/// # Examples
/// ```
/// use ludus::identity::format_uuid_nul;
/// let mut buf = [0xffu8; 37];
/// let text = format_uuid_nul(&uuid::Uuid::max(), &mut buf).len();
/// assert_eq!((text, buf[36]), (36, 0));
/// ```
#[inline]
pub fn format_uuid_nul<'b>(uuid: &Uuid, buf: &'b mut [u8; UUID_TEXT_LEN + 1]) -> &'b str {
    let [text @ .., nul] = buf;
    *nul = 0;
    encode_lower(uuid.as_bytes(), text);
    ascii_str(text)
}

/// Lowercase hex of each byte at its canonical offset, hyphens at their offsets; four bytes
/// become eight digits at a time in a `u64`.
#[inline(always)]
fn encode_lower(bytes: &[u8; 16], out: &mut [u8; UUID_TEXT_LEN]) {
    let mut hex = [[0u8; 8]; 4];
    for (digits, four) in hex.iter_mut().zip(bytes.chunks_exact(4)) {
        let mut word = [0u8; 4];
        word.copy_from_slice(four);
        *digits = spread_hex(u32::from_le_bytes(word)).to_le_bytes();
    }
    out[0..8].copy_from_slice(&hex[0]);
    out[9..13].copy_from_slice(&hex[1][..4]);
    out[14..18].copy_from_slice(&hex[1][4..]);
    out[19..23].copy_from_slice(&hex[2][..4]);
    out[24..28].copy_from_slice(&hex[2][4..]);
    out[28..36].copy_from_slice(&hex[3]);
    for at in HYPHENS {
        out[at] = b'-';
    }
}

/// Four bytes (little-endian in `x`) to eight lowercase hex digits (little-endian in the
/// result), high nibble first.
#[inline(always)]
fn spread_hex(x: u32) -> u64 {
    const NIBBLES: u64 = 0x000f_000f_000f_000f;
    const ONES: u64 = 0x0101_0101_0101_0101;
    let x = u64::from(x);
    let lanes = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
    let lanes = (lanes | (lanes << 8)) & 0x00ff_00ff_00ff_00ff;
    let n = ((lanes >> 4) & NIBBLES) | ((lanes & NIBBLES) << 8);
    // Nibbles 10..=15 get bit 4 from `+ 6`; they move from ':'.. to 'a'.. by adding 39.
    let letters = ((n + 6 * ONES) >> 4) & ONES;
    n + 0x30 * ONES + letters * 39
}

/// Views formatter output as `&str`.
#[inline(always)]
fn ascii_str(buf: &[u8; UUID_TEXT_LEN]) -> &str {
    debug_assert!(buf.is_ascii(), "formatter wrote non-ASCII: {buf:?}");
    // SAFETY: `encode_lower` wrote every byte of `buf` as an ASCII hex digit or `-`, and ASCII
    // is valid UTF-8.
    unsafe { core::str::from_utf8_unchecked(buf) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const V4: &str = "67e55044-10b1-426f-9247-bb680e5fe0c8";

    fn parse(s: &str, p: UuidPolicy) -> Result<Uuid, UuidError> {
        parse_uuid(s.as_bytes(), p)
    }

    /// A UUID with the given version and variant nibbles over arbitrary bytes.
    fn with_fields(mut b: [u8; 16], version: u8, variant: u8) -> Uuid {
        b[6] = (b[6] & 0x0f) | (version << 4);
        b[8] = (b[8] & 0x0f) | (variant << 4);
        Uuid::from_bytes(b)
    }

    fn config() -> ProptestConfig {
        let mut c = ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 512 });
        c.failure_persistence = None;
        c
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn format_then_parse_round_trips(b in any::<[u8; 16]>(), version in 1u8..=8, variant in 8u8..=11) {
            let id = with_fields(b, version, variant);
            let mut buf = [0u8; 36];
            let text = format_uuid(&id, &mut buf);
            prop_assert_eq!(text, id.hyphenated().to_string());
            prop_assert_eq!(parse(text, UuidPolicy::LevelFile), Ok(id));
            let upper = text.to_ascii_uppercase();
            prop_assert_eq!(parse(&upper, UuidPolicy::LevelFile), Ok(id));
            let mixed: String = text.chars().enumerate()
                .map(|(i, c)| if i % 3 == 0 { c.to_ascii_uppercase() } else { c }).collect();
            prop_assert_eq!(parse(&mixed, UuidPolicy::LevelFile), Ok(id));
            let durable = parse(text, UuidPolicy::DurableV4);
            if version == 4 {
                prop_assert_eq!(durable, Ok(id));
            } else {
                prop_assert_eq!(durable, Err(UuidError::Version { found: version }));
            }
        }

        #[test]
        fn nul_variant_matches_plain(b in any::<[u8; 16]>()) {
            let id = Uuid::from_bytes(b);
            let (mut a, mut n) = ([0u8; 36], [0xffu8; 37]);
            let text = format_uuid(&id, &mut a).to_owned();
            prop_assert_eq!(format_uuid_nul(&id, &mut n), text.as_str());
            prop_assert_eq!(n[36], 0);
        }

        #[test]
        fn any_single_byte_corruption_is_rejected_or_still_hex(at in 0usize..36, byte in any::<u8>()) {
            let mut text = V4.as_bytes().to_vec();
            text[at] = byte;
            let r = parse_uuid(&text, UuidPolicy::LevelFile);
            let sep = HYPHENS.contains(&at);
            match (sep, byte) {
                (true, b'-') => prop_assert!(r.is_ok()),
                (true, _) => prop_assert_eq!(r, Err(UuidError::Separator { index: at, found: byte })),
                (false, b'-') => prop_assert_eq!(r, Err(UuidError::Separator { index: at, found: byte })),
                (false, b) if b.is_ascii_hexdigit() => {
                    let value_error = matches!(r, Err(UuidError::Version { .. } | UuidError::Variant { .. }));
                    prop_assert!(r.is_ok() || value_error, "{:?}", r);
                }
                (false, _) => prop_assert_eq!(r, Err(UuidError::NonHex { index: at, found: byte })),
            }
        }
    }

    #[test]
    fn canonical_lowercase_and_uppercase_parse_alike() {
        let a = parse(V4, UuidPolicy::DurableV4).unwrap();
        let b = parse(&V4.to_ascii_uppercase(), UuidPolicy::DurableV4).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.as_u128(), 0x67e55044_10b1_426f_9247_bb680e5fe0c8);
    }

    #[test]
    fn rejects_foreign_shapes_by_length() {
        let cases = [
            ("", 0),
            ("{67e55044-10b1-426f-9247-bb680e5fe0c8}", 38),
            ("urn:uuid:67e55044-10b1-426f-9247-bb680e5fe0c8", 45),
            ("67e5504410b1426f9247bb680e5fe0c8", 32),
            (" 67e55044-10b1-426f-9247-bb680e5fe0c8", 37),
            ("67e55044-10b1-426f-9247-bb680e5fe0c8\n", 37),
            ("67e55044-10b1-426f-9247-bb680e5fe0c", 35),
        ];
        for (text, found) in cases {
            assert_eq!(
                parse(text, UuidPolicy::LevelFile),
                Err(UuidError::Length { found }),
                "{text:?}"
            );
        }
    }

    #[test]
    fn rejects_whitespace_inside_fixed_length() {
        let lead = " 7e55044-10b1-426f-9247-bb680e5fe0c8";
        assert_eq!(
            parse(lead, UuidPolicy::LevelFile),
            Err(UuidError::NonHex {
                index: 0,
                found: b' '
            })
        );
        let trail = "67e55044-10b1-426f-9247-bb680e5fe0c\t";
        assert_eq!(
            parse(trail, UuidPolicy::LevelFile),
            Err(UuidError::NonHex {
                index: 35,
                found: b'\t'
            })
        );
        let inner = "67e55044-10b1-426f-92 7-bb680e5fe0c8";
        assert_eq!(
            parse(inner, UuidPolicy::LevelFile),
            Err(UuidError::NonHex {
                index: 21,
                found: b' '
            })
        );
    }

    #[test]
    fn rejects_wrong_separators_and_positions() {
        let underscore = "67e55044_10b1-426f-9247-bb680e5fe0c8";
        assert_eq!(
            parse(underscore, UuidPolicy::LevelFile),
            Err(UuidError::Separator {
                index: 8,
                found: b'_'
            })
        );
        let moved = "67e5504-410b1-426f-9247-bb680e5fe0c8";
        assert_eq!(
            parse(moved, UuidPolicy::LevelFile),
            Err(UuidError::Separator {
                index: 7,
                found: b'-'
            })
        );
        let digit_in_slot = "67e55044-10b1-426f-92470bb680e5fe0c8";
        assert_eq!(
            parse(digit_in_slot, UuidPolicy::LevelFile),
            Err(UuidError::Separator {
                index: 23,
                found: b'0'
            })
        );
    }

    #[test]
    fn rejects_non_hex_and_non_ascii() {
        let g = "67e55044-10b1-426f-9247-bb680e5fe0g8";
        assert_eq!(
            parse(g, UuidPolicy::LevelFile),
            Err(UuidError::NonHex {
                index: 34,
                found: b'g'
            })
        );
        let e_acute = "67e55044-10b1-426f-9247-bb680e5fe\u{e9}8";
        assert_eq!(e_acute.len(), 36);
        assert_eq!(
            parse(e_acute, UuidPolicy::LevelFile),
            Err(UuidError::NonHex {
                index: 33,
                found: 0xc3
            })
        );
    }

    #[test]
    fn nil_is_rejected_under_every_policy() {
        let nil = "00000000-0000-0000-0000-000000000000";
        for p in [UuidPolicy::DurableV4, UuidPolicy::LevelFile] {
            assert_eq!(parse(nil, p), Err(UuidError::Nil));
            assert_eq!(p.check(Uuid::nil()), Err(UuidError::Nil));
        }
    }

    #[test]
    fn version_and_variant_tables() {
        let b = [0x5a; 16];
        for version in 0u8..16 {
            for variant in 0u8..16 {
                let id = with_fields(b, version, variant);
                let level = UuidPolicy::LevelFile.check(id);
                let durable = UuidPolicy::DurableV4.check(id);
                let variant_ok = (8..=11).contains(&variant);
                let expect = |version_ok: bool| match (version_ok, variant_ok) {
                    (false, _) => Err(UuidError::Version { found: version }),
                    (true, false) => Err(UuidError::Variant { found: variant }),
                    (true, true) => Ok(id),
                };
                assert_eq!(
                    level,
                    expect((1..=8).contains(&version)),
                    "v{version} var{variant:x}"
                );
                assert_eq!(durable, expect(version == 4), "v{version} var{variant:x}");
                let mut buf = [0u8; 36];
                let text = format_uuid(&id, &mut buf);
                assert_eq!(parse(text, UuidPolicy::LevelFile), level);
            }
        }
    }

    #[test]
    fn max_uuid_is_rejected_by_version() {
        let max = "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF";
        assert_eq!(
            parse(max, UuidPolicy::LevelFile),
            Err(UuidError::Version { found: 15 })
        );
    }
}
