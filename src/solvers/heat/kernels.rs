//! CPU kernels of the explicit (FTCS) heat equation: one fused pass per step that writes the
//! interior update and the zero Dirichlet boundary, parallel over rows (2D) or chunks (1D).
//!
//! Evaluation order (mirrored by the CUDA kernels): 1D `c0*c + r*(w + e)`,
//! 2D `c0*c + r*((w + e) + (s + n))`, with `c0 = 1 - 2r` (1D) or `1 - 4r` (2D).

use rayon::prelude::*;

use crate::error::Result;
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
        let (w, c, e) = (&src[lo - 1..hi - 1], &src[lo..hi], &src[lo + 1..hi + 1]);
        let o = &mut out[lo - start..hi - start];
        for k in 0..m {
            o[k] = c0 * c[k] + r * (w[k] + e[k]);
        }
        if start == 0 {
            out[0] = T::zero();
        }
        if end == n {
            out[n - 1 - start] = T::zero();
        }
    });
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

/// Interior row from the three input rows `rows = [south, mid, north]` (each `out.len()`
/// long); the AVX2 build is chosen at run time when the CPU has it (same results bit for
/// bit: no FMA contraction either way).
#[inline]
fn row2d<T: Real>(rows: &[T], out: &mut [T], c0: T, r: T) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { row2d_avx2(rows, out, c0, r) };
    }
    row2d_body(rows, out, c0, r)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn row2d_avx2<T: Real>(rows: &[T], out: &mut [T], c0: T, r: T) {
    row2d_body(rows, out, c0, r)
}

#[inline(always)]
fn row2d_body<T: Real>(rows: &[T], out: &mut [T], c0: T, r: T) {
    let nx = out.len();
    let m = nx - 2;
    let (south, mid, north) = (&rows[..nx], &rows[nx..2 * nx], &rows[2 * nx..3 * nx]);
    let (w, c, e) = (&mid[0..m], &mid[1..m + 1], &mid[2..m + 2]);
    let (s, n) = (&south[1..m + 1], &north[1..m + 1]);
    let o = &mut out[1..m + 1];
    for k in 0..m {
        o[k] = c0 * c[k] + r * ((w[k] + e[k]) + (s[k] + n[k]));
    }
    out[0] = T::zero();
    out[nx - 1] = T::zero();
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

    #[test]
    fn copy2d_copies() {
        let src = noise(64 * 5, 3);
        let mut dst = vec![0.0; src.len()];
        copy2d(&src, &mut dst, 64);
        assert_eq!(src, dst);
    }
}
