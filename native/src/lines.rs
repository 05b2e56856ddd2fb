//! Output JSON lines written natively (craps_streams/replay/run.py `output_lines`).
//!
//! A replay's outputs are written as the contract defines their text: `json.dumps` of
//! `output_to_record(o)` with sorted keys, compact, ASCII. msgspec wrote them (its
//! `order="sorted"` sorts every object's keys as it writes it: a tenth of a replay's work). Each
//! output class's keys are sorted here once, and a line is written straight from the Struct's
//! slots.
//!
//! It writes only what it is sure to write as `json.dumps` does: exact str of printable ASCII
//! without a quote or a backslash (which json writes as they are), exact int within 64 bits,
//! bool, None, and tuples of such str. On any other value (text json would escape, a big int, an
//! unknown class, an EventRejected with its raw event) it writes nothing and the caller takes the
//! msgspec path, which handles them (tests/replay/test_output_lines.py holds both to the json
//! module's text on floors and odd strings).

use crate::slots::{field, offset_of};
use crate::py::{exact_int, push_int, Obj};
use pyo3::ffi;
use pyo3::prelude::*;
use std::fs::File;
use std::io::Write;
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;
use std::sync::Mutex;
use pyo3::types::{PyAnyMethods, PyIterator, PyList, PyTuple};

enum Slot {
    Tag(Vec<u8>),  // the class name, as the "type" key's value
    Field(usize),  // a field's slot offset in the Struct
}

struct OutFormat {
    cls: Py<PyAny>,
    keys: Vec<(Vec<u8>, Slot)>, // `"key":` (with the separator before it) and where its value is
}

/// The output classes' sorted keys: `LineWriter([(cls, field names), ...])`.
#[pyclass(frozen)]
pub struct LineWriter {
    formats: Vec<OutFormat>,
    /// `write`'s buffer, kept from call to call: a batch's lines are a few hundred kilobytes,
    /// which a new allocation each time gets as fresh pages from the kernel.
    buffer: Mutex<Vec<u8>>,
}

/// Appends `"text"` when json writes the str as it is (printable ASCII, no quote, no backslash).
///
/// # Safety
/// The GIL is held, and every object it is given is live for the call.
#[inline(always)]
unsafe fn push_plain_str(buf: &mut Vec<u8>, o: Obj) -> bool {
    if ffi::PyUnicode_CheckExact(o) == 0 || ffi::PyUnicode_IS_ASCII(o) == 0 {
        return false;
    }
    let n = ffi::PyUnicode_GET_LENGTH(o) as usize;
    let text = std::slice::from_raw_parts(ffi::PyUnicode_DATA(o) as *const u8, n);
    // Every byte looked at, without an early exit, so the loop is vectorized (an ASCII str's
    // bytes are below 0x80: 0x7f is the only one above 0x7e).
    let odd = text.iter().fold(false, |odd, &b| odd | (b < 0x20) | (b == 0x7f) | (b == b'"') | (b == b'\\'));
    if odd {
        return false;
    }
    buf.push(b'"');
    buf.extend_from_slice(text);
    buf.push(b'"');
    true
}

/// # Safety
/// The GIL is held, and every object it is given is live for the call.
#[inline(always)]
unsafe fn push_value(buf: &mut Vec<u8>, o: Obj) -> bool {
    if ffi::PyUnicode_CheckExact(o) != 0 {
        return push_plain_str(buf, o);
    }
    if o == ffi::Py_True() {
        buf.extend_from_slice(b"true");
        return true;
    }
    if o == ffi::Py_False() {
        buf.extend_from_slice(b"false");
        return true;
    }
    if o == ffi::Py_None() {
        buf.extend_from_slice(b"null");
        return true;
    }
    if let Some(v) = exact_int(o) {
        push_int(buf, v);
        return true;
    }
    if ffi::PyTuple_CheckExact(o) != 0 {
        buf.push(b'[');
        let n = ffi::PyTuple_GET_SIZE(o);
        for i in 0..n {
            if i > 0 {
                buf.push(b',');
            }
            if !push_plain_str(buf, ffi::PyTuple_GET_ITEM(o, i)) {
                return false;
            }
        }
        buf.push(b']');
        return true;
    }
    false
}

#[pymethods]
impl LineWriter {
    #[new]
    fn new(classes: &Bound<PyAny>) -> PyResult<LineWriter> {
        let mut formats = Vec::new();
        for c in PyIterator::from_object(classes)? {
            let c = c?;
            let cls = c.get_item(0)?;
            let tag: String = cls.getattr("__name__")?.extract()?;
            let mut names: Vec<String> = Vec::new();
            for n in PyIterator::from_object(&c.get_item(1)?)? {
                names.push(n?.extract()?);
            }
            let mut keys: Vec<(String, Slot)> = vec![("type".to_string(), Slot::Tag(tag.into_bytes()))];
            for n in names {
                let off = offset_of(&cls, &n)?;
                keys.push((n, Slot::Field(off)));
            }
            // json.dumps(sort_keys=True) sorts the keys as str, which for ASCII keys is by bytes.
            keys.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            let keys = keys
                .into_iter()
                .enumerate()
                .map(|(i, (k, slot))| (format!("{}\"{}\":", if i == 0 { "{" } else { "," }, k).into_bytes(), slot))
                .collect();
            formats.push(OutFormat { cls: cls.unbind(), keys });
        }
        Ok(LineWriter { formats, buffer: Mutex::new(Vec::new()) })
    }

    /// The JSON lines of `outputs` (a list), each ended by a newline, as one str; None when any
    /// output is of a class or holds a value this module leaves to the caller. With `wanted` (a
    /// tuple of classes), the outputs of any other class are left out (a replay's `--only`).
    #[pyo3(signature = (outputs, wanted=None))]
    fn lines(&self, py: Python<'_>, outputs: &Bound<PyList>, wanted: Option<&Bound<PyTuple>>)
             -> PyResult<Option<Py<PyAny>>> {
        let mut buf: Vec<u8> = Vec::new(); // `fill` reserves for the batch
        if !self.fill(&mut buf, outputs, wanted) {
            return Ok(None);
        }
        // SAFETY: the GIL is held (`py`). ASCII only (`fill` wrote nothing else): the str is made
        // without decoding.
        unsafe {
            let s = ffi::PyUnicode_New(buf.len() as ffi::Py_ssize_t, 127);
            if s.is_null() {
                return Err(crate::py::fetch());
            }
            std::ptr::copy_nonoverlapping(buf.as_ptr(), ffi::PyUnicode_DATA(s) as *mut u8, buf.len());
            Ok(Some(Py::from_owned_ptr(py, s)))
        }
    }

    /// `lines`' text written to the open file descriptor `fd` (the whole of it, the interpreter's
    /// lock released while it is written), from a buffer kept between calls: the bytes written,
    /// or None, with nothing written, where `lines` gives None. OSError when the write fails.
    #[pyo3(signature = (outputs, fd, wanted=None))]
    fn write(&self, py: Python<'_>, outputs: &Bound<PyList>, fd: i32, wanted: Option<&Bound<PyTuple>>)
             -> PyResult<Option<usize>> {
        let mut buf = self.buffer.lock().unwrap_or_else(|e| e.into_inner());
        buf.clear();
        if !self.fill(&mut buf, outputs, wanted) {
            return Ok(None);
        }
        let text: &[u8] = &buf;
        py.allow_threads(|| {
            // SAFETY: the caller's descriptor, borrowed for the call and never closed here
            // (ManuallyDrop: the File is not dropped).
            let mut file = ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
            file.write_all(text)
        })?;
        Ok(Some(text.len()))
    }
}

impl LineWriter {
    /// Appends the lines of `outputs` to `buf`; false (`buf` then holds a part) where `lines`
    /// gives None.
    fn fill(&self, buf: &mut Vec<u8>, outputs: &Bound<PyList>, wanted: Option<&Bound<PyTuple>>) -> bool {
        let wanted: Option<Vec<Obj>> = wanted.map(|w| w.iter().map(|c| c.as_ptr()).collect());
        // SAFETY: the GIL is held (`outputs` is bound to it); each output is read by an index
        // below the list's length, borrowed while the list holds it, and its slots only after its
        // type was found among the classes whose offsets were read (slots.rs, invariant 1).
        unsafe {
            let n = ffi::PyList_GET_SIZE(outputs.as_ptr());
            buf.reserve(n as usize * 280);
            for i in 0..n {
                let o = ffi::PyList_GET_ITEM(outputs.as_ptr(), i);
                let cls = ffi::Py_TYPE(o) as Obj;
                if wanted.as_ref().is_some_and(|w| !w.contains(&cls)) {
                    continue;
                }
                let Some(format) = self.formats.iter().find(|f| f.cls.as_ptr() == cls) else { return false };
                for (key, slot) in &format.keys {
                    buf.extend_from_slice(key);
                    match slot {
                        Slot::Tag(tag) => {
                            buf.push(b'"');
                            buf.extend_from_slice(tag);
                            buf.push(b'"');
                        }
                        Slot::Field(off) => {
                            let v = field(o, *off); // the type compared above (slots.rs)
                            if v.is_null() || !push_value(buf, v) {
                                return false;
                            }
                        }
                    }
                }
                buf.extend_from_slice(b"}\n");
            }
        }
        true
    }
}
