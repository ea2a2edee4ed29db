//! The run directory, which `sim` treats as its own: its path is resolved before anything is
//! checked, a manifest lists every file a run wrote (`--overwrite` removes only those), an
//! advisory lock keeps a second process out for the run's lifetime, and the temporary files
//! of a killed run are removed when it is continued.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Component, Path, PathBuf};

use crate::error::{Result, SimError, input};

/// The manifest: one file name per line, every file this directory's runs wrote.
pub const MANIFEST: &str = ".sim-manifest";
/// The lock file; holds the pid of the running process.
pub const LOCK: &str = ".sim-lock";
/// Created and removed at once under the lock: a directory that takes no new file is refused
/// before anything in it changes.
const WRITE_CHECK: &str = ".sim-write-check";

/// `p` made absolute with `..` and symbolic links resolved: the existing part by the file
/// system, the part that does not exist yet by its names.
pub fn resolve(p: &Path) -> Result<PathBuf> {
    let cwd = std::env::current_dir().map_err(|e| SimError::Input(format!("cannot read the working directory: {e}")))?;
    let absolute = cwd.join(p);
    let mut existing = absolute.as_path();
    while !existing.exists()
        && let Some(parent) = existing.parent()
    {
        existing = parent;
    }
    let missing = absolute.strip_prefix(existing).map(Path::to_path_buf).unwrap_or_default();
    let mut out = existing
        .canonicalize()
        .map_err(|e| SimError::Input(format!("cannot resolve output directory {}: {e}", p.display())))?;
    for c in missing.components() {
        match c {
            Component::Normal(name) => out.push(name),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Why a fresh run without `--overwrite` refuses `path`: it holds files (and what to do).
pub fn holds_files(path: &Path) -> Result<Option<String>> {
    let held = entries(path);
    let Some(first) = held.first() else { return Ok(None) };
    // Continuing is an option only where there is a checkpoint to continue from.
    let continued = held.iter().any(|n| n.starts_with("checkpoint_") && n.ends_with(".h5"));
    let listed = manifest(path)?;
    // A file that sim did not write but a run would: --overwrite refuses it too (refuse_foreign).
    let clash = held.iter().map(|n| n.strip_suffix(".tmp").unwrap_or(n)).find(|n| !listed.contains(*n) && is_run_file(n));
    let way_out = match (clash, listed.is_empty()) {
        (Some(name), _) => format!("{name}, which sim did not write, has the name of a file a run writes: move it away or choose another --out"),
        (None, true) => "none of them a run's: choose another --out, or pass --overwrite to write beside them".to_string(),
        (None, false) => format!(
            "pass --overwrite to replace the files of the earlier run{}",
            if continued { format!(", or continue it with: sim run --restart {}", path.display()) } else { String::new() }
        ),
    };
    Ok(Some(format!("output directory {} already holds files (e.g. {first}); {way_out}", path.display())))
}

/// Whether the resolved directory `dir` holds the file `file`.
pub fn holds(dir: &Path, file: &Path) -> Result<bool> {
    Ok(resolve(file.parent().unwrap_or(Path::new("")))? == dir)
}

/// Whether `name` is one of the files a run writes: the driver's and every solver's result
/// files (so a foreign file by that name is never overwritten).
pub fn is_run_file(name: &str) -> bool {
    is_result_file(name)
        || name.ends_with(".pvd")
        || name.ends_with(".vti")
        || name.ends_with(".vtu")
        || name.ends_with(".pvti")
        || (name.starts_with("checkpoint_") && (name.ends_with(".h5") || name.ends_with(".xmf")))
}

/// Whether `name` is one of the files a run writes whatever its case: the history, the
/// summary and the solvers' result files.
fn is_result_file(name: &str) -> bool {
    name == "history.csv" || name == "summary.json" || crate::solvers::SOLVERS.iter().any(|e| e.result_files.contains(&name))
}

/// A run continued from its checkpoint of step `step` (see [`RunDir::restart`]).
#[derive(Clone, Copy)]
pub struct Continued<'a> {
    /// The case's name, which prefixes its series and frames.
    pub name: &'a str,
    pub step: u64,
    /// The files the solver writes at the end of a run besides `summary.json`.
    pub result_files: &'a [&'a str],
    /// Remove the checkpoints after `step` rather than refuse them.
    pub overwrite: bool,
}

impl Continued<'_> {
    /// Whether `n` is a file of the case from after the restart step.
    fn later(&self, n: &str) -> bool {
        step_of(n, self.name).is_some_and(|k| k > self.step)
    }

    /// Whether `n` is written at a run's end.
    fn ends(&self, n: &str) -> bool {
        n == "summary.json" || self.result_files.contains(&n)
    }
}

/// A locked run directory with its manifest.
pub struct RunDir {
    path: PathBuf,
    _lock: File,
    manifest: File,
    listed: BTreeSet<String>,
}

impl RunDir {
    /// The directory of a fresh run. A directory holding files is refused unless `overwrite`;
    /// then the files of earlier runs (those in the manifest) are removed, and files `sim` did
    /// not write are left alone, unless a run would write a file of the same name.
    pub fn fresh(path: &Path, overwrite: bool) -> Result<RunDir> {
        not_held(path)?;
        if !overwrite && let Some(why) = holds_files(path)? {
            return input(why);
        }
        let listed = manifest(path)?;
        // Before anything is created there, and again under the lock.
        refuse_foreign(path, &listed, |_| true)?;
        let mut dir = Self::open(path)?;
        refuse_foreign(path, &dir.listed, |_| true)?;
        for name in std::mem::take(&mut dir.listed) {
            remove(&path.join(&name))?;
            remove(&path.join(format!("{name}.tmp")))?;
        }
        dir.manifest.set_len(0).map_err(|e| dir.err(MANIFEST, e))?;
        Ok(dir)
    }

    /// The directory of `run`, continued from its checkpoint in that directory. Refused: a
    /// directory of another case's run, files of a run that sim did not write (a checkpoint
    /// copied in to continue from aside, and any up to the restart step, which the run does not
    /// write again), and the checkpoints after the restart step unless `overwrite` (they would
    /// be lost). The run continues from its step, so what its runs wrote after it is removed
    /// (the newest first): those checkpoints, the frames (the series and the history drop them
    /// too), the summary and result files of the run's end, the temporary files of a killed
    /// run and sidecars whose checkpoint is gone.
    pub fn restart(path: &Path, run: &Continued) -> Result<RunDir> {
        not_held(path)?;
        // Before the lock file changes, and again under the lock.
        refuse_restart(path, &manifest(path)?, run)?;
        let dir = Self::open(path)?;
        refuse_restart(path, &dir.listed, run)?;
        let listed = |n: &str| is_run_file(n) && dir.wrote(n);
        let stale = entries(path).into_iter().filter(|n| {
            n.strip_suffix(".tmp").is_some_and(listed)
                || (listed(n) && (run.later(n) || run.ends(n)))
                || (n.ends_with(".xmf") && listed(n) && !path.join(n).with_extension("h5").exists())
        });
        for n in removal_order(stale.collect()) {
            remove(&path.join(n))?;
        }
        Ok(dir)
    }

    /// Create (if needed) and lock `path`, and read its manifest.
    fn open(path: &Path) -> Result<RunDir> {
        std::fs::create_dir_all(path)
            .map_err(|e| SimError::Input(format!("cannot create output directory {}: {e}", path.display())))?;
        let err = |what: &str, e: std::io::Error| match e.kind() {
            std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
                SimError::Input(format!("output directory {} takes no new files ({what}: {e})", path.display()))
            }
            _ => SimError::Input(format!("{}: {e}", path.join(what).display())),
        };
        let mut lock = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path.join(LOCK)).map_err(|e| err(LOCK, e))?;
        if lock.try_lock().is_err() {
            return in_use(path, lock);
        }
        let check = path.join(WRITE_CHECK);
        File::create(&check).and_then(|_| std::fs::remove_file(&check)).map_err(|e| {
            SimError::Input(format!("output directory {} takes no new files: {e}", path.display()))
        })?;
        lock.set_len(0).and_then(|_| lock.rewind()).and_then(|_| write!(lock, "{}", std::process::id())).map_err(|e| err(LOCK, e))?;
        let listed = manifest(path)?;
        let manifest = OpenOptions::new().append(true).create(true).open(path.join(MANIFEST)).map_err(|e| err(MANIFEST, e))?;
        Ok(RunDir { path: path.to_path_buf(), _lock: lock, manifest, listed })
    }

    /// The frames of case `name` up to `step` that this directory's runs wrote and that are
    /// there, with their steps (whole frames: the `.pvti` of a decomposed run, not its pieces).
    pub fn frames(&self, name: &str, step: u64) -> Vec<(u64, String)> {
        listed_frames(&self.path, &self.listed, name, step)
    }

    /// Note that the run wrote `name` (before or right after writing it).
    pub fn record(&mut self, name: &str) -> Result<()> {
        if self.listed.insert(name.to_string()) {
            writeln!(self.manifest, "{name}").map_err(|e| SimError::Run(format!("{}: {e}", self.path.join(MANIFEST).display())))?;
        }
        Ok(())
    }

    /// Whether a run in this directory wrote `name`.
    pub fn wrote(&self, name: &str) -> bool {
        self.listed.contains(name)
    }

    fn err(&self, what: &str, e: std::io::Error) -> SimError {
        SimError::Run(format!("{}: {e}", self.path.join(what).display()))
    }
}

/// The order in which a restart removes the files `stale` (sorted by name): the checkpoints
/// first, the newest first, then the rest, the latest steps first. A removal cut short then
/// leaves a newest checkpoint no later than any frame, history row or summary still there,
/// which a restart from the directory continues.
fn removal_order(stale: Vec<String>) -> Vec<String> {
    let (mut checkpoints, mut rest): (Vec<_>, Vec<_>) = stale.into_iter().partition(|n| n.ends_with(".h5"));
    checkpoints.reverse();
    rest.reverse();
    checkpoints.into_iter().chain(rest).collect()
}

/// Refuse continuing `run` in `path`, whose manifest lists `listed` (see [`RunDir::restart`]).
fn refuse_restart(path: &Path, listed: &BTreeSet<String>, run: &Continued) -> Result<()> {
    let Continued { name, step, overwrite, .. } = *run;
    let series = format!("{name}.pvd");
    let written_again = |n: &str| run.later(n) || run.ends(n) || n == "history.csv" || n == series;
    if let Some(other) = listed.iter().find(|n| n.ends_with(".pvd") && **n != series) {
        return input(format!(
            "output directory {} holds the run of another case ({other}); a checkpoint of case {name} \
             continues in a directory of its own: choose one with --out",
            path.display()
        ));
    }
    refuse_foreign(path, listed, written_again)?;
    let checkpoints: Vec<String> =
        entries(path).into_iter().filter(|n| n.ends_with(".h5") && run.later(n) && listed.contains(n)).collect();
    match (checkpoints.first(), overwrite) {
        (Some(first), false) => input(format!(
            "output directory {} holds checkpoints after step {step} ({first}{}), which continuing from \
             step {step} would replace; pass --overwrite to remove them, or continue into another directory \
             with --out",
            path.display(),
            if checkpoints.len() > 1 { format!(" and {} more", checkpoints.len() - 1) } else { String::new() }
        )),
        _ => Ok(()),
    }
}

/// Why `sim run` would refuse to continue `run` in `path` as it is (for `sim check`).
pub fn restart_refused(path: &Path, run: &Continued) -> Result<Option<String>> {
    match refuse_restart(path, &manifest(path)?, run) {
        Err(SimError::Input(why)) => Ok(Some(why)),
        r => r.map(|()| None),
    }
}

/// The error for `path`, locked by another run whose lock file is `lock` (it names its process).
fn in_use<T>(path: &Path, mut lock: File) -> Result<T> {
    let mut pid = String::new();
    let _ = lock.read_to_string(&mut pid);
    input(format!(
        "output directory {} is in use by another sim run (process {}); wait for it to end or choose another \
         directory",
        path.display(),
        pid.trim()
    ))
}

/// Refuse a run directory path that names a file (or lies under one), or a directory another
/// run holds (its files in the making included): checked before anything there is read or
/// changed, and by `sim check`.
pub fn not_held(path: &Path) -> Result<()> {
    if let Some(file) = path.ancestors().find(|a| a.exists() && !a.is_dir()) {
        let what = if file == path { String::new() } else { format!(": {}", file.display()) };
        return input(format!(
            "output directory {}{what} is a file, not a directory; choose another --out or output.dir",
            path.display()
        ));
    }
    match File::open(path.join(LOCK)) {
        Ok(lock) if lock.try_lock().is_err() => in_use(path, lock),
        _ => Ok(()),
    }
}

/// [`RunDir::frames`] of the directory at `path`, read without taking it (`sim check`).
pub fn frames_at(path: &Path, name: &str, step: u64) -> Result<Vec<(u64, String)>> {
    Ok(listed_frames(path, &manifest(path)?, name, step))
}

fn listed_frames(path: &Path, listed: &BTreeSet<String>, name: &str, step: u64) -> Vec<(u64, String)> {
    (listed.iter())
        .filter_map(|f| match frame_of(f, name) {
            Some((k, false)) if k <= step && path.join(f).is_file() => Some((k, f.clone())),
            _ => None,
        })
        .collect()
}

/// The files listed in the manifest of `dir` (none where it has no manifest). A manifest that
/// is not a list of plain file names is refused: `--overwrite` removes what it lists, and a
/// path in it could reach beyond the directory.
fn manifest(dir: &Path) -> Result<BTreeSet<String>> {
    let path = dir.join(MANIFEST);
    let text = match std::fs::read_to_string(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeSet::new()),
        r => r.map_err(|e| SimError::Input(format!("run manifest {}: cannot be read: {e}", path.display())))?,
    };
    let plain = |name: &str| {
        let mut c = Path::new(name).components();
        let own = [LOCK, MANIFEST, WRITE_CHECK].contains(&name);
        // sim names its files in plain characters; a NUL cannot even reach the file system.
        !own && !name.contains(char::is_control) && matches!((c.next(), c.next()), (Some(Component::Normal(n)), None) if n == name)
    };
    let names = || text.lines().filter(|line| !line.is_empty());
    match names().find(|name| !plain(name)) {
        Some(bad) => input(format!(
            "run manifest {}: {bad:?} is not the name of a file in the directory; the manifest is not one sim \
             wrote, so nothing there is removed or replaced: remove the directory's files yourself or choose \
             another directory",
            path.display()
        )),
        None => Ok(names().map(str::to_string).collect()),
    }
}

/// Refuse a directory holding a file that a run would write (or its temporary file) which is
/// not in `listed`, of the names `written` accepts, or where a name in `listed` is not a file:
/// it is not sim's to replace.
fn refuse_foreign(path: &Path, listed: &BTreeSet<String>, written: impl Fn(&str) -> bool) -> Result<()> {
    if let Some(name) = listed.iter().find(|n| std::fs::symlink_metadata(path.join(n)).is_ok_and(|m| !m.is_file())) {
        return input(format!(
            "output directory {}: {name}, listed in its {MANIFEST}, is not a file that sim wrote (a directory or \
             a link); move it away or choose another directory",
            path.display()
        ));
    }
    let foreign = |n: &str| {
        let file = n.strip_suffix(".tmp").unwrap_or(n);
        !listed.contains(file) && is_run_file(file) && written(file)
    };
    let clashes: Vec<String> = entries(path).into_iter().filter(|n| foreign(n)).collect();
    let Some(first) = clashes.first() else { return Ok(()) };
    let (which, them) = match clashes.len() {
        1 => (first.clone(), "it"),
        n => (format!("{first} and {} more such files", n - 1), "them"),
    };
    // A copy of a run directory without its hidden files has no manifest.
    let why = match path.join(MANIFEST).exists() {
        true => format!("not in its {MANIFEST}"),
        false => format!("it has no {MANIFEST}, as a copy without hidden files"),
    };
    input(format!(
        "output directory {} holds {which}, which sim did not write ({why}); move {them} away or choose another \
         directory with --out",
        path.display()
    ))
}

/// The step of a frame or checkpoint file of case `name` (`name_00000040.vti`,
/// `name_00000040_p1.vti`, `checkpoint_00000040.h5`); none for other files, such as those of
/// a case `name_20240101`.
fn step_of(file: &str, name: &str) -> Option<u64> {
    // (A case may be named `checkpoint`: its frames are `checkpoint_<step>.vti`.)
    if let Some(step) = file.strip_prefix("checkpoint_").and_then(|r| r.strip_suffix(".h5").or_else(|| r.strip_suffix(".xmf"))) {
        return step_number(step);
    }
    frame_of(file, name).map(|(step, _)| step)
}

/// The step of a frame file of case `name`, and whether it is a piece of a decomposed run's
/// frame (`name_00000040_p1.vti`) rather than a whole one (`.vti`, `.vtu`, `.pvti`).
fn frame_of(file: &str, name: &str) -> Option<(u64, bool)> {
    let rest = file.strip_prefix(name)?.strip_prefix('_')?;
    let (stem, ext) = rest.rsplit_once('.')?;
    let (step, piece) = match (stem.split_once("_p"), ext) {
        (Some((step, rank)), "vti") if !rank.is_empty() && rank.bytes().all(|b| b.is_ascii_digit()) => (step, true),
        (None, "vti" | "vtu" | "pvti") => (stem, false),
        _ => return None,
    };
    Some((step_number(step)?, piece))
}

/// A step as file names write it: eight digits or more.
fn step_number(s: &str) -> Option<u64> {
    (s.len() >= 8 && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

/// Names in `dir` other than sim's own (none if it does not exist); a name that is not UTF-8
/// with its bytes replaced (no run file has such a name, but the directory is not empty).
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != LOCK && n != MANIFEST && n != WRITE_CHECK)
        .collect();
    v.sort();
    v
}

fn remove(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(SimError::Run(format!("cannot remove {}: {e}", path.display())))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restart_removes_the_later_checkpoints_first() {
        // (sorted by name, as `entries` gives them: a case named `h` sorts after `checkpoint_`)
        let stale = ["checkpoint_00000010.h5", "checkpoint_00000010.xmf", "checkpoint_00000020.h5", "h_00000012.vti", "summary.json"];
        let order = removal_order(stale.map(String::from).to_vec());
        let want = ["checkpoint_00000020.h5", "checkpoint_00000010.h5", "summary.json", "h_00000012.vti", "checkpoint_00000010.xmf"];
        assert_eq!(order, want);
    }

    #[test]
    fn steps_are_read_from_the_names_of_the_case_only() {
        assert_eq!(step_of("h_00000010.vti", "h"), Some(10));
        assert_eq!(step_of("h_00000010_p3.vti", "h"), Some(10));
        assert_eq!(step_of("h_00000010.pvti", "h"), Some(10));
        assert_eq!(step_of("checkpoint_00000040.xmf", "h"), Some(40));
        // The frames of a case named `checkpoint`.
        assert_eq!(step_of("checkpoint_00000063.vti", "checkpoint"), Some(63));
        assert_eq!(step_of("checkpoint_00000063_p1.vti", "checkpoint"), Some(63));
        // Files of the cases `h_2` and `run_20240101`, and names that are not frames.
        for (file, name) in [("h_2_00000012.vti", "h"), ("run_20240101_00000010.vti", "run"), ("run_20240101.pvd", "run")] {
            assert_eq!(step_of(file, name), None, "{file}");
        }
        for file in ["h_0000001.vti", "h_00000010.csv", "h_00000010_p.vti", "checkpoint_final.h5", "h.pvd"] {
            assert_eq!(step_of(file, "h"), None, "{file}");
        }
    }

    #[test]
    fn paths_resolve_through_names_that_do_not_exist() {
        let base = std::env::temp_dir().join(format!("sim_resolve_{}", std::process::id()));
        std::fs::create_dir_all(base.join("existing")).unwrap();
        let base = base.canonicalize().unwrap();
        assert_eq!(resolve(&base.join("nothere/../existing")).unwrap(), base.join("existing"));
        assert_eq!(resolve(&base.join("a/b/../c")).unwrap(), base.join("a/c"));
        assert_eq!(resolve(&base.join("existing/../x")).unwrap(), base.join("x"));
        std::fs::remove_dir_all(base).unwrap();
    }
}
