//! Completion of a generated cloud: boundary normals, stencil repair, min_dist, split
//! stencils and the same validation as a cloud read from a file.

use crate::error::{Result, SimError};
use crate::solvers::lskum::cloud::{Cloud, Csr, INTERIOR, WALL};

/// Relative determinant D / (S_ss S_nn) below which the generators add neighbours.
const REPAIR_DET: f64 = 1e-3;

/// Normals, min_dist, stencils and validation of a generated cloud.
pub fn finish(c: Cloud, what: &str) -> Result<Cloud> {
    finish_with(c, what, &|_, _, _| true)
}

/// [`finish`] where the stencil repair only adds links `allowed(cloud, i, k)`.
pub fn finish_with(mut c: Cloud, what: &str, allowed: &dyn Fn(&Cloud, usize, usize) -> bool) -> Result<Cloud> {
    set_boundary_normals(&mut c);
    repair(&mut c, allowed);
    c.min_dist = nearest_neighbour_distances(&c);
    if let Some(i) = (0..c.len()).find(|&i| !(c.min_dist[i] > 0.0)) {
        return Err(SimError::Input(format!("generated {what} cloud: point {} coincides with a neighbour", i + 1)));
    }
    c.build_stencils();
    c.check_stencils(&|i| format!("generated {what} cloud: point {} ({}, {})", i + 1, c.x[i], c.y[i]))?;
    Ok(c)
}

/// Normals of the wall and outer points from their left and right neighbours, (0, 1) inside.
fn set_boundary_normals(c: &mut Cloud) {
    let n = c.len();
    c.nx = vec![0.0; n];
    c.ny = vec![1.0; n];
    for i in 0..n {
        if c.flag[i] != INTERIOR {
            let (l, r) = (c.left[i] as usize, c.right[i] as usize);
            let a = 0.5 * (c.y[r] - c.y[l]);
            let b = 0.5 * (c.x[r] - c.x[l]);
            let m = (a * a + b * b).sqrt();
            c.nx[i] = -a / m;
            c.ny[i] = b / m;
        }
    }
}

/// Distance from every point to its nearest neighbour.
fn nearest_neighbour_distances(c: &Cloud) -> Vec<f64> {
    (0..c.len())
        .map(|i| {
            c.conn
                .of(i)
                .iter()
                .map(|&k| ((c.x[k as usize] - c.x[i]).powi(2) + (c.y[k as usize] - c.y[i]).powi(2)).sqrt())
                .fold(f64::INFINITY, f64::min)
        })
        .collect()
}

/// Neighbour lists in CSR form, in order.
pub fn csr_from_lists(lists: Vec<Vec<u32>>) -> Csr {
    let mut conn = Csr { start: Vec::with_capacity(lists.len() + 1), idx: Vec::new() };
    conn.start.push(0);
    for l in lists {
        conn.idx.extend(l);
        conn.start.push(conn.idx.len() as u32);
    }
    conn
}

/// Add the nearest second- and third-ring neighbours to points whose split stencils are
/// empty or badly conditioned, until every stencil is acceptable (spec 13.3 step 7).
fn repair(c: &mut Cloud, allowed: &dyn Fn(&Cloud, usize, usize) -> bool) {
    let lists: Vec<Vec<u32>> = (0..c.len()).map(|i| c.conn.of(i).to_vec()).collect();
    let mut out = lists.clone();
    for (i, list) in out.iter_mut().enumerate() {
        if worst_stencil(c, i, list) >= REPAIR_DET {
            continue;
        }
        let mut cand = repair_candidates(c, i, &lists, list, allowed);
        let d2 = |k: u32| (c.x[k as usize] - c.x[i]).powi(2) + (c.y[k as usize] - c.y[i]).powi(2);
        cand.sort_by(|&a, &b| d2(a).total_cmp(&d2(b)));
        for k in cand {
            if worst_stencil(c, i, list) >= REPAIR_DET {
                break;
            }
            list.push(k);
        }
    }
    c.conn = csr_from_lists(out);
}

/// Neighbours of the neighbours of point i (two rings out through the original `lists`), not
/// yet in its list `current` and `allowed`, in the order found.
fn repair_candidates(
    c: &Cloud,
    i: usize,
    lists: &[Vec<u32>],
    current: &[u32],
    allowed: &dyn Fn(&Cloud, usize, usize) -> bool,
) -> Vec<u32> {
    let mut cand: Vec<u32> = Vec::new();
    let mut frontier = lists[i].clone();
    for _ in 0..2 {
        let mut next = Vec::new();
        for &k in &frontier {
            for &m in &lists[k as usize] {
                if m as usize != i && !current.contains(&m) && !cand.contains(&m) && allowed(c, i, m as usize) {
                    cand.push(m);
                    next.push(m);
                }
            }
        }
        frontier = next;
    }
    cand
}

/// Smallest relative determinant over the split stencils point i uses (0 when one is empty).
fn worst_stencil(c: &Cloud, i: usize, nbrs: &[u32]) -> f64 {
    let sums = split_stencil_sums(c, i, nbrs);
    let used: &[usize] = match c.flag[i] {
        INTERIOR => &[0, 1, 2, 3],
        WALL => &[0, 1, 3],
        _ => &[0, 1, 2],
    };
    used.iter()
        .map(|&m| {
            let [a, b, d, cnt] = sums[m];
            if cnt == 0.0 || a * b == 0.0 { 0.0 } else { (a * b - d * d) / (a * b) }
        })
        .fold(f64::INFINITY, f64::min)
}

/// Least-squares sums (sss, snn, ssn, count) of the x+, x-, y+, y- stencils of point i with
/// neighbours `nbrs`, split as [`Cloud::build_stencils`] does.
fn split_stencil_sums(c: &Cloud, i: usize, nbrs: &[u32]) -> [[f64; 4]; 4] {
    let (nx, ny) = (c.nx[i], c.ny[i]);
    let mut s = [[0.0f64; 4]; 4];
    for &k in nbrs {
        let dx = c.x[k as usize] - c.x[i];
        let dy = c.y[k as usize] - c.y[i];
        let ds = dx * ny - dy * nx;
        let dn = dx * nx + dy * ny;
        let mut add = |m: usize| {
            s[m][0] += ds * ds;
            s[m][1] += dn * dn;
            s[m][2] += ds * dn;
            s[m][3] += 1.0;
        };
        if ds <= 0.0 {
            add(0);
        }
        if ds >= 0.0 {
            add(1);
        }
        match c.flag[i] {
            INTERIOR => {
                if dn <= 0.0 {
                    add(2);
                }
                if dn >= 0.0 {
                    add(3);
                }
            }
            WALL => add(3),
            _ => add(2),
        }
    }
    s
}
