//! HDF5 checkpoints:
//!
//! ```text
//! /            attrs: format="sim-checkpoint", format_version, solver, step, time,
//!                     precision, backend, sim_version, case_yaml
//! /fields/NAME every array the solver needs to continue
//! /geometry/   attr mesh = "nodes" | "cells" | "points"; grids: n (nodes or cells per axis),
//!              origin, spacing; point clouds: points [N x 3] (x, y, 0) and conn [N x 1]
//!              (0..N-1, one vertex per point)
//! ```
//! Written to `NAME.h5.tmp` and renamed; an XDMF sidecar (`NAME.xmf`) opens it in ParaView.

use std::path::{Path, PathBuf};

use hdf5::types::{FloatSize, TypeDescriptor, VarLenUnicode};

use crate::error::{Result, SimError};
use crate::real::{Precision, Values};
use crate::solver::{Grid, Location, Mesh, Place, StateArray};

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

/// Write a checkpoint of the solver state `arrays` on `mesh`, then its XDMF sidecar.
pub fn write(path: &Path, meta: &Meta, arrays: &[StateArray], mesh: &Mesh) -> Result<()> {
    let tmp = super::tmp_path(path);
    write_file(&tmp, meta, arrays, mesh)
        .map_err(|e| e.to_string())
        .and_then(|_| std::fs::rename(&tmp, path).map_err(|e| e.to_string()))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            SimError::Run(format!("cannot write checkpoint {}: {e}", path.display()))
        })?;
    super::write_atomic(&path.with_extension("xmf"), xdmf(path, meta, arrays, mesh).as_bytes())
}

fn str_attr(loc: &hdf5::Location, name: &str, value: &str) -> hdf5::Result<()> {
    let v: VarLenUnicode = value.parse().map_err(|e| hdf5::Error::from(format!("{e:?}")))?;
    loc.new_attr::<VarLenUnicode>().create(name)?.write_scalar(&v)
}

fn write_file(path: &Path, meta: &Meta, arrays: &[StateArray], mesh: &Mesh) -> hdf5::Result<()> {
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
    match mesh {
        Mesh::Nodes(grid) | Mesh::Cells(grid) => {
            str_attr(&g, "mesh", if matches!(mesh, Mesh::Nodes(_)) { "nodes" } else { "cells" })?;
            g.new_dataset::<u64>().shape(2).create("n")?.write_raw(&grid.n.map(|n| n as u64))?;
            g.new_dataset::<f64>().shape(2).create("origin")?.write_raw(&grid.origin)?;
            g.new_dataset::<f64>().shape(2).create("spacing")?.write_raw(&grid.spacing)?;
        }
        Mesh::Points(p) => {
            str_attr(&g, "mesh", "points")?;
            let xyz: Vec<f64> = p.iter().flat_map(|q| [q[0], q[1], 0.0]).collect();
            g.new_dataset::<f64>().shape([p.len(), 3]).create("points")?.write_raw(&xyz)?;
            let conn: Vec<i64> = (0..p.len() as i64).collect();
            g.new_dataset::<i64>().shape([p.len(), 1]).create("conn")?.write_raw(&conn)?;
        }
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
        arrays.push(StateArray { name, shape: ds.shape(), values, place: None });
    }
    Ok((meta, arrays))
}

/// XDMF3 sidecar, so ParaView opens the checkpoint's mesh fields directly, with any of its
/// readers (XDMF Reader, Xdmf3 Reader, Xdmf3 Reader (Top Level Partition)). Every array of
/// `/fields` is either described or named in a comment that says why it is left out.
///
/// The grid sits in a temporal collection of one entry: the Xdmf3 readers take the time only
/// from a temporal collection, and with a time in every sidecar a group of them opens as a
/// time series. The time is the simulated time, or the step under pseudo-time (as in the
/// `.pvd`). Data items state the dimensions of the topology (`1 ny nx` on grids): the legacy
/// XDMF Reader reads a `ny nx` item on a `1 ny nx` mesh as its first `ny` values only.
fn xdmf(h5: &Path, meta: &Meta, arrays: &[StateArray], mesh: &Mesh) -> String {
    let file = h5.file_name().and_then(|s| s.to_str()).unwrap_or_default();
    let pseudo = crate::case::Case::parse(&meta.case_yaml, "")
        .is_ok_and(|c| c.solver.spec().clock() == crate::solver::Clock::Iterations);
    let time = if pseudo { meta.step as f64 } else { meta.time };
    let mut s = format!(
        "<?xml version=\"1.0\" ?>\n<Xdmf Version=\"3.0\">\n<Domain>\n\
         <Grid Name=\"{0}\" GridType=\"Collection\" CollectionType=\"Temporal\">\n\
         <Grid Name=\"{0}\" GridType=\"Uniform\">\n<Time Value=\"{1:.17e}\"/>\n",
        meta.solver, time
    );
    if pseudo {
        s += &format!("<!-- pseudo-time solver: the time is the iteration number {} -->\n", meta.step);
    }
    s += &topology(mesh, file);
    for a in arrays {
        match attribute(a, mesh, file) {
            Ok(x) => s += &x,
            Err(why) => s += &format!("<!-- /fields/{} {:?} is not listed: {why} -->\n", a.name, a.shape),
        }
    }
    s += "</Grid>\n</Grid>\n</Domain>\n</Xdmf>\n";
    s
}

/// Dimensions of a mesh field at `loc` as the XDMF topology has them: `1 ny nx` on grids
/// (`1 1 nx` in 1D), `n` on clouds.
fn xdmf_dims(mesh: &Mesh, loc: Location) -> Vec<usize> {
    match (mesh, mesh.dims(loc)) {
        (Mesh::Points(_), [n, _]) => vec![n],
        (_, [nx, ny]) => vec![1, ny, nx],
    }
}

fn dims_text(d: &[usize]) -> String {
    d.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" ")
}

/// Topology and geometry of `mesh` (grids as 3D co-rectilinear meshes of one layer).
fn topology(mesh: &Mesh, file: &str) -> String {
    let grid = |g: &Grid, dims: Vec<usize>| {
        format!(
            "<Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"{}\"/>\n\
             <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n\
             <DataItem Format=\"XML\" NumberType=\"Float\" Precision=\"8\" Dimensions=\"3\">0 {:e} {:e}</DataItem>\n\
             <DataItem Format=\"XML\" NumberType=\"Float\" Precision=\"8\" Dimensions=\"3\">1 {:e} {:e}</DataItem>\n\
             </Geometry>\n",
            dims_text(&dims),
            g.origin[1],
            g.origin[0],
            g.spacing[1],
            g.spacing[0]
        )
    };
    match mesh {
        Mesh::Nodes(g) | Mesh::Cells(g) => grid(g, xdmf_dims(mesh, Location::Node)),
        Mesh::Points(p) => {
            let n = p.len();
            format!(
                "<Topology TopologyType=\"Polyvertex\" NumberOfElements=\"{n}\" NodesPerElement=\"1\">\n\
                 <DataItem Format=\"HDF\" NumberType=\"Int\" Precision=\"8\" Dimensions=\"{n} 1\">{file}:/geometry/conn</DataItem>\n\
                 </Topology>\n<Geometry GeometryType=\"XYZ\">\n\
                 <DataItem Format=\"HDF\" NumberType=\"Float\" Precision=\"8\" Dimensions=\"{n} 3\">{file}:/geometry/points</DataItem>\n\
                 </Geometry>\n"
            )
        }
    }
}

/// The XDMF attribute of mesh field `a` (halos cut away with a hyperslab), or why it has none.
fn attribute(a: &StateArray, mesh: &Mesh, file: &str) -> std::result::Result<String, &'static str> {
    let Some(Place { loc, halo }) = a.place else {
        return Err("not a field on the mesh");
    };
    let center = match loc {
        Location::Node => "Node",
        Location::Cell => "Cell",
        Location::FaceX | Location::FaceY => return Err("staggered face values (the .vti output has them averaged to cells)"),
    };
    let shown = dims_text(&xdmf_dims(mesh, loc));
    let precision = a.values.precision().bytes();
    let item = if halo == 0 {
        format!(
            "<DataItem Format=\"HDF\" NumberType=\"Float\" Precision=\"{precision}\" Dimensions=\"{shown}\">{file}:/fields/{}</DataItem>\n",
            a.name
        )
    } else {
        // The selection is in the dataset's own rank; the result takes the topology's shape.
        let inner = crate::solver::shape_of(Place { loc, halo: 0 }, mesh);
        let start = vec![halo.to_string(); inner.len()].join(" ");
        let stride = vec!["1"; inner.len()].join(" ");
        format!(
            "<DataItem ItemType=\"HyperSlab\" Dimensions=\"{shown}\" Type=\"HyperSlab\">\n\
             <DataItem Format=\"XML\" Dimensions=\"3 {rank}\">{start} {stride} {count}</DataItem>\n\
             <DataItem Format=\"HDF\" NumberType=\"Float\" Precision=\"{precision}\" Dimensions=\"{stored}\">{file}:/fields/{name}</DataItem>\n\
             </DataItem>\n",
            rank = inner.len(),
            count = dims_text(&inner),
            stored = dims_text(&a.shape),
            name = a.name
        )
    };
    Ok(format!("<Attribute Name=\"{}\" AttributeType=\"Scalar\" Center=\"{center}\">\n{item}</Attribute>\n", a.name))
}
