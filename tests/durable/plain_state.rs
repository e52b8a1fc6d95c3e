//! Components of the whole plain-state class — `bool`, fieldless enums, `char`, `NonZero`
//! integers, arrays of those (`PlainArray`) and structs of those — through every durable form: prepared spawns, transactions,
//! replay logs and checkpoints keep them, and bytes that hold no value of the component (a
//! `bool` byte of 2, an enum discriminant no variant has) are refused with a typed error before
//! anything changes.

use core::num::NonZeroU32;

use bytemuck::{CheckedBitPattern, NoUninit, Zeroable};
use ludus::durable::{
    CheckpointError, EntityRefs, PreparedSpawn, ReplayEntry, ReplayLog, Transaction, TxCommand,
    TxError, TxRejection, REPLAY_FORMAT,
};
use ludus::identity::test_entropy::SeqEntropy;
use ludus::identity::PersistentId;
use ludus::prelude::*;
use ludus::world::PlainArray;

/// A fieldless enum with a gap in its discriminants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, NoUninit, CheckedBitPattern, Zeroable)]
#[repr(u8)]
pub enum Mode {
    /// 0.
    Idle = 0,
    /// 1.
    Walk = 1,
    /// 9.
    Dead = 9,
}

/// A bare `bool` would be one too; a newtype names it in the roster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, NoUninit, CheckedBitPattern)]
#[repr(transparent)]
pub struct Visible(pub bool);

/// A non-zero count and a character.
#[derive(Clone, Copy, Debug, PartialEq, Eq, NoUninit, CheckedBitPattern)]
#[repr(C)]
pub struct Tag {
    /// Never zero.
    pub count: NonZeroU32,
    /// A glyph.
    pub glyph: char,
}

/// Arrays of bools and of an enum (a bare array has no checked form: `PlainArray` does).
#[derive(Clone, Copy, Debug, PartialEq, Eq, NoUninit, CheckedBitPattern)]
#[repr(C)]
pub struct Panel {
    /// Switches.
    pub on: PlainArray<bool, 3>,
    /// Modes.
    pub modes: PlainArray<Mode, 2>,
    /// Explicit padding.
    pub _pad: [u8; 3],
}

/// A reference beside checked fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, NoUninit, CheckedBitPattern, Zeroable)]
#[repr(C)]
pub struct Link {
    /// The target, or null.
    pub target: EntityId,
    /// Armed.
    pub armed: bool,
    /// The mode.
    pub mode: Mode,
    /// Explicit padding.
    pub _pad: [u8; 6],
}

impl EntityRefs for Link {
    fn visit_entities(&mut self, visit: &mut dyn FnMut(&mut EntityId)) {
        visit(&mut self.target);
    }
}

ludus::world! {
    /// Every kind of the class in one roster.
    pub struct Plain {
        /// A bare enum.
        pub mode: Mode,
        /// A bool newtype.
        pub visible: Visible,
        /// `NonZeroU32` and `char`.
        pub tag: Tag,
        /// A reference with checked fields.
        pub link: Link,
        /// Arrays of checked elements.
        pub panel: Panel,
    }
    durable { entity_refs { Link } }
}

fn plain() -> Plain {
    let mut w = Plain::try_new_durable(16, DurableConfig::default()).unwrap();
    w.begin_structural();
    w
}

fn tx(commands: Vec<TxCommand>) -> Transaction {
    Transaction {
        label: "plain".into(),
        commands,
    }
}

fn tag(n: u32, glyph: char) -> Tag {
    Tag {
        count: NonZeroU32::new(n).unwrap(),
        glyph,
    }
}

fn link(target: EntityId, armed: bool, mode: Mode) -> Link {
    Link {
        target,
        armed,
        mode,
        _pad: [0; 6],
    }
}

fn panel() -> Panel {
    Panel {
        on: [true, false, true].into(),
        modes: [Mode::Dead, Mode::Walk].into(),
        _pad: [0; 3],
    }
}

/// A logged world: A (walking, visible, tagged, a panel), then B linking to A (dead, hidden).
fn logged(w: &mut Plain) -> (ReplayLog, PersistentId, PersistentId) {
    let a = PreparedSpawn::prepare::<Plain, _, _>(
        (Mode::Walk, Visible(true), tag(3, 'λ'), panel()),
        &mut SeqEntropy::new(1),
    )
    .unwrap();
    let first = tx(vec![TxCommand::Create { spawn: a.clone() }]);
    w.transact(&first).unwrap();
    let target = w.entity_of(&a.id).unwrap();
    let b = PreparedSpawn::prepare_in(
        w,
        (Mode::Dead, Visible(false), link(target, true, Mode::Dead)),
        &mut SeqEntropy::new(2),
    )
    .unwrap();
    let second = tx(vec![TxCommand::Create { spawn: b.clone() }]);
    w.transact(&second).unwrap();
    let entries = vec![
        ReplayEntry {
            tick: 1,
            transaction: first,
        },
        ReplayEntry {
            tick: 2,
            transaction: second,
        },
    ];
    let log = ReplayLog {
        format: REPLAY_FORMAT.into(),
        version: 1,
        entries,
    };
    (log, a.id, b.id)
}

/// The values of `a` and `b` as `w` holds them.
fn state(w: &Plain, a: &PersistentId, b: &PersistentId) -> impl PartialEq + core::fmt::Debug {
    let (ea, eb) = (w.entity_of(a).unwrap(), w.entity_of(b).unwrap());
    let l = w.get::<Link>(eb).copied().unwrap();
    (
        (w.get::<Mode>(ea).copied(), w.get::<Visible>(ea).copied()),
        (w.get::<Tag>(ea).copied(), w.get::<Panel>(ea).copied()),
        (w.get::<Mode>(eb).copied(), w.get::<Visible>(eb).copied()),
        (l.target == ea, l.armed, l.mode),
    )
}

#[test]
fn the_class_survives_transactions_replays_and_checkpoints() {
    let mut x = plain();
    let (log, a, b) = logged(&mut x);
    let want = state(&x, &a, &b);
    assert_eq!(x.get::<Tag>(x.entity_of(&a).unwrap()), Some(&tag(3, 'λ')));
    assert_eq!(x.get::<Panel>(x.entity_of(&a).unwrap()), Some(&panel()));
    // A replay through the log's JSON onto a fresh world, other slots.
    let text = serde_json::to_string(&log).unwrap();
    let mut y = plain();
    y.spawn((Mode::Idle,)).unwrap();
    y.replay(&serde_json::from_str(&text).unwrap()).unwrap();
    assert_eq!(state(&y, &a, &b), want);
    // A checkpoint through JSON, restored in place and onto a fresh world.
    let cp = x.checkpoint().unwrap();
    let digest = x.checkpoint_digest().unwrap();
    x.restore(&cp).unwrap();
    assert_eq!(state(&x, &a, &b), want);
    assert_eq!(x.checkpoint_digest().unwrap(), digest);
    let mut z = plain();
    z.restore(&serde_json::from_str(&serde_json::to_string(&cp).unwrap()).unwrap())
        .unwrap();
    assert_eq!(state(&z, &a, &b), want);
    assert_eq!(z.checkpoint_digest().unwrap(), digest);
}

/// The byte of component `name` at `at` in `spawn`, set to `to`.
fn poke(spawn: &mut PreparedSpawn, name: &str, at: usize, to: u8) {
    let c = spawn
        .components
        .iter_mut()
        .find(|c| c.component == name)
        .unwrap();
    c.bytes[at] = to;
}

#[test]
fn a_transaction_with_an_invalid_value_is_refused_whole() {
    let mut w = plain();
    let (_, a, _) = logged(&mut w);
    let before = (w.checkpoint_digest().unwrap(), w.registry.len());
    // Each case: a value of the right size no component has. The first command is good, so a
    // transaction that applied commands one by one would leave it behind.
    let cases: [(&str, usize, u8); 8] = [
        ("mode", 0, 2),
        ("mode", 0, 255),
        ("visible", 0, 2),
        ("tag", 0, 0),    // NonZeroU32 of zero (bytes 0..4 all zero)
        ("tag", 7, 0xd8), // a surrogate half is no char
        ("link", 17, 10), // the mode field of a link
        ("panel", 2, 2),  // the last switch
        ("panel", 4, 3),  // the second mode
    ];
    // Under Miri (far slower): the bool, the NonZero and the link's enum field.
    let picked: Vec<usize> = if cfg!(miri) {
        vec![2, 3, 5, 7]
    } else {
        (0..cases.len()).collect()
    };
    for (i, &(name, at, to)) in picked.iter().map(|&k| (k, &cases[k])) {
        let good = PreparedSpawn::prepare::<Plain, _, _>(
            (Mode::Idle, Visible(true), tag(1, 'a')),
            &mut SeqEntropy::new(100 + i as u64),
        )
        .unwrap();
        let mut bad = PreparedSpawn::prepare::<Plain, _, _>(
            (
                Mode::Walk,
                Visible(true),
                tag(0x0101_0101, 'b'),
                link(EntityId::NULL, false, Mode::Idle),
                panel(),
            ),
            &mut SeqEntropy::new(200 + i as u64),
        )
        .unwrap();
        if name == "tag" && at == 0 {
            (0..4).for_each(|k| poke(&mut bad, "tag", k, 0));
        } else {
            poke(&mut bad, name, at, to);
        }
        let t = tx(vec![
            TxCommand::Create { spawn: good },
            TxCommand::Create { spawn: bad.clone() },
        ]);
        assert_eq!(
            w.transact(&t),
            Err(TxError::Command {
                index: 1,
                reason: TxRejection::InvalidValue(name.into()),
            }),
            "case {i}: {name}[{at}] = {to}"
        );
        assert_eq!((w.checkpoint_digest().unwrap(), w.registry.len()), before);
        // An update of a live entity is checked the same way.
        let update = TxCommand::Update {
            id: a,
            components: bad
                .components
                .iter()
                .filter(|c| c.component == name)
                .cloned()
                .collect(),
        };
        assert!(matches!(
            w.transact(&tx(vec![update])),
            Err(TxError::Command {
                index: 0,
                reason: TxRejection::InvalidValue(_)
            })
        ));
        assert_eq!((w.checkpoint_digest().unwrap(), w.registry.len()), before);
        // A prepared command is checked when it is built from values.
        assert!(PreparedSpawn::prepare_values::<Plain, _>(
            bad.components.clone(),
            &mut SeqEntropy::new(300)
        )
        .is_err());
    }
}

#[test]
fn a_checkpoint_with_an_invalid_value_is_refused_whole() {
    let mut w = plain();
    let (_, a, b) = logged(&mut w);
    let want = state(&w, &a, &b);
    let digest = w.checkpoint_digest().unwrap();
    let good = w.checkpoint().unwrap();
    for (name, at, to) in [
        ("mode", 0, 3u8),
        ("visible", 0, 7),
        ("link", 16, 2),
        ("panel", 0, 9),
    ] {
        let mut bad = good.clone();
        // The last entity holding the component (entities ascend by id: either of the two).
        let (index, c) = bad
            .entities
            .iter_mut()
            .enumerate()
            .flat_map(|(i, e)| e.components.iter_mut().map(move |c| (i, c)))
            .filter(|(_, c)| c.component == name)
            .last()
            .unwrap();
        c.bytes[at] = to;
        let mut fresh = plain();
        for target in [&mut w, &mut fresh] {
            let before = target.checkpoint_digest().unwrap();
            assert_eq!(
                target.restore(&bad),
                Err(CheckpointError::Component {
                    index,
                    component: name.into()
                }),
                "{name}[{at}] = {to}"
            );
            assert_eq!(target.checkpoint_digest().unwrap(), before);
        }
    }
    assert_eq!(state(&w, &a, &b), want);
    assert_eq!(w.checkpoint_digest().unwrap(), digest);
}

#[test]
fn a_command_buffer_records_and_commits_the_class() {
    let mut w = plain();
    let mut cmd = CommandBuffer::try_with_capacity(8, 256).unwrap();
    let p = cmd
        .spawn(&w.registry, (Mode::Dead, Visible(true), tag(9, '€')))
        .unwrap();
    let e = w.spawn((Mode::Idle,)).unwrap();
    cmd.insert(&w.registry, e, Visible(false)).unwrap();
    cmd.insert(&w.registry, e, link(e, true, Mode::Walk))
        .unwrap();
    cmd.insert(&w.registry, p, link(e, false, Mode::Dead))
        .unwrap();
    w.commit(&mut cmd).unwrap();
    let mut seen = Vec::new();
    for (entity, (mode, visible)) in join((&w.mode, &w.visible)) {
        seen.push((entity == e, *mode, *visible));
    }
    seen.sort_by_key(|s| s.0);
    assert_eq!(
        seen,
        [
            (false, Mode::Dead, Visible(true)),
            (true, Mode::Idle, Visible(false))
        ]
    );
    assert_eq!(w.get::<Link>(e), Some(&link(e, true, Mode::Walk)));
}
