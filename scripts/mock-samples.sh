#!/usr/bin/env bash
# Runs NVIDIA's cuda-samples, built here by scripts/build-samples.sh, on the mock backend
# (issue 15: their kernels run from the fat binaries' PTX), each flavour (shared: -cudart
# shared, static: nvcc's default static runtime) with our lib/ first on the library path,
# and prints each verdict next to the GPU's (every sample passes on NVIDIA's driver, see
# docs/conformance.md). No GPU needed.
#   scripts/mock-samples.sh <samples dir> [build dir, default build]
# Verdicts as scripts/gpu-samples.sh: PASS (exit 0, no "FAIL"/"Test failed" in the output),
# WAIVED (exit 2), TIMEOUT (SAMPLES_TIMEOUT_S, default 120), FAIL(rc) / FAIL(out).
# Environment: SAMPLES_ONLY (names), SAMPLES_FLAVOURS (default "shared static"), OUT (logs,
# default /tmp/mock-samples).
set -uo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 <samples dir> [build dir]" >&2; exit 2; }
samples=$(realpath "$1")
build=$(realpath "${2:-build}")
out=${OUT:-/tmp/mock-samples}
limit=${SAMPLES_TIMEOUT_S:-120}
flavours=${SAMPLES_FLAVOURS:-shared static}
only=${SAMPLES_ONLY:-}
mkdir -p "$out"
no_config=$(mktemp -d)
summary=$out/summary.txt
: >"$summary"
verdict() {
  local rc=$1 log=$2
  if ((rc == 124 || rc == 137)); then echo TIMEOUT
  elif ((rc == 2)); then echo WAIVED
  elif ((rc != 0)); then echo "FAIL($rc)"
  elif grep -q 'FAIL' "$log" || grep -qi 'test failed' "$log"; then echo "FAIL(out)"
  else echo PASS
  fi
}
first_error() {
  local log=$1 line
  line=$(grep -m1 -iE 'error|fail|abort|assert|segmentation|terminate|not supported|unsupported|invalid' "$log")
  [[ -z $line ]] && line=$(grep -v '^[[:space:]]*$' "$log" | tail -1)
  echo "${line:-(no output)}" | tr -d '\r' | cut -c1-150
}
declare -A pass total
for f in $flavours; do pass[$f]=0; total[$f]=0; done
list=$samples/samples.list
if [[ ! -f $list ]]; then  # a build still under way: what is there, without arguments
  list=$out/samples.list
  for d in "$samples"/shared/*/; do printf '%s\t\t\n' "$(basename "$d")"; done >"$list"
fi
while IFS=$'\t' read -r name _dir args; do
  [[ -z $name || $name == \#* ]] && continue
  [[ -n $only && " $only " != *" $name "* ]] && continue
  read -r -a argv <<<"$args"
  for f in $flavours; do
    [[ -x $samples/$f/$name/$name ]] || continue
    total[$f]=$((total[$f] + 1))
    log=$out/$name.$f.log
    t0=$EPOCHREALTIME
    (cd "$samples/$f/$name" && timeout -k 5 "$limit" env "LD_LIBRARY_PATH=$build/lib" \
      CUDAMUX_BACKEND=mock CUDAMUX_CONFIG= CUDAMUX_PLUGIN_PATH= "XDG_CONFIG_HOME=$no_config" \
      "./$name" "${argv[@]}" </dev/null >"$log" 2>&1)
    rc=$?
    s=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}')
    v=$(verdict "$rc" "$log")
    [[ $v == PASS ]] && pass[$f]=$((pass[$f] + 1))
    note=""
    [[ $v != PASS ]] && note="  $(first_error "$log")"
    printf '%-28s %-6s gpu=PASS mock=%-9s %6ss%s\n' "$name" "$f" "$v" "$s" "$note" | tee -a "$summary"
  done
done < "$list"
for f in $flavours; do
  echo "== $f: ${pass[$f]} of ${total[$f]} give the GPU's verdict (PASS) on the mock" | tee -a "$summary"
done
