//! The implicit heat methods against exact answers: Crank–Nicolson's closed-form solution of
//! the sine mode, observed orders in time and space, Peaceman–Rachford ADI against the
//! analytic Gaussian, stability far above the explicit limit, symmetry, the maximum principle
//! where it holds, and bad inputs.

mod common;
use common::*;

use std::f64::consts::PI;

use sim::real::Real;
use sim::solver::Solver;
use sim::solvers::heat::{Heat, Heat1dParams, Heat2dParams, Method, TridiagonalSolver};

fn cn<T: Real>(n: usize, r: f64, tridiagonal: TridiagonalSolver, partitions: Option<usize>) -> Heat<T> {
    let p = Heat1dParams { n, r, method: Method::CrankNicolson, tridiagonal: Some(tridiagonal), partitions, ..Default::default() };
    Heat::heat1d(&p)
}

fn adi<T: Real>(n: usize, r: f64) -> Heat<T> {
    Heat::heat2d(&Heat2dParams { n, r, method: Method::Adi, ..Default::default() })
}

/// Advance to `end` in equal steps of about `dt` (the last one not shortened).
fn run_equal<T: Real>(h: &mut Heat<T>, end: f64) {
    let steps = (end / h.dt()).round().max(1.0) as usize;
    for _ in 0..steps {
        h.advance(end / steps as f64).unwrap();
    }
}

/// Every observed order `log2(e_k / e_{k+1})` of errors on halved steps lies in `range`.
fn assert_orders(errs: &[f64], range: std::ops::RangeInclusive<f64>) {
    let errors: Vec<String> = errs.iter().map(|e| format!("{e:.3e}")).collect();
    let orders: Vec<String> = errs.windows(2).map(|w| format!("{:.3}", (w[0] / w[1]).log2())).collect();
    eprintln!("errors {}, observed orders {}", errors.join(" / "), orders.join(", "));
    for w in errs.windows(2) {
        let p = (w[0] / w[1]).log2();
        assert!(range.contains(&p), "observed order {p} from errors {errs:?}");
    }
}

fn diag(h: &dyn Solver, key: &str) -> f64 {
    h.diagnostics().iter().find(|(n, _)| *n == key).unwrap().1.unwrap()
}

/// sin(pi x) is an eigenvector of both halves: `T_i^n = 6 sin(pi i dx) g^n` with
/// `g = (1 - 2 r s) / (1 + 2 r s)`, `s = sin^2(pi dx / 2)`, for any r.
fn cn_closed_form_deviation<T: Real>(h: &mut Heat<T>, steps: i32) -> f64 {
    let n = h.grid().n[0];
    let (dx, r) = (1.0 / (n - 1) as f64, h.r());
    let s = (PI * dx / 2.0).sin().powi(2);
    let g = (1.0 - 2.0 * r * s) / (1.0 + 2.0 * r * s);
    for _ in 0..steps {
        h.advance(h.dt()).unwrap();
    }
    let t = h.temperature();
    (0..n).map(|i| (t[i].f64() - 6.0 * (PI * i as f64 * dx).sin() * g.powi(steps)).abs()).fold(0.0, f64::max)
}

#[test]
fn crank_nicolson_matches_its_closed_form() {
    for (r, steps) in [(0.4, 400), (50.0, 200)] {
        // Round-off: the explicit half sums terms up to (2r + 1) times the result, so each
        // step may add about (2r + 1) eps |T|.
        let bound = steps as f64 * (2.0 * r + 1.0) * f64::EPSILON * 6.0;
        let d = cn_closed_form_deviation(&mut cn::<f64>(1001, r, TridiagonalSolver::Thomas, None), steps);
        assert!(d < bound, "Thomas, r = {r}: deviation {d:e}, round-off bound {bound:e}");
        // r = 50 over 8 partitions of 125 rows: dominance (1 + r)/r = 1.02 is too weak to
        // truncate (1.02^-125 = 0.08); the plan falls back to Thomas, still exact.
        let d = cn_closed_form_deviation(&mut cn::<f64>(1001, r, TridiagonalSolver::Spike, Some(8)), steps);
        assert!(d < bound, "SPIKE, r = {r}: deviation {d:e}, round-off bound {bound:e}");
    }
    let bound = 400.0 * (2.0 * 0.4 + 1.0) * f32::EPSILON as f64 * 6.0;
    for solver in [TridiagonalSolver::Thomas, TridiagonalSolver::Spike] {
        let partitions = (solver == TridiagonalSolver::Spike).then_some(8);
        let d = cn_closed_form_deviation(&mut cn::<f32>(1001, 0.4, solver, partitions), 400);
        eprintln!("f32 {solver:?}: deviation {d:e}, round-off bound {bound:e}");
        assert!(d < bound, "f32 {solver:?}: deviation {d:e}, round-off bound {bound:e}");
    }
}

#[test]
fn spike_fallback_is_reported() {
    let mut h = cn::<f64>(1001, 50.0, TridiagonalSolver::Spike, Some(8));
    h.advance(h.dt()).unwrap();
    let report = h.report();
    let reason = report.get("tridiagonal_fallback").and_then(|v| v.as_str()).unwrap_or_default().to_string();
    assert!(reason.contains("dominance"), "{report:?}");
    // A shortened last step (r = 0.05, truncated) leaves the run's fallback reported as it was.
    h.advance(h.dt() * 1e-3).unwrap();
    assert_eq!(h.report().get("tridiagonal_fallback").and_then(|v| v.as_str()), Some(reason.as_str()));
    // Strongly dominant (r = 0.4: (1 + r)/r = 3.5) on partitions of 125 rows: truncated.
    let mut h = cn::<f64>(1001, 0.4, TridiagonalSolver::Spike, Some(8));
    h.advance(h.dt()).unwrap();
    assert!(h.report().get("tridiagonal_fallback").is_none(), "{:?}", h.report());
    // `sim check` plans as the run does, in the run's precision.
    let dir = scratch("heat_implicit_fallback_check");
    for (r, truncated) in [("50.0", false), ("0.4", true)] {
        let solver = format!("heat1d: {{n: 1001, r: {r}, method: crank_nicolson, tridiagonal: spike, partitions: 8}}");
        write(&dir, "c.yaml", &heat_case("h", &solver, "f64", "{end_step: 1}", ""));
        let out = String::from_utf8(ok(sim(&dir, &["check", "c.yaml"])).stdout).unwrap();
        let said = if truncated { "truncated SPIKE on 8 partitions" } else { "SPIKE not truncated: diagonal dominance" };
        assert!(out.contains(said), "r = {r}: {out}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn crank_nicolson_is_second_order_in_time() {
    // Against the exact solution of the space-discrete problem, exp(-lambda t) with
    // lambda = 4 a / dx^2 sin^2(pi dx / 2), so that only the time error remains.
    let n = 257;
    let dx = 1.0 / (n - 1) as f64;
    let lambda = 4.0 / (dx * dx) * (PI * dx / 2.0).sin().powi(2);
    let errs: Vec<f64> = [8.0, 16.0, 32.0, 64.0]
        .iter()
        .map(|&steps| {
            let dt = 0.1 / steps;
            let mut h = cn::<f64>(n, dt / (dx * dx), TridiagonalSolver::Thomas, None);
            run_equal(&mut h, 0.1);
            let t = h.temperature();
            (0..n).map(|i| (t[i] - 6.0 * (PI * i as f64 * dx).sin() * (-lambda * 0.1).exp()).abs()).fold(0.0, f64::max)
        })
        .collect();
    assert_orders(&errs, 1.95..=2.05);
}

#[test]
fn crank_nicolson_is_second_order_with_dt_proportional_to_dx() {
    // dt = dx / 10, so r = (n - 1) / 10 grows to 25.6: far above the explicit limit.
    let errs: Vec<f64> = [33, 65, 129, 257]
        .iter()
        .map(|&n| {
            let dx = 1.0 / (n - 1) as f64;
            let mut h = cn::<f64>(n, 0.1 / dx, TridiagonalSolver::Thomas, None);
            run_equal(&mut h, 0.1);
            h.errors().1
        })
        .collect();
    assert_orders(&errs, 1.9..=2.1);
}

#[test]
fn crank_nicolson_is_stable_at_r_50() {
    let mut h = cn::<f64>(512, 50.0, TridiagonalSolver::Thomas, None);
    let max0 = diag(&h, "T_max");
    run_equal(&mut h, 0.1);
    let (max, rms) = h.errors();
    assert!(diag(&h, "T_max") < max0 && max < 1e-3 && rms < 1e-3, "max error {max:e}, rms {rms:e}");
}

#[test]
fn adi_is_second_order_with_dt_proportional_to_dx() {
    // The Gaussian to t = 0.004 (negligible at the walls), dt = dx / 40: r = (n - 1) / 80.
    let errs: Vec<f64> = [65, 129, 257]
        .iter()
        .map(|&n| {
            let dx = 2.0 / (n - 1) as f64;
            let mut h = adi::<f64>(n, 0.025 / dx);
            run_equal(&mut h, 0.004);
            h.errors().1
        })
        .collect();
    assert_orders(&errs, 1.9..=2.1);
}

#[test]
fn adi_is_stable_and_accurate_far_above_the_explicit_limit() {
    // r = 20 (80 times the explicit limit): 7 steps to t = 0.008 where the explicit method
    // takes 650. The first step is as long as the initial Gaussian's age, so the error is
    // the time discretisation's, still within 1% of the peak (explicit, r = 0.2: 0.05%).
    let mut h = adi::<f64>(257, 20.0);
    let (max0, heat0) = (diag(&h, "T_max"), diag(&h, "heat_content"));
    run_equal(&mut h, 0.008);
    let (max, rms) = h.errors();
    let peak = h.exact_field().iter().fold(0.0f64, |m, &v| m.max(v));
    eprintln!("adi r = 20: max error {max:e}, rms {rms:e}, peak {peak}");
    assert!(max / peak < 1e-2 && rms / peak < 1e-3, "max error {max:e}, rms {rms:e}, peak {peak}");
    assert!(diag(&h, "T_max") < max0 && diag(&h, "heat_content") <= heat0);
}

#[test]
fn adi_keeps_the_symmetry_of_the_gaussian() {
    let mut h = adi::<f64>(129, 2.0);
    run_equal(&mut h, 0.004);
    let n = 129;
    let t = h.temperature();
    let max = t.iter().fold(0.0f64, |m, &v| m.max(v));
    let mut d = 0.0f64;
    for j in 0..n {
        for i in 0..n {
            let v = t[j * n + i];
            for w in [t[j * n + n - 1 - i], t[(n - 1 - j) * n + i], t[i * n + j]] {
                d = d.max((v - w).abs());
            }
        }
    }
    // Mirror and diagonal symmetry hold in exact arithmetic (the two halves' operators
    // commute on the square); the Thomas sweeps run one way, so round-off breaks them slightly.
    assert!(d / max < 1e-13, "symmetry defect {:e}", d / max);
}

#[test]
fn maximum_principle_holds_up_to_r_1() {
    // Both halves are monotone for r <= 1: explicit weights 1 - r, r/2, r/2 >= 0, and the
    // implicit matrix an M-matrix with row sums >= 1.
    let mut h = adi::<f64>(65, 1.0);
    let mut h1 = cn::<f64>(65, 1.0, TridiagonalSolver::Thomas, None);
    for s in [&mut h as &mut dyn Solver, &mut h1] {
        let max0 = diag(s, "T_max");
        let (mut max_prev, mut heat_prev) = (max0, diag(s, "heat_content"));
        for _ in 0..200 {
            let dt = s.dt();
            s.advance(dt).unwrap();
            let (max, min, heat) = (diag(s, "T_max"), diag(s, "T_min"), diag(s, "heat_content"));
            assert!(min >= 0.0 && max <= max_prev * (1.0 + 1e-15), "{}: [{min}, {max}], before {max_prev}", s.kind());
            assert!(heat <= heat_prev * (1.0 + 1e-15), "{}: heat content grew", s.kind());
            (max_prev, heat_prev) = (max, heat);
        }
    }
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut a = adi::<f32>(67, 5.0);
            let mut c = cn::<f32>(10_001, 0.4, TridiagonalSolver::Spike, Some(16));
            for _ in 0..20 {
                a.advance(a.dt()).unwrap();
                c.advance(c.dt()).unwrap();
            }
            (a.temperature().to_vec(), c.temperature().to_vec())
        })
    };
    assert!(run(1) == run(2));
}

#[test]
fn bad_inputs_exit_2_naming_the_key() {
    let dir = scratch("heat_implicit_bad");
    let bad: &[(&str, &[&str])] = &[
        ("heat1d: {n: 65, r: 0.6}", &["solver.heat1d.r", "crank_nicolson"]),
        ("heat2d: {n: 65, r: 0.3}", &["solver.heat2d.r", "adi"]),
        ("heat1d: {n: 65, r: 5.0, method: adi}", &["solver.heat1d.method", "heat2d"]),
        ("heat2d: {n: 65, r: 5.0, method: crank_nicolson}", &["solver.heat2d.method", "adi"]),
        ("heat1d: {n: 65, r: 5.0, method: backward_euler}", &["backward_euler"]),
        ("heat1d: {n: 65, r: 0.4, tridiagonal: thomas}", &["solver.heat1d.tridiagonal", "implicit"]),
        ("heat1d: {n: 65, r: 5.0, method: crank_nicolson, partitions: 4}", &["solver.heat1d.partitions", "spike"]),
        ("heat1d: {n: 65, r: 5.0, method: crank_nicolson, tridiagonal: spike, partitions: 64}", &["solver.heat1d.partitions", "64", "63"]),
        ("heat1d: {n: 65, r: 5.0, method: crank_nicolson, tridiagonal: spike, partitions: 0}", &["solver.heat1d.partitions"]),
        ("heat1d: {n: 65, r: 5.0, method: crank_nicolson, tridiagonal: cyclic}", &["cyclic"]),
        ("heat2d: {n: 65, r: 5.0, method: adi, tridiagonal: spike}", &["tridiagonal"]),
    ];
    for (solver, needles) in bad {
        write(&dir, "c.yaml", &heat_case("h", solver, "f64", "{end_step: 3}", ""));
        exit2(&sim(&dir, &["check", "c.yaml"]), needles);
        exit2(&sim(&dir, &["run", "c.yaml", "--quiet"]), needles);
        assert!(!dir.join("out/h").exists(), "a refused run made its directory ({solver})");
    }
    // Beyond f32's range in an f32 run (fine in f64), also where --precision asks for f32.
    let solver = "heat2d: {n: 65, r: 1.0e39, method: adi}";
    write(&dir, "c.yaml", &heat_case("h", solver, "f32", "{end_step: 3}", ""));
    exit2(&sim(&dir, &["check", "c.yaml"]), &["solver.heat2d.r", "f32"]);
    write(&dir, "c.yaml", &heat_case("h", "heat1d: {n: 65, r: 0.4, amplitude: -4.0e38}", "f64", "{end_step: 3}", ""));
    ok(sim(&dir, &["check", "c.yaml"]));
    exit2(&sim(&dir, &["run", "c.yaml", "--precision", "f32", "--quiet"]), &["solver.heat1d.amplitude", "f32"]);
    assert!(!dir.join("out/h").exists(), "a refused run made its directory");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn shipped_implicit_cases_match_the_explicit_accuracy_in_far_fewer_steps() {
    let dir = scratch("heat_implicit_cases");
    let summary = |case: &str| {
        let out = dir.join(case);
        let case = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cases").join(format!("{case}.yaml"));
        ok(sim(&dir, &["run", case.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"]));
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
        (v["steps_run"].as_u64().unwrap(), v["errors"]["max_error"].as_f64().unwrap())
    };
    for (implicit, explicit) in [("heat2d_adi", "heat2d_gaussian"), ("heat1d_crank_nicolson", "heat1d_sine")] {
        let (steps, err) = summary(implicit);
        let (steps_explicit, err_explicit) = summary(explicit);
        eprintln!("{implicit}: {steps} steps, max error {err:e}; {explicit}: {steps_explicit} steps, {err_explicit:e}");
        assert!(steps * 40 < steps_explicit, "{implicit}: {steps} steps against {steps_explicit}");
        assert!(err < err_explicit, "{implicit}: max error {err:e} against {err_explicit:e}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}
