"""cuda.core (NVIDIA's pythonic CUDA, from PyPI) on cudamux: a self-checking program.

Compiles a kernel with Program (NVRTC: ours), launches it with launch() on two streams ordered
by an event, allocates from a memory resource (a stream-ordered pool), copies back and checks;
then a cooperative launch whose grid.sync() must hold every block back.
Run by run_cuda_core.sh with our libcuda.so.1 and libnvrtc.so.13.
"""

import os
import sys

import numpy as np
from cuda.core import (
    Buffer,
    Device,
    EventOptions,
    LaunchConfig,
    LegacyPinnedMemoryResource,
    Program,
    ProgramOptions,
    launch,
)


def check_loaded(env, soname):
    """The library named by env (ours) is the one mapped for soname, not NVIDIA's."""
    want = os.environ.get(env)
    if not want:
        return
    stem = soname.split(".so")[0] + ".so"
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "/" in line}
    real = {os.path.realpath(p) for p in paths if os.path.basename(p).startswith(stem)}
    if real != {os.path.realpath(want)}:
        sys.exit(f"FAIL: {soname} mapped from {sorted(real)}, expected {want}")


def main():
    dev = Device()
    dev.set_current()
    check_loaded("CUDAMUX_EXPECT_LIBCUDA", "libcuda.so.1")
    code = r"""
    template <typename T>
    __global__ void axpy(T a, const T* x, T* y, size_t n) {
        size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }
    extern "C" __global__ void square(float* y, size_t n) {
        size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
        if (i < n) y[i] = y[i] * y[i];
    }
    """
    prog = Program(code, "c++", ProgramOptions(std="c++17", arch=f"sm_{dev.arch}"))
    mod = prog.compile("cubin", name_expressions=("axpy<float>",))
    check_loaded("CUDAMUX_EXPECT_LIBNVRTC", "libnvrtc.so.13")
    axpy = mod.get_kernel("axpy<float>")
    square = mod.get_kernel("square")

    n = 3000
    rng = np.random.default_rng(7)
    hx = rng.standard_normal(n).astype(np.float32)
    hy = rng.standard_normal(n).astype(np.float32)
    a = np.float32(1.5)

    s1 = dev.create_stream()
    s2 = dev.create_stream()
    pinned = LegacyPinnedMemoryResource()
    host = pinned.allocate(3 * n * 4)  # x | y | result
    hview = np.from_dlpack(host).view(np.float32)
    hview[:n] = hx
    hview[n : 2 * n] = hy
    hview[2 * n :] = -1.0

    mr = dev.memory_resource  # the device's stream-ordered pool
    dx = mr.allocate(n * 4, stream=s1)
    dy = mr.allocate(n * 4, stream=s1)
    assert dx.size == n * 4 and dy.size == n * 4 and int(dx.handle) != int(dy.handle)
    # Host to device: the two halves of the pinned buffer.
    Buffer.from_handle(int(host.handle), n * 4).copy_to(dx, stream=s1)
    Buffer.from_handle(int(host.handle) + n * 4, n * 4).copy_to(dy, stream=s1)

    cfg = LaunchConfig(grid=(n + 255) // 256, block=256)
    launch(s1, cfg, axpy, a, dx, dy, np.uint64(n))
    # s2 squares y only after s1's axpy: the event orders the streams.
    done = s1.record(options=EventOptions(timing_enabled=True))
    s2.wait(done)
    launch(s2, cfg, square, dy, np.uint64(n))
    end = s2.record(options=EventOptions(timing_enabled=True))
    dy.copy_to(Buffer.from_handle(int(host.handle) + 2 * n * 4, n * 4), stream=s2)
    s2.sync()
    assert end.is_done
    elapsed = end - done
    assert elapsed >= 0.0, elapsed

    want = (a * hx + hy) ** 2
    got = hview[2 * n :]
    if not np.allclose(got, want, rtol=1e-5, atol=1e-5):
        bad = int(np.argmax(~np.isclose(got, want, rtol=1e-5, atol=1e-5)))
        sys.exit(f"FAIL: y[{bad}] = {got[bad]}, expected {want[bad]}")

    dx.close(s1)
    dy.close(s2)
    s1.sync()
    s2.sync()

    # A cooperative launch: every thread counts itself, then grid.sync(); block 0 reads the
    # count, which is whole only if the grid-wide barrier held every block back.
    cg_code = r"""
    #include <cooperative_groups.h>
    extern "C" __global__ void count_then_sync(unsigned* c) {
        atomicAdd(&c[0], 1u);
        cooperative_groups::this_grid().sync();
        if (blockIdx.x == 0 && threadIdx.x == 0) c[1] = *(volatile unsigned*)&c[0];
    }
    """
    include = os.path.join(os.environ.get("CUDA_PATH", "/usr/local/cuda"), "include")
    cg_opts = ProgramOptions(std="c++17", arch=f"sm_{dev.arch}", include_path=include)
    grid_sync = Program(cg_code, "c++", cg_opts).compile("cubin").get_kernel("count_then_sync")
    counts = pinned.allocate(8)
    cview = np.from_dlpack(counts).view(np.uint32)
    cview[:] = 0
    blocks, threads = 6, 64
    launch(s1, LaunchConfig(grid=blocks, block=threads, is_cooperative=True), grid_sync, counts)
    s1.sync()
    if list(cview) != [blocks * threads] * 2:
        sys.exit(f"FAIL: grid sync: counted {cview[0]}, block 0 saw {cview[1]}, expected {blocks * threads}")
    print(f"cuda.core on cudamux: axpy + square over {n} floats, grid sync of {blocks} blocks OK ({dev.name})")


if __name__ == "__main__":
    main()
