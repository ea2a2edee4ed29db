//! What ParaView reads: checkpoint sidecars through VTK's XDMF readers (values against the
//! HDF5 data, and the time), the active fields, time and units of the VTK files, compressed
//! VTK files, the triangles over point clouds, and `scripts/render.py`.
//!
//! The legacy XDMF reader and the VTK XML readers come with VTK's Python package (CI has
//! it); the Xdmf3 reader only with ParaView, so that part runs where `pvpython` is found.

mod common;
use common::*;

use std::path::{Path, PathBuf};

use sim::io::checkpoint;
use sim::solvers::lskum::cloud::{Cloud, NONE, OUTER, WALL};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// ParaView's own interpreter, where it has the Xdmf3 reader.
fn pvpython() -> Option<&'static str> {
    let ok = std::process::Command::new("pvpython")
        .args(["-c", "import vtkmodules.vtkIOXdmf3"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("note: pvpython (ParaView) not found; the Xdmf3 reader part is skipped");
    }
    ok.then_some("pvpython")
}

/// Run a Python script and parse the JSON it prints last.
fn py_json(interp: &str, args: &[&str]) -> serde_json::Value {
    let o = std::process::Command::new(interp).args(args).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{interp} {args:?} failed:\n{}\n{out}", stderr(&o));
    let line = out.lines().rev().find(|l| l.starts_with('{')).unwrap_or_else(|| panic!("no JSON from {args:?}: {out}"));
    serde_json::from_str(line).unwrap()
}

fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

fn assert_bitwise(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: number of values");
    if let Some(k) = (0..got.len()).find(|&k| got[k].to_bits() != want[k].to_bits()) {
        panic!("{what}: value {k} is {} but the HDF5 data has {}", got[k], want[k]);
    }
}

fn cloud_case(name: &str, time: &str, extra: &str) -> String {
    format!(
        "name: {name}\nsolver:\n  lskum: {{cloud: {ROOT}/meshes/naca0012_9600_legacy.txt, mach: 0.63, aoa: 2.0}}\n\
         time: {time}\n{extra}\n"
    )
}

/// Runs with two checkpoints each: heat1d, heat2d (f64, f32), cavity, lskum.
fn checkpointed_runs(dir: &Path) -> Vec<PathBuf> {
    let ck = "checkpoint: {every_steps: 2, keep: 5}";
    let cases = [
        ("h1", heat_case("h1", "heat1d: {n: 33, r: 0.4}", "f64", "{end_step: 4}", ck)),
        ("h2", heat_case("h2", "heat2d: {n: 17, r: 0.2}", "f64", "{end_step: 4}", ck)),
        ("h2f", heat_case("h2f", "heat2d: {n: 13, r: 0.2}", "f32", "{end_step: 4}", ck)),
        ("c", heat_case("c", "cavity: {n: 17, re: 100}", "f64", "{end_step: 4}", ck)),
        ("l", cloud_case("l", "{end_step: 4}", ck)),
    ];
    cases
        .iter()
        .map(|(name, text)| {
            write(dir, &format!("{name}.yaml"), text);
            ok(sim(dir, &["run", &format!("{name}.yaml"), "--quiet"]));
            dir.join("out").join(name)
        })
        .collect()
}

/// Every sidecar, read by `reader`, gives the checkpoint's arrays bitwise and its time.
fn check_sidecars(runs: &[PathBuf], interp: &str, reader: &str) {
    let script = format!("{ROOT}/tests/read_xdmf.py");
    for run in runs {
        let cks = checkpoint::list(run);
        assert_eq!(cks.len(), 2, "{}", run.display());
        let mut times = Vec::new();
        for (step, h5) in cks {
            let xmf = h5.with_extension("xmf");
            let text = std::fs::read_to_string(&xmf).unwrap();
            let (meta, arrays) = checkpoint::read(&h5).unwrap();
            let got = py_json(interp, &[&script, reader, xmf.to_str().unwrap()]);
            let what = |name: &str| format!("{reader} reader, {}: {name}", xmf.display());
            let mut listed = 0;
            for a in &arrays {
                if !text.contains(&format!("<Attribute Name=\"{}\"", a.name)) {
                    continue;
                }
                listed += 1;
                let values = got["point"].get(&a.name).or(got["cell"].get(&a.name));
                let values = values.unwrap_or_else(|| panic!("{} missing: {got}", what(&a.name)));
                assert_bitwise(&floats(values), &a.values.to_f64(), &what(&a.name));
            }
            assert!(listed >= 1, "{}: no attribute", xmf.display());
            // The time: simulated, or the iteration under pseudo-time (as in the .pvd).
            let want = if meta.solver == "lskum" { step as f64 } else { meta.time };
            assert_eq!(got["times"], serde_json::json!([want]), "{}: time", what("time"));
            times.push(want);
        }
        assert!(times[0] < times[1], "{}: checkpoints at distinct times {times:?}", run.display());
    }
}

#[test]
fn checkpoint_sidecars_give_the_hdf5_values_and_the_time() {
    if !python_has("vtkmodules.vtkIOXdmf2") {
        return;
    }
    let dir = scratch("pv_xdmf");
    let runs = checkpointed_runs(&dir);
    check_sidecars(&runs, "python3", "legacy");
    if let Some(pv) = pvpython() {
        check_sidecars(&runs, pv, "xdmf3");
        // The group of a run's sidecars opens as a time series of its checkpoints.
        let script = "import glob, json, sys\nfrom paraview.simple import OpenDataFile\n\
                      s = OpenDataFile(sorted(glob.glob(sys.argv[1] + '/checkpoint_*.xmf')))\n\
                      s.UpdatePipelineInformation()\nt = s.TimestepValues\n\
                      print(json.dumps(list(t) if hasattr(t, '__len__') else [t]))";
        let got = std::process::Command::new(pv).args(["-c", script, runs[1].to_str().unwrap()]).output().unwrap();
        let times: Vec<f64> = serde_json::from_str(String::from_utf8_lossy(&got.stdout).lines().last().unwrap()).unwrap();
        let want: Vec<f64> = checkpoint::list(&runs[1]).iter().map(|(_, p)| checkpoint::read(p).unwrap().0.time).collect();
        assert_eq!(times, want, "the checkpoint group in ParaView");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// What VTK's XML reader says about one file: active fields, time steps, cells, values.
const READ_XML: &str = r#"
import json, sys
from vtkmodules.vtkIOXML import vtkXMLImageDataReader, vtkXMLUnstructuredGridReader
from vtkmodules.vtkCommonExecutionModel import vtkStreamingDemandDrivenPipeline as S
from vtkmodules.util.numpy_support import vtk_to_numpy
path = sys.argv[1]
r = vtkXMLImageDataReader() if path.endswith('.vti') else vtkXMLUnstructuredGridReader()
r.SetFileName(path); r.UpdateInformation()
info = r.GetOutputInformation(0)
times = list(info.Get(S.TIME_STEPS())) if info.Has(S.TIME_STEPS()) else None
r.Update(); o = r.GetOutput(); pd = o.GetPointData()
name = lambda a: a.GetName() if a is not None else None
types = sorted(set(o.GetCellType(k) for k in range(o.GetNumberOfCells())))
units = o.GetFieldData().GetAbstractArray('units')
print(json.dumps({'scalars': name(pd.GetScalars()), 'vectors': name(pd.GetVectors()), 'times': times,
                  'units': units.GetValue(0) if units is not None else None,
                  'cells': o.GetNumberOfCells(), 'cell_types': types,
                  'arrays': {pd.GetArrayName(k): vtk_to_numpy(pd.GetArray(k)).astype('float64').ravel().tolist()
                             for k in range(pd.GetNumberOfArrays()) if sys.argv[2:] == ['values']}}))
"#;

fn read_xml(path: &Path, values: bool) -> serde_json::Value {
    let mut args = vec!["-c", READ_XML, path.to_str().unwrap()];
    if values {
        args.push("values");
    }
    py_json("python3", &args)
}

#[test]
fn vtk_files_name_their_main_fields_and_carry_the_time() {
    if !python_has("vtkmodules.vtkIOXML") {
        return;
    }
    let dir = scratch("pv_active");
    write(&dir, "c.yaml", &heat_case("c", "cavity: {n: 17, re: 100}", "f64", "{end_step: 6}", "output: {every_steps: 3}"));
    write(&dir, "h.yaml", &heat_case("h", "heat2d: {n: 17, r: 0.2}", "f64", "{end_time: 0.01}", "output: {every_time: 0.005}"));
    write(&dir, "l.yaml", &cloud_case("l", "{end_step: 2}", "output: {every_steps: 1}"));
    for name in ["c", "h", "l"] {
        ok(sim(&dir, &["run", &format!("{name}.yaml"), "--quiet"]));
    }
    // The second entry of each series: its file and time.
    let second = |run: &str| -> (String, f64) {
        let text = std::fs::read_to_string(dir.join("out").join(run).join(format!("{run}.pvd"))).unwrap();
        let line = text.lines().filter(|l| l.contains("<DataSet")).nth(1).unwrap();
        let attr = |a: &str| line.split(&format!("{a}=\"")).nth(1).unwrap().split('"').next().unwrap().to_string();
        (attr("file"), attr("timestep").parse().unwrap())
    };
    for (run, scalars, vectors, units) in [
        ("c", "p", Some("velocity"), "p: pressure / density"),
        ("h", "T", None, "T: temperature"),
        ("l", "Mach", Some("velocity"), "free stream 1/gamma"),
    ] {
        let (file, time) = second(run);
        let got = read_xml(&dir.join("out").join(run).join(&file), false);
        // What the fields mean, in the file (ParaView: Information, Field Data).
        assert!(got["units"].as_str().is_some_and(|u| u.contains(units)), "{file}: {}", got["units"]);
        assert_eq!(got["scalars"], scalars, "{file}: {got}");
        assert_eq!(got["vectors"].as_str(), vectors, "{file}: {got}");
        // Opened without the .pvd, the file still has its time.
        assert_eq!(got["times"], serde_json::json!([time]), "{file}: {got}");
        assert!(time > 0.0);
    }
    // Point clouds: triangles, not one vertex per point.
    let got = read_xml(&dir.join("out/l/l_00000002.vtu"), false);
    assert_eq!(got["cell_types"], serde_json::json!([5]), "{got}");
    assert!(got["cells"].as_u64().unwrap() > 18_000, "{got}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn compressed_vtk_files_read_back_bitwise() {
    if !python_has("vtkmodules.vtkIOXML") {
        return;
    }
    let dir = scratch("pv_compress");
    // 601^2 nodes: several 1 MiB blocks per array in f64 and f32, the last one partial.
    for precision in ["f64", "f32"] {
        let mut reference: Option<(Vec<f64>, u64)> = None;
        for compression in ["none", "zlib", "lz4"] {
            let name = format!("h_{precision}_{compression}");
            let case = heat_case(
                &name,
                "heat2d: {n: 601, r: 0.2}",
                precision,
                "{end_step: 1}",
                &format!("output: {{every_steps: 1, compression: {compression}}}"),
            );
            write(&dir, "h.yaml", &case);
            ok(sim(&dir, &["run", "h.yaml", "--quiet"]));
            let file = dir.join("out").join(&name).join(format!("{name}_00000001.vti"));
            let head = String::from_utf8_lossy(&std::fs::read(&file).unwrap()[..200]).into_owned();
            let size = std::fs::metadata(&file).unwrap().len();
            let got = read_xml(&file, true);
            let t = floats(&got["arrays"]["T"]);
            assert_eq!(t.len(), 601 * 601);
            match &reference {
                None => {
                    assert!(!head.contains("compressor"), "{head}");
                    reference = Some((t, size));
                }
                Some((want, raw)) => {
                    let c = if compression == "zlib" { "vtkZLibDataCompressor" } else { "vtkLZ4DataCompressor" };
                    assert!(head.contains(&format!("compressor=\"{c}\"")), "{head}");
                    assert_bitwise(&t, want, &format!("{precision} {compression} T"));
                    assert!(size < *raw, "{compression}: {size} bytes, raw {raw}");
                }
            }
        }
    }
    // A compressed point cloud with its triangles.
    write(&dir, "l.yaml", &cloud_case("l", "{end_step: 1}", "output: {every_steps: 1, compression: lz4}"));
    ok(sim(&dir, &["run", "l.yaml", "--quiet"]));
    let got = read_xml(&dir.join("out/l/l_00000001.vtu"), true);
    assert_eq!(got["cell_types"], serde_json::json!([5]), "{}", got["cell_types"]);
    assert_eq!(floats(&got["arrays"]["point_type"]).len(), 9600);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Points of the closed boundary curve through `start`, following the right neighbours.
fn curve(c: &Cloud, start: usize) -> Vec<[f64; 2]> {
    let mut v = vec![start];
    let mut k = c.right[start];
    while k != NONE && k as usize != start {
        v.push(k as usize);
        k = c.right[k as usize];
        assert!(v.len() <= c.len(), "open curve");
    }
    v.iter().map(|&i| [c.x[i], c.y[i]]).collect()
}

fn polygon_area(p: &[[f64; 2]]) -> f64 {
    (0..p.len()).map(|k| {
        let (a, b) = (p[k], p[(k + 1) % p.len()]);
        0.5 * (a[0] * b[1] - b[0] * a[1])
    })
    .sum::<f64>()
    .abs()
}

fn inside(p: &[[f64; 2]], q: [f64; 2]) -> bool {
    let mut c = false;
    for k in 0..p.len() {
        let (a, b) = (p[k], p[(k + 1) % p.len()]);
        if (a[1] > q[1]) != (b[1] > q[1]) && q[0] < a[0] + (q[1] - a[1]) / (b[1] - a[1]) * (b[0] - a[0]) {
            c = !c;
        }
    }
    c
}

fn check_surface(c: &Cloud, what: &str) {
    let tris = sim::solvers::lskum::surface::triangulate(c).unwrap();
    let wall = curve(c, (0..c.len()).find(|&i| c.flag[i] == WALL).unwrap());
    let outer = curve(c, (0..c.len()).find(|&i| c.flag[i] == OUTER).unwrap());
    let mut used = vec![false; c.len()];
    let mut area = 0.0;
    for t in &tris {
        let [a, b, d] = t.map(|k| [c.x[k as usize], c.y[k as usize]]);
        let twice = (b[0] - a[0]) * (d[1] - a[1]) - (b[1] - a[1]) * (d[0] - a[0]);
        assert!(twice > 0.0, "{what}: triangle {t:?} is not counter-clockwise");
        area += 0.5 * twice;
        let centroid = [(a[0] + b[0] + d[0]) / 3.0, (a[1] + b[1] + d[1]) / 3.0];
        assert!(!inside(&wall, centroid), "{what}: triangle {t:?} lies inside the aerofoil");
        t.iter().for_each(|&k| used[k as usize] = true);
    }
    // The triangles tile the region between the far field and the body.
    let domain = polygon_area(&outer) - polygon_area(&wall);
    assert!((area - domain).abs() <= 1e-9 * domain, "{what}: triangles cover {area}, the domain is {domain}");
    assert!(used.iter().all(|&u| u), "{what}: every point is a vertex");
    assert!(wall.len() > 50 && outer.len() > 20, "{what}: wall and far field found");
}

#[test]
fn cloud_triangles_cover_the_domain_and_leave_the_aerofoil_empty() {
    use sim::mesh::cloud_file::load;
    let legacy = load(Path::new(&format!("{ROOT}/meshes/naca0012_9600_legacy.txt")), Default::default()).unwrap();
    check_surface(&legacy, "9600-point reference cloud");
    let generated = sim::mesh::ogrid::ogrid(&sim::mesh::ogrid::OGrid { ni: 80, nj: 30, ..Default::default() }).unwrap();
    check_surface(&generated, "generated 80 x 30 O-grid");
    let quadtree = sim::mesh::quadtree::quadtree_points(20_000, 0.12, sim::mesh::naca::Closure::Scaled, 10.0).unwrap();
    check_surface(&quadtree, "generated quadtree cloud");
}

/// Share of the PNG's pixels that are the white background, the number of distinct colours,
/// and whether the pixel at model point (x, y) is background.
const PNG_STATS: &str = r#"
import json, sys
from vtkmodules.vtkIOImage import vtkPNGReader
from vtkmodules.util.numpy_support import vtk_to_numpy
r = vtkPNGReader(); r.SetFileName(sys.argv[1]); r.Update(); img = r.GetOutput()
w, h, _ = img.GetDimensions()
px = vtk_to_numpy(img.GetPointData().GetScalars())[:, :3].reshape(h, w, 3)
white = (px == 255).all(axis=2)
view = json.loads(sys.argv[2])
def at(x, y):
    s = view['half_height']
    i = int(round(w / 2 + (x - view['centre'][0]) / s * h / 2))
    j = int(round(h / 2 + (y - view['centre'][1]) / s * h / 2))
    return bool(white[j, i])
probes = json.loads(sys.argv[3])
print(json.dumps({'size': [w, h], 'background': float(white.mean()),
                  'colours': len(set(map(tuple, px.reshape(-1, 3).tolist()))),
                  'probes': [at(x, y) for x, y in probes]}))
"#;

#[test]
fn render_script_draws_the_last_step_of_each_solver() {
    if !python_has("vtkmodules.vtkRenderingOpenGL2, vtkmodules.vtkIOXML") {
        return;
    }
    let dir = scratch("pv_render");
    write(&dir, "h1.yaml", &heat_case("h1", "heat1d: {n: 65, r: 0.4}", "f64", "{end_step: 50}", ""));
    write(&dir, "h2.yaml", &heat_case("h2", "heat2d: {n: 33, r: 0.2}", "f64", "{end_step: 10}", ""));
    write(&dir, "c.yaml", &heat_case("c", "cavity: {n: 33, re: 100}", "f64", "{end_step: 200}", ""));
    write(&dir, "l.yaml", &cloud_case("l", "{end_step: 20}", ""));
    // A domain of kilometres (the camera's distance follows the picture's size).
    let swe = "shallow_water: {scheme: fbl, nx: 50, ny: 70, dx: 200.0, dt: 1.0, bathymetry: {flat: 60.0}, \
               initial: {bump: {position: central}}}";
    write(&dir, "s.yaml", &heat_case("s", swe, "f32", "{end_step: 10}", ""));
    let script = format!("{ROOT}/scripts/render.py");
    for (run, field, vectors, last) in [
        ("h1", "T", None, "h1_00000050.vti"),
        ("h2", "T", None, "h2_00000010.vti"),
        ("c", "p", Some("velocity"), "c_00000200.vti"),
        ("l", "Mach", Some("velocity"), "l_00000020.vtu"),
        ("s", "eta", Some("velocity"), "s_00000010.vti"),
    ] {
        ok(sim(&dir, &["run", &format!("{run}.yaml"), "--quiet"]));
        let png = dir.join(format!("{run}.png"));
        let run_dir = dir.join("out").join(run);
        let got = py_json("python3", &[&script, run_dir.to_str().unwrap(), "--out", png.to_str().unwrap(), "--size", "400x300"]);
        assert_eq!(got["field"], field, "{got}");
        assert_eq!(got["vectors"].as_str(), vectors, "{got}");
        assert!(got["file"].as_str().unwrap().ends_with(last), "the last step: {got}");
        // On the aerofoil (mid-chord) the picture is empty; above it the field is drawn.
        let probes = if run == "l" { "[[0.5, 0.0], [0.5, 0.3]]" } else { "[]" };
        let stats = py_json("python3", &["-c", PNG_STATS, png.to_str().unwrap(), &got["view"].to_string(), probes]);
        assert_eq!(stats["size"], serde_json::json!([400, 300]), "{stats}");
        assert!(stats["colours"].as_u64().unwrap() > 20, "{run}: a coloured field: {stats}");
        // (heat1d is drawn as a graph: a line on the background)
        let most = if run == "h1" { 0.995 } else { 0.9 };
        assert!(stats["background"].as_f64().unwrap() < most, "{run}: {stats}");
        if run == "l" {
            assert_eq!(stats["probes"], serde_json::json!([true, false]), "{run}: aerofoil left empty: {stats}");
        }
    }
    // ParaView's batch interpreter under a virtual X server, as the README says.
    let pvbatch = std::process::Command::new("xvfb-run").args(["-a", "pvbatch", "--version"]).output();
    if pvbatch.is_ok_and(|o| o.status.success()) {
        let png = dir.join("c_pvbatch.png");
        let o = std::process::Command::new("xvfb-run")
            .args(["-a", "pvbatch", &script, dir.join("out/c").to_str().unwrap(), "--out", png.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success() && png.is_file(), "xvfb-run pvbatch: {}", stderr(&o));
    } else {
        eprintln!("note: xvfb-run or pvbatch not found; render.py under pvbatch skipped");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// The plotting scripts the README names write their pictures from small runs of their
/// solvers (an lskum history has empty cells: no time, no residue at step 0), and a directory
/// without a run is a message, not a traceback.
#[test]
fn plot_scripts_write_their_pictures() {
    if !python_has("matplotlib, vtk, h5py") {
        return;
    }
    let dir = scratch("pv_plots");
    write(&dir, "l.yaml", &cloud_case("l", "{end_step: 5}", ""));
    write(&dir, "c.yaml", &heat_case("c", "cavity: {n: 17, re: 100}", "f64", "{end_step: 50}", ""));
    let swe = "shallow_water: {scheme: fbl, nx: 20, ny: 30, dx: 200.0, dt: 1.0, bathymetry: {flat: 60.0}, \
               initial: {bump: {position: central}}}";
    write(&dir, "s.yaml", &heat_case("s", swe, "f32", "{end_step: 10}", "output: {every_steps: 5}"));
    for (run, script, args, pngs) in [
        ("l", "plot_lskum.py", &[][..], &["residue.png", "cp.png"][..]),
        ("c", "plot_cavity.py", &[][..], &["cavity_profiles.png", "cavity_vorticity.png"][..]),
        ("s", "plot_swe.py", &["--hovmoller"][..], &["swe_eta.png", "swe_hovmoller.png"][..]),
    ] {
        ok(sim(&dir, &["run", &format!("{run}.yaml"), "--quiet"]));
        let out = dir.join("out").join(run);
        let script = format!("{ROOT}/scripts/{script}");
        let o = std::process::Command::new("python3").arg(&script).arg(&out).args(args).output().unwrap();
        assert!(o.status.success(), "{script}: {}", stderr(&o));
        for png in pngs {
            assert!(std::fs::metadata(out.join(png)).is_ok_and(|m| m.len() > 1000), "{script}: {png}");
        }
        let o = std::process::Command::new("python3").arg(&script).arg(dir.join("nothere")).output().unwrap();
        assert!(!o.status.success() && !stderr(&o).contains("Traceback"), "{script}: {}", stderr(&o));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// The README's compression figures: one `heat2d_large` output (4096^2 nodes, f64, `T` and
/// `T_exact` of the initial state) written with each compression, median of three.
/// `cargo test --release --test paraview -- --ignored --nocapture compression_figures`
#[test]
#[ignore]
fn compression_figures() {
    use sim::io::output::{Compression, Frame, write};
    use sim::solver::Solver;
    use sim::solvers::heat::{Heat, Heat2dParams};
    let dir = scratch("pv_figures");
    let h = Heat::<f64>::heat2d(&Heat2dParams { n: 4096, ..Default::default() });
    let (mesh, fields) = (h.mesh(), h.output_fields());
    for compression in [Compression::None, Compression::Zlib, Compression::Lz4] {
        let frame = Frame { time: 0.0, compression, triangles: None, units: "" };
        let mut times: Vec<f64> = (0..3)
            .map(|_| {
                let t0 = std::time::Instant::now();
                write(&dir, "large_00000000.vti", &mesh, &fields, &frame).unwrap();
                t0.elapsed().as_secs_f64()
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let bytes = std::fs::metadata(dir.join("large_00000000.vti")).unwrap().len();
        println!("{compression:?}: {bytes} bytes, write {:.2} s (median of {times:.2?})", times[1]);
    }
    std::fs::remove_dir_all(dir).unwrap();
}
