//! The interface between the shallow-water solver and its four schemes.

use crate::error::Result;
use crate::numerics::temporal::Tiling;
use crate::run::schedule::Landing;
use crate::real::Real;
use crate::solver::Place;

use super::grid::{At, Field};

/// The initial state as functions of position (see [`Field::sample`]): surface elevation η,
/// transports hu, hv, and the equilibrium depth H (positive down). A scheme samples each at
/// the places its grid stores them (FBL/CTCS: η, H at cell centres, hu on x-faces, hv on
/// y-faces; CDKLM16/KP07: η, hu, hv at cell centres, H at cell corners).
pub struct Initial<'a> {
    pub eta: &'a (dyn Fn(At) -> f64 + Sync),
    pub hu: &'a (dyn Fn(At) -> f64 + Sync),
    pub hv: &'a (dyn Fn(At) -> f64 + Sync),
    pub depth: &'a (dyn Fn(At) -> f64 + Sync),
}

/// Interior values at the cell centres, `nx * ny` row-major each (staggered transports
/// averaged from the two faces of the cell).
pub struct Cells<T> {
    pub eta: Vec<T>,
    pub hu: Vec<T>,
    pub hv: Vec<T>,
    /// Equilibrium depth H.
    pub depth: Vec<T>,
}

/// What [`Scheme::steps_landed`] did.
#[derive(Clone, Copy, Debug)]
pub struct Landed {
    /// Steps taken.
    pub steps: u64,
    /// The time after them.
    pub time: f64,
    /// The last step's length and its proposal (`courant` times the stable step).
    pub dt: f64,
    pub proposal: f64,
    /// The steps stopped at a state with no stable step (non-finite or not positive).
    pub unstable: bool,
}

/// One scheme's fields and its time step.
pub trait Scheme<T: Real>: Send {
    /// Advance by `dt`, boundary conditions included. `first` is the run's first step
    /// (CTCS starts its leapfrog there).
    fn step(&mut self, dt: f64, first: bool);
    /// `steps` steps of `dt`, none of them the run's first, in temporally blocked sweeps of
    /// `tiling` (FBL and CTCS on the CPU, for the cases [`super::SolverSpec::tiling`]
    /// admits): bit for bit `steps` calls of [`Scheme::step`], which is what the others do.
    fn steps_blocked(&mut self, dt: f64, _tiling: &Tiling, steps: usize) {
        for _ in 0..steps {
            self.step(dt, false);
        }
    }
    /// The largest stable time step for the current state (a reduction over the interior):
    /// FBL `1 / (c sqrt(1/dx² + 1/dy²))`, CTCS half that (`c = max|u| + sqrt(g h)`), CDKLM16
    /// and KP07 `½ min(dx / (|u| + c), dy / (|v| + c))`.
    fn dt_limit(&self) -> f64;
    /// Whether the scheme chooses its CFL-adaptive steps itself ([`Scheme::steps_landed`]):
    /// the finite-volume schemes on a device.
    fn lands_steps(&self) -> bool {
        false
    }
    /// Up to `most` steps from `time`, each `courant` times the stable step of its state,
    /// landed by `landing`, stopping after the first that reaches one of its instants (what
    /// the solver's `advance_landed` promises): a device scheme reduces the stable step and
    /// lands each step on the device, and reads back only the clock at the end.
    fn steps_landed(&mut self, _courant: f64, _landing: &Landing, _time: f64, _most: u64) -> Result<Landed> {
        unreachable!("steps_landed of a scheme that does not land its steps")
    }
    /// The block shape of a device scheme's main kernel.
    fn launch_block(&self) -> Option<[u32; 2]> {
        None
    }
    /// Interior cell-centre values for output and diagnostics.
    fn cells(&self) -> Cells<T>;
    /// Copies of every array a bit-exact restart needs, with its place on the cell grid (a
    /// device scheme downloads them).
    fn arrays(&self) -> Vec<(&'static str, Place, Field<T>)>;
    /// The same arrays on the host, to restore them; [`Scheme::restored`] follows.
    fn arrays_mut(&mut self) -> Vec<(&'static str, Place, &mut Field<T>)>;
    /// The arrays of [`Scheme::arrays_mut`] have been rewritten (a device scheme uploads them).
    fn restored(&mut self) -> Result<()> {
        Ok(())
    }
    /// Copy the state of a device scheme into the host arrays that [`Scheme::cells`] and
    /// [`Scheme::arrays`] read (the solver's `sync`, before every host read); a CPU scheme's
    /// arrays are the state.
    fn fetch(&mut self) -> Result<()> {
        Ok(())
    }
    /// The first device failure since the last call: a device scheme's [`Scheme::step`] only
    /// queues work and keeps what fails for here.
    fn failure(&mut self) -> Result<()> {
        Ok(())
    }
    /// Block until the work queued on a device has finished (for timing and before host reads),
    /// reporting a kept failure first.
    fn wait(&mut self) -> Result<()> {
        Ok(())
    }
}
