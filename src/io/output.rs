//! One output step: the solver's fields brought onto its mesh as ParaView shows it (halos
//! stripped, face values averaged to the cells they separate) and written as `.vti` (grids)
//! or `.vtu` (point clouds).

use std::path::Path;

use crate::error::{Result, SimError};
use crate::real::{Real, Values};
use crate::solver::{Grid, Location, Mesh, OutField, Place};

/// `<prefix>_<step:08>.vti` (grids) or `.vtu` (point clouds).
pub fn file_name(prefix: &str, step: u64, mesh: &Mesh) -> String {
    let ext = if matches!(mesh, Mesh::Points(_)) { "vtu" } else { "vti" };
    format!("{prefix}_{step:08}.{ext}")
}

/// Write the fields as `dir/file` ([`file_name`]), through a temporary name and a rename, so
/// a full disk or a kill never leaves a truncated file under the final name.
pub fn write(dir: &Path, file: &str, mesh: &Mesh, fields: &[OutField]) -> Result<()> {
    let fields: Vec<OutField> = fields.iter().map(|f| on_mesh(f, mesh)).collect();
    let path = dir.join(file);
    let tmp = super::tmp_path(&path);
    let written = match mesh {
        Mesh::Points(points) => super::vtu::write(&tmp, points, &fields),
        Mesh::Nodes(g) => super::vti::write(&tmp, g, &fields),
        Mesh::Cells(g) => super::vti::write(&tmp, &node_grid_of_cells(g), &fields),
    };
    let renamed = written.and_then(|_| {
        std::fs::rename(&tmp, &path).map_err(|e| SimError::Run(format!("cannot write {}: {e}", path.display())))
    });
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed
}

/// The grid of the corner nodes of a cell grid (1D grids stay 1D).
pub fn node_grid_of_cells(g: &Grid) -> Grid {
    let ny = if g.n[1] == 1 { 1 } else { g.n[1] + 1 };
    Grid { n: [g.n[0] + 1, ny], ..*g }
}

/// `f` without halo, at nodes or cells of `mesh` (faces averaged to cells).
pub fn on_mesh(f: &OutField, mesh: &Mesh) -> OutField {
    let stored = f.place.stored_dims(mesh);
    assert_eq!(f.values.len(), f.components * stored[0] * stored[1], "field {} size", f.name);
    let inner = strip(&f.values, f.components, stored, f.place.halo);
    let dims = mesh.dims(f.place.loc);
    let (values, place) = match f.place.loc {
        Location::Node => (inner, Place::NODE),
        Location::Cell => (inner, Place::CELL),
        Location::FaceX => (average(&inner, f.components, dims, [1, 0]), Place::CELL),
        Location::FaceY => (average(&inner, f.components, dims, [0, 1]), Place::CELL),
    };
    OutField { name: f.name, components: f.components, place, values }
}

fn strip(v: &Values, comps: usize, stored: [usize; 2], halo: usize) -> Values {
    match v {
        Values::F32(v) => Values::F32(strip_halo(v, comps, stored, halo)),
        Values::F64(v) => Values::F64(strip_halo(v, comps, stored, halo)),
    }
}

fn average(v: &Values, comps: usize, dims: [usize; 2], step: [usize; 2]) -> Values {
    match v {
        Values::F32(v) => Values::F32(average_pairs(v, comps, dims, step)),
        Values::F64(v) => Values::F64(average_pairs(v, comps, dims, step)),
    }
}

/// The interior of an `[nx, ny]` array (x fastest, `comps` interleaved) with `halo` layers on
/// each side (only along x when `ny == 1`).
pub fn strip_halo<T: Copy>(v: &[T], comps: usize, stored: [usize; 2], halo: usize) -> Vec<T> {
    if halo == 0 {
        return v.to_vec();
    }
    let [nx, ny] = stored;
    let (hy, rows) = if ny == 1 { (0, 1) } else { (halo, ny - 2 * halo) };
    let width = (nx - 2 * halo) * comps;
    (hy..hy + rows).flat_map(|j| &v[(j * nx + halo) * comps..][..width]).copied().collect()
}

/// Means of neighbouring pairs along x (`step = [1, 0]`) or y (`[0, 1]`) of an `[nx, ny]`
/// array: face values to the cells between them.
pub fn average_pairs<T: Real>(v: &[T], comps: usize, dims: [usize; 2], step: [usize; 2]) -> Vec<T> {
    let [nx, ny] = dims;
    let (cx, cy) = (nx - step[0], ny - step[1]);
    let offset = (step[0] + step[1] * nx) * comps;
    let half = T::of(0.5);
    let mut out = Vec::with_capacity(cx * cy * comps);
    for j in 0..cy {
        for i in 0..cx {
            let k = (j * nx + i) * comps;
            out.extend((0..comps).map(|c| half * (v[k + c] + v[k + c + offset])));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(nx: usize, ny: usize) -> Mesh {
        Mesh::Cells(Grid { n: [nx, ny], origin: [0.0; 2], spacing: [1.0; 2] })
    }

    #[test]
    fn halo_is_stripped_in_2d_and_1d() {
        // 3 x 2 interior cells with a halo of 1: stored 5 x 4, value = 10 j + i.
        let v: Vec<f64> = (0..4).flat_map(|j| (0..5).map(move |i| (10 * j + i) as f64)).collect();
        assert_eq!(strip_halo(&v, 1, [5, 4], 1), vec![11.0, 12.0, 13.0, 21.0, 22.0, 23.0]);
        let v: Vec<f64> = (0..7).map(|i| i as f64).collect();
        assert_eq!(strip_halo(&v, 1, [7, 1], 2), vec![2.0, 3.0, 4.0]);
        // Two components stay interleaved.
        let v: Vec<f64> = (0..3).flat_map(|i| [i as f64, -(i as f64)]).collect();
        assert_eq!(strip_halo(&v, 2, [3, 1], 1), vec![1.0, -1.0]);
    }

    #[test]
    fn faces_average_to_the_cells_between_them() {
        // u on the x-faces of 2 x 2 cells: 3 x 2 values, u = x (face index).
        let f = OutField {
            name: "u",
            components: 1,
            place: Place { loc: Location::FaceX, halo: 0 },
            values: Values::F64(vec![0.0, 1.0, 2.0, 0.0, 1.0, 2.0]),
        };
        let out = on_mesh(&f, &cells(2, 2));
        assert_eq!(out.place, Place::CELL);
        assert_eq!(out.values, Values::F64(vec![0.5, 1.5, 0.5, 1.5]));
        // v on the y-faces with a halo of 1: interior 2 x 3, stored 4 x 5, v = y (face row).
        let v: Vec<f64> = (0..5).flat_map(|j| (0..4).map(move |_| j as f64 - 1.0)).collect();
        let f = OutField { name: "v", components: 1, place: Place { loc: Location::FaceY, halo: 1 }, values: Values::F64(v) };
        assert_eq!(on_mesh(&f, &cells(2, 2)).values, Values::F64(vec![0.5, 0.5, 1.5, 1.5]));
    }

    #[test]
    fn cell_meshes_give_their_corner_nodes() {
        let g = Grid { n: [4, 3], origin: [-1.0, 0.0], spacing: [0.5, 0.5] };
        assert_eq!(node_grid_of_cells(&g).n, [5, 4]);
        assert_eq!(node_grid_of_cells(&Grid { n: [4, 1], ..g }).n, [5, 1]);
        assert_eq!(cells(4, 3).dims(Location::FaceY), [4, 4]);
    }
}
