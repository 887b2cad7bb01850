#!/usr/bin/env bash
# Runs test_cupy_mock.py: CuPy (cupy-cuda13x from PyPI, in a venv kept in the build tree) on
# the mock backend with our libcuda.so.1, libcudart.so.13 and libnvrtc.so.13. Exit 77
# (CTest: skipped) when the venv or PyPI is unavailable.
#   run_cupy.sh <venv dir> <dir holding our libraries> <our libnvrtc.so.13> <api include dir>
set -uo pipefail
venv=$1 libdir=$2 nvrtc=$3 include=$4 here=$(cd "$(dirname "$0")" && pwd)
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import cupy, numpy" 2>/dev/null; then
  python3 -m venv "$venv" >/dev/null 2>&1 || { echo "SKIP: python3 -m venv failed (python3-venv missing?)"; exit 77; }
  "$venv/bin/pip" install -q --disable-pip-version-check "cupy-cuda13x==14.2.*" numpy >"$venv.pip.log" 2>&1 \
    || { echo "SKIP: could not install cupy-cuda13x from PyPI:"; tail -3 "$venv.pip.log"; exit 77; }
fi
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUDAMUX_EXPECT_LIBCUDA="$libdir/libcuda.so.1" CUDAMUX_EXPECT_LIBNVRTC="$nvrtc"
# CuPy finds NVRTC through cuda.pathfinder, which takes a library already in the process
# first (before an NVIDIA wheel or the system's): preloading ours makes it the one used.
export LD_PRELOAD="$nvrtc${LD_PRELOAD:+:$LD_PRELOAD}"
# CuPy passes -I<CUDA headers> to NVRTC and refuses to compile without a folder holding
# cuda_runtime.h; the mock's built-in headers answer the names it includes, so ours serve,
# with or without a toolkit (pathfinder looks at CUDA_PATH after wheels and conda).
export CUDA_PATH="$(dirname "$include")" CUDA_HOME="$(dirname "$include")"
# CuPy's kernel cache in the build tree, so that runs do not share ~/.cupy; one per device ABI
# of the mock, whose compiled modules CuPy caches (a module of another ABI does not load).
abi=$(sed -n 's/^#define CUDAMUX_DEVICE_ABI \([0-9]*\).*/\1/p' \
  "$libdir/cudamux/mock-include/cudamux/device_abi.h" 2>/dev/null)
export CUPY_CACHE_DIR="$venv.kernel-cache/abi${abi:-unknown}"
exec "$venv/bin/python" "$here/test_cupy_mock.py"
