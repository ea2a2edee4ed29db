//! The heat step on a CUDA device: the same update as `kernels.rs`, from `kernels/heat.cu`,
//! run as the [`Stages`] of [`kernels::step`], the same function that orders the CPU stages.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use super::kernels::{self, Stages};
use crate::cuda::{Gpu, GpuOptions, HeatKernel, Variant, driver_err};
use crate::error::Result;
use crate::real::Real;
use crate::solver::Grid;

/// The temperature on a device: the current field and the buffer the next step writes
/// (swapped after each step), with the stream that works on them. Shared by the explicit and
/// the implicit engines.
pub struct DeviceField<T> {
    pub stream: Arc<CudaStream>,
    pub temp: CudaSlice<T>,
    pub next: CudaSlice<T>,
}

impl<T: Real> DeviceField<T> {
    /// `init` uploaded, and a second buffer of its length.
    pub fn new(gpu: &Gpu, init: &[T]) -> Result<Self> {
        let stream = gpu.stream.clone();
        let temp = stream.clone_htod(init).map_err(driver_err("upload"))?;
        let next = stream.alloc_zeros::<T>(init.len()).map_err(driver_err("allocation"))?;
        Ok(DeviceField { stream, temp, next })
    }

    /// Block until the queued kernels have finished.
    pub fn wait(&self) -> Result<()> {
        self.stream.synchronize().map_err(driver_err("synchronize"))
    }

    pub fn download(&self, out: &mut [T]) -> Result<()> {
        self.stream.memcpy_dtoh(&self.temp, out).map_err(driver_err("download"))
    }

    pub fn upload(&mut self, v: &[T]) -> Result<()> {
        self.stream.memcpy_htod(v, &mut self.temp).map_err(driver_err("upload"))
    }

    /// Make the buffer just written the current field.
    pub fn swap(&mut self) {
        std::mem::swap(&mut self.temp, &mut self.next);
    }
}

pub struct HeatCuda<T: Real> {
    pub field: DeviceField<T>,
    func: CudaFunction,
    cfg: LaunchConfig,
    nx: i32,
    ny: i32,
}

/// Nodes per thread of `heat2d_l2` along y (HEAT2D_NODES of kernels/heat.cu).
const HEAT2D_NODES: usize = 4;

impl<T: Real> HeatCuda<T> {
    pub fn new(gpu: &Gpu, opts: &GpuOptions, grid: &Grid, init: &[T]) -> Result<Self> {
        gpu.check_block(opts.block())?;
        let kernels = gpu.kernels::<HeatKernel>(T::PRECISION, opts.fast_math)?;
        let [nx, ny] = grid.n;
        let [bx, by] = opts.block();
        let (kernel, cfg) = if ny == 1 {
            (HeatKernel::Heat1d, LaunchConfig { grid_dim: ((nx as u32).div_ceil(bx), 1, 1), block_dim: (bx, 1, 1), shared_mem_bytes: 0 })
        } else {
            match opts.variant {
                Variant::L2 => {
                    let grid_dim = gpu.grid_2d(nx, ny.div_ceil(HEAT2D_NODES), opts.block())?;
                    (HeatKernel::Heat2dL2, LaunchConfig { grid_dim, block_dim: (bx, by, 1), shared_mem_bytes: 0 })
                }
                Variant::Shared => {
                    let grid_dim = gpu.grid_2d(nx, ny, opts.block())?;
                    let bytes = (bx + 2) * (by + 2) * std::mem::size_of::<T>() as u32;
                    (HeatKernel::Heat2dShared, LaunchConfig { grid_dim, block_dim: (bx, by, 1), shared_mem_bytes: bytes })
                }
            }
        };
        let func = kernels.get(kernel);
        gpu.allow_shared(&func, cfg.shared_mem_bytes, opts.block())?;
        Ok(HeatCuda { field: DeviceField::new(gpu, init)?, func, cfg, nx: nx as i32, ny: ny as i32 })
    }

    /// One step with stability number `r` (the stage order of [`kernels::step`]).
    pub fn step(&mut self, r: T) -> Result<()> {
        kernels::step(self, r)
    }
}

impl<T: Real> Stages<T> for HeatCuda<T> {
    fn ftcs(&mut self, r: T) -> Result<()> {
        let f = &mut self.field;
        let mut b = f.stream.launch_builder(&self.func);
        b.arg(&f.temp).arg(&mut f.next).arg(&self.nx);
        if self.ny > 1 {
            b.arg(&self.ny);
        }
        b.arg(&r);
        // SAFETY: the argument list matches the kernel signatures in kernels/heat.cu
        // (src, dst, nx[, ny], r) and both buffers hold nx*ny elements.
        unsafe { b.launch(self.cfg) }.map(|_| ()).map_err(driver_err("heat kernel launch"))
    }

    fn swap(&mut self) {
        self.field.swap();
    }
}
