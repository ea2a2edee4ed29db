//! The lid-driven cavity on one rank's block of a domain decomposition (`mpirun`): the nodes
//! the rank owns with a ghost layer towards each neighbour. Each substep of MacCormack's
//! scheme reads the neighbours of a node at the level before, so the ghosts of `u, v, p` are
//! exchanged before the predictor and those of the predicted fields before the corrector; the
//! serial kernels compute the nodes that read no ghost while they travel, then the lines next
//! to them, and the walls are written where the block holds the global walls (its ghosts are
//! left to the exchange). Every owned node computes with the serial operands in the serial
//! order, so the fields are bitwise the serial run's for any process grid, one step at a time.
//!
//! The steady-state test too: R_K is a maximum, and the sum of the squared change of `u` is
//! added up in the serial order (along each row in x, the ranks of a row of the process grid
//! passing their running sums on, then the rows in y on rank 0), so the run converges at the
//! serial run's step. Checkpoints gather the fields on rank 0 in the serial layout, and each
//! `sync` gathers the centreline profiles there for the report and the result files.
//!
//! On a GPU (one per rank) the block lives on the device, the blocks are whole rows and the
//! ghost rows pass through the host before each substep; the device kernels compute what the
//! CPU ones do, so again the serial bits.

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::kernels::{self, Coeffs, Fields, Stages};
use super::{
    CavityParams, NO_STATS, Residual, UNITS, bytes_per_step, centre, centreline, merge_stats, node_fields, row_stats,
    state_arrays, state_layout, take_state, vorticity_at, write_profiles,
};
use crate::error::Result;
use super::cuda::CavityCuda;
use crate::parallel::{self, Block, Comm, HaloTimes, Reduce, device};
use crate::solvers::Device;
use crate::real::{Precision, Real};
use crate::solver::{ArraySpec, Grid, Mesh, NonFinite, OutField, Piece, Solver, StateArray};

/// Tag of the running row sums of the squared change (the ghost exchange uses 0 to 3).
const ROW_SUMS: i32 = 4;

/// Nodes of the stored block, as the ranges `[xs, ys]` of stored indices.
type Run = [Range<usize>; 2];

pub struct CavityPart<T: Real> {
    comm: Arc<dyn Comm>,
    params: CavityParams,
    grid: Grid,
    dt: f64,
    coeffs: Coeffs<T>,
    block: Block,
    /// The edges of the stored block that are walls of the cavity ([west, east, bottom, lid]);
    /// the others are ghosts.
    walls: [bool; 4],
    /// The stored block (ghosts included) of both levels.
    fields: Fields<T>,
    /// The owned `u, v` at the last residual check.
    u_snap: Vec<T>,
    v_snap: Vec<T>,
    res: Residual,
    /// The centreline profiles (u, v) on rank 0 as of the latest `sync`.
    profiles: Option<(Vec<f64>, Vec<f64>)>,
    halo: HaloTimes,
    /// The block on a GPU; `fields` is then its host copy, current after `sync` and after the
    /// steps that sum the change or check the residual.
    gpu: Option<CavityCuda<T>>,
    /// Where the block is updated: `cpu` or the device.
    on: String,
    step: u64,
    time: f64,
}

impl<T: Real> CavityPart<T> {
    /// The block of `comm`'s rank of the cavity of `p`, at its initial condition.
    pub fn new(p: &CavityParams, comm: Arc<dyn Comm>) -> Self {
        let (n, dx) = (p.n, p.dx());
        let block = Block::of(comm.as_ref(), [n, n], 1);
        let walls = block.ghosts.map(|g| g == 0);
        let [nx, ny] = block.stored;
        let fields = Fields::initial_on(nx, ny, T::of(p.lid_velocity), walls);
        let dt = p.time_step();
        CavityPart {
            u_snap: block.owned_of(&fields.u),
            v_snap: block.owned_of(&fields.v),
            comm,
            params: p.clone(),
            grid: Grid { n: [n, n], origin: [0.0, 0.0], spacing: [dx, dx] },
            dt,
            coeffs: p.coeffs(dt),
            block,
            walls,
            fields,
            res: Residual::new(),
            profiles: None,
            halo: HaloTimes::default(),
            gpu: None,
            on: "cpu".into(),
            step: 0,
            time: 0.0,
        }
    }

    /// The block of `comm`'s rank of the cavity of `p` on `device`, at its initial condition.
    pub fn on(p: &CavityParams, comm: Arc<dyn Comm>, device: &Device) -> Result<Self> {
        let mut part = Self::new(p, comm);
        if let Device::Cuda(gpu, opts) = device {
            let ([nx, ny], f) = (part.block.stored, &part.fields);
            part.gpu = Some(CavityCuda::new(gpu, opts, nx, ny, &f.u, &f.v, &f.p)?);
            part.on = format!("cuda ({})", gpu.name);
        }
        Ok(part)
    }

    /// Residual check at a multiple of K: the largest change since the snapshot over all
    /// ranks (NaN if any rank has one, as in the serial run).
    fn check_residual(&mut self) {
        let [u, v] = [&self.fields.u[..], &self.fields.v[..]].map(|f| self.block.owned_of(f));
        let nx = self.block.owned[0].len();
        let change = kernels::change_and_snapshot(&u, &v, &mut self.u_snap, &mut self.v_snap, nx);
        let c = self.comm.as_ref();
        let nan = c.all_reduce(f64::from(u8::from(change.is_nan())), Reduce::Max) > 0.0;
        let change = if nan { f64::NAN } else { c.all_reduce(change, Reduce::Max) };
        self.res.check(&self.params, change, self.time);
    }

    /// The sum over the interior nodes of the squared one-step change of `u` from `before`
    /// (the stored `u` before the step), added up as the serial corrector does: each row in
    /// x, the ranks along a row of the process grid passing their running sums east, then the
    /// row sums in y on rank 0. On every rank (the others get it in a sum with zeros).
    fn squared_change(&self, before: &[T]) -> f64 {
        let (c, b, n) = (self.comm.as_ref(), &self.block, self.params.n);
        let mut sums = vec![0.0; b.owned[1].len()];
        if let Some(west) = c.neighbour(0, false) {
            c.exchange(&[], &mut [(west, ROW_SUMS, &mut sums[..])], &mut || {});
        }
        let at = |a: usize, g: usize| (g as isize - b.first[a]) as usize;
        let xs = at(0, b.owned[0].start.max(1))..at(0, b.owned[0].end.min(n - 1));
        for (sum, gy) in sums.iter_mut().zip(b.owned[1].clone()).filter(|(_, gy)| (1..n - 1).contains(gy)) {
            let row = at(1, gy) * b.stored[0];
            let cols = row + xs.start..row + xs.end;
            *sum = kernels::add_squared_change(*sum, &before[cols.clone()], &self.fields.u[cols]);
        }
        if let Some(east) = c.neighbour(0, true) {
            c.exchange(&[(east, ROW_SUMS, &sums)], &mut [], &mut || {});
            sums.clear();
        }
        // The east-most ranks hold whole rows: in rank order their rows come in y order.
        let du2: f64 = c.gather(&sums).concat().iter().sum();
        let root = c.rank() == 0;
        let all = c.all_reduce(if root { du2 } else { 0.0 }, Reduce::Sum);
        if root { du2 } else { all }
    }

    /// The centreline profiles (u, v) on rank 0, None on the others. Collective.
    fn gather_profiles(&self) -> Option<(Vec<f64>, Vec<f64>)> {
        let (c, b, n) = (self.comm.as_ref(), &self.block, self.params.n);
        let line = |f: &[T], axis: usize, k: usize| {
            let mut region = [0..n, 0..n];
            region[axis] = k..k + 1;
            b.gather_region(c, f, [n, n], region).map(|l| l.iter().map(|x| x.f64()).collect::<Vec<f64>>())
        };
        // Every rank takes part in every gather: collected before any is looked at.
        let u: Vec<_> = centre(n).map(|i| line(&self.fields.u, 0, i)).collect();
        let v: Vec<_> = centre(n).map(|j| line(&self.fields.v, 1, j)).collect();
        let [u, v] = [u, v].map(|lines| lines.into_iter().collect::<Option<Vec<_>>>());
        let u0 = self.params.lid_velocity;
        Some((centreline(&u?, u0), centreline(&v?, u0)))
    }

    /// The vorticity at the nodes of the output piece: at the owned nodes from `u, v` and their
    /// ghosts (current after `sync`), at the border nodes shared with a neighbour from that
    /// neighbour. Collective.
    fn vorticity(&self) -> Vec<f64> {
        let (b, f, n, h) = (&self.block, &self.fields, self.grid.n, self.grid.spacing[0]);
        let nx = b.stored[0];
        let mut w = vec![0.0; nx * b.stored[1]];
        w.par_chunks_mut(nx).enumerate().for_each(|(j, row)| {
            let gy = (b.first[1] + j as isize) as usize;
            if !b.owned[1].contains(&gy) {
                return;
            }
            for gx in b.owned[0].clone() {
                let i = (gx as isize - b.first[0]) as usize;
                row[i] = vorticity_at(&f.u, &f.v, nx, h, j * nx + i, [gx, gy], n);
            }
        });
        b.exchange(self.comm.as_ref(), &mut w);
        b.piece_of(&w)
    }
}

/// Where a block's substeps exchange and which global walls they write.
#[derive(Clone, Copy)]
struct OnBlock<'a> {
    comm: &'a dyn Comm,
    block: &'a Block,
    /// See [`CavityPart::walls`].
    walls: [bool; 4],
}

impl OnBlock<'_> {
    /// A substep from `input` to `out` (`nx`-wide): while the ghosts of `input` travel,
    /// `compute` updates the nodes that read none; then the lines next to the ghosts, and the
    /// side walls of `out` where the block holds them. Returns the time spent in the exchange
    /// beyond the work it overlaps.
    fn substep<T: Real>(
        &self,
        mut input: [&mut [T]; 3],
        mut out: [&mut [T]; 3],
        nx: usize,
        compute: impl Fn([&[T]; 3], [&mut [T]; 3], Run),
    ) -> Duration {
        let (inner, lines) = runs(self.block);
        let (start, mut work) = (Instant::now(), Duration::ZERO);
        self.block.exchange_all_during(self.comm, input.each_mut().map(|f| &mut **f), &mut |input| {
            let at = Instant::now();
            compute(input, out.each_mut().map(|f| &mut **f), inner.clone());
            work += at.elapsed();
        });
        let exchanging = start.elapsed() - work;
        for run in lines {
            compute(input.each_ref().map(|f| &**f), out.each_mut().map(|f| &mut **f), run);
        }
        let [u, v, p] = out;
        let ny = u.len() / nx;
        kernels::side_walls(u, v, p, nx, 1..ny - 1, [self.walls[0], self.walls[1]]);
        exchanging
    }
}

/// The nodes a substep computes on block `b`: those that read no ghost, and the lines next
/// to the ghosts (disjoint: the corrector updates in place).
fn runs(b: &Block) -> (Run, Vec<Run>) {
    let ([nx, ny], [w, e, s, n]) = (b.stored, b.ghosts);
    let inner = [1 + w..nx - 1 - e, 1 + s..ny - 1 - n];
    let lines = [
        (s, [1..nx - 1, 1..2]),
        (n, [1..nx - 1, ny - 2..ny - 1]),
        (w, [1..2, inner[1].clone()]),
        (e, [nx - 2..nx - 1, inner[1].clone()]),
    ];
    (inner, lines.into_iter().filter(|(ghost, _)| *ghost > 0).map(|(_, run)| run).collect())
}

/// The stages of a step on the block (see [`kernels::step`]).
struct BlockStages<'a, T: Real> {
    on: OnBlock<'a>,
    f: &'a mut Fields<T>,
    /// Time in the exchanges beyond the work they overlap.
    exchanging: &'a mut Duration,
}

impl<T: Real> Stages<T> for BlockStages<'_, T> {
    fn predictor(&mut self, c: &Coeffs<T>) -> Result<()> {
        let Fields { nx, u, v, p, us, vs, ps, .. } = &mut *self.f;
        let (input, out) = ([&mut u[..], &mut v[..], &mut p[..]], [&mut us[..], &mut vs[..], &mut ps[..]]);
        let nx = *nx;
        *self.exchanging += self.on.substep(input, out, nx, |[u, v, p], [us, vs, ps], run| {
            kernels::predictor_at(u, v, p, us, vs, ps, nx, c, run)
        });
        Ok(())
    }

    fn corrector(&mut self, c: &Coeffs<T>) -> Result<()> {
        let Fields { nx, u, v, p, us, vs, ps, .. } = &mut *self.f;
        let (input, out) = ([&mut us[..], &mut vs[..], &mut ps[..]], [&mut u[..], &mut v[..], &mut p[..]]);
        let nx = *nx;
        *self.exchanging += self.on.substep(input, out, nx, |[us, vs, ps], [u, v, p], run| {
            kernels::corrector_at(u, v, p, us, vs, ps, nx, c, run)
        });
        Ok(())
    }

    fn walls(&mut self, predicted: bool, u0: T) -> Result<()> {
        let f = &mut *self.f;
        let [u, v, p] = if predicted { [&mut f.us, &mut f.vs, &mut f.ps] } else { [&mut f.u, &mut f.v, &mut f.p] };
        kernels::walls_on(u, v, p, f.nx, u0, self.on.walls);
        Ok(())
    }
}

/// The stages of a step on a block on a GPU: the device kernels of the serial run (their walls
/// write the ghost rows too, which the next exchange overwrites), each substep after the ghost
/// rows of its input arrived through the host.
struct DeviceStages<'a, T: Real> {
    gpu: &'a mut CavityCuda<T>,
    block: &'a Block,
    comm: &'a dyn Comm,
    /// The host copy the ghost rows pass through.
    host: &'a mut Fields<T>,
    exchanging: &'a mut Duration,
}

impl<T: Real> DeviceStages<'_, T> {
    fn exchange(&mut self, predicted: bool) -> Result<()> {
        let start = Instant::now();
        let f = &mut *self.host;
        let host = match predicted {
            true => [&mut f.us[..], &mut f.vs[..], &mut f.ps[..]],
            false => [&mut f.u[..], &mut f.v[..], &mut f.p[..]],
        };
        let (stream, device) = self.gpu.fields(predicted);
        device::exchange_rows(stream, self.block, self.comm, device, host)?;
        *self.exchanging += start.elapsed();
        Ok(())
    }
}

impl<T: Real> Stages<T> for DeviceStages<'_, T> {
    fn predictor(&mut self, c: &Coeffs<T>) -> Result<()> {
        self.exchange(false)?;
        self.gpu.predictor(c)
    }

    fn corrector(&mut self, c: &Coeffs<T>) -> Result<()> {
        self.exchange(true)?;
        self.gpu.corrector(c)
    }

    fn walls(&mut self, predicted: bool, u0: T) -> Result<()> {
        self.gpu.walls(predicted, u0)
    }
}

impl<T: Real> Solver for CavityPart<T> {
    fn kind(&self) -> &'static str {
        "cavity"
    }
    fn precision(&self) -> Precision {
        T::PRECISION
    }
    fn step(&self) -> u64 {
        self.step
    }
    fn time(&self) -> f64 {
        self.time
    }
    fn dt(&self) -> f64 {
        self.dt
    }

    fn advance(&mut self, dt: f64) -> Result<()> {
        let start = Instant::now();
        // As the serial solver: its coefficients for a full step, others for a landed one.
        let short;
        let c = if dt == self.dt {
            &self.coeffs
        } else {
            short = self.params.coeffs(dt);
            &short
        };
        let next = self.step + 1;
        let (summed, checked) = (self.params.summed(next), next.is_multiple_of(self.params.residual.every));
        if let (Some(gpu), true) = (&self.gpu, summed) {
            gpu.download_u(&mut self.fields.u)?;
        }
        let before = summed.then(|| self.fields.u.to_vec());
        let (comm, block, exchanging) = (self.comm.as_ref(), &self.block, &mut self.halo.exchanging);
        match &mut self.gpu {
            None => {
                let on = OnBlock { comm, block, walls: self.walls };
                kernels::step(&mut BlockStages { on, f: &mut self.fields, exchanging }, c)?;
            }
            Some(gpu) => {
                let host = &mut self.fields;
                kernels::step(&mut DeviceStages { gpu: &mut *gpu, block, comm, host, exchanging }, c)?;
                if summed || checked {
                    let f = &mut self.fields;
                    gpu.download(&mut f.u, &mut f.v, &mut f.p)?;
                }
            }
        }
        if let Some(before) = before {
            let du2 = self.squared_change(&before);
            self.res.summed(next, du2);
        }
        self.step = next;
        self.time += dt;
        if checked {
            self.check_residual();
        }
        self.halo.stepping += start.elapsed();
        Ok(())
    }

    /// The ghosts current (the output pieces' border nodes and vorticity), and the centreline
    /// profiles on rank 0 (the report and the result files).
    fn sync(&mut self) -> Result<()> {
        let f = &mut self.fields;
        if let Some(gpu) = &self.gpu {
            gpu.download(&mut f.u, &mut f.v, &mut f.p)?;
        }
        self.block.exchange_all_during(self.comm.as_ref(), [&mut f.u[..], &mut f.v[..], &mut f.p[..]], &mut |_| {});
        self.profiles = self.gather_profiles();
        Ok(())
    }

    fn wait(&mut self) -> Result<()> {
        self.gpu.as_ref().map_or(Ok(()), |gpu| gpu.wait())
    }

    fn backend(&self) -> String {
        parallel::backend(&self.on, self.comm.as_ref())
    }

    fn mesh(&self) -> Mesh {
        Mesh::Nodes(self.grid)
    }

    fn piece(&self) -> Option<Piece> {
        Some(self.block.piece(self.comm.as_ref(), &self.grid))
    }

    fn units(&self) -> &'static str {
        UNITS
    }

    fn output_fields(&self) -> Vec<OutField> {
        let (b, f) = (&self.block, &self.fields);
        let [u, v, p] = [&f.u[..], &f.v[..], &f.p[..]].map(|a| b.piece_of(a));
        node_fields(&u, &v, p, self.vorticity())
    }

    /// On rank 0 the whole fields, gathered in the serial layout; nothing on the others.
    fn state(&self) -> Vec<StateArray> {
        let (c, b, n, f) = (self.comm.as_ref(), &self.block, self.grid.n, &self.fields);
        let [u, v, p] = [&f.u[..], &f.v[..], &f.p[..]].map(|a| b.gather_whole(c, a, n));
        let [us, vs] = [&self.u_snap, &self.v_snap].map(|a| b.bare().gather_whole(c, a, n));
        match (u, v, p, us, vs) {
            (Some(u), Some(v), Some(p), Some(us), Some(vs)) => state_arrays(&self.mesh(), [u, v, p, us, vs], &self.res),
            _ => Vec::new(),
        }
    }

    fn state_layout(&self) -> Vec<ArraySpec> {
        state_layout::<T>(&self.mesh())
    }

    /// From the whole fields (every rank reads the checkpoint): the stored block, ghosts
    /// included, and the owned snapshots.
    fn restore(&mut self, step: u64, time: f64, arrays: Vec<StateArray>) -> Result<()> {
        let n = self.grid.n;
        let ([u, v, p, us, vs], res) = take_state::<T>(arrays, &self.mesh(), time)?;
        let f = &mut self.fields;
        for (field, whole) in [&mut f.u, &mut f.v, &mut f.p].into_iter().zip([u, v, p]) {
            field.copy_from_slice(&self.block.cut(&whole, n));
        }
        [self.u_snap, self.v_snap] = [us, vs].map(|whole| self.block.bare().cut(&whole, n));
        if let Some(gpu) = &mut self.gpu {
            gpu.upload(&f.u, &f.v, &f.p)?;
        }
        self.res = res;
        self.step = step;
        self.time = time;
        Ok(())
    }

    /// The first non-finite node of u, then v, then p, in the serial scan order over all
    /// ranks.
    fn find_non_finite(&self) -> Option<NonFinite> {
        let (c, b, n, f) = (self.comm.as_ref(), &self.block, self.grid.n, &self.fields);
        b.first_non_finite(c, "u", &f.u, n)
            .or_else(|| b.first_non_finite(c, "v", &f.v, n))
            .or_else(|| b.first_non_finite(c, "p", &f.p, n))
    }

    /// As the serial solver's, combined over the ranks (the kinetic energy's sum in another
    /// order: equal to the serial value to round-off; the rest exactly).
    fn diagnostics(&self) -> Vec<(&'static str, Option<f64>)> {
        let (b, f) = (&self.block, &self.fields);
        let nx = b.stored[0];
        let xs = b.ghosts[0]..b.ghosts[0] + b.owned[0].len();
        let rows = (b.ghosts[2]..b.ghosts[2] + b.owned[1].len()).map(|j| {
            let r = j * nx + xs.start..j * nx + xs.end;
            row_stats(&f.u[r.clone()], &f.v[r.clone()], &f.p[r])
        });
        let t = rows.fold(NO_STATS, merge_stats);
        let ops = [Reduce::Max, Reduce::Max, Reduce::Min, Reduce::Max, Reduce::Sum];
        let t = [0, 1, 2, 3, 4].map(|k| self.comm.all_reduce(t[k], ops[k]));
        self.res.diagnostics(t, self.grid.spacing[0])
    }

    /// As the serial solver's on rank 0 (the profiles are gathered there), with `ranks` and
    /// `halo_exchange_share`.
    fn report(&self) -> serde_json::Map<String, serde_json::Value> {
        let profiles = self.profiles.as_ref().map(|(u, v)| (&u[..], &v[..]));
        let mut m = self.res.report(&self.params, profiles);
        self.halo.report(self.comm.as_ref(), &mut m);
        m
    }

    fn bytes_per_step(&self) -> f64 {
        bytes_per_step::<T>(&self.grid)
    }

    fn converged(&self) -> bool {
        self.res.converged
    }

    fn status(&self) -> Option<String> {
        Some(self.res.status())
    }

    /// Rank 0's (the driver calls it there alone), from the profiles of the latest `sync`.
    fn write_results(&self, dir: &std::path::Path) -> Result<Vec<String>> {
        match &self.profiles {
            Some((u, v)) => write_profiles(dir, &self.params, u, v),
            None => Ok(Vec::new()),
        }
    }
}

/// The cavity of `p` split over the ranks of `comm`, on `device`.
pub fn build(p: &CavityParams, precision: Precision, comm: Arc<dyn Comm>, device: &Device) -> Result<Box<dyn Solver>> {
    crate::in_precision!(precision, |T| CavityPart::<T>::on(p, comm, device))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::Single;
    use crate::solvers::cavity::{Cavity, ResidualControl};

    /// One rank's "block" is the whole grid: the decomposed code path (exchanges, kernels on
    /// runs, walls, the chained change sum, residual checks, gathers, pieces) gives the serial
    /// solver's fields, state, output, diagnostics and report.
    #[test]
    fn a_single_part_is_the_serial_solver() {
        let residual = ResidualControl { every: 4, tol: 1e-4 };
        let p = CavityParams { n: 23, re: 100.0, lid_velocity: 1.0, mach: 0.1, dt: None, residual };
        let mut serial = Cavity::<f32>::new(&p);
        let mut part = CavityPart::<f32>::new(&p, Arc::new(Single { periodic: [false, false] }));
        for _ in 0..9 {
            serial.advance(serial.dt()).unwrap();
            part.advance(part.dt()).unwrap();
        }
        // A landed (shorter) step too.
        serial.advance(0.5 * serial.dt()).unwrap();
        part.advance(0.5 * part.dt()).unwrap();
        part.sync().unwrap();
        assert!(part.state() == serial.state(), "the state differs");
        let (a, b) = (part.output_fields(), serial.output_fields());
        assert!(a.iter().zip(&b).all(|(x, y)| x.name == y.name && x.values == y.values));
        let piece = part.piece().unwrap();
        assert_eq!((piece.offset, piece.extents), ([0, 0], vec![[0, 22, 0, 22]]));
        assert_eq!(part.diagnostics(), serial.diagnostics());
        let (a, b) = (part.report(), serial.report());
        assert!(b.iter().all(|(k, v)| a.get(k) == Some(v)), "{a:?}\n{b:?}");
        assert_eq!(part.find_non_finite().is_none(), serial.find_non_finite().is_none());
    }
}
