//! `sim run` and `sim check`: [`plan`] reads and checks everything before anything on disk
//! changes, [`driver`] runs the time loop and its scheduled activities, [`report`] says what
//! happened.

pub mod driver;
pub mod plan;
pub mod report;
pub mod schedule;

pub use plan::{Plan, RunOptions, plan};
pub use report::summary_text;

use crate::error::{Result, SimError, input};
use schedule::Stop;

/// `sim check`: what the run would do.
pub fn check(opts: &RunOptions) -> Result<String> {
    let plan = plan(opts)?;
    let solver = crate::solvers::build(&plan.case, plan.precision)?;
    let stop = Stop::of(&plan.case, opts.steps, solver.step());
    Ok(report::check_text(&plan.case, plan.precision, &plan.out_dir, solver.as_ref(), &stop))
}

/// `sim run`: returns the summary written to summary.json.
pub fn run(opts: &RunOptions) -> Result<serde_json::Value> {
    let plan = plan(opts)?;
    let case = &plan.case;
    let (device, note) = crate::solvers::choose_device(opts.backend.unwrap_or(case.backend), case)?;
    let threads = opts.threads.unwrap_or(case.threads);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| SimError::Run(format!("cannot start {threads} threads: {e}")))?;
    let mut solver = pool.install(|| match &plan.restart {
        Some((path, _, arrays)) => crate::solvers::build_for_restart(case, plan.precision, &device, path, arrays),
        None => crate::solvers::build_on(case, plan.precision, &device),
    })?;
    let restart = match plan.restart {
        Some((path, meta, arrays)) => {
            solver
                .restore(meta.step, meta.time, arrays)
                .map_err(|e| SimError::Input(format!("checkpoint {}: {e}", path.display())))?;
            Some(path)
        }
        None => None,
    };
    let stop = Stop::of(case, opts.steps, solver.step());
    if restart.is_some() && stop.done(solver.as_ref()) {
        return input(format!(
            "the checkpoint is at step {}{}, already at the end of the run ({}); raise time.end_time or \
             time.end_step in a case file given with --restart",
            solver.step(),
            report::time_text(solver.as_ref()),
            stop.text()
        ));
    }
    match restart {
        None => plan::prepare_fresh_dir(&plan.out_dir, opts.overwrite)?,
        // A restart may continue into a new directory (--out).
        Some(_) => std::fs::create_dir_all(&plan.out_dir).map_err(|e| {
            SimError::Input(format!("cannot create output directory {}: {e}", plan.out_dir.display()))
        })?,
    }
    if !opts.quiet
        && let Some(n) = note
    {
        eprintln!("{n}");
    }
    driver::install_ctrlc();
    let setup = driver::Setup {
        case,
        case_text: &plan.case_text,
        threads: pool.current_num_threads(),
        out_dir: &plan.out_dir,
        stop,
        quiet: opts.quiet,
        restart,
    };
    let mut driver = driver::Driver::new(setup, solver.as_ref())?;
    pool.install(|| driver.drive(solver.as_mut()))
}
