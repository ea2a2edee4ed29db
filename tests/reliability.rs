//! A run directory that sim owns, signals, and runs that could not end: each test covers a
//! finding of a torture test (the bad inputs it used), asserting exit code 2 (or the signal's
//! code), a message that names the problem, and files outside the run's own left alone.

mod common;
use common::*;

use std::time::{Duration, Instant};

const GOOD: &str = "name: h\nsolver:\n  heat2d: {n: 17, r: 0.2}\ntime: {end_step: 20}\n";

#[test]
fn names_and_output_paths_cannot_reach_other_files() {
    let dir = scratch("rel_paths");
    for name in ["..", ".", ".hidden", &"n".repeat(1000)] {
        write(&dir, "c.yaml", &GOOD.replace("name: h", &format!("name: {name:?}")));
        exit2(&sim(&dir, &["check", "c.yaml"]), &["name:"]);
        exit2(&sim(&dir, &["run", "c.yaml"]), &["name:"]);
    }
    // A directory of the user's reached through a path that does not exist yet.
    std::fs::create_dir_all(dir.join("existing")).unwrap();
    write(&dir.join("existing"), "history.csv", "mine\n");
    write(&dir, "c.yaml", GOOD);
    let before = snapshot(&dir.join("existing"));
    let o = sim(&dir, &["run", "c.yaml", "--out", "nothere/../existing"]);
    exit2(&o, &["already holds files"]);
    assert!(!stderr(&o).contains("--restart"), "no checkpoint there to continue: {}", stderr(&o));
    exit2(&sim(&dir, &["run", "c.yaml", "--out", "nothere/../existing", "--overwrite"]), &["history.csv", "did not write"]);
    assert_eq!(snapshot(&dir.join("existing")), before, "the user's files are untouched");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn overwrite_removes_only_what_earlier_runs_wrote() {
    let dir = scratch("rel_overwrite");
    write(&dir, "c.yaml", GOOD);
    ok(sim(&dir, &["run", "c.yaml", "--quiet", "--steps", "10"]));
    let out = dir.join("out/h");
    // Files of the user's beside the run's, some named like run files.
    for f in ["notes.txt", "x.tmp", "mine.pvd", "mine.vti", "checkpoint_final.h5", "wall_cp.csv"] {
        write(&out, f, "the user's\n");
    }
    // (sim's lock file records the pid of the latest process.)
    let files = |d: &std::path::Path| snapshot(d).into_iter().filter(|(n, _)| n != ".sim-lock").collect::<Vec<_>>();
    let all_before = files(&out);
    exit2(&sim(&dir, &["run", "c.yaml", "--quiet", "--overwrite"]), &["did not write"]);
    assert_eq!(files(&out), all_before, "a refused --overwrite changes nothing");
    // Without the clashing names the earlier run's files go and the others stay.
    for f in ["x.tmp", "mine.pvd", "mine.vti", "checkpoint_final.h5", "wall_cp.csv"] {
        std::fs::remove_file(out.join(f)).unwrap();
    }
    ok(sim(&dir, &["run", "c.yaml", "--quiet", "--overwrite"]));
    assert_eq!(std::fs::read_to_string(out.join("notes.txt")).unwrap(), "the user's\n");
    assert!(!out.join("checkpoint_00000010.h5").exists() && out.join("checkpoint_00000020.h5").exists());
    std::fs::remove_dir_all(dir).unwrap();
}

/// A restart from an older checkpoint in its run's directory continues the run from there:
/// the later checkpoints would be lost, so they need --overwrite, and the later frames go.
#[test]
fn a_restart_from_an_older_checkpoint_replaces_what_came_after_it() {
    let dir = scratch("rel_rewind");
    write(&dir, "c.yaml", &format!("{GOOD}output: {{every_steps: 4}}\ncheckpoint: {{every_steps: 5, keep: 10}}\n"));
    ok(sim(&dir, &["run", "c.yaml", "--quiet"]));
    let out = dir.join("out/h");
    let files = |d: &std::path::Path| snapshot(d).into_iter().filter(|(n, _)| n != ".sim-lock").collect::<Vec<_>>();
    let before = files(&out);
    let from = ["run", "--restart", "out/h/checkpoint_00000005.h5", "--quiet", "--steps", "2"];
    exit2(&sim(&dir, &from), &["checkpoints after step 5", "checkpoint_00000010.h5 and 2 more", "--overwrite", "--out"]);
    assert_eq!(files(&out), before, "a refused restart changes nothing");
    ok(sim(&dir, &[&from[..], &["--overwrite"]].concat()));
    // Nothing after step 7 is left, so the newest checkpoint is this run's.
    let names: Vec<String> = files(&out).into_iter().map(|(n, _)| n).collect();
    for n in ["h_00000008.vti", "h_00000020.vti", "checkpoint_00000010.h5", "checkpoint_00000020.xmf"] {
        assert!(!names.contains(&n.to_string()), "{n}: {names:?}");
    }
    for n in ["h_00000004.vti", "checkpoint_00000005.h5", "checkpoint_00000007.h5"] {
        assert!(names.contains(&n.to_string()), "{n}: {names:?}");
    }
    assert_eq!(sim::io::checkpoint::list(&out).pop().unwrap().0, 7);
    std::fs::remove_dir_all(dir).unwrap();
}

/// A checkpoint copied into a folder of the user's continues there, but not over the user's
/// files that a run writes.
#[test]
fn a_restart_in_a_folder_sim_did_not_make_keeps_the_users_files() {
    let dir = scratch("rel_copied");
    write(&dir, "c.yaml", GOOD);
    ok(sim(&dir, &["run", "c.yaml", "--quiet", "--steps", "10"]));
    let mine = dir.join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::copy(dir.join("out/h/checkpoint_00000010.h5"), mine.join("checkpoint_00000010.h5")).unwrap();
    for f in ["history.csv", "summary.json", "h.pvd"] {
        write(&mine, f, "the user's\n");
        let before = snapshot(&mine);
        exit2(&sim(&dir, &["run", "--restart", "mine/checkpoint_00000010.h5", "--quiet"]), &[f, "did not write"]);
        assert_eq!(snapshot(&mine), before, "{f}: a refused restart changes nothing");
        std::fs::remove_file(mine.join(f)).unwrap();
    }
    // A frame of the user's before the restart step is not one the run writes again.
    write(&mine, "h_00000004.vti", "the user's\n");
    ok(sim(&dir, &["run", "--restart", "mine/checkpoint_00000010.h5", "--quiet"]));
    assert_eq!(std::fs::read_to_string(mine.join("h_00000004.vti")).unwrap(), "the user's\n");
    assert!(mine.join("checkpoint_00000020.h5").exists() && mine.join("checkpoint_00000010.h5").exists());
    std::fs::remove_dir_all(dir).unwrap();
}

/// A checkpoint of another case copied into a run directory does not continue there: the
/// directory is that run's.
#[test]
fn a_checkpoint_of_another_case_does_not_take_over_a_run_directory() {
    let dir = scratch("rel_other_case");
    write(&dir, "h.yaml", GOOD);
    write(&dir, "run.yaml", &GOOD.replace("name: h", "name: h_20240101"));
    ok(sim(&dir, &["run", "run.yaml", "--quiet", "--steps", "10", "--out", "a"]));
    ok(sim(&dir, &["run", "h.yaml", "--quiet", "--steps", "12", "--out", "b"]));
    std::fs::copy(dir.join("b/checkpoint_00000012.h5"), dir.join("a/checkpoint_00000012.h5")).unwrap();
    let before = snapshot(&dir.join("a"));
    for extra in [&[][..], &["--overwrite"]] {
        let args = [&["run", "--restart", "a/checkpoint_00000012.h5", "--quiet"][..], extra].concat();
        exit2(&sim(&dir, &args), &["another case (h_20240101.pvd)", "--out"]);
        assert_eq!(snapshot(&dir.join("a")), before, "{args:?}: a refused restart changes nothing");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// sim's own files cannot be listed in the manifest (--overwrite would remove the lock of the
/// run that holds it); a blank line is no name.
#[test]
fn the_manifest_cannot_name_sims_own_files() {
    let dir = scratch("rel_manifest");
    write(&dir, "c.yaml", GOOD);
    ok(sim(&dir, &["run", "c.yaml", "--quiet", "--steps", "10"]));
    let manifest = dir.join("out/h/.sim-manifest");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, format!("\n{text}\n")).unwrap();
    ok(sim(&dir, &["run", "--restart", "out/h", "--quiet", "--steps", "2"]));
    for own in [".sim-lock", ".sim-manifest"] {
        std::fs::write(&manifest, format!("{text}{own}\n")).unwrap();
        exit2(&sim(&dir, &["run", "c.yaml", "--quiet", "--overwrite"]), &[own, "not the name of a file"]);
        assert!(dir.join("out/h").join(own).exists());
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// What a kill -9 leaves of a file sim was writing is sim's to remove on --overwrite.
#[test]
fn overwrite_removes_the_temporary_files_of_a_killed_run() {
    let dir = scratch("rel_killed");
    write(&dir, "c.yaml", GOOD);
    ok(sim(&dir, &["run", "c.yaml", "--quiet", "--steps", "10"]));
    let out = dir.join("out/h");
    for f in ["h_00000010.vti.tmp", "checkpoint_00000010.h5.tmp"] {
        write(&out, f, "partial");
    }
    // A temporary file of the user's, of a name no run writes, stays.
    write(&out, "notes.tmp", "the user's");
    ok(sim(&dir, &["run", "c.yaml", "--quiet", "--overwrite"]));
    let names: Vec<String> = snapshot(&out).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names.iter().filter(|n| n.ends_with(".tmp")).collect::<Vec<_>>(), ["notes.tmp"], "{names:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// A long heat run in the background, once it has written a checkpoint.
fn start_long_run(dir: &std::path::Path) -> Background {
    write(dir, "long.yaml", "name: h\nsolver:\n  heat2d: {n: 257, r: 0.2}\ntime: {end_step: 100000000}\nguard: {check_every: 10}\ncheckpoint: {every_steps: 500, keep: 1000}\n");
    Background::start(dir, &["long.yaml", "--backend", "cpu"], |d| !sim::io::checkpoint::list(&d.join("out/h")).is_empty())
}

#[test]
fn a_second_process_is_kept_out_and_sigterm_checkpoints() {
    let dir = scratch("rel_lock");
    let child = start_long_run(&dir);
    let pid = child.id().to_string();
    write(&dir, "c.yaml", GOOD);
    let lock_before = std::fs::read_to_string(dir.join("out/h/.sim-lock")).unwrap();
    assert_eq!(lock_before, pid, "the lock names its holder");
    exit2(&sim(&dir, &["run", "c.yaml", "--overwrite"]), &["in use by another sim run", &pid]);
    exit2(&sim(&dir, &["run", "--restart", "out/h"]), &["in use by another sim run", &pid]);
    assert_eq!(std::fs::read_to_string(dir.join("out/h/.sim-lock")).unwrap(), lock_before);
    // SIGTERM, as a batch scheduler sends before it kills a job: checkpoint, exit 128 + 15.
    let o = child.signal("-TERM");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(143), "{err}");
    // The command that continues the run repeats --backend, which the checkpoint does not hold.
    assert!(err.contains("interrupted by SIGTERM") && err.contains("--restart") && err.ends_with("--backend cpu\n"), "{err}");
    assert!(!sim::io::checkpoint::list(&dir.join("out/h")).is_empty());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn sighup_checkpoints_and_a_restart_cleans_what_a_kill_left() {
    let dir = scratch("rel_hup");
    let child = start_long_run(&dir);
    let o = child.signal("-HUP");
    assert_eq!(o.status.code(), Some(129), "{}", stderr(&o));
    let out = dir.join("out/h");
    let (step, _) = sim::io::checkpoint::list(&out).pop().unwrap();
    // What a kill -9 during writes leaves: temporary files and a sidecar without checkpoint,
    // of names the run had entered in its manifest before writing them.
    let ck = format!("checkpoint_{:08}.h5", step + 5);
    write(&out, &format!("{ck}.tmp"), "partial");
    write(&out, "h_00099999.vti.tmp", "partial");
    write(&out, "checkpoint_00000001.xmf", "<Xdmf/>");
    let mut manifest = std::fs::OpenOptions::new().append(true).open(out.join(".sim-manifest")).unwrap();
    std::io::Write::write_all(&mut manifest, format!("{ck}\nh_00099999.vti\ncheckpoint_00000001.xmf\n").as_bytes()).unwrap();
    // The user's files, some named like sim's, which no run wrote.
    for f in ["notes.tmp", "mine.vti.tmp", "checkpoint_00000003.xmf"] {
        write(&out, f, "the user's");
    }
    ok(sim(&dir, &["run", "--restart", "out/h", "--steps", "5", "--quiet"]));
    let names: Vec<String> = snapshot(&out).into_iter().map(|(n, _)| n).collect();
    for gone in [format!("{ck}.tmp"), "h_00099999.vti.tmp".into(), "checkpoint_00000001.xmf".into()] {
        assert!(!names.contains(&gone), "{gone}: {names:?}");
    }
    for kept in ["notes.tmp", "mine.vti.tmp", "checkpoint_00000003.xmf"] {
        assert!(names.contains(&kept.to_string()), "not sim's, kept: {kept} {names:?}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Peak resident memory (bytes) of `sim run c.yaml` in `dir`, as the kernel counts it for a
/// child process (Python's `resource`, which reads getrusage).
fn peak_of_run(dir: &std::path::Path, case: &str) -> u64 {
    write(dir, "c.yaml", case);
    let script = "import resource, subprocess, sys\n\
                  r = subprocess.run(sys.argv[1:])\n\
                  print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)";
    let o = std::process::Command::new("python3")
        .current_dir(dir)
        .args(["-c", script, env!("CARGO_BIN_EXE_sim"), "run", "c.yaml", "--quiet", "--overwrite"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let [code, kib] = [0, 1].map(|k| text.split_whitespace().nth(k).unwrap_or_else(|| panic!("{text}")).to_string());
    assert_eq!(code, "0", "{case}: {}", stderr(&o));
    kib.parse::<u64>().unwrap() * 1024
}

/// The memory check's estimate (what `sim check` prints) holds the peak of a real run, less
/// what a run of the same solver on a tiny grid takes (the program, its libraries, threads):
/// the runs write a frame and a checkpoint, whose copies of the fields count.
#[test]
fn the_memory_estimate_holds_the_peak_of_a_run() {
    let dir = scratch("rel_memory");
    ok(sim(&dir, &["mesh", "naca0012", "--ni", "640", "--nj", "240", "--out", "big.txt"]));
    ok(sim(&dir, &["mesh", "naca0012", "--ni", "16", "--nj", "4", "--out", "small.txt"]));
    let sw = |scheme: &str, n: usize| {
        format!(
            "shallow_water: {{scheme: {scheme}, nx: {n}, ny: {n}, dx: 200, dt: 0.9, bathymetry: {{flat: 60}}, \
             initial: {{bump: {{position: central}}}}}}"
        )
    };
    let files = |n: usize| {
        format!(
            "shallow_water: {{scheme: fbl, nx: {n}, ny: {n}, dx: 200, dt: 0.9, bathymetry: {{file: {{path: in{n}.h5}}}}, \
             initial: {{file: {{path: in{n}.h5, eta: eta, hu: hu, hv: hv}}}}}}"
        )
    };
    let cases = [
        ("heat1d: {n: 4194304, r: 0.4}".to_string(), "heat1d: {n: 64, r: 0.4}".to_string()),
        ("heat1d: {n: 4194304, r: 4, method: crank_nicolson}".into(), "heat1d: {n: 64, r: 4, method: crank_nicolson}".into()),
        // Partitions of one or two rows, whose bookkeeping outweighs the fields.
        (
            "heat1d: {n: 4194304, r: 0.5, method: crank_nicolson, tridiagonal: spike, partitions: 4194302}".into(),
            "heat1d: {n: 64, r: 0.5, method: crank_nicolson, tridiagonal: spike, partitions: 62}".into(),
        ),
        ("heat2d: {n: 1024, r: 2, method: adi}".into(), "heat2d: {n: 17, r: 2, method: adi}".into()),
        ("cavity: {n: 513, re: 100}".into(), "cavity: {n: 17, re: 100}".into()),
        (sw("fbl", 700), sw("fbl", 16)),
        (sw("ctcs", 700), sw("ctcs", 16)),
        (sw("cdklm16", 700), sw("cdklm16", 16)),
        (sw("kp07", 700), sw("kp07", 16)),
        ("lskum: {cloud: big.txt, format: sim, mach: 0.63}".into(), "lskum: {cloud: small.txt, format: sim, mach: 0.63}".into()),
        // In f32, with every array from a file (kept in f64 for the checkpoints).
        (files(700), files(16)),
    ];
    for n in [700, 16] {
        let f = hdf5::File::create(dir.join(format!("in{n}.h5"))).unwrap();
        for (name, value) in [("H", 60.0), ("eta", 0.01), ("hu", 0.1), ("hv", -0.1)] {
            f.new_dataset::<f64>().shape([n, n]).create(name).unwrap().write_raw(&vec![value; n * n]).unwrap();
        }
    }
    for (big, small) in cases {
        let precision = if big.contains("in700") { "f32" } else { "f64" };
        let case = |solver: &str| format!("name: m\nsolver:\n  {solver}\nprecision: {precision}\ntime: {{end_step: 2}}\n");
        write(&dir, "c.yaml", &case(&big));
        let printed = String::from_utf8_lossy(&ok(sim(&dir, &["check", "c.yaml"])).stdout).to_string();
        let mib: f64 = printed
            .lines()
            .find_map(|l| l.trim().strip_prefix("memory: ")?.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("{printed}"));
        let estimate = (mib * (1u64 << 20) as f64) as u64;
        let base = peak_of_run(&dir, &case(&small));
        let peak = peak_of_run(&dir, &case(&big));
        let used = peak.saturating_sub(base);
        eprintln!("{big}: estimate {:.0} MiB, run {:.0} MiB above a tiny run's", mib, used as f64 / (1u64 << 20) as f64);
        assert!(used <= estimate, "{big}: a run took {used} bytes above a tiny run's, the estimate {estimate}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn runs_that_could_not_end_or_fit_are_refused() {
    let dir = scratch("rel_limits");
    let heat = |solver: &str, extra: &str| format!("name: h\nsolver:\n  {solver}\ntime: {{end_time: 1.0}}\n{extra}");
    let cases = [
        ("subnormal dt", heat("heat2d: {n: 17, r: 1.0e-320}", ""), vec!["time step dt"]),
        ("dt subnormal in f32", heat("heat1d: {n: 33, r: 1.0e-40}", "precision: f32\n"), vec!["time step dt", "subnormal in f32"]),
        (
            "dt zero in f32",
            heat(
                "shallow_water: {scheme: fbl, nx: 10, ny: 10, dx: 200.0, dt: 1.0e-50, bathymetry: {flat: 60.0}, initial: rest}",
                "precision: f32\n",
            ),
            vec!["time step dt = 1e-50", "subnormal in f32"],
        ),
        ("infinite dt", heat("heat2d: {n: 17, r: 0.2, domain: [-1.0e200, 1.0e200]}", ""), vec!["time step dt"]),
        (
            "time beyond f64",
            "name: h\nsolver:\n  heat1d: {n: 3, r: 1.7e308, method: crank_nicolson}\ntime: {end_step: 10}\n".into(),
            vec!["time step dt", "largest f64"],
        ),
        ("too many steps", heat("heat1d: {n: 1000001, r: 0.4}", ""), vec!["steps, more than the limit"]),
        ("too many threads", heat("heat2d: {n: 17, r: 0.2}", "threads: 4096\n"), vec!["threads:", "hardware threads"]),
        ("too much memory", heat("heat2d: {n: 65536, r: 0.2}", ""), vec!["GiB", "available"]),
    ];
    for (what, text, needles) in cases {
        write(&dir, "c.yaml", &text);
        let t0 = Instant::now();
        for cmd in ["check", "run"] {
            let o = sim(&dir, &[cmd, "c.yaml"]);
            assert_eq!(o.status.code(), Some(2), "{what} ({cmd}): {}", stderr(&o));
            for n in &needles {
                assert!(stderr(&o).contains(n), "{what} ({cmd}): {}", stderr(&o));
            }
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "{what}: refused at once");
        assert!(!dir.join("out").exists(), "{what}: nothing written");
    }
    // Frames: each step lands on an instant of every_time (the end given as a step only), or
    // every step writes one.
    let frames = "name: h\nsolver:\n  heat1d: {n: 11, r: 0.4}\ntime: {end_step: 2000000}\noutput: ";
    for (output, key) in [("{every_time: 1.0e-9}", "output.every_time"), ("{every_steps: 1}", "output.every_steps")] {
        write(&dir, "c.yaml", &format!("{frames}{output}\n"));
        for cmd in ["check", "run"] {
            exit2(&sim(&dir, &[cmd, "c.yaml"]), &[key, "output frames before the end of the run (step 2000000)", "limit"]);
        }
    }
    write(&dir, "c.yaml", "name: h\nsolver:\n  heat1d: {n: 11, r: 0.4}\ntime: {end_time: 1.0e-320}\n");
    exit2(&sim(&dir, &["check", "c.yaml"]), &["time.end_time", "subnormal"]);
    write(&dir, "c.yaml", "name: h\nsolver:\n  heat1d: {n: 11, r: 0.4}\ntime: {end_step: 5}\noutput: {every_time: 1.0e-310}\n");
    exit2(&sim(&dir, &["check", "c.yaml"]), &["output.every_time", "subnormal"]);
    // An initial condition that overflows (the peak 1/(4 pi a t0) of a heat kernel).
    write(&dir, "c.yaml", "name: h\nsolver:\n  heat2d: {n: 33, r: 0.2, t0: 1.0e-310}\ntime: {end_step: 3}\n");
    exit2(&sim(&dir, &["run", "c.yaml"]), &["initial state", "inf", "field T", "initial-condition parameters"]);
    write(&dir, "c.yaml", GOOD);
    exit2(&sim(&dir, &["run", "c.yaml", "--threads", "100000"]), &["--threads"]);
    exit2(&sim(&dir, &["run", "c.yaml", "--steps", "0"]), &["--steps"]);
    exit2(&sim(&dir, &["bench", "heat2d", "--size", "1000000", "--seconds", "0.01"]), &["--size 1000000 sets solver.heat2d.n"]);
    exit2(&sim(&dir, &["bench", "lskum", "--size", "1", "--seconds", "0.01"]), &["--size 1: choose 1000 .. 50 000 000 points"]);
    exit2(&sim(&dir, &["bench", "heat2d", "--size", "60000", "--seconds", "0.01"]), &["GiB"]);
    let block = GOOD.to_string() + "gpu: {block: [65536, 65536]}\n";
    write(&dir, "b.yaml", &block);
    exit2(&sim(&dir, &["check", "b.yaml"]), &["gpu.block"]);
    // A step count that overflows when added to the restart step runs to the case's end.
    ok(sim(&dir, &["run", "c.yaml", "--quiet", "--steps", "10"]));
    ok(sim(&dir, &["run", "--restart", "out/h", "--quiet", "--steps", "18446744073709551615"]));
    assert_eq!(sim::io::checkpoint::list(&dir.join("out/h")).pop().unwrap().0, 20);
    std::fs::remove_dir_all(dir).unwrap();
}
