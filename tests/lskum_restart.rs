//! A q-LSKUM run restarted from a checkpoint reaches the same state bit for bit as an
//! uninterrupted run (also with a different thread count), and the CLI refuses bad clouds
//! with exit code 2.

use std::path::{Path, PathBuf};

use sim::io::checkpoint;
use sim::run::{RunOptions, run};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sim_lskum_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn case_file(dir: &Path, cloud: &str, format: &str) -> PathBuf {
    let text = format!(
        "name: lskum_restart\nsolver:\n  lskum:\n    cloud: {cloud}\n    format: {format}\n    mach: 0.63\n    aoa: 2.0\n\
         time:\n  end_step: 6\ncheckpoint:\n  every_steps: 3\n  keep: 5\nguard:\n  check_every: 1\n"
    );
    let p = dir.join("case.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn restart_is_bit_exact() {
    let d = tmp("restart");
    let case = case_file(&d, &format!("{ROOT}/meshes/naca0012_9600_legacy.txt"), "legacy");
    let a = d.join("a");
    let b = d.join("b");
    run(&RunOptions { case: Some(case.clone()), out: Some(a.clone()), threads: Some(2), quiet: true, ..Default::default() })
        .unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let ck3 = a.join("checkpoint_00000003.h5");
    run(&RunOptions {
        restart: Some(ck3.display().to_string()),
        out: Some(b.clone()),
        threads: Some(1),
        quiet: true,
        ..Default::default()
    })
    .unwrap();
    let (ma, fa) = checkpoint::read(&a.join("checkpoint_00000006.h5")).unwrap();
    let (mb, fb) = checkpoint::read(&b.join("checkpoint_00000006.h5")).unwrap();
    assert_eq!((ma.step, mb.step), (6, 6));
    assert_eq!(fa.len(), 6 + 11, "state and cloud arrays");
    for x in &fa {
        let y = fb.iter().find(|y| y.name == x.name).unwrap();
        let (vx, vy) = (x.values.to_f64(), y.values.to_f64());
        assert!(vx.iter().zip(&vy).all(|(p, q)| p.to_bits() == q.to_bits()), "field {} differs", x.name);
    }
    // the last history rows (residue, C_l, C_d, C_m) agree too
    let last = |p: &Path| std::fs::read_to_string(p.join("history.csv")).unwrap().lines().last().unwrap().to_string();
    let strip = |s: String| s.split(',').enumerate().filter(|(k, _)| *k != 2).map(|(_, v)| v.to_string()).collect::<Vec<_>>();
    assert_eq!(strip(last(&a)), strip(last(&b)));
    assert!(a.join("wall_cp.csv").is_file() && a.join("lskum_restart_00000006.vtu").is_file());
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn cli_rejects_bad_cloud_with_exit_code_2() {
    let d = tmp("badcloud");
    let text = std::fs::read_to_string(format!("{ROOT}/meshes/naca0012_9600_legacy.txt")).unwrap();
    let bad: String = text.lines().take(300).collect::<Vec<_>>().join("\n");
    let cloud = d.join("cloud.txt");
    std::fs::write(&cloud, bad).unwrap();
    let case = case_file(&d, &cloud.display().to_string(), "legacy");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(["run", case.to_str().unwrap(), "--quiet", "--out"])
        .arg(d.join("o"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cloud.txt") && err.contains("truncated"), "{err}");
    // f32 is refused by `sim check` as by the run.
    let case = case_file(&d, &format!("{ROOT}/meshes/naca0012_9600_legacy.txt"), "legacy");
    for args in [&["check"][..], &["run", "--quiet"]] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sim"))
            .args(args)
            .arg(&case)
            .args(["--precision", "f32"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("f64 only"), "{args:?}: {err}");
    }
    // A free stream too slow for f64 to resolve its dynamic pressure (C_p, C_l were NaN).
    let text = std::fs::read_to_string(&case).unwrap().replace("mach: 0.63", "mach: 1.0e-300");
    std::fs::write(&case, text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sim")).arg("check").arg(&case).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("solver.lskum.mach: 1e-300 must be in [1e-6, 10)"), "{err}");
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn residue_drop_stops_the_run() {
    let d = tmp("converge");
    let cloud = format!("{ROOT}/meshes/naca0012_9600_legacy.txt");
    let text = format!(
        "name: conv\nsolver:\n  lskum:\n    cloud: {cloud}\n    mach: 0.63\n    aoa: 2.0\n    residue_drop: 0.1\n\
         time:\n  end_step: 100\nguard:\n  check_every: 1\n"
    );
    let case = d.join("case.yaml");
    std::fs::write(&case, text).unwrap();
    let v = run(&RunOptions { case: Some(case), out: Some(d.join("o")), quiet: true, ..Default::default() }).unwrap();
    assert_eq!(v["status"], "converged");
    let step = v["step"].as_u64().unwrap();
    let residue = v["errors"]["residue"].as_f64().unwrap();
    assert!(step < 100 && residue <= -0.1, "step {step}, residue {residue}");
    // the reference residue history (fser_ssprk43_9600_residue.txt) first reaches -0.1 at iteration 9
    assert_eq!(step, 9);
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn mesh_cli_writes_a_loadable_cloud_and_rejects_bad_options() {
    let d = tmp("meshcli");
    let out = d.join("c.txt");
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(["mesh", "naca0012", "--ni", "80", "--nj", "30", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let c = sim::mesh::cloud_file::load(&out, sim::solvers::lskum::CloudFormat::Sim).unwrap();
    assert_eq!(c.len(), 2400);
    // Read in the default legacy layout, it fails and says what it is.
    let case = case_file(&d, &out.display().to_string(), "legacy");
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_sim")).arg("check").arg(&case).output().unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(2), "{err}");
    assert!(err.contains("the file is a sim point cloud: give format: sim"), "{err}");
    let ignored = [
        vec!["--ni", "80", "--nj", "30", "--points", "500"],
        vec!["--type", "quadtree", "--ni", "80", "--nj", "30"],
        vec!["--type", "quadtree", "--first-spacing", "1e-3"],
        // More than a cloud file holds, and no far field: refused at once.
        vec!["--type", "quadtree", "--points", "1000000000"],
        vec!["--ni", "10000", "--nj", "3000"],
        vec!["--radius", "inf"],
        vec!["--type", "quadtree", "--radius", "1e300"],
    ];
    for args in [vec!["--ni", "8", "--nj", "30"], vec!["--type", "hexagons"], vec!["--radius=1"], vec!["--points", "0"]].into_iter().chain(ignored) {
        let st = std::process::Command::new(env!("CARGO_BIN_EXE_sim"))
            .args(["mesh", "naca0012"])
            .args(&args)
            .arg("--out")
            .arg(d.join("bad.txt"))
            .output()
            .unwrap();
        assert_eq!(st.status.code(), Some(2), "{args:?}");
        assert!(!d.join("bad.txt").exists());
    }
    // A first spacing the rings cannot reach is refused, not replaced by another.
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(["mesh", "naca0012", "--ni", "160", "--nj", "8", "--first-spacing", "1e-3", "--out"])
        .arg(d.join("bad.txt"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(2), "{err}");
    assert!(err.contains("--first-spacing 0.001 is too small for --nj 8"), "{err}");
    // More rings than fit at the default first spacing: it is lowered for them.
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(["mesh", "naca0012", "--ni", "160", "--nj", "1600", "--radius", "3", "--out"])
        .arg(d.join("rings.txt"))
        .output()
        .unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    // A quadtree whose far field is too far for its finest cells to keep the surface points
    // apart is refused naming --radius, and the radius it names as always working does.
    let quadtree = |more: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_sim"))
            .args(["mesh", "naca0012", "--type", "quadtree", "--points", "2000"])
            .args(more)
            .arg("--out")
            .arg(d.join("q.txt"))
            .output()
            .unwrap()
    };
    let st = quadtree(&["--radius", "1e6"]);
    let err = String::from_utf8_lossy(&st.stderr).to_string();
    assert_eq!(st.status.code(), Some(2), "{err}");
    let safe = err.split("(below ").nth(1).and_then(|r| r.split(' ').next()).unwrap_or_else(|| panic!("{err}"));
    assert!(err.contains("--radius 1000000:"), "{err}");
    let st = quadtree(&["--radius", safe]);
    assert!(st.status.success(), "--radius {safe}: {}", String::from_utf8_lossy(&st.stderr));
    // A count the refinement reaches near enough passes without a word; one far below what
    // the surface needs is said.
    assert!(!String::from_utf8_lossy(&quadtree(&[]).stdout).contains("note:"));
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(["mesh", "naca0012", "--type", "quadtree", "--points", "10", "--out"])
        .arg(d.join("q.txt"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&st.stdout).contains("note: --points 10: the nearest count"), "{st:?}");
    for t in ["0", "0.5", "2"] {
        let st = quadtree(&["--thickness", t]);
        let err = String::from_utf8_lossy(&st.stderr).to_string();
        assert!(st.status.code() == Some(2) && err.contains(&format!("--thickness {t}: must be in (0, 0.4)")), "{err}");
    }
    // A directory as the output file: named, exit 2.
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_sim")).args(["mesh", "naca0012", "--out"]).arg(&d).output().unwrap();
    assert_eq!(st.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&st.stderr).contains("is a directory"), "{}", String::from_utf8_lossy(&st.stderr));
    // So is a path that names a folder that does not exist yet.
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(["mesh", "naca0012", "--ni", "80", "--nj", "30", "--out"])
        .arg(format!("{}/new/", d.display()))
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&st.stderr).contains("is a directory"), "{}", String::from_utf8_lossy(&st.stderr));
    assert!(!d.join("new").exists());
    // What the cloud would not simply take the place of is refused and left as it was: a link,
    // a read-only file, a missing folder, a temporary file of that name, a device.
    std::fs::write(d.join("target.txt"), "mine").unwrap();
    std::os::unix::fs::symlink(d.join("target.txt"), d.join("link.txt")).unwrap();
    std::fs::write(d.join("ro.txt"), "mine").unwrap();
    let mut ro = std::fs::metadata(d.join("ro.txt")).unwrap().permissions();
    ro.set_readonly(true);
    std::fs::set_permissions(d.join("ro.txt"), ro).unwrap();
    std::fs::write(d.join("busy.txt.tmp"), "mine").unwrap();
    let cases = [
        (d.join("link.txt"), "not a regular file"),
        (d.join("ro.txt"), "read-only"),
        (d.join("nodir/x.txt"), "does not exist"),
        (d.join("target.txt/x.txt"), "target.txt is a file, not a folder"),
        (d.join("busy.txt"), "busy.txt.tmp exists"),
        (PathBuf::from("/dev/null"), "not a regular file"),
    ];
    for (out, needle) in cases {
        let st = std::process::Command::new(env!("CARGO_BIN_EXE_sim"))
            .args(["mesh", "naca0012", "--ni", "16", "--nj", "4", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&st.stderr);
        assert_eq!(st.status.code(), Some(2), "{}: {err}", out.display());
        assert!(err.contains(needle), "{}: {err}", out.display());
    }
    assert!(std::fs::symlink_metadata(d.join("link.txt")).unwrap().file_type().is_symlink());
    for f in ["target.txt", "ro.txt", "busy.txt.tmp"] {
        assert_eq!(std::fs::read_to_string(d.join(f)).unwrap(), "mine");
    }
    let mut rw = std::fs::metadata(d.join("ro.txt")).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    rw.set_readonly(false);
    std::fs::set_permissions(d.join("ro.txt"), rw).unwrap();
    let _ = std::fs::remove_dir_all(d);
}

/// The `.vtu` output opens in VTK (checked with the Python VTK reader where it is installed).
#[test]
fn vtu_output_reads_back() {
    use sim::real::Values;
    use sim::solver::{Location, OutField};
    let d = tmp("vtu");
    let path = d.join("p.vtu");
    let pts = [[0.0, 0.0], [1.0, 0.5], [2.0, -1.0]];
    let fields = [
        OutField::new("rho", 1, Location::Node, Values::F64(vec![1.0, 2.0, 3.0])),
        OutField::new("velocity", 3, Location::Node, Values::F64(vec![0.1, 0.2, 0.0, 0.3, 0.4, 0.0, 0.5, 0.6, 0.0])),
    ];
    let frame = sim::io::output::Frame { time: 0.0, compression: Default::default(), triangles: None, units: "" };
    sim::io::vtu::write(&path, &pts, &fields, &frame).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains(r#"NumberOfPoints="3" NumberOfCells="3""#));
    let script = format!(
        "import sys\ntry:\n import vtk\nexcept ImportError:\n print('skip'); sys.exit(0)\n\
         r=vtk.vtkXMLUnstructuredGridReader(); r.SetFileName('{}'); r.Update(); o=r.GetOutput()\n\
         assert o.GetNumberOfPoints()==3 and o.GetNumberOfCells()==3 and o.GetCellType(2)==1\n\
         assert o.GetPoint(1)==(1.0,0.5,0.0)\n\
         assert o.GetPointData().GetArray('rho').GetValue(2)==3.0\n\
         assert o.GetPointData().GetArray('velocity').GetTuple3(1)==(0.3,0.4,0.0)\nprint('ok')\n",
        path.display()
    );
    match std::process::Command::new("python3").arg("-c").arg(&script).output() {
        Ok(o) => {
            let s = String::from_utf8_lossy(&o.stdout);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            if s.contains("skip") {
                eprintln!("note: Python VTK not installed; .vtu read-back skipped");
            }
        }
        Err(_) => eprintln!("note: python3 not found; .vtu read-back skipped"),
    }
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn rdp_counts_only_the_iterations_of_this_process() {
    use sim::solver::Solver;
    use sim::mesh::ogrid::{OGrid, ogrid};
    use sim::solvers::lskum::{CloudFormat, Lskum, LskumParams};
    let cloud = ogrid(&OGrid { ni: 40, nj: 15, first_spacing: 8e-3, ..Default::default() }).unwrap();
    let p = LskumParams::with_cloud("generated", CloudFormat::Sim, 0.63, 2.0);
    let mut a = Lskum::with_cloud(&p, cloud.clone());
    for _ in 0..4 {
        a.iterate();
    }
    let mut b = Lskum::with_cloud(&p, cloud);
    b.restore(a.step(), a.time(), a.state()).unwrap();
    b.iterate();
    // One timed iteration in this process, although the run is at iteration 5.
    assert_eq!(b.iterations(), 5);
    assert_eq!(b.rdp(), b.wall_seconds / b.cloud.len() as f64);
}

/// A case's cloud path is taken from the case file's folder, and a checkpoint holds the cloud:
/// the run starts from another working directory, and is checked and continued from a third
/// one after the cloud file is gone, reaching the state of an uninterrupted run bit for bit.
#[test]
fn restart_needs_neither_the_cloud_file_nor_the_working_directory() {
    let d = tmp("elsewhere");
    let case_dir = d.join("case");
    std::fs::create_dir_all(&case_dir).unwrap();
    std::fs::copy(format!("{ROOT}/meshes/naca0012_9600_legacy.txt"), case_dir.join("cloud.txt")).unwrap();
    let text = "name: moved\nsolver:\n  lskum: {cloud: cloud.txt, mach: 0.63, aoa: 2.0}\ntime: {end_step: 4}\n\
                checkpoint: {every_steps: 2, keep: 5}\n";
    std::fs::write(case_dir.join("moved.yaml"), text).unwrap();
    let sim = |cwd: &Path, args: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_sim")).current_dir(cwd).args(args).output().unwrap();
        assert!(o.status.success(), "sim {args:?} in {}: {}", cwd.display(), String::from_utf8_lossy(&o.stderr));
    };
    // From the parent folder: cloud.txt is next to the case file, not in the working directory.
    sim(&d, &["run", "case/moved.yaml", "--quiet", "--steps", "2", "--out", "run"]);
    sim(&d, &["run", "case/moved.yaml", "--quiet", "--out", "whole"]);
    std::fs::remove_file(case_dir.join("cloud.txt")).unwrap();
    let other = d.join("other");
    std::fs::create_dir_all(&other).unwrap();
    // `sim check` sees the same: the cloud the checkpoint holds, not the file.
    sim(&other, &["check", "--restart", d.join("run").to_str().unwrap()]);
    sim(&other, &["run", "--restart", d.join("run").to_str().unwrap(), "--quiet"]);
    // With the case file given again (its cloud gone too): only run controls count.
    sim(&other, &["run", "--restart", d.join("run/checkpoint_00000002.h5").to_str().unwrap(), "../case/moved.yaml", "--quiet", "--out", "../again"]);
    let (_, a) = checkpoint::read(&d.join("whole/checkpoint_00000004.h5")).unwrap();
    for run in ["run", "again"] {
        let (m, b) = checkpoint::read(&d.join(run).join("checkpoint_00000004.h5")).unwrap();
        assert_eq!(m.step, 4);
        for x in &a {
            let y = b.iter().find(|y| y.name == x.name).unwrap();
            let same = x.values.to_f64().iter().zip(&y.values.to_f64()).all(|(p, q)| p.to_bits() == q.to_bits());
            assert!(same, "{run}: field {} differs", x.name);
        }
    }
    let _ = std::fs::remove_dir_all(d);
}

/// A damaged cloud in a checkpoint is an input error naming the dataset or the point, not a
/// panic: the checks of a cloud file hold for the stored cloud too.
#[test]
fn a_damaged_stored_cloud_is_an_input_error() {
    use sim::real::Values;
    let d = tmp("badstored");
    let case = case_file(&d, &format!("{ROOT}/meshes/naca0012_9600_legacy.txt"), "legacy");
    run(&RunOptions { case: Some(case), out: Some(d.join("a")), quiet: true, ..Default::default() }).unwrap();
    let (mut meta, good) = checkpoint::read(&d.join("a/checkpoint_00000006.h5")).unwrap();
    meta.step = 3;
    let values = |arrays: &[sim::solver::StateArray], name: &str| arrays.iter().find(|a| a.name == name).unwrap().values.to_f64();
    // Point 6's first neighbour, as an index into cloud_conn.
    let first_link = values(&good, "cloud_conn_start")[5] as usize;
    let (x0, y0) = (values(&good, "cloud_x")[0], values(&good, "cloud_y")[0]);
    // The values set (dataset, index, value) and what the message names.
    type Set<'a> = &'a [(&'a str, usize, f64)];
    let damages: [(Set, &str); 5] = [
        (&[("cloud_conn", 10, 1e9)], "cloud_conn"),
        (&[("cloud_conn", first_link, 5.0)], "point 6: lists itself as a neighbour"),
        (&[("cloud_min_dist", 7, -1.0)], "point 8: min_dist -1 must be positive"),
        (&[("cloud_nx", 0, 2.0)], "point 1: normal (2,"),
        (&[("cloud_x", 1, x0), ("cloud_y", 1, y0)], "point 2: same coordinates"),
    ];
    for (k, (set, needle)) in damages.into_iter().enumerate() {
        let mut arrays = good.clone();
        for &(name, at, value) in set {
            let a = arrays.iter_mut().find(|a| a.name == name).unwrap();
            if let Values::F64(v) = &mut a.values {
                v[at] = value;
            }
        }
        let mesh = sim::solver::Mesh::Points(vec![[0.0, 0.0]]);
        let bad = d.join(format!("bad{k}/checkpoint_00000003.h5"));
        std::fs::create_dir_all(bad.parent().unwrap()).unwrap();
        checkpoint::write(&bad, &meta, &arrays, &mesh).unwrap();
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_sim")).args(["run", "--restart"]).arg(&bad).arg("--quiet").output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{set:?}: {err}");
        assert!(err.contains(needle) && err.contains("checkpoint_00000003.h5"), "{set:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(d);
}

/// Checkpoint state is in file order: a run renumbered one way continues in another (or in
/// file order) bit for bit.
#[test]
fn restart_across_renumberings_is_bit_exact() {
    use sim::mesh::ogrid::{OGrid, ogrid};
    use sim::solver::Solver;
    use sim::solvers::lskum::{CloudFormat, Lskum, LskumParams, Renumber};
    let cloud = ogrid(&OGrid { ni: 40, nj: 15, first_spacing: 8e-3, ..Default::default() }).unwrap();
    let with = |r: Renumber| {
        let mut p = LskumParams::with_cloud("generated", CloudFormat::Sim, 0.63, 2.0);
        p.renumber = r;
        Lskum::with_cloud(&p, cloud.clone())
    };
    let mut straight = with(Renumber::Hilbert);
    for _ in 0..8 {
        straight.iterate();
    }
    for (first, second) in [(Renumber::Rcm, Renumber::None), (Renumber::None, Renumber::Hilbert)] {
        let mut a = with(first);
        for _ in 0..4 {
            a.iterate();
        }
        let mut b = with(second);
        b.restore(a.step(), a.time(), a.state()).unwrap();
        for _ in 0..4 {
            b.iterate();
        }
        let bits = |s: &Lskum| s.prim().iter().flat_map(|w| w.map(f64::to_bits)).collect::<Vec<_>>();
        assert!(bits(&b) == bits(&straight), "{first:?} then {second:?}");
        assert_eq!(b.residue().to_bits(), straight.residue().to_bits());
    }
}

/// A diverging run (Mach 8 on the 9600-point cloud) stops with exit 1, and the advice names
/// what this pseudo-time solver has in place of a time step.
#[test]
fn a_diverging_run_advises_the_cfl_number() {
    let d = tmp("diverges");
    let case = case_file(&d, &format!("{ROOT}/meshes/naca0012_9600_legacy.txt"), "legacy");
    std::fs::write(&case, std::fs::read_to_string(&case).unwrap().replace("mach: 0.63", "mach: 8.0").replace("end_step: 6", "end_step: 40")).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_sim")).current_dir(&d).args(["run", "case.yaml", "--quiet"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("Reduce the CFL number") && !err.contains("time step"), "{err}");
    let _ = std::fs::remove_dir_all(d);
}
