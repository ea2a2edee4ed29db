#!/usr/bin/env python3
"""Plots of a shallow-water run (`sim run cases/swe_*.yaml`).

Writes PNG files into the run directory (or --out):

- ``swe_eta.png``: maps of the surface elevation eta at up to six output times of the run's
  .pvd series (cell data of the .vti files), with a shared colour scale;
- with ``--hovmoller``: ``swe_hovmoller.png``, eta along the southern row of cells (the
  coast of the Kelvin-wave case) against x and time, with the line x = x0 + sqrt(g H) (t - t0)
  of the expected phase speed from the crest x0 of the first frame (time t0) when ``--speed``
  is given (m/s).

Requirements: ``pip install vtk numpy matplotlib``.

Usage: ``python3 scripts/plot_swe.py out/swe_kelvin_waves --hovmoller --speed 31.32``
"""

import argparse
import os
import sys
import xml.etree.ElementTree as ET

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from vtkmodules.util.numpy_support import vtk_to_numpy  # noqa: E402
from vtkmodules.vtkIOXML import vtkXMLImageDataReader  # noqa: E402


def series(run):
    """(time, path) of every file of the run's .pvd, in order."""
    if not os.path.isdir(run):
        sys.exit(f"plot_swe.py: {run} is not a directory: give the output directory of a shallow_water run")
    pvds = [f for f in os.listdir(run) if f.endswith(".pvd")]
    if not pvds:
        sys.exit(f"plot_swe.py: no .pvd file in {run}")
    pvd = os.path.join(run, sorted(pvds)[0])
    try:
        root = ET.parse(pvd).getroot()
    except (OSError, ET.ParseError) as e:
        sys.exit(f"plot_swe.py: cannot read {pvd}: {e}")
    frames = [(float(d.get("timestep")), os.path.join(run, d.get("file"))) for d in root.iter("DataSet")]
    if not frames:
        sys.exit(f"plot_swe.py: {pvd} lists no files")
    return frames


def read_eta(path):
    """eta as a (ny, nx) array of the cells, and (dx, dy)."""
    # Checked first: the reader only prints its error and returns an empty grid.
    if not os.path.isfile(path):
        sys.exit(f"plot_swe.py: cannot read {path}: no such file (listed in the run's .pvd)")
    r = vtkXMLImageDataReader()
    r.SetFileName(path)
    r.Update()
    img = r.GetOutput()
    if img is None or img.GetNumberOfPoints() == 0:
        sys.exit(f"plot_swe.py: cannot read {path}")
    nx, ny, _ = (d - 1 for d in img.GetDimensions())
    a = img.GetCellData().GetArray("eta")
    if a is None:
        sys.exit(f"plot_swe.py: {path} has no cell field eta (not a shallow_water run?)")
    return vtk_to_numpy(a).reshape(ny, nx), img.GetSpacing()[:2]


def eta_maps(frames, out):
    picks = np.unique(np.linspace(0, len(frames) - 1, min(6, len(frames))).astype(int))
    data = [(frames[k][0], *read_eta(frames[k][1])) for k in picks]
    vmax = max(np.abs(e).max() for _, e, _ in data) or 1.0
    cols = min(3, len(data))
    rows = (len(data) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.8 * rows), squeeze=False, constrained_layout=True)
    for ax in axes.flat[len(data):]:
        ax.axis("off")
    for ax, (t, eta, (dx, dy)) in zip(axes.flat, data):
        ny, nx = eta.shape
        extent = [0, nx * dx / 1e3, 0, ny * dy / 1e3]
        im = ax.imshow(eta, origin="lower", extent=extent, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="equal")
        ax.set_title(f"t = {t:g} s")
        ax.set_xlabel("x (km)")
        ax.set_ylabel("y (km)")
    fig.colorbar(im, ax=axes.ravel().tolist(), label="eta (m)", shrink=0.8)
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def hovmoller(frames, out, speed):
    times, rows = [], []
    for t, path in frames:
        eta, (dx, _) = read_eta(path)
        times.append(t)
        rows.append(eta[0])
    data = np.array(rows)
    nx = data.shape[1]
    x = (np.arange(nx) + 0.5) * dx / 1e3
    fig, ax = plt.subplots(figsize=(7, 5))
    vmax = np.abs(data).max() or 1.0
    m = ax.pcolormesh(x, np.array(times) / 3600.0, data, cmap="RdBu_r", vmin=-vmax, vmax=vmax, shading="nearest")
    if speed:
        # The crest of the first frame (times[0], not 0 for a restarted run), carried east at
        # `speed` and wrapped around the periodic channel.
        x0 = x[np.argmax(data[0])]
        t = np.linspace(times[0], times[-1], 400)
        xs = (x0 + speed * (t - times[0]) / 1e3) % (nx * dx / 1e3)
        xs[np.abs(np.diff(xs, prepend=xs[0])) > 0.5 * nx * dx / 1e3] = np.nan
        ax.plot(xs, t / 3600.0, "k--", lw=1, label=f"{speed:g} m/s")
        ax.legend(loc="upper left")
    ax.set_xlabel("x (km)")
    ax.set_ylabel("t (h)")
    ax.set_title("eta along the southern wall")
    fig.colorbar(m, label="eta (m)")
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", help="run directory of a shallow_water case")
    ap.add_argument("--out", help="folder for the PNG files (default: the run directory)")
    ap.add_argument("--hovmoller", action="store_true", help="also draw the Hovmoeller diagram")
    ap.add_argument("--speed", type=float, help="expected phase speed (m/s) drawn on the Hovmoeller diagram")
    a = ap.parse_args()
    frames = series(a.run)
    out = a.out or a.run
    os.makedirs(out, exist_ok=True)
    eta_maps(frames, os.path.join(out, "swe_eta.png"))
    if a.hovmoller:
        hovmoller(frames, os.path.join(out, "swe_hovmoller.png"), a.speed)


if __name__ == "__main__":
    main()
