// The implicit heat methods (src/solvers/heat/implicit.rs) on the tridiagonal solvers of
// src/numerics/tridiag.rs, evaluating the same expressions in the same order, so that the
// results match the CPU's bit for bit (compiled with --fmad=false).
//
// Thomas factors of a system of m unknowns are three arrays `lower`, `inv`, `up` of k + 1
// entries: the stored prefix (rows 0..k-1) and, at index k, the stationary tail that every
// row >= k uses. Row i reads entry min(i, k), as Thomas::at does on the CPU.

// ---- explicit halves: b = (1 - r) c + h (w + e) on the interior, 0 on the boundary; c0 = 1 - r
// and h = r/2 come from the host, computed as on the CPU ----

// 1D (Crank–Nicolson), as kernels::three_point1d.
extern "C" __global__ void implicit_explicit1d(const real* __restrict__ src, real* __restrict__ dst, int n, real c0, real h) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (i == 0 || i == n - 1) {
        dst[i] = (real)0;
        return;
    }
    dst[i] = c0 * src[i] + h * (src[i - 1] + src[i + 1]);
}

// 2D (ADI): the neighbours `stride` away along the half's axis, 1 (x: west, east) or nx
// (y: south, north), in that order.
extern "C" __global__ void implicit_explicit2d(const real* __restrict__ src, real* __restrict__ dst, int nx, int ny, int stride, real c0, real h) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= nx || j >= ny) return;
    long long k = node(i, j, nx);
    if (i == 0 || j == 0 || i == nx - 1 || j == ny - 1) {
        dst[k] = (real)0;
        return;
    }
    dst[k] = c0 * src[k] + h * (src[k - stride] + src[k + stride]);
}

// ---- Thomas ----

// Solve one system in place: unknown i at x[i * step]. Thomas::solve's sweeps.
__device__ __forceinline__ void thomas_sweeps(real* x, long long step, int m, const real* lower, const real* inv, const real* up, int k) {
    x[0] = x[0] * inv[0];
    for (int i = 1; i < m; ++i) {
        int f = i < k ? i : k;
        x[i * step] = (x[i * step] - lower[f] * x[(i - 1) * step]) * inv[f];
    }
    for (int i = m - 2; i >= 0; --i) {
        int f = i < k ? i : k;
        x[i * step] = x[i * step] - up[f] * x[(i + 1) * step];
    }
}

// `count` systems stored one after another, one thread per system: unknown i of system s at
// d[first + s * stride + i] (the interior of the rows of a grid; count 1 for one system).
extern "C" __global__ void thomas_rows(real* __restrict__ d, long long first, long long stride, int m, int count,
                                       const real* __restrict__ lower, const real* __restrict__ inv, const real* __restrict__ up, int k) {
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= count) return;
    thomas_sweeps(d + first + s * stride, 1, m, lower, inv, up, k);
}

// `width` systems interleaved, one thread per system: unknown i of system s at
// d[first + i * width + s], so a warp's loads of one row are coalesced (the columns of a grid).
extern "C" __global__ void thomas_interleaved(real* __restrict__ d, long long first, int m, int width,
                                              const real* __restrict__ lower, const real* __restrict__ inv, const real* __restrict__ up, int k) {
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= width) return;
    thomas_sweeps(d + first + s, width, m, lower, inv, up, k);
}

// ---- truncated SPIKE (SpikePlan::solve) ----
//
// Partition q is described by meta[8q..8q+8] = {start, end, k, factors, v, v_len, w, w_len}:
// its rows start..end of the system, its Thomas factors at offset `factors` of lower/inv/up
// (k + 1 entries each), its kept spike windows at offsets `v` and `w` of the arrays v and w
// (v_len bottom entries of V, w_len top entries of W).
//
// `width` systems of the same matrix, interleaved: row i of system s at d[first + i width + s]
// (width 1: the one system at d[first..]). Thread t takes system t % width and partition (or
// interface) t / width, so that a warp's loads of one row are coalesced; the interface values
// of system s are bottom[q width + s] and top[q width + s].

// Thread t's system and partition (or interface); the one system apart, without a division.
__device__ __forceinline__ void spike_thread(long long t, int width, int* s, int* q) {
    *s = width == 1 ? 0 : (int)(t % width);
    *q = width == 1 ? (int)t : (int)(t / width);
}

// (3)'s corrections of one partition, its row j at x[j * step].
__device__ __forceinline__ void spike_correct(real* x, long long step, int m, int q, int p, const int* me, real xt, real xb,
                                              const real* __restrict__ v, const real* __restrict__ w) {
    if (q + 1 < p) {
        const real* vq = v + me[4];
        int len = me[5];
        for (int j = 0; j < len; ++j) x[(m - len + j) * step] = x[(m - len + j) * step] - vq[j] * xt;
    }
    if (q > 0) {
        const real* wq = w + me[6];
        int len = me[7];
        for (int j = 0; j < len; ++j) x[j * step] = x[j * step] - wq[j] * xb;
    }
}

// (1) Every partition solves its own block in place.
extern "C" __global__ void spike_local(real* __restrict__ d, long long first, int p, int width, const int* __restrict__ meta,
                                       const real* __restrict__ lower, const real* __restrict__ inv, const real* __restrict__ up) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)p * width) return;
    int s, q;
    spike_thread(t, width, &s, &q);
    const int* me = meta + 8 * q;
    int f = me[3];
    real* x = d + first + (long long)me[0] * width + s;
    // The one system apart, at a unit step the compiler knows.
    if (width == 1)
        thomas_sweeps(x, 1, me[1] - me[0], lower + f, inv + f, up + f, me[2]);
    else
        thomas_sweeps(x, width, me[1] - me[0], lower + f, inv + f, up + f, me[2]);
}

// (2) The 2 x 2 system of the interface between partitions q and q + 1: bottom = x_q^b,
// top = x_{q+1}^t.
extern "C" __global__ void spike_interfaces(const real* __restrict__ d, long long first, int p, int width, const int* __restrict__ meta,
                                            const real* __restrict__ v, const real* __restrict__ w,
                                            real* __restrict__ bottom, real* __restrict__ top) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)(p - 1) * width) return;
    int s, q;
    spike_thread(t, width, &s, &q);
    const int* me = meta + 8 * q;
    const int* next = me + 8;
    real fb = d[first + (long long)(me[1] - 1) * width + s], ft = d[first + (long long)next[0] * width + s];
    real vb = me[5] > 0 ? v[me[4] + me[5] - 1] : (real)0;
    real wt = next[7] > 0 ? w[next[6]] : (real)0;
    real det = (real)1 - vb * wt;
    bottom[(long long)q * width + s] = (fb - vb * ft) / det;
    top[(long long)(q + 1) * width + s] = (ft - wt * fb) / det;
}

// (3) Corrections near the partitions' ends, V's before W's (where the windows overlap, in
// the CPU's order).
extern "C" __global__ void spike_corrections(real* __restrict__ d, long long first, int p, int width, const int* __restrict__ meta,
                                             const real* __restrict__ v, const real* __restrict__ w,
                                             const real* __restrict__ bottom, const real* __restrict__ top) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)p * width) return;
    int s, q;
    spike_thread(t, width, &s, &q);
    const int* me = meta + 8 * q;
    real* x = d + first + (long long)me[0] * width + s;
    real xt = q + 1 < p ? top[(long long)(q + 1) * width + s] : (real)0;
    real xb = q > 0 ? bottom[(long long)(q - 1) * width + s] : (real)0;
    if (width == 1)
        spike_correct(x, 1, me[1] - me[0], q, p, me, xt, xb, v, w);
    else
        spike_correct(x, width, me[1] - me[0], q, p, me, xt, xb, v, w);
}
