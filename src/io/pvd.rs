//! The `.pvd` collection that makes the VTK files one time series in ParaView.

use std::path::{Path, PathBuf};

use crate::error::Result;

#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub step: u64,
    pub time: f64,
    /// File name relative to the `.pvd`.
    pub file: String,
}

pub struct Pvd {
    path: PathBuf,
    pub entries: Vec<Entry>,
}

impl Pvd {
    pub fn new(path: PathBuf) -> Self {
        Pvd { path, entries: Vec::new() }
    }

    /// Read the entries of an existing series and keep those up to `step`, so a restart
    /// continues the series without duplicates. Missing or unreadable files give an empty
    /// series.
    pub fn resume(path: PathBuf, step: u64) -> Self {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let mut entries: Vec<Entry> = text.lines().filter_map(parse_line).collect();
        entries.retain(|e| e.step <= step);
        Pvd { path, entries }
    }

    /// Add (or replace) the entry of `step` and rewrite the file.
    pub fn add(&mut self, step: u64, time: f64, file: String) -> Result<()> {
        self.entries.retain(|e| e.step != step);
        self.entries.push(Entry { step, time, file });
        self.entries.sort_by_key(|e| e.step);
        self.save()
    }

    pub fn save(&self) -> Result<()> {
        let mut s = String::from(
            "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"1.0\" byte_order=\"LittleEndian\">\n<Collection>\n",
        );
        for e in &self.entries {
            s += &format!("  <DataSet timestep=\"{:.17e}\" part=\"0\" file=\"{}\"/>\n", e.time, e.file);
        }
        s += "</Collection>\n</VTKFile>\n";
        super::write_atomic(&self.path, s.as_bytes())
    }
}

/// The step number in `<name>_<step>.<ext>`.
pub fn step_of(file: &str) -> Option<u64> {
    let stem = Path::new(file).file_stem()?.to_str()?;
    stem.rsplit('_').next()?.parse().ok()
}

fn parse_line(line: &str) -> Option<Entry> {
    let attr = |name: &str| {
        let start = line.find(&format!("{name}=\""))? + name.len() + 2;
        let len = line[start..].find('"')?;
        Some(line[start..start + len].to_string())
    };
    let file = attr("file")?;
    Some(Entry { step: step_of(&file)?, time: attr("timestep")?.parse().ok()?, file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_keeps_entries_up_to_the_restart_step() {
        let dir = std::env::temp_dir().join(format!("sim_pvd_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.pvd");
        let mut p = Pvd::new(path.clone());
        for (s, t) in [(0, 0.0), (10, 0.1), (20, 0.2 + 1e-17)] {
            p.add(s, t, format!("a_{s:08}.vti")).unwrap();
        }
        let r = Pvd::resume(path.clone(), 10);
        assert_eq!(r.entries, p.entries[..2]);
        let all = Pvd::resume(path, 99);
        assert_eq!(all.entries, p.entries, "times round-trip exactly");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
