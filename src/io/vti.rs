//! VTK XML ImageData (`.vti`) writer with appended binary data (raw or block-compressed):
//! node fields as PointData, cell fields as CellData, x fastest (the solvers' storage
//! order), so no transpose is needed. The first scalar and vector fields are marked as the
//! active `Scalars`/`Vectors`, and the time is stored as `TimeValue` field data.

use std::io::Write;
use std::path::Path;

use super::output::{Appended, Data, Frame, active_attributes, field_data};
use crate::error::{Result, SimError};
use crate::solver::{Grid, Location, OutField};

/// Write `fields` (without halo, at `Location::Node` or `Location::Cell`) on the image whose
/// points are the nodes of `grid`.
pub fn write(path: &Path, grid: &Grid, fields: &[OutField], frame: &Frame) -> Result<()> {
    write_inner(path, grid, (grid, [0, 0]), fields, frame)
        .map_err(|e| SimError::Run(format!("cannot write {}: {e}", path.display())))
}

/// [`write`] for the piece of a decomposed run whose points are those of `grid`, the first
/// one at index `offset` of the points of `whole`: the file has the whole grid's extent and
/// origin, and the piece's extent within it (what a `.pvti` lists).
pub fn write_piece(
    path: &Path,
    whole: &Grid,
    offset: [usize; 2],
    grid: &Grid,
    fields: &[OutField],
    frame: &Frame,
) -> Result<()> {
    write_inner(path, grid, (whole, offset), fields, frame)
        .map_err(|e| SimError::Run(format!("cannot write {}: {e}", path.display())))
}

/// The `.pvti` of a decomposed run's output step: the whole grid, the arrays every piece has
/// (names, types and components of `fields`, one piece's) and each piece's file and extent.
pub fn write_parallel(
    path: &Path,
    whole: &Grid,
    pieces: &[(String, [usize; 4])],
    fields: &[OutField],
    frame: &Frame,
) -> Result<()> {
    let [ex, ey] = [whole.n[0] - 1, whole.n[1] - 1];
    let ([ox, oy], [dx, dy]) = (whole.origin, whole.spacing);
    let mut s = String::from("<?xml version=\"1.0\"?>\n");
    s += "<VTKFile type=\"PImageData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n";
    s += &format!("<PImageData WholeExtent=\"0 {ex} 0 {ey} 0 0\" GhostLevel=\"0\" ");
    s += &format!("Origin=\"{ox:e} {oy:e} 0\" Spacing=\"{dx:e} {dy:e} 1\">\n");
    s += &field_data(frame);
    let at = |loc| fields.iter().filter(move |f: &&OutField| f.place.loc == loc);
    for (tag, loc) in [("PPointData", Location::Node), ("PCellData", Location::Cell)] {
        if at(loc).next().is_none() {
            continue;
        }
        s += &format!("<{tag}{}>\n", active_attributes(at(loc)));
        for f in at(loc) {
            let t = Data::of(&f.values).vtk_type();
            s += &format!("<PDataArray type=\"{t}\" Name=\"{}\" NumberOfComponents=\"{}\"/>\n", f.name, f.components);
        }
        s += &format!("</{tag}>\n");
    }
    for (file, [x0, x1, y0, y1]) in pieces {
        s += &format!("<Piece Extent=\"{x0} {x1} {y0} {y1} 0 0\" Source=\"{file}\"/>\n");
    }
    s += "</PImageData>\n</VTKFile>\n";
    crate::io::write_atomic(path, s.as_bytes())
}

/// The image of `grid`, placed at `offset` among the points of `whole`.
fn write_inner(
    path: &Path,
    grid: &Grid,
    (whole, offset): (&Grid, [usize; 2]),
    fields: &[OutField],
    frame: &Frame,
) -> std::io::Result<()> {
    let [nx, ny] = grid.n;
    let [wx, wy] = [whole.n[0] - 1, whole.n[1] - 1];
    let [x0, y0] = offset;
    let (ex, ey) = (nx - 1, ny - 1);
    let [ox, oy] = whole.origin;
    let [dx, dy] = grid.spacing;
    let cells = ex.max(1) * ey.max(1);
    let mut data = Appended::new(frame.compression);
    let mut head = String::new();
    head += "<?xml version=\"1.0\"?>\n";
    head += &format!(
        "<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\"{}>\n",
        data.compressor_attribute()
    );
    head += &format!(
        "<ImageData WholeExtent=\"0 {wx} 0 {wy} 0 0\" Origin=\"{ox:e} {oy:e} 0\" Spacing=\"{dx:e} {dy:e} 1\">\n"
    );
    head += &field_data(frame);
    head += &format!("<Piece Extent=\"{x0} {} {y0} {} 0 0\">\n", x0 + ex, y0 + ey);
    // Point data first, then cell data; the appended block follows the same order.
    let at = |loc| fields.iter().filter(move |f: &&OutField| f.place.loc == loc);
    for (tag, loc, count) in [("PointData", Location::Node, grid.nodes()), ("CellData", Location::Cell, cells)] {
        if at(loc).next().is_none() {
            continue;
        }
        head += &format!("<{tag}{}>\n", active_attributes(at(loc)));
        for f in at(loc) {
            assert_eq!(f.values.len(), f.components * count, "field {} size", f.name);
            let d = Data::of(&f.values);
            let offset = data.add(d);
            head += &format!(
                "<DataArray type=\"{}\" Name=\"{}\" NumberOfComponents=\"{}\" format=\"appended\" offset=\"{offset}\"/>\n",
                d.vtk_type(),
                f.name,
                f.components
            );
        }
        head += &format!("</{tag}>\n");
    }
    head += "</Piece>\n</ImageData>\n";
    let file = std::fs::File::create(path)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    w.write_all(head.as_bytes())?;
    data.write_to(&mut w)?;
    w.flush()
}
