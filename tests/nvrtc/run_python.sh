#!/usr/bin/env bash
# Runs test_nvrtc_bindings.py with NVIDIA's cuda-python bindings from PyPI in a venv kept in the
# build tree, our libnvrtc.so.13 preloaded. Exit 77 (CTest: skipped) when no venv can be made.
#   run_python.sh <venv dir> <our libnvrtc.so.13> <plugin dir>
set -uo pipefail
venv=$1 lib=$2 plugins=$3 here=$(cd "$(dirname "$0")" && pwd)
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import cuda.bindings.nvrtc" 2>/dev/null; then
  python3 -m venv "$venv" >/dev/null 2>&1 || { echo "SKIP: python3 -m venv failed (python3-venv missing?)"; exit 77; }
  "$venv/bin/pip" install -q --disable-pip-version-check "cuda-bindings==13.0.*" >"$venv.pip.log" 2>&1 \
    || { echo "SKIP: could not install cuda-bindings from PyPI:"; tail -3 "$venv.pip.log"; exit 77; }
fi
# cuda-python opens libnvrtc.so.13 by soname, and one already in the process wins.
export LD_PRELOAD="$lib${LD_PRELOAD:+:$LD_PRELOAD}"
export CUDAMUX_EXPECT_LIBNVRTC="$lib" CUDAMUX_BACKEND=nvrtctest CUDAMUX_PLUGIN_PATH="$plugins"
exec "$venv/bin/python" "$here/test_nvrtc_bindings.py"
