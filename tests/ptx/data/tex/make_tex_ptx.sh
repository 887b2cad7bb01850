#!/usr/bin/env bash
# Regenerates the committed PTX of tex_kernels.cu (nvcc 13.0; not a build requirement).
set -euo pipefail
cd "$(dirname "$0")"
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
"$nvcc" -ptx -arch=compute_75 -o tex_kernels.compute_75.ptx tex_kernels.cu
