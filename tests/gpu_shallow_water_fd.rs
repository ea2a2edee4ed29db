//! FBL and CTCS on the CUDA back end against the CPU back end, bitwise: on a real GPU where
//! one is usable, else on the emulated CUDA driver of `tests/cuda_on_cpu/` (see tests/gpu.rs).
//! The whole state is compared (every array with its ghosts, CTCS's older level included),
//! and the diagnostics to the bit.

mod common;
use common::emulation::{cuda, last_checkpoint, run_across_back_ends, sim_cuda};
use common::*;

use sim::case::Case;
use sim::cuda::{Gpu, GpuOptions, Variant};
use sim::real::Precision;
use sim::solver::Solver;
use sim::solvers::{Device, build, build_on};

fn case(body: &str) -> Case {
    Case::parse(&format!("name: p\nsolver:\n  shallow_water: {{{body}}}\ntime: {{end_step: 1}}\n"), "test").unwrap()
}

fn bits(s: &dyn Solver) -> Vec<(&'static str, Option<u64>)> {
    s.diagnostics().iter().map(|(n, x)| (*n, x.map(f64::to_bits))).collect()
}

/// Run `body` on the CPU and on the device with `opts` through the steps `dts`, and compare.
fn assert_same(gpu: &std::sync::Arc<Gpu>, body: &str, precision: Precision, opts: GpuOptions, dts: &[f64]) {
    let c = case(body);
    let what = format!("{body} {precision:?} {:?} {:?}", opts.variant, opts.block);
    let mut cpu = build(&c, precision).unwrap();
    let mut dev = build_on(&c, precision, &Device::Cuda(gpu.clone(), opts)).unwrap_or_else(|e| panic!("{what}: {e}"));
    for &dt in dts {
        cpu.advance(dt).unwrap();
        dev.advance(dt).unwrap();
    }
    dev.sync().unwrap();
    assert!(dev.backend().starts_with("cuda"), "{what}: {}", dev.backend());
    // Not assert_eq: the arrays would bury the message.
    assert!(cpu.state() == dev.state(), "{what}: the arrays differ");
    assert_eq!(bits(&*cpu), bits(&*dev), "{what}");
}

/// Every boundary type (walls; periodic along x, y, both; sponges on all sides; a mix), with
/// and without `gpu_ocean_compat`, both precisions and both variants, on a 37 x 29 grid that
/// 16 x 8 blocks do not divide, with Coriolis (beta plane), friction, wind, uneven depth and
/// (CTCS) eddy viscosity. `steps` includes the first (CTCS's start of the leapfrog).
fn boundaries_and_physics(scheme: &str, extra: &str, mixed: &str, steps: usize) {
    let Some(c) = cuda() else { return };
    let boundaries = [
        "{}",
        "{east: periodic, west: periodic}",
        "{north: periodic, south: periodic}",
        "{north: periodic, south: periodic, east: periodic, west: periodic}",
        "{north: {sponge: {cells: 4}}, east: {sponge: {cells: 3}}, south: {sponge: {cells: 5}}, west: {sponge: {cells: 2}}}",
        mixed,
    ];
    for boundary in boundaries {
        for compat in [true, false] {
            for (variant, block) in [(Variant::L2, [16, 8]), (Variant::Shared, [16, 8])] {
                for precision in [Precision::F32, Precision::F64] {
                    let body = format!(
                        "scheme: {scheme}, nx: 37, ny: 29, dx: 200, dy: 150, dt: 1.0, \
                         coriolis: {{f0: 0.01, beta: 2.0e-6}}, friction: 0.002, wind: [1.0e-4, -5.0e-5], {extra} \
                         gpu_ocean_compat: {compat}, boundary: {boundary}, \
                         bathymetry: {{waves: {{mean: 60, amplitude: 5, wavelength: 2500}}}}, \
                         initial: {{hump: {{shape: gaussian, amplitude: 1.0, radius: 1200, center: [3000, 2500]}}}}"
                    );
                    let opts = GpuOptions { variant, block: Some(block), ..Default::default() };
                    assert_same(c.gpu(), &body, precision, opts, &vec![1.0; steps]);
                }
            }
        }
    }
}

#[test]
fn fbl_matches_the_cpu_bitwise_on_every_boundary() {
    let mixed = "{north: {sponge: {cells: 4}}, south: wall, east: periodic, west: periodic}";
    boundaries_and_physics("fbl", "", mixed, 24);
}

#[test]
fn ctcs_matches_the_cpu_bitwise_on_every_boundary() {
    let mixed = "{north: {sponge: {cells: 4, kind: linear}}, south: wall, east: periodic, west: periodic}";
    boundaries_and_physics("ctcs", "viscosity: 5.0,", mixed, 23);
}

/// Blocks of other shapes: one row of 1024 (CTCS's f64 tiles pass the default 48 KiB of
/// shared memory and opt in), a single column, and a block larger than the grid.
#[test]
fn other_block_shapes_match_the_cpu_bitwise() {
    let Some(c) = cuda() else { return };
    for scheme in ["fbl", "ctcs"] {
        let body = format!(
            "scheme: {scheme}, nx: 23, ny: 17, dx: 200, dt: 1.0, coriolis: {{f0: 0.01}}, friction: 0.001, \
             viscosity: {}, boundary: {{east: periodic, west: periodic, north: {{sponge: {{cells: 3}}}}}}, \
             bathymetry: {{flat: 60}}, initial: {{bump: {{position: corner}}}}",
            if scheme == "ctcs" { 2.0 } else { 0.0 }
        );
        for (variant, block) in [(Variant::Shared, [1024, 1]), (Variant::L2, [1, 64]), (Variant::Shared, [1, 32]), (Variant::Shared, [32, 32])] {
            let opts = GpuOptions { variant, block: Some(block), ..Default::default() };
            assert_same(c.gpu(), &body, Precision::F64, opts, &[1.0; 21]);
        }
    }
}

/// A grid taller than CUDA's 65 535 blocks along y (FBL 65 536 and CTCS 65 537 rows of one-row
/// blocks): the launch folds the rows of blocks into z, and every row is still stepped once.
#[test]
fn a_grid_taller_than_cudas_block_rows_matches_the_cpu_bitwise() {
    let Some(c) = cuda() else { return };
    for (scheme, variant) in [("fbl", Variant::L2), ("ctcs", Variant::Shared)] {
        let body = format!(
            "scheme: {scheme}, nx: 3, ny: 65536, dx: 200, dt: 1.0, coriolis: {{f0: 0.01}}, \
             boundary: {{north: periodic, south: periodic}}, bathymetry: {{flat: 60}}, \
             initial: {{hump: {{shape: gaussian, amplitude: 1.0, radius: 20000, center: [300, 6553600]}}}}"
        );
        let opts = GpuOptions { variant, block: Some([32, 1]), ..Default::default() };
        assert_same(c.gpu(), &body, Precision::F32, opts, &[1.0; 3]);
    }
}

/// The GPU Ocean regression cases of spec §9.1 (the CPU unit tests in fbl.rs and ctcs.rs check
/// them against the published arrays): the same physics, initial states and step sequences,
/// bitwise equal on the device, so the device passes them too.
#[test]
fn regression_cases_match_the_cpu_bitwise() {
    let Some(c) = cuda() else { return };
    // CTCS: GPU Ocean's step(50) with dt 1: n = 51 steps of (50/51)(1 + 1/5100), the last shorter.
    let ctcs_steps: Vec<f64> = {
        let n = 51usize;
        let base = (50.0 / n as f64) * (1.0 + 1.0 / (100.0 * n as f64));
        (0..n).map(|i| base.min(50.0 - i as f64 * base)).take_while(|&d| d > 0.0).collect()
    };
    let sides = |n: &str, e: &str| format!("{{north: {n}, south: {n}, east: {e}, west: {e}}}");
    let mut cases = vec![];
    for (n, e) in [("wall", "wall"), ("periodic", "periodic"), ("periodic", "wall"), ("wall", "periodic")] {
        for position in ["central", "corner", "upper_corner"] {
            cases.push(format!("boundary: {}, initial: {{bump: {{position: {position}}}}}, bathymetry: {{flat: 60}}", sides(n, e)));
        }
    }
    let central = "initial: {bump: {position: central}}";
    cases.push(format!("coriolis: {{f0: 0.01}}, {central}, bathymetry: {{flat: 60}}"));
    cases.push(format!("coriolis: {{f0: 0.01, beta: 1.0e-6}}, {central}, bathymetry: {{flat: 60}}"));
    cases.push(format!("{central}, bathymetry: gpu_ocean_test"));
    for (scheme, dts, extra) in [("fbl", vec![1.0; 50], &cases[..]), ("ctcs", ctcs_steps, &cases[..])] {
        let mut all: Vec<String> = extra.to_vec();
        if scheme == "ctcs" {
            all.push(format!("coriolis: {{f0: 0.01}}, {central}, bathymetry: gpu_ocean_test"));
        }
        let viscosity = if scheme == "ctcs" { 1.0 } else { 0.0 };
        let mut runs: Vec<(f64, bool, &String)> = all.iter().map(|x| (viscosity, true, x)).collect();
        if scheme == "ctcs" {
            // Without viscosity, and without Coriolis (the first cases): the CPU leaves out
            // those zero terms, the device forms them (both variants of the scheme; zero signs,
            // which `==` does not see, are the CPU unit test `zero_terms_left_out_keep_the_bits`'s).
            runs.extend(cases[..6].iter().enumerate().map(|(i, x)| (0.0, i % 2 == 0, x)));
        }
        for (k, (viscosity, compat, x)) in runs.into_iter().enumerate() {
            let body = format!(
                "scheme: {scheme}, nx: 50, ny: 70, dx: 200, dt: 1.0, viscosity: {viscosity}, gpu_ocean_compat: {compat}, {x}"
            );
            // Alternate precision and variant over the cases.
            let precision = if k % 2 == 0 { Precision::F32 } else { Precision::F64 };
            let variant = if k % 4 < 2 { Variant::L2 } else { Variant::Shared };
            assert_same(c.gpu(), &body, precision, GpuOptions { variant, block: Some([32, 8]), ..Default::default() }, &dts);
        }
    }
}

/// CPU all the way; GPU all the way; CPU then GPU; GPU then CPU, through `sim run` with
/// checkpoints: the last checkpoints are bitwise equal.
#[test]
fn runs_and_checkpoints_move_between_back_ends() {
    let Some(_) = cuda() else { return };
    let dir = scratch("gpu_sw_fd_restart");
    for (scheme, variant) in [("fbl", "shared"), ("ctcs", "l2"), ("ctcs", "shared")] {
        let viscosity = if scheme == "ctcs" { 1.0 } else { 0.0 };
        let text = format!(
            "name: h\nsolver:\n  shallow_water: {{scheme: {scheme}, nx: 37, ny: 29, dx: 200, dt: 1.0, coriolis: {{f0: 0.01}}, \
             friction: 0.001, viscosity: {viscosity}, boundary: {{north: {{sponge: {{cells: 3}}}}, east: periodic, west: periodic}}, \
             bathymetry: {{flat: 60}}, initial: {{bump: {{position: corner}}}}}}\n\
             time: {{end_step: 40}}\noutput: {{every_steps: 10}}\ngpu: {{variant: {variant}, block: [16, 8]}}\n"
        );
        write(&dir, "case.yaml", &text);
        run_across_back_ends(&dir, "15");
        let last = |d: &str| last_checkpoint(&dir, d);
        let ((m1, a1), (m0, a0), (m2, a2), (m3, a3)) = (last("cpu"), last("gpu"), last("to_gpu"), last("to_cpu"));
        assert_eq!(m1.step, 40);
        assert!(a1 == a0, "{scheme}: GPU all the way");
        assert!(a1 == a2, "{scheme}: CPU then GPU");
        assert!(a1 == a3, "{scheme}: GPU then CPU");
        assert_eq!((m0.step, m2.step, m3.step), (40, 40, 40));
        assert!(m0.backend.starts_with("cuda") && m2.backend.starts_with("cuda"), "{}", m2.backend);
        assert_eq!(m3.backend, "cpu");
        let vti = |d: &str| std::fs::read(dir.join(d).join("h_00000010.vti")).unwrap();
        assert!(vti("cpu") == vti("gpu"), "{scheme}: output at step 10 differs");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bench_runs_both_schemes_and_variants() {
    let Some(c) = cuda() else { return };
    let dir = scratch("gpu_sw_fd_bench");
    for scheme in ["fbl", "ctcs"] {
        for variant in ["l2", "shared"] {
            let args = [
                "bench", "shallow_water", "--backend", "cuda", "--scheme", scheme, "--variant", variant, "--block", "32,4",
                "--size", "40", "--seconds", "0.01", "--json",
            ];
            let o = ok(sim_cuda(&dir, &args));
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!((v["backend"].as_str(), v["device"].as_str()), (Some("cuda"), Some(c.gpu().name.as_str())), "{v}");
            assert_eq!((v["scheme"].as_str(), v["variant"].as_str()), (Some(scheme), Some(variant)), "{v}");
            assert!(v["kernel"]["mcells_per_s"].as_f64().unwrap() > 0.0, "{v}");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_block_shapes_are_refused_with_the_key() {
    let Some(_) = cuda() else { return };
    let dir = scratch("gpu_sw_fd_block");
    for scheme in ["fbl", "ctcs"] {
        for block in ["[64, 32]", "[0, 4]", "[4096, 1]"] {
            let text = format!(
                "name: h\nsolver:\n  shallow_water: {{scheme: {scheme}, nx: 20, ny: 20, dx: 200, dt: 1.0, \
                 bathymetry: {{flat: 60}}, initial: {{bump: {{position: central}}}}}}\n\
                 time: {{end_step: 2}}\nbackend: cuda\ngpu: {{block: {block}}}\n"
            );
            write(&dir, "b.yaml", &text);
            let o = sim_cuda(&dir, &["run", "b.yaml"]);
            assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
            assert!(stderr(&o).contains("gpu.block"), "{}", stderr(&o));
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// `sim tune` times the listed block shapes in both variants (a shape the device refuses is a
/// row, not a failure), keeps the fastest per variant, and a later run or bench that sets no
/// `gpu.block` uses it and says so; a case's own block wins.
#[test]
fn tune_keeps_the_fastest_block_for_runs_that_set_none() {
    let Some(_) = cuda() else { return };
    let dir = scratch("gpu_sw_tune");
    let cache = dir.join("cache");
    let case = |gpu: &str| {
        format!(
            "name: t\nsolver:\n  shallow_water: {{scheme: ctcs, nx: 37, ny: 29, dx: 200, dt: 1.0, viscosity: 1.0, \
             bathymetry: {{flat: 60}}, initial: {{bump: {{position: corner}}}}}}\ntime: {{end_step: 3}}\n{gpu}"
        )
    };
    write(&dir, "case.yaml", &case("gpu: {variant: shared}\n"));
    let sim = |args: &[&str]| ok(common::emulation::sim_cuda_command(&dir, args).env("SIM_CACHE_DIR", &cache).output().unwrap());
    let o = sim(&["tune", "case.yaml", "--blocks", "16x8,32x4,2048x1", "--seconds", "0.01"]);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    for row in ["l2       16 x 8", "l2       32 x 4", "shared   16 x 8", "shared   32 x 4"] {
        assert!(text.contains(row), "{row}:\n{text}");
    }
    assert_eq!(text.matches("2048 x 1    not launchable: gpu.block").count(), 2, "{text}");
    let tuned: std::collections::BTreeMap<String, [u32; 2]> =
        serde_json::from_slice(&std::fs::read(cache.join("tuned_blocks.json")).unwrap()).unwrap();
    assert_eq!(tuned.len(), 2, "{tuned:?}");
    let shared = tuned.iter().find(|(k, _)| k.contains("| shallow_water ctcs |") && k.ends_with("| shared")).expect("shared").1;
    assert!(text.contains(&format!("fastest shared: {shared:?}")), "{text}");
    // A run without gpu.block takes the tuned shape; one with its own block keeps it.
    let summary = |out: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(dir.join(out).join("summary.json")).unwrap()).unwrap()
    };
    let o = sim(&["run", "case.yaml", "--backend", "cuda", "--overwrite", "--out", "tuned"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("the fastest `sim tune` found"), "{o:?}");
    let want = format!("shared {}x{}", shared[0], shared[1]);
    assert!(summary("tuned")["backend"].as_str().unwrap().contains(&want), "{}", summary("tuned"));
    write(&dir, "case.yaml", &case("gpu: {variant: shared, block: [8, 4]}\n"));
    sim(&["run", "case.yaml", "--backend", "cuda", "--quiet", "--overwrite", "--out", "own"]);
    assert!(summary("own")["backend"].as_str().unwrap().contains("shared 8x4"), "{}", summary("own"));
    // A stored shape no kernel takes (the file edited by hand) is refused, naming the file.
    let l2 = tuned.keys().find(|k| k.ends_with("| l2")).expect("l2").clone();
    std::fs::write(cache.join("tuned_blocks.json"), format!("{{{l2:?}: [0, 5]}}")).unwrap();
    write(&dir, "case.yaml", &case(""));
    let o = common::emulation::sim_cuda_command(&dir, &["run", "case.yaml", "--backend", "cuda", "--overwrite", "--out", "bad"])
        .env("SIM_CACHE_DIR", &cache)
        .output()
        .unwrap();
    exit2(&o, &["tuned_blocks.json", "[0, 5]", "sim tune again"]);
    // A file that is not a map of shapes is refused too, by runs and by `sim tune`, which
    // leaves it as it is (rewriting it would drop its other entries).
    let cuda = |args: &[&str]| common::emulation::sim_cuda_command(&dir, args).env("SIM_CACHE_DIR", &cache).output().unwrap();
    for text in [format!("{{{l2:?}: [32, 4, 5], \"other | x | f64 | l2\": [32, 4]}}"), "garbage".to_string()] {
        std::fs::write(cache.join("tuned_blocks.json"), &text).unwrap();
        let o = cuda(&["run", "case.yaml", "--backend", "cuda", "--overwrite", "--out", "bad"]);
        exit2(&o, &["tuned_blocks.json", "not a map of tuned block shapes"]);
        let o = cuda(&["tune", "case.yaml", "--blocks", "16x8", "--seconds", "0.01", "--variant", "l2"]);
        exit2(&o, &["tuned_blocks.json", "the result is not kept", "16 x 8"]);
        assert_eq!(std::fs::read_to_string(cache.join("tuned_blocks.json")).unwrap(), text);
    }
    std::fs::remove_dir_all(dir).unwrap();
}
