//! CDKLM16 and KP07 on a CUDA device: the stage kernels of `kernels/shallow_water_cdklm16.cu`
//! and `kernels/shallow_water_kp07.cu` with the ghost fill, sponges and CFL reduction of
//! `kernels/shallow_water_fv.cuh`, driven by the shared [`rk::step`] in the stage order of the
//! CPU's [`Fv`], bitwise equal to it.
//!
//! The state lives on the device in the CPU's three rotating buffer sets, rotated the same
//! way, and only the interior is written by a stage (the ghosts by the fill), so that even the
//! never-read corner ghosts carry the CPU's bits. The CPU scheme is built first for the
//! sampled initial state, the bathymetry (Bi, Bm), the Coriolis rows and the sponge exterior,
//! then uploaded.
//!
//! Host round trips: a step only queues launches (the clock, one stage kernel, the sponge
//! and fill passes per stage). The kernels read the step's length from a device clock
//! (`fv_clock`): a fixed or host-chosen step is written there by the clock kernel; adaptive
//! steps ([`Scheme::steps_landed`]) are chosen there too, from the two-pass CFL reduction
//! and the landing instants, so that a series of them ends with a single download of the
//! clock (steps taken, time, last length). [`Scheme::dt_limit`] downloads the reduced limit
//! for the host (at the start, after a restart, and for host-driven adaptive steps). Fields
//! come back only for output, diagnostics, guard checks and checkpoints ([`Scheme::fetch`]).

use std::cell::RefCell;
use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use crate::cuda::{Cdklm16Kernel, Gpu, GpuOptions, Kernel, Kp07Kernel, Variant, driver_err};
use crate::error::{Result, SimError};
use crate::numerics::rk::{self, RkState, Stage};
use crate::real::Real;
use crate::solver::Place;

use super::fv::{CELLS, Fv, Operator, Sets, split};
use super::part::Halo;
use super::grid::{Field, Physics, Side, SpongeKind};
use super::scheme::{Cells, Initial, Landed, Scheme};
use crate::run::schedule::{Landing, ROUND, TOL};

/// Threads per block of the boundary passes and of the dt reduction (a power of two).
const LINE: u32 = 256;
/// Most blocks of the first pass of the dt reduction.
const DT_BLOCKS: usize = 1024;
/// The device clock of `fv_clock` (kernels/shallow_water_fv.cuh): its length and the
/// entries the host reads.
const CLOCK: usize = 7;
const CLOCK_T: usize = 0;
const CLOCK_DT: usize = 1;
const CLOCK_STEPS: usize = 3;
const CLOCK_PROPOSAL: usize = 4;
const CLOCK_FAILED: usize = 6;

/// The kernels of a finite-volume kernel file, by role.
pub(super) trait FvKernels: Kernel {
    const STAGE_L2: Self;
    const STAGE_SHARED: Self;
    const PERIODIC_Y: Self;
    const PERIODIC_X: Self;
    const WALLS: Self;
    const SPONGE_ROWS: Self;
    const SPONGE_COLS: Self;
    const DT_BLOCKS: Self;
    const DT_FINAL: Self;
    const CLOCK: Self;
    /// Arrays per entry of the shared stage kernel's tile (η, hu, hv, and u, v for CDKLM16).
    const TILES: u32;
}

macro_rules! fv_kernels {
    ($ty:ident, $tiles:literal) => {
        impl FvKernels for $ty {
            const STAGE_L2: Self = $ty::StageL2;
            const STAGE_SHARED: Self = $ty::StageShared;
            const PERIODIC_Y: Self = $ty::PeriodicY;
            const PERIODIC_X: Self = $ty::PeriodicX;
            const WALLS: Self = $ty::Walls;
            const SPONGE_ROWS: Self = $ty::SpongeRows;
            const SPONGE_COLS: Self = $ty::SpongeCols;
            const DT_BLOCKS: Self = $ty::DtBlocks;
            const DT_FINAL: Self = $ty::DtFinal;
            const CLOCK: Self = $ty::Clock;
            const TILES: u32 = $tiles;
        }
    };
}
fv_kernels!(Cdklm16Kernel, 5);
fv_kernels!(Kp07Kernel, 3);

/// Dynamic shared memory of the shared stage kernel: the tiles with their halo of two, the x
/// face fluxes (`by` rows of `bx + 1`) and the y face fluxes (`by + 1` rows of `bx`).
fn stage_shared_bytes<T: Real>(tiles: u32, [bx, by]: [u32; 2]) -> u64 {
    let (bx, by) = (bx as u64, by as u64);
    let entries = tiles as u64 * (bx + 4) * (by + 4) + 3 * by * (bx + 1) + 3 * (by + 1) * bx;
    entries * std::mem::size_of::<T>() as u64
}

struct Functions {
    stage: CudaFunction,
    periodic_y: CudaFunction,
    periodic_x: CudaFunction,
    walls: CudaFunction,
    sponge_rows: CudaFunction,
    sponge_cols: CudaFunction,
    dt_blocks: CudaFunction,
    dt_final: CudaFunction,
    clock: CudaFunction,
}

/// The sponge sides: cells per side (N, E, S, W; 0 for none), the bits of the linear ones
/// (1 N, 2 E, 4 S, 8 W), and per sponge row its f64 weight (sponge.rs: the relaxation weight
/// `a_j`, or `j / cells` for a linear sponge).
fn sponge_layout(p: &Physics) -> ([i32; 4], i32, Vec<f64>) {
    let s = p.sides;
    let (mut cells, mut linear, mut weights) = ([0; 4], 0, vec![]);
    for (n, side) in [s.north, s.east, s.south, s.west].into_iter().enumerate() {
        if let Side::Sponge { cells: w, kind } = side {
            cells[n] = w as i32;
            for j in 0..w {
                weights.push(super::sponge::weight(kind, j, w));
            }
            if kind == SpongeKind::Linear {
                linear |= 1 << n;
            }
        }
    }
    (cells, linear, weights)
}

/// A finite-volume scheme on a CUDA device.
pub struct FvCuda<T: Real> {
    p: Physics,
    rk: rk::Scheme,
    stream: Arc<CudaStream>,
    k: Functions,
    cfg: LaunchConfig,
    /// The CPU's three buffer sets (η, hu, hv each), rotated as there.
    bufs: [[CudaSlice<T>; 3]; 3],
    sets: Sets,
    /// The device clock: the step's length and whether it runs, read by every kernel of a
    /// step (`fv_clock`).
    clock: CudaSlice<f64>,
    exterior: Option<[CudaSlice<T>; 3]>,
    sponge_cells: [i32; 4],
    sponge_linear: i32,
    weights: CudaSlice<f64>,
    bi: CudaSlice<T>,
    bm: CudaSlice<T>,
    f: CudaSlice<T>,
    partial: CudaSlice<T>,
    dt_out: CudaSlice<T>,
    dt_grid: u32,
    /// Interior Bm, for [`Scheme::cells`].
    depth: Vec<T>,
    /// Host copies of the state for [`Scheme::arrays_mut`].
    staging: [Field<T>; 3],
    /// The first device failure, reported by [`Scheme::failure`].
    error: RefCell<Option<SimError>>,
    /// The ghost exchange with the neighbouring ranks of a decomposed run (through `staging`).
    halo: Option<Halo>,
}

impl<T: Real> FvCuda<T> {
    /// The scheme of kernel file `K` with the CPU operator `op` (which samples the initial
    /// state exactly as the CPU scheme does), on `gpu` with the block shape and variant of
    /// `opts`.
    pub(super) fn new<K: FvKernels, O: Operator<T>>(
        p: &Physics,
        init: &Initial,
        rk: rk::Scheme,
        op: O,
        gpu: &Gpu,
        opts: &GpuOptions,
        halo: Option<Halo>,
    ) -> Result<Self> {
        opts.validate()?;
        gpu.check_block(opts.block())?;
        let cpu = Fv::with_halo(p, init, rk, op, halo.clone());
        let kernels = gpu.kernels::<K>(T::PRECISION, opts.fast_math)?;
        let launched = match opts.variant {
            Variant::L2 => K::STAGE_L2,
            Variant::Shared => K::STAGE_SHARED,
        };
        let opts = &kernels.fit_block(gpu, opts, &[launched])?;
        let (stage, shared_mem_bytes) = match opts.variant {
            Variant::L2 => (kernels.get(K::STAGE_L2), 0),
            Variant::Shared => {
                let bytes = stage_shared_bytes::<T>(K::TILES, opts.block());
                let f = kernels.get(K::STAGE_SHARED);
                gpu.allow_shared(&f, bytes.min(u32::MAX as u64) as u32, opts.block())?;
                (f, bytes as u32)
            }
        };
        let cfg = LaunchConfig {
            grid_dim: gpu.grid_2d(p.nx, p.ny, opts.block())?,
            block_dim: (opts.block()[0], opts.block()[1], 1),
            shared_mem_bytes,
        };
        let stream = gpu.stream.clone();
        let up = |x: &[T]| stream.clone_htod(x).map_err(driver_err("upload"));
        let q = cpu.q();
        let set = || -> Result<[CudaSlice<T>; 3]> { Ok([up(&q.eta.v)?, up(&q.hu.v)?, up(&q.hv.v)?]) };
        let exterior = match &cpu.exterior {
            Some(x) => Some([up(&x.eta.v)?, up(&x.hu.v)?, up(&x.hv.v)?]),
            None => None,
        };
        let (sponge_cells, sponge_linear, mut weights) = sponge_layout(p);
        // A valid pointer even without sponges.
        weights.push(0.0);
        let gr = &cpu.grid;
        let dt_grid = (p.nx * p.ny).div_ceil(LINE as usize).clamp(1, DT_BLOCKS) as u32;
        let depth = (2..p.ny + 2).flat_map(|l| gr.bm.row(l)[2..p.nx + 2].to_vec()).collect();
        Ok(FvCuda {
            p: *p,
            rk,
            k: Functions {
                stage,
                periodic_y: kernels.get(K::PERIODIC_Y),
                periodic_x: kernels.get(K::PERIODIC_X),
                walls: kernels.get(K::WALLS),
                sponge_rows: kernels.get(K::SPONGE_ROWS),
                sponge_cols: kernels.get(K::SPONGE_COLS),
                dt_blocks: kernels.get(K::DT_BLOCKS),
                dt_final: kernels.get(K::DT_FINAL),
                clock: kernels.get(K::CLOCK),
            },
            cfg,
            bufs: [set()?, set()?, set()?],
            sets: Sets::default(),
            clock: stream.alloc_zeros::<f64>(CLOCK).map_err(driver_err("allocation"))?,
            exterior,
            sponge_cells,
            sponge_linear,
            weights: stream.clone_htod(&weights).map_err(driver_err("upload"))?,
            bi: up(&gr.bi.v)?,
            bm: up(&gr.bm.v)?,
            f: up(&gr.f)?,
            partial: stream.alloc_zeros::<T>(DT_BLOCKS).map_err(driver_err("allocation"))?,
            dt_out: stream.alloc_zeros::<T>(1).map_err(driver_err("allocation"))?,
            dt_grid,
            depth,
            staging: [q.eta.clone(), q.hu.clone(), q.hv.clone()],
            error: RefCell::new(None),
            halo,
            stream,
        })
    }

    /// A launch configuration of `n` threads in blocks of [`LINE`].
    fn line(n: usize) -> LaunchConfig {
        LaunchConfig { grid_dim: ((n as u32).div_ceil(LINE), 1, 1), block_dim: (LINE, 1, 1), shared_mem_bytes: 0 }
    }

    /// One stage as [`Fv`]'s: `out = stage.apply(Q^n, input, dt, -L(input))` with the
    /// friction divisor, then the sponges and the ghost fill of `out`.
    fn stage(&mut self, stage: &Stage, input: usize, out: usize) -> Result<()> {
        let p = self.p;
        let k = if p.gpu_ocean_compat { 2.0 } else { 1.0 };
        let b = stage.blend.map_or(1.0, |(_, b)| b);
        // The kernel multiplies by the step's length: drag = drag_rate dt, as on the CPU.
        let drag_rate = T::of(k * b * stage.c) * T::of(p.friction);
        let friction = (p.friction != 0.0) as i32;
        let (blend, ca, cb) = match stage.blend {
            Some((a, b)) => (1i32, T::of(a), T::of(b)),
            None => (0, T::zero(), T::zero()),
        };
        let c = T::of(stage.c);
        let (nx, ny) = (p.nx as i32, p.ny as i32);
        let (dx, dy, g, theta) = (T::of(p.dx), T::of(p.dy), T::of(p.g), T::of(p.theta));
        let (wx, wy) = (T::of(p.wind[0]), T::of(p.wind[1]));
        let (qin, q0, qout) = split(&mut self.bufs, input, self.sets.q0, out);
        let mut l = self.stream.launch_builder(&self.k.stage);
        l.arg(&qin[0]).arg(&qin[1]).arg(&qin[2]).arg(&q0[0]).arg(&q0[1]).arg(&q0[2]);
        let [oe, ou, ov] = qout;
        l.arg(oe).arg(ou).arg(ov).arg(&self.bi).arg(&self.bm).arg(&self.f);
        l.arg(&nx).arg(&ny).arg(&dx).arg(&dy).arg(&g).arg(&theta).arg(&wx).arg(&wy);
        l.arg(&self.clock).arg(&c).arg(&blend).arg(&ca).arg(&cb).arg(&friction).arg(&drag_rate);
        // SAFETY: matches FV_STAGE_ARGS in kernels/shallow_water_fv.cuh; every field holds
        // (nx+4)(ny+4) values, Bi (nx+5)(ny+5), f ny+4; the grid covers the interior cells and
        // the shared variant gets its tiles and fluxes (stage_shared_bytes).
        unsafe { l.launch(self.cfg) }.map_err(driver_err("finite-volume stage launch"))?;
        self.boundaries(out)
    }

    /// Sponges, then the ghost fill of buffer set `n` (in fv::exchange_and_fill's order).
    fn boundaries(&mut self, n: usize) -> Result<()> {
        let (p, s) = (self.p, self.p.sides);
        let (nx, ny) = (p.nx as i32, p.ny as i32);
        let [qe, qu, qv] = &mut self.bufs[n];
        if let Some([xe, xu, xv]) = &self.exterior {
            let [cn, ce, cs, cw] = self.sponge_cells;
            for (f, threads) in [(&self.k.sponge_rows, p.nx + 4), (&self.k.sponge_cols, p.ny + 4)] {
                let mut l = self.stream.launch_builder(f);
                l.arg(&self.clock).arg(&mut *qe).arg(&mut *qu).arg(&mut *qv).arg(xe).arg(xu).arg(xv);
                l.arg(&self.weights);
                l.arg(&nx).arg(&ny).arg(&cn).arg(&ce).arg(&cs).arg(&cw).arg(&self.sponge_linear);
                // SAFETY: matches fv_sponge_rows / fv_sponge_cols(clock, e, hu, hv, xe, xu, xv,
                // weights, nx, ny, cn, ce, cs, cw, linear); weights holds cn + ce + cs + cw
                // values (and one more).
                unsafe { l.launch(Self::line(threads)) }.map_err(driver_err("sponge launch"))?;
            }
        }
        // The wall mirrors, the ghosts from the neighbouring ranks, then the periodic copies.
        let walls = [s.north, s.east, s.south, s.west]
            .iter()
            .enumerate()
            .fold(0i32, |m, (i, side)| if *side == Side::Wall { m | 1 << i } else { m });
        let launch = |f: &CudaFunction, threads: usize, qe: &mut CudaSlice<T>, qu: &mut CudaSlice<T>, qv: &mut CudaSlice<T>| {
            let mut l = self.stream.launch_builder(f);
            l.arg(&self.clock).arg(qe).arg(qu).arg(qv).arg(&nx).arg(&ny);
            if std::ptr::eq(f, &self.k.walls) {
                l.arg(&walls);
            }
            // SAFETY: matches fv_periodic_y / fv_periodic_x(clock, e, hu, hv, nx, ny) and
            // fv_walls(clock, e, hu, hv, nx, ny, walls); each thread beyond its rows or columns
            // returns.
            unsafe { l.launch(Self::line(threads)) }.map(|_| ()).map_err(driver_err("ghost fill launch"))
        };
        if walls != 0 {
            launch(&self.k.walls, p.nx + p.ny, qe, qu, qv)?;
        }
        if let Some(halo) = &self.halo {
            let [he, hu, hv] = &mut self.staging;
            halo.exchange_device(&self.stream, [&mut *qe, &mut *qu, &mut *qv], [&mut he.v, &mut hu.v, &mut hv.v])?;
        }
        for (on, f, threads) in [(s.periodic_y(), &self.k.periodic_y, p.nx + 4), (s.periodic_x(), &self.k.periodic_x, p.ny + 4)] {
            if on {
                launch(f, threads, qe, qu, qv)?;
            }
        }
        Ok(())
    }

    /// Keep the first failure for [`Scheme::failure`].
    fn record(&self, r: Result<()>) {
        if let Err(e) = r {
            self.error.borrow_mut().get_or_insert(e);
        }
    }

    /// The two-pass CFL reduction of the current state into `dt_out` (`½ min` of the cell
    /// limits), queued.
    fn queue_dt_reduction(&self) -> Result<()> {
        let q = &self.bufs[self.sets.state];
        let (nx, ny) = (self.p.nx as i32, self.p.ny as i32);
        let (g, dx, dy, inf) = (T::of(self.p.g), T::of(self.p.dx), T::of(self.p.dy), T::infinity());
        let shared = LINE * std::mem::size_of::<T>() as u32;
        let cfg = LaunchConfig { grid_dim: (self.dt_grid, 1, 1), block_dim: (LINE, 1, 1), shared_mem_bytes: shared };
        // `partial` and `dt_out` are written by the kernels through shared references: scratch
        // of the reduction, which `dt_limit(&self)` runs.
        let mut l = self.stream.launch_builder(&self.k.dt_blocks);
        l.arg(&q[0]).arg(&q[1]).arg(&q[2]).arg(&self.bm).arg(&nx).arg(&ny).arg(&g).arg(&dx).arg(&dy).arg(&inf);
        l.arg(&self.partial);
        // SAFETY: matches fv_dt_blocks(e, hu, hv, bm, nx, ny, g, dx, dy, inf, partial) with
        // LINE reals of shared memory; partial holds DT_BLOCKS >= dt_grid values.
        unsafe { l.launch(cfg) }.map_err(driver_err("dt reduction launch"))?;
        let blocks = self.dt_grid as i32;
        let mut l = self.stream.launch_builder(&self.k.dt_final);
        l.arg(&self.partial).arg(&blocks).arg(&inf).arg(&self.dt_out);
        let cfg = LaunchConfig { grid_dim: (1, 1, 1), ..cfg };
        // SAFETY: matches fv_dt_final(partial, n, inf, out) with LINE reals of shared memory.
        unsafe { l.launch(cfg) }.map_err(driver_err("dt reduction launch"))?;
        Ok(())
    }

    fn dt_reduction(&self) -> Result<T> {
        self.queue_dt_reduction()?;
        let mut m = [T::zero()];
        self.stream.memcpy_dtoh(&self.dt_out, &mut m).map_err(driver_err("download"))?;
        Ok(m[0])
    }

    /// The clock kernel: a step of `given` (with `courant` 0), or an adaptive step of
    /// `courant` times the limit in `dt_out` landed by `landing`, the first of a series from
    /// `t0` if `start` (fv_clock).
    fn queue_clock(&mut self, courant: f64, given: f64, landing: &Landing, start: bool, t0: f64) -> Result<()> {
        let end_time = landing.end_time.unwrap_or(f64::INFINITY);
        let every = landing.every_time.unwrap_or(0.0);
        let (tol, round, start) = (TOL, ROUND, start as i32);
        let mut l = self.stream.launch_builder(&self.k.clock);
        l.arg(&self.dt_out).arg(&courant).arg(&given).arg(&end_time).arg(&every).arg(&tol).arg(&round);
        l.arg(&start).arg(&t0).arg(&mut self.clock);
        let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: matches fv_clock(limit, courant, given, end_time, every, tol, round, start,
        // t0, clock); clock holds CLOCK values, dt_out one.
        unsafe { l.launch(cfg) }.map_err(driver_err("clock launch"))?;
        Ok(())
    }
}

impl<T: Real> Scheme<T> for FvCuda<T> {
    fn launch_block(&self) -> Option<[u32; 2]> {
        Some([self.cfg.block_dim.0, self.cfg.block_dim.1])
    }

    fn step(&mut self, dt: f64, _first: bool) {
        if self.error.get_mut().is_some() {
            return;
        }
        let rk = self.rk;
        let r = self.queue_clock(0.0, dt, &Landing::default(), false, 0.0).and_then(|()| rk::step(self, rk));
        self.record(r);
    }

    /// Not on a rank of a decomposed run: its steps need the ranks' smallest stable step.
    fn lands_steps(&self) -> bool {
        self.halo.is_none()
    }

    /// Queues every step (reduction, clock, stages); the steps after the one that stops the
    /// series are skipped by the kernels. One download at the end: the clock, which says how
    /// many steps ran and so which buffer set holds the state.
    fn steps_landed(&mut self, courant: f64, landing: &Landing, time: f64, most: u64) -> Result<Landed> {
        self.failure()?;
        let rk = self.rk;
        let mut sets = vec![self.sets];
        for n in 0..most {
            self.queue_dt_reduction()?;
            self.queue_clock(courant, 0.0, landing, n == 0, time)?;
            rk::step(self, rk)?;
            sets.push(self.sets);
        }
        let mut c = [0.0; CLOCK];
        self.stream.memcpy_dtoh(&self.clock, &mut c).map_err(driver_err("download"))?;
        let steps = c[CLOCK_STEPS] as u64;
        self.sets = sets[steps as usize];
        let unstable = c[CLOCK_FAILED] != 0.0;
        Ok(Landed { steps, time: c[CLOCK_T], dt: c[CLOCK_DT], proposal: c[CLOCK_PROPOSAL], unstable })
    }

    /// `½ min` over the interior cells of the cell limit, reduced on the device; NaN after
    /// a device failure.
    fn dt_limit(&self) -> f64 {
        match self.dt_reduction() {
            Ok(m) => m.f64(),
            Err(e) => {
                self.record(Err(e));
                f64::NAN
            }
        }
    }

    /// From the host copy, as of the last [`Scheme::fetch`].
    fn cells(&self) -> Cells<T> {
        let [eta, hu, hv] = &self.staging;
        let (nx, ny) = (self.p.nx, self.p.ny);
        let interior = |f: &Field<T>| (2..ny + 2).flat_map(|l| f.row(l)[2..nx + 2].to_vec()).collect();
        Cells { eta: interior(eta), hu: interior(hu), hv: interior(hv), depth: self.depth.clone() }
    }

    fn arrays(&self) -> Vec<(&'static str, Place, Field<T>)> {
        let [eta, hu, hv] = self.staging.clone();
        vec![("eta", CELLS, eta), ("hu", CELLS, hu), ("hv", CELLS, hv)]
    }

    /// The current buffer set into the host copy.
    fn fetch(&mut self) -> Result<()> {
        let e = driver_err("download");
        for (d, f) in self.bufs[self.sets.state].iter().zip(self.staging.iter_mut()) {
            self.stream.memcpy_dtoh(d, &mut f.v[..]).map_err(&e)?;
        }
        Ok(())
    }

    fn arrays_mut(&mut self) -> Vec<(&'static str, Place, &mut Field<T>)> {
        let [eta, hu, hv] = &mut self.staging;
        vec![("eta", CELLS, eta), ("hu", CELLS, hu), ("hv", CELLS, hv)]
    }

    /// Upload the staging copies into the current buffer set (the CPU restores that one).
    fn restored(&mut self) -> Result<()> {
        let e = driver_err("upload");
        for (f, d) in self.staging.iter().zip(self.bufs[self.sets.state].iter_mut()) {
            self.stream.memcpy_htod(&f.v[..], d).map_err(&e)?;
        }
        Ok(())
    }

    fn failure(&mut self) -> Result<()> {
        self.error.get_mut().take().map_or(Ok(()), Err)
    }

    fn wait(&mut self) -> Result<()> {
        self.failure()?;
        self.stream.synchronize().map_err(driver_err("synchronize"))
    }
}

impl<T: Real> RkState for FvCuda<T> {
    /// `Q^n` stays in its buffer set (no copy), as on the CPU.
    fn begin(&mut self) -> Result<()> {
        self.sets.begin();
        Ok(())
    }

    /// Fused with the update, as on the CPU.
    fn residual(&mut self, _stage: usize) -> Result<()> {
        Ok(())
    }

    fn update(&mut self, stage: &Stage) -> Result<()> {
        let (input, out) = self.sets.next();
        self.stage(stage, input, out)?;
        self.sets.done(out);
        Ok(())
    }
}
