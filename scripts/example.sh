#!/usr/bin/env bash
# The main job: installs what is missing, builds cudamux and runs the example CUDA
# driver API program (examples/driver_tour.c) on the default backend.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUDAMUX_BUILD_TESTS=OFF -DCUDAMUX_BUILD_BENCH=OFF >/dev/null
cmake --build build --target driver_tour
# Relink-free: the example found our libcuda.so.1 through its RUNPATH; say so.
echo "== running build/bin/driver_tour against $(readlink -f build/lib/libcuda.so.1)"
exec build/bin/driver_tour
