//! Rotating shallow-water equations on a rectangular grid, with GPU Ocean's four schemes
//! (spec `shallow_water.md`): FBL (linear forward-backward) and CTCS (nonlinear leapfrog) on
//! an Arakawa C grid with one ghost layer, CDKLM16 (well-balanced) and KP07 central-upwind
//! finite volume with Runge-Kutta on cell averages with two ghost layers.
//!
//! The solver owns the case-level parts (initial state, time step, output, diagnostics,
//! checkpoints); each scheme owns its arrays and its step behind [`scheme::Scheme`].

pub mod cdklm16;
mod fv;
mod fv_cuda;
pub mod ctcs;
pub mod cuda;
mod fd_boundary;
mod fd_cuda;
pub mod fbl;
pub mod grid;
pub mod init;
pub mod input_file;
pub mod kp07;
pub mod part;
pub mod params;
pub mod scheme;
pub mod sponge;

#[cfg(test)]
mod reference;

use std::path::PathBuf;
use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{Result, input};
use crate::real::{Precision, Real};
use crate::parallel::{Block, Comm};
use crate::solver::{
    ArraySpec, Grid, Location, Mesh, NonFinite, OutField, Piece, Solver, StateArray, first_non_finite, shape_of,
    take_array,
};
use crate::bench::BenchOptions;
use crate::cpu::CpuOptions;
use crate::numerics::temporal::Tiling;
use crate::run::schedule::Landing;
use crate::solvers::{Device, Registered, SolverSpec};

pub use params::{SchemeName, ShallowWaterParams};
use grid::Physics;
use input_file::Inputs;
use params::{Bathymetry, InitialCondition};
use scheme::{Cells, Scheme};

/// The most adaptive steps a device scheme chooses and lands in one call (one download of its
/// clock each), so that the run's progress and a Ctrl-C are seen at least this often.
const LANDED_STEPS: u64 = 64;

/// Arrays of grid size each scheme holds (fields, levels, scratch), for the memory estimate.
fn arrays_per_cell(scheme: SchemeName) -> usize {
    match scheme {
        SchemeName::Fbl => 6,
        SchemeName::Ctcs => 9,
        SchemeName::Cdklm16 | SchemeName::Kp07 => 12,
    }
}

impl ShallowWaterParams {
    /// [`SolverSpec::describe`] with the file arrays from `inputs`.
    fn described(&self, precision: Precision, inputs: Inputs) -> Result<Vec<String>> {
        let mut lines = self.describe();
        crate::solvers::check_memory(self.memory_estimate(precision))?;
        let cpu = Device::Cpu(Default::default());
        let limit = match precision {
            Precision::F32 => ShallowWater::<f32>::with(self, &cpu, inputs)?.scheme.dt_limit(),
            Precision::F64 => ShallowWater::<f64>::with(self, &cpu, inputs)?.scheme.dt_limit(),
        };
        lines.push(format!("stable time step of the initial state: {limit:.6e} s"));
        Ok(lines)
    }
}

impl SolverSpec for ShallowWaterParams {
    fn validate(&self) -> Result<()> {
        self.check()
    }
    fn memory_estimate(&self, precision: Precision) -> usize {
        let cells = (self.nx + 5) * (self.ny + 5);
        // The scheme's arrays, the initial state as sampled, and the copies that output (10
        // cell fields) and checkpoints make: 25 (FBL) to 29 (CDKLM16, KP07) fields at the
        // measured peak of a run.
        // Arrays from files are kept in f64 for the checkpoints (each up to the corners'
        // (nx + 1) x (ny + 1)).
        let bathymetry = usize::from(matches!(self.bathymetry, Bathymetry::File { .. }));
        let initial = match &self.initial {
            InitialCondition::File { hu, hv, .. } => 1 + usize::from(hu.is_some()) + usize::from(hv.is_some()),
            _ => 0,
        };
        (arrays_per_cell(self.scheme) + 24) * cells * precision.bytes() + (bathymetry + initial) * cells * 8
    }
    fn nominal_dt(&self) -> Option<f64> {
        self.dt
    }
    /// The parameters, then the initial state built in `precision` as the run builds it (files
    /// read, depth and time step checked) and its stable time step.
    fn describe(&self, precision: Precision) -> Result<Vec<String>> {
        self.described(precision, Inputs::files())
    }
    /// The same with the file arrays the checkpoint holds, as the restart takes them.
    fn describe_restart(&self, precision: Precision, checkpoint: &std::path::Path, arrays: &[StateArray]) -> Result<Vec<String>> {
        self.described(precision, Inputs::stored(arrays, checkpoint))
    }
    fn has_cuda(&self) -> bool {
        true
    }
    /// FBL and CTCS with walls on all four sides (see [`fd_boundary::blockable`]); a level is
    /// η, U, V and H of a cell, FBL's step three levels (U*, V*, η), CTCS's one.
    fn tiling(&self, precision: Precision, cpu: &CpuOptions, threads: usize) -> Option<Tiling> {
        let levels = match self.scheme {
            SchemeName::Fbl => 3,
            SchemeName::Ctcs => 1,
            SchemeName::Cdklm16 | SchemeName::Kp07 => return None,
        };
        let blockable = fd_boundary::blockable(&self.physics());
        // Bytes per cell a sweep keeps in cache: two time levels of η, hu, hv, and H.
        let node_bytes = 7 * precision.bytes();
        blockable.then(|| cpu.temporal_block.tiling(self.nx + 2, node_bytes, levels, threads)).flatten()
    }
    fn scheme_name(&self) -> Option<&'static str> {
        Some(self.scheme.name())
    }
    fn build(&self, precision: Precision, device: &Device) -> Result<Box<dyn Solver>> {
        crate::in_precision!(precision, |T| ShallowWater::<T>::on(self, device))
    }
    /// The arrays read from files, which the checkpoints hold (not the files, which may have
    /// moved or changed).
    fn restart_inputs(&self) -> &'static [&'static str] {
        &input_file::STORED
    }
    fn build_restart(
        &self,
        precision: Precision,
        device: &Device,
        checkpoint: &std::path::Path,
        arrays: &[StateArray],
    ) -> Result<Box<dyn Solver>> {
        let inputs = Inputs::stored(arrays, checkpoint);
        crate::in_precision!(precision, |T| ShallowWater::<T>::with(self, device, inputs))
    }
    fn input_paths(&mut self) -> Vec<&mut PathBuf> {
        let mut paths = Vec::new();
        if let Bathymetry::File { path, .. } = &mut self.bathymetry {
            paths.push(path);
        }
        if let InitialCondition::File { path, .. } = &mut self.initial {
            paths.push(path);
        }
        paths
    }
}

impl Registered for ShallowWaterParams {
    const BENCH_SIZE: usize = 2048;
    const SCHEMES: &'static [&'static str] = &["fbl", "ctcs", "cdklm16", "kp07"];
    /// The paper's benchmark (spec §9.2): 200 m cells, 60 m deep, walls, a Gaussian hump,
    /// dt = 0.0095 s; CTCS with A = 0.1 dx.
    fn bench(n: usize, o: &BenchOptions, device: &Device) -> Result<Box<dyn Solver>> {
        let name = o.scheme.as_deref().unwrap_or("fbl");
        let scheme: SchemeName = serde_json::from_value(name.into()).map_err(|_| {
            crate::error::SimError::Input(format!(
                "--scheme {name}: unknown scheme (choose one of {})",
                Self::SCHEMES.join(", ")
            ))
        })?;
        let dx = 200.0;
        let s = 0.4 * n as f64 * dx;
        let p = ShallowWaterParams {
            scheme,
            nx: n,
            ny: n,
            dx,
            dy: None,
            g: 9.81,
            coriolis: Default::default(),
            friction: 0.0,
            viscosity: if scheme == SchemeName::Ctcs { 0.1 * dx } else { 0.0 },
            wind: [0.0; 2],
            dt: Some(0.0095),
            courant: None,
            theta: 1.3,
            time_integration: crate::numerics::rk::Scheme::SspRk2,
            gpu_ocean_compat: true,
            boundary: Default::default(),
            bathymetry: Bathymetry::Flat(60.0),
            initial: InitialCondition::Hump {
                amplitude: 1.0,
                radius: s / 10f64.sqrt(),
                width: None,
                center: None,
                shape: params::HumpShape::Gaussian,
            },
        };
        p.validated_build(o.precision, device)
    }
}

pub struct ShallowWater<T: Real> {
    params: ShallowWaterParams,
    grid: Grid,
    scheme: Box<dyn Scheme<T>>,
    /// The latest proposed step.
    dt: f64,
    /// The length of the step this process last took (none before its first).
    last_dt: Option<f64>,
    /// Σ η dx dy and Σ |η| dx dy at the start, for the mass change in the report.
    initial_mass: f64,
    /// The arrays the case read from its files, kept in the checkpoints (see
    /// [`input_file::Inputs`]).
    inputs: Vec<StateArray>,
    initial_volume: f64,
    step: u64,
    time: f64,
    /// `cpu`, or the device and launch shape.
    backend: String,
    /// The temporal blocking of the CPU steps, if any.
    tiling: Option<Tiling>,
    /// The ranks of a decomposed run, of whose domain the scheme holds one block.
    ranks: Option<part::Ranks>,
}

impl<T: Real> ShallowWater<T> {
    /// The case's initial state on the CPU, checked: positive depth everywhere, a stable time
    /// step.
    pub fn new(params: &ShallowWaterParams) -> Result<Self> {
        Self::on(params, &Device::Cpu(Default::default()))
    }

    /// The same on `device`.
    pub fn on(params: &ShallowWaterParams, device: &Device) -> Result<Self> {
        Self::with(params, device, Inputs::files())
    }

    /// The same with the file arrays from `inputs`.
    fn with(params: &ShallowWaterParams, device: &Device, mut inputs: Inputs) -> Result<Self> {
        let sources = init::Sources::new(params, &mut inputs)?;
        let p = params.physics();
        let initial = sources.initial();
        let rk = params.time_integration;
        let scheme: Box<dyn Scheme<T>> = match device {
            Device::Cuda(gpu, opts) => cuda::scheme(params.scheme, &p, &initial, rk, gpu, opts, None)?,
            Device::Cpu(_) => match params.scheme {
                SchemeName::Fbl => Box::new(fbl::Fbl::<T>::new(&p, &initial)),
                SchemeName::Ctcs => Box::new(ctcs::Ctcs::<T>::new(&p, &initial)),
                SchemeName::Cdklm16 => Box::new(cdklm16::Cdklm16::<T>::new(&p, &initial, rk, cdklm16::Op)),
                SchemeName::Kp07 => Box::new(kp07::Kp07::<T>::new(&p, &initial, rk, kp07::Op)),
            },
        };
        let backend = match device {
            Device::Cuda(gpu, o) => {
                let [bx, by] = scheme.launch_block().unwrap_or(o.block());
                format!("cuda ({}, {} {bx}x{by})", gpu.name, o.variant.name())
            }
            Device::Cpu(_) => "cpu".into(),
        };
        // Blocked in time as `cpu.temporal_block` says, for the threads of the current pool.
        let tiling = match device {
            Device::Cpu(opts) => params.tiling(T::PRECISION, opts, rayon::current_num_threads()),
            Device::Cuda(..) => None,
        };
        Self::start(params, scheme, backend, tiling, None, inputs.kept())
    }

    /// The block of `comm`'s rank of the case's domain (see [`part`]), on the CPU for every
    /// scheme or on the rank's GPU (a block of whole rows); not blocked in time. The file
    /// arrays come from `inputs`.
    pub fn on_ranks(
        params: &ShallowWaterParams,
        comm: Arc<dyn Comm>,
        device: &Device,
        mut inputs: Inputs,
    ) -> Result<Self> {
        let sources = init::Sources::new(params, &mut inputs)?;
        let ranks = part::Ranks::new(params.physics(), comm);
        let halo = || Some(part::Halo::new(&ranks, fv::CELLS));
        let halos = || Some(fd_boundary::Halos::new(&ranks));
        let (p, initial, rk) = (&ranks.block, sources.initial(), params.time_integration);
        let (scheme, on): (Box<dyn Scheme<T>>, _) = match (device, params.scheme) {
            (Device::Cuda(gpu, opts), s) => {
                (cuda::scheme(s, p, &initial, rk, gpu, opts, Some(&ranks))?, format!("cuda ({})", gpu.name))
            }
            (Device::Cpu(_), SchemeName::Fbl) => {
                (Box::new(fbl::Fbl::<T>::with_halo(p, &initial, halos())), "cpu".into())
            }
            (Device::Cpu(_), SchemeName::Ctcs) => {
                (Box::new(ctcs::Ctcs::<T>::with_halo(p, &initial, halos())), "cpu".into())
            }
            (Device::Cpu(_), SchemeName::Cdklm16) => {
                (Box::new(cdklm16::Cdklm16::<T>::with_halo(p, &initial, rk, cdklm16::Op, halo())), "cpu".into())
            }
            (Device::Cpu(_), SchemeName::Kp07) => {
                (Box::new(kp07::Kp07::<T>::with_halo(p, &initial, rk, kp07::Op, halo())), "cpu".into())
            }
        };
        let backend = crate::parallel::backend(&on, ranks.comm.as_ref());
        Self::start(params, scheme, backend, None, Some(ranks), inputs.kept())
    }

    /// The solver of `scheme` at its initial state, checked: positive depth everywhere, a
    /// stable time step (on every rank, even where one fails, for the collective reductions).
    fn start(
        params: &ShallowWaterParams,
        scheme: Box<dyn Scheme<T>>,
        backend: String,
        tiling: Option<Tiling>,
        ranks: Option<part::Ranks>,
        inputs: Vec<StateArray>,
    ) -> Result<Self> {
        let grid = Grid { n: [params.nx, params.ny], origin: [0.0, 0.0], spacing: [params.dx, params.dy()] };
        let mut sw = ShallowWater {
            params: params.clone(),
            grid,
            scheme,
            dt: 0.0,
            last_dt: None,
            initial_mass: 0.0,
            initial_volume: 0.0,
            inputs,
            step: 0,
            time: 0.0,
            backend,
            tiling,
            ranks,
        };
        let depth = sw.check_depth();
        let range = sw.check_range();
        let dt = sw.next_dt();
        let t = sw.totals();
        depth?;
        range?;
        sw.dt = dt?;
        sw.check_rotation()?;
        (sw.initial_mass, sw.initial_volume) = (t.mass, t.volume);
        Ok(sw)
    }

    /// Refuse a Coriolis parameter too large for the first step: the rotation terms are
    /// explicit in every scheme, and unstable where `|f| dt` exceeds 1 (the leapfrog's limit;
    /// Heun's method already grows there by 12 % a step).
    fn check_rotation(&self) -> Result<()> {
        let p = self.params.physics();
        let north = p.f0 + p.beta * p.ny as f64 * p.dy;
        let f = p.f0.abs().max(north.abs());
        let fdt = f * self.dt;
        if fdt > 1.0 {
            return input(format!(
                "solver.shallow_water.coriolis: |f| up to {f:e} 1/s with the time step {:e} s gives |f| dt = {fdt:.3e}; \
                 the explicit rotation terms need |f| dt <= 1 (the Earth's f is about 1e-4 1/s)",
                self.dt
            ));
        }
        Ok(())
    }

    /// The physics of the cells the scheme holds: the whole domain's, or a rank's block's.
    fn held(&self) -> Physics {
        self.ranks.as_ref().map_or_else(|| self.params.physics(), |r| r.block)
    }

    pub fn params(&self) -> &ShallowWaterParams {
        &self.params
    }

    /// The scheme's arrays (ghosts included), by name: `eta`, `hu`, `hv`, and for CTCS the
    /// previous level `eta_prev`, `hu_prev`, `hv_prev`.
    pub fn array(&self, name: &str) -> Option<grid::Field<T>> {
        self.scheme.arrays().into_iter().find(|(n, ..)| *n == name).map(|(_, _, f)| f)
    }

    /// Interior cell values (η, hu, hv, H).
    pub fn cells(&self) -> Cells<T> {
        self.scheme.cells()
    }

    /// Refuse a state whose total depth `H + η` is not positive somewhere.
    fn check_depth(&self) -> Result<()> {
        let c = self.scheme.cells();
        let p = self.held();
        let ([ox, oy], nx) = (p.offset(), p.nx);
        let dry = c.depth.iter().zip(&c.eta).position(|(&h, &e)| !(h.f64() + e.f64() > 0.0));
        if let Some(k) = dry {
            let total = c.depth[k].f64() + c.eta[k].f64();
            let why = if total.is_finite() { "dry cells are not supported" } else { "a value of the state is not finite" };
            return input(format!(
                "solver.shallow_water: the total depth H + eta of the {} state is {total} (H = {}) at row {}, column \
                 {} of the cells; {why} (check bathymetry and initial, and their files)",
                if self.step == 0 { "initial" } else { "restored" },
                c.depth[k].f64(),
                oy + k / nx,
                ox + k % nx
            ));
        }
        Ok(())
    }

    /// Refuse an initial state whose fluxes overflow the run's precision. The largest term the
    /// schemes form is about `s (½ g h² + h |u|²)`, a wave speed `s = √(g h) + |u|` times a
    /// momentum flux (the central-upwind numerators); `g H` alone, which the stable step
    /// reads, overflows much later (f32: the fluxes near a depth of 1e15 m, `g H` near 3e37 m).
    /// The bound keeps a factor 1e3 of headroom for the flow to strengthen (a depth 16 times
    /// the largest, at rest); a run that outgrows it still stops at the non-finite guard.
    /// Collective under MPI.
    fn check_range(&self) -> Result<()> {
        let c = self.scheme.cells();
        let g = self.params.g;
        let term = |k: usize| {
            let h = c.depth[k].f64() + c.eta[k].f64();
            let m = c.hu[k].f64().hypot(c.hv[k].f64());
            // Written so that an infinite depth gives an infinite term, not NaN.
            ((g * h).sqrt() + m / h) * (0.5 * g * h * h + m * m / h)
        };
        let local = (0..c.eta.len()).into_par_iter().map(term).reduce(|| 0.0, |a: f64, b| a.max(b));
        let deepest = c.depth.par_iter().zip(c.eta.par_iter()).map(|(b, e)| b.f64() + e.f64()).reduce(|| 0.0, f64::max);
        let [largest, deepest] = [local, deepest].map(|v| self.ranks.as_ref().map_or(v, |r| r.max(v)));
        let bound = 1e-3 * T::max_value().f64();
        if largest <= bound {
            return Ok(());
        }
        let precision = T::PRECISION.name();
        // At rest, ½ g^1.5 h^2.5 = bound.
        let held = (2.0 * bound / g.powf(1.5)).powf(0.4);
        let f32_way_out = if T::PRECISION == Precision::F32 { "; or use precision: f64" } else { "" };
        input(format!(
            "solver.shallow_water: the initial state's fluxes reach {largest:.1e} (the depth H + eta up to \
             {deepest:.3e} m), too close to the largest {precision} value for the run to stay finite ({precision} \
             holds depths up to about {held:.0e} m at rest): check bathymetry and initial, and their \
             files{f32_way_out}"
        ))
    }

    /// The next step: the fixed `dt` (refused above the stable step of the current state) or
    /// `courant` times the stable step.
    fn next_dt(&self) -> Result<f64> {
        let limit = self.scheme.dt_limit();
        let limit = self.ranks.as_ref().map_or(limit, |r| r.limit(limit));
        if self.step == 0 && !(limit.is_finite() && limit > 0.0) {
            // Values the precision cannot hold (a depth of 1e38 in f32 makes g H infinite).
            let f32_way_out = if T::PRECISION == Precision::F32 { ", or use precision: f64" } else { "" };
            let precision = T::PRECISION.name();
            // No limit at all: the waves' speed over the cell size underflows.
            let why = if limit == f64::INFINITY {
                format!("the cells are too large for {precision} arithmetic; check dx and dy")
            } else {
                format!("its depth or transports overflow {precision} arithmetic; check bathymetry and initial (and their files)")
            };
            return input(format!(
                "solver.shallow_water: the initial state has no stable time step (limit {limit:e}): {why}{f32_way_out}"
            ));
        }
        match (self.params.dt, self.params.courant) {
            (Some(dt), _) if self.step == 0 && !(dt <= limit) => input(format!(
                "solver.shallow_water.dt: {dt} s exceeds the stable time step {limit:.6e} s of scheme {} for the \
                 initial state",
                self.params.scheme.name()
            )),
            (Some(dt), _) => Ok(dt),
            (None, Some(c)) if limit.is_finite() && limit > 0.0 => Ok(c * limit),
            (None, _) => Err(crate::error::SimError::Run(format!(
                "shallow_water: no stable time step at step {} (limit {limit})",
                self.step
            ))),
        }
    }

    /// Mass, energy and largest speed over the interior (under MPI the ranks' totals
    /// combined, equal to the serial ones to round-off).
    /// The least water depth H + η of the domain (m); collective under MPI. (The minimum is
    /// exact, so any order gives it.)
    fn min_depth(&self) -> f64 {
        let c = self.scheme.cells();
        let held = (c.depth.par_iter().zip(c.eta.par_iter())).map(|(b, e)| b.f64() + e.f64()).reduce(|| f64::INFINITY, f64::min);
        match &self.ranks {
            Some(r) => -r.max(-held),
            None => held,
        }
    }

    fn totals(&self) -> Totals {
        let c = self.scheme.cells();
        let p = self.held();
        let nx = p.nx;
        let g = self.params.g;
        // Per-row partial sums, combined in row order: the same for any thread count.
        let rows: Vec<Totals> = (0..p.ny)
            .into_par_iter()
            .map(|j| {
                let mut t = Totals::default();
                for k in j * nx..(j + 1) * nx {
                    let (eta, hu, hv) = (c.eta[k].f64(), c.hu[k].f64(), c.hv[k].f64());
                    let h = c.depth[k].f64() + eta;
                    t.mass += eta;
                    t.volume += eta.abs();
                    t.energy += 0.5 * g * eta * eta + 0.5 * (hu * hu + hv * hv) / h;
                    t.max_speed = t.max_speed.max(hu.hypot(hv) / h);
                }
                t
            })
            .collect();
        let area = self.grid.spacing[0] * self.grid.spacing[1];
        let mut total = rows.iter().fold(Totals::default(), |a, r| Totals {
            mass: a.mass + r.mass,
            volume: a.volume + r.volume,
            energy: a.energy + r.energy,
            max_speed: a.max_speed.max(r.max_speed),
        });
        if let Some(r) = &self.ranks {
            total = Totals {
                mass: r.sum(total.mass),
                volume: r.sum(total.volume),
                energy: r.sum(total.energy),
                max_speed: r.max(total.max_speed),
            };
        }
        total.mass *= area;
        total.volume *= area;
        total.energy *= area;
        total
    }
}

#[derive(Clone, Copy, Default)]
struct Totals {
    /// Σ η dx dy (m³).
    mass: f64,
    /// Σ |η| dx dy: the scale of mass changes.
    volume: f64,
    /// Σ (g η² + (hu² + hv²) / h) / 2 dx dy (m⁵/s²; energy per unit density).
    energy: f64,
    /// max |(hu, hv)| / h (m/s).
    max_speed: f64,
}

impl<T: Real> Solver for ShallowWater<T> {
    fn kind(&self) -> &'static str {
        "shallow_water"
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
    fn dt_is_fixed(&self) -> bool {
        self.params.courant.is_none()
    }
    fn propose_dt(&mut self) -> Result<f64> {
        if self.params.courant.is_some() {
            let dt = self.next_dt();
            // A device failure of the reduction says more than the NaN limit it leaves.
            self.scheme.failure()?;
            self.dt = dt?;
        }
        Ok(self.dt)
    }

    fn advance(&mut self, dt: f64) -> Result<()> {
        let start = std::time::Instant::now();
        self.scheme.step(dt, self.step == 0);
        if let Some(r) = &mut self.ranks {
            r.stepping += start.elapsed();
        }
        self.scheme.failure()?;
        self.step += 1;
        self.time += dt;
        self.last_dt = Some(dt);
        Ok(())
    }

    fn steps_per_call(&self) -> u64 {
        self.tiling.as_ref().map_or(1, |t| t.steps() as u64)
    }

    fn landed_steps_per_call(&self) -> u64 {
        if self.params.courant.is_some() && self.scheme.lands_steps() { LANDED_STEPS } else { 0 }
    }

    /// On the device: no more steps than reach the next instant at the latest step's length
    /// (and one more), so that few skipped steps are queued.
    fn advance_landed(&mut self, landing: &Landing, most: u64) -> Result<()> {
        let courant = self.params.courant.expect("landed steps are adaptive");
        let ahead = ((landing.next_instant(self.time) - self.time) / self.dt).ceil();
        let n = if ahead < most as f64 { (ahead as u64 + 1).clamp(1, most) } else { most };
        let r = self.scheme.steps_landed(courant, landing, self.time, n)?;
        self.step += r.steps;
        self.time = r.time;
        if r.steps > 0 {
            self.last_dt = Some(r.dt);
            self.dt = r.proposal;
        }
        if r.unstable {
            return Err(crate::error::SimError::Run(format!(
                "shallow_water: no stable time step at step {} (the CFL limit of the state is not a positive number)",
                self.step
            )));
        }
        Ok(())
    }

    /// The run's first step (which starts CTCS's leapfrog) alone, the others in blocked sweeps.
    fn advance_steps(&mut self, dt: f64, n: u64) -> Result<()> {
        let mut left = n;
        while left > 0 {
            let Some(tiling) = self.tiling.as_ref().filter(|_| self.step > 0) else {
                self.advance(dt)?;
                left -= 1;
                continue;
            };
            let run = left.min(tiling.steps() as u64);
            self.scheme.steps_blocked(dt, tiling, run as usize);
            self.scheme.failure()?;
            for _ in 0..run {
                self.step += 1;
                self.time += dt;
            }
            self.last_dt = Some(dt);
            left -= run;
        }
        Ok(())
    }

    fn tiling(&self) -> Option<&Tiling> {
        self.tiling.as_ref()
    }

    fn mesh(&self) -> Mesh {
        Mesh::Cells(self.grid)
    }

    /// A device scheme's queued work finishes (a failed launch surfaces here) and its state
    /// comes to the host copy that every host read uses.
    fn sync(&mut self) -> Result<()> {
        self.scheme.wait()?;
        self.scheme.fetch()
    }

    fn wait(&mut self) -> Result<()> {
        self.scheme.wait()
    }

    fn backend(&self) -> String {
        self.backend.clone()
    }
    fn launch_block(&self) -> Option<[u32; 2]> {
        self.scheme.launch_block()
    }

    fn units(&self) -> &'static str {
        "eta: surface elevation above the equilibrium level (m); hu, hv: volume transport along x and y \
         (m^2/s); velocity: (hu, hv) / depth (m/s); depth: total water depth H + eta (m); bathymetry: \
         equilibrium depth H (m); speed: |velocity| (m/s); vorticity: dv/dx - du/dy (1/s)"
    }

    fn output_fields(&self) -> Vec<OutField> {
        let c = self.scheme.cells();
        let depth: Vec<T> = c.depth.iter().zip(&c.eta).map(|(&h, &e)| h + e).collect();
        let u: Vec<T> = c.hu.iter().zip(&depth).map(|(&q, &h)| q / h).collect();
        let v: Vec<T> = c.hv.iter().zip(&depth).map(|(&q, &h)| q / h).collect();
        let speed: Vec<T> = u.iter().zip(&v).map(|(&a, &b)| a.hypot(b)).collect();
        let velocity: Vec<T> = u.iter().zip(&v).flat_map(|(&a, &b)| [a, b, T::zero()]).collect();
        let vorticity = match &self.ranks {
            Some(r) => {
                let ((u, block), (v, _)) = (r.with_ring(&u), r.with_ring(&v));
                vorticity(&u, &v, &block, self.grid.n, self.grid.spacing)
            }
            None => vorticity(&u, &v, &Block::whole(self.grid.n), self.grid.n, self.grid.spacing),
        };
        let cell = |name, values: Vec<T>| OutField::new(name, 1, Location::Cell, T::wrap(values));
        vec![
            cell("eta", c.eta),
            cell("hu", c.hu),
            cell("hv", c.hv),
            OutField::new("velocity", 3, Location::Cell, T::wrap(velocity)),
            cell("depth", depth),
            cell("bathymetry", c.depth),
            cell("speed", speed),
            cell("vorticity", vorticity),
        ]
    }

    fn piece(&self) -> Option<Piece> {
        self.ranks.as_ref().map(|r| r.piece(&self.grid))
    }

    /// The scheme's arrays, ghosts included; under MPI gathered on rank 0 in the serial layout
    /// (nothing on the others).
    fn state(&self) -> Vec<StateArray> {
        let mesh = self.mesh();
        let arrays = self.scheme.arrays().into_iter();
        let whole: Vec<_> = match &self.ranks {
            None => arrays.map(|(name, place, f)| Some((name, place, f.v.to_vec()))).collect(),
            Some(r) => arrays.map(|(name, place, f)| r.gather(place, &f.v).map(|v| (name, place, v))).collect(),
        };
        let fields = whole.into_iter().flatten().map(|(name, place, v)| StateArray::field(name, place, &mesh, T::wrap(v)));
        let inputs = self.inputs.iter().filter(|_| self.ranks.as_ref().is_none_or(|r| r.comm.rank() == 0)).cloned();
        fields.chain(inputs).collect()
    }

    /// The serial arrays' names and shapes, on every rank (`state` gathers on rank 0 alone).
    fn state_layout(&self) -> Vec<ArraySpec> {
        let mesh = self.mesh();
        let arrays = self.scheme.arrays().into_iter();
        let fields = arrays.map(|(name, place, _)| ArraySpec::field(name, place, &mesh, T::PRECISION));
        fields.chain(self.inputs.iter().map(StateArray::spec)).collect()
    }

    /// From the serial arrays (under MPI every rank cuts its block out of them).
    fn restore(&mut self, step: u64, time: f64, mut arrays: Vec<StateArray>) -> Result<()> {
        let mesh = self.mesh();
        for (name, place, field) in self.scheme.arrays_mut() {
            let whole = take_array::<T>(&mut arrays, name, &shape_of(place, &mesh))?;
            match &self.ranks {
                Some(r) => field.v.copy_from_slice(&r.cut(place, &whole)),
                None => field.v.copy_from_slice(&whole),
            }
        }
        self.scheme.restored()?;
        self.step = step;
        self.time = time;
        let depth = self.check_depth();
        let dt = self.params.courant.map(|_| self.next_dt());
        depth?;
        if let Some(dt) = dt {
            self.dt = dt?;
        }
        Ok(())
    }

    fn find_non_finite(&self) -> Option<NonFinite> {
        let c = self.scheme.cells();
        let nx = self.grid.n[0];
        let first = |name, values: &[T]| match &self.ranks {
            Some(r) => r.first_non_finite(name, values),
            None => first_non_finite(name, values, nx),
        };
        first("eta", &c.eta).or_else(|| first("hu", &c.hu)).or_else(|| first("hv", &c.hv))
    }

    fn invalid_state(&self) -> Option<String> {
        let depth = self.min_depth();
        (depth <= 0.0).then(|| {
            format!("the water depth H + eta fell to {depth:.3e} m: a dry cell, which these schemes do not model")
        })
    }

    fn failure_hint(&self) -> Option<&'static str> {
        let p = &self.params;
        (p.scheme == SchemeName::Ctcs && p.gpu_ocean_compat).then_some(
            "With CTCS, gpu_ocean_compat: true (GPU Ocean's advection sign) also adds energy where the flow \
             is nonlinear, which a smaller time step does not cure; gpu_ocean_compat: false does",
        )
    }

    fn diagnostics(&self) -> Vec<(&'static str, Option<f64>)> {
        let t = self.totals();
        vec![
            ("mass", Some(t.mass)),
            ("energy", Some(t.energy)),
            ("max_speed", Some(t.max_speed)),
            ("dt", self.last_dt),
        ]
    }

    fn report(&self) -> serde_json::Map<String, serde_json::Value> {
        let t = self.totals();
        let mut m = serde_json::Map::new();
        m.insert("scheme".into(), self.params.scheme.name().into());
        if let Some(r) = &self.ranks {
            r.halo_times().report(r.comm.as_ref(), &mut m);
        }
        m.insert("reference".into(), "conservation of mass".into());
        m.insert("initial_mass".into(), self.initial_mass.into());
        m.insert("mass".into(), t.mass.into());
        m.insert("mass_change".into(), (t.mass - self.initial_mass).into());
        if self.initial_volume > 0.0 {
            m.insert("mass_change_relative".into(), ((t.mass - self.initial_mass) / self.initial_volume).into());
        }
        m.insert("energy".into(), t.energy.into());
        m.insert("max_speed".into(), t.max_speed.into());
        if let Some(tiling) = &self.tiling {
            m.insert("temporal_block".into(), tiling.to_string().into());
        }
        m
    }

    fn bytes_per_step(&self) -> f64 {
        let stages = self.params.time_integration.stages().len();
        self.params.scheme.floats_per_cell(stages) * self.grid.nodes() as f64 * T::PRECISION.bytes() as f64
    }

    fn flops_per_step(&self) -> Option<f64> {
        let stages = self.params.time_integration.stages().len() as f64;
        self.params.scheme.flops_per_cell_stage().map(|f| f * stages * self.grid.nodes() as f64)
    }
}

/// `dv/dx - du/dy` at the cells `block` owns, `u` and `v` stored on it: central differences,
/// one-sided at the edges of the domain of `n` cells.
fn vorticity<T: Real>(u: &[T], v: &[T], block: &Block, n: [usize; 2], spacing: [f64; 2]) -> Vec<T> {
    let [xs, ys] = block.owned.clone();
    let sx = block.stored[0];
    // Stored index of cell (x, y) of the domain.
    let at = |x: usize, y: usize| (y as isize - block.first[1]) as usize * sx + (x as isize - block.first[0]) as usize;
    let diff = |f: &dyn Fn(usize) -> T, k: usize, n: usize, h: f64| -> T {
        let (lo, hi) = (k.saturating_sub(1), (k + 1).min(n - 1));
        (f(hi) - f(lo)) / T::of((hi - lo) as f64 * h)
    };
    let mut w = vec![T::zero(); xs.len() * ys.len()];
    w.par_chunks_mut(xs.len()).zip(ys).for_each(|(row, y)| {
        for (out, x) in row.iter_mut().zip(xs.clone()) {
            let dvdx = diff(&|k| v[at(k, y)], x, n[0], spacing[0]);
            let dudy = diff(&|k| u[at(x, k)], y, n[1], spacing[1]);
            *out = dvdx - dudy;
        }
    });
    w
}
