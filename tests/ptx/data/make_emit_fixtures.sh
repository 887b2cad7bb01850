#!/bin/sh
# Regenerates emit_kernels.ptx from emit_kernels.cu (nvcc 13; not a build requirement).
set -e
cd "$(dirname "$0")"
"${NVCC:-/usr/local/cuda/bin/nvcc}" -ptx -arch=compute_75 -o emit_kernels.ptx emit_kernels.cu
