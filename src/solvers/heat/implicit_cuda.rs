//! The implicit heat steps on a CUDA device: the [`ImplicitStages`] of [`implicit::step`]
//! (the function that orders the CPU stages too) from `kernels/tridiag.cu`, with the
//! factorisations the CPU computes ([`Factors::along_x`], [`Thomas::new`]) uploaded.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use super::cuda::DeviceField;
use super::implicit::{self, Axis, Factors, Flow, ImplicitStages, Method, TridiagonalSolver};
use crate::cuda::{Gpu, GpuOptions, Kernel, Kernels, TridiagKernel, driver_err};
use crate::error::{Result, SimError};
use crate::numerics::tridiag::{SpikePlan, Thomas};
use crate::real::Real;
use crate::solver::Grid;

/// Thomas factors on the device: `lower`, `inv`, `up` with `k + 1` entries each, the tail
/// at index `k` (the layout `kernels/tridiag.cu` reads).
pub(crate) struct DeviceThomas<T> {
    lower: CudaSlice<T>,
    inv: CudaSlice<T>,
    up: CudaSlice<T>,
    k: i32,
}

/// A truncated SPIKE plan on the device: per-partition metadata (8 ints each, see
/// `kernels/tridiag.cu`), the partitions' factors and spike windows concatenated (once for
/// partitions that share them), and the interface values of step (2) (the line kernels: the
/// partitions' end values F^t, F^b).
pub(crate) struct DeviceSpike<T> {
    p: i32,
    /// Systems solved together, interleaved.
    width: i32,
    meta: CudaSlice<i32>,
    lower: CudaSlice<T>,
    inv: CudaSlice<T>,
    up: CudaSlice<T>,
    v: CudaSlice<T>,
    w: CudaSlice<T>,
    bottom: CudaSlice<T>,
    top: CudaSlice<T>,
    /// The one-pass kernels and their launch, where every partition fits a thread's registers.
    one_pass: Option<OnePass>,
}

/// How [`DeviceSpike::solve`] runs in one pass (see [`one_pass_launch`]).
#[derive(Clone, Copy)]
enum OnePass {
    /// Interleaved systems: `spike_fused*`, `systems` of them per block.
    Batch { kernel: TridiagKernel, cfg: LaunchConfig, systems: i32 },
    /// One system: `spike_line*` on blocks of `per_block` partitions, then `spike_line_edges`.
    Line { kernel: TridiagKernel, cfg: LaunchConfig, per_block: i32, edges: LaunchConfig },
}

/// The solver of the halves along x on the device.
enum DeviceX<T> {
    Thomas(DeviceThomas<T>),
    Spike(Box<DeviceSpike<T>>),
}

/// Host arrays of Thomas factors in the device layout, appended to `lower`, `inv`, `up`:
/// the k stored rows, then the tail repeated until `rows` entries are stored (at least once),
/// so that row i < rows may read entry i (the one-pass SPIKE kernels); rows from k on read
/// the tail either way, so the kernels that read entry min(i, k) take the same arrays.
/// Returns `k`.
fn flatten_thomas<T: Real>(t: &Thomas<T>, rows: usize, lower: &mut Vec<T>, inv: &mut Vec<T>, up: &mut Vec<T>) -> i32 {
    let ((l, i, u), (lt, it, ut)) = (t.prefix(), t.tail());
    let tail = rows.saturating_sub(l.len()).max(1);
    lower.extend(l.iter().copied().chain(std::iter::repeat_n(lt, tail)));
    inv.extend(i.iter().copied().chain(std::iter::repeat_n(it, tail)));
    up.extend(u.iter().copied().chain(std::iter::repeat_n(ut, tail)));
    l.len() as i32
}

/// Threads per block of the batched Thomas kernels, one thread per system: one warp, so that
/// a batch of a few thousand systems spreads over every multiprocessor (see the Thomas
/// kernels in kernels/tridiag.cu; on an H200 up to 6 times faster than blocks of 512).
const THOMAS_BLOCK: u32 = 32;

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
        // The first fallback of the run stays (a shortened last step may well be truncated).
        self.fallback = self.fallback.take().or_else(|| x.fallback().map(str::to_string));
        self.x = Some(match &x {
            Factors::Thomas(t) => DeviceX::Thomas(DeviceThomas::upload(&self.field.stream, t)?),
            Factors::Spike(plan) => match plan.thomas() {
                Some(t) => DeviceX::Thomas(DeviceThomas::upload(&self.field.stream, t)?),
                None => DeviceX::Spike(Box::new(DeviceSpike::upload(&self.kernels, &self.field.stream, plan, 1)?)),
            },
        });
        self.y = if self.ny > 1 { Some(DeviceThomas::upload(&self.field.stream, &Thomas::new(&implicit::matrix(self.ny - 2, r))?)?) } else { None };
        self.r = Some(r);
        Ok(())
    }

    fn func(&self, k: TridiagKernel) -> CudaFunction {
        self.kernels.get(k)
    }
}

impl<T: Real> DeviceThomas<T> {
    pub(crate) fn upload(stream: &Arc<CudaStream>, t: &Thomas<T>) -> Result<Self> {
        let (mut lower, mut inv, mut up) = (Vec::new(), Vec::new(), Vec::new());
        let k = flatten_thomas(t, 0, &mut lower, &mut inv, &mut up);
        let h = |v: &[T]| stream.clone_htod(v).map_err(driver_err("factor upload"));
        Ok(DeviceThomas { lower: h(&lower)?, inv: h(&inv)?, up: h(&up)?, k })
    }

    /// `count` systems of `m` unknowns one after another, unknown i of system s at
    /// `d[first + s stride + i]`; one thread per system.
    pub(crate) fn solve_rows(
        &self,
        kernels: &Kernels<TridiagKernel>,
        stream: &CudaStream,
        d: &mut CudaSlice<T>,
        (first, stride): (i64, i64),
        m: usize,
        count: usize,
    ) -> Result<()> {
        let (m, count_i) = (int(m), int(count));
        let f = kernels.get(TridiagKernel::ThomasRows);
        let mut b = stream.launch_builder(&f);
        b.arg(d).arg(&first).arg(&stride).arg(&m).arg(&count_i).arg(&self.lower).arg(&self.inv).arg(&self.up).arg(&self.k);
        launch(&mut b, line(THOMAS_BLOCK, count), TridiagKernel::ThomasRows)
    }

    /// `width` systems of `m` unknowns interleaved, unknown i of system s at
    /// `d[first + i width + s]`; one thread per system.
    pub(crate) fn solve_interleaved(
        &self,
        kernels: &Kernels<TridiagKernel>,
        stream: &CudaStream,
        d: &mut CudaSlice<T>,
        first: i64,
        m: usize,
        width: usize,
    ) -> Result<()> {
        let (m, width_i) = (int(m), int(width));
        let f = kernels.get(TridiagKernel::ThomasInterleaved);
        let mut b = stream.launch_builder(&f);
        b.arg(d).arg(&first).arg(&m).arg(&width_i).arg(&self.lower).arg(&self.inv).arg(&self.up).arg(&self.k);
        launch(&mut b, line(THOMAS_BLOCK, width), TridiagKernel::ThomasInterleaved)
    }
}

impl<T: Real> DeviceSpike<T> {
    /// The plan for `width` interleaved systems of its matrix (1: one system).
    pub(crate) fn upload(kernels: &Kernels<TridiagKernel>, stream: &Arc<CudaStream>, plan: &SpikePlan<T>, width: usize) -> Result<Self> {
        let parts = plan.truncated().expect("a truncated plan");
        let (mut lower, mut inv, mut up, mut v, mut w) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut meta = Vec::with_capacity(8 * parts.len());
        let rows = parts.iter().map(|q| q.end - q.start).max().unwrap_or(0);
        // Partitions that share their factors and spikes (a constant matrix's) share them on
        // the device too: uploaded once, read from the cache. The layout of the one-pass
        // kernels (kernels/tridiag.cu): factors padded to `rows` entries, and each window
        // inside its partition's length of zeros, V's at the end and W's at the start (the
        // offsets in `meta` name the windows themselves, as the staged kernels read them).
        let mut uploaded = std::collections::HashMap::new();
        for q in &parts {
            let m = q.end - q.start;
            assert!(q.v.len() <= m && q.w.len() <= m, "a spike window is longer than its partition");
            let key = (q.factors as *const Thomas<T>, q.v.as_ptr(), q.w.as_ptr(), m);
            let &mut (k, factors, voff, woff) = uploaded.entry(key).or_insert_with(|| {
                let factors = int(lower.len());
                let k = flatten_thomas(q.factors, rows, &mut lower, &mut inv, &mut up);
                v.resize(v.len() + m - q.v.len(), T::zero());
                let voff = int(v.len());
                v.extend_from_slice(q.v);
                let woff = int(w.len());
                w.extend_from_slice(q.w);
                w.resize(w.len() + m - q.w.len(), T::zero());
                (k, factors, voff, woff)
            });
            meta.extend([int(q.start), int(q.end), k, factors, voff, int(q.v.len()), woff, int(q.w.len())]);
        }
        // Empty windows still need a device allocation to pass.
        v.push(T::zero());
        w.push(T::zero());
        let h = |v: &[T]| stream.clone_htod(v).map_err(driver_err("factor upload"));
        let p = parts.len();
        let one_pass = one_pass_launch::<T>(kernels, p, rows, width)?;
        Ok(DeviceSpike {
            p: int(p),
            width: int(width),
            meta: stream.clone_htod(&meta).map_err(driver_err("factor upload"))?,
            lower: h(&lower)?,
            inv: h(&inv)?,
            up: h(&up)?,
            v: h(&v)?,
            w: h(&w)?,
            bottom: stream.alloc_zeros::<T>(p * width).map_err(driver_err("allocation"))?,
            top: stream.alloc_zeros::<T>(p * width).map_err(driver_err("allocation"))?,
            one_pass,
        })
    }

    /// Whether [`DeviceSpike::solve`] runs in one pass.
    pub(crate) fn is_fused(&self) -> bool {
        self.one_pass.is_some()
    }

    /// The systems at `d[first..]` (row i of system s at `first + i width + s`): in one pass
    /// where the partitions fit the registers (`spike_fused*`, or for one system
    /// `spike_line*` and `spike_line_edges`), else by [`DeviceSpike::solve_staged`].
    pub(crate) fn solve(
        &mut self,
        kernels: &Kernels<TridiagKernel>,
        stream: &CudaStream,
        d: &mut CudaSlice<T>,
        first: i64,
        bx: u32,
    ) -> Result<()> {
        match self.one_pass {
            None => self.solve_staged(kernels, stream, d, first, bx),
            Some(OnePass::Batch { kernel, cfg, systems }) => {
                let f = kernels.get(kernel);
                let mut b = stream.launch_builder(&f);
                b.arg(d).arg(&first).arg(&self.p).arg(&self.width).arg(&systems).arg(&self.meta);
                b.arg(&self.lower).arg(&self.inv).arg(&self.up).arg(&self.v).arg(&self.w);
                launch(&mut b, cfg, kernel)
            }
            Some(OnePass::Line { kernel, cfg, per_block, edges }) => {
                let f = kernels.get(kernel);
                let mut b = stream.launch_builder(&f);
                b.arg(&mut *d).arg(&first).arg(&self.p).arg(&self.meta);
                b.arg(&self.lower).arg(&self.inv).arg(&self.up).arg(&self.v).arg(&self.w).arg(&mut self.top).arg(&mut self.bottom);
                launch(&mut b, cfg, kernel)?;
                let f = kernels.get(TridiagKernel::SpikeLineEdges);
                let mut b = stream.launch_builder(&f);
                b.arg(d).arg(&first).arg(&self.p).arg(&per_block).arg(&self.meta).arg(&self.v).arg(&self.w).arg(&self.top).arg(&self.bottom);
                launch(&mut b, edges, TridiagKernel::SpikeLineEdges)
            }
        }
    }

    /// The local solves, the interfaces' 2 x 2 systems and the corrections as three kernels
    /// (one thread per partition or interface of each system, blocks of `bx`).
    pub(crate) fn solve_staged(
        &mut self,
        kernels: &Kernels<TridiagKernel>,
        stream: &CudaStream,
        d: &mut CudaSlice<T>,
        first: i64,
        bx: u32,
    ) -> Result<()> {
        let spike = [TridiagKernel::SpikeLocal, TridiagKernel::SpikeInterfaces, TridiagKernel::SpikeCorrections];
        let funcs = spike.map(|k| kernels.get(k));
        let (p, width) = (self.p as usize, self.width as usize);
        let mut b = stream.launch_builder(&funcs[0]);
        b.arg(&mut *d).arg(&first).arg(&self.p).arg(&self.width).arg(&self.meta).arg(&self.lower).arg(&self.inv).arg(&self.up);
        launch(&mut b, line(bx, p * width), spike[0])?;
        // One partition has no interface: the local solve is the solution.
        if p > 1 {
            let mut b = stream.launch_builder(&funcs[1]);
            b.arg(&*d).arg(&first).arg(&self.p).arg(&self.width).arg(&self.meta).arg(&self.v).arg(&self.w);
            b.arg(&mut self.bottom).arg(&mut self.top);
            launch(&mut b, line(bx, (p - 1) * width), spike[1])?;
            let mut b = stream.launch_builder(&funcs[2]);
            b.arg(&mut *d).arg(&first).arg(&self.p).arg(&self.width).arg(&self.meta).arg(&self.v).arg(&self.w);
            b.arg(&self.bottom).arg(&self.top);
            launch(&mut b, line(bx, p * width), spike[2])?;
        }
        Ok(())
    }
}

/// The one-pass launch for `p` partitions of at most `rows` rows of `width` interleaved systems:
/// the kernels whose registers hold `rows`; `None` where the partitions are longer than 128
/// rows (f64: 64) or one system's partitions exceed a block of `spike_fused*`. Interleaved
/// systems: as many per block as fill a 32-byte memory sector where the kernel's thread limit
/// allows. One system: as many partitions per block as the line kernels' 32 KiB of shared rows
/// hold.
fn one_pass_launch<T: Real>(kernels: &Kernels<TridiagKernel>, p: usize, rows: usize, width: usize) -> Result<Option<OnePass>> {
    use TridiagKernel::*;
    use cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK as MOST;
    let size = std::mem::size_of::<T>();
    let (r, batch, line_kernel) = match (rows, size) {
        (0..=32, _) => (32, SpikeFused32, SpikeLine32),
        (33..=64, _) => (64, SpikeFused64, SpikeLine64),
        // 128 f64 rows do not fit the 255 registers of a thread.
        (65..=128, 4) => (128, SpikeFused128, SpikeLine128),
        _ => return Ok(None),
    };
    let kernel = if width == 1 { line_kernel } else { batch };
    let most = kernels.get(kernel).get_attribute(MOST).map_err(driver_err("reading a kernel's thread limit"))? as usize;
    if width == 1 {
        // SPIKE_LINE_THREADS of kernels/tridiag.cu.
        let per_block = (32768 / (r * size)).min(most).min(p);
        let blocks = p.div_ceil(per_block);
        // F^t, F^b and the rows with a pad every 32 (`padded`).
        let tile = per_block * rows;
        let cfg = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (per_block as u32, 1, 1),
            shared_mem_bytes: ((2 * per_block + tile + tile / 32 + 1) * size) as u32,
        };
        return Ok(Some(OnePass::Line { kernel, cfg, per_block: int(per_block), edges: line(128, 2 * blocks) }));
    }
    // Fewer systems per block (2 blocks per multiprocessor) measured 25-45 % slower on an
    // H100 (a quarter of them: up to 2.5 times).
    let systems = (32 / size).min(most / p).min(width);
    if systems == 0 {
        return Ok(None);
    }
    let cfg = LaunchConfig {
        grid_dim: (width.div_ceil(systems) as u32, 1, 1),
        block_dim: ((p * systems) as u32, 1, 1),
        shared_mem_bytes: (2 * p * systems * size) as u32,
    };
    Ok(Some(OnePass::Batch { kernel, cfg, systems: int(systems) }))
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
        let d = match flow {
            Flow::TempToNext => &mut self.field.next,
            Flow::NextToTemp => &mut self.field.temp,
        };
        match axis {
            Axis::X => {
                // The interior of each row: one system per row from (1, j), rows 1..ny-1 (the
                // one row of a 1D field).
                let (first, count) = if ny == 1 { (1i64, 1usize) } else { (nx as i64 + 1, ny - 2) };
                match self.x.as_mut().expect("factored before the step") {
                    DeviceX::Thomas(t) => t.solve_rows(&self.kernels, &stream, d, (first, nx as i64), nx - 2, count),
                    // heat2d takes no `tridiagonal:` key, so its rows are always Thomas's.
                    DeviceX::Spike(_) if ny > 1 => Err(SimError::Run("truncated SPIKE runs on one system (heat1d) only".into())),
                    DeviceX::Spike(s) => s.solve(&self.kernels, &stream, d, first, bx),
                }
            }
            // The interior rows hold the column systems interleaved: unknown j of column i at
            // nx + (j - 1) nx + i. The boundary columns solve to their right-hand side 0.
            Axis::Y => {
                let t = self.y.as_ref().expect("factored before the step");
                t.solve_interleaved(&self.kernels, &stream, d, nx as i64, ny - 2, nx)
            }
        }
    }

    fn swap(&mut self) {
        self.field.swap();
    }
}
