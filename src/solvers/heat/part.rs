//! Explicit heat2d on one rank's block of a domain decomposition (`mpirun`): the nodes the
//! rank owns with a ghost layer towards each neighbour, refreshed before every step and by
//! `sync`. The serial kernel runs on the block: every owned node reads the same neighbours in
//! the same order as in the serial run, and the ring it zeroes is either the global edge
//! (zero there too) or ghosts (overwritten by the next exchange), so the field is bitwise the
//! serial one for any process grid. Reductions (diagnostics, the guard) combine the ranks;
//! checkpoints gather the field on rank 0 in the serial layout.
//!
//! On a GPU (one per rank) the block lives on the device and the process grid splits rows
//! only: the ghost rows, contiguous, are staged through the host copy before every step. The
//! device kernel computes what the CPU kernel does, bit for bit, so the field is again the
//! serial one.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::cuda::HeatCuda;
use super::{Setup, kernels};
use crate::solvers::Device;
use crate::error::Result;
use crate::parallel::{self, Block, Comm, HaloTimes, Reduce, device};
use crate::real::{Precision, Real};
use crate::solver::{ArraySpec, Grid, Location, Mesh, NonFinite, OutField, Piece, Place, Solver, StateArray, take_array};

pub struct Heat2dPart<T: Real> {
    comm: Arc<dyn Comm>,
    setup: Setup,
    block: Block,
    /// The stored block (ghosts included) and the buffer a step writes.
    temp: Vec<T>,
    next: Vec<T>,
    step: u64,
    time: f64,
    /// Time spent in the steps, and in their ghost exchanges beyond the update they overlap.
    halo: HaloTimes,
    /// The block on a GPU; `temp` is then its host copy, current after `sync`.
    gpu: Option<HeatCuda<T>>,
    /// Where the block is updated: `cpu` or the device.
    on: String,
}

impl<T: Real> Heat2dPart<T> {
    /// The block of `comm`'s rank of the explicit heat2d of `setup`, on `device`.
    pub fn on(setup: Setup, comm: Arc<dyn Comm>, device: &Device) -> Result<Self> {
        let mut part = Self::new(setup, comm);
        if let Device::Cuda(gpu, opts) = device {
            let grid = Grid { n: part.block.stored, ..part.setup.grid };
            part.gpu = Some(HeatCuda::new(gpu, opts, &grid, &part.temp)?);
            part.on = format!("cuda ({})", gpu.name);
        }
        Ok(part)
    }

    /// The block of `comm`'s rank of the explicit heat2d of `setup`, on the CPU.
    pub fn new(setup: Setup, comm: Arc<dyn Comm>) -> Self {
        let block = Block::of(comm.as_ref(), setup.grid.n, 1);
        let temp: Vec<T> = sample_nodes(&setup.grid, block.first, block.stored, |x, y| setup.exact.value(x, y, 0.0));
        let mut part = Heat2dPart {
            next: vec![T::zero(); temp.len()],
            temp,
            comm,
            setup,
            block,
            step: 0,
            time: 0.0,
            halo: HaloTimes::default(),
            gpu: None,
            on: "cpu".into(),
        };
        part.zero_edges();
        part
    }

    /// The global edge nodes of the block to zero, as the serial solver's initial state.
    fn zero_edges(&mut self) {
        let [nx, ny] = self.block.stored;
        let n = self.setup.grid.n;
        for j in 0..ny {
            for i in 0..nx {
                let [gx, gy] = [self.block.first[0] + i as isize, self.block.first[1] + j as isize];
                if gx == 0 || gy == 0 || gx == n[0] as isize - 1 || gy == n[1] as isize - 1 {
                    self.temp[j * nx + i] = T::zero();
                }
            }
        }
    }

    /// The owned nodes with their global (x, y) index.
    fn owned(&self) -> impl Iterator<Item = ([usize; 2], T)> + '_ {
        self.block.owned_nodes(&self.temp)
    }
}

/// `f` at the `n` nodes of grid `g` from node `first` on, each position computed from its
/// global index as the serial solver's `sample` does (so with the same bits).
fn sample_nodes<T: Real>(g: &Grid, first: [isize; 2], n: [usize; 2], f: impl Fn(f64, f64) -> f64) -> Vec<T> {
    let at = |a: usize, k: usize| g.origin[a] + (first[a] + k as isize) as f64 * g.spacing[a];
    (0..n[1]).flat_map(|j| (0..n[0]).map(move |i| (i, j))).map(|(i, j)| T::of(f(at(0, i), at(1, j)))).collect()
}

impl<T: Real> Solver for Heat2dPart<T> {
    fn kind(&self) -> &'static str {
        "heat2d"
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
        self.setup.dt
    }

    fn advance(&mut self, dt: f64) -> Result<()> {
        // As the serial solver: exactly r for a full step, proportional for a landed one.
        let r = T::of(if dt == self.setup.dt { self.setup.r } else { self.setup.r * (dt / self.setup.dt) });
        let start = Instant::now();
        if let Some(gpu) = &mut self.gpu {
            let f = &mut gpu.field;
            device::exchange_rows(&f.stream, &self.block, self.comm.as_ref(), [&mut f.temp], [&mut self.temp])?;
            self.halo.exchanging += start.elapsed();
            gpu.step(r)?;
            self.halo.stepping += start.elapsed();
            self.step += 1;
            self.time += dt;
            return Ok(());
        }
        let nx = self.block.stored[0];
        // The whole block while the ghosts travel, then again the lines next to them.
        let (next, mut update) = (&mut self.next, Duration::ZERO);
        self.block.exchange_during(self.comm.as_ref(), &mut self.temp, &mut |t| {
            let at = Instant::now();
            kernels::ftcs2d(t, next, nx, r);
            update += at.elapsed();
        });
        self.halo.exchanging += start.elapsed() - update;
        let ([w, e, s, n], ny) = (self.block.ghosts, self.block.stored[1]);
        let rows: Vec<usize> = [(s > 0, 1), (n > 0, ny - 2)].into_iter().filter(|x| x.0).map(|x| x.1).collect();
        let cols: Vec<usize> = [(w > 0, 1), (e > 0, nx - 2)].into_iter().filter(|x| x.0).map(|x| x.1).collect();
        kernels::ftcs2d_lines(&self.temp, &mut self.next, nx, r, &rows, &cols);
        self.halo.stepping += start.elapsed();
        std::mem::swap(&mut self.temp, &mut self.next);
        self.step += 1;
        self.time += dt;
        Ok(())
    }

    /// The host copy current, ghosts included (for the output pieces' shared border).
    fn sync(&mut self) -> Result<()> {
        if let Some(gpu) = &self.gpu {
            gpu.field.download(&mut self.temp)?;
        }
        self.block.exchange(self.comm.as_ref(), &mut self.temp);
        Ok(())
    }

    fn wait(&mut self) -> Result<()> {
        self.gpu.as_ref().map_or(Ok(()), |gpu| gpu.field.wait())
    }

    fn backend(&self) -> String {
        parallel::backend(&self.on, self.comm.as_ref())
    }

    fn mesh(&self) -> Mesh {
        Mesh::Nodes(self.setup.grid)
    }

    fn piece(&self) -> Option<Piece> {
        Some(self.block.piece(self.comm.as_ref(), &self.setup.grid))
    }

    fn units(&self) -> &'static str {
        "T: temperature; T_exact: the analytic solution at the same time; x, y and t in the units of \
         the case (domain, diffusivity)"
    }

    fn output_fields(&self) -> Vec<OutField> {
        let [xs, ys] = self.block.piece_range();
        let t = self.block.piece_of(&self.temp);
        let first = [xs.start as isize, ys.start as isize];
        let exact: Vec<T> = sample_nodes(&self.setup.grid, first, [xs.len(), ys.len()], |x, y| {
            self.setup.exact.value(x, y, self.time)
        });
        vec![
            OutField::new("T", 1, Location::Node, T::wrap(t)),
            OutField::new("T_exact", 1, Location::Node, T::wrap(exact)),
        ]
    }

    /// On rank 0 the whole field, gathered in the serial layout; nothing on the others.
    fn state(&self) -> Vec<StateArray> {
        let whole = self.block.gather_whole(self.comm.as_ref(), &self.temp, self.setup.grid.n);
        whole.map_or(Vec::new(), |t| vec![StateArray::field("T", Place::NODE, &self.mesh(), T::wrap(t))])
    }

    fn state_layout(&self) -> Vec<ArraySpec> {
        vec![ArraySpec::field("T", Place::NODE, &self.mesh(), T::PRECISION)]
    }

    /// From the whole field (every rank reads the checkpoint): the stored block, ghosts
    /// included.
    fn restore(&mut self, step: u64, time: f64, mut arrays: Vec<StateArray>) -> Result<()> {
        let n = self.setup.grid.n;
        let whole = take_array::<T>(&mut arrays, "T", &[n[1], n[0]])?;
        self.temp = self.block.cut(&whole, n);
        if let Some(gpu) = &mut self.gpu {
            gpu.field.upload(&self.temp)?;
        }
        self.step = step;
        self.time = time;
        Ok(())
    }

    /// The first non-finite node in the serial scan order over all ranks.
    fn find_non_finite(&self) -> Option<NonFinite> {
        self.block.first_non_finite(self.comm.as_ref(), "T", &self.temp, self.setup.grid.n)
    }

    /// As the serial solver's, combined over the ranks (the sums in another order: equal to
    /// the serial values to round-off).
    fn diagnostics(&self) -> Vec<(&'static str, Option<f64>)> {
        let g = &self.setup.grid;
        let cell = g.spacing[0] * g.spacing[1];
        let (mut max, mut min, mut heat, mut max_err) = (f64::MIN, f64::MAX, 0.0, 0.0f64);
        let mut diffs = Vec::new();
        for ([x, y], v) in self.owned() {
            let v = v.f64();
            let [px, py] = [g.origin[0] + x as f64 * g.spacing[0], g.origin[1] + y as f64 * g.spacing[1]];
            let d = v - self.setup.exact.value(px, py, self.time);
            (max, min, heat) = (max.max(v), min.min(v), heat + v * cell);
            max_err = max_err.max(d.abs());
            diffs.push(d);
        }
        let c = self.comm.as_ref();
        let max_err = c.all_reduce(max_err, Reduce::Max);
        let s = super::error_scale(max_err);
        let sq: f64 = diffs.iter().map(|d| (d * s) * (d * s)).sum();
        let nodes = g.nodes() as f64;
        vec![
            ("T_max", Some(c.all_reduce(max, Reduce::Max))),
            ("T_min", Some(c.all_reduce(min, Reduce::Min))),
            ("heat_content", Some(c.all_reduce(heat, Reduce::Sum))),
            ("max_error", Some(max_err)),
            ("rms_error", Some((c.all_reduce(sq, Reduce::Sum) / nodes).sqrt() / s)),
        ]
    }

    fn report(&self) -> serde_json::Map<String, serde_json::Value> {
        let d = self.diagnostics();
        let mut m = serde_json::Map::new();
        m.insert("reference".into(), "analytic".into());
        self.halo.report(self.comm.as_ref(), &mut m);
        m.insert("max_error".into(), d[3].1.into());
        m.insert("rms_error".into(), d[4].1.into());
        m
    }

    fn bytes_per_step(&self) -> f64 {
        2.0 * self.setup.grid.nodes() as f64 * T::PRECISION.bytes() as f64
    }
}

/// The explicit heat2d of `setup` split over the ranks of `comm`, on `device`.
pub fn build(setup: Setup, precision: Precision, comm: Arc<dyn Comm>, device: &Device) -> Result<Box<dyn Solver>> {
    crate::in_precision!(precision, |T| Heat2dPart::<T>::on(setup, comm, device))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::Single;
    use crate::solvers::heat::{Heat, Heat2dParams};

    /// One rank's "block" is the whole grid: the decomposed code path (exchange, kernel, gather,
    /// pieces) gives the serial solver's field, state and output.
    #[test]
    fn a_single_part_is_the_serial_solver() {
        let p = Heat2dParams { n: 23, r: 0.24, ..Heat2dParams::default() };
        let mut serial = Heat::<f32>::heat2d(&p);
        let mut part = Heat2dPart::<f32>::new(p.setup(), Arc::new(Single { periodic: [false, false] }));
        for _ in 0..9 {
            serial.advance(serial.dt()).unwrap();
            part.advance(part.dt()).unwrap();
        }
        part.sync().unwrap();
        assert_eq!(part.state(), serial.state());
        let (a, b) = (part.output_fields(), serial.output_fields());
        assert!(a.iter().zip(&b).all(|(x, y)| x.name == y.name && x.values == y.values));
        let piece = part.piece().unwrap();
        assert_eq!((piece.offset, piece.extents), ([0, 0], vec![[0, 22, 0, 22]]));
        assert_eq!(part.find_non_finite().is_none(), serial.find_non_finite().is_none());
    }
}
