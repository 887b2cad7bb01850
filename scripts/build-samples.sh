#!/usr/bin/env bash
# Builds NVIDIA's cuda-samples (issue 14) for scripts/gpu-samples.sh, which runs each one on
# the GPU machine twice, on NVIDIA's driver directly and through cudamux (cuda backend),
# and compares the verdicts. Runs here (Debian 12, CUDA 13.0 toolkit at /usr/local/cuda, no
# GPU needed). The samples come from the bare mirror of github.com/NVIDIA/cuda-samples; no
# sample code enters this repository.
#
# Each sample of SAMPLES below is built the way a user typing nvcc builds it: nvcc's defaults
# (no -arch, so sm_75 SASS plus compute_75 PTX; on a newer GPU the driver JIT-compiles the
# PTX), all its .cu/.cpp/.c files (the list of its CMakeLists.txt), -I <src>/Common -I
# <sample dir>, plus the few flags a sample cannot build without (third field). Every
# source is compiled once (nvcc -c) and linked twice: -cudart shared into
# <out>/shared/<name>/<name>, nvcc's default static runtime into <out>/static/<name>/<name>.
# A sample's data/ folder goes to <out>/data/<name>, linked as data/ from both folders (the
# samples look for their files in ./ and ./data/ of the working directory). Binaries are
# stripped; <out>/samples.list (what was built, with run arguments), <out>/excluded.txt and
# a copy of scripts/gpu-samples.sh go into <out>.tar.xz (xz -9).
#   scripts/build-samples.sh [out dir, default build-samples]
# Environment: CUDA_SAMPLES_GIT (bare git dir of cuda-samples), CUDA_SAMPLES_REV (default
# HEAD), NVCC (default /usr/local/cuda/bin/nvcc), JOBS (parallel samples, default 2).
set -euo pipefail
out=${1:-build-samples}
out=${out%/}
git_dir=${CUDA_SAMPLES_GIT:-/work/.mirror/NVIDIA+cuda-samples/repo}
rev=${CUDA_SAMPLES_REV:-HEAD}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
jobs=${JOBS:-2}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Built: <dir under Samples/>|<extra nvcc flags (compile and link)>|<run arguments>.
SAMPLES=(
  "0_Introduction/asyncAPI||"
  "0_Introduction/clock||"
  "0_Introduction/cudaOpenMP|-Xcompiler=-fopenmp|"         # host OpenMP (libgomp)
  "0_Introduction/fp16ScalarProduct||"
  "0_Introduction/matrixMul||"
  "0_Introduction/matrixMulDynlinkJIT|-ldl|"               # driver API through dlopen, JITs embedded PTX
  "0_Introduction/mergeSort||"
  "0_Introduction/simpleAWBarrier||"
  "0_Introduction/simpleAssert||"
  "0_Introduction/simpleAtomicIntrinsics||"
  "0_Introduction/simpleAttributes||"
  "0_Introduction/simpleCallback||"
  "0_Introduction/simpleCooperativeGroups||"
  "0_Introduction/simpleCubemapTexture||"
  "0_Introduction/simpleHyperQ||"
  "0_Introduction/simpleLayeredTexture||"
  "0_Introduction/simpleMultiCopy||"
  "0_Introduction/simpleMultiGPU||"                        # uses every GPU there is; runs on one
  "0_Introduction/simpleOccupancy||"
  "0_Introduction/simplePitchLinearTexture||"
  "0_Introduction/simplePrintf||"
  "0_Introduction/simpleStreams||"
  "0_Introduction/simpleSurfaceWrite||"                    # data/
  "0_Introduction/simpleTemplates||"
  "0_Introduction/simpleTexture||"                         # data/
  "0_Introduction/simpleVoteIntrinsics||"
  "0_Introduction/simpleZeroCopy||"
  "0_Introduction/systemWideAtomics||"
  "0_Introduction/template||"
  "0_Introduction/vectorAdd||"
  "1_Utilities/deviceQuery||"
  "1_Utilities/deviceQueryDrv|-lcuda|"                     # driver API only
  "1_Utilities/topologyQuery||"
  "2_Concepts_and_Techniques/MC_EstimatePiInlineP||"       # curand_kernel.h (device side only)
  "2_Concepts_and_Techniques/MC_SingleAsianOptionP||"      # curand_kernel.h (device side only)
  "2_Concepts_and_Techniques/convolutionSeparable||"
  "2_Concepts_and_Techniques/convolutionTexture||"
  "2_Concepts_and_Techniques/dct8x8||"                     # data/
  "2_Concepts_and_Techniques/eigenvalues||"                 # data/
  "2_Concepts_and_Techniques/histogram||"
  "2_Concepts_and_Techniques/inlinePTX||"
  "2_Concepts_and_Techniques/interval||"
  "2_Concepts_and_Techniques/radixSortThrust||"
  "2_Concepts_and_Techniques/reduction||"
  "2_Concepts_and_Techniques/reductionMultiBlockCG||"
  "2_Concepts_and_Techniques/scalarProd||"
  "2_Concepts_and_Techniques/scan||"
  "2_Concepts_and_Techniques/segmentationTreeThrust||"     # data/
  "2_Concepts_and_Techniques/shfl_scan||"
  "2_Concepts_and_Techniques/sortingNetworks||"
  "2_Concepts_and_Techniques/streamOrderedAllocation||"
  "2_Concepts_and_Techniques/threadFenceReduction||"
  "3_CUDA_Features/StreamPriorities||"
  "3_CUDA_Features/bf16TensorCoreGemm||"
  "3_CUDA_Features/binaryPartitionCG||"
  "3_CUDA_Features/cdpAdvancedQuicksort|-rdc=true|"        # dynamic parallelism: relocatable device code
  "3_CUDA_Features/cdpBezierTessellation|-rdc=true|"
  "3_CUDA_Features/cdpQuadtree|-rdc=true|"
  "3_CUDA_Features/cdpSimplePrint|-rdc=true|"
  "3_CUDA_Features/cdpSimpleQuicksort|-rdc=true|"
  "3_CUDA_Features/cudaCompressibleMemory|-lcuda|"         # runtime + driver API (cuMemCreate)
  "3_CUDA_Features/cudaTensorCoreGemm||"
  "3_CUDA_Features/dmmaTensorCoreGemm||"
  "3_CUDA_Features/globalToShmemAsyncCopy||"
  "3_CUDA_Features/graphConditionalNodes||"
  "3_CUDA_Features/graphMemoryFootprint||"
  "3_CUDA_Features/graphMemoryNodes||"
  "3_CUDA_Features/immaTensorCoreGemm||"
  "3_CUDA_Features/jacobiCudaGraphs||"
  "3_CUDA_Features/newdelete||"
  "3_CUDA_Features/simpleCudaGraphs||"
  "3_CUDA_Features/tf32TensorCoreGemm||"
  "3_CUDA_Features/warpAggregatedAtomicsCG||"
  "6_Performance/LargeKernelParameter||"
  "6_Performance/UnifiedMemoryPerf||-kernel-iterations=4"  # 20 by default: 11 s a run on an H100
  "6_Performance/alignedTypes||"
  "6_Performance/cudaGraphsPerfScaling||"
  "6_Performance/transpose||"
)

# Not built: <dir under Samples/>|<why>.
EXCLUDED=(
  "0_Introduction/UnifiedMemoryStreams|cuBLAS host library (and OpenMP)"
  "0_Introduction/clock_nvrtc|NVRTC + driver API module loading (host libraries beyond the runtime)"
  "0_Introduction/matrixMul_nvrtc|NVRTC + driver API module loading"
  "0_Introduction/simpleAssert_nvrtc|NVRTC + driver API module loading"
  "0_Introduction/simpleAtomicIntrinsics_nvrtc|NVRTC + driver API module loading"
  "0_Introduction/vectorAdd_nvrtc|NVRTC + driver API module loading"
  "0_Introduction/matrixMulDrv|driver API, loads a fatbin built by a separate CMake step"
  "0_Introduction/vectorAddDrv|driver API, loads a fatbin built by a separate CMake step"
  "0_Introduction/simpleTextureDrv|driver API, loads a fatbin built by a separate CMake step"
  "0_Introduction/simpleDrvRuntime|loads a fatbin built by a separate CMake step"
  "0_Introduction/vectorAddMMAP|driver API, loads a fatbin built by a separate CMake step"
  "0_Introduction/simpleCUDA2GL|OpenGL/GLUT"
  "0_Introduction/simpleTexture3D|OpenGL/GLUT"
  "0_Introduction/simpleMPI|MPI"
  "0_Introduction/simpleIPC|multi-process (CUDA IPC between processes)"
  "0_Introduction/simpleP2P|multi-GPU (peer access; waives on one GPU)"
  "2_Concepts_and_Techniques/EGLStream_CUDA_CrossGPU|EGL, multi-GPU"
  "2_Concepts_and_Techniques/EGLStream_CUDA_Interop|EGL"
  "2_Concepts_and_Techniques/FunctionPointers|OpenGL/GLUT"
  "2_Concepts_and_Techniques/boxFilter|OpenGL/GLUT"
  "2_Concepts_and_Techniques/imageDenoising|OpenGL/GLUT"
  "2_Concepts_and_Techniques/particles|OpenGL/GLUT"
  "2_Concepts_and_Techniques/MC_EstimatePiP|cuRAND host library"
  "2_Concepts_and_Techniques/MC_EstimatePiQ|cuRAND host library"
  "2_Concepts_and_Techniques/MC_EstimatePiInlineQ|cuRAND host library"
  "2_Concepts_and_Techniques/inlinePTX_nvrtc|NVRTC + driver API module loading"
  "2_Concepts_and_Techniques/streamOrderedAllocationIPC|multi-process (IPC memory pools)"
  "2_Concepts_and_Techniques/streamOrderedAllocationP2P|multi-GPU (waives on one GPU)"
  "2_Concepts_and_Techniques/threadMigration|driver API, loads a fatbin built by a separate CMake step"
  "3_CUDA_Features/bindlessTexture|OpenGL/GLUT"
  "3_CUDA_Features/memMapIPCDrv|multi-process, driver API with a separately built PTX file"
  "3_CUDA_Features/ptxjit|driver API, loads a PTX file built by a separate CMake step"
)

[[ -x $nvcc ]] || { echo "no nvcc at $nvcc" >&2; exit 1; }
git --git-dir="$git_dir" rev-parse --verify -q "$rev^{commit}" >/dev/null ||
  { echo "no cuda-samples git at $git_dir (revision $rev)" >&2; exit 1; }
start=$(date +%s)
rm -rf "$out" "$out.tar.xz"
mkdir -p "$out/src" "$out/shared" "$out/static" "$out/data" "$out/obj" "$out/build-logs" "$out/status"
out=$(cd "$out" && pwd)

# Sources: Common/ and each sample's folder, without doc/ and .vscode/ (the mirror lacks
# some doc blobs).
paths=(Common)
for entry in "${SAMPLES[@]}"; do
  dir=${entry%%|*}
  while read -r p; do
    case ${p##*/} in doc|.vscode) ;; *) paths+=("$p") ;; esac
  done < <(git --git-dir="$git_dir" ls-tree --name-only "$rev" "Samples/$dir/")
done
# (file by file: git archive trips over the missing doc blobs even when they are left out)
git --git-dir="$git_dir" ls-tree -r "$rev" -- "${paths[@]}" |
  while IFS=$'\t' read -r meta path; do
    read -r mode _ hash <<<"$meta"
    case $path in */doc/*|*/.vscode/*) continue ;; esac
    mkdir -p "$out/src/$(dirname "$path")"
    if [[ $mode == 120000 ]]; then
      ln -s "$(git --git-dir="$git_dir" cat-file blob "$hash")" "$out/src/$path"
    else
      git --git-dir="$git_dir" cat-file blob "$hash" >"$out/src/$path"
    fi
  done
src=$out/src

build_one() {  # build_one <dir>|<flags>|<args>: writes status/<name> ("ok" or the reason)
  local dir flags name sdir obj log srcs=() objs=() f
  IFS='|' read -r dir flags _ <<<"$1"
  name=${dir##*/}
  sdir=$src/Samples/$dir
  obj=$out/obj/$name
  log=$out/build-logs/$name.log
  mkdir -p "$obj"
  # The sources of the sample's add_executable(), else every .cu/.cpp/.c in its folder.
  read -r -a srcs < <(sed -n "s/^[[:space:]]*add_executable([[:space:]]*$name[[:space:]]\+\([^)]*\)).*/\1/p" \
                        "$sdir/CMakeLists.txt" 2>/dev/null | head -1) || true
  if ((${#srcs[@]} == 0)); then
    mapfile -t srcs < <(cd "$sdir" && ls -- *.cu *.cpp *.c 2>/dev/null)
  fi
  local -a fl=() cfl=() lfl=()  # all flags; compile-only (no -l); link-only (-l)
  read -r -a fl <<<"$flags" || true
  for f in "${fl[@]}"; do if [[ $f == -l* ]]; then lfl+=("$f"); else cfl+=("$f"); fi; done
  local inc=(-I "$src/Common" -I "$sdir")
  [[ -d $sdir/inc ]] && inc+=(-I "$sdir/inc")
  : >"$log"
  for f in "${srcs[@]}"; do
    local o=$obj/${f//\//_}.o
    echo "+ nvcc ${cfl[*]} ${inc[*]} -c $f" >>"$log"
    if ! (cd "$sdir" && "$nvcc" "${cfl[@]}" "${inc[@]}" -c "$f" -o "$o") >>"$log" 2>&1; then
      echo "compile: $(grep -m1 -E 'error|fatal' "$log" | sed "s|$src/||g" | cut -c1-150)" >"$out/status/$name"
      return
    fi
    objs+=("$o")
  done
  mkdir -p "$out/shared/$name" "$out/static/$name"
  echo "+ nvcc -cudart shared ${fl[*]} -o shared/$name/$name" >>"$log"
  if ! "$nvcc" -cudart shared "${cfl[@]}" "${objs[@]}" "${lfl[@]}" -o "$out/shared/$name/$name" >>"$log" 2>&1; then
    echo "link (shared): $(grep -m1 -E 'error|undefined' "$log" | cut -c1-150)" >"$out/status/$name"
    return
  fi
  echo "+ nvcc ${fl[*]} -o static/$name/$name" >>"$log"
  if ! "$nvcc" "${cfl[@]}" "${objs[@]}" "${lfl[@]}" -o "$out/static/$name/$name" >>"$log" 2>&1; then
    echo "link (static): $(grep -m1 -E 'error|undefined' "$log" | cut -c1-150)" >"$out/status/$name"
    return
  fi
  strip --strip-all "$out/shared/$name/$name" "$out/static/$name/$name"
  if [[ -d $sdir/data ]]; then
    cp -a "$sdir/data" "$out/data/$name"
    ln -s "../../data/$name" "$out/shared/$name/data"
    ln -s "../../data/$name" "$out/static/$name/data"
  fi
  echo ok >"$out/status/$name"
}

echo "building ${#SAMPLES[@]} samples with $("$nvcc" --version | tail -1), $jobs at a time"
running=0
for entry in "${SAMPLES[@]}"; do
  build_one "$entry" &
  running=$((running + 1))
  if ((running >= jobs)); then wait -n || true; running=$((running - 1)); fi
done
wait

# The list the runner reads (built samples only), what was left out, and a table.
: >"$out/samples.list"
{
  echo "# Samples of NVIDIA/cuda-samples $(git --git-dir="$git_dir" rev-parse "$rev") not built, and why."
  for entry in "${EXCLUDED[@]}"; do printf '%-60s %s\n' "${entry%%|*}" "${entry#*|}"; done
} >"$out/excluded.txt"
built=0 failed=0
printf '%-28s %-26s %-20s %9s %9s %s\n' sample folder flags shared static data
for entry in "${SAMPLES[@]}"; do
  IFS='|' read -r dir flags args <<<"$entry"
  name=${dir##*/}
  status=$(cat "$out/status/$name" 2>/dev/null || echo "not built")
  if [[ $status == ok ]]; then
    built=$((built + 1))
    printf '%s\t%s\t%s\n' "$name" "$dir" "$args" >>"$out/samples.list"
    printf '%-28s %-26s %-20s %8sK %8sK %s\n' "$name" "${dir%%/*}" "${flags:--}" \
      $(( $(stat -c %s "$out/shared/$name/$name") / 1024 )) \
      $(( $(stat -c %s "$out/static/$name/$name") / 1024 )) \
      "$([[ -d $out/data/$name ]] && du -sh "$out/data/$name" | cut -f1 || echo -)"
  else
    failed=$((failed + 1))
    printf '%-60s %s\n' "$dir" "does not compile here: $status" >>"$out/excluded.txt"
    printf '%-28s %-26s FAILED: %s\n' "$name" "${dir%%/*}" "$status"
  fi
done
{
  echo "cuda-samples $(git --git-dir="$git_dir" rev-parse "$rev")"
  "$nvcc" --version | tail -2
  echo "built $(date -u +%FT%TZ) on $(uname -srm); default nvcc target (sm_75 SASS + compute_75 PTX)"
} >"$out/BUILD-INFO"
cp "$here/gpu-samples.sh" "$out/gpu-samples.sh"
echo "built $built samples, $failed failed to compile, ${#EXCLUDED[@]} excluded (see $out/excluded.txt)"

# The tarball: binaries, data, list, runner (no sources, objects or build logs).
base=$(basename "$out")
tar -C "$(dirname "$out")" --owner=0 --group=0 --sort=name -cf - \
    "$base/shared" "$base/static" "$base/data" "$base/samples.list" "$base/excluded.txt" \
    "$base/BUILD-INFO" "$base/gpu-samples.sh" | xz -9 -T"$jobs" >"$out.tar.xz"
size=$(stat -c %s "$out.tar.xz")
echo "packed $out.tar.xz: $(numfmt --to=iec-i --suffix=B "$size") ($size bytes); took $(( $(date +%s) - start )) s"
(( size < 35 * 1024 * 1024 )) || echo "WARNING: $out.tar.xz is over 35 MiB" >&2
