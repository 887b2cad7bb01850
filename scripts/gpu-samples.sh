#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root (issue 14): NVIDIA's cuda-samples built
# here by scripts/build-samples.sh, each in both runtime flavours (shared: -cudart shared,
# static: nvcc's default static runtime), once on NVIDIA's driver directly and once through
# cudamux (our lib/ first on LD_LIBRARY_PATH, CUDAMUX_BACKEND=cuda), and compares verdicts.
# In the shared flavour cudamux's libcudart.so.13 and libcuda.so.1 both serve the program;
# in the static flavour NVIDIA's static runtime, linked into the program, calls our
# libcuda.so.1.
#   scripts/gpu-samples.sh <samples dir or build-samples.tar.xz> <pack dir of scripts/pack-for-gpu.sh>
# Verdicts: PASS (exit 0, no "FAIL"/"Test failed" in the output), WAIVED (exit 2,
# EXIT_WAIVED), TIMEOUT (over SAMPLES_TIMEOUT_S, default 60), FAIL(rc) otherwise.
# Writes $OUT (default /tmp/gpu-samples): samples-summary.txt, samples-logs.tgz (every
# output). Environment: SAMPLES_TIMEOUT_S, SAMPLES_BUDGET_S (default 450: samples not
# started by then are reported NOT-RUN), SAMPLES_ONLY (names to run, space-separated),
# SAMPLES_FLAVOURS (default "shared static"), NVIDIA_CUDART_DIR (where NVIDIA's
# libcudart.so.13 is, default /usr/local/cuda/lib64).
set -uo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 <samples dir or .tar.xz> <cudamux pack dir>" >&2; exit 2; }
samples=$1
out=${OUT:-/tmp/gpu-samples}
mkdir -p "$out"
if [[ -f $samples && $samples == *.tar.xz ]]; then
  unpack=$(mktemp -d "${TMPDIR:-/tmp}/cuda-samples.XXXXXX")
  tar -xJf "$samples" -C "$unpack" || { echo "cannot unpack $samples" >&2; exit 1; }
  samples=$(find "$unpack" -mindepth 2 -maxdepth 2 -name samples.list -printf '%h\n' | head -1)
fi
[[ -f $samples/samples.list ]] || { echo "no samples.list in $samples" >&2; exit 1; }
samples=$(realpath "$samples")
pack=$(realpath -m "$2")
limit=${SAMPLES_TIMEOUT_S:-60}
budget=${SAMPLES_BUDGET_S:-450}
flavours=${SAMPLES_FLAVOURS:-shared static}
only=${SAMPLES_ONLY:-}
nvidia_cudart_dir=${NVIDIA_CUDART_DIR:-/usr/local/cuda/lib64}
logs=$out/samples-logs
rm -rf "$logs"
mkdir -p "$logs"
no_config=$(mktemp -d "${TMPDIR:-/tmp}/cudamux-no-config.XXXXXX")  # an empty XDG_CONFIG_HOME
summary=$out/samples-summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

# The two environments. NVIDIA: the machine's own, with NVIDIA's runtime findable (for
# the shared flavour) and no cudamux settings. cudamux: as scripts/gpu-run.sh, our lib
# and deps first, no config file, cuda backend.
base_ld=${LD_LIBRARY_PATH:-}
nvidia_env=(env -u CUDAMUX_BACKEND -u CUDAMUX_CONFIG -u CUDAMUX_PLUGIN_PATH
            "LD_LIBRARY_PATH=$nvidia_cudart_dir${base_ld:+:$base_ld}")
cudamux_env=(env "LD_LIBRARY_PATH=$pack/lib:$pack/deps:$nvidia_cudart_dir${base_ld:+:$base_ld}"
             CUDAMUX_BACKEND=cuda CUDAMUX_CONFIG= CUDAMUX_PLUGIN_PATH=
             "XDG_CONFIG_HOME=$no_config")

libcuda_of() {  # libcuda_of <nvidia|cudamux> <sample>: the libcuda.so.1 its static build loads
  local -n envref=${1}_env
  (cd "$samples/static/$2" && timeout 30 "${envref[@]}" LD_DEBUG=libs "./$2" </dev/null 2>&1 |
    grep -E 'calling init: .*libcuda\.so' | head -2)
}
{
  echo "samples: $samples"; cat "$samples/BUILD-INFO" 2>/dev/null
  echo "pack: $pack"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || echo "no nvidia-smi"
  uname -a; head -2 /etc/os-release
  echo "NVIDIA runtime: $(ls "$nvidia_cudart_dir"/libcudart.so.13 2>&1)"
  echo "cudamux: $(ls "$pack/lib/libcuda.so.1" "$pack/lib/libcudart.so.13" 2>&1 | tr '\n' ' ')"
  first=$(head -1 "$samples/samples.list" | cut -f1)
  echo "-- ldd shared/$first, NVIDIA environment:"
  "${nvidia_env[@]}" ldd "$samples/shared/$first/$first" 2>&1 | grep -E 'cuda|not found'
  echo "-- ldd shared/$first, cudamux environment:"
  "${cudamux_env[@]}" ldd "$samples/shared/$first/$first" 2>&1 | grep -E 'cuda|not found'
  # Which libcuda.so.1 a static-runtime program dlopens in each environment.
  for e in nvidia cudamux; do
    echo "-- libcuda.so.1 loaded by static/$first, $e environment:"
    libcuda_of "$e" "$first"
  done
} >"$logs/environment.txt" 2>&1
say "== $(sed -n 's/^samples: //p' "$logs/environment.txt")"
say "== GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || true)"
if [[ -e $pack/lib/libcuda.so.1 && -e $pack/lib/libcudart.so.13 ]]; then
  say "== cudamux: $pack/lib"
else
  say "== WARNING: no libcuda.so.1 / libcudart.so.13 in $pack/lib: the cudamux runs are not on cudamux"
fi

verdict() {  # verdict <rc> <log>
  local rc=$1 log=$2
  if ((rc == 124 || rc == 137)); then echo TIMEOUT
  elif ((rc == 2)); then echo WAIVED
  elif ((rc != 0)); then echo "FAIL($rc)"
  elif grep -q 'FAIL' "$log" || grep -qi 'test failed' "$log"; then echo "FAIL(out)"
  else echo PASS
  fi
}
first_error() {  # the first line of a log that says what went wrong
  local log=$1 rc=$2 line
  ((rc == 124 || rc == 137)) && { echo "timed out"; return; }
  line=$(grep -m1 -iE 'error|fail|abort|assert|segmentation|terminate|not supported|unsupported|insufficient|invalid|no cuda' "$log")
  [[ -z $line ]] && line=$(grep -v '^[[:space:]]*$' "$log" | tail -1)
  echo "${line:-(no output)}" | tr -d '\r' | cut -c1-160
}
run_one() {  # run_one <nvidia|cudamux> <flavour> <name> <args...>: prints "<rc> <seconds>"
  local who=$1 flavour=$2 name=$3
  shift 3
  local -n envref=${who}_env
  local log=$logs/$name.$flavour.$who.log t0 rc left t=$limit
  # Never past the time budget (plus 10 s): a hanging sample near the end must not take
  # the whole run past the device tool's limit.
  left=$((budget + 10 - ($(date +%s) - start)))
  ((left < t)) && t=$((left > 10 ? left : 10))
  t0=$EPOCHREALTIME
  (cd "$samples/$flavour/$name" &&
    timeout -k 5 "$t" "${envref[@]}" "./$name" "$@" </dev/null >"$log" 2>&1) 2>>"$log"
  rc=$?
  awk -v rc="$rc" -v t0="$t0" -v t1="$EPOCHREALTIME" 'BEGIN {printf "%s %.1f\n", rc, t1 - t0}'
}

start=$(date +%s)
declare -A same total
for f in $flavours; do same[$f]=0; total[$f]=0; done
printf '# name flavour nvidia cudamux same rc_nvidia rc_cudamux s_nvidia s_cudamux\n' >"$logs/results.tsv"
while IFS=$'\t' read -r name dir args; do
  [[ -z $name || $name == \#* ]] && continue
  [[ -n $only && " $only " != *" $name "* ]] && continue
  read -r -a argv <<<"$args"
  for f in $flavours; do
    total[$f]=$((total[$f] + 1))
    if (( $(date +%s) - start > budget )); then
      say "$(printf '%-28s %-6s nvidia=%-9s cudamux=%-9s %s' "$name" "$f" NOT-RUN NOT-RUN "-     time budget of ${budget} s spent")"
      continue
    fi
    read -r rc_n s_n < <(run_one nvidia "$f" "$name" "${argv[@]}")
    read -r rc_c s_c < <(run_one cudamux "$f" "$name" "${argv[@]}")
    v_n=$(verdict "$rc_n" "$logs/$name.$f.nvidia.log")
    v_c=$(verdict "$rc_c" "$logs/$name.$f.cudamux.log")
    if [[ $v_n == "$v_c" ]]; then cmp=SAME; same[$f]=$((same[$f] + 1)); else cmp=DIFF; fi
    note=""
    [[ $v_c != PASS && $v_c != WAIVED ]] && note="  $(first_error "$logs/$name.$f.cudamux.log" "$rc_c")"
    say "$(printf '%-28s %-6s nvidia=%-9s cudamux=%-9s %s%s' "$name" "$f" "$v_n" "$v_c" "$cmp" "$note")"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$f" "$v_n" "$v_c" "$cmp" "$rc_n" "$rc_c" "$s_n" "$s_c" \
      >>"$logs/results.tsv"
  done
done <"$samples/samples.list"

totals=""
for f in $flavours; do totals+="${totals:+; }$f: ${same[$f]} same of ${total[$f]}"; done
say "== $totals"
for f in $flavours; do
  say "== $f: nvidia $(awk -F'\t' -v f="$f" '$2 == f {n[$3]++} END {for (v in n) printf "%s=%d ", v, n[v]}' "$logs/results.tsv")| cudamux $(awk -F'\t' -v f="$f" '$2 == f {n[$4]++} END {for (v in n) printf "%s=%d ", v, n[v]}' "$logs/results.tsv")"
done
say "== DIFF: $(awk -F'\t' '$5 == "DIFF" {printf "%s.%s ", $1, $2}' "$logs/results.tsv")"
say "== slowest (s, nvidia/cudamux): $(sort -t$'\t' -k9 -gr "$logs/results.tsv" | grep -v '^#' | head -5 |
  awk -F'\t' '{printf "%s.%s %s/%s  ", $1, $2, $8, $9}')"
say "== took $(( $(date +%s) - start )) s"
cp "$summary" "$logs/"
tar -C "$out" -czf "$out/samples-logs.tgz" samples-logs && rm -rf "$logs"
rm -rf "$no_config"
[[ -n ${unpack:-} ]] && rm -rf "$unpack"
echo "summary: $summary; logs: $out/samples-logs.tgz"
