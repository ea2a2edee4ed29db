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
//! With `--backend cuda` the same solves run on the device (`kernels/tridiag.cu`, one thread
//! per system or partition; SPIKE on partitions of [`GPU_SPIKE_ROWS`] rows, so that there are
//! threads enough to fill the device, and no sequential Thomas), timed by CUDA events, next to
//! the device's COPY.
//!
//! Minimum traffic: the right-hand side read and the solution written, `2 N B` elements per
//! solve (the factors of a constant matrix stay in cache).

use rayon::prelude::*;

use crate::bench::{BenchOptions, time_loop};
use crate::cuda::{Gpu, Kernels, TridiagKernel, driver_err};
use crate::error::{Result, input};
use crate::numerics::tridiag::{SpikePlan, Thomas};
use crate::real::{Precision, Real};
use crate::solvers::Device;
use crate::solvers::heat::implicit::matrix;
use crate::solvers::heat::implicit_cuda::{DeviceSpike, DeviceThomas};

/// SPIKE partition length: short enough that a group of partitions solved one per vector
/// lane stays in the L2 cache between its forward and backward sweeps (32 partitions of f32
/// or 16 of f64: 254 KiB), and not a power of two, so that the rows a group reads together
/// spread over the L1 cache's sets (2048 rows: one set, and one vector per group instead of
/// two).
pub const SPIKE_ROWS: usize = 2032;

/// SPIKE partition length of one system on a device, one thread per partition, its rows in
/// registers (`spike_line32`; 2^27 unknowns give 2^22 threads).
pub const GPU_SPIKE_ROWS: usize = 32;

/// Partition lengths of truncated SPIKE on the batched systems on a device (interleaved, one
/// thread per partition of each system): up to 128 rows (f64: 64) a thread holds its
/// partition in registers and one kernel solves (`spike_fused*`); longer partitions take
/// three kernels.
pub const GPU_BATCH_SPIKE_ROWS: [usize; 4] = [16, 32, 64, 128];

/// SPIKE partition length of the device's part of a split batch (`--cpu-share`): the fastest
/// of GPU_BATCH_SPIKE_ROWS on an H100 in f32 and f64.
const GPU_HETERO_ROWS: usize = 32;

pub fn bench(o: &BenchOptions, device: &Device) -> Result<serde_json::Value> {
    let solver = o.solver.as_deref().unwrap_or("thomas");
    let (size, batch) = match solver {
        "thomas" => (o.size.unwrap_or(4096), o.batch.unwrap_or(o.size.unwrap_or(4096))),
        "spike" if o.batch.is_some() => return input("--batch: spike solves one system (give --size)"),
        "spike" => (o.size.unwrap_or(1 << 27), 1),
        s => return input(format!("--solver {s}: thomas or spike")),
    };
    if let Some(shares) = &o.cpu_share {
        if !matches!(device, Device::Cuda(..)) || solver != "thomas" {
            return input("--cpu-share: splits a batch (--solver thomas) between the CPU and a device (--backend cuda)");
        }
        if let Some(f) = shares.iter().find(|f| !(0.0..=1.0).contains(*f)) {
            return input(format!("--cpu-share {f}: give shares from 0 to 1"));
        }
    }
    // The flags as given (the batch defaults to --size systems).
    let flags = match o.batch {
        Some(_) => format!("--size {size} --batch {batch}"),
        None if solver == "thomas" => format!("--size {size} (and as many systems, the default --batch)"),
        None => format!("--size {size}"),
    };
    if size < 3 || batch == 0 {
        return input(format!("{flags}: at least 3 unknowns and 1 system"));
    }
    let elements = size.checked_mul(batch).ok_or_else(|| {
        crate::SimError::Input(format!("{flags}: {size} x {batch} unknowns is more than this machine can address"))
    })?;
    crate::bench::check_memory(elements.saturating_mul(2 * o.precision.bytes()), &flags)?;
    match (o.precision, device) {
        (Precision::F32, Device::Cpu(_)) => figures::<f32>(o, solver, size, batch),
        (Precision::F64, Device::Cpu(_)) => figures::<f64>(o, solver, size, batch),
        (Precision::F32, Device::Cuda(gpu, _)) => device_figures::<f32>(o, gpu, solver, size, batch),
        (Precision::F64, Device::Cuda(gpu, _)) => device_figures::<f64>(o, gpu, solver, size, batch),
    }
}

/// The figures of one solve of the bench `v` (its [`header`]) timed at `t` seconds per solve
/// (its fraction of COPY comes with COPY's second half, in [`set_copy`]).
fn figure(v: &serde_json::Value, (iters, t): (u64, f64)) -> serde_json::Value {
    let f = |x: &serde_json::Value| x.as_f64().unwrap_or(0.0);
    let (elements, batch, bytes) = (f(&v["elements"]), f(&v["batch"]), f(&v["bytes_per_solve"]));
    serde_json::json!({
        "iterations": iters, "time_per_solve_s": t, "unknowns_per_s": elements / t,
        "systems_per_s": batch / t, "bw_eff_GBps": bytes / t / 1e9,
    })
}

/// What was measured where.
fn header(o: &BenchOptions, solver: &str, size: usize, batch: usize) -> serde_json::Value {
    let elements = size * batch;
    serde_json::json!({
        "name": "tridiag", "solver": solver, "precision": o.precision.name(), "size": size, "batch": batch,
        "elements": elements, "bytes_per_solve": (2 * elements * o.precision.bytes()) as f64, "unit": "GB/s (1e9 bytes/s)",
    })
}

/// COPY's figures in the bench `v` from its halves before and after the solves, and every
/// timed path's fraction of COPY.
fn set_copy(v: &mut serde_json::Value, before: (u64, f64), after: (u64, f64)) {
    let bytes = v["bytes_per_solve"].as_f64().unwrap_or(f64::NAN);
    let elements = v["elements"].as_u64().unwrap_or(0) as usize;
    v["copy"] = crate::bench::copy_figures(elements, bytes, before, Some(after));
    let copy_bw = v["copy"]["bw_GBps"].as_f64().unwrap_or(f64::NAN);
    for k in v.as_object_mut().into_iter().flat_map(|m| m.values_mut()) {
        if let Some(bw) = k["bw_eff_GBps"].as_f64() {
            k["fraction_of_copy"] = (bw / copy_bw).into();
        }
    }
}

/// The solves on a CUDA device: the right-hand sides uploaded once and solved in place, as
/// on the CPU; then each path once more from the original right-hand sides, compared bit
/// for bit with the CPU's solve (the kernels evaluate the same expressions in the same order).
fn device_figures<T: Real>(o: &BenchOptions, gpu: &std::sync::Arc<Gpu>, solver: &str, size: usize, batch: usize) -> Result<serde_json::Value> {
    // Threads per block of the one-dimensional launches (`--block BX,1`).
    let [bx, by] = o.gpu.block();
    if by != 1 {
        return input(format!("--block {bx},{by}: the tridiagonal kernels are one-dimensional (one thread per system or partition); give {bx},1"));
    }
    let elements = size * batch;
    let a = matrix::<T>(size, T::one());
    let init: Vec<T> = (0..elements).into_par_iter().map(|k| T::of(1.0 + (k % 7) as f64 * 0.1)).collect();
    let stream = gpu.stream.clone();
    let mut d = stream.clone_htod(&init).map_err(driver_err("upload"))?;
    let kernels = gpu.kernels::<TridiagKernel>(T::PRECISION, o.gpu.fast_math)?;
    // COPY in two halves, before and after the solves.
    let copy = |seconds| crate::bench::copy::<T>(&Device::Cuda(gpu.clone(), Default::default()), elements, size, seconds);
    let before = copy(o.seconds / 2.0)?;
    let mut v = header(o, solver, size, batch);
    v["backend"] = "cuda".into();
    v["device"] = gpu.name.clone().into();
    v["fast_math"] = o.gpu.fast_math.into();
    v["timing"] = "cuda events".into();
    let head = v.clone();
    // Time `solve`, then solve `init` once more and compare with `cpu` solving it.
    let mut measure = |solve: &mut dyn FnMut(&mut cudarc::driver::CudaSlice<T>) -> Result<()>, cpu: &dyn Fn(&mut [T])| -> Result<serde_json::Value> {
        let timed = crate::bench::time_device(&stream, o.seconds, || solve(&mut d))?;
        let mut f = figure(&head, timed);
        stream.memcpy_htod(&init, &mut d).map_err(driver_err("upload"))?;
        solve(&mut d)?;
        let on_device = stream.clone_dtoh(&d).map_err(driver_err("download"))?;
        let mut on_cpu = init.clone();
        cpu(&mut on_cpu);
        f["bitwise_cpu"] = on_device.par_iter().zip(&on_cpu).all(|(x, y)| x.f64().to_bits() == y.f64().to_bits()).into();
        Ok(f)
    };
    let thomas = Thomas::new(&a)?;
    if solver == "thomas" {
        let t = DeviceThomas::upload(&stream, &thomas)?;
        v["interleaved"] = measure(&mut |d| t.solve_interleaved(&kernels, &stream, d, 0, size, batch), &|h| {
            thomas.solve_interleaved(h, batch)
        })?;
        v["contiguous"] = measure(&mut |d| t.solve_rows(&kernels, &stream, d, (0, size as i64), size, batch), &|h| {
            thomas.solve_batch(h)
        })?;
        for rows in GPU_BATCH_SPIKE_ROWS.into_iter().filter(|&r| size / r >= 2) {
            let key = format!("interleaved_spike_{rows}");
            let plan = SpikePlan::plan(&a, size / rows)?;
            if let Some(reason) = plan.fallback_reason() {
                v[&key] = serde_json::json!({ "fallback": reason });
                continue;
            }
            let mut s = DeviceSpike::upload(&kernels, &stream, &plan, batch)?;
            v[&key] = measure(&mut |d| s.solve(&kernels, &stream, d, 0, bx), &|h| solve_columns(&plan, h, size, batch))?;
            v[&key]["partitions"] = plan.partitions().into();
            v[&key]["kernels"] = if s.is_fused() { "fused" } else { "staged" }.into();
            if s.is_fused() {
                let staged = format!("{key}_staged");
                v[&staged] = measure(&mut |d| s.solve_staged(&kernels, &stream, d, 0, bx), &|h| solve_columns(&plan, h, size, batch))?;
                v[&staged]["partitions"] = plan.partitions().into();
            }
        }
        if let Some(shares) = &o.cpu_share {
            let mut shares: Vec<f64> = [0.0, 1.0].iter().chain(shares).copied().collect();
            shares.sort_by(f64::total_cmp);
            shares.dedup();
            let plan = SpikePlan::plan(&a, (size / GPU_HETERO_ROWS).max(1))?;
            for share in shares {
                v[&format!("split_cpu_{share}")] = split(o, &head, &kernels, &stream, (&thomas, &plan), (size, batch), &init, share)?;
            }
        }
    } else {
        let plan = SpikePlan::plan(&a, size.div_ceil(GPU_SPIKE_ROWS))?;
        v["partitions"] = plan.partitions().into();
        if let Some(reason) = plan.fallback_reason() {
            v["fallback"] = reason.into();
        }
        v["spike"] = match plan.thomas() {
            // The fallback: one thread solves the whole system.
            Some(t) => {
                let dt = DeviceThomas::upload(&stream, t)?;
                measure(&mut |d| dt.solve_rows(&kernels, &stream, d, (0, 0), size, 1), &|h| t.solve(h))?
            }
            None => {
                let mut s = DeviceSpike::upload(&kernels, &stream, &plan, 1)?;
                let mut f = measure(&mut |d| s.solve(&kernels, &stream, d, 0, bx), &|h| plan.solve(h))?;
                f["kernels"] = if s.is_fused() { "fused" } else { "staged" }.into();
                if s.is_fused() {
                    v["spike_staged"] = measure(&mut |d| s.solve_staged(&kernels, &stream, d, 0, bx), &|h| plan.solve(h))?;
                }
                f
            }
        };
    }
    set_copy(&mut v, before, copy(o.seconds / 2.0)?);
    Ok(v)
}

/// The batch solved from host memory, `share` of its systems by the CPU while the device
/// solves the rest (the heterogeneous split): each part an interleaved batch of its own in
/// host memory (the device's page-locked); the CPU solves its part by Thomas (its fastest
/// batched solver) while a second thread uploads the device's part, solves it (batched SPIKE
/// on 32-row partitions, the device's fastest, or Thomas where SPIKE falls back) and
/// downloads it. Timed by the wall clock until both parts are done; `bitwise_cpu` compares
/// the device's part with the CPU running the same algorithm.
#[allow(clippy::too_many_arguments)]
fn split<T: Real>(
    o: &BenchOptions,
    head: &serde_json::Value,
    kernels: &Kernels<TridiagKernel>,
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    (thomas, plan): (&Thomas<T>, &SpikePlan<T>),
    (size, batch): (usize, usize),
    init: &[T],
    share: f64,
) -> Result<serde_json::Value> {
    let on_cpu = ((share * batch as f64).round() as usize).min(batch);
    let on_gpu = batch - on_cpu;
    // Each part's own interleaved batch, from the columns of `init`.
    let part = |c0: usize, c1: usize| -> Vec<T> { (0..size * (c1 - c0)).map(|k| init[(k / (c1 - c0)) * batch + c0 + k % (c1 - c0)]).collect() };
    let (cpu_init, gpu_init) = (part(0, on_cpu), part(on_cpu, batch));
    let mut host_cpu = cpu_init.clone();
    // The device's part in page-locked memory (cached, not write-combined: the host reads it
    // back), which the copies need to run at the link's speed.
    // SAFETY: filled from gpu_init before any use.
    let mut host_gpu = unsafe { stream.context().alloc_pinned_with_flags::<T>(gpu_init.len().max(1), 0) }.map_err(driver_err("page-locked allocation"))?;
    let fill = |h: &mut cudarc::driver::PinnedHostSlice<T>| -> Result<()> {
        h.as_mut_slice().map_err(driver_err("page-locked memory"))?[..gpu_init.len()].copy_from_slice(&gpu_init);
        Ok(())
    };
    fill(&mut host_gpu)?;
    let mut device = match on_gpu {
        0 => None,
        _ => Some(match plan.thomas() {
            Some(_) => DeviceSolver::Thomas(DeviceThomas::upload(stream, thomas)?),
            None => DeviceSolver::Spike(Box::new(DeviceSpike::upload(kernels, stream, plan, on_gpu)?)),
        }),
    };
    let mut on_device = stream.alloc_zeros::<T>(size * on_gpu.max(1)).map_err(driver_err("allocation"))?;
    let bx = o.gpu.block()[0];
    let mut solve = |host_cpu: &mut [T], host_gpu: &mut cudarc::driver::PinnedHostSlice<T>| -> Result<()> {
        std::thread::scope(|scope| {
            let gpu = device.as_mut().map(|solver| {
                let d = &mut on_device;
                scope.spawn(move || -> Result<()> {
                    stream.memcpy_htod(&*host_gpu, d).map_err(driver_err("upload"))?;
                    match solver {
                        DeviceSolver::Thomas(t) => t.solve_interleaved(kernels, stream, d, 0, size, on_gpu)?,
                        DeviceSolver::Spike(s) => s.solve(kernels, stream, d, 0, bx)?,
                    }
                    stream.memcpy_dtoh(d, host_gpu).map_err(driver_err("download"))?;
                    stream.synchronize().map_err(driver_err("synchronize"))
                })
            });
            if on_cpu > 0 {
                thomas.solve_interleaved(host_cpu, on_cpu);
            }
            gpu.map_or(Ok(()), |h| h.join().expect("the device's part of the split does not panic"))
        })
    };
    let mut failed = None;
    let timed = time_loop(o.seconds, || {
        if let Err(e) = solve(&mut host_cpu, &mut host_gpu) {
            failed.get_or_insert(e);
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    let mut f = figure(head, timed);
    host_cpu = cpu_init;
    fill(&mut host_gpu)?;
    solve(&mut host_cpu, &mut host_gpu)?;
    let solved = host_gpu.as_slice().map_err(driver_err("page-locked memory"))?;
    let mut want = gpu_init.clone();
    match plan.thomas() {
        _ if on_gpu == 0 => {}
        Some(t) => t.solve_interleaved(&mut want, on_gpu),
        None => solve_columns(plan, &mut want, size, on_gpu),
    }
    f["bitwise_cpu"] = solved.iter().zip(&want).all(|(x, y)| x.f64().to_bits() == y.f64().to_bits()).into();
    f["cpu_share"] = share.into();
    f["cpu_systems"] = on_cpu.into();
    f["gpu_systems"] = on_gpu.into();
    f["gpu_solver"] = if plan.thomas().is_some() { "thomas" } else { "spike" }.into();
    // Host and device work together: the wall clock, not the file's CUDA events.
    f["timing"] = "wall clock".into();
    Ok(f)
}

/// The device's solver of its part of a split batch.
enum DeviceSolver<T> {
    Thomas(DeviceThomas<T>),
    Spike(Box<DeviceSpike<T>>),
}

/// `plan` on each of the `batch` interleaved systems of `d` (the CPU's counterpart of the
/// device's batched SPIKE).
fn solve_columns<T: Real>(plan: &SpikePlan<T>, d: &mut [T], size: usize, batch: usize) {
    let mut columns: Vec<T> = (0..size * batch).into_par_iter().map(|k| d[(k % size) * batch + k / size]).collect();
    columns.par_chunks_mut(size).for_each(|c| plan.solve(c));
    d.par_iter_mut().enumerate().for_each(|(k, x)| *x = columns[(k % batch) * size + k / batch]);
}

fn figures<T: Real>(o: &BenchOptions, solver: &str, size: usize, batch: usize) -> Result<serde_json::Value> {
    let elements = size * batch;
    let a = matrix::<T>(size, T::one());
    let mut d: Vec<T> = crate::padded::zeroed_huge(elements);
    d.par_iter_mut().enumerate().for_each(|(k, x)| *x = T::of(1.0 + (k % 7) as f64 * 0.1));
    // COPY in two halves, before and after the solves.
    let copy = |seconds| crate::bench::copy::<T>(&Device::Cpu(Default::default()), elements, size.min(1 << 14), seconds);
    let before = copy(o.seconds / 2.0)?;
    let mut v = header(o, solver, size, batch);
    v["backend"] = "cpu".into();
    v["threads"] = rayon::current_num_threads().into();
    let thomas = Thomas::new(&a)?;
    if solver == "thomas" {
        v["interleaved"] = figure(&v, time_loop(o.seconds, || thomas.solve_interleaved(&mut d, batch)));
        v["contiguous"] = figure(&v, time_loop(o.seconds, || thomas.solve_batch(&mut d)));
    } else {
        let partitions = size.div_ceil(SPIKE_ROWS);
        let plan = SpikePlan::plan(&a, partitions)?;
        v["partitions"] = plan.partitions().into();
        if let Some(reason) = plan.fallback_reason() {
            v["fallback"] = reason.into();
        }
        v["spike"] = figure(&v, time_loop(o.seconds, || plan.solve(&mut d)));
        v["thomas_sequential"] = figure(&v, time_loop(o.seconds, || thomas.solve(&mut d)));
    }
    set_copy(&mut v, before, copy(o.seconds / 2.0)?);
    Ok(v)
}

/// Human-readable form of [`bench`]'s result.
pub fn text(v: &serde_json::Value) -> String {
    let f = |x: &serde_json::Value| x.as_f64().unwrap_or(0.0);
    let place = match v["device"].as_str() {
        Some(d) if v["fast_math"] == true => format!("cuda ({}, {d}, fast math)", v["precision"].as_str().unwrap_or("")),
        Some(d) => format!("cuda ({}, {d})", v["precision"].as_str().unwrap_or("")),
        None => format!("cpu ({}, {} threads)", v["precision"].as_str().unwrap_or(""), v["threads"]),
    };
    let mut s = format!(
        "bench tridiag --solver {} on {place}, {} systems of {} unknowns\n  COPY:   {:>9.3e} s/solve {:>8.2} GB/s",
        v["solver"].as_str().unwrap_or(""),
        v["batch"],
        v["size"],
        f(&v["copy"]["time_per_step_s"]),
        f(&v["copy"]["bw_GBps"]),
    );
    let (halves, note) = crate::bench::copy_halves_text(&v["copy"], "the solves").map_or_else(Default::default, |(h, n)| (format!(" ({h})"), n));
    s += &format!("{halves}\n{note}");
    // Every timed path, and the paths that fell back (a JSON object keeps its keys sorted).
    for (key, k) in v.as_object().into_iter().flatten() {
        if let Some(r) = k["fallback"].as_str() {
            s += &format!("  {:<22} not timed: {r}\n", format!("{key}:"));
        }
        if k.get("time_per_solve_s").is_none() {
            continue;
        }
        s += &format!(
            "  {:<22} {:>9.3e} s/solve {:>8.2} GB/s (BW_e)  {:.3e} unknowns/s  {:.1}% of COPY{}\n",
            format!("{key}:"),
            f(&k["time_per_solve_s"]),
            f(&k["bw_eff_GBps"]),
            f(&k["unknowns_per_s"]),
            100.0 * f(&k["fraction_of_copy"]),
            match k["bitwise_cpu"].as_bool() {
                Some(true) => ", bitwise the CPU's solve",
                Some(false) => ", DIFFERS from the CPU's solve",
                None => "",
            },
        );
    }
    if let Some(p) = v["partitions"].as_u64() {
        s += &format!("  SPIKE partitions: {p}\n");
    }
    if let Some(r) = v["fallback"].as_str() {
        s += &format!("  note: {r}\n");
    }
    s
}
