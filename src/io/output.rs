//! One output step: the solver's fields brought onto its mesh as ParaView shows it (halos
//! stripped, face values averaged to the cells they separate) and written as `.vti` (grids)
//! or `.vtu` (point clouds), raw or block-compressed ([`Compression`]) appended binary data.

use std::io::Write;
use std::path::Path;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Result, SimError};
use crate::real::{Real, Values};
use crate::solver::{Grid, Location, Mesh, OutField, Piece, Place};

/// Compression of the appended data of VTK files (`output.compression`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// Raw binary: the fastest to write and to read.
    #[default]
    None,
    /// zlib blocks (`vtkZLibDataCompressor`).
    Zlib,
    /// LZ4 blocks (`vtkLZ4DataCompressor`): faster than zlib, larger files.
    Lz4,
}

impl Compression {
    /// The `compressor` attribute of the VTKFile element.
    fn compressor(self) -> Option<&'static str> {
        match self {
            Compression::None => None,
            Compression::Zlib => Some("vtkZLibDataCompressor"),
            Compression::Lz4 => Some("vtkLZ4DataCompressor"),
        }
    }
}

/// What an output file says besides its fields.
#[derive(Clone, Copy, Debug)]
pub struct Frame<'a> {
    /// Simulated time (the iteration number under pseudo-time), stored as the `TimeValue`
    /// field data so that ParaView has the time even without the `.pvd`.
    pub time: f64,
    pub compression: Compression,
    /// Triangles over the points of a cloud (written as the `.vtu` cells instead of one
    /// vertex per point).
    pub triangles: Option<&'a [[u32; 3]]>,
    /// What the fields mean and their units (the solver's [`crate::solver::Solver::units`]),
    /// stored as the `units` field data; empty for none.
    pub units: &'a str,
}

/// `<prefix>_<step:08>.vti` (grids) or `.vtu` (point clouds).
pub fn file_name(prefix: &str, step: u64, mesh: &Mesh) -> String {
    let ext = if matches!(mesh, Mesh::Points(_)) { "vtu" } else { "vti" };
    format!("{prefix}_{step:08}.{ext}")
}

/// Write the fields as `dir/file` ([`file_name`]), through a temporary name and a rename, so
/// a full disk or a kill never leaves a truncated file under the final name.
pub fn write(dir: &Path, file: &str, mesh: &Mesh, fields: &[OutField], frame: &Frame) -> Result<()> {
    let fields: Vec<OutField> = fields.iter().map(|f| on_mesh(f, mesh)).collect();
    let path = dir.join(file);
    let tmp = super::tmp_path(&path);
    let written = match mesh {
        Mesh::Points(points) => super::vtu::write(&tmp, points, &fields, frame),
        Mesh::Nodes(g) => super::vti::write(&tmp, g, &fields, frame),
        Mesh::Cells(g) => super::vti::write(&tmp, &node_grid_of_cells(g), &fields, frame),
    };
    let renamed = written.and_then(|_| {
        std::fs::rename(&tmp, &path).map_err(|e| SimError::Run(format!("cannot write {}: {e}", path.display())))
    });
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed
}

/// The piece of rank `rank` of a decomposed run's output step: `<prefix>_<step:08>_p<rank>.vti`.
pub fn piece_name(prefix: &str, step: u64, rank: usize) -> String {
    format!("{prefix}_{step:08}_p{rank}.vti")
}

/// The points of a grid mesh (a cell mesh's corner nodes).
fn points_of(mesh: &Mesh) -> Grid {
    match mesh {
        Mesh::Nodes(g) => *g,
        Mesh::Cells(g) => node_grid_of_cells(g),
        Mesh::Points(_) => unreachable!("clouds are not decomposed"),
    }
}

/// This rank's piece of a decomposed run's output step, as `dir/file` ([`piece_name`]), on
/// the grid `whole` (through a temporary name, as [`write`]).
pub fn write_piece(
    dir: &Path,
    file: &str,
    whole: &Mesh,
    piece: &Piece,
    fields: &[OutField],
    frame: &Frame,
) -> Result<()> {
    let fields: Vec<OutField> = fields.iter().map(|f| on_mesh(f, &piece.mesh)).collect();
    let path = dir.join(file);
    let tmp = super::tmp_path(&path);
    let (whole, grid) = (points_of(whole), points_of(&piece.mesh));
    let written = super::vti::write_piece(&tmp, &whole, piece.offset, &grid, &fields, frame);
    let renamed = written.and_then(|_| {
        std::fs::rename(&tmp, &path).map_err(|e| SimError::Run(format!("cannot write {}: {e}", path.display())))
    });
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed
}

/// The `.pvti` that makes the `pieces` (file, point extent) one image of the grid `whole`;
/// `fields` are one piece's (for the names and types of the arrays).
pub fn write_parallel(
    dir: &Path,
    file: &str,
    whole: &Mesh,
    pieces: &[(String, [usize; 4])],
    fields: &[OutField],
    frame: &Frame,
) -> Result<()> {
    super::vti::write_parallel(&dir.join(file), &points_of(whole), pieces, fields, frame)
}

// ---- appended data ----

/// One array of the appended data block, borrowed.
#[derive(Clone, Copy)]
pub enum Data<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
    I64(&'a [i64]),
    U8(&'a [u8]),
}

impl<'a> Data<'a> {
    pub fn of(v: &'a Values) -> Self {
        match v {
            Values::F32(v) => Data::F32(v),
            Values::F64(v) => Data::F64(v),
        }
    }
    pub fn vtk_type(&self) -> &'static str {
        match self {
            Data::F32(_) => "Float32",
            Data::F64(_) => "Float64",
            Data::I64(_) => "Int64",
            Data::U8(_) => "UInt8",
        }
    }
    fn elem(&self) -> usize {
        match self {
            Data::F32(_) => 4,
            Data::F64(_) | Data::I64(_) => 8,
            Data::U8(_) => 1,
        }
    }
    fn len(&self) -> usize {
        match self {
            Data::F32(v) => v.len(),
            Data::F64(v) => v.len(),
            Data::I64(v) => v.len(),
            Data::U8(v) => v.len(),
        }
    }
    fn bytes(&self) -> usize {
        self.len() * self.elem()
    }
    /// Little-endian bytes of elements `range`, appended to `out`.
    fn put(&self, range: std::ops::Range<usize>, out: &mut Vec<u8>) {
        match self {
            Data::F32(v) => v[range].iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
            Data::F64(v) => v[range].iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
            Data::I64(v) => v[range].iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
            Data::U8(v) => out.extend_from_slice(&v[range]),
        }
    }
}

/// Uncompressed bytes per compressed block (a multiple of every element size).
const BLOCK: usize = 1 << 20;

/// The appended data of a VTK XML file: each array's offset is known when it is added, so
/// the XML header can be written before the data. Raw arrays are streamed at the end;
/// compressed ones are compressed when added (blocks in parallel) and kept until then.
pub struct Appended<'a> {
    compression: Compression,
    arrays: Vec<(Data<'a>, Option<Vec<u8>>)>,
    offset: u64,
}

impl<'a> Appended<'a> {
    pub fn new(compression: Compression) -> Self {
        Appended { compression, arrays: Vec::new(), offset: 0 }
    }

    /// `compressor="..."` for the VTKFile element (empty without compression).
    pub fn compressor_attribute(&self) -> String {
        self.compression.compressor().map(|c| format!(r#" compressor="{c}""#)).unwrap_or_default()
    }

    /// Add an array; returns its offset in the appended block.
    pub fn add(&mut self, data: Data<'a>) -> u64 {
        let at = self.offset;
        let encoded = match self.compression {
            Compression::None => {
                self.offset += 8 + data.bytes() as u64;
                None
            }
            c => {
                let e = compress(data, c);
                self.offset += e.len() as u64;
                Some(e)
            }
        };
        self.arrays.push((data, encoded));
        at
    }

    /// `<AppendedData encoding="raw">_` and every array, then the closing tags.
    pub fn write_to(&self, w: &mut impl Write) -> std::io::Result<()> {
        write!(w, r#"<AppendedData encoding="raw">_"#)?;
        for (data, encoded) in &self.arrays {
            match encoded {
                Some(e) => w.write_all(e)?,
                None => {
                    w.write_all(&(data.bytes() as u64).to_le_bytes())?;
                    let per = BLOCK / data.elem();
                    let mut buf = Vec::with_capacity(BLOCK);
                    for start in (0..data.len()).step_by(per) {
                        buf.clear();
                        data.put(start..(start + per).min(data.len()), &mut buf);
                        w.write_all(&buf)?;
                    }
                }
            }
        }
        writeln!(w, "\n</AppendedData>\n</VTKFile>")
    }
}

/// VTK's compressed-array layout (header type UInt64): number of blocks, uncompressed block
/// size, uncompressed size of the last block (0 when it is full), the compressed size of
/// each block, then the compressed blocks.
fn compress(data: Data, c: Compression) -> Vec<u8> {
    let (n, elem) = (data.len(), data.elem());
    let per = BLOCK / elem;
    let blocks: Vec<Vec<u8>> = (0..n.div_ceil(per))
        .into_par_iter()
        .map(|b| {
            let mut raw = Vec::with_capacity(BLOCK);
            data.put(b * per..((b + 1) * per).min(n), &mut raw);
            match c {
                Compression::Zlib => {
                    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
                    z.write_all(&raw).expect("compress to memory");
                    z.finish().expect("compress to memory")
                }
                Compression::Lz4 => lz4_flex::block::compress(&raw),
                Compression::None => raw,
            }
        })
        .collect();
    let last = (n * elem) % BLOCK;
    let mut out = Vec::with_capacity(8 * (3 + blocks.len()) + blocks.iter().map(Vec::len).sum::<usize>());
    for v in [blocks.len() as u64, BLOCK as u64, last as u64] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for b in &blocks {
        out.extend_from_slice(&(b.len() as u64).to_le_bytes());
    }
    for b in &blocks {
        out.extend_from_slice(b);
    }
    out
}

/// `Scalars="..." Vectors="..."` for a PointData/CellData element: the first scalar and the
/// first 3-component field, which ParaView colours by and uses for glyphs and streamlines.
pub fn active_attributes<'f>(fields: impl Iterator<Item = &'f OutField>) -> String {
    let mut scalars = None;
    let mut vectors = None;
    for f in fields {
        match f.components {
            1 if scalars.is_none() => scalars = Some(f.name),
            3 if vectors.is_none() => vectors = Some(f.name),
            _ => {}
        }
    }
    let mut s = String::new();
    if let Some(n) = scalars {
        s += &format!(r#" Scalars="{n}""#);
    }
    if let Some(n) = vectors {
        s += &format!(r#" Vectors="{n}""#);
    }
    s
}

/// The field data: `TimeValue` and, when there are any, the `units` as a string (inline ASCII,
/// so readers see them while reading the header; ParaView lists them under Field Data).
pub fn field_data(frame: &Frame) -> String {
    let mut s = format!(
        "<FieldData>\n<DataArray type=\"Float64\" Name=\"TimeValue\" NumberOfTuples=\"1\" format=\"ascii\">{:.17e}</DataArray>\n",
        frame.time
    );
    if !frame.units.is_empty() {
        // VTK's ASCII string arrays: the bytes as numbers, each string ended by 0.
        let bytes: Vec<String> = frame.units.bytes().chain([0]).map(|b| b.to_string()).collect();
        s += &format!(
            "<DataArray type=\"String\" Name=\"units\" NumberOfTuples=\"1\" format=\"ascii\">{}</DataArray>\n",
            bytes.join(" ")
        );
    }
    s + "</FieldData>\n"
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
