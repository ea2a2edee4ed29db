//! Point renumbering: the solver may hold a cloud in another order than its file, one with
//! spatial locality (points close in space close in memory), so that the neighbours a point
//! reads are mostly in cache. Every per-point computation visits its neighbours in the same
//! (`conn`) order whatever the numbering, and the reductions (residual norm, forces) run in
//! file order ([`Cloud::file_order`]), so a renumbered run gives bitwise the same results;
//! outputs and checkpoints are written in file order.

use serde::{Deserialize, Serialize};

use super::cloud::{Cloud, Csr, NONE};

/// `solver.lskum.renumber`: the order the solver holds the points in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Renumber {
    /// Along a Hilbert curve through the points' bounding box.
    Hilbert,
    /// Reverse Cuthill–McKee on the neighbour graph: breadth-first fronts, so that the
    /// neighbours of a point lie within a narrow band of indices.
    #[default]
    Rcm,
    /// The file's order.
    #[serde(alias = "off")]
    None,
}

/// Reverse Cuthill–McKee order of the neighbour graph of `c` (links taken both ways):
/// `new_of_old[i]` is the new index of point `i`. Each connected part starts from a
/// pseudo-peripheral point (the last point reached by a breadth-first search from its
/// lowest-numbered point); neighbours are visited by increasing degree, ties by index.
pub fn rcm(c: &Cloud) -> Vec<u32> {
    let n = c.len();
    // Undirected adjacency: a point's own links and the links pointing at it.
    let mut deg = vec![0u32; n + 1];
    for i in 0..n {
        for &k in c.conn.of(i) {
            deg[i] += 1;
            deg[k as usize] += 1;
        }
    }
    let mut start = vec![0u32; n + 1];
    for i in 0..n {
        start[i + 1] = start[i] + deg[i];
    }
    let mut fill = start.clone();
    let mut adj = vec![0u32; start[n] as usize];
    for i in 0..n {
        for &k in c.conn.of(i) {
            adj[fill[i] as usize] = k;
            fill[i] += 1;
            adj[fill[k as usize] as usize] = i as u32;
            fill[k as usize] += 1;
        }
    }
    let neighbours = |i: usize| &adj[start[i] as usize..start[i + 1] as usize];
    let mut seen = vec![false; n];
    let mut order: Vec<u32> = Vec::with_capacity(n);
    // Breadth-first from `root`, appending to `order`; returns the last point reached.
    let bfs = |root: usize, seen: &mut Vec<bool>, order: &mut Vec<u32>| {
        let first = order.len();
        seen[root] = true;
        order.push(root as u32);
        let mut head = first;
        let mut next: Vec<u32> = Vec::new();
        while head < order.len() {
            let i = order[head] as usize;
            head += 1;
            next.clear();
            next.extend(neighbours(i).iter().copied().filter(|&k| !seen[k as usize]));
            next.sort_unstable_by_key(|&k| (deg[k as usize], k));
            next.dedup();
            for &k in &next {
                seen[k as usize] = true;
                order.push(k);
            }
        }
        order[order.len() - 1] as usize
    };
    for root in 0..n {
        if seen[root] {
            continue;
        }
        // A first search finds a far point; the part is then ordered from there.
        let mark = order.len();
        let far = bfs(root, &mut seen, &mut order);
        for &k in &order[mark..] {
            seen[k as usize] = false;
        }
        order.truncate(mark);
        bfs(far, &mut seen, &mut order);
    }
    let mut new_of_old = vec![0u32; n];
    for (new, &old) in order.iter().rev().enumerate() {
        new_of_old[old as usize] = new as u32;
    }
    new_of_old
}

impl Renumber {
    /// The order's name in text: `file` for `none`.
    pub fn order(self) -> &'static str {
        match self {
            Renumber::None => "file",
            r => r.name(),
        }
    }

    /// The value as a case file and the command line spell it.
    pub fn name(self) -> &'static str {
        match self {
            Renumber::Hilbert => "hilbert",
            Renumber::Rcm => "rcm",
            Renumber::None => "none",
        }
    }
}

/// Bits per coordinate of the Hilbert curve: fine enough to separate the points of strongly
/// graded clouds (a 40-chord far field resolved to 1e-8 chords).
const ORDER: u8 = 32;

/// The points of `c` along a Hilbert curve: `new_of_old[i]` is the new index of point `i`.
/// Points in the same curve cell keep their relative order.
pub fn hilbert(c: &Cloud) -> Vec<u32> {
    let bounds = |v: &[f64]| v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    let ((x0, x1), (y0, y1)) = (bounds(&c.x), bounds(&c.y));
    // One scale for both axes keeps the curve's cells square.
    let span = (x1 - x0).max(y1 - y0).max(f64::MIN_POSITIVE);
    let cell = |v: f64, lo: f64| ((v - lo) / span * u32::MAX as f64) as u32;
    let keys: Vec<u64> = (0..c.len()).map(|i| fast_hilbert::xy2h(cell(c.x[i], x0), cell(c.y[i], y0), ORDER)).collect();
    let mut old_of_new: Vec<u32> = (0..c.len() as u32).collect();
    old_of_new.sort_by_key(|&i| keys[i as usize]);
    let mut new_of_old = vec![0u32; c.len()];
    for (new, &old) in old_of_new.iter().enumerate() {
        new_of_old[old as usize] = new as u32;
    }
    new_of_old
}

impl Cloud {
    /// The cloud with point `i` moved to index `new_of_old[i]` (a permutation): every array
    /// and index list follows, neighbour lists keep their order, and [`Cloud::file_order`]
    /// still lists the points in the order of the file.
    pub fn renumbered(&self, new_of_old: &[u32]) -> Cloud {
        let n = self.len();
        assert_eq!(new_of_old.len(), n, "a renumbering gives every point a new index");
        let mut old_of_new = vec![0u32; n];
        for (old, &new) in new_of_old.iter().enumerate() {
            old_of_new[new as usize] = old as u32;
        }
        let take = |v: &[f64]| old_of_new.iter().map(|&o| v[o as usize]).collect::<Vec<_>>();
        let link = |k: u32| if k == NONE { NONE } else { new_of_old[k as usize] };
        let mut conn = Csr { start: Vec::with_capacity(n + 1), idx: Vec::with_capacity(self.conn.idx.len()) };
        conn.start.push(0);
        for &o in &old_of_new {
            conn.idx.extend(self.conn.of(o as usize).iter().map(|&k| new_of_old[k as usize]));
            conn.start.push(conn.idx.len() as u32);
        }
        let mut c = Cloud {
            x: take(&self.x),
            y: take(&self.y),
            flag: old_of_new.iter().map(|&o| self.flag[o as usize]).collect(),
            shape: old_of_new.iter().map(|&o| self.shape[o as usize]).collect(),
            left: old_of_new.iter().map(|&o| link(self.left[o as usize])).collect(),
            right: old_of_new.iter().map(|&o| link(self.right[o as usize])).collect(),
            nx: take(&self.nx),
            ny: take(&self.ny),
            min_dist: take(&self.min_dist),
            conn,
            file: self.file_order().map(|i| new_of_old[i]).collect(),
            ..Default::default()
        };
        c.build_stencils();
        c
    }

    /// The cloud in the order of its file.
    pub fn in_file_order(&self) -> Cloud {
        if self.file.is_empty() {
            return self.clone();
        }
        let mut c = self.renumbered(&self.file_positions());
        c.file.clear();
        c
    }

    /// `p[i]`: the position in the file of point `i` (the inverse of [`Cloud::file_order`]).
    fn file_positions(&self) -> Vec<u32> {
        let mut p = vec![0u32; self.len()];
        for (f, i) in self.file_order().enumerate() {
            p[i] = f as u32;
        }
        p
    }

    /// `v` (one value per point) in file order.
    pub fn to_file_order<T: Copy>(&self, v: &[T]) -> Vec<T> {
        self.file_order().map(|i| v[i]).collect()
    }

    /// `v` (one value per point, in file order) in this cloud's order.
    pub fn from_file_order<T: Copy>(&self, v: &[T]) -> Vec<T> {
        if self.file.is_empty() {
            return v.to_vec();
        }
        self.file_positions().iter().map(|&f| v[f as usize]).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::naca::Closure;
    use crate::mesh::quadtree::quadtree_points;

    #[test]
    fn renumbering_is_undone_by_file_order() {
        let c = quadtree_points(3000, 0.12, Closure::Scaled, 10.0).unwrap();
        let order = hilbert(&c);
        let r = c.renumbered(&order);
        assert_ne!(r.x, c.x, "the quadtree's order is not the Hilbert order");
        let back = r.in_file_order();
        assert_eq!((back.x, back.y, back.flag, back.shape), (c.x.clone(), c.y.clone(), c.flag.clone(), c.shape.clone()));
        assert_eq!((back.left, back.right, back.conn, back.xneg), (c.left.clone(), c.right.clone(), c.conn.clone(), c.xneg.clone()));
        assert_eq!(r.to_file_order(&r.min_dist), c.min_dist);
        assert_eq!(r.from_file_order(&c.nx), r.nx);
        // Renumbering twice composes: the file order is still known.
        let twice = r.renumbered(&hilbert(&r)).in_file_order();
        assert_eq!(twice.conn, c.conn);
    }

    /// A cloud in random order: its links span a third of the index range on average.
    fn shuffled(n: usize) -> Cloud {
        let c = quadtree_points(n, 0.12, Closure::Scaled, 10.0).unwrap();
        let mut perm: Vec<u32> = (0..c.len() as u32).collect();
        let mut seed = 7u64;
        for i in (1..perm.len()).rev() {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            perm.swap(i, (seed >> 33) as usize % (i + 1));
        }
        let mut s = c.renumbered(&perm);
        s.file.clear();
        s
    }

    /// Mean |i - k| over the links i -> k.
    fn spread(c: &Cloud) -> f64 {
        let links = c.conn.idx.len() as f64;
        (0..c.len()).flat_map(|i| c.conn.of(i).iter().map(move |&k| (k as f64 - i as f64).abs())).sum::<f64>() / links
    }

    #[test]
    fn renumbering_brings_neighbours_close() {
        let c = shuffled(20_000);
        let n = c.len() as f64;
        assert!(spread(&c) > n / 4.0);
        for (name, order) in [("rcm", rcm(&c)), ("hilbert", hilbert(&c))] {
            let r = c.renumbered(&order);
            assert!(spread(&r) < n / 50.0, "{name}: mean link length {} of {n} points", spread(&r));
        }
    }

    #[test]
    fn rcm_orders_every_part_of_a_disconnected_graph() {
        // Two separate 3-point chains, listed interleaved.
        let mut c = Cloud { x: vec![0.0; 6], y: vec![0.0; 6], ..Default::default() };
        c.conn = Csr { start: vec![0, 1, 2, 4, 6, 7, 8], idx: vec![2, 3, 0, 4, 1, 5, 2, 3] };
        let order = rcm(&c);
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, [0, 1, 2, 3, 4, 5], "a permutation");
        // Each chain occupies consecutive indices.
        for chain in [[0usize, 2, 4], [1, 3, 5]] {
            let mut idx: Vec<u32> = chain.iter().map(|&i| order[i]).collect();
            idx.sort();
            assert_eq!(idx[2] - idx[0], 2, "chain {chain:?} at {idx:?}");
        }
    }
}
