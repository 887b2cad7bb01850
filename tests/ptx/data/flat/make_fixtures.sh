#!/bin/sh
# Regenerates the PTX fixture of tests/ptx/flat_test.cpp and flat_run_test.cpp (needs nvcc;
# not part of the build).
set -e
cd "$(dirname "$0")"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
"$NVCC" -ptx -arch=compute_80 -o flat.compute_80.ptx flat.cu
