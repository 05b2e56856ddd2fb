//! The floor's seq walk of `archive verify` (craps_streams/archive/verify.py `walk_seqs`, the rule
//! and its specification): each table's events come with seqs 1, 2, 3 and so on. Here the events
//! the archive's reader decodes (wagers placed, dice thrown, shooters changed) are walked without a
//! trip through Python per event: their table and seq read from their slots (slots.rs).
//!
//! The run stops, with nothing changed for it, at the first item it does not walk: another event
//! class, a record left to the contract check, a table id that is not a str or a seq that is not
//! an int of 64 bits. The caller walks that item by the Python rule and calls again after it.
//! tests/native/lockstep.py (`seq-walk`) holds the two to the same findings and last seqs.

use crate::py::Obj;
use pyo3::prelude::*;
use pyo3::ffi;
use pyo3::types::{PyDict, PyList};

/// `walk_seqs(items, start, last, found) -> stop`: the items of `items` from `start` up to `stop`
/// walked, `last` (table id -> its last seq in order) updated and each finding appended to
/// `found` as `(index, "gap" or "duplicate", table id, seq, last seq)`, as the Python rule does;
/// `items[stop]` (if any) is untouched.
#[pyfunction]
pub fn walk_seqs(py: Python<'_>, items: &Bound<PyList>, start: usize, last: &Bound<PyDict>,
                 found: &Bound<PyList>) -> PyResult<usize> {
    let c = crate::context(py)?;
    let mut i = start;
    // SAFETY: the GIL is held (a Python call) and `c` is this call's context; every item is read
    // from the list by an index below its length, borrowed while the list holds it, and an
    // event's slots are read only after its type was compared with the class the offsets are of
    // (slots.rs, invariant 1). The objects read are borrowed and only handed to calls that take
    // their own references (the dict's set, the tuple's new).
    unsafe {
        let n = ffi::PyList_GET_SIZE(items.as_ptr()) as usize;
        while i < n {
            let e: Obj = ffi::PyList_GET_ITEM(items.as_ptr(), i as ffi::Py_ssize_t);
            let t = ffi::Py_TYPE(e) as Obj;
            let o = if t == c.t_dice {
                &c.o_dice
            } else if t == c.t_wager {
                &c.o_wager
            } else if t == c.t_shooter {
                &c.o_shooter
            } else {
                break; // another event or a record: the Python rule's
            };
            let table = crate::ctx::field(e, o.table_id);
            let seq_obj = crate::ctx::field(e, o.seq);
            if table.is_null() || seq_obj.is_null() || ffi::PyUnicode_CheckExact(table) == 0
                || ffi::PyLong_CheckExact(seq_obj) == 0 {
                break;
            }
            let seq = ffi::PyLong_AsLongLong(seq_obj);
            if seq == -1 && !ffi::PyErr_Occurred().is_null() {
                ffi::PyErr_Clear(); // beyond 64 bits: the Python rule's
                break;
            }
            let prev_obj = ffi::PyDict_GetItemWithError(last.as_ptr(), table);
            let (finding, keep) = if prev_obj.is_null() {
                if !ffi::PyErr_Occurred().is_null() {
                    return Err(PyErr::fetch(py));
                }
                (if seq != 1 { Some("gap") } else { None }, true)
            } else {
                let prev = ffi::PyLong_AsLongLong(prev_obj);
                if prev == -1 && !ffi::PyErr_Occurred().is_null() {
                    ffi::PyErr_Clear(); // a last seq the Python rule kept beyond 64 bits
                    break;
                }
                let (seq, prev) = (seq as i128, prev as i128);
                if seq == prev + 1 {
                    (None, true)
                } else if seq <= prev {
                    (Some("duplicate"), false)
                } else {
                    (Some("gap"), true)
                }
            };
            if let Some(kind) = finding {
                let prev_py = if prev_obj.is_null() {
                    0i64.into_pyobject(py)?.into_any()
                } else {
                    Bound::from_borrowed_ptr(py, prev_obj)
                };
                let row = (i, kind, Bound::from_borrowed_ptr(py, table), Bound::from_borrowed_ptr(py, seq_obj), prev_py);
                found.append(row)?;
            }
            if keep && ffi::PyDict_SetItem(last.as_ptr(), table, seq_obj) < 0 {
                return Err(PyErr::fetch(py));
            }
            i += 1;
        }
    }
    Ok(i)
}
