//! `sim bench`: any solver of the registry, timed through the [`Solver`] interface at a
//! problem size, next to a COPY kernel measured in the same run (same threads, or same
//! device) over as many elements, or more where the solver's minimum traffic per step is
//! larger. Effective bandwidth comes from the solver's `bytes_per_step`.

use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

use crate::case::Backend;
use crate::cuda::{Gpu, GpuOptions};
use crate::error::{Result, SimError, input};
use crate::real::{Precision, Real};
use crate::run::schedule::Landing;
use crate::solver::{Clock, Mesh, Solver};
use crate::solvers::{Device, SOLVERS};

#[derive(Clone, Debug, Default)]
pub struct BenchOptions {
    pub backend: Backend,
    /// Kernel variant and block shape for the CUDA back end.
    pub gpu: GpuOptions,
    /// `copy` or a solver name.
    pub name: String,
    /// Nodes per side (2D grids), nodes (1D) or points; default the solver's.
    pub size: Option<usize>,
    /// Scheme of a solver that has several.
    pub scheme: Option<String>,
    pub precision: Precision,
    pub threads: Option<usize>,
    /// Minimum timed duration of each kernel.
    pub seconds: f64,
    /// Temporal blocking and other CPU options.
    pub cpu: crate::cpu::CpuOptions,
    /// `tridiag`: systems per solve (`thomas`).
    pub batch: Option<usize>,
    /// `tridiag`: `thomas` or `spike`.
    pub solver: Option<String>,
    /// `tridiag` on a device: shares of the batch to solve on the CPU while the device
    /// solves the rest.
    pub cpu_share: Option<Vec<f64>>,
    /// `lskum`: the order the solver holds the points in (default: the case default).
    pub renumber: Option<crate::solvers::lskum::Renumber>,
    /// Sample the GPU's power draw with nvidia-smi while the solver runs.
    pub power: bool,
    /// Rounds of PEAK and the solver, each between two COPY runs (0 is taken as 1).
    pub rounds: usize,
}

/// Names `sim bench` accepts.
pub fn names() -> Vec<&'static str> {
    ["copy", "tridiag"].into_iter().chain(SOLVERS.iter().map(|e| e.name)).collect()
}

/// Refuse a benchmark whose arrays need more memory than the machine has available, naming
/// the `flags` that size it.
pub fn check_memory(bytes: usize, flags: &str) -> Result<()> {
    match crate::solvers::memory_short(bytes) {
        Some((need, free)) => input(format!(
            "{flags}: the benchmark needs about {need:.2} GiB of memory and this machine has {free:.2} GiB available"
        )),
        None => Ok(()),
    }
}

/// Run a benchmark and return its figures as JSON.
pub fn bench(o: &BenchOptions) -> Result<serde_json::Value> {
    let tridiag = o.name == "tridiag";
    if !tridiag && (o.batch.is_some() || o.solver.is_some() || o.cpu_share.is_some()) {
        return input("--batch, --solver and --cpu-share belong to sim bench tridiag");
    }
    if o.renumber.is_some() && o.name != "lskum" {
        return input("--renumber belongs to sim bench lskum");
    }
    if o.cpu.math == crate::cpu::Math::Fast && (o.name != "lskum" || o.backend == Backend::Cuda) {
        return input("--math fast belongs to sim bench lskum on the CPU (--backend cpu)");
    }
    if o.cpu.subnormals == crate::cpu::Subnormals::Flush && o.backend == Backend::Cuda {
        return input("--subnormals flush belongs to the CPU (--backend cpu); the CUDA back end keeps them");
    }
    if o.gpu.fast_math && o.backend != Backend::Cuda {
        return input("--fast-math compiles the CUDA kernels: it needs --backend cuda");
    }
    if o.power && (o.backend != Backend::Cuda || tridiag || o.name == "copy") {
        return input("--power samples the GPU's power with nvidia-smi: a solver with --backend cuda");
    }
    let entry = crate::solvers::entry(&o.name);
    if entry.is_none() && o.name != "copy" && !tridiag {
        return input(format!("bench: unknown benchmark '{}' (choose one of {})", o.name, names().join(", ")));
    }
    let size = o.size.or(entry.map(|e| e.bench_size)).unwrap_or(4096);
    if o.scheme.is_some() && entry.is_none_or(|e| e.schemes.is_empty()) {
        return input(format!("--scheme: {} has a single scheme", o.name));
    }
    // (A solver's benchmark checks its size as its case key, or its own range.)
    if size < 3 && entry.is_none() {
        return input(format!("--size {size}: at least 3"));
    }
    if o.rounds > 1 && entry.is_none() {
        return input(format!("--rounds: {} times a single round (rounds belong to a solver's benchmark)", o.name));
    }
    crate::validate::timed_seconds(o.seconds)?;
    // Named as the flag that set it, not the case key.
    o.gpu.validate().map_err(|e| match e {
        SimError::Input(m) => SimError::Input(m.replacen("gpu.block:", "--block:", 1)),
        e => e,
    })?;
    o.cpu.validate_as("--temporal-block")?;
    let device = match o.backend {
        Backend::Cuda => {
            let gpu = Gpu::open("--backend cuda", "use --backend cpu or auto")?;
            let name = entry.map_or(o.name.as_str(), |e| e.name);
            let scheme = o.scheme.as_deref().or(entry.and_then(|e| e.schemes.first().copied()));
            // COPY and the tridiagonal kernels take no tuned shape (nor need a readable map).
            let (opts, tuned) = match entry {
                Some(_) => crate::tune::resolve(&gpu, &o.gpu, name, scheme, o.precision)?,
                None => (o.gpu.clone(), None),
            };
            tuned.into_iter().for_each(|note| crate::say!("{note}"));
            Device::Cuda(gpu, opts)
        }
        _ => Device::Cpu(o.cpu.clone()),
    };
    let threads = crate::validate::threads("--threads", o.threads.unwrap_or(0))?;
    let pool = o.cpu.subnormals.pool(threads)?;
    pool.install(|| {
        if tridiag {
            return crate::bench_tridiag::bench(o, &device);
        }
        let solver = match entry {
            // A case key that --size set is named with it.
            Some(e) => Some((e.bench)(size, o, &device).map_err(|e| match e {
                SimError::Input(m) if m.starts_with("solver.") => SimError::Input(format!("--size {size} sets {m}")),
                SimError::Input(m) if m.starts_with("the run needs") => SimError::Input(format!("--size {size}: {m}")),
                e => e,
            })?),
            None => None,
        };
        let mesh = solver.as_ref().map(|s| s.mesh());
        let elements = match &mesh {
            Some(m) => m.len(),
            None => size.checked_mul(size).ok_or_else(|| SimError::Input(format!("--size {size}: too large")))?,
        };
        // Rows of the grid, as the stencils split their work; else chunks of 16 Ki elements.
        let row = match &mesh {
            Some(Mesh::Nodes(g) | Mesh::Cells(g)) if g.n[1] > 1 => g.n[0],
            None => size,
            _ => 1 << 14,
        };
        // COPY moves at least the solver's minimum traffic per step, so that neither runs
        // from a cache the other outgrows (a 2048² f32 COPY fits a 32 MiB L3; the seven
        // arrays of an FBL step do not).
        let traffic = solver.as_ref().map_or(0.0, |s| s.bytes_per_step());
        let copy_elements = elements.max((traffic / (2 * o.precision.bytes()) as f64).ceil() as usize).div_ceil(row) * row;
        check_memory(copy_elements.saturating_mul(2 * o.precision.bytes()), &format!("--size {size}"))?;
        // COPY runs before and after the solver, half its time each (see `copy_figures`).
        let copy_seconds = if solver.is_some() { o.seconds / 2.0 } else { o.seconds };
        let measure_copy = || match o.precision {
            Precision::F32 => copy::<f32>(&device, copy_elements, row, copy_seconds),
            Precision::F64 => copy::<f64>(&device, copy_elements, row, copy_seconds),
        };
        let copy_bytes = 2.0 * (copy_elements * o.precision.bytes()) as f64;
        let mut before = measure_copy()?;
        let mut v = header(o, &device, elements, solver.as_deref());
        if let Some(scheme) = o.scheme.as_deref().or(entry.and_then(|e| e.schemes.first().copied())) {
            v["scheme"] = scheme.into();
        }
        let Some(mut solver) = solver else {
            v["copy"] = copy_figures(copy_elements, copy_bytes, before, None);
            return Ok(v);
        };
        // PEAK beside a solver that counts its flops, on the CPU (a device's is not measured).
        let counted = solver.flops_per_step().is_some() && matches!(device, Device::Cpu(_));
        let mut rounds = vec![];
        for _ in 0..o.rounds.max(1) {
            let mut round = serde_json::json!({});
            let mut peak = None;
            if counted {
                let (calls, t, flops) = match o.precision {
                    Precision::F32 => crate::peak::measure::<f32>(o.seconds),
                    Precision::F64 => crate::peak::measure::<f64>(o.seconds),
                };
                let gflops = flops / t / 1e9;
                round["peak"] = serde_json::json!({ "iterations": calls, "time_per_call_s": t, "gflops": gflops });
                peak = Some(gflops);
            }
            let mut k = if o.power { with_power(solver.as_mut(), o, &device) } else { kernel_figures(solver.as_mut(), o, &device) }?;
            let after = measure_copy()?;
            round["copy"] = copy_figures(copy_elements, copy_bytes, before, Some(after));
            against_bounds(&mut k, round["copy"]["bw_GBps"].as_f64().unwrap_or(f64::NAN), peak);
            round["kernel"] = k;
            rounds.push(round);
            before = after;
        }
        summarise_rounds(&mut v, rounds);
        Ok(v)
    })
}

/// What was measured where.
fn header(o: &BenchOptions, device: &Device, elements: usize, s: Option<&dyn Solver>) -> serde_json::Value {
    let mut v = serde_json::json!({
        "name": o.name,
        "precision": o.precision.name(),
        "elements": elements,
        "unit": "GB/s (1e9 bytes/s)",
    });
    match device {
        Device::Cpu(_) => {
            v["backend"] = "cpu".into();
            v["threads"] = rayon::current_num_threads().into();
            v["subnormals"] = o.cpu.subnormals.name().into();
        }
        Device::Cuda(gpu, opts) => {
            v["backend"] = "cuda".into();
            v["device"] = gpu.name.clone().into();
            v["variant"] = opts.variant.name().into();
            v["block"] = serde_json::json!(opts.block());
            v["fast_math"] = opts.fast_math.into();
            if o.name == "lskum" {
                v["flux"] = opts.flux.name().into();
            }
        }
    }
    if let Some(block) = s.and_then(|s| s.launch_block()) {
        v["block"] = serde_json::json!(block);
    }
    if let Some(tiling) = s.and_then(|s| s.tiling()) {
        v["temporal_block"] = tiling.to_string().into();
    }
    match s.map(|s| s.mesh()) {
        Some(Mesh::Nodes(g) | Mesh::Cells(g)) => {
            v["nx"] = g.n[0].into();
            v["ny"] = g.n[1].into();
        }
        Some(Mesh::Points(p)) => v["points"] = p.len().into(),
        None => {
            v["nx"] = ((elements as f64).sqrt().round() as u64).into();
            v["ny"] = v["nx"].clone();
        }
    }
    v
}

/// The figures of the solver's rounds into `v`: those of the median round by the ratio to
/// COPY as `copy`, `peak` and `kernel`; with several rounds also all of them (`rounds`) and
/// each figure's smallest, median and largest value over them (`spread`), since on a shared
/// machine one round can land in a slow or a fast phase.
fn summarise_rounds(v: &mut serde_json::Value, rounds: Vec<serde_json::Value>) {
    let ratio = |r: &serde_json::Value| r["kernel"]["fraction_of_copy"].as_f64().unwrap_or(f64::NAN);
    let mut order: Vec<usize> = (0..rounds.len()).collect();
    order.sort_by(|&a, &b| ratio(&rounds[a]).total_cmp(&ratio(&rounds[b])));
    let median = &rounds[order[(rounds.len() - 1) / 2]];
    for key in ["copy", "peak", "kernel"] {
        if !median[key].is_null() {
            v[key] = median[key].clone();
        }
    }
    if rounds.len() == 1 {
        return;
    }
    let mut spread = serde_json::json!({});
    for (part, key, name, ..) in SPREAD {
        let mut x: Vec<f64> = rounds.iter().filter_map(|r| r[part][key].as_f64()).collect();
        if x.len() == rounds.len() {
            x.sort_by(f64::total_cmp);
            spread[name] = serde_json::json!({ "min": x[0], "median": x[(x.len() - 1) / 2], "max": x[x.len() - 1] });
        }
    }
    v["spread"] = spread;
    v["rounds"] = rounds.into();
}

/// The figures `spread` gives: (part of a round, key there, key in `spread`, label in the
/// text, whether a share).
const SPREAD: [(&str, &str, &str, &str, bool); 7] = [
    ("kernel", "mcells_per_s", "mcells_per_s", "Mcells/s", false),
    ("kernel", "bw_eff_GBps", "bw_eff_GBps", "BW_e (GB/s)", false),
    ("copy", "bw_GBps", "bw_GBps", "COPY (GB/s)", false),
    ("kernel", "fraction_of_copy", "fraction_of_copy", "of COPY", true),
    ("peak", "gflops", "peak_gflops", "PEAK (Gflop/s)", false),
    ("kernel", "fraction_of_peak", "fraction_of_peak", "of PEAK", true),
    ("kernel", "fraction_of_bound", "fraction_of_bound", "of the bound", true),
];

/// The solver's figures `k` set against what the same run measured: COPY's bandwidth (GB/s)
/// and, for a solver that counts its flops, PEAK (Gflop/s), with the bound that applies
/// (compute where its flops per byte exceed PEAK's per byte of COPY).
fn against_bounds(k: &mut serde_json::Value, copy_bw: f64, peak: Option<f64>) {
    let f = |x: &serde_json::Value| x.as_f64().unwrap_or(f64::NAN);
    k["fraction_of_copy"] = (f(&k["bw_eff_GBps"]) / copy_bw).into();
    if let (Some(peak), Some(gflops)) = (peak, k["gflops"].as_f64()) {
        let compute = f(&k["flop_per_byte"]) > peak / copy_bw;
        k["fraction_of_peak"] = (gflops / peak).into();
        k["bound"] = if compute { "compute" } else { "bandwidth" }.into();
        // Of the bandwidth bound, flop/B x COPY, the share is that of BW_e in COPY.
        k["fraction_of_bound"] = k[if compute { "fraction_of_peak" } else { "fraction_of_copy" }].clone();
    }
}

/// COPY's figures from its runs (iterations, seconds per copy of `bytes`) before and, where
/// something was timed, after what it is set against: the mean of their times per copy.
/// COPY runs on both sides so that a bandwidth that drifts during the run (other tenants of a
/// shared machine) moves it as it moves what is timed between.
pub(crate) fn copy_figures(elements: usize, bytes: f64, before: (u64, f64), after: Option<(u64, f64)>) -> serde_json::Value {
    let bw = |t: f64| bytes / t / 1e9;
    let t = after.map_or(before.1, |a| (before.1 + a.1) / 2.0);
    let mut c = serde_json::json!({
        "elements": elements, "iterations": before.0 + after.map_or(0, |a| a.0), "time_per_step_s": t, "bw_GBps": bw(t)
    });
    if let Some(after) = after {
        c["bw_GBps_before"] = bw(before.1).into();
        c["bw_GBps_after"] = bw(after.1).into();
    }
    c
}

/// How far COPY's two halves may differ (relative) before the text warns that the ratio to
/// COPY is uncertain.
const COPY_DRIFT: f64 = 0.1;

/// The text of COPY's halves in `copy` (its figures), where it has two: their bandwidths, and
/// a line of its own where they differ by more than [`COPY_DRIFT`].
pub(crate) fn copy_halves_text(copy: &serde_json::Value, between: &str) -> Option<(String, String)> {
    let (before, after) = (copy["bw_GBps_before"].as_f64()?, copy["bw_GBps_after"].as_f64()?);
    let note = if (before - after).abs() > COPY_DRIFT * before.min(after) {
        format!(
            "  note:    COPY's halves differ by more than {:.0}%: the machine's bandwidth changed during the run, so the ratio to COPY is uncertain\n",
            100.0 * COPY_DRIFT
        )
    } else {
        String::new()
    };
    Some((format!("{before:.2} GB/s before {between}, {after:.2} after"), note))
}

/// Time the solver's steps: BW_e from its `bytes_per_step`, Mcells/s, RDP on clouds, and the
/// flop rate where the solver counts its flops.
fn kernel_figures(s: &mut dyn Solver, o: &BenchOptions, device: &Device) -> Result<serde_json::Value> {
    let (iters, t) = time_steps(s, o.seconds, device)?;
    let n = s.mesh().len() as f64;
    let bytes = s.bytes_per_step();
    let mut k = serde_json::json!({
        "iterations": iters,
        "time_per_step_s": t,
        "bw_eff_GBps": bytes / t / 1e9,
        "beta_lo": bytes / (n * o.precision.bytes() as f64),
        "mcells_per_s": n / t / 1e6,
        "timing": if matches!(device, Device::Cuda(..)) { "cuda events" } else { "wall clock" },
    });
    if let Some(flops) = s.flops_per_step() {
        k["flops_per_cell"] = (flops / n).into();
        k["flop_per_byte"] = (flops / bytes).into();
        k["gflops"] = (flops / t / 1e9).into();
    }
    if matches!(s.mesh(), Mesh::Points(_)) {
        k["rdp_s"] = (t / n).into();
        // The order the points were held in, and each phase's share of the time.
        let report = s.report();
        for key in ["renumber", "math", "simd", "phase_shares"] {
            if let Some(r) = report.get(key) {
                k[key] = r.clone();
            }
        }
    }
    Ok(k)
}

/// [`kernel_figures`] with the GPU's power sampled around them (spec `shallow_water.md` §12):
/// mean and idle power, and megacells per joule of the whole draw and of the draw above idle.
fn with_power(s: &mut dyn Solver, o: &BenchOptions, device: &Device) -> Result<serde_json::Value> {
    let sampler = match crate::power::Sampler::start() {
        Ok(sampler) => sampler,
        Err(why) => {
            let mut k = kernel_figures(s, o, device)?;
            k["power"] = serde_json::json!({ "measured": false, "note": why });
            return Ok(k);
        }
    };
    std::thread::sleep(crate::power::IDLE);
    let from = Instant::now();
    let mut k = kernel_figures(s, o, device)?;
    let to = Instant::now();
    std::thread::sleep(crate::power::IDLE);
    k["power"] = match sampler.finish(from, to) {
        Ok(p) => {
            let mcells = k["mcells_per_s"].as_f64().unwrap_or(0.0);
            let above_idle = p.mean_w - p.idle_w;
            serde_json::json!({
                "measured": true, "mean_W": p.mean_w, "idle_W": p.idle_w, "samples": p.samples,
                "period_ms": crate::power::PERIOD_MS, "mcells_per_J": mcells / p.mean_w,
                "mcells_per_J_above_idle": if above_idle > 0.0 { mcells / above_idle } else { f64::NAN },
            })
        }
        Err(why) => serde_json::json!({ "measured": false, "note": why }),
    };
    Ok(k)
}

/// Steps timed in batches (each ended by [`Solver::wait`], so queued device work counts)
/// after three untimed calls, until `seconds` and at least 3 batches have passed; returns
/// (steps, mean seconds per step). Each call advances as many steps as the solver takes at
/// once (a temporally blocked sweep, or adaptive steps the solver lands itself). On a CUDA
/// `device` the batches are timed by CUDA events on its stream (which every solver uses), so
/// the host's waits do not count.
pub(crate) fn time_steps(s: &mut dyn Solver, seconds: f64, device: &Device) -> Result<(u64, f64)> {
    let calls = if s.backend() == "cpu" { 1 } else { 10 };
    let landed = s.clock() == Clock::Physical && s.landed_steps_per_call() > 0;
    let step = |s: &mut dyn Solver| -> Result<u64> {
        let before = s.step();
        if landed {
            s.advance_landed(&Landing::default(), s.landed_steps_per_call())?;
        } else {
            let dt = if s.clock() == Clock::Physical { s.propose_dt()? } else { 0.0 };
            s.advance_steps(dt, s.steps_per_call())?;
        }
        Ok(s.step() - before)
    };
    for _ in 0..3 {
        step(s)?;
    }
    s.wait()?;
    let stream = match device {
        Device::Cuda(gpu, _) => Some(gpu.stream.clone()),
        Device::Cpu(_) => None,
    };
    let event = |st: &std::sync::Arc<cudarc::driver::CudaStream>| {
        st.record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(crate::cuda::driver_err("event"))
    };
    let start = Instant::now();
    let (mut steps, mut batches, mut on_device) = (0u64, 0, 0.0);
    while batches < 3 || start.elapsed().as_secs_f64() < seconds {
        let first = stream.as_ref().map(event).transpose()?;
        for _ in 0..calls {
            steps += step(s)?;
        }
        let last = stream.as_ref().map(event).transpose()?;
        s.wait()?;
        if let (Some(a), Some(b)) = (first, last) {
            on_device += a.elapsed_ms(&b).map_err(crate::cuda::driver_err("event timing"))? as f64 / 1e3;
        }
        batches += 1;
    }
    let t = if stream.is_some() { on_device } else { start.elapsed().as_secs_f64() };
    Ok((steps, t / steps as f64))
}

/// COPY of `n` elements between two arrays (CPU: in the solvers' buffer placement, in
/// parallel rows of `row` elements; GPU: `copy1d`): (iterations, seconds per copy).
pub(crate) fn copy<T: Real>(device: &Device, n: usize, row: usize, seconds: f64) -> Result<(u64, f64)> {
    match device {
        Device::Cpu(_) => {
            use crate::solvers::heat::{NEXT_SLOT, kernels};
            let mut a = crate::padded::Padded::<T>::zeros(n, 0);
            a.par_iter_mut().enumerate().for_each(|(k, x)| *x = T::of((k % 7) as f64 * 0.1));
            let mut b = crate::padded::Padded::<T>::zeros(n, NEXT_SLOT);
            Ok(time_loop(seconds, || {
                kernels::copy2d(&a, &mut b, row);
                std::mem::swap(&mut a, &mut b);
            }))
        }
        Device::Cuda(gpu, _) => cuda_copy::<T>(gpu, n, seconds),
    }
}

fn cuda_copy<T: Real>(gpu: &Gpu, n: usize, seconds: f64) -> Result<(u64, f64)> {
    use cudarc::driver::{LaunchConfig, PushKernelArg};
    let err = crate::cuda::driver_err;
    let init: Vec<T> = (0..n).into_par_iter().map(|k| T::of((k % 7) as f64 * 0.1)).collect();
    let kernels = gpu.kernels::<crate::cuda::HeatKernel>(T::PRECISION, false)?;
    let copy_fn = kernels.get(crate::cuda::HeatKernel::Copy1d);
    let src = gpu.stream.clone_htod(&init).map_err(err("upload"))?;
    let mut dst = gpu.stream.alloc_zeros::<T>(n).map_err(err("alloc"))?;
    // Elements per thread of copy1d (COPY_PER_THREAD of kernels/common.cuh).
    const PER_THREAD: u32 = 4;
    let cfg = LaunchConfig { grid_dim: ((n as u32).div_ceil(512 * PER_THREAD), 1, 1), block_dim: (512, 1, 1), shared_mem_bytes: 0 };
    let n64 = n as i64;
    let mut launch = || -> Result<()> {
        let mut b = gpu.stream.launch_builder(&copy_fn);
        b.arg(&src).arg(&mut dst).arg(&n64);
        // SAFETY: copy1d(src, dst, n) with both buffers of n elements.
        unsafe { b.launch(cfg) }.map(|_| ()).map_err(err("copy1d launch"))
    };
    // Timed by CUDA events, as the kernels it is set against (spec heat_cavity §4.3).
    let (iters, t) = time_device(&gpu.stream, seconds, &mut launch)?;
    if gpu.stream.clone_dtoh(&dst).map_err(err("download"))? != init {
        return Err(crate::SimError::Run("COPY: copy1d did not copy its source".into()));
    }
    Ok((iters, t))
}

/// Calls of `f` (each queueing work on `stream`) timed by CUDA events in batches of 10 after
/// three untimed calls, until `seconds` and at least 3 batches have passed; returns (calls,
/// mean device seconds per call).
pub(crate) fn time_device(stream: &Arc<cudarc::driver::CudaStream>, seconds: f64, mut f: impl FnMut() -> Result<()>) -> Result<(u64, f64)> {
    let err = crate::cuda::driver_err;
    let event = || stream.record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(err("event"));
    for _ in 0..3 {
        f()?;
    }
    stream.synchronize().map_err(err("synchronize"))?;
    let start = Instant::now();
    let (mut calls, mut on_device) = (0u64, 0.0);
    while calls < 30 || start.elapsed().as_secs_f64() < seconds {
        let first = event()?;
        for _ in 0..10 {
            f()?;
        }
        let last = event()?;
        last.synchronize().map_err(err("event"))?;
        on_device += first.elapsed_ms(&last).map_err(err("event timing"))? as f64 / 1e3;
        calls += 10;
    }
    Ok((calls, on_device / calls as f64))
}

/// Untimed warm-up, then repeat `f` until at least `seconds` and 20 iterations have passed;
/// returns (iterations, mean seconds per iteration).
pub(crate) fn time_loop(seconds: f64, mut f: impl FnMut()) -> (u64, f64) {
    for _ in 0..3 {
        f();
    }
    let start = Instant::now();
    let mut iters = 0u64;
    while iters < 20 || start.elapsed().as_secs_f64() < seconds {
        f();
        iters += 1;
    }
    (iters, start.elapsed().as_secs_f64() / iters as f64)
}

/// Human-readable form of [`bench`]'s result.
pub fn text(v: &serde_json::Value) -> String {
    if v["name"] == "tridiag" {
        return crate::bench_tridiag::text(v);
    }
    let on = match v["device"].as_str() {
        Some(d) => format!("{d}, {} {}", v["variant"].as_str().unwrap_or(""), v["block"]),
        None => format!("{} threads", v["threads"]),
    };
    let on = if v["fast_math"] == true { format!("{on}, fast math") } else { on };
    let on = match v["subnormals"].as_str() {
        Some("flush") => format!("{on}, subnormals flushed"),
        _ => on,
    };
    let on = match v["temporal_block"].as_str() {
        Some(tiling) => format!("{on}, temporal blocking {tiling}"),
        None => on,
    };
    let shape = match v["points"].as_u64() {
        Some(p) => format!("{p} points"),
        None => format!("{} x {} = {} elements", v["nx"], v["ny"], v["elements"]),
    };
    let f = |x: &serde_json::Value| x.as_f64().unwrap_or(0.0);
    let scheme = v["scheme"].as_str().map(|s| format!(" --scheme {s}")).unwrap_or_default();
    let mut s = format!(
        "bench {}{scheme} on {} ({}, {on}), {shape}\n  COPY:   {:>9.3e} s/step  {:>8.2} GB/s  ({} elements",
        v["name"].as_str().unwrap_or(""),
        v["backend"].as_str().unwrap_or(""),
        v["precision"].as_str().unwrap_or(""),
        f(&v["copy"]["time_per_step_s"]),
        f(&v["copy"]["bw_GBps"]),
        v["copy"]["elements"],
    );
    let (halves, note) = copy_halves_text(&v["copy"], "the solver").map_or_else(Default::default, |(h, n)| (format!("; {h}"), n));
    s += &format!("{halves})\n{note}");
    if let Some(gflops) = v["peak"]["gflops"].as_f64() {
        s += &format!("  PEAK:   {:>9.3e} s/call  {gflops:>8.2} Gflop/s (adds and multiplies)\n", f(&v["peak"]["time_per_call_s"]));
    }
    if let Some(k) = v.get("kernel") {
        s += &format!(
            "  {:<7} {:>9.3e} s/step  {:>8.2} GB/s (BW_e)  {:.1} Mcells/s  {:.1}% of COPY ({})\n",
            "SOLVER:",
            f(&k["time_per_step_s"]),
            f(&k["bw_eff_GBps"]),
            f(&k["mcells_per_s"]),
            100.0 * f(&k["fraction_of_copy"]),
            k["timing"].as_str().unwrap_or("?"),
        );
        if let Some(gflops) = k["gflops"].as_f64() {
            s += &format!(
                "  flops:   {gflops:.2} Gflop/s ({:.0} flop per cell counted, {:.1} flop/B)",
                f(&k["flops_per_cell"]),
                f(&k["flop_per_byte"])
            );
            if let (Some(fraction), Some(bound)) = (k["fraction_of_peak"].as_f64(), k["bound"].as_str()) {
                let balance = f(&v["peak"]["gflops"]) / f(&v["copy"]["bw_GBps"]);
                s += &format!(
                    "  {:.1}% of PEAK; PEAK / COPY = {balance:.1} flop/B: {bound}-bound, {:.1}% of that bound",
                    100.0 * fraction,
                    100.0 * f(&k["fraction_of_bound"])
                );
            }
            s += "\n";
        }
        if k["power"]["measured"] == true {
            let p = &k["power"];
            s += &format!(
                "  power:   {:.1} W mean ({:.1} W idle), {:.2} Mcells/J ({:.2} above idle; {} samples of {} ms)\n",
                f(&p["mean_W"]),
                f(&p["idle_W"]),
                f(&p["mcells_per_J"]),
                f(&p["mcells_per_J_above_idle"]),
                p["samples"],
                p["period_ms"],
            );
        } else if let Some(note) = k["power"]["note"].as_str() {
            s += &format!("  power:   not measured: {note}\n");
        }
        if let Some(rdp) = k["rdp_s"].as_f64() {
            let order = k["renumber"].as_str().map(|r| format!(", points in {} order", if r == "none" { "file" } else { r })).unwrap_or_default();
            let order = match (k["math"].as_str(), k["simd"].as_str()) {
                (Some(math), Some(simd)) => format!("{order}, math {math}, SIMD {simd}"),
                _ => order,
            };
            s += &format!("  RDP = {rdp:.4e} s (seconds per iteration and point{order})\n");
            if let Some(shares) = k["phase_shares"].as_array() {
                let list: Vec<String> =
                    shares.iter().map(|p| format!("{} {:.1}%", p[0].as_str().unwrap_or(""), 100.0 * f(&p[1]))).collect();
                s += &format!("  phases: {}\n", list.join(", "));
            }
        }
    }
    if let Some(rounds) = v["rounds"].as_array() {
        s += &format!("  rounds:  {}, the figures above from the median one by the ratio to COPY; min / median / max:\n", rounds.len());
        for (_, _, name, label, share) in SPREAD {
            let x = &v["spread"][name];
            if x.is_null() {
                continue;
            }
            let [a, b, c] = ["min", "median", "max"].map(|m| f(&x[m]) * if share { 100.0 } else { 1.0 });
            let unit = if share { "%" } else { "" };
            s += &format!("    {label:<15} {a:.1}{unit} / {b:.1}{unit} / {c:.1}{unit}\n");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text names both halves of COPY and warns only where they differ by more than 10 %.
    #[test]
    fn text_warns_when_copy_drifts() {
        let run = |before: f64, after: f64| {
            let t = (1.0 / before + 1.0 / after) / 2.0;
            text(&serde_json::json!({
                "name": "heat2d", "backend": "cpu", "precision": "f64", "threads": 2, "nx": 8, "ny": 8, "elements": 64,
                "copy": { "elements": 64, "time_per_step_s": t, "bw_GBps": 1.0 / t, "bw_GBps_before": before, "bw_GBps_after": after },
            }))
        };
        let steady = run(50.0, 54.0);
        assert!(steady.contains("50.00 GB/s before the solver, 54.00 after") && !steady.contains("note:"), "{steady}");
        for drift in [run(50.0, 56.0), run(90.0, 50.0)] {
            assert!(drift.contains("note:") && drift.contains("uncertain"), "{drift}");
        }
    }
}
