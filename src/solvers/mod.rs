//! The solvers, and the one place that turns a case into a solver.

pub mod cavity;
pub mod heat;
pub mod lskum;

use std::sync::Arc;

use crate::case::{Backend, Case, SolverCase};
use crate::cuda::{Gpu, GpuOptions};
use crate::error::{Result, input};
use crate::real::Precision;
use crate::solver::Solver;

/// Where a solver's fields live and its kernels run.
#[derive(Clone)]
pub enum Device {
    Cpu,
    Cuda(Arc<Gpu>, GpuOptions),
}

/// Whether the solver of `case` has CUDA kernels.
pub fn has_cuda(case: &Case) -> bool {
    matches!(case.solver, SolverCase::Heat1d(_) | SolverCase::Heat2d(_) | SolverCase::Cavity(_))
}

/// The device a run uses for `requested`, and a note for the user when `auto` chose.
pub fn choose_device(requested: Backend, case: &Case) -> Result<(Device, Option<String>)> {
    let kind = case.solver.kind();
    match requested {
        Backend::Cpu => Ok((Device::Cpu, None)),
        Backend::Cuda if !has_cuda(case) => {
            input(format!("backend cuda: solver {kind} has no CUDA kernels yet; use backend: cpu or auto"))
        }
        Backend::Cuda => Ok((Device::Cuda(Gpu::open()?, case.gpu.clone()), None)),
        Backend::Auto if !has_cuda(case) => {
            Ok((Device::Cpu, Some(format!("backend auto: using the CPU (no CUDA kernels for solver {kind})"))))
        }
        Backend::Auto => match Gpu::open() {
            Ok(gpu) => {
                let note = format!("backend auto: using CUDA device {}", gpu.name);
                Ok((Device::Cuda(gpu, case.gpu.clone()), Some(note)))
            }
            Err(e) => Ok((Device::Cpu, Some(format!("backend auto: using the CPU ({e})")))),
        },
    }
}

/// Build the solver of `case` in `precision` on the CPU, at its initial condition.
pub fn build(case: &Case, precision: Precision) -> Result<Box<dyn Solver>> {
    build_on(case, precision, &Device::Cpu)
}

/// Build the solver of `case` in `precision` on `device`, at its initial condition.
pub fn build_on(case: &Case, precision: Precision, device: &Device) -> Result<Box<dyn Solver>> {
    if matches!(device, Device::Cuda(..)) && !has_cuda(case) {
        return input(format!("backend cuda: solver {} has no CUDA kernels yet; use backend: cpu", case.solver.kind()));
    }
    Ok(match (&case.solver, precision) {
        (SolverCase::Heat1d(p), Precision::F32) => Box::new(heat::Heat::<f32>::heat1d(p).on(device)?),
        (SolverCase::Heat1d(p), Precision::F64) => Box::new(heat::Heat::<f64>::heat1d(p).on(device)?),
        (SolverCase::Heat2d(p), Precision::F32) => Box::new(heat::Heat::<f32>::heat2d(p).on(device)?),
        (SolverCase::Heat2d(p), Precision::F64) => Box::new(heat::Heat::<f64>::heat2d(p).on(device)?),
        (SolverCase::Cavity(p), Precision::F32) => Box::new(cavity::Cavity::<f32>::new(p).on(device)?),
        (SolverCase::Cavity(p), Precision::F64) => Box::new(cavity::Cavity::<f64>::new(p).on(device)?),
        (SolverCase::Lskum(p), Precision::F64) => Box::new(lskum::Lskum::new(p)?),
        (SolverCase::Lskum(_), Precision::F32) => {
            return crate::error::input("precision: the lskum solver runs in f64 only");
        }
    })
}

/// Bytes of field storage the solver of `case` allocates, for `sim check`.
pub fn memory_estimate(case: &Case, precision: Precision) -> usize {
    let s = precision.bytes();
    match &case.solver {
        SolverCase::Heat1d(p) => 2 * p.n * s,
        SolverCase::Heat2d(p) => 2 * p.n * p.n * s,
        // u, v, p, u*, v*, p* and the two residual snapshots.
        SolverCase::Cavity(p) => 8 * p.n * p.n * s,
        SolverCase::Lskum(p) => lskum::memory_estimate(p),
    }
}
