//! Heat equation `dT/dt = a laplacian(T)` with zero Dirichlet boundaries: `heat1d` (sine
//! initial condition on [0, L]) and `heat2d` (Gaussian heat kernel on a square), each with
//! its analytic solution; explicit (FTCS) or implicit (Crank–Nicolson in 1D, Peaceman–Rachford
//! ADI in 2D), each on the CPU or CUDA.

pub mod cuda;
pub mod implicit;
pub mod implicit_cuda;
pub mod kernels;
pub mod part;

use std::f64::consts::PI;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Result, input};
use crate::numerics::temporal::Tiling;
use crate::padded::Padded;
use crate::real::{Precision, Real};
use crate::solver::{
    ArraySpec, Grid, Location, Mesh, NonFinite, OutField, Place, Solver, StateArray, first_non_finite, take_array,
};
use crate::cpu::CpuOptions;
use crate::bench::BenchOptions;
use crate::solvers::{Device, Registered, SolverSpec};
use crate::validate::{count, positive};
pub use implicit::{Method, TridiagonalSolver};

/// `solver: {heat1d: ...}`: `T(x,0) = amplitude sin(pi x / length)` on `[0, length]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Heat1dParams {
    /// Number of nodes, ends included.
    pub n: usize,
    /// Stability number `r = a dt / dx^2` (stable for r <= 1/2); sets dt.
    pub r: f64,
    #[serde(default = "one")]
    pub diffusivity: f64,
    #[serde(default = "one")]
    pub length: f64,
    #[serde(default = "six")]
    pub amplitude: f64,
    /// `explicit` (FTCS) or `crank_nicolson`.
    #[serde(default)]
    pub method: Method,
    /// The tridiagonal solver of `crank_nicolson`: `thomas` (default) or `spike`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tridiagonal: Option<TridiagonalSolver>,
    /// Truncated SPIKE partitions (`tridiagonal: spike`), default 64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitions: Option<usize>,
}

/// `solver: {heat2d: ...}`: heat kernel of age `t0` centred in the square `domain`².
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Heat2dParams {
    /// Nodes per side, edges included.
    pub n: usize,
    /// Stability number `r = a dt / dx^2` (stable for r <= 1/4); sets dt.
    pub r: f64,
    #[serde(default = "one")]
    pub diffusivity: f64,
    /// Age of the initial Gaussian.
    #[serde(default = "default_t0")]
    pub t0: f64,
    /// `[lo, hi]` of both axes.
    #[serde(default = "default_domain")]
    pub domain: [f64; 2],
    /// `explicit` (FTCS) or `adi` (Peaceman–Rachford).
    #[serde(default)]
    pub method: Method,
}

impl Default for Heat1dParams {
    /// The paper's case (He 2023, HEAT1D): 512 nodes, r = 0.4, explicit.
    fn default() -> Self {
        Heat1dParams {
            n: 512,
            r: 0.4,
            diffusivity: 1.0,
            length: 1.0,
            amplitude: 6.0,
            method: Method::Explicit,
            tridiagonal: None,
            partitions: None,
        }
    }
}

impl Default for Heat2dParams {
    /// The paper's case (He 2023, HEAT2D): r = 0.2, the Gaussian of age 0.001 on [-1, 1]², explicit.
    fn default() -> Self {
        Heat2dParams { n: 512, r: 0.2, diffusivity: 1.0, t0: default_t0(), domain: default_domain(), method: Method::Explicit }
    }
}

fn one() -> f64 {
    1.0
}
fn six() -> f64 {
    6.0
}
fn default_t0() -> f64 {
    0.001
}
fn default_domain() -> [f64; 2] {
    [-1.0, 1.0]
}

/// Alias slot of the second buffer (slot 0 is the first): 2 KiB apart modulo 4 KiB.
pub const NEXT_SLOT: usize = 4;

/// Largest node count per axis we accept (memory is reported by `sim check`).
const MAX_N_1D: usize = 1 << 30;
const MAX_N_2D: usize = 1 << 16;

/// SPIKE partitions when `partitions` is not given.
const DEFAULT_PARTITIONS: usize = 64;

/// `r` of the explicit method is limited; the implicit methods are unconditionally stable.
fn check_r(key: &str, r: f64, method: Method, limit: f64) -> Result<()> {
    positive(key, r)?;
    if !method.implicit() && r > limit {
        return input(format!(
            "{key}: {r} exceeds the stability limit r <= {limit} of the explicit scheme (an implicit \
             method has none: method: {})",
            if limit == 0.5 { "crank_nicolson" } else { "adi" }
        ));
    }
    Ok(())
}

impl Heat1dParams {
    fn tridiagonal_solver(&self) -> TridiagonalSolver {
        self.tridiagonal.unwrap_or_default()
    }
    fn partition_count(&self) -> usize {
        self.partitions.unwrap_or(DEFAULT_PARTITIONS).min(self.n - 2)
    }
    /// The method's keys: `adi` is 2-D; `tridiagonal` and `partitions` belong to an implicit
    /// method and to SPIKE.
    fn check_method(&self) -> Result<()> {
        let key = "solver.heat1d";
        if self.method == Method::Adi {
            return input(format!("{key}.method: adi is the 2-D method (heat2d); heat1d takes explicit or crank_nicolson"));
        }
        if !self.method.implicit() && self.tridiagonal.is_some() {
            return input(format!("{key}.tridiagonal: only with an implicit method (method: crank_nicolson)"));
        }
        if let Some(p) = self.partitions {
            if self.tridiagonal_solver() != TridiagonalSolver::Spike {
                return input(format!("{key}.partitions: only with tridiagonal: spike"));
            }
            if p == 0 || p > self.n - 2 {
                return input(format!(
                    "{key}.partitions: {p} partitions for a system of {} unknowns (n - 2); give 1 to {}",
                    self.n - 2,
                    self.n - 2
                ));
            }
        }
        Ok(())
    }
}

impl SolverSpec for Heat1dParams {
    fn validate(&self) -> Result<()> {
        count("solver.heat1d.n", self.n, "nodes", 3, MAX_N_1D)?;
        check_r("solver.heat1d.r", self.r, self.method, 0.5)?;
        self.check_method()?;
        positive("solver.heat1d.diffusivity", self.diffusivity)?;
        positive("solver.heat1d.length", self.length)?;
        if !self.amplitude.is_finite() {
            return input("solver.heat1d.amplitude: must be finite");
        }
        Ok(())
    }
    fn has_cuda(&self) -> bool {
        true
    }
    fn scheme_name(&self) -> Option<&'static str> {
        (self.method != Method::Explicit).then(|| self.method.name())
    }
    fn memory_estimate(&self, precision: Precision) -> usize {
        // Two fields, the factorisation of an implicit method, and the copies that output
        // (T, T_exact), errors and checkpoints make: 6 fields at the measured peak of a run.
        // SPIKE's bookkeeping per partition (its spikes, their place in the solve's lists:
        // 32-89 B measured for partitions of 12 rows down to 1) outgrows the fields where
        // partitions hold a few rows.
        let spike = self.tridiagonal_solver() == TridiagonalSolver::Spike && self.method.implicit();
        8 * self.n * precision.bytes() + if spike { 128 * self.partition_count() } else { 0 }
    }
    fn nominal_dt(&self) -> Option<f64> {
        Some(self.setup().dt)
    }
    /// After the memory check: a SPIKE plan is made as the run makes it.
    fn describe(&self, precision: Precision) -> Result<Vec<String>> {
        crate::solvers::check_memory(self.memory_estimate(precision))?;
        self.setup().describe(precision)
    }
    fn build(&self, precision: Precision, device: &Device) -> Result<Box<dyn Solver>> {
        crate::in_precision!(precision, |T| Heat::<T>::heat1d(self).on(device, self))
    }
    fn tiling(&self, precision: Precision, cpu: &CpuOptions, threads: usize) -> Option<Tiling> {
        let explicit = self.method == Method::Explicit;
        explicit.then(|| cpu.temporal_block.tiling_1d(self.n, precision.bytes(), threads)).flatten()
    }
}

impl Registered for Heat1dParams {
    const BENCH_SIZE: usize = 1 << 24;
    fn bench(n: usize, o: &BenchOptions, device: &Device) -> Result<Box<dyn Solver>> {
        let p = Heat1dParams { n, r: 0.2, ..Heat1dParams::default() };
        p.validated_build(o.precision, device)
    }
}

impl SolverSpec for Heat2dParams {
    fn validate(&self) -> Result<()> {
        count("solver.heat2d.n", self.n, "nodes", 3, MAX_N_2D)?;
        if self.method == Method::CrankNicolson {
            return input("solver.heat2d.method: heat2d's implicit method is adi (Peaceman–Rachford: \
                          Crank–Nicolson split into two tridiagonal halves); crank_nicolson is heat1d's");
        }
        check_r("solver.heat2d.r", self.r, self.method, 0.25)?;
        positive("solver.heat2d.diffusivity", self.diffusivity)?;
        positive("solver.heat2d.t0", self.t0)?;
        let [lo, hi] = self.domain;
        if !(lo.is_finite() && hi.is_finite() && hi > lo) {
            return input(format!("solver.heat2d.domain: [{lo}, {hi}] must have lo < hi"));
        }
        Ok(())
    }
    fn has_cuda(&self) -> bool {
        true
    }
    fn scheme_name(&self) -> Option<&'static str> {
        (self.method != Method::Explicit).then(|| self.method.name())
    }
    fn memory_estimate(&self, precision: Precision) -> usize {
        // As heat1d: 6 fields at the measured peak (ADI's sweeps add rows, not fields).
        8 * self.n * self.n * precision.bytes()
    }
    fn nominal_dt(&self) -> Option<f64> {
        Some(self.setup().dt)
    }
    /// After the memory check: a SPIKE plan is made as the run makes it.
    fn describe(&self, precision: Precision) -> Result<Vec<String>> {
        crate::solvers::check_memory(self.memory_estimate(precision))?;
        self.setup().describe(precision)
    }
    fn build(&self, precision: Precision, device: &Device) -> Result<Box<dyn Solver>> {
        crate::in_precision!(precision, |T| Heat::<T>::heat2d(self).on(device, self))
    }
    fn tiling(&self, precision: Precision, cpu: &CpuOptions, threads: usize) -> Option<Tiling> {
        let explicit = self.method == Method::Explicit;
        explicit.then(|| cpu.temporal_block.tiling(self.n, precision.bytes(), 1, threads)).flatten()
    }
}

impl Registered for Heat2dParams {
    fn bench(n: usize, o: &BenchOptions, device: &Device) -> Result<Box<dyn Solver>> {
        let p = Heat2dParams { n, r: 0.2, ..Heat2dParams::default() };
        p.validated_build(o.precision, device)
    }
}

/// The analytic solution.
#[derive(Clone, Copy, Debug)]
pub enum Exact {
    /// `amplitude sin(pi x / length) exp(-a pi^2 t / length^2)`
    Sine { a: f64, length: f64, amplitude: f64 },
    /// Free-space heat kernel `exp(-r^2 / (4 a (t + t0))) / (4 pi a (t + t0))`.
    Gaussian { a: f64, t0: f64 },
}

impl Exact {
    pub fn value(&self, x: f64, y: f64, t: f64) -> f64 {
        match *self {
            Exact::Sine { a, length, amplitude } => {
                amplitude * (PI * x / length).sin() * (-a * PI * PI * t / (length * length)).exp()
            }
            Exact::Gaussian { a, t0 } => {
                let s = 4.0 * a * (t + t0);
                (-(x * x + y * y) / s).exp() / (PI * s)
            }
        }
    }
}

pub struct Heat<T: Real> {
    kind: &'static str,
    grid: Grid,
    /// Stability number of a full step.
    r: f64,
    dt: f64,
    exact: Exact,
    /// The field; on a GPU the host copy, refreshed by `sync`.
    temp: Padded<T>,
    /// Where the steps run.
    engine: Engine<T>,
    /// Whether `temp` holds the current field: always on the CPU; on a GPU from `sync` or
    /// `restore` until the next `advance`.
    host_current: bool,
    backend: String,
    step: u64,
    time: f64,
}

/// What a heat case fixes before any field is allocated: the grid, the time step and the
/// analytic solution.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    pub kind: &'static str,
    pub grid: Grid,
    /// Stability number of a full step, and its limit.
    pub r: f64,
    pub r_limit: f64,
    pub dt: f64,
    pub exact: Exact,
    pub method: Method,
    /// The tridiagonal solver of the implicit halves along x and its SPIKE partitions.
    pub tridiagonal: TridiagonalSolver,
    pub partitions: usize,
}

impl Setup {
    fn new(kind: &'static str, grid: Grid, r: f64, r_limit: f64, a: f64, exact: Exact, method: Method) -> Self {
        let dx = grid.spacing[0];
        let tridiagonal = TridiagonalSolver::Thomas;
        Setup { kind, grid, r, r_limit, dt: r * dx * dx / a, exact, method, tridiagonal, partitions: 1 }
    }

    /// Lines for `sim check`, the tridiagonal plan as a run in `precision` makes it.
    fn describe(&self, precision: Precision) -> Result<Vec<String>> {
        let [nx, ny] = self.grid.n;
        let grid = if ny == 1 { format!("{nx} nodes") } else { format!("{nx} x {ny} nodes") };
        let method = match (self.method, self.tridiagonal) {
            (Method::Explicit, _) => format!("stability limit r <= {}", self.r_limit),
            (Method::Adi, _) => "adi (Peaceman–Rachford), unconditionally stable, batched Thomas".into(),
            (Method::CrankNicolson, TridiagonalSolver::Thomas) => {
                "crank_nicolson, unconditionally stable, Thomas".into()
            }
            (Method::CrankNicolson, TridiagonalSolver::Spike) => {
                let spike = |f: Option<&str>| match f {
                    None => format!("truncated SPIKE on {} partitions", self.partitions),
                    Some(reason) => format!("SPIKE not truncated: {reason}"),
                };
                let (r, p, s) = (self.r, self.partitions, TridiagonalSolver::Spike);
                let plan = match precision {
                    Precision::F32 => spike(implicit::Factors::along_x(nx, r as f32, s, p)?.fallback()),
                    Precision::F64 => spike(implicit::Factors::along_x(nx, r, s, p)?.fallback()),
                };
                format!("crank_nicolson, unconditionally stable, {plan}")
            }
        };
        Ok(vec![
            format!("grid: {grid}, dx = {:.6e}", self.grid.spacing[0]),
            format!("dt = {:.6e} (r = {}, {method})", self.dt, self.r),
        ])
    }
}

impl Heat1dParams {
    pub fn setup(&self) -> Setup {
        let dx = self.length / (self.n - 1) as f64;
        let grid = Grid { n: [self.n, 1], origin: [0.0, 0.0], spacing: [dx, dx] };
        let exact = Exact::Sine { a: self.diffusivity, length: self.length, amplitude: self.amplitude };
        let setup = Setup::new("heat1d", grid, self.r, 0.5, self.diffusivity, exact, self.method);
        Setup { tridiagonal: self.tridiagonal_solver(), partitions: self.partition_count(), ..setup }
    }
}

impl Heat2dParams {
    pub fn setup(&self) -> Setup {
        let [lo, hi] = self.domain;
        let dx = (hi - lo) / (self.n - 1) as f64;
        let grid = Grid { n: [self.n, self.n], origin: [lo, lo], spacing: [dx, dx] };
        let exact = Exact::Gaussian { a: self.diffusivity, t0: self.t0 };
        Setup::new("heat2d", grid, self.r, 0.25, self.diffusivity, exact, self.method)
    }
}

impl<T: Real> Heat<T> {
    pub fn heat1d(p: &Heat1dParams) -> Self {
        Self::new(p.setup())
    }

    pub fn heat2d(p: &Heat2dParams) -> Self {
        Self::new(p.setup())
    }

    fn new(setup: Setup) -> Self {
        let Setup { kind, grid, r, dt, exact, method, .. } = setup;
        let mut temp = Padded::zeros(grid.nodes(), 0);
        temp.copy_from_slice(&sample::<T>(&grid, |x, y| exact.value(x, y, 0.0)));
        zero_boundary(&mut temp, grid.n[0]);
        let next = Padded::zeros(grid.nodes(), NEXT_SLOT);
        let engine = match method {
            Method::Explicit => Engine::Cpu { next, tiling: None },
            _ => {
                let [nx, ny] = grid.n;
                let imp = implicit::CpuImplicit::new(next, nx, ny, setup.tridiagonal, setup.partitions);
                Engine::Implicit { imp: Box::new(imp), method }
            }
        };
        Heat { kind, grid, r, dt, exact, temp, engine, host_current: true, backend: "cpu".into(), step: 0, time: 0.0 }
    }

    /// Move the field to `device` (the CPU keeps it where it is, and blocks the explicit steps
    /// in time as `spec` says for `cpu.temporal_block` and the threads of the current pool).
    pub fn on(mut self, device: &Device, spec: &dyn SolverSpec) -> Result<Self> {
        if let (Device::Cpu(opts), Engine::Cpu { tiling, .. }) = (device, &mut self.engine) {
            *tiling = spec.tiling(T::PRECISION, opts, rayon::current_num_threads());
        }
        if let Device::Cuda(gpu, opts) = device {
            let [bx, by] = opts.block();
            if let Engine::Implicit { imp, method } = &self.engine {
                let (solver, partitions) = imp.solver();
                let dev = implicit_cuda::CudaImplicit::new(gpu, opts, &self.grid, &self.temp, *method, (solver, partitions))?;
                // The solver along x, as `sim check` describes it (heat2d's is Thomas).
                let along_x = match (*method, solver) {
                    (Method::CrankNicolson, TridiagonalSolver::Spike) => format!(" spike/{partitions}"),
                    (Method::CrankNicolson, TridiagonalSolver::Thomas) => " thomas".into(),
                    _ => String::new(),
                };
                self.backend = format!("cuda ({}, {}{along_x} {bx}x{by})", gpu.name, method.name());
                self.engine = Engine::CudaImplicit { dev: Box::new(dev), method: *method };
            } else {
                self.engine = Engine::Cuda(Box::new(cuda::HeatCuda::new(gpu, opts, &self.grid, &self.temp)?));
                let variant = if self.grid.n[1] == 1 { "1d" } else { opts.variant.name() };
                self.backend = format!("cuda ({}, {variant} {bx}x{by})", gpu.name);
            }
        }
        Ok(self)
    }

    /// The node grid.
    pub fn grid(&self) -> Grid {
        self.grid
    }

    /// The current temperature field.
    pub fn temperature(&self) -> &[T] {
        self.host("temperature")
    }

    /// The host copy of the field, read by `method`.
    fn host(&self, method: &str) -> &[T] {
        self.assert_host_current(method);
        &self.temp
    }

    /// Panics when the host copy is stale: a GPU step ran and no `Solver::sync` followed.
    fn assert_host_current(&self, method: &str) {
        assert!(
            self.host_current,
            "Heat::{method} read the host copy of the field, which is stale after a GPU step: call Solver::sync first"
        );
    }

    /// Stability number of a full step.
    pub fn r(&self) -> f64 {
        self.r
    }

    pub fn exact(&self) -> Exact {
        self.exact
    }

    /// The analytic solution sampled at the nodes at the current time.
    pub fn exact_field(&self) -> Vec<f64> {
        sample(&self.grid, |x, y| self.exact.value(x, y, self.time))
    }

    /// Max and RMS of (numerical - analytic) over all nodes.
    pub fn errors(&self) -> (f64, f64) {
        let n = self.grid.n[0];
        // The exact field becomes the errors.
        let mut d = self.exact_field();
        d.par_chunks_mut(n).zip(self.host("errors").par_chunks(n)).for_each(|(d, t)| {
            d.iter_mut().zip(t).for_each(|(d, t)| *d = t.f64() - *d);
        });
        let max = d.par_iter().map(|d| d.abs()).reduce(|| 0.0, f64::max);
        // Per-row partial sums combined in order: the same result for any thread count.
        let s = error_scale(max);
        let sums: Vec<f64> = d.par_chunks(n).map(|row| row.iter().map(|d| (d * s) * (d * s)).sum()).collect();
        (max, (sums.iter().sum::<f64>() / d.len() as f64).sqrt() / s)
    }
}

/// The power of two that brings `max`, the largest of some errors, near 1: their squares,
/// scaled by it, cannot overflow (as those of errors beyond 1e154 would) nor lose their
/// bits (the scaling is exact).
pub(crate) fn error_scale(max: f64) -> f64 {
    if max.is_normal() { 2f64.powi(-max.log2().floor() as i32) } else { 1.0 }
}

/// Where the steps run: the CPU or a CUDA device.
enum Engine<T: Real> {
    /// On the CPU, with the buffer the next step writes. It sits 2 KiB from the field modulo
    /// 4 KiB, so loads of one never falsely alias stores to the other. With a tiling, full
    /// steps run several at a time in temporally blocked sweeps.
    Cpu { next: Padded<T>, tiling: Option<Tiling> },
    /// On a CUDA device; the solver's field is the host copy.
    Cuda(Box<cuda::HeatCuda<T>>),
    /// An implicit method on the CPU.
    Implicit { imp: Box<implicit::CpuImplicit<T>>, method: Method },
    /// An implicit method on a CUDA device; the solver's field is the host copy.
    CudaImplicit { dev: Box<implicit_cuda::CudaImplicit<T>>, method: Method },
}

impl<T: Real> Engine<T> {
    /// One step of [`kernels::step`] on this back end; `temp` is the field (`nx` wide).
    fn step(&mut self, temp: &mut Padded<T>, nx: usize, r: T) -> Result<()> {
        match self {
            Engine::Cpu { next, .. } => kernels::step(&mut kernels::CpuStages { temp, next, nx }, r),
            Engine::Cuda(gpu) => kernels::step(gpu.as_mut(), r),
            Engine::Implicit { imp, method } => {
                imp.factor(r)?;
                implicit::step(&mut implicit::CpuStages { temp, imp }, *method, r)
            }
            Engine::CudaImplicit { dev, .. } => dev.step(r),
        }
    }

    /// `n` steps with `r` in blocked sweeps, when this back end has a tiling.
    fn blocked_steps(&mut self, temp: &mut Padded<T>, nx: usize, r: T, n: u64) -> bool {
        let Engine::Cpu { next, tiling: Some(tiling) } = self else { return false };
        let mut left = n as usize;
        while left > 0 {
            let steps = left.min(tiling.steps());
            if temp.len() == nx {
                kernels::ftcs1d_blocked(temp, next, r, tiling, steps);
            } else {
                kernels::ftcs2d_blocked(temp, next, nx, r, tiling, steps);
            }
            if steps % 2 == 1 {
                std::mem::swap(temp, next);
            }
            left -= steps;
        }
        true
    }

    /// The field on a device, if the steps run on one.
    fn device(&self) -> Option<&cuda::DeviceField<T>> {
        match self {
            Engine::Cuda(gpu) => Some(&gpu.field),
            Engine::CudaImplicit { dev, .. } => Some(&dev.field),
            Engine::Cpu { .. } | Engine::Implicit { .. } => None,
        }
    }

    fn device_mut(&mut self) -> Option<&mut cuda::DeviceField<T>> {
        match self {
            Engine::Cuda(gpu) => Some(&mut gpu.field),
            Engine::CudaImplicit { dev, .. } => Some(&mut dev.field),
            Engine::Cpu { .. } | Engine::Implicit { .. } => None,
        }
    }

    /// Whether the field lives on the host, so that stepping keeps the host copy current.
    fn on_host(&self) -> bool {
        self.device().is_none()
    }

    /// The implicit method and why SPIKE fell back to Thomas, if it did (for the report).
    fn implicit(&self) -> Option<(Method, Option<&str>)> {
        match self {
            Engine::Implicit { imp, method } => Some((*method, imp.fallback())),
            Engine::CudaImplicit { dev, method } => Some((*method, dev.fallback.as_deref())),
            Engine::Cpu { .. } | Engine::Cuda(_) => None,
        }
    }
}

/// Sample `f(x, y)` at the grid nodes.
fn sample<T: Real>(grid: &Grid, f: impl Fn(f64, f64) -> f64 + Sync) -> Vec<T> {
    let [nx, ny] = grid.n;
    let mut v = vec![T::zero(); nx * ny];
    v.par_chunks_mut(nx).enumerate().for_each(|(j, row)| {
        let y = grid.origin[1] + j as f64 * grid.spacing[1];
        for (i, out) in row.iter_mut().enumerate() {
            *out = T::of(f(grid.origin[0] + i as f64 * grid.spacing[0], y));
        }
    });
    v
}

/// Set the Dirichlet boundary nodes to zero (both ends in 1D, all four edges in 2D).
fn zero_boundary<T: Real>(v: &mut [T], nx: usize) {
    let ny = v.len() / nx;
    for j in 0..ny {
        v[j * nx] = T::zero();
        v[j * nx + nx - 1] = T::zero();
    }
    if ny > 1 {
        v[..nx].fill(T::zero());
        v[(ny - 1) * nx..].fill(T::zero());
    }
}

impl<T: Real> Solver for Heat<T> {
    fn kind(&self) -> &'static str {
        self.kind
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
        // Exactly r for a full step; proportional for a step the driver landed on an instant.
        let r = T::of(if dt == self.dt { self.r } else { self.r * (dt / self.dt) });
        self.host_current = self.engine.on_host();
        self.engine.step(&mut self.temp, self.grid.n[0], r)?;
        self.step += 1;
        self.time += dt;
        Ok(())
    }

    fn steps_per_call(&self) -> u64 {
        self.tiling().map_or(1, |t| t.steps() as u64)
    }

    fn advance_steps(&mut self, dt: f64, n: u64) -> Result<()> {
        if dt != self.dt || !self.engine.blocked_steps(&mut self.temp, self.grid.n[0], T::of(self.r), n) {
            for _ in 0..n {
                self.advance(dt)?;
            }
            return Ok(());
        }
        self.step += n;
        for _ in 0..n {
            self.time += dt;
        }
        Ok(())
    }

    fn tiling(&self) -> Option<&Tiling> {
        match &self.engine {
            Engine::Cpu { tiling, .. } => tiling.as_ref(),
            _ => None,
        }
    }

    fn sync(&mut self) -> Result<()> {
        if let Some(field) = self.engine.device() {
            field.download(&mut self.temp)?;
        }
        self.host_current = true;
        Ok(())
    }

    fn wait(&mut self) -> Result<()> {
        self.engine.device().map_or(Ok(()), |field| field.wait())
    }

    fn backend(&self) -> String {
        // SPIKE's plan is made with the first factorisation, after the back end was named.
        match self.engine.implicit() {
            Some((_, Some(_))) if self.backend.starts_with("cuda") => format!("{}, fell back to thomas", self.backend),
            _ => self.backend.clone(),
        }
    }

    fn mesh(&self) -> Mesh {
        Mesh::Nodes(self.grid)
    }

    fn units(&self) -> &'static str {
        "T: temperature; T_exact: the analytic solution at the same time; x, y and t in the units of \
         the case (domain, diffusivity)"
    }

    fn output_fields(&self) -> Vec<OutField> {
        let exact: Vec<T> = sample(&self.grid, |x, y| self.exact.value(x, y, self.time));
        vec![
            OutField::new("T", 1, Location::Node, T::wrap(self.host("output_fields").to_vec())),
            OutField::new("T_exact", 1, Location::Node, T::wrap(exact)),
        ]
    }

    fn state(&self) -> Vec<StateArray> {
        vec![StateArray::field("T", Place::NODE, &self.mesh(), T::wrap(self.host("state").to_vec()))]
    }

    fn state_layout(&self) -> Vec<ArraySpec> {
        vec![ArraySpec::field("T", Place::NODE, &self.mesh(), T::PRECISION)]
    }

    fn restore(&mut self, step: u64, time: f64, mut arrays: Vec<StateArray>) -> Result<()> {
        let t = take_array::<T>(&mut arrays, "T", &crate::solver::shape_of(Place::NODE, &self.mesh()))?;
        self.temp.copy_from_slice(&t);
        if let Some(field) = self.engine.device_mut() {
            field.upload(&self.temp)?;
        }
        self.host_current = true;
        self.step = step;
        self.time = time;
        Ok(())
    }

    fn find_non_finite(&self) -> Option<NonFinite> {
        first_non_finite("T", self.host("find_non_finite"), self.grid.n[0])
    }

    fn diagnostics(&self) -> Vec<(&'static str, Option<f64>)> {
        let cell: f64 = if self.grid.n[1] == 1 { self.grid.spacing[0] } else { self.grid.spacing[0] * self.grid.spacing[1] };
        // Per-row partial sums combined in order: the same result for any thread count. Each
        // value is scaled by its cell first, so that a representable heat content cannot
        // overflow on its way.
        let rows: Vec<(f64, f64, f64)> = self
            .host("diagnostics")
            .par_chunks(self.grid.n[0])
            .map(|row| {
                row.iter().fold((f64::MIN, f64::MAX, 0.0), |(mx, mn, s), &v| {
                    let v = v.f64();
                    (mx.max(v), mn.min(v), s + v * cell)
                })
            })
            .collect();
        let (max, min, heat) = rows
            .iter()
            .fold((f64::MIN, f64::MAX, 0.0), |(a, b, c), &(x, y, z)| (a.max(x), b.min(y), c + z));
        let (max_err, rms_err) = self.errors();
        vec![
            ("T_max", Some(max)),
            ("T_min", Some(min)),
            ("heat_content", Some(heat)),
            ("max_error", Some(max_err)),
            ("rms_error", Some(rms_err)),
        ]
    }

    fn report(&self) -> serde_json::Map<String, serde_json::Value> {
        self.assert_host_current("report");
        let (max, rms) = self.errors();
        let mut m = serde_json::Map::new();
        m.insert("reference".into(), "analytic".into());
        if let Some(tiling) = self.tiling() {
            m.insert("temporal_block".into(), tiling.to_string().into());
        }
        if let Some((method, fallback)) = self.engine.implicit() {
            m.insert("method".into(), method.name().into());
            if let Some(reason) = fallback {
                m.insert("tridiagonal_fallback".into(), reason.into());
            }
        }
        m.insert("max_error".into(), max.into());
        m.insert("rms_error".into(), rms.into());
        m
    }

    fn bytes_per_step(&self) -> f64 {
        2.0 * self.temp.len() as f64 * T::PRECISION.bytes() as f64
    }

}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::panic_message;

    #[test]
    fn host_readers_refuse_a_stale_copy() {
        let p = Heat2dParams { n: 9, r: 0.2, ..Heat2dParams::default() };
        let mut h = Heat::<f64>::heat2d(&p);
        h.advance(h.dt()).unwrap();
        assert!(h.host_current, "a CPU step keeps the host copy current");
        // As after a step on a GPU.
        h.host_current = false;
        type Reader = fn(&Heat<f64>);
        let readers: [(&str, Reader); 7] = [
            ("output_fields", |h| drop(h.output_fields())),
            ("state", |h| drop(h.state())),
            ("find_non_finite", |h| drop(h.find_non_finite())),
            ("diagnostics", |h| drop(h.diagnostics())),
            ("report", |h| drop(h.report())),
            ("temperature", |h| {
                h.temperature();
            }),
            ("errors", |h| {
                h.errors();
            }),
        ];
        for (name, read) in readers {
            let msg = panic_message(|| read(&h)).unwrap_or_else(|| panic!("{name} read a stale host copy"));
            assert!(msg.contains(&format!("Heat::{name} ")), "{name}: {msg}");
        }
        h.sync().unwrap();
        assert_eq!(h.state()[0].values, f64::wrap(h.temperature().to_vec()));
    }
}
