//! GPU Ocean's regression arrays (`tests/data/swe/`, spec §9.1), for the tests.

use std::io::Read;
use std::path::PathBuf;

use sha2::{Digest, Sha256};

/// The folder of the reference data.
pub fn folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/swe")
}

/// The array `name` (e.g. `FBL_wallBC_central_eta`) as rows (row 0 south), after checking
/// its SHA-256 against `SHA256SUMS`, so a test never compares with altered data.
pub fn read(name: &str) -> Vec<Vec<f64>> {
    let file = format!("{name}.dat");
    let path = folder().join("timestep50").join(format!("{file}.gz"));
    let gz = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut text = String::new();
    flate2::read::GzDecoder::new(gz).read_to_string(&mut text).unwrap();
    let sums = std::fs::read_to_string(folder().join("SHA256SUMS")).unwrap();
    let want = sums
        .lines()
        .find_map(|l| l.strip_suffix(&file).map(|h| h.trim().to_string()))
        .unwrap_or_else(|| panic!("{file} is not listed in SHA256SUMS"));
    let got: String = Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(got, want, "{file}: checksum differs from SHA256SUMS");
    text.lines()
        .map(|l| l.split_whitespace().map(|v| v.parse::<f64>().unwrap()).collect())
        .collect()
}

/// Largest `|a - b|` over the `rows x cols` block of `reference` starting at its origin and of
/// `ours` starting at `(row0, col0)`, where `ours(l, k)` reads our stored array.
pub fn max_difference(
    reference: &[Vec<f64>],
    rows: usize,
    cols: usize,
    ours: impl Fn(usize, usize) -> f64,
) -> f64 {
    assert!(reference.len() >= rows && reference.iter().all(|r| r.len() >= cols), "reference array smaller than the grid");
    let mut worst = 0.0f64;
    for (l, row) in reference.iter().enumerate().take(rows) {
        for (k, &want) in row.iter().enumerate().take(cols) {
            let d = (want - ours(l, k)).abs();
            worst = if d.is_nan() { f64::INFINITY } else { worst.max(d) };
        }
    }
    worst
}
