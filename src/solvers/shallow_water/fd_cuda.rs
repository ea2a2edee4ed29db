//! FBL and CTCS on a CUDA device: the fused step kernels of `kernels/shallow_water_fbl.cu` and
//! `kernels/shallow_water_ctcs.cu` and the boundary passes of
//! `kernels/shallow_water_fd.cuh` (compiled into both), in the order of the CPU schemes (step, sponge
//! relaxation, ghost fill, swap), bitwise equal to them.
//!
//! Each device scheme holds the CPU scheme it mirrors, built first: it samples the initial
//! state, depth and Coriolis rows, computes the step constants (in `T`, by the same code) and
//! serves as the host staging copy of the restore path. The device holds the same two
//! buffers as the CPU (both start as the filled initial state) and writes the same entries of
//! them, so even entries no pass writes (ghosts of a sponge side, FBL's corner faces) agree.
//!
//! On a rank's block of a decomposed run (whole rows) the ghost fill starts with the exchange
//! of the ghost rows, staged through the host as the CPU scheme's fill exchanges them.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg};

use crate::cuda::{CtcsKernel, FblKernel, Gpu, GpuOptions, Variant, driver_err};
use crate::error::{Result, SimError};
use crate::real::Real;
use crate::solver::Place;

use super::ctcs::{self, Ctcs};
use super::fbl::{self, Fbl};
use super::fd_boundary::{Halos, State};
use super::grid::{Field, Physics, Side, SpongeKind};
use super::scheme::{Cells, Initial, Scheme};
use super::sponge;

/// Threads per block of the boundary passes (one thread per row, column or sponge position).
const LINE_BLOCK: u32 = 256;

/// Wall bits of the step kernels' `walls` (north, east, south, west).
fn wall_bits(n: bool, e: bool, s: bool, w: bool) -> i32 {
    n as i32 | (e as i32) << 1 | (s as i32) << 2 | (w as i32) << 3
}

/// `FblArgs` of kernels/shallow_water_fbl.cu.
#[repr(C)]
#[derive(Clone, Copy)]
struct FblArgs<T> {
    dt: T,
    g: T,
    dx: T,
    dy: T,
    rdt: T,
    dt_dx: T,
    dt_dy: T,
    wind_x: T,
    wind_y: T,
    nx: i32,
    ny: i32,
    friction: i32,
    walls: i32,
}

// SAFETY: plain data laid out as the kernel's struct (reals, then four ints).
unsafe impl<T: Real> DeviceRepr for FblArgs<T> {}

impl<T: Real> FblArgs<T> {
    fn new(c: &fbl::Consts<T>) -> Self {
        FblArgs {
            dt: c.dt,
            g: c.g,
            dx: c.dx,
            dy: c.dy,
            rdt: c.rdt,
            dt_dx: c.dt_dx,
            dt_dy: c.dt_dy,
            wind_x: c.wind_x,
            wind_y: c.wind_y,
            nx: c.nx as i32,
            ny: c.ny as i32,
            friction: c.friction as i32,
            walls: wall_bits(c.wall_n, c.wall_e, c.wall_s, c.wall_w),
        }
    }
}

/// `CtcsArgs` of kernels/shallow_water_ctcs.cu.
#[repr(C)]
#[derive(Clone, Copy)]
struct CtcsArgs<T> {
    tdt: T,
    r_tdt: T,
    visc: T,
    a: T,
    minus_half_g: T,
    inv_dx: T,
    inv_dy: T,
    inv_dx2: T,
    inv_dy2: T,
    inv_c: T,
    dx_dy: T,
    dy_dx: T,
    tdt_dx: T,
    tdt_dy: T,
    wind_x: T,
    wind_y: T,
    adv_quarter: T,
    nx: i32,
    ny: i32,
    friction: i32,
    walls: i32,
}

// SAFETY: plain data laid out as the kernel's struct (reals, then four ints).
unsafe impl<T: Real> DeviceRepr for CtcsArgs<T> {}

impl<T: Real> CtcsArgs<T> {
    fn new(c: &ctcs::Consts<T>) -> Self {
        CtcsArgs {
            tdt: c.tdt,
            r_tdt: c.r_tdt,
            visc: c.visc,
            a: c.a,
            minus_half_g: c.minus_half_g,
            inv_dx: c.inv_dx,
            inv_dy: c.inv_dy,
            inv_dx2: c.inv_dx2,
            inv_dy2: c.inv_dy2,
            inv_c: c.inv_c,
            dx_dy: c.dx_dy,
            dy_dx: c.dy_dx,
            tdt_dx: c.tdt_dx,
            tdt_dy: c.tdt_dy,
            wind_x: c.wind_x,
            wind_y: c.wind_y,
            adv_quarter: c.adv_quarter,
            nx: c.nx as i32,
            ny: c.ny as i32,
            friction: c.friction as i32,
            walls: wall_bits(c.wall_n, c.wall_e, c.wall_s, c.wall_w),
        }
    }
}

/// `FdSides` of kernels/shallow_water_fd.cuh.
#[repr(C)]
#[derive(Clone, Copy)]
struct FdSides {
    nx: i32,
    ny: i32,
    north: i32,
    east: i32,
    south: i32,
    west: i32,
    fbl_corner_faces: i32,
}

// SAFETY: seven ints, as the kernel's struct.
unsafe impl DeviceRepr for FdSides {}

/// `FdSponge` of kernels/shallow_water_fd.cuh.
#[repr(C)]
#[derive(Clone, Copy)]
struct FdSponge {
    nx: i32,
    ny: i32,
    side: i32,
    cells: i32,
    linear: i32,
}

// SAFETY: five ints, as the kernel's struct.
unsafe impl DeviceRepr for FdSponge {}

/// One time level on the device.
struct DevState<T> {
    eta: CudaSlice<T>,
    hu: CudaSlice<T>,
    hv: CudaSlice<T>,
}

impl<T: Real> DevState<T> {
    fn upload(stream: &Arc<CudaStream>, s: &State<T>) -> Result<Self> {
        let up = |f: &Field<T>| stream.clone_htod(&f.v[..]).map_err(driver_err("upload"));
        Ok(DevState { eta: up(&s.eta)?, hu: up(&s.hu)?, hv: up(&s.hv)? })
    }

    /// Replace this level by `s` (checked to have this level's shape).
    fn write(&mut self, stream: &Arc<CudaStream>, s: &State<T>) -> Result<()> {
        let e = driver_err("upload");
        for (f, d) in [(&s.eta, &mut self.eta), (&s.hu, &mut self.hu), (&s.hv, &mut self.hv)] {
            if f.v.len() != d.len() {
                return Err(SimError::Run(format!("restoring {} values into a device array of {}", f.v.len(), d.len())));
            }
            stream.memcpy_htod(&f.v[..], d).map_err(&e)?;
        }
        Ok(())
    }

    /// Copy this level into the host state `s` (of the same shapes).
    fn read(&self, stream: &Arc<CudaStream>, s: &mut State<T>) -> Result<()> {
        let e = driver_err("download");
        stream.memcpy_dtoh(&self.eta, &mut s.eta.v[..]).map_err(&e)?;
        stream.memcpy_dtoh(&self.hu, &mut s.hu.v[..]).map_err(&e)?;
        stream.memcpy_dtoh(&self.hv, &mut s.hv.v[..]).map_err(&e)
    }

    fn copy_from(&mut self, stream: &Arc<CudaStream>, from: &DevState<T>) -> Result<()> {
        let e = driver_err("device copy");
        stream.memcpy_dtod(&from.eta, &mut self.eta).map_err(&e)?;
        stream.memcpy_dtod(&from.hu, &mut self.hu).map_err(&e)?;
        stream.memcpy_dtod(&from.hv, &mut self.hv).map_err(&e)
    }
}

/// What FBL and CTCS share on the device: the stream, the depth, the step kernel and its
/// launch shape, the boundary passes (sponge relaxation towards the uploaded exterior, ghost
/// fill, on a rank's block the exchange of ghost rows before it), and the first launch failure
/// of a step.
struct Fd<T> {
    stream: Arc<CudaStream>,
    h: CudaSlice<T>,
    step: CudaFunction,
    cfg: LaunchConfig,
    fill_ns: CudaFunction,
    fill_ew: CudaFunction,
    relax: CudaFunction,
    sides: FdSides,
    /// The sponge sides in the CPU's order (south, north, west, east), with their weights.
    sponges: Vec<(FdSponge, CudaSlice<f64>)>,
    exterior: Option<DevState<T>>,
    /// On a rank's block of a decomposed run: the exchange, the block and the host level its
    /// ghost rows are staged through.
    ranks: Option<(Halos, Physics, State<T>)>,
    failed: Option<SimError>,
}

/// The kind code of a side in kernels/shallow_water_fd.cuh (2: ghosts left as they are).
fn side_code(s: Side) -> i32 {
    match s {
        Side::Wall => 0,
        Side::Periodic => 1,
        Side::Sponge { .. } | Side::Neighbour => 2,
    }
}

/// A one-dimensional launch over `n` threads.
fn line(n: usize) -> LaunchConfig {
    LaunchConfig { grid_dim: ((n as u32).div_ceil(LINE_BLOCK), 1, 1), block_dim: (LINE_BLOCK, 1, 1), shared_mem_bytes: 0 }
}

impl<T: Real> Fd<T> {
    /// `step` launched over `threads` (x, y) in blocks of `opts.block()`, with `shared` bytes of
    /// dynamic shared memory in the shared variant; `boundary`: the module's `sw_fd_fill_ns`,
    /// `sw_fd_fill_ew` and `sw_fd_sponge`; `halos` and a level to stage through on a rank's
    /// block.
    #[allow(clippy::too_many_arguments)]
    fn new(
        gpu: &Gpu,
        opts: &GpuOptions,
        p: &Physics,
        h: &Field<T>,
        exterior: Option<&State<T>>,
        ranks: Option<(Halos, &State<T>)>,
        [step, fill_ns, fill_ew, relax]: [CudaFunction; 4],
        threads: [usize; 2],
        shared: u32,
    ) -> Result<Self> {
        let [bx, by] = opts.block();
        let grid_dim = gpu.grid_2d(threads[0], threads[1], opts.block())?;
        let shared_mem_bytes = if opts.variant == Variant::Shared { shared } else { 0 };
        gpu.allow_shared(&step, shared_mem_bytes, opts.block())?;
        let stream = gpu.stream.clone();
        let s = p.sides;
        let sides = FdSides {
            nx: p.nx as i32,
            ny: p.ny as i32,
            north: side_code(s.north),
            east: side_code(s.east),
            south: side_code(s.south),
            west: side_code(s.west),
            fbl_corner_faces: 0,
        };
        let mut sponges = vec![];
        for (code, side) in [(2, s.south), (0, s.north), (3, s.west), (1, s.east)] {
            if let Side::Sponge { cells, kind } = side {
                let w: Vec<f64> = (0..cells).map(|j| sponge::weight(kind, j, cells)).collect();
                let linear = (kind == SpongeKind::Linear) as i32;
                let g = FdSponge { nx: p.nx as i32, ny: p.ny as i32, side: code, cells: cells as i32, linear };
                sponges.push((g, stream.clone_htod(&w).map_err(driver_err("upload"))?));
            }
        }
        Ok(Fd {
            h: stream.clone_htod(&h.v[..]).map_err(driver_err("upload"))?,
            exterior: exterior.map(|e| DevState::upload(&stream, e)).transpose()?,
            step,
            cfg: LaunchConfig { grid_dim, block_dim: (bx, by, 1), shared_mem_bytes },
            fill_ns,
            fill_ew,
            relax,
            sides,
            sponges,
            ranks: ranks.map(|(halos, level)| (halos, *p, level.clone())),
            failed: None,
            stream,
        })
    }

    /// The passes after a step's update, as on the CPU: the sponge relaxation (if any), then
    /// the ghost fill (on a rank's block the exchange of ghost rows, then north–south, then
    /// east–west).
    fn boundary(&mut self, s: &mut DevState<T>, fbl_corner_faces: bool) -> Result<()> {
        let (nx, ny) = (self.sides.nx as usize, self.sides.ny as usize);
        if let Some(ext) = &self.exterior {
            for (g, w) in &self.sponges {
                let mut b = self.stream.launch_builder(&self.relax);
                b.arg(&mut s.eta).arg(&mut s.hu).arg(&mut s.hv).arg(&ext.eta).arg(&ext.hu).arg(&ext.hv).arg(w).arg(g);
                // SAFETY: matches sw_fd_sponge(eta, hu, hv, ext_eta, ext_hu, ext_hv, weight, g):
                // the arrays have the layout's shapes, `weight` holds `cells` values, and the
                // threads past a field's side length return.
                unsafe { b.launch(line(nx.max(ny) + 3)) }.map_err(driver_err("sponge launch"))?;
            }
        }
        if let Some((halos, p, host)) = &mut self.ranks {
            let device = [&mut s.eta, &mut s.hu, &mut s.hv];
            halos.exchange_rows_device(&self.stream, device, host, p, fbl_corner_faces)?;
        }
        let sides = FdSides { fbl_corner_faces: fbl_corner_faces as i32, ..self.sides };
        for (f, n, what) in [(&self.fill_ns, nx + 3, "ghost fill (north-south)"), (&self.fill_ew, ny + 3, "ghost fill (east-west)")] {
            let mut b = self.stream.launch_builder(f);
            b.arg(&mut s.eta).arg(&mut s.hu).arg(&mut s.hv).arg(&sides);
            // SAFETY: matches sw_fd_fill_{ns,ew}(eta, hu, hv, s); one thread per column (row)
            // of the widest (tallest) array, the others return.
            unsafe { b.launch(line(n)) }.map_err(driver_err(what))?;
        }
        Ok(())
    }

    /// Keep the first failure of a step (reported by [`Scheme::failure`] or [`Scheme::wait`]).
    fn record(&mut self, r: Result<()>) {
        if let Err(e) = r {
            self.failed.get_or_insert(e);
        }
    }

    fn wait(&mut self) -> Result<()> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        self.stream.synchronize().map_err(driver_err("synchronize"))
    }
}

/// The bytes of dynamic shared memory of `reals` values of `T`.
fn bytes<T>(reals: u32) -> u32 {
    reals * std::mem::size_of::<T>() as u32
}

/// FBL on a device: the current level and the buffer the step writes.
pub struct FblCuda<T: Real> {
    cpu: Fbl<T>,
    fd: Fd<T>,
    cur: DevState<T>,
    next: DevState<T>,
    f_u: CudaSlice<T>,
    f_v: CudaSlice<T>,
}

impl<T: Real> FblCuda<T> {
    /// FBL from the initial state `init`; with `halos`, on a rank's block of a decomposed run.
    pub fn new(p: &Physics, init: &Initial, gpu: &Arc<Gpu>, opts: &GpuOptions, halos: Option<Halos>) -> Result<Self> {
        gpu.check_block(opts.block())?;
        let cpu = Fbl::<T>::with_halo(p, init, halos.clone());
        let kernels = gpu.kernels::<FblKernel>(T::PRECISION, opts.fast_math)?;
        let step = match opts.variant {
            Variant::L2 => FblKernel::StepL2,
            Variant::Shared => FblKernel::StepShared,
        };
        let opts = &kernels.fit_block(gpu, opts, &[step])?;
        let functions = [step, FblKernel::FillNs, FblKernel::FillEw, FblKernel::Sponge].map(|k| kernels.get(k));
        let [bx, by] = opts.block();
        // U* of (by+2) x (bx+1) faces and V* of (by+1) x bx faces.
        let shared = bytes::<T>((by + 2) * (bx + 1) + (by + 1) * bx);
        let ranks = halos.map(|h| (h, &cpu.cur));
        let fd = Fd::new(gpu, opts, p, &cpu.h, cpu.exterior.as_ref(), ranks, functions, [p.nx, p.ny], shared)?;
        let s = &fd.stream;
        let up = |x: &[T]| s.clone_htod(x).map_err(driver_err("upload"));
        Ok(FblCuda {
            cur: DevState::upload(s, &cpu.cur)?,
            next: DevState::upload(s, &cpu.next)?,
            f_u: up(&cpu.f_u)?,
            f_v: up(&cpu.f_v)?,
            cpu,
            fd,
        })
    }

    fn try_step(&mut self, dt: f64) -> Result<()> {
        let a = FblArgs::new(&self.cpu.consts(dt));
        let (cur, next) = (&self.cur, &mut self.next);
        let mut b = self.fd.stream.launch_builder(&self.fd.step);
        b.arg(&self.fd.h).arg(&cur.eta).arg(&cur.hu).arg(&cur.hv).arg(&self.f_u).arg(&self.f_v);
        b.arg(&mut next.eta).arg(&mut next.hu).arg(&mut next.hv).arg(&a);
        // SAFETY: matches fbl_step_{l2,shared}(h, eta, hu, hv, f_u, f_v, eta_out, hu_out, hv_out,
        // a): the arrays have the layout's shapes (f_u ny+2, f_v ny+3 rows), the grid covers the
        // nx x ny cells (threads past them return), and the shared variant gets its U* and V*
        // tiles of dynamic shared memory.
        unsafe { b.launch(self.fd.cfg) }.map_err(driver_err("FBL step launch"))?;
        self.fd.boundary(&mut self.next, self.cpu.p.gpu_ocean_compat)?;
        std::mem::swap(&mut self.cur, &mut self.next);
        Ok(())
    }
}

impl<T: Real> Scheme<T> for FblCuda<T> {
    fn launch_block(&self) -> Option<[u32; 2]> {
        Some([self.fd.cfg.block_dim.0, self.fd.cfg.block_dim.1])
    }

    fn step(&mut self, dt: f64, _first: bool) {
        if self.fd.failed.is_none() {
            let r = self.try_step(dt);
            self.fd.record(r);
        }
    }

    /// Depends on the depth only (as on the CPU).
    fn dt_limit(&self) -> f64 {
        self.cpu.dt_limit()
    }

    /// From the host copy, as of the last [`Scheme::fetch`].
    fn cells(&self) -> Cells<T> {
        self.cpu.cells()
    }

    fn arrays(&self) -> Vec<(&'static str, Place, Field<T>)> {
        self.cpu.arrays()
    }

    fn fetch(&mut self) -> Result<()> {
        self.cur.read(&self.fd.stream, &mut self.cpu.cur)
    }

    fn arrays_mut(&mut self) -> Vec<(&'static str, Place, &mut Field<T>)> {
        self.cpu.arrays_mut()
    }

    fn restored(&mut self) -> Result<()> {
        self.cur.write(&self.fd.stream, &self.cpu.cur)
    }

    fn failure(&mut self) -> Result<()> {
        self.fd.failed.take().map_or(Ok(()), Err)
    }

    fn wait(&mut self) -> Result<()> {
        self.fd.wait()
    }
}

/// CTCS on a device: level n and level n − 1 (which the step overwrites with level n + 1).
pub struct CtcsCuda<T: Real> {
    cpu: Ctcs<T>,
    fd: Fd<T>,
    cur: DevState<T>,
    prev: DevState<T>,
    f_vq: CudaSlice<T>,
    f_c: CudaSlice<T>,
}

impl<T: Real> CtcsCuda<T> {
    /// CTCS from the initial state `init`; with `halos`, on a rank's block of a decomposed run.
    pub fn new(p: &Physics, init: &Initial, gpu: &Arc<Gpu>, opts: &GpuOptions, halos: Option<Halos>) -> Result<Self> {
        gpu.check_block(opts.block())?;
        let cpu = Ctcs::<T>::with_halo(p, init, halos.clone());
        let kernels = gpu.kernels::<CtcsKernel>(T::PRECISION, opts.fast_math)?;
        let step = match opts.variant {
            Variant::L2 => CtcsKernel::StepL2,
            Variant::Shared => CtcsKernel::StepShared,
        };
        let opts = &kernels.fit_block(gpu, opts, &[step])?;
        let functions = [step, CtcsKernel::FillNs, CtcsKernel::FillEw, CtcsKernel::Sponge].map(|k| kernels.get(k));
        let [bx, by] = opts.block();
        // h and 1/h of (by+2) x (bx+2) cells, 1/D of (by+1) x (bx+1) corners.
        let shared = bytes::<T>(2 * (by + 2) * (bx + 2) + (by + 1) * (bx + 1));
        let ranks = halos.map(|h| (h, &cpu.cur));
        let fd = Fd::new(gpu, opts, p, &cpu.h, cpu.exterior.as_ref(), ranks, functions, [p.nx + 1, p.ny + 1], shared)?;
        let s = &fd.stream;
        let up = |x: &[T]| s.clone_htod(x).map_err(driver_err("upload"));
        Ok(CtcsCuda {
            cur: DevState::upload(s, &cpu.cur)?,
            prev: DevState::upload(s, &cpu.prev)?,
            f_vq: up(&cpu.f_vq)?,
            f_c: up(&cpu.f_c)?,
            cpu,
            fd,
        })
    }

    fn try_step(&mut self, dt: f64, first: bool) -> Result<()> {
        if first {
            // Start from two equal levels.
            self.prev.copy_from(&self.fd.stream, &self.cur)?;
        }
        let a = CtcsArgs::new(&self.cpu.consts(self.cpu.interval(dt, first)));
        let (cur, prev) = (&self.cur, &mut self.prev);
        let mut b = self.fd.stream.launch_builder(&self.fd.step);
        b.arg(&self.fd.h).arg(&cur.eta).arg(&cur.hu).arg(&cur.hv).arg(&self.f_vq).arg(&self.f_c);
        b.arg(&mut prev.eta).arg(&mut prev.hu).arg(&mut prev.hv).arg(&a);
        // SAFETY: matches ctcs_step_{l2,shared}(H, eta, hu, hv, f_vq, f_c, eta0, hu0, hv0, a): the
        // arrays have the layout's shapes (f_vq ny+3, f_c ny+2 rows), the grid covers the
        // (nx+1) x (ny+1) points (threads past them return), and the shared variant gets its
        // tiles of dynamic shared memory.
        unsafe { b.launch(self.fd.cfg) }.map_err(driver_err("CTCS step launch"))?;
        self.fd.boundary(&mut self.prev, false)?;
        std::mem::swap(&mut self.cur, &mut self.prev);
        Ok(())
    }
}

impl<T: Real> Scheme<T> for CtcsCuda<T> {
    fn launch_block(&self) -> Option<[u32; 2]> {
        Some([self.fd.cfg.block_dim.0, self.fd.cfg.block_dim.1])
    }

    fn step(&mut self, dt: f64, first: bool) {
        if self.fd.failed.is_none() {
            let r = self.try_step(dt, first);
            self.fd.record(r);
        }
    }

    /// The limit of the host copy, as of the last [`Scheme::fetch`] (a fixed `dt` is checked
    /// against it at the start and at a restart, when the host copy is the state).
    fn dt_limit(&self) -> f64 {
        self.cpu.dt_limit()
    }

    /// From the host copy, as of the last [`Scheme::fetch`].
    fn cells(&self) -> Cells<T> {
        self.cpu.cells()
    }

    fn arrays(&self) -> Vec<(&'static str, Place, Field<T>)> {
        self.cpu.arrays()
    }

    fn fetch(&mut self) -> Result<()> {
        self.cur.read(&self.fd.stream, &mut self.cpu.cur)?;
        self.prev.read(&self.fd.stream, &mut self.cpu.prev)
    }

    fn arrays_mut(&mut self) -> Vec<(&'static str, Place, &mut Field<T>)> {
        self.cpu.arrays_mut()
    }

    fn restored(&mut self) -> Result<()> {
        self.cur.write(&self.fd.stream, &self.cpu.cur)?;
        self.prev.write(&self.fd.stream, &self.cpu.prev)
    }

    fn failure(&mut self) -> Result<()> {
        self.fd.failed.take().map_or(Ok(()), Err)
    }

    fn wait(&mut self) -> Result<()> {
        self.fd.wait()
    }
}
