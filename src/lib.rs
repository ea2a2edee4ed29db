//! `sim`: a case-driven CFD simulator.
//!
//! A YAML case ([`case::Case`]) is validated, turned into a [`solver::Solver`] through the
//! registry in [`solvers`] and advanced by the driver in [`run`], whose scheduled activities
//! write output (VTK series), checkpoints (HDF5) and diagnostics.

// Input checks write `!(x > 0.0)` on purpose: unlike `x <= 0.0`, it also rejects NaN.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod bench;
pub mod bench_tridiag;
pub mod case;
pub mod cpu;
pub mod cuda;
pub mod error;
pub mod info;
pub mod io;
pub mod memory;
pub mod mesh;
pub mod numerics;
pub mod padded;
pub mod parallel;
pub mod peak;
pub mod power;
pub mod real;
pub mod run;
pub mod solver;
pub mod solvers;
pub mod tune;
pub mod validate;
#[cfg(test)]
mod testing;

pub use error::{Result, SimError};
