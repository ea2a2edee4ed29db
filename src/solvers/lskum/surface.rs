//! Triangles over a point cloud for visualisation: a constrained Delaunay triangulation
//! (spade) of all points with the boundary curves (consecutive wall points, consecutive
//! outer points, linked by their left/right neighbours) as constraint edges, keeping only the
//! triangles between the far field and the bodies. ParaView then contours and colours the
//! fields on a surface that does not fill the aerofoil.

use std::collections::VecDeque;

use spade::{ConstrainedDelaunayTriangulation, Point2, Triangulation};

use super::cloud::{Cloud, NONE, OUTER};

/// Counter-clockwise triangles (indices into the cloud) covering the flow domain, or why
/// there are none.
pub fn triangulate(c: &Cloud) -> Result<Vec<[u32; 3]>, String> {
    let n = c.len();
    let points: Vec<Point2<f64>> = (0..n).map(|i| Point2::new(c.x[i], c.y[i])).collect();
    // Each boundary point to the next one on its curve (both links, once each: a curve may
    // pass through a point flagged otherwise, such as the reference clouds' trailing edge).
    let mut edges: Vec<[usize; 2]> = (0..n)
        .flat_map(|i| [(c.left[i], i as u32), (i as u32, c.right[i])])
        .filter(|&(a, b)| a != NONE && b != NONE && a != b)
        .map(|(a, b)| [a.min(b) as usize, a.max(b) as usize])
        .collect();
    edges.sort_unstable();
    edges.dedup();
    let outer_curve = edges.iter().any(|&[i, j]| c.flag[i] == OUTER || c.flag[j] == OUTER);
    let mut conflicts = 0usize;
    let cdt = ConstrainedDelaunayTriangulation::<Point2<f64>>::try_bulk_load_cdt(points, edges, |_| conflicts += 1)
        .map_err(|e| format!("the triangulation failed ({e:?})"))?;
    if cdt.num_vertices() != n {
        return Err(format!("{} of {n} points coincide", n - cdt.num_vertices()));
    }
    if conflicts > 0 {
        return Err(format!("{conflicts} boundary edges cross other boundary edges"));
    }
    // Level of a face = boundary curves crossed on the way from outside the triangulation
    // (0-1 breadth-first search): outside the far field 0, the flow domain 1, inside a body
    // 2. Without a linked far-field curve the domain starts at the convex hull (level 0).
    let outer = cdt.outer_face().fix().index();
    // The faces next to each face, and whether a boundary edge lies between.
    let mut next: Vec<Vec<(usize, bool)>> = vec![Vec::new(); cdt.num_all_faces()];
    for f in cdt.inner_faces() {
        for e in f.adjacent_edges() {
            let g = e.rev().face().fix().index();
            next[f.fix().index()].push((g, e.is_constraint_edge()));
            if g == outer {
                next[outer].push((f.fix().index(), e.is_constraint_edge()));
            }
        }
    }
    let mut level = vec![u32::MAX; next.len()];
    level[outer] = 0;
    let mut queue = VecDeque::from([outer]);
    while let Some(f) = queue.pop_front() {
        for &(g, constraint) in &next[f] {
            let l = level[f] + u32::from(constraint);
            if l < level[g] {
                level[g] = l;
                if constraint { queue.push_back(g) } else { queue.push_front(g) }
            }
        }
    }
    let domain = u32::from(outer_curve);
    Ok(cdt
        .inner_faces()
        .filter(|f| level[f.fix().index()] == domain)
        .map(|f| f.vertices().map(|v| v.fix().index() as u32))
        .collect())
}
