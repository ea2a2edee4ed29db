//! One q-LSKUM iteration over a whole cloud, a Runge-Kutta step of [`crate::numerics::rk`]:
//! local time step, then per stage q-variables, q-derivatives (with inner iterations), flux
//! residual and state update. Every pass is a rayon loop over points that calls the
//! per-point functions of [`super::kernels`]; all scratch arrays are allocated once.

use rayon::prelude::*;

use super::cloud::{Cloud, Csr, INTERIOR, OUTER, WALL};
use super::kernels::{self as k, FluxKind, Kinetic, LsMatrix, LsRhs, LsSums, Reconstruct, V4};
use crate::cpu::{Math, Simd};
use crate::error::Result;
use crate::numerics::rk::{self, RkState, Scheme, Stage};

/// Numerical settings of the scheme.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub cfl: f64,
    pub inner_iterations: u32,
    pub vl_const: f64,
    pub power: f64,
    pub reconstruct: Reconstruct,
    /// Runge-Kutta scheme of the pseudo-time iterations.
    pub scheme: Scheme,
    pub winf: V4,
    /// Functions of the flux residual on the CPU (`cpu.math`).
    pub math: Math,
}

/// Per-point scratch and state, one array per quantity (four components stored together),
/// and the least-squares matrices of the cloud.
pub struct State {
    pub prim: Vec<V4>,
    pub prim_old: Vec<V4>,
    pub q: Vec<V4>,
    pub qx: Vec<V4>,
    pub qy: Vec<V4>,
    pub qx2: Vec<V4>,
    pub qy2: Vec<V4>,
    pub qmax: Vec<V4>,
    pub qmin: Vec<V4>,
    pub res: Vec<V4>,
    pub dt: Vec<f64>,
    /// Squared density change of the last stage (0 at outer points).
    pub dsq: Vec<f64>,
    /// The cloud's least-squares matrices for the run's weight power, computed once.
    pub ls: LsMatrices,
}

impl State {
    /// The free stream `set.winf` on cloud `c`.
    pub fn new(c: &Cloud, set: &Settings) -> Self {
        let (n, w) = (c.len(), set.winf);
        let z = vec![[0.0; 4]; n];
        State {
            prim: vec![w; n],
            prim_old: vec![w; n],
            q: z.clone(),
            qx: z.clone(),
            qy: z.clone(),
            qx2: z.clone(),
            qy2: z.clone(),
            qmax: z.clone(),
            qmin: z.clone(),
            res: z,
            dt: vec![0.0; n],
            dsq: vec![0.0; n],
            ls: LsMatrices::new(c, set.power),
        }
    }
}

/// The least-squares matrices of every point's stencils: the full stencil in the global frame
/// (q-derivatives) and the four split stencils (+t, -t, +n, -n) in the point's frame (flux
/// residual). Each is summed over its neighbours in order, as the derivatives summed it
/// before, so the derivatives keep their bits.
pub struct LsMatrices {
    pub full: Vec<LsMatrix>,
    pub split: Vec<[LsMatrix; 4]>,
}

impl LsMatrices {
    pub fn new(c: &Cloud, power: f64) -> Self {
        let (full, split) = (0..c.len())
            .into_par_iter()
            .map(|i| {
                let (mut full, mut split) = (LsSums::<0>::new(), [LsSums::<0>::new(); 4]);
                for &kk in c.conn.of(i) {
                    let e = Edge::new(c, i, kk as usize, power);
                    full.add(e.dx, e.dy, e.w, &[]);
                    for m in (0..4).filter(|&m| e.member[m]) {
                        split[m].add(e.ds, e.dn, e.w, &[]);
                    }
                }
                (full.matrix(), split.map(|l| l.matrix()))
            })
            .unzip();
        LsMatrices { full, split }
    }
}

/// Local time step of point i (spec 9.1).
#[inline]
pub fn local_dt(c: &Cloud, prim: &[V4], cfl: f64, i: usize) -> f64 {
    let mut m = 1.0;
    for &kk in c.conn.of(i) {
        let kk = kk as usize;
        let dx = c.x[kk] - c.x[i];
        let dy = c.y[kk] - c.y[i];
        let dist = (dx * dx + dy * dy).sqrt();
        let d = k::dt_neighbour(cfl, dist, prim[kk]);
        if d < m {
            m = d;
        }
    }
    m
}

/// First-order least-squares q-derivatives and the min/max of q over the full stencil.
///
/// # Safety
/// Every neighbour of i indexes `q`, `c.x` and `c.y` ([`links_fit`]).
#[inline(always)]
unsafe fn first_order(c: &Cloud, q: &[V4], m: &LsMatrix, power: f64, i: usize) -> (V4, V4, V4, V4) {
    let qi = q[i];
    let mut qmax = qi;
    let mut qmin = qi;
    let mut ls = LsRhs::<4>::new();
    let (xi, yi) = (c.x[i], c.y[i]);
    for &kk in c.conn.of(i) {
        let kk = kk as usize;
        // SAFETY: kk indexes q, c.x and c.y (the caller's promise).
        let (xk, yk, qk) = unsafe { (*c.x.get_unchecked(kk), *c.y.get_unchecked(kk), *q.get_unchecked(kk)) };
        let dx = xk - xi;
        let dy = yk - yi;
        let w = k::ls_weight(dx, dy, power);
        let mut df = [0.0; 4];
        for r in 0..4 {
            df[r] = qk[r] - qi[r];
            if qk[r] > qmax[r] {
                qmax[r] = qk[r];
            }
            if qk[r] < qmin[r] {
                qmin[r] = qk[r];
            }
        }
        ls.add(dx, dy, w, &df);
    }
    let (qx, qy) = ls.solve(m);
    (qx, qy, qmax, qmin)
}

/// One Jacobi inner sweep for point i (spec 5.2).
///
/// # Safety
/// Every neighbour of i indexes `q`, `qx`, `qy`, `c.x` and `c.y` ([`links_fit`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the per-point inputs of one inlined loop
unsafe fn inner_sweep(c: &Cloud, q: &[V4], qx: &[V4], qy: &[V4], m: &LsMatrix, power: f64, i: usize) -> (V4, V4) {
    let mut ls = LsRhs::<4>::new();
    let (qi, qxi, qyi) = (q[i], qx[i], qy[i]);
    let (xi, yi) = (c.x[i], c.y[i]);
    for &kk in c.conn.of(i) {
        let kk = kk as usize;
        // SAFETY: kk indexes these arrays (the caller's promise).
        let (xk, yk, qk, qxk, qyk) = unsafe {
            (*c.x.get_unchecked(kk), *c.y.get_unchecked(kk), *q.get_unchecked(kk), *qx.get_unchecked(kk), *qy.get_unchecked(kk))
        };
        let dx = xk - xi;
        let dy = yk - yi;
        let w = k::ls_weight(dx, dy, power);
        // the four components side by side (one vector)
        let df: V4 = std::array::from_fn(|r| {
            let qi_hat = qi[r] - 0.5 * (dx * qxi[r] + dy * qyi[r]);
            let qk_hat = qk[r] - 0.5 * (dx * qxk[r] + dy * qyk[r]);
            qk_hat - qi_hat
        });
        ls.add(dx, dy, w, &df);
    }
    ls.solve(m)
}

/// Inputs of the flux residual.
pub struct FluxInput<'a> {
    pub c: &'a Cloud,
    pub q: &'a [V4],
    pub qx: &'a [V4],
    pub qy: &'a [V4],
    pub qmax: &'a [V4],
    pub qmin: &'a [V4],
    pub ls: &'a LsMatrices,
    pub set: &'a Settings,
}

impl FluxInput<'_> {
    #[inline(always)]
    fn reconstruct(&self, p: usize, bounds: usize, dx: f64, dy: f64) -> V4 {
        match self.set.reconstruct {
            Reconstruct::Venkat => k::reconstruct_venkat(
                &self.q[p],
                &self.qx[p],
                &self.qy[p],
                &self.qmax[p],
                &self.qmin[p],
                k::venkat_eps2(self.set.vl_const, self.c.min_dist[p]),
                dx,
                dy,
            ),
            Reconstruct::MinMax => k::reconstruct_minmax(
                &self.q[p],
                &self.qx[p],
                &self.qy[p],
                &self.qmax[bounds],
                &self.qmin[bounds],
                dx,
                dy,
            ),
            Reconstruct::None => self.q[p],
        }
    }

    /// Least-squares derivative of the flux `kind` over stencil `st` of point i:
    /// along t for x stencils, along n for y stencils (spec 8.1).
    #[inline]
    pub fn stencil_derivative(&self, i: usize, st: &Csr, kind: FluxKind, along_t: bool) -> V4 {
        let c = self.c;
        let (nx, ny) = (c.nx[i], c.ny[i]);
        let mut ls = LsSums::<4>::new();
        for &kk in st.of(i) {
            let kk = kk as usize;
            let dx = c.x[kk] - c.x[i];
            let dy = c.y[kk] - c.y[i];
            let ds = dx * ny - dy * nx;
            let dn = dx * nx + dy * ny;
            let w = k::ls_weight(dx, dy, self.set.power);
            let wi = k::prim_of_q(self.reconstruct(i, i, dx, dy));
            let wk = k::prim_of_q(self.reconstruct(kk, i, dx, dy));
            let gi = k::flux(kind, wi, nx, ny);
            let gk = k::flux(kind, wk, nx, ny);
            let df = [gk[0] - gi[0], gk[1] - gi[1], gk[2] - gi[2], gk[3] - gi[3]];
            ls.add(ds, dn, w, &df);
        }
        if along_t { ls.d_ds() } else { ls.d_dn() }
    }

    /// Flux residual of point i (spec 8.2), in the frame of the point, in one pass over the
    /// full neighbour list: the reconstructed states of an edge are computed once and shared
    /// by the split stencils the neighbour belongs to. Each stencil's sums are accumulated in
    /// neighbour order, so the result equals [`FluxInput::residual_by_stencil`] bit for bit.
    #[inline]
    pub fn residual(&self, i: usize) -> V4 {
        let c = self.c;
        let (nx, ny) = (c.nx[i], c.ny[i]);
        let kinds = stencil_kinds(c.flag[i]);
        let mut ls = [LsRhs::<4>::new(); 4];
        for &kk in c.conn.of(i) {
            let e = self.edge(i, kk as usize);
            let wi = k::prim_of_q(self.reconstruct(i, i, e.dx, e.dy));
            let wk = k::prim_of_q(self.reconstruct(kk as usize, i, e.dx, e.dy));
            // One kinetic state per end of the edge, with the directions of every stencil the
            // edge is in (the same bits per kind as computing it per stencil).
            let (mut t, mut n) = (false, false);
            for m in (0..4).filter(|&m| e.member[m]) {
                let (tm, nm) = kinds[m].directions();
                (t, n) = (t || tm, n || nm);
            }
            let (ki, kk_) = (k::kinetic_part(wi, nx, ny, t, n), k::kinetic_part(wk, nx, ny, t, n));
            e.accumulate(&mut ls, &kinds, &ki, &kk_);
        }
        stencil_sum(c.flag[i], &ls, &self.ls.split[i])
    }

    /// [`FluxInput::residual`] with [`k::kinetic_of_q_fast`] and the scratch `ends`, [`BATCH`]
    /// edges at a time: the kinetic states of their ends, then their flux differences and
    /// least-squares terms, each in a loop over the edges with no branches, which the compiler
    /// vectorises. The sums take the terms in neighbour order, so the result is the bits of a
    /// per-edge loop (`fast_residual_equals_the_per_edge_loop`).
    #[inline(always)]
    pub fn residual_fast(&self, i: usize, ends: &mut Ends) -> V4 {
        match self.c.flag[i] {
            INTERIOR => self.residual_fast_of::<INTERIOR>(i, ends),
            WALL => self.residual_fast_of::<WALL>(i, ends),
            _ => self.residual_fast_of::<OUTER>(i, ends),
        }
    }

    /// [`FluxInput::residual_fast`] of a point of type `FLAG` (its stencils' fluxes fixed).
    #[inline(always)]
    fn residual_fast_of<const FLAG: u8>(&self, i: usize, ends: &mut Ends) -> V4 {
        let c = self.c;
        let mut ls = [LsRhs::<4>::new(); 4];
        for edges in c.conn.of(i).chunks(BATCH) {
            // Lane e holds edge e: point i's end in the first half, the neighbour's from `half`.
            let half = edges.len().next_multiple_of(4);
            for (e, &kk) in edges.iter().enumerate() {
                let kk = kk as usize;
                let edge = self.edge(i, kk);
                ends.set_q(e, self.reconstruct(i, i, edge.dx, edge.dy));
                ends.set_q(half + e, self.reconstruct(kk, i, edge.dx, edge.dy));
                ends.set_edge(e, &edge);
            }
            // Every stencil an edge can be in needs the terms along both t and n (an edge is
            // in the +t or the -t stencil, and in a +n or -n one), so all are computed.
            ends.kinetic(edges.len(), half, c.nx[i], c.ny[i]);
            ends.accumulate::<FLAG>(edges.len(), half, &mut ls);
        }
        stencil_sum(FLAG, &ls, &self.ls.split[i])
    }

    /// The edge from point i to neighbour kk in the frame of i.
    #[inline(always)]
    fn edge(&self, i: usize, kk: usize) -> Edge {
        Edge::new(self.c, i, kk, self.set.power)
    }

    /// Flux residual of point i stencil by stencil (reference form of [`FluxInput::residual`]).
    #[inline]
    pub fn residual_by_stencil(&self, i: usize) -> V4 {
        let c = self.c;
        let mut r = [0.0; 4];
        match c.flag[i] {
            INTERIOR => {
                let a = self.stencil_derivative(i, &c.xpos, FluxKind::GxPos, true);
                let b = self.stencil_derivative(i, &c.xneg, FluxKind::GxNeg, true);
                let cc = self.stencil_derivative(i, &c.ypos, FluxKind::GyPos, false);
                let d = self.stencil_derivative(i, &c.yneg, FluxKind::GyNeg, false);
                for m in 0..4 {
                    r[m] = a[m] + b[m] + cc[m] + d[m];
                }
            }
            WALL => {
                let a = self.stencil_derivative(i, &c.xpos, FluxKind::GxII, true);
                let b = self.stencil_derivative(i, &c.xneg, FluxKind::GxI, true);
                let d = self.stencil_derivative(i, &c.yneg, FluxKind::GyNeg, false);
                for m in 0..4 {
                    r[m] = 2.0 * (a[m] + b[m] + d[m]);
                }
            }
            _ => {
                let a = self.stencil_derivative(i, &c.xpos, FluxKind::GxIII, true);
                let b = self.stencil_derivative(i, &c.xneg, FluxKind::GxIV, true);
                let cc = self.stencil_derivative(i, &c.ypos, FluxKind::GyPos, false);
                for m in 0..4 {
                    r[m] = a[m] + b[m] + cc[m];
                }
            }
        }
        r
    }
}

/// The fluxes of a point's four split stencils (+t, -t, +n, -n), by point type.
#[inline(always)]
fn stencil_kinds(flag: u8) -> [FluxKind; 4] {
    match flag {
        INTERIOR => [FluxKind::GxPos, FluxKind::GxNeg, FluxKind::GyPos, FluxKind::GyNeg],
        WALL => [FluxKind::GxII, FluxKind::GxI, FluxKind::GyPos, FluxKind::GyNeg],
        _ => [FluxKind::GxIII, FluxKind::GxIV, FluxKind::GyPos, FluxKind::GyNeg],
    }
}

/// The split flux along t of a point of type `FLAG` with sign `s` (+1: its +t stencil's flux
/// in [`stencil_kinds`], -1: its -t one's).
#[inline(always)]
fn flux_t<const FLAG: u8>(k: &Kinetic, s: f64) -> V4 {
    match FLAG {
        INTERIOR => k::gx_split(k, s),
        WALL => k::quadrant(k, s, -1.0),
        _ => k::quadrant(k, s, 1.0),
    }
}

/// The residual from the least-squares right-hand sides and matrices of the four stencils.
#[inline(always)]
fn stencil_sum(flag: u8, ls: &[LsRhs<4>; 4], m: &[LsMatrix; 4]) -> V4 {
    let mut r = [0.0; 4];
    match flag {
        INTERIOR => {
            let (a, b, cc, d) = (ls[0].d_ds(&m[0]), ls[1].d_ds(&m[1]), ls[2].d_dn(&m[2]), ls[3].d_dn(&m[3]));
            for m in 0..4 {
                r[m] = a[m] + b[m] + cc[m] + d[m];
            }
        }
        WALL => {
            let (a, b, d) = (ls[0].d_ds(&m[0]), ls[1].d_ds(&m[1]), ls[3].d_dn(&m[3]));
            for m in 0..4 {
                r[m] = 2.0 * (a[m] + b[m] + d[m]);
            }
        }
        _ => {
            let (a, b, cc) = (ls[0].d_ds(&m[0]), ls[1].d_ds(&m[1]), ls[2].d_dn(&m[2]));
            for m in 0..4 {
                r[m] = a[m] + b[m] + cc[m];
            }
        }
    }
    r
}

/// The split stencils (+t, -t, +n, -n) that an edge with offsets (ds, dn) from a point of
/// type `flag` is in: by the sign of ds, and of dn inside the domain (at a wall every edge is
/// in -n, at the outer boundary in +n).
#[inline(always)]
fn membership(flag: u8, ds: f64, dn: f64) -> [bool; 4] {
    let (plus_n, minus_n) = match flag {
        INTERIOR => (dn <= 0.0, dn >= 0.0),
        WALL => (false, true),
        _ => (true, false),
    };
    [ds <= 0.0, ds >= 0.0, plus_n, minus_n]
}

/// An edge of a point: offsets (dx, dy) and (ds, dn) in its frame, least-squares weight, and
/// the stencils it is in.
struct Edge {
    dx: f64,
    dy: f64,
    ds: f64,
    dn: f64,
    w: f64,
    member: [bool; 4],
}

impl Edge {
    /// The edge from point i to neighbour kk in the frame of i, weighted `d^power`.
    #[inline(always)]
    fn new(c: &Cloud, i: usize, kk: usize, power: f64) -> Self {
        let (nx, ny, flag) = (c.nx[i], c.ny[i], c.flag[i]);
        let dx = c.x[kk] - c.x[i];
        let dy = c.y[kk] - c.y[i];
        let ds = dx * ny - dy * nx;
        let dn = dx * nx + dy * ny;
        Edge { dx, dy, ds, dn, w: k::ls_weight(dx, dy, power), member: membership(flag, ds, dn) }
    }

    /// Adds the flux differences of the edge (kinetic states `ki` at the point, `kk` at the
    /// neighbour) to the sums of the stencils it is in.
    #[inline(always)]
    fn accumulate(&self, ls: &mut [LsRhs<4>; 4], kinds: &[FluxKind; 4], ki: &Kinetic, kk: &Kinetic) {
        for m in 0..4 {
            if self.member[m] {
                let gi = k::flux_of(kinds[m], ki);
                let gk = k::flux_of(kinds[m], kk);
                let df = [gk[0] - gi[0], gk[1] - gi[1], gk[2] - gi[2], gk[3] - gi[3]];
                ls[m].add(self.ds, self.dn, self.w, &df);
            }
        }
    }
}

/// Edges whose end states [`FluxInput::residual_fast`] computes together.
pub const BATCH: usize = 16;

/// Least-squares terms of a stencil: sdf[0..4], ndf[0..4] (as [`LsRhs::add`]).
const TERMS: usize = 8;

/// Up to [`BATCH`] edges of a point, one lane each: reconstructed q at both ends in, kinetic
/// states out, the edges' offsets (ds, dn) and weights, and their least-squares terms per
/// stencil, one array per quantity (the layout a vector loop reads and writes).
pub struct Ends {
    q: [[f64; 2 * BATCH]; 4],
    k: [[f64; 2 * BATCH]; 13],
    ds: [f64; BATCH],
    dn: [f64; BATCH],
    w: [f64; BATCH],
    terms: [[f64; BATCH]; 4 * TERMS],
}

impl Default for Ends {
    fn default() -> Self {
        Ends {
            q: [[0.0; 2 * BATCH]; 4],
            k: [[0.0; 2 * BATCH]; 13],
            ds: [0.0; BATCH],
            dn: [0.0; BATCH],
            w: [0.0; BATCH],
            terms: [[0.0; BATCH]; 4 * TERMS],
        }
    }
}

impl Ends {
    #[inline(always)]
    fn set_q(&mut self, lane: usize, q: V4) {
        for (row, v) in self.q.iter_mut().zip(q) {
            row[lane] = v;
        }
    }

    #[inline(always)]
    fn set_edge(&mut self, lane: usize, e: &Edge) {
        (self.ds[lane], self.dn[lane], self.w[lane]) = (e.ds, e.dn, e.w);
    }

    /// The kinetic states of edges `0..n` (lanes `e` and `half + e`) in the frame (nx, ny) with
    /// the fast functions; lanes `n..half` of each half repeat lane 0 (their terms are not
    /// summed), so that no lane is left to a scalar remainder loop.
    #[inline(always)]
    fn kinetic(&mut self, n: usize, half: usize, nx: f64, ny: f64) {
        let half = half.min(BATCH);
        for row in &mut self.q {
            let first = row[0];
            row[n..half].fill(first);
            row[half + n..2 * half].fill(first);
        }
        // Near the free stream every scaled speed is below 0.84375, where erf needs only the
        // first of its three pieces; the batch takes the fewest pieces all its lanes need.
        let q = &self.q;
        let lane = |j: usize| [q[0][j], q[1][j], q[2][j], q[3][j]];
        let pieces = (0..2 * half).fold(1, |p, j| p.max(k::erf_pieces_of_q(lane(j), nx, ny)));
        match pieces {
            1 => self.kinetic_in::<1>(2 * half, nx, ny),
            2 => self.kinetic_in::<2>(2 * half, nx, ny),
            _ => self.kinetic_in::<3>(2 * half, nx, ny),
        }
    }

    /// Adds the flux differences of edges `0..n` to the sums of the stencils they are in, each
    /// direction's terms in one loop over the edges, then summed in edge order.
    #[inline(always)]
    fn accumulate<const FLAG: u8>(&mut self, n: usize, half: usize, ls: &mut [LsRhs<4>; 4]) {
        // (the bound lets the compiler drop the index checks and vectorise)
        let half = half.min(BATCH);
        // Whether an edge of the batch is in both stencils of direction t, or of n.
        let (mut both_t, mut both_n) = (false, false);
        for e in 0..n.min(half) {
            let m = membership(FLAG, self.ds[e], self.dn[e]);
            (both_t, both_n) = (both_t || (m[0] && m[1]), both_n || (m[2] && m[3]));
        }
        if both_t {
            self.direction_terms::<FLAG, false, true>(half);
        } else {
            self.direction_terms::<FLAG, false, false>(half);
        }
        if both_n {
            self.direction_terms::<FLAG, true, true>(half);
        } else {
            self.direction_terms::<FLAG, true, false>(half);
        }
        for e in 0..n.min(half) {
            for (m, s) in ls.iter_mut().enumerate() {
                let t = &self.terms[TERMS * m..TERMS * (m + 1)];
                for r in 0..4 {
                    s.sdf[r] += t[r][e];
                    s.ndf[r] += t[4 + r][e];
                }
            }
        }
    }

    /// The terms of lanes `0..half` in the two stencils of direction t (`N` false: stencils 0
    /// and 1, +t and -t) or n (stencils 2 and 3). An edge is in one of them ([`membership`]),
    /// so one flux per end is enough, its half chosen per edge: the bits of that stencil's own
    /// flux, since the sign only selects terms and multiplies by ±1. The other stencil gets the
    /// same terms weighted 0 (with finite fluxes such terms are ±0 and leave the sums' bits
    /// alone). An edge with offset 0 is in both (`BOTH`, a batch with such an edge): both
    /// fluxes for every lane.
    #[inline(always)]
    fn direction_terms<const FLAG: u8, const N: bool, const BOTH: bool>(&mut self, half: usize) {
        let on = |inside: bool| f64::from(u8::from(inside));
        let flux = |k: &Kinetic, s: f64| if N { k::gy_split(k, s) } else { flux_t::<FLAG>(k, s) };
        let (first, second) = if N { (2, 3) } else { (0, 1) };
        for e in 0..half {
            let (ki, kk) = (self.get(e), self.get(half + e));
            let member = membership(FLAG, self.ds[e], self.dn[e]);
            let (in_first, in_second) = (member[first], member[second]);
            let (w_first, w_second) = (self.w[e] * on(in_first), self.w[e] * on(in_second));
            if BOTH {
                self.put_terms(first, e, w_first, &flux(&ki, 1.0), &flux(&kk, 1.0));
                self.put_terms(second, e, w_second, &flux(&ki, -1.0), &flux(&kk, -1.0));
            } else {
                let s = if in_first { 1.0 } else { -1.0 };
                let (gi, gk) = (flux(&ki, s), flux(&kk, s));
                self.put_terms(first, e, w_first, &gi, &gk);
                self.put_terms(second, e, w_second, &gi, &gk);
            }
        }
    }

    /// The least-squares terms of edge `e` in stencil `m`: weight `w`, fluxes `gi` at the point
    /// and `gk` at the neighbour.
    #[inline(always)]
    fn put_terms(&mut self, m: usize, e: usize, w: f64, gi: &V4, gk: &V4) {
        let (wds, wdn) = (w * self.ds[e], w * self.dn[e]);
        let t = &mut self.terms[TERMS * m..TERMS * (m + 1)];
        for r in 0..4 {
            let d = gk[r] - gi[r];
            (t[r][e], t[4 + r][e]) = (wds * d, wdn * d);
        }
    }

    #[inline(always)]
    fn kinetic_in<const ERF_PIECES: u8>(&mut self, padded: usize, nx: f64, ny: f64) {
        let (q, out) = (&self.q, &mut self.k);
        for j in 0..padded.min(2 * BATCH) {
            let s = k::kinetic_of_q_fast_in::<ERF_PIECES>([q[0][j], q[1][j], q[2][j], q[3][j]], nx, ny);
            let v = [s.rho, s.ut, s.un, s.pr, s.t, s.at_p, s.at_m, s.an_p, s.an_m, s.bt, s.bn, s.h, s.eb];
            for (o, x) in out.iter_mut().zip(v) {
                o[j] = x;
            }
        }
    }

    #[inline(always)]
    fn get(&self, lane: usize) -> Kinetic {
        let f = |m: usize| self.k[m][lane];
        Kinetic {
            rho: f(0),
            ut: f(1),
            un: f(2),
            pr: f(3),
            t: f(4),
            at_p: f(5),
            at_m: f(6),
            an_p: f(7),
            an_m: f(8),
            bt: f(9),
            bn: f(10),
            h: f(11),
            eb: f(12),
        }
    }
}

/// Points per task of the fast flux residual (one scratch [`Ends`] each).
const CHUNK: usize = 256;

/// The flux residual of every point into `res`, with the functions `math` says; `fast` runs
/// the build for the widest [`Simd`] level the CPU has.
pub fn residuals(fi: &FluxInput, math: Math, res: &mut [V4]) {
    if math == Math::Exact {
        return res.par_iter_mut().enumerate().for_each(|(i, r)| *r = fi.residual(i));
    }
    res.par_chunks_mut(CHUNK).enumerate().for_each(|(b, out)| {
        let first = b * CHUNK;
        match Simd::detect() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the CPU has AVX-512F (detected).
            Simd::Avx512 => unsafe { residuals_fast_avx512(fi, first, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the CPU has AVX2 (detected).
            Simd::Avx2 => unsafe { residuals_fast_avx2(fi, first, out) },
            _ => residuals_fast(fi, first, out),
        }
    });
}

/// Fast residuals of points `first..first + out.len()`.
#[inline(always)]
fn residuals_fast(fi: &FluxInput, first: usize, out: &mut [V4]) {
    let mut ends = Ends::default();
    for (j, r) in out.iter_mut().enumerate() {
        *r = fi.residual_fast(first + j, &mut ends);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn residuals_fast_avx512(fi: &FluxInput, first: usize, out: &mut [V4]) {
    residuals_fast(fi, first, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn residuals_fast_avx2(fi: &FluxInput, first: usize, out: &mut [V4]) {
    residuals_fast(fi, first, out)
}

/// State update of one point for a Runge-Kutta stage (spec 9.3, 9.4) with the point's local
/// time step `dt`. Returns the new primitive state and the squared density change (0 at outer
/// points).
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn update_point(
    flag: u8,
    nx: f64,
    ny: f64,
    prim: V4,
    prim_old: V4,
    res: V4,
    dt: f64,
    stage: &Stage,
    winf: V4,
) -> (V4, f64) {
    let (u, u_old) = if flag == OUTER {
        (k::outer_state(prim, winf, nx, ny), k::outer_state(prim_old, winf, nx, ny))
    } else {
        (k::conserved(prim, nx, ny), k::conserved(prim_old, nx, ny))
    };
    let mut un = [0.0; 4];
    for m in 0..4 {
        un[m] = stage.apply(u_old[m], u[m], dt, res[m]);
    }
    if flag == WALL {
        un[2] = 0.0;
    }
    let d = if flag == OUTER { 0.0 } else { (un[0] - u[0]) * (un[0] - u[0]) };
    (k::prim_of_conserved(un, nx, ny), d)
}

/// Seconds spent per phase: time step, q-variables, q-derivatives, flux residual, update.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timers {
    pub timestep: f64,
    pub q_variables: f64,
    pub q_derivatives: f64,
    pub flux_residual: f64,
    pub state_update: f64,
}

impl Timers {
    /// (phase, seconds), in the order of an iteration.
    pub fn phases(&self) -> [(&'static str, f64); 5] {
        [
            ("time_step", self.timestep),
            ("q_variables", self.q_variables),
            ("q_derivatives", self.q_derivatives),
            ("flux_residual", self.flux_residual),
            ("state_update", self.state_update),
        ]
    }
}

/// One full iteration; returns `sqrt(sum of squared density changes of the last stage) / N`.
pub fn iterate(c: &Cloud, s: &mut State, set: &Settings) -> f64 {
    iterate_timed(c, s, set, &mut Timers::default())
}

/// [`iterate`] adding the time of each phase to `t`.
pub fn iterate_timed(c: &Cloud, s: &mut State, set: &Settings, t: &mut Timers) -> f64 {
    let ok = rk::step(&mut CpuStages { c, s: &mut *s, set, t }, set.scheme);
    debug_assert!(ok.is_ok(), "CPU stages cannot fail");
    residual_norm(c, &s.dsq)
}

/// Points per partial sum of the residual norm.
pub const RESIDUAL_CHUNK: usize = 1024;

/// `sqrt(sum of dsq) / N`, summed in a fixed order (see [`residual_partials`]), so that the
/// result depends neither on the thread count nor on the numbering nor on the back end.
pub fn residual_norm(c: &Cloud, dsq: &[f64]) -> f64 {
    norm_of_partials(&residual_partials(c, dsq), c.len())
}

/// Sums of `dsq` over runs of [`RESIDUAL_CHUNK`] points in file order, each added in order
/// (the device's `lskum_residual_partials` adds the same values in the same order).
pub fn residual_partials(c: &Cloud, dsq: &[f64]) -> Vec<f64> {
    let n = c.len();
    (0..n.div_ceil(RESIDUAL_CHUNK))
        .into_par_iter()
        .map(|k| (k * RESIDUAL_CHUNK..((k + 1) * RESIDUAL_CHUNK).min(n)).fold(0.0, |s, f| s + dsq[c.file_index(f)]))
        .collect()
}

/// The residual norm of `n` points from the partial sums, added in order.
pub fn norm_of_partials(partials: &[f64], n: usize) -> f64 {
    partials.iter().fold(0.0, |s, &p| s + p).sqrt() / n as f64
}

/// The Runge-Kutta stages of an iteration on the CPU, timed by phase.
struct CpuStages<'a> {
    c: &'a Cloud,
    s: &'a mut State,
    set: &'a Settings,
    t: &'a mut Timers,
}

impl RkState for CpuStages<'_> {
    /// Saves the primitive state and computes the local time steps.
    fn begin(&mut self) -> Result<()> {
        let t0 = std::time::Instant::now();
        let (c, s, cfl) = (self.c, &mut *self.s, self.set.cfl);
        s.prim_old.par_iter_mut().zip(s.prim.par_iter()).for_each(|(o, p)| *o = *p);
        let prim = &s.prim;
        s.dt.par_iter_mut().enumerate().for_each(|(i, d)| *d = local_dt(c, prim, cfl, i));
        self.t.timestep += t0.elapsed().as_secs_f64();
        Ok(())
    }

    /// q-variables, q-derivatives and flux residual of the current state.
    fn residual(&mut self, _stage: usize) -> Result<()> {
        use std::time::Instant;
        let (c, s, set) = (self.c, &mut *self.s, self.set);
        let t0 = Instant::now();
        s.q.par_iter_mut().zip(s.prim.par_iter()).for_each(|(q, p)| *q = k::q_of_prim(*p));
        let t1 = Instant::now();
        q_derivatives(c, s, set);
        let t2 = Instant::now();
        let fi = FluxInput { c, q: &s.q, qx: &s.qx, qy: &s.qy, qmax: &s.qmax, qmin: &s.qmin, ls: &s.ls, set };
        residuals(&fi, set.math, &mut s.res);
        let t3 = Instant::now();
        self.t.q_variables += (t1 - t0).as_secs_f64();
        self.t.q_derivatives += (t2 - t1).as_secs_f64();
        self.t.flux_residual += (t3 - t2).as_secs_f64();
        Ok(())
    }

    /// New primitive state and squared density change of every point.
    fn update(&mut self, stage: &Stage) -> Result<()> {
        let t0 = std::time::Instant::now();
        let (c, s, winf) = (self.c, &mut *self.s, self.set.winf);
        let (res, dt, old) = (&s.res, &s.dt, &s.prim_old);
        s.prim.par_iter_mut().zip(s.dsq.par_iter_mut()).enumerate().for_each(|(i, (p, d))| {
            (*p, *d) = update_point(c.flag[i], c.nx[i], c.ny[i], *p, old[i], res[i], dt[i], stage, winf);
        });
        self.t.state_update += t0.elapsed().as_secs_f64();
        Ok(())
    }
}

/// Whether every neighbour index of `c` is below the length of each of `arrays` (then the
/// sweeps over neighbours gather without an index check each).
fn links_fit(c: &Cloud, arrays: &[usize]) -> bool {
    let max = c.conn.idx.par_iter().copied().max().map_or(0, |k| k as usize + 1);
    arrays.iter().all(|&n| max <= n)
}

/// q-derivatives of the current q: first-order estimate, then the inner iterations.
pub fn q_derivatives(c: &Cloud, s: &mut State, set: &Settings) {
    let ls = &s.ls;
    let fit = links_fit(c, &[c.x.len(), c.y.len(), s.q.len(), s.qx.len(), s.qy.len(), s.qx2.len(), s.qy2.len()]);
    assert!(fit, "a neighbour index is out of the cloud's range");
    {
        let q = &s.q;
        s.qx.par_chunks_mut(CHUNK)
            .zip(s.qy.par_chunks_mut(CHUNK))
            .zip(s.qmax.par_chunks_mut(CHUNK).zip(s.qmin.par_chunks_mut(CHUNK)))
            .enumerate()
            .for_each(|(b, ((qx, qy), (qmax, qmin)))| {
                with_simd(
                    #[inline(always)]
                    || {
                        for (j, (((qx, qy), qmax), qmin)) in qx.iter_mut().zip(qy).zip(qmax).zip(qmin).enumerate() {
                            let i = b * CHUNK + j;
                            // SAFETY: the neighbours index q, c.x and c.y (checked above).
                            (*qx, *qy, *qmax, *qmin) = unsafe { first_order(c, q, &ls.full[i], set.power, i) };
                        }
                    },
                )
            });
    }
    for _ in 0..set.inner_iterations {
        {
            let (q, qx, qy) = (&s.q, &s.qx, &s.qy);
            s.qx2.par_chunks_mut(CHUNK).zip(s.qy2.par_chunks_mut(CHUNK)).enumerate().for_each(|(b, (qx2, qy2))| {
                with_simd(
                    #[inline(always)]
                    || {
                        for (j, (a, d)) in qx2.iter_mut().zip(qy2).enumerate() {
                            let i = b * CHUNK + j;
                            // SAFETY: the neighbours index q, qx, qy, c.x and c.y (checked
                            // above; qx and qy swap with qx2 and qy2, checked too).
                            (*a, *d) = unsafe { inner_sweep(c, q, qx, qy, &ls.full[i], set.power, i) };
                        }
                    },
                )
            });
        }
        std::mem::swap(&mut s.qx, &mut s.qx2);
        std::mem::swap(&mut s.qy, &mut s.qy2);
    }
}

/// Runs `f` built for AVX2 where the CPU has it (the q-derivatives: plain `*` and `+`, no
/// FMA contraction, so the bits are those of the portable build).
#[inline(always)]
fn with_simd(f: impl FnOnce()) {
    #[cfg(target_arch = "x86_64")]
    if Simd::detect() != Simd::None {
        // SAFETY: the CPU has AVX2 (detected).
        return unsafe { avx2(f) };
    }
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2(f: impl FnOnce()) {
    f()
}

/// Which surface points enter the force integration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForcePoints {
    /// Wall points only (flag_1 = 0).
    Wall,
    /// Every point with flag_2 > 0 (includes a trailing-edge point flagged interior).
    Shape,
}

/// Lift, drag and quarter-chord moment coefficients (spec 10.2), chord 1.
pub fn coefficients(c: &Cloud, prim: &[V4], mach: f64, aoa_deg: f64, which: ForcePoints) -> (f64, f64, f64) {
    let p_inf = 1.0 / k::GAMMA;
    let (mut h, mut v, mut m) = (0.0, 0.0, 0.0);
    for i in c.file_order() {
        let take = match which {
            ForcePoints::Wall => c.flag[i] == WALL,
            ForcePoints::Shape => c.shape[i] > 0,
        };
        if !take || c.left[i] == super::cloud::NONE || c.right[i] == super::cloud::NONE {
            continue;
        }
        let (l, r) = (c.left[i] as usize, c.right[i] as usize);
        let dl = ((c.x[i] - c.x[l]).powi(2) + (c.y[i] - c.y[l]).powi(2)).sqrt();
        let dr = ((c.x[r] - c.x[i]).powi(2) + (c.y[r] - c.y[i]).powi(2)).sqrt();
        let ds = 0.5 * (dl + dr);
        let cneg = -k::cp(prim[i][3], p_inf, 1.0, mach);
        h += cneg * c.nx[i] * ds;
        v += cneg * c.ny[i] * ds;
        m += -cneg * c.ny[i] * ds * (c.x[i] - 0.25) + cneg * c.nx[i] * ds * c.y[i];
    }
    let a = aoa_deg * std::f64::consts::PI / 180.0;
    (v * a.cos() - h * a.sin(), h * a.cos() + v * a.sin(), m)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Venkatakrishnan limiting, SSP(4,3), CFL 0.5, exact math.
    fn settings(inner_iterations: u32, vl_const: f64, power: f64, winf: V4) -> Settings {
        Settings {
            cfl: 0.5,
            inner_iterations,
            vl_const,
            power,
            reconstruct: Reconstruct::Venkat,
            scheme: Scheme::Ssp43,
            winf,
            math: Math::Exact,
        }
    }
    use crate::solvers::lskum::{LskumParams, TimeScheme};

    /// A jittered n x n grid with 3x3-block neighbours, all points interior.
    fn jittered(n: usize, seed: &mut u64) -> Cloud {
        let mut c = Cloud::default();
        let mut rnd = || {
            *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        for j in 0..n {
            for i in 0..n {
                c.x.push(i as f64 * 0.1 + 0.03 * rnd());
                c.y.push(j as f64 * 0.1 + 0.03 * rnd());
            }
        }
        c.conn.start.push(0);
        for j in 0..n as i64 {
            for i in 0..n as i64 {
                for dj in -1..=1i64 {
                    for di in -1..=1i64 {
                        let (a, b) = (i + di, j + dj);
                        if (di, dj) != (0, 0) && a >= 0 && b >= 0 && a < n as i64 && b < n as i64 {
                            c.conn.idx.push((b * n as i64 + a) as u32);
                        }
                    }
                }
                c.conn.start.push(c.conn.idx.len() as u32);
            }
        }
        let m = c.x.len();
        c.flag = vec![INTERIOR; m];
        c.nx = vec![0.0; m];
        c.ny = vec![1.0; m];
        c.min_dist = vec![0.05; m];
        c.build_stencils();
        c
    }

    #[test]
    fn q_derivatives_exact_for_linear_fields_with_inner_iterations() {
        let mut seed = 3u64;
        let c = jittered(12, &mut seed);
        let (a, b) = ([0.3, -1.2, 0.5, 2.0], [-0.7, 0.4, 1.1, -0.2]);
        for (power, inner) in [(0.0, 0), (0.0, 3), (-2.0, 3)] {
            let set = settings(inner, 50.0, power, k::free_stream(0.5, 0.0));
            let mut s = State::new(&c, &set);
            for i in 0..c.len() {
                for r in 0..4 {
                    s.q[i][r] = 1.0 + a[r] * c.x[i] + b[r] * c.y[i];
                }
            }
            q_derivatives(&c, &mut s, &set);
            for i in 0..c.len() {
                for r in 0..4 {
                    assert!((s.qx[i][r] - a[r]).abs() < 1e-11, "qx point {i} [{r}] {} (inner {inner})", s.qx[i][r]);
                    assert!((s.qy[i][r] - b[r]).abs() < 1e-11, "qy point {i} [{r}] {} (inner {inner})", s.qy[i][r]);
                }
            }
        }
    }

    /// The q-derivatives with the matrices summed once are the bits of summing them per point.
    #[test]
    fn kept_matrices_give_the_bits_of_per_point_sums() {
        let (c, _) = patch_with_boundaries(13);
        for power in [0.0, -2.0] {
            let set = settings(0, 5.0, power, k::free_stream(0.63, 2.0));
            let s = State::new(&c, &set);
            let q: Vec<V4> = (0..c.len()).map(|i| k::q_of_prim([1.0 + 0.2 * c.x[i], 0.5, 0.1 * c.y[i], 0.7])).collect();
            for i in 0..c.len() {
                let mut ls = LsSums::<4>::new();
                for &kk in c.conn.of(i) {
                    let e = Edge::new(&c, i, kk as usize, power);
                    ls.add(e.dx, e.dy, e.w, &std::array::from_fn(|r| q[kk as usize][r] - q[i][r]));
                }
                // SAFETY: the patch's neighbours are its points.
                let (qx, qy, _, _) = unsafe { first_order(&c, &q, &s.ls.full[i], power, i) };
                let bits = |v: V4| v.map(f64::to_bits);
                assert_eq!((bits(qx), bits(qy)), (bits(ls.d_ds()), bits(ls.d_dn())), "point {i}, power {power}");
            }
        }
    }

    #[test]
    fn one_pass_residual_equals_stencil_by_stencil() {
        let mut seed = 5u64;
        let mut c = jittered(9, &mut seed);
        // a wall row and an outer row to exercise every branch
        for i in 0..9 {
            c.flag[i] = WALL;
            c.flag[72 + i] = OUTER;
            c.nx[72 + i] = 0.0;
            c.ny[72 + i] = 1.0;
            c.nx[i] = 0.0;
            c.ny[i] = 1.0;
        }
        c.build_stencils();
        let set = settings(2, 5.0, 0.0, k::free_stream(0.63, 2.0));
        let mut s = State::new(&c, &set);
        for i in 0..c.len() {
            let w = [1.0 + 0.1 * c.x[i], 0.6 - 0.2 * c.y[i] * c.x[i], 0.05 * c.x[i], 0.7 + 0.05 * c.y[i]];
            s.q[i] = k::q_of_prim(w);
        }
        q_derivatives(&c, &mut s, &set);
        let fi = FluxInput { c: &c, q: &s.q, qx: &s.qx, qy: &s.qy, qmax: &s.qmax, qmin: &s.qmin, ls: &s.ls, set: &set };
        for i in (0..c.len()).filter(|i| i % 9 != 0 && i % 9 != 8) {
            let (a, b) = (fi.residual(i), fi.residual_by_stencil(i));
            assert_eq!(a.map(f64::to_bits), b.map(f64::to_bits), "point {i}");
        }
    }

    /// A jittered 9 x 9 patch with a wall row and an outer row, and second-order settings.
    fn patch_with_boundaries(mut seed: u64) -> (Cloud, Settings) {
        let mut c = jittered(9, &mut seed);
        for i in 0..9 {
            (c.flag[i], c.flag[72 + i]) = (WALL, OUTER);
        }
        c.build_stencils();
        (c, settings(2, 5.0, 0.0, k::free_stream(0.63, 2.0)))
    }

    /// The fast residual is within 1e-13 of the exact one (relative to the largest term), and
    /// the same bits in every SIMD build.
    #[test]
    fn fast_residual_matches_exact_and_every_simd_level() {
        let (c, set) = patch_with_boundaries(9);
        let mut s = State::new(&c, &set);
        for i in 0..c.len() {
            // strong gradients, Mach up to about 2 (|s| of the fluxes up to about 2)
            let w = [1.0 + 0.5 * c.x[i], 2.0 - 3.0 * c.y[i] * c.x[i], 0.8 * c.x[i] - 0.4, 0.7 + 0.3 * c.y[i]];
            s.q[i] = k::q_of_prim(w);
        }
        q_derivatives(&c, &mut s, &set);
        let fi = FluxInput { c: &c, q: &s.q, qx: &s.qx, qy: &s.qy, qmax: &s.qmax, qmin: &s.qmin, ls: &s.ls, set: &set };
        let zero = vec![[0.0; 4]; c.len()];
        let (mut exact, mut fast, mut plain) = (zero.clone(), zero.clone(), zero);
        residuals(&fi, Math::Exact, &mut exact);
        residuals(&fi, Math::Fast, &mut fast);
        residuals_fast(&fi, 0, &mut plain);
        let bits = |v: &[V4]| v.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&fast), bits(&plain), "{:?}", Simd::detect());
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            let mut avx2 = vec![[0.0; 4]; c.len()];
            // SAFETY: the CPU has AVX2 (detected).
            unsafe { residuals_fast_avx2(&fi, 0, &mut avx2) };
            assert_eq!(bits(&avx2), bits(&plain), "AVX2");
        }
        // points off the sides of the patch (full split stencils)
        let inside: Vec<usize> = (0..c.len()).filter(|i| i % 9 != 0 && i % 9 != 8).collect();
        let scale = inside.iter().flat_map(|&i| exact[i]).fold(0.0f64, |m, v| m.max(v.abs()));
        for &i in &inside {
            for m in 0..4 {
                assert!((fast[i][m] - exact[i][m]).abs() <= 1e-13 * scale, "point {i} [{m}]: {fast:?} vs {exact:?}");
            }
        }
    }

    /// The per-edge loop that [`FluxInput::residual_fast`] vectorises: the fast kinetic state
    /// of each end, the edge's terms added to the stencils it is in.
    fn residual_fast_per_edge(fi: &FluxInput, i: usize) -> V4 {
        let c = fi.c;
        let kinds = stencil_kinds(c.flag[i]);
        let mut ls = [LsRhs::<4>::new(); 4];
        for &kk in c.conn.of(i) {
            let e = fi.edge(i, kk as usize);
            let state = |p: usize| k::kinetic_of_q_fast(fi.reconstruct(p, i, e.dx, e.dy), c.nx[i], c.ny[i]);
            e.accumulate(&mut ls, &kinds, &state(i), &state(kk as usize));
        }
        stencil_sum(c.flag[i], &ls, &fi.ls.split[i])
    }

    #[test]
    fn fast_residual_equals_the_per_edge_loop() {
        let (jittered, set) = patch_with_boundaries(11);
        // the even rows and columns moved onto the lattice: edges along them have ds = 0 or
        // dn = 0 exactly and are in two stencils of a direction
        let mut aligned = jittered.clone();
        for i in 0..aligned.len() {
            let (col, row) = (i % 9, i / 9);
            if col % 2 == 0 {
                aligned.x[i] = col as f64 * 0.1;
            }
            if row % 2 == 0 {
                aligned.y[i] = row as f64 * 0.1;
            }
        }
        aligned.build_stencils();
        // edges i -> kk of `c` along which coordinate `d` (0: x, 1: y) does not change
        let along = |c: &Cloud, d: usize| {
            let v = [&c.x, &c.y][d];
            (0..c.len()).map(|i| c.conn.of(i).iter().filter(|&&kk| v[kk as usize] == v[i]).count()).sum::<usize>()
        };
        let (zero_ds, zero_dn) = (along(&aligned, 0), along(&aligned, 1));
        assert!(zero_ds > 50 && zero_dn > 50, "{zero_ds} {zero_dn}");
        assert_eq!(along(&jittered, 0) + along(&jittered, 1), 0);
        for c in [jittered, aligned] {
            fast_residual_equals_the_per_edge_loop_on(&c, &set);
        }
    }

    fn fast_residual_equals_the_per_edge_loop_on(c: &Cloud, set: &Settings) {
        let mut s = State::new(c, set);
        let mut pieces = [0; 4];
        for i in 0..c.len() {
            // near free stream on the left (erf's first piece only), up to Mach 3 on the right
            let w = [1.0 + 0.3 * c.x[i], 0.5 + 3.0 * c.x[i] * c.x[i], 0.6 * c.y[i] - 0.3, 0.7 + 0.2 * c.y[i]];
            s.q[i] = k::q_of_prim(w);
            pieces[k::erf_pieces_of_q(s.q[i], c.nx[i], c.ny[i]) as usize] += 1;
        }
        assert!(pieces[1] > 0 && pieces[2] > 0 && pieces[3] > 0, "{pieces:?}");
        q_derivatives(c, &mut s, set);
        let fi = FluxInput { c, q: &s.q, qx: &s.qx, qy: &s.qy, qmax: &s.qmax, qmin: &s.qmin, ls: &s.ls, set };
        let mut fast = vec![[0.0; 4]; c.len()];
        residuals(&fi, Math::Fast, &mut fast);
        for (i, r) in fast.iter().enumerate() {
            assert_eq!(r.map(f64::to_bits), residual_fast_per_edge(&fi, i).map(f64::to_bits), "point {i}");
        }
    }

    /// The stages of the time schemes give the bits of the former hard-coded update:
    /// `u - 0.5 * euler * dt * res` (euler 2 for forward Euler, 1 for SSP(4,3)), blended as
    /// `(2/3) u_old + (1/3) un` at stage 3 of SSP(4,3).
    #[test]
    fn stages_reproduce_the_former_update() {
        let v = crate::testing::noise(4000, 7);
        for (tscheme, euler) in [(TimeScheme::Ssprk43, 1.0), (TimeScheme::First, 2.0)] {
            let stages = LskumParams { tscheme, ..LskumParams::with_cloud("x", Default::default(), 0.5, 0.0) }
                .settings()
                .scheme
                .stages();
            for (k, stage) in stages.iter().enumerate() {
                for x in v.chunks_exact(4) {
                    let (u_old, u, dt, res) = (x[0] * 3.0 - 1.0, x[1] * 2.0 + 0.5, x[2] * 1e-3, x[3] * 40.0 - 20.0);
                    let mut un = u - 0.5 * euler * dt * res;
                    if stages.len() == 4 && k + 1 == 3 {
                        un = (2.0 / 3.0) * u_old + (1.0 / 3.0) * un;
                    }
                    assert_eq!(stage.apply(u_old, u, dt, res).to_bits(), un.to_bits(), "{tscheme:?} stage {k}");
                }
            }
        }
    }

    #[test]
    fn time_scheme_names() {
        for (name, t) in [
            ("ssprk43", TimeScheme::Ssprk43),
            ("ssp43", TimeScheme::Ssprk43),
            ("first", TimeScheme::First),
            ("forward_euler", TimeScheme::First),
        ] {
            assert_eq!(serde_json::from_str::<TimeScheme>(&format!("\"{name}\"")).unwrap(), t);
        }
        assert_eq!(serde_json::to_string(&TimeScheme::Ssprk43).unwrap(), "\"ssprk43\"");
        assert_eq!(serde_json::to_string(&TimeScheme::First).unwrap(), "\"first\"");
    }

    #[test]
    fn uniform_free_stream_has_zero_residual() {
        let mut seed = 11u64;
        let c = jittered(8, &mut seed);
        let set = settings(3, 50.0, 0.0, k::free_stream(0.63, 2.0));
        let mut s = State::new(&c, &set);
        s.q.iter_mut().for_each(|q| *q = k::q_of_prim(set.winf));
        q_derivatives(&c, &mut s, &set);
        let fi = FluxInput { c: &c, q: &s.q, qx: &s.qx, qy: &s.qy, qmax: &s.qmax, qmin: &s.qmin, ls: &s.ls, set: &set };
        // points off the edge of the patch (full split stencils)
        for i in (0..c.len()).filter(|i| i % 8 != 0 && i % 8 != 7 && i / 8 != 0 && i / 8 != 7) {
            let r = fi.residual(i);
            assert!(r.iter().all(|v| v.abs() < 1e-12), "{r:?}");
        }
    }
}
