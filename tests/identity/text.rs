//! UUID and persistent-id text: `parse_uuid` against a reference of the documented contract
//! and against the `uuid` crate (random text over an adversarial alphabet, mutated valid text,
//! every byte value at every position, multi-byte UTF-8), the forms the `uuid` crate accepts and
//! ludus refuses, formatting (every byte value at every position, the NUL-terminated variant),
//! typed ids and their text policies, persistent-key order and text, and `PersistentId` text in
//! both namespaces, with the public variants that bypass validation.

use ludus::identity::{
    format_uuid, format_uuid_nul, parse_uuid, AssetId, BatchedMinter, InstanceId, PersistentId,
    PersistentIdError, PersistentObjectKey, SourceObjectId, UuidError, UuidPolicy, UUID_TEXT_LEN,
};
use proptest::prelude::*;
use uuid::Uuid;

/// The property tests' cases: 4 096, or `IDENTITY_CASES`; 2 under Miri.
fn cases() -> ProptestConfig {
    let n = std::env::var("IDENTITY_CASES")
        .ok()
        .and_then(|v| v.parse().ok());
    let mut c = ProptestConfig::with_cases(if cfg!(miri) { 2 } else { n.unwrap_or(4096) });
    c.failure_persistence = None;
    c
}

const HYPHENS: [usize; 4] = [8, 13, 18, 23];

/// Reference: what the documented contract says `parse_uuid` must return.
fn reference(text: &[u8], policy: UuidPolicy) -> Result<Uuid, UuidError> {
    if text.len() != UUID_TEXT_LEN {
        return Err(UuidError::Length { found: text.len() });
    }
    for (index, &found) in text.iter().enumerate() {
        if HYPHENS.contains(&index) {
            if found != b'-' {
                return Err(UuidError::Separator { index, found });
            }
        } else if found == b'-' {
            return Err(UuidError::Separator { index, found });
        } else if !found.is_ascii_hexdigit() {
            return Err(UuidError::NonHex { index, found });
        }
    }
    // Independent value decoding through the `uuid` crate.
    let u = Uuid::try_parse_ascii(text).expect("uuid crate rejects well-shaped text");
    if u.is_nil() {
        return Err(UuidError::Nil);
    }
    let version = (u.as_u128() >> 76) as u8 & 0xf;
    let ok_version = match policy {
        UuidPolicy::DurableV4 => version == 4,
        UuidPolicy::LevelFile => (1..=8).contains(&version),
    };
    if !ok_version {
        return Err(UuidError::Version { found: version });
    }
    if u.get_variant() != uuid::Variant::RFC4122 {
        return Err(UuidError::Variant {
            found: u.as_bytes()[8] >> 4,
        });
    }
    Ok(u)
}

/// Bytes likely to stress the parser: hex of both cases, hyphens, near-hex neighbours, braces,
/// whitespace, NUL, high bytes, and UTF-8 lead/continuation bytes.
fn nasty_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        4 => prop::sample::select(b"0123456789abcdefABCDEF".to_vec()),
        2 => Just(b'-'),
        2 => prop::sample::select(vec![
            b'/', b':', b'@', b'G', b'`', b'g', b'{', b'}', b' ', b'\t', b'\n', 0u8, 0x7f, 0x80,
            0xc3, 0xa9, 0xe2, 0xff, b'+', b'_', 0x10, 0x30 | 0x80, 0x41 | 0x80, 0x61 | 0x80,
            0x46 | 0x20, 0x66 | 0x80, 0x5f, 0x2f, 0x3a, 0x40, 0x47, 0x60, 0x67,
        ]),
        1 => any::<u8>(),
    ]
}

fn v4_text() -> impl Strategy<Value = String> {
    any::<[u8; 16]>().prop_map(|b| {
        uuid::Builder::from_random_bytes(b)
            .into_uuid()
            .hyphenated()
            .to_string()
    })
}

proptest! {
    #![proptest_config(cases())]

    /// Random 30..42-byte strings over an adversarial alphabet: ludus == reference, and for
    /// 36-byte input the accept decision and value agree with `uuid::Uuid::try_parse_ascii`
    /// followed by the policy check.
    #[test]
    #[cfg_attr(miri, ignore = "safe code only (Miri runs the formatting, handle and token tests)")]
    fn parse_matches_reference_and_uuid_crate(bytes in prop::collection::vec(nasty_byte(), 30..42)) {
        for policy in [UuidPolicy::DurableV4, UuidPolicy::LevelFile] {
            let got = parse_uuid(&bytes, policy);
            prop_assert_eq!(got, reference(&bytes, policy));
            if bytes.len() == UUID_TEXT_LEN {
                let theirs = Uuid::try_parse_ascii(&bytes).ok().map(|u| policy.check(u));
                match (got, theirs) {
                    (Ok(a), Some(Ok(b))) => prop_assert_eq!(a, b),
                    (Ok(_), other) => prop_assert!(false, "ludus accepted, uuid crate {:?}", other),
                    (Err(_), Some(Ok(u))) => prop_assert!(false, "ludus rejected {}", u),
                    (Err(e), _) => { let is_len = matches!(e, UuidError::Length { .. }); prop_assert!(!is_len) }
                }
            }
            if let Ok(s) = core::str::from_utf8(&bytes) {
                prop_assert_eq!(policy.parse(s), got);
            }
        }
    }

    /// Valid v4 text with 1..4 positions overwritten by adversarial bytes.
    #[test]
    #[cfg_attr(miri, ignore = "safe code only (Miri runs the formatting, handle and token tests)")]
    fn mutated_valid_text_matches_reference(
        text in v4_text(),
        edits in prop::collection::vec((0usize..36, nasty_byte()), 1..4),
        upper in any::<bool>(),
    ) {
        let mut bytes = if upper { text.to_ascii_uppercase() } else { text }.into_bytes();
        for (at, b) in edits {
            bytes[at] = b;
        }
        for policy in [UuidPolicy::DurableV4, UuidPolicy::LevelFile] {
            prop_assert_eq!(parse_uuid(&bytes, policy), reference(&bytes, policy));
        }
    }

    /// Any 16 bytes: format equals the uuid crate's lowercase hyphenated text, the NUL variant
    /// matches, and parsing the text back gives exactly what the policy check gives.
    #[test]
    fn format_matches_uuid_crate_and_round_trips(b in any::<[u8; 16]>()) {
        let id = Uuid::from_bytes(b);
        let mut buf = [0xaau8; 36];
        let text = format_uuid(&id, &mut buf).to_owned();
        prop_assert_eq!(&text, &id.hyphenated().to_string());
        let mut nul = [0xaau8; 37];
        prop_assert_eq!(format_uuid_nul(&id, &mut nul), text.as_str());
        prop_assert_eq!(nul[36], 0);
        for policy in [UuidPolicy::DurableV4, UuidPolicy::LevelFile] {
            prop_assert_eq!(parse_uuid(text.as_bytes(), policy), policy.check(id));
            prop_assert_eq!(parse_uuid(text.to_ascii_uppercase().as_bytes(), policy), policy.check(id));
        }
    }

    /// Typed ids: FromStr == DurableV4 parse; Display is lowercase canonical; serde text
    /// accepts exactly what FromStr accepts.
    #[test]
    #[cfg_attr(miri, ignore = "safe code only (Miri runs the formatting, handle and token tests)")]
    fn typed_ids_follow_durable_policy(bytes in prop::collection::vec(nasty_byte(), 36..=36), text in v4_text()) {
        for s in [String::from_utf8_lossy(&bytes).into_owned(), text.clone(), text.to_ascii_uppercase()] {
            let want = UuidPolicy::DurableV4.parse(&s);
            let got = s.parse::<AssetId>().map(|a| a.as_uuid());
            prop_assert_eq!(got, want);
            let json = serde_json::to_string(&s).unwrap();
            let de = serde_json::from_str::<InstanceId>(&json).map(|i| i.as_uuid()).ok();
            prop_assert_eq!(de, want.ok());
            if let Ok(u) = want {
                let a = AssetId::from_uuid(u).unwrap();
                prop_assert_eq!(a.to_string(), u.hyphenated().to_string());
            }
        }
    }

    /// `PersistentId` spawned text: accepted iff the lowercase-only DurableV4 parse accepts.
    #[test]
    #[cfg_attr(miri, ignore = "safe code only (Miri runs the formatting, handle and token tests)")]
    fn persistent_spawned_parse_matches_durable_lowercase(
        text in v4_text(),
        edits in prop::collection::vec((0usize..36, nasty_byte()), 0..3),
    ) {
        let mut bytes = text.into_bytes();
        for (at, b) in edits {
            bytes[at] = b;
        }
        let Ok(body) = String::from_utf8(bytes.clone()) else { return Ok(()) };
        let full = format!("spawned:{body}");
        let got = full.parse::<PersistentId>();
        let lower_only = !body.bytes().any(|c| c.is_ascii_uppercase() && c.is_ascii_hexdigit());
        let want = UuidPolicy::DurableV4.parse(&body).ok().filter(|_| lower_only);
        match (&got, want) {
            (Ok(PersistentId::Spawned(u)), Some(w)) => prop_assert_eq!(*u, w),
            (Err(_), None) => {}
            _ => prop_assert!(false, "{full}: got {got:?}, want {want:?}"),
        }
        if let Ok(id) = got {
            prop_assert_eq!(id.to_string(), full);
            prop_assert_eq!(PersistentId::from_key(id.namespace_tag(), id.key_bytes()), Ok(id));
        }
    }

    /// Authored ids round trip through text and key; any nonzero digest works.
    #[test]
    #[cfg_attr(miri, ignore = "safe code only (Miri runs the formatting, handle and token tests)")]
    fn persistent_authored_round_trip(d in any::<[u8; 32]>()) {
        prop_assume!(d != [0; 32]);
        let text: String = format!("authored:{}", d.iter().map(|b| format!("{b:02x}")).collect::<String>());
        let id = text.parse::<PersistentId>().unwrap();
        prop_assert_eq!(id, PersistentId::Authored(d));
        prop_assert_eq!(id.to_string(), text.clone());
        let up = format!("authored:{}", text["authored:".len()..].to_ascii_uppercase());
        if up != text {
            let is_upper = matches!(up.parse::<PersistentId>(), Err(PersistentIdError::Uppercase { .. }));
            prop_assert!(is_upper);
        }
    }
}

/// Every single byte value at every position of a valid v4 text, both policies.
#[test]
#[cfg_attr(
    miri,
    ignore = "safe code only (Miri runs the formatting, handle and token tests)"
)]
fn exhaustive_single_byte_substitution() {
    let base = b"67e55044-10b1-426f-9247-bb680e5fe0c8";
    let step = if cfg!(miri) { 101 } else { 1 };
    for at in 0..36 {
        for b in (0..=255u8).step_by(step) {
            let mut t = *base;
            t[at] = b;
            for policy in [UuidPolicy::DurableV4, UuidPolicy::LevelFile] {
                assert_eq!(parse_uuid(&t, policy), reference(&t, policy), "{at} {b:#x}");
            }
        }
    }
}

/// Multi-byte UTF-8 that keeps the byte length at 36, at every position.
#[test]
#[cfg_attr(
    miri,
    ignore = "safe code only (Miri runs the formatting, handle and token tests)"
)]
fn multibyte_utf8_at_every_position_is_nonhex_or_separator() {
    let base = "67e55044-10b1-426f-9247-bb680e5fe0c8";
    for ch in [
        '\u{e9}',
        '\u{2013}',
        '\u{ff10}',
        '\u{1f600}',
        '\u{0660}',
        '\u{ff21}',
    ] {
        let w = ch.len_utf8();
        for at in 0..=36 - w {
            let mut s = String::new();
            s.push_str(&base[..at]);
            s.push(ch);
            s.push_str(&base[at + w..]);
            assert_eq!(s.len(), 36);
            let r = UuidPolicy::LevelFile.parse(&s);
            let lead = s.as_bytes()[at];
            let want = if HYPHENS.contains(&at) {
                UuidError::Separator {
                    index: at,
                    found: lead,
                }
            } else {
                UuidError::NonHex {
                    index: at,
                    found: lead,
                }
            };
            assert_eq!(r, Err(want), "{s:?}");
            assert!(Uuid::parse_str(&s).is_err());
        }
    }
}

/// Forms the uuid crate accepts and ludus documents as rejected.
#[test]
#[cfg_attr(
    miri,
    ignore = "safe code only (Miri runs the formatting, handle and token tests)"
)]
fn documented_differences_from_uuid_crate() {
    let forms = [
        "{67e55044-10b1-426f-9247-bb680e5fe0c8}",
        "urn:uuid:67e55044-10b1-426f-9247-bb680e5fe0c8",
        "67e5504410b1426f9247bb680e5fe0c8",
    ];
    for f in forms {
        assert!(Uuid::parse_str(f).is_ok());
        assert_eq!(
            UuidPolicy::LevelFile.parse(f),
            Err(UuidError::Length { found: f.len() })
        );
    }
    let nil = "00000000-0000-0000-0000-000000000000";
    assert!(Uuid::parse_str(nil).is_ok());
    assert_eq!(UuidPolicy::LevelFile.parse(nil), Err(UuidError::Nil));
    let max = "ffffffff-ffff-ffff-ffff-ffffffffffff";
    assert!(Uuid::parse_str(max).is_ok());
    assert!(UuidPolicy::LevelFile.parse(max).is_err());
    // Variant nibbles: NCS (0-7), Microsoft (c, d), future (e, f) rejected; v0, v9..v15 too.
    for variant in ["0", "7", "c", "d", "e", "f"] {
        let t = format!("67e55044-10b1-426f-{variant}247-bb680e5fe0c8");
        assert!(matches!(
            UuidPolicy::DurableV4.parse(&t),
            Err(UuidError::Variant { .. })
        ));
    }
    for version in ["0", "9", "a", "f"] {
        let t = format!("67e55044-10b1-{version}26f-9247-bb680e5fe0c8");
        assert!(matches!(
            UuidPolicy::LevelFile.parse(&t),
            Err(UuidError::Version { .. })
        ));
    }
}

#[test]
fn typed_ids_round_trip_through_text() {
    let mut minter = BatchedMinter::new();
    for _ in 0..64 {
        let asset = AssetId::mint(&mut minter).unwrap();
        assert_eq!(asset.to_string().parse::<AssetId>(), Ok(asset));
        assert_eq!(AssetId::from_uuid(asset.as_uuid()), Ok(asset));
    }
}

#[test]
fn policies_disagree_only_on_version() {
    let v7 = "01890a5d-ac96-774b-bcce-b302099a8057";
    assert!(UuidPolicy::LevelFile.parse(v7).is_ok());
    assert_eq!(
        UuidPolicy::DurableV4.parse(v7),
        Err(UuidError::Version { found: 7 })
    );
    assert_eq!(
        v7.parse::<SourceObjectId>(),
        Err(UuidError::Version { found: 7 })
    );
}

/// `PersistentId::spawned` and `from_key` agree with the DurableV4 check on every
/// version/variant nibble.
#[test]
#[cfg_attr(
    miri,
    ignore = "safe code only (Miri runs the formatting, handle and token tests)"
)]
fn persistent_spawned_checks_match_policy() {
    for version in 0u8..16 {
        for variant in 0u8..16 {
            let mut b = [0x5au8; 16];
            b[6] = (b[6] & 0x0f) | version << 4;
            b[8] = (b[8] & 0x0f) | variant << 4;
            let u = Uuid::from_bytes(b);
            let ok = UuidPolicy::DurableV4.check(u).is_ok();
            assert_eq!(
                PersistentId::spawned(u).is_ok(),
                ok,
                "v{version} var{variant:x}"
            );
            let mut key = [0u8; 32];
            key[..16].copy_from_slice(&b);
            assert_eq!(PersistentId::from_key(2, key).is_ok(), ok);
        }
    }
    assert_eq!(
        PersistentId::spawned(Uuid::nil()),
        Err(PersistentIdError::Nil)
    );
    assert_eq!(
        PersistentId::from_key(1, [0; 32]),
        Err(PersistentIdError::Nil)
    );
    assert_eq!(
        PersistentId::from_key(0, [1; 32]),
        Err(PersistentIdError::Namespace)
    );
    assert_eq!(
        PersistentId::from_key(3, [1; 32]),
        Err(PersistentIdError::Namespace)
    );
}

#[test]
#[cfg_attr(
    miri,
    ignore = "safe code only (Miri runs the formatting, handle and token tests)"
)]
fn persistent_text_edges() {
    type Expect = fn(&PersistentIdError) -> bool;
    let cases: &[(&str, Expect)] = &[
        ("", |e| *e == PersistentIdError::Namespace),
        ("spawned:", |e| {
            matches!(e, PersistentIdError::Length { found: 0, .. })
        }),
        ("authored:", |e| {
            matches!(e, PersistentIdError::Length { found: 0, .. })
        }),
        ("SPAWNED:67e55044-10b1-426f-9247-bb680e5fe0c8", |e| {
            *e == PersistentIdError::Namespace
        }),
        (" spawned:67e55044-10b1-426f-9247-bb680e5fe0c8", |e| {
            *e == PersistentIdError::Namespace
        }),
        ("spawned:{67e55044-10b1-426f-9247-bb680e5fe0}", |e| {
            matches!(
                e,
                PersistentIdError::Separator { index: 8 } | PersistentIdError::NonHex { index: 8 }
            )
        }),
        ("spawned:67e55044-10b1-426f-9247-bb680e5fe0\u{e9}", |e| {
            matches!(e, PersistentIdError::NonHex { index: 42 })
        }),
        ("spawned:67e5504410b1-426f-9247-bb680e5fe0c8-", |e| {
            matches!(e, PersistentIdError::Separator { index: 16 })
        }),
    ];
    for (t, ok) in cases {
        let r = t.parse::<PersistentId>();
        assert!(r.as_ref().err().is_some_and(ok), "{t:?}: {r:?}");
    }
}

/// Formatting works byte-lane by byte-lane (no carries between lanes), so every byte value at
/// every position, compared with the uuid crate, covers all inputs of `spread_hex` and proves
/// the `from_utf8_unchecked` in `ascii_str` sound (its `debug_assert!` is no release guard).
#[test]
fn format_every_byte_value_at_every_position() {
    let step = if cfg!(miri) { 61 } else { 1 };
    for at in 0..16 {
        for v in (0..=255u8).step_by(step) {
            for fill in [0u8, 0xff] {
                let mut b = [fill; 16];
                b[at] = v;
                let id = Uuid::from_bytes(b);
                let mut buf = [0u8; 36];
                let s = format_uuid(&id, &mut buf);
                assert!(s.is_ascii());
                assert_eq!(s, id.hyphenated().to_string());
            }
        }
    }
}

/// `PersistentId`'s variants are public, so safe code builds a "spawned" id that is nil or not
/// version 4 without validation; its text does not parse back and serde cannot round-trip it.
/// (World boundaries re-check with `is_canonical`, so this is an unenforced type-level
/// invariant, not a world defect.)
#[test]
#[cfg_attr(
    miri,
    ignore = "safe code only (Miri runs the formatting, handle and token tests)"
)]
fn persistent_id_public_variants_bypass_validation() {
    let forged = PersistentId::Spawned(Uuid::nil());
    let text = forged.to_string();
    assert_eq!(text, "spawned:00000000-0000-0000-0000-000000000000");
    assert_eq!(text.parse::<PersistentId>(), Err(PersistentIdError::Nil));
    let json = serde_json::to_string(&forged).unwrap();
    assert!(serde_json::from_str::<PersistentId>(&json).is_err());
    let v1 = PersistentId::Spawned(Uuid::from_u128(0x67e55044_10b1_126f_9247_bb680e5fe0c8));
    assert!(v1.to_string().parse::<PersistentId>().is_err());
    assert!(PersistentId::from_key(v1.namespace_tag(), v1.key_bytes()).is_err());
    let zero = PersistentId::Authored([0; 32]);
    assert!(zero.to_string().parse::<PersistentId>().is_err());
}

proptest! {
    #![proptest_config(crate::support::proptest_config_unpersisted(256, 4))]

    #[test]
    fn keys_order_by_instance_then_object(a in any::<[u8; 16]>(), b in any::<[u8; 16]>()) {
        let i = InstanceId::from_uuid(uuid::Builder::from_random_bytes(a).into_uuid()).unwrap();
        let o = SourceObjectId::from_uuid(uuid::Builder::from_random_bytes(b).into_uuid()).unwrap();
        let (k1, k2) = (PersistentObjectKey::new(i, o), PersistentObjectKey::new(i, o));
        prop_assert_eq!(k1, k2);
        let text = k1.to_string();
        prop_assert_eq!(text, format!("{}/{}", i, o));
        let other = PersistentObjectKey::new(InstanceId::from_uuid(o.as_uuid()).unwrap(), o);
        prop_assert_eq!(k1.cmp(&other), i.as_uuid().cmp(&o.as_uuid()));
    }
}
