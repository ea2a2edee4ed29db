//! CPU kernels of the explicit (FTCS) heat equation: one fused pass per step that writes the
//! interior update and the zero Dirichlet boundary, parallel over rows (2D) or chunks (1D).
//!
//! Evaluation order (mirrored by the CUDA kernels): 1D `c0*c + r*(w + e)`,
//! 2D `c0*c + r*((w + e) + (s + n))`, with `c0 = 1 - 2r` (1D) or `1 - 4r` (2D).

use rayon::prelude::*;

use std::ops::Range;

use crate::error::Result;
use crate::numerics::temporal::{self, RowStencil, Tiling};
use crate::padded::Padded;
use crate::real::Real;

/// Elements per parallel task in 1D.
const CHUNK_1D: usize = 1 << 14;

/// The stages of a time step on one back end.
pub trait Stages<T: Real> {
    /// One fused FTCS pass with stability number `r`: the interior update of the current
    /// field and the zero boundary, written to the other buffer.
    fn ftcs(&mut self, r: T) -> Result<()>;
    /// Make the buffer just written the current field.
    fn swap(&mut self);
}

/// One time step, the one place that fixes the order of the stages for every back end:
/// the FTCS pass, then the buffer swap.
pub fn step<T: Real>(s: &mut (impl Stages<T> + ?Sized), r: T) -> Result<()> {
    s.ftcs(r)?;
    s.swap();
    Ok(())
}

/// The CPU stages on the field `temp` (`nx` wide; 1D when it is one row) and the buffer
/// `next` the pass writes.
pub struct CpuStages<'a, T: Real> {
    pub temp: &'a mut Padded<T>,
    pub next: &'a mut Padded<T>,
    pub nx: usize,
}

impl<T: Real> Stages<T> for CpuStages<'_, T> {
    fn ftcs(&mut self, r: T) -> Result<()> {
        if self.temp.len() == self.nx {
            ftcs1d(self.temp, self.next, r);
        } else {
            ftcs2d(self.temp, self.next, self.nx, r);
        }
        Ok(())
    }

    fn swap(&mut self) {
        // The buffers trade places, not just the references to them.
        std::mem::swap(self.temp, self.next);
    }
}

/// One FTCS step in 1D: `dst = src + r * laplacian(src)`, ends set to 0.
pub fn ftcs1d<T: Real>(src: &[T], dst: &mut [T], r: T) {
    three_point1d(src, dst, T::one() - (r + r), r);
}

/// `dst = c0 * c + r * (west + east)` on the interior, ends set to 0 (FTCS; the explicit
/// half of Crank–Nicolson with `c0 = 1 - r` and `r/2` for `r`).
pub fn three_point1d<T: Real>(src: &[T], dst: &mut [T], c0: T, r: T) {
    let n = src.len();
    assert!(n >= 3 && dst.len() == n);
    dst.par_chunks_mut(CHUNK_1D).enumerate().for_each(|(chunk, out)| {
        let start = chunk * CHUNK_1D;
        let end = start + out.len();
        let (lo, hi) = (start.max(1), end.min(n - 1));
        let m = hi - lo;
        interior1d(&src[lo - 1..hi + 1], &mut out[lo - start..lo - start + m], c0, r);
        if start == 0 {
            out[0] = T::zero();
        }
        if end == n {
            out[n - 1 - start] = T::zero();
        }
    });
}

/// `out = c0 * c + r * (west + east)` from `mid`, which has one more point on each side; built
/// for AVX-512F and AVX2 as well, chosen at run time (same bits: no FMA contraction).
#[inline]
fn interior1d<T: Real>(mid: &[T], out: &mut [T], c0: T, r: T) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU supports AVX-512F (checked just above).
        return unsafe { interior1d_avx512(mid, out, c0, r) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { interior1d_avx2(mid, out, c0, r) };
    }
    interior1d_body(mid, out, c0, r)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn interior1d_avx512<T: Real>(mid: &[T], out: &mut [T], c0: T, r: T) {
    interior1d_body(mid, out, c0, r)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn interior1d_avx2<T: Real>(mid: &[T], out: &mut [T], c0: T, r: T) {
    interior1d_body(mid, out, c0, r)
}

#[inline(always)]
fn interior1d_body<T: Real>(mid: &[T], out: &mut [T], c0: T, r: T) {
    let m = out.len();
    let (w, c, e) = (&mid[0..m], &mid[1..m + 1], &mid[2..m + 2]);
    for k in 0..m {
        out[k] = c0 * c[k] + r * (w[k] + e[k]);
    }
}

/// `steps` FTCS steps in 1D in one temporally blocked sweep: as [`ftcs2d_blocked`] for a grid
/// of one row. Bitwise equal to `steps` calls of [`ftcs1d`].
pub fn ftcs1d_blocked<T: Real>(a: &mut [T], b: &mut [T], r: T, tiling: &Tiling, steps: usize) {
    let n = a.len();
    assert!(n >= 3 && b.len() == n);
    let stencil = Ftcs1d { levels: [a.as_mut_ptr(), b.as_mut_ptr()], n, c0: T::one() - (r + r), r };
    temporal::sweep(&stencil, 1, tiling, steps);
}

/// The FTCS step of [`ftcs1d`] on raw views of the two level buffers, for [`temporal::sweep`].
struct Ftcs1d<T> {
    levels: [*mut T; 2],
    n: usize,
    c0: T,
    r: T,
}

// SAFETY: the sweep hands each thread disjoint points to write and points no one writes to read.
unsafe impl<T: Send> Sync for Ftcs1d<T> {}

impl<T: Real> RowStencil for Ftcs1d<T> {
    type Scratch = ();
    fn scratch(&self) {}
    unsafe fn update(&self, _: &mut (), t: usize, _row: usize, cols: Range<usize>) {
        let n = self.n;
        // SAFETY: as for `Ftcs2d::update`.
        let out = unsafe { std::slice::from_raw_parts_mut(self.levels[t % 2].add(cols.start), cols.len()) };
        let (lo, hi) = (cols.start.max(1), cols.end.min(n - 1));
        if lo < hi {
            let src = self.levels[(t - 1) % 2] as *const T;
            let mid = unsafe { std::slice::from_raw_parts(src.add(lo - 1), hi - lo + 2) };
            let start = lo - cols.start;
            interior1d(mid, &mut out[start..start + hi - lo], self.c0, self.r);
        }
        if cols.start == 0 {
            out[0] = T::zero();
        }
        if cols.end == n {
            out[cols.len() - 1] = T::zero();
        }
    }
}

/// One FTCS step in 2D on an `nx`-wide row-major grid, all four edges set to 0.
pub fn ftcs2d<T: Real>(src: &[T], dst: &mut [T], nx: usize, r: T) {
    let ny = src.len() / nx;
    assert!(nx >= 3 && ny >= 3 && src.len() == nx * ny && dst.len() == src.len());
    let c0 = T::one() - T::of(4.0) * r;
    dst.par_chunks_mut(nx).enumerate().for_each(|(j, out)| {
        if j == 0 || j == ny - 1 {
            out.fill(T::zero());
            return;
        }
        row2d(&src[(j - 1) * nx..(j + 2) * nx], out, c0, r);
    });
}

/// [`ftcs2d`] again on interior rows `rows` and on interior columns `cols` (every interior
/// row), with the same expression: the lines of a block that read ghosts which arrived after
/// the rest of the step.
pub fn ftcs2d_lines<T: Real>(src: &[T], dst: &mut [T], nx: usize, r: T, rows: &[usize], cols: &[usize]) {
    let ny = src.len() / nx;
    let c0 = T::one() - T::of(4.0) * r;
    for &j in rows {
        row2d(&src[(j - 1) * nx..(j + 2) * nx], &mut dst[j * nx..(j + 1) * nx], c0, r);
    }
    for j in 1..ny - 1 {
        let row = |k: usize| &src[k * nx..(k + 1) * nx];
        let (south, mid, north) = (row(j - 1), row(j), row(j + 1));
        for &i in cols {
            let out = &mut dst[j * nx + i..j * nx + i + 1];
            interior2d_body(&south[i..i + 1], &mid[i - 1..i + 2], &north[i..i + 1], out, c0, r);
        }
    }
}

/// Interior row from the three input rows `rows = [south, mid, north]` (each `out.len()`
/// long).
#[inline]
fn row2d<T: Real>(rows: &[T], out: &mut [T], c0: T, r: T) {
    let nx = out.len();
    let (south, mid, north) = (&rows[..nx], &rows[nx..2 * nx], &rows[2 * nx..3 * nx]);
    interior2d(&south[1..nx - 1], mid, &north[1..nx - 1], &mut out[1..nx - 1], c0, r);
    out[0] = T::zero();
    out[nx - 1] = T::zero();
}

/// The FTCS update of the points `out` from their south and north neighbours (aligned with
/// `out`) and the middle row `mid` (one more point on each side); the AVX2 build is chosen at
/// run time when the CPU has it (same results bit for bit: no FMA contraction either way).
#[inline]
fn interior2d<T: Real>(south: &[T], mid: &[T], north: &[T], out: &mut [T], c0: T, r: T) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU supports AVX-512F (checked just above).
        return unsafe { interior2d_avx512(south, mid, north, out, c0, r) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { interior2d_avx2(south, mid, north, out, c0, r) };
    }
    interior2d_body(south, mid, north, out, c0, r)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn interior2d_avx512<T: Real>(south: &[T], mid: &[T], north: &[T], out: &mut [T], c0: T, r: T) {
    interior2d_body(south, mid, north, out, c0, r)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn interior2d_avx2<T: Real>(south: &[T], mid: &[T], north: &[T], out: &mut [T], c0: T, r: T) {
    interior2d_body(south, mid, north, out, c0, r)
}

#[inline(always)]
fn interior2d_body<T: Real>(south: &[T], mid: &[T], north: &[T], out: &mut [T], c0: T, r: T) {
    let m = out.len();
    let (w, c, e) = (&mid[0..m], &mid[1..m + 1], &mid[2..m + 2]);
    let (s, n) = (&south[..m], &north[..m]);
    for k in 0..m {
        out[k] = c0 * c[k] + r * ((w[k] + e[k]) + (s[k] + n[k]));
    }
}

/// `steps` FTCS steps in 2D in one temporally blocked sweep (see [`temporal`]): `a` holds the
/// field and receives the even levels, `b` the odd ones, so the result is in `b` when `steps`
/// is odd. Bitwise equal to `steps` calls of [`ftcs2d`].
pub fn ftcs2d_blocked<T: Real>(a: &mut [T], b: &mut [T], nx: usize, r: T, tiling: &Tiling, steps: usize) {
    let ny = a.len() / nx;
    assert!(nx >= 3 && ny >= 3 && a.len() == nx * ny && b.len() == a.len());
    let c0 = T::one() - T::of(4.0) * r;
    let stencil = Ftcs2d { levels: [a.as_mut_ptr(), b.as_mut_ptr()], nx, ny, c0, r };
    temporal::sweep(&stencil, ny, tiling, steps);
}

/// The FTCS step of [`ftcs2d`] on raw views of the two level buffers, for [`temporal::sweep`].
struct Ftcs2d<T> {
    levels: [*mut T; 2],
    nx: usize,
    ny: usize,
    c0: T,
    r: T,
}

// SAFETY: the sweep hands each thread disjoint points to write and points no one writes to read.
unsafe impl<T: Send> Sync for Ftcs2d<T> {}

impl<T: Real> RowStencil for Ftcs2d<T> {
    type Scratch = ();
    fn scratch(&self) {}
    unsafe fn update(&self, _: &mut (), t: usize, j: usize, cols: Range<usize>) {
        let (nx, ny) = (self.nx, self.ny);
        let src = self.levels[(t - 1) % 2] as *const T;
        // SAFETY: row j, `cols` of the level-t buffer is ours alone during the call (the
        // sweep's contract), and the rows read below are not written by anyone.
        let out = unsafe { std::slice::from_raw_parts_mut(self.levels[t % 2].add(j * nx + cols.start), cols.len()) };
        if j == 0 || j == ny - 1 {
            out.fill(T::zero());
            return;
        }
        let (lo, hi) = (cols.start.max(1), cols.end.min(nx - 1));
        if lo < hi {
            let row = |jj: usize, from: usize, to: usize| unsafe { std::slice::from_raw_parts(src.add(jj * nx + from), to - from) };
            let start = lo - cols.start;
            interior2d(row(j - 1, lo, hi), row(j, lo - 1, hi + 1), row(j + 1, lo, hi), &mut out[start..start + hi - lo], self.c0, self.r);
        }
        if cols.start == 0 {
            out[0] = T::zero();
        }
        if cols.end == nx {
            out[cols.len() - 1] = T::zero();
        }
    }
}

/// The COPY kernel the heat bandwidth is compared with: same row split, `dst = src`.
pub fn copy2d<T: Real>(src: &[T], dst: &mut [T], nx: usize) {
    dst.par_chunks_mut(nx).zip(src.par_chunks(nx)).for_each(|(d, s)| d.copy_from_slice(s));
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::noise;

    #[test]
    fn ftcs1d_matches_plain_loop() {
        // Longer than one chunk so chunk edges are exercised.
        let n = 3 * CHUNK_1D + 17;
        let src = noise(n, 1);
        let r = 0.37;
        let mut dst = vec![f64::NAN; n];
        ftcs1d(&src, &mut dst, r);
        for i in 0..n {
            let want = if i == 0 || i == n - 1 {
                0.0
            } else {
                (1.0 - 2.0 * r) * src[i] + r * (src[i - 1] + src[i + 1])
            };
            assert_eq!(dst[i], want, "node {i}");
        }
    }

    #[test]
    fn ftcs2d_matches_plain_loop() {
        let (nx, ny) = (37, 23);
        let src: Vec<f32> = noise(nx * ny, 2).into_iter().map(|v| v as f32).collect();
        let r = 0.21f32;
        let mut dst = vec![f32::NAN; nx * ny];
        ftcs2d(&src, &mut dst, nx, r);
        for j in 0..ny {
            for i in 0..nx {
                let k = j * nx + i;
                let want = if i == 0 || j == 0 || i == nx - 1 || j == ny - 1 {
                    0.0
                } else {
                    (1.0 - 4.0 * r) * src[k]
                        + r * ((src[k - 1] + src[k + 1]) + (src[k - nx] + src[k + nx]))
                };
                assert_eq!(dst[k], want, "node ({i}, {j})");
            }
        }
    }

    /// `steps` blocked steps against as many plain ones, bitwise, on `threads` threads.
    fn blocked_matches_plain<T: Real>(nx: usize, ny: usize, tiling: &Tiling, steps: usize, threads: usize) {
        let field: Vec<T> = noise(nx * ny, 7).into_iter().map(T::of).collect();
        let r = T::of(0.23);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let (mut a, mut b) = (field.clone(), vec![T::of(f64::NAN); nx * ny]);
        pool.install(|| {
            for _ in 0..steps {
                if ny == 1 { ftcs1d(&a, &mut b, r) } else { ftcs2d(&a, &mut b, nx, r) }
                std::mem::swap(&mut a, &mut b);
            }
        });
        let (mut c, mut d) = (field, vec![T::of(f64::NAN); nx * ny]);
        let mut left = steps;
        pool.install(|| {
            while left > 0 {
                let k = left.min(tiling.depth);
                if ny == 1 {
                    ftcs1d_blocked(&mut c, &mut d, r, tiling, k);
                } else {
                    ftcs2d_blocked(&mut c, &mut d, nx, r, tiling, k);
                }
                if k % 2 == 1 {
                    std::mem::swap(&mut c, &mut d);
                }
                left -= k;
            }
        });
        let same = a.iter().zip(&c).all(|(x, y)| x.f64().to_bits() == y.f64().to_bits());
        assert!(same, "{nx}x{ny}, {tiling}, {steps} steps, {threads} threads");
    }

    #[test]
    fn blocked_steps_equal_plain_steps_bitwise() {
        // Grids that no band count divides, depths that do not divide the step count.
        for (nx, ny) in [(3, 3), (37, 23), (64, 9), (101, 40), (3, 1), (100, 1), (3 * CHUNK_1D + 17, 1)] {
            for depth in [1, 2, 3, 7, 16] {
                for bands in [1, 2, 3, 4] {
                    let tiling = Tiling::new(nx, depth, bands);
                    for (steps, threads) in [(1, 1), (depth + 2, 2), (2 * depth + 1, 1), (3 * depth, 2)] {
                        blocked_matches_plain::<f64>(nx, ny, &tiling, steps, threads);
                        blocked_matches_plain::<f32>(nx, ny, &tiling, steps, threads);
                    }
                }
            }
        }
    }

    #[test]
    fn copy2d_copies() {
        let src = noise(64 * 5, 3);
        let mut dst = vec![0.0; src.len()];
        copy2d(&src, &mut dst, 64);
        assert_eq!(src, dst);
    }
}
