//! Numerical building blocks shared by the solvers and back ends: [`rk`] time integration and
//! [`tridiag`] tridiagonal solvers (Thomas, truncated SPIKE).

pub mod rk;
pub mod tridiag;

pub use rk::{RkState, Scheme, Stage, step};
