//! `mpirun -np P sim run` (cargo feature `mpi`, Open MPI's mpirun with --oversubscribe): the
//! decomposed runs against the serial run, bit for bit; checkpoints that move between rank
//! counts; the `.pvti` output read by VTK's own reader; bad input refused on every rank.
#![cfg(feature = "mpi")]

mod common;
use common::*;

use std::path::Path;
use std::process::{Command, Output};

/// `sim args` on `np` ranks in `dir`, killed after 120 s (a hang fails the test).
fn mpirun(dir: &Path, np: usize, args: &[&str]) -> Output {
    mpirun_command(dir, np, args).output().unwrap()
}

/// [`mpirun`] with the tests' CUDA driver (the emulated one where there is no GPU) on the
/// library path.
fn mpirun_cuda(dir: &Path, np: usize, args: &[&str]) -> Output {
    let mut c = mpirun_command(dir, np, args);
    if let Some(emulation::Cuda::Emulated(_, emu)) = &emulation::setup().cuda {
        let old = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
        c.env("LD_LIBRARY_PATH", format!("{}:{old}", emu.dir.display()));
    }
    c.output().unwrap()
}

fn mpirun_command(dir: &Path, np: usize, args: &[&str]) -> Command {
    let mut c = Command::new("timeout");
    c
        .args(["120", "mpirun", "--oversubscribe", "-np", &np.to_string(), env!("CARGO_BIN_EXE_sim")])
        .args(args)
        .current_dir(dir)
        // CI containers run as root, which Open MPI refuses unless told.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c
}

/// The step and the bits of every array (ghosts included) of the last checkpoint in `dir/d`.
fn final_bits(dir: &Path, d: &str) -> (u64, Vec<(String, Vec<u64>)>) {
    let (meta, arrays) = sim::io::checkpoint::read(&sim::io::checkpoint::list(&dir.join(d)).pop().unwrap().1).unwrap();
    let bits = arrays.iter().map(|a| (a.name.clone(), a.values.to_f64().iter().map(|v| v.to_bits()).collect()));
    (meta.step, bits.collect())
}

fn heat2d(precision: &str, extra: &str) -> String {
    heat_case(
        "h",
        "heat2d: {n: 61, r: 0.24}",
        precision,
        "{end_step: 40}",
        &format!("output: {{every_steps: 15}}\ncheckpoint: {{every_steps: 20}}\nguard: {{check_every: 7}}\n{extra}"),
    )
}

/// P = 1, 2, 3, 4 (a 2 x 2 grid) and the process grids [4, 1] and [1, 4] give the serial
/// run's field bitwise, in f64 and f32 (61 nodes: blocks of unequal widths).
#[test]
fn decomposed_heat2d_equals_the_serial_run_bitwise() {
    let dir = scratch("mpi_heat2d");
    for precision in ["f64", "f32"] {
        let runs: [(usize, &str); 6] =
            [(1, ""), (2, ""), (3, ""), (4, ""), (4, "parallel: {ranks: [4, 1]}"), (4, "parallel: {ranks: [1, 4]}")];
        write(&dir, "serial.yaml", &heat2d(precision, ""));
        ok(sim(&dir, &["run", "serial.yaml", "--quiet", "--overwrite", "--out", "serial"]));
        let serial = final_bits(&dir, "serial");
        assert_eq!(serial.0, 40);
        for (np, extra) in runs {
            write(&dir, "case.yaml", &heat2d(precision, extra));
            let o = ok(mpirun(&dir, np, &["run", "case.yaml", "--overwrite", "--out", "p"]));
            let out = String::from_utf8_lossy(&o.stdout);
            if np > 1 {
                assert!(out.contains(&format!("{np} MPI ranks")), "{out}");
            }
            assert!(final_bits(&dir, "p") == serial, "{precision} on {np} ranks {extra}: the field differs");
            // The history's steps and times are the serial run's (its sums may differ in the
            // last bits: other order).
            let steps = |d: &str| -> Vec<String> {
                let h = std::fs::read_to_string(dir.join(d).join("history.csv")).unwrap();
                h.lines().map(|l| l.split(',').take(2).collect::<Vec<_>>().join(",")).collect()
            };
            assert_eq!(steps("p"), steps("serial"), "{np} ranks");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A checkpoint written on 4 ranks restarts on 2, whose checkpoint restarts without MPI:
/// bitwise the uninterrupted serial run.
#[test]
fn checkpoints_move_between_rank_counts() {
    moves_between_rank_counts("mpi_restart", &heat2d("f64", ""));
}

/// `case` run on 4 ranks for 7 steps, continued on 2 for 6, then without MPI to its end: the
/// serial run's checkpoints at step 13 and at the end, bit for bit.
fn moves_between_rank_counts(test: &str, case: &str) {
    let dir = scratch(test);
    write(&dir, "case.yaml", case);
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "serial"]));
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "serial13", "--steps", "13"]));
    ok(mpirun(&dir, 4, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "r", "--steps", "7"]));
    ok(mpirun(&dir, 2, &["run", "--restart", "r", "--quiet", "--steps", "6"]));
    assert!(final_bits(&dir, "r") == final_bits(&dir, "serial13"), "4 -> 2 ranks differs from the serial run");
    ok(sim(&dir, &["run", "--restart", "r", "--quiet"]));
    assert!(final_bits(&dir, "r") == final_bits(&dir, "serial"), "4 -> 2 -> 1 ranks differs from the serial run");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Each output step is a `.pvti` of the ranks' pieces, listed in the `.pvd`; VTK's reader
/// assembles it into the serial run's image, array for array: heat2d's point data and shallow
/// water's cell data (whose vorticity reads the cells beside each piece).
#[test]
fn pvti_output_reads_as_the_serial_vti() {
    if !python_has("vtk") {
        return;
    }
    let dir = scratch("mpi_pvti");
    write(&dir, "case.yaml", &heat2d("f32", ""));
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "serial"]));
    ok(mpirun(&dir, 4, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "p", "--steps", "30"]));
    let pvd = std::fs::read_to_string(dir.join("p/h.pvd")).unwrap();
    assert!(pvd.contains("file=\"h_00000015.pvti\""), "{pvd}");
    same_images(&dir, "h", &["00000000", "00000015", "00000030"], &["T", "T_exact"]);
    write(&dir, "case.yaml", &shallow_water("kp07", "f32", "wall", "periodic", ""));
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "serial"]));
    ok(mpirun(&dir, 4, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "p"]));
    let cells = ["eta", "hu", "hv", "velocity", "depth", "bathymetry", "speed", "vorticity"];
    same_images(&dir, "sw", &["00000000", "00000015", "00000030"], &cells);
    std::fs::remove_dir_all(dir).unwrap();
}

/// VTK's readers give the same image, arrays `names` bit for bit, from `serial/<name>_<step>.vti`
/// as from the pieces of `p/<name>_<step>.pvti`, at each of `steps`; and each piece alone holds
/// the serial values over its extent (the border nodes it shares with a neighbour too, which
/// the assembled image may take from the neighbour).
fn same_images(dir: &Path, name: &str, steps: &[&str], names: &[&str]) {
    let script = r#"
import os, sys, vtk
import xml.etree.ElementTree as ET
from vtk.util.numpy_support import vtk_to_numpy as v
import numpy as np
def read(reader, path):
    r = reader(); r.SetFileName(path); r.Update(); return r.GetOutput()
a = read(vtk.vtkXMLImageDataReader, sys.argv[1])
b = read(vtk.vtkXMLPImageDataReader, sys.argv[2])
assert a.GetDimensions() == b.GetDimensions() and a.GetOrigin() == b.GetOrigin() and a.GetSpacing() == b.GetSpacing()
# A piece file reads as the whole extent with its own extent filled in.
at = os.path.dirname(sys.argv[2])
pieces = [([*map(int, p.get("Extent").split())], read(vtk.vtkXMLImageDataReader, os.path.join(at, p.get("Source"))))
          for p in ET.parse(sys.argv[2]).iter("Piece")]
nx, ny, _ = a.GetDimensions()
for name in sys.argv[3].split(","):
    # Point data, or cell data (one entry fewer per axis, a piece's cells up to its last point).
    e = 1 if a.GetPointData().GetArray(name) else 0
    data = (lambda d: d.GetPointData()) if e else (lambda d: d.GetCellData())
    x, y = v(data(a).GetArray(name)), v(data(b).GetArray(name))
    assert x.dtype == y.dtype and np.array_equal(x, y), name
    m = (ny - 1 + e, nx - 1 + e, -1)
    for (x0, x1, y0, y1, _, _), piece in pieces:
        z = v(data(piece).GetArray(name)).reshape(m)[y0:y1 + e, x0:x1 + e]
        assert np.array_equal(x.reshape(m)[y0:y1 + e, x0:x1 + e], z), (name, x0, y0)
assert b.GetFieldData().GetArray("TimeValue").GetValue(0) == a.GetFieldData().GetArray("TimeValue").GetValue(0)
print("same")
"#;
    for step in steps {
        let (s, p) = (format!("serial/{name}_{step}.vti"), format!("p/{name}_{step}.pvti"));
        let args = ["-c", script, &s, &p, &names.join(",")];
        let o = Command::new("python3").args(args).current_dir(dir).output().unwrap();
        assert!(String::from_utf8_lossy(&o.stdout).contains("same"), "step {step}: {}", stderr(&o));
    }
}

/// Bad input under mpirun: every rank exits with 2, one message names the problem, nothing
/// hangs (mpirun is killed after 120 s).
#[test]
fn bad_input_stops_every_rank_with_one_message() {
    let dir = scratch("mpi_bad");
    let case = |solver: &str, extra: &str| heat_case("b", solver, "f64", "{end_step: 5}", extra);
    let cases = [
        ("unknown key", case("heat2d: {n: 33, r: 0.2, bogus: 1}", ""), "bogus"),
        ("ranks", case("heat2d: {n: 33, r: 0.2}", "parallel: {ranks: [3, 1]}"), "parallel.ranks"),
        ("method", case("heat2d: {n: 33, r: 2.0, method: adi}", ""), "solver heat2d with method adi does not run on several MPI ranks"),
        ("narrow", case("heat2d: {n: 7, r: 0.2}", "parallel: {ranks: [4, 1]}"), "narrower"),
        ("sponge", shallow_water("kp07", "f64", "wall", "{sponge: {cells: 9}}", "parallel: {ranks: [4, 1]}"), "than 10"),
    ];
    refused_on_4_ranks(&dir, &cases);
    std::fs::remove_dir_all(dir).unwrap();
}

/// A restart from a checkpoint that crashes the HDF5 library (walked in a child process
/// before MPI starts) is refused on every rank with one message, its directory unchanged.
#[test]
fn a_damaged_checkpoint_is_refused_on_every_rank() {
    let dir = scratch("mpi_damaged");
    write(&dir, "case.yaml", &heat2d("f64", ""));
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--steps", "20"]));
    let path = dir.join("out/h/checkpoint_00000020.h5");
    std::fs::write(&path, damaged_heap(&std::fs::read(&path).unwrap(), HeapDamage::Crash)).unwrap();
    let before = snapshot(&dir.join("out/h"));
    let args = ["run", "--restart", "out/h/checkpoint_00000020.h5", "--quiet"];
    for (np, o) in [(1, sim(&dir, &args)), (1, mpirun(&dir, 1, &args)), (3, mpirun(&dir, 3, &args))] {
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{np} ranks: {err}");
        assert_eq!(err.matches("error:").count(), 1, "{np} ranks: one message: {err}");
        assert!(err.contains("checkpoint_00000020.h5") && err.contains("the file is damaged"), "{np} ranks: {err}");
        assert_eq!(before, snapshot(&dir.join("out/h")), "{np} ranks: the run directory changed");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Each `(what, case text, needle)` on 4 ranks: exit 2 on every rank, one message that contains
/// the needle, nothing written.
/// Refused by `sim run` and by `sim check` on 4 ranks.
fn refused_on_4_ranks(dir: &Path, cases: &[(&str, String, &str)]) {
    for (what, text, needle) in cases {
        write(dir, "b.yaml", text);
        for args in [&["run", "b.yaml", "--overwrite"][..], &["check", "b.yaml"]] {
            let o = mpirun(dir, 4, args);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{what} {args:?}: {err}");
            assert_eq!(err.matches("error:").count(), 1, "{what} {args:?}: one message: {err}");
            assert!(err.contains(needle), "{what} {args:?}: {err}");
        }
    }
    // Refused before anything is written.
    assert!(!dir.join("out").exists());
}

/// The commands other than `sim run` run as one process: `sim check` under a launcher checks
/// the case on its ranks and reports their grid once; `sim bench` refuses (it measured one
/// process per rank, competing for the cores).
#[test]
fn check_reports_the_process_grid_and_bench_refuses() {
    let dir = scratch("mpi_check");
    write(&dir, "c.yaml", &heat_case("c", "heat2d: {n: 33, r: 0.2}", "f64", "{end_step: 5}", ""));
    let o = mpirun(&dir, 4, &["check", "c.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.matches("MPI: 4 ranks on a 2 x 2 process grid").count(), 1, "{out}");
    assert_eq!(out.matches("case c:").count(), 1, "{out}");
    // The memory of one rank's part, a quarter of the serial check's.
    let serial = String::from_utf8_lossy(&sim(&dir, &["check", "c.yaml"]).stdout).to_string();
    let mib = |text: &str, after: &str| -> f64 {
        text.split(after).nth(1).and_then(|t| t.split(" MiB").next()).and_then(|t| t.trim().parse().ok()).unwrap()
    };
    let whole = mib(&serial, "memory: ");
    assert!(out.contains("on each of 4 ranks") && mib(&out, "whole case's ") == whole, "{out}\n{serial}");
    assert!((mib(&out, "memory: ") - whole / 4.0).abs() <= 0.051, "{out}\n{serial}");
    // The serial run blocks its steps in time; a decomposed one steps one at a time.
    assert!(serial.contains("temporal blocking:") && !out.contains("temporal blocking"), "{out}\n{serial}");
    let o = mpirun(&dir, 2, &["bench", "heat2d", "--size", "64", "--seconds", "0.01"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.matches("error: sim bench runs as one process, and the launcher started 2").count(), 1, "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// A checkpoint with a non-finite value at one node: the decomposed restart is refused as the
/// serial one is and names the same global node (the first in the serial scan order over all
/// ranks), with exit code 2 and one message.
#[test]
fn a_nan_in_a_checkpoint_is_named_as_the_serial_run_names_it() {
    let grid = sim::solver::Grid { n: [61, 61], origin: [-1.0, -1.0], spacing: [2.0 / 60.0; 2] };
    // Node (40, 45): on a rank other than 0 in both runs (1 x 2, 2 x 2).
    nan_is_named_as_the_serial_run_names_it("mpi_guard", &heat2d("f64", ""), grid, [40, 45], "in field T at node (40, 45)");
}

/// `case` (on `grid`) run 5 steps, its first array given a NaN at `node`, restarted serially and
/// on 2 and 4 ranks: each is refused with exit code 2 and one message, the decomposed runs
/// naming what the serial run names (which contains `names`).
fn nan_is_named_as_the_serial_run_names_it(test: &str, case: &str, grid: sim::solver::Grid, node: [usize; 2], names: &str) {
    let dir = scratch(test);
    write(&dir, "case.yaml", case);
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "a", "--steps", "5"]));
    let last = sim::io::checkpoint::list(&dir.join("a")).pop().unwrap().1;
    let (meta, mut arrays) = sim::io::checkpoint::read(&last).unwrap();
    let mut v = arrays[0].values.to_f64();
    v[node[1] * grid.n[0] + node[0]] = f64::NAN;
    arrays[0].values = sim::real::Values::F64(v);
    std::fs::create_dir_all(dir.join("nan")).unwrap();
    let mesh = sim::solver::Mesh::Nodes(grid);
    sim::io::checkpoint::write(&dir.join("nan/checkpoint_00000005.h5"), &meta, &arrays, &mesh).unwrap();
    let serial = sim(&dir, &["run", "--restart", "nan/checkpoint_00000005.h5", "--out", "s", "--quiet"]);
    let err = stderr(&serial);
    assert_eq!(serial.status.code(), Some(2), "{err}");
    let what = err.trim_start_matches("error: ").split(';').next().unwrap().to_string();
    assert!(what.contains(names) && what.contains("the state holds the non-finite value NaN"), "{err}");
    for np in [2, 4] {
        let o = mpirun(&dir, np, &["run", "--restart", "nan/checkpoint_00000005.h5", "--out", "p", "--quiet", "--overwrite"]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{np} ranks: {e}");
        assert_eq!(e.matches("error:").count(), 1, "{np} ranks: {e}");
        assert!(e.contains(&what), "{np} ranks: {e}\nserial: {err}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Values that overflow while stepping: the wind's energy is NaN after the first step while the
/// fields are finite. The decomposed run stops at the serial run's step with its message.
#[test]
fn a_history_value_that_is_not_finite_stops_every_rank() {
    let dir = scratch("mpi_windy");
    let windy = "name: w\nsolver:\n  shallow_water: {scheme: fbl, nx: 20, ny: 20, dx: 200.0, dt: 1.0, \
                 wind: [1.0e300, 0.0], bathymetry: {flat: 60.0}, initial: {bump: {position: central}}}\n\
                 precision: f64\ntime: {end_step: 20}\nguard: {check_every: 1}\n";
    write(&dir, "w.yaml", windy);
    let serial = sim(&dir, &["run", "w.yaml", "--quiet", "--out", "s"]);
    assert_eq!(serial.status.code(), Some(1), "{}", stderr(&serial));
    let what = "the diagnostic energy is NaN at step 1";
    assert!(stderr(&serial).contains(what), "{}", stderr(&serial));
    let o = mpirun(&dir, 2, &["run", "w.yaml", "--quiet", "--out", "p"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert_eq!(e.matches("error:").count(), 1, "{e}");
    assert!(e.contains(what), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// A shallow-water case on a 37 x 29 grid (uneven blocks) with every term of the
/// finite-volume schemes at work (beta-plane, friction, wind, GPU Ocean's bathymetry, an
/// off-centre hump, adaptive steps), `ns` and `ew` the north-south and east-west sides.
fn shallow_water(scheme: &str, precision: &str, ns: &str, ew: &str, extra: &str) -> String {
    format!(
        "name: sw
solver:
  shallow_water:
    scheme: {scheme}
    nx: 37
    ny: 29
    dx: 50000.0
    coriolis: {{f0: 1.2e-4, beta: 2.0e-11}}
    friction: 0.001
    wind: [1.0e-4, -2.0e-4]
    courant: 0.4
    bathymetry: gpu_ocean_test
    boundary: {{north: {ns}, south: {ns}, east: {ew}, west: {ew}}}
    initial:
      hump: {{amplitude: 0.1, radius: 400000.0, width: 150000.0, center: [600000.0, 900000.0]}}
precision: {precision}
time: {{end_step: 30}}
output: {{every_steps: 15}}
checkpoint: {{every_steps: 30}}
guard: {{check_every: 7}}
{extra}
"
    )
}

/// CDKLM16 and KP07 on 1 to 4 ranks (2 x 2, 4 x 1, 1 x 4) give the serial run's arrays,
/// ghosts included, bitwise: walls, periodic one way and both ways (across ranks and within
/// one), sponges of both kinds (wide ones with blocks narrow across the other axis); f32 and
/// f64.
#[test]
fn decomposed_finite_volume_shallow_water_equals_the_serial_run_bitwise() {
    let dir = scratch("mpi_swfv");
    let sponges = ("{sponge: {cells: 3, kind: linear}}", "{sponge: {cells: 4}}");
    let all: &[(usize, &str)] =
        &[(1, ""), (2, ""), (3, ""), (4, ""), (4, "parallel: {ranks: [4, 1]}"), (4, "parallel: {ranks: [1, 4]}")];
    let runs = [
        ("cdklm16", "f64", ("wall", "wall"), all),
        ("kp07", "f32", ("periodic", "periodic"), all),
        ("cdklm16", "f32", ("periodic", "wall"), &all[2..4]),
        ("kp07", "f64", ("wall", "periodic"), &all[3..5]),
        ("kp07", "f32", sponges, &all[3..4]),
        ("cdklm16", "f64", sponges, &all[4..6]),
        // East and west sponges need wide blocks across x only: 4 blocks of 7 rows.
        ("kp07", "f64", ("wall", "{sponge: {cells: 9}}"), &all[5..6]),
    ];
    for (scheme, precision, (ns, ew), ranks) in runs {
        write(&dir, "serial.yaml", &shallow_water(scheme, precision, ns, ew, ""));
        ok(sim(&dir, &["run", "serial.yaml", "--quiet", "--overwrite", "--out", "serial"]));
        let serial = final_bits(&dir, "serial");
        assert_eq!((serial.0, serial.1.len()), (30, 3));
        for (np, extra) in ranks {
            write(&dir, "case.yaml", &shallow_water(scheme, precision, ns, ew, extra));
            ok(mpirun(&dir, *np, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "p"]));
            assert!(final_bits(&dir, "p") == serial, "{scheme} {precision} {ns}/{ew} on {np} ranks {extra}: differs");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A case of the finite-difference shallow-water `scheme` (fbl, ctcs) on a 23 x 19 grid (blocks
/// of unequal widths) with every term at work: beta-plane Coriolis, friction, wind, uneven
/// depth, an off-centre hump and (CTCS) eddy viscosity; 20 steps, a checkpoint at the end.
fn fd_case(scheme: &str, precision: &str, compat: bool, boundary: &str, extra: &str) -> String {
    let (dt, viscosity) = if scheme == "ctcs" { (500.0, "viscosity: 2000.0, ") } else { (1000.0, "") };
    let solver = format!(
        "shallow_water: {{scheme: {scheme}, nx: 23, ny: 19, dx: 50000.0, dt: {dt}, {viscosity}\
         coriolis: {{f0: 1.2e-4, beta: 2.0e-11}}, friction: 0.001, wind: [1.0e-4, -2.0e-4], \
         gpu_ocean_compat: {compat}, bathymetry: gpu_ocean_test, boundary: {boundary}, \
         initial: {{hump: {{amplitude: 0.1, radius: 300000.0, width: 100000.0, center: [400000.0, 600000.0]}}}}}}"
    );
    heat_case("sw", &solver, precision, "{end_step: 20}", &format!("checkpoint: {{every_steps: 20}}\n{extra}"))
}

const WALLS: &str = "{}";
const PERIODIC: &str = "{north: periodic, south: periodic, east: periodic, west: periodic}";
const PERIODIC_NS: &str = "{north: periodic, south: periodic}";
const PERIODIC_EW: &str = "{east: periodic, west: periodic}";
const SPONGES: &str = "{north: {sponge: {cells: 3}}, east: {sponge: {cells: 2}}, \
                       south: {sponge: {cells: 3}}, west: {sponge: {cells: 2}}}";
const SPONGES_NS: &str = "{north: {sponge: {cells: 3}}, south: {sponge: {cells: 2}}, east: periodic, west: periodic}";
const SPONGES_EW: &str = "{north: periodic, south: periodic, east: {sponge: {cells: 3}}, west: {sponge: {cells: 2}}}";

/// `scheme` on P ranks against the serial run, every array of the checkpoint bit for bit, over
/// a representative part of boundaries x process grids x precisions x `gpu_ocean_compat`:
/// each boundary on process grids that split a periodic axis (where the exchange takes the
/// place of the periodic copy) and on ones that leave it to one rank.
fn decomposed_fd_equals_the_serial_run(scheme: &str) {
    let dir = scratch(&format!("mpi_{scheme}"));
    let grids: [(usize, &str); 7] = [
        (2, ""),
        (3, ""),
        (4, ""),
        (4, "parallel: {ranks: [4, 1]}"),
        (4, "parallel: {ranks: [1, 4]}"),
        (2, "parallel: {ranks: [1, 2]}"),
        (1, ""),
    ];
    let runs: [(&str, &str, bool, &[usize]); 7] = [
        (WALLS, "f64", true, &[6, 0, 1, 2]),
        (PERIODIC, "f32", true, &[6, 2, 3, 4]),
        (PERIODIC, "f64", false, &[5]),
        (PERIODIC_NS, "f64", false, &[1, 4]),
        (PERIODIC_EW, "f32", true, &[3, 0]),
        (SPONGES, "f64", true, &[2, 3]),
        (SPONGES_NS, "f32", false, &[3]),
    ];
    let mixed = [(SPONGES_EW, "f64", true, &[4, 5][..])];
    for (boundary, precision, compat, on) in runs.into_iter().chain(mixed) {
        write(&dir, "serial.yaml", &fd_case(scheme, precision, compat, boundary, ""));
        ok(sim(&dir, &["run", "serial.yaml", "--quiet", "--overwrite", "--out", "serial"]));
        let serial = final_bits(&dir, "serial");
        assert_eq!(serial.0, 20);
        for &g in on {
            let (np, extra) = grids[g];
            write(&dir, "case.yaml", &fd_case(scheme, precision, compat, boundary, extra));
            ok(mpirun(&dir, np, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "p"]));
            let p = final_bits(&dir, "p");
            let differ: Vec<&str> =
                serial.1.iter().zip(&p.1).filter(|(a, b)| a != b).map(|(a, _)| a.0.as_str()).collect();
            assert!(
                p.0 == serial.0 && p.1.len() == serial.1.len() && differ.is_empty(),
                "{scheme} {precision} compat {compat}, boundary {boundary}, {np} ranks {extra}: {differ:?} differ"
            );
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A shallow-water checkpoint written on 4 ranks restarts on 2, whose checkpoint restarts
/// without MPI: bitwise the uninterrupted serial run (adaptive steps, periodic across ranks).
#[test]
fn shallow_water_checkpoints_move_between_rank_counts() {
    moves_between_rank_counts("mpi_sw_restart", &shallow_water("kp07", "f32", "periodic", "wall", ""));
}

/// A case that reads its bathymetry from a file: a checkpoint of 4 ranks continues on 2 from
/// the copy of the file's array it holds, after the file was replaced by another, as the serial
/// run continues from the file.
#[test]
fn shallow_water_restarts_take_the_file_arrays_from_the_checkpoint() {
    let dir = scratch("mpi_sw_file");
    let (nx, ny) = (37usize, 29usize);
    let write_depth = |shift: f64| {
        let f = hdf5::File::create(dir.join("depth.h5")).unwrap();
        let v: Vec<f64> = (0..nx * ny).map(|k| shift + 3000.0 + 10.0 * (k % nx) as f64 + (k / nx) as f64).collect();
        f.new_dataset::<f64>().shape([ny, nx]).create("depth").unwrap().write_raw(&v).unwrap();
    };
    write_depth(0.0);
    let case = shallow_water("cdklm16", "f64", "wall", "periodic", "")
        .replace("bathymetry: gpu_ocean_test", "bathymetry: {file: {path: depth.h5, dataset: depth}}");
    write(&dir, "case.yaml", &case);
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "serial13", "--steps", "13"]));
    ok(mpirun(&dir, 4, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "r", "--steps", "7"]));
    write_depth(500.0);
    ok(mpirun(&dir, 2, &["run", "--restart", "r", "--quiet", "--steps", "6"]));
    assert!(final_bits(&dir, "r") == final_bits(&dir, "serial13"), "4 -> 2 ranks differs from the serial run");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Explicit heat2d on one (emulated where there is none) GPU per rank, the blocks whole rows,
/// their ghost rows staged through the host: 2, 3 and 4 ranks give the serial CPU run's field
/// bitwise, f32 and f64; a checkpoint of 4 GPU ranks continues on the CPU without MPI; a process
/// grid that splits columns is refused.
#[test]
fn decomposed_heat2d_on_gpus_equals_the_serial_run_bitwise() {
    if emulation::cuda().is_none() {
        return;
    }
    let dir = scratch("mpi_heat2d_cuda");
    for precision in ["f64", "f32"] {
        write(&dir, "serial.yaml", &heat2d(precision, ""));
        ok(sim(&dir, &["run", "serial.yaml", "--quiet", "--overwrite", "--out", "serial"]));
        let serial = final_bits(&dir, "serial");
        write(&dir, "case.yaml", &heat2d(precision, "backend: cuda"));
        for np in [2, 3, 4] {
            let o = ok(mpirun_cuda(&dir, np, &["run", "case.yaml", "--overwrite", "--out", "p"]));
            assert!(String::from_utf8_lossy(&o.stdout).contains("cuda ("), "{}", stderr(&o));
            assert!(final_bits(&dir, "p") == serial, "{precision} on {np} GPU ranks: the field differs");
        }
    }
    ok(mpirun_cuda(&dir, 4, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "r", "--steps", "13"]));
    ok(sim(&dir, &["run", "--restart", "r", "--quiet", "--backend", "cpu"]));
    assert!(final_bits(&dir, "r") == final_bits(&dir, "serial"), "4 GPU ranks -> CPU differs from the serial run");
    write(&dir, "b.yaml", &heat2d("f64", "backend: cuda\nparallel: {ranks: [2, 2]}"));
    let o = mpirun_cuda(&dir, 4, &["run", "b.yaml", "--overwrite", "--out", "b"]);
    assert_eq!((o.status.code(), stderr(&o).matches("error:").count()), (Some(2), 1), "{}", stderr(&o));
    assert!(stderr(&o).contains("parallel.ranks") && stderr(&o).contains("rows"), "{}", stderr(&o));
    // Too few rows for the device's split, which the case did not ask for: named as the device's.
    write(&dir, "small.yaml", &heat_case("s", "heat2d: {n: 5, r: 0.2}", "f64", "{end_step: 5}", "backend: cuda"));
    let o = mpirun_cuda(&dir, 4, &["run", "small.yaml", "--overwrite", "--out", "s"]);
    assert_eq!((o.status.code(), stderr(&o).matches("error:").count()), (Some(2), 1), "{}", stderr(&o));
    assert!(stderr(&o).contains("backend cuda splits the grid in rows only, and [1, 4] leaves"), "{}", stderr(&o));
    std::fs::remove_dir_all(dir).unwrap();
}

/// A restart on another rank count than the `parallel.ranks` of the checkpoint's case says
/// where that value came from.
#[test]
fn a_restart_names_where_its_process_grid_came_from() {
    let dir = scratch("mpi_restart_ranks");
    write(&dir, "case.yaml", &heat2d("f64", "parallel: {ranks: [1, 3]}"));
    ok(mpirun(&dir, 3, &["run", "case.yaml", "--quiet", "--out", "r", "--steps", "5"]));
    let o = mpirun(&dir, 4, &["run", "--restart", "r", "--quiet"]);
    assert_eq!((o.status.code(), stderr(&o).matches("error:").count()), (Some(2), 1), "{}", stderr(&o));
    assert!(stderr(&o).contains("parallel.ranks: [1, 3] is 3 ranks, the run has 4 (on a restart"), "{}", stderr(&o));
    std::fs::remove_dir_all(dir).unwrap();
}

/// FBL on 1 to 4 ranks (2 x 2, 4 x 1, 1 x 4, 1 x 2): the serial run's arrays bitwise, with
/// walls, periodic sides (both axes, one axis, GPU Ocean's skipped corner faces of U) and
/// sponges.
#[test]
fn decomposed_fbl_equals_the_serial_run_bitwise() {
    decomposed_fd_equals_the_serial_run("fbl");
}

/// CTCS likewise, both time levels.
#[test]
fn decomposed_ctcs_equals_the_serial_run_bitwise() {
    decomposed_fd_equals_the_serial_run("ctcs");
}

/// CTCS checkpointed on 4 ranks restarts on 2, whose checkpoint restarts without MPI: both
/// levels carry over, bitwise the uninterrupted serial run.
#[test]
fn decomposed_ctcs_checkpoints_move_between_rank_counts() {
    moves_between_rank_counts("mpi_ctcs_restart", &fd_case("ctcs", "f64", true, PERIODIC, ""));
}

/// A small cavity case: `n` nodes a side (blocks of unequal widths), residual checks every 7
/// steps against `tol`, for at most `steps` steps.
fn cavity(n: usize, precision: &str, tol: &str, steps: u64, extra: &str) -> String {
    heat_case(
        "c",
        &format!("cavity: {{n: {n}, re: 100, residual: {{every: 7, tol: {tol}}}}}"),
        precision,
        &format!("{{end_step: {steps}}}"),
        &format!(
            "backend: cpu\noutput: {{every_steps: 25}}\ncheckpoint: {{every_steps: 30}}\n\
             guard: {{check_every: 7}}\n{extra}"
        ),
    )
}

/// The history of run `d` without the wall time, and its result files: the decomposed run's
/// equal the serial run's (the kinetic energy, a sum in another order, to 10 digits).
fn history_and_results(dir: &Path, d: &str) -> Vec<String> {
    let h = std::fs::read_to_string(dir.join(d).join("history.csv")).unwrap();
    let rows = h.lines().map(|l| {
        let columns: Vec<&str> = l.split(',').collect();
        [&columns[..2], &columns[3..]].concat().join(",")
    });
    let files = ["centreline_u.csv", "centreline_v.csv", "profile_u.csv", "profile_v.csv"];
    rows.chain(files.iter().map(|f| std::fs::read_to_string(dir.join(d).join(f)).unwrap())).collect()
}

/// Cavity run `p` in `dir` is run `serial`: the state bit for bit, the history and result
/// files, the report.
fn assert_same_cavity_run(dir: &Path, what: &str) {
    assert!(final_bits(dir, "p") == final_bits(dir, "serial"), "{what}: the state differs");
    assert_eq!(history_and_results(dir, "p"), history_and_results(dir, "serial"), "{what}");
    assert_eq!(cavity_errors(dir, "p"), cavity_errors(dir, "serial"), "{what}");
}

/// The summary's errors without what depends on the decomposition.
fn cavity_errors(dir: &Path, d: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join(d).join("summary.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut errors = v["errors"].take();
    for key in ["temporal_block", "ranks", "halo_exchange_share"] {
        errors.as_object_mut().unwrap().remove(key);
    }
    serde_json::json!({"status": v["status"], "step": v["step"], "errors": errors})
}

/// The cavity on P = 1, 2, 3, 4 (2 x 2) ranks and on the process grids [4, 1] and [1, 4] gives
/// the serial run's state bitwise (u, v, p, the residual snapshots, R_K and the sums of the
/// squared change), history, profiles and comparison with Ghia et al., in f64 (41 nodes) and
/// f32 (40: the profiles average two middle lines, on different ranks).
#[test]
fn decomposed_cavity_equals_the_serial_run_bitwise() {
    let dir = scratch("mpi_cavity");
    for (n, precision) in [(41, "f64"), (40, "f32")] {
        let runs: [(usize, &str); 6] =
            [(1, ""), (2, ""), (3, ""), (4, ""), (4, "parallel: {ranks: [4, 1]}"), (4, "parallel: {ranks: [1, 4]}")];
        write(&dir, "serial.yaml", &cavity(n, precision, "1.0e-4", 60, ""));
        ok(sim(&dir, &["run", "serial.yaml", "--quiet", "--overwrite", "--out", "serial"]));
        assert_eq!(final_bits(&dir, "serial").0, 60);
        for (np, extra) in runs {
            write(&dir, "case.yaml", &cavity(n, precision, "1.0e-4", 60, extra));
            let o = ok(mpirun(&dir, np, &["run", "case.yaml", "--overwrite", "--out", "p"]));
            let out = String::from_utf8_lossy(&o.stdout);
            if np > 1 {
                assert!(out.contains(&format!("{np} MPI ranks")), "{out}");
            }
            assert_same_cavity_run(&dir, &format!("{precision} on {np} ranks {extra}"));
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// With a loose tolerance the serial run converges at step 105 (R_K below it at the checks
/// of steps 98 and 105); decomposed runs stop there too, with the same state and report.
#[test]
fn decomposed_cavity_converges_at_the_serial_step() {
    let dir = scratch("mpi_cavity_converged");
    let case = |extra: &str| cavity(41, "f64", "4.3", 300, extra);
    write(&dir, "serial.yaml", &case(""));
    ok(sim(&dir, &["run", "serial.yaml", "--quiet", "--overwrite", "--out", "serial"]));
    let serial = cavity_errors(&dir, "serial");
    assert_eq!((serial["status"].as_str(), serial["step"].as_u64()), (Some("converged"), Some(105)), "{serial}");
    for (np, extra) in [(2, ""), (3, ""), (4, ""), (4, "parallel: {ranks: [4, 1]}")] {
        write(&dir, "case.yaml", &case(extra));
        ok(mpirun(&dir, np, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "p"]));
        assert_same_cavity_run(&dir, &format!("{np} ranks {extra}"));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A cavity checkpoint written on 4 ranks at step 7 (a residual check: its snapshot) restarts
/// on 2, whose checkpoint restarts without MPI: bitwise the serial run at step 13 and at the
/// end (its check at step 14 reads the snapshot carried through both restarts).
#[test]
fn cavity_checkpoints_move_between_rank_counts() {
    moves_between_rank_counts("mpi_cavity_restart", &cavity(41, "f64", "1.0e-4", 60, ""));
}

/// The cavity's `.pvti` reads as the serial `.vti`, every array bit for bit (the vorticity at
/// the nodes the pieces share from the neighbour's values).
#[test]
fn cavity_pvti_output_reads_as_the_serial_vti() {
    if !python_has("vtk") {
        return;
    }
    let dir = scratch("mpi_cavity_pvti");
    write(&dir, "case.yaml", &cavity(41, "f32", "1.0e-4", 60, ""));
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "serial"]));
    ok(mpirun(&dir, 4, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "p", "--steps", "50"]));
    same_images(&dir, "c", &["00000000", "00000025", "00000050"], &["velocity", "p", "vorticity", "speed"]);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Bad cavity input under mpirun: every rank exits with 2, one message names the problem.
#[test]
fn bad_cavity_input_stops_every_rank_with_one_message() {
    let dir = scratch("mpi_cavity_bad");
    let case = |solver: &str, extra: &str| heat_case("b", solver, "f64", "{end_step: 5}", extra);
    let cases = [
        ("unknown key", case("cavity: {n: 41, re: 100, bogus: 1}", ""), "bogus"),
        ("value", case("cavity: {n: 41, re: -100}", ""), "solver.cavity.re"),
        ("ranks", case("cavity: {n: 41, re: 100}", "parallel: {ranks: [3, 1]}"), "parallel.ranks"),
        ("narrow", case("cavity: {n: 7, re: 100}", "parallel: {ranks: [4, 1]}"), "narrower"),
    ];
    refused_on_4_ranks(&dir, &cases);
    std::fs::remove_dir_all(dir).unwrap();
}

/// A checkpoint with a NaN in the cavity's first array (p) at one node: the decomposed restarts
/// are refused naming the serial run's node (the first non-finite of u, v, p in the serial scan
/// order).
#[test]
fn a_nan_in_a_cavity_checkpoint_is_named_as_the_serial_run_names_it() {
    let grid = sim::solver::Grid { n: [41, 41], origin: [0.0, 0.0], spacing: [1.0 / 40.0; 2] };
    // Node (30, 35): on a rank other than 0 in both runs (1 x 2, 2 x 2).
    let case = cavity(41, "f64", "1.0e-4", 60, "");
    nan_is_named_as_the_serial_run_names_it("mpi_cavity_guard", &case, grid, [30, 35], "in field p at node (30, 35)");
}

/// The cavity on one (emulated where there is none) GPU per rank, blocks of whole rows: 2 and 4
/// ranks give the serial CPU run's state, history, profiles and report bitwise, in f64 and f32,
/// and stop at the serial run's step when it converges.
#[test]
fn decomposed_cavity_on_gpus_equals_the_serial_run_bitwise() {
    if emulation::cuda().is_none() {
        return;
    }
    let dir = scratch("mpi_cavity_cuda");
    for (n, precision, tol, steps) in [(41, "f64", "1.0e-4", 60), (40, "f32", "1.0e-4", 60), (41, "f64", "4.3", 300)] {
        write(&dir, "case.yaml", &cavity(n, precision, tol, steps, ""));
        ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "serial"]));
        for np in [2, 4] {
            let o = ok(mpirun_cuda(&dir, np, &["run", "case.yaml", "--overwrite", "--out", "p", "--backend", "cuda"]));
            assert!(String::from_utf8_lossy(&o.stdout).contains("cuda ("), "{}", stderr(&o));
            assert_same_cavity_run(&dir, &format!("{precision} {tol} on {np} GPU ranks"));
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A signal to one rank stops every rank after the same step: rank 0 writes the checkpoint of
/// that step, every rank exits with 128 + the signal, and the checkpoint continues without MPI
/// to the serial run's final field.
#[test]
fn a_signal_to_one_rank_stops_all_at_the_same_step() {
    let dir = scratch("mpi_signal");
    let (end, extra) = ("4000000", "checkpoint: {every_steps: 10000000}\nguard: {check_every: 100}");
    let case = heat_case("s", "heat2d: {n: 101, r: 0.24}", "f64", &format!("{{end_step: {end}}}"), extra);
    write(&dir, "signalled.yaml", &case);
    let mut run = mpirun_command(&dir, 2, &["run", "signalled.yaml", "--quiet", "--overwrite", "--out", "r"]);
    let child = run.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    // Both ranks stepping (a guard check is in the history): then SIGTERM to one of them.
    let history = dir.join("r/history.csv");
    let stepping = || std::fs::read_to_string(&history).is_ok_and(|h| h.lines().count() > 2);
    for _ in 0..600 {
        if stepping() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let pids = Command::new("pgrep").args(["-f", "^[^ ]*/sim run signalled.yaml"]).output().unwrap();
    let pids: Vec<u32> = String::from_utf8_lossy(&pids.stdout).lines().filter_map(|l| l.trim().parse().ok()).collect();
    assert!(pids.len() == 2 && stepping(), "ranks {pids:?}");
    ok(Command::new("kill").args(["-TERM", &pids[1].to_string()]).output().unwrap());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "mpirun: {:?} {err}", out.status);
    // Said once, by rank 0.
    assert_eq!(err.matches("interrupted by SIGTERM").count(), 1, "{err}");
    let (stopped, _) = final_bits(&dir, "r");
    assert!(stopped > 0 && stopped < 4000000, "stopped at step {stopped}");
    // The same step on both ranks: the checkpoint continues to the serial bits.
    write(&dir, "serial.yaml", &case.replace(end, &(stopped + 50).to_string()));
    ok(sim(&dir, &["run", "serial.yaml", "--quiet", "--overwrite", "--out", "serial"]));
    ok(sim(&dir, &["run", "--restart", "r", "--quiet", "--steps", "50"]));
    assert!(final_bits(&dir, "r") == final_bits(&dir, "serial"), "the signalled run's checkpoint differs");
    std::fs::remove_dir_all(dir).unwrap();
}

/// One rank fails to write its piece of the last frame, where the final checkpoint is due too:
/// every rank stops with that rank's message (before, rank 0 went on to gather the checkpoint
/// and both hung), and the series lists no frame with a missing piece.
#[test]
fn a_failed_piece_stops_every_rank_and_is_not_listed() {
    let dir = scratch("mpi_piece");
    let case = heat_case("p", "heat2d: {n: 33, r: 0.24}", "f64", "{end_step: 400000}", "output: {every_steps: 200000}");
    write(&dir, "p.yaml", &case);
    let mut run = mpirun_command(&dir, 2, &["run", "p.yaml", "--quiet"]);
    let child = run.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    // Once the run has started stepping: rank 1's temporary file of the last frame is taken.
    let history = dir.join("out/p/history.csv");
    for _ in 0..600 {
        if history.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::fs::create_dir_all(dir.join("out/p/p_00400000_p1.vti.tmp/x")).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "mpirun: {:?} {err}", out.status);
    assert_eq!(err.matches("rank 1 of 2: cannot write").count(), 1, "{err}");
    assert!(err.contains("p_00400000_p1.vti.tmp"), "{err}");
    let pvd = std::fs::read_to_string(dir.join("out/p/p.pvd")).unwrap();
    assert!(pvd.contains("p_00200000.pvti") && !pvd.contains("p_00400000"), "{pvd}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// CDKLM16 and KP07 on one (emulated where there is none) GPU per rank, blocks of whole rows,
/// the ghost rows of every stage staged through the host, the CFL step an MPI minimum: 2 and 4
/// ranks give the serial CPU run's arrays bitwise (walls, periodic across the ranks and within
/// them, a sponge; f32 and f64).
#[test]
fn decomposed_finite_volume_shallow_water_on_gpus_equals_the_serial_run_bitwise() {
    if emulation::cuda().is_none() {
        return;
    }
    let dir = scratch("mpi_swfv_cuda");
    let runs = [
        ("kp07", "f32", "periodic", "wall"),
        ("cdklm16", "f64", "wall", "periodic"),
        ("cdklm16", "f32", "{sponge: {cells: 3}}", "periodic"),
    ];
    for (scheme, precision, ns, ew) in runs {
        write(&dir, "case.yaml", &shallow_water(scheme, precision, ns, ew, ""));
        ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "serial"]));
        for np in [2, 4] {
            let o = ok(mpirun_cuda(&dir, np, &["run", "case.yaml", "--overwrite", "--out", "p", "--backend", "cuda"]));
            assert!(String::from_utf8_lossy(&o.stdout).contains("cuda ("), "{}", stderr(&o));
            let same = final_bits(&dir, "p") == final_bits(&dir, "serial");
            assert!(same, "{scheme} {precision} {ns}/{ew} on {np} GPU ranks: differs");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// FBL and CTCS on one (emulated where there is none) GPU per rank, blocks of whole rows, the
/// ghost rows of every step staged through the host between the device's sponge and ghost
/// passes: 2 to 4 ranks give the serial CPU run's arrays bitwise (walls; periodic both ways,
/// with GPU Ocean's skipped corner faces of U, across the ranks; periodic along x within them;
/// sponges; f32 and f64); CTCS checkpointed on 4 GPU ranks continues on the CPU without MPI.
#[test]
fn decomposed_fd_shallow_water_on_gpus_equals_the_serial_run_bitwise() {
    if emulation::cuda().is_none() {
        return;
    }
    let dir = scratch("mpi_swfd_cuda");
    let runs = [
        ("fbl", WALLS, "f64", true, &[2, 3][..]),
        ("fbl", PERIODIC, "f32", true, &[2, 4]),
        ("fbl", SPONGES_NS, "f64", false, &[3]),
        ("ctcs", PERIODIC, "f64", true, &[2, 3]),
        ("ctcs", SPONGES, "f32", false, &[2]),
        ("ctcs", PERIODIC_EW, "f32", true, &[4]),
    ];
    for (scheme, boundary, precision, compat, ranks) in runs {
        write(&dir, "case.yaml", &fd_case(scheme, precision, compat, boundary, ""));
        ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "serial"]));
        let serial = final_bits(&dir, "serial");
        for &np in ranks {
            let o = ok(mpirun_cuda(&dir, np, &["run", "case.yaml", "--overwrite", "--out", "p", "--backend", "cuda"]));
            assert!(String::from_utf8_lossy(&o.stdout).contains("cuda ("), "{}", stderr(&o));
            let p = final_bits(&dir, "p");
            let differ: Vec<&str> =
                serial.1.iter().zip(&p.1).filter(|(a, b)| a != b).map(|(a, _)| a.0.as_str()).collect();
            assert!(
                p.0 == serial.0 && p.1.len() == serial.1.len() && differ.is_empty(),
                "{scheme} {precision} compat {compat}, boundary {boundary}, {np} GPU ranks: {differ:?} differ"
            );
        }
    }
    let restart = ["run", "case.yaml", "--quiet", "--overwrite", "--out", "r", "--backend", "cuda", "--steps", "13"];
    ok(mpirun_cuda(&dir, 4, &restart));
    ok(sim(&dir, &["run", "--restart", "r", "--quiet", "--backend", "cpu"]));
    assert!(final_bits(&dir, "r") == final_bits(&dir, "serial"), "CTCS 4 GPU ranks -> CPU differs from the serial run");
    std::fs::remove_dir_all(dir).unwrap();
}
