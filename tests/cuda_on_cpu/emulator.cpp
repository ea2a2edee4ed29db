// The execution model of emulator.h: blocks in turn, the threads of a block as plain calls or
// as fibers that meet at every __syncthreads. On x86-64 a fiber switch saves and restores the
// callee-saved registers only (about 10 ns); elsewhere it uses ucontext (a system call each).
#include "emulator.h"

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

uint3_ threadIdx, blockIdx, blockDim, gridDim;
alignas(16) unsigned char smem[SMEM_BYTES];

namespace {

constexpr std::size_t STACK_BYTES = 64 * 1024;
const sim_emu::Kernel* kernel = nullptr;
void** params = nullptr;

void set_thread(unsigned t) {
    threadIdx = {t % blockDim.x, (t / blockDim.x) % blockDim.y, t / (blockDim.x * blockDim.y)};
}

void run_plain(unsigned n) {
    for (unsigned t = 0; t < n; ++t) {
        set_thread(t);
        kernel->invoke(params);
    }
}

#if defined(__x86_64__)
// switch_to(&save, next): push the callee-saved registers, save the stack pointer in *save,
// continue on stack `next` (popping what an earlier switch pushed there).
extern "C" void sim_emu_switch(void** save, void* next);
asm(R"(
    .text
    .globl sim_emu_switch
    .hidden sim_emu_switch
    .type sim_emu_switch, @function
sim_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size sim_emu_switch, .-sim_emu_switch
)");

struct Context {
    void* sp;
};
void switch_to(Context& save, Context& next) { sim_emu_switch(&save.sp, next.sp); }
// A fresh fiber whose first switch_to "returns" into `entry` with the stack aligned as
// after a call.
void prepare(Context& c, char* stack, void (*entry)()) {
    auto top = reinterpret_cast<std::uintptr_t>(stack + STACK_BYTES) & ~std::uintptr_t(15);
    auto* sp = reinterpret_cast<void**>(top);
    *--sp = nullptr;                           // return address of entry: never used
    *--sp = reinterpret_cast<void*>(entry);    // popped by `ret`
    for (int r = 0; r < 6; ++r) *--sp = nullptr;  // rbp rbx r12-r15
    c.sp = sp;
}
#else
struct Context {
    ucontext_t uc;
};
void switch_to(Context& save, Context& next) { swapcontext(&save.uc, &next.uc); }
void prepare(Context& c, char* stack, void (*entry)()) {
    getcontext(&c.uc);
    c.uc.uc_stack.ss_sp = stack;
    c.uc.uc_stack.ss_size = STACK_BYTES;
    c.uc.uc_link = nullptr;
    makecontext(&c.uc, entry, 0);
}
#endif

struct Fiber {
    Context ctx;
    std::unique_ptr<char[]> stack;
    bool done;
};

std::vector<Fiber> fibers;  // reused from launch to launch
Context scheduler;
Fiber* running = nullptr;

void fiber_main() {
    kernel->invoke(params);
    running->done = true;
    switch_to(running->ctx, scheduler);  // never resumed
}

// Every live fiber runs to its next __syncthreads (or its end) in each round, so no thread
// passes a barrier before all have reached it; threads that returned count as arrived.
void run_fibers(unsigned n) {
    while (fibers.size() < n) fibers.push_back(Fiber{{}, std::make_unique<char[]>(STACK_BYTES), true});
    for (unsigned t = 0; t < n; ++t) {
        fibers[t].done = false;
        prepare(fibers[t].ctx, fibers[t].stack.get(), fiber_main);
    }
    for (bool live = true; live;) {
        live = false;
        for (unsigned t = 0; t < n; ++t) {
            Fiber& f = fibers[t];
            if (f.done) continue;
            running = &f;
            set_thread(t);
            switch_to(scheduler, f.ctx);
            running = nullptr;
            live = live || !f.done;
        }
    }
}

}  // namespace

void __syncthreads() {
    if (!running) {
        std::fprintf(stderr, "emulated CUDA: kernel %s calls __syncthreads but is registered `plain`\n",
                     kernel ? kernel->name.c_str() : "?");
        std::abort();
    }
    switch_to(running->ctx, scheduler);
}

namespace sim_emu {

std::vector<Kernel>& registry() {
    static std::vector<Kernel> all;
    return all;
}

const Kernel* find(const std::string& name, std::size_t real_bytes) {
    for (const Kernel& k : registry())
        if (k.name == name && k.real_bytes == real_bytes) return &k;
    return nullptr;
}

void launch(const Kernel& k, uint3_ grid, uint3_ block, std::size_t shared_bytes, void** p) {
    kernel = &k;
    params = p;
    gridDim = grid;
    blockDim = block;
    unsigned n = block.x * block.y * block.z;
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                blockIdx = {bx, by, bz};
                std::memset(smem, 0xff, shared_bytes);  // garbage, as on a device
                if (k.mode == Mode::barrier)
                    run_fibers(n);
                else
                    run_plain(n);
            }
    kernel = nullptr;
}

}  // namespace sim_emu
