//! Helpers for the unit tests.

/// Deterministic pseudo-random values in [0, 1) (a 64-bit LCG).
pub fn noise(n: usize, seed: u64) -> Vec<f64> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 11) as f64 / (1u64 << 53) as f64
        })
        .collect()
}
