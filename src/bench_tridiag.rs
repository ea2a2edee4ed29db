//! `sim bench tridiag`: the tridiagonal solvers of [`crate::numerics::tridiag`] on the heat
//! halves' matrix (`1 + r` on the diagonal, `-r/2` beside it, r = 1: dominance 2), next to
//! COPY over the same elements in the same run.
//!
//! - `--solver thomas` (default): `--batch B` systems of `--size N` unknowns (default
//!   4096 x 4096), timed in both layouts: interleaved (unknown i of system s at `i B + s`,
//!   the column halves of ADI and the GPU layout) and contiguous (one system after another,
//!   the row halves).
//! - `--solver spike`: one system of N unknowns (default 2^27) by truncated SPIKE on
//!   partitions of [`SPIKE_ROWS`] rows, and by sequential Thomas for comparison.
//!
//! Minimum traffic: the right-hand side read and the solution written, `2 N B` elements per
//! solve (the factors of a constant matrix stay in cache).

use rayon::prelude::*;

use crate::bench::{BenchOptions, time_loop};
use crate::error::{Result, input};
use crate::numerics::tridiag::{SpikePlan, Thomas};
use crate::real::{Precision, Real};
use crate::solvers::heat::implicit::matrix;

/// SPIKE partition length: a partition's right-hand side (f64: 256 KiB) stays in the L2
/// cache between the local forward and backward sweeps.
pub const SPIKE_ROWS: usize = 1 << 15;

pub fn bench(o: &BenchOptions) -> Result<serde_json::Value> {
    let solver = o.solver.as_deref().unwrap_or("thomas");
    let (size, batch) = match solver {
        "thomas" => (o.size.unwrap_or(4096), o.batch.unwrap_or(o.size.unwrap_or(4096))),
        "spike" if o.batch.is_some() => return input("--batch: spike solves one system (give --size)"),
        "spike" => (o.size.unwrap_or(1 << 27), 1),
        s => return input(format!("--solver {s}: thomas or spike")),
    };
    if size < 3 || batch == 0 {
        return input(format!("--size {size} --batch {batch}: at least 3 unknowns and 1 system"));
    }
    let elements = size.checked_mul(batch).ok_or_else(|| crate::SimError::Input("--size x --batch: too large".into()))?;
    crate::solvers::check_memory(elements.saturating_mul(2 * o.precision.bytes()))?;
    match o.precision {
        Precision::F32 => figures::<f32>(o, solver, size, batch),
        Precision::F64 => figures::<f64>(o, solver, size, batch),
    }
}

fn figures<T: Real>(o: &BenchOptions, solver: &str, size: usize, batch: usize) -> Result<serde_json::Value> {
    let elements = size * batch;
    let a = matrix::<T>(size, T::one());
    let mut d: Vec<T> = crate::padded::zeroed_huge(elements);
    d.par_iter_mut().enumerate().for_each(|(k, x)| *x = T::of(1.0 + (k % 7) as f64 * 0.1));
    let bytes = (2 * elements * o.precision.bytes()) as f64;
    let copy = crate::bench::copy::<T>(&crate::solvers::Device::Cpu(Default::default()), elements, size.min(1 << 14), o.seconds)?;
    let copy_bw = bytes / copy.1 / 1e9;
    let figure = |(iters, t): (u64, f64)| {
        serde_json::json!({
            "iterations": iters, "time_per_solve_s": t, "unknowns_per_s": elements as f64 / t,
            "systems_per_s": batch as f64 / t, "bw_eff_GBps": bytes / t / 1e9, "fraction_of_copy": bytes / t / 1e9 / copy_bw,
        })
    };
    let mut v = serde_json::json!({
        "name": "tridiag", "solver": solver, "precision": o.precision.name(), "backend": "cpu",
        "threads": rayon::current_num_threads(), "size": size, "batch": batch, "elements": elements,
        "unit": "GB/s (1e9 bytes/s)",
        "copy": { "elements": elements, "iterations": copy.0, "time_per_step_s": copy.1, "bw_GBps": copy_bw },
    });
    let thomas = Thomas::new(&a)?;
    if solver == "thomas" {
        v["interleaved"] = figure(time_loop(o.seconds, || thomas.solve_interleaved(&mut d, batch)));
        v["contiguous"] = figure(time_loop(o.seconds, || thomas.solve_batch(&mut d)));
    } else {
        let partitions = size.div_ceil(SPIKE_ROWS);
        let plan = SpikePlan::plan(&a, partitions)?;
        v["partitions"] = plan.partitions().into();
        if let Some(reason) = plan.fallback_reason() {
            v["fallback"] = reason.into();
        }
        v["spike"] = figure(time_loop(o.seconds, || plan.solve(&mut d)));
        v["thomas_sequential"] = figure(time_loop(o.seconds, || thomas.solve(&mut d)));
    }
    Ok(v)
}

/// Human-readable form of [`bench`]'s result.
pub fn text(v: &serde_json::Value) -> String {
    let f = |x: &serde_json::Value| x.as_f64().unwrap_or(0.0);
    let mut s = format!(
        "bench tridiag --solver {} on cpu ({}, {} threads), {} systems of {} unknowns\n  COPY:   {:>9.3e} s/solve {:>8.2} GB/s\n",
        v["solver"].as_str().unwrap_or(""),
        v["precision"].as_str().unwrap_or(""),
        v["threads"],
        v["batch"],
        v["size"],
        f(&v["copy"]["time_per_step_s"]),
        f(&v["copy"]["bw_GBps"]),
    );
    for key in ["interleaved", "contiguous", "spike", "thomas_sequential"] {
        if let Some(k) = v.get(key) {
            s += &format!(
                "  {:<18} {:>9.3e} s/solve {:>8.2} GB/s (BW_e)  {:.3e} unknowns/s  {:.1}% of COPY\n",
                format!("{key}:"),
                f(&k["time_per_solve_s"]),
                f(&k["bw_eff_GBps"]),
                f(&k["unknowns_per_s"]),
                100.0 * f(&k["fraction_of_copy"]),
            );
        }
    }
    if let Some(p) = v["partitions"].as_u64() {
        s += &format!("  SPIKE partitions: {p}\n");
    }
    if let Some(r) = v["fallback"].as_str() {
        s += &format!("  note: {r}\n");
    }
    s
}
