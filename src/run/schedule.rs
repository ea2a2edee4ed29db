//! When things happen: the stop condition, step lengths that land on requested instants, and
//! the schedules of the driver's activities (every N steps, every T of simulated time, at
//! the end of the run, on an interrupt).

use crate::case::Case;
use crate::error::{Result, input};
use crate::real::Precision;
use crate::solver::{Clock, Solver};

/// Relative slack on time comparisons: a multiple of `output.every_time` within `TOL` of the
/// interval counts as reached, and an instant within `TOL` of a step (see [`slack`]).
pub const TOL: f64 = 1e-9;

/// The round-off that summing steps leaves in the simulated time, relative to the instant
/// reached (thousands of steps of an exact divisor of it add up to a few ulps off).
pub const ROUND: f64 = 1e-12;

/// How close a clock stepping `dt` must come to `instant` to have reached it: `TOL` of a step,
/// but of no more than the instant itself (a step far longer than the run must not end it
/// early), or the round-off of the summed steps, whichever is larger, and never more than a
/// thousandth of a step. `fv_clock` in `kernels/shallow_water_fv.cuh` forms the same value.
pub fn slack(dt: f64, instant: f64) -> f64 {
    (TOL * dt.min(instant.abs())).max(ROUND * instant.abs()).min(1e-3 * dt)
}

/// The most steps a run may take (about 1.1e12): beyond it a run would not end in practice.
pub const MAX_STEPS: u64 = 1 << 40;

/// The most frames `output.every_time` or `output.every_steps` may ask for before the end of a
/// run: each writes a file (and an instant lands a step), so far more is a mistyped interval,
/// not a plan.
pub const MAX_FRAMES: u64 = 1_000_000;

/// The nominal step of `s`, None under pseudo-time.
pub fn nominal_dt(s: &dyn Solver) -> Option<f64> {
    (s.clock() == Clock::Physical).then(|| s.dt())
}

/// Why the run ends after the current step, if it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    Continue,
    /// `time.end_step`, `time.end_time` or `--steps` reached.
    End,
    /// The steady-state test of the solver passed.
    Converged,
    /// Ctrl-C.
    Interrupted,
}

/// When the run stops.
#[derive(Clone, Copy, Debug)]
pub struct Stop {
    pub end_step: Option<u64>,
    pub end_time: Option<f64>,
    /// `output.every_time`: each of its instants before the end may shorten a step.
    pub every_time: Option<f64>,
    /// `output.every_steps`, counted for the limit on frames.
    pub every_steps: Option<u64>,
}

impl Stop {
    /// The case's stop, with `--steps` counted from `start`.
    pub fn of(case: &Case, steps: Option<u64>, start: u64) -> Stop {
        let by_opt = steps.map(|n| start.saturating_add(n));
        let end_step = match (case.time.end_step, by_opt) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Stop { end_step, end_time: case.time.end_time, every_time: case.output.every_time, every_steps: case.output.every_steps }
    }

    pub fn done(&self, s: &dyn Solver) -> bool {
        self.done_at(s.step(), s.time(), s.dt(), s.clock())
    }

    /// [`Stop::done`] for a solver at `step` and `time` with nominal step `dt`.
    pub fn done_at(&self, step: u64, time: f64, dt: f64, clock: Clock) -> bool {
        let by_time = clock == Clock::Physical && self.end_time.is_some_and(|t| t - time <= slack(dt, t));
        self.end_step.is_some_and(|e| step >= e) || by_time
    }

    /// Step number at which a run from `step` at `time`, with full steps of `dt` (None under
    /// pseudo-time), will stop; landing on output instants may add a few.
    pub fn last_step(&self, step: u64, time: f64, dt: Option<f64>) -> u64 {
        let by_time = match (self.end_time, dt) {
            // The float-to-integer cast saturates, so a tiny dt cannot wrap around.
            (Some(t), Some(dt)) => Some(step.saturating_add(((t - time - slack(dt, t)) / dt).ceil().max(0.0) as u64)),
            _ => None,
        };
        match (self.end_step, by_time) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => step,
        }
    }

    /// [`Stop::last_step`] with the steps that land on the instants of `landing`: the driver's
    /// fixed steps of `dt` replayed, the times summed as the solvers sum them (None beyond
    /// `most` steps, where the replay would take too long).
    pub fn landed_last_step(&self, landing: &Landing, step: u64, time: f64, dt: f64, most: u64) -> Option<u64> {
        let (mut n, mut t) = (step, time);
        while !self.done_at(n, t, dt, Clock::Physical) {
            if n - step >= most {
                return None;
            }
            t += landing.step_length(t, dt);
            n += 1;
        }
        Some(n)
    }

    /// Refuse a run that could not end: a time step that is not positive, finite and normal,
    /// more than [`MAX_FRAMES`] output instants, or more than [`MAX_STEPS`] steps (the
    /// landing steps included).
    /// (Normal in the run's `precision`: an f32 run steps in f32.)
    pub fn check_limits(&self, step: u64, time: f64, dt: Option<f64>, precision: Precision) -> Result<()> {
        if let Some(dt) = dt
            && !(precision.is_normal(dt) && dt > 0.0)
        {
            return input(format!(
                "the time step dt = {dt:e} that the case gives is not usable: it must be positive, finite and \
                 not subnormal in {} (check the stability number, the grid and the domain)",
                precision.name()
            ));
        }
        // A checkpoint past a lowered end has no steps left (the caller says so).
        let steps = self.last_step(step, time, dt).saturating_sub(step);
        if let Some(dt) = dt
            && !(time + steps as f64 * dt).is_finite()
        {
            return input(format!(
                "the time step dt = {dt:e} that the case gives would take the simulated time past the largest f64 \
                 in the run's {steps} steps (check the stability number, the grid and the domain)"
            ));
        }
        let frames = self.output_instants(step, time, dt);
        if frames > MAX_FRAMES as f64 {
            return input(format!(
                "output.every_time: {:e} asks for {frames:.3e} output frames before the end of the run ({}), more \
                 than the limit of {MAX_FRAMES}; use a larger interval",
                self.every_time.unwrap_or_default(),
                self.text()
            ));
        }
        if let Some(every) = self.every_steps
            && steps / every > MAX_FRAMES
        {
            return input(format!(
                "output.every_steps: {every} asks for {} output frames before the end of the run ({}), more than \
                 the limit of {MAX_FRAMES}; use a larger interval",
                steps / every,
                self.text()
            ));
        }
        let steps = steps.saturating_add(frames as u64);
        if steps > MAX_STEPS {
            // A count that saturated says only that it is beyond any run.
            let count = if steps == u64::MAX { "more than 1.8e19".to_string() } else { steps.to_string() };
            return input(format!(
                "the run would take {count} steps, more than the limit of {MAX_STEPS}; use a larger time step or \
                 an earlier time.end_time / time.end_step"
            ));
        }
        Ok(())
    }

    /// How many instants of `output.every_time` lie between `time` and the end of a run from
    /// `step` with full steps of `dt`: at most one per step, so no more than an end step
    /// leaves, and none beyond the time its full steps reach.
    fn output_instants(&self, step: u64, time: f64, dt: Option<f64>) -> f64 {
        let Some(every) = self.every_time else { return 0.0 };
        let steps = self.end_step.map(|e| e.saturating_sub(step) as f64);
        let end = match (self.end_time, steps, dt) {
            (Some(end), _, _) => end,
            (None, Some(n), Some(dt)) => time + n * dt,
            _ => return 0.0,
        };
        let by_time = ((end - time) / every).ceil().max(0.0);
        steps.map_or(by_time, |n| by_time.min(n))
    }

    pub fn text(&self) -> String {
        match (self.end_step, self.end_time) {
            (Some(n), Some(t)) => format!("step {n} or t = {t}"),
            (Some(n), None) => format!("step {n}"),
            (None, Some(t)) => format!("t = {t}"),
            (None, None) => "start".into(),
        }
    }
}

/// Instants a step must land on exactly: the end time and every multiple of the output
/// interval. (A device that chooses its own steps mirrors this in `fv_clock` of
/// `kernels/shallow_water_fv.cuh`.)
#[derive(Clone, Debug, Default)]
pub struct Landing {
    pub end_time: Option<f64>,
    pub every_time: Option<f64>,
}

impl Landing {
    /// Length of the step from `t` for the proposal `dt`: shortened (or stretched by at most
    /// [`slack`], instead of leaving a sliver) to end exactly on the next instant. `t + (T - t)`
    /// is exactly `T` in floating point whenever `T/2 <= t`, i.e. for every step that lands
    /// after the first (Sterbenz).
    pub fn step_length(&self, t: f64, dt: f64) -> f64 {
        let next = self.next_instant(t);
        let remaining = next - t;
        if remaining <= dt + slack(dt, next) { remaining } else { dt }
    }

    /// The first instant after `t` (infinity if none).
    pub fn next_instant(&self, t: f64) -> f64 {
        let next_output = self.every_time.map(|every| next_multiple(t, every));
        self.end_time.into_iter().chain(next_output).fold(f64::INFINITY, f64::min)
    }
}

/// The first multiple of `every` after `t` (`t` itself counts as passed).
fn next_multiple(t: f64, every: f64) -> f64 {
    (multiples(t, every) + 1.0) * every
}

/// Multiples of `every` reached at `t`.
fn multiples(t: f64, every: f64) -> f64 {
    (t / every + TOL).floor()
}

/// One way an activity becomes due.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Trigger {
    EverySteps(u64),
    /// At each multiple of this simulated time.
    EveryTime(f64),
    /// At the end of the run or at convergence.
    Final,
    /// When Ctrl-C stops the run.
    Interrupt,
}

/// A list of triggers: due when any is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schedule(pub Vec<Trigger>);

impl Schedule {
    /// Due after a step that went from `t_prev` to the solver's state and ends the run as
    /// `ending` says.
    pub fn due(&self, s: &dyn Solver, t_prev: f64, ending: Ending) -> bool {
        self.due_at(s.step(), s.time(), t_prev, s.clock(), ending)
    }

    /// [`Schedule::due`] after a step to `step` and `time`.
    pub fn due_at(&self, step: u64, time: f64, t_prev: f64, clock: Clock, ending: Ending) -> bool {
        self.0.iter().any(|trigger| match *trigger {
            Trigger::EverySteps(n) => step.is_multiple_of(n),
            Trigger::EveryTime(every) => clock == Clock::Physical && multiples(time, every) > multiples(t_prev, every),
            Trigger::Final => matches!(ending, Ending::End | Ending::Converged),
            Trigger::Interrupt => ending == Ending::Interrupted,
        })
    }

    /// Due at a state this run starts from (a restart's checkpoint): at a multiple of the
    /// steps or on an instant, as a step reaching it would have been.
    pub fn due_on_arrival(&self, step: u64, time: f64, clock: Clock) -> bool {
        self.0.iter().any(|trigger| match *trigger {
            Trigger::EverySteps(n) => step.is_multiple_of(n),
            Trigger::EveryTime(every) => clock == Clock::Physical && (time / every - multiples(time, every)).abs() <= TOL,
            Trigger::Final | Trigger::Interrupt => false,
        })
    }

    /// Due whenever `self` or `other` is.
    pub fn or(&self, other: &Schedule) -> Schedule {
        Schedule(self.0.iter().chain(&other.0).copied().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_land_exactly_on_output_instants_and_the_end() {
        let landing = Landing { end_time: Some(1.0), every_time: Some(0.1) };
        let dt = 0.03;
        let (mut t, mut hits) = (0.0f64, Vec::new());
        while 1.0 - t > slack(dt, 1.0) {
            let h = landing.step_length(t, dt);
            assert!(h > 0.0 && h <= dt + slack(dt, 1.0), "step {h} at t = {t}");
            let before = t;
            t += h;
            if multiples(t, 0.1) > multiples(before, 0.1) {
                hits.push(t);
            }
        }
        let expected: Vec<f64> = (1..=10).map(|k| k as f64 * 0.1).collect();
        assert_eq!(hits, expected, "output instants hit bitwise");
        assert_eq!(t, 1.0);
    }

    #[test]
    fn a_step_just_short_of_an_instant_is_stretched_not_followed_by_a_sliver() {
        let landing = Landing { end_time: None, every_time: Some(1.0) };
        let dt = 0.5 * (1.0 - 1e-12);
        assert_eq!(landing.step_length(0.5, dt), 0.5);
        assert_eq!(landing.step_length(0.0, dt), dt);
        // An instant further away than TOL is not stretched to.
        assert_eq!(landing.step_length(0.0, 0.4), 0.4);
    }

    /// The end of a run that a step of `dt` overshoots by far is still reached by a step of
    /// its own, and steps that divide the end reach it without a sliver step after them.
    #[test]
    fn the_end_is_reached_exactly_once_whatever_the_step() {
        for (dt, end) in [(1e10, 9.0), (4e-3, 1e-12), (1e28, 1.0)] {
            let stop = Stop { end_step: None, end_time: Some(end), every_time: None, every_steps: None };
            let landing = Landing { end_time: Some(end), every_time: None };
            assert!(!stop.done_at(0, 0.0, dt, Clock::Physical), "dt {dt}, end {end}: done before a step");
            assert_eq!(landing.step_length(0.0, dt), end);
            assert!(stop.done_at(1, end, dt, Clock::Physical));
            assert_eq!(stop.landed_last_step(&landing, 0, 0.0, dt, 10), Some(1));
        }
        // 10 000 steps of 5e-8 sum to 4.99999999999885735e-4, an ulp-sized sliver short of 5e-4.
        let (dt, end) = (5e-8, 5e-4);
        let stop = Stop { end_step: None, end_time: Some(end), every_time: Some(1e-4), every_steps: None };
        let landing = Landing { end_time: Some(end), every_time: Some(1e-4) };
        assert_eq!(stop.landed_last_step(&landing, 0, 0.0, dt, 20_000), Some(10_000));
    }

    #[test]
    fn schedules_combine() {
        let a = Schedule(vec![Trigger::EverySteps(10)]);
        let b = Schedule(vec![Trigger::Interrupt]);
        assert_eq!(a.or(&b).0, vec![Trigger::EverySteps(10), Trigger::Interrupt]);
    }
}
