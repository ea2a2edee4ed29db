// Runs kernels of kernels/ on the CPU emulation (emulator.h) for tests/kernels_on_cpu.rs,
// which compares the fields with the CPU back end bit for bit. Built once per precision
// (-DREAL=float|double) against the same emulator and kernel registrations as the driver.
//
// Usage: harness KERNEL VARIANT BX BY NX NY STEPS IN OUT
//   KERNEL heat1d | heat2d | cavity, VARIANT l2 | shared.
//   IN: the scalars (heat: r; cavity: dtdx dtdy nudx2 nudy2 c2dx c2dy u0), then the fields
//   (heat: T; cavity: u v p), all as raw `real`s. OUT: the fields after STEPS steps.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "emulator.h"

typedef REAL real;

// Launch registered kernel `name` in this precision with the addresses of its arguments.
static void run(const char* name, uint3_ grid, uint3_ block, std::size_t shared, std::vector<void*> args) {
    const sim_emu::Kernel* k = sim_emu::find(name, sizeof(real));
    if (!k || k->params.size() != args.size()) {
        std::fprintf(stderr, "harness: no kernel %s with %zu parameters\n", name, args.size());
        std::exit(5);
    }
    sim_emu::launch(*k, grid, block, shared, args.data());
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
    size_t tile = (size_t)(bx + 2) * (by + 2) * sizeof(real);
    std::vector<real> out;
    if (kernel == "heat1d" || kernel == "heat2d") {
        if (in.size() != 1 + n) return 4;
        real r = in[0];
        std::vector<real> a(in.begin() + 1, in.end()), b(n, (real)-1);
        for (int s = 0; s < steps; ++s) {
            real *src = a.data(), *dst = b.data();
            if (kernel == "heat1d")
                run("heat1d", {(unsigned)(nx + bx - 1) / bx, 1, 1}, {bx, 1, 1}, 0, {&src, &dst, &nx, &r});
            else if (shared)
                run("heat2d_shared", grid, block, tile, {&src, &dst, &nx, &ny, &r});
            else  // HEAT2D_NODES (4) rows per thread
                run("heat2d_l2", {grid.x, (ny + 4 * by - 1) / (4 * by), 1}, block, 0, {&src, &dst, &nx, &ny, &r});
            a.swap(b);
        }
        out = a;
    } else if (kernel == "cavity") {
        if (in.size() != 7 + 3 * n) return 4;
        real c[7];
        for (int k = 0; k < 7; ++k) c[k] = in[k];
        std::vector<real> u(in.begin() + 7, in.begin() + 7 + n), v(in.begin() + 7 + n, in.begin() + 7 + 2 * n),
            p(in.begin() + 7 + 2 * n, in.end());
        // The starred fields start as garbage: every node the corrector reads must be written.
        std::vector<real> us(n, (real)NAN), vs(n, (real)NAN), ps(n, (real)NAN);
        real *U = u.data(), *V = v.data(), *P = p.data(), *Us = us.data(), *Vs = vs.data(), *Ps = ps.data();
        long long boundary = 2LL * nx + 2LL * (ny - 2);
        uint3_ wgrid = {(unsigned)((boundary + 255) / 256), 1, 1}, wblock = {256, 1, 1};
        std::string suffix = shared ? "_shared" : "_l2";
        std::size_t bytes = shared ? 3 * tile : 0;
        for (int s = 0; s < steps; ++s) {
            run(("cavity_predictor" + suffix).c_str(), grid, block, bytes,
                {&U, &V, &P, &Us, &Vs, &Ps, &nx, &ny, &c[0], &c[1], &c[2], &c[3], &c[4], &c[5]});
            run("cavity_walls", wgrid, wblock, 0, {&Us, &Vs, &Ps, &nx, &ny, &c[6]});
            run(("cavity_corrector" + suffix).c_str(), grid, block, bytes,
                {&U, &V, &P, &Us, &Vs, &Ps, &nx, &ny, &c[0], &c[1], &c[2], &c[3], &c[4], &c[5]});
            run("cavity_walls", wgrid, wblock, 0, {&U, &V, &P, &nx, &ny, &c[6]});
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
