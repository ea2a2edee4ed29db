//! The shallow-water schemes on a CUDA device: the kernels of `kernels/shallow_water_*.cu`
//! behind the same [`Scheme`] interface as the CPU schemes, bitwise equal to them.

use std::sync::Arc;

use crate::cuda::{Cdklm16Kernel, Gpu, GpuOptions, Kp07Kernel};
use crate::error::{Result, input};
use crate::numerics::rk;
use crate::real::Real;

use super::fd_cuda::{CtcsCuda, FblCuda};
use super::fv_cuda::FvCuda;
use super::grid::Physics;
use super::{cdklm16, kp07};
use super::params::SchemeName;
use super::part::Halo;
use super::scheme::{Initial, Scheme};

/// Scheme `name` on `gpu`, from the initial state `init`; with `halo`, one rank's block of a
/// decomposed run (the finite-volume schemes so far).
pub fn scheme<T: Real>(
    name: SchemeName,
    p: &Physics,
    init: &Initial,
    rk: rk::Scheme,
    gpu: &Arc<Gpu>,
    opts: &GpuOptions,
    halo: Option<Halo>,
) -> Result<Box<dyn Scheme<T>>> {
    match (name, halo) {
        // The finite-difference schemes on the C grid.
        (SchemeName::Fbl, None) => Ok(Box::new(FblCuda::<T>::new(p, init, gpu, opts)?)),
        (SchemeName::Ctcs, None) => Ok(Box::new(CtcsCuda::<T>::new(p, init, gpu, opts)?)),
        (SchemeName::Fbl | SchemeName::Ctcs, Some(_)) => input(format!(
            "solver.shallow_water.scheme: {} does not run on several MPI ranks with backend cuda yet (cdklm16 and \
             kp07 do; on the CPU all four do)",
            name.name()
        )),

        // The finite-volume schemes.
        (SchemeName::Cdklm16, h) => {
            Ok(Box::new(FvCuda::new::<Cdklm16Kernel, _>(p, init, rk, cdklm16::Op, gpu, opts, h)?))
        }
        (SchemeName::Kp07, h) => Ok(Box::new(FvCuda::new::<Kp07Kernel, _>(p, init, rk, kp07::Op, gpu, opts, h)?)),
    }
}
