//! The core's outputs written as Avro single-object messages: the native form of
//! craps_streams/codec/fastwrite.py, for the settling worker's produce.
//!
//! `encode_output(output_to_record(o))` builds a dict of the Struct, checks every field of it
//! against the schema again and hands it to fastavro's generic writer: about 13 µs an output, the
//! largest stage of the worker's loop. This writes the same bytes from the Struct's slots, by the
//! schema's field order: the header (magic and fingerprint), then each field in the Avro binary
//! encoding (a long or an int as a zig-zag varint, a string as its UTF-8 length and bytes, an
//! array of strings as one block of its items and the end marker, none for an empty one).
//!
//! It writes only what it is sure `encode_output` writes: exact str (UTF-8 encodable), exact int
//! within the field's range (64 bits for a long, 32 for an int), a tuple of exact str for an
//! array. On any other value, or a class it was not given, the item is None and the caller takes
//! the plain path, which writes it or raises as before (tests/codec/test_fastwrite.py holds both
//! to the same bytes on simulated floors and odd values).

use crate::py::{exact_int, tuple_of, Obj, O};
use crate::slots::{check_layout, field, offset_of};
use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyAnyMethods, PyBytes, PyIterator, PyList};

#[derive(Clone, Copy)]
enum Code {
    Long,
    Int,
    Str,
    Strings,
}

struct Format {
    cls: Py<PyAny>,
    header: Vec<u8>,
    topic: Py<PyAny>,
    key: usize, // the table id's slot: the message key
    fields: Vec<(usize, Code)>,
}

/// `OutputWriter([(cls, header, topic, [(field, code), ...]), ...])`, the fields in the schema's
/// order, the codes "long", "int", "string", "strings" (an array of strings).
#[pyclass(frozen, module = "craps_streams.accelerator._native")]
pub struct OutputWriter {
    formats: Vec<Format>,
}

#[inline(always)]
fn push_long(buf: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        buf.push((z as u8) | 0x80);
        z >>= 7;
    }
    buf.push(z as u8);
}

/// The UTF-8 bytes of an exact str, or None (not a str, or not encodable: a lone surrogate).
///
/// # Safety
/// `o` is a live object, the GIL is held, and `o` outlives `'a`: the bytes are borrowed from its UTF-8 buffer.
#[inline(always)]
unsafe fn utf8<'a>(o: Obj) -> Option<&'a [u8]> {
    if ffi::PyUnicode_CheckExact(o) == 0 {
        return None;
    }
    let mut size: ffi::Py_ssize_t = 0;
    let p = ffi::PyUnicode_AsUTF8AndSize(o, &mut size);
    if p.is_null() {
        ffi::PyErr_Clear();
        return None;
    }
    Some(std::slice::from_raw_parts(p as *const u8, size as usize))
}

/// # Safety
/// The GIL is held, and every object it is given is live for the call.
#[inline(always)]
unsafe fn push_str(buf: &mut Vec<u8>, o: Obj) -> bool {
    match utf8(o) {
        Some(b) => {
            push_long(buf, b.len() as i64);
            buf.extend_from_slice(b);
            true
        }
        None => false,
    }
}

/// # Safety
/// The GIL is held, and every object it is given is live for the call.
#[inline(always)]
unsafe fn push_value(buf: &mut Vec<u8>, o: Obj, code: Code) -> bool {
    match code {
        Code::Str => push_str(buf, o),
        Code::Long => match exact_int(o) {
            Some(v) => {
                push_long(buf, v);
                true
            }
            None => false,
        },
        Code::Int => match exact_int(o) {
            Some(v) if v >= i32::MIN as i64 && v <= i32::MAX as i64 => {
                push_long(buf, v);
                true
            }
            _ => false,
        },
        Code::Strings => {
            if ffi::PyTuple_CheckExact(o) == 0 {
                return false;
            }
            let n = ffi::PyTuple_GET_SIZE(o);
            if n > 0 {
                push_long(buf, n as i64);
                for i in 0..n {
                    if !push_str(buf, ffi::PyTuple_GET_ITEM(o, i)) {
                        return false;
                    }
                }
            }
            buf.push(0);
            true
        }
    }
}

impl OutputWriter {
    /// (topic, key, value) of one output, or None when this leaves it to the plain path.
    ///
    /// # Safety
    /// The GIL is held, and every object it is given, and the objects `self` holds, are live for the call.
    unsafe fn message(&self, buf: &mut Vec<u8>, o: Obj) -> PyResult<Option<O>> {
        let cls = ffi::Py_TYPE(o) as Obj;
        let Some(format) = self.formats.iter().find(|f| f.cls.as_ptr() == cls) else { return Ok(None) };
        buf.clear();
        buf.extend_from_slice(&format.header);
        for &(off, code) in &format.fields {
            let v = field(o, off); // the type compared above (slots.rs)
            if v.is_null() || !push_value(buf, v, code) {
                return Ok(None);
            }
        }
        let table_id = field(o, format.key);
        let Some(key) = (if table_id.is_null() { None } else { utf8(table_id) }) else { return Ok(None) };
        let key = O::owned(ffi::PyBytes_FromStringAndSize(key.as_ptr() as *const _, key.len() as ffi::Py_ssize_t))?;
        let value = O::owned(ffi::PyBytes_FromStringAndSize(buf.as_ptr() as *const _, buf.len() as ffi::Py_ssize_t))?;
        Ok(Some(tuple_of(&[format.topic.as_ptr(), key.p(), value.p()])?))
    }
}

#[pymethods]
impl OutputWriter {
    #[new]
    fn new(formats: &Bound<PyAny>) -> PyResult<OutputWriter> {
        let mut out = Vec::new();
        for f in PyIterator::from_object(formats)? {
            let f = f?;
            let cls = f.get_item(0)?;
            check_layout(&cls)?; // the slots read where `field` reads them (slots.rs, invariant 2)
            let header: Vec<u8> = f.get_item(1)?.downcast::<PyBytes>()?.as_bytes().to_vec();
            let topic = f.get_item(2)?;
            let mut fields = Vec::new();
            for nc in PyIterator::from_object(&f.get_item(3)?)? {
                let (name, code): (String, String) = nc?.extract()?;
                let code = match code.as_str() {
                    "long" => Code::Long,
                    "int" => Code::Int,
                    "string" => Code::Str,
                    "strings" => Code::Strings,
                    other => return Err(PyValueError::new_err(format!("field code {other:?}"))),
                };
                fields.push((offset_of(&cls, &name)?, code));
            }
            let key = offset_of(&cls, "table_id")?;
            out.push(Format { cls: cls.unbind(), header, topic: topic.unbind(), key, fields });
        }
        Ok(OutputWriter { formats: out })
    }

    /// The messages of `outputs` (a list), in order: `(topic, key, value)` for each output this
    /// writes, None for each it leaves to the plain path.
    fn messages(&self, py: Python<'_>, outputs: &Bound<PyList>) -> PyResult<Py<PyAny>> {
        let mut buf: Vec<u8> = Vec::with_capacity(256);
        // SAFETY: the GIL is held (`py`); each output is read by an index below the list's length,
        // borrowed while the list holds it; the new list is filled at each index once, with owned
        // references.
        unsafe {
            let n = ffi::PyList_GET_SIZE(outputs.as_ptr());
            let list = O::owned(ffi::PyList_New(n))?;
            for i in 0..n {
                let o = ffi::PyList_GET_ITEM(outputs.as_ptr(), i);
                let item = match self.message(&mut buf, o)? {
                    Some(m) => m.into_ptr(),
                    None => {
                        ffi::Py_INCREF(ffi::Py_None());
                        ffi::Py_None()
                    }
                };
                ffi::PyList_SET_ITEM(list.p(), i, item);
            }
            Ok(Py::from_owned_ptr(py, list.into_ptr()))
        }
    }
}
