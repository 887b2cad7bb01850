// Runtime API benchmarks on the mock backend: the cost a runtime call adds over the
// driver entry point underneath it, both measured in the same run (issue 4 target:
// <= 10 ns added per call). Printed as the difference and the ratio of the two.
//   cudaStreamQuery(s)  vs  cuStreamQuery(s)
//   cudaGetDevice(&d)   vs  cuCtxGetDevice(&d)
//   cudaFuncGetName(k)  vs  cuKernelGetName(k): what resolving a `const void* func` costs
//                           (registry, then the handle tables), k an NVRTC-compiled cudaKernel_t
//   cudaLaunchKernel(k) + cudaStreamSynchronize  vs  cuLaunchKernel + cuStreamSynchronize:
//                           one empty kernel launched and waited for (the mock's queue hand-off
//                           dominates; queued launches without waiting measure the queue, not us)
// (the kernel pairs need NVRTC at build time)
// Run: build/bin/bench_runtime
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#ifdef CUDAMUX_BENCH_NVRTC
#include <nvrtc.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace {

struct State {
  cudaStream_t stream{};
  State() {
    if (cudaSetDevice(0) != cudaSuccess ||
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
      std::fprintf(stderr, "runtime set-up failed\n");
      std::exit(1);
    }
  }
};
State& state() {
  static State s;
  return s;
}

void BM_cuStreamQuery(benchmark::State& st) {
  CUstream s = state().stream;
  for (auto _ : st) benchmark::DoNotOptimize(cuStreamQuery(s));
}
void BM_cudaStreamQuery(benchmark::State& st) {
  cudaStream_t s = state().stream;
  for (auto _ : st) benchmark::DoNotOptimize(cudaStreamQuery(s));
}
void BM_cuCtxGetDevice(benchmark::State& st) {
  (void)state();
  CUdevice d{};
  for (auto _ : st) {
    benchmark::DoNotOptimize(cuCtxGetDevice(&d));
    benchmark::DoNotOptimize(d);
  }
}
void BM_cudaGetDevice(benchmark::State& st) {
  (void)state();
  int d = 0;
  for (auto _ : st) {
    benchmark::DoNotOptimize(cudaGetDevice(&d));
    benchmark::DoNotOptimize(d);
  }
}
#ifdef CUDAMUX_BENCH_NVRTC
// An empty kernel as a library kernel (the runtime resolves it through the handle tables).
cudaKernel_t empty_kernel() {
  static cudaKernel_t k = [] {
    const char* src = "extern \"C\" __global__ void empty(int) {}";
    nvrtcProgram prog;
    size_t size = 0;
    const char* opts[] = {"--gpu-architecture=compute_90"};
    if (nvrtcCreateProgram(&prog, src, "empty.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS ||
        nvrtcCompileProgram(prog, 1, opts) != NVRTC_SUCCESS ||
        nvrtcGetPTXSize(prog, &size) != NVRTC_SUCCESS) {
      std::fprintf(stderr, "NVRTC failed\n");
      std::exit(1);
    }
    std::vector<char> ptx(size);
    (void)nvrtcGetPTX(prog, ptx.data());
    nvrtcDestroyProgram(&prog);
    cudaLibrary_t lib = nullptr;
    cudaKernel_t kernel = nullptr;
    if (cudaLibraryLoadData(&lib, ptx.data(), nullptr, nullptr, 0, nullptr, nullptr, 0) !=
            cudaSuccess ||
        cudaLibraryGetKernel(&kernel, lib, "empty") != cudaSuccess) {
      std::fprintf(stderr, "loading the kernel failed\n");
      std::exit(1);
    }
    return kernel;
  }();
  return k;
}
void BM_cuLaunchKernel(benchmark::State& st) {
  cudaStream_t s = state().stream;
  const auto f = reinterpret_cast<CUfunction>(empty_kernel());
  int arg = 0;
  void* args[] = {&arg};
  for (auto _ : st) {
    benchmark::DoNotOptimize(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, nullptr));
    benchmark::DoNotOptimize(cuStreamSynchronize(s));
  }
}
void BM_cudaLaunchKernel(benchmark::State& st) {
  cudaStream_t s = state().stream;
  const void* k = empty_kernel();
  int arg = 0;
  void* args[] = {&arg};
  for (auto _ : st) {
    benchmark::DoNotOptimize(cudaLaunchKernel(k, dim3(1), dim3(1), args, 0, s));
    benchmark::DoNotOptimize(cudaStreamSynchronize(s));
  }
}
void BM_cuKernelGetName(benchmark::State& st) {
  const auto k = reinterpret_cast<CUkernel>(empty_kernel());
  const char* name = nullptr;
  for (auto _ : st) {
    benchmark::DoNotOptimize(cuKernelGetName(&name, k));
    benchmark::DoNotOptimize(name);
  }
}
void BM_cudaFuncGetName(benchmark::State& st) {
  const void* k = empty_kernel();
  const char* name = nullptr;
  for (auto _ : st) {
    benchmark::DoNotOptimize(cudaFuncGetName(&name, k));
    benchmark::DoNotOptimize(name);
  }
}
BENCHMARK(BM_cuKernelGetName);
BENCHMARK(BM_cudaFuncGetName);
BENCHMARK(BM_cuLaunchKernel);
BENCHMARK(BM_cudaLaunchKernel);
#endif
BENCHMARK(BM_cuStreamQuery);
BENCHMARK(BM_cudaStreamQuery);
BENCHMARK(BM_cuCtxGetDevice);
BENCHMARK(BM_cudaGetDevice);

// Prints runtime-minus-driver per pair after the run.
class Reporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    // Single runs, or the median when repetitions are aggregated.
    for (const Run& r : runs)
      if (r.aggregate_name.empty() || r.aggregate_name == "median")
        ns_[r.run_name.function_name] = r.GetAdjustedCPUTime();
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    pair("cudaStreamQuery", "BM_cudaStreamQuery", "BM_cuStreamQuery");
    pair("cudaGetDevice", "BM_cudaGetDevice", "BM_cuCtxGetDevice");
    pair("cudaFuncGetName", "BM_cudaFuncGetName", "BM_cuKernelGetName");
    pair("cudaLaunchKernel", "BM_cudaLaunchKernel", "BM_cuLaunchKernel");
  }

 private:
  void pair(const char* what, const char* rt, const char* drv) {
    if (!ns_.count(rt) || !ns_.count(drv)) return;
    std::printf(
        "%-16s added %+.1f ns (CPU time) per call over the driver entry (ratio %.2fx; target <= 10 "
        "ns)\n",
        what, ns_[rt] - ns_[drv], ns_[rt] / ns_[drv]);
  }
  std::map<std::string, double> ns_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  Reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
