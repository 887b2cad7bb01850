#!/bin/sh
# Regenerates kernels.compute_75.ptx (needs nvcc; not part of the build).
set -e
cd "$(dirname "$0")"
"${NVCC:-/usr/local/cuda/bin/nvcc}" -ptx -arch=compute_75 -o kernels.compute_75.ptx kernels.cu
