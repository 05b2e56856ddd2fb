//! The Rules Submission in force (§ 601a.2; craps_streams/rules/submission.py, paytables.py), read once
//! from the table's `RulesSubmission` into native numbers.

use crate::ctx::Ctx;
use crate::py::{exact_int, getattr, same_str, Obj, O};
use pyo3::ffi;
use pyo3::prelude::*;

/// Odds and stakes the native core takes; anything larger stays with the Python core, so that
/// odds x stake never overflows an i64 (2^20 x 2^40).
pub const MAX_ODDS: i64 = 1 << 20;
pub const MAX_STAKE: i64 = 1 << 40;

/// A paytable (craps_streams/rules/paytables.py `Paytable`): ((lowest count, odds to 1), ...) ascending.
pub struct Paytable {
    pub name: O,
    pub bands: Vec<(i64, i64)>,
    /// The odds of a band that returns the stake (the context's `push_odds`, a fact).
    pub push_odds: i64,
}

impl Paytable {
    /// Odds to 1 for this count, PUSH, or None when the wager loses (`Paytable.odds_for`).
    #[inline]
    pub fn odds_for(&self, count: i64) -> Option<i64> {
        let mut r = None;
        for &(lowest, odds) in &self.bands {
            if count >= lowest {
                r = Some(odds)
            } else {
                break;
            }
        }
        r
    }
}

/// (outcome, odds to 1) for the count that decides a wager (craps_streams/rules/wager.py `by_paytable`).
pub enum Outcome {
    Win(i64),
    Lose,
    Push,
}

impl Paytable {
    #[inline]
    pub fn by_paytable(&self, count: i64) -> Outcome {
        match self.odds_for(count) {
            None => Outcome::Lose,
            // `PUSH` of craps_streams/rules/paytables.py: a band that returns the stake (§ 623c.4(d)(2)).
            Some(x) if x == self.push_odds => Outcome::Push,
            Some(x) => Outcome::Win(x),
        }
    }
}

pub struct Rules {
    pub obj: O, // the RulesSubmission itself (`state.rules`)
    pub fire: Paytable,
    pub bonus_name: O,
    pub bonus_odds: [i64; 4], // index = kind: 1 all_small, 2 all_tall, 3 all_or_nothing
    pub hot_roller: Paytable,
    pub hot_shooter: Paytable,
    /// § 623c.1(g): a come-out 7 pays Hot Roller by the table ("pay_by_table") or loses ("lose").
    pub come_out_seven_pays: bool,
    /// Some kind's wagers are pushed on a voluntary or compulsory surrender (§ 623a.11(a)(2)):
    /// such changes go to the Python core.
    pub any_surrender_push: bool,
    /// Table limits, by wager kind (the index of `Ctx::kinds`): a stake inside them is placed
    /// here; one outside goes to the Python core, which words the rejection.
    pub limits: [Option<(i64, i64)>; 6],
    pub large_win: i64,
}

/// # Safety
/// The GIL is held, and every object it is given is live for the call.
unsafe fn int_of(o: &O) -> Option<i64> {
    exact_int(o.p())
}

/// # Safety
/// The GIL is held, and every object it is given is live for the call.
unsafe fn paytable(c: &Ctx, rules: Obj, name: &str) -> PyResult<Option<Paytable>> {
    let p = getattr(rules, name)?;
    let pname = getattr(p.p(), "name")?;
    let bands = getattr(p.p(), "bands")?;
    if ffi::PyTuple_CheckExact(bands.p()) == 0 || ffi::PyUnicode_CheckExact(pname.p()) == 0 {
        return Ok(None);
    }
    let mut v = Vec::new();
    for i in 0..ffi::PyTuple_GET_SIZE(bands.p()) {
        let band = ffi::PyTuple_GET_ITEM(bands.p(), i);
        if ffi::PyTuple_CheckExact(band) == 0 || ffi::PyTuple_GET_SIZE(band) != 2 {
            return Ok(None);
        }
        let (Some(lowest), Some(odds)) = (exact_int(ffi::PyTuple_GET_ITEM(band, 0)), exact_int(ffi::PyTuple_GET_ITEM(band, 1)))
        else {
            return Ok(None);
        };
        if !(odds == c.push_odds || (0..=MAX_ODDS).contains(&odds)) {
            return Ok(None);
        }
        v.push((lowest, odds));
    }
    Ok(Some(Paytable { name: pname, bands: v, push_odds: c.push_odds }))
}

impl Rules {
    /// The native form of a RulesSubmission, or None when it holds what the native core does
    /// not take (then the table stays with the Python core).
    ///
    /// # Safety
    /// The GIL is held, and every object it is given is live for the call.
    pub unsafe fn of(c: &Ctx, rules: Obj) -> PyResult<Option<Rules>> {
        let (Some(fire), Some(hot_roller), Some(hot_shooter)) =
            (paytable(c, rules, "fire")?, paytable(c, rules, "hot_roller")?, paytable(c, rules, "hot_shooter")?)
        else {
            return Ok(None);
        };
        let bonus = getattr(rules, "bonus")?;
        let bonus_name = getattr(bonus.p(), "name")?;
        let mut bonus_odds = [0i64; 4];
        for (i, n) in ["all_small", "all_tall", "all_or_nothing"].iter().enumerate() {
            match int_of(&getattr(bonus.p(), n)?) {
                Some(x) if (0..=MAX_ODDS).contains(&x) => bonus_odds[i + 1] = x,
                _ => return Ok(None),
            }
        }
        let seven = getattr(rules, "hot_roller_come_out_seven")?;
        let pay_by_table = crate::py::O::owned(crate::py::utf8_str("pay_by_table"))?;
        let come_out_seven_pays = same_str(pay_by_table.p(), seven.p());
        let surrender = getattr(rules, "surrender")?;
        let push = crate::py::O::owned(crate::py::utf8_str("push"))?;
        let mut any_surrender_push = false;
        if ffi::PyTuple_CheckExact(surrender.p()) == 0 {
            return Ok(None);
        }
        for i in 0..ffi::PyTuple_GET_SIZE(surrender.p()) {
            let pair = ffi::PyTuple_GET_ITEM(surrender.p(), i);
            if ffi::PyTuple_CheckExact(pair) == 0 || ffi::PyTuple_GET_SIZE(pair) != 2 {
                return Ok(None);
            }
            any_surrender_push |= same_str(push.p(), ffi::PyTuple_GET_ITEM(pair, 1));
        }
        // RulesSubmission.limits: a tuple of (kind, min cents, max cents).
        let rows = getattr(rules, "limits")?;
        if ffi::PyTuple_CheckExact(rows.p()) == 0 {
            return Ok(None);
        }
        let mut limits = [None; 6];
        for i in 0..ffi::PyTuple_GET_SIZE(rows.p()) {
            let row = ffi::PyTuple_GET_ITEM(rows.p(), i);
            if ffi::PyTuple_CheckExact(row) == 0 || ffi::PyTuple_GET_SIZE(row) != 3 {
                return Ok(None);
            }
            let kind = crate::table::kind_of(c, ffi::PyTuple_GET_ITEM(row, 0));
            let (Some(kind), Some(low), Some(high)) =
                (kind, exact_int(ffi::PyTuple_GET_ITEM(row, 1)), exact_int(ffi::PyTuple_GET_ITEM(row, 2)))
            else {
                return Ok(None);
            };
            if limits[kind as usize].is_some() {
                return Ok(None); // one row per kind (limits_for takes the first): leave it to Python
            }
            limits[kind as usize] = Some((low, high));
        }
        let Some(large_win) = int_of(&getattr(rules, "large_win_alert_cents")?) else {
            return Ok(None);
        };
        Ok(Some(Rules {
            obj: O::new_ref(rules),
            fire,
            bonus_name,
            bonus_odds,
            hot_roller,
            hot_shooter,
            come_out_seven_pays,
            any_surrender_push,
            limits,
            large_win,
        }))
    }
}
