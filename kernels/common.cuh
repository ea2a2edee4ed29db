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

// COPY, the bandwidth reference: dst = src.
extern "C" __global__ void copy1d(const real* __restrict__ src, real* __restrict__ dst, long long n) {
    long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) dst[k] = src[k];
}
