//! The shallow-water schemes on a CUDA device: the kernels of `kernels/shallow_water_*.cu`
//! behind the same [`Scheme`] interface as the CPU schemes, bitwise equal to them.

use std::sync::Arc;

use crate::cuda::{Cdklm16Kernel, Gpu, GpuOptions, Kp07Kernel};
use crate::error::Result;
use crate::numerics::rk;
use crate::real::Real;

use super::fd_cuda::{CtcsCuda, FblCuda};
use super::fv_cuda::FvCuda;
use super::grid::Physics;
use super::{cdklm16, kp07};
use super::params::SchemeName;
use super::scheme::{Initial, Scheme};

/// Scheme `name` on `gpu`, from the initial state `init`.
pub fn scheme<T: Real>(
    name: SchemeName,
    p: &Physics,
    init: &Initial,
    rk: rk::Scheme,
    gpu: &Arc<Gpu>,
    opts: &GpuOptions,
) -> Result<Box<dyn Scheme<T>>> {
    match name {
        // The finite-difference schemes on the C grid.
        SchemeName::Fbl => Ok(Box::new(FblCuda::<T>::new(p, init, gpu, opts)?)),
        SchemeName::Ctcs => Ok(Box::new(CtcsCuda::<T>::new(p, init, gpu, opts)?)),

        // The finite-volume schemes.
        SchemeName::Cdklm16 => Ok(Box::new(FvCuda::new::<Cdklm16Kernel, _>(p, init, rk, cdklm16::Op, gpu, opts)?)),
        SchemeName::Kp07 => Ok(Box::new(FvCuda::new::<Kp07Kernel, _>(p, init, rk, kp07::Op, gpu, opts)?)),
    }
}
