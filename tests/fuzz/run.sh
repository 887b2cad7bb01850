#!/usr/bin/env bash
# Runs the API-sequence fuzzer (build it first: see CMakeLists.txt here).
#   tests/fuzz/run.sh smoke [build-dir]       replay the committed corpus, then fuzz 45 s (CI)
#   tests/fuzz/run.sh long  [build-dir] [N]   fuzz until N executions (default 1,000,000)
# Smoke mode then runs the fat binary parser fuzzer the same way (tests/fuzz/corpus-fatbin,
# 20 s: CUDAMUX_FATBIN_FUZZ_SECONDS) when target cudamux_fatbin_fuzzer was built, and the PTX
# front end fuzzer (tests/fuzz/corpus-ptx, 20 s: CUDAMUX_PTX_FUZZ_SECONDS) likewise, and the ELF
# section reader fuzzer (tests/fuzz/corpus-elf, 15 s: CUDAMUX_ELF_FUZZ_SECONDS).
# New inputs go to a scratch corpus under the build dir; the committed corpus
# (tests/fuzz/corpus: seeds and regressions) is only read.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mode="${1:-smoke}"
build="${2:-build-fuzz}"
fuzzer="$build/cudamux_api_fuzzer"
[[ -x "$fuzzer" ]] || { echo "fuzz: no $fuzzer (build target cudamux_api_fuzzer)" >&2; exit 1; }
scratch="$build/corpus-$mode"
mkdir -p "$scratch" "$build/artifacts"

# allocator_may_return_null: huge cuMemAlloc sizes must give CUDA_ERROR_OUT_OF_MEMORY,
# as malloc returning NULL does without ASan. Leaks are checked after every input
# (-detect_leaks=1) and at exit.
export ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=1:abort_on_error=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
common=(-timeout=20 -rss_limit_mb=4096 -max_len=4096 -detect_leaks=1 -print_final_stats=1
        "-artifact_prefix=$build/artifacts/")

# parser_fuzzer NAME LABEL MAX_LEN SECONDS: cudamux_NAME_fuzzer replays tests/fuzz/corpus-NAME,
# then fuzzes SECONDS; skipped with a line when that target was not built.
parser_fuzzer() {
  local binary="$build/cudamux_$1_fuzzer"
  if [[ ! -x "$binary" ]]; then
    echo "fuzz: no $binary (build target cudamux_$1_fuzzer): $2 fuzzer skipped" >&2
    return
  fi
  local options=("${common[@]/#-max_len=4096/-max_len=$3}")
  mkdir -p "$build/corpus-$1-$mode"
  "$binary" "${options[@]}" -runs=0 "$here/corpus-$1"
  "$binary" "${options[@]}" -max_total_time="$4" "$build/corpus-$1-$mode" "$here/corpus-$1"
}

# Regression replay: every committed input runs once, each must pass.
"$fuzzer" "${common[@]}" -runs=0 "$here/corpus"

case "$mode" in
  smoke)
    "$fuzzer" "${common[@]}" -max_total_time="${CUDAMUX_FUZZ_SECONDS:-45}" "$scratch" "$here/corpus"
    # Input parser fuzzers: seeds are nvcc output of 1-5 KB (fat binaries, PTX) and small
    # objects of about 1 KB (ELF files).
    parser_fuzzer fatbin "fat binary" 16384 "${CUDAMUX_FATBIN_FUZZ_SECONDS:-20}"
    parser_fuzzer ptx PTX 16384 "${CUDAMUX_PTX_FUZZ_SECONDS:-20}"
    parser_fuzzer elf ELF 8192 "${CUDAMUX_ELF_FUZZ_SECONDS:-15}" ;;
  long)
    "$fuzzer" "${common[@]}" -runs="${3:-1000000}" "$scratch" "$here/corpus" ;;
  *)
    echo "usage: $0 smoke|long [build-dir] [runs]" >&2; exit 2 ;;
esac
