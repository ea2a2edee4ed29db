//! Domain decomposition across processes (`mpirun -np P sim run case.yaml`, cargo feature
//! `mpi`): the process grid, each rank's block of the global grid, ghost-layer exchange and
//! reductions. A solver sees the processes through [`Comm`]: [`Single`] is the one process of
//! a run without MPI (and the tests of the decomposed code paths), `mpi::World` the MPI one.

pub mod device;
#[cfg(feature = "mpi")]
pub mod mpi;

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Result, SimError, input};
use crate::real::Real;
use crate::solver::{Grid, Mesh, NonFinite, Piece};

/// How a reduction combines the ranks' values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    Min,
    Max,
    Sum,
}

/// A message [`Comm::exchange`] sends: (rank, tag, data).
pub type Outgoing<'a> = (usize, i32, &'a [f64]);
/// A message [`Comm::exchange`] receives: (rank, tag, buffer).
pub type Incoming<'a> = (usize, i32, &'a mut [f64]);

/// Lines of a stored block one message carries: (rank, tag, stored indices along the axis).
pub type Lines = (usize, i32, Range<usize>);

/// The processes of a run, numbered from 0.
pub trait Ranks: Send + Sync {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// The lowest rank whose `code` is not 0, with its code, on every rank: how the ranks agree
    /// that one of them failed.
    fn first_failure(&self, code: i32) -> Option<(usize, i32)>;
}

/// The processes an MPI launcher started, before the grid they share is known.
pub trait Processes: Ranks {
    /// The ranks as the process grid `dims` (ranks numbered with y fastest), periodic along
    /// the axes `periodic` names.
    fn grid(&self, dims: [usize; 2], periodic: [bool; 2]) -> Arc<dyn Comm>;
}

/// The processes of a run on a 2D Cartesian process grid.
pub trait Comm: Ranks {
    /// Ranks along x and y.
    fn dims(&self) -> [usize; 2];
    /// This rank's place on the process grid.
    fn coords(&self) -> [usize; 2];
    /// The rank beside this one along `axis` (0: x, 1: y), above (`up`) or below; across a
    /// periodic axis the grid wraps around (possibly to this rank itself).
    fn neighbour(&self, axis: usize, up: bool) -> Option<usize>;
    /// Send each `(rank, tag, data)` and receive each `(rank, tag, buffer)` (of the size the
    /// sender sends), all posted at once; `during` runs while they travel; returns when all
    /// have completed.
    fn exchange(&self, sends: &[Outgoing], receives: &mut [Incoming], during: &mut dyn FnMut());
    /// `v` combined over all ranks, on every rank.
    fn all_reduce(&self, v: f64, op: Reduce) -> f64;
    /// Every rank's `data`, in rank order, on rank 0 (empty on the others).
    fn gather(&self, data: &[f64]) -> Vec<Vec<f64>>;
}

/// The one process of a run without MPI (size 1; a periodic axis is its own neighbour).
pub struct Single {
    pub periodic: [bool; 2],
}

impl Ranks for Single {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn first_failure(&self, code: i32) -> Option<(usize, i32)> {
        (code != 0).then_some((0, code))
    }
}

impl Comm for Single {
    fn dims(&self) -> [usize; 2] {
        [1, 1]
    }
    fn coords(&self) -> [usize; 2] {
        [0, 0]
    }
    fn neighbour(&self, axis: usize, _up: bool) -> Option<usize> {
        self.periodic[axis].then_some(0)
    }
    fn exchange(&self, sends: &[Outgoing], receives: &mut [Incoming], during: &mut dyn FnMut()) {
        during();
        for (_, tag, buf) in receives.iter_mut() {
            let (_, _, data) = sends.iter().find(|(_, t, _)| t == tag).expect("a send for every receive");
            buf.copy_from_slice(data);
        }
    }
    fn all_reduce(&self, v: f64, _op: Reduce) -> f64 {
        v
    }
    fn gather(&self, data: &[f64]) -> Vec<Vec<f64>> {
        vec![data.to_vec()]
    }
}

/// This process's number among the processes of the MPI run on the same machine, as the
/// launcher says (Open MPI, MPICH, Slurm); 0 where none does.
pub fn local_rank() -> usize {
    ["OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
        .unwrap_or(0)
}

/// This process's rank and the number of processes, where an MPI launcher started it, from
/// the launcher's environment (only `sim run` starts MPI itself).
pub fn launcher() -> Option<(usize, usize)> {
    let var = |name: &str| std::env::var(name).ok()?.parse::<usize>().ok();
    [("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE")]
        .into_iter()
        .find_map(|(rank, size)| Some((var(rank)?, var(size)?)))
}

/// Indices of part `i` of `parts` near-equal parts of `0..n` (the first `n % parts` one longer).
pub fn split(n: usize, parts: usize, i: usize) -> Range<usize> {
    let (q, r) = (n / parts, n % parts);
    let start = i * q + i.min(r);
    start..start + q + usize::from(i < r)
}

/// The process grid for `size` ranks on a grid of `n` nodes or cells: `requested`
/// (`parallel.ranks`) if given, else the factorisation `px * py = size` with the shortest cut
/// between the blocks (`(px - 1) ny + (py - 1) nx`), each block at least `min[0]` columns
/// and `min[1]` rows wide.
pub fn process_grid(size: usize, n: [usize; 2], requested: Option<[usize; 2]>, min: [usize; 2]) -> Result<[usize; 2]> {
    let fits = |[px, py]: [usize; 2]| n[0] / px >= min[0] && n[1] / py >= min[1];
    let least = if min[0] == min[1] { format!("{}", min[0]) } else { format!("{} columns by {} rows", min[0], min[1]) };
    if let Some(r) = requested {
        if r[0].checked_mul(r[1]) != Some(size) {
            let asked = (r[0] as u128 * r[1] as u128).to_string();
            return input(format!("parallel.ranks: {r:?} is {asked} ranks, the run has {size}"));
        }
        if !fits(r) {
            return input(format!(
                "parallel.ranks: {r:?} leaves blocks narrower than {least} on the {} x {} grid",
                n[0], n[1]
            ));
        }
        return Ok(r);
    }
    let cut = |[px, py]: [usize; 2]| (px - 1) * n[1] + (py - 1) * n[0];
    (1..=size)
        .filter(|px| size.is_multiple_of(*px))
        .map(|px| [px, size / px])
        .filter(|d| fits(*d))
        .min_by_key(|d| cut(*d))
        .ok_or_else(|| {
            let [nx, ny] = n;
            SimError::Input(format!("{size} ranks cannot share the {nx} x {ny} grid (blocks of at least {least})"))
        })
}

/// The place of `rank` on the process grid `dims`: ranks are numbered with y fastest, as
/// `MPI_Cart_create` numbers them.
pub fn coords_of(dims: [usize; 2], rank: usize) -> [usize; 2] {
    [rank / dims[1], rank % dims[1]]
}

/// This rank's block of a grid of `n` nodes (or cells) on the process grid of `comm`, with a
/// ghost layer of `ghost` entries on each side that has a neighbour.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Global indices this rank owns, per axis.
    pub owned: [Range<usize>; 2],
    /// Global index of the first stored entry per axis (owned start minus the ghost layer
    /// where there is one; may wrap on a periodic axis, so kept signed).
    pub first: [isize; 2],
    /// Stored entries per axis, ghosts included.
    pub stored: [usize; 2],
    /// Ghost layers at [west, east, south, north].
    pub ghosts: [usize; 4],
    /// The ghost layers of a side that has a neighbour, [west, east, south, north]: the
    /// neighbour above along an axis holds as many of this block's lines as the layer below,
    /// the one below as many as the layer above.
    layers: [usize; 4],
}

impl Block {
    pub fn of(comm: &dyn Comm, n: [usize; 2], ghost: usize) -> Block {
        let beside = [0, 1].map(|a| [false, true].map(|up| comm.neighbour(a, up).is_some()));
        Block::at(comm.dims(), comm.coords(), beside, n, ghost)
    }

    /// The block at `coords` of process grid `dims`, with neighbours as `beside[axis][up]` says.
    pub fn at(dims: [usize; 2], coords: [usize; 2], beside: [[bool; 2]; 2], n: [usize; 2], ghost: usize) -> Block {
        Block::with_layers(dims, coords, beside, n, [ghost; 4])
    }

    /// [`Block::at`] with `layers` ghost layers on the sides [west, east, south, north] that
    /// have a neighbour: wider on the east and north for the faces of a staggered grid, which
    /// a block owns on the west and south of its cells.
    pub fn with_layers(
        dims: [usize; 2],
        coords: [usize; 2],
        beside: [[bool; 2]; 2],
        n: [usize; 2],
        layers: [usize; 4],
    ) -> Block {
        let owned = [0, 1].map(|a| split(n[a], dims[a], coords[a]));
        let g = |a: usize, up: usize| if beside[a][up] { layers[2 * a + up] } else { 0 };
        let ghosts = [g(0, 0), g(0, 1), g(1, 0), g(1, 1)];
        let first = [0, 1].map(|a| owned[a].start as isize - ghosts[2 * a] as isize);
        let stored = [0, 1].map(|a| owned[a].len() + ghosts[2 * a] + ghosts[2 * a + 1]);
        Block { owned, first, stored, ghosts, layers }
    }

    /// The whole grid of `n` entries as one block (a run without MPI).
    pub fn whole(n: [usize; 2]) -> Block {
        Block::at([1, 1], [0, 0], [[false; 2]; 2], n, 0)
    }

    /// The block of `rank` on a process grid `dims` that does not wrap around.
    pub fn of_rank(dims: [usize; 2], rank: usize, n: [usize; 2], ghost: usize) -> Block {
        let coords = coords_of(dims, rank);
        let beside = [0, 1].map(|a| [coords[a] > 0, coords[a] + 1 < dims[a]]);
        Block::at(dims, coords, beside, n, ghost)
    }

    /// This block without its ghost layers: the layout of an array of the owned entries alone.
    pub fn bare(&self) -> Block {
        let owned = self.owned.clone();
        let (first, stored) = (owned.clone().map(|r| r.start as isize), owned.clone().map(|r| r.len()));
        Block { owned, first, stored, ghosts: [0; 4], layers: [0; 4] }
    }

    /// The owned entries of a stored array (`stored` x, row-major), row by row.
    pub fn owned_of<T: Copy>(&self, v: &[T]) -> Vec<T> {
        let [w, s] = [self.ghosts[0], self.ghosts[2]];
        let nx = self.stored[0];
        (0..self.owned[1].len())
            .flat_map(|j| v[(s + j) * nx + w..(s + j) * nx + w + self.owned[0].len()].iter().copied())
            .collect()
    }

    /// The stored block (ghosts included) of `whole`, a row-major array of `n` entries.
    pub fn cut<T: Copy>(&self, whole: &[T], n: [usize; 2]) -> Vec<T> {
        let [x0, y0] = self.first;
        let at = |k: usize, first: isize| (first + k as isize) as usize;
        (0..self.stored[1])
            .flat_map(|j| (0..self.stored[0]).map(move |i| whole[at(j, y0) * n[0] + at(i, x0)]))
            .collect()
    }

    /// The owned entries of a stored array with their global (x, y) index, row by row.
    pub fn owned_nodes<'a, T: Copy>(&'a self, v: &'a [T]) -> impl Iterator<Item = ([usize; 2], T)> + 'a {
        let [xs, ys] = self.owned.clone();
        let [w, s] = [self.ghosts[0], self.ghosts[2]];
        let nx = self.stored[0];
        ys.enumerate()
            .flat_map(move |(j, gy)| xs.clone().enumerate().map(move |(i, gx)| ([gx, gy], v[(s + j) * nx + w + i])))
    }

    /// The whole array of `n` entries on rank 0, gathered from every rank's owned entries of
    /// its stored array `v` (None on the other ranks). Collective.
    pub fn gather_whole<T: Real>(&self, comm: &dyn Comm, v: &[T], n: [usize; 2]) -> Option<Vec<T>> {
        self.gather_region(comm, v, n, [0..n[0], 0..n[1]])
    }

    /// The entries `region` (global ranges per axis) of the whole array of `n` entries, row by
    /// row, on rank 0, gathered from the ranks' owned entries of their stored arrays `v` (None
    /// on the other ranks): e.g. one line of the grid. Collective.
    pub fn gather_region<T: Real>(
        &self,
        comm: &dyn Comm,
        v: &[T],
        n: [usize; 2],
        region: [Range<usize>; 2],
    ) -> Option<Vec<T>> {
        let [xs, ys] = [0, 1].map(|a| overlap(&self.owned[a], &region[a]));
        let at = |a: usize, g: usize| (g as isize - self.first[a]) as usize;
        let mine: Vec<f64> =
            ys.flat_map(|gy| xs.clone().map(move |gx| v[at(1, gy) * self.stored[0] + at(0, gx)].f64())).collect();
        let parts = comm.gather(&mine);
        if comm.rank() != 0 {
            return None;
        }
        let (dims, [x0, y0], width) = (comm.dims(), [region[0].start, region[1].start], region[0].len());
        let mut whole = vec![T::zero(); width * region[1].len()];
        for (rank, values) in parts.iter().enumerate() {
            let [xs, ys] = [0, 1].map(|a| overlap(&split(n[a], dims[a], coords_of(dims, rank)[a]), &region[a]));
            let at = ys.flat_map(|gy| xs.clone().map(move |gx| (gy - y0) * width + gx - x0));
            for (k, v) in at.zip(values) {
                whole[k] = T::of(*v);
            }
        }
        Some(whole)
    }

    /// The nodes of this block's output piece: the owned nodes and the first node of the east
    /// and north neighbours (ParaView's pieces of point data share their border nodes).
    pub fn piece_range(&self) -> [Range<usize>; 2] {
        let [xs, ys] = &self.owned;
        let shared = |a: usize| usize::from(self.ghosts[2 * a + 1] > 0);
        [xs.start..xs.end + shared(0), ys.start..ys.end + shared(1)]
    }

    /// The values of the output piece (see [`Block::piece_range`]) of a stored array whose
    /// ghosts are current, row by row.
    pub fn piece_of<T: Copy>(&self, v: &[T]) -> Vec<T> {
        let [xs, ys] = self.piece_range();
        let nx = self.stored[0];
        let at = |a: usize, g: usize| (g as isize - self.first[a]) as usize;
        ys.flat_map(|gy| xs.clone().map(move |gx| v[at(1, gy) * nx + at(0, gx)])).collect()
    }

    /// This block's output piece of the node grid `g`, with every rank's extent (the blocks
    /// of `comm`'s process grid, which does not wrap around).
    pub fn piece(&self, comm: &dyn Comm, g: &Grid) -> Piece {
        let [xs, ys] = self.piece_range();
        let grid = Grid {
            n: [xs.len(), ys.len()],
            origin: [g.origin[0] + xs.start as f64 * g.spacing[0], g.origin[1] + ys.start as f64 * g.spacing[1]],
            spacing: g.spacing,
        };
        let extents = (0..comm.size())
            .map(|rank| {
                let [x, y] = Block::of_rank(comm.dims(), rank, g.n, 1).piece_range();
                [x.start, x.end - 1, y.start, y.end - 1]
            })
            .collect();
        Piece { mesh: Mesh::Nodes(grid), offset: [xs.start, ys.start], extents }
    }

    /// The first non-finite owned entry of the stored array `v` (of a whole array of `n`
    /// entries), as `field`, in the serial scan order over all ranks. Collective.
    pub fn first_non_finite<T: Real>(
        &self,
        comm: &dyn Comm,
        field: &'static str,
        v: &[T],
        n: [usize; 2],
    ) -> Option<NonFinite> {
        let mine = self.owned_nodes(v).find(|(_, v)| !v.is_finite());
        let index = mine.map_or(f64::INFINITY, |([x, y], _)| (y * n[0] + x) as f64);
        let first = comm.all_reduce(index, Reduce::Min);
        if first.is_infinite() {
            return None;
        }
        let value = comm.all_reduce(mine.filter(|_| index == first).map_or(0.0, |(_, v)| v.f64()), Reduce::Sum);
        let k = first as usize;
        Some(NonFinite { field, index: vec![k % n[0], k / n[0]], value })
    }

    /// Fill the ghost layers of `v` (stored dims, row-major) from the neighbours: first the
    /// columns along x, then whole stored rows along y (so corner ghosts arrive too).
    pub fn exchange<T: Real>(&self, comm: &dyn Comm, v: &mut [T]) {
        self.exchange_during(comm, v, &mut |_| {});
    }

    /// [`Block::exchange`], running `during` on `v` (its ghosts not yet current) while the
    /// columns travel: the work that needs no ghost overlaps the exchange.
    pub fn exchange_during<T: Real>(&self, comm: &dyn Comm, v: &mut [T], during: &mut dyn FnMut(&[T])) {
        self.exchange_all_during(comm, [v], &mut |[v]| during(v));
    }

    /// [`Block::exchange_during`] of several stored arrays at once: each message carries the
    /// lines of all of them, and `during` sees them all.
    pub fn exchange_all_during<T: Real, const N: usize>(
        &self,
        comm: &dyn Comm,
        mut vs: [&mut [T]; N],
        during: &mut dyn FnMut([&[T]; N]),
    ) {
        self.exchange_along(comm, &mut vs, 0, during);
        self.exchange_along(comm, &mut vs, 1, &mut |_| {});
    }

    /// One phase of [`Block::exchange`] alone: the ghost lines along `axis` (0: the columns of
    /// every stored row, 1: whole stored rows).
    pub fn exchange_axis<T: Real>(&self, comm: &dyn Comm, v: &mut [T], axis: usize) {
        self.exchange_along(comm, &mut [v], axis, &mut |_| {});
    }

    /// One phase of [`Block::exchange`]: the messages of [`Block::traffic`] along `axis`.
    fn exchange_along<T: Real, const N: usize>(
        &self,
        comm: &dyn Comm,
        vs: &mut [&mut [T]; N],
        axis: usize,
        during: &mut dyn FnMut([&[T]; N]),
    ) {
        let (sends, receives) = self.traffic(comm, axis);
        let sent: Vec<(usize, i32, Vec<f64>)> = (sends.into_iter())
            .map(|(to, tag, r)| (to, tag, self.lines(axis, r)))
            .map(|(to, tag, at)| (to, tag, vs.iter().flat_map(|v| at.iter().map(|&k| v[k].f64())).collect()))
            .collect();
        let mut got: Vec<(usize, i32, Vec<f64>, Vec<usize>)> = (receives.into_iter())
            .map(|(from, tag, r)| (from, tag, self.lines(axis, r)))
            .map(|(from, tag, at)| (from, tag, vec![0.0; N * at.len()], at))
            .collect();
        let sends: Vec<Outgoing> = sent.iter().map(|(r, t, d)| (*r, *t, d.as_slice())).collect();
        let mut bufs: Vec<Incoming> = got.iter_mut().map(|(r, t, d, _)| (*r, *t, d.as_mut_slice())).collect();
        comm.exchange(&sends, &mut bufs, &mut || during(vs.each_ref().map(|v| &**v)));
        for (_, _, data, at) in &got {
            for (v, data) in vs.iter_mut().zip(data.chunks(at.len())) {
                for (&k, &x) in at.iter().zip(data) {
                    v[k] = T::of(x);
                }
            }
        }
    }

    /// The messages of one phase of the exchange along `axis`: `(rank, tag, lines)` sent (the
    /// owned lines next to each neighbour, as many as its ghost layer towards this block) and
    /// received (the ghost lines), tagged with the direction of travel (`2 axis` up,
    /// `2 axis + 1` down); lines are stored indices along `axis`.
    pub fn traffic(&self, comm: &dyn Comm, axis: usize) -> (Vec<Lines>, Vec<Lines>) {
        let n = self.stored[axis];
        let [below, above] = [self.ghosts[2 * axis], self.ghosts[2 * axis + 1]];
        let [their_below, their_above] = [self.layers[2 * axis], self.layers[2 * axis + 1]];
        let (up, down) = (2 * axis as i32, 2 * axis as i32 + 1);
        let (to_up, to_down) = (comm.neighbour(axis, true), comm.neighbour(axis, false));
        let sends = [(to_up, up, n - above - their_below..n - above), (to_down, down, below..below + their_above)];
        let receives = [(to_down, up, 0..below), (to_up, down, n - above..n)];
        let present = |m: [(Option<usize>, i32, Range<usize>); 2]| {
            let m = m.into_iter().filter(|(_, _, r)| !r.is_empty());
            m.filter_map(|(rank, tag, r)| rank.map(|rank| (rank, tag, r))).collect()
        };
        (present(sends), present(receives))
    }

    /// Indices into the stored array of lines `r` along `axis` (x: those columns of every
    /// row; y: those whole rows), in storage order.
    fn lines(&self, axis: usize, r: Range<usize>) -> Vec<usize> {
        let [nx, ny] = self.stored;
        match axis {
            0 => (0..ny).flat_map(|j| r.clone().map(move |i| j * nx + i)).collect(),
            _ => (r.start * nx..r.end * nx).collect(),
        }
    }
}

/// The overlap of two ranges (empty, at the later start, where they do not meet).
fn overlap(a: &Range<usize>, b: &Range<usize>) -> Range<usize> {
    let start = a.start.max(b.start);
    start..a.end.min(b.end).max(start)
}

/// The back end of a decomposed solver updating its blocks `on` a device: `ON, P MPI ranks (px x py)`.
pub fn backend(on: &str, comm: &dyn Comm) -> String {
    let [px, py] = comm.dims();
    format!("{on}, {} MPI ranks ({px} x {py})", comm.size())
}

/// Time a decomposed solver spends in its steps, and in their ghost exchanges beyond the work
/// the exchanges overlap.
#[derive(Clone, Copy, Debug, Default)]
pub struct HaloTimes {
    pub stepping: Duration,
    pub exchanging: Duration,
}

impl HaloTimes {
    /// The report's `ranks` and `halo_exchange_share` (rank 0's share: its blocks are among
    /// the widest).
    pub fn report(&self, comm: &dyn Comm, m: &mut serde_json::Map<String, serde_json::Value>) {
        m.insert("ranks".into(), comm.size().into());
        let share = self.exchanging.as_secs_f64() / self.stepping.as_secs_f64().max(f64::MIN_POSITIVE);
        m.insert("halo_exchange_share".into(), share.into());
    }
}

/// Agree across ranks on `r`: the result where every rank succeeded; else an error on every
/// rank with the exit code of the lowest failing rank, its message on that rank, and
/// [`SimError::Quiet`] (nothing to print) on the others.
pub fn agree<T>(comm: &dyn Ranks, r: Result<T>) -> Result<T> {
    // A failure agreed on before is told by one rank and quiet on the others: agreeing on it
    // again leaves it with the rank that tells it.
    let code = match &r {
        Err(SimError::Quiet(_)) | Ok(_) => 0,
        Err(e) => e.exit_code(),
    };
    match (comm.first_failure(code), r) {
        (None, r) => r,
        (Some((rank, _)), Err(e)) if rank == comm.rank() => Err(e.on_rank(rank, comm.size())),
        (Some((_, code)), _) => Err(SimError::Quiet(code)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_cover_the_range_in_order() {
        for (n, parts) in [(10, 3), (7, 7), (1000, 4), (5, 2)] {
            let all: Vec<usize> = (0..parts).flat_map(|i| split(n, parts, i)).collect();
            assert_eq!(all, (0..n).collect::<Vec<_>>(), "{n} in {parts}");
        }
    }

    /// Wider ghost layers east and north (the faces of a staggered grid): a periodic block
    /// that is its own neighbour gets its last column (row) west (south) and its first two
    /// east (north), corners included.
    #[test]
    fn wider_layers_east_and_north_wrap_around() {
        let comm = Single { periodic: [true, true] };
        let b = Block::with_layers([1, 1], [0, 0], [[true; 2]; 2], [4, 3], [1, 2, 1, 2]);
        assert_eq!(b.stored, [7, 6]);
        let mut v = vec![f64::NAN; 42];
        for (y, x) in (0..3).flat_map(|y| (0..4).map(move |x| (y, x))) {
            v[(y + 1) * 7 + x + 1] = (10 * y + x) as f64;
        }
        b.exchange(&comm, &mut v);
        for (j, i) in (0..6).flat_map(|j| (0..7).map(move |i| (j, i))) {
            assert_eq!(v[j * 7 + i], (10 * ((j + 2) % 3) + (i + 3) % 4) as f64, "stored ({i}, {j})");
        }
    }

    #[test]
    fn the_process_grid_cuts_least() {
        assert_eq!(process_grid(4, [100, 100], None, [2, 2]).unwrap(), [2, 2]);
        assert_eq!(process_grid(2, [100, 30], None, [2, 2]).unwrap(), [2, 1]);
        assert_eq!(process_grid(6, [30, 300], None, [2, 2]).unwrap(), [1, 6]);
        assert_eq!(process_grid(4, [100, 100], Some([4, 1]), [2, 2]).unwrap(), [4, 1]);
        assert!(process_grid(4, [100, 100], Some([3, 1]), [2, 2]).is_err());
        // A product that wraps around to the size is still refused, with its true value.
        let wraps = process_grid(2, [100, 100], Some([(1 << 63) + 1, 2]), [2, 2]).unwrap_err().to_string();
        assert!(wraps.contains("is 18446744073709551618 ranks, the run has 2"), "{wraps}");
        assert!(process_grid(8, [4, 4], None, [2, 2]).is_err());
        // Each axis its own least width (an east sponge of 6 cells: 7 columns, rows free).
        assert_eq!(process_grid(2, [40, 10], Some([1, 2]), [7, 2]).unwrap(), [1, 2]);
        let narrow = process_grid(2, [40, 10], Some([2, 1]), [7, 30]).unwrap_err().to_string();
        assert!(narrow.contains("narrower than 7 columns by 30 rows"), "{narrow}");
    }
}
