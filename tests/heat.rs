//! Verification of the heat solvers against exact answers: the discrete closed-form solution,
//! the analytic solutions, their convergence order, symmetry and the maximum principle.

use std::f64::consts::PI;

use sim::real::Real;
use sim::solver::Solver;
use sim::solvers::heat::{Heat, Heat1dParams, Heat2dParams};

fn heat1d<T: Real>(n: usize, r: f64) -> Heat<T> {
    Heat::heat1d(&Heat1dParams { n, r, ..Default::default() })
}

fn heat2d<T: Real>(n: usize, r: f64) -> Heat<T> {
    Heat::heat2d(&Heat2dParams { n, r, ..Default::default() })
}

/// Advance to `end` exactly, shortening the last step like the driver does.
fn run_to<T: Real>(h: &mut Heat<T>, end: f64) {
    while end - h.time() > 1e-9 * h.dt() {
        let dt = h.dt().min(end - h.time());
        h.advance(dt).unwrap();
    }
}

fn order(e_coarse: f64, e_fine: f64) -> f64 {
    (e_coarse / e_fine).log2()
}

#[test]
fn heat1d_matches_discrete_closed_form() {
    // sin(pi x) is an eigenvector of the discrete Laplacian: T_i^n = 6 sin(pi i dx) lambda^n.
    let (n, r, steps) = (512, 0.4, 1000);
    let dx = 1.0 / (n - 1) as f64;
    let lambda = 1.0 - 4.0 * r * (PI * dx / 2.0).sin().powi(2);
    let mut h = heat1d::<f64>(n, r);
    let mut h32 = heat1d::<f32>(n, r);
    for _ in 0..steps {
        h.advance(h.dt()).unwrap();
        h32.advance(h32.dt()).unwrap();
    }
    let exact = |i: usize| 6.0 * (PI * i as f64 * dx).sin() * lambda.powi(steps);
    let dev = |t: &[f64]| t.iter().enumerate().map(|(i, &v)| (v - exact(i)).abs()).fold(0.0, f64::max);
    let d64 = dev(h.temperature());
    assert!(d64 < 1e-11, "f64 deviation {d64:e}");
    let t32: Vec<f64> = h32.temperature().iter().map(|&v| v as f64).collect();
    let d32 = dev(&t32) / 6.0;
    assert!(d32 < 1e-3, "f32 deviation relative to the maximum {d32:e}");
}

#[test]
fn heat1d_error_matches_truncation_estimate() {
    // Modified equation of FTCS: T_t = a T_xx + a dx^2 (1/12 - r/2) T_xxxx, so for the sine
    // mode the error is about 6 exp(-pi^2 t) * dx^2 |1/12 - r/2| pi^4 t.
    let (n, r, t) = (512, 0.4, 0.1);
    let mut h = heat1d::<f64>(n, r);
    run_to(&mut h, t);
    assert!((h.time() - t).abs() < 1e-15);
    let dx = 1.0 / (n - 1) as f64;
    let estimate = 6.0 * (-PI * PI * t).exp() * dx * dx * (1.0 / 12.0 - r / 2.0).abs() * PI.powi(4) * t;
    let (max, _) = h.errors();
    assert!(max < 1.1 * estimate && max > 0.9 * estimate, "max error {max:e}, estimate {estimate:e}");
}

#[test]
fn heat1d_converges_at_second_order() {
    let errs: Vec<f64> = [33, 65, 129, 257]
        .iter()
        .map(|&n| {
            let mut h = heat1d::<f64>(n, 0.4);
            run_to(&mut h, 0.1);
            h.errors().1
        })
        .collect();
    for w in errs.windows(2) {
        let p = order(w[0], w[1]);
        assert!((1.9..=2.1).contains(&p), "observed order {p} from RMS errors {errs:?}");
    }
}

#[test]
fn heat2d_converges_at_second_order_with_published_errors() {
    // Spec heat_cavity.md §2.3 (independent implementation): RMS errors 6.65e-3, 1.67e-3,
    // 4.18e-4 for N-1 = 64, 128, 256 at r = 0.2, end time 0.00625.
    let published = [6.65e-3, 1.67e-3, 4.18e-4];
    let errs: Vec<f64> = [65, 129, 257]
        .iter()
        .map(|&n| {
            let mut h = heat2d::<f64>(n, 0.2);
            run_to(&mut h, 0.00625);
            h.errors().1
        })
        .collect();
    for (e, p) in errs.iter().zip(published) {
        assert!((e / p - 1.0).abs() < 0.01, "RMS error {e:e}, published {p:e}");
    }
    for w in errs.windows(2) {
        let p = order(w[0], w[1]);
        assert!((1.9..=2.1).contains(&p), "observed order {p} from {errs:?}");
    }
}

fn symmetry_defect<T: Real>(h: &Heat<T>) -> f64 {
    let n = h.grid().n[0];
    let t = h.temperature();
    let max = t.iter().fold(0.0f64, |m, v| m.max(v.f64()));
    let at = |i: usize, j: usize| t[j * n + i].f64();
    let mut d = 0.0f64;
    for j in 0..n {
        for i in 0..n {
            let v = at(i, j);
            d = d.max((v - at(n - 1 - i, j)).abs()).max((v - at(i, n - 1 - j)).abs()).max((v - at(j, i)).abs());
        }
    }
    d / max
}

#[test]
fn heat2d_gaussian_stays_symmetric() {
    let mut h = heat2d::<f64>(128, 0.2);
    let mut h32 = heat2d::<f32>(128, 0.2);
    for _ in 0..300 {
        h.advance(h.dt()).unwrap();
        h32.advance(h32.dt()).unwrap();
    }
    let (d64, d32) = (symmetry_defect(&h), symmetry_defect(&h32));
    assert!(d64 < 1e-12, "f64 symmetry defect {d64:e}");
    assert!(d32 < 1e-5, "f32 symmetry defect {d32:e}");
}

#[test]
fn heat2d_obeys_the_maximum_principle_and_loses_heat() {
    let mut h = heat2d::<f64>(65, 0.25);
    let diag = |h: &Heat<f64>, k: &str| h.diagnostics().iter().find(|(n, _)| *n == k).unwrap().1.unwrap();
    let max0 = diag(&h, "T_max");
    let (mut max_prev, mut heat_prev) = (max0, diag(&h, "heat_content"));
    for _ in 0..400 {
        h.advance(h.dt()).unwrap();
        let (max, min, heat) = (diag(&h, "T_max"), diag(&h, "T_min"), diag(&h, "heat_content"));
        assert!(min >= 0.0 && max <= max0, "values left [0, {max0}]: [{min}, {max}]");
        assert!(max <= max_prev * (1.0 + 1e-15), "maximum grew: {max_prev} -> {max}");
        assert!(heat <= heat_prev * (1.0 + 1e-15), "heat content grew: {heat_prev} -> {heat}");
        (max_prev, heat_prev) = (max, heat);
    }
    assert!(heat_prev < 0.99 * diag(&heat2d::<f64>(65, 0.25), "heat_content"), "walls absorb heat");
}

#[test]
fn heat2d_error_against_analytic_solution() {
    // The paper case (N = 512, r = 0.2) to t = 0.005, where the Gaussian is negligible at the walls:
    // RMS error O(dx^2), here about 1.3e-4 on a peak of about 13.
    let mut h = heat2d::<f64>(512, 0.2);
    run_to(&mut h, 0.005);
    let (max, rms) = h.errors();
    let peak = h.exact_field().iter().fold(0.0f64, |m, &v| m.max(v));
    assert!(max / peak < 2e-4 && rms < 2e-4, "max {max:e} (peak {peak}), rms {rms:e}");
    // Boundary nodes stay exactly zero.
    let n = 512;
    let t = h.temperature();
    assert!((0..n).all(|k| t[k] == 0.0 && t[(n - 1) * n + k] == 0.0 && t[k * n] == 0.0 && t[k * n + n - 1] == 0.0));
}

#[test]
fn f32_and_f64_agree_to_f32_round_off() {
    let steps = 400;
    let mut a = heat2d::<f64>(129, 0.2);
    let mut b = heat2d::<f32>(129, 0.2);
    for _ in 0..steps {
        a.advance(a.dt()).unwrap();
        b.advance(b.dt()).unwrap();
    }
    let peak = a.temperature().iter().fold(0.0f64, |m, &v| m.max(v));
    let diff = a
        .temperature()
        .iter()
        .zip(b.temperature())
        .fold(0.0f64, |m, (&x, &y)| m.max((x - y as f64).abs()))
        / peak;
    // Each step adds at most a few f32 ulps of relative error.
    let bound = steps as f64 * f32::EPSILON as f64;
    assert!(diff > 0.0 && diff < bound, "relative difference {diff:e}, bound {bound:e}");
}
