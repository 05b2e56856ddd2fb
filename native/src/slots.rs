//! The accelerator's two shortcuts past Python lookups, in this one module, with what keeps them
//! sound: the context every call reads, and raw reads of Struct slots.
//!
//! **The context (`CURRENT`).** The classes, constants and rule facts every call reads
//! (`crate::ctx::Ctx`) are one `Arc<Ctx>`, owned by the extension module's state: a
//! `GILProtected<RefCell<Option<Arc<Ctx>>>>`, reached only with the GIL held. Invariants:
//! 1. It is set only by `install`, called from `init` (a `#[pyfunction]`), so with the GIL held,
//!    and read only through `current`, with the GIL held: the GIL orders every write before every
//!    later read. No `static mut`, no raw pointer to the context; the one `unsafe` it needs is
//!    `Send`/`Sync` for `Ctx` (ctx.rs), which holds Python objects touched only under the GIL.
//! 2. Each entry point takes its own clone of the `Arc` (`crate::context`) once, at entry, and
//!    hands `&Ctx` down to everything it calls: a call reads one context from start to end. When
//!    Python code called back during a call (an alert's wording, the fallback) installs a new
//!    context meanwhile (craps_streams/accelerator/rules.py `configure`), the running call's clone
//!    keeps the old one alive until the call returns.
//! 3. A replaced context is dropped as soon as no running call holds it: its `Drop` releases every
//!    Python reference it took at `init` (the `O`s in `Ctx::refs`), with the GIL held (it is
//!    dropped either by `install` or at the end of an entry point). Nothing outside a call keeps a
//!    pointer into a context: tables keep their own references and plain numbers (their rules,
//!    their paytables' facts), so re-initialising does not leak, and a table made under an old
//!    context stays valid.
//!
//! **Raw slot reads (`field`).** A msgspec Struct keeps each field in a slot of the instance, at
//! the offset of the class's member descriptor for it (as `__slots__` do). The hot paths read a
//! field there (one load) instead of `getattr` (a lookup and a call). Invariants:
//! 1. An offset is read from the member descriptor of the exact class (`offset_of`), and `field`
//!    is called only on an instance whose type was first compared, by identity, with that class
//!    (`Py_TYPE(e) == cls`): no subclass, no other class.
//! 2. `offset_of` refuses a name that is not a member descriptor of the class, and `check_layout`
//!    (run by `init` for every event class, inputs and outputs) builds an instance from distinct
//!    objects and requires each slot read to return exactly the object `getattr` returns, within
//!    the instance's size. A msgspec whose Structs are laid out otherwise fails there, `init`
//!    raises, and craps_streams/accelerator/rules.py refuses the accelerator with that message: the Python
//!    core settles.
//! 3. The value read is borrowed: the instance holds the reference for as long as the caller holds
//!    the instance. A constructed Struct has every slot set; a NULL read (never seen) is treated by
//!    the callers as a value they do not take.

use crate::ctx::Ctx;
use crate::py::Obj;
use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::sync::GILProtected;
use std::cell::RefCell;
use std::ptr;
use std::sync::Arc;

/// The context installed last; None before the first `init` (invariant 1).
static CURRENT: GILProtected<RefCell<Option<Arc<Ctx>>>> = GILProtected::new(RefCell::new(None));

/// The context installed last, a clone of its `Arc` (invariant 2); None before `init`.
#[inline(always)]
pub fn current(py: Python<'_>) -> Option<Arc<Ctx>> {
    CURRENT.get(py).borrow().clone()
}

/// Installs a new context; the previous one is dropped here, or by the last running call that
/// still holds it (invariant 3).
pub fn install(py: Python<'_>, c: Ctx) {
    let old = CURRENT.get(py).replace(Some(Arc::new(c)));
    // Dropped after the cell is released: releasing its references may run Python code (a
    // finalizer), which may call `init` again.
    drop(old);
}

/// The offset of a msgspec Struct field: its member descriptor's.
pub fn offset_of(cls: &Bound<PyAny>, name: &str) -> PyResult<usize> {
    let d = cls.getattr("__dict__")?.get_item(name).ok();
    let member_type = cls.py().import("types")?.getattr("MemberDescriptorType")?;
    let Some(d) = d.filter(|d| d.is_instance(&member_type).unwrap_or(false)) else {
        return Err(PyTypeError::new_err(format!(
            "{}.{name} is not a slot of the Struct, where the accelerator reads it", class_name(cls))));
    };
    // SAFETY: `d` is an instance of `types.MemberDescriptorType` (checked above), so it is a
    // `PyMemberDescrObject` whose `d_member` points at the class's static `PyMemberDef`.
    unsafe {
        let m = d.as_ptr() as *mut ffi::PyMemberDescrObject;
        let def = (*m).d_member as *mut ffi::PyMemberDef;
        if (*def).type_code != ffi::structmember::T_OBJECT_EX {
            return Err(PyTypeError::new_err(format!(
                "{}.{name} is not an object slot, where the accelerator reads one", class_name(cls))));
        }
        Ok((*def).offset as usize)
    }
}

/// A field of a Struct at its slot offset, borrowed (the instance holds it).
///
/// # Safety
/// `e` is a live instance of exactly the class `off` was read from (`offset_of`: the caller
/// compared its type by identity, invariant 1), whose layout `check_layout` accepted (invariant
/// 2); the GIL is held; the value is used only while `e` holds it (invariant 3).
#[inline(always)]
pub unsafe fn field(e: Obj, off: usize) -> Obj {
    // SAFETY: by the caller's contract the offset is that of an object slot inside `e`, aligned
    // for a pointer: the read stays within the instance.
    unsafe { *((e as *mut u8).add(off) as *mut Obj) }
}

fn class_name(cls: &Bound<PyAny>) -> String {
    cls.getattr("__name__").and_then(|n| n.extract()).unwrap_or_else(|_| "?".to_string())
}

/// Checks that every field of a Struct class (`__struct_fields__`) is read at its slot offset
/// exactly as `getattr` reads it (invariant 2): an instance made of distinct objects, each slot
/// read compared by identity with the attribute, inside the instance's size.
pub fn check_layout(cls: &Bound<PyAny>) -> PyResult<()> {
    let py = cls.py();
    let names: Vec<String> = cls.getattr("__struct_fields__")?.extract()?;
    let values: Vec<Bound<PyAny>> = names.iter().map(|_| py.eval(c"object()", None, None)).collect::<PyResult<_>>()?;
    let probe = cls.call1(PyTuple::new(py, &values)?)?;
    // SAFETY: `probe` is a live object; its type object is valid while it lives.
    let size = unsafe { (*ffi::Py_TYPE(probe.as_ptr())).tp_basicsize as usize };
    for (name, value) in names.iter().zip(&values) {
        let off = offset_of(cls, name)?;
        // SAFETY: the read is inside the instance (`off` plus a pointer within its basic size) and
        // aligned (a member descriptor's offset of an object slot); `probe` lives meanwhile.
        let read = if off + std::mem::size_of::<Obj>() <= size { unsafe { field(probe.as_ptr(), off) } } else { ptr::null_mut() };
        if read != value.as_ptr() || !probe.getattr(name.as_str())?.is(value) {
            return Err(PyTypeError::new_err(format!(
                "{}.{name}: the slot at offset {off} does not hold the field's value: this msgspec lays \
                 its Structs out otherwise than the accelerator reads them", class_name(cls))));
        }
    }
    Ok(())
}
