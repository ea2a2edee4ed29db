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
