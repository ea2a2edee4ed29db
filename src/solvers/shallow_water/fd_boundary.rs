//! What the two finite-difference schemes (FBL, CTCS) share: the places of their Arakawa C
//! arrays, the state triple, the ghost-fill passes (spec §3.3, §4.3) and the row helpers.
//!
//! Layout (one for both schemes, halo 1, row 0 the southern ghost row):
//! - η and H at cell centres, `(ny+2) x (nx+2)`, interior `l = 1..=ny`, `k = 1..=nx`;
//! - U = hu on x-faces, `(ny+2) x (nx+3)`: `U[l][k]` is the **west** face of halo column `k`
//!   (`k = 1` the west boundary face, `k = nx+1` the east one, `0` and `nx+2` ghost faces);
//! - V = hv on y-faces, `(ny+3) x (nx+2)`: `V[l][k]` is the **south** face of halo row `l`
//!   (`l = 1` the south boundary face, `l = ny+1` the north one, `0` and `ny+2` ghost rows).
//!
//! FBL's own index (`U_spec[l][k]`, the east face of column `k`) is `U[l][k + 1]` here; FBL
//! never reads the ghost faces `0` and `nx+2`.
//!
//! The passes fill ghosts only; sponge sides are left alone (their ghosts keep the initial
//! values). North–south first, then east–west over all rows, so the corners come out right.
//!
//! On a rank's block of a decomposed run ([`super::part`]) the ghosts towards another rank
//! come from it ([`Halos`]), along y before the north–south pass and along x before the
//! east–west one, as the serial pass orders them: the east–west pass reads the ghost rows
//! whole, which the neighbours along x hold only after their north–south pass. Every stored
//! entry of a block, ghosts included, then holds the serial run's value.

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};

use crate::error::Result;
use crate::real::Real;
use crate::solver::{Location, Place};

use super::grid::{Field, Physics, Side};
use super::part::{Halo, Ranks};
use super::scheme::{Cells, Initial};

/// Where η and H live.
pub(super) const ETA: Place = Place { loc: Location::Cell, halo: 1 };
/// Where U = hu lives.
pub(super) const HU: Place = Place { loc: Location::FaceX, halo: 1 };
/// Where V = hv lives.
pub(super) const HV: Place = Place { loc: Location::FaceY, halo: 1 };

/// Rows per parallel task of the fused passes (results do not depend on it).
pub(super) const ROWS: usize = 32;

/// One time level: η, U = hu, V = hv.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct State<T> {
    pub eta: Field<T>,
    pub hu: Field<T>,
    pub hv: Field<T>,
}

impl<T: Real> State<T> {
    /// The initial state sampled from the case.
    pub fn sample(p: &Physics, init: &Initial) -> Self {
        State {
            eta: Field::sample(p, ETA, init.eta),
            hu: Field::sample(p, HU, init.hu),
            hv: Field::sample(p, HV, init.hv),
        }
    }

    /// Pull every field towards `exterior` on the sponge sides (spec §7.2).
    pub fn relax(&mut self, exterior: &State<T>, p: &Physics) {
        super::sponge::relax(&mut self.hu, &exterior.hu, HU, p);
        super::sponge::relax(&mut self.hv, &exterior.hv, HV, p);
        super::sponge::relax(&mut self.eta, &exterior.eta, ETA, p);
    }

    /// The ghost-fill pass, north–south and then east–west, U, V, η in each; on a rank's
    /// block with the exchanges of `halos` (see the module's doc). `fbl_corner_faces`: GPU
    /// Ocean's FBL north–south periodic copy of U skips the two boundary faces of the ghost
    /// rows (spec §3.3), so with periodic boundaries both ways those two corner faces keep
    /// their initial value; CTCS (and FBL without `gpu_ocean_compat`) copy whole rows.
    pub fn fill(&mut self, p: &Physics, fbl_corner_faces: bool, halos: Option<&Halos>) {
        if let Some(h) = halos {
            h.exchange_rows(self, p, fbl_corner_faces);
        }
        fill_u_rows(&mut self.hu, p, fbl_corner_faces);
        fill_v_rows(&mut self.hv, p);
        fill_rows(&mut self.eta, p);
        if let Some(h) = halos {
            h.exchange(self, 0);
        }
        fill_u_columns(&mut self.hu, p);
        fill_columns(&mut self.hv, p);
        fill_columns(&mut self.eta, p);
    }

    /// Interior cell-centre values (transports averaged from the two faces of each cell).
    pub fn cells(&self, h: &Field<T>, p: &Physics) -> Cells<T> {
        let (nx, ny) = (p.nx, p.ny);
        let half = T::of(0.5);
        let mut cells = Cells {
            eta: Vec::with_capacity(nx * ny),
            hu: Vec::with_capacity(nx * ny),
            hv: Vec::with_capacity(nx * ny),
            depth: Vec::with_capacity(nx * ny),
        };
        for l in 1..=ny {
            cells.eta.extend_from_slice(&self.eta.row(l)[1..=nx]);
            cells.depth.extend_from_slice(&h.row(l)[1..=nx]);
            let u = self.hu.row(l);
            cells.hu.extend((1..=nx).map(|k| half * (u[k] + u[k + 1])));
            let (vs, vn) = (self.hv.row(l), self.hv.row(l + 1));
            cells.hv.extend((1..=nx).map(|k| half * (vs[k] + vn[k])));
        }
        cells
    }
}

/// The ghost exchange of η, U and V on a rank's block of a decomposed run.
#[derive(Clone)]
pub(super) struct Halos {
    eta: Halo,
    hu: Halo,
    hv: Halo,
}

impl Halos {
    /// The exchanges of the block of `ranks`.
    pub fn new(ranks: &Ranks) -> Self {
        let halo = |place| Halo::new(ranks, place);
        Halos { eta: halo(ETA), hu: halo(HU), hv: halo(HV) }
    }

    /// The ghosts of the three fields along `axis` from the neighbours.
    fn exchange<T: Real>(&self, s: &mut State<T>, axis: usize) {
        self.eta.exchange_axis(&mut s.eta, axis);
        self.hu.exchange_axis(&mut s.hu, axis);
        self.hv.exchange_axis(&mut s.hv, axis);
    }

    /// [`Halos::exchange`] along y. Where it takes the place of the periodic north–south
    /// copy (the domain's ghost rows, a periodic y axis shared by several ranks), the entries
    /// that copy leaves alone keep their values, as in the serial run: the ends of the rows
    /// (filled by the east–west pass, or kept on a sponge side) and with `fbl_corner_faces`
    /// GPU Ocean's skipped faces of U.
    fn exchange_rows<T: Real>(&self, s: &mut State<T>, p: &Physics, fbl_corner_faces: bool) {
        let nx = p.whole().0[0];
        let u_copied = if fbl_corner_faces { fbl_copied_faces(nx) } else { 0..nx + 3 };
        let kept = [(&s.eta, 1..nx + 1), (&s.hu, u_copied), (&s.hv, 1..nx + 1)].map(|(f, cols)| {
            let at = uncopied(p, f, cols);
            let values: Vec<T> = at.iter().map(|&(l, k)| f.at(l, k)).collect();
            (at, values)
        });
        self.exchange(s, 1);
        for (f, (at, values)) in [&mut s.eta, &mut s.hu, &mut s.hv].into_iter().zip(kept) {
            for ((l, k), x) in at.into_iter().zip(values) {
                f.set(l, k, x);
            }
        }
    }

    /// [`Halos::exchange_rows`] of a level on a GPU (a block of whole rows), through the host
    /// level `host` of its layout: the rows sent and the ghost rows received are downloaded
    /// (the latter for the entries the exchange keeps), exchanged on the host, and the ghost
    /// rows uploaded. The exchange along x has no neighbour on such a block.
    pub fn exchange_rows_device<T: Real>(
        &self,
        stream: &Arc<CudaStream>,
        device: [&mut CudaSlice<T>; 3],
        host: &mut State<T>,
        p: &Physics,
        fbl_corner_faces: bool,
    ) -> Result<()> {
        let halos = [&self.eta, &self.hu, &self.hv];
        for ((halo, d), f) in halos.iter().zip(&device).zip([&mut host.eta, &mut host.hu, &mut host.hv]) {
            halo.download_rows(stream, d, &mut f.v)?;
        }
        self.exchange_rows(host, p, fbl_corner_faces);
        for ((halo, d), f) in halos.iter().zip(device).zip([&host.eta, &host.hu, &host.hv]) {
            halo.upload_ghost_rows(stream, d, &f.v)?;
        }
        Ok(())
    }

    /// The largest of `v` over the ranks.
    pub fn max(&self, v: f64) -> f64 {
        self.eta.max(v)
    }
}

/// The faces of U in the ghost rows that GPU Ocean's FBL periodic north–south copy covers
/// (columns of the whole domain's array): its spec faces 1..=nx−1, our columns 2..=nx.
fn fbl_copied_faces(nx: usize) -> Range<usize> {
    2..nx + 1
}

/// The columns `cols` of the whole domain's array as the block's stored columns (the part
/// it holds).
fn local_cols(p: &Physics, cols: Range<usize>, width: usize) -> Range<usize> {
    let ox = p.offset()[0];
    cols.start.saturating_sub(ox)..cols.end.saturating_sub(ox).min(width)
}

/// The stored entries (row, column) of `f` on the block of `p` that a periodic north–south
/// copy of the columns `copied` (of the whole domain's array) leaves alone: in the rows
/// outside the whole domain's `1..=ny` (ghost rows, and V's north boundary row), the other
/// columns. Empty unless the y axis is periodic.
fn uncopied<T: Real>(p: &Physics, f: &Field<T>, copied: Range<usize>) -> Vec<(usize, usize)> {
    let (([_, ny], [_, periodic_y]), oy) = (p.whole(), p.offset()[1]);
    if !periodic_y {
        return vec![];
    }
    let copied = local_cols(p, copied, f.width);
    let rows = [0, p.ny + 1, p.ny + 2].into_iter().filter(|&l| l < f.height && !(1..=ny).contains(&(l + oy)));
    let cols = (0..f.width).filter(move |k| !copied.contains(k));
    rows.flat_map(|l| cols.clone().map(move |k| (l, k))).collect()
}

/// A field seen through a raw pointer: the kernels read and write row segments of it, in
/// a temporally blocked sweep while other threads work on other segments of the same array.
#[derive(Clone, Copy)]
pub(super) struct View<T> {
    ptr: *mut T,
    width: usize,
}

// SAFETY: a view only hands out segments; its users keep threads on disjoint segments.
unsafe impl<T: Send> Send for View<T> {}
unsafe impl<T: Send> Sync for View<T> {}

impl<T> View<T> {
    /// A view to read `f` through (never written through it).
    pub fn of(f: &Field<T>) -> Self {
        View { ptr: f.v.as_ptr() as *mut T, width: f.width }
    }

    pub fn of_mut(f: &mut Field<T>) -> Self {
        View { ptr: f.v.as_mut_ptr(), width: f.width }
    }

    /// `len` values of row `l` from column `k`.
    ///
    /// # Safety
    /// In bounds, the array alive and no one writing them while the slice lives.
    #[inline(always)]
    pub unsafe fn seg<'a>(self, l: usize, k: usize, len: usize) -> &'a [T] {
        unsafe { std::slice::from_raw_parts(self.ptr.add(l * self.width + k), len) }
    }

    /// As [`View::seg`], to write: no one else touches them while the slice lives, and the
    /// view was made with [`View::of_mut`].
    #[inline(always)]
    pub unsafe fn seg_mut<'a>(self, l: usize, k: usize, len: usize) -> &'a mut [T] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(l * self.width + k), len) }
    }

    /// # Safety
    /// As [`View::seg`].
    #[inline(always)]
    pub unsafe fn get(self, l: usize, k: usize) -> T
    where
        T: Copy,
    {
        unsafe { *self.ptr.add(l * self.width + k) }
    }

    /// # Safety
    /// As [`View::seg_mut`].
    #[inline(always)]
    pub unsafe fn set(self, l: usize, k: usize, x: T) {
        unsafe { *self.ptr.add(l * self.width + k) = x }
    }

    /// Row `from` to row `to` over the columns `ks`.
    ///
    /// # Safety
    /// As [`View::seg`] for the one, [`View::seg_mut`] for the other.
    pub unsafe fn copy_row(self, from: usize, to: usize, ks: Range<usize>)
    where
        T: Copy,
    {
        let (w, n) = (self.width, ks.len());
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(from * w + ks.start), self.ptr.add(to * w + ks.start), n) }
    }
}

/// Copy row `from` to row `to` over the columns `cols`.
fn copy_row<T: Real>(f: &mut Field<T>, from: usize, to: usize, cols: std::ops::Range<usize>) {
    let w = f.width;
    f.v.copy_within(from * w + cols.start..from * w + cols.end, to * w + cols.start);
}

/// Row `to` = −row `from` (all columns).
fn negate_row<T: Real>(f: &mut Field<T>, from: usize, to: usize) {
    let w = f.width;
    for k in 0..w {
        f.v[to * w + k] = -f.v[from * w + k];
    }
}

/// Apply `op(row)` to every row.
fn each_row<T: Real>(f: &mut Field<T>, op: impl Fn(&mut [T])) {
    let w = f.width;
    f.v.chunks_exact_mut(w).for_each(op);
}

/// The ghost rows of η (and any cell-centred field): walls copy the adjacent interior row,
/// periodic sides the opposite interior one ([`fill_columns`] does the columns).
fn fill_rows<T: Real>(eta: &mut Field<T>, p: &Physics) {
    let (nx, ny) = (p.nx, p.ny);
    let w = eta.width;
    match p.sides.south {
        Side::Wall => copy_row(eta, 1, 0, 0..w),
        Side::Periodic => copy_row(eta, ny, 0, 1..nx + 1),
        Side::Sponge { .. } | Side::Neighbour => {}
    }
    match p.sides.north {
        Side::Wall => copy_row(eta, ny, ny + 1, 0..w),
        Side::Periodic => copy_row(eta, 1, ny + 1, 1..nx + 1),
        Side::Sponge { .. } | Side::Neighbour => {}
    }
}

/// The east and west ghost columns of a field at the cell centres along x (η, V): walls
/// copy the adjacent interior column, periodic sides the opposite one.
fn fill_columns<T: Real>(f: &mut Field<T>, p: &Physics) {
    let (nx, west, east) = (p.nx, p.sides.west, p.sides.east);
    each_row(f, |r| {
        match west {
            Side::Wall => r[0] = r[1],
            Side::Periodic => r[0] = r[nx],
            Side::Sponge { .. } | Side::Neighbour => {}
        }
        match east {
            Side::Wall => r[nx + 1] = r[nx],
            Side::Periodic => r[nx + 1] = r[1],
            Side::Sponge { .. } | Side::Neighbour => {}
        }
    });
}

/// The ghost rows of V = hv: walls zero the boundary face and mirror the ghost row with the
/// sign flipped (`V[0] = -V[2]`, `V[ny+2] = -V[ny]`), periodic sides copy the opposite rows
/// ([`fill_columns`] does the columns: a copy of the adjacent one at walls, free slip).
fn fill_v_rows<T: Real>(v: &mut Field<T>, p: &Physics) {
    let (nx, ny) = (p.nx, p.ny);
    match p.sides.south {
        Side::Wall => {
            v.row_mut(1).fill(T::zero());
            negate_row(v, 2, 0);
        }
        Side::Periodic => copy_row(v, ny, 0, 1..nx + 1),
        Side::Sponge { .. } | Side::Neighbour => {}
    }
    match p.sides.north {
        Side::Wall => {
            v.row_mut(ny + 1).fill(T::zero());
            negate_row(v, ny, ny + 2);
        }
        Side::Periodic => {
            copy_row(v, 1, ny + 1, 1..nx + 1);
            copy_row(v, 2, ny + 2, 1..nx + 1);
        }
        Side::Sponge { .. } | Side::Neighbour => {}
    }
}

/// The ghost rows of U = hu: walls copy the adjacent interior row, periodic sides the
/// opposite one (see [`State::fill`] for `fbl_corner_faces`).
fn fill_u_rows<T: Real>(u: &mut Field<T>, p: &Physics, fbl_corner_faces: bool) {
    let ny = p.ny;
    let w = u.width;
    let periodic_cols = if fbl_corner_faces { local_cols(p, fbl_copied_faces(p.whole().0[0]), w) } else { 0..w };
    match p.sides.south {
        Side::Wall => copy_row(u, 1, 0, 0..w),
        Side::Periodic => copy_row(u, ny, 0, periodic_cols.clone()),
        Side::Sponge { .. } | Side::Neighbour => {}
    }
    match p.sides.north {
        Side::Wall => copy_row(u, ny, ny + 1, 0..w),
        Side::Periodic => copy_row(u, 1, ny + 1, periodic_cols),
        Side::Sponge { .. } | Side::Neighbour => {}
    }
}

/// The ghost faces of U east and west, over all rows: walls zero the boundary face and
/// mirror the ghost face with the sign flipped (`U[0] = -U[2]`, `U[nx+2] = -U[nx]`);
/// periodic sides copy the opposite faces (`U[nx+1] = U[1]`: the two boundary faces are one
/// face).
fn fill_u_columns<T: Real>(u: &mut Field<T>, p: &Physics) {
    let nx = p.nx;
    let (west, east) = (p.sides.west, p.sides.east);
    each_row(u, |r| {
        match west {
            Side::Wall => {
                r[0] = -r[2];
                r[1] = T::zero();
            }
            Side::Periodic => r[0] = r[nx],
            Side::Sponge { .. } | Side::Neighbour => {}
        }
        match east {
            Side::Wall => {
                r[nx + 1] = T::zero();
                r[nx + 2] = -r[nx];
            }
            Side::Periodic => {
                r[nx + 1] = r[1];
                r[nx + 2] = r[2];
            }
            Side::Sponge { .. } | Side::Neighbour => {}
        }
    });
}

/// Whether FBL and CTCS may run temporally blocked on this grid: with walls on all four
/// sides. A periodic side couples the first and last rows or columns, which a sweep that
/// advances neighbouring rows and columns only cannot follow; a sponge rewrites, after each
/// step, rows that the next rows' update still reads unrelaxed, and ghost values that keep
/// their history (not blocked yet).
pub(super) fn blockable(p: &Physics) -> bool {
    let s = p.sides;
    [s.north, s.east, s.south, s.west].iter().all(|&side| side == Side::Wall) && p.nx >= 2 && p.ny >= 2
}

/// The equilibrium depth H at the cell centres (halo 1). A periodic direction's ghost cells
/// take the depth of the interior cell they copy: the two copies of the seam's face then see
/// the same depths, so the scheme moves as much water out through one as in through the other.
pub(super) fn sample_depth<T: Real>(p: &Physics, depth: &(dyn Fn(super::grid::At) -> f64 + Sync)) -> Field<T> {
    let ([nx, ny], [px, py]) = p.whole();
    let wrap = |s: usize, n: usize, periodic: bool| match s {
        0 if periodic => n,
        s if periodic && s == n + 1 => 1,
        s => s,
    };
    Field::sample_at(p, ETA, |[k, l]| [wrap(k, nx, px), wrap(l, ny, py)], depth)
}

/// Coriolis parameter `f(y)` at `y = (row + offset) dy` for every stored row `0..rows`
/// (its row in the whole domain on a rank's block), rounded to `T` once.
pub(super) fn coriolis_rows<T: Real>(p: &Physics, rows: usize, offset: f64) -> Vec<T> {
    let oy = p.offset()[1];
    (0..rows).map(|l| T::of(p.coriolis(((l + oy) as f64 + offset) * p.dy))).collect()
}

/// Largest interior value of `f(l, k)` over the interior cells (a max: independent of any
/// thread split).
pub(super) fn interior_max(p: &Physics, f: impl Fn(usize, usize) -> f64) -> f64 {
    let mut m = 0.0f64;
    for l in 1..=p.ny {
        for k in 1..=p.nx {
            m = m.max(f(l, k));
        }
    }
    m
}

/// The GPU Ocean regression cases of spec §9.1 shared by the FBL and CTCS tests.
#[cfg(test)]
pub(super) mod cases {
    use super::State;
    use super::super::grid::{At, Physics, Side, Sides};
    use super::super::init::{BumpPosition, bump, test_bathymetry};
    use super::super::scheme::Initial;

    /// One regression case: the run's boundaries and initial state, and the reference files.
    #[derive(Clone, Copy, Debug)]
    pub struct Case {
        /// Label of the run (`wallBC`, `periodicNS`, ...).
        pub bc: &'static str,
        /// BC label of the reference files (periodic `central` runs compare with `wallBC`).
        pub reference: &'static str,
        pub init: &'static str,
        pub bump: BumpPosition,
        pub sides: Sides,
        pub f0: f64,
        pub beta: f64,
        pub bathymetry: bool,
    }

    fn sides(n: Side, e: Side) -> Sides {
        Sides { north: n, east: e, south: n, west: e }
    }

    /// The cases of `scheme` ("FBL": 15, "CTCS": 16).
    pub fn cases(scheme: &str) -> Vec<Case> {
        use BumpPosition::*;
        use Side::{Periodic as P, Wall as W};
        let periodic_all = if scheme == "FBL" { "periodicAll" } else { "periodic" };
        let base = Case {
            bc: "wallBC",
            reference: "wallBC",
            init: "central",
            bump: Central,
            sides: Sides::WALLS,
            f0: 0.0,
            beta: 0.0,
            bathymetry: false,
        };
        let mut out = vec![];
        for (bc, s) in [
            ("wallBC", sides(W, W)),
            (periodic_all, sides(P, P)),
            ("periodicNS", sides(P, W)),
            ("periodicEW", sides(W, P)),
        ] {
            for (init, b) in
                [("central", Central), ("corner", Corner), ("upperCorner", UpperCorner)]
            {
                let reference = if init == "central" { "wallBC" } else { bc };
                out.push(Case { bc, reference, init, bump: b, sides: s, ..base });
            }
        }
        out.push(Case { bc: "coriolis", reference: "coriolis", f0: 0.01, ..base });
        out.push(Case { bc: "betamodel", reference: "betamodel", f0: 0.01, beta: 1e-6, ..base });
        out.push(Case { bathymetry: true, ..base });
        if scheme == "CTCS" {
            out.push(Case {
                bc: "coriolis",
                reference: "coriolis",
                f0: 0.01,
                bathymetry: true,
                ..base
            });
        }
        out
    }

    impl Case {
        pub fn label(&self) -> String {
            format!("{}_{}{}", self.bc, self.init, if self.bathymetry { "_bathymetry" } else { "" })
        }

        /// Reference file name of `field` (`eta`, `u`, `v`).
        pub fn file(&self, scheme: &str, field: &str) -> String {
            let b = if self.bathymetry { "bathymetry_" } else { "" };
            format!("{scheme}_{}_{}_{b}{field}", self.reference, self.init)
        }

        pub fn physics(&self, viscosity: f64, sides: Sides) -> Physics {
            Physics {
                nx: 50,
                ny: 70,
                dx: 200.0,
                dy: 200.0,
                g: 9.81,
                f0: self.f0,
                beta: self.beta,
                friction: 0.0,
                viscosity,
                wind: [0.0, 0.0],
                theta: 1.3,
                gpu_ocean_compat: true,
                sides,
                part: None,
            }
        }

        /// Call `f` with the case's initial state on the grid of `p`.
        pub fn with_initial<R>(&self, p: &Physics, f: impl FnOnce(&Initial) -> R) -> R {
            let eta = bump(p, self.bump);
            let zero = |_: At| 0.0;
            let flat = |_: At| 60.0;
            let bathymetry = test_bathymetry(p.ny);
            let depth: &(dyn Fn(At) -> f64 + Sync) =
                if self.bathymetry { &bathymetry } else { &flat };
            f(&Initial { eta: &eta, hu: &zero, hv: &zero, depth })
        }
    }

    /// A walled `nx x ny` basin with every term of the FD schemes at work: β-plane
    /// Coriolis, friction, wind, eddy viscosity `viscosity`, and (through [`busy_initial`])
    /// uneven bathymetry and a moving, off-centre bump.
    pub fn busy_physics(nx: usize, ny: usize, viscosity: f64) -> Physics {
        Physics {
            nx,
            ny,
            dx: 200.0,
            dy: 150.0,
            g: 9.81,
            f0: 0.012,
            beta: 2e-6,
            friction: 0.003,
            viscosity,
            wind: [1e-4, -2e-4],
            theta: 1.3,
            gpu_ocean_compat: true,
            sides: Sides::WALLS,
            part: None,
        }
    }

    /// Call `f` with the initial state of [`busy_physics`].
    pub fn busy_initial<R>(p: &Physics, f: impl FnOnce(&Initial) -> R) -> R {
        let (lx, ly) = (p.nx as f64 * p.dx, p.ny as f64 * p.dy);
        let eta = |at: At| {
            let (x, y) = (at.x / lx - 0.3, at.y / ly - 0.6);
            (-(x * x + y * y) * 40.0).exp()
        };
        let hu = |at: At| 2.0 * (at.y / ly * 3.0).sin();
        let hv = |at: At| -1.5 * (at.x / lx * 5.0).cos();
        let depth = |at: At| 50.0 + 8.0 * (at.x / lx * 7.0).sin() * (at.y / ly * 4.0).cos();
        f(&Initial { eta: &eta, hu: &hu, hv: &hv, depth: &depth })
    }

    /// `rows x cols` block of `a` starting at `(r0, c0)`.
    pub fn block(a: &[Vec<f64>], r0: usize, c0: usize, rows: usize, cols: usize) -> Vec<Vec<f64>> {
        a[r0..r0 + rows].iter().map(|r| r[c0..c0 + cols].to_vec()).collect()
    }

    /// After a run with sponges on all four sides: every value is finite, the outermost
    /// interior row/column of each sponge holds its initial (exterior) value (away from the
    /// corners, where the east–west relaxation re-weights values the north–south one
    /// already set), and the bump has changed the interior.
    pub fn assert_sponges_held(p: &Physics, initial: &State<f64>, now: &State<f64>) {
        let (nx, ny) = (p.nx, p.ny);
        for f in [&now.eta, &now.hu, &now.hv] {
            assert!(f.v.iter().all(|x| x.is_finite()));
        }
        for k in 6..=nx - 5 {
            assert_eq!(now.eta.at(1, k), initial.eta.at(1, k));
            assert_eq!(now.eta.at(ny, k), initial.eta.at(ny, k));
        }
        for l in 6..=ny - 5 {
            assert_eq!(now.eta.at(l, 1), initial.eta.at(l, 1));
            assert_eq!(now.eta.at(l, nx), initial.eta.at(l, nx));
            assert_eq!(now.hu.at(l, 1), initial.hu.at(l, 1));
            assert_eq!(now.hu.at(l, nx + 1), initial.hu.at(l, nx + 1));
        }
        assert!(now.eta.at(36, 26) != initial.eta.at(36, 26));
    }
}
