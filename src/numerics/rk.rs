//! Explicit strong-stability-preserving Runge-Kutta schemes, written once for every solver and
//! back end.
//!
//! A solver writes its equations as `du/dt = -R(u)` (`R`: the residual, e.g. the flux balance
//! of a cell or point). Every scheme is a list of [`Stage`]s in Shu-Osher form
//!
//! ```text
//! u(0)    = u^n
//! u(k)    = a_k u^n + b_k (u(k-1) - c_k dt R(u(k-1)))      k = 1 .. s
//! u^(n+1) = u(s)
//! ```
//!
//! where a stage without blend is the Euler step alone. [`step`] runs the stages in order on
//! an [`RkState`], which owns the arrays on its back end (CPU slices or GPU buffers), its time
//! step (one global `dt`, or one per point for local time stepping) and its boundary
//! conditions. Every value is updated by [`Stage::apply`] (or [`StageIn::apply`], the same
//! with the coefficients in `T`), which fixes the operations and their order; a CUDA kernel
//! that receives `c`, `a` and `b` and evaluates the same expression without FMA contraction
//! (`--fmad=false`, see [`crate::cuda::nvrtc_options`]) computes the same bits.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::real::Real;

/// One stage: `u(k) = a u^n + b (u(k-1) - c dt R(u(k-1)))`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stage {
    /// Fraction of the time step taken by the Euler step of this stage.
    pub c: f64,
    /// `(a, b)`: blend of the Euler step with `u^n`. `None` is the Euler step as it is, which
    /// `(0, 1)` is not in IEEE arithmetic (`-0.0`, infinities), so a kernel must branch on it.
    pub blend: Option<(f64, f64)>,
}

impl Stage {
    const fn euler(c: f64) -> Self {
        Stage { c, blend: None }
    }

    const fn blend(c: f64, a: f64, b: f64) -> Self {
        Stage { c, blend: Some((a, b)) }
    }

    /// The stage value of one component from `u0` (`u^n`), `u` (`u(k-1)`), its time step and
    /// its residual `r`, as `v = u - (c * dt) * r`, then `a * u0 + b * v` when blended. The
    /// coefficients are rounded to `T` first.
    #[inline(always)]
    pub fn apply<T: Real>(&self, u0: T, u: T, dt: T, r: T) -> T {
        self.with_dt(dt).apply(u0, u, r)
    }

    /// The stage's coefficients in `T` for one time step `dt`, for loops over many values.
    #[inline(always)]
    pub fn with_dt<T: Real>(&self, dt: T) -> StageIn<T> {
        let (a, b) = self.blend.unwrap_or((0.0, 1.0));
        StageIn { c_dt: T::of(self.c) * dt, blend: self.blend.is_some(), a: T::of(a), b: T::of(b) }
    }
}

/// A [`Stage`] with its coefficients rounded to `T` and `c dt` formed once, so that a loop
/// over a row neither converts nor reloads them per value.
#[derive(Clone, Copy, Debug)]
pub struct StageIn<T> {
    c_dt: T,
    /// Whether the stage blends with `u^n`, by `a` and `b`.
    blend: bool,
    a: T,
    b: T,
}

impl<T: Real> StageIn<T> {
    /// [`Stage::apply`] with this stage's `dt`.
    #[inline(always)]
    pub fn apply(&self, u0: T, u: T, r: T) -> T {
        if self.blend { self.apply_as::<true>(u0, u, r) } else { self.apply_as::<false>(u0, u, r) }
    }

    /// Whether the stage reads `u^n`.
    pub fn blends(&self) -> bool {
        self.blend
    }

    /// [`StageIn::apply`] for a caller that has told whether the stage blends (`BLEND`, from
    /// [`StageIn::blends`]): a loop over values then neither branches per value nor reads
    /// `u0` where the stage does not use it.
    #[inline(always)]
    pub fn apply_as<const BLEND: bool>(&self, u0: T, u: T, r: T) -> T {
        debug_assert_eq!(BLEND, self.blend);
        let v = u - self.c_dt * r;
        if BLEND { self.a * u0 + self.b * v } else { v }
    }
}

const FORWARD_EULER: [Stage; 1] = [Stage::euler(1.0)];
const SSP_RK2: [Stage; 2] = [Stage::euler(1.0), Stage::blend(1.0, 0.5, 0.5)];
const SSP_RK3: [Stage; 3] = [Stage::euler(1.0), Stage::blend(1.0, 0.75, 0.25), Stage::blend(1.0, 1.0 / 3.0, 2.0 / 3.0)];
const SSP43: [Stage; 4] =
    [Stage::euler(0.5), Stage::euler(0.5), Stage::blend(0.5, 2.0 / 3.0, 1.0 / 3.0), Stage::euler(0.5)];

/// A Runge-Kutta scheme, by its case-file name (`forward_euler`, `ssp_rk2`, `ssp_rk3`, `ssp43`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheme {
    /// Forward Euler: first order.
    ForwardEuler,
    /// SSP-RK2 (Heun): two stages, second order.
    SspRk2,
    /// SSP-RK3 (Shu and Osher 1988): three stages, third order.
    SspRk3,
    /// SSP(4,3) (Spiteri and Ruuth 2002): four Euler steps of `dt / 2`, the third blended
    /// with `u^n`; third order.
    Ssp43,
}

impl Scheme {
    pub const ALL: [Scheme; 4] = [Scheme::ForwardEuler, Scheme::SspRk2, Scheme::SspRk3, Scheme::Ssp43];

    /// The stages in the order they run.
    pub fn stages(self) -> &'static [Stage] {
        match self {
            Scheme::ForwardEuler => &FORWARD_EULER,
            Scheme::SspRk2 => &SSP_RK2,
            Scheme::SspRk3 => &SSP_RK3,
            Scheme::Ssp43 => &SSP43,
        }
    }

    /// Order of accuracy.
    pub fn order(self) -> u32 {
        match self {
            Scheme::ForwardEuler => 1,
            Scheme::SspRk2 => 2,
            Scheme::SspRk3 | Scheme::Ssp43 => 3,
        }
    }

    /// SSP coefficient: the scheme keeps every property (TVD, positivity) that forward Euler
    /// has up to `dt_fe` for time steps up to this multiple of `dt_fe`.
    pub fn ssp_coefficient(self) -> f64 {
        match self {
            Scheme::Ssp43 => 2.0,
            _ => 1.0,
        }
    }

    /// The case-file name.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::ForwardEuler => "forward_euler",
            Scheme::SspRk2 => "ssp_rk2",
            Scheme::SspRk3 => "ssp_rk3",
            Scheme::Ssp43 => "ssp43",
        }
    }
}

/// A solver's state on one back end, as [`step`] drives it: the current value `u`, a copy of
/// `u^n`, the residual `R` and the time step(s).
pub trait RkState {
    /// Start a step: save `u^n`, and fix the time step(s) if they are computed from `u^n`.
    fn begin(&mut self) -> Result<()>;
    /// `R(u)` of the current `u` for stage `stage` (0-based; stage 0 sees `u^n`).
    fn residual(&mut self, stage: usize) -> Result<()>;
    /// `u <- stage.apply(u^n, u, dt, R)` for every value, then the boundary conditions.
    fn update(&mut self, stage: &Stage) -> Result<()>;
}

/// One time step of `scheme`: `begin`, then per stage in order `residual` and `update`.
pub fn step(s: &mut impl RkState, scheme: Scheme) -> Result<()> {
    s.begin()?;
    for (k, stage) in scheme.stages().iter().enumerate() {
        s.residual(k)?;
        s.update(stage)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::SimError;

    /// `du/dt = -R(u)` on the CPU with one global time step.
    struct Ode<F> {
        u: Vec<f64>,
        u0: Vec<f64>,
        r: Vec<f64>,
        dt: f64,
        residual: F,
    }

    impl<F: Fn(&[f64], &mut [f64])> Ode<F> {
        fn new(u: Vec<f64>, dt: f64, residual: F) -> Self {
            let n = u.len();
            Ode { u, u0: vec![0.0; n], r: vec![0.0; n], dt, residual }
        }

        fn run(&mut self, scheme: Scheme, steps: usize) {
            for _ in 0..steps {
                step(self, scheme).unwrap();
            }
        }
    }

    impl<F: Fn(&[f64], &mut [f64])> RkState for Ode<F> {
        fn begin(&mut self) -> Result<()> {
            self.u0.clone_from(&self.u);
            Ok(())
        }
        fn residual(&mut self, _stage: usize) -> Result<()> {
            (self.residual)(&self.u, &mut self.r);
            Ok(())
        }
        fn update(&mut self, stage: &Stage) -> Result<()> {
            for i in 0..self.u.len() {
                self.u[i] = stage.apply(self.u0[i], self.u[i], self.dt, self.r[i]);
            }
            Ok(())
        }
    }

    /// Largest error at `t_end` after `n` steps from `u_init`.
    fn error(scheme: Scheme, n: usize, t_end: f64, u_init: &[f64], exact: &[f64], r: fn(&[f64], &mut [f64])) -> f64 {
        let mut ode = Ode::new(u_init.to_vec(), t_end / n as f64, r);
        ode.run(scheme, n);
        ode.u.iter().zip(exact).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max)
    }

    #[test]
    fn observed_order_of_accuracy() {
        type Problem = (&'static str, f64, Vec<f64>, Vec<f64>, fn(&[f64], &mut [f64]));
        let problems: [Problem; 3] = [
            ("y' = -y", 1.0, vec![1.0], vec![(-1.0f64).exp()], |u, r| r[0] = u[0]),
            ("y' = y^2", 0.5, vec![1.0], vec![2.0], |u, r| r[0] = -u[0] * u[0]),
            ("oscillator", 2.0, vec![1.0, 0.0], vec![2.0f64.cos(), -(2.0f64.sin())], |u, r| {
                r[0] = -u[1];
                r[1] = u[0];
            }),
        ];
        for (name, t_end, u_init, exact, r) in problems {
            for scheme in Scheme::ALL {
                let e1 = error(scheme, 100, t_end, &u_init, &exact, r);
                let e2 = error(scheme, 200, t_end, &u_init, &exact, r);
                let p = (e1 / e2).log2();
                assert!(
                    (p - scheme.order() as f64).abs() < 0.1,
                    "{name}, {}: observed order {p} ({e1:e}, {e2:e})",
                    scheme.name()
                );
            }
        }
    }

    /// Periodic first-order upwind advection of a square wave at Courant number `nu`; returns
    /// whether every step kept the values in [0, 1] and did not raise the total variation,
    /// and the largest magnitude at the end.
    fn upwind(scheme: Scheme, nu: f64, steps: usize) -> (bool, f64) {
        let n = 64;
        let init = (0..n).map(|i| if (16..32).contains(&i) { 1.0 } else { 0.0 }).collect();
        let mut ode = Ode::new(init, nu, move |u: &[f64], r: &mut [f64]| {
            for i in 0..n {
                r[i] = u[i] - u[(i + n - 1) % n];
            }
        });
        let tv = |u: &[f64]| (0..n).map(|i| (u[i] - u[(i + n - 1) % n]).abs()).sum::<f64>();
        let tv0 = tv(&ode.u);
        let mut tvd = true;
        for _ in 0..steps {
            step(&mut ode, scheme).unwrap();
            tvd &= tv(&ode.u) <= tv0 + 1e-12 && ode.u.iter().all(|&v| (-1e-14..=1.0 + 1e-14).contains(&v));
        }
        (tvd, ode.u.iter().fold(0.0, |m, v| v.abs().max(m)))
    }

    #[test]
    fn schemes_are_tvd_up_to_their_ssp_coefficient() {
        for scheme in Scheme::ALL {
            for nu in [0.5, 0.9, 1.0].map(|f| f * scheme.ssp_coefficient()) {
                assert!(upwind(scheme, nu, 200).0, "{} at Courant number {nu}", scheme.name());
            }
        }
    }

    #[test]
    fn ssp43_is_stable_where_forward_euler_is_not() {
        let (tvd, max) = upwind(Scheme::Ssp43, 1.5, 200);
        assert!(tvd, "SSP(4,3): max {max}");
        let (tvd, max) = upwind(Scheme::ForwardEuler, 1.5, 200);
        assert!(!tvd && max > 1e6, "forward Euler: max {max}");
    }

    #[derive(Debug, PartialEq)]
    enum Call {
        Begin,
        Residual(usize),
        Update(Stage),
    }

    /// Records the calls; the residual of stage `fail_at` fails.
    struct Recorder {
        calls: Vec<Call>,
        fail_at: Option<usize>,
    }

    impl RkState for Recorder {
        fn begin(&mut self) -> Result<()> {
            self.calls.push(Call::Begin);
            Ok(())
        }
        fn residual(&mut self, stage: usize) -> Result<()> {
            self.calls.push(Call::Residual(stage));
            if self.fail_at == Some(stage) {
                return Err(SimError::Run(format!("stage {stage}")));
            }
            Ok(())
        }
        fn update(&mut self, stage: &Stage) -> Result<()> {
            self.calls.push(Call::Update(*stage));
            Ok(())
        }
    }

    #[test]
    fn step_calls_the_stages_in_order_and_stops_at_an_error() {
        for scheme in Scheme::ALL {
            let mut r = Recorder { calls: vec![], fail_at: None };
            step(&mut r, scheme).unwrap();
            let mut want = vec![Call::Begin];
            for (k, s) in scheme.stages().iter().enumerate() {
                want.extend([Call::Residual(k), Call::Update(*s)]);
            }
            assert_eq!(r.calls, want, "{}", scheme.name());
        }
        let mut r = Recorder { calls: vec![], fail_at: Some(1) };
        assert!(step(&mut r, Scheme::Ssp43).is_err());
        assert_eq!(r.calls, [Call::Begin, Call::Residual(0), Call::Update(SSP43[0]), Call::Residual(1)]);
    }

    #[test]
    fn case_file_names() {
        for scheme in Scheme::ALL {
            let text = format!("\"{}\"", scheme.name());
            assert_eq!(serde_json::to_string(&scheme).unwrap(), text);
            assert_eq!(serde_json::from_str::<Scheme>(&text).unwrap(), scheme);
        }
    }

    #[test]
    fn f32_apply_rounds_the_coefficients() {
        let s = SSP_RK3[2];
        let (u0, u, dt, r) = (0.3f32, 0.7f32, 0.01f32, -2.0f32);
        let v = u - 1.0f32 * dt * r;
        assert_eq!(s.apply(u0, u, dt, r).to_bits(), ((1.0f32 / 3.0) * u0 + (2.0f32 / 3.0) * v).to_bits());
    }
}
