//! PEAK: the adds and multiplies per second this CPU sustains, measured like COPY (same run,
//! same threads, the solvers' precision and vector width), so that a solver bound by its
//! arithmetic has a measured bound beside its flop rate, as one bound by memory has COPY.

use std::hint::black_box;

use crate::cpu::Simd;
use crate::real::Real;

/// Vector registers of independent accumulators per thread: enough to cover the latency of a
/// multiply and then an add on every floating-point pipe, few enough to stay in registers
/// beside the two constants. AVX-512 has 32 vector registers; AVX2 and SSE have 16, where 16
/// accumulators spill to the stack and halve the rate (45 against 86 Gflop/s per core
/// measured on a Zen 4 class core with AVX2), so they get 12, as the portable build on x86-64.
const VECTORS: usize = 16;
const VECTORS_AVX2: usize = 12;
const VECTORS_PLAIN: usize = if cfg!(target_arch = "x86_64") { 12 } else { VECTORS };
/// Updates of every accumulator per call (about 0.1 ms at 4 GHz with 16 f32 lanes).
const REPS: usize = 1 << 16;

/// PEAK on every thread of the current pool at once: (calls, seconds per call, flops per call).
pub fn measure<T: Real>(seconds: f64) -> (u64, f64, f64) {
    let threads = rayon::current_num_threads();
    let lanes = lanes::<T>();
    let (calls, t) = crate::bench::time_loop(seconds, || {
        rayon::broadcast(|_| black_box(accumulate::<T>()));
    });
    (calls, t, (threads * vectors() * lanes * REPS * 2) as f64)
}

/// Accumulator registers [`accumulate`] uses.
fn vectors() -> usize {
    match Simd::detect() {
        Simd::Avx512 => VECTORS,
        Simd::Avx2 => VECTORS_AVX2,
        Simd::None => VECTORS_PLAIN,
    }
}

/// Elements per vector register in the code [`accumulate`] runs.
fn lanes<T>() -> usize {
    let bytes = match Simd::detect() {
        Simd::Avx512 => 64,
        Simd::Avx2 => 32,
        Simd::None => 16,
    };
    bytes / std::mem::size_of::<T>()
}

/// One call's updates in the widest vector code the CPU has (as the finite-volume bands).
fn accumulate<T: Real>() -> T {
    let four = std::mem::size_of::<T>() == 4;
    match Simd::detect() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU supports AVX-512F (detected).
        Simd::Avx512 => unsafe { if four { avx512::<T, { VECTORS * 16 }>() } else { avx512::<T, { VECTORS * 8 }>() } },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU supports AVX2 (detected).
        Simd::Avx2 => unsafe {
            if four {
                avx2::<T, { VECTORS_AVX2 * 8 }>()
            } else {
                avx2::<T, { VECTORS_AVX2 * 4 }>()
            }
        },
        _ => {
            if four {
                updates::<T, { VECTORS_PLAIN * 4 }>()
            } else {
                updates::<T, { VECTORS_PLAIN * 2 }>()
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn avx512<T: Real, const N: usize>() -> T {
    updates::<T, N>()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2<T: Real, const N: usize>() -> T {
    updates::<T, N>()
}

/// `a = a * m + c` on `N` independent accumulators, `REPS` times: one multiply and one add
/// each (Rust contracts no multiply-adds), converging to `c / (1 - m)`, so no value overflows
/// or becomes subnormal.
#[inline(always)]
fn updates<T: Real, const N: usize>() -> T {
    let mut acc = [T::zero(); N];
    for (k, a) in acc.iter_mut().enumerate() {
        *a = T::of(k as f64 / N as f64);
    }
    let (m, c) = (black_box(T::of(0.5)), black_box(T::of(0.25)));
    for _ in 0..REPS {
        for a in &mut acc {
            *a = *a * m + c;
        }
    }
    acc.iter().fold(T::zero(), |s, &a| s + a)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The accumulators converge to `c / (1 - m) = 0.5`: the loop ran its updates.
    #[test]
    fn accumulators_converge() {
        let n = (vectors() * lanes::<f32>()) as f32;
        assert_eq!(accumulate::<f32>(), 0.5 * n);
        assert_eq!(accumulate::<f64>(), 0.5 * (vectors() * lanes::<f64>()) as f64);
    }
}
