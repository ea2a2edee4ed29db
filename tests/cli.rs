//! Command-line behaviour: bad case files and broken checkpoints give exit code 2 with a
//! message naming the problem, and never change an existing run directory.

mod common;
use common::*;

use std::path::Path;

use sim::io::checkpoint;

const GOOD: &str = "name: h\nsolver:\n  heat2d: {n: 17, r: 0.2}\ntime: {end_step: 20}\ncheckpoint: {every_steps: 10}\n";

/// A scratch dir holding a finished run of GOOD in out/h.
fn with_run(test: &str) -> std::path::PathBuf {
    let dir = scratch(test);
    write(&dir, "good.yaml", GOOD);
    ok(sim(&dir, &["run", "good.yaml", "--quiet"]));
    dir
}

fn expect_input_error(dir: &Path, args: &[&str], needles: &[&str]) -> String {
    let before = snapshot(&dir.join("out/h"));
    let o = sim(dir, args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "args {args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "args {args:?}: message lacks {n:?}:\n{err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    // Case-file snippets are headed by the file's name, and no message suggests parser options.
    assert!(!err.contains("<input>") && !err.contains("Policy"), "{err}");
    assert_eq!(before, snapshot(&dir.join("out/h")), "args {args:?} changed the run directory");
    err
}

#[test]
fn bad_case_files_are_rejected_with_the_key_named() {
    let dir = with_run("badcases");
    let g = "solver:\n  heat2d: {n: 17, r: 0.2}\n";
    let t = "time: {end_step: 20}\n";
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        ("unknown_top", format!("name: h\n{g}{t}tim: 3\n"), vec!["unknown field `tim`"]),
        ("typo_nested", format!("name: h\n{g}time: {{end_tme: 1}}\n"), vec!["time.end_tme", "line 4"]),
        ("wrong_type", "name: h\nsolver:\n  heat2d: {n: many, r: 0.2}\ntime: {end_step: 2}\n".into(), vec!["solver.heat2d.n", "line 3"]),
        ("unknown_solver", format!("name: h\nsolver:\n  heat3d: {{n: 17}}\n{t}"), vec!["unknown variant `heat3d`"]),
        ("unstable_2d", format!("name: h\nsolver:\n  heat2d: {{n: 17, r: 0.3}}\n{t}"), vec!["solver.heat2d.r", "stability"]),
        ("unstable_1d", format!("name: h\nsolver:\n  heat1d: {{n: 17, r: 0.51}}\n{t}"), vec!["solver.heat1d.r", "stability"]),
        ("negative_n", format!("name: h\nsolver:\n  heat2d: {{n: -5, r: 0.2}}\n{t}"), vec!["solver.heat2d.n"]),
        ("too_few_nodes", format!("name: h\nsolver:\n  heat2d: {{n: 2, r: 0.2}}\n{t}"), vec!["solver.heat2d.n", "too few"]),
        ("nan_r", format!("name: h\nsolver:\n  heat2d: {{n: 17, r: .nan}}\n{t}"), vec!["solver.heat2d.r"]),
        // Written short, not as f64's 301 digits.
        ("huge_r", format!("name: h\nsolver:\n  heat2d: {{n: 17, r: 1e300}}\n{t}"), vec!["solver.heat2d.r: 1e300 exceeds"]),
        ("negative_diffusivity", format!("name: h\nsolver:\n  heat2d: {{n: 17, r: 0.2, diffusivity: -1}}\n{t}"), vec!["solver.heat2d.diffusivity"]),
        ("inverted_domain", format!("name: h\nsolver:\n  heat2d: {{n: 17, r: 0.2, domain: [1, -1]}}\n{t}"), vec!["solver.heat2d.domain"]),
        // serde stops at the first value too many ("invalid length 3" for any longer list).
        ("long_domain", format!("name: h\nsolver:\n  heat2d: {{n: 17, r: 0.2, domain: [-1, 1, 2, 3, 4]}}\n{t}"), vec!["solver.heat2d.domain", "more than 2 values, expected 2"]),
        ("short_domain", format!("name: h\nsolver:\n  heat2d: {{n: 17, r: 0.2, domain: [1]}}\n{t}"), vec!["solver.heat2d.domain", "invalid length 1"]),
        ("zero_output_interval", format!("name: h\n{g}{t}output: {{every_steps: 0}}\n"), vec!["output.every_steps"]),
        ("negative_output_time", format!("name: h\n{g}{t}output: {{every_time: -0.1}}\n"), vec!["output.every_time"]),
        ("missing_time", format!("name: h\n{g}"), vec!["missing field `time`"]),
        ("no_end", format!("name: h\n{g}time: {{}}\n"), vec!["time:", "end_time"]),
        ("negative_end_time", format!("name: h\n{g}time: {{end_time: -1}}\n"), vec!["time.end_time"]),
        ("keep_zero", format!("name: h\n{g}{t}checkpoint: {{keep: 0}}\n"), vec!["checkpoint.keep"]),
        ("check_every_zero", format!("name: h\n{g}{t}guard: {{check_every: 0}}\n"), vec!["guard.check_every"]),
        ("bad_precision", format!("name: h\n{g}{t}precision: f16\n"), vec!["precision", "f16"]),
        ("bad_math", format!("name: h\n{g}{t}cpu: {{math: bogus}}\n"), vec!["cpu.math", "bogus"]),
        ("bad_subnormals", format!("name: h\n{g}{t}cpu: {{subnormals: zero}}\n"), vec!["cpu.subnormals", "zero"]),
        // The lskum kernels' settings on another solver: refused, not ignored.
        ("math_elsewhere", format!("name: h\n{g}{t}cpu: {{math: fast}}\n"), vec!["cpu.math: fast", "heat2d has none"]),
        ("flux_elsewhere", format!("name: h\n{g}{t}gpu: {{flux: split}}\n"), vec!["gpu.flux: split", "heat2d has none"]),
        ("bad_name", format!("name: ../h\n{g}{t}"), vec!["name:"]),
        ("syntax_error", format!("name: h\n{g}time: {{end_step: 2\n"), vec!["line"]),
        ("duplicate_key", format!("name: h\n{g}{t}name: k\n"), vec!["duplicate mapping key `name`", "line 5"]),
        ("duplicate_nested", format!("name: h\nsolver:\n  heat2d: {{n: 17, r: 0.2, n: 9}}\n{t}"), vec!["key solver.heat2d:", "duplicate mapping key `n`"]),
        ("empty_file", String::new(), vec!["case file"]),
    ];
    assert!(cases.len() >= 15);
    for (file, text, needles) in &cases {
        let path = write(&dir, &format!("{file}.yaml"), text);
        let p = path.to_str().unwrap();
        let mut n = needles.clone();
        n.push(file);
        // --overwrite must not delete anything when the case is bad.
        expect_input_error(&dir, &["run", p, "--out", "out/h", "--overwrite", "--quiet"], &n);
        expect_input_error(&dir, &["check", p], &n);
    }
    expect_input_error(&dir, &["run", "missing.yaml"], &["cannot read case file missing.yaml"]);
    // Every output instant lands a step and writes a frame: a tiny interval would never end.
    for (every, frames) in [("1e-300", "1.000e300"), ("1e-9", "1.000e9")] {
        let text = format!("name: h\n{g}time: {{end_time: 1}}\noutput: {{every_time: {every}}}\n");
        let p = write(&dir, "tiny_output_time.yaml", &text);
        let p = p.to_str().unwrap();
        let n = ["output.every_time", &format!("{frames} output frames"), "limit of 1000000"];
        expect_input_error(&dir, &["run", p, "--out", "out/h", "--overwrite", "--quiet"], &n);
        expect_input_error(&dir, &["check", p], &n);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn cuda_without_a_gpu_is_a_clear_error() {
    let dir = with_run("cuda");
    let probe = sim::info::probe_cuda();
    if probe.devices.as_ref().is_ok_and(|d| !d.is_empty()) {
        eprintln!("note: a CUDA device is present; the no-GPU error path is not exercised here");
        return;
    }
    expect_input_error(&dir, &["run", "good.yaml", "--backend", "cuda", "--out", "out/h", "--overwrite"], &["backend cuda"]);
    // `sim check` refuses it as the run does; `auto` says it takes the CPU.
    let cuda = write(&dir, "cuda.yaml", &format!("{GOOD}backend: cuda\n"));
    expect_input_error(&dir, &["check", cuda.to_str().unwrap()], &["backend cuda"]);
    let auto = write(&dir, "auto.yaml", &format!("{GOOD}backend: auto\n"));
    let o = ok(sim(&dir, &["check", auto.to_str().unwrap()]));
    assert!(String::from_utf8_lossy(&o.stdout).contains("backend auto: using the CPU"));
    // Commands other than a run suggest their own way out, not a case key.
    let tune = expect_input_error(&dir, &["tune", "good.yaml"], &["sim tune needs a CUDA device"]);
    for seconds in ["1e300", "inf", "0"] {
        expect_input_error(&dir, &["tune", "good.yaml", "--seconds", seconds], &["--seconds", "at most a day"]);
    }
    assert!(!tune.contains("backend:"), "{tune}");
    // A fault of the case itself comes first, whatever the device.
    let lskum = format!("name: l\nsolver:\n  lskum: {{cloud: {}/meshes/naca0012_9600_legacy.txt, mach: 0.63, aoa: 2.0}}\ntime: {{end_step: 5}}\n", env!("CARGO_MANIFEST_DIR"));
    write(&dir, "lskum.yaml", &lskum);
    expect_input_error(&dir, &["tune", "lskum.yaml", "--precision", "f32"], &["runs in f64 only"]);
    expect_input_error(&dir, &["bench", "heat2d", "--backend", "cuda"], &["--backend cuda", "use --backend cpu"]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn existing_run_directory_needs_overwrite() {
    let dir = with_run("overwrite");
    expect_input_error(&dir, &["run", "good.yaml"], &["out/h", "--overwrite", "--restart"]);
    expect_input_error(&dir, &["run", "good.yaml", "--out", "good.yaml", "--overwrite"], &["good.yaml", "is a file, not a directory"]);
    // `sim check` finds it too, also for a directory below a file.
    write(&dir, "under.yaml", &format!("{GOOD}output: {{dir: good.yaml/sub}}\n"));
    expect_input_error(&dir, &["check", "under.yaml"], &["good.yaml/sub: ", "good.yaml is a file", "output.dir"]);
    // A file that is not ours survives --overwrite; the old results are replaced.
    write(&dir.join("out/h"), "notes.txt", "keep me");
    ok(sim(&dir, &["run", "good.yaml", "--overwrite", "--quiet", "--steps", "5"]));
    assert_eq!(std::fs::read_to_string(dir.join("out/h/notes.txt")).unwrap(), "keep me");
    let steps: Vec<u64> = checkpoint::list(&dir.join("out/h")).iter().map(|c| c.0).collect();
    assert_eq!(steps, vec![5], "old checkpoints removed");
    // A file whose name is not UTF-8 is a file all the same.
    use std::os::unix::ffi::OsStrExt;
    let odd = dir.join("odd").join(std::ffi::OsStr::from_bytes(b"\xff\xfe"));
    std::fs::create_dir_all(odd.parent().unwrap()).unwrap();
    std::fs::write(&odd, "mine").unwrap();
    expect_input_error(&dir, &["run", "good.yaml", "--out", "odd"], &["odd", "already holds files", "--overwrite"]);
    ok(sim(&dir, &["run", "good.yaml", "--out", "odd", "--overwrite", "--quiet", "--steps", "5"]));
    assert_eq!(std::fs::read_to_string(&odd).unwrap(), "mine");
    // A file of the user's with a run file's name: --overwrite refuses it too, so the way out
    // offered is to move it.
    std::fs::create_dir_all(dir.join("own")).unwrap();
    std::fs::write(dir.join("own/history.csv"), "mine").unwrap();
    for args in [&["run", "good.yaml", "--out", "own"][..], &["run", "good.yaml", "--out", "own", "--overwrite"]] {
        expect_input_error(&dir, args, &["history.csv", "move it away"]);
    }
    assert_eq!(std::fs::read_to_string(dir.join("own/history.csv")).unwrap(), "mine");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Write a modified copy of the run's final checkpoint as out/h/checkpoint_00000099.h5.
fn broken_copy(dir: &Path, edit: impl FnOnce(&mut checkpoint::Meta, &mut Vec<sim::solver::StateArray>)) -> String {
    let (mut meta, mut arrays) = checkpoint::read(&checkpoint::path_for(&dir.join("out/h"), 20)).unwrap();
    edit(&mut meta, &mut arrays);
    let path = dir.join("broken/checkpoint_00000099.h5");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let grid = sim::solver::Grid { n: [17, 17], origin: [-1.0, -1.0], spacing: [0.125, 0.125] };
    checkpoint::write(&path, &meta, &arrays, &sim::solver::Mesh::Nodes(grid)).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn broken_checkpoints_are_rejected() {
    let dir = with_run("broken");
    let good = checkpoint::path_for(&dir.join("out/h"), 20);
    let restart = |ck: &str, needles: &[&str]| {
        let mut n = needles.to_vec();
        n.push(ck);
        // Restart into the good run directory: it must stay untouched.
        expect_input_error(&dir, &["run", "--restart", ck, "--out", "out/h", "--quiet"], &n);
    };

    std::fs::create_dir_all(dir.join("broken")).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    std::fs::write(dir.join("broken/truncated.h5"), &bytes[..bytes.len() / 2]).unwrap();
    restart("broken/truncated.h5", &["checkpoint"]);

    std::fs::write(dir.join("broken/text.h5"), "this is not HDF5\n").unwrap();
    restart("broken/text.h5", &["not a readable HDF5 file"]);

    restart("broken/none.h5", &["no such file"]);

    let p = broken_copy(&dir, |m, _| m.solver = "cavity".into());
    restart(&p, &["solver attribute 'cavity'"]);

    let p = broken_copy(&dir, |_, _| {});
    let f = hdf5::File::open_rw(&p).unwrap();
    f.attr("format_version").unwrap().write_scalar(&99u32).unwrap();
    drop(f);
    restart(&p, &["format_version 99"]);

    let p = broken_copy(&dir, |_, a| a[0].name = "U".into());
    restart(&p, &["missing dataset /fields/T"]);

    let p = broken_copy(&dir, |_, a| {
        a[0].shape = vec![17 * 17];
    });
    restart(&p, &["/fields/T", "shape"]);

    let p = broken_copy(&dir, |_, a| {
        a[0].values = sim::real::Values::F32(a[0].values.to_f64().iter().map(|&v| v as f32).collect());
    });
    restart(&p, &["/fields/T", "f32"]);

    let p = broken_copy(&dir, |m, _| m.case_yaml = "name: h\nsolver: {heat2d: {n: 17}}\n".into());
    restart(&p, &["stored case", "missing field"]);

    let p = broken_copy(&dir, |m, _| m.step = u64::MAX);
    restart(&p, &["attribute 'step'", "18446744073709551615"]);

    // A case given with --restart may not change the physics.
    let other = write(&dir, "other.yaml", &GOOD.replace("r: 0.2", "r: 0.1"));
    let g = good.to_str().unwrap();
    expect_input_error(&dir, &["run", "--restart", g, other.to_str().unwrap()], &["solver section differs"]);
    expect_input_error(&dir, &["run", "--restart", g, "--precision", "f32"], &["keeps the precision"]);
    let f32_case = write(&dir, "f32.yaml", &format!("{GOOD}precision: f32\n"));
    expect_input_error(&dir, &["run", "--restart", g, f32_case.to_str().unwrap()], &["f32.yaml", "precision: f32", "written in f64"]);
    // The name prefixes the output files and the .pvd series the restart continues.
    let renamed = write(&dir, "renamed.yaml", &GOOD.replace("name: h", "name: other"));
    expect_input_error(&dir, &["run", "--restart", g, renamed.to_str().unwrap()], &["renamed.yaml", "name: other", "named h"]);
    // Already at the end: nothing to do.
    expect_input_error(&dir, &["run", "--restart", g], &["already at or past the end"]);
    // A lowered end step, below the checkpoint's.
    let shorter = write(&dir, "shorter.yaml", &GOOD.replace("end_step: 20", "end_step: 5"));
    expect_input_error(&dir, &["run", "--restart", g, shorter.to_str().unwrap()], &["at step 20", "at or past the end", "step 5"]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn restart_into_another_directory_keeps_what_is_there() {
    let dir = with_run("restart_elsewhere");
    let ck = "out/h/checkpoint_00000010.h5";
    // Another finished run: a restart into its directory is refused as a fresh run would be.
    write(&dir, "b.yaml", &GOOD.replace("name: h", "name: b").replace("n: 17", "n: 9"));
    ok(sim(&dir, &["run", "b.yaml", "--quiet"]));
    let before = snapshot(&dir.join("out/b"));
    exit2(&sim(&dir, &["run", "--restart", ck, "--out", "out/b", "--quiet"]), &["out/b", "already holds files", "--overwrite"]);
    assert_eq!(before, snapshot(&dir.join("out/b")));
    // A directory of the user's files, one named as a run's: refused even with --overwrite.
    std::fs::create_dir_all(dir.join("mine")).unwrap();
    write(&dir, "mine/history.csv", "my notes\n");
    let before = snapshot(&dir.join("mine"));
    exit2(&sim(&dir, &["run", "--restart", ck, "--out", "mine", "--quiet", "--overwrite"]), &["history.csv"]);
    assert_eq!(before, snapshot(&dir.join("mine")));
    // With --overwrite the other run's files give way.
    ok(sim(&dir, &["run", "--restart", ck, "--out", "out/b", "--quiet", "--overwrite"]));
    assert!(dir.join("out/b/h.pvd").exists() && !dir.join("out/b/b.pvd").exists());
    // A checkpoint copied alone into a directory and continued there is not rotated away.
    std::fs::create_dir_all(dir.join("lone")).unwrap();
    std::fs::copy(dir.join(ck), dir.join("lone/checkpoint_00000010.h5")).unwrap();
    let keep_one = write(&dir, "keep_one.yaml", &GOOD.replace("every_steps: 10}", "every_steps: 5, keep: 1}"));
    ok(sim(&dir, &["run", "--restart", "lone/checkpoint_00000010.h5", keep_one.to_str().unwrap(), "--quiet"]));
    let left: Vec<_> = sim::io::checkpoint::list(&dir.join("lone")).into_iter().map(|(n, _)| n).collect();
    assert_eq!(left, [10, 20], "the copied checkpoint and the newest written one");
    std::fs::remove_dir_all(dir).unwrap();
}

/// `--overwrite` removes what the manifest lists, so a manifest that is not sim's (a path
/// reaching out of the directory, a listed name that is a directory, bytes that are not text)
/// is refused before anything is removed.
#[test]
fn overwrite_removes_only_plain_files_the_manifest_names() {
    let dir = with_run("manifest");
    let victim = write(&dir, "victim.txt", "mine\n");
    let manifest = dir.join("out/h/.sim-manifest");
    let listed = std::fs::read_to_string(&manifest).unwrap();
    let overwrite = ["run", "good.yaml", "--overwrite", "--quiet"];
    let more = write(&dir, "more.yaml", &GOOD.replace("end_step: 20", "end_step: 30"));
    for bad in ["../victim.txt", victim.to_str().unwrap(), "./history.csv"] {
        std::fs::write(&manifest, format!("{listed}{bad}\n")).unwrap();
        expect_input_error(&dir, &overwrite, &[".sim-manifest", bad, "not the name of a file"]);
        expect_input_error(&dir, &["run", "--restart", "out/h", more.to_str().unwrap()], &[".sim-manifest", bad]);
        assert!(victim.exists());
    }
    std::fs::write(&manifest, format!("{listed}a\0b\n")).unwrap();
    expect_input_error(&dir, &overwrite, &[".sim-manifest", "\"a\\0b\"", "not the name of a file"]);
    std::fs::create_dir(dir.join("out/h/sub")).unwrap();
    std::fs::write(&manifest, format!("{listed}sub\n")).unwrap();
    expect_input_error(&dir, &overwrite, &["sub", "not a file that sim wrote"]);
    std::fs::write(&manifest, b"history.csv\n\xff\xfe\n").unwrap();
    expect_input_error(&dir, &overwrite, &[".sim-manifest", "cannot be read"]);
    // Its own manifest back, the run gives way.
    std::fs::write(&manifest, &listed).unwrap();
    ok(sim(&dir, &overwrite));
    assert!(dir.join("out/h/sub").is_dir() && victim.exists());
    std::fs::remove_dir_all(dir).unwrap();
}

/// A run directory that takes no new files is refused before anything in it changes: a
/// restart and an `--overwrite` run exit 2 and leave its files as they were.
#[test]
fn read_only_run_directory_is_refused() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::os::unix::process::CommandExt;
    let dir = with_run("read_only_dir");
    let out = dir.join("out/h");
    // Permissions do not bind root: as root, the runs below are made as `nobody`, who then
    // owns the directory (and a copy of the binary it may execute).
    let nobody = (std::fs::metadata(&dir).unwrap().uid() == 0).then_some(65534);
    let program = dir.join("sim");
    std::fs::copy(env!("CARGO_BIN_EXE_sim"), &program).unwrap();
    if let Some(id) = nobody {
        chown_all(&dir, id);
    }
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o555)).unwrap();
    let before = snapshot(&out);
    // (--overwrite: the restart would replace the later checkpoint of step 20.)
    for args in [&["run", "--restart", "out/h/checkpoint_00000010.h5", "--overwrite"][..], &["run", "good.yaml", "--overwrite"]] {
        let mut c = std::process::Command::new(&program);
        c.current_dir(&dir).args(args);
        if let Some(id) = nobody {
            c.uid(id).gid(id);
        }
        let o = c.output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "args {args:?}: {err}");
        assert!(err.contains("takes no new files") && err.contains("out/h"), "args {args:?}: {err}");
        assert_eq!(before, snapshot(&out), "args {args:?} changed the run directory");
    }
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}

fn chown_all(path: &Path, id: u32) {
    std::os::unix::fs::chown(path, Some(id), Some(id)).unwrap();
    if path.is_dir() {
        for e in std::fs::read_dir(path).unwrap() {
            chown_all(&e.unwrap().path(), id);
        }
    }
}

#[test]
fn non_finite_values_stop_the_run_with_exit_code_1() {
    let dir = scratch("nan");
    // Neighbour sums of values near f64::MAX overflow to infinity in the first step.
    let case = "name: h\nsolver:\n  heat1d: {n: 33, r: 0.5, amplitude: 1.7e308}\ntime: {end_step: 50}\nguard: {check_every: 1}\n";
    write(&dir, "nan.yaml", case);
    let o = sim(&dir, &["run", "nan.yaml", "--quiet"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("non-finite value inf in field T at node (") && err.contains("at step 1"), "{err}");
    assert!(checkpoint::list(&dir.join("out/h")).is_empty(), "no checkpoint of a broken state");
    // Nor a frame, when one is due between two guard checks.
    let frames = case.replace("check_every: 1}", "check_every: 1000}\noutput: {every_steps: 1}");
    write(&dir, "nan.yaml", &frames);
    let o = sim(&dir, &["run", "nan.yaml", "--quiet", "--overwrite"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("non-finite value inf in field T at node (") && err.contains("at step 1"), "{err}");
    let pvd = std::fs::read_to_string(dir.join("out/h/h.pvd")).unwrap();
    assert_eq!(pvd.matches("<DataSet").count(), 1, "{pvd}");
    assert!(!dir.join("out/h/h_00000001.vti").exists());
    std::fs::remove_dir_all(dir).unwrap();
}

/// Finite fields can give a history value that is not: the run stops there as it would for
/// the fields, and an initial state that gives one is refused as input.
#[test]
fn a_history_value_that_is_not_finite_stops_the_run() {
    let dir = scratch("nan_diagnostic");
    // The wind's momentum, 1e300 per second, is finite; its energy is not.
    let windy = "name: w\nsolver:\n  shallow_water: {scheme: fbl, nx: 20, ny: 20, dx: 200.0, dt: 1.0, \
                 wind: [1.0e300, 0.0], bathymetry: {flat: 60.0}, initial: {bump: {position: central}}}\n\
                 precision: f64\ntime: {end_step: 20}\ncheckpoint: {every_steps: 10}\nguard: {check_every: 1}\n";
    write(&dir, "w.yaml", windy);
    let o = sim(&dir, &["run", "w.yaml", "--quiet"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("the diagnostic energy is NaN at step 1") && err.contains("fields are finite"), "{err}");
    assert!(checkpoint::list(&dir.join("out/w")).is_empty(), "no checkpoint of a broken state");
    // A heat content beyond f64 from values within it: refused before anything is written.
    let wide = "name: h\nsolver:\n  heat1d: {n: 33, r: 0.4, length: 1.0e10, amplitude: 1.0e300}\ntime: {end_step: 10}\n";
    write(&dir, "h.yaml", wide);
    // sim check builds the initial state and refuses it as the run does.
    let fast_lid = "name: c\nsolver:\n  cavity: {n: 17, re: 100, lid_velocity: 1.0e160}\ntime: {end_step: 3}\n";
    write(&dir, "c.yaml", fast_lid);
    for cmd in ["check", "run"] {
        exit2(&sim(&dir, &[cmd, "h.yaml"]), &["initial state gives inf for the diagnostic heat_content"]);
        exit2(&sim(&dir, &[cmd, "c.yaml"]), &["initial state gives inf for the diagnostic kinetic_energy"]);
    }
    assert!(!dir.join("out/h").exists() && !dir.join("out/c").exists());
    // Values whose heat content and errors f64 holds: no overflow on the way to them.
    let tall = "name: t\nsolver:\n  heat1d: {n: 33, r: 0.4, amplitude: 1.0e306}\ntime: {end_step: 10}\n\
                guard: {check_every: 1}\n";
    write(&dir, "t.yaml", tall);
    ok(sim(&dir, &["run", "t.yaml", "--quiet"]));
    let h = std::fs::read_to_string(dir.join("out/t/history.csv")).unwrap();
    assert_eq!(h.lines().count(), 12, "{h}");
    assert!(!h.contains("inf") && !h.contains("NaN"), "{h}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn ctrl_c_checkpoints_and_the_run_can_continue() {
    let dir = scratch("ctrlc");
    let case = "name: h\nsolver:\n  heat2d: {n: 257, r: 0.2}\ntime: {end_step: 100000000}\n";
    write(&dir, "long.yaml", case);
    // Once the run has started stepping (initial output written).
    let run = Background::start(&dir, &["long.yaml"], |d| d.join("out/h/history.csv").exists());
    let o = run.signal("-INT");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted by SIGINT (Ctrl-C) at step") && err.contains("out/h/checkpoint_"), "{err}");
    let (step, _) = checkpoint::list(&dir.join("out/h")).pop().expect("checkpoint written on Ctrl-C");
    assert!(step > 0);
    // The checkpoint first, then the frame of that step (mpirun allows its ranks little time).
    let written = |f: String| std::fs::metadata(dir.join("out/h").join(f)).unwrap().modified().unwrap();
    assert!(written(format!("checkpoint_{step:08}.h5")) <= written(format!("h_{step:08}.vti")));
    let more = write(&dir, "more.yaml", &case.replace("100000000", &(step + 10).to_string()));
    ok(sim(&dir, &["run", "--restart", "out/h", more.to_str().unwrap(), "--quiet"]));
    assert_eq!(checkpoint::list(&dir.join("out/h")).pop().unwrap().0, step + 10);
    // Under --steps, the command that continues the run keeps its stop.
    let run = Background::start(&dir, &["long.yaml", "--out", "steps", "--steps", "90000000"], |d| d.join("steps/history.csv").exists());
    let err = stderr(&run.signal("-TERM"));
    let (at, _) = checkpoint::list(&dir.join("steps")).pop().expect("checkpoint written on SIGTERM");
    assert!(err.contains(&format!("Continue with: sim run --restart {}", dir.join("steps").display())), "{err}");
    assert!(err.trim_end().ends_with(&format!("--steps {}", 90_000_000 - at)), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// `sim check` counts the steps that land on output instants, so it gives the step the run
/// ends at.
#[test]
fn check_counts_the_steps_the_run_takes() {
    let dir = scratch("check_steps");
    // dt = 3.125e-3 divides neither the output interval nor the end time.
    let case = "name: h\nsolver:\n  heat2d: {n: 17, r: 0.2}\ntime: {end_time: 0.1}\noutput: {every_time: 0.007}\n";
    write(&dir, "land.yaml", case);
    let o = ok(sim(&dir, &["check", "land.yaml"]));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let steps: u64 = out.split("steps: ").nth(1).and_then(|r| r.split(' ').next()).and_then(|n| n.parse().ok()).unwrap();
    assert!(!out.contains("note:"), "{out}");
    ok(sim(&dir, &["run", "land.yaml", "--quiet"]));
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("out/h/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["step"], steps, "{out}");
    assert!(steps > 32, "landing steps beyond the 32 full ones: {steps}");
    // The directory now holds that run: check says that run refuses it without --overwrite.
    let o = ok(sim(&dir, &["check", "land.yaml"]));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(out.contains("note: sim run refuses it as it is: output directory") && out.contains("--overwrite"), "{out}");
    assert_eq!(out.matches("note:").count(), 1, "said once: {out}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// `sim check --restart` checks the continuation as `sim run --restart` would start it: the
/// steps left, the checkpoints it would replace, a checkpoint at the end refused.
#[test]
fn check_of_a_restart_says_what_the_run_would_do() {
    let dir = scratch("check_restart");
    let case = "name: h\nsolver:\n  heat2d: {n: 17, r: 0.2}\ntime: {end_step: 40}\ncheckpoint: {every_steps: 10}\n\
                output: {every_steps: 7}\n";
    write(&dir, "case.yaml", case);
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--steps", "30"]));
    let o = ok(sim(&dir, &["check", "--restart", "out/h/checkpoint_00000030.h5"]));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(out.contains("steps: 10 from step 30 (stop at step 40)") && !out.contains("note:"), "{out}");
    // The frames of steps 35 and 40; the one of step 30 is there already.
    assert!(out.contains("every 7 steps (2 files)"), "{out}");
    let o = ok(sim(&dir, &["check", "--restart", "latest", "--out", "out/h"]));
    assert!(String::from_utf8_lossy(&o.stdout).contains("every 7 steps (2 files)"));
    // From step 20 with a schedule of which it is an instant the series lacks: 20, 30 and 40.
    write(&dir, "ten.yaml", &case.replace("every_steps: 7", "every_steps: 10"));
    let o = ok(sim(&dir, &["check", "--restart", "out/h/checkpoint_00000020.h5", "ten.yaml"]));
    assert!(String::from_utf8_lossy(&o.stdout).contains("every 10 steps (3 files)"));
    // With the series gone the run rebuilds it from the frames, and check counts as it does:
    // step 30's frame is there, so 2 again.
    let pvd = std::fs::read(dir.join("out/h/h.pvd")).unwrap();
    std::fs::remove_file(dir.join("out/h/h.pvd")).unwrap();
    let o = ok(sim(&dir, &["check", "--restart", "out/h/checkpoint_00000030.h5"]));
    assert!(String::from_utf8_lossy(&o.stdout).contains("every 7 steps (2 files)"));
    std::fs::write(dir.join("out/h/h.pvd"), pvd).unwrap();
    ok(sim(&dir, &["run", "--restart", "out/h/checkpoint_00000030.h5", "--quiet", "--steps", "5"]));
    // The run refuses to go back to step 30 past the checkpoint of step 35 without --overwrite.
    let o = ok(sim(&dir, &["check", "--restart", "out/h/checkpoint_00000030.h5"]));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(out.contains("note: sim run refuses it as it is") && out.contains("checkpoint_00000035.h5"), "{out}");
    let run = sim(&dir, &["run", "--restart", "out/h/checkpoint_00000030.h5", "--quiet"]);
    assert_eq!(run.status.code(), Some(2));
    ok(sim(&dir, &["run", "--restart", "latest", "case.yaml", "--quiet"]));
    let o = sim(&dir, &["check", "--restart", "out/h"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("already at or past the end of the run (step 40)"), "{}", stderr(&o));
    let o = sim(&dir, &["check"]);
    assert_eq!(o.status.code(), Some(2), "neither a case nor --restart");
    std::fs::remove_dir_all(dir).unwrap();
}

/// A case whose `parallel.ranks` asks for several ranks runs as one process where it is
/// started as one, and says so (check and run).
#[test]
fn ranks_asked_of_a_one_process_run_are_named() {
    let dir = scratch("one_process");
    write(&dir, "p.yaml", "name: h\nsolver:\n  heat2d: {n: 17, r: 0.2}\ntime: {end_step: 5}\nparallel: {ranks: [2, 2]}\n");
    let want = "parallel.ranks [2, 2] asks for 4 ranks; this run is one process (start it with mpirun -np 4)";
    let o = ok(sim(&dir, &["check", "p.yaml"]));
    assert!(String::from_utf8_lossy(&o.stdout).contains(want), "{}", String::from_utf8_lossy(&o.stdout));
    let o = ok(sim(&dir, &["run", "p.yaml"]));
    assert!(stderr(&o).contains(want), "{}", stderr(&o));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn check_info_and_bench_report() {
    let dir = scratch("check");
    write(&dir, "good.yaml", GOOD);
    let o = ok(sim(&dir, &["check", "good.yaml"]));
    let out = String::from_utf8_lossy(&o.stdout);
    for needle in ["dt = 3.125000e-3", "r = 0.2", "17 x 17 nodes", "steps: 20", "memory:", "checkpoints: every 10 steps"] {
        assert!(out.contains(needle), "check output lacks {needle:?}:\n{out}");
    }
    assert!(!dir.join("out").exists(), "check writes nothing");
    let o = ok(sim(&dir, &["info"]));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("hardware threads") && out.contains("CUDA driver"), "{out}");
    let o = ok(sim(&dir, &["bench", "heat2d", "--size", "64", "--seconds", "0.01", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["kernel"]["bw_eff_GBps"].as_f64().unwrap() > 0.0 && v["copy"]["bw_GBps"].as_f64().unwrap() > 0.0);
    // COPY runs before and after the solver; the ratio uses the mean of their times per step.
    let f = |x: &serde_json::Value| x.as_f64().unwrap_or_else(|| panic!("{v}"));
    let (c, k) = (&v["copy"], &v["kernel"]);
    let (before, after, copy) = (f(&c["bw_GBps_before"]), f(&c["bw_GBps_after"]), f(&c["bw_GBps"]));
    assert!(copy >= before.min(after) && copy <= before.max(after), "{v}");
    let mean_bw = 2.0 / (1.0 / before + 1.0 / after);
    assert!((copy - mean_bw).abs() <= 1e-9 * copy, "{v}");
    assert!((f(&k["fraction_of_copy"]) - f(&k["bw_eff_GBps"]) / copy).abs() <= 1e-12, "{v}");
    let o = sim(&dir, &["bench", "heat9d"]);
    assert_eq!(o.status.code(), Some(2));
    for bad in ["0", "nan", "1e300"] {
        exit2(&sim(&dir, &["bench", "heat2d", "--size", "32", "--seconds", bad]), &["--seconds"]);
    }
    // The CUDA kernels' options on the CPU are refused, not ignored; block shapes are BX,BY.
    for args in [&["--block", "64,8"][..], &["--variant", "shared"], &["--flux", "split"]] {
        let o = sim(&dir, &[&["bench", "cavity", "--size", "32", "--seconds", "0.01"][..], args].concat());
        exit2(&o, &[args[0], "CUDA", "runs on the CPU"]);
    }
    for bad in ["512", "1,2,3", "0,1"] {
        let o = sim(&dir, &["bench", "heat2d", "--size", "32", "--seconds", "0.01", "--block", bad]);
        assert_eq!(o.status.code(), Some(2), "--block {bad}: {}", stderr(&o));
        assert!(stderr(&o).contains("block"), "{}", stderr(&o));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// The finite-volume schemes count their flops: the bench measures PEAK beside COPY and
/// names the bound that applies; FBL does not count them and gets neither.
#[test]
fn bench_sets_counted_flops_against_peak() {
    let dir = scratch("bench_peak");
    let args = ["bench", "shallow_water", "--size", "64", "--seconds", "0.01", "--precision", "f32", "--json"];
    let o = ok(sim(&dir, &[&args[..], &["--scheme", "kp07"]].concat()));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let (k, f) = (&v["kernel"], |x: &serde_json::Value| x.as_f64().unwrap());
    let (peak, copy) = (f(&v["peak"]["gflops"]), f(&v["copy"]["bw_GBps"]));
    assert!(peak > 0.0, "{v}");
    // Two Heun stages of 274 flops per cell, over 22 floats of 4 bytes.
    assert_eq!(f(&k["flops_per_cell"]), 548.0, "{v}");
    assert!((f(&k["flop_per_byte"]) - 548.0 / 88.0).abs() < 1e-12, "{v}");
    assert!((f(&k["gflops"]) - 548.0 * f(&k["mcells_per_s"]) / 1e3).abs() <= 1e-9 * f(&k["gflops"]), "{v}");
    assert!((f(&k["fraction_of_peak"]) - f(&k["gflops"]) / peak).abs() < 1e-12, "{v}");
    let bound = if 548.0 / 88.0 > peak / copy { "compute" } else { "bandwidth" };
    assert_eq!(k["bound"], bound, "{v}");
    let share = if bound == "compute" { f(&k["gflops"]) / peak } else { f(&k["bw_eff_GBps"]) / copy };
    assert!((f(&k["fraction_of_bound"]) - share).abs() < 1e-12, "{v}");
    let text = String::from_utf8_lossy(&ok(sim(&dir, &[&args[..args.len() - 1], &["--scheme", "cdklm16"]].concat())).stdout).to_string();
    assert!(text.contains("PEAK:") && text.contains("546 flop per cell counted") && text.contains("-bound, ") && text.contains("% of that bound"), "{text}");
    let o = ok(sim(&dir, &[&args[..], &["--scheme", "fbl"]].concat()));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["peak"].is_null() && v["kernel"]["gflops"].is_null(), "{v}");
    assert_eq!(v["subnormals"], "keep", "{v}");
    let o = ok(sim(&dir, &[&args[..], &["--scheme", "fbl", "--subnormals", "flush"]].concat()));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["subnormals"], "flush", "{v}");
    let o = sim(&dir, &[&args[..], &["--subnormals", "flush", "--backend", "cuda"]].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--subnormals flush"));
    let o = sim(&dir, &[&args[..], &["--scheme", "fbl", "--fast-math"]].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--fast-math"));
    std::fs::remove_dir_all(dir).unwrap();
}

/// `--rounds N` repeats PEAK and the solver between COPY runs, each COPY run shared by the
/// rounds on either side; the figures are those of the median round by the ratio to COPY,
/// with each figure's smallest, median and largest value over the rounds.
#[test]
fn bench_rounds_give_the_median_round_and_the_spread() {
    let dir = scratch("bench_rounds");
    let args = ["bench", "shallow_water", "--scheme", "kp07", "--size", "64", "--seconds", "0.01", "--precision", "f32", "--rounds", "3"];
    let v: serde_json::Value = serde_json::from_slice(&ok(sim(&dir, &[&args[..], &["--json"]].concat())).stdout).unwrap();
    let f = |x: &serde_json::Value| x.as_f64().unwrap_or_else(|| panic!("{v}"));
    let rounds = v["rounds"].as_array().unwrap_or_else(|| panic!("{v}"));
    assert_eq!(rounds.len(), 3, "{v}");
    for pair in rounds.windows(2) {
        assert_eq!(pair[0]["copy"]["bw_GBps_after"], pair[1]["copy"]["bw_GBps_before"], "{v}");
    }
    // (PEAK's rate is `peak_gflops` there, apart from the solver's `gflops`.)
    for (part, key) in [("kernel", "mcells_per_s"), ("copy", "bw_GBps"), ("kernel", "fraction_of_copy"), ("peak", "gflops"), ("kernel", "fraction_of_peak"), ("kernel", "fraction_of_bound")] {
        let mut x: Vec<f64> = rounds.iter().map(|r| f(&r[part][key])).collect();
        x.sort_by(f64::total_cmp);
        let s = &v["spread"][if part == "peak" { "peak_gflops" } else { key }];
        assert_eq!([f(&s["min"]), f(&s["median"]), f(&s["max"])], [x[0], x[1], x[2]], "{key}: {v}");
    }
    let median = rounds.iter().find(|r| r["kernel"] == v["kernel"]).unwrap_or_else(|| panic!("{v}"));
    assert_eq!(f(&v["kernel"]["fraction_of_copy"]), f(&v["spread"]["fraction_of_copy"]["median"]), "{v}");
    assert!(median["copy"] == v["copy"] && median["peak"] == v["peak"], "{v}");
    let text = String::from_utf8_lossy(&ok(sim(&dir, &args)).stdout).to_string();
    assert!(text.contains("rounds:  3") && text.contains("of COPY") && text.contains("of PEAK") && text.contains("of the bound"), "{text}");
    exit2(&sim(&dir, &["bench", "copy", "--size", "64", "--rounds", "2"]), &["--rounds"]);
    exit2(&sim(&dir, &["bench", "heat2d", "--size", "64", "--rounds", "0"]), &["--rounds"]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bench_tridiag_reports_both_layouts_and_spike() {
    let dir = scratch("bench_tridiag");
    let o = ok(sim(&dir, &["bench", "tridiag", "--size", "300", "--batch", "70", "--seconds", "0.01", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // COPY in halves before and after the solves; each path's fraction from their mean.
    let copy = v["copy"]["bw_GBps"].as_f64().unwrap();
    assert!(v["copy"]["bw_GBps_before"].as_f64().is_some() && v["copy"]["bw_GBps_after"].as_f64().is_some(), "{v}");
    for key in ["interleaved", "contiguous"] {
        assert!(v[key]["bw_eff_GBps"].as_f64().unwrap() > 0.0 && v[key]["systems_per_s"].as_f64().unwrap() > 0.0, "{v}");
        assert!((v[key]["fraction_of_copy"].as_f64().unwrap() - v[key]["bw_eff_GBps"].as_f64().unwrap() / copy).abs() <= 1e-12, "{v}");
    }
    let o = ok(sim(&dir, &["bench", "tridiag", "--solver", "spike", "--size", "100000", "--seconds", "0.01", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["spike"]["unknowns_per_s"].as_f64().unwrap() > 0.0 && v["partitions"].as_u64() == Some(100_000u64.div_ceil(sim::bench_tridiag::SPIKE_ROWS as u64)), "{v}");
    let bad: &[(&[&str], &str)] = &[
        (&["--solver", "cyclic"], "--solver cyclic"),
        (&["--solver", "spike", "--batch", "4"], "--batch"),
        (&["--size", "2"], "--size"),
        (&["--batch", "0"], "--batch 0"),
        (&["--cpu-share", "0.5"], "--cpu-share"),
        (&["--cpu-share", "x"], "--cpu-share"),
        // The batch was not given: named as the default it took.
        (&["--size", "18446744073709551615"], "(and as many systems, the default --batch): 18446744073709551615 x"),
        (&["--size", "64", "--batch", "1000000000000"], "--size 64 --batch 1000000000000: the benchmark needs about"),
    ];
    for (args, needle) in bad {
        let o = sim(&dir, &[&["bench", "tridiag", "--seconds", "0.01"][..], args].concat());
        exit2(&o, &[needle]);
    }
    exit2(&sim(&dir, &["bench", "heat2d", "--solver", "spike"]), &["--solver"]);
    exit2(&sim(&dir, &["bench", "heat2d", "--size", "65536", "--seconds", "0.01"]), &["--size 65536: the run needs about"]);
    // lskum's cloud is sized before it is generated (50 million points: about 75 GiB).
    if sim::memory::available().is_some_and(|m| m < 70 << 30) {
        exit2(&sim(&dir, &["bench", "lskum", "--size", "50000000", "--seconds", "0.01"]), &["--size 50000000: the benchmark needs about"]);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A reader of the output that went away (`sim info | head -1`) ends nothing in a panic: the
/// command's own exit code stands.
#[test]
fn a_closed_output_pipe_is_no_panic() {
    let dir = with_run("pipe");
    let closed = || {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        writer
    };
    for (args, code) in [(&["check", "good.yaml"][..], 0), (&["info"][..], 0), (&["run", "missing.yaml"][..], 2)] {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_sim"));
        let status = c.current_dir(&dir).args(args).stdout(closed()).stderr(closed()).status().unwrap();
        assert_eq!(status.code(), Some(code), "{args:?}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A diagnostic that has no value before the first step or iteration is an empty cell in the
/// step-0 row of `history.csv`, never a placeholder 0, and has a value after it.
#[test]
fn history_values_that_do_not_exist_yet_are_empty_cells() {
    let dir = scratch("history_empty");
    let cloud = concat!(env!("CARGO_MANIFEST_DIR"), "/meshes/naca0012_9600_legacy.txt");
    let cases = [
        (
            "s",
            "shallow_water: {scheme: fbl, nx: 10, ny: 10, dx: 200.0, dt: 1.0, bathymetry: {flat: 60.0}, \
             initial: {bump: {position: central}}}"
                .to_string(),
            &["dt"][..],
        ),
        ("l", format!("lskum: {{cloud: {cloud}, mach: 0.63, aoa: 2.0}}"), &["residue", "residual"][..]),
    ];
    for (name, solver, empty) in cases {
        write(&dir, "c.yaml", &format!("name: {name}\nsolver:\n  {solver}\ntime: {{end_step: 3}}\nguard: {{check_every: 1}}\n"));
        ok(sim(&dir, &["run", "c.yaml", "--quiet"]));
        let h = std::fs::read_to_string(dir.join("out").join(name).join("history.csv")).unwrap();
        let rows: Vec<Vec<&str>> = h.lines().map(|l| l.split(',').collect()).collect();
        assert_eq!(rows.len(), 5, "{h}");
        for key in empty {
            let k = rows[0].iter().position(|c| c == key).unwrap_or_else(|| panic!("{key}: {h}"));
            assert_eq!(rows[1][k], "", "{name} {key} at step 0: {h}");
            assert!(rows[2..].iter().all(|r| r[k].parse::<f64>().is_ok_and(f64::is_finite)), "{name} {key}: {h}");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}
