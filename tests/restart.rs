//! Checkpoint/restart: a run restarted at step k reaches step n bitwise equal to an
//! uninterrupted run, and the .pvd series and history continue without duplicates.

mod common;
use common::*;

use sim::io::checkpoint;
use sim::io::pvd::Pvd;

fn final_state(dir: &std::path::Path) -> (checkpoint::Meta, Vec<sim::solver::StateArray>) {
    let (_, path) = checkpoint::list(dir).pop().expect("a checkpoint");
    checkpoint::read(&path).unwrap()
}

/// Run `solver` straight to the end and, separately, in two legs with a restart in between.
fn check_restart(test: &str, solver: &str, precision: &str, time: &str, first_leg: &str) {
    check_restart_with(test, solver, precision, time, first_leg, "");
}

/// [`check_restart`] with `more` keys in the case.
fn check_restart_with(test: &str, solver: &str, precision: &str, time: &str, first_leg: &str, more: &str) {
    let dir = scratch(test);
    let extra = format!("output: {{every_steps: 20}}\ncheckpoint: {{every_steps: 50, keep: 3}}\nguard: {{check_every: 10}}\n{more}");
    let case = write(&dir, "case.yaml", &heat_case("h", solver, precision, time, &extra));
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--out", "full"]));
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--out", "legs", "--steps", first_leg]));
    // Restart from the run directory (newest checkpoint), with the case alongside.
    ok(sim(&dir, &["run", "--restart", "legs", case.to_str().unwrap(), "--quiet"]));

    let (meta_full, full) = final_state(&dir.join("full"));
    let (meta_legs, legs) = final_state(&dir.join("legs"));
    assert_eq!(meta_full.step, meta_legs.step);
    assert_eq!(meta_full.time.to_bits(), meta_legs.time.to_bits(), "time bitwise equal");
    assert_eq!(full, legs, "fields bitwise equal after restart");
    // Every checkpoint both runs kept, ghosts included (the state's arrays, not only the end's).
    let kept = |d: &str| checkpoint::list(&dir.join(d));
    let legs_kept = kept("legs");
    let mut same = 0;
    for (step, path) in kept("full") {
        if let Some((_, other)) = legs_kept.iter().find(|(s, _)| *s == step) {
            assert_eq!(checkpoint::read(&path).unwrap().1, checkpoint::read(other).unwrap().1, "checkpoint of step {step}");
            same += 1;
        }
    }
    assert!(same >= 1, "{same} checkpoints in common");

    // The series lists every output once, in order, with the same times as the straight run.
    // The only extra entry of the two-leg run is the state written where the first leg stopped.
    let pvd = |d: &str| Pvd::resume(dir.join(d).join("h.pvd"), u64::MAX, &[]).0.entries;
    let stop: u64 = first_leg.parse().unwrap();
    let mut legs_entries = pvd("legs");
    legs_entries.retain(|e| e.step != stop || pvd("full").iter().any(|f| f.step == stop));
    assert_eq!(pvd("full"), legs_entries);
    let steps: Vec<u64> = pvd("legs").iter().map(|e| e.step).collect();
    assert!(steps.windows(2).all(|w| w[0] < w[1]), "pvd steps {steps:?}");
    let history = |d: &str| std::fs::read_to_string(dir.join(d).join("history.csv")).unwrap();
    let steps_of = |h: String| h.lines().skip(1).map(|l| l.split(',').next().unwrap().to_string()).collect::<Vec<_>>();
    let (full_rows, mut legs_rows) = (steps_of(history("full")), steps_of(history("legs")));
    legs_rows.retain(|s| *s != first_leg || full_rows.contains(s));
    assert_eq!(full_rows, legs_rows, "history rows");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn heat1d_restart_is_bit_exact_f64() {
    check_restart("r1d64", "heat1d: {n: 101, r: 0.45}", "f64", "{end_step: 300}", "130");
}

#[test]
fn heat1d_restart_is_bit_exact_f32() {
    check_restart("r1d32", "heat1d: {n: 101, r: 0.45}", "f32", "{end_step: 300}", "77");
}

#[test]
fn heat2d_restart_is_bit_exact_f64() {
    // end_time: the last step is shortened; the restart must land on the same time.
    check_restart("r2d64", "heat2d: {n: 65, r: 0.2}", "f64", "{end_time: 0.0585}", "100");
}

#[test]
fn heat2d_restart_is_bit_exact_f32() {
    check_restart("r2d32", "heat2d: {n: 65, r: 0.2}", "f32", "{end_time: 0.0585}", "61");
}

#[test]
fn implicit_heat_restart_is_bit_exact() {
    // The end time is not a whole number of steps: the last step is shortened (refactored).
    for (name, solver, end) in [
        ("cn", "heat1d: {n: 101, r: 20.0, method: crank_nicolson}", "{end_time: 0.0803}"),
        ("spike", "heat1d: {n: 1001, r: 0.4, method: crank_nicolson, tridiagonal: spike, partitions: 7}", "{end_time: 1.61e-5}"),
        ("adi", "heat2d: {n: 65, r: 8.0, method: adi}", "{end_time: 0.31}"),
    ] {
        for precision in ["f64", "f32"] {
            check_restart(&format!("ri{name}{precision}"), solver, precision, end, "13");
        }
    }
}

/// A restart whose series was deleted or cut short rebuilds it from the frames on disk, with
/// the times they hold: the same series as an uninterrupted run's.
#[test]
fn a_lost_series_is_rebuilt_from_the_frames() {
    let dir = scratch("lost_pvd");
    let extra = "output: {every_time: 0.007}\ncheckpoint: {every_steps: 10}";
    let case = write(&dir, "case.yaml", &heat_case("h", "heat2d: {n: 17, r: 0.2}", "f64", "{end_time: 0.1}", extra));
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--out", "full"]));
    let series = |d: &str| Pvd::resume(dir.join(d).join("h.pvd"), u64::MAX, &[]).0.entries;
    for (leg, damage) in [("deleted", 0), ("cut", 200)] {
        ok(sim(&dir, &["run", "case.yaml", "--quiet", "--out", leg, "--steps", "25"]));
        let pvd = dir.join(leg).join("h.pvd");
        let text = std::fs::read(&pvd).unwrap();
        match damage {
            0 => std::fs::remove_file(&pvd).unwrap(),
            n => std::fs::write(&pvd, &text[..n]).unwrap(),
        }
        let o = ok(sim(&dir, &["run", "--restart", leg, case.to_str().unwrap()]));
        assert!(stderr(&o).contains("rebuilt from the times its"), "{}", stderr(&o));
        let mut got = series(leg);
        // The frame where the leg stopped is the one entry a straight run lacks.
        got.retain(|e| e.step != 25);
        assert_eq!(got, series("full"), "{leg}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A restart whose output schedule changed writes a frame of its first state where that is an
/// output instant of the new schedule, as a fresh run with that schedule does.
#[test]
fn a_changed_output_schedule_writes_the_restart_steps_frame() {
    let dir = scratch("reschedule");
    // dt = 0.25 dx^2 = 2^-12: 20 steps are 5 * 2^-12 * 4, an instant of every_time 10 dt.
    let case = |output: &str| {
        let extra = format!("output: {output}\ncheckpoint: {{every_steps: 20}}");
        heat_case("h", "heat1d: {n: 33, r: 0.25}", "f64", "{end_step: 40}", &extra)
    };
    let steps = |d: &str| Pvd::resume(dir.join(d).join("h.pvd"), u64::MAX, &[]).0.entries.iter().map(|e| e.step).collect::<Vec<_>>();
    write(&dir, "first.yaml", &case("{every_steps: 7}"));
    for (leg, output) in [("steps", "{every_steps: 10}"), ("time", "{every_time: 0.00244140625}")] {
        ok(sim(&dir, &["run", "first.yaml", "--quiet", "--out", leg]));
        write(&dir, "second.yaml", &case(output));
        let checkpoint = format!("{leg}/checkpoint_00000020.h5");
        ok(sim(&dir, &["run", "--restart", &checkpoint, "second.yaml", "--quiet", "--overwrite"]));
        assert_eq!(steps(leg), [0, 7, 14, 20, 30, 40], "{leg}");
        let fresh = format!("fresh_{leg}");
        ok(sim(&dir, &["run", "second.yaml", "--quiet", "--out", &fresh]));
        assert_eq!(steps(&fresh), [0, 10, 20, 30, 40], "{leg}");
        let frame = |d: &str| std::fs::read(dir.join(d).join("h_00000020.vti")).unwrap();
        assert!(frame(leg) == frame(&fresh), "{leg}: the restart step's frame is the fresh run's");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A run whose summary could not be written at its end (a full disk) is finished by a restart
/// from its last checkpoint, which then writes it; a finished run's is refused.
#[test]
fn a_run_that_ended_without_its_summary_is_finished_by_a_restart() {
    let dir = scratch("no_summary");
    write(&dir, "case.yaml", &heat_case("h", "heat1d: {n: 33, r: 0.3}", "f64", "{end_step: 30}", ""));
    ok(sim(&dir, &["run", "case.yaml", "--quiet"]));
    // As a summary write that failed at the end (a full disk) leaves it.
    let summary = dir.join("out/h/summary.json");
    std::fs::remove_file(&summary).unwrap();
    let o = ok(sim(&dir, &["run", "--restart", "out/h"]));
    assert!(stderr(&o).contains("without writing summary.json; writing its results"), "{}", stderr(&o));
    let again = std::fs::read_to_string(&summary).unwrap();
    assert!(again.contains("\"status\": \"completed\""), "{again}");
    assert_eq!(final_state(&dir.join("out/h")).0.step, 30);
    let o = sim(&dir, &["run", "--restart", "out/h"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("already at or past the end"), "{}", stderr(&o));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn restart_latest_picks_the_newest_checkpoint() {
    let dir = scratch("latest");
    let extra = "checkpoint: {every_steps: 10, keep: 2}";
    write(&dir, "case.yaml", &heat_case("h", "heat2d: {n: 17, r: 0.2}", "f64", "{end_step: 40}", extra));
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--steps", "25"]));
    let cks: Vec<u64> = checkpoint::list(&dir.join("out/h")).iter().map(|c| c.0).collect();
    assert_eq!(cks, vec![20, 25], "keep: 2 keeps the two newest");
    let o = ok(sim(&dir, &["run", "case.yaml", "--restart", "latest"]));
    assert!(stderr(&o).contains("restarting from step 25"), "{}", stderr(&o));
    let (meta, _) = final_state(&dir.join("out/h"));
    assert_eq!(meta.step, 40);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn restart_without_case_uses_the_stored_case() {
    let dir = scratch("stored");
    write(&dir, "case.yaml", &heat_case("h", "heat1d: {n: 33, r: 0.3}", "f32", "{end_step: 60}", ""));
    let status = || {
        let text = std::fs::read_to_string(dir.join("out/h/summary.json")).unwrap();
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["status"].as_str().unwrap().to_string()
    };
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--steps", "30"]));
    assert_eq!(status(), "stopped", "--steps stops before the case's end");
    ok(sim(&dir, &["run", "--restart", "out/h/checkpoint_00000030.h5", "--quiet"]));
    let (meta, _) = final_state(&dir.join("out/h"));
    assert_eq!((meta.step, meta.precision), (60, sim::real::Precision::F32));
    assert_eq!(status(), "completed");
    std::fs::remove_dir_all(dir).unwrap();
}

/// A case file's `output.dir` does not move a restart out of its checkpoint's directory (`--out`
/// does); a note says so where it names another directory.
#[test]
fn restart_notes_an_output_dir_it_does_not_take() {
    let dir = scratch("outdir");
    let case = |out: &str| heat_case("h", "heat1d: {n: 33, r: 0.3}", "f64", "{end_step: 60}", out);
    write(&dir, "case.yaml", &case(""));
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--steps", "20"]));
    write(&dir, "case.yaml", &case("output: {dir: out/h}"));
    let o = ok(sim(&dir, &["run", "--restart", "latest", "case.yaml", "--steps", "20"]));
    assert!(!stderr(&o).contains("output.dir"), "the same directory: {}", stderr(&o));
    write(&dir, "case.yaml", &case("output: {dir: elsewhere}"));
    let o = ok(sim(&dir, &["run", "--restart", "out/h", "case.yaml"]));
    let want = "continues in the checkpoint's directory";
    assert!(stderr(&o).contains(want) && stderr(&o).contains("elsewhere"), "{}", stderr(&o));
    assert_eq!(final_state(&dir.join("out/h")).0.step, 60);
    assert!(!dir.join("elsewhere").exists());
    std::fs::remove_dir_all(dir).unwrap();
}

/// The finite-volume schemes' checkpoints after a restart equal an uninterrupted run's in every
/// array value, the corner ghosts (which no stencil reads) included: the ghost fill gives them
/// values of the current stage, not what the rotating buffer held before.
#[test]
fn finite_volume_restart_keeps_the_corner_ghosts() {
    let dir = scratch("fv_corners");
    for scheme in ["cdklm16", "kp07"] {
        for sides in ["{east: periodic, west: periodic}", "{north: periodic, south: periodic}"] {
            let solver = format!(
                "shallow_water: {{scheme: {scheme}, nx: 25, ny: 15, dx: 200.0, dt: 1.0, coriolis: {{f0: 1.0e-4}}, \
                 bathymetry: {{flat: 50.0}}, boundary: {sides}, initial: {{hump: {{amplitude: 1.0, radius: 800.0, shape: gaussian}}}}}}"
            );
            let extra = "checkpoint: {every_steps: 4, keep: 5}";
            write(&dir, "case.yaml", &heat_case("k", &solver, "f32", "{end_step: 12}", extra));
            ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "full"]));
            ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "legs", "--steps", "6"]));
            ok(sim(&dir, &["run", "--restart", "legs", "--quiet"]));
            let kept = |d: &str| checkpoint::list(&dir.join(d));
            assert_eq!(kept("full").iter().map(|c| c.0).collect::<Vec<_>>(), [4, 8, 12]);
            for ((step, a), (_, b)) in kept("full").into_iter().zip(kept("legs").into_iter().filter(|c| c.0 != 6)) {
                assert_eq!(checkpoint::read(&a).unwrap().1, checkpoint::read(&b).unwrap().1, "{scheme} {sides}: step {step}");
            }
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A shallow-water case of `scheme` with rotation, friction, a periodic direction and a
/// bathymetry, so that every term of the step takes part.
fn swe(scheme: &str, step: &str) -> String {
    let extra = if scheme == "ctcs" { ", viscosity: 1.0" } else { "" };
    format!(
        "shallow_water: {{scheme: {scheme}, nx: 24, ny: 18, dx: 200.0, {step}, coriolis: {{f0: 0.01, beta: 1.0e-6}}, \
         friction: 0.001{extra}, boundary: {{east: periodic, west: periodic}}, bathymetry: gpu_ocean_test, \
         initial: {{bump: {{position: corner}}}}}}"
    )
}

/// `cpu.subnormals: flush` holds on restart (the case keeps it), and the summary names it.
#[test]
fn restart_with_flushed_subnormals_is_bit_exact() {
    for (scheme, step) in [("cdklm16", "courant: 0.4"), ("fbl", "dt: 1.0")] {
        let test = format!("rswe_flush_{scheme}");
        check_restart_with(&test, &swe(scheme, step), "f32", "{end_time: 300.5}", "37", "cpu: {subnormals: flush}");
    }
    let dir = scratch("rswe_flush_summary");
    let case = heat_case("h", &swe("kp07", "dt: 0.95"), "f32", "{end_step: 3}", "cpu: {subnormals: flush}");
    write(&dir, "case.yaml", &case);
    ok(sim(&dir, &["run", "case.yaml", "--quiet"]));
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("out/h/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["subnormals"], "flush");
    let check = ok(sim(&dir, &["check", "case.yaml"]));
    assert!(String::from_utf8_lossy(&check.stdout).contains("subnormals: flushed to zero"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn shallow_water_restart_is_bit_exact() {
    // CTCS restarts need both leapfrog levels; the finite-volume schemes an adaptive step
    // recomputed from the restored state; the end time is not a multiple of the step.
    for (scheme, step) in [("fbl", "dt: 1.0"), ("ctcs", "dt: 1.0"), ("cdklm16", "courant: 0.4"), ("kp07", "dt: 0.95")] {
        for (precision, leg) in [("f32", "37"), ("f64", "52")] {
            check_restart(&format!("rswe_{scheme}_{precision}"), &swe(scheme, step), precision, "{end_time: 300.5}", leg);
        }
    }
}
