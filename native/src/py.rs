//! Python objects through raw `pyo3::ffi` (every function here runs with the GIL held): owned
//! references, a map keyed by Python str, exact-type reads, strings.

use pyo3::ffi::{self, PyObject, Py_ssize_t};
use pyo3::prelude::*;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::ptr;

pub type Obj = *mut PyObject;

/// An owned (strong) reference.
pub struct O(pub Obj);

impl O {
    /// A new strong reference to a borrowed object.
    ///
    /// # Safety
    /// `p` is a live object and the GIL is held.
    #[inline(always)]
    pub unsafe fn new_ref(p: Obj) -> O {
        ffi::Py_INCREF(p);
        O(p)
    }
    /// Takes a new reference (from a C call); an error if it is NULL.
    ///
    /// # Safety
    /// `p` is NULL (with a Python error set) or a new reference the caller hands over, and the GIL is held.
    #[inline(always)]
    pub unsafe fn owned(p: Obj) -> PyResult<O> {
        if p.is_null() {
            Err(fetch())
        } else {
            Ok(O(p))
        }
    }
    #[inline(always)]
    pub fn p(&self) -> Obj {
        self.0
    }
    /// Hands the reference over (to a list, a tuple, a caller).
    #[inline(always)]
    pub fn into_ptr(self) -> Obj {
        let p = self.0;
        std::mem::forget(self);
        p
    }
}

impl Clone for O {
    fn clone(&self) -> O {
        // SAFETY: an `O` is made and dropped only with the GIL held, and holds a reference to a
        // live object: incrementing it is sound.
        unsafe { O::new_ref(self.0) }
    }
}

impl Drop for O {
    fn drop(&mut self) {
        // SAFETY: an `O` owns one reference to a live object and is dropped with the GIL held
        // (it lives only inside calls from Python and in objects Python frees).
        unsafe { ffi::Py_DECREF(self.0) }
    }
}

/// # Safety
/// The GIL is held.
pub unsafe fn fetch() -> PyErr {
    PyErr::fetch(Python::assume_gil_acquired())
}

// ---------------------------------------------------------------- a map keyed by Python str

/// A str key: its Python hash (cached in the str object) and the object, compared by value.
pub struct Key {
    h: isize,
    s: O,
}

impl Key {
    /// The key of an exact str (the caller checked the type).
    ///
    /// # Safety
    /// `s` is a live exact str and the GIL is held.
    #[inline(always)]
    pub unsafe fn of(s: Obj) -> Key {
        Key { h: ffi::PyObject_Hash(s), s: O::new_ref(s) }
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.h == other.h
            // SAFETY: both keys hold a str (`Key::of` takes only str) and are compared with the GIL held.
            && (self.s.0 == other.s.0 || unsafe { ffi::PyUnicode_Compare(self.s.0, other.s.0) } == 0)
    }
}
impl Eq for Key {}
impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_isize(self.h)
    }
}

#[derive(Default)]
pub struct IdHasher(u64);
impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!()
    }
    fn write_isize(&mut self, i: isize) {
        // Python's str hash is already well mixed (SipHash).
        self.0 = i as u64
    }
}
pub type StrMap<V> = HashMap<Key, V, BuildHasherDefault<IdHasher>>;

// ---------------------------------------------------------------- exact-type reads

/// An exact int (not a bool, not a subclass) that fits an i64, else None.
///
/// # Safety
/// The GIL is held, and every object it is given is live for the call.
#[inline(always)]
pub unsafe fn exact_int(o: Obj) -> Option<i64> {
    if ffi::PyLong_CheckExact(o) == 0 {
        return None;
    }
    let mut overflow = 0;
    let v = ffi::PyLong_AsLongLongAndOverflow(o, &mut overflow);
    if overflow != 0 || (v == -1 && !ffi::PyErr_Occurred().is_null()) {
        ffi::PyErr_Clear();
        return None;
    }
    Some(v)
}

/// # Safety
/// The GIL is held, and every object it is given is live for the call.
#[inline(always)]
pub unsafe fn is_str(o: Obj) -> bool {
    ffi::PyUnicode_CheckExact(o) != 0
}

/// Is `b` a str equal to the (exact, interned) str `a`?
///
/// # Safety
/// The GIL is held, and every object it is given is live for the call.
#[inline(always)]
pub unsafe fn same_str(a: Obj, b: Obj) -> bool {
    a == b || (ffi::PyUnicode_Check(b) != 0 && ffi::PyUnicode_Compare(a, b) == 0)
}

/// # Safety
/// The GIL is held; the caller owns the new reference (or handles NULL).
#[inline(always)]
pub unsafe fn new_int(v: i64) -> Obj {
    ffi::PyLong_FromLongLong(v)
}

/// # Safety
/// The GIL is held; the caller owns the new reference.
#[inline(always)]
pub unsafe fn new_bool(v: bool) -> Obj {
    let b = if v { ffi::Py_True() } else { ffi::Py_False() };
    ffi::Py_INCREF(b);
    b
}

// ---------------------------------------------------------------- strings

/// # Safety
/// The GIL is held; the caller owns the new reference.
pub unsafe fn interned(text: &str) -> Obj {
    let mut p = ffi::PyUnicode_FromStringAndSize(text.as_ptr() as *const _, text.len() as Py_ssize_t);
    ffi::PyUnicode_InternInPlace(&mut p);
    p
}

/// # Safety
/// The GIL is held; the caller owns the new reference (or handles NULL).
pub unsafe fn utf8_str(t: &str) -> Obj {
    ffi::PyUnicode_FromStringAndSize(t.as_ptr() as *const _, t.len() as Py_ssize_t)
}

/// The bytes of an ASCII exact str (compact: its data follows the header), or None.
///
/// # Safety
/// `o` is a live object, the GIL is held, and `o` outlives `'a`: the bytes are borrowed from its buffer.
#[inline(always)]
pub unsafe fn ascii<'a>(o: Obj) -> Option<&'a [u8]> {
    if ffi::PyUnicode_CheckExact(o) == 0 || ffi::PyUnicode_IS_ASCII(o) == 0 {
        return None;
    }
    let n = ffi::PyUnicode_GET_LENGTH(o) as usize;
    Some(std::slice::from_raw_parts(ffi::PyUnicode_DATA(o) as *const u8, n))
}

/// A new ASCII str of the concatenated parts.
///
/// # Safety
/// The GIL is held, and `a` and `b` are ASCII.
#[inline(always)]
pub unsafe fn ascii_str(a: &[u8], b: &[u8]) -> PyResult<O> {
    let n = a.len() + b.len();
    let o = O::owned(ffi::PyUnicode_New(n as Py_ssize_t, 127))?;
    let d = ffi::PyUnicode_DATA(o.p()) as *mut u8;
    ptr::copy_nonoverlapping(a.as_ptr(), d, a.len());
    ptr::copy_nonoverlapping(b.as_ptr(), d.add(a.len()), b.len());
    Ok(o)
}

/// str(a) + str(b), any str (the path of ids that are not ASCII).
///
/// # Safety
/// The GIL is held, and every object it is given is live for the call.
pub unsafe fn concat(a: Obj, b: Obj) -> PyResult<O> {
    O::owned(ffi::PyUnicode_Concat(a, b))
}

pub fn push_int(buf: &mut Vec<u8>, v: i64) {
    buf.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

// ---------------------------------------------------------------- containers

/// A new list owning these references.
///
/// # Safety
/// The GIL is held.
pub unsafe fn list_of(v: Vec<O>) -> PyResult<O> {
    let l = O::owned(ffi::PyList_New(v.len() as Py_ssize_t))?;
    for (i, o) in v.into_iter().enumerate() {
        ffi::PyList_SET_ITEM(l.p(), i as Py_ssize_t, o.into_ptr());
    }
    Ok(l)
}

/// A new tuple of borrowed references.
///
/// # Safety
/// The GIL is held, and every object it is given is live for the call.
pub unsafe fn tuple_of(v: &[Obj]) -> PyResult<O> {
    let t = O::owned(ffi::PyTuple_New(v.len() as Py_ssize_t))?;
    for (i, &o) in v.iter().enumerate() {
        ffi::Py_INCREF(o);
        ffi::PyTuple_SET_ITEM(t.p(), i as Py_ssize_t, o);
    }
    Ok(t)
}

/// d[key] = value (key an interned str); the value's reference is taken.
///
/// # Safety
/// `d` is a dict and `key` a live object, and the GIL is held.
#[inline(always)]
pub unsafe fn set_item(d: Obj, key: Obj, value: O) -> PyResult<()> {
    if ffi::PyDict_SetItem(d, key, value.p()) < 0 {
        return Err(fetch());
    }
    Ok(())
}

/// d[key] (borrowed), or None when missing; `d` must be an exact dict.
///
/// # Safety
/// `d` is an exact dict and `key` a live object, and the GIL is held; the value returned is borrowed from `d`, valid while `d` holds it.
#[inline(always)]
pub unsafe fn get_item(d: Obj, key: Obj) -> Option<Obj> {
    let v = ffi::PyDict_GetItemWithError(d, key);
    if v.is_null() {
        ffi::PyErr_Clear();
        None
    } else {
        Some(v)
    }
}

/// Calls `callable(*args)` (vectorcall); a new reference.
///
/// # Safety
/// The GIL is held, and every object it is given is live for the call.
#[inline(always)]
pub unsafe fn call(callable: Obj, args: &[Obj]) -> PyResult<O> {
    O::owned(ffi::PyObject_Vectorcall(callable, args.as_ptr(), args.len(), ptr::null_mut()))
}

/// # Safety
/// The GIL is held, and every object it is given is live for the call.
pub unsafe fn getattr(o: Obj, name: &str) -> PyResult<O> {
    let n = O::owned(utf8_str(name))?;
    O::owned(ffi::PyObject_GetAttr(o, n.p()))
}
