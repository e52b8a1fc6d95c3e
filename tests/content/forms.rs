//! The whole durable state through every form that saves it: random worlds of authored
//! entities (bound under an instance: names, labels, a forest in any child order, references
//! among them) and spawned ones (prepared against the world, referencing authored and earlier
//! spawned entities, applied by logged transactions) go through a World record (both
//! readers), a level file, a checkpoint (as JSON) and the replay log, each restored into a
//! fresh world whose slots differ. The state — read here entity by entity, not through any of
//! those forms — must come back equal, references and parents included.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::*;
use ludus::content::{
    restore_level_from_slice, restore_world, restore_world_from_slice, save_level, save_world_bytes,
};
use ludus::durable::{
    Checkpoint, PreparedSpawn, ReplayEntry, ReplayLog, Transaction, TxCommand, REPLAY_FORMAT,
};
use ludus::identity::test_entropy::SeqEntropy;
use ludus::identity::{PersistentId, PersistentObjectKey};
use ludus::prelude::*;
use proptest::prelude::*;

const SCHEMA: &str = "ludus.test.v1";

/// Everything durable about one entity, by identity.
#[derive(Debug, Clone, PartialEq)]
struct EntityState {
    name: String,
    label: String,
    parent: Option<PersistentId>,
    children: Vec<PersistentId>,
    binding: Option<PersistentObjectKey>,
    pos: Option<[u32; 2]>,
    hp: Option<u32>,
    /// The target as an identity, and the speed.
    enemy: Option<(Option<PersistentId>, u32)>,
}

/// The state of every entity with a stable id, read slot by slot.
fn state(w: &Level) -> BTreeMap<PersistentId, EntityState> {
    let id = |e: EntityId| {
        w.stable_id(e)
            .expect("every live entity here has an identity")
    };
    let mut out = BTreeMap::new();
    for slot in 0..w.registry.capacity() as u32 {
        let Some(e) = w.registry.live_at(slot) else {
            continue;
        };
        let enemy = w.enemy.get(e).map(|v| {
            let target = w.registry.is_alive(v.target).then(|| id(v.target));
            (target, v.speed)
        });
        let state = EntityState {
            name: w.name(e).unwrap().to_owned(),
            label: w.label(e).unwrap().to_owned(),
            parent: w.parent(e).unwrap().map(id),
            children: w.children(e).map(id).collect(),
            binding: w.key_of(e),
            pos: w.pos.get(e).map(|p| [p.x.to_bits(), p.y.to_bits()]),
            hp: w.hp.get(e).map(|h| h.hp),
            enemy,
        };
        assert!(
            out.insert(id(e), state).is_none(),
            "one identity per entity"
        );
    }
    out
}

/// One generated entity: its components (an enemy's target by index, resolved when built).
#[derive(Debug, Clone)]
struct Spec {
    name: &'static str,
    labelled: bool,
    pos: Option<(f32, f32)>,
    hp: Option<u32>,
    enemy: Option<(Option<prop::sample::Index>, u32)>,
}

fn spec() -> impl Strategy<Value = Spec> {
    let names = prop::sample::select(vec!["", "door", "a b", "ü", "\"q\"\\", "guard-7"]);
    let finite = prop::num::f32::NORMAL | prop::num::f32::ZERO | prop::num::f32::SUBNORMAL;
    (
        names,
        any::<bool>(),
        prop::option::of((finite, finite)),
        prop::option::of(any::<u32>()),
        prop::option::of((prop::option::of(any::<prop::sample::Index>()), any::<u32>())),
    )
        .prop_map(|(name, labelled, pos, hp, enemy)| Spec {
            name,
            labelled,
            pos,
            hp,
            enemy,
        })
}

fn fresh_world() -> Level {
    let mut w = level(64);
    // Other slots than the original's: three taken, then freed (a free list out of order).
    let taken: Vec<EntityId> = (0..3).map(|_| w.spawn((Hp { hp: 0 },)).unwrap()).collect();
    for e in [taken[1], taken[0], taken[2]] {
        w.destroy(e).unwrap();
    }
    w
}

fn enemy(target: EntityId, speed: u32) -> Enemy {
    Enemy {
        target,
        speed,
        _pad: 0,
    }
}

proptest::proptest! {
    #![proptest_config(crate::support::proptest_config_unpersisted(10_000, 4))]

    #[test]
    fn the_whole_durable_state_survives_every_form(
        authored in prop::collection::vec(spec(), 0..14),
        spawned in prop::collection::vec(spec(), 0..8),
        // Per authored entity: its place in the order parents are given, and its parent among
        // the entities before it there.
        order in prop::collection::vec(any::<prop::sample::Index>(), 14),
        parents in prop::collection::vec(prop::option::of(any::<prop::sample::Index>()), 14),
        seed in any::<u64>(),
    ) {
        let mut w = level(64);
        // Authored: created, bound under instance 0, named, valued (references among them).
        let es: Vec<EntityId> = authored.iter().map(|_| w.spawn((Hp { hp: 0 },)).unwrap()).collect();
        let batch: Vec<Activation> = es
            .iter()
            .enumerate()
            .map(|(i, &e)| Activation::new(e, PersistentObjectKey::new(instance(0), object(i as u64))))
            .collect();
        w.activate(&batch).unwrap();
        for (i, (s, &e)) in authored.iter().zip(&es).enumerate() {
            w.set_name(e, s.name).unwrap();
            if s.labelled {
                w.set_label(e, &format!("l{i}")).unwrap();
            }
            match s.hp {
                Some(hp) => w.hp.get_mut(e).unwrap().hp = hp,
                None => {
                    w.remove::<Hp>(e).unwrap();
                }
            }
            if let Some((x, y)) = s.pos {
                w.insert(e, Pos { x, y }).unwrap();
            }
            if let Some((target, speed)) = &s.enemy {
                let t = target.as_ref().map_or(EntityId::NULL, |t| es[t.index(es.len())]);
                w.insert(e, enemy(t, *speed)).unwrap();
            }
        }
        // A forest: entities linked in a shuffled order, each under one linked before it.
        let mut shuffled: Vec<usize> = (0..es.len()).collect();
        for (k, ix) in order.iter().enumerate().take(es.len()) {
            shuffled.swap(k, k + ix.index(es.len() - k));
        }
        for (k, &i) in shuffled.iter().enumerate() {
            if let (Some(p), true) = (&parents[i], k > 0) {
                let parent = es[shuffled[p.index(k)]];
                w.set_parent(es[i], Some(parent)).unwrap();
            }
        }
        // Spawned: one logged transaction each, prepared against the world as it is.
        let mut entropy = SeqEntropy::new(seed);
        let mut targets = es.clone();
        let mut log = Vec::new();
        for (k, s) in spawned.iter().enumerate() {
            let target = |t: &Option<prop::sample::Index>| {
                t.as_ref().map_or(EntityId::NULL, |t| targets[t.index(targets.len().max(1))])
            };
            let prepared = match (&s.enemy, targets.is_empty()) {
                (Some((t, speed)), false) => PreparedSpawn::prepare_in(
                    &w,
                    (Hp { hp: s.hp.unwrap_or(0) }, enemy(target(t), *speed)),
                    &mut entropy,
                ),
                _ => PreparedSpawn::prepare_in(&w, (Hp { hp: s.hp.unwrap_or(0) },), &mut entropy),
            }
            .unwrap();
            let transaction = Transaction {
                label: format!("spawn {k}"),
                commands: vec![TxCommand::Create { spawn: prepared.clone() }],
            };
            w.transact(&transaction).unwrap();
            targets.push(w.entity_of(&prepared.id).unwrap());
            log.push(ReplayEntry { tick: k as u64 + 1, transaction });
        }
        let whole = state(&w);
        prop_assert_eq!(whole.len(), es.len() + spawned.len());
        let authored_only: BTreeMap<_, _> = {
            let mut a = state(&w);
            a.retain(|id, _| !id.is_spawned());
            a
        };

        // The checkpoint, through JSON, into a fresh world.
        let cp = w.checkpoint().unwrap();
        let json = serde_json::to_string(&cp).unwrap();
        let back: Checkpoint = serde_json::from_str(&json).unwrap();
        let mut from_cp = fresh_world();
        from_cp.restore(&back).unwrap();
        prop_assert_eq!(&state(&from_cp), &whole, "checkpoint");
        prop_assert_eq!(from_cp.checkpoint_digest().unwrap(), w.checkpoint_digest().unwrap());

        // The World record, through both readers: every entity gets the record's label (the
        // one it held, else the one the save derived), and saves again to the same bytes.
        let record = save_world_bytes(&w, instance(0), SCHEMA, document()).unwrap();
        let parsed = ludus::content::WorldV2::from_slice(Path::new("w.json"), &record).unwrap();
        let relabel = |mut state: BTreeMap<PersistentId, EntityState>| {
            for e in &parsed.entities {
                let key = PersistentObjectKey::new(instance(0), e.uuid);
                let id = PersistentId::Authored(bytemuck::cast(key));
                // A label that is the entity's own UUID is what save derives: not held.
                let own = e.label == e.uuid.to_string();
                state.get_mut(&id).unwrap().label = if own { String::new() } else { e.label.clone() };
            }
            state
        };
        let (whole_saved, authored_saved) = (relabel(state(&w)), relabel(authored_only.clone()));
        let mut from_tree = fresh_world();
        restore_world(&parsed, instance(0), &mut from_tree).unwrap();
        prop_assert_eq!(&state(&from_tree), &authored_saved, "record (tree reader)");
        let mut from_record = fresh_world();
        restore_world_from_slice(Path::new("w.json"), &record, instance(0), &mut from_record)
            .unwrap();
        prop_assert_eq!(&state(&from_record), &authored_saved, "record (streaming reader)");
        prop_assert_eq!(
            &save_world_bytes(&from_record, instance(0), SCHEMA, document()).unwrap(),
            &record
        );

        // The level file.
        let level_bytes = save_level(&w, instance(0)).unwrap().to_bytes();
        let mut from_level = fresh_world();
        restore_level_from_slice(Path::new("l.json"), &level_bytes, Some(instance(0)), &mut from_level)
            .unwrap();
        prop_assert_eq!(&state(&from_level), &authored_only, "level");

        // The replay log, onto the record's world: the whole state again, and the same digest.
        let log = ReplayLog { format: REPLAY_FORMAT.into(), version: 1, entries: log };
        let json = serde_json::to_string(&log).unwrap();
        from_record.replay(&serde_json::from_str(&json).unwrap()).unwrap();
        prop_assert_eq!(&state(&from_record), &whole_saved, "record + replay");
        from_record.check_identity_invariant().unwrap();
    }
}
