//! `sim bench`: effective bandwidth of a solver's step next to a COPY kernel measured in the
//! same run, with the same threads and the same row split.

use std::time::Instant;

use rayon::prelude::*;

use crate::case::Backend;
use crate::cuda::{Gpu, GpuOptions};
use crate::error::{Result, SimError, input};
use crate::real::{Precision, Real};
use crate::solvers::heat::kernels;

#[derive(Clone, Debug)]
pub struct BenchOptions {
    pub backend: Backend,
    /// Kernel variant and block shape for the CUDA back end.
    pub gpu: GpuOptions,
    pub name: String,
    /// Nodes per side (2D) or in total (1D).
    pub size: usize,
    pub precision: Precision,
    pub threads: Option<usize>,
    /// Minimum timed duration of each kernel (at least 20 iterations are always run).
    pub seconds: f64,
}

pub const NAMES: &[&str] = &["copy", "heat1d", "heat2d", "cavity"];

/// Run a benchmark and return its figures as JSON.
pub fn bench(o: &BenchOptions) -> Result<serde_json::Value> {
    if !NAMES.contains(&o.name.as_str()) {
        return input(format!("bench: unknown benchmark '{}' (choose one of {})", o.name, NAMES.join(", ")));
    }
    if o.size < 3 {
        return input(format!("--size {}: at least 3", o.size));
    }
    if !(o.seconds.is_finite() && o.seconds > 0.0) {
        return input(format!("--seconds {}: must be positive", o.seconds));
    }
    o.gpu.validate()?;
    if o.backend == Backend::Cuda {
        let gpu = Gpu::open()?;
        return match o.precision {
            Precision::F32 => cuda_bench::<f32>(&gpu, o),
            Precision::F64 => cuda_bench::<f64>(&gpu, o),
        };
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(o.threads.unwrap_or(0))
        .build()
        .map_err(|e| SimError::Run(format!("cannot start threads: {e}")))?;
    pool.install(|| match o.precision {
        Precision::F32 => run::<f32>(o),
        Precision::F64 => run::<f64>(o),
    })
}

/// Arrays moved per step in an ideal implementation: NS2D beta_lo = 15, heat (and COPY) 2.
fn beta_lo(name: &str) -> f64 {
    if name == "cavity" { 15.0 } else { 2.0 }
}

/// The benchmarked cavity: Re = 1000, Ma = 0.1, dt from the spec's rule, starting from rest.
fn cavity_bench_params(n: usize) -> crate::solvers::cavity::CavityParams {
    use crate::solvers::cavity::{CavityParams, ResidualControl};
    CavityParams { n, re: 1000.0, lid_velocity: 1.0, mach: 0.1, dt: None, residual: ResidualControl::default() }
}

fn run<T: Real>(o: &BenchOptions) -> Result<serde_json::Value> {
    let (nx, ny) = if o.name == "heat1d" { (o.size, 1) } else { (o.size, o.size) };
    let n = nx * ny;
    // The same buffer placement as the heat solver (see crate::padded).
    let mut a = crate::padded::Padded::<T>::zeros(n, 0);
    a.par_iter_mut().enumerate().for_each(|(k, x)| *x = T::of((k % 7) as f64 * 0.1));
    let mut b = crate::padded::Padded::<T>::zeros(n, crate::solvers::heat::NEXT_SLOT);
    let bytes = 2.0 * n as f64 * T::PRECISION.bytes() as f64;
    let r = T::of(0.2);
    let copy = time_loop(o.seconds, || {
        kernels::copy2d(&a, &mut b, nx);
        std::mem::swap(&mut a, &mut b);
    });
    let kernel = match o.name.as_str() {
        "heat1d" => Some(time_loop(o.seconds, || {
            kernels::ftcs1d(&a, &mut b, r);
            std::mem::swap(&mut a, &mut b);
        })),
        "heat2d" => Some(time_loop(o.seconds, || {
            kernels::ftcs2d(&a, &mut b, nx, r);
            std::mem::swap(&mut a, &mut b);
        })),
        "cavity" => {
            use crate::solvers::cavity::kernels as ck;
            let p = cavity_bench_params(nx);
            let c = ck::Coeffs::<T>::new(p.time_step(), p.dx(), p.dx(), p.nu(), p.sound_speed(), 1.0);
            let mut f = ck::Fields::<T>::initial(nx, ny, T::one());
            Some(time_loop(o.seconds, || f.step(&c)))
        }
        _ => None,
    };
    let beta_lo = beta_lo(&o.name);
    let kernel_bytes = beta_lo * n as f64 * T::PRECISION.bytes() as f64;
    let copy_bw = bytes / copy.1 / 1e9;
    let mut v = serde_json::json!({
        "name": o.name,
        "backend": "cpu",
        "precision": T::PRECISION.name(),
        "threads": rayon::current_num_threads(),
        "nx": nx,
        "ny": ny,
        "elements": n,
        "unit": "GB/s (1e9 bytes/s)",
        "copy": {"iterations": copy.0, "time_per_step_s": copy.1, "bw_GBps": copy_bw},
    });
    if let Some((iters, t)) = kernel {
        let bw = kernel_bytes / t / 1e9;
        v["kernel"] = serde_json::json!({
            "iterations": iters,
            "time_per_step_s": t,
            "bw_eff_GBps": bw,
            "beta_lo": beta_lo,
            "mcells_per_s": n as f64 / t / 1e6,
            "fraction_of_copy": bw / copy_bw,
        });
    }
    Ok(v)
}

/// The same measurement on a CUDA device, timed with CUDA events: the median over batches
/// of 10 steps, after an untimed warm-up (which includes the kernel compilation).
fn cuda_bench<T: Real>(gpu: &Gpu, o: &BenchOptions) -> Result<serde_json::Value> {
    use crate::solver::Grid;
    use crate::solvers::heat::cuda::HeatCuda;
    use cudarc::driver::{LaunchConfig, PushKernelArg, sys::CUevent_flags};
    let err = crate::cuda::driver_err;
    let (nx, ny) = if o.name == "heat1d" { (o.size, 1) } else { (o.size, o.size) };
    let n = nx * ny;
    let bytes = 2.0 * n as f64 * T::PRECISION.bytes() as f64;
    let init: Vec<T> = (0..n).into_par_iter().map(|k| T::of((k % 7) as f64 * 0.1)).collect();
    let grid = Grid { n: [nx, ny], origin: [0.0; 2], spacing: [1.0; 2] };
    let event = || gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(err("event"));
    // Median seconds per call of `f`, over batches of 10 calls.
    let timed = |f: &mut dyn FnMut() -> Result<()>| -> Result<(u64, f64)> {
        for _ in 0..3 {
            f()?;
        }
        let (start, stop) = (event()?, event()?);
        let mut batches = Vec::new();
        let t0 = std::time::Instant::now();
        while batches.len() < 2 || t0.elapsed().as_secs_f64() < o.seconds {
            start.record(&gpu.stream).map_err(err("event"))?;
            for _ in 0..10 {
                f()?;
            }
            stop.record(&gpu.stream).map_err(err("event"))?;
            batches.push(start.elapsed_ms(&stop).map_err(err("event"))? as f64 / 1e3 / 10.0);
        }
        batches.sort_by(|a, b| a.total_cmp(b));
        Ok((10 * batches.len() as u64, batches[batches.len() / 2]))
    };
    let kernels = gpu.kernels::<crate::cuda::HeatKernel>(T::PRECISION, o.gpu.fast_math)?;
    let copy_fn = kernels.get(crate::cuda::HeatKernel::Copy1d);
    let (src, mut dst) = (gpu.stream.clone_htod(&init).map_err(err("upload"))?, gpu.stream.alloc_zeros::<T>(n).map_err(err("alloc"))?);
    let cfg = LaunchConfig { grid_dim: ((n as u32).div_ceil(512), 1, 1), block_dim: (512, 1, 1), shared_mem_bytes: 0 };
    let n64 = n as i64;
    let copy = timed(&mut || {
        let mut b = gpu.stream.launch_builder(&copy_fn);
        b.arg(&src).arg(&mut dst).arg(&n64);
        // SAFETY: copy1d(src, dst, n) with both buffers of n elements.
        unsafe { b.launch(cfg) }.map(|_| ()).map_err(err("copy1d launch"))
    })?;
    drop((src, dst));
    let copy_bw = bytes / copy.1 / 1e9;
    let mut v = serde_json::json!({
        "name": o.name,
        "backend": "cuda",
        "device": gpu.name,
        "precision": T::PRECISION.name(),
        "variant": o.gpu.variant.name(),
        "block": o.gpu.block,
        "nx": nx,
        "ny": ny,
        "elements": n,
        "unit": "GB/s (1e9 bytes/s)",
        "copy": {"iterations": copy.0, "time_per_step_s": copy.1, "bw_GBps": copy_bw},
    });
    let kernel = match o.name.as_str() {
        "heat1d" | "heat2d" => {
            let mut heat = HeatCuda::<T>::new(gpu, &o.gpu, &grid, &init)?;
            let r = T::of(0.2);
            Some(timed(&mut || heat.step(r))?)
        }
        "cavity" => {
            use crate::solvers::cavity::{cuda::CavityCuda, kernels as ck};
            let p = cavity_bench_params(nx);
            let c = ck::Coeffs::<T>::new(p.time_step(), p.dx(), p.dx(), p.nu(), p.sound_speed(), 1.0);
            let f = ck::Fields::<T>::initial(nx, ny, T::one());
            let mut cavity = CavityCuda::<T>::new(gpu, &o.gpu, nx, ny, &f.u, &f.v, &f.p)?;
            drop(f);
            Some(timed(&mut || cavity.step(&c))?)
        }
        _ => None,
    };
    if let Some((iters, t)) = kernel {
        let beta_lo = beta_lo(&o.name);
        let bw = beta_lo * n as f64 * T::PRECISION.bytes() as f64 / t / 1e9;
        v["kernel"] = serde_json::json!({
            "iterations": iters, "time_per_step_s": t, "bw_eff_GBps": bw, "beta_lo": beta_lo,
            "mcells_per_s": n as f64 / t / 1e6, "fraction_of_copy": bw / copy_bw,
        });
    }
    Ok(v)
}

/// Untimed warm-up, then repeat `f` until at least `seconds` and 20 iterations have passed;
/// returns (iterations, mean seconds per iteration).
fn time_loop(seconds: f64, mut f: impl FnMut()) -> (u64, f64) {
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
    let on = match v["device"].as_str() {
        Some(d) => format!("{d}, {} {}", v["variant"].as_str().unwrap_or(""), v["block"]),
        None => format!("{} threads", v["threads"]),
    };
    let mut s = format!(
        "bench {} on {} ({}, {on}), {} x {} = {} elements\n  COPY:   {:>9.3e} s/step  {:>8.2} GB/s\n",
        v["name"].as_str().unwrap_or(""),
        v["backend"].as_str().unwrap_or(""),
        v["precision"].as_str().unwrap_or(""),
        v["nx"],
        v["ny"],
        v["elements"],
        v["copy"]["time_per_step_s"].as_f64().unwrap_or(0.0),
        v["copy"]["bw_GBps"].as_f64().unwrap_or(0.0),
    );
    if let Some(k) = v.get("kernel") {
        s += &format!(
            "  {:<7} {:>9.3e} s/step  {:>8.2} GB/s (BW_e)  {:.1} Mcells/s  {:.1}% of COPY\n",
            format!("{}:", v["name"].as_str().unwrap_or("").to_uppercase()),
            k["time_per_step_s"].as_f64().unwrap_or(0.0),
            k["bw_eff_GBps"].as_f64().unwrap_or(0.0),
            k["mcells_per_s"].as_f64().unwrap_or(0.0),
            100.0 * k["fraction_of_copy"].as_f64().unwrap_or(0.0),
        );
    }
    s
}
