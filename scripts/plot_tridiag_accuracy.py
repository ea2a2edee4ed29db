#!/usr/bin/env python3
"""Accuracy of the tridiagonal solvers against diagonal dominance (MacIntosh et al. 2019,
Fig. 9), in f32: the infinity-norm error of TDMA (Thomas) and truncated SPIKE on 32-row
partitions, for the paper's random matrices and for the worst case of truncation
(|a| = 1, |c| = 0.01), with the estimate d^-m of the paper's eq. 8.

Runs the `accuracy_curve` test of tests/tridiag.rs (cargo, release build) unless a CSV it
wrote is given, and writes the PNG.

Requirements: ``pip install matplotlib``.

Usage: ``python3 scripts/plot_tridiag_accuracy.py [--csv curve.csv] [--out tridiag_accuracy.png]``
"""

import argparse
import csv
import os
import subprocess
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

EPS_F32 = 2.0**-23
COLUMNS = ("dominance", "tdma_random", "spike_random", "tdma_worst", "spike_worst", "estimate")


def run_curve(path):
    env = dict(os.environ, SIM_TRIDIAG_CSV=path)
    cmd = ["cargo", "test", "--release", "--test", "tridiag", "accuracy_curve", "--", "--ignored"]
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    try:
        rc = subprocess.run(cmd, cwd=root, env=env).returncode
    except FileNotFoundError:
        sys.exit("plot_tridiag_accuracy.py: cargo is not on PATH: run where the Rust toolchain is, "
                 "or give --csv with a curve the accuracy_curve test wrote")
    if rc != 0:
        sys.exit("plot_tridiag_accuracy.py: the accuracy_curve test failed")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", help="curve written by the accuracy_curve test (default: run it)")
    ap.add_argument("--out", default="tridiag_accuracy.png")
    a = ap.parse_args()
    # Checked before the test runs (minutes) rather than when the PNG is saved.
    if not os.path.isdir(os.path.dirname(os.path.abspath(a.out))):
        sys.exit(f"plot_tridiag_accuracy.py: the folder of --out {a.out} does not exist")
    path = a.csv
    if path is None:
        path = os.path.join(tempfile.mkdtemp(), "curve.csv")
        run_curve(path)
    try:
        with open(path) as f:
            rows = list(csv.DictReader(f))
        missing = [k for k in COLUMNS if k not in rows[0]]
        if missing:
            raise KeyError(", ".join(missing))
        col = {k: [float(r[k]) for r in rows] for k in COLUMNS}
    except (OSError, ValueError, TypeError, IndexError, KeyError) as e:
        sys.exit(f"plot_tridiag_accuracy.py: {path}: not a curve of the accuracy_curve test ({e!r})")
    d = col["dominance"]
    fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
    ax.semilogy(d, col["tdma_random"], "k-", label="TDMA, random")
    ax.semilogy(d, col["spike_random"], "C0--", label="truncated SPIKE (m = 32), random")
    ax.semilogy(d, col["tdma_worst"], "k:", label="TDMA, worst case")
    ax.semilogy(d, col["spike_worst"], "C3-", label="truncated SPIKE (m = 32), worst case")
    ax.semilogy(d, col["estimate"], "C3:", label="$d^{-m}$ (eq. 8)")
    ax.axhline(EPS_F32, color="grey", lw=0.8)
    ax.text(d[0], EPS_F32 * 0.6, "f32 epsilon", ha="left", va="top", color="grey")
    ax.set_ylim(1e-8, 2)
    ax.set_xlabel("diagonal dominance d")
    ax.set_ylabel(r"$\|\hat x - x\|_\infty$")
    ax.set_title("Tridiagonal solvers in f32: error against diagonal dominance")
    ax.legend(fontsize=8)
    fig.savefig(a.out, dpi=120)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
