//! Numerical building blocks shared by the solvers and back ends: [`rk`] time integration (deterministic reductions and tridiagonal solvers belong here too).

pub mod rk;

pub use rk::{RkState, Scheme, Stage, step};
