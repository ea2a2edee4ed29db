// The headers src/cuda.rs compiles in front of kernels/shallow_water_fbl.cu and
// shallow_water_ctcs.cu (after common.cuh), for their registrations.
#include "gen/shallow_water.cuh"
#include "gen/shallow_water_fd.cuh"
