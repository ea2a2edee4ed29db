#!/usr/bin/env bash
# Registers, spills and shared memory of every CUDA kernel, from ptxas -v, for one
# architecture (default sm_90) and both precisions. Needs nvcc, e.g. from PyPI:
#   python3 -m pip install nvidia-cuda-nvcc nvidia-cuda-nvrtc
# Usage: scripts/kernel_report.sh [sm_XX]
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-sm_90}
if ! command -v nvcc >/dev/null; then
  wheel=$(python3 -c 'import nvidia, os; print(os.path.join(nvidia.__path__[0], "cu13"))' 2>/dev/null || true)
  export PATH="$wheel/bin:$PATH"
fi
for cu in kernels/*.cu; do
  # The headers src/cuda.rs compiles in front of the file.
  headers=(-include kernels/common.cuh)
  case $cu in kernels/shallow_water_*) headers+=(-include kernels/shallow_water.cuh) ;; esac
  case $cu in kernels/shallow_water_fbl.cu | kernels/shallow_water_ctcs.cu) headers+=(-include kernels/shallow_water_fd.cuh) ;; esac
  case $cu in kernels/shallow_water_cdklm16.cu | kernels/shallow_water_kp07.cu)
    headers+=(-include kernels/shallow_water_fv.cuh) ;;
  esac
  for real in float double; do
    echo "== $cu REAL=$real $arch"
    # Same options as the run-time NVRTC compilation (no fast math: --fmad=false).
    nvcc -cubin -arch="$arch" -Xptxas -v --fmad=false -DREAL="$real" "${headers[@]}" \
      -o /dev/null "$cu" 2>&1 | grep -E "Compiling entry|registers|spill" | sed 's/^ptxas info *: //'
  done
done
