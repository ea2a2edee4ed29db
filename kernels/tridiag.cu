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
    int j = block_row() * blockDim.y + threadIdx.y;
    if (i >= nx || j >= ny) return;
    long long k = node(i, j, nx);
    if (i == 0 || j == 0 || i == nx - 1 || j == ny - 1) {
        dst[k] = (real)0;
        return;
    }
    dst[k] = c0 * src[k] + h * (src[k - stride] + src[k + stride]);
}

// ---- Thomas ----

// Solve one system in place: unknown i at x[i * step]. Thomas::solve's sweeps, over chunks of
// CHUNK rows loaded before the chain runs through them: row by row, each load would wait
// behind the previous row's store (the compiler cannot tell the rows apart, `step` being
// known only at run time), one memory latency per row; a chunk's loads overlap. The same
// operations in the same order as row by row, for any CHUNK.
template <int CHUNK>
__device__ __forceinline__ void thomas_sweeps(real* x, long long step, int m, const real* lower, const real* inv, const real* up, int k) {
    real prev = (real)0;  // the last row solved: x[i - 1] forward, x[i + 1] backward
    for (int i0 = 0; i0 < m; i0 += CHUNK) {
        real c[CHUNK];
#pragma unroll
        for (int j = 0; j < CHUNK; ++j)
            if (i0 + j < m) c[j] = x[(i0 + j) * step];
#pragma unroll
        for (int j = 0; j < CHUNK; ++j) {
            int i = i0 + j, f = i < k ? i : k;
            if (i < m) {
                c[j] = i == 0 ? c[j] * inv[0] : (c[j] - lower[f] * prev) * inv[f];
                prev = c[j];
            }
        }
#pragma unroll
        for (int j = 0; j < CHUNK; ++j)
            if (i0 + j < m) x[(i0 + j) * step] = c[j];
    }
    // Backward from row m - 2, prev holding row m - 1.
    for (int i1 = m - 2; i1 >= 0; i1 -= CHUNK) {
        real c[CHUNK];
#pragma unroll
        for (int j = 0; j < CHUNK; ++j)
            if (i1 - j >= 0) c[j] = x[(i1 - j) * step];
#pragma unroll
        for (int j = 0; j < CHUNK; ++j) {
            int i = i1 - j, f = i < k ? i : k;
            if (i >= 0) {
                c[j] = c[j] - up[f] * prev;
                prev = c[j];
            }
        }
#pragma unroll
        for (int j = 0; j < CHUNK; ++j)
            if (i1 - j >= 0) x[(i1 - j) * step] = c[j];
    }
}

// The batched Thomas kernels run one thread per system, a few thousand threads in all: too
// few to hide memory latency, so what bounds them is the bytes each thread has in flight (its
// chunk). The host launches them in blocks of one warp (THOMAS_BLOCK in
// src/solvers/heat/implicit_cuda.rs), spreading the systems over every multiprocessor; up to
// 256 threads per block leaves a thread all 255 registers. On an H200 (4096 systems of 4096
// unknowns) contiguous systems ran fastest with chunks of 8 (longer chunks: up to 3 times
// slower), interleaved ones with chunks of 64 (1.4 times as fast as chunks of 8).

// `count` systems stored one after another, one thread per system: unknown i of system s at
// d[first + s * stride + i] (the interior of the rows of a grid; count 1 for one system).
extern "C" __global__ void __launch_bounds__(256) thomas_rows(real* __restrict__ d, long long first, long long stride, int m, int count,
                                      const real* __restrict__ lower, const real* __restrict__ inv, const real* __restrict__ up, int k) {
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= count) return;
    thomas_sweeps<8>(d + first + s * stride, 1, m, lower, inv, up, k);
}

// `width` systems interleaved, one thread per system: unknown i of system s at
// d[first + i * width + s], so a warp's loads of one row are coalesced (the columns of a grid).
extern "C" __global__ void __launch_bounds__(256) thomas_interleaved(real* __restrict__ d, long long first, int m, int width,
                                             const real* __restrict__ lower, const real* __restrict__ inv, const real* __restrict__ up, int k) {
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= width) return;
    thomas_sweeps<64>(d + first + s, width, m, lower, inv, up, k);
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

// (1) Every partition solves its own block in place. Chunks of eight rows keep it within 64
// registers per thread, so that the configured blocks of up to 1024 threads launch.
extern "C" __global__ void __launch_bounds__(1024) spike_local(real* __restrict__ d, long long first, int p, int width, const int* __restrict__ meta,
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
        thomas_sweeps<8>(x, 1, me[1] - me[0], lower + f, inv + f, up + f, me[2]);
    else
        thomas_sweeps<8>(x, width, me[1] - me[0], lower + f, inv + f, up + f, me[2]);
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

// ---- truncated SPIKE in one pass: each thread's partition (at most R rows) in registers ----
//
// The one-pass kernels index the tables by row: DeviceSpike::upload pads every factor set
// with its tail to the longest partition (row i reads entry i, the value Thomas::at gives it)
// and stores each kept spike window inside a partition's length of zeros (V's ending at the
// last row, W's starting at the first). A full partition (m == R) then runs with no per-row
// condition (FULL), about half the instructions of the general path.

// A partition's rows r[0..m), read through row(i), solved locally by Thomas::solve's sweeps
// (thomas_sweeps); returns F^b = r[m - 1], kept apart (indexing the registers at run time
// would move them to local memory).
template <int R, bool FULL, class Row>
__device__ __forceinline__ real load_and_solve(real* r, Row row, int m, const real* __restrict__ lo, const real* __restrict__ iv,
                                               const real* __restrict__ u) {
#pragma unroll
    for (int i = 0; i < R; ++i)
        if (FULL || i < m) r[i] = row(i);
    r[0] = r[0] * iv[0];
    real last = r[0];
#pragma unroll
    for (int i = 1; i < R; ++i) {
        if (FULL || i < m) {
            r[i] = (r[i] - lo[i] * r[i - 1]) * iv[i];
            last = r[i];
        }
    }
#pragma unroll
    for (int i = R - 2; i >= 0; --i)
        if (FULL || i < m - 1) r[i] = r[i] - u[i] * r[i + 1];
    return last;
}

// x_{q+1}^t and x_{q-1}^b of partition q (top[q + 1] and bottom[q - 1] of spike_interfaces,
// the same expressions), from the end values F^t, F^b of q and of its neighbours; 0 where q
// has no such neighbour.
__device__ __forceinline__ void interface_values(const int* me, int q, int p, real fb_prev, real ft_own, real fb_own, real ft_next,
                                                 const real* __restrict__ v, const real* __restrict__ w, real* xt, real* xb) {
    *xt = (real)0;
    *xb = (real)0;
    if (q + 1 < p) {
        const int* next = me + 8;
        real vb = me[5] > 0 ? v[me[4] + me[5] - 1] : (real)0;
        real wt = next[7] > 0 ? w[next[6]] : (real)0;
        *xt = (ft_next - wt * fb_own) / ((real)1 - vb * wt);
    }
    if (q > 0) {
        const int* prev = me - 8;
        real vb = prev[5] > 0 ? v[prev[4] + prev[5] - 1] : (real)0;
        real wt = me[7] > 0 ? w[me[6]] : (real)0;
        *xb = (fb_prev - vb * ft_own) / ((real)1 - vb * wt);
    }
}

// Where `correct`, spike_correct on the m rows r[0..m) of partition q, V's before W's in each
// row, from the padded windows (V's coefficient of row i at vq[i], W's at wq[i]); then the rows
// written through row(i).
template <int R, bool FULL, class Row>
__device__ __forceinline__ void correct_and_store(real* r, Row row, int m, bool correct, const int* me, int q, int p, real xt, real xb,
                                                  const real* __restrict__ v, const real* __restrict__ w) {
    if (correct) {
        const real *vq = v + me[4] + me[5] - m, *wq = w + me[6];
        int vfrom = q + 1 < p ? m - me[5] : m, wto = q > 0 ? me[7] : 0;
#pragma unroll
        for (int i = 0; i < R; ++i) {
            if (FULL || i < m) {
                if (i >= vfrom) r[i] = r[i] - vq[i] * xt;
                if (i < wto) r[i] = r[i] - wq[i] * xb;
            }
        }
    }
#pragma unroll
    for (int i = 0; i < R; ++i)
        if (FULL || i < m) row(i) = r[i];
}

// The two steps of one partition, the full or the general instance (the barrier between them
// stays outside, common to both).
template <int R, class Row>
__device__ __forceinline__ real solve_partition(real* r, Row row, int m, const real* __restrict__ lo, const real* __restrict__ iv,
                                                const real* __restrict__ u) {
    return m == R ? load_and_solve<R, true>(r, row, m, lo, iv, u) : load_and_solve<R, false>(r, row, m, lo, iv, u);
}

template <int R, class Row>
__device__ __forceinline__ void finish_partition(real* r, Row row, int m, bool correct, const int* me, int q, int p, real xt, real xb,
                                                 const real* __restrict__ v, const real* __restrict__ w) {
    if (m == R)
        correct_and_store<R, true>(r, row, m, correct, me, q, p, xt, xb, v, w);
    else
        correct_and_store<R, false>(r, row, m, correct, me, q, p, xt, xb, v, w);
}

// Interleaved systems: a block holds every partition of `systems` neighbouring systems
// (blockDim.x = p * systems; thread (l, q) = (threadIdx.x % systems, threadIdx.x / systems)
// takes partition q of system blockIdx.x * systems + l), so that the right-hand sides are read
// once and the solutions written once; the end values F^t, F^b meet in shared memory (2 p
// systems reals), where each thread solves the 2 x 2 systems of its own two interfaces.
// `systems` reals of one row span 32 bytes where possible (a full memory sector).
template <int R>
__device__ __forceinline__ void spike_fused_body(real* __restrict__ d, long long first, int p, int width, int systems, const int* __restrict__ meta,
                                                 const real* __restrict__ lower, const real* __restrict__ inv, const real* __restrict__ up,
                                                 const real* __restrict__ v, const real* __restrict__ w) {
    extern __shared__ unsigned char smem[];
    real* ft = (real*)smem;       // F^t of partition q, system l: ft[q systems + l]
    real* fb = ft + p * systems;  // F^b
    int l = threadIdx.x % systems, q = threadIdx.x / systems;
    int s = blockIdx.x * systems + l;
    bool live = s < width;
    const int* me = meta + 8 * q;
    int m = me[1] - me[0], f = me[3];
    real* x = d + first + (long long)me[0] * width + s;
    auto row = [=](int i) -> real& { return x[(long long)i * width]; };
    real r[R];
    if (live) {
        fb[q * systems + l] = solve_partition<R>(r, row, m, lower + f, inv + f, up + f);
        ft[q * systems + l] = r[0];
    }
    __syncthreads();
    if (!live) return;
    int at = q * systems + l, prev = q > 0 ? at - systems : at, next = q + 1 < p ? at + systems : at;
    real xt, xb;
    interface_values(me, q, p, fb[prev], ft[at], fb[at], ft[next], v, w, &xt, &xb);
    finish_partition<R>(r, row, m, true, me, q, p, xt, xb, v, w);
}

// Threads per block whose rows fill half the register file (128 KiB): the block of a
// 4096-row system, 8 (f32) or 4 (f64) systems, so that ptxas leaves the rest for the factors.
#define SPIKE_FUSED_THREADS(R) (131072 / ((R) * (int)sizeof(real)))

extern "C" __global__ void __launch_bounds__(SPIKE_FUSED_THREADS(32)) spike_fused32(real* __restrict__ d, long long first, int p, int width, int systems, const int* __restrict__ meta,
        const real* __restrict__ lower, const real* __restrict__ inv, const real* __restrict__ up, const real* __restrict__ v,
        const real* __restrict__ w) {
    spike_fused_body<32>(d, first, p, width, systems, meta, lower, inv, up, v, w);
}

extern "C" __global__ void __launch_bounds__(SPIKE_FUSED_THREADS(64)) spike_fused64(real* __restrict__ d, long long first, int p, int width, int systems, const int* __restrict__ meta,
        const real* __restrict__ lower, const real* __restrict__ inv, const real* __restrict__ up, const real* __restrict__ v,
        const real* __restrict__ w) {
    spike_fused_body<64>(d, first, p, width, systems, meta, lower, inv, up, v, w);
}

extern "C" __global__ void __launch_bounds__(SPIKE_FUSED_THREADS(128)) spike_fused128(real* __restrict__ d, long long first, int p, int width, int systems, const int* __restrict__ meta,
        const real* __restrict__ lower, const real* __restrict__ inv, const real* __restrict__ up, const real* __restrict__ v,
        const real* __restrict__ w) {
    spike_fused_body<128>(d, first, p, width, systems, meta, lower, inv, up, v, w);
}

// One system (width 1): a block takes blockDim.x consecutive partitions, one thread each, its
// rows staged through shared memory so that the loads and stores are coalesced (a pad every
// 32 entries puts the rows of neighbouring partitions in different banks), and solves the
// interfaces between its own partitions. The first and last partition of a block need the
// neighbouring blocks: they are written uncorrected, and their end values and their inner
// neighbours' go to top[q] (F^t) and bottom[q] (F^b) for spike_line_edges.
__device__ __forceinline__ int padded(int e) { return e + e / 32; }

template <int R>
__device__ __forceinline__ void spike_line_body(real* __restrict__ d, long long first, int p, const int* __restrict__ meta,
                                                const real* __restrict__ lower, const real* __restrict__ inv, const real* __restrict__ up,
                                                const real* __restrict__ v, const real* __restrict__ w, real* __restrict__ top,
                                                real* __restrict__ bottom) {
    extern __shared__ unsigned char smem[];
    int nt = blockDim.x, t = threadIdx.x;
    int q0 = blockIdx.x * nt, q1 = (q0 + nt < p ? q0 + nt : p) - 1, q = q0 + t;
    bool live = q <= q1;
    real* ft = (real*)smem;  // F^t and F^b of the block's partitions
    real* fb = ft + nt;
    real* tile = fb + nt;    // the block's rows, padded
    int row0 = meta[8 * q0], rows = meta[8 * q1 + 1] - row0;
    real* x = d + first + row0;
    // rows <= nt R: R loads per thread, unrolled so that they are all in flight at once.
#pragma unroll
    for (int i = 0; i < R; ++i)
        if (t + i * nt < rows) tile[padded(t + i * nt)] = x[t + i * nt];
    __syncthreads();
    const int* me = meta + 8 * (live ? q : q1);
    int m = me[1] - me[0], f = me[3], off = me[0] - row0;
    auto row = [=](int i) -> real& { return tile[padded(off + i)]; };
    real r[R];
    if (live) {
        fb[t] = solve_partition<R>(r, row, m, lower + f, inv + f, up + f);
        ft[t] = r[0];
        if (q <= q0 + 1 || q >= q1 - 1) {
            top[q] = ft[t];
            bottom[q] = fb[t];
        }
    }
    __syncthreads();
    if (live) {
        bool inner = q != q0 && q != q1;
        real xt = 0, xb = 0;
        if (inner) interface_values(me, q, p, fb[t - 1], ft[t], fb[t], ft[t + 1], v, w, &xt, &xb);
        finish_partition<R>(r, row, m, inner, me, q, p, xt, xb, v, w);
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < R; ++i)
        if (t + i * nt < rows) x[t + i * nt] = tile[padded(t + i * nt)];
}

// Threads per block of the line kernels: 32 KiB of rows (dynamic shared memory under the
// 48 KiB that needs no opt-in), four blocks per multiprocessor.
#define SPIKE_LINE_THREADS(R) (32768 / ((R) * (int)sizeof(real)))

extern "C" __global__ void __launch_bounds__(SPIKE_LINE_THREADS(32), 4) spike_line32(real* __restrict__ d, long long first, int p, const int* __restrict__ meta,
        const real* __restrict__ lower, const real* __restrict__ inv, const real* __restrict__ up, const real* __restrict__ v,
        const real* __restrict__ w, real* __restrict__ top, real* __restrict__ bottom) {
    spike_line_body<32>(d, first, p, meta, lower, inv, up, v, w, top, bottom);
}

extern "C" __global__ void __launch_bounds__(SPIKE_LINE_THREADS(64), 4) spike_line64(real* __restrict__ d, long long first, int p, const int* __restrict__ meta,
        const real* __restrict__ lower, const real* __restrict__ inv, const real* __restrict__ up, const real* __restrict__ v,
        const real* __restrict__ w, real* __restrict__ top, real* __restrict__ bottom) {
    spike_line_body<64>(d, first, p, meta, lower, inv, up, v, w, top, bottom);
}

extern "C" __global__ void __launch_bounds__(SPIKE_LINE_THREADS(128), 4) spike_line128(real* __restrict__ d, long long first, int p, const int* __restrict__ meta,
        const real* __restrict__ lower, const real* __restrict__ inv, const real* __restrict__ up, const real* __restrict__ v,
        const real* __restrict__ w, real* __restrict__ top, real* __restrict__ bottom) {
    spike_line_body<128>(d, first, p, meta, lower, inv, up, v, w, top, bottom);
}

// The first and last partition of each block of `per_block` partitions of spike_line*: (2)
// from the end values in top and bottom, then (3) in place. Thread j: block j / 2, its first
// partition (j even) or its last (j odd; none where the block has one partition).
extern "C" __global__ void spike_line_edges(real* __restrict__ d, long long first, int p, int per_block, const int* __restrict__ meta,
                                            const real* __restrict__ v, const real* __restrict__ w, const real* __restrict__ top,
                                            const real* __restrict__ bottom) {
    long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    int blocks = (p + per_block - 1) / per_block;
    if (j >= 2LL * blocks) return;
    int q0 = (int)(j / 2) * per_block, q1 = (q0 + per_block < p ? q0 + per_block : p) - 1;
    int q = j % 2 == 0 ? q0 : q1;
    if (j % 2 == 1 && q1 == q0) return;
    const int* me = meta + 8 * q;
    real xt, xb;
    interface_values(me, q, p, q > 0 ? bottom[q - 1] : (real)0, top[q], bottom[q], q + 1 < p ? top[q + 1] : (real)0, v, w, &xt, &xb);
    spike_correct(d + first + me[0], 1, me[1] - me[0], q, p, me, xt, xb, v, w);
}
