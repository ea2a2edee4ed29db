//! Thomas on a group of systems that share their factors, one system per vector lane (AVX2):
//! 16 systems, as two vectors of f32 or four of f64 whose dependency chains overlap.
//!
//! Each system is contiguous in memory, so its rows reach the lanes through register
//! transposes of square tiles: per block of one cache line of rows, the tiles are transposed
//! into a row-major scratch (row `i` of every system side by side), the forward sweep runs
//! over the block there, and the block stays in the scratch until the backward sweep, which
//! runs over it in reverse and transposes it back. The scratch (16 elements per row) stays
//! in the L2 cache between the sweeps, so each right-hand side is read once and written once.
//! Every lane does the operations of [`Thomas::solve`] on its system, in the same order:
//! the same bits.

use std::cell::RefCell;

use super::Thomas;
use crate::cpu::Simd;
use crate::real::Real;

/// Systems per group, one per lane: four vectors of f64 or two of f32 (dependency chains
/// enough to fill the pipeline, and no more streams through memory than the prefetchers
/// follow).
const LANES: usize = 16;

/// The largest scratch a group may use (bytes): with the group's right-hand sides (as many
/// bytes again) half the 1 MiB L2 cache of the CPUs this targets, so that both are still
/// there for the backward sweep.
const SCRATCH_BYTES: usize = 256 << 10;

thread_local! {
    /// Each thread's scratch, kept between solves (no allocation per group).
    static SCRATCH: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

/// Systems of `m` unknowns of type `T` that [`solve`] takes at once, where the CPU has AVX2
/// and their scratch fits [`SCRATCH_BYTES`]; `None` otherwise.
pub(super) fn group_len<T: Real>(m: usize) -> Option<usize> {
    // (a CPU with AVX-512 has AVX2)
    if m < 2 || m * LANES * std::mem::size_of::<T>() > SCRATCH_BYTES || Simd::detect() == Simd::None {
        return None;
    }
    Some(LANES)
}

/// Solve `rows` (each a right-hand side of `t`) in place if they form a group of
/// [`group_len`]; `false` (nothing touched) otherwise.
pub(super) fn solve<T: Real>(t: &Thomas<T>, rows: &mut [&mut [T]]) -> bool {
    let m = t.m;
    if group_len::<T>(m) != Some(rows.len()) || rows.iter().any(|r| r.len() != m) {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    return SCRATCH.with_borrow_mut(|s| {
        let words = (m * LANES * std::mem::size_of::<T>()).div_ceil(8);
        if s.len() < words {
            s.resize(words, 0.0);
        }
        let scratch = s.as_mut_ptr();
        let ptrs = |rows: &mut [&mut [T]]| std::array::from_fn(|k| rows[k].as_mut_ptr());
        let t = t as &dyn std::any::Any;
        // SAFETY: AVX2 is present (group_len); `rows` holds LANES distinct right-hand sides
        // of m elements, of the type the factors have; the scratch holds m * LANES of them.
        unsafe {
            if let Some(t) = t.downcast_ref::<Thomas<f32>>() {
                x86::solve_f32(t, &ptrs(rows).map(|p| p as *mut f32), scratch as *mut f32);
            } else if let Some(t) = t.downcast_ref::<Thomas<f64>>() {
                x86::solve_f64(t, &ptrs(rows).map(|p| p as *mut f64), scratch);
            } else {
                return false;
            }
        }
        true
    });
    #[cfg(not(target_arch = "x86_64"))]
    false
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{LANES, Thomas};

    /// Transpose the 8 x 8 tile in `r` (row k of the result: element k of every input).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn transpose_f32(r: &mut [__m256; 8]) {
        let t: [__m256; 8] = std::array::from_fn(|k| {
            let (a, b) = (r[k & 6], r[(k & 6) + 1]);
            if k % 2 == 0 {
                _mm256_unpacklo_ps(a, b)
            } else {
                _mm256_unpackhi_ps(a, b)
            }
        });
        // t[0..4]: rows 0-3 interleaved in pairs; t[4..8]: rows 4-7.
        let s = [
            _mm256_shuffle_ps::<0x44>(t[0], t[2]),
            _mm256_shuffle_ps::<0xEE>(t[0], t[2]),
            _mm256_shuffle_ps::<0x44>(t[1], t[3]),
            _mm256_shuffle_ps::<0xEE>(t[1], t[3]),
            _mm256_shuffle_ps::<0x44>(t[4], t[6]),
            _mm256_shuffle_ps::<0xEE>(t[4], t[6]),
            _mm256_shuffle_ps::<0x44>(t[5], t[7]),
            _mm256_shuffle_ps::<0xEE>(t[5], t[7]),
        ];
        for k in 0..4 {
            r[k] = _mm256_permute2f128_ps::<0x20>(s[k], s[k + 4]);
            r[k + 4] = _mm256_permute2f128_ps::<0x31>(s[k], s[k + 4]);
        }
    }

    /// Transpose the 4 x 4 tile in `r`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn transpose_f64(r: &mut [__m256d; 4]) {
        let t0 = _mm256_unpacklo_pd(r[0], r[1]);
        let t1 = _mm256_unpackhi_pd(r[0], r[1]);
        let t2 = _mm256_unpacklo_pd(r[2], r[3]);
        let t3 = _mm256_unpackhi_pd(r[2], r[3]);
        r[0] = _mm256_permute2f128_pd::<0x20>(t0, t2);
        r[1] = _mm256_permute2f128_pd::<0x20>(t1, t3);
        r[2] = _mm256_permute2f128_pd::<0x31>(t0, t2);
        r[3] = _mm256_permute2f128_pd::<0x31>(t1, t3);
    }

    /// One kernel per precision: `$w` lanes per vector, `LANES / $w` vectors per row.
    macro_rules! kernel {
        ($name:ident, $t:ty, $v:ty, $w:expr, $load:ident, $store:ident, $set1:ident, $sub:ident,
         $mul:ident, $transpose:ident) => {
            /// # Safety
            /// The CPU has AVX2; `p` holds distinct right-hand sides of `t.m` elements;
            /// `s` holds `t.m * LANES` elements.
            #[target_feature(enable = "avx2")]
            pub(super) unsafe fn $name(t: &Thomas<$t>, p: &[*mut $t; LANES], s: *mut $t) {
                const W: usize = $w;
                const L: usize = LANES;
                const VECTORS: usize = L / W;
                // Rows per block: one cache line of each system.
                const B: usize = 64 / std::mem::size_of::<$t>();
                let m = t.m;
                /// Rows `i0..i0 + n` of every system into the scratch (`INTO`) or back: by
                /// tiles where the block is whole (a transpose is its own inverse), else element
                /// by element. One function per direction, so that each is inlined at its one
                /// call (a closure called for both was not).
                ///
                /// # Safety
                /// The CPU has AVX2; rows `i0..i0 + n` exist in every system of `p` and in the
                /// scratch `s`.
                #[target_feature(enable = "avx2")]
                #[inline]
                unsafe fn exchange<const INTO: bool>(p: &[*mut $t; LANES], s: *mut $t, i0: usize, n: usize) {
                    // SAFETY: the caller's promise.
                    unsafe {
                        if n == B {
                            for g in 0..VECTORS {
                                for h in (0..B).step_by(W) {
                                    let system: [*mut $t; W] =
                                        std::array::from_fn(|k| p[g * W + k].add(i0 + h));
                                    let scratch: [*mut $t; W] =
                                        std::array::from_fn(|k| s.add((i0 + h + k) * L + g * W));
                                    let (from, to) = if INTO { (system, scratch) } else { (scratch, system) };
                                    let mut r: [$v; W] = std::array::from_fn(|k| $load(from[k]));
                                    $transpose(&mut r);
                                    for (q, v) in to.iter().zip(r) {
                                        $store(*q, v);
                                    }
                                }
                            }
                        } else {
                            for i in i0..i0 + n {
                                for (k, q) in p.iter().enumerate() {
                                    let (system, scratch) = (q.add(i), s.add(i * L + k));
                                    if INTO {
                                        *scratch = *system
                                    } else {
                                        *system = *scratch
                                    }
                                }
                            }
                        }
                    }
                }
                // SAFETY (whole body): every row index below is under m, so every access
                // lies in a right-hand side or in the scratch (the caller's promise).
                unsafe {
                    let row = |i: usize| {
                        std::array::from_fn::<$v, VECTORS, _>(|g| $load(s.add(i * L + g * W)))
                    };
                    let put = |i: usize, x: &[$v; VECTORS]| {
                        for (g, v) in x.iter().enumerate() {
                            $store(s.add(i * L + g * W), *v);
                        }
                    };
                    // Forward: y_0 = d_0 inv_0, y_i = (d_i - l_i y_{i-1}) inv_i.
                    let mut y = [$set1(0.0); VECTORS];
                    for i0 in (0..m).step_by(B) {
                        let n = B.min(m - i0);
                        exchange::<true>(p, s, i0, n);
                        for i in i0..i0 + n {
                            let (l, inv, _) = t.at(i);
                            let (l, inv, d) = ($set1(l), $set1(inv), row(i));
                            for g in 0..VECTORS {
                                y[g] = if i == 0 {
                                    $mul(d[g], inv)
                                } else {
                                    $mul($sub(d[g], $mul(l, y[g])), inv)
                                };
                            }
                            put(i, &y);
                        }
                    }
                    // Backward: x_{m-1} = y_{m-1}, x_i = y_i - u_i x_{i+1}; blocks in reverse.
                    let mut x = y;
                    for i0 in (0..m).step_by(B).rev() {
                        let n = B.min(m - i0);
                        for i in (i0..(i0 + n).min(m - 1)).rev() {
                            let (_, _, u) = t.at(i);
                            let (u, yi) = ($set1(u), row(i));
                            for g in 0..VECTORS {
                                x[g] = $sub(yi[g], $mul(u, x[g]));
                            }
                            put(i, &x);
                        }
                        exchange::<false>(p, s, i0, n);
                    }
                }
            }
        };
    }

    kernel!(
        solve_f32,
        f32,
        __m256,
        8,
        _mm256_loadu_ps,
        _mm256_storeu_ps,
        _mm256_set1_ps,
        _mm256_sub_ps,
        _mm256_mul_ps,
        transpose_f32
    );
    kernel!(
        solve_f64,
        f64,
        __m256d,
        4,
        _mm256_loadu_pd,
        _mm256_storeu_pd,
        _mm256_set1_pd,
        _mm256_sub_pd,
        _mm256_mul_pd,
        transpose_f64
    );
}
