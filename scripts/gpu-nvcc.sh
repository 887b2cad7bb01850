#!/usr/bin/env bash
# Issue 14 on the GPU machine: nvcc-built programs and frameworks (which link NVIDIA's static
# runtime) run once on NVIDIA's driver directly and once through cudamux (cuda backend), and
# the two are compared. Run from the repository root over a tree packed here by
# scripts/pack-for-gpu.sh (its nvcc/ folder); with a second argument, the unpacked
# cuda-samples of scripts/build-samples.sh are run too (scripts/gpu-samples.sh).
#   scripts/gpu-nvcc.sh <pack dir> [samples dir]
# Writes $OUT/nvcc-summary.txt (default OUT=/tmp/gpu-nvcc) and one log per run.
set -uo pipefail
pack=$(realpath "${1:?pack dir}")
samples=${2:-}
out=${OUT:-/tmp/gpu-nvcc}
logs=$out/nvcc-logs
mkdir -p "$logs" "$out/no-config"
summary=$out/nvcc-summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

machine_path=${LD_LIBRARY_PATH:-}
direct_path="/usr/local/cuda/lib64${machine_path:+:$machine_path}"
mux_path="$pack/lib:$pack/deps${machine_path:+:$machine_path}"
both() {  # both <name> <timeout> <command...>: runs it both ways, records the exit statuses
  local name=$1 limit=$2
  shift 2
  timeout "$limit" env LD_LIBRARY_PATH="$direct_path" "$@" >"$logs/$name.nvidia.log" 2>&1
  local a=$?
  timeout "$limit" env LD_LIBRARY_PATH="$mux_path" CUDAMUX_BACKEND=cuda CUDAMUX_CONFIG= \
    CUDAMUX_PLUGIN_PATH= XDG_CONFIG_HOME="$out/no-config" "$@" >"$logs/$name.cudamux.log" 2>&1
  local b=$?
  say "$(printf '%-40s nvidia rc=%-3s cudamux rc=%-3s %s' "$name" "$a" "$b" \
    "$([[ $a == "$b" ]] && echo SAME || echo DIFF)")"
}

say "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
n=$pack/nvcc
both registered_shared 60 "$n/nvcc_registered_shared" run
both registered_static 60 "$n/nvcc_registered_static" run
both device_query_static 60 "$n/nvcc_device_query"
both export_table_probe 60 "$n/export_table_probe"
both limits_probe 60 "$n/limits_probe"
say "-- context limits, NVIDIA vs cudamux:"
diff "$logs/limits_probe.nvidia.log" "$logs/limits_probe.cudamux.log" | tee -a "$summary"
for size in 64 256 1024 4096; do
  both "cublas_gemm_$size" 120 "$n/cublas_gemm" "$size"
  grep -h "max_error" "$logs/cublas_gemm_$size.nvidia.log" "$logs/cublas_gemm_$size.cudamux.log" |
    tr '\n' ' ' | sed 's/^/   /' | tee -a "$summary"
  echo | tee -a "$summary"
done
say "-- export tables, NVIDIA vs cudamux:"
diff "$logs/export_table_probe.nvidia.log" "$logs/export_table_probe.cudamux.log" | tee -a "$summary"

say "-- registered launch benchmark (median of 7 x 20000 empty <<<>>> launches):"
for flavour in static shared; do
  for run in 1 2 3 4 5; do
    both "bench_${flavour}_$run" 120 "$n/bench_registered_launch_$flavour"
  done
  python3 - "$logs" "$flavour" <<'PY' | tee -a "$summary"
import re, statistics, sys
logs, flavour = sys.argv[1], sys.argv[2]
def read(side, key):
    values = []
    for run in (1, 2, 3, 4, 5):
        text = open(f"{logs}/bench_{flavour}_{run}.{side}.log").read()
        m = re.search(key + r" ([0-9.]+)", text)
        if m: values.append(float(m.group(1)))
    return statistics.median(values) if values else float("nan")
for key in ("launches_per_s", "first_launch_us"):
    a, b = read("nvidia", key), read("cudamux", key)
    print(f"{flavour} {key}: nvidia {a:.1f} cudamux {b:.1f} ratio cudamux/nvidia {b / a:.3f}")
PY
done

say "-- first launch, step by step (median of 5 runs, microseconds):"
for flavour in static shared; do
  for run in 1 2 3 4 5; do
    both "steps_${flavour}_$run" 60 "$n/first_launch_steps_$flavour"
  done
  python3 - "$logs" "$flavour" <<'PY' | tee -a "$summary"
import re, statistics, sys
logs, flavour = sys.argv[1], sys.argv[2]
for key in ("attributes_us", "launch_us", "sync_us", "second_us", "steady_us"):
    row = []
    for side in ("nvidia", "cudamux"):
        values = []
        for run in (1, 2, 3, 4, 5):
            m = re.search(key + r" ([0-9.]+)", open(f"{logs}/steps_{flavour}_{run}.{side}.log").read())
            if m: values.append(float(m.group(1)))
        row.append(statistics.median(values) if values else float("nan"))
    print(f"{flavour} {key:14s} nvidia {row[0]:8.1f} cudamux {row[1]:8.1f} ratio {row[1] / row[0]:.2f}")
PY
done

say "-- frameworks (static runtime inside), NVIDIA vs cudamux:"
for fw in torch cupy jax; do
  both "framework_$fw" 300 python3 tests/frameworks/frameworks_check.py "$fw"
  if diff <(grep "^$fw" "$logs/framework_$fw.nvidia.log") <(grep "^$fw" "$logs/framework_$fw.cudamux.log") >"$logs/framework_$fw.diff"; then
    say "$fw: identical results ($(grep -c "^$fw\." "$logs/framework_$fw.nvidia.log") checks)"
  else
    say "$fw: results differ:"; head -20 "$logs/framework_$fw.diff" | tee -a "$summary"
    grep -m3 -i 'error\|unsupported\|not supported' "$logs/framework_$fw.cudamux.log" | tee -a "$summary"
  fi
done

if [[ -n $samples ]]; then
  say "-- cuda-samples:"
  OUT=$out bash scripts/gpu-samples.sh "$samples" "$pack" >"$logs/samples.log" 2>&1
  tail -5 "$out/samples-summary.txt" 2>/dev/null | tee -a "$summary"
fi
tar -czf "$out/nvcc-logs.tgz" -C "$out" nvcc-logs
