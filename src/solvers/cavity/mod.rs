//! Lid-driven square cavity (He 2023, NS2D): incompressible Navier–Stokes in advective form
//! with artificial compressibility (`dp/dt + c^2 div u = 0`, `c = u0/Ma`), advanced by the
//! explicit MacCormack scheme (forward-difference predictor, backward-difference corrector).
//!
//! Unit square, `n x n` nodes with the walls on nodes, lid `y = 1` moving with `u0` along +x.
//! The run stops at steady state: every `residual.every` (K) steps the solver compares `u, v`
//! with a snapshot taken K steps earlier,
//! `R_K = max |u^n - u^{n-K}|, |v^n - v^{n-K}| * L / (u0^2 (t^n - t^{n-K}))`,
//! and reports convergence once `R_K < residual.tol` at two consecutive checks.
//! At the end the centreline profiles are compared with Ghia et al. (1982) and, where
//! tabulated, Erturk et al. (2005) (tables embedded from `reference/`).

pub mod cuda;
pub mod kernels;
pub mod part;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Map;

use crate::error::{Result, SimError, input};
use crate::cpu::CpuOptions;
use crate::numerics::temporal::Tiling;
use crate::real::{Precision, Real};
use crate::solver::{
    ArraySpec, Grid, Location, Mesh, NonFinite, OutField, Place, Solver, StateArray, first_non_finite, take_array,
};
use crate::bench::BenchOptions;
use crate::solvers::{Device, Registered, SolverSpec};
use crate::validate::{count, positive};

use kernels::{Coeffs, Fields};

/// Side of the cavity (the problem is posed on the unit square).
const LENGTH: f64 = 1.0;
/// Largest node count per side accepted.
const MAX_N: usize = 1 << 15;
/// Time-step factors of the reference code: `dt = min(0.2 dx / c, 0.1 dx^2 / nu)`.
const ACOUSTIC_FACTOR: f64 = 0.2;
const VISCOUS_FACTOR: f64 = 0.1;

/// `solver: {cavity: ...}`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CavityParams {
    /// Nodes per side, walls included.
    pub n: usize,
    /// Reynolds number `u0 L / nu`.
    pub re: f64,
    /// Lid velocity `u0`.
    #[serde(default = "one")]
    pub lid_velocity: f64,
    /// Artificial Mach number: sound speed `c = u0 / mach`.
    #[serde(default = "default_mach")]
    pub mach: f64,
    /// Time step; default (and upper limit) `min(0.2 dx / c, 0.1 dx^2 / nu)`.
    #[serde(default)]
    pub dt: Option<f64>,
    /// Steady-state test.
    #[serde(default)]
    pub residual: ResidualControl,
}

/// `solver.cavity.residual`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResidualControl {
    /// Interval K (steps) between residual checks.
    #[serde(default = "default_every")]
    pub every: u64,
    /// Converged when `R_K` is below this at two consecutive checks.
    #[serde(default = "default_tol")]
    pub tol: f64,
}

impl Default for ResidualControl {
    fn default() -> Self {
        ResidualControl { every: default_every(), tol: default_tol() }
    }
}

fn one() -> f64 {
    1.0
}
fn default_mach() -> f64 {
    0.1
}
fn default_every() -> u64 {
    1000
}
fn default_tol() -> f64 {
    1e-4
}

impl CavityParams {
    pub fn dx(&self) -> f64 {
        LENGTH / (self.n - 1) as f64
    }
    pub fn nu(&self) -> f64 {
        self.lid_velocity * LENGTH / self.re
    }
    pub fn sound_speed(&self) -> f64 {
        self.lid_velocity / self.mach
    }
    /// The acoustic and viscous limits on dt.
    pub fn dt_limits(&self) -> (f64, f64) {
        let dx = self.dx();
        (ACOUSTIC_FACTOR * dx / self.sound_speed(), VISCOUS_FACTOR * dx * dx / self.nu())
    }
    /// The time step used: the case's `dt`, else the smaller limit.
    pub fn time_step(&self) -> f64 {
        let (a, v) = self.dt_limits();
        self.dt.unwrap_or(a.min(v))
    }
    /// The kernels' coefficients for a step of length `dt`.
    pub fn coeffs<T: Real>(&self, dt: f64) -> Coeffs<T> {
        let h = self.dx();
        Coeffs::new(dt, h, h, self.nu(), self.sound_speed(), self.lid_velocity)
    }
    /// Whether step `step` sums the change of `u` (the first and every residual step).
    fn summed(&self, step: u64) -> bool {
        step == 1 || step.is_multiple_of(self.residual.every)
    }

    /// Lines for `sim check`.
    pub fn describe(&self) -> Vec<String> {
        let p = self;
        let (a, v) = p.dt_limits();
        let which = if p.dt.is_some() {
            "from the case"
        } else if a <= v {
            "acoustic limit"
        } else {
            "viscous limit"
        };
        vec![
            format!("grid: {0} x {0} nodes, dx = {1:.6e}", p.n, p.dx()),
            format!(
                "Re = {}, lid velocity u0 = {}, nu = {:.6e}, Ma = {} (sound speed c = {})",
                p.re,
                p.lid_velocity,
                p.nu(),
                p.mach,
                p.sound_speed()
            ),
            format!("dt = {:.6e} ({which}; limits 0.2 dx/c = {a:.6e}, 0.1 dx^2/nu = {v:.6e})", p.time_step()),
            format!(
                "steady state: R_K < {:e} at two consecutive checks every {} steps",
                p.residual.tol, p.residual.every
            ),
            match Reference::Ghia.tables(p.re) {
                Some(_) => format!("reference: Ghia et al. 1982 at Re = {}", p.re),
                None => format!("reference: none at Re = {} (Ghia: {:?})", p.re, Reference::Ghia.reynolds()),
            },
        ]
    }
}

impl SolverSpec for CavityParams {
    fn validate(&self) -> Result<()> {
        count("solver.cavity.n", self.n, "nodes", 5, MAX_N)?;
        positive("solver.cavity.re", self.re)?;
        positive("solver.cavity.lid_velocity", self.lid_velocity)?;
        positive("solver.cavity.mach", self.mach)?;
        if self.mach > 1.0 {
            return input(format!(
                "solver.cavity.mach: {} must be at most 1 (the artificial sound speed u0/mach must not be slower \
                 than the lid; 0.1 is usual)",
                self.mach
            ));
        }
        let (acoustic, viscous) = self.dt_limits();
        if !(acoustic.is_finite() && viscous.is_finite() && acoustic > 0.0 && viscous > 0.0) {
            return input("solver.cavity: re, lid_velocity and mach give no usable time step");
        }
        if let Some(dt) = self.dt {
            positive("solver.cavity.dt", dt)?;
            let limit = acoustic.min(viscous);
            if dt > limit * (1.0 + 1e-12) {
                return input(format!(
                    "solver.cavity.dt: {dt:e} exceeds the stability limit {limit:e} = min(0.2 dx/c = {acoustic:e}, \
                     0.1 dx^2/nu = {viscous:e})"
                ));
            }
        }
        if self.residual.every == 0 {
            return input("solver.cavity.residual.every: must be at least 1");
        }
        positive("solver.cavity.residual.tol", self.residual.tol)?;
        Ok(())
    }
    fn has_cuda(&self) -> bool {
        true
    }
    /// u, v, p, u*, v*, p* and the two residual snapshots.
    fn memory_estimate(&self, precision: Precision) -> usize {
        // 8 fields, and the copies that output (velocity, p, vorticity) and checkpoints (5
        // arrays) make: 20 fields at the measured peak of a run.
        23 * self.n * self.n * precision.bytes()
    }
    fn nominal_dt(&self) -> Option<f64> {
        Some(self.time_step())
    }
    fn describe(&self, _: Precision) -> Result<Vec<String>> {
        Ok(CavityParams::describe(self))
    }
    fn build(&self, precision: Precision, device: &Device) -> Result<Box<dyn Solver>> {
        crate::in_precision!(precision, |T| Cavity::<T>::new(self).on(device))
    }
    fn tiling(&self, precision: Precision, cpu: &CpuOptions, threads: usize) -> Option<Tiling> {
        // A level is u, v, p (or the predicted three); a step is two levels.
        cpu.temporal_block.tiling(self.n, 3 * precision.bytes(), 2, threads)
    }
}

impl Registered for CavityParams {
    const RESULT_FILES: &'static [&'static str] =
        &["centreline_u.csv", "centreline_v.csv", "profile_u.csv", "profile_v.csv"];
    /// Re = 1000, Ma = 0.1, dt from the spec's rule, starting from rest.
    fn bench(n: usize, o: &BenchOptions, device: &Device) -> Result<Box<dyn Solver>> {
        let p = CavityParams { n, re: 1000.0, lid_velocity: 1.0, mach: 0.1, dt: None, residual: ResidualControl::default() };
        p.validated_build(o.precision, device)
    }
}

/// A tabulated centreline profile: `coord` ascending, rows flagged `# suspect:` marked.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub coord: Vec<f64>,
    pub value: Vec<f64>,
    pub suspect: Vec<bool>,
}

impl Table {
    /// Parse `coord,value` CSV text; `#` lines are comments, `# suspect: x=0.9063 ...`
    /// flags the row at that coordinate.
    pub fn parse(text: &str) -> Table {
        let mut flagged = Vec::new();
        let mut t = Table { coord: Vec::new(), value: Vec::new(), suspect: Vec::new() };
        for line in text.lines().map(str::trim) {
            if let Some(rest) = line.strip_prefix('#') {
                if let Some(s) = rest.trim().strip_prefix("suspect:") {
                    let c = s.trim().split(['=', ' ']).nth(1).and_then(|x| x.parse::<f64>().ok());
                    flagged.extend(c);
                }
                continue;
            }
            let mut it = line.split(',');
            if let (Some(a), Some(b)) = (it.next(), it.next())
                && let (Ok(a), Ok(b)) = (a.trim().parse(), b.trim().parse())
            {
                t.coord.push(a);
                t.value.push(b);
            }
        }
        t.suspect = t.coord.iter().map(|c| flagged.iter().any(|f| (f - c).abs() < 5e-5)).collect();
        t
    }
}

/// Which published data set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reference {
    /// Ghia, Ghia & Shin (1982), J. Comput. Phys. 48:387–411, Tables I and II.
    Ghia,
    /// Erturk, Corke & Gokcol (2005), Int. J. Numer. Meth. Fluids 48:747–774.
    Erturk,
}

impl Reference {
    pub fn name(self) -> &'static str {
        match self {
            Reference::Ghia => "Ghia et al. 1982",
            Reference::Erturk => "Erturk et al. 2005",
        }
    }

    /// Reynolds numbers tabulated.
    pub fn reynolds(self) -> &'static [u32] {
        match self {
            Reference::Ghia => &[100, 400, 1000, 3200, 5000, 7500, 10000],
            Reference::Erturk => &[1000, 2500, 5000],
        }
    }

    /// `(u along x = 0.5, v along y = 0.5)` at `re`, if tabulated.
    pub fn tables(self, re: f64) -> Option<(Table, Table)> {
        macro_rules! pick {
            ($prefix:literal, $($re:literal),*) => {
                match re {
                    $(x if x == $re as f64 => Some((
                        include_str!(concat!("reference/", $prefix, "_u_re", stringify!($re), ".csv")),
                        include_str!(concat!("reference/", $prefix, "_v_re", stringify!($re), ".csv")),
                    )),)*
                    _ => None,
                }
            };
        }
        let texts = match self {
            Reference::Ghia => pick!("ghia", 100, 400, 1000, 3200, 5000, 7500, 10000),
            Reference::Erturk => pick!("erturk", 1000, 2500, 5000),
        };
        texts.map(|(u, v)| (Table::parse(u), Table::parse(v)))
    }
}

/// Max and RMS absolute error of the two centreline profiles against a reference, over the
/// tabulated stations except the flagged ones (in units of u0).
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileErrors {
    pub u_max: f64,
    pub u_rms: f64,
    pub v_max: f64,
    pub v_rms: f64,
    /// Stations compared along each line.
    pub u_stations: usize,
    pub v_stations: usize,
    /// Flagged stations skipped.
    pub skipped: usize,
}

/// Computed centreline values at a reference's stations, with the errors.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub u_table: Table,
    /// `u / u0` along x = 0.5 at `u_table.coord`.
    pub u: Vec<f64>,
    pub v_table: Table,
    /// `v / u0` along y = 0.5 at `v_table.coord`.
    pub v: Vec<f64>,
    pub errors: ProfileErrors,
}

/// Linear interpolation of nodal values `f` (spacing `h`, first node at 0) to `at`.
pub fn interpolate(f: &[f64], h: f64, at: &[f64]) -> Vec<f64> {
    let last = f.len() - 1;
    at.iter()
        .map(|&x| {
            let s = (x / h).clamp(0.0, last as f64);
            let k = (s.floor() as usize).min(last - 1);
            let w = s - k as f64;
            (1.0 - w) * f[k] + w * f[k + 1]
        })
        .collect()
}

#[allow(clippy::needless_range_loop)]
fn max_rms(num: &[f64], table: &Table) -> (f64, f64, usize) {
    let (mut mx, mut s2, mut n) = (0.0f64, 0.0, 0usize);
    for k in 0..num.len() {
        if table.suspect[k] {
            continue;
        }
        let d = num[k] - table.value[k];
        mx = mx.max(d.abs());
        s2 += d * d;
        n += 1;
    }
    (mx, (s2 / n.max(1) as f64).sqrt(), n)
}

pub struct Cavity<T: Real> {
    params: CavityParams,
    grid: Grid,
    dt: f64,
    coeffs: Coeffs<T>,
    fields: Fields<T>,
    /// `u, v` at the last residual check.
    u_snap: Vec<T>,
    v_snap: Vec<T>,
    res: Residual,
    /// The fields on a GPU (then `fields` is the host copy, refreshed by `sync` and at the
    /// residual checks), and `u` before a step whose change is summed.
    gpu: Option<Box<cuda::CavityCuda<T>>>,
    u_before: Vec<T>,
    /// Temporal blocking of the CPU steps whose change is not summed.
    tiling: Option<Tiling>,
    /// Whether `fields.u, v, p` hold the current state: always on the CPU; on a GPU from
    /// `sync` or `restore` until the next `advance`.
    host_current: bool,
    backend: String,
    step: u64,
    time: f64,
}

impl<T: Real> Cavity<T> {
    pub fn new(p: &CavityParams) -> Self {
        let n = p.n;
        let dx = p.dx();
        let grid = Grid { n: [n, n], origin: [0.0, 0.0], spacing: [dx, dx] };
        let dt = p.time_step();
        let coeffs = p.coeffs(dt);
        let fields = Fields::initial(n, n, T::of(p.lid_velocity));
        Cavity {
            params: p.clone(),
            grid,
            dt,
            coeffs,
            u_snap: fields.u.to_vec(),
            v_snap: fields.v.to_vec(),
            fields,
            res: Residual::new(),
            gpu: None,
            u_before: Vec::new(),
            tiling: None,
            host_current: true,
            backend: "cpu".into(),
            step: 0,
            time: 0.0,
        }
    }

    /// Move the fields to `device` (the CPU keeps them where they are, and blocks the steps in
    /// time as `cpu.temporal_block` says, for the threads of the current pool).
    pub fn on(mut self, device: &Device) -> Result<Self> {
        if let Device::Cpu(opts) = device {
            self.tiling = self.params.tiling(T::PRECISION, opts, rayon::current_num_threads());
        }
        if let Device::Cuda(gpu, opts) = device {
            let [nx, ny] = self.grid.n;
            let f = &self.fields;
            self.gpu = Some(Box::new(cuda::CavityCuda::new(gpu, opts, nx, ny, &f.u, &f.v, &f.p)?));
            // The starred arrays live on the device only.
            for a in [&mut self.fields.us, &mut self.fields.vs, &mut self.fields.ps] {
                *a = kernels::Padded::zeros(0, 0);
            }
            self.backend = format!("cuda ({}, {} {}x{})", gpu.name, opts.variant.name(), opts.block()[0], opts.block()[1]);
        }
        Ok(self)
    }

    pub fn params(&self) -> &CavityParams {
        &self.params
    }
    pub fn u(&self) -> &[T] {
        self.assert_host_current("u");
        &self.fields.u
    }
    pub fn v(&self) -> &[T] {
        self.assert_host_current("v");
        &self.fields.v
    }
    pub fn p(&self) -> &[T] {
        self.assert_host_current("p");
        &self.fields.p
    }

    /// Panics when the host copy of `u, v, p` is stale: a GPU step ran and no
    /// `Solver::sync` followed (a bug of the caller, which `method` names).
    fn assert_host_current(&self, method: &str) {
        assert!(
            self.host_current,
            "Cavity::{method} read the host copy of the fields, which is stale after a GPU step: call Solver::sync first"
        );
    }
    /// Latest residual R_K (NaN before the first check).
    pub fn residual(&self) -> f64 {
        self.res.r_k
    }

    /// `f64` copy of column `i` (a line of constant x) of `a`.
    fn column(&self, a: &[T], i: usize) -> Vec<f64> {
        let n = self.grid.n[0];
        (0..self.grid.n[1]).map(|j| a[j * n + i].f64()).collect()
    }

    /// `u / u0` along the vertical centreline `x = 0.5`, one value per node row (y = j dx);
    /// even n averages the two middle columns.
    pub fn centreline_u(&self) -> Vec<f64> {
        self.assert_host_current("centreline_u");
        let lines: Vec<Vec<f64>> = centre(self.grid.n[0]).map(|i| self.column(&self.fields.u, i)).collect();
        centreline(&lines, self.params.lid_velocity)
    }

    /// `v / u0` along the horizontal centreline `y = 0.5`, one value per node column.
    pub fn centreline_v(&self) -> Vec<f64> {
        self.assert_host_current("centreline_v");
        let n = self.grid.n[0];
        let row = |j: usize| self.fields.v[j * n..(j + 1) * n].iter().map(|x| x.f64()).collect::<Vec<f64>>();
        centreline(&centre(n).map(row).collect::<Vec<_>>(), self.params.lid_velocity)
    }

    /// The centreline profiles interpolated to the stations of `reference` at this Re, with
    /// the errors; None when that reference has no table for this Re.
    pub fn compare(&self, reference: Reference) -> Option<Comparison> {
        self.assert_host_current("compare");
        compare(&self.params, &self.centreline_u(), &self.centreline_v(), reference)
    }

    /// Vorticity `dv/dx - du/dy`: central differences inside, second-order one-sided ones on
    /// the walls.
    pub fn vorticity(&self) -> Vec<f64> {
        self.assert_host_current("vorticity");
        let [nx, ny] = self.grid.n;
        let h = self.grid.spacing[0];
        let (u, v) = (&self.fields.u, &self.fields.v);
        let mut w = vec![0.0; nx * ny];
        w.par_chunks_mut(nx).enumerate().for_each(|(j, row)| {
            for (i, out) in row.iter_mut().enumerate() {
                *out = vorticity_at(u, v, nx, h, j * nx + i, [i, j], self.grid.n);
            }
        });
        w
    }

    /// Residual check at a multiple of K: R_K from the change since the snapshot.
    fn check_residual(&mut self) {
        let nx = self.grid.n[0];
        let change =
            kernels::change_and_snapshot(&self.fields.u, &self.fields.v, &mut self.u_snap, &mut self.v_snap, nx);
        self.res.check(&self.params, change, self.time);
    }
}

/// What the output fields mean (see [`Solver::units`]).
const UNITS: &str = "velocity: (u, v, 0) in the units of the lid speed (lid_velocity); p: pressure / density; \
                     vorticity: dv/dx - du/dy; speed: |velocity|; x, y: the unit square (side L = 1)";

/// See [`Solver::bytes_per_step`].
fn bytes_per_step<T: Real>(grid: &Grid) -> f64 {
    // Predictor 3 in + 3 out, corrector 6 in + 3 out (spec: beta_lo = 15).
    15.0 * grid.nodes() as f64 * T::PRECISION.bytes() as f64
}

/// The steady-state test (R_K every `residual.every` steps, from the change of u, v since the
/// snapshot taken at the previous check) and the reference-style sums of the one-step change
/// of u: the state a checkpoint keeps besides the fields.
#[derive(Clone, Debug)]
struct Residual {
    /// Time of the snapshot.
    t_snap: f64,
    /// Latest R_K (NaN before the first check).
    r_k: f64,
    /// R_K was below tol at the latest check.
    below_once: bool,
    converged: bool,
    /// Sum of squares of the one-step change of u, after the first step and at the latest
    /// residual check.
    du2_first: f64,
    du2_last: f64,
}

impl Residual {
    fn new() -> Self {
        Residual {
            t_snap: 0.0,
            r_k: f64::NAN,
            below_once: false,
            converged: false,
            du2_first: f64::NAN,
            du2_last: f64::NAN,
        }
    }

    /// The sum `du2` of step `step`'s change of u.
    fn summed(&mut self, step: u64, du2: f64) {
        if step == 1 {
            self.du2_first = du2;
        }
        self.du2_last = du2;
    }

    /// A residual check at `time`; `change` is the largest change of u, v since the snapshot.
    fn check(&mut self, p: &CavityParams, change: f64, time: f64) {
        let u0 = p.lid_velocity;
        self.r_k = change * LENGTH / (u0 * u0 * (time - self.t_snap));
        self.t_snap = time;
        let below = self.r_k < p.residual.tol;
        self.converged = below && self.below_once;
        self.below_once = below;
    }

    /// `residual_state`: t_snapshot, R_K, the tolerance flag (0 above it at the latest check, 1
    /// below it, 2 below it at the last two: converged), du2 first step, du2 latest; always f64.
    fn state(&self) -> StateArray {
        let below = match (self.below_once, self.converged) {
            (_, true) => 2.0,
            (true, false) => 1.0,
            (false, false) => 0.0,
        };
        let scalars = vec![self.t_snap, self.r_k, below, self.du2_first, self.du2_last];
        StateArray::other("residual_state", f64::wrap(scalars))
    }

    /// From the `residual_state` of a checkpoint at `time`, checked.
    fn restore(arrays: &mut Vec<StateArray>, time: f64) -> Result<Self> {
        let r = take_array::<f64>(arrays, "residual_state", &[5])?;
        // R_K and the sums of squares are NaN before the first check and step, else >= 0.
        let unset_or_not_negative = |x: f64| x.is_nan() || (x >= 0.0 && x.is_finite());
        let sums = [r[1], r[3], r[4]].into_iter().all(unset_or_not_negative);
        if !(r[0].is_finite() && r[0] <= time && [0.0, 1.0, 2.0].contains(&r[2]) && sums) {
            return Err(SimError::Input(format!("dataset /fields/residual_state holds invalid values {r:?}")));
        }
        let [t_snap, r_k, below, du2_first, du2_last] = [r[0], r[1], r[2], r[3], r[4]];
        Ok(Residual { t_snap, r_k, below_once: below >= 1.0, converged: below == 2.0, du2_first, du2_last })
    }

    fn status(&self) -> String {
        if self.r_k.is_nan() { "R_K = n/a".into() } else { format!("R_K = {:.2e}", self.r_k) }
    }

    /// The diagnostics from these and the statistics `t` of the fields (see [`row_stats`]) on
    /// spacing `h`.
    fn diagnostics(&self, t: [f64; 5], h: f64) -> Vec<(&'static str, Option<f64>)> {
        // NaN marks a residual not measured yet (see `new`).
        let measured = |x: f64| (!x.is_nan()).then_some(x);
        vec![
            ("R_K", measured(self.r_k)),
            ("du2_one_step", measured(self.du2_last)),
            ("du2_ratio", measured(self.du2_last / self.du2_first)),
            ("max_abs_u", Some(t[0])),
            ("max_abs_v", Some(t[1])),
            ("p_min", Some(t[2])),
            ("p_max", Some(t[3])),
            ("kinetic_energy", Some(0.5 * t[4] * h * h)),
        ]
    }

    /// The report's entries: these, and the comparison of the centreline profiles `(u, v)`
    /// with the references (left out without profiles: ranks other than 0 of a decomposed run).
    fn report(&self, p: &CavityParams, profiles: Option<(&[f64], &[f64])>) -> Map<String, serde_json::Value> {
        let mut m = Map::new();
        let num = |x: f64| if x.is_finite() { serde_json::Value::from(x) } else { serde_json::Value::Null };
        m.insert("R_K".into(), num(self.r_k));
        m.insert("converged".into(), self.converged.into());
        let Some((pu, pv)) = profiles else { return m };
        match compare(p, pu, pv, Reference::Ghia) {
            Some(Comparison { errors: e, .. }) => {
                m.insert("reference".into(), format!("Ghia et al. 1982, Re = {}", p.re).into());
                m.insert("u_max_error".into(), e.u_max.into());
                m.insert("u_rms_error".into(), e.u_rms.into());
                m.insert("v_max_error".into(), e.v_max.into());
                m.insert("v_rms_error".into(), e.v_rms.into());
                m.insert("max_error".into(), e.u_max.max(e.v_max).into());
                m.insert("stations_skipped_suspect".into(), e.skipped.into());
            }
            None => {
                m.insert(
                    "reference".into(),
                    format!("none: Ghia et al. 1982 tabulate Re = {:?}", Reference::Ghia.reynolds()).into(),
                );
            }
        }
        if let Some(Comparison { errors: e, .. }) = compare(p, pu, pv, Reference::Erturk) {
            m.insert("erturk_u_max_error".into(), e.u_max.into());
            m.insert("erturk_u_rms_error".into(), e.u_rms.into());
            m.insert("erturk_v_max_error".into(), e.v_max.into());
            m.insert("erturk_v_rms_error".into(), e.v_rms.into());
        }
        m
    }
}

/// The middle node line(s) of `n`: one for odd `n`, the two middle ones for even `n`.
fn centre(n: usize) -> std::ops::Range<usize> {
    let first = (n - 1) / 2;
    first..first + 2 - n % 2
}

/// A centreline profile in units of `u0` from the values along the middle line(s) (see
/// [`centre`]; two are averaged).
fn centreline(lines: &[Vec<f64>], u0: f64) -> Vec<f64> {
    match lines {
        [a] => a.iter().map(|x| x / u0).collect(),
        [a, b] => a.iter().zip(b).map(|(a, b)| 0.5 * (a + b) / u0).collect(),
        _ => unreachable!("one or two middle lines"),
    }
}

/// The centreline profiles `pu`, `pv` interpolated to the stations of `reference` at the Re
/// of `p`, with the errors; None when that reference has no table for this Re.
fn compare(p: &CavityParams, pu: &[f64], pv: &[f64], reference: Reference) -> Option<Comparison> {
    let (tu, tv) = reference.tables(p.re)?;
    let h = p.dx();
    let u = interpolate(pu, h, &tu.coord);
    let v = interpolate(pv, h, &tv.coord);
    let (u_max, u_rms, u_stations) = max_rms(&u, &tu);
    let (v_max, v_rms, v_stations) = max_rms(&v, &tv);
    let skipped = tu.suspect.iter().chain(&tv.suspect).filter(|&&s| s).count();
    let errors = ProfileErrors { u_max, u_rms, v_max, v_rms, u_stations, v_stations, skipped };
    Some(Comparison { u_table: tu, u, v_table: tv, v, errors })
}

/// Vorticity `dv/dx - du/dy` at index `k` of `nx`-wide arrays, the node `node` of the `n`-node
/// grid of spacing `h`: central differences inside, second-order one-sided ones on the walls.
fn vorticity_at<T: Real>(u: &[T], v: &[T], nx: usize, h: f64, k: usize, node: [usize; 2], n: [usize; 2]) -> f64 {
    let d = |f: &[T], stride: usize, idx: usize, len: usize| -> f64 {
        let g = |o: isize| f[(k as isize + o * stride as isize) as usize].f64();
        if idx == 0 {
            (-3.0 * g(0) + 4.0 * g(1) - g(2)) / (2.0 * h)
        } else if idx == len - 1 {
            (3.0 * g(0) - 4.0 * g(-1) + g(-2)) / (2.0 * h)
        } else {
            (g(1) - g(-1)) / (2.0 * h)
        }
    };
    d(v, 1, node[0], n[0]) - d(u, nx, node[1], n[1])
}

/// The output fields from `u, v, p` and the vorticity at the same nodes.
fn node_fields<T: Real>(u: &[T], v: &[T], p: Vec<T>, vorticity: Vec<f64>) -> Vec<OutField> {
    let mut vel = vec![T::zero(); 3 * u.len()];
    vel.par_chunks_mut(3).zip(u.par_iter().zip(v.par_iter())).for_each(|(o, (&a, &b))| {
        o[0] = a;
        o[1] = b;
    });
    let speed: Vec<T> = u.par_iter().zip(v.par_iter()).map(|(&a, &b)| (a * a + b * b).sqrt()).collect();
    let vort: Vec<T> = vorticity.into_iter().map(T::of).collect();
    vec![
        OutField::new("velocity", 3, Location::Node, T::wrap(vel)),
        OutField::new("p", 1, Location::Node, T::wrap(p)),
        OutField::new("vorticity", 1, Location::Node, T::wrap(vort)),
        OutField::new("speed", 1, Location::Node, T::wrap(speed)),
    ]
}

/// The statistics of the diagnostics over one row (or run) of nodes: max |u|, max |v|, min p,
/// max p and the sum of u^2 + v^2; [`merge_stats`] combines them, from [`NO_STATS`].
fn row_stats<T: Real>(u: &[T], v: &[T], p: &[T]) -> [f64; 5] {
    let mut r = NO_STATS;
    for k in 0..u.len() {
        let (a, b, c) = (u[k].f64(), v[k].f64(), p[k].f64());
        r[0] = r[0].max(a.abs());
        r[1] = r[1].max(b.abs());
        r[2] = r[2].min(c);
        r[3] = r[3].max(c);
        r[4] += a * a + b * b;
    }
    r
}

const NO_STATS: [f64; 5] = [0.0, 0.0, f64::MAX, f64::MIN, 0.0];

fn merge_stats(a: [f64; 5], r: [f64; 5]) -> [f64; 5] {
    [a[0].max(r[0]), a[1].max(r[1]), a[2].min(r[2]), a[3].max(r[3]), a[4] + r[4]]
}

/// The fields of the state, in checkpoint order.
const STATE: [&str; 5] = ["u", "v", "p", "u_snapshot", "v_snapshot"];

/// The checkpoint arrays: `fields` (see [`STATE`]) in the serial layout on `mesh`, and the
/// residual state.
fn state_arrays<T: Real>(mesh: &Mesh, fields: [Vec<T>; 5], res: &Residual) -> Vec<StateArray> {
    let mut v: Vec<StateArray> =
        STATE.iter().zip(fields).map(|(name, f)| StateArray::field(name, Place::NODE, mesh, T::wrap(f))).collect();
    v.push(res.state());
    v
}

fn state_layout<T: Real>(mesh: &Mesh) -> Vec<ArraySpec> {
    let mut v: Vec<ArraySpec> =
        STATE.iter().map(|name| ArraySpec::field(name, Place::NODE, mesh, T::PRECISION)).collect();
    v.push(ArraySpec::other("residual_state", 5, Precision::F64));
    v
}

/// The fields (see [`STATE`]) and the residual state of a checkpoint at `time`, checked.
fn take_state<T: Real>(mut arrays: Vec<StateArray>, mesh: &Mesh, time: f64) -> Result<([Vec<T>; 5], Residual)> {
    let s = crate::solver::shape_of(Place::NODE, mesh);
    let mut fields = Vec::new();
    for name in STATE {
        fields.push(take_array::<T>(&mut arrays, name, &s)?);
    }
    let res = Residual::restore(&mut arrays, time)?;
    Ok((fields.try_into().unwrap_or_else(|_| unreachable!("five fields")), res))
}

/// The result files of the centreline profiles `pu`, `pv` (see [`Solver::write_results`]).
#[allow(clippy::needless_range_loop)]
fn write_profiles(dir: &std::path::Path, p: &CavityParams, pu: &[f64], pv: &[f64]) -> Result<Vec<String>> {
    let h = p.dx();
    // Full nodal profiles.
    let mut s = String::from("y,u\n");
    for (j, x) in pu.iter().enumerate() {
        s += &format!("{:.10},{:.10e}\n", j as f64 * h, x);
    }
    crate::io::write_atomic(&dir.join("profile_u.csv"), s.as_bytes())?;
    let mut s = String::from("x,v\n");
    for (i, x) in pv.iter().enumerate() {
        s += &format!("{:.10},{:.10e}\n", i as f64 * h, x);
    }
    crate::io::write_atomic(&dir.join("profile_v.csv"), s.as_bytes())?;
    // At Ghia's stations (the same 17 for every Re), with the reference where tabulated.
    let (tu, tv) =
        Reference::Ghia.tables(p.re).unwrap_or_else(|| Reference::Ghia.tables(100.0).expect("embedded table").clone());
    let has = Reference::Ghia.tables(p.re).is_some();
    for (name, axis, var, table, prof) in
        [("centreline_u.csv", "y", "u", &tu, pu), ("centreline_v.csv", "x", "v", &tv, pv)]
    {
        let vals = interpolate(prof, h, &table.coord);
        let mut s = if has { format!("{axis},{var},{var}_ghia,ghia_suspect\n") } else { format!("{axis},{var}\n") };
        for k in 0..vals.len() {
            s += &format!("{:.4},{:.10e}", table.coord[k], vals[k]);
            if has {
                s += &format!(",{},{}", table.value[k], table.suspect[k] as u8);
            }
            s += "\n";
        }
        crate::io::write_atomic(&dir.join(name), s.as_bytes())?;
    }
    Ok(<CavityParams as Registered>::RESULT_FILES.iter().map(|f| f.to_string()).collect())
}

impl<T: Real> Solver for Cavity<T> {
    fn kind(&self) -> &'static str {
        "cavity"
    }
    fn precision(&self) -> Precision {
        T::PRECISION
    }
    fn step(&self) -> u64 {
        self.step
    }
    fn time(&self) -> f64 {
        self.time
    }
    fn dt(&self) -> f64 {
        self.dt
    }

    fn advance(&mut self, dt: f64) -> Result<()> {
        let short;
        let c = if dt == self.dt {
            &self.coeffs
        } else {
            short = self.params.coeffs(dt);
            &short
        };
        let k = self.params.residual.every;
        let next = self.step + 1;
        let summed = self.params.summed(next);
        self.host_current = self.gpu.is_none();
        let du2 = match &mut self.gpu {
            None if summed => Some(self.fields.step_with_change(c)),
            None => {
                self.fields.step(c);
                None
            }
            Some(gpu) if summed => {
                // The residual check and the change need u before and all fields after.
                self.u_before.resize(self.fields.u.len(), T::zero());
                gpu.download_u(&mut self.u_before)?;
                gpu.step(c)?;
                let f = &mut self.fields;
                gpu.download(&mut f.u, &mut f.v, &mut f.p)?;
                Some(kernels::squared_change(&self.u_before, &f.u, f.nx, &mut f.partials))
            }
            Some(gpu) => {
                gpu.step(c)?;
                None
            }
        };
        if let Some(du2) = du2 {
            self.res.summed(next, du2);
        }
        self.step = next;
        self.time += dt;
        if next.is_multiple_of(k) {
            self.check_residual();
        }
        Ok(())
    }

    /// Up to the next step that sums the change (which may end the run by convergence).
    fn steps_per_call(&self) -> u64 {
        let Some(tiling) = &self.tiling else { return 1 };
        let to_summed = (self.step + 1..).find(|&s| self.params.summed(s)).map_or(1, |s| s - self.step);
        to_summed.min(tiling.steps() as u64)
    }

    /// The steps before a summed one in blocked sweeps; a summed step alone.
    fn advance_steps(&mut self, dt: f64, n: u64) -> Result<()> {
        let mut left = n;
        while left > 0 {
            let run = match &self.tiling {
                Some(tiling) if dt == self.dt => (1..=left.min(tiling.steps() as u64))
                    .take_while(|&s| !self.params.summed(self.step + s))
                    .last()
                    .unwrap_or(0),
                _ => 0,
            };
            if run == 0 {
                self.advance(dt)?;
                left -= 1;
                continue;
            }
            let tiling = self.tiling.as_ref().expect("a tiling");
            self.fields.steps_blocked(&self.coeffs, tiling, run as usize);
            for _ in 0..run {
                self.step += 1;
                self.time += dt;
            }
            left -= run;
        }
        Ok(())
    }

    fn tiling(&self) -> Option<&Tiling> {
        self.tiling.as_ref()
    }

    fn sync(&mut self) -> Result<()> {
        if let Some(gpu) = &self.gpu {
            gpu.download(&mut self.fields.u, &mut self.fields.v, &mut self.fields.p)?;
        }
        self.host_current = true;
        Ok(())
    }

    fn wait(&mut self) -> Result<()> {
        self.gpu.as_ref().map_or(Ok(()), |gpu| gpu.wait())
    }

    fn backend(&self) -> String {
        self.backend.clone()
    }

    fn mesh(&self) -> Mesh {
        Mesh::Nodes(self.grid)
    }

    fn units(&self) -> &'static str {
        UNITS
    }

    fn output_fields(&self) -> Vec<OutField> {
        self.assert_host_current("output_fields");
        node_fields(&self.fields.u, &self.fields.v, self.fields.p.to_vec(), self.vorticity())
    }

    fn state(&self) -> Vec<StateArray> {
        self.assert_host_current("state");
        let f = &self.fields;
        let fields = [&f.u[..], &f.v[..], &f.p[..], &self.u_snap[..], &self.v_snap[..]].map(|a| a.to_vec());
        state_arrays(&self.mesh(), fields, &self.res)
    }

    fn state_layout(&self) -> Vec<ArraySpec> {
        state_layout::<T>(&self.mesh())
    }

    fn restore(&mut self, step: u64, time: f64, arrays: Vec<StateArray>) -> Result<()> {
        let ([u, v, p, us, vs], res) = take_state::<T>(arrays, &self.mesh(), time)?;
        self.fields.u.copy_from_slice(&u);
        self.fields.v.copy_from_slice(&v);
        self.fields.p.copy_from_slice(&p);
        if let Some(gpu) = &mut self.gpu {
            gpu.upload(&self.fields.u, &self.fields.v, &self.fields.p)?;
        }
        self.host_current = true;
        self.u_snap = us;
        self.v_snap = vs;
        self.res = res;
        self.step = step;
        self.time = time;
        Ok(())
    }

    fn find_non_finite(&self) -> Option<NonFinite> {
        self.assert_host_current("find_non_finite");
        let nx = self.grid.n[0];
        first_non_finite("u", &self.fields.u, nx)
            .or_else(|| first_non_finite("v", &self.fields.v, nx))
            .or_else(|| first_non_finite("p", &self.fields.p, nx))
    }

    fn diagnostics(&self) -> Vec<(&'static str, Option<f64>)> {
        self.assert_host_current("diagnostics");
        let nx = self.grid.n[0];
        let (u, v, p) = (&self.fields.u, &self.fields.v, &self.fields.p);
        // Per-row partials combined in order: independent of the thread count.
        let rows = u.par_chunks(nx).zip(v.par_chunks(nx)).zip(p.par_chunks(nx));
        let rows: Vec<[f64; 5]> = rows.map(|((u, v), p)| row_stats(u, v, p)).collect();
        let t = rows.into_iter().fold(NO_STATS, merge_stats);
        self.res.diagnostics(t, self.grid.spacing[0])
    }

    fn report(&self) -> serde_json::Map<String, serde_json::Value> {
        self.assert_host_current("report");
        let mut m = self.res.report(&self.params, Some((&self.centreline_u(), &self.centreline_v())));
        if let Some(tiling) = &self.tiling {
            m.insert("temporal_block".into(), tiling.to_string().into());
        }
        m
    }

    fn bytes_per_step(&self) -> f64 {
        bytes_per_step::<T>(&self.grid)
    }


    fn converged(&self) -> bool {
        self.res.converged
    }

    fn status(&self) -> Option<String> {
        Some(self.res.status())
    }

    fn write_results(&self, dir: &std::path::Path) -> Result<Vec<String>> {
        self.assert_host_current("write_results");
        write_profiles(dir, &self.params, &self.centreline_u(), &self.centreline_v())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(n: usize) -> CavityParams {
        CavityParams { n, re: 100.0, lid_velocity: 1.0, mach: 0.1, dt: None, residual: ResidualControl::default() }
    }

    #[test]
    fn time_step_follows_the_spec_table() {
        let p = params(129);
        assert!((p.time_step() - 1.5625e-4).abs() < 1e-12);
        let p = CavityParams { n: 512, ..params(512) };
        assert!((p.time_step() - 3.82964e-5).abs() < 1e-9);
        let p = CavityParams { n: 512, re: 1000.0, ..params(512) };
        assert!((p.time_step() - 3.91389e-5).abs() < 1e-9);
    }

    #[test]
    fn validation_names_keys() {
        let bad = |p: CavityParams, key: &str| {
            let e = p.validate().unwrap_err().to_string();
            assert!(e.contains(key), "{e} should name {key}");
        };
        bad(CavityParams { re: -1.0, ..params(33) }, "solver.cavity.re");
        bad(CavityParams { n: 3, ..params(33) }, "solver.cavity.n");
        bad(CavityParams { mach: 0.0, ..params(33) }, "solver.cavity.mach");
        bad(CavityParams { mach: 2.0, ..params(33) }, "solver.cavity.mach");
        bad(CavityParams { lid_velocity: f64::NAN, ..params(33) }, "solver.cavity.lid_velocity");
        bad(CavityParams { dt: Some(1.01 * params(129).time_step()), ..params(129) }, "solver.cavity.dt");
        bad(CavityParams { dt: Some(0.0), ..params(129) }, "solver.cavity.dt");
        bad(CavityParams { residual: ResidualControl { every: 0, tol: 1e-4 }, ..params(33) }, "residual.every");
        bad(CavityParams { residual: ResidualControl { every: 10, tol: 0.0 }, ..params(33) }, "residual.tol");
        // At the limit is fine, and so is a smaller dt.
        CavityParams { dt: Some(params(129).time_step()), ..params(129) }.validate().unwrap();
        CavityParams { dt: Some(1e-5), ..params(129) }.validate().unwrap();
    }

    #[test]
    fn reference_tables_parse_with_flags() {
        for r in [Reference::Ghia, Reference::Erturk] {
            for &re in r.reynolds() {
                let (u, v) = r.tables(re as f64).unwrap();
                let rows = if r == Reference::Ghia { 17 } else { 23 };
                assert_eq!(u.coord.len(), rows, "{r:?} u Re {re}");
                assert_eq!(v.coord.len(), rows, "{r:?} v Re {re}");
                assert_eq!(u.value[rows - 1], 1.0, "lid value");
            }
        }
        let flagged = |re: f64| {
            let (u, v) = Reference::Ghia.tables(re).unwrap();
            (u.suspect.iter().filter(|&&s| s).count(), v.suspect.iter().filter(|&&s| s).count())
        };
        assert_eq!(flagged(100.0), (0, 0));
        assert_eq!(flagged(400.0), (0, 1));
        assert_eq!(flagged(3200.0), (1, 0));
        assert_eq!(flagged(10000.0), (1, 0));
        let (_, v) = Reference::Ghia.tables(400.0).unwrap();
        assert!(v.suspect[11] && v.coord[11] == 0.9063 && v.value[11] == -0.23827);
        assert!(Reference::Ghia.tables(200.0).is_none());
    }

    #[test]
    fn host_readers_refuse_a_stale_copy() {
        let mut c = Cavity::<f64>::new(&params(9));
        c.advance(c.dt()).unwrap();
        assert!(c.host_current, "a CPU step keeps the host copy current");
        // As after a step on a GPU.
        c.host_current = false;
        type Reader = fn(&Cavity<f64>);
        let readers: [(&str, Reader); 12] = [
            ("output_fields", |c| drop(c.output_fields())),
            ("state", |c| drop(c.state())),
            ("find_non_finite", |c| drop(c.find_non_finite())),
            ("diagnostics", |c| drop(c.diagnostics())),
            ("report", |c| drop(c.report())),
            ("write_results", |c| drop(c.write_results(std::path::Path::new("/nonexistent")))),
            ("centreline_u", |c| drop(c.centreline_u())),
            ("centreline_v", |c| drop(c.centreline_v())),
            ("compare", |c| drop(c.compare(Reference::Ghia))),
            ("vorticity", |c| drop(c.vorticity())),
            ("u", |c| {
                c.u();
            }),
            ("p", |c| {
                c.p();
            }),
        ];
        for (name, read) in readers {
            let msg = crate::testing::panic_message(|| read(&c)).unwrap_or_else(|| panic!("{name} read a stale host copy"));
            assert!(msg.contains(&format!("Cavity::{name} ")), "{name}: {msg}");
        }
        // Progress and convergence read no fields.
        assert!(c.status().is_some() && !c.converged());
        c.sync().unwrap();
        assert_eq!(c.state()[0].values, f64::wrap(c.u().to_vec()));
    }

    /// The tolerance flag 2 restores a converged state; impossible values are refused.
    #[test]
    fn residual_state_round_trips_and_refuses_impossible_values() {
        let mut res = Residual::new();
        res.converged = true;
        res.below_once = true;
        let back = Residual::restore(&mut vec![res.state()], 0.0).unwrap();
        assert!(back.converged && back.below_once && back.r_k.is_nan());
        let of = |v: [f64; 5]| Residual::restore(&mut vec![StateArray::other("residual_state", f64::wrap(v.to_vec()))], 1.0);
        assert!(of([0.5, f64::NAN, 0.0, f64::NAN, f64::NAN]).is_ok());
        for bad in [
            [0.5, -7.0, 0.0, 1.0, 1.0],
            [0.5, 1e-3, 3.0, 1.0, 1.0],
            [0.5, 1e-3, 1.0, -1.0, 1.0],
            [0.5, 1e-3, 1.0, 1.0, f64::INFINITY],
            [2.0, 1e-3, 1.0, 1.0, 1.0],
        ] {
            assert!(of(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn interpolation_is_linear_between_nodes() {
        let f = [0.0, 1.0, 4.0, 9.0];
        assert_eq!(interpolate(&f, 0.5, &[0.0, 0.25, 0.75, 1.5]), vec![0.0, 0.5, 2.5, 9.0]);
    }
}
