// The kernels of kernels/shallow_water_fbl.cu, with the boundary kernels of
// kernels/shallow_water_fd.cuh (registered here once; the CTCS module uses the same code).
#define SIM_FILE shallow_water_fbl
#define SIM_KERNEL_HEADER "shallow_water_fd.h"
#define SIM_KERNEL_SOURCE "gen/shallow_water_fbl.cu"
#define SIM_KERNELS(X)                                                                    \
    X(fbl_step_l2, plain) X(fbl_step_shared, barrier) X(sw_fd_fill_ns, plain) X(sw_fd_fill_ew, plain) \
    X(sw_fd_sponge, plain)
#include "../register.h"
