#!/usr/bin/env bash
# Regenerates the fat binary fixtures in tests/fatbin/data with NVIDIA's nvcc (CUDA 13.0 was
# used; the tests themselves never need nvcc). Run by hand, then re-derive the expectations
# in fatbin_test.cpp from data/cuobjdump.txt, which this script rewrites when a cuobjdump is
# found (CUDA 13.0's Debian toolkit here had none; `pip install nvidia-cuda-cuobjdump` gives
# one, e.g. 13.2, under site-packages/nvidia/cu13/bin; point CUOBJDUMP at it).
#
#   tests/fatbin/make_fixtures.sh [path/to/nvcc]
#
# Fixtures (all from data/axpy.cu, one kernel `cudamux_fatbin_axpy`; every one < 30 KB):
#   sm75.fatbin             -arch=sm_75: sm_75 ELF (stored), compute_75 PTX (zstd)
#   sm75_nocompress.fatbin  the same with --no-compress: both stored
#   multi.fatbin            sm_75, sm_80, sm_90 ELF + compute_90 PTX (zstd)
#   sm90a.fatbin            compute_90a PTX (zstd) + sm_90a ELF: the 'a' flag
#   blackwell.fatbin        sm_100f ELF, sm_120 ELF, compute_120 PTX: 112-byte ELF headers
#   lz4.fatbin              -Xfatbin -compress-all,-compress-mode=speed: LZ4 ELF + LZ4 PTX
#   debug.fatbin            -G: zstd ELF and PTX with debug flag, identifier and ptxas options
#   lto.fatbin              -dc code=lto_80: an obfuscated NVVM IR entry (kind 8)
#   linked.nv_fatbin        the .nv_fatbin section (objcopy) of a program linked from three
#                           translation units: 4 containers back to back
#   axpy_sm_75.cubin        nvcc -cubin -arch=sm_75: the ELF that sm75.fatbin must yield
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
data="$here/data"
nvcc="${1:-${NVCC:-nvcc}}"
command -v "$nvcc" >/dev/null || nvcc=/usr/local/cuda/bin/nvcc
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# From inside data/, so the identifier nvcc -G stores is "axpy.cu", not a path of this machine.
cd "$data"
src=axpy.cu
fb() { local out="$1"; shift; "$nvcc" -fatbin "$@" "$src" -o "$data/$out"; }

fb sm75.fatbin -arch=sm_75
fb sm75_nocompress.fatbin -arch=sm_75 --no-compress
fb multi.fatbin -gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80 \
  -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
fb sm90a.fatbin -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_90a,code=compute_90a
fb blackwell.fatbin -gencode arch=compute_100f,code=sm_100f \
  -gencode 'arch=compute_120,code=[sm_120,compute_120]'
fb lz4.fatbin -arch=sm_75 -Xfatbin -compress-all -Xfatbin -compress-mode=speed
fb debug.fatbin -arch=sm_75 -G
fb lto.fatbin -gencode arch=compute_80,code=lto_80 -dc
"$nvcc" -cubin -arch=sm_75 "$src" -o "$data/axpy_sm_75.cubin"

# A linked program: axpy.cu (sm_75 + compute_75), scale.cu (sm_80 + compute_90), main.cu.
cat >"$work/scale.cu" <<'CU'
extern "C" __global__ void cudamux_fatbin_scale(float a, float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
CU
echo 'int main() { return 0; }' >"$work/main.cu"
"$nvcc" -c -arch=sm_75 "$src" -o "$work/axpy.o"
"$nvcc" -c -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=compute_90 \
  "$work/scale.cu" -o "$work/scale.o"
"$nvcc" -c "$work/main.cu" -o "$work/main.o"
"$nvcc" "$work/axpy.o" "$work/scale.o" "$work/main.o" -o "$work/app"
objcopy -O binary --only-section=.nv_fatbin "$work/app" "$data/linked.nv_fatbin"

ls -l "$data"
cuobjdump="${CUOBJDUMP:-$(command -v cuobjdump || true)}"
if [[ -n "$cuobjdump" ]]; then
  {
    echo "# $("$cuobjdump" --version | grep -i release)"
    for f in sm75.fatbin sm75_nocompress.fatbin multi.fatbin sm90a.fatbin blackwell.fatbin \
             lz4.fatbin debug.fatbin lto.fatbin linked.nv_fatbin; do
      echo "== $f"
      "$cuobjdump" -lelf -lptx "$f" 2>&1 || true
      # The entry headers as cuobjdump prints them (no SASS: that needs nvdisasm).
      ("$cuobjdump" "$f" 2>&1 || true) |
        grep -E '^(Fatbin|arch|code version|host|compile_size|has debug|compressed|identifier|ptxasOptions|nvvmOptions)' || true
    done
  } | sed "s|$data/||g" >"$data/cuobjdump.txt"
  echo "wrote $data/cuobjdump.txt"
else
  echo "no cuobjdump (set CUOBJDUMP): data/cuobjdump.txt left as it was" >&2
fi
