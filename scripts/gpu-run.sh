#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, over a tree packed here by
# scripts/pack-for-gpu.sh: the driver conformance suite on the cuda backend and on the
# mock, driver_tour on both, the cuda backend's own tests, the driver benchmarks and
# (if present) tests/python/test_cuda_bindings.py with the cuda-python installed there;
# step "kernels" (issue 7): examples/saxpy and tests/python/test_saxpy_bindings.py on the
# cuda backend (NVIDIA's NVRTC through our libnvrtc.so.13), the GPU benchmarks
# (cudamux_bench_gpu: cudamux vs NVIDIA's driver direct; cudamux_bench_passthrough: the
# CPU-side cost over a stand-in driver) and the module/launch cases.
# Logs go to $OUT (default /tmp/gpu-run): summary.txt plus logs.tgz holding every log.
#   scripts/gpu-run.sh [pack dir, default build-gpu-pack]
set -uo pipefail
pack=$(realpath "${1:-build-gpu-pack}")
out=${OUT:-/tmp/gpu-run}
logs=$out/logs
mkdir -p "$logs"
summary=$out/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

# Our libcuda.so.1 first, then the Debian libraries it needs, then whatever the machine
# had (NVIDIA's folders): programs asking for libcuda.so.1 get ours, and the cuda backend
# finds NVIDIA's by full path, skipping ours.
export LD_LIBRARY_PATH="$pack/lib:$pack/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUDAMUX_CONFIG= CUDAMUX_PLUGIN_PATH= XDG_CONFIG_HOME=$out/no-config
nvidia_driver=""
for d in ${LD_LIBRARY_PATH//:/ } /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64; do
  f=$d/libcuda.so.1
  [[ -e $f && $(realpath "$f") != "$pack"/* ]] && { nvidia_driver=$f; break; }
done
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
  echo "NVIDIA libcuda: ${nvidia_driver:-none found} -> $(realpath "$nvidia_driver" 2>/dev/null)"
  uname -a; cat /etc/os-release | head -2
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldd "$pack/lib/libcuda.so.1" "$pack/lib/cudamux/plugins/libcudamux-cuda.so"
} >"$logs/environment.txt" 2>&1
say "== $(head -2 "$logs/environment.txt" | tail -1)"
say "== NVIDIA driver library: ${nvidia_driver:-none}"

run() {  # run <log name> <timeout s> <command...>: logs output, records the exit status
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$@" >"$logs/$name.log" 2>&1
  local rc=$?
  say "$(printf '%-36s rc=%s' "$name" "$rc")"
  return $rc
}

# Steps (GPU_RUN_STEPS, default all): main = suite, tours, python, backend tests and
# benchmarks (on the backends of GPU_RUN_BACKENDS, default "cuda mock"); isolated = every
# conformance case of the cuda backend in a process of its own (the suite's leak check
# compares cuMemGetInfo across cases, which NVIDIA's driver does not keep exact); create =
# the suite with [cuda] contexts = "create"; kernels = SAXPY (C and cuda-python), the
# module/launch cases alone, and the GPU benchmarks.
steps=${GPU_RUN_STEPS:-main kernels isolated create}
backends=${GPU_RUN_BACKENDS:-cuda mock}

# NVIDIA's libnvrtc.so.13 for the cuda backend's compiler: the toolkit's, else the one of
# the nvidia-cuda-nvrtc wheel (outside the folders the backend searches: named in a config).
nvidia_nvrtc=""
for f in /usr/local/cuda/lib64/libnvrtc.so.13 /usr/local/cuda-13*/lib64/libnvrtc.so.13; do
  [[ -e $f ]] && { nvidia_nvrtc=$f; break; }
done
if [[ -z $nvidia_nvrtc ]]; then
  nvidia_nvrtc=$(python3 -c 'import glob, nvidia.cuda_nvrtc as m; print((glob.glob(m.__path__[0] + "/lib/libnvrtc.so.13") or [""])[0])' 2>/dev/null)
fi
say "== NVIDIA NVRTC library: ${nvidia_nvrtc:-none}"
if [[ -n $nvidia_nvrtc ]]; then
  printf '[cuda]\nnvrtc = "%s"\n' "$nvidia_nvrtc" >"$out/nvrtc.toml"
  export CUDAMUX_CONFIG="$out/nvrtc.toml"
fi
has_step() { [[ " $steps " == *" $1 "* ]]; }

if has_step isolated; then
  pass=0 fail=0
  : >"$logs/conformance-cuda-isolated.txt"
  for t in $(CUDAMUX_BACKEND=cuda "$pack/bin/driver_conformance" --gtest_list_tests |
             awk '/^[^ ]/{suite=$1} /^  /{print suite $1}'); do
    if CUDAMUX_BACKEND=cuda timeout 60 "$pack/bin/driver_conformance" --gtest_filter="$t" \
         >"$logs/one.log" 2>&1; then
      pass=$((pass + 1)); echo "PASS $t" >>"$logs/conformance-cuda-isolated.txt"
    else
      fail=$((fail + 1)); echo "FAIL $t" >>"$logs/conformance-cuda-isolated.txt"
      sed -n '/Failure/,/^\[  FAILED/p' "$logs/one.log" >>"$logs/conformance-cuda-isolated.txt"
    fi
  done
  rm -f "$logs/one.log"
  say "conformance-cuda-isolated: $pass passed, $fail failed"
  grep '^FAIL' "$logs/conformance-cuda-isolated.txt" | sed 's/^/   /' | tee -a "$summary"
fi

if has_step create; then
  { printf '[cuda]\ncontexts = "create"\n'
    [[ -n $nvidia_nvrtc ]] && printf 'nvrtc = "%s"\n' "$nvidia_nvrtc"; } >"$out/create.toml"
  CUDAMUX_CONFIG="$out/create.toml" CUDAMUX_BACKEND=cuda run conformance-cuda-create 240 \
    "$pack/bin/driver_conformance"
  grep -E '^\[  (PASSED|FAILED) ' "$logs/conformance-cuda-create.log" | sed 's/^/   create: /' | tee -a "$summary"
fi

if has_step kernels; then
  export CUDAMUX_BACKEND=cuda
  # The whole suite once (module and launch cases included), then those cases alone in a
  # fresh process (free of the leak check's memory drift, docs/conformance.md).
  run conformance-cuda-all 240 "$pack/bin/driver_conformance"
  grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$logs/conformance-cuda-all.log" | sed 's/^/   all: /' | tee -a "$summary"
  run conformance-cuda-modules 120 "$pack/bin/driver_conformance" --gtest_filter='Module.*'
  grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \] [A-Za-z]' "$logs/conformance-cuda-modules.log" |
    sed 's/^/   modules: /' | tee -a "$summary"
  if [[ -x $pack/bin/cuda_backend_tests ]]; then
    CUDAMUX_CUDA_BACKEND_STANDINS="$pack/standins" run cuda_backend_tests-kernels 300 \
      "$pack/bin/cuda_backend_tests"
    grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \] [A-Za-z]' "$logs/cuda_backend_tests-kernels.log" |
      sed 's/^/   cuda_backend: /' | tee -a "$summary"
  fi
  [[ -x $pack/bin/saxpy ]] && CUDAMUX_LOG_LEVEL=info run saxpy-cuda 60 "$pack/bin/saxpy"
  if [[ -f tests/python/test_saxpy_bindings.py ]]; then
    CUDAMUX_EXPECT_LIBCUDA="$pack/lib/libcuda.so.1" CUDAMUX_EXPECT_LIBNVRTC="$pack/lib/libnvrtc.so.13" \
      LD_PRELOAD="$pack/lib/libnvrtc.so.13" PYTHONUNBUFFERED=1 \
      run python_saxpy_bindings-cuda 120 python3 tests/python/test_saxpy_bindings.py
  fi
  if [[ -x $pack/bin/cudamux_bench_gpu ]]; then
    CUDAMUX_BENCH_NVIDIA_DRIVER="$nvidia_driver" run bench-gpu 300 "$pack/bin/cudamux_bench_gpu" \
      --benchmark_min_time=0.2
    sed -n '/^Summary/,$p' "$logs/bench-gpu.log" | sed 's/^/   bench-gpu: /' | tee -a "$summary"
  fi
  # cudamux's CPU-side cost per call over a stand-in driver (no GPU involved), on this
  # machine's CPU: what the GPU numbers above should show as added time.
  if [[ -x $pack/bin/cudamux_bench_passthrough && -e $pack/standins/fake/libcuda.so.1 ]]; then
    CUDAMUX_BENCH_STANDIN="$pack/standins/fake/libcuda.so.1" run bench-passthrough 200 \
      "$pack/bin/cudamux_bench_passthrough"
    sed -n '/^Summary/,$p' "$logs/bench-passthrough.log" | sed 's/^/   bench-passthrough: /' | tee -a "$summary"
  fi
  # The seed program on the mock too (issue 7): NVIDIA's Python bindings over cudamux with
  # kernels compiled for the CPU by this machine's g++.
  if command -v g++ >/dev/null; then
    CUDAMUX_BACKEND=mock run saxpy-mock 120 "$pack/bin/saxpy"
    if [[ -f tests/python/test_saxpy_bindings.py ]]; then
      CUDAMUX_BACKEND=mock CUDAMUX_EXPECT_LIBCUDA="$pack/lib/libcuda.so.1" \
        CUDAMUX_EXPECT_LIBNVRTC="$pack/lib/libnvrtc.so.13" LD_PRELOAD="$pack/lib/libnvrtc.so.13" \
        PYTHONUNBUFFERED=1 run python_saxpy_bindings-mock 180 python3 tests/python/test_saxpy_bindings.py
    fi
  else
    say "saxpy-mock: skipped (no g++ on this machine for the mock's kernels)"
  fi
  unset CUDAMUX_BACKEND
fi

has_step main || { cp "$summary" "$logs/"; tar -C "$out" -czf "$out/logs.tgz" logs && rm -rf "$logs"; exit 0; }

for backend in $backends; do
  export CUDAMUX_BACKEND=$backend
  run "conformance-$backend" 240 "$pack/bin/driver_conformance" \
    --gtest_output="xml:$logs/conformance-$backend.xml"
  grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$logs/conformance-$backend.log" | sed "s/^/   $backend: /" | tee -a "$summary"
  grep -E '^\[  FAILED  \] [A-Za-z]' "$logs/conformance-$backend.log" | sed "s/^/   $backend: /" | tee -a "$summary"
  run "before_init-$backend" 60 "$pack/bin/driver_before_init"
  CUDAMUX_LOG_LEVEL=trace CUDAMUX_LOG_SINK="file:$logs/trace-$backend.log" \
    run "trace_log-$backend" 60 "$pack/bin/driver_trace_log" "$logs/trace-$backend.log"
  CUDAMUX_LOG_LEVEL=info run "driver_tour-$backend" 60 "$pack/bin/driver_tour"
  [[ -x $pack/bin/driver_tour_nvidia_header ]] &&
    run "driver_tour_nvidia_header-$backend" 60 "$pack/bin/driver_tour_nvidia_header"
  if [[ -f tests/python/test_cuda_bindings.py ]]; then
    CUDAMUX_EXPECT_LIBCUDA="$pack/lib/libcuda.so.1" PYTHONUNBUFFERED=1 \
      run "python_cuda_bindings-$backend" 120 python3 tests/python/test_cuda_bindings.py
  fi
done
unset CUDAMUX_BACKEND
# "auto" must pick cuda on an NVIDIA machine.
CUDAMUX_BACKEND=auto CUDAMUX_LOG_LEVEL=info run driver_tour-auto 60 "$pack/bin/driver_tour"
grep -m1 "backend '" "$logs/driver_tour-auto.log" | sed 's/^/   /' | tee -a "$summary"

if [[ -x $pack/bin/cuda_backend_tests ]]; then
  CUDAMUX_CUDA_BACKEND_STANDINS="$pack/standins" run cuda_backend_tests 300 "$pack/bin/cuda_backend_tests"
  grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \] [A-Za-z]' "$logs/cuda_backend_tests.log" | tee -a "$summary"
fi

# Benchmarks: the mock-direct baseline needs the packed mock plugin; the NVIDIA-direct
# one calls NVIDIA's driver by path. BM_Memcpy_64MiB memcpy()s into device memory, which
# only the mock allows, so it runs on the mock alone.
export CUDAMUX_BENCH_PLUGIN="$pack/lib/cudamux/plugins/libcudamux-mock.so"
export CUDAMUX_BENCH_NVIDIA_DRIVER="$nvidia_driver"
CUDAMUX_BACKEND=cuda run bench-cuda 150 "$pack/bin/cudamux_bench" \
  --benchmark_filter='BM_(Direct|Cudamux|Nvidia)'
CUDAMUX_BACKEND=mock run bench-mock 100 "$pack/bin/cudamux_bench" --benchmark_filter='BM_(Direct|Cudamux|Memcpy)'
for b in cuda mock; do
  sed -n '/^Summary/,$p' "$logs/bench-$b.log" | sed "s/^/   bench-$b: /" | tee -a "$summary"
done

cp "$summary" "$logs/"
tar -C "$out" -czf "$out/logs.tgz" logs && rm -rf "$logs"
echo "logs: $out/logs.tgz"
