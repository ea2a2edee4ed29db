//! `sim run` and `sim check`: [`plan`] reads and checks everything before anything on disk
//! changes, [`driver`] runs the time loop and its scheduled activities, [`report`] says what
//! happened.

pub mod directory;
pub mod driver;
pub mod plan;
pub mod report;
pub mod schedule;
pub mod signals;

pub use plan::{Plan, RunOptions, plan};
pub use report::summary_text;

use std::path::Path;

use crate::error::{Result, SimError, input};
use crate::parallel::Processes;
use crate::solver::Solver;
use crate::solvers::{self, Device};
use schedule::Stop;

/// The most steps `sim check` replays to count a run's steps exactly (a few tens of ms).
const REPLAYED_STEPS: u64 = 10_000_000;

/// `sim check`: what the run would do, with the checks of `sim run` that need no fields.
pub fn check(opts: &RunOptions) -> Result<String> {
    check_on(opts, None)
}

/// [`check`] for a run on `ranks` MPI ranks (the number a launcher started): their process
/// grid, and the memory of one rank's part.
pub fn check_on(opts: &RunOptions, ranks: Option<usize>) -> Result<String> {
    let plan = plan(opts)?;
    let spec = plan.case.solver.spec();
    crate::validate::threads("threads", plan.case.threads)?;
    directory::not_held(&plan.out_dir)?;
    // The device the run would take, refused as the run refuses it.
    let (device, note) = solvers::choose_device(plan.case.backend, &plan.case, 0)?;
    // The block the run would take: the case's, else the tuned one.
    let device = match device {
        Device::Cuda(gpu, o) => {
            let (o, _) = crate::tune::resolve(&gpu, &o, plan.case.solver.kind(), spec.scheme_name(), plan.precision)?;
            Device::Cuda(gpu, o)
        }
        d => d,
    };
    let on_cpu = matches!(device, Device::Cpu(_));
    let backend = match (&device, note) {
        (_, Some(note)) => note,
        (Device::Cuda(gpu, _), None) => format!("backend cuda: CUDA device {}", gpu.name),
        (Device::Cpu(_), None) => "backend cpu".into(),
    };
    // The input data a checkpoint holds for its solver (a restart needs neither the files nor
    // that they are unchanged).
    let stored = match &plan.restart {
        Some(ck) => Some((ck.path(), ck.read_named(spec.restart_inputs())?)),
        None => None,
    };
    // Reads (and checks) the solver's input, e.g. a point cloud, before its size is estimated.
    let describe = match &stored {
        Some((path, arrays)) => spec.describe_restart(plan.precision, path, arrays)?,
        None => spec.describe(plan.precision)?,
    };
    let ranks = ranks.filter(|&n| n > 1);
    let grid = ranks.map(|n| solvers::decomposition(&plan.case, &device, n)).transpose()?;
    crate::solvers::check_memory(spec.memory_estimate(plan.precision) / ranks.unwrap_or(1))?;
    let (step, time) = plan.restart.as_ref().map_or((0, 0.0), |ck| (ck.meta.step, ck.meta.time));
    if let (Some(ck), Some((path, arrays))) = (&plan.restart, &stored) {
        // Attributes, dataset shapes and types against the solver's state; no array of the
        // state is read.
        ck.check(crate::solvers::build_for_restart(&plan.case, plan.precision, &device, path, arrays)?.as_ref())?;
    }
    // The initial state, built as the run builds it, on its device (whose kernels refuse a
    // block they cannot launch); on one process: under a launcher the whole state need not
    // fit one rank's memory.
    let built = match (&plan.restart, ranks) {
        (None, None) => Some(crate::solvers::build_on(&plan.case, plan.precision, &device)?),
        _ => None,
    };
    // An adaptive step (shallow water's `courant`) is known from the state only: its first
    // one, which the run also takes for its limits and the step counts it foresees.
    let adaptive = built.as_ref().is_some_and(|s| !s.dt_is_fixed());
    let stop = Stop::of(&plan.case, opts.steps, step);
    let dt = spec.nominal_dt().or_else(|| built.as_ref().and_then(|s| schedule::nominal_dt(s.as_ref())));
    stop.check_limits(step, time, dt, plan.precision)?;
    let unfinished = match &plan.restart {
        Some(ck) => ends_without_summary(&plan.out_dir, ck.path())?,
        None => false,
    };
    if plan.restart.is_some() && !unfinished && stop.done_at(step, time, dt.unwrap_or(0.0), spec.clock()) {
        return past_the_end(step, &report::time_at(spec.clock(), time), &stop);
    }
    // Checked as the run checks it, after the limits as there.
    if let Some(s) = &built {
        check_start(s.as_ref(), None)?;
    }
    // The driver's steps replayed where they are few enough: those that land on output
    // instants count too.
    let landing = schedule::Landing { end_time: plan.case.time.end_time, every_time: plan.case.output.every_time };
    let physical = spec.clock() == crate::solver::Clock::Physical;
    let replayed = dt.filter(|_| physical && !adaptive).and_then(|dt| stop.landed_last_step(&landing, step, time, dt, REPLAYED_STEPS));
    let exact = !adaptive && (replayed.is_some() || landing.every_time.is_none());
    let last = replayed.unwrap_or_else(|| stop.last_step(step, time, dt));
    let threads = match opts.threads.unwrap_or(plan.case.threads) {
        0 => rayon::current_num_threads(),
        n => n,
    };
    // The CPU's plans: a run on a device or on several ranks has neither.
    let tiling = spec.tiling(plan.precision, &plan.case.cpu, threads).filter(|_| on_cpu && ranks.is_none()).map(|t| format!("{t} on {threads} thread{}", if threads == 1 { "" } else { "s" }));
    // A restart writes a frame of its first state only where the series it continues lacks it.
    let first = plan.restart.is_none() || {
        // The series as the run resumes it (rebuilt from the frames where it is missing or cut short).
        let frames = directory::frames_at(&plan.out_dir, &plan.case.name, step)?;
        let series = crate::io::pvd::Pvd::resume(plan.out_dir.join(format!("{}.pvd", plan.case.name)), step, &frames).0;
        let due = driver::output_due_on_arrival(&driver::activities(&plan.case), step, time, spec.clock());
        due && driver::lacks_frame(&series.entries, step)
    };
    let text = report::check_text(&plan.case, plan.precision, &plan.out_dir, &describe, &stop, (step, last, exact, first), ranks);
    let flush = on_cpu && plan.case.cpu.subnormals == crate::cpu::Subnormals::Flush;
    let subnormals = if flush { "  subnormals: flushed to zero on the CPU (cpu.subnormals: flush)\n" } else { "" };
    let backend = match (ranks, grid) {
        (Some(n), Some([px, py])) => format!("  {backend}\n  MPI: {n} ranks on a {px} x {py} process grid\n"),
        _ => format!("  {backend}\n"),
    };
    // What `sim run` without --overwrite would refuse.
    let held = match &plan.restart {
        Some(ck) if directory::holds(&plan.out_dir, ck.path())? => {
            directory::restart_refused(&plan.out_dir, &continued(&plan.case, step, false))?
        }
        _ => directory::holds_files(&plan.out_dir)?,
    };
    let notes: String = (held.map(|why| format!("note: sim run refuses it as it is: {why}")).into_iter())
        .chain(one_process_note(&plan.case).filter(|_| ranks.is_none()))
        .map(|n| format!("  {n}\n"))
        .collect();
    let text = text + &backend + &tiling.map(|t| format!("  temporal blocking: {t}\n")).unwrap_or_default() + subnormals;
    Ok(crate::error::compact_numbers(&text).into_owned() + &notes)
}

/// The run of `case` continued from its checkpoint of `step`.
fn continued(case: &crate::case::Case, step: u64, overwrite: bool) -> directory::Continued<'_> {
    let result_files = solvers::entry(case.solver.kind()).map_or(&[][..], |e| e.result_files);
    directory::Continued { name: &case.name, step, result_files, overwrite }
}

/// A case whose `parallel.ranks` asks for several ranks, run as one process (without
/// `mpirun`, or `mpirun -np 1`): it runs, serially, and says so.
fn one_process_note(case: &crate::case::Case) -> Option<String> {
    let [px, py] = case.parallel.ranks?;
    let n = px.saturating_mul(py);
    (n > 1).then(|| {
        format!("note: parallel.ranks [{px}, {py}] asks for {n} ranks; this run is one process (start it with mpirun -np {n})")
    })
}

/// Whether checkpoint `ck` is in its run's directory `dir`, which holds no `summary.json`: where
/// the run ended there, writing the summary (or a result file) failed, and a restart from it
/// writes them instead of being refused as past the end.
fn ends_without_summary(dir: &Path, ck: &Path) -> Result<bool> {
    Ok(directory::holds(dir, ck)? && !dir.join("summary.json").exists())
}

/// The refusal of a restart whose checkpoint at `step` (`time`, as text) is at or past `stop`.
fn past_the_end<T>(step: u64, time: &str, stop: &Stop) -> Result<T> {
    input(format!(
        "the checkpoint is at step {step}{time}, already at or past the end of the run ({}); raise time.end_time \
         or time.end_step in a case file given with --restart",
        stop.text()
    ))
}

/// Refuse the state a run would start from where a value or a diagnostic is not finite: the
/// initial condition's (its parameters, not the stepping, are at fault) or the checkpoint's
/// `restart` (one written between two guard checks of a run that was failing, or a forged one).
fn check_start(solver: &dyn Solver, restart: Option<&Path>) -> Result<()> {
    let (precision, f32) = (solver.precision().name(), solver.precision() == crate::real::Precision::F32);
    if let Some(nf) = solver.find_non_finite() {
        let at = format!("the non-finite value {} in field {} at node ({})", nf.value, nf.field, nf.at());
        return input(match restart {
            Some(path) => format!("checkpoint {}: the state holds {at}; restart from an earlier one", path.display()),
            None => {
                let f32_way_out = if f32 { " or use precision: f64" } else { "" };
                format!(
                    "the initial state holds {at}: the case's initial-condition parameters overflow \
                     {precision} arithmetic; check them{f32_way_out}"
                )
            }
        });
    }
    if let Some((name, value)) = crate::solver::non_finite_diagnostic(&solver.diagnostics()) {
        let gives = format!("gives {value} for the diagnostic {name} (history.csv)");
        return input(match restart {
            Some(path) => format!("checkpoint {}: the state {gives}; restart from an earlier one", path.display()),
            None => format!(
                "the initial state {gives}: the case's parameters are too large or too small for \
                 {precision} arithmetic; check them"
            ),
        });
    }
    Ok(())
}

/// `r` as every rank of `procs` agrees on it (see [`crate::parallel::agree`]).
fn agreed<T>(procs: Option<&dyn Processes>, r: Result<T>) -> Result<T> {
    match procs {
        Some(p) => crate::parallel::agree(p, r),
        None => r,
    }
}

/// `sim run`: returns the summary written to summary.json.
pub fn run(opts: &RunOptions) -> Result<serde_json::Value> {
    run_on(opts, None)
}

/// [`run`] on the processes an MPI launcher started: with more than one, every rank runs its
/// part of the grid; each step of the set-up that can fail ends with the ranks agreeing on the
/// outcome, so that a failure on any rank stops all of them.
pub fn run_on(opts: &RunOptions, procs: Option<&dyn Processes>) -> Result<serde_json::Value> {
    let procs = procs.filter(|p| p.size() > 1);
    let plan = agreed(procs, plan(opts))?;
    let case = &plan.case;
    let local = procs.map_or(0, |_| crate::parallel::local_rank());
    let (device, mut note) = agreed(procs, solvers::choose_device(opts.backend.unwrap_or(case.backend), case, local))?;
    if procs.is_none() {
        note = note.into_iter().chain(one_process_note(case)).reduce(|a, b| format!("{a}\n{b}"));
    }
    let device = match device {
        Device::Cuda(gpu, o) => {
            let spec = case.solver.spec();
            let (o, tuned) = agreed(procs, crate::tune::resolve(&gpu, &o, case.solver.kind(), spec.scheme_name(), plan.precision))?;
            note = note.into_iter().chain(tuned).reduce(|a, b| format!("{a}\n{b}"));
            Device::Cuda(gpu, o)
        }
        cpu => cpu,
    };
    let threads = match opts.threads {
        Some(n) => crate::validate::threads("--threads", n)?,
        None => crate::validate::threads("threads", case.threads)?,
    };
    // `cpu.subnormals` concerns the CPU kernels; a CUDA run's host code keeps IEEE arithmetic.
    let subnormals = match device {
        Device::Cpu(_) => Some(case.cpu.subnormals),
        Device::Cuda(..) => None,
    };
    let pool = agreed(procs, subnormals.unwrap_or_default().pool(threads))?;
    let built = pool.install(|| {
        // The input data a checkpoint holds for its solver (see SolverSpec::restart_inputs).
        let inputs = match &plan.restart {
            Some(ck) => Some((ck.path(), ck.read_named(case.solver.spec().restart_inputs())?)),
            None => None,
        };
        let restart = inputs.as_ref().map(|(path, arrays)| (*path, &arrays[..]));
        match (restart, procs) {
            (restart, Some(p)) => {
                crate::solvers::build_parallel(case, plan.precision, &device, p, restart).map(|(s, c)| (s, Some(c)))
            }
            (Some((path, arrays)), None) => {
                Ok((crate::solvers::build_for_restart(case, plan.precision, &device, path, arrays)?, None))
            }
            (None, None) => Ok((crate::solvers::build_on(case, plan.precision, &device)?, None)),
        }
    });
    let (mut solver, comm) = agreed(procs, built)?;
    let prepared = (|| {
        let restart = match plan.restart {
            Some(ck) => {
                // Every dataset is checked against the solver's state layout before it is read
                // (under MPI every rank reads the whole checkpoint and keeps its block).
                let path = ck.path().to_path_buf();
                let (step, time) = (ck.meta.step, ck.meta.time);
                let arrays = ck.read_state(solver.as_ref())?;
                solver
                    .restore(step, time, arrays)
                    .map_err(|e| SimError::Input(format!("checkpoint {}: {e}", path.display())))?;
                Some(path)
            }
            None => None,
        };
        let stop = Stop::of(case, opts.steps, solver.step());
        stop.check_limits(solver.step(), solver.time(), schedule::nominal_dt(solver.as_ref()), solver.precision())?;
        let unfinished = match &restart {
            Some(path) => ends_without_summary(&plan.out_dir, path)?,
            None => false,
        };
        if unfinished && (solver.converged() || stop.done(solver.as_ref())) && !opts.quiet {
            crate::say!("note: the run ended at this checkpoint without writing summary.json; writing its results");
        }
        if restart.is_some() && solver.converged() && !unfinished {
            return input(format!(
                "the checkpoint is at step {}{}, where the run had reached its steady state ({}); there is nothing \
                 to continue",
                solver.step(),
                report::time_text(solver.as_ref()),
                solver.status().unwrap_or_default()
            ));
        }
        if restart.is_some() && stop.done(solver.as_ref()) && !unfinished {
            return past_the_end(solver.step(), &report::time_text(solver.as_ref()), &stop);
        }
        check_start(solver.as_ref(), restart.as_deref())?;
        // From here a signal waits for the first step's end (with a checkpoint), so that it
        // cannot stop the run directory's clean-up half-way.
        signals::install();
        // A restart continues in its checkpoint's directory, or starts another one (--out),
        // which is then taken as a fresh run's: refused if it holds files, unless --overwrite.
        // Rank 0 keeps it.
        let run_dir = match (&restart, procs.is_some_and(|p| p.rank() != 0)) {
            (_, true) => None,
            (Some(ck), false) if directory::holds(&plan.out_dir, ck)? => {
                Some(directory::RunDir::restart(&plan.out_dir, &continued(case, solver.step(), opts.overwrite))?)
            }
            (_, false) => Some(directory::RunDir::fresh(&plan.out_dir, opts.overwrite)?),
        };
        Ok((restart, stop, run_dir))
    })();
    let (restart, stop, run_dir) = agreed(procs, prepared)?;
    let quiet = opts.quiet || procs.is_some_and(|p| p.rank() != 0);
    if !quiet {
        note.into_iter().for_each(|n| crate::say!("{n}"));
        if let Some(tiling) = solver.tiling() {
            crate::say!("temporal blocking: {tiling} (cpu.temporal_block: {})", case.cpu.temporal_block.name());
        }
        if subnormals == Some(crate::cpu::Subnormals::Flush) {
            crate::say!("subnormals: flushed to zero (cpu.subnormals: flush)");
        }
    }
    let setup = driver::Setup {
        case,
        case_text: &plan.case_text,
        threads: pool.current_num_threads(),
        subnormals,
        out_dir: &plan.out_dir,
        stop,
        quiet,
        restart,
        backend_arg: opts.backend,
        comm,
    };
    let mut driver = agreed(procs, driver::Driver::new(setup, run_dir, solver.as_ref()))?;
    pool.install(|| driver.drive(solver.as_mut()))
}
