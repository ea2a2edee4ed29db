//! The CUDA back end against the CPU back end, end to end through the host code: on a real
//! GPU where one is usable, else on the emulated CUDA driver of `tests/cuda_on_cpu/` (the
//! kernels NVRTC compiled run on the CPU emulation; launches, copies, the shared-memory opt-in
//! and synchronisation go through the real host code and the driver's checks). Each test says
//! on stderr which it ran on; the emulation takes smaller grids and fewer steps.
//!
//! Parity bound: bitwise. Without fast math the kernels are compiled with --fmad=false and
//! evaluate the same expressions in the same order as the CPU kernels, so every IEEE
//! operation rounds identically (the cavity's reductions run on the host in both cases).

mod common;
use common::emulation::{cuda, last_checkpoint, run_across_back_ends, setup, sim_cuda};
use common::*;

use sim::case::Case;
use sim::cuda::{Gpu, GpuOptions, Variant};
use sim::real::Precision;
use sim::solvers::{Device, build, build_on};

fn case(solver: &str) -> Case {
    Case::parse(&format!("name: p\nsolver:\n  {solver}\ntime: {{end_step: 1}}\n"), "test").unwrap()
}

/// Advance `solver` on the CPU and on the GPU for `steps` steps with every variant, precision
/// and a few block shapes, and compare the whole checkpoint state.
fn assert_parity(gpu: &std::sync::Arc<Gpu>, solver: &str, steps: usize) {
    for variant in [Variant::L2, Variant::Shared] {
        // [1024, 1] in f64 takes the cavity's shared tiles past the default 48 KiB (opt-in).
        let launches = [(Precision::F64, [512, 1]), (Precision::F32, [64, 4]), (Precision::F64, [32, 8]), (Precision::F64, [1024, 1])];
        for (precision, block) in launches {
            let c = case(solver);
            let device = Device::Cuda(gpu.clone(), GpuOptions { variant, block: Some(block), ..Default::default() });
            let mut cpu = build(&c, precision).unwrap();
            let mut dev = build_on(&c, precision, &device).unwrap();
            for _ in 0..steps {
                cpu.advance(cpu.dt()).unwrap();
                dev.advance(dev.dt()).unwrap();
            }
            dev.sync().unwrap();
            assert_eq!(cpu.state(), dev.state(), "{solver} {variant:?} {precision:?} {block:?}");
            let bits = |s: &dyn sim::solver::Solver| s.diagnostics().iter().map(|(n, x)| (*n, x.map(f64::to_bits))).collect::<Vec<_>>();
            assert_eq!(bits(&*cpu), bits(&*dev), "{solver} {variant:?} {precision:?} {block:?}");
        }
    }
}

#[test]
fn heat_fields_match_the_cpu_bitwise() {
    let Some(c) = cuda() else { return };
    let (n2, steps) = if c.emulated() { (67, 40) } else { (301, 500) };
    assert_parity(c.gpu(), "heat1d: {n: 1001, r: 0.45}", steps);
    assert_parity(c.gpu(), &format!("heat2d: {{n: {n2}, r: 0.2}}"), steps);
}

/// Advance an implicit case on the CPU and on the GPU in both precisions and a few block
/// shapes, with one shortened step in the middle (refactored for its smaller r, as before an
/// output time), and compare state, diagnostics and report (which names a SPIKE fallback).
/// `fallback`: whether SPIKE must have fallen back to Thomas, so that each case is known to
/// run the path it is meant for.
fn assert_implicit_parity(gpu: &std::sync::Arc<Gpu>, solver: &str, steps: usize, fallback: bool) {
    let launches = [(Precision::F64, [512, 1]), (Precision::F32, [64, 4]), (Precision::F64, [32, 8]), (Precision::F32, [1024, 1])];
    for (precision, block) in launches {
        let c = case(solver);
        let device = Device::Cuda(gpu.clone(), GpuOptions { variant: Variant::L2, block: Some(block), ..Default::default() });
        let mut cpu = build(&c, precision).unwrap();
        let mut dev = build_on(&c, precision, &device).unwrap();
        for k in 0..steps {
            let dt = if k == steps / 2 { cpu.dt() * 0.37 } else { cpu.dt() };
            cpu.advance(dt).unwrap();
            dev.advance(dt).unwrap();
        }
        dev.sync().unwrap();
        let what = format!("{solver} {precision:?} {block:?} on {}", dev.backend());
        // Not assert_eq: the fields of 1001 nodes would bury the message.
        assert!(cpu.state() == dev.state(), "{what}: the fields differ");
        let bits = |s: &dyn sim::solver::Solver| s.diagnostics().iter().map(|(n, x)| (*n, x.map(f64::to_bits))).collect::<Vec<_>>();
        assert_eq!(bits(&*cpu), bits(&*dev), "{what}");
        let report = dev.report();
        assert_eq!(cpu.report(), report, "{what}");
        assert_eq!(report.contains_key("tridiagonal_fallback"), fallback, "{what}: {report:?}");
        assert!(dev.backend().starts_with("cuda") && dev.backend().contains(report["method"].as_str().unwrap()), "{what}");
        // The back end names the solver that runs.
        assert_eq!(dev.backend().contains("fell back"), fallback, "{what}");
    }
}

#[test]
fn implicit_heat_matches_the_cpu_bitwise() {
    let Some(c) = cuda() else { return };
    let (n2, steps) = if c.emulated() { (67, 12) } else { (301, 100) };
    let cn = "heat1d: {n: 1001, r: 0.4, method: crank_nicolson";
    assert_implicit_parity(c.gpu(), &format!("{cn}}}"), steps, false);
    // Truncated SPIKE on 7 partitions, and on one (no interfaces).
    assert_implicit_parity(c.gpu(), &format!("{cn}, tridiagonal: spike, partitions: 7}}"), steps, false);
    assert_implicit_parity(c.gpu(), &format!("{cn}, tridiagonal: spike, partitions: 1}}"), steps, false);
    // Partitions of 3 rows at r = 1e-6: the kept windows of V and W overlap (in f64), so a
    // row takes both corrections.
    assert_implicit_parity(c.gpu(), "heat1d: {n: 41, r: 1.0e-6, method: crank_nicolson, tridiagonal: spike, partitions: 13}", steps, false);
    // r = 1000 is too weakly dominant to truncate: the plan falls back to Thomas (in both
    // precisions).
    assert_implicit_parity(c.gpu(), "heat1d: {n: 1001, r: 1000, method: crank_nicolson, tridiagonal: spike, partitions: 7}", steps, true);
    // An odd side leaves partial blocks; r above 1/4 is the implicit method's own range.
    assert_implicit_parity(c.gpu(), &format!("heat2d: {{n: {n2}, r: 0.7, method: adi}}"), steps, false);
}

#[test]
fn cavity_fields_match_the_cpu_bitwise() {
    let Some(c) = cuda() else { return };
    // Residual checks every K steps: the GPU path's host reductions are compared too. The
    // odd side leaves partial blocks at both edges.
    let (k, steps) = if c.emulated() { (20, [60, 30]) } else { (40, [300, 130]) };
    assert_parity(c.gpu(), &format!("cavity: {{n: 67, re: 100, residual: {{every: {k}}}}}"), steps[0]);
    assert_parity(c.gpu(), &format!("cavity: {{n: 130, re: 1000, residual: {{every: {k}}}}}"), steps[1]);
}

/// Rectangular grids (the solvers' are square) through the host launch code of both solvers,
/// from noisy fields, against the CPU kernels: a swapped nx/ny or a grid that misses nodes
/// shows here.
#[test]
fn rectangular_grids_match_the_cpu_bitwise() {
    use sim::solver::Grid;
    use sim::solvers::cavity::{cuda::CavityCuda, kernels::{Coeffs, Fields}};
    use sim::solvers::heat::{cuda::HeatCuda, kernels::ftcs2d};
    let Some(c) = cuda() else { return };
    let (nx, ny, steps) = (45, 19, 5);
    for (variant, block) in [(Variant::L2, [16, 4]), (Variant::Shared, [8, 8]), (Variant::Shared, [1024, 1])] {
        let opts = GpuOptions { variant, block: Some(block), ..Default::default() };
        let grid = Grid { n: [nx, ny], origin: [0.0; 2], spacing: [1.0; 2] };
        let init: Vec<f64> = noise(nx * ny, 7);
        let mut heat = HeatCuda::<f64>::new(c.gpu(), &opts, &grid, &init).unwrap();
        let (mut t, mut next) = (init.clone(), vec![0.0; nx * ny]);
        for _ in 0..steps {
            heat.step(0.2).unwrap();
            ftcs2d(&t, &mut next, nx, 0.2);
            std::mem::swap(&mut t, &mut next);
        }
        let mut got = vec![0.0; nx * ny];
        heat.field.download(&mut got).unwrap();
        assert!(got.iter().zip(&t).all(|(a, b)| a.to_bits() == b.to_bits()), "heat {variant:?} {block:?}");

        let k = Coeffs::<f64>::new(1.3e-3, 0.031, 0.029, 0.01, 10.0, 1.0);
        let mut f = Fields::<f64>::initial(nx, ny, k.u0);
        f.u.copy_from_slice(&noise(nx * ny, 1));
        f.v.copy_from_slice(&noise(nx * ny, 2));
        f.p.copy_from_slice(&noise(nx * ny, 3));
        let mut cavity = CavityCuda::new(c.gpu(), &opts, nx, ny, &f.u, &f.v, &f.p).unwrap();
        for _ in 0..steps {
            cavity.step(&k).unwrap();
            f.step(&k);
        }
        let (mut u, mut v, mut p) = (vec![0.0; nx * ny], vec![0.0; nx * ny], vec![0.0; nx * ny]);
        cavity.download(&mut u, &mut v, &mut p).unwrap();
        for (name, got, want) in [("u", &u, &f.u[..]), ("v", &v, &f.v[..]), ("p", &p, &f.p[..])] {
            assert!(got.iter().zip(want).all(|(a, b)| a.to_bits() == b.to_bits()), "cavity {name} {variant:?} {block:?}");
        }
    }
}

#[test]
fn runs_and_checkpoints_move_between_back_ends() {
    let Some(c) = cuda() else { return };
    let dir = scratch("gpu_restart");
    let (n, end, leg) = if c.emulated() { ([65, 33], 60, "25") } else { ([129, 65], 200, "80") };
    let solvers = [
        format!("heat2d: {{n: {}, r: 0.2}}", n[0]),
        format!("heat2d: {{n: {}, r: 0.5, method: adi}}", n[0]),
        format!("cavity: {{n: {}, re: 100, residual: {{every: 20}}}}", n[1]),
    ];
    for solver in solvers {
        let text = format!("name: h\nsolver:\n  {solver}\ntime: {{end_step: {end}}}\noutput: {{every_steps: 10}}\n");
        write(&dir, "case.yaml", &text);
        run_across_back_ends(&dir, leg);
        let last = |d: &str| last_checkpoint(&dir, d);
        let ((m1, a1), (m0, a0), (m2, a2), (m3, a3)) = (last("cpu"), last("gpu"), last("to_gpu"), last("to_cpu"));
        assert_eq!((m1.step, &a1), (m0.step, &a0), "{solver}: GPU all the way");
        assert_eq!((m1.step, &a1), (m2.step, &a2), "{solver}: CPU then GPU");
        assert_eq!((m1.step, &a1), (m3.step, &a3), "{solver}: GPU then CPU");
        assert!(m0.backend.starts_with("cuda") && m2.backend.starts_with("cuda"), "{}", m2.backend);
        assert_eq!(m3.backend, "cpu");
        // The VTK output written from the device's fields equals the CPU run's.
        let vti = |d: &str| std::fs::read(dir.join(d).join("h_00000010.vti")).unwrap();
        assert!(vti("cpu") == vti("gpu"), "{solver}: output at step 10 differs");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A damaged kernel cache file is compiled again and replaced, not a failed run.
#[test]
fn a_damaged_cached_cubin_is_compiled_again() {
    let Some(_) = cuda() else { return };
    let dir = scratch("gpu_cache");
    let cache = dir.join("cache");
    write(&dir, "case.yaml", "name: h\nsolver:\n  heat1d: {n: 65, r: 0.4}\ntime: {end_step: 5}\nbackend: cuda\n");
    let run = |out: &str| {
        let args = ["run", "case.yaml", "--quiet", "--out", out];
        ok(common::emulation::sim_cuda_command(&dir, &args).env("SIM_CACHE_DIR", &cache).output().unwrap())
    };
    run("a");
    let cubins: Vec<_> = std::fs::read_dir(&cache).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "cubin")).collect();
    assert!(!cubins.is_empty());
    let sizes: Vec<u64> = cubins.iter().map(|p| std::fs::metadata(p).unwrap().len()).collect();
    for p in &cubins {
        std::fs::write(p, b"not a cubin").unwrap();
    }
    run("b");
    assert_eq!(cubins.iter().map(|p| std::fs::metadata(p).unwrap().len()).collect::<Vec<_>>(), sizes);
    assert_eq!(last_checkpoint(&dir, "a").1, last_checkpoint(&dir, "b").1);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn info_and_bench_report_the_device() {
    let Some(c) = cuda() else { return };
    let dir = scratch("gpu_info");
    let o = ok(sim_cuda(&dir, &["info"]));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains(&c.gpu().name), "{text}");
    for (name, extra) in [("heat2d", "l2"), ("cavity", "shared")] {
        let args = ["bench", name, "--backend", "cuda", "--variant", extra, "--block", "32,8", "--size", "64", "--seconds", "0.01", "--json"];
        let o = ok(sim_cuda(&dir, &args));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!((v["backend"].as_str(), v["device"].as_str()), (Some("cuda"), Some(c.gpu().name.as_str())), "{v}");
        assert!(v["kernel"]["time_per_step_s"].as_f64().unwrap() > 0.0 && v["copy"]["bw_GBps"].as_f64().unwrap() > 0.0, "{v}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A launch returns before its kernel has run (on the emulated driver too, which queues
/// launches until the host waits), so a run's compute time must include waiting for its
/// steps: per step at least half the kernel time `sim bench` measures with CUDA events.
/// Counting the step calls alone gave launch times, on an H200 under a hundredth of the
/// kernels' time.
#[test]
fn run_compute_time_waits_for_the_device() {
    let Some(c) = cuda() else { return };
    let dir = scratch("gpu_run_compute_time");
    let n = if c.emulated() { 257 } else { 4097 };
    let steps = 60;
    let case = format!(
        "name: t\nsolver:\n  heat2d: {{n: {n}, r: 0.2, t0: 0.001}}\ntime: {{end_step: {steps}}}\nguard: {{check_every: 20}}\n"
    );
    let path = write(&dir, "t.yaml", &case);
    ok(sim_cuda(&dir, &["run", path.to_str().unwrap(), "--backend", "cuda", "--quiet", "--out", "out"]));
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("out/summary.json")).unwrap()).unwrap();
    let run = summary["performance"]["time_per_step_s"].as_f64().unwrap();
    let size = n.to_string();
    let args = ["bench", "heat2d", "--backend", "cuda", "--size", &size, "--seconds", "0.2", "--json"];
    let bench: serde_json::Value = serde_json::from_slice(&ok(sim_cuda(&dir, &args)).stdout).unwrap();
    let kernel = bench["kernel"]["time_per_step_s"].as_f64().unwrap();
    assert!(run >= 0.5 * kernel, "run: {run:.3e} s per step, kernels alone: {kernel:.3e} s\n{summary}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// `sim bench tridiag --backend cuda`: each path timed on the device solves the original
/// right-hand sides once more bit for bit as the CPU does (odd sizes, partitions of unequal
/// lengths); batched SPIKE falls back where its partitions are too short for the precision.
#[test]
fn bench_tridiag_solves_on_the_device_as_on_the_cpu() {
    let Some(c) = cuda() else { return };
    let dir = scratch("gpu_bench_tridiag");
    let (f32_batch, f64_batch) = (
        ["interleaved", "contiguous", "interleaved_spike_16", "interleaved_spike_16_staged", "interleaved_spike_64", "interleaved_spike_128"],
        ["interleaved", "contiguous", "interleaved_spike_32", "interleaved_spike_32_staged", "interleaved_spike_64"],
    );
    for (args, paths, fallback) in [
        (&["--size", "300", "--batch", "41", "--precision", "f32"][..], &f32_batch[..], None),
        (&["--size", "200", "--batch", "41"][..], &f64_batch[..], Some("interleaved_spike_16")),
        (&["--solver", "spike", "--size", "5000", "--precision", "f32"][..], &["spike", "spike_staged"][..], None),
        (&["--solver", "spike", "--size", "5000"][..], &["spike", "spike_staged"][..], None),
        // 257 partitions: two blocks of the line kernel, the second of one partition.
        (&["--solver", "spike", "--size", "8200", "--precision", "f32"][..], &["spike", "spike_staged"][..], None),
        // Partitions of exactly 32, 64 and 128 rows: the one-pass kernels' full path.
        (&["--size", "256", "--batch", "41", "--precision", "f32"][..], &["interleaved_spike_32", "interleaved_spike_64", "interleaved_spike_128"][..], None),
        (&["--size", "256", "--batch", "41"][..], &["interleaved_spike_32", "interleaved_spike_64"][..], Some("interleaved_spike_16")),
        (&["--solver", "spike", "--size", "8192", "--precision", "f32"][..], &["spike"][..], None),
        (&["--solver", "spike", "--size", "8192"][..], &["spike"][..], None),
    ] {
        let mut a = vec!["bench", "tridiag", "--backend", "cuda", "--seconds", "0.01", "--json"];
        a.extend(args);
        let v: serde_json::Value = serde_json::from_slice(&ok(sim_cuda(&dir, &a)).stdout).unwrap();
        assert_eq!(v["device"].as_str(), Some(c.gpu().name.as_str()), "{v}");
        for p in paths {
            assert_eq!(v[p]["bitwise_cpu"].as_bool(), Some(true), "{args:?} {p}: {v}");
            assert!(v[p]["bw_eff_GBps"].as_f64().unwrap() > 0.0, "{args:?} {p}: {v}");
        }
        if let Some(p) = fallback {
            assert!(v[p]["fallback"].as_str().unwrap().contains("too weak to truncate"), "{args:?} {p}: {v}");
        }
    }
    // Partitions in registers run in one pass: f32 up to 128 rows (75 here), f64 up to 64 (33-34
    // here, not 66-67); longer ones in three kernels.
    let kernels = |args: &[&str], key: &str| {
        let mut a = vec!["bench", "tridiag", "--backend", "cuda", "--seconds", "0.01", "--json"];
        a.extend(args);
        let v: serde_json::Value = serde_json::from_slice(&ok(sim_cuda(&dir, &a)).stdout).unwrap();
        v[key]["kernels"].as_str().map(str::to_string)
    };
    assert_eq!(kernels(&["--size", "300", "--precision", "f32", "--batch", "41"], "interleaved_spike_64").as_deref(), Some("fused"));
    assert_eq!(kernels(&["--size", "300", "--precision", "f32", "--batch", "41"], "interleaved_spike_128").as_deref(), Some("staged"));
    assert_eq!(kernels(&["--size", "200", "--batch", "41"], "interleaved_spike_32").as_deref(), Some("fused"));
    assert_eq!(kernels(&["--size", "200", "--batch", "41"], "interleaved_spike_64").as_deref(), Some("staged"));
    assert_eq!(kernels(&["--solver", "spike", "--size", "5000"], "spike").as_deref(), Some("fused"));
    // The batch split between the host and the device: every share solves every system, the
    // device's part as the CPU solves it.
    let a = ["bench", "tridiag", "--backend", "cuda", "--seconds", "0.01", "--json", "--size", "300", "--batch", "41", "--cpu-share", "0.5"];
    let v: serde_json::Value = serde_json::from_slice(&ok(sim_cuda(&dir, &a)).stdout).unwrap();
    for (key, cpu) in [("split_cpu_0", 0), ("split_cpu_0.5", 21), ("split_cpu_1", 41)] {
        let k = &v[key];
        assert_eq!((k["cpu_systems"].as_u64(), k["gpu_systems"].as_u64()), (Some(cpu), Some(41 - cpu)), "{key}: {v}");
        assert_eq!((k["bitwise_cpu"].as_bool(), k["gpu_solver"].as_str()), (Some(true), Some("spike")), "{key}: {v}");
        assert!(k["time_per_solve_s"].as_f64().unwrap() > 0.0, "{key}: {v}");
        assert_eq!(k["timing"], "wall clock", "host and device together: {key}: {v}");
    }
    exit2(&sim_cuda(&dir, &["bench", "tridiag", "--backend", "cuda", "--size", "37", "--cpu-share", "1.5"]), &["--cpu-share 1.5"]);
    exit2(&sim_cuda(&dir, &["bench", "tridiag", "--backend", "cuda", "--size", "37", "--block", "64,2"]), &["one-dimensional"]);
    // Options the benchmark's kernels would not use, and a block named as the flag.
    exit2(&sim_cuda(&dir, &["bench", "tridiag", "--backend", "cuda", "--size", "37", "--variant", "shared"]), &["--variant: sim bench tridiag"]);
    exit2(&sim_cuda(&dir, &["bench", "heat2d", "--backend", "cuda", "--size", "64", "--flux", "split"]), &["--flux belongs to sim bench lskum"]);
    exit2(&sim_cuda(&dir, &["bench", "copy", "--backend", "cuda", "--size", "64", "--block", "32,4"]), &["sim bench copy runs one kernel"]);
    exit2(&sim_cuda(&dir, &["bench", "heat2d", "--backend", "cuda", "--size", "64", "--block", "0,1"]), &["--block: [0, 1] must have"]);
    std::fs::remove_dir_all(dir).unwrap();
}

/// `--power` samples nvidia-smi around the timed steps (a stand-in reporting a constant 120 W
/// here), and says so when there is no nvidia-smi.
#[test]
fn bench_power_samples_nvidia_smi_or_says_why_not() {
    use std::os::unix::fs::PermissionsExt;
    let Some(_) = cuda() else { return };
    let dir = scratch("gpu_power");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let smi = bin.join("nvidia-smi");
    std::fs::write(&smi, "#!/bin/sh\nwhile true; do echo 120.00; sleep 0.05; done\n").unwrap();
    std::fs::set_permissions(&smi, std::fs::Permissions::from_mode(0o755)).unwrap();
    let args = ["bench", "heat2d", "--backend", "cuda", "--size", "64", "--seconds", "0.3", "--power", "--json"];
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let o = ok(common::emulation::sim_cuda_command(&dir, &args).env("PATH", path).output().unwrap());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let (k, p) = (&v["kernel"], &v["kernel"]["power"]);
    assert_eq!((p["measured"].as_bool(), p["mean_W"].as_f64(), p["idle_W"].as_f64()), (Some(true), Some(120.0), Some(120.0)), "{v}");
    assert!(p["samples"].as_u64().unwrap() >= 3, "{v}");
    assert_eq!(p["mcells_per_J"].as_f64().unwrap(), k["mcells_per_s"].as_f64().unwrap() / 120.0);
    // No nvidia-smi on PATH: the figures still come, the power says why it is missing.
    let o = ok(common::emulation::sim_cuda_command(&dir, &args).env("PATH", "/nonexistent").output().unwrap());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["kernel"]["power"]["measured"].as_bool(), Some(false), "{v}");
    assert!(v["kernel"]["power"]["note"].as_str().unwrap().contains("nvidia-smi cannot be started"), "{v}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn block_shapes_are_validated() {
    let dir = scratch("gpu_block");
    for (block, needle) in [("[0, 1]", "gpu.block"), ("[2048, 1]", "gpu.block"), ("[64, 32]", "gpu.block")] {
        for method in ["explicit", "adi"] {
            let text = format!("name: h\nsolver:\n  heat2d: {{n: 17, r: 0.2, method: {method}}}\ntime: {{end_step: 2}}\nbackend: cuda\ngpu: {{block: {block}}}\n");
            write(&dir, "b.yaml", &text);
            let o = sim(&dir, &["run", "b.yaml"]);
            assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
            assert!(stderr(&o).contains(needle), "{}", stderr(&o));
        }
    }
    let text = "name: h\nsolver:\n  heat2d: {n: 17, r: 0.2}\ntime: {end_step: 2}\ngpu: {variant: texture}\n";
    write(&dir, "v.yaml", text);
    let o = sim(&dir, &["check", "v.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("gpu.variant"), "{}", stderr(&o));
    std::fs::remove_dir_all(dir).unwrap();
}

/// A run with fast math says so where its back end is recorded: its results are not IEEE's.
#[test]
fn fast_math_is_named_in_the_summary_and_the_checkpoint() {
    let Some(_) = cuda() else { return };
    let dir = scratch("gpu_fast_named");
    for fast in [false, true] {
        let text = format!("name: h\nsolver:\n  heat1d: {{n: 65, r: 0.4}}\ntime: {{end_step: 3}}\nbackend: cuda\ngpu: {{fast_math: {fast}}}\n");
        write(&dir, "case.yaml", &text);
        ok(common::emulation::sim_cuda_command(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "o"]).output().unwrap());
        let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("o/summary.json")).unwrap()).unwrap();
        let (meta, _) = last_checkpoint(&dir, "o");
        for backend in [summary["backend"].as_str().unwrap(), &meta.backend] {
            assert!(backend.starts_with("cuda") && backend.ends_with(", fast math") == fast, "{backend}");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// `sim check` of a run on a device names the device and leaves out the CPU's plans.
#[test]
fn check_on_a_device_leaves_out_the_cpu_plans() {
    let Some(_) = cuda() else { return };
    let dir = scratch("gpu_check");
    let text = "name: h\nsolver:\n  heat1d: {n: 65, r: 0.4}\nprecision: f32\ntime: {end_step: 200}\ncpu: {subnormals: flush}\n";
    write(&dir, "cpu.yaml", text);
    let said = String::from_utf8(ok(sim(&dir, &["check", "cpu.yaml"])).stdout).unwrap();
    assert!(said.contains("temporal blocking") && said.contains("subnormals: flushed"), "{said}");
    write(&dir, "cuda.yaml", &format!("{text}backend: cuda\n"));
    let o = ok(common::emulation::sim_cuda_command(&dir, &["check", "cuda.yaml"]).output().unwrap());
    let said = String::from_utf8(o.stdout).unwrap();
    assert!(said.contains("backend cuda: CUDA device"), "{said}");
    assert!(!said.contains("temporal blocking") && !said.contains("subnormals"), "{said}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn auto_falls_back_to_the_cpu_and_says_so() {
    // `sim` here runs without the emulated driver.
    if setup().real_driver {
        eprintln!("note: a CUDA driver is present; the fallback path is not exercised here");
        return;
    }
    let dir = scratch("gpu_auto");
    write(&dir, "a.yaml", "name: h\nsolver:\n  heat2d: {n: 17, r: 0.2}\ntime: {end_step: 2}\nbackend: auto\n");
    let o = ok(sim(&dir, &["run", "a.yaml"]));
    assert!(stderr(&o).contains("backend auto: using the CPU"), "{}", stderr(&o));
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("out/h/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["backend"], "cpu");
    std::fs::remove_dir_all(dir).unwrap();
}
