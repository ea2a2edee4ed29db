//! Tridiagonal solvers: the Thomas algorithm (LU without pivoting, factored once and applied
//! to many right-hand sides, one system or a batch of systems interleaved in memory) and the
//! truncated SPIKE algorithm (Polizzi & Sameh; MacIntosh et al. 2019), which splits one
//! large system into partitions solved in parallel.
//!
//! Every solve is a fixed sequence of IEEE operations per element, independent of the
//! thread count, so results are reproducible bit for bit (and a CUDA kernel evaluating the
//! same expressions gives the same bits):
//! - factor: `inv_0 = 1/b_0`, `u_0 = c_0 inv_0`; `inv_i = 1/(b_i - a_i u_{i-1})`, `u_i = c_i inv_i`;
//! - forward: `y_0 = d_0 inv_0`, `y_i = (d_i - a_i y_{i-1}) inv_i`;
//! - backward: `x_{m-1} = y_{m-1}`, `x_i = y_i - u_i x_{i+1}`.

use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{Result, input};
use crate::real::Real;

mod lanes;

/// A tridiagonal matrix: row `i` is `a_i x_{i-1} + b_i x_i + c_i x_{i+1}` (`a_0` and
/// `c_{m-1}` are absent and read as 0).
#[derive(Clone, Debug, PartialEq)]
pub enum Tridiagonal<T> {
    /// The same `(a, b, c)` on every row (Toeplitz): the implicit heat halves.
    Constant { m: usize, a: T, b: T, c: T },
    /// Diagonals of length `m` each (`lower[0]` and `upper[m-1]` ignored).
    General { lower: Vec<T>, diag: Vec<T>, upper: Vec<T> },
}

impl<T: Real> Tridiagonal<T> {
    pub fn constant(m: usize, a: T, b: T, c: T) -> Self {
        Tridiagonal::Constant { m, a, b, c }
    }

    pub fn general(lower: Vec<T>, diag: Vec<T>, upper: Vec<T>) -> Self {
        assert!(lower.len() == diag.len() && upper.len() == diag.len(), "diagonals of unequal length");
        Tridiagonal::General { lower, diag, upper }
    }

    /// Unknowns.
    pub fn len(&self) -> usize {
        match self {
            Tridiagonal::Constant { m, .. } => *m,
            Tridiagonal::General { diag, .. } => diag.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `(a_i, b_i, c_i)` with the absent corners as 0.
    pub fn row(&self, i: usize) -> (T, T, T) {
        let m = self.len();
        let (a, b, c) = match self {
            Tridiagonal::Constant { a, b, c, .. } => (*a, *b, *c),
            Tridiagonal::General { lower, diag, upper } => (lower[i], diag[i], upper[i]),
        };
        (if i == 0 { T::zero() } else { a }, b, if i + 1 == m { T::zero() } else { c })
    }

    /// The diagonal dominance `d = min_i |b_i| / (|a_i| + |c_i|)` (MacIntosh et al. eq. 2);
    /// infinite for a diagonal matrix.
    pub fn dominance(&self) -> f64 {
        (0..self.len())
            .map(|i| {
                let (a, b, c) = self.row(i);
                b.f64().abs() / (a.f64().abs() + c.f64().abs())
            })
            .fold(f64::INFINITY, f64::min)
    }

    /// `A x`, for residual checks.
    pub fn apply(&self, x: &[T]) -> Vec<T> {
        (0..self.len())
            .map(|i| {
                let (a, b, c) = self.row(i);
                let w = if i > 0 { a * x[i - 1] } else { T::zero() };
                let e = if i + 1 < x.len() { c * x[i + 1] } else { T::zero() };
                w + b * x[i] + e
            })
            .collect()
    }

    /// The diagonal block of rows `start..end` as a matrix of its own.
    fn block(&self, start: usize, end: usize) -> Tridiagonal<T> {
        match self {
            Tridiagonal::Constant { a, b, c, .. } => Tridiagonal::constant(end - start, *a, *b, *c),
            Tridiagonal::General { lower, diag, upper } => Tridiagonal::general(
                lower[start..end].to_vec(),
                diag[start..end].to_vec(),
                upper[start..end].to_vec(),
            ),
        }
    }
}

/// The LU factors of the Thomas algorithm. Row `i` uses `(lower[i], inv[i], up[i])` for
/// `i < lower.len()` and `tail` beyond: the factors of a constant matrix become stationary
/// after a few dozen rows (bitwise), so only that prefix is stored.
#[derive(Clone, Debug)]
pub struct Thomas<T> {
    m: usize,
    lower: Vec<T>,
    inv: Vec<T>,
    up: Vec<T>,
    tail: (T, T, T),
    /// The vector kernel of [`Thomas::solve_together`] for this length on this CPU.
    kernel: Option<lanes::Kernel>,
}

impl<T: Real> Thomas<T> {
    /// Factor `a`; a zero or non-finite pivot (a singular matrix, or one that needs
    /// pivoting) is an error.
    pub fn new(a: &Tridiagonal<T>) -> Result<Self> {
        let m = a.len();
        if m == 0 {
            return input("tridiagonal: a system with no unknowns");
        }
        let constant = matches!(a, Tridiagonal::Constant { .. });
        let (mut lower, mut inv, mut up) = (Vec::new(), Vec::new(), Vec::new());
        let mut prev_up = T::zero();
        for i in 0..m {
            let (ai, bi, ci) = a.row(i);
            let pivot = bi - ai * prev_up;
            if pivot == T::zero() || !pivot.is_finite() {
                return input(format!("tridiagonal: pivot {} at row {i}: the matrix is singular or needs pivoting", pivot.f64()));
            }
            let (invi, upi) = (T::one() / pivot, ci * (T::one() / pivot));
            // Rows 1..m-1 of a constant matrix share (a, b, c): once a row's factors equal the
            // previous row's, every later row's do too.
            if constant && i >= 2 && i + 1 < m && invi == inv[i - 1] && upi == up[i - 1] {
                break;
            }
            lower.push(ai);
            inv.push(invi);
            up.push(upi);
            prev_up = upi;
        }
        let k = lower.len();
        let tail = (lower[k - 1], inv[k - 1], up[k - 1]);
        Ok(Thomas { m, lower, inv, up, tail, kernel: lanes::choose::<T>(m) })
    }

    /// Unknowns.
    pub fn len(&self) -> usize {
        self.m
    }

    pub fn is_empty(&self) -> bool {
        self.m == 0
    }

    #[inline(always)]
    fn at(&self, i: usize) -> (T, T, T) {
        if i < self.lower.len() { (self.lower[i], self.inv[i], self.up[i]) } else { self.tail }
    }

    /// Solve `A x = d` in place.
    pub fn solve(&self, d: &mut [T]) {
        let m = self.m;
        assert_eq!(d.len(), m, "right-hand side of the wrong length");
        let k = self.lower.len().min(m);
        d[0] = d[0] * self.inv[0];
        for i in 1..k {
            d[i] = (d[i] - self.lower[i] * d[i - 1]) * self.inv[i];
        }
        let (lt, it, ut) = self.tail;
        for i in k.max(1)..m {
            d[i] = (d[i] - lt * d[i - 1]) * it;
        }
        for i in (k..m.saturating_sub(1)).rev() {
            d[i] = d[i] - ut * d[i + 1];
        }
        for i in (0..k.min(m - 1)).rev() {
            d[i] = d[i] - self.up[i] * d[i + 1];
        }
    }

    /// Solve `width` systems stored interleaved, in place: unknown `i` of system `s` at
    /// `d[i * width + s]`, the layout of the columns of a row-major grid. The sweeps run
    /// along the rows, vectorised across systems, in column blocks, in parallel over blocks;
    /// batches larger than a third of the L3 cache by way of a scratch
    /// ([`Thomas::columns_streamed`]) where the CPU and the layout allow. (An ADI step's two
    /// grids of such a batch outgrow the L3 cache; smaller ones stay in it for the next half
    /// step, which the streamed path's non-temporal stores would write out to memory.)
    pub fn solve_interleaved(&self, d: &mut [T], width: usize) {
        let streamed = streamable(d, width) && std::mem::size_of_val(d) > crate::cpu::l3_bytes() / 3;
        self.interleaved(d, width, streamed);
    }

    /// [`Thomas::solve_interleaved`], streamed or not (`streamed` only where [`streamable`]).
    fn interleaved(&self, d: &mut [T], width: usize, streamed: bool) {
        let m = self.m;
        assert_eq!(d.len(), m * width, "interleaved right-hand sides of the wrong length");
        // Columns per block: 256 bytes of each row, four cache lines (the fastest of 64 B to
        // 8 KiB on a 4096 x 4096 batch: narrower blocks starve the prefetchers, wider ones
        // fall out of the caches before the backward sweep); streamed, STREAM_BYTES.
        let size = std::mem::size_of::<T>();
        let cols = ((if streamed { STREAM_BYTES } else { 256 }) / size).min(width);
        // Blocks start at column 0, or where streamed at the first column on a 64-byte line
        // (the columns before it a block of their own).
        let first = if streamed { (64 - d.as_ptr() as usize % 64) % 64 / size } else { 0 };
        let blocks: Vec<(usize, usize)> = (first > 0)
            .then_some((0, first))
            .into_iter()
            .chain((first..width).step_by(cols).map(|c0| (c0, (c0 + cols).min(width))))
            .collect();
        let base = SendPtr(d.as_mut_ptr());
        let (full, rest): (Vec<_>, Vec<_>) = blocks.into_iter().partition(|&(c0, c1)| streamed && (c1 - c0) * size == STREAM_BYTES);
        // Streamed blocks go in runs (up to 8 per task, and at least a task per thread).
        let run = (full.len() / rayon::current_num_threads()).clamp(1, 8);
        rayon::join(
            || {
                full.par_chunks(run).for_each(|blocks| {
                    let starts: Vec<usize> = blocks.iter().map(|&(c0, _)| c0).collect();
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: the CPU has AVX-512F and the rows are whole 64-byte lines
                    // (streamable); the blocks start on a line; blocks are disjoint and lie in `d`.
                    unsafe {
                        self.columns_streamed(base, width, &starts)
                    };
                    #[cfg(not(target_arch = "x86_64"))]
                    unreachable!("streamed blocks {starts:?} without AVX-512");
                })
            },
            || {
                rest.into_par_iter().for_each(|(c0, c1)| {
                    // SAFETY: each task touches only columns c0..c1 of each row; the ranges of
                    // different tasks are disjoint and all lie inside `d` (m * width elements).
                    unsafe { self.columns(base, width, c0, c1) }
                })
            },
        );
    }

    /// The blocks of columns `c0..c0 + STREAM_BYTES` (`c0` in `starts`) of the interleaved
    /// systems at `base`, by way of a contiguous scratch: the forward sweep reads the rows and
    /// writes its results to the scratch, the backward sweep reads them back from there (a
    /// sequential stream, which the prefetchers follow in reverse too) and writes the solution
    /// to the rows with non-temporal stores. Each row is then read and written once, and
    /// nothing waits on rows coming back in reverse from the L3 cache (rows a power-of-two
    /// distance apart share a few L2 sets, so a block does not stay in the L2 cache between
    /// the sweeps). A block's forward sweep runs beside the previous block's backward sweep.
    /// The same operations as [`Thomas::columns`].
    ///
    /// # Safety
    /// The CPU has AVX-512F; `base` holds `m * width` elements, rows a multiple of 64 bytes
    /// long; each `c0` starts a 64-byte line in row 0 (and so in every row), the blocks are
    /// disjoint and lie in the rows, and no other thread touches them.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn columns_streamed(&self, base: SendPtr<T>, width: usize, starts: &[usize]) {
        use std::arch::x86_64::{__m512i, _mm_sfence, _mm512_loadu_si512, _mm512_stream_si512};
        const BYTES: usize = STREAM_BYTES;
        let (m, cols) = (self.m, BYTES / std::mem::size_of::<T>());
        with_scratch::<T, _>(2 * m * cols, |scratch| {
            // SAFETY (whole body): rows i < m of the blocks lie in `d` (the caller's promise),
            // and rows i < m of both halves of `scratch` (2 m cols elements, `with_scratch`).
            unsafe {
                let row = |c0: usize, i: usize| std::slice::from_raw_parts(base.get().add(i * width + c0), cols);
                let tmp = |half: usize, i: usize| std::slice::from_raw_parts_mut(scratch.add((half * m + i) * cols), cols);
                let forward = |c0: usize, half: usize, i: usize| {
                    if i == 0 {
                        let inv0 = self.inv[0];
                        for (y, d) in tmp(half, 0).iter_mut().zip(row(c0, 0)) {
                            *y = *d * inv0;
                        }
                        return;
                    }
                    if i + PREFETCH_ROWS < m {
                        prefetch(base.get().add((i + PREFETCH_ROWS) * width + c0), cols);
                    }
                    let (l, inv, _) = self.at(i);
                    let (prev, cur) = (tmp(half, i - 1), tmp(half, i));
                    for ((y, d), p) in cur.iter_mut().zip(row(c0, i)).zip(prev.iter()) {
                        *y = (*d - l * *p) * inv;
                    }
                };
                // The backward sweep keeps the latest row of the solution in `x`, so that the
                // scratch is read back once and not written again.
                let backward = |c0: usize, half: usize, i: usize, x: &mut [T]| {
                    if i + 1 == m {
                        x.copy_from_slice(tmp(half, i));
                    } else {
                        let (_, _, u) = self.at(i);
                        for (x, y) in x.iter_mut().zip(tmp(half, i).iter()) {
                            *x = *y - u * *x;
                        }
                    }
                    let (from, to) = (x.as_ptr() as *const __m512i, base.get().add(i * width + c0) as *mut __m512i);
                    for k in 0..BYTES / 64 {
                        _mm512_stream_si512(to.add(k), _mm512_loadu_si512(from.add(k)));
                    }
                };
                let mut latest = [T::zero(); BYTES / 4];
                let x = &mut latest[..cols];
                // Block j's forward sweep runs row by row beside block j - 1's backward sweep
                // (each in its half of the scratch): the reads of the one and the non-temporal
                // writes of the other are in flight together.
                for j in 0..=starts.len() {
                    let ahead = starts.get(j).map(|&c0| (c0, j % 2));
                    let behind = j.checked_sub(1).map(|k| (starts[k], k % 2));
                    for i in 0..m {
                        if let Some((c0, half)) = ahead {
                            forward(c0, half, i);
                        }
                        if let Some((c0, half)) = behind {
                            backward(c0, half, m - 1 - i, x);
                        }
                    }
                }
                // Non-temporal stores are weakly ordered: complete them before the task ends.
                _mm_sfence();
            }
        });
    }

    /// Columns `c0..c1` of the interleaved systems at `base` (rows `width` long). The
    /// AVX-512 or AVX2 build is chosen at run time where the CPU has it: the same operations
    /// on the same values (Rust never contracts to FMA), several columns per instruction.
    ///
    /// # Safety
    /// `base` holds `m * width` elements, and no other thread touches columns `c0..c1`.
    unsafe fn columns(&self, base: SendPtr<T>, width: usize, c0: usize, c1: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F (checked just above); the caller's promise.
                return unsafe { self.columns_avx512(base, width, c0, c1) };
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: as above, with AVX2.
                return unsafe { self.columns_avx2(base, width, c0, c1) };
            }
        }
        // SAFETY: the caller's promise.
        unsafe { self.columns_body(base, width, c0, c1) }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn columns_avx512(&self, base: SendPtr<T>, width: usize, c0: usize, c1: usize) {
        // SAFETY: the caller's promise.
        unsafe { self.columns_body(base, width, c0, c1) }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn columns_avx2(&self, base: SendPtr<T>, width: usize, c0: usize, c1: usize) {
        // SAFETY: the caller's promise.
        unsafe { self.columns_body(base, width, c0, c1) }
    }

    #[inline(always)]
    unsafe fn columns_body(&self, base: SendPtr<T>, width: usize, c0: usize, c1: usize) {
        let m = self.m;
        // SAFETY: the caller's promise.
        let row = |i: usize| unsafe { std::slice::from_raw_parts_mut(base.get().add(i * width + c0), c1 - c0) };
        let inv0 = self.inv[0];
        for v in row(0) {
            *v = *v * inv0;
        }
        for i in 1..m {
            // The hardware prefetchers follow a 256-byte block down a column of rows a few
            // kilobytes apart only slowly: ask for the rows ahead.
            if i + PREFETCH_ROWS < m {
                // SAFETY: row i + PREFETCH_ROWS lies inside `d` (the caller's promise).
                prefetch(unsafe { base.get().add((i + PREFETCH_ROWS) * width + c0) }, c1 - c0);
            }
            let (l, inv, _) = self.at(i);
            let (prev, cur) = (row(i - 1), row(i));
            for (x, p) in cur.iter_mut().zip(prev.iter()) {
                *x = (*x - l * *p) * inv;
            }
        }
        for i in (0..m - 1).rev() {
            let (_, _, u) = self.at(i);
            let (cur, next) = (row(i), row(i + 1));
            for (x, n) in cur.iter_mut().zip(next.iter()) {
                *x = *x - u * *n;
            }
        }
    }

    /// Solve the systems stored one after another (`d.len() / m` of them), in parallel over
    /// groups of systems; within a group the systems advance in lockstep, so their
    /// dependency chains overlap in the pipeline.
    pub fn solve_batch(&self, d: &mut [T]) {
        let m = self.m;
        assert_eq!(d.len() % m, 0, "batch of right-hand sides of the wrong length");
        d.par_chunks_mut(self.group_len() * m).for_each(|group| self.solve_lockstep(group));
    }

    /// Systems [`Thomas::solve_together`] takes at once at its fastest: a vector lane each
    /// where the CPU has AVX2 ([`lanes`]), else [`LOCKSTEP`] scalar chains.
    pub fn group_len(&self) -> usize {
        self.kernel.map_or(LOCKSTEP, |k| k.lanes::<T>())
    }

    /// Up to [`Thomas::group_len`] consecutive systems, element by element together.
    fn solve_lockstep(&self, group: &mut [T]) {
        let mut rows: Vec<&mut [T]> = group.chunks_mut(self.m).collect();
        self.solve_together(&mut rows);
    }

    /// Solve several systems of this matrix element by element together (each row of
    /// `rows` one right-hand side), so that their dependency chains overlap in the
    /// pipeline: the same operations as [`Thomas::solve`] on each.
    pub fn solve_together(&self, rows: &mut [&mut [T]]) {
        let m = self.m;
        if rows.len() < 2 {
            for r in rows {
                self.solve(r);
            }
            return;
        }
        assert!(rows.iter().all(|r| r.len() == m), "right-hand sides of the wrong length");
        if self.kernel.is_some_and(|k| lanes::solve_with(k, self, rows)) {
            return;
        }
        if let Ok(group) = <&mut [&mut [T]; LOCKSTEP]>::try_from(&mut *rows) {
            return self.solve_group(group);
        }
        let inv0 = self.inv[0];
        for r in rows.iter_mut() {
            r[0] = r[0] * inv0;
        }
        for i in 1..m {
            let (l, inv, _) = self.at(i);
            for r in rows.iter_mut() {
                r[i] = (r[i] - l * r[i - 1]) * inv;
            }
        }
        for i in (0..m - 1).rev() {
            let (_, _, u) = self.at(i);
            for r in rows.iter_mut() {
                r[i] = r[i] - u * r[i + 1];
            }
        }
    }
}

impl<T: Real> Thomas<T> {
    /// [`Thomas::solve_together`] of a full lockstep group: each system's latest value stays
    /// in a register between rows and no index is checked, so the eight dependency chains
    /// are all the work there is (the same operations on the same values).
    fn solve_group(&self, rows: &mut [&mut [T]; LOCKSTEP]) {
        let m = self.m;
        let p: [*mut T; LOCKSTEP] = std::array::from_fn(|k| rows[k].as_mut_ptr());
        // SAFETY: each pointer addresses a distinct right-hand side of m elements (checked by
        // the caller), and every index below is under m.
        unsafe {
            let inv0 = self.inv[0];
            let mut prev: [T; LOCKSTEP] = std::array::from_fn(|k| *p[k] * inv0);
            for k in 0..LOCKSTEP {
                *p[k] = prev[k];
            }
            for i in 1..m {
                let (l, inv, _) = self.at(i);
                for k in 0..LOCKSTEP {
                    prev[k] = (*p[k].add(i) - l * prev[k]) * inv;
                    *p[k].add(i) = prev[k];
                }
            }
            for i in (0..m - 1).rev() {
                let (_, _, u) = self.at(i);
                for k in 0..LOCKSTEP {
                    prev[k] = *p[k].add(i) - u * prev[k];
                    *p[k].add(i) = prev[k];
                }
            }
        }
    }
}

/// Bytes of each row in a block of [`Thomas::columns_streamed`].
const STREAM_BYTES: usize = 512;

thread_local! {
    /// Each thread's scratch of the sweeps that stage rows outside the systems
    /// ([`Thomas::columns_streamed`], [`lanes`]), kept between solves.
    static SCRATCH: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `f` on this thread's scratch of at least `len` elements of `T` (8-byte aligned).
fn with_scratch<T, R>(len: usize, f: impl FnOnce(*mut T) -> R) -> R {
    SCRATCH.with_borrow_mut(|s| {
        let words = (len * std::mem::size_of::<T>()).div_ceil(8);
        if s.len() < words {
            s.resize(words, 0.0);
        }
        f(s.as_mut_ptr() as *mut T)
    })
}

/// Whether [`Thomas::columns_streamed`] can solve `d` (rows `width` long): the CPU has
/// AVX-512 (non-temporal stores of whole lines) and the rows are a whole number of 64-byte
/// lines long. [`Thomas::solve_interleaved`] takes it for batches larger than a third of the
/// L3 cache, whose solution would leave the caches anyway: non-temporal stores then save
/// reading each line before it is written.
fn streamable<T>(d: &[T], width: usize) -> bool {
    let size = std::mem::size_of::<T>();
    crate::cpu::Simd::detect() == crate::cpu::Simd::Avx512
        && (d.as_ptr() as usize).is_multiple_of(size)
        && (width * size).is_multiple_of(64)
}

/// How far ahead of the forward sweep of [`Thomas::solve_interleaved`] rows are prefetched
/// (the fastest of 4 to 32 on a 4096 x 4096 batch).
const PREFETCH_ROWS: usize = 16;

/// Ask for the cache lines of `n` elements at `p` (a hint: no effect on results).
#[inline(always)]
fn prefetch<T>(p: *const T, n: usize) {
    #[cfg(target_arch = "x86_64")]
    for b in (0..n * std::mem::size_of::<T>()).step_by(64) {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch never faults, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((p as *const i8).wrapping_add(b)) };
    }
}

/// Systems a lockstep group of [`Thomas::solve_batch`] advances together.
const LOCKSTEP: usize = 8;

#[derive(Clone, Copy)]
struct SendPtr<T>(*mut T);
// SAFETY: used only to hand disjoint parts of one slice to rayon tasks.
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}
impl<T> SendPtr<T> {
    fn get(self) -> *mut T {
        self.0
    }
}

/// One partition of a SPIKE plan: its rows, its local factors, and the parts of its spikes
/// that are not negligible. The partitions of a constant matrix share these (two lengths at
/// most), so a plan of millions of partitions holds them once.
#[derive(Clone, Debug)]
struct Partition<T> {
    start: usize,
    end: usize,
    factors: Arc<Thomas<T>>,
    /// `V = A_k^{-1} c e_last` (the coupling to the next partition): its bottom entries
    /// `v[m - v.len()..m]`; the entries above are below the truncation tolerance.
    v: Arc<[T]>,
    /// `W = A_k^{-1} a e_first` (the coupling to the previous partition): its top entries.
    w: Arc<[T]>,
}

/// Truncated SPIKE for one system, or Thomas where the matrix is not dominant enough to
/// truncate at the requested partition size.
///
/// Solve: (1) every partition solves its own block, `F_k = A_k^{-1} d_k`, in place, in
/// parallel; (2) each interface between partitions `k` and `k+1` solves the 2 x 2 system
/// `x_k^b + V_k^b x_{k+1}^t = F_k^b`, `W_{k+1}^t x_k^b + x_{k+1}^t = F_{k+1}^t` (eq. 6: the
/// far tips `V_k^t` and `W_k^b` dropped); (3) every partition corrects
/// `x_k = F_k - V_k x_{k+1}^t - W_k x_{k-1}^b` over the rows where its spikes are not
/// negligible. The plan drops only spike entries below `eps/4` (`eps` the precision's
/// machine epsilon), so the error is about `eps |x|`; where a far tip exceeds that (the
/// error estimate `d^-m` of eq. 8 above round-off), [`SpikePlan::plan`] falls back to Thomas.
#[derive(Clone, Debug)]
pub struct SpikePlan<T> {
    method: SpikeMethod<T>,
    fallback: Option<String>,
    /// All partitions have the same factors (a constant matrix).
    shared_factors: bool,
}

#[derive(Clone, Debug)]
enum SpikeMethod<T> {
    Truncated(Vec<Partition<T>>),
    Thomas(Thomas<T>),
}

impl<T: Real> SpikePlan<T> {
    /// Plan `a` on `partitions` partitions (1 to `a.len()`), falling back to Thomas (and
    /// saying why) where truncation would lose accuracy.
    pub fn plan(a: &Tridiagonal<T>, partitions: usize) -> Result<Self> {
        Self::build(a, partitions, true)
    }

    /// The truncated algorithm whatever the dominance: for accuracy studies (the error
    /// against dominance curve), never for a solver's results.
    pub fn plan_truncated(a: &Tridiagonal<T>, partitions: usize) -> Result<Self> {
        Self::build(a, partitions, false)
    }

    fn build(a: &Tridiagonal<T>, p: usize, guarded: bool) -> Result<Self> {
        let n = a.len();
        if p == 0 || p > n {
            return input(format!("tridiagonal: {p} SPIKE partitions for a system of {n} unknowns; give 1 to {n}"));
        }
        let tol = T::epsilon() * T::of(0.25);
        let bounds = bounds(n, p);
        let mut parts = Vec::with_capacity(p);
        let mut cache: Vec<(usize, Partition<T>)> = Vec::new();
        let mut worst = (0.0f64, 0usize);
        for (k, &(start, end)) in bounds.iter().enumerate() {
            // A constant matrix's partitions differ only in size (two sizes at most).
            let cached = cache.iter().find(|(len, _)| *len == end - start).map(|(_, q)| q.clone());
            let part = match cached {
                Some(q) => Partition { start, end, ..q },
                None => {
                    let q = partition(a, start, end, tol)?;
                    if matches!(a, Tridiagonal::Constant { .. }) {
                        cache.push((end - start, q.clone()));
                    }
                    q
                }
            };
            let far = part.far_tips(k + 1 < p, k > 0);
            if far > worst.0 {
                worst = (far, k);
            }
            parts.push(part);
        }
        if guarded && worst.0 > tol.f64() {
            let m = n / p;
            let reason = format!(
                "diagonal dominance {:.4} is too weak to truncate SPIKE at {m} rows per partition: a dropped \
                 spike tip is {:.2e} (partition {}), above the round-off {:.2e}; solved by Thomas",
                a.dominance(),
                worst.0,
                worst.1,
                tol.f64()
            );
            let method = SpikeMethod::Thomas(Thomas::new(a)?);
            return Ok(SpikePlan { method, fallback: Some(reason), shared_factors: false });
        }
        let shared_factors = matches!(a, Tridiagonal::Constant { .. });
        Ok(SpikePlan { method: SpikeMethod::Truncated(parts), fallback: None, shared_factors })
    }

    /// Why the plan solves with Thomas instead of truncated SPIKE, if it does.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// Partitions solved in parallel (1 after a fallback).
    pub fn partitions(&self) -> usize {
        match &self.method {
            SpikeMethod::Truncated(parts) => parts.len(),
            SpikeMethod::Thomas(_) => 1,
        }
    }

    /// Solve in place.
    pub fn solve(&self, d: &mut [T]) {
        let parts = match &self.method {
            SpikeMethod::Thomas(t) => return t.solve(d),
            SpikeMethod::Truncated(parts) => parts,
        };
        assert_eq!(d.len(), parts.last().map_or(0, |q| q.end), "right-hand side of the wrong length");
        let p = parts.len();
        let mut blocks = split(d, parts);
        // (1) local solves, in tasks of consecutive partitions: partitions that share their
        // factors (a constant matrix's, of one length) in lockstep groups, others one by
        // one. While its partitions are still in cache, a task also does (2) and (3) for the
        // interfaces between them and for the partitions whose interfaces are all its own.
        let tasks = self.tasks(parts);
        let mut rest: &mut [&mut [T]] = &mut blocks;
        let mut chunks = Vec::with_capacity(tasks.len());
        for r in &tasks {
            let (head, tail) = rest.split_at_mut(r.len());
            chunks.push(head);
            rest = tail;
        }
        let inner: Vec<Vec<(T, T)>> = chunks
            .into_par_iter()
            .zip(tasks.par_iter())
            .map(|(b, r)| {
                if self.shared_factors {
                    parts[r.start].factors.solve_together(b);
                } else {
                    b.iter_mut().zip(&parts[r.clone()]).for_each(|(b, q)| q.factors.solve(b));
                }
                let ends: Vec<(T, T)> = (r.start..r.end - 1).map(|k| interface(&b[k - r.start..], &parts[k..])).collect();
                for k in r.clone().filter(|&k| (k == 0 || k > r.start) && (k + 1 == p || k + 1 < r.end)) {
                    let next = (k + 1 < p).then(|| ends[k - r.start].1);
                    let prev = (k > 0).then(|| ends[k - 1 - r.start].0);
                    correct(b[k - r.start], &parts[k], next, prev);
                }
                ends
            })
            .collect();
        // (2) the interfaces between tasks: x_k^b and x_{k+1}^t.
        let mut bottom = vec![T::zero(); p];
        let mut top = vec![T::zero(); p];
        for (r, ends) in tasks.iter().zip(inner) {
            for (k, (b, t)) in (r.start..).zip(ends) {
                (bottom[k], top[k + 1]) = (b, t);
            }
            if r.end < p {
                (bottom[r.end - 1], top[r.end]) = interface(&blocks[r.end - 1..], &parts[r.end - 1..]);
            }
        }
        // (3) corrections of the partitions at the tasks' ends.
        let mut at_end = vec![false; p];
        for r in &tasks {
            at_end[r.start] |= r.start > 0;
            at_end[r.end - 1] |= r.end < p;
        }
        blocks.par_iter_mut().zip(parts.par_iter()).enumerate().filter(|(k, _)| at_end[*k]).for_each(|(k, (b, q))| {
            correct(b, q, (k + 1 < p).then(|| top[k + 1]), (k > 0).then(|| bottom[k - 1]));
        });
    }

    /// The tasks of [`SpikePlan::solve`]: runs of consecutive partitions, as many as a
    /// lockstep group takes where they share their factors (and length), else one each.
    fn tasks(&self, parts: &[Partition<T>]) -> Vec<std::ops::Range<usize>> {
        let mut tasks: Vec<std::ops::Range<usize>> = Vec::new();
        let len = |k: usize| parts[k].end - parts[k].start;
        for (k, q) in parts.iter().enumerate() {
            match tasks.last_mut() {
                Some(r) if self.shared_factors && len(r.start) == len(k) && r.len() < q.factors.group_len() => r.end += 1,
                _ => tasks.push(k..k + 1),
            }
        }
        tasks
    }
}

/// Step (2) of [`SpikePlan::solve`] at the interface between the first two partitions of
/// `b` (solved locally): `(x_k^b, x_{k+1}^t)` from the 2 x 2 system.
fn interface<T: Real>(b: &[&mut [T]], parts: &[Partition<T>]) -> (T, T) {
    let (fb, ft) = (*b[0].last().unwrap(), b[1][0]);
    let (vb, wt) = (*parts[0].v.last().unwrap_or(&T::zero()), *parts[1].w.first().unwrap_or(&T::zero()));
    let det = T::one() - vb * wt;
    ((fb - vb * ft) / det, (ft - wt * fb) / det)
}

/// Step (3) of [`SpikePlan::solve`] on one partition: `x = F - V x_{k+1}^t - W x_{k-1}^b`
/// over the kept windows (`next`, `prev`: the neighbours' interface values, where they exist).
fn correct<T: Real>(b: &mut [T], q: &Partition<T>, next: Option<T>, prev: Option<T>) {
    let m = b.len();
    if let Some(xt) = next {
        for (x, &v) in b[m - q.v.len()..].iter_mut().zip(q.v.iter()) {
            *x = *x - v * xt;
        }
    }
    if let Some(xb) = prev {
        for (x, &w) in b[..q.w.len()].iter_mut().zip(q.w.iter()) {
            *x = *x - w * xb;
        }
    }
}

/// The row ranges of `p` partitions of `n` rows: two lengths that differ by one row, or by 16
/// rows where partitions are at least 256 rows long (then every partition but the last
/// starts a whole number of 64-byte lines after the first), the longer ones first, so that
/// the partitions of one length lie together and solve in lockstep groups.
fn bounds(n: usize, p: usize) -> Vec<(usize, usize)> {
    let unit = if n / p >= 256 { 16 } else { 1 };
    let short = n / p / unit * unit;
    let long = (n - short * p) / unit;
    let mut start = 0;
    (0..p)
        .map(|k| {
            let len = if k + 1 == p { n - start } else { short + if k < long { unit } else { 0 } };
            start += len;
            (start - len, start)
        })
        .collect()
}

/// `d` cut into the partitions' row ranges.
fn split<'a, T>(mut d: &'a mut [T], parts: &[Partition<T>]) -> Vec<&'a mut [T]> {
    let mut out = Vec::with_capacity(parts.len());
    for q in parts {
        let (head, rest) = d.split_at_mut(q.end - q.start);
        out.push(head);
        d = rest;
    }
    out
}

/// Factor rows `start..end` and compute the spikes of that partition with the couplings
/// of its first and last rows (used only where a neighbour exists).
fn partition<T: Real>(a: &Tridiagonal<T>, start: usize, end: usize, tol: T) -> Result<Partition<T>> {
    let factors = Thomas::new(&a.block(start, end))?;
    let m = end - start;
    let (below, above) = match a {
        Tridiagonal::Constant { a, c, .. } => (*a, *c),
        Tridiagonal::General { lower, upper, .. } => (lower[start], upper[end - 1]),
    };
    let spike = |row: usize, coupling: T| {
        let mut s = vec![T::zero(); m];
        s[row] = coupling;
        factors.solve(&mut s);
        s
    };
    // V: from the first entry (from the top) above the tolerance to the bottom.
    let full = spike(m - 1, above);
    let from = full.iter().position(|x| x.abs() > tol).unwrap_or(m);
    let v = full[from..].into();
    // W: from the top to the last entry above the tolerance.
    let full = spike(0, below);
    let to = full.iter().rposition(|x| x.abs() > tol).map_or(0, |i| i + 1);
    let w = full[..to].into();
    Ok(Partition { start, end, factors: Arc::new(factors), v, w })
}

impl<T: Real> Partition<T> {
    /// The larger of the far tips truncation drops, `|V^t|` (with a next partition) and
    /// `|W^b|` (with a previous one); 0 where the kept part of a spike stops short of it.
    fn far_tips(&self, has_next: bool, has_prev: bool) -> f64 {
        let m = self.end - self.start;
        let vt = if has_next && self.v.len() == m { self.v[0].abs().f64() } else { 0.0 };
        let wb = if has_prev && self.w.len() == m { self.w[m - 1].abs().f64() } else { 0.0 };
        vt.max(wb)
    }
}

/// Read access to the factors and plans, for back ends that run the same solves elsewhere
/// (the CUDA kernels of `kernels/tridiag.cu`).
impl<T: Real> Thomas<T> {
    /// The stored prefix `(lower, inv, up)`: rows `0..k` with `k = lower.len()`.
    pub fn prefix(&self) -> (&[T], &[T], &[T]) {
        (&self.lower, &self.inv, &self.up)
    }

    /// The `(lower, inv, up)` of every row from `k` on.
    pub fn tail(&self) -> (T, T, T) {
        self.tail
    }
}

/// One partition of a truncated SPIKE plan, as [`SpikePlan::truncated`] shows it.
pub struct PartitionView<'a, T> {
    /// Rows `start..end` of the system.
    pub start: usize,
    pub end: usize,
    /// The partition's own block, factored.
    pub factors: &'a Thomas<T>,
    /// The kept bottom entries of `V` and top entries of `W`.
    pub v: &'a [T],
    pub w: &'a [T],
}

impl<T: Real> SpikePlan<T> {
    /// The partitions of a truncated plan; None after a fallback to Thomas.
    pub fn truncated(&self) -> Option<Vec<PartitionView<'_, T>>> {
        match &self.method {
            SpikeMethod::Truncated(parts) => Some(
                parts
                    .iter()
                    .map(|q| PartitionView { start: q.start, end: q.end, factors: &q.factors, v: &q.v, w: &q.w })
                    .collect(),
            ),
            SpikeMethod::Thomas(_) => None,
        }
    }

    /// The factors a fallback plan solves with; None for a truncated plan.
    pub fn thomas(&self) -> Option<&Thomas<T>> {
        match &self.method {
            SpikeMethod::Thomas(t) => Some(t),
            SpikeMethod::Truncated(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::Simd;

    /// A random system with dominance `d` (xorshift, fixed seed).
    fn random(n: usize, d: f64, seed: u64) -> (Tridiagonal<f64>, Vec<f64>) {
        let mut s = seed;
        let mut rnd = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        let (mut lower, mut diag, mut upper) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        for i in 0..n {
            lower[i] = if i > 0 { rnd() } else { 0.0 };
            upper[i] = if i + 1 < n { rnd() } else { 0.0 };
            let sign = if rnd() < 0.0 { -1.0 } else { 1.0 };
            diag[i] = sign * d * (lower[i].abs() + upper[i].abs()).max(1e-3);
        }
        let x = (0..n).map(|_| rnd()).collect();
        (Tridiagonal::general(lower, diag, upper), x)
    }

    /// Dense Gaussian elimination with partial pivoting: the independent answer.
    fn dense(a: &Tridiagonal<f64>, y: &[f64]) -> Vec<f64> {
        let n = a.len();
        let mut m = vec![vec![0.0; n + 1]; n];
        for i in 0..n {
            let (l, b, c) = a.row(i);
            if i > 0 {
                m[i][i - 1] = l;
            }
            m[i][i] = b;
            if i + 1 < n {
                m[i][i + 1] = c;
            }
            m[i][n] = y[i];
        }
        for col in 0..n {
            let piv = (col..n).max_by(|&p, &q| m[p][col].abs().total_cmp(&m[q][col].abs())).unwrap();
            m.swap(col, piv);
            let (top, below) = m.split_at_mut(col + 1);
            let pivot = &top[col];
            for row in below {
                let f = row[col] / pivot[col];
                for (x, p) in row[col..].iter_mut().zip(&pivot[col..]) {
                    *x -= f * p;
                }
            }
        }
        let mut x = vec![0.0; n];
        for i in (0..n).rev() {
            x[i] = (m[i][n] - (i + 1..n).map(|j| m[i][j] * x[j]).sum::<f64>()) / m[i][i];
        }
        x
    }

    fn rel(x: &[f64], want: &[f64]) -> f64 {
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        x.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max) / scale
    }

    #[test]
    fn thomas_and_spike_match_a_dense_solve() {
        for (n, p) in [(1, 1), (2, 2), (7, 3), (100, 7), (257, 257), (300, 16), (1000, 13)] {
            let (a, x) = random(n, 3.0, 7 + n as u64);
            let y = a.apply(&x);
            let want = dense(&a, &y);
            let mut t = y.clone();
            Thomas::new(&a).unwrap().solve(&mut t);
            assert!(rel(&t, &want) < 1e-12, "Thomas n = {n}");
            let plan = SpikePlan::plan(&a, p).unwrap();
            let mut s = y.clone();
            plan.solve(&mut s);
            assert!(rel(&s, &want) < 1e-12, "SPIKE n = {n}, p = {p}: {:e}", rel(&s, &want));
        }
    }

    #[test]
    fn spike_on_a_constant_matrix_matches_a_dense_solve() {
        // Partitions of one length share their factors and run in lockstep groups (and a
        // partial group), for one length or two (1200 rows in 7 or 100 partitions).
        let a = Tridiagonal::constant(1200, -1.0f64, 3.0, -0.8);
        let (_, x) = random(1200, 3.0, 5);
        let y = a.apply(&x);
        let want = dense(&a, &y);
        for p in [1, 12, 100, 7] {
            let mut s = y.clone();
            SpikePlan::plan(&a, p).unwrap().solve(&mut s);
            assert!(rel(&s, &want) < 1e-13, "p = {p}: {:e}", rel(&s, &want));
        }
    }

    /// A constant matrix's partitions solved in groups per length (vector lanes, lockstep)
    /// give the bits of the same matrix stored as a general one, whose partitions each have
    /// their own factors and are solved one by one.
    #[test]
    fn grouped_partitions_give_the_bits_of_single_solves() {
        grouped_partitions_give_the_bits_of_single_solves_in::<f32>();
        grouped_partitions_give_the_bits_of_single_solves_in::<f64>();
    }

    fn grouped_partitions_give_the_bits_of_single_solves_in<T: Real>() {
        let (a, b, c) = (T::of(-1.0), T::of(6.0), T::of(-1.5));
        for (n, p) in [(3001, 40), (5000, 64), (4096, 32), (20000, 37)] {
            let constant = Tridiagonal::constant(n, a, b, c);
            let general = Tridiagonal::general(vec![a; n], vec![b; n], vec![c; n]);
            let (_, y) = random(n, 3.0, n as u64);
            let y: Vec<T> = y.iter().map(|&v| T::of(v)).collect();
            let solve = |m: &Tridiagonal<T>| {
                let plan = SpikePlan::plan(m, p).unwrap();
                assert!(plan.fallback_reason().is_none());
                let mut x = y.clone();
                plan.solve(&mut x);
                x.iter().map(|v| v.f64().to_bits()).collect::<Vec<u64>>()
            };
            assert!(solve(&constant) == solve(&general), "n = {n}, p = {p}");
        }
    }

    #[test]
    fn constant_factors_are_the_full_factors() {
        // The stored prefix plus the stationary tail gives the bits of full arrays.
        let c = Tridiagonal::constant(5000, -0.7f64, 2.4, -0.7);
        let g = Tridiagonal::general(vec![-0.7; 5000], vec![2.4; 5000], vec![-0.7; 5000]);
        let (tc, tg) = (Thomas::new(&c).unwrap(), Thomas::new(&g).unwrap());
        assert!(tc.lower.len() < 100 && tg.lower.len() == 5000);
        let (_, x) = random(5000, 3.0, 3);
        let (mut a, mut b) = (x.clone(), x.clone());
        tc.solve(&mut a);
        tg.solve(&mut b);
        assert!(a == b);
    }

    /// A group of systems solved one per vector lane gives each system the bits of its own
    /// solve: general matrices (every row's factors stored), rows in whole cache-line blocks
    /// and in a partial last block.
    #[test]
    fn vector_groups_equal_single_solves() {
        vector_groups_equal_single_solves_in::<f32>();
        vector_groups_equal_single_solves_in::<f64>();
    }

    fn vector_groups_equal_single_solves_in<T: Real>() {
        let general = |m: usize| {
            let (a, _) = random(m, 2.5, 5 + m as u64);
            let diagonal = |k: usize| (0..m).map(|i| T::of([a.row(i).0, a.row(i).1, a.row(i).2][k])).collect::<Vec<T>>();
            Tridiagonal::general(diagonal(0), diagonal(1), diagonal(2))
        };
        // General matrices (a factor per row) and constant ones (a prefix, then the tail);
        // lengths shorter than a tile, between tiles and of whole tiles, and multiples of 1024,
        // whose f32 systems put a tile's lines in one L1 set (the split write-back).
        let matrices = [2, 5, 16, 23, 70, 2048]
            .map(general)
            .into_iter()
            .chain([3, 8, 33, 100, 1024].map(|m| Tridiagonal::constant(m, T::of(-1.0), T::of(3.0), T::of(-1.0))));
        for a in matrices {
            let (m, t) = (a.len(), Thomas::new(&a).unwrap());
            let kernels: Vec<_> = lanes::kernels::<T>(m).collect();
            for &kernel in &kernels {
                let n = kernel.lanes::<T>();
                let (_, x) = random(m * n, 3.0, 17);
                let x: Vec<T> = x.iter().map(|&v| T::of(v)).collect();
                let mut together = x.clone();
                let mut rows: Vec<&mut [T]> = together.chunks_mut(m).collect();
                assert!(lanes::solve_with(kernel, &t, &mut rows), "{kernel:?}, m = {m}");
                for (s, got) in together.chunks(m).enumerate() {
                    let mut want = x[s * m..(s + 1) * m].to_vec();
                    t.solve(&mut want);
                    let same = want.iter().zip(got).all(|(w, g)| w.f64().to_bits() == g.f64().to_bits());
                    assert!(same, "{kernel:?}: system {s} of {n}, m = {m}");
                }
            }
            if Simd::detect() != Simd::None {
                assert!(!kernels.is_empty(), "no vector kernel for m = {m}");
            }
        }
    }

    #[test]
    fn batched_layouts_match_single_solves() {
        batched_layouts_match::<f32>();
        batched_layouts_match::<f64>();
    }

    /// Bit for bit the single solves: lockstep groups of eight and a last group of one,
    /// three or nine, interleaved blocks, systems of 1 to 37 unknowns.
    fn batched_layouts_match<T: Real>() {
        for m in [1, 3, 8, 37] {
            let a = Tridiagonal::constant(m, T::of(-1.3), T::of(3.1), T::of(-1.1));
            let t = Thomas::new(&a).unwrap();
            for width in [17, 35, 41] {
                let (_, x) = random(m * width, 3.0, 11);
                let x: Vec<T> = x.iter().map(|&v| T::of(v)).collect();
                let mut inter = x.clone();
                t.solve_interleaved(&mut inter, width);
                let mut batch = x.clone();
                t.solve_batch(&mut batch);
                for s in 0..width {
                    let mut col: Vec<T> = (0..m).map(|i| x[i * width + s]).collect();
                    t.solve(&mut col);
                    assert!((0..m).all(|i| col[i] == inter[i * width + s]), "interleaved system {s}, m = {m}");
                    let mut row = x[s * m..(s + 1) * m].to_vec();
                    t.solve(&mut row);
                    assert!(row == batch[s * m..(s + 1) * m], "batched system {s}, m = {m}");
                }
            }
        }
    }

    #[test]
    fn streamed_interleaved_blocks_match_single_solves() {
        streamed_interleaved_match::<f32>();
        streamed_interleaved_match::<f64>();
    }

    fn streamed_interleaved_match<T: Real>() {
        // Rows of 320 values: a whole number of lines, several streamed blocks and the
        // columns before the first line and after the last whole block solved plainly.
        let (m, width) = (300, 320);
        let (_, x) = random(m * width, 3.0, 23);
        let x: Vec<T> = x.iter().map(|&v| T::of(v)).collect();
        // Offsets of one and two elements from the vector's start: other first lines.
        for skip in [0, 1, 2] {
            let t = Thomas::new(&Tridiagonal::constant(m, T::of(-1.2), T::of(3.3), T::of(-0.9))).unwrap();
            let mut buf = vec![T::zero(); skip];
            buf.extend_from_slice(&x);
            let d = &mut buf[skip..];
            if !streamable(d, width) {
                eprintln!("streamed_interleaved_blocks_match_single_solves: no AVX-512 on this CPU; not run");
                return;
            }
            let solved = |d: &[T], columns: std::ops::Range<usize>| {
                for s in columns {
                    let mut col: Vec<T> = (0..m).map(|i| x[i * width + s]).collect();
                    t.solve(&mut col);
                    assert!((0..m).all(|i| col[i].f64().to_bits() == d[i * width + s].f64().to_bits()), "system {s}, offset {skip}");
                }
            };
            t.interleaved(d, width, true);
            solved(d, 0..width);
            // All whole blocks in one run, whatever the thread count: each block's forward
            // sweep beside the previous one's backward sweep.
            d.copy_from_slice(&x);
            let (first, cols) = ((64 - d.as_ptr() as usize % 64) % 64 / std::mem::size_of::<T>(), STREAM_BYTES / std::mem::size_of::<T>());
            let starts: Vec<usize> = (first..width + 1 - cols).step_by(cols).collect();
            assert!(starts.len() >= 2);
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the CPU has AVX-512F and the rows are whole lines (streamable); the
            // blocks start on lines and lie in `d`.
            unsafe {
                t.columns_streamed(SendPtr(d.as_mut_ptr()), width, &starts)
            };
            solved(d, first..starts[starts.len() - 1] + cols);
        }
    }

    #[test]
    fn weak_dominance_falls_back_and_says_why() {
        let a = Tridiagonal::constant(1000, -1.0f64, 2.05, -1.0);
        let plan = SpikePlan::plan(&a, 10).unwrap();
        assert_eq!(plan.partitions(), 1);
        assert!(plan.fallback_reason().unwrap().contains("dominance 1.0250"));
        let strong = Tridiagonal::constant(1000, -1.0f64, 5.0, -1.0);
        assert!(SpikePlan::plan(&strong, 10).unwrap().fallback_reason().is_none());
        assert!(SpikePlan::plan(&strong, 1001).is_err() && SpikePlan::plan(&strong, 0).is_err());
    }

    #[test]
    fn singular_matrices_are_refused() {
        let a = Tridiagonal::general(vec![0.0, 1.0], vec![1.0, 1.0], vec![1.0, 0.0]);
        assert!(Thomas::new(&a).is_err());
    }
}
