//! References in the durable forms: prepared spawns, transaction values, replay logs and
//! checkpoints carry the stable id of every entity a value references, never a handle. A
//! replay onto a fresh world points at that world's entities, a checkpoint restore keeps every
//! link on its restored target, and digests differ when links differ.

use bytemuck::{Pod, Zeroable};
use ludus::durable::{
    digest_hex, BindingKind, CheckpointError, ComponentValue, EntityRefs, HexBytes, PrepareError,
    PreparedSpawn, ReplayEntry, ReplayLog, Transaction, TxCommand, TxError, TxRejection,
    INLINE_VALUE_BYTES, REPLAY_FORMAT,
};
use ludus::identity::test_entropy::SeqEntropy;
use ludus::identity::PersistentId;
use ludus::prelude::*;

/// A unit with a position.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Body {
    /// x.
    pub x: f32,
}

/// Aims at another entity, or at nothing.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Aim {
    /// The target.
    pub target: EntityId,
    /// How fast the aim turns.
    pub speed: f32,
    /// Padding.
    pub _pad: u32,
}

impl EntityRefs for Aim {
    fn visit_entities(&mut self, visit: &mut dyn FnMut(&mut EntityId)) {
        visit(&mut self.target);
    }
}

ludus::world! {
    /// Bodies that aim at each other.
    pub struct Range {
        /// Bodies.
        pub body: Body,
        /// Aims.
        pub aim: Aim,
    }
    durable { entity_refs { Aim } }
}

fn range() -> Range {
    let mut w = Range::try_new_durable(16, DurableConfig::default()).unwrap();
    w.begin_structural();
    w
}

fn aim(target: EntityId) -> Aim {
    Aim {
        target,
        speed: 2.5,
        _pad: 0,
    }
}

fn tx(commands: Vec<TxCommand>) -> Transaction {
    Transaction {
        label: "test".into(),
        commands,
    }
}

fn create(spawn: PreparedSpawn) -> TxCommand {
    TxCommand::Create { spawn }
}

/// A replay log of `transactions`, at ticks 1, 2, ….
fn log_of<const N: usize>(transactions: [Transaction; N]) -> ReplayLog {
    ReplayLog {
        format: REPLAY_FORMAT.into(),
        version: 1,
        entries: (1..)
            .zip(transactions)
            .map(|(tick, transaction)| ReplayEntry { tick, transaction })
            .collect(),
    }
}

/// World `x` of the reproducer: stable A, then stable B aiming at A; returns the log of both
/// transactions and the two ids.
fn aimed(x: &mut Range) -> (ReplayLog, PersistentId, PersistentId) {
    let a =
        PreparedSpawn::prepare::<Range, _, _>((Body { x: 1.0 },), &mut SeqEntropy::new(1)).unwrap();
    let first = tx(vec![create(a.clone())]);
    x.transact(&first).unwrap();
    let target = x.entity_of(&a.id).unwrap();
    let b = PreparedSpawn::prepare_in(x, (Body { x: 2.0 }, aim(target)), &mut SeqEntropy::new(2))
        .unwrap();
    assert_eq!(b.components[1].refs, [Some(a.id)]);
    assert_eq!(
        b.components[1].bytes[..16],
        [0; 16],
        "no handle in the value"
    );
    let second = tx(vec![create(b.clone())]);
    x.transact(&second).unwrap();
    let log = log_of([first, second]);
    (log, a.id, b.id)
}

fn target_of(w: &Range, id: &PersistentId) -> EntityId {
    w.get::<Aim>(w.entity_of(id).unwrap()).unwrap().target
}

#[test]
fn a_replay_onto_a_fresh_world_points_at_its_entities() {
    let mut x = range();
    let (log, a, b) = aimed(&mut x);
    assert_eq!(target_of(&x, &b), x.entity_of(&a).unwrap());
    // Through the log's JSON, as a server records it.
    let text = serde_json::to_string(&log).unwrap();
    let log: ReplayLog = serde_json::from_str(&text).unwrap();
    let mut y = range();
    // A different slot layout: the replayed entities land on other slots.
    y.spawn((Body { x: 9.0 },)).unwrap();
    y.replay(&log).unwrap();
    let target = target_of(&y, &b);
    assert_eq!(target, y.entity_of(&a).unwrap());
    assert!(y.registry.is_alive(target));
    assert_ne!(x.entity_of(&a).unwrap().slot(), target.slot());
    assert_eq!(
        x.checkpoint_digest().unwrap(),
        y.checkpoint_digest().unwrap()
    );
}

#[test]
fn a_checkpoint_restore_keeps_every_link_on_its_restored_target() {
    let mut x = range();
    let (_, a, b) = aimed(&mut x);
    let old = x.entity_of(&a).unwrap();
    let checkpoint = x.checkpoint().unwrap();
    assert_eq!(checkpoint.canonical_bytes(), x.checkpoint_bytes().unwrap());
    let digest = x.checkpoint_digest().unwrap();
    assert_eq!(checkpoint.digest(), digest);
    x.restore(&checkpoint).unwrap();
    let target = target_of(&x, &b);
    assert_eq!(target, x.entity_of(&a).unwrap());
    assert!(x.registry.is_alive(target));
    assert!(!x.registry.is_alive(old), "the old handle is stale");
    assert_eq!(x.checkpoint_digest().unwrap(), digest);
    // Through JSON too, onto a fresh world.
    let text = serde_json::to_string(&checkpoint).unwrap();
    let mut y = range();
    y.restore(&serde_json::from_str(&text).unwrap()).unwrap();
    assert_eq!(target_of(&y, &b), y.entity_of(&a).unwrap());
    assert_eq!(y.checkpoint_digest().unwrap(), digest);
}

/// Two members and a strength: a value longer than a prepared command holds inline.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Squad {
    /// The members.
    pub members: [EntityId; 2],
    /// Strength.
    pub strength: f32,
    /// Padding.
    pub _pad: u32,
}

impl EntityRefs for Squad {
    fn visit_entities(&mut self, visit: &mut dyn FnMut(&mut EntityId)) {
        self.members.iter_mut().for_each(visit);
    }
}

ludus::world! {
    /// Bodies in squads.
    pub struct Barracks {
        /// Bodies.
        pub body: Body,
        /// Squads.
        pub squad: Squad,
    }
    durable { entity_refs { Squad } }
}

/// Values too long to be held inline take the heap form through every path a reference
/// travels: a batched create, a replay through JSON onto other slots, and a checkpoint.
#[test]
fn long_values_keep_their_references_through_batches_replays_and_checkpoints() {
    assert!(core::mem::size_of::<Squad>() > INLINE_VALUE_BYTES);
    let barracks = || {
        let mut w = Barracks::try_new_durable(16, DurableConfig::default()).unwrap();
        w.begin_structural();
        w
    };
    let mut x = barracks();
    let mut entropy = SeqEntropy::new(1);
    let bodies: Vec<PreparedSpawn> = (0..4)
        .map(|i| {
            let body = (Body { x: i as f32 },);
            PreparedSpawn::prepare::<Barracks, _, _>(body, &mut entropy).unwrap()
        })
        .collect();
    let first = tx(bodies.iter().cloned().map(create).collect());
    x.transact(&first).unwrap();
    let squads: Vec<PreparedSpawn> = (0..3)
        .map(|i| {
            let members = [&bodies[i].id, &bodies[i + 1].id].map(|id| x.entity_of(id).unwrap());
            let squad = Squad {
                members,
                strength: i as f32,
                _pad: 0,
            };
            PreparedSpawn::prepare_in(&x, (Body { x: 9.0 }, squad), &mut entropy).unwrap()
        })
        .collect();
    for (i, s) in squads.iter().enumerate() {
        let value = &s.components[1];
        assert_eq!(value.bytes.len(), core::mem::size_of::<Squad>());
        assert_eq!(value.refs, [Some(bodies[i].id), Some(bodies[i + 1].id)]);
    }
    // One transaction of three creates of one shape: the batched path.
    let second = tx(squads.iter().cloned().map(create).collect());
    x.transact(&second).unwrap();
    let check = |w: &Barracks| {
        for (i, s) in squads.iter().enumerate() {
            let squad = w.get::<Squad>(w.entity_of(&s.id).unwrap()).unwrap();
            let want = [&bodies[i].id, &bodies[i + 1].id].map(|id| w.entity_of(id).unwrap());
            assert_eq!(squad.members, want);
            assert_eq!(squad.strength, i as f32);
        }
    };
    check(&x);
    let digest = x.checkpoint_digest().unwrap();
    let log = log_of([first, second]);
    let log: ReplayLog = serde_json::from_str(&serde_json::to_string(&log).unwrap()).unwrap();
    let mut y = barracks();
    y.spawn((Body { x: -1.0 },)).unwrap();
    y.replay(&log).unwrap();
    check(&y);
    assert_ne!(
        x.entity_of(&bodies[0].id).unwrap().slot(),
        y.entity_of(&bodies[0].id).unwrap().slot()
    );
    let text = serde_json::to_string(&x.checkpoint().unwrap()).unwrap();
    let mut z = barracks();
    z.restore(&serde_json::from_str(&text).unwrap()).unwrap();
    check(&z);
    assert_eq!(z.checkpoint_digest().unwrap(), digest);
}

#[test]
fn digests_differ_when_links_differ() {
    let mut x = range();
    let (_, a, b) = aimed(&mut x);
    let linked = x.checkpoint_digest().unwrap();
    let entity_b = x.entity_of(&b).unwrap();
    // B aims at itself, then at nothing: each link gives another digest.
    x.aim.get_mut(entity_b).unwrap().target = entity_b;
    let at_self = x.checkpoint_digest().unwrap();
    x.aim.get_mut(entity_b).unwrap().target = EntityId::NULL;
    let at_none = x.checkpoint_digest().unwrap();
    assert_ne!(linked, at_self);
    assert_ne!(linked, at_none);
    assert_ne!(at_self, at_none);
    // And back: the same link, the same digest.
    x.aim.get_mut(entity_b).unwrap().target = x.entity_of(&a).unwrap();
    assert_eq!(x.checkpoint_digest().unwrap(), linked);
    // A stale handle names no entity: it reads as no target.
    let gone = x.spawn((Body { x: 0.0 },)).unwrap();
    x.destroy(gone).unwrap();
    x.aim.get_mut(entity_b).unwrap().target = gone;
    assert_eq!(x.checkpoint_digest().unwrap(), at_none);
    assert_eq!(
        x.checkpoint().unwrap().digest(),
        at_none,
        "structured and streamed forms agree"
    );
}

#[test]
fn a_reference_to_an_entity_without_a_stable_id_is_refused_never_dropped() {
    let mut x = range();
    let (_, _, b) = aimed(&mut x);
    let plain = x.spawn((Body { x: 5.0 },)).unwrap();
    assert_eq!(
        PreparedSpawn::prepare_in(&x, (aim(plain),), &mut SeqEntropy::new(3)),
        Err(PrepareError::Unidentified {
            component: "aim".into()
        })
    );
    // Without a world, any handle is refused (it could not be named).
    assert_eq!(
        PreparedSpawn::prepare::<Range, _, _>((aim(plain),), &mut SeqEntropy::new(3)),
        Err(PrepareError::Unidentified {
            component: "aim".into()
        })
    );
    assert_eq!(
        ComponentValue::of(&x, &aim(plain)),
        Err(PrepareError::Unidentified {
            component: "aim".into()
        })
    );
    let entity_b = x.entity_of(&b).unwrap();
    x.aim.get_mut(entity_b).unwrap().target = plain;
    let refused = CheckpointError::UnidentifiedReference {
        id: b,
        component: "aim".into(),
    };
    assert_eq!(x.checkpoint(), Err(refused.clone()));
    assert_eq!(x.checkpoint_bytes(), Err(refused.clone()));
    assert_eq!(x.checkpoint_digest(), Err(refused));
}

#[test]
fn transactions_resolve_references_where_they_apply() {
    let mut w = range();
    let mut entropy = SeqEntropy::new(7);
    let a = PreparedSpawn::prepare::<Range, _, _>((Body { x: 1.0 },), &mut entropy).unwrap();
    let b = PreparedSpawn::prepare::<Range, _, _>((Body { x: 2.0 },), &mut entropy).unwrap();
    // A value naming `a` by its id, built by hand as untrusted ingress would.
    let at_a = ComponentValue {
        component: "aim".into(),
        bytes: HexBytes::from(bytemuck::bytes_of(&aim(EntityId::NULL)).to_vec()),
        refs: vec![Some(a.id)],
    };
    // `a` is not live yet: refused whole.
    let early = tx(vec![
        TxCommand::Update {
            id: b.id,
            components: vec![at_a.clone()],
        },
        create(b.clone()),
    ]);
    assert!(matches!(
        w.transact(&early),
        Err(TxError::Command { index: 0, .. })
    ));
    let forward = tx(vec![
        create(b.clone()),
        TxCommand::Update {
            id: b.id,
            components: vec![at_a.clone()],
        },
        create(a.clone()),
    ]);
    assert_eq!(
        w.transact(&forward),
        Err(TxError::Command {
            index: 1,
            reason: TxRejection::UnresolvedReference {
                component: "aim".into(),
                id: a.id
            }
        })
    );
    assert_eq!(w.registry.len(), 0, "nothing applied");
    // In order: `a`, then `b` updated to aim at it, then `a` aiming at itself.
    let mut at_self = at_a.clone();
    at_self.refs = vec![Some(a.id)];
    let ordered = tx(vec![
        create(a.clone()),
        create(b.clone()),
        TxCommand::Update {
            id: b.id,
            components: vec![at_a.clone()],
        },
        TxCommand::Update {
            id: a.id,
            components: vec![at_self],
        },
    ]);
    w.transact(&ordered).unwrap();
    let ea = w.entity_of(&a.id).unwrap();
    assert_eq!(target_of(&w, &b.id), ea);
    assert_eq!(target_of(&w, &a.id), ea);
    // A create may aim at its own entity.
    let c = PreparedSpawn::prepare::<Range, _, _>((Body { x: 3.0 },), &mut entropy).unwrap();
    let mut c_self = c.clone();
    c_self.components.push(ComponentValue {
        component: "aim".into(),
        bytes: HexBytes::from(bytemuck::bytes_of(&aim(EntityId::NULL)).to_vec()),
        refs: vec![Some(c.id)],
    });
    w.transact(&tx(vec![create(c_self)])).unwrap();
    assert_eq!(target_of(&w, &c.id), w.entity_of(&c.id).unwrap());
    // Typed values name their targets the same way.
    assert_eq!(ComponentValue::of(&w, &aim(ea)).unwrap(), at_a);
    assert_eq!(
        ComponentValue::of(&w, &aim(EntityId::NULL)).unwrap().refs,
        [None]
    );
}

#[test]
fn malformed_references_are_refused() {
    let mut x = range();
    let (_, a, b) = aimed(&mut x);
    let handle = x.entity_of(&a).unwrap();
    let good = ComponentValue::of(&x, &aim(handle)).unwrap();
    // A handle in the bytes, a missing identity, an extra one, identities on a component
    // without entity fields.
    let mut raw = good.clone();
    raw.bytes = HexBytes::from(bytemuck::bytes_of(&aim(handle)).to_vec());
    let mut missing = good.clone();
    missing.refs.clear();
    let mut extra = good.clone();
    extra.refs.push(None);
    let mut stray = ComponentValue::of(&x, &Body { x: 1.0 }).unwrap();
    stray.refs.push(Some(a));
    let before = x.checkpoint_digest().unwrap();
    for (i, value) in [raw, missing, extra, stray].into_iter().enumerate() {
        let update = tx(vec![TxCommand::Update {
            id: b,
            components: vec![value.clone()],
        }]);
        assert_eq!(
            x.transact(&update),
            Err(TxError::Command {
                index: 0,
                reason: TxRejection::References(value.component.to_string())
            }),
            "case {i}"
        );
        assert_eq!(
            PreparedSpawn::prepare_values::<Range, _>(vec![value.clone()], &mut SeqEntropy::new(9)),
            Err(PrepareError::References(value.component.to_string())),
            "case {i}"
        );
        let mut checkpoint = x.checkpoint().unwrap();
        let at = checkpoint.entities.iter().position(|e| e.id == b).unwrap();
        let components = &mut checkpoint.entities[at].components;
        components.retain(|c| c.component != value.component);
        components.push(value.clone());
        components.sort_by(|p, q| p.component.cmp(&q.component));
        assert!(
            matches!(
                x.restore(&checkpoint),
                Err(CheckpointError::Component { .. })
            ),
            "case {i}"
        );
        assert_eq!(x.checkpoint_digest().unwrap(), before, "case {i}");
    }
    // A checkpoint whose reference names an id it does not hold.
    let mut checkpoint = x.checkpoint().unwrap();
    checkpoint.entities.retain(|e| e.id != a);
    assert!(matches!(
        x.restore(&checkpoint),
        Err(CheckpointError::UnresolvedReference { target, .. }) if target == a
    ));
    assert_eq!(x.checkpoint_digest().unwrap(), before);
    assert_eq!(digest_hex(&before).len(), 64);
}

/// The golden checkpoint: three spawned entities with floats (a negative, a subnormal) and
/// references (one to another entity, one to itself, one to nothing), and an authored one
/// (bound under a key of kind 7, named, labelled, protected) that two of them are children of. Its
/// canonical bytes are pinned in
/// `tests/fixtures/durable/checkpoint-golden.hex`: little-endian values, ids and references in
/// their documented encoding, the same on every platform ludus builds for.
fn golden_world() -> Range {
    let mut w = range();
    let mut entropy = SeqEntropy::new(0x601d);
    let a = PreparedSpawn::prepare::<Range, _, _>((Body { x: 1.5 },), &mut entropy).unwrap();
    w.transact(&tx(vec![create(a.clone())])).unwrap();
    let ea = w.entity_of(&a.id).unwrap();
    let b = PreparedSpawn::prepare_in(&w, (Body { x: -0.25 }, aim(ea)), &mut entropy).unwrap();
    let c = PreparedSpawn::prepare::<Range, _, _>(
        (
            Body {
                x: f32::from_bits(1),
            },
            aim(EntityId::NULL),
        ),
        &mut entropy,
    )
    .unwrap();
    w.transact(&tx(vec![create(b.clone()), create(c.clone())]))
        .unwrap();
    let ec = w.entity_of(&c.id).unwrap();
    w.aim.get_mut(ec).unwrap().target = ec;
    let root = w.spawn((Body { x: 2.0 },)).unwrap();
    w.activate(&[Activation {
        entity: root,
        key: golden_key(),
        kind: BindingKind(7),
    }])
    .unwrap();
    w.set_name(root, "root").unwrap();
    w.set_label(root, "root-7").unwrap();
    w.set_protected(root, true).unwrap();
    let eb = w.entity_of(&b.id).unwrap();
    w.set_parent(ec, Some(root)).unwrap();
    w.set_parent(eb, Some(root)).unwrap();
    w
}

/// The authored entity's binding key in the golden checkpoint.
fn golden_key() -> ludus::identity::PersistentObjectKey {
    ludus::identity::PersistentObjectKey::new(
        "67e55044-10b1-426f-9247-bb680e5fe0c8".parse().unwrap(),
        "0f8fad5b-d9cb-469f-a165-70867728950e".parse().unwrap(),
    )
}

const GOLDEN_CHECKPOINT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/durable/checkpoint-golden.hex"
);

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2 + bytes.len() / 32 + 1);
    for (i, b) in bytes.iter().enumerate() {
        out.push_str(&format!("{b:02x}"));
        if i % 32 == 31 {
            out.push('\n');
        }
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

#[test]
#[cfg_attr(miri, ignore = "reads the fixture file (no file system under Miri)")]
fn the_golden_checkpoint_bytes_are_pinned() {
    let w = golden_world();
    let bytes = w.checkpoint_bytes().unwrap();
    if std::env::var_os("LUDUS_WRITE_GOLDEN").is_some() {
        std::fs::create_dir_all(std::path::Path::new(GOLDEN_CHECKPOINT).parent().unwrap()).unwrap();
        std::fs::write(GOLDEN_CHECKPOINT, hex(&bytes)).unwrap();
    }
    let pinned = std::fs::read_to_string(GOLDEN_CHECKPOINT).expect("fixture");
    assert_eq!(hex(&bytes), pinned, "the canonical encoding changed");
    // The pinned bytes decode as documented: the format line, three entities, and the
    // subnormal's bits among them.
    assert!(bytes.starts_with(b"ludus.checkpoint.v4\0"));
    // The schema: two components by name — "aim" (24 bytes, align 8, its entity field at
    // offset 0) and "body" (4 bytes, align 4) — then four entities.
    let mut schema = 2u32.to_le_bytes().to_vec();
    for (name, size, align, fields) in [("aim", 24u32, 8u32, &[0u32][..]), ("body", 4, 4, &[])] {
        schema.extend_from_slice(&(name.len() as u32).to_le_bytes());
        schema.extend_from_slice(name.as_bytes());
        schema.extend_from_slice(&size.to_le_bytes());
        schema.extend_from_slice(&align.to_le_bytes());
        schema.extend_from_slice(&(fields.len() as u32).to_le_bytes());
        fields
            .iter()
            .for_each(|f| schema.extend_from_slice(&f.to_le_bytes()));
    }
    assert_eq!(bytes[20..20 + schema.len()], schema[..]);
    let at = 20 + schema.len();
    assert_eq!(bytes[at..at + 8], 4u64.to_le_bytes());
    assert!(bytes.windows(4).any(|x| x == 1u32.to_le_bytes()));
    assert!(bytes.windows(4).any(|x| x == (-0.25f32).to_le_bytes()));
    // Restored onto a fresh world, the same bytes: every link back on its target.
    let mut fresh = range();
    fresh.restore(&w.checkpoint().unwrap()).unwrap();
    assert_eq!(fresh.checkpoint_bytes().unwrap(), bytes);
    assert_eq!(
        digest_hex(&fresh.checkpoint_digest().unwrap()),
        digest_hex(&w.checkpoint_digest().unwrap())
    );
    // The authored entity came back bound (its id is its key), named, protected, with its
    // children in order.
    let root = fresh
        .resolve_required(
            &golden_key(),
            Some(BindingKind(7)),
            &ludus::durable::NoCatalog,
        )
        .unwrap();
    let id = PersistentId::Authored(bytemuck::cast(golden_key()));
    assert_eq!(fresh.stable_id(root), Some(id));
    assert_eq!(fresh.entity_of(&id), Some(root));
    assert_eq!(
        (fresh.name(root), fresh.is_protected(root)),
        (Ok("root"), true)
    );
    let kids: Vec<f32> = fresh
        .children(root)
        .map(|k| fresh.body.get(k).unwrap().x)
        .collect();
    assert_eq!(kids, [f32::from_bits(1), -0.25]);
}

#[test]
fn a_checkpoint_keeps_names_parents_and_child_order() {
    let mut x = range();
    let (_, a, b) = aimed(&mut x);
    let (ea, eb) = (x.entity_of(&a).unwrap(), x.entity_of(&b).unwrap());
    let mut entropy = SeqEntropy::new(31);
    let c = PreparedSpawn::prepare::<Range, _, _>((Body { x: 3.0 },), &mut entropy).unwrap();
    x.transact(&tx(vec![create(c.clone())])).unwrap();
    let ec = x.entity_of(&c.id).unwrap();
    // Under A: C, a transient entity, then B (child order not id order).
    let transient = x.spawn((Body { x: 9.0 },)).unwrap();
    x.set_parent(ec, Some(ea)).unwrap();
    x.set_parent(transient, Some(ea)).unwrap();
    x.set_parent(eb, Some(ea)).unwrap();
    x.set_name(ea, "anchor").unwrap();
    x.set_name(eb, "bolt").unwrap();
    let checkpoint = x.checkpoint().unwrap();
    let entry = |id: &PersistentId| checkpoint.entities.iter().find(|e| e.id == *id).unwrap();
    assert_eq!(entry(&b).parent, Some(a));
    assert_eq!((entry(&c.id).position, entry(&b).position), (0, 1));
    assert_eq!(entry(&a).name, "anchor");
    assert_eq!(checkpoint.canonical_bytes(), x.checkpoint_bytes().unwrap());
    let digest = x.checkpoint_digest().unwrap();
    // Onto a fresh world: the same names, parents and child order, the same bytes.
    let mut y = range();
    y.restore(&checkpoint).unwrap();
    let (ya, yb, yc) = (
        y.entity_of(&a).unwrap(),
        y.entity_of(&b).unwrap(),
        y.entity_of(&c.id).unwrap(),
    );
    assert_eq!(y.children(ya).collect::<Vec<_>>(), [yc, yb]);
    assert_eq!(y.name(ya).unwrap(), "anchor");
    assert_eq!(y.name(yb).unwrap(), "bolt");
    assert_eq!(y.checkpoint_digest().unwrap(), digest);
    // A name or a parent that differs gives another digest.
    y.set_name(yb, "nut").unwrap();
    assert_ne!(y.checkpoint_digest().unwrap(), digest);
    y.set_name(yb, "bolt").unwrap();
    y.set_parent(yb, None).unwrap();
    assert_ne!(y.checkpoint_digest().unwrap(), digest);
    // A stable entity under a transient one cannot be checkpointed: refused, not dropped.
    x.set_parent(ec, Some(transient)).unwrap();
    assert_eq!(
        x.checkpoint(),
        Err(CheckpointError::UnidentifiedParent { id: c.id })
    );
    // A checkpoint whose parent is not one of its entities, or whose links loop: refused.
    let mut orphan = checkpoint.clone();
    orphan.entities.retain(|e| e.id != a);
    // (B's aim at A would be refused first: this checks the parent alone.)
    for e in &mut orphan.entities {
        e.components.retain(|v| v.component != "aim");
    }
    assert!(matches!(
        y.restore(&orphan),
        Err(CheckpointError::Parent { .. })
    ));
    let mut looped = checkpoint.clone();
    let at = looped.entities.iter().position(|e| e.id == a).unwrap();
    looped.entities[at].parent = Some(b);
    assert!(matches!(
        y.restore(&looped),
        Err(CheckpointError::Parent { .. })
    ));
}

/// An aim whose entity field sits after its speed: the same names and sizes as `Range`'s,
/// another shape.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct AimLate {
    /// How fast the aim turns.
    pub speed: f32,
    /// Padding.
    pub _pad: u32,
    /// The target.
    pub target: EntityId,
}

impl EntityRefs for AimLate {
    fn visit_entities(&mut self, visit: &mut dyn FnMut(&mut EntityId)) {
        visit(&mut self.target);
    }
}

ludus::world! {
    /// `Range` with the aim's fields in another order.
    pub struct Shuffled {
        /// Bodies.
        pub body: Body,
        /// Aims.
        pub aim: AimLate,
    }
    durable { entity_refs { AimLate } }
}

/// The same shapes as `Range` under other type names.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Mass {
    /// Kilograms.
    pub kg: f32,
}

ludus::world! {
    /// `Range`'s shape with another body type.
    pub struct Alike {
        /// Masses.
        pub body: Mass,
        /// Aims.
        pub aim: Aim,
    }
    durable { entity_refs { Aim } }
}

#[test]
fn a_checkpoint_of_another_shape_is_refused() {
    let w = golden_world();
    let cp = w.checkpoint().unwrap();
    assert_eq!(cp.schema, ludus::durable::ComponentShape::roster::<Range>());
    // Same names and sizes, the entity field elsewhere: its values would be misread.
    let mut shuffled = Shuffled::try_new_durable(16, DurableConfig::default()).unwrap();
    shuffled.begin_structural();
    assert_eq!(
        shuffled.restore(&cp),
        Err(CheckpointError::Schema {
            component: "aim".into()
        })
    );
    assert_eq!(shuffled.registry.len(), 0);
    // A schema edited to match is not caught as such: here the golden aims' speed bytes land
    // in `AimLate`'s entity field, which must be null, so the values are refused; a value
    // whose bytes happened to be zero there would be misread. The schema is the guard.
    let mut forged = cp.clone();
    forged.schema = ludus::durable::ComponentShape::roster::<Shuffled>();
    assert!(shuffled.restore(&forged).is_err());
    // A missing component, or one more.
    let mut fewer = cp.clone();
    fewer.schema.retain(|c| c.name != "body");
    let mut fresh = range();
    assert_eq!(
        fresh.restore(&fewer),
        Err(CheckpointError::Schema {
            component: "body".into()
        })
    );
    // The same shapes under other type names restore: shapes, not names of types, decide.
    let mut alike = Alike::try_new_durable(16, DurableConfig::default()).unwrap();
    alike.begin_structural();
    alike.restore(&cp).unwrap();
    assert_eq!(alike.registry.len(), 4);
    assert_eq!(alike.checkpoint_bytes().unwrap(), cp.canonical_bytes());
    // The schema is in the digest: rosters of two shapes never share one, empty or not.
    assert_ne!(
        shuffled.checkpoint_digest().unwrap(),
        range().checkpoint_digest().unwrap()
    );
}
