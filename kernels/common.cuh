// Shared definitions of the CUDA kernels. Every kernel file is compiled at run time with
// NVRTC after this header, with -DREAL=float or -DREAL=double.
#ifndef REAL
#error "compile with -DREAL=float or -DREAL=double"
#endif
typedef REAL real;

// Flat index of node (i, j) of an nx-wide row-major grid (x contiguous).
__device__ __forceinline__ long long node(int i, int j, int nx) {
    return (long long)j * nx + i;
}

// Block row of a 2D launch. CUDA allows 65 535 blocks along y, so a taller grid of blocks
// is folded into z (see `Gpu::grid_2d`); the rows past the grid's end return like any other
// row outside the domain.
__device__ __forceinline__ int block_row() {
    return blockIdx.y + blockIdx.z * gridDim.y;
}

// COPY, the bandwidth reference: dst = src, COPY_PER_THREAD elements per thread, a block
// apart (coalesced), all loaded before any is stored: one f32 per thread keeps too few bytes
// in flight to reach the memory's bandwidth (on an H200 60 % of cudaMemcpy's).
#define COPY_PER_THREAD 4
extern "C" __global__ void copy1d(const real* __restrict__ src, real* __restrict__ dst, long long n) {
    long long k = (long long)blockIdx.x * blockDim.x * COPY_PER_THREAD + threadIdx.x;
    real x[COPY_PER_THREAD];
    for (int j = 0; j < COPY_PER_THREAD; ++j)
        if (k + j * blockDim.x < n) x[j] = src[k + j * blockDim.x];
    for (int j = 0; j < COPY_PER_THREAD; ++j)
        if (k + j * blockDim.x < n) dst[k + j * blockDim.x] = x[j];
}
