//! The implicit heat steps on a CUDA device: the [`ImplicitStages`] of [`implicit::step`]
//! (the function that orders the CPU stages too) from `kernels/tridiag.cu`, with the
//! factorisations the CPU computes ([`Factors::along_x`], [`Thomas::new`]) uploaded.

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use super::cuda::DeviceField;
use super::implicit::{self, Axis, Factors, Flow, ImplicitStages, Method, TridiagonalSolver};
use crate::cuda::{Gpu, GpuOptions, Kernel, Kernels, TridiagKernel, driver_err};
use crate::error::{Result, SimError};
use crate::numerics::tridiag::{SpikePlan, Thomas};
use crate::real::Real;
use crate::solver::Grid;

/// Thomas factors on the device: `lower`, `inv`, `up` with `k + 1` entries each, the tail
/// at index `k` (the layout `kernels/tridiag.cu` reads).
struct DeviceThomas<T> {
    lower: CudaSlice<T>,
    inv: CudaSlice<T>,
    up: CudaSlice<T>,
    k: i32,
}

/// A truncated SPIKE plan on the device: per-partition metadata (8 ints each, see
/// `kernels/tridiag.cu`), the partitions' factors and spike windows concatenated, and the
/// interface values of step (2).
struct DeviceSpike<T> {
    p: i32,
    meta: CudaSlice<i32>,
    lower: CudaSlice<T>,
    inv: CudaSlice<T>,
    up: CudaSlice<T>,
    v: CudaSlice<T>,
    w: CudaSlice<T>,
    bottom: CudaSlice<T>,
    top: CudaSlice<T>,
}

/// The solver of the halves along x on the device.
enum DeviceX<T> {
    Thomas(DeviceThomas<T>),
    Spike(Box<DeviceSpike<T>>),
}

/// Host arrays of Thomas factors in the device layout, appended to `lower`, `inv`, `up`;
/// returns `k`.
fn flatten_thomas<T: Real>(t: &Thomas<T>, lower: &mut Vec<T>, inv: &mut Vec<T>, up: &mut Vec<T>) -> i32 {
    let ((l, i, u), (lt, it, ut)) = (t.prefix(), t.tail());
    lower.extend_from_slice(l);
    inv.extend_from_slice(i);
    up.extend_from_slice(u);
    lower.push(lt);
    inv.push(it);
    up.push(ut);
    l.len() as i32
}

/// A one-dimensional launch of `count` threads in blocks of `bx`.
fn line(bx: u32, count: usize) -> LaunchConfig {
    LaunchConfig { grid_dim: ((count as u32).div_ceil(bx), 1, 1), block_dim: (bx, 1, 1), shared_mem_bytes: 0 }
}

/// An index the kernels take as `int`.
fn int(x: usize) -> i32 {
    i32::try_from(x).expect("sizes are validated to fit the kernels' int indices")
}

pub struct CudaImplicit<T: Real> {
    pub field: DeviceField<T>,
    kernels: Kernels<TridiagKernel>,
    /// Threads per block of the one-dimensional launches, and the block of the 2D ones.
    block: [u32; 2],
    /// The grid of the 2D explicit halves.
    grid_2d: (u32, u32, u32),
    nx: usize,
    ny: usize,
    method: Method,
    solver: TridiagonalSolver,
    partitions: usize,
    /// The `r` the uploaded factors belong to.
    r: Option<T>,
    x: Option<DeviceX<T>>,
    y: Option<DeviceThomas<T>>,
    /// Why SPIKE fell back to Thomas, if it did.
    pub fallback: Option<String>,
}

impl<T: Real> CudaImplicit<T> {
    pub fn new(
        gpu: &Gpu,
        opts: &GpuOptions,
        grid: &Grid,
        init: &[T],
        method: Method,
        (solver, partitions): (TridiagonalSolver, usize),
    ) -> Result<Self> {
        gpu.check_block(opts.block())?;
        let kernels = gpu.kernels::<TridiagKernel>(T::PRECISION, opts.fast_math)?;
        let [nx, ny] = grid.n;
        let grid_2d = if ny > 1 { gpu.grid_2d(nx, ny, opts.block())? } else { (1, 1, 1) };
        Ok(CudaImplicit {
            field: DeviceField::new(gpu, init)?,
            kernels,
            block: opts.block(),
            grid_2d,
            nx,
            ny,
            method,
            solver,
            partitions,
            r: None,
            x: None,
            y: None,
            fallback: None,
        })
    }

    /// One step with stability number `r` (the stage order of [`implicit::step`]),
    /// refactoring first where `r` changed (a step shortened to land on an output time).
    pub fn step(&mut self, r: T) -> Result<()> {
        self.factor(r)?;
        implicit::step(self, self.method, r)
    }

    /// Factor the halves' matrices for `r` on the host, as the CPU does, and upload the
    /// factors, unless they already are.
    fn factor(&mut self, r: T) -> Result<()> {
        if self.r == Some(r) {
            return Ok(());
        }
        let x = Factors::along_x(self.nx, r, self.solver, self.partitions)?;
        self.fallback = x.fallback().map(str::to_string);
        self.x = Some(match &x {
            Factors::Thomas(t) => DeviceX::Thomas(self.upload_thomas(t)?),
            Factors::Spike(plan) => match plan.thomas() {
                Some(t) => DeviceX::Thomas(self.upload_thomas(t)?),
                None => DeviceX::Spike(Box::new(self.upload_spike(plan)?)),
            },
        });
        self.y = if self.ny > 1 { Some(self.upload_thomas(&Thomas::new(&implicit::matrix(self.ny - 2, r))?)?) } else { None };
        self.r = Some(r);
        Ok(())
    }

    fn upload_thomas(&self, t: &Thomas<T>) -> Result<DeviceThomas<T>> {
        let (mut lower, mut inv, mut up) = (Vec::new(), Vec::new(), Vec::new());
        let k = flatten_thomas(t, &mut lower, &mut inv, &mut up);
        let h = |v: &[T]| self.field.stream.clone_htod(v).map_err(driver_err("factor upload"));
        Ok(DeviceThomas { lower: h(&lower)?, inv: h(&inv)?, up: h(&up)?, k })
    }

    fn upload_spike(&self, plan: &SpikePlan<T>) -> Result<DeviceSpike<T>> {
        let parts = plan.truncated().expect("a truncated plan");
        let (mut lower, mut inv, mut up, mut v, mut w) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut meta = Vec::with_capacity(8 * parts.len());
        for q in &parts {
            let (factors, voff, woff) = (int(lower.len()), int(v.len()), int(w.len()));
            let k = flatten_thomas(q.factors, &mut lower, &mut inv, &mut up);
            v.extend_from_slice(q.v);
            w.extend_from_slice(q.w);
            meta.extend([int(q.start), int(q.end), k, factors, voff, int(q.v.len()), woff, int(q.w.len())]);
        }
        // Empty windows still need a device allocation to pass.
        v.push(T::zero());
        w.push(T::zero());
        let h = |v: &[T]| self.field.stream.clone_htod(v).map_err(driver_err("factor upload"));
        let p = parts.len();
        Ok(DeviceSpike {
            p: int(p),
            meta: self.field.stream.clone_htod(&meta).map_err(driver_err("factor upload"))?,
            lower: h(&lower)?,
            inv: h(&inv)?,
            up: h(&up)?,
            v: h(&v)?,
            w: h(&w)?,
            bottom: self.field.stream.alloc_zeros::<T>(p).map_err(driver_err("allocation"))?,
            top: self.field.stream.alloc_zeros::<T>(p).map_err(driver_err("allocation"))?,
        })
    }

    fn func(&self, k: TridiagKernel) -> CudaFunction {
        self.kernels.get(k)
    }
}

/// Launch with the arguments pushed; the error names the kernel.
fn launch(b: &mut cudarc::driver::LaunchArgs<'_>, cfg: LaunchConfig, k: TridiagKernel) -> Result<()> {
    // SAFETY: every call site pushes the arguments of kernel `k`'s signature in
    // kernels/tridiag.cu, in order and with the same types (pointers, int = i32,
    // long long = i64, real = T), and the buffers cover the indices the kernel reads.
    unsafe { b.launch(cfg) }.map(|_| ()).map_err(|e| SimError::Run(format!("CUDA {} launch: {e:?}", k.name())))
}

impl<T: Real> ImplicitStages<T> for CudaImplicit<T> {
    fn explicit_half(&mut self, axis: Axis, flow: Flow, r: T) -> Result<()> {
        let (c0, h) = (T::one() - r, r * T::of(0.5));
        let (nx, ny) = (int(self.nx), int(self.ny));
        let (kernel, cfg) = if self.ny == 1 {
            (TridiagKernel::Explicit1d, line(self.block[0], self.nx))
        } else {
            let [bx, by] = self.block;
            (TridiagKernel::Explicit2d, LaunchConfig { grid_dim: self.grid_2d, block_dim: (bx, by, 1), shared_mem_bytes: 0 })
        };
        let func = self.func(kernel);
        let f = &mut self.field;
        let (src, dst) = match flow {
            Flow::TempToNext => (&f.temp, &mut f.next),
            Flow::NextToTemp => (&f.next, &mut f.temp),
        };
        let mut b = f.stream.launch_builder(&func);
        b.arg(src).arg(dst).arg(&nx);
        let stride = if axis == Axis::X { 1 } else { nx };
        if self.ny > 1 {
            b.arg(&ny).arg(&stride);
        }
        b.arg(&c0).arg(&h);
        launch(&mut b, cfg, kernel)
    }

    fn implicit_half(&mut self, axis: Axis, flow: Flow) -> Result<()> {
        let (nx, ny, bx) = (self.nx, self.ny, self.block[0]);
        let stream = self.field.stream.clone();
        let (rows, inter) = (self.func(TridiagKernel::ThomasRows), self.func(TridiagKernel::ThomasInterleaved));
        let spike = [TridiagKernel::SpikeLocal, TridiagKernel::SpikeInterfaces, TridiagKernel::SpikeCorrections];
        let spike_funcs = spike.map(|k| self.func(k));
        let d = match flow {
            Flow::TempToNext => &mut self.field.next,
            Flow::NextToTemp => &mut self.field.temp,
        };
        match axis {
            Axis::X => {
                // The interior of each row: one system per row from (1, j), rows 1..ny-1 (the
                // one row of a 1D field).
                let (first, count) = if ny == 1 { (1i64, 1usize) } else { (nx as i64 + 1, ny - 2) };
                let (stride, m) = (nx as i64, int(nx - 2));
                match self.x.as_mut().expect("factored before the step") {
                    DeviceX::Thomas(t) => {
                        let count_i = int(count);
                        let mut b = stream.launch_builder(&rows);
                        b.arg(d).arg(&first).arg(&stride).arg(&m).arg(&count_i).arg(&t.lower).arg(&t.inv).arg(&t.up).arg(&t.k);
                        launch(&mut b, line(bx, count), TridiagKernel::ThomasRows)
                    }
                    DeviceX::Spike(s) => {
                        if ny > 1 {
                            // heat2d takes no `tridiagonal:` key, so its rows are always Thomas's.
                            return Err(SimError::Run("truncated SPIKE runs on one system (heat1d) only".into()));
                        }
                        let p = s.p as usize;
                        let mut b = stream.launch_builder(&spike_funcs[0]);
                        b.arg(&mut *d).arg(&first).arg(&s.p).arg(&s.meta).arg(&s.lower).arg(&s.inv).arg(&s.up);
                        launch(&mut b, line(bx, p), spike[0])?;
                        // One partition has no interface: the local solve is the solution.
                        if p > 1 {
                            let mut b = stream.launch_builder(&spike_funcs[1]);
                            b.arg(&*d).arg(&first).arg(&s.p).arg(&s.meta).arg(&s.v).arg(&s.w).arg(&mut s.bottom).arg(&mut s.top);
                            launch(&mut b, line(bx, p - 1), spike[1])?;
                            let mut b = stream.launch_builder(&spike_funcs[2]);
                            b.arg(&mut *d).arg(&first).arg(&s.p).arg(&s.meta).arg(&s.v).arg(&s.w).arg(&s.bottom).arg(&s.top);
                            launch(&mut b, line(bx, p), spike[2])?;
                        }
                        Ok(())
                    }
                }
            }
            // The interior rows hold the column systems interleaved: unknown j of column i at
            // nx + (j - 1) nx + i. The boundary columns solve to their right-hand side 0.
            Axis::Y => {
                let t = self.y.as_ref().expect("factored before the step");
                let (first, m, width) = (nx as i64, int(ny - 2), int(nx));
                let mut b = stream.launch_builder(&inter);
                b.arg(d).arg(&first).arg(&m).arg(&width).arg(&t.lower).arg(&t.inv).arg(&t.up).arg(&t.k);
                launch(&mut b, line(bx, nx), TridiagKernel::ThomasInterleaved)
            }
        }
    }

    fn swap(&mut self) {
        self.field.swap();
    }
}
