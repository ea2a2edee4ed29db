//! q-LSKUM on a CUDA device: the kernels of `kernels/lskum.cu` driven through the shared
//! Runge–Kutta ([`rk::step`]) in the order of the CPU's [`super::scheme`] (local time step;
//! per stage q-variables, q-derivatives with the inner iterations, flux residual, update), on
//! the same (renumbered) cloud.
//!
//! Flux residual (`gpu.flux`): `fused`, one kernel for the four split stencils of a point, or
//! `split`, four kernels (x+, x-, y+, y-) adding to the residual in the CPU's order. Scratch
//! (`gpu.variant`): `l2` keeps a thread's least-squares sums in registers, `shared` in shared
//! memory at `thread + blockDim * slot` (no bank conflicts).
//!
//! Bits: every kernel evaluates the CPU's expressions in the CPU's order without FMA
//! contraction, and the error function is the CPU's algorithm (written out in the kernel
//! file), so under the CPU emulation of CUDA (glibc's exp, log, pow) the state is bitwise the
//! CPU's. On a real device CUDA's exp/log/pow differ from glibc's by up to 1-2 ulp, so the
//! state differs at round-off (relative 1e-15 per iteration, growing like the CPU's
//! sensitivity to round-off over a run).
//!
//! Reductions: after the last stage the squared density changes (8 bytes per point) are
//! copied to the host and summed in the file's order as on the CPU, so the residual norm has
//! the CPU's bits; the force coefficients are computed on the host from the state brought back
//! by [`super::Lskum`]'s `sync` (32 bytes per point, at output and history instants only).

use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT;
use cudarc::driver::{
    CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg,
};

use super::cloud::{Cloud, Csr};
use super::kernels::{Reconstruct, V4};
use super::scheme::{RESIDUAL_CHUNK, Settings, Timers};
use crate::cuda::{Flux, Gpu, GpuOptions, LskumKernel, Variant, driver_err};
use crate::error::{Result, SimError, input};
use crate::numerics::rk::{self, RkState, Stage};

/// `LkCloud` of kernels/lskum.cu: device addresses of the cloud's arrays.
#[repr(C)]
#[derive(Clone, Copy)]
struct DevCloud {
    x: u64,
    y: u64,
    nx: u64,
    ny: u64,
    min_dist: u64,
    flag: u64,
    conn_start: u64,
    conn: u64,
    xpos_start: u64,
    xpos: u64,
    xneg_start: u64,
    xneg: u64,
    ypos_start: u64,
    ypos: u64,
    yneg_start: u64,
    yneg: u64,
    n: i64,
}

// SAFETY: sixteen device addresses and a count, laid out as the kernel's struct.
unsafe impl DeviceRepr for DevCloud {}

/// `LkSet` of kernels/lskum.cu.
#[repr(C)]
#[derive(Clone, Copy)]
struct DevSet {
    cfl: f64,
    vl_const: f64,
    power: f64,
    winf: [f64; 4],
    reconstruct: i32,
}

// SAFETY: seven f64 and an i32 (padded to 64 bytes), laid out as the kernel's struct.
unsafe impl DeviceRepr for DevSet {}

/// Least-squares sums of one stencil (kernels/lskum.cu `LK_SUMS`), per thread in shared memory.
const SUMS: u32 = 11;

/// The cloud's arrays on the device (kept alive for the addresses in [`DevCloud`]).
struct Geometry {
    _reals: Vec<CudaSlice<f64>>,
    _flag: CudaSlice<i32>,
    _lists: Vec<CudaSlice<u32>>,
    dev: DevCloud,
}

impl Geometry {
    fn upload(stream: &Arc<CudaStream>, c: &Cloud) -> Result<Self> {
        let e = driver_err("upload");
        // The device address of a slice, which stays valid while the slice lives here.
        fn addr<T>(stream: &CudaStream, s: &CudaSlice<T>) -> u64 {
            s.device_ptr(stream).0
        }
        let reals: Vec<CudaSlice<f64>> = [&c.x, &c.y, &c.nx, &c.ny, &c.min_dist]
            .iter()
            .map(|v| stream.clone_htod(v.as_slice()))
            .collect::<std::result::Result<_, _>>()
            .map_err(&e)?;
        let flag: Vec<i32> = c.flag.iter().map(|&f| f as i32).collect();
        let flag = stream.clone_htod(&flag).map_err(&e)?;
        // An empty list still gets one (unread) entry: the driver allocates no zero bytes.
        let list = |v: &[u32]| if v.is_empty() { vec![0] } else { v.to_vec() };
        let csrs: [&Csr; 5] = [&c.conn, &c.xpos, &c.xneg, &c.ypos, &c.yneg];
        let mut lists = Vec::with_capacity(10);
        for csr in csrs {
            lists.push(stream.clone_htod(&list(&csr.start)).map_err(&e)?);
            lists.push(stream.clone_htod(&list(&csr.idx)).map_err(&e)?);
        }
        let l = |k: usize| addr(stream, &lists[k]);
        let dev = DevCloud {
            x: addr(stream, &reals[0]),
            y: addr(stream, &reals[1]),
            nx: addr(stream, &reals[2]),
            ny: addr(stream, &reals[3]),
            min_dist: addr(stream, &reals[4]),
            flag: addr(stream, &flag),
            conn_start: l(0),
            conn: l(1),
            xpos_start: l(2),
            xpos: l(3),
            xneg_start: l(4),
            xneg: l(5),
            ypos_start: l(6),
            ypos: l(7),
            yneg_start: l(8),
            yneg: l(9),
            n: c.len() as i64,
        };
        Ok(Geometry { _reals: reals, _flag: flag, _lists: lists, dev })
    }
}

/// Four-component per-point arrays as the kernels store them: component m of point i at
/// `m * n + i`.
fn to_soa(v: &[V4]) -> Vec<f64> {
    (0..4).flat_map(|m| v.iter().map(move |s| s[m])).collect()
}

fn from_soa(v: &[f64], n: usize) -> Vec<V4> {
    (0..n).map(|i| [v[i], v[n + i], v[2 * n + i], v[3 * n + i]]).collect()
}

/// The solver's arrays and kernels on one device.
pub struct LskumCuda {
    stream: Arc<CudaStream>,
    n: usize,
    cloud: Geometry,
    set: DevSet,
    cfg: LaunchConfig,
    /// The flux residual's launches in order, with their dynamic shared memory.
    flux: Vec<(CudaFunction, u32)>,
    timestep: CudaFunction,
    q_variables: CudaFunction,
    q_derivatives: CudaFunction,
    inner: CudaFunction,
    update: CudaFunction,
    inner_iterations: u32,
    prim: CudaSlice<f64>,
    prim_old: CudaSlice<f64>,
    q: CudaSlice<f64>,
    qx: CudaSlice<f64>,
    qy: CudaSlice<f64>,
    qx2: CudaSlice<f64>,
    qy2: CudaSlice<f64>,
    qmax: CudaSlice<f64>,
    qmin: CudaSlice<f64>,
    res: CudaSlice<f64>,
    dt: CudaSlice<f64>,
    dsq: CudaSlice<f64>,
    /// The point at each file position (the order of the residual norm's sums).
    file: CudaSlice<u32>,
    residual_partials: CudaFunction,
    /// The residual norm's partial sums, on the device and their host copy.
    partials: CudaSlice<f64>,
    partials_host: Vec<f64>,
    /// Events around each phase's launches, while phases are timed.
    events: Option<Vec<(Phase, CudaEvent, CudaEvent)>>,
}

/// A phase of an iteration, as [`Timers`] counts them.
#[derive(Clone, Copy)]
enum Phase {
    TimeStep,
    QVariables,
    QDerivatives,
    FluxResidual,
    Update,
}

impl LskumCuda {
    /// Threads per block of the per-point kernels.
    pub fn block(&self) -> u32 {
        self.cfg.block_dim.0
    }

    /// Upload `cloud` (in the solver's order) and the primitive state `prim`.
    pub fn new(gpu: &Arc<Gpu>, opts: &GpuOptions, cloud: &Cloud, prim: &[V4], set: &Settings) -> Result<Self> {
        let [bx, by] = opts.block();
        if by != 1 {
            return input(format!(
                "gpu.block: [{bx}, {by}]: the lskum kernels are one-dimensional (one thread per point); give [threads, 1]"
            ));
        }
        gpu.check_block(opts.block())?;
        let n = cloud.len();
        let k = gpu.kernels::<LskumKernel>(crate::real::Precision::F64, opts.fast_math)?;
        let stream = gpu.stream.clone();
        let shared = opts.variant == Variant::Shared;
        let flux_kernels: &[(LskumKernel, LskumKernel, u32)] = match opts.flux {
            Flux::Fused => &[(LskumKernel::FluxFused, LskumKernel::FluxFusedShared, 4 * SUMS)],
            Flux::Split => &[
                (LskumKernel::FluxGxPos, LskumKernel::FluxGxPosShared, SUMS),
                (LskumKernel::FluxGxNeg, LskumKernel::FluxGxNegShared, SUMS),
                (LskumKernel::FluxGyPos, LskumKernel::FluxGyPosShared, SUMS),
                (LskumKernel::FluxGyNeg, LskumKernel::FluxGyNegShared, SUMS),
            ],
        };
        use LskumKernel::{Inner, QDerivatives, QVariables, Timestep, Update};
        let per_point = [Timestep, QVariables, QDerivatives, Inner, Update].into_iter();
        let launched: Vec<_> = per_point.chain(flux_kernels.iter().map(|&(l2, sh, _)| if shared { sh } else { l2 })).collect();
        let opts = &k.fit_block(gpu, opts, &launched)?;
        let [bx, _] = opts.block();
        let mut flux = Vec::with_capacity(flux_kernels.len());
        for &(regs, smem, sums) in flux_kernels {
            if shared {
                let (f, bytes) = (k.get(smem), sums * 8 * bx);
                gpu.allow_shared(&f, bytes, opts.block())?;
                flux.push((f, bytes));
            } else {
                flux.push((k.get(regs), 0));
            }
        }
        let e = driver_err("upload");
        let zeros4 = || stream.alloc_zeros::<f64>(4 * n).map_err(driver_err("allocation"));
        let p = to_soa(prim);
        let grid = (n as u64).div_ceil(bx as u64);
        let chunks = n.div_ceil(RESIDUAL_CHUNK);
        if grid > i32::MAX as u64 {
            return input(format!("gpu.block: {n} points need {grid} blocks of {bx}; CUDA allows 2^31 - 1"));
        }
        Ok(LskumCuda {
            cloud: Geometry::upload(&stream, cloud)?,
            set: DevSet {
                cfl: set.cfl,
                vl_const: set.vl_const,
                power: set.power,
                winf: set.winf,
                reconstruct: match set.reconstruct {
                    Reconstruct::Venkat => 0,
                    Reconstruct::MinMax => 1,
                    Reconstruct::None => 2,
                },
            },
            cfg: LaunchConfig { grid_dim: (grid as u32, 1, 1), block_dim: (bx, 1, 1), shared_mem_bytes: 0 },
            flux,
            timestep: k.get(LskumKernel::Timestep),
            q_variables: k.get(LskumKernel::QVariables),
            q_derivatives: k.get(LskumKernel::QDerivatives),
            inner: k.get(LskumKernel::Inner),
            update: k.get(LskumKernel::Update),
            inner_iterations: set.inner_iterations,
            prim: stream.clone_htod(&p).map_err(&e)?,
            prim_old: stream.clone_htod(&p).map_err(&e)?,
            q: zeros4()?,
            qx: zeros4()?,
            qy: zeros4()?,
            qx2: zeros4()?,
            qy2: zeros4()?,
            qmax: zeros4()?,
            qmin: zeros4()?,
            res: zeros4()?,
            dt: stream.alloc_zeros::<f64>(n).map_err(driver_err("allocation"))?,
            dsq: stream.alloc_zeros::<f64>(n).map_err(driver_err("allocation"))?,
            file: stream.clone_htod(&cloud.file_order().map(|i| i as u32).collect::<Vec<_>>()).map_err(&e)?,
            residual_partials: k.get(LskumKernel::ResidualPartials),
            partials: stream.alloc_zeros::<f64>(chunks).map_err(driver_err("allocation"))?,
            partials_host: vec![0.0; chunks],
            events: None,
            n,
            stream,
        })
    }

    /// Time the phases of the following iterations with CUDA events (each event pair costs
    /// a little; `sim bench` asks for it).
    pub fn time_phases(&mut self) {
        self.events = Some(Vec::new());
    }

    /// One iteration ([`rk::step`] of `scheme`); returns the partial sums of the last stage's
    /// squared density changes ([`super::scheme::residual_partials`]). Timed phases add their
    /// device time to `t`.
    pub fn iterate(&mut self, scheme: rk::Scheme, t: &mut Timers) -> Result<&[f64]> {
        rk::step(self, scheme)?;
        let (n, chunk, chunks) = (self.n as i64, RESIDUAL_CHUNK as i64, self.partials_host.len());
        let mut b = self.stream.launch_builder(&self.residual_partials);
        b.arg(&self.file).arg(&self.dsq).arg(&n).arg(&chunk).arg(&mut self.partials);
        let cfg = LaunchConfig { grid_dim: ((chunks as u32).div_ceil(128), 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: matches lskum_residual_partials(file, dsq, n, chunk, partials): n file
        // positions and dsq values, n / chunk (rounded up) partials, one thread each.
        unsafe { b.launch(cfg) }.map_err(driver_err("residual launch"))?;
        self.stream.memcpy_dtoh(&self.partials, &mut self.partials_host).map_err(driver_err("download"))?;
        // The copy waited for the stream: every event has happened.
        for (phase, start, end) in self.events.iter_mut().flat_map(|e| e.drain(..)) {
            let s = start.elapsed_ms(&end).map_err(driver_err("event timing"))? as f64 / 1e3;
            match phase {
                Phase::TimeStep => t.timestep += s,
                Phase::QVariables => t.q_variables += s,
                Phase::QDerivatives => t.q_derivatives += s,
                Phase::FluxResidual => t.flux_residual += s,
                Phase::Update => t.state_update += s,
            }
        }
        Ok(&self.partials_host)
    }

    /// Run `launch` as `phase`, between two events while phases are timed.
    fn timed(&mut self, phase: Phase, launch: impl FnOnce(&mut Self) -> Result<()>) -> Result<()> {
        let event = |s: &CudaStream| s.record_event(Some(CU_EVENT_DEFAULT)).map_err(driver_err("event"));
        let start = if self.events.is_some() { Some(event(&self.stream)?) } else { None };
        launch(self)?;
        if let (Some(start), Some(events)) = (start, self.events.as_mut()) {
            events.push((phase, start, event(&self.stream)?));
        }
        Ok(())
    }

    /// The primitive state, in the solver's order.
    pub fn prim(&self) -> Result<Vec<V4>> {
        let mut v = vec![0.0; 4 * self.n];
        self.stream.memcpy_dtoh(&self.prim, &mut v).map_err(driver_err("download"))?;
        Ok(from_soa(&v, self.n))
    }

    /// Replace the primitive state (solver's order).
    pub fn set_prim(&mut self, prim: &[V4]) -> Result<()> {
        if prim.len() != self.n {
            return Err(SimError::Run(format!("restoring {} points into a device cloud of {}", prim.len(), self.n)));
        }
        self.stream.memcpy_htod(&to_soa(prim), &mut self.prim).map_err(driver_err("upload"))
    }

    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(driver_err("synchronize"))
    }
}

impl RkState for LskumCuda {
    /// Saves the state and computes the local time steps.
    fn begin(&mut self) -> Result<()> {
        self.timed(Phase::TimeStep, |d| {
            d.stream.memcpy_dtod(&d.prim, &mut d.prim_old).map_err(driver_err("device copy"))?;
            let mut b = d.stream.launch_builder(&d.timestep);
            b.arg(&d.cloud.dev).arg(&d.set).arg(&d.prim).arg(&mut d.dt);
            // SAFETY: matches lskum_timestep(c, set, prim, dt): the cloud's arrays and 4n prim, n dt.
            unsafe { b.launch(d.cfg) }.map(drop).map_err(driver_err("time step launch"))
        })
    }

    /// q-variables, q-derivatives (with the inner iterations) and flux residual.
    fn residual(&mut self, _stage: usize) -> Result<()> {
        self.timed(Phase::QVariables, |d| {
            let n = d.n as i64;
            let mut b = d.stream.launch_builder(&d.q_variables);
            b.arg(&d.prim).arg(&mut d.q).arg(&n);
            // SAFETY: matches lskum_q_variables(prim, q, n), both 4n values.
            unsafe { b.launch(d.cfg) }.map(drop).map_err(driver_err("q-variables launch"))
        })?;
        self.timed(Phase::QDerivatives, |d| {
            let (c, set, cfg, s) = (&d.cloud.dev, &d.set, d.cfg, &d.stream);
            let mut b = s.launch_builder(&d.q_derivatives);
            b.arg(c).arg(set).arg(&d.q).arg(&mut d.qx).arg(&mut d.qy).arg(&mut d.qmax).arg(&mut d.qmin);
            // SAFETY: matches lskum_q_derivatives(c, set, q, qx, qy, qmax, qmin), each 4n values.
            unsafe { b.launch(cfg) }.map_err(driver_err("q-derivatives launch"))?;
            for _ in 0..d.inner_iterations {
                let mut b = s.launch_builder(&d.inner);
                b.arg(c).arg(set).arg(&d.q).arg(&d.qx).arg(&d.qy).arg(&mut d.qx2).arg(&mut d.qy2);
                // SAFETY: matches lskum_inner(c, set, q, qx, qy, qx2, qy2), each 4n values.
                unsafe { b.launch(cfg) }.map_err(driver_err("inner iteration launch"))?;
                std::mem::swap(&mut d.qx, &mut d.qx2);
                std::mem::swap(&mut d.qy, &mut d.qy2);
            }
            Ok(())
        })?;
        self.timed(Phase::FluxResidual, |d| {
            let (c, set, cfg) = (&d.cloud.dev, &d.set, d.cfg);
            for (f, bytes) in &d.flux {
                let mut b = d.stream.launch_builder(f);
                b.arg(c).arg(set).arg(&d.q).arg(&d.qx).arg(&d.qy).arg(&d.qmax).arg(&d.qmin);
                b.arg(&mut d.res);
                // SAFETY: matches lskum_flux_*(c, set, q, qx, qy, qmax, qmin, res), each 4n
                // values; the shared variants get their scratch of `bytes` (raised past 48 KiB
                // at build).
                unsafe { b.launch(LaunchConfig { shared_mem_bytes: *bytes, ..cfg }) }
                    .map_err(driver_err("flux residual launch"))?;
            }
            Ok(())
        })
    }

    fn update(&mut self, stage: &Stage) -> Result<()> {
        let (blend, a, b_) = match stage.blend {
            None => (0i32, 0.0, 0.0),
            Some((a, b)) => (1, a, b),
        };
        self.timed(Phase::Update, |d| {
            let mut b = d.stream.launch_builder(&d.update);
            b.arg(&d.cloud.dev).arg(&d.set).arg(&mut d.prim).arg(&d.prim_old).arg(&d.res).arg(&d.dt);
            b.arg(&mut d.dsq).arg(&stage.c).arg(&blend).arg(&a).arg(&b_);
            // SAFETY: matches lskum_update(c, set, prim, prim_old, res, dt, dsq, sc, blend, sa,
            // sb): 4n prim, prim_old and res, n dt and dsq.
            unsafe { b.launch(d.cfg) }.map(drop).map_err(driver_err("update launch"))
        })
    }
}
