#!/usr/bin/env python3
"""Peer benchmark: cuSPARSE's batched tridiagonal solvers (through CuPy) on a GPU.

This is an optional peer, not part of the test suite. It times the solves that
`sim bench tridiag --backend cuda` times, on the same systems: B systems of N unknowns with
the heat halves' matrix (diagonal 1 + r, off-diagonals -r/2, r = 1: dominance 2) and the
right-hand side rhs[k] = 1 + (k % 7) * 0.1 over the N * B elements, whatever the layout.

    gtsv2StridedBatch      contiguous: system s at rhs[s*N : (s+1)*N]
    gtsvInterleavedBatch   interleaved: unknown i of system s at rhs[i*B + s]; algo 0 =
                           cuThomas, 1 = LU with pivoting, 2 = QR (one that raises is skipped)
    COPY                   N * B elements device to device, by cudaMemcpyAsync and by a
                           kernel; % of COPY is taken against the faster of the two

Setup: pip install cupy-cuda13x numpy (checked against CuPy 14.2.0, CUDA 13). Usage:

    python3 scripts/peer_cusparse_gtsv2.py --size 4096 --batch 4096
    python3 scripts/peer_cusparse_gtsv2.py --size 4096 --precision f32 --json out.json

and on the same GPU:  sim bench tridiag --backend cuda --size 4096 --batch 4096

sim's definitions: BW_e = 2 * N * B * sizeof(precision) / t / 1e9 GB/s (rhs read once, the
solution written once: the minimum traffic; the N * B values of each of cuSPARSE's dl, d, du
are left out), unknowns/s = N * B / t, % of COPY = BW_e / BW(COPY). Median of --repeats
solves after 3 warm-ups, timed by CUDA events. Solves are in place; after timing, one more
solve (workspace poisoned with NaN) is checked on the host in float64 for 8 systems (first,
last, 6 random): ||A x - rhs||_inf / ||rhs||_inf <= 1e-4 (f32), 1e-10 (f64), else exit 1.
"""

import argparse
import json
import sys

import numpy as np

R = 1.0  # the heat halves' r: diagonal 1 + r, off-diagonals -r/2
TOL = {"f32": 1e-4, "f64": 1e-10}
VARIANTS = [("gtsv2StridedBatch", "contiguous", None)] + [  # (label, layout, algo)
    (f"gtsvInterleavedBatch algo={k} ({w})", "interleaved", k)
    for k, w in enumerate(("cuThomas", "LU pivoting", "QR"))]


def coefficients(xp, n, b, layout, dtype):
    """dl, d, du of B identical systems in `layout`, cuSPARSE's convention: the first
    sub-diagonal and the last super-diagonal entry of every system are 0."""
    dl, d, du = (xp.full(n * b, v, dtype=dtype) for v in (-R / 2, 1 + R, -R / 2))
    if layout == "contiguous":
        dl.reshape(b, n)[:, 0] = 0
        du.reshape(b, n)[:, -1] = 0
    else:
        dl.reshape(n, b)[0, :] = 0
        du.reshape(n, b)[-1, :] = 0
    return dl, d, du


def systems(a, n, b, layout, picks):
    """Rows = the systems `picks` of the flat buffer `a` (numpy or cupy)."""
    return a.reshape(b, n)[picks] if layout == "contiguous" else a.reshape(n, b)[:, picks].T


def residual(x, d):
    """Max over rows of ||A x - d||_inf / ||d||_inf, in float64; NaN if x has a NaN."""
    x, d = np.asarray(x, np.float64), np.asarray(d, np.float64)
    ax = (1 + R) * x
    ax[:, 1:] -= R / 2 * x[:, :-1]
    ax[:, :-1] -= R / 2 * x[:, 1:]
    return float(np.max(np.max(np.abs(ax - d), axis=1) / np.max(np.abs(d), axis=1)))


def median_time(cp, prep, run, repeats, warmup=3):
    """Median seconds of run(). prep() is queued before the start event: it is not timed, and it
    keeps the GPU busy while the host launches run(), so launch latency is not timed either."""
    stream = cp.cuda.get_current_stream()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(warmup + repeats):
        prep()
        start.record(stream)
        run()
        end.record(stream)
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
    return float(np.median(times[warmup:]))


def solver(cp, cs, handle, p, n, b, layout, algo, rhs):
    """(prep, run, workspace, x) of one variant. CuPy 14.2.0's cusparse module takes raw
    device pointers, sets the handle's stream to the current one and raises on a bad status."""
    pristine = coefficients(cp, n, b, layout, rhs.dtype)
    dl, d, du = (a.copy() for a in pristine)
    x = cp.empty_like(rhs)
    ptrs = (dl.data.ptr, d.data.ptr, du.data.ptr, x.data.ptr)
    if layout == "contiguous":  # m = N, batchCount = B, batchStride = N: systems back to back
        name, head, tail = "gtsv2StridedBatch", (handle, n), (b, n)
    else:
        name, head, tail = "gtsvInterleavedBatch", (handle, algo, n), (b,)
    size = getattr(cs, p + name + "_bufferSizeExt")(*head, *ptrs, *tail)
    buf = cp.empty(max(size, 1), dtype=cp.uint8)  # CuPy aligns to 512 B, cuSPARSE needs 128
    solve, args = getattr(cs, p + name), (*head, *ptrs, *tail, buf.data.ptr)

    def prep():
        for dst, src in zip((dl, d, du, x), pristine + (rhs,)):
            cp.copyto(dst, src)

    return prep, lambda: solve(*args), buf, x


def bench(cp, cs, handle, prec, n, b, picks, repeats):
    """The rows of one precision: the two COPYs, then every solver variant."""
    dtype, p = (np.float32, "s") if prec == "f32" else (np.float64, "d")
    elems = n * b
    nbytes = 2 * elems * np.dtype(dtype).itemsize
    rhs = (1.0 + (cp.arange(elems, dtype=cp.int64) % 7) * 0.1).astype(dtype)  # as sim: f64, then cast
    dst = cp.empty_like(rhs)
    kcopy = cp.ElementwiseKernel("T x", "T y", "y = x", "peer_copy")
    rows = [{"solver": f"COPY ({k})", "time_per_solve_s": median_time(cp, f, f, repeats)}
            for k, f in (("memcpy", lambda: cp.copyto(dst, rhs)), ("kernel", lambda: kcopy(rhs, dst)))]
    del dst
    for label, layout, algo in VARIANTS:
        row = {"solver": label, "layout": layout}
        try:
            prep, run, buf, x = solver(cp, cs, handle, p, n, b, layout, algo, rhs)
            row["time_per_solve_s"] = median_time(cp, prep, run, repeats)
            # In place, x must hold rhs on entry (an entry left unwritten keeps it: the residual
            # shows that), so the workspace is poisoned instead: all-ones bytes are NaN.
            prep()
            buf.fill(0xFF)
            run()
            cp.cuda.get_current_stream().synchronize()
            row["residual"] = residual(cp.asnumpy(systems(x, n, b, layout, picks)),
                                       cp.asnumpy(systems(rhs, n, b, layout, picks)))
            row["ok"] = row["residual"] <= TOL[prec]  # False for NaN too
            print(f"  {prec} {label}: residual {row['residual']:.2e} over systems {picks}"
                  + ("" if row["ok"] else f"  FAIL (> {TOL[prec]:g})"))
            del prep, run, buf, x
        except Exception as e:  # one failing variant (an algo this cuSPARSE lacks) must not stop the rest
            row["error"] = f"{type(e).__name__}: {e}"
            row.pop("time_per_solve_s", None)  # no figures from a variant that did not finish
            print(f"  {prec} {label}: skipped, {row['error']}")
        rows.append(row)
    copy_bw = max(nbytes / r["time_per_solve_s"] / 1e9 for r in rows[:2])
    for r in rows:
        r.update(precision=prec, N=n, B=b, copy_bw_GBps=copy_bw)
        if r.get("time_per_solve_s"):
            bw = nbytes / r["time_per_solve_s"] / 1e9
            r.update(unknowns_per_s=elems / r["time_per_solve_s"], bw_eff_GBps=bw,
                     fraction_of_copy=bw / copy_bw)
    del rhs
    cp.get_default_memory_pool().free_all_blocks()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=4096, help="unknowns per system N (>= 3)")
    ap.add_argument("--batch", type=int, default=None, help="systems B (default: N)")
    ap.add_argument("--precision", choices=["f32", "f64", "both"], default="both")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--json", metavar="FILE", help="write all figures to FILE")
    a = ap.parse_args()
    n, b = a.size, a.batch or a.size
    if n < 3 or b < 1:
        sys.exit("--size >= 3 and --batch >= 1")

    try:
        import cupy as cp
        from cupy_backends.cuda.libs import cusparse as cs
    except ImportError as e:
        sys.exit(f"peer_cusparse_gtsv2.py: {e}; pip install -r scripts/requirements-peer.txt (needs a CUDA GPU)")

    handle = cp.cuda.device.get_cusparse_handle()
    name = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"]
    meta = {"name": "tridiag-peer-cusparse", "device": name.decode() if isinstance(name, bytes) else name,
            "cupy": cp.__version__, "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(), "size": n,
            "cusparse": cs.getVersion(handle), "batch": b, "repeats": a.repeats, "unit": "GB/s (1e9 B/s)"}
    print(f"{meta['device']}, CuPy {meta['cupy']}, cuSPARSE {meta['cusparse']}: {b} systems x {n} unknowns")
    picks = sorted({0, b - 1} | set(np.random.default_rng(0).choice(b, min(6, b), replace=False).tolist()))
    rows = []
    for prec in ["f32", "f64"] if a.precision == "both" else [a.precision]:
        rows += bench(cp, cs, handle, prec, n, b, picks, a.repeats)

    print("\n| solver | layout | precision | N | B | s/solve | unknowns/s | BW_e GB/s | % of COPY "
          "| max residual |\n" + "|---" * 10 + "|")
    for r in rows:
        cells = [r["solver"], r.get("layout", "-"), r["precision"], r["N"], r["B"]]
        if r.get("time_per_solve_s"):
            res = f"{r['residual']:.1e}" + ("" if r["ok"] else " FAIL") if "residual" in r else "-"
            cells += [f"{r['time_per_solve_s']:.3e}", f"{r['unknowns_per_s']:.3e}",
                      f"{r['bw_eff_GBps']:.1f}", f"{100 * r['fraction_of_copy']:.1f}", res]
        else:
            cells += ["skipped (error)", "", "", "", ""]
        print("| " + " | ".join(map(str, cells)) + " |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(meta, results=rows), f, indent=2)
    return 0 if all(r.get("ok", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
