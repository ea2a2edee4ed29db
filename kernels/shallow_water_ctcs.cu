// CTCS, the nonlinear leapfrog scheme on the C grid (spec 4): one fused step computing level
// n+1 from level n (eta, hu, hv) and the centre values of level n-1, written in place over
// level n-1 (each thread reads and writes only its own entries of it). Mirrors
// src/solvers/shallow_water/ctcs.rs expression for expression (same evaluation order, the same
// shared reciprocals 1/h and 1/D; --fmad=false), so both back ends round identically.
//
// One thread per (c, l), c = 1..=nx+1, l = 1..=ny+1: U of face c in row l (l <= ny), V of
// column c in row l (c <= nx), eta of cell (c, l) (both).

struct CtcsArgs {
    real tdt, r_tdt, visc, a, minus_half_g, inv_dx, inv_dy, inv_dx2, inv_dy2, inv_c, dx_dy, dy_dx,
        tdt_dx, tdt_dy, wind_x, wind_y, adv_quarter;
    int nx, ny, friction;
    // Wall sides, bits: 1 north, 2 east, 4 south, 8 west.
    int walls;
};

#define CTCS_WALL_N 1
#define CTCS_WALL_E 2
#define CTCS_WALL_S 4
#define CTCS_WALL_W 8

// Where the U and V updates read h = H + eta, 1/h and 1/D: straight from the arrays (l2) or
// from the block's tiles (shared). `cell(c, l)`: h of cell (c, l); `rh(c, l)`: 1/h;
// `rc(c, l)`: 1/D of the corner between columns c, c+1 and rows l, l+1.
struct CtcsL2 {
    const real* H;
    const real* eta;
    int we;
    __device__ __forceinline__ real cell(int c, int l) const { return H[sw_at(c, l, we)] + eta[sw_at(c, l, we)]; }
    __device__ __forceinline__ real rh(int c, int l) const { return (real)1 / cell(c, l); }
    __device__ __forceinline__ real rc(int c, int l) const {
        // ctcs.rs `corner_row`: 1/(¼((h_SW + h_SE) + (h_NW + h_NE))).
        return (real)1 / ((real)0.25 * ((cell(c, l) + cell(c + 1, l)) + (cell(c, l + 1) + cell(c + 1, l + 1))));
    }
};

struct CtcsTile {
    const real* rh_t;
    const real* rc_t;
    int c0, l0, tw, cw;  // tile origins are (c0 - 1, l0 - 1); widths of the 1/h and 1/D tiles
    __device__ __forceinline__ real rh(int c, int l) const { return rh_t[(l - l0 + 1) * tw + c - c0 + 1]; }
    __device__ __forceinline__ real rc(int c, int l) const { return rc_t[(l - l0 + 1) * cw + c - c0 + 1]; }
};

#define CTCS_IN                                                                                           \
    const real *__restrict__ H, const real *__restrict__ eta, const real *__restrict__ hu,                \
        const real *__restrict__ hv, const real *__restrict__ f_vq, const real *__restrict__ f_c

// U of row l (1..=ny) on face c (1..=nx+1), from U0 = old: ctcs.rs `u_row`.
template <class D>
__device__ __forceinline__ real ctcs_u(CTCS_IN, const CtcsArgs& a, const D& d, int c, int l, real old) {
    if ((c == 1 && (a.walls & CTCS_WALL_W)) || (c == a.nx + 1 && (a.walls & CTCS_WALL_E))) return (real)0;
    int we = a.nx + 2, wu = a.nx + 3;
    real half = (real)0.5, quarter = (real)0.25, one = (real)1;
    real h_w = H[sw_at(c - 1, l, we)], h_e = H[sw_at(c, l, we)];
    real e_w = eta[sw_at(c - 1, l, we)], e_e = eta[sw_at(c, l, we)];
    real u_m0 = hu[sw_at(c - 1, l, wu)], u_00 = hu[sw_at(c, l, wu)], u_p0 = hu[sw_at(c + 1, l, wu)];
    real u_0m = hu[sw_at(c, l - 1, wu)], u_0p = hu[sw_at(c, l + 1, wu)];
    real v_s_w = hv[sw_at(c - 1, l, we)], v_s_e = hv[sw_at(c, l, we)];
    real v_n_w = hv[sw_at(c - 1, l + 1, we)], v_n_e = hv[sw_at(c, l + 1, we)];
    real f_s = f_vq[l], f_n = f_vq[l + 1];
    real h_sum = h_w + h_e;
    real f_v = quarter * (f_s * (v_s_w + v_s_e) + f_n * (v_n_w + v_n_e));
    real p_hat = a.minus_half_g * (e_e * e_e - e_w * e_w);
    real p = a.minus_half_g * h_sum * (e_e - e_w) + p_hat;
    real east = u_p0 + u_00, west = u_00 + u_m0;
    real n_a = east * east * d.rh(c, l);
    real n_b = west * west * d.rh(c - 1, l);
    real n_c = (u_0p + u_00) * (v_n_e + v_n_w) * d.rc(c - 1, l);
    real n_d = (u_00 + u_0m) * (v_s_e + v_s_w) * d.rc(c - 1, l - 1);
    real x = n_a - n_b + a.dx_dy * (n_c - n_d);
    real e = (u_p0 - old + u_m0) * a.inv_dx2 + (u_0p - old + u_0m) * a.inv_dy2;
    real adv = p + a.adv_quarter * x;
    real rhs = old + a.tdt * (f_v + adv * a.inv_dx + a.wind_x + a.a * e);
    return a.friction ? rhs / (one + a.r_tdt / (half * h_sum) + a.visc) : rhs * a.inv_c;
}

// V of row l (1..=ny+1) on column c (1..=nx), from V0 = old: ctcs.rs `v_row`.
template <class D>
__device__ __forceinline__ real ctcs_v(CTCS_IN, const CtcsArgs& a, const D& d, int c, int l, real old) {
    if ((l == 1 && (a.walls & CTCS_WALL_S)) || (l == a.ny + 1 && (a.walls & CTCS_WALL_N))) return (real)0;
    int we = a.nx + 2, wu = a.nx + 3;
    real half = (real)0.5, quarter = (real)0.25, one = (real)1;
    real h_s = H[sw_at(c, l - 1, we)], h_n = H[sw_at(c, l, we)];
    real e_s = eta[sw_at(c, l - 1, we)], e_n = eta[sw_at(c, l, we)];
    real v_m0 = hv[sw_at(c - 1, l, we)], v_00 = hv[sw_at(c, l, we)], v_p0 = hv[sw_at(c + 1, l, we)];
    real v_0m = hv[sw_at(c, l - 1, we)], v_0p = hv[sw_at(c, l + 1, we)];
    real u_s_w = hu[sw_at(c, l - 1, wu)], u_s_e = hu[sw_at(c + 1, l - 1, wu)];
    real u_n_w = hu[sw_at(c, l, wu)], u_n_e = hu[sw_at(c + 1, l, wu)];
    real f_s = f_c[l - 1], f_n = f_c[l];
    real h_sum = h_s + h_n;
    real f_u = quarter * (f_s * (u_s_w + u_s_e) + f_n * (u_n_w + u_n_e));
    real p_hat = a.minus_half_g * (e_n * e_n - e_s * e_s);
    real p = a.minus_half_g * h_sum * (e_n - e_s) + p_hat;
    real north = v_0p + v_00, south = v_00 + v_0m;
    real n_a = north * north * d.rh(c, l);
    real n_b = south * south * d.rh(c, l - 1);
    real n_c = (u_n_e + u_s_e) * (v_p0 + v_00) * d.rc(c, l - 1);
    real n_d = (u_n_w + u_s_w) * (v_00 + v_m0) * d.rc(c - 1, l - 1);
    real x = n_a - n_b + a.dy_dx * (n_c - n_d);
    real e = (v_p0 - old + v_m0) * a.inv_dx2 + (v_0p - old + v_0m) * a.inv_dy2;
    real adv = p + a.adv_quarter * x;
    real rhs = old + a.tdt * (-f_u + adv * a.inv_dy + a.wind_y + a.a * e);
    return a.friction ? rhs / (one + a.r_tdt / (half * h_sum) + a.visc) : rhs * a.inv_c;
}

#define CTCS_ARGS CTCS_IN, real *__restrict__ eta0, real *__restrict__ hu0, real *__restrict__ hv0, CtcsArgs a

// The thread's updates (see the top of the file); d supplies 1/h and 1/D.
template <class D>
__device__ __forceinline__ void ctcs_point(CTCS_ARGS, const D& d, int c, int l) {
    int we = a.nx + 2, wu = a.nx + 3;
    if (l <= a.ny) {
        long long q = sw_at(c, l, wu);
        hu0[q] = ctcs_u(H, eta, hu, hv, f_vq, f_c, a, d, c, l, hu0[q]);
    }
    if (c <= a.nx) {
        long long q = sw_at(c, l, we);
        hv0[q] = ctcs_v(H, eta, hu, hv, f_vq, f_c, a, d, c, l, hv0[q]);
    }
    if (l <= a.ny && c <= a.nx) {
        // ctcs.rs `eta_row`: U, V of level n.
        real u_w = hu[sw_at(c, l, wu)], u_e = hu[sw_at(c + 1, l, wu)];
        real v_s = hv[sw_at(c, l, we)], v_n = hv[sw_at(c, l + 1, we)];
        long long q = sw_at(c, l, we);
        eta0[q] = eta0[q] - a.tdt_dx * (u_e - u_w) - a.tdt_dy * (v_n - v_s);
    }
}

// ---- l2 variant: 1/h and 1/D recomputed by each thread that needs them --------------------

extern "C" __global__ void ctcs_step_l2(CTCS_ARGS) {
    int c = blockIdx.x * blockDim.x + threadIdx.x + 1;
    int l = block_row() * blockDim.y + threadIdx.y + 1;
    if (c > a.nx + 1 || l > a.ny + 1) return;
    CtcsL2 d{H, eta, a.nx + 2};
    ctcs_point(H, eta, hu, hv, f_vq, f_c, eta0, hu0, hv0, a, d, c, l);
}

// ---- shared variant: 1/h and 1/D of the block's tile computed once each -------------------
// Dynamic shared memory: (by+2) x (bx+2) reals of h = H + eta (cells c0-1..c0+bx, rows
// l0-1..l0+by), as many of 1/h, and (by+1) x (bx+1) of 1/D (corners c0-1..c0+bx-1 between rows
// l0-1..l0+by-1 and the row above).

extern "C" __global__ void ctcs_step_shared(CTCS_ARGS) {
    extern __shared__ unsigned char smem[];
    int bx = blockDim.x, by = blockDim.y, t = threadIdx.y * bx + threadIdx.x, n = bx * by;
    int c0 = blockIdx.x * bx + 1, l0 = block_row() * by + 1;
    int tw = bx + 2, cw = bx + 1, we = a.nx + 2;
    real* h_t = (real*)smem;
    real* rh_t = h_t + (by + 2) * tw;
    real* rc_t = rh_t + (by + 2) * tw;
    CtcsL2 g{H, eta, we};
    for (int q = t; q < (by + 2) * tw; q += n) {
        int c = c0 - 1 + q % tw, l = l0 - 1 + q / tw;
        if (c <= a.nx + 1 && l <= a.ny + 1) {
            real x = g.cell(c, l);
            h_t[q] = x;
            rh_t[q] = (real)1 / x;
        }
    }
    __syncthreads();
    for (int q = t; q < (by + 1) * cw; q += n) {
        int i = q % cw, r = q / cw;
        // Corner (c0 - 1 + i, l0 - 1 + r) needs cells up to column c0 + i and row l0 + r.
        if (c0 + i <= a.nx + 1 && l0 + r <= a.ny + 1) {
            const real* s = h_t + r * tw + i;
            rc_t[q] = (real)1 / ((real)0.25 * ((s[0] + s[1]) + (s[tw] + s[tw + 1])));
        }
    }
    __syncthreads();
    int c = c0 + threadIdx.x, l = l0 + threadIdx.y;
    if (c > a.nx + 1 || l > a.ny + 1) return;
    CtcsTile d{rh_t, rc_t, c0, l0, tw, cw};
    ctcs_point(H, eta, hu, hv, f_vq, f_c, eta0, hu0, hv0, a, d, c, l);
}
