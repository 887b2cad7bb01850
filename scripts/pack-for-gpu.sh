#!/usr/bin/env bash
# Packs a build tree made here (Debian 12) for running on the GPU machine (Ubuntu 24.04):
# the programs scripts/gpu-run.sh runs, our libraries and plugins (debug info stripped,
# to stay well inside the 64 MiB the device tool carries), and in <pack>/deps every
# shared library they need that is not part of the C/C++ runtime (spdlog, fmt, Boost,
# gtest, benchmark...): Ubuntu lacks those versions. glibc, libstdc++ and libgcc_s stay
# out: Ubuntu's are newer and backward compatible.
#   scripts/pack-for-gpu.sh [build dir, default build-gpu] [pack dir, default <build>-pack]
set -euo pipefail
build=${1:-build-gpu}
pack=${2:-$build-pack}
[[ -d $build/bin && -d $build/lib ]] || { echo "no build tree at $build" >&2; exit 1; }
rm -rf "$pack"
mkdir -p "$pack/bin" "$pack/lib" "$pack/deps"
cp -a "$build/lib/." "$pack/lib/"
for prog in driver_conformance driver_before_init driver_trace_log driver_tour \
            driver_tour_nvidia_header cudamux_bench cuda_backend_tests cuda_backend_probe \
            cuda_backend_nvrtc_probe cudamux_bench_gpu cudamux_bench_passthrough cudamux_bench_graph \
            saxpy driver_ipc_child; do
  [[ -x $build/bin/$prog ]] && cp "$build/bin/$prog" "$pack/bin/"
done
# Issue 14: nvcc-built programs (tests/nvcc, built by the test tree when nvcc is here), the
# registered-launch benchmark in both runtime flavours and the export-table probe, for
# scripts/gpu-nvcc.sh.
if command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  mkdir -p "$pack/nvcc"
  for prog in nvcc_registered_shared nvcc_registered_static nvcc_device_query nvcc_rdc_shared \
      nvcc_cdp_shared nvcc_cdp_static \
      nvcc_rdc_static; do
    [[ -x $build/tests/nvcc/$prog ]] && cp "$build/tests/nvcc/$prog" "$pack/nvcc/"
  done
  "$nvcc" -O2 -o "$pack/nvcc/bench_registered_launch_static" bench/bench_registered_launch.cu
  "$nvcc" -O2 -cudart shared -o "$pack/nvcc/bench_registered_launch_shared" \
    bench/bench_registered_launch.cu
  "$nvcc" -O2 -o "$pack/nvcc/first_launch_steps_static" bench/first_launch_steps.cu
  "$nvcc" -O2 -cudart shared -o "$pack/nvcc/first_launch_steps_shared" bench/first_launch_steps.cu
  gcc -O2 -Iapi/include -o "$pack/nvcc/export_table_probe" tests/nvcc/export_table_probe.c \
    -L"$build/lib" -lcuda
  gcc -O2 -Iapi/include -o "$pack/nvcc/limits_probe" tests/nvcc/limits_probe.c -L"$build/lib" -lcuda
  # cuBLAS stays a shared library (the GPU machine's toolkit has it): static, it is 100s of MiB.
  "$nvcc" -O2 -o "$pack/nvcc/cublas_gemm" tests/nvcc/cublas_gemm.cu -lcublas
fi
# Stand-in libraries of tests/cuda_backend, for its tests to run there too.
[[ -d $build/tests/cuda_backend/standins ]] && cp -a "$build/tests/cuda_backend/standins" "$pack/standins"
find "$pack" -type f \( -name '*.so*' -o -perm -u+x \) -exec sh -c \
  'file -b "$1" | grep -q ELF && strip --strip-debug "$1"' _ {} \;

# Runtime libraries Ubuntu has in a compatible (newer) version.
skip='^(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux-x86-64|linux-vdso|libcuda)\.so'
find "$pack/bin" "$pack/lib" -type f -exec sh -c 'file -b "$1" | grep -q ELF && echo "$1"' _ {} \; |
  while read -r elf; do
    LD_LIBRARY_PATH="$pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$elf" 2>/dev/null |
      awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
  done | sort -u | while read -r name path; do
    [[ $name =~ $skip ]] && continue
    case $(realpath "$path") in "$(realpath "$pack")"/*) continue ;; esac
    cp -L "$path" "$pack/deps/$name"
  done
echo "packed $build into $pack ($(du -sh "$pack" | cut -f1)); deps: $(ls "$pack/deps" | tr '\n' ' ')"
