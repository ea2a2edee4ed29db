//! The interface between the driver and a solver: the mesh a solver lives on, where each of
//! its arrays lives on that mesh, how it advances in time, and the [`Solver`] trait.

use crate::error::Result;
use crate::numerics::temporal::Tiling;
use crate::run::schedule::Landing;
use crate::real::{Precision, Values};

/// A uniform grid, x contiguous (`idx = j*nx + i`); 1D grids have `n[1] == 1`. For a node
/// mesh `n` counts nodes and `origin` is the first node; for a cell mesh `n` counts cells
/// and `origin` is the lower-left corner of the first cell.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grid {
    pub n: [usize; 2],
    pub origin: [f64; 2],
    pub spacing: [f64; 2],
}

impl Grid {
    pub fn nodes(&self) -> usize {
        self.n[0] * self.n[1]
    }
}

/// One rank's share of the output of a decomposed run: a `.vti` piece of the whole grid, all
/// of them listed in a `.pvti`.
pub struct Piece {
    /// The points (or cells) of this rank's output fields, as a grid of their own.
    pub mesh: Mesh,
    /// Index of the piece's first point among the whole grid's points.
    pub offset: [usize; 2],
    /// Every rank's piece as the point extent `[x0, x1, y0, y1]` (inclusive) in the whole
    /// grid, in rank order; neighbouring pieces share their border points.
    pub extents: Vec<[usize; 4]>,
}

/// The discretisation a solver exposes to output and checkpoints.
#[derive(Clone, Debug, PartialEq)]
pub enum Mesh {
    /// Values at the nodes of a uniform grid (heat, cavity).
    Nodes(Grid),
    /// Values in the cells of a uniform grid (finite-volume and staggered schemes).
    Cells(Grid),
    /// Values at the points of a cloud (x, y).
    Points(Vec<[f64; 2]>),
}

impl Mesh {
    /// Nodes, cells or points: the unit of Mcells/s.
    pub fn len(&self) -> usize {
        match self {
            Mesh::Nodes(g) | Mesh::Cells(g) => g.nodes(),
            Mesh::Points(p) => p.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// `[nx, ny]` of the values at `loc` without halo (`[n, 1]` for points).
    pub fn dims(&self, loc: Location) -> [usize; 2] {
        let one_d = |g: &Grid| g.n[1] == 1;
        match (self, loc) {
            (Mesh::Points(p), _) => [p.len(), 1],
            (Mesh::Nodes(g), _) | (Mesh::Cells(g), Location::Cell) => g.n,
            (Mesh::Cells(g), Location::Node) if one_d(g) => [g.n[0] + 1, 1],
            (Mesh::Cells(g), Location::Node) => [g.n[0] + 1, g.n[1] + 1],
            (Mesh::Cells(g), Location::FaceX) => [g.n[0] + 1, g.n[1]],
            (Mesh::Cells(g), Location::FaceY) => [g.n[0], g.n[1] + 1],
        }
    }
}

/// Where the values of an array live on the solver's [`Mesh`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// Grid nodes, or the points of a cloud.
    Node,
    /// Cell centres.
    Cell,
    /// Centres of the faces normal to x (Arakawa C `u`): `(nx+1) x ny`.
    FaceX,
    /// Centres of the faces normal to y (Arakawa C `v`): `nx x (ny+1)`.
    FaceY,
}

/// Location plus the halo (ghost layers) stored around the values on each side; in 1D only
/// along x.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub loc: Location,
    pub halo: usize,
}

impl Place {
    pub const NODE: Place = Place { loc: Location::Node, halo: 0 };
    pub const CELL: Place = Place { loc: Location::Cell, halo: 0 };

    /// `[nx, ny]` of the stored array, halo included.
    pub fn stored_dims(&self, mesh: &Mesh) -> [usize; 2] {
        let [nx, ny] = mesh.dims(self.loc);
        let h = 2 * self.halo;
        if ny == 1 && !matches!(mesh, Mesh::Points(_)) { [nx + h, 1] } else { [nx + h, ny + h] }
    }
}

/// A field for visualisation: `components` values per entry, interleaved, stored at `place`
/// (output strips the halo and averages face values to cells).
pub struct OutField {
    pub name: &'static str,
    pub components: usize,
    pub place: Place,
    pub values: Values,
}

impl OutField {
    /// A scalar or vector field without halo at `loc`.
    pub fn new(name: &'static str, components: usize, loc: Location, values: Values) -> Self {
        OutField { name, components, place: Place { loc, halo: 0 }, values }
    }
}

/// An array of the solver state, stored in checkpoints under `/fields/<name>`.
#[derive(Clone, Debug, PartialEq)]
pub struct StateArray {
    pub name: String,
    /// Slowest index first (HDF5 order): `[ny, nx]` for a 2D grid.
    pub shape: Vec<usize>,
    pub values: Values,
    /// Where it lives on the mesh (None: not a mesh field, e.g. a scalar); lets the XDMF
    /// sidecar describe it. Not stored: arrays read back from a file have None.
    pub place: Option<Place>,
}

impl StateArray {
    /// A mesh field stored at `place` (halo included): shape `[ny, nx]`, or `[n]` on 1D
    /// grids and clouds.
    pub fn field(name: &str, place: Place, mesh: &Mesh, values: Values) -> Self {
        StateArray { name: name.into(), shape: shape_of(place, mesh), values, place: Some(place) }
    }
    /// An array that is not a field on the mesh (scalars, snapshots of other sizes).
    pub fn other(name: &str, values: Values) -> Self {
        StateArray { name: name.into(), shape: vec![values.len()], values, place: None }
    }
}

/// Name, shape and precision of a [`StateArray`], known without its values: what a
/// checkpoint must hold for a solver, checked before any of its data is read.
#[derive(Clone, Debug, PartialEq)]
pub struct ArraySpec {
    pub name: String,
    /// Slowest index first, as [`StateArray::shape`].
    pub shape: Vec<usize>,
    pub precision: Precision,
}

impl ArraySpec {
    /// A mesh field stored at `place` (see [`StateArray::field`]).
    pub fn field(name: &str, place: Place, mesh: &Mesh, precision: Precision) -> Self {
        ArraySpec { name: name.into(), shape: shape_of(place, mesh), precision }
    }
    /// An array of `len` values that is not a field on the mesh (see [`StateArray::other`]).
    pub fn other(name: &str, len: usize, precision: Precision) -> Self {
        ArraySpec { name: name.into(), shape: vec![len], precision }
    }
}

impl StateArray {
    /// The name, shape and precision of this array.
    pub fn spec(&self) -> ArraySpec {
        ArraySpec { name: self.name.clone(), shape: self.shape.clone(), precision: self.values.precision() }
    }
}

/// Checkpoint shape (slowest index first) of an array stored at `place` on `mesh`.
pub fn shape_of(place: Place, mesh: &Mesh) -> Vec<usize> {
    match place.stored_dims(mesh) {
        [n, 1] => vec![n],
        [nx, ny] => vec![ny, nx],
    }
}

/// How a solver's steps relate to time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// Steps advance a physical time by a length the solver proposes (fixed or adaptive);
    /// the driver may shorten a step to land on an output instant or the end time.
    Physical,
    /// Pseudo-time iterations towards a steady state (local time stepping): there is no
    /// global time, runs are counted in iterations.
    Iterations,
}

/// Where a non-finite value was found.
#[derive(Debug, PartialEq)]
pub struct NonFinite {
    pub field: &'static str,
    pub index: Vec<usize>,
    pub value: f64,
}

impl NonFinite {
    /// The index as messages give it, `i, j`.
    pub fn at(&self) -> String {
        self.index.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
    }
}

/// The first of [`Solver::diagnostics`] that has a value and is not finite. Finite fields can
/// still give one: a total of values near the largest number, a coefficient normalised by a
/// vanishing free stream.
pub fn non_finite_diagnostic(diagnostics: &[(&'static str, Option<f64>)]) -> Option<(&'static str, f64)> {
    diagnostics.iter().find_map(|&(name, v)| v.filter(|v| !v.is_finite()).map(|v| (name, v)))
}

/// A time-dependent problem advanced by the driver in [`crate::run`].
///
/// # Host copy
///
/// On a GPU back end the fields live on the device and the solver keeps a host copy of
/// them. [`Solver::advance`] makes that copy stale; [`Solver::sync`] (and
/// [`Solver::restore`]) make it current again. The methods that read field values need a
/// current host copy, so call `sync` after the last `advance` and before any of them:
/// [`Solver::output_fields`], [`Solver::state`], [`Solver::find_non_finite`],
/// [`Solver::diagnostics`], [`Solver::report`] and [`Solver::write_results`]. The GPU
/// solvers panic, naming the method, when one is called on a stale copy. The other methods
/// read no field values and need no `sync`; among them [`Solver::status`] and
/// [`Solver::converged`], which the driver calls between syncs. On the CPU the copy is always
/// current.
pub trait Solver: Send {
    /// Solver name as in the case file (`heat2d`).
    fn kind(&self) -> &'static str;
    fn precision(&self) -> Precision;
    fn step(&self) -> u64;
    /// Simulated time ([`Clock::Physical`]; 0 for [`Clock::Iterations`]).
    fn time(&self) -> f64;
    fn clock(&self) -> Clock {
        Clock::Physical
    }
    /// The nominal length of the next step (the latest proposal).
    fn dt(&self) -> f64;
    /// Whether every full step has the length [`Solver::dt`]; false for a CFL-adaptive
    /// solver, whose steps follow the state.
    fn dt_is_fixed(&self) -> bool {
        true
    }
    /// Propose the length of the next step; a CFL-adaptive solver computes it here (a
    /// reduction over the state). The driver may shorten it to land on an output instant or
    /// the end time.
    fn propose_dt(&mut self) -> Result<f64> {
        Ok(self.dt())
    }
    /// Advance one step of length `dt` (at most the proposal, up to rounding when it lands
    /// on an instant; ignored under [`Clock::Iterations`]). On a GPU this leaves the host
    /// copy stale until [`Solver::sync`].
    fn advance(&mut self, dt: f64) -> Result<()>;
    /// The most steps one call of [`Solver::advance_steps`] takes at once (a temporally
    /// blocked kernel's depth); 1 for a solver that steps one at a time. A solver whose
    /// [`Solver::converged`] or [`Solver::dt`] can change between steps returns 1.
    fn steps_per_call(&self) -> u64 {
        1
    }
    /// Advance `n` full steps of length `dt`, `1 <= n <= steps_per_call()`: bit for bit the
    /// state of `n` calls of [`Solver::advance`] with `dt`.
    fn advance_steps(&mut self, dt: f64, n: u64) -> Result<()> {
        for _ in 0..n {
            self.advance(dt)?;
        }
        Ok(())
    }
    /// The most CFL-adaptive steps one call of [`Solver::advance_landed`] takes; 0 (the
    /// default) for a solver whose steps the driver proposes and lands one at a time. A GPU
    /// solver that reduces its stable step on the device chooses and lands the steps there,
    /// so that the host does not wait for each step's length.
    fn landed_steps_per_call(&self) -> u64 {
        0
    }
    /// Up to `most` steps (`1 <= most <= landed_steps_per_call()`), each of the length
    /// [`Solver::propose_dt`] would give, landed by `landing` as the driver lands them, and
    /// none after the first that reaches one of `landing`'s instants (an output instant or
    /// the end time): bit for bit the state, step count and time of the driver's step-by-step
    /// loop over the same steps.
    fn advance_landed(&mut self, _landing: &Landing, _most: u64) -> Result<()> {
        unreachable!("advance_landed of a solver without landed steps")
    }
    /// Under a domain decomposition (MPI), this rank's share of the output: the fields of
    /// [`Solver::output_fields`] lie on its mesh; None for a solver that holds the whole mesh.
    fn piece(&self) -> Option<Piece> {
        None
    }
    /// The temporal blocking the CPU kernels run with, if any.
    fn tiling(&self) -> Option<&Tiling> {
        None
    }
    /// Bring the host copy of the state up to date (GPU back ends); called before the host
    /// reads fields for guard checks, output, checkpoints and the end-of-run results.
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    /// The back end the solver runs on, e.g. `cpu` or `cuda (NVIDIA H100, l2 512x1)`.
    fn backend(&self) -> String {
        "cpu".into()
    }
    /// The block shape a device's kernels launch with, where the solver chose it (narrowed to
    /// what its kernels' registers allow); None: the case's `gpu.block`, or no device.
    fn launch_block(&self) -> Option<[u32; 2]> {
        None
    }
    /// Block until work queued on a device has finished (for timing; CPU: nothing to do).
    fn wait(&mut self) -> Result<()> {
        Ok(())
    }
    fn mesh(&self) -> Mesh;
    /// Triangles over the points of a [`Mesh::Points`] mesh (indices into its points), written
    /// as the cells of the `.vtu` output so that ParaView can contour the fields; `None`
    /// writes one vertex per point. The mesh does not change during a run, so a solver may
    /// compute them once.
    fn surface(&self) -> Option<&[[u32; 3]]> {
        None
    }
    /// Fields for visualisation. Needs a synced host copy.
    fn output_fields(&self) -> Vec<OutField>;
    /// What the output fields mean and their units, one `name: text` per field; stored in
    /// the VTK files as the `units` field data.
    fn units(&self) -> &'static str {
        ""
    }
    /// Everything needed to continue the run bit-exactly. Needs a synced host copy.
    fn state(&self) -> Vec<StateArray>;
    /// The names, shapes and precisions of [`Solver::state`], in the same order: a restart
    /// checks a checkpoint against them before reading any data. Called right after the
    /// solver is built. The default takes them from a copy of the state; solvers override it
    /// to copy no values.
    fn state_layout(&self) -> Vec<ArraySpec> {
        self.state().iter().map(StateArray::spec).collect()
    }
    /// Inverse of [`Solver::state`]; checks names and shapes, naming what is wrong. Leaves the
    /// host copy (and the device) current.
    fn restore(&mut self, step: u64, time: f64, arrays: Vec<StateArray>) -> Result<()>;
    /// The first NaN or Inf of the fields, for the guard check. Needs a synced host copy.
    fn find_non_finite(&self) -> Option<NonFinite>;
    /// Why a finite state is no state the model holds (the shallow-water schemes' water depth
    /// at or below zero), for the guard check after [`Solver::find_non_finite`]. Needs a
    /// synced host copy; collective under MPI.
    fn invalid_state(&self) -> Option<String> {
        None
    }
    /// A likely cause of a failing run that the case chose (added to the guard's message).
    fn failure_hint(&self) -> Option<&'static str> {
        None
    }
    /// Named scalars appended to history.csv at every guard check. Needs a synced host copy.
    /// `None` is a value that does not exist yet (a residual before its first measurement);
    /// every other value must be finite, or the guard stops the run.
    fn diagnostics(&self) -> Vec<(&'static str, Option<f64>)>;
    /// Errors against analytic or reference answers, for summary.json. Needs a synced host
    /// copy.
    fn report(&self) -> serde_json::Map<String, serde_json::Value>;
    /// Bytes that must move per step in an ideal implementation, for BW_e.
    fn bytes_per_step(&self) -> f64;
    /// Floating-point operations per step, counted from the code, for a solver whose
    /// arithmetic outweighs its traffic: `sim bench` sets its flop rate against PEAK.
    fn flops_per_step(&self) -> Option<f64> {
        None
    }
    /// Steady-state solvers: true once converged; checked after every guard check. Called
    /// between syncs: must not read the fields.
    fn converged(&self) -> bool {
        false
    }
    /// Extra text for the progress bar (e.g. a residual). Called between syncs: must not read
    /// the fields.
    fn status(&self) -> Option<String> {
        None
    }
    /// Solver-specific result files written at the end of a run (e.g. profiles as CSV);
    /// returns their names (each one listed in the solver's registry entry). Needs a synced
    /// host copy.
    fn write_results(&self, _dir: &std::path::Path) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

/// Find the first non-finite value of `values`; `shape` is `[ny, nx]` or `[n]`.
pub fn first_non_finite<T: crate::real::Real>(
    field: &'static str,
    values: &[T],
    nx: usize,
) -> Option<NonFinite> {
    use rayon::prelude::*;
    // Chunks tested without a branch per value (vector code), then the first bad chunk
    // searched: `position_first` per value checks the other threads' progress at every value.
    const CHUNK: usize = 1 << 14;
    let all_finite = |c: &[T]| c.iter().fold(true, |ok, v| ok & v.is_finite());
    let chunk = values.par_chunks(CHUNK).position_first(|c| !all_finite(c))?;
    let start = chunk * CHUNK;
    let k = start + values[start..].iter().position(|v| !v.is_finite())?;
    let index = if values.len() == nx { vec![k] } else { vec![k % nx, k / nx] };
    Some(NonFinite { field, index, value: values[k].f64() })
}

/// Take the array called `name` out of `arrays`, checking its shape.
pub fn take_array<T: crate::real::Real>(
    arrays: &mut Vec<StateArray>,
    name: &str,
    shape: &[usize],
) -> Result<Vec<T>> {
    use crate::error::input;
    let Some(pos) = arrays.iter().position(|a| a.name == name) else {
        return input(format!("missing dataset /fields/{name}"));
    };
    let a = arrays.swap_remove(pos);
    if a.shape != shape {
        return input(format!(
            "dataset /fields/{name} has shape {:?}, the case needs {:?}",
            a.shape, shape
        ));
    }
    let found = a.values.precision();
    match T::unwrap(a.values) {
        Some(v) => Ok(v),
        None => input(format!(
            "dataset /fields/{name} is {}, the run is {}",
            found.name(),
            T::PRECISION.name()
        )),
    }
}

#[cfg(test)]
mod tests {
    use crate::real::Precision;
    use crate::solvers::{Device, SOLVERS};

    /// `state_layout` describes `state` exactly, for every solver of the registry.
    #[test]
    fn state_layout_matches_state() {
        for e in SOLVERS {
            let size = if e.name == "lskum" { 1000 } else { 9 };
            for precision in [Precision::F32, Precision::F64] {
                let Ok(s) = (e.bench)(size, &crate::bench::BenchOptions { precision, ..Default::default() }, &Device::Cpu(Default::default())) else {
                    assert_eq!((e.name, precision), ("lskum", Precision::F32), "bench problem of {} failed", e.name);
                    continue;
                };
                let from_state: Vec<_> = s.state().iter().map(|a| a.spec()).collect();
                assert_eq!(s.state_layout(), from_state, "{} in {}", e.name, precision.name());
            }
        }
    }

    /// The first NaN or infinity wins, wherever the chunks of the scan fall, and is reported
    /// with its 2D index.
    #[test]
    fn first_non_finite_finds_the_first_bad_value() {
        let n = 3 * (1 << 14) + 77;
        assert!(super::first_non_finite("f", &vec![1.0f32; n], 100).is_none());
        for (first, second) in [(0, 5), (16383, 16384), (16384, 40000), (n - 1, n - 1), (20000, 16385)] {
            let mut v = vec![0.5f64; n];
            v[second] = f64::INFINITY;
            v[first] = f64::NAN;
            let nf = super::first_non_finite("f", &v, 100).unwrap();
            let k = first.min(second);
            assert_eq!(nf.index, vec![k % 100, k / 100], "{first} {second}");
            assert_eq!(nf.value.is_nan(), k == first, "{first} {second}");
        }
    }
}
