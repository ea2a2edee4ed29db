//! Numerical building blocks shared by the solvers and back ends: [`rk`] time integration,
//! [`tridiag`] tridiagonal solvers (Thomas, truncated SPIKE), [`temporal`] blocking of explicit
//! stencil steps.

pub mod fast_math;
pub mod rk;
pub mod temporal;
pub mod tridiag;

pub use rk::{RkState, Scheme, Stage, step};
