//! Temporal blocking for explicit stencil steps on uniform grids: `k` steps in one sweep over
//! the grid instead of `k` sweeps, so that between two visits to memory a point is updated
//! `k` times in cache.
//!
//! The grid is `ny` rows of `nx` columns; level `t` of a point reads level `t - 1` at most one
//! row and one column away, and levels alternate between two buffers (level `t` in buffer
//! `t % 2`). The columns are split into bands, one task each:
//!
//! 1. Each band advances a trapezoid: level `t` over the band's columns less `t` on every side
//!    it shares with another band (edges of the grid do not shrink). It walks the rows as a
//!    wavefront: at front `f` it computes level 1 of row `f`, level 2 of row `f - 1`, ...,
//!    level `k` of row `f - k + 1`, so only about `k + 3` rows per buffer are live, and each
//!    level `t + 1` overwrites a level `t - 1` value only once nothing needs it any more.
//! 2. The strips between bands (level `t` over `t` columns either side of the shared edge)
//!    are filled in the same wavefront order from what the trapezoids left.
//!
//! Every point of every level is computed exactly once from the same inputs as in a plain
//! step-by-step sweep, so the result is bitwise identical for any tiling and thread count.

use std::ops::Range;

use rayon::prelude::*;

/// One explicit step of a radius-1 stencil, one row segment at a time.
pub trait RowStencil: Sync {
    /// What one task of a sweep keeps between its calls (rolling rows of derived values);
    /// `()` for none. A task makes its calls of one level in increasing rows, over the same
    /// columns.
    type Scratch;

    /// A fresh scratch for one task.
    fn scratch(&self) -> Self::Scratch;

    /// Compute level `t >= 1` of row `j` over `cols`, reading earlier levels at rows
    /// `j - 1 ..= j + 1` and columns `cols` widened by one on each side, clipped to the grid
    /// (and what this call wrote). Every value it writes, at those rows and columns, replaces
    /// one that only earlier levels read, and only within the same reach: with two buffers
    /// (level `t` in buffer `t % 2`), level `t - 1` next to the point and level `t - 2` at
    /// the point itself; a step split into several levels may keep each field in two
    /// buffers by step instead. A boundary row that copies row 1 (or `ny - 2`) of the same
    /// level is written with that row; its own call does nothing.
    ///
    /// # Safety
    /// No other thread may write the values read, or touch the values written, while this
    /// runs. [`sweep`] guarantees it.
    unsafe fn update(&self, scratch: &mut Self::Scratch, t: usize, j: usize, cols: Range<usize>);
}

/// How a sweep splits the columns, and how many levels it advances at most.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tiling {
    /// Levels per sweep.
    pub depth: usize,
    /// Column edges of the bands, `0 = edges[0] < ... < edges[B] = nx`.
    pub edges: Vec<usize>,
    /// Levels per time step of the solver (its substeps).
    pub levels_per_step: usize,
}

impl Tiling {
    /// `bands` bands of nearly equal width over `nx` columns for sweeps of `depth` levels;
    /// fewer bands where they would be too narrow: every band gets `2 * depth + 2` columns,
    /// so that at every level a band's run at an edge of the grid holds the two outer
    /// columns (a boundary value may copy its inward neighbour) and the strips stay clear
    /// of them.
    pub fn new(nx: usize, depth: usize, bands: usize) -> Tiling {
        assert!(nx >= 1 && depth >= 1);
        let bands = bands.clamp(1, (nx / (2 * depth + 2)).max(1));
        let edges = (0..=bands).map(|b| b * nx / bands).collect();
        Tiling { depth, edges, levels_per_step: 1 }
    }

    /// As [`Tiling::new`] for sweeps of `steps` time steps of `levels_per_step` levels each.
    pub fn for_steps(nx: usize, steps: usize, levels_per_step: usize, bands: usize) -> Tiling {
        Tiling { levels_per_step, ..Tiling::new(nx, steps * levels_per_step, bands) }
    }

    /// Time steps per sweep.
    pub fn steps(&self) -> usize {
        self.depth / self.levels_per_step
    }

    pub fn bands(&self) -> usize {
        self.edges.len() - 1
    }

    /// Columns of band `b`'s trapezoid at level `t`.
    fn band(&self, b: usize, t: usize) -> Range<usize> {
        let shrink_lo = if b > 0 { t } else { 0 };
        let shrink_hi = if b + 1 < self.bands() { t } else { 0 };
        self.edges[b] + shrink_lo..self.edges[b + 1] - shrink_hi
    }

    /// Columns of the strip around inner edge `e` at level `t`.
    fn strip(&self, e: usize, t: usize) -> Range<usize> {
        self.edges[e] - t..self.edges[e] + t
    }
}

impl std::fmt::Display for Tiling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bands = self.bands();
        write!(f, "{} steps per sweep, {bands} band{}", self.steps(), if bands == 1 { "" } else { "s" })
    }
}

/// Advance `levels <= tiling.depth` levels of `stencil` over `ny` rows: level 0 is buffer 0,
/// the result is in buffer `levels % 2`.
pub fn sweep(stencil: &impl RowStencil, ny: usize, tiling: &Tiling, levels: usize) {
    assert!(levels <= tiling.depth, "{levels} levels in a sweep of depth {}", tiling.depth);
    let e = &tiling.edges;
    assert!(
        (0..tiling.bands()).all(|b| {
            let inner_sides = usize::from(b > 0) + usize::from(b + 1 < tiling.bands());
            e[b + 1] - e[b] >= inner_sides * tiling.depth
        }),
        "bands too narrow for depth {}: {e:?}",
        tiling.depth
    );
    if levels == 0 {
        return;
    }
    (0..tiling.bands()).into_par_iter().for_each(|b| wavefront(stencil, ny, levels, |t| tiling.band(b, t)));
    (1..tiling.bands()).into_par_iter().for_each(|e| wavefront(stencil, ny, levels, |t| tiling.strip(e, t)));
}

/// Levels `1..=levels` of the region `cols(t)`, row by row along skewed fronts: at front `f`,
/// level `t` of row `f - t + 1`, lowest level first.
fn wavefront(stencil: &impl RowStencil, ny: usize, levels: usize, cols: impl Fn(usize) -> Range<usize>) {
    let mut scratch = stencil.scratch();
    for front in 0..ny + levels - 1 {
        for t in 1..=levels {
            let Some(j) = (front + 1).checked_sub(t) else { break };
            let c = cols(t);
            if j < ny && !c.is_empty() {
                // SAFETY: the earlier levels of rows j - 1 ..= j + 1 were completed at earlier
                // fronts (row j + 1 earlier in this one), and so were their reads of what
                // this overwrites. Other tasks of the same phase touch other columns at
                // every level; the two phases do not overlap.
                unsafe { stencil.update(&mut scratch, t, j, c) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::Mutex;

    /// Records the order of updates and checks each against the levels already computed.
    struct Tracker {
        nx: usize,
        ny: usize,
        /// Level each point holds, per buffer.
        level: Mutex<[Vec<usize>; 2]>,
    }

    impl RowStencil for Tracker {
        type Scratch = ();
        fn scratch(&self) {}
        unsafe fn update(&self, _: &mut (), t: usize, j: usize, cols: Range<usize>) {
            let mut level = self.level.lock().unwrap();
            let (nx, ny) = (self.nx, self.ny);
            for i in cols {
                for (jj, ii) in [(j, i), (j.wrapping_sub(1), i), (j + 1, i), (j, i.wrapping_sub(1)), (j, i + 1)] {
                    if jj < ny && ii < nx {
                        assert_eq!(level[(t - 1) % 2][jj * nx + ii], t - 1, "level {t} at ({i}, {j}) reads ({ii}, {jj})");
                    }
                }
                let slot = &mut level[t % 2][j * nx + i];
                // Computed once, in order: the value replaced is level t - 2 (nothing, at level 1).
                let before = if t == 1 { usize::MAX } else { t - 2 };
                assert_eq!(*slot, before, "level {t} at ({i}, {j}) computed twice or out of order");
                *slot = t;
            }
        }
    }

    fn run(nx: usize, ny: usize, depth: usize, bands: usize, steps: usize) {
        let tracker = Tracker { nx, ny, level: Mutex::new([vec![0; nx * ny], vec![usize::MAX; nx * ny]]) };
        let tiling = Tiling::new(nx, depth, bands);
        sweep(&tracker, ny, &tiling, steps);
        let level = tracker.level.into_inner().unwrap();
        assert!(level[steps % 2].iter().all(|&l| l == steps), "{nx}x{ny} depth {depth} bands {bands} steps {steps}");
    }

    #[test]
    fn every_point_of_every_level_is_computed_once_from_complete_inputs() {
        for (nx, ny) in [(1, 1), (7, 5), (40, 3), (64, 33), (101, 17)] {
            for depth in [1, 2, 3, 5, 8] {
                for bands in [1, 2, 3, 5] {
                    for steps in 1..=depth {
                        run(nx, ny, depth, bands, steps);
                    }
                }
            }
        }
    }
}
