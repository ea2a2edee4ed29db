//! VTK XML UnstructuredGrid (`.vtu`) writer for point clouds: the points with their point
//! data, and as cells either one vertex per point or triangles over the points (a surface
//! that ParaView can contour); appended binary data as in [`super::vti`].

use std::io::Write;
use std::path::Path;

use super::output::{Appended, Data, Frame, active_attributes, field_data};
use crate::error::{Result, SimError};
use crate::solver::OutField;

/// VTK cell types.
const VTK_VERTEX: u8 = 1;
const VTK_TRIANGLE: u8 = 5;

/// Write `points` (x, y; z = 0) with the node fields; the cells are `frame.triangles`, or one
/// vertex per point without them.
pub fn write(path: &Path, points: &[[f64; 2]], fields: &[OutField], frame: &Frame) -> Result<()> {
    write_inner(path, points, fields, frame)
        .map_err(|e| SimError::Run(format!("cannot write {}: {e}", path.display())))
}

fn write_inner(path: &Path, points: &[[f64; 2]], fields: &[OutField], frame: &Frame) -> std::io::Result<()> {
    let n = points.len();
    let xyz: Vec<f64> = points.iter().flat_map(|p| [p[0], p[1], 0.0]).collect();
    let (connectivity, offsets, types): (Vec<i64>, Vec<i64>, Vec<u8>) = match frame.triangles {
        Some(t) => (
            t.iter().flat_map(|c| c.map(i64::from)).collect(),
            (1..=t.len() as i64).map(|k| 3 * k).collect(),
            vec![VTK_TRIANGLE; t.len()],
        ),
        None => ((0..n as i64).collect(), (1..=n as i64).collect(), vec![VTK_VERTEX; n]),
    };
    let cells = types.len();
    let mut data = Appended::new(frame.compression);
    let mut head = String::new();
    head += "<?xml version=\"1.0\"?>\n";
    head += &format!(
        "<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\"{}>\n",
        data.compressor_attribute()
    );
    head += "<UnstructuredGrid>\n";
    head += &field_data(frame);
    head += &format!("<Piece NumberOfPoints=\"{n}\" NumberOfCells=\"{cells}\">\n");
    fn array<'a>(data: &mut Appended<'a>, head: &mut String, d: Data<'a>, name: &str, comps: usize) {
        let offset = data.add(d);
        *head += &format!(
            "<DataArray type=\"{}\" Name=\"{name}\" NumberOfComponents=\"{comps}\" format=\"appended\" offset=\"{offset}\"/>\n",
            d.vtk_type()
        );
    }
    head += &format!("<PointData{}>\n", active_attributes(fields.iter()));
    for f in fields {
        assert_eq!(f.values.len(), f.components * n, "field {} size", f.name);
        array(&mut data, &mut head, Data::of(&f.values), f.name, f.components);
    }
    head += "</PointData>\n<Points>\n";
    array(&mut data, &mut head, Data::F64(&xyz), "Points", 3);
    head += "</Points>\n<Cells>\n";
    array(&mut data, &mut head, Data::I64(&connectivity), "connectivity", 1);
    array(&mut data, &mut head, Data::I64(&offsets), "offsets", 1);
    array(&mut data, &mut head, Data::U8(&types), "types", 1);
    head += "</Cells>\n</Piece>\n</UnstructuredGrid>\n";
    let file = std::fs::File::create(path)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    w.write_all(head.as_bytes())?;
    data.write_to(&mut w)?;
    w.flush()
}
