// The kernels of kernels/lskum.cu, in f64 only (the file computes in double whatever REAL is).
// <cmath> first: the kernels' exp, log, pow and sqrt are glibc's, as the CPU back end's are.
#include <cmath>
#define SIM_FILE lskum
#define SIM_F64_ONLY
#define SIM_KERNEL_SOURCE "gen/lskum.cu"
#define SIM_KERNELS(X)                                                                                          \
    X(lskum_timestep, plain) X(lskum_q_variables, plain) X(lskum_q_derivatives, plain) X(lskum_inner, plain)    \
    X(lskum_flux_fused, plain) X(lskum_flux_fused_shared, barrier) X(lskum_flux_gxpos, plain)                   \
    X(lskum_flux_gxpos_shared, barrier) X(lskum_flux_gxneg, plain) X(lskum_flux_gxneg_shared, barrier)          \
    X(lskum_flux_gypos, plain) X(lskum_flux_gypos_shared, barrier) X(lskum_flux_gyneg, plain)                   \
    X(lskum_flux_gyneg_shared, barrier) X(lskum_update, plain)  \
    X(lskum_residual_partials, plain)
#include "../register.h"
