//! Temporal blocking (`cpu.temporal_block`): runs that advance several steps per sweep write
//! the same outputs, history rows and checkpoints, on the same steps and bit for bit, as runs
//! that advance one step per sweep; restarts across settings stay bit-exact.

mod common;
use common::*;

use sim::io::checkpoint;

const HEAT2D: (&str, &str) = ("heat2d: {n: 43, r: 0.2}", "{end_time: 0.0583}");
const HEAT1D: (&str, &str) = ("heat1d: {n: 70001, r: 0.4}", "{end_time: 8.1e-9}");

/// A heat case `(solver, time)` with every kind of schedule: outputs every 7 steps and at
/// multiples of a time that is not a whole number of steps (landed, shortened steps),
/// checkpoints every 11 steps, guard checks every 5, and an end time the last step is
/// shortened to.
fn case((solver, time): (&str, &str), precision: &str, temporal_block: &str) -> String {
    let every_time = if solver.starts_with("heat2d") { "0.0071" } else { "9.9e-10" };
    let extra = format!(
        "output: {{every_steps: 7, every_time: {every_time}}}\ncheckpoint: {{every_steps: 11, keep: 100}}\n\
         guard: {{check_every: 5}}\ncpu: {{temporal_block: {temporal_block}}}"
    );
    heat_case("h", solver, precision, time, &extra)
}

/// Everything a run wrote that does not depend on when it ran: VTK and .pvd files (names and
/// bytes), checkpoints (step, time, fields), and history.csv without its wall-clock column.
type Results = (Vec<(String, Vec<u8>)>, Vec<(u64, f64, Vec<sim::solver::StateArray>)>, Vec<String>);

fn results(dir: &std::path::Path) -> Results {
    let files = snapshot(dir)
        .into_iter()
        .filter(|(name, _)| name.ends_with(".vti") || name.ends_with(".pvd"))
        .collect();
    let checkpoints = checkpoint::list(dir)
        .into_iter()
        .map(|(step, path)| {
            let (meta, arrays) = checkpoint::read(&path).unwrap();
            (step, meta.time, arrays)
        })
        .collect();
    let history = std::fs::read_to_string(dir.join("history.csv")).unwrap();
    let rows = history
        .lines()
        .map(|l| {
            let mut cols: Vec<&str> = l.split(',').collect();
            cols.remove(2);
            cols.join(",")
        })
        .collect();
    (files, checkpoints, rows)
}

#[test]
fn blocked_runs_write_what_unblocked_runs_write() {
    let dir = scratch("tb_schedules");
    for (heat, precision) in [(HEAT2D, "f64"), (HEAT2D, "f32"), (HEAT1D, "f64")] {
        write(&dir, "off.yaml", &case(heat, precision, "off"));
        ok(sim(&dir, &["run", "off.yaml", "--quiet", "--out", "off", "--overwrite"]));
        let plain = results(&dir.join("off"));
        assert!(plain.0.len() > 10 && plain.1.len() > 5 && plain.2.len() > 10, "the case exercises every schedule");
        for (setting, threads) in [("auto", "1"), ("auto", "2"), ("3", "2"), ("8", "1"), ("64", "2")] {
            write(&dir, "on.yaml", &case(heat, precision, setting));
            ok(sim(&dir, &["run", "on.yaml", "--quiet", "--out", "on", "--overwrite", "--threads", threads]));
            let blocked = results(&dir.join("on"));
            let what = format!("{}, {precision}, temporal_block {setting}, {threads} threads", heat.0);
            assert_eq!(plain.0.iter().map(|f| &f.0).collect::<Vec<_>>(), blocked.0.iter().map(|f| &f.0).collect::<Vec<_>>(), "{what}");
            assert!(plain.0 == blocked.0, "{what}: VTK files differ");
            assert!(plain.1 == blocked.1, "{what}: checkpoints differ");
            assert_eq!(plain.2, blocked.2, "{what}: history");
            let summary = std::fs::read_to_string(dir.join("on/summary.json")).unwrap();
            assert!(summary.contains("\"temporal_block\": \""), "{what}: the summary names the tiling: {summary}");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A small cavity that converges (R_K below tol at two residual checks in a row) between its
/// scheduled outputs; the residual steps are not blocked, every other step may be.
fn cavity(temporal_block: &str) -> String {
    format!(
        "name: h\nsolver: {{cavity: {{n: 34, re: 100, residual: {{every: 31, tol: 2.0e-2}}}}}}\ntime: {{end_step: 20000}}\n\
         output: {{every_steps: 37}}\ncheckpoint: {{every_steps: 50, keep: 1000}}\nguard: {{check_every: 25}}\n\
         cpu: {{temporal_block: {temporal_block}}}\n"
    )
}

#[test]
fn blocked_cavity_runs_write_what_unblocked_runs_write_and_converge_on_the_same_step() {
    let dir = scratch("tb_cavity");
    write(&dir, "off.yaml", &cavity("off"));
    ok(sim(&dir, &["run", "off.yaml", "--quiet", "--out", "off"]));
    let plain = results(&dir.join("off"));
    let summary = |d: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(d).join("summary.json")).unwrap()).unwrap()
    };
    let steps = summary("off")["step"].as_u64().unwrap();
    assert!(summary("off")["errors"]["converged"] == true && steps < 20000 && steps % 31 == 0, "{}", summary("off"));
    for (setting, threads) in [("auto", "2"), ("7", "1"), ("64", "2")] {
        write(&dir, "on.yaml", &cavity(setting));
        ok(sim(&dir, &["run", "on.yaml", "--quiet", "--out", "on", "--overwrite", "--threads", threads]));
        let blocked = results(&dir.join("on"));
        let what = format!("cavity, temporal_block {setting}, {threads} threads");
        assert_eq!(summary("on")["step"], steps, "{what}: converged on another step");
        assert!(plain.0 == blocked.0, "{what}: VTK files differ");
        assert!(plain.1 == blocked.1, "{what}: checkpoints differ");
        assert_eq!(plain.2, blocked.2, "{what}: history");
        assert!(summary("on")["errors"]["temporal_block"].is_string(), "{what}: {}", summary("on"));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A walled shallow-water basin with every term of `scheme` at work (β-plane Coriolis,
/// friction, wind, uneven bathymetry; eddy viscosity for CTCS) and the schedules of [`case`]
/// (outputs every 7 steps and at instants that shorten steps, checkpoints every 11 steps,
/// guard checks every 5, a shortened last step).
fn shallow_water(scheme: &str, precision: &str, temporal_block: &str, boundary: &str) -> String {
    let viscosity = if scheme == "ctcs" { ", viscosity: 20.0" } else { "" };
    let solver = format!(
        "shallow_water: {{scheme: {scheme}, nx: 37, ny: 29, dx: 200.0, dy: 150.0, dt: 1.0, \
         coriolis: {{f0: 0.01, beta: 1.0e-6}}, friction: 0.002, wind: [1.0e-4, -2.0e-4]{viscosity}, \
         bathymetry: {{waves: {{mean: 60.0, amplitude: 8.0, wavelength: 3000.0}}}}, \
         initial: {{bump: {{position: corner}}}}, boundary: {boundary}}}"
    );
    let extra = format!(
        "output: {{every_steps: 7, every_time: 9.5}}\ncheckpoint: {{every_steps: 11, keep: 100}}\n\
         guard: {{check_every: 5}}\ncpu: {{temporal_block: {temporal_block}}}"
    );
    heat_case("h", &solver, precision, "{end_time: 60.3}", &extra)
}

const WALLS: &str = "{}";

#[test]
fn blocked_shallow_water_runs_write_what_unblocked_runs_write() {
    let dir = scratch("tb_shallow_water");
    for (scheme, precision) in [("fbl", "f32"), ("fbl", "f64"), ("ctcs", "f32"), ("ctcs", "f64")] {
        write(&dir, "off.yaml", &shallow_water(scheme, precision, "off", WALLS));
        ok(sim(&dir, &["run", "off.yaml", "--quiet", "--out", "off", "--overwrite"]));
        let plain = results(&dir.join("off"));
        assert!(plain.0.len() > 10 && plain.1.len() > 4 && plain.2.len() > 10, "the case exercises every schedule");
        for (setting, threads) in [("auto", "1"), ("auto", "2"), ("3", "2"), ("4", "1"), ("64", "2")] {
            write(&dir, "on.yaml", &shallow_water(scheme, precision, setting, WALLS));
            ok(sim(&dir, &["run", "on.yaml", "--quiet", "--out", "on", "--overwrite", "--threads", threads]));
            let blocked = results(&dir.join("on"));
            let what = format!("{scheme}, {precision}, temporal_block {setting}, {threads} threads");
            assert!(plain.0 == blocked.0, "{what}: VTK files differ");
            assert!(plain.1 == blocked.1, "{what}: checkpoints differ");
            assert_eq!(plain.2, blocked.2, "{what}: history");
            let summary = std::fs::read_to_string(dir.join("on/summary.json")).unwrap();
            assert!(summary.contains("\"temporal_block\": \""), "{what}: the summary names the tiling: {summary}");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn restarts_across_blocking_settings_are_bit_exact() {
    let dir = scratch("tb_restart");
    write(&dir, "off.yaml", &case(HEAT2D, "f64", "off"));
    write(&dir, "on.yaml", &case(HEAT2D, "f64", "5"));
    ok(sim(&dir, &["run", "off.yaml", "--quiet", "--out", "full"]));
    // First leg blocked, second not, and the other way round.
    for (first, second) in [("on.yaml", "off.yaml"), ("off.yaml", "on.yaml")] {
        ok(sim(&dir, &["run", first, "--quiet", "--out", "legs", "--steps", "30", "--overwrite"]));
        ok(sim(&dir, &["run", "--restart", "legs", second, "--quiet"]));
        let (full, legs) = (results(&dir.join("full")), results(&dir.join("legs")));
        assert_eq!(full.1.last().map(|c| c.0), legs.1.last().map(|c| c.0), "{first} then {second}: last step");
        assert!(full.1.last() == legs.1.last(), "{first} then {second}: final state differs");
    }
    // CTCS keeps two levels, and starts its leapfrog on the first step only.
    write(&dir, "off.yaml", &shallow_water("ctcs", "f64", "off", WALLS));
    write(&dir, "on.yaml", &shallow_water("ctcs", "f64", "4", WALLS));
    ok(sim(&dir, &["run", "off.yaml", "--quiet", "--out", "full", "--overwrite"]));
    for (first, second) in [("on.yaml", "off.yaml"), ("off.yaml", "on.yaml")] {
        ok(sim(&dir, &["run", first, "--quiet", "--out", "legs", "--steps", "23", "--overwrite"]));
        ok(sim(&dir, &["run", "--restart", "legs", second, "--quiet"]));
        let (full, legs) = (results(&dir.join("full")), results(&dir.join("legs")));
        assert_eq!(full.1.last().map(|c| c.0), legs.1.last().map(|c| c.0), "ctcs, {first} then {second}: last step");
        assert!(full.1.last() == legs.1.last(), "ctcs, {first} then {second}: final state differs");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn check_says_what_a_run_would_choose() {
    let dir = scratch("tb_check");
    let said = |text: &str| {
        write(&dir, "case.yaml", text);
        String::from_utf8(ok(sim(&dir, &["check", "case.yaml"])).stdout).unwrap()
    };
    let with_threads = |text: String, threads: usize| text + &format!("threads: {threads}\n");
    assert!(said(&with_threads(case(HEAT2D, "f64", "6"), 1)).contains("temporal blocking: 6 steps per sweep, 1 band on 1 thread\n"));
    // Two threads share the 10 levels of a sweep as a pipeline (34 columns would also be too
    // few for two bands of 10 levels); a sweep of one level takes one band per thread.
    assert!(said(&with_threads(cavity("5"), 2)).contains("temporal blocking: 5 steps per sweep, 1 band in a pipeline of 2 stages on 2 threads\n"));
    assert!(said(&with_threads(case(HEAT2D, "f64", "1"), 2)).contains("temporal blocking: 1 steps per sweep, 2 bands on 2 threads\n"));
    assert!(said(&case(HEAT1D, "f32", "auto")).contains("temporal blocking: 32 steps per sweep"));
    assert!(!said(&case(HEAT2D, "f64", "off")).contains("temporal blocking"));
    let adi = heat_case("h", "heat2d: {n: 43, r: 2.0, method: adi}", "f64", "{end_step: 5}", "");
    assert!(!said(&adi).contains("temporal blocking"), "the implicit methods are not blocked");
    let fbl = with_threads(shallow_water("fbl", "f32", "5", WALLS), 1);
    assert!(said(&fbl).contains("temporal blocking: 5 steps per sweep, 1 band on 1 thread\n"), "{}", said(&fbl));
    let walls_and_periodic = "{east: periodic, west: periodic}";
    let sponge = "{north: {sponge: {cells: 4, kind: relaxation}}}";
    for (scheme, boundary) in [("ctcs", walls_and_periodic), ("fbl", sponge)] {
        let text = shallow_water(scheme, "f32", "auto", boundary);
        assert!(!said(&text).contains("temporal blocking"), "{scheme} {boundary} steps one at a time");
    }
    let kp07 = shallow_water("fbl", "f32", "auto", WALLS).replace("scheme: fbl", "scheme: kp07");
    assert!(!said(&kp07).contains("temporal blocking"), "the finite-volume schemes are not blocked");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_bad_temporal_block_is_refused() {
    let dir = scratch("tb_bad");
    for (value, needle) in [("0", "cpu.temporal_block: 0 steps"), ("fast", "auto, off or a number of steps"), ("2.5", "temporal_block")] {
        write(&dir, "case.yaml", &case(HEAT2D, "f64", value));
        exit2(&sim(&dir, &["run", "case.yaml", "--quiet"]), &[needle]);
    }
    let o = sim(&dir, &["bench", "heat2d", "--size", "64", "--seconds", "0.01", "--temporal-block", "-1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // The flag, not the case key, is named.
    let o = sim(&dir, &["bench", "heat2d", "--size", "64", "--seconds", "0.01", "--temporal-block", "0"]);
    exit2(&o, &["--temporal-block: 0 steps"]);
    // A solver without blocked kernels would ignore it.
    let o = sim(&dir, &["bench", "lskum", "--size", "1000", "--seconds", "0.01", "--backend", "cpu", "--temporal-block", "4"]);
    exit2(&o, &["--temporal-block", "lskum"]);
    std::fs::remove_dir_all(dir).unwrap();
}
