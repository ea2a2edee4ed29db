//! The solvers, and the one place that turns a case into a solver.

pub mod heat;
pub mod lskum;

use crate::case::{Case, SolverCase};
use crate::error::Result;
use crate::real::Precision;
use crate::solver::Solver;

/// Build the solver of `case` in `precision`, at its initial condition.
pub fn build(case: &Case, precision: Precision) -> Result<Box<dyn Solver>> {
    Ok(match (&case.solver, precision) {
        (SolverCase::Heat1d(p), Precision::F32) => Box::new(heat::Heat::<f32>::heat1d(p)),
        (SolverCase::Heat1d(p), Precision::F64) => Box::new(heat::Heat::<f64>::heat1d(p)),
        (SolverCase::Heat2d(p), Precision::F32) => Box::new(heat::Heat::<f32>::heat2d(p)),
        (SolverCase::Heat2d(p), Precision::F64) => Box::new(heat::Heat::<f64>::heat2d(p)),
        (SolverCase::Lskum(p), Precision::F64) => Box::new(lskum::Lskum::new(p)?),
        (SolverCase::Lskum(_), Precision::F32) => {
            return crate::error::input("precision: the lskum solver runs in f64 only");
        }
    })
}

/// Bytes of field storage the solver of `case` allocates, for `sim check`.
pub fn memory_estimate(case: &Case, precision: Precision) -> usize {
    let s = precision.bytes();
    match &case.solver {
        SolverCase::Heat1d(p) => 2 * p.n * s,
        SolverCase::Heat2d(p) => 2 * p.n * p.n * s,
        SolverCase::Lskum(p) => lskum::memory_estimate(p),
    }
}
