//! The shallow-water schemes on a CUDA device: the kernels of `kernels/shallow_water_*.cu`
//! behind the same [`Scheme`] interface as the CPU schemes, bitwise equal to them.

use std::sync::Arc;

use crate::cuda::{Cdklm16Kernel, Gpu, GpuOptions, Kp07Kernel};
use crate::error::Result;
use crate::numerics::rk;
use crate::real::Real;

use super::fd_boundary::Halos;
use super::fd_cuda::{CtcsCuda, FblCuda};
use super::fv_cuda::FvCuda;
use super::grid::Physics;
use super::params::SchemeName;
use super::part::{Halo, Ranks};
use super::scheme::{Initial, Scheme};
use super::{cdklm16, fv, kp07};

/// Scheme `name` on `gpu`, from the initial state `init`; with `ranks`, one rank's block of a
/// decomposed run (a block of whole rows, its ghost rows staged through the host).
pub fn scheme<T: Real>(
    name: SchemeName,
    p: &Physics,
    init: &Initial,
    rk: rk::Scheme,
    gpu: &Arc<Gpu>,
    opts: &GpuOptions,
    ranks: Option<&Ranks>,
) -> Result<Box<dyn Scheme<T>>> {
    let (halos, halo) = (ranks.map(Halos::new), ranks.map(|r| Halo::new(r, fv::CELLS)));
    Ok(match name {
        // The finite-difference schemes on the C grid.
        SchemeName::Fbl => Box::new(FblCuda::<T>::new(p, init, gpu, opts, halos)?),
        SchemeName::Ctcs => Box::new(CtcsCuda::<T>::new(p, init, gpu, opts, halos)?),
        // The finite-volume schemes.
        SchemeName::Cdklm16 => Box::new(FvCuda::new::<Cdklm16Kernel, _>(p, init, rk, cdklm16::Op, gpu, opts, halo)?),
        SchemeName::Kp07 => Box::new(FvCuda::new::<Kp07Kernel, _>(p, init, rk, kp07::Op, gpu, opts, halo)?),
    })
}
