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


def read_csv(path):
    """Columns of a CSV file as float arrays; an empty cell (a value that does not exist yet,
    such as the residue at step 0, or the time of a pseudo-time run) is NaN."""
    if not os.path.isfile(path):
        sys.exit(f"plot_lskum.py: no {path}: give the output directory of a q-LSKUM run")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"plot_lskum.py: {path} holds no rows")
    return {k: np.array([float(r[k]) if r[k] else np.nan for r in rows]) for k in rows[0]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--reference", help="reference residue history: lines 'iteration residue'")
    a = ap.parse_args()

    h = read_csv(os.path.join(a.out_dir, "history.csv"))
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    ax[0].plot(h["step"], h["residue"], label="sim")
    if a.reference:
        ref = np.loadtxt(a.reference, comments="#")
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

    cp = read_csv(os.path.join(a.out_dir, "wall_cp.csv"))
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
