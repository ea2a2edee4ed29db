#!/usr/bin/env python3
"""Plots of a lid-driven cavity run (`sim run cases/cavity_*.yaml`).

Writes two PNG files into the run directory (or --out):

- ``cavity_profiles.png``: u(y) along x = 0.5 and v(x) along y = 0.5 from the run
  (``profile_u.csv``, ``profile_v.csv``) against Ghia, Ghia & Shin (1982) (the columns of
  ``centreline_u.csv``/``centreline_v.csv``; rows flagged as misprints drawn hollow) and,
  for Re = 1000, 2500, 5000, Erturk, Corke & Gokcol (2005) (tables shipped in
  ``src/solvers/cavity/reference/``).
- ``cavity_vorticity.png``: vorticity contours with streamlines, from the newest
  checkpoint (``checkpoint_*.h5``, datasets ``/fields/u`` and ``/fields/v``).

Requirements: ``pip install matplotlib numpy h5py``.

Usage: ``python3 scripts/plot_cavity.py out/cavity_re100 [--out DIR]``
"""

import argparse
import csv
import glob
import os
import re
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

REFERENCE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "solvers", "cavity", "reference")


def read_csv(path):
    """Columns of a CSV file with a header row, skipping '#' lines, as a dict of lists."""
    with open(path) as f:
        rows = [r for r in csv.reader(line for line in f if not line.startswith("#"))]
    header, body = rows[0], [r for r in rows[1:] if r]
    return {h: [float(r[k]) for r in body] for k, h in enumerate(header)}


def newest_checkpoint(run_dir):
    files = sorted(glob.glob(os.path.join(run_dir, "checkpoint_*.h5")))
    if not files:
        sys.exit(f"plot_cavity.py: no checkpoint_*.h5 in {run_dir}")
    return files[-1]


def reynolds(checkpoint):
    with h5py.File(checkpoint, "r") as f:
        text = f.attrs["case_yaml"]
    text = text.decode() if isinstance(text, bytes) else str(text)
    # Comments dropped; the key `re` after a line start, `{` or `,`, so that the flow style
    # (`solver: {cavity: {n: 33, re: 1000}}`) reads as the block style does.
    text = re.sub(r"#.*", "", text)
    m = re.search(r"(?:^|[{,\s])re\s*:\s*([-+0-9.eE]+)", text, re.M)
    return float(m.group(1)) if m else None


def plot_profiles(run_dir, re_number, out):
    pu = read_csv(os.path.join(run_dir, "profile_u.csv"))
    pv = read_csv(os.path.join(run_dir, "profile_v.csv"))
    cu = read_csv(os.path.join(run_dir, "centreline_u.csv"))
    cv = read_csv(os.path.join(run_dir, "centreline_v.csv"))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 5))
    ax1.plot(pu["u"], pu["y"], "k-", lw=1.2, label="sim")
    ax2.plot(pv["x"], pv["v"], "k-", lw=1.2, label="sim")
    for ax, c, coord, var, swap in ((ax1, cu, "y", "u", True), (ax2, cv, "x", "v", False)):
        key = f"{var}_ghia"
        if key not in c:
            continue
        ok = [s == 0 for s in c["ghia_suspect"]]
        pts = [(a, b, g) for a, b, g in zip(c[coord], c[key], ok)]
        good = [(a, b) for a, b, g in pts if g]
        bad = [(a, b) for a, b, g in pts if not g]
        for sel, style in ((good, dict(marker="o", color="tab:red", ls="none", label="Ghia et al. 1982")),
                           (bad, dict(marker="o", mfc="none", color="tab:red", ls="none",
                                      label="Ghia (misprint, not compared)"))):
            if sel:
                xs, ys = zip(*sel)
                ax.plot(ys, xs, **style) if swap else ax.plot(xs, ys, **style)
    if re_number is not None:
        eu = os.path.join(REFERENCE_DIR, f"erturk_u_re{int(re_number)}.csv")
        ev = os.path.join(REFERENCE_DIR, f"erturk_v_re{int(re_number)}.csv")
        if float(re_number).is_integer() and os.path.exists(eu) and os.path.exists(ev):
            e = read_csv(eu)
            ax1.plot(e["u"], e["y"], "s", mfc="none", color="tab:blue", label="Erturk et al. 2005")
            e = read_csv(ev)
            ax2.plot(e["x"], e["v"], "s", mfc="none", color="tab:blue", label="Erturk et al. 2005")
    title = f"Re = {re_number:g}" if re_number is not None else ""
    ax1.set(xlabel="u / u0", ylabel="y", title=f"u along x = 0.5  {title}")
    ax2.set(xlabel="x", ylabel="v / u0", title=f"v along y = 0.5  {title}")
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(out, "cavity_profiles.png")
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def plot_vorticity(checkpoint, re_number, out):
    with h5py.File(checkpoint, "r") as f:
        u = np.asarray(f["fields/u"], dtype=np.float64)
        v = np.asarray(f["fields/v"], dtype=np.float64)
        spacing = np.asarray(f["geometry/spacing"])
        step = int(f.attrs["step"])
        time = float(f.attrs["time"])
    ny, nx = u.shape
    x = np.arange(nx) * spacing[0]
    y = np.arange(ny) * spacing[1]
    # Arrays are [j, i] (y slow, x fast).
    dvdx = np.gradient(v, spacing[0], axis=1, edge_order=2)
    dudy = np.gradient(u, spacing[1], axis=0, edge_order=2)
    w = dvdx - dudy
    fig, ax = plt.subplots(figsize=(6.4, 6))
    levels = np.array([-5, -4, -3, -2, -1, -0.5, 0, 0.5, 1, 2, 3, 4, 5], dtype=float)
    cs = ax.contour(x, y, w, levels=levels, cmap="RdBu_r", linewidths=0.9)
    ax.clabel(cs, fontsize=6, fmt="%g")
    ax.streamplot(x, y, u, v, density=1.6, color="0.35", linewidth=0.5, arrowsize=0.6)
    title = f"Re = {re_number:g}, " if re_number is not None else ""
    ax.set(xlim=(0, 1), ylim=(0, 1), aspect="equal", xlabel="x", ylabel="y",
           title=f"{title}vorticity contours and streamlines (step {step}, t = {time:.3g})")
    ax.title.set_fontsize(9)
    fig.tight_layout()
    path = os.path.join(out, "cavity_vorticity.png")
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run_dir", help="output directory of a cavity run")
    ap.add_argument("--out", help="where to write the PNG files (default: run_dir)")
    a = ap.parse_args()
    for name in ("profile_u.csv", "profile_v.csv", "centreline_u.csv", "centreline_v.csv"):
        if not os.path.isfile(os.path.join(a.run_dir, name)):
            sys.exit(f"plot_cavity.py: no {name} in {a.run_dir}: give the output directory of a cavity run")
    ck = newest_checkpoint(a.run_dir)
    out = a.out or a.run_dir
    os.makedirs(out, exist_ok=True)
    re_number = reynolds(ck)
    for p in (plot_profiles(a.run_dir, re_number, out), plot_vorticity(ck, re_number, out)):
        print(p)


if __name__ == "__main__":
    main()
