//! Hot Roller (§ 623c.1; craps_streams/rules/hot_roller.py): the fourteen dice combinations of 4, 5, 6,
//! 8, 9 and 10.

use crate::ctx::ctx;
use crate::py::O;
use crate::rules::{Outcome, Paytable};
use crate::wager::{Emit, Wager};
use pyo3::prelude::*;

/// § 623c.1(a)(2)(iii): the combinations of each number, the order of the dice not mattering;
/// bit i is the i-th combination in the order of the numbers 4, 5, 6, 8, 9, 10.
pub const COMBOS: [(i64, i64); 14] = [
    (1, 3), (2, 2), (1, 4), (2, 3), (1, 5), (2, 4), (3, 3), (2, 6), (3, 5), (4, 4), (3, 6), (4, 5), (4, 6), (5, 5),
];
pub const NUMBERS: [i64; 6] = [4, 5, 6, 8, 9, 10];
pub const ALL_COMBOS: u32 = (1 << 14) - 1;

/// (low die, high die) -> bit of the combination, or 0 (`COMBO_BIT`).
#[inline]
pub fn combo_bit(low: i64, high: i64) -> u32 {
    COMBOS.iter().position(|&c| c == (low, high)).map_or(0, |i| 1 << i)
}

/// The bits of a number's combinations (`NUMBER_MASK`).
#[inline]
pub fn number_mask(n: i64) -> u32 {
    let mut m = 0;
    for (i, &(a, b)) in COMBOS.iter().enumerate() {
        if a + b == n {
            m |= 1 << i;
        }
    }
    m
}

/// How many numbers have all their combinations marked (`completed_count`).
#[inline]
pub fn completed_count(marks: u32) -> i64 {
    NUMBERS.iter().filter(|&&n| {
        let m = number_mask(n);
        marks & m == m
    }).count() as i64
}

pub struct HotRollerCohort {
    pub id: O,
    pub wagers: Vec<Wager>,
    pub marks: u32,
}

impl HotRollerCohort {
    /// § 623c.1(d),(f): a marker on the combination, and on the number once all of its
    /// combinations are thrown.
    pub unsafe fn dice_thrown(&mut self, low: i64, high: i64, e: &mut Emit) -> PyResult<()> {
        let c = ctx();
        let bit = combo_bit(low, high);
        if bit == 0 || self.marks & bit != 0 {
            return Ok(());
        }
        self.marks |= bit;
        let layout = c.groups[2];
        e.placed(layout, self.id.p(), c.combo_marker[(6 * (low - 1) + (high - 1)) as usize], self.marks.count_ones() as i64)?;
        let number = low + high;
        let mask = number_mask(number);
        if self.marks & mask == mask {
            e.placed(layout, self.id.p(), c.number_marker[number as usize], completed_count(self.marks))?;
        }
        Ok(())
    }

    /// § 623c.1(g): settled by a 7. `pays` is false for a come-out 7 under the literal reading (it
    /// loses whatever is marked); otherwise the completed numbers decide by the paytable.
    pub unsafe fn seven(&self, paytable: &Paytable, pays: bool, e: &mut Emit) -> PyResult<()> {
        let c = ctx();
        let count = completed_count(self.marks);
        if pays {
            e.settle_all(&self.wagers, &paytable.by_paytable(count), paytable.name.p(), c.numbers_detail[count as usize])?;
        } else {
            e.settle_all(&self.wagers, &Outcome::Lose, paytable.name.p(), c.come_out_detail[count as usize])?;
        }
        e.cleared(c.groups[2], self.id.p(), c.r_seven)
    }
}
