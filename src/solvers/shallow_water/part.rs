//! The shallow-water schemes on one rank's block of a domain decomposition (`mpirun`): the
//! block's cells with the scheme's ghost layers on every side, the ghosts towards another rank
//! ([`Side::Neighbour`]) refreshed by a halo exchange after every stage, before the boundary
//! conditions of the domain's own sides. Every interior cell then reads the same values as in
//! the serial run, and the ghosts the block holds beyond the domain's sides come out as the
//! serial run's, so the state is bitwise the serial one for any process grid.
//!
//! The finite-difference schemes' faces of the C grid ([`Halo::new`] of a face place): a
//! block owns the faces west and south of its cells, and holds the neighbour's first faces
//! east and north as ghosts too; their exchange goes along y, then x, between the passes of
//! the boundary fill (see the module `fd_boundary`).
//!
//! Checkpoints hold the serial arrays, ghosts included: [`Window`] places a block's arrays in
//! them, each rank contributing its cells and, at the domain's sides, the ghosts beyond.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, CudaStream};

use crate::error::Result;
use crate::parallel::{Block, Comm, HaloTimes, Reduce, coords_of, device, split};
use crate::real::Real;
use crate::solver::{Grid, Mesh, NonFinite, Piece, Place};

use super::grid::{Field, Part, Physics, Side, Sides};

/// The ghost exchange of a block's fields at one place.
#[derive(Clone)]
pub struct Halo {
    comm: Arc<dyn Comm>,
    block: Block,
    /// Nanoseconds spent in exchanges, shared with the solver's report.
    spent: Arc<AtomicU64>,
}

impl Halo {
    /// The exchange of the block of `ranks` of its fields stored at `place`: `place.halo` ghost
    /// layers on every side, and on the east and north the faces (or corners) of the block's
    /// last cells, which the neighbour there owns (a block owns the faces west and south of its
    /// cells, see [`Window`]).
    pub fn new(ranks: &Ranks, place: Place) -> Self {
        let (comm, n) = (ranks.comm.clone(), [ranks.whole.nx, ranks.whole.ny]);
        let (h, [ex, ey]) = (place.halo, super::grid::extra(place.loc));
        let block = Block::with_layers(comm.dims(), comm.coords(), [[true; 2]; 2], n, [h, h + ex, h, h + ey]);
        Halo { comm, block, spent: ranks.exchanging.clone() }
    }

    /// The ghosts of the fields `fs` towards the neighbouring ranks from them (corners
    /// included), one message per neighbour and direction for all of them.
    pub fn exchange<T: Real, const N: usize>(&self, fs: [&mut Field<T>; N]) {
        let start = Instant::now();
        self.block.exchange_all_during(self.comm.as_ref(), fs.map(|f| &mut f.v[..]), &mut |_| {});
        self.spent.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    /// [`Halo::exchange`] of the fields `device` on a GPU, staged through the host arrays
    /// `host` of their layout (the blocks are whole rows, see [`device::exchange_rows`]).
    pub fn exchange_device<T: Real, const N: usize>(
        &self,
        stream: &Arc<CudaStream>,
        fields: [&mut CudaSlice<T>; N],
        host: [&mut [T]; N],
    ) -> Result<()> {
        let start = Instant::now();
        let r = device::exchange_rows(stream, &self.block, self.comm.as_ref(), fields, host);
        self.spent.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        r
    }

    /// The rows of the device array `d` that the exchange along y sends (and the ghost rows it
    /// receives) into the host array `h` of its layout, for a host exchange that keeps some
    /// ghost entries ([`Halo::exchange_axis`] between the passes of a boundary fill).
    pub fn download_rows<T: Real>(&self, stream: &Arc<CudaStream>, d: &CudaSlice<T>, h: &mut [T]) -> Result<()> {
        device::download_rows(stream, &self.block, self.comm.as_ref(), d, h, true)
    }

    /// The ghost rows the exchange along y receives, from the host array `h` into `d`.
    pub fn upload_ghost_rows<T: Real>(&self, stream: &Arc<CudaStream>, d: &mut CudaSlice<T>, h: &[T]) -> Result<()> {
        device::upload_ghost_rows(stream, &self.block, self.comm.as_ref(), d, h)
    }

    /// The ghosts of `f` along `axis` alone (0: the columns of every row, 1: whole rows).
    pub fn exchange_axis<T: Real>(&self, f: &mut Field<T>, axis: usize) {
        let start = Instant::now();
        self.block.exchange_axis(self.comm.as_ref(), &mut f.v, axis);
        self.spent.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    /// The largest of `v` over the ranks.
    pub fn max(&self, v: f64) -> f64 {
        self.comm.all_reduce(v, Reduce::Max)
    }
}

/// The cells of the block of `rank` on the process grid `dims` in a domain of `n` cells.
pub fn cells_of(n: [usize; 2], dims: [usize; 2], rank: usize) -> [Range<usize>; 2] {
    let coords = coords_of(dims, rank);
    [0, 1].map(|a| split(n[a], dims[a], coords[a]))
}

/// The physics of the block of `comm`'s rank of the domain of `whole`: its cells, and its
/// sides, those towards another rank (across a periodic axis shared by several ranks, too)
/// [`Side::Neighbour`].
pub fn block_physics(whole: &Physics, comm: &dyn Comm) -> Physics {
    let n = [whole.nx, whole.ny];
    let owned = cells_of(n, comm.dims(), comm.rank());
    let side = |s: Side, axis: usize, up: bool| if comm.neighbour(axis, up).is_some() { Side::Neighbour } else { s };
    let s = whole.sides;
    Physics {
        nx: owned[0].len(),
        ny: owned[1].len(),
        sides: Sides {
            north: side(s.north, 1, true),
            east: side(s.east, 0, true),
            south: side(s.south, 1, false),
            west: side(s.west, 0, false),
        },
        part: Some(Part {
            offset: [owned[0].start, owned[1].start],
            whole: n,
            periodic: [s.periodic_x(), s.periodic_y()],
        }),
        ..*whole
    }
}

/// A block's array of one place in the whole domain's array (stored indices, ghosts
/// included): stored entry `k` of the block is entry `k + offset` of the whole one.
pub struct Window {
    /// The whole array's stored dims and the block's.
    whole: [usize; 2],
    dims: [usize; 2],
    offset: [usize; 2],
    /// The entries of the whole array the block contributes to it: those of its cells (their
    /// west or south faces, corners) and, at the domain's sides, the ghosts beyond them.
    owned: [Range<usize>; 2],
}

impl Window {
    /// The window at `place` of the block of `cells` of the domain of `whole`.
    pub fn new(whole: &Physics, cells: &[Range<usize>; 2], place: Place) -> Window {
        let n = [whole.nx, whole.ny];
        let stored = super::grid::stored_dims(whole, place);
        let offset = [cells[0].start, cells[1].start];
        let dims = [0, 1].map(|a| stored[a] - n[a] + cells[a].len());
        let owned = [0, 1].map(|a| {
            let start = if cells[a].start == 0 { 0 } else { cells[a].start + place.halo };
            let end = if cells[a].end == n[a] { stored[a] } else { cells[a].end + place.halo };
            start..end
        });
        Window { whole: stored, dims, offset, owned }
    }

    /// The entries of `v` (the block's array) that it contributes, row by row.
    pub fn owned_of<T: Copy>(&self, v: &[T]) -> Vec<T> {
        let [xs, ys] = self.owned.clone();
        let [ox, oy] = self.offset;
        ys.flat_map(|y| xs.clone().map(move |x| v[(y - oy) * self.dims[0] + x - ox])).collect()
    }

    /// Place `part` (from [`Window::owned_of`]) into `whole`.
    pub fn place<T: Copy>(&self, part: impl IntoIterator<Item = T>, whole: &mut [T]) {
        let [xs, ys] = self.owned.clone();
        let at = ys.flat_map(|y| xs.clone().map(move |x| y * self.whole[0] + x));
        for (k, v) in at.zip(part) {
            whole[k] = v;
        }
    }

    /// The block's array cut out of the whole one.
    pub fn cut<T: Copy>(&self, whole: &[T]) -> Vec<T> {
        let [ox, oy] = self.offset;
        let w = self.whole[0];
        (0..self.dims[1]).flat_map(|l| (0..self.dims[0]).map(move |k| whole[(l + oy) * w + k + ox])).collect()
    }
}

/// The ranks of a decomposed run as the shallow-water solver sees them.
pub struct Ranks {
    pub comm: Arc<dyn Comm>,
    /// The whole domain, and this rank's block of it ([`block_physics`]).
    pub whole: Physics,
    pub block: Physics,
    /// Time spent in the steps, and in their halo exchanges (nanoseconds).
    pub stepping: Duration,
    exchanging: Arc<AtomicU64>,
}

impl Ranks {
    pub fn new(whole: Physics, comm: Arc<dyn Comm>) -> Self {
        let block = block_physics(&whole, comm.as_ref());
        Ranks { comm, whole, block, stepping: Duration::ZERO, exchanging: Arc::default() }
    }

    /// The time of the steps and of their halo exchanges.
    pub fn halo_times(&self) -> HaloTimes {
        HaloTimes { stepping: self.stepping, exchanging: Duration::from_nanos(self.exchanging.load(Ordering::Relaxed)) }
    }

    fn cells_of(&self, rank: usize) -> [Range<usize>; 2] {
        cells_of([self.whole.nx, self.whole.ny], self.comm.dims(), rank)
    }

    fn window(&self, rank: usize, place: Place) -> Window {
        Window::new(&self.whole, &self.cells_of(rank), place)
    }

    /// The whole domain's array at `place` on rank 0 (None on the others), from every rank's
    /// array `v` of its block. Collective.
    pub fn gather<T: Real>(&self, place: Place, v: &[T]) -> Option<Vec<T>> {
        let mine: Vec<f64> = self.window(self.comm.rank(), place).owned_of(v).iter().map(|x| x.f64()).collect();
        let parts = self.comm.gather(&mine);
        if self.comm.rank() != 0 {
            return None;
        }
        let [w, h] = super::grid::stored_dims(&self.whole, place);
        let mut whole = vec![T::zero(); w * h];
        for (rank, part) in parts.iter().enumerate() {
            self.window(rank, place).place(part.iter().map(|&x| T::of(x)), &mut whole);
        }
        Some(whole)
    }

    /// This rank's block array at `place` cut out of the whole domain's array.
    pub fn cut<T: Copy>(&self, place: Place, whole: &[T]) -> Vec<T> {
        self.window(self.comm.rank(), place).cut(whole)
    }

    /// The first non-finite value of `values` (this rank's interior cells, row by row) over
    /// all ranks, in the serial scan order of the whole domain. Collective.
    pub fn first_non_finite<T: Real>(&self, field: &'static str, values: &[T]) -> Option<NonFinite> {
        let (n, c) = ([self.whole.nx, self.whole.ny], self.comm.as_ref());
        Block::of_rank(c.dims(), c.rank(), n, 0).first_non_finite(c, field, values, n)
    }

    /// This rank's output piece of the cell grid `grid` (the whole domain's).
    pub fn piece(&self, grid: &Grid) -> Piece {
        let [xs, ys] = self.cells_of(self.comm.rank());
        let mesh = Mesh::Cells(Grid {
            n: [xs.len(), ys.len()],
            origin: [0, 1].map(|a| grid.origin[a] + [xs.start, ys.start][a] as f64 * grid.spacing[a]),
            spacing: grid.spacing,
        });
        // Point extents: the cells' corners, shared with the neighbouring pieces.
        let extents = (0..self.comm.size())
            .map(|rank| {
                let [x, y] = self.cells_of(rank);
                [x.start, x.end, y.start, y.end]
            })
            .collect();
        Piece { mesh, offset: [xs.start, ys.start], extents }
    }

    /// `values` of this rank's interior cells with a ring of one cell from the neighbouring
    /// ranks, on the block that describes them. Collective.
    pub fn with_ring<T: Real>(&self, values: &[T]) -> (Vec<T>, Block) {
        let block = Block::of(self.comm.as_ref(), [self.whole.nx, self.whole.ny], 1);
        let (sx, [w, _, s, _], nx) = (block.stored[0], block.ghosts, self.block.nx);
        let mut v = vec![T::zero(); sx * block.stored[1]];
        for (j, row) in values.chunks_exact(nx).enumerate() {
            v[(s + j) * sx + w..(s + j) * sx + w + nx].copy_from_slice(row);
        }
        block.exchange(self.comm.as_ref(), &mut v);
        (v, block)
    }

    /// The stable time step of the whole domain from each block's `limit`: the smallest, NaN
    /// where any block's is NaN (a reduction would pass or drop it depending on the order).
    pub fn limit(&self, limit: f64) -> f64 {
        let m = self.comm.all_reduce(if limit.is_nan() { f64::NEG_INFINITY } else { limit }, Reduce::Min);
        if m == f64::NEG_INFINITY { f64::NAN } else { m }
    }

    /// `v` summed (or its maximum) over the ranks.
    pub fn sum(&self, v: f64) -> f64 {
        self.comm.all_reduce(v, Reduce::Sum)
    }
    pub fn max(&self, v: f64) -> f64 {
        self.comm.all_reduce(v, Reduce::Max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::Single;
    use crate::solver::{Location, Solver};
    use crate::solvers::Device;
    use crate::solvers::shallow_water::{ShallowWater, ShallowWaterParams, input_file::Inputs};

    /// The blocks of any process grid cover every entry of the whole array (ghosts included)
    /// exactly once, for every place: the windows take the whole array apart and put it back.
    #[test]
    fn windows_cover_the_whole_array_once() {
        let text = "{scheme: fbl, nx: 11, ny: 7, dx: 1.0, dt: 0.1, bathymetry: {flat: 10.0}, initial: rest}";
        let params: ShallowWaterParams = serde_saphyr::from_str(text).unwrap();
        let whole = params.physics();
        let places = [Location::Cell, Location::Node, Location::FaceX, Location::FaceY];
        for (loc, halo, dims) in places.iter().flat_map(|&l| [(l, 1, [3, 2]), (l, 2, [2, 3]), (l, 2, [1, 1])]) {
            let place = Place { loc, halo };
            let [w, h] = super::super::grid::stored_dims(&whole, place);
            let v: Vec<usize> = (0..w * h).collect();
            let mut back = vec![usize::MAX; w * h];
            let mut count = 0;
            for rank in 0..dims[0] * dims[1] {
                let window = Window::new(&whole, &cells_of([11, 7], dims, rank), place);
                let part = window.owned_of(&window.cut(&v));
                count += part.len();
                window.place(part, &mut back);
            }
            assert_eq!((back, count), (v, w * h), "{place:?} on {dims:?}");
        }
    }

    /// One rank's block is the whole domain: the decomposed code path (halo, windows, ring,
    /// reductions) gives the serial solver's state and output.
    #[test]
    fn a_single_part_is_the_serial_solver() {
        let text = "{scheme: kp07, nx: 13, ny: 9, dx: 1000.0, courant: 0.4, bathymetry: gpu_ocean_test, \
                    coriolis: {f0: 1.0e-4, beta: 1.0e-10}, boundary: {north: periodic, south: periodic}, initial: {hump: {amplitude: 0.5, radius: 3000.0}}}";
        let params: ShallowWaterParams = serde_saphyr::from_str(text).unwrap();
        let mut serial = ShallowWater::<f64>::new(&params).unwrap();
        let comm = Arc::new(Single { periodic: [false, false] });
        let cpu = Device::Cpu(Default::default());
        let mut part = ShallowWater::<f64>::on_ranks(&params, comm, &cpu, Inputs::files()).unwrap();
        for _ in 0..7 {
            for s in [&mut serial, &mut part] {
                let dt = s.propose_dt().unwrap();
                s.advance(dt).unwrap();
            }
        }
        assert_eq!(part.state(), serial.state());
        let (a, b) = (part.output_fields(), serial.output_fields());
        assert!(a.iter().zip(&b).all(|(x, y)| x.name == y.name && x.values == y.values));
        assert_eq!(part.piece().unwrap().extents, vec![[0, 13, 0, 9]]);
    }
}
