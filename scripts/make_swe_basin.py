#!/usr/bin/env python3
"""Write meshes/swe_basin.h5, the input of cases/swe_basin_from_file.yaml.

A 96 x 64 cell grid of 2 km cells: a shelf whose depth rises from 20 m at the west coast to
400 m offshore (tanh profile), with a seamount, and a 0.5 m Gaussian surface bump. Datasets
(rows = y, south first; columns = x), float64:

- ``depth``: equilibrium depth H at the cell centres (m, positive down), 64 x 96;
- ``eta``: initial surface elevation at the cell centres (m), 64 x 96.

A NetCDF-4 file with variables of these shapes works the same way.

Requirements: ``pip install numpy h5py``. Usage: ``python3 scripts/make_swe_basin.py [OUT]``
"""

import argparse
import os
import sys

import h5py
import numpy as np

NX, NY, DX = 96, 64, 2000.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.path.join(os.path.dirname(__file__), "..", "meshes", "swe_basin.h5")
    ap.add_argument("out", nargs="?", default=default, help="the HDF5 file to write (default: meshes/swe_basin.h5)")
    out = ap.parse_args().out
    if os.path.isdir(out):
        sys.exit(f"make_swe_basin.py: {out} is a directory: give the HDF5 file to write, e.g. {os.path.join(out, 'swe_basin.h5')}")
    if not os.path.isdir(os.path.dirname(os.path.abspath(out))):
        sys.exit(f"make_swe_basin.py: the folder of {out} does not exist")
    x = (np.arange(NX) + 0.5) * DX
    y = (np.arange(NY) + 0.5) * DX
    X, Y = np.meshgrid(x, y)
    shelf = 20.0 + 190.0 * (1.0 + np.tanh((X - 50e3) / 15e3))
    seamount = 250.0 * np.exp(-(((X - 130e3) / 12e3) ** 2 + ((Y - 70e3) / 12e3) ** 2))
    depth = shelf - seamount
    eta = 0.5 * np.exp(-(((X - 100e3) / 10e3) ** 2 + ((Y - 64e3) / 10e3) ** 2))
    try:
        with h5py.File(out, "w") as f:
            f.create_dataset("depth", data=depth)
            f.create_dataset("eta", data=eta)
            f.attrs["description"] = "sim example basin: shelf with a seamount, 2 km cells, depth positive down"
    except OSError as e:
        sys.exit(f"make_swe_basin.py: cannot write {out}: {e}")
    print(f"wrote {out}: depth {depth.min():.1f}..{depth.max():.1f} m, eta max {eta.max():.2f} m")


if __name__ == "__main__":
    main()
