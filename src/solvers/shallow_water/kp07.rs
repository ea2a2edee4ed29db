//! KP07 (Kurganov & Petrova 2007): GPU Ocean's other finite-volume scheme, a well-balanced
//! central-upwind scheme that reconstructs the conserved variables themselves (spec §6). Same
//! grid, bathymetry, wall mirror, Runge-Kutta stages and ghost fill as CDKLM16.
//!
//! One stage, per interior row band (see [`super::fv`] for the driver):
//! - half-slopes `S = ½ MM(Θ Δ⁻q, ½ (Δ⁻q + Δ⁺q), Θ Δ⁺q)` of η, hu, hv per direction, the η
//!   slope then limited so that both face depths stay non-negative (`η - S ≥ -H_W`, then
//!   `η + S ≥ -H_E`);
//! - at a face of depth `H_f`: `h = η + H_f`, `u = hu / h`, the central-upwind flux of
//!   `(hu, hu u + ½ g h², hv u)` with the diffusion `a⁺a⁻ (Q⁺ - Q⁻)` on all three components
//!   (the η jump is the h jump), zero where `|a⁺ - a⁻| < 1e-4`; in y with (η, hv, hu);
//! - bathymetry source `½ g (H_E - H_W) (h_E + h_W) / Δx` with the face depths
//!   `h_E = η + S + H_E`, `h_W = η - S + H_W` (same in y), explicit Coriolis `(f hv, -f hu)`
//!   with f at the cell centre (GPU Ocean evaluates it two rows further south, at
//!   `(j - 1.5) Δy` for interior row j; only β ≠ 0 sees the difference, and no GPU Ocean test
//!   has it), and the wind `(X, Y)`.
//!
//! This reproduces GPU Ocean's 13 KP07 regression arrays (walls, periodic, periodic N-S and E-W
//! with the three bumps, Coriolis) to ≤ 4e-5 relative in f32 (see the tests).

use std::ops::Range;

use crate::padded::Padded;
use crate::real::Real;

use super::fv::{Fv, Grid, Operator, Q, RowSink, ScratchRows, Sink, XFlux, minmod, rows2};
use super::grid::Field;

/// The KP07 scheme on the CPU: the shared finite-volume stages with its operator.
pub(super) type Kp07<T> = Fv<T, Op>;

/// KP07's spatial operator.
pub(super) struct Op;

/// Below this `|a⁺ - a⁻|` the flux is zero (dry faces).
const FLUX_EPS: f64 = 1e-4;

/// The central-upwind flux of spec §6 from `(η, normal transport, tangential transport)` on
/// both sides of a face of depth `hf`, in that component order.
#[inline(always)]
fn flux<T: Real>(qm: [T; 3], qp: [T; 3], hf: T, g: T) -> [T; 3] {
    let hg = T::of(0.5) * g;
    let (hm, hp) = (qm[0] + hf, qp[0] + hf);
    let (um, up) = (qm[1] / hm, qp[1] / hp);
    let fm = [qm[1], qm[1] * um + hg * (hm * hm), qm[2] * um];
    let fp = [qp[1], qp[1] * up + hg * (hp * hp), qp[2] * up];
    let (cm, cp) = ((g * hm).sqrt(), (g * hp).sqrt());
    let am = (um - cm).min(up - cp).min(T::zero());
    let ap = (um + cm).max(up + cp).max(T::zero());
    let d = ap - am;
    let apam = ap * am;
    // Not `[0, 1, 2].map(..)`: that one is not always inlined, and then nothing vectorises.
    let f_n = |n: usize| ((ap * fm[n] - am * fp[n]) + apam * (qp[n] - qm[n])) / d;
    let f = [f_n(0), f_n(1), f_n(2)];
    // A select rather than an early return, so that the loop vectorises.
    if d.abs() < T::of(FLUX_EPS) { [T::zero(); 3] } else { f }
}

/// Half-slope of one component: `½ MM(Θ (q - qm), ½ (qp - qm), Θ (qp - q))`.
#[inline(always)]
fn slope<T: Real>(qm: T, q: T, qp: T, theta: T) -> T {
    T::of(0.5) * minmod((q - qm) * theta, (qp - qm) * T::of(0.5), (qp - q) * theta)
}

/// The η half-slope limited so that `η - S ≥ -h_minus` and `η + S ≥ -h_plus` (in this order).
#[inline(always)]
fn positive<T: Real>(eta: T, s: T, h_minus: T, h_plus: T) -> T {
    let s = if eta - s < -h_minus { eta + h_minus } else { s };
    if eta + s < -h_plus { -h_plus - eta } else { s }
}

/// The read-only rows of one row's y reconstruction and y flux ([`Scratch::reconstruct_y`]),
/// interior columns.
struct YRow<'a, T> {
    /// Rows r-1, r, r+1 of η, hu, hv.
    q: [[&'a [T]; 3]; 3],
    /// Corner depths of rows r and r+1 (the faces south and north of row r), nx+1 each.
    bs: &'a [T],
    bn: &'a [T],
    /// North face values of row r-1 (η, hu, hv).
    north_m: [&'a [T]; 3],
}

impl<T: Real> YRow<'_, T> {
    /// The loop of [`Scratch::reconstruct_y`], the rows it writes as arguments of their own so
    /// that it vectorises (why: CDKLM16's `YRow::run`).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn run<const FLUX: bool>(
        &self,
        gr: &Grid<T>,
        en: &mut [T],
        un: &mut [T],
        vn: &mut [T],
        source: &mut [T],
        g1: &mut [T],
        g2: &mut [T],
        g3: &mut [T],
    ) {
        let (nx, theta, half, g) = (gr.nx, gr.theta, T::of(0.5), gr.g);
        let hg = half * g;
        // Every row cut to nx on its own, and the east corners as slices shifted by one: cut
        // through `map`, or indexed `[i + 1]`, the compiler could not prove the loop's indices
        // in bounds and ran its last 16 iterations in scalar code (3.5 % of the scheme's time).
        let [[em, e0, ep], [um, u0, up], [vm, v0, vp]] = self.q;
        let (em, e0, ep) = (&em[..nx], &e0[..nx], &ep[..nx]);
        let (um, u0, up) = (&um[..nx], &u0[..nx], &up[..nx]);
        let (vm, v0, vp) = (&vm[..nx], &v0[..nx], &vp[..nx]);
        let (bs, bn) = (&self.bs[..nx + 1], &self.bn[..nx + 1]);
        let (bs, bs1, bn, bn1) = (&bs[..nx], &bs[1..], &bn[..nx], &bn[1..]);
        let [enm, unm, vnm] = self.north_m;
        let (enm, unm, vnm) = (&enm[..nx], &unm[..nx], &vnm[..nx]);
        let (en, un, vn, source) = (&mut en[..nx], &mut un[..nx], &mut vn[..nx], &mut source[..nx]);
        let (g1, g2, g3) = (&mut g1[..nx], &mut g2[..nx], &mut g3[..nx]);
        for i in 0..nx {
            let h_s = half * (bs[i] + bs1[i]);
            let h_n = half * (bn[i] + bn1[i]);
            let sl = positive(e0[i], slope(em[i], e0[i], ep[i], theta), h_s, h_n);
            let (e_n, e_s) = (e0[i] + sl, e0[i] - sl);
            en[i] = e_n;
            source[i] = hg * (h_n - h_s) * (((e_n + h_n) + e_s) + h_s);
            let sl = slope(um[i], u0[i], up[i], theta);
            let (u_n, u_s) = (u0[i] + sl, u0[i] - sl);
            un[i] = u_n;
            let sl = slope(vm[i], v0[i], vp[i], theta);
            let (v_n, v_s) = (v0[i] + sl, v0[i] - sl);
            vn[i] = v_n;
            if FLUX {
                // Through the face between rows r-1 and r (its depth is h_s); normal (hv) first,
                // swapped back after.
                let [f1, fnn, ft] = flux([enm[i], vnm[i], unm[i]], [e_s, v_s, u_s], h_s, g);
                (g1[i], g2[i], g3[i]) = (f1, ft, fnn);
            }
        }
    }
}

/// The rows one row's x fluxes are formed from: η, hu, hv and their x half-slopes. The flux is
/// a method rather than a closure, which the compiler did not inline into the loop, leaving it
/// in scalar code.
struct XFaces<'a, T> {
    q: [&'a [T]; 3],
    s: [&'a [T]; 3],
    /// Corner depths of the row's south and north faces.
    bi0: &'a [T],
    bi1: &'a [T],
    g: T,
}

impl<T: Real> XFlux<T> for XFaces<'_, T> {
    /// The flux through face k, between cells k and k+1.
    #[inline(always)]
    fn flux(&self, k: usize) -> [T; 3] {
        let ([e, hu, hv], [se, su, sv]) = (self.q, self.s);
        let hf = T::of(0.5) * (self.bi0[k + 1] + self.bi1[k + 1]);
        let qm = [e[k] + se[k], hu[k] + su[k], hv[k] + sv[k]];
        let qp = [e[k + 1] - se[k + 1], hu[k + 1] - su[k + 1], hv[k + 1] - sv[k + 1]];
        flux(qm, qp, hf, self.g)
    }
}

/// Per-row scratch of one band.
struct Scratch<T> {
    /// y reconstruction of two consecutive rows (interior columns), row r in slot r % 2: the
    /// face values north (`q + S`) of η, hu, hv (the south ones, `q - S`, are used where they
    /// are formed), and the bathymetry source `½ g (H_N - H_S) (h_N + h_S)`.
    north: [[Padded<T>; 3]; 2],
    source: [Padded<T>; 2],
    /// y fluxes through the south and north faces of the current row.
    gs: [Padded<T>; 3],
    gn: [Padded<T>; 3],
    /// x half-slopes (all columns).
    sx: [Padded<T>; 3],
    /// x fluxes of one row, face k (between cells k and k+1) at index k.
    fx: [Padded<T>; 3],
}

impl<T: Real> Scratch<T> {
    fn new(nx: usize, w: usize) -> Self {
        let mut a = ScratchRows::default();
        Scratch {
            north: [a.three(nx), a.three(nx)],
            source: [a.zeros(nx), a.zeros(nx)],
            gs: a.three(nx),
            gn: a.three(nx),
            sx: a.three(w),
            fx: a.three(w),
        }
    }

    /// y reconstruction of stored row `r` (interior columns), the three fields in one loop, and
    /// with `FLUX` the y fluxes through the face between rows r-1 and r into `gn` (from the
    /// reconstruction of row r-1): the first loop to read row r+1 of each field, so all that
    /// arithmetic hides the wait for them.
    #[inline(always)]
    fn reconstruct_y<const FLUX: bool>(&mut self, gr: &Grid<T>, q: &Q<T>, r: usize) {
        let nx = gr.nx;
        let c = 2..nx + 3;
        fn rows<T: Real>(f: &Field<T>, r: usize, nx: usize) -> [&[T]; 3] {
            [r - 1, r, r + 1].map(|r| &f.row(r)[2..nx + 2])
        }
        let [north_m, north] = rows2(&mut self.north, r);
        let [em, um, vm] = north_m;
        let y = YRow {
            q: [rows(&q.eta, r, nx), rows(&q.hu, r, nx), rows(&q.hv, r, nx)],
            bs: &gr.bi.row(r)[c.clone()],
            bn: &gr.bi.row(r + 1)[c],
            north_m: [&em[..], &um[..], &vm[..]],
        };
        let [en, un, vn] = north;
        let [g1, g2, g3] = &mut self.gn;
        y.run::<FLUX>(gr, en, un, vn, &mut self.source[r % 2], g1, g2, g3);
    }

    /// x reconstruction, x fluxes and L of interior row `l` into `out` (y fluxes of its faces
    /// in `gs`, `gn`, y reconstruction of row l in place).
    #[inline(always)]
    fn row(&mut self, gr: &Grid<T>, q: &Q<T>, l: usize, out: &mut impl RowSink<T>) {
        // Lets the compiler drop the bounds checks of the loops below.
        assert_eq!(gr.w, gr.nx + 4);
        let (nx, w, half, theta, g) = (gr.nx, gr.w, T::of(0.5), gr.theta, gr.g);
        let (dx, dy) = (gr.dx, gr.dy);
        let hg = half * g;
        let (e, hu, hv) = (&q.eta.row(l)[..w], &q.hu.row(l)[..w], &q.hv.row(l)[..w]);
        let (bi0, bi1) = (&gr.bi.row(l)[..w + 1], &gr.bi.row(l + 1)[..w + 1]);
        let [se, su, sv] = &mut self.sx;
        let (se, su, sv) = (&mut se[..w], &mut su[..w], &mut sv[..w]);
        for k in 1..w - 1 {
            let h_w = half * (bi0[k] + bi1[k]);
            let h_e = half * (bi0[k + 1] + bi1[k + 1]);
            se[k] = positive(e[k], slope(e[k - 1], e[k], e[k + 1], theta), h_w, h_e);
            su[k] = slope(hu[k - 1], hu[k], hu[k + 1], theta);
            sv[k] = slope(hv[k - 1], hv[k], hv[k + 1], theta);
        }
        let x_faces = XFaces { q: [e, hu, hv], s: [se, su, sv], bi0, bi1, g };
        let f = gr.f[l];
        let [x, y] = gr.wind;
        let [gs1, gs2, gs3] = &self.gs;
        let (gs1, gs2, gs3) = (&gs1[..nx], &gs2[..nx], &gs3[..nx]);
        let [gn1, gn2, gn3] = &self.gn;
        let (gn1, gn2, gn3) = (&gn1[..nx], &gn2[..nx], &gn3[..nx]);
        let source_y = &self.source[l % 2][..nx];
        let [fx1, fx2, fx3] = &mut self.fx;
        x_faces.fluxes(nx, fx1, fx2, fx3);
        let (fx1, fx2, fx3) = (&fx1[..nx + 2], &fx2[..nx + 2], &fx3[..nx + 2]);
        for i in 0..nx {
            let k = i + 2;
            let fe = [fx1[k], fx2[k], fx3[k]];
            let fw = [fx1[k - 1], fx2[k - 1], fx3[k - 1]];
            let h_w = half * (bi0[k] + bi1[k]);
            let h_e = half * (bi0[k + 1] + bi1[k + 1]);
            let source_x = hg * (h_e - h_w) * ((((e[k] + se[k]) + h_e) + (e[k] - se[k])) + h_w);
            let l1 = -(fe[0] - fw[0]) / dx + -(gn1[i] - gs1[i]) / dy;
            let l2 = (-(fe[1] - fw[1]) / dx + source_x / dx) + (-(gn2[i] - gs2[i]) / dy + (x + f * hv[k]));
            let l3 = -(fe[2] - fw[2]) / dx + (-(gn3[i] - gs3[i]) / dy + ((y - f * hu[k]) + source_y[i] / dy));
            out.put(i, [l1, l2, l3]);
        }
    }
}

impl<T: Real> Operator<T> for Op {
    #[inline(always)]
    fn band(&self, gr: &Grid<T>, q: &Q<T>, rows: Range<usize>, sink: &mut impl Sink<T>) {
        let mut s = Scratch::new(gr.nx, gr.w);
        let l0 = rows.start;
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
    use crate::solvers::shallow_water::scheme::Initial;
    use crate::solvers::shallow_water::fv::testing::{self, Case};

    fn make(p: &Physics, init: &Initial) -> Kp07<f32> {
        Kp07::new(p, init, rk::Scheme::SspRk2, Op)
    }

    const DT: f64 = 0.95;

    /// GPU Ocean's KP07 regression cases (spec §9.1: walls, periodic, periodic N-S and E-W with
    /// the three bumps, and Coriolis), f32, Θ = 1.3, Heun, Δt = 0.95 s.
    #[test]
    fn gpu_ocean_regression() {
        let mut cases = vec![];
        for bc in ["wallBC", "periodic", "periodicNS", "periodicEW"] {
            for init in ["central", "corner", "upperCorner"] {
                cases.push(Case { bc, init, bathymetry: false });
            }
        }
        cases.push(Case { bc: "coriolis", init: "central", bathymetry: false });
        let failures = testing::regression("KP07", DT, &cases, make, 5e-4);
        assert!(failures.is_empty(), "over 5e-4 relative:\n{}", failures.join("\n"));
    }

    #[test]
    fn f64_regression() {
        let cases = [Case { bc: "coriolis", init: "central", bathymetry: false }];
        let make = |p: &Physics, i: &Initial| Kp07::<f64>::new(p, i, rk::Scheme::SspRk2, Op);
        let failures = testing::regression("KP07", DT, &cases, make, 5e-4);
        assert!(failures.is_empty(), "over 5e-4 relative:\n{}", failures.join("\n"));
    }

    /// Lake at rest over the Case-A bathymetry, 64², 1000 steps, f32 and f64.
    #[test]
    fn lake_at_rest() {
        let [eta, hu, hv] = testing::lake_at_rest(64, 1000, make);
        eprintln!("KP07 lake at rest f32, 64x64, 1000 steps: max |eta| {eta:.1e}, |hu| {hu:.1e}, |hv| {hv:.1e}");
        assert!(eta <= 1e-6 && hu <= 1e-6 && hv <= 1e-6, "{eta:e} {hu:e} {hv:e}");
        let [eta, hu, hv] = testing::lake_at_rest(64, 1000, |p, i| Kp07::<f64>::new(p, i, rk::Scheme::SspRk2, Op));
        eprintln!("KP07 lake at rest f64, 64x64, 1000 steps: max |eta| {eta:.1e}, |hu| {hu:.1e}, |hv| {hv:.1e}");
        assert!(eta <= 1e-12 && hu <= 1e-12 && hv <= 1e-12, "{eta:e} {hu:e} {hv:e}");
    }

    #[test]
    fn mass_is_conserved() {
        for (bc, init) in
            [("wallBC", "central"), ("periodic", "corner"), ("periodicNS", "upperCorner"), ("periodicEW", "corner")]
        {
            let drift = testing::mass_drift(&Case { bc, init, bathymetry: false }, DT, make);
            eprintln!("KP07 mass drift {bc} {init}: {drift:.1e}");
            assert!(drift <= 1e-6, "{bc} {init}: {drift:e}");
        }
    }

    #[test]
    fn central_bump_is_mirror_symmetric() {
        let [x, y] = testing::mirror_asymmetry(DT, make);
        assert!(x == 0.0 && y == 0.0, "asymmetry x {x:e}, y {y:e}");
    }

    /// KP07's numerical tails reach the boundary within 50 s with values near 1e-19 (relative to
    /// the bump), so periodic and wall runs differ there, at that level only.
    #[test]
    fn periodic_equals_wall_for_the_central_bump() {
        let differ = testing::periodic_minus_wall(DT, make);
        eprintln!("KP07 periodic - wall, relative: {differ:?}");
        assert!(differ.iter().all(|(_, d)| *d <= 1e-15), "{differ:?}");
    }

    #[test]
    fn vector_and_plain_code_paths_agree_bitwise() {
        testing::bands_agree(|p, i| Kp07::<f32>::new(p, i, rk::Scheme::SspRk2, Op));
    }

    /// `cpu.subnormals: flush` changes only what lies below the normal range.
    #[test]
    fn flushing_subnormals_changes_only_tiny_values() {
        let [keep, flush, diff] = testing::flush_subnormals(DT, make);
        eprintln!("KP07 subnormal values: {keep} kept, {flush} flushed; largest difference {diff:.1e} of the largest value");
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

    /// Throughput at 2048² (as CDKLM16's). Per cell and step, counted by
    /// hand (add, mul, div, sqrt, min, max): two stages of about 66 (y reconstruction and
    /// source) + 51 (y flux) + 53 (x reconstruction) + 57 (x flux) + 37 (L) + 10 (stage
    /// update) = 274 flops (`SchemeName::flops_per_cell_stage`); traffic as CDKLM16 (88 B).
    #[test]
    #[ignore]
    fn throughput() {
        let name = super::super::params::SchemeName::Kp07;
        let flops = 2.0 * name.flops_per_cell_stage().unwrap();
        testing::throughput("KP07", 2048, 5, flops, 4.0 * name.floats_per_cell(2), make);
    }
}
