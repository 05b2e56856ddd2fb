//! A run of quiet events in one call (craps_streams/settle/quiet.py): the replay's and audit's
//! batches are mostly wagers placed and shooters changed, events the settling step
//! (craps_streams/settle/step.py `settle_event`) only checks, applies and files: no outputs, nothing for
//! the hold book or the surveillance of the table. Here each is settled as `settle_event` settles
//! it, without a trip through Python per event:
//!
//! - the event is a WagerPlaced or a ShooterChanged of a table the native core keeps (a `Table`
//!   in `tables`) whose hold book exists (`books`: `settle_event` makes it at the table's first
//!   applied event);
//! - its tag is authentic by the native check (tags.rs `TagKeys`), or it is untagged and the
//!   replay accepts untagged events (`TagCheck.problem_plain` counts those);
//! - the native core judges it (table.rs `step`, decided before anything changes) and applies it.
//!
//! A replay's run (given `out` and `new_line`) takes throws too, as the JSON lane takes them
//! (lane.rs): the same three questions, then the rest of the step `settle_event` goes on to
//! (step.py `settled`): the throw's settlements booked into its table's hold book and the table
//! watched by its native `Watch` (`finish_throw`), the outputs and alerts appended to `out`. A
//! throw whose watch declines is handed back, applied, with its outputs, for `settled`.
//!
//! The run stops, with nothing changed for it, at the first event that is none of these: the caller
//! settles it by `settle_event`, which asks the same questions and words every answer (a rejection,
//! a forged tag, the Python core's cases). The native core places wagers and changes shooters
//! without outputs; should a rule ever give them some, this refuses loudly rather than drop them.
//! tests/native/test_quiet_run.py holds the batches with and without this run to the same outputs,
//! verdicts, tallies and tables.

use crate::lane::finish_throw;
use crate::py::{list_of, Obj, O};
use pyo3::exceptions::PyRuntimeError;
use crate::table::Table;
use crate::tags::TagKeys;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// The table of `table_id` when the native core keeps it (a `Table` in `tables`) and its hold book
/// exists (`books`: `settle_event` makes it at the table's first applied event), else None (the
/// step's). Borrowed from `tables`; an unhashable id is in neither dict.
///
/// # Safety
/// `table_id` is a live object (the GIL is held: `py`); the table returned is a new reference.
pub(crate) unsafe fn native_table<'py>(py: Python<'py>, tables: &Bound<'py, PyDict>, books: &Bound<'py, PyDict>,
                                       table_id: Obj) -> Option<Bound<'py, Table>> {
    let table = ffi::PyDict_GetItemWithError(tables.as_ptr(), table_id);
    if table.is_null() || ffi::PyDict_GetItemWithError(books.as_ptr(), table_id).is_null() {
        ffi::PyErr_Clear();
        return None;
    }
    Bound::from_borrowed_ptr(py, table).downcast_exact::<Table>().ok().cloned()
}

/// The native core places wagers and changes shooters without outputs (table.rs); a rule that
/// gives them some must not be settled by a run (here or in lane.rs), where nobody books them.
pub(crate) fn none_given(outputs: &[O]) -> PyResult<()> {
    if outputs.is_empty() {
        Ok(())
    } else {
        Err(PyRuntimeError::new_err(
            "a wager or shooter change gave outputs: native/src/quiet.rs and lane.rs must leave it to settle_event"))
    }
}

/// `settle_quiet(keys, accept_untagged, tables, books, items, start, out=None, new_line=None)` ->
/// `(stop, applied, untagged, thrown)`: the events of `items` from `start` up to `stop` settled as
/// quiet, `applied` of them (`untagged` of those without a tag). `thrown` None: `items[stop]` (if
/// any) is untouched. `keys` None: no tag check (a replay without one, for tests of the rules
/// alone).
///
/// With `out` (a list) and `new_line` (`HoldWatch.new_line`, given only where the step's watch is
/// the plain `HoldWatch`), a throw goes on in the run as the JSON lane takes one (lane.rs): its tag
/// checked as a quiet event's, the native core's judgement taken (a throw it leaves to Python
/// stops the run, untouched), and, on a table whose surveillance is the native `Watch`, finished
/// as step.py `settled` finishes it (`finish_throw`: booked, watched, its outputs then its alerts
/// appended to `out`, counted in `applied`). Where the watch declines, the throw is handed back as
/// `thrown`, `(event, outputs)`, and the caller finishes its step (`settled`).
#[pyfunction]
#[pyo3(signature = (keys, accept_untagged, tables, books, items, start, out=None, new_line=None))]
#[allow(clippy::too_many_arguments)]
pub fn settle_quiet(py: Python<'_>, keys: Option<&Bound<TagKeys>>, accept_untagged: bool, tables: &Bound<PyDict>,
                    books: &Bound<PyDict>, items: &Bound<PyList>, start: usize, out: Option<&Bound<PyList>>,
                    new_line: Option<&Bound<PyAny>>)
                    -> PyResult<(usize, usize, usize, Option<(Py<PyAny>, Py<PyAny>)>)> {
    let finish = out.zip(new_line);
    let keys = keys.map(|k| k.get());
    let mut applied = 0usize;
    let mut untagged = 0usize;
    let mut i = start;
    let mut scratch = crate::tags::TagScratch::new();
    let c = crate::context(py)?;
    // SAFETY: the GIL is held (a Python call) and `c` is this call's context; every
    // item is read from the list by an index below its length, borrowed while the list holds it,
    // and an event's slots are read only after its type was compared with the class the offsets
    // are of (slots.rs, invariant 1).
    unsafe {
        let n = ffi::PyList_GET_SIZE(items.as_ptr()) as usize;
        while i < n {
            let e: Obj = ffi::PyList_GET_ITEM(items.as_ptr(), i as ffi::Py_ssize_t);
            let t = ffi::Py_TYPE(e) as Obj;
            let throw = t == c.t_dice;
            let off = if t == c.t_wager {
                c.o_wager.table_id
            } else if t == c.t_shooter {
                c.o_shooter.table_id
            } else if throw && finish.is_some() {
                c.o_dice.table_id
            } else {
                break; // an opening, a close, a tuple to decode, a throw without `out`: the step's
            };
            let table_id = crate::ctx::field(e, off);
            let Some(table) = native_table(py, tables, books, table_id) else { break };
            let mut was_untagged = false;
            if let Some(k) = keys {
                if !k.judge(&mut scratch, e) {
                    if !(accept_untagged && k.untagged(e)) {
                        break; // not authentic by the fast path: `settle_event` words it
                    }
                    was_untagged = true;
                }
            }
            let Some(outputs) = table.try_borrow_mut()?.step(&c, e)? else { break };
            if throw {
                let outs = list_of(outputs)?;
                if was_untagged {
                    untagged += 1;
                }
                if let Some((out, new_line)) = finish {
                    if finish_throw(py, books, table_id, &table, e, outs.p(), out, new_line)? {
                        applied += 1;
                        i += 1;
                        continue;
                    }
                }
                ffi::Py_INCREF(e);
                let thrown = (Py::from_owned_ptr(py, e), Py::from_owned_ptr(py, outs.into_ptr()));
                return Ok((i, applied, untagged, Some(thrown)));
            }
            none_given(&outputs)?;
            applied += 1;
            if was_untagged {
                untagged += 1;
            }
            i += 1;
        }
    }
    Ok((i, applied, untagged, None))
}
