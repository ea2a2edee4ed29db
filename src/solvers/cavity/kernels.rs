//! CPU kernels of the lid-driven cavity (artificial compressibility + MacCormack):
//! the predictor and the corrector as one fused row-parallel pass each, the side walls
//! written by the row that owns them, and a small pass for the bottom and top walls.
//!
//! Layout: `nx`-wide row-major arrays, x contiguous (`idx = j*nx + i`); rows `j` are the
//! parallel index, the inner loop over `i` is contiguous and branch-free.
//!
//! Each array starts at its own offset modulo 4 KiB ([`Padded`]) so that power-of-two row
//! lengths do not put all streams of a pass into the same cache sets, and the row loops are
//! also compiled for AVX2, chosen at run time (same results bit for bit).
//!
//! Evaluation order (a CUDA port must mirror it to stay close):
//! predictor `u* = ((((u - dtdx*(u*(ue-u) + (pe-p))) - dtdy*(v*(un-u))) + nudx2*((ue-2u)+uw)) + nudy2*((un-2u)+us))`,
//! corrector likewise with backward differences, then `u_new = half*(u + U)`.

use std::ops::Range;

use rayon::prelude::*;

use crate::error::Result;
use crate::numerics::temporal::{self, RowStencil, Tiling};
use crate::real::Real;

/// Scalars the kernels need, in the run's precision.
#[derive(Clone, Copy, Debug)]
pub struct Coeffs<T> {
    /// `dt/dx`, `dt/dy`
    pub dtdx: T,
    pub dtdy: T,
    /// `nu dt/dx^2`, `nu dt/dy^2`
    pub nudx2: T,
    pub nudy2: T,
    /// `c^2 dt/dx`, `c^2 dt/dy`
    pub c2dx: T,
    pub c2dy: T,
    /// Lid velocity.
    pub u0: T,
}

impl<T: Real> Coeffs<T> {
    /// Coefficients for a step `dt` on spacing `dx`, `dy`.
    pub fn new(dt: f64, dx: f64, dy: f64, nu: f64, c: f64, u0: f64) -> Self {
        Coeffs {
            dtdx: T::of(dt / dx),
            dtdy: T::of(dt / dy),
            nudx2: T::of(nu * dt / (dx * dx)),
            nudy2: T::of(nu * dt / (dy * dy)),
            c2dx: T::of(c * c * dt / dx),
            c2dy: T::of(c * c * dt / dy),
            u0: T::of(u0),
        }
    }
}

pub use crate::padded::Padded;

/// The six arrays of the scheme: level `n` (updated in place by the corrector) and the
/// predicted (starred) level.
#[derive(Clone, Debug)]
pub struct Fields<T: Real> {
    pub nx: usize,
    pub ny: usize,
    pub u: Padded<T>,
    pub v: Padded<T>,
    pub p: Padded<T>,
    pub us: Padded<T>,
    pub vs: Padded<T>,
    pub ps: Padded<T>,
    /// Per-row partial sums for deterministic reductions (no allocation in a step).
    pub partials: Vec<f64>,
}

impl<T: Real> Fields<T> {
    /// The initial condition: everything at rest, the lid moving (corners follow the side
    /// walls), i.e. zero fields with the boundary conditions applied.
    pub fn initial(nx: usize, ny: usize, u0: T) -> Self {
        Fields::initial_on(nx, ny, u0, [true; 4])
    }

    /// [`Fields::initial`] of an array whose edges are walls only where `edges` ([west, east,
    /// bottom, lid]) says: a block of a domain decomposition (its other edges are ghosts).
    pub fn initial_on(nx: usize, ny: usize, u0: T, edges: [bool; 4]) -> Self {
        assert!(nx >= 3 && ny >= 3);
        let z = |slot| Padded::zeros(nx * ny, slot);
        let mut f = Fields { nx, ny, u: z(0), v: z(1), p: z(2), us: z(3), vs: z(4), ps: z(5), partials: vec![0.0; ny] };
        walls_on(&mut f.u, &mut f.v, &mut f.p, nx, u0, edges);
        side_walls(&mut f.u, &mut f.v, &mut f.p, nx, 1..ny - 1, [edges[0], edges[1]]);
        f
    }

    /// One full step (see [`step`]).
    pub fn step(&mut self, c: &Coeffs<T>) {
        let ok = step(&mut CpuStages { f: self, change: None }, c);
        debug_assert!(ok.is_ok(), "CPU stages cannot fail");
    }

    /// `steps` full steps in one temporally blocked sweep (see [`temporal`]), bitwise equal to
    /// `steps` calls of [`Fields::step`]: the odd levels are the predicted fields, the even
    /// ones `u, v, p`, and each row's boundary values are written with it.
    pub fn steps_blocked(&mut self, c: &Coeffs<T>, tiling: &Tiling, steps: usize) {
        let Fields { nx, ny, .. } = *self;
        let levels = [[&mut self.u, &mut self.v, &mut self.p], [&mut self.us, &mut self.vs, &mut self.ps]];
        let stencil = Blocked { levels: levels.map(|l| l.map(|f| f.as_mut_ptr())), nx, ny, c: *c };
        temporal::sweep(&stencil, ny, tiling, 2 * steps);
    }

    /// As [`Fields::step`], also returning the sum over interior nodes of the squared one-step
    /// change of `u` (the reference code's convergence print), summed row by row in order.
    pub fn step_with_change(&mut self, c: &Coeffs<T>) -> f64 {
        let mut s = CpuStages { f: self, change: Some(0.0) };
        let ok = step(&mut s, c);
        debug_assert!(ok.is_ok(), "CPU stages cannot fail");
        s.change.unwrap_or(f64::NAN)
    }
}

/// The stages of a time step on one back end.
pub trait Stages<T: Real> {
    /// `u, v, p -> u*, v*, p*` on interior nodes.
    fn predictor(&mut self, c: &Coeffs<T>) -> Result<()>;
    /// `u, v, p <- (u + U(u*, v*, p*)) / 2` on interior nodes.
    fn corrector(&mut self, c: &Coeffs<T>) -> Result<()>;
    /// Boundary values of the predicted fields (`predicted`) or of `u, v, p`.
    fn walls(&mut self, predicted: bool, u0: T) -> Result<()>;
}

/// One time step, the one place that fixes the order of the stages for every back end:
/// predictor, boundary conditions, corrector, boundary conditions (the reference applies
/// them after both substeps).
pub fn step<T: Real>(s: &mut impl Stages<T>, c: &Coeffs<T>) -> Result<()> {
    s.predictor(c)?;
    s.walls(true, c.u0)?;
    s.corrector(c)?;
    s.walls(false, c.u0)
}

/// The CPU stages; with `change`, the corrector also sums the squared change of `u`.
struct CpuStages<'a, T: Real> {
    f: &'a mut Fields<T>,
    change: Option<f64>,
}

impl<T: Real> Stages<T> for CpuStages<'_, T> {
    fn predictor(&mut self, c: &Coeffs<T>) -> Result<()> {
        let f = &mut *self.f;
        predictor(&f.u, &f.v, &f.p, &mut f.us, &mut f.vs, &mut f.ps, f.nx, c);
        Ok(())
    }

    fn corrector(&mut self, c: &Coeffs<T>) -> Result<()> {
        let f = &mut *self.f;
        let (u, v, p, us, vs, ps, parts) = (&mut f.u, &mut f.v, &mut f.p, &f.us, &f.vs, &f.ps, &mut f.partials);
        match self.change {
            Some(_) => {
                corrector::<T, true>(u, v, p, us, vs, ps, f.nx, c, parts);
                self.change = Some(parts.iter().sum());
            }
            None => corrector::<T, false>(u, v, p, us, vs, ps, f.nx, c, parts),
        }
        Ok(())
    }

    fn walls(&mut self, predicted: bool, u0: T) -> Result<()> {
        let f = &mut *self.f;
        if predicted {
            walls(&mut f.us, &mut f.vs, &mut f.ps, f.nx, u0);
        } else {
            walls(&mut f.u, &mut f.v, &mut f.p, f.nx, u0);
        }
        Ok(())
    }
}

/// The substeps of [`step`] on raw views of the two levels' fields, for [`temporal::sweep`]:
/// level `2s - 1` is the predictor of step `s` (with its walls), level `2s` the corrector.
struct Blocked<T> {
    /// `u, v, p` and `us, vs, ps`.
    levels: [[*mut T; 3]; 2],
    nx: usize,
    ny: usize,
    c: Coeffs<T>,
}

// SAFETY: the sweep hands each thread disjoint points to write and points no one writes to read.
unsafe impl<T: Send> Sync for Blocked<T> {}

impl<T: Real> RowStencil for Blocked<T> {
    type Scratch = ();
    fn scratch(&self) {}
    unsafe fn update(&self, _: &mut (), t: usize, j: usize, cols: Range<usize>) {
        let (nx, ny) = (self.nx, self.ny);
        // The bottom and top walls copy rows 1 and ny - 2 of the same level: written with them.
        if j == 0 || j == ny - 1 {
            return;
        }
        let (src, dst) = (self.levels[(t - 1) % 2], self.levels[t % 2]);
        // The tiling gives a run at an edge of the grid its two outer columns.
        let (lo, hi) = (cols.start.max(1), cols.end.min(nx - 1));
        // SAFETY (all raw accesses below): the points written are row j over `cols` (and rows
        // 0 / ny - 1 over `cols` with rows 1 / ny - 2) of this level, ours alone during the
        // call; the points read are level t - 1 next to them, which no one writes now, or
        // points of this level written above in this call.
        unsafe {
            let input = src.map(|f| [j - 1, j, j + 1].map(|jj| std::slice::from_raw_parts(f.add(jj * nx + lo - 1), hi - lo + 2)));
            let out = dst.map(|f| std::slice::from_raw_parts_mut(f.add(j * nx + lo), hi - lo));
            let row = rows::Row { input, out, c: &self.c };
            if t % 2 == 1 {
                rows::predictor(row);
            } else {
                rows::corrector::<T, false>(row);
            }
            let at = |f: usize, jj: usize, i: usize| dst[f].add(jj * nx + i);
            // Side walls: u = v = 0, pressure from the inward node.
            for (edge, inward) in [(0, 1), (nx - 1, nx - 2)] {
                if cols.contains(&edge) {
                    *at(0, j, edge) = T::zero();
                    *at(1, j, edge) = T::zero();
                    *at(2, j, edge) = *at(2, j, inward);
                }
            }
            // Bottom wall and lid, as `walls`: the row inside first, then the corners.
            for (wall, inside, u_wall) in [(0, 1, T::zero()), (ny - 1, ny - 2, self.c.u0)] {
                if j != inside {
                    continue;
                }
                for i in lo..hi {
                    *at(0, wall, i) = u_wall;
                    *at(1, wall, i) = T::zero();
                    *at(2, wall, i) = *at(2, inside, i);
                }
                for (edge, inward) in [(0, 1), (nx - 1, nx - 2)] {
                    if cols.contains(&edge) {
                        *at(0, wall, edge) = T::zero();
                        *at(1, wall, edge) = T::zero();
                        *at(2, wall, edge) = T::of(0.5) * (*at(2, wall, inward) + *at(2, inside, edge));
                    }
                }
            }
        }
    }
}

/// Rows per parallel task: at least ~4k nodes per task so small grids are not dominated
/// by task overhead.
pub fn rows_per_task(nx: usize) -> usize {
    (4096 / nx).max(1)
}

/// Predictor (forward differences): `u, v, p -> us, vs, ps` on interior rows, with the side
/// walls of each interior row set (`u = v = 0`, pressure copied from the inward neighbour).
/// Rows 0 and ny-1 are left to [`walls`].
#[allow(clippy::too_many_arguments)]
pub fn predictor<T: Real>(
    u: &[T],
    v: &[T],
    p: &[T],
    us: &mut [T],
    vs: &mut [T],
    ps: &mut [T],
    nx: usize,
    c: &Coeffs<T>,
) {
    let ny = u.len() / nx;
    assert!(nx >= 3 && ny >= 3 && u.len() == nx * ny);
    assert!(v.len() == u.len() && p.len() == u.len() && us.len() == u.len());
    assert!(vs.len() == u.len() && ps.len() == u.len());
    us.par_chunks_mut(nx)
        .zip(vs.par_chunks_mut(nx))
        .zip(ps.par_chunks_mut(nx))
        .enumerate()
        .with_min_len(rows_per_task(nx))
        .for_each(|(j, ((uo, vo), po))| {
            if j == 0 || j == ny - 1 {
                return;
            }
            let input = [u, v, p].map(|f| rows::window(f, nx, j, 0..nx));
            let [uo_, vo_, po_] = [&mut *uo, &mut *vo, &mut *po].map(|o| &mut o[1..nx - 1]);
            rows::predictor(rows::Row { input, out: [uo_, vo_, po_], c });
            side_walls_row(uo, vo, po);
        });
}

/// Corrector (backward differences of the starred fields), in place on `u, v, p`:
/// `u <- (u + U(us, vs, ps)) / 2` on interior rows, side walls of each interior row set as in
/// the predictor. Each node reads level-n values only at its own index, so in place is safe.
/// With `CHANGE`, `partials[j]` receives the sum over row j of the squared change of `u`.
#[allow(clippy::too_many_arguments)]
pub fn corrector<T: Real, const CHANGE: bool>(
    u: &mut [T],
    v: &mut [T],
    p: &mut [T],
    us: &[T],
    vs: &[T],
    ps: &[T],
    nx: usize,
    c: &Coeffs<T>,
    partials: &mut [f64],
) {
    let ny = u.len() / nx;
    assert!(nx >= 3 && ny >= 3 && u.len() == nx * ny);
    assert!(v.len() == u.len() && p.len() == u.len() && us.len() == u.len());
    assert!(vs.len() == u.len() && ps.len() == u.len() && partials.len() == ny);
    u.par_chunks_mut(nx)
        .zip(v.par_chunks_mut(nx))
        .zip(p.par_chunks_mut(nx))
        .zip(partials.par_iter_mut())
        .enumerate()
        .with_min_len(rows_per_task(nx))
        .for_each(|(j, (((uo, vo), po), part))| {
            if j == 0 || j == ny - 1 {
                *part = 0.0;
                return;
            }
            let input = [us, vs, ps].map(|f| rows::window(f, nx, j, 0..nx));
            let [uo_, vo_, po_] = [&mut *uo, &mut *vo, &mut *po].map(|o| &mut o[1..nx - 1]);
            let change = rows::corrector::<T, CHANGE>(rows::Row { input, out: [uo_, vo_, po_], c });
            side_walls_row(uo, vo, po);
            *part = change;
        });
}

/// [`predictor`] at the interior nodes `xs` x `ys` alone, without the side walls: a block of
/// a domain decomposition computes its nodes in runs (those next to its ghosts once they have
/// arrived), each node with the serial arithmetic.
#[allow(clippy::too_many_arguments)]
pub fn predictor_at<T: Real>(
    u: &[T],
    v: &[T],
    p: &[T],
    us: &mut [T],
    vs: &mut [T],
    ps: &mut [T],
    nx: usize,
    c: &Coeffs<T>,
    [xs, ys]: [Range<usize>; 2],
) {
    let input = [u, v, p];
    runs_at(input, [us, vs, ps], nx, [xs, ys], |input, out| rows::predictor(rows::Row { input, out, c }));
}

/// [`corrector`] at the interior nodes `xs` x `ys` alone, without the side walls and the sum
/// of the change (see [`predictor_at`]).
#[allow(clippy::too_many_arguments)]
pub fn corrector_at<T: Real>(
    u: &mut [T],
    v: &mut [T],
    p: &mut [T],
    us: &[T],
    vs: &[T],
    ps: &[T],
    nx: usize,
    c: &Coeffs<T>,
    [xs, ys]: [Range<usize>; 2],
) {
    let input = [us, vs, ps];
    runs_at(input, [u, v, p], nx, [xs, ys], |input, out| {
        rows::corrector::<T, false>(rows::Row { input, out, c });
    });
}

/// `row` on the run `xs` of each row of `ys` (interior nodes of `nx`-wide arrays), rows in
/// parallel: the input rows around the run and the output slices over it.
fn runs_at<T: Real>(
    input: [&[T]; 3],
    out: [&mut [T]; 3],
    nx: usize,
    [xs, ys]: [Range<usize>; 2],
    row: impl Fn([[&[T]; 3]; 3], [&mut [T]; 3]) + Sync,
) {
    let ny = input[0].len() / nx;
    if xs.is_empty() || ys.is_empty() {
        return;
    }
    assert!(xs.start >= 1 && xs.end < nx && ys.start >= 1 && ys.end < ny);
    let [uo, vo, po] = out.map(|o| &mut o[ys.start * nx..ys.end * nx]);
    uo.par_chunks_mut(nx)
        .zip(vo.par_chunks_mut(nx))
        .zip(po.par_chunks_mut(nx))
        .enumerate()
        .with_min_len(rows_per_task(xs.len()))
        .for_each(|(k, ((uo, vo), po))| {
            let window = input.map(|f| rows::window(f, nx, ys.start + k, xs.start - 1..xs.end + 1));
            row(window, [uo, vo, po].map(|o| &mut o[xs.clone()]));
        });
}

/// The inner loops of one interior row, compiled three times on x86-64: for the baseline
/// target and with AVX2 or AVX-512F enabled (chosen at run time). Only the vector width differs; there is no FMA
/// contraction, so both give bit-identical results.
mod rows {
    use super::Coeffs;
    use crate::real::Real;

    /// A run of interior nodes of one row in one substep: for each input field (in the order
    /// u, v, p) its rows south, middle and north over the nodes and one more on each side, and
    /// the three output slices over the nodes.
    pub struct Row<'a, T> {
        pub input: [[&'a [T]; 3]; 3],
        pub out: [&'a mut [T]; 3],
        pub c: &'a Coeffs<T>,
    }

    /// Rows `j - 1`, `j`, `j + 1` of an `nx`-wide field over `cols`.
    pub fn window<T>(f: &[T], nx: usize, j: usize, cols: std::ops::Range<usize>) -> [&[T]; 3] {
        [j - 1, j, j + 1].map(|jj| &f[jj * nx + cols.start..jj * nx + cols.end])
    }

    #[inline]
    pub fn predictor<T: Real>(r: Row<T>) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked just above).
            return unsafe { avx512::predictor::<T>(r) };
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { avx2::predictor::<T>(r) };
        }
        body::predictor::<T>(r)
    }

    #[inline]
    pub fn corrector<T: Real, const CHANGE: bool>(r: Row<T>) -> f64 {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked just above).
            return unsafe { avx512::corrector::<T, CHANGE>(r) };
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { avx2::corrector::<T, CHANGE>(r) };
        }
        body::corrector::<T, CHANGE>(r)
    }

    #[cfg(target_arch = "x86_64")]
    mod avx2 {
        use super::Row;
        use crate::real::Real;

        #[target_feature(enable = "avx2")]
        pub unsafe fn predictor<T: Real>(r: Row<T>) {
            super::body::predictor::<T>(r)
        }

        #[target_feature(enable = "avx2")]
        pub unsafe fn corrector<T: Real, const CHANGE: bool>(r: Row<T>) -> f64 {
            super::body::corrector::<T, CHANGE>(r)
        }
    }

    #[cfg(target_arch = "x86_64")]
    mod avx512 {
        use super::Row;
        use crate::real::Real;

        #[target_feature(enable = "avx512f")]
        pub unsafe fn predictor<T: Real>(r: Row<T>) {
            super::body::predictor::<T>(r)
        }

        #[target_feature(enable = "avx512f")]
        pub unsafe fn corrector<T: Real, const CHANGE: bool>(r: Row<T>) -> f64 {
            super::body::corrector::<T, CHANGE>(r)
        }
    }

    mod body {
        use super::super::Coeffs;
        use super::Row;
        use crate::real::Real;

        /// Predictor on an interior row, interior nodes only.
        #[inline(always)]
        pub fn predictor<T: Real>(r: Row<T>) {
            let Row { input: [[us_, ur, un_], [vs_, vr, vn_], [_, pr, pn_]], out: [uo, vo, po], c } = r;
            let Coeffs { dtdx, dtdy, nudx2, nudy2, c2dx, c2dy, .. } = *c;
            let two = T::of(2.0);
            let m = uo.len();
            // u: centre, west, east, south, north
            let (uc, uw, ue, uss, unn) = (&ur[1..m + 1], &ur[0..m], &ur[2..m + 2], &us_[1..m + 1], &un_[1..m + 1]);
            let (vc, vw, ve, vss, vnn) = (&vr[1..m + 1], &vr[0..m], &vr[2..m + 2], &vs_[1..m + 1], &vn_[1..m + 1]);
            let (pc, pe, pnn) = (&pr[1..m + 1], &pr[2..m + 2], &pn_[1..m + 1]);
            {
                let (ou, ov, op) = (&mut uo[..m], &mut vo[..m], &mut po[..m]);
                for k in 0..m {
                    let (u_, v_, p_) = (uc[k], vc[k], pc[k]);
                    let (ue_, un) = (ue[k], unn[k]);
                    let (ve_, vn) = (ve[k], vnn[k]);
                    ou[k] = u_ - dtdx * (u_ * (ue_ - u_) + (pe[k] - p_)) - dtdy * (v_ * (un - u_))
                        + nudx2 * ((ue_ - two * u_) + uw[k])
                        + nudy2 * ((un - two * u_) + uss[k]);
                    ov[k] = v_ - dtdx * (u_ * (ve_ - v_)) - dtdy * (v_ * (vn - v_) + (pnn[k] - p_))
                        + nudx2 * ((ve_ - two * v_) + vw[k])
                        + nudy2 * ((vn - two * v_) + vss[k]);
                    op[k] = p_ - c2dx * (ue_ - u_) - c2dy * (vn - v_);
                }
            }
        }

        /// Corrector on an interior row, in place on the row's `u, v, p` (the outputs); returns
        /// the sum of the squared change of `u` over the row when `CHANGE`.
        #[inline(always)]
        pub fn corrector<T: Real, const CHANGE: bool>(r: Row<T>) -> f64 {
            let Row { input: [[us_, ur, un_], [vs_, vr, vn_], [ps_, pr, _]], out: [uo, vo, po], c } = r;
            let Coeffs { dtdx, dtdy, nudx2, nudy2, c2dx, c2dy, .. } = *c;
            let two = T::of(2.0);
            let half = T::of(0.5);
            let m = uo.len();
            let (uc, uw, ue, uss, unn) = (&ur[1..m + 1], &ur[0..m], &ur[2..m + 2], &us_[1..m + 1], &un_[1..m + 1]);
            let (vc, vw, ve, vss, vnn) = (&vr[1..m + 1], &vr[0..m], &vr[2..m + 2], &vs_[1..m + 1], &vn_[1..m + 1]);
            let (pc, pw, pss) = (&pr[1..m + 1], &pr[0..m], &ps_[1..m + 1]);
            let mut change = 0.0f64;
            {
                let (ou, ov, op) = (&mut uo[..m], &mut vo[..m], &mut po[..m]);
                for k in 0..m {
                    let (u_, v_, p_) = (uc[k], vc[k], pc[k]);
                    let (uw_, us2) = (uw[k], uss[k]);
                    let (vw_, vs2) = (vw[k], vss[k]);
                    let uu = u_ - dtdx * (u_ * (u_ - uw_) + (p_ - pw[k])) - dtdy * (v_ * (u_ - us2))
                        + nudx2 * ((ue[k] - two * u_) + uw_)
                        + nudy2 * ((unn[k] - two * u_) + us2);
                    let vv = v_ - dtdx * (u_ * (v_ - vw_)) - dtdy * (v_ * (v_ - vs2) + (p_ - pss[k]))
                        + nudx2 * ((ve[k] - two * v_) + vw_)
                        + nudy2 * ((vnn[k] - two * v_) + vs2);
                    let pp = p_ - c2dx * (u_ - uw_) - c2dy * (v_ - vs2);
                    let un = half * (ou[k] + uu);
                    if CHANGE {
                        let d = (un - ou[k]).f64();
                        change += d * d;
                    }
                    ou[k] = un;
                    ov[k] = half * (ov[k] + vv);
                    op[k] = half * (op[k] + pp);
                }
            }
            change
        }
    }
}

/// Side walls of one row: `u = v = 0` at both ends, pressure copied from the inward node.
#[inline]
fn side_walls_row<T: Real>(u: &mut [T], v: &mut [T], p: &mut [T]) {
    let nx = u.len();
    side_wall(u, v, p, 0, 1);
    side_wall(u, v, p, nx - 1, nx - 2);
}

/// The side wall node `edge` of one row: `u = v = 0`, pressure copied from the node `inward`.
#[inline]
fn side_wall<T: Real>(u: &mut [T], v: &mut [T], p: &mut [T], edge: usize, inward: usize) {
    u[edge] = T::zero();
    v[edge] = T::zero();
    p[edge] = p[inward];
}

/// The side walls of the rows `ys` of `nx`-wide arrays, at the ends `sides` ([west, east])
/// names, as the substeps write them (the initial condition; a block of a domain
/// decomposition, whose ends are walls only at the global edges).
pub fn side_walls<T: Real>(u: &mut [T], v: &mut [T], p: &mut [T], nx: usize, ys: Range<usize>, sides: [bool; 2]) {
    for j in ys {
        let r = j * nx..(j + 1) * nx;
        let (u, v, p) = (&mut u[r.clone()], &mut v[r.clone()], &mut p[r]);
        for (_, edge, inward) in [(sides[0], 0, 1), (sides[1], nx - 1, nx - 2)].into_iter().filter(|s| s.0) {
            side_wall(u, v, p, edge, inward);
        }
    }
}

/// Bottom and top walls after a substep (the side walls of interior rows are written by the
/// substep itself): bottom `u = v = 0`, lid `u = u0`, `v = 0`, pressure copied from the row
/// inside. Corners are side-wall nodes (`u = v = 0`) with the mean pressure of their two
/// edge neighbours; no stencil reads a corner.
pub fn walls<T: Real>(u: &mut [T], v: &mut [T], p: &mut [T], nx: usize, u0: T) {
    walls_on(u, v, p, nx, u0, [true; 4]);
}

/// [`walls`] on the edges of the array that `edges` ([west, east, bottom, lid]) names: a
/// block of a domain decomposition holds the global walls on some sides only, and leaves its
/// ghosts to the exchange. Each node is written as in [`walls`].
pub fn walls_on<T: Real>(u: &mut [T], v: &mut [T], p: &mut [T], nx: usize, u0: T, edges: [bool; 4]) {
    let ny = u.len() / nx;
    let top = (ny - 1) * nx;
    let half = T::of(0.5);
    let [west, east, bottom, lid] = edges;
    for (_, row, inside, u_wall) in [(bottom, 0, nx, T::zero()), (lid, top, top - nx, u0)].into_iter().filter(|w| w.0) {
        for i in 1..nx - 1 {
            u[row + i] = u_wall;
            v[row + i] = T::zero();
            p[row + i] = p[inside + i];
        }
    }
    // Corners: (node, its neighbour along the wall, its neighbour along the side wall).
    let corners = [
        (west && bottom, 0, 1, nx),
        (east && bottom, nx - 1, nx - 2, 2 * nx - 1),
        (west && lid, top, top + 1, top - nx),
        (east && lid, top + nx - 1, top + nx - 2, top - 1),
    ];
    for (_, k, along, side) in corners.into_iter().filter(|c| c.0) {
        u[k] = T::zero();
        v[k] = T::zero();
        p[k] = half * (p[along] + p[side]);
    }
}

/// The sum [`Fields::step_with_change`] returns, from `u` before and after a step computed
/// elsewhere (the GPU): per interior row the squared changes of interior nodes in order, then
/// the row sums in order, so both give the same bits.
pub fn squared_change<T: Real>(before: &[T], after: &[T], nx: usize, partials: &mut [f64]) -> f64 {
    let ny = after.len() / nx;
    assert!(before.len() == after.len() && partials.len() == ny);
    partials.par_iter_mut().enumerate().for_each(|(j, part)| {
        *part = 0.0;
        if j == 0 || j == ny - 1 {
            return;
        }
        let (b, a) = (&before[j * nx + 1..(j + 1) * nx - 1], &after[j * nx + 1..(j + 1) * nx - 1]);
        *part = add_squared_change(0.0, b, a);
    });
    partials.iter().sum()
}

/// `sum` plus the squared changes from `before` to `after`, node after node: the order in
/// which the corrector sums a row (so a row summed in runs, one after the other, gives the
/// same bits).
pub fn add_squared_change<T: Real>(sum: f64, before: &[T], after: &[T]) -> f64 {
    before.iter().zip(after).fold(sum, |s, (&b, &a)| {
        let d = (a - b).f64();
        s + d * d
    })
}

/// Largest `|a - a_snap|` and `|b - b_snap|` over all nodes, then `*_snap <- *`; row-parallel,
/// the result does not depend on the thread count (max is exact).
pub fn change_and_snapshot<T: Real>(a: &[T], b: &[T], a_snap: &mut [T], b_snap: &mut [T], nx: usize) -> f64 {
    a_snap
        .par_chunks_mut(nx)
        .zip(b_snap.par_chunks_mut(nx))
        .zip(a.par_chunks(nx).zip(b.par_chunks(nx)))
        .with_min_len(rows_per_task(nx))
        .map(|((sa, sb), (ra, rb))| {
            let mut m = T::zero();
            for k in 0..ra.len() {
                m = m.max((ra[k] - sa[k]).abs()).max((rb[k] - sb[k]).abs());
            }
            sa.copy_from_slice(ra);
            sb.copy_from_slice(rb);
            // A NaN anywhere makes the change NaN (caught by the guard).
            if ra.iter().chain(rb).any(|x| x.is_nan()) { f64::NAN } else { m.f64() }
        })
        .reduce(|| 0.0, |x, y| if x.is_nan() || y.is_nan() { f64::NAN } else { x.max(y) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random values in [-0.5, 0.5).
    fn noise(n: usize, seed: u64) -> Vec<f64> {
        crate::testing::noise(n, seed).into_iter().map(|x| x - 0.5).collect()
    }

    fn coeffs<T: Real>() -> Coeffs<T> {
        Coeffs::new(1.3e-3, 0.031, 0.029, 0.01, 10.0, 1.0)
    }

    /// Reference boundary conditions written node by node.
    fn ref_walls<T: Real>(u: &mut [T], v: &mut [T], p: &mut [T], nx: usize, ny: usize, u0: T) {
        let at = |i: usize, j: usize| j * nx + i;
        for j in 1..ny - 1 {
            u[at(0, j)] = T::zero();
            v[at(0, j)] = T::zero();
            u[at(nx - 1, j)] = T::zero();
            v[at(nx - 1, j)] = T::zero();
            p[at(0, j)] = p[at(1, j)];
            p[at(nx - 1, j)] = p[at(nx - 2, j)];
        }
        for i in 1..nx - 1 {
            u[at(i, 0)] = T::zero();
            v[at(i, 0)] = T::zero();
            p[at(i, 0)] = p[at(i, 1)];
            u[at(i, ny - 1)] = u0;
            v[at(i, ny - 1)] = T::zero();
            p[at(i, ny - 1)] = p[at(i, ny - 2)];
        }
        let h = T::of(0.5);
        for (i, j, i1, j1) in
            [(0, 0, 1, 0), (nx - 1, 0, nx - 2, 0), (0, ny - 1, 1, ny - 1), (nx - 1, ny - 1, nx - 2, ny - 1)]
        {
            let jin = if j == 0 { 1 } else { ny - 2 };
            u[at(i, j)] = T::zero();
            v[at(i, j)] = T::zero();
            p[at(i, j)] = h * (p[at(i1, j1)] + p[at(i, jin)]);
        }
    }

    /// One step written as a plain double loop per substep, straight from the equations.
    fn ref_step<T: Real>(u: &mut [T], v: &mut [T], p: &mut [T], nx: usize, ny: usize, c: &Coeffs<T>) {
        let at = |i: usize, j: usize| j * nx + i;
        let two = T::of(2.0);
        let half = T::of(0.5);
        let (mut us, mut vs, mut ps) = (vec![T::nan(); nx * ny], vec![T::nan(); nx * ny], vec![T::nan(); nx * ny]);
        for j in 1..ny - 1 {
            for i in 1..nx - 1 {
                let k = at(i, j);
                let (e, w, n, s) = (at(i + 1, j), at(i - 1, j), at(i, j + 1), at(i, j - 1));
                us[k] = u[k] - c.dtdx * (u[k] * (u[e] - u[k]) + (p[e] - p[k])) - c.dtdy * (v[k] * (u[n] - u[k]))
                    + c.nudx2 * ((u[e] - two * u[k]) + u[w])
                    + c.nudy2 * ((u[n] - two * u[k]) + u[s]);
                vs[k] = v[k] - c.dtdx * (u[k] * (v[e] - v[k])) - c.dtdy * (v[k] * (v[n] - v[k]) + (p[n] - p[k]))
                    + c.nudx2 * ((v[e] - two * v[k]) + v[w])
                    + c.nudy2 * ((v[n] - two * v[k]) + v[s]);
                ps[k] = p[k] - c.c2dx * (u[e] - u[k]) - c.c2dy * (v[n] - v[k]);
            }
        }
        ref_walls(&mut us, &mut vs, &mut ps, nx, ny, c.u0);
        let (u_old, v_old, p_old) = (u.to_vec(), v.to_vec(), p.to_vec());
        for j in 1..ny - 1 {
            for i in 1..nx - 1 {
                let k = at(i, j);
                let (e, w, n, s) = (at(i + 1, j), at(i - 1, j), at(i, j + 1), at(i, j - 1));
                let uu =
                    us[k] - c.dtdx * (us[k] * (us[k] - us[w]) + (ps[k] - ps[w])) - c.dtdy * (vs[k] * (us[k] - us[s]))
                        + c.nudx2 * ((us[e] - two * us[k]) + us[w])
                        + c.nudy2 * ((us[n] - two * us[k]) + us[s]);
                let vv =
                    vs[k] - c.dtdx * (us[k] * (vs[k] - vs[w])) - c.dtdy * (vs[k] * (vs[k] - vs[s]) + (ps[k] - ps[s]))
                        + c.nudx2 * ((vs[e] - two * vs[k]) + vs[w])
                        + c.nudy2 * ((vs[n] - two * vs[k]) + vs[s]);
                let pp = ps[k] - c.c2dx * (us[k] - us[w]) - c.c2dy * (vs[k] - vs[s]);
                u[k] = half * (u_old[k] + uu);
                v[k] = half * (v_old[k] + vv);
                p[k] = half * (p_old[k] + pp);
            }
        }
        ref_walls(u, v, p, nx, ny, c.u0);
    }

    fn random_fields<T: Real>(nx: usize, ny: usize) -> Fields<T> {
        let mut f = Fields::<T>::initial(nx, ny, T::one());
        let conv = |s| noise(nx * ny, s).into_iter().map(T::of).collect::<Vec<T>>();
        f.u.copy_from_slice(&conv(11));
        f.v.copy_from_slice(&conv(12));
        f.p.copy_from_slice(&conv(13));
        // Garbage in the starred arrays: every node a later read uses must be rewritten.
        f.us.fill(T::nan());
        f.vs.fill(T::nan());
        f.ps.fill(T::nan());
        f
    }

    /// `steps` blocked steps against as many plain ones, bitwise, on `threads` threads.
    fn blocked_matches_plain<T: Real>(nx: usize, ny: usize, tiling: &Tiling, steps: usize, threads: usize) {
        let c = coeffs::<T>();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let (mut plain, mut blocked) = (random_fields::<T>(nx, ny), random_fields::<T>(nx, ny));
        pool.install(|| {
            (0..steps).for_each(|_| plain.step(&c));
            let mut left = steps;
            while left > 0 {
                let k = left.min(tiling.steps());
                blocked.steps_blocked(&c, tiling, k);
                left -= k;
            }
        });
        for (name, a, b) in [("u", &plain.u, &blocked.u), ("v", &plain.v, &blocked.v), ("p", &plain.p, &blocked.p)] {
            let same = a.iter().zip(b.iter()).all(|(x, y)| x.f64().to_bits() == y.f64().to_bits());
            assert!(same, "{name}: {nx}x{ny}, {tiling}, {steps} steps, {threads} threads");
        }
    }

    #[test]
    fn blocked_steps_equal_plain_steps_bitwise() {
        for (nx, ny) in [(3, 3), (5, 4), (37, 23), (64, 9), (101, 40)] {
            for depth in [1, 2, 3, 7] {
                for bands in [1, 2, 3, 4] {
                    let tiling = Tiling::for_steps(nx, depth, 2, bands);
                    for (steps, threads) in [(1, 1), (depth + 2, 2), (2 * depth + 1, 1), (3 * depth, 2)] {
                        blocked_matches_plain::<f64>(nx, ny, &tiling, steps, threads);
                        blocked_matches_plain::<f32>(nx, ny, &tiling, steps, threads);
                    }
                }
            }
        }
    }

    fn check_step<T: Real>(nx: usize, ny: usize) {
        let c = coeffs::<T>();
        let mut f = random_fields::<T>(nx, ny);
        let (mut u, mut v, mut p) = (f.u.to_vec(), f.v.to_vec(), f.p.to_vec());
        for step in 0..3 {
            f.step(&c);
            ref_step(&mut u, &mut v, &mut p, nx, ny, &c);
            for (name, a, b) in [("u", &f.u[..], &u), ("v", &f.v[..], &v), ("p", &f.p[..], &p)] {
                for k in 0..a.len() {
                    assert!(
                        a[k] == b[k],
                        "step {step}, {name} at ({}, {}): kernel {:?} vs reference {:?}",
                        k % nx,
                        k / nx,
                        a[k],
                        b[k]
                    );
                }
            }
        }
    }

    #[test]
    fn predictor_and_corrector_match_plain_loop_f64() {
        // Wide enough for several parallel tasks and not a multiple of the vector width.
        check_step::<f64>(37, 23);
        check_step::<f64>(5000, 5);
    }

    #[test]
    fn predictor_and_corrector_match_plain_loop_f32() {
        check_step::<f32>(41, 19);
    }

    #[test]
    fn predictor_alone_matches_plain_loop() {
        let (nx, ny) = (29, 17);
        let c = coeffs::<f64>();
        let f = random_fields::<f64>(nx, ny);
        let (mut us, mut vs, mut ps) = (vec![f64::NAN; nx * ny], vec![f64::NAN; nx * ny], vec![f64::NAN; nx * ny]);
        predictor(&f.u, &f.v, &f.p, &mut us, &mut vs, &mut ps, nx, &c);
        walls(&mut us, &mut vs, &mut ps, nx, c.u0);
        // Interior values of p* and u* straight from the predictor formulas (spec 3.3).
        for j in 1..ny - 1 {
            for i in 1..nx - 1 {
                let k = j * nx + i;
                let (u, v, p) = (&f.u, &f.v, &f.p);
                let want = p[k] - c.c2dx * (u[k + 1] - u[k]) - c.c2dy * (v[k + nx] - v[k]);
                assert_eq!(ps[k], want, "p* at ({i}, {j})");
                let want = u[k]
                    - c.dtdx * (u[k] * (u[k + 1] - u[k]) + (p[k + 1] - p[k]))
                    - c.dtdy * (v[k] * (u[k + nx] - u[k]))
                    + c.nudx2 * ((u[k + 1] - 2.0 * u[k]) + u[k - 1])
                    + c.nudy2 * ((u[k + nx] - 2.0 * u[k]) + u[k - nx]);
                assert_eq!(us[k], want, "u* at ({i}, {j})");
            }
        }
        assert!(us.iter().chain(&vs).chain(&ps).all(|x| x.is_finite()), "every node written");
    }

    #[test]
    fn change_reduction_matches_plain_sum() {
        let (nx, ny) = (33, 21);
        let c = coeffs::<f64>();
        let mut f = random_fields::<f64>(nx, ny);
        let mut g = f.clone();
        let before = f.u.to_vec();
        let s = f.step_with_change(&c);
        g.step(&c);
        assert_eq!(f.u[..], g.u[..], "the reducing corrector computes the same step");
        assert_eq!(s.to_bits(), squared_change(&before, &f.u, nx, &mut vec![0.0; ny]).to_bits(), "the GPU path's sum");
        let mut want = 0.0;
        for j in 1..ny - 1 {
            let mut row = 0.0;
            for i in 1..nx - 1 {
                let d = f.u[j * nx + i] - before[j * nx + i];
                row += d * d;
            }
            want += row;
        }
        assert_eq!(s, want);
    }

    #[test]
    fn snapshot_change_is_max_abs() {
        let nx = 17;
        let a: Vec<f64> = noise(17 * 9, 1);
        let b: Vec<f64> = noise(17 * 9, 2);
        let mut sa = noise(17 * 9, 3);
        let mut sb = noise(17 * 9, 4);
        let want = a.iter().zip(&sa).chain(b.iter().zip(&sb)).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
        let got = change_and_snapshot(&a, &b, &mut sa, &mut sb, nx);
        assert_eq!(got, want);
        assert_eq!(sa, a);
        assert_eq!(sb, b);
    }

    #[test]
    fn initial_condition_satisfies_boundaries() {
        let f = Fields::<f64>::initial(9, 7, 1.0);
        for i in 0..9 {
            let lid = if i == 0 || i == 8 { 0.0 } else { 1.0 };
            assert_eq!(f.u[6 * 9 + i], lid);
        }
        assert_eq!(f.u.iter().filter(|&&x| x != 0.0).count(), 7);
        assert!(f.v.iter().chain(f.p.iter()).all(|&x| x == 0.0));
    }
}
