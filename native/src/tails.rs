//! The Chernoff bound's minimisation (craps_streams/surveillance/tails.py `chernoff_lower_tail`), the
//! surveillance's costliest step once a hold line's z is low (a seventh of an Avro replay of a
//! day, in Python).
//!
//! The same arithmetic in the same order as the Python function, operation by operation, so the
//! result is the same double to the last bit: IEEE-754 doubles, no fused multiply-add (Rust never
//! contracts), the integers converted to doubles where Python converts them (correctly rounded
//! both ways), and `exp` and `log` from the same C library Python's `math` calls.
//! tests/surveillance/test_tails.py holds the two to equality on pinned random lines.

use pyo3::prelude::*;

/// log E[exp(-u Y)], and the mean and variance of Y under the tilt exp(-u Y) (`_log_mgf`).
#[inline(always)]
fn log_mgf(unit: &[(f64, f64)], u: f64) -> (f64, f64, f64) {
    let top = -u * unit[0].0;
    let (mut total, mut mean, mut second) = (0.0f64, 0.0f64, 0.0f64);
    for &(v, p) in unit {
        let w = p * (-u * v - top).exp();
        total += w;
        mean += w * v;
        second += w * v * v;
    }
    mean /= total;
    let var = second / total - mean * mean;
    (top + total.ln(), mean, if var > 0.0 { var } else { 0.0 }) // max(0.0, var), NaN as 0.0
}

/// `chernoff_minimum(unit, items, h, scale)` -> the smallest exponent found (the bound is
/// min(1, exp of it)): `unit` the per-unit (value, probability) pairs, values ascending; `items`
/// the (stake, decisions) pairs, sorted; `scale` the largest stake. As `chernoff_lower_tail`
/// after its early returns.
#[pyfunction]
pub fn chernoff_minimum(unit: Vec<(f64, f64)>, items: Vec<(i64, i64)>, h: f64, scale: i64) -> f64 {
    // (Integer values come as doubles, converted as Python converts them in `v * w`.)
    // The integer products Python forms before multiplying by a double: c, c*s, c*s*s.
    let terms: Vec<(f64, f64, f64, f64)> = items
        .iter()
        .map(|&(s, c)| {
            let (s, c) = (s as i128, c as i128);
            (s as f64, c as f64, (c * s) as f64, (c * s * s) as f64)
        })
        .collect();
    let exponent = |t: f64| -> (f64, f64, f64) {
        let (mut value, mut slope, mut curve) = (t * h, h, 0.0f64);
        for &(s, c, cs, css) in &terms {
            let (log_m, m, var) = log_mgf(&unit, t * s);
            value += c * log_m;
            slope -= cs * m;
            curve += css * var;
        }
        (value, slope, curve)
    };
    let scale_f = scale as f64;
    let (mut lo, mut hi) = (0.0f64, 1.0 / scale_f);
    while exponent(hi).1 < 0.0 {
        lo = hi;
        hi *= 2.0;
        if hi * scale_f > 1e4 {
            break;
        }
    }
    let mut t = (lo + hi) / 2.0;
    let mut best = 0.0f64;
    let tolerance = 1e-9 * if h.abs() > 1.0 { h.abs() } else { 1.0 };
    for _ in 0..60 {
        let (value, slope, curve) = exponent(t);
        if value < best {
            best = value;
        }
        if slope.abs() <= tolerance {
            break;
        }
        if slope < 0.0 {
            lo = t;
        } else {
            hi = t;
        }
        let step = if curve > 0.0 { t - slope / curve } else { (lo + hi) / 2.0 };
        t = if lo < step && step < hi { step } else { (lo + hi) / 2.0 };
        if hi - lo <= 1e-12 * hi {
            break;
        }
    }
    best
}
