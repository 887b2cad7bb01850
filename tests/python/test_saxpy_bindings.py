"""The seed program in its original language: SAXPY with NVIDIA's Python bindings
(cuda.bindings driver + nvrtc, numpy), unmodified, on our libcuda.so.1 and libnvrtc.so.13.
Exit 77 (skipped) while the backend has no kernel compiler or module loader."""
import ctypes
import os
import sys

import numpy as np
from cuda.bindings import driver, nvrtc

SKIP = 77

saxpy = """\
extern "C" __global__
void saxpy(float a, float *x, float *y, float *out, size_t n)
{
  size_t tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid < n) {
    out[tid] = a * x[tid] + y[tid];
  }
}
"""


def check(result):
    err = result[0]
    if isinstance(err, driver.CUresult) and err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA error {err}")
    if isinstance(err, nvrtc.nvrtcResult) and err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"NVRTC error {err}")
    return result[1] if len(result) == 2 else result[1:]


def main():
    # The NVRTC in this process must be ours (preloaded by run.sh).
    want = os.environ.get("CUDAMUX_EXPECT_LIBNVRTC")
    if want:
        loaded = open("/proc/self/maps").read()
        if os.path.realpath(want) not in loaded:
            ctypes.CDLL(want)  # cuda-python then finds this one already loaded
    check(driver.cuInit(0))
    dev = check(driver.cuDeviceGet(0))
    major = check(driver.cuDeviceGetAttribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
    minor = check(driver.cuDeviceGetAttribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))

    prog = check(nvrtc.nvrtcCreateProgram(str.encode(saxpy), b"saxpy.cu", 0, [], []))
    opts = [b"--fmad=false", f"--gpu-architecture=compute_{major}{minor}".encode()]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        size = check(nvrtc.nvrtcGetProgramLogSize(prog))
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        print(log.decode(errors="replace"))
        if err == nvrtc.nvrtcResult.NVRTC_ERROR_COMPILATION:
            return 1
        print(f"SKIP: no kernel compiler available ({err})")
        return SKIP
    ptx_size = check(nvrtc.nvrtcGetPTXSize(prog))
    ptx = b" " * ptx_size
    check(nvrtc.nvrtcGetPTX(prog, ptx))
    check(nvrtc.nvrtcDestroyProgram(prog))

    ctx = check(driver.cuCtxCreate(None, 0, dev))
    ptx = np.char.array(ptx)
    err, module = driver.cuModuleLoadData(ptx.ctypes.data)
    if err == driver.CUresult.CUDA_ERROR_NOT_SUPPORTED:
        print("SKIP: cuModuleLoadData is not supported by this backend yet")
        check(driver.cuCtxDestroy(ctx))
        return SKIP
    check((err, module))
    kernel = check(driver.cuModuleGetFunction(module, b"saxpy"))

    num_threads, num_blocks = 512, 32768
    n = np.array(num_threads * num_blocks, dtype=np.uint64)
    buffer_size = int(n) * np.dtype(np.float32).itemsize
    a = np.array([2.0], dtype=np.float32)
    rng = np.random.default_rng(1)
    h_x = rng.random(int(n), dtype=np.float32)
    h_y = rng.random(int(n), dtype=np.float32)
    h_out = np.zeros(int(n), dtype=np.float32)

    d_x = check(driver.cuMemAlloc(buffer_size))
    d_y = check(driver.cuMemAlloc(buffer_size))
    d_out = check(driver.cuMemAlloc(buffer_size))
    stream = check(driver.cuStreamCreate(0))
    check(driver.cuMemcpyHtoDAsync(d_x, h_x.ctypes.data, buffer_size, stream))
    check(driver.cuMemcpyHtoDAsync(d_y, h_y.ctypes.data, buffer_size, stream))

    x_arg = np.array([int(d_x)], dtype=np.uint64)
    y_arg = np.array([int(d_y)], dtype=np.uint64)
    out_arg = np.array([int(d_out)], dtype=np.uint64)
    args = [a, x_arg, y_arg, out_arg, n]
    args = np.array([arg.ctypes.data for arg in args], dtype=np.uint64)
    check(driver.cuLaunchKernel(kernel, num_blocks, 1, 1, num_threads, 1, 1, 0, stream, args.ctypes.data, 0))
    check(driver.cuMemcpyDtoHAsync(h_out.ctypes.data, d_out, buffer_size, stream))
    check(driver.cuStreamSynchronize(stream))

    expected = a[0] * h_x + h_y
    ok = np.allclose(h_out, expected) and np.array_equal(h_out, expected)
    check(driver.cuStreamDestroy(stream))
    check(driver.cuMemFree(d_x))
    check(driver.cuMemFree(d_y))
    check(driver.cuMemFree(d_out))
    check(driver.cuModuleUnload(module))
    check(driver.cuCtxDestroy(ctx))
    if not ok:
        print("saxpy: wrong results")
        return 1
    print(f"saxpy: {int(n)} elements correct")
    return 0


if __name__ == "__main__":
    sys.exit(main())
