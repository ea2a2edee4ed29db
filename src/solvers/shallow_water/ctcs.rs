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
//! them, and divisions by constants are multiplications by their reciprocals. This changes
//! results only at round-off level (the f32 regression errors stay ≈ 3e-6).
//!
//! CPU structure (spec §8): one fused pass, parallel over blocks of output rows, reads
//! H, η, U, V of level `n` and the centre values of level `n − 1`, and writes U, V, η of
//! level `n + 1` in place into the level `n − 1` buffers (10 values per cell); the north
//! boundary row of V (`ny + 1`) is one extra thin row. Then the sponge relaxation (if any),
//! the ghost pass (spec §4.3), and the two levels swap. Every value is computed by the same
//! expression whatever the split, so results are bitwise independent of the thread count.
//!
//! Storage follows [`super::fd_boundary`] (CTCS's own index convention).

use rayon::prelude::*;

use crate::real::Real;
use crate::solver::Place;

use super::fd_boundary::{self, ETA, HU, HV, ROWS, State};
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
    /// `tdt A (Δx² + Δy²)/(Δx² Δy²)`.
    pub(super) visc: T,
    pub(super) a: T,
    pub(super) minus_g: T,
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
    pub(super) wind_x: T,
    pub(super) wind_y: T,
    /// `+1`: advection added as `+N` (GPU Ocean), `−1`: as `−N` (physical); `P + s N` is
    /// exactly `N + P` or `P − N`.
    pub(super) adv_sign: T,
    pub(super) wall_n: bool,
    pub(super) wall_e: bool,
    pub(super) wall_s: bool,
    pub(super) wall_w: bool,
}

/// Level `n` and the constants the step reads.
struct Inputs<'a, T> {
    h: &'a Field<T>,
    eta: &'a Field<T>,
    hu: &'a Field<T>,
    hv: &'a Field<T>,
    f_vq: &'a [T],
    f_c: &'a [T],
}

impl<T: Real> Ctcs<T> {
    /// Sample the initial state of the case into both levels and apply the boundary pass.
    pub fn new(p: &Physics, init: &Initial) -> Self {
        let h = Field::sample(p, ETA, init.depth);
        let mut cur = State::sample(p, init);
        cur.fill(p, false);
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
            visc,
            a,
            minus_g: -g,
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
            wind_x: t(p.wind[0]),
            wind_y: t(p.wind[1]),
            adv_sign: if p.gpu_ocean_compat { T::one() } else { -T::one() },
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
    fn update(&mut self, tdt: T) {
        let c = self.consts(tdt);
        let (nx, ny) = (c.nx, c.ny);
        let inp = Inputs {
            h: &self.h,
            eta: &self.cur.eta,
            hu: &self.cur.hu,
            hv: &self.cur.hv,
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
            .for_each(|(i, ((e, u), v))| rows(1 + i * ROWS, e, u, v, &inp, &c));
        // The north boundary faces (row ny + 1) of V.
        let mut h = [vec![T::zero(); we], vec![T::zero(); we]];
        let mut rh = [vec![T::zero(); we], vec![T::zero(); we]];
        let mut rc = vec![T::zero(); nx + 1];
        for (i, l) in [ny, ny + 1].into_iter().enumerate() {
            depth_row(&mut h[i], &mut rh[i], l, &inp, &c);
        }
        corner_row(&mut rc, &h[0], &h[1], &c);
        v_row(&mut hv_north[..wv], ny + 1, &inp, &c, &rh[0], &rh[1], &rc);
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
    let (we, wu, wv) = (c.nx + 2, c.nx + 3, c.nx + 2);
    // Rolling rows shared by the U and V updates: h = H + η of cell rows l-1, l (then l,
    // l+1), 1/h of rows l-1, l, l+1, and 1/(corner depth) of the corner rows l-1/2, l+1/2.
    let mut h = [vec![T::zero(); we], vec![T::zero(); we]];
    let mut rh = [vec![T::zero(); we], vec![T::zero(); we], vec![T::zero(); we]];
    let mut rc = [vec![T::zero(); c.nx + 1], vec![T::zero(); c.nx + 1]];
    {
        let [h0, h1] = &mut h;
        let [rh0, rh1, _] = &mut rh;
        depth_row(h0, rh0, a - 1, inp, c);
        depth_row(h1, rh1, a, inp, c);
        corner_row(&mut rc[0], h0, h1, c);
    }
    for r in 0..e.len() / we {
        let l = a + r;
        {
            let [h_lo, h_hi] = &mut h;
            // h row l - 1 is no longer needed: row l + 1 takes its place.
            depth_row(h_lo, &mut rh[2], l + 1, inp, c);
            corner_row(&mut rc[1], h_hi, h_lo, c);
        }
        u_row(&mut u[r * wu..(r + 1) * wu], l, inp, c, &rh[1], &rc[0], &rc[1]);
        v_row(&mut v[r * wv..(r + 1) * wv], l, inp, c, &rh[0], &rh[1], &rc[0]);
        eta_row(&mut e[r * we..(r + 1) * we], l, inp, c);
        h.swap(0, 1);
        rh.rotate_left(1);
        rc.swap(0, 1);
    }
}

/// `h = H + η` of cell row `l` (all columns) and `1/h`.
#[inline(always)]
fn depth_row<T: Real>(h: &mut [T], inv: &mut [T], l: usize, inp: &Inputs<T>, c: &Consts<T>) {
    let w = c.nx + 2;
    let (h, inv) = (&mut h[..w], &mut inv[..w]);
    let (depth, eta) = (&inp.h.row(l)[..w], &inp.eta.row(l)[..w]);
    let one = T::one();
    for k in 0..w {
        h[k] = depth[k] + eta[k];
        inv[k] = one / h[k];
    }
}

/// `1/D` at the corners between cell rows `south` and `north` (their depths h), corner `c`
/// between columns `c` and `c + 1` (`c = 0..=nx`), `D = ¼((h_SW + h_SE) + (h_NW + h_NE))`.
#[inline(always)]
fn corner_row<T: Real>(out: &mut [T], south: &[T], north: &[T], c: &Consts<T>) {
    let m = c.nx + 1;
    let out = &mut out[..m];
    let (sw, se, nw, ne) = (&south[..m], &south[1..m + 1], &north[..m], &north[1..m + 1]);
    let (one, quarter) = (T::one(), T::of(0.25));
    for k in 0..m {
        out[k] = one / (quarter * ((sw[k] + se[k]) + (nw[k] + ne[k])));
    }
}

/// `len` values of row `row` of `f` from column `from`.
#[inline(always)]
fn seg<T: Real>(f: &Field<T>, row: usize, from: usize, len: usize) -> &[T] {
    &f.row(row)[from..from + len]
}

/// U of row `l` (1..=ny) on the faces `1..=nx+1`; `out` is the whole row, holding U⁰.
/// `rh`: 1/h of the cells of row `l`; `rc_s`, `rc_n`: 1/D of the corners south and north.
#[inline(always)]
fn u_row<T: Real>(
    out: &mut [T],
    l: usize,
    inp: &Inputs<T>,
    c: &Consts<T>,
    rh: &[T],
    rc_s: &[T],
    rc_n: &[T],
) {
    let nx = c.nx;
    let m = nx + 1;
    // Face k (1..=nx+1) at index k - 1: west cell k - 1, east cell k.
    let west = |f, row| seg(f, row, 0, m);
    let east = |f, row| seg(f, row, 1, m);
    let (h_w, h_e) = (west(inp.h, l), east(inp.h, l));
    let (e_w, e_e) = (west(inp.eta, l), east(inp.eta, l));
    let (rh_w, rh_e) = (&rh[..m], &rh[1..m + 1]);
    let (rc_s, rc_n) = (&rc_s[..m], &rc_n[..m]);
    let hu = inp.hu.row(l);
    let (u_m0, u_00, u_p0) = (&hu[..m], &hu[1..m + 1], &hu[2..m + 2]);
    let (u_0m, u_0p) = (&inp.hu.row(l - 1)[1..m + 1], &inp.hu.row(l + 1)[1..m + 1]);
    // V faces south (row l) and north (row l + 1) of the face, west and east of it.
    let (v_s_w, v_s_e, v_n_w, v_n_e) =
        (west(inp.hv, l), east(inp.hv, l), west(inp.hv, l + 1), east(inp.hv, l + 1));
    let (f_s, f_n) = (inp.f_vq[l], inp.f_vq[l + 1]);
    let u0 = &mut out[1..m + 1];
    let (half, quarter, one) = (T::of(0.5), T::of(0.25), T::one());
    let c = *c;
    macro_rules! body {
        ($k:ident, $inv_c:expr) => {{
            let k = $k;
            let h_x = half * (h_w[k] + h_e[k]);
            let f_v = quarter * (f_s * (v_s_w[k] + v_s_e[k]) + f_n * (v_n_w[k] + v_n_e[k]));
            let p_hat = c.minus_half_g * (e_e[k] * e_e[k] - e_w[k] * e_w[k]);
            let p = c.minus_g * h_x * (e_e[k] - e_w[k]) + p_hat;
            let (east, west) = (u_p0[k] + u_00[k], u_00[k] + u_m0[k]);
            let n_a = east * east * rh_e[k];
            let n_b = west * west * rh_w[k];
            let n_c = (u_0p[k] + u_00[k]) * (v_n_e[k] + v_n_w[k]) * rc_n[k];
            let n_d = (u_00[k] + u_0m[k]) * (v_s_e[k] + v_s_w[k]) * rc_s[k];
            let n = quarter * (n_a - n_b + c.dx_dy * (n_c - n_d));
            let old = u0[k];
            let e = (u_p0[k] - old + u_m0[k]) * c.inv_dx2 + (u_0p[k] - old + u_0m[k]) * c.inv_dy2;
            let adv = p + c.adv_sign * n;
            let rhs = old + c.tdt * (f_v + adv * c.inv_dx + c.wind_x + c.a * e);
            u0[k] = $inv_c(rhs, h_x);
        }};
    }
    if c.friction {
        for k in 0..m {
            body!(k, |rhs, h_x| rhs / (one + c.r_tdt / h_x + c.visc));
        }
    } else {
        for k in 0..m {
            body!(k, |rhs, _| rhs * c.inv_c);
        }
    }
    if c.wall_w {
        u0[0] = T::zero();
    }
    if c.wall_e {
        u0[nx] = T::zero();
    }
}

/// V of row `l` (1..=ny+1) on the columns `1..=nx`; `out` is the whole row, holding V⁰.
/// `rh_s`, `rh_n`: 1/h of the cell rows `l − 1` and `l`; `rc`: 1/D of the corners between them.
#[inline(always)]
fn v_row<T: Real>(
    out: &mut [T],
    l: usize,
    inp: &Inputs<T>,
    c: &Consts<T>,
    rh_s: &[T],
    rh_n: &[T],
    rc: &[T],
) {
    let nx = c.nx;
    let v0 = &mut out[1..nx + 1];
    if (l == 1 && c.wall_s) || (l == c.ny + 1 && c.wall_n) {
        v0.fill(T::zero());
        return;
    }
    // Column k (1..=nx) at index k - 1; cells south (row l - 1) and north (row l).
    let col = |f, row, off| seg(f, row, off, nx);
    let (h_s, h_n) = (col(inp.h, l - 1, 1), col(inp.h, l, 1));
    let (e_s, e_n) = (col(inp.eta, l - 1, 1), col(inp.eta, l, 1));
    let (rh_s, rh_n) = (&rh_s[1..nx + 1], &rh_n[1..nx + 1]);
    let (rc_w, rc_e) = (&rc[..nx], &rc[1..nx + 1]);
    let (v_m0, v_00, v_p0) = (col(inp.hv, l, 0), col(inp.hv, l, 1), col(inp.hv, l, 2));
    let (v_0m, v_0p) = (col(inp.hv, l - 1, 1), col(inp.hv, l + 1, 1));
    // U faces west (column k) and east (k + 1) of the face, in the rows south and north.
    let (u_s_w, u_s_e, u_n_w, u_n_e) =
        (col(inp.hu, l - 1, 1), col(inp.hu, l - 1, 2), col(inp.hu, l, 1), col(inp.hu, l, 2));
    let (f_s, f_n) = (inp.f_c[l - 1], inp.f_c[l]);
    let (half, quarter, one) = (T::of(0.5), T::of(0.25), T::one());
    let c = *c;
    macro_rules! body {
        ($k:ident, $inv_c:expr) => {{
            let k = $k;
            let h_y = half * (h_s[k] + h_n[k]);
            let f_u = quarter * (f_s * (u_s_w[k] + u_s_e[k]) + f_n * (u_n_w[k] + u_n_e[k]));
            let p_hat = c.minus_half_g * (e_n[k] * e_n[k] - e_s[k] * e_s[k]);
            let p = c.minus_g * h_y * (e_n[k] - e_s[k]) + p_hat;
            let (north, south) = (v_0p[k] + v_00[k], v_00[k] + v_0m[k]);
            let n_a = north * north * rh_n[k];
            let n_b = south * south * rh_s[k];
            let n_c = (u_n_e[k] + u_s_e[k]) * (v_p0[k] + v_00[k]) * rc_e[k];
            let n_d = (u_n_w[k] + u_s_w[k]) * (v_00[k] + v_m0[k]) * rc_w[k];
            let n = quarter * (n_a - n_b + c.dy_dx * (n_c - n_d));
            let old = v0[k];
            let e = (v_p0[k] - old + v_m0[k]) * c.inv_dx2 + (v_0p[k] - old + v_0m[k]) * c.inv_dy2;
            let adv = p + c.adv_sign * n;
            let rhs = old + c.tdt * (-f_u + adv * c.inv_dy + c.wind_y + c.a * e);
            v0[k] = $inv_c(rhs, h_y);
        }};
    }
    if c.friction {
        for k in 0..nx {
            body!(k, |rhs, h_y| rhs / (one + c.r_tdt / h_y + c.visc));
        }
    } else {
        for k in 0..nx {
            body!(k, |rhs, _| rhs * c.inv_c);
        }
    }
}

/// η of row `l` (1..=ny); `out` is the whole row, holding η⁰.
#[inline(always)]
fn eta_row<T: Real>(out: &mut [T], l: usize, inp: &Inputs<T>, c: &Consts<T>) {
    let nx = c.nx;
    let hu = inp.hu.row(l);
    let (u_w, u_e) = (&hu[1..nx + 1], &hu[2..nx + 2]);
    let (v_s, v_n) = (&inp.hv.row(l)[1..nx + 1], &inp.hv.row(l + 1)[1..nx + 1]);
    let eta0 = &mut out[1..nx + 1];
    let (tdt_dx, tdt_dy) = (c.tdt_dx, c.tdt_dy);
    for k in 0..nx {
        eta0[k] = eta0[k] - tdt_dx * (u_e[k] - u_w[k]) - tdt_dy * (v_n[k] - v_s[k]);
    }
}

/// [`Scheme::dt_limit`] of level `cur` (see there).
pub(super) fn dt_limit<T: Real>(p: &Physics, h: &Field<T>, cur: &State<T>) -> f64 {
    let depth = |l: usize, k: usize| h.at(l, k).f64() + cur.eta.at(l, k).f64();
    let h_max = fd_boundary::interior_max(p, depth);
    let u_max = fd_boundary::interior_max(p, |l, k| {
        let (u, v) = (&cur.hu, &cur.hv);
        let q = [u.at(l, k), u.at(l, k + 1), v.at(l, k), v.at(l + 1, k)];
        q.iter().map(|x| x.f64().abs()).fold(0.0, f64::max) / depth(l, k)
    });
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
        self.update(self.interval(dt, first));
        if let Some(ext) = &self.exterior {
            self.prev.relax(ext, &self.p);
        }
        self.prev.fill(&self.p, false);
        std::mem::swap(&mut self.cur, &mut self.prev);
    }

    /// Half the 1-D C-grid limit, `½ / ((max|u| + sqrt(g max h)) sqrt(1/dx² + 1/dy²))`, over
    /// the interior cells of the newest level: `h = H + η`, `|u|` the largest of the four
    /// face transports of the cell divided by its h.
    fn dt_limit(&self) -> f64 {
        dt_limit(&self.p, &self.h, &self.cur)
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
}
