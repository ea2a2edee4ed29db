// The kernels of kernels/shallow_water_fv.cuh (compiled in front of the finite-volume files).
#define SIM_FILE shallow_water_fv
#define SIM_KERNEL_HEADER "gen/shallow_water.cuh"
#define SIM_KERNEL_HEADER2 "gen/shallow_water_fv.cuh"
#define SIM_KERNELS(X)                                                                                \
    X(fv_periodic_y, plain) X(fv_periodic_x, plain) X(fv_walls, plain) X(fv_sponge_rows, plain)   \
    X(fv_sponge_cols, plain) X(fv_dt_blocks, barrier) X(fv_dt_final, barrier) X(fv_clock, plain)
#include "../register.h"
