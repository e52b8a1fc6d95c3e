//! Paths into a JSON document and where they lie in its bytes.
//!
//! A rule broken while decoding is reported with the [`JsonPath`] of the offending value;
//! [`locate`] turns that path into serde_json's line and column by reading the bytes a second
//! time, so a document that is accepted pays for no position bookkeeping.

use core::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// One step of a path into a JSON document: a member name or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The member of an object with this name.
    Key(String),
    /// The element of an array at this index (0-based).
    Index(usize),
}

/// A path from the root of a JSON document to one value (empty: the root itself).
pub type JsonPath = Vec<Step>;

/// Extends a path by one step without touching the original.
pub(crate) fn at(path: &[Step], step: Step) -> JsonPath {
    let mut p = Vec::with_capacity(path.len() + 1);
    p.extend_from_slice(path);
    p.push(step);
    p
}

pub(crate) fn key(path: &[Step], name: &str) -> JsonPath {
    at(path, Step::Key(name.to_owned()))
}

pub(crate) fn index(path: &[Step], i: usize) -> JsonPath {
    at(path, Step::Index(i))
}

/// The line and column of the value at `path` in `bytes` (1:1 when the path is not there).
///
/// Walks the bytes with serde_json, skipping everything off the path, and stops with a marker
/// error once the value at the path has been read: serde_json stamps that error with its
/// position, just past the value (for an object or array, just past its opening bracket).
pub(crate) fn locate(bytes: &[u8], path: &[Step]) -> (usize, usize) {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match (Walk { path }).deserialize(&mut de) {
        Err(e) if e.is_data() && e.line() > 0 => opening_bracket(bytes, e.line(), e.column()),
        _ => (1, 1),
    }
}

/// serde_json stamps an error raised on entering an object or array after skipping the
/// whitespace that follows the bracket; step back to the bracket itself.
fn opening_bracket(bytes: &[u8], line: usize, column: usize) -> (usize, usize) {
    let mut start = 0;
    let mut l = 1;
    while l < line {
        match bytes[start..].iter().position(|&b| b == b'\n') {
            Some(i) => start += i + 1,
            None => return (line, column),
        }
        l += 1;
    }
    let consumed = (start + column).min(bytes.len());
    let before = bytes[..consumed]
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    match before {
        Some(i) if matches!(bytes[i], b'{' | b'[') && i + 1 < consumed => {
            let line_start = bytes[..i]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |n| n + 1);
            let line = 1 + bytes[..i].iter().filter(|&&b| b == b'\n').count();
            (line, i + 1 - line_start)
        }
        _ => (line, column),
    }
}

const HERE: &str = "ludus-content-locate";

struct Walk<'p> {
    path: &'p [Step],
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(E::custom(HERE))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(E::custom(HERE))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(E::custom(HERE))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(E::custom(HERE))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(E::custom(HERE))
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(E::custom(HERE))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some((first, rest)) = self.path.split_first() else {
            return Err(de::Error::custom(HERE));
        };
        let Step::Index(target) = *first else {
            return Ok(());
        };
        for _ in 0..target {
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
        }
        seq.next_element_seed(Walk { path: rest })?;
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some((first, rest)) = self.path.split_first() else {
            return Err(de::Error::custom(HERE));
        };
        let Step::Key(target) = first else {
            return Ok(());
        };
        while let Some(name) = map.next_key::<String>()? {
            if name == *target {
                return map.next_value_seed(Walk { path: rest });
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

/// The path of a document's `i`-th entity (`$.entities[i]`, in records and level files).
pub(crate) fn entity_path(i: usize) -> Vec<Step> {
    index(&[Step::Key("entities".into())], i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_finds_values_by_path() {
        let text = b"{\n  \"a\": [\n    1,\n    {\"b\": \"xy\"}\n  ]\n}";
        let path = [Step::Key("a".into()), Step::Index(1), Step::Key("b".into())];
        assert_eq!(locate(text, &path), (4, 14));
        assert_eq!(locate(text, &path[..1]), (2, 8), "the opening bracket");
        assert_eq!(locate(text, &path[..2]), (4, 5));
        assert_eq!(locate(text, &[]), (1, 1));
        assert_eq!(locate(b"{\"a\": []}", &[Step::Key("a".into())]), (1, 8));
        assert_eq!(locate(text, &[Step::Key("zz".into())]), (1, 1));
        assert_eq!(locate(text, &[Step::Index(0)]), (1, 1));
    }
}
