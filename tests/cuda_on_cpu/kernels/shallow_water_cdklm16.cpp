// The kernels of kernels/shallow_water_cdklm16.cu (those of its headers: shallow_water_fv.cpp).
#define SIM_FILE shallow_water_cdklm16
#define SIM_KERNEL_HEADER "gen/shallow_water.cuh"
#define SIM_KERNEL_HEADER2 "gen/shallow_water_fv.cuh"
#define SIM_KERNEL_SOURCE "gen/shallow_water_cdklm16.cu"
#define SIM_KERNELS(X) X(cdklm16_stage_l2, plain) X(cdklm16_stage_shared, barrier)
#include "../register.h"
