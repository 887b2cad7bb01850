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

# Regression replay: every committed input runs once, each must pass.
"$fuzzer" "${common[@]}" -runs=0 "$here/corpus"

case "$mode" in
  smoke)
    "$fuzzer" "${common[@]}" -max_total_time="${CUDAMUX_FUZZ_SECONDS:-45}" "$scratch" "$here/corpus"
    fatbin="$build/cudamux_fatbin_fuzzer"
    if [[ -x "$fatbin" ]]; then
      # Fat binaries are larger than API bytecode: the seeds are nvcc output of 2-5 KB.
      fb_common=("${common[@]/#-max_len=4096/-max_len=16384}")
      mkdir -p "$build/corpus-fatbin-$mode"
      "$fatbin" "${fb_common[@]}" -runs=0 "$here/corpus-fatbin"
      "$fatbin" "${fb_common[@]}" -max_total_time="${CUDAMUX_FATBIN_FUZZ_SECONDS:-20}" \
        "$build/corpus-fatbin-$mode" "$here/corpus-fatbin"
    else
      echo "fuzz: no $fatbin (build target cudamux_fatbin_fuzzer): fat binary fuzzer skipped" >&2
    fi
    ptx="$build/cudamux_ptx_fuzzer"
    if [[ -x "$ptx" ]]; then
      # PTX seeds are nvcc output of 1-5 KB.
      px_common=("${common[@]/#-max_len=4096/-max_len=16384}")
      mkdir -p "$build/corpus-ptx-$mode"
      "$ptx" "${px_common[@]}" -runs=0 "$here/corpus-ptx"
      "$ptx" "${px_common[@]}" -max_total_time="${CUDAMUX_PTX_FUZZ_SECONDS:-20}" \
        "$build/corpus-ptx-$mode" "$here/corpus-ptx"
    else
      echo "fuzz: no $ptx (build target cudamux_ptx_fuzzer): PTX fuzzer skipped" >&2
    fi
    elf="$build/cudamux_elf_fuzzer"
    if [[ -x "$elf" ]]; then
      # ELF seeds are small objects of about 1 KB.
      el_common=("${common[@]/#-max_len=4096/-max_len=8192}")
      mkdir -p "$build/corpus-elf-$mode"
      "$elf" "${el_common[@]}" -runs=0 "$here/corpus-elf"
      "$elf" "${el_common[@]}" -max_total_time="${CUDAMUX_ELF_FUZZ_SECONDS:-15}" \
        "$build/corpus-elf-$mode" "$here/corpus-elf"
    else
      echo "fuzz: no $elf (build target cudamux_elf_fuzzer): ELF fuzzer skipped" >&2
    fi ;;
  long)
    "$fuzzer" "${common[@]}" -runs="${3:-1000000}" "$scratch" "$here/corpus" ;;
  *)
    echo "usage: $0 smoke|long [build-dir] [runs]" >&2; exit 2 ;;
esac
