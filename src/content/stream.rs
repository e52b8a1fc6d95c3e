//! The streaming reader of version-2 World records: bytes → [`Plan`] in one pass, without the
//! intermediate `serde_json::Value` tree of the whole document.
//!
//! It accepts exactly what [`WorldV2::from_slice`](super::WorldV2::from_slice) followed by
//! staging accepts, and stages the same plan: the same members are required, unknown and
//! repeated members refused at every level, the same UUID, label and name rules checked, and
//! each component's properties read into the same strict `Value`s (a member named twice at any
//! depth refused) before the component's serde form decodes them. It does not say *why* it
//! refuses: on any refusal [`restore_world_from_slice`](super::restore_world_from_slice) runs
//! the tree reader on the same bytes, which reports the first broken rule with its position.
//! The fast path may also decline what is valid but rare (a label written with JSON escapes);
//! the tree reader then accepts it.
//!
//! The differential test (`tests/content_fuzz.rs`) checks that both readers restore the same
//! world from every input the fast one accepts.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::json::StrictValue;
use super::mapping::{component_index, RecordList};
use super::plan::Plan;
use super::record::{is_component_name, is_schema_name};
use crate::identity::{is_legacy_id, AssetId, SourceObjectId};
use crate::world::Roster;

/// The state of one streaming read.
struct Reader<'de> {
    plan: Plan,
    labels: HashSet<&'de str>,
    /// Scratch: one component's properties.
    props: Vec<(Cow<'de, str>, Value)>,
    /// Scratch: which roster components the current entity has.
    seen: Vec<bool>,
    duplicate: RefCell<Option<String>>,
}

/// Reads a version-2 record for `W` into a plan; `None` when it declines (see module docs).
pub(crate) fn plan_bytes<W: Roster>(bytes: &[u8]) -> Option<Plan>
where
    W::Components: RecordList,
{
    let mut reader = Reader {
        plan: Plan::new::<W>(bytes.len() / 256),
        labels: HashSet::with_capacity(bytes.len() / 256),
        props: Vec::new(),
        seen: vec![false; W::NAMES.len()],
        duplicate: RefCell::new(None),
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let document = (RecordSeed::<W> {
        reader: &mut reader,
        _w: core::marker::PhantomData,
    })
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    // The document's identity is distinct from every entity's.
    if reader.plan.index.contains_key(&document.as_uuid()) {
        return None;
    }
    Some(reader.plan)
}

/// A string borrowed from the input when it has no escapes (serde's own `Cow<str>` always
/// copies).
struct Text<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

fn fail<E: de::Error>() -> E {
    E::custom("declined")
}

struct RecordSeed<'r, 'de, W> {
    reader: &'r mut Reader<'de>,
    _w: core::marker::PhantomData<W>,
}

impl<'de, W: Roster> DeserializeSeed<'de> for RecordSeed<'_, 'de, W>
where
    W::Components: RecordList,
{
    type Value = AssetId;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<AssetId, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, W: Roster> Visitor<'de> for RecordSeed<'_, 'de, W>
where
    W::Components: RecordList,
{
    type Value = AssetId;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a World record")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AssetId, A::Error> {
        let mut seen = [false; 4];
        let mut document = None;
        while let Some(key) = map.next_key::<Text<'de>>()?.map(|t| t.0) {
            let slot = match &*key {
                "version" => 0,
                "schema" => 1,
                "document" => 2,
                "entities" => 3,
                _ => return Err(fail()),
            };
            if std::mem::replace(&mut seen[slot], true) {
                return Err(fail());
            }
            match slot {
                0 => {
                    if map.next_value::<Value>()?.as_u64() != Some(2) {
                        return Err(fail());
                    }
                }
                1 => {
                    if !is_schema_name(&map.next_value::<Text<'de>>()?.0) {
                        return Err(fail());
                    }
                }
                2 => {
                    let text = map.next_value::<Text<'de>>()?.0;
                    document = Some(text.parse::<AssetId>().map_err(|_| fail::<A::Error>())?);
                }
                _ => map.next_value_seed(EntitiesSeed::<W> {
                    reader: &mut *self.reader,
                    _w: core::marker::PhantomData,
                })?,
            }
        }
        match document {
            Some(d) if seen.iter().all(|s| *s) => Ok(d),
            _ => Err(fail()),
        }
    }
}

struct EntitiesSeed<'r, 'de, W> {
    reader: &'r mut Reader<'de>,
    _w: core::marker::PhantomData<W>,
}

impl<'de, W: Roster> DeserializeSeed<'de> for EntitiesSeed<'_, 'de, W>
where
    W::Components: RecordList,
{
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, W: Roster> Visitor<'de> for EntitiesSeed<'_, 'de, W>
where
    W::Components: RecordList,
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of entities")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq
            .next_element_seed(EntitySeed::<W> {
                reader: &mut *self.reader,
                _w: core::marker::PhantomData,
            })?
            .is_some()
        {}
        Ok(())
    }
}

struct EntitySeed<'r, 'de, W> {
    reader: &'r mut Reader<'de>,
    _w: core::marker::PhantomData<W>,
}

impl<'de, W: Roster> DeserializeSeed<'de> for EntitySeed<'_, 'de, W>
where
    W::Components: RecordList,
{
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, W: Roster> Visitor<'de> for EntitySeed<'_, 'de, W>
where
    W::Components: RecordList,
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an entity")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let r = self.reader;
        let entity = r.plan.next_index();
        let mut seen = [false; 4];
        let mut uuid = None;
        let mut name: Option<Cow<'de, str>> = None;
        r.seen.iter_mut().for_each(|s| *s = false);
        while let Some(key) = map.next_key::<Text<'de>>()?.map(|t| t.0) {
            let slot = match &*key {
                "uuid" => 0,
                "label" => 1,
                "name" => 2,
                "components" => 3,
                _ => return Err(fail()),
            };
            if std::mem::replace(&mut seen[slot], true) {
                return Err(fail());
            }
            match slot {
                0 => {
                    let text = map.next_value::<Text<'de>>()?.0;
                    uuid = Some(
                        text.parse::<SourceObjectId>()
                            .map_err(|_| fail::<A::Error>())?,
                    );
                }
                1 => match map.next_value::<Text<'de>>()?.0 {
                    Cow::Borrowed(label) if is_legacy_id(label) && r.labels.insert(label) => {}
                    _ => return Err(fail()),
                },
                2 => name = Some(map.next_value::<Text<'de>>()?.0),
                _ => map.next_value_seed(ComponentsSeed::<W> {
                    reader: &mut *r,
                    entity,
                    _w: core::marker::PhantomData,
                })?,
            }
        }
        match (uuid, name) {
            (Some(uuid), Some(name)) if seen.iter().all(|s| *s) => {
                if r.plan.push_entity(uuid.as_uuid(), &name) {
                    Ok(())
                } else {
                    Err(fail())
                }
            }
            _ => Err(fail()),
        }
    }
}

struct ComponentsSeed<'r, 'de, W> {
    reader: &'r mut Reader<'de>,
    entity: usize,
    _w: core::marker::PhantomData<W>,
}

impl<'de, W: Roster> DeserializeSeed<'de> for ComponentsSeed<'_, 'de, W>
where
    W::Components: RecordList,
{
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, W: Roster> Visitor<'de> for ComponentsSeed<'_, 'de, W>
where
    W::Components: RecordList,
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of components")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let r = self.reader;
        while let Some(key) = map.next_key::<Text<'de>>()?.map(|t| t.0) {
            if !is_component_name(&key) {
                return Err(fail());
            }
            let k = component_index::<W>(&key).ok_or_else(fail::<A::Error>)?;
            if std::mem::replace(&mut r.seen[k], true) {
                return Err(fail());
            }
            r.props.clear();
            map.next_value_seed(PropsSeed { reader: &mut *r })?;
            let props = r.props.iter().map(|(k, v)| (&**k, v));
            // `Props` checks the names; duplicates were refused while reading.
            if r.plan.decode::<W, _>(self.entity, k, props).is_err() {
                return Err(fail());
            }
        }
        Ok(())
    }
}

/// One component's properties into the reader's scratch, each value a strict `Value`.
struct PropsSeed<'r, 'de> {
    reader: &'r mut Reader<'de>,
}

impl<'de> DeserializeSeed<'de> for PropsSeed<'_, 'de> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PropsSeed<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of properties")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let r = self.reader;
        while let Some(key) = map.next_key::<Text<'de>>()?.map(|t| t.0) {
            if r.props.iter().any(|(k, _)| *k == key) {
                return Err(fail());
            }
            let value = map.next_value_seed(StrictValue {
                duplicate: &r.duplicate,
            })?;
            r.props.push((key, value));
        }
        Ok(())
    }
}
