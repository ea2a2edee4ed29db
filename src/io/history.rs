//! `history.csv`: one row of diagnostics per guard check.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Result, SimError};

pub struct History {
    path: PathBuf,
    file: Option<std::fs::File>,
}

impl History {
    /// Open for appending; on restart, rows after `keep_until` are dropped first.
    pub fn open(path: PathBuf, keep_until: Option<u64>) -> Result<Self> {
        if let Some(step) = keep_until
            && let Ok(text) = std::fs::read_to_string(&path)
        {
            // Rows up to the restart step, whole (a row cut short by a full disk or a kill has
            // fewer fields than the header).
            let fields = |l: &str| l.split(',').count();
            let columns = text.lines().next().map_or(0, fields);
            let kept: String = text
                .lines()
                .enumerate()
                .filter(|(k, l)| *k == 0 || (row_step(l).is_some_and(|s| s <= step) && fields(l) == columns))
                .map(|(_, l)| format!("{l}\n"))
                .collect();
            super::write_atomic(&path, kept.as_bytes())?;
        }
        Ok(History { path, file: None })
    }

    /// Append a row (an empty time under pseudo-time, an empty value where there is none yet);
    /// the header is written when the file is new.
    pub fn append(&mut self, step: u64, time: Option<f64>, wall: f64, values: &[(&str, Option<f64>)]) -> Result<()> {
        let err = |e: std::io::Error| SimError::Run(format!("cannot write {}: {e}", self.path.display()));
        if self.file.is_none() {
            let new = !self.path.exists() || std::fs::metadata(&self.path).map_err(err)?.len() == 0;
            let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&self.path).map_err(err)?;
            if new {
                let names: Vec<&str> = values.iter().map(|(n, _)| *n).collect();
                writeln!(f, "step,time,wall_s,{}", names.join(",")).map_err(err)?;
            }
            self.file = Some(f);
        }
        let time = time.map(|t| format!("{t:.17e}")).unwrap_or_default();
        let mut line = format!("{step},{time},{wall:.6}");
        for (_, v) in values {
            line += &v.map(|v| format!(",{v:.10e}")).unwrap_or_else(|| ",".into());
        }
        writeln!(self.file.as_mut().unwrap(), "{line}").map_err(err)
    }
}

fn row_step(line: &str) -> Option<u64> {
    line.split(',').next()?.parse().ok()
}

/// Path of the history file in `dir`.
pub fn path_in(dir: &Path) -> PathBuf {
    dir.join("history.csv")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restart_keeps_the_whole_rows_up_to_its_step() {
        let dir = std::env::temp_dir().join(format!("sim_history_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("history.csv");
        // Row 19 was cut short after its step.
        std::fs::write(&path, "step,time,wall_s,mass\n0,0,0.1,1\n10,1,0.2,1\n19\n20,2,0.3,1\n").unwrap();
        History::open(path.clone(), Some(25)).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "step,time,wall_s,mass\n0,0,0.1,1\n10,1,0.2,1\n20,2,0.3,1\n");
        History::open(path.clone(), Some(15)).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "step,time,wall_s,mass\n0,0,0.1,1\n10,1,0.2,1\n");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
