#!/usr/bin/env bash
# Runs test_cuda_bindings.py with NVIDIA's cuda-python bindings from PyPI, in a venv
# kept in the build tree. Exit 77 (CTest: skipped) when the venv or PyPI is unavailable.
#   run.sh <venv dir> <dir holding our libcuda.so.1>
set -uo pipefail
venv=$1 libdir=$2 here=$(cd "$(dirname "$0")" && pwd)
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import cuda.bindings.driver, numpy" 2>/dev/null; then
  python3 -m venv "$venv" >/dev/null 2>&1 || { echo "SKIP: python3 -m venv failed (python3-venv missing?)"; exit 77; }
  "$venv/bin/pip" install -q --disable-pip-version-check "cuda-bindings==13.0.*" numpy >"$venv.pip.log" 2>&1 \
    || { echo "SKIP: could not install cuda-bindings from PyPI:"; tail -3 "$venv.pip.log"; exit 77; }
fi
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUDAMUX_EXPECT_LIBCUDA="$libdir/libcuda.so.1"
# Optional: $3 the test script (default test_cuda_bindings.py), $4 our libnvrtc.so.13, which is
# preloaded so that cuda-python (it looks NVRTC up by soname) gets ours (issue #3).
script=${3:-test_cuda_bindings.py}
if [[ -n "${4:-}" ]]; then
  export CUDAMUX_EXPECT_LIBNVRTC=$4
  export LD_PRELOAD="$4${LD_PRELOAD:+:$LD_PRELOAD}"
fi
exec "$venv/bin/python" "$here/$script"
