//! Persistent spawn, transactions, the identity invariant, checkpoints and replay: prepared
//! spawns minted once, failed transactions changing nothing, collisions and repeated creates
//! refused whole, an identity that cannot be set, changed or removed, strict namespaces,
//! restore by stable id, malformed and forged identities refused, an order-independent digest,
//! deferred transactions, the golden replay fixture (`tests/fixtures/`), crafted ids,
//! protection, disabled tables and swapped pools refused whole; and models of checkpoint bytes
//! and batched creates.

use std::borrow::Cow;
use std::collections::HashSet;

use ludus::durable::{
    digest_hex, Checkpoint, CheckpointError, ComponentValue, HexBytes, PrepareError, PreparedSpawn,
    ReplayEntry, ReplayError, ReplayLog, Transaction, TransactionQueue, TxCommand, TxError,
    TxRejection, IDENTITY_COMPONENT, REPLAY_FORMAT,
};
use ludus::identity::test_entropy::{FailingEntropy, FixedEntropy, SeqEntropy};
use ludus::identity::{PersistentId, PersistentIdError};
use ludus::prelude::*;

use crate::sim::{as_binding_key, durable_sim, hp_value, Hp, Pos, Sim};

fn sim(capacity: usize) -> Sim {
    durable_sim(capacity, 256)
}

fn spawn(seed: u64, pos: Pos, hp: u32) -> PreparedSpawn {
    PreparedSpawn::prepare::<Sim, _, _>((pos, Hp(hp)), &mut SeqEntropy::new(seed)).unwrap()
}

fn tx(commands: Vec<TxCommand>) -> Transaction {
    Transaction {
        label: "test".into(),
        commands,
    }
}

fn create(s: &PreparedSpawn) -> TxCommand {
    TxCommand::Create { spawn: s.clone() }
}

#[test]
fn prepared_spawns_mint_once_copy_their_values_and_serialise() {
    let mut entropy = SeqEntropy::new(1);
    let mut value = (Pos { x: 1.0, y: 2.0 }, Hp(10));
    let p = PreparedSpawn::prepare::<Sim, _, _>(value, &mut entropy).unwrap();
    assert_eq!(entropy.fills_made(), 1);
    assert!(p.id.is_spawned());
    assert!(p.id.to_string().starts_with("spawned:"));
    // Command-copy isolation: later changes to the caller's values do not leak in.
    value.1 .0 = 99;
    let json = serde_json::to_string(&p).unwrap();
    let back: PreparedSpawn = serde_json::from_str(&json).unwrap();
    assert_eq!(back, p);
    // A typed value borrows its name from the roster (no heap block); a parsed one owns an
    // equal name.
    assert!(p
        .components
        .iter()
        .all(|c| matches!(c.component, Cow::Borrowed(_))));
    assert!(back
        .components
        .iter()
        .all(|c| matches!(c.component, Cow::Owned(_))));
    let mut w = sim(4);
    w.transact(&tx(vec![create(&back)])).unwrap();
    let e = w.entity_of(&p.id).unwrap();
    assert_eq!(w.get::<Hp>(e), Some(&Hp(10)));
    assert_eq!(
        value.1,
        Hp(99),
        "the caller's copy changed, the command did not"
    );
    assert_eq!(w.stable_id(e), Some(p.id));
    // Entropy failure: nothing minted, no fallback.
    let mut failing = FailingEntropy::new(SeqEntropy::new(1), 1);
    assert!(matches!(
        PreparedSpawn::prepare::<Sim, _, _>((Hp(1),), &mut failing),
        Err(PrepareError::Entropy(_))
    ));
    // A type outside the roster is refused, and nothing is minted: the same entropy
    // then mints what a fresh source would.
    let mut entropy = SeqEntropy::new(3);
    assert!(matches!(
        PreparedSpawn::prepare::<Sim, _, _>((Hp(1), 7u16), &mut entropy),
        Err(PrepareError::UnknownComponent(_))
    ));
    assert_eq!(
        PreparedSpawn::prepare::<Sim, _, _>((Hp(1),), &mut entropy)
            .unwrap()
            .id,
        PreparedSpawn::prepare::<Sim, _, _>((Hp(1),), &mut SeqEntropy::new(3))
            .unwrap()
            .id
    );
    // An explicit identity override is refused.
    let forged = vec![ComponentValue {
        component: IDENTITY_COMPONENT.into(),
        bytes: HexBytes::from(vec![0; 36]),
        refs: Vec::new(),
    }];
    assert_eq!(
        PreparedSpawn::prepare_values::<Sim, _>(forged, &mut SeqEntropy::new(2)),
        Err(PrepareError::IdentityOverride)
    );
    // Unknown members of a recorded command are refused.
    let extra = json.replacen("{", "{\"extra\":1,", 1);
    assert!(serde_json::from_str::<PreparedSpawn>(&extra).is_err());
}

#[test]
fn a_sample_of_4096_spawns_has_no_duplicate() {
    let n = if cfg!(miri) { 64 } else { 4096 };
    let mut entropy = ludus::identity::OsEntropy;
    let mut seen = HashSet::new();
    let mut w = sim(n);
    let mut batch = Vec::new();
    for _ in 0..n {
        let p = PreparedSpawn::prepare::<Sim, _, _>((Hp(1),), &mut entropy).unwrap();
        assert!(seen.insert(p.id));
        batch.push(create(&p));
    }
    assert_eq!(w.transact(&tx(batch)).unwrap().created, n);
    assert_eq!(w.registry.len(), n);
    w.check_identity_invariant().unwrap();
}

#[test]
fn failed_transactions_change_nothing_and_retry_without_minting() {
    let mut w = sim(3);
    let a = spawn(1, Pos { x: 0.0, y: 0.0 }, 5);
    w.transact(&tx(vec![create(&a)])).unwrap();
    let before = w.checkpoint_digest().unwrap();
    let b = spawn(2, Pos { x: 1.0, y: 1.0 }, 6);
    let c = spawn(3, Pos { x: 2.0, y: 2.0 }, 7);
    // A bad command at the end: nothing applied.
    let bad_end = tx(vec![
        create(&b),
        TxCommand::Update {
            id: a.id,
            components: vec![hp_value(50)],
        },
        TxCommand::Delete { id: c.id },
    ]);
    assert_eq!(
        w.transact(&bad_end),
        Err(TxError::Command {
            index: 2,
            reason: TxRejection::UnknownId(c.id)
        })
    );
    assert_eq!(
        w.checkpoint_digest().unwrap(),
        before,
        "byte-identical after a failed transaction"
    );
    assert!(w.entity_of(&b.id).is_none());
    // Capacity: three creates, two slots.
    let d = spawn(4, Pos { x: 3.0, y: 3.0 }, 8);
    let full = tx(vec![create(&b), create(&c), create(&d)]);
    assert!(matches!(
        w.transact(&full),
        Err(TxError::World(DurableError::World(
            WorldError::CapacityExhausted { .. }
        )))
    ));
    assert_eq!(w.checkpoint_digest().unwrap(), before);
    // ... unless a delete earlier in the transaction frees a slot.
    let replace = tx(vec![
        TxCommand::Delete { id: a.id },
        create(&b),
        create(&c),
        create(&d),
    ]);
    assert_eq!(w.transact(&replace).unwrap().created, 3);
    // The retry used the recorded commands: no minting happened anywhere above.
    assert!(w.entity_of(&a.id).is_none());
    for p in [&b, &c, &d] {
        assert!(w.entity_of(&p.id).is_some());
    }
    w.check_identity_invariant().unwrap();
}

#[test]
fn collisions_and_repeated_creates_are_rejected_whole() {
    let mut w = sim(8);
    let a = spawn(1, Pos { x: 0.0, y: 0.0 }, 5);
    w.transact(&tx(vec![create(&a)])).unwrap();
    let live = w.registry.len();
    // A repeated accepted create.
    assert_eq!(
        w.transact(&tx(vec![create(&a)])),
        Err(TxError::Command {
            index: 0,
            reason: TxRejection::LiveId(a.id)
        })
    );
    // A live-id collision inside a larger transaction: rejected whole, no replacement minted.
    let b = spawn(2, Pos { x: 0.0, y: 0.0 }, 5);
    let collide = PreparedSpawn {
        id: a.id,
        components: b.components.clone(),
    };
    assert_eq!(
        w.transact(&tx(vec![create(&b), create(&collide)])),
        Err(TxError::Command {
            index: 1,
            reason: TxRejection::LiveId(a.id)
        })
    );
    assert_eq!(w.registry.len(), live);
    assert!(w.entity_of(&b.id).is_none());
    // The same id twice in one transaction.
    assert!(matches!(
        w.transact(&tx(vec![create(&b), create(&b)])),
        Err(TxError::Command { index: 1, .. })
    ));
    // Delete then create again with the same id in one transaction is an explicit reissue:
    // allowed (the identity invariant is not a tombstone ledger).
    w.transact(&tx(vec![TxCommand::Delete { id: a.id }, create(&a)]))
        .unwrap();
}

#[test]
fn the_identity_cannot_be_set_changed_or_removed() {
    let mut w = sim(4);
    let a = spawn(1, Pos { x: 0.0, y: 0.0 }, 5);
    w.transact(&tx(vec![create(&a)])).unwrap();
    let rm = tx(vec![TxCommand::Remove {
        id: a.id,
        component: IDENTITY_COMPONENT.into(),
    }]);
    assert_eq!(
        w.transact(&rm),
        Err(TxError::Command {
            index: 0,
            reason: TxRejection::IdentityOverride
        })
    );
    let set = tx(vec![TxCommand::Update {
        id: a.id,
        components: vec![ComponentValue {
            component: IDENTITY_COMPONENT.into(),
            bytes: HexBytes::from(vec![0; 36]),
            refs: Vec::new(),
        }],
    }]);
    assert_eq!(
        w.transact(&set),
        Err(TxError::Command {
            index: 0,
            reason: TxRejection::IdentityOverride
        })
    );
    // Authored ids are not created by spawns (namespace separation).
    let authored = PersistentId::authored_legacy("w", "p", "o").unwrap();
    let forged = PreparedSpawn {
        id: authored,
        components: vec![],
    };
    assert_eq!(
        w.transact(&tx(vec![create(&forged)])),
        Err(TxError::Command {
            index: 0,
            reason: TxRejection::NotSpawned(authored)
        })
    );
    // Deleting the whole entity is fine; other components can be removed.
    w.transact(&tx(vec![TxCommand::Remove {
        id: a.id,
        component: "pos".into(),
    }]))
    .unwrap();
    w.transact(&tx(vec![TxCommand::Delete { id: a.id }]))
        .unwrap();
    assert_eq!(w.registry.len(), 0);
    w.check_identity_invariant().unwrap();
}

#[test]
fn namespaces_parse_strictly_and_stay_apart() {
    assert_eq!(
        "spawned:67E55044-10b1-426f-9247-bb680e5fe0c8".parse::<PersistentId>(),
        Err(PersistentIdError::Uppercase { index: 10 })
    );
    let authored = PersistentId::authored_legacy("world", "place", "object").unwrap();
    let text = authored.to_string();
    assert!(text.starts_with("authored:") && text.len() == 9 + 64);
    // An authored text can never name a spawned id, and back.
    let claim = format!("spawned:{}", &text[9..45]);
    assert!(claim.parse::<PersistentId>().is_err());
    let spawned = spawn(9, Pos { x: 0.0, y: 0.0 }, 1).id;
    assert_ne!(spawned.namespace_tag(), authored.namespace_tag());
}

#[test]
fn restore_rebinds_by_stable_id_and_invalidates_old_handles() {
    let mut w = sim(8);
    let a = spawn(1, Pos { x: 0.0, y: 0.0 }, 5);
    let b = spawn(2, Pos { x: 1.0, y: 1.0 }, 6);
    w.transact(&tx(vec![create(&a), create(&b)])).unwrap();
    let transient = w.spawn((Hp(77),)).unwrap();
    let snapshot = w.checkpoint().unwrap();
    let digest = snapshot.digest();
    assert_eq!(w.checkpoint_digest().unwrap(), digest);
    // Written from the pools, the same bytes as the structured checkpoint's.
    assert_eq!(w.checkpoint_bytes().unwrap(), snapshot.canonical_bytes());
    let old_a = w.entity_of(&a.id).unwrap();
    // Change the world, then restore.
    w.transact(&tx(vec![
        TxCommand::Update {
            id: a.id,
            components: vec![hp_value(1)],
        },
        TxCommand::Delete { id: b.id },
    ]))
    .unwrap();
    assert_ne!(w.checkpoint_digest().unwrap(), digest);
    w.restore(&snapshot).unwrap();
    assert_eq!(w.checkpoint_digest().unwrap(), digest);
    let new_a = w.entity_of(&a.id).unwrap();
    assert_ne!(new_a, old_a);
    assert!(
        !w.registry.is_alive(old_a),
        "old handles are stale after restore"
    );
    assert_eq!(w.get::<Hp>(old_a), None);
    assert_eq!(w.get::<Hp>(new_a), Some(&Hp(5)));
    assert!(
        w.registry.is_alive(transient),
        "entities without a stable id are kept"
    );
    w.check_identity_invariant().unwrap();
    // Through JSON, into a fresh world: the same digest.
    let json = serde_json::to_string(&snapshot).unwrap();
    let back: Checkpoint = serde_json::from_str(&json).unwrap();
    let mut fresh = sim(8);
    fresh.restore(&back).unwrap();
    assert_eq!(fresh.checkpoint_digest().unwrap(), digest);
}

#[test]
fn malformed_forged_and_removed_identities_are_rejected_and_change_nothing() {
    let mut w = sim(8);
    let a = spawn(1, Pos { x: 0.0, y: 0.0 }, 5);
    let b = spawn(2, Pos { x: 1.0, y: 1.0 }, 6);
    w.transact(&tx(vec![create(&a), create(&b)])).unwrap();
    let good = w.checkpoint().unwrap();
    let before = w.checkpoint_digest().unwrap();
    type Expect = fn(&CheckpointError) -> bool;
    let mut cases: Vec<(Checkpoint, Expect)> = Vec::new();
    let mut removed = good.clone();
    removed.entities[0].identity = None;
    cases.push((removed, |e| {
        matches!(e, CheckpointError::IdentityMissing { index: 0 })
    }));
    let mut forged = good.clone();
    forged.entities[1].identity = Some(good.entities[0].id);
    cases.push((forged, |e| {
        matches!(e, CheckpointError::IdentityForged { index: 1 })
    }));
    let mut unsorted = good.clone();
    unsorted.entities.swap(0, 1);
    cases.push((unsorted, |e| {
        matches!(e, CheckpointError::Order { index: 1 })
    }));
    let mut repeated = good.clone();
    repeated.entities[1] = repeated.entities[0].clone();
    cases.push((repeated, |e| {
        matches!(e, CheckpointError::Order { index: 1 })
    }));
    let mut unknown = good.clone();
    unknown.entities[0].components[0].component = "velocity".into();
    cases.push((unknown, |e| {
        matches!(e, CheckpointError::Component { index: 0, .. })
    }));
    let mut size = good.clone();
    size.entities[0].components[0].bytes = [&size.entities[0].components[0].bytes[..], &[0]]
        .concat()
        .into();
    cases.push((size, |e| {
        matches!(e, CheckpointError::Component { index: 0, .. })
    }));
    let mut version = good.clone();
    version.version = 1;
    cases.push((version, |e| matches!(e, CheckpointError::Format { .. })));
    let mut too_many = good.clone();
    for seed in 10..20 {
        let p = spawn(seed, Pos { x: 0.0, y: 0.0 }, 1);
        too_many.entities.push(ludus::durable::CheckpointEntity {
            id: p.id,
            identity: Some(p.id),
            name: String::new(),
            label: String::new(),
            parent: None,
            position: 0,
            binding: None,
            protected: false,
            components: vec![],
        });
    }
    too_many.entities.sort_by_key(|x| x.id);
    cases.push((too_many, |e| matches!(e, CheckpointError::World(_))));
    for (i, (cp, expected)) in cases.iter().enumerate() {
        let err = w.restore(cp).unwrap_err();
        assert!(expected(&err), "case {i}: {err:?}");
        assert_eq!(
            w.checkpoint_digest().unwrap(),
            before,
            "case {i} changed the world"
        );
    }
    // Unknown members in the JSON form.
    let json =
        serde_json::to_string(&good)
            .unwrap()
            .replacen("\"version\"", "\"extra\":0,\"version\"", 1);
    assert!(serde_json::from_str::<Checkpoint>(&json).is_err());
}

#[test]
fn the_digest_ignores_slot_dense_and_insertion_order() {
    let ps: Vec<PreparedSpawn> = (0..6)
        .map(|i| {
            spawn(
                i,
                Pos {
                    x: i as f32,
                    y: 0.0,
                },
                i as u32,
            )
        })
        .collect();
    let mut w1 = sim(16);
    w1.transact(&tx(ps.iter().map(create).collect())).unwrap();
    let mut w2 = sim(16);
    // Other slots (transients first), reverse order, components inserted the other way round.
    for _ in 0..5 {
        w2.spawn((Hp(0),)).unwrap();
    }
    for p in ps.iter().rev() {
        let mut q = p.clone();
        q.components.reverse();
        w2.transact(&tx(vec![create(&q)])).unwrap();
    }
    assert_eq!(
        w1.checkpoint_digest().unwrap(),
        w2.checkpoint_digest().unwrap()
    );
    assert_eq!(w1.checkpoint().unwrap(), w2.checkpoint().unwrap());
}

#[test]
fn deferred_transactions_apply_at_the_boundary() {
    let mut w = sim(4);
    let a = spawn(1, Pos { x: 0.0, y: 0.0 }, 5);
    let mut queue = TransactionQueue::new();
    queue.defer(tx(vec![create(&a)]));
    queue.defer(tx(vec![create(&a)])); // the repeat is refused on its own
    w.end_structural();
    let results = w.apply_deferred(&mut queue);
    assert!(
        results.iter().all(|r| r.is_err()),
        "outside the structural phase"
    );
    w.begin_structural();
    queue.defer(tx(vec![create(&a)]));
    queue.defer(tx(vec![create(&a)]));
    let results = w.apply_deferred(&mut queue);
    assert!(results[0].is_ok() && results[1].is_err());
    assert!(queue.is_empty());
}

/// The golden fixture: two fixed prepared commands, spawn / update / delete at ticks above
/// 2^53, through JSON.
fn golden_log() -> ReplayLog {
    let survivor = PreparedSpawn::prepare::<Sim, _, _>(
        (Pos { x: 1.5, y: -2.0 }, Hp(100)),
        &mut FixedEntropy::new([0x11; 16]),
    )
    .unwrap();
    let doomed =
        PreparedSpawn::prepare::<Sim, _, _>((Hp(7),), &mut FixedEntropy::new([0x22; 16])).unwrap();
    let base = (1u64 << 53) + 1;
    ReplayLog {
        format: REPLAY_FORMAT.into(),
        version: 1,
        entries: vec![
            ReplayEntry {
                tick: base,
                transaction: tx(vec![create(&survivor), create(&doomed)]),
            },
            ReplayEntry {
                tick: base + 1,
                transaction: tx(vec![TxCommand::Update {
                    id: survivor.id,
                    components: vec![hp_value(90)],
                }]),
            },
            ReplayEntry {
                tick: base + 2,
                transaction: tx(vec![TxCommand::Delete { id: doomed.id }]),
            },
        ],
    }
}

const GOLDEN_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/persistent-identity.1.json"
);
const GOLDEN_DIGEST: &str = "58bf9f6b865a6d8b2877d0e9405bf1381fd9bccca04bbd6b044edbdd860287dd";

#[test]
#[cfg_attr(miri, ignore = "reads the fixture file (no file system under Miri)")]
fn golden_replay_matches_its_digest() {
    let text = std::fs::read_to_string(GOLDEN_PATH).expect("fixture");
    let log: ReplayLog = serde_json::from_str(&text).unwrap();
    assert_eq!(log, golden_log(), "the fixture is what the test prepares");
    // Ticks above 2^53 survive JSON exactly.
    assert_eq!(log.entries[0].tick, (1u64 << 53) + 1);
    assert!(text.contains("9007199254740993"));
    let mut w = sim(8);
    w.replay(&log).unwrap();
    let digest = digest_hex(&w.checkpoint_digest().unwrap());
    assert_eq!(digest, GOLDEN_DIGEST);
    // The restored snapshot keeps the survivor and excludes the deleted entity.
    let snapshot = w.checkpoint().unwrap();
    assert_eq!(snapshot.entities.len(), 1);
    let mut fresh = sim(8);
    fresh.restore(&snapshot).unwrap();
    assert_eq!(
        digest_hex(&fresh.checkpoint_digest().unwrap()),
        GOLDEN_DIGEST
    );
    let e = fresh
        .entity_of(
            &log.entries[0]
                .transaction
                .commands
                .iter()
                .find_map(|c| match c {
                    TxCommand::Create { spawn } => Some(spawn.id),
                    _ => None,
                })
                .unwrap(),
        )
        .unwrap();
    assert_eq!(fresh.get::<Hp>(e), Some(&Hp(90)));
    // A log whose ticks go backwards is refused before any entry is applied.
    let mut bad = log.clone();
    bad.entries.swap(1, 2);
    let mut w = sim(8);
    let empty = w.checkpoint_digest().unwrap();
    assert_eq!(
        w.replay(&bad),
        Err(ReplayError::TickOrder {
            tick: bad.entries[2].tick
        })
    );
    assert_eq!(w.registry.len(), 0);
    assert_eq!(w.checkpoint_digest().unwrap(), empty);
}

/// Writes the golden fixture (run once with `LUDUS_WRITE_GOLDEN=1`).
#[test]
#[cfg_attr(miri, ignore = "writes the fixture file")]
fn write_golden_fixture_when_asked() {
    if std::env::var_os("LUDUS_WRITE_GOLDEN").is_some() {
        let text = serde_json::to_string_pretty(&golden_log()).unwrap();
        std::fs::write(GOLDEN_PATH, text + "\n").unwrap();
        let mut w = sim(8);
        w.replay(&golden_log()).unwrap();
        println!("digest {}", digest_hex(&w.checkpoint_digest().unwrap()));
    }
}

/// Crafted ids, protection, disabled tables and swapped pools: every one must be refused before
/// anything changes.
#[test]
fn crafted_ids_protection_disabled_tables_and_swapped_pools_are_refused_whole() {
    use ludus::durable::CheckpointEntity;
    let mut w = sim(8);
    let a = spawn(1, Pos { x: 0.0, y: 0.0 }, 5);
    w.transact(&tx(vec![create(&a)])).unwrap();
    let before = w.checkpoint_digest().unwrap();
    let live = w.registry.len();
    // An authored id whose key bytes equal a spawned id's: refused in one checkpoint ...
    let PersistentId::Spawned(u) = a.id else {
        unreachable!()
    };
    let mut clash = [0u8; 32];
    clash[..16].copy_from_slice(u.as_bytes());
    let authored = PersistentId::Authored(clash);
    let mut cp = w.checkpoint().unwrap();
    cp.entities.insert(
        0,
        CheckpointEntity {
            id: authored,
            identity: Some(authored),
            name: String::new(),
            label: String::new(),
            parent: None,
            position: 0,
            binding: None,
            protected: false,
            components: vec![],
        },
    );
    assert!(matches!(
        w.restore(&cp),
        Err(CheckpointError::Id { index: 1 })
    ));
    assert_eq!(
        (w.checkpoint_digest().unwrap(), w.registry.len()),
        (before, live)
    );
    // ... and on its own too: an authored id is a binding key, whose object half is never
    // nil (so no authored id can hold a spawned id's key bytes), bound under its own bytes.
    let mut only_authored = Checkpoint {
        entities: vec![cp.entities[0].clone()],
        ..w.checkpoint().unwrap()
    };
    assert!(matches!(
        w.restore(&only_authored),
        Err(CheckpointError::Binding { index: 0 })
    ));
    let key = bytemuck::cast(clash);
    only_authored.entities[0].binding = Some(ludus::durable::EntityBinding { key, kind: 0 });
    assert!(matches!(
        w.restore(&only_authored),
        Err(CheckpointError::Binding { index: 0 })
    ));
    assert_eq!(
        (w.checkpoint_digest().unwrap(), w.registry.len()),
        (before, live)
    );
    // A non-canonical id built without parsing.
    let nil = PreparedSpawn {
        id: PersistentId::Spawned(uuid::Uuid::nil()),
        components: vec![],
    };
    assert_eq!(
        w.transact(&tx(vec![create(&nil)])),
        Err(TxError::Command {
            index: 0,
            reason: TxRejection::NotCanonical(nil.id)
        })
    );
    let mut bad = w.checkpoint().unwrap();
    bad.entities[0].id = PersistentId::Spawned(uuid::Uuid::from_u128(1));
    bad.entities[0].identity = Some(bad.entities[0].id);
    assert!(matches!(
        w.restore(&bad),
        Err(CheckpointError::Id { index: 0 })
    ));
    // Deleting a protected entity is refused whole (the create before it is not applied).
    let e = w.entity_of(&a.id).unwrap();
    w.set_protected(e, true).unwrap();
    // (Protection is durable state: the digest covers it.)
    let protected = w.checkpoint_digest().unwrap();
    assert_ne!(protected, before);
    let b = spawn(2, Pos { x: 1.0, y: 1.0 }, 6);
    assert_eq!(
        w.transact(&tx(vec![create(&b), TxCommand::Delete { id: a.id }])),
        Err(TxError::Command {
            index: 1,
            reason: TxRejection::Protected(a.id)
        })
    );
    assert!(w.entity_of(&b.id).is_none());
    assert_eq!(w.checkpoint_digest().unwrap(), protected);
    w.set_protected(e, false).unwrap();
    // A world without stable ids refuses before creating anything.
    let mut plain = Sim::try_new_durable(
        4,
        DurableConfig {
            stable_ids: false,
            name_bytes: 64,
            ..DurableConfig::default()
        },
    )
    .unwrap();
    plain.begin_structural();
    assert_eq!(
        plain.transact(&tx(vec![create(&b)])),
        Err(TxError::World(DurableError::Disabled))
    );
    assert_eq!(plain.registry.len(), 0);
    // A pool swapped in from another world: refused before anything changes.
    let mut other = sim(8);
    std::mem::swap(&mut w.hp, &mut other.hp);
    assert_eq!(
        w.transact(&tx(vec![create(&b)])),
        Err(TxError::World(DurableError::World(WorldError::ForeignPool)))
    );
    assert!(matches!(
        w.restore(&only_authored),
        Err(CheckpointError::World(DurableError::World(
            WorldError::ForeignPool
        )))
    ));
    std::mem::swap(&mut w.hp, &mut other.hp);
    assert_eq!(w.checkpoint_digest().unwrap(), before);
    w.check_identity_invariant().unwrap();
}

/// Proptest settings of this file's model tests: `cases` cases, no failure files.
fn cases(cases: u32) -> proptest::prelude::ProptestConfig {
    proptest::prelude::ProptestConfig {
        cases,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    }
}

/// Checkpoint bytes written from the pools (bucket-sorted rows, records written in id order)
/// against the structured checkpoint's canonical bytes (a plain sort, then a value lookup per
/// entity and component): both namespaces, ids that share their leading bytes (so the
/// prefix ties and the whole id decides), entities without one component or the other, and
/// churn (deletes, updates, removals, fresh spawns) that moves pool entries off their slots.
mod checkpoint_model {
    use super::*;
    use ludus::durable::CheckpointEntity;
    use proptest::prelude::*;
    use sha2::{Digest, Sha256};

    /// A valid spawned or authored id from `bytes`; `lead` (if any) replaces the first eight
    /// key bytes, so that several ids share them.
    fn id(bytes: [u8; 32], authored: bool, lead: Option<[u8; 8]>) -> PersistentId {
        let mut key = bytes;
        if let Some(lead) = lead {
            key[..8].copy_from_slice(&lead);
        }
        if authored {
            // A binding key (both halves version-4 UUIDs), so never nil.
            PersistentId::from_key(1, bytemuck::cast(as_binding_key(key))).unwrap()
        } else {
            key[6] = key[6] & 0x0f | 0x40;
            key[8] = key[8] & 0x3f | 0x80;
            key[16..].fill(0);
            PersistentId::from_key(2, key).unwrap()
        }
    }

    fn value(name: &str, bytes: &[u8]) -> ComponentValue {
        ComponentValue {
            component: name.to_owned().into(),
            bytes: HexBytes::from(bytes.to_vec()),
            refs: Vec::new(),
        }
    }

    /// Builds a world from `n` entities drawn from `seed` (a third of them authored when
    /// `mixed`), churns it, and compares.
    fn check(n: usize, seed: u64, mixed: bool) {
        let mut state = seed | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut bytes = || {
            let mut b = [0u8; 32];
            for c in b.chunks_mut(8) {
                c.copy_from_slice(&next().to_le_bytes());
            }
            b
        };
        let leads: Vec<[u8; 8]> = (0..4).map(|_| bytes()[..8].try_into().unwrap()).collect();
        let mut entities: Vec<CheckpointEntity> = Vec::new();
        let mut seen = HashSet::new();
        for i in 0..n {
            let b = bytes();
            let lead = (b[0] % 8 == 0).then(|| leads[usize::from(b[1]) % leads.len()]);
            // Lead bytes 6 and 8 of a spawned id are its version and variant: a shared lead
            // keeps them valid only through `id`'s fix-up, which may make two ids equal.
            let id = id(b, mixed && b[2] % 3 == 0, lead);
            if !seen.insert(id.key_bytes()) {
                continue;
            }
            let mut components = Vec::new();
            if b[3] % 4 != 0 {
                components.push(value("hp", &(i as u32).to_le_bytes()));
            }
            if b[4] % 4 != 0 {
                let pos = Pos {
                    x: i as f32,
                    y: -(i as f32),
                };
                components.push(value("pos", bytemuck::bytes_of(&pos)));
            }
            let binding = match id {
                PersistentId::Authored(b) => Some(ludus::durable::EntityBinding {
                    key: bytemuck::cast(b),
                    kind: 0,
                }),
                PersistentId::Spawned(_) => None,
            };
            entities.push(CheckpointEntity {
                id,
                identity: Some(id),
                name: String::new(),
                label: String::new(),
                parent: None,
                position: 0,
                binding,
                protected: false,
                components,
            });
        }
        entities.sort_by_key(|e| e.id);
        let snapshot = Checkpoint {
            format: "ludus.checkpoint".into(),
            version: 4,
            schema: ludus::durable::ComponentShape::roster::<Sim>(),
            entities,
        };
        let mut w = sim(n + n / 4 + 8);
        w.restore(&snapshot).unwrap();
        assert_eq!(w.checkpoint_bytes().unwrap(), snapshot.canonical_bytes());
        // Churn: delete a quarter, update and strip some, spawn fresh ones.
        let mut commands = Vec::new();
        for (k, e) in snapshot.entities.iter().enumerate() {
            match next() % 8 {
                0 | 1 => commands.push(TxCommand::Delete { id: e.id }),
                2 => commands.push(TxCommand::Update {
                    id: e.id,
                    components: vec![hp_value(k as u32 ^ 0xdead)],
                }),
                3 if e.components.iter().any(|c| c.component == "pos") => {
                    commands.push(TxCommand::Remove {
                        id: e.id,
                        component: "pos".into(),
                    })
                }
                _ => {}
            }
        }
        for k in 0..n / 8 {
            commands.push(create(&spawn(
                seed ^ ((k as u64) << 20),
                Pos { x: 1.0, y: 2.0 },
                7,
            )));
        }
        w.transact(&tx(commands)).unwrap();
        let structured = w.checkpoint().unwrap();
        let bytes = w.checkpoint_bytes().unwrap();
        assert_eq!(bytes, structured.canonical_bytes());
        let digest: [u8; 32] = Sha256::digest(&bytes).into();
        assert_eq!(w.checkpoint_digest().unwrap(), digest);
        assert_eq!(structured.digest(), digest);
    }

    /// Past the bucket sort's threshold (4 096 rows), and below it.
    #[test]
    fn pool_bytes_equal_the_structured_canonical_bytes() {
        let n = if cfg!(miri) { 16 } else { 6_000 };
        check(n, 0x5eed, true);
        check(n, 0x5eef, false);
        if !cfg!(miri) {
            check(300, 0xfeed, true);
        }
    }

    proptest! {
        #![proptest_config(super::cases(if cfg!(miri) { 1 } else { 16 }))]
        #[test]
        fn any_world_writes_its_structured_bytes(
            seed in any::<u64>(),
            n in 0usize..600,
            mixed in any::<bool>(),
        ) {
            check(if cfg!(miri) { n % 30 } else { n }, seed, mixed);
        }
    }
}

/// A prepared spawn of short values that reference no entity holds one heap block (its list
/// of values): the names are the roster's and the bytes are held inline, so a copy allocates
/// once. A long value holds a block of its own.
#[test]
fn a_prepared_spawn_of_short_values_holds_one_heap_block() {
    let bundle = (Pos { x: 1.0, y: 2.0 }, Hp(7));
    let p = PreparedSpawn::prepare::<Sim, _, _>(bundle, &mut SeqEntropy::new(1)).unwrap();
    assert!(p
        .components
        .iter()
        .all(|c| matches!(c.component, Cow::Borrowed(_))));
    let (copy, blocks) = crate::hierarchy::allocations(|| p.clone());
    assert_eq!((copy, blocks), (p, 1));
    let long = [7u8; ludus::durable::INLINE_VALUE_BYTES + 1];
    let (_, blocks) = crate::hierarchy::allocations(|| HexBytes::from(&long[..]));
    assert_eq!(blocks, 1);
    let short = [7u8; ludus::durable::INLINE_VALUE_BYTES];
    let (_, blocks) = crate::hierarchy::allocations(|| HexBytes::from(&short[..]));
    assert_eq!(blocks, 0);
}

/// Transactions of creates only (the batched path) against a model: a run of fresh creates
/// with, at a drawn place, one fault (a repeat of an earlier create of the same transaction, an
/// id already live, an unknown or missized component, an authored id, or more creates than
/// slots). A failed one changes nothing (digest, invariant, binding table consistent, the
/// same ids resolve) and names the first faulty command; the retry without the fault creates
/// every entity with its values. Half the creates name their components with owned text (as
/// parsed ones do), half with the roster's borrowed names.
mod create_batch_model {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone, Copy)]
    enum Fault {
        None,
        Repeat,
        Live,
        UnknownComponent,
        WrongSize,
        Authored,
        Capacity,
    }

    fn fault() -> impl Strategy<Value = Fault> {
        prop_oneof![
            Just(Fault::None),
            Just(Fault::Repeat),
            Just(Fault::Live),
            Just(Fault::UnknownComponent),
            Just(Fault::WrongSize),
            Just(Fault::Authored),
            Just(Fault::Capacity),
        ]
    }

    fn check(seed: u64, live: usize, n: usize, run: usize, at: usize, f: Fault) {
        let capacity = live + n + 2;
        let mut w = sim(capacity);
        let old: Vec<PreparedSpawn> = (0..live)
            .map(|i| {
                spawn(
                    seed ^ (1 << 40) ^ i as u64,
                    Pos { x: 0.5, y: 0.5 },
                    i as u32,
                )
            })
            .collect();
        w.transact(&tx(old.iter().map(create).collect())).unwrap();
        // Three component lists (two of the same length), in runs of `run` creates: runs of
        // equal lists are batched apart, long ones in several chunks.
        let pos = |i: usize| Pos {
            x: i as f32,
            y: 1.0,
        };
        let fresh: Vec<PreparedSpawn> = (0..n)
            .map(|i| {
                let mut entropy = SeqEntropy::new(seed ^ (2 << 40) ^ i as u64);
                match i / run % 3 {
                    0 => PreparedSpawn::prepare::<Sim, _, _>((Hp(i as u32),), &mut entropy),
                    1 => PreparedSpawn::prepare::<Sim, _, _>((pos(i),), &mut entropy),
                    _ => PreparedSpawn::prepare::<Sim, _, _>((pos(i), Hp(7)), &mut entropy),
                }
                .map(|mut p| {
                    // Every other one names its components with owned text, as a parsed
                    // command does: a run mixes them with the roster's borrowed names.
                    if i % 2 == 1 {
                        for c in &mut p.components {
                            c.component = c.component.to_string().into();
                        }
                    }
                    p
                })
                .unwrap()
            })
            .collect();
        let mut commands: Vec<TxCommand> = fresh.iter().map(create).collect();
        let at = at % (n + 1);
        let expected = match f {
            Fault::None => None,
            Fault::Repeat if at > 0 => {
                commands.insert(at, create(&fresh[at - 1]));
                Some(TxRejection::LiveId(fresh[at - 1].id))
            }
            Fault::Live if live > 0 => {
                commands.insert(at, create(&old[at % live]));
                Some(TxRejection::LiveId(old[at % live].id))
            }
            Fault::UnknownComponent => {
                let mut p = spawn(seed ^ (4 << 40), Pos { x: 0.0, y: 0.0 }, 1);
                p.components[0].component = "nope".into();
                commands.insert(at, create(&p));
                Some(TxRejection::UnknownComponent("nope".into()))
            }
            Fault::WrongSize => {
                let mut p = spawn(seed ^ (5 << 40), Pos { x: 0.0, y: 0.0 }, 1);
                p.components[0].bytes = [&p.components[0].bytes[..], &[0]].concat().into();
                let c = &p.components[0];
                let reason = TxRejection::ComponentSize {
                    component: c.component.to_string(),
                    expected: c.bytes.len() - 1,
                    found: c.bytes.len(),
                };
                commands.insert(at, create(&p));
                Some(reason)
            }
            Fault::Authored => {
                let mut p = spawn(seed ^ (6 << 40), Pos { x: 0.0, y: 0.0 }, 1);
                p.id = PersistentId::authored_legacy("w", "p", "o").unwrap();
                commands.insert(at, create(&p));
                Some(TxRejection::NotSpawned(p.id))
            }
            _ => None,
        };
        let over = matches!(f, Fault::Capacity);
        if over {
            for i in 0..3 {
                let p = spawn(seed ^ (7 << 40) ^ i, Pos { x: 0.0, y: 0.0 }, 2);
                commands.push(create(&p));
            }
        }
        let before = (w.checkpoint_digest().unwrap(), w.registry.len());
        let result = w.transact(&tx(commands));
        match (&expected, over) {
            (Some(reason), _) => {
                assert_eq!(
                    result,
                    Err(TxError::Command {
                        index: at,
                        reason: reason.clone()
                    }),
                    "{f:?}"
                );
            }
            (None, true) => assert!(matches!(result, Err(TxError::World(_))), "{result:?}"),
            (None, false) => {
                assert_eq!(result.map(|r| r.created), Ok(n));
            }
        }
        w.check_identity_invariant().unwrap();
        for p in &old {
            assert!(w.entity_of(&p.id).is_some());
        }
        if expected.is_some() || over {
            assert_eq!(
                (w.checkpoint_digest().unwrap(), w.registry.len()),
                before,
                "{f:?}"
            );
            for p in &fresh {
                assert!(w.entity_of(&p.id).is_none(), "{f:?}");
            }
            // The retry without the fault.
            let created = w.transact(&tx(fresh.iter().map(create).collect())).unwrap();
            assert_eq!(created.created, n);
            w.check_identity_invariant().unwrap();
        }
        for (i, p) in fresh.iter().enumerate() {
            let e = w.entity_of(&p.id).unwrap();
            let expected = match i / run % 3 {
                0 => (Some(Hp(i as u32)), None),
                1 => (None, Some(pos(i))),
                _ => (Some(Hp(7)), Some(pos(i))),
            };
            assert_eq!(
                (w.get::<Hp>(e).copied(), w.get::<Pos>(e).copied()),
                expected
            );
        }
    }

    proptest! {
        #![proptest_config(super::cases(if cfg!(miri) { 2 } else { 96 }))]
        #[test]
        fn create_only_transactions_match_the_model(
            seed in any::<u64>(),
            live in 0usize..6,
            n in 0usize..40,
            run in 1usize..5,
            at in any::<usize>(),
            f in fault(),
        ) {
            check(seed, live, if cfg!(miri) { n % 8 } else { n }, run, at, f);
        }
    }

    /// Runs longer than a chunk of the batched path (512 creates).
    #[test]
    fn long_runs_cross_chunks() {
        let n = if cfg!(miri) { 12 } else { 1_300 };
        check(1, 3, n, n / 2 + 1, 0, Fault::None);
        check(2, 3, n, n / 3, n - 5, Fault::Repeat);
        check(3, 0, n, 700, 0, Fault::Capacity);
    }
}
