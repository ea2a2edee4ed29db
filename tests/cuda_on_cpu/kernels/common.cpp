// The kernel of kernels/common.cuh (compiled in front of every kernel file).
#define SIM_FILE common
#define SIM_KERNELS(X) X(copy1d, plain)
#include "../register.h"
