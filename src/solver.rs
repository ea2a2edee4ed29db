//! The interface between the driver and a solver.

use crate::error::Result;
use crate::real::{Precision, Values};

/// A uniform grid of nodes, x contiguous (`idx = j*nx + i`); 1D grids have `n[1] == 1`.
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

/// A field for visualisation: `components` values per node, interleaved.
pub struct OutField {
    pub name: &'static str,
    pub components: usize,
    pub values: Values,
}

/// An array of the solver state, stored in checkpoints under `/fields/<name>`.
#[derive(Clone, Debug, PartialEq)]
pub struct StateArray {
    pub name: String,
    /// Slowest index first (HDF5 order): `[ny, nx]` for a 2D grid.
    pub shape: Vec<usize>,
    pub values: Values,
}

/// Where a non-finite value was found.
#[derive(Debug, PartialEq)]
pub struct NonFinite {
    pub field: &'static str,
    pub index: Vec<usize>,
    pub value: f64,
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
    fn time(&self) -> f64;
    /// The nominal time step; the driver may pass a shorter one to end exactly at end_time.
    fn dt(&self) -> f64;
    /// Advance one step of length `dt` (at most [`Solver::dt`]). On a GPU this leaves the host
    /// copy stale until [`Solver::sync`].
    fn advance(&mut self, dt: f64) -> Result<()>;
    /// Bring the host copy of the state up to date (GPU back ends); called before the host
    /// reads fields for guard checks, output, checkpoints and the end-of-run results.
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    /// The back end the solver runs on, e.g. `cpu` or `cuda (NVIDIA H100, l2 512x1)`.
    fn backend(&self) -> String {
        "cpu".into()
    }
    fn grid(&self) -> Grid;
    /// Fields for visualisation. Needs a synced host copy.
    fn output_fields(&self) -> Vec<OutField>;
    /// Everything needed to continue the run bit-exactly. Needs a synced host copy.
    fn state(&self) -> Vec<StateArray>;
    /// Inverse of [`Solver::state`]; checks names and shapes, naming what is wrong. Leaves the
    /// host copy (and the device) current.
    fn restore(&mut self, step: u64, time: f64, arrays: Vec<StateArray>) -> Result<()>;
    /// The first NaN or Inf of the fields, for the guard check. Needs a synced host copy.
    fn find_non_finite(&self) -> Option<NonFinite>;
    /// Named scalars appended to history.csv at every guard check. Needs a synced host copy.
    fn diagnostics(&self) -> Vec<(&'static str, f64)>;
    /// Errors against analytic or reference answers, for summary.json. Needs a synced host
    /// copy.
    fn report(&self) -> serde_json::Map<String, serde_json::Value>;
    /// Bytes that must move per step in an ideal implementation, for BW_e.
    fn bytes_per_step(&self) -> f64;
    /// Lines for `sim check`: stability number, dt, grid and such.
    fn describe(&self) -> Vec<String>;
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
    /// Solver-specific result files written at the end of a run (e.g. profiles as CSV). Needs
    /// a synced host copy.
    fn write_results(&self, _dir: &std::path::Path) -> Result<()> {
        Ok(())
    }
    /// Point-cloud solvers: the point coordinates. Output is then a `.vtu` point cloud
    /// (fields per point, in this order) instead of a `.vti` of [`Solver::grid`].
    fn points(&self) -> Option<Vec<[f64; 2]>> {
        None
    }
}

/// Find the first non-finite value of `values`; `shape` is `[ny, nx]` or `[n]`.
pub fn first_non_finite<T: crate::real::Real>(
    field: &'static str,
    values: &[T],
    nx: usize,
) -> Option<NonFinite> {
    use rayon::prelude::*;
    let k = values.par_iter().position_first(|v| !v.is_finite())?;
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
