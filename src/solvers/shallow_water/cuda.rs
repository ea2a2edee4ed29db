//! The shallow-water schemes on a CUDA device: the kernels of `kernels/shallow_water_*.cu`
//! behind the same [`Scheme`] interface as the CPU schemes, bitwise equal to them.

use std::sync::Arc;

use crate::cuda::{Gpu, GpuOptions};
use crate::error::{Result, input};
use crate::numerics::rk;
use crate::real::Real;

use super::fd_cuda::{CtcsCuda, FblCuda};
use super::grid::Physics;
use super::params::SchemeName;
use super::scheme::{Initial, Scheme};

/// Scheme `name` on `gpu`, from the initial state `init`.
pub fn scheme<T: Real>(
    name: SchemeName,
    p: &Physics,
    init: &Initial,
    _rk: rk::Scheme,
    gpu: &Arc<Gpu>,
    opts: &GpuOptions,
) -> Result<Box<dyn Scheme<T>>> {
    match name {
        // The finite-difference schemes on the C grid.
        SchemeName::Fbl => Ok(Box::new(FblCuda::<T>::new(p, init, gpu, opts)?)),
        SchemeName::Ctcs => Ok(Box::new(CtcsCuda::<T>::new(p, init, gpu, opts)?)),

        // The finite-volume schemes.
        SchemeName::Cdklm16 | SchemeName::Kp07 => not_yet(name),
    }
}

fn not_yet<T>(name: SchemeName) -> Result<T> {
    input(format!(
        "backend cuda: scheme {} of solver shallow_water has no CUDA kernels yet; use backend: cpu",
        name.name()
    ))
}
