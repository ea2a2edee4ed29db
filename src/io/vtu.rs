//! VTK XML UnstructuredGrid (`.vtu`) writer for point clouds: one vertex cell per point, point
//! data, raw appended binary data (as [`super::vti`]).

use std::io::Write;
use std::path::Path;

use crate::error::{Result, SimError};
use crate::real::Values;
use crate::solver::OutField;

/// Write `points` (x, y; z = 0) with one vertex cell each and the node fields.
pub fn write(path: &Path, points: &[[f64; 2]], fields: &[OutField]) -> Result<()> {
    write_inner(path, points, fields)
        .map_err(|e| SimError::Run(format!("cannot write {}: {e}", path.display())))
}

fn write_inner(path: &Path, points: &[[f64; 2]], fields: &[OutField]) -> std::io::Result<()> {
    let n = points.len();
    let file = std::fs::File::create(path)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    writeln!(w, r#"<?xml version="1.0"?>"#)?;
    writeln!(w, r#"<VTKFile type="UnstructuredGrid" version="1.0" byte_order="LittleEndian" header_type="UInt64">"#)?;
    writeln!(w, "<UnstructuredGrid>")?;
    writeln!(w, r#"<Piece NumberOfPoints="{n}" NumberOfCells="{n}">"#)?;
    let mut offset = 0u64;
    let mut array = |w: &mut std::io::BufWriter<std::fs::File>, ty: &str, name: &str, comps: usize, bytes: u64| {
        let r = writeln!(
            w,
            r#"<DataArray type="{ty}" Name="{name}" NumberOfComponents="{comps}" format="appended" offset="{offset}"/>"#
        );
        offset += 8 + bytes;
        r
    };
    writeln!(w, "<PointData>")?;
    for f in fields {
        assert_eq!(f.values.len(), f.components * n, "field {} size", f.name);
        let ty = match f.values {
            Values::F32(_) => "Float32",
            Values::F64(_) => "Float64",
        };
        array(&mut w, ty, f.name, f.components, (f.values.len() * f.values.precision().bytes()) as u64)?;
    }
    writeln!(w, "</PointData>")?;
    writeln!(w, "<Points>")?;
    array(&mut w, "Float64", "Points", 3, 24 * n as u64)?;
    writeln!(w, "</Points>")?;
    writeln!(w, "<Cells>")?;
    array(&mut w, "Int64", "connectivity", 1, 8 * n as u64)?;
    array(&mut w, "Int64", "offsets", 1, 8 * n as u64)?;
    array(&mut w, "UInt8", "types", 1, n as u64)?;
    writeln!(w, "</Cells>")?;
    writeln!(w, "</Piece>\n</UnstructuredGrid>")?;
    write!(w, r#"<AppendedData encoding="raw">_"#)?;
    for f in fields {
        w.write_all(&((f.values.len() * f.values.precision().bytes()) as u64).to_le_bytes())?;
        match &f.values {
            Values::F32(v) => v.iter().try_for_each(|x| w.write_all(&x.to_le_bytes()))?,
            Values::F64(v) => v.iter().try_for_each(|x| w.write_all(&x.to_le_bytes()))?,
        }
    }
    w.write_all(&(24 * n as u64).to_le_bytes())?;
    for p in points {
        for c in [p[0], p[1], 0.0] {
            w.write_all(&c.to_le_bytes())?;
        }
    }
    w.write_all(&(8 * n as u64).to_le_bytes())?;
    for k in 0..n as i64 {
        w.write_all(&k.to_le_bytes())?;
    }
    w.write_all(&(8 * n as u64).to_le_bytes())?;
    for k in 1..=n as i64 {
        w.write_all(&k.to_le_bytes())?;
    }
    w.write_all(&(n as u64).to_le_bytes())?;
    w.write_all(&vec![1u8; n])?; // VTK_VERTEX
    writeln!(w, "\n</AppendedData>\n</VTKFile>")?;
    w.flush()
}
