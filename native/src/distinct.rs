//! The audit's check that a replay's settlements carry distinct ids
//! (craps_streams/replay/agreement.py `add_distinct`, the rule and its specification): a settlement
//! id names its table, deciding seq and wager, and a table's settlements come in the order of their
//! deciding seq, so only the ids of each table's latest seq are kept, in the same dict the rule
//! keeps (table id -> [seq, {id}]). Here each settlement is checked without a trip through Python:
//! its table, seq and id read from its slots (slots.rs), the dict and the sets reached by their C
//! calls.
//!
//! The run stops, with nothing changed for it, at the first item it does not check: another class,
//! a table id or id that is not a str, a seq that is not an int of 64 bits, a kept entry that is
//! not the rule's [int, set]. The caller checks that item by the rule and calls again after it.
//! tests/native/lockstep.py (`distinct-ids`) holds the two to the same answers and the same dict.

use crate::py::{exact_int, Obj};
use crate::slots::field;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// `distinct_ids(settled, start, latest) -> (stop, distinct)`: the settlements of `settled` from
/// `start` up to `stop` checked against `latest` and added to it, as the rule does. `distinct`
/// False: `settled[stop]` repeats an id, or comes before its table's latest seq (the rule's False:
/// the pass cannot vouch for the ids); else `settled[stop]` (if any) is untouched.
#[pyfunction]
pub fn distinct_ids(py: Python<'_>, settled: &Bound<PyList>, start: usize, latest: &Bound<PyDict>)
                    -> PyResult<(usize, bool)> {
    let c = crate::context(py)?;
    let (o_id, o_table, o_seq) = c.o_settled;
    let mut i = start;
    // SAFETY: the GIL is held (a Python call) and `c` is this call's context; every item is read
    // from the list by an index below its length, borrowed while the list holds it, and its slots
    // are read only after its type was compared with the class the offsets are of (slots.rs,
    // invariant 1). The objects read are borrowed, and only handed to calls that take their own
    // references (the dict's set, the set's add, the list's set).
    unsafe {
        let n = ffi::PyList_GET_SIZE(settled.as_ptr()) as usize;
        while i < n {
            let o: Obj = ffi::PyList_GET_ITEM(settled.as_ptr(), i as ffi::Py_ssize_t);
            if ffi::Py_TYPE(o) as Obj != c.c_settled {
                break;
            }
            let (id, table, seq_obj) = (field(o, o_id), field(o, o_table), field(o, o_seq));
            if id.is_null() || table.is_null() || seq_obj.is_null() || ffi::PyUnicode_CheckExact(id) == 0
                || ffi::PyUnicode_CheckExact(table) == 0 {
                break;
            }
            let Some(seq) = exact_int(seq_obj) else { break };
            let at = ffi::PyDict_GetItemWithError(latest.as_ptr(), table);
            if at.is_null() {
                if !ffi::PyErr_Occurred().is_null() {
                    return Err(PyErr::fetch(py));
                }
                new_latest(py, latest, table, seq_obj, id)?;
                i += 1;
                continue;
            }
            // The rule's entry: [seq, {id}] (a list it made, or this run made).
            if ffi::PyList_CheckExact(at) == 0 || ffi::PyList_GET_SIZE(at) != 2 {
                break;
            }
            let ids = ffi::PyList_GET_ITEM(at, 1);
            let Some(kept) = exact_int(ffi::PyList_GET_ITEM(at, 0)) else { break };
            if ffi::PySet_CheckExact(ids) == 0 {
                break;
            }
            if seq > kept {
                new_latest(py, latest, table, seq_obj, id)?;
            } else if seq == kept {
                match ffi::PySet_Contains(ids, id) {
                    0 => {
                        if ffi::PySet_Add(ids, id) < 0 {
                            return Err(PyErr::fetch(py));
                        }
                    }
                    1 => return Ok((i, false)),
                    _ => return Err(PyErr::fetch(py)),
                }
            } else {
                return Ok((i, false));
            }
            i += 1;
        }
    }
    Ok((i, true))
}

/// `latest[table] = [seq, {id}]`.
///
/// # Safety
/// The GIL is held, and every object it is given is live for the call.
unsafe fn new_latest(py: Python<'_>, latest: &Bound<PyDict>, table: Obj, seq: Obj, id: Obj) -> PyResult<()> {
    let ids = ffi::PySet_New(std::ptr::null_mut());
    if ids.is_null() {
        return Err(PyErr::fetch(py));
    }
    let ids = Bound::from_owned_ptr(py, ids);
    if ffi::PySet_Add(ids.as_ptr(), id) < 0 {
        return Err(PyErr::fetch(py));
    }
    let entry = pyo3::types::PyList::new(py, [Bound::from_borrowed_ptr(py, seq), ids])?;
    if ffi::PyDict_SetItem(latest.as_ptr(), table, entry.as_ptr()) < 0 {
        return Err(PyErr::fetch(py));
    }
    Ok(())
}
