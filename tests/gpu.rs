//! CUDA back end against the CPU back end. On a machine without a usable GPU these tests
//! print a note and return; the host-side checks at the end run everywhere.
//!
//! Parity bound: bitwise. Without fast math the kernels are compiled with --fmad=false and
//! evaluate the same expressions in the same order as the CPU kernels, so every IEEE
//! operation rounds identically (the cavity's reductions run on the host in both cases).

mod common;
use common::*;

use sim::case::Case;
use sim::cuda::{Gpu, GpuOptions, Variant};
use sim::real::Precision;
use sim::solvers::{Device, build, build_on};

fn gpu() -> Option<std::sync::Arc<Gpu>> {
    match Gpu::open() {
        Ok(g) => Some(g),
        Err(e) => {
            eprintln!("note: no usable GPU, CUDA parity test skipped ({e})");
            None
        }
    }
}

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
            let device = Device::Cuda(gpu.clone(), GpuOptions { variant, block, fast_math: false });
            let mut cpu = build(&c, precision).unwrap();
            let mut dev = build_on(&c, precision, &device).unwrap();
            for _ in 0..steps {
                cpu.advance(cpu.dt()).unwrap();
                dev.advance(dev.dt()).unwrap();
            }
            dev.sync().unwrap();
            assert_eq!(cpu.state(), dev.state(), "{solver} {variant:?} {precision:?} {block:?}");
            let bits = |s: &dyn sim::solver::Solver| s.diagnostics().iter().map(|(n, x)| (*n, x.to_bits())).collect::<Vec<_>>();
            assert_eq!(bits(&*cpu), bits(&*dev), "{solver} {variant:?} {precision:?} {block:?}");
        }
    }
}

#[test]
fn heat_fields_match_the_cpu_bitwise() {
    let Some(gpu) = gpu() else { return };
    assert_parity(&gpu, "heat1d: {n: 1001, r: 0.45}", 500);
    assert_parity(&gpu, "heat2d: {n: 301, r: 0.2}", 500);
}

#[test]
fn cavity_fields_match_the_cpu_bitwise() {
    let Some(gpu) = gpu() else { return };
    // Residual checks every 40 steps: the GPU path's host reductions are compared too. The
    // odd side leaves partial blocks at both edges.
    assert_parity(&gpu, "cavity: {n: 67, re: 100, residual: {every: 40}}", 300);
    assert_parity(&gpu, "cavity: {n: 130, re: 1000, residual: {every: 40}}", 130);
}

#[test]
fn checkpoints_move_between_back_ends() {
    let Some(_) = gpu() else { return };
    let dir = scratch("gpu_restart");
    for solver in ["heat2d: {n: 129, r: 0.2}", "cavity: {n: 65, re: 100, residual: {every: 50}}"] {
        let text = format!("name: h\nsolver:\n  {solver}\ntime: {{end_step: 200}}\n");
        write(&dir, "case.yaml", &text);
        // CPU all the way; CPU then GPU; GPU then CPU.
        ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "cpu"]));
        ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "to_gpu", "--steps", "80"]));
        ok(sim(&dir, &["run", "--restart", "to_gpu", "--backend", "cuda", "--quiet"]));
        ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "to_cpu", "--steps", "80", "--backend", "cuda"]));
        ok(sim(&dir, &["run", "--restart", "to_cpu", "--backend", "cpu", "--quiet"]));
        let last = |d: &str| sim::io::checkpoint::read(&sim::io::checkpoint::list(&dir.join(d)).pop().unwrap().1).unwrap();
        let ((m1, a1), (m2, a2), (m3, a3)) = (last("cpu"), last("to_gpu"), last("to_cpu"));
        assert_eq!((m1.step, &a1), (m2.step, &a2), "{solver}: CPU then GPU");
        assert_eq!((m1.step, &a1), (m3.step, &a3), "{solver}: GPU then CPU");
        assert!(m2.backend.starts_with("cuda"), "{}", m2.backend);
        assert_eq!(m3.backend, "cpu");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn block_shapes_are_validated() {
    let dir = scratch("gpu_block");
    for (block, needle) in [("[0, 1]", "gpu.block"), ("[2048, 1]", "gpu.block"), ("[64, 32]", "gpu.block")] {
        let text = format!("name: h\nsolver:\n  heat2d: {{n: 17, r: 0.2}}\ntime: {{end_step: 2}}\nbackend: cuda\ngpu: {{block: {block}}}\n");
        write(&dir, "b.yaml", &text);
        let o = sim(&dir, &["run", "b.yaml"]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{}", stderr(&o));
    }
    let text = "name: h\nsolver:\n  heat2d: {n: 17, r: 0.2}\ntime: {end_step: 2}\ngpu: {variant: texture}\n";
    write(&dir, "v.yaml", text);
    let o = sim(&dir, &["check", "v.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("gpu.variant"), "{}", stderr(&o));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn auto_falls_back_to_the_cpu_and_says_so() {
    if Gpu::open().is_ok() {
        eprintln!("note: a GPU is present; the fallback path is not exercised here");
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
