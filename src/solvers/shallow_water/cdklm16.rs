//! CDKLM16 (Chertock, Dudzinski, Kurganov & Lukáčová-Medvid'ová 2018): the well-balanced
//! central-upwind scheme with geostrophic reconstruction that GPU Ocean profiles (spec §5,
//! the paper version `12536844` with the β offset fix). Cell-centred η, hu, hv with two ghost
//! layers, depth at the cell corners, SSP Runge-Kutta in time (Heun by default).
//!
//! One stage, per interior row band (see [`super::fv`] for the driver):
//! - velocities `u = hu / h`, `v = hv / h`, `h = η + Bm`, in every cell that is read;
//! - x: minmod slopes of u, v (full-cell differences), the geostrophic potential difference
//!   `Kx = MM(Θg[Δη - c_V Σv], ...)` with `c_V = Δx f / (2g)`, face depths
//!   `h∓ = η + H_f ± (Kx + Δx f v) / (2g)` (cell-centre v) and the central-upwind flux with
//!   upwinded transverse momentum;
//! - y: the same with `Ly` (per-row f) and `h∓ = η + H_f ± (Ly - Δy f u) / (2g)`;
//! - `L = -ΔF/Δx - ΔG/Δy + (f hv, -f hu) + g (η + Bm) (H_E - H_W, H_N - H_S) / Δ + (X, Y)`.
//!
//! f is evaluated at the cell centre of each row, `y = (j + ½) Δy` from the interior's south
//! face (spec §1), also in the ghost rows, except that across a periodic north-south seam a
//! ghost row takes the f of the row it copies (mass conservation). `gpu_ocean_compat` changes
//! only the friction factor (see [`super::fv`]).

use std::ops::Range;

use crate::padded::Padded;
use crate::real::Real;

use super::fv::{Fv, Grid, Operator, Q, RowSink, ScratchRows, Sink, XFlux, minmod, rows2};

/// The CDKLM16 scheme on the CPU: the shared finite-volume stages with its operator.
pub(super) type Cdklm16<T> = Fv<T, Op>;

/// CDKLM16's spatial operator.
pub(super) struct Op;

/// The central-upwind flux of spec §5.2 step 4 from the reconstructed depth, normal and
/// tangential velocity on both sides of a face: `(h un, h un² + ½ g h², h un ut)`, the last
/// one upwinded by the sign of `un⁻ + un⁺`.
#[inline(always)]
fn flux<T: Real>(hm: T, um: T, vm: T, hp: T, up: T, vp: T, g: T) -> [T; 3] {
    let half = T::of(0.5);
    let (cm, cp) = ((g * hm).sqrt(), (g * hp).sqrt());
    let am = (um - cm).min(up - cp).min(T::zero());
    let ap = (um + cm).max(up + cp).max(T::zero());
    let (hum, hup) = (hm * um, hp * up);
    let f2m = hum * um + half * g * hm * hm;
    let f2p = hup * up + half * g * hp * hp;
    let d = ap - am;
    let apam = ap * am;
    let f1 = (ap * hum - am * hup + apam * (hp - hm)) / d;
    let f2 = (ap * f2m - am * f2p + apam * (hup - hum)) / d;
    let f3 = if um + up > T::zero() { hum * vm } else { hup * vp };
    [f1, f2, f3]
}

/// `(u, v) = (hu / h, hv / h)` with `h = η + Bm`.
#[inline(always)]
fn velocity<T: Real>(eta: T, bm: T, hu: T, hv: T) -> (T, T) {
    let h = eta + bm;
    (hu / h, hv / h)
}

/// Rows `r-1`, `r` and `r+1` of a three-row ring (row r in slot r % 3), the last one to write.
#[inline(always)]
fn rows3<X>(ring: &mut [X; 3], r: usize) -> [&mut X; 3] {
    let [a, b, c] = ring;
    match r % 3 {
        0 => [c, a, b],
        1 => [a, b, c],
        _ => [b, c, a],
    }
}

/// The read-only rows and constants of one row's y reconstruction and y flux
/// ([`Scratch::reconstruct_y`]), interior columns.
struct YRow<'a, T> {
    /// Row r+1 of η, hu, hv and Bm.
    next: [&'a [T]; 4],
    /// η of rows r-1 and r.
    em: &'a [T],
    e0: &'a [T],
    /// Velocities of rows r-1 and r.
    um: &'a [T],
    u0: &'a [T],
    vm: &'a [T],
    v0: &'a [T],
    /// Corner depths of row r (the face between rows r-1 and r), nx+1 of them.
    bi: &'a [T],
    /// Reconstruction of row r-1: `t` and the north face velocities.
    tm: &'a [T],
    unm: &'a [T],
    vnm: &'a [T],
    /// f of rows r-1, r, r+1.
    f: [T; 3],
}

impl<T: Real> YRow<'_, T> {
    /// The loop of [`Scratch::reconstruct_y`]. Everything it writes is an argument of its own,
    /// which tells the compiler that those rows overlap nothing else: with that many rows it
    /// would otherwise need more run-time overlap checks than it makes, and leave the loop in
    /// scalar code (4 times slower).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn run<const FLUX: bool>(
        &self,
        gr: &Grid<T>,
        up: &mut [T],
        vp: &mut [T],
        t: &mut [T],
        un: &mut [T],
        vn: &mut [T],
        us: &mut [T],
        vs: &mut [T],
        gn1: &mut [T],
        gn2: &mut [T],
        gn3: &mut [T],
    ) {
        let nx = gr.nx;
        let (half, two) = (T::of(0.5), T::of(2.0));
        let (theta, g, dy) = (gr.theta, gr.g, gr.dy);
        let (tg, hg, g2) = (theta * g, half * g, two * g);
        let cu = dy / g2;
        let [fm, f0, fp] = self.f;
        let dyf = dy * f0;
        let [eta, hu, hv, bm] = self.next.map(|x| &x[..nx]);
        let (em, e0, ep) = (&self.em[..nx], &self.e0[..nx], eta);
        let (um, u0, vm, v0) = (&self.um[..nx], &self.u0[..nx], &self.vm[..nx], &self.v0[..nx]);
        let (bi, tm, unm, vnm) = (&self.bi[..nx + 1], &self.tm[..nx], &self.unm[..nx], &self.vnm[..nx]);
        let (up, vp, t, un, vn) = (&mut up[..nx], &mut vp[..nx], &mut t[..nx], &mut un[..nx], &mut vn[..nx]);
        let (us, vs) = (&mut us[..nx], &mut vs[..nx]);
        let (gn1, gn2, gn3) = (&mut gn1[..nx], &mut gn2[..nx], &mut gn3[..nx]);
        for i in 0..nx {
            (up[i], vp[i]) = velocity(eta[i], bm[i], hu[i], hv[i]);
            let uy = minmod(theta * (u0[i] - um[i]), half * (up[i] - um[i]), theta * (up[i] - u0[i]));
            let vy = minmod(theta * (v0[i] - vm[i]), half * (vp[i] - vm[i]), theta * (vp[i] - v0[i]));
            let (fum, fu0, fup) = (fm * um[i], f0 * u0[i], fp * up[i]);
            let b = tg * ((e0[i] - em[i]) + cu * (fu0 + fum));
            let cc = hg * ((ep[i] - em[i]) + cu * (fup + two * fu0 + fum));
            let d = tg * ((ep[i] - e0[i]) + cu * (fu0 + fup));
            let ly = minmod(b, cc, d);
            t[i] = (ly - dyf * u0[i]) / g2;
            (un[i], vn[i]) = (u0[i] + half * uy, v0[i] + half * vy);
            (us[i], vs[i]) = (u0[i] - half * uy, v0[i] - half * vy);
        }
        if FLUX {
            // Through the face between rows r-1 and r: north side of row r-1, south of row r.
            // A loop of its own, for the reason of `XFlux::fluxes`.
            let (us, vs) = (&us[..nx], &vs[..nx]);
            let t = &t[..nx];
            for i in 0..nx {
                let hf = half * (bi[i] + bi[i + 1]);
                let hm = (em[i] + hf) + tm[i];
                let hp = (e0[i] + hf) - t[i];
                let [f1, fn_, ft] = flux(hm, vnm[i], unm[i], hp, vs[i], us[i], g);
                (gn1[i], gn2[i], gn3[i]) = (f1, ft, fn_);
            }
        }
    }
}

/// The rows one row's x fluxes are formed from: the x reconstruction and what it started from.
/// The flux is a method rather than a closure, which the compiler did not inline into the loop,
/// leaving it in scalar code.
struct XFaces<'a, T> {
    e: &'a [T],
    u: &'a [T],
    v: &'a [T],
    ux: &'a [T],
    vx: &'a [T],
    tx: &'a [T],
    /// Corner depths of the row's south and north faces.
    bi0: &'a [T],
    bi1: &'a [T],
    g: T,
}

impl<T: Real> XFlux<T> for XFaces<'_, T> {
    /// The central-upwind flux through face k, between cells k and k+1.
    #[inline(always)]
    fn flux(&self, k: usize) -> [T; 3] {
        let half = T::of(0.5);
        let (e, u, v, ux, vx, tx) = (self.e, self.u, self.v, self.ux, self.vx, self.tx);
        let hf = half * (self.bi0[k + 1] + self.bi1[k + 1]);
        let hm = (e[k] + hf) + tx[k];
        let hp = (e[k + 1] + hf) - tx[k + 1];
        let (um, up) = (u[k] + half * ux[k], u[k + 1] - half * ux[k + 1]);
        let (vm, vp) = (v[k] + half * vx[k], v[k + 1] - half * vx[k + 1]);
        flux(hm, um, vm, hp, up, vp, self.g)
    }
}

/// Per-row scratch of one band.
struct Scratch<T> {
    /// Velocities u, v of three consecutive rows (all columns), row r in slot r % 3.
    u: [Padded<T>; 3],
    v: [Padded<T>; 3],
    /// y reconstruction of two consecutive rows (interior columns), row r in slot r % 2:
    /// `t = (Ly - Δy f u) / (2g)` and the velocities at the north face.
    t: [Padded<T>; 2],
    un: [Padded<T>; 2],
    vn: [Padded<T>; 2],
    /// Velocities at the south face of the latest row reconstructed (read by its y flux).
    us: Padded<T>,
    vs: Padded<T>,
    /// y fluxes through the south and north faces of the current row.
    gs: [Padded<T>; 3],
    gn: [Padded<T>; 3],
    /// x reconstruction (all columns).
    ux: Padded<T>,
    vx: Padded<T>,
    tx: Padded<T>,
    /// x fluxes of one row, face k (between cells k and k+1) at index k.
    fx: [Padded<T>; 3],
}

impl<T: Real> Scratch<T> {
    fn new(nx: usize, w: usize) -> Self {
        let mut a = ScratchRows::default();
        Scratch {
            u: a.three(w),
            v: a.three(w),
            t: [a.zeros(nx), a.zeros(nx)],
            un: [a.zeros(nx), a.zeros(nx)],
            vn: [a.zeros(nx), a.zeros(nx)],
            us: a.zeros(nx),
            vs: a.zeros(nx),
            gs: a.three(nx),
            gn: a.three(nx),
            ux: a.zeros(w),
            vx: a.zeros(w),
            tx: a.zeros(w),
            fx: a.three(w),
        }
    }

    /// Velocities of stored row `r`.
    #[inline(always)]
    fn velocities(&mut self, gr: &Grid<T>, q: &Q<T>, r: usize) {
        let s = r % 3;
        let w = gr.w;
        let (e, hu, hv, bm) = (&q.eta.row(r)[..w], &q.hu.row(r)[..w], &q.hv.row(r)[..w], &gr.bm.row(r)[..w]);
        let (u, v) = (&mut self.u[s][..w], &mut self.v[s][..w]);
        for k in 0..w {
            (u[k], v[k]) = velocity(e[k], bm[k], hu[k], hv[k]);
        }
    }

    /// y reconstruction of stored row `r` from the velocities of rows r-1 and r, with the
    /// velocities of row r+1 formed in the same loop (its ghost columns just before and after
    /// it), and with `FLUX` the y fluxes through the face between rows r-1 and r into `gn`
    /// (from the reconstruction of row r-1) in a loop after it.
    /// That first loop is the first to read row r+1 of the fields, and its arithmetic hides
    /// the wait for them.
    #[inline(always)]
    fn reconstruct_y<const FLUX: bool>(&mut self, gr: &Grid<T>, q: &Q<T>, r: usize) {
        let (nx, w) = (gr.nx, gr.w);
        let next = [&q.eta, &q.hu, &q.hv, &gr.bm].map(|f| &f.row(r + 1)[..w]);
        let [um, u0, up] = rows3(&mut self.u, r);
        let [vm, v0, vp] = rows3(&mut self.v, r);
        let (up, vp) = (&mut up[..w], &mut vp[..w]);
        let ghosts = |up: &mut [T], vp: &mut [T], ks: Range<usize>| {
            for k in ks {
                (up[k], vp[k]) = velocity(next[0][k], next[3][k], next[1][k], next[2][k]);
            }
        };
        // The ghost columns in the order of the row in memory: the east ones after the loop,
        // when the stream has reached them (read first, they missed the cache on every row).
        ghosts(up, vp, 0..2);
        let c = 2..nx + 2;
        let ([tm, t], [unm, un], [vnm, vn]) = (rows2(&mut self.t, r), rows2(&mut self.un, r), rows2(&mut self.vn, r));
        let y = YRow {
            next: next.map(|x| &x[c.clone()]),
            em: &q.eta.row(r - 1)[c.clone()],
            e0: &q.eta.row(r)[c.clone()],
            um: &um[c.clone()],
            u0: &u0[c.clone()],
            vm: &vm[c.clone()],
            v0: &v0[c.clone()],
            bi: &gr.bi.row(r)[2..nx + 3],
            tm,
            unm,
            vnm,
            f: [gr.f[r - 1], gr.f[r], gr.f[r + 1]],
        };
        let [g1, g2, g3] = &mut self.gn;
        y.run::<FLUX>(gr, &mut up[c.clone()], &mut vp[c], t, un, vn, &mut self.us, &mut self.vs, g1, g2, g3);
        ghosts(up, vp, nx + 2..w);
    }

    /// x reconstruction, x fluxes and L of interior row `l` into `out` (velocities of row l in
    /// place, y fluxes of its faces in `gs`, `gn`).
    #[inline(always)]
    fn row(&mut self, gr: &Grid<T>, q: &Q<T>, l: usize, out: &mut impl RowSink<T>) {
        // Lets the compiler drop the bounds checks of the loops below.
        assert_eq!(gr.w, gr.nx + 4);
        let (nx, w, half, two) = (gr.nx, gr.w, T::of(0.5), T::of(2.0));
        let (theta, g, dx, dy) = (gr.theta, gr.g, gr.dx, gr.dy);
        let (tg, hg, g2) = (theta * g, half * g, two * g);
        let f = gr.f[l];
        let dxf = dx * f;
        let cv = dxf / g2;
        let (u, v) = (&self.u[l % 3][..w], &self.v[l % 3][..w]);
        let e = &q.eta.row(l)[..w];
        let (ux, vx, tx) = (&mut self.ux[..w], &mut self.vx[..w], &mut self.tx[..w]);
        for k in 1..w - 1 {
            ux[k] = minmod(theta * (u[k] - u[k - 1]), half * (u[k + 1] - u[k - 1]), theta * (u[k + 1] - u[k]));
            vx[k] = minmod(theta * (v[k] - v[k - 1]), half * (v[k + 1] - v[k - 1]), theta * (v[k + 1] - v[k]));
            let b = tg * ((e[k] - e[k - 1]) - cv * (v[k] + v[k - 1]));
            let c = hg * ((e[k + 1] - e[k - 1]) - cv * (v[k + 1] + two * v[k] + v[k - 1]));
            let d = tg * ((e[k + 1] - e[k]) - cv * (v[k] + v[k + 1]));
            tx[k] = (minmod(b, c, d) + dxf * v[k]) / g2;
        }
        let (bi0, bi1) = (&gr.bi.row(l)[..w + 1], &gr.bi.row(l + 1)[..w + 1]);
        let x_faces = XFaces { e, u, v, ux, vx, tx, bi0, bi1, g };
        let (hu, hv, bm) = (&q.hu.row(l)[..w], &q.hv.row(l)[..w], &gr.bm.row(l)[..w]);
        let [gs1, gs2, gs3] = &self.gs;
        let (gs1, gs2, gs3) = (&gs1[..nx], &gs2[..nx], &gs3[..nx]);
        let [gn1, gn2, gn3] = &self.gn;
        let (gn1, gn2, gn3) = (&gn1[..nx], &gn2[..nx], &gn3[..nx]);
        let [x, y] = gr.wind;
        let [fx1, fx2, fx3] = &mut self.fx;
        x_faces.fluxes(nx, fx1, fx2, fx3);
        let (fx1, fx2, fx3) = (&fx1[..nx + 2], &fx2[..nx + 2], &fx3[..nx + 2]);
        for i in 0..nx {
            let k = i + 2;
            let fe = [fx1[k], fx2[k], fx3[k]];
            let fw = [fx1[k - 1], fx2[k - 1], fx3[k - 1]];
            let h_w = half * (bi0[k] + bi1[k]);
            let h_e = half * (bi0[k + 1] + bi1[k + 1]);
            let h_s = half * (bi0[k] + bi0[k + 1]);
            let h_n = half * (bi1[k] + bi1[k + 1]);
            let gh = g * (e[k] + bm[k]);
            let l1 = -(fe[0] - fw[0]) / dx - (gn1[i] - gs1[i]) / dy;
            let l2 = -(fe[1] - fw[1]) / dx - (gn2[i] - gs2[i]) / dy + f * hv[k] + gh * (h_e - h_w) / dx + x;
            let l3 = -(fe[2] - fw[2]) / dx - (gn3[i] - gs3[i]) / dy - f * hu[k] + gh * (h_n - h_s) / dy + y;
            out.put(i, [l1, l2, l3]);
        }
    }
}

impl<T: Real> Operator<T> for Op {
    #[inline(always)]
    fn band(&self, gr: &Grid<T>, q: &Q<T>, rows: Range<usize>, sink: &mut impl Sink<T>) {
        let mut s = Scratch::new(gr.nx, gr.w);
        let l0 = rows.start;
        s.velocities(gr, q, l0 - 2);
        s.velocities(gr, q, l0 - 1);
        s.reconstruct_y::<false>(gr, q, l0 - 1);
        s.reconstruct_y::<true>(gr, q, l0);
        std::mem::swap(&mut s.gs, &mut s.gn);
        for l in rows {
            s.reconstruct_y::<true>(gr, q, l + 1);
            s.row(gr, q, l, &mut sink.row(l));
            std::mem::swap(&mut s.gs, &mut s.gn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numerics::rk;
    use crate::solvers::shallow_water::grid::Physics;
    use crate::solvers::shallow_water::scheme::{Initial, Scheme};
    use crate::solvers::shallow_water::fv::testing::{self, Case};
    use crate::solvers::shallow_water::grid::{At, Side, Sides, SpongeKind};

    fn make(p: &Physics, init: &Initial) -> Cdklm16<f32> {
        Cdklm16::new(p, init, rk::Scheme::SspRk2, Op)
    }

    const DT: f64 = 0.9;

    /// The 15 GPU Ocean regression cases (spec §9.1), f32, Θ = 1.3, Heun, Δt = 0.9 s.
    #[test]
    fn gpu_ocean_regression() {
        let mut cases = vec![];
        for bc in ["wallBC", "periodic", "periodicNS", "periodicEW"] {
            for init in ["central", "corner", "upperCorner"] {
                cases.push(Case { bc, init, bathymetry: false });
            }
        }
        cases.push(Case { bc: "coriolis", init: "central", bathymetry: false });
        cases.push(Case { bc: "betamodel", init: "central", bathymetry: false });
        cases.push(Case { bc: "wallBC", init: "central", bathymetry: true });
        let failures = testing::regression("CDKLM16", DT, &cases, make, 5e-4);
        assert!(failures.is_empty(), "over 5e-4 relative:\n{}", failures.join("\n"));
    }

    /// The f64 build of the scheme against the same (f32) arrays.
    #[test]
    fn f64_regression() {
        let cases = [
            Case { bc: "betamodel", init: "central", bathymetry: false },
            Case { bc: "wallBC", init: "central", bathymetry: true },
        ];
        let make = |p: &Physics, i: &Initial| Cdklm16::<f64>::new(p, i, rk::Scheme::SspRk2, Op);
        let failures = testing::regression("CDKLM16", DT, &cases, make, 5e-4);
        assert!(failures.is_empty(), "over 5e-4 relative:\n{}", failures.join("\n"));
    }

    /// Lake at rest over the Case-A bathymetry, 64², 1000 steps. η stays within 1e-6 m in f32
    /// (spec §5.5 measured 1.2e-7 m). The transports reach about 2e-6 m²/s in f32: the face
    /// pressure ½gh² ≈ 7 m³/s² is rounded to ≈ 5e-7 per face, which at Δx = 1 m and Δt ≈ 0.054 s
    /// puts ≈ 3e-8 of noise into hu, hv per step, accumulating like a random walk (≈ 1e-7 after
    /// one step, 1.7e-6 after 1000, 2.4e-6 at 200²). So hu, hv are held to 1e-5 in f32, and the
    /// f64 run shows the balance itself is exact to round-off.
    #[test]
    fn lake_at_rest() {
        let [eta, hu, hv] = testing::lake_at_rest(64, 1000, make);
        eprintln!("CDKLM16 lake at rest f32, 64x64, 1000 steps: max |eta| {eta:.1e}, |hu| {hu:.1e}, |hv| {hv:.1e}");
        assert!(eta <= 1e-6 && hu <= 1e-5 && hv <= 1e-5, "{eta:e} {hu:e} {hv:e}");
        let [eta, hu, hv] = testing::lake_at_rest(64, 1000, |p, i| Cdklm16::<f64>::new(p, i, rk::Scheme::SspRk2, Op));
        eprintln!("CDKLM16 lake at rest f64, 64x64, 1000 steps: max |eta| {eta:.1e}, |hu| {hu:.1e}, |hv| {hv:.1e}");
        assert!(eta <= 1e-12 && hu <= 1e-12 && hv <= 1e-12, "{eta:e} {hu:e} {hv:e}");
    }

    /// Spec §5.5: u = 0, a Gaussian jet v(x), η in discrete geostrophic balance
    /// `η_{k+1} - η_k = Δx f (v_k + v_{k+1}) / (2g)`, periodic N-S, walls E-W, 300 steps.
    #[test]
    fn geostrophic_jet_stays_balanced() {
        let sides = Sides { north: Side::Periodic, east: Side::Wall, south: Side::Periodic, west: Side::Wall };
        let p = testing::physics(50, 20, 200.0, 0.01, 0.0, sides);
        let (h0, xc) = (60.0, 50.0 * 200.0 / 2.0);
        let v: Vec<f64> = (-2..52).map(|k| 0.5 * (-(((k as f64 + 0.5) * p.dx - xc) / 1000.0).powi(2)).exp()).collect();
        let mut eta = vec![0.0];
        for k in 1..v.len() {
            eta.push(eta[k - 1] + p.dx * p.f0 * (v[k - 1] + v[k]) / (2.0 * p.g));
        }
        let mean = eta[2..52].iter().sum::<f64>() / 50.0;
        let eta: Vec<f64> = eta.iter().map(|e| e - mean).collect();
        let (e2, v2) = (eta.clone(), v.clone());
        let init_eta = move |at: At| e2[(at.i + 2) as usize];
        let init_hv = move |at: At| v2[(at.i + 2) as usize] * (h0 + eta[(at.i + 2) as usize]);
        let zero = |_: At| 0.0;
        let depth = |_: At| h0;
        let mut s = make(&p, &Initial { eta: &init_eta, hu: &zero, hv: &init_hv, depth: &depth });
        let c0 = s.cells();
        for i in 0..300 {
            s.step(0.9, i == 0);
        }
        let c = s.cells();
        let max = |a: &[f32]| a.iter().fold(0.0f64, |m, &x| m.max((x as f64).abs()));
        let diff =
            |a: &[f32], b: &[f32]| a.iter().zip(b).fold(0.0f64, |m, (&x, &y)| m.max((x as f64 - y as f64).abs()));
        let range = c0.eta.iter().fold(f64::MIN, |m, &x| m.max(x as f64))
            - c0.eta.iter().fold(f64::MAX, |m, &x| m.min(x as f64));
        let d_eta = diff(&c.eta, &c0.eta) / range;
        let d_hv = diff(&c.hv, &c0.hv) / max(&c0.hv);
        let d_hu = max(&c.hu) / max(&c0.hv);
        eprintln!(
            "CDKLM16 geostrophic jet, 300 steps: max|d eta| / range {d_eta:.1e} (range {range:.3} m), \
             max|d hv| / max|hv| {d_hv:.1e}, max|hu| / max|hv| {d_hu:.1e}"
        );
        for d in [d_eta, d_hv, d_hu] {
            assert!(d <= 1e-5, "{d:e}");
        }
    }

    #[test]
    fn mass_is_conserved() {
        for (bc, init, bathymetry) in [
            ("wallBC", "central", false),
            ("wallBC", "central", true),
            ("periodic", "corner", false),
            ("periodicNS", "upperCorner", false),
            ("periodicEW", "corner", false),
        ] {
            let drift = testing::mass_drift(&Case { bc, init, bathymetry }, DT, make);
            eprintln!("CDKLM16 mass drift {bc} {init} bathymetry {bathymetry}: {drift:.1e}");
            assert!(drift <= 1e-6, "{bc} {init}: {drift:e}");
        }
    }

    /// A β-plane across a periodic north-south seam: the seam face is reconstructed alike from
    /// both sides, so mass is conserved to round-off (with the ghost rows' true f, 55 % of the
    /// hump's mass was created in 400 steps of this case).
    #[test]
    fn mass_is_conserved_across_a_periodic_seam_on_a_beta_plane() {
        let sides = Sides { north: Side::Periodic, east: Side::Periodic, south: Side::Periodic, west: Side::Periodic };
        let p = testing::physics(40, 46, 1000.0, 0.0, 1e-7, sides);
        let hump = |at: At| {
            let (x, y) = (at.i as f64 - 20.0, at.j as f64 - 43.0);
            0.5 * (-(x * x + y * y) / 16.0).exp()
        };
        let (zero, depth) = (|_: At| 0.0, |_: At| 10.0);
        let mut s = Cdklm16::<f64>::new(&p, &Initial { eta: &hump, hu: &zero, hv: &zero, depth: &depth }, rk::Scheme::SspRk2, Op);
        let m0 = testing::mass(&s);
        for i in 0..400 {
            s.step(25.0, i == 0);
        }
        let drift = (testing::mass(&s) - m0).abs() / m0;
        eprintln!("CDKLM16 beta-plane periodic N-S, 400 steps: relative mass change {drift:.1e}");
        assert!(drift <= 1e-12, "{drift:e}");
    }

    #[test]
    fn central_bump_is_mirror_symmetric() {
        let [x, y] = testing::mirror_asymmetry(DT, make);
        assert!(x == 0.0 && y == 0.0, "asymmetry x {x:e}, y {y:e}");
    }

    /// Bit for bit: the tails that reach the boundary in 50 s underflow to zero.
    #[test]
    fn periodic_equals_wall_for_the_central_bump() {
        let differ = testing::periodic_minus_wall(DT, make);
        eprintln!("CDKLM16 periodic - wall, relative: {differ:?}");
        assert!(differ.iter().all(|(_, d)| *d == 0.0), "{differ:?}");
    }

    #[test]
    fn vector_and_plain_code_paths_agree_bitwise() {
        testing::bands_agree(|p, i| Cdklm16::<f32>::new(p, i, rk::Scheme::SspRk2, Op));
    }

    /// `cpu.subnormals: flush` changes only what lies below the normal range.
    #[test]
    fn flushing_subnormals_changes_only_tiny_values() {
        let [keep, flush, diff] = testing::flush_subnormals(DT, make);
        eprintln!("CDKLM16 subnormal values: {keep} kept, {flush} flushed; largest difference {diff:.1e} of the largest value");
        assert!(keep > 0.0 && flush == 0.0 && diff <= 1e-30, "{keep} {flush} {diff:e}");
    }

    #[test]
    fn bits_do_not_depend_on_the_thread_count() {
        let one = testing::busy_run(1, 20, make);
        assert!(one == testing::busy_run(2, 20, make));
        assert!(one == testing::busy_run(3, 20, make));
    }

    /// The friction divisor reproduces GPU Ocean's stages bit for bit with `gpu_ocean_compat`
    /// and is `1 + b c r dt / h` without.
    #[test]
    fn friction_and_wind() {
        for compat in [true, false] {
            let (got, want) = testing::friction_step(compat, make);
            assert_eq!(f32::from_bits(got), f32::from_bits(want), "compat {compat}");
            assert_eq!(got, want, "compat {compat}");
        }
    }

    #[test]
    fn cfl_reduction_equals_serial_formula() {
        let (parallel, serial) = testing::cfl_pair(make);
        assert_eq!(parallel.to_bits(), serial.to_bits(), "{parallel} {serial}");
    }

    /// The row next to a relaxation sponge is reset to the exterior (initial) state every stage,
    /// and a bump inside stays finite.
    #[test]
    fn sponge_relaxes_to_the_initial_state() {
        let sponge = Side::Sponge { cells: 6, kind: SpongeKind::Relaxation };
        let mut p = testing::physics(
            50,
            70,
            200.0,
            0.01,
            0.0,
            Sides { north: sponge, east: sponge, south: sponge, west: sponge },
        );
        p.gpu_ocean_compat = false;
        let c = Case { bc: "wallBC", init: "corner", bathymetry: false };
        let mut s = testing::case_initial(&c, &p, |i| make(&p, i));
        let first = s.arrays().swap_remove(0).2;
        testing::run_to(&mut s, 50.0, DT);
        let eta = s.arrays().swap_remove(0).2;
        for k in 2..52 {
            assert_eq!(eta.at(2, k), first.at(2, k));
            assert_eq!(eta.at(71, k), first.at(71, k));
        }
        assert!(testing::max_abs(&s).is_finite());
    }

    /// Throughput at 2048² (spec §9.2 benchmark setup), `cargo test --release --lib throughput --
    /// --ignored --test-threads=1 --nocapture`.
    /// Per cell and step, counted by hand from the code (add, mul, div, sqrt, min, max): two
    /// stages of about 3 (velocities) + 65 (y reconstruction) + 46 (y flux) + 56 (x
    /// reconstruction) + 54 (x flux) + 39 (L) + 10 (stage update) = 273 flops
    /// (`SchemeName::flops_per_cell_stage`, which `sim bench` sets against PEAK); minimum traffic:
    /// spec §11's 88 B, as `sim bench` counts (stage 1 strictly needs 32 B: reads η, hu, hv, Bm,
    /// Bi, writes η, hu, hv; stage 2 also reads Q^n, 44 B).
    #[test]
    #[ignore]
    fn throughput() {
        let name = super::super::params::SchemeName::Cdklm16;
        let flops = 2.0 * name.flops_per_cell_stage().unwrap();
        testing::throughput("CDKLM16", 2048, 5, flops, 4.0 * name.floats_per_cell(2), make);
    }
}
