//! The cavity step on a CUDA device: the kernels of `kernels/cavity.cu`, which mirror
//! `kernels.rs` expression for expression, run as the [`Stages`] of [`kernels::step`], the
//! same function that orders the CPU stages.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use super::kernels::{self, Coeffs, Stages};
use crate::cuda::{CavityKernel, Gpu, GpuOptions, Variant, driver_err};
use crate::error::Result;
use crate::real::Real;

/// Threads per block of the boundary pass.
const WALL_BLOCK: u32 = 256;

pub struct CavityCuda<T: Real> {
    stream: Arc<CudaStream>,
    predictor: CudaFunction,
    corrector: CudaFunction,
    walls: CudaFunction,
    cfg: LaunchConfig,
    walls_cfg: LaunchConfig,
    /// Level n (updated in place by the corrector) and the predicted level.
    u: CudaSlice<T>,
    v: CudaSlice<T>,
    p: CudaSlice<T>,
    us: CudaSlice<T>,
    vs: CudaSlice<T>,
    ps: CudaSlice<T>,
    nx: i32,
    ny: i32,
}

impl<T: Real> CavityCuda<T> {
    /// Upload `u, v, p` (`nx x ny`, x contiguous) and prepare the kernels.
    pub fn new(gpu: &Gpu, opts: &GpuOptions, nx: usize, ny: usize, u: &[T], v: &[T], p: &[T]) -> Result<Self> {
        gpu.check_block(opts.block())?;
        let kernels = gpu.kernels::<CavityKernel>(T::PRECISION, opts.fast_math)?;
        let [bx, by] = opts.block();
        let grid_dim = gpu.grid_2d(nx, ny, opts.block())?;
        let (predictor, corrector, shared_mem_bytes) = match opts.variant {
            Variant::L2 => (CavityKernel::PredictorL2, CavityKernel::CorrectorL2, 0),
            // Three (bx+2) x (by+2) tiles.
            Variant::Shared => (
                CavityKernel::PredictorShared,
                CavityKernel::CorrectorShared,
                3 * (bx + 2) * (by + 2) * std::mem::size_of::<T>() as u32,
            ),
        };
        let boundary = 2 * nx + 2 * (ny - 2);
        let stream = gpu.stream.clone();
        let up = |x: &[T]| stream.clone_htod(x).map_err(driver_err("upload"));
        let zeros = || stream.alloc_zeros::<T>(nx * ny).map_err(driver_err("allocation"));
        let (predictor, corrector) = (kernels.get(predictor), kernels.get(corrector));
        for f in [&predictor, &corrector] {
            gpu.allow_shared(f, shared_mem_bytes, opts.block())?;
        }
        Ok(CavityCuda {
            predictor,
            corrector,
            walls: kernels.get(CavityKernel::Walls),
            cfg: LaunchConfig { grid_dim, block_dim: (bx, by, 1), shared_mem_bytes },
            walls_cfg: LaunchConfig {
                grid_dim: ((boundary as u32).div_ceil(WALL_BLOCK), 1, 1),
                block_dim: (WALL_BLOCK, 1, 1),
                shared_mem_bytes: 0,
            },
            u: up(u)?,
            v: up(v)?,
            p: up(p)?,
            us: zeros()?,
            vs: zeros()?,
            ps: zeros()?,
            nx: nx as i32,
            ny: ny as i32,
            stream,
        })
    }

    /// One full step with coefficients `c` (the stage order of [`kernels::step`]).
    pub fn step(&mut self, c: &Coeffs<T>) -> Result<()> {
        kernels::step(self, c)
    }

    /// Launch the predictor (`predictor`) or the corrector with the coefficients of `c`.
    fn substep(&mut self, predictor: bool, c: &Coeffs<T>) -> Result<()> {
        let (f, what) = if predictor { (&self.predictor, "predictor") } else { (&self.corrector, "corrector") };
        let mut b = self.stream.launch_builder(f);
        // The predictor writes the predicted fields, the corrector level n (in place).
        if predictor {
            b.arg(&self.u).arg(&self.v).arg(&self.p).arg(&mut self.us).arg(&mut self.vs).arg(&mut self.ps);
        } else {
            b.arg(&mut self.u).arg(&mut self.v).arg(&mut self.p).arg(&self.us).arg(&self.vs).arg(&self.ps);
        }
        b.arg(&self.nx).arg(&self.ny);
        for s in [&c.dtdx, &c.dtdy, &c.nudx2, &c.nudy2, &c.c2dx, &c.c2dy] {
            b.arg(s);
        }
        // SAFETY: matches cavity_{predictor,corrector}_{l2,shared}(u, v, p, us, vs, ps, nx, ny,
        // dtdx, dtdy, nudx2, nudy2, c2dx, c2dy) in kernels/cavity.cu; every buffer holds nx*ny
        // elements, and the shared variant gets its three tiles of dynamic shared memory.
        unsafe { b.launch(self.cfg) }.map(|_| ()).map_err(|e| driver_err(what)(e))
    }

    /// Block until the queued kernels have finished.
    pub fn wait(&self) -> Result<()> {
        self.stream.synchronize().map_err(driver_err("synchronize"))
    }

    /// Copy `u` to the host.
    pub fn download_u(&self, u: &mut [T]) -> Result<()> {
        self.stream.memcpy_dtoh(&self.u, u).map_err(driver_err("download"))
    }

    /// Copy `u, v, p` to the host.
    pub fn download(&self, u: &mut [T], v: &mut [T], p: &mut [T]) -> Result<()> {
        let e = driver_err("download");
        self.stream.memcpy_dtoh(&self.u, u).map_err(&e)?;
        self.stream.memcpy_dtoh(&self.v, v).map_err(&e)?;
        self.stream.memcpy_dtoh(&self.p, p).map_err(&e)
    }

    /// The stream and the fields `u, v, p`, or the predicted ones (`predicted`).
    pub fn fields(&mut self, predicted: bool) -> (&Arc<CudaStream>, [&mut CudaSlice<T>; 3]) {
        let f = match predicted {
            true => [&mut self.us, &mut self.vs, &mut self.ps],
            false => [&mut self.u, &mut self.v, &mut self.p],
        };
        (&self.stream, f)
    }

    /// Replace `u, v, p` on the device.
    pub fn upload(&mut self, u: &[T], v: &[T], p: &[T]) -> Result<()> {
        let e = driver_err("upload");
        self.stream.memcpy_htod(u, &mut self.u).map_err(&e)?;
        self.stream.memcpy_htod(v, &mut self.v).map_err(&e)?;
        self.stream.memcpy_htod(p, &mut self.p).map_err(&e)
    }
}

impl<T: Real> Stages<T> for CavityCuda<T> {
    fn predictor(&mut self, c: &Coeffs<T>) -> Result<()> {
        self.substep(true, c)
    }

    fn corrector(&mut self, c: &Coeffs<T>) -> Result<()> {
        self.substep(false, c)
    }

    fn walls(&mut self, predicted: bool, u0: T) -> Result<()> {
        let mut b = self.stream.launch_builder(&self.walls);
        if predicted {
            b.arg(&mut self.us).arg(&mut self.vs).arg(&mut self.ps);
        } else {
            b.arg(&mut self.u).arg(&mut self.v).arg(&mut self.p);
        }
        b.arg(&self.nx).arg(&self.ny).arg(&u0);
        // SAFETY: matches cavity_walls(u, v, p, nx, ny, u0); the grid covers the
        // 2 nx + 2 (ny - 2) boundary nodes and the kernel ignores threads beyond them.
        unsafe { b.launch(self.walls_cfg) }.map(|_| ()).map_err(driver_err("cavity walls launch"))
    }
}
