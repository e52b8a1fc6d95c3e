//! The canonical JSON writer of content values: what `serde_json::to_writer_pretty` writes
//! for the same value held as a `serde_json::Value` (members sorted by name at every depth,
//! two-space indent), written straight from a value's `Serialize` impl, without building the
//! `Value`.
//!
//! ```text
//! {                 an object: "{", then per member "\n" + indent + "\"name\": " + value,
//!   "a": 1,         members joined by ",", then "\n" + outer indent + "}"; "{}" when empty
//!   "b": [          arrays alike with "[" "]"; "[]" when empty
//!     2
//!   ]
//! }
//! ```
//!
//! Floats are written in their shortest round-trip form (`f32` as an `f32`: `0.1`, not the
//! `f64` expansion); non-finite floats are refused (JSON has no spelling for them and a record
//! would not restore). Enum variants with data are refused (no plain-data component has them).

use std::borrow::Cow;
use std::fmt;

use serde::ser::{self, Serialize};

/// Why a value has no canonical JSON form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CanonError(pub(crate) String);

impl fmt::Display for CanonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CanonError {}

impl ser::Error for CanonError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self(msg.to_string())
    }
}

type R = Result<(), CanonError>;

/// Writes `n` levels of two-space indent.
pub(crate) fn indent(out: &mut Vec<u8>, n: usize) {
    for _ in 0..n {
        out.extend_from_slice(b"  ");
    }
}

/// Writes `s` as a JSON string (serde_json's escaping).
pub(crate) fn string(out: &mut Vec<u8>, s: &str) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// Scratch reused across values: spans of the objects being written (a stack), and room to
/// reorder one object's members.
#[derive(Debug, Default)]
pub(crate) struct Ctx {
    /// `(name, start, end)` of each member's `"name": value` text in the output.
    spans: Vec<(Cow<'static, str>, usize, usize)>,
    scratch: Vec<u8>,
}

/// Writes `value` canonically, as a value nested `level` levels deep.
pub(crate) fn write<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    level: usize,
    ctx: &mut Ctx,
    value: &T,
) -> R {
    value.serialize(Canon { out, level, ctx })
}

struct Canon<'a> {
    out: &'a mut Vec<u8>,
    level: usize,
    ctx: &'a mut Ctx,
}

impl Canon<'_> {
    fn scalar<T: Serialize>(self, v: T) -> R {
        serde_json::to_writer(&mut *self.out, &v).map_err(|e| CanonError(e.to_string()))
    }
}

/// The members of an object being written, in the order they come; [`finish`](Self::finish)
/// reorders them by name when they did not come sorted.
struct Members<'a> {
    out: &'a mut Vec<u8>,
    level: usize,
    ctx: &'a mut Ctx,
    /// This object's first span in `ctx.spans`.
    base: usize,
    /// Where its first member starts (just past `{`).
    open: usize,
    key: Option<String>,
}

impl<'a> Members<'a> {
    fn new(out: &'a mut Vec<u8>, level: usize, ctx: &'a mut Ctx) -> Self {
        out.push(b'{');
        let open = out.len();
        let base = ctx.spans.len();
        Self {
            out,
            level,
            ctx,
            base,
            open,
            key: None,
        }
    }

    fn member<T: Serialize + ?Sized>(&mut self, name: Cow<'static, str>, value: &T) -> R {
        let first = self.ctx.spans.len() == self.base;
        self.out
            .extend_from_slice(if first { b"\n" } else { b",\n" });
        indent(self.out, self.level + 1);
        let start = self.out.len();
        string(self.out, &name);
        self.out.extend_from_slice(b": ");
        write(self.out, self.level + 1, self.ctx, value)?;
        let end = self.out.len();
        self.ctx.spans.push((name, start, end));
        Ok(())
    }

    fn finish(self) -> R {
        let spans = &self.ctx.spans[self.base..];
        if spans.is_empty() {
            self.out.push(b'}');
            return Ok(());
        }
        if !spans.windows(2).all(|w| w[0].0 < w[1].0) {
            let mut order: Vec<usize> = (0..spans.len()).collect();
            order.sort_by(|&a, &b| spans[a].0.cmp(&spans[b].0));
            if order.windows(2).any(|w| spans[w[0]].0 == spans[w[1]].0) {
                return Err(CanonError("a member is named twice".into()));
            }
            let scratch = &mut self.ctx.scratch;
            scratch.clear();
            scratch.extend_from_slice(&self.out[self.open..]);
            self.out.truncate(self.open);
            for (i, &k) in order.iter().enumerate() {
                let (_, start, end) = &spans[k];
                self.out
                    .extend_from_slice(if i == 0 { b"\n" } else { b",\n" });
                indent(self.out, self.level + 1);
                self.out
                    .extend_from_slice(&scratch[start - self.open..end - self.open]);
            }
        }
        self.ctx.spans.truncate(self.base);
        self.out.push(b'\n');
        indent(self.out, self.level);
        self.out.push(b'}');
        Ok(())
    }
}

/// The elements of an array being written.
struct Elements<'a> {
    out: &'a mut Vec<u8>,
    level: usize,
    ctx: &'a mut Ctx,
    any: bool,
}

impl Elements<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
        self.out
            .extend_from_slice(if self.any { b",\n" } else { b"[\n" });
        self.any = true;
        indent(self.out, self.level + 1);
        write(self.out, self.level + 1, self.ctx, value)
    }

    fn finish(self) -> R {
        if self.any {
            self.out.push(b'\n');
            indent(self.out, self.level);
            self.out.push(b']');
        } else {
            self.out.extend_from_slice(b"[]");
        }
        Ok(())
    }
}

fn finite(v: f64) -> R {
    if v.is_finite() {
        Ok(())
    } else {
        Err(CanonError(format!("non-finite number {v}")))
    }
}

fn unsupported(what: &str) -> CanonError {
    CanonError(format!("{what} has no record form"))
}

impl<'a> ser::Serializer for Canon<'a> {
    type Ok = ();
    type Error = CanonError;
    type SerializeSeq = Elements<'a>;
    type SerializeTuple = Elements<'a>;
    type SerializeTupleStruct = Elements<'a>;
    type SerializeTupleVariant = ser::Impossible<(), CanonError>;
    type SerializeMap = Members<'a>;
    type SerializeStruct = Members<'a>;
    type SerializeStructVariant = ser::Impossible<(), CanonError>;

    fn serialize_bool(self, v: bool) -> R {
        self.scalar(v)
    }
    fn serialize_i8(self, v: i8) -> R {
        self.scalar(v)
    }
    fn serialize_i16(self, v: i16) -> R {
        self.scalar(v)
    }
    fn serialize_i32(self, v: i32) -> R {
        self.scalar(v)
    }
    fn serialize_i64(self, v: i64) -> R {
        self.scalar(v)
    }
    fn serialize_i128(self, v: i128) -> R {
        self.scalar(v)
    }
    fn serialize_u8(self, v: u8) -> R {
        self.scalar(v)
    }
    fn serialize_u16(self, v: u16) -> R {
        self.scalar(v)
    }
    fn serialize_u32(self, v: u32) -> R {
        self.scalar(v)
    }
    fn serialize_u64(self, v: u64) -> R {
        self.scalar(v)
    }
    fn serialize_u128(self, v: u128) -> R {
        self.scalar(v)
    }
    fn serialize_f32(self, v: f32) -> R {
        finite(f64::from(v))?;
        self.scalar(v)
    }
    fn serialize_f64(self, v: f64) -> R {
        finite(v)?;
        self.scalar(v)
    }
    fn serialize_char(self, v: char) -> R {
        self.scalar(v)
    }
    fn serialize_str(self, v: &str) -> R {
        string(self.out, v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> R {
        let mut seq = self.serialize_seq(Some(v.len()))?;
        for b in v {
            ser::SerializeSeq::serialize_element(&mut seq, b)?;
        }
        ser::SerializeSeq::end(seq)
    }
    fn serialize_none(self) -> R {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> R {
        v.serialize(self)
    }
    fn serialize_unit(self) -> R {
        self.serialize_none()
    }
    fn serialize_unit_struct(self, _: &'static str) -> R {
        self.serialize_none()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> R {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> R {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> R {
        Err(unsupported("an enum variant with data"))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Elements<'a>, CanonError> {
        Ok(Elements {
            out: self.out,
            level: self.level,
            ctx: self.ctx,
            any: false,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Elements<'a>, CanonError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<Elements<'a>, CanonError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, CanonError> {
        Err(unsupported("an enum variant with data"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Members<'a>, CanonError> {
        Ok(Members::new(self.out, self.level, self.ctx))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Members<'a>, CanonError> {
        Ok(Members::new(self.out, self.level, self.ctx))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, CanonError> {
        Err(unsupported("an enum variant with data"))
    }
}

impl ser::SerializeSeq for Elements<'_> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        self.element(v)
    }
    fn end(self) -> R {
        self.finish()
    }
}

impl ser::SerializeTuple for Elements<'_> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        self.element(v)
    }
    fn end(self) -> R {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for Elements<'_> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        self.element(v)
    }
    fn end(self) -> R {
        self.finish()
    }
}

impl ser::SerializeStruct for Members<'_> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, name: &'static str, v: &T) -> R {
        self.member(Cow::Borrowed(name), v)
    }
    fn end(self) -> R {
        self.finish()
    }
}

impl ser::SerializeMap for Members<'_> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> R {
        match serde_json::to_value(key) {
            Ok(serde_json::Value::String(s)) => {
                self.key = Some(s);
                Ok(())
            }
            _ => Err(CanonError("a map key that is not a string".into())),
        }
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        let key = self
            .key
            .take()
            .ok_or_else(|| CanonError("a map value without a key".into()))?;
        self.member(Cow::Owned(key), v)
    }
    fn end(self) -> R {
        self.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use serde_json::json;

    /// The writer agrees with serde_json's pretty output of the same value as a `Value`.
    #[test]
    fn agrees_with_pretty_values() {
        #[derive(Serialize)]
        struct Inner {
            z: u8,
            a: [f32; 2],
        }
        #[derive(Serialize)]
        struct Outer {
            b: Inner,
            a: &'static str,
            e: Vec<u8>,
            o: Option<u32>,
            m: std::collections::BTreeMap<String, i64>,
        }
        let v = Outer {
            b: Inner {
                z: 1,
                a: [0.5, -2.0],
            },
            a: "q\"\n",
            e: vec![],
            o: None,
            m: [("y".to_owned(), -1), ("x".to_owned(), 2)]
                .into_iter()
                .collect(),
        };
        let mut ours = Vec::new();
        write(&mut ours, 0, &mut Ctx::default(), &v).unwrap();
        let theirs = serde_json::to_vec_pretty(&serde_json::to_value(&v).unwrap()).unwrap();
        assert_eq!(
            String::from_utf8(ours).unwrap(),
            String::from_utf8(theirs).unwrap()
        );
        let mut nested = Vec::new();
        write(
            &mut nested,
            2,
            &mut Ctx::default(),
            &json!({"k": [1, {"j": 2}]}),
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(nested).unwrap(),
            "{\n      \"k\": [\n        1,\n        {\n          \"j\": 2\n        }\n      ]\n    }"
        );
        assert!(write(&mut Vec::new(), 0, &mut Ctx::default(), &f32::NAN).is_err());
        let mut f = Vec::new();
        write(&mut f, 0, &mut Ctx::default(), &0.1f32).unwrap();
        assert_eq!(f, b"0.1");
    }
}
