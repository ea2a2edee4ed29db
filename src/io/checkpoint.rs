//! HDF5 checkpoints:
//!
//! ```text
//! /            attrs: format="sim-checkpoint", format_version, solver, step, time,
//!                     precision, backend, sim_version, case_yaml, checksum
//! /fields/NAME every array the solver needs to continue
//! /geometry/   attr mesh = "nodes" | "cells" | "points"; grids: n (nodes or cells per axis),
//!              origin, spacing; point clouds: points [N x 3] (x, y, 0) and conn [N x 1]
//!              (0..N-1, one vertex per point)
//! ```
//! Written to `NAME.h5.tmp` and renamed; an XDMF sidecar (`NAME.xmf`) opens it in ParaView.
//!
//! `checksum` is the SHA-256 of a canonical serialisation of every other root attribute, the
//! `mesh` attribute and every dataset under `/fields` and `/geometry` (see `Canonical`),
//! computed from the values written and, on a restart, from the values read.
//!
//! A restart reads a checkpoint in two steps, so that nothing is allocated by a size the file
//! declares: [`open`] reads and checks the attributes (no array data); once the solver is built
//! from the stored case, [`Opened::read_state`] checks every dataset's link, storage, type and
//! shape against what the solver expects ([`crate::solver::Solver::state_layout`]), then reads
//! them one by one, feeding each into the checksum, and compares the checksum at the end.

use std::path::{Path, PathBuf};

use hdf5::LinkType;
use hdf5::dataset::Layout;
use hdf5::types::{FloatSize, IntSize, TypeDescriptor, VarLenUnicode};
use sha2::{Digest, Sha256};

use crate::error::{Result, SimError};
use crate::real::{Precision, Values};
use crate::solver::{ArraySpec, Clock, Grid, Location, Mesh, Place, Solver, StateArray};

pub const FORMAT: &str = "sim-checkpoint";
/// Version 2 added the `checksum` attribute. Version 1 files are still read, with a warning
/// that their integrity cannot be verified.
pub const FORMAT_VERSION: u32 = 2;
/// The oldest format version read.
const OLDEST_VERSION: u32 = 1;
const CHECKSUM_PREFIX: &str = "sha256:";

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

/// The value of a root attribute (or of `/geometry`'s `mesh`).
#[derive(Clone, Debug, PartialEq)]
enum Attr {
    Str(String),
    U32(u32),
    U64(u64),
    F64(f64),
}

/// Element type of a stored dataset, with its name in the canonical serialisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dtype {
    F32,
    F64,
    U64,
    I64,
}

impl Dtype {
    fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
            Dtype::U64 => "u64",
            Dtype::I64 => "i64",
        }
    }
    fn size(self) -> u64 {
        match self {
            Dtype::F32 => 4,
            _ => 8,
        }
    }
    fn of(t: &TypeDescriptor) -> Option<Dtype> {
        match t {
            TypeDescriptor::Float(FloatSize::U4) => Some(Dtype::F32),
            TypeDescriptor::Float(FloatSize::U8) => Some(Dtype::F64),
            TypeDescriptor::Unsigned(IntSize::U8) => Some(Dtype::U64),
            TypeDescriptor::Integer(IntSize::U8) => Some(Dtype::I64),
            _ => None,
        }
    }
    fn of_precision(p: Precision) -> Dtype {
        match p {
            Precision::F32 => Dtype::F32,
            Precision::F64 => Dtype::F64,
        }
    }
}

/// A dataset's values, read or to be written.
#[derive(Clone, Debug, PartialEq)]
enum Array {
    F32(Vec<f32>),
    F64(Vec<f64>),
    U64(Vec<u64>),
    I64(Vec<i64>),
}

/// Borrowed values of a dataset.
#[derive(Clone, Copy)]
enum Data<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
    U64(&'a [u64]),
    I64(&'a [i64]),
}

impl Array {
    fn data(&self) -> Data<'_> {
        match self {
            Array::F32(v) => Data::F32(v),
            Array::F64(v) => Data::F64(v),
            Array::U64(v) => Data::U64(v),
            Array::I64(v) => Data::I64(v),
        }
    }
}

impl<'a> Data<'a> {
    fn of(values: &'a Values) -> Self {
        match values {
            Values::F32(v) => Data::F32(v),
            Values::F64(v) => Data::F64(v),
        }
    }
    fn dtype(self) -> Dtype {
        match self {
            Data::F32(_) => Dtype::F32,
            Data::F64(_) => Dtype::F64,
            Data::U64(_) => Dtype::U64,
            Data::I64(_) => Dtype::I64,
        }
    }
    fn len(self) -> usize {
        match self {
            Data::F32(v) => v.len(),
            Data::F64(v) => v.len(),
            Data::U64(v) => v.len(),
            Data::I64(v) => v.len(),
        }
    }
}

/// The canonical serialisation the checksum is the SHA-256 of. Every item is a record
///
/// ```text
/// name, dtype, ndim (u64), dims (u64 each), data
/// ```
///
/// where `name`, `dtype` and `data` are each their byte length as u64 followed by their bytes
/// (data of every dtype), and all integers are little-endian. Names are HDF5 paths: datasets `/fields/T`,
/// attributes `/@step` (root) and `/geometry@mesh`. dtype is `str` (data: the UTF-8 text,
/// shape `[]`), `u32`, `u64`, `f64` (scalar attributes, shape `[]`) or `f32`, `f64`, `u64`,
/// `i64` (datasets: the values in row-major order as little-endian bytes). The attributes
/// come first, sorted by name, then the datasets, sorted by name.
struct Canonical(Sha256);

impl Canonical {
    fn new() -> Self {
        Canonical(Sha256::new())
    }
    fn count(&mut self, n: u64) {
        self.0.update(n.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.count(b.len() as u64);
        self.0.update(b);
    }
    fn head(&mut self, name: &str, dtype: &str, shape: &[usize]) {
        self.bytes(name.as_bytes());
        self.bytes(dtype.as_bytes());
        self.count(shape.len() as u64);
        for &d in shape {
            self.count(d as u64);
        }
    }
    fn attr(&mut self, name: &str, value: &Attr) {
        let (dtype, bytes) = match value {
            Attr::Str(s) => ("str", s.as_bytes().to_vec()),
            Attr::U32(x) => ("u32", x.to_le_bytes().to_vec()),
            Attr::U64(x) => ("u64", x.to_le_bytes().to_vec()),
            Attr::F64(x) => ("f64", x.to_le_bytes().to_vec()),
        };
        self.head(name, dtype, &[]);
        self.bytes(&bytes);
    }
    fn array(&mut self, name: &str, shape: &[usize], data: Data<'_>) {
        self.head(name, data.dtype().name(), shape);
        self.count(data.len() as u64 * data.dtype().size());
        match data {
            Data::F32(v) => self.little_endian(v, f32::to_le_bytes),
            Data::F64(v) => self.little_endian(v, f64::to_le_bytes),
            Data::U64(v) => self.little_endian(v, u64::to_le_bytes),
            Data::I64(v) => self.little_endian(v, i64::to_le_bytes),
        }
    }
    /// Feed `values` as little-endian bytes through a small buffer (no copy of the array).
    fn little_endian<T: Copy, const N: usize>(&mut self, values: &[T], bytes: fn(T) -> [u8; N]) {
        let mut buf = [0u8; 1 << 14];
        for chunk in values.chunks(buf.len() / N) {
            for (out, &x) in buf.chunks_exact_mut(N).zip(chunk) {
                out.copy_from_slice(&bytes(x));
            }
            self.0.update(&buf[..chunk.len() * N]);
        }
    }
    fn finish(self) -> String {
        let digest = self.0.finalize();
        let mut s = String::from(CHECKSUM_PREFIX);
        for b in digest {
            s += &format!("{b:02x}");
        }
        s
    }
}

/// The root attributes, sorted by name; all are covered by the checksum.
fn root_attrs(meta: &Meta) -> [(&'static str, Attr); 9] {
    [
        ("backend", Attr::Str(meta.backend.clone())),
        ("case_yaml", Attr::Str(meta.case_yaml.clone())),
        ("format", Attr::Str(FORMAT.into())),
        ("format_version", Attr::U32(FORMAT_VERSION)),
        ("precision", Attr::Str(meta.precision.name().into())),
        ("sim_version", Attr::Str(env!("CARGO_PKG_VERSION").into())),
        ("solver", Attr::Str(meta.solver.clone())),
        ("step", Attr::U64(meta.step)),
        ("time", Attr::F64(meta.time)),
    ]
}

/// A dataset the reader expects: its name in its group, shape and element type.
#[derive(Clone, Debug, PartialEq)]
struct Spec {
    name: String,
    shape: Vec<usize>,
    dtype: Dtype,
}

/// The `mesh` attribute of `/geometry` for `mesh`, and its datasets sorted by name.
fn geometry_layout(mesh: &Mesh) -> (&'static str, Vec<Spec>) {
    let spec = |name: &str, shape: Vec<usize>, dtype| Spec { name: name.into(), shape, dtype };
    match mesh {
        Mesh::Nodes(_) | Mesh::Cells(_) => (
            if matches!(mesh, Mesh::Nodes(_)) { "nodes" } else { "cells" },
            vec![
                spec("n", vec![2], Dtype::U64),
                spec("origin", vec![2], Dtype::F64),
                spec("spacing", vec![2], Dtype::F64),
            ],
        ),
        Mesh::Points(p) => {
            ("points", vec![spec("conn", vec![p.len(), 1], Dtype::I64), spec("points", vec![p.len(), 3], Dtype::F64)])
        }
    }
}

/// The values of the `/geometry` datasets of `mesh`, in the order of [`geometry_layout`].
fn geometry_values(mesh: &Mesh) -> Vec<Array> {
    match mesh {
        Mesh::Nodes(grid) | Mesh::Cells(grid) => vec![
            Array::U64(grid.n.map(|n| n as u64).to_vec()),
            Array::F64(grid.origin.to_vec()),
            Array::F64(grid.spacing.to_vec()),
        ],
        Mesh::Points(p) => vec![
            Array::I64((0..p.len() as i64).collect()),
            Array::F64(p.iter().flat_map(|q| [q[0], q[1], 0.0]).collect()),
        ],
    }
}

/// Write a checkpoint of the solver state `arrays` on `mesh`, then its XDMF sidecar.
pub fn write(path: &Path, meta: &Meta, arrays: &[StateArray], mesh: &Mesh) -> Result<()> {
    // The sidecar first, so that no checkpoint is ever without it: a failure of either leaves
    // neither (a restart removes a sidecar whose checkpoint is gone).
    let xmf = path.with_extension("xmf");
    super::write_atomic(&xmf, xdmf(path, meta, arrays, mesh).as_bytes())?;
    let tmp = super::tmp_path(path);
    write_file(&tmp, meta, arrays, mesh)
        .map_err(|e| e.to_string())
        .and_then(|_| std::fs::rename(&tmp, path).map_err(|e| e.to_string()))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            if !path.exists() {
                let _ = std::fs::remove_file(&xmf);
            }
            SimError::Run(format!("cannot write checkpoint {}: {e}", path.display()))
        })
}

fn str_attr(loc: &hdf5::Location, name: &str, value: &str) -> hdf5::Result<()> {
    let v: VarLenUnicode = value.parse().map_err(|e| hdf5::Error::from(format!("{e:?}")))?;
    loc.new_attr::<VarLenUnicode>().create(name)?.write_scalar(&v)
}

fn write_attr(loc: &hdf5::Location, name: &str, value: &Attr) -> hdf5::Result<()> {
    match value {
        Attr::Str(s) => str_attr(loc, name, s),
        Attr::U32(x) => loc.new_attr::<u32>().create(name)?.write_scalar(x),
        Attr::U64(x) => loc.new_attr::<u64>().create(name)?.write_scalar(x),
        Attr::F64(x) => loc.new_attr::<f64>().create(name)?.write_scalar(x),
    }
}

fn write_dataset(group: &hdf5::Group, name: &str, shape: &[usize], data: Data<'_>) -> hdf5::Result<()> {
    let shape = shape.to_vec();
    match data {
        Data::F32(v) => group.new_dataset::<f32>().shape(shape).create(name)?.write_raw(v),
        Data::F64(v) => group.new_dataset::<f64>().shape(shape).create(name)?.write_raw(v),
        Data::U64(v) => group.new_dataset::<u64>().shape(shape).create(name)?.write_raw(v),
        Data::I64(v) => group.new_dataset::<i64>().shape(shape).create(name)?.write_raw(v),
    }
}

fn write_file(path: &Path, meta: &Meta, arrays: &[StateArray], mesh: &Mesh) -> hdf5::Result<()> {
    let mut sum = Canonical::new();
    let f = hdf5::File::create(path)?;
    for (name, value) in root_attrs(meta) {
        write_attr(&f, name, &value)?;
        sum.attr(&format!("/@{name}"), &value);
    }
    let g = f.create_group("geometry")?;
    let (kind, layout) = geometry_layout(mesh);
    let kind = Attr::Str(kind.into());
    write_attr(&g, "mesh", &kind)?;
    sum.attr("/geometry@mesh", &kind);
    let fields = f.create_group("fields")?;
    let mut sorted: Vec<&StateArray> = arrays.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    for a in sorted {
        write_dataset(&fields, &a.name, &a.shape, Data::of(&a.values))?;
        sum.array(&format!("/fields/{}", a.name), &a.shape, Data::of(&a.values));
    }
    for (spec, values) in layout.iter().zip(geometry_values(mesh)) {
        write_dataset(&g, &spec.name, &spec.shape, values.data())?;
        sum.array(&format!("/geometry/{}", spec.name), &spec.shape, values.data());
    }
    str_attr(&f, "checksum", &sum.finish())?;
    drop((fields, g));
    // Close now (not when the last handle happens to drop): the file is renamed next and
    // may be opened by another process at once.
    f.close()
}

/// What a path that is not a regular file is.
fn not_regular(path: &Path) -> Option<String> {
    let kind = match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some("no such file".into()),
        Err(e) => return Some(format!("cannot read it ({e})")),
        Ok(m) => m.file_type(),
    };
    if kind.is_file() {
        return None;
    }
    let what = if kind.is_dir() {
        "a directory"
    } else {
        special_file(&kind).unwrap_or("a special file")
    };
    Some(format!("is {what}, not a regular file"))
}

#[cfg(unix)]
fn special_file(kind: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

#[cfg(not(unix))]
fn special_file(_: &std::fs::FileType) -> Option<&'static str> {
    None
}

/// The scalar attribute `name` of `loc`, checked to have the type `expected` (by its
/// descriptor) before it is read.
fn scalar_attr(
    loc: &hdf5::Location,
    name: &str,
    expected: &TypeDescriptor,
) -> std::result::Result<hdf5::Attribute, String> {
    let a = loc.attr(name).map_err(|_| format!("missing attribute '{name}'"))?;
    let shape = a.get_shape().map_err(|e| format!("attribute '{name}' cannot be read ({e})"))?;
    if !shape.is_empty() {
        return Err(format!("attribute '{name}' has shape {shape:?}, expected a scalar"));
    }
    let t = a
        .dtype()
        .and_then(|t| t.to_descriptor())
        .map_err(|e| format!("attribute '{name}' has an unknown type ({e})"))?;
    if t != *expected {
        return Err(format!("attribute '{name}' is {t}, expected {expected}"));
    }
    Ok(a)
}

fn read_scalar<T: hdf5::H5Type>(
    loc: &hdf5::Location,
    name: &str,
    expected: TypeDescriptor,
) -> std::result::Result<T, String> {
    scalar_attr(loc, name, &expected)?.read_scalar().map_err(|e| format!("attribute '{name}' cannot be read ({e})"))
}

fn read_str(loc: &hdf5::Location, name: &str) -> std::result::Result<String, String> {
    let v: VarLenUnicode = read_scalar(loc, name, TypeDescriptor::VarLenUnicode)?;
    let s = std::str::from_utf8(v.as_bytes()).map_err(|_| format!("attribute '{name}' is not valid UTF-8"))?;
    Ok(s.to_string())
}

fn link_kind(t: LinkType) -> &'static str {
    match t {
        LinkType::Hard => "a hard link",
        LinkType::Soft => "a soft link",
        LinkType::External => "an external link",
    }
}

/// The links of `group` (names and types; no link is followed).
fn links(group: &hdf5::Group) -> hdf5::Result<Vec<(String, LinkType)>> {
    let mut v = Vec::new();
    group.iter_visit_default(|name, info| {
        v.push((name.to_string(), info.link_type));
        Ok(())
    })?;
    Ok(v)
}

/// A checkpoint opened for reading: its attributes read and checked, its arrays not yet
/// read.
pub struct Opened {
    path: PathBuf,
    file: hdf5::File,
    /// The root attributes.
    pub meta: Meta,
    version: u32,
    /// `/geometry`'s `mesh` attribute.
    mesh_kind: String,
    /// The checksum so far: the attributes.
    sum: Canonical,
    /// The stored checksum (version 2 on).
    checksum: Option<String>,
}

/// Open the checkpoint at `path` and read its attributes (no array data). Every problem is
/// an input error naming the file.
pub fn open(path: &Path) -> Result<Opened> {
    let bad = |msg: String| SimError::Input(format!("checkpoint {}: {msg}", path.display()));
    if let Some(why) = not_regular(path) {
        return Err(bad(why));
    }
    let file = hdf5::File::open(path).map_err(|e| bad(format!("not a readable HDF5 file ({e})")))?;
    let text = |name: &str| read_str(&file, name).map_err(bad);
    let format = text("format")?;
    if format != FORMAT {
        return Err(bad(format!("format is '{format}', expected '{FORMAT}'")));
    }
    let version: u32 = read_scalar(&file, "format_version", TypeDescriptor::Unsigned(IntSize::U4)).map_err(bad)?;
    if !(OLDEST_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(bad(format!(
            "format_version {version} is not supported (this sim reads versions {OLDEST_VERSION} to {FORMAT_VERSION})"
        )));
    }
    let precision_name = text("precision")?;
    let precision = Precision::parse(&precision_name)
        .ok_or_else(|| bad(format!("precision '{precision_name}' is neither f32 nor f64")))?;
    let step: u64 = read_scalar(&file, "step", TypeDescriptor::Unsigned(IntSize::U8)).map_err(bad)?;
    let time: f64 = read_scalar(&file, "time", TypeDescriptor::Float(FloatSize::U8)).map_err(bad)?;
    let max = crate::run::schedule::MAX_STEPS;
    if step > max {
        return Err(bad(format!("attribute 'step' is {step}, more than the {max} steps a run may take")));
    }
    if !(time.is_finite() && time >= 0.0) {
        return Err(bad(format!("attribute 'time' is {time}; a checkpoint's time is finite and >= 0")));
    }
    let meta = Meta {
        solver: text("solver")?,
        step,
        time,
        precision,
        backend: text("backend")?,
        case_yaml: text("case_yaml")?,
    };
    let sim_version = text("sim_version")?;
    // The checksum covers the attributes as `write_file` stores them: the same list.
    let mut sum = Canonical::new();
    for (name, value) in root_attrs(&meta) {
        let value = match name {
            "format_version" => Attr::U32(version),
            "precision" => Attr::Str(precision_name.clone()),
            "sim_version" => Attr::Str(sim_version.clone()),
            _ => value,
        };
        sum.attr(&format!("/@{name}"), &value);
    }
    let checksum = if version >= 2 {
        let c = text("checksum")?;
        let hex = c.strip_prefix(CHECKSUM_PREFIX).unwrap_or_default();
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Err(bad(format!("attribute 'checksum' is '{c}', not 'sha256:' and 64 hex digits")));
        }
        Some(c)
    } else if file.attr("checksum").is_ok() {
        // Version 1 had none: a file that has one was written later, its version edited.
        return Err(bad(format!("format_version {version} with a 'checksum' attribute, which version 2 added: the file was altered")));
    } else {
        None
    };
    let mut opened = Opened { path: path.to_path_buf(), file, meta, version, mesh_kind: String::new(), sum, checksum };
    let geometry = opened.group("geometry")?;
    let kind = read_str(&geometry, "mesh").map_err(|e| opened.bad(format!("/geometry: {e}")))?;
    opened.sum.attr("/geometry@mesh", &Attr::Str(kind.clone()));
    opened.mesh_kind = kind;
    Ok(opened)
}

/// Open the checkpoint at `path` and walk every HDF5 structure a restart reads (attributes,
/// links, dataset headers and storage), reading no array data: what [`super::probe`] runs in a
/// child process before a restart.
pub fn walk(path: &Path) -> Result<()> {
    let ck = open(path)?;
    for group in ["fields", "geometry"] {
        let g = ck.group(group)?;
        for spec in ck.declared(group, false)? {
            ck.checked(group, &g, &spec)?;
        }
    }
    Ok(())
}

/// Read every array of the checkpoint at `path`, taking the shapes the file declares, and
/// verify its checksum. For tools and tests; a restart reads through [`open`] and
/// [`Opened::read_state`], which check every shape against the solver first.
pub fn read(path: &Path) -> Result<(Meta, Vec<StateArray>)> {
    let ck = open(path)?;
    let fields = ck.declared("fields", true)?;
    let geometry = ck.declared("geometry", false)?;
    let (meta, fields, _) = ck.read_arrays(&fields, &geometry)?;
    Ok((meta, fields))
}

impl Opened {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's format version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Whether the file carries a checksum, verified by [`Opened::read_state`].
    pub fn has_checksum(&self) -> bool {
        self.checksum.is_some()
    }

    fn bad(&self, msg: String) -> SimError {
        SimError::Input(format!("checkpoint {}: {msg}", self.path.display()))
    }

    /// The group `/name`, which must be a hard link to a group in this file.
    fn group(&self, name: &str) -> Result<hdf5::Group> {
        let root = links(&self.file).map_err(|e| self.bad(format!("cannot list the root group ({e})")))?;
        match root.iter().find(|(n, _)| n == name) {
            None => return Err(self.bad(format!("missing group /{name}"))),
            Some((_, LinkType::Hard)) => {}
            Some((_, t)) => {
                return Err(self.bad(format!("/{name} is {}; a checkpoint holds its data itself", link_kind(*t))));
            }
        }
        self.file.group(name).map_err(|e| self.bad(format!("/{name} is not a group ({e})")))
    }

    /// Check the attributes against `solver` (built from the stored case, in the stored
    /// precision) and every dataset's link, storage, type and shape against what the solver
    /// expects, without reading any array data. This is what `sim check` does for a restart.
    pub fn check(&self, solver: &dyn Solver) -> Result<()> {
        self.check_attributes(solver)?;
        let (fields, geometry) = self.expected(solver)?;
        self.datasets("fields", &fields)?;
        self.datasets("geometry", &geometry)?;
        Ok(())
    }

    /// [`Opened::check`], then read the solver state, verify the checksum (of everything:
    /// attributes, state and geometry) and compare the geometry with the solver's mesh.
    /// The datasets of /fields among `names` that the file holds (each checked as by
    /// [`Opened::read_state`], whose checksum then covers them): the input data some solvers
    /// are built from on a restart (lskum: its point cloud).
    pub fn read_named(&self, names: &[&str]) -> Result<Vec<StateArray>> {
        let g = self.group("fields")?;
        let mut out = Vec::new();
        for spec in self.declared("fields", true)?.iter().filter(|s| names.contains(&s.name.as_str())) {
            let ds = self.checked("fields", &g, spec)?;
            let err = |e: hdf5::Error| self.bad(format!("cannot read /fields/{} ({e})", spec.name));
            let values = match spec.dtype {
                Dtype::F32 => Values::F32(ds.read_raw().map_err(err)?),
                _ => Values::F64(ds.read_raw().map_err(err)?),
            };
            out.push(StateArray { name: spec.name.clone(), shape: spec.shape.clone(), values, place: None });
        }
        Ok(out)
    }

    pub fn read_state(self, solver: &dyn Solver) -> Result<Vec<StateArray>> {
        self.check_attributes(solver)?;
        let (fields, geometry) = self.expected(solver)?;
        let path = self.path.clone();
        let (_, state, read_geometry) = self.read_arrays(&fields, &geometry)?;
        let mesh = solver.mesh();
        for ((spec, stored), expected) in geometry.iter().zip(read_geometry).zip(geometry_values(&mesh)) {
            if stored.values != expected {
                return Err(SimError::Input(format!(
                    "checkpoint {}: /geometry/{} differs from the mesh of the case; the checkpoint was written \
                     on another mesh",
                    path.display(),
                    spec.name
                )));
            }
        }
        Ok(state)
    }

    /// Solver, precision, time and step against the solver built from the stored case.
    fn check_attributes(&self, solver: &dyn Solver) -> Result<()> {
        let m = &self.meta;
        if m.solver != solver.kind() || m.precision != solver.precision() {
            return Err(self.bad(format!(
                "attributes solver = '{}', precision = '{}' do not match the run ({} in {})",
                m.solver,
                m.precision.name(),
                solver.kind(),
                solver.precision().name()
            )));
        }
        match solver.clock() {
            Clock::Iterations if m.time != 0.0 => Err(self.bad(format!(
                "attribute 'time' is {}; solver {} counts iterations and stores time 0",
                m.time, m.solver
            ))),
            Clock::Iterations => Ok(()),
            Clock::Physical => {
                let dt = solver.dt();
                if (m.step == 0) != (m.time == 0.0) {
                    return Err(self.bad(format!(
                        "attributes step = {} and time = {} disagree: step 0 is time 0 and only step 0 is",
                        m.step, m.time
                    )));
                }
                // Fixed steps are at most dt long (a step stretched onto an output instant by
                // at most 1e-9 of it), and may be shorter; adaptive ones may have been longer
                // than the first.
                let reach = m.step as f64 * dt * (1.0 + 1e-6);
                if solver.dt_is_fixed() && m.time > reach {
                    return Err(self.bad(format!(
                        "attributes step = {} and time = {} disagree: {} steps of dt = {dt:e} reach at most \
                         t = {reach:e}",
                        m.step, m.time, m.step
                    )));
                }
                Ok(())
            }
        }
    }

    /// The datasets `solver` expects under /fields (sorted by name) and under /geometry.
    fn expected(&self, solver: &dyn Solver) -> Result<(Vec<Spec>, Vec<Spec>)> {
        let mut fields: Vec<Spec> = solver
            .state_layout()
            .into_iter()
            .map(|ArraySpec { name, shape, precision }| Spec { name, shape, dtype: Dtype::of_precision(precision) })
            .collect();
        fields.sort_by(|a, b| a.name.cmp(&b.name));
        let (kind, geometry) = geometry_layout(&solver.mesh());
        if self.mesh_kind != kind {
            return Err(self.bad(format!(
                "/geometry has mesh = '{}', solver {} needs '{kind}'",
                self.mesh_kind, self.meta.solver
            )));
        }
        Ok((fields, geometry))
    }

    /// The datasets of `/group` as the file declares them (sorted by name); `floats`: only
    /// f32 and f64.
    fn declared(&self, group: &str, floats: bool) -> Result<Vec<Spec>> {
        let g = self.group(group)?;
        let mut specs = Vec::new();
        for (name, t) in links(&g).map_err(|e| self.bad(format!("cannot list /{group} ({e})")))? {
            if t != LinkType::Hard {
                return Err(self.bad(format!("/{group}/{name} is {}; a checkpoint holds its data itself", link_kind(t))));
            }
            let ds = g.dataset(&name).map_err(|e| self.bad(format!("/{group}/{name} is not a dataset ({e})")))?;
            let t = ds.dtype().and_then(|t| t.to_descriptor()).map_err(|e| self.bad(format!("/{group}/{name}: {e}")))?;
            let dtype = Dtype::of(&t)
                .filter(|d| !floats || matches!(d, Dtype::F32 | Dtype::F64))
                .ok_or_else(|| self.bad(format!("/{group}/{name} has type {t}, expected a float")))?;
            specs.push(Spec { name, shape: ds.shape(), dtype });
        }
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(specs)
    }

    /// Open the datasets of `/group`, which must be exactly `expected`, each checked (link,
    /// storage, type, shape, stored size) before any data is read.
    fn datasets(&self, group: &str, expected: &[Spec]) -> Result<Vec<hdf5::Dataset>> {
        let g = self.group(group)?;
        let found = links(&g).map_err(|e| self.bad(format!("cannot list /{group} ({e})")))?;
        for (name, t) in &found {
            if *t != LinkType::Hard {
                return Err(self.bad(format!("/{group}/{name} is {}; a checkpoint holds its data itself", link_kind(*t))));
            }
        }
        for s in expected {
            if !found.iter().any(|(n, _)| *n == s.name) {
                return Err(self.bad(format!("missing dataset /{group}/{}", s.name)));
            }
        }
        if let Some((extra, _)) = found.iter().find(|(n, _)| !expected.iter().any(|s| s.name == *n)) {
            let names: Vec<&str> = expected.iter().map(|s| s.name.as_str()).collect();
            return Err(self.bad(format!(
                "unexpected dataset /{group}/{extra} (solver {} stores {})",
                self.meta.solver,
                names.join(", ")
            )));
        }
        expected.iter().map(|s| self.checked(group, &g, s)).collect()
    }

    /// Dataset `s` of `/group`, checked (storage, type, shape, stored size) before any of
    /// its data is read.
    fn checked(&self, group: &str, g: &hdf5::Group, s: &Spec) -> Result<hdf5::Dataset> {
        let path = format!("/{group}/{}", s.name);
        let ds = g.dataset(&s.name).map_err(|e| self.bad(format!("{path} is not a dataset ({e})")))?;
        let dcpl = ds.dcpl().map_err(|e| self.bad(format!("{path}: {e}")))?;
        match dcpl.get_layout().map_err(|e| self.bad(format!("{path}: {e}")))? {
            Layout::Contiguous | Layout::Compact => {}
            Layout::Chunked => {
                return Err(self.bad(format!("{path} is chunked; checkpoint datasets are stored contiguous")));
            }
            #[allow(unreachable_patterns)]
            _ => return Err(self.bad(format!("{path} is a virtual dataset; a checkpoint holds its data itself"))),
        }
        let external = dcpl.get_external().map_err(|e| self.bad(format!("{path}: {e}")))?;
        if let Some(x) = external.first() {
            return Err(self.bad(format!(
                "{path} keeps its data in the external file '{}'; a checkpoint holds its data itself",
                x.name
            )));
        }
        let t = ds.dtype().and_then(|t| t.to_descriptor()).map_err(|e| self.bad(format!("{path}: {e}")))?;
        if Dtype::of(&t) != Some(s.dtype) {
            let found = Dtype::of(&t).map_or_else(|| t.to_string(), |d| d.name().to_string());
            let what = if group == "fields" { "the run is" } else { "expected" };
            return Err(self.bad(format!("dataset {path} is {found}, {what} {}", s.dtype.name())));
        }
        let shape = ds.get_shape().map_err(|e| self.bad(format!("{path}: {e}")))?;
        if shape != s.shape {
            return Err(self.bad(format!("dataset {path} has shape {shape:?}, the case needs {:?}", s.shape)));
        }
        // The shape is the expected one (or, for `read`, the file's own): its byte count
        // cannot overflow where the caller could hold it.
        let bytes = s.shape.iter().try_fold(s.dtype.size(), |a, &d| a.checked_mul(d as u64));
        let stored = ds.storage_size();
        if bytes != Some(stored) {
            return Err(self.bad(format!(
                "dataset {path} stores {stored} bytes, its shape {:?} of {} needs {}",
                s.shape,
                s.dtype.name(),
                bytes.map_or_else(|| "more than 2^64".into(), |b| b.to_string())
            )));
        }
        Ok(ds)
    }

    /// Check the datasets of /fields and /geometry against `fields` and `geometry` (sorted
    /// by name), then read them in that order, feeding the checksum, and verify it.
    fn read_arrays(mut self, fields: &[Spec], geometry: &[Spec]) -> Result<(Meta, Vec<StateArray>, Vec<NamedArray>)> {
        let f = self.datasets("fields", fields)?;
        let g = self.datasets("geometry", geometry)?;
        let mut sum = std::mem::replace(&mut self.sum, Canonical::new());
        let read = |group: &str, specs: &[Spec], sets: Vec<hdf5::Dataset>, sum: &mut Canonical| {
            let mut out = Vec::new();
            for (s, ds) in specs.iter().zip(sets) {
                let path = format!("/{group}/{}", s.name);
                let err = |e: hdf5::Error| self.bad(format!("cannot read {path} ({e})"));
                let values = match s.dtype {
                    Dtype::F32 => Array::F32(ds.read_raw().map_err(err)?),
                    Dtype::F64 => Array::F64(ds.read_raw().map_err(err)?),
                    Dtype::U64 => Array::U64(ds.read_raw().map_err(err)?),
                    Dtype::I64 => Array::I64(ds.read_raw().map_err(err)?),
                };
                sum.array(&path, &s.shape, values.data());
                out.push(NamedArray { name: s.name.clone(), shape: s.shape.clone(), values });
            }
            Ok(out)
        };
        let state = read("fields", fields, f, &mut sum)?;
        let geometry = read("geometry", geometry, g, &mut sum)?;
        if let Some(stored) = &self.checksum {
            let found = sum.finish();
            if found != *stored {
                return Err(self.bad(format!(
                    "checksum mismatch: the contents hash to {found}, the file records {stored}; the file was damaged \
                     or changed after it was written"
                )));
            }
        }
        let mut arrays = Vec::new();
        for a in state {
            let values = match a.values {
                Array::F32(v) => Values::F32(v),
                Array::F64(v) => Values::F64(v),
                _ => return Err(self.bad(format!("/fields/{} is not a float array", a.name))),
            };
            arrays.push(StateArray { name: a.name, shape: a.shape, values, place: None });
        }
        Ok((self.meta, arrays, geometry))
    }
}

/// A dataset read from a checkpoint.
struct NamedArray {
    name: String,
    shape: Vec<usize>,
    values: Array,
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
