//! Lid-driven cavity: steady state against Ghia et al. (1982), f32/f64 agreement, boundary
//! conditions, restart bit-exactness, NaN guard and bad input.
//!
//! The Re = 100, N = 129 runs (about 1e5 steps each) take tens of seconds on 2 cores; the
//! Re = 1000 run is `#[ignore]`d (run it with `cargo test --release -- --ignored`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use sim::case::{Case, SolverCase};
use sim::io::checkpoint;
use sim::real::{Precision, Real, Values};
use sim::solver::{Solver, StateArray};
use sim::solvers::cavity::{Cavity, CavityParams, Comparison, Reference};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn case_params(file: &str) -> CavityParams {
    let (case, _) = Case::load(&repo().join("cases").join(file)).expect("case loads");
    match case.solver {
        SolverCase::Cavity(p) => p,
        other => panic!("{file} is a {} case", other.kind()),
    }
}

/// Advance until converged (R_K below tol at two consecutive checks) or `max_steps`.
fn converge<T: Real>(p: &CavityParams, max_steps: u64) -> (Cavity<T>, f64) {
    let t0 = Instant::now();
    let mut s = Cavity::<T>::new(p);
    while !s.converged() && s.step() < max_steps {
        let dt = s.dt();
        s.advance(dt).unwrap();
    }
    (s, t0.elapsed().as_secs_f64())
}

struct Converged {
    steps: u64,
    converged: bool,
    /// u along x = 0.5 and v along y = 0.5 at Ghia's stations.
    u: Vec<f64>,
    v: Vec<f64>,
    errors: sim::solvers::cavity::ProfileErrors,
}

fn solve_re100<T: Real>() -> Converged {
    let p = case_params("cavity_re100.yaml");
    let (s, wall) = converge::<T>(&p, 160_000);
    let Comparison { u, v, errors, .. } = s.compare(Reference::Ghia).expect("Ghia tabulates Re = 100");
    eprintln!(
        "Re = 100, N = {}, {}: {} steps (t = {:.3}), {:.1} s, R_K = {:.3e}, u max/rms {:.4}/{:.4}, v max/rms {:.4}/{:.4}",
        p.n,
        T::PRECISION.name(),
        s.step(),
        s.time(),
        wall,
        s.residual(),
        errors.u_max,
        errors.u_rms,
        errors.v_max,
        errors.v_rms
    );
    Converged { steps: s.step(), converged: s.converged(), u, v, errors }
}

fn re100_f64() -> &'static Converged {
    static R: OnceLock<Converged> = OnceLock::new();
    R.get_or_init(solve_re100::<f64>)
}

fn re100_f32() -> &'static Converged {
    static R: OnceLock<Converged> = OnceLock::new();
    R.get_or_init(solve_re100::<f32>)
}

#[test]
fn re100_n129_f64_reaches_steady_state_and_matches_ghia() {
    let r = re100_f64();
    assert!(r.converged, "not converged after {} steps", r.steps);
    assert!(r.errors.u_max <= 0.01, "u max error {}", r.errors.u_max);
    assert!(r.errors.v_max <= 0.01, "v max error {}", r.errors.v_max);
    assert_eq!((r.errors.u_stations, r.errors.v_stations), (17, 17));
}

#[test]
fn re100_n129_f32_matches_ghia_and_f64() {
    let r = re100_f32();
    assert!(r.converged, "not converged after {} steps", r.steps);
    assert!(r.errors.u_max <= 0.01 && r.errors.v_max <= 0.01, "{:?}", r.errors);
    let d = re100_f64();
    let diff = r.u.iter().zip(&d.u).chain(r.v.iter().zip(&d.v)).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    eprintln!("f32 vs f64 profiles: max difference {diff:.2e}");
    assert!(diff <= 1e-3, "f32 and f64 profiles differ by {diff}");
}

#[test]
#[ignore = "about 3e5 steps; run with --ignored"]
fn re1000_n129_matches_ghia() {
    let p = case_params("cavity_re1000_n129.yaml");
    let (s, wall) = converge::<f64>(&p, 1_000_000);
    let e = s.compare(Reference::Ghia).unwrap().errors;
    eprintln!("Re = 1000, N = 129: {} steps, {wall:.1} s, R_K = {:.3e}, {e:?}", s.step(), s.residual());
    assert!(s.converged(), "not converged after {} steps", s.step());
    assert!(e.u_max <= 0.03 && e.v_max <= 0.03, "{e:?}");
}

fn small(n: usize) -> CavityParams {
    let mut p = case_params("cavity_re100.yaml");
    p.n = n;
    p
}

#[test]
fn boundary_values_hold_after_every_step() {
    let p = small(33);
    let mut s = Cavity::<f64>::new(&p);
    let n = p.n;
    for _ in 0..300 {
        let dt = s.dt();
        s.advance(dt).unwrap();
        let (u, v, pr) = (s.u(), s.v(), s.p());
        let at = |i: usize, j: usize| j * n + i;
        for k in 1..n - 1 {
            // Lid (non-corner), bottom, left and right walls.
            assert_eq!((u[at(k, n - 1)], v[at(k, n - 1)]), (1.0, 0.0), "lid at i = {k}");
            assert_eq!((u[at(k, 0)], v[at(k, 0)]), (0.0, 0.0));
            assert_eq!((u[at(0, k)], v[at(0, k)]), (0.0, 0.0));
            assert_eq!((u[at(n - 1, k)], v[at(n - 1, k)]), (0.0, 0.0));
            // Pressure at every non-corner edge node equals its inward neighbour.
            assert_eq!(pr[at(k, 0)], pr[at(k, 1)]);
            assert_eq!(pr[at(k, n - 1)], pr[at(k, n - 2)]);
            assert_eq!(pr[at(0, k)], pr[at(1, k)]);
            assert_eq!(pr[at(n - 1, k)], pr[at(n - 2, k)]);
        }
    }
    assert!(s.p().iter().any(|&x| x != 0.0), "the flow developed");
}

#[test]
fn even_grids_average_the_two_middle_lines() {
    let p = small(34);
    let mut s = Cavity::<f64>::new(&p);
    for _ in 0..200 {
        let dt = s.dt();
        s.advance(dt).unwrap();
    }
    let cu = s.centreline_u();
    let n = p.n;
    for (j, &got) in cu.iter().enumerate() {
        let want = 0.5 * (s.u()[j * n + n / 2 - 1] + s.u()[j * n + n / 2]);
        assert_eq!(got, want);
    }
}

// ---------------------------------------------------------------------------------------
// End-to-end through the `sim` binary.

fn sim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sim"))
}

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cavity-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A small cavity case: N = 33, residual every `every` steps with tolerance `tol`.
fn small_case(dir: &Path, name: &str, extra: &str, every: u64, tol: f64, end_step: u64) -> PathBuf {
    let text = format!(
        "name: {name}\nsolver:\n  cavity:\n    n: 33\n    re: 100\n{extra}    residual:\n      every: {every}\n      tol: {tol:e}\n\
         time:\n  end_step: {end_step}\noutput:\n  every_steps: 100\ncheckpoint:\n  every_steps: 100\n  keep: 20\n\
         guard:\n  check_every: 25\n"
    );
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn run_ok(args: &[&str]) -> String {
    let out = sim().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "sim {args:?} failed: {err}");
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn fields(path: &Path) -> Vec<StateArray> {
    let (_, mut a) = checkpoint::read(path).unwrap();
    a.sort_by(|x, y| x.name.cmp(&y.name));
    a
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn restart_bit_exact(precision: &str) {
    let dir = scratch(&format!("restart-{precision}"));
    // Never converges (tol tiny): the run goes to end_step; restart at 175 sits between two
    // residual checks, so the snapshot arrays must come back exactly.
    let case = small_case(&dir, "r", "", 50, 1e-30, 400);
    let (a, b) = (dir.join("a"), dir.join("b"));
    let c = case.to_str().unwrap();
    run_ok(&["run", c, "--out", a.to_str().unwrap(), "--precision", precision, "--quiet"]);
    run_ok(&["run", c, "--out", b.to_str().unwrap(), "--precision", precision, "--quiet", "--steps", "175"]);
    assert!(b.join("checkpoint_00000175.h5").is_file());
    run_ok(&["run", "--restart", b.to_str().unwrap(), "--quiet"]);
    let (fa, fb) = (fields(&a.join("checkpoint_00000400.h5")), fields(&b.join("checkpoint_00000400.h5")));
    let names: Vec<&str> = fa.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(names, ["p", "residual_state", "u", "u_snapshot", "v", "v_snapshot"]);
    assert_eq!(fa, fb, "restarted run differs from the uninterrupted one");
    // The history rows after the restart agree too (except wall time).
    let strip = |d: &Path| -> Vec<String> {
        std::fs::read_to_string(d.join("history.csv"))
            .unwrap()
            .lines()
            .map(|l| {
                let mut c: Vec<&str> = l.split(',').collect();
                c.remove(2);
                c.join(",")
            })
            .collect()
    };
    assert_eq!(strip(&a), strip(&b));
    let (sa, sb) = (json(&a.join("summary.json")), json(&b.join("summary.json")));
    assert_eq!(sa["errors"], sb["errors"]);
}

#[test]
fn restart_is_bit_exact_f64() {
    restart_bit_exact("f64");
}

#[test]
fn restart_is_bit_exact_f32() {
    restart_bit_exact("f32");
}

#[test]
fn restart_keeps_the_convergence_state() {
    // tol huge: below at the check of step 50, converged at step 100.
    let dir = scratch("restart-converged");
    let case = small_case(&dir, "c", "", 50, 1e9, 1000);
    let (a, b) = (dir.join("a"), dir.join("b"));
    let c = case.to_str().unwrap();
    run_ok(&["run", c, "--out", a.to_str().unwrap(), "--quiet"]);
    run_ok(&["run", c, "--out", b.to_str().unwrap(), "--quiet", "--steps", "75"]);
    run_ok(&["run", "--restart", b.to_str().unwrap(), "--quiet"]);
    for d in [&a, &b] {
        let s = json(&d.join("summary.json"));
        assert_eq!(s["status"], "converged", "{}", d.display());
        assert_eq!(s["step"], 100, "{}", d.display());
    }
    assert_eq!(fields(&a.join("checkpoint_00000100.h5")), fields(&b.join("checkpoint_00000100.h5")));
    // Converged at the case's last step: still reported as converged.
    let at_end = small_case(&dir, "e", "", 50, 1e9, 100);
    let e = dir.join("e");
    run_ok(&["run", at_end.to_str().unwrap(), "--out", e.to_str().unwrap(), "--quiet"]);
    let s = json(&e.join("summary.json"));
    assert_eq!((s["status"].as_str(), s["step"].as_u64()), (Some("converged"), Some(100)), "{s}");
    // The checkpoint says it is converged, so continuing it is refused and changes nothing.
    let state = fields(&a.join("checkpoint_00000100.h5")).into_iter().find(|x| x.name == "residual_state").unwrap();
    assert_eq!(state.values.to_f64()[2], 2.0, "tolerance flag: converged");
    let files = |d: &Path| {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(d).unwrap().flatten()
            .map(|e| (e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap()))
            .filter(|(n, _)| n != ".sim-lock")
            .collect();
        v.sort();
        v
    };
    let before = files(&a);
    let out = sim().args(["run", "--restart", a.to_str().unwrap(), "--quiet"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("step 100") && err.contains("steady state"), "{err}");
    assert_eq!(before, files(&a));
}

#[test]
fn run_writes_profiles_history_and_summary() {
    let dir = scratch("outputs");
    let case = small_case(&dir, "o", "", 100, 1e-30, 300);
    let out = dir.join("out");
    run_ok(&["run", case.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"]);
    let s = json(&out.join("summary.json"));
    assert_eq!(s["solver"], "cavity");
    assert_eq!(s["status"], "completed");
    let e = &s["errors"];
    for k in ["u_max_error", "u_rms_error", "v_max_error", "v_rms_error", "max_error", "R_K"] {
        assert!(e[k].as_f64().is_some_and(|x| x.is_finite()), "errors.{k} in {e}");
    }
    assert!(e["reference"].as_str().unwrap().contains("Ghia"));
    let cu = std::fs::read_to_string(out.join("centreline_u.csv")).unwrap();
    let lines: Vec<&str> = cu.lines().collect();
    assert_eq!(lines[0], "y,u,u_ghia,ghia_suspect");
    assert_eq!(lines.len(), 18);
    assert!(lines[17].starts_with("1.0000,1.0"), "lid row {}", lines[17]);
    let cv = std::fs::read_to_string(out.join("centreline_v.csv")).unwrap();
    assert!(cv.starts_with("x,v,v_ghia,ghia_suspect\n") && cv.lines().count() == 18);
    assert_eq!(std::fs::read_to_string(out.join("profile_u.csv")).unwrap().lines().count(), 34);
    let h = std::fs::read_to_string(out.join("history.csv")).unwrap();
    let header = h.lines().next().unwrap();
    assert!(header.starts_with("step,time,wall_s,R_K,"), "{header}");
    // Before its first measurement R_K has no value: an empty cell, never NaN.
    let first = h.lines().nth(1).unwrap();
    assert!(first.starts_with("0,") && first.split(',').nth(3) == Some(""), "{first}");
    assert!(!h.contains("NaN") && !h.contains("inf"), "{h}");
    let steps: Vec<&str> = h.lines().skip(1).map(|l| l.split(',').next().unwrap()).collect();
    let mut dedup = steps.clone();
    dedup.dedup();
    assert_eq!(steps, dedup, "one history row per step");
    let vti = std::fs::read(out.join("o_00000300.vti")).unwrap();
    let head = String::from_utf8_lossy(&vti[..vti.len().min(2000)]).to_string();
    for f in
        [r#"Name="velocity" NumberOfComponents="3""#, r#"Name="p""#, r#"Name="vorticity""#, r#"Name="speed""#]
    {
        assert!(head.contains(f), "{f} missing in the VTK header");
    }
}

#[test]
fn unknown_re_runs_without_reference() {
    let dir = scratch("noref");
    let case = small_case(&dir, "n", "", 100, 1e-30, 100);
    let text = std::fs::read_to_string(&case).unwrap().replace("re: 100", "re: 250");
    std::fs::write(&case, text).unwrap();
    let out = dir.join("out");
    run_ok(&["run", case.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"]);
    let s = json(&out.join("summary.json"));
    assert!(s["errors"]["reference"].as_str().unwrap().starts_with("none"));
    assert!(std::fs::read_to_string(out.join("centreline_u.csv")).unwrap().starts_with("y,u\n"));
}

#[test]
fn bad_input_is_rejected_with_the_key_named() {
    let dir = scratch("bad");
    for (extra, key) in [
        ("    dt: 1.0e-3\n", "solver.cavity.dt"),
        ("    mach: -0.1\n", "solver.cavity.mach"),
        ("    lid_velocity: 0\n", "solver.cavity.lid_velocity"),
        ("    speed: 3\n", "speed"),
    ] {
        let case = small_case(&dir, "bad", extra, 100, 1e-4, 100);
        let out = dir.join("out");
        let o =
            sim().args(["run", case.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"]).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra}: {err}");
        assert!(err.contains(key), "{extra}: message should name {key}: {err}");
        assert!(!out.exists(), "nothing written for bad input");
    }
    let case = small_case(&dir, "bad", "", 100, 1e-4, 100);
    let text = std::fs::read_to_string(&case).unwrap().replace("re: 100", "re: -5");
    std::fs::write(&case, text).unwrap();
    let o = sim().args(["check", case.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("solver.cavity.re"));
}

#[test]
fn check_reports_dt_and_limits() {
    let out = run_ok(&["check", repo().join("cases/cavity_re100.yaml").to_str().unwrap()]);
    assert!(out.contains("dt = 1.562500e-4 (acoustic limit"), "{out}");
}

#[test]
fn a_checkpoint_with_nan_is_refused_naming_field_and_node() {
    // A checkpoint with a NaN in p (as one written between two guard checks of a failing run):
    // the restart is refused, naming the field and the node, with exit code 2.
    let dir = scratch("nan");
    let case = small_case(&dir, "nan", "", 100, 1e-30, 200);
    let out = dir.join("out");
    run_ok(&["run", case.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet", "--steps", "100"]);
    let ck = out.join("checkpoint_00000100.h5");
    let (meta, mut arrays) = checkpoint::read(&ck).unwrap();
    let p = arrays.iter_mut().find(|a| a.name == "p").unwrap();
    if let Values::F64(v) = &mut p.values {
        v[17 * 33 + 5] = f64::NAN;
    }
    let grid = sim::solver::Grid { n: [33, 33], origin: [0.0, 0.0], spacing: [1.0 / 32.0; 2] };
    checkpoint::write(&ck, &meta, &arrays, &sim::solver::Mesh::Nodes(grid)).unwrap();
    let o = sim().args(["run", "--restart", ck.to_str().unwrap(), "--quiet"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("the state holds the non-finite value NaN in field p at node (5, 17)"), "{err}");
    // The library reports the first bad node of the first bad field.
    let mut s = Cavity::<f64>::new(&small(33));
    s.restore(100, 1.0, arrays).unwrap();
    let nf = s.find_non_finite().unwrap();
    assert_eq!((nf.field, nf.index.clone()), ("p", vec![5, 17]));
}

#[test]
fn restore_rejects_wrong_shapes_and_precision() {
    let p = small(33);
    let s = Cavity::<f64>::new(&p);
    let mut wrong = Cavity::<f64>::new(&small(17));
    let e = wrong.restore(0, 0.0, s.state()).unwrap_err().to_string();
    assert!(e.contains("shape"), "{e}");
    let mut f32s = Cavity::<f32>::new(&p);
    let e = f32s.restore(0, 0.0, s.state()).unwrap_err().to_string();
    assert!(e.contains("f64"), "{e}");
    assert_eq!(Precision::F32.name(), "f32");
}
