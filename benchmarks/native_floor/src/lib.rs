//! A measurement crate (docs/native-core-floor.md): how fast can a native rules core be behind
//! `apply(state, event) -> (state, outputs, verdict)` with msgspec events in and msgspec outputs
//! out? Not part of the project's build.
//!
//! Tier 1, the floor (`Floor`, `floor_apply`): per event only the boundary work a native core
//! cannot avoid (type check, the fields the Python core reads, the wagers kept in a native map)
//! and, from a plan made in Python from the Python core's outputs, the construction of the same
//! output Structs. No rules.
//!
//! Tier 2, a mini-core (`apply`, `run_core`): the rules of the benchmark's play (Fire Bet, All
//! Small / All Tall / All Or Nothing, their markers and alerts, shooter changes) in Rust, in-order
//! events and no rejections: anything else raises NotImplementedError.
//!
//! Python objects are handled through raw `pyo3::ffi` (every function runs with the GIL held).
#![allow(clippy::missing_safety_doc, static_mut_refs)]

use pyo3::exceptions::{PyNotImplementedError, PyTypeError};
use pyo3::ffi::{self, PyObject, Py_ssize_t};
use pyo3::prelude::*;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::ptr;

type Obj = *mut PyObject;

// ---------------------------------------------------------------- owned references

/// An owned (strong) reference.
struct O(Obj);

impl O {
    unsafe fn new_ref(p: Obj) -> O {
        ffi::Py_INCREF(p);
        O(p)
    }
    #[inline(always)]
    fn p(&self) -> Obj {
        self.0
    }
}

impl Clone for O {
    fn clone(&self) -> O {
        unsafe { O::new_ref(self.0) }
    }
}

impl Drop for O {
    fn drop(&mut self) {
        unsafe { ffi::Py_DECREF(self.0) }
    }
}

// ---------------------------------------------------------------- a map keyed by Python str

/// A str key: its Python hash (cached in the str object) and the object, compared by value.
struct Key {
    h: isize,
    s: O,
}

impl Key {
    unsafe fn of(s: Obj) -> PyResult<Key> {
        if ffi::PyUnicode_CheckExact(s) == 0 {
            return Err(PyTypeError::new_err("wager_id is not a str"));
        }
        let h = ffi::PyObject_Hash(s);
        Ok(Key { h, s: O::new_ref(s) })
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.h == other.h
            && (self.s.0 == other.s.0 || unsafe { ffi::PyUnicode_Compare(self.s.0, other.s.0) } == 0)
    }
}
impl Eq for Key {}
impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_isize(self.h)
    }
}

#[derive(Default)]
struct IdHasher(u64);
impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!()
    }
    fn write_isize(&mut self, i: isize) {
        // Python's str hash is already well mixed (SipHash).
        self.0 = i as u64
    }
}
type StrMap<V> = HashMap<Key, V, BuildHasherDefault<IdHasher>>;

// ---------------------------------------------------------------- the context (classes, offsets, constants)

/// Field offsets of one input class (msgspec stores each field in a slot, like __slots__).
#[derive(Default, Clone, Copy)]
struct Off {
    table_id: usize,
    seq: usize,
    ts: usize,
    a: usize, // WagerPlaced.wager_id, DiceThrown.die1, ShooterChanged.shooter_id, TableOpened.table_kind
    b: usize, // position, die2, position, rules
    c: usize, // wager, valid, reason
    d: usize, // amount_cents
}

struct Ctx {
    t_opened: Obj,
    t_shooter: Obj,
    t_dice: Obj,
    t_wager: Obj,
    t_closed: Obj,
    c_settled: Obj,
    c_placed: Obj,
    c_cleared: Obj,
    c_alert: Obj,
    o_opened: Off,
    o_shooter: Off,
    o_dice: Off,
    o_wager: Off,
    o_closed: Off,
    by_attr: bool,
    // attribute names, for the by-attribute variant
    n_table_id: Obj,
    n_seq: Obj,
    n_ts: Obj,
    n_wager_id: Obj,
    n_position: Obj,
    n_wager: Obj,
    n_amount: Obj,
    n_die1: Obj,
    n_die2: Obj,
    n_valid: Obj,
    n_shooter_id: Obj,
    n_reason: Obj,
    n_table_kind: Obj,
    n_rules: Obj,
    // constants
    applied: Obj,
    kinds: [Obj; 4], // fire, all_small, all_tall, all_or_nothing
    complete: [Obj; 4], // "<kind> complete"
    win: Obj,
    lose: Obj,
    push: Obj,
    l_fire: Obj,
    l_bonus: Obj,
    r_seven: Obj,
    r_seven_out: Obj,
    r_settled: Obj,
    r_table_closed: Obj,
    table_closed_detail: Obj,
    sc_table_open: Obj,
    sc_seven_out: Obj,
    a_four: Obj,
    a_large: Obj,
    total_marker: Vec<Obj>, // "total-N"
    point_marker: Vec<Obj>, // "point-N"
    points_detail: Vec<Obj>, // "points=N"
}

static mut CTX: *const Ctx = ptr::null();

#[inline(always)]
unsafe fn ctx() -> &'static Ctx {
    &*CTX
}

unsafe fn interned(text: &str) -> Obj {
    let mut p = ffi::PyUnicode_FromStringAndSize(text.as_ptr() as *const _, text.len() as Py_ssize_t);
    ffi::PyUnicode_InternInPlace(&mut p);
    p
}

/// The offset of a msgspec Struct field: its member descriptor's.
fn offset_of(cls: &Bound<PyAny>, name: &str) -> PyResult<usize> {
    let d = cls.getattr("__dict__")?.get_item(name)?;
    let py = cls.py();
    let member_type = py.import("types")?.getattr("MemberDescriptorType")?;
    if !d.is_instance(&member_type)? {
        return Err(PyTypeError::new_err(format!("{name} is not a slot")));
    }
    unsafe {
        let m = d.as_ptr() as *mut ffi::PyMemberDescrObject;
        let def = (*m).d_member as *mut ffi::PyMemberDef;
        Ok((*def).offset as usize)
    }
}

fn offsets(cls: &Bound<PyAny>, names: &[&str]) -> PyResult<Off> {
    let mut v = [0usize; 7];
    for (i, n) in names.iter().enumerate() {
        v[i] = offset_of(cls, n)?;
    }
    Ok(Off { table_id: v[0], seq: v[1], ts: v[2], a: v[3], b: v[4], c: v[5], d: v[6] })
}

/// Set up the classes and constants: `init(streams.rules.events, by_attr)`. by_attr=True reads
/// event fields with PyObject_GetAttr (a generic native reader) instead of at the slot offset.
#[pyfunction]
fn init(events: &Bound<PyAny>, by_attr: bool) -> PyResult<()> {
    let g = |n: &str| -> PyResult<Bound<PyAny>> { events.getattr(n) };
    let (to, sc, dt, wp, tc) = (g("TableOpened")?, g("ShooterChanged")?, g("DiceThrown")?, g("WagerPlaced")?, g("TableClosed")?);
    let keep = |b: &Bound<PyAny>| -> Obj { b.clone().into_ptr() };
    unsafe {
        let kinds_txt = ["fire", "all_small", "all_tall", "all_or_nothing"];
        let c = Ctx {
            o_opened: offsets(&to, &["table_id", "seq", "ts", "table_kind", "rules"])?,
            o_shooter: offsets(&sc, &["table_id", "seq", "ts", "shooter_id", "position", "reason"])?,
            o_dice: offsets(&dt, &["table_id", "seq", "ts", "die1", "die2", "valid"])?,
            o_wager: offsets(&wp, &["table_id", "seq", "ts", "wager_id", "position", "wager", "amount_cents"])?,
            o_closed: offsets(&tc, &["table_id", "seq", "ts"])?,
            t_opened: keep(&to),
            t_shooter: keep(&sc),
            t_dice: keep(&dt),
            t_wager: keep(&wp),
            t_closed: keep(&tc),
            c_settled: keep(&g("WagerSettled")?),
            c_placed: keep(&g("MarkerPlaced")?),
            c_cleared: keep(&g("MarkerCleared")?),
            c_alert: keep(&g("SurveillanceAlerted")?),
            by_attr,
            n_table_id: interned("table_id"),
            n_seq: interned("seq"),
            n_ts: interned("ts"),
            n_wager_id: interned("wager_id"),
            n_position: interned("position"),
            n_wager: interned("wager"),
            n_amount: interned("amount_cents"),
            n_die1: interned("die1"),
            n_die2: interned("die2"),
            n_valid: interned("valid"),
            n_shooter_id: interned("shooter_id"),
            n_reason: interned("reason"),
            n_table_kind: interned("table_kind"),
            n_rules: interned("rules"),
            applied: interned("applied"),
            kinds: kinds_txt.map(|k| interned(k)),
            complete: kinds_txt.map(|k| interned(&format!("{k} complete"))),
            win: interned("win"),
            lose: interned("lose"),
            push: interned("push"),
            l_fire: interned("fire"),
            l_bonus: interned("bonus_craps"),
            r_seven: interned("seven"),
            r_seven_out: interned("seven_out"),
            r_settled: interned("settled"),
            r_table_closed: interned("table_closed"),
            table_closed_detail: interned("table closed"),
            sc_table_open: interned("table_open"),
            sc_seven_out: interned("seven_out"),
            a_four: interned("fire_bet_four_points"),
            a_large: interned("large_win"),
            total_marker: (0..13).map(|t| interned(&format!("total-{t}"))).collect(),
            point_marker: (0..13).map(|t| interned(&format!("point-{t}"))).collect(),
            points_detail: (0..7).map(|t| interned(&format!("points={t}"))).collect(),
        };
        CTX = Box::into_raw(Box::new(c));
    }
    Ok(())
}

// ---------------------------------------------------------------- reading events

/// A field of an event, borrowed (the event holds it).
#[inline(always)]
unsafe fn field(e: Obj, off: usize, name: Obj) -> PyResult<Obj> {
    if ctx().by_attr {
        let v = ffi::PyObject_GetAttr(e, name);
        if v.is_null() {
            return Err(PyErr::fetch(Python::assume_gil_acquired()));
        }
        ffi::Py_DECREF(v); // the event keeps it alive
        Ok(v)
    } else {
        Ok(*((e as *mut u8).add(off) as *mut Obj))
    }
}

#[inline(always)]
unsafe fn int(o: Obj) -> PyResult<i64> {
    if ffi::PyLong_CheckExact(o) == 0 {
        return Err(PyTypeError::new_err("not an int"));
    }
    let v = ffi::PyLong_AsLongLong(o);
    if v == -1 && !ffi::PyErr_Occurred().is_null() {
        return Err(PyErr::fetch(Python::assume_gil_acquired()));
    }
    Ok(v)
}

/// Which of the four wager kinds a str is (by identity, else by value), or None.
#[inline(always)]
unsafe fn kind_of(o: Obj) -> Option<usize> {
    let k = &ctx().kinds;
    for (i, &p) in k.iter().enumerate() {
        if p == o {
            return Some(i);
        }
    }
    if ffi::PyUnicode_Check(o) == 0 {
        return None;
    }
    k.iter().position(|&p| ffi::PyUnicode_Compare(p, o) == 0)
}

#[inline(always)]
unsafe fn same_str(a: Obj, b: Obj) -> bool {
    a == b || (ffi::PyUnicode_Check(b) != 0 && ffi::PyUnicode_Compare(a, b) == 0)
}

// ---------------------------------------------------------------- building strings

/// The bytes of an ASCII str (compact: its data follows the header), or an error.
#[inline(always)]
unsafe fn ascii<'a>(o: Obj) -> PyResult<&'a [u8]> {
    if ffi::PyUnicode_CheckExact(o) == 0 || ffi::PyUnicode_IS_ASCII(o) == 0 {
        return Err(PyNotImplementedError::new_err("ids must be ASCII str here"));
    }
    let n = ffi::PyUnicode_GET_LENGTH(o) as usize;
    Ok(std::slice::from_raw_parts(ffi::PyUnicode_DATA(o) as *const u8, n))
}

/// A new ASCII str of the concatenated parts.
#[inline(always)]
unsafe fn ascii_str(a: &[u8], b: &[u8]) -> Obj {
    let n = a.len() + b.len();
    let o = ffi::PyUnicode_New(n as Py_ssize_t, 127);
    let d = ffi::PyUnicode_DATA(o) as *mut u8;
    ptr::copy_nonoverlapping(a.as_ptr(), d, a.len());
    ptr::copy_nonoverlapping(b.as_ptr(), d.add(a.len()), b.len());
    o
}

unsafe fn utf8_str(t: &str) -> Obj {
    ffi::PyUnicode_FromStringAndSize(t.as_ptr() as *const _, t.len() as Py_ssize_t)
}

unsafe fn text(o: Obj) -> String {
    let mut n: Py_ssize_t = 0;
    let p = ffi::PyUnicode_AsUTF8AndSize(o, &mut n);
    String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, n as usize)).into_owned()
}

fn push_int(buf: &mut Vec<u8>, mut v: i64) {
    if v < 0 {
        buf.push(b'-');
        v = -v;
    }
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.extend_from_slice(&tmp[i..]);
}

/// Per event: "T/seq/" (output ids: + position in the list) and "T/seq/settle/" (settlement ids).
struct Prefixes {
    out: Vec<u8>,
    settle: Vec<u8>,
    digits: Vec<u8>,
}

impl Prefixes {
    fn new() -> Prefixes {
        Prefixes { out: Vec::with_capacity(64), settle: Vec::with_capacity(64), digits: Vec::with_capacity(24) }
    }
    unsafe fn set(&mut self, table_id: Obj, seq: i64) -> PyResult<()> {
        self.out.clear();
        self.out.extend_from_slice(ascii(table_id)?);
        self.out.push(b'/');
        push_int(&mut self.out, seq);
        self.out.push(b'/');
        self.settle.clear();
        self.settle.extend_from_slice(&self.out);
        self.settle.extend_from_slice(b"settle/");
        Ok(())
    }
    unsafe fn output_id(&mut self, n: usize) -> Obj {
        self.digits.clear();
        push_int(&mut self.digits, n as i64);
        ascii_str(&self.out, &self.digits)
    }
    unsafe fn settlement_id(&self, wager_id: Obj) -> PyResult<Obj> {
        Ok(ascii_str(&self.settle, ascii(wager_id)?))
    }
}

// ---------------------------------------------------------------- building outputs

#[inline(always)]
unsafe fn call(cls: Obj, args: &[Obj]) -> PyResult<Obj> {
    let r = ffi::PyObject_Vectorcall(cls, args.as_ptr(), args.len(), ptr::null_mut());
    if r.is_null() {
        return Err(PyErr::fetch(Python::assume_gil_acquired()));
    }
    Ok(r)
}

/// A wager in action: its fields as the event gave them (the Python core's tuple).
struct Wager {
    id: O,
    position: O,
    kind: usize,
    amount: O,
    amount_i: i64,
    placed_seq: O,
}

/// The event's common fields, borrowed.
#[derive(Clone, Copy)]
struct Ev {
    table_id: Obj,
    seq: Obj,
    ts: Obj,
}

#[allow(clippy::too_many_arguments)]
unsafe fn new_settled(w: &Wager, ev: Ev, pre: &Prefixes, outcome: Obj, won: i64, paytable: Obj, detail: Obj) -> PyResult<Obj> {
    let c = ctx();
    let id = pre.settlement_id(w.id.p())?;
    let won_o = ffi::PyLong_FromLongLong(won);
    let args = [
        w.id.p(), ev.table_id, w.position.p(), c.kinds[w.kind], outcome, w.amount.p(), won_o, paytable, detail,
        ev.seq, ev.ts, w.placed_seq.p(), id,
    ];
    let r = call(c.c_settled, &args);
    ffi::Py_DECREF(won_o);
    ffi::Py_DECREF(id);
    r
}

unsafe fn new_placed(ev: Ev, pre: &mut Prefixes, n: usize, layout: Obj, cohort: Obj, marker: Obj, count: i64) -> PyResult<Obj> {
    let id = pre.output_id(n);
    let count_o = ffi::PyLong_FromLongLong(count);
    let r = call(ctx().c_placed, &[id, ev.table_id, ev.seq, ev.ts, layout, cohort, marker, count_o]);
    ffi::Py_DECREF(count_o);
    ffi::Py_DECREF(id);
    r
}

unsafe fn new_cleared(ev: Ev, pre: &mut Prefixes, n: usize, layout: Obj, cohort: Obj, reason: Obj) -> PyResult<Obj> {
    let id = pre.output_id(n);
    let r = call(ctx().c_cleared, &[id, ev.table_id, ev.seq, ev.ts, layout, cohort, reason]);
    ffi::Py_DECREF(id);
    r
}

#[allow(clippy::too_many_arguments)]
unsafe fn new_alert(ev: Ev, pre: &mut Prefixes, n: usize, alert: Obj, shooter: Obj, message: Obj, ids: Obj) -> PyResult<Obj> {
    let id = pre.output_id(n);
    let r = call(ctx().c_alert, &[id, ev.table_id, ev.seq, ev.ts, alert, shooter, message, ids]);
    ffi::Py_DECREF(id);
    r
}

/// The outputs of one event, owned until handed to a list.
struct Out(Vec<Obj>);

impl Out {
    #[inline(always)]
    fn push(&mut self, o: Obj) {
        self.0.push(o)
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    /// A new list of the outputs (the references moved into it).
    unsafe fn take_list(&mut self) -> Obj {
        let l = ffi::PyList_New(self.0.len() as Py_ssize_t);
        for (i, &o) in self.0.iter().enumerate() {
            ffi::PyList_SET_ITEM(l, i as Py_ssize_t, o);
        }
        self.0.clear();
        l
    }
    unsafe fn clear(&mut self) {
        for &o in &self.0 {
            ffi::Py_DECREF(o);
        }
        self.0.clear();
    }
}

unsafe fn list_of(v: Vec<Obj>) -> Obj {
    let mut o = Out(v);
    o.take_list()
}

unsafe fn result_tuple(state: Obj, list: Obj) -> Obj {
    let t = ffi::PyTuple_New(3);
    ffi::Py_INCREF(state);
    ffi::PyTuple_SET_ITEM(t, 0, state);
    ffi::PyTuple_SET_ITEM(t, 1, list);
    ffi::Py_INCREF(ctx().applied);
    ffi::PyTuple_SET_ITEM(t, 2, ctx().applied);
    t
}

// ================================================================ tier 1: the floor

/// One output of the plan (made in Python from the Python core's outputs).
enum Op {
    Settle { wager: u32, outcome: O, odds: i64, paytable: O, detail: O },
    Placed { layout: O, cohort: O, marker: O, count: i64 },
    Cleared { layout: O, cohort: O, reason: O },
    Alert { alert: O, shooter: O, message: O, ids: O },
}

/// The floor's table: the wagers in a native map, the cursor in the plan.
#[pyclass(unsendable)]
struct FloorTable {
    pending: StrMap<u32>,
    wagers: Vec<Option<Wager>>,
    received_seq: i64,
    cursor: usize,
    plan: *const Vec<Vec<Op>>,
    pre: Prefixes,
    out: Out,
}

impl FloorTable {
    fn new(plan: *const Vec<Vec<Op>>) -> FloorTable {
        FloorTable {
            pending: StrMap::default(),
            wagers: Vec::new(),
            received_seq: 0,
            cursor: 0,
            plan,
            pre: Prefixes::new(),
            out: Out(Vec::with_capacity(64)),
        }
    }

    /// The reads of `step` alone: no map, no plan (what reading the fields costs by itself).
    #[inline(always)]
    unsafe fn step_reads(&mut self, e: Obj) -> PyResult<()> {
        let c = ctx();
        let t = ffi::Py_TYPE(e) as Obj;
        let o = if t == c.t_wager {
            &c.o_wager
        } else if t == c.t_dice {
            &c.o_dice
        } else if t == c.t_shooter {
            &c.o_shooter
        } else if t == c.t_opened {
            &c.o_opened
        } else if t == c.t_closed {
            &c.o_closed
        } else {
            return Err(PyNotImplementedError::new_err("event type"));
        };
        let mut acc = int(field(e, o.seq, c.n_seq)?)? ^ (field(e, o.table_id, c.n_table_id)? as i64);
        if t == c.t_wager {
            acc ^= field(e, o.a, c.n_wager_id)? as i64;
            acc ^= int(field(e, o.b, c.n_position)?)?;
            acc ^= kind_of(field(e, o.c, c.n_wager)?).unwrap_or(9) as i64;
            acc ^= int(field(e, o.d, c.n_amount)?)?;
        } else if t == c.t_dice {
            acc ^= int(field(e, o.a, c.n_die1)?)? + int(field(e, o.b, c.n_die2)?)?;
            acc ^= (field(e, o.c, c.n_valid)? == ffi::Py_True()) as i64 ^ field(e, o.ts, c.n_ts)? as i64;
        } else if t == c.t_shooter {
            acc ^= field(e, o.a, c.n_shooter_id)? as i64 ^ int(field(e, o.b, c.n_position)?)?;
            acc ^= same_str(c.sc_seven_out, field(e, o.c, c.n_reason)?) as i64;
        }
        self.received_seq ^= acc;
        Ok(())
    }

    /// Reads what the Python core reads of the event; builds its planned outputs into self.out.
    /// `build`: false leaves the outputs out (the reading part alone).
    #[inline(always)]
    unsafe fn step(&mut self, e: Obj, build: bool) -> PyResult<()> {
        let c = ctx();
        let t = ffi::Py_TYPE(e) as Obj;
        let o = if t == c.t_wager {
            &c.o_wager
        } else if t == c.t_dice {
            &c.o_dice
        } else if t == c.t_shooter {
            &c.o_shooter
        } else if t == c.t_opened {
            &c.o_opened
        } else if t == c.t_closed {
            &c.o_closed
        } else {
            return Err(PyNotImplementedError::new_err("event type"));
        };
        let table_id = field(e, o.table_id, c.n_table_id)?; // the loop's `e.table_id`
        let seq_o = field(e, o.seq, c.n_seq)?;
        let seq = int(seq_o)?;
        if seq != self.received_seq + 1 && self.received_seq != 0 {
            return Err(PyNotImplementedError::new_err("out of order"));
        }
        self.received_seq = seq;
        let mut ts = ptr::null_mut();
        if t == c.t_wager {
            let wager_id = field(e, o.a, c.n_wager_id)?;
            let position = field(e, o.b, c.n_position)?;
            let kind_o = field(e, o.c, c.n_wager)?;
            let amount = field(e, o.d, c.n_amount)?;
            let p = int(position)?;
            let a = int(amount)?;
            let kind = kind_of(kind_o).ok_or_else(|| PyNotImplementedError::new_err("kind"))?;
            if !(1..=16).contains(&p) || a <= 0 {
                return Err(PyNotImplementedError::new_err("rejection"));
            }
            let key = Key::of(wager_id)?;
            let n = self.wagers.len() as u32;
            if self.pending.insert(key, n).is_some() {
                return Err(PyNotImplementedError::new_err("duplicate wager"));
            }
            self.wagers.push(Some(Wager {
                id: O::new_ref(wager_id),
                position: O::new_ref(position),
                kind,
                amount: O::new_ref(amount),
                amount_i: a,
                placed_seq: O::new_ref(seq_o),
            }));
        } else if t == c.t_dice {
            let d1 = int(field(e, o.a, c.n_die1)?)?;
            let d2 = int(field(e, o.b, c.n_die2)?)?;
            let valid = field(e, o.c, c.n_valid)?;
            ts = field(e, o.ts, c.n_ts)?;
            if !(1..=6).contains(&d1) || !(1..=6).contains(&d2) || valid != ffi::Py_True() {
                return Err(PyNotImplementedError::new_err("dice"));
            }
        } else if t == c.t_shooter {
            let _shooter = field(e, o.a, c.n_shooter_id)?;
            let p = int(field(e, o.b, c.n_position)?)?;
            let reason = field(e, o.c, c.n_reason)?;
            if !(1..=16).contains(&p) || !(same_str(c.sc_table_open, reason) || same_str(c.sc_seven_out, reason)) {
                return Err(PyNotImplementedError::new_err("shooter change"));
            }
        } else if t == c.t_opened {
            let _kind = field(e, o.a, c.n_table_kind)?;
            let _rules = field(e, o.b, c.n_rules)?;
        }
        let plan = &*self.plan;
        let ops = &plan[self.cursor];
        self.cursor += 1;
        if ops.is_empty() {
            return Ok(());
        }
        if !build {
            // The settled wagers leave the map all the same (the reads' part keeps the map as
            // small as the building run does); nothing is built.
            for op in ops {
                if let Op::Settle { wager, .. } = op {
                    let w = self.wagers[*wager as usize].take().ok_or_else(|| PyTypeError::new_err("settled twice"))?;
                    let k = Key { h: ffi::PyObject_Hash(w.id.p()), s: w.id.clone() };
                    self.pending.remove(&k);
                }
            }
            return Ok(());
        }
        if ts.is_null() {
            ts = field(e, o.ts, c.n_ts)?;
        }
        let ev = Ev { table_id, seq: seq_o, ts };
        self.pre.set(table_id, seq)?;
        for op in ops {
            let r = match op {
                Op::Settle { wager, outcome, odds, paytable, detail } => {
                    let w = self.wagers[*wager as usize].take().ok_or_else(|| PyTypeError::new_err("settled twice"))?;
                    let k = Key { h: ffi::PyObject_Hash(w.id.p()), s: w.id.clone() };
                    self.pending.remove(&k);
                    new_settled(&w, ev, &self.pre, outcome.p(), odds * w.amount_i, paytable.p(), detail.p())?
                }
                Op::Placed { layout, cohort, marker, count } => {
                    new_placed(ev, &mut self.pre, self.out.len(), layout.p(), cohort.p(), marker.p(), *count)?
                }
                Op::Cleared { layout, cohort, reason } => {
                    new_cleared(ev, &mut self.pre, self.out.len(), layout.p(), cohort.p(), reason.p())?
                }
                Op::Alert { alert, shooter, message, ids } => {
                    new_alert(ev, &mut self.pre, self.out.len(), alert.p(), shooter.p(), message.p(), ids.p())?
                }
            };
            self.out.push(r);
        }
        Ok(())
    }
}

/// The plan: per event, a list of ops as tuples (see `Op`); wager indices in placement order.
#[pyclass(unsendable)]
struct Floor {
    plan: Box<Vec<Vec<Op>>>,
}

unsafe fn owned(o: &Bound<PyAny>) -> O {
    O::new_ref(o.as_ptr())
}

static mut CURRENT_PLAN: *const Vec<Vec<Op>> = ptr::null();

#[pymethods]
impl Floor {
    #[new]
    fn new(plan: &Bound<PyAny>) -> PyResult<Floor> {
        let mut v = Vec::new();
        for ev_ops in plan.try_iter()? {
            let mut ops = Vec::new();
            for op in ev_ops?.try_iter()? {
                let op = op?;
                let tag: String = op.get_item(0)?.extract()?;
                let g = |i: usize| -> PyResult<O> { Ok(unsafe { owned(&op.get_item(i)?) }) };
                ops.push(match tag.as_str() {
                    "S" => Op::Settle {
                        wager: op.get_item(1)?.extract()?,
                        outcome: g(2)?,
                        odds: op.get_item(3)?.extract()?,
                        paytable: g(4)?,
                        detail: g(5)?,
                    },
                    "P" => Op::Placed { layout: g(1)?, cohort: g(2)?, marker: g(3)?, count: op.get_item(4)?.extract()? },
                    "C" => Op::Cleared { layout: g(1)?, cohort: g(2)?, reason: g(3)? },
                    "A" => Op::Alert { alert: g(1)?, shooter: g(2)?, message: g(3)?, ids: g(4)? },
                    _ => return Err(PyTypeError::new_err("op")),
                });
            }
            v.push(ops);
        }
        Ok(Floor { plan: Box::new(v) })
    }

    /// The loop in native code over the list of events. mode 0: reads only (no outputs built);
    /// 1: the loop's collected outputs (as `core_loop()` returns); 2: per event a
    /// (state, outputs, verdict) tuple, as `apply` returns, taken apart as its caller would and
    /// freed; 3: the bare loop (type check only, nothing read); 4: the fields read, nothing kept.
    fn run(&self, py: Python<'_>, events: &Bound<PyAny>, mode: u32) -> PyResult<Py<PyAny>> {
        unsafe {
            let l = events.as_ptr();
            if ffi::PyList_CheckExact(l) == 0 {
                return Err(PyTypeError::new_err("events: a list"));
            }
            let n = ffi::PyList_GET_SIZE(l);
            let state = Bound::new(py, FloorTable::new(&*self.plan as *const _))?;
            let state_o = state.as_ptr();
            let mut st = state.borrow_mut();
            let mut all: Vec<Obj> = Vec::new();
            let mut types = 0usize;
            for i in 0..n {
                let e = ffi::PyList_GET_ITEM(l, i);
                match mode {
                    0 => st.step(e, false)?,
                    1 => {
                        st.step(e, true)?;
                        all.append(&mut st.out.0);
                    }
                    2 => {
                        // As the caller of `apply` sees it: the tuple made, its outputs taken
                        // (`settled.extend(out)`), the tuple and its list freed.
                        st.step(e, true)?;
                        let list = st.out.take_list();
                        let t = result_tuple(state_o, list);
                        let k = ffi::PyList_GET_SIZE(list);
                        for j in 0..k {
                            let o = ffi::PyList_GET_ITEM(list, j);
                            ffi::Py_INCREF(o);
                            all.push(o);
                        }
                        ffi::Py_DECREF(t);
                    }
                    4 => st.step_reads(e)?,
                    _ => {
                        if ffi::Py_TYPE(e) as Obj == ctx().t_dice {
                            types += 1
                        }
                    }
                }
            }
            std::hint::black_box(types);
            st.out.clear();
            Ok(Py::<PyAny>::from_owned_ptr(py, list_of(all)))
        }
    }

    /// Make this plan the one `floor_apply` follows (a table opened by it starts at event 0).
    fn install(&self) {
        unsafe { CURRENT_PLAN = &*self.plan as *const _ }
    }
}

/// The floor under the exact contract: `floor_apply(state, event) -> (state, outputs, verdict)`,
/// called per event from Python (the plan of the last `Floor.install()`).
#[pyfunction]
fn floor_apply(py: Python<'_>, state: &Bound<PyAny>, event: &Bound<PyAny>) -> PyResult<Py<PyAny>> {
    unsafe {
        let st_b: Bound<FloorTable> = if state.is_none() {
            if ffi::Py_TYPE(event.as_ptr()) as Obj != ctx().t_opened {
                return Err(PyNotImplementedError::new_err("unknown table"));
            }
            Bound::new(py, FloorTable::new(CURRENT_PLAN))?
        } else {
            state.downcast::<FloorTable>()?.clone()
        };
        let mut st = st_b.borrow_mut();
        st.step(event.as_ptr(), true)?;
        let list = st.out.take_list();
        Ok(Py::<PyAny>::from_owned_ptr(py, result_tuple(st_b.as_ptr(), list)))
    }
}

// ================================================================ tier 2: a mini-core

struct FireCohort {
    id: O,
    wagers: Vec<Wager>,
    points: Vec<i64>,
}

struct BonusCohort {
    id: O,
    wagers: Vec<Wager>,
    marks: u32,
}

const NEEDS: [u32; 4] = [
    0,
    (1 << 2) | (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6),
    (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12),
    (1 << 2) | (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12),
];

/// A large-win candidate of this event (alerted after its outputs, in settlement order).
struct Won {
    wager_id: O,
    kind: usize,
    position: i64,
    won: i64,
    detail: O,
}

#[pyclass(unsendable)]
struct Table {
    received_seq: i64,
    closed: bool,
    shooter_id: Option<O>,
    shooter_position: i64,
    shooter_throws: i64,
    hand: i64,
    must_pass: bool,
    point: i64,
    fire_alerted: bool,
    throws: i64,
    last_throw_ts: i64,
    fire_name: O,
    fire_bands: Vec<(i64, i64)>,
    bonus_name: O,
    bonus_odds: [i64; 4],
    large_win: i64,
    open_fire: Option<FireCohort>,
    open_bonus: Option<BonusCohort>,
    fire: Vec<FireCohort>,
    bonus: Vec<BonusCohort>,
    pending: StrMap<()>,
    seven_detail: HashMap<u32, O>,
    pre: Prefixes,
    out: Out,
    won: Vec<Won>,
}

unsafe fn attr(o: Obj, name: &str) -> PyResult<Bound<'static, PyAny>> {
    let py = Python::assume_gil_acquired();
    Bound::from_borrowed_ptr(py, o).getattr(name).map(|b| b.into_any())
}

impl Table {
    unsafe fn open(e: Obj) -> PyResult<Table> {
        let c = ctx();
        let o = &c.o_opened;
        let seq = int(field(e, o.seq, c.n_seq)?)?;
        let rules = field(e, o.b, c.n_rules)?;
        let _kind = field(e, o.a, c.n_table_kind)?;
        let r = attr(rules, "fire")?;
        let fire_name = owned(&r.getattr("name")?);
        let fire_bands: Vec<(i64, i64)> = r.getattr("bands")?.extract()?;
        let b = attr(rules, "bonus")?;
        let bonus_name = owned(&b.getattr("name")?);
        let bonus_odds = [
            0,
            b.getattr("all_small")?.extract()?,
            b.getattr("all_tall")?.extract()?,
            b.getattr("all_or_nothing")?.extract()?,
        ];
        let rb = Bound::from_borrowed_ptr(Python::assume_gil_acquired(), rules);
        if rb.getattr("limits")?.len()? != 0 {
            return Err(PyNotImplementedError::new_err("table limits"));
        }
        let large_win: i64 = rb.getattr("large_win_alert_cents")?.extract()?;
        Ok(Table {
            received_seq: seq,
            closed: false,
            shooter_id: None,
            shooter_position: 0,
            shooter_throws: 0,
            hand: 0,
            must_pass: false,
            point: 0,
            fire_alerted: false,
            throws: 0,
            last_throw_ts: 0,
            fire_name,
            fire_bands,
            bonus_name,
            bonus_odds,
            large_win,
            open_fire: None,
            open_bonus: None,
            fire: Vec::new(),
            bonus: Vec::new(),
            pending: StrMap::default(),
            seven_detail: HashMap::new(),
            pre: Prefixes::new(),
            out: Out(Vec::with_capacity(64)),
            won: Vec::new(),
        })
    }

    fn fire_odds(&self, count: i64) -> Option<i64> {
        let mut r = None;
        for &(lowest, odds) in &self.fire_bands {
            if count >= lowest {
                r = Some(odds)
            } else {
                break;
            }
        }
        r
    }

    unsafe fn seven_detail(&mut self, marks: u32) -> Obj {
        if let Some(d) = self.seven_detail.get(&marks) {
            return d.p();
        }
        let marked: Vec<String> = (2..13).filter(|t| marks >> t & 1 == 1).map(|t| t.to_string()).collect();
        let m = if marked.is_empty() { "nothing".to_string() } else { marked.join(",") };
        let d = O(utf8_str(&format!("seven with {m} marked")));
        let p = d.p();
        self.seven_detail.insert(marks, d);
        p
    }

    /// A settlement into self.out: the wager forgotten, a large win noted.
    #[inline(always)]
    unsafe fn settle(&mut self, w: &Wager, ev: Ev, outcome: Obj, won: i64, paytable: Obj, detail: Obj, forget: bool) -> PyResult<()> {
        let r = new_settled(w, ev, &self.pre, outcome, won, paytable, detail)?;
        self.out.push(r);
        if forget {
            let k = Key { h: ffi::PyObject_Hash(w.id.p()), s: w.id.clone() };
            self.pending.remove(&k);
        }
        if self.large_win != 0 && won >= self.large_win {
            self.won.push(Won { wager_id: w.id.clone(), kind: w.kind, position: int(w.position.p())?, won, detail: O::new_ref(detail) });
        }
        Ok(())
    }

    unsafe fn large_wins(&mut self, ev: Ev) -> PyResult<()> {
        let c = ctx();
        let won = std::mem::take(&mut self.won);
        for w in won {
            let msg = format!(
                "{} {} at position {} won {} cents ({})",
                text(c.kinds[w.kind]), text(w.wager_id.p()), w.position, w.won, text(w.detail.p())
            );
            let msg = O(utf8_str(&msg));
            let ids = O(ffi::PyTuple_New(1));
            ffi::Py_INCREF(w.wager_id.p());
            ffi::PyTuple_SET_ITEM(ids.p(), 0, w.wager_id.p());
            let shooter = self.shooter_id.as_ref().map(|s| s.p()).unwrap();
            let r = new_alert(ev, &mut self.pre, self.out.len(), c.a_large, shooter, msg.p(), ids.p())?;
            self.out.push(r);
        }
        Ok(())
    }

    unsafe fn step(&mut self, e: Obj) -> PyResult<()> {
        let c = ctx();
        let t = ffi::Py_TYPE(e) as Obj;
        let o = if t == c.t_wager {
            &c.o_wager
        } else if t == c.t_dice {
            &c.o_dice
        } else if t == c.t_shooter {
            &c.o_shooter
        } else if t == c.t_closed {
            &c.o_closed
        } else {
            return Err(PyNotImplementedError::new_err("event type (a reopening)"));
        };
        let seq_o = field(e, o.seq, c.n_seq)?;
        let seq = int(seq_o)?;
        if seq != self.received_seq + 1 {
            return Err(PyNotImplementedError::new_err("out of order or duplicate"));
        }
        if self.closed {
            return Err(PyNotImplementedError::new_err("table closed"));
        }
        if t == c.t_wager {
            self.wager_placed(e, o, seq_o, seq)?;
        } else if t == c.t_dice {
            self.dice_thrown(e, o, seq_o, seq)?;
        } else if t == c.t_shooter {
            self.shooter_changed(e, o)?;
        } else {
            self.table_closed(e, o, seq_o, seq)?;
        }
        self.received_seq = seq;
        Ok(())
    }

    #[inline(always)]
    unsafe fn wager_placed(&mut self, e: Obj, o: &Off, seq_o: Obj, seq: i64) -> PyResult<()> {
        let c = ctx();
        let kind_o = field(e, o.c, c.n_wager)?;
        let kind = kind_of(kind_o).ok_or_else(|| PyNotImplementedError::new_err("wager kind"))?;
        let wager_id = field(e, o.a, c.n_wager_id)?;
        let amount = field(e, o.d, c.n_amount)?;
        let position = field(e, o.b, c.n_position)?;
        let p = int(position)?;
        let a = int(amount)?;
        let key = Key::of(wager_id)?;
        let stake_ok = if kind == 0 { (100..=500).contains(&a) && a % 100 == 0 } else { a > 0 };
        if !((1..=16).contains(&p) && stake_ok && (self.must_pass || self.shooter_throws == 0))
            || self.pending.contains_key(&key)
        {
            return Err(PyNotImplementedError::new_err("a rejection"));
        }
        self.pending.insert(key, ());
        let w = Wager { id: O::new_ref(wager_id), position: O::new_ref(position), kind, amount: O::new_ref(amount), amount_i: a, placed_seq: O::new_ref(seq_o) };
        if kind == 0 {
            let cohort = self.open_fire.get_or_insert_with(|| {
                let mut id = b"fire-".to_vec();
                push_int(&mut id, seq);
                FireCohort { id: O(ascii_str(&id, b"")), wagers: Vec::with_capacity(16), points: Vec::new() }
            });
            cohort.wagers.push(w);
        } else {
            let cohort = self.open_bonus.get_or_insert_with(|| {
                let mut id = b"bonus_craps-".to_vec();
                push_int(&mut id, seq);
                BonusCohort { id: O(ascii_str(&id, b"")), wagers: Vec::with_capacity(48), marks: 0 }
            });
            cohort.wagers.push(w);
        }
        Ok(())
    }

    unsafe fn shooter_changed(&mut self, e: Obj, o: &Off) -> PyResult<()> {
        let c = ctx();
        let p = int(field(e, o.b, c.n_position)?)?;
        let reason = field(e, o.c, c.n_reason)?;
        let ok = if same_str(c.sc_table_open, reason) {
            self.shooter_id.is_none()
        } else if same_str(c.sc_seven_out, reason) {
            self.must_pass
        } else {
            return Err(PyNotImplementedError::new_err("a voluntary or compulsory change"));
        };
        if !ok || !(1..=16).contains(&p) {
            return Err(PyNotImplementedError::new_err("a rejection"));
        }
        self.shooter_id = Some(O::new_ref(field(e, o.a, c.n_shooter_id)?));
        self.shooter_position = p;
        self.shooter_throws = 0;
        self.hand += 1;
        self.must_pass = false;
        self.fire_alerted = false;
        Ok(())
    }

    unsafe fn dice_thrown(&mut self, e: Obj, o: &Off, seq_o: Obj, seq: i64) -> PyResult<()> {
        let c = ctx();
        let d1 = int(field(e, o.a, c.n_die1)?)?;
        let d2 = int(field(e, o.b, c.n_die2)?)?;
        if !((1..=6).contains(&d1) && (1..=6).contains(&d2)) || self.shooter_id.is_none() || self.must_pass {
            return Err(PyNotImplementedError::new_err("a rejection"));
        }
        let valid = field(e, o.c, c.n_valid)?;
        if valid != ffi::Py_True() {
            return Ok(());
        }
        let ts_o = field(e, o.ts, c.n_ts)?;
        self.throws += 1;
        self.last_throw_ts = int(ts_o)?;
        let ev = Ev { table_id: field(e, o.table_id, c.n_table_id)?, seq: seq_o, ts: ts_o };
        if let Some(f) = self.open_fire.take() {
            self.fire.push(f);
        }
        if let Some(b) = self.open_bonus.take() {
            self.bonus.push(b);
        }
        self.shooter_throws += 1;
        let total = d1 + d2;
        let point = self.point;
        let pre_set = !self.fire.is_empty() || !self.bonus.is_empty();
        if pre_set {
            self.pre.set(ev.table_id, seq)?;
        }
        if total == 7 {
            let bonus = std::mem::take(&mut self.bonus);
            for cohort in &bonus {
                let detail = self.seven_detail(cohort.marks);
                let name = self.bonus_name.p();
                for w in &cohort.wagers {
                    self.settle(w, ev, c.lose, 0, name, detail, point == 0)?;
                }
                let r = new_cleared(ev, &mut self.pre, self.out.len(), c.l_bonus, cohort.id.p(), c.r_seven)?;
                self.out.push(r);
            }
            drop(bonus);
            if point != 0 {
                let fire = std::mem::take(&mut self.fire);
                for cohort in &fire {
                    let count = cohort.points.len() as i64;
                    let (outcome, odds) = match self.fire_odds(count) {
                        None => (c.lose, 0),
                        Some(-1) => (c.push, 0),
                        Some(x) => (c.win, x),
                    };
                    let detail = c.points_detail[count as usize];
                    let name = self.fire_name.p();
                    for w in &cohort.wagers {
                        self.settle(w, ev, outcome, odds * w.amount_i, name, detail, false)?;
                    }
                    let r = new_cleared(ev, &mut self.pre, self.out.len(), c.l_fire, cohort.id.p(), c.r_seven_out)?;
                    self.out.push(r);
                }
                self.point = 0;
                self.must_pass = true;
                self.pending.clear();
            }
        } else {
            if !self.bonus.is_empty() {
                let mut bonus = std::mem::take(&mut self.bonus);
                let bit = 1u32 << total;
                let mut emptied = false;
                for cohort in bonus.iter_mut() {
                    if cohort.marks & bit != 0 {
                        continue;
                    }
                    cohort.marks |= bit;
                    let marks = cohort.marks;
                    let r = new_placed(ev, &mut self.pre, self.out.len(), c.l_bonus, cohort.id.p(),
                                       c.total_marker[total as usize], marks.count_ones() as i64)?;
                    self.out.push(r);
                    // the wagers needing this total, in the order all_small, all_tall, all_or_nothing
                    for kind in 1..4 {
                        let needs = NEEDS[kind];
                        if needs >> total & 1 == 0 || marks & needs != needs {
                            continue;
                        }
                        let odds = self.bonus_odds[kind];
                        let name = self.bonus_name.p();
                        let mut i = 0;
                        while i < cohort.wagers.len() {
                            if cohort.wagers[i].kind == kind {
                                let w = cohort.wagers.remove(i);
                                self.settle(&w, ev, c.win, odds * w.amount_i, name, c.complete[kind], true)?;
                            } else {
                                i += 1;
                            }
                        }
                    }
                    if cohort.wagers.is_empty() {
                        emptied = true;
                    }
                }
                if emptied {
                    for cohort in &bonus {
                        if cohort.wagers.is_empty() {
                            let r = new_cleared(ev, &mut self.pre, self.out.len(), c.l_bonus, cohort.id.p(), c.r_settled)?;
                            self.out.push(r);
                        }
                    }
                    bonus.retain(|b| !b.wagers.is_empty());
                }
                self.bonus = bonus;
            }
            if point == 0 {
                if matches!(total, 4 | 5 | 6 | 8 | 9 | 10) {
                    self.point = total;
                }
            } else if total == point {
                self.point = 0;
                let mut reached_four = false;
                let mut fire = std::mem::take(&mut self.fire);
                for cohort in fire.iter_mut() {
                    if cohort.points.contains(&point) {
                        continue;
                    }
                    cohort.points.push(point);
                    let count = cohort.points.len() as i64;
                    let r = new_placed(ev, &mut self.pre, self.out.len(), c.l_fire, cohort.id.p(),
                                       c.point_marker[point as usize], count)?;
                    self.out.push(r);
                    reached_four |= count == 4;
                }
                self.fire = fire;
                if reached_four && !self.fire_alerted {
                    self.alert_four_points(ev)?;
                }
            }
        }
        if !self.won.is_empty() {
            self.large_wins(ev)?;
        }
        Ok(())
    }

    unsafe fn alert_four_points(&mut self, ev: Ev) -> PyResult<()> {
        let c = ctx();
        self.fire_alerted = true;
        let ids: Vec<Obj> = self.fire.iter().flat_map(|f| f.wagers.iter().map(|w| w.id.p())).collect();
        let counts: Vec<String> = self.fire.iter().map(|f| format!("{}: {} points", text(f.id.p()), f.points.len())).collect();
        let shooter = self.shooter_id.as_ref().unwrap().p();
        let msg = format!(
            "table {}, shooter {} at position {}: four different points made; confirm {} Fire Bets ({})",
            text(ev.table_id), text(shooter), self.shooter_position, ids.len(), counts.join(", ")
        );
        let msg = O(utf8_str(&msg));
        let tuple = O(ffi::PyTuple_New(ids.len() as Py_ssize_t));
        for (i, &id) in ids.iter().enumerate() {
            ffi::Py_INCREF(id);
            ffi::PyTuple_SET_ITEM(tuple.p(), i as Py_ssize_t, id);
        }
        let r = new_alert(ev, &mut self.pre, self.out.len(), c.a_four, shooter, msg.p(), tuple.p())?;
        self.out.push(r);
        Ok(())
    }

    unsafe fn table_closed(&mut self, e: Obj, o: &Off, seq_o: Obj, seq: i64) -> PyResult<()> {
        let c = ctx();
        let ev = Ev { table_id: field(e, o.table_id, c.n_table_id)?, seq: seq_o, ts: field(e, o.ts, c.n_ts)? };
        self.pre.set(ev.table_id, seq)?;
        // streams.rules.table._on_table_closed: every pending wager pushed, group by group
        // (fire, then bonus_craps), the open cohort first, each cohort's markers cleared.
        let fire: Vec<FireCohort> = self.open_fire.take().into_iter().chain(std::mem::take(&mut self.fire)).collect();
        let bonus: Vec<BonusCohort> = self.open_bonus.take().into_iter().chain(std::mem::take(&mut self.bonus)).collect();
        for f in &fire {
            for w in &f.wagers {
                let name = self.fire_name.p();
                self.settle(w, ev, c.push, 0, name, c.table_closed_detail, true)?;
            }
            let r = new_cleared(ev, &mut self.pre, self.out.len(), c.l_fire, f.id.p(), c.r_table_closed)?;
            self.out.push(r);
        }
        for b in &bonus {
            for w in &b.wagers {
                let name = self.bonus_name.p();
                self.settle(w, ev, c.push, 0, name, c.table_closed_detail, true)?;
            }
            let r = new_cleared(ev, &mut self.pre, self.out.len(), c.l_bonus, b.id.p(), c.r_table_closed)?;
            self.out.push(r);
        }
        self.closed = true;
        Ok(())
    }
}

/// The contract's call alone: `null_apply(state, event)` returns (a state, a new empty list,
/// "applied") and does nothing else (what calling any native `apply` per event costs).
#[pyfunction]
fn null_apply(py: Python<'_>, state: &Bound<PyAny>, event: &Bound<PyAny>) -> PyResult<Py<PyAny>> {
    unsafe {
        let s = if state.is_none() { event.as_ptr() } else { state.as_ptr() };
        Ok(Py::<PyAny>::from_owned_ptr(py, result_tuple(s, ffi::PyList_New(0))))
    }
}

/// The mini-core under the contract: `apply(state, event) -> (state, outputs, verdict)`.
#[pyfunction]
fn apply(py: Python<'_>, state: &Bound<PyAny>, event: &Bound<PyAny>) -> PyResult<Py<PyAny>> {
    unsafe {
        let e = event.as_ptr();
        if state.is_none() {
            if ffi::Py_TYPE(e) as Obj != ctx().t_opened {
                return Err(PyNotImplementedError::new_err("an event of an unknown table"));
            }
            let t = Bound::new(py, Table::open(e)?)?;
            let list = ffi::PyList_New(0);
            return Ok(Py::<PyAny>::from_owned_ptr(py, result_tuple(t.as_ptr(), list)));
        }
        let st_b = state.downcast::<Table>()?;
        let mut st = st_b.borrow_mut();
        if let Err(err) = st.step(e) {
            st.out.clear();
            return Err(err);
        }
        let list = st.out.take_list();
        Ok(Py::<PyAny>::from_owned_ptr(py, result_tuple(st_b.as_ptr(), list)))
    }
}

/// The mini-core's loop in native code: the events of one table in order, the collected outputs
/// (as `core_loop()` returns them).
#[pyfunction]
fn run_core(py: Python<'_>, events: &Bound<PyAny>) -> PyResult<Py<PyAny>> {
    unsafe {
        let l = events.as_ptr();
        if ffi::PyList_CheckExact(l) == 0 {
            return Err(PyTypeError::new_err("events: a list"));
        }
        let n = ffi::PyList_GET_SIZE(l);
        let mut all: Vec<Obj> = Vec::new();
        let mut table: Option<Table> = None;
        for i in 0..n {
            let e = ffi::PyList_GET_ITEM(l, i);
            match table.as_mut() {
                None => table = Some(Table::open(e)?),
                Some(t) => {
                    if let Err(err) = t.step(e) {
                        t.out.clear();
                        Out(all).clear();
                        return Err(err);
                    }
                    all.append(&mut t.out.0);
                }
            }
        }
        Ok(Py::<PyAny>::from_owned_ptr(py, list_of(all)))
    }
}

#[pymodule]
fn native_floor(m: &Bound<PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(init, m)?)?;
    m.add_function(wrap_pyfunction!(floor_apply, m)?)?;
    m.add_function(wrap_pyfunction!(apply, m)?)?;
    m.add_function(wrap_pyfunction!(null_apply, m)?)?;
    m.add_function(wrap_pyfunction!(run_core, m)?)?;
    m.add_class::<Floor>()?;
    m.add_class::<FloorTable>()?;
    m.add_class::<Table>()?;
    Ok(())
}
