#!/bin/sh
# Regenerates kernels.compute_75.ptx and mbarrier.compute_80.ptx (needs nvcc; not part of the
# build).
set -e
cd "$(dirname "$0")"
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
"$nvcc" -ptx -arch=compute_75 -o kernels.compute_75.ptx kernels.cu
"$nvcc" -ptx -std=c++17 -arch=compute_80 -diag-suppress 20054 -o mbarrier.compute_80.ptx mbarrier.cu
