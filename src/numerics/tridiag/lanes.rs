//! Thomas on a group of systems that share their factors, one system per vector lane: AVX2
//! (16 systems, as two vectors of f32 or four of f64 whose dependency chains overlap) or
//! AVX-512 (one or two vectors: 16 or 32 f32, 8 or 16 f64 systems); [`choose`] picks one.
//!
//! Each system is contiguous in memory, so its rows reach the lanes through register
//! transposes of square tiles. AVX2: per block of one cache line of rows, the tiles are
//! transposed into a row-major scratch (row `i` of every system side by side), the forward
//! sweep runs over the block there, and the block stays in the scratch until the backward
//! sweep, which runs over it in reverse and transposes it back. AVX-512: the sweeps run on the
//! transposed tile in registers and only the forward sweep's results go through the scratch.
//! The scratch stays in the L2 cache between the sweeps, so each right-hand side is read once
//! and written once. Every lane does the operations of [`Thomas::solve`] on its system, in the
//! same order: the same bits.

use super::{Thomas, with_scratch};
use crate::cpu::Simd;
use crate::real::Real;

/// Systems per group of the AVX2 kernel, one per lane: four vectors of f64 or two of f32
/// (dependency chains enough to fill the pipeline, and no more streams through memory than
/// the prefetchers follow).
const LANES: usize = 16;

/// The largest scratch a group may use (bytes): with the group's right-hand sides (as many
/// bytes again) half the 1 MiB L2 cache of the CPUs this targets, so that both are still
/// there for the backward sweep.
const SCRATCH_BYTES: usize = 256 << 10;

/// A vector kernel of this module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kernel {
    /// [`avx512`] on `vectors` vectors (16 f32 or 8 f64 systems each).
    Avx512 { vectors: usize },
    /// [`x86`] on [`LANES`] systems.
    Avx2,
}

impl Kernel {
    /// Systems of type `T` it takes at once.
    pub(super) fn lanes<T: Real>(self) -> usize {
        match self {
            Kernel::Avx512 { vectors } => vectors * 64 / std::mem::size_of::<T>(),
            Kernel::Avx2 => LANES,
        }
    }

    /// Whether this CPU runs it on systems of `m` unknowns of type `T` (its scratch within
    /// [`SCRATCH_BYTES`]).
    fn runs<T: Real>(self, m: usize) -> bool {
        let simd = Simd::detect();
        let cpu = match self {
            Kernel::Avx512 { .. } => simd == Simd::Avx512,
            Kernel::Avx2 => simd != Simd::None,
        };
        cpu && m >= 2 && m * self.lanes::<T>() * std::mem::size_of::<T>() <= SCRATCH_BYTES
    }
}

/// Every kernel, in the order of preference of [`choose`].
const KERNELS: [Kernel; 3] = [Kernel::Avx512 { vectors: 2 }, Kernel::Avx2, Kernel::Avx512 { vectors: 1 }];

/// The kernels this CPU runs on systems of `m` unknowns of type `T`.
pub(super) fn kernels<T: Real>(m: usize) -> impl Iterator<Item = Kernel> {
    KERNELS.into_iter().filter(move |k| k.runs::<T>(m))
}

/// The fastest kernel for systems of `m` unknowns of type `T` stored one after another.
/// Consecutive systems of some lengths (powers of two from 512 rows) put the cache lines a
/// group reads together in one or a few L1 sets, more lines than a set has ways: two AVX-512
/// vectors in flight then evict each other's lines (on 2048-row systems half the speed of one
/// vector), and so do AVX2's four f64 vectors of 16 systems; one AVX-512 vector is hardly
/// slowed. Where the lines spread, two AVX-512 vectors are fastest, and AVX2's 16 systems are
/// faster than one AVX-512 vector on short systems.
pub(super) fn choose<T: Real>(m: usize) -> Option<Kernel> {
    let stride = m * std::mem::size_of::<T>();
    let spreads = |k: &Kernel| match k {
        Kernel::Avx512 { vectors: 2 } => spread(stride, k.lanes::<T>(), 4),
        Kernel::Avx2 => spread(stride, LANES, 8),
        Kernel::Avx512 { .. } => true,
    };
    kernels::<T>(m).find(spreads).or_else(|| kernels::<T>(m).next())
}

/// Whether the cache lines of `lanes` systems `stride` bytes apart fall at most `most` to an
/// L1 set (64 sets of 64-byte lines).
fn spread(stride: usize, lanes: usize, most: u8) -> bool {
    let mut lines = [0u8; 64];
    for k in 0..lanes {
        lines[(k * stride / 64) % 64] += 1;
    }
    lines.iter().all(|&n| n <= most)
}

/// Solve `rows` (each a right-hand side of `t`) in place with `kernel`; `false` (nothing
/// touched) where this CPU does not run it or `rows` are not a group of it.
pub(super) fn solve_with<T: Real>(kernel: Kernel, t: &Thomas<T>, rows: &mut [&mut [T]]) -> bool {
    let m = t.m;
    if !kernel.runs::<T>(m) || kernel.lanes::<T>() != rows.len() || rows.iter().any(|r| r.len() != m) {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    return with_scratch::<T, _>(m * rows.len(), |scratch| {
        let t = t as &dyn std::any::Any;
        let mut p = [std::ptr::null_mut::<T>(); 32];
        for (q, r) in p.iter_mut().zip(rows.iter_mut()) {
            *q = r.as_mut_ptr();
        }
        let (p32, p64) = (p.map(|q| q as *mut f32), p.map(|q| q as *mut f64));
        // SAFETY: the CPU has the kernel's instructions (`runs`); `rows`
        // holds distinct right-hand sides of m elements, as many as the kernel's lanes, of
        // the type the factors have; the scratch holds m of them per lane.
        unsafe {
            match (t.downcast_ref::<Thomas<f32>>(), t.downcast_ref::<Thomas<f64>>(), kernel) {
                (Some(t), _, Kernel::Avx512 { vectors: 1 }) => avx512::solve_f32(t, &vectors::<_, 16, 1>(&p32), scratch as *mut f32),
                (Some(t), _, Kernel::Avx512 { vectors: 2 }) => avx512::solve_f32(t, &vectors::<_, 16, 2>(&p32), scratch as *mut f32),
                (_, Some(t), Kernel::Avx512 { vectors: 1 }) => avx512::solve_f64(t, &vectors::<_, 8, 1>(&p64), scratch as *mut f64),
                (_, Some(t), Kernel::Avx512 { vectors: 2 }) => avx512::solve_f64(t, &vectors::<_, 8, 2>(&p64), scratch as *mut f64),
                (Some(t), _, Kernel::Avx2) => x86::solve_f32(t, &std::array::from_fn(|k| p32[k]), scratch as *mut f32),
                (_, Some(t), Kernel::Avx2) => x86::solve_f64(t, &std::array::from_fn(|k| p64[k]), scratch as *mut f64),
                _ => return false,
            }
        }
        true
    });
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The first `G` vectors of `W` systems of `p`.
#[cfg(target_arch = "x86_64")]
fn vectors<T: Copy, const W: usize, const G: usize>(p: &[T; 32]) -> [[T; W]; G] {
    std::array::from_fn(|g| std::array::from_fn(|k| p[g * W + k]))
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
            if k % 2 == 0 { _mm256_unpacklo_ps(a, b) } else { _mm256_unpackhi_ps(a, b) }
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
                                    let system: [*mut $t; W] = std::array::from_fn(|k| p[g * W + k].add(i0 + h));
                                    let scratch: [*mut $t; W] = std::array::from_fn(|k| s.add((i0 + h + k) * L + g * W));
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
                                    if INTO { *scratch = *system } else { *system = *scratch }
                                }
                            }
                        }
                    }
                }
                // SAFETY (whole body): every row index below is under m, so every access
                // lies in a right-hand side or in the scratch (the caller's promise).
                unsafe {
                    let row = |i: usize| std::array::from_fn::<$v, VECTORS, _>(|g| $load(s.add(i * L + g * W)));
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
                                y[g] = if i == 0 { $mul(d[g], inv) } else { $mul($sub(d[g], $mul(l, y[g])), inv) };
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

    kernel!(solve_f32, f32, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_sub_ps, _mm256_mul_ps, transpose_f32);
    kernel!(solve_f64, f64, __m256d, 4, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd, _mm256_sub_pd, _mm256_mul_pd, transpose_f64);
}

/// The AVX-512 kernels: a square tile (one cache line of rows of one vector's systems) is
/// transposed in registers and swept there, so that only the forward sweep's results pass
/// through the scratch (one store and one load per element) and no chain waits on a tile's
/// exchange with memory.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::Thomas;

    /// Transpose the 16 x 16 tile in `r` (row k of the result: element k of every input).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn transpose_f32(r: &mut [__m512; 16]) {
        let (pd, ps) = (_mm512_castps_pd, _mm512_castpd_ps);
        // Pairs of rows, then fours: u[4g + e] holds, in 128-bit lane q, element 4q + e of
        // rows 4g..4g + 4.
        let t: [__m512; 16] = std::array::from_fn(|k| {
            let (a, b) = (r[k & !1], r[k | 1]);
            if k % 2 == 0 { _mm512_unpacklo_ps(a, b) } else { _mm512_unpackhi_ps(a, b) }
        });
        let mut u = [_mm512_setzero_ps(); 16];
        for g in 0..4 {
            let (lo01, hi01, lo23, hi23) = (pd(t[4 * g]), pd(t[4 * g + 1]), pd(t[4 * g + 2]), pd(t[4 * g + 3]));
            u[4 * g] = ps(_mm512_unpacklo_pd(lo01, lo23));
            u[4 * g + 1] = ps(_mm512_unpackhi_pd(lo01, lo23));
            u[4 * g + 2] = ps(_mm512_unpacklo_pd(hi01, hi23));
            u[4 * g + 3] = ps(_mm512_unpackhi_pd(hi01, hi23));
        }
        // Lane q of the four groups into row 4q + e.
        for e in 0..4 {
            let rows = lanes_across([pd(u[e]), pd(u[4 + e]), pd(u[8 + e]), pd(u[12 + e])]);
            for (q, v) in rows.into_iter().enumerate() {
                r[4 * q + e] = ps(v);
            }
        }
    }

    /// `[a, b, c, d]` regrouped by 128-bit lane: row q holds lane q of a, b, c and d.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn lanes_across([a, b, c, d]: [__m512d; 4]) -> [__m512d; 4] {
        let (ab_lo, ab_hi) = (_mm512_shuffle_f64x2::<0x44>(a, b), _mm512_shuffle_f64x2::<0xEE>(a, b));
        let (cd_lo, cd_hi) = (_mm512_shuffle_f64x2::<0x44>(c, d), _mm512_shuffle_f64x2::<0xEE>(c, d));
        [
            _mm512_shuffle_f64x2::<0x88>(ab_lo, cd_lo),
            _mm512_shuffle_f64x2::<0xDD>(ab_lo, cd_lo),
            _mm512_shuffle_f64x2::<0x88>(ab_hi, cd_hi),
            _mm512_shuffle_f64x2::<0xDD>(ab_hi, cd_hi),
        ]
    }

    /// Transpose the 8 x 8 tile in `r`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn transpose_f64(r: &mut [__m512d; 8]) {
        // u[2p + e] holds, in 128-bit lane q, element 2q + e of rows 2p, 2p + 1.
        let u: [__m512d; 8] = std::array::from_fn(|k| {
            let (a, b) = (r[k & !1], r[k | 1]);
            if k % 2 == 0 { _mm512_unpacklo_pd(a, b) } else { _mm512_unpackhi_pd(a, b) }
        });
        for e in 0..2 {
            let rows = lanes_across([u[e], u[2 + e], u[4 + e], u[6 + e]]);
            for (q, v) in rows.into_iter().enumerate() {
                r[2 * q + e] = v;
            }
        }
    }

    /// Blocks ahead of the forward sweep whose cache lines are asked for (each system is a
    /// separate stream, more than the hardware prefetchers follow).
    const PREFETCH_BLOCKS: usize = 8;

    /// One kernel per precision: `$w` lanes per vector (and rows per tile), `G` vectors (a
    /// constant, so that each vector's latest value stays in a register and no index is
    /// checked).
    macro_rules! kernel {
        ($name:ident, $t:ty, $v:ty, $w:expr, $load:ident, $store:ident, $set1:ident, $sub:ident,
         $mul:ident, $transpose:ident) => {
            /// # Safety
            /// The CPU has AVX-512F; `p` holds distinct right-hand sides of `t.m` elements;
            /// `s` holds `t.m * G * W` elements.
            #[target_feature(enable = "avx512f")]
            pub(super) unsafe fn $name<const G: usize>(t: &Thomas<$t>, p: &[[*mut $t; $w]; G], s: *mut $t) {
                const W: usize = $w;
                let m = t.m;
                // Rows i0..i0 + n of the systems of vector g into the tile (rows of each system),
                // zero-padded past n.
                let load_tile = |g: usize, i0: usize, n: usize| -> [$v; W] {
                    // SAFETY (both closures): rows i0..i0 + n exist in every system (the
                    // caller's promise); partial tiles go through a local buffer.
                    unsafe {
                        if n == W {
                            std::array::from_fn(|k| $load(p[g][k].add(i0)))
                        } else {
                            let mut b = [[0.0 as $t; W]; W];
                            for (k, row) in b.iter_mut().enumerate() {
                                std::ptr::copy_nonoverlapping(p[g][k].add(i0), row.as_mut_ptr(), n);
                            }
                            std::array::from_fn(|k| $load(b[k].as_ptr()))
                        }
                    }
                };
                let store_tile = |g: usize, i0: usize, n: usize, r: &[$v; W]| unsafe {
                    if n == W {
                        for (k, v) in r.iter().enumerate() {
                            $store(p[g][k].add(i0), *v);
                        }
                    } else {
                        let mut b = [[0.0 as $t; W]; W];
                        for (k, v) in r.iter().enumerate() {
                            $store(b[k].as_mut_ptr(), *v);
                            std::ptr::copy_nonoverlapping(b[k].as_ptr(), p[g][k].add(i0), n);
                        }
                    }
                };
                // Rows from `stationary` on share the tail factors: their tiles run without a
                // look-up or a condition per row.
                let stationary = t.lower.len();
                let (lt, it, ut) = ($set1(t.tail.0), $set1(t.tail.1), $set1(t.tail.2));
                // SAFETY (whole body): every row index below is under m, so every access
                // lies in a right-hand side or in the scratch (the caller's promise).
                unsafe {
                    let at = |i: usize, g: usize| s.add((g * m + i) * W);
                    // Forward: y_0 = d_0 inv_0, y_i = (d_i - l_i y_{i-1}) inv_i, into the scratch.
                    let mut y = [$set1(0.0); G];
                    for i0 in (0..m).step_by(W) {
                        let n = W.min(m - i0);
                        if i0 + PREFETCH_BLOCKS * W < m {
                            for q in p.iter().flatten() {
                                _mm_prefetch::<_MM_HINT_T1>(q.add(i0 + PREFETCH_BLOCKS * W) as *const i8);
                            }
                        }
                        for g in 0..G {
                            let mut r = load_tile(g, i0, n);
                            $transpose(&mut r);
                            let mut yg = y[g];
                            if n == W && i0 >= stationary {
                                for k in 0..W {
                                    yg = $mul($sub(r[k], $mul(lt, yg)), it);
                                    $store(at(i0 + k, g), yg);
                                }
                            } else {
                                for k in 0..n {
                                    let i = i0 + k;
                                    let (l, inv, _) = t.at(i);
                                    yg = if i == 0 { $mul(r[k], $set1(inv)) } else { $mul($sub(r[k], $mul($set1(l), yg)), $set1(inv)) };
                                    $store(at(i, g), yg);
                                }
                            }
                            y[g] = yg;
                        }
                    }
                    // Backward: x_{m-1} = y_{m-1}, x_i = y_i - u_i x_{i+1}; blocks in reverse,
                    // each tile transposed back into its systems. A tile's rows go to W lines
                    // a system apart; where more than 8 of them fall in one L1 set (systems of
                    // a power-of-two length, f32), the stores waited on each other's line
                    // fills, so half of them are written one tile later.
                    let split = !super::spread(m * std::mem::size_of::<$t>(), W, 8);
                    let mut held: [Option<(usize, [$v; W / 2])>; G] = [None; G];
                    let mut x = y;
                    for i0 in (0..m).step_by(W).rev() {
                        let n = W.min(m - i0);
                        for g in 0..G {
                            let mut r = [$set1(0.0); W];
                            let mut xg = x[g];
                            if n == W && i0 >= stationary && i0 + W < m {
                                for k in (0..W).rev() {
                                    xg = $sub($load(at(i0 + k, g)), $mul(ut, xg));
                                    r[k] = xg;
                                }
                            } else {
                                for k in (0..n).rev() {
                                    let i = i0 + k;
                                    if i + 1 < m {
                                        let (_, _, u) = t.at(i);
                                        xg = $sub($load(at(i, g)), $mul($set1(u), xg));
                                    }
                                    r[k] = xg;
                                }
                            }
                            x[g] = xg;
                            $transpose(&mut r);
                            if n < W || !split {
                                // (A partial tile is the last, so the first here: nothing is
                                // held yet.)
                                store_tile(g, i0, n, &r);
                                continue;
                            }
                            for (k, v) in r.iter().take(W / 2).enumerate() {
                                $store(p[g][k].add(i0), *v);
                            }
                            if let Some((j0, h)) = held[g] {
                                for (k, v) in h.iter().enumerate() {
                                    $store(p[g][W / 2 + k].add(j0), *v);
                                }
                            }
                            held[g] = Some((i0, std::array::from_fn(|k| r[W / 2 + k])));
                        }
                    }
                    for (g, h) in held.iter().enumerate() {
                        if let Some((j0, h)) = h {
                            for (k, v) in h.iter().enumerate() {
                                $store(p[g][W / 2 + k].add(*j0), *v);
                            }
                        }
                    }
                }
            }
        };
    }

    kernel!(solve_f32, f32, __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, _mm512_sub_ps, _mm512_mul_ps, transpose_f32);
    kernel!(solve_f64, f64, __m512d, 8, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_set1_pd, _mm512_sub_pd, _mm512_mul_pd, transpose_f64);
}
