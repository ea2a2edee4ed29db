//! The time loop: advance the solver by steps that land on the requested instants, then walk
//! the activities (guard, output, checkpoint), each on its own [`Schedule`]; progress is shown
//! on a wall-clock schedule, and the end, convergence or Ctrl-C end the loop.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use super::directory::RunDir;
use super::report::{self, RunFacts};
use super::schedule::{Ending, Landing, Schedule, Stop, Trigger, nominal_dt};
use crate::case::Case;
use crate::error::{Result, SimError};
use crate::io::output::{self, Frame};
use crate::io::pvd::{Entry, Pvd};
use crate::io::{checkpoint, history::History};
use crate::parallel::{Comm, Reduce, agree};
use crate::solver::{Clock, Solver};

/// Whether `activities` write a frame of a state at `step` and `time` that a run starts from
/// (a restart's): as a step reaching it would.
pub fn output_due_on_arrival(activities: &[(Activity, Schedule)], step: u64, time: f64, clock: Clock) -> bool {
    activities.iter().any(|(a, when)| *a == Activity::Output && when.due_on_arrival(step, time, clock))
}

/// Whether a series continued at `step` lacks its frame (a series begun afresh, empty, lacks
/// none: it starts after the restart step).
pub fn lacks_frame(series: &[Entry], step: u64) -> bool {
    !series.is_empty() && !series.iter().any(|e| e.step == step)
}

/// What the driver does between steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    /// NaN/Inf check and a history.csv row.
    Guard,
    /// A VTK file and its `.pvd` entry.
    Output,
    /// An HDF5 checkpoint (older ones beyond `checkpoint.keep` removed).
    Checkpoint,
}

/// The activities of `case` in the order they run after a step. A checkpoint is always
/// preceded by a guard check, so it never holds NaN/Inf.
pub fn activities(case: &Case) -> Vec<(Activity, Schedule)> {
    let mut checkpoint = Schedule(vec![Trigger::Final, Trigger::Interrupt]);
    checkpoint.0.extend(case.checkpoint.every_steps.map(Trigger::EverySteps));
    let guard = Schedule(vec![Trigger::EverySteps(case.guard.check_every)]).or(&checkpoint);
    // Also on Ctrl-C: the state the checkpoint holds is the series' last frame.
    let mut output = Schedule(vec![Trigger::Final, Trigger::Interrupt]);
    output.0.extend(case.output.every_steps.map(Trigger::EverySteps));
    output.0.extend(case.output.every_time.map(Trigger::EveryTime));
    vec![(Activity::Guard, guard), (Activity::Output, output), (Activity::Checkpoint, checkpoint)]
}

/// Where a run writes and how it stops; everything the loop needs besides the solver.
pub struct Setup<'a> {
    pub case: &'a Case,
    pub case_text: &'a str,
    pub threads: usize,
    /// `cpu.subnormals` of a CPU run (None on a device).
    pub subnormals: Option<crate::cpu::Subnormals>,
    pub out_dir: &'a Path,
    pub stop: Stop,
    pub quiet: bool,
    /// The checkpoint a restart started from.
    pub restart: Option<PathBuf>,
    /// `--backend` of the command line, which the checkpoint's case does not hold: the
    /// command that continues the run repeats it.
    pub backend_arg: Option<crate::case::Backend>,
    /// The ranks of a decomposed run (MPI): every rank steps, checks and writes its output
    /// piece; rank 0 alone keeps the run directory, the series, the history, the checkpoints
    /// and the progress.
    pub comm: Option<Arc<dyn Comm>>,
}

pub struct Driver<'a> {
    setup: Setup<'a>,
    /// The locked output directory and its manifest of the files the run writes (rank 0's).
    dir: Option<RunDir>,
    activities: Vec<(Activity, Schedule)>,
    landing: Landing,
    start_step: u64,
    pvd: Pvd,
    history: Option<History>,
    last_checkpoint: Option<PathBuf>,
    progress: Progress,
    /// Time spent inside `advance`, for the bandwidth figure.
    compute: Duration,
    started: Instant,
}

impl<'a> Driver<'a> {
    pub fn new(setup: Setup<'a>, dir: Option<RunDir>, s: &dyn Solver) -> Result<Self> {
        let start_step = s.step();
        let case = setup.case;
        let keep_until = setup.restart.as_ref().map(|_| start_step);
        let started = Instant::now();
        let frames = dir.as_ref().map(|d| d.frames(&case.name, start_step)).unwrap_or_default();
        let (pvd, note) = Pvd::resume(setup.out_dir.join(format!("{}.pvd", case.name)), start_step, &frames);
        if let Some(note) = note.filter(|_| !setup.quiet) {
            crate::say!("{note}");
        }
        Ok(Driver {
            activities: activities(case),
            landing: Landing { end_time: case.time.end_time, every_time: case.output.every_time },
            start_step,
            pvd,
            history: match dir {
                Some(_) => Some(History::open(crate::io::history::path_in(setup.out_dir), keep_until)?),
                None => None,
            },
            last_checkpoint: setup.restart.clone(),
            progress: Progress::new(
                setup.quiet || dir.is_none(),
                start_step,
                setup.stop.last_step(start_step, s.time(), nominal_dt(s)),
                started,
            ),
            compute: Duration::ZERO,
            started,
            setup,
            dir,
        })
    }

    /// Run to the end; returns the summary written to summary.json.
    pub fn drive(&mut self, s: &mut dyn Solver) -> Result<serde_json::Value> {
        self.begin(s)?;
        let mut ending = if self.setup.stop.done(s) { Ending::End } else { Ending::Continue };
        while ending == Ending::Continue {
            let t_prev = s.time();
            self.step(s)?;
            ending = self.ending(s);
            self.run_due(s, t_prev, ending)?;
            self.progress.update(s, ending != Ending::Continue);
        }
        self.finish(s, ending)
    }

    fn begin(&mut self, s: &mut dyn Solver) -> Result<()> {
        let r = self.record(&format!("{}.pvd", self.setup.case.name)).and_then(|()| self.record("history.csv"));
        self.agree(r)?;
        if self.setup.restart.is_none() {
            s.sync()?;
            let r = self.write_output(s);
            self.agree(r)?;
            let r = self.guard(s);
            return self.agree(r);
        }
        let r = if self.root() { self.pvd.save() } else { Ok(()) };
        self.agree(r)?;
        self.progress.log(&format!("restarting from step {}{}", s.step(), report::time_text(s)));
        if self.frame_missing_on_arrival(s) {
            s.sync()?;
            let r = self.write_output(s);
            self.agree(r)?;
        }
        Ok(())
    }

    /// Whether the restart step is an output instant of this run's schedule and the series it
    /// continues has no frame of it (the schedule changed on restart): it then gets one, as in
    /// a fresh run. (A series begun in another directory starts after the restart step.)
    fn frame_missing_on_arrival(&self, s: &dyn Solver) -> bool {
        let due = output_due_on_arrival(&self.activities, s.step(), s.time(), s.clock());
        // Rank 0 holds the series.
        let missing = self.root() && lacks_frame(&self.pvd.entries, s.step());
        let missing = match &self.setup.comm {
            Some(c) => c.all_reduce(f64::from(u8::from(missing)), Reduce::Max) > 0.0,
            None => missing,
        };
        due && missing
    }

    /// One step of the length the solver proposes, landed on the next requested instant; or,
    /// for a solver that takes several at once, as many full steps as come before the next
    /// activity, the end or a landing; or, for one that lands its own steps, as many as come
    /// before the next activity counted in steps (it stops at the instants itself).
    fn step(&mut self, s: &mut dyn Solver) -> Result<()> {
        let t0 = Instant::now();
        if s.clock() == Clock::Physical && s.landed_steps_per_call() > 0 {
            let most = self.steps_at_once(s, None);
            s.advance_landed(&self.landing, most)?;
        } else {
            let (dt, full) = match s.clock() {
                Clock::Physical => {
                    let proposal = s.propose_dt()?;
                    let dt = self.landing.step_length(s.time(), proposal);
                    (dt, dt == proposal)
                }
                Clock::Iterations => (0.0, true),
            };
            let n = if full { self.steps_at_once(s, Some(dt)) } else { 1 };
            s.advance_steps(dt, n)?;
        }
        self.compute += t0.elapsed();
        Ok(())
    }

    /// Steps the solver may take in one call: at most its [`Solver::steps_per_call`] (with
    /// `dt`) or [`Solver::landed_steps_per_call`] (without), and none past a step after which
    /// the run stops or an activity is due, or which a landing would shorten. With `dt` the
    /// times are summed as the solver sums them, so the schedules see the same values as step
    /// by step; without, only the step counts bound the call (the solver stops at the
    /// instants of the landing itself).
    fn steps_at_once(&self, s: &dyn Solver, dt: Option<f64>) -> u64 {
        let clock = s.clock();
        let most = if dt.is_some() { s.steps_per_call() } else { s.landed_steps_per_call() };
        let (mut step, mut time) = (s.step(), s.time());
        for n in 1..most {
            let t_prev = time;
            step += 1;
            if let (Clock::Physical, Some(dt)) = (clock, dt) {
                time += dt;
            }
            let due = self.activities.iter().any(|(_, when)| when.due_at(step, time, t_prev, clock, Ending::Continue));
            let lands =
                matches!(dt, Some(dt) if clock == Clock::Physical && self.landing.step_length(time, dt) != dt);
            if due || lands || self.setup.stop.done_at(step, time, s.dt(), clock) {
                return n;
            }
        }
        most.max(1)
    }

    /// (A steady state reached at the run's last step is reported as converged.)
    fn ending(&self, s: &dyn Solver) -> Ending {
        if s.converged() {
            Ending::Converged
        } else if self.setup.stop.done(s) {
            Ending::End
        } else if self.interrupted() {
            Ending::Interrupted
        } else {
            Ending::Continue
        }
    }

    /// The activities due after this step, with one host sync before them. The ranks agree on
    /// the outcome of each before the next, whose collectives a failed rank would not join.
    fn run_due(&mut self, s: &mut dyn Solver, t_prev: f64, ending: Ending) -> Result<()> {
        let mut due: Vec<Activity> =
            self.activities.iter().filter(|(_, when)| when.due(s, t_prev, ending)).map(|(a, _)| *a).collect();
        // A signal leaves little time (mpirun kills its ranks a second or two after passing one
        // on): the checkpoint before the frame, which a restart writes where it is missing.
        if matches!(ending, Ending::Interrupted) {
            due.sort_by_key(|a| *a == Activity::Output);
        }
        if due.is_empty() {
            return Ok(());
        }
        self.settle(s)?;
        // A frame shows no NaN/Inf either (a checkpoint is preceded by a guard check anyway).
        if due.contains(&Activity::Output) && !due.contains(&Activity::Guard) {
            let checked = self.check(s).map(drop);
            self.agree(checked)?;
        }
        for activity in due {
            let r = match activity {
                Activity::Guard => self.guard(s),
                Activity::Output => self.write_output(s),
                Activity::Checkpoint => self.write_checkpoint(s),
            };
            self.agree(r)?;
        }
        Ok(())
    }

    /// Wait for the steps queued on a device, counted as compute time (a launch returns before
    /// its kernel has run, so the step calls alone time little more than the launches), then
    /// bring the host copy up to date.
    fn settle(&mut self, s: &mut dyn Solver) -> Result<()> {
        let t0 = Instant::now();
        s.wait()?;
        self.compute += t0.elapsed();
        s.sync()
    }

    /// Rank 0 of a decomposed run, or the one process of a serial one.
    fn root(&self) -> bool {
        self.dir.is_some()
    }

    /// `r` where every rank succeeded, else every rank fails (see [`agree`]).
    fn agree(&self, r: Result<()>) -> Result<()> {
        match &self.setup.comm {
            Some(c) => agree(c.as_ref(), r),
            None => r,
        }
    }

    /// A signal arrived (on any rank: all ranks stop after the same step, and take the largest
    /// signal number any of them received as theirs).
    fn interrupted(&self) -> bool {
        let here = super::signals::received();
        match &self.setup.comm {
            Some(c) => {
                let signal = c.all_reduce(f64::from(here.unwrap_or(0)), Reduce::Max) as i32;
                if signal > 0 {
                    super::signals::agreed(signal);
                }
                signal > 0
            }
            None => here.is_some(),
        }
    }

    /// Add `name` to the run directory's manifest (rank 0).
    fn record(&mut self, name: &str) -> Result<()> {
        self.dir.as_mut().map_or(Ok(()), |d| d.record(name))
    }

    fn finish(&mut self, s: &mut dyn Solver, ending: Ending) -> Result<serde_json::Value> {
        self.progress.finish();
        self.settle(s)?;
        // Rank 0's files, agreed on before the report's collectives.
        let (results, written) = match self.write_results(s) {
            Ok(results) => (results, Ok(())),
            Err(e) => (Vec::new(), Err(e)),
        };
        self.agree(written)?;
        let facts = RunFacts {
            case: &self.setup.case.name,
            threads: self.setup.threads,
            start_step: self.start_step,
            compute_s: self.compute.as_secs_f64(),
            wall_s: self.started.elapsed().as_secs_f64(),
            outputs: self.pvd.entries.len(),
            checkpoint: self.last_checkpoint.as_deref(),
            results: &results,
            subnormals: self.setup.subnormals.map(crate::cpu::Subnormals::name),
            backend: self.backend(s),
            case_end: super::schedule::Stop::of(self.setup.case, None, 0).done(s),
        };
        let summary = report::summary(&facts, s, ending);
        let text = serde_json::to_string_pretty(&summary).expect("summary serialises");
        let path = self.setup.out_dir.join("summary.json");
        let written = if self.root() { crate::io::write_atomic(&path, text.as_bytes()) } else { Ok(()) };
        self.agree(written)?;
        if ending == Ending::Interrupted {
            let ck = self.last_checkpoint.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
            let signal = super::signals::received().unwrap_or(signal_hook::consts::SIGINT);
            // Every rank stops with the signal's code; rank 0 alone says so.
            if !self.root() {
                return Err(SimError::Quiet(128 + signal));
            }
            // A stop that `--steps` set before the case's end: the command keeps it.
            let case_end = Stop::of(self.setup.case, None, 0).end_step;
            let steps = match self.setup.stop.end_step {
                Some(end) if Some(end) != case_end && end > s.step() => format!(" --steps {}", end - s.step()),
                _ => String::new(),
            };
            return Err(SimError::Interrupted(
                format!(
                    "interrupted by {} at step {}{}; checkpoint written. Continue with: sim run --restart {ck}{}{steps}",
                    super::signals::name(signal),
                    s.step(),
                    report::time_text(s),
                    self.setup.backend_arg.map(|b| format!(" --backend {}", b.name())).unwrap_or_default()
                ),
                signal,
            ));
        }
        Ok(summary)
    }

    /// The solver's result files (rank 0), recorded in the manifest with `summary.json`.
    fn write_results(&mut self, s: &dyn Solver) -> Result<Vec<String>> {
        for name in crate::solvers::entry(s.kind()).map_or(&[][..], |e| e.result_files) {
            self.record(name)?;
        }
        self.record("summary.json")?;
        if self.root() { s.write_results(self.setup.out_dir) } else { Ok(Vec::new()) }
    }

    /// NaN/Inf check of the fields and of the diagnostics, plus a history row.
    fn guard(&mut self, s: &dyn Solver) -> Result<()> {
        let diagnostics = self.check(s)?;
        let wall = self.started.elapsed().as_secs_f64();
        let time = (s.clock() == Clock::Physical).then(|| s.time());
        self.history.as_mut().map_or(Ok(()), |h| h.append(s.step(), time, wall, &diagnostics))
    }

    /// NaN/Inf check of the fields and of the diagnostics, which it returns.
    fn check(&self, s: &dyn Solver) -> Result<Vec<(&'static str, Option<f64>)>> {
        let keep = || match &self.last_checkpoint {
            Some(p) => format!("the last good checkpoint is {}", p.display()),
            None => "no checkpoint was written yet".into(),
        };
        let hint = s.failure_hint().map(|h| format!(" {h}.")).unwrap_or_default();
        // A solver that iterates towards a steady state has no time step to reduce.
        let advice = match s.clock() {
            crate::solver::Clock::Iterations => "Reduce the CFL number or check the parameters",
            _ => "Reduce the time step or check the parameters",
        };
        if let Some(nf) = s.find_non_finite() {
            return Err(SimError::Run(format!(
                "non-finite value {} in field {} at node ({}) at step {}{}; {}. {advice}.{hint}",
                nf.value,
                nf.field,
                nf.at(),
                s.step(),
                report::time_text(s),
                keep()
            )));
        }
        let diagnostics = s.diagnostics();
        if let Some((name, value)) = crate::solver::non_finite_diagnostic(&diagnostics) {
            return Err(SimError::Run(format!(
                "the diagnostic {name} is {value} at step {}{} although the fields are finite; {}. \
                 Check the parameters: a value near the limits of the precision, or a quantity \
                 that divides by zero.",
                s.step(),
                report::time_text(s),
                keep()
            )));
        }
        if let Some(why) = s.invalid_state() {
            return Err(SimError::Run(format!(
                "{why}, at step {}{}; {}. {advice}.{hint}",
                s.step(),
                report::time_text(s),
                keep()
            )));
        }
        Ok(diagnostics)
    }

    fn write_output(&mut self, s: &dyn Solver) -> Result<()> {
        // ParaView needs a time for every file: under pseudo-time the iteration number.
        let time = match s.clock() {
            Clock::Physical => s.time(),
            Clock::Iterations => s.step() as f64,
        };
        let frame =
            Frame { time, compression: self.setup.case.output.compression, triangles: s.surface(), units: s.units() };
        let file = output::file_name(&self.setup.case.name, s.step(), &s.mesh());
        let fields = s.output_fields();
        match (s.piece(), &self.setup.comm) {
            (Some(piece), Some(comm)) => {
                let (dir, name) = (self.setup.out_dir, &self.setup.case.name);
                let own = output::piece_name(name, s.step(), comm.rank());
                // The frame is listed only once every piece is written.
                self.agree(output::write_piece(dir, &own, &s.mesh(), &piece, &fields, &frame))?;
                if !self.root() {
                    return Ok(());
                }
                let pieces: Vec<(String, [usize; 4])> = (piece.extents.iter().enumerate())
                    .map(|(rank, e)| (output::piece_name(name, s.step(), rank), *e))
                    .collect();
                for (f, _) in &pieces {
                    self.record(f)?;
                }
                let file = file.replace(".vti", ".pvti");
                self.record(&file)?;
                output::write_parallel(dir, &file, &s.mesh(), &pieces, &fields, &frame)?;
                self.pvd.add(s.step(), time, file)
            }
            _ => {
                self.record(&file)?;
                output::write(self.setup.out_dir, &file, &s.mesh(), &fields, &frame)?;
                self.pvd.add(s.step(), time, file)
            }
        }
    }

    /// The solver's back end, with fast math named: its results are not IEEE's.
    fn backend(&self, s: &dyn Solver) -> String {
        match s.backend() {
            b if b.starts_with("cuda") && self.setup.case.gpu.fast_math => format!("{b}, fast math"),
            b => b,
        }
    }

    fn write_checkpoint(&mut self, s: &dyn Solver) -> Result<()> {
        let dir = self.setup.out_dir;
        let path = checkpoint::path_for(dir, s.step());
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let meta = checkpoint::Meta {
            solver: s.kind().into(),
            step: s.step(),
            time: s.time(),
            precision: s.precision(),
            backend: self.backend(s),
            case_yaml: self.setup.case_text.into(),
        };
        // Collective in a decomposed run, so before anything that fails on rank 0 alone: rank
        // 0 gathers the state and writes it alone.
        let state = s.state();
        self.last_checkpoint = Some(path.clone());
        if !self.root() {
            return Ok(());
        }
        self.record(&name)?;
        self.record(&name.replace(".h5", ".xmf"))?;
        checkpoint::write(&path, &meta, &state, &s.mesh())?;
        // Keep the newest `keep` checkpoints of those this directory's runs wrote (a checkpoint
        // copied in to continue from is the user's).
        let ours = |p: &std::path::PathBuf| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            self.dir.as_ref().is_some_and(|d| d.wrote(name))
        };
        let all: Vec<_> = checkpoint::list(dir).into_iter().filter(|(_, p)| ours(p)).collect();
        for (_, old) in all.iter().take(all.len().saturating_sub(self.setup.case.checkpoint.keep)) {
            let _ = std::fs::remove_file(old);
            let _ = std::fs::remove_file(old.with_extension("xmf"));
        }
        Ok(())
    }
}

/// The progress bar on a terminal, else a log line every 10 s (nothing with `--quiet`).
struct Progress {
    bar: ProgressBar,
    quiet: bool,
    start_step: u64,
    last_step: u64,
    started: Instant,
    last_draw: Instant,
    last_log: Instant,
}

impl Progress {
    const DRAW: Duration = Duration::from_millis(100);
    const LOG: Duration = Duration::from_secs(10);

    fn new(quiet: bool, start_step: u64, last_step: u64, started: Instant) -> Self {
        let bar = if quiet { ProgressBar::hidden() } else { ProgressBar::new(last_step.saturating_sub(start_step)) };
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} steps  {per_sec}  ETA {eta}  {msg}",
            )
            .expect("valid template"),
        );
        Progress { bar, quiet, start_step, last_step, started, last_draw: started, last_log: started }
    }

    fn update(&mut self, s: &dyn Solver, force: bool) {
        if self.last_draw.elapsed() > Self::DRAW || force {
            self.bar.set_position(s.step() - self.start_step);
            let extra = s.status().map(|x| format!("  {x}")).unwrap_or_default();
            let at = match s.clock() {
                Clock::Physical => format!("t = {:.4e}", s.time()),
                Clock::Iterations => String::new(),
            };
            self.bar.set_message(format!("{at}{extra}"));
            self.last_draw = Instant::now();
        }
        if self.bar.is_hidden() && !self.quiet && self.last_log.elapsed() > Self::LOG {
            let rate = (s.step() - self.start_step) as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
            crate::say!("step {}/{}{}  {rate:.1} steps/s", s.step(), self.last_step, report::time_text(s));
            self.last_log = Instant::now();
        }
    }

    fn log(&self, line: &str) {
        if !self.quiet {
            crate::say!("{line}");
        }
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
