//! The solvers: the registry that is the one list of them, and what the rest of the program
//! asks of a solver's case section ([`SolverSpec`]) and of its type ([`Registered`]).
//!
//! Adding a solver: its folder under `src/solvers/`, one line in [`registry!`] below (and its
//! kernel file in [`crate::cuda::KERNELS`] if it has CUDA kernels); see README "Adding a solver".

pub mod cavity;
pub mod heat;
pub mod lskum;
pub mod shallow_water;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::case::{Backend, Case};
use crate::cpu::CpuOptions;
use crate::cuda::{Gpu, GpuOptions};
use crate::error::{Result, SimError, input};
use crate::numerics::temporal::Tiling;
use crate::parallel::{Comm, Processes, process_grid};
use crate::bench::BenchOptions;
use crate::real::Precision;
use crate::solver::{Clock, Solver, StateArray};

/// Where a solver's fields live and its kernels run, with the options of that back end.
#[derive(Clone)]
pub enum Device {
    Cpu(CpuOptions),
    Cuda(Arc<Gpu>, GpuOptions),
}

/// A solver's case section (`solver: {NAME: {...}}`) as the driver, `sim check` and the
/// case validation see it.
pub trait SolverSpec {
    /// Value checks after parsing; errors name the key (`solver.NAME.key`).
    fn validate(&self) -> Result<()>;
    fn clock(&self) -> Clock {
        Clock::Physical
    }
    /// Whether the solver has CUDA kernels.
    fn has_cuda(&self) -> bool {
        false
    }
    /// The scheme, for a solver with several whose kernels differ (the tuned block shapes of
    /// `sim tune` are kept per scheme).
    fn scheme_name(&self) -> Option<&'static str> {
        None
    }
    /// Bytes a run of the solver holds at its peak: its fields and the copies that output and
    /// checkpoints make (checked against the machine's memory; a test holds it above the
    /// measured peak of a run of each solver).
    fn memory_estimate(&self, precision: Precision) -> usize;
    /// The length of a full step (None under pseudo-time), known before anything is built.
    fn nominal_dt(&self) -> Option<f64>;
    /// Lines for `sim check`, from the parameters alone (no fields are allocated), in the
    /// run's `precision` where it matters.
    fn describe(&self, precision: Precision) -> Result<Vec<String>>;
    /// The solver at its initial condition, in `precision`, on `device`.
    fn build(&self, precision: Precision, device: &Device) -> Result<Box<dyn Solver>>;
    /// The temporal blocking of the CPU kernels under `cpu` on `threads` threads; None for a
    /// solver (or method) that steps one at a time.
    fn tiling(&self, _precision: Precision, _cpu: &CpuOptions, _threads: usize) -> Option<Tiling> {
        None
    }
    /// Datasets of a checkpoint's /fields that [`SolverSpec::build_restart`] builds from.
    fn restart_inputs(&self) -> &'static [&'static str] {
        &[]
    }
    /// The solver that a checkpoint's `arrays` are then restored into. By default
    /// [`SolverSpec::build`]; a solver whose checkpoints hold its input data (lskum: the point
    /// cloud) builds from them, so that a checkpoint alone continues a run; its errors name
    /// the `checkpoint` file.
    fn build_restart(
        &self,
        precision: Precision,
        device: &Device,
        _checkpoint: &std::path::Path,
        _arrays: &[StateArray],
    ) -> Result<Box<dyn Solver>> {
        self.build(precision, device)
    }
    /// [`SolverSpec::describe`] of the run a checkpoint continues, from the input data it holds
    /// (see [`SolverSpec::build_restart`]).
    fn describe_restart(&self, precision: Precision, _checkpoint: &std::path::Path, _arrays: &[StateArray]) -> Result<Vec<String>> {
        self.describe(precision)
    }
    /// The file paths among the parameters, which a case file's folder resolves when relative.
    fn input_paths(&mut self) -> Vec<&mut std::path::PathBuf> {
        Vec::new()
    }
    /// [`SolverSpec::build`] after [`SolverSpec::validate`] and the memory check (parameters
    /// not from a case file).
    fn validated_build(&self, precision: Precision, device: &Device) -> Result<Box<dyn Solver>> {
        self.validate()?;
        check_memory(self.memory_estimate(precision))?;
        self.build(precision, device)
    }
}

/// Refuse a solver whose fields need more memory than the machine has available.
pub fn check_memory(bytes: usize) -> Result<()> {
    match memory_short(bytes) {
        Some((need, free)) => input(format!(
            "the run needs about {need:.2} GiB of memory (its fields, and the copies output and checkpoints make) \
             and this machine has {free:.2} GiB available; reduce the grid or the number of points"
        )),
        None => Ok(()),
    }
}

/// `(needed, available)` in GiB where `bytes` exceed the memory available now.
pub fn memory_short(bytes: usize) -> Option<(f64, f64)> {
    let gib = |b: f64| b / (1u64 << 30) as f64;
    crate::memory::available().filter(|&free| bytes as u64 > free).map(|free| (gib(bytes as f64), gib(free as f64)))
}

/// The static part of a registry entry.
pub trait Registered: SolverSpec + Sized {
    /// Files the solver's [`Solver::write_results`] may write (removed by `--overwrite`).
    const RESULT_FILES: &'static [&'static str] = &[];
    /// Default problem size of `sim bench`: nodes (per side in 2D) or points.
    const BENCH_SIZE: usize = 4096;
    /// Schemes `sim bench --scheme` chooses from (the first is the default); empty for a
    /// solver with one scheme.
    const SCHEMES: &'static [&'static str] = &[];
    /// The problem `sim bench` times at `size`, with the scheme (one of
    /// [`Registered::SCHEMES`]), precision and solver options of `o`.
    fn bench(size: usize, o: &BenchOptions, device: &Device) -> Result<Box<dyn Solver>>;
}

/// [`Registered::bench`]: the problem `sim bench` times, from size, options and device.
pub type BenchProblem = fn(usize, &BenchOptions, &Device) -> Result<Box<dyn Solver>>;

/// One solver of the registry.
pub struct Entry {
    pub name: &'static str,
    pub result_files: &'static [&'static str],
    pub bench_size: usize,
    pub schemes: &'static [&'static str],
    pub bench: BenchProblem,
}

/// Generates [`SolverCase`] (the `solver:` section, exactly one solver) and [`SOLVERS`]
/// from one line per solver: `"case name" => Variant(parameter type)`.
macro_rules! registry {
    ($($name:literal => $variant:ident($params:ty)),+ $(,)?) => {
        /// The solver of a case and its parameters (`solver: {heat2d: {...}}`).
        // One per run: the size of the largest section does not matter.
        #[allow(clippy::large_enum_variant)]
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        pub enum SolverCase {
            $(#[serde(rename = $name)] $variant($params),)+
        }

        impl SolverCase {
            pub fn spec(&self) -> &dyn SolverSpec {
                match self {
                    $(SolverCase::$variant(p) => p,)+
                }
            }
            pub fn spec_mut(&mut self) -> &mut dyn SolverSpec {
                match self {
                    $(SolverCase::$variant(p) => p,)+
                }
            }
            pub fn kind(&self) -> &'static str {
                match self {
                    $(SolverCase::$variant(_) => $name,)+
                }
            }
        }

        /// Every solver, in the order of the registry.
        pub const SOLVERS: &[Entry] = &[$(Entry {
            name: $name,
            result_files: <$params as Registered>::RESULT_FILES,
            bench_size: <$params as Registered>::BENCH_SIZE,
            schemes: <$params as Registered>::SCHEMES,
            bench: <$params as Registered>::bench,
        },)+];
    };
}

registry! {
    "heat1d" => Heat1d(heat::Heat1dParams),
    "heat2d" => Heat2d(heat::Heat2dParams),
    "cavity" => Cavity(cavity::CavityParams),
    "lskum" => Lskum(lskum::LskumParams),
    "shallow_water" => ShallowWater(shallow_water::ShallowWaterParams),
}

/// The registry entry called `name`.
pub fn entry(name: &str) -> Option<&'static Entry> {
    SOLVERS.iter().find(|e| e.name == name)
}

/// The device a run uses for `requested`, and a note for the user when `auto` chose; a GPU is
/// the one of the `local`-th process on this machine (see [`Gpu::open_local`]).
pub fn choose_device(requested: Backend, case: &Case, local: usize) -> Result<(Device, Option<String>)> {
    let kind = case.solver.kind();
    let has_cuda = case.solver.spec().has_cuda();
    match requested {
        Backend::Cpu => Ok((Device::Cpu(case.cpu.clone()), None)),
        Backend::Cuda if !has_cuda => {
            input(format!("backend cuda: solver {kind} has no CUDA kernels yet; use backend: cpu or auto"))
        }
        Backend::Cuda => match Gpu::open_local(local) {
            Ok(gpu) => Ok((Device::Cuda(gpu, case.gpu.clone()), None)),
            Err(why) => input(format!("backend cuda: {why}; use backend: cpu or auto")),
        },
        Backend::Auto if !has_cuda => {
            Ok((Device::Cpu(case.cpu.clone()), Some(format!("backend auto: using the CPU (no CUDA kernels for solver {kind})"))))
        }
        Backend::Auto => match Gpu::open_local(local) {
            Ok(gpu) => {
                let note = format!("backend auto: using CUDA device {}", gpu.name);
                Ok((Device::Cuda(gpu, case.gpu.clone()), Some(note)))
            }
            Err(e) => Ok((Device::Cpu(case.cpu.clone()), Some(format!("backend auto: using the CPU ({e})")))),
        },
    }
}

/// Build the solver of `case` in `precision` on the CPU, at its initial condition.
pub fn build(case: &Case, precision: Precision) -> Result<Box<dyn Solver>> {
    build_on(case, precision, &Device::Cpu(case.cpu.clone()))
}

/// Build the solver of `case` in `precision` on `device`, at its initial condition.
pub fn build_on(case: &Case, precision: Precision, device: &Device) -> Result<Box<dyn Solver>> {
    let spec = case.solver.spec();
    if matches!(device, Device::Cuda(..)) && !spec.has_cuda() {
        return input(format!("backend cuda: solver {} has no CUDA kernels yet; use backend: cpu", case.solver.kind()));
    }
    check_memory(spec.memory_estimate(precision))?;
    spec.build(precision, device)
}

/// Build this rank's part of the solver of `case` split over the ranks `procs` of a run under
/// MPI (the process grid from `parallel.ranks` or chosen), at its initial condition. So far
/// explicit heat2d, the cavity and the shallow-water schemes run on several ranks, on the CPU or
/// on GPUs; the others are refused. On a restart, `restart` gives the checkpoint and the input
/// arrays it holds (see [`SolverSpec::restart_inputs`]).
pub fn build_parallel(
    case: &Case,
    precision: Precision,
    device: &Device,
    procs: &dyn Processes,
    restart: Option<(&std::path::Path, &[StateArray])>,
) -> Result<(Box<dyn Solver>, Arc<dyn Comm>)> {
    let dims = decomposition(case, device, procs.size()).map_err(|e| match e {
        SimError::Input(m) if restart.is_some() && case.parallel.ranks.is_some() && m.starts_with("parallel.ranks") => {
            SimError::Input(format!("{m} (on a restart, parallel is that of the case file given with --restart, else of the checkpoint's case)"))
        }
        e => e,
    })?;
    check_memory(case.solver.spec().memory_estimate(precision) / procs.size())?;
    match &case.solver {
        SolverCase::Heat2d(p) => {
            let comm = procs.grid(dims, [false, false]);
            Ok((heat::part::build(p.setup(), precision, comm.clone(), device)?, comm))
        }
        SolverCase::ShallowWater(p) => {
            let sides = p.sides();
            // A periodic axis of one rank wraps within the block, by the boundary condition.
            let periodic = [sides.periodic_x() && dims[0] > 1, sides.periodic_y() && dims[1] > 1];
            let comm = procs.grid(dims, periodic);
            let inputs = match restart {
                Some((checkpoint, arrays)) => shallow_water::input_file::Inputs::stored(arrays, checkpoint),
                None => shallow_water::input_file::Inputs::files(),
            };
            let c = comm.clone();
            let part =
                crate::in_precision!(precision, |T| shallow_water::ShallowWater::<T>::on_ranks(p, c, device, inputs));
            Ok((part?, comm))
        }
        SolverCase::Cavity(p) => {
            let comm = procs.grid(dims, [false, false]);
            Ok((cavity::part::build(p, precision, comm.clone(), device)?, comm))
        }
        _ => unreachable!("decomposition refuses the other solvers"),
    }
}

/// The process grid of `case` on `size` ranks (`parallel.ranks`, or the one with the shortest
/// cut), or why it cannot run on them: [`build_parallel`]'s, and `sim check`'s under a launcher.
pub fn decomposition(case: &Case, device: &Device, size: usize) -> Result<[usize; 2]> {
    // A split that the device chose, not the case, is named as the device's.
    let chosen = matches!(device, Device::Cuda(..)) && case.parallel.ranks.is_none();
    grid_of(case, device, size).map_err(|e| match e {
        SimError::Input(m) if chosen && m.starts_with("parallel.ranks: ") => SimError::Input(format!(
            "backend cuda splits the grid in rows only, and {}; run on fewer ranks",
            &m["parallel.ranks: ".len()..]
        )),
        e => e,
    })
}

fn grid_of(case: &Case, device: &Device, size: usize) -> Result<[usize; 2]> {
    let ranks = || ranks_on(device, case, size);
    match &case.solver {
        SolverCase::Heat2d(p) if p.method == heat::Method::Explicit => process_grid(size, p.setup().grid.n, ranks()?, [2, 2]),
        SolverCase::ShallowWater(p) => {
            let sides = p.sides();
            // Blocks wide enough for the two ghost layers, and across the axis of a sponge's
            // side for the sponge with its inner row.
            let width = |s| if let shallow_water::grid::Side::Sponge { cells, .. } = s { cells + 1 } else { 2 };
            let min = [[sides.east, sides.west], [sides.north, sides.south]].map(|pair| pair.map(width).into_iter().fold(2, usize::max));
            process_grid(size, [p.nx, p.ny], ranks()?, min)
        }
        SolverCase::Cavity(p) => process_grid(size, [p.n, p.n], ranks()?, [2, 2]),
        solver => {
            let method = match solver {
                SolverCase::Heat2d(p) => format!(" with method {}", p.method.name()),
                _ => String::new(),
            };
            input(format!(
                "solver {}{method} does not run on several MPI ranks yet ({size} ranks asked; heat2d with method \
                 explicit, cavity and shallow_water do): run it with one rank",
                solver.kind(),
            ))
        }
    }
}

/// The process grid `parallel.ranks` asks for, if any; on GPUs always `[1, P]`: the blocks are
/// whole rows, so that the ghost rows staged through the host are contiguous.
fn ranks_on(device: &Device, case: &Case, size: usize) -> Result<Option<[usize; 2]>> {
    match (device, case.parallel.ranks) {
        (Device::Cuda(..), Some([px, _])) if px > 1 => {
            input("parallel.ranks: with backend cuda the grid is split in rows only: [1, P]")
        }
        (Device::Cuda(..), _) => Ok(Some([1, size])),
        (Device::Cpu(_), r) => Ok(r),
    }
}

/// Build the solver of `case` that the checkpoint `arrays` are restored into (see
/// [`SolverSpec::build_restart`]).
pub fn build_for_restart(
    case: &Case,
    precision: Precision,
    device: &Device,
    checkpoint: &std::path::Path,
    arrays: &[StateArray],
) -> Result<Box<dyn Solver>> {
    let spec = case.solver.spec();
    if matches!(device, Device::Cuda(..)) && !spec.has_cuda() {
        return input(format!("backend cuda: solver {} has no CUDA kernels yet; use backend: cpu", case.solver.kind()));
    }
    check_memory(spec.memory_estimate(precision))?;
    spec.build_restart(precision, device, checkpoint, arrays)
}

/// Box a solver built in either precision: `in_precision!(precision, |T| expr)` evaluates
/// `expr` with `T` = f32 or f64.
#[macro_export]
macro_rules! in_precision {
    ($precision:expr, |$t:ident| $body:expr) => {
        match $precision {
            $crate::real::Precision::F32 => {
                type $t = f32;
                Ok(Box::new($body?) as Box<dyn $crate::solver::Solver>)
            }
            $crate::real::Precision::F64 => {
                type $t = f64;
                Ok(Box::new($body?) as Box<dyn $crate::solver::Solver>)
            }
        }
    };
}
