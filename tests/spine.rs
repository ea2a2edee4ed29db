//! The solver-independent parts of a run: steps that land on the requested output instants,
//! pseudo-time solvers, the registry, cell-centred output read back by VTK, and the XDMF
//! sidecar that names every checkpoint array.

mod common;
use common::*;

use sim::real::Values;
use sim::solver::{Grid, Location, Mesh, OutField, Place};

/// The `timestep` values of a `.pvd` series.
fn pvd_times(path: &std::path::Path) -> Vec<f64> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter_map(|l| l.split("timestep=\"").nth(1)?.split('"').next()?.parse().ok())
        .collect()
}

#[test]
fn pvd_times_are_exactly_the_requested_multiples() {
    // dt = 0.2 (2/16)^2 = 0.003125 does not divide 0.01: without landing, outputs would fall
    // on the first step after each multiple.
    let dir = scratch("landing");
    let case = heat_case("h", "heat2d: {n: 17, r: 0.2}", "f64", "{end_time: 0.05}", "output: {every_time: 0.01}");
    write(&dir, "h.yaml", &case);
    ok(sim(&dir, &["run", "h.yaml", "--quiet"]));
    let times = pvd_times(&dir.join("out/h/h.pvd"));
    let want: Vec<f64> = (0..=5).map(|k| k as f64 * 0.01).collect();
    assert_eq!(times, want, "output times bitwise equal to k * every_time");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/h/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["time"].as_f64(), Some(0.05));
    assert_eq!(summary["clock"], "physical");
    // Continued into a directory that does not exist yet, to a later end.
    write(&dir, "h.yaml", &case.replace("end_time: 0.05", "end_time: 0.07"));
    ok(sim(&dir, &["run", "--restart", "out/h", "h.yaml", "--quiet", "--out", "more/h"]));
    assert_eq!(pvd_times(&dir.join("more/h/h.pvd")), vec![6.0 * 0.01, 7.0 * 0.01]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn pseudo_time_solvers_refuse_simulated_time_keys() {
    let dir = scratch("pseudo");
    let cloud = concat!(env!("CARGO_MANIFEST_DIR"), "/meshes/naca0012_9600_legacy.txt");
    let solver = format!("lskum: {{cloud: {cloud}, format: legacy, mach: 0.63}}");
    for (extra, time, key) in [
        ("output: {every_time: 5}", "{end_step: 3}", "output.every_time"),
        ("", "{end_time: 2.0}", "time.end_time"),
    ] {
        write(&dir, "l.yaml", &heat_case("l", &solver, "f64", time, extra));
        let o = sim(&dir, &["run", "l.yaml", "--quiet"]);
        assert_eq!(o.status.code(), Some(2), "{key}: {}", stderr(&o));
        assert!(stderr(&o).contains(key) && stderr(&o).contains("pseudo-time"), "{}", stderr(&o));
        assert!(!dir.join("out").exists(), "nothing written");
    }
    // Iterations: the series counts them, summary.json has no time.
    write(&dir, "l.yaml", &heat_case("l", &solver, "f64", "{end_step: 2}", "output: {every_steps: 1}"));
    ok(sim(&dir, &["run", "l.yaml", "--quiet"]));
    assert_eq!(pvd_times(&dir.join("out/l/l.pvd")), vec![0.0, 1.0, 2.0]);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/l/summary.json")).unwrap()).unwrap();
    assert!(summary["time"].is_null() && summary["clock"] == "iterations", "{summary}");
    assert_eq!(summary["results"], serde_json::json!(["wall_cp.csv"]));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn every_registered_solver_builds_its_bench_problem() {
    use sim::solver::Solver;
    for e in sim::solvers::SOLVERS {
        let size = if e.name == "lskum" { 2000 } else { 17 };
        let mut s: Box<dyn Solver> = (e.bench)(size, &sim::bench::BenchOptions { precision: sim::real::Precision::F64, ..Default::default() }, &sim::solvers::Device::Cpu(Default::default())).unwrap();
        assert_eq!(s.kind(), e.name);
        let dt = s.propose_dt().unwrap();
        s.advance(dt).unwrap();
        assert_eq!(s.step(), 1, "{}", e.name);
        assert!(s.bytes_per_step() > 0.0 && !s.mesh().is_empty(), "{}", e.name);
    }
}

#[test]
fn checkpoint_sidecar_names_every_array() {
    let dir = scratch("xdmf");
    let case = "name: c\nsolver:\n  cavity: {n: 17, re: 100}\ntime: {end_step: 3}\n";
    write(&dir, "c.yaml", case);
    ok(sim(&dir, &["run", "c.yaml", "--quiet"]));
    let xmf = std::fs::read_to_string(dir.join("out/c/checkpoint_00000003.xmf")).unwrap();
    for name in ["u", "v", "p", "u_snapshot", "v_snapshot"] {
        assert!(xmf.contains(&format!("<Attribute Name=\"{name}\"")), "{name} listed:\n{xmf}");
    }
    assert!(xmf.contains("<!-- /fields/residual_state [5] is not listed: not a field on the mesh -->"), "{xmf}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Cell data on a cell mesh, with a halo and staggered face values, read back by VTK.
#[test]
fn cell_fields_read_back_with_vtk() {
    if !python_has("vtkmodules.vtkIOXML") {
        return;
    }
    let dir = scratch("cells");
    let mesh = Mesh::Cells(Grid { n: [3, 2], origin: [-1.0, 0.0], spacing: [0.5, 0.25] });
    // eta = 10 j + i on 3 x 2 cells, stored with a halo of 2 (7 x 6).
    let eta: Vec<f64> = (0..6).flat_map(|j| (0..7).map(move |i| 10.0 * (j as f64 - 2.0) + (i as f64 - 2.0))).collect();
    // u on the 4 x 2 x-faces: u = face index i; h at the 4 x 3 corner nodes.
    let u: Vec<f32> = (0..2).flat_map(|_| (0..4).map(|i| i as f32)).collect();
    let fields = [
        OutField { name: "eta", components: 1, place: Place { loc: Location::Cell, halo: 2 }, values: Values::F64(eta) },
        OutField::new("u", 1, Location::FaceX, Values::F32(u)),
        OutField::new("H", 1, Location::Node, Values::F64((0..12).map(|k| k as f64).collect())),
    ];
    let frame = sim::io::output::Frame { time: 0.5, compression: Default::default(), triangles: None, units: "" };
    let file = sim::io::output::file_name("s", 7, &mesh);
    assert_eq!(file, "s_00000007.vti");
    sim::io::output::write(&dir, &file, &mesh, &fields, &frame).unwrap();
    let script = format!(
        "from vtkmodules.vtkIOXML import vtkXMLImageDataReader\n\
         from vtkmodules.util.numpy_support import vtk_to_numpy\n\
         r = vtkXMLImageDataReader(); r.SetFileName('{}'); r.Update(); img = r.GetOutput()\n\
         print(list(img.GetDimensions()), list(img.GetOrigin()), img.GetNumberOfCells())\n\
         for d in (img.GetCellData(), img.GetPointData()):\n\
         \x20   for k in range(d.GetNumberOfArrays()):\n\
         \x20       a = d.GetArray(k); print(a.GetName(), vtk_to_numpy(a).ravel().tolist())\n",
        dir.join(&file).display()
    );
    let o = std::process::Command::new("python3").args(["-c", &script]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "[4, 3, 1] [-1.0, 0.0, 0.0] 6");
    assert_eq!(lines[1], "eta [0.0, 1.0, 2.0, 10.0, 11.0, 12.0]");
    assert_eq!(lines[2], "u [0.5, 1.5, 2.5, 0.5, 1.5, 2.5]");
    assert_eq!(lines[3], "H [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]");
    std::fs::remove_dir_all(dir).unwrap();
}
