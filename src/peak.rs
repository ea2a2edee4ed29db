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
/// measured on a Zen 4 class core with AVX2), so they get 12.
const VECTORS: usize = 16;
const VECTORS_16_REGISTERS: usize = 12;
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
        _ if cfg!(target_arch = "x86_64") => VECTORS_16_REGISTERS,
        _ => VECTORS,
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

/// One call's updates in the widest vector code the CPU has (as the finite-volume bands): the
/// sum of the accumulators.
fn accumulate<T: Real>() -> T {
    let four = std::mem::size_of::<T>() == 4;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: each runs only where the CPU has its instructions (detected; SSE2 always).
    let sum = unsafe {
        const N: usize = VECTORS_16_REGISTERS;
        match (Simd::detect(), four) {
            (Simd::Avx512, true) => x86::avx512_f32::<VECTORS>() as f64,
            (Simd::Avx512, false) => x86::avx512_f64::<VECTORS>(),
            (Simd::Avx2, true) => x86::avx2_f32::<N>() as f64,
            (Simd::Avx2, false) => x86::avx2_f64::<N>(),
            (Simd::None, true) => x86::sse2_f32::<N>() as f64,
            (Simd::None, false) => x86::sse2_f64::<N>(),
        }
    };
    #[cfg(not(target_arch = "x86_64"))]
    let sum = if four { updates::<T, { VECTORS * 4 }>() } else { updates::<T, { VECTORS * 2 }>() }.f64();
    T::of(sum)
}

/// `a = a * m + c` on `N` vector registers of accumulators, `REPS` times, in one instruction
/// set's intrinsics: one multiply and one add each (not contracted), converging to
/// `c / (1 - m)`, so no value overflows or becomes subnormal. Written with the vector types,
/// not left to the vectoriser: from a loop over 48 f64 values it made AVX2 code that ran
/// at a ninth of the rate.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;
    use std::hint::black_box;

    use super::REPS;

    macro_rules! kernel {
        ($name:ident, $feature:literal, $t:ty, $v:ty, $lanes:expr,
         $set1:ident, $loadu:ident, $storeu:ident, $mul:ident, $add:ident) => {
            #[target_feature(enable = $feature)]
            pub fn $name<const N: usize>() -> $t {
                let mut acc: [$v; N] = [$set1(0.0); N];
                for (k, a) in acc.iter_mut().enumerate() {
                    let mut init = [0.0; $lanes];
                    for (j, x) in init.iter_mut().enumerate() {
                        *x = (k * $lanes + j) as $t / (N * $lanes) as $t;
                    }
                    // SAFETY: `init` holds one vector's lanes.
                    *a = unsafe { $loadu(init.as_ptr()) };
                }
                let (m, c) = ($set1(black_box(0.5)), $set1(black_box(0.25)));
                for _ in 0..REPS {
                    for a in &mut acc {
                        *a = $add($mul(*a, m), c);
                    }
                }
                let mut sum = 0.0;
                for a in acc {
                    let mut out = [0.0; $lanes];
                    // SAFETY: `out` holds one vector's lanes.
                    unsafe { $storeu(out.as_mut_ptr(), a) };
                    sum += out.iter().sum::<$t>();
                }
                sum
            }
        };
    }

    kernel!(avx512_f32, "avx512f", f32, __m512, 16, _mm512_set1_ps, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_mul_ps, _mm512_add_ps);
    kernel!(avx512_f64, "avx512f", f64, __m512d, 8, _mm512_set1_pd, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_mul_pd, _mm512_add_pd);
    kernel!(avx2_f32, "avx2", f32, __m256, 8, _mm256_set1_ps, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_mul_ps, _mm256_add_ps);
    kernel!(avx2_f64, "avx2", f64, __m256d, 4, _mm256_set1_pd, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_mul_pd, _mm256_add_pd);
    kernel!(sse2_f32, "sse2", f32, __m128, 4, _mm_set1_ps, _mm_loadu_ps, _mm_storeu_ps, _mm_mul_ps, _mm_add_ps);
    kernel!(sse2_f64, "sse2", f64, __m128d, 2, _mm_set1_pd, _mm_loadu_pd, _mm_storeu_pd, _mm_mul_pd, _mm_add_pd);
}

/// The same updates in plain code, for the compiler to vectorise (no x86-64 intrinsics).
#[cfg(not(target_arch = "x86_64"))]
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

    /// Every instruction set's kernels this CPU can run, whichever the bench picks.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_kernel_converges() {
        const N: usize = VECTORS_16_REGISTERS;
        let half = |values: usize| 0.5 * values as f64;
        // SAFETY: each runs only where the CPU has its instructions (SSE2 always on x86-64).
        unsafe {
            assert_eq!(x86::sse2_f32::<N>() as f64, half(N * 4));
            assert_eq!(x86::sse2_f64::<N>(), half(N * 2));
            if std::arch::is_x86_feature_detected!("avx2") {
                assert_eq!(x86::avx2_f32::<N>() as f64, half(N * 8));
                assert_eq!(x86::avx2_f64::<N>(), half(N * 4));
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                assert_eq!(x86::avx512_f32::<VECTORS>() as f64, half(VECTORS * 16));
                assert_eq!(x86::avx512_f64::<VECTORS>(), half(VECTORS * 8));
            }
        }
    }
}
