#!/bin/sh
# Regenerates the PTX of rest.cu and mbarrier.cu (nvcc 13.0; not a build requirement of cudamux).
set -e
cd "$(dirname "$0")"
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
for a in 75 80 90; do
  for f in rest mbarrier; do
    "$nvcc" -ptx -std=c++17 -arch=compute_$a -diag-suppress 20054 -o $f.compute_$a.ptx $f.cu
  done
done
