//! The files of a run, read back by independent readers (VTK's XML reader and h5py, through
//! tests/read_output.py): array names, sizes, values, and the .pvd series, also after a restart.

mod common;
use common::*;

use sim::real::Real;
use sim::solver::Solver;
use sim::solvers::heat::{Heat, Heat2dParams};

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
    let mut h = Heat::<T>::heat2d(&Heat2dParams { n: 21, t0: 0.01, ..Default::default() });
    for _ in 0..steps {
        h.advance(h.dt()).unwrap();
    }
    (h.temperature().iter().map(|v| v.f64()).collect(), h.time())
}

fn check_series(precision: &str, vtk_type: &str) {
    if !python_has("vtkmodules.vtkIOXML, h5py, numpy") {
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

/// Ctrl-C: the checkpointed state is also the last frame of the series, so ParaView shows the
/// state the run continues from.
#[test]
fn an_interrupted_run_writes_its_final_frame() {
    let dir = scratch("output_interrupt");
    let case = "name: h\nsolver:\n  heat2d: {n: 129, r: 0.2}\ntime: {end_step: 100000000}\noutput: {every_steps: 100000}\n";
    write(&dir, "long.yaml", case);
    let run = Background::start(&dir, &["long.yaml"], |d| d.join("out/h/history.csv").exists());
    let o = run.signal("-INT");
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let (step, _) = sim::io::checkpoint::list(&dir.join("out/h")).pop().expect("checkpoint written");
    let frame = format!("h_{step:08}.vti");
    assert!(step > 0 && step % 100000 != 0);
    assert!(dir.join("out/h").join(&frame).is_file(), "{frame} written");
    let pvd = std::fs::read_to_string(dir.join("out/h/h.pvd")).unwrap();
    assert!(pvd.lines().rfind(|l| l.contains("<DataSet")).unwrap().contains(&frame), "{pvd}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/h/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["outputs"], 2, "{summary}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// `sim check` predicts the number of files the run writes.
#[test]
fn check_predicts_the_number_of_output_files() {
    let dir = scratch("output_count");
    for (end, every) in [(20, 10), (25, 10), (7, 3), (5, 10)] {
        let case = heat_case("h", "heat2d: {n: 9, r: 0.2}", "f64", &format!("{{end_step: {end}}}"), &format!("output: {{every_steps: {every}}}"));
        write(&dir, "h.yaml", &case);
        let o = ok(sim(&dir, &["check", "h.yaml"]));
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        ok(sim(&dir, &["run", "h.yaml", "--quiet", "--overwrite"]));
        let files = std::fs::read_dir(dir.join("out/h")).unwrap().flatten().filter(|e| e.path().extension().is_some_and(|x| x == "vti")).count();
        assert!(text.contains(&format!("every {every} steps ({files} files)")), "end {end}, every {every}: {files} files written, check says:\n{text}");
    }
    // With both triggers the count of the steps' alone would be short: check names both.
    let case = heat_case("h", "heat2d: {n: 9, r: 0.2}", "f64", "{end_time: 0.02}", "output: {every_steps: 7, every_time: 0.005}");
    write(&dir, "h.yaml", &case);
    let text = String::from_utf8(ok(sim(&dir, &["check", "h.yaml"])).stdout).unwrap();
    assert!(text.contains("every 7 steps and every 0.005 of simulated time") && !text.contains("files)"), "{text}");
    std::fs::remove_dir_all(dir).unwrap();
}

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

/// The text of the README's fenced block after the line starting with `heading`.
fn readme_block(heading: &str) -> String {
    let text = readme();
    let at = text.find(&format!("\n{heading}\n")).unwrap_or_else(|| panic!("README has no section {heading}"));
    let rest = &text[at..];
    let start = rest.find("```").unwrap();
    let body = &rest[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    body[..body.find("```").unwrap()].to_string()
}

/// `sim --help` names only what exists, and the README's command summary lists every option
/// of every subcommand.
#[test]
fn help_and_readme_command_summary_list_what_exists() {
    let dir = scratch("output_help");
    let o = ok(sim(&dir, &["--help"]));
    let help = String::from_utf8_lossy(&o.stdout).to_lowercase();
    for solver in ["heat", "cavity", "meshfree", "shallow-water"] {
        assert!(help.contains(solver), "{help}");
    }
    assert!(!help.contains("mpi"), "--help names a feature that does not exist:\n{help}");
    let summary = readme_block("## Commands");
    for sub in ["run", "check", "mesh", "bench", "tune"] {
        let o = ok(sim(&dir, &[sub, "--help"]));
        for word in String::from_utf8_lossy(&o.stdout).split_whitespace() {
            let opt: String = word.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
            let opt = opt.as_str();
            if opt.starts_with("--") && opt.len() > 2 && !["--help", "--version"].contains(&opt) {
                assert!(summary.contains(opt), "README command summary lacks sim {sub} {opt}:\n{summary}");
            }
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// The quick start's run, then the first command of the README's restart section, as a new
/// user pastes them (in a copy of the cases).
#[test]
fn readme_restart_section_follows_the_quick_start() {
    let dir = scratch("output_readme");
    std::fs::create_dir_all(dir.join("cases")).unwrap();
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/cases/heat2d_gaussian.yaml"), dir.join("cases/heat2d_gaussian.yaml")).unwrap();
    let quick = readme_block("## Quick start");
    let restart = readme_block("### Restart");
    let first_run = quick.lines().find(|l| l.contains("sim run")).unwrap();
    let first_restart = restart.lines().next().unwrap();
    for line in [first_run, first_restart] {
        let command = line.split('#').next().unwrap();
        let args: Vec<&str> = command.split_whitespace().skip_while(|w| !w.ends_with("sim")).skip(1).collect();
        let o = sim(&dir, &args);
        assert!(o.status.success(), "README command `{}` failed: {}", command.trim(), stderr(&o));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// The Quick start's set-up is what CI runs, and it updates the package lists before it
/// installs (a fresh Debian image has none).
#[test]
fn readme_setup_is_what_ci_runs() {
    let root = env!("CARGO_MANIFEST_DIR");
    let quick = readme_block("## Quick start");
    let setup_line = quick.lines().next().unwrap();
    assert!(setup_line.starts_with("scripts/setup.sh"), "the first Quick start command is the set-up: {setup_line}");
    let ci = std::fs::read_to_string(format!("{root}/.ci/run")).unwrap();
    assert!(ci.lines().any(|l| l.trim() == "scripts/setup.sh"), ".ci/run runs scripts/setup.sh:\n{ci}");
    assert!(!ci.contains("apt-get") && !ci.contains("pip install"), ".ci/run installs nothing of its own:\n{ci}");
    let setup = std::fs::read_to_string(format!("{root}/scripts/setup.sh")).unwrap();
    let update = setup.find("apt-get update").expect("apt-get update");
    let install = setup.find("apt-get install").expect("apt-get install");
    assert!(update < install, "apt-get update before apt-get install");
    for needed in ["libhdf5-dev", "g++", "requirements-test.txt"] {
        assert!(setup.contains(needed), "scripts/setup.sh installs {needed}");
    }
}
