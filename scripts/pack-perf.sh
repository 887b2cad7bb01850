#!/usr/bin/env bash
# Packs Debian's perf with the libraries it needs beyond the C/C++ runtime, for profiling on the
# GPU machine, which has no perf of its own but allows unprivileged user-space sampling
# (perf_event_paranoid 2: `perf record -e cpu-clock:u`). About 28 MiB; carry it beside a pack
# made by scripts/pack-for-gpu.sh (together under the device tool's 64 MiB). On the GPU machine:
#   LD_LIBRARY_PATH=<dir>/lib <dir>/perf record -e cpu-clock:u --call-graph=dwarf,16384 <program>
# (docs/performance.md, "Where a static-runtime launch spends its time").
#   scripts/pack-perf.sh [dir, default build-perf]
set -euo pipefail
dir=${1:-build-perf}
perf=$(command -v perf) || { echo "no perf here: apt-get install linux-perf" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir/lib"
cp -L "$perf" "$dir/perf"
skip='^(libc|libm|libstdc\+\+|libgcc_s|ld-linux-x86-64|linux-vdso)\.so'
ldd "$perf" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
  [[ $name =~ $skip ]] || cp -L "$path" "$dir/lib/$name"
done
echo "packed $perf into $dir ($(du -sh "$dir" | cut -f1))"
