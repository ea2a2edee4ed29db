// FBL, the linear forward-backward scheme on the C grid (spec 3): one fused step, reading
// H, eta, U, V of the current level and writing U*, V*, eta* into the other buffer. Mirrors
// src/solvers/shallow_water/fbl.rs expression for expression (same evaluation order;
// --fmad=false), so both back ends round identically. Storage as fd_boundary.rs: U[l][c] is
// the west face of halo column c, V[l][c] the south face of halo row l.
//
// One thread per interior cell (c, l), c = 1..=nx, l = 1..=ny. Its eta* needs U* of rows
// l-1..l+1 on faces c, c+1 (rows 0 and ny+1 are computed from the ghosts, never stored) and
// V* of rows l, l+1. The thread stores U* of face c (and of face nx+1 in the last column) and
// V* of row l; the north boundary row of V is left to the ghost pass, as on the CPU.

struct FblArgs {
    real dt, g, dx, dy, rdt, dt_dx, dt_dy, wind_x, wind_y;
    int nx, ny, friction;
    // Wall sides, bits: 1 north, 2 east, 4 south, 8 west.
    int walls;
};

#define FBL_WALL_N 1
#define FBL_WALL_E 2
#define FBL_WALL_S 4
#define FBL_WALL_W 8

// U* of row l (0..=ny+1) on face c (1..=nx+1): fbl.rs `u_row`.
__device__ __forceinline__ real fbl_u(const real* __restrict__ h, const real* __restrict__ eta,
                                      const real* __restrict__ hu, const real* __restrict__ hv,
                                      const real* __restrict__ f_v, const FblArgs& a, int c, int l) {
    if ((c == 1 && (a.walls & FBL_WALL_W)) || (c == a.nx + 1 && (a.walls & FBL_WALL_E))) return (real)0;
    int we = a.nx + 2, wu = a.nx + 3;
    real half = (real)0.5, quarter = (real)0.25;
    real h_u = half * (h[sw_at(c - 1, l, we)] + h[sw_at(c, l, we)]);
    real f_s = f_v[l], f_n = f_v[l + 1];
    real fv = quarter * (f_s * (hv[sw_at(c - 1, l, we)] + hv[sw_at(c, l, we)])
                         + f_n * (hv[sw_at(c - 1, l + 1, we)] + hv[sw_at(c, l + 1, we)]));
    real p = a.g * h_u * (eta[sw_at(c - 1, l, we)] - eta[sw_at(c, l, we)]) / a.dx;
    real u = hu[sw_at(c, l, wu)] + a.dt * (fv + p + a.wind_x);
    return a.friction ? h_u / (h_u + a.rdt) * u : u;
}

// V* of row l (1..=ny+1) on column c (1..=nx), from U* of rows l-1 (us0 face c, us1 face c+1)
// and l (un0, un1): fbl.rs `v_row`.
__device__ __forceinline__ real fbl_v(const real* __restrict__ h, const real* __restrict__ eta,
                                      const real* __restrict__ hv, const real* __restrict__ f_u, const FblArgs& a,
                                      int c, int l, real us0, real us1, real un0, real un1) {
    if ((l == 1 && (a.walls & FBL_WALL_S)) || (l == a.ny + 1 && (a.walls & FBL_WALL_N))) return (real)0;
    int we = a.nx + 2;
    real half = (real)0.5, quarter = (real)0.25;
    real h_v = half * (h[sw_at(c, l - 1, we)] + h[sw_at(c, l, we)]);
    real f_s = f_u[l - 1], f_n = f_u[l];
    real fu = quarter * (f_s * (us0 + us1) + f_n * (un0 + un1));
    real p = a.g * h_v * (eta[sw_at(c, l - 1, we)] - eta[sw_at(c, l, we)]) / a.dy;
    real v = hv[sw_at(c, l, we)] + a.dt * (-fu + p + a.wind_y);
    return a.friction ? h_v / (h_v + a.rdt) * v : v;
}

// eta* of cell (c, l) from U* of its west/east faces and V* of its south/north faces.
__device__ __forceinline__ real fbl_eta(const real* __restrict__ eta, const FblArgs& a, int c, int l,
                                        real uw, real ue, real vs, real vn) {
    return eta[sw_at(c, l, a.nx + 2)] - a.dt_dx * (ue - uw) - a.dt_dy * (vn - vs);
}

#define FBL_ARGS                                                                                          \
    const real *__restrict__ h, const real *__restrict__ eta, const real *__restrict__ hu,                \
        const real *__restrict__ hv, const real *__restrict__ f_u, const real *__restrict__ f_v,          \
        real *__restrict__ eta_out, real *__restrict__ hu_out, real *__restrict__ hv_out, FblArgs a

// Store the cell's results (see the top of the file).
__device__ __forceinline__ void fbl_store(real* eta_out, real* hu_out, real* hv_out, const FblArgs& a, int c,
                                          int l, real e, real u0, real u1, real v) {
    int we = a.nx + 2, wu = a.nx + 3;
    eta_out[sw_at(c, l, we)] = e;
    hu_out[sw_at(c, l, wu)] = u0;
    if (c == a.nx) hu_out[sw_at(c + 1, l, wu)] = u1;
    hv_out[sw_at(c, l, we)] = v;
}

// ---- l2 variant: each thread computes the six U* and two V* it needs ----------------------

extern "C" __global__ void fbl_step_l2(FBL_ARGS) {
    int c = blockIdx.x * blockDim.x + threadIdx.x + 1;
    int l = block_row() * blockDim.y + threadIdx.y + 1;
    if (c > a.nx || l > a.ny) return;
    real us0 = fbl_u(h, eta, hu, hv, f_v, a, c, l - 1), us1 = fbl_u(h, eta, hu, hv, f_v, a, c + 1, l - 1);
    real u0 = fbl_u(h, eta, hu, hv, f_v, a, c, l), u1 = fbl_u(h, eta, hu, hv, f_v, a, c + 1, l);
    real un0 = fbl_u(h, eta, hu, hv, f_v, a, c, l + 1), un1 = fbl_u(h, eta, hu, hv, f_v, a, c + 1, l + 1);
    real vs = fbl_v(h, eta, hv, f_u, a, c, l, us0, us1, u0, u1);
    real vn = fbl_v(h, eta, hv, f_u, a, c, l + 1, u0, u1, un0, un1);
    fbl_store(eta_out, hu_out, hv_out, a, c, l, fbl_eta(eta, a, c, l, u0, u1, vs, vn), u0, u1, vs);
}

// ---- shared variant: U* and V* of the block's tile (with a halo) computed once each --------
// Dynamic shared memory: (by+2) x (bx+1) U* (rows l0-1..l0+by, faces c0..c0+bx) and
// (by+1) x bx V* (rows l0..l0+by, columns c0..c0+bx-1) reals.

extern "C" __global__ void fbl_step_shared(FBL_ARGS) {
    extern __shared__ unsigned char smem[];
    int bx = blockDim.x, by = blockDim.y, t = threadIdx.y * bx + threadIdx.x, n = bx * by;
    int c0 = blockIdx.x * bx + 1, l0 = block_row() * by + 1;
    int uw = bx + 1, vw = bx;
    real* us = (real*)smem;
    real* vs = us + (by + 2) * uw;
    for (int q = t; q < (by + 2) * uw; q += n) {
        int c = c0 + q % uw, l = l0 - 1 + q / uw;
        if (c <= a.nx + 1 && l <= a.ny + 1) us[q] = fbl_u(h, eta, hu, hv, f_v, a, c, l);
    }
    __syncthreads();
    for (int q = t; q < (by + 1) * vw; q += n) {
        int i = q % vw, r = q / vw, c = c0 + i, l = l0 + r;
        // Row r of V* reads U* rows r (south) and r + 1 (north) of the tile.
        if (c <= a.nx && l <= a.ny + 1)
            vs[q] = fbl_v(h, eta, hv, f_u, a, c, l, us[r * uw + i], us[r * uw + i + 1], us[(r + 1) * uw + i],
                          us[(r + 1) * uw + i + 1]);
    }
    __syncthreads();
    int i = threadIdx.x, j = threadIdx.y, c = c0 + i, l = l0 + j;
    if (c > a.nx || l > a.ny) return;
    real u0 = us[(j + 1) * uw + i], u1 = us[(j + 1) * uw + i + 1];
    real v0 = vs[j * vw + i], v1 = vs[(j + 1) * vw + i];
    fbl_store(eta_out, hu_out, hv_out, a, c, l, fbl_eta(eta, a, c, l, u0, u1, v0, v1), u0, u1, v0);
}
