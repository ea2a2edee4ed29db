#!/usr/bin/env bash
# Real-GPU checks from the bundle of scripts/gpu_bundle.sh, on a machine with a CUDA driver
# and toolkit but no Rust toolchain: the CUDA test binaries (which run on a real GPU where a
# driver is present) and the GPU benchmarks. Stages: env, tests, bench (heat2d, cavity), sw
# (shallow water), lskum, tridiag (sim's solvers and the cuSPARSE peer, which needs CuPy),
# tune (block shapes), sanitize (compute-sanitizer over short runs);
# any of them, in order, default all. Logs and JSON go to OUT (default gpu_out/).
# Usage: scripts/gpu_check.sh [BUNDLE_DIR] [STAGE...]; GPU_TESTS names the test binaries of
# the tests stage (default all five).
set -uo pipefail
bundle=$(realpath "${1:-.gpu}"); shift || true
stages=${*:-env tests bench sw lskum tridiag tune sanitize}
# Absolute: the sanitize stage writes its logs from inside its copy of cases/.
out=$(realpath -m "${OUT:-gpu_out}"); mkdir -p "$out/json"
root=$PWD
# One temporary folder (the unpacked bundle, the tune and sanitize cases), removed on exit.
work=$(mktemp -d); link=""
trap 'rm -rf "$work"; [ -n "$link" ] && rm -f "$link"' EXIT
x=$work/bundle; mkdir -p "$x" target/release
tar -C "$x" -xJf "$bundle/bundle.tar.xz"
cp "$x/bin/sim" target/release/sim
# The test binaries name the repository and `sim` by the paths they were built at.
built=$(cat "$x/built_at")
if [ -n "$built" ] && [ "$built" != "$root" ] && [ ! -e "$built" ]; then
  mkdir -p "$(dirname "$built")" && ln -s "$root" "$built" && link=$built
fi
nvrtc=$(dirname "$(find /usr/local /opt /usr/lib -name 'libnvrtc.so*' 2>/dev/null | head -1)")
export LD_LIBRARY_PATH="$x/lib:$nvrtc:/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}"
sim=$root/target/release/sim
log() { echo "== $*" | tee -a "$out/summary.txt"; }

for stage in $stages; do case $stage in
env)
  log "env"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1 | tee -a "$out/summary.txt"
  echo "built at: $built; nvrtc: $nvrtc" | tee -a "$out/summary.txt"
  "$sim" info 2>&1 | tee -a "$out/summary.txt"
  ;;
tests)
  for t in ${GPU_TESTS:-gpu gpu_lskum gpu_shallow_water_fd gpu_shallow_water_fv cli}; do
    filter=""; [ "$t" = cli ] && filter=cuda
    start=$(date +%s)
    SIM_TESTS_NEED_GPU=1 timeout 150 "$x/bin/$t" $filter > "$out/test_$t.log" 2>&1
    rc=$?
    log "test $t: rc $rc in $(( $(date +%s) - start )) s: $(grep -E '^test result' "$out/test_$t.log" | tail -1)"
    grep -E 'FAILED|panicked|failed' "$out/test_$t.log" | head -20 | tee -a "$out/summary.txt"
    # A failure again alone, with its message in the summary.
    for f in $(grep -E '^test .* FAILED$' "$out/test_$t.log" | awk '{print $2}'); do
      SIM_TESTS_NEED_GPU=1 "$x/bin/$t" "$f" --exact --test-threads=1 2>&1 | grep -v '^$' | tail -25 | tee -a "$out/summary.txt"
    done
  done
  ;;
bench)
  log "bench: heat2d and cavity"
  bash "$root/scripts/gpu_bench.sh" "$sim" "$out/stencils" 1 8192 | tee -a "$out/summary.txt"
  mv "$out"/stencils/*.json "$out/json/" 2>/dev/null; rm -rf "$out/stencils"
  ;;
sw)
  log "bench: shallow water"
  for s in fbl ctcs cdklm16 kp07; do for p in f32 f64; do for v in l2 shared; do
    "$sim" bench shallow_water --scheme $s --backend cuda --size 4096 --precision $p --variant $v --seconds 1 --json \
      > "$out/json/sw_${s}_${p}_$v.json" 2>> "$out/bench.err" || echo "failed: sw $s $p $v" >> "$out/summary.txt"
  done; done; done
  ;;
lskum)
  log "bench: lskum"
  for flux in fused split; do
    timeout 60 "$sim" bench lskum --backend cuda --size 1000000 --flux $flux --seconds 2 --json \
      > "$out/json/lskum_$flux.json" 2>> "$out/bench.err" || echo "failed: lskum $flux" >> "$out/summary.txt"
  done
  ;;
tridiag)
  log "tridiag: sim (thomas 4096 x 4096, spike 2^27) and cuSPARSE"
  for p in f32 f64; do
    timeout 60 "$sim" bench tridiag --backend cuda --precision $p --seconds 1 2>&1 | tee -a "$out/summary.txt"
    timeout 60 "$sim" bench tridiag --backend cuda --solver spike --precision $p --seconds 1 2>&1 | tee -a "$out/summary.txt"
  done
  timeout 90 python3 "$root/scripts/peer_cusparse_gtsv2.py" --size 4096 --batch 4096 --json "$out/json/cusparse.json" 2>&1 \
    | tail -12 | tee -a "$out/summary.txt"
  # The one-pass SPIKE kernels (batched and one system) under compute-sanitizer.
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck; do for p in f32 f64; do for args in "--size 300 --batch 41" "--solver spike --size 8200"; do
    timeout 120 "$cs" --tool $tool --error-exitcode 9 "$sim" bench tridiag --backend cuda --precision $p $args \
      --seconds 0.01 > "$out/san.log.tmp" 2>&1
    echo "$tool bench tridiag $p $args: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|error:' "$out/san.log.tmp" | tail -1)" | tee -a "$out/summary.txt"
  done; done; done
  rm -f "$out/san.log.tmp"
  ;;
tune)
  # sim tune over the block shapes for the shallow-water benchmark (2048², f32) of each
  # scheme, and lskum at other block widths.
  log "tune"
  t=$work/tune; mkdir -p "$t"
  for sc in fbl ctcs cdklm16 kp07; do
    sed "s/scheme: cdklm16 /scheme: $sc /" "$root/cases/swe_benchmark_2048.yaml" > "$t/$sc.yaml"
    SIM_CACHE_DIR="$t/cache" timeout 120 "$sim" tune "$t/$sc.yaml" --seconds 0.2 > "$out/tune_$sc.log" 2>&1
    echo "$sc: $(grep -E '^fastest' "$out/tune_$sc.log" | tr '\n' ' ')" | tee -a "$out/summary.txt"
  done
  for fb in "fused 128" "split 256" "fused 64"; do
    set -- $fb
    timeout 60 "$sim" bench lskum --backend cuda --size 1000000 --flux $1 --block $2,1 --seconds 1 --json \
      > "$out/json/lskum_$1_$2.json" 2>> "$out/bench.err" || echo "failed: lskum $1 $2" >> "$out/summary.txt"
  done
  ;;
sanitize)
  # compute-sanitizer over short runs of every kernel file: memcheck (out-of-bounds and
  # misaligned accesses) and, for the shared-memory variants, racecheck.
  log "sanitize"
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  san=$work/sanitize; mkdir -p "$san"; cp -r "$root/cases" "$root/meshes" "$san/"; cd "$san/cases"
  sed 's/n: 512/n: 64/' heat2d_adi.yaml > adi.yaml
  # SPIKE needs dominance for its partitions: at the case's r = 50 (dominance 1.02) the run
  # falls back to Thomas; r = 1 (dominance 2) on 16 partitions of 32 rows truncates.
  sed 's/ r: 50.0/ r: 1.0/; s/tridiagonal: thomas/tridiagonal: spike\n    partitions: 16/' heat1d_crank_nicolson.yaml > cn_spike.yaml
  for sc in ctcs cdklm16 kp07; do sed "s/scheme: fbl/scheme: $sc/" swe_bump_fbl.yaml > swe_$sc.yaml; done
  cp swe_bump_fbl.yaml swe_fbl.yaml
  runs="memcheck:heat2d_gaussian.yaml:3 memcheck:adi.yaml:3 memcheck:cn_spike.yaml:3 memcheck:cavity_re100.yaml:20
        memcheck:naca0012_2019_regression.yaml:2 memcheck:swe_fbl.yaml:5 memcheck:swe_ctcs.yaml:5
        memcheck:swe_cdklm16.yaml:5 memcheck:swe_kp07.yaml:5"
  for sc in fbl ctcs cdklm16 kp07; do { cat swe_$sc.yaml; echo "gpu: {variant: shared}"; } > sh_$sc.yaml; runs+=" racecheck:sh_$sc.yaml:3"; done
  { cat cavity_re100.yaml; echo "gpu: {variant: shared}"; } > sh_cavity.yaml; runs+=" racecheck:sh_cavity.yaml:5"
  for r in $runs; do
    IFS=: read -r tool c n <<< "$r"
    timeout 120 "$cs" --tool "$tool" --error-exitcode 9 "$sim" run "$c" --backend cuda --steps "$n" --quiet --overwrite \
      --out "san_${tool}_${c%.yaml}" > "$out/san.log.tmp" 2>&1
    echo "$tool $c: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|error:' "$out/san.log.tmp" | tail -1)" | tee -a "$out/summary.txt"
    cat "$out/san.log.tmp" >> "$out/sanitize.log"
  done
  rm -f "$out/san.log.tmp"; cd "$root"
  ;;
esac; done
# The table of the shallow-water and lskum runs (the stencils' and tridiag's print their own).
files=$(ls "$out"/json/sw_*.json "$out"/json/lskum_*.json 2>/dev/null || true)
[ -n "$files" ] && python3 "$root/scripts/bench_table.py" $files | tee -a "$out/summary.txt"
tar -C "$out" -czf "$out/json.tar.gz" json && rm -rf "$out/json"
