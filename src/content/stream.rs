//! The streaming reader of version-2 and version-3 World records: bytes → [`Plan`] in one
//! pass, without the intermediate `serde_json::Value` tree of the whole document.
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
//! The differential test (`tests/content/fuzz.rs`) checks that both readers restore the same
//! world from every input the fast one accepts.

use core::hash::BuildHasher;
use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

use serde::de::value::{
    BoolDeserializer, BorrowedStrDeserializer, F64Deserializer, I64Deserializer,
    StringDeserializer, U64Deserializer, UnitDeserializer,
};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::json::StrictValue;
use super::level::{LEVEL_FORMAT, LEVEL_VERSION};
use super::mapping::{component_index, RecordComponent, RecordList, RecordVisitor};
use super::plan::Plan;
use super::record::{is_component_name, is_schema_name};
use crate::durable::first_cycle;
use crate::identity::{is_legacy_id, parse_uuid, AssetId, SourceObjectId, UuidPolicy};
use crate::world::roster::Roster;

/// What a streaming read reads: a World record (version 2 or 3) or a level file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Record,
    Level,
}

/// The state of one streaming read.
struct Reader<'de> {
    form: Form,
    plan: Plan,
    /// A keyed 64-bit hash of every label: sorted at the end, two equal ones decline (a real
    /// repeat, or a collision the tree reader then sorts out). A hash set of the labels costs
    /// a fifth of the whole restore here (a cache miss per insert); the sort costs a little.
    labels: Vec<u64>,
    hasher: hashbrown::DefaultHashBuilder,
    /// Scratch: the property names of one component.
    keys: Vec<Cow<'de, str>>,
    /// Scratch: which roster components the current entity has.
    seen: Vec<bool>,
    /// Each entity's `parent` member: `None` when it has none, `Some(None)` for `""` (a
    /// root), else the parent's UUID (version 3).
    parents: Vec<Option<Option<uuid::Uuid>>>,
    /// The `version` member.
    version: u64,
    duplicate: RefCell<Option<String>>,
}

/// Reads a version-2 or version-3 record for `W` into a plan; `None` when it declines (see
/// module docs).
pub(crate) fn plan_bytes<W: Roster>(bytes: &[u8]) -> Option<Plan>
where
    W::Components: RecordList,
{
    plan_form::<W>(bytes, Form::Record)
}

/// Reads a level file for `W` into a plan; `None` when it declines (the tree reader,
/// [`LevelFile::from_slice`](super::LevelFile::from_slice), then reads it).
pub(crate) fn plan_level_bytes<W: Roster>(bytes: &[u8]) -> Option<Plan>
where
    W::Components: RecordList,
{
    plan_form::<W>(bytes, Form::Level)
}

fn plan_form<W: Roster>(bytes: &[u8], form: Form) -> Option<Plan>
where
    W::Components: RecordList,
{
    // One UTF-8 check of the whole input (word-at-a-time over ASCII) instead of one per string:
    // serde_json's `StrRead` trusts its input, its `SliceRead` validates every string it reads.
    // Invalid UTF-8 declines, and the tree reader locates it.
    let text = core::str::from_utf8(bytes).ok()?;
    // The line layout spends about 190 bytes on an entity of three small components, and no
    // entity takes less than about 90: sized for 128, the staging seldom grows.
    let expected = bytes.len() / 128;
    let mut reader = Reader {
        form,
        plan: Plan::new::<W>(expected),
        labels: Vec::with_capacity(expected),
        hasher: hashbrown::DefaultHashBuilder::default(),
        keys: Vec::new(),
        seen: vec![false; W::NAMES.len()],
        parents: Vec::with_capacity(expected),
        version: 0,
        duplicate: RefCell::new(None),
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let document = (RecordSeed::<W> {
        reader: &mut reader,
        _w: core::marker::PhantomData,
    })
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    // Labels are unique.
    reader.labels.sort_unstable();
    if reader.labels.windows(2).any(|w| w[0] == w[1]) {
        return None;
    }
    // Every entity's identity is distinct, and distinct from the document's.
    if !reader.plan.seal() || document.is_some_and(|d| reader.plan.lookup(d.as_uuid()).is_some()) {
        return None;
    }
    // Version 3 and levels: every entity has a `parent` member, naming an entity of the
    // document, and the links are acyclic; version 2: none has one.
    let v3 = reader.version == 3 || form == Form::Level;
    if reader.parents.iter().any(|p| p.is_some() != v3) {
        return None;
    }
    if v3 {
        for (i, p) in reader.parents.iter().enumerate() {
            if let Some(Some(uuid)) = p {
                reader.plan.entities[i].parent = Some(reader.plan.lookup(*uuid)?);
            }
        }
        let plan = &reader.plan;
        if first_cycle(plan.entities.len(), |i| {
            plan.entities[i].parent.map(|p| p as usize)
        })
        .is_some()
        {
            return None;
        }
    }
    Some(reader.plan)
}

/// A string borrowed from the input when it has no escapes (serde's own `Cow<str>` always
/// copies).
struct Text<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Text<'de> {
    #[inline]
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            #[inline]
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

/// An entity's or a parent's UUID: a `SourceObjectId` (version 4) in a record, any UUID of the
/// level-file policy in a level.
fn parse_id(text: &str, level: bool) -> Option<uuid::Uuid> {
    if level {
        parse_uuid(text.as_bytes(), UuidPolicy::LevelFile).ok()
    } else {
        text.parse::<SourceObjectId>().ok().map(|id| id.as_uuid())
    }
}

// The seeds and visitors of the per-entity path are `#[inline]`: their instances are made in
// the crate that names the roster, and with its default sixteen codegen units a call into
// another unit is not inlined (restore ran 11% more instructions than with one unit; 2.5%
// with the hints, `perf-results/content.md`).

struct RecordSeed<'r, 'de, W> {
    reader: &'r mut Reader<'de>,
    _w: core::marker::PhantomData<W>,
}

impl<'de, W: Roster> DeserializeSeed<'de> for RecordSeed<'_, 'de, W>
where
    W::Components: RecordList,
{
    /// A record's document id (`None` for a level).
    type Value = Option<AssetId>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Option<AssetId>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, W: Roster> Visitor<'de> for RecordSeed<'_, 'de, W>
where
    W::Components: RecordList,
{
    type Value = Option<AssetId>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a World record or a level file")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<AssetId>, A::Error> {
        let level = self.reader.form == Form::Level;
        let mut seen = [false; 4];
        let mut document = None;
        while let Some(key) = map.next_key::<Text<'de>>()?.map(|t| t.0) {
            // A level's `format` takes the record's `schema` slot; it has no `document`.
            let slot = match (&*key, level) {
                ("version", _) => 0,
                ("schema", false) | ("format", true) => 1,
                ("document", false) => 2,
                ("entities", _) => 3,
                _ => return Err(fail()),
            };
            if std::mem::replace(&mut seen[slot], true) {
                return Err(fail());
            }
            match slot {
                0 => match (map.next_value::<Value>()?.as_u64(), level) {
                    (Some(v @ (2 | 3)), false) => self.reader.version = v,
                    (Some(LEVEL_VERSION), true) => self.reader.version = LEVEL_VERSION,
                    _ => return Err(fail()),
                },
                1 if level => {
                    if map.next_value::<Text<'de>>()?.0 != LEVEL_FORMAT {
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
            Some(d) if !level && seen.iter().all(|s| *s) => Ok(Some(d)),
            None if level && seen[0] && seen[1] && seen[3] => Ok(None),
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

    #[inline]
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

    #[inline]
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

    #[inline]
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

    #[inline]
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let r = self.reader;
        let entity = r.plan.next_index();
        let mut seen = [false; 5];
        let mut uuid = None;
        let mut name: Option<Cow<'de, str>> = None;
        let mut label: &'de str = "";
        let mut parent = None;
        r.seen.iter_mut().for_each(|s| *s = false);
        let level = r.form == Form::Level;
        while let Some(key) = map.next_key::<Text<'de>>()?.map(|t| t.0) {
            let slot = match (&*key, level) {
                ("uuid", _) => 0,
                ("label", _) => 1,
                ("name", _) => 2,
                ("components", _) => 3,
                ("parent", _) => 4,
                _ => return Err(fail()),
            };
            if std::mem::replace(&mut seen[slot], true) {
                return Err(fail());
            }
            match slot {
                0 => {
                    let text = map.next_value::<Text<'de>>()?.0;
                    uuid = Some(parse_id(&text, level).ok_or_else(fail::<A::Error>)?);
                }
                1 => match map.next_value::<Text<'de>>()?.0 {
                    Cow::Borrowed(text) if is_legacy_id(text) => {
                        r.labels.push(r.hasher.hash_one(text));
                        label = text;
                    }
                    _ => return Err(fail()),
                },
                2 => name = Some(map.next_value::<Text<'de>>()?.0),
                4 => {
                    let text = map.next_value::<Text<'de>>()?.0;
                    parent = Some(if text.is_empty() {
                        None
                    } else {
                        Some(parse_id(&text, level).ok_or_else(fail::<A::Error>)?)
                    });
                }
                _ => map.next_value_seed(ComponentsSeed::<W> {
                    reader: &mut *r,
                    entity,
                    _w: core::marker::PhantomData,
                })?,
            }
        }
        // A record entity has a label; a level entity may have one, and always a parent.
        let members = if level {
            seen[0] && seen[2] && seen[3] && seen[4]
        } else {
            seen[..4].iter().all(|s| *s)
        };
        match (uuid, name) {
            (Some(uuid), Some(name)) if members => {
                r.plan.push_entity(uuid, &name, label);
                r.parents.push(parent);
                Ok(())
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

    #[inline]
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

    #[inline]
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
            let mut next = NextTyped {
                map: &mut map,
                reader: &mut *r,
                entity: self.entity,
                result: None,
            };
            W::Components::visit_at(0, k, &mut next);
            next.result.ok_or_else(fail::<A::Error>)??;
        }
        Ok(())
    }
}

/// Reads the next map value as the component type the visitor is called with, and stages it.
struct NextTyped<'a, 'r, 'de, A: MapAccess<'de>> {
    map: &'a mut A,
    reader: &'r mut Reader<'de>,
    entity: usize,
    /// `None` until the visitor ran.
    result: Option<Result<(), A::Error>>,
}

impl<'de, A: MapAccess<'de>> RecordVisitor for NextTyped<'_, '_, 'de, A> {
    #[inline]
    fn visit<T: RecordComponent>(&mut self, index: usize) {
        let r = &mut *self.reader;
        r.keys.clear();
        let seed = Typed::<T> {
            keys: &mut r.keys,
            duplicate: &r.duplicate,
            _t: core::marker::PhantomData,
        };
        self.result = Some(
            self.map
                .next_value_seed(seed)
                .map(|v| r.plan.push_value(self.entity, index, &v)),
        );
    }
}

/// Decodes one component's properties as `T` straight from the stream, with the tree
/// reader's rules: `T` must read a struct (else: declined), every property is one of its
/// fields and appears once, a scalar property goes to its field as is, and a compound one is
/// first read as a strict `Value` (a member named twice at any depth refused), as the tree
/// reader holds it.
struct Typed<'r, 'de, T> {
    keys: &'r mut Vec<Cow<'de, str>>,
    duplicate: &'r RefCell<Option<String>>,
    _t: core::marker::PhantomData<T>,
}

impl<'de, T: RecordComponent> DeserializeSeed<'de> for Typed<'_, 'de, T> {
    type Value = T;

    #[inline]
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        T::deserialize(Direct {
            de: d,
            keys: self.keys,
            duplicate: self.duplicate,
        })
    }
}

struct Direct<'r, 'de, D> {
    de: D,
    keys: &'r mut Vec<Cow<'de, str>>,
    duplicate: &'r RefCell<Option<String>>,
}

impl<'de, D: de::Deserializer<'de>> de::Deserializer<'de> for Direct<'_, 'de, D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, D::Error> {
        Err(fail())
    }

    #[inline]
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.de.deserialize_map(StructOf {
            visitor,
            fields,
            keys: self.keys,
            duplicate: self.duplicate,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

struct StructOf<'r, 'de, V> {
    visitor: V,
    fields: &'static [&'static str],
    keys: &'r mut Vec<Cow<'de, str>>,
    duplicate: &'r RefCell<Option<String>>,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for StructOf<'_, 'de, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of properties")
    }

    #[inline]
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(Checked {
            inner: map,
            fields: self.fields,
            keys: self.keys,
            duplicate: self.duplicate,
        })
    }
}

/// The properties of one component: each key one of the fields, none twice.
struct Checked<'r, 'de, A> {
    inner: A,
    fields: &'static [&'static str],
    keys: &'r mut Vec<Cow<'de, str>>,
    duplicate: &'r RefCell<Option<String>>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Checked<'_, 'de, A> {
    type Error = A::Error;

    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let Some(Text(key)) = self.inner.next_key::<Text<'de>>()? else {
            return Ok(None);
        };
        if !self.fields.contains(&&*key) || self.keys.contains(&key) {
            return Err(fail());
        }
        self.keys.push(key.clone());
        match key {
            Cow::Borrowed(k) => seed.deserialize(BorrowedStrDeserializer::new(k)),
            Cow::Owned(k) => seed.deserialize(StringDeserializer::new(k)),
        }
        .map(Some)
    }

    #[inline]
    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        self.inner.next_value_seed(Switch {
            seed,
            duplicate: self.duplicate,
        })
    }
}

/// Hands a scalar to `seed` as it comes, a compound value as a strict `Value`.
struct Switch<'r, S> {
    seed: S,
    duplicate: &'r RefCell<Option<String>>,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Switch<'_, S> {
    type Value = S::Value;

    #[inline]
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, S: DeserializeSeed<'de>> Visitor<'de> for Switch<'_, S> {
    type Value = S::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a property value")
    }

    #[inline]
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<S::Value, E> {
        self.seed.deserialize(BoolDeserializer::new(v))
    }

    #[inline]
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<S::Value, E> {
        self.seed.deserialize(I64Deserializer::new(v))
    }

    #[inline]
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<S::Value, E> {
        self.seed.deserialize(U64Deserializer::new(v))
    }

    #[inline]
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<S::Value, E> {
        // As the tree reader: a number it cannot hold is refused.
        if serde_json::Number::from_f64(v).is_none() {
            return Err(fail());
        }
        self.seed.deserialize(F64Deserializer::new(v))
    }

    #[inline]
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<S::Value, E> {
        self.seed.deserialize(BorrowedStrDeserializer::new(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<S::Value, E> {
        self.seed.deserialize(StringDeserializer::new(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<S::Value, E> {
        self.seed.deserialize(StringDeserializer::new(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<S::Value, E> {
        self.seed.deserialize(UnitDeserializer::new())
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<S::Value, A::Error> {
        let value = StrictValue {
            duplicate: self.duplicate,
        }
        .visit_map(map)?;
        self.seed.deserialize(value).map_err(de::Error::custom)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<S::Value, A::Error> {
        let value = StrictValue {
            duplicate: self.duplicate,
        }
        .visit_seq(seq)?;
        self.seed.deserialize(value).map_err(de::Error::custom)
    }
}
