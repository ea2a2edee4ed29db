// CPU emulation of CUDA's execution model, shared by the kernel harness (harness.cpp) and the
// emulated driver (driver.cpp). Kernel sources from kernels/ compile as C++ against it: the
// built-in indices are globals, __syncthreads switches between the fibers of a block.
//
// Blocks run one after another. The threads of a block run one after another as plain calls
// (kernels registered `plain`), or as fibers that all reach each __syncthreads before any
// passes it (kernels registered `barrier`). Dynamic shared memory is one buffer, filled with
// garbage (0xff bytes: NaN) before each block. Built with -ffp-contract=off, so no FMA
// contraction, like NVRTC's --fmad=false. One launch at a time in a process.
#pragma once

#include <cstddef>
// The math functions kernels call (sqrt, fmin, copysign, ...), with their float overloads.
#include <math.h>
#include <functional>
#include <string>
#include <utility>
#include <vector>

struct uint3_ {
    unsigned x, y, z;
};
extern uint3_ threadIdx, blockIdx, blockDim, gridDim;
void __syncthreads();

// Dynamic shared memory (kernels declare `extern __shared__ unsigned char smem[]`): up to the
// 227 KiB a Hopper block may opt in to.
constexpr std::size_t SMEM_BYTES = 227 * 1024;
extern "C" unsigned char smem[SMEM_BYTES];

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__
#define __launch_bounds__(...)

namespace sim_emu {

enum class Mode { plain, barrier };

// One kernel in one precision: its signature (parameter sizes in order) and an entry point
// that unpacks CUDA-style kernelParams (an array of pointers to the arguments).
struct Kernel {
    std::string name;
    Mode mode;
    std::size_t real_bytes;
    std::vector<std::size_t> params;
    std::function<void(void**)> invoke;
};

// Every registered kernel; the kernel files' registrations add themselves at load time.
std::vector<Kernel>& registry();
const Kernel* find(const std::string& name, std::size_t real_bytes);

// Run `k` on a grid of blocks with `shared_bytes` of dynamic shared memory.
void launch(const Kernel& k, uint3_ grid, uint3_ block, std::size_t shared_bytes, void** params);

template <class... A, std::size_t... I>
void call(void (*f)(A...), void** p, std::index_sequence<I...>) {
    f(*static_cast<A*>(p[I])...);
}

// Registers kernel `f` under `name` at load time.
struct Registrar {
    template <class... A>
    Registrar(const char* name, Mode mode, std::size_t real_bytes, void (*f)(A...)) {
        registry().push_back(Kernel{name, mode, real_bytes, {sizeof(A)...},
                                    [f](void** p) { call(f, p, std::index_sequence_for<A...>{}); }});
    }
};

}  // namespace sim_emu
