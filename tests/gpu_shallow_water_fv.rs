//! CDKLM16 and KP07 on the CUDA back end against the CPU back end, bitwise: on a real GPU
//! where one is usable, else on the emulated CUDA driver of `tests/cuda_on_cpu/` (the NVRTC
//! kernels run on the CPU emulation; launches, copies and the shared-memory opt-in go through
//! the real host code). Every array of the state (ghost cells included) and every time step
//! must have the same bits: the kernels evaluate the CPU's expressions in the same order
//! without FMA contraction, the ghost fill runs the CPU's passes in its order, the buffer
//! sets rotate as on the CPU, and the device's dt reduction is a minimum (exact in any
//! order).

mod common;
use common::emulation::{cuda, last_checkpoint, run_across_back_ends, sim_cuda, sim_cuda_command};
use common::*;

use std::io::Read;
use std::path::Path;

use sim::case::Case;
use sim::cuda::{Gpu, GpuOptions, Variant};
use sim::real::Precision;
use sim::solver::Solver;
use sim::solvers::{Device, build, build_on};

fn case(fields: &str) -> Case {
    Case::parse(&format!("name: s\nsolver:\n  shallow_water: {{{fields}}}\ntime: {{end_step: 1}}\n"), "test").unwrap()
}

/// The bits of every array of the state, by name.
fn state_bits(s: &dyn Solver) -> Vec<(String, Vec<u64>)> {
    s.state().into_iter().map(|a| (a.name, a.values.to_f64().iter().map(|v| v.to_bits()).collect())).collect()
}

/// `steps` steps of `fields` on the CPU and on the device with `opts` in `precision`: the
/// proposed time steps and the final state (ghosts included) have the same bits.
fn assert_parity(gpu: &std::sync::Arc<Gpu>, fields: &str, precision: Precision, opts: GpuOptions, steps: usize) {
    let c = case(fields);
    let what = format!("{fields} {precision:?} {:?} {:?}", opts.variant, opts.block);
    let device = Device::Cuda(gpu.clone(), opts);
    let mut cpu = build(&c, precision).unwrap();
    let mut dev = build_on(&c, precision, &device).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(dev.backend().starts_with("cuda"), "{what}: {}", dev.backend());
    let mut dts = vec![];
    for _ in 0..steps {
        let (a, b) = (cpu.propose_dt().unwrap(), dev.propose_dt().unwrap());
        assert_eq!(a.to_bits(), b.to_bits(), "{what}: dt after {} steps", dts.len());
        dts.push(a);
        cpu.advance(a).unwrap();
        dev.advance(b).unwrap();
    }
    dev.sync().unwrap();
    // Not assert_eq: the arrays would bury the message.
    assert!(state_bits(&*cpu) == state_bits(&*dev), "{what}: the arrays differ");
    // The run did something: the state moved and (adaptive or not) the steps are positive.
    assert!(dts.iter().all(|&d| d > 0.0), "{what}: {dts:?}");
}

/// Walls, periodic in x, in y, in both, and sponges (relaxation and linear, beside walls and
/// beside periodic sides), over a wavy bottom with Coriolis (β-plane), friction and wind, on
/// 37 x 29 cells (partial blocks at the north and east edges).
const SIDES: [&str; 6] = [
    "{}",
    "{east: periodic, west: periodic}",
    "{north: periodic, south: periodic}",
    "{north: periodic, south: periodic, east: periodic, west: periodic}",
    "{north: {sponge: {cells: 4}}, east: {sponge: {cells: 3, kind: linear}}}",
    "{north: {sponge: {cells: 3, kind: linear}}, south: {sponge: {cells: 5}}, east: periodic, west: periodic}",
];

fn busy(scheme: &str, sides: &str, step: &str, rk: &str) -> String {
    format!(
        "scheme: {scheme}, nx: 37, ny: 29, dx: 200.0, dy: 170.0, {step}, time_integration: {rk}, \
         coriolis: {{f0: 0.01, beta: 1.0e-6}}, friction: 2.0e-3, wind: [1.0e-4, -2.0e-4], boundary: {sides}, \
         bathymetry: {{waves: {{mean: 20.0, amplitude: 3.0, wavelength: 2500.0}}}}, \
         initial: {{hump: {{amplitude: 1.5, radius: 900.0, center: [2500.0, 3000.0], shape: gaussian}}}}"
    )
}

/// Every boundary type, both precisions, both variants, adaptive and fixed steps.
fn every_boundary(scheme: &str) {
    let Some(c) = cuda() else { return };
    let steps = if c.emulated() { 12 } else { 50 };
    for (n, sides) in SIDES.iter().enumerate() {
        let launches = [
            (Precision::F32, Variant::L2, [16, 8]),
            (Precision::F64, Variant::Shared, [8, 4]),
            (Precision::F32, Variant::Shared, [32, 2]),
            (Precision::F64, Variant::L2, [64, 1]),
        ];
        for (m, (precision, variant, block)) in launches.into_iter().enumerate() {
            // Every side with adaptive steps in half of its runs, a fixed step in the others.
            let step = if (n + m).is_multiple_of(2) { "courant: 0.8" } else { "dt: 2.0" };
            let opts = GpuOptions { variant, block: Some(block), ..Default::default() };
            assert_parity(c.gpu(), &busy(scheme, sides, step, "ssp_rk2"), precision, opts, steps);
        }
    }
}

#[test]
fn cdklm16_matches_the_cpu_bitwise_for_every_boundary() {
    every_boundary("cdklm16");
}

#[test]
fn kp07_matches_the_cpu_bitwise_for_every_boundary() {
    every_boundary("kp07");
}

/// The other Runge-Kutta schemes (stage counts 1, 3, 4; blends and fractions of dt), with
/// GPU Ocean's and the clean friction factor.
#[test]
fn every_runge_kutta_scheme_matches_the_cpu_bitwise() {
    let Some(c) = cuda() else { return };
    let steps = if c.emulated() { 10 } else { 40 };
    for scheme in ["cdklm16", "kp07"] {
        for (rk, compat) in [("forward_euler", true), ("ssp_rk3", false), ("ssp43", true), ("ssp_rk2", false)] {
            for (precision, variant) in [(Precision::F32, Variant::Shared), (Precision::F64, Variant::L2)] {
                let fields = format!("{}, gpu_ocean_compat: {compat}", busy(scheme, SIDES[4], "courant: 0.5", rk));
                let opts = GpuOptions { variant, block: Some([16, 4]), ..Default::default() };
                assert_parity(c.gpu(), &fields, precision, opts, steps);
            }
        }
    }
}

/// GPU Ocean's reference array `name` (rows south first), from `tests/data/swe`.
fn reference(name: &str) -> Vec<Vec<f64>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/swe/timestep50/{name}.dat.gz"));
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_string(&mut text).unwrap();
    text.lines().map(|l| l.split_whitespace().map(|v| v.parse().unwrap()).collect()).collect()
}

/// Spec §9.1 on the device: GPU Ocean's regression cases (50 x 70 cells, the three bumps,
/// walls and the periodic variants, Coriolis, β-plane, the test bathymetry) run to T = 50 s
/// in f32, bitwise equal to the CPU run and within the CPU tests' 5e-4 of GPU Ocean's arrays.
fn regression(scheme: &str, dt: f64, variant: Variant) {
    let Some(c) = cuda() else { return };
    let mut cases: Vec<(&str, &str, bool)> = vec![];
    for bc in ["wallBC", "periodic", "periodicNS", "periodicEW"] {
        for init in ["central", "corner", "upperCorner"] {
            cases.push((bc, init, false));
        }
    }
    cases.push(("coriolis", "central", false));
    if scheme == "cdklm16" {
        cases.push(("betamodel", "central", false));
        cases.push(("wallBC", "central", true));
    }
    let up = scheme.to_uppercase();
    for (bc, init, bathymetry) in cases {
        let sides = match bc {
            "periodic" => "{north: periodic, south: periodic, east: periodic, west: periodic}",
            "periodicNS" => "{north: periodic, south: periodic}",
            "periodicEW" => "{east: periodic, west: periodic}",
            _ => "{}",
        };
        let coriolis = match bc {
            "coriolis" => "{f0: 0.01}",
            "betamodel" => "{f0: 0.01, beta: 1.0e-6}",
            _ => "{}",
        };
        let position = match init {
            "upperCorner" => "upper_corner",
            p => p,
        };
        let bottom = if bathymetry { "gpu_ocean_test" } else { "{flat: 60.0}" };
        let fields = format!(
            "scheme: {scheme}, nx: 50, ny: 70, dx: 200.0, dt: {dt}, theta: 1.3, coriolis: {coriolis}, \
             boundary: {sides}, bathymetry: {bottom}, initial: {{bump: {{position: {position}}}}}"
        );
        let c0 = case(&fields);
        let device = Device::Cuda(c.gpu().clone(), GpuOptions { variant, block: Some([16, 8]), ..Default::default() });
        let mut cpu = build(&c0, Precision::F32).unwrap();
        let mut dev = build_on(&c0, Precision::F32, &device).unwrap();
        // GPU Ocean's step(T): steps of dt, the last one shortened to land on T.
        let n = (50.0 / dt + 1.0) as usize;
        for i in 0..n {
            let local = dt.min(50.0 - i as f64 * dt);
            if local <= 0.0 {
                break;
            }
            cpu.advance(local).unwrap();
            dev.advance(local).unwrap();
        }
        dev.sync().unwrap();
        let what = format!("{scheme} {bc} {init} bathymetry {bathymetry} {variant:?}");
        assert!(state_bits(&*cpu) == state_bits(&*dev), "{what}: the arrays differ from the CPU's");
        // Periodic central bumps compare against the wall result (spec §9.1).
        let rbc = if init == "central" && bc.starts_with("periodic") { "wallBC" } else { bc };
        let bath = if bathymetry { "bathymetry_" } else { "" };
        for (field, file) in [("eta", "eta"), ("hu", "u"), ("hv", "v")] {
            let a = dev.state().into_iter().find(|a| a.name == field).unwrap();
            let cols = a.shape[1];
            let v = a.values.to_f64();
            let r = reference(&format!("{up}_{rbc}_{init}_{bath}{file}"));
            let scale = r[2..72].iter().flat_map(|row| &row[2..52]).fold(0.0f64, |m, x| m.max(x.abs()));
            let mut worst = 0.0f64;
            for l in 2..72 {
                for k in 2..52 {
                    worst = worst.max((v[l * cols + k] - r[l][k]).abs());
                }
            }
            assert!(worst / scale <= 5e-4, "{what} {field}: {:e} relative to GPU Ocean", worst / scale);
        }
    }
}

#[test]
fn cdklm16_reproduces_gpu_ocean_on_the_device() {
    regression("cdklm16", 0.9, Variant::Shared);
}

#[test]
fn kp07_reproduces_gpu_ocean_on_the_device() {
    regression("kp07", 0.95, Variant::L2);
}

/// `sim run` with checkpoints: CPU then CUDA, CUDA then CPU, and CUDA all the way end with the
/// CPU run's bits; the output written from the device's fields equals the CPU's.
#[test]
fn runs_and_checkpoints_move_between_back_ends() {
    let Some(c) = cuda() else { return };
    let dir = scratch("gpu_swe_fv_restart");
    let (end, leg) = if c.emulated() { (24, "11") } else { (100, "37") };
    for (scheme, precision, gpu) in [
        ("cdklm16", "f32", "{variant: shared, block: [16, 8]}"),
        ("kp07", "f64", "{variant: l2, block: [32, 4]}"),
    ] {
        let fields = busy(scheme, "{north: {sponge: {cells: 4}}}", "courant: 0.7", "ssp_rk2");
        let text = format!(
            "name: h\nsolver:\n  shallow_water: {{{fields}}}\nprecision: {precision}\ngpu: {gpu}\n\
             time: {{end_step: {end}}}\noutput: {{every_steps: 6}}\n"
        );
        write(&dir, "case.yaml", &text);
        run_across_back_ends(&dir, leg);
        let last = |d: &str| last_checkpoint(&dir, d);
        let ((m1, a1), (m0, a0), (m2, a2), (m3, a3)) = (last("cpu"), last("gpu"), last("to_gpu"), last("to_cpu"));
        let bits = |a: &[sim::solver::StateArray]| state_bits_of(a);
        assert_eq!(m1.step, end as u64, "{scheme}");
        assert!((m1.step, bits(&a1)) == (m0.step, bits(&a0)), "{scheme}: GPU all the way");
        assert!((m1.step, bits(&a1)) == (m2.step, bits(&a2)), "{scheme}: CPU then GPU");
        assert!((m1.step, bits(&a1)) == (m3.step, bits(&a3)), "{scheme}: GPU then CPU");
        assert_eq!(m1.time.to_bits(), m2.time.to_bits(), "{scheme}: adaptive steps differ");
        assert!(m0.backend.starts_with("cuda") && m2.backend.starts_with("cuda"), "{}", m2.backend);
        assert_eq!(m3.backend, "cpu");
        let vti = |d: &str| std::fs::read(dir.join(d).join("h_00000006.vti")).unwrap();
        assert!(vti("cpu") == vti("gpu"), "{scheme}: output at step 6 differs");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Adaptive steps that the device chooses and lands itself, many per download of its clock,
/// through `sim run`: the output instants (every 13 s), the end time (95 s) and the guard
/// rows (every 4 steps) fall where the CPU's step-by-step driver puts them, with the same
/// bits, also when the run moves between back ends.
#[test]
fn steps_landed_on_the_device_follow_the_cpus_schedule() {
    let Some(_) = cuda() else { return };
    let dir = scratch("gpu_swe_fv_landed");
    for (scheme, precision) in [("kp07", "f32"), ("cdklm16", "f64")] {
        let fields = busy(scheme, "{north: {sponge: {cells: 4}}}", "courant: 0.6", "ssp_rk2");
        let text = format!(
            "name: h\nsolver:\n  shallow_water: {{{fields}}}\nprecision: {precision}\n\
             time: {{end_time: 95.0}}\noutput: {{every_time: 13.0}}\nguard: {{check_every: 4}}\n"
        );
        write(&dir, "case.yaml", &text);
        run_across_back_ends(&dir, "9");
        let read = |d: &str, f: &str| std::fs::read_to_string(dir.join(d).join(f)).unwrap();
        // Without what the end of a restart's first leg (step 9) adds: its output and guard row.
        let pvd_of = |d: &str| -> Vec<String> {
            read(d, "h.pvd").lines().filter(|l| !l.contains("h_00000009.vti")).map(String::from).collect()
        };
        // Every column but the wall-clock one.
        let history = |d: &str| -> Vec<String> {
            let rows = read(d, "history.csv");
            let kept = rows.lines().filter(|l| !l.starts_with("9,"));
            kept.map(|l| l.split(',').enumerate().filter(|(i, _)| *i != 2).map(|(_, v)| v).collect()).collect()
        };
        let (cpu, cpu_state) = last_checkpoint(&dir, "cpu");
        assert_eq!(cpu.time, 95.0, "{scheme}: the run ends on the end time");
        let pvd = read("cpu", "h.pvd");
        for k in 1..=7 {
            let at = format!("timestep=\"{:.17e}\"", 13.0 * k as f64);
            assert!(pvd.contains(&at), "{scheme}: no output at {} s: {pvd}", 13 * k);
        }
        for d in ["gpu", "to_gpu", "to_cpu"] {
            assert_eq!(pvd_of("cpu"), pvd_of(d), "{scheme} {d}: outputs");
            assert_eq!(history("cpu"), history(d), "{scheme} {d}: history.csv");
            let (m, state) = last_checkpoint(&dir, d);
            assert_eq!((m.step, m.time.to_bits()), (cpu.step, cpu.time.to_bits()), "{scheme} {d}");
            assert!(state_bits_of(&state) == state_bits_of(&cpu_state), "{scheme} {d}: the final state differs");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// One call of `advance_landed` takes every step it may (one download of the device clock),
/// each as the CPU's host-driven steps: same lengths, time and state.
#[test]
fn one_call_lands_many_steps_on_the_device() {
    let Some(c) = cuda() else { return };
    let c0 = case(&busy("kp07", "{east: periodic, west: periodic}", "courant: 0.8", "ssp_rk3"));
    let device = Device::Cuda(c.gpu().clone(), GpuOptions { block: Some([16, 8]), ..Default::default() });
    let mut cpu = build(&c0, Precision::F64).unwrap();
    let mut dev = build_on(&c0, Precision::F64, &device).unwrap();
    let most = dev.landed_steps_per_call();
    assert!(most > 1, "{most}");
    let landing = sim::run::schedule::Landing { end_time: None, every_time: Some(1.0e9) };
    dev.advance_landed(&landing, most).unwrap();
    for _ in 0..most {
        let dt = cpu.propose_dt().unwrap();
        cpu.advance(dt).unwrap();
    }
    dev.sync().unwrap();
    assert_eq!((dev.step(), dev.time().to_bits()), (cpu.step(), cpu.time().to_bits()));
    assert_eq!(dev.dt().to_bits(), cpu.dt().to_bits(), "the last proposal");
    assert!(state_bits(&*cpu) == state_bits(&*dev), "the arrays differ");
}

fn state_bits_of(a: &[sim::solver::StateArray]) -> Vec<(String, Vec<u64>)> {
    a.iter().map(|a| (a.name.clone(), a.values.to_f64().iter().map(|v| v.to_bits()).collect())).collect()
}

/// `sim bench` on the device, and block shapes the device cannot run refused naming the key.
#[test]
fn bench_runs_and_bad_blocks_are_refused() {
    let Some(_) = cuda() else { return };
    let dir = scratch("gpu_swe_fv_bench");
    for (scheme, variant) in [("cdklm16", "shared"), ("kp07", "l2")] {
        let args = [
            "bench", "shallow_water", "--backend", "cuda", "--scheme", scheme, "--variant", variant, "--block", "16,8",
            "--size", "40", "--seconds", "0.01", "--json",
        ];
        let o = ok(sim_cuda(&dir, &args));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["backend"].as_str(), Some("cuda"), "{v}");
        assert!(v["kernel"]["time_per_step_s"].as_f64().unwrap() > 0.0, "{v}");
        assert_eq!(v["kernel"]["timing"].as_str(), Some("cuda events"), "{v}");
    }
    // Too many threads; more shared memory than a block may have (f64 tiles of 1024 x 1).
    for (gpu, precision) in [("{block: [64, 32]}", "f32"), ("{variant: shared, block: [1024, 1]}", "f64")] {
        let text = format!(
            "name: b\nsolver:\n  shallow_water: {{{}}}\nprecision: {precision}\nbackend: cuda\ngpu: {gpu}\n\
             time: {{end_step: 2}}\n",
            busy("cdklm16", "{}", "dt: 1.0", "ssp_rk2")
        );
        write(&dir, "b.yaml", &text);
        let o = sim_cuda(&dir, &["run", "b.yaml", "--quiet"]);
        assert_eq!(o.status.code(), Some(2), "{gpu}: {}", stderr(&o));
        assert!(stderr(&o).contains("gpu.block"), "{gpu}: {}", stderr(&o));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// `sim bench --fast-math` compiles the kernels with --use_fast_math (cubins the IEEE build
/// does not have) and says so in its figures and text.
#[test]
fn bench_fast_math_compiles_the_kernels_with_fast_math() {
    let Some(_) = cuda() else { return };
    let dir = scratch("gpu_swe_fv_fast_math");
    let bench = |fast: bool, json: bool| -> (String, std::collections::BTreeSet<Vec<u8>>) {
        let cache = dir.join(if fast { "fast" } else { "ieee" });
        let mut args = vec!["bench", "shallow_water", "--backend", "cuda", "--scheme", "cdklm16", "--size", "40", "--seconds", "0.01"];
        args.extend(fast.then_some("--fast-math"));
        args.extend(json.then_some("--json"));
        let o = ok(sim_cuda_command(&dir, &args).env("SIM_CACHE_DIR", &cache).output().unwrap());
        let cubins = std::fs::read_dir(&cache).unwrap().flatten().map(|e| e.path());
        let cubins = cubins.filter(|p| p.extension().is_some_and(|x| x == "cubin")).map(|p| std::fs::read(p).unwrap());
        (String::from_utf8_lossy(&o.stdout).to_string(), cubins.collect())
    };
    let (ieee, ieee_cubins) = bench(false, true);
    let (fast, fast_cubins) = bench(true, true);
    let figure = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap()["fast_math"].as_bool();
    assert_eq!((figure(&ieee), figure(&fast)), (Some(false), Some(true)), "{ieee}\n{fast}");
    assert!(!fast_cubins.is_subset(&ieee_cubins), "no kernel file was compiled otherwise");
    assert!(bench(true, false).0.contains("fast math"));
    assert!(!bench(false, false).0.contains("fast math"));
    std::fs::remove_dir_all(dir).unwrap();
}
