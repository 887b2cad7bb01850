#!/usr/bin/env bash
# Builds cudamux and runs the whole test suite three times over:
#   1. RelWithDebInfo, warnings as errors;
#   2. ASan + UBSan over every test;
#   3. TSan over the concurrent parts (mock queues, driver conformance on the mock).
# Set CUDAMUX_TEST_QUICK=1 to run only the first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
jobs=$(nproc)

echo "== build and test (RelWithDebInfo)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUDAMUX_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 600

if [[ "${CUDAMUX_TEST_QUICK:-0}" == 1 ]]; then exit 0; fi

echo "== build and test (ASan + UBSan)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCUDAMUX_SANITIZE=address \
  -DCUDAMUX_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j"$jobs"
# allocator_may_return_null: huge-allocation tests expect CUDA_ERROR_OUT_OF_MEMORY, as malloc
# returning NULL gives in a normal build, not an ASan abort.
# No detect_stack_use_after_return: the mock runs barrier kernels on Boost.Context fibers,
# whose stack switches that check cannot follow (it reports the fiber's own frames).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" --timeout 900

echo "== build and test (TSan, concurrent parts)"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCUDAMUX_SANITIZE=thread \
  -DCUDAMUX_BUILD_BENCH=OFF >/dev/null
cmake --build build-tsan -j"$jobs"
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:allocator_may_return_null=1
# The concurrent parts: the mock's queues and the driver conformance suite on the mock
# (streams, events, 8-thread load), plus anything labelled concurrency.
ctest --test-dir build-tsan --output-on-failure -j"$jobs" --timeout 900 -L 'mock|concurrency'
ctest --test-dir build-tsan --output-on-failure -j"$jobs" --timeout 900 -R '^conformance[.]mock[.]'

# issue 9: the API-sequence fuzzer, a smoke run (committed corpus replayed, then 45 s of
# fuzzing). Needs clang-14 with libFuzzer (libclang-rt-14-dev); skipped without it.
if command -v clang++-14 >/dev/null 2>&1 &&
  echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
  clang++-14 -x c++ -fsanitize=fuzzer - -o /tmp/cudamux-libfuzzer-probe.$$ >/dev/null 2>&1; then
  rm -f /tmp/cudamux-libfuzzer-probe.$$
  echo "== API-sequence fuzzer (smoke run)"
  CC=clang-14 CXX=clang++-14 cmake -S tests/fuzz -B build-fuzz -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build-fuzz -j"$jobs" --target cudamux_api_fuzzer
  tests/fuzz/run.sh smoke build-fuzz
else
  echo "== API-sequence fuzzer: skipped (no clang-14 with libFuzzer)"
fi
