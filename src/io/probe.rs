//! A restart's checkpoint walked in a child process first. HDF5 (1.10) can crash or loop
//! endlessly on a file whose internal structures (object headers, heaps) are damaged, before
//! sim sees any of its data; the child (`sim` itself, hidden command [`COMMAND`]) takes the
//! crash or the hang, and the run reports the file as damaged (exit 2) instead of dying.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::error::{Result, SimError, input};

/// The hidden command of `sim` that walks a checkpoint ([`super::checkpoint::walk`]).
pub const COMMAND: &str = "__walk-checkpoint";

/// How long the walk may take: it reads attributes and dataset headers, no array data.
const LIMIT: Duration = Duration::from_secs(20);

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// A walk made before MPI started: the checkpoint and what [`check`] then says of it.
static EARLY: OnceLock<(PathBuf, std::result::Result<(), String>)> = OnceLock::new();

/// Walk checkpoints in a child process running `program` (the `sim` binary, which sets this
/// where it runs alone; in library use nothing is walked).
pub fn enable(program: PathBuf) {
    let _ = PROGRAM.set(program);
}

/// Walk the checkpoint at `path` now, in a child process running `program`, and keep the
/// outcome for [`check`] of the same path. Under MPI with several ranks this runs before MPI
/// starts: a launcher may not allow child processes of a rank once it has.
pub fn walk_early(program: &Path, path: &Path) {
    let outcome = walk(program, path).map_err(|e| e.to_string());
    let _ = EARLY.set((path.to_path_buf(), outcome));
}

/// Walk the checkpoint at `path` in a child process, if enabled or walked early: an error if
/// the child crashed or did not finish; Ok where it read the file or found an error that the
/// restart itself then reports (or where no child could be started).
pub fn check(path: &Path) -> Result<()> {
    if let Some((_, outcome)) = EARLY.get().filter(|(p, _)| p == path) {
        return outcome.clone().map_err(SimError::Input);
    }
    match PROGRAM.get() {
        Some(program) => walk(program, path),
        None => Ok(()),
    }
}

fn walk(program: &Path, path: &Path) -> Result<()> {
    let child = Command::new(program)
        .arg(COMMAND)
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else { return Ok(()) };
    let mut pipe = child.stderr.take().expect("piped stderr");
    // Drained as it comes, so that a child writing much never blocks on a full pipe.
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = pipe.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() < LIMIT => std::thread::sleep(Duration::from_millis(2)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return input(format!(
                    "checkpoint {}: reading its HDF5 structures did not finish in {} s: the file is damaged",
                    path.display(),
                    LIMIT.as_secs()
                ));
            }
            Err(_) => return Ok(()),
        }
    };
    let said = stderr.join().unwrap_or_default();
    match status.code() {
        Some(0 | 2) => Ok(()),
        // Ctrl-C or a termination reached the child too: not the file's doing; the run
        // handles it.
        None if interrupted(&status) => Ok(()),
        code => {
            let how = match code {
                Some(c) => format!("exit code {c}"),
                None => signal(&status),
            };
            let last = said.lines().rfind(|l| !l.trim().is_empty()).map(|l| format!(": {}", l.trim())).unwrap_or_default();
            input(format!("checkpoint {}: the HDF5 library failed reading it ({how}{last}): the file is damaged", path.display()))
        }
    }
}

#[cfg(unix)]
fn signal(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    status.signal().map_or_else(|| "killed".into(), |s| format!("signal {s}"))
}

#[cfg(unix)]
fn interrupted(status: &std::process::ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    status.signal().is_some_and(|s| [libc::SIGINT, libc::SIGTERM, libc::SIGHUP].contains(&s))
}

#[cfg(not(unix))]
fn signal(_: &std::process::ExitStatus) -> String {
    "killed".into()
}

#[cfg(not(unix))]
fn interrupted(_: &std::process::ExitStatus) -> bool {
    false
}

/// In the child: no core file where HDF5 crashes (the crash is the expected outcome on a
/// damaged file, and reported by the parent).
pub fn no_core_dump() {
    #[cfg(unix)]
    // SAFETY: setrlimit with a valid pointer to an initialised struct; lowering a limit.
    unsafe {
        let none = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        libc::setrlimit(libc::RLIMIT_CORE, &none);
    }
}
