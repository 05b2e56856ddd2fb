//! The Fire Bet (§ 623a.11; craps_streams/rules/fire_bet.py): distinct points made by the shooter,
//! settled at the loser 7.

use crate::rules::Paytable;
use crate::wager::{Emit, Wager};
use pyo3::prelude::*;

pub struct FireCohort {
    pub id: crate::py::O,
    pub wagers: Vec<Wager>,
    pub points: Vec<i64>, // distinct point numbers made, in the order made
}

impl FireCohort {
    /// Marks a new distinct point; true when this throw brings the cohort to four points.
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    pub unsafe fn point_made(&mut self, point: i64, e: &mut Emit) -> PyResult<bool> {
        let c = e.c;
        // § 623a.11(b)(2): a repeated point does not increment the count.
        if self.points.contains(&point) {
            return Ok(false);
        }
        self.points.push(point);
        let count = self.points.len();
        // § 623a.11(a)(4): the marker is inscribed with the running count of distinct points.
        e.placed(c.groups[0], self.id.p(), c.point_marker[point as usize], count as i64)?;
        // § 623a.11(a)(6): surveillance is notified at four different unique points.
        Ok(count == c.four_points)
    }

    /// § 623a.11(a)(5): collected or paid upon the loser 7, never earlier.
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    pub unsafe fn seven_out(&self, paytable: &Paytable, e: &mut Emit) -> PyResult<()> {
        let c = e.c;
        let count = self.points.len();
        e.settle_all(&self.wagers, &paytable.by_paytable(count as i64), paytable.name.p(), c.points_detail[count])?;
        e.cleared(c.groups[0], self.id.p(), c.r_seven_out)
    }
}
