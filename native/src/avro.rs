//! Avro container blocks read straight into the core's events: the native form of the block
//! decoder of craps_streams/codec/fastread.py (`_block_decoder`), for Avro replays and archives.
//!
//! The generated Python decoder spends about 2 µs a record reading the Avro binary encoding in
//! Python bytecode; a day of a 100-table floor is a million records, a third of the replay's time.
//! This reads the same bytes by the same rules in one native call per block, and its items are
//! exactly the Python decoder's:
//!
//! - a record of a kind in the layout (the kinds whose Avro body is exactly the event's own fields,
//!   all primitives: `fastread._plan`) becomes its event when the Python decoder's checks pass:
//!   the `type` string equal to the branch's kind, the ids of the id format, other strings 1 to 64
//!   characters, seq >= 1, ts >= 0, key_id and tag at most 128 characters, every string strict
//!   UTF-8, every varint as `fastread` reads it (a long in at most ten bytes, a length by the
//!   spec's zig-zag varint and never negative), a union's index byte 0 or 2;
//! - any other record (a TableOpened, an unknown branch, a failed check) is the item of `slow(data,
//!   start, n)`: the record decoded by fastavro from its first byte, as the Python decoder does;
//! - where this is not sure of what the Python decoder would do (a read beyond the block, the
//!   records not ending where the block does), it returns None and the Python decoder reads the
//!   whole block as before. So the two cannot differ: the tests compare them on simulated floors,
//!   hand-made odd records and corrupted files (tests/codec/test_fastread.py).

use crate::py::{call, Obj, O};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use std::collections::{HashMap, HashSet};

// The contract's limits (craps_streams/rules/contract.py: MAX_TEXT, MAX_TAG_FIELD), as fastread checks them.
const MAX_TEXT: usize = 64;
const MAX_TAG_FIELD: usize = 128;
// As fastread's caches: at most this many distinct strings and good table ids are kept.
const CACHE_LIMIT: usize = 20_000;
// The most arguments an event's constructor takes here (table_id, seq, ts, fields, key_id, tag).
const ARGS: usize = 16;

#[derive(Clone, Copy)]
enum Field {
    Long,
    Boolean,
    /// A string of the id format (ID_FIELDS).
    Id { cached: bool },
    /// Any other string: 1 to MAX_TEXT characters.
    Text { cached: bool },
}

struct Branch {
    kind: Vec<u8>,
    new: O,
    fields: Vec<Field>,
}

/// Why a record is not read here.
pub(crate) enum Odd {
    /// Not one this reads (a check failed, another branch): `slow` decodes it, as in fastread.
    Record,
    /// A read beyond the block: the Python decoder reads the block (it knows what follows).
    Block,
}

pub(crate) type Read<T> = Result<T, Odd>;

/// The decoder of one TableEvent schema's blocks: `BlockReader(branches, cached_key_id)`,
/// `branches[i]` None or `(kind, constructor, fields)` for the body's union branch i, the fields
/// as codes "long", "boolean", "id", "text", "id*", "text*" (a star: one str object per value,
/// fastread's CACHED_STRINGS); `cached_key_id` whether key_id is one of those.
#[pyclass(unsendable, module = "craps_streams.accelerator._native")]
pub struct BlockReader {
    branches: Vec<Option<Branch>>,
    cached_key_id: bool,
    strings: HashMap<Vec<u8>, O>,
    good_ids: HashSet<Vec<u8>>,
}

#[inline(always)]
fn byte(data: &[u8], pos: usize) -> Read<u8> {
    data.get(pos).copied().ok_or(Odd::Block)
}

/// A long as fastread's `_emit_long` reads it: at most ten bytes, the tenth 0 or 1.
#[inline(always)]
pub(crate) fn long(data: &[u8], pos: &mut usize) -> Read<i64> {
    let b = byte(data, *pos)?;
    if b < 128 {
        *pos += 1;
        return Ok(((b >> 1) as i64) ^ -((b & 1) as i64));
    }
    let mut v = (b & 127) as u64;
    for i in 1..10 {
        let b = byte(data, *pos + i)?;
        if i == 9 && b >= 2 {
            return Err(Odd::Record);
        }
        v |= ((b & 127) as u64) << (7 * i);
        if b < 128 {
            *pos += i + 1;
            return Ok(((v >> 1) as i64) ^ -((v & 1) as i64));
        }
    }
    unreachable!("the tenth byte ends the varint or is refused")
}

/// A length as fastread's `_length_at` reads it: a zig-zag varint of any number of bytes whose
/// value fits 64 bits, never negative.
#[inline(always)]
fn length(data: &[u8], pos: &mut usize) -> Read<usize> {
    let b = byte(data, *pos)?;
    if b < 128 {
        *pos += 1;
        return if b & 1 == 0 { Ok((b >> 1) as usize) } else { Err(Odd::Record) };
    }
    let mut v: u64 = 0;
    let mut shift: u32 = 0;
    loop {
        let b = byte(data, *pos)?;
        *pos += 1;
        let low = (b & 127) as u64;
        if low != 0 {
            if shift >= 64 || (low << shift) >> shift != low {
                return Err(Odd::Record); // beyond 64 bits
            }
            v |= low << shift;
        }
        shift = shift.saturating_add(7);
        if b < 128 {
            break;
        }
    }
    let n = ((v >> 1) as i64) ^ -((v & 1) as i64);
    if n < 0 {
        return Err(Odd::Record);
    }
    Ok(n as usize)
}

/// A string's bytes (not yet checked as UTF-8).
#[inline(always)]
pub(crate) fn raw<'a>(data: &'a [u8], pos: &mut usize) -> Read<&'a [u8]> {
    let n = length(data, pos)?;
    let end = pos.checked_add(n).ok_or(Odd::Block)?;
    if end > data.len() {
        return Err(Odd::Block); // Python slices short here and fails later: its decoder decides
    }
    let s = &data[*pos..end];
    *pos = end;
    Ok(s)
}

fn valid_id(t: &[u8]) -> bool {
    (1..=32).contains(&t.len()) && t.iter().all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
}

/// Characters (code points) of valid UTF-8, as Python's len() counts them.
#[inline(always)]
fn chars(t: &str) -> usize {
    if t.is_ascii() {
        t.len()
    } else {
        t.chars().count()
    }
}

impl BlockReader {
    /// The str of a string's bytes: strict UTF-8 (else the record is odd), one object per value
    /// when cached.
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    #[inline(always)]
    unsafe fn text(&mut self, t: &[u8], cached: bool) -> PyResult<Option<O>> {
        if cached {
            if let Some(s) = self.strings.get(t) {
                return Ok(Some(s.clone()));
            }
        }
        let Ok(u) = std::str::from_utf8(t) else { return Ok(None) };
        let s = O::owned(ffi::PyUnicode_FromStringAndSize(u.as_ptr() as *const _, u.len() as ffi::Py_ssize_t))?;
        if cached && self.strings.len() < CACHE_LIMIT {
            self.strings.insert(t.to_vec(), s.clone());
        }
        Ok(Some(s))
    }

    /// The event of the record at `*pos`, or why not; `*pos` after it when read.
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    unsafe fn record(&mut self, data: &[u8], pos: &mut usize) -> PyResult<Read<O>> {
        macro_rules! get {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(odd) => return Ok(Err(odd)),
                }
            };
        }
        macro_rules! text {
            ($t:expr, $cached:expr) => {
                match self.text($t, $cached)? {
                    Some(s) => s,
                    None => return Ok(Err(Odd::Record)), // not UTF-8: fastread's UnicodeDecodeError
                }
            };
        }
        let table_raw = get!(raw(data, pos));
        let seq = get!(long(data, pos));
        let ts = get!(long(data, pos));
        let type_ = get!(raw(data, pos));
        let index = get!(long(data, pos));
        let Some(b) = usize::try_from(index).ok().filter(|&i| matches!(self.branches.get(i), Some(Some(_)))) else {
            return Ok(Err(Odd::Record)); // null, a TableOpened, a kind fastread does not plan
        };
        let (new, nf, mut ok) = match &self.branches[b] {
            Some(br) => (br.new.p(), br.fields.len(), type_ == br.kind.as_slice() && seq >= 1 && ts >= 0),
            None => unreachable!(),
        };
        let table_id = text!(table_raw, true);
        if !self.good_ids.contains(table_raw) {
            ok = ok && valid_id(table_raw);
        }
        // The constructor's arguments: table_id, seq, ts, the kind's fields, key_id, tag.
        let mut args: [Option<O>; ARGS] = Default::default();
        if 5 + nf > ARGS {
            return Ok(Err(Odd::Record));
        }
        args[0] = Some(table_id);
        args[1] = Some(O::owned(ffi::PyLong_FromLongLong(seq))?);
        args[2] = Some(O::owned(ffi::PyLong_FromLongLong(ts))?);
        let mut at = 3;
        for j in 0..nf {
            let f = match &self.branches[b] {
                Some(br) => br.fields[j],
                None => unreachable!(),
            };
            args[at] = Some(match f {
                Field::Long => {
                    let v = get!(long(data, pos));
                    O::owned(ffi::PyLong_FromLongLong(v))?
                }
                Field::Boolean => {
                    // As fastavro reads one: any byte but 0 is true.
                    let v = get!(byte(data, *pos));
                    *pos += 1;
                    O::new_ref(if v != 0 { ffi::Py_True() } else { ffi::Py_False() })
                }
                Field::Id { cached } => {
                    let t = get!(raw(data, pos));
                    let s = text!(t, cached);
                    ok = ok && valid_id(t);
                    s
                }
                Field::Text { cached } => {
                    let t = get!(raw(data, pos));
                    let s = text!(t, cached);
                    ok = ok && (1..=MAX_TEXT).contains(&chars(std::str::from_utf8_unchecked(t)));
                    s
                }
            });
            at += 1;
        }
        for cached in [self.cached_key_id, false] {
            // key_id, tag: a union ["null", "string"], its index byte read raw as fastread does.
            match get!(byte(data, *pos)) {
                0 => {
                    *pos += 1;
                    args[at] = Some(O::new_ref(ffi::Py_None()));
                }
                2 => {
                    *pos += 1;
                    let t = get!(raw(data, pos));
                    let s = text!(t, cached);
                    ok = ok && chars(std::str::from_utf8_unchecked(t)) <= MAX_TAG_FIELD;
                    args[at] = Some(s);
                }
                _ => return Ok(Err(Odd::Record)),
            }
            at += 1;
        }
        if !ok {
            return Ok(Err(Odd::Record));
        }
        if self.good_ids.len() < CACHE_LIMIT && !self.good_ids.contains(table_raw) {
            self.good_ids.insert(table_raw.to_vec());
        }
        let mut ptrs: [Obj; ARGS] = [std::ptr::null_mut(); ARGS];
        for (p, a) in ptrs.iter_mut().zip(&args[..at]) {
            *p = a.as_ref().map_or(std::ptr::null_mut(), |o| o.p());
        }
        Ok(Ok(call(new, &ptrs[..at])?))
    }
}

#[pymethods]
impl BlockReader {
    #[new]
    fn new(branches: &Bound<PyTuple>, cached_key_id: bool) -> PyResult<BlockReader> {
        let mut out = Vec::new();
        for b in branches.iter() {
            if b.is_none() {
                out.push(None);
                continue;
            }
            let (kind, new, codes): (Vec<u8>, Py<PyAny>, Vec<String>) = b.extract()?;
            let mut fields = Vec::new();
            for code in codes {
                fields.push(match code.as_str() {
                    "long" => Field::Long,
                    "boolean" => Field::Boolean,
                    "id" => Field::Id { cached: false },
                    "id*" => Field::Id { cached: true },
                    "text" => Field::Text { cached: false },
                    "text*" => Field::Text { cached: true },
                    other => return Err(pyo3::exceptions::PyValueError::new_err(format!("field code {other:?}"))),
                });
            }
            // SAFETY: the GIL is held; `new` is a live object, whose reference count is incremented
            // for the branch that keeps it.
            out.push(Some(Branch { kind, new: unsafe { O::new_ref(new.as_ptr()) }, fields }));
        }
        Ok(BlockReader { branches: out, cached_key_id, strings: HashMap::new(), good_ids: HashSet::new() })
    }

    /// `decode(data, count, n0, slow)` -> the block's items (fastread's `decode`), or None where
    /// the Python decoder must read the block. `n0`: the number of the block's first record in
    /// the file; `slow(data, start, n)` -> (item, position after it) of the record at `start`.
    fn decode(&mut self, py: Python<'_>, data: &Bound<PyBytes>, count: usize, n0: usize, slow: &Bound<PyAny>)
              -> PyResult<Option<Py<PyAny>>> {
        let bytes = data.as_bytes();
        let mut items: Vec<O> = Vec::with_capacity(count);
        let mut pos = 0usize;
        // SAFETY: the GIL is held (`py`); `record` reads only within `bytes` (each read checks the
        // length left) and returns owned objects; `slow` is called with the GIL held.
        unsafe {
            for _ in 0..count {
                let start = pos;
                match self.record(bytes, &mut pos)? {
                    Ok(event) => items.push(event),
                    Err(Odd::Block) => return Ok(None),
                    Err(Odd::Record) => {
                        let at = O::owned(ffi::PyLong_FromSize_t(start))?;
                        let k = O::owned(ffi::PyLong_FromSize_t(n0 + items.len()))?;
                        let r = call(slow.as_ptr(), &[data.as_ptr(), at.p(), k.p()])?;
                        let (item, after): (Py<PyAny>, usize) = Bound::from_borrowed_ptr(py, r.p()).extract()?;
                        items.push(O::new_ref(item.as_ptr()));
                        pos = after;
                    }
                }
            }
            if pos != bytes.len() {
                return Ok(None); // the records do not end where the block does: the Python decoder's case
            }
            let list = O::owned(ffi::PyList_New(items.len() as ffi::Py_ssize_t))?;
            for (i, o) in items.into_iter().enumerate() {
                ffi::PyList_SET_ITEM(list.p(), i as ffi::Py_ssize_t, o.into_ptr());
            }
            Ok(Some(Py::from_owned_ptr(py, list.into_ptr())))
        }
    }
}
