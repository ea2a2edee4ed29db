//! Files a run writes: VTK ImageData (grids) or UnstructuredGrid (point clouds) + `.pvd` series, HDF5 checkpoints (+ XDMF sidecar),
//! `history.csv`.

pub mod checkpoint;
pub mod history;
pub mod pvd;
pub mod vti;
pub mod output;
pub mod probe;
pub mod vtu;

use std::path::Path;

use crate::error::{Result, SimError};

/// Write `bytes` to `path` through a temporary file and a rename, so readers never see a
/// half-written file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = tmp_path(path);
    std::fs::write(&tmp, bytes).and_then(|_| std::fs::rename(&tmp, path)).map_err(|e| {
        // (a partial file on a full disk would hold its space)
        let _ = std::fs::remove_file(&tmp);
        SimError::Run(format!("cannot write {}: {e}", path.display()))
    })
}

/// `file.ext` -> `file.ext.tmp`
pub fn tmp_path(path: &Path) -> std::path::PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    s.into()
}
