//! Output messages read straight into the records `decode_output` gives: the native form of
//! craps_streams/codec/fastread.py `output_reader`, for the ledger's reader.
//!
//! `decode_output` checks the single-object header, finds the writer schema by its fingerprint and
//! hands the body to fastavro's generic reader: about 5 µs a settlement, the largest stage of the
//! ledger's reading. This reads the outputs whose schema is all longs, ints and strings (a
//! settlement: `fastread._output_formats`) by the same rules: each field in the schema's order, a
//! long or an int as the zig-zag varint fastread reads (at most ten bytes), a string as its length
//! and strict UTF-8 bytes, the body ending where the message does; the record is the dict
//! `decode_output` makes, its "type" first.
//!
//! It reads only what it is sure of. An unknown fingerprint, a read beyond the message, a varint
//! it would not read the same way, bytes that are not UTF-8, an int beyond 32 bits or bytes left
//! over make the item None, and the caller takes the plain path, which reads it or raises
//! (`CodecError`) as before: tests/codec/test_fastread.py holds both paths to the same records on
//! a simulated floor's outputs and on damaged messages.

use crate::avro::{long, raw, Read};
use crate::py::{set_item, utf8_str, O};
use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use std::collections::HashMap;

// The single-object header: the magic (2 bytes) and the schema's fingerprint (8).
const HEADER: usize = 10;

#[derive(Clone, Copy)]
enum Code {
    Long,
    Int,
    Str,
}

struct Format {
    name: Py<PyString>,
    fields: Vec<(Py<PyString>, Code)>,
}

/// `OutputReader([(header, name, [(field, code), ...]), ...])`: each output schema's header (magic
/// and fingerprint), its name (the record's "type") and its fields in the schema's order, the
/// codes "long", "int", "string".
#[pyclass(frozen, module = "craps_streams.accelerator._native")]
pub struct OutputReader {
    formats: HashMap<Vec<u8>, Format>,
    type_key: Py<PyString>,
}

impl OutputReader {
    /// The fields of `f` read from `data` at `pos` into the dict `d`; Err where the plain path decides.
    ///
    /// # Safety
    /// The GIL is held and `d` is a live dict.
    unsafe fn fields(f: &Format, data: &[u8], d: &O) -> PyResult<Read<()>> {
        let mut pos = HEADER;
        macro_rules! get {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(odd) => return Ok(Err(odd)),
                }
            };
        }
        for (key, code) in &f.fields {
            let value = match code {
                Code::Long | Code::Int => {
                    let v = get!(long(data, &mut pos));
                    if matches!(code, Code::Int) && i32::try_from(v).is_err() {
                        return Ok(Err(crate::avro::Odd::Record));
                    }
                    O::owned(ffi::PyLong_FromLongLong(v))?
                }
                Code::Str => {
                    let t = get!(raw(data, &mut pos));
                    let Ok(u) = std::str::from_utf8(t) else { return Ok(Err(crate::avro::Odd::Record)) };
                    O::owned(utf8_str(u))?
                }
            };
            set_item(d.p(), key.as_ptr(), value)?;
        }
        if pos != data.len() {
            return Ok(Err(crate::avro::Odd::Record)); // bytes left over: the plain path's error
        }
        Ok(Ok(()))
    }
}

#[pymethods]
impl OutputReader {
    #[new]
    fn new(py: Python<'_>, formats: Vec<(Vec<u8>, String, Vec<(String, String)>)>) -> PyResult<OutputReader> {
        let mut out = HashMap::new();
        for (header, name, fields) in formats {
            if header.len() != HEADER {
                return Err(PyValueError::new_err(format!("a header of {} bytes, not {HEADER}", header.len())));
            }
            let mut codes = Vec::new();
            for (field, code) in fields {
                let code = match code.as_str() {
                    "long" => Code::Long,
                    "int" => Code::Int,
                    "string" => Code::Str,
                    other => return Err(PyValueError::new_err(format!("field code {other:?}"))),
                };
                codes.push((PyString::intern(py, &field).unbind(), code));
            }
            out.insert(header, Format { name: PyString::intern(py, &name).unbind(), fields: codes });
        }
        Ok(OutputReader { formats: out, type_key: PyString::intern(py, "type").unbind() })
    }

    /// `decode(message)` -> the record `decode_output(message)` gives, or None where the plain
    /// path must read it.
    fn decode(&self, py: Python<'_>, message: &Bound<PyBytes>) -> PyResult<Option<Py<PyAny>>> {
        let data = message.as_bytes();
        if data.len() < HEADER {
            return Ok(None);
        }
        let Some(f) = self.formats.get(&data[..HEADER]) else { return Ok(None) };
        // SAFETY: the GIL is held (`py`); the dict is new and owned here; every read checks the
        // length left in `data`, which `message` keeps alive for the call.
        unsafe {
            let d = O::owned(ffi::PyDict_New())?;
            set_item(d.p(), self.type_key.as_ptr(), O::new_ref(f.name.as_ptr()))?;
            match Self::fields(f, data, &d)? {
                Ok(()) => Ok(Some(Py::from_owned_ptr(py, d.into_ptr()))),
                Err(_) => Ok(None),
            }
        }
    }
}
