// Shared definitions of the shallow-water kernels (kernels/shallow_water_*.cu), compiled after
// common.cuh and in front of each of those files.

// Flat index of entry (i, j) of a row-major array `width` entries wide, ghost layers included
// (the layout of the CPU schemes' fields, src/solvers/shallow_water/grid.rs).
__device__ __forceinline__ long long sw_at(int i, int j, int width) {
    return (long long)j * width + i;
}
