#!/bin/sh
# Regenerates ops_e2e.ptx from ops_e2e.cu (needs nvcc; the build never runs this).
set -e
cd "$(dirname "$0")"
"${NVCC:-/usr/local/cuda/bin/nvcc}" -ptx -arch=compute_80 -o ops_e2e.ptx ops_e2e.cu
