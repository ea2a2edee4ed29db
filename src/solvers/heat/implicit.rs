//! Implicit heat steps: Crank–Nicolson in 1D and Peaceman–Rachford ADI in 2D, both as
//! "explicit half" and "implicit half" stages on the tridiagonal solvers of
//! [`crate::numerics::tridiag`].
//!
//! With `r = a dt / dx²` and `h = r/2`, every half is one of two operators along one axis:
//! - explicit half: `b = (1 - r) c + h (w + e)` on the interior (`w`, `e` the neighbours
//!   along the axis), 0 on the boundary;
//! - implicit half: solve `(1 + r) x - h (x_w + x_e) = b` along the axis, the boundary
//!   values (0) known.
//!
//! Crank–Nicolson (1D): explicit x, implicit x. Peaceman–Rachford (2D): explicit y, implicit
//! x (the half step to `T*`), explicit x, implicit y. Chosen over Douglas ADI because in 2D
//! it is the same second-order, unconditionally stable scheme with one operator per half
//! and no stored correction term; with the boundary values fixed at 0 the intermediate
//! `T*` has the boundary value 0 exactly.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::numerics::tridiag::{SpikePlan, Thomas, Tridiagonal};
use crate::padded::Padded;
use crate::real::Real;

/// `method:` of heat1d and heat2d.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Forward Euler, the 3- or 5-point Laplacian (FTCS).
    #[default]
    Explicit,
    /// Crank–Nicolson (heat1d).
    CrankNicolson,
    /// Peaceman–Rachford alternating direction implicit (heat2d).
    Adi,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Explicit => "explicit",
            Method::CrankNicolson => "crank_nicolson",
            Method::Adi => "adi",
        }
    }
    pub fn implicit(self) -> bool {
        self != Method::Explicit
    }
}

/// `tridiagonal:` of an implicit heat1d: the solver of the one system of each step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TridiagonalSolver {
    /// Thomas (sequential).
    #[default]
    Thomas,
    /// Truncated SPIKE over `partitions` parallel partitions.
    Spike,
}

/// Which axis a half step works along.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    X,
    Y,
}

/// Which buffer a stage reads and which it writes: the field `temp` and the second buffer `next`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    TempToNext,
    NextToTemp,
}

/// The stages of an implicit step on one back end.
pub trait ImplicitStages<T: Real> {
    /// The explicit half along `axis`: `b = (1 - r) c + h (w + e)` from one buffer into the
    /// other, boundary 0.
    fn explicit_half(&mut self, axis: Axis, flow: Flow, r: T) -> Result<()>;
    /// The implicit half along `axis`, in place in the buffer `flow` wrote, with the
    /// factorisation of `(1 + r, -h)` the back end holds.
    fn implicit_half(&mut self, axis: Axis, flow: Flow) -> Result<()>;
    /// Make `next` the current field.
    fn swap(&mut self);
}

/// One step of `method` with stability number `r`: the one place that fixes the order of
/// the stages for every back end.
pub fn step<T: Real>(s: &mut (impl ImplicitStages<T> + ?Sized), method: Method, r: T) -> Result<()> {
    match method {
        Method::CrankNicolson => {
            s.explicit_half(Axis::X, Flow::TempToNext, r)?;
            s.implicit_half(Axis::X, Flow::TempToNext)?;
            s.swap();
        }
        Method::Adi => {
            s.explicit_half(Axis::Y, Flow::TempToNext, r)?;
            s.implicit_half(Axis::X, Flow::TempToNext)?;
            s.explicit_half(Axis::X, Flow::NextToTemp, r)?;
            s.implicit_half(Axis::Y, Flow::NextToTemp)?;
        }
        Method::Explicit => unreachable!("the explicit method has its own stages"),
    }
    Ok(())
}

/// The matrix of an implicit half with `m` unknowns: `1 + r` on the diagonal, `-r/2` beside it.
pub fn matrix<T: Real>(m: usize, r: T) -> Tridiagonal<T> {
    let h = r * T::of(0.5);
    Tridiagonal::constant(m, -h, T::one() + r, -h)
}

/// The solver of the implicit halves along one axis.
pub enum Factors<T: Real> {
    Thomas(Thomas<T>),
    Spike(SpikePlan<T>),
}

impl<T: Real> Factors<T> {
    /// The solver of the halves along x (`nx - 2` unknowns) with `solver` for `r`: what every
    /// back end factors.
    pub fn along_x(nx: usize, r: T, solver: TridiagonalSolver, partitions: usize) -> Result<Self> {
        let mx = matrix(nx - 2, r);
        Ok(match solver {
            TridiagonalSolver::Thomas => Factors::Thomas(Thomas::new(&mx)?),
            TridiagonalSolver::Spike => Factors::Spike(SpikePlan::plan(&mx, partitions)?),
        })
    }

    /// Why SPIKE fell back to Thomas, if it did.
    pub fn fallback(&self) -> Option<&str> {
        match self {
            Factors::Thomas(_) => None,
            Factors::Spike(s) => s.fallback_reason(),
        }
    }

    fn solve(&self, d: &mut [T]) {
        match self {
            Factors::Thomas(t) => t.solve(d),
            Factors::Spike(s) => s.solve(d),
        }
    }

    /// One system per row (Thomas: the rows in lockstep).
    fn solve_rows(&self, rows: &mut [&mut [T]]) {
        match self {
            Factors::Thomas(t) => t.solve_together(rows),
            Factors::Spike(s) => rows.iter_mut().for_each(|r| s.solve(r)),
        }
    }
}

/// The CPU back end of the implicit steps: the second buffer and the factorisations for
/// the `r` of the last step (refactored when a shortened step changes it).
pub struct CpuImplicit<T: Real> {
    pub next: Padded<T>,
    nx: usize,
    ny: usize,
    solver: TridiagonalSolver,
    partitions: usize,
    r: Option<T>,
    x: Option<Factors<T>>,
    y: Option<Thomas<T>>,
    /// Why SPIKE first fell back to Thomas in this run, if it did.
    fell_back: Option<String>,
}

impl<T: Real> CpuImplicit<T> {
    pub fn new(next: Padded<T>, nx: usize, ny: usize, solver: TridiagonalSolver, partitions: usize) -> Self {
        CpuImplicit { next, nx, ny, solver, partitions, r: None, x: None, y: None, fell_back: None }
    }

    /// Why SPIKE fell back to Thomas, if it did for any step of the run (the full steps' matrix,
    /// not only the last, shortened step's).
    pub fn fallback(&self) -> Option<&str> {
        self.fell_back.as_deref()
    }

    /// The tridiagonal solver along x and its SPIKE partitions.
    pub fn solver(&self) -> (TridiagonalSolver, usize) {
        (self.solver, self.partitions)
    }

    /// Factor the halves' matrices for `r` unless they already are.
    pub fn factor(&mut self, r: T) -> Result<()> {
        if self.r == Some(r) {
            return Ok(());
        }
        let x = Factors::along_x(self.nx, r, self.solver, self.partitions)?;
        self.fell_back = self.fell_back.take().or_else(|| x.fallback().map(str::to_string));
        self.x = Some(x);
        self.y = if self.ny > 1 { Some(Thomas::new(&matrix(self.ny - 2, r))?) } else { None };
        self.r = Some(r);
        Ok(())
    }
}

/// The CPU stages: the field `temp` and the back end's buffers.
pub struct CpuStages<'a, T: Real> {
    pub temp: &'a mut Padded<T>,
    pub imp: &'a mut CpuImplicit<T>,
}

/// Rows per parallel task of the row-wise passes.
const ROWS: usize = 8;

impl<T: Real> ImplicitStages<T> for CpuStages<'_, T> {
    fn explicit_half(&mut self, axis: Axis, flow: Flow, r: T) -> Result<()> {
        let (nx, ny) = (self.imp.nx, self.imp.ny);
        let (src, dst): (&[T], &mut [T]) = match flow {
            Flow::TempToNext => (self.temp, &mut self.imp.next),
            Flow::NextToTemp => (&self.imp.next, self.temp),
        };
        let (c0, h) = (T::one() - r, r * T::of(0.5));
        if ny == 1 {
            super::kernels::three_point1d(src, dst, c0, h);
            return Ok(());
        }
        dst.par_chunks_mut(nx).enumerate().for_each(|(j, out)| {
            if j == 0 || j == ny - 1 {
                out.fill(T::zero());
                return;
            }
            match axis {
                Axis::X => {
                    let c = &src[j * nx..(j + 1) * nx];
                    for i in 1..nx - 1 {
                        out[i] = c0 * c[i] + h * (c[i - 1] + c[i + 1]);
                    }
                }
                Axis::Y => {
                    let (s, c, n) = (&src[(j - 1) * nx..j * nx], &src[j * nx..(j + 1) * nx], &src[(j + 1) * nx..(j + 2) * nx]);
                    for i in 1..nx - 1 {
                        out[i] = c0 * c[i] + h * (s[i] + n[i]);
                    }
                }
            }
            out[0] = T::zero();
            out[nx - 1] = T::zero();
        });
        Ok(())
    }

    fn implicit_half(&mut self, axis: Axis, flow: Flow) -> Result<()> {
        let (nx, ny) = (self.imp.nx, self.imp.ny);
        let buf: &mut [T] = match flow {
            Flow::TempToNext => &mut self.imp.next,
            Flow::NextToTemp => self.temp,
        };
        match axis {
            Axis::X => {
                let x = self.imp.x.as_ref().expect("factored before the step");
                if ny == 1 {
                    x.solve(&mut buf[1..nx - 1]);
                } else {
                    buf[nx..nx * (ny - 1)].par_chunks_mut(ROWS * nx).for_each(|rows| {
                        let mut systems: Vec<&mut [T]> = rows.chunks_mut(nx).map(|row| &mut row[1..nx - 1]).collect();
                        x.solve_rows(&mut systems);
                    });
                }
            }
            // The interior rows hold the column systems interleaved: unknown j of column i
            // at (j - 1) nx + i. The boundary columns solve to their right-hand side 0.
            Axis::Y => {
                let y = self.imp.y.as_ref().expect("factored before the step");
                y.solve_interleaved(&mut buf[nx..nx * (ny - 1)], nx);
            }
        }
        Ok(())
    }

    fn swap(&mut self) {
        std::mem::swap(self.temp, &mut self.imp.next);
    }
}
