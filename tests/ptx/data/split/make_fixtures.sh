#!/bin/sh
# Regenerates the PTX fixtures of tests/ptx/split_test.cpp (needs nvcc; not part of the build).
set -e
cd "$(dirname "$0")"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
"$NVCC" -ptx -arch=compute_80 -o split.compute_80.ptx split.cu
