//! What every shallow-water scheme shares: the physical parameters, the boundary sides, and
//! the row-major arrays with ghost layers that hold the fields.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::padded::Padded;
use crate::real::Real;
use crate::solver::{Location, Place};

/// One side of the domain.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Side {
    /// Closed: no normal flow, free slip.
    Wall,
    /// Periodic with the opposite side (both sides of an axis must say so).
    Periodic,
    /// Open through a sponge of `cells` interior cells next to the side, relaxed towards the
    /// initial state after every step (finite difference) or stage (finite volume).
    Sponge { cells: usize, kind: SpongeKind },
    /// Another rank's block of a domain decomposition: the ghosts come from it (a halo
    /// exchange), never from a boundary condition.
    Neighbour,
}

/// How a sponge relaxes towards the exterior state (spec §7.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpongeKind {
    /// Flow relaxation: `q <- (1 - a_j) q + a_j q_ext`, `a_j = 1 - tanh((j - 1) / 2)`.
    Relaxation,
    /// Linear interpolation between the exterior value and the first row inside the sponge.
    Linear,
}

/// The four sides, in GPU Ocean's order north, east, south, west.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sides {
    pub north: Side,
    pub east: Side,
    pub south: Side,
    pub west: Side,
}

impl Sides {
    pub const WALLS: Sides = Sides { north: Side::Wall, east: Side::Wall, south: Side::Wall, west: Side::Wall };

    /// Periodic along x (east-west).
    pub fn periodic_x(&self) -> bool {
        self.east == Side::Periodic
    }
    /// Periodic along y (north-south).
    pub fn periodic_y(&self) -> bool {
        self.north == Side::Periodic
    }
}

/// Everything a scheme needs besides the fields, in f64 (schemes round to `T` once).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Physics {
    /// Interior cells.
    pub nx: usize,
    pub ny: usize,
    pub dx: f64,
    pub dy: f64,
    /// Gravitational acceleration.
    pub g: f64,
    /// Coriolis `f(y) = f0 + beta y`, `y` measured from the south face of the first interior
    /// row (spec §1).
    pub f0: f64,
    pub beta: f64,
    /// Linear bottom drag `r` (m/s).
    pub friction: f64,
    /// Horizontal eddy viscosity `A` (m²/s), CTCS only.
    pub viscosity: f64,
    /// Constant kinematic wind stress `(X, Y)` (m²/s²).
    pub wind: [f64; 2],
    /// Minmod parameter of the finite-volume reconstructions.
    pub theta: f64,
    /// Reproduce GPU Ocean's published arrays (spec §13) instead of the physically clean
    /// variants.
    pub gpu_ocean_compat: bool,
    pub sides: Sides,
    /// Where the `nx x ny` cells lie in the whole domain when they are one rank's block of a
    /// domain decomposition; None for the whole domain.
    pub part: Option<Part>,
}

/// A rank's block of cells in the whole domain.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Part {
    /// Index of the block's first interior cell in the whole domain.
    pub offset: [usize; 2],
    /// Interior cells of the whole domain.
    pub whole: [usize; 2],
    /// The whole domain's periodic axes.
    pub periodic: [bool; 2],
}

impl Physics {
    /// Coriolis parameter at `y` metres north of the interior's south face.
    #[inline]
    pub fn coriolis(&self, y: f64) -> f64 {
        self.f0 + self.beta * y
    }

    /// Index of the first interior cell in the whole domain.
    pub fn offset(&self) -> [usize; 2] {
        self.part.map_or([0, 0], |b| b.offset)
    }

    /// Interior cells of the whole domain and its periodic axes.
    pub fn whole(&self) -> ([usize; 2], [bool; 2]) {
        self.part.map_or(([self.nx, self.ny], [self.sides.periodic_x(), self.sides.periodic_y()]), |b| {
            (b.whole, b.periodic)
        })
    }
}

/// A row-major array with its ghost layers: `width` values per row, `height` rows, row 0 the
/// southernmost (spec §2: index 0 is the outermost ghost).
#[derive(Clone, Debug, PartialEq)]
pub struct Field<T> {
    pub width: usize,
    pub height: usize,
    pub v: Padded<T>,
}

impl<T: Real> Field<T> {
    pub fn zeros(width: usize, height: usize) -> Self {
        // Each new field starts one slot further on modulo 4 KiB than the one before, so that the
        // rows a kernel streams together from several fields fall in different L1 sets.
        static SLOT: AtomicUsize = AtomicUsize::new(0);
        let slot = SLOT.fetch_add(1, Ordering::Relaxed);
        Field { width, height, v: Padded::zeros(width * height, slot) }
    }

    /// The array of `place` on the cell grid of `p`, filled by `f(x, y, i, j)`: the position in
    /// metres from the whole domain's south-west corner and the index in the whole domain (0 =
    /// first interior entry, negative in the ghosts). Evaluated in f64 and rounded once.
    pub fn sample(p: &Physics, place: Place, f: impl Fn(At) -> f64) -> Self {
        Self::sample_at(p, place, |s| s, f)
    }

    /// [`Field::sample`] with each stored entry sampled at the entry `at([k, l])` of the whole
    /// domain's array instead of its own `[k, l]` (stored indices, ghosts included).
    pub fn sample_at(p: &Physics, place: Place, at: impl Fn([usize; 2]) -> [usize; 2], f: impl Fn(At) -> f64) -> Self {
        let [w, h] = stored_dims(p, place);
        let [bx, by] = p.offset();
        let halo = place.halo as isize;
        let (ox, oy) = match place.loc {
            Location::Cell => (0.5, 0.5),
            Location::Node => (0.0, 0.0),
            Location::FaceX => (0.0, 0.5),
            Location::FaceY => (0.5, 0.0),
        };
        let mut field = Field::zeros(w, h);
        for l in 0..h {
            for k in 0..w {
                let [sk, sl] = at([k + bx, l + by]);
                let (i, j) = (sk as isize - halo, sl as isize - halo);
                let at = At { x: (i as f64 + ox) * p.dx, y: (j as f64 + oy) * p.dy, i, j };
                field.v[l * w + k] = T::of(f(at));
            }
        }
        field
    }

    #[inline(always)]
    pub fn at(&self, l: usize, k: usize) -> T {
        self.v[l * self.width + k]
    }
    #[inline(always)]
    pub fn set(&mut self, l: usize, k: usize, x: T) {
        self.v[l * self.width + k] = x;
    }
    pub fn row(&self, l: usize) -> &[T] {
        &self.v[l * self.width..(l + 1) * self.width]
    }
    pub fn row_mut(&mut self, l: usize) -> &mut [T] {
        &mut self.v[l * self.width..(l + 1) * self.width]
    }
}

/// Where a sample is taken (see [`Field::sample`]).
#[derive(Clone, Copy, Debug)]
pub struct At {
    pub x: f64,
    pub y: f64,
    pub i: isize,
    pub j: isize,
}

/// `[width, height]` of the array stored at `place` on the `nx x ny` cell grid of `p`.
pub fn stored_dims(p: &Physics, place: Place) -> [usize; 2] {
    let [ex, ey] = extra(place.loc);
    [p.nx + ex + 2 * place.halo, p.ny + ey + 2 * place.halo]
}

/// The entries along x and y of an array at `loc` beyond one per cell: the faces (or
/// corners) on the east and north of the last cells.
pub fn extra(loc: Location) -> [usize; 2] {
    match loc {
        Location::Cell => [0, 0],
        Location::Node => [1, 1],
        Location::FaceX => [1, 0],
        Location::FaceY => [0, 1],
    }
}
