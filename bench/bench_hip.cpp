// The cost the hip backend (with the core and the generated entry points) adds per call,
// over calling the same HIP runtime directly: both sides call the fake HIP runtime of
// tests/hip_backend in the same run, so the difference is cudamux's. Run:
//   build/bin/bench_hip
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#define __HIP_PLATFORM_AMD__
#include <hip/hip_runtime_api.h>

namespace {

struct Direct {
  void* lib = nullptr;
  hipError_t (*hipStreamCreateWithPriority)(hipStream_t*, unsigned, int) = nullptr;
  hipError_t (*hipStreamQuery)(hipStream_t) = nullptr;
  hipError_t (*hipEventCreateWithFlags)(hipEvent_t*, unsigned) = nullptr;
  hipError_t (*hipEventQuery)(hipEvent_t) = nullptr;
  hipError_t (*hipDeviceGetAttribute)(int*, hipDeviceAttribute_t, int) = nullptr;
  hipError_t (*hipMemsetD32Async)(hipDeviceptr_t, int, size_t, hipStream_t) = nullptr;
  hipError_t (*hipStreamSynchronize)(hipStream_t) = nullptr;
  hipError_t (*hipMalloc)(void**, size_t) = nullptr;
  hipStream_t stream = nullptr;
  hipEvent_t event = nullptr;
  void* buffer = nullptr;
};
Direct& direct() {
  static Direct d = [] {
    Direct x;
    x.lib = dlopen(CUDAMUX_FAKE_HIP, RTLD_NOW | RTLD_LOCAL);
    if (x.lib == nullptr) {
      std::fprintf(stderr, "bench_hip: %s\n", dlerror());
      std::exit(1);
    }
#define R(f) x.f = reinterpret_cast<decltype(x.f)>(dlsym(x.lib, #f))
    R(hipStreamCreateWithPriority);
    R(hipStreamQuery);
    R(hipEventCreateWithFlags);
    R(hipEventQuery);
    R(hipDeviceGetAttribute);
    R(hipMemsetD32Async);
    R(hipStreamSynchronize);
    R(hipMalloc);
#undef R
    (void)x.hipStreamCreateWithPriority(&x.stream, hipStreamNonBlocking, 0);
    (void)x.hipEventCreateWithFlags(&x.event, hipEventDisableTiming);
    (void)x.hipMalloc(&x.buffer, 4096);
    return x;
  }();
  return d;
}

struct Ours {
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUevent event = nullptr;
  CUdeviceptr buffer = 0;
};
Ours& ours() {
  static Ours o = [] {
    Ours x;
    CUdevice dev = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuCtxCreate(&x.ctx, nullptr, 0, dev) != CUDA_SUCCESS ||
        cuStreamCreate(&x.stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
        cuEventCreate(&x.event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS ||
        cuMemAlloc(&x.buffer, 4096) != CUDA_SUCCESS) {
      std::fprintf(stderr, "bench_hip: cudamux on the hip backend over the fake did not start\n");
      std::exit(1);
    }
    return x;
  }();
  return o;
}

void BM_FakeDirect_StreamQuery(benchmark::State& state) {
  auto& d = direct();
  for (auto _ : state) benchmark::DoNotOptimize(d.hipStreamQuery(d.stream));
}
void BM_Cudamux_StreamQuery(benchmark::State& state) {
  auto& o = ours();
  for (auto _ : state) benchmark::DoNotOptimize(cuStreamQuery(o.stream));
}
void BM_FakeDirect_EventQuery(benchmark::State& state) {
  auto& d = direct();
  for (auto _ : state) benchmark::DoNotOptimize(d.hipEventQuery(d.event));
}
void BM_Cudamux_EventQuery(benchmark::State& state) {
  auto& o = ours();
  for (auto _ : state) benchmark::DoNotOptimize(cuEventQuery(o.event));
}
void BM_FakeDirect_DeviceGetAttribute(benchmark::State& state) {
  auto& d = direct();
  int v = 0;
  for (auto _ : state)
    benchmark::DoNotOptimize(d.hipDeviceGetAttribute(&v, hipDeviceAttributeMultiprocessorCount, 0));
}
void BM_Cudamux_DeviceGetAttribute(benchmark::State& state) {
  (void)ours();
  int v = 0;
  for (auto _ : state)
    benchmark::DoNotOptimize(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
}
// An enqueued operation: validation, registry lookup, stream ordering, then the HIP call.
void BM_FakeDirect_MemsetD32Async(benchmark::State& state) {
  auto& d = direct();
  for (auto _ : state) benchmark::DoNotOptimize(d.hipMemsetD32Async(d.buffer, 1, 1024, d.stream));
  (void)d.hipStreamSynchronize(d.stream);
}
void BM_Cudamux_MemsetD32Async(benchmark::State& state) {
  auto& o = ours();
  for (auto _ : state) benchmark::DoNotOptimize(cuMemsetD32Async(o.buffer, 1, 1024, o.stream));
  (void)cuStreamSynchronize(o.stream);
}

BENCHMARK(BM_FakeDirect_StreamQuery);
BENCHMARK(BM_Cudamux_StreamQuery);
BENCHMARK(BM_FakeDirect_EventQuery);
BENCHMARK(BM_Cudamux_EventQuery);
BENCHMARK(BM_FakeDirect_DeviceGetAttribute);
BENCHMARK(BM_Cudamux_DeviceGetAttribute);
BENCHMARK(BM_FakeDirect_MemsetD32Async);
BENCHMARK(BM_Cudamux_MemsetD32Async);

}  // namespace

int main(int argc, char** argv) {
  // The hip backend over the fake runtime, quiet (no call log), hermetic (no config file).
  setenv("CUDAMUX_BACKEND", "hip", 1);
  setenv("CUDAMUX_HIP_RUNTIME", CUDAMUX_FAKE_HIP, 1);
  setenv("FAKE_HIP_QUIET", "1", 1);
  setenv("XDG_CONFIG_HOME", "/nonexistent", 0);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
