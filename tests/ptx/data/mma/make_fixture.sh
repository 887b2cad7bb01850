#!/bin/sh
# Regenerates mma.compute_80.ptx from mma_kernels.cu (nvcc 13; not a build requirement).
set -e
cd "$(dirname "$0")"
"${NVCC:-/usr/local/cuda/bin/nvcc}" -ptx -arch=compute_80 -o mma.compute_80.ptx mma_kernels.cu
