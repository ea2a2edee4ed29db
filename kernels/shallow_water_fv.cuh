// What the finite-volume schemes (CDKLM16, KP07) share on the device, compiled after
// shallow_water.cuh in front of kernels/shallow_water_cdklm16.cu and shallow_water_kp07.cu.
// Mirrors src/solvers/shallow_water/fv.rs and sponge.rs expression for expression (same
// evaluation order; --fmad=false), so that every value rounds as on the CPU:
// - the stage kernels' frame: Q^n, the stage input and the output buffer, the Runge-Kutta
//   update with the friction divisor, in an l2 variant (every face flux computed by both
//   cells beside it) and a shared variant (a tile of the stage input with a halo of two,
//   each face flux computed once into shared memory);
// - the ghost fill (wall mirrors, periodic north-south, periodic east-west) and the sponges,
//   in the CPU's order, one launch per pass that reads what the previous one wrote;
// - the CFL reduction: per-block minima, then one block for the rest (min is exact, so any
//   order gives the host formula's value).
// Fields are (nx+4) x (ny+4) with two ghost layers, Bi is (nx+5) x (ny+5), f one value per
// stored row; (l, k) is a stored (row, column).

// The device clock of the adaptive steps (f64 values, see fv_clock): the time, the length
// of the current step, whether the current step runs (1) or is skipped (0), the steps taken
// since the clock was started, the current step's proposal, whether the steps stop after the
// current one, and whether the state had no stable step.
#define FV_T 0
#define FV_DT 1
#define FV_RUNS 2
#define FV_STEPS 3
#define FV_PROPOSAL 4
#define FV_STOP 5
#define FV_FAILED 6
#define FV_CLOCK 7

__device__ __forceinline__ bool fv_runs(const double* clock) {
    return clock[FV_RUNS] != 0.0;
}

// Rust's signum: +-1 with the sign of a (also for zeros), NaN for NaN.
__device__ __forceinline__ real fv_signum(real a) {
    return a != a ? a : copysign((real)1, a);
}

// fv::minmod: 1/4 s(a) (s(a) + s(b)) (s(b) + s(c)) min(|a|, |b|, |c|), as written.
__device__ __forceinline__ real fv_minmod(real a, real b, real c) {
    real sa = fv_signum(a), sb = fv_signum(b), sc = fv_signum(c);
    return (real)0.25 * sa * (sa + sb) * (sb + sc) * fmin(fmin(fabs(a), fabs(b)), fabs(c));
}

// fv::min_nan: NaN when either argument is NaN.
__device__ __forceinline__ real fv_min_nan(real a, real b) {
    return (a < b || a != a) ? a : b;
}

// rk::Stage::apply: u - c dt r, blended with u0 as a u0 + b v.
__device__ __forceinline__ real fv_apply(real u0, real u, real dt, real r, real c, int blend, real a, real b) {
    real v = u - c * dt * r;
    return blend ? a * u0 + b * v : v;
}

// What the operators read besides Q (fv::Grid).
struct FvGrid {
    const real* __restrict__ bi;
    const real* __restrict__ bm;
    const real* __restrict__ f;
    int nx, ny, w, wb;
    real dx, dy, g, theta, wx, wy;
    __device__ __forceinline__ real b(int l, int k) const { return bi[sw_at(k, l, wb)]; }
};

// Q of the stage input read from global memory (through L2); velocities computed on demand.
struct FvGlobal {
    const real* __restrict__ pe;
    const real* __restrict__ phu;
    const real* __restrict__ phv;
    const real* __restrict__ pbm;
    int w;
    __device__ __forceinline__ real e(int l, int k) const { return pe[sw_at(k, l, w)]; }
    __device__ __forceinline__ real hu(int l, int k) const { return phu[sw_at(k, l, w)]; }
    __device__ __forceinline__ real hv(int l, int k) const { return phv[sw_at(k, l, w)]; }
    __device__ __forceinline__ real u(int l, int k) const {
        long long i = sw_at(k, l, w);
        real h = pe[i] + pbm[i];
        return phu[i] / h;
    }
    __device__ __forceinline__ real v(int l, int k) const {
        long long i = sw_at(k, l, w);
        real h = pe[i] + pbm[i];
        return phv[i] / h;
    }
};

// Q (and u, v where the scheme uses them) of a block's tile in shared memory; (l0, k0) is the
// stored index of the tile's first entry.
struct FvTile {
    const real* t;
    int tw, tn, l0, k0;
    __device__ __forceinline__ int at(int l, int k) const { return (l - l0) * tw + (k - k0); }
    __device__ __forceinline__ real e(int l, int k) const { return t[at(l, k)]; }
    __device__ __forceinline__ real hu(int l, int k) const { return t[tn + at(l, k)]; }
    __device__ __forceinline__ real hv(int l, int k) const { return t[2 * tn + at(l, k)]; }
    __device__ __forceinline__ real u(int l, int k) const { return t[3 * tn + at(l, k)]; }
    __device__ __forceinline__ real v(int l, int k) const { return t[4 * tn + at(l, k)]; }
};

// The arguments of every stage kernel: the stage input, Q^n and the output (each may not be
// the output; input and Q^n may be the same buffer), the grid, the device clock (the step's
// length, and whether the step runs) and the stage's coefficients; the friction coefficient
// of the stage is drag_rate dt.
#define FV_STAGE_ARGS                                                                                  \
    const real *__restrict__ e, const real *__restrict__ hu, const real *__restrict__ hv,              \
        const real *__restrict__ e0, const real *__restrict__ hu0, const real *__restrict__ hv0,       \
        real *__restrict__ oe, real *__restrict__ ohu, real *__restrict__ ohv,                         \
        const real *__restrict__ bi, const real *__restrict__ bm, const real *__restrict__ f, int nx,  \
        int ny, real dx, real dy, real g, real theta, real wx, real wy, const double *__restrict__ clock, \
        real c, int blend, real a, real b, int friction, real drag_rate
#define FV_STAGE_PASS                                                                                  \
    e, hu, hv, e0, hu0, hv0, oe, ohu, ohv, bi, bm, f, nx, ny, dx, dy, g, theta, wx, wy, clock, c, blend, a, b, \
        friction, drag_rate

// Fv::stage for one interior cell from its L: the Runge-Kutta update, with the friction
// divisor 1 + drag / h on the transports (h of the stage input).
__device__ __forceinline__ void fv_update(int l, int k, const real* L, real dt, real drag, FV_STAGE_ARGS) {
    long long i = sw_at(k, l, nx + 4);
    oe[i] = fv_apply(e0[i], e[i], dt, -L[0], c, blend, a, b);
    if (friction) {
        real div = (real)1 + drag / (e[i] + bm[i]);
        ohu[i] = fv_apply(hu0[i], hu[i], dt, -L[1], c, blend, a, b) / div;
        ohv[i] = fv_apply(hv0[i], hv[i], dt, -L[2], c, blend, a, b) / div;
    } else {
        ohu[i] = fv_apply(hu0[i], hu[i], dt, -L[1], c, blend, a, b);
        ohv[i] = fv_apply(hv0[i], hv[i], dt, -L[2], c, blend, a, b);
    }
}

// A scheme S provides TILES (3: eta, hu, hv; 5: also u, v) and, for any accessor Q:
//   face_x(q, gr, l, k, F): the flux through the face between cells (l, k) and (l, k+1);
//   face_y(q, gr, r, k, G): the flux through the face between cells (r, k) and (r+1, k);
//   residual(q, gr, l, k, Fw, Fe, Gs, Gn, L): L of cell (l, k) from its four face fluxes.

// l2 variant: one thread per interior cell; each face flux is computed by both its cells
// (the same operations on the same values, so the same bits).
template <class S>
__device__ __forceinline__ void fv_stage_l2(FV_STAGE_ARGS) {
    int k = blockIdx.x * blockDim.x + threadIdx.x + 2;
    int l = block_row() * blockDim.y + threadIdx.y + 2;
    if (k >= nx + 2 || l >= ny + 2 || !fv_runs(clock)) return;
    real dt = (real)clock[FV_DT], drag = drag_rate * dt;
    FvGrid gr{bi, bm, f, nx, ny, nx + 4, nx + 5, dx, dy, g, theta, wx, wy};
    FvGlobal q{e, hu, hv, bm, nx + 4};
    real Fw[3], Fe[3], Gs[3], Gn[3], L[3];
    S::face_x(q, gr, l, k - 1, Fw);
    S::face_x(q, gr, l, k, Fe);
    S::face_y(q, gr, l - 1, k, Gs);
    S::face_y(q, gr, l, k, Gn);
    S::residual(q, gr, l, k, Fw, Fe, Gs, Gn, L);
    fv_update(l, k, L, dt, drag, FV_STAGE_PASS);
}

// Shared variant: the block stages the stage input (and u, v) of its cells with a halo of
// two, computes each face flux of its cells once into shared memory, then L and the update.
// Dynamic shared memory: S::TILES (bx+4)(by+4) + 3 by (bx+1) + 3 (by+1) bx reals.
template <class S>
__device__ __forceinline__ void fv_stage_shared(FV_STAGE_ARGS) {
    extern __shared__ unsigned char smem[];
    // The same for every thread of the block, so before any __syncthreads.
    if (!fv_runs(clock)) return;
    real dt = (real)clock[FV_DT], drag = drag_rate * dt;
    real* t = (real*)smem;
    int bx = blockDim.x, by = blockDim.y, tx = threadIdx.x, ty = threadIdx.y;
    int w = nx + 4, h = ny + 4;
    int k0 = blockIdx.x * bx + 2, l0 = block_row() * by + 2;
    int tw = bx + 4, tn = tw * (by + 4);
    for (int n = ty * bx + tx; n < tn; n += bx * by) {
        int l = l0 - 2 + n / tw, k = k0 - 2 + n % tw;
        // Entries past the stored array feed only faces of cells outside the domain.
        real qe = (real)0, qu = (real)0, qv = (real)0, u = (real)0, v = (real)0;
        if (l < h && k < w) {
            long long i = sw_at(k, l, w);
            qe = e[i];
            qu = hu[i];
            qv = hv[i];
            if (S::TILES == 5) {
                real hh = qe + bm[i];
                u = qu / hh;
                v = qv / hh;
            }
        }
        t[n] = qe;
        t[tn + n] = qu;
        t[2 * tn + n] = qv;
        if (S::TILES == 5) {
            t[3 * tn + n] = u;
            t[4 * tn + n] = v;
        }
    }
    __syncthreads();
    FvGrid gr{bi, bm, f, nx, ny, nx + 4, nx + 5, dx, dy, g, theta, wx, wy};
    FvTile q{t, tw, tn, l0 - 2, k0 - 2};
    // x faces: by rows of bx+1 (face 0 west of the block); y faces: by+1 rows of bx.
    real* F = t + S::TILES * tn;
    real* G = F + 3 * by * (bx + 1);
    int fn = by * (bx + 1), gn = (by + 1) * bx;
    int l = l0 + ty, k = k0 + tx;
    bool in = l < ny + 2 && k < nx + 2;
    real o[3];
    if (in) {
        S::face_x(q, gr, l, k - 1, o);
        for (int m = 0; m < 3; ++m) F[m * fn + ty * (bx + 1) + tx] = o[m];
        if (tx == bx - 1 || k == nx + 1) {
            S::face_x(q, gr, l, k, o);
            for (int m = 0; m < 3; ++m) F[m * fn + ty * (bx + 1) + tx + 1] = o[m];
        }
        S::face_y(q, gr, l - 1, k, o);
        for (int m = 0; m < 3; ++m) G[m * gn + ty * bx + tx] = o[m];
        if (ty == by - 1 || l == ny + 1) {
            S::face_y(q, gr, l, k, o);
            for (int m = 0; m < 3; ++m) G[m * gn + (ty + 1) * bx + tx] = o[m];
        }
    }
    __syncthreads();
    if (!in) return;
    real Fw[3], Fe[3], Gs[3], Gn[3], L[3];
    for (int m = 0; m < 3; ++m) {
        Fw[m] = F[m * fn + ty * (bx + 1) + tx];
        Fe[m] = F[m * fn + ty * (bx + 1) + tx + 1];
        Gs[m] = G[m * gn + ty * bx + tx];
        Gn[m] = G[m * gn + (ty + 1) * bx + tx];
    }
    S::residual(q, gr, l, k, Fw, Fe, Gs, Gn, L);
    fv_update(l, k, L, dt, drag, FV_STAGE_PASS);
}

// ---- ghost fill (fv::exchange_and_fill): three launches, each reading what the one before wrote ----

// Periodic north-south: rows (0, ny), (1, ny+1), (ny+2, 2), (ny+3, 3), every column; one
// thread per stored column.
extern "C" __global__ void fv_periodic_y(const double* __restrict__ clock, real* __restrict__ e,
                                         real* __restrict__ hu, real* __restrict__ hv, int nx, int ny) {
    int k = blockIdx.x * blockDim.x + threadIdx.x, w = nx + 4;
    if (k >= w || !fv_runs(clock)) return;
    int dst[4] = {0, 1, ny + 2, ny + 3}, src[4] = {ny, ny + 1, 2, 3};
    real* q[3] = {e, hu, hv};
    for (int m = 0; m < 3; ++m)
        for (int p = 0; p < 4; ++p) q[m][sw_at(k, dst[p], w)] = q[m][sw_at(k, src[p], w)];
}

// Periodic east-west: columns (0, nx), (1, nx+1), (nx+2, 2), (nx+3, 3), every row; one
// thread per stored row.
extern "C" __global__ void fv_periodic_x(const double* __restrict__ clock, real* __restrict__ e,
                                         real* __restrict__ hu, real* __restrict__ hv, int nx, int ny) {
    int l = blockIdx.x * blockDim.x + threadIdx.x, w = nx + 4;
    if (l >= ny + 4 || !fv_runs(clock)) return;
    int dst[4] = {0, 1, nx + 2, nx + 3}, src[4] = {nx, nx + 1, 2, 3};
    real* q[3] = {e, hu, hv};
    for (int m = 0; m < 3; ++m)
        for (int p = 0; p < 4; ++p) q[m][sw_at(dst[p], l, w)] = q[m][sw_at(src[p], l, w)];
}

// Wall mirrors over the interior span: threads [0, nx) the north and south ghost rows of
// interior column t+2, threads [nx, nx+ny) the east and west ghost columns of interior row
// t-nx+2. η and the tangential transport are copied, the normal one negated. `walls`: bits
// 1 north, 2 east, 4 south, 8 west.
extern "C" __global__ void fv_walls(const double* __restrict__ clock, real* __restrict__ e, real* __restrict__ hu,
                                    real* __restrict__ hv, int nx, int ny, int walls) {
    int t = blockIdx.x * blockDim.x + threadIdx.x, w = nx + 4;
    if (t >= nx + ny || !fv_runs(clock)) return;
    real* q[3] = {e, hu, hv};
    for (int m = 0; m < 3; ++m) {
        if (t < nx) {
            int k = t + 2;
            real sign = m == 2 ? (real)-1 : (real)1;
            if (walls & 1) {
                q[m][sw_at(k, ny + 2, w)] = sign * q[m][sw_at(k, ny + 1, w)];
                q[m][sw_at(k, ny + 3, w)] = sign * q[m][sw_at(k, ny, w)];
            }
            if (walls & 4) {
                q[m][sw_at(k, 1, w)] = sign * q[m][sw_at(k, 2, w)];
                q[m][sw_at(k, 0, w)] = sign * q[m][sw_at(k, 3, w)];
            }
        } else {
            int l = t - nx + 2;
            real sign = m == 1 ? (real)-1 : (real)1;
            if (walls & 2) {
                q[m][sw_at(nx + 2, l, w)] = sign * q[m][sw_at(nx + 1, l, w)];
                q[m][sw_at(nx + 3, l, w)] = sign * q[m][sw_at(nx, l, w)];
            }
            if (walls & 8) {
                q[m][sw_at(1, l, w)] = sign * q[m][sw_at(2, l, w)];
                q[m][sw_at(0, l, w)] = sign * q[m][sw_at(3, l, w)];
            }
        }
    }
}

// ---- sponges (sponge::relax, in f64 as there) ----
// `cells[4]` per side N, E, S, W (0: no sponge); `weights` holds per sponge side, in that
// order, one f64 per sponge row j: the relaxation weight a_j, or j / cells where the side's
// bit in `linear` (1 N, 2 E, 4 S, 8 W) is set.

__device__ __forceinline__ void fv_relax(real* q, const real* x, long long i, long long inner, int j,
                                         const double* wts, bool linear) {
    double v = (double)q[i], ext = (double)x[i];
    double r = linear ? ext + wts[j] * ((double)q[inner] - ext) : (1.0 - wts[j]) * v + wts[j] * ext;
    q[i] = (real)r;
}

// South then north sponge rows of stored column s (every column, ghosts included).
extern "C" __global__ void fv_sponge_rows(const double* __restrict__ clock, real* __restrict__ e,
                                          real* __restrict__ hu, real* __restrict__ hv,
                                          const real* __restrict__ xe, const real* __restrict__ xu,
                                          const real* __restrict__ xv, const double* __restrict__ weights,
                                          int nx, int ny, int cn, int ce, int cs, int cw, int linear) {
    int s = blockIdx.x * blockDim.x + threadIdx.x, w = nx + 4;
    if (s >= w || !fv_runs(clock)) return;
    real* q[3] = {e, hu, hv};
    const real* x[3] = {xe, xu, xv};
    // Row `cells` (the inner value) is never one of the side's own sponge rows.
    for (int m = 0; m < 3; ++m) {
        if (cs > 0) {
            const double* wts = weights + cn + ce;
            long long inner = sw_at(s, 2 + cs, w);
            for (int j = 0; j < cs; ++j) fv_relax(q[m], x[m], sw_at(s, 2 + j, w), inner, j, wts, linear & 4);
        }
        if (cn > 0) {
            long long inner = sw_at(s, 2 + ny - 1 - cn, w);
            for (int j = 0; j < cn; ++j)
                fv_relax(q[m], x[m], sw_at(s, 2 + ny - 1 - j, w), inner, j, weights, linear & 1);
        }
    }
}

// West then east sponge columns of stored row s (every row, ghosts included).
extern "C" __global__ void fv_sponge_cols(const double* __restrict__ clock, real* __restrict__ e,
                                          real* __restrict__ hu, real* __restrict__ hv,
                                          const real* __restrict__ xe, const real* __restrict__ xu,
                                          const real* __restrict__ xv, const double* __restrict__ weights,
                                          int nx, int ny, int cn, int ce, int cs, int cw, int linear) {
    int s = blockIdx.x * blockDim.x + threadIdx.x, w = nx + 4;
    if (s >= ny + 4 || !fv_runs(clock)) return;
    real* q[3] = {e, hu, hv};
    const real* x[3] = {xe, xu, xv};
    for (int m = 0; m < 3; ++m) {
        if (cw > 0) {
            long long inner = sw_at(2 + cw, s, w);
            for (int j = 0; j < cw; ++j)
                fv_relax(q[m], x[m], sw_at(2 + j, s, w), inner, j, weights + cn + ce + cs, linear & 8);
        }
        if (ce > 0) {
            long long inner = sw_at(2 + nx - 1 - ce, s, w);
            for (int j = 0; j < ce; ++j)
                fv_relax(q[m], x[m], sw_at(2 + nx - 1 - j, s, w), inner, j, weights + cn, linear & 2);
        }
    }
}

// ---- CFL reduction (Fv::dt_limit) ----

// fv::cell_dt: min(dx / (|u| + c), dy / (|v| + c)), h = eta + Bm, c = sqrt(g h).
__device__ __forceinline__ real fv_cell_dt(real eta, real hu, real hv, real bm, real g, real dx, real dy) {
    real h = eta + bm;
    real u = hu / h;
    real v = hv / h;
    real c = sqrt(g * h);
    return fv_min_nan(dx / (fabs(u) + c), dy / (fabs(v) + c));
}

// min_nan over a block's values in s[0..blockDim.x) (a power of two) into s[0].
__device__ __forceinline__ void fv_block_min(real* s) {
    int t = threadIdx.x;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (t < stride) s[t] = fv_min_nan(s[t], s[t + stride]);
        __syncthreads();
    }
}

// Per block: the minimum of cell_dt over a grid-stride share of the interior cells into
// partial[blockIdx.x]; `inf` is +infinity (the empty minimum). Shared memory: blockDim.x reals.
extern "C" __global__ void fv_dt_blocks(const real* __restrict__ e, const real* __restrict__ hu,
                                        const real* __restrict__ hv, const real* __restrict__ bm, int nx, int ny,
                                        real g, real dx, real dy, real inf, real* __restrict__ partial) {
    extern __shared__ unsigned char smem[];
    real* s = (real*)smem;
    real m = inf;
    long long cells = (long long)nx * ny;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long n = (long long)blockIdx.x * blockDim.x + threadIdx.x; n < cells; n += stride) {
        long long i = sw_at((int)(n % nx) + 2, (int)(n / nx) + 2, nx + 4);
        m = fv_min_nan(m, fv_cell_dt(e[i], hu[i], hv[i], bm[i], g, dx, dy));
    }
    s[threadIdx.x] = m;
    fv_block_min(s);
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

// One block: ½ min of partial[0..n) into out[0], the stable time step of Fv::dt_limit.
extern "C" __global__ void fv_dt_final(const real* __restrict__ partial, int n, real inf, real* __restrict__ out) {
    extern __shared__ unsigned char smem[];
    real* s = (real*)smem;
    real m = inf;
    for (int i = threadIdx.x; i < n; i += blockDim.x) m = fv_min_nan(m, partial[i]);
    s[threadIdx.x] = m;
    fv_block_min(s);
    if (threadIdx.x == 0) out[0] = (real)0.5 * s[0];
}

// ---- the step's length (driver.rs's step and schedule.rs's Landing, on the device) ----

// One thread: the length of the next step into clock[FV_DT], and whether it runs. With
// courant > 0 a CFL-adaptive step of a series started with `start` at time t0: courant times
// the limit that fv_dt_final left in limit[0], shortened or stretched (by fv_slack) to land on
// the next instant (end_time, or a multiple of `every` if every > 0), as
// Landing::step_length; the series stops after the step that reaches an instant, as the
// driver's end and output schedules would see it, or on a state with no stable step. With
// courant = 0 a step of `given` (the host chose and landed it).
// schedule.rs's slack: how close a clock stepping dt must come to `instant` to have reached it.
__device__ double fv_slack(double dt, double instant, double tol, double round) {
    return fmin(fmax(tol * fmin(dt, fabs(instant)), round * fabs(instant)), 1e-3 * dt);
}

extern "C" __global__ void fv_clock(const real* __restrict__ limit, double courant, double given, double end_time,
                                    double every, double tol, double round, int start, double t0,
                                    double* __restrict__ clock) {
    if (courant <= 0.0) {
        clock[FV_DT] = given;
        clock[FV_RUNS] = 1.0;
        return;
    }
    if (start) {
        clock[FV_T] = t0;
        clock[FV_STEPS] = 0.0;
        clock[FV_STOP] = 0.0;
        clock[FV_FAILED] = 0.0;
    }
    clock[FV_RUNS] = 0.0;
    if (clock[FV_STOP] != 0.0) return;
    double lim = (double)limit[0];
    if (!(isfinite(lim) && lim > 0.0)) {
        clock[FV_FAILED] = 1.0;
        clock[FV_STOP] = 1.0;
        return;
    }
    double t = clock[FV_T], proposal = courant * lim;
    double target = end_time;
    if (every > 0.0) target = fmin(target, (floor(t / every + tol) + 1.0) * every);
    double remaining = target - t;
    double dt = remaining <= proposal + fv_slack(proposal, target, tol, round) ? remaining : proposal;
    double next = t + dt;
    clock[FV_T] = next;
    clock[FV_DT] = dt;
    clock[FV_RUNS] = 1.0;
    clock[FV_STEPS] += 1.0;
    clock[FV_PROPOSAL] = proposal;
    bool output = every > 0.0 && floor(next / every + tol) > floor(t0 / every + tol);
    if (output || end_time - next <= fv_slack(proposal, end_time, tol, round)) clock[FV_STOP] = 1.0;
}
