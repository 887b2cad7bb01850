#!/bin/sh
# Regenerates the PTX of rest.cu (nvcc 13.0; not a build requirement of cudamux).
set -e
cd "$(dirname "$0")"
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
for a in 75 80 90; do
  "$nvcc" -ptx -std=c++17 -arch=compute_$a -diag-suppress 20054 -o rest.compute_$a.ptx rest.cu
done
