//! Open boundaries through a sponge (spec §7.2): the `w` interior rows or columns next to a
//! sponge side are pulled towards the exterior state (the initial state), the outermost one
//! fully. A scheme applies this to each field after its interior update and before its
//! ghost fill; the ghosts of a sponge side keep their initial values.

use crate::real::Real;
use crate::solver::{Location, Place};

use super::grid::{Field, Physics, Side, SpongeKind};

/// Weight of the exterior value in interior row `j` (0 = next to the side) of a sponge of
/// `w` rows, given the row's value `q` and the value `inner` of row `w`.
#[inline]
fn relaxed(kind: SpongeKind, j: usize, w: usize, q: f64, ext: f64, inner: f64) -> f64 {
    match kind {
        SpongeKind::Relaxation => {
            let a = relaxation_weight(j);
            (1.0 - a) * q + a * ext
        }
        SpongeKind::Linear => ext + (j as f64 / w as f64) * (inner - ext),
    }
}

/// The weight `a_j = 1 - tanh((j - 1) / 2)` of the exterior value in sponge row `j` (1 at the
/// side), computed here once for every back end (a device's tanh may round differently).
pub fn relaxation_weight(j: usize) -> f64 {
    if j == 0 { 1.0 } else { 1.0 - ((j as f64 - 1.0) / 2.0).tanh() }
}

/// Relax `field` (stored at `place`) towards `exterior` on every sponge side, north and south
/// first, then east and west.
pub fn relax<T: Real>(field: &mut Field<T>, exterior: &Field<T>, place: Place, p: &Physics) {
    let h = place.halo;
    let (ex, ey) = match place.loc {
        Location::Cell => (0, 0),
        Location::Node => (1, 1),
        Location::FaceX => (1, 0),
        Location::FaceY => (0, 1),
    };
    let (nx, ny) = (p.nx + ex, p.ny + ey);
    // index(j, s): stored (row, column) of sponge row j (from the side) at position s along
    // it; row w is the first inside the sponge (validation keeps it in the domain).
    let apply = |field: &mut Field<T>, w: usize, kind: SpongeKind, index: &dyn Fn(usize, usize) -> (usize, usize), len: usize| {
        for s in 0..len {
            let (il, ik) = index(w, s);
            let inner = field.at(il, ik).f64();
            for j in 0..w {
                let (l, k) = index(j, s);
                let v = relaxed(kind, j, w, field.at(l, k).f64(), exterior.at(l, k).f64(), inner);
                field.set(l, k, T::of(v));
            }
        }
    };
    let width = field.width;
    let height = field.height;
    if let Side::Sponge { cells, kind } = p.sides.south {
        apply(field, cells, kind, &|j, s| (h + j, s), width);
    }
    if let Side::Sponge { cells, kind } = p.sides.north {
        apply(field, cells, kind, &|j, s| (h + ny - 1 - j, s), width);
    }
    if let Side::Sponge { cells, kind } = p.sides.west {
        apply(field, cells, kind, &|j, s| (s, h + j), height);
    }
    if let Side::Sponge { cells, kind } = p.sides.east {
        apply(field, cells, kind, &|j, s| (s, h + nx - 1 - j), height);
    }
}
