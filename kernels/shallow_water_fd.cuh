// Boundary passes of the finite-difference shallow-water schemes (FBL, CTCS) on the C grid,
// compiled in front of kernels/shallow_water_fbl.cu and shallow_water_ctcs.cu (each module
// carries them, as its step kernel fixes the module's precision for the emulated driver):
// the ghost fill of src/solvers/shallow_water/fd_boundary.rs and the sponge relaxation of
// sponge.rs, statement for statement. Layout (halo 1): eta (ny+2) x (nx+2), hu (ny+2) x (nx+3),
// hv (ny+3) x (nx+2), row 0 the southern ghost row.
//
// Each pass is split where the CPU's order matters: north-south (one thread per column) before
// east-west (one thread per row), so corners come out as on the CPU; within a thread the
// statements keep the CPU's order. The three fields are independent, so one launch does all.

// Side kinds, as the host passes them.
#define SW_WALL 0
#define SW_PERIODIC 1
#define SW_SPONGE 2

struct FdSides {
    int nx, ny;
    int north, east, south, west;
    // GPU Ocean's FBL: the periodic north-south copy of U skips the ghost rows' boundary faces.
    int fbl_corner_faces;
};

// North-south ghost rows, thread t = column 0..nx+2 (fill_eta, fill_v, fill_u).
extern "C" __global__ void sw_fd_fill_ns(real* __restrict__ eta, real* __restrict__ hu, real* __restrict__ hv,
                                         FdSides s) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    int nx = s.nx, ny = s.ny, we = nx + 2, wu = nx + 3;
    if (k >= wu) return;
    // eta: walls copy all columns, periodic sides the interior ones.
    if (k < we) {
        bool inner = k >= 1 && k <= nx;
        if (s.south == SW_WALL) eta[sw_at(k, 0, we)] = eta[sw_at(k, 1, we)];
        else if (s.south == SW_PERIODIC && inner) eta[sw_at(k, 0, we)] = eta[sw_at(k, ny, we)];
        if (s.north == SW_WALL) eta[sw_at(k, ny + 1, we)] = eta[sw_at(k, ny, we)];
        else if (s.north == SW_PERIODIC && inner) eta[sw_at(k, ny + 1, we)] = eta[sw_at(k, 1, we)];
        // hv
        if (s.south == SW_WALL) {
            hv[sw_at(k, 1, we)] = (real)0;
            hv[sw_at(k, 0, we)] = -hv[sw_at(k, 2, we)];
        } else if (s.south == SW_PERIODIC && inner) {
            hv[sw_at(k, 0, we)] = hv[sw_at(k, ny, we)];
        }
        if (s.north == SW_WALL) {
            hv[sw_at(k, ny + 1, we)] = (real)0;
            hv[sw_at(k, ny + 2, we)] = -hv[sw_at(k, ny, we)];
        } else if (s.north == SW_PERIODIC && inner) {
            hv[sw_at(k, ny + 1, we)] = hv[sw_at(k, 1, we)];
            hv[sw_at(k, ny + 2, we)] = hv[sw_at(k, 2, we)];
        }
    }
    // hu: periodic copies all faces, or (FBL's corner faces) the faces 2..=nx.
    bool cols = !s.fbl_corner_faces || (k >= 2 && k <= nx);
    if (s.south == SW_WALL) hu[sw_at(k, 0, wu)] = hu[sw_at(k, 1, wu)];
    else if (s.south == SW_PERIODIC && cols) hu[sw_at(k, 0, wu)] = hu[sw_at(k, ny, wu)];
    if (s.north == SW_WALL) hu[sw_at(k, ny + 1, wu)] = hu[sw_at(k, ny, wu)];
    else if (s.north == SW_PERIODIC && cols) hu[sw_at(k, ny + 1, wu)] = hu[sw_at(k, 1, wu)];
}

// East-west ghost columns of a row of a cell-centred-along-x field (eta, hv): fill_columns.
__device__ __forceinline__ void sw_fd_columns(real* r, const FdSides& s) {
    int nx = s.nx;
    if (s.west == SW_WALL) r[0] = r[1];
    else if (s.west == SW_PERIODIC) r[0] = r[nx];
    if (s.east == SW_WALL) r[nx + 1] = r[nx];
    else if (s.east == SW_PERIODIC) r[nx + 1] = r[1];
}

// East-west ghost columns, thread t = row 0..ny+2, after sw_fd_fill_ns.
extern "C" __global__ void sw_fd_fill_ew(real* __restrict__ eta, real* __restrict__ hu, real* __restrict__ hv,
                                         FdSides s) {
    int l = blockIdx.x * blockDim.x + threadIdx.x;
    int nx = s.nx, ny = s.ny, we = nx + 2, wu = nx + 3;
    if (l > ny + 2) return;
    if (l <= ny + 1) {
        sw_fd_columns(eta + sw_at(0, l, we), s);
        real* r = hu + sw_at(0, l, wu);
        if (s.west == SW_WALL) {
            r[0] = -r[2];
            r[1] = (real)0;
        } else if (s.west == SW_PERIODIC) {
            r[0] = r[nx];
        }
        if (s.east == SW_WALL) {
            r[nx + 1] = (real)0;
            r[nx + 2] = -r[nx];
        } else if (s.east == SW_PERIODIC) {
            r[nx + 1] = r[1];
            r[nx + 2] = r[2];
        }
    }
    sw_fd_columns(hv + sw_at(0, l, we), s);
}

// Sponge relaxation of one side (spec 7.2; sponge.rs `relax`), for the three fields at once:
// side 0 north, 1 east, 2 south, 3 west. Thread t = position s along the side; sponge row j
// (0 = next to the side) of field f relaxes towards the exterior with weight `weight[j]` (the
// host's f64 values: the flow-relaxation a_j, or j/w for the linear kind), in f64 as on the
// CPU. Row `cells`, read first, is the inner value of the linear kind.
struct FdSponge {
    int nx, ny, side, cells, linear;
};

__device__ __forceinline__ void sw_fd_relax(real* f, const real* ext, int width, int height, int ex, int ey,
                                            const double* weight, const FdSponge& g, int s) {
    bool ns = g.side == 0 || g.side == 2;
    if (s >= (ns ? width : height)) return;
    // index(j): (row, column) of sponge row j at position s.
    int nf = ns ? g.ny + ey : g.nx + ex;
#define SW_IDX(j) (g.side == 2 ? sw_at(s, 1 + (j), width)                 \
                   : g.side == 0 ? sw_at(s, nf - (j), width)              \
                   : g.side == 3 ? sw_at(1 + (j), s, width) : sw_at(nf - (j), s, width))
    double inner = (double)f[SW_IDX(g.cells)];
    for (int j = 0; j < g.cells; j++) {
        long long q = SW_IDX(j);
        double a = weight[j], e = (double)ext[q], v;
        if (g.linear) v = e + a * (inner - e);
        else v = (1.0 - a) * (double)f[q] + a * e;
        f[q] = (real)v;
    }
#undef SW_IDX
}

extern "C" __global__ void sw_fd_sponge(real* __restrict__ eta, real* __restrict__ hu, real* __restrict__ hv,
                                        const real* __restrict__ ext_eta, const real* __restrict__ ext_hu,
                                        const real* __restrict__ ext_hv, const double* __restrict__ weight,
                                        FdSponge g) {
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    int nx = g.nx, ny = g.ny;
    sw_fd_relax(hu, ext_hu, nx + 3, ny + 2, 1, 0, weight, g, s);
    sw_fd_relax(hv, ext_hv, nx + 2, ny + 3, 0, 1, weight, g, s);
    sw_fd_relax(eta, ext_eta, nx + 2, ny + 2, 0, 0, weight, g, s);
}
