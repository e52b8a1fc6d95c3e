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

/// [`string`] of bytes the caller checked to be UTF-8: they are read as text (checked again)
/// only when some byte needs an escape. The caller's check is what keeps the output text:
/// bytes that are not UTF-8 are copied as they are when no byte needs an escape, and write
/// `""` when one does.
pub(crate) fn string_of_utf8(out: &mut Vec<u8>, bytes: &[u8]) {
    if needs_escape(bytes) {
        escape(out, core::str::from_utf8(bytes).unwrap_or_default());
    } else {
        quoted(out, bytes);
    }
}

/// `bytes` between quotes, as they are (what serde_json writes for text with nothing to escape).
#[inline]
fn quoted(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    out.extend_from_slice(bytes);
    out.push(b'"');
}

/// Writes `s` as a JSON string; true when some byte needed an escape (the text between the
/// quotes is then not `s`'s bytes).
fn escape(out: &mut Vec<u8>, s: &str) -> bool {
    if !needs_escape(s.as_bytes()) {
        quoted(out, s.as_bytes());
        false
    } else {
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
        true
    }
}

/// A member's written key (`"name":`, or `,"name":` after another member): up to 16 bytes are
/// appended with one fixed-size copy, longer ones as a slice.
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

/// The writer's state, reused across values: the output of the value being written, the
/// open objects (a stack), room to reorder one object's members, and the member names of the
/// structs written so far.
///
/// The serializers ([`Canon`], [`Members`], [`Elements`]) hold only `&mut Ctx`: one pointer,
/// kept in a register, never a multi-word struct copied between stack slots right after its
/// fields were stored (a store-forwarding stall on every struct a component writes).
#[derive(Debug, Default)]
pub(crate) struct Ctx {
    /// The output: every value written is appended here.
    out: Vec<u8>,
    /// The open objects, innermost last; each [`Members`] owns the last one while it lives.
    frames: Vec<Frame>,
    /// Some error crossed the writer (a `Serialize` impl that drops an `Err` and goes on
    /// cannot make [`Ctx::value`] succeed).
    failed: bool,
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

/// An open object's state.
#[derive(Debug, Clone, Copy)]
struct Frame {
    /// This object's first span in `Ctx::spans`.
    base: usize,
    /// Where its first member starts (just past `{`).
    open: usize,
    /// Some name needed an escape: names are compared decoded, not as written.
    escaped: bool,
    /// The shape this struct's members have followed so far (an index in `Ctx::shapes`), or
    /// [`NONE`].
    shape: u32,
    /// Members written.
    count: u32,
    /// While this struct's shape is learned, its entry in `Ctx::learning` (its name, followed
    /// by its members' names), else [`NONE`].
    learn: u32,
}

/// Most struct shapes a [`Ctx`] remembers.
const SHAPES: usize = 64;

/// The address and length of a `&'static str`: two equal ids are the same bytes.
type StrId = (usize, usize);

fn id(s: &'static str) -> StrId {
    (s.as_ptr() as usize, s.len())
}

/// The members a struct's `Serialize` gave the first time it was written, when none needed an
/// escape: their names (by address), written keys (`"name":`, after a comma past the first),
/// and their sorted order.
/// A later value of the same struct whose members come by the same addresses, in the same
/// order, skips the escape scan and the sort; any other member sequence takes the
/// general path, so a shape is only ever a shortcut to what that path would write.
#[derive(Debug)]
struct Shape {
    name: StrId,
    fields: Vec<StrId>,
    /// What member `i` writes before its value: `"name":`, with a leading `,` for every member
    /// but the first.
    keys: Vec<Key>,
    /// The members' sorted order; empty when they come sorted.
    order: Vec<usize>,
}

impl Ctx {
    /// A writer that appends to `out`.
    pub(crate) fn new(out: Vec<u8>) -> Self {
        Self {
            out,
            ..Self::default()
        }
    }

    /// The output written so far.
    #[inline(always)]
    pub(crate) fn out(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    /// The output.
    pub(crate) fn into_out(self) -> Vec<u8> {
        self.out
    }

    /// Appends `value`'s canonical text to the output. On an error, what was appended is
    /// unspecified (the caller truncates) and the writer is ready for the next value.
    pub(crate) fn value<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
        let (frames, spans, learning) = (self.frames.len(), self.spans.len(), self.learning.len());
        self.failed = false;
        let mut result = nested(self, value);
        if result.is_ok() && (self.failed || self.frames.len() != frames) {
            result = Err(CanonError::new(
                "a Serialize impl went on after an error or left an object open",
            ));
        }
        if result.is_err() {
            self.frames.truncate(frames);
            self.spans.truncate(spans);
            self.learning.truncate(learning);
            self.map_key = None;
        }
        result
    }
}

/// Appends `value`'s canonical text to `out` through `ctx` ([`Ctx::value`]).
#[cfg(test)]
pub(crate) fn write<T: Serialize + ?Sized>(out: &mut Vec<u8>, ctx: &mut Ctx, value: &T) -> R {
    std::mem::swap(out, &mut ctx.out);
    let result = ctx.value(value);
    std::mem::swap(out, &mut ctx.out);
    result
}

/// Writes a nested value; an error marks the whole write failed.
#[inline(always)]
fn nested<T: Serialize + ?Sized>(ctx: &mut Ctx, value: &T) -> R {
    let result = value.serialize(Canon { ctx: &mut *ctx });
    if result.is_err() {
        ctx.failed = true;
    }
    result
}

struct Canon<'a> {
    ctx: &'a mut Ctx,
}

impl Canon<'_> {
    fn scalar<T: Serialize>(self, v: T) -> R {
        serde_json::to_writer(&mut self.ctx.out, &v).map_err(|e| CanonError::new(e.to_string()))
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
///
/// Its state is the last of `ctx.frames`, pushed when it opens and popped when it finishes.
struct Members<'a> {
    ctx: &'a mut Ctx,
}

/// No shape, or not learning.
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
    #[inline(always)]
    fn open(ctx: &'a mut Ctx, shape: u32, learn: u32) -> Self {
        ctx.out.push(b'{');
        let frame = Frame {
            base: ctx.spans.len(),
            open: ctx.out.len(),
            escaped: false,
            shape,
            count: 0,
            learn,
        };
        ctx.frames.push(frame);
        Self { ctx }
    }

    /// The members of a map.
    #[inline(always)]
    fn new(ctx: &'a mut Ctx) -> Self {
        Self::open(ctx, NONE, NONE)
    }

    /// The members of struct `name`: along its learned shape, or learning it.
    #[inline(always)]
    fn of_struct(ctx: &'a mut Ctx, name: &'static str) -> Self {
        let (mut shape, mut learn) = (NONE, NONE);
        match ctx.shapes.iter().position(|s| s.name == id(name)) {
            Some(k) => shape = k as u32,
            None if ctx.shapes.len() < SHAPES => {
                learn = ctx.learning.len() as u32;
                ctx.learning.push(name);
            }
            None => {}
        }
        Self::open(ctx, shape, learn)
    }

    /// This object's state.
    #[inline(always)]
    fn frame(frames: &mut [Frame]) -> &mut Frame {
        frames
            .last_mut()
            .expect("a live Members owns the last frame")
    }

    /// A struct member: its written key comes from the shape while the members follow it.
    #[inline(always)]
    fn field<T: Serialize + ?Sized>(&mut self, name: &'static str, value: &T) -> R {
        let Ctx {
            out,
            frames,
            shapes,
            learning,
            ..
        } = &mut *self.ctx;
        let frame = Self::frame(frames);
        if let Some(shape) = shapes.get(frame.shape as usize) {
            let i = frame.count as usize;
            if shape.fields.get(i) == Some(&id(name)) {
                frame.count += 1;
                // The quoted name starts past the comma and ends before the colon.
                let start = out.len() + usize::from(i != 0);
                shape.keys[i].write(out);
                let key_end = out.len() - 1;
                nested(self.ctx, value)?;
                let end = self.ctx.out.len();
                self.ctx.spans.push(Span {
                    start,
                    key_end,
                    end,
                });
                return Ok(());
            }
            frame.shape = NONE;
        }
        if frame.learn != NONE {
            learning.push(name);
        }
        self.member(name, value)
    }

    fn member<T: Serialize + ?Sized>(&mut self, name: &str, value: &T) -> R {
        let Ctx {
            out, frames, spans, ..
        } = &mut *self.ctx;
        let frame = Self::frame(frames);
        frame.count += 1;
        if spans.len() != frame.base {
            out.push(b',');
        }
        let start = out.len();
        frame.escaped |= escape(out, name);
        let key_end = out.len();
        out.push(b':');
        nested(self.ctx, value)?;
        let end = self.ctx.out.len();
        self.ctx.spans.push(Span {
            start,
            key_end,
            end,
        });
        Ok(())
    }

    #[inline(always)]
    fn finish(self) -> R {
        let Ctx {
            out,
            frames,
            shapes,
            spans,
            ..
        } = &mut *self.ctx;
        let frame = *Self::frame(frames);
        if let Some(shape) = shapes.get(frame.shape as usize) {
            if frame.count as usize == shape.fields.len() && shape.order.is_empty() {
                // Every member came by the shape's names, which are sorted.
                frames.pop();
                spans.truncate(frame.base);
                out.push(b'}');
                return Ok(());
            }
        }
        self.reorder()
    }

    /// [`finish`](Self::finish) of an object whose members may need reordering or learning.
    #[inline(never)]
    fn reorder(self) -> R {
        let result = Self::reorder_in(self.ctx);
        if result.is_err() {
            self.ctx.failed = true;
        }
        result
    }

    fn reorder_in(ctx: &mut Ctx) -> R {
        let Ctx {
            out,
            frames,
            spans,
            order,
            scratch,
            shapes,
            learning,
            ..
        } = ctx;
        let frame = frames.pop().expect("a live Members owns the last frame");
        let members = &spans[frame.base..];
        // The members came by a shape's names, in its order: its sorted order is known.
        let known = shapes
            .get(frame.shape as usize)
            .filter(|s| frame.count as usize == s.fields.len() && frame.count != 0);
        let order: &[usize] = match known {
            Some(shape) => &shape.order,
            None if members.is_empty() => &[],
            None => {
                let sorted = if frame.escaped {
                    let names = members
                        .iter()
                        .map(|s| serde_json::from_slice::<String>(&out[s.start..s.key_end]))
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|e| CanonError::new(e.to_string()))?;
                    sort_members(order, members.len(), |i| &names[i])?
                } else {
                    // Unescaped names are their own bytes between the quotes.
                    let out = &*out;
                    sort_members(order, members.len(), |i| {
                        &out[members[i].start + 1..members[i].key_end - 1]
                    })?
                };
                if sorted {
                    order.clear();
                }
                if let Some((&name, fields)) = learning
                    .get(frame.learn as usize..)
                    .and_then(<[_]>::split_first)
                {
                    if !frame.escaped && fields.len() == members.len() {
                        // Each member's comma (past the first), quoted name and colon, as
                        // `member` wrote them.
                        let keys = members
                            .iter()
                            .enumerate()
                            .map(|(i, s)| Key::new(&out[s.start - usize::from(i != 0)..=s.key_end]))
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
        if frame.learn != NONE {
            learning.truncate(frame.learn as usize);
        }
        if !order.is_empty() {
            // The members tile the body (`m0,m1,…`): reordered, they fill it again exactly.
            let body = &mut out[frame.open..];
            scratch.clear();
            scratch.extend_from_slice(body);
            let mut at = 0;
            for (i, &k) in order.iter().enumerate() {
                let Span { start, end, .. } = &members[k];
                if i != 0 {
                    body[at] = b',';
                    at += 1;
                }
                let member = &scratch[start - frame.open..end - frame.open];
                body[at..at + member.len()].copy_from_slice(member);
                at += member.len();
            }
        }
        spans.truncate(frame.base);
        out.push(b'}');
        Ok(())
    }
}

/// The elements of an array being written: `[` is written when it opens, so an element
/// follows another exactly when the output does not end with `[` (no complete value does).
struct Elements<'a> {
    ctx: &'a mut Ctx,
}

impl<'a> Elements<'a> {
    #[inline(always)]
    fn open(ctx: &'a mut Ctx) -> Self {
        ctx.out.push(b'[');
        Self { ctx }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
        if self.ctx.out.last() != Some(&b'[') {
            self.ctx.out.push(b',');
        }
        nested(self.ctx, value)
    }

    fn finish(self) -> R {
        self.ctx.out.push(b']');
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
        number!(&mut self.ctx.out, write_i8, v)
    }
    fn serialize_i16(self, v: i16) -> R {
        number!(&mut self.ctx.out, write_i16, v)
    }
    fn serialize_i32(self, v: i32) -> R {
        number!(&mut self.ctx.out, write_i32, v)
    }
    fn serialize_i64(self, v: i64) -> R {
        number!(&mut self.ctx.out, write_i64, v)
    }
    fn serialize_i128(self, v: i128) -> R {
        // The readers hold integers as 64-bit: a wider one would read back as another value.
        let v = i64::try_from(v).map_err(|_| unsupported("an integer beyond 64 bits"))?;
        number!(&mut self.ctx.out, write_i64, v)
    }
    fn serialize_u8(self, v: u8) -> R {
        number!(&mut self.ctx.out, write_u8, v)
    }
    fn serialize_u16(self, v: u16) -> R {
        number!(&mut self.ctx.out, write_u16, v)
    }
    fn serialize_u32(self, v: u32) -> R {
        number!(&mut self.ctx.out, write_u32, v)
    }
    fn serialize_u64(self, v: u64) -> R {
        number!(&mut self.ctx.out, write_u64, v)
    }
    fn serialize_u128(self, v: u128) -> R {
        // As `serialize_i128`.
        let v = u64::try_from(v).map_err(|_| unsupported("an integer beyond 64 bits"))?;
        number!(&mut self.ctx.out, write_u64, v)
    }
    fn serialize_f32(self, v: f32) -> R {
        finite(f64::from(v))?;
        number!(&mut self.ctx.out, write_f32, v)
    }
    fn serialize_f64(self, v: f64) -> R {
        finite(v)?;
        number!(&mut self.ctx.out, write_f64, v)
    }
    fn serialize_char(self, v: char) -> R {
        self.scalar(v)
    }
    fn serialize_str(self, v: &str) -> R {
        string(&mut self.ctx.out, v);
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
        self.ctx.out.extend_from_slice(b"null");
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
        Ok(Elements::open(self.ctx))
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
        Ok(Members::new(self.ctx))
    }
    #[inline(always)]
    fn serialize_struct(self, name: &'static str, _: usize) -> Result<Members<'a>, CanonError> {
        Ok(Members::of_struct(self.ctx, name))
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
    #[inline(always)]
    fn serialize_field<T: Serialize + ?Sized>(&mut self, name: &'static str, v: &T) -> R {
        self.field(name, v)
    }
    #[inline(always)]
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

    /// 128-bit integers are written when they fit 64 bits (what the readers hold) and refused
    /// otherwise: a wider one would read back as a float, not as the value written.
    #[test]
    fn integers_beyond_64_bits_have_no_record_form() {
        fn text<T: Serialize>(v: T) -> Result<String, CanonError> {
            let mut out = Vec::new();
            write(&mut out, &mut Ctx::default(), &v).map(|()| String::from_utf8(out).unwrap())
        }
        assert_eq!(text(u128::from(u64::MAX)).unwrap(), u64::MAX.to_string());
        assert_eq!(text(i128::from(i64::MIN)).unwrap(), i64::MIN.to_string());
        assert!(text(u128::from(u64::MAX) + 1).is_err());
        assert!(text(i128::from(i64::MIN) - 1).is_err());
        assert!(text(u128::MAX).is_err());
    }

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

    /// A `Serialize` impl that drops an error and goes on cannot make a write succeed, and
    /// the writer is clean for the next value.
    #[test]
    fn swallowed_errors_fail_the_write() {
        use serde::ser::{SerializeSeq, SerializeStruct, Serializer};
        /// Drops the error of a NaN member and ends the struct anyway.
        struct Swallow;
        impl Serialize for Swallow {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_struct("Swallow", 2)?;
                let _ = m.serialize_field("bad", &f32::NAN);
                m.serialize_field("good", &1u8)?;
                m.end()
            }
        }
        /// A struct whose member fails: its impl returns the error with the struct open.
        #[derive(Serialize)]
        struct Fails {
            x: f64,
        }
        /// Drops the errors of structs that failed inside an array, one of them left open.
        struct SwallowNested;
        impl Serialize for SwallowNested {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut q = s.serialize_seq(None)?;
                let _ = q.serialize_element(&Swallow);
                let _ = q.serialize_element(&Fails { x: f64::NAN });
                q.serialize_element(&2u8)?;
                q.end()
            }
        }
        #[derive(Serialize)]
        struct Good {
            z: [u8; 2],
            a: Option<u8>,
        }
        let mut ctx = Ctx::default();
        for _ in 0..2 {
            assert!(write(&mut Vec::new(), &mut ctx, &Swallow).is_err());
            assert!(write(&mut Vec::new(), &mut ctx, &SwallowNested).is_err());
            assert!(ctx.frames.is_empty() && ctx.spans.is_empty() && ctx.learning.is_empty());
            let mut out = Vec::new();
            write(&mut out, &mut ctx, &Good { z: [1, 2], a: None }).unwrap();
            assert_eq!(out, br#"{"a":null,"z":[1,2]}"#);
        }
    }

    /// Any JSON value (nested maps and arrays, keys and strings that need escapes, every kind
    /// of number), alone and inside a struct whose members come unsorted, written through one
    /// reused `Ctx`: always the reference.
    mod generated {
        use super::*;
        use proptest::prelude::*;
        use serde_json::Value;

        fn value() -> impl Strategy<Value = Value> {
            // Letters, a quote, a backslash, a control byte and a two-byte character.
            let text = "[a-c\"\\\\\u{1}é]{0,3}";
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(Value::from),
                any::<u64>().prop_map(Value::from),
                (-1e6f64..1e6).prop_map(Value::from),
                text.prop_map(Value::String),
            ];
            leaf.prop_recursive(4, 32, 4, move |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    prop::collection::btree_map(text, inner, 0..4)
                        .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
        }

        #[derive(Serialize)]
        struct Holder {
            z: Value,
            b: Vec<Value>,
            a: Option<Value>,
        }

        fn config() -> ProptestConfig {
            let mut c = ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 512 });
            c.failure_persistence = None;
            c
        }

        proptest! {
            #![proptest_config(config())]

            #[test]
            fn any_value_writes_the_reference(vs in prop::collection::vec(value(), 1..4)) {
                let mut ctx = Ctx::default();
                for v in &vs {
                    let mut out = Vec::new();
                    write(&mut out, &mut ctx, v).unwrap();
                    prop_assert_eq!(String::from_utf8(out).unwrap(), reference(v));
                    let h = Holder {
                        z: v.clone(),
                        b: vs.clone(),
                        a: (vs.len() % 2 == 0).then(|| v.clone()),
                    };
                    let mut out = Vec::new();
                    write(&mut out, &mut ctx, &h).unwrap();
                    prop_assert_eq!(String::from_utf8(out).unwrap(), reference(&h));
                }
                prop_assert!(ctx.frames.is_empty() && ctx.spans.is_empty());
            }

            /// Struct members in any sequence along a learned shape whose order is not sorted
            /// (followed to the end, left halfway, left for other names, members named twice,
            /// an error inside a member, shaped structs nested in members), through one
            /// reused Ctx: each value appends the reference to the output, or fails and the
            /// caller's truncation leaves the output as it was, and the writer is clean after
            /// either.
            #[test]
            fn shaped_members_in_any_sequence(vs in prop::collection::vec(mixed(), 1..6)) {
                let mut ctx = Ctx::new(b"[".to_vec());
                let mut expected = "[".to_owned();
                let learn = Mixed(vec![(0, Item::Num(1.0)), (1, Item::Num(2.0)), (2, Item::Num(3.0))]);
                for v in std::iter::once(&learn).chain(&vs).chain([&learn]) {
                    let at = ctx.out().len();
                    let written = ctx.value(v);
                    if v.valid() {
                        prop_assert!(written.is_ok());
                        expected += &reference(v);
                    } else {
                        prop_assert!(written.is_err());
                        ctx.out().truncate(at);
                    }
                    prop_assert_eq!(std::str::from_utf8(ctx.out()).unwrap(), &expected);
                    prop_assert!(ctx.frames.is_empty() && ctx.spans.is_empty());
                    prop_assert!(ctx.learning.is_empty());
                }
            }
        }

        /// Member names: `NAMES[k]` is the same `&'static str` (address) on every use.
        static NAMES: [&str; 4] = ["z", "y", "b", "q"];

        /// A struct whose members (by index into `NAMES`) come in the listed sequence.
        #[derive(Debug, Clone)]
        struct Mixed(Vec<(usize, Item)>);

        #[derive(Debug, Clone)]
        enum Item {
            Num(f32),
            Inner(Mixed),
        }

        impl Mixed {
            /// Writable: no member named twice, no non-finite number, at any depth.
            fn valid(&self) -> bool {
                let mut seen = [false; 4];
                self.0.iter().all(|(k, v)| {
                    !std::mem::replace(&mut seen[*k], true)
                        && match v {
                            Item::Num(x) => x.is_finite(),
                            Item::Inner(m) => m.valid(),
                        }
                })
            }
        }

        impl Serialize for Mixed {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeStruct;
                let mut st = s.serialize_struct("Mixed", self.0.len())?;
                for (k, v) in &self.0 {
                    st.serialize_field(NAMES[*k], v)?;
                }
                st.end()
            }
        }

        impl Serialize for Item {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    Item::Num(x) => x.serialize(s),
                    Item::Inner(m) => m.serialize(s),
                }
            }
        }

        fn mixed() -> impl Strategy<Value = Mixed> {
            let num = prop_oneof![
                // Quarters: the same shortest digits as f32 and as the reference's f64.
                16 => (-4000i16..4000).prop_map(|q| Item::Num(f32::from(q) / 4.0)),
                1 => Just(Item::Num(f32::NAN)),
            ];
            let flat = prop::collection::vec((0..4usize, num.clone()), 0..5).prop_map(Mixed);
            flat.prop_recursive(2, 16, 4, move |inner| {
                let item = prop_oneof![num.clone(), inner.prop_map(Item::Inner)];
                prop::collection::vec((0..4usize, item), 0..5).prop_map(Mixed)
            })
        }
    }
}
