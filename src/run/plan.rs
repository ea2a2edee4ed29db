//! What a run is about to do, read and checked before anything on disk changes: the case,
//! the checkpoint of a restart, the output directory.

use std::path::{Path, PathBuf};

use crate::case::{Backend, Case};
use crate::error::{Result, SimError, input};
use crate::io::checkpoint;
use crate::real::Precision;

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
    /// The checkpoint of a restart: open, its attributes and stored case checked; its arrays
    /// are read by [`checkpoint::Opened::read_state`] once the solver is built.
    pub restart: Option<checkpoint::Opened>,
}

/// Read and check everything a run needs; nothing on disk is changed.
pub fn plan(opts: &RunOptions) -> Result<Plan> {
    if opts.steps == Some(0) {
        return input("--steps 0: give at least one step");
    }
    let mut plan = unresolved_plan(opts)?;
    if plan.precision == crate::real::Precision::F32 {
        crate::validate::fits_f32(&plan.case.solver)?;
    }
    plan.out_dir = super::directory::resolve(&plan.out_dir)?;
    Ok(plan)
}

fn unresolved_plan(opts: &RunOptions) -> Result<Plan> {
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

    restart_plan(restart, opts, given)
}

/// The plan of `--restart`: the checkpoint's stored case, or `given` if it changes only run
/// controls.
fn restart_plan(restart: &str, opts: &RunOptions, given: Option<(Case, String)>) -> Result<Plan> {
    let ck_path = resolve_restart(restart, opts, given.as_ref().map(|g| &g.0))?;
    crate::io::probe::check(&ck_path)?;
    let ck = checkpoint::open(&ck_path)?;
    if !ck.has_checksum() {
        crate::say!(
            "warning: checkpoint {} is format version {} and has no checksum; its integrity is not verified",
            ck_path.display(),
            ck.version()
        );
    }
    let meta = &ck.meta;
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
    // Only a case file given now names a directory (the stored case's relative paths are not
    // resolved against its folder).
    let asked_dir = given.as_ref().and_then(|(c, _)| c.output.dir.clone());
    let (case, case_text) = match given {
        None => (stored, meta.case_yaml.clone()),
        Some((new, text)) => {
            // As written: the given case's relative paths are resolved against its folder,
            // the stored case's are not.
            let written = Case::parse(&text, &opts.case.as_ref().unwrap().display().to_string())?;
            // The name prefixes the run's files and its `.pvd` series, which the restart continues.
            if written.name != stored.name {
                return input(format!(
                    "case file {}: name: {}, but the checkpoint {} was written by the case named {}; a restart keeps \
                     the name (it names the output files)",
                    opts.case.as_ref().unwrap().display(),
                    written.name,
                    ck_path.display(),
                    stored.name
                ));
            }
            if written.solver != stored.solver {
                return input(format!(
                    "case file {}: its solver section differs from the one stored in {}; on restart only \
                     run controls (time, output, checkpoint, guard, threads, backend, cpu, gpu, parallel) may change",
                    opts.case.as_ref().unwrap().display(),
                    ck_path.display()
                ));
            }
            // The stored case's own precision (or the checkpoint's, where `--precision`
            // overrode it) is no change; any other would be silently ignored.
            if written.precision != stored.precision && written.precision != meta.precision {
                return input(format!(
                    "case file {}: precision: {}, but the checkpoint {} was written in {}; a restart keeps the precision",
                    opts.case.as_ref().unwrap().display(),
                    written.precision.name(),
                    ck_path.display(),
                    meta.precision.name()
                ));
            }
            (new, text)
        }
    };
    let out_dir = match &opts.out {
        Some(d) => d.clone(),
        None => {
            let dir = ck_path.parent().map(Path::to_path_buf).unwrap_or_default();
            if let Some(wanted) = asked_dir.filter(|w| !same_directory(w, &dir)) {
                crate::say!(
                    "note: the restart continues in the checkpoint's directory {}, not in output.dir {} of the case \
                     file; --out {} writes there",
                    dir.display(),
                    wanted.display(),
                    wanted.display()
                );
            }
            dir
        }
    };
    Ok(Plan { precision: meta.precision, case, case_text, out_dir, restart: Some(ck) })
}

/// Whether `a` and `b` name one directory (a path that does not exist names none).
fn same_directory(a: &Path, b: &Path) -> bool {
    let here = |p: &Path| if p.as_os_str().is_empty() { Path::new(".").to_path_buf() } else { p.to_path_buf() };
    let (a, b) = (here(a), here(b));
    matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(a), Ok(b)) if a == b)
}

/// The checkpoint a restart with `opts` reads, where it can be told (None otherwise, or
/// without `--restart`; [`plan`] then reports why).
pub fn restart_checkpoint(opts: &RunOptions) -> Option<PathBuf> {
    let case = match &opts.case {
        Some(p) => Some(Case::load(p).ok()?.0),
        None => None,
    };
    resolve_restart(opts.restart.as_deref()?, opts, case.as_ref()).ok()
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
