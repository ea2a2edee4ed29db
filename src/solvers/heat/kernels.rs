//! CPU kernels of the explicit (FTCS) heat equation: one fused pass per step that writes the
//! interior update and the zero Dirichlet boundary, parallel over rows (2D) or chunks (1D).
//!
//! Evaluation order (mirrored by the CUDA kernels): 1D `c0*c + r*(w + e)`,
//! 2D `c0*c + r*((w + e) + (s + n))`, with `c0 = 1 - 2r` (1D) or `1 - 4r` (2D).
//!
//! Fields larger than the caches are written with streaming (non-temporal) stores: a plain
//! store first reads the destination line from memory, which costs a third of the traffic
//! of a stencil sweep. Rows are computed into a small buffer that stays in L1 and then
//! streamed out, so the arithmetic is the same in both paths.

use rayon::prelude::*;

use crate::real::Real;

/// Elements per parallel task in 1D.
const CHUNK_1D: usize = 1 << 14;

/// One FTCS step in 1D: `dst = src + r * laplacian(src)`, ends set to 0.
pub fn ftcs1d<T: Real>(src: &[T], dst: &mut [T], r: T) {
    let n = src.len();
    assert!(n >= 3 && dst.len() == n);
    let c0 = T::one() - (r + r);
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

/// Arrays of at least this many bytes are written with streaming stores.
pub const STREAM_BYTES: usize = 8 << 20;

/// Elements of a row computed per block before they are streamed out.
const BLOCK: usize = 512;

/// One FTCS step in 2D on an `nx`-wide row-major grid, all four edges set to 0.
pub fn ftcs2d<T: Real>(src: &[T], dst: &mut [T], nx: usize, r: T) {
    let ny = src.len() / nx;
    assert!(nx >= 3 && ny >= 3 && src.len() == nx * ny && dst.len() == src.len());
    let c0 = T::one() - T::of(4.0) * r;
    let stream = std::mem::size_of_val(dst) >= STREAM_BYTES && std::env::var("NOSTREAM").is_err();
    dst.par_chunks_mut(nx).enumerate().for_each(|(j, out)| {
        if j == 0 || j == ny - 1 {
            out.fill(T::zero());
            return;
        }
        let row = |jj: usize| &src[jj * nx..(jj + 1) * nx];
        let (south, mid, north) = (row(j - 1), row(j), row(j + 1));
        let update = |lo: usize, o: &mut [T]| {
            // Interior nodes lo..lo+o.len(), all in 1..nx-1.
            let m = o.len();
            let (w, c, e) = (&mid[lo - 1..lo - 1 + m], &mid[lo..lo + m], &mid[lo + 1..lo + 1 + m]);
            let (s, n) = (&south[lo..lo + m], &north[lo..lo + m]);
            for k in 0..m {
                o[k] = c0 * c[k] + r * ((w[k] + e[k]) + (s[k] + n[k]));
            }
        };
        if stream {
            let mut buf = [T::zero(); BLOCK];
            let mut lo = 1;
            while lo < nx - 1 {
                let m = BLOCK.min(nx - 1 - lo);
                update(lo, &mut buf[..m]);
                stream_store(&mut out[lo..lo + m], &buf[..m]);
                lo += m;
            }
            stream_fence();
        } else {
            update(1, &mut out[1..nx - 1]);
        }
        out[0] = T::zero();
        out[nx - 1] = T::zero();
    });
}

/// `dst.copy_from_slice(src)` with non-temporal stores where the CPU has them.
fn stream_store<T: Real>(dst: &mut [T], src: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        let bytes = std::mem::size_of_val(dst);
        let d = dst.as_mut_ptr() as *mut u8;
        let s = src.as_ptr() as *const u8;
        // Plain copies up to the first 16-byte boundary of dst and after the last one.
        let head = d.align_offset(16).min(bytes);
        let body = (bytes - head) / 16;
        // SAFETY: dst and src have the same length (checked by the slice indexing of the
        // callers: both are `m` elements); every access below stays within `bytes`, the
        // streamed addresses are 16-byte aligned, and SSE2 is part of the x86_64 baseline.
        unsafe {
            std::ptr::copy_nonoverlapping(s, d, head);
            for k in 0..body {
                let off = head + 16 * k;
                let v = _mm_loadu_si128(s.add(off) as *const __m128i);
                _mm_stream_si128(d.add(off) as *mut __m128i, v);
            }
            let done = head + 16 * body;
            std::ptr::copy_nonoverlapping(s.add(done), d.add(done), bytes - done);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst.copy_from_slice(src);
}

/// Order the streaming stores of this thread before anything that follows.
fn stream_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_sfence();
    }
}

/// The COPY kernel the heat bandwidth is compared with: same row split, `dst = src`.
pub fn copy2d<T: Real>(src: &[T], dst: &mut [T], nx: usize) {
    dst.par_chunks_mut(nx).zip(src.par_chunks(nx)).for_each(|(d, s)| d.copy_from_slice(s));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random values in [0, 1).
    fn noise(n: usize, seed: u64) -> Vec<f64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 11) as f64 / (1u64 << 53) as f64
            })
            .collect()
    }

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
    fn streaming_path_matches_plain_loop() {
        // Wide enough rows for several blocks and an odd width for unaligned row starts.
        let nx = 2 * BLOCK + 77;
        let ny = STREAM_BYTES / (8 * nx) + 3;
        let src = noise(nx * ny, 4);
        let mut dst = vec![f64::NAN; nx * ny];
        let r = 0.25;
        ftcs2d(&src, &mut dst, nx, r);
        for j in [0, 1, ny / 2, ny - 2, ny - 1] {
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
