//! Strict JSON reading shared by every content format.
//!
//! Reading is two steps. [`parse`] turns bytes into a [`serde_json::Value`] and refuses what
//! serde_json lets through: a member named twice in one object (serde_json's own `Value`
//! silently keeps the last). A format's decoder then walks the value with [`Object`], which
//! refuses unknown and missing members, and reports each broken rule as a [`Fault`]: the kind
//! and a [`JsonPath`](super::json_path::JsonPath). Only when a fault is reported does
//! [`locate`](super::json_path::locate) read the bytes a second time to find the line and
//! column of that path, so the successful path pays for no position bookkeeping.

use core::fmt;
use std::cell::RefCell;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::identity::UuidError;

use super::error::{Fault, Located, Shape};
use super::json_path::{key, Step};

/// Parses one JSON value, refusing duplicate members at any depth and trailing characters.
pub(crate) fn parse(bytes: &[u8]) -> Result<Value, (Shape, usize, usize)> {
    match core::str::from_utf8(bytes) {
        // One UTF-8 check of the whole input (word-at-a-time over ASCII) instead of one per
        // string: serde_json's `StrRead` trusts its input, its `SliceRead` checks each string.
        Ok(text) => parse_with(serde_json::Deserializer::from_str(text)),
        // The slice reader stops where the bytes stop being UTF-8, with that position.
        Err(_) => parse_with(serde_json::Deserializer::from_slice(bytes)),
    }
}

fn parse_with<'de, R: serde_json::de::Read<'de>>(
    mut de: serde_json::Deserializer<R>,
) -> Result<Value, (Shape, usize, usize)> {
    let duplicate = RefCell::new(None);
    let value = StrictValue {
        duplicate: &duplicate,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    value.map_err(|e| {
        let shape = match duplicate.into_inner() {
            Some(name) => Shape::DuplicateMember { name },
            None => Shape::Syntax {
                message: message_of(&e),
            },
        };
        (shape, e.line(), e.column())
    })
}

/// Whether serde_json's `Map` iterates in key order. It does unless some crate in the build
/// turns on serde_json's `preserve_order` feature (features unify across a whole build), which
/// makes it iterate in insertion order; the canonical writers then write [`sorted`] copies.
pub(crate) fn maps_sorted() -> bool {
    static SORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SORTED.get_or_init(|| {
        let mut m = Map::new();
        m.insert("b".into(), Value::Null);
        m.insert("a".into(), Value::Null);
        m.keys().next().is_some_and(|k| k == "a")
    })
}

/// `value` with every object's members inserted in key order, so that it iterates sorted
/// whatever `Map` keeps.
pub(crate) fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(m) => {
            let mut members: Vec<(&String, &Value)> = m.iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                members
                    .into_iter()
                    .map(|(k, v)| (k.clone(), sorted(v)))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        v => v.clone(),
    }
}

/// serde_json's message without its " at line L column C" suffix (the position is carried apart).
fn message_of(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

/// A `Value` builder that records the first duplicate member name it meets (and refuses it).
#[derive(Clone, Copy)]
pub(crate) struct StrictValue<'a> {
    pub(crate) duplicate: &'a RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for StrictValue<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictValue<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number out of range"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            // One search per member: the vacant entry is filled once the value is read.
            match members.entry(name) {
                serde_json::map::Entry::Occupied(o) => {
                    let name = o.key().clone();
                    let message = format!("duplicate member `{name}`");
                    *self.duplicate.borrow_mut() = Some(name);
                    return Err(de::Error::custom(message));
                }
                serde_json::map::Entry::Vacant(v) => {
                    v.insert(map.next_value_seed(self)?);
                }
            }
        }
        Ok(Value::Object(members))
    }
}

/// Parses `bytes` and converts a rejection into a located one of the caller's kind.
pub(crate) fn parse_located<K: From<Shape>>(
    file: &std::path::Path,
    bytes: &[u8],
) -> Result<Value, Located<K>> {
    parse(bytes).map_err(|(shape, line, column)| Located {
        file: file.to_path_buf(),
        line,
        column,
        kind: shape.into(),
    })
}

/// A JSON object being decoded: members are taken out one by one.
pub(crate) struct Object<'p> {
    members: Map<String, Value>,
    path: &'p [Step],
}

impl<'p> Object<'p> {
    /// The object at `path`, or `WrongType` when `value` is not an object.
    pub(crate) fn new(value: Value, path: &'p [Step]) -> Result<Self, Fault<Shape>> {
        match value {
            Value::Object(members) => Ok(Self { members, path }),
            _ => Err(Fault::new(
                Shape::WrongType {
                    expected: "an object",
                },
                path,
            )),
        }
    }

    /// The path of this object.
    pub(crate) fn path(&self) -> &'p [Step] {
        self.path
    }

    /// Looks at a member without taking it.
    pub(crate) fn get(&self, name: &str) -> Option<&Value> {
        self.members.get(name)
    }

    /// Refuses the first member (in name order) that is not in `known`.
    pub(crate) fn deny_unknown(&self, known: &[&str]) -> Result<(), Fault<Shape>> {
        match self.members.keys().find(|k| !known.contains(&k.as_str())) {
            Some(name) => Err(Fault::new(
                Shape::UnknownMember { name: name.clone() },
                &key(self.path, name),
            )),
            None => Ok(()),
        }
    }

    /// Takes a required member.
    pub(crate) fn take(&mut self, name: &'static str) -> Result<Value, Fault<Shape>> {
        self.members
            .remove(name)
            .ok_or_else(|| Fault::new(Shape::MissingMember { name }, self.path))
    }

    /// Takes an optional member.
    pub(crate) fn take_optional(&mut self, name: &str) -> Option<Value> {
        self.members.remove(name)
    }

    /// The members left, in name order.
    pub(crate) fn into_members(self) -> Map<String, Value> {
        self.members
    }
}

/// The string `value` at `path`.
pub(crate) fn string(value: Value, path: &[Step]) -> Result<String, Fault<Shape>> {
    match value {
        Value::String(s) => Ok(s),
        _ => Err(Fault::new(
            Shape::WrongType {
                expected: "a string",
            },
            path,
        )),
    }
}

/// The array `value` at `path`.
pub(crate) fn array(value: Value, path: &[Step]) -> Result<Vec<Value>, Fault<Shape>> {
    match value {
        Value::Array(items) => Ok(items),
        _ => Err(Fault::new(
            Shape::WrongType {
                expected: "an array",
            },
            path,
        )),
    }
}

/// The JSON text of a value, for messages (`1.5`, `"two"`).
pub(crate) fn text_of(value: &Value) -> String {
    value.to_string()
}

/// Takes member `name` of `obj` as a nonnil version-4 UUID (`AssetId` or `SourceObjectId`).
pub(crate) fn uuid_member<T, K>(obj: &mut Object<'_>, name: &'static str) -> Result<T, Fault<K>>
where
    T: core::str::FromStr<Err = UuidError>,
    K: From<Shape> + From<InvalidUuid>,
{
    // The path is built only for a fault.
    let at = |obj: &Object<'_>| key(obj.path(), name);
    let text = match obj.take(name).map_err(Fault::convert)? {
        Value::String(s) => s,
        v => string(v, &at(obj)).map_err(Fault::convert)?,
    };
    text.parse()
        .map_err(|reason| Fault::new(InvalidUuid { text, reason }, &at(obj)))
}

/// A UUID text refused by the durable-v4 policy (converted into each format's error kind).
#[derive(Debug)]
pub(crate) struct InvalidUuid {
    pub(crate) text: String,
    pub(crate) reason: UuidError,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shortest float text reads back as the value it was written from, also for these two,
    /// where serde_json's default parser is one ULP off (`float_roundtrip` is on), and the
    /// canonical writer writes the same text again.
    #[test]
    fn floats_read_back_exactly() {
        for text in ["1.947700395895162e-169", "1.0715660391465826e-75"] {
            let v = parse(format!("[{text}]").as_bytes()).unwrap();
            let x = v[0].as_f64().unwrap();
            // `text` is the shortest form of exactly one value: the one read.
            assert_eq!(serde_json::to_string(&x).unwrap(), text);
            let mut out = Vec::new();
            super::super::canonical::write(&mut out, &mut Default::default(), &x).unwrap();
            assert_eq!(out, text.as_bytes());
        }
    }

    #[test]
    fn duplicates_are_refused_at_any_depth() {
        let ok = parse(br#"{"a": {"b": 1, "c": [1, {"d": 2}]}}"#).unwrap();
        assert_eq!(ok["a"]["c"][1]["d"], 2);
        for (text, name) in [
            (r#"{"a": 1, "a": 2}"#, "a"),
            (r#"{"x": {"b": 1, "b": 1}}"#, "b"),
            (r#"[{"q": 1, "\u0071": 2}]"#, "q"),
        ] {
            let (shape, line, _) = parse(text.as_bytes()).unwrap_err();
            assert_eq!(
                shape,
                Shape::DuplicateMember {
                    name: name.to_owned()
                }
            );
            assert_eq!(line, 1);
        }
    }

    /// `sorted` keeps the value and writes members in key order at every depth, whichever
    /// order the `Map` keeps (CI also runs the content suites with `preserve_order` on).
    #[test]
    fn sorted_values_write_their_members_in_key_order() {
        let v = parse(br#"{"b": [{"z": 1, "y": {"q": 0, "p": 1}}], "a": null}"#).unwrap();
        let s = sorted(&v);
        assert_eq!(s, v);
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"a":null,"b":[{"y":{"p":1,"q":0},"z":1}]}"#
        );
    }

    #[test]
    fn syntax_errors_keep_serde_json_positions() {
        let invalid_utf8 = b"{\n  \"a\": [1,\n  \"b\xffc\"]}";
        for text in [
            &b"{\n  \"a\": tru\n}"[..],
            b"[1, 2",
            b"{\"a\" 1}",
            b"\xff",
            invalid_utf8,
        ] {
            let (shape, line, column) = parse(text).unwrap_err();
            assert!(matches!(shape, Shape::Syntax { .. }), "{shape:?}");
            let theirs = serde_json::from_slice::<Value>(text).unwrap_err();
            assert_eq!((line, column), (theirs.line(), theirs.column()));
        }
        let (shape, ..) = parse(b"{} {}").unwrap_err();
        assert!(matches!(shape, Shape::Syntax { ref message } if message.contains("trailing")));
    }
}
