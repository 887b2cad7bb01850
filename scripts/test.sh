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

# How many tests each phase must find at least (what the suite held when last counted; raise
# them when adding tests). Fewer means a test directory was dropped or switched off.
MIN_TESTS_ALL=1010
MIN_TESTS_ASAN=995
MIN_TESTS_TSAN_CONCURRENT=50
MIN_TESTS_TSAN_CONFORMANCE=240

# Runs ctest over one build tree after checking that it holds at least `min` tests (selected by
# the remaining ctest arguments): a tree configured without tests, or one that lost a test
# directory, fails here instead of passing with nothing run.
run_tests() {
  local dir=$1 min=$2
  shift 2
  local found
  found=$(ctest --test-dir "$dir" -N "$@" | sed -n 's/^Total Tests: //p')
  if ((${found:-0} < min)); then
    echo "test.sh: $dir has ${found:-no} tests matching '$*'; expected at least $min" >&2
    exit 1
  fi
  echo "test.sh: $dir: $found tests (at least $min expected)"
  ctest --test-dir "$dir" --no-tests=error --output-on-failure -j"$jobs" "$@"
}

echo "== build and test (RelWithDebInfo)"
# Every option this run depends on is set explicitly: a tree left by the main command (or an
# older checkout) never changes what runs.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUDAMUX_WERROR=ON \
  -DCUDAMUX_BUILD_TESTS=ON -DCUDAMUX_BUILD_BENCH=ON -DCUDAMUX_SANITIZE= >/dev/null
cmake --build build -j"$jobs"
run_tests build "$MIN_TESTS_ALL" --timeout 600

if [[ "${CUDAMUX_TEST_QUICK:-0}" == 1 ]]; then exit 0; fi

echo "== build and test (ASan + UBSan)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCUDAMUX_SANITIZE=address \
  -DCUDAMUX_WERROR=OFF -DCUDAMUX_BUILD_TESTS=ON -DCUDAMUX_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j"$jobs"
# allocator_may_return_null: huge-allocation tests expect CUDA_ERROR_OUT_OF_MEMORY, as malloc
# returning NULL gives in a normal build, not an ASan abort.
# No detect_stack_use_after_return: the mock runs barrier kernels on Boost.Context fibers,
# whose stack switches that check cannot follow (it reports the fiber's own frames).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_tests build-asan "$MIN_TESTS_ASAN" --timeout 900

echo "== build and test (TSan, concurrent parts)"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCUDAMUX_SANITIZE=thread \
  -DCUDAMUX_WERROR=OFF -DCUDAMUX_BUILD_TESTS=ON -DCUDAMUX_BUILD_BENCH=OFF >/dev/null
cmake --build build-tsan -j"$jobs"
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:allocator_may_return_null=1
# The concurrent parts: the mock's queues and the driver conformance suite on the mock
# (streams, events, 8-thread load), plus anything labelled concurrency.
run_tests build-tsan "$MIN_TESTS_TSAN_CONCURRENT" --timeout 900 -L 'mock|concurrency'
run_tests build-tsan "$MIN_TESTS_TSAN_CONFORMANCE" --timeout 900 -R '^conformance[.]mock[.]'

# issue 9: the API-sequence fuzzer, a smoke run (committed corpus replayed, then 45 s of
# fuzzing). Needs clang-14 with libFuzzer (libclang-rt-14-dev); skipped without it.
if command -v clang++-14 >/dev/null 2>&1 &&
  echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
  clang++-14 -x c++ -fsanitize=fuzzer - -o /tmp/cudamux-libfuzzer-probe.$$ >/dev/null 2>&1; then
  rm -f /tmp/cudamux-libfuzzer-probe.$$
  echo "== API-sequence fuzzer (smoke run)"
  CC=clang-14 CXX=clang++-14 cmake -S tests/fuzz -B build-fuzz -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build-fuzz -j"$jobs" --target cudamux_api_fuzzer cudamux_fatbin_fuzzer cudamux_ptx_fuzzer cudamux_elf_fuzzer
  tests/fuzz/run.sh smoke build-fuzz
else
  echo "== API-sequence fuzzer: skipped (no clang-14 with libFuzzer)"
fi
