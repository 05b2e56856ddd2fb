//! A wager in action, and the outputs of one event (craps_streams/rules/wager.py, events.py): the
//! settlements, markers and alerts as the project's own msgspec Structs, with the ids the Python
//! core gives them (`output_id`, `settlement_id`).

use crate::ctx::Ctx;
use crate::py::{ascii, ascii_str, call, concat, new_int, push_int, utf8_str, Key, Obj, StrMap, O};
use crate::rules::Outcome;
use pyo3::prelude::*;

/// Wager kinds (craps_streams/rules/kinds.py, the registry's order).
pub const FIRE: u8 = 0;
pub const ALL_SMALL: u8 = 1;
pub const ALL_TALL: u8 = 2;
pub const ALL_OR_NOTHING: u8 = 3;
#[allow(dead_code)]
pub const HOT_ROLLER: u8 = 4;
#[allow(dead_code)]
pub const HOT_SHOOTER: u8 = 5;
/// Groups (layouts sharing one cohort class and window): fire, bonus_craps, hot_roller, hot_shooter.
pub const GROUP_OF: [usize; 6] = [0, 1, 1, 1, 2, 3];

/// A wager in action: (wager_id, position, kind, amount_cents, placed_seq) as the WagerPlaced gave
/// them (the Python core's tuple), with the numbers read once.
pub struct Wager {
    pub id: O,
    pub position: O,
    pub position_i: i64,
    pub kind: u8,
    pub kind_o: O, // the kind as the event spelt it (the record keeps that object)
    pub amount: O,
    pub amount_i: i64,
    pub placed_seq: O,
}

/// The event's common fields, borrowed from it.
#[derive(Clone, Copy)]
pub struct Ev {
    pub table_id: Obj,
    pub seq: Obj,
    pub seq_i: i64,
    pub ts: Obj,
}

/// The outputs of one event, their ids, the large wins to alert after them and the wagers to
/// forget (no longer pending).
pub struct Emit<'a> {
    /// The context of the call (slots.rs).
    pub c: &'a Ctx,
    pub ev: Ev,
    pub out: Vec<O>,
    /// "T/seq/" (output ids, + position in the list) and "T/seq/settle/" (settlement ids), for an
    /// ASCII table id; else None and the ids are concatenated str by str.
    out_prefix: Option<Vec<u8>>,
    settle_prefix: Vec<u8>,
    pub pending: &'a mut StrMap<()>,
    /// Forget each settled wager (`_forget_settled`); false at a seven-out, which forgets them all.
    pub forget: bool,
    pub large_win: i64,
    pub wins: Vec<(O, u8, O, O, i64, O)>, // (wager id, kind, kind_o, position, won, detail)
}

impl<'a> Emit<'a> {
    /// # Safety
    /// The GIL is held, and the objects of `ev` are live for `'a` (the event being applied holds them).
    pub unsafe fn new(c: &'a Ctx, ev: Ev, pending: &'a mut StrMap<()>, large_win: i64) -> Emit<'a> {
        let out_prefix = ascii(ev.table_id).map(|t| {
            let mut b = Vec::with_capacity(t.len() + 24);
            b.extend_from_slice(t);
            b.push(b'/');
            push_int(&mut b, ev.seq_i);
            b.push(b'/');
            b
        });
        let mut settle_prefix = Vec::new();
        if let Some(p) = &out_prefix {
            settle_prefix.extend_from_slice(p);
            settle_prefix.extend_from_slice(b"settle/");
        }
        Emit { c, ev, out: Vec::new(), out_prefix, settle_prefix, pending, forget: true, large_win, wins: Vec::new() }
    }

    /// `output_id(event, out)`: f"{table_id}/{seq}/{len(out)}".
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    unsafe fn output_id(&self) -> PyResult<O> {
        let mut digits = Vec::with_capacity(8);
        push_int(&mut digits, self.out.len() as i64);
        match &self.out_prefix {
            Some(p) => ascii_str(p, &digits),
            None => {
                let mut tail = b"/".to_vec();
                push_int(&mut tail, self.ev.seq_i);
                tail.push(b'/');
                tail.extend_from_slice(&digits);
                let t = O::owned(utf8_str(std::str::from_utf8_unchecked(&tail)))?;
                concat(self.ev.table_id, t.p())
            }
        }
    }

    /// `settlement_id(table_id, seq, wager_id)`: f"{table_id}/{seq}/settle/{wager_id}".
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    #[inline(always)]
    unsafe fn settlement_id(&self, wager_id: Obj) -> PyResult<O> {
        if self.out_prefix.is_some() {
            if let Some(w) = ascii(wager_id) {
                return ascii_str(&self.settle_prefix, w);
            }
        }
        let mut tail = b"/".to_vec();
        push_int(&mut tail, self.ev.seq_i);
        tail.extend_from_slice(b"/settle/");
        let t = O::owned(utf8_str(std::str::from_utf8_unchecked(&tail)))?;
        let head = concat(self.ev.table_id, t.p())?;
        concat(head.p(), wager_id)
    }

    /// A WagerSettled (craps_streams/rules/wager.py `settled`), the wager forgotten, a large win noted
    /// for its alert (`_forget_settled`).
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    #[inline(always)]
    pub unsafe fn settle(&mut self, w: &Wager, outcome: &Outcome, paytable: Obj, detail: Obj) -> PyResult<()> {
        let c = self.c;
        let (outcome_o, won) = match outcome {
            Outcome::Win(odds) => (c.win, odds * w.amount_i),
            Outcome::Lose => (c.lose, 0),
            Outcome::Push => (c.push, 0),
        };
        let id = self.settlement_id(w.id.p())?;
        let won_o = O::owned(new_int(won))?;
        let ev = self.ev;
        let args = [
            w.id.p(), ev.table_id, w.position.p(), w.kind_o.p(), outcome_o, w.amount.p(), won_o.p(), paytable, detail,
            ev.seq, ev.ts, w.placed_seq.p(), id.p(),
        ];
        let r = call(c.c_settled, &args)?;
        self.out.push(r);
        if self.forget {
            self.pending.remove(&Key::of(w.id.p()));
        }
        if self.large_win != 0 && won >= self.large_win {
            self.wins.push((w.id.clone(), w.kind, w.kind_o.clone(), w.position.clone(), won, O::new_ref(detail)));
        }
        Ok(())
    }

    /// Settle every wager of a cohort alike (`Cohort.settle_all`): they share the markers.
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    pub unsafe fn settle_all(&mut self, wagers: &[Wager], outcome: &Outcome, paytable: Obj, detail: Obj) -> PyResult<()> {
        for w in wagers {
            self.settle(w, outcome, paytable, detail)?;
        }
        Ok(())
    }

    /// A MarkerPlaced: § 623a.11(a)(4), § 623a.12(3), § 623c.1(d),(f).
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    pub unsafe fn placed(&mut self, layout: Obj, cohort: Obj, marker: Obj, count: i64) -> PyResult<()> {
        let id = self.output_id()?;
        let count_o = O::owned(new_int(count))?;
        let ev = self.ev;
        let r = call(self.c.c_placed, &[id.p(), ev.table_id, ev.seq, ev.ts, layout, cohort, marker, count_o.p()])?;
        self.out.push(r);
        Ok(())
    }

    /// A MarkerCleared (`Cohort.cleared`).
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    pub unsafe fn cleared(&mut self, layout: Obj, cohort: Obj, reason: Obj) -> PyResult<()> {
        let id = self.output_id()?;
        let ev = self.ev;
        let r = call(self.c.c_cleared, &[id.p(), ev.table_id, ev.seq, ev.ts, layout, cohort, reason])?;
        self.out.push(r);
        Ok(())
    }

    /// A SurveillanceAlerted.
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    pub unsafe fn alert(&mut self, alert: Obj, shooter: Obj, message: Obj, ids: Obj) -> PyResult<()> {
        let id = self.output_id()?;
        let ev = self.ev;
        let r = call(self.c.c_alert, &[id.p(), ev.table_id, ev.seq, ev.ts, alert, shooter, message, ids])?;
        self.out.push(r);
        Ok(())
    }

    /// The large-win alerts of this event's settlements, after its other outputs, in settlement
    /// order (craps_streams/rules/table.py `_large_win`), worded by
    /// `table.large_win_message(wager, wager_id, position, won_cents, detail)`.
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    pub unsafe fn large_wins(&mut self, shooter: Obj) -> PyResult<()> {
        let c = self.c;
        for (id, _kind, kind_o, position, won, detail) in std::mem::take(&mut self.wins) {
            let won = O::owned(new_int(won))?;
            let msg = call(c.large_win_message, &[kind_o.p(), id.p(), position.p(), won.p(), detail.p()])?;
            let ids = crate::py::tuple_of(&[id.p()])?;
            self.alert(c.a_large, shooter, msg.p(), ids.p())?;
        }
        Ok(())
    }
}

/// Takes the wagers of one kind out of a cohort, the others kept in order (`Cohort.pop_kind`).
pub fn pop_kind(wagers: &mut Vec<Wager>, kind: u8) -> Vec<Wager> {
    let mut taken = Vec::new();
    let mut kept = Vec::with_capacity(wagers.len());
    for w in wagers.drain(..) {
        if w.kind == kind {
            taken.push(w)
        } else {
            kept.push(w)
        }
    }
    *wagers = kept;
    taken
}
