//! Value checks shared by the case sections of every solver; each error names the key.

use crate::error::{Result, input};

/// A positive, finite number or an error naming `key`.
pub fn positive(key: &str, v: f64) -> Result<()> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        input(format!("{key}: {v} must be a positive number"))
    }
}

/// `--seconds` of `sim bench` and `sim tune`: positive, and at most a day.
pub fn timed_seconds(v: f64) -> Result<()> {
    if !(v > 0.0 && v <= 86_400.0) {
        return input(format!("--seconds {v}: must be positive and at most a day (86400)"));
    }
    Ok(())
}

/// At least `min` and at most `max` of `what` (nodes, cells) along an axis.
pub fn count(key: &str, n: usize, what: &str, min: usize, max: usize) -> Result<()> {
    if n < min {
        return input(format!("{key}: {n} {what} is too few (at least {min})"));
    }
    if n > max {
        return input(format!("{key}: {n} {what} is more than the supported {max}"));
    }
    Ok(())
}

/// Worker threads allowed per hardware thread: more only slows a run down.
pub const THREADS_PER_CORE: usize = 4;

/// A thread count (0 = all hardware threads) within [`THREADS_PER_CORE`] times the hardware
/// threads of this machine, or an error naming `key`.
pub fn threads(key: &str, n: usize) -> Result<usize> {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    if n > THREADS_PER_CORE * cores {
        return input(format!(
            "{key}: {n} threads is more than {THREADS_PER_CORE} x the {cores} hardware threads of this machine"
        ));
    }
    Ok(n)
}

/// In an f32 run, every number of the solver section `solver` (serialised as the case file
/// writes it) within f32's range, or an error naming the key: beyond it a parameter becomes
/// infinite in the kernels.
pub fn fits_f32(solver: &impl serde::Serialize) -> Result<()> {
    fn walk(key: &str, v: &serde_json::Value) -> Result<()> {
        match v {
            serde_json::Value::Number(n) => match n.as_f64() {
                Some(x) if x.is_finite() && x.abs() > f32::MAX as f64 => input(format!(
                    "{key}: {x:e} is beyond the range of f32 (up to {:e}); use precision: f64",
                    f32::MAX
                )),
                _ => Ok(()),
            },
            serde_json::Value::Array(a) => a.iter().enumerate().try_for_each(|(i, v)| walk(&format!("{key}[{i}]"), v)),
            serde_json::Value::Object(m) => m.iter().try_for_each(|(k, v)| walk(&format!("{key}.{k}"), v)),
            _ => Ok(()),
        }
    }
    match serde_json::to_value(solver) {
        Ok(v) => walk("solver", &v),
        Err(_) => Ok(()),
    }
}
