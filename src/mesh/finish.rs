//! Completion of a generated cloud: boundary normals, stencil repair, min_dist, split
//! stencils and the same validation as a cloud read from a file.

use crate::error::{Result, SimError};
use crate::solvers::lskum::cloud::{Cloud, Csr, INTERIOR, WALL};

use super::cloud_file::two_sided_normal;

/// Relative determinant D / (S_ss S_nn) below which the generators add neighbours.
const REPAIR_DET: f64 = 1e-3;

/// Relative determinant below which a stencil counts as singular (validation refuses 1e-12).
const SINGULAR_DET: f64 = 1e-9;

/// The most points [`add_improving_points`] adds to one point.
const MOST_FAR_POINTS: usize = 8;

/// Normals, min_dist, stencils and validation of a generated cloud.
pub fn finish(c: Cloud, what: &str) -> Result<Cloud> {
    finish_with(c, what, &|_, _, _| true)
}

/// [`finish`] where the stencil repair only adds links `allowed(cloud, i, k)`.
pub fn finish_with(mut c: Cloud, what: &str, allowed: &dyn Fn(&Cloud, usize, usize) -> bool) -> Result<Cloud> {
    set_boundary_normals(&mut c);
    repair(&mut c, allowed);
    validate(c, what)
}

/// [`finish`] for a cloud that is its own mirror image about y = 0 (`mirror(i)` the image of
/// point i; i itself on the axis), which keeps it one: the boundary normals are images of
/// each other already, and the repaired neighbour lists are made images too.
pub fn finish_mirrored(mut c: Cloud, what: &str, mirror: &dyn Fn(usize) -> usize) -> Result<Cloud> {
    set_boundary_normals(&mut c);
    repair(&mut c, &|_, _, _| true);
    mirror_lists(&mut c, mirror);
    validate(c, what)
}

/// Of two mirror images the point with the smaller number keeps its neighbour list and the
/// other takes the images of its neighbours, in the same order; a point on the axis adds the
/// images of its neighbours that it lacks. (Adding neighbours leaves no split stencil
/// singular that was not.)
fn mirror_lists(c: &mut Cloud, mirror: &dyn Fn(usize) -> usize) {
    let image = |k: &u32| mirror(*k as usize) as u32;
    let lists = (0..c.len())
        .map(|i| {
            let m = mirror(i);
            if m < i {
                return c.conn.of(m).iter().map(image).collect();
            }
            let mut list = c.conn.of(i).to_vec();
            if m == i {
                for k in c.conn.of(i).iter().map(image) {
                    if !list.contains(&k) {
                        list.push(k);
                    }
                }
            }
            list
        })
        .collect();
    c.conn = csr_from_lists(lists);
}

/// min_dist, the split stencils and the checks of a cloud read from a file.
fn validate(mut c: Cloud, what: &str) -> Result<Cloud> {
    c.min_dist = nearest_neighbour_distances(&c);
    if let Some(i) = (0..c.len()).find(|&i| !(c.min_dist[i] > 0.0)) {
        return Err(SimError::Input(format!("generated {what} cloud: point {} coincides with a neighbour", i + 1)));
    }
    c.build_stencils();
    let at = |i: usize| format!("generated {what} cloud: point {} ({}, {})", i + 1, c.x[i], c.y[i]);
    c.check_stencils(&at)?;
    super::cloud_file::check_stored(&c, &at)?;
    Ok(c)
}

/// Normals of the wall and outer points from their left and right neighbours, (0, 1) inside.
fn set_boundary_normals(c: &mut Cloud) {
    let n = c.len();
    c.nx = vec![0.0; n];
    c.ny = vec![1.0; n];
    for i in 0..n {
        if c.flag[i] != INTERIOR {
            // (Coinciding neighbours give no normal: NaN, refused by the validation.)
            let n = two_sided_normal(&c.x, &c.y, c.left[i] as usize, c.right[i] as usize);
            (c.nx[i], c.ny[i]) = n.unwrap_or((f64::NAN, f64::NAN));
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
/// empty or badly conditioned, until every stencil is acceptable (spec 13.3 step 7); where
/// a stencil is still singular, the nearest points of the cloud that improve it.
fn repair(c: &mut Cloud, allowed: &dyn Fn(&Cloud, usize, usize) -> bool) {
    let lists: Vec<Vec<u32>> = (0..c.len()).map(|i| c.conn.of(i).to_vec()).collect();
    let mut out = lists.clone();
    for (i, list) in out.iter_mut().enumerate() {
        if worst_stencil(c, i, list) >= REPAIR_DET {
            continue;
        }
        let d2 = |k: &u32| (c.x[*k as usize] - c.x[i]).powi(2) + (c.y[*k as usize] - c.y[i]).powi(2);
        let mut cand = repair_candidates(c, i, &lists, list, allowed);
        cand.sort_by(|a, b| d2(a).total_cmp(&d2(b)));
        for k in cand {
            if worst_stencil(c, i, list) >= REPAIR_DET {
                break;
            }
            list.push(k);
        }
        if worst_stencil(c, i, list) < SINGULAR_DET {
            add_improving_points(c, i, list, allowed);
        }
    }
    c.conn = csr_from_lists(out);
}

/// Add to point i's `list` the nearest points of the cloud that improve its singular split
/// stencils, until those are acceptable. For the points whose near neighbours in a stencil's
/// half-plane all lie on one line through them (downstream of a trailing edge, on the wake
/// line), the points off that line may be many links away.
fn add_improving_points(c: &Cloud, i: usize, list: &mut Vec<u32>, allowed: &dyn Fn(&Cloud, usize, usize) -> bool) {
    let d2 = |k: &u32| (c.x[*k as usize] - c.x[i]).powi(2) + (c.y[*k as usize] - c.y[i]).powi(2);
    let by_distance = |a: &u32, b: &u32| d2(a).total_cmp(&d2(b));
    let mut cand: Vec<u32> =
        (0..c.len() as u32).filter(|&k| k as usize != i && !list.contains(&k) && allowed(c, i, k as usize)).collect();
    // the nearest ones in order first: the points sought are usually among them
    let near = cand.len().min(1024);
    if near < cand.len() {
        cand.select_nth_unstable_by(near, by_distance);
    }
    cand[..near].sort_by(by_distance);
    let singular = stencil_measures(c, i, list).map(|m| m.is_some_and(|(m, _)| m < SINGULAR_DET));
    let mut score = stencil_score(c, i, list, singular);
    let mut added = 0;
    for n in 0..cand.len() {
        if n == near {
            cand[near..].sort_by(by_distance);
        }
        let repaired =
            stencil_measures(c, i, list).iter().zip(singular).all(|(m, s)| !s || m.is_some_and(|m| m.0 >= REPAIR_DET));
        if added == MOST_FAR_POINTS || repaired {
            break;
        }
        list.push(cand[n]);
        let s = stencil_score(c, i, list, singular);
        if s > score {
            score = s;
            added += 1;
        } else {
            list.pop();
        }
    }
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
    stencil_measures(c, i, nbrs).into_iter().flatten().map(|(m, _)| m).fold(f64::INFINITY, f64::min)
}

/// How near the split stencils `which` of point i are to acceptable: the sum of their
/// relative determinants, each counted up to [`REPAIR_DET`], and a little for each of their
/// first two points (a stencil needs two before its determinant can grow).
fn stencil_score(c: &Cloud, i: usize, nbrs: &[u32], which: [bool; 4]) -> f64 {
    let score = |(m, cnt): (f64, f64)| m.min(REPAIR_DET) + 1e-6 * REPAIR_DET * cnt.min(2.0);
    stencil_measures(c, i, nbrs).into_iter().zip(which).filter(|w| w.1).filter_map(|w| w.0).map(score).sum()
}

/// The relative determinant D / (S_ss S_nn) and the number of points of each split stencil
/// point i uses (None for the others; 0 when empty).
fn stencil_measures(c: &Cloud, i: usize, nbrs: &[u32]) -> [Option<(f64, f64)>; 4] {
    let sums = split_stencil_sums(c, i, nbrs);
    let used = match c.flag[i] {
        INTERIOR => [true; 4],
        WALL => [true, true, false, true],
        _ => [true, true, true, false],
    };
    std::array::from_fn(|m| {
        let [a, b, d, cnt] = sums[m];
        // points on one line up to rounding (a spread across it of 1e-10 of that along it,
        // or less) are singular whatever the rounding makes of the determinant
        let det = if cnt == 0.0 || a.min(b) <= 1e-20 * a.max(b) { 0.0 } else { (a * b - d * d) / (a * b) };
        used[m].then_some((det, cnt))
    })
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
