//! Public-API checks of durable identity: text policy, typed ids, minting through every door.

use std::collections::HashSet;

use ludus::identity::test_entropy::{FailingEntropy, SeqEntropy};
use ludus::identity::{
    mint_unique, mint_v4, AssetId, BatchedMinter, EntropyError, InstanceId, MintError, OsEntropy,
    PersistentObjectKey, SourceObjectId, UuidError, UuidPolicy, MINT_ATTEMPTS,
};
use proptest::prelude::*;
use uuid::Uuid;

fn sample_size() -> usize {
    if cfg!(miri) {
        64
    } else {
        4096
    }
}

fn assert_v4_distinct(ids: impl IntoIterator<Item = Uuid>) {
    let mut seen = HashSet::new();
    for id in ids {
        assert_eq!(id.get_version_num(), 4, "{id}");
        assert_eq!(id.get_variant(), uuid::Variant::RFC4122, "{id}");
        assert!(seen.insert(id), "duplicate {id}");
    }
    assert_eq!(seen.len(), sample_size());
}

#[test]
fn os_single_and_batched_samples_are_v4_and_distinct() {
    assert_v4_distinct((0..sample_size()).map(|_| mint_v4(&mut OsEntropy).unwrap()));
    let mut minter = BatchedMinter::new();
    assert_v4_distinct((0..sample_size()).map(|_| minter.mint().unwrap()));
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
fn batched_minter_serves_mint_unique() {
    let mut minter = BatchedMinter::with_source(SeqEntropy::new(1));
    let taken: HashSet<Uuid> = (0..3).map(|_| minter.mint().unwrap()).collect();
    let mut replay = BatchedMinter::with_source(SeqEntropy::new(1));
    let mut calls = 0;
    let id = mint_unique(&mut replay, |c| {
        calls += 1;
        taken.contains(c)
    })
    .unwrap();
    assert_eq!(calls, MINT_ATTEMPTS);
    assert!(!taken.contains(&id));
}

#[test]
fn entropy_failure_and_conflict_are_distinct() {
    let mut dead = FailingEntropy::new(OsEntropy, 1);
    assert!(matches!(
        mint_unique(&mut dead, |_| false),
        Err(MintError::Entropy(_))
    ));
    assert!(matches!(
        mint_unique(&mut OsEntropy, |_| true),
        Err(MintError::Conflict(_))
    ));
    let mut minter = BatchedMinter::with_source(FailingEntropy::new(OsEntropy, 1));
    assert_eq!(minter.mint(), Err(EntropyError::Source { code: 1 }));
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

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 256 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

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
