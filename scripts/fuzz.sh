#!/usr/bin/env bash
# Long runs of the fuzz targets in tests/fuzz.rs (the default suite runs a few seconds' worth).
#
#   scripts/fuzz.sh [CASES] [SEED]
#
# CASES: cases per in-process target (case files, point clouds; default 100000); the targets
# that start `sim` run CASES/16 of theirs (sim check samples, checkpoint restarts).
# SEED: any integer (default: the time), printed so a failure can be run again with it.
set -euo pipefail
cd "$(dirname "$0")/.."
cases=${1:-100000}
seed=${2:-$(date +%s)}
echo "fuzz: SIM_FUZZ_CASES=$cases SIM_FUZZ_SEED=$seed"
SIM_FUZZ_CASES=$cases SIM_FUZZ_SEED=$seed \
    cargo test --release --test fuzz -- --nocapture --test-threads 2 fuzz_
