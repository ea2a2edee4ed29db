//! CTCS: GPU Ocean's nonlinear leapfrog (centred in time and space) scheme on the Arakawa C
//! grid (spec §4), on the CPU, generic over f32/f64.
//!
//! Two time levels are stored, `n` (the newest, "the state") and `n − 1`. A step computes U,
//! V, η at level `n + 1` from level `n`, with level `n − 1` supplying the centre values
//! `U⁰, V⁰, η⁰`:
//! - `U = (U⁰ + 2Δt (fV̄ + (±N + P)/Δx + X + A E)) / C`, `C = 1 + 2rΔt/H_x + 2AΔt (Δx² + Δy²)/(Δx²Δy²)`,
//!   with the pressure `P = −g H_x Δη − ½ g Δ(η²)`, the advection `N` of momentum
//!   (¼ of the flux differences with corner depths `H̄ + η̄`), and DuFort–Frankel eddy
//!   viscosity `E`; V the mirror image; walls zero the boundary faces;
//! - `η = η⁰ − 2Δt/Δx ΔU − 2Δt/Δy ΔV` (U, V at level `n`).
//!
//! No Robert–Asselin filter (GPU Ocean has none); damping comes only from A and r.
//!
//! `gpu_ocean_compat` (spec §4, §13):
//! - `true` reproduces GPU Ocean: advection added as `+N/Δx` (the physics needs `−N/Δx`);
//!   the f of the V faces in the U update taken one Δy south of each face
//!   (`f_N = f((l − 1)Δy)`, `f_S = f((l − 2)Δy)` for U row `l`); the first step
//!   `Q¹ = Q⁰ + 2Δt·RHS(Q⁰)` from two equal levels.
//! - `false` is physically clean: `−N/Δx`, f at the V faces' own positions (`lΔy`,
//!   `(l − 1)Δy`), and the first step a forward step of Δt (`Δt` in place of every `2Δt`),
//!   after which level `n − 1` holds the old state.
//!
//! In both, the V update takes f at the U rows' cell-centre positions (`(l − ½)Δy`).
//!
//! Evaluation: the terms follow GPU Ocean's kernel one by one, except that the divisions
//! are shared (GPU Ocean itself runs with fast, approximate division): each cell's
//! `1/h` (`h = H + η`) and each corner's `1/D`, `D = ¼((h_SW + h_SE) + (h_NW + h_NE))`
//! (= `H̄ + η̄`), are computed once per step and used by the U and V updates that need
//! them (each corner's advection term `(U_S + U_N)(V_W + V_E)/D` too, which the U and V
//! updates of its rows share), and divisions by constants are multiplications by their
//! reciprocals. This changes results only at round-off level (the f32 regression errors
//! stay ≈ 3e-6). Constant factors are merged where that keeps the bits: `−g H_x Δη` is
//! formed as `−½g (H_W + H_E) Δη` (halving a sum of depths is exact unless it is
//! subnormal), and `s N` as `(s/4) X` with `N = X/4`. A Coriolis or viscosity term that is
//! zero everywhere is left out, without changing a bit (see `Consts::coriolis`).
//!
//! CPU structure (spec §8): one fused pass, parallel over blocks of output rows, reads
//! H, η, U, V of level `n` and the centre values of level `n − 1`, and writes U, V, η of
//! level `n + 1` in place into the level `n − 1` buffers (10 values per cell); the north
//! boundary row of V (`ny + 1`) is one extra thin row. Then the sponge relaxation (if any),
//! the ghost pass (spec §4.3), and the two levels swap. Every value is computed by the same
//! expression whatever the split, so results are bitwise independent of the thread count.
//!
//! Storage follows [`super::fd_boundary`] (CTCS's own index convention).

use std::ops::Range;

use rayon::prelude::*;

use crate::numerics::temporal::{self, RowStencil, Tiling};
use crate::real::Real;
use crate::solver::Place;

use super::fd_boundary::{self, ETA, HU, HV, Halos, ROWS, State, View};
use super::grid::{Field, Physics, Side};
use super::scheme::{Cells, Initial, Scheme};

/// The leapfrog scheme: its two time levels, and the sponge exterior (the initial state)
/// when a side is a sponge.
pub struct Ctcs<T> {
    pub(super) p: Physics,
    /// Equilibrium depth H at cell centres (halo 1).
    pub(super) h: Field<T>,
    /// Level n (the newest).
    pub(super) cur: State<T>,
    /// Level n − 1.
    pub(super) prev: State<T>,
    pub(super) exterior: Option<State<T>>,
    /// f of the V faces as the U update uses them: row `l` takes `f_vq[l]` (south) and
    /// `f_vq[l + 1]` (north), `l = 0..=ny+2`.
    pub(super) f_vq: Vec<T>,
    /// f at the cell-centre rows `l = 0..=ny+1` (`y = (l − ½)Δy`), for the V update.
    pub(super) f_c: Vec<T>,
    /// The ghost exchange with the neighbouring ranks of a decomposed run.
    halos: Option<Halos>,
}

/// Scalars of one step, in `T`.
#[derive(Clone, Copy)]
pub(super) struct Consts<T> {
    pub(super) nx: usize,
    pub(super) ny: usize,
    /// The leapfrog interval (`2Δt`; `Δt` for a clean first step).
    pub(super) tdt: T,
    /// `tdt r`, and whether `r ≠ 0`.
    pub(super) r_tdt: T,
    pub(super) friction: bool,
    /// Whether some f is not zero, and whether `A ≠ 0`. Where they are zero, the momentum
    /// updates leave the Coriolis and viscosity terms out, with the bits of the full sums the
    /// CUDA kernels form: a zero term changes a finite sum only by turning −0 into +0, and the
    /// wind term (+0 when zero) is added after the Coriolis term and before the viscosity
    /// one, so that a zero sum is +0 either way.
    pub(super) coriolis: bool,
    pub(super) viscous: bool,
    /// `tdt A (Δx² + Δy²)/(Δx² Δy²)`.
    pub(super) visc: T,
    pub(super) a: T,
    pub(super) minus_half_g: T,
    pub(super) inv_dx: T,
    pub(super) inv_dy: T,
    pub(super) inv_dx2: T,
    pub(super) inv_dy2: T,
    /// `1 / (1 + visc)`: the implicit factor without friction.
    pub(super) inv_c: T,
    pub(super) dx_dy: T,
    pub(super) dy_dx: T,
    pub(super) tdt_dx: T,
    pub(super) tdt_dy: T,
    /// The wind stress; a zero as +0 (see `coriolis`).
    pub(super) wind_x: T,
    pub(super) wind_y: T,
    /// `s/4` with `s = +1`: advection added as `+N` (GPU Ocean), `s = −1`: as `−N`
    /// (physical), `N = X/4`; `P + (s/4) X` is exactly `P + N` or `P − N`.
    pub(super) adv_quarter: T,
    pub(super) wall_n: bool,
    pub(super) wall_e: bool,
    pub(super) wall_s: bool,
    pub(super) wall_w: bool,
}

/// Level `n` and the constants the step reads.
struct Inputs<'a, T> {
    h: View<T>,
    eta: View<T>,
    hu: View<T>,
    hv: View<T>,
    f_vq: &'a [T],
    f_c: &'a [T],
}

impl<T: Real> Ctcs<T> {
    /// Sample the initial state of the case into both levels and apply the boundary pass.
    pub fn new(p: &Physics, init: &Initial) -> Self {
        Self::with_halo(p, init, None)
    }

    /// [`Ctcs::new`] on a rank's block (see [`super::part`]), its ghosts from the neighbours by
    /// `halos`. A step reads level n with its ghosts and level n − 1 where it writes (its east
    /// and north boundary faces included, the neighbours' first ones); exchanged in the ghost
    /// pass of every new level, both levels hold the serial values on all their entries.
    pub(super) fn with_halo(p: &Physics, init: &Initial, halos: Option<Halos>) -> Self {
        let h = fd_boundary::sample_depth(p, init.depth);
        let mut cur = State::sample(p, init);
        cur.fill(p, false, halos.as_ref());
        let sponge = [p.sides.north, p.sides.east, p.sides.south, p.sides.west]
            .iter()
            .any(|s| matches!(s, Side::Sponge { .. }));
        let shift = if p.gpu_ocean_compat { -2.0 } else { -1.0 };
        Ctcs {
            p: *p,
            h,
            prev: cur.clone(),
            exterior: sponge.then(|| cur.clone()),
            cur,
            f_vq: fd_boundary::coriolis_rows(p, p.ny + 3, shift),
            f_c: fd_boundary::coriolis_rows(p, p.ny + 2, -0.5),
            halos,
        }
    }

    /// Level n − 1 (`eta_prev`, `hu_prev`, `hv_prev`), which GPU Ocean's `download()`
    /// returns after a step (spec §4.4).
    pub fn previous(&self) -> (&Field<T>, &Field<T>, &Field<T>) {
        (&self.prev.eta, &self.prev.hu, &self.prev.hv)
    }

    pub(super) fn consts(&self, tdt: T) -> Consts<T> {
        let p = &self.p;
        let t = T::of;
        let (dx, dy, a, g) = (t(p.dx), t(p.dy), t(p.viscosity), t(p.g));
        let (dx2, dy2) = (dx * dx, dy * dy);
        let visc = a * tdt * (dx2 + dy2) / (dx2 * dy2);
        Consts {
            nx: p.nx,
            ny: p.ny,
            tdt,
            r_tdt: t(p.friction) * tdt,
            friction: p.friction != 0.0,
            coriolis: self.f_vq.iter().chain(&self.f_c).any(|f| *f != T::zero()),
            viscous: a != T::zero(),
            visc,
            a,
            minus_half_g: t(-0.5) * g,
            inv_dx: T::one() / dx,
            inv_dy: T::one() / dy,
            inv_dx2: T::one() / dx2,
            inv_dy2: T::one() / dy2,
            inv_c: T::one() / (T::one() + visc),
            dx_dy: dx / dy,
            dy_dx: dy / dx,
            tdt_dx: tdt / dx,
            tdt_dy: tdt / dy,
            wind_x: t(p.wind[0]) + T::zero(),
            wind_y: t(p.wind[1]) + T::zero(),
            adv_quarter: T::of(if p.gpu_ocean_compat { 0.25 } else { -0.25 }),
            wall_n: p.sides.north == Side::Wall,
            wall_e: p.sides.east == Side::Wall,
            wall_s: p.sides.south == Side::Wall,
            wall_w: p.sides.west == Side::Wall,
        }
    }

    /// The leapfrog interval of a step of `dt`: `2Δt`, or `Δt` for the clean first step.
    pub(super) fn interval(&self, dt: f64, first: bool) -> T {
        let dt_t = T::of(dt);
        if first && !self.p.gpu_ocean_compat { dt_t } else { T::of(2.0) * dt_t }
    }

    /// The fused pass: level n+1 from level n, written over level n − 1.
    fn update(&mut self, c: &Consts<T>) {
        let (nx, ny) = (c.nx, c.ny);
        let inp = Inputs {
            h: View::of(&self.h),
            eta: View::of(&self.cur.eta),
            hu: View::of(&self.cur.hu),
            hv: View::of(&self.cur.hv),
            f_vq: &self.f_vq,
            f_c: &self.f_c,
        };
        let (we, wu, wv) = (nx + 2, nx + 3, nx + 2);
        let State { eta, hu, hv } = &mut self.prev;
        let (hv_body, hv_north) = hv.v.split_at_mut(wv * (ny + 1));
        let eta = &mut eta.v[we..we * (ny + 1)];
        let hu = &mut hu.v[wu..wu * (ny + 1)];
        let hv_body = &mut hv_body[wv..];
        eta.par_chunks_mut(ROWS * we)
            .zip(hu.par_chunks_mut(ROWS * wu))
            .zip(hv_body.par_chunks_mut(ROWS * wv))
            .enumerate()
            .for_each(|(i, ((e, u), v))| rows(1 + i * ROWS, e, u, v, &inp, c));
        // The north boundary faces (row ny + 1) of V.
        let mut h = [vec![T::zero(); we], vec![T::zero(); we]];
        let mut rh = [vec![T::zero(); we], vec![T::zero(); we]];
        let mut x = vec![T::zero(); nx + 1];
        // SAFETY (the row kernels): `inp` views level n, which no one writes during the pass.
        unsafe {
            for (i, l) in [ny, ny + 1].into_iter().enumerate() {
                depth_row(&mut h[i], &mut rh[i], l, 0..we, &inp);
            }
            corner_row(&mut x, &h[0], &h[1], ny, 0..nx + 1, &inp);
            v_row(&mut hv_north[1..nx + 1], ny + 1, 1..nx + 1, &inp, c, &rh[0], &rh[1], &x);
        }
    }

    /// `steps` steps of `dt` in one temporally blocked sweep (see [`temporal`]), bitwise equal
    /// to `steps` calls of [`Scheme::step`] after the first. Walls only (see
    /// [`fd_boundary::blockable`]): each row writes the ghost values the next level reads
    /// (its ghost columns, and rows 0 and ny + 1 of η and U with rows 1 and ny), and the
    /// whole ghost pass runs on both levels at the end.
    pub(super) fn steps_blocked(&mut self, dt: f64, tiling: &Tiling, steps: usize) {
        assert!(fd_boundary::blockable(&self.p) && tiling.levels_per_step == 1);
        let ny = self.p.ny;
        let stencil = Blocked {
            levels: [&mut self.cur, &mut self.prev]
                .map(|s| [View::of_mut(&mut s.eta), View::of_mut(&mut s.hu), View::of_mut(&mut s.hv)]),
            h: View::of(&self.h),
            f_vq: &self.f_vq,
            f_c: &self.f_c,
            c: self.consts(self.interval(dt, false)),
        };
        temporal::sweep(&stencil, ny + 2, tiling, steps);
        if steps % 2 == 1 {
            std::mem::swap(&mut self.cur, &mut self.prev);
        }
        self.cur.fill(&self.p, false, self.halos.as_ref());
        self.prev.fill(&self.p, false, self.halos.as_ref());
    }
}

/// CTCS steps for [`temporal::sweep`] over the rows and columns of the halo grid (unit column
/// `k`: U's west face of cell `k`, V and η of cell `k`): level `t` in buffer `t % 2` (0: `cur`,
/// 1: `prev`), written in place over level `t - 2`, which only the point itself reads.
struct Blocked<'a, T> {
    /// η, U, V of the two buffers.
    levels: [[View<T>; 3]; 2],
    h: View<T>,
    f_vq: &'a [T],
    f_c: &'a [T],
    c: Consts<T>,
}

/// One task's rolling rows of one level, as in the unblocked pass: after the call for row
/// `row - 1`, h and 1/h of the cell rows `row - 2` and `row - 1` (and a free row), and the
/// corner terms ([`corner_row`]) between them.
struct Rolling<T> {
    row: usize,
    h: [Vec<T>; 2],
    rh: [Vec<T>; 3],
    x: [Vec<T>; 2],
}

impl<T: Real> RowStencil for Blocked<'_, T> {
    /// Rolling rows by level.
    type Scratch = Vec<Option<Rolling<T>>>;

    fn scratch(&self) -> Self::Scratch {
        Vec::new()
    }

    unsafe fn update(&self, scratch: &mut Self::Scratch, t: usize, j: usize, cols: Range<usize>) {
        let (nx, ny) = (self.c.nx, self.c.ny);
        // Ghost rows are written with rows 1 and ny.
        if j == 0 || j > ny {
            return;
        }
        if scratch.len() <= t {
            scratch.resize_with(t + 1, || None);
        }
        let r = scratch[t].get_or_insert_with(|| {
            let row = |w: usize| vec![T::zero(); w];
            Rolling { row: 0, h: [row(nx + 2), row(nx + 2)], rh: [row(nx + 2), row(nx + 2), row(nx + 2)], x: [row(nx + 1), row(nx + 1)] }
        });
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F; the rest as for this function.
            return unsafe { self.update_avx512(r, t, j, cols) };
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2; the rest as for this function.
            return unsafe { self.update_avx2(r, t, j, cols) };
        }
        // SAFETY: as for this function.
        unsafe { self.update_body(r, t, j, cols) }
    }
}

impl<T: Real> Blocked<'_, T> {
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn update_avx512(&self, r: &mut Rolling<T>, t: usize, j: usize, cols: Range<usize>) {
        unsafe { self.update_body(r, t, j, cols) }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn update_avx2(&self, r: &mut Rolling<T>, t: usize, j: usize, cols: Range<usize>) {
        unsafe { self.update_body(r, t, j, cols) }
    }

    #[inline(always)]
    unsafe fn update_body(&self, r: &mut Rolling<T>, t: usize, j: usize, cols: Range<usize>) {
        let c = &self.c;
        let (nx, ny) = (c.nx, c.ny);
        let ([eta0, hu0, hv0], [eta, hu, hv]) = (self.levels[(t - 1) % 2], self.levels[t % 2]);
        let inp = Inputs { h: self.h, eta: eta0, hu: hu0, hv: hv0, f_vq: self.f_vq, f_c: self.f_c };
        let lo = cols.start.max(1);
        let (faces, cells) = (lo..cols.end.min(nx + 2), lo..cols.end.min(nx + 1));
        // The depths the rows read (cells next to the faces, corners next to faces and cells).
        let depths = lo - 1..faces.end.max(cells.end + 1);
        let corners = lo - 1..(faces.end - 1).max(cells.end);
        // SAFETY (all segments): in bounds of the halo arrays; written: row j over `cols` of
        // this level (and rows 0 / ny + 1 with rows 1 / ny), ours alone; read: level t - 1
        // within one row and column, which no one writes now, and what this call wrote.
        unsafe {
            if r.row != j {
                let ([h0, h1], [rh0, rh1, _]) = (&mut r.h, &mut r.rh);
                depth_row(h0, rh0, j - 1, depths.clone(), &inp);
                depth_row(h1, rh1, j, depths.clone(), &inp);
                corner_row(&mut r.x[0], h0, h1, j - 1, corners.clone(), &inp);
            }
            let [h_lo, h_hi] = &mut r.h;
            // h row j - 1 is no longer needed: row j + 1 takes its place.
            depth_row(h_lo, &mut r.rh[2], j + 1, depths, &inp);
            corner_row(&mut r.x[1], h_hi, h_lo, j, corners, &inp);
            if !faces.is_empty() {
                u_row(hu.seg_mut(j, faces.start, faces.len()), j, faces, &inp, c, &r.rh[1], &r.x[0], &r.x[1]);
            }
            if !cells.is_empty() {
                let n = cells.len();
                v_row(hv.seg_mut(j, lo, n), j, cells.clone(), &inp, c, &r.rh[0], &r.rh[1], &r.x[0]);
                eta_row(eta.seg_mut(j, lo, n), j, cells, &inp, c);
            }
            r.h.swap(0, 1);
            r.rh.rotate_left(1);
            r.x.swap(0, 1);
            r.row = j + 1;
            // The ghost pass for what the next level reads: the ghost columns of this row
            // (U's boundary faces are already zero), rows 0 and ny + 1 of η and U.
            if cols.start == 0 {
                eta.set(j, 0, eta.get(j, 1));
                hv.set(j, 0, hv.get(j, 1));
                hu.set(j, 0, -hu.get(j, 2));
            }
            if cols.end == nx + 2 {
                eta.set(j, nx + 1, eta.get(j, nx));
                hv.set(j, nx + 1, hv.get(j, nx));
                hu.set(j, nx + 2, -hu.get(j, nx));
            }
            for (inside, ghost) in [(1, 0), (ny, ny + 1)] {
                if j == inside {
                    eta.copy_row(j, ghost, cols.clone());
                    hu.copy_row(j, ghost, cols.start..cols.end + usize::from(cols.end == nx + 2));
                }
            }
        }
    }
}

/// Rows `a..a + e.len()/(nx+2)` of the new η, U, V (`e`, `u`, `v`: those rows of the level
/// n − 1 arrays, read at the centre and overwritten). The AVX2 build is chosen at run time
/// when the CPU has it (bitwise the same results: Rust never contracts to FMA).
fn rows<T: Real>(a: usize, e: &mut [T], u: &mut [T], v: &mut [T], inp: &Inputs<T>, c: &Consts<T>) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { rows_avx2(a, e, u, v, inp, c) };
    }
    rows_body(a, e, u, v, inp, c)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rows_avx2<T: Real>(
    a: usize,
    e: &mut [T],
    u: &mut [T],
    v: &mut [T],
    inp: &Inputs<T>,
    c: &Consts<T>,
) {
    rows_body(a, e, u, v, inp, c)
}

#[inline(always)]
fn rows_body<T: Real>(
    a: usize,
    e: &mut [T],
    u: &mut [T],
    v: &mut [T],
    inp: &Inputs<T>,
    c: &Consts<T>,
) {
    let (nx, we, wu, wv) = (c.nx, c.nx + 2, c.nx + 3, c.nx + 2);
    let (cells, corners) = (0..we, 0..nx + 1);
    // Rolling rows shared by the U and V updates: h = H + η of cell rows l-1, l (then l,
    // l+1), 1/h of rows l-1, l, l+1, and the corner terms of the corner rows l-1/2, l+1/2.
    let mut h = [vec![T::zero(); we], vec![T::zero(); we]];
    let mut rh = [vec![T::zero(); we], vec![T::zero(); we], vec![T::zero(); we]];
    let mut x = [vec![T::zero(); c.nx + 1], vec![T::zero(); c.nx + 1]];
    // SAFETY (the row kernels): `inp` views level n, which no one writes during the pass,
    // and every row read (0..=ny+2) exists.
    unsafe {
        let [h0, h1] = &mut h;
        let [rh0, rh1, _] = &mut rh;
        depth_row(h0, rh0, a - 1, cells.clone(), inp);
        depth_row(h1, rh1, a, cells.clone(), inp);
        corner_row(&mut x[0], h0, h1, a - 1, corners.clone(), inp);
    }
    for r in 0..e.len() / we {
        let l = a + r;
        // SAFETY: as above.
        unsafe {
            let [h_lo, h_hi] = &mut h;
            // h row l - 1 is no longer needed: row l + 1 takes its place.
            depth_row(h_lo, &mut rh[2], l + 1, cells.clone(), inp);
            corner_row(&mut x[1], h_hi, h_lo, l, corners.clone(), inp);
            u_row(&mut u[r * wu + 1..r * wu + nx + 2], l, 1..nx + 2, inp, c, &rh[1], &x[0], &x[1]);
            v_row(&mut v[r * wv + 1..r * wv + nx + 1], l, 1..nx + 1, inp, c, &rh[0], &rh[1], &x[0]);
            eta_row(&mut e[r * we + 1..r * we + nx + 1], l, 1..nx + 1, inp, c);
        }
        h.swap(0, 1);
        rh.rotate_left(1);
        x.swap(0, 1);
    }
}

/// `h = H + η` of cell row `l` and `1/h` over the columns `ks` (of whole rows `h`, `inv`).
///
/// # Safety
/// `inp` may be read there.
#[inline(always)]
unsafe fn depth_row<T: Real>(h: &mut [T], inv: &mut [T], l: usize, ks: Range<usize>, inp: &Inputs<T>) {
    let n = ks.len();
    let (depth, eta) = unsafe { (inp.h.seg(l, ks.start, n), inp.eta.seg(l, ks.start, n)) };
    let (h, inv) = (&mut h[ks.clone()], &mut inv[ks]);
    let one = T::one();
    for k in 0..n {
        h[k] = depth[k] + eta[k];
        inv[k] = one / h[k];
    }
}

/// The advection term both momentum updates share at the corners `cs` between cell rows `l`
/// and `l + 1` (their depths h in `south`, `north`), corner `c` between columns `c` and
/// `c + 1` (`c = 0..=nx`): `(U_S + U_N) (V_W + V_E) / D` with the U faces south and north of
/// it, the V faces west and east, and `D = ¼((h_SW + h_SE) + (h_NW + h_NE))`. U of row `l`
/// takes the difference of its north and south corners, V of row `l + 1` of its east and west
/// ones: formed once here, in the order both wrote it out.
///
/// # Safety
/// `inp` may be read there (U of rows `l`, `l + 1` and V of row `l + 1`, one column beyond).
#[inline(always)]
unsafe fn corner_row<T: Real>(out: &mut [T], south: &[T], north: &[T], l: usize, cs: Range<usize>, inp: &Inputs<T>) {
    let (c0, m) = (cs.start, cs.len());
    let out = &mut out[cs];
    let (sw, se) = (&south[c0..c0 + m], &south[c0 + 1..c0 + m + 1]);
    let (nw, ne) = (&north[c0..c0 + m], &north[c0 + 1..c0 + m + 1]);
    let (u_s, u_n) = unsafe { (inp.hu.seg(l, c0 + 1, m), inp.hu.seg(l + 1, c0 + 1, m)) };
    let (v_w, v_e) = unsafe { (inp.hv.seg(l + 1, c0, m), inp.hv.seg(l + 1, c0 + 1, m)) };
    let (one, quarter) = (T::one(), T::of(0.25));
    for k in 0..m {
        let rd = one / (quarter * ((sw[k] + se[k]) + (nw[k] + ne[k])));
        out[k] = (u_n[k] + u_s[k]) * (v_e[k] + v_w[k]) * rd;
    }
}

/// `for k in 0..$n { $body!(k, friction, coriolis, viscous) }` with the step's flags as
/// literals: a loop of its own for each combination, without the terms that are absent.
macro_rules! with_terms {
    ($c:expr, $n:expr, $body:ident) => {
        match ($c.friction, $c.coriolis, $c.viscous) {
            (false, false, false) => with_terms!(@loop $n, $body, false, false, false),
            (false, false, true) => with_terms!(@loop $n, $body, false, false, true),
            (false, true, false) => with_terms!(@loop $n, $body, false, true, false),
            (false, true, true) => with_terms!(@loop $n, $body, false, true, true),
            (true, false, false) => with_terms!(@loop $n, $body, true, false, false),
            (true, false, true) => with_terms!(@loop $n, $body, true, false, true),
            (true, true, false) => with_terms!(@loop $n, $body, true, true, false),
            (true, true, true) => with_terms!(@loop $n, $body, true, true, true),
        }
    };
    (@loop $n:expr, $body:ident, $($flag:literal),*) => {
        for k in 0..$n {
            $body!(k, $($flag),*);
        }
    };
}

/// U of row `l` (1..=ny) on the faces `qs` (within `1..=nx+1`; face `q` between cells
/// `q - 1` and `q`); `out` holds U⁰ there. `rh`: 1/h of the cells of row `l`; `x_s`,
/// `x_n`: the corner terms of [`corner_row`] south and north (whole rows).
///
/// # Safety
/// `inp` may be read within one row and column of these faces.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn u_row<T: Real>(
    out: &mut [T],
    l: usize,
    qs: Range<usize>,
    inp: &Inputs<T>,
    c: &Consts<T>,
    rh: &[T],
    x_s: &[T],
    x_n: &[T],
) {
    let (q0, m) = (qs.start, qs.len());
    let seg = |f: View<T>, row: usize, from: usize| unsafe { f.seg(row, from, m) };
    let west = |f, row| seg(f, row, q0 - 1);
    let east = |f, row| seg(f, row, q0);
    let (h_w, h_e) = (west(inp.h, l), east(inp.h, l));
    let (e_w, e_e) = (west(inp.eta, l), east(inp.eta, l));
    let (rh_w, rh_e) = (&rh[q0 - 1..q0 - 1 + m], &rh[q0..q0 + m]);
    let (x_s, x_n) = (&x_s[q0 - 1..q0 - 1 + m], &x_n[q0 - 1..q0 - 1 + m]);
    let (u_m0, u_00, u_p0) = (west(inp.hu, l), east(inp.hu, l), seg(inp.hu, l, q0 + 1));
    let (u_0m, u_0p) = (east(inp.hu, l - 1), east(inp.hu, l + 1));
    // V faces south (row l) and north (row l + 1) of the face, west and east of it.
    let (v_s_w, v_s_e, v_n_w, v_n_e) =
        (west(inp.hv, l), east(inp.hv, l), west(inp.hv, l + 1), east(inp.hv, l + 1));
    let (f_s, f_n) = (inp.f_vq[l], inp.f_vq[l + 1]);
    let u0 = &mut out[..m];
    let (half, quarter, one) = (T::of(0.5), T::of(0.25), T::one());
    let c = *c;
    macro_rules! body {
        ($k:ident, $friction:literal, $coriolis:literal, $viscous:literal) => {{
            let k = $k;
            let h_sum = h_w[k] + h_e[k];
            let p_hat = c.minus_half_g * (e_e[k] * e_e[k] - e_w[k] * e_w[k]);
            let p = c.minus_half_g * h_sum * (e_e[k] - e_w[k]) + p_hat;
            let (east, west) = (u_p0[k] + u_00[k], u_00[k] + u_m0[k]);
            let n_a = east * east * rh_e[k];
            let n_b = west * west * rh_w[k];
            let adv = p + c.adv_quarter * (n_a - n_b + c.dx_dy * (x_n[k] - x_s[k]));
            // f_v + adv/Δx + X + A E, without the terms that are zero (see `Consts::coriolis`).
            let mut sum = adv * c.inv_dx;
            if $coriolis {
                sum = quarter * (f_s * (v_s_w[k] + v_s_e[k]) + f_n * (v_n_w[k] + v_n_e[k])) + sum;
            }
            sum = sum + c.wind_x;
            if $viscous {
                let old = u0[k];
                sum = sum + c.a * ((u_p0[k] - old + u_m0[k]) * c.inv_dx2 + (u_0p[k] - old + u_0m[k]) * c.inv_dy2);
            }
            let rhs = u0[k] + c.tdt * sum;
            u0[k] = if $friction { rhs / (one + c.r_tdt / (half * h_sum) + c.visc) } else { rhs * c.inv_c };
        }};
    }
    with_terms!(c, m, body);
    if c.wall_w && q0 == 1 {
        u0[0] = T::zero();
    }
    if c.wall_e && qs.end == c.nx + 2 {
        u0[m - 1] = T::zero();
    }
}

/// V of row `l` (1..=ny+1) on the cells `ks` (within `1..=nx`); `out` holds V⁰ there.
/// `rh_s`, `rh_n`: 1/h of the cell rows `l − 1` and `l`; `x`: the corner terms of
/// [`corner_row`] between them (whole rows).
///
/// # Safety
/// `inp` may be read within one row and column of these faces.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn v_row<T: Real>(
    out: &mut [T],
    l: usize,
    ks: Range<usize>,
    inp: &Inputs<T>,
    c: &Consts<T>,
    rh_s: &[T],
    rh_n: &[T],
    x: &[T],
) {
    let (k0, n) = (ks.start, ks.len());
    let v0 = &mut out[..n];
    if (l == 1 && c.wall_s) || (l == c.ny + 1 && c.wall_n) {
        v0.fill(T::zero());
        return;
    }
    // Cells south (row l - 1) and north (row l); `off` 0, 1, 2: the columns k - 1, k, k + 1.
    let col = |f: View<T>, row: usize, off: usize| unsafe { f.seg(row, k0 - 1 + off, n) };
    let (h_s, h_n) = (col(inp.h, l - 1, 1), col(inp.h, l, 1));
    let (e_s, e_n) = (col(inp.eta, l - 1, 1), col(inp.eta, l, 1));
    let (rh_s, rh_n) = (&rh_s[k0..k0 + n], &rh_n[k0..k0 + n]);
    let (x_w, x_e) = (&x[k0 - 1..k0 - 1 + n], &x[k0..k0 + n]);
    let (v_m0, v_00, v_p0) = (col(inp.hv, l, 0), col(inp.hv, l, 1), col(inp.hv, l, 2));
    let (v_0m, v_0p) = (col(inp.hv, l - 1, 1), col(inp.hv, l + 1, 1));
    // U faces west (column k) and east (k + 1) of the face, in the rows south and north.
    let (u_s_w, u_s_e, u_n_w, u_n_e) =
        (col(inp.hu, l - 1, 1), col(inp.hu, l - 1, 2), col(inp.hu, l, 1), col(inp.hu, l, 2));
    let (f_s, f_n) = (inp.f_c[l - 1], inp.f_c[l]);
    let (half, quarter, one) = (T::of(0.5), T::of(0.25), T::one());
    let c = *c;
    macro_rules! body {
        ($k:ident, $friction:literal, $coriolis:literal, $viscous:literal) => {{
            let k = $k;
            let h_sum = h_s[k] + h_n[k];
            let p_hat = c.minus_half_g * (e_n[k] * e_n[k] - e_s[k] * e_s[k]);
            let p = c.minus_half_g * h_sum * (e_n[k] - e_s[k]) + p_hat;
            let (north, south) = (v_0p[k] + v_00[k], v_00[k] + v_0m[k]);
            let n_a = north * north * rh_n[k];
            let n_b = south * south * rh_s[k];
            let adv = p + c.adv_quarter * (n_a - n_b + c.dy_dx * (x_e[k] - x_w[k]));
            // −f_u + adv/Δy + Y + A E, without the terms that are zero (as in `u_row`).
            let mut sum = adv * c.inv_dy;
            if $coriolis {
                sum = -(quarter * (f_s * (u_s_w[k] + u_s_e[k]) + f_n * (u_n_w[k] + u_n_e[k]))) + sum;
            }
            sum = sum + c.wind_y;
            if $viscous {
                let old = v0[k];
                sum = sum + c.a * ((v_p0[k] - old + v_m0[k]) * c.inv_dx2 + (v_0p[k] - old + v_0m[k]) * c.inv_dy2);
            }
            let rhs = v0[k] + c.tdt * sum;
            v0[k] = if $friction { rhs / (one + c.r_tdt / (half * h_sum) + c.visc) } else { rhs * c.inv_c };
        }};
    }
    with_terms!(c, n, body);
}

/// η of row `l` (1..=ny) on the cells `ks`; `out` holds η⁰ there.
///
/// # Safety
/// `inp` may be read within one row and column of these cells.
#[inline(always)]
unsafe fn eta_row<T: Real>(out: &mut [T], l: usize, ks: Range<usize>, inp: &Inputs<T>, c: &Consts<T>) {
    let (k0, n) = (ks.start, ks.len());
    let seg = |f: View<T>, row: usize, from: usize| unsafe { f.seg(row, from, n) };
    let (u_w, u_e) = (seg(inp.hu, l, k0), seg(inp.hu, l, k0 + 1));
    let (v_s, v_n) = (seg(inp.hv, l, k0), seg(inp.hv, l + 1, k0));
    let eta0 = &mut out[..n];
    let (tdt_dx, tdt_dy) = (c.tdt_dx, c.tdt_dy);
    for k in 0..n {
        eta0[k] = eta0[k] - tdt_dx * (u_e[k] - u_w[k]) - tdt_dy * (v_n[k] - v_s[k]);
    }
}

/// [`Scheme::dt_limit`] of level `cur` (see there); on a rank's block the largest h and |u|
/// of the whole domain (from `halos`), as in the serial run.
fn dt_limit<T: Real>(p: &Physics, h: &Field<T>, cur: &State<T>, halos: Option<&Halos>) -> f64 {
    let depth = |l: usize, k: usize| h.at(l, k).f64() + cur.eta.at(l, k).f64();
    let h_max = fd_boundary::interior_max(p, depth);
    let u_max = fd_boundary::interior_max(p, |l, k| {
        let (u, v) = (&cur.hu, &cur.hv);
        let q = [u.at(l, k), u.at(l, k + 1), v.at(l, k), v.at(l + 1, k)];
        q.iter().map(|x| x.f64().abs()).fold(0.0, f64::max) / depth(l, k)
    });
    let (h_max, u_max) = halos.map_or((h_max, u_max), |all| (all.max(h_max), all.max(u_max)));
    let c = u_max + (p.g * h_max).sqrt();
    0.5 / (c * (1.0 / (p.dx * p.dx) + 1.0 / (p.dy * p.dy)).sqrt())
}

impl<T: Real> Scheme<T> for Ctcs<T> {
    /// One leapfrog step of `dt`. `first` (the run's first step) first sets level n − 1 to
    /// level n, then takes GPU Ocean's `2Δt` step or, without `gpu_ocean_compat`, a `Δt` step.
    fn step(&mut self, dt: f64, first: bool) {
        if first {
            // Start from two equal levels.
            self.prev.clone_from(&self.cur);
        }
        self.update(&self.consts(self.interval(dt, first)));
        if let Some(ext) = &self.exterior {
            self.prev.relax(ext, &self.p);
        }
        self.prev.fill(&self.p, false, self.halos.as_ref());
        std::mem::swap(&mut self.cur, &mut self.prev);
    }

    fn steps_blocked(&mut self, dt: f64, tiling: &Tiling, steps: usize) {
        Ctcs::steps_blocked(self, dt, tiling, steps);
    }

    /// Half the 1-D C-grid limit, `½ / ((max|u| + sqrt(g max h)) sqrt(1/dx² + 1/dy²))`, over
    /// the interior cells of the newest level: `h = H + η`, `|u|` the largest of the four
    /// face transports of the cell divided by its h.
    fn dt_limit(&self) -> f64 {
        dt_limit(&self.p, &self.h, &self.cur, self.halos.as_ref())
    }

    fn cells(&self) -> Cells<T> {
        self.cur.cells(&self.h, &self.p)
    }

    fn arrays(&self) -> Vec<(&'static str, Place, Field<T>)> {
        vec![
            ("eta", ETA, self.cur.eta.clone()),
            ("hu", HU, self.cur.hu.clone()),
            ("hv", HV, self.cur.hv.clone()),
            ("eta_prev", ETA, self.prev.eta.clone()),
            ("hu_prev", HU, self.prev.hu.clone()),
            ("hv_prev", HV, self.prev.hv.clone()),
        ]
    }

    fn arrays_mut(&mut self) -> Vec<(&'static str, Place, &mut Field<T>)> {
        let State { eta, hu, hv } = &mut self.cur;
        let State { eta: eta_p, hu: hu_p, hv: hv_p } = &mut self.prev;
        vec![
            ("eta", ETA, eta),
            ("hu", HU, hu),
            ("hv", HV, hv),
            ("eta_prev", ETA, eta_p),
            ("hu_prev", HU, hu_p),
            ("hv_prev", HV, hv_p),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::fd_boundary::cases::{Case, assert_sponges_held, block, cases};
    use super::super::grid::{At, Sides};
    use super::super::reference::{max_difference, read};

    /// GPU Ocean's `step(T)` for CTCS (spec §4.4): `n = ⌊T/Δt + 1⌋` made odd, base step
    /// `Δt' = (T/n)(1 + 1/(100n))`, the last step shorter.
    fn steps(t_end: f64, dt: f64) -> Vec<f64> {
        let mut n = (t_end / dt + 1.0).floor() as usize;
        if n.is_multiple_of(2) {
            n += 1;
        }
        let base = (t_end / n as f64) * (1.0 + 1.0 / (100.0 * n as f64));
        (0..n).map(|i| base.min(t_end - i as f64 * base)).take_while(|&d| d > 0.0).collect()
    }

    fn run<T: Real>(case: &Case, sides: Sides) -> Ctcs<T> {
        let p = case.physics(1.0, sides);
        let mut s = case.with_initial(&p, |init| Ctcs::<T>::new(&p, init));
        for (i, dt) in steps(50.0, 1.0).into_iter().enumerate() {
            s.step(dt, i == 0);
        }
        s
    }

    /// Max |ours − reference| of η[1:-1,1:-1], hu[1:-1,2:-2], hv[2:-2,1:-1] (spec §9.1) of the
    /// older level, which GPU Ocean's `download()` returns (spec §4.4).
    fn errors<T: Real>(s: &Ctcs<T>, case: &Case) -> [f64; 3] {
        let (nx, ny) = (s.p.nx, s.p.ny);
        let r = |f: &str| read(&case.file("CTCS", f));
        let (eta, hu, hv) = s.previous();
        [
            max_difference(&block(&r("eta"), 1, 1, ny, nx), ny, nx, |l, k| {
                eta.at(l + 1, k + 1).f64()
            }),
            max_difference(&block(&r("u"), 1, 2, ny, nx - 1), ny, nx - 1, |l, k| {
                hu.at(l + 1, k + 2).f64()
            }),
            max_difference(&block(&r("v"), 2, 1, ny - 1, nx), ny - 1, nx, |l, k| {
                hv.at(l + 2, k + 1).f64()
            }),
        ]
    }

    fn check_references<T: Real>(tolerance: f64) {
        assert_eq!(steps(50.0, 1.0).len(), 51);
        let mut failed = vec![];
        let all = cases("CTCS");
        assert_eq!(all.len(), 16);
        for case in &all {
            let s = run::<T>(case, case.sides);
            let [e, u, v] = errors(&s, case);
            eprintln!(
                "CTCS {:<28} {} max|err| eta {e:.2e}  hu {u:.2e}  hv {v:.2e}",
                case.label(),
                T::PRECISION.name()
            );
            if !(e <= tolerance && u <= tolerance && v <= tolerance) {
                failed.push(format!("{} (eta {e:.2e}, hu {u:.2e}, hv {v:.2e})", case.label()));
            }
        }
        assert!(failed.is_empty(), "over {tolerance:e}: {}", failed.join("; "));
    }

    #[test]
    fn matches_gpu_ocean_reference_f32() {
        check_references::<f32>(1e-5);
    }

    #[test]
    fn matches_gpu_ocean_reference_f64() {
        check_references::<f64>(1e-4);
    }

    /// GPU Ocean's `test_periodic_boundary_conditions`: fields filled with 0, 1, 2, ... (row
    /// major, halo included); one boundary pass with periodic sides makes each ghost
    /// row/column equal to the opposite interior one, and nothing more.
    #[test]
    fn periodic_ghost_fill() {
        let case = cases("CTCS")[3];
        assert_eq!(case.bc, "periodic");
        let p = case.physics(1.0, case.sides);
        let (nx, ny) = (p.nx, p.ny);
        let count = |w: usize| move |at: At| ((at.j + 1) as usize * w + (at.i + 1) as usize) as f64;
        let (eta0, hu0, hv0) = (count(nx + 2), count(nx + 3), count(nx + 2));
        let depth = |_: At| 60.0;
        let s = Ctcs::<f32>::new(&p, &Initial { eta: &eta0, hu: &hu0, hv: &hv0, depth: &depth });
        for level in [&s.cur, &s.prev] {
            let (eta, u, v) = (&level.eta, &level.hu, &level.hv);
            let col =
                |f: &Field<f32>, k: usize| (0..f.height).map(|l| f.at(l, k)).collect::<Vec<_>>();
            let row = |f: &Field<f32>, l: usize| f.row(l).to_vec();
            // East-west.
            assert_eq!(col(eta, 0), col(eta, nx));
            assert_eq!(col(eta, 1), col(eta, nx + 1));
            assert_eq!(col(u, 0), col(u, nx));
            assert_eq!(col(u, 1), col(u, nx + 1));
            assert_eq!(col(u, 2), col(u, nx + 2));
            assert_eq!(col(v, 0), col(v, nx));
            assert_eq!(col(v, 1), col(v, nx + 1));
            // North-south.
            assert_eq!(row(eta, 0), row(eta, ny));
            assert_eq!(row(eta, 1), row(eta, ny + 1));
            assert_eq!(row(u, 0), row(u, ny));
            assert_eq!(row(u, 1), row(u, ny + 1));
            assert_eq!(row(v, 0), row(v, ny));
            assert_eq!(row(v, 1), row(v, ny + 1));
            assert_eq!(row(v, 2), row(v, ny + 2));
            // Not too far.
            for l in 0..ny + 2 {
                assert_ne!(eta.at(l, 2), eta.at(l, nx));
                assert_ne!(eta.at(l, 2), eta.at(l, nx + 1));
                assert_ne!(eta.at(l, 1), eta.at(l, nx - 1));
                assert_ne!(eta.at(l, 0), eta.at(l, nx - 1));
                assert_ne!(u.at(l, 3), u.at(l, nx));
                assert_ne!(u.at(l, 3), u.at(l, nx + 1));
                assert_ne!(u.at(l, 3), u.at(l, nx + 2));
                assert_ne!(u.at(l, 2), u.at(l, nx - 1));
                assert_ne!(u.at(l, 1), u.at(l, nx - 1));
                assert_ne!(u.at(l, 0), u.at(l, nx - 1));
            }
            for l in 0..ny + 3 {
                assert_ne!(v.at(l, 2), v.at(l, nx));
                assert_ne!(v.at(l, 2), v.at(l, nx + 1));
                assert_ne!(v.at(l, 1), v.at(l, nx - 1));
                assert_ne!(v.at(l, 0), v.at(l, nx - 1));
            }
            for k in 0..nx + 2 {
                assert_ne!(eta.at(2, k), eta.at(ny, k));
                assert_ne!(eta.at(2, k), eta.at(ny + 1, k));
                assert_ne!(eta.at(1, k), eta.at(ny - 1, k));
                assert_ne!(eta.at(0, k), eta.at(ny - 1, k));
                assert_ne!(v.at(3, k), v.at(ny, k));
                assert_ne!(v.at(3, k), v.at(ny + 1, k));
                assert_ne!(v.at(3, k), v.at(ny + 2, k));
                assert_ne!(v.at(2, k), v.at(ny - 1, k));
                assert_ne!(v.at(1, k), v.at(ny - 1, k));
                assert_ne!(v.at(0, k), v.at(ny - 1, k));
            }
            for k in 0..nx + 3 {
                assert_ne!(u.at(2, k), u.at(ny, k));
                assert_ne!(u.at(2, k), u.at(ny + 1, k));
                assert_ne!(u.at(1, k), u.at(ny - 1, k));
                assert_ne!(u.at(0, k), u.at(ny - 1, k));
            }
        }
    }

    fn mass(eta: &Field<f32>) -> f64 {
        (1..eta.height - 1)
            .map(|l| eta.row(l)[1..eta.width - 1].iter().map(|&x| x as f64).sum::<f64>())
            .sum()
    }

    #[test]
    fn conserves_mass() {
        for case in &cases("CTCS") {
            let p = case.physics(1.0, case.sides);
            let m0 = case.with_initial(&p, |init| mass(&Ctcs::<f32>::new(&p, init).cur.eta));
            let s = run::<f32>(case, case.sides);
            let drift = [&s.cur.eta, &s.prev.eta].map(|e| ((mass(e) - m0) / m0).abs());
            eprintln!(
                "CTCS {:<28} relative mass drift {:.1e} (older level {:.1e})",
                case.label(),
                drift[0],
                drift[1]
            );
            assert!(drift.iter().all(|&d| d <= 1e-6), "{}: drift {drift:?}", case.label());
        }
    }

    #[test]
    fn periodic_equals_wall_for_central_bump() {
        let all = cases("CTCS");
        let wall = run::<f32>(&all[0], all[0].sides);
        for case in all.iter().filter(|c| c.init == "central" && c.bc.starts_with("periodic")) {
            let s = run::<f32>(case, case.sides);
            let mut worst = 0.0f32;
            for (a, b) in [(&s.cur, &wall.cur), (&s.prev, &wall.prev)] {
                for l in 1..=70 {
                    for k in 1..=50 {
                        worst = worst.max((a.eta.at(l, k) - b.eta.at(l, k)).abs());
                        worst = worst.max((a.hu.at(l, k) - b.hu.at(l, k)).abs());
                        worst = worst.max((a.hv.at(l, k) - b.hv.at(l, k)).abs());
                    }
                }
            }
            eprintln!("CTCS {} vs wallBC central: max |difference| {worst:e}", case.bc);
            assert!(worst <= 1e-7, "{}: {worst:e}", case.bc);
        }
    }

    #[test]
    fn results_do_not_depend_on_thread_count() {
        let case = cases("CTCS").into_iter().find(|c| c.bc == "coriolis" && c.bathymetry).unwrap();
        let in_pool = |threads| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| run::<f32>(&case, case.sides))
        };
        let (one, two) = (in_pool(1), in_pool(2));
        assert!(one.cur == two.cur && one.prev == two.prev, "1 and 2 threads differ");
    }

    /// Without `gpu_ocean_compat` the scheme is the physically clean variant: still
    /// conservative and close to GPU Ocean's (the differences are the advection sign, the
    /// Coriolis positions and the first step).
    #[test]
    fn clean_variant_runs() {
        let case = cases("CTCS").into_iter().find(|c| c.bc == "betamodel").unwrap();
        let mut p = case.physics(1.0, case.sides);
        p.gpu_ocean_compat = false;
        let mut s = case.with_initial(&p, |init| Ctcs::<f64>::new(&p, init));
        let m0 = mass(&case.with_initial(&p, |init| Ctcs::<f32>::new(&p, init)).cur.eta);
        let dts = steps(50.0, 1.0);
        for (i, &dt) in dts.iter().enumerate() {
            s.step(dt, i == 0);
        }
        let gpu = run::<f64>(&case, case.sides);
        let mut diff = 0.0f64;
        let mut total = 0.0;
        for l in 1..=70 {
            for k in 1..=50 {
                diff = diff.max((s.cur.eta.at(l, k) - gpu.cur.eta.at(l, k)).abs());
                total += s.cur.eta.at(l, k);
            }
        }
        eprintln!(
            "CTCS clean vs GPU Ocean variant (betamodel, f64): max |eta difference| {diff:e}"
        );
        assert!(diff > 0.0 && diff < 1e-2, "{diff:e}");
        assert!(((total - m0) / m0).abs() < 1e-6);
    }

    #[test]
    fn arrays_cells_and_dt_limit() {
        let case = cases("CTCS")[0];
        let s = run::<f64>(&case, case.sides);
        let names: Vec<_> = s.arrays().iter().map(|(n, _, f)| (*n, f.width, f.height)).collect();
        assert_eq!(
            names,
            [
                ("eta", 52, 72),
                ("hu", 53, 72),
                ("hv", 52, 73),
                ("eta_prev", 52, 72),
                ("hu_prev", 53, 72),
                ("hv_prev", 52, 73)
            ]
        );
        let c = s.cells();
        assert_eq!(c.hu[3 * 50 + 7], 0.5 * (s.cur.hu.at(4, 8) + s.cur.hu.at(4, 9)));
        assert_eq!(c.hv[3 * 50 + 7], 0.5 * (s.cur.hv.at(4, 8) + s.cur.hv.at(5, 8)));
        let limit = s.dt_limit();
        let calm = 0.5 / ((9.81f64 * 60.0).sqrt() * (2.0f64 / 200.0 / 200.0).sqrt());
        assert!(limit < calm && limit > 0.9 * calm, "{limit} vs {calm}");
    }

    /// Sponges on all four sides (flow relaxation) hold their outer rows at the initial
    /// state.
    #[test]
    fn sponge_sides_relax_to_the_initial_state() {
        use super::super::grid::{Side, SpongeKind};
        let case = cases("CTCS")[0];
        let sponge = Side::Sponge { cells: 5, kind: SpongeKind::Relaxation };
        let sides = Sides { north: sponge, east: sponge, south: sponge, west: sponge };
        let p = case.physics(1.0, sides);
        let mut s = case.with_initial(&p, |init| Ctcs::<f64>::new(&p, init));
        let initial = s.cur.clone();
        for i in 0..50 {
            s.step(1.0, i == 0);
        }
        assert_sponges_held(&p, &initial, &s.cur);
    }

    /// Blocked sweeps give the bits of plain steps (both levels), for sweeps of several
    /// depths and bands (or `bands = 0`: one band in a pipeline of 3 stages), step counts
    /// they do not divide, 1 and 2 threads, f32 and f64, widths that are not multiples of the
    /// bands, and both variants of the scheme.
    #[test]
    fn blocked_steps_match_plain_steps() {
        use super::super::fd_boundary::cases::{busy_initial, busy_physics};
        fn check<T: Real>(nx: usize, ny: usize, compat: bool, steps: usize, bands: usize, threads: usize) {
            let mut p = busy_physics(nx, ny, 40.0);
            p.gpu_ocean_compat = compat;
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let tiling = match bands {
                0 => Tiling::pipelined_steps(nx + 2, steps, 1, 3),
                _ => Tiling::for_steps(nx + 2, steps, 1, bands),
            };
            let (plain, blocked) = pool.install(|| {
                let mut plain = busy_initial(&p, |init| Ctcs::<T>::new(&p, init));
                let mut blocked = busy_initial(&p, |init| Ctcs::<T>::new(&p, init));
                for i in 0..24 {
                    plain.step(1.0, i == 0);
                }
                blocked.step(1.0, true);
                let mut left = 23;
                while left > 0 {
                    let k = left.min(tiling.steps());
                    blocked.steps_blocked(1.0, &tiling, k);
                    left -= k;
                }
                (plain, blocked)
            });
            let what = format!("{nx}x{ny}, compat {compat}, {tiling}, {threads} threads, {}", T::PRECISION.name());
            assert!(plain.cur.eta.v.iter().all(|x| x.is_finite()), "{what}");
            assert!(plain.cur == blocked.cur && plain.prev == blocked.prev, "{what}");
        }
        for (nx, ny) in [(23, 17), (50, 9), (4, 3)] {
            for (steps, bands) in [(1, 1), (2, 2), (3, 1), (5, 3), (8, 2), (30, 1), (2, 0), (7, 0), (30, 0)] {
                for threads in [1, 2] {
                    for compat in [true, false] {
                        check::<f32>(nx, ny, compat, steps, bands, threads);
                        check::<f64>(nx, ny, compat, steps, bands, threads);
                    }
                }
            }
        }
    }

    /// Leaving out the Coriolis and viscosity terms where they are zero (`Consts::coriolis`)
    /// gives the bits of the full sums, zero signs included: from rest (every transport −0)
    /// with a compact bump, so that many sums are zeros of either sign, in both variants of the
    /// scheme, with and without friction and wind (a wind of −0 too), f32 and f64.
    #[test]
    fn zero_terms_left_out_keep_the_bits() {
        use super::super::fd_boundary::cases::busy_physics;
        fn full_step<T: Real>(s: &mut Ctcs<T>, first: bool) {
            if first {
                s.prev.clone_from(&s.cur);
            }
            let mut c = s.consts(s.interval(1.0, first));
            (c.coriolis, c.viscous) = (true, true);
            s.update(&c);
            s.prev.fill(&s.p, false, None);
            std::mem::swap(&mut s.cur, &mut s.prev);
        }
        fn check<T: Real>(compat: bool, f0: f64, viscosity: f64, friction: f64, wind: [f64; 2]) {
            let mut p = busy_physics(31, 23, viscosity);
            (p.f0, p.beta, p.friction, p.wind, p.gpu_ocean_compat) = (f0, 0.0, friction, wind, compat);
            let (lx, ly) = (p.nx as f64 * p.dx, p.ny as f64 * p.dy);
            let eta = |at: At| {
                let r2 = ((at.x / lx - 0.4).powi(2) + (at.y / ly - 0.5).powi(2)) / 0.04;
                (1.0 - r2).max(0.0).powi(2)
            };
            let rest = |_: At| -0.0;
            let depth = |at: At| 50.0 + 8.0 * (at.x / lx * 7.0).sin();
            let init = Initial { eta: &eta, hu: &rest, hv: &rest, depth: &depth };
            let (mut lean, mut full) = (Ctcs::<T>::new(&p, &init), Ctcs::<T>::new(&p, &init));
            let c = lean.consts(T::one());
            assert_eq!((c.coriolis, c.viscous), (f0 != 0.0, viscosity != 0.0));
            let bits = |s: &Ctcs<T>| {
                let fields = [&s.cur.eta, &s.cur.hu, &s.cur.hv, &s.prev.eta, &s.prev.hu, &s.prev.hv];
                fields.iter().flat_map(|f| f.v.iter().map(|x| x.f64().to_bits())).collect::<Vec<_>>()
            };
            for i in 0..40 {
                lean.step(1.0, i == 0);
                full_step(&mut full, i == 0);
                let what = format!("step {i}, compat {compat}, f0 {f0}, A {viscosity}, r {friction}, wind {wind:?}");
                assert!(bits(&lean) == bits(&full), "{what}, {}", T::PRECISION.name());
            }
        }
        for compat in [true, false] {
            for (f0, viscosity) in [(0.0, 0.0), (0.0, 40.0), (0.012, 0.0)] {
                for (friction, wind) in [(0.0, [0.0, 0.0]), (0.0, [-0.0, -0.0]), (0.003, [1e-4, -2e-4])] {
                    check::<f32>(compat, f0, viscosity, friction, wind);
                    check::<f64>(compat, f0, viscosity, friction, wind);
                }
            }
        }
    }
}
