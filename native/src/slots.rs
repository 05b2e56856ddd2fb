//! The accelerator's two unsafe shortcuts, in this one module, with what keeps them sound.
//!
//! **The context (`CTX`).** The classes, constants and rule facts every call reads
//! (`crate::ctx::Ctx`) live behind one atomic pointer, so that a call reads them without a lock
//! or a Python lookup. Invariants:
//! 1. It is written only by `install`, called from `init` (a `#[pyfunction]`), so with the GIL held;
//!    it is read only by code running under the GIL (every entry point is a Python call). The GIL
//!    orders every write before every later read, and the pointer is atomic besides: no data race.
//! 2. A context once installed is never freed or changed: `install` of a new one (a second `init`,
//!    craps_streams/accelerator/rules.py `configure`, which only tests call again) keeps the old
//!    one in `RETIRED`. So the `&'static Ctx` that `ctx()` returns stays valid for the process's
//!    life, even when Python code called back during a call (an alert's wording, the fallback)
//!    installs a new context meanwhile, and the Python objects a context holds (borrowed by
//!    tables and outputs made under it) stay alive.
//! 3. Every entry point that reads it either is unreachable before `init` (the classes it serves
//!    are handed out only after it: `Table` values come from `apply` or `from_record`, which check
//!    `ready()`), or checks `ready()` itself.
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
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

/// The context installed last; null before the first `init`.
static CTX: AtomicPtr<Ctx> = AtomicPtr::new(ptr::null_mut());

/// The contexts replaced by a later `init`, owned here for the process's life (invariant 2).
static RETIRED: Mutex<Vec<Retired>> = Mutex::new(Vec::new());

/// A replaced context, by address: never read again through this, only kept.
struct Retired(#[allow(dead_code)] *mut Ctx);

// SAFETY: a `Retired` is only stored, never dereferenced or freed, so moving it between threads
// touches no Python object.
unsafe impl Send for Retired {}

/// The context installed last (invariants 1-3 above).
///
/// # Safety
/// The caller holds the GIL and a context is installed (`ready()`; every entry point is reached
/// only after `init`, or checks `ready()` first).
#[inline(always)]
pub unsafe fn ctx() -> &'static Ctx {
    // SAFETY: non-null by the caller's contract; the pointer came from `Box::into_raw` in
    // `install` and is never freed (invariant 2), so the reference is valid for 'static.
    unsafe { &*CTX.load(Ordering::Acquire) }
}

pub fn ready() -> bool {
    !CTX.load(Ordering::Acquire).is_null()
}

/// Installs a new context; the previous one, if any, is kept in `RETIRED` (invariant 2).
pub fn install(c: Ctx) {
    let old = CTX.swap(Box::into_raw(Box::new(c)), Ordering::AcqRel);
    if !old.is_null() {
        RETIRED.lock().unwrap_or_else(|e| e.into_inner()).push(Retired(old));
    }
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
