//! Meshfree q-LSKUM solver of the 2D Euler equations on point clouds (Mamidi et al. 2022):
//! kinetic split fluxes, least-squares q-derivatives with inner iterations, Venkatakrishnan
//! limiter, local time stepping with SSP(4,3) Runge-Kutta or forward Euler.
//!
//! One solver step is one pseudo-time iteration ([`Clock::Iterations`]): the local time
//! steps differ from point to point, so there is no global physical time, and
//! `time.end_step` of the case is the number of iterations.
//!
//! * [`cloud`]: the point cloud, its neighbour lists and split stencils (CSR).
//! * [`kernels`]: per-point numerics (q-variables, split/quadrant fluxes, least squares,
//!   limiter, conserved/outer states, time step, C_p).
//! * [`scheme`]: one iteration over the cloud (rayon over points, no allocation).
//! * [`cuda`]: the same iteration on a CUDA device (`kernels/lskum.cu`), bitwise equal under
//!   the CPU emulation of CUDA.
//! * [`crate::mesh`]: cloud files ([`crate::mesh::cloud_file`]) and the `sim mesh naca0012`
//!   generators.
//!
//! Run outputs: `<name>_<step>.vtu` point clouds (Mach, velocity, rho, p, Cp, point_type) with
//! triangles over the points ([`surface`]) as cells,
//! `history.csv` (residue = log10 of the density residual relative to iteration 2, cl, cd, cm),
//! `wall_cp.csv` (point, x, y, cp, minus_cp of the wall points), and in `summary.json` under
//! `errors` the final coefficients, residue and RDP (`rdp_s` = iteration seconds / (iterations
//! x points)). Checkpoints hold rho, u, v, p per point, the residual reference and the cloud
//! itself (so a checkpoint alone continues a run).
//!
//! Scaling: free-stream density 1, free-stream pressure 1/gamma, so the free-stream speed of
//! sound is 1 and velocities are in units of it (the free-stream speed is the Mach number).

pub mod cloud;
pub mod cuda;
pub mod kernels;
pub mod renumber;
pub mod scheme;
pub mod surface;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Result, input};
use crate::mesh::cloud_file;
use crate::mesh::naca::Closure;
use crate::mesh::quadtree::quadtree_points;
use crate::numerics::Scheme;

pub use cloud::Cloud;
pub use cloud_file::CloudFormat;
pub use renumber::Renumber;
pub use scheme::ForcePoints;
use kernels::{Reconstruct, V4};
use scheme::{Settings, State};

/// Time integration of the pseudo-time iterations (the names of [`Scheme`] are aliases).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeScheme {
    /// Four-stage third-order strong-stability-preserving Runge-Kutta.
    #[default]
    #[serde(alias = "ssp43")]
    Ssprk43,
    /// Forward Euler.
    #[serde(alias = "forward_euler")]
    First,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Limiter {
    #[default]
    Venkat,
    Minmax,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Accuracy {
    /// Limited reconstruction of q at both ends of every edge.
    #[default]
    Second,
    /// No reconstruction.
    First,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ForceSet {
    /// Wall points only.
    #[default]
    Wall,
    /// Every point with flag_2 > 0 (the reference F-ser convention).
    Shape,
}

/// `solver: {lskum: ...}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LskumParams {
    /// Point-cloud file (a relative path is taken from the case file's folder).
    pub cloud: PathBuf,
    #[serde(default)]
    pub format: CloudFormat,
    /// Free-stream Mach number.
    pub mach: f64,
    /// Angle of attack, degrees.
    #[serde(default)]
    pub aoa: f64,
    #[serde(default = "default_cfl")]
    pub cfl: f64,
    /// Inner iterations of the second-order q-derivatives (0 = first-order derivatives).
    #[serde(default = "default_inner")]
    pub inner_iterations: u32,
    /// Venkatakrishnan limiter constant K.
    #[serde(default = "default_vl")]
    pub vl_const: f64,
    /// Least-squares weight exponent (w = d^power).
    #[serde(default)]
    pub power: f64,
    #[serde(default)]
    pub tscheme: TimeScheme,
    #[serde(default)]
    pub limiter: Limiter,
    #[serde(default)]
    pub accuracy: Accuracy,
    /// Stop once the residue (log10 of the residual relative to iteration 2) is at or below
    /// `-residue_drop`.
    #[serde(default)]
    pub residue_drop: Option<f64>,
    /// Points of the force integration.
    #[serde(default)]
    pub forces: ForceSet,
    /// The order the solver holds the points in (outputs keep the file's order).
    #[serde(default)]
    pub renumber: Renumber,
}

fn default_cfl() -> f64 {
    0.5
}
fn default_inner() -> u32 {
    3
}
fn default_vl() -> f64 {
    50.0
}

impl LskumParams {
    /// Parameters of the case with every default and the given cloud.
    pub fn with_cloud(cloud: impl Into<PathBuf>, format: CloudFormat, mach: f64, aoa: f64) -> Self {
        LskumParams {
            cloud: cloud.into(),
            format,
            mach,
            aoa,
            cfl: default_cfl(),
            inner_iterations: default_inner(),
            vl_const: default_vl(),
            power: 0.0,
            tscheme: TimeScheme::Ssprk43,
            limiter: Limiter::Venkat,
            accuracy: Accuracy::Second,
            residue_drop: None,
            forces: ForceSet::Wall,
            renumber: Renumber::default(),
        }
    }


    fn settings(&self) -> Settings {
        Settings {
            cfl: self.cfl,
            inner_iterations: self.inner_iterations,
            vl_const: self.vl_const,
            power: self.power,
            reconstruct: match (self.accuracy, self.limiter) {
                (Accuracy::First, _) => Reconstruct::None,
                (Accuracy::Second, Limiter::Venkat) => Reconstruct::Venkat,
                (Accuracy::Second, Limiter::Minmax) => Reconstruct::MinMax,
            },
            scheme: match self.tscheme {
                TimeScheme::Ssprk43 => Scheme::Ssp43,
                TimeScheme::First => Scheme::ForwardEuler,
            },
            winf: kernels::free_stream(self.mach, self.aoa),
            math: crate::cpu::Math::Exact,
        }
    }
}

/// The q-LSKUM solver on one cloud.
pub struct Lskum {
    pub params: LskumParams,
    /// The cloud in the solver's order (`params.renumber`); [`Lskum::file_cloud`] gives the
    /// file's.
    pub cloud: Cloud,
    /// Triangles over the cloud for the `.vtu` output, made at the first output.
    surface: std::sync::OnceLock<Option<Vec<[u32; 3]>>>,
    set: Settings,
    st: State,
    step: u64,
    /// Residual norm of iteration 2 (reference of the residue).
    res_ref: f64,
    /// Residual norm of the last iteration.
    res_last: f64,
    /// log10(res_last / res_ref), 0 for the first two iterations.
    residue: f64,
    /// Seconds spent in the iterations of this process, and their count (for RDP; a restart
    /// starts both afresh).
    pub wall_seconds: f64,
    timed_iterations: u64,
    /// Seconds per phase of those iterations (on a device: event times, once asked for with
    /// [`Lskum::time_phases`]).
    phases: scheme::Timers,
    /// The state on a CUDA device, which then holds the current state: `st.prim` is its host
    /// copy, brought up to date by [`Solver::sync`].
    dev: Option<cuda::LskumCuda>,
    backend: String,
}

impl Lskum {
    /// Load the cloud of `p` and start from the free stream.
    pub fn new(p: &LskumParams) -> Result<Self> {
        let cloud = cloud_file::load(&p.cloud, p.format)?;
        Ok(Self::with_cloud(p, cloud))
    }

    /// Start from the free stream on `cloud` (in file order).
    pub fn with_cloud(p: &LskumParams, cloud: Cloud) -> Self {
        let cloud = match p.renumber {
            Renumber::Hilbert => cloud.renumbered(&renumber::hilbert(&cloud)),
            Renumber::Rcm => cloud.renumbered(&renumber::rcm(&cloud)),
            Renumber::None => cloud,
        };
        let set = p.settings();
        let st = State::new(&cloud, &set);
        Lskum {
            params: p.clone(),
            cloud,
            surface: std::sync::OnceLock::new(),
            set,
            st,
            step: 0,
            res_ref: 0.0,
            res_last: 0.0,
            residue: 0.0,
            wall_seconds: 0.0,
            timed_iterations: 0,
            phases: Default::default(),
            dev: None,
            backend: "cpu".into(),
        }
    }

    /// The solver moved to `device` (CUDA: the cloud and the state uploaded).
    pub fn on(mut self, device: &Device) -> Result<Self> {
        if let Device::Cpu(o) = device {
            self.set.math = o.math;
        }
        if let Device::Cuda(gpu, o) = device {
            self.dev = Some(cuda::LskumCuda::new(gpu, o, &self.cloud, &self.st.prim, &self.set)?);
            // The host keeps the state's copy only, not the CPU scheme's scratch.
            self.st = State { prim: std::mem::take(&mut self.st.prim), ..State::new(&Cloud::default(), &self.set) };
            let scratch = match o.variant {
                crate::cuda::Variant::L2 => "registers",
                crate::cuda::Variant::Shared => "shared",
            };
            let threads = self.dev.as_ref().map_or(0, |d| d.block());
            self.backend = format!("cuda ({}, {} flux, {scratch} scratch, {threads}x1)", gpu.name, o.flux.name());
        }
        Ok(self)
    }

    /// One pseudo-time iteration (on the CPU; see [`Lskum::try_iterate`] for a device, whose
    /// failures this turns into a panic).
    pub fn iterate(&mut self) {
        if let Err(e) = self.try_iterate() {
            panic!("{e}");
        }
    }

    /// One pseudo-time iteration; on a device, the host copy of the state is then stale until
    /// [`Solver::sync`].
    pub fn try_iterate(&mut self) -> Result<()> {
        let t0 = std::time::Instant::now();
        let res = match &mut self.dev {
            None => scheme::iterate_timed(&self.cloud, &mut self.st, &self.set, &mut self.phases),
            Some(d) => scheme::norm_of_partials(d.iterate(self.set.scheme, &mut self.phases)?, self.cloud.len()),
        };
        self.step += 1;
        self.res_last = res;
        if self.step <= 2 {
            self.residue = 0.0;
            if self.step == 2 {
                self.res_ref = res;
            }
        } else {
            self.residue = (res / self.res_ref).log10();
        }
        self.wall_seconds += t0.elapsed().as_secs_f64();
        self.timed_iterations += 1;
        Ok(())
    }

    /// Time the phases of the iterations on a device too (CUDA events; the CPU times them
    /// always).
    pub fn time_phases(&mut self) {
        if let Some(d) = &mut self.dev {
            d.time_phases();
        }
    }

    pub fn iterations(&self) -> u64 {
        self.step
    }
    /// log10 of the residual relative to iteration 2 (0 for iterations 1 and 2).
    pub fn residue(&self) -> f64 {
        self.residue
    }
    pub fn residual_norm(&self) -> f64 {
        self.res_last
    }
    /// Primitive state (rho, u, v, p) per point, in file order.
    pub fn prim(&self) -> Vec<V4> {
        self.cloud.to_file_order(&self.st.prim)
    }

    /// The cloud in file order.
    pub fn file_cloud(&self) -> Cloud {
        self.cloud.in_file_order()
    }
    pub fn free_stream(&self) -> V4 {
        self.set.winf
    }

    /// (C_l, C_d, C_m) over the given points.
    pub fn coefficients_of(&self, which: ForcePoints) -> (f64, f64, f64) {
        scheme::coefficients(&self.cloud, &self.st.prim, self.params.mach, self.params.aoa, which)
    }

    /// (C_l, C_d, C_m) with the configured point set.
    pub fn coefficients(&self) -> (f64, f64, f64) {
        self.coefficients_of(match self.params.forces {
            ForceSet::Wall => ForcePoints::Wall,
            ForceSet::Shape => ForcePoints::Shape,
        })
    }

    /// Standard pressure coefficient at point i.
    pub fn cp(&self, i: usize) -> f64 {
        kernels::cp(self.st.prim[i][3], 1.0 / kernels::GAMMA, 1.0, self.params.mach)
    }

    /// Wall points (flag_1 = 0) in file order: (position in the file, index in the solver).
    pub fn wall_points(&self) -> Vec<(usize, usize)> {
        self.cloud.file_order().enumerate().filter(|&(_, i)| self.cloud.flag[i] == cloud::WALL).collect()
    }
}

// ---- driver interface ----

use crate::real::{Precision, Values};
use crate::solver::{Clock, Location, Mesh, NonFinite, OutField, Place, Solver, StateArray, take_array};
use crate::bench::BenchOptions;
use crate::solvers::{Device, Registered, SolverSpec};

impl SolverSpec for LskumParams {
    fn input_paths(&mut self) -> Vec<&mut PathBuf> {
        vec![&mut self.cloud]
    }
    /// From the cloud the checkpoint holds, not the file (which may have moved or changed).
    fn restart_inputs(&self) -> &'static [&'static str] {
        &cloud::ARRAYS
    }
    fn build_restart(
        &self,
        precision: Precision,
        device: &Device,
        checkpoint: &std::path::Path,
        arrays: &[StateArray],
    ) -> Result<Box<dyn Solver>> {
        match stored_cloud(precision, checkpoint, arrays)? {
            Some(cloud) => Ok(Box::new(Lskum::with_cloud(self, cloud).on(device)?)),
            None => self.build(precision, device),
        }
    }
    fn describe_restart(&self, precision: Precision, checkpoint: &std::path::Path, arrays: &[StateArray]) -> Result<Vec<String>> {
        match stored_cloud(precision, checkpoint, arrays)? {
            Some(cloud) => Ok(describe(self, &cloud)),
            None => self.describe(precision),
        }
    }
    fn validate(&self) -> Result<()> {
        let key = "solver.lskum";
        // Below 1e-6 the free stream's dynamic pressure, ½ γ p M², is under 1e-12 of p: lost in
        // the round-off of f64 pressures, and C_p (normalised by it) with it.
        if !(self.mach.is_finite() && (MIN_MACH..10.0).contains(&self.mach)) {
            let why = if self.mach < MIN_MACH {
                ": below that the free stream's dynamic pressure is lost in the round-off of the pressure"
            } else {
                ""
            };
            return input(format!("{key}.mach: {} must be in [{MIN_MACH:e}, 10){why}", self.mach));
        }
        if !(self.aoa.is_finite() && self.aoa.abs() <= 90.0) {
            return input(format!("{key}.aoa: {} must be within [-90, 90] degrees", self.aoa));
        }
        if !(self.cfl.is_finite() && self.cfl > 0.0 && self.cfl <= 2.0) {
            return input(format!("{key}.cfl: {} must be in (0, 2]", self.cfl));
        }
        if self.inner_iterations > 100 {
            return input(format!("{key}.inner_iterations: {} is more than 100", self.inner_iterations));
        }
        if !(self.vl_const.is_finite() && self.vl_const > 0.0) {
            return input(format!("{key}.vl_const: {} must be a positive number", self.vl_const));
        }
        if !(self.power.is_finite() && self.power.abs() <= 10.0) {
            return input(format!("{key}.power: {} must be within [-10, 10]", self.power));
        }
        if let Some(d) = self.residue_drop
            && !(d.is_finite() && d > 0.0)
        {
            return input(format!("{key}.residue_drop: {d} must be a positive number of decades"));
        }
        if self.cloud.as_os_str().is_empty() {
            return input(format!("{key}.cloud: give the point-cloud file"));
        }
        Ok(())
    }
    fn clock(&self) -> Clock {
        Clock::Iterations
    }
    fn has_cuda(&self) -> bool {
        true
    }
    fn memory_estimate(&self, _precision: Precision) -> usize {
        memory_estimate(self)
    }
    fn nominal_dt(&self) -> Option<f64> {
        None
    }
    fn describe(&self, precision: Precision) -> Result<Vec<String>> {
        f64_only(precision)?;
        Ok(describe(self, &cloud_file::load(&self.cloud, self.format)?))
    }
    fn build(&self, precision: Precision, device: &Device) -> Result<Box<dyn Solver>> {
        f64_only(precision)?;
        Ok(Box::new(Lskum::new(self)?.on(device)?))
    }
}

/// The smallest free-stream Mach number a case may ask for (see its `validate`).
const MIN_MACH: f64 = 1e-6;

/// Refuse f32: the solver runs in f64 only.
fn f64_only(precision: Precision) -> Result<()> {
    match precision {
        Precision::F64 => Ok(()),
        Precision::F32 => input("precision: the lskum solver runs in f64 only"),
    }
}

impl Registered for LskumParams {
    const RESULT_FILES: &'static [&'static str] = &["wall_cp.csv"];
    const BENCH_SIZE: usize = 100_000;
    /// M = 0.63, alpha = 2 deg on a generated quadtree NACA 0012 cloud of about `points` points.
    fn bench(points: usize, o: &BenchOptions, device: &Device) -> Result<Box<dyn Solver>> {
        if !(1000..=50_000_000).contains(&points) {
            return input(format!("--size {points}: choose 1000 .. 50 000 000 points"));
        }
        if o.precision == Precision::F32 {
            return input("--precision f32: the lskum solver runs in f64 only");
        }
        // Before the cloud is generated, which takes a good part of that memory itself.
        crate::bench::check_memory(points_memory(points), &format!("--size {points}"))?;
        let mut p = LskumParams::with_cloud("generated", CloudFormat::Sim, 0.63, 2.0);
        p.renumber = o.renumber.unwrap_or_default();
        let cloud = quadtree_points(points, 0.12, Closure::Scaled, 10.0)?;
        let mut s = Lskum::with_cloud(&p, cloud).on(device)?;
        s.time_phases();
        Ok(Box::new(s))
    }
}

const COMPONENTS: [&str; 4] = ["rho", "u", "v", "p"];

impl Lskum {
    /// Wall C_p as CSV: `point,x,y,cp,minus_cp` (point 1-based, standard C_p sign).
    pub fn wall_cp_csv(&self) -> String {
        let mut s = String::from("point,x,y,cp,minus_cp\n");
        for (f, i) in self.wall_points() {
            let cp = self.cp(i);
            s += &format!("{},{:.17e},{:.17e},{:.17e},{:.17e}\n", f + 1, self.cloud.x[i], self.cloud.y[i], cp, -cp);
        }
        s
    }

    /// Seconds per point-iteration of the iterations this process has run.
    pub fn rdp(&self) -> f64 {
        let n = self.timed_iterations as f64 * self.cloud.len() as f64;
        if n == 0.0 { 0.0 } else { self.wall_seconds / n }
    }
}

impl Solver for Lskum {
    fn kind(&self) -> &'static str {
        "lskum"
    }
    fn precision(&self) -> Precision {
        Precision::F64
    }
    fn step(&self) -> u64 {
        self.step
    }
    /// No global time: every point has its own local time step.
    fn time(&self) -> f64 {
        0.0
    }
    fn clock(&self) -> Clock {
        Clock::Iterations
    }
    fn dt(&self) -> f64 {
        0.0
    }
    fn advance(&mut self, _dt: f64) -> Result<()> {
        self.try_iterate()
    }
    fn sync(&mut self) -> Result<()> {
        if let Some(d) = &self.dev {
            self.st.prim = d.prim()?;
        }
        Ok(())
    }
    fn backend(&self) -> String {
        self.backend.clone()
    }
    fn launch_block(&self) -> Option<[u32; 2]> {
        self.dev.as_ref().map(|d| [d.block(), 1])
    }
    fn wait(&mut self) -> Result<()> {
        self.dev.as_ref().map_or(Ok(()), |d| d.synchronize())
    }
    fn mesh(&self) -> Mesh {
        Mesh::Points(self.cloud.file_order().map(|i| [self.cloud.x[i], self.cloud.y[i]]).collect())
    }
    fn surface(&self) -> Option<&[[u32; 3]]> {
        self.surface
            .get_or_init(|| {
                surface::triangulate(&self.cloud.in_file_order())
                    .inspect_err(|why| crate::say!("note: no triangles in the .vtu output ({why}); it shows the points only"))
                    .ok()
            })
            .as_deref()
    }
    fn units(&self) -> &'static str {
        "Mach: local Mach number; velocity: (u, v, 0) in units of the free-stream speed of sound \
         (free-stream speed = M); rho: density / free-stream density; p: pressure / (free-stream \
         density x free-stream speed of sound^2), free stream 1/gamma (gamma = 1.4); \
         Cp: (p - 1/gamma) / (M^2 / 2); point_type: 0 wall, 1 interior, 2 outer; x, y in chords"
    }
    fn output_fields(&self) -> Vec<OutField> {
        let w = &self.prim();
        let col = |f: &dyn Fn(&V4) -> f64| Values::F64(w.iter().map(f).collect());
        let p_inf = 1.0 / kernels::GAMMA;
        let mach = self.params.mach;
        // The first scalar (Mach) and vector are the files' active ones (README "Output").
        vec![
            OutField::new("Mach", 1, Location::Node, col(&|s| kernels::mach_number(*s))),
            OutField::new("velocity", 3, Location::Node, Values::F64(w.iter().flat_map(|s| [s[1], s[2], 0.0]).collect())),
            OutField::new("rho", 1, Location::Node, col(&|s| s[0])),
            OutField::new("p", 1, Location::Node, col(&|s| s[3])),
            OutField::new("Cp", 1, Location::Node, col(&|s| kernels::cp(s[3], p_inf, 1.0, mach))),
            // 0 wall, 1 interior, 2 outer (flag_1 of the cloud file)
            OutField::new(
                "point_type",
                1,
                Location::Node,
                Values::F64(self.cloud.file_order().map(|i| self.cloud.flag[i] as f64).collect()),
            ),
        ]
    }
    fn state(&self) -> Vec<StateArray> {
        let n = self.cloud.len();
        let prim = self.prim();
        let mut v: Vec<StateArray> = (0..4)
            .map(|m| StateArray {
                name: COMPONENTS[m].into(),
                shape: vec![n],
                values: Values::F64(prim.iter().map(|s| s[m]).collect()),
                place: Some(Place::NODE),
            })
            .collect();
        v.push(StateArray::other("residual_ref", Values::F64(vec![self.res_ref])));
        v.push(StateArray::other("residual_last", Values::F64(vec![self.res_last])));
        v.extend(self.file_cloud().to_arrays());
        v
    }
    fn restore(&mut self, step: u64, _time: f64, mut arrays: Vec<StateArray>) -> Result<()> {
        let n = self.cloud.len();
        let mut comps = Vec::with_capacity(4);
        for name in COMPONENTS {
            comps.push(take_array::<f64>(&mut arrays, name, &[n])?);
        }
        let r_ref = take_array::<f64>(&mut arrays, "residual_ref", &[1])?[0];
        let r_last = take_array::<f64>(&mut arrays, "residual_last", &[1])?[0];
        let prim: Vec<V4> = (0..n).map(|f| [comps[0][f], comps[1][f], comps[2][f], comps[3][f]]).collect();
        self.st.prim = self.cloud.from_file_order(&prim);
        if let Some(d) = &mut self.dev {
            d.set_prim(&self.st.prim)?;
        }
        self.step = step;
        self.res_ref = r_ref;
        self.res_last = r_last;
        self.residue = if step <= 2 { 0.0 } else { (r_last / r_ref).log10() };
        Ok(())
    }
    fn find_non_finite(&self) -> Option<NonFinite> {
        use rayon::prelude::*;
        // The first in file order (the index users see), without a reordered copy.
        let (c, prim) = (&self.cloud, &self.st.prim);
        let f = (0..c.len()).into_par_iter().position_first(|f| !prim[c.file_index(f)].iter().all(|v| v.is_finite()))?;
        let w = prim[c.file_index(f)];
        let m = (0..4).find(|&m| !w[m].is_finite()).unwrap_or(0);
        Some(NonFinite { field: COMPONENTS[m], index: vec![f + 1], value: w[m] })
    }
    fn diagnostics(&self) -> Vec<(&'static str, Option<f64>)> {
        let (cl, cd, cm) = self.coefficients();
        // The residue is log10 of 0 (or of 0/0) where an iteration changed nothing: no value.
        // Neither has one before the first iteration.
        let iterated = self.step > 0;
        let residue = self.residue.is_finite().then_some(self.residue).filter(|_| iterated);
        vec![
            ("residue", residue),
            ("residual", Some(self.res_last).filter(|_| iterated)),
            ("cl", Some(cl)),
            ("cd", Some(cd)),
            ("cm", Some(cm)),
        ]
    }
    fn report(&self) -> serde_json::Map<String, serde_json::Value> {
        let (cl, cd, cm) = self.coefficients();
        let mut m = serde_json::Map::new();
        m.insert("reference".into(), "none (steady coefficients)".into());
        m.insert("cl".into(), cl.into());
        m.insert("cd".into(), cd.into());
        m.insert("cm".into(), cm.into());
        m.insert("force_points".into(), format!("{:?}", self.params.forces).to_lowercase().into());
        // the other convention, for comparisons with the reference codes
        let other = match self.params.forces {
            ForceSet::Wall => ("shape", ForcePoints::Shape),
            ForceSet::Shape => ("wall", ForcePoints::Wall),
        };
        let (cl2, cd2, cm2) = self.coefficients_of(other.1);
        m.insert(format!("cl_{}", other.0), cl2.into());
        m.insert(format!("cd_{}", other.0), cd2.into());
        m.insert(format!("cm_{}", other.0), cm2.into());
        m.insert("residue".into(), self.residue.into());
        m.insert("iterations".into(), self.step.into());
        m.insert("points".into(), self.cloud.len().into());
        m.insert("rdp_s".into(), self.rdp().into());
        m.insert("renumber".into(), self.params.renumber.name().into());
        if self.dev.is_none() {
            // The path the flux residual took (`cpu.math`; CUDA uses the device's functions).
            let simd = match self.set.math {
                crate::cpu::Math::Exact => crate::cpu::Simd::None,
                crate::cpu::Math::Fast => crate::cpu::Simd::detect(),
            };
            m.insert("math".into(), self.set.math.name().into());
            m.insert("simd".into(), simd.name().into());
        }
        let timed: f64 = self.phases.phases().iter().map(|p| p.1).sum();
        if timed > 0.0 {
            // In the order of an iteration: [[phase, share], ...].
            let shares: Vec<_> = self.phases.phases().iter().map(|&(name, s)| serde_json::json!([name, s / timed])).collect();
            m.insert("phase_shares".into(), shares.into());
        }
        m
    }
    fn bytes_per_step(&self) -> f64 {
        // stages x (read prim + write q, read q/derivatives of the stencil once, write R, update)
        let (n, stages) = (self.cloud.len() as f64, self.set.scheme.stages().len() as f64);
        stages * n * 8.0 * (8.0 + 8.0 * (1 + self.set.inner_iterations) as f64 + 16.0 + 16.0)
    }
    fn converged(&self) -> bool {
        self.params.residue_drop.is_some_and(|d| self.step > 2 && self.residue <= -d)
    }
    fn status(&self) -> Option<String> {
        let (cl, cd, _) = self.coefficients();
        Some(format!("residue {:.3}  Cl {:.4}  Cd {:.5}", self.residue, cl, cd))
    }
    fn write_results(&self, dir: &std::path::Path) -> Result<Vec<String>> {
        crate::io::write_atomic(&dir.join("wall_cp.csv"), self.wall_cp_csv().as_bytes())?;
        Ok(vec!["wall_cp.csv".into()])
    }
}

/// Rough bytes of storage for a cloud file (about one point per line), for `sim check`.
pub fn memory_estimate(p: &LskumParams) -> usize {
    use std::io::BufRead;
    // Only regular files (the reader refuses anything else with a clear message), counted
    // in chunks rather than held in memory.
    let regular = std::fs::metadata(&p.cloud).is_ok_and(|m| m.is_file());
    let mut lines = 0;
    if regular && let Ok(f) = std::fs::File::open(&p.cloud) {
        let mut r = std::io::BufReader::with_capacity(1 << 20, f);
        while let Ok(chunk) = r.fill_buf()
            && !chunk.is_empty()
        {
            lines += chunk.iter().filter(|&&c| c == b'\n').count();
            let n = chunk.len();
            r.consume(n);
        }
    }
    points_memory(lines)
}

/// Rough bytes of a run on a cloud of `points` points: 11 four-component arrays + 2 scalars
/// of state, 5 of geometry, 5 least-squares matrices (4 values each), ~16 links in 5 CSR
/// lists; the cloud as read, output and checkpoint copies take as much again (1.9 times at
/// the measured peak of a run).
fn points_memory(points: usize) -> usize {
    9 * points * (11 * 32 + 2 * 8 + 5 * 8 + 5 * 32 + 16 * 4 * 2 + 5 * 4) / 4
}

/// Lines for `sim check`: the cloud and the settings.
/// The point cloud a checkpoint holds (None where it holds none, or the precision is not the
/// solver's, which the file's path then refuses); errors name the checkpoint.
fn stored_cloud(precision: Precision, checkpoint: &std::path::Path, arrays: &[StateArray]) -> Result<Option<Cloud>> {
    if precision != Precision::F64 || !Cloud::in_arrays(arrays) {
        return Ok(None);
    }
    let cloud = Cloud::from_arrays(arrays)
        .map_err(|e| crate::error::SimError::Input(format!("checkpoint {}: {e}", checkpoint.display())))?;
    Ok(Some(cloud))
}

fn describe(p: &LskumParams, cloud: &Cloud) -> Vec<String> {
    let count = |t| cloud.flag.iter().filter(|&&x| x == t).count();
    let (w, i, o) = (count(cloud::WALL), count(cloud::INTERIOR), count(cloud::OUTER));
    let links = cloud.conn.idx.len();
    vec![
        format!(
            "cloud {} ({}): {} points ({w} wall, {i} interior, {o} outer), {links} links ({:.2} per point)",
            p.cloud.display(),
            p.format.name(),
            cloud.len(),
            links as f64 / cloud.len().max(1) as f64
        ),
        format!(
            "M = {}, alpha = {} deg, CFL = {}, {:?} ({} stage(s)), {} inner iteration(s), K = {}, power = {}",
            p.mach,
            p.aoa,
            p.cfl,
            p.tscheme,
            p.settings().scheme.stages().len(),
            p.inner_iterations,
            p.vl_const,
            p.power
        ),
        format!("points held in {} order (renumber; outputs keep the file's order)", p.renumber.order()),
        "pseudo-time: local time steps, counted in iterations (time.end_step, output.every_steps)".into(),
    ]
}
