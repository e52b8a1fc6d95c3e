//! The canonical JSON writer of content values: what `serde_json::to_writer` writes for the
//! same value held as a `serde_json::Value` (compact, members sorted by name at every depth),
//! written straight from a value's `Serialize` impl, without building the `Value`.
//!
//! ```text
//! {"a":1,"b":[2,{"c":3}],"d":{}}
//! ```
//!
//! Floats are written in their shortest round-trip form (`f32` as an `f32`: `0.1`, not the
//! `f64` expansion); non-finite floats are refused (JSON has no spelling for them and a record
//! would not restore). Enum variants with data are refused (no plain-data component has them).

use std::fmt;

use serde::ser::{self, Serialize};

/// Why a value has no canonical JSON form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CanonError(pub(crate) Box<str>);

impl CanonError {
    /// Boxed, so every `Result<(), CanonError>` the writer returns fits two registers.
    fn new(message: impl Into<String>) -> Self {
        Self(message.into().into_boxed_str())
    }
}

impl fmt::Display for CanonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CanonError {}

impl ser::Error for CanonError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self::new(msg.to_string())
    }
}

type R = Result<(), CanonError>;

/// Writes `s` as a JSON string (serde_json's escaping).
pub(crate) fn string(out: &mut Vec<u8>, s: &str) {
    escape(out, s);
}

/// Writes `s` as a JSON string; true when some byte needed an escape (the text between the
/// quotes is then not `s`'s bytes).
fn escape(out: &mut Vec<u8>, s: &str) -> bool {
    if !needs_escape(s.as_bytes()) {
        // Nothing to escape: serde_json would copy the bytes between the quotes.
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        false
    } else {
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
        true
    }
}

/// A member's written key (`"name"` or `"name":`): up to 16 bytes are appended with one
/// fixed-size copy, longer ones as a slice.
#[derive(Debug, Clone)]
pub(crate) struct Key {
    short: [u8; 16],
    len: usize,
    long: Box<[u8]>,
}

impl Key {
    pub(crate) fn new(bytes: &[u8]) -> Self {
        let mut short = [0; 16];
        let long = match short.get_mut(..bytes.len()) {
            Some(s) => {
                s.copy_from_slice(bytes);
                Box::default()
            }
            None => bytes.into(),
        };
        Self {
            short,
            len: bytes.len(),
            long,
        }
    }

    /// Appends the key to `out`.
    #[inline(always)]
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        if self.len <= 16 {
            let at = out.len();
            out.extend_from_slice(&self.short);
            out.truncate(at + self.len);
        } else {
            out.extend_from_slice(&self.long);
        }
    }
}

/// Whether some byte of `s` is a control byte, `"` or `\\` (what serde_json escapes), eight
/// bytes at a time.
#[inline]
fn needs_escape(s: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    // A byte of `x` is zero iff `(x - ONES) & !x & HIGH` has its high bit (exact for the
    // lowest such byte, which is all an "any" needs; `b < 0x20` is `b & 0xe0 == 0`).
    let any_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH != 0;
    let mut chunks = s.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_ne_bytes(c.try_into().unwrap_or([0; 8]));
        if any_zero(w & u64::from_ne_bytes([0xe0; 8]))
            || any_zero(w ^ u64::from_ne_bytes([b'"'; 8]))
            || any_zero(w ^ u64::from_ne_bytes([b'\\'; 8]))
        {
            return true;
        }
    }
    chunks
        .remainder()
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

/// Scratch reused across values: spans of the objects being written (a stack), room to
/// reorder one object's members, and the member names of the structs written so far.
#[derive(Debug, Default)]
pub(crate) struct Ctx {
    /// Each member's `"name":value` text in the output (a stack over the open objects).
    spans: Vec<Span>,
    /// The sorted order of one object's spans (free again once that object is written).
    order: Vec<usize>,
    scratch: Vec<u8>,
    /// Struct shapes learned from earlier values (at most [`SHAPES`]).
    shapes: Vec<Shape>,
    /// The member names of the structs being learned (a stack, like `spans`).
    learning: Vec<&'static str>,
    /// A map's key, between its `serialize_key` and `serialize_value` (taken before the value
    /// is written, so nested maps never see it).
    map_key: Option<String>,
}

/// Most struct shapes a [`Ctx`] remembers.
const SHAPES: usize = 64;

/// The address and length of a `&'static str`: two equal ids are the same bytes.
type StrId = (usize, usize);

fn id(s: &'static str) -> StrId {
    (s.as_ptr() as usize, s.len())
}

/// The members a struct's `Serialize` gave the first time it was written, when none needed an
/// escape: their names (by address), written keys (`"name"`), and their sorted order.
/// A later value of the same struct whose members come by the same addresses, in the same
/// order, skips the escape scan and the sort; any other member sequence takes the
/// general path, so a shape is only ever a shortcut to what that path would write.
#[derive(Debug)]
struct Shape {
    name: StrId,
    fields: Vec<StrId>,
    /// Member `i`'s quoted name.
    keys: Vec<Key>,
    /// The members' sorted order; empty when they come sorted.
    order: Vec<usize>,
}

/// Writes `value` canonically.
pub(crate) fn write<T: Serialize + ?Sized>(out: &mut Vec<u8>, ctx: &mut Ctx, value: &T) -> R {
    value.serialize(Canon { out, ctx })
}

struct Canon<'a> {
    out: &'a mut Vec<u8>,
    ctx: &'a mut Ctx,
}

impl Canon<'_> {
    fn scalar<T: Serialize>(self, v: T) -> R {
        serde_json::to_writer(&mut *self.out, &v).map_err(|e| CanonError::new(e.to_string()))
    }
}

/// Writes a number as serde_json's compact writer does (a `Vec` write cannot fail).
macro_rules! number {
    ($out:expr, $write:ident, $v:expr) => {{
        let _ =
            serde_json::ser::Formatter::$write(&mut serde_json::ser::CompactFormatter, $out, $v);
        Ok(())
    }};
}

/// One member's text: `out[start..key_end]` is its quoted name, `out[start..end]` the whole
/// `"name":value`.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    key_end: usize,
    end: usize,
}

/// The members of an object being written, in the order they come; [`finish`](Self::finish)
/// reorders them by name when they did not come sorted.
struct Members<'a> {
    out: &'a mut Vec<u8>,
    ctx: &'a mut Ctx,
    /// This object's first span in `ctx.spans`.
    base: usize,
    /// Where its first member starts (just past `{`).
    open: usize,
    /// Some name needed an escape: names are compared decoded, not as written.
    escaped: bool,
    /// The shape this struct's members have followed so far (an index in `ctx.shapes`), or
    /// [`NONE`].
    shape: u32,
    /// Members written.
    count: u32,
    /// While this struct's shape is learned, its entry in `ctx.learning` (its name, followed
    /// by its members' names), else [`NONE`].
    learn: u32,
}

/// No shape, or not learning (kept small: a `Members` is moved through every `Serialize`).
const NONE: u32 = u32::MAX;

/// Whether the `n` members came sorted by name (`name(i)` of the `i`-th); if not, fills
/// `order` with their sorted order. Refuses a name given twice.
fn sort_members<'k, K: Ord + ?Sized + 'k>(
    order: &mut Vec<usize>,
    n: usize,
    name: impl Fn(usize) -> &'k K,
) -> Result<bool, CanonError> {
    if (1..n).all(|i| name(i - 1) < name(i)) {
        return Ok(true);
    }
    order.clear();
    order.extend(0..n);
    order.sort_unstable_by(|&a, &b| name(a).cmp(name(b)));
    if order.windows(2).any(|w| name(w[0]) == name(w[1])) {
        return Err(CanonError::new("a member is named twice"));
    }
    Ok(false)
}

impl<'a> Members<'a> {
    fn new(out: &'a mut Vec<u8>, ctx: &'a mut Ctx) -> Self {
        out.push(b'{');
        let open = out.len();
        let base = ctx.spans.len();
        Self {
            out,
            ctx,
            base,
            open,
            escaped: false,
            shape: NONE,
            count: 0,
            learn: NONE,
        }
    }

    /// The members of struct `name`: along its learned shape, or learning it.
    fn of_struct(out: &'a mut Vec<u8>, ctx: &'a mut Ctx, name: &'static str) -> Self {
        let (mut shape, mut learn) = (NONE, NONE);
        match ctx.shapes.iter().position(|s| s.name == id(name)) {
            Some(k) => shape = k as u32,
            None if ctx.shapes.len() < SHAPES => {
                learn = ctx.learning.len() as u32;
                ctx.learning.push(name);
            }
            None => {}
        }
        Self {
            shape,
            learn,
            ..Self::new(out, ctx)
        }
    }

    /// A struct member: its written key comes from the shape while the members follow it.
    fn field<T: Serialize + ?Sized>(&mut self, name: &'static str, value: &T) -> R {
        if let Some(shape) = self.ctx.shapes.get(self.shape as usize) {
            let i = self.count as usize;
            if shape.fields.get(i) == Some(&id(name)) {
                if i != 0 {
                    self.out.push(b',');
                }
                let start = self.out.len();
                shape.keys[i].write(self.out);
                let key_end = self.out.len();
                self.out.push(b':');
                write(self.out, self.ctx, value)?;
                self.ctx.spans.push(Span {
                    start,
                    key_end,
                    end: self.out.len(),
                });
                self.count += 1;
                return Ok(());
            }
            self.shape = NONE;
        }
        if self.learn != NONE {
            self.ctx.learning.push(name);
        }
        self.member(name, value)
    }

    fn member<T: Serialize + ?Sized>(&mut self, name: &str, value: &T) -> R {
        self.count += 1;
        if self.ctx.spans.len() != self.base {
            self.out.push(b',');
        }
        let start = self.out.len();
        self.escaped |= escape(self.out, name);
        let key_end = self.out.len();
        self.out.push(b':');
        write(self.out, self.ctx, value)?;
        let end = self.out.len();
        self.ctx.spans.push(Span {
            start,
            key_end,
            end,
        });
        Ok(())
    }

    #[inline]
    fn finish(self) -> R {
        if let Some(shape) = self.ctx.shapes.get(self.shape as usize) {
            if self.count as usize == shape.fields.len() && shape.order.is_empty() {
                // Every member came by the shape's names, which are sorted.
                self.ctx.spans.truncate(self.base);
                self.out.push(b'}');
                return Ok(());
            }
        }
        self.reorder()
    }

    /// [`finish`](Self::finish) of an object whose members may need reordering or learning.
    #[inline(never)]
    fn reorder(self) -> R {
        let Ctx {
            spans,
            order,
            scratch,
            shapes,
            learning,
            ..
        } = &mut *self.ctx;
        let spans = &spans[self.base..];
        // The members came by a shape's names, in its order: its sorted order is known.
        let known = shapes
            .get(self.shape as usize)
            .filter(|s| self.count as usize == s.fields.len() && self.count != 0);
        let order: &[usize] = match known {
            Some(shape) => &shape.order,
            None if spans.is_empty() => &[],
            None => {
                let sorted = if self.escaped {
                    let names = spans
                        .iter()
                        .map(|s| serde_json::from_slice::<String>(&self.out[s.start..s.key_end]))
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|e| CanonError::new(e.to_string()))?;
                    sort_members(order, spans.len(), |i| &names[i])?
                } else {
                    // Unescaped names are their own bytes between the quotes.
                    let out = &*self.out;
                    sort_members(order, spans.len(), |i| {
                        &out[spans[i].start + 1..spans[i].key_end - 1]
                    })?
                };
                if sorted {
                    order.clear();
                }
                if let Some((&name, fields)) = learning
                    .get(self.learn as usize..)
                    .and_then(<[_]>::split_first)
                {
                    if !self.escaped && fields.len() == spans.len() {
                        let keys = spans
                            .iter()
                            .map(|s| Key::new(&self.out[s.start..s.key_end]))
                            .collect();
                        shapes.push(Shape {
                            name: id(name),
                            fields: fields.iter().map(|&f| id(f)).collect(),
                            keys,
                            order: order.clone(),
                        });
                    }
                }
                order
            }
        };
        if self.learn != NONE {
            learning.truncate(self.learn as usize);
        }
        if !order.is_empty() {
            scratch.clear();
            scratch.extend_from_slice(&self.out[self.open..]);
            self.out.truncate(self.open);
            for (i, &k) in order.iter().enumerate() {
                let Span { start, end, .. } = &spans[k];
                if i != 0 {
                    self.out.push(b',');
                }
                self.out
                    .extend_from_slice(&scratch[start - self.open..end - self.open]);
            }
        }
        self.ctx.spans.truncate(self.base);
        self.out.push(b'}');
        Ok(())
    }
}

/// The elements of an array being written.
struct Elements<'a> {
    out: &'a mut Vec<u8>,
    ctx: &'a mut Ctx,
    any: bool,
}

impl Elements<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
        self.out.push(if self.any { b',' } else { b'[' });
        self.any = true;
        write(self.out, self.ctx, value)
    }

    fn finish(self) -> R {
        self.out
            .extend_from_slice(if self.any { b"]" } else { b"[]" });
        Ok(())
    }
}

fn finite(v: f64) -> R {
    if v.is_finite() {
        Ok(())
    } else {
        Err(CanonError::new(format!("non-finite number {v}")))
    }
}

fn unsupported(what: &str) -> CanonError {
    CanonError::new(format!("{what} has no record form"))
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
        number!(self.out, write_i8, v)
    }
    fn serialize_i16(self, v: i16) -> R {
        number!(self.out, write_i16, v)
    }
    fn serialize_i32(self, v: i32) -> R {
        number!(self.out, write_i32, v)
    }
    fn serialize_i64(self, v: i64) -> R {
        number!(self.out, write_i64, v)
    }
    fn serialize_i128(self, v: i128) -> R {
        number!(self.out, write_i128, v)
    }
    fn serialize_u8(self, v: u8) -> R {
        number!(self.out, write_u8, v)
    }
    fn serialize_u16(self, v: u16) -> R {
        number!(self.out, write_u16, v)
    }
    fn serialize_u32(self, v: u32) -> R {
        number!(self.out, write_u32, v)
    }
    fn serialize_u64(self, v: u64) -> R {
        number!(self.out, write_u64, v)
    }
    fn serialize_u128(self, v: u128) -> R {
        number!(self.out, write_u128, v)
    }
    fn serialize_f32(self, v: f32) -> R {
        finite(f64::from(v))?;
        number!(self.out, write_f32, v)
    }
    fn serialize_f64(self, v: f64) -> R {
        finite(v)?;
        number!(self.out, write_f64, v)
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
        Ok(Members::new(self.out, self.ctx))
    }
    fn serialize_struct(self, name: &'static str, _: usize) -> Result<Members<'a>, CanonError> {
        Ok(Members::of_struct(self.out, self.ctx, name))
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
        self.field(name, v)
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
                self.ctx.map_key = Some(s);
                Ok(())
            }
            _ => Err(CanonError::new("a map key that is not a string")),
        }
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        let key = self
            .ctx
            .map_key
            .take()
            .ok_or_else(|| CanonError::new("a map value without a key"))?;
        self.member(&key, v)
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

    #[test]
    fn keys_append_exactly_their_bytes() {
        for len in [0, 1, 15, 16, 17, 40] {
            let bytes: Vec<u8> = (0..len as u8).map(|b| b'a' + b % 26).collect();
            let mut out = b"x".to_vec();
            Key::new(&bytes).write(&mut out);
            assert_eq!(out[1..], bytes[..], "{len}");
        }
    }

    /// What serde_json writes for `v` as a sorted `Value`: the reference of every test here.
    fn reference<T: Serialize>(v: &T) -> String {
        let sorted = super::super::json::sorted(&serde_json::to_value(v).unwrap());
        String::from_utf8(serde_json::to_vec(&sorted).unwrap()).unwrap()
    }

    /// Two structs of one name (their `Serialize` gives the same `&'static str`), one with
    /// members out of order and one that is sometimes skipped.
    mod a {
        #[derive(serde::Serialize)]
        pub struct S {
            pub z: u32,
            pub b: f32,
            /// Last, so a value that skips it follows a prefix of the learned shape.
            #[serde(skip_serializing_if = "Option::is_none")]
            pub m: Option<u8>,
        }
    }
    mod b {
        #[derive(serde::Serialize)]
        pub struct S {
            pub a: u8,
            #[serde(skip_serializing_if = "Option::is_none")]
            pub q: Option<super::a::S>,
        }
    }

    /// One `Ctx` learns struct shapes from the first values it writes; later values whose
    /// members come otherwise (a skipped field, a same-named struct with other fields, members
    /// out of order, nested) still write exactly the reference.
    #[test]
    fn learned_shapes_never_change_the_output() {
        /// Writes `v` through `ctx` and checks it against the reference.
        fn written_as_reference<T: Serialize>(ctx: &mut Ctx, v: &T, i: u32) {
            let mut out = Vec::new();
            write(&mut out, ctx, v).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), reference(v), "{i}");
        }
        let mut ctx = Ctx::default();
        for i in 0..40u32 {
            let inner = a::S {
                z: i,
                m: (i % 3 != 1).then_some(i as u8),
                b: i as f32 / 4.0,
            };
            written_as_reference(&mut ctx, &inner, i);
            let outer = b::S {
                a: i as u8,
                q: (i % 2 == 0).then_some(inner),
            };
            written_as_reference(&mut ctx, &outer, i);
        }
        assert!(ctx.shapes.len() <= 2, "one shape per struct name");
        assert!(ctx.spans.is_empty() && ctx.learning.is_empty());
    }

    /// The writer agrees with serde_json's compact output of the same value as a `Value` (sorted,
    /// should `preserve_order` be on in the build).
    #[test]
    fn agrees_with_compact_values() {
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
        write(&mut ours, &mut Ctx::default(), &v).unwrap();
        let theirs = serde_json::to_vec(&super::super::json::sorted(
            &serde_json::to_value(&v).unwrap(),
        ))
        .unwrap();
        assert_eq!(
            String::from_utf8(ours).unwrap(),
            String::from_utf8(theirs).unwrap()
        );
        let mut nested = Vec::new();
        let value = json!({"k": [1, {"j": 2, "i": {}}], "e": []});
        write(&mut nested, &mut Ctx::default(), &value).unwrap();
        assert_eq!(
            String::from_utf8(nested).unwrap(),
            r#"{"e":[],"k":[1,{"i":{},"j":2}]}"#
        );
        // Names that need an escape sort by their decoded bytes (`!` < `"` < `#`), not as
        // written (`\` sorts after `#`).
        #[derive(Serialize)]
        struct Escaped {
            #[serde(rename = "a#")]
            hash: u8,
            #[serde(rename = "a\"")]
            quote: u8,
            #[serde(rename = "a!")]
            bang: u8,
        }
        let v = Escaped {
            hash: 1,
            quote: 2,
            bang: 3,
        };
        let mut ours = Vec::new();
        write(&mut ours, &mut Ctx::default(), &v).unwrap();
        let theirs = serde_json::to_vec(&super::super::json::sorted(
            &serde_json::to_value(&v).unwrap(),
        ))
        .unwrap();
        assert_eq!(ours, theirs);
        assert_eq!(ours, br#"{"a!":3,"a\"":2,"a#":1}"#);
        #[derive(Serialize)]
        struct Twice {
            a: u8,
            #[serde(rename = "a")]
            b: u8,
        }
        let e = write(&mut Vec::new(), &mut Ctx::default(), &Twice { a: 1, b: 2 }).unwrap_err();
        assert_eq!(&*e.0, "a member is named twice");
        let mut plain = Vec::new();
        for s in [
            "",
            "plain",
            "tab\t",
            "quote\"",
            "back\\slash",
            "\u{7f}\u{1f}é",
        ] {
            plain.clear();
            string(&mut plain, s);
            assert_eq!(plain, serde_json::to_vec(s).unwrap(), "{s:?}");
        }
        assert!(write(&mut Vec::new(), &mut Ctx::default(), &f32::NAN).is_err());
        let mut f = Vec::new();
        write(&mut f, &mut Ctx::default(), &0.1f32).unwrap();
        assert_eq!(f, b"0.1");
    }
}
