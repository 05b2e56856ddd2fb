//! What the native core takes from the Python side once, at `init`: the event and output classes
//! (streams/rules/events.py), where each input field lives in its Struct, the verdict, the Python
//! helpers of the records, and the constant strings of the outputs.

use crate::py::{interned, Obj};
use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use std::ptr;

/// Field offsets of one input class (msgspec stores each field in a slot, like __slots__).
#[derive(Default, Clone, Copy)]
pub struct Off {
    pub table_id: usize,
    pub seq: usize,
    pub ts: usize,
    pub a: usize, // WagerPlaced.wager_id, DiceThrown.die1, ShooterChanged.shooter_id
    pub b: usize, // position, die2, position
    pub c: usize, // wager, valid, reason
    pub d: usize, // amount_cents
}

pub const KIND_NAMES: [&str; 6] = ["fire", "all_small", "all_tall", "all_or_nothing", "hot_roller", "hot_shooter"];
pub const GROUP_NAMES: [&str; 4] = ["fire", "bonus_craps", "hot_roller", "hot_shooter"];

pub struct Ctx {
    pub t_shooter: Obj,
    pub t_dice: Obj,
    pub t_wager: Obj,
    pub c_settled: Obj,
    pub c_placed: Obj,
    pub c_cleared: Obj,
    pub c_alert: Obj,
    pub o_shooter: Off,
    pub o_dice: Off,
    pub o_wager: Off,
    pub applied: Obj,
    /// The Python side: `fallback(state, event)` (the Python core on a state by record),
    /// `view(table)` (a TableState of the table's record, for attributes read rarely),
    /// `rules_from_record(record)`.
    pub fallback: Obj,
    pub view: Obj,
    pub rules_from_record: Obj,
    pub kinds: [Obj; 6],
    pub groups: [Obj; 4],
    pub complete: [Obj; 4], // "<bonus kind> complete" (index = kind 1..3)
    pub win: Obj,
    pub lose: Obj,
    pub push: Obj,
    pub r_seven: Obj,
    pub r_seven_out: Obj,
    pub r_settled: Obj,
    pub sc_table_open: Obj,
    pub sc_seven_out: Obj,
    pub sc_voluntary: Obj,
    pub sc_compulsory: Obj,
    pub a_four: Obj,
    pub a_large: Obj,
    pub total_marker: Vec<Obj>,   // "total-N"
    pub point_marker: Vec<Obj>,   // "point-N"
    pub points_detail: Vec<Obj>,  // "points=N"
    pub numbers_detail: Vec<Obj>, // "numbers=N"
    pub come_out_detail: Vec<Obj>, // "come-out seven, numbers=N"
    pub combo_marker: Vec<Obj>,   // "combo-L-H", index 6*(L-1)+(H-1)
    pub number_marker: Vec<Obj>,  // "number-N"
    // record keys
    pub k: Keys,
}

pub struct Keys {
    pub table_id: Obj,
    pub table_kind: Obj,
    pub rules: Obj,
    pub opened_seq: Obj,
    pub last_seq: Obj,
    pub closed: Obj,
    pub shooter_id: Obj,
    pub shooter_position: Obj,
    pub shooter_throws: Obj,
    pub hand: Obj,
    pub must_pass: Obj,
    pub point: Obj,
    pub come_bets_only: Obj,
    pub cycle_fresh: Obj,
    pub fire_alerted: Obj,
    pub open_cohorts: Obj,
    pub cohorts: Obj,
    pub duplicates: Obj,
    pub received_seq: Obj,
    pub held: Obj,
    pub throws: Obj,
    pub last_throw_ts: Obj,
    pub cohort_id: Obj,
    pub marks: Obj,
    pub wagers: Obj,
}

static mut CTX: *const Ctx = ptr::null();

#[inline(always)]
pub unsafe fn ctx() -> &'static Ctx {
    &*CTX
}

pub fn ready() -> bool {
    unsafe { !CTX.is_null() }
}

/// The offset of a msgspec Struct field: its member descriptor's (the inputs here, the outputs'
/// line writer in lines.rs).
pub(crate) fn offset_of(cls: &Bound<PyAny>, name: &str) -> PyResult<usize> {
    let d = cls.getattr("__dict__")?.get_item(name)?;
    let member_type = cls.py().import("types")?.getattr("MemberDescriptorType")?;
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

unsafe fn all(f: impl Fn(usize) -> String, n: usize) -> Vec<Obj> {
    (0..n).map(|i| interned(&f(i))).collect()
}

/// `init(events, applied, fallback, view, rules_from_record)`: once, from streams/rules/native.py.
pub fn init(events: &Bound<PyAny>, applied: &Bound<PyAny>, fallback: &Bound<PyAny>, view: &Bound<PyAny>,
            rules_from_record: &Bound<PyAny>) -> PyResult<()> {
    if ready() {
        return Ok(());
    }
    let g = |n: &str| -> PyResult<Bound<PyAny>> { events.getattr(n) };
    let (sc, dt, wp) = (g("ShooterChanged")?, g("DiceThrown")?, g("WagerPlaced")?);
    let keep = |b: &Bound<PyAny>| -> Obj { b.clone().into_ptr() };
    unsafe {
        let k = |t: &str| interned(t);
        let c = Ctx {
            o_shooter: offsets(&sc, &["table_id", "seq", "ts", "shooter_id", "position", "reason"])?,
            o_dice: offsets(&dt, &["table_id", "seq", "ts", "die1", "die2", "valid"])?,
            o_wager: offsets(&wp, &["table_id", "seq", "ts", "wager_id", "position", "wager", "amount_cents"])?,
            t_shooter: keep(&sc),
            t_dice: keep(&dt),
            t_wager: keep(&wp),
            c_settled: keep(&g("WagerSettled")?),
            c_placed: keep(&g("MarkerPlaced")?),
            c_cleared: keep(&g("MarkerCleared")?),
            c_alert: keep(&g("SurveillanceAlerted")?),
            applied: keep(applied),
            fallback: keep(fallback),
            view: keep(view),
            rules_from_record: keep(rules_from_record),
            kinds: KIND_NAMES.map(k),
            groups: GROUP_NAMES.map(k),
            complete: ["", "all_small complete", "all_tall complete", "all_or_nothing complete"].map(k),
            win: k("win"),
            lose: k("lose"),
            push: k("push"),
            r_seven: k("seven"),
            r_seven_out: k("seven_out"),
            r_settled: k("settled"),
            sc_table_open: k("table_open"),
            sc_seven_out: k("seven_out"),
            sc_voluntary: k("voluntary"),
            sc_compulsory: k("compulsory"),
            a_four: k("fire_bet_four_points"),
            a_large: k("large_win"),
            total_marker: all(|t| format!("total-{t}"), 13),
            point_marker: all(|t| format!("point-{t}"), 13),
            points_detail: all(|t| format!("points={t}"), 7),
            numbers_detail: all(|t| format!("numbers={t}"), 7),
            come_out_detail: all(|t| format!("come-out seven, numbers={t}"), 7),
            combo_marker: all(|i| format!("combo-{}-{}", i / 6 + 1, i % 6 + 1), 36),
            number_marker: all(|t| format!("number-{t}"), 13),
            k: Keys {
                table_id: k("table_id"),
                table_kind: k("table_kind"),
                rules: k("rules"),
                opened_seq: k("opened_seq"),
                last_seq: k("last_seq"),
                closed: k("closed"),
                shooter_id: k("shooter_id"),
                shooter_position: k("shooter_position"),
                shooter_throws: k("shooter_throws"),
                hand: k("hand"),
                must_pass: k("must_pass"),
                point: k("point"),
                come_bets_only: k("come_bets_only"),
                cycle_fresh: k("cycle_fresh"),
                fire_alerted: k("fire_alerted"),
                open_cohorts: k("open_cohorts"),
                cohorts: k("cohorts"),
                duplicates: k("duplicates"),
                received_seq: k("received_seq"),
                held: k("held"),
                throws: k("throws"),
                last_throw_ts: k("last_throw_ts"),
                cohort_id: k("cohort_id"),
                marks: k("marks"),
                wagers: k("wagers"),
            },
        };
        CTX = Box::into_raw(Box::new(c));
    }
    Ok(())
}

/// A field of an event at its slot offset, borrowed (the event holds it). msgspec Structs keep
/// every field set; a NULL slot (never for a constructed Struct) reads as None-like NULL.
#[inline(always)]
pub unsafe fn field(e: Obj, off: usize) -> Obj {
    *((e as *mut u8).add(off) as *mut Obj)
}
