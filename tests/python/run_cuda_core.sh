#!/usr/bin/env bash
# Runs test_cuda_core.py with NVIDIA's cuda.core (PyPI: cuda-core, cuda-bindings 13.0) in a venv
# kept in the build tree, on our libcuda.so.1 and libnvrtc.so.13 (preloaded: cuda-python looks
# NVRTC up by soname). Exit 77 (CTest: skipped) when the venv or PyPI is unavailable.
#   run_cuda_core.sh <venv dir> <dir holding our libcuda.so.1> <our libnvrtc.so.13>
set -uo pipefail
venv=$1 libdir=$2 nvrtc=$3 here=$(cd "$(dirname "$0")" && pwd)
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import cuda.core, numpy" 2>/dev/null; then
  python3 -m venv "$venv" >/dev/null 2>&1 || { echo "SKIP: python3 -m venv failed (python3-venv missing?)"; exit 77; }
  "$venv/bin/pip" install -q --disable-pip-version-check "cuda-core==1.2.2" "cuda-bindings==13.0.*" numpy >"$venv.pip.log" 2>&1 \
    || { echo "SKIP: could not install cuda-core from PyPI:"; tail -3 "$venv.pip.log"; exit 77; }
fi
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUDAMUX_EXPECT_LIBCUDA="$libdir/libcuda.so.1" CUDAMUX_EXPECT_LIBNVRTC=$nvrtc
export LD_PRELOAD="$nvrtc${LD_PRELOAD:+:$LD_PRELOAD}"
exec "$venv/bin/python" "$here/test_cuda_core.py"
