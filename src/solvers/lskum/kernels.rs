//! Per-point numerics of q-LSKUM as small pure functions (no allocation, no shared state),
//! written so that a GPU port can mirror them one to one.
//!
//! Conventions: primitive state `(rho, u, v, p)`; a point frame is given by its unit normal
//! `n = (nx, ny)` with tangent `t = (ny, -nx)`; flux components are ordered
//! (mass, t-momentum, n-momentum, energy).

use crate::numerics::fast_math;

/// Ratio of specific heats.
pub const GAMMA: f64 = 1.4;
/// `gamma - 1`.
pub const GM1: f64 = GAMMA - 1.0;
/// `1 / (gamma - 1)`.
pub const INV_GM1: f64 = 1.0 / (GAMMA - 1.0);
/// `gamma / (gamma - 1)` (enthalpy factor).
pub const H_FAC: f64 = GAMMA / (GAMMA - 1.0);
/// `(gamma + 1) / (2 (gamma - 1))` (kinetic energy flux factor).
pub const EB_FAC: f64 = (GAMMA + 1.0) / (2.0 * (GAMMA - 1.0));
/// Limiter threshold on |Delta^-| below which phi = 1.
/// The reference Fortran writes it as the single-precision literal `10e-6` (9.999999747378752e-6).
pub const LIMITER_THRESHOLD: f64 = 10e-6_f32 as f64;

pub type V4 = [f64; 4];

/// Free-stream primitive state for Mach number `mach` and angle of attack `aoa_deg` (degrees).
pub fn free_stream(mach: f64, aoa_deg: f64) -> V4 {
    let a = aoa_deg * std::f64::consts::PI / 180.0;
    [1.0, mach * a.cos(), mach * a.sin(), 1.0 / GAMMA]
}

/// q-variables of a primitive state (paper eq. 11).
#[inline]
pub fn q_of_prim(w: V4) -> V4 {
    let [rho, u, v, p] = w;
    let beta = 0.5 * rho / p;
    let two_beta = 2.0 * beta;
    [
        rho.ln() + beta.ln() * INV_GM1 - beta * (u * u + v * v),
        two_beta * u,
        two_beta * v,
        -two_beta,
    ]
}

/// Inverse of [`q_of_prim`].
#[inline]
pub fn prim_of_q(q: V4) -> V4 {
    let beta = -0.5 * q[3];
    let tau = 0.5 / beta;
    let u = q[1] * tau;
    let v = q[2] * tau;
    let rho = (q[0] + beta * (u * u + v * v) - beta.ln() * INV_GM1).exp();
    [rho, u, v, rho * tau]
}

/// Quantities shared by the split and quadrant fluxes of a state in a point frame.
#[derive(Clone, Copy, Debug)]
pub struct Kinetic {
    pub rho: f64,
    pub ut: f64,
    pub un: f64,
    pub pr: f64,
    /// p / rho
    pub t: f64,
    pub at_p: f64,
    pub at_m: f64,
    pub an_p: f64,
    pub an_m: f64,
    pub bt: f64,
    pub bn: f64,
    pub h: f64,
    pub eb: f64,
}

#[inline]
pub fn kinetic(w: V4, nx: f64, ny: f64) -> Kinetic {
    kinetic_part(w, nx, ny, true, true)
}

/// [`kinetic`] computing the error-function and exponential terms only along t (`along_t`)
/// and/or n (`along_n`); the others are left 0.
#[inline]
pub fn kinetic_part(w: V4, nx: f64, ny: f64, along_t: bool, along_n: bool) -> Kinetic {
    let [rho, u, v, pr] = w;
    let ut = u * ny - v * nx;
    let un = u * nx + v * ny;
    let beta = 0.5 * rho / pr;
    let sqrt_beta = beta.sqrt();
    let st = ut * sqrt_beta;
    let sn = un * sqrt_beta;
    let sqrt_pi_beta = (std::f64::consts::PI * beta).sqrt();
    let (erf_t, bt) = if along_t { (erf(st), (-st * st).exp() / (2.0 * sqrt_pi_beta)) } else { (0.0, 0.0) };
    let (erf_n, bn) = if along_n { (erf(sn), (-sn * sn).exp() / (2.0 * sqrt_pi_beta)) } else { (0.0, 0.0) };
    let t = pr / rho;
    let u2 = ut * ut + un * un;
    Kinetic {
        rho,
        ut,
        un,
        pr,
        t,
        at_p: 0.5 * (1.0 + erf_t),
        at_m: 0.5 * (1.0 - erf_t),
        an_p: 0.5 * (1.0 + erf_n),
        an_m: 0.5 * (1.0 - erf_n),
        bt,
        bn,
        h: H_FAC * t + 0.5 * u2,
        eb: EB_FAC * t + 0.5 * u2,
    }
}

/// The kinetic state of the reconstructed `q` in the frame (nx, ny) under `cpu.math: fast`:
/// [`kinetic`] of [`prim_of_q`] (every direction), rearranged for fewer costly operations,
/// with the branch-free functions of [`fast_math`], which a loop over edge ends vectorises.
/// The algebra, for gamma = 1.4: beta = -q4/2 taken from q (not rho/(2p) after the round
/// trip); rho = e^(q1 + beta |u|^2) beta^(-5/2), a square root instead of a logarithm; p/rho =
/// 1/(2 beta); sqrt(pi beta) = sqrt(pi) sqrt(beta); one division for both exponential terms.
/// Equal to [`kinetic`] within round-off, not to its bits. The two factors of rho are apart
/// only where rho beta^(5/2) leaves [e^-708, e^708] (not a gas state of an Euler run).
#[inline(always)]
pub fn kinetic_of_q_fast(q: V4, nx: f64, ny: f64) -> Kinetic {
    kinetic_of_q_fast_in::<3>(q, nx, ny)
}

/// [`kinetic_of_q_fast`] where the error functions' arguments need at most `ERF_PIECES` of
/// [`fast_math::erf`]'s pieces ([`erf_pieces_of_q`]): the same bits with less arithmetic.
#[inline(always)]
pub fn kinetic_of_q_fast_in<const ERF_PIECES: u8>(q: V4, nx: f64, ny: f64) -> Kinetic {
    const _: () = assert!(GAMMA == 1.4, "rho's power of beta holds for gamma = 1.4");
    let f = FrameOfQ::new(q, nx, ny);
    let rho = fast_math::exp(q[0] + f.beta * f.u2) / (f.beta * f.beta * f.sqrt_beta);
    let erf = fast_math::erf_in::<ERF_PIECES>;
    let (erf_t, erf_n) = (erf(f.st), erf(f.sn));
    // 1 / (2 sqrt(pi beta))
    let b = 0.25 * std::f64::consts::FRAC_2_SQRT_PI / f.sqrt_beta;
    Kinetic {
        rho,
        ut: f.ut,
        un: f.un,
        pr: rho * f.tau,
        t: f.tau,
        at_p: 0.5 * (1.0 + erf_t),
        at_m: 0.5 * (1.0 - erf_t),
        an_p: 0.5 * (1.0 + erf_n),
        an_m: 0.5 * (1.0 - erf_n),
        bt: fast_math::exp(-f.st * f.st) * b,
        bn: fast_math::exp(-f.sn * f.sn) * b,
        h: H_FAC * f.tau + 0.5 * f.u2,
        eb: EB_FAC * f.tau + 0.5 * f.u2,
    }
}

/// How many of [`fast_math::erf`]'s pieces [`kinetic_of_q_fast`] of `q` needs (1 to 3).
#[inline(always)]
pub fn erf_pieces_of_q(q: V4, nx: f64, ny: f64) -> u8 {
    let f = FrameOfQ::new(q, nx, ny);
    fast_math::erf_piece(f.st).max(fast_math::erf_piece(f.sn))
}

/// Velocity and temperature of a q-state in the frame (nx, ny): beta = -q4/2, tau = p/rho =
/// 1/(2 beta), |u|^2, sqrt(beta), the velocity (ut, un) and the scaled speeds (st, sn) =
/// (ut, un) sqrt(beta) that the error functions take.
struct FrameOfQ {
    beta: f64,
    tau: f64,
    u2: f64,
    sqrt_beta: f64,
    ut: f64,
    un: f64,
    st: f64,
    sn: f64,
}

impl FrameOfQ {
    #[inline(always)]
    fn new(q: V4, nx: f64, ny: f64) -> Self {
        let beta = -0.5 * q[3];
        let tau = 0.5 / beta;
        let (u, v) = (q[1] * tau, q[2] * tau);
        let sqrt_beta = beta.sqrt();
        let ut = u * ny - v * nx;
        let un = u * nx + v * ny;
        FrameOfQ { beta, tau, u2: u * u + v * v, sqrt_beta, ut, un, st: ut * sqrt_beta, sn: un * sqrt_beta }
    }
}

/// Half-range flux G_x^s (s = +1 or -1) along the tangent.
#[inline]
pub fn gx_split(k: &Kinetic, s: f64) -> V4 {
    let a = if s > 0.0 { k.at_p } else { k.at_m };
    let f = k.ut * a + s * k.bt;
    [
        k.rho * f,
        k.rho * ((k.t + k.ut * k.ut) * a + s * k.ut * k.bt),
        k.rho * (k.un * f),
        k.rho * (k.ut * k.h * a + s * k.eb * k.bt),
    ]
}

/// Half-range flux G_y^s (s = +1 or -1) along the normal.
#[inline]
pub fn gy_split(k: &Kinetic, s: f64) -> V4 {
    let a = if s > 0.0 { k.an_p } else { k.an_m };
    let f = k.un * a + s * k.bn;
    [
        k.rho * f,
        k.rho * (k.ut * f),
        k.rho * ((k.t + k.un * k.un) * a + s * k.un * k.bn),
        k.rho * (k.un * k.h * a + s * k.eb * k.bn),
    ]
}

/// Quadrant flux Q^{s1 s2}: split with sign s1 along t and s2 along n.
/// G_xI = Q(-,-), G_xII = Q(+,-), G_xIII = Q(+,+), G_xIV = Q(-,+).
#[inline]
pub fn quadrant(k: &Kinetic, s1: f64, s2: f64) -> V4 {
    let at = if s1 > 0.0 { k.at_p } else { k.at_m };
    let an = if s2 > 0.0 { k.an_p } else { k.an_m };
    let f = k.ut * at + s1 * k.bt;
    [
        k.rho * an * f,
        k.rho * an * ((k.t + k.ut * k.ut) * at + s1 * k.ut * k.bt),
        k.rho * f * (k.un * an + s2 * k.bn),
        k.rho * an * (k.ut * k.h * at + s1 * k.eb * k.bt) + s2 * 0.5 * k.rho * k.un * k.bn * f,
    ]
}

/// The flux a stencil differences (table 8.2 of the specification).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FluxKind {
    GxPos,
    GxNeg,
    GyPos,
    GyNeg,
    /// Q(-,-)
    GxI,
    /// Q(+,-)
    GxII,
    /// Q(+,+)
    GxIII,
    /// Q(-,+)
    GxIV,
}

#[inline]
pub fn flux(kind: FluxKind, w: V4, nx: f64, ny: f64) -> V4 {
    let (t, n) = kind.directions();
    flux_of(kind, &kinetic_part(w, nx, ny, t, n))
}

impl FluxKind {
    /// Whether the flux needs the error-function terms along t and along n.
    #[inline]
    pub fn directions(self) -> (bool, bool) {
        match self {
            FluxKind::GxPos | FluxKind::GxNeg => (true, false),
            FluxKind::GyPos | FluxKind::GyNeg => (false, true),
            _ => (true, true),
        }
    }
}

/// The flux `kind` from a kinetic state that has at least its [`FluxKind::directions`]: the
/// terms of each direction are computed the same way whichever others are, so one state can
/// serve several kinds with the bits of [`flux`].
#[inline(always)]
pub fn flux_of(kind: FluxKind, k: &Kinetic) -> V4 {
    match kind {
        FluxKind::GxPos => gx_split(k, 1.0),
        FluxKind::GxNeg => gx_split(k, -1.0),
        FluxKind::GyPos => gy_split(k, 1.0),
        FluxKind::GyNeg => gy_split(k, -1.0),
        FluxKind::GxI => quadrant(k, -1.0, -1.0),
        FluxKind::GxII => quadrant(k, 1.0, -1.0),
        FluxKind::GxIII => quadrant(k, 1.0, 1.0),
        FluxKind::GxIV => quadrant(k, -1.0, 1.0),
    }
}

/// Least-squares weight `d^power` (`power = 0` gives 1).
#[inline]
pub fn ls_weight(dx: f64, dy: f64, power: f64) -> f64 {
    if power == 0.0 { 1.0 } else { (dx * dx + dy * dy).sqrt().powf(power) }
}

/// Running sums of a 2D least-squares derivative of `M` quantities.
#[derive(Clone, Copy, Debug)]
pub struct LsSums<const M: usize> {
    pub sss: f64,
    pub snn: f64,
    pub ssn: f64,
    pub rhs: LsRhs<M>,
}

impl<const M: usize> LsSums<M> {
    #[inline]
    pub fn new() -> Self {
        LsSums { sss: 0.0, snn: 0.0, ssn: 0.0, rhs: LsRhs::new() }
    }

    /// Add a neighbour at offset (ds, dn) with weight w and differences df.
    #[inline(always)]
    pub fn add(&mut self, ds: f64, dn: f64, w: f64, df: &[f64; M]) {
        self.sss += w * ds * ds;
        self.snn += w * dn * dn;
        self.ssn += w * ds * dn;
        self.rhs.add(ds, dn, w, df);
    }

    /// Determinant of the 2x2 normal matrix.
    #[inline]
    pub fn det(&self) -> f64 {
        self.sss * self.snn - self.ssn * self.ssn
    }

    /// The normal matrix of the sums.
    #[inline]
    pub fn matrix(&self) -> LsMatrix {
        LsMatrix { sss: self.sss, snn: self.snn, ssn: self.ssn, inv_det: 1.0 / self.det() }
    }

    /// (d/ds, d/dn) of the M quantities.
    #[inline]
    pub fn solve(&self) -> ([f64; M], [f64; M]) {
        (self.d_ds(), self.d_dn())
    }

    /// d/ds only.
    #[inline]
    pub fn d_ds(&self) -> [f64; M] {
        self.rhs.d_ds(&self.matrix())
    }

    /// d/dn only.
    #[inline]
    pub fn d_dn(&self) -> [f64; M] {
        self.rhs.d_dn(&self.matrix())
    }
}

impl<const M: usize> Default for LsSums<M> {
    fn default() -> Self {
        Self::new()
    }
}

/// The normal matrix of a least-squares stencil (sums of w ds^2, w dn^2, w ds dn) and the
/// inverse of its determinant: it depends on the cloud and the weights only, so a run sums
/// it once ([`super::scheme::LsMatrices`]) rather than in every derivative.
#[derive(Clone, Copy, Debug)]
pub struct LsMatrix {
    pub sss: f64,
    pub snn: f64,
    pub ssn: f64,
    pub inv_det: f64,
}

/// The right-hand sides of a least-squares derivative of `M` quantities (sums of w ds df and
/// w dn df), solved with the stencil's [`LsMatrix`].
#[derive(Clone, Copy, Debug)]
pub struct LsRhs<const M: usize> {
    pub sdf: [f64; M],
    pub ndf: [f64; M],
}

impl<const M: usize> LsRhs<M> {
    #[inline(always)]
    pub fn new() -> Self {
        LsRhs { sdf: [0.0; M], ndf: [0.0; M] }
    }

    /// Add a neighbour at offset (ds, dn) with weight w and differences df.
    #[inline(always)]
    pub fn add(&mut self, ds: f64, dn: f64, w: f64, df: &[f64; M]) {
        for ((s, n), &d) in self.sdf.iter_mut().zip(&mut self.ndf).zip(df) {
            *s += w * ds * d;
            *n += w * dn * d;
        }
    }

    /// (d/ds, d/dn) of the M quantities.
    #[inline(always)]
    pub fn solve(&self, m: &LsMatrix) -> ([f64; M], [f64; M]) {
        (self.d_ds(m), self.d_dn(m))
    }

    /// d/ds only.
    #[inline(always)]
    pub fn d_ds(&self, m: &LsMatrix) -> [f64; M] {
        std::array::from_fn(|r| (m.snn * self.sdf[r] - m.ssn * self.ndf[r]) * m.inv_det)
    }

    /// d/dn only.
    #[inline(always)]
    pub fn d_dn(&self, m: &LsMatrix) -> [f64; M] {
        std::array::from_fn(|r| (m.sss * self.ndf[r] - m.ssn * self.sdf[r]) * m.inv_det)
    }
}

impl<const M: usize> Default for LsRhs<M> {
    fn default() -> Self {
        Self::new()
    }
}

/// Venkatakrishnan limiter of one component (reference form, spec 6.2): `q` value at the point,
/// `d = dx q_x + dy q_y`, bounds of the point, `eps2 = (K min_dist)^6`.
#[inline]
pub fn venkat(q: f64, d: f64, qmax: f64, qmin: f64, eps2: f64) -> f64 {
    let q_tilde = q - 0.5 * d;
    let del_neg = q_tilde - q;
    // Written as selects (the division is done even where its result is not taken), so
    // that a loop over edge ends vectorises.
    let del_pos = if del_neg > 0.0 { qmax - q } else { qmin - q };
    let num = (del_pos * del_pos + eps2) * del_neg + 2.0 * del_neg * del_neg * del_pos;
    let den = (del_pos * del_pos + 2.0 * del_neg * del_neg + del_neg * del_pos + eps2) * del_neg;
    let phi = num / den;
    let phi = if phi < 1.0 { phi } else { 1.0 };
    if del_neg.abs() <= LIMITER_THRESHOLD { 1.0 } else { phi }
}

/// `(K min_dist)^6`, the epsilon squared of the limiter (reference form).
#[inline]
pub fn venkat_eps2(k: f64, min_dist: f64) -> f64 {
    let e = k * min_dist;
    let e3 = e * e * e;
    e3 * e3
}

/// How the reconstruction at the ends of an edge is limited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reconstruct {
    /// Venkatakrishnan limiter (each end with its own bounds).
    Venkat,
    /// Min-max clipping to the bounds of point i (both ends).
    MinMax,
    /// No reconstruction: q~ = q (first-order accuracy).
    None,
}

/// Venkatakrishnan-limited reconstruction `q - 1/2 phi (dx q_x + dy q_y)` at one end of an edge.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the per-edge inputs of one inlined formula
pub fn reconstruct_venkat(q: &V4, qx: &V4, qy: &V4, qmax: &V4, qmin: &V4, eps2: f64, dx: f64, dy: f64) -> V4 {
    let mut out = [0.0; 4];
    for r in 0..4 {
        let d = dx * qx[r] + dy * qy[r];
        let phi = venkat(q[r], d, qmax[r], qmin[r], eps2);
        out[r] = q[r] - 0.5 * phi * d;
    }
    out
}

/// Unlimited reconstruction clipped to `[qmin, qmax]`.
#[inline]
pub fn reconstruct_minmax(q: &V4, qx: &V4, qy: &V4, qmax: &V4, qmin: &V4, dx: f64, dy: f64) -> V4 {
    let mut out = [0.0; 4];
    for r in 0..4 {
        let v = q[r] - 0.5 * (dx * qx[r] + dy * qy[r]);
        out[r] = if v > qmax[r] {
            qmax[r]
        } else if v < qmin[r] {
            qmin[r]
        } else {
            v
        };
    }
    out
}

/// Conserved variables in the point frame: (rho, rho u_t, rho u_n, E).
#[inline]
pub fn conserved(w: V4, nx: f64, ny: f64) -> V4 {
    let [rho, u, v, p] = w;
    let ut = u * ny - v * nx;
    let un = u * nx + v * ny;
    [rho, rho * ut, rho * un, p * INV_GM1 + 0.5 * rho * (u * u + v * v)]
}

/// Primitive state from point-frame conserved variables.
#[inline]
pub fn prim_of_conserved(c: V4, nx: f64, ny: f64) -> V4 {
    let rho = c[0];
    let rho_u = c[1] * ny + c[2] * nx;
    let rho_v = c[2] * ny - c[1] * nx;
    let u = rho_u / rho;
    let v = rho_v / rho;
    let p = GM1 * (c[3] - 0.5 * (rho_u * rho_u + rho_v * rho_v) / rho);
    [rho, u, v, p]
}

/// Split conserved state of an outer point: incoming half from the free stream `winf`,
/// outgoing half from the local state `w` (spec 9.4).
#[inline]
pub fn outer_state(w: V4, winf: V4, nx: f64, ny: f64) -> V4 {
    let [rho_inf, u_inf, v_inf, p_inf] = winf;
    let ut_inf = u_inf * ny - v_inf * nx;
    let un_inf = u_inf * nx + v_inf * ny;
    let e_inf = p_inf / (rho_inf * GM1) + 0.5 * (ut_inf * ut_inf + un_inf * un_inf);
    let beta_inf = 0.5 * rho_inf / p_inf;
    let s_inf = un_inf * beta_inf.sqrt();
    let a_neg_inf = 0.5 * (1.0 - erf(s_inf));
    let b_inf = (-s_inf * s_inf).exp() / (2.0 * (std::f64::consts::PI * beta_inf).sqrt());

    let [rho, u, v, p] = w;
    let ut = u * ny - v * nx;
    let un = u * nx + v * ny;
    let e = p / (rho * GM1) + 0.5 * (ut * ut + un * un);
    let beta = 0.5 * rho / p;
    let s = un * beta.sqrt();
    let a_pos = 0.5 * (1.0 + erf(s));
    let b = (-s * s).exp() / (2.0 * (std::f64::consts::PI * beta).sqrt());
    [
        rho_inf * a_neg_inf + rho * a_pos,
        rho_inf * ut_inf * a_neg_inf + rho * ut * a_pos,
        rho_inf * (un_inf * a_neg_inf - b_inf) + rho * (un * a_pos + b),
        rho_inf * (e_inf * a_neg_inf - 0.5 * un_inf * b_inf) + rho * (e * a_pos + 0.5 * un * b),
    ]
}

/// Local time-step contribution of neighbour k at distance `dist` with state `wk`.
#[inline]
pub fn dt_neighbour(cfl: f64, dist: f64, wk: V4) -> f64 {
    let [rho, u, v, p] = wk;
    let mod_u = (u * u + v * v).sqrt();
    cfl * dist / (mod_u + 3.0 * (p / rho).sqrt())
}

/// Pressure coefficient (standard sign).
#[inline]
pub fn cp(p: f64, p_inf: f64, rho_inf: f64, mach: f64) -> f64 {
    (p - p_inf) / (0.5 * rho_inf * mach * mach)
}

/// Local Mach number.
#[inline]
pub fn mach_number(w: V4) -> f64 {
    let [rho, u, v, p] = w;
    (u * u + v * v).sqrt() / (GAMMA * p / rho).sqrt()
}

/// The error function (`libm`, a port of the same Sun/FreeBSD algorithm that glibc uses).
#[inline]
pub fn erf(x: f64) -> f64 {
    libm::erf(x)
}

#[cfg(test)]
#[allow(clippy::excessive_precision)] // reference values as the reference code printed them
mod tests {
    use super::*;

    fn fs() -> V4 {
        free_stream(0.63, 2.0)
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn q_variables_test_vector_and_round_trip() {
        let w = fs();
        let q = q_of_prim(w);
        let q_ref = [-1.1695173598468311, 0.8814627094308424, 0.03078135609160585, -1.4];
        for r in 0..4 {
            assert!(close(q[r], q_ref[r], 4e-16), "q[{r}] = {:e} vs {:e}", q[r], q_ref[r]);
        }
        let back = prim_of_q(q_ref);
        let w_ref = [1.0, 0.6296162210220303, 0.02198668292257561, 0.7142857142857144];
        for r in 0..4 {
            assert!(close(back[r], w_ref[r], 1e-15), "w[{r}] = {:e} vs {:e}", back[r], w_ref[r]);
        }
        // round trip on other states
        for w in [[1.1, 0.3, -0.2, 0.8], [0.5, -1.2, 0.7, 0.3], [2.0, 0.0, 0.0, 2.5]] {
            let b = prim_of_q(q_of_prim(w));
            for r in 0..4 {
                assert!((b[r] - w[r]).abs() <= 1e-14 * w[r].abs().max(1.0), "{w:?} -> {b:?}");
            }
        }
    }

    const N1: [[f64; 4]; 8] = [
        [7.414387670506537e-01, 1.018147349082599e+00, 1.630177907764813e-02, 1.909497612176005e+00],
        [-1.118225460286235e-01, 9.255495097717786e-02, -2.458606863126461e-03, -2.105097205591078e-01],
        [3.482751948854874e-01, 2.192797120795117e-01, 3.722126380788031e-01, 8.194268815000877e-01],
        [-3.262885119629118e-01, -2.054365398649901e-01, 3.425564904328491e-01, -7.600969169676635e-01],
        [-5.475085573118323e-02, 4.531700402225748e-02, 3.648641214758376e-02, -1.026559942834043e-01],
        [3.630252432090544e-01, 4.985080433460975e-01, -2.419229520125738e-01, 9.321860690295048e-01],
        [3.784135238415993e-01, 5.196393057365010e-01, 2.582247310902219e-01, 9.773115431465004e-01],
        [-5.707169029744023e-02, 4.723794695492038e-02, -3.894501901071022e-02, -1.078537262757035e-01],
    ];
    const N2: [[f64; 4]; 8] = [
        [6.376602188305880e-01, 8.264636343908258e-01, 2.521047568007321e-01, 1.618941312816958e+00],
        [-1.471592517665091e-01, 1.284132785856851e-01, -5.818074623756637e-02, -2.953489782428940e-01],
        [5.710805906561611e-01, 2.801155819883724e-01, 7.115207983264175e-01, 1.433095708502643e+00],
        [-1.757215117048825e-01, -8.619157142520675e-02, 1.590737172685003e-01, -3.662390019065656e-01],
        [-4.708588904590624e-02, 4.108782366670530e-02, 2.585904618177038e-02, -8.570972070776875e-02],
        [2.040292944713007e-01, 2.644398807568494e-01, -1.120506176069771e-01, 4.799095251441940e-01],
        [4.336309243592874e-01, 5.620237536339764e-01, 3.641553744077091e-01, 1.139031787672764e+00],
        [-1.000733627206029e-01, 8.732545491897981e-02, -8.403979241933673e-02, -2.096392575351252e-01],
    ];
    const KINDS: [FluxKind; 8] = [
        FluxKind::GxPos,
        FluxKind::GxNeg,
        FluxKind::GyPos,
        FluxKind::GyNeg,
        FluxKind::GxI,
        FluxKind::GxII,
        FluxKind::GxIII,
        FluxKind::GxIV,
    ];

    #[test]
    fn split_and_quadrant_fluxes_match_test_vectors() {
        // Tabulated to 16 significant digits.
        for ((nx, ny), table) in [((0.0, 1.0), N1), ((0.6, 0.8), N2)] {
            for (kind, row) in KINDS.iter().zip(table) {
                let g = flux(*kind, fs(), nx, ny);
                for r in 0..4 {
                    assert!(close(g[r], row[r], 2e-15), "{kind:?} n=({nx},{ny}) [{r}]: {:e} vs {:e}", g[r], row[r]);
                }
            }
        }
    }

    #[test]
    fn half_range_fluxes_sum_to_euler_flux() {
        for (w, nx, ny) in [(fs(), 0.0, 1.0), ([1.1, 0.3, -0.2, 0.8], 0.6, 0.8), ([0.7, -0.9, 0.4, 0.5], -0.28, 0.96)] {
            let [rho, u, v, p] = w;
            let ut = u * ny - v * nx;
            let un = u * nx + v * ny;
            let e = p * INV_GM1 + 0.5 * rho * (u * u + v * v);
            let fx = [rho * ut, p + rho * ut * ut, rho * ut * un, ut * (e + p)];
            let fy = [rho * un, rho * ut * un, p + rho * un * un, un * (e + p)];
            let (a, b) = (flux(FluxKind::GxPos, w, nx, ny), flux(FluxKind::GxNeg, w, nx, ny));
            let (c, d) = (flux(FluxKind::GyPos, w, nx, ny), flux(FluxKind::GyNeg, w, nx, ny));
            // the four quadrants also add up to the Euler flux along t
            let qs: Vec<V4> = KINDS[4..].iter().map(|&kk| flux(kk, w, nx, ny)).collect();
            for r in 0..4 {
                assert!((a[r] + b[r] - fx[r]).abs() < 1e-14, "Gx sum [{r}]");
                assert!((c[r] + d[r] - fy[r]).abs() < 1e-14, "Gy sum [{r}]");
                let s: f64 = qs.iter().map(|q| q[r]).sum();
                assert!((s - fx[r]).abs() < 1e-14, "quadrant sum [{r}]");
            }
        }
    }

    #[test]
    fn outer_split_state() {
        let u = outer_state(fs(), fs(), 1.0, 0.0);
        let r = [1.0, -0.02198668292257561, 0.6296162210220302, 1.984164285714286];
        for m in 0..4 {
            assert!((u[m] - r[m]).abs() < 2e-15, "[{m}] {:e} vs {:e}", u[m], r[m]);
        }
        // At the free stream the split state is the conserved state, for any normal.
        let c = conserved(fs(), 0.6, 0.8);
        let o = outer_state(fs(), fs(), 0.6, 0.8);
        for m in 0..4 {
            assert!((c[m] - o[m]).abs() < 4e-15);
        }
        let u = outer_state([1.1, 0.3, -0.2, 0.8], fs(), 0.6, 0.8);
        let r = [8.802562222577553e-01, 3.586480520449996e-01, 2.096224317130952e-01, 1.633991541566493e+00];
        for m in 0..4 {
            assert!(close(u[m], r[m], 2e-15), "[{m}] {:e} vs {:e}", u[m], r[m]);
        }
    }

    #[test]
    fn conserved_round_trip() {
        for (w, nx, ny) in [([1.1, 0.3, -0.2, 0.8], 0.6, 0.8), (fs(), 0.0, 1.0)] {
            let b = prim_of_conserved(conserved(w, nx, ny), nx, ny);
            for m in 0..4 {
                assert!((b[m] - w[m]).abs() < 1e-15);
            }
        }
    }

    #[test]
    fn limiter_bounds() {
        // small change: no limiting
        assert_eq!(venkat(1.0, 1e-6, 1.1, 0.9, 0.0), 1.0);
        // large K min_dist switches the limiter off
        assert_eq!(venkat(1.0, 0.3, 1.05, 0.9, venkat_eps2(1000.0, 1.0)), 1.0);
        // within (0, 1] and the limited reconstruction stays near the bounds
        for d in [-0.8, -0.2, 0.2, 0.8] {
            let phi = venkat(1.0, d, 1.05, 0.95, 0.0);
            assert!(phi > 0.0 && phi <= 1.0, "{phi}");
            let qt = 1.0 - 0.5 * phi * d;
            assert!((0.95 - 1e-12..=1.05 + 1e-12).contains(&qt), "{qt}");
        }
        assert_eq!(venkat_eps2(2.0, 0.5), 1.0);
    }

    /// The fast kinetic state against the exact one from the primitive state, over random gas
    /// states (density and pressure over three decades, speeds up to Mach 6) and frames. Both
    /// take the same u, v; the rearranged beta and p/rho differ by a rounding or two and the
    /// fast functions by at most 1 ulp, so every quantity agrees within 4 eps of its scale, but
    /// rho and p: e^x turns the rounding of its argument (q1 + beta |u|^2 here, the same less
    /// 5/2 ln beta in the exact form) into a relative error, so they agree within 4 eps times
    /// the size of those terms. Measured worst: 5.3e-16 and 6.2e-15. A mistake in the algebra
    /// is O(1).
    #[test]
    fn fast_kinetic_state_is_the_exact_one_within_round_off() {
        let mut seed = 11;
        let (mut worst, mut worst_rho) = (0.0f64, 0.0f64);
        for _ in 0..200_000 {
            let rho = 10f64.powf(1.5 * lcg(&mut seed));
            let p = 10f64.powf(1.5 * lcg(&mut seed));
            let c = (GAMMA * p / rho).sqrt();
            let (u, v) = (6.0 * c * lcg(&mut seed), 6.0 * c * lcg(&mut seed));
            let angle = std::f64::consts::PI * lcg(&mut seed);
            let (nx, ny) = (angle.cos(), angle.sin());
            let q = q_of_prim([rho, u, v, p]);
            let (a, b) = (kinetic(prim_of_q(q), nx, ny), kinetic_of_q_fast(q, nx, ny));
            let beta = -0.5 * q[3];
            let exponent = 1.0 + q[0].abs() + beta * (u * u + v * v) + INV_GM1 * beta.ln().abs();
            for (x, y) in [(a.rho, b.rho), (a.pr, b.pr)] {
                let d = (x - y).abs() / x;
                assert!(d <= 4.0 * f64::EPSILON * exponent, "{x:e} vs {y:e} at {:?}", [rho, u, v, p]);
                worst_rho = worst_rho.max(d);
            }
            let speed = (u * u + v * v).sqrt() + c;
            let e = a.t + speed * speed;
            let bs = a.bt.max(a.bn).max(1.0 / (2.0 * (std::f64::consts::PI * beta).sqrt()));
            let pairs = [
                (a.t, b.t, a.t),
                (a.ut, b.ut, speed),
                (a.un, b.un, speed),
                (a.at_p, b.at_p, 1.0),
                (a.at_m, b.at_m, 1.0),
                (a.an_p, b.an_p, 1.0),
                (a.an_m, b.an_m, 1.0),
                (a.bt, b.bt, bs),
                (a.bn, b.bn, bs),
                (a.h, b.h, e),
                (a.eb, b.eb, e),
            ];
            for (m, (x, y, scale)) in pairs.into_iter().enumerate() {
                let d = (x - y).abs() / scale;
                assert!(d <= 4.0 * f64::EPSILON, "quantity {m} at {:?}, ({nx}, {ny}): {x:e} vs {y:e}", [rho, u, v, p]);
                worst = worst.max(d);
            }
        }
        eprintln!("fast kinetic state: worst relative difference {worst:.2e}, of rho and p {worst_rho:.2e}");
    }

    /// Deterministic pseudo-random numbers in [-1, 1).
    pub fn lcg(seed: &mut u64) -> f64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    #[test]
    fn least_squares_exact_for_linear_fields() {
        let mut seed = 7u64;
        for _ in 0..200 {
            let m = 3 + ((lcg(&mut seed) + 1.0) * 5.0) as usize;
            let (a, b) = (lcg(&mut seed) * 3.0, lcg(&mut seed) * 3.0);
            for power in [0.0, -2.0] {
                let mut ls = LsSums::<1>::new();
                for _ in 0..m {
                    let (dx, dy) = (lcg(&mut seed) * 0.1, lcg(&mut seed) * 0.1);
                    ls.add(dx, dy, ls_weight(dx, dy, power), &[a * dx + b * dy]);
                }
                let (fx, fy) = ls.solve();
                assert!((fx[0] - a).abs() < 1e-10 && (fy[0] - b).abs() < 1e-10, "{fx:?} {fy:?} vs {a} {b}");
            }
        }
    }
}
