//! Case files: YAML parsed into plain structs (unknown keys rejected), then a second pass
//! that checks values and names the offending key.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Result, SimError, input, read_text_file, shorten_message, shorten_to};
use crate::real::Precision;
use crate::solver::Clock;
pub use crate::solvers::SolverCase;

/// Longest case name accepted.
pub const MAX_NAME: usize = 100;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Names the run: default output directory `out/<name>` and file prefix.
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    pub solver: SolverCase,
    #[serde(default)]
    pub precision: Precision,
    #[serde(default)]
    pub backend: Backend,
    /// CUDA kernel variant and block shape (used when the back end is CUDA).
    #[serde(default)]
    pub gpu: crate::cuda::GpuOptions,
    /// How the CPU back end runs its kernels (temporal blocking).
    #[serde(default)]
    pub cpu: crate::cpu::CpuOptions,
    /// Worker threads for the CPU back end; 0 = all hardware threads.
    #[serde(default)]
    pub threads: usize,
    pub time: TimeControl,
    #[serde(default)]
    pub output: OutputControl,
    #[serde(default)]
    pub checkpoint: CheckpointControl,
    #[serde(default)]
    pub guard: GuardControl,
    /// The process grid of a run under MPI.
    #[serde(default)]
    pub parallel: ParallelControl,
}

/// `parallel:` section: how `mpirun -np P` splits the grid (ignored by a run without MPI).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ParallelControl {
    /// Ranks along x and y (their product must be P); default: the split with the shortest
    /// cut between the blocks.
    #[serde(default)]
    pub ranks: Option<[usize; 2]>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    #[default]
    Cpu,
    Cuda,
    Auto,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
            Backend::Auto => "auto",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct TimeControl {
    /// Simulated time at which the run stops (the last step is shortened to hit it).
    #[serde(default)]
    pub end_time: Option<f64>,
    /// Step number at which the run stops.
    #[serde(default)]
    pub end_step: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct OutputControl {
    /// Output directory; default `out/<name>`.
    #[serde(default)]
    pub dir: Option<PathBuf>,
    /// Write a VTK file every this many steps.
    #[serde(default)]
    pub every_steps: Option<u64>,
    /// Write a VTK file each time the simulated time crosses a multiple of this.
    #[serde(default)]
    pub every_time: Option<f64>,
    /// Compression of the VTK files' appended data: none, zlib or lz4.
    #[serde(default)]
    pub compression: crate::io::output::Compression,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointControl {
    /// Write a checkpoint every this many steps (one is always written at the end).
    #[serde(default)]
    pub every_steps: Option<u64>,
    /// How many checkpoints to keep (older ones are deleted).
    #[serde(default = "default_keep")]
    pub keep: usize,
}

fn default_keep() -> usize {
    2
}

impl Default for CheckpointControl {
    fn default() -> Self {
        CheckpointControl { every_steps: None, keep: default_keep() }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardControl {
    /// Check for NaN/Inf and append a row to history.csv every this many steps.
    #[serde(default = "default_check_every")]
    pub check_every: u64,
}

fn default_check_every() -> u64 {
    100
}

impl Default for GuardControl {
    fn default() -> Self {
        GuardControl { check_every: default_check_every() }
    }
}

/// `path` as serde_path_to_error writes it (`solver.lskum.x[0]`), less the segments it does not
/// know (`?`, as the key of a duplicate).
fn key_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter().filter(|s| !matches!(s, Segment::Unknown)) {
        if !out.is_empty() && !matches!(segment, Segment::Seq { .. }) {
            out.push('.');
        }
        out.push_str(&segment.to_string());
    }
    out
}

/// A list longer than its fixed size stops serde at the first value too many, so it says
/// "invalid length 3, expected a tuple of size 2" whatever the list's length: say what is known.
fn too_long_lists(msg: &str) -> String {
    let (head, tail) = ("invalid length ", ", expected a tuple of size ");
    let mut out = String::new();
    let mut rest = msg;
    while let Some(at) = rest.find(head) {
        let after = &rest[at + head.len()..];
        let digits = |s: &str| s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let n = digits(after);
        let size = after[n..].strip_prefix(tail).map(|s| (&s[..digits(s)], &s[digits(s)..]));
        match (after[..n].parse::<usize>(), size) {
            (Ok(len), Some((m, end))) if m.parse::<usize>().is_ok_and(|m| m + 1 == len) => {
                out += &format!("{}more than {m} values, expected {m}", &rest[..at]);
                rest = end;
            }
            _ => {
                out += &rest[..at + head.len()];
                rest = after;
            }
        }
    }
    out + rest
}

/// The largest case file read (case files are a few hundred bytes).
pub const MAX_CASE_BYTES: u64 = 16 << 20;

impl Case {
    /// Parse case text; `origin` names the file in error messages, which quote at most
    /// [`crate::error::QUOTE_MAX`] characters of any piece of the text.
    pub fn parse(text: &str, origin: &str) -> Result<Case> {
        // serde_path_to_error records the key path of a type error (`solver.heat2d.n`).
        let mut path = String::new();
        let parsed = serde_saphyr::with_deserializer_from_str(text, |de| {
            serde_path_to_error::deserialize(de).map_err(|e| {
                path = key_path(e.path());
                e.into_inner()
            })
        });
        let case: Case = parsed.map_err(|e| {
            // The wording meant for users (the default suggests parser options to the
            // developer), the snippet headed by the case file's name.
            let msg = e.render_with_options(serde_saphyr::render_options! {
                formatter: &serde_saphyr::UserMessageFormatter,
                source_name: Some(origin),
            });
            let msg = too_long_lists(msg.trim_start_matches("error: "));
            // the path names an unknown key that the message quotes as well
            let at = if path.is_empty() || path == "." { String::new() } else { format!("key {}: ", shorten_to(&path, 60)) };
            SimError::Input(format!("case file {origin}: {at}{}", shorten_message(&msg)))
        })?;
        case.validate()
            .map_err(|e| SimError::Input(format!("case file {origin}: {}", shorten_message(&e.to_string()))))?;
        Ok(case)
    }

    /// Read and check a case file: a regular file of at most [`MAX_CASE_BYTES`] in UTF-8.
    /// Relative paths in it (input files such as lskum's cloud, `output.dir`) are taken from
    /// the case file's folder, so a case runs the same from any working directory.
    pub fn load(path: &Path) -> Result<(Case, String)> {
        let text = read_text_file(path, "case file", MAX_CASE_BYTES)?;
        let mut case = Case::parse(&text, &path.display().to_string())?;
        let base = path.parent().unwrap_or(Path::new(""));
        let resolve = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        case.solver.spec_mut().input_paths().into_iter().for_each(resolve);
        case.output.dir.as_mut().map(resolve);
        Ok((case, text))
    }

    /// Value checks after parsing; each error names the key.
    pub fn validate(&self) -> Result<()> {
        // The name becomes a directory and file prefix: no path tricks, a sane length.
        let plain = self.name.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
        if self.name.is_empty() || !plain || self.name.starts_with('.') || self.name.len() > MAX_NAME {
            return input(format!(
                "name: {} must be 1 to {MAX_NAME} ASCII letters, digits, '_', '-' or '.', not starting with '.'",
                crate::error::quote(&self.name)
            ));
        }
        self.solver.spec().validate()?;
        self.validate_controls()
    }

    /// Checks of the run controls: the part of a case that may change on restart.
    pub fn validate_controls(&self) -> Result<()> {
        let t = &self.time;
        if t.end_time.is_none() && t.end_step.is_none() {
            return input("time: give end_time or end_step (or both; the run stops at the first)");
        }
        if let Some(e) = t.end_time
            && !(e.is_normal() && e > 0.0)
        {
            return input(format!("time.end_time: {e} must be a positive number (and not subnormal)"));
        }
        if t.end_step == Some(0) {
            return input("time.end_step: must be at least 1");
        }
        if self.output.every_steps == Some(0) {
            return input("output.every_steps: must be at least 1");
        }
        if let Some(e) = self.output.every_time
            && !(e.is_normal() && e > 0.0)
        {
            return input(format!("output.every_time: {e} must be a positive number (and not subnormal)"));
        }
        if self.solver.spec().clock() == Clock::Iterations {
            let kind = self.solver.kind();
            let pseudo = |key: &str| {
                input(format!(
                    "{key}: solver {kind} iterates in pseudo-time towards a steady state and has no simulated time; \
                     count iterations with time.end_step and output.every_steps"
                ))
            };
            if self.time.end_time.is_some() {
                return pseudo("time.end_time");
            }
            if self.output.every_time.is_some() {
                return pseudo("output.every_time");
            }
        }
        if self.checkpoint.every_steps == Some(0) {
            return input("checkpoint.every_steps: must be at least 1");
        }
        if self.checkpoint.keep == 0 {
            return input("checkpoint.keep: must be at least 1");
        }
        if self.guard.check_every == 0 {
            return input("guard.check_every: must be at least 1");
        }
        if let Some(r) = self.parallel.ranks
            && r.contains(&0)
        {
            return input(format!("parallel.ranks: {r:?}: every count must be at least 1"));
        }
        self.gpu.validate()?;
        self.cpu.validate()?;
        // Settings of the lskum kernels, refused elsewhere rather than ignored.
        let kind = self.solver.kind();
        if kind != "lskum" && self.cpu.math != crate::cpu::Math::Exact {
            return input(format!("cpu.math: fast: only the lskum solver's fluxes have a fast math ({kind} has none)"));
        }
        if kind != "lskum" && self.gpu.flux != crate::cuda::Flux::Fused {
            return input(format!("gpu.flux: split: only the lskum solver's flux kernels split ({kind} has none)"));
        }
        if self.threads > 4096 {
            return input(format!("threads: {} is not a sensible thread count", self.threads));
        }
        Ok(())
    }

    pub fn default_out_dir(&self) -> PathBuf {
        self.output.dir.clone().unwrap_or_else(|| PathBuf::from("out").join(&self.name))
    }
}
