//! A report's books kept natively (craps_streams/report/build.py `ReportPass._book`, books.py
//! `book_group`): the settlements of a pass summed into lines by gaming day, shift, table, wager
//! kind and paytable, the outcomes against the odds, the hourly handle and each table's hold
//! series, without a Python call per settlement.
//!
//! `ReportBook.book(outputs)` is `_book` operation by operation: the settlements grouped by
//! (table, deciding seq, wager, paytable) in the order first met, each group booked as
//! `_settled` books it, every other output handed to Python (`other`, which keeps the period's
//! alerts and rejections). The rule facts come from Python, none is written here: the gaming day
//! and shift of an instant (`segment(ts) -> (start, end, day, shift, day number)`, the calendar's,
//! asked once per shift met), a wager kind's line and theory under its table's rules (`kind(table,
//! wager, paytable) -> ((wager, paytable, reading), house edge, variance)`), the outcomes' words,
//! the details of a push the dice did not decide, the period's bounds. Money is summed in integer
//! cents (i128: no overflow on any history); the hold series' theory in doubles, in the order and
//! with the operations Python uses (an int times a double: the int converted, correctly rounded,
//! then multiplied), so `rows()` gives the same numbers as the Python books to the last bit.
//! tests/report/test_native_books.py holds the two line by line.

use crate::py::{exact_int, fetch, Key, Obj, StrMap, O};
use crate::slots::{field, offset_of};
use crate::watch::GroupMoney;
use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use rustc_hash::FxHashMap;

/// One line's sums (books.py `Line`, its `HoldLine` money first).
#[derive(Default)]
struct Sums {
    settled: i128,
    handle: i128,
    returned: i128,
    collected: i128,
    won: i128,
    wins: i128,
    losses: i128,
    pushes: i128,
    decisions: i128,
    dice_handle: i128,
    dice_win: i128,
    stakes: Vec<(i64, i64)>, // total stake of a decision -> decisions, in the order first met
}

struct Line {
    key: O,
    sums: Sums,
    start: i64, // its segment's start (a line before the period: its day's number)
}

struct Segment {
    start: i64,
    end: i64,
    day: O,
    shift: O,
    day_number: i64,
}

struct Kind {
    wager: O,
    paytable: O,
    lk: usize,
    edge: f64,
    variance: f64,
}

struct Table {
    id: O,
    kinds: Vec<Kind>, // by wager: the line and theory under the rules in force
    cum: (i128, i128, f64, f64),
    series: Vec<(i64, i128, i128, f64, f64)>,
}

/// A settlement's fields, read once.
struct Settled {
    stake: i64,
    won: i64,
    outcome: u8, // 0 lose, 1 win, 2 push, 3 other
    dice: bool,  // decided by the dice
}

#[pyclass(unsendable, module = "craps_streams.accelerator._native")]
pub struct ReportBook {
    start: i64,
    end: i64,
    earliest: i64,
    bucket: i64,
    hour: i64,
    settled_cls: O,
    off: [usize; 9], // table_id, seq, ts, wager, paytable, stake_cents, outcome, won_cents, detail
    lose: O,
    win: O,
    push: O,
    closed_detail: O,
    surrender_end: O,
    segment: O,
    kind: O,
    other: O,
    segments: Vec<Segment>, // sorted by start
    last_segment: usize,
    lks: Vec<O>,
    tables: StrMap<usize>,
    table: Vec<Table>,
    lines: Vec<Line>,
    line_at: FxHashMap<(i64, usize, usize), usize>, // (segment's start, table, lk)
    series_order: Vec<usize>, // the tables in the order their series began
    forward: Vec<O>, // the classes of the outputs `other` is given
    before: Vec<Line>,
    before_at: FxHashMap<(i64, usize), usize>, // (day number, lk)
    outcomes: Vec<(usize, Vec<(i64, i64)>)>, // lk -> unit result -> wagers, in the order first met
    outcome_at: FxHashMap<usize, usize>,
    hours: usize,                    // of the period, the last one begun
    hourly: Vec<(usize, Vec<i128>)>, // table -> handle by hour of the period, tables in the order first met
    hourly_at: FxHashMap<usize, usize>,
}

const OFF_NAMES: [&str; 9] =
    ["table_id", "seq", "ts", "wager", "paytable", "stake_cents", "outcome", "won_cents", "detail"];

/// # Safety
/// The GIL is held; `o` is NULL or a live object.
unsafe fn int_of(o: Obj, what: &str) -> PyResult<i64> {
    if o.is_null() {
        return Err(PyTypeError::new_err(format!("a settlement without {what}")));
    }
    exact_int(o).ok_or_else(|| PyTypeError::new_err(format!("a settlement's {what} is not an int of 64 bits")))
}

/// # Safety
/// The GIL is held; `o` is NULL or a live object.
unsafe fn str_of(o: Obj, what: &str) -> PyResult<Obj> {
    if o.is_null() || ffi::PyUnicode_CheckExact(o) == 0 {
        return Err(PyTypeError::new_err(format!("a settlement's {what} is not a str")));
    }
    Ok(o)
}

/// Python's `a == b` on two str.
///
/// # Safety
/// The GIL is held; both are live exact str.
#[inline(always)]
unsafe fn eq_str(a: Obj, b: Obj) -> bool {
    a == b || ffi::PyUnicode_Compare(a, b) == 0
}

impl Sums {
    /// books.py `book_group`: the money of every settlement of the group (`HoldLine.add_all`), and
    /// the decision of those the dice decided. Returns (their summed stake, or None when the dice
    /// decided none), the group's handle and its house win.
    fn book(&mut self, group: &[Settled]) -> (Option<i128>, i128, i128) {
        let GroupMoney { handle, collected, returned, won, losses, wins } =
            GroupMoney::of(group.iter().map(|s| (s.stake, s.won, s.outcome)));
        let (losses, wins) = (losses as i128, wins as i128);
        let n = group.len() as i128;
        self.settled += n;
        self.handle += handle;
        self.collected += collected;
        self.losses += losses;
        self.returned += returned;
        self.won += won;
        self.wins += wins;
        self.pushes += n - losses - wins;
        let mut dice = None;
        if group.iter().any(|s| s.dice) {
            let (mut stake, mut win) = (0i128, 0i128);
            for s in group.iter().filter(|s| s.dice) {
                stake += s.stake as i128;
                win += if s.outcome == 0 { s.stake as i128 } else { -(s.won as i128) };
            }
            self.decisions += 1;
            self.dice_handle += stake;
            self.dice_win += win;
            let stake64 = stake as i64;
            match self.stakes.iter_mut().find(|e| e.0 == stake64) {
                Some(e) => e.1 += 1,
                None => self.stakes.push((stake64, 1)),
            }
            dice = Some(stake);
        }
        (dice, handle, collected - won)
    }

    fn row<'py>(&self, py: Python<'py>, key: &O) -> PyResult<Bound<'py, PyTuple>> {
        let money = (self.settled, self.handle, self.returned, self.collected, self.won, self.wins, self.losses,
                     self.pushes);
        // SAFETY: the GIL is held (`py`); `key` is a live object owned by the book.
        let key = unsafe { Bound::from_borrowed_ptr(py, key.p()) };
        let stakes = PyDict::new(py);
        for &(s, c) in &self.stakes {
            stakes.set_item(s, c)?;
        }
        (key, money, (self.decisions, self.dice_handle, self.dice_win), stakes).into_pyobject(py)
    }
}

impl ReportBook {
    /// The segment (gaming day and shift) of an instant: the last found, else by the bounds met
    /// so far, else asked of Python's calendar (`segment`).
    ///
    /// # Safety
    /// The GIL is held.
    unsafe fn locate(&mut self, ts: i64) -> PyResult<usize> {
        if let Some(s) = self.segments.get(self.last_segment) {
            if s.start <= ts && ts < s.end {
                return Ok(self.last_segment);
            }
        }
        let i = self.segments.partition_point(|s| s.start <= ts);
        if i > 0 && ts < self.segments[i - 1].end {
            self.last_segment = i - 1;
            return Ok(i - 1);
        }
        let ts_o = O::owned(ffi::PyLong_FromLongLong(ts))?;
        let got = O::owned(ffi::PyObject_CallOneArg(self.segment.p(), ts_o.p()))?;
        let got = Bound::from_borrowed_ptr(Python::assume_gil_acquired(), got.p());
        let (start, end, day, shift, day_number): (i64, i64, Bound<PyAny>, Bound<PyAny>, i64) = got.extract()?;
        if !(start <= ts && ts < end) {
            return Err(PyTypeError::new_err("segment(ts): bounds that do not hold ts"));
        }
        let seg = Segment { start, end, day: O::new_ref(day.as_ptr()), shift: O::new_ref(shift.as_ptr()), day_number };
        let j = self.segments.partition_point(|s| s.start < start);
        // The segments met are disjoint (the calendar's shifts): a new one goes in its place.
        self.segments.insert(j, seg);
        self.last_segment = j;
        Ok(j)
    }

    /// The table's index, registered on first sight.
    ///
    /// # Safety
    /// The GIL is held; `table` is a live exact str.
    unsafe fn table_of(&mut self, table: Obj) -> usize {
        let key = Key::of(table);
        if let Some(&i) = self.tables.get(&key) {
            return i;
        }
        let i = self.table.len();
        self.table.push(Table { id: O::new_ref(table), kinds: Vec::new(), cum: (0, 0, 0.0, 0.0), series: Vec::new() });
        self.tables.insert(key, i);
        i
    }

    /// The kind of a wager at a table under its rules (`_kind`): (lk, edge, variance).
    ///
    /// # Safety
    /// The GIL is held; `wager` and `paytable` are live exact str.
    unsafe fn kind_of(&mut self, t: usize, wager: Obj, paytable: Obj) -> PyResult<(usize, f64, f64)> {
        if let Some(k) = self.table[t].kinds.iter().find(|k| eq_str(k.wager.p(), wager)) {
            if eq_str(k.paytable.p(), paytable) {
                return Ok((k.lk, k.edge, k.variance));
            }
        }
        let py = Python::assume_gil_acquired();
        let args = [self.table[t].id.p(), wager, paytable];
        let got = O::owned(ffi::PyObject_Vectorcall(self.kind.p(), args.as_ptr(), 3, std::ptr::null_mut()))?;
        let got = Bound::from_borrowed_ptr(py, got.p());
        let (lk, edge, variance): (Bound<PyAny>, f64, f64) = got.extract()?;
        let lk_paytable = lk.get_item(1)?;
        let mut found = None;
        for (i, known) in self.lks.iter().enumerate() {
            if Bound::from_borrowed_ptr(py, known.p()).eq(&lk)? {
                found = Some(i);
                break;
            }
        }
        let lk_i = match found {
            Some(i) => i,
            None => {
                self.lks.push(O::new_ref(lk.as_ptr()));
                self.lks.len() - 1
            }
        };
        let kinds = &mut self.table[t].kinds;
        kinds.retain(|k| !eq_str(k.wager.p(), wager));
        // Python's `known[0][1] != s.paytable`: the line's paytable, as `kind` gave it.
        kinds.push(Kind { wager: O::new_ref(wager), paytable: O::new_ref(lk_paytable.as_ptr()), lk: lk_i, edge, variance });
        Ok((lk_i, edge, variance))
    }

    /// A settlement's fields.
    ///
    /// # Safety
    /// The GIL is held; `o` is a live WagerSettled.
    unsafe fn read(&self, o: Obj) -> PyResult<Settled> {
        let outcome_o = str_of(field(o, self.off[6]), "outcome")?;
        let outcome = if eq_str(self.lose.p(), outcome_o) {
            0
        } else if eq_str(self.win.p(), outcome_o) {
            1
        } else if eq_str(self.push.p(), outcome_o) {
            2
        } else {
            3
        };
        let dice = if outcome != 2 {
            true
        } else {
            // books.py `decided_by_dice`: a push at a table's close or a surrender is not.
            let detail = str_of(field(o, self.off[8]), "detail")?;
            let closed = eq_str(self.closed_detail.p(), detail);
            let n = ffi::PyUnicode_GET_LENGTH(detail);
            let surrender = ffi::PyUnicode_Tailmatch(detail, self.surrender_end.p(), 0, n, 1);
            if surrender < 0 {
                return Err(fetch());
            }
            !(closed || surrender == 1)
        };
        Ok(Settled {
            stake: int_of(field(o, self.off[5]), "stake_cents")?,
            won: int_of(field(o, self.off[7]), "won_cents")?,
            outcome,
            dice,
        })
    }

    /// One group (`_settled`): `first` its first settlement.
    ///
    /// # Safety
    /// The GIL is held; `first` is a live WagerSettled.
    unsafe fn settled(&mut self, first: Obj, group: &[Settled]) -> PyResult<()> {
        let ts = int_of(field(first, self.off[2]), "ts")?;
        // A range may begin before the last day's year does: its early days are the period's.
        if ts < self.earliest || ts >= self.end {
            return Ok(());
        }
        let table = str_of(field(first, self.off[0]), "table_id")?;
        let t = self.table_of(table);
        let wager = str_of(field(first, self.off[3]), "wager")?;
        let paytable = str_of(field(first, self.off[4]), "paytable")?;
        let (lk, edge, variance) = self.kind_of(t, wager, paytable)?;
        let seg = self.locate(ts)?;
        if ts < self.start {
            let day_number = self.segments[seg].day_number;
            let i = match self.before_at.get(&(day_number, lk)) {
                Some(&i) => i,
                None => {
                    let key = self.line_key(&[self.segments[seg].day.p()], lk)?;
                    self.before.push(Line { key, sums: Sums::default(), start: day_number });
                    self.before_at.insert((day_number, lk), self.before.len() - 1);
                    self.before.len() - 1
                }
            };
            self.before[i].sums.book(group);
            return Ok(());
        }
        let seg_start = self.segments[seg].start;
        let i = match self.line_at.get(&(seg_start, t, lk)) {
            Some(&i) => i,
            None => {
                let s = &self.segments[seg];
                let key = self.line_key(&[s.day.p(), s.shift.p(), table], lk)?;
                self.lines.push(Line { key, sums: Sums::default(), start: seg_start });
                self.line_at.insert((seg_start, t, lk), self.lines.len() - 1);
                self.lines.len() - 1
            }
        };
        let (dice, handle, win) = self.lines[i].sums.book(group);
        let mut stake_squares = 0i128;
        if let Some(stake) = dice {
            // outcomes against the odds, per wager decided by the dice (books.py `unit_result`)
            let o = match self.outcome_at.get(&lk) {
                Some(&o) => o,
                None => {
                    self.outcomes.push((lk, Vec::new()));
                    self.outcome_at.insert(lk, self.outcomes.len() - 1);
                    self.outcomes.len() - 1
                }
            };
            let counts = &mut self.outcomes[o].1;
            for s in group.iter().filter(|s| s.dice) {
                let v = match s.outcome {
                    0 => 1,
                    2 => 0,
                    _ => -(s.won.div_euclid(s.stake)),
                };
                match counts.iter_mut().find(|e| e.0 == v) {
                    Some(e) => e.1 += 1,
                    None => counts.push((v, 1)),
                }
            }
            stake_squares = stake * stake;
        }
        let h = match self.hourly_at.get(&t) {
            Some(&h) => h,
            None => {
                self.hourly.push((t, vec![0; self.hours]));
                self.hourly_at.insert(t, self.hourly.len() - 1);
                self.hourly.len() - 1
            }
        };
        // ts is in the period (start <= ts < end), so its hour is one of the period's
        self.hourly[h].1[(ts - self.start).div_euclid(self.hour) as usize] += handle;
        // the table's hold through the period, against theory and its band
        let (start, bucket) = (self.start, self.bucket);
        if self.table[t].series.is_empty() {
            self.series_order.push(t);
        }
        let tb = &mut self.table[t];
        tb.cum.0 += handle;
        tb.cum.1 += win;
        tb.cum.2 += edge * (handle as f64);
        tb.cum.3 += variance * (stake_squares as f64);
        let point = (ts, tb.cum.0, tb.cum.1, tb.cum.2, tb.cum.3);
        match tb.series.last_mut() {
            Some(last) if (last.0 - start).div_euclid(bucket) == (ts - start).div_euclid(bucket) => *last = point,
            _ => tb.series.push(point),
        }
        Ok(())
    }

    /// (*head, *lk) as a tuple.
    ///
    /// # Safety
    /// The GIL is held; `head`'s objects are live.
    unsafe fn line_key(&self, head: &[Obj], lk: usize) -> PyResult<O> {
        let lk = self.lks[lk].p();
        let n = ffi::PyTuple_Size(lk);
        if n < 0 {
            return Err(fetch());
        }
        let key = O::owned(ffi::PyTuple_New(head.len() as ffi::Py_ssize_t + n))?;
        for (i, &o) in head.iter().enumerate() {
            ffi::Py_INCREF(o);
            ffi::PyTuple_SET_ITEM(key.p(), i as ffi::Py_ssize_t, o);
        }
        for j in 0..n {
            let o = ffi::PyTuple_GET_ITEM(lk, j);
            ffi::Py_INCREF(o);
            ffi::PyTuple_SET_ITEM(key.p(), head.len() as ffi::Py_ssize_t + j, o);
        }
        Ok(key)
    }
}

#[pymethods]
impl ReportBook {
    /// `ReportBook(bounds, facts, segment, kind, other, forward)`: `bounds` (period start, period
    /// end, the first instant booked, the series' bucket, an hour) in epoch ms; `facts`
    /// (WagerSettled, "lose", "win", "push", the detail of a push at a table's close, the end of
    /// one at a surrender); the Python side's `segment(ts)`, `kind(table, wager, paytable)` and
    /// `other(output)` (module docs), `other` given the outputs of the classes `forward` (exactly:
    /// no subclass), in their order.
    #[new]
    fn new(bounds: (i64, i64, i64, i64, i64), facts: [Bound<PyAny>; 6], segment: Bound<PyAny>, kind: Bound<PyAny>,
           other: Bound<PyAny>, forward: Vec<Bound<PyAny>>) -> PyResult<ReportBook> {
        let [cls, lose, win, push, closed, surrender] = facts;
        let mut off = [0usize; 9];
        for (i, name) in OFF_NAMES.iter().enumerate() {
            off[i] = offset_of(&cls, name)?;
        }
        crate::slots::check_layout(&cls)?;
        for s in [&lose, &win, &push, &closed, &surrender] {
            if !s.is_exact_instance_of::<pyo3::types::PyString>() {
                return Err(PyTypeError::new_err("ReportBook: the facts' words are str"));
            }
        }
        if bounds.3 <= 0 || bounds.4 <= 0 {
            return Err(PyTypeError::new_err("ReportBook: the bucket and the hour are positive"));
        }
        // SAFETY: the GIL is held (the arguments are bound to it); each `O` takes a new reference.
        let own = |o: &Bound<PyAny>| unsafe { O::new_ref(o.as_ptr()) };
        Ok(ReportBook {
            start: bounds.0,
            end: bounds.1,
            earliest: bounds.2,
            bucket: bounds.3,
            hour: bounds.4,
            settled_cls: own(&cls),
            off,
            lose: own(&lose),
            win: own(&win),
            push: own(&push),
            closed_detail: own(&closed),
            surrender_end: own(&surrender),
            segment: own(&segment),
            kind: own(&kind),
            other: own(&other),
            segments: Vec::new(),
            last_segment: usize::MAX,
            lks: Vec::new(),
            tables: StrMap::default(),
            table: Vec::new(),
            lines: Vec::new(),
            line_at: FxHashMap::default(),
            series_order: Vec::new(),
            forward: forward.iter().map(own).collect(),
            before: Vec::new(),
            before_at: FxHashMap::default(),
            outcomes: Vec::new(),
            outcome_at: FxHashMap::default(),
            hours: ((bounds.1 - bounds.0).max(0) + bounds.4 - 1).div_euclid(bounds.4) as usize,
            hourly: Vec::new(),
            hourly_at: FxHashMap::default(),
        })
    }

    /// `_book(outputs)`: the settlements grouped and booked, every other output to `other`.
    fn book(&mut self, outputs: &Bound<PyList>) -> PyResult<()> {
        // SAFETY: the GIL is held (`outputs` is bound to it); each output is read from the list by
        // an index below its length, borrowed while the list holds it (nothing here changes the
        // list: `other` is given each output, not the list); a settlement's slots are read only
        // after its type was compared, by identity, with the class the offsets are of.
        unsafe {
            let list = outputs.as_ptr();
            let n = ffi::PyList_GET_SIZE(list);
            // (first settlement, table, seq, wager, paytable, its settlements)
            let mut groups: Vec<(Obj, Obj, i64, Obj, Obj, Vec<Settled>)> = Vec::new();
            let mut others: Vec<O> = Vec::new();
            for i in 0..n {
                let o = ffi::PyList_GET_ITEM(list, i);
                let t = ffi::Py_TYPE(o) as Obj;
                if t != self.settled_cls.p() {
                    if self.forward.iter().any(|c| c.p() == t) {
                        others.push(O::new_ref(o));
                    }
                    continue;
                }
                let table = str_of(field(o, self.off[0]), "table_id")?;
                let seq = int_of(field(o, self.off[1]), "seq")?;
                let wager = str_of(field(o, self.off[3]), "wager")?;
                let paytable = str_of(field(o, self.off[4]), "paytable")?;
                let s = self.read(o)?;
                match groups.iter_mut().find(|g| g.2 == seq && eq_str(g.1, table) && eq_str(g.3, wager)
                    && eq_str(g.4, paytable)) {
                    Some(g) => g.5.push(s),
                    None => groups.push((o, table, seq, wager, paytable, vec![s])),
                }
            }
            for o in others {
                O::owned(ffi::PyObject_CallOneArg(self.other.p(), o.p()))?;
            }
            // The outputs (and so each group's first settlement) stay alive: the list holds them.
            for (first, _, _, _, _, group) in &groups {
                self.settled(*first, group)?;
            }
        }
        Ok(())
    }

    /// A table's kinds forgotten (its rules changed: `ReportPass._alone`).
    fn forget(&mut self, table: &Bound<PyAny>) -> PyResult<()> {
        if !table.is_exact_instance_of::<pyo3::types::PyString>() {
            return Ok(());
        }
        // SAFETY: the GIL is held; `table` is a live exact str.
        let key = unsafe { Key::of(table.as_ptr()) };
        if let Some(&t) = self.tables.get(&key) {
            self.table[t].kinds.clear();
        }
        Ok(())
    }

    /// The start of the shift of the latest settlement booked (None before any).
    fn current(&self) -> Option<i64> {
        self.segments.get(self.last_segment).map(|s| s.start)
    }

    /// How many of the period's lines the book holds.
    fn held(&self) -> usize {
        self.lines.len()
    }

    /// The period's lines whose shift began before `low` or at or after `high`, as `rows()` gives
    /// them (in the order first met), taken out of the book: a line met again after this starts
    /// from nothing, and its parts add up (books.py `Line.merge`).
    fn take_lines(&mut self, py: Python<'_>, low: i64, high: i64) -> PyResult<Py<PyAny>> {
        let taken = PyList::empty(py);
        let mut kept = Vec::with_capacity(self.lines.len());
        for line in self.lines.drain(..) {
            if line.start < low || line.start >= high {
                taken.append(line.sums.row(py, &line.key)?)?;
            } else {
                kept.push(line);
            }
        }
        self.lines = kept;
        // The index again, of the lines kept: (segment's start, table, lk) -> position.
        let mut at = FxHashMap::default();
        for (&k, &i) in self.line_at.iter() {
            if k.0 >= low && k.0 < high {
                at.insert(k, i);
            }
        }
        let mut order: Vec<((i64, usize, usize), usize)> = at.into_iter().collect();
        order.sort_by_key(|&(_, i)| i);
        self.line_at = order.into_iter().enumerate().map(|(n, (k, _))| (k, n)).collect();
        Ok(taken.into_any().unbind())
    }

    /// The books as plain data, each list in the order its entries were first met: `(lines,
    /// before, outcomes, hourly, series)`. A line is `(key, money, decisions, stakes)`: money
    /// `(settled, handle, returned, collected, won, wins, losses, pushes)` (`HoldLine`'s fields),
    /// decisions `(decisions, dice handle, dice house win)`, stakes a dict; an outcome `(lk,
    /// {unit result: wagers})`; an hourly entry `(table, handle by hour of the period)`, the handles
    /// as bytes of 64-bit integers in the machine's order (a list of ints where one does not fit
    /// 64 bits); a series `(table, [[ts, handle, house win, expected, variance], ...])`.
    fn rows(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let lines = PyList::empty(py);
        for l in &self.lines {
            lines.append(l.sums.row(py, &l.key)?)?;
        }
        let before = PyList::empty(py);
        for l in &self.before {
            before.append(l.sums.row(py, &l.key)?)?;
        }
        // SAFETY: the GIL is held (`py`); every object borrowed is owned by the book.
        let b = |o: &O| unsafe { Bound::from_borrowed_ptr(py, o.p()) };
        let outcomes = PyList::empty(py);
        for (lk, counts) in &self.outcomes {
            let d = PyDict::new(py);
            for &(v, c) in counts {
                d.set_item(v, c)?;
            }
            outcomes.append((b(&self.lks[*lk]), d))?;
        }
        let hourly = PyList::empty(py);
        for (t, cents) in &self.hourly {
            // 64-bit integers in the machine's order (Python's array('q')), or ints where one is wider
            let table = b(&self.table[*t].id);
            if cents.iter().all(|&c| i64::try_from(c).is_ok()) {
                let bytes: Vec<u8> = cents.iter().flat_map(|&c| (c as i64).to_ne_bytes()).collect();
                hourly.append((table, PyBytes::new(py, &bytes)))?;
            } else {
                hourly.append((table, PyList::new(py, cents.iter().copied())?))?;
            }
        }
        let series = PyList::empty(py);
        for &t in &self.series_order {
            let t = &self.table[t];
            let points = PyList::empty(py);
            for &(ts, handle, win, expected, variance) in &t.series {
                points.append(PyList::new(py, [ts.into_pyobject(py)?.into_any(), handle.into_pyobject(py)?.into_any(),
                                               win.into_pyobject(py)?.into_any(), expected.into_pyobject(py)?.into_any(),
                                               variance.into_pyobject(py)?.into_any()])?)?;
            }
            series.append((b(&t.id), points))?;
        }
        Ok((lines, before, outcomes, hourly, series).into_pyobject(py)?.into_any().unbind())
    }
}
