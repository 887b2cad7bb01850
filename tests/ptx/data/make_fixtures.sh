#!/usr/bin/env bash
# Regenerates the PTX fixtures of the front end's tests from the .cu files here (nvcc 12.x /
# 13.0; not a build requirement: the .ptx files are committed).
#   tests/ptx/data/make_fixtures.sh [path/to/nvcc]
set -euo pipefail
cd "$(dirname "$0")"
nvcc="${1:-${NVCC:-/usr/local/cuda/bin/nvcc}}"
gen() {  # gen <name> <arch> [extra nvcc flags...]
  local name=$1 arch=$2
  shift 2
  "$nvcc" -ptx -arch="$arch" "$@" "$name.cu" -o "$name.$arch.ptx"
}
for f in saxpy reduce warp atomics funcs locals globals tex cg packed virtual lazy; do gen "$f" compute_75; done
gen warp compute_80
gen half compute_80
gen async compute_80
gen atomics compute_90
gen cluster compute_90
gen saxpy compute_90 -G  # debug: .file/.loc and DWARF .section bodies
gen cond compute_80
gen misc compute_80 -rdc=true
gen misc compute_90a -rdc=true
"$nvcc" -ptx -arch=compute_80 -G funcs.cu -o funcs.compute_80.G.ptx  # debug with device calls
