#!/usr/bin/env bash
# Long runs of the fuzz targets in tests/fuzz.rs (the default suite runs a few seconds' worth).
#
#   scripts/fuzz.sh [CASES] [SEED]
#
# CASES: cases per in-process target (case files, point clouds; default 100000); the targets
# that start `sim` run CASES/16 of theirs (sim check samples, checkpoint restarts).
# SEED: an integer from 0 to 2^64 - 1 (default: the time), printed so a failure can be run
# again with it.
set -euo pipefail
cd "$(dirname "$0")/.."
cases=${1:-100000}
seed=${2:-$(date +%s)}
# tests/fuzz.rs reads CASES as a u32 and SEED as a u64, and runs seed 0 for a SEED it cannot
# parse: refuse those here rather than run the default seed for hours.
[[ $cases =~ ^[0-9]+$ ]] && [ ${#cases} -le 10 ] && [ "$cases" -le 4294967295 ] \
    || { echo "fuzz.sh: CASES=$cases: give a whole number of cases (0 to 4294967295)" >&2; exit 2; }
[[ $seed =~ ^[0-9]+$ ]] && { [ ${#seed} -lt 20 ] || { [ ${#seed} -eq 20 ] && [[ ! $seed > 18446744073709551615 ]]; }; } \
    || { echo "fuzz.sh: SEED=$seed: give an integer from 0 to 18446744073709551615" >&2; exit 2; }
echo "fuzz: SIM_FUZZ_CASES=$cases SIM_FUZZ_SEED=$seed"
SIM_FUZZ_CASES=$cases SIM_FUZZ_SEED=$seed \
    cargo test --release --test fuzz -- --nocapture --test-threads 2 fuzz_
