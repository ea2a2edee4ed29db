#!/usr/bin/env bash
# GPU bandwidth sweep: heat2d and cavity against the copy kernel, f32 and f64, both kernel
# variants, sides 1024..16384 or SIZES (skipping what does not fit). Prints a Markdown table
# (scripts/bench_table.py); the raw JSON of every run goes to DIR (default gpu_bench/).
# Usage: scripts/gpu_bench.sh [SIM_BINARY] [DIR] [SECONDS] [SIZES]
set -euo pipefail
sim=${1:-target/release/sim}
dir=${2:-gpu_bench}
seconds=${3:-2}
sizes=${4:-1024 2048 4096 8192 16384}
mkdir -p "$dir"
for name in heat2d cavity; do
  for precision in f64 f32; do
    for vb in "l2 512,1" "shared 64,8"; do
      set -- $vb
      for n in $sizes; do
        out="$dir/${name}_${precision}_$1_$n.json"
        if ! "$sim" bench "$name" --backend cuda --size "$n" --precision "$precision" \
            --variant "$1" --block "$2" --seconds "$seconds" --json > "$out" 2> "$out.err"; then
          echo "failed: $name $precision $1 $2 $n: $(tail -1 "$out.err")"
          rm -f "$out"
        fi
      done
    done
  done
done
python3 "$(dirname "$0")/bench_table.py" "$dir"/*.json
