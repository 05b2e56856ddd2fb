//! A table's surveillance kept natively (craps_streams/surveillance/native_watch.py): the state of craps_streams/surveillance/table_watch.py `TableWatch` (the dice CUSUMs, the hold
//! tails, the position lines) and its `observe`, the largest cost of an Avro replay left in Python
//! (two fifths of a simulated day: a dict lookup, a dataclass and a screen per settlement).
//!
//! `Watch.observe(state, applied, outputs)` is `table_watch.observe` (with `_settled`,
//! `_check_hold`, `_check_position`, `position_tail` and `DiceWatch.throw`) operation by
//! operation, so the state and every alert are the same to the last bit: the same doubles in the
//! same order (no fused multiply-add: Rust never contracts), integers converted to doubles where
//! Python converts them (correctly rounded both ways), Python's `x ** 2` as the C library's
//! `pow(|x|, 2.0)` (what CPython's float power calls), `log` from the same C library Python's
//! `math` calls. The rare parts stay Python's, called back with plain values: a wager kind's exact
//! per-unit distribution and its tests (`unit_of`), the exact tails (`house_win_tail`,
//! `binomial_tail`) and the wording of every alert; so one rule, one threshold and one message
//! live in one place.
//!
//! It declines (returns None, nothing changed) when an input is not what the core makes (a field
//! of another type, a die off 1..6, a stake not positive): a first pass reads every settlement and
//! throw before anything changes. The step then turns the watch into the Python `TableWatch`
//! (`dump`) and lets `table_watch.observe` settle it, as the native core leaves its rare cases to
//! the Python core. tests/surveillance/test_native_watch.py holds the two to the same alerts and
//! the same state after every event, on floors with dice bias, lucky positions and bad input.

use crate::ctx::{field, offset_of, Ctx};
use crate::py::{call, exact_int, same_str, Obj, O};
use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::collections::HashMap;
use std::rc::Rc;

extern "C" {
    fn pow(x: f64, y: f64) -> f64;
}

/// Python's `x ** 2` on a float: CPython's float power takes an even power of a negative base of
/// its magnitude and calls the C library's `pow`, which may differ from x * x in the last bit
/// (black_box: so that the compiler does not turn the call into x * x).
#[inline(always)]
fn square(x: f64) -> f64 {
    // SAFETY: the C library's `pow` takes and returns doubles, with no pointer or state.
    unsafe { pow(x.abs(), std::hint::black_box(2.0)) }
}

/// KL(Bernoulli(q) || Bernoulli(p)) (tails.py `kl_divergence`).
#[inline(always)]
fn kl_divergence(q: f64, p: f64) -> f64 {
    let mut out = 0.0f64;
    if q > 0.0 {
        out += q * (q / p).ln();
    }
    if q < 1.0 {
        out += (1.0 - q) * ((1.0 - q) / (1.0 - p)).ln();
    }
    out
}

/// Python's min(1.0, v): 1.0 unless v < 1.0 (a NaN gives 1.0).
#[inline(always)]
fn min_one(v: f64) -> f64 {
    if v < 1.0 {
        v
    } else {
        1.0
    }
}

struct Config {
    seven_low: (f64, f64), // (7, other), dice_watch.py `_SEVEN_LOW`
    seven_high: (f64, f64),
    face: (f64, f64), // (hit, miss)
    cell: (f64, f64),
    seven_h: f64,
    face_h: f64,
    cell_h: f64,
    rearm: f64,
    tail_alert: f64,
    check_z: f64,
    position_alert: f64,
    // The Python side (native_watch.py): the unit of a wager kind under the table's rules, the
    // exact tails, the alerts' wording.
    unit_of: O,
    house_win_tail: O,
    binomial_tail: O,
    dice_alert: O,
    hold_alert: O,
    position_alert_of: O,
    t_opened: O,
    // WagerSettled's slots.
    s_seq: usize,
    s_wager: usize,
    s_paytable: usize,
    s_position: usize,
    s_stake: usize,
    s_outcome: usize,
    s_won: usize,
    s_placed: usize,
    // The alert kinds as `raised` counts them.
    k_dice: O,
    k_hold: O,
    k_position: O,
}

/// The settings and the Python side's helpers, shared by every table's watch:
/// `WatchConfig(constants, thresholds, helpers, TableOpened)` (native_watch.py builds it).
#[pyclass(unsendable, module = "craps_streams.accelerator._native")]
pub struct WatchConfig {
    c: Rc<Config>,
}

#[pymethods]
impl WatchConfig {
    /// `constants`: (seven_low, seven_high, face, cell) pairs, (seven_h, face_h, cell_h), REARM;
    /// `thresholds`: (tail_alert, check_z, position_alert); `helpers`: (unit_of, house_win_tail,
    /// binomial_tail, dice_alert, hold_alert, position_alert_of).
    #[new]
    fn new(py: Python<'_>, pairs: [(f64, f64); 4], dice_h: (f64, f64, f64), rearm: f64,
           thresholds: (f64, f64, f64), helpers: [Py<PyAny>; 6], table_opened: Py<PyAny>)
           -> PyResult<WatchConfig> {
        // SAFETY: the GIL is held (`py`); each object is live (a `Py`), its count incremented for the `O`.
        let own = |o: &Py<PyAny>| unsafe { O::new_ref(o.as_ptr()) };
        let cls = py.import("craps_streams.rules.events")?.getattr("WagerSettled")?;
        let at = |n: &str| offset_of(&cls, n);
        // SAFETY: the GIL is held (`py`); `interned` returns a new reference, owned by the `O`.
        let interned = |t: &str| unsafe { O(crate::py::interned(t)) };
        Ok(WatchConfig {
            c: Rc::new(Config {
                seven_low: pairs[0],
                seven_high: pairs[1],
                face: pairs[2],
                cell: pairs[3],
                seven_h: dice_h.0,
                face_h: dice_h.1,
                cell_h: dice_h.2,
                rearm,
                tail_alert: thresholds.0,
                check_z: thresholds.1,
                position_alert: thresholds.2,
                unit_of: own(&helpers[0]),
                house_win_tail: own(&helpers[1]),
                binomial_tail: own(&helpers[2]),
                dice_alert: own(&helpers[3]),
                hold_alert: own(&helpers[4]),
                position_alert_of: own(&helpers[5]),
                t_opened: own(&table_opened),
                s_seq: at("seq")?,
                s_wager: at("wager")?,
                s_paytable: at("paytable")?,
                s_position: at("position")?,
                s_stake: at("stake_cents")?,
                s_outcome: at("outcome")?,
                s_won: at("won_cents")?,
                s_placed: at("placed_seq")?,
                k_dice: interned("dice_bias"),
                k_hold: interned("hold_anomaly"),
                k_position: interned("position_anomaly"),
            }),
        })
    }

    /// A fresh watch (`TableWatch()`).
    fn watch(&self) -> Watch {
        Watch {
            c: self.c.clone(),
            dice: Dice::default(),
            kinds: Vec::new(),
            positions: HashMap::new(),
            last_throw_seq: 0,
            prev_throw_seq: 0,
            raised: Vec::new(),
        }
    }
}

/// dice_watch.py `DiceBook`.
struct Dice {
    throws: i64,
    invalid: i64,
    cells: [i64; 36],
    seven_low: f64,
    seven_high: f64,
    faces: [f64; 12],
    faces_at: [i64; 12],
    cell_sums: [f64; 36],
    cell_at: [i64; 36],
    since: i64,
    cells_since: [i64; 36],
}

impl Default for Dice {
    fn default() -> Dice {
        Dice {
            throws: 0,
            invalid: 0,
            cells: [0; 36],
            seven_low: 0.0,
            seven_high: 0.0,
            faces: [0.0; 12],
            faces_at: [0; 12],
            cell_sums: [0.0; 36],
            cell_at: [0; 36],
            since: 0,
            cells_since: [0; 36],
        }
    }
}

/// The name of a CUSUM as `DiceWatch.throw` reports it: 0 seven_low, 1 seven_high, 2 + i the
/// face i (die 1's faces, then die 2's), 14 + cell.
fn cusum_name(i: usize) -> String {
    match i {
        0 => "seven_low".to_string(),
        1 => "seven_high".to_string(),
        2..=13 => format!("die{}_face_{}", (i - 2) / 6 + 1, (i - 2) % 6 + 1),
        _ => format!("cell_{}_{}", (i - 14) / 6 + 1, (i - 14) % 6 + 1),
    }
}

impl Dice {
    /// `DiceWatch.throw` of a valid throw (die1, die2 in 1..6): the CUSUMs that crossed.
    fn throw(&mut self, c: &Config, die1: i64, die2: i64, crossed: &mut Vec<usize>) {
        self.throws += 1;
        let n = self.throws;
        let cell = (6 * die1 + die2 - 7) as usize;
        self.cells[cell] += 1;
        self.cells_since[cell] += 1;
        let (mut low, mut high) = if die1 + die2 == 7 {
            (self.seven_low + c.seven_low.0, self.seven_high + c.seven_high.0)
        } else {
            (self.seven_low + c.seven_low.1, self.seven_high + c.seven_high.1)
        };
        if low < 0.0 {
            low = 0.0;
        } else if low >= c.seven_h {
            crossed.push(0);
            low = 0.0;
        }
        if high < 0.0 {
            high = 0.0;
        } else if high >= c.seven_h {
            crossed.push(1);
            high = 0.0;
        }
        self.seven_low = low;
        self.seven_high = high;
        // The lazy CUSUMs this throw hits: two faces (die 1's, die 2's) and one cell.
        for i in [(die1 - 1) as usize, (die2 + 5) as usize] {
            if lazy_hit(&mut self.faces, &mut self.faces_at, i, n, c.face, c.face_h) {
                crossed.push(2 + i);
            }
        }
        if lazy_hit(&mut self.cell_sums, &mut self.cell_at, cell, n, c.cell, c.cell_h) {
            crossed.push(14 + cell);
        }
    }
}

/// A lazy CUSUM hit on throw `n` (`DiceWatch.throw`'s faces and cells alike): the run of misses
/// since its last hit (an int times a double, as Python multiplies them), clamped at 0, then the
/// hit; true when it crossed `h` (and restarts at 0). `step` is (hit, miss).
fn lazy_hit(sums: &mut [f64], at: &mut [i64], i: usize, n: i64, step: (f64, f64), h: f64) -> bool {
    let mut value = sums[i] + ((n - 1 - at[i]) as f64) * step.1;
    value = (if value > 0.0 { value } else { 0.0 }) + step.0;
    at[i] = n;
    let crossed = value >= h;
    sums[i] = if crossed { 0.0 } else { value };
    crossed
}

/// One of `position_watch.tests_of`: (name, p0, key (None: the first throw), lower tail?).
struct Test {
    name: O,
    p0: f64,
    key: Option<i64>,
    lower: bool,
}

/// A wager kind's unit under the rules in force (`TableWatch.units`), with what `_settled`
/// derives from it once per decision.
struct Unit {
    obj: O,
    mean: f64,
    variance: f64,
    tests: Vec<Test>,
    first: Option<(f64, f64)>, // (p_first, q_first) when tests[0] is the first-throw test
    screen: f64,
}

/// hold_tail.py `HoldTail` (stakes in insertion order, as the dict keeps them).
#[derive(Default)]
struct Hold {
    decisions: i64,
    handle: i128,
    house_win: i128,
    stakes: Vec<(i128, i64)>,
    alerted: bool,
    stake_squares: i128,
    last: Option<(i64, f64, bool)>,
}

impl Hold {
    fn add_decision(&mut self, stake: i128, house_win: i128) {
        self.decisions += 1;
        self.handle += stake;
        self.house_win += house_win;
        match self.stakes.iter_mut().find(|(s, _)| *s == stake) {
            Some(e) => e.1 += 1,
            None => self.stakes.push((stake, 1)),
        }
        self.stake_squares += stake * stake;
    }
}

/// position_watch.py `PositionLine` (results in insertion order).
struct Line {
    wagers: i64,
    first_throw: i64,
    results: Vec<(i64, i64)>,
    alerted: bool,
    last_p: f64,
}

impl Line {
    #[inline(always)]
    fn result(&self, key: i64) -> i64 {
        self.results.iter().find(|(v, _)| *v == key).map_or(0, |e| e.1)
    }
    #[inline(always)]
    fn count(&mut self, key: i64) {
        match self.results.iter_mut().find(|(v, _)| *v == key) {
            Some(e) => e.1 += 1,
            None => self.results.push((key, 1)),
        }
    }
}

/// A wager kind and paytable seen at the table: its hold tail and its unit (None until needed,
/// and again once the table opens).
struct Kind {
    wager: O,
    paytable: O,
    hold: Option<Hold>,
    unit: Option<Rc<Unit>>,
}

/// One settlement as `_settled` reads it.
struct Settled {
    o: Obj, // borrowed from `outputs`
    position: i64,
    stake: i64,
    outcome: u8, // 0 lose, 1 win, 2 anything else
    won: i64,
    placed_seq: i64,
}

/// The settlements of one decision (deciding seq, wager kind and paytable), in output order.
/// The money of a group of settlements, as `HoldLine.add_all` (craps_streams/rules/hold.py) adds it: the
/// handle, the stakes collected from the losers and returned to the rest, the amount won, and the
/// losses and wins (outcome 0 lose, 1 win, any other neither). The watch's hold lines and the
/// report's books both sum a group through it.
pub(crate) struct GroupMoney {
    pub handle: i128,
    pub collected: i128,
    pub returned: i128,
    pub won: i128,
    pub losses: i64,
    pub wins: i64,
}

impl GroupMoney {
    /// `wagers`: each settlement's (stake, won, outcome), in cents.
    pub(crate) fn of(wagers: impl Iterator<Item = (i64, i64, u8)>) -> Self {
        let mut m = GroupMoney { handle: 0, collected: 0, returned: 0, won: 0, losses: 0, wins: 0 };
        for (stake, won, outcome) in wagers {
            let cents = stake as i128;
            m.handle += cents;
            if outcome == 0 {
                m.collected += cents;
                m.losses += 1;
            } else {
                m.returned += cents;
                m.won += won as i128;
                if outcome == 1 {
                    m.wins += 1;
                }
            }
        }
        m
    }
}

struct Decision {
    seq: i64,
    kind: usize,
    wagers: Vec<Settled>,
}

/// One applied event as `observe` reads it.
enum Seen {
    Opened,
    Thrown { e: Obj, seq: i64, dice: Option<(i64, i64)> }, // dice None: not valid
    Other,
}

/// One table's surveillance (`TableWatch`), natively.
#[pyclass(unsendable, module = "craps_streams.accelerator._native")]
pub struct Watch {
    c: Rc<Config>,
    dice: Dice,
    kinds: Vec<Kind>,
    positions: HashMap<(usize, i64), Line>,
    last_throw_seq: i64,
    prev_throw_seq: i64,
    raised: Vec<(O, i64)>,
}

/// # Safety
/// The GIL is held, and every object it is given is live for the call.
unsafe fn as_i64(o: Obj) -> Option<i64> {
    if o.is_null() {
        None
    } else {
        exact_int(o)
    }
}

impl Watch {
    /// The kind's index, registered on first sight.
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    unsafe fn kind_of(&mut self, wager: Obj, paytable: Obj) -> usize {
        for (i, k) in self.kinds.iter().enumerate() {
            if same_str(k.wager.p(), wager) && same_str(k.paytable.p(), paytable) {
                return i;
            }
        }
        self.kinds.push(Kind { wager: O::new_ref(wager), paytable: O::new_ref(paytable), hold: None, unit: None });
        self.kinds.len() - 1
    }

    /// The first pass: every settlement grouped by decision (`settled_groups`) and every applied
    /// event read, or None when one is not what the core makes (nothing changed but the kinds
    /// registered, which the state does not show).
    ///
    /// # Safety
    /// The GIL is held, `x` is the call's context, and `applied` and `outputs` are lists (each item's type is compared before its slots are read).
    unsafe fn read(&mut self, x: &Ctx, applied: Obj, outputs: Obj) -> Option<(Vec<Seen>, Vec<Decision>)> {
        let c = self.c.clone();
        let mut decisions: Vec<Decision> = Vec::new();
        let n = ffi::PyList_GET_SIZE(outputs);
        for i in 0..n {
            let o = ffi::PyList_GET_ITEM(outputs, i);
            if ffi::Py_TYPE(o) as Obj != x.c_settled {
                continue;
            }
            let (wager, paytable) = (field(o, c.s_wager), field(o, c.s_paytable));
            if wager.is_null() || paytable.is_null() || ffi::PyUnicode_CheckExact(wager) == 0
                || ffi::PyUnicode_CheckExact(paytable) == 0 {
                return None;
            }
            let seq = as_i64(field(o, c.s_seq))?;
            let outcome_o = field(o, c.s_outcome);
            if outcome_o.is_null() {
                return None;
            }
            let outcome = if same_str(x.lose, outcome_o) {
                0
            } else if same_str(x.win, outcome_o) {
                1
            } else {
                2
            };
            let stake = as_i64(field(o, c.s_stake))?;
            if stake <= 0 {
                return None;
            }
            let s = Settled {
                o,
                position: as_i64(field(o, c.s_position))?,
                stake,
                outcome,
                won: if outcome == 0 { 0 } else { as_i64(field(o, c.s_won))? },
                placed_seq: as_i64(field(o, c.s_placed))?,
            };
            let kind = self.kind_of(wager, paytable);
            match decisions.iter_mut().find(|d| d.seq == seq && d.kind == kind) {
                Some(d) => d.wagers.push(s),
                None => decisions.push(Decision { seq, kind, wagers: vec![s] }),
            }
        }
        let n = ffi::PyList_GET_SIZE(applied);
        let mut seen = Vec::with_capacity(n as usize);
        for i in 0..n {
            let e = ffi::PyList_GET_ITEM(applied, i);
            let t = ffi::Py_TYPE(e) as Obj;
            if t == x.t_dice {
                let valid = field(e, x.o_dice.c);
                let dice = if valid == ffi::Py_True() {
                    let (a, b) = (as_i64(field(e, x.o_dice.a))?, as_i64(field(e, x.o_dice.b))?);
                    if !(1..=6).contains(&a) || !(1..=6).contains(&b) {
                        return None;
                    }
                    Some((a, b))
                } else if valid == ffi::Py_False() {
                    None
                } else {
                    return None;
                };
                let seq = if dice.is_some() { as_i64(field(e, x.o_dice.seq))? } else { 0 };
                seen.push(Seen::Thrown { e, seq, dice });
            } else if t == c.t_opened.p() {
                seen.push(Seen::Opened);
            } else {
                seen.push(Seen::Other);
            }
        }
        Some((seen, decisions))
    }

    /// `book_observe`, for the JSON Lines lane too (lane.rs: a throw it applied, booked and watched
    /// without a trip through Python).
    pub(crate) fn book_and_watch(&mut self, py: Python<'_>, lines: &Bound<PyDict>, new_line: &Bound<PyAny>,
                                 state: &Bound<PyAny>, applied: &Bound<PyList>, outputs: &Bound<PyList>)
                                 -> PyResult<Option<Py<PyAny>>> {
        let Some(x) = crate::slots::current(py) else { return Ok(None) };
        // SAFETY: as in `observe`; `book` reads only what `read` checked.
        unsafe {
            let Some((seen, decisions)) = self.read(&x, applied.as_ptr(), outputs.as_ptr()) else {
                return Ok(None);
            };
            self.book(py, lines, new_line, state, &decisions)?;
            self.watch_read(py, state, &seen, &decisions).map(Some)
        }
    }

    /// The decisions booked into a hold book's lines: `HoldWatch.watch` with `HoldLine.add_all`,
    /// in the decisions' order, the counts and cents added as Python ints (a line holds Python's
    /// numbers, of any size) and the stake squares of each decision's summed stakes.
    ///
    /// # Safety
    /// The GIL is held, and `decisions` were read by `read` from outputs live for the call.
    unsafe fn book(&self, py: Python<'_>, lines: &Bound<PyDict>, new_line: &Bound<PyAny>, state: &Bound<PyAny>,
                   decisions: &[Decision]) -> PyResult<()> {
        for d in decisions {
            let GroupMoney { handle, collected, returned, won, losses, wins } =
                GroupMoney::of(d.wagers.iter().map(|s| (s.stake, s.won, s.outcome)));
            let n = d.wagers.len() as i64;
            let kind = &self.kinds[d.kind];
            let wager = Bound::from_borrowed_ptr(py, kind.wager.p());
            let key = PyTuple::new(py, [wager.clone(), Bound::from_borrowed_ptr(py, kind.paytable.p())])?;
            let line = match lines.get_item(&key)? {
                Some(line) => line,
                None => {
                    let line = new_line.call1((state, wager))?;
                    lines.set_item(&key, &line)?;
                    line
                }
            };
            let add = |name: &Bound<'_, pyo3::types::PyString>, delta: Bound<'_, PyAny>| -> PyResult<()> {
                line.setattr(name, line.getattr(name)?.add(delta)?)
            };
            let h = handle.into_pyobject(py)?.into_any();
            add(pyo3::intern!(py, "settled"), n.into_pyobject(py)?.into_any())?;
            add(pyo3::intern!(py, "handle_cents"), h.clone())?;
            add(pyo3::intern!(py, "collected_cents"), collected.into_pyobject(py)?.into_any())?;
            add(pyo3::intern!(py, "losses"), losses.into_pyobject(py)?.into_any())?;
            add(pyo3::intern!(py, "returned_cents"), returned.into_pyobject(py)?.into_any())?;
            add(pyo3::intern!(py, "won_cents"), won.into_pyobject(py)?.into_any())?;
            add(pyo3::intern!(py, "wins"), wins.into_pyobject(py)?.into_any())?;
            add(pyo3::intern!(py, "pushes"), (n - losses - wins).into_pyobject(py)?.into_any())?;
            // The wagers of one decision are one outcome: their stakes added, then squared.
            add(pyo3::intern!(py, "stake_squares"), h.mul(&h)?)?;
        }
        Ok(())
    }

    /// `observe` once its inputs are read: the throws watched and the decisions checked.
    ///
    /// # Safety
    /// The GIL is held; `state` and the objects `seen` and `decisions` borrow are live for the call.
    unsafe fn watch_read(&mut self, py: Python<'_>, state: &Bound<PyAny>, seen: &[Seen], decisions: &[Decision])
                         -> PyResult<Py<PyAny>> {
        {
            let c = self.c.clone();
            let state = state.as_ptr();
            let mut alerts: Vec<(Obj, O)> = Vec::new();
            let mut crossed: Vec<usize> = Vec::new();
            for s in seen {
                let (e, seq, (die1, die2)) = match *s {
                    Seen::Opened => {
                        for k in self.kinds.iter_mut() {
                            k.unit = None;
                        }
                        continue;
                    }
                    Seen::Other => continue,
                    Seen::Thrown { dice: None, .. } => {
                        self.dice.invalid += 1;
                        continue;
                    }
                    Seen::Thrown { e, seq, dice: Some(d) } => (e, seq, d),
                };
                crossed.clear();
                self.dice.throw(&c, die1, die2, &mut crossed);
                self.prev_throw_seq = self.last_throw_seq;
                self.last_throw_seq = seq;
                if !crossed.is_empty() {
                    let names: Vec<String> = crossed.iter().map(|&i| cusum_name(i)).collect();
                    let since = self.dice.cells_since.to_vec();
                    let alert = Bound::from_borrowed_ptr(py, c.dice_alert.p())
                        .call1((Bound::from_borrowed_ptr(py, state), Bound::from_borrowed_ptr(py, e), names,
                                self.dice.invalid, since))?;
                    alerts.push((c.k_dice.p(), O(alert.into_ptr())));
                    self.dice.since = self.dice.throws;
                    self.dice.cells_since = [0; 36];
                }
                for d in decisions.iter().filter(|d| d.seq == seq) {
                    self.settled(state, d, &mut alerts)?;
                }
            }
            let list = O::owned(ffi::PyList_New(alerts.len() as ffi::Py_ssize_t))?;
            for (i, (kind, alert)) in alerts.into_iter().enumerate() {
                match self.raised.iter_mut().find(|(k, _)| same_str(k.p(), kind)) {
                    Some(e) => e.1 += 1,
                    None => self.raised.push((O::new_ref(kind), 1)),
                }
                ffi::PyList_SET_ITEM(list.p(), i as ffi::Py_ssize_t, alert.into_ptr());
            }
            Ok(Py::from_owned_ptr(py, list.into_ptr()))
        }
    }

    /// The kind's unit under the table's rules (`_settled`'s `units`), read from Python once.
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    unsafe fn unit(&mut self, kind: usize, state: Obj) -> PyResult<Rc<Unit>> {
        if let Some(u) = &self.kinds[kind].unit {
            return Ok(u.clone());
        }
        let c = self.c.clone();
        let r = call(c.unit_of.p(), &[self.kinds[kind].wager.p(), state])?;
        let py = Python::assume_gil_acquired();
        let r = Bound::from_owned_ptr(py, r.into_ptr());
        type UnitRec = (Py<PyAny>, f64, f64, Vec<(Py<PyAny>, f64, Option<i64>, bool)>);
        let (obj, mean, variance, tests): UnitRec = r.extract()?;
        let tests: Vec<Test> = tests
            .into_iter()
            .map(|(name, p0, key, lower)| Test { name: O::new_ref(name.as_ptr()), p0, key, lower })
            .collect();
        let first = match tests.first() {
            Some(t) if t.key.is_none() => Some((t.p0, 1.0 - t.p0)),
            _ => None,
        };
        // `math.log(len(tests) / (REARM * position_alert)) - 12.0`
        let screen = if tests.is_empty() {
            0.0
        } else {
            (tests.len() as f64 / (c.rearm * c.position_alert)).ln() - 12.0
        };
        let u = Rc::new(Unit { obj: O::new_ref(obj.as_ptr()), mean, variance, tests, first, screen });
        self.kinds[kind].unit = Some(u.clone());
        Ok(u)
    }

    /// `_settled` of one decision; the alerts are pushed with their kind.
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    unsafe fn settled(&mut self, state: Obj, d: &Decision, alerts: &mut Vec<(Obj, O)>) -> PyResult<()> {
        let c = self.c.clone();
        let unit = self.unit(d.kind, state)?;
        let tests = &unit.tests;
        let first = self.prev_throw_seq;
        let (mut stake, mut win) = (0i128, 0i128);
        for s in &d.wagers {
            let cents = s.stake;
            stake += cents as i128;
            let line = self.positions.entry((d.kind, s.position)).or_insert_with(|| Line {
                wagers: 0,
                first_throw: 0,
                results: Vec::new(),
                alerted: false,
                last_p: 1.0,
            });
            line.wagers += 1;
            let at_first = s.placed_seq > first;
            if at_first {
                line.first_throw += 1;
            }
            let full = if s.outcome == 0 {
                win += cents as i128;
                line.count(1);
                // A loss can only have moved the first-throw test towards an alert (see
                // `_settled`), and its chi-square screen rules most out without a logarithm.
                let Some((p_first, q_first)) = unit.first else { continue };
                if at_first {
                    continue;
                }
                let n = line.wagers;
                let expected = n as f64 * p_first;
                let x = line.first_throw as f64;
                if x >= expected || (n < 160_000 && square(x - expected) / (expected * q_first) < unit.screen) {
                    continue;
                }
                false
            } else {
                let won = s.won;
                win -= won as i128;
                let value = if s.outcome == 1 { -won.div_euclid(cents) } else { 0 };
                line.count(value);
                true
            };
            let run = if full { &tests[..] } else { &tests[..1] };
            if let Some(alert) = check_position(&c, state, s, line, tests, run)? {
                alerts.push((c.k_position.p(), alert));
            }
        }
        let kind = &mut self.kinds[d.kind];
        let tail = kind.hold.get_or_insert_with(Hold::default);
        tail.add_decision(stake, win);
        // When the house collects every stake, P(H <= observed) cannot fall (`_settled`).
        if win < stake {
            let last = d.wagers.last().unwrap();
            if let Some(alert) = check_hold(&c, state, last.o, tail, &unit)? {
                alerts.push((c.k_hold.p(), alert));
            }
        }
        Ok(())
    }

    /// The state as plain values, for the Python `TableWatch` (native_watch.py `table_watch_of`).
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    unsafe fn dump_in(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let d = &self.dice;
        let dice = (d.throws, d.invalid, d.cells.to_vec(), d.seven_low, d.seven_high, d.faces.to_vec(),
                    d.faces_at.to_vec(), d.cell_sums.to_vec(), d.cell_at.to_vec(), d.since, d.cells_since.to_vec());
        let borrowed = |o: &O| Bound::from_borrowed_ptr(py, o.p());
        let holds = PyList::empty(py);
        for k in &self.kinds {
            if let Some(h) = &k.hold {
                let stakes: Vec<(i128, i64)> = h.stakes.clone();
                holds.append((borrowed(&k.wager), borrowed(&k.paytable), h.decisions, h.handle, h.house_win,
                              stakes, h.alerted, h.stake_squares, h.last))?;
            }
        }
        let positions = PyList::empty(py);
        for (&(kind, position), line) in &self.positions {
            let k = &self.kinds[kind];
            positions.append((position, borrowed(&k.wager), borrowed(&k.paytable), line.wagers, line.first_throw,
                              line.results.clone(), line.alerted, line.last_p))?;
        }
        let raised: Vec<(Bound<PyAny>, i64)> = self.raised.iter().map(|(k, n)| (borrowed(k), *n)).collect();
        Ok((dice, holds, positions, self.prev_throw_seq, self.last_throw_seq, raised)
            .into_pyobject(py)?
            .into_any()
            .unbind())
    }
}

/// A p-value and the test that gave it: (index, x, expected).
type Tail = (f64, Option<(usize, i64, f64)>);

/// `position_tail` over the tests `run`: (p-value, the test that gave it: index, x, expected).
///
/// # Safety
/// The GIL is held.
unsafe fn position_tail(c: &Config, line: &Line, tests: &[Test], alert_at: f64, run: &[Test]) -> PyResult<Tail> {
    let k = tests.len();
    let n = line.wagers;
    let (mut best, mut which) = (1.0f64, None);
    let limit = (k as f64 / (alert_at * (n + 1) as f64)).ln();
    for (i, t) in run.iter().enumerate() {
        let x = match t.key {
            None => line.first_throw,
            Some(key) => line.result(key),
        };
        let expected = n as f64 * t.p0;
        let xf = x as f64;
        if (t.lower && xf >= expected) || (!t.lower && xf <= expected) {
            continue;
        }
        if square(xf - expected) / (expected * (1.0 - t.p0)) < limit {
            continue;
        }
        if n as f64 * kl_divergence(xf / n as f64, t.p0) < limit {
            continue;
        }
        let py = Python::assume_gil_acquired();
        let p: f64 = Bound::from_borrowed_ptr(py, c.binomial_tail.p())
            .call1((n, x, t.p0, t.lower))?
            .extract()?;
        if p < best {
            best = p;
            which = Some((i, x, expected));
        }
    }
    Ok((min_one(k as f64 * best), which))
}

/// `_check_position`.
///
/// # Safety
/// The GIL is held, and every object it is given is live for the call.
unsafe fn check_position(c: &Config, state: Obj, s: &Settled, line: &mut Line, tests: &[Test], run: &[Test])
                         -> PyResult<Option<O>> {
    let (p, which) = position_tail(c, line, tests, c.rearm * c.position_alert, run)?;
    let full = run.len() == tests.len();
    if full {
        line.last_p = p;
    }
    if p > c.position_alert {
        if full && p > c.rearm * c.position_alert {
            line.alerted = false;
        }
        return Ok(None);
    }
    if line.alerted {
        return Ok(None);
    }
    line.alerted = true;
    let py = Python::assume_gil_acquired();
    let which = which.map(|(i, x, expected)| (Bound::from_borrowed_ptr(py, run[i].name.p()), x, line.wagers, expected));
    let alert = Bound::from_borrowed_ptr(py, c.position_alert_of.p()).call1((
        Bound::from_borrowed_ptr(py, state),
        Bound::from_borrowed_ptr(py, s.o),
        which,
        p,
        tests.len(),
    ))?;
    Ok(Some(O(alert.into_ptr())))
}

/// `_check_hold` (with `HoldTail.z_score` and `HoldTail.tail`).
///
/// # Safety
/// The GIL is held, and every object it is given is live for the call.
unsafe fn check_hold(c: &Config, state: Obj, s: Obj, tail: &mut Hold, unit: &Unit) -> PyResult<Option<O>> {
    let sd = (unit.variance * tail.stake_squares as f64).sqrt();
    let z = if sd != 0.0 { (tail.house_win as f64 - unit.mean * tail.handle as f64) / sd } else { 0.0 };
    if z > -c.check_z {
        tail.alerted = false;
        return Ok(None);
    }
    let py = Python::assume_gil_acquired();
    let (p, exact) = match tail.last {
        Some((d, p, exact)) if d == tail.decisions => (p, exact),
        _ => {
            let stakes = PyDict::new(py);
            for &(stake, count) in &tail.stakes {
                stakes.set_item(stake, count)?;
            }
            let (p, exact): (f64, bool) = Bound::from_borrowed_ptr(py, c.house_win_tail.p())
                .call1((Bound::from_borrowed_ptr(py, unit.obj.p()), stakes, tail.house_win))?
                .extract()?;
            tail.last = Some((tail.decisions, p, exact));
            (p, exact)
        }
    };
    if p > c.tail_alert {
        if p > c.rearm * c.tail_alert {
            tail.alerted = false;
        }
        return Ok(None);
    }
    if tail.alerted {
        return Ok(None);
    }
    tail.alerted = true;
    let alert = Bound::from_borrowed_ptr(py, c.hold_alert.p()).call1((
        Bound::from_borrowed_ptr(py, state),
        Bound::from_borrowed_ptr(py, s),
        (tail.decisions, tail.handle, tail.house_win),
        Bound::from_borrowed_ptr(py, unit.obj.p()),
        p,
        exact,
        z,
    ))?;
    Ok(Some(O(alert.into_ptr())))
}

#[pymethods]
impl Watch {
    /// `table_watch.observe(settings, watch, state, applied, outputs)`: the alerts (a list), or
    /// None when it declines (nothing changed: the step hands the table to the Python watch).
    fn observe(&mut self, py: Python<'_>, state: &Bound<PyAny>, applied: &Bound<PyList>, outputs: &Bound<PyList>)
               -> PyResult<Option<Py<PyAny>>> {
        // Before `init` there are no event classes to read by: the Python watch's.
        let Some(x) = crate::slots::current(py) else { return Ok(None) };
        // SAFETY: the GIL is held (`py`); `x` is this call's context; `state`, `applied` and
        // `outputs` are live objects borrowed for the call; `read` checks each item's type before
        // reading its slots.
        unsafe {
            let Some((seen, decisions)) = self.read(&x, applied.as_ptr(), outputs.as_ptr()) else {
                return Ok(None);
            };
            self.watch_read(py, state, &seen, &decisions).map(Some)
        }
    }

    /// `HoldWatch.watch(book, state, outputs)` then `observe(state, applied, outputs)`, the settling
    /// step's booking and watching of a throw (craps_streams/settle/step.py `settled`), over one
    /// reading of the outputs: every settlement booked into the hold book's `lines` ((wager kind,
    /// paytable) -> `HoldLine`, a new line made by Python's `new_line(state, wager)`, where the
    /// theory's facts are) as `HoldLine.add_all` books a decision, then the table watched; the
    /// alerts, or None when it declines, with nothing booked and nothing watched.
    fn book_observe(&mut self, py: Python<'_>, lines: &Bound<PyDict>, new_line: &Bound<PyAny>, state: &Bound<PyAny>,
                    applied: &Bound<PyList>, outputs: &Bound<PyList>) -> PyResult<Option<Py<PyAny>>> {
        self.book_and_watch(py, lines, new_line, state, applied, outputs)
    }

    /// The state as plain values: (dice book record, holds, positions, prev throw seq, last throw
    /// seq, raised); native_watch.py `table_watch_of` makes the `TableWatch` of it.
    fn dump(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        // SAFETY: the GIL is held (`py`).
        unsafe { self.dump_in(py) }
    }

    /// `load(dump)`: the state of a `dump` (native_watch.py `native_of` makes one of a
    /// `TableWatch`), replacing this one's; the units are read again when needed.
    fn load(&mut self, r: &Bound<PyTuple>) -> PyResult<()> {
        type DiceRec = (i64, i64, Vec<i64>, f64, f64, Vec<f64>, Vec<i64>, Vec<f64>, Vec<i64>, i64, Vec<i64>);
        type HoldRec = (Py<PyAny>, Py<PyAny>, i64, i128, i128, Vec<(i128, i64)>, bool, i128, Option<(i64, f64, bool)>);
        type LineRec = (i64, Py<PyAny>, Py<PyAny>, i64, i64, Vec<(i64, i64)>, bool, f64);
        type WatchRec = (DiceRec, Vec<HoldRec>, Vec<LineRec>, i64, i64, Vec<(Py<PyAny>, i64)>);
        let (dice, holds, positions, prev, last, raised): WatchRec = r.extract()?;
        let arr = |v: Vec<i64>| -> PyResult<[i64; 36]> {
            v.try_into().map_err(|_| PyValueError::new_err("a dice record's list is not 36 long"))
        };
        let mut faces = [0.0f64; 12];
        let mut faces_at = [0i64; 12];
        if dice.5.len() != 12 || dice.6.len() != 12 {
            return Err(PyValueError::new_err("a dice record's faces are not 12"));
        }
        faces.copy_from_slice(&dice.5);
        faces_at.copy_from_slice(&dice.6);
        let mut cell_sums = [0.0f64; 36];
        if dice.7.len() != 36 {
            return Err(PyValueError::new_err("a dice record's cells are not 36"));
        }
        cell_sums.copy_from_slice(&dice.7);
        let book = Dice {
            throws: dice.0,
            invalid: dice.1,
            cells: arr(dice.2)?,
            seven_low: dice.3,
            seven_high: dice.4,
            faces,
            faces_at,
            cell_sums,
            cell_at: arr(dice.8)?,
            since: dice.9,
            cells_since: arr(dice.10)?,
        };
        let mut fresh = Watch {
            c: self.c.clone(),
            dice: book,
            kinds: Vec::new(),
            positions: HashMap::new(),
            last_throw_seq: last,
            prev_throw_seq: prev,
            raised: Vec::new(),
        };
        // SAFETY: the GIL is held (`py`); each text is an exact str (checked), borrowed from the
        // dump's values, which live through the loops; what the watch keeps of one, `kind_of` and
        // `raised` take as a new reference.
        unsafe {
            let text = |o: &Py<PyAny>| -> PyResult<Obj> {
                if ffi::PyUnicode_CheckExact(o.as_ptr()) == 0 {
                    return Err(PyValueError::new_err("a wager kind or paytable is not a str"));
                }
                Ok(o.as_ptr())
            };
            for (w, p, decisions, handle, house_win, stakes, alerted, stake_squares, hold_last) in holds {
                let k = fresh.kind_of(text(&w)?, text(&p)?);
                fresh.kinds[k].hold = Some(Hold { decisions, handle, house_win, stakes, alerted, stake_squares,
                                                  last: hold_last });
            }
            for (position, w, p, wagers, first_throw, results, alerted, last_p) in positions {
                let k = fresh.kind_of(text(&w)?, text(&p)?);
                fresh.positions.insert((k, position), Line { wagers, first_throw, results, alerted, last_p });
            }
            for (kind, n) in raised {
                fresh.raised.push((O::new_ref(text(&kind)?), n));
            }
        }
        *self = fresh;
        Ok(())
    }
}
