//! Hot Shooter jackpot (§ 623c.4; craps_streams/rules/hot_shooter.py): the number of throws from the
//! come-out roll to the seven-out.

use crate::py::O;
use crate::rules::Paytable;
use crate::wager::{Emit, Wager};
use pyo3::prelude::*;

pub struct HotShooterCohort {
    pub id: O,
    pub wagers: Vec<Wager>,
    pub throws: i64, // from the come-out roll after placing, through the seven-out
}

impl HotShooterCohort {
    /// § 623c.4(d): N <= 7 loses, 8..15 pushes, 16 or more wins by § 623c.4(e). No markers.
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    pub unsafe fn seven_out(&self, paytable: &Paytable, e: &mut Emit) -> PyResult<()> {
        let n = self.throws;
        let detail = e.c.throws_detail_of(n)?; // `hot_shooter.settled_detail(throws)`
        e.settle_all(&self.wagers, &paytable.by_paytable(n), paytable.name.p(), detail)
    }
}
