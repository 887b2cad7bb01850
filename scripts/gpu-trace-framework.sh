#!/usr/bin/env bash
# Runs one framework check (tests/frameworks/frameworks_check.py) through cudamux with the
# trace log on, keeping the log compressed, for finding the call a framework stops at.
#   scripts/gpu-trace-framework.sh <pack dir> <torch|cupy|jax> [python snippet]
set -uo pipefail
pack=$(realpath "${1:?pack dir}")
fw=${2:?framework}
out=${OUT:-/tmp/gpu-trace}
mkdir -p "$out/no-config"
log=$out/trace-$fw.log
machine_path=${LD_LIBRARY_PATH:-}
if [[ -n ${3:-} ]]; then cmd=(python3 -c "$3"); else cmd=(python3 tests/frameworks/frameworks_check.py "$fw"); fi
timeout 300 env LD_LIBRARY_PATH="$pack/lib:$pack/deps${machine_path:+:$machine_path}" \
  CUDAMUX_BACKEND=cuda CUDAMUX_CONFIG= CUDAMUX_PLUGIN_PATH= XDG_CONFIG_HOME="$out/no-config" \
  CUDAMUX_LOG_LEVEL=trace CUDAMUX_LOG_SINK="file:$log" "${cmd[@]}" >"$out/$fw.stdout" 2>&1
echo "rc=$? ($fw)"; tail -15 "$out/$fw.stdout"
echo "trace lines: $(wc -l <"$log")"
grep -v -E 'CUDA_SUCCESS|-> 0\b|cudaSuccess' "$log" | grep -i -E 'error|not.?supported|unknown|fail|refus' | sort | uniq -c | sort -rn | head -40
xz -T0 -6 "$log"
