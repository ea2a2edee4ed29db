//! VTK XML ImageData (`.vti`) writer with raw appended binary data: node fields as PointData,
//! cell fields as CellData, x fastest (the solvers' storage order), so no transpose is needed.

use std::io::Write;
use std::path::Path;

use crate::error::{Result, SimError};
use crate::real::Values;
use crate::solver::{Grid, Location, OutField};

/// Write `fields` (without halo, at `Location::Node` or `Location::Cell`) on the image whose
/// points are the nodes of `grid`.
pub fn write(path: &Path, grid: &Grid, fields: &[OutField]) -> Result<()> {
    write_inner(path, grid, fields)
        .map_err(|e| SimError::Run(format!("cannot write {}: {e}", path.display())))
}

fn write_inner(path: &Path, grid: &Grid, fields: &[OutField]) -> std::io::Result<()> {
    let file = std::fs::File::create(path)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    let [nx, ny] = grid.n;
    let (ex, ey) = (nx - 1, ny - 1);
    let [ox, oy] = grid.origin;
    let [dx, dy] = grid.spacing;
    writeln!(w, r#"<?xml version="1.0"?>"#)?;
    writeln!(w, r#"<VTKFile type="ImageData" version="1.0" byte_order="LittleEndian" header_type="UInt64">"#)?;
    writeln!(
        w,
        r#"<ImageData WholeExtent="0 {ex} 0 {ey} 0 0" Origin="{ox:e} {oy:e} 0" Spacing="{dx:e} {dy:e} 1">"#
    )?;
    writeln!(w, r#"<Piece Extent="0 {ex} 0 {ey} 0 0">"#)?;
    let cells = ex.max(1) * ey.max(1);
    // Point data first, then cell data; the appended block follows the same order.
    let at = |loc| fields.iter().filter(move |f: &&OutField| f.place.loc == loc);
    let mut offset = 0u64;
    for (tag, loc, count) in [("PointData", Location::Node, grid.nodes()), ("CellData", Location::Cell, cells)] {
        if at(loc).next().is_none() {
            continue;
        }
        writeln!(w, "<{tag}>")?;
        for f in at(loc) {
            assert_eq!(f.values.len(), f.components * count, "field {} size", f.name);
            let ty = match f.values {
                Values::F32(_) => "Float32",
                Values::F64(_) => "Float64",
            };
            writeln!(
                w,
                r#"<DataArray type="{ty}" Name="{}" NumberOfComponents="{}" format="appended" offset="{offset}"/>"#,
                f.name, f.components
            )?;
            offset += 8 + payload_bytes(&f.values);
        }
        writeln!(w, "</{tag}>")?;
    }
    writeln!(w, "</Piece>\n</ImageData>")?;
    write!(w, r#"<AppendedData encoding="raw">_"#)?;
    for f in at(Location::Node).chain(at(Location::Cell)) {
        w.write_all(&payload_bytes(&f.values).to_le_bytes())?;
        match &f.values {
            Values::F32(v) => v.iter().try_for_each(|x| w.write_all(&x.to_le_bytes()))?,
            Values::F64(v) => v.iter().try_for_each(|x| w.write_all(&x.to_le_bytes()))?,
        }
    }
    writeln!(w, "\n</AppendedData>\n</VTKFile>")?;
    w.flush()
}

fn payload_bytes(v: &Values) -> u64 {
    (v.len() * v.precision().bytes()) as u64
}
