// The kernels of kernels/tridiag.cu.
#define SIM_FILE tridiag
#define SIM_KERNEL_SOURCE "gen/tridiag.cu"
#define SIM_KERNELS(X)                                                                              \
    X(implicit_explicit1d, plain) X(implicit_explicit2d, plain) \
    X(thomas_rows, plain) X(thomas_interleaved, plain) X(spike_local, plain)                      \
    X(spike_interfaces, plain) X(spike_corrections, plain) X(spike_fused32, barrier) X(spike_fused64, barrier) X(spike_fused128, barrier) \
    X(spike_line32, barrier) X(spike_line64, barrier) X(spike_line128, barrier) X(spike_line_edges, plain)
#include "../register.h"
