"""CuPy (cupy-cuda13x from PyPI) on the mock backend: its NVIDIA static runtime over our
libcuda.so.1, its kernels compiled by our libnvrtc.so.13 from CuPy's own headers and bundled
CCCL, run on the CPU. Each check compares with numpy; cuBLAS, absent here, must fail with an
error that names it. Exit 77 (skipped) where the mock has no C++ compiler."""
import os
import shutil
import sys

import numpy as np

SKIP = 77
failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + (f": {detail}" if detail and not ok else ""),
          flush=True)
    if not ok:
        failures.append(name)


def main():
    if shutil.which(os.environ.get("CUDAMUX_MOCK_CXX", "c++")) is None:
        print("SKIP: the mock has no C++ compiler")
        return SKIP
    import cupy as cp
    from cupy._core import _accelerator

    # CuPy's wheel carries CUB and Thrust device-wide algorithms precompiled (sort, argsort,
    # and sum/max/cumsum with the default 'cub' accelerators), as SASS plus PTX for
    # compute_120 only, which the mock runs in place of the SASS, at seconds to minutes of
    # compilation per kernel on first use. The accelerators are off here except where a check
    # turns one on (docs/conformance.md, "CuPy on the mock"); CuPy's own reduction and scan
    # kernels, compiled by our NVRTC, take their place.
    _accelerator.set_routine_accelerators([])
    _accelerator.set_reduction_accelerators([])

    # NVRTC and the driver in this process are ours (run_cupy.sh preloads our libnvrtc).
    maps = open("/proc/self/maps").read()
    for var in ("CUDAMUX_EXPECT_LIBNVRTC", "CUDAMUX_EXPECT_LIBCUDA"):
        want = os.environ.get(var)
        if want:
            check(f"{os.path.basename(want)} is ours", os.path.realpath(want) in maps, want)
    cp.cuda.runtime.free(cp.cuda.runtime.malloc(16))  # the runtime and a context are up
    check("NVRTC version is 13.x", cp.cuda.nvrtc.getVersion()[0] == 13,
          str(cp.cuda.nvrtc.getVersion()))

    rng = np.random.default_rng(7)
    h = rng.standard_normal(1000).astype(np.float32)
    x = cp.asarray(h)
    check("round trip", np.array_equal(x.get(), h))

    # Elementwise: CuPy's generated kernel for a fused expression over a strided view.
    y = cp.sin(x[::2]) * 2 + x[1::2]
    check("elementwise", np.allclose(y.get(), np.sin(h[::2]) * 2 + h[1::2], rtol=1e-5,
                                      atol=1e-5))
    k = cp.ElementwiseKernel("float32 a, float32 b", "float32 c", "c = a * b - 3", "mul_sub")
    check("ElementwiseKernel", np.allclose(k(x, x).get(), h * h - 3, rtol=1e-5, atol=1e-5))

    # RawKernel and a RawModule template through name expressions (nvrtcGetLoweredName).
    raw = cp.RawKernel(r'''
extern "C" __global__ void axpb(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + (float)i;
}''', "axpb")
    out = cp.zeros_like(x)
    raw(((x.size + 127) // 128,), (128,), (x, out, cp.float32(1.5), cp.int32(x.size)))
    check("RawKernel", np.allclose(out.get(), 1.5 * h + np.arange(h.size), rtol=1e-5))
    mod = cp.RawModule(code=r'''
template <class T> __global__ void rev(const T* x, T* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[n - 1 - i] = x[i];
}''', name_expressions=["rev<long long>"])
    src = cp.arange(100, dtype=cp.int64)
    dst = cp.empty_like(src)
    mod.get_function("rev<long long>")((1,), (128,), (src, dst, cp.int32(100)))
    check("RawModule template", np.array_equal(dst.get(), np.arange(100)[::-1]))

    # What CuPy's test_raw.py reads from NVRTC and the driver: the log of a compile that
    # succeeds reports a variable declared and never used (NVRTC's warning; CuPy's kernel
    # cache is bypassed here, the mock's own keeps the log), and a name the module lacks is
    # CUDA's "named symbol not found".
    from cupy_backends.cuda.libs import nvrtc as cupy_nvrtc
    prog = cupy_nvrtc.createProgram(
        'extern "C" __global__ void unused_var(float* y) { int j; y[0] = 1.0f; }', "w.cu", [], [])
    cupy_nvrtc.compileProgram(prog, ["-arch=compute_90"])
    nvrtc_log = cupy_nvrtc.getProgramLog(prog)
    cupy_nvrtc.destroyProgram(prog)
    check("NVRTC log warns of an unused variable", "warning" in nvrtc_log, repr(nvrtc_log))
    try:
        mod.get_function("no_such_kernel")
        check("missing kernel: named symbol not found", False, "get_function did not fail")
    except cp.cuda.driver.CUDADriverError as e:
        check("missing kernel: named symbol not found", "named symbol not found" in str(e),
              str(e))

    # Reductions and scans: CuPy's own kernels (shared memory, __syncthreads) and a
    # ReductionKernel over an axis.
    m = rng.integers(-1000, 1000, size=(37, 300)).astype(np.int64)
    dm = cp.asarray(m)
    check("sum over axis 1", np.array_equal(dm.sum(axis=1).get(), m.sum(axis=1)))
    check("max", int(dm.max()) == int(m.max()))
    check("cumsum", np.array_equal(cp.cumsum(dm, axis=1).get(), np.cumsum(m, axis=1)))
    l2 = cp.ReductionKernel("T v", "T out", "v * v", "a + b", "out = a", "0", "sumsq")
    check("ReductionKernel", np.array_equal(l2(dm, axis=0).get(), (m * m).sum(axis=0)))

    # CUB compiled by our NVRTC from CuPy's bundled CCCL: block-wide sort and scan.
    cubmod = cp.RawModule(code=r'''
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>
extern "C" __global__ void sort_scan(const int* in, int* sorted, int* scanned) {
  using Sort = cub::BlockRadixSort<int, 128, 4>;
  using Scan = cub::BlockScan<int, 128>;
  __shared__ union { typename Sort::TempStorage sort; typename Scan::TempStorage scan; } tmp;
  int k[4];
  for (int j = 0; j < 4; ++j) k[j] = in[threadIdx.x * 4 + j];
  Sort(tmp.sort).SortBlockedToStriped(k);
  for (int j = 0; j < 4; ++j) sorted[j * 128 + threadIdx.x] = k[j];
  __syncthreads();
  int v = in[threadIdx.x], sum;
  Scan(tmp.scan).InclusiveSum(v, sum);
  scanned[threadIdx.x] = sum;
}''', options=("--std=c++17",))
    keys = rng.integers(-10**6, 10**6, size=512).astype(np.int32)
    dk = cp.asarray(keys)
    sorted_out = cp.empty_like(dk)
    scanned = cp.empty(128, dtype=cp.int32)
    cubmod.get_function("sort_scan")((1,), (128,), (dk, sorted_out, scanned))
    check("CUB BlockRadixSort", np.array_equal(sorted_out.get(), np.sort(keys)))
    check("CUB BlockScan", np.array_equal(scanned.get(), np.cumsum(keys[:128])))
    # CuPy's 'cub' reduction accelerator: CUB block reductions that CuPy generates and our
    # NVRTC compiles from CuPy's bundled CCCL; its warp shuffles move a {double, int} struct
    # through `unsigned` words (float64 max once kept only lane 0 of each warp: 899 here).
    _accelerator.set_reduction_accelerators(["cub"])
    d = cp.asarray(rng.permutation(1000).astype(np.float64))
    check("CUB block reduction float64 max", float(d.max()) == 999.0, str(d.max()))
    check("CUB block reduction float64 argmin", int(d.argmin()) == int(np.argmin(d.get())),
          str(d.argmin()))
    _accelerator.set_reduction_accelerators([])
    # The precompiled CUB of CuPy's default 'cub' routine accelerator (SASS up to sm_120, PTX
    # for compute_120 only): a GPU of CC 9.0 runs its sm_90 SASS; the mock runs the PTX in its
    # place (it used to refuse, and CuPy, which does not check, returned 0 for every sum).
    _accelerator.set_routine_accelerators(["cub"])
    check("precompiled CUB sum (compute_120 PTX at CC 9.0)",
          float(cp.arange(1000, dtype=cp.float64).sum()) == 499500.0)
    _accelerator.set_routine_accelerators([])

    # cuBLAS is not part of cudamux: matmul must raise, naming the library.
    try:
        cp.matmul(cp.ones((4, 4), cp.float32), cp.ones((4, 4), cp.float32)).get()
        check("matmul names the missing cuBLAS", False, "matmul did not fail")
    except Exception as e:  # noqa: BLE001 - any Python error is fine, a crash is not
        check("matmul names the missing cuBLAS", "cublas" in str(e).lower(),
              f"{type(e).__name__}: {e}")

    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
