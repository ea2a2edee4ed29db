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
    /// continues the series without duplicates. A series that is missing or cut short (no
    /// closing tag) is rebuilt from `frames`, the run's frame files up to `step` with their
    /// steps, each of which holds its time; the note says so.
    pub fn resume(path: PathBuf, step: u64, frames: &[(u64, String)]) -> (Self, Option<String>) {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let whole = text.trim_end().ends_with("</VTKFile>");
        let dir = path.parent().unwrap_or(Path::new(""));
        let mut entries: Vec<Entry> = text.lines().filter_map(parse_line).collect();
        entries.retain(|e| e.step <= step);
        let mut note = None;
        // Entries whose frames are gone (a clean-up cut short, or removed by hand) would point
        // ParaView at nothing.
        let listed = entries.len();
        entries.retain(|e| dir.join(&e.file).is_file());
        if entries.len() < listed {
            note = Some(format!(
                "note: the series {} listed {} frames whose files are gone; left out",
                path.display(),
                listed - entries.len()
            ));
        }
        if !whole && !frames.is_empty() {
            let timed: Vec<Entry> = (frames.iter())
                .filter_map(|(step, file)| Some(Entry { step: *step, time: time_of(&dir.join(file))?, file: file.clone() }))
                .collect();
            note = Some(format!(
                "note: the series {} was {}; rebuilt from the times its {} frame files hold{}",
                path.display(),
                if text.is_empty() { "missing" } else { "cut short" },
                timed.len(),
                match frames.len() - timed.len() {
                    0 => String::new(),
                    n => format!(" ({n} more without a readable time left out)"),
                }
            ));
            entries = timed;
            entries.sort_by_key(|e| e.step);
        }
        (Pvd { path, entries }, note)
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

/// The `TimeValue` a frame file holds (in its field data, near the start).
fn time_of(path: &Path) -> Option<f64> {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path).ok()?.take(1 << 16).read_to_end(&mut head).ok()?;
    let head = String::from_utf8_lossy(&head);
    let rest = &head[head.find("Name=\"TimeValue\"")?..];
    let rest = &rest[rest.find('>')? + 1..];
    rest[..rest.find('<')?].trim().parse().ok()
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
            let file = format!("a_{s:08}.vti");
            std::fs::write(dir.join(&file), "").unwrap();
            p.add(s, t, file).unwrap();
        }
        let r = Pvd::resume(path.clone(), 10, &[]).0;
        assert_eq!(r.entries, p.entries[..2]);
        let (all, note) = Pvd::resume(path.clone(), 99, &[]);
        assert_eq!(all.entries, p.entries, "times round-trip exactly");
        assert_eq!(note, None);
        // An entry whose frame is gone is left out, with a note.
        std::fs::remove_file(dir.join("a_00000010.vti")).unwrap();
        let (r, note) = Pvd::resume(path, 99, &[]);
        assert_eq!(r.entries, [p.entries[0].clone(), p.entries[2].clone()]);
        assert!(note.is_some_and(|n| n.contains("1 frames whose files are gone")));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
