#!/usr/bin/env bash
# Long runs of the fuzz targets in tests/fuzz.rs (the default suite runs a few seconds' worth).
#
#   scripts/fuzz.sh [CASES] [SEED] [--hdf5]
#
# CASES: cases per in-process target (case files, point clouds; default 100000); the targets
# that start `sim` run CASES/16 of theirs (sim check samples, checkpoint restarts).
# SEED: any integer (default: the time), printed so a failure can be run again with it.
# --hdf5: also mutate HDF5's own structures in checkpoints (crashes HDF5 1.10 itself; see
# fuzz_checkpoint_structures in tests/fuzz.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
cases=100000
seed=$(date +%s)
ignored=()
positional=0
for a in "$@"; do
    case "$a" in
        --hdf5) ignored=(--include-ignored) ;;
        *)
            if [ "$positional" -eq 0 ]; then cases=$a; else seed=$a; fi
            positional=$((positional + 1))
            ;;
    esac
done
echo "fuzz: SIM_FUZZ_CASES=$cases SIM_FUZZ_SEED=$seed"
SIM_FUZZ_CASES=$cases SIM_FUZZ_SEED=$seed \
    cargo test --release --test fuzz -- --nocapture --test-threads 2 "${ignored[@]}" fuzz_
