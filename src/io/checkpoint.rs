//! HDF5 checkpoints:
//!
//! ```text
//! /            attrs: format="sim-checkpoint", format_version, solver, step, time,
//!                     precision, backend, sim_version, case_yaml
//! /fields/NAME every array the solver needs to continue
//! /geometry/   n, origin, spacing of the grid; for point clouds also
//!              points [N x 3] (x, y, 0) and conn [N x 1] (0..N-1, one vertex per point)
//! ```
//! Written to `NAME.h5.tmp` and renamed; an XDMF sidecar (`NAME.xmf`) opens it in ParaView.

use std::path::{Path, PathBuf};

use hdf5::types::{FloatSize, TypeDescriptor, VarLenUnicode};

use crate::error::{Result, SimError};
use crate::real::{Precision, Values};
use crate::solver::{Grid, StateArray};

pub const FORMAT: &str = "sim-checkpoint";
pub const FORMAT_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    pub solver: String,
    pub step: u64,
    pub time: f64,
    pub precision: Precision,
    pub backend: String,
    pub case_yaml: String,
}

/// `checkpoint_<step:08>.h5` in `dir`.
pub fn path_for(dir: &Path, step: u64) -> PathBuf {
    dir.join(format!("checkpoint_{step:08}.h5"))
}

/// Checkpoints in `dir`, sorted by step.
pub fn list(dir: &Path) -> Vec<(u64, PathBuf)> {
    let mut v: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let step = name.strip_prefix("checkpoint_")?.strip_suffix(".h5")?.parse().ok()?;
            Some((step, e.path()))
        })
        .collect();
    v.sort();
    v
}

pub fn write(path: &Path, meta: &Meta, arrays: &[StateArray], grid: &Grid) -> Result<()> {
    write_with_points(path, meta, arrays, grid, None)
}

/// [`write`] for a solver that may live on a point cloud: with `points`, the geometry also
/// holds the coordinates and the XDMF sidecar describes a Polyvertex cloud.
pub fn write_with_points(
    path: &Path,
    meta: &Meta,
    arrays: &[StateArray],
    grid: &Grid,
    points: Option<&[[f64; 2]]>,
) -> Result<()> {
    let tmp = super::tmp_path(path);
    write_file(&tmp, meta, arrays, grid, points)
        .map_err(|e| e.to_string())
        .and_then(|_| std::fs::rename(&tmp, path).map_err(|e| e.to_string()))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            SimError::Run(format!("cannot write checkpoint {}: {e}", path.display()))
        })?;
    match points {
        Some(p) => write_xdmf_points(path, meta, arrays, p.len()),
        None => write_xdmf(path, meta, arrays, grid),
    }
}

fn str_attr(loc: &hdf5::Location, name: &str, value: &str) -> hdf5::Result<()> {
    let v: VarLenUnicode = value.parse().map_err(|e| hdf5::Error::from(format!("{e:?}")))?;
    loc.new_attr::<VarLenUnicode>().create(name)?.write_scalar(&v)
}

fn write_file(
    path: &Path,
    meta: &Meta,
    arrays: &[StateArray],
    grid: &Grid,
    points: Option<&[[f64; 2]]>,
) -> hdf5::Result<()> {
    let f = hdf5::File::create(path)?;
    str_attr(&f, "format", FORMAT)?;
    f.new_attr::<u32>().create("format_version")?.write_scalar(&FORMAT_VERSION)?;
    str_attr(&f, "solver", &meta.solver)?;
    f.new_attr::<u64>().create("step")?.write_scalar(&meta.step)?;
    f.new_attr::<f64>().create("time")?.write_scalar(&meta.time)?;
    str_attr(&f, "precision", meta.precision.name())?;
    str_attr(&f, "backend", &meta.backend)?;
    str_attr(&f, "sim_version", env!("CARGO_PKG_VERSION"))?;
    str_attr(&f, "case_yaml", &meta.case_yaml)?;
    let fields = f.create_group("fields")?;
    for a in arrays {
        match &a.values {
            Values::F32(v) => fields.new_dataset::<f32>().shape(a.shape.clone()).create(a.name.as_str())?.write_raw(v)?,
            Values::F64(v) => fields.new_dataset::<f64>().shape(a.shape.clone()).create(a.name.as_str())?.write_raw(v)?,
        }
    }
    let g = f.create_group("geometry")?;
    g.new_dataset::<u64>().shape(2).create("n")?.write_raw(&grid.n.map(|n| n as u64))?;
    g.new_dataset::<f64>().shape(2).create("origin")?.write_raw(&grid.origin)?;
    g.new_dataset::<f64>().shape(2).create("spacing")?.write_raw(&grid.spacing)?;
    if let Some(p) = points {
        let xyz: Vec<f64> = p.iter().flat_map(|q| [q[0], q[1], 0.0]).collect();
        g.new_dataset::<f64>().shape([p.len(), 3]).create("points")?.write_raw(&xyz)?;
        let conn: Vec<i64> = (0..p.len() as i64).collect();
        g.new_dataset::<i64>().shape([p.len(), 1]).create("conn")?.write_raw(&conn)?;
    }
    drop((fields, g));
    // Close now (not when the last handle happens to drop): the file is renamed next and
    // may be opened by another process at once.
    f.close()
}

/// Read a checkpoint; every problem is an input error naming the file.
pub fn read(path: &Path) -> Result<(Meta, Vec<StateArray>)> {
    let bad = |msg: String| SimError::Input(format!("checkpoint {}: {msg}", path.display()));
    if !path.is_file() {
        return Err(bad("no such file".into()));
    }
    let f = hdf5::File::open(path).map_err(|e| bad(format!("not a readable HDF5 file ({e})")))?;
    let text = |name: &str| -> Result<String> {
        let a = f.attr(name).map_err(|_| bad(format!("missing attribute '{name}'")))?;
        let v: VarLenUnicode =
            a.read_scalar().map_err(|e| bad(format!("attribute '{name}' is not a string ({e})")))?;
        Ok(v.as_str().to_string())
    };
    let format = text("format")?;
    if format != FORMAT {
        return Err(bad(format!("format is '{format}', expected '{FORMAT}'")));
    }
    let version: u32 = f
        .attr("format_version")
        .and_then(|a| a.read_scalar())
        .map_err(|_| bad("missing or unreadable attribute 'format_version'".into()))?;
    if version != FORMAT_VERSION {
        return Err(bad(format!(
            "format_version {version} is not supported (this sim reads version {FORMAT_VERSION})"
        )));
    }
    let step: u64 = f.attr("step").and_then(|a| a.read_scalar()).map_err(|_| bad("missing attribute 'step'".into()))?;
    let time: f64 = f.attr("time").and_then(|a| a.read_scalar()).map_err(|_| bad("missing attribute 'time'".into()))?;
    let precision_name = text("precision")?;
    let precision = Precision::parse(&precision_name)
        .ok_or_else(|| bad(format!("precision '{precision_name}' is neither f32 nor f64")))?;
    let meta = Meta {
        solver: text("solver")?,
        step,
        time,
        precision,
        backend: text("backend")?,
        case_yaml: text("case_yaml")?,
    };
    let fields = f.group("fields").map_err(|_| bad("missing group /fields".into()))?;
    let names = fields.member_names().map_err(|e| bad(format!("cannot list /fields ({e})")))?;
    let mut arrays = Vec::new();
    for name in names {
        let ds = fields.dataset(&name).map_err(|e| bad(format!("/fields/{name}: {e}")))?;
        let read_err = |e: hdf5::Error| bad(format!("cannot read /fields/{name} ({e})"));
        let descr = ds.dtype().and_then(|t| t.to_descriptor()).map_err(read_err)?;
        let values = match descr {
            TypeDescriptor::Float(FloatSize::U4) => Values::F32(ds.read_raw().map_err(read_err)?),
            TypeDescriptor::Float(FloatSize::U8) => Values::F64(ds.read_raw().map_err(read_err)?),
            other => return Err(bad(format!("/fields/{name} has type {other:?}, expected a float"))),
        };
        arrays.push(StateArray { name, shape: ds.shape(), values });
    }
    Ok((meta, arrays))
}

/// XDMF3 sidecar so ParaView can open the checkpoint's node fields directly.
fn write_xdmf(h5: &Path, meta: &Meta, arrays: &[StateArray], grid: &Grid) -> Result<()> {
    let file = h5.file_name().and_then(|s| s.to_str()).unwrap_or_default();
    let [nx, ny] = grid.n;
    let mut s = format!(
        "<?xml version=\"1.0\" ?>\n<Xdmf Version=\"3.0\">\n<Domain>\n<Grid Name=\"{}\" GridType=\"Uniform\">\n\
         <Time Value=\"{:.17e}\"/>\n<Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"1 {ny} {nx}\"/>\n\
         <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n\
         <DataItem Format=\"XML\" NumberType=\"Float\" Precision=\"8\" Dimensions=\"3\">0 {:e} {:e}</DataItem>\n\
         <DataItem Format=\"XML\" NumberType=\"Float\" Precision=\"8\" Dimensions=\"3\">1 {:e} {:e}</DataItem>\n\
         </Geometry>\n",
        meta.solver, meta.time, grid.origin[1], grid.origin[0], grid.spacing[1], grid.spacing[0]
    );
    // Only node fields; small solver scalars stay in the HDF5 file.
    for a in arrays.iter().filter(|a| a.values.len() == nx * ny) {
        let dims: Vec<String> = a.shape.iter().map(|d| d.to_string()).collect();
        s += &format!(
            "<Attribute Name=\"{0}\" AttributeType=\"Scalar\" Center=\"Node\">\n\
             <DataItem Format=\"HDF\" NumberType=\"Float\" Precision=\"{1}\" Dimensions=\"{2}\">{3}:/fields/{0}</DataItem>\n</Attribute>\n",
            a.name,
            a.values.precision().bytes(),
            dims.join(" "),
            file
        );
    }
    s += "</Grid>\n</Domain>\n</Xdmf>\n";
    super::write_atomic(&h5.with_extension("xmf"), s.as_bytes())
}

/// XDMF3 sidecar of a point-cloud checkpoint (Polyvertex topology with explicit connectivity);
/// every `/fields` array of length N is a node attribute.
fn write_xdmf_points(h5: &Path, meta: &Meta, arrays: &[StateArray], n: usize) -> Result<()> {
    let file = h5.file_name().and_then(|s| s.to_str()).unwrap_or_default();
    let mut s = format!(
        "<?xml version=\"1.0\" ?>\n<Xdmf Version=\"3.0\">\n<Domain>\n<Grid Name=\"{}\" GridType=\"Uniform\">\n\
         <Time Value=\"{:.17e}\"/>\n\
         <Topology TopologyType=\"Polyvertex\" NumberOfElements=\"{n}\" NodesPerElement=\"1\">\n\
         <DataItem Format=\"HDF\" NumberType=\"Int\" Precision=\"8\" Dimensions=\"{n} 1\">{file}:/geometry/conn</DataItem>\n\
         </Topology>\n<Geometry GeometryType=\"XYZ\">\n\
         <DataItem Format=\"HDF\" NumberType=\"Float\" Precision=\"8\" Dimensions=\"{n} 3\">{file}:/geometry/points</DataItem>\n\
         </Geometry>\n",
        meta.solver, meta.time
    );
    for a in arrays.iter().filter(|a| a.shape == [n]) {
        s += &format!(
            "<Attribute Name=\"{0}\" AttributeType=\"Scalar\" Center=\"Node\">\n\
             <DataItem Format=\"HDF\" NumberType=\"Float\" Precision=\"{1}\" Dimensions=\"{n}\">{2}:/fields/{0}</DataItem>\n</Attribute>\n",
            a.name,
            a.values.precision().bytes(),
            file
        );
    }
    s += "</Grid>\n</Domain>\n</Xdmf>\n";
    super::write_atomic(&h5.with_extension("xmf"), s.as_bytes())
}
