//! What a run says: the `sim check` plan, `summary.json` and its text form.

use std::path::Path;

use super::schedule::{Ending, Stop};
use crate::case::Case;
use crate::real::Precision;
use crate::solver::{Clock, Solver};

/// ` (t = ...)` for a solver with a physical time, nothing under pseudo-time.
pub fn time_text(s: &dyn Solver) -> String {
    time_at(s.clock(), s.time())
}

/// [`time_text`] of a state at `time` on `clock`.
pub fn time_at(clock: Clock, time: f64) -> String {
    match clock {
        Clock::Physical => format!(" (t = {time:.6e})"),
        Clock::Iterations => String::new(),
    }
}

/// The driver's side of a finished run.
pub struct RunFacts<'a> {
    pub case: &'a str,
    pub threads: usize,
    pub start_step: u64,
    pub compute_s: f64,
    pub wall_s: f64,
    /// Entries of the `.pvd` series.
    pub outputs: usize,
    pub checkpoint: Option<&'a Path>,
    /// Result files the solver wrote.
    pub results: &'a [String],
    /// `cpu.subnormals` of a CPU run.
    pub subnormals: Option<&'static str>,
    /// The back end that ran ([`crate::run::driver::Driver`]'s label).
    pub backend: String,
    /// The case's own end (`time.end_step`/`end_time`) is reached, not only `--steps`.
    pub case_end: bool,
}

/// `summary.json`.
pub fn summary(run: &RunFacts, s: &dyn Solver, ending: Ending) -> serde_json::Value {
    let status = match ending {
        Ending::Converged => "converged",
        Ending::Interrupted => "interrupted",
        // `--steps` stopped it before the case's end: a restart continues it.
        Ending::End if !run.case_end => "stopped",
        Ending::End | Ending::Continue => "completed",
    };
    let steps_run = s.step() - run.start_step;
    let per_step = run.compute_s / steps_run.max(1) as f64;
    let rate = |x: f64| if steps_run > 0 { x / per_step } else { 0.0 };
    let physical = s.clock() == Clock::Physical;
    serde_json::json!({
        "sim_version": env!("CARGO_PKG_VERSION"),
        "case": run.case,
        "solver": s.kind(),
        "status": status,
        "backend": run.backend,
        "precision": s.precision().name(),
        "threads": run.threads,
        "subnormals": run.subnormals,
        "clock": if physical { "physical" } else { "iterations" },
        "start_step": run.start_step,
        "step": s.step(),
        "steps_run": steps_run,
        "time": physical.then(|| s.time()),
        "dt": physical.then(|| s.dt()),
        "wall_time_s": run.wall_s,
        "compute_time_s": run.compute_s,
        "performance": {
            "time_per_step_s": per_step,
            "bw_eff_GBps": rate(s.bytes_per_step()) / 1e9,
            "mcells_per_s": rate(s.mesh().len() as f64) / 1e6,
        },
        "errors": s.report(),
        "outputs": run.outputs,
        "results": run.results,
        "checkpoint": run.checkpoint.map(|p| p.display().to_string()),
    })
}

/// Human-readable end-of-run summary.
pub fn summary_text(v: &serde_json::Value) -> String {
    let at = match v["time"].as_f64() {
        Some(t) => format!(", t = {t:.6e}"),
        None => String::new(),
    };
    let mut s = format!(
        "{} ({}, {}, {}, {} threads): {} at step {}{at}\n",
        v["case"].as_str().unwrap_or(""),
        v["solver"].as_str().unwrap_or(""),
        v["backend"].as_str().unwrap_or(""),
        v["precision"].as_str().unwrap_or(""),
        v["threads"],
        v["status"].as_str().unwrap_or(""),
        v["step"],
    );
    let f = |x: &serde_json::Value| x.as_f64().unwrap_or(0.0);
    let perf = &v["performance"];
    // Point clouds: RDP (s per iteration and point) rather than a bandwidth, which an
    // irregular neighbour access does not have.
    let rate = match v["errors"]["rdp_s"].as_f64() {
        Some(rdp) => format!("RDP = {rdp:.3e} s, {:.2} Mpoints/s", f(&perf["mcells_per_s"])),
        None => format!("BW_e = {:.2} GB/s, {:.1} Mcells/s", f(&perf["bw_eff_GBps"]), f(&perf["mcells_per_s"])),
    };
    s += &format!(
        "  {} steps in {:.2} s wall ({:.2} s computing): {:.3e} s/step, {rate}\n",
        v["steps_run"],
        f(&v["wall_time_s"]),
        f(&v["compute_time_s"]),
        f(&perf["time_per_step_s"]),
    );
    if let Some(e) = v["errors"].as_object() {
        let number = |x: &serde_json::Value| match (x.as_u64(), x.as_f64()) {
            (Some(n), _) => Some(n.to_string()),
            (None, Some(f)) => Some(format!("{f:.3e}")),
            _ => None,
        };
        // The run's decomposition is no comparison with the reference: a line of its own.
        let run_facts = ["rdp_s", "ranks", "halo_exchange_share"];
        let parts: Vec<String> = e
            .iter()
            .filter(|(k, _)| !run_facts.contains(&k.as_str()))
            .filter_map(|(k, x)| number(x).map(|t| format!("{k} = {t}")))
            .collect();
        if !parts.is_empty() {
            let reference = e.get("reference").and_then(|r| r.as_str()).unwrap_or("reference");
            s += &format!("  vs {reference}: {}\n", parts.join(", "));
        }
        if let (Some(ranks), Some(share)) = (e.get("ranks"), e.get("halo_exchange_share").and_then(|x| x.as_f64())) {
            s += &format!("  {ranks} MPI ranks: halo exchange {:.1} % of the step time on rank 0\n", 100.0 * share);
        }
    }
    s += &format!("  {} output files", v["outputs"]);
    if let Some(c) = v["checkpoint"].as_str() {
        s += &format!(", checkpoint {c}");
    }
    s
}

/// Files of a run from `start` to `last` with output every `n` steps: the state it starts
/// from where it writes that (`first`), each later multiple of `n`, and the final state when it
/// is not a multiple.
pub fn output_count(start: u64, last: u64, n: u64, first: bool) -> u64 {
    u64::from(first) + last / n - start / n + u64::from(!last.is_multiple_of(n) && last > start)
}

/// `sim check`: what a run from step `start` would do, from `describe` (the solver's lines)
/// and the step `last` at which it stops (`exact`, or without the steps that land on output
/// instants), writing a frame of its first state or not (`first`), on `ranks` MPI ranks where
/// several.
pub fn check_text(
    case: &Case,
    precision: Precision,
    out_dir: &Path,
    describe: &[String],
    stop: &Stop,
    (start, last, exact, first): (u64, u64, bool, bool),
    ranks: Option<usize>,
) -> String {
    let mut t = format!("case {}: solver {}, precision {}\n", case.name, case.solver.kind(), precision.name());
    for line in describe {
        t += &format!("  {line}\n");
    }
    let mib = |bytes: usize| bytes as f64 / (1u64 << 20) as f64;
    let mem = case.solver.spec().memory_estimate(precision);
    t += &match ranks {
        Some(n) => format!(
            "  memory: {:.1} MiB at the peak on each of {n} ranks, about 1/{n} of the whole case's {:.1} MiB \
             (fields, and the copies output and checkpoints make)\n",
            mib(mem / n),
            mib(mem)
        ),
        None => format!("  memory: {:.1} MiB at the peak (fields, and the copies output and checkpoints make)\n", mib(mem)),
    };
    if stop.end_step.is_none() && case.solver.spec().nominal_dt().is_none() && case.solver.spec().clock() == crate::solver::Clock::Physical {
        t += &format!("  steps: as many as the adaptive time step takes (stop at {})\n", stop.text());
    } else {
        let about = if exact { "" } else { "about " };
        let from = if start > 0 { format!(" from step {start}") } else { String::new() };
        t += &format!("  steps: {about}{}{from} (stop at {})\n", last - start, stop.text());
    }
    let outputs = match (case.output.every_steps, case.output.every_time) {
        (Some(n), None) => format!("every {n} steps ({} files)", output_count(start, last, n, first)),
        (Some(n), Some(t)) => format!("every {n} steps and every {t} of simulated time (steps land on each multiple)"),
        (None, Some(t)) => format!("every {t} of simulated time (steps land on each multiple)"),
        (None, None) => "initial and final state".into(),
    };
    t += &format!("  output: {} -> {}\n", outputs, out_dir.display());
    let ck = match case.checkpoint.every_steps {
        Some(n) => format!("every {n} steps and at the end, keeping {}", case.checkpoint.keep),
        None => format!("at the end, keeping {}", case.checkpoint.keep),
    };
    t += &format!("  checkpoints: {ck}\n");
    t += &format!("  guard: NaN/Inf check and history.csv row every {} steps\n", case.guard.check_every);
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_count_counts_the_initial_the_multiples_and_the_final_state() {
        assert_eq!(output_count(0, 20, 10, true), 3);
        assert_eq!(output_count(0, 25, 10, true), 4);
        assert_eq!(output_count(0, 5, 10, true), 2);
        assert_eq!(output_count(0, 0, 10, true), 1);
        // A restart from step 20: 30, 40 (and its first state only where it writes that).
        assert_eq!(output_count(20, 40, 10, false), 2);
        assert_eq!(output_count(20, 40, 7, false), 4);
        assert_eq!(output_count(20, 40, 10, true), 3);
    }

    #[test]
    fn point_cloud_summaries_give_rdp_and_whole_numbers() {
        let v = serde_json::json!({
            "case": "l", "solver": "lskum", "backend": "cpu", "precision": "f64", "threads": 2,
            "status": "completed", "step": 300, "time": null, "steps_run": 300, "wall_time_s": 3.0,
            "compute_time_s": 2.9, "outputs": 2, "checkpoint": null,
            "performance": {"time_per_step_s": 0.01, "bw_eff_GBps": 12.5, "mcells_per_s": 0.96},
            "errors": {"reference": "none (steady coefficients)", "cl": 0.35, "iterations": 300, "points": 9600, "rdp_s": 1.04e-6},
        });
        let text = summary_text(&v);
        assert!(!text.contains("BW_e") && text.contains("RDP = 1.040e-6 s"), "{text}");
        assert!(text.contains("iterations = 300") && text.contains("points = 9600") && text.contains("cl = 3.500e-1"), "{text}");
        let mut grid = v.clone();
        grid["errors"] = serde_json::json!({"reference": "analytic", "max_error": 1e-3});
        assert!(summary_text(&grid).contains("BW_e = 12.50 GB/s"), "{}", summary_text(&grid));
        grid["errors"]["ranks"] = 4.into();
        grid["errors"]["halo_exchange_share"] = 0.125.into();
        let text = summary_text(&grid);
        assert!(text.contains("vs analytic: max_error = 1.000e-3\n"), "{text}");
        assert!(text.contains("  4 MPI ranks: halo exchange 12.5 % of the step time on rank 0\n"), "{text}");
    }
}
