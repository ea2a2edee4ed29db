//! The tridiagonal solvers' accuracy against diagonal dominance (MacIntosh et al. 2019,
//! Fig. 9): random f32 systems with a known solution, Thomas (TDMA) and truncated SPIKE on
//! partitions of the paper's size, against the error estimate `d^-m` of the paper's eq. 8.
//! `scripts/plot_tridiag_accuracy.py` plots the whole curve from `accuracy_curve`.

use sim::numerics::tridiag::{SpikePlan, Thomas, Tridiagonal};

/// The partition size of the paper's GPU and FPGA solvers (and its CPU solver's m_min).
const M: usize = 32;
const N: usize = 1 << 15;

/// xorshift64 in [-1, 1).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

/// The off-diagonals: uniform in [-1, 1] (the paper's random matrices), or the worst case
/// for truncation, `|a| = 1` and `|c| = 0.01` (random signs): the left spike then decays by
/// only `1/d` per row, so the dropped tip is `d^-m`, eq. 8's estimate.
#[derive(Clone, Copy)]
enum Family {
    Random,
    Worst,
}

/// A random system of dominance exactly `d` on every row (the diagonal `±d (|a| + |c|)`),
/// its solution `x` uniform in [-1, 1], and the right-hand side `A x` evaluated in f64 and
/// rounded once to f32.
fn system(family: Family, d: f64, seed: u64) -> (Tridiagonal<f32>, Vec<f32>, Vec<f32>) {
    let mut rng = Rng(seed);
    let (mut lower, mut diag, mut upper) = (vec![0.0f32; N], vec![0.0f32; N], vec![0.0f32; N]);
    for i in 0..N {
        let (a, c) = match family {
            Family::Random => (rng.next(), rng.next()),
            Family::Worst => (rng.next().signum(), 0.01 * rng.next().signum()),
        };
        lower[i] = if i > 0 { a as f32 } else { 0.0 };
        upper[i] = if i + 1 < N { c as f32 } else { 0.0 };
        let sign = if rng.next() < 0.0 { -1.0 } else { 1.0 };
        diag[i] = (sign * d * (lower[i].abs() as f64 + upper[i].abs() as f64)) as f32;
    }
    let x: Vec<f32> = (0..N).map(|_| rng.next() as f32).collect();
    let y = (0..N)
        .map(|i| {
            let w = if i > 0 { lower[i] as f64 * x[i - 1] as f64 } else { 0.0 };
            let e = if i + 1 < N { upper[i] as f64 * x[i + 1] as f64 } else { 0.0 };
            (w + diag[i] as f64 * x[i] as f64 + e) as f32
        })
        .collect();
    (Tridiagonal::general(lower, diag, upper), x, y)
}

/// Infinity-norm errors at dominance `d`, the worst of a few seeds: TDMA, truncated SPIKE,
/// and SPIKE as planned for a solver (falling back to Thomas where truncation would lose
/// accuracy).
fn errors(family: Family, d: f64) -> (f64, f64, f64) {
    let mut worst = (0.0f64, 0.0f64, 0.0f64);
    for seed in 1..=3u64 {
        let (a, x, y) = system(family, d, 0x9E37_79B9 * seed);
        let err = |got: &[f32]| got.iter().zip(&x).map(|(g, w)| (g - w).abs() as f64).fold(0.0, f64::max);
        let mut t = y.clone();
        Thomas::new(&a).unwrap().solve(&mut t);
        let mut s = y.clone();
        SpikePlan::plan_truncated(&a, N / M).unwrap().solve(&mut s);
        let mut g = y.clone();
        SpikePlan::plan(&a, N / M).unwrap().solve(&mut g);
        worst = (worst.0.max(err(&t)), worst.1.max(err(&s)), worst.2.max(err(&g)));
    }
    worst
}

const EPS: f64 = f32::EPSILON as f64;

#[test]
fn random_systems_reach_round_off_where_the_paper_does() {
    // TDMA reaches round-off (a few eps) from d = 2 and truncated SPIKE on 32-row
    // partitions by d = 2.8, as in the paper's Fig. 9. With random off-diagonals the spikes
    // decay faster than eq. 8's worst case, so here SPIKE is as accurate as TDMA from d = 1.
    for d in [2.0, 2.8, 4.0] {
        let (t, s, _) = errors(Family::Random, d);
        assert!(t < 4.0 * EPS && s < 4.0 * EPS, "d = {d}: TDMA {t:e}, SPIKE {s:e}");
    }
    for d in [1.05, 1.5] {
        let (t, s, _) = errors(Family::Random, d);
        assert!(s < 1.5 * t.max(2.0 * EPS), "d = {d}: SPIKE {s:e} against TDMA {t:e}");
    }
}

#[test]
fn truncation_error_follows_the_estimate_and_the_guard_falls_back() {
    for d in [1.2, 1.3, 1.4] {
        let (t, s, g) = errors(Family::Worst, d);
        let estimate = d.powi(-(M as i32));
        // Eq. 8: the error of the truncated algorithm is about d^-m ...
        assert!(s > 0.1 * estimate && s < 4.0 * estimate, "d = {d}: SPIKE {s:e}, d^-m = {estimate:e}");
        // ... which the guarded plan does not accept: it solves with Thomas.
        assert!(g == t && t < 4.0 * EPS, "d = {d}: guarded {g:e}, TDMA {t:e}");
    }
    // Once d^-m is below round-off, truncation is as accurate as TDMA (here from d = 1.8).
    for d in [1.8, 2.8] {
        let (t, s, g) = errors(Family::Worst, d);
        assert!(s < 4.0 * EPS && g == s, "d = {d}: SPIKE {s:e}, guarded {g:e}, TDMA {t:e}");
    }
}

/// The whole curve as CSV (d, then TDMA and SPIKE errors for the random and the worst-case
/// family, then d^-m) on stdout, or in the file named by `SIM_TRIDIAG_CSV`:
/// `scripts/plot_tridiag_accuracy.py` runs this.
#[test]
#[ignore]
fn accuracy_curve() {
    let mut csv = String::from("dominance,tdma_random,spike_random,tdma_worst,spike_worst,estimate\n");
    for k in 0..=60 {
        let d = 1.01 + 0.05 * k as f64;
        let (tr, sr, _) = errors(Family::Random, d);
        let (tw, sw, _) = errors(Family::Worst, d);
        csv += &format!("{d:.2},{tr:e},{sr:e},{tw:e},{sw:e},{:e}\n", d.powi(-(M as i32)));
    }
    match std::env::var_os("SIM_TRIDIAG_CSV") {
        Some(path) => std::fs::write(path, csv).unwrap(),
        None => print!("{csv}"),
    }
}
