//! Persistent spawn, transactions, checkpoints and restore against a model: seeded random
//! walks (stable id → component bytes, protection), predicting each refusal and comparing full
//! snapshots around every failed step; and what a panic in a hand-written roster's code leaves
//! behind (settled by the next persistent operation). Safe code only: not built under Miri (the
//! `mod` line in `main.rs`).

use std::collections::{BTreeMap, HashMap, HashSet};

use ludus::durable::{
    Checkpoint, CheckpointError, ComponentValue, HexBytes, PreparedSpawn, Transaction, TxCommand,
    TxError, TxRejection, IDENTITY_COMPONENT,
};
use ludus::identity::test_entropy::SeqEntropy;
use ludus::identity::PersistentId;
use ludus::prelude::*;

use crate::sim::{as_binding_key, authored_entity, durable_sim, hp_value, Hp, Pos, Sim};
use crate::support::Rng;

const NAMES: [&str; 2] = ["pos", "hp"];
const SIZES: [usize; 2] = [8, 4];

fn sim(capacity: usize) -> Sim {
    durable_sim(capacity, 512)
}

type Comps = [Option<Vec<u8>>; 2];

#[derive(Clone, Default)]
struct Model {
    ents: BTreeMap<PersistentId, Comps>,
    protected: HashSet<PersistentId>,
}

fn snap(w: &Sim, transient: &[EntityId], dead: &[EntityId]) -> String {
    let mut s = String::new();
    s += &format!("{:x?}\n", w.checkpoint_digest());
    s += &w.counts().to_json();
    s += &format!(
        "\nrev {} seq {} brev {} len {}\n",
        w.registry.structural_revision(),
        w.registry.last_sequence(),
        w.binding_revision(),
        w.registry.len()
    );
    for e in w.checkpoint().map(|c| c.entities).unwrap_or_default() {
        let h = w.entity_of(&e.id).unwrap();
        s += &format!(
            "{:?} {:?} parent {:?} kids {:?} name {:?} prot {}\n",
            e.id,
            h,
            w.parent(h),
            w.children(h).collect::<Vec<_>>(),
            w.name(h),
            w.is_protected(h)
        );
    }
    for &t in transient {
        s += &format!(
            "t {:?} {} {:?} {:?}\n",
            t,
            w.registry.is_alive(t),
            w.get::<Pos>(t),
            w.parent(t)
        );
    }
    for &d in dead {
        s += &format!("d {:?} {}\n", d, w.registry.is_alive(d));
    }
    for r in w.outliner() {
        s += &format!("o {:?} {} {:?} {}\n", r.entity, r.depth, r.key, r.name);
    }
    s
}

/// Whether an entity with a stable id has a parent without one: no checkpoint can name it.
fn transient_parent(w: &Sim, m: &Model) -> bool {
    m.ents.keys().any(|id| {
        w.entity_of(id)
            .and_then(|e| w.parent(e).ok().flatten())
            .is_some_and(|p| w.stable_id(p).is_none())
    })
}

fn check_model(w: &Sim, m: &Model, dead: &[EntityId]) {
    w.check_identity_invariant().unwrap();
    if transient_parent(w, m) {
        assert!(matches!(
            w.checkpoint(),
            Err(CheckpointError::UnidentifiedParent { .. })
        ));
        assert!(w.checkpoint_bytes().is_err() && w.checkpoint_digest().is_err());
        return;
    }
    let cp = w.checkpoint().unwrap();
    assert_eq!(cp.entities.len(), m.ents.len(), "stable entity count");
    assert_eq!(w.checkpoint_bytes().unwrap(), cp.canonical_bytes());
    assert_eq!(w.checkpoint_digest().unwrap(), cp.digest());
    for (id, comps) in &m.ents {
        let e = w.entity_of(id).expect("model id resolves");
        assert!(w.registry.is_alive(e));
        assert_eq!(w.stable_id(e), Some(*id));
        let pos = w.get::<Pos>(e).map(|v| bytemuck::bytes_of(v).to_vec());
        let hp = w.get::<Hp>(e).map(|v| bytemuck::bytes_of(v).to_vec());
        assert_eq!(&[pos, hp], comps, "components of {id}");
        assert_eq!(w.is_protected(e), m.protected.contains(id));
    }
    let rows: HashSet<EntityId> = w.outliner().map(|r| r.entity).collect();
    for id in m.ents.keys() {
        assert!(
            rows.contains(&w.entity_of(id).unwrap()),
            "outliner lists {id}"
        );
    }
    for r in w.outliner() {
        assert!(w.registry.is_alive(r.entity));
    }
    for &d in dead {
        assert!(!w.registry.is_alive(d));
        assert_eq!(w.stable_id(d), None);
        assert!(w.get::<Hp>(d).is_none());
    }
}

fn value(rng: &mut Rng, k: usize) -> Vec<u8> {
    (0..SIZES[k]).map(|_| rng.next() as u8).collect()
}

fn random_components(rng: &mut Rng, bad: bool) -> Vec<ComponentValue> {
    let mut v = Vec::new();
    for (k, name) in NAMES.iter().enumerate() {
        if rng.chance(60) {
            v.push(ComponentValue {
                component: (*name).into(),
                bytes: HexBytes::from(value(rng, k)),
                refs: Vec::new(),
            });
        }
    }
    if rng.chance(50) {
        v.reverse();
    }
    if bad {
        match rng.below(4) {
            0 => v.push(ComponentValue {
                component: IDENTITY_COMPONENT.into(),
                bytes: HexBytes::from(vec![0; 33]),
                refs: Vec::new(),
            }),
            1 => v.push(ComponentValue {
                component: "nope".into(),
                bytes: HexBytes::from(vec![]),
                refs: Vec::new(),
            }),
            2 => v.push(ComponentValue {
                component: "hp".into(),
                bytes: HexBytes::from(vec![1, 2, 3]),
                refs: Vec::new(),
            }),
            _ => {
                v.push(ComponentValue {
                    component: "pos".into(),
                    bytes: HexBytes::from(vec![0; 8]),
                    refs: Vec::new(),
                });
                v.push(ComponentValue {
                    component: "pos".into(),
                    bytes: HexBytes::from(vec![0; 8]),
                    refs: Vec::new(),
                });
            }
        }
    }
    v
}

fn check_components(cs: &[ComponentValue]) -> Result<(), TxRejection> {
    for (i, c) in cs.iter().enumerate() {
        if c.component == IDENTITY_COMPONENT {
            return Err(TxRejection::IdentityOverride);
        }
        let Some(k) = NAMES.iter().position(|n| *n == c.component) else {
            return Err(TxRejection::UnknownComponent(c.component.to_string()));
        };
        if SIZES[k] != c.bytes.len() {
            return Err(TxRejection::ComponentSize {
                component: c.component.to_string(),
                expected: SIZES[k],
                found: c.bytes.len(),
            });
        }
        if cs[..i].iter().any(|d| d.component == c.component) {
            return Err(TxRejection::RepeatedComponent(c.component.to_string()));
        }
    }
    Ok(())
}

/// The documented validation, on the model: Ok, a command refusal, or "capacity".
fn predict(
    m: &Model,
    tx: &Transaction,
    capacity: usize,
    transient: usize,
) -> Result<(), Option<TxError>> {
    let mut sim: HashMap<PersistentId, bool> = HashMap::new();
    let live = |sim: &HashMap<PersistentId, bool>, id: &PersistentId| {
        sim.get(id)
            .copied()
            .unwrap_or_else(|| m.ents.contains_key(id))
    };
    let mut room = capacity - transient - m.ents.len();
    for (index, c) in tx.commands.iter().enumerate() {
        let refuse = |reason| Err(Some(TxError::Command { index, reason }));
        match c {
            TxCommand::Create { spawn } => {
                if !spawn.id.is_spawned() {
                    return refuse(TxRejection::NotSpawned(spawn.id));
                }
                let taken = match sim.get(&spawn.id) {
                    Some(l) => *l,
                    None => m.ents.keys().any(|k| k.key_bytes() == spawn.id.key_bytes()),
                };
                if taken {
                    return refuse(TxRejection::LiveId(spawn.id));
                }
                if let Err(r) = check_components(&spawn.components) {
                    return refuse(r);
                }
                if room == 0 {
                    return Err(None);
                }
                room -= 1;
                sim.insert(spawn.id, true);
            }
            TxCommand::Update { id, components } => {
                if !live(&sim, id) {
                    return refuse(TxRejection::UnknownId(*id));
                }
                if let Err(r) = check_components(components) {
                    return refuse(r);
                }
            }
            TxCommand::Remove { id, component } => {
                if !live(&sim, id) {
                    return refuse(TxRejection::UnknownId(*id));
                }
                if component == IDENTITY_COMPONENT {
                    return refuse(TxRejection::IdentityOverride);
                }
                if !NAMES.contains(&component.as_str()) {
                    return refuse(TxRejection::UnknownComponent(component.clone()));
                }
            }
            TxCommand::Delete { id } => {
                if !live(&sim, id) {
                    return refuse(TxRejection::UnknownId(*id));
                }
                if m.protected.contains(id) {
                    return refuse(TxRejection::Protected(*id));
                }
                if !sim.contains_key(id) {
                    room += 1;
                }
                sim.insert(*id, false);
            }
        }
    }
    Ok(())
}

fn apply_model(m: &mut Model, tx: &Transaction) {
    for c in &tx.commands {
        match c {
            TxCommand::Create { spawn } => {
                let mut comps: Comps = [None, None];
                for v in &spawn.components {
                    let k = NAMES.iter().position(|n| *n == v.component).unwrap();
                    comps[k] = Some(v.bytes.to_vec());
                }
                m.ents.insert(spawn.id, comps);
            }
            TxCommand::Update { id, components } => {
                let e = m.ents.get_mut(id).unwrap();
                for v in components {
                    let k = NAMES.iter().position(|n| *n == v.component).unwrap();
                    e[k] = Some(v.bytes.to_vec());
                }
            }
            TxCommand::Remove { id, component } => {
                let k = NAMES.iter().position(|n| *n == component).unwrap();
                m.ents.get_mut(id).unwrap()[k] = None;
            }
            TxCommand::Delete { id } => {
                m.ents.remove(id);
                m.protected.remove(id);
            }
        }
    }
}

fn pick_id(rng: &mut Rng, m: &Model, history: &[PersistentId]) -> PersistentId {
    if !m.ents.is_empty() && rng.chance(75) {
        *m.ents.keys().nth(rng.below(m.ents.len())).unwrap()
    } else if !history.is_empty() {
        history[rng.below(history.len())]
    } else {
        PersistentId::mint_spawned(&mut SeqEntropy::new(rng.next())).unwrap()
    }
}

fn walk(seed: u64, steps: usize, capacity: usize) {
    let mut rng = Rng(seed | 1);
    let mut entropy = SeqEntropy::new(seed);
    let mut w = sim(capacity);
    let mut m = Model::default();
    let mut transient: Vec<EntityId> = Vec::new();
    let mut dead: Vec<EntityId> = Vec::new();
    let mut prepared: Vec<PreparedSpawn> = Vec::new();
    let mut history: Vec<PersistentId> = Vec::new();
    let mut saved: Vec<(Checkpoint, Vec<u8>, Model)> = Vec::new();
    let mut tickets = Vec::new();
    for step in 0..steps {
        let before = snap(&w, &transient, &dead);
        let op = rng.below(100);
        let ctx = format!("seed {seed} step {step} op {op}");
        let failed: bool;
        if op < 45 {
            // A transaction.
            let n = 1 + rng.below(6);
            let all_creates = rng.chance(30);
            let mut commands = Vec::new();
            for _ in 0..n {
                let bad = rng.chance(5);
                let kind = if all_creates { 0 } else { rng.below(4) };
                commands.push(match kind {
                    0 => {
                        let spawn = if !prepared.is_empty() && rng.chance(20) {
                            prepared[rng.below(prepared.len())].clone()
                        } else {
                            let cs = random_components(&mut rng, false);
                            let p =
                                PreparedSpawn::prepare_values::<Sim, _>(cs, &mut entropy).unwrap();
                            prepared.push(p.clone());
                            p
                        };
                        let mut spawn = spawn;
                        if bad {
                            spawn.components = random_components(&mut rng, true);
                        }
                        TxCommand::Create { spawn }
                    }
                    1 => TxCommand::Update {
                        id: pick_id(&mut rng, &m, &history),
                        components: random_components(&mut rng, bad),
                    },
                    2 => TxCommand::Remove {
                        id: pick_id(&mut rng, &m, &history),
                        component: if bad {
                            IDENTITY_COMPONENT.into()
                        } else {
                            NAMES[rng.below(2)].into()
                        },
                    },
                    _ => TxCommand::Delete {
                        id: pick_id(&mut rng, &m, &history),
                    },
                });
            }
            let tx = Transaction {
                label: format!("{step}"),
                commands,
            };
            let expected = predict(&m, &tx, capacity, transient.len());
            let got = w.transact(&tx);
            match (&expected, &got) {
                (Ok(()), Ok(_)) => {
                    apply_model(&mut m, &tx);
                    for c in &tx.commands {
                        if let TxCommand::Create { spawn } = c {
                            history.push(spawn.id);
                        }
                    }
                    failed = false;
                }
                (Err(Some(e)), Err(g)) => {
                    assert_eq!(e, g, "{ctx}: {tx:?}");
                    failed = true;
                }
                (
                    Err(None),
                    Err(TxError::World(DurableError::World(WorldError::CapacityExhausted {
                        ..
                    }))),
                ) => failed = true,
                _ => panic!("{ctx}: expected {expected:?}, got {got:?}\n{tx:?}"),
            }
            // Handles of deleted entities are stale now.
            dead.retain(|d| !w.registry.is_alive(*d));
        } else if op < 52 {
            // Checkpoint: refused while a stable entity has a parent without a stable id.
            if transient_parent(&w, &m) {
                assert!(w.checkpoint().is_err(), "{ctx}");
                failed = true;
            } else {
                let cp = w.checkpoint().unwrap();
                let bytes = w.checkpoint_bytes().unwrap();
                assert_eq!(cp.canonical_bytes(), bytes, "{ctx}");
                // Serde round trip.
                let json = serde_json::to_string(&cp).unwrap();
                let back: Checkpoint = serde_json::from_str(&json).unwrap();
                assert_eq!(back, cp);
                saved.push((cp, bytes, m.clone()));
                failed = false;
            }
        } else if op < 62 && !saved.is_empty() {
            // Restore a saved checkpoint (sometimes with an authored entity added).
            let (mut cp, mut bytes, mut sm) = saved[rng.below(saved.len())].clone();
            if rng.chance(30) {
                let mut d = [0u8; 32];
                d.iter_mut().for_each(|b| *b = rng.next() as u8);
                let comps = random_components(&mut rng, false);
                let e = authored_entity(as_binding_key(d), comps.clone());
                let id = e.id;
                let at = cp.entities.partition_point(|x| x.id < id);
                cp.entities.insert(at, e);
                let mut c: Comps = [None, None];
                for v in &comps {
                    let k = NAMES.iter().position(|n| *n == v.component).unwrap();
                    c[k] = Some(v.bytes.to_vec());
                }
                sm.ents.insert(id, c);
                bytes = cp.canonical_bytes();
            }
            let old_handles: Vec<EntityId> =
                m.ents.keys().map(|id| w.entity_of(id).unwrap()).collect();
            let fits = cp.entities.len() + transient.len() <= capacity;
            let r = w.restore(&cp);
            // A protected entity is replaced only by the same id, protected in the checkpoint.
            if m.protected.iter().any(|id| !sm.protected.contains(id)) {
                assert!(
                    matches!(
                        r,
                        Err(CheckpointError::World(DurableError::World(
                            WorldError::Protected
                        )))
                    ) || (!fits && r.is_err()),
                    "{ctx}: {r:?}"
                );
                failed = true;
            } else if !fits {
                assert!(r.is_err(), "{ctx}: {r:?}");
                failed = true;
            } else {
                r.unwrap_or_else(|e| panic!("{ctx}: {e:?}"));
                assert_eq!(w.checkpoint_bytes().unwrap(), bytes, "{ctx}: round trip");
                m = sm;
                for h in old_handles {
                    assert!(
                        !w.registry.is_alive(h),
                        "{ctx}: old handle survived restore"
                    );
                    dead.push(h);
                }
                failed = false;
            }
        } else if op < 68 && !saved.is_empty() {
            // A corrupted checkpoint: refused, nothing changes.
            let (mut cp, ..) = saved[rng.below(saved.len())].clone();
            let n = cp.entities.len();
            let corrupted = match rng.below(7) {
                0 if n >= 2 => {
                    cp.entities.swap(0, 1);
                    true
                }
                1 if n >= 1 => {
                    let i = rng.below(n);
                    cp.entities[i].identity = None;
                    cp.entities[i].id.is_spawned()
                }
                2 if n >= 1 => {
                    let i = rng.below(n);
                    cp.entities[i].identity =
                        Some(PersistentId::mint_spawned(&mut SeqEntropy::new(rng.next())).unwrap());
                    true
                }
                3 if n >= 1 => {
                    let i = rng.below(n);
                    cp.entities[i].components.push(ComponentValue {
                        component: "hp".into(),
                        bytes: HexBytes::from(vec![9; 5]),
                        refs: Vec::new(),
                    });
                    true
                }
                4 if n >= 1 => {
                    let i = rng.below(n);
                    let dup = cp.entities[i].clone();
                    cp.entities.insert(i, dup);
                    true
                }
                5 => {
                    cp.version = 1;
                    true
                }
                6 if n >= 1 => {
                    let i = rng.below(n);
                    cp.entities[i].components.push(ComponentValue {
                        component: IDENTITY_COMPONENT.into(),
                        bytes: HexBytes::from(vec![]),
                        refs: Vec::new(),
                    });
                    true
                }
                _ => false,
            };
            if corrupted {
                let r = w.restore(&cp);
                assert!(r.is_err(), "{ctx}: corrupted checkpoint accepted");
                failed = true;
            } else {
                failed = false;
            }
        } else if op < 73 && !m.ents.is_empty() {
            // Protect or unprotect.
            let id = *m.ents.keys().nth(rng.below(m.ents.len())).unwrap();
            let e = w.entity_of(&id).unwrap();
            let on = rng.chance(60);
            match w.set_protected(e, on) {
                Ok(()) => {
                    if on {
                        m.protected.insert(id);
                    } else {
                        m.protected.remove(&id);
                    }
                    failed = false;
                }
                Err(_) => failed = true,
            }
        } else if op < 80 {
            // Reparent among live entities.
            let mut live: Vec<EntityId> =
                m.ents.keys().map(|id| w.entity_of(id).unwrap()).collect();
            live.extend(&transient);
            if live.len() >= 2 {
                let c = live[rng.below(live.len())];
                let p = if rng.chance(25) {
                    None
                } else {
                    Some(live[rng.below(live.len())])
                };
                if rng.chance(30) {
                    failed = w.set_name(c, &format!("n{step}")).is_err();
                } else {
                    failed = w.set_parent(c, p).is_err();
                }
            } else {
                failed = false;
            }
        } else if op < 86 {
            // Transient spawn or destroy.
            if transient.is_empty() || rng.chance(55) {
                match w.spawn((Pos {
                    x: step as f32,
                    y: 0.0,
                },))
                {
                    Ok(e) => {
                        transient.push(e);
                        failed = false;
                    }
                    Err(_) => {
                        assert!(transient.len() + m.ents.len() == capacity, "{ctx}");
                        failed = true;
                    }
                }
            } else {
                let i = rng.below(transient.len());
                let e = transient[i];
                match w.destroy(e) {
                    Ok(()) => {
                        transient.swap_remove(i);
                        dead.push(e);
                        failed = false;
                    }
                    Err(_) => failed = true, // protected
                }
            }
        } else if op < 90 && !m.ents.is_empty() {
            // Direct destroy of a stable entity.
            let id = *m.ents.keys().nth(rng.below(m.ents.len())).unwrap();
            let e = w.entity_of(&id).unwrap();
            match w.destroy(e) {
                Ok(()) => {
                    assert!(!m.protected.contains(&id), "{ctx}");
                    m.ents.remove(&id);
                    dead.push(e);
                    failed = false;
                }
                Err(err) => {
                    assert_eq!(err, WorldError::Protected, "{ctx}");
                    failed = true;
                }
            }
        } else if op < 94 {
            // Stale handles are refused and change nothing.
            if !dead.is_empty() {
                let d = dead[rng.below(dead.len())];
                assert!(w.destroy(d).is_err(), "{ctx}");
                assert!(w.set_parent(d, None).is_err(), "{ctx}");
                assert!(w.issue_ticket(d).is_err(), "{ctx}");
            }
            failed = true;
        } else if op < 97 {
            // Outside the structural phase: refused whole.
            w.end_structural();
            let p = PreparedSpawn::prepare_values::<Sim, _>(vec![], &mut entropy).unwrap();
            let r = w.transact(&Transaction {
                label: String::new(),
                commands: vec![TxCommand::Create { spawn: p }],
            });
            assert!(r.is_err(), "{ctx}");
            if let Some((cp, ..)) = saved.last() {
                assert!(w.restore(cp).is_err(), "{ctx}");
            }
            w.begin_structural();
            failed = true;
        } else {
            // Tickets.
            if let Some(id) = m.ents.keys().next().copied() {
                let e = w.entity_of(&id).unwrap();
                tickets.push((w.issue_ticket(e).unwrap(), id));
            }
            failed = false;
        }
        if failed {
            assert_eq!(
                before,
                snap(&w, &transient, &dead),
                "{ctx}: failed op changed state"
            );
        }
        check_model(&w, &m, &dead);
        transient.retain(|t| w.registry.is_alive(*t));
        // A ticket whose entity is gone is refused.
        for (t, id) in &tickets {
            if w.entity_of(id) != Some(t.entity) {
                assert!(!w.registry.is_alive(t.entity) || w.stable_id(t.entity) != Some(*id));
            }
        }
    }
}

#[test]
fn random_walk_small() {
    for seed in 1..40u64 {
        walk(seed * 0x9e37_79b9, 400, 10);
    }
}

#[test]
fn random_walk_larger() {
    for seed in 1..6u64 {
        walk(seed * 0x1234_5678_9abc, 1500, 48);
    }
}

/// A hand-written roster over a `Sim` whose `hooked_parts` panics at call `panic_at`.
struct Panicky {
    inner: Sim,
    calls: u32,
    panic_at: u32,
}

impl ludus::durable::DurableRoster for Panicky {
    type Refs = <Sim as ludus::durable::DurableRoster>::Refs;
}

impl ludus::world::roster::Roster for Panicky {
    type Alloc = ludus::world::__private::Global;
    type Components = <Sim as ludus::world::roster::Roster>::Components;
    type Groups = <Sim as ludus::world::roster::Roster>::Groups;
    type Hooks = ludus::durable::Durable;
    const NAMES: &'static [&'static str] = <Sim as ludus::world::roster::Roster>::NAMES;
    fn hooked_parts(&mut self) -> ludus::world::roster::HookedParts<'_, Self> {
        self.calls += 1;
        if self.calls == self.panic_at {
            panic!("roster panicked at call {}", self.calls);
        }
        self.inner.hooked_parts()
    }
    fn parts_ref(&self) -> ludus::world::roster::PartsRef<'_, Self> {
        self.inner.parts_ref()
    }
    fn hooks(&self) -> &Self::Hooks {
        self.inner.durable()
    }
}

/// A panic inside a transaction (a hand-written roster's `hooked_parts`, at each of its
/// calls, on the batched and the general path) may stop it part way, but the world stays
/// consistent: the next transaction settles what was left reserved, the identity invariant
/// holds, an id the retry reports live is bound, and fresh ids bind.
#[test]
fn a_panic_inside_transact_leaves_the_world_consistent() {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    let mut entropy = SeqEntropy::new(77);
    for all_creates in [true, false] {
        for panic_at in 1..12u32 {
            let ctx = format!("all_creates={all_creates} panic_at={panic_at}");
            let mut p = Panicky {
                inner: sim(8),
                calls: 0,
                panic_at: u32::MAX,
            };
            let a =
                PreparedSpawn::prepare_values::<Sim, _>(vec![hp_value(1)], &mut entropy).unwrap();
            p.inner
                .transact(&Transaction {
                    label: "setup".into(),
                    commands: vec![TxCommand::Create { spawn: a.clone() }],
                })
                .unwrap();
            let b =
                PreparedSpawn::prepare_values::<Sim, _>(vec![hp_value(2)], &mut entropy).unwrap();
            let c =
                PreparedSpawn::prepare_values::<Sim, _>(vec![hp_value(3)], &mut entropy).unwrap();
            let mut commands = vec![
                TxCommand::Create { spawn: b.clone() },
                TxCommand::Create { spawn: c.clone() },
            ];
            if !all_creates {
                commands.push(TxCommand::Update {
                    id: a.id,
                    components: vec![hp_value(9)],
                });
            }
            let tx = Transaction {
                label: "t".into(),
                commands,
            };
            p.panic_at = panic_at;
            let _ = catch_unwind(AssertUnwindSafe(|| p.transact(&tx)));
            let w = &mut p.inner;
            match w.transact(&tx) {
                Ok(_) => {
                    assert!(
                        w.entity_of(&b.id).is_some() && w.entity_of(&c.id).is_some(),
                        "{ctx}"
                    );
                }
                Err(TxError::Command {
                    reason: TxRejection::LiveId(id),
                    ..
                }) => assert!(w.entity_of(&id).is_some(), "{ctx}: {id:?} refused as live"),
                Err(e) => panic!("{ctx}: retry {e:?}"),
            }
            assert!(w.check_identity_invariant().is_ok(), "{ctx}");
            let d =
                PreparedSpawn::prepare_values::<Sim, _>(vec![hp_value(4)], &mut entropy).unwrap();
            let fresh = w.transact(&Transaction {
                label: "fresh".into(),
                commands: vec![TxCommand::Create { spawn: d.clone() }],
            });
            assert!(fresh.is_ok(), "{ctx}: {fresh:?}");
            let bound = [&a, &b, &c, &d]
                .iter()
                .filter(|s| w.entity_of(&s.id).is_some())
                .count();
            assert_eq!(w.checkpoint().unwrap().entities.len(), bound, "{ctx}");
            assert!(w.check_identity_invariant().is_ok(), "{ctx}");
        }
    }
}

/// A panic in the batched-create path after its ids were reserved: the next transaction
/// settles the reservations and succeeds (left unsettled, every later transaction would create
/// an entity, fail to bind its id and return `ForeignPool` with the entity left behind).
#[test]
fn a_later_transaction_settles_the_reservations_a_panic_left() {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    let mut entropy = SeqEntropy::new(5);
    let mut p = Panicky {
        inner: sim(8),
        calls: 0,
        panic_at: 4, // `create_batch`'s `parts()` inside `transact_creates`
    };
    let b = PreparedSpawn::prepare_values::<Sim, _>(vec![hp_value(2)], &mut entropy).unwrap();
    let tx = Transaction {
        label: "t".into(),
        commands: vec![TxCommand::Create { spawn: b.clone() }],
    };
    assert!(catch_unwind(AssertUnwindSafe(|| p.transact(&tx))).is_err());
    let w = &mut p.inner;
    assert_eq!(
        w.registry.len(),
        0,
        "the panicking call itself left nothing"
    );
    assert!(w.transact(&tx).is_ok());
    assert_eq!(w.registry.len(), 1);
    assert!(w.entity_of(&b.id).is_some());
    assert!(w.check_identity_invariant().is_ok());
}

/// The same leftover reservation must not make a later `restore` destroy the current stable
/// entities and then fail: the restore settles it and succeeds.
#[test]
fn a_later_restore_settles_the_reservations_a_panic_left() {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    let mut entropy = SeqEntropy::new(6);
    let a = PreparedSpawn::prepare_values::<Sim, _>(vec![hp_value(1)], &mut entropy).unwrap();
    let b = PreparedSpawn::prepare_values::<Sim, _>(vec![hp_value(2)], &mut entropy).unwrap();
    // The checkpoint to restore later: a world holding b.
    let mut other = sim(8);
    other
        .transact(&Transaction {
            label: String::new(),
            commands: vec![TxCommand::Create { spawn: b.clone() }],
        })
        .unwrap();
    let cp = other.checkpoint().unwrap();
    let mut p = Panicky {
        inner: sim(8),
        calls: 0,
        panic_at: u32::MAX,
    };
    p.inner
        .transact(&Transaction {
            label: String::new(),
            commands: vec![TxCommand::Create { spawn: a.clone() }],
        })
        .unwrap();
    p.panic_at = 4;
    let tx = Transaction {
        label: String::new(),
        commands: vec![TxCommand::Create { spawn: b.clone() }],
    };
    assert!(catch_unwind(AssertUnwindSafe(|| p.transact(&tx))).is_err());
    let w = &mut p.inner;
    w.restore(&cp).unwrap();
    assert!(w.entity_of(&a.id).is_none());
    assert!(w.entity_of(&b.id).is_some());
    assert_eq!(w.checkpoint_digest().unwrap(), cp.digest());
    assert!(w.check_identity_invariant().is_ok());
}

/// An authored entity without an identity record restores; the world's own checkpoint then
/// carries the record, so only from there on do the bytes round-trip (`docs/persistent.md`).
#[test]
fn an_authored_entity_without_identity_restores_and_then_round_trips() {
    let mut e = authored_entity(as_binding_key([7; 32]), vec![hp_value(3)]);
    e.identity = None;
    let id = e.id;
    let cp = Checkpoint {
        format: "ludus.checkpoint".into(),
        version: 4,
        schema: ludus::durable::ComponentShape::roster::<Sim>(),
        entities: vec![e],
    };
    let mut w = sim(4);
    w.restore(&cp).unwrap();
    assert_ne!(
        w.checkpoint_digest().unwrap(),
        cp.digest(),
        "the identity record's flag differs"
    );
    let own = w.checkpoint().unwrap();
    assert_eq!(own.entities[0].identity, Some(id));
    let mut v = sim(4);
    v.restore(&own).unwrap();
    assert_eq!(v.checkpoint_digest().unwrap(), own.digest());
}

/// A delete earlier in the transaction frees its own id only, and an authored id (a binding
/// key, whose object half is never nil) cannot hold a spawned id's key bytes: the two
/// namespaces never meet in one index (`docs/persistent.md`).
#[test]
fn an_authored_id_never_holds_a_spawned_ids_key_bytes() {
    let mut entropy = SeqEntropy::new(9);
    let s = PreparedSpawn::prepare_values::<Sim, _>(vec![hp_value(1)], &mut entropy).unwrap();
    let PersistentId::Spawned(u) = s.id else {
        unreachable!()
    };
    let mut key = [0u8; 32];
    key[..16].copy_from_slice(u.as_bytes());
    let mut e = authored_entity(bytemuck::cast(key), vec![]);
    let mut w = sim(4);
    let mut cp = Checkpoint {
        format: "ludus.checkpoint".into(),
        version: 4,
        schema: ludus::durable::ComponentShape::roster::<Sim>(),
        entities: vec![e.clone()],
    };
    assert!(matches!(
        w.restore(&cp),
        Err(CheckpointError::Binding { index: 0 })
    ));
    // Unbound, it is refused as well: an authored id is bound under its own bytes.
    e.binding = None;
    cp.entities[0] = e;
    assert!(matches!(
        w.restore(&cp),
        Err(CheckpointError::Binding { index: 0 })
    ));
    assert_eq!(w.registry.len(), 0);
    // A delete and a create of the same spawned id in one transaction.
    w.transact(&Transaction {
        label: String::new(),
        commands: vec![TxCommand::Create { spawn: s.clone() }],
    })
    .unwrap();
    let r = w.transact(&Transaction {
        label: String::new(),
        commands: vec![
            TxCommand::Delete { id: s.id },
            TxCommand::Create { spawn: s.clone() },
        ],
    });
    assert!(r.is_ok(), "{r:?}");
    assert!(w.entity_of(&s.id).is_some());
}
