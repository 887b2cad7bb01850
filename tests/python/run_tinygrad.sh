#!/usr/bin/env bash
# tinygrad (PyPI, pinned to the release test_tiny.py was vendored from) on the mock, in a venv
# kept in the build tree. Exit 77 (CTest: skipped) when the venv or PyPI is unavailable.
#   run_tinygrad.sh <venv dir> <our libcuda.so.1> <our libnvrtc.so.13>
set -uo pipefail
venv=$1 here=$(cd "$(dirname "$0")" && pwd)
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import tinygrad" 2>/dev/null; then
  python3 -m venv "$venv" >/dev/null 2>&1 || { echo "SKIP: python3 -m venv failed (python3-venv missing?)"; exit 77; }
  "$venv/bin/pip" install -q --disable-pip-version-check "tinygrad==0.13.0" >"$venv.pip.log" 2>&1 \
    || { echo "SKIP: could not install tinygrad from PyPI:"; tail -3 "$venv.pip.log"; exit 77; }
fi
# tinygrad's own names for its libraries; its kernel cache off, so every kernel goes through
# our NVRTC (the mock's own compile cache keeps reruns fast).
export DEV=CUDA CUDA_PATH=$2 NVRTC_PATH=$3 CCACHE=0 PYTHONDONTWRITEBYTECODE=1
exec "$venv/bin/python" "$here/run_tinygrad.py"
