//! The native rules core (docs/native-core.md): `craps_streams.accelerator._native`, loaded by
//! craps_streams/accelerator/rules.py.
//!
//! `apply(state, event) -> (state, outputs, verdict)`, the contract of craps_streams/rules/table.py. The
//! common path (in-order events of an open table with nothing held: accepted WagerPlaced of every
//! kind, DiceThrown valid or not, ShooterChanged, ComeBetsOnly) runs here on a native `Table`; every other
//! case, decided before any change, goes to `fallback(state, event)` in Python, which runs the
//! Python core (the reference) on the state converted by record and converts its result back.
//!
//! One module per wager kind, as the Python core has: fire_bet, bonus_craps, hot_roller,
//! hot_shooter; the table's dispatch and records in table.rs; outputs and ids in wager.rs.
//!
//! Every `unsafe` block says, in a `SAFETY:` comment, why it is sound; every `unsafe fn` says, in
//! its `# Safety` section, what its caller must keep. The two shortcuts most of them rest on (the
//! context, the reads of Struct slots) are explained in slots.rs.
#![warn(clippy::undocumented_unsafe_blocks)]

mod avro;
mod avro_in;
mod avro_out;
mod bonus_craps;
mod ctx;
mod distinct;
mod fire_bet;
mod hot_roller;
mod hot_shooter;
mod lane;
mod lines;
mod py;
mod quiet;
mod report;
mod rules;
mod seqs;
mod slots;
mod table;
mod tails;
mod tags;
mod wager;
mod watch;

use crate::ctx::Ctx;
use crate::py::{call, list_of, O};
use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyType;
use std::sync::Arc;
use table::Table;

/// `init(events, applied, fallback, view, rules_from_record, facts)`: the classes, the verdict,
/// the Python side's helpers and the rule facts (craps_streams/accelerator/rules.py `configure`).
#[pyfunction]
fn init(events: &Bound<PyAny>, applied: &Bound<PyAny>, fallback: &Bound<PyAny>, view: &Bound<PyAny>,
        rules_from_record: &Bound<PyAny>, facts: &Bound<pyo3::types::PyDict>) -> PyResult<()> {
    ctx::init(events, applied, fallback, view, rules_from_record, facts)
}

/// The context `init` installed, this call's own clone of it (slots.rs, invariant 2), or an error
/// before `init`: what each entry point that reads the context takes first.
pub(crate) fn context(py: Python<'_>) -> PyResult<Arc<Ctx>> {
    slots::current(py).ok_or_else(|| {
        PyRuntimeError::new_err("craps_streams.accelerator._native: init() first (import craps_streams.accelerator.rules)")
    })
}

/// The rules core under the contract: `apply(state, event) -> (state, outputs, verdict)`.
#[pyfunction]
fn apply(py: Python<'_>, state: &Bound<PyAny>, event: &Bound<PyAny>) -> PyResult<Py<PyAny>> {
    let c = context(py)?;
    // SAFETY: the GIL is held (`py`) and `c` is this call's context (held to the end); `state` is
    // downcast only after its exact type was checked; the tuple is new, so setting its three items
    // once each (each an owned reference: `into_ptr`, or `applied` increfed) fills it soundly.
    unsafe {
        if state.is_exact_instance_of::<Table>() {
            let t = state.downcast_unchecked::<Table>();
            let judged = t.try_borrow_mut()?.step(&c, event.as_ptr())?;
            if let Some(out) = judged {
                let list = list_of(out)?;
                let r = ffi::PyTuple_New(3);
                if r.is_null() {
                    return Err(py::fetch());
                }
                ffi::PyTuple_SET_ITEM(r, 0, state.clone().into_ptr());
                ffi::PyTuple_SET_ITEM(r, 1, list.into_ptr());
                ffi::Py_INCREF(c.applied);
                ffi::PyTuple_SET_ITEM(r, 2, c.applied);
                return Ok(Py::from_owned_ptr(py, r));
            }
        }
        // Everything else: the Python core decides (craps_streams/accelerator/rules.py `_fallback`).
        let r = call(c.fallback, &[state.as_ptr(), event.as_ptr()])?;
        Ok(Py::from_owned_ptr(py, r.into_ptr()))
    }
}

#[pymethods]
impl Table {
    /// Exactly `TableState.to_record()` of the same history.
    fn to_record(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let c = context(py)?;
        // SAFETY: the GIL is held and `c` is this call's context; `record` returns a new
        // reference, owned by the `Py` made of it.
        unsafe { Ok(Py::from_owned_ptr(py, self.record(&c)?.into_ptr())) }
    }

    /// The table of a `TableState.to_record()`, or None when the native core does not keep what
    /// it holds (events held beyond a gap, odd types, rules it does not take).
    #[classmethod]
    fn from_record(_cls: &Bound<PyType>, record: &Bound<PyAny>) -> PyResult<Option<Table>> {
        let c = context(record.py())?;
        // SAFETY: the GIL is held and `c` is this call's context; `record` is a live object
        // borrowed for the call.
        unsafe { Table::of_record(&c, record.as_ptr(), None) }
    }

    /// Replaces this table's state by the record's, in place; false (and nothing changed) when
    /// the native core does not keep it.
    fn load(&mut self, record: &Bound<PyAny>) -> PyResult<bool> {
        let c = context(record.py())?;
        // SAFETY: as `from_record`: the GIL held, `c` this call's context, `record` borrowed for the call.
        unsafe {
            let reuse = (&self.rules_record, &self.rules);
            match Table::of_record(&c, record.as_ptr(), Some(reuse))? {
                Some(t) => {
                    *self = t;
                    Ok(true)
                }
                None => Ok(false),
            }
        }
    }

    #[getter]
    fn table_id(&self, py: Python<'_>) -> Py<PyAny> {
        // SAFETY: the GIL is held (`py`); the table owns a reference to the object, which
        // `from_borrowed_ptr` increments for the caller.
        unsafe { Py::from_borrowed_ptr(py, self.table_id.p()) }
    }
    #[getter]
    fn table_kind(&self, py: Python<'_>) -> Py<PyAny> {
        // SAFETY: the GIL is held (`py`); the table owns a reference to the object, which
        // `from_borrowed_ptr` increments for the caller.
        unsafe { Py::from_borrowed_ptr(py, self.table_kind.p()) }
    }
    /// The RulesSubmission in force.
    #[getter]
    fn rules(&self, py: Python<'_>) -> Py<PyAny> {
        // SAFETY: the GIL is held (`py`); the table owns a reference to the object, which
        // `from_borrowed_ptr` increments for the caller.
        unsafe { Py::from_borrowed_ptr(py, self.rules.obj.p()) }
    }
    #[getter]
    fn rules_record(&self, py: Python<'_>) -> Py<PyAny> {
        // SAFETY: the GIL is held (`py`); the table owns a reference to the object, which
        // `from_borrowed_ptr` increments for the caller.
        unsafe { Py::from_borrowed_ptr(py, self.rules_record.p()) }
    }
    #[getter]
    fn shooter_id(&self, py: Python<'_>) -> Py<PyAny> {
        // SAFETY: as the getters above: the table owns the shooter's id, borrowed and increfed here.
        unsafe {
            match &self.shooter_id {
                Some(s) => Py::from_borrowed_ptr(py, s.p()),
                None => py.None(),
            }
        }
    }
    /// A native table never holds events (a table waiting on a gap stays with the Python core).
    #[getter]
    fn held(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        // SAFETY: the GIL is held (`py`); `O::owned` checked the new dict for NULL, and its one
        // reference passes to the `Py`.
        unsafe { Ok(Py::from_owned_ptr(py, O::owned(ffi::PyDict_New())?.into_ptr())) }
    }

    /// Any other attribute of a `TableState` (cohorts, open_cohorts, pending, the windows...),
    /// read from a TableState of this table's record: a copy, for reading.
    fn __getattr__(slf: &Bound<Self>, name: &Bound<pyo3::types::PyString>) -> PyResult<Py<PyAny>> {
        let c = context(slf.py())?;
        // SAFETY: the GIL is held; `c`, this call's context, owns `view` and lives meanwhile;
        // `from_borrowed_ptr` takes a reference of its own (slots.rs, invariant 2).
        let view = unsafe { Bound::from_borrowed_ptr(slf.py(), c.view) };
        Ok(view.call1((slf,))?.getattr(name)?.unbind())
    }

    /// Pickled (and copied) by record: `craps_streams.accelerator.rules.restore(record)`.
    fn __reduce__(&self, py: Python<'_>) -> PyResult<(Py<PyAny>, (Py<PyAny>,))> {
        let restore = py.import("craps_streams.accelerator.rules")?.getattr("restore")?.unbind();
        Ok((restore, (self.to_record(py)?,)))
    }
}

#[pymodule]
#[pyo3(name = "_native")]
fn native_module(m: &Bound<PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(init, m)?)?;
    m.add_function(wrap_pyfunction!(apply, m)?)?;
    m.add_class::<Table>()?;
    // The tag check's fast path (craps_streams/authenticity/native_tags.py), in the same extension.
    m.add_class::<tags::TagKeys>()?;
    // The replay's run of quiet events (craps_streams/settle/quiet.py).
    m.add_function(wrap_pyfunction!(quiet::settle_quiet, m)?)?;
    // The JSON Lines replay's lane (craps_streams/replay/jsonread.py `LineBatch`).
    m.add_function(wrap_pyfunction!(lane::settle_lines, m)?)?;
    // The floor's seq walk of `archive verify` (craps_streams/archive/verify.py).
    m.add_function(wrap_pyfunction!(seqs::walk_seqs, m)?)?;
    // The audit's check that the settlements carry distinct ids (craps_streams/replay/agreement.py).
    m.add_function(wrap_pyfunction!(distinct::distinct_ids, m)?)?;
    // The Chernoff bound of the hold surveillance (craps_streams/surveillance/tails.py).
    m.add_function(wrap_pyfunction!(tails::chernoff_minimum, m)?)?;
    // A table's surveillance for replay (craps_streams/surveillance/native_watch.py).
    m.add_class::<watch::WatchConfig>()?;
    m.add_class::<watch::Watch>()?;
    // Avro container blocks read into events (craps_streams/codec/fastread.py).
    m.add_class::<avro::BlockReader>()?;
    // The worker's outputs written as Avro messages (craps_streams/codec/fastwrite.py).
    m.add_class::<avro_out::OutputWriter>()?;
    // The outputs read from their Avro messages (craps_streams/codec/fastread.py `output_reader`).
    m.add_class::<avro_in::OutputReader>()?;
    // The replay's output lines (craps_streams/replay/run.py `output_lines`).
    m.add_class::<lines::LineWriter>()?;
    // A report's books (craps_streams/report/build.py `ReportPass`).
    m.add_class::<report::ReportBook>()?;
    m.add("KINDS", ctx::KIND_NAMES.to_vec())?;
    m.add("GROUPS", ctx::GROUP_NAMES.to_vec())?;
    // native/source_digest.py, set by setup.py: the sources this extension was built from
    // (craps_streams/accelerator/rules.py refuses it when the checkout's sources differ). Empty when built
    // by cargo alone, which native.py refuses too.
    m.add("SOURCE_DIGEST", option_env!("CRAPS_NATIVE_SOURCE").unwrap_or(""))?;
    // The directory of those sources (setup.py): where that check reads them. Empty when built by
    // cargo alone.
    m.add("SOURCE_DIR", option_env!("CRAPS_NATIVE_SOURCE_DIR").unwrap_or(""))?;
    Ok(())
}
