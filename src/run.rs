//! The simulation driver: sets up a fresh run or a restart, advances the solver, and owns the
//! schedules for VTK output, checkpoints, guard checks, progress and the final summary.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::case::{Backend, Case};
use crate::error::{Result, SimError, input};
use crate::io::{checkpoint, history::History, pvd::Pvd, vti};
use crate::real::Precision;
use crate::solver::Solver;

/// Command-line settings of `sim run`.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub case: Option<PathBuf>,
    /// A checkpoint file, a run directory (newest checkpoint) or `latest` (needs `case`).
    pub restart: Option<String>,
    pub out: Option<PathBuf>,
    pub backend: Option<Backend>,
    pub precision: Option<Precision>,
    pub threads: Option<usize>,
    /// Stop after this many steps (counted from the start or restart step).
    pub steps: Option<u64>,
    pub overwrite: bool,
    pub quiet: bool,
}

/// What a run is about to do, before anything is written.
pub struct Plan {
    pub case: Case,
    pub case_text: String,
    pub precision: Precision,
    pub out_dir: PathBuf,
    pub restart: Option<(PathBuf, checkpoint::Meta, Vec<crate::solver::StateArray>)>,
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Ctrl-C: the first finishes the step and checkpoints, a second exits at once.
fn install_ctrlc() {
    let _ = ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
}

/// Read and check everything a run needs; nothing on disk is changed.
pub fn plan(opts: &RunOptions) -> Result<Plan> {
    let given = match &opts.case {
        Some(p) => Some(Case::load(p)?),
        None => None,
    };
    let Some(restart) = &opts.restart else {
        let Some((mut case, case_text)) = given else {
            return input("give a case file, or --restart with a checkpoint");
        };
        if let Some(p) = opts.precision {
            case.precision = p;
        }
        let out_dir = opts.out.clone().unwrap_or_else(|| case.default_out_dir());
        return Ok(Plan { precision: case.precision, case, case_text, out_dir, restart: None });
    };

    let ck_path = resolve_restart(restart, opts, given.as_ref().map(|g| &g.0))?;
    let (meta, arrays) = checkpoint::read(&ck_path)?;
    let bad = |m: String| SimError::Input(format!("checkpoint {}: {m}", ck_path.display()));
    let stored = Case::parse(&meta.case_yaml, &format!("{} (stored case)", ck_path.display()))
        .map_err(|e| bad(e.to_string()))?;
    if stored.solver.kind() != meta.solver {
        return Err(bad(format!(
            "solver attribute '{}' does not match its stored case (solver {})",
            meta.solver,
            stored.solver.kind()
        )));
    }
    if let Some(p) = opts.precision.filter(|&p| p != meta.precision) {
        return input(format!(
            "--precision {}: the checkpoint {} was written in {}; a restart keeps the precision",
            p.name(),
            ck_path.display(),
            meta.precision.name()
        ));
    }
    let (case, case_text) = match given {
        None => (stored, meta.case_yaml.clone()),
        Some((new, text)) => {
            if new.solver != stored.solver {
                return input(format!(
                    "case file {}: its solver section differs from the one stored in {}; on restart only \
                     run controls (time, output, checkpoint, guard, threads, backend) may change",
                    opts.case.as_ref().unwrap().display(),
                    ck_path.display()
                ));
            }
            (new, text)
        }
    };
    let out_dir = opts
        .out
        .clone()
        .unwrap_or_else(|| ck_path.parent().map(Path::to_path_buf).unwrap_or_default());
    Ok(Plan { precision: meta.precision, case, case_text, out_dir, restart: Some((ck_path, meta, arrays)) })
}

/// The checkpoint a `--restart` value names.
fn resolve_restart(arg: &str, opts: &RunOptions, case: Option<&Case>) -> Result<PathBuf> {
    let dir = if arg == "latest" {
        match (&opts.out, case) {
            (Some(d), _) => d.clone(),
            (None, Some(c)) => c.default_out_dir(),
            (None, None) => return input("--restart latest needs the case file (or --out) to find the run directory"),
        }
    } else {
        let p = PathBuf::from(arg);
        if !p.is_dir() {
            return Ok(p);
        }
        p
    };
    match checkpoint::list(&dir).pop() {
        Some((_, p)) => Ok(p),
        None => input(format!("--restart {arg}: no checkpoint_*.h5 in {}", dir.display())),
    }
}

/// Files a run writes, which `--overwrite` may remove.
fn is_run_file(name: &str) -> bool {
    name == "history.csv"
        || name == "summary.json"
        || name.ends_with(".tmp")
        || name.ends_with(".pvd")
        || name.ends_with(".vti")
        || name.ends_with(".vtu")
        || name == "wall_cp.csv"
        || (name.starts_with("checkpoint_") && (name.ends_with(".h5") || name.ends_with(".xmf")))
}

/// Make `dir` ready for a fresh run without destroying earlier results by accident.
fn prepare_fresh_dir(dir: &Path, overwrite: bool) -> Result<()> {
    let entries: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    if !entries.is_empty() {
        if !overwrite {
            return input(format!(
                "output directory {} already holds files (e.g. {}); pass --overwrite to replace them, \
                 or continue the run with: sim run --restart {}",
                dir.display(),
                entries[0],
                dir.display()
            ));
        }
        for name in entries.iter().filter(|n| is_run_file(n)) {
            std::fs::remove_file(dir.join(name))
                .map_err(|e| SimError::Run(format!("cannot remove {}: {e}", dir.join(name).display())))?;
        }
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| SimError::Input(format!("cannot create output directory {}: {e}", dir.display())))
}

/// When the run stops.
#[derive(Clone, Copy, Debug)]
struct Stop {
    end_step: Option<u64>,
    end_time: Option<f64>,
}

impl Stop {
    fn done(&self, s: &dyn Solver) -> bool {
        self.end_step.is_some_and(|e| s.step() >= e) || self.end_time.is_some_and(|t| t - s.time() <= 1e-9 * s.dt())
    }
    /// Length of the next step: the nominal dt, shortened to land on end_time.
    fn next_dt(&self, s: &dyn Solver) -> f64 {
        match self.end_time {
            Some(t) if t - s.time() < s.dt() => t - s.time(),
            _ => s.dt(),
        }
    }
    /// Step number at which the run will stop.
    fn last_step(&self, s: &dyn Solver) -> u64 {
        let by_time = self.end_time.map(|t| s.step() + ((t - s.time()) / s.dt() - 1e-9).ceil().max(0.0) as u64);
        match (self.end_step, by_time) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => s.step(),
        }
    }
}

/// Is an output due after a step from `t_prev` to the solver's current state?
fn output_due(case: &Case, s: &dyn Solver, t_prev: f64) -> bool {
    let by_steps = case.output.every_steps.is_some_and(|n| s.step().is_multiple_of(n));
    let by_time = case.output.every_time.is_some_and(|dt| {
        let k = |t: f64| (t / dt + 1e-9).floor();
        k(s.time()) > k(t_prev)
    });
    by_steps || by_time
}

/// `sim check`: what the run would do.
pub fn check(opts: &RunOptions) -> Result<String> {
    let plan = plan(opts)?;
    let solver = crate::solvers::build(&plan.case, plan.precision)?;
    let case = &plan.case;
    let stop = stop_of(case, opts, solver.step());
    let last = stop.last_step(solver.as_ref());
    let mut s = format!("case {}: solver {}, precision {}\n", case.name, case.solver.kind(), plan.precision.name());
    for line in solver.describe() {
        s += &format!("  {line}\n");
    }
    let mem = crate::solvers::memory_estimate(case, plan.precision);
    s += &format!("  memory: {:.1} MiB of field storage\n", mem as f64 / (1u64 << 20) as f64);
    s += &format!("  steps: {last} (stop at {})\n", stop_text(&stop));
    let outputs = match (case.output.every_steps, case.output.every_time) {
        (Some(n), _) => format!("every {n} steps (about {} files)", last / n + 2),
        (None, Some(t)) => format!("every {t} of simulated time"),
        (None, None) => "initial and final state".into(),
    };
    s += &format!("  output: {} -> {}\n", outputs, plan.out_dir.display());
    let ck = match case.checkpoint.every_steps {
        Some(n) => format!("every {n} steps and at the end, keeping {}", case.checkpoint.keep),
        None => format!("at the end, keeping {}", case.checkpoint.keep),
    };
    s += &format!("  checkpoints: {ck}\n");
    s += &format!("  guard: NaN/Inf check and history.csv row every {} steps\n", case.guard.check_every);
    if plan.out_dir.exists() {
        s += &format!("  note: {} exists; a fresh run needs --overwrite\n", plan.out_dir.display());
    }
    Ok(s)
}

fn stop_text(stop: &Stop) -> String {
    match (stop.end_step, stop.end_time) {
        (Some(n), Some(t)) => format!("step {n} or t = {t}"),
        (Some(n), None) => format!("step {n}"),
        (None, Some(t)) => format!("t = {t}"),
        (None, None) => "start".into(),
    }
}

fn stop_of(case: &Case, opts: &RunOptions, start: u64) -> Stop {
    let by_opt = opts.steps.map(|n| start + n);
    let end_step = match (case.time.end_step, by_opt) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Stop { end_step, end_time: case.time.end_time }
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
    let mut solver = pool.install(|| crate::solvers::build_on(case, plan.precision, &device))?;
    let restart_ck = match plan.restart {
        Some((path, meta, arrays)) => {
            let (step, time) = (meta.step, meta.time);
            solver
                .restore(step, time, arrays)
                .map_err(|e| SimError::Input(format!("checkpoint {}: {e}", path.display())))?;
            Some(path)
        }
        None => None,
    };
    let stop = stop_of(case, opts, solver.step());
    if restart_ck.is_some() && stop.done(solver.as_ref()) {
        return input(format!(
            "the checkpoint is at step {} (t = {}), already at the end of the run ({}); raise time.end_time or \
             time.end_step in a case file given with --restart",
            solver.step(),
            solver.time(),
            stop_text(&stop)
        ));
    }
    if restart_ck.is_none() {
        prepare_fresh_dir(&plan.out_dir, opts.overwrite)?;
    }
    if !opts.quiet
        && let Some(n) = note
    {
        eprintln!("{n}");
    }
    install_ctrlc();
    let mut driver = Driver {
        case,
        case_text: &plan.case_text,
        threads: pool.current_num_threads(),
        out_dir: &plan.out_dir,
        stop,
        quiet: opts.quiet,
        start_step: solver.step(),
        pvd: Pvd::resume(plan.out_dir.join(format!("{}.pvd", case.name)), solver.step()),
        history: History::open(crate::io::history::path_in(&plan.out_dir), restart_ck.as_ref().map(|_| solver.step()))?,
        last_checkpoint: restart_ck,
        compute: Duration::ZERO,
        started: Instant::now(),
    };
    pool.install(|| driver.drive(solver.as_mut()))
}

struct Driver<'a> {
    case: &'a Case,
    case_text: &'a str,
    threads: usize,
    out_dir: &'a Path,
    stop: Stop,
    quiet: bool,
    start_step: u64,
    pvd: Pvd,
    history: History,
    last_checkpoint: Option<PathBuf>,
    /// Time spent inside `advance`, for the bandwidth figure.
    compute: Duration,
    started: Instant,
}

impl Driver<'_> {
    fn drive(&mut self, s: &mut dyn Solver) -> Result<serde_json::Value> {
        if self.start_step == 0 {
            self.write_output(s)?;
            self.guard(s)?;
        } else {
            self.pvd.save()?;
            self.log(&format!("restarting from step {} (t = {:.6e})", s.step(), s.time()));
        }
        let last = self.stop.last_step(s);
        let bar = self.progress_bar(last);
        let mut last_draw = Instant::now();
        let mut last_log = Instant::now();
        let mut status = "completed";
        while !self.stop.done(s) {
            let t_prev = s.time();
            let dt = self.stop.next_dt(s);
            let t0 = Instant::now();
            s.advance(dt)?;
            self.compute += t0.elapsed();
            let done = self.stop.done(s);
            let interrupted = INTERRUPTED.load(Ordering::SeqCst);
            let ck_due = done || interrupted || self.case.checkpoint.every_steps.is_some_and(|n| s.step().is_multiple_of(n));
            // A checkpoint is always preceded by a guard check, so it never holds NaN/Inf.
            let guard_due = ck_due || s.step().is_multiple_of(self.case.guard.check_every);
            let out_due = done || output_due(self.case, s, t_prev);
            if guard_due || out_due {
                s.sync()?;
            }
            if guard_due {
                self.guard(s)?;
            }
            if out_due {
                self.write_output(s)?;
            }
            if ck_due {
                self.write_checkpoint(s)?;
            }
            if last_draw.elapsed() > Duration::from_millis(100) || done {
                bar.set_position(s.step() - self.start_step);
                let extra = s.status().map(|x| format!("  {x}")).unwrap_or_default();
                bar.set_message(format!("t = {:.4e}{extra}", s.time()));
                last_draw = Instant::now();
            }
            if bar.is_hidden() && !self.quiet && last_log.elapsed() > Duration::from_secs(10) {
                eprintln!("step {}/{}  t = {:.6e}  {:.1} steps/s", s.step(), last, s.time(), self.steps_per_s(s));
                last_log = Instant::now();
            }
            if s.converged() && !done {
                s.sync()?;
                if !s.step().is_multiple_of(self.case.guard.check_every) {
                    self.guard(s)?;
                }
                self.write_output(s)?;
                self.write_checkpoint(s)?;
                status = "converged";
                break;
            }
            if interrupted && !done {
                status = "interrupted";
                break;
            }
        }
        bar.finish_and_clear();
        s.write_results(self.out_dir)?;
        let summary = self.summary(s, status);
        let text = serde_json::to_string_pretty(&summary).expect("summary serialises");
        crate::io::write_atomic(&self.out_dir.join("summary.json"), text.as_bytes())?;
        if status == "interrupted" {
            let ck = self.last_checkpoint.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
            return Err(SimError::Interrupted(format!(
                "interrupted at step {} (t = {:.6e}); checkpoint written. Continue with: sim run --restart {ck}",
                s.step(),
                s.time()
            )));
        }
        Ok(summary)
    }

    fn steps_per_s(&self, s: &dyn Solver) -> f64 {
        (s.step() - self.start_step) as f64 / self.started.elapsed().as_secs_f64().max(1e-9)
    }

    fn progress_bar(&self, last: u64) -> ProgressBar {
        if self.quiet {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::new(last.saturating_sub(self.start_step));
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} steps  {per_sec}  ETA {eta}  {msg}",
            )
            .expect("valid template"),
        );
        bar
    }

    fn log(&self, line: &str) {
        if !self.quiet {
            eprintln!("{line}");
        }
    }

    /// NaN/Inf check plus a history row.
    fn guard(&mut self, s: &dyn Solver) -> Result<()> {
        if let Some(nf) = s.find_non_finite() {
            let keep = match &self.last_checkpoint {
                Some(p) => format!("the last good checkpoint is {}", p.display()),
                None => "no checkpoint was written yet".into(),
            };
            let at: Vec<String> = nf.index.iter().map(|i| i.to_string()).collect();
            return Err(SimError::Run(format!(
                "non-finite value {} in field {} at node ({}) at step {} (t = {:.6e}); {keep}. \
                 Reduce the time step or check the parameters.",
                nf.value,
                nf.field,
                at.join(", "),
                s.step(),
                s.time()
            )));
        }
        let wall = self.started.elapsed().as_secs_f64();
        self.history.append(s.step(), s.time(), wall, &s.diagnostics())
    }

    fn write_output(&mut self, s: &dyn Solver) -> Result<()> {
        let file = match s.points() {
            Some(points) => {
                let file = format!("{}_{:08}.vtu", self.case.name, s.step());
                crate::io::vtu::write(&self.out_dir.join(&file), &points, &s.output_fields())?;
                file
            }
            None => {
                let file = format!("{}_{:08}.vti", self.case.name, s.step());
                vti::write(&self.out_dir.join(&file), &s.grid(), &s.output_fields())?;
                file
            }
        };
        self.pvd.add(s.step(), s.time(), file)
    }

    fn write_checkpoint(&mut self, s: &dyn Solver) -> Result<()> {
        let path = checkpoint::path_for(self.out_dir, s.step());
        let meta = checkpoint::Meta {
            solver: s.kind().into(),
            step: s.step(),
            time: s.time(),
            precision: s.precision(),
            backend: s.backend(),
            case_yaml: self.case_text.into(),
        };
        checkpoint::write_with_points(&path, &meta, &s.state(), &s.grid(), s.points().as_deref())?;
        self.last_checkpoint = Some(path);
        // Keep the newest `keep` checkpoints.
        let all = checkpoint::list(self.out_dir);
        for (_, old) in all.iter().take(all.len().saturating_sub(self.case.checkpoint.keep)) {
            let _ = std::fs::remove_file(old);
            let _ = std::fs::remove_file(old.with_extension("xmf"));
        }
        Ok(())
    }

    fn summary(&self, s: &dyn Solver, status: &str) -> serde_json::Value {
        let steps_run = s.step() - self.start_step;
        let compute = self.compute.as_secs_f64();
        let per_step = compute / steps_run.max(1) as f64;
        let nodes = s.grid().nodes() as f64;
        serde_json::json!({
            "sim_version": env!("CARGO_PKG_VERSION"),
            "case": self.case.name,
            "solver": s.kind(),
            "status": status,
            "backend": s.backend(),
            "precision": s.precision().name(),
            "threads": self.threads,
            "start_step": self.start_step,
            "step": s.step(),
            "steps_run": steps_run,
            "time": s.time(),
            "dt": s.dt(),
            "wall_time_s": self.started.elapsed().as_secs_f64(),
            "compute_time_s": compute,
            "performance": {
                "time_per_step_s": per_step,
                "bw_eff_GBps": if steps_run > 0 { s.bytes_per_step() / per_step / 1e9 } else { 0.0 },
                "mcells_per_s": if steps_run > 0 { nodes / per_step / 1e6 } else { 0.0 },
            },
            "errors": s.report(),
            "outputs": self.pvd.entries.len(),
            "checkpoint": self.last_checkpoint.as_ref().map(|p| p.display().to_string()),
        })
    }
}

/// Human-readable end-of-run summary.
pub fn summary_text(v: &serde_json::Value) -> String {
    let mut s = format!(
        "{} ({}, {}, {}, {} threads): {} at step {}, t = {:.6e}\n",
        v["case"].as_str().unwrap_or(""),
        v["solver"].as_str().unwrap_or(""),
        v["backend"].as_str().unwrap_or(""),
        v["precision"].as_str().unwrap_or(""),
        v["threads"],
        v["status"].as_str().unwrap_or(""),
        v["step"],
        v["time"].as_f64().unwrap_or(0.0)
    );
    s += &format!(
        "  {} steps in {:.2} s wall ({:.2} s computing): {:.3e} s/step, BW_e = {:.2} GB/s, {:.1} Mcells/s\n",
        v["steps_run"],
        v["wall_time_s"].as_f64().unwrap_or(0.0),
        v["compute_time_s"].as_f64().unwrap_or(0.0),
        v["performance"]["time_per_step_s"].as_f64().unwrap_or(0.0),
        v["performance"]["bw_eff_GBps"].as_f64().unwrap_or(0.0),
        v["performance"]["mcells_per_s"].as_f64().unwrap_or(0.0),
    );
    if let Some(e) = v["errors"].as_object() {
        let parts: Vec<String> = e
            .iter()
            .filter_map(|(k, x)| x.as_f64().map(|f| format!("{k} = {f:.3e}")))
            .collect();
        if !parts.is_empty() {
            s += &format!("  vs {}: {}\n", e.get("reference").and_then(|r| r.as_str()).unwrap_or("reference"), parts.join(", "));
        }
    }
    s += &format!("  {} output files", v["outputs"]);
    if let Some(c) = v["checkpoint"].as_str() {
        s += &format!(", checkpoint {c}");
    }
    s
}
