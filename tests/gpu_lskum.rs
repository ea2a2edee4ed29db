//! q-LSKUM on the CUDA back end against the CPU back end: bitwise on the emulated CUDA driver
//! of `tests/cuda_on_cpu/` (see tests/gpu.rs), whose exp, log and pow are glibc's as on the
//! CPU; on a real GPU, whose exp/log/pow differ from glibc's in the last bits, to a relative
//! [`DEVICE_BOUND`] (an expected bound: no GPU has run these tests yet). Both flux variants
//! (fused, split) and both scratch variants (registers, shared memory) are compared in the
//! state, the residual norm and the force coefficients after every iteration, on the stored
//! regression setups of spec lskum.md §11, which the CUDA runs also meet against the
//! reference data.

mod common;
use common::emulation::{cuda, last_checkpoint, sim_cuda};
use common::*;

use sim::cuda::{Flux, GpuOptions, Variant};
use sim::solver::Solver;
use sim::solvers::Device;
use sim::solvers::lskum::{Accuracy, CloudFormat, ForcePoints, Limiter, Lskum, LskumParams, TimeScheme};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/lskum");
const MESHES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/meshes");

/// The settings of the stored SSP(4,3) run (spec 11.2) on the 9600-point legacy cloud.
fn fser() -> LskumParams {
    LskumParams::with_cloud(format!("{MESHES}/naca0012_9600_legacy.txt"), CloudFormat::Legacy, 0.63, 2.0)
}

/// The stored 2019 run (spec 11.1): forward Euler, first-order q-derivatives.
fn ref2019() -> LskumParams {
    let mut p = LskumParams::with_cloud(format!("{MESHES}/naca0012_9600_oldformat.txt"), CloudFormat::Old, 0.63, 2.0);
    p.cfl = 0.8;
    p.inner_iterations = 0;
    p.vl_const = 150.0;
    p.tscheme = TimeScheme::First;
    p
}

fn opts(flux: Flux, variant: Variant, threads: u32) -> GpuOptions {
    GpuOptions { variant, block: Some([threads, 1]), flux, ..Default::default() }
}

/// The four variants, with block sizes that do not divide the cloud.
fn variants() -> [GpuOptions; 4] {
    [
        opts(Flux::Fused, Variant::L2, 128),
        opts(Flux::Split, Variant::L2, 256),
        opts(Flux::Fused, Variant::Shared, 64),
        opts(Flux::Split, Variant::Shared, 96),
    ]
}

/// Relative difference allowed on a real GPU (round-off of CUDA's exp/log/pow, amplified over
/// a few tens of iterations).
const DEVICE_BOUND: f64 = 1e-9;

/// Whether `a` and `b` agree: bit for bit (`exact`), else to [`DEVICE_BOUND`] relative.
fn same(a: &[f64], b: &[f64], exact: bool) -> bool {
    let close = |x: f64, y: f64| {
        if exact { x.to_bits() == y.to_bits() } else { (x - y).abs() <= DEVICE_BOUND * y.abs().max(1e-3) }
    };
    a.len() == b.len() && a.iter().zip(b).all(|(&x, &y)| close(x, y))
}

fn flat(v: &[[f64; 4]]) -> Vec<f64> {
    v.iter().flatten().copied().collect()
}

fn coefficients(s: &Lskum) -> Vec<f64> {
    let (a, b, c) = s.coefficients_of(ForcePoints::Shape);
    let (d, e, f) = s.coefficients_of(ForcePoints::Wall);
    vec![a, b, c, d, e, f]
}

/// Run `p` for `iterations` on the CPU and on the device with each of `devices`, comparing the
/// state, residual norm, residue and coefficients after every iteration; `check(it, run)`
/// sees every device iteration.
fn assert_parity(p: &LskumParams, iterations: u64, devices: &[GpuOptions], check: &dyn Fn(u64, &Lskum)) {
    let Some(c) = cuda() else { return };
    let exact = c.emulated();
    let mut cpu = Lskum::new(p).unwrap();
    let mut devs: Vec<(String, Lskum)> = devices
        .iter()
        .map(|o| {
            let what = format!("{} flux, {} scratch, block {}", o.flux.name(), o.variant.name(), o.block()[0]);
            (what, Lskum::new(p).unwrap().on(&Device::Cuda(c.gpu().clone(), o.clone())).unwrap())
        })
        .collect();
    for it in 1..=iterations {
        cpu.iterate();
        for (what, d) in &mut devs {
            d.try_iterate().unwrap();
            d.sync().unwrap();
            let (r, rc) = ([d.residual_norm(), d.residue()], [cpu.residual_norm(), cpu.residue()]);
            assert!(same(&r, &rc, exact), "{what}: residual norm and residue at iteration {it}: {r:?} vs {rc:?}");
            assert!(same(&flat(&d.prim()), &flat(&cpu.prim()), exact), "{what}: the state differs at iteration {it}");
            let (k, kc) = (coefficients(d), coefficients(&cpu));
            assert!(same(&k, &kc, exact), "{what}: coefficients at iteration {it}: {k:?} vs {kc:?}");
            check(it, d);
        }
    }
    for (what, d) in &devs {
        assert!(d.backend().starts_with("cuda"), "{what}: {}", d.backend());
    }
}

#[test]
fn ssp43_one_iteration_matches_the_cpu_bitwise() {
    assert_parity(&fser(), 1, &variants(), &|_, _| {});
}

/// The SSP(4,3) regression (spec 11.2): 30 iterations bitwise equal to the CPU in every
/// variant, and against the reference run as tests/lskum_regression.rs checks the CPU.
#[test]
fn ssp43_30_iterations_match_the_cpu_bitwise_and_the_reference() {
    let rows = numbers(&format!("{DATA}/fser_ssprk43_9600_30it.txt"));
    assert_eq!(rows.len(), 150);
    assert_parity(&fser(), 30, &variants(), &|it, d| {
        let r = &rows[5 * (it as usize - 1)..5 * it as usize];
        assert!((d.residue() - r[1]).abs() <= 1e-12, "iteration {it}: residue {} vs reference {}", d.residue(), r[1]);
        let (cl, cd, cm) = d.coefficients_of(ForcePoints::Shape);
        for (v, rv) in [(cl, r[2]), (cd, r[3]), (cm, r[4])] {
            assert!((v - rv).abs() <= 1e-12, "iteration {it}: {v} vs reference {rv}");
        }
    });
}

/// The 2019 regression (spec 11.1, first-order q-derivatives, forward Euler): 100 iterations
/// bitwise equal to the CPU, and the residue history of the reference run.
#[test]
fn ref2019_forward_euler_matches_the_cpu_bitwise_and_the_reference() {
    let res = numbers(&format!("{DATA}/ref2019_residue.txt"));
    assert_eq!(res.len(), 200);
    let devices = [opts(Flux::Split, Variant::L2, 128), opts(Flux::Fused, Variant::Shared, 128)];
    assert_parity(&ref2019(), 100, &devices, &|it, d| {
        let r = res[2 * (it as usize - 1) + 1];
        assert!((d.residue() - r).abs() <= 1e-12, "iteration {it}: residue {} vs reference {r}", d.residue());
    });
}

/// The other branches of the kernels (min-max limiter, no reconstruction, distance weights,
/// no renumbering) in a few iterations.
#[test]
fn other_settings_match_the_cpu_bitwise() {
    let mut cases = vec![];
    let mut p = fser();
    p.limiter = Limiter::Minmax;
    p.power = -2.0;
    cases.push(p);
    let mut p = ref2019();
    p.accuracy = Accuracy::First;
    p.renumber = sim::solvers::lskum::Renumber::None;
    cases.push(p);
    for p in &cases {
        assert_parity(p, 3, &variants(), &|_, _| {});
    }
}

/// Through `sim run` with checkpoints: CUDA all the way equals CUDA restarted on CUDA bit for
/// bit (everywhere); under the emulation, CPU all the way, CPU then CUDA and CUDA then CPU
/// equal it too, in the last checkpoint, the history and the output written from the device.
#[test]
fn runs_and_checkpoints_move_between_back_ends() {
    let Some(c) = cuda() else { return };
    let dir = scratch("gpu_lskum_restart");
    let text = format!(
        "name: l\nsolver:\n  lskum: {{cloud: {MESHES}/naca0012_9600_legacy.txt, format: legacy, mach: 0.63, aoa: 2.0}}\n\
         time: {{end_step: 6}}\ncheckpoint: {{every_steps: 3, keep: 5}}\noutput: {{every_steps: 3}}\n\
         gpu: {{flux: split, block: [128, 1]}}\n"
    );
    write(&dir, "case.yaml", &text);
    let run = |args: &[&str]| ok(sim_cuda(&dir, args));
    let runs = [
        ("cpu", "cpu", None),
        ("gpu", "cuda", None),
        ("to_gpu", "cpu", Some("cuda")),
        ("to_cpu", "cuda", Some("cpu")),
        ("gpu_gpu", "cuda", Some("cuda")),
    ];
    for (out, first, then) in runs {
        match then {
            None => run(&["run", "case.yaml", "--quiet", "--overwrite", "--out", out, "--backend", first]),
            Some(then) => {
                run(&["run", "case.yaml", "--quiet", "--overwrite", "--out", out, "--steps", "3", "--backend", first]);
                run(&["run", "--restart", out, "--backend", then, "--quiet"])
            }
        };
    }
    let last = |d: &str| last_checkpoint(&dir, d);
    // The history rows without the wall-clock column.
    let rows = |d: &str| -> Vec<String> {
        let text = std::fs::read_to_string(dir.join(d).join("history.csv")).unwrap();
        text.lines().map(|l| l.split(',').enumerate().filter(|(k, _)| *k != 2).map(|(_, v)| v).collect()).collect()
    };
    let (m0, a0) = last("gpu");
    let (m1, a1) = last("gpu_gpu");
    assert_eq!((m0.step, m1.step), (6, 6));
    assert!(m0.backend.starts_with("cuda") && m1.backend.starts_with("cuda"), "{}", m1.backend);
    assert!(a0 == a1, "CUDA restarted on CUDA");
    assert_eq!(rows("gpu").last(), rows("gpu_gpu").last());
    if c.emulated() {
        for d in ["cpu", "to_gpu", "to_cpu"] {
            let (m, a) = last(d);
            assert_eq!(m.step, 6, "{d}");
            assert!(a == a0, "{d}: the last checkpoint differs from CUDA all the way");
            assert_eq!(rows(d).last(), rows("gpu").last(), "{d}");
        }
        assert_eq!(last("to_cpu").0.backend, "cpu");
        let vtu = |d: &str| std::fs::read(dir.join(d).join("l_00000003.vtu")).unwrap();
        assert!(vtu("cpu") == vtu("gpu"), "the output at iteration 3 (written from the device) differs");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bench_reports_rdp_for_both_flux_variants() {
    let Some(c) = cuda() else { return };
    let dir = scratch("gpu_lskum_bench");
    for flux in ["fused", "split"] {
        let args = [
            "bench", "lskum", "--backend", "cuda", "--flux", flux, "--block", "128,1", "--size", "2000", "--seconds", "0.01",
            "--json",
        ];
        let o = ok(sim_cuda(&dir, &args));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!((v["backend"].as_str(), v["device"].as_str()), (Some("cuda"), Some(c.gpu().name.as_str())), "{v}");
        assert_eq!(v["flux"].as_str(), Some(flux), "{v}");
        assert!(v["kernel"]["rdp_s"].as_f64().unwrap() > 0.0, "{v}");
        // Each phase's share of the device time, from CUDA events, in the order of an iteration.
        let shares = v["kernel"]["phase_shares"].as_array().unwrap();
        let names: Vec<&str> = shares.iter().map(|p| p[0].as_str().unwrap()).collect();
        assert_eq!(names, ["time_step", "q_variables", "q_derivatives", "flux_residual", "state_update"], "{v}");
        let total: f64 = shares.iter().map(|p| p[1].as_f64().unwrap()).sum();
        assert!((total - 1.0).abs() < 1e-12 && shares.iter().all(|p| p[1].as_f64().unwrap() > 0.0), "{v}");
    }
    // Without --block: the default 512 threads narrowed to what the flux kernels' registers
    // allow, whole warps, and reported.
    for flux in ["fused", "split"] {
        let args = ["bench", "lskum", "--backend", "cuda", "--flux", flux, "--size", "2000", "--seconds", "0.01", "--json"];
        let v: serde_json::Value = serde_json::from_slice(&ok(sim_cuda(&dir, &args)).stdout).unwrap();
        let threads = v["block"][0].as_u64().unwrap();
        assert!(threads < 512 && threads.is_multiple_of(32) && v["block"][1] == 1, "{flux}: {v}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_gpu_settings_are_refused_with_the_key() {
    let Some(_) = cuda() else { return };
    let dir = scratch("gpu_lskum_bad");
    let case = |gpu: &str| {
        format!(
            "name: l\nsolver:\n  lskum: {{cloud: {MESHES}/naca0012_9600_legacy.txt, format: legacy, mach: 0.63}}\n\
             time: {{end_step: 1}}\nbackend: cuda\ngpu: {gpu}\n"
        )
    };
    for (gpu, args, needle) in [
        ("{flux: bogus}", &[][..], "flux"),
        ("{block: [64, 2]}", &[][..], "gpu.block"),
        ("{block: [4096, 1]}", &[][..], "gpu.block"),
        // The fused flux kernel's registers (over 128 per thread) leave fewer than 512 threads.
        ("{block: [512, 1]}", &[][..], "registers per thread"),
        ("{flux: split}", &["--precision", "f32"][..], "f64 only"),
    ] {
        write(&dir, "b.yaml", &case(gpu));
        // `sim check` refuses what the run refuses.
        for command in ["run", "check"] {
            let mut a = vec![command, "b.yaml", "--overwrite"];
            a.truncate(if command == "check" { 2 } else { 3 });
            a.extend(args);
            let o = sim_cuda(&dir, &a);
            assert_eq!(o.status.code(), Some(2), "{command} {gpu} {args:?}: {}", stderr(&o));
            assert!(stderr(&o).contains(needle), "{command} {gpu} {args:?}: {}", stderr(&o));
            assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}
