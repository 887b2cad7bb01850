"""NVIDIA's Python bindings (cuda.bindings.nvrtc) drive our libnvrtc.so.13 on the "nvrtctest"
backend. run_python.sh preloads ours, so cuda-python's soname lookup finds it first."""
import os
import sys

from cuda.bindings import nvrtc

R = nvrtc.nvrtcResult


def check(cond, what):
    if not cond:
        print("FAILED:", what)
        sys.exit(1)


def main():
    expect = os.environ["CUDAMUX_EXPECT_LIBNVRTC"]
    err, major, minor = nvrtc.nvrtcVersion()
    check(err == R.NVRTC_SUCCESS and (major, minor) == (13, 0), f"nvrtcVersion -> {err} {major}.{minor}")
    with open("/proc/self/maps") as f:
        maps = f.read()
    check(os.path.realpath(expect) in maps, f"{expect} is not the loaded libnvrtc")

    src = b'extern "C" __global__ void saxpy(float a, float* x) { x[threadIdx.x] *= a; }\n'
    err, prog = nvrtc.nvrtcCreateProgram(src, b"saxpy.cu", 0, [], [])
    check(err == R.NVRTC_SUCCESS, f"nvrtcCreateProgram -> {err}")
    opts = [b"--fmad=false", b"--gpu-architecture=compute_80"]
    err, = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    check(err == R.NVRTC_SUCCESS, f"nvrtcCompileProgram -> {err}")
    err, size = nvrtc.nvrtcGetPTXSize(prog)
    check(err == R.NVRTC_SUCCESS and size > 1, f"nvrtcGetPTXSize -> {err} {size}")
    ptx = b" " * size
    err, = nvrtc.nvrtcGetPTX(prog, ptx)
    check(err == R.NVRTC_SUCCESS, f"nvrtcGetPTX -> {err}")
    check(ptx.startswith(b"cudamux-test-image\n") and b"arch=80 real=0 fmad=0" in ptx, f"PTX {ptx[:80]!r}")

    bad = [b"--no-such-option"]
    err, = nvrtc.nvrtcCompileProgram(prog, 1, bad)
    check(err == R.NVRTC_ERROR_INVALID_OPTION, f"bad option -> {err}")
    err, logsize = nvrtc.nvrtcGetProgramLogSize(prog)
    log = b" " * logsize
    nvrtc.nvrtcGetProgramLog(prog, log)
    check(b"--no-such-option" in log, f"log {log!r}")

    err, s = nvrtc.nvrtcGetErrorString(R.NVRTC_ERROR_COMPILATION)
    check(err == R.NVRTC_SUCCESS and s == b"NVRTC_ERROR_COMPILATION", f"nvrtcGetErrorString -> {err} {s!r}")
    err, = nvrtc.nvrtcDestroyProgram(prog)
    check(err == R.NVRTC_SUCCESS, f"nvrtcDestroyProgram -> {err}")
    print("cuda.bindings.nvrtc on cudamux: OK")


main()
