//! Hot Roller (§ 623c.1; craps_streams/rules/hot_roller.py): the fourteen dice combinations of 4, 5, 6,
//! 8, 9 and 10.

use crate::ctx::Ctx;
use crate::py::O;
use crate::rules::{Outcome, Paytable};
use crate::wager::{Emit, Wager};
use pyo3::prelude::*;

// § 623c.1(a)(2)(iii): the combinations of each number, the order of the dice not mattering, as
// the Python core's `COMBO_BIT` and `NUMBER_MASK` give them (facts: crate::ctx::Ctx).

/// (low die, high die) -> bit of the combination, or 0 (`COMBO_BIT`).
#[inline]
fn combo_bit(c: &Ctx, low: i64, high: i64) -> u32 {
    if (1..=6).contains(&low) && (1..=6).contains(&high) { c.combo_bits[(6 * (low - 1) + (high - 1)) as usize] } else { 0 }
}

/// How many numbers have all their combinations marked (`completed_count`).
#[inline]
fn completed_count(c: &Ctx, marks: u32) -> i64 {
    c.number_masks.iter().filter(|&&m| m != 0 && marks & m == m).count() as i64
}

pub struct HotRollerCohort {
    pub id: O,
    pub wagers: Vec<Wager>,
    pub marks: u32,
}

impl HotRollerCohort {
    /// § 623c.1(d),(f): a marker on the combination, and on the number once all of its
    /// combinations are thrown.
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    pub unsafe fn dice_thrown(&mut self, low: i64, high: i64, e: &mut Emit) -> PyResult<()> {
        let c = e.c;
        let bit = combo_bit(c, low, high);
        if bit == 0 || self.marks & bit != 0 {
            return Ok(());
        }
        self.marks |= bit;
        let layout = c.groups[2];
        e.placed(layout, self.id.p(), c.combo_marker[(6 * (low - 1) + (high - 1)) as usize], self.marks.count_ones() as i64)?;
        let number = low + high;
        let mask = c.number_masks.get(number as usize).copied().unwrap_or(0);
        if self.marks & mask == mask {
            e.placed(layout, self.id.p(), c.number_marker[number as usize], completed_count(c, self.marks))?;
        }
        Ok(())
    }

    /// § 623c.1(g): settled by a 7. `pays` is false for a come-out 7 under the literal reading (it
    /// loses whatever is marked); otherwise the completed numbers decide by the paytable.
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    pub unsafe fn seven(&self, paytable: &Paytable, pays: bool, e: &mut Emit) -> PyResult<()> {
        let c = e.c;
        let count = completed_count(c, self.marks);
        if pays {
            e.settle_all(&self.wagers, &paytable.by_paytable(count), paytable.name.p(), c.numbers_detail[count as usize])?;
        } else {
            e.settle_all(&self.wagers, &Outcome::Lose, paytable.name.p(), c.come_out_detail[count as usize])?;
        }
        e.cleared(c.groups[2], self.id.p(), c.r_seven)
    }
}
