#!/usr/bin/env bash
# The main job: installs what is missing, builds what it needs (the libraries, the default
# backend's plugin with its device runtime, NVRTC and the examples) and runs, on the default
# backend (the mock): examples/driver_tour.c, a tour of the driver API, then
# examples/saxpy.c, a kernel compiled by NVRTC at run time and launched.
#   CUDAMUX_BUILD_DIR=dir   build there instead of build/ (CI uses a fresh one)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
build=${CUDAMUX_BUILD_DIR:-build}
# Every option the job depends on is set here, so a tree configured by the test command (tests
# and benchmarks on) serves as well: the job builds only its own targets.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUDAMUX_SANITIZE= >/dev/null
cmake --build "$build" --target main_job
# The examples find our libcuda.so.1 through their RUNPATH, and the plugin beside it.
echo "== running $build/bin/driver_tour against $(readlink -f "$build/lib/libcuda.so.1")"
"$build/bin/driver_tour"
echo "== running $build/bin/saxpy (NVRTC + kernel launch)"
exec "$build/bin/saxpy"
