//! The files of a run, read back by independent readers (VTK's XML reader and h5py, through
//! tests/read_output.py): array names, sizes, values, and the .pvd series, also after a restart.

mod common;
use common::*;

use sim::real::Real;
use sim::solver::Solver;
use sim::solvers::heat::{Heat, Heat2dParams};

/// Whether the independent readers are installed. CI (which sets `CI`) must have them; a
/// developer machine without them skips these tests with a note.
fn readers_available() -> bool {
    let found = std::process::Command::new("python3")
        .args(["-c", "import vtkmodules.vtkIOXML, h5py, numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(std::env::var_os("CI").is_none(), "CI lacks the readers: pip install -r scripts/requirements-test.txt");
        eprintln!("note: python3 with vtk and h5py not found; output read-back test skipped");
    }
    found
}

fn read_back(dir: &std::path::Path) -> serde_json::Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/read_output.py");
    let o = std::process::Command::new("python3").args([script, dir.to_str().unwrap(), "h"]).output().unwrap();
    assert!(
        o.status.success(),
        "tests/read_output.py failed (needs: pip install -r scripts/requirements-test.txt):\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

fn values(v: &serde_json::Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

/// Bitwise equality, reporting the first differing node.
fn assert_same(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(k) = (0..got.len()).find(|&k| got[k].to_bits() != want[k].to_bits()) {
        panic!("{what}: node {k} is {} but should be {}", got[k], want[k]);
    }
}

/// The heat2d field after `steps` steps, computed directly through the library.
fn reference<T: Real>(steps: usize) -> (Vec<f64>, f64) {
    let mut h = Heat::<T>::heat2d(&Heat2dParams { n: 21, r: 0.2, diffusivity: 1.0, t0: 0.01, domain: [-1.0, 1.0] });
    for _ in 0..steps {
        h.advance(h.dt()).unwrap();
    }
    (h.temperature().iter().map(|v| v.f64()).collect(), h.time())
}

fn check_series(precision: &str, vtk_type: &str) {
    if !readers_available() {
        return;
    }
    let dir = scratch(&format!("output_{precision}"));
    let case = format!(
        "name: h\nsolver:\n  heat2d: {{n: 21, r: 0.2, t0: 0.01}}\nprecision: {precision}\ntime: {{end_step: 30}}\n\
         output: {{every_steps: 10}}\ncheckpoint: {{every_steps: 15, keep: 5}}\n"
    );
    let case_path = write(&dir, "case.yaml", &case);
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--out", "run", "--steps", "15"]));
    ok(sim(&dir, &["run", "--restart", "run/checkpoint_00000015.h5", case_path.to_str().unwrap(), "--quiet"]));
    let got = read_back(&dir.join("run"));

    // The series: every file once, in step order, with its simulated time.
    let series = got["series"].as_array().unwrap();
    let files: Vec<&str> = series.iter().map(|s| s["file"].as_str().unwrap()).collect();
    assert_eq!(files, ["h_00000000.vti", "h_00000010.vti", "h_00000015.vti", "h_00000020.vti", "h_00000030.vti"]);
    for s in series {
        let step: usize = s["file"].as_str().unwrap()[2..10].parse().unwrap();
        let (field, time) = if precision == "f32" { reference::<f32>(step) } else { reference::<f64>(step) };
        assert_eq!(s["time"].as_f64().unwrap(), time, "time of step {step}");
        let f = &got["files"][s["file"].as_str().unwrap()];
        assert_eq!(f["dims"], serde_json::json!([21, 21, 1]));
        assert_eq!(f["spacing"][0].as_f64().unwrap(), 0.1);
        assert_eq!(f["origin"][0].as_f64().unwrap(), -1.0);
        let t = &f["arrays"]["T"];
        assert_eq!(t["type"], vtk_type);
        assert_same(&values(&t["values"]), &field, &format!("T of step {step} read back by VTK"));
        assert!(f["arrays"]["T_exact"].is_object(), "analytic field written");
    }

    // Checkpoints read by h5py hold the same field.
    let ck = &got["checkpoints"]["checkpoint_00000030.h5"];
    assert_eq!((ck["step"].as_u64(), ck["format"].as_str(), ck["precision"].as_str()), (Some(30), Some("sim-checkpoint"), Some(precision)));
    assert_eq!(ck["shapes"]["T"], serde_json::json!([21, 21]));
    let (field, _) = if precision == "f32" { reference::<f32>(30) } else { reference::<f64>(30) };
    assert_same(&values(&ck["fields"]["T"]), &field, "T read back by h5py");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn vti_pvd_and_checkpoints_read_back_f64() {
    check_series("f64", "double");
}

#[test]
fn vti_pvd_and_checkpoints_read_back_f32() {
    check_series("f32", "float");
}
