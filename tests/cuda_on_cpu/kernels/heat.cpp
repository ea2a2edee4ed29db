// The kernels of kernels/heat.cu.
#define SIM_FILE heat
#define SIM_KERNEL_SOURCE "gen/heat.cu"
#define SIM_KERNELS(X) X(heat1d, plain) X(heat2d_l2, plain) X(heat2d_shared, barrier)
#include "../register.h"
