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
    let dir = scratch("mpi_restart");
    write(&dir, "case.yaml", &heat2d("f64", ""));
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "serial"]));
    ok(mpirun(&dir, 4, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "r", "--steps", "13"]));
    ok(mpirun(&dir, 2, &["run", "--restart", "r", "--quiet", "--steps", "11"]));
    assert_eq!(final_bits(&dir, "r").0, 24);
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
    let cases = [("h", heat2d("f32", "")), ("sw", shallow_water("kp07", "f32", "wall", "periodic", ""))];
    for (name, case) in cases {
        write(&dir, "case.yaml", &case);
        ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "serial"]));
        ok(mpirun(&dir, 4, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "p", "--steps", "30"]));
        let pvd = std::fs::read_to_string(dir.join(format!("p/{name}.pvd"))).unwrap();
        assert!(pvd.contains(&format!("file=\"{name}_00000015.pvti\"")), "{pvd}");
        for step in ["00000000", "00000015", "00000030"] {
            let (s, p) = (format!("serial/{name}_{step}.vti"), format!("p/{name}_{step}.pvti"));
            let o = Command::new("python3").args(["-c", SAME_IMAGE, &s, &p]).current_dir(&dir).output().unwrap();
            assert!(String::from_utf8_lossy(&o.stdout).contains("same 0"), "{name} step {step}: {}", stderr(&o));
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Python: the `.vti` argv[1] and the `.pvti` argv[2] hold the same image, every point and
/// cell array equal; prints "same N" with N the number of arrays that differ.
const SAME_IMAGE: &str = r#"
import sys, vtk
from vtk.util.numpy_support import vtk_to_numpy as v
import numpy as np
a = vtk.vtkXMLImageDataReader(); a.SetFileName(sys.argv[1]); a.Update(); a = a.GetOutput()
b = vtk.vtkXMLPImageDataReader(); b.SetFileName(sys.argv[2]); b.Update(); b = b.GetOutput()
assert a.GetDimensions() == b.GetDimensions() and a.GetOrigin() == b.GetOrigin() and a.GetSpacing() == b.GetSpacing()
differ = 0
for da, db in [(a.GetPointData(), b.GetPointData()), (a.GetCellData(), b.GetCellData())]:
    assert da.GetNumberOfArrays() == db.GetNumberOfArrays()
    for i in range(da.GetNumberOfArrays()):
        name = da.GetArrayName(i)
        x, y = v(da.GetArray(name)), v(db.GetArray(name))
        if not (x.dtype == y.dtype and np.array_equal(x, y)):
            differ += 1
            print(name, "differs", file=sys.stderr)
assert a.GetPointData().GetNumberOfArrays() + a.GetCellData().GetNumberOfArrays() > 0
assert b.GetFieldData().GetArray("TimeValue").GetValue(0) == a.GetFieldData().GetArray("TimeValue").GetValue(0)
print("same", differ)
"#;

/// Bad input under mpirun: every rank exits with 2, one message names the problem, nothing
/// hangs (mpirun is killed after 120 s).
#[test]
fn bad_input_stops_every_rank_with_one_message() {
    let dir = scratch("mpi_bad");
    let case = |solver: &str, extra: &str| heat_case("b", solver, "f64", "{end_step: 5}", extra);
    let cases = [
        ("unknown key", case("heat2d: {n: 33, r: 0.2, bogus: 1}", ""), "bogus"),
        ("ranks", case("heat2d: {n: 33, r: 0.2}", "parallel: {ranks: [3, 1]}"), "parallel.ranks"),
        ("method", case("heat2d: {n: 33, r: 2.0, method: adi}", ""), "MPI ranks"),
        ("narrow", case("heat2d: {n: 7, r: 0.2}", "parallel: {ranks: [4, 1]}"), "narrower"),
        ("sponge", shallow_water("kp07", "f64", "wall", "{sponge: {cells: 9}}", "parallel: {ranks: [4, 1]}"), "than 10"),
    ];
    for (what, text, needle) in cases {
        write(&dir, "b.yaml", &text);
        let o = mpirun(&dir, 4, &["run", "b.yaml", "--overwrite"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{what}: {err}");
        assert_eq!(err.matches("error:").count(), 1, "{what}: one message: {err}");
        assert!(err.contains(needle), "{what}: {err}");
    }
    // Refused before anything is written.
    assert!(!dir.join("out").exists());
    std::fs::remove_dir_all(dir).unwrap();
}

/// A non-finite value that spreads from one node: the decomposed run stops at the same guard
/// step as the serial run and names the same global node (the first in the serial scan order
/// over all ranks), with exit code 1 and one message.
#[test]
fn the_guard_names_the_serial_runs_node() {
    let dir = scratch("mpi_guard");
    write(&dir, "case.yaml", &heat2d("f64", ""));
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "a", "--steps", "5"]));
    let last = sim::io::checkpoint::list(&dir.join("a")).pop().unwrap().1;
    let (meta, mut arrays) = sim::io::checkpoint::read(&last).unwrap();
    let mut t = arrays[0].values.to_f64();
    // Node (40, 45) of the 61 x 61 grid: on a rank other than 0 in both runs (1 x 2, 2 x 2).
    t[45 * 61 + 40] = f64::NAN;
    arrays[0].values = sim::real::Values::F64(t);
    std::fs::create_dir_all(dir.join("nan")).unwrap();
    let grid = sim::solver::Grid { n: [61, 61], origin: [-1.0, -1.0], spacing: [2.0 / 60.0; 2] };
    let mesh = sim::solver::Mesh::Nodes(grid);
    sim::io::checkpoint::write(&dir.join("nan/checkpoint_00000005.h5"), &meta, &arrays, &mesh).unwrap();
    let serial = sim(&dir, &["run", "--restart", "nan/checkpoint_00000005.h5", "--out", "s", "--quiet"]);
    let err = stderr(&serial);
    assert_eq!(serial.status.code(), Some(1), "{err}");
    let what = err.trim_start_matches("error: ").split(';').next().unwrap().to_string();
    assert!(what.contains("at node (") && what.contains("at step 7"), "{err}");
    for np in [2, 4] {
        let o = mpirun(&dir, np, &["run", "--restart", "nan/checkpoint_00000005.h5", "--out", "p", "--quiet"]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{np} ranks: {e}");
        assert_eq!(e.matches("error:").count(), 1, "{np} ranks: {e}");
        assert!(e.contains(&what), "{np} ranks: {e}\nserial: {err}");
    }
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

/// CDKLM16 and KP07 on 2, 3 and 4 ranks (2 x 2, 4 x 1, 1 x 4) give the serial run's arrays,
/// ghosts included, bitwise: walls, periodic one way and both ways (across ranks and within
/// one), sponges of both kinds; f32 and f64.
#[test]
fn decomposed_finite_volume_shallow_water_equals_the_serial_run_bitwise() {
    let dir = scratch("mpi_swfv");
    let sponges = ("{sponge: {cells: 3, kind: linear}}", "{sponge: {cells: 4}}");
    let all: &[(usize, &str)] =
        &[(2, ""), (3, ""), (4, ""), (4, "parallel: {ranks: [4, 1]}"), (4, "parallel: {ranks: [1, 4]}")];
    let runs = [
        ("cdklm16", "f64", ("wall", "wall"), all),
        ("kp07", "f32", ("periodic", "periodic"), all),
        ("cdklm16", "f32", ("periodic", "wall"), &all[1..3]),
        ("kp07", "f64", ("wall", "periodic"), &all[2..4]),
        ("kp07", "f32", sponges, &all[2..3]),
        ("cdklm16", "f64", sponges, &all[3..5]),
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
    let grids: [(usize, &str); 6] = [
        (2, ""),
        (3, ""),
        (4, ""),
        (4, "parallel: {ranks: [4, 1]}"),
        (4, "parallel: {ranks: [1, 4]}"),
        (2, "parallel: {ranks: [1, 2]}"),
    ];
    let runs: [(&str, &str, bool, &[usize]); 7] = [
        (WALLS, "f64", true, &[0, 1, 2]),
        (PERIODIC, "f32", true, &[2, 3, 4]),
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
    let dir = scratch("mpi_sw_restart");
    write(&dir, "case.yaml", &shallow_water("kp07", "f32", "periodic", "wall", ""));
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "serial"]));
    ok(mpirun(&dir, 4, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "r", "--steps", "13"]));
    ok(mpirun(&dir, 2, &["run", "--restart", "r", "--quiet", "--steps", "11"]));
    assert_eq!(final_bits(&dir, "r").0, 24);
    ok(sim(&dir, &["run", "--restart", "r", "--quiet"]));
    assert!(final_bits(&dir, "r") == final_bits(&dir, "serial"), "4 -> 2 -> 1 ranks differs from the serial run");
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
    std::fs::remove_dir_all(dir).unwrap();
}

/// FBL on 2, 3, 4 ranks (2 x 2, 4 x 1, 1 x 4, 1 x 2): the serial run's arrays bitwise, with
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
    let dir = scratch("mpi_ctcs_restart");
    write(&dir, "case.yaml", &fd_case("ctcs", "f64", true, PERIODIC, ""));
    ok(sim(&dir, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "serial"]));
    ok(mpirun(&dir, 4, &["run", "case.yaml", "--quiet", "--overwrite", "--out", "r", "--steps", "7"]));
    ok(mpirun(&dir, 2, &["run", "--restart", "r", "--quiet", "--steps", "6"]));
    assert_eq!(final_bits(&dir, "r").0, 13);
    ok(sim(&dir, &["run", "--restart", "r", "--quiet"]));
    let (restarted, serial) = (final_bits(&dir, "r"), final_bits(&dir, "serial"));
    assert!(restarted == serial, "4 -> 2 -> 1 ranks differs from the serial run");
    std::fs::remove_dir_all(dir).unwrap();
}
