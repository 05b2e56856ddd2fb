//! A table's state and its common path (craps_streams/rules/table.py): in-order events of an open table
//! with nothing held. `step` returns None for every other case, before changing anything (every
//! check first, as the Python core does), and the caller hands the event to the Python core.

use crate::bonus_craps::BonusCohort;
use crate::ctx::{field, Ctx};
use crate::fire_bet::FireCohort;
use crate::hot_roller::HotRollerCohort;
use crate::hot_shooter::HotShooterCohort;
use crate::py::*;
use crate::rules::{Rules, MAX_STAKE};
use crate::wager::*;
use pyo3::ffi;
use pyo3::prelude::*;
use std::rc::Rc;

/// § 623a.11(b)(1): Fire Bet minimum $1, maximum $5, in $1 increments.

#[pyclass(unsendable, module = "craps_streams.accelerator._native", name = "Table")]
pub struct Table {
    pub table_id: O,
    pub table_kind: O,
    pub rules: Rc<Rules>,
    pub rules_record: O,
    /// § 623c.4(a): Hot Shooter only on fully automated electronic or hybrid tables.
    /// Per wager kind: does this table's kind offer it (§ 623c.4(a); `Ctx::table_kinds`)?
    pub offered: [bool; 6],
    #[pyo3(get, set)]
    pub opened_seq: i64,
    #[pyo3(get, set)]
    pub last_seq: i64,
    #[pyo3(get, set)]
    pub closed: bool,
    pub shooter_id: Option<O>,
    #[pyo3(get, set)]
    pub shooter_position: i64,
    #[pyo3(get, set)]
    pub shooter_throws: i64, // valid throws by the current shooter
    #[pyo3(get, set)]
    pub hand: i64, // shooters announced since the table opened
    #[pyo3(get, set)]
    pub must_pass: bool, // the shooter sevened out (§ 623a.10(a)(1))
    #[pyo3(get, set)]
    pub point: i64, // 0: off
    #[pyo3(get, set)]
    pub come_bets_only: bool, // § 623a.10(b)
    #[pyo3(get, set)]
    pub cycle_fresh: bool, // no valid throw since the last 7 or the shooter change
    #[pyo3(get, set)]
    pub fire_alerted: bool, // the four-point alert went out in this hand (to the seven-out)
    pub open_fire: Option<FireCohort>,
    pub open_bonus: Option<BonusCohort>,
    pub open_hot_roller: Option<HotRollerCohort>,
    pub open_hot_shooter: Option<HotShooterCohort>,
    pub fire: Vec<FireCohort>,
    pub bonus: Vec<BonusCohort>,
    pub hot_roller: Vec<HotRollerCohort>,
    pub hot_shooter: Vec<HotShooterCohort>,
    pub pending: StrMap<()>,
    #[pyo3(get, set)]
    pub duplicates: i64,
    #[pyo3(get, set)]
    pub received_seq: i64,
    #[pyo3(get, set)]
    pub throws: i64, // valid throws since the table first opened
    #[pyo3(get, set)]
    pub last_throw_ts: i64,
}

/// § 623a.10(b): whether a total is a point number (the Python core's `POINT_NUMBERS`, a fact).
#[inline]
fn is_point(c: &Ctx, total: i64) -> bool {
    (4..=10).contains(&total) && c.points >> total & 1 == 1
}

/// Which wager kind a str is (by identity, else by value), or None.
///
/// # Safety
/// The GIL is held, and every object it is given is live for the call.
#[inline(always)]
pub(crate) unsafe fn kind_of(c: &Ctx, o: Obj) -> Option<u8> {
    let k = &c.kinds;
    for (i, &p) in k.iter().enumerate() {
        if p == o {
            return Some(i as u8);
        }
    }
    if ffi::PyUnicode_Check(o) == 0 {
        return None;
    }
    k.iter().position(|&p| ffi::PyUnicode_Compare(p, o) == 0).map(|i| i as u8)
}

/// # Safety
/// The GIL is held.
unsafe fn cohort_id(group: usize, seq: i64) -> PyResult<O> {
    let mut id = crate::ctx::GROUP_NAMES[group].as_bytes().to_vec();
    id.push(b'-');
    push_int(&mut id, seq);
    ascii_str(&id, b"")
}

/// A WagerPlaced's fields the core reads (borrowed).
pub struct WagerIn {
    pub seq: Obj,
    pub wager_id: Obj,
    pub position: Obj,
    pub kind: Obj,
    pub amount: Obj,
}

/// A ShooterChanged's fields the core reads (borrowed).
pub struct ShooterIn {
    pub seq: Obj,
    pub shooter_id: Obj,
    pub position: Obj,
    pub reason: Obj,
}

impl Table {
    // ------------------------------------------------------------ the common path

    /// One event: Some(outputs) when judged here, None for the Python core (nothing changed).
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    #[inline(always)]
    pub unsafe fn step(&mut self, c: &Ctx, e: Obj) -> PyResult<Option<Vec<O>>> {
        let t = ffi::Py_TYPE(e) as Obj;
        if t == c.t_wager {
            self.wager_placed(c, e)
        } else if t == c.t_dice {
            self.dice_thrown(c, e)
        } else if t == c.t_shooter {
            self.shooter_changed(c, e)
        } else if t == c.t_come {
            self.come_bets_only_set(c, e)
        } else {
            Ok(None) // TableOpened, TableClosed, WagerChangeRequested, anything else
        }
    }

    /// `_on_come_bets_only` for an accepted change of the mode; a refused one is the Python core's
    /// to reject, in its words.
    ///
    /// # Safety
    /// The GIL is held, and `e` is exactly a ComeBetsOnly (its type compared by `step`): its slots are read (slots.rs, invariant 1).
    unsafe fn come_bets_only_set(&mut self, c: &Ctx, e: Obj) -> PyResult<Option<Vec<O>>> {
        let o = &c.o_come;
        let Some((_, seq)) = self.next_seq(e, o.seq) else { return Ok(None) };
        if self.closed {
            return Ok(None);
        }
        let active = field(e, o.a);
        let active = if active == ffi::Py_True() {
            true
        } else if active == ffi::Py_False() {
            false
        } else {
            return Ok(None);
        };
        let ok = if active {
            // § 623a.10(b): only after the shooter made the come-out point, with the point off.
            self.shooter_id.is_some() && !self.must_pass && self.point == 0 && self.shooter_throws > 0
                && !self.come_bets_only
        } else {
            self.come_bets_only
        };
        if !ok {
            return Ok(None); // come_bets_only_not_allowed
        }
        self.last_seq = seq;
        self.come_bets_only = active;
        self.received_seq = seq;
        Ok(Some(Vec::new()))
    }

    /// The event's seq if it is the feed's next (in order, nothing held: native never holds).
    ///
    /// # Safety
    /// The GIL is held and `e` is an instance of exactly the class whose field offset `off` is (slots.rs, invariant 1).
    #[inline(always)]
    unsafe fn next_seq(&self, e: Obj, off: usize) -> Option<(Obj, i64)> {
        self.next(field(e, off))
    }

    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    #[inline(always)]
    unsafe fn next(&self, seq_o: Obj) -> Option<(Obj, i64)> {
        match exact_int(seq_o) {
            Some(seq) if Some(seq) == self.received_seq.checked_add(1) => Some((seq_o, seq)),
            _ => None,
        }
    }

    /// # Safety
    /// The GIL is held, and `e` is exactly a WagerPlaced (its type compared by `step`): its slots are read (slots.rs, invariant 1).
    #[inline(always)]
    unsafe fn wager_placed(&mut self, c: &Ctx, e: Obj) -> PyResult<Option<Vec<O>>> {
        let o = &c.o_wager;
        self.place(c, WagerIn { seq: field(e, o.seq), wager_id: field(e, o.a), position: field(e, o.b),
                             kind: field(e, o.c), amount: field(e, o.d) })
    }

    /// `apply`'s inline placing of an accepted in-order wager (`_on_wager_placed`'s checks), from
    /// a WagerPlaced's fields (its Struct's, or a JSON line's: lane.rs).
    ///
    /// # Safety
    /// The GIL is held, and the objects of `w` are live for the call (borrowed from the event or line being applied).
    #[inline(always)]
    pub unsafe fn place(&mut self, c: &Ctx, w: WagerIn) -> PyResult<Option<Vec<O>>> {
        let Some((seq_o, seq)) = self.next(w.seq) else { return Ok(None) };
        if self.closed {
            return Ok(None);
        }
        let kind_o = w.kind;
        let Some(kind) = kind_of(c, kind_o) else { return Ok(None) };
        let wager_id = w.wager_id;
        let position = w.position;
        let amount = w.amount;
        let (Some(p), Some(a)) = (exact_int(position), exact_int(amount)) else { return Ok(None) };
        if !is_str(wager_id) || !(c.positions.0..=c.positions.1).contains(&p) || a <= 0 || a > MAX_STAKE {
            return Ok(None);
        }
        // § 623a.11(b)(1): the Fire Bet's stakes.
        let (low, high, step) = c.fire_stakes;
        if kind == FIRE && !((low..=high).contains(&a) && a % step == 0) {
            return Ok(None);
        }
        // § 623c.4(a): a kind offered only at some kinds of table.
        if !self.offered[kind as usize] {
            return Ok(None);
        }
        // The table's limits (craps_streams/rules/table.py `_stake_problem`): a stake outside them is
        // the Python core's to reject, in its words.
        if let Some((low, high)) = self.rules.limits[kind as usize] {
            if !(low..=high).contains(&a) {
                return Ok(None);
            }
        }
        if self.come_bets_only {
            return Ok(None);
        }
        let group = GROUP_OF[kind as usize];
        let window_open = match group {
            // § 623a.11(a)(1), § 623a.12(1): before a new shooter's initial come-out roll.
            0 | 1 => self.must_pass || self.shooter_throws == 0,
            // § 623c.1(b): only before the come-out roll, of a fresh cycle (shared markers).
            2 => self.point == 0 && self.cycle_fresh,
            // § 623c.4(c): before the come-out roll, while the point is off.
            _ => self.point == 0,
        };
        if !window_open {
            return Ok(None);
        }
        let key = Key::of(wager_id);
        if self.pending.contains_key(&key) {
            return Ok(None); // duplicate_wager_id
        }
        // Accepted: from here on the state changes.
        let w = Wager {
            id: O::new_ref(wager_id),
            position: O::new_ref(position),
            position_i: p,
            kind,
            kind_o: O::new_ref(kind_o),
            amount: O::new_ref(amount),
            amount_i: a,
            placed_seq: O::new_ref(seq_o),
        };
        match group {
            0 => {
                if self.open_fire.is_none() {
                    self.open_fire = Some(FireCohort { id: cohort_id(0, seq)?, wagers: Vec::with_capacity(16), points: Vec::new() });
                }
                self.open_fire.as_mut().unwrap().wagers.push(w);
            }
            1 => {
                if self.open_bonus.is_none() {
                    self.open_bonus = Some(BonusCohort { id: cohort_id(1, seq)?, wagers: Vec::with_capacity(48), marks: 0 });
                }
                self.open_bonus.as_mut().unwrap().wagers.push(w);
            }
            2 => {
                if self.open_hot_roller.is_none() {
                    self.open_hot_roller = Some(HotRollerCohort { id: cohort_id(2, seq)?, wagers: Vec::with_capacity(16), marks: 0 });
                }
                self.open_hot_roller.as_mut().unwrap().wagers.push(w);
            }
            _ => {
                if self.open_hot_shooter.is_none() {
                    self.open_hot_shooter = Some(HotShooterCohort { id: cohort_id(3, seq)?, wagers: Vec::with_capacity(16), throws: 0 });
                }
                self.open_hot_shooter.as_mut().unwrap().wagers.push(w);
            }
        }
        self.pending.insert(key, ());
        self.last_seq = seq;
        self.received_seq = seq;
        Ok(Some(Vec::new()))
    }

    /// # Safety
    /// The GIL is held, and `e` is exactly a ShooterChanged (its type compared by `step`): its slots are read (slots.rs, invariant 1).
    #[inline(always)]
    unsafe fn shooter_changed(&mut self, c: &Ctx, e: Obj) -> PyResult<Option<Vec<O>>> {
        let o = &c.o_shooter;
        self.change_shooter(c, ShooterIn { seq: field(e, o.seq), shooter_id: field(e, o.a), position: field(e, o.b),
                                        reason: field(e, o.c) })
    }

    /// `_on_shooter_changed` for an accepted change that settles nothing (§ 623a.10), from a
    /// ShooterChanged's fields (its Struct's, or a JSON line's: lane.rs).
    ///
    /// # Safety
    /// The GIL is held, and the objects of `s` are live for the call (borrowed from the event or line being applied).
    pub unsafe fn change_shooter(&mut self, c: &Ctx, s: ShooterIn) -> PyResult<Option<Vec<O>>> {
        let Some((_, seq)) = self.next(s.seq) else { return Ok(None) };
        if self.closed {
            return Ok(None);
        }
        let Some(p) = exact_int(s.position) else { return Ok(None) };
        let shooter_id = s.shooter_id;
        if !(c.positions.0..=c.positions.1).contains(&p) || !is_str(shooter_id) {
            return Ok(None);
        }
        let reason = s.reason;
        let ends_hand;
        let ok = if same_str(c.sc_table_open, reason) {
            ends_hand = true;
            self.shooter_id.is_none()
        } else if same_str(c.sc_seven_out, reason) {
            ends_hand = true;
            self.must_pass
        } else if same_str(c.sc_voluntary, reason) || same_str(c.sc_compulsory, reason) {
            // § 623a.11(a)(2): wagers in action stay with the successor shooter, unless the Rules
            // Submission pushes a kind (then the Python core settles the surrender).
            ends_hand = false;
            self.shooter_id.is_some() && !self.must_pass && !self.rules.any_surrender_push
        } else {
            return Ok(None); // unknown_reason
        };
        if !ok {
            return Ok(None); // reason_mismatch
        }
        self.last_seq = seq;
        self.shooter_id = Some(O::new_ref(shooter_id));
        self.shooter_position = p;
        self.shooter_throws = 0;
        self.hand += 1;
        self.must_pass = false;
        self.come_bets_only = false;
        self.cycle_fresh = true;
        if ends_hand {
            // § 623a.11(a)(6) once per hand: only a seven-out ends the hand.
            self.fire_alerted = false;
        }
        self.received_seq = seq;
        Ok(Some(Vec::new()))
    }

    /// `_on_dice_thrown` for an accepted throw, valid or not.
    ///
    /// # Safety
    /// The GIL is held, and `e` is exactly a DiceThrown (its type compared by `step`): its slots are read (slots.rs, invariant 1).
    unsafe fn dice_thrown(&mut self, c: &Ctx, e: Obj) -> PyResult<Option<Vec<O>>> {
        let o = &c.o_dice;
        let Some((seq_o, seq)) = self.next_seq(e, o.seq) else { return Ok(None) };
        if self.closed {
            return Ok(None);
        }
        let (Some(d1), Some(d2)) = (exact_int(field(e, o.a)), exact_int(field(e, o.b))) else { return Ok(None) };
        if !((1..=6).contains(&d1) && (1..=6).contains(&d2)) || self.shooter_id.is_none() || self.must_pass {
            return Ok(None); // die_out_of_range, no_shooter, shooter_sevened_out (§ 623a.10(a)(1))
        }
        let valid = field(e, o.c);
        let table_id = field(e, o.table_id);
        let ts = field(e, o.ts);
        let ts_i = exact_int(ts);
        if valid == ffi::Py_False() {
            // § 623a.8: an invalid roll counts for nothing, windows included.
            self.last_seq = seq;
            self.received_seq = seq;
            return Ok(Some(Vec::new()));
        }
        if valid != ffi::Py_True() || !is_str(table_id) || ts_i.is_none() {
            return Ok(None);
        }
        // Accepted: from here on the state changes.
        self.last_seq = seq;
        self.throws += 1;
        self.last_throw_ts = ts_i.unwrap();
        // The throw closes every open window; its wagers are in action from this throw on.
        if let Some(x) = self.open_fire.take() {
            self.fire.push(x);
        }
        if let Some(x) = self.open_bonus.take() {
            self.bonus.push(x);
        }
        if let Some(x) = self.open_hot_roller.take() {
            self.hot_roller.push(x);
        }
        if let Some(x) = self.open_hot_shooter.take() {
            self.hot_shooter.push(x);
        }
        self.shooter_throws += 1;
        self.cycle_fresh = false;
        for h in self.hot_shooter.iter_mut() {
            h.throws += 1;
        }
        let total = d1 + d2;
        let point = self.point;
        let rules = self.rules.clone();
        let ev = Ev { table_id, seq: seq_o, seq_i: seq, ts };
        let mut em = Emit::new(c, ev, &mut self.pending, rules.large_win);

        if total == 7 {
            // § 623a.12(5): any 7 collects every Bonus Craps wager and clears its markers.
            let seven_out = point != 0;
            if seven_out {
                em.forget = false; // every wager in action is settled: forgotten at once below
            }
            for mut b in std::mem::take(&mut self.bonus) {
                b.seven(&rules.bonus_name, &mut em)?;
            }
            // § 623c.1(g): every Hot Roller wager is settled by a 7; a come-out 7 loses (literal
            // reading) unless the Rules Submission pays it by the table.
            let pays = seven_out || rules.come_out_seven_pays;
            for h in std::mem::take(&mut self.hot_roller) {
                h.seven(&rules.hot_roller, pays, &mut em)?;
            }
            self.cycle_fresh = true;
            if seven_out {
                // § 623a.11(a)(5): the Fire Bet at the loser 7; § 623c.4(d): Hot Shooter too.
                for f in std::mem::take(&mut self.fire) {
                    f.seven_out(&rules.fire, &mut em)?;
                }
                for h in std::mem::take(&mut self.hot_shooter) {
                    h.seven_out(&rules.hot_shooter, &mut em)?;
                }
                self.point = 0;
                self.must_pass = true;
                em.pending.clear();
            }
        } else {
            if !self.hot_roller.is_empty() {
                let (low, high) = if d1 <= d2 { (d1, d2) } else { (d2, d1) };
                for h in self.hot_roller.iter_mut() {
                    h.dice_thrown(low, high, &mut em)?;
                }
            }
            if !self.bonus.is_empty() {
                let mut emptied = false;
                for b in self.bonus.iter_mut() {
                    b.total_thrown(total, &rules.bonus_name, &rules.bonus_odds, &mut em)?;
                    emptied |= b.wagers.is_empty();
                }
                if emptied {
                    for b in &self.bonus {
                        if b.wagers.is_empty() {
                            em.cleared(c.groups[1], b.id.p(), c.r_settled)?;
                        }
                    }
                    self.bonus.retain(|b| !b.wagers.is_empty());
                }
            }
            if point == 0 {
                // § 623a.10(b): with the on/off marker off no pass-line point is established.
                if is_point(c, total) && !self.come_bets_only {
                    self.point = total;
                }
            } else if total == point {
                self.point = 0;
                let mut reached_four = false;
                for f in self.fire.iter_mut() {
                    reached_four |= f.point_made(point, &mut em)?;
                }
                if reached_four && !self.fire_alerted {
                    self.fire_alerted = true;
                    alert_four_points(&self.fire, self.shooter_id.as_ref().unwrap(), self.shooter_position, &mut em)?;
                }
            }
        }
        if !em.wins.is_empty() {
            em.large_wins(self.shooter_id.as_ref().unwrap().p())?;
        }
        let out = std::mem::take(&mut em.out);
        drop(em);
        self.received_seq = seq;
        Ok(Some(out))
    }
}

/// § 623a.11(a)(6): surveillance confirms every Fire Bet once four unique points are made.
/// Worded by `table.four_points_message(table_id, shooter_id, position, wagers, cohorts)`, with
/// `cohorts` a list of (cohort id, points made).
///
/// # Safety
/// The GIL is held, and every object it is given is live for the call.
unsafe fn alert_four_points(fire: &[FireCohort], shooter: &O, position: i64, em: &mut Emit) -> PyResult<()> {
    let c = em.c;
    let ids: Vec<Obj> = fire.iter().flat_map(|f| f.wagers.iter().map(|w| w.id.p())).collect();
    let mut cohorts = Vec::with_capacity(fire.len());
    for f in fire {
        let points = O::owned(new_int(f.points.len() as i64))?;
        cohorts.push(tuple_of(&[f.id.p(), points.p()])?);
    }
    let cohorts = list_of(cohorts)?;
    let (position, wagers) = (O::owned(new_int(position))?, O::owned(new_int(ids.len() as i64))?);
    let msg = call(c.four_points_message, &[em.ev.table_id, shooter.p(), position.p(), wagers.p(), cohorts.p()])?;
    let tuple = tuple_of(&ids)?;
    em.alert(c.a_four, shooter.p(), msg.p(), tuple.p())
}

// ---------------------------------------------------------------- records

/// # Safety
/// The GIL is held.
unsafe fn wager_record(w: &Wager) -> PyResult<O> {
    let l = O::owned(ffi::PyList_New(5))?;
    for (i, o) in [&w.id, &w.position, &w.kind_o, &w.amount, &w.placed_seq].iter().enumerate() {
        ffi::PyList_SET_ITEM(l.p(), i as ffi::Py_ssize_t, O::new_ref(o.p()).into_ptr());
    }
    Ok(l)
}

/// # Safety
/// The GIL is held, and every object it is given is live for the call.
unsafe fn cohort_record(c: &Ctx, id: &O, marks: O, wagers: &[Wager]) -> PyResult<O> {
    let k = &c.k;
    let d = O::owned(ffi::PyDict_New())?;
    set_item(d.p(), k.cohort_id, id.clone())?;
    set_item(d.p(), k.marks, marks)?;
    let ws = wagers.iter().map(|w| wager_record(w)).collect::<PyResult<Vec<O>>>()?;
    set_item(d.p(), k.wagers, list_of(ws)?)?;
    Ok(d)
}

/// # Safety
/// The GIL is held.
unsafe fn int_list(v: &[i64]) -> PyResult<O> {
    list_of(v.iter().map(|&x| O::owned(new_int(x))).collect::<PyResult<Vec<O>>>()?)
}

fn none() -> O {
    // SAFETY: None is immortal-lived; its reference count is incremented for the `O`, which is
    // made and dropped under the GIL as every `O`.
    unsafe { O::new_ref(ffi::Py_None()) }
}

trait CohortRecord {
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    unsafe fn record(&self, c: &Ctx) -> PyResult<O>;
}
impl CohortRecord for FireCohort {
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    unsafe fn record(&self, c: &Ctx) -> PyResult<O> {
        cohort_record(c, &self.id, int_list(&self.points)?, &self.wagers)
    }
}
impl CohortRecord for BonusCohort {
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    unsafe fn record(&self, c: &Ctx) -> PyResult<O> {
        cohort_record(c, &self.id, int_list(&crate::bonus_craps::marked_totals(self.marks))?, &self.wagers)
    }
}
impl CohortRecord for HotRollerCohort {
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    unsafe fn record(&self, c: &Ctx) -> PyResult<O> {
        cohort_record(c, &self.id, O::owned(new_int(self.marks as i64))?, &self.wagers)
    }
}
impl CohortRecord for HotShooterCohort {
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    unsafe fn record(&self, c: &Ctx) -> PyResult<O> {
        cohort_record(c, &self.id, O::owned(new_int(self.throws))?, &self.wagers)
    }
}

/// # Safety
/// The GIL is held, and every object it is given is live for the call.
unsafe fn open_record<T: CohortRecord>(c: &Ctx, open: &Option<T>) -> PyResult<O> {
    match open {
        Some(x) => x.record(c),
        None => Ok(none()),
    }
}

/// # Safety
/// The GIL is held.
unsafe fn list_record<T: CohortRecord>(c: &Ctx, v: &[T]) -> PyResult<O> {
    list_of(v.iter().map(|x| x.record(c)).collect::<PyResult<Vec<O>>>()?)
}

impl Table {
    /// Exactly `TableState.to_record()` of the same history (the same keys, in the same order).
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    pub unsafe fn record(&self, c: &Ctx) -> PyResult<O> {
        let k = &c.k;
        let d = O::owned(ffi::PyDict_New())?;
        let dd = d.p();
        let int = |v: i64| O::owned(new_int(v));
        set_item(dd, k.table_id, self.table_id.clone())?;
        set_item(dd, k.table_kind, self.table_kind.clone())?;
        set_item(dd, k.rules, self.rules_record.clone())?;
        set_item(dd, k.opened_seq, int(self.opened_seq)?)?;
        set_item(dd, k.last_seq, int(self.last_seq)?)?;
        set_item(dd, k.closed, O(new_bool(self.closed)))?;
        set_item(dd, k.shooter_id, self.shooter_id.clone().unwrap_or_else(none))?;
        set_item(dd, k.shooter_position, int(self.shooter_position)?)?;
        set_item(dd, k.shooter_throws, int(self.shooter_throws)?)?;
        set_item(dd, k.hand, int(self.hand)?)?;
        set_item(dd, k.must_pass, O(new_bool(self.must_pass)))?;
        set_item(dd, k.point, int(self.point)?)?;
        set_item(dd, k.come_bets_only, O(new_bool(self.come_bets_only)))?;
        set_item(dd, k.cycle_fresh, O(new_bool(self.cycle_fresh)))?;
        set_item(dd, k.fire_alerted, O(new_bool(self.fire_alerted)))?;
        let open = O::owned(ffi::PyDict_New())?;
        set_item(open.p(), c.groups[0], open_record(c, &self.open_fire)?)?;
        set_item(open.p(), c.groups[1], open_record(c, &self.open_bonus)?)?;
        set_item(open.p(), c.groups[2], open_record(c, &self.open_hot_roller)?)?;
        set_item(open.p(), c.groups[3], open_record(c, &self.open_hot_shooter)?)?;
        set_item(dd, k.open_cohorts, open)?;
        let cs = O::owned(ffi::PyDict_New())?;
        set_item(cs.p(), c.groups[0], list_record(c, &self.fire)?)?;
        set_item(cs.p(), c.groups[1], list_record(c, &self.bonus)?)?;
        set_item(cs.p(), c.groups[2], list_record(c, &self.hot_roller)?)?;
        set_item(cs.p(), c.groups[3], list_record(c, &self.hot_shooter)?)?;
        set_item(dd, k.cohorts, cs)?;
        set_item(dd, k.duplicates, int(self.duplicates)?)?;
        set_item(dd, k.received_seq, int(self.received_seq)?)?;
        set_item(dd, k.held, O::owned(ffi::PyList_New(0))?)?;
        set_item(dd, k.throws, int(self.throws)?)?;
        set_item(dd, k.last_throw_ts, int(self.last_throw_ts)?)?;
        Ok(d)
    }

    /// The table of a `TableState.to_record()`, or None when it holds what the native core does
    /// not keep (held events, odd types, rules it does not take): that table stays Python.
    /// `reuse`: rules already parsed for this very rules record object.
    ///
    /// # Safety
    /// The GIL is held, and every object it is given is live for the call.
    pub unsafe fn of_record(c: &Ctx, r: Obj, reuse: Option<(&O, &Rc<Rules>)>) -> PyResult<Option<Table>> {
        let k = &c.k;
        if ffi::PyDict_CheckExact(r) == 0 {
            return Ok(None);
        }
        macro_rules! get {
            ($key:expr) => {
                match get_item(r, $key) {
                    Some(v) => v,
                    None => return Ok(None),
                }
            };
        }
        macro_rules! int {
            ($o:expr) => {
                match exact_int($o) {
                    Some(v) => v,
                    None => return Ok(None),
                }
            };
        }
        macro_rules! boolean {
            ($o:expr) => {{
                let o = $o;
                if o == ffi::Py_True() {
                    true
                } else if o == ffi::Py_False() {
                    false
                } else {
                    return Ok(None);
                }
            }};
        }
        let table_id = get!(k.table_id);
        let table_kind = get!(k.table_kind);
        let rules_record = get!(k.rules);
        if !is_str(table_id) {
            return Ok(None);
        }
        let rules = match reuse {
            // The same record, read under the same facts (a context installed since may have
            // another push band: the one fact a `Rules` keeps).
            Some((rec, rules)) if rec.p() == rules_record && rules.fire.push_odds == c.push_odds => rules.clone(),
            _ => {
                let obj = call(c.rules_from_record, &[rules_record])?;
                match Rules::of(c, obj.p())? {
                    Some(x) => Rc::new(x),
                    None => return Ok(None),
                }
            }
        };
        let last_seq = int!(get!(k.last_seq));
        let received_seq = match get_item(r, k.received_seq) {
            Some(v) => int!(v),
            None => last_seq,
        };
        if let Some(h) = get_item(r, k.held) {
            if ffi::PyObject_Length(h) != 0 {
                ffi::PyErr_Clear();
                return Ok(None); // events held beyond a gap: the Python core's (the feed)
            }
        }
        let opt_int = |key: Obj| -> Option<i64> {
            match get_item(r, key) {
                Some(v) => exact_int(v),
                None => Some(0),
            }
        };
        let (Some(throws), Some(last_throw_ts)) = (opt_int(k.throws), opt_int(k.last_throw_ts)) else { return Ok(None) };
        let shooter = get!(k.shooter_id);
        let shooter_id = if shooter == ffi::Py_None() {
            None
        } else if is_str(shooter) {
            Some(O::new_ref(shooter))
        } else {
            return Ok(None);
        };
        let offered = c.table_kinds.each_ref().map(|kinds| match kinds {
            None => true,
            Some(kinds) => kinds.iter().any(|&k| same_str(k, table_kind)),
        });
        let mut t = Table {
            table_id: O::new_ref(table_id),
            table_kind: O::new_ref(table_kind),
            rules,
            rules_record: O::new_ref(rules_record),
            offered,
            opened_seq: int!(get!(k.opened_seq)),
            last_seq,
            closed: boolean!(get!(k.closed)),
            shooter_id,
            shooter_position: int!(get!(k.shooter_position)),
            shooter_throws: int!(get!(k.shooter_throws)),
            hand: int!(get!(k.hand)),
            must_pass: boolean!(get!(k.must_pass)),
            point: int!(get!(k.point)),
            come_bets_only: boolean!(get!(k.come_bets_only)),
            cycle_fresh: boolean!(get!(k.cycle_fresh)),
            fire_alerted: boolean!(get!(k.fire_alerted)),
            open_fire: None,
            open_bonus: None,
            open_hot_roller: None,
            open_hot_shooter: None,
            fire: Vec::new(),
            bonus: Vec::new(),
            hot_roller: Vec::new(),
            hot_shooter: Vec::new(),
            pending: StrMap::default(),
            duplicates: int!(get!(k.duplicates)),
            received_seq,
            throws,
            last_throw_ts,
        };
        if t.point != 0 && !is_point(c, t.point) {
            return Ok(None);
        }
        let open = get!(k.open_cohorts);
        let cohorts = get!(k.cohorts);
        if ffi::PyDict_CheckExact(open) == 0 || ffi::PyDict_CheckExact(cohorts) == 0
            || ffi::PyDict_Size(open) != 4 || ffi::PyDict_Size(cohorts) != 4
        {
            return Ok(None);
        }
        for g in 0..4 {
            let (Some(o), Some(l)) = (get_item(open, c.groups[g]), get_item(cohorts, c.groups[g])) else { return Ok(None) };
            if ffi::PyList_CheckExact(l) == 0 {
                return Ok(None);
            }
            let mut recs: Vec<(bool, Obj)> = Vec::new();
            if o != ffi::Py_None() {
                recs.push((true, o));
            }
            for i in 0..ffi::PyList_GET_SIZE(l) {
                recs.push((false, ffi::PyList_GET_ITEM(l, i)));
            }
            for (is_open, rec) in recs {
                if !t.add_cohort(c, g, is_open, rec)? {
                    return Ok(None);
                }
            }
        }
        Ok(Some(t))
    }

    /// One cohort of a record (`COHORT_CLASS[g].from_record`); false when the native core does
    /// not keep it.
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    unsafe fn add_cohort(&mut self, c: &Ctx, g: usize, is_open: bool, rec: Obj) -> PyResult<bool> {
        let k = &c.k;
        if ffi::PyDict_CheckExact(rec) == 0 {
            return Ok(false);
        }
        let (Some(id), Some(marks), Some(wagers)) = (get_item(rec, k.cohort_id), get_item(rec, k.marks), get_item(rec, k.wagers))
        else {
            return Ok(false);
        };
        if !is_str(id) || ffi::PyList_CheckExact(wagers) == 0 {
            return Ok(false);
        }
        let mut ws = Vec::new();
        for i in 0..ffi::PyList_GET_SIZE(wagers) {
            let w = ffi::PyList_GET_ITEM(wagers, i);
            if ffi::PyList_CheckExact(w) == 0 || ffi::PyList_GET_SIZE(w) != 5 {
                return Ok(false);
            }
            let f = |j| ffi::PyList_GET_ITEM(w, j);
            let (wid, pos, kind_o, amount, placed) = (f(0), f(1), f(2), f(3), f(4));
            let (Some(kind), Some(p), Some(a)) = (kind_of(c, kind_o), exact_int(pos), exact_int(amount)) else { return Ok(false) };
            if !is_str(wid) || GROUP_OF[kind as usize] != g || !(-MAX_STAKE..=MAX_STAKE).contains(&a) {
                return Ok(false);
            }
            if self.pending.insert(Key::of(wid), ()).is_some() {
                return Ok(false); // an id twice
            }
            ws.push(Wager {
                id: O::new_ref(wid),
                position: O::new_ref(pos),
                position_i: p,
                kind,
                kind_o: O::new_ref(kind_o),
                amount: O::new_ref(amount),
                amount_i: a,
                placed_seq: O::new_ref(placed),
            });
        }
        let id = O::new_ref(id);
        match g {
            0 => {
                if ffi::PyList_CheckExact(marks) == 0 || ffi::PyList_GET_SIZE(marks) > 6 {
                    return Ok(false);
                }
                let mut points = Vec::new();
                for i in 0..ffi::PyList_GET_SIZE(marks) {
                    match exact_int(ffi::PyList_GET_ITEM(marks, i)) {
                        Some(p) if is_point(c, p) && !points.contains(&p) => points.push(p),
                        _ => return Ok(false),
                    }
                }
                let x = FireCohort { id, wagers: ws, points };
                if is_open { self.open_fire = Some(x) } else { self.fire.push(x) }
            }
            1 => {
                if ffi::PyList_CheckExact(marks) == 0 {
                    return Ok(false);
                }
                let mut bits = 0u32;
                let mut last = 0;
                for i in 0..ffi::PyList_GET_SIZE(marks) {
                    match exact_int(ffi::PyList_GET_ITEM(marks, i)) {
                        // ascending, as `marked_totals` writes them
                        Some(t) if (2..=12).contains(&t) && c.all_totals >> t & 1 == 1 && t > last => {
                            bits |= 1 << t;
                            last = t;
                        }
                        _ => return Ok(false),
                    }
                }
                let x = BonusCohort { id, wagers: ws, marks: bits };
                if is_open { self.open_bonus = Some(x) } else { self.bonus.push(x) }
            }
            2 => {
                let Some(m) = exact_int(marks) else { return Ok(false) };
                if !(0..=u32::MAX as i64).contains(&m) || m as u32 & !c.all_combos != 0 {
                    return Ok(false);
                }
                let x = HotRollerCohort { id, wagers: ws, marks: m as u32 };
                if is_open { self.open_hot_roller = Some(x) } else { self.hot_roller.push(x) }
            }
            _ => {
                let Some(n) = exact_int(marks) else { return Ok(false) };
                if !(0..=(1 << 62)).contains(&n) {
                    return Ok(false);
                }
                let x = HotShooterCohort { id, wagers: ws, throws: n };
                if is_open { self.open_hot_shooter = Some(x) } else { self.hot_shooter.push(x) }
            }
        }
        Ok(true)
    }
}
