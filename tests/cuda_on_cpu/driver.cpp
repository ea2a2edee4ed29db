// A test-only stand-in for the CUDA driver library (libcuda.so), never shipped with sim: one
// device with Hopper's limits, whose memory is host memory and whose kernels run on the CPU
// emulation (emulator.h). As on a device, a launch returns before its kernel runs: launches
// wait in a queue until the host next copies, sets or frees device memory, records or waits
// for an event, or synchronises, so that host code which times or reads without waiting sees
// here what it would see on a GPU. Modules are the cubins real NVRTC
// produced: their kernel names and parameter sizes (the .nv.info sections) select registered
// emulations, in the precision that fits every kernel of the module. Launches are checked as
// the driver checks them. cudarc resolves each driver function when first called, so a
// function missing here fails in cudarc with the function's name.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "emulator.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void* CUstream;

#define API extern "C" __attribute__((visibility("default")))

namespace {

enum : CUresult {
    SUCCESS = 0,
    INVALID_VALUE = 1,
    NOT_INITIALIZED = 3,
    INVALID_DEVICE = 101,
    INVALID_IMAGE = 200,
    INVALID_HANDLE = 400,
    NOT_FOUND = 500,
    LAUNCH_OUT_OF_RESOURCES = 701,
    NOT_SUPPORTED = 801,
};

// The device: an H100-like part (compute capability 9.0).
const char* const DEVICE_NAME = "sim CPU emulation of a CUDA device (sm_90)";
constexpr int MAX_THREADS = 1024, MAX_BLOCK[3] = {1024, 1024, 64};
constexpr long long MAX_GRID[3] = {2147483647LL, 65535, 65535};
constexpr int DEFAULT_SHARED = 48 * 1024, OPTIN_SHARED = 227 * 1024;
static_assert(OPTIN_SHARED <= (int)SMEM_BYTES, "the emulator's shared memory holds an opt-in block");
constexpr std::size_t TOTAL_MEMORY = 80ULL << 30;

int attribute(int a) {
    switch (a) {
        case 1: return MAX_THREADS;                    // MAX_THREADS_PER_BLOCK
        case 2: case 3: case 4: return MAX_BLOCK[a - 2];  // MAX_BLOCK_DIM_X..Z
        case 5: case 6: case 7: return (int)MAX_GRID[a - 5];
        case 8: return DEFAULT_SHARED;                 // MAX_SHARED_MEMORY_PER_BLOCK
        case 9: return 64 * 1024;                      // TOTAL_CONSTANT_MEMORY
        case 10: return 32;                            // WARP_SIZE
        case 12: return 65536;                         // MAX_REGISTERS_PER_BLOCK
        case 13: return 1980000;                       // CLOCK_RATE (kHz)
        case 16: return 132;                           // MULTIPROCESSOR_COUNT
        case 38: return 50 << 20;                      // L2_CACHE_SIZE
        case 39: return 2048;                          // MAX_THREADS_PER_MULTIPROCESSOR
        case 75: return 9;                             // COMPUTE_CAPABILITY_MAJOR
        case 76: return 0;                             // COMPUTE_CAPABILITY_MINOR
        case 81: return 228 * 1024;                    // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
        case 97: return OPTIN_SHARED;                  // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
        case 115: return 1;                            // MEMORY_POOLS_SUPPORTED
        default: return -1;
    }
}

CUresult complain(CUresult code, const char* fmt, const std::string& what) {
    std::fprintf(stderr, "emulated CUDA driver: ");
    std::fprintf(stderr, fmt, what.c_str());
    std::fprintf(stderr, "\n");
    return code;
}

std::mutex lock;  // guards everything below; also makes launches one at a time
bool initialised = false;
int context_token;  // the primary context's handle
thread_local void* current_context = nullptr;
std::map<std::uintptr_t, std::size_t> allocations;  // device memory: start -> bytes

// The allocation holding [p, p + n), or false.
bool valid_range(CUdeviceptr p, std::size_t n) {
    auto it = allocations.upper_bound((std::uintptr_t)p);
    if (it == allocations.begin()) return false;
    --it;
    return (std::uintptr_t)p + n <= it->first + it->second;
}

struct Function {
    std::string name;
    std::vector<std::size_t> params;  // sizes, from the cubin
    const sim_emu::Kernel* kernel;
    int registers;  // per thread, from the cubin
    int launch_bound;  // __launch_bounds__'s threads, from the cubin (MAX_THREADS without)
    int max_dynamic_shared = DEFAULT_SHARED;
};

// The most threads per block a kernel of `registers` registers per thread launches with, as
// the driver computes it on compute capability 9.0: registers go to warps in units of 256,
// from 64 Ki per block.
int max_threads_for(int registers) {
    int per_warp = (registers * 32 + 255) / 256 * 256;
    return per_warp == 0 ? MAX_THREADS : std::min(MAX_THREADS, 65536 / per_warp * 32);
}
// The most threads per block `fn` launches with: its registers' limit, or its launch bound
// where that is less, as the driver's CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK.
int max_threads(const Function& fn) { return std::min(max_threads_for(fn.registers), fn.launch_bound); }
struct Module {
    std::vector<std::unique_ptr<Function>> functions;
};
struct Event {
    std::chrono::steady_clock::time_point at;
    bool recorded = false;
};

// What a cubin says of its kernels: the parameter sizes by ordinal, from the .nv.info.<kernel>
// sections (attribute EIATTR_KPARAM_INFO: ordinal, offset and size of each parameter), and the
// registers per thread, from the .nv.info section (EIATTR_REGCOUNT: symbol index, count), and
// the launch bound, from EIATTR_MAX_THREADS (x, y, z) where __launch_bounds__ set one.
struct CubinKernel {
    std::vector<std::size_t> params;
    int registers = 0;
    int launch_bound = MAX_THREADS;
};
bool read_cubin(const unsigned char* b, std::map<std::string, CubinKernel>& kernels) {
    if (std::memcmp(b, "\x7f" "ELF", 4) != 0 || b[4] != 2) return false;
    auto u16 = [&](std::size_t o) { std::uint16_t v; std::memcpy(&v, b + o, 2); return (std::size_t)v; };
    auto u32 = [&](std::size_t o) { std::uint32_t v; std::memcpy(&v, b + o, 4); return (std::size_t)v; };
    auto u64 = [&](std::size_t o) { std::uint64_t v; std::memcpy(&v, b + o, 8); return (std::size_t)v; };
    if (u16(18) != 190) return false;  // EM_CUDA
    std::size_t shoff = u64(0x28), shentsize = u16(0x3a), shnum = u16(0x3c), shstrndx = u16(0x3e);
    auto header = [&](std::size_t i) { return shoff + i * shentsize; };
    std::size_t names = u64(header(shstrndx) + 0x18);
    const std::string prefix = ".nv.info.";
    auto section = [&](const std::string& wanted) -> std::size_t {
        for (std::size_t i = 0; i < shnum; ++i)
            if (wanted == (const char*)b + names + u32(header(i))) return i;
        return shnum;
    };
    // Each attribute of an .nv.info section: format, attribute, and for format 4 (EIFMT_SVAL)
    // a 16-bit length and that many bytes.
    auto attributes = [&](std::size_t i, auto&& each) {
        std::size_t p = u64(header(i) + 0x18), end = p + u64(header(i) + 0x20);
        while (p < end) {
            std::size_t format = b[p], attr = b[p + 1], len = format == 4 ? u16(p + 2) : 0;
            if (format == 4) each(attr, p + 4, len);
            p += 4 + len;
        }
    };
    for (std::size_t i = 0; i < shnum; ++i) {
        std::string name = (const char*)b + names + u32(header(i));
        if (name.compare(0, prefix.size(), prefix) != 0) continue;
        CubinKernel& kernel = kernels[name.substr(prefix.size())];
        std::vector<std::size_t>& sizes = kernel.params;
        attributes(i, [&](std::size_t attr, std::size_t at, std::size_t len) {
            if (attr == 0x17 && len >= 12) {  // KPARAM_INFO
                std::size_t ordinal = u16(at + 4), size = u32(at + 8) >> 18;
                if (sizes.size() <= ordinal) sizes.resize(ordinal + 1);
                sizes[ordinal] = size;
            }
            if (attr == 0x05 && len >= 12)  // MAX_THREADS
                kernel.launch_bound = (int)std::min<std::size_t>(u32(at) * u32(at + 4) * u32(at + 8), MAX_THREADS);
        });
    }
    std::size_t info = section(".nv.info"), symtab = section(".symtab"), strtab = section(".strtab");
    if (info < shnum && symtab < shnum && strtab < shnum) {
        std::size_t symbols = u64(header(symtab) + 0x18), strings = u64(header(strtab) + 0x18);
        attributes(info, [&](std::size_t attr, std::size_t at, std::size_t len) {
            if (attr != 0x2f || len < 8) return;  // REGCOUNT
            std::string name = (const char*)b + strings + u32(symbols + 24 * u32(at));
            auto k = kernels.find(name);
            if (k != kernels.end()) k->second.registers = (int)u32(at + 4);
        });
    }
    return !kernels.empty();
}

// The registered emulation of every kernel of a cubin, in the one precision that fits all of
// them (copy1d alone fits both).
CUresult emulations(const std::map<std::string, CubinKernel>& kernels, Module& m) {
    std::vector<std::size_t> fits;
    for (std::size_t real : {sizeof(float), sizeof(double)}) {
        bool all = true;
        for (auto& [name, cubin] : kernels) {
            const sim_emu::Kernel* k = sim_emu::find(name, real);
            all = all && k && k->params == cubin.params;
        }
        if (all) fits.push_back(real);
    }
    if (fits.size() != 1) {
        std::string names;
        for (auto& [name, cubin] : kernels) names += " " + name + "(" + std::to_string(cubin.params.size()) + " parameters)";
        return complain(NOT_FOUND,
                        "no single precision of the registered kernels (tests/cuda_on_cpu/kernels/) matches this "
                        "module's kernels:%s",
                        names);
    }
    for (auto& [name, cubin] : kernels)
        m.functions.push_back(std::make_unique<Function>(Function{name, cubin.params, sim_emu::find(name, fits[0]),
                                                                  cubin.registers, cubin.launch_bound}));
    return SUCCESS;
}

// A launch waiting to run, its arguments copied at the launch as the driver copies them.
struct Launch {
    const Function* fn;
    uint3_ grid, block;
    unsigned shared;
    std::vector<std::vector<unsigned char>> args;
};
std::vector<Launch> queued;

// Run the queued launches in order (`lock` held).
void drain() {
    for (Launch& l : queued) {
        std::vector<void*> params;
        for (auto& a : l.args) params.push_back(a.data());
        sim_emu::launch(*l.fn->kernel, l.grid, l.block, l.shared, params.data());
    }
    queued.clear();
}

// Wait for the queued launches.
CUresult synchronise() {
    std::lock_guard<std::mutex> g(lock);
    drain();
    return SUCCESS;
}

CUresult copy(void* dst, const void* src, std::size_t n, CUdeviceptr device_side) {
    std::lock_guard<std::mutex> g(lock);
    drain();
    if (!valid_range(device_side, n)) return complain(INVALID_VALUE, "copy of %s bytes outside an allocation", std::to_string(n));
    std::memmove(dst, src, n);
    return SUCCESS;
}

}  // namespace

// ---- initialisation, device, context ----

API CUresult cuInit(unsigned) {
    initialised = true;
    return SUCCESS;
}
API CUresult cuDriverGetVersion(int* v) {
    *v = 13000;
    return SUCCESS;
}
// NVRTC loads libcuda.so.1 when it can and asks it for the driver's private export tables;
// the emulation has none, and says so (a missing symbol crashes NVRTC 13.5).
API CUresult cuGetExportTable(const void** table, const void* /*id*/) {
    if (table) *table = nullptr;
    return NOT_SUPPORTED;
}
API CUresult cuDeviceGetCount(int* n) {
    if (!initialised) return NOT_INITIALIZED;
    *n = 1;
    return SUCCESS;
}
API CUresult cuDeviceGet(CUdevice* d, int ordinal) {
    if (!initialised) return NOT_INITIALIZED;
    if (ordinal != 0) return INVALID_DEVICE;
    *d = 0;
    return SUCCESS;
}
API CUresult cuDeviceGetName(char* name, int len, CUdevice d) {
    if (d != 0) return INVALID_DEVICE;
    std::snprintf(name, len, "%s", DEVICE_NAME);
    return SUCCESS;
}
API CUresult cuDeviceTotalMem_v2(std::size_t* bytes, CUdevice d) {
    if (d != 0) return INVALID_DEVICE;
    *bytes = TOTAL_MEMORY;
    return SUCCESS;
}
API CUresult cuDeviceGetAttribute(int* v, int attr, CUdevice d) {
    if (d != 0) return INVALID_DEVICE;
    *v = attribute(attr);
    if (*v < 0) return complain(INVALID_VALUE, "device attribute %s is not emulated", std::to_string(attr));
    return SUCCESS;
}
API CUresult cuDevicePrimaryCtxRetain(void** ctx, CUdevice d) {
    if (d != 0) return INVALID_DEVICE;
    *ctx = &context_token;
    return SUCCESS;
}
API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { return d == 0 ? SUCCESS : INVALID_DEVICE; }
API CUresult cuCtxSetCurrent(void* ctx) {
    current_context = ctx;
    return SUCCESS;
}
API CUresult cuCtxGetCurrent(void** ctx) {
    *ctx = current_context;
    return SUCCESS;
}
API CUresult cuCtxSynchronize() { return synchronise(); }

// ---- memory: host memory, 0xff bytes (NaN) until written ----

API CUresult cuMemAlloc_v2(CUdeviceptr* p, std::size_t n) {
    if (n == 0) return INVALID_VALUE;
    void* m = std::aligned_alloc(256, (n + 255) / 256 * 256);
    if (!m) return 2;  // CUDA_ERROR_OUT_OF_MEMORY
    std::memset(m, 0xff, n);
    std::lock_guard<std::mutex> g(lock);
    allocations[(std::uintptr_t)m] = n;
    *p = (CUdeviceptr)m;
    return SUCCESS;
}
API CUresult cuMemFree_v2(CUdeviceptr p) {
    std::lock_guard<std::mutex> g(lock);
    drain();
    if (!allocations.erase((std::uintptr_t)p)) return INVALID_VALUE;
    std::free((void*)p);
    return SUCCESS;
}
// Page-locked host memory: plain host memory here (the copies are memcpy either way).
API CUresult cuMemHostAlloc(void** p, std::size_t n, unsigned) {
    if (n == 0) return INVALID_VALUE;
    *p = std::aligned_alloc(256, (n + 255) / 256 * 256);
    return *p ? SUCCESS : 2;  // CUDA_ERROR_OUT_OF_MEMORY
}
API CUresult cuMemFreeHost(void* p) {
    std::free(p);
    return SUCCESS;
}
API CUresult cuMemAllocAsync(CUdeviceptr* p, std::size_t n, CUstream) { return cuMemAlloc_v2(p, n); }
API CUresult cuMemFreeAsync(CUdeviceptr p, CUstream) { return cuMemFree_v2(p); }
API CUresult cuMemGetInfo_v2(std::size_t* free_bytes, std::size_t* total) {
    *free_bytes = *total = TOTAL_MEMORY;
    return SUCCESS;
}
API CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void* h, std::size_t n) { return copy((void*)d, h, n, d); }
API CUresult cuMemcpyDtoH_v2(void* h, CUdeviceptr d, std::size_t n) { return copy(h, (const void*)d, n, d); }
API CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, std::size_t n) {
    CUresult r = copy((void*)d, (const void*)s, n, s);
    return r == SUCCESS && !valid_range(d, n) ? INVALID_VALUE : r;
}
API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void* h, std::size_t n, CUstream) { return cuMemcpyHtoD_v2(d, h, n); }
API CUresult cuMemcpyDtoHAsync_v2(void* h, CUdeviceptr d, std::size_t n, CUstream) { return cuMemcpyDtoH_v2(h, d, n); }
API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, std::size_t n, CUstream) { return cuMemcpyDtoD_v2(d, s, n); }
API CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, std::size_t n) {
    std::lock_guard<std::mutex> g(lock);
    drain();
    if (!valid_range(d, n)) return INVALID_VALUE;
    std::memset((void*)d, v, n);
    return SUCCESS;
}
API CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, std::size_t n, CUstream) { return cuMemsetD8_v2(d, v, n); }

// ---- streams and events: one queue of launches for every stream ----

API CUresult cuStreamCreate(CUstream* s, unsigned) {
    *s = new char;
    return SUCCESS;
}
API CUresult cuStreamDestroy_v2(CUstream s) {
    synchronise();
    delete (char*)s;
    return SUCCESS;
}
API CUresult cuStreamSynchronize(CUstream) { return synchronise(); }
API CUresult cuStreamWaitEvent(CUstream, void*, unsigned) { return SUCCESS; }
API CUresult cuEventCreate(void** e, unsigned) {
    *e = new Event;
    return SUCCESS;
}
API CUresult cuEventDestroy_v2(void* e) {
    delete (Event*)e;
    return SUCCESS;
}
// The event completes with the work queued before it: its time is taken after that work ran.
API CUresult cuEventRecord(void* e, CUstream) {
    synchronise();
    *(Event*)e = Event{std::chrono::steady_clock::now(), true};
    return SUCCESS;
}
API CUresult cuEventSynchronize(void*) { return synchronise(); }
API CUresult cuEventQuery(void*) { return synchronise(); }
// The wall time between the two records: what the emulation took.
API CUresult cuEventElapsedTime(float* ms, void* start, void* end) {
    auto *a = (Event*)start, *b = (Event*)end;
    if (!a->recorded || !b->recorded) return INVALID_HANDLE;
    *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
    return SUCCESS;
}
API CUresult cuEventElapsedTime_v2(float* ms, void* start, void* end) { return cuEventElapsedTime(ms, start, end); }

// ---- modules, functions, launches ----

API CUresult cuModuleLoadData(void** module, const void* image) {
    std::map<std::string, CubinKernel> kernels;
    if (!image || !read_cubin((const unsigned char*)image, kernels))
        return complain(INVALID_IMAGE, "%s", "the module image is not a CUDA cubin");
    auto m = std::make_unique<Module>();
    CUresult r = emulations(kernels, *m);
    if (r == SUCCESS) *module = m.release();
    return r;
}
API CUresult cuModuleUnload(void* module) {
    synchronise();
    delete (Module*)module;
    return SUCCESS;
}
API CUresult cuModuleGetFunction(void** f, void* module, const char* name) {
    for (auto& fn : ((Module*)module)->functions)
        if (fn->name == name) {
            *f = fn.get();
            return SUCCESS;
        }
    return NOT_FOUND;
}
API CUresult cuFuncGetAttribute(int* v, int attr, void* f) {
    auto* fn = (Function*)f;
    switch (attr) {
        case 0: *v = max_threads(*fn); return SUCCESS;               // MAX_THREADS_PER_BLOCK
        case 1: *v = 0; return SUCCESS;                          // SHARED_SIZE_BYTES (static)
        case 4: *v = fn->registers; return SUCCESS;              // NUM_REGS
        case 8: *v = fn->max_dynamic_shared; return SUCCESS;     // MAX_DYNAMIC_SHARED_SIZE_BYTES
        default: return complain(NOT_SUPPORTED, "function attribute %s is not emulated", std::to_string(attr));
    }
}
API CUresult cuFuncSetAttribute(void* f, int attr, int value) {
    if (attr != 8) return complain(NOT_SUPPORTED, "setting function attribute %s is not emulated", std::to_string(attr));
    if (value < 0 || value > OPTIN_SHARED) return INVALID_VALUE;
    ((Function*)f)->max_dynamic_shared = value;
    return SUCCESS;
}

// The driver's checks (block and grid limits, dynamic shared memory within the function's
// current limit, arguments given), then the launch queued for the emulator.
API CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned shared, CUstream, void** params, void** extra) {
    auto* fn = (Function*)f;
    if (!fn) return INVALID_HANDLE;
    unsigned block[3] = {bx, by, bz}, grid[3] = {gx, gy, gz};
    for (int d = 0; d < 3; ++d)
        if (block[d] == 0 || (int)block[d] > MAX_BLOCK[d] || grid[d] == 0 || grid[d] > MAX_GRID[d]) return INVALID_VALUE;
    if ((unsigned long long)bx * by * bz > (unsigned long long)MAX_THREADS) return INVALID_VALUE;
    if ((int)shared > fn->max_dynamic_shared) return INVALID_VALUE;
    if ((unsigned long long)bx * by * bz > (unsigned long long)max_threads(*fn)) return LAUNCH_OUT_OF_RESOURCES;
    if (extra) return complain(NOT_SUPPORTED, "%s: launch arguments through `extra` are not emulated", fn->name);
    if (!params && !fn->params.empty()) return INVALID_VALUE;
    Launch l{fn, {gx, gy, gz}, {bx, by, bz}, shared, {}};
    for (std::size_t i = 0; i < fn->params.size(); ++i) {
        auto* a = (const unsigned char*)params[i];
        l.args.emplace_back(a, a + fn->params[i]);
    }
    std::lock_guard<std::mutex> g(lock);
    queued.push_back(std::move(l));
    return SUCCESS;
}

// ---- errors ----

API CUresult cuGetErrorName(CUresult e, const char** s) {
    switch (e) {
        case SUCCESS: *s = "CUDA_SUCCESS"; break;
        case INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
        case INVALID_IMAGE: *s = "CUDA_ERROR_INVALID_IMAGE"; break;
        case INVALID_HANDLE: *s = "CUDA_ERROR_INVALID_HANDLE"; break;
        case NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
        case NOT_SUPPORTED: *s = "CUDA_ERROR_NOT_SUPPORTED"; break;
        case LAUNCH_OUT_OF_RESOURCES: *s = "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"; break;
        default: *s = "CUDA_ERROR_UNKNOWN"; break;
    }
    return SUCCESS;
}
API CUresult cuGetErrorString(CUresult e, const char** s) { return cuGetErrorName(e, s); }
