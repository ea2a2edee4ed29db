// Explicit (FTCS) heat equation, one thread per output node (heat2d_l2: four), zero Dirichlet boundary written
// by the boundary threads. Evaluation order matches the CPU kernels exactly
// (src/solvers/heat/kernels.rs): 1D c0*c + r*(w + e), 2D c0*c + r*((w + e) + (s + n)).

// 1D: c0 = 1 - 2r.
extern "C" __global__ void heat1d(const real* __restrict__ t, real* __restrict__ out, int n, real r) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (i == 0 || i == n - 1) {
        out[i] = (real)0;
        return;
    }
    real c0 = (real)1 - (r + r);
    out[i] = c0 * t[i] + r * (t[i - 1] + t[i + 1]);
}

// 2D, "l2" variant: neighbours are re-read through the L2 cache. Blocks (bx, by) long along x;
// each thread computes HEAT2D_NODES nodes blockDim.y rows apart (the grid covers ny /
// HEAT2D_NODES rows of blocks), so that enough loads are in flight to reach the memory's
// bandwidth (one node per thread: 63 % of COPY in f32 on an H100).
#define HEAT2D_NODES 4
extern "C" __global__ void heat2d_l2(const real* __restrict__ t, real* __restrict__ out, int nx, int ny, real r) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j0 = block_row() * blockDim.y * HEAT2D_NODES + threadIdx.y;
    if (i >= nx) return;
    real c0 = (real)1 - (real)4 * r;
#pragma unroll
    for (int n = 0; n < HEAT2D_NODES; ++n) {
        int j = j0 + n * blockDim.y;
        if (j >= ny) return;
        long long k = node(i, j, nx);
        if (i == 0 || j == 0 || i == nx - 1 || j == ny - 1)
            out[k] = (real)0;
        else
            out[k] = c0 * t[k] + r * ((t[k - 1] + t[k + 1]) + (t[k - nx] + t[k + nx]));
    }
}

// 2D, "shared" variant: each block stages a (bx+2) x (by+2) tile with its halo in shared
// memory (dynamic size (bx+2)*(by+2) reals) and computes from it.
extern "C" __global__ void heat2d_shared(const real* __restrict__ t, real* __restrict__ out, int nx, int ny, real r) {
    extern __shared__ unsigned char smem[];
    real* tile = (real*)smem;
    int bx = blockDim.x, by = blockDim.y, tw = bx + 2;
    int i0 = blockIdx.x * bx - 1, j0 = block_row() * by - 1;  // tile origin (halo included)
    for (int q = threadIdx.y * bx + threadIdx.x; q < tw * (by + 2); q += bx * by) {
        int ii = i0 + q % tw, jj = j0 + q / tw;
        tile[q] = (ii >= 0 && ii < nx && jj >= 0 && jj < ny) ? t[node(ii, jj, nx)] : (real)0;
    }
    __syncthreads();
    int i = i0 + 1 + threadIdx.x, j = j0 + 1 + threadIdx.y;
    if (i >= nx || j >= ny) return;
    long long k = node(i, j, nx);
    if (i == 0 || j == 0 || i == nx - 1 || j == ny - 1) {
        out[k] = (real)0;
        return;
    }
    int q = (threadIdx.y + 1) * tw + threadIdx.x + 1;
    real c0 = (real)1 - (real)4 * r;
    out[k] = c0 * tile[q] + r * ((tile[q - 1] + tile[q + 1]) + (tile[q - tw] + tile[q + tw]));
}
