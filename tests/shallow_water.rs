//! The shallow-water solver through the program: bad inputs, the shipped cases, GPU Ocean's
//! regression arrays reached by `sim run`, inputs from files, wave speed, stability limits and
//! the observed order of convergence. (Scheme-level regression and property tests live next
//! to the schemes in `src/solvers/shallow_water/`.)

mod common;
use common::*;

use std::io::Read;
use std::path::Path;

use sim::real::Precision;
use sim::solver::Solver;
use sim::solvers::SolverSpec;
use sim::solvers::shallow_water::ShallowWaterParams;

/// A shallow-water case whose solver section is `fields` (YAML flow-map entries).
fn case(name: &str, fields: &str, precision: &str, time: &str) -> String {
    format!("name: {name}\nsolver:\n  shallow_water: {{{fields}}}\nprecision: {precision}\ntime: {time}\n")
}

const SMALL: &str = "scheme: fbl, nx: 20, ny: 16, dx: 200.0, dt: 1.0, bathymetry: {flat: 60.0}, initial: {bump: {position: corner}}";

/// Write an HDF5 file with 2-D datasets `(name, rows, cols, values)`.
fn h5(path: &Path, datasets: &[(&str, usize, usize, Vec<f64>)]) {
    let f = hdf5::File::create(path).unwrap();
    for (name, rows, cols, v) in datasets {
        f.new_dataset::<f64>().shape([*rows, *cols]).create(*name).unwrap().write_raw(v).unwrap();
    }
}

#[test]
fn bad_inputs_exit_2_naming_the_key_and_leave_files_alone() {
    let dir = scratch("swe_bad");
    // A good run first: its directory must come out of every refused run unchanged.
    write(&dir, "c.yaml", &case("s", SMALL, "f32", "{end_step: 4}"));
    ok(sim(&dir, &["run", "c.yaml", "--quiet"]));
    let before = snapshot(&dir.join("out/s"));
    std::fs::write(dir.join("text.h5"), "not hdf5").unwrap();
    let (nx, ny) = (20usize, 16usize);
    h5(
        &dir.join("in.h5"),
        &[
            ("H", ny, nx, vec![50.0; nx * ny]),
            ("wrong", ny + 3, nx, vec![50.0; (ny + 3) * nx]),
            ("nan", ny, nx, (0..nx * ny).map(|k| if k == 45 { f64::NAN } else { 50.0 }).collect()),
            ("dry", ny, nx, (0..nx * ny).map(|k| if k == 7 { -1.0 } else { 50.0 }).collect()),
        ],
    );
    // NetCDF's default fill value for floats in one cell (row 1, column 10), marked as such.
    let fill = 9.969209968386869e36;
    let filled: Vec<f64> = (0..nx * ny).map(|k| if k == 30 { fill } else { 50.0 }).collect();
    // In a block of its own, so that every handle, and so the file, is closed after it.
    {
        let f = hdf5::File::create(dir.join("filled.h5")).unwrap();
        let ds = f.new_dataset::<f64>().shape([ny, nx]).create("H").unwrap();
        ds.write_raw(&filled).unwrap();
        ds.new_attr::<f64>().create("_FillValue").unwrap().write_scalar(&fill).unwrap();
        // As NetCDF-4 stores them: a one-element array, and `missing_value` listing two marks.
        let ds = f.new_dataset::<f64>().shape([ny, nx]).create("array").unwrap();
        ds.write_raw(&filled).unwrap();
        ds.new_attr::<f64>().shape([1]).create("missing_value").unwrap().write_raw(&[fill]).unwrap();
        let ds = f.new_dataset::<f64>().shape([ny, nx]).create("two").unwrap();
        ds.write_raw(&(0..nx * ny).map(|k| if k == 45 { 7777.0 } else { 50.0 }).collect::<Vec<_>>()).unwrap();
        ds.new_attr::<f64>().shape([2]).create("missing_value").unwrap().write_raw(&[-32767.0, 7777.0]).unwrap();
        let ds = f.new_dataset::<f64>().shape([ny, nx]).create("text").unwrap();
        ds.write_raw(&vec![50.0; nx * ny]).unwrap();
        let text: hdf5::types::VarLenUnicode = "none".parse().unwrap();
        ds.new_attr::<hdf5::types::VarLenUnicode>().create("_FillValue").unwrap().write_scalar(&text).unwrap();
        // As NetCDF-4 writes a masked cell without a _FillValue attribute: the default fill in
        // the cell and as the dataset's HDF5 fill value.
        let ds = f.new_dataset::<f64>().fill_value(fill).shape([ny, nx]).create("masked").unwrap();
        ds.write_raw(&filled).unwrap();
        // A packed variable whose scale_factor is not one number.
        let ds = f.new_dataset::<i16>().shape([ny, nx]).create("packed").unwrap();
        ds.write_raw(&vec![4500i16; nx * ny]).unwrap();
        ds.new_attr::<f64>().shape([2]).create("scale_factor").unwrap().write_raw(&[0.01, 0.02]).unwrap();
        // A land mask where the depths should be (HDF5 would read it as 1 m).
        let ds = f.new_dataset::<bool>().shape([ny, nx]).create("mask").unwrap();
        ds.write_raw(&vec![true; nx * ny]).unwrap();
        // A virtual dataset whose source file is gone: HDF5 reads it as zeros, without an error.
        let b = f.new_dataset::<f64>().shape([ny, nx]);
        b.virtual_map("gone.h5", "H", [ny, nx], .., [ny, nx], ..).create("virtual").unwrap();
        // Or whose source file lacks the dataset (in.h5 has no "none").
        let b = f.new_dataset::<f64>().shape([ny, nx]);
        b.virtual_map("in.h5", "none", [ny, nx], .., [ny, nx], ..).create("lacking").unwrap();
        // A source found where HDF5 finds it (beside this file) is read.
        let b = f.new_dataset::<f64>().shape([ny, nx]);
        b.virtual_map("in.h5", "H", [ny, nx], .., [ny, nx], ..).create("found").unwrap();
    }
    std::fs::create_dir_all(dir.join("adir.h5")).unwrap();
    let base = "nx: 20, ny: 16, dx: 200.0, bathymetry: {flat: 60.0}, initial: {bump: {position: corner}}";
    let bad: &[(&str, &[&str])] = &[
        (&format!("scheme: leapfrog, dt: 1.0, {base}"), &["leapfrog", "fbl"]),
        (&format!("scheme: fbl, dt: 100.0, {base}"), &["solver.shallow_water.dt", "stable time step"]),
        (&format!("scheme: cdklm16, dt: 50.0, {base}"), &["solver.shallow_water.dt", "stable time step"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {flat: -5.0}, initial: rest", &["bathymetry.flat"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {flat: 1.0e39}, initial: rest", &["solver.shallow_water.bathymetry.flat", "f32"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {flat: 60.0}, initial: {bump: {amplitude: -100.0}}", &["total depth", "check bathymetry and initial"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {file: {path: nope.h5}}, initial: rest", &["nope.h5", "no such file"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {file: {path: text.h5}}, initial: rest", &["text.h5", "HDF5"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {file: {path: adir.h5}}, initial: rest", &["adir.h5", "not a regular file"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {file: {path: ''}}, initial: rest", &["bathymetry.file.path", "give"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {flat: 60.0}, initial: {file: {path: ''}}", &["initial.file.path", "give"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {file: {path: filled.h5}}, initial: rest", &["filled.h5", "_FillValue", "row 1, column 10"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {file: {path: filled.h5, dataset: array}}, initial: rest", &["\"array\"", "missing_value", "row 1, column 10"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {file: {path: filled.h5, dataset: two}}, initial: rest", &["\"two\"", "missing_value 7.777e3", "row 2, column 5"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {file: {path: filled.h5, dataset: text}}, initial: rest", &["\"text\"", "_FillValue", "not numeric"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {file: {path: filled.h5, dataset: masked}}, initial: rest", &["\"masked\"", "fill value 9.969209968386869e36", "row 1, column 10"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {file: {path: filled.h5, dataset: packed}}, initial: rest", &["\"packed\"", "scale_factor", "one finite number"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {file: {path: filled.h5, dataset: mask}}, initial: rest", &["\"mask\"", "bool values, not numbers"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {flat: 60.0}, initial: {file: {path: filled.h5, eta: virtual}}", &["initial.file", "\"virtual\"", "source file gone.h5 does not exist"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {flat: 60.0}, initial: {file: {path: filled.h5, eta: lacking}}", &["\"lacking\"", "source file in.h5 has no dataset \"none\""]),
        ("scheme: cdklm16, courant: 0.4, nx: 20, ny: 16, dx: 200.0, bathymetry: {flat: 1.0e38}, initial: rest", &["solver.shallow_water", "fluxes reach", "f32", "bathymetry"]),
        // g H fits f32 here, and the stable step is finite; ½ g H² times the wave speed is not.
        ("scheme: kp07, courant: 0.4, nx: 20, ny: 16, dx: 200.0, bathymetry: {flat: 1.0e14}, initial: rest", &["solver.shallow_water", "fluxes reach", "1.000e14 m", "precision: f64"]),
        ("scheme: fbl, dt: 1.0e-9, nx: 20, ny: 16, dx: 200.0, bathymetry: {flat: 60.0}, initial: {bump: {amplitude: 1.0e14}}", &["solver.shallow_water", "fluxes reach", "check bathymetry and initial"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {file: {path: in.h5, dataset: depth}}, initial: rest", &["in.h5", "\"depth\""]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {file: {path: in.h5, dataset: wrong}}, initial: rest", &["\"wrong\"", "19 x 20", "16 x 20"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {file: {path: in.h5, dataset: nan}}, initial: rest", &["\"nan\"", "NaN", "row 2, column 5"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {file: {path: in.h5, dataset: dry}}, initial: rest", &["\"dry\"", "<= 0"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {flat: 60.0}, initial: {file: {path: in.h5, eta: wrong}}", &["solver.shallow_water.initial.file", "\"wrong\""]),
        (&format!("scheme: cdklm16, dt: 1.0, boundary: {{north: {{sponge: {{cells: 8}}}}}}, {base}"), &["boundary.north.sponge.cells", "wider"]),
        (&format!("scheme: cdklm16, dt: 1.0, boundary: {{east: periodic}}, {base}"), &["periodic", "east and west"]),
        (&format!("scheme: fbl, courant: 0.4, {base}"), &["solver.shallow_water.courant", "fixed dt"]),
        (&format!("scheme: cdklm16, dt: 1.0, courant: 0.4, {base}"), &["either dt or courant"]),
        (&format!("scheme: kp07, courant: 0.4, coriolis: {{f0: 1.0e4}}, {base}"), &["solver.shallow_water.coriolis", "|f| dt"]),
        (&format!("scheme: ctcs, dt: 1.0, coriolis: {{f0: 1.0e-3, beta: 1.0}}, {base}"), &["solver.shallow_water.coriolis", "3.2"]),
        (&format!("scheme: cdklm16, {base}"), &["give a time step"]),
        (&format!("scheme: kp07, dt: 1.0, viscosity: 1.0, {base}"), &["solver.shallow_water.viscosity", "ctcs"]),
        (&format!("scheme: kp07, dt: 1.0, theta: 3.0, {base}"), &["solver.shallow_water.theta"]),
        (&format!("scheme: fbl, dt: 1.0, theta: 1.5, {base}"), &["solver.shallow_water.theta", "cdklm16 and kp07"]),
        (&format!("scheme: ctcs, dt: 1.0, time_integration: ssp_rk3, {base}"), &["time_integration"]),
        (&format!("scheme: fbl, dt: 1.0, nxx: 3, {base}"), &["nxx"]),
        ("scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {flat: 60.0}, initial: {kelvin_wave: {}}", &["kelvin_wave", "f0"]),
        (
            "scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, coriolis: {f0: 1.0e-4}, bathymetry: {flat: 60.0}, \
             boundary: {north: periodic, south: periodic}, initial: {kelvin_wave: {}}",
            &["kelvin_wave", "south coast", "solver.shallow_water.boundary.south: wall"],
        ),
        (
            "scheme: cdklm16, dt: 0.9, nx: 20, ny: 16, dx: 200.0, bathymetry: {flat: 60.0}, \
             initial: {geostrophic_jet: {speed: 0.5, width: 1000.0}}",
            &["geostrophic_jet", "solver.shallow_water.coriolis.f0"],
        ),
        ("scheme: fbl, dt: 1.0, nx: 1, ny: 16, dx: 200.0, bathymetry: {flat: 60.0}, initial: rest", &["solver.shallow_water.nx"]),
    ];
    for (fields, needles) in bad {
        write(&dir, "c.yaml", &case("s", fields, "f32", "{end_step: 4}"));
        exit2(&sim(&dir, &["run", "c.yaml", "--quiet", "--overwrite"]), needles);
        exit2(&sim(&dir, &["check", "c.yaml"]), needles);
        assert_eq!(snapshot(&dir.join("out/s")), before, "a refused run changed the run directory ({fields})");
    }
    // Cells so large that no wave crosses one in f64 (1/dx² underflows): dx is named.
    let huge = "scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 1.0e300, bathymetry: {flat: 60.0}, initial: rest";
    write(&dir, "huge.yaml", &case("s", huge, "f64", "{end_step: 4}"));
    for cmd in ["run", "check"] {
        exit2(&sim(&dir, &[cmd, "huge.yaml"]), &["cells are too large for f64", "dx and dy"]);
    }
    exit2(&sim(&dir, &["bench", "shallow_water", "--scheme", "maccormack", "--size", "8"]), &["maccormack", "cdklm16"]);
    exit2(&sim(&dir, &["bench", "heat2d", "--scheme", "fbl", "--size", "8"]), &["--scheme", "heat2d"]);
    exit2(&sim(&dir, &["run", "c.yaml", "--backend", "cuda"]), &["shallow_water"]);
    let found = "scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {file: {path: filled.h5, dataset: found}}, initial: rest";
    write(&dir, "found.yaml", &case("s", found, "f32", "{end_step: 4}"));
    ok(sim(&dir, &["check", "found.yaml"]));
    // A file another program has open for writing, which HDF5 locks (flock(1) takes the lock
    // and runs sim under it, with HDF5's locking, which .cargo/config.toml turns off for
    // tests): named as such.
    let lock = "scheme: fbl, dt: 1.0, nx: 20, ny: 16, dx: 200.0, bathymetry: {file: {path: in.h5}}, initial: rest";
    write(&dir, "lock.yaml", &case("s", lock, "f32", "{end_step: 4}"));
    let locked = std::process::Command::new("flock")
        .current_dir(&dir)
        .env_remove("HDF5_USE_FILE_LOCKING")
        .args(["--exclusive", "in.h5", env!("CARGO_BIN_EXE_sim"), "check", "lock.yaml"])
        .output()
        .unwrap();
    exit2(&locked, &["in.h5", "locked by a program"]);
    ok(sim(&dir, &["check", "lock.yaml"]));
    std::fs::remove_dir_all(dir).unwrap();
}

/// `sim check` builds the initial state in the run's precision, so it finds the stable step the
/// run finds: a `dt` between the f32 and the f64 limit of this state is refused by both in f32
/// and accepted by both in f64.
#[test]
fn check_and_run_agree_on_the_stable_step_in_each_precision() {
    let dir = scratch("swe_check_precision");
    let fields = "scheme: kp07, nx: 40, ny: 30, dx: 200.0, dt: 3.9601242, bathymetry: {flat: 60.0}, \
                  initial: {bump: {position: central, amplitude: 5.0}}";
    write(&dir, "c.yaml", &case("s", fields, "f32", "{end_step: 2}"));
    for args in [&["check", "c.yaml"][..], &["run", "c.yaml", "--quiet"]] {
        exit2(&sim(&dir, args), &["solver.shallow_water.dt", "exceeds the stable time step"]);
    }
    ok(sim(&dir, &["check", "c.yaml", "--precision", "f64"]));
    ok(sim(&dir, &["run", "c.yaml", "--precision", "f64", "--quiet"]));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn shipped_cases_pass_check() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    for e in std::fs::read_dir(root.join("cases")).unwrap().flatten() {
        let name = e.file_name().into_string().unwrap();
        if name.starts_with("swe_") {
            ok(sim(root, &["check", e.path().to_str().unwrap()]));
            n += 1;
        }
    }
    assert!(n >= 7, "{n} shallow-water cases");
}

/// GPU Ocean's reference array `name` (rows south first), from `tests/data/swe`.
fn reference(name: &str) -> Vec<Vec<f64>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/swe/timestep50/{name}.dat.gz"));
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_string(&mut text).unwrap();
    text.lines().map(|l| l.split_whitespace().map(|v| v.parse().unwrap()).collect()).collect()
}

/// `sim run` of the shipped regression case with `scheme` reaches GPU Ocean's arrays: the
/// whole program (case file, driver landing on end_time, checkpoint) reproduces them.
fn shipped_regression(scheme: &str, dt: &str, extra: &str, tolerance_relative: f64) {
    let dir = scratch(&format!("swe_reg_{scheme}"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("cases/swe_bump_fbl.yaml"))
        .unwrap()
        .replace("scheme: fbl", &format!("scheme: {scheme}{extra}"))
        .replace("dt: 1.0", &format!("dt: {dt}"))
        // GPU Ocean's steps do not land on output times: only the last one is shortened.
        .replace("every_time: 10.0", "every_steps: 10");
    write(&dir, "c.yaml", &text);
    ok(sim(&dir, &["run", "c.yaml", "--quiet", "--out", "o"]));
    let (_, path) = sim::io::checkpoint::list(&dir.join("o")).pop().unwrap();
    let (meta, arrays) = sim::io::checkpoint::read(&path).unwrap();
    assert_eq!(meta.time, 50.0);
    let up = scheme.to_uppercase();
    for (field, file) in [("eta", "eta"), ("hu", "u"), ("hv", "v")] {
        let ours = arrays.iter().find(|a| a.name == field).unwrap();
        let [rows, cols] = [ours.shape[0], ours.shape[1]];
        let v = ours.values.to_f64();
        let r = reference(&format!("{up}_wallBC_central_{file}"));
        // FBL files hold the interior (hu: all x-faces; hv: all y-faces); ours carry one
        // ghost layer (CDKLM16: two, like the files). Compare the interior.
        let (off, rr, rc, ro) = if scheme == "fbl" { (1, rows - 2, cols - 2, 0) } else { (2, rows - 4, cols - 4, 2) };
        let scale = if tolerance_relative > 0.0 { r.iter().flatten().fold(0.0f64, |a, x| a.max(x.abs())) } else { 1.0 };
        let mut worst = 0.0f64;
        for l in 0..rr {
            for k in 0..rc {
                worst = worst.max((v[(l + off) * cols + k + off] - r[l + ro][k + ro]).abs());
            }
        }
        let err = worst / scale;
        let tol = if tolerance_relative > 0.0 { tolerance_relative } else { 1e-5 };
        assert!(err <= tol, "{scheme} {field}: error {err:e} > {tol:e}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn sim_run_reproduces_gpu_ocean_fbl() {
    shipped_regression("fbl", "1.0", "", 0.0);
}

#[test]
fn sim_run_reproduces_gpu_ocean_cdklm16() {
    shipped_regression("cdklm16", "0.9", "", 5e-4);
}

/// Bathymetry and surface from an HDF5 file become the initial state: the file's cell centres
/// exactly, for the C-grid and the finite-volume layouts.
#[test]
fn arrays_from_a_file_become_the_initial_state() {
    let dir = scratch("swe_file");
    let (nx, ny) = (12usize, 8usize);
    let depth: Vec<f64> = (0..nx * ny).map(|k| 30.0 + (k % nx) as f64 + 0.5 * (k / nx) as f64).collect();
    let eta: Vec<f64> = (0..nx * ny).map(|k| 0.01 * ((k * 7) % 11) as f64).collect();
    let hu: Vec<f64> = (0..nx * ny).map(|k| 0.1 * ((k * 3) % 5) as f64).collect();
    let file = dir.join("b.h5");
    h5(&file, &[("H", ny, nx, depth.clone()), ("eta", ny, nx, eta.clone()), ("hu", ny, nx, hu.clone())]);
    let file = file.display();
    for scheme in ["fbl", "cdklm16"] {
        let s = params(&format!(
            "{{scheme: {scheme}, nx: {nx}, ny: {ny}, dx: 100.0, dt: 0.1, bathymetry: {{file: {{path: '{file}'}}}}, \
             initial: {{file: {{path: '{file}', hu: hu}}}}}}"
        ))
        .validated_build(Precision::F64, &sim::solvers::Device::Cpu(Default::default()))
        .unwrap();
        let f = s.output_fields();
        let get = |n: &str| f.iter().find(|f| f.name == n).unwrap().values.to_f64();
        assert_eq!(get("eta"), eta, "{scheme} eta");
        if scheme == "fbl" {
            assert_eq!(get("bathymetry"), depth, "{scheme} bathymetry");
        } else {
            // Depth lives on the cell corners there: interpolated, then averaged back.
            assert_eq!(get("hu"), hu, "{scheme} hu");
        }
    }
    // CF packing, as NetCDF stores compact bathymetry: integers, `stored * scale_factor + add_offset`.
    {
        let f = hdf5::File::create(dir.join("packed.h5")).unwrap();
        let ds = f.new_dataset::<i16>().shape([ny, nx]).create("H").unwrap();
        ds.write_raw(&depth.iter().map(|d| ((d - 10.0) / 0.5) as i16).collect::<Vec<_>>()).unwrap();
        ds.new_attr::<f64>().create("scale_factor").unwrap().write_scalar(&0.5).unwrap();
        ds.new_attr::<f64>().create("add_offset").unwrap().write_scalar(&10.0).unwrap();
    }
    let packed = dir.join("packed.h5");
    let s = params(&format!(
        "{{scheme: fbl, nx: {nx}, ny: {ny}, dx: 100.0, dt: 0.1, bathymetry: {{file: {{path: '{}'}}}}, initial: rest}}",
        packed.display()
    ))
    .validated_build(Precision::F64, &sim::solvers::Device::Cpu(Default::default()))
    .unwrap();
    let f = s.output_fields();
    assert_eq!(f.iter().find(|f| f.name == "bathymetry").unwrap().values.to_f64(), depth, "packed bathymetry");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Across the seam of a periodic axis, file values at the cell centres are interpolated between
/// the last and the first column (they are neighbours there), not held at the edge: KP07's
/// corner depths and FBL's face transports. Corner depths of a periodic axis must repeat at its
/// ends.
#[test]
fn file_arrays_wrap_across_a_periodic_seam() {
    let dir = scratch("swe_seam");
    let (nx, ny) = (6usize, 4usize);
    let ramp: Vec<f64> = (0..nx * ny).map(|k| (k % nx) as f64).collect();
    let file = dir.join("p.h5");
    let depth: Vec<f64> = ramp.iter().map(|i| 100.0 + 10.0 * i).collect();
    let hu: Vec<f64> = ramp.iter().map(|i| 1.0 + i).collect();
    h5(&file, &[("H", ny, nx, depth), ("eta", ny, nx, vec![0.0; nx * ny]), ("hu", ny, nx, hu)]);
    let build = |scheme: &str, bathymetry: &str, initial: &str| {
        params(&format!(
            "{{scheme: {scheme}, nx: {nx}, ny: {ny}, dx: 1000.0, dt: 0.001, boundary: {{east: periodic, west: periodic}}, \
             bathymetry: {bathymetry}, initial: {initial}}}"
        ))
        .validated_build(Precision::F64, &sim::solvers::Device::Cpu(Default::default()))
    };
    let row = |s: &dyn Solver, name: &str| s.output_fields().iter().find(|f| f.name == name).unwrap().values.to_f64()[..nx].to_vec();
    let from_file = format!("{{file: {{path: '{}'}}}}", file.display());
    // Corners: 125 on the seam (150 and 100 around it), 105, ..., 145 inside; cells average them.
    let s = build("kp07", &from_file, "rest").unwrap();
    assert_eq!(row(&*s, "bathymetry"), [115.0, 110.0, 120.0, 130.0, 140.0, 135.0]);
    // Faces: 3.5 on the seam (6 and 1 around it), 1.5, ..., 5.5 inside; cells average them.
    let initial = format!("{{file: {{path: '{}', hu: hu}}}}", file.display());
    let s = build("fbl", "{flat: 100.0}", &initial).unwrap();
    assert_eq!(row(&*s, "hu"), [2.5, 2.0, 3.0, 4.0, 5.0, 4.5]);
    // Corner depths whose ends differ across the seam are refused, naming the file.
    let corners = dir.join("c.h5");
    let h: Vec<f64> = (0..(nx + 1) * (ny + 1)).map(|k| 100.0 + 10.0 * (k % (nx + 1)) as f64).collect();
    h5(&corners, &[("H", ny + 1, nx + 1, h)]);
    let e = build("kp07", &format!("{{file: {{path: '{}'}}}}", corners.display()), "rest").err().unwrap().to_string();
    assert!(e.contains("c.h5") && e.contains("across the periodic seam has 100"), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// A run whose bathymetry and initial state come from a file restarts from the copies its
/// checkpoint holds: without the case file, with the file replaced by another (same shapes, other
/// depths) and then removed, it ends bitwise equal to the run straight through; a damaged copy
/// is refused, naming the checkpoint and the dataset.
#[test]
fn restart_takes_the_file_arrays_from_the_checkpoint() {
    use sim::io::checkpoint;
    let dir = scratch("swe_file_restart");
    let (nx, ny) = (16usize, 12usize);
    let corners = (nx + 1) * (ny + 1);
    let depth = |shift: f64| (0..corners).map(|k| shift + 30.0 + (k % (nx + 1)) as f64).collect::<Vec<f64>>();
    let eta: Vec<f64> = (0..nx * ny).map(|k| 0.01 * ((k * 7) % 11) as f64).collect();
    h5(&dir.join("b.h5"), &[("H", ny + 1, nx + 1, depth(0.0)), ("eta", ny, nx, eta.clone())]);
    let solver = format!(
        "scheme: kp07, nx: {nx}, ny: {ny}, dx: 100.0, courant: 0.4, coriolis: {{f0: 0.001}}, \
         boundary: {{north: {{sponge: {{cells: 3}}}}}}, bathymetry: {{file: {{path: b.h5}}}}, \
         initial: {{file: {{path: b.h5, eta: eta}}}}"
    );
    let text = format!("{}checkpoint: {{every_steps: 10}}\n", case("s", &solver, "f64", "{end_time: 60.0}"));
    write(&dir, "c.yaml", &text);
    ok(sim(&dir, &["run", "c.yaml", "--quiet", "--out", "full"]));
    ok(sim(&dir, &["run", "c.yaml", "--quiet", "--out", "legs", "--steps", "20"]));
    h5(&dir.join("b.h5"), &[("H", ny + 1, nx + 1, depth(7.0)), ("eta", ny, nx, vec![0.0; nx * ny])]);
    std::fs::copy(dir.join("legs/checkpoint_00000020.h5"), dir.join("copy.h5")).unwrap();
    ok(sim(&dir, &["run", "--restart", "legs", "--quiet"]));
    let last = |d: &str| checkpoint::read(&checkpoint::list(&dir.join(d)).pop().unwrap().1).unwrap();
    let ((meta_full, full), (meta_legs, legs)) = (last("full"), last("legs"));
    assert_eq!((meta_full.step, meta_full.time.to_bits()), (meta_legs.step, meta_legs.time.to_bits()));
    assert_eq!(full, legs, "fields and stored inputs bitwise equal after the restart");
    let stored = full.iter().find(|a| a.name == "input_bathymetry").expect("the bathymetry is stored");
    assert_eq!((stored.shape.clone(), stored.values.to_f64()), (vec![ny + 1, nx + 1], depth(0.0)));

    // With the file gone, the copy of the checkpoint is checked and continues alone; a damaged
    // copy of the bathymetry in it (rewritten with a matching checksum) is refused.
    std::fs::remove_file(dir.join("b.h5")).unwrap();
    ok(sim(&dir, &["check", "--restart", "copy.h5", "--out", "alone"]));
    ok(sim(&dir, &["run", "--restart", "copy.h5", "--out", "alone", "--quiet"]));
    assert_eq!(last("alone").1, full, "restarted without the file");
    let (meta, mut arrays) = checkpoint::read(&dir.join("copy.h5")).unwrap();
    let bathymetry = arrays.iter_mut().find(|a| a.name == "input_bathymetry").unwrap();
    bathymetry.values = sim::real::Values::F64((0..corners).map(|k| if k == 20 { f64::NAN } else { 40.0 }).collect());
    let grid = sim::solver::Grid { n: [nx, ny], origin: [0.0, 0.0], spacing: [100.0, 100.0] };
    checkpoint::write(&dir.join("bad.h5"), &meta, &arrays, &sim::solver::Mesh::Cells(grid)).unwrap();
    exit2(&sim(&dir, &["run", "--restart", "bad.h5", "--out", "bad", "--quiet"]), &["bad.h5", "/fields/input_bathymetry", "NaN", "row 1, column 3"]);
    let bathymetry = arrays.iter_mut().find(|a| a.name == "input_bathymetry").unwrap();
    bathymetry.values = sim::real::Values::F64((0..corners).map(|k| if k == 20 { 0.0 } else { 40.0 }).collect());
    checkpoint::write(&dir.join("dry.h5"), &meta, &arrays, &sim::solver::Mesh::Cells(grid)).unwrap();
    exit2(&sim(&dir, &["run", "--restart", "dry.h5", "--out", "dry", "--quiet"]), &["checkpoint", "dry.h5", "/fields/input_bathymetry", "<= 0", "row 1, column 3"]);
    std::fs::remove_dir_all(dir).unwrap();
}

fn params(yaml: &str) -> ShallowWaterParams {
    serde_saphyr::from_str(yaml).unwrap()
}

/// The η row through the middle of the domain.
fn eta_of(s: &dyn Solver) -> Vec<f64> {
    let f = s.output_fields();
    f.iter().find(|f| f.name == "eta").unwrap().values.to_f64()
}

/// Mass through a periodic seam over a bottom that is not periodic (spec §10.2): FBL
/// computes the seam's face twice in a step, once for each side, and both copies must see the
/// same depths (the ghosts' depth is the interior cell's they copy).
#[test]
fn mass_is_conserved_across_a_periodic_seam_over_an_uneven_bottom() {
    for scheme in ["fbl", "ctcs", "cdklm16", "kp07"] {
        for boundary in ["{east: periodic, west: periodic}", "{north: periodic, south: periodic}"] {
            let fields = format!(
                "scheme: {scheme}, nx: 24, ny: 20, dx: 100.0, dt: 0.5, boundary: {boundary}, \
                 bathymetry: {{waves: {{mean: 20.0, amplitude: 5.0, wavelength: 700.0}}}}, \
                 initial: {{hump: {{amplitude: 0.5, radius: 300.0, shape: cosine, center: [2300.0, 1900.0]}}}}"
            );
            let c = sim::case::Case::parse(&case("m", &fields, "f64", "{end_step: 1}"), "test").unwrap();
            let mut s = sim::solvers::build(&c, Precision::F64).unwrap();
            let mass = |s: &dyn Solver| s.diagnostics().iter().find(|(n, _)| *n == "mass").unwrap().1.unwrap();
            let m0 = mass(&*s);
            for _ in 0..200 {
                s.advance(0.5).unwrap();
            }
            let drift = (mass(&*s) - m0).abs() / m0.abs();
            assert!(drift < 1e-12, "{scheme} {boundary}: relative mass drift {drift:e}");
        }
    }
}

/// The traffic that BW_e is formed from (spec §11): per cell and step, FBL 7 and CTCS 10
/// floats, the finite-volume schemes 11 per Runge-Kutta stage.
#[test]
fn minimum_traffic_counts_the_stages() {
    for (scheme, integration, floats) in [
        ("fbl", "", 7.0),
        ("ctcs", "", 10.0),
        ("cdklm16", ", time_integration: forward_euler", 11.0),
        ("cdklm16", "", 22.0),
        ("kp07", ", time_integration: ssp_rk3", 33.0),
        ("kp07", ", time_integration: ssp43", 44.0),
    ] {
        let fields = format!(
            "scheme: {scheme}, nx: 12, ny: 10, dx: 100.0, dt: 0.5, bathymetry: {{flat: 20.0}}, \
             initial: {{bump: {{position: central}}}}{integration}"
        );
        let c = sim::case::Case::parse(&case("m", &fields, "f32", "{end_step: 1}"), "test").unwrap();
        let s = sim::solvers::build(&c, Precision::F32).unwrap();
        assert_eq!(s.bytes_per_step(), floats * 120.0 * 4.0, "{scheme}{integration}");
    }
}

/// A small bump's front travels at sqrt(g H) (spec §10.7): the furthest cell east of the
/// centre where η exceeds 1% of its peak, after 60 s, against the distance c t.
#[test]
fn a_bump_front_travels_at_the_shallow_water_wave_speed() {
    let (nx, dx, h, t_end) = (400usize, 50.0, 60.0f64, 120.0);
    let c = (9.81 * h).sqrt();
    for scheme in ["fbl", "ctcs", "cdklm16", "kp07"] {
        let dt = if scheme == "ctcs" { 0.5 } else { 0.8 };
        let p = params(&format!(
            "{{scheme: {scheme}, nx: {nx}, ny: 9, dx: {dx}, dt: {dt}, bathymetry: {{flat: {h}}}, \
             boundary: {{north: periodic, south: periodic}}, \
             initial: {{hump: {{shape: gaussian, amplitude: 0.001, radius: 150.0}}}}}}"
        ));
        let mut s = p.validated_build(Precision::F64, &sim::solvers::Device::Cpu(Default::default())).unwrap();
        let steps = (t_end / dt) as usize;
        for _ in 0..steps {
            s.advance(dt).unwrap();
        }
        let eta = eta_of(s.as_ref());
        let row = &eta[4 * nx..5 * nx];
        let peak = row.iter().cloned().fold(0.0f64, f64::max);
        // The front: the outermost crest east of the centre.
        let centre = nx / 2;
        let crest = (centre..nx).rev().find(|&i| row[i] > 0.5 * peak && row[i] >= row[i - 1] && row[i] >= row[i + 1]).unwrap();
        let travelled = (crest - centre) as f64 * dx;
        let expected = c * t_end;
        let err = (travelled - expected).abs() / expected;
        eprintln!("{scheme}: crest at {travelled} m, c t = {expected:.1} m ({:.2}%)", 100.0 * err);
        assert!(err < 0.03, "{scheme}: crest travelled {travelled} m in {t_end} s, sqrt(gH) t = {expected} m");
    }
}

/// The adaptive step is `courant` times the scheme's stable step of the current state
/// (spec §9): recomputed every step, and exactly the host formula.
#[test]
fn adaptive_time_step_follows_the_state() {
    let p = params(
        "{scheme: cdklm16, nx: 30, ny: 20, dx: 100.0, courant: 0.4, bathymetry: {flat: 10.0}, \
         initial: {bump: {position: central, amplitude: 2.0}}}",
    );
    let mut s = p.validated_build(Precision::F64, &sim::solvers::Device::Cpu(Default::default())).unwrap();
    let formula = |s: &dyn Solver| {
        let f = s.output_fields();
        let get = |n: &str| f.iter().find(|f| f.name == n).unwrap().values.to_f64();
        let (eta, hu, hv, depth) = (get("eta"), get("hu"), get("hv"), get("bathymetry"));
        let mut m = f64::INFINITY;
        for k in 0..eta.len() {
            let h = eta[k] + depth[k];
            let c = (9.81 * h).sqrt();
            m = m.min(100.0 / ((hu[k] / h).abs() + c)).min(100.0 / ((hv[k] / h).abs() + c));
        }
        0.4 * 0.5 * m
    };
    let mut dts = Vec::new();
    for _ in 0..20 {
        let dt = s.propose_dt().unwrap();
        let want = formula(s.as_ref());
        assert!((dt - want).abs() <= 1e-12 * want, "dt {dt} vs formula {want}");
        dts.push(dt);
        s.advance(dt).unwrap();
    }
    assert!(dts.windows(2).any(|w| w[0] != w[1]), "the step follows the state: {dts:?}");
}

/// Observed order of convergence (spec §9.2 "numerical order", §10.8): η after 5 s of a
/// cosine bell on grids n and 2n, each against the finest grid averaged onto it. The
/// physically clean variants (GPU Ocean's CTCS, with its doubled first step and advection
/// sign, is first order).
fn observed_order(scheme: &str, grids: &[usize], finest: usize) -> Vec<f64> {
    let run = |n: usize| -> Vec<f64> {
        let dx = 100.0 / n as f64;
        let c = match scheme {
            "fbl" => 0.45,
            "ctcs" => 0.3,
            _ => 0.1,
        };
        // Equal steps that end exactly at 5 s: a shorter last step would cost the leapfrog
        // (CTCS) its second order.
        let steps = (5.0 / (c * dx / (0.25 + (9.81f64 * 0.5).sqrt()))).ceil();
        let dt = 5.0 / steps;
        let p = params(&format!(
            "{{scheme: {scheme}, nx: {n}, ny: {n}, dx: {dx}, dt: {dt}, coriolis: {{f0: 0.01}}, \
             gpu_ocean_compat: false, bathymetry: {{flat: 0.5}}, \
             initial: {{hump: {{shape: cosine, amplitude: 0.005, radius: 30.0}}}}}}"
        ));
        let mut s = p.validated_build(Precision::F64, &sim::solvers::Device::Cpu(Default::default())).unwrap();
        for _ in 0..steps as usize {
            s.advance(dt).unwrap();
        }
        eta_of(s.as_ref())
    };
    let fine = run(finest);
    let errors: Vec<f64> = grids
        .iter()
        .map(|&n| {
            let coarse = run(n);
            let r = finest / n;
            let mut sum = 0.0;
            for j in 0..n {
                for i in 0..n {
                    let mut avg = 0.0;
                    for b in 0..r {
                        for a in 0..r {
                            avg += fine[(j * r + b) * finest + i * r + a];
                        }
                    }
                    sum += (coarse[j * n + i] - avg / (r * r) as f64).abs();
                }
            }
            sum / (n * n) as f64
        })
        .collect();
    let orders: Vec<f64> = errors.windows(2).map(|e| (e[0] / e[1]).log2()).collect();
    let show = |v: &[f64], f: fn(&f64) -> String| v.iter().map(f).collect::<Vec<_>>().join(", ");
    eprintln!("{scheme}: L1 errors [{}], observed orders [{}]", show(&errors, |e| format!("{e:.3e}")), show(&orders, |o| format!("{o:.2}")));
    orders
}

/// A run whose water runs dry (here CTCS with GPU Ocean's advection sign on a hump as high as
/// the water is deep) stops at the guard check that sees it, exit 1, naming the depth and the
/// likely cause, and keeps no checkpoint of the broken state; with the clean sign it runs.
#[test]
fn a_run_whose_water_runs_dry_stops() {
    let dir = scratch("sw_dry");
    let case = |compat: bool| {
        format!(
            "name: d\nsolver:\n  shallow_water: {{scheme: ctcs, nx: 60, ny: 60, dx: 10.0, dt: 0.3, \
             bathymetry: {{flat: 0.05}}, gpu_ocean_compat: {compat}, \
             initial: {{hump: {{amplitude: 0.4, radius: 100.0, shape: cosine}}}}}}\n\
             precision: f64\ntime: {{end_time: 60.0}}\ncheckpoint: {{every_steps: 5, keep: 1000}}\nguard: {{check_every: 5}}\n"
        )
    };
    write(&dir, "dry.yaml", &case(true));
    let o = sim(&dir, &["run", "dry.yaml", "--quiet"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    for needle in ["the water depth H + eta fell to -", "the last good checkpoint is", "gpu_ocean_compat: false"] {
        assert!(stderr(&o).contains(needle), "{needle}: {}", stderr(&o));
    }
    let kept = sim::io::checkpoint::list(&dir.join("out/d"));
    assert!(!kept.is_empty());
    for (step, path) in kept {
        let (_, arrays) = sim::io::checkpoint::read(&path).unwrap();
        let eta = arrays.iter().find(|a| a.name == "eta").unwrap().values.to_f64();
        let lowest = eta.iter().fold(f64::INFINITY, |m, &v| m.min(v));
        assert!(0.05 + lowest > 0.0, "checkpoint of step {step}: depth {}", 0.05 + lowest);
    }
    write(&dir, "dry.yaml", &case(false));
    ok(sim(&dir, &["run", "dry.yaml", "--quiet", "--overwrite"]));
    std::fs::remove_dir_all(dir).unwrap();
}

/// Each scheme's last observed order (the finest pair) is at least the figure given.
fn assert_orders(grids: &[usize], finest: usize, at_least: [(&str, f64); 4]) {
    for (scheme, bound) in at_least {
        let last = *observed_order(scheme, grids, finest).last().unwrap();
        assert!(last >= bound, "{scheme}: observed order {last:.2} < {bound}");
    }
}

#[test]
fn observed_order_of_convergence_short() {
    assert_orders(&[32, 64, 128], 512, [("fbl", 0.8), ("ctcs", 1.8), ("cdklm16", 1.8), ("kp07", 1.8)]);
}

/// The full sweep (16 .. 256 against 1024), about a minute and a half; figures in the
/// README. `cargo test --release --test shallow_water -- --ignored --nocapture`.
#[test]
#[ignore]
fn observed_order_of_convergence_full() {
    assert_orders(&[16, 32, 64, 128, 256], 1024, [("fbl", 1.0), ("ctcs", 1.9), ("cdklm16", 1.9), ("kp07", 1.9)]);
}

/// With an adaptive step (`courant`) `sim check` foresees the run from the first step, as the
/// run does for its limits: an estimated step count (the run's within a tenth), and the
/// refusals of too many steps or frames.
#[test]
fn check_foresees_an_adaptive_run() {
    let dir = scratch("swe_check_adaptive");
    let solver = "scheme: cdklm16, nx: 40, ny: 30, dx: 200.0, courant: 0.4, bathymetry: {flat: 60.0}, initial: {bump: {position: central}}";
    write(&dir, "c.yaml", &case("s", solver, "f32", "{end_time: 50.0, end_step: 40}"));
    let out = String::from_utf8_lossy(&ok(sim(&dir, &["check", "c.yaml"])).stdout).to_string();
    let foreseen: f64 = out.split("steps: about ").nth(1).and_then(|r| r.split(' ').next()).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{out}"));
    ok(sim(&dir, &["run", "c.yaml", "--quiet"]));
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("out/s/summary.json")).unwrap()).unwrap();
    let step = summary["step"].as_f64().unwrap();
    assert!(step < 40.0 && (foreseen - step).abs() <= 0.1 * step, "foreseen {foreseen}, ran {step}");
    let rest = "scheme: cdklm16, nx: 20, ny: 20, dx: 200.0, courant: 0.4, bathymetry: {flat: 60.0}, initial: rest";
    write(&dir, "long.yaml", &case("l", rest, "f32", "{end_time: 1.0e14}"));
    exit2(&sim(&dir, &["check", "long.yaml"]), &["steps, more than the limit"]);
    write(&dir, "frames.yaml", &format!("{}output: {{every_time: 0.001}}\n", case("f", rest, "f32", "{end_step: 2000000}")));
    exit2(&sim(&dir, &["check", "frames.yaml"]), &["output frames", "more than the limit"]);
    std::fs::remove_dir_all(dir).unwrap();
}
