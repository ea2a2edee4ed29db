#!/usr/bin/env bash
# Everything sim and its tests need on Debian/Ubuntu besides a Rust toolchain (1.89 or
# newer); .ci/run runs this first.
#   apt: libhdf5-dev (HDF5 C library, checkpoints), hdf5-tools (h5dump), pkg-config (finds
#        HDF5), g++ (the emulated CUDA driver of the tests), openmpi-bin and libopenmpi-dev
#        (feature `mpi`: mpirun and the MPI library), libclang-dev (the MPI bindings' bindgen)
#   pip: scripts/requirements-test.txt: VTK, h5py and numpy (the output tests' independent
#        readers; scripts/render.py), matplotlib (the plotting scripts' test), NVRTC (the
#        kernel compile test; no GPU needed)
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends libhdf5-dev hdf5-tools pkg-config g++ \
    openmpi-bin libopenmpi-dev libclang-dev >/dev/null

if ! python3 -m pip install -q --disable-pip-version-check -r scripts/requirements-test.txt; then
    # Debian's own python3 refuses pip installs (PEP 668); the tests then skip the read-back
    # checks with a note. CI must have the readers.
    if [ -n "${CI:-}" ]; then exit 1; fi
    echo "note: pip could not install scripts/requirements-test.txt; in a virtual environment:" >&2
    echo "  python3 -m venv .venv && . .venv/bin/activate && pip install -r scripts/requirements-test.txt" >&2
fi
