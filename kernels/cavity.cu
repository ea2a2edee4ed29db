// Lid-driven cavity (artificial compressibility + MacCormack), one thread per interior node.
// Mirrors the CPU kernels in src/solvers/cavity/kernels.rs expression for expression (same
// evaluation order; --fmad=false), so both back ends round identically.
//
// One step: predictor (u, v, p -> us, vs, ps), walls on the starred fields, corrector (in
// place on u, v, p), walls on u, v, p. The corrector reads level n only at its own node and
// the starred fields at its neighbours, so updating u, v, p in place is race-free. The wall
// values (which copy pressure from the inward node) are a separate pass: folding them into
// the corrector would read a neighbour that another thread is rewriting.

// Interior-node arithmetic shared by the l2 and shared variants. `at(di, dj)` reads a
// neighbour of the node; `x` picks the array (0: u, 1: v, 2: p).
#define CAVITY_PREDICTOR(at, out_u, out_v, out_p)                                              \
    {                                                                                          \
        real u_ = at(0, 0, 0), v_ = at(1, 0, 0), p_ = at(2, 0, 0);                             \
        real ue_ = at(0, 1, 0), un = at(0, 0, 1), ve_ = at(1, 1, 0), vn = at(1, 0, 1);         \
        real two = (real)2;                                                                    \
        out_u = u_ - dtdx * (u_ * (ue_ - u_) + (at(2, 1, 0) - p_)) - dtdy * (v_ * (un - u_))   \
            + nudx2 * ((ue_ - two * u_) + at(0, -1, 0))                                        \
            + nudy2 * ((un - two * u_) + at(0, 0, -1));                                        \
        out_v = v_ - dtdx * (u_ * (ve_ - v_)) - dtdy * (v_ * (vn - v_) + (at(2, 0, 1) - p_))   \
            + nudx2 * ((ve_ - two * v_) + at(1, -1, 0))                                        \
            + nudy2 * ((vn - two * v_) + at(1, 0, -1));                                        \
        out_p = p_ - c2dx * (ue_ - u_) - c2dy * (vn - v_);                                     \
    }

#define CAVITY_CORRECTOR(at, uu, vv, pp)                                                       \
    {                                                                                          \
        real u_ = at(0, 0, 0), v_ = at(1, 0, 0), p_ = at(2, 0, 0);                             \
        real uw_ = at(0, -1, 0), us2 = at(0, 0, -1), vw_ = at(1, -1, 0), vs2 = at(1, 0, -1);   \
        real two = (real)2;                                                                    \
        uu = u_ - dtdx * (u_ * (u_ - uw_) + (p_ - at(2, -1, 0))) - dtdy * (v_ * (u_ - us2))    \
            + nudx2 * ((at(0, 1, 0) - two * u_) + uw_)                                         \
            + nudy2 * ((at(0, 0, 1) - two * u_) + us2);                                        \
        vv = v_ - dtdx * (u_ * (v_ - vw_)) - dtdy * (v_ * (v_ - vs2) + (p_ - at(2, 0, -1)))    \
            + nudx2 * ((at(1, 1, 0) - two * v_) + vw_)                                         \
            + nudy2 * ((at(1, 0, 1) - two * v_) + vs2);                                        \
        pp = p_ - c2dx * (u_ - uw_) - c2dy * (v_ - vs2);                                       \
    }

#define CAVITY_ARGS                                                                            \
    int nx, int ny, real dtdx, real dtdy, real nudx2, real nudy2, real c2dx, real c2dy

__device__ __forceinline__ bool interior(int i, int j, int nx, int ny) {
    return i > 0 && j > 0 && i < nx - 1 && j < ny - 1;
}

// ---- l2 variant: neighbours re-read through the L2 cache ----------------------------------

extern "C" __global__ void cavity_predictor_l2(
    const real* __restrict__ u, const real* __restrict__ v, const real* __restrict__ p,
    real* __restrict__ us, real* __restrict__ vs, real* __restrict__ ps, CAVITY_ARGS) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = block_row() * blockDim.y + threadIdx.y;
    if (!interior(i, j, nx, ny)) return;
    long long k = node(i, j, nx);
#define AT(x, di, dj) ((x) == 0 ? u : (x) == 1 ? v : p)[k + (di) + (long long)(dj) * nx]
    CAVITY_PREDICTOR(AT, us[k], vs[k], ps[k])
#undef AT
}

extern "C" __global__ void cavity_corrector_l2(
    real* __restrict__ u, real* __restrict__ v, real* __restrict__ p,
    const real* __restrict__ us, const real* __restrict__ vs, const real* __restrict__ ps, CAVITY_ARGS) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = block_row() * blockDim.y + threadIdx.y;
    if (!interior(i, j, nx, ny)) return;
    long long k = node(i, j, nx);
    real uu, vv, pp, half = (real)0.5;
#define AT(x, di, dj) ((x) == 0 ? us : (x) == 1 ? vs : ps)[k + (di) + (long long)(dj) * nx]
    CAVITY_CORRECTOR(AT, uu, vv, pp)
#undef AT
    u[k] = half * (u[k] + uu);
    v[k] = half * (v[k] + vv);
    p[k] = half * (p[k] + pp);
}

// ---- shared variant: each block stages (bx+2) x (by+2) tiles of its three inputs ----------
// Dynamic shared memory: 3 * (bx+2) * (by+2) reals.

// Stage the block's tiles of a, b, c (zeros outside the grid) and return the tile index of
// this thread's node, whose grid indices go to i, j.
__device__ __forceinline__ int stage_tiles(
    real* tile, const real* a, const real* b, const real* c, int nx, int ny, int& i, int& j) {
    int bx = blockDim.x, by = blockDim.y, tw = bx + 2, tn = tw * (by + 2);
    int i0 = blockIdx.x * bx - 1, j0 = block_row() * by - 1;  // tile origin (halo included)
    for (int q = threadIdx.y * bx + threadIdx.x; q < tn; q += bx * by) {
        int ii = i0 + q % tw, jj = j0 + q / tw;
        bool in = ii >= 0 && ii < nx && jj >= 0 && jj < ny;
        long long k = node(ii, jj, nx);
        tile[q] = in ? a[k] : (real)0;
        tile[tn + q] = in ? b[k] : (real)0;
        tile[2 * tn + q] = in ? c[k] : (real)0;
    }
    __syncthreads();
    i = i0 + 1 + threadIdx.x;
    j = j0 + 1 + threadIdx.y;
    return (threadIdx.y + 1) * tw + threadIdx.x + 1;
}

// Array x's value at offset (di, dj) from this thread's node in the tiles.
#define TILE(x, di, dj) tile[(x) * tn + q + (di) + (dj) * tw]

extern "C" __global__ void cavity_predictor_shared(
    const real* __restrict__ u, const real* __restrict__ v, const real* __restrict__ p,
    real* __restrict__ us, real* __restrict__ vs, real* __restrict__ ps, CAVITY_ARGS) {
    extern __shared__ unsigned char smem[];
    real* tile = (real*)smem;
    int i, j, q = stage_tiles(tile, u, v, p, nx, ny, i, j);
    int tw = blockDim.x + 2, tn = tw * (blockDim.y + 2);
    if (!interior(i, j, nx, ny)) return;
    long long k = node(i, j, nx);
    CAVITY_PREDICTOR(TILE, us[k], vs[k], ps[k])
}

extern "C" __global__ void cavity_corrector_shared(
    real* __restrict__ u, real* __restrict__ v, real* __restrict__ p,
    const real* __restrict__ us, const real* __restrict__ vs, const real* __restrict__ ps, CAVITY_ARGS) {
    extern __shared__ unsigned char smem[];
    real* tile = (real*)smem;
    int i, j, q = stage_tiles(tile, us, vs, ps, nx, ny, i, j);
    int tw = blockDim.x + 2, tn = tw * (blockDim.y + 2);
    if (!interior(i, j, nx, ny)) return;
    long long k = node(i, j, nx);
    real uu, vv, pp, half = (real)0.5;
    CAVITY_CORRECTOR(TILE, uu, vv, pp)
    u[k] = half * (u[k] + uu);
    v[k] = half * (v[k] + vv);
    p[k] = half * (p[k] + pp);
}

// ---- walls: one thread per boundary node, after each substep ------------------------------
// Side and bottom walls u = v = 0, lid u = u0, v = 0; pressure copied from the inward node.
// Corners: u = v = 0 and the mean of their two edge neighbours' pressures; both neighbours
// hold the pressure of the diagonal interior node after this pass, so the mean is exactly
// that value. Every thread reads interior nodes only: no thread reads what another writes.
// Thread t: [0, nx) bottom row, [nx, 2nx) top row, then the side walls of rows 1..ny-2
// (left, right alternating).
extern "C" __global__ void cavity_walls(real* __restrict__ u, real* __restrict__ v, real* __restrict__ p,
                                        int nx, int ny, real u0) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long sides = 2LL * (ny - 2);
    if (t >= 2LL * nx + sides) return;
    int i, j, ii, jj;  // the node and the interior node its pressure comes from
    real uw = (real)0;
    if (t < 2LL * nx) {
        bool top = t >= nx;
        i = (int)(top ? t - nx : t);
        j = top ? ny - 1 : 0;
        jj = top ? ny - 2 : 1;
        ii = i == 0 ? 1 : (i == nx - 1 ? nx - 2 : i);
        if (top && i > 0 && i < nx - 1) uw = u0;
    } else {
        long long s = t - 2LL * nx;
        j = (int)(s / 2) + 1;
        jj = j;
        bool right = s % 2 == 1;
        i = right ? nx - 1 : 0;
        ii = right ? nx - 2 : 1;
    }
    long long k = node(i, j, nx);
    u[k] = uw;
    v[k] = (real)0;
    p[k] = p[node(ii, jj, nx)];
}
