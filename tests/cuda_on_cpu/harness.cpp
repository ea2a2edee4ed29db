// Runs the CUDA kernels of kernels/ on the CPU under an emulation of CUDA's execution model,
// so that their indexing, boundary handling and arithmetic can be checked against the CPU
// back end on machines without a GPU (tests/kernels_on_cpu.rs builds and drives this file).
//
// Emulation: blocks run one after another; the threads of a block run either one after
// another (kernels without __syncthreads) or as real concurrent threads meeting at a
// barrier (the shared-memory kernels). Shared memory is one static buffer, used by one
// block at a time. Built with -ffp-contract=off, so no FMA contraction, like --fmad=false.
//
// Usage: harness KERNEL VARIANT BX BY NX NY STEPS IN OUT
//   KERNEL heat1d | heat2d | cavity, VARIANT l2 | shared.
//   IN: the scalars (heat: r; cavity: dtdx dtdy nudx2 nudy2 c2dx c2dy u0), then the fields
//   (heat: T; cavity: u v p), all as raw `real`s. OUT: the fields after STEPS steps.
#include <pthread.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

struct uint3_ {
    unsigned x, y, z;
};
static thread_local uint3_ threadIdx, blockIdx;
static uint3_ blockDim, gridDim;
alignas(16) unsigned char smem[1 << 16];
static pthread_barrier_t block_barrier;
static bool concurrent = false;

static void __syncthreads() {
    if (!concurrent) {
        std::fprintf(stderr, "__syncthreads in a kernel launched without concurrent threads\n");
        std::abort();
    }
    pthread_barrier_wait(&block_barrier);
}

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__
#include "../../kernels/common.cuh"
#include "../../kernels/heat.cu"
#include "../../kernels/cavity.cu"

// Launch `body` (a kernel call) on a grid of blocks; `threads`: concurrent threads per block.
static void launch(uint3_ grid, uint3_ block, bool threads, const std::function<void()>& body) {
    gridDim = grid;
    blockDim = block;
    concurrent = threads;
    unsigned n = block.x * block.y;
    for (unsigned by = 0; by < grid.y; ++by)
        for (unsigned bx = 0; bx < grid.x; ++bx) {
            std::memset(smem, 0xff, sizeof smem);  // garbage, as on a device
            auto run = [&](unsigned t) {
                blockIdx = {bx, by, 0};
                threadIdx = {t % block.x, t / block.x, 0};
                body();
            };
            if (!threads) {
                for (unsigned t = 0; t < n; ++t) run(t);
                continue;
            }
            pthread_barrier_init(&block_barrier, nullptr, n);
            std::vector<std::thread> pool;
            for (unsigned t = 0; t < n; ++t) pool.emplace_back(run, t);
            for (auto& th : pool) th.join();
            pthread_barrier_destroy(&block_barrier);
        }
}

static std::vector<real> read_all(const char* path) {
    FILE* f = std::fopen(path, "rb");
    if (!f) std::exit(3);
    std::vector<real> v;
    real x;
    while (std::fread(&x, sizeof x, 1, f) == 1) v.push_back(x);
    std::fclose(f);
    return v;
}

int main(int argc, char** argv) {
    if (argc != 10) {
        std::fprintf(stderr, "usage: harness KERNEL VARIANT BX BY NX NY STEPS IN OUT\n");
        return 2;
    }
    std::string kernel = argv[1], variant = argv[2];
    unsigned bx = std::atoi(argv[3]), by = std::atoi(argv[4]);
    int nx = std::atoi(argv[5]), ny = std::atoi(argv[6]), steps = std::atoi(argv[7]);
    bool shared = variant == "shared";
    std::vector<real> in = read_all(argv[8]);
    size_t n = (size_t)nx * ny;
    uint3_ block = {bx, by, 1}, grid = {(nx + bx - 1) / bx, (ny + by - 1) / by, 1};
    std::vector<real> out;
    if (kernel == "heat1d" || kernel == "heat2d") {
        if (in.size() != 1 + n) return 4;
        real r = in[0];
        std::vector<real> a(in.begin() + 1, in.end()), b(n, (real)-1);
        for (int s = 0; s < steps; ++s) {
            if (kernel == "heat1d")
                launch({(unsigned)(nx + bx - 1) / bx, 1, 1}, {bx, 1, 1}, false, [&] { heat1d(a.data(), b.data(), nx, r); });
            else if (shared)
                launch(grid, block, true, [&] { heat2d_shared(a.data(), b.data(), nx, ny, r); });
            else
                launch(grid, block, false, [&] { heat2d_l2(a.data(), b.data(), nx, ny, r); });
            a.swap(b);
        }
        out = a;
    } else if (kernel == "cavity") {
        if (in.size() != 7 + 3 * n) return 4;
        const real* c = in.data();
        std::vector<real> u(in.begin() + 7, in.begin() + 7 + n), v(in.begin() + 7 + n, in.begin() + 7 + 2 * n),
            p(in.begin() + 7 + 2 * n, in.end());
        // The starred fields start as garbage: every node the corrector reads must be written.
        std::vector<real> us(n, (real)NAN), vs(n, (real)NAN), ps(n, (real)NAN);
        long long boundary = 2LL * nx + 2LL * (ny - 2);
        uint3_ wgrid = {(unsigned)((boundary + 255) / 256), 1, 1}, wblock = {256, 1, 1};
        // Predictor or corrector, l2 or shared (same argument list).
        auto substep = [&](auto kernel) {
            launch(grid, block, shared, [&] {
                kernel(u.data(), v.data(), p.data(), us.data(), vs.data(), ps.data(), nx, ny, c[0], c[1], c[2], c[3],
                       c[4], c[5]);
            });
        };
        for (int s = 0; s < steps; ++s) {
            substep(shared ? cavity_predictor_shared : cavity_predictor_l2);
            launch(wgrid, wblock, false, [&] { cavity_walls(us.data(), vs.data(), ps.data(), nx, ny, c[6]); });
            substep(shared ? cavity_corrector_shared : cavity_corrector_l2);
            launch(wgrid, wblock, false, [&] { cavity_walls(u.data(), v.data(), p.data(), nx, ny, c[6]); });
        }
        out = u;
        out.insert(out.end(), v.begin(), v.end());
        out.insert(out.end(), p.begin(), p.end());
    } else {
        return 2;
    }
    FILE* f = std::fopen(argv[9], "wb");
    if (!f || std::fwrite(out.data(), sizeof(real), out.size(), f) != out.size()) return 3;
    std::fclose(f);
    return 0;
}
