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
//! Or the threads share one band as a pipeline: thread `s` of `S` computes the `s`-th of `S`
//! runs of consecutive levels at every front, once thread `s - 1` has finished that front
//! (level `t` of row `j` needs level `t - 1` up to row `j + 1`, which the same front computes
//! first). Rows stay whole, which splitting the columns does not, and nothing is left for a
//! second phase that one thread would run alone.
//!
//! Every point of every level is computed exactly once from the same inputs as in a plain
//! step-by-step sweep, so the result is bitwise identical for any tiling and thread count.

use std::ops::{Range, RangeInclusive};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

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
    /// Threads that share each band as a pipeline of runs of levels (1: one thread a band).
    pub stages: usize,
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
        Tiling { depth, edges, levels_per_step: 1, stages: 1 }
    }

    /// One band over all `nx` columns, its levels shared by `stages` threads as a pipeline.
    pub fn pipelined(nx: usize, depth: usize, stages: usize) -> Tiling {
        Tiling { stages: stages.max(1), ..Tiling::new(nx, depth, 1) }
    }

    /// As [`Tiling::pipelined`] for sweeps of `steps` time steps of `levels_per_step` levels.
    pub fn pipelined_steps(nx: usize, steps: usize, levels_per_step: usize, stages: usize) -> Tiling {
        Tiling { levels_per_step, ..Tiling::pipelined(nx, steps * levels_per_step, stages) }
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
        write!(f, "{} steps per sweep, {bands} band{}", self.steps(), if bands == 1 { "" } else { "s" })?;
        if self.stages > 1 {
            write!(f, " in a pipeline of {} stages", self.stages)?;
        }
        Ok(())
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
    // A pipeline never has more stages than the pool has threads, nor than there are levels.
    let stages = tiling.stages.min(rayon::current_num_threads()).min(levels);
    if stages > 1 {
        assert_eq!(tiling.bands(), 1, "a pipelined sweep has one band");
        let pipe = Pipeline { done: (0..stages).map(|_| Front(AtomicUsize::new(0))).collect(), failed: AtomicBool::new(false) };
        let all = 0..tiling.edges[1];
        rayon::broadcast(|ctx| {
            let s = ctx.index();
            if s < stages {
                let guard = Failed(&pipe.failed);
                let mine = 1 + s * levels / stages..=(s + 1) * levels / stages;
                wavefront(stencil, ny, levels, mine, |_| all.clone(), Some((&pipe, s)));
                std::mem::forget(guard);
            }
        });
        return;
    }
    let every = 1..=levels;
    (0..tiling.bands()).into_par_iter().for_each(|b| wavefront(stencil, ny, levels, every.clone(), |t| tiling.band(b, t), None));
    (1..tiling.bands()).into_par_iter().for_each(|e| wavefront(stencil, ny, levels, every.clone(), |t| tiling.strip(e, t), None));
}

/// The fronts each stage of a pipelined sweep has finished.
struct Pipeline {
    done: Vec<Front>,
    /// Set when a stage panics, so that the stages waiting for it panic too instead of
    /// waiting for ever.
    failed: AtomicBool,
}

/// Sets the flag when dropped, i.e. when its stage unwinds (a stage that ends forgets it).
struct Failed<'a>(&'a AtomicBool);

impl Drop for Failed<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// A stage's count of finished fronts, on a cache line of its own (the stages poll each
/// other's).
#[repr(align(128))]
struct Front(AtomicUsize);

/// How far a stage may run ahead of the next one, in fronts: 1 makes the stages take turns;
/// 2 measured as fast as 3 to 32 or faster (CTCS and FBL, 2048², 2 threads), and keeps the
/// rows it hands over in cache.
const LEAD: usize = 2;

impl Pipeline {
    /// Wait until stage `s` has finished more than `front` fronts.
    fn wait_for(&self, s: usize, front: usize) {
        let mut spins = 0u32;
        while self.done[s].0.load(Ordering::Acquire) <= front {
            assert!(!self.failed.load(Ordering::Acquire), "another stage of the sweep panicked");
            spins += 1;
            if spins < 1 << 12 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// Levels `ts` (of `1..=levels`) of the region `cols(t)`, row by row along skewed fronts: at
/// front `f`, level `t` of row `f - t + 1`, lowest level first. In a pipeline (`stage`), the
/// front starts once the stage below has finished it, and no more than [`LEAD`] fronts ahead
/// of the stage above.
fn wavefront(
    stencil: &impl RowStencil,
    ny: usize,
    levels: usize,
    ts: RangeInclusive<usize>,
    cols: impl Fn(usize) -> Range<usize>,
    stage: Option<(&Pipeline, usize)>,
) {
    let mut scratch = stencil.scratch();
    for front in 0..ny + levels - 1 {
        if let Some((pipe, s)) = stage {
            if s > 0 {
                pipe.wait_for(s - 1, front);
            }
            if s + 1 < pipe.done.len() && front >= LEAD {
                pipe.wait_for(s + 1, front - LEAD);
            }
        }
        for t in ts.clone() {
            let Some(j) = (front + 1).checked_sub(t) else { break };
            let c = cols(t);
            if j < ny && !c.is_empty() {
                // SAFETY: the earlier levels of rows j - 1 ..= j + 1 were completed at earlier
                // fronts (row j + 1 earlier in this one: by this task, or by the stage below,
                // which finished this front), and so were their reads of what this
                // overwrites. Other tasks of the same phase touch other columns at every
                // level, or other levels of rows no other stage reads or writes now (the
                // stage above works at earlier fronts, on higher levels); the two phases do
                // not overlap.
                unsafe { stencil.update(&mut scratch, t, j, c) };
            }
        }
        if let Some((pipe, s)) = stage {
            pipe.done[s].0.store(front + 1, Ordering::Release);
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
        run_tiling(nx, ny, &Tiling::new(nx, depth, bands), steps);
    }

    fn run_tiling(nx: usize, ny: usize, tiling: &Tiling, steps: usize) {
        let tracker = Tracker { nx, ny, level: Mutex::new([vec![0; nx * ny], vec![usize::MAX; nx * ny]]) };
        sweep(&tracker, ny, tiling, steps);
        let level = tracker.level.into_inner().unwrap();
        assert!(level[steps % 2].iter().all(|&l| l == steps), "{nx}x{ny} {tiling:?} steps {steps}");
    }

    /// A stencil that panics at one level and row.
    struct Faulty(usize);

    impl RowStencil for Faulty {
        type Scratch = ();
        fn scratch(&self) {}
        unsafe fn update(&self, _: &mut (), t: usize, j: usize, _: Range<usize>) {
            assert!(!(t == self.0 && j == 3), "fault at level {t}");
        }
    }

    /// A stage that panics makes the sweep panic, in the lowest stage and in the highest,
    /// instead of leaving the other stages waiting for it.
    #[test]
    fn a_panicking_stage_ends_the_sweep() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        for level in [1, 8] {
            let run = || pool.install(|| sweep(&Faulty(level), 20, &Tiling::pipelined(16, 8, 2), 8));
            assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).is_err(), "level {level}");
        }
    }

    /// Pipelines of up to 4 stages on pools of 1 to 4 threads (so also more stages than
    /// threads, and more threads than levels), many times over: the tracker fails a run in
    /// which a stage reads a level that is not there yet or overwrites one still to be read.
    #[test]
    fn pipelined_stages_compute_every_point_once_from_complete_inputs() {
        for threads in 1..=4 {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                for (nx, ny) in [(1, 1), (7, 5), (40, 3), (64, 33)] {
                    for depth in [1, 2, 3, 8, 13] {
                        for stages in [2, 3, 4] {
                            let tiling = Tiling::pipelined(nx, depth, stages);
                            for steps in 1..=depth {
                                for _ in 0..4 {
                                    run_tiling(nx, ny, &tiling, steps);
                                }
                            }
                        }
                    }
                }
            });
        }
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
