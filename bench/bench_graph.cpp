// CUDA graphs versus the same work submitted to a stream (issue 16), printed as ratios against
// the stream baseline measured in the same run:
//   * 100 tiny kernels launched one by one on a stream, then synchronised;
//   * the same 100 kernels captured into a graph, instantiated once, launched, synchronised;
//   * instantiation of that graph.
// Targets: on the mock, a graph launch costs <= 1.2x the stream submission; on an H100 through
// the cuda backend, >= 0.95x of NVIDIA's driver used directly (run this program both ways).
// The kernel comes from NVRTC (cudamux's libnvrtc); CUDAMUX_BENCH_PTX=1 loads PTX instead,
// for running against NVIDIA's driver directly.
#include <cuda.h>
#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    (void)cuGetErrorName(r, &name);
    std::fprintf(stderr, "%s failed: %s\n", what, name ? name : "?");
    std::exit(1);
  }
}

constexpr char kSource[] =
    R"(extern "C" __global__ void tick(int* p) { if (p) p[threadIdx.x] += 1; })";
constexpr char kPtx[] = R"(
.version 7.0
.target sm_75
.address_size 64
.visible .entry tick(.param .u64 tick_p)
{
  .reg .pred %p<2>;
  .reg .b32 %r<3>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [tick_p];
  setp.eq.s64 %p1, %rd1, 0;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.u32 %r2, [%rd4];
  add.s32 %r2, %r2, 1;
  st.global.u32 [%rd4], %r2;
DONE:
  ret;
}
)";

std::string kernel_image() {
  const char* ptx = std::getenv("CUDAMUX_BENCH_PTX");
  if (ptx && *ptx == '1') return kPtx;
  nvrtcProgram prog = nullptr;
  if (nvrtcCreateProgram(&prog, kSource, "tick.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS ||
      nvrtcCompileProgram(prog, 0, nullptr) != NVRTC_SUCCESS) {
    std::fprintf(stderr, "NVRTC failed\n");
    std::exit(1);
  }
  size_t size = 0;
  (void)nvrtcGetPTXSize(prog, &size);
  std::string image(size, '\0');
  (void)nvrtcGetPTX(prog, image.data());
  (void)nvrtcDestroyProgram(&prog);
  return image;
}

using Clock = std::chrono::steady_clock;

template <class F>
double median_us(int reps, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto a = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
  constexpr int kKernels = 100;
  constexpr int kReps = 50;
  check(cuInit(0), "cuInit");
  CUdevice dev{};
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext ctx{};
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  const std::string image = kernel_image();
  CUmodule mod{};
  check(cuModuleLoadData(&mod, image.data()), "cuModuleLoadData");
  CUfunction tick{};
  check(cuModuleGetFunction(&tick, mod, "tick"), "cuModuleGetFunction");
  CUstream s{};
  check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUdeviceptr buf{};
  check(cuMemAlloc(&buf, 32 * sizeof(int)), "cuMemAlloc");
  void* args[] = {&buf};

  const auto submit = [&] {
    for (int i = 0; i < kKernels; ++i)
      check(cuLaunchKernel(tick, 1, 1, 1, 32, 1, 1, 0, s, args, nullptr), "cuLaunchKernel");
  };
  // Warm up (the first launch compiles or loads the kernel).
  submit();
  check(cuStreamSynchronize(s), "cuStreamSynchronize");

  check(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture");
  submit();
  CUgraph graph{};
  check(cuStreamEndCapture(s, &graph), "cuStreamEndCapture");
  CUgraphExec exec{};
  const double instantiate = median_us(kReps, [&] {
    CUgraphExec x{};
    check(cuGraphInstantiate(&x, graph, 0), "cuGraphInstantiate");
    check(cuGraphExecDestroy(x), "cuGraphExecDestroy");
  });
  check(cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
  check(cuGraphLaunch(exec, s), "cuGraphLaunch");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");

  const double stream_us = median_us(kReps, [&] {
    submit();
    check(cuStreamSynchronize(s), "cuStreamSynchronize");
  });
  const double graph_us = median_us(kReps, [&] {
    check(cuGraphLaunch(exec, s), "cuGraphLaunch");
    check(cuStreamSynchronize(s), "cuStreamSynchronize");
  });
  const char* backend = std::getenv("CUDAMUX_BACKEND");
  std::printf("graph of %d kernels (backend %s), median of %d runs\n", kKernels,
              backend ? backend : "default", kReps);
  std::printf("  stream submission + sync : %9.1f us (baseline 1.00x)\n", stream_us);
  std::printf("  graph launch + sync      : %9.1f us (%.2fx of the stream; target <= 1.2x)\n",
              graph_us, graph_us / stream_us);
  std::printf("  graph instantiation      : %9.1f us (%.2fx of one stream submission)\n",
              instantiate, instantiate / stream_us);

  check(cuGraphExecDestroy(exec), "cuGraphExecDestroy");
  check(cuGraphDestroy(graph), "cuGraphDestroy");
  check(cuMemFree(buf), "cuMemFree");
  check(cuStreamDestroy(s), "cuStreamDestroy");
  check(cuModuleUnload(mod), "cuModuleUnload");
  check(cuDevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");
  return 0;
}
