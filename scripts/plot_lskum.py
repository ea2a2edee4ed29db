#!/usr/bin/env python3
"""Plots of a q-LSKUM run: residue history and -C_p over the chord.

Usage: scripts/plot_lskum.py OUT_DIR [--reference tests/data/lskum/fser_ssprk43_9600_residue.txt]

Reads OUT_DIR/history.csv (step, time, wall_s, residue, residual, cl, cd, cm) and OUT_DIR/wall_cp.csv
(point, x, y, cp, minus_cp) and writes OUT_DIR/residue.png and OUT_DIR/cp.png.
Needs numpy and matplotlib.
"""
import argparse
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def read_csv(path, need):
    """Columns of a CSV file as float arrays; an empty cell (a value that does not exist yet,
    such as the residue at step 0, or the time of a pseudo-time run) is NaN. `need`: the
    columns a q-LSKUM run writes (other solvers' history.csv lacks them)."""
    hint = "give the output directory of a q-LSKUM run"
    if not os.path.isfile(path):
        sys.exit(f"plot_lskum.py: no {path}: {hint}")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"plot_lskum.py: {path} holds no rows")
    missing = [k for k in need if k not in rows[0]]
    if missing:
        sys.exit(f"plot_lskum.py: {path} has no column {', '.join(missing)}: {hint}")
    try:
        return {k: np.array([float(r[k]) if r[k] else np.nan for r in rows]) for k in need}
    except (TypeError, ValueError) as e:
        sys.exit(f"plot_lskum.py: {path}: {e}")


def read_reference(path):
    """The reference residue history: two columns, iteration and residue."""
    try:
        ref = np.loadtxt(path, comments="#", ndmin=2)
    except (OSError, ValueError) as e:
        sys.exit(f"plot_lskum.py: --reference {path}: {e}")
    if ref.shape[0] == 0 or ref.shape[1] < 2:
        sys.exit(f"plot_lskum.py: --reference {path}: give lines 'iteration residue'")
    return ref


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--reference", help="reference residue history: lines 'iteration residue'")
    a = ap.parse_args()

    h = read_csv(os.path.join(a.out_dir, "history.csv"), ("step", "residue", "cl", "cd", "cm"))
    cp = read_csv(os.path.join(a.out_dir, "wall_cp.csv"), ("x", "y", "minus_cp"))
    ref = read_reference(a.reference) if a.reference else None
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    ax[0].plot(h["step"], h["residue"], label="sim")
    if ref is not None:
        ax[0].plot(ref[:, 0], ref[:, 1], "--", label="reference")
    ax[0].set_xlabel("iteration")
    ax[0].set_ylabel("residue log10(res / res_2)")
    ax[0].grid(True, alpha=0.3)
    ax[0].legend()
    ax[1].plot(h["step"], h["cl"], label="C_l")
    ax[1].plot(h["step"], h["cd"], label="C_d")
    ax[1].plot(h["step"], h["cm"], label="C_m")
    ax[1].set_xlabel("iteration")
    ax[1].grid(True, alpha=0.3)
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(a.out_dir, "residue.png"), dpi=120)

    fig, ax = plt.subplots(figsize=(6, 4.5))
    upper = cp["y"] >= 0
    ax.plot(cp["x"][upper], cp["minus_cp"][upper], "o-", ms=3, label="upper surface")
    ax.plot(cp["x"][~upper], cp["minus_cp"][~upper], "s-", ms=3, label="lower surface")
    ax.set_xlabel("x / c")
    ax.set_ylabel("-C_p")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(a.out_dir, "cp.png"), dpi=120)
    print("wrote", os.path.join(a.out_dir, "residue.png"), "and", os.path.join(a.out_dir, "cp.png"))


if __name__ == "__main__":
    main()
