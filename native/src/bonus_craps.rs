//! Bonus Craps (§ 623a.12; craps_streams/rules/bonus_craps.py): All Small, All Tall, All Or Nothing At All.

use crate::py::O;
use crate::rules::Outcome;
use crate::wager::{pop_kind, Emit, Wager, ALL_OR_NOTHING, ALL_SMALL, ALL_TALL};
use pyo3::prelude::*;

pub struct BonusCohort {
    pub id: O,
    pub wagers: Vec<Wager>,
    pub marks: u32,
}

impl BonusCohort {
    /// § 623a.12(3),(4),(6): mark the total; pay a wager the moment all its numbers are marked, in
    /// any order, leaving the others in action.
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    pub unsafe fn total_thrown(&mut self, total: i64, name: &O, odds: &[i64; 4], e: &mut Emit) -> PyResult<()> {
        let c = e.c;
        let bit = 1u32 << total;
        if self.marks & bit != 0 {
            return Ok(());
        }
        self.marks |= bit;
        let marks = self.marks;
        e.placed(c.groups[1], self.id.p(), c.total_marker[total as usize], marks.count_ones() as i64)?;
        // The wagers whose numbers include this total, in the order all_small, all_tall, all_or_nothing.
        for kind in [ALL_SMALL, ALL_TALL, ALL_OR_NOTHING] {
            // § 623a.3(43): the totals the wager needs (the Python core's `NEEDS`, a fact).
            let needs = c.bonus_needs[kind as usize];
            if needs & bit == 0 || marks & needs != needs {
                continue;
            }
            let outcome = Outcome::Win(odds[kind as usize]);
            for w in pop_kind(&mut self.wagers, kind) {
                e.settle(&w, &outcome, name.p(), c.complete[kind as usize])?;
            }
        }
        Ok(())
    }

    /// § 623a.12(5): a 7 at any time, come-out included, collects every Bonus Craps wager and
    /// removes all marker buttons.
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    pub unsafe fn seven(&mut self, name: &O, e: &mut Emit) -> PyResult<()> {
        let c = e.c;
        let detail = c.seven_detail_of(self.marks)?; // `bonus_craps.seven_detail(marks)`
        e.settle_all(&self.wagers, &Outcome::Lose, name.p(), detail)?;
        self.marks = 0;
        e.cleared(c.groups[1], self.id.p(), c.r_seven)
    }
}

/// The marked totals, ascending (`marked_totals`).
pub fn marked_totals(marks: u32) -> Vec<i64> {
    (2..13).filter(|t| marks >> t & 1 == 1).collect()
}
