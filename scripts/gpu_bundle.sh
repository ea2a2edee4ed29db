#!/usr/bin/env bash
# Pack what scripts/gpu_check.sh needs on a GPU machine that has no Rust toolchain and no
# system HDF5: the release `sim`, the CUDA test binaries (stripped) and the shared libraries
# `sim` links beyond glibc, into DIR/bundle.tar.xz (default .gpu/, git-ignored locally).
# Usage: scripts/gpu_bundle.sh [DIR]
set -euo pipefail
dir=${1:-.gpu}
cargo build --release --quiet
tests=(gpu gpu_lskum gpu_shallow_water_fd gpu_shallow_water_fv cli)
json=$(cargo test --release --no-run --message-format=json $(printf -- '--test %s ' "${tests[@]}") 2>/dev/null)
stage=$(mktemp -d)
mkdir -p "$stage/bin" "$stage/lib" "$dir"
cp target/release/sim "$stage/bin/"
for t in "${tests[@]}"; do
  exe=$(echo "$json" | python3 -c "import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get('reason') == 'compiler-artifact' and m['target']['name'] == '$t' and m.get('executable'): print(m['executable'])")
  cp "$exe" "$stage/bin/$t"
done
strip "$stage"/bin/*
# The test binaries name the repository and `sim` by the paths they were built at.
pwd > "$stage/built_at"
# Every library sim loads except glibc's own (the GPU image has its own glibc, 2.35 or newer).
ldd target/release/sim | awk '/=> \// {print $3}' | grep -Ev '/(libc|libm|libgcc_s|ld-linux[^/]*)\.so' \
  | xargs -I{} cp -L {} "$stage/lib/"
tar -C "$stage" -cJf "$dir/bundle.tar.xz" bin lib built_at
rm -rf "$stage"
ls -la "$dir/bundle.tar.xz"
