//! Components of the plain-state class beyond `Pod` — a fieldless enum, a `bool`, `NonZeroU32`
//! and `char` beside a reference, arrays of a `bool` and an enum — keep their serde forms through records (both readers) and
//! level files; a form that is no value of the component is refused at it, nothing restored.

use core::num::NonZeroU32;
use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{document, instance, object};
use bytemuck::{CheckedBitPattern, NoUninit, Zeroable};
use ludus::content::{
    restore_level_from_slice, restore_world_from_slice, save_level, save_world_bytes,
    RestoreErrorKind,
};
use ludus::identity::{PersistentObjectKey, SourceObjectId};
use ludus::prelude::*;
use ludus::world::PlainArray;
use serde::{Deserialize, Serialize};

/// A fieldless enum.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, NoUninit, CheckedBitPattern, Zeroable, Serialize, Deserialize,
)]
#[repr(u8)]
pub enum Mode {
    /// 0.
    Idle = 0,
    /// 4.
    Walk = 4,
}

/// A bool and a count that is never zero.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, NoUninit, CheckedBitPattern, Serialize, Deserialize,
)]
#[repr(C)]
pub struct Flag {
    /// Never zero.
    pub count: NonZeroU32,
    /// A glyph.
    pub glyph: char,
    /// On or off.
    pub on: bool,
    /// Explicit padding.
    pub _pad: [u8; 3],
}

/// Arrays of a bool and of an enum.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, NoUninit, CheckedBitPattern, Serialize, Deserialize,
)]
#[repr(C)]
pub struct Panel {
    /// Switches.
    pub on: PlainArray<bool, 2>,
    /// Modes.
    pub modes: PlainArray<Mode, 2>,
}

/// A reference beside checked fields.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, NoUninit, CheckedBitPattern, Zeroable, Serialize, Deserialize,
)]
#[repr(C)]
pub struct Link {
    /// The target.
    #[serde(with = "ludus::content::entity_ref")]
    pub target: EntityId,
    /// The mode.
    pub mode: Mode,
    /// Armed.
    pub armed: bool,
    /// Explicit padding.
    pub _pad: [u8; 6],
}

impl EntityRefs for Link {
    fn visit_entities(&mut self, visit: &mut dyn FnMut(&mut EntityId)) {
        visit(&mut self.target);
    }
}

ludus::world! {
    pub struct Plain { pub mode: Mode, pub flag: Flag, pub link: Link, pub panel: Panel }
    durable { entity_refs { Link } }
}

const SCHEMA: &str = "ludus.plain.v1";

fn plain() -> Plain {
    let mut w = Plain::try_new_durable(8, DurableConfig::default()).unwrap();
    w.begin_structural();
    w
}

fn flag(count: u32, glyph: char, on: bool) -> Flag {
    Flag {
        count: NonZeroU32::new(count).unwrap(),
        glyph,
        on,
        _pad: [0; 3],
    }
}

/// Two bound entities: 0 walks, flagged, linking to 1; 1 idles.
fn world() -> Plain {
    let mut w = plain();
    let panel = Panel {
        on: [false, true].into(),
        modes: [Mode::Walk, Mode::Idle].into(),
    };
    let a = w.spawn((Mode::Walk, flag(7, 'ß', true), panel)).unwrap();
    let b = w.spawn((Mode::Idle,)).unwrap();
    let to_b = Link {
        target: b,
        mode: Mode::Walk,
        armed: true,
        _pad: [0; 6],
    };
    w.insert(a, to_b).unwrap();
    let batch = [a, b]
        .iter()
        .enumerate()
        .map(|(i, &e)| Activation::new(e, PersistentObjectKey::new(instance(0), object(i as u64))))
        .collect::<Vec<_>>();
    w.activate(&batch).unwrap();
    w
}

type Row = (
    Option<Mode>,
    Option<Flag>,
    Option<(Option<SourceObjectId>, Mode, bool)>,
    Option<Panel>,
);

fn rows(w: &Plain) -> BTreeMap<SourceObjectId, Row> {
    w.durable()
        .bindings()
        .iter()
        .map(|(key, e, _)| {
            let link = w
                .link
                .get(e)
                .map(|l| (w.key_of(l.target).map(|k| k.object), l.mode, l.armed));
            let panel = w.panel.get(e).copied();
            (
                key.object,
                (w.mode.get(e).copied(), w.flag.get(e).copied(), link, panel),
            )
        })
        .collect()
}

#[test]
fn the_class_keeps_its_serde_forms_through_records_and_levels() {
    let w = world();
    let bytes = save_world_bytes(&w, instance(0), SCHEMA, document()).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains("\"mode\":\"Walk\""), "{text}");
    assert!(text.contains("\"on\":true"), "{text}");
    assert!(text.contains("\"glyph\":\"ß\""), "{text}");
    assert!(
        text.contains("\"modes\":[\"Walk\",\"Idle\"],\"on\":[false,true]"),
        "{text}"
    );
    let mut streamed = plain();
    restore_world_from_slice(Path::new("p.json"), &bytes, instance(0), &mut streamed).unwrap();
    assert_eq!(rows(&streamed), rows(&w));
    assert_eq!(rows(&w).len(), 2);
    let level = save_level(&w, instance(0)).unwrap().to_bytes();
    let mut from_level = plain();
    restore_level_from_slice(
        Path::new("l.json"),
        &level,
        Some(instance(0)),
        &mut from_level,
    )
    .unwrap();
    assert_eq!(rows(&from_level), rows(&w));
}

#[test]
fn a_form_that_is_no_value_is_refused_at_its_component() {
    let w = world();
    let text =
        String::from_utf8(save_world_bytes(&w, instance(0), SCHEMA, document()).unwrap()).unwrap();
    for (from, to) in [
        ("\"on\":true", "\"on\":2"),
        ("\"count\":7", "\"count\":0"),
        ("\"mode\":\"Walk\"", "\"mode\":\"Run\""),
        ("\"mode\":\"Walk\"", "\"mode\":4"),
        ("\"on\":[false,true]", "\"on\":[false,2]"),
        ("\"on\":[false,true]", "\"on\":[false]"),
    ] {
        assert!(text.contains(from), "{from}");
        let bytes = text.replacen(from, to, 1).into_bytes();
        let mut fresh = plain();
        let err = restore_world_from_slice(Path::new("bad.json"), &bytes, instance(0), &mut fresh)
            .unwrap_err();
        assert!(
            matches!(err.kind, RestoreErrorKind::Component { .. }),
            "{to}: {err}"
        );
        assert_eq!(fresh.registry.len(), 0, "{to}: nothing restored");
    }
}
