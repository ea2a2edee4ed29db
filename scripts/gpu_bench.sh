#!/usr/bin/env bash
# GPU bandwidth sweep: heat2d and cavity against the copy kernel, f32 and f64, both kernel
# variants, sides 1024..16384 (skipping what does not fit). Prints a Markdown table; the
# raw JSON of every run goes to DIR (default gpu_bench/).
# Usage: scripts/gpu_bench.sh [SIM_BINARY] [DIR] [SECONDS]
set -euo pipefail
sim=${1:-target/release/sim}
dir=${2:-gpu_bench}
seconds=${3:-2}
mkdir -p "$dir"
echo "| kernel | precision | variant | block | N | COPY GB/s | BW_e GB/s | % of COPY | Mcells/s |"
echo "|---|---|---|---|---|---|---|---|---|"
for name in heat2d cavity; do
  for precision in f64 f32; do
    for vb in "l2 512,1" "shared 64,8"; do
      set -- $vb
      for n in 1024 2048 4096 8192 16384; do
        out="$dir/${name}_${precision}_$1_$n.json"
        if ! "$sim" bench "$name" --backend cuda --size "$n" --precision "$precision" \
            --variant "$1" --block "$2" --seconds "$seconds" --json > "$out" 2> "$out.err"; then
          echo "| $name | $precision | $1 | $2 | $n | failed: $(tail -1 "$out.err") | | | |"
          continue
        fi
        python3 - "$out" <<'EOF'
import json, sys
v = json.load(open(sys.argv[1]))
k = v["kernel"]
print(f"| {v['name']} | {v['precision']} | {v['variant']} | {v['block'][0]}x{v['block'][1]} | {v['nx']} "
      f"| {v['copy']['bw_GBps']:.1f} | {k['bw_eff_GBps']:.1f} | {100 * k['fraction_of_copy']:.1f} | {k['mcells_per_s']:.0f} |")
EOF
      done
    done
  done
done
