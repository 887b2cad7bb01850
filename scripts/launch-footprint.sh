#!/usr/bin/env bash
# Cache lines and instructions cudamux's own code spends per cuLaunchKernel on the cuda backend
# (issue 14), without a GPU and without timing: cudamux_bench_passthrough's launch over the
# stand-in driver, under callgrind's cache simulator, with the stand-in displacing the caches
# on every launch as NVIDIA's launch path does (FAKE_NVIDIA_LAUNCH_EVICT). What cudamux then
# misses is what a launch costs it on a GPU machine beyond its instructions.
#   scripts/launch-footprint.sh [build-dir] [benchmark filter]
# Needs valgrind (apt-get install valgrind). Prints, per launch, for each of libcuda.so.1 (the
# entry points), the core and the cuda plugin: instructions, D1 misses (data lines), I1 misses.
# The stand-in also runs 64 KiB of code per launch, so code lines count too. 2026-11-27: 593
# instructions, 33 data and 48 code lines at 2a7da6b; 541, 28 and 41 at 8eba977
# (docs/performance.md).
set -euo pipefail
build="${1:-build}"
filter="${2:-Cudamux/cuLaunchKernel/non-blocking stream}"
command -v valgrind >/dev/null || { echo "launch-footprint: needs valgrind" >&2; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
FAKE_NVIDIA_LAUNCH_EVICT=262144 valgrind --tool=callgrind --cache-sim=yes \
  --D1=32768,8,64 --LL=524288,8,64 --callgrind-out-file="$out/cg" \
  "$build/bin/cudamux_bench_passthrough" "--benchmark_filter=$filter" >/dev/null 2>"$out/log"
python3 - "$out/cg" <<'PY'
import collections, re, subprocess, sys
def annotate(*args):
    return subprocess.run(["callgrind_annotate", *args, sys.argv[1]], capture_output=True,
                          text=True, check=True).stdout
# Launches: the calls the stand-in's cuLaunchKernel received.
launches = 0
callers = []
for line in annotate("--tree=caller", "--inclusive=yes", "--threshold=100", "--auto=no").splitlines():
    if line.strip() == "":
        callers = []
    elif "  < " in line:
        callers.append(line)
    if re.search(r"\*  .*fake_nvidia\.cpp:cuLaunchKernel(\s|$)", line):
        # callgrind lists the function under two names (source and object); count one.
        launches = max(launches, sum(int(m.group(1).replace(",", "")) for c in callers
                                     if (m := re.search(r"\(([\d,]+)x\)", c))))
        callers = []
if launches == 0: sys.exit("launch-footprint: no launch reached the stand-in")
totals = collections.Counter()
row = re.compile(r"\s*([\d,]+) \([^)]*\)\s+([\d,.]+)(?: \([^)]*\))?\s+([\d,.]+)(?: \([^)]*\))?"
                 r"\s+([\d,.]+)(?: \([^)]*\))?\s+(.*)$")
number = lambda s: 0 if s == "." else int(s.replace(",", ""))
for line in annotate("--inclusive=no", "--threshold=100", "--auto=no",
                     "--show=Ir,D1mr,D1mw,I1mr").splitlines():
    m = row.match(line)
    if not m or m.group(5).startswith(("=>", "*")) or "fake_nvidia" in m.group(5): continue
    where = m.group(5)
    if "plugins/cuda" in where or "libcudamux-cuda" in where: part = "cuda plugin"
    elif "core/src" in where or "libcudamux-core" in where: part = "core"
    elif "driver_exports" in where or "/lib/libcuda.so.1" in where: part = "libcuda.so.1"
    else: continue
    ir, d1r, d1w, i1 = (number(m.group(i)) for i in range(1, 5))
    totals[part, "instructions"] += ir
    totals[part, "data lines"] += d1r + d1w
    totals[part, "code lines"] += i1
print(f"per launch ({launches} launches; the stand-in displaces the caches on each)")
print(f"  {'':14s} {'instructions':>12s} {'data lines':>11s} {'code lines':>11s}")
for part in ("libcuda.so.1", "core", "cuda plugin"):
    print(f"  {part:14s} " + " ".join(f"{totals[part, k] / launches:{w}.1f}" for k, w in
          (("instructions", 12), ("data lines", 11), ("code lines", 11))))
print(f"  {'total':14s} " + " ".join(
    f"{sum(v for (p, kk), v in totals.items() if kk == k) / launches:{w}.1f}" for k, w in
    (("instructions", 12), ("data lines", 11), ("code lines", 11))))
PY
