//! Regression of the q-LSKUM solver against stored runs of the reference Fortran codes
//! (spec lskum.md 11.1, 11.2, 16 items 3-4).

mod common;
use common::numbers;

use sim::solvers::lskum::{
    Accuracy, CloudFormat, ForcePoints, Limiter, Lskum, LskumParams, Renumber, TimeScheme,
};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/lskum");
const MESHES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/meshes");

/// The 2019 serial Fortran run: F1 cloud with file normals, forward Euler, first-order
/// q-derivatives, CFL 0.8, K = 150, 100 iterations.
#[test]
fn ref2019_forward_euler_100_iterations() {
    let mut p = LskumParams::with_cloud(format!("{MESHES}/naca0012_9600_oldformat.txt"), CloudFormat::Old, 0.63, 2.0);
    p.cfl = 0.8;
    p.inner_iterations = 0;
    p.vl_const = 150.0;
    p.tscheme = TimeScheme::First;
    p.limiter = Limiter::Venkat;
    p.accuracy = Accuracy::Second;
    let mut s = Lskum::new(&p).unwrap();

    let res = numbers(&format!("{DATA}/ref2019_residue.txt"));
    assert_eq!(res.len(), 200);
    let mut max_res = 0.0f64;
    for it in 1..=100 {
        s.iterate();
        assert_eq!(res[2 * (it - 1)] as usize, it);
        let d = (s.residue() - res[2 * (it - 1) + 1]).abs();
        max_res = max_res.max(d);
        assert!(d <= 1e-12, "iteration {it}: residue {} vs reference {}", s.residue(), res[2 * (it - 1) + 1]);
    }

    // sol.dat: 9600, then `id flag_1 flag_2 x y rho u v p` per point.
    let sol = numbers(&format!("{DATA}/ref2019_sol.dat"));
    assert_eq!(sol[0] as usize, 9600);
    let mut max_sol = 0.0f64;
    let (cloud, prim) = (s.file_cloud(), s.prim());
    for i in 0..9600 {
        let r = &sol[1 + 9 * i..1 + 9 * (i + 1)];
        assert_eq!(r[0] as usize, i + 1);
        assert_eq!(r[3], cloud.x[i]);
        assert_eq!(r[4], cloud.y[i]);
        for m in 0..4 {
            let d = (prim[i][m] - r[5 + m]).abs();
            max_sol = max_sol.max(d);
            assert!(d <= 1e-12, "point {} component {m}: {} vs reference {}", i + 1, prim[i][m], r[5 + m]);
        }
    }

    // cp-file: `flag_2 x -Cp` for the wall points in order.
    let cp = numbers(&format!("{DATA}/ref2019_cp-file.txt"));
    let wall = s.wall_points();
    assert_eq!(cp.len(), 3 * wall.len());
    let mut max_cp = 0.0f64;
    for (r, &(f, i)) in cp.chunks(3).zip(&wall) {
        assert_eq!(r[0] as u32, cloud.shape[f]);
        assert!((r[1] - cloud.x[f]).abs() <= 1e-15);
        let d = (-s.cp(i) - r[2]).abs();
        max_cp = max_cp.max(d);
        assert!(d <= 1e-12, "wall point {}: -Cp {} vs reference {}", f + 1, -s.cp(i), r[2]);
    }
    eprintln!("ref2019: max |residue diff| {max_res:e}, max |sol diff| {max_sol:e}, max |-Cp diff| {max_cp:e}");
}

/// The current reference scheme: SSP(4,3), 3 inner iterations, K = 50, CFL 0.5 on the
/// legacy-format cloud (normals recomputed), 30 iterations.
#[test]
fn fser_ssprk43_30_iterations() {
    let p = LskumParams::with_cloud(format!("{MESHES}/naca0012_9600_legacy.txt"), CloudFormat::Legacy, 0.63, 2.0);
    assert_eq!((p.cfl, p.inner_iterations, p.vl_const, p.tscheme), (0.5, 3, 50.0, TimeScheme::Ssprk43));
    let mut s = Lskum::new(&p).unwrap();
    let rows = numbers(&format!("{DATA}/fser_ssprk43_9600_30it.txt"));
    assert_eq!(rows.len(), 150);
    let (mut mr, mut mc) = (0.0f64, 0.0f64);
    for it in 1..=30 {
        s.iterate();
        let r = &rows[5 * (it - 1)..5 * it];
        assert_eq!(r[0] as usize, it);
        let d = (s.residue() - r[1]).abs();
        mr = mr.max(d);
        assert!(d <= 1e-12, "iteration {it}: residue {} vs reference {}", s.residue(), r[1]);
        let (cl, cd, cm) = s.coefficients_of(ForcePoints::Shape);
        for (v, rv, name) in [(cl, r[2], "C_l"), (cd, r[3], "C_d"), (cm, r[4], "C_m")] {
            let d = (v - rv).abs();
            mc = mc.max(d);
            assert!(d <= 1e-12, "iteration {it}: {name} {v} vs reference {rv}");
        }
    }
    // Wall-only coefficients after 30 iterations (spec 11.2, printed to 10 decimals).
    let (cl, cd, cm) = s.coefficients_of(ForcePoints::Wall);
    assert!((cl - 0.2002412570).abs() < 1e-10, "C_l {cl}");
    assert!((cd - 0.1940742030).abs() < 1e-10, "C_d {cd}");
    assert!((cm + 0.0479383602).abs() < 1e-10, "C_m {cm}");
    eprintln!("fser 30 it: max |residue diff| {mr:e}, max |coefficient diff| {mc:e}");
}

/// Long validation (spec 11.3, about an hour on one core): the settings of 11.2 on the 9600
/// cloud. The residue is compared with the reference run (to 1e-8) at every 1000th of its
/// 20 000 iterations (the reference reaches -3.78 there); the run then goes on until the
/// residue has dropped by 4 decades (about 22 000 iterations, at most 30 000). Acceptance:
/// |C_l - 0.35073| < 1e-3, |C_d + 0.00502| < 3e-4 (wall points).
/// Run with `cargo test --release --test lskum_regression -- --ignored long_validation`.
#[test]
#[ignore]
fn long_validation_9600_four_decades() {
    let p = LskumParams::with_cloud(format!("{MESHES}/naca0012_9600_legacy.txt"), CloudFormat::Legacy, 0.63, 2.0);
    let mut s = Lskum::new(&p).unwrap();
    let r = numbers(&format!("{DATA}/fser_ssprk43_9600_residue.txt"));
    let reference: std::collections::HashMap<u64, f64> = r.chunks(2).map(|c| (c[0] as u64, c[1])).collect();
    for it in 1..=20_000u64 {
        s.iterate();
        if it % 1000 == 0 {
            let (cl, cd, cm) = s.coefficients();
            eprintln!(
                "{it}: residue {:.4} (reference {:.4})  C_l {cl:.6}  C_d {cd:.6}  C_m {cm:.6}",
                s.residue(),
                reference.get(&it).copied().unwrap_or(f64::NAN)
            );
            // A full run earlier agreed with all 2090 printed values to 6.3e-11.
            if let Some(&r) = reference.get(&it) {
                assert!((s.residue() - r).abs() < 1e-8, "iteration {it}: residue {} vs reference {r}", s.residue());
            }
        }
    }
    while s.residue() > -4.0 && s.iterations() < 30_000 {
        s.iterate();
    }
    let (cl, cd, cm) = s.coefficients();
    eprintln!("{}: residue {:.4}  C_l {cl:.6}  C_d {cd:.6}  C_m {cm:.6}", s.iterations(), s.residue());
    assert!(s.residue() <= -4.0, "residue {} after {} iterations", s.residue(), s.iterations());
    assert!((cl - 0.35073).abs() < 1e-3, "C_l {cl}");
    assert!((cd + 0.00502).abs() < 3e-4, "C_d {cd}");
}

/// Refinement (spec 11.3/11.4, subcritical flow, exact C_d = 0): on generated O-grid clouds of
/// 80 x 30 and 160 x 60 points (first spacing halved with the spacing) converged by 3
/// decades, |C_d| falls with refinement (measured: 0.00363 after 8 755 iterations, 0.00063
/// after 36 287). About 75 minutes on one core; run with
/// `-- --ignored refinement`. (A 320 x 120 level takes hours; see the README.)
#[test]
#[ignore]
fn refinement_drag_falls() {
    use sim::mesh::ogrid::{OGrid, ogrid};
    let mut cds = Vec::new();
    for (ni, nj, h) in [(80, 30, 4e-3), (160, 60, 2e-3)] {
        let cloud = ogrid(&OGrid { ni, nj, first_spacing: h, ..Default::default() }).unwrap();
        let p = LskumParams::with_cloud("generated", CloudFormat::Sim, 0.63, 2.0);
        let mut s = Lskum::with_cloud(&p, cloud);
        while s.iterations() < 200_000 && (s.iterations() < 3 || s.residue() > -3.0) {
            s.iterate();
        }
        let (cl, cd, cm) = s.coefficients();
        eprintln!("{ni} x {nj}: {} iterations, residue {:.3}, C_l {cl:.5}, C_d {cd:.6}, C_m {cm:.5}", s.iterations(), s.residue());
        cds.push(cd.abs());
    }
    assert!(cds[1] < cds[0], "|C_d| {cds:?}");
}

/// The order the solver holds the points in changes no bit: every point visits its neighbours
/// in the file's order whatever the numbering, and the residual and forces are summed in file
/// order. 30 SSP(4,3) iterations on the 9600 cloud with each renumbering.
#[test]
fn renumbering_changes_no_bit() {
    let run = |r: Renumber| {
        let mut p = LskumParams::with_cloud(format!("{MESHES}/naca0012_9600_legacy.txt"), CloudFormat::Legacy, 0.63, 2.0);
        p.renumber = r;
        let mut s = Lskum::new(&p).unwrap();
        let mut history = Vec::new();
        for _ in 0..30 {
            s.iterate();
            let (cl, cd, cm) = s.coefficients();
            history.push([s.residual_norm(), cl, cd, cm].map(f64::to_bits));
        }
        let prim: Vec<[u64; 4]> = s.prim().iter().map(|w| w.map(f64::to_bits)).collect();
        (s.cloud.x.clone(), history, prim, s.wall_cp_csv())
    };
    let (x0, h0, p0, cp0) = run(Renumber::None);
    for r in [Renumber::Rcm, Renumber::Hilbert] {
        let (x, h, p, cp) = run(r);
        assert_ne!(x, x0, "{r:?} keeps the file's order");
        assert!(h == h0, "{r:?}: residual or coefficients differ");
        assert!(p == p0, "{r:?}: the state differs");
        assert_eq!(cp, cp0, "{r:?}: wall_cp.csv differs");
    }
}
