//! What the accelerator takes from the Python side at `init`: the event and output classes
//! (craps_streams/rules/events.py), where each input field lives in its Struct, the verdict, the Python
//! helpers of the records, the constant strings of the outputs, and the rule facts
//! (craps_streams/accelerator/rules.py `facts()`). Where it is kept, and why that is sound: slots.rs.

use crate::py::{interned, Obj, O};
use std::cell::RefCell;
use std::collections::HashMap;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Field offsets of one input class (msgspec stores each field in a slot, like __slots__).
#[derive(Default, Clone, Copy)]
pub struct Off {
    pub table_id: usize,
    pub seq: usize,
    pub ts: usize,
    pub a: usize, // WagerPlaced.wager_id, DiceThrown.die1, ShooterChanged.shooter_id, ComeBetsOnly.active
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
    pub t_come: Obj,
    pub c_settled: Obj,
    pub c_placed: Obj,
    pub c_cleared: Obj,
    pub c_alert: Obj,
    pub o_shooter: Off,
    pub o_dice: Off,
    pub o_wager: Off,
    pub o_come: Off,
    /// WagerSettled's id, table_id and seq (the audit's distinct ids: distinct.rs).
    pub o_settled: (usize, usize, usize),
    pub applied: Obj,
    /// The Python side: `fallback(state, event)` (the Python core on a state by record),
    /// `view(table)` (a TableState of the table's record, for attributes read rarely),
    /// `rules_from_record(record)`.
    pub fallback: Obj,
    pub view: Obj,
    pub rules_from_record: Obj,
    pub kinds: [Obj; 6],
    pub groups: [Obj; 4],
    // ---- the rule facts, from the Python core (craps_streams/accelerator/rules.py `facts()`): none is
    // written in Rust.
    /// § 623c.1(a)(2)(i): the positions at the table (lowest, highest).
    pub positions: (i64, i64),
    /// § 623a.11(b)(1): the Fire Bet's stakes (lowest, highest, step), in cents.
    pub fire_stakes: (i64, i64, i64),
    /// § 623a.10(b): the point numbers, as bits over the total.
    pub points: u32,
    /// § 623a.3(43): the totals each Bonus Craps wager needs (index = kind), as bits over the
    /// total, and every total any of them needs.
    pub bonus_needs: [u32; 4],
    pub all_totals: u32,
    /// § 623c.1(a)(2)(iii): the bit of each Hot Roller combination (index 6 x (low - 1) + (high - 1);
    /// 0: not a combination), the bits of each number's combinations (index = the number), and
    /// every combination's bit.
    pub combo_bits: [u32; 36],
    pub number_masks: [u32; 13],
    pub all_combos: u32,
    /// The odds of a paytable band that returns the stake (`paytables.PUSH`, § 623c.4(d)(2)).
    pub push_odds: i64,
    /// § 623a.11(a)(6): the distinct points at which surveillance is notified.
    pub four_points: usize,
    /// § 623c.4(a): per wager kind, the table kinds that offer it (None: every kind).
    pub table_kinds: [Option<Vec<Obj>>; 6],
    pub complete: [Obj; 4], // "<bonus kind> complete" (index = kind 1..3)
    /// `bonus_craps.seven_detail(marks)`, `hot_shooter.settled_detail(throws)`,
    /// `table.four_points_message(...)`, `table.large_win_message(...)`: the words of the rarer
    /// outputs, called in Python.
    pub seven_detail: Obj,
    pub throws_detail: Obj,
    pub four_points_message: Obj,
    pub large_win_message: Obj,
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
    // The marker names and details of small counts, each rendered once in Python from its text.
    pub total_marker: Vec<Obj>,   // "total-N"
    pub point_marker: Vec<Obj>,   // "point-N"
    pub points_detail: Vec<Obj>,  // "points=N"
    pub numbers_detail: Vec<Obj>, // "numbers=N"
    pub come_out_detail: Vec<Obj>, // "come-out seven, numbers=N"
    pub combo_marker: Vec<Obj>,   // "combo-L-H", index 6*(L-1)+(H-1)
    pub number_marker: Vec<Obj>,  // "number-N"
    // record keys
    pub k: Keys,
    /// The words `seven_detail` gave, by the marks, and `throws_detail`, by the throws: asked of
    /// Python once a context (the facts as configured), not once a table (a floor's tables ask
    /// for the same few hundred). Borrowed only with the GIL held, never across a call to Python.
    seven_details: RefCell<HashMap<u32, O>>,
    throws_details: RefCell<HashMap<i64, O>>,
    /// One owned reference to every object above (each `Obj` of this context is borrowed from
    /// here): dropping the context releases them all (slots.rs, invariant 3).
    refs: Vec<O>,
}

impl Ctx {
    /// `bonus_craps.seven_detail(marks)`, kept.
    ///
    /// # Safety
    /// The GIL is held.
    pub unsafe fn seven_detail_of(&self, marks: u32) -> PyResult<Obj> {
        kept_word(&self.seven_details, self.seven_detail, marks, marks as i64)
    }

    /// `hot_shooter.settled_detail(throws)`, kept.
    ///
    /// # Safety
    /// The GIL is held.
    pub unsafe fn throws_detail_of(&self, throws: i64) -> PyResult<Obj> {
        kept_word(&self.throws_details, self.throws_detail, throws, throws)
    }
}

/// `words(n)`, kept in `kept` by `key`: asked of Python the first time, the map's borrow released
/// across the call.
///
/// # Safety
/// The GIL is held, and `words` is a live callable.
unsafe fn kept_word<K: std::hash::Hash + Eq>(kept: &RefCell<HashMap<K, O>>, words: Obj, key: K, n: i64)
                                             -> PyResult<Obj> {
    if let Some(d) = kept.borrow().get(&key) {
        return Ok(d.p());
    }
    let arg = O::owned(crate::py::new_int(n))?;
    let d = crate::py::call(words, &[arg.p()])?;
    let p = d.p();
    kept.borrow_mut().insert(key, d); // held by the map from here
    Ok(p)
}

impl Drop for Ctx {
    /// Releases every Python reference the context took at `init`. A context is dropped with the
    /// GIL held: by `slots::install`, replacing it, or at the end of the last call from Python
    /// that held its `Arc` (slots.rs, invariant 3); each `O` decrements its object's count there.
    fn drop(&mut self) {
        self.seven_details.get_mut().clear();
        self.throws_details.get_mut().clear();
        self.refs.clear();
    }
}

// SAFETY: a `Ctx` is reached only with the GIL held: through `slots::CURRENT` (a `GILProtected`)
// or a clone of its `Arc` taken and dropped inside one call from Python, so on the thread holding
// the GIL (slots.rs, invariants 1-3). Its objects (and the `O`s that release them) are never
// touched without the GIL, so sharing or sending the `Arc` between threads races on nothing.
unsafe impl Send for Ctx {}
// SAFETY: as `Send` above: every read of a `Ctx` happens with the GIL held.
unsafe impl Sync for Ctx {}

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

pub use crate::slots::{field, offset_of};

fn offsets(cls: &Bound<PyAny>, names: &[&str]) -> PyResult<Off> {
    let mut v = [0usize; 7];
    for (i, n) in names.iter().enumerate() {
        v[i] = offset_of(cls, n)?;
    }
    Ok(Off { table_id: v[0], seq: v[1], ts: v[2], a: v[3], b: v[4], c: v[5], d: v[6] })
}

/// The references a context takes while it is made, kept in it (`Ctx::refs`).
#[derive(Default)]
struct Refs(RefCell<Vec<O>>);

impl Refs {
    /// Keeps a new reference to `b`; the context borrows it.
    fn keep(&self, b: &Bound<PyAny>) -> Obj {
        let o = O(b.clone().into_ptr());
        let p = o.p();
        self.0.borrow_mut().push(o);
        p
    }
    /// Keeps an interned str of `t`; the context borrows it.
    ///
    /// # Safety
    /// The GIL is held.
    unsafe fn text(&self, t: &str) -> Obj {
        let p = interned(t);
        if !p.is_null() {
            self.0.borrow_mut().push(O(p));
        }
        p
    }
}

/// Interned str objects of a sequence of str (one of the facts), exactly `n` of them.
fn texts(refs: &Refs, facts: &Bound<PyDict>, name: &str, n: usize) -> PyResult<Vec<Obj>> {
    let v: Vec<String> = fact(facts, name)?.extract()?;
    if v.len() != n {
        return Err(PyValueError::new_err(format!("fact {name}: {} texts, not {n}", v.len())));
    }
    // SAFETY: the GIL is held (`facts` is bound to it); each interned str is a new reference,
    // kept by the context (`refs`).
    Ok(v.iter().map(|t| unsafe { refs.text(t) }).collect())
}

fn fact<'py>(facts: &Bound<'py, PyDict>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    facts.get_item(name)?.ok_or_else(|| PyValueError::new_err(format!("the facts lack {name}")))
}

/// `init(events, applied, fallback, view, rules_from_record, facts)`: from craps_streams/accelerator/rules.py
/// at import, and again by its `configure()` when the Python side's facts change (tests). A second
/// call replaces the context; the old one is dropped, with the references it holds, once no
/// running call holds it (slots.rs).
pub fn init(events: &Bound<PyAny>, applied: &Bound<PyAny>, fallback: &Bound<PyAny>, view: &Bound<PyAny>,
            rules_from_record: &Bound<PyAny>, facts: &Bound<PyDict>) -> PyResult<()> {
    let g = |n: &str| -> PyResult<Bound<PyAny>> { events.getattr(n) };
    // Every event class a native path reads by slot: checked against this msgspec (slots.rs).
    for types in ["INPUT_TYPES", "OUTPUT_TYPES"] {
        for cls in events.getattr(types)?.call_method0("values")?.try_iter()? {
            crate::slots::check_layout(&cls?)?;
        }
    }
    let (sc, dt, wp, cb) = (g("ShooterChanged")?, g("DiceThrown")?, g("WagerPlaced")?, g("ComeBetsOnly")?);
    let refs = Refs::default();
    let keep = |b: &Bound<PyAny>| -> Obj { refs.keep(b) };
    let positions: (i64, i64) = fact(facts, "positions")?.extract()?;
    let fire_stakes: (i64, i64, i64) = fact(facts, "fire_stakes")?.extract()?;
    if fire_stakes.2 <= 0 {
        return Err(PyValueError::new_err("fact fire_stakes: the step must be positive"));
    }
    let four_points: usize = fact(facts, "four_points")?.extract()?;
    let point_numbers: Vec<u32> = fact(facts, "point_numbers")?.extract()?;
    if point_numbers.iter().any(|&p| !(4..=10).contains(&p)) {
        return Err(PyValueError::new_err("fact point_numbers: each a total from 4 to 10"));
    }
    let points = point_numbers.iter().fold(0u32, |m, &p| m | 1 << p);
    let bonus_needs: [u32; 4] = fact(facts, "bonus_needs")?.extract()?;
    let all_totals = bonus_needs.iter().fold(0, |m, &n| m | n);
    let combo_bits: [u32; 36] = fact(facts, "combo_bits")?.extract()?;
    let number_masks: [u32; 13] = fact(facts, "number_masks")?.extract()?;
    let all_combos = combo_bits.iter().fold(0, |m, &b| m | b);
    // The cohort records keep marks as bits in a u32 (totals 2..=12, fourteen combinations).
    if all_totals >> 13 != 0 || all_totals & 0b11 != 0 || all_combos.count_ones() != combo_bits.iter().filter(|&&b| b != 0).count() as u32
        || combo_bits.iter().any(|&b| b.count_ones() > 1) || number_masks.iter().any(|&m| m & !all_combos != 0) {
        return Err(PyValueError::new_err("facts bonus_needs, combo_bits, number_masks: bits the native core cannot keep"));
    }
    let kinds_offered: Vec<Option<Vec<String>>> = fact(facts, "table_kinds")?.extract()?;
    if kinds_offered.len() != KIND_NAMES.len() {
        return Err(PyValueError::new_err("fact table_kinds: one entry per wager kind"));
    }
    // SAFETY: the GIL is held (`facts` is bound to it); every object the context borrows is a new
    // reference kept in `refs` (interned, or a clone), released when the context is dropped
    // (slots.rs, invariant 3).
    unsafe {
        let mut table_kinds: [Option<Vec<Obj>>; 6] = Default::default();
        for (i, offered) in kinds_offered.iter().enumerate() {
            table_kinds[i] = offered.as_ref().map(|v| v.iter().map(|t| refs.text(t)).collect());
        }
        let complete = texts(&refs, facts, "complete_detail", 4)?;
        let k = |t: &str| refs.text(t);
        let c = Ctx {
            o_shooter: offsets(&sc, &["table_id", "seq", "ts", "shooter_id", "position", "reason"])?,
            o_dice: offsets(&dt, &["table_id", "seq", "ts", "die1", "die2", "valid"])?,
            o_wager: offsets(&wp, &["table_id", "seq", "ts", "wager_id", "position", "wager", "amount_cents"])?,
            o_come: offsets(&cb, &["table_id", "seq", "ts", "active"])?,
            o_settled: {
                let ws = g("WagerSettled")?;
                (offset_of(&ws, "id")?, offset_of(&ws, "table_id")?, offset_of(&ws, "seq")?)
            },
            t_shooter: keep(&sc),
            t_dice: keep(&dt),
            t_wager: keep(&wp),
            t_come: keep(&cb),
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
            positions,
            fire_stakes,
            points,
            bonus_needs,
            all_totals,
            combo_bits,
            number_masks,
            all_combos,
            push_odds: fact(facts, "push_odds")?.extract()?,
            four_points,
            table_kinds,
            complete: [complete[0], complete[1], complete[2], complete[3]],
            seven_detail: keep(&fact(facts, "seven_detail")?),
            throws_detail: keep(&fact(facts, "throws_detail")?),
            four_points_message: keep(&fact(facts, "four_points_message")?),
            large_win_message: keep(&fact(facts, "large_win_message")?),
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
            total_marker: texts(&refs, facts, "total_marker", 13)?,
            point_marker: texts(&refs, facts, "point_marker", 13)?,
            points_detail: texts(&refs, facts, "points_detail", 7)?,
            numbers_detail: texts(&refs, facts, "numbers_detail", 7)?,
            come_out_detail: texts(&refs, facts, "come_out_detail", 7)?,
            combo_marker: texts(&refs, facts, "combo_marker", 36)?,
            number_marker: texts(&refs, facts, "number_marker", 13)?,
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
            seven_details: RefCell::default(),
            throws_details: RefCell::default(),
            refs: Vec::new(),
        };
        let mut c = c;
        c.refs = refs.0.into_inner();
        crate::slots::install(facts.py(), c);
    }
    Ok(())
}
