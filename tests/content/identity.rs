//! One identity per durable entity: an authored entity (restored from a record or a level
//! file) has the authored id of its binding key, so checkpoints, digests, transactions,
//! references and replays see it exactly as they see a spawned entity.

use crate::common::*;
use ludus::content::{restore_level, restore_world, save_level, save_world_bytes};
use ludus::durable::{
    CheckpointError, ComponentValue, DurableError, PreparedSpawn, ReplayEntry, ReplayLog,
    Transaction, TxCommand, REPLAY_FORMAT,
};
use ludus::identity::test_entropy::SeqEntropy;
use ludus::identity::{PersistentId, PersistentObjectKey};
use ludus::prelude::Activation;
use ludus::prelude::*;

const SCHEMA: &str = "ludus.test.v1";

/// The authored id of record entity `n` under instance 0.
fn authored(n: u64) -> PersistentId {
    PersistentId::Authored(bytemuck::cast(PersistentObjectKey::new(
        instance(0),
        object(n),
    )))
}

/// `ring(8)` restored under instance 0, entity 0 the parent of 1 and 2.
fn loaded() -> (Level, Vec<EntityId>) {
    let mut w = level(64);
    let e = restore_world(&ring(8), instance(0), &mut w)
        .unwrap()
        .entities;
    w.set_parent(e[1], Some(e[0])).unwrap();
    w.set_parent(e[2], Some(e[0])).unwrap();
    (w, e)
}

fn tx(commands: Vec<TxCommand>) -> Transaction {
    Transaction {
        label: String::new(),
        commands,
    }
}

#[test]
fn a_level_world_has_one_identity_per_entity_and_a_digest_that_sees_it() {
    let empty = level(64).checkpoint_digest().unwrap();
    let (mut w, e) = loaded();
    for (n, &entity) in e.iter().enumerate() {
        let id = authored(n as u64);
        assert_eq!(w.stable_id(entity), Some(id));
        assert_eq!(w.entity_of(&id), Some(entity));
    }
    w.check_identity_invariant().unwrap();
    let cp = w.checkpoint().unwrap();
    assert_eq!(cp.entities.len(), 8);
    let digest = w.checkpoint_digest().unwrap();
    assert_ne!(digest, empty, "the level is in the digest");
    // Any durable change of any entity changes it; undoing the change restores it.
    w.hp.get_mut(e[5]).unwrap().hp += 1;
    assert_ne!(w.checkpoint_digest().unwrap(), digest, "a value");
    w.hp.get_mut(e[5]).unwrap().hp -= 1;
    assert_eq!(w.checkpoint_digest().unwrap(), digest);
    w.enemy.get_mut(e[3]).unwrap().target = e[6];
    assert_ne!(w.checkpoint_digest().unwrap(), digest, "a reference");
    w.enemy.get_mut(e[3]).unwrap().target = e[4];
    w.set_name(e[7], "renamed").unwrap();
    assert_ne!(w.checkpoint_digest().unwrap(), digest, "a name");
    w.set_name(e[7], "entity 7").unwrap();
    w.move_child(e[2], 0).unwrap();
    assert_ne!(w.checkpoint_digest().unwrap(), digest, "child order");
    w.move_child(e[1], 0).unwrap();
    w.set_protected(e[0], true).unwrap();
    assert_ne!(w.checkpoint_digest().unwrap(), digest, "protection");
    w.set_protected(e[0], false).unwrap();
    assert_eq!(w.checkpoint_digest().unwrap(), digest);
    // The same world through a level file: the same identities, so the same digest.
    let file = save_level(&w, instance(0)).unwrap();
    let mut via_level = level(64);
    via_level.spawn((Hp { hp: 1 },)).unwrap(); // other slots
    restore_level(&file, Some(instance(0)), &mut via_level).unwrap();
    assert_eq!(via_level.checkpoint_digest().unwrap(), digest);
}

#[test]
fn a_transaction_updates_and_deletes_a_level_entity_by_its_identity() {
    let (mut w, e) = loaded();
    let hp = ComponentValue::of(&w, &Hp { hp: 99 }).unwrap();
    w.transact(&tx(vec![TxCommand::Update {
        id: authored(4),
        components: vec![hp],
    }]))
    .unwrap();
    assert_eq!(w.hp.get(e[4]), Some(&Hp { hp: 99 }));
    w.transact(&tx(vec![TxCommand::Remove {
        id: authored(4),
        component: "pos".into(),
    }]))
    .unwrap();
    assert!(w.pos.get(e[4]).is_none());
    w.transact(&tx(vec![TxCommand::Delete { id: authored(4) }]))
        .unwrap();
    assert!(!w.registry.is_alive(e[4]));
    assert_eq!(w.entity_of(&authored(4)), None);
    let key = PersistentObjectKey::new(instance(0), object(4));
    assert!(w.resolve(&key).entity().is_none());
    // A deleted level entity's id is unknown from then on.
    let r = w.transact(&tx(vec![TxCommand::Delete { id: authored(4) }]));
    assert!(r.is_err(), "{r:?}");
    w.check_identity_invariant().unwrap();
}

#[test]
fn a_replay_onto_a_fresh_load_of_the_level_points_at_its_entities() {
    let (mut w, e) = loaded();
    let mut entropy = SeqEntropy::new(0x1d);
    // A spawned entity that targets a level entity, and an update of a level entity that
    // targets the spawned one.
    let s = PreparedSpawn::prepare_in(
        &w,
        (Enemy {
            target: e[6],
            speed: 3,
            _pad: 0,
        },),
        &mut entropy,
    )
    .unwrap();
    assert_eq!(s.components[0].refs, vec![Some(authored(6))]);
    let first = tx(vec![TxCommand::Create { spawn: s.clone() }]);
    w.transact(&first).unwrap();
    let spawned = w.entity_of(&s.id).unwrap();
    let aim = Enemy {
        target: spawned,
        speed: 4,
        _pad: 0,
    };
    let second = tx(vec![TxCommand::Update {
        id: authored(2),
        components: vec![ComponentValue::of(&w, &aim).unwrap()],
    }]);
    w.transact(&second).unwrap();
    let log = ReplayLog {
        format: REPLAY_FORMAT.into(),
        version: 1,
        entries: vec![
            ReplayEntry {
                tick: 1,
                transaction: first,
            },
            ReplayEntry {
                tick: 2,
                transaction: second,
            },
        ],
    };
    // A fresh world loads the same level (at other slots) and replays the log.
    let mut fresh = level(64);
    fresh.spawn((Hp { hp: 1 },)).unwrap();
    let f = restore_world(&ring(8), instance(0), &mut fresh)
        .unwrap()
        .entities;
    fresh.set_parent(f[1], Some(f[0])).unwrap();
    fresh.set_parent(f[2], Some(f[0])).unwrap();
    fresh.replay(&log).unwrap();
    let fresh_spawned = fresh.entity_of(&s.id).unwrap();
    assert_eq!(fresh.enemy.get(fresh_spawned).unwrap().target, f[6]);
    assert_eq!(fresh.enemy.get(f[2]).unwrap().target, fresh_spawned);
    assert_eq!(
        fresh.checkpoint_digest().unwrap(),
        w.checkpoint_digest().unwrap()
    );
}

#[test]
fn a_checkpoint_restore_brings_back_level_entities_with_their_bindings() {
    let before_load = level(64).checkpoint().unwrap();
    let (mut w, e) = loaded();
    let mut entropy = SeqEntropy::new(0x2e);
    let s = PreparedSpawn::prepare_in(
        &w,
        (Enemy {
            target: e[0],
            speed: 1,
            _pad: 0,
        },),
        &mut entropy,
    )
    .unwrap();
    w.transact(&tx(vec![TxCommand::Create { spawn: s.clone() }]))
        .unwrap();
    w.set_protected(e[0], true).unwrap();
    let cp = w.checkpoint().unwrap();
    let record = save_world_bytes(&w, instance(0), SCHEMA, document()).unwrap();
    // Into a fresh world: bound, named, linked, protected, referenced as before; the record
    // it saves is the same bytes.
    let json = serde_json::to_string(&cp).unwrap();
    let mut fresh = level(64);
    fresh.spawn((Hp { hp: 1 },)).unwrap();
    fresh
        .restore(&serde_json::from_str(&json).unwrap())
        .unwrap();
    assert_eq!(fresh.checkpoint().unwrap(), cp);
    let at = |w: &Level, n: u64| {
        w.resolve(&PersistentObjectKey::new(instance(0), object(n)))
            .entity()
            .unwrap()
    };
    assert!(fresh.is_protected(at(&fresh, 0)));
    assert_eq!(fresh.parent(at(&fresh, 2)).unwrap(), Some(at(&fresh, 0)));
    let target = fresh.enemy.get(fresh.entity_of(&s.id).unwrap()).unwrap();
    assert_eq!(target.target, at(&fresh, 0));
    assert_eq!(
        save_world_bytes(&fresh, instance(0), SCHEMA, document()).unwrap(),
        record
    );
    // Onto the world itself: the protected root is replaced by itself, protected.
    w.restore(&cp).unwrap();
    assert_eq!(w.checkpoint().unwrap(), cp);
    assert!(!w.registry.is_alive(e[0]), "restored entities are fresh");
    // A checkpoint without the protected root would take it away: refused, nothing changes.
    let digest = w.checkpoint_digest().unwrap();
    assert!(matches!(
        w.restore(&before_load),
        Err(CheckpointError::World(DurableError::World(
            WorldError::Protected
        )))
    ));
    assert_eq!(w.checkpoint_digest().unwrap(), digest);
    // Unprotected, the checkpoint from before the load unloads the level.
    w.set_protected(at(&w, 0), false).unwrap();
    w.restore(&before_load).unwrap();
    assert!(w.durable().bindings().is_empty());
    assert_eq!(w.registry.len(), 0);
}

/// An edit of a checkpoint.
type Edit = Box<dyn Fn(&mut ludus::durable::Checkpoint)>;

#[test]
fn a_checkpoint_refuses_bindings_it_cannot_restore() {
    let (w, _) = loaded();
    let good = w.checkpoint().unwrap();
    let mut fresh = level(64);
    let cases: Vec<(&str, Edit)> = vec![
        (
            "an authored entity without its binding",
            Box::new(|cp| cp.entities[0].binding = None),
        ),
        (
            "a binding under another key",
            Box::new(|cp| {
                cp.entities[0].binding.as_mut().unwrap().key.object = object(99);
            }),
        ),
        (
            "a protected child",
            Box::new(|cp| {
                let child = cp.entities.iter().position(|e| e.parent.is_some()).unwrap();
                cp.entities[child].protected = true;
            }),
        ),
    ];
    for (what, edit) in cases {
        let mut cp = good.clone();
        edit(&mut cp);
        assert!(
            matches!(fresh.restore(&cp), Err(CheckpointError::Binding { .. })),
            "{what}"
        );
        assert_eq!(fresh.registry.len(), 0, "{what}");
    }
    // More bindings than the table holds: refused before anything changes.
    let mut small = Level::try_new_durable(
        64,
        DurableConfig {
            bindings: 4,
            name_bytes: 4096,
            ..DurableConfig::default()
        },
    )
    .unwrap();
    small.begin_structural();
    assert!(matches!(
        small.restore(&good),
        Err(CheckpointError::World(DurableError::Activation(_)))
    ));
    assert_eq!(small.registry.len(), 0);
}

/// A spawned entity that is also bound answers to both ids: a transaction that deletes it
/// through one and then names it through the other is refused whole.
#[test]
fn an_entity_with_two_ids_is_one_entity_to_a_transaction() {
    let mut w = level(16);
    let mut entropy = SeqEntropy::new(0x71d);
    let s = PreparedSpawn::prepare_in(&w, (Hp { hp: 1 },), &mut entropy).unwrap();
    w.transact(&tx(vec![TxCommand::Create { spawn: s.clone() }]))
        .unwrap();
    let e = w.entity_of(&s.id).unwrap();
    let key = PersistentObjectKey::new(instance(5), object(5));
    w.activate(&[Activation::new(e, key)]).unwrap();
    let by_key = PersistentId::Authored(bytemuck::cast(key));
    assert_eq!(w.entity_of(&by_key), Some(e));
    assert_eq!(
        w.stable_id(e),
        Some(s.id),
        "the spawned id stays its identity"
    );
    let digest = w.checkpoint_digest().unwrap();
    let hp = ComponentValue::of(&w, &Hp { hp: 2 }).unwrap();
    for commands in [
        vec![
            TxCommand::Delete { id: s.id },
            TxCommand::Update {
                id: by_key,
                components: vec![hp.clone()],
            },
        ],
        vec![
            TxCommand::Delete { id: by_key },
            TxCommand::Delete { id: s.id },
        ],
    ] {
        let r = w.transact(&tx(commands));
        assert!(
            matches!(r, Err(ludus::durable::TxError::Command { index: 1, .. })),
            "{r:?}"
        );
        assert_eq!(w.checkpoint_digest().unwrap(), digest, "nothing applied");
        assert!(w.registry.is_alive(e));
    }
    // Through either id alone, it is one entity.
    w.transact(&tx(vec![TxCommand::Update {
        id: by_key,
        components: vec![hp],
    }]))
    .unwrap();
    assert_eq!(w.hp.get(e), Some(&Hp { hp: 2 }));
}
