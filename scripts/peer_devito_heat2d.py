#!/usr/bin/env python3
"""Peer benchmark: Devito's generated OpenMP C code for the 2D heat equation (FTCS).

This is an optional peer, not part of the test suite. It times the same explicit
update that `sim bench heat2d` times, on the same grid, so the two numbers can be
put side by side in one session:

    N x N nodes, Dirichlet zero boundary (the edge nodes stay 0), and per step

        u_new[i,j] = (1 - 4r) * u[i,j] + r * ((u[i-1,j] + u[i+1,j]) + (u[i,j-1] + u[i,j+1]))

    with r = 0.2 on the interior nodes.

Setup (once; Devito pulls in its own numpy/sympy, preferably in a virtual environment):

    pip install -r scripts/requirements-peer.txt      # i.e. pip install devito
    # needs gcc with OpenMP (DEVITO_ARCH=gcc is set by this script)

Usage:

    python3 scripts/peer_devito_heat2d.py --size 4096 --threads 2
    python3 scripts/peer_devito_heat2d.py --size 4096 --threads 2 --precision f32 --json
    python3 scripts/peer_devito_heat2d.py --size 512 --threads 1 --opt advanced-blockinner

Compare with our solver on the same machine, same size, precision and threads:

    sim bench heat2d --size 4096 --threads 2 --temporal-block off
    sim bench heat2d --size 4096 --threads 2 --temporal-block auto

`--temporal-block off` is the like-for-like comparison with Devito's option sets:
all of them advance one time step per sweep over the grid, so they read and write
the whole field once per step. `--temporal-block auto` lets our solver fuse several
steps per sweep, which Devito's CPU pipeline does not do (see OPTION SETS below).
Both tools report BW_e with the same definition: bytes per step = 2 * N * N *
sizeof(precision) (one read and one write of the field), GB = 1e9 bytes, and
Mcells/s = N * N per step.

What is timed: for each option set an Operator is built and JIT-compiled, checked
against a numpy reference on a small grid (64 x 64, 10 steps; exit status 1 on a
mismatch), run once untimed for a few steps (warm-up; also used to choose the
number of steps when --steps is not given, aiming at about 3 s timed), then
`op.apply(time_M=S-1, ...)` is timed with time.perf_counter. Devito's own
PerformanceSummary time (the sum of its timed sections, i.e. the time loop) is
reported next to it.

OPTION SETS (--opt NAME picks one; by default all are run):

    noop                         Devito's 'noop' mode: no flop or loop optimisation
                                 (no SIMD pragma, no blocking); still OpenMP-parallel.
    advanced                     Devito's default mode. In 2D it does not block the
                                 loops (only the outer loop could be blocked, which
                                 the heuristics skip), it adds `omp simd` on the
                                 inner loop.
    advanced-blockinner          'advanced' with {'blockinner': True}: 2D spatial
                                 blocking, default block size 16 x 16.
    advanced-blockinner-tuned    as above, with the block size chosen by Devito's
                                 autotuner ('basic' level) during the warm-up; the
                                 timed run uses the tuned block size.
    advanced-skewing             'advanced' with {'blockinner': True, 'skewing': True}:
                                 the only wavefront/skewing option of the CPU
                                 pipeline (devito/passes/clusters/blocking.py,
                                 SynthesizeSkewing; option read in devito/core/cpu.py).
                                 It skews the spatial block loops by the time index,
                                 but the time loop stays outermost with one parallel
                                 sweep per step, so there is no temporal reuse:
                                 Devito 4.8 has no time-tiling / temporal blocking.

Boundary handling: the update is written on a SubDomain that excludes the edge
nodes, so the generated loops cover the interior only and the edges of both time
buffers keep their initial zeros. `--bc edge-eqs` instead writes the update on
the whole grid plus four extra equations that set the edges of u.forward to
zero; Devito then generates two more OpenMP parallel regions per step (edge
loops) and writes N into the code, so the SubDomain form, which generates one
parallel loop nest over the interior and nothing else, is the default.

Environment set by this script before importing devito: DEVITO_ARCH=gcc,
DEVITO_LANGUAGE=openmp, DEVITO_LOGGING=WARNING, OMP_NUM_THREADS=T, and (unless
already set) OMP_PROC_BIND=close, OMP_PLACES=cores to pin the threads.
"""

import argparse
import json
import math
import os
import sys
import time

R = 0.2
CHECK_SIZE = 64
CHECK_STEPS = 10
WARMUP_STEPS = 5
WARMUP_SECONDS = 0.2
TARGET_SECONDS = 3.0

# name -> (Devito mode, mode options, autotune the block size during warm-up)
OPTION_SETS = {
    "noop": ("noop", {}, False),
    "advanced": ("advanced", {}, False),
    "advanced-blockinner": ("advanced", {"blockinner": True}, False),
    "advanced-blockinner-tuned": ("advanced", {"blockinner": True}, True),
    "advanced-skewing": ("advanced", {"blockinner": True, "skewing": True}, False),
}


def parse_args():
    p = argparse.ArgumentParser(
        description="Time Devito's OpenMP code for the explicit 2D heat equation "
        "(peer of `sim bench heat2d`).")
    p.add_argument("--size", type=int, default=4096, help="nodes per side, N (default 4096)")
    p.add_argument("--precision", choices=("f32", "f64"), default="f64")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                   help="OpenMP threads (default: all CPUs)")
    p.add_argument("--steps", type=int, default=None,
                   help="timed steps (default: enough for about %g s)" % TARGET_SECONDS)
    p.add_argument("--opt", choices=tuple(OPTION_SETS), default=None,
                   help="run only this option set (default: all)")
    p.add_argument("--bc", choices=("subdomain", "edge-eqs"), default="subdomain",
                   help="how the zero boundary is kept (default: subdomain)")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    a = p.parse_args()
    if a.size < 3:
        p.error("--size must be at least 3")
    if a.threads < 1:
        p.error("--threads must be at least 1")
    if a.steps is not None and a.steps < 1:
        p.error("--steps must be at least 1")
    return a


def set_environment(threads):
    """Configure Devito and OpenMP; must run before devito is imported."""
    os.environ["DEVITO_ARCH"] = "gcc"
    os.environ["DEVITO_LANGUAGE"] = "openmp"
    os.environ["DEVITO_LOGGING"] = "WARNING"
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ.setdefault("OMP_PROC_BIND", "close")
    os.environ.setdefault("OMP_PLACES", "cores")


def numpy_reference(u0, steps, np):
    """The update of the module docstring, in the dtype of u0, edges kept at 0."""
    u = u0.copy()
    v = np.zeros_like(u)
    c = u.dtype.type(1.0 - 4.0 * R)
    r = u.dtype.type(R)
    for _ in range(steps):
        v[1:-1, 1:-1] = c * u[1:-1, 1:-1] + r * (
            (u[:-2, 1:-1] + u[2:, 1:-1]) + (u[1:-1, :-2] + u[1:-1, 2:]))
        u, v = v, u
    return u


class Heat2D:
    """One Devito Operator for the FTCS update on an N x N grid."""

    def __init__(self, dv, np, n, dtype, opt_name, bc):
        mode, options, self.autotune = OPTION_SETS[opt_name]

        class Interior(dv.SubDomain):
            name = "interior"

            def define(self, dimensions):
                return {d: ("middle", 1, 1) for d in dimensions}

        interior = Interior()
        grid = dv.Grid(shape=(n, n), extent=(1.0, 1.0), dtype=dtype,
                       subdomains=(interior,))
        u = dv.TimeFunction(name="u", grid=grid, space_order=2, time_order=1)
        x, y = grid.dimensions
        hx, hy = x.spacing, y.spacing

        # Explicit right-hand side; neighbours taken by shifting one grid spacing.
        rhs = (1.0 - 4.0 * R) * u + R * ((u.subs(x, x - hx) + u.subs(x, x + hx))
                                        + (u.subs(y, y - hy) + u.subs(y, y + hy)))
        if bc == "subdomain":
            # Interior-only loops; the edges are never written and stay 0.
            eqs = [dv.Eq(u.forward, rhs, subdomain=interior)]
        else:
            # Whole-grid update, then the four edges of u.forward reset to 0.
            t = grid.stepping_dim
            eqs = [dv.Eq(u.forward, rhs),
                   dv.Eq(u[t + 1, 0, y], 0.0), dv.Eq(u[t + 1, n - 1, y], 0.0),
                   dv.Eq(u[t + 1, x, 0], 0.0), dv.Eq(u[t + 1, x, n - 1], 0.0)]

        self.np = np
        self.n = n
        self.u = u
        self.op = dv.Operator(eqs, opt=(mode, options), name="heat2d")
        self.params = {p.name for p in self.op.parameters}
        self.tuned = {}

    def set_field(self, field):
        """Initial field into time buffer 0; the other buffer is zeroed."""
        self.u.data[:] = 0
        self.u.data[0] = field

    def field_after(self, steps):
        """The field after `steps` steps starting from time buffer 0."""
        return self.np.array(self.u.data[steps % 2])

    def apply(self, steps, threads, autotune=False):
        """Run `steps` steps; returns Devito's PerformanceSummary."""
        kwargs = {"time_m": 0, "time_M": steps - 1}
        if "nthreads" in self.params:
            kwargs["nthreads"] = threads
        kwargs.update(self.tuned)
        if autotune:
            # 'preemptive' tuning runs on shadow copies and leaves u untouched.
            kwargs["autotune"] = ("basic", "preemptive")
        summary = self.op.apply(**kwargs)
        if autotune:
            record = self.op._state.get("autotuning", [])
            if record:
                self.tuned = {k: v for k, v in record[-1].get("tuned", {}).items()
                              if k in self.params and k != "nthreads"}
        return summary


def summary_seconds(summary):
    """Sum of the section times in a Devito PerformanceSummary, or None."""
    try:
        times = [v.time for v in summary.values()]
    except (AttributeError, TypeError):
        return None
    return sum(times) if times else None


def check(dv, np, dtype, opt_name, bc, threads):
    """Compare the operator with the numpy reference on a small grid."""
    rng = np.random.default_rng(1)
    u0 = np.zeros((CHECK_SIZE, CHECK_SIZE), dtype=dtype)
    u0[1:-1, 1:-1] = rng.random((CHECK_SIZE - 2, CHECK_SIZE - 2))
    h = Heat2D(dv, np, CHECK_SIZE, dtype, opt_name, bc)
    h.set_field(u0)
    h.apply(CHECK_STEPS, threads)
    got = h.field_after(CHECK_STEPS)
    want = numpy_reference(u0, CHECK_STEPS, np)
    diff = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    scale = float(np.max(np.abs(want)))
    return diff, diff / scale if scale > 0 else diff


def bench(dv, np, args, dtype, opt_name):
    n, threads = args.size, args.threads
    h = Heat2D(dv, np, n, dtype, opt_name, args.bc)
    rng = np.random.default_rng(0)
    u0 = np.zeros((n, n), dtype=dtype)
    u0[1:-1, 1:-1] = rng.random((n - 2, n - 2), dtype=np.float64)
    h.set_field(u0)

    # Warm-up: JIT compilation and first touch (and block-size tuning if asked),
    # then a short untimed run that also sizes the timed run.
    # The warm-up grows until it lasts WARMUP_SECONDS, so that the per-call
    # overhead of op.apply does not distort the estimate on small grids.
    h.apply(1, threads, autotune=h.autotune)
    warm_steps = WARMUP_STEPS
    while True:
        t0 = time.perf_counter()
        h.apply(warm_steps, threads)
        elapsed = time.perf_counter() - t0
        if elapsed >= WARMUP_SECONDS or args.steps:
            break
        warm_steps *= 4
    warm = elapsed / warm_steps
    steps = args.steps or max(10, math.ceil(TARGET_SECONDS / max(warm, 1e-9)))

    t0 = time.perf_counter()
    summary = h.apply(steps, threads)
    wall = time.perf_counter() - t0

    s_per_step = wall / steps
    dv_time = summary_seconds(summary)
    nbytes = np.dtype(dtype).itemsize
    result = {
        "opt": opt_name,
        "steps": steps,
        "wall_s": wall,
        "s_per_step": s_per_step,
        "mcells_per_s": n * n / s_per_step / 1e6,
        "bw_eff_GBps": 2.0 * n * n * nbytes / s_per_step / 1e9,
        "devito_s_per_step": dv_time / steps if dv_time else None,
    }
    if h.tuned:
        result["tuned"] = dict(h.tuned)
    return result


def text_table(out):
    lines = [
        "devito %s heat2d (FTCS, r=%g) %dx%d %s, %d thread(s), bc=%s"
        % (out["version"], R, out["size"], out["size"], out["precision"],
           out["threads"], out["bc"]),
        "%-26s %7s %11s %11s %9s %9s  %s"
        % ("opt", "steps", "s/step", "devito s/st", "Mcells/s", "BW_e GB/s", "check max|diff|"),
    ]
    for r in out["results"]:
        dvt = r["devito_s_per_step"]
        extra = "  tuned %s" % r["tuned"] if r.get("tuned") else ""
        lines.append("%-26s %7d %11.3e %11s %9.1f %9.2f  %.1e%s" % (
            r["opt"], r["steps"], r["s_per_step"],
            "%.3e" % dvt if dvt else "-", r["mcells_per_s"], r["bw_eff_GBps"],
            r["check_max_abs_diff"], extra))
    lines.append("BW_e = 2*N*N*%d bytes per step / (s/step) / 1e9"
                 % (4 if out["precision"] == "f32" else 8))
    return "\n".join(lines)


def main():
    args = parse_args()
    set_environment(args.threads)

    try:
        import numpy as np
        import devito as dv
    except ImportError as e:
        sys.exit(f"peer_devito_heat2d.py: {e}; pip install -r scripts/requirements-peer.txt")

    dtype = np.float32 if args.precision == "f32" else np.float64
    tol = 1e-5 if args.precision == "f32" else 1e-12
    names = [args.opt] if args.opt else list(OPTION_SETS)

    out = {
        "peer": "devito",
        "version": dv.__version__,
        "size": args.size,
        "precision": args.precision,
        "threads": args.threads,
        "bc": args.bc,
        "results": [],
    }
    failed = False
    for name in names:
        diff, rel = check(dv, np, dtype, name, args.bc, args.threads)
        # Check lines go to stdout with the table, to stderr with --json.
        print("check %-26s %dx%d, %d steps: max|diff| = %.3e (relative %.3e)"
              % (name, CHECK_SIZE, CHECK_SIZE, CHECK_STEPS, diff, rel),
              file=sys.stderr if args.json else sys.stdout, flush=True)
        if not rel <= tol:
            print("FAIL: %s differs from the numpy reference by %.3e relative (> %g)"
                  % (name, rel, tol), file=sys.stderr)
            failed = True
            continue
        r = bench(dv, np, args, dtype, name)
        r["check_max_abs_diff"] = diff
        out["results"].append(r)

    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(text_table(out))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
