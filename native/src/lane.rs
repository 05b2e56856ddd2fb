//! JSON lines settled without becoming Python events: the lane of a JSON Lines replay
//! (craps_streams/replay/jsonread.py `LineBatch`, craps_streams/settle/quiet.py).
//!
//! Most lines of a history are wagers placed and shooters changed, which the settling step only
//! checks, applies and files (quiet.rs). Decoding each into a Python event first (msgspec, then
//! the ids' characters) costs about as much again as settling it. Here such a line is read, checked, authenticated and applied in one pass, and it becomes a Python
//! event only when this lane stops at it. A throw is read, checked, authenticated and applied here
//! too; where the table's surveillance is the native watch, the rest of its step
//! (craps_streams/settle/step.py `settled`: the hold book and the watch) is done here as well,
//! by the watch's `book_observe`, and its outputs join the batch's; else it is handed back as the
//! event msgspec would have read, with its outputs, and `settled` finishes it in Python.
//!
//! The lane says yes only where the plain path is certain to say the same:
//! - the line is plain printable ASCII and of a strict subset of JSON: one object, keys and
//!   string values without any escape, integers in the JSON grammar that fit 64 bits, true and
//!   false, no float, no null, no key twice, only whitespace around (json and msgspec read these
//!   the same; every other line, valid JSON or not, goes to the plain path);
//! - its `type` is WagerPlaced, ShooterChanged or DiceThrown, it has exactly that kind's fields
//!   (key_id and tag optional, a throw's valid too), each of the contract's type, within its limits
//!   (ids 1 to 32 of A-Z a-z 0-9 _ . -, other text 1 to 64 characters, seq >= 1, ts >= 0, tag
//!   fields at most 128): the event the contract (`record_to_event`) builds;
//! - then quiet.rs's questions, in its order, on that event: a native table with its hold book,
//!   the tag authentic by the native check (tags.rs, over the same canonical bytes) or absent
//!   where untagged history is accepted, the native core's step (table.rs, decided before any
//!   change), no outputs.
//!
//! At the first line that is not all of these it stops, with nothing changed for that line; the
//! caller reads it by the plain path (an event, or its rejection) and settles it by
//! `settle_event`. tests/settle/test_lane.py holds replays through the lane to the plain path line
//! by line, on floors with hostile lines and on a corpus of odd JSON.
//!
//! Hand-written rather than serde_json: the lane must know more than whether a line parses (a
//! key present with null, a key repeated, an escape, a float where an int belongs must each
//! send the line to the plain path, which words its rejection), and the strict grammar is
//! shorter than the checks serde would need around it.

use crate::py::{ascii, ascii_str, call, list_of, Obj, O};
use crate::quiet::{native_table, none_given};
use crate::table::{ShooterIn, WagerIn};
use crate::tags::{write_canonical_plain, Plain, TagKeys};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

#[derive(Clone, Copy)]
enum Val<'a> {
    Absent,
    Text(&'a [u8]),
    Int(i64),
    Bool(bool),
}

// The keys the lane reads, as indices (any other key sends the line to the plain path).
const TYPE: usize = 0;
const TABLE_ID: usize = 1;
const SEQ: usize = 2;
const TS: usize = 3;
const WAGER_ID: usize = 4;
const POSITION: usize = 5;
const WAGER: usize = 6;
const AMOUNT: usize = 7;
const SHOOTER_ID: usize = 8;
const REASON: usize = 9;
const DIE1: usize = 10;
const DIE2: usize = 11;
const VALID: usize = 12;
const KEY_ID: usize = 13;
const TAG: usize = 14;
const KEYS: usize = 15;

/// The index of a key. By length first, so that each comparison is of a known size (no call to
/// memcmp per key: this runs for every key of every line).
#[inline(always)]
fn key_index(k: &[u8]) -> Option<usize> {
    let i = match k.len() {
        2 if k == b"ts" => TS,
        3 if k == b"seq" => SEQ,
        3 if k == b"tag" => TAG,
        4 if k == b"type" => TYPE,
        4 if k == b"die1" => DIE1,
        4 if k == b"die2" => DIE2,
        5 if k == b"wager" => WAGER,
        5 if k == b"valid" => VALID,
        6 if k == b"reason" => REASON,
        6 if k == b"key_id" => KEY_ID,
        8 if k == b"table_id" => TABLE_ID,
        8 if k == b"wager_id" => WAGER_ID,
        8 if k == b"position" => POSITION,
        10 if k == b"shooter_id" => SHOOTER_ID,
        12 if k == b"amount_cents" => AMOUNT,
        _ => return None,
    };
    Some(i)
}

/// A line's values by key index, and which keys it has.
struct Fields<'a> {
    vals: [Val<'a>; KEYS],
    present: u16,
}

impl<'a> Fields<'a> {
    #[inline(always)]
    fn get(&self, i: usize) -> Val<'a> {
        self.vals[i]
    }
    #[inline(always)]
    fn text(&self, i: usize) -> &'a [u8] {
        match self.vals[i] {
            Val::Text(t) => t,
            _ => b"",
        }
    }
    #[inline(always)]
    fn int(&self, i: usize) -> i64 {
        match self.vals[i] {
            Val::Int(v) => v,
            _ => 0,
        }
    }
    /// An own field's value by name, for the canonical bytes (tags.rs); a throw's valid is true
    /// when the line leaves it out, as the event's default.
    fn plain(&self, name: &[u8]) -> Option<Plain<'a>> {
        let i = key_index(name)?;
        match self.vals[i] {
            Val::Text(t) => Some(Plain::Text(t)),
            Val::Int(v) => Some(Plain::Int(v)),
            Val::Bool(v) => Some(Plain::Bool(v)),
            Val::Absent if i == VALID => Some(Plain::Bool(true)),
            Val::Absent => None,
        }
    }
}

#[inline(always)]
fn ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// A string at `b[i] == '"'` of printable ASCII without escapes: (its bytes, the index after it).
#[inline(always)]
fn string(b: &[u8], i: usize) -> Option<(&[u8], usize)> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let start = i + 1;
    let mut j = start;
    loop {
        match *b.get(j)? {
            b'"' => return Some((&b[start..j], j + 1)),
            b'\\' => return None,
            0x20..=0x7e => j += 1,
            _ => return None,
        }
    }
}

/// An integer in the JSON grammar (-?(0|[1-9][0-9]*)) that fits an i64, not the start of a
/// fraction or an exponent: (its value, the index after it).
#[inline(always)]
fn integer(b: &[u8], mut i: usize) -> Option<(i64, usize)> {
    let negative = b.get(i) == Some(&b'-');
    if negative {
        i += 1;
    }
    let first = *b.get(i)?;
    if !first.is_ascii_digit() {
        return None;
    }
    let mut magnitude: u64 = (first - b'0') as u64;
    i += 1;
    if first != b'0' {
        while let Some(&d) = b.get(i) {
            if !d.is_ascii_digit() {
                break;
            }
            magnitude = magnitude.checked_mul(10)?.checked_add((d - b'0') as u64)?;
            i += 1;
        }
    }
    if matches!(b.get(i), Some(b'.' | b'e' | b'E' | b'0'..=b'9')) {
        return None;
    }
    let value = if negative {
        if magnitude > 1u64 << 63 {
            return None;
        }
        (magnitude as i128).wrapping_neg() as i64
    } else {
        i64::try_from(magnitude).ok()?
    };
    Some((value, i))
}

/// The object of a line of the strict subset with the lane's keys only, or None.
fn parse(b: &[u8]) -> Option<Fields<'_>> {
    let mut f = Fields { vals: [Val::Absent; KEYS], present: 0 };
    let mut i = ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = ws(b, i + 1);
    loop {
        let (key, j) = string(b, i)?;
        let k = key_index(key)?;
        i = ws(b, j);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = ws(b, i + 1);
        let (val, j) = match *b.get(i)? {
            b'"' => {
                let (t, j) = string(b, i)?;
                (Val::Text(t), j)
            }
            b'-' | b'0'..=b'9' => {
                let (v, j) = integer(b, i)?;
                (Val::Int(v), j)
            }
            b't' if b[i..].starts_with(b"true") => (Val::Bool(true), i + 4),
            b'f' if b[i..].starts_with(b"false") => (Val::Bool(false), i + 5),
            _ => return None, // null, an object, an array, anything else: the plain path's
        };
        if f.present & (1 << k) != 0 {
            return None; // a key twice
        }
        f.present |= 1 << k;
        f.vals[k] = val;
        i = ws(b, j);
        match *b.get(i)? {
            b',' => i = ws(b, i + 1),
            b'}' => {
                i += 1;
                break;
            }
            _ => return None,
        }
    }
    if ws(b, i) != b.len() {
        return None;
    }
    Some(f)
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Wager,
    Shooter,
    Dice,
}

const fn bits(keys: &[usize]) -> u16 {
    let mut m = 0u16;
    let mut i = 0;
    while i < keys.len() {
        m |= 1 << keys[i];
        i += 1;
    }
    m
}

// Each kind's fields (craps_streams/rules/events.py): those it must have, those it may leave out
// (key_id and tag: None; a throw's valid: true).
const WAGER_NEEDS: u16 = bits(&[TYPE, TABLE_ID, SEQ, TS, WAGER_ID, POSITION, WAGER, AMOUNT]);
const SHOOTER_NEEDS: u16 = bits(&[TYPE, TABLE_ID, SEQ, TS, SHOOTER_ID, POSITION, REASON]);
const DICE_NEEDS: u16 = bits(&[TYPE, TABLE_ID, SEQ, TS, DIE1, DIE2]);
const TAGS: u16 = bits(&[KEY_ID, TAG]);
const DICE_MAY: u16 = bits(&[VALID, KEY_ID, TAG]);

fn valid_id(t: &[u8]) -> bool {
    (1..=32).contains(&t.len()) && t.iter().all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
}

/// The line's kind when it is the event the contract builds: a known kind, its own fields only,
/// every required one, each of its type and within its limits.
fn kind_of(f: &Fields) -> Option<Kind> {
    let (kind, needs, may) = match f.get(TYPE) {
        Val::Text(b"WagerPlaced") => (Kind::Wager, WAGER_NEEDS, TAGS),
        Val::Text(b"ShooterChanged") => (Kind::Shooter, SHOOTER_NEEDS, TAGS),
        Val::Text(b"DiceThrown") => (Kind::Dice, DICE_NEEDS, DICE_MAY),
        _ => return None,
    };
    if f.present & needs != needs || f.present & !(needs | may) != 0 {
        return None;
    }
    for k in 1..KEYS {
        if f.present & (1 << k) == 0 {
            continue;
        }
        let ok = match (k, f.vals[k]) {
            (TABLE_ID | WAGER_ID | SHOOTER_ID, Val::Text(t)) => valid_id(t),
            (WAGER | REASON, Val::Text(t)) => (1..=64).contains(&t.len()),
            (KEY_ID | TAG, Val::Text(t)) => t.len() <= 128,
            (SEQ, Val::Int(v)) => v >= 1,
            (TS, Val::Int(v)) => v >= 0,
            (POSITION | AMOUNT | DIE1 | DIE2, Val::Int(_)) => true,
            (VALID, Val::Bool(_)) => true,
            _ => false,
        };
        if !ok {
            return None;
        }
    }
    Some(kind)
}

/// The table ids of one call's lines as str, each made once: a floor's lines name few tables,
/// and a str kept keeps its hash (the dicts' lookups do not hash it again).
struct TableIds(Vec<(Vec<u8>, O)>);

impl TableIds {
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    unsafe fn of(&mut self, text: &[u8]) -> PyResult<O> {
        if let Some((_, s)) = self.0.iter().find(|(t, _)| t.as_slice() == text) {
            return Ok(s.clone());
        }
        let s = ascii_str(text, b"")?;
        if self.0.len() < 32 {
            self.0.push((text.to_vec(), s.clone()));
        }
        Ok(s)
    }
}

/// An interned str of the context whose text is `t`, or None.
///
/// # Safety
/// The GIL is held, and every object it is given is live for the call.
unsafe fn known_str(candidates: &[Obj], t: &[u8]) -> Option<Obj> {
    candidates.iter().copied().find(|&p| ascii(p) == Some(t))
}

/// The lines a call reads: a list of str (`start` and `stop` are indices into it), or a block of
/// the history's bytes (craps_streams/replay/jsonread.py `line_blocks`: `start` and `stop` are
/// byte offsets of a line's start; a line ends at a newline or at the block's end).
enum Lines<'a> {
    List(Obj, usize),
    Block(&'a [u8]),
}

impl<'a> Lines<'a> {
    /// # Safety
    /// The GIL is held, and `lines` is live for the call (a block's bytes are borrowed from it).
    unsafe fn of(lines: &'a Bound<PyAny>) -> PyResult<Lines<'a>> {
        if let Ok(list) = lines.downcast_exact::<PyList>() {
            return Ok(Lines::List(list.as_ptr(), ffi::PyList_GET_SIZE(list.as_ptr()) as usize));
        }
        Ok(Lines::Block(lines.downcast_exact::<PyBytes>()?.as_bytes()))
    }

    /// The line at `i` (without its newline) and where the next one starts; None at the end, or
    /// for a line the lane leaves to the plain path before parsing it: a str that is not ASCII, a
    /// block's line holding a carriage return (a text stream ends a line there too: the plain
    /// path reads and numbers such lines as a text stream does).
    ///
    /// # Safety
    /// The GIL is held, and the list (if any) is live for the call.
    #[inline(always)]
    unsafe fn at(&self, i: usize) -> Option<(&'a [u8], usize)> {
        match *self {
            Lines::List(list, n) => {
                if i >= n {
                    return None;
                }
                Some((ascii(ffi::PyList_GET_ITEM(list, i as ffi::Py_ssize_t))?, i + 1))
            }
            Lines::Block(block) => {
                let rest = block.get(i..).filter(|r| !r.is_empty())?;
                let (line, next) = match memchr::memchr(b'\n', rest) {
                    Some(end) => (&rest[..end], i + end + 1),
                    None => (rest, block.len()),
                };
                if memchr::memchr(b'\r', line).is_some() {
                    return None;
                }
                Some((line, next))
            }
        }
    }
}

/// What `settle_lines` returns: (stop, applied, untagged, thrown).
type LaneRun = (usize, usize, usize, Option<(Py<PyAny>, Py<PyAny>)>);

/// `settle_lines(keys, accept_untagged, tables, books, lines, start)` -> `(stop, applied,
/// untagged, thrown)`: the lines of `lines` (a list of str, or a block of bytes: `Lines`) from
/// `start` up to `stop` settled in the lane, every one of them applied: `applied` lines (`untagged`
/// of those without a tag). `thrown` None: `lines[stop]` (if any) is untouched, for the plain
/// path. Else `lines[stop]` was a throw, read, checked and
/// authenticated here, and `thrown` is `(event, outputs)`: the DiceThrown event msgspec would have
/// read, and its outputs when the native core applied it (then counted in neither `applied` nor
/// `untagged`: the caller finishes its step with the table's surveillance, `settled`), or None
/// when the core left it to Python (the caller settles the event by `settle_event`). `keys` None:
/// no tag check (tests of the rules alone).
///
/// With `until`, a line whose time is past it stops the lane, untouched (the caller's slice does
/// not feed it). With `span` (a list of two: None or the least and the greatest time so far), the
/// times of the lines settled here widen it (the report's provenance: the history's first and last
/// event time).
///
/// With `out` (a list) and `new_line` (`HoldWatch.new_line`, given only where the step's watch is
/// the plain `HoldWatch`), a throw the native core applied on a table whose surveillance is the
/// native `Watch` is finished here as step.py `settled` finishes it: its settlements booked into
/// the table's hold book and the table watched (`Watch.book_observe`), its outputs and then the
/// alerts appended to `out`, counted in `applied` (and `untagged`), and the lane goes on. Where the
/// watch declines, the throw is handed back as `thrown`, and the step's Python finishes it.
#[pyfunction]
#[pyo3(signature = (keys, accept_untagged, tables, books, lines, start, out=None, new_line=None, until=None,
                    span=None))]
#[allow(clippy::too_many_arguments)]
pub fn settle_lines(py: Python<'_>, keys: Option<&Bound<TagKeys>>, accept_untagged: bool, tables: &Bound<PyDict>,
                    books: &Bound<PyDict>, lines: &Bound<PyAny>, start: usize, out: Option<&Bound<PyList>>,
                    new_line: Option<&Bound<PyAny>>, until: Option<i64>, span: Option<&Bound<PyList>>)
                    -> PyResult<LaneRun> {
    let mut times = (i64::MAX, i64::MIN); // the least and greatest time of the lines settled here
    let run = lane(py, keys, accept_untagged, tables, books, lines, start, out, new_line, until, &mut times);
    if let Some(span) = span {
        if times.0 <= times.1 {
            widen(span, times)?;
        }
    }
    run
}

/// `span[0] = min(span[0], low)`, `span[1] = max(span[1], high)` (None: not yet any).
fn widen(span: &Bound<PyList>, (low, high): (i64, i64)) -> PyResult<()> {
    let (a, b) = (span.get_item(0)?, span.get_item(1)?);
    let a: Option<i64> = a.extract()?;
    let b: Option<i64> = b.extract()?;
    span.set_item(0, a.map_or(low, |a| a.min(low)))?;
    span.set_item(1, b.map_or(high, |b| b.max(high)))?;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn lane(py: Python<'_>, keys: Option<&Bound<TagKeys>>, accept_untagged: bool, tables: &Bound<PyDict>,
        books: &Bound<PyDict>, lines: &Bound<PyAny>, start: usize, out: Option<&Bound<PyList>>,
        new_line: Option<&Bound<PyAny>>, until: Option<i64>, times: &mut (i64, i64)) -> PyResult<LaneRun> {
    let finish = out.zip(new_line);
    let keys = keys.map(|k| k.get());
    // Each kind's canonical format, looked up once per call (indexed by `Kind`).
    let formats = keys.map_or([None; 3], |k| {
        [b"WagerPlaced".as_slice(), b"ShooterChanged", b"DiceThrown"].map(|name| k.format_named(name))
    });
    let mut applied = 0usize;
    let mut untagged = 0usize;
    let mut i = start;
    let mut ids = TableIds(Vec::new());
    let mut scratch = crate::tags::TagScratch::new();
    let c = crate::context(py)?;
    // SAFETY: the GIL is held (a Python call) and `c` is this call's context; every
    // line is read from the list by an index below its length, borrowed while the list holds it,
    // or from the block's bytes, borrowed while `lines` holds them; each object made here is
    // owned (`O`) until it is handed to Python.
    unsafe {
        let reasons = [c.sc_table_open, c.sc_seven_out, c.sc_voluntary, c.sc_compulsory];
        let source = Lines::of(lines)?;
        while let Some((bytes, next)) = source.at(i) {
            let Some(f) = parse(bytes) else { break };
            let Some(kind) = kind_of(&f) else { break };
            if until.is_some_and(|u| f.int(TS) > u) {
                break; // past the caller's slice: not fed
            }
            let table_text = f.text(TABLE_ID);
            let table_id = ids.of(table_text)?;
            let Some(table) = native_table(py, tables, books, table_id.p()) else { break };
            let (seq, ts) = (f.int(SEQ), f.int(TS));
            let mut was_untagged = false;
            if let Some(k) = keys {
                match (f.get(KEY_ID), f.get(TAG)) {
                    (Val::Text(key_id), Val::Text(tag)) => {
                        let Some(format) = formats[kind as usize] else { break };
                        let value = |name: &[u8]| f.plain(name);
                        if !k.authentic_parts(&mut scratch, key_id, tag, table_text, ts, |buf| {
                            write_canonical_plain(buf, format, key_id, table_text, seq, ts, value)
                        }) {
                            break; // not authentic by the fast path: `settle_event` words it
                        }
                    }
                    (Val::Absent, Val::Absent) if accept_untagged => was_untagged = true,
                    _ => break,
                }
            }
            let seq_o = O::owned(ffi::PyLong_FromLongLong(seq))?;
            if kind == Kind::Dice {
                // The event itself, for the table's surveillance (and for the Python core, when
                // the native one leaves the throw to it): as msgspec reads the line.
                let optional = |k: usize| -> PyResult<O> {
                    match f.get(k) {
                        Val::Text(t) => ascii_str(t, b""),
                        _ => Ok(O::new_ref(ffi::Py_None())),
                    }
                };
                let valid = !matches!(f.get(VALID), Val::Bool(false));
                let table_ptr = table_id.p(); // `args` holds it for the rest of the throw
                let args = [table_id, seq_o, O::owned(ffi::PyLong_FromLongLong(ts))?,
                            O::owned(ffi::PyLong_FromLongLong(f.int(DIE1)))?,
                            O::owned(ffi::PyLong_FromLongLong(f.int(DIE2)))?,
                            O::new_ref(if valid { ffi::Py_True() } else { ffi::Py_False() }),
                            optional(KEY_ID)?, optional(TAG)?];
                let ptrs: Vec<Obj> = args.iter().map(|a| a.p()).collect();
                let event = call(c.t_dice, &ptrs)?;
                let judged = table.try_borrow_mut()?.step(&c, event.p())?;
                let outputs = match judged {
                    Some(outs) => {
                        let outs = list_of(outs)?;
                        if let Some((out, new_line)) = finish {
                            if finish_throw(py, books, table_ptr, &table, event.p(), outs.p(), out, new_line)? {
                                *times = (times.0.min(ts), times.1.max(ts));
                                applied += 1;
                                if was_untagged {
                                    untagged += 1;
                                }
                                i = next;
                                continue;
                            }
                        }
                        if was_untagged {
                            untagged += 1;
                        }
                        outs.into_ptr()
                    }
                    None => {
                        ffi::Py_INCREF(ffi::Py_None());
                        ffi::Py_None()
                    }
                };
                let thrown = (Py::from_owned_ptr(py, event.into_ptr()), Py::from_owned_ptr(py, outputs));
                return Ok((i, applied, untagged, Some(thrown)));
            }
            let position = O::owned(ffi::PyLong_FromLongLong(f.int(POSITION)))?;
            let judged = if kind == Kind::Wager {
                let Some(wager) = known_str(&c.kinds, f.text(WAGER)) else { break };
                let wager_id = ascii_str(f.text(WAGER_ID), b"")?;
                let amount = O::owned(ffi::PyLong_FromLongLong(f.int(AMOUNT)))?;
                table.try_borrow_mut()?.place(&c, WagerIn { seq: seq_o.p(), wager_id: wager_id.p(), position: position.p(),
                                                        kind: wager, amount: amount.p() })?
            } else {
                let Some(reason) = known_str(&reasons, f.text(REASON)) else { break };
                let shooter_id = ascii_str(f.text(SHOOTER_ID), b"")?;
                table.try_borrow_mut()?.change_shooter(&c, ShooterIn { seq: seq_o.p(), shooter_id: shooter_id.p(),
                                                                   position: position.p(), reason })?
            };
            let Some(outputs) = judged else { break };
            none_given(&outputs)?;
            *times = (times.0.min(ts), times.1.max(ts));
            applied += 1;
            if was_untagged {
                untagged += 1;
            }
            i = next;
        }
    }
    Ok((i, applied, untagged, None))
}

/// A throw the native core applied (its `outputs`, a list), booked and watched by its table's
/// native `Watch` (`book_observe`, as step.py `settled` calls it, with `applied = [event]`): its
/// outputs, then the alerts, appended to `out`; true when done, false when the book's watch is not
/// the native one or it declined (nothing booked, nothing appended: the caller hands it back).
///
/// # Safety
/// The GIL is held; `table_id`, `event` and `outputs` are live objects.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn finish_throw(py: Python<'_>, books: &Bound<PyDict>, table_id: Obj, table: &Bound<crate::table::Table>,
                       event: Obj, outputs: Obj, out: &Bound<PyList>, new_line: &Bound<PyAny>) -> PyResult<bool> {
    let Some(book) = books.get_item(Bound::from_borrowed_ptr(py, table_id))? else { return Ok(false) };
    let watch = book.getattr(pyo3::intern!(py, "watch"))?;
    let Ok(watch) = watch.downcast_exact::<crate::watch::Watch>() else { return Ok(false) };
    let lines = book.getattr(pyo3::intern!(py, "lines"))?;
    let Ok(lines) = lines.downcast_exact::<PyDict>() else { return Ok(false) };
    let applied = PyList::new(py, [Bound::from_borrowed_ptr(py, event)])?;
    let outputs = Bound::from_borrowed_ptr(py, outputs).downcast_into_exact::<PyList>()?;
    let Some(alerts) = watch.try_borrow_mut()?.book_and_watch(py, lines, new_line, table.as_any(), &applied, &outputs)?
    else {
        return Ok(false);
    };
    for o in outputs.iter() {
        out.append(o)?;
    }
    for a in alerts.bind(py).downcast::<PyList>()?.iter() {
        out.append(a)?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_strict_subset() {
        let ok: &[&[u8]] = &[b"{\"seq\":1}", b" {\"seq\" : -0 , \"tag\":\"x y\"}\r\n", b"{\"seq\":-9223372036854775808}",
            b"{\"seq\":true,\"tag\":false}"];
        for l in ok {
            assert!(parse(l).is_some(), "{}", String::from_utf8_lossy(l));
        }
        let refused: &[&[u8]] = &[b"", b"{}", b"{\"seq\":1,}", b"{\"seq\":1}x", b"{\"seq\":01}", b"{\"seq\":1.0}", b"{\"seq\":1e3}",
            b"{\"seq\":9223372036854775808}", b"{\"seq\":-9223372036854775809}", b"{\"seq\":null}", b"{\"seq\":tru}",
            b"{\"seq\":truex}", b"{\"seq\":False}",
            b"{\"seq\":\"\\u0041\"}", b"{\"seq\\n\":1}", b"{\"seq\":1,\"seq\":2}", b"{\"seq\":\"\x01\"}", b"[1]", b"{\"seq\":[1]}",
            b"{\"seq\":1}{\"tag\":2}", b"{\"seq\":\"x}", b"{\"extra\":1}", b"{\"Seq\":1}"];
        for l in refused {
            assert!(parse(l).is_none(), "{}", String::from_utf8_lossy(l));
        }
        assert!(matches!(parse(b"{\"seq\":-9223372036854775808}").unwrap().get(SEQ), Val::Int(i64::MIN)));
    }
}
