// The kernels of kernels/cavity.cu.
#define SIM_FILE cavity
#define SIM_KERNEL_SOURCE "gen/cavity.cu"
#define SIM_KERNELS(X)                                                                                  \
    X(cavity_predictor_l2, plain) X(cavity_corrector_l2, plain) X(cavity_predictor_shared, barrier) \
    X(cavity_corrector_shared, barrier) X(cavity_walls, plain)
#include "../register.h"
