//! The authentication tag's fast path (craps_streams/authenticity/tags.py `TagCheck.problem`), natively:
//! `TagKeys.authentic(event)` is true only when the event's tag is exactly the text
//! HMAC-SHA256(key, canonical bytes) base64url without padding (RFC 2104, FIPS 198-1) of a key that
//! is in the ring, bound to the event's table and valid at its time. Every other answer is false
//! and the Python side (craps_streams/authenticity/native_tags.py) asks `problem_plain`, the reference,
//! which words the problem or (an event whose canonical bytes this module does not write: a
//! TableOpened, text that is not plain printable ASCII, an int beyond 64 bits, a field of an odd
//! type) accepts it by the definition. So this module can only say yes where the definition says
//! yes; the tests hold it to `problem_plain` on honest, forged and odd events.
//!
//! The canonical bytes (craps_streams/authenticity/canonical.py, version 1) are the compact JSON text of
//! `["craps-event-v1", key_id, type, table_id, seq, ts, <own fields>]`; for printable ASCII text
//! (0x20-0x7e) json's escaping is `\"` and `\\` alone, which is all this module writes.

use crate::py::{ascii, exact_int, push_int, Obj, O};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyAnyMethods, PyIterator, PyString};
use sha2::Sha256;
use std::collections::{HashMap, HashSet};
use subtle::ConstantTimeEq;

const VERSION: &[u8] = b"craps-event-v1";

struct RingKey {
    tables: HashSet<Vec<u8>>,
    not_before: i64,
    not_after: Option<i64>,
    mac: Hmac<Sha256>, // keyed once: the pads are hashed here, each event clones the states
}

#[derive(Clone, Copy)]
enum Kind {
    Text,
    Int,
    Bool,
}

pub(crate) struct Format {
    cls: Py<PyAny>, // the event class, compared by identity
    name: Vec<u8>,
    fields: Vec<(Py<PyString>, Kind)>,
    field_names: Vec<Vec<u8>>, // the same fields' names (a JSON line's keys: lane.rs)
}

/// What one run of the tag check keeps from event to event: the canonical bytes' buffer, and the
/// key the last event's key id found bound to its table. A table's events come under one key, so
/// the next event of the same key id and table takes neither lookup again (its time is still
/// checked against the key's validity, event by event).
pub(crate) struct TagScratch<'k> {
    buf: Vec<u8>,
    last: Option<(Vec<u8>, Vec<u8>, &'k RingKey)>,
}

impl<'k> TagScratch<'k> {
    pub(crate) fn new() -> TagScratch<'k> {
        TagScratch { buf: Vec::with_capacity(160), last: None }
    }
}

// Frozen and shareable between threads (Py handles only): a TagCheck may be built in one thread
// and used in another.
#[pyclass(frozen)]
pub struct TagKeys {
    keys: HashMap<Vec<u8>, RingKey>,
    formats: Vec<Format>,
    attr_key_id: Py<PyString>,
    attr_tag: Py<PyString>,
    attr_table_id: Py<PyString>,
    attr_seq: Py<PyString>,
    attr_ts: Py<PyString>,
}

/// # Safety
/// The GIL is held, and every object it is given is live for the call.
unsafe fn attr(event: Obj, name: &Py<PyString>) -> Option<O> {
    let p = ffi::PyObject_GetAttr(event, name.as_ptr());
    if p.is_null() {
        ffi::PyErr_Clear();
        None
    } else {
        Some(O(p))
    }
}

/// Appends `"text"` as json writes it, for printable ASCII text; false for anything else.
#[inline(always)]
fn push_text(buf: &mut Vec<u8>, text: &[u8]) -> bool {
    buf.push(b'"');
    for &b in text {
        if !(0x20..=0x7e).contains(&b) {
            return false;
        }
        if b == b'"' || b == b'\\' {
            buf.push(b'\\');
        }
        buf.push(b);
    }
    buf.push(b'"');
    true
}

/// # Safety
/// The GIL is held, and every object it is given is live for the call.
#[inline(always)]
unsafe fn push_value(buf: &mut Vec<u8>, value: Obj, kind: Kind) -> bool {
    match kind {
        Kind::Text => match ascii(value) {
            Some(t) => push_text(buf, t),
            None => false,
        },
        Kind::Int => match exact_int(value) {
            Some(v) => {
                push_int(buf, v);
                true
            }
            None => false,
        },
        Kind::Bool => {
            if value == ffi::Py_True() {
                buf.extend_from_slice(b"true");
                true
            } else if value == ffi::Py_False() {
                buf.extend_from_slice(b"false");
                true
            } else {
                false
            }
        }
    }
}

fn text_of(o: &Bound<PyAny>) -> PyResult<Vec<u8>> {
    Ok(o.extract::<String>()?.into_bytes())
}

fn interned_attr(py: Python<'_>, name: &str) -> Py<PyString> {
    PyString::intern(py, name).unbind()
}

#[pymethods]
impl TagKeys {
    /// `TagKeys(keys, formats)`: keys, (key_id, secret, tables, not_before, not_after or None)
    /// each; formats, (event class, type name, ((field, "str" | "int" | "bool"), ...)) for each
    /// kind whose canonical bytes this module writes (craps_streams/authenticity/native_tags.py).
    #[new]
    fn new(py: Python<'_>, keys: &Bound<PyAny>, formats: &Bound<PyAny>) -> PyResult<TagKeys> {
        let mut ring = HashMap::new();
        for k in PyIterator::from_object(keys)? {
            let k = k?;
            let key_id = text_of(&k.get_item(0)?)?;
            let secret: Vec<u8> = k.get_item(1)?.extract()?;
            let mut tables = HashSet::new();
            for t in PyIterator::from_object(&k.get_item(2)?)? {
                tables.insert(text_of(&t?)?);
            }
            let not_before: i64 = k.get_item(3)?.extract()?;
            let not_after: Option<i64> = k.get_item(4)?.extract()?;
            let mac = <Hmac<Sha256> as Mac>::new_from_slice(&secret)
                .map_err(|e| PyValueError::new_err(format!("key {:?}: {e}", String::from_utf8_lossy(&key_id))))?;
            ring.insert(key_id, RingKey { tables, not_before, not_after, mac });
        }
        let mut out = Vec::new();
        for f in PyIterator::from_object(formats)? {
            let f = f?;
            let cls = f.get_item(0)?;
            let name = text_of(&f.get_item(1)?)?;
            let mut fields = Vec::new();
            let mut field_names = Vec::new();
            for field in PyIterator::from_object(&f.get_item(2)?)? {
                let field = field?;
                let attr_name: String = field.get_item(0)?.extract()?;
                field_names.push(attr_name.as_bytes().to_vec());
                let kind = match field.get_item(1)?.extract::<String>()?.as_str() {
                    "str" => Kind::Text,
                    "int" => Kind::Int,
                    "bool" => Kind::Bool,
                    other => return Err(PyValueError::new_err(format!("field kind {other:?}"))),
                };
                fields.push((interned_attr(py, &attr_name), kind));
            }
            out.push(Format { cls: cls.unbind(), name, fields, field_names });
        }
        Ok(TagKeys {
            keys: ring,
            formats: out,
            attr_key_id: interned_attr(py, "key_id"),
            attr_tag: interned_attr(py, "tag"),
            attr_table_id: interned_attr(py, "table_id"),
            attr_seq: interned_attr(py, "seq"),
            attr_ts: interned_attr(py, "ts"),
        })
    }

    /// True when the event is authentic by the fast path; false: ask the reference.
    fn authentic(&self, event: &Bound<PyAny>) -> bool {
        // SAFETY: the GIL is held (a Python call); `event` is a live object borrowed for the call.
        unsafe { self.judge(&mut TagScratch::new(), event.as_ptr()) }
    }

    /// The canonical bytes this module writes for `event` (None where it leaves the event to
    /// Python): for the tests, which hold them to craps_streams/authenticity/canonical.py byte for byte.
    fn canonical_bytes(&self, event: &Bound<PyAny>) -> Option<Vec<u8>> {
        // SAFETY: as `authentic`: the GIL held, `event` borrowed for the call; the texts read
        // from it are borrowed while it holds them.
        unsafe {
            let e = event.as_ptr();
            let head = self.head(e)?;
            let mut buf = Vec::new();
            write_canonical(&mut buf, e, head.format, ascii(head.key_id.p())?, ascii(head.table_id.p())?, head.seq, head.ts)
                .then_some(buf)
        }
    }
}

/// What every kind carries before its own fields, read from an event this module writes.
struct Head<'a> {
    format: &'a Format,
    key_id: O,
    table_id: O,
    seq: i64,
    ts: i64,
}

impl TagKeys {
    /// The event's kind (None: not one this module writes) and its ids, seq and ts (None: an odd
    /// type, an int beyond 64 bits).
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    unsafe fn head(&self, event: Obj) -> Option<Head<'_>> {
        let cls = ffi::Py_TYPE(event) as Obj;
        let format = self.formats.iter().find(|f| f.cls.as_ptr() == cls)?;
        let key_id = attr(event, &self.attr_key_id)?;
        let table_id = attr(event, &self.attr_table_id)?;
        let seq = exact_int(attr(event, &self.attr_seq)?.p())?;
        let ts = exact_int(attr(event, &self.attr_ts)?.p())?;
        Some(Head { format, key_id, table_id, seq, ts })
    }

    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    pub(crate) unsafe fn judge<'k>(&'k self, scratch: &mut TagScratch<'k>, event: Obj) -> bool {
        let Some(Head { format, key_id, table_id, seq, ts }) = self.head(event) else { return false };
        let Some(tag) = attr(event, &self.attr_tag) else { return false };
        let (Some(key_text), Some(tag_text), Some(table_text)) = (ascii(key_id.p()), ascii(tag.p()), ascii(table_id.p()))
        else {
            return false;
        };
        self.authentic_parts(scratch, key_text, tag_text, table_text, ts, |buf| {
            write_canonical(buf, event, format, key_text, table_text, seq, ts)
        })
    }

    /// The key of `key_text` in the ring when it is bound to the table `table_text` (None: no such
    /// key, or not this table's), the last one found kept in `scratch`.
    #[inline(always)]
    fn key_for<'k>(&'k self, scratch: &mut TagScratch<'k>, key_text: &[u8], table_text: &[u8]) -> Option<&'k RingKey> {
        if let Some((k, t, key)) = &scratch.last {
            if k.as_slice() == key_text && t.as_slice() == table_text {
                return Some(*key);
            }
        }
        let key = self.keys.get(key_text)?;
        if !key.tables.contains(table_text) {
            return None;
        }
        scratch.last = Some((key_text.to_vec(), table_text.to_vec(), key));
        Some(key)
    }

    /// The decision once an event's parts are read (an event's attributes, or a JSON line's
    /// values: lane.rs): its key in the ring, bound to its table and valid at its time, and its
    /// tag the text of HMAC-SHA256 over the canonical bytes `canonical` writes (false: it leaves
    /// the event to Python). `scratch`: the run's (`TagScratch`).
    #[inline(always)]
    pub(crate) fn authentic_parts<'k>(&'k self, scratch: &mut TagScratch<'k>, key_text: &[u8], tag_text: &[u8],
                                      table_text: &[u8], ts: i64,
                                      canonical: impl FnOnce(&mut Vec<u8>) -> bool) -> bool {
        let Some(key) = self.key_for(scratch, key_text, table_text) else { return false };
        if ts < key.not_before || key.not_after.is_some_and(|end| ts >= end) {
            return false;
        }
        let buf = &mut scratch.buf;
        buf.clear();
        if !canonical(buf) {
            return false;
        }
        let mut mac = key.mac.clone();
        mac.update(buf);
        let digest = mac.finalize().into_bytes();
        let mut expected = [0u8; 43];
        if URL_SAFE_NO_PAD.encode_slice(digest, &mut expected).ok() != Some(43) {
            return false;
        }
        let Ok(tag) = <&[u8; 43]>::try_from(tag_text) else { return false };
        bool::from(words(&expected).ct_eq(&words(tag)))
    }

    /// The format of the kind named `name` (a JSON line's `type`), if this module writes it.
    pub(crate) fn format_named(&self, name: &[u8]) -> Option<&Format> {
        self.formats.iter().find(|f| f.name == name)
    }
}

impl TagKeys {
    /// Whether the event carries neither a key id nor a tag (`TagCheck.problem_plain` lets such an
    /// event through, counted, when the replay accepts untagged history).
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    pub(crate) unsafe fn untagged(&self, event: Obj) -> bool {
        let none = ffi::Py_None();
        matches!((attr(event, &self.attr_key_id), attr(event, &self.attr_tag)),
                 (Some(k), Some(t)) if k.p() == none && t.p() == none)
    }
}

/// A tag's 43 characters as six words, for the constant-time compare (subtle's, one word at a time
/// rather than one byte: the same guarantee, a seventh of its barriers).
#[inline(always)]
fn words(text: &[u8; 43]) -> [u64; 6] {
    let mut out = [0u64; 6];
    for (word, chunk) in out.iter_mut().zip(text.chunks(8)) {
        let mut bytes = [0u8; 8];
        bytes[..chunk.len()].copy_from_slice(chunk);
        *word = u64::from_le_bytes(bytes);
    }
    out
}

/// The canonical bytes of `event` (version 1) into `buf`; false where this module leaves the
/// event to Python (text that is not printable ASCII, an odd type, an int beyond 64 bits).
///
/// # Safety
/// The GIL is held, and every object it is given is live for the call.
unsafe fn write_canonical(buf: &mut Vec<u8>, event: Obj, format: &Format, key_id: &[u8], table_id: &[u8],
                          seq: i64, ts: i64) -> bool {
    if !write_head(buf, format, key_id, table_id, seq, ts) {
        return false;
    }
    for (name, kind) in &format.fields {
        let Some(value) = attr(event, name) else { return false };
        buf.push(b',');
        if !push_value(buf, value.p(), *kind) {
            return false;
        }
    }
    buf.push(b']');
    true
}

/// A JSON line's value of an own field (lane.rs): text (printable ASCII), an int or a bool.
pub(crate) enum Plain<'a> {
    Text(&'a [u8]),
    Int(i64),
    Bool(bool),
}

/// The canonical bytes of an event read from a JSON line (lane.rs): `value(name)` gives each own
/// field's value; false where this module leaves the event to Python (a field missing, or of
/// another kind than the contract's).
pub(crate) fn write_canonical_plain<'a>(buf: &mut Vec<u8>, format: &Format, key_id: &[u8], table_id: &[u8], seq: i64,
                                        ts: i64, value: impl Fn(&[u8]) -> Option<Plain<'a>>) -> bool {
    if !write_head(buf, format, key_id, table_id, seq, ts) {
        return false;
    }
    for ((_, kind), name) in format.fields.iter().zip(&format.field_names) {
        buf.push(b',');
        match (value(name), kind) {
            (Some(Plain::Text(t)), Kind::Text) => {
                if !push_text(buf, t) {
                    return false;
                }
            }
            (Some(Plain::Int(v)), Kind::Int) => push_int(buf, v),
            (Some(Plain::Bool(v)), Kind::Bool) => buf.extend_from_slice(if v { b"true" } else { b"false" }),
            _ => return false,
        }
    }
    buf.push(b']');
    true
}

/// `["craps-event-v1",key_id,type,table_id,seq,ts` of the canonical bytes.
fn write_head(buf: &mut Vec<u8>, format: &Format, key_id: &[u8], table_id: &[u8], seq: i64, ts: i64) -> bool {
    buf.extend_from_slice(b"[\"");
    buf.extend_from_slice(VERSION);
    buf.extend_from_slice(b"\",");
    if !push_text(buf, key_id) {
        return false;
    }
    buf.extend_from_slice(b",\"");
    buf.extend_from_slice(&format.name);
    buf.extend_from_slice(b"\",");
    if !push_text(buf, table_id) {
        return false;
    }
    buf.push(b',');
    push_int(buf, seq);
    buf.push(b',');
    push_int(buf, ts);
    true
}
