// Runtime API benchmarks on the mock backend: the cost a runtime call adds over the
// driver entry point underneath it, both measured in the same run (issue 4 target:
// <= 10 ns added per call). Printed as the difference and the ratio of the two.
//   cudaStreamQuery(s)  vs  cuStreamQuery(s)
//   cudaGetDevice(&d)   vs  cuCtxGetDevice(&d)
// Run: build/bin/bench_runtime
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

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
