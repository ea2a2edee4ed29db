//! Quadtree NACA 00xx point cloud (spec lskum.md 13.3): cells split around the surface points
//! and by a size function growing with the distance from the aerofoil, 2:1 balanced across
//! edges and corners; one point per leaf (its surface point, else its centroid unless inside
//! the body); neighbours = points of the adjacent leaves, without links through the body;
//! outer points = leaves on the root square, clockwise.

use std::collections::HashMap;

use crate::error::{Result, SimError};
use crate::solvers::lskum::cloud::{Cloud, INTERIOR, NONE, OUTER, WALL};

use super::finish::{csr_from_lists, finish_with};
use super::naca::{Closure, surface_points};

/// Settings of the quadtree generator.
#[derive(Clone, Copy, Debug)]
pub struct QuadTree {
    /// Surface points (incl. the trailing edge), cosine clustered.
    pub surface: usize,
    /// Half width of the root square centred at (0.5, 0).
    pub half_width: f64,
    /// Cell size / distance-to-aerofoil ratio away from the surface.
    pub growth: f64,
    pub thickness: f64,
    pub closure: Closure,
}

type Key = (u8, u32, u32);

struct Tree {
    leaves: HashMap<Key, u32>,
    x0: f64,
    y0: f64,
    size: f64,
}

impl Tree {
    fn cell(&self, k: Key) -> (f64, f64, f64) {
        let h = self.size / (1u64 << k.0) as f64;
        (self.x0 + (k.1 as f64 + 0.5) * h, self.y0 + (k.2 as f64 + 0.5) * h, h)
    }

    /// The leaf covering cell (l, i, j) or an ancestor of it.
    fn covering(&self, l: u8, i: i64, j: i64) -> Option<Key> {
        let n = 1i64 << l;
        if i < 0 || j < 0 || i >= n || j >= n {
            return None;
        }
        for ll in (0..=l).rev() {
            let s = l - ll;
            let k = (ll, (i >> s) as u32, (j >> s) as u32);
            if self.leaves.contains_key(&k) {
                return Some(k);
            }
        }
        None
    }

    /// Leaves adjacent to leaf k across its edges and corners (needs 2:1 balance).
    fn neighbours(&self, k: Key, out: &mut Vec<Key>) {
        out.clear();
        let (l, i, j) = (k.0, k.1 as i64, k.2 as i64);
        for dj in -1..=1i64 {
            for di in -1..=1i64 {
                if (di, dj) == (0, 0) {
                    continue;
                }
                let n = 1i64 << l;
                let (a, b) = (i + di, j + dj);
                if a < 0 || b < 0 || a >= n || b >= n {
                    continue;
                }
                if let Some(c) = self.covering(l, a, b) {
                    if !out.contains(&c) {
                        out.push(c);
                    }
                } else {
                    // refined: children of (l, a, b) on the side facing k
                    let xs: &[u32] = match di {
                        1 => &[0],
                        -1 => &[1],
                        _ => &[0, 1],
                    };
                    let ys: &[u32] = match dj {
                        1 => &[0],
                        -1 => &[1],
                        _ => &[0, 1],
                    };
                    for &cx in xs {
                        for &cy in ys {
                            let c = (l + 1, 2 * a as u32 + cx, 2 * b as u32 + cy);
                            if self.leaves.contains_key(&c) && !out.contains(&c) {
                                out.push(c);
                            }
                        }
                    }
                }
            }
        }
    }

    fn split(&mut self, k: Key) -> [Key; 4] {
        self.leaves.remove(&k);
        let (l, i, j) = (k.0 + 1, 2 * k.1, 2 * k.2);
        let ch = [(l, i, j), (l, i + 1, j), (l, i, j + 1), (l, i + 1, j + 1)];
        for c in ch {
            self.leaves.insert(c, u32::MAX);
        }
        ch
    }
}

/// Distance from (x, y) to the chord segment [0, 1] x {0}.
fn chord_distance(x: f64, y: f64) -> f64 {
    let cx = x.clamp(0.0, 1.0);
    ((x - cx).powi(2) + y * y).sqrt()
}

fn inside(poly: &[(f64, f64)], x: f64, y: f64) -> bool {
    let mut c = false;
    let n = poly.len();
    let mut j = n - 1;
    for i in 0..n {
        let (xi, yi) = poly[i];
        let (xj, yj) = poly[j];
        if (yi > y) != (yj > y) && x < (xj - xi) * (y - yi) / (yj - yi) + xi {
            c = !c;
        }
        j = i;
    }
    c
}

fn cross(o: (f64, f64), a: (f64, f64), b: (f64, f64)) -> f64 {
    (a.0 - o.0) * (b.1 - o.1) - (a.1 - o.1) * (b.0 - o.0)
}

/// Proper crossing of segments pq and ab.
fn crosses(p: (f64, f64), q: (f64, f64), a: (f64, f64), b: (f64, f64)) -> bool {
    let d1 = cross(a, b, p);
    let d2 = cross(a, b, q);
    let d3 = cross(p, q, a);
    let d4 = cross(p, q, b);
    d1 * d2 < 0.0 && d3 * d4 < 0.0
}

/// Generate the cloud.
pub fn quadtree(q: &QuadTree) -> Result<Cloud> {
    check_settings(q)?;
    let surf = surface_points(q.surface, q.thickness, q.closure);
    let mut t = refined_tree(q, &surf)?;
    balance(&mut t, &surf);
    // Points: in a deterministic order (surface first, clockwise from the TE, then by cell).
    let mut keys: Vec<Key> = t.leaves.keys().copied().collect();
    keys.sort_unstable();
    let mut c = Cloud::default();
    let mut id: HashMap<Key, u32> = HashMap::with_capacity(keys.len());
    add_surface_points(&mut c, &mut id, &t, &keys, &surf)?;
    add_cell_points(&mut c, &mut id, &t, &keys, &surf);
    c.conn = csr_from_lists(neighbour_lists(&c, &id, &t, &keys, &surf));
    let allowed = |c: &Cloud, i: usize, k: usize| {
        (c.shape[i] > 0 && c.shape[k] > 0) || !blocked(&surf, (c.x[i], c.y[i]), (c.x[k], c.y[k]))
    };
    finish_with(c, "quadtree", &allowed)
}

/// Levels of refinement below the root cell at most.
const MAX_LEVEL: u8 = 28;

/// The error where two surface points would share a cell of the finest level: the root cell
/// spans the far field, so the finest cells grow with it. With the half width it gives, they
/// would not: a cell of side h holds no two points more than h sqrt 2 apart, and points in
/// different quadrants of the root (about x = 1/2, y = 0) never share one.
fn too_far(q: &QuadTree, surf: &[(f64, f64)]) -> SimError {
    let quadrant = |&(x, y): &(f64, f64)| (x >= 0.5, y >= 0.0);
    let gap = [(false, false), (true, false), (false, true), (true, true)]
        .map(|side| closest_gap(surf.iter().copied().filter(|p| quadrant(p) == side).collect()))
        .into_iter()
        .fold(f64::INFINITY, f64::min);
    let safe = gap * (1u64 << MAX_LEVEL) as f64 / (2.0 * std::f64::consts::SQRT_2);
    bad(format!(
        "--radius {}: the far field is too far for the finest cells ({MAX_LEVEL} halvings of its width) to \
         separate the surface points ({gap:.1e} apart where closest); give a smaller --radius (below {:.2e} \
         always does) or fewer points",
        q.half_width,
        safe * (1.0 - 1e-3)
    ))
}

/// The smallest distance between two of `points` (a sweep along x).
fn closest_gap(mut p: Vec<(f64, f64)>) -> f64 {
    p.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    let mut best = f64::INFINITY;
    for (i, &(x, y)) in p.iter().enumerate() {
        for &(u, v) in &p[i + 1..] {
            if u - x >= best {
                break;
            }
            best = best.min((u - x).hypot(v - y));
        }
    }
    best
}

/// An input error about the quadtree settings.
fn bad(m: String) -> SimError {
    SimError::Input(format!("sim mesh naca0012 (quadtree): {m}"))
}

fn check_settings(q: &QuadTree) -> Result<()> {
    if q.surface < 40 || q.surface > 1_000_000 {
        return Err(bad(format!("{} surface points: choose 40 .. 1 000 000", q.surface)));
    }
    if !(q.half_width > 2.0 && q.half_width.is_finite()) {
        return Err(bad(format!("half width {} must be more than 2 chords", q.half_width)));
    }
    if !(q.growth > 1e-4 && q.growth <= 1.0) {
        return Err(bad(format!("growth {} must be in (1e-4, 1]", q.growth)));
    }
    if let Some(why) = super::naca::thickness_refused(q.thickness) {
        return Err(bad(why));
    }
    Ok(())
}

/// Split cells holding more than one surface point or larger than growth x their distance from
/// the aerofoil (at least the mean surface spacing); a leaf holding a surface point records it.
fn refined_tree(q: &QuadTree, surf: &[(f64, f64)]) -> Result<Tree> {
    let ns = surf.len();
    let mut t = Tree { leaves: HashMap::new(), x0: 0.5 - q.half_width, y0: -q.half_width, size: 2.0 * q.half_width };
    t.leaves.insert((0, 0, 0), u32::MAX);
    // size-function floor: about the mean surface spacing
    let h_floor = 2.0 / ns as f64;
    let mut stack: Vec<(Key, Vec<u32>)> = vec![((0, 0, 0), (0..ns as u32).collect())];
    while let Some((k, pts)) = stack.pop() {
        let (cx, cy, h) = t.cell(k);
        // Lower bound on the distance of any point of the cell: centre distance less half the diagonal.
        // The factor is 1/√2 rounded to 4 digits; generated clouds depend on its exact value.
        #[allow(clippy::approx_constant)]
        let d = chord_distance(cx, cy) - 0.7071 * h;
        let need = pts.len() > 1 || h > (q.growth * d.max(0.0)).max(h_floor);
        if need && k.0 >= MAX_LEVEL && pts.len() > 1 {
            return Err(too_far(q, surf));
        }
        if !need || k.0 >= MAX_LEVEL {
            if pts.len() == 1 {
                t.leaves.insert(k, pts[0]);
            }
            continue;
        }
        let ch = t.split(k);
        let mut parts: [Vec<u32>; 4] = Default::default();
        for p in pts {
            let (x, y) = surf[p as usize];
            let ix = (x >= cx) as usize;
            let iy = (y >= cy) as usize;
            parts[ix + 2 * iy].push(p);
        }
        for (c, p) in ch.into_iter().zip(parts) {
            stack.push((c, p));
        }
        if t.leaves.len() > 60_000_000 {
            return Err(bad("more than 60 million cells; reduce the size".into()));
        }
    }
    Ok(t)
}

/// 2:1 balance across edges and corners: split leaves more than one level coarser than a
/// neighbour (a surface point goes to the child that contains it).
fn balance(t: &mut Tree, surf: &[(f64, f64)]) {
    let mut queue: Vec<Key> = t.leaves.keys().copied().collect();
    queue.sort_unstable_by_key(|k| std::cmp::Reverse(k.0));
    while let Some(k) = queue.pop() {
        if !t.leaves.contains_key(&k) || k.0 < 2 {
            continue;
        }
        let n = 1i64 << k.0;
        for dj in -1..=1i64 {
            for di in -1..=1i64 {
                let (a, b) = (k.1 as i64 + di, k.2 as i64 + dj);
                if (di, dj) == (0, 0) || a < 0 || b < 0 || a >= n || b >= n {
                    continue;
                }
                if let Some(c) = t.covering(k.0, a, b)
                    && c.0 + 1 < k.0
                {
                    let sp = t.leaves[&c];
                    let ch = t.split(c);
                    if sp != u32::MAX {
                        let (x, y) = surf[sp as usize];
                        let (cx, cy, _) = t.cell(c);
                        let idx = (x >= cx) as usize + 2 * (y >= cy) as usize;
                        t.leaves.insert(ch[idx], sp);
                    }
                    queue.extend(ch);
                    queue.push(k);
                }
            }
        }
    }
}

/// The surface points, in order, numbered by the leaves that hold them: wall (the trailing
/// edge interior), shape 1, left/right their surface neighbours.
fn add_surface_points(
    c: &mut Cloud,
    id: &mut HashMap<Key, u32>,
    t: &Tree,
    keys: &[Key],
    surf: &[(f64, f64)],
) -> Result<()> {
    let ns = surf.len();
    let mut surf_leaf = vec![None; ns];
    for &k in keys {
        let v = t.leaves[&k];
        if v != u32::MAX {
            surf_leaf[v as usize] = Some(k);
        }
    }
    for (p, &(x, y)) in surf.iter().enumerate() {
        let Some(k) = surf_leaf[p] else { return Err(bad(format!("surface point {} lost its cell", p + 1))) };
        id.insert(k, c.x.len() as u32);
        c.x.push(x);
        c.y.push(y);
        c.flag.push(if p == 0 { INTERIOR } else { WALL });
        c.shape.push(1);
        c.left.push(((p + ns - 1) % ns) as u32);
        c.right.push(((p + 1) % ns) as u32);
    }
    Ok(())
}

/// The centroid of every other leaf outside (and not at) the body: outer on the root square,
/// else interior; the outer points linked clockwise as a ring.
fn add_cell_points(c: &mut Cloud, id: &mut HashMap<Key, u32>, t: &Tree, keys: &[Key], surf: &[(f64, f64)]) {
    let n_levels = |k: Key| 1u32 << k.0;
    let mut outer: Vec<(f64, u32)> = Vec::new();
    for &k in keys {
        if t.leaves[&k] != u32::MAX {
            continue;
        }
        let (x, y, h) = t.cell(k);
        if chord_distance(x, y) < 0.2 && (inside(surf, x, y) || near_surface(surf, x, y, 0.2 * h)) {
            continue;
        }
        let on_boundary = k.1 == 0 || k.2 == 0 || k.1 == n_levels(k) - 1 || k.2 == n_levels(k) - 1;
        id.insert(k, c.x.len() as u32);
        if on_boundary {
            // clockwise angle around the root centre
            outer.push((-(y - 0.0).atan2(x - 0.5), c.x.len() as u32));
        }
        c.x.push(x);
        c.y.push(y);
        c.flag.push(if on_boundary { OUTER } else { INTERIOR });
        c.shape.push(0);
        c.left.push(NONE);
        c.right.push(NONE);
    }
    outer.sort_by(|a, b| a.0.total_cmp(&b.0));
    let m = outer.len();
    for (q_, &(_, p)) in outer.iter().enumerate() {
        c.left[p as usize] = outer[(q_ + m - 1) % m].1;
        c.right[p as usize] = outer[(q_ + 1) % m].1;
    }
}

/// Neighbours of every point: the points of the adjacent leaves, without links through the
/// body; surface points also their left and right (first) where missing.
fn neighbour_lists(
    c: &Cloud,
    id: &HashMap<Key, u32>,
    t: &Tree,
    keys: &[Key],
    surf: &[(f64, f64)],
) -> Vec<Vec<u32>> {
    let mut lists: Vec<Vec<u32>> = vec![Vec::new(); c.x.len()];
    let mut nb = Vec::new();
    for &k in keys {
        let Some(&p) = id.get(&k) else { continue };
        t.neighbours(k, &mut nb);
        let pp = (c.x[p as usize], c.y[p as usize]);
        for &o in &nb {
            let Some(&r) = id.get(&o) else { continue };
            let rr = (c.x[r as usize], c.y[r as usize]);
            if blocked(surf, pp, rr) {
                continue;
            }
            lists[p as usize].push(r);
        }
    }
    for (p, list) in lists.iter_mut().enumerate().take(surf.len()) {
        for s in [c.left[p], c.right[p]] {
            if !list.contains(&s) {
                list.insert(0, s);
            }
        }
    }
    lists
}

/// Within `tol` of a surface vertex.
fn near_surface(surf: &[(f64, f64)], x: f64, y: f64, tol: f64) -> bool {
    surf.iter().any(|&(a, b)| (a - x).powi(2) + (b - y).powi(2) < tol * tol)
}

/// A link that passes through the body: it crosses a surface edge, or its midpoint is inside.
fn blocked(surf: &[(f64, f64)], p: (f64, f64), q: (f64, f64)) -> bool {
    let (xl, xh) = (p.0.min(q.0), p.0.max(q.0));
    let (yl, yh) = (p.1.min(q.1), p.1.max(q.1));
    if xh < -0.01 || xl > 1.01 || yl > 0.2 || yh < -0.2 {
        return false;
    }
    let mid = (0.5 * (p.0 + q.0), 0.5 * (p.1 + q.1));
    if inside(surf, mid.0, mid.1) {
        return true;
    }
    let n = surf.len();
    (0..n).any(|i| {
        let (a, b) = (surf[i], surf[(i + 1) % n]);
        a.0.max(b.0) >= xl && a.0.min(b.0) <= xh && crosses(p, q, a, b)
    })
}

/// Settings for about `points` points.
pub fn for_points(points: usize) -> QuadTree {
    let surface = ((points as f64).sqrt() / 2.5).round().clamp(100.0, 20_000.0) as usize;
    QuadTree { surface, half_width: 10.0, growth: (2.0 * std::f64::consts::PI * 6.0 / points as f64).sqrt().min(1.0), thickness: 0.12, closure: Closure::Scaled }
}

/// Generate about `points` points: adjust the growth ratio from a first attempt.
pub fn quadtree_points(points: usize, thickness: f64, closure: Closure, half_width: f64) -> Result<Cloud> {
    let mut q = for_points(points);
    q.thickness = thickness;
    q.closure = closure;
    q.half_width = half_width;
    let mut c = quadtree(&q)?;
    for _ in 0..3 {
        let ratio = c.len() as f64 / points as f64;
        if (ratio - 1.0).abs() < 0.1 {
            break;
        }
        q.growth = (q.growth * ratio.sqrt()).clamp(2e-4, 1.0);
        c = quadtree(&q)?;
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quadtree_cloud_validates_with_outward_normals() {
        let c = quadtree_points(10_000, 0.12, Closure::Scaled, 10.0).unwrap();
        assert!((c.len() as f64 - 10_000.0).abs() < 2_500.0, "{} points", c.len());
        let walls = c.flag.iter().filter(|&&f| f == WALL).count();
        assert_eq!(walls, for_points(10_000).surface - 1);
        for i in 0..c.len() {
            // outer normals point away from the centre, wall normals away from the chord line
            if c.flag[i] == OUTER {
                assert!(c.nx[i] * (c.x[i] - 0.5) + c.ny[i] * c.y[i] > 0.0, "outer point {}", i + 1);
            }
            if c.flag[i] == WALL && c.x[i] > 0.05 && c.x[i] < 0.95 {
                assert!(c.ny[i] * c.y[i] > 0.0, "wall point {}", i + 1);
            }
            // no neighbour link passes through the body
            let surf: Vec<(f64, f64)> = (0..c.len()).filter(|&k| c.shape[k] > 0).map(|k| (c.x[k], c.y[k])).collect();
            if c.x[i] > -0.05 && c.x[i] < 1.05 && c.y[i].abs() < 0.1 {
                for &k in c.conn.of(i) {
                    if c.shape[i] > 0 && c.shape[k as usize] > 0 {
                        continue; // chords between nearby surface points
                    }
                    let k = k as usize;
                    let mid = (0.5 * (c.x[i] + c.x[k]), 0.5 * (c.y[i] + c.y[k]));
                    assert!(!inside(&surf, mid.0, mid.1), "link {} - {}", i + 1, k + 1);
                }
            }
        }
    }
}
