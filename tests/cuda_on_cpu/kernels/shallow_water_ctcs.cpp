// The kernels of kernels/shallow_water_ctcs.cu (its boundary kernels, from
// kernels/shallow_water_fd.cuh, are registered with FBL's).
#define SIM_FILE shallow_water_ctcs
#define SIM_KERNEL_HEADER "shallow_water_fd.h"
#define SIM_KERNEL_SOURCE "gen/shallow_water_ctcs.cu"
#define SIM_KERNELS(X) X(ctcs_step_l2, plain) X(ctcs_step_shared, barrier)
#include "../register.h"
