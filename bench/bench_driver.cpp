// Driver API benchmarks on the mock backend. Every number is printed as a ratio
// against a baseline measured in the same run:
//   * per-call overhead: an API call through libcuda.so.1 versus the same operation
//     on the mock backend called directly (plugin loaded by us, no core);
//   * 64 MiB cuMemcpyHtoD / cuMemcpyDtoH versus plain memcpy of the same buffers.
// Targets (issue #2): <= 20 ns added per call; copies >= 0.9x of memcpy.
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <dlfcn.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "cudamux/backend.hpp"

namespace be = cudamux::backend;

namespace {

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "%s failed: %d\n", what, static_cast<int>(r));
    std::exit(1);
  }
}

// --- the driver through cudamux ---

struct DriverState {
  CUcontext ctx{};
  CUstream stream{};
  CUdeviceptr device{};
  std::vector<unsigned char> host;
  static constexpr std::size_t kCopyBytes = 64u << 20;

  DriverState() {
    check(cuInit(0), "cuInit");
    CUdevice dev{};
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check(cuMemAlloc(&device, kCopyBytes), "cuMemAlloc");
    host.assign(kCopyBytes, 0x5a);
  }
};
DriverState& driver() {
  static DriverState s;
  return s;
}

// --- the mock backend, called directly ---

struct DirectState {
  be::Backend* backend = nullptr;
  std::unique_ptr<be::DeviceContext> ctx;
  std::unique_ptr<be::Queue> queue;

  DirectState() {
    const char* dir = std::getenv("CUDAMUX_BENCH_PLUGIN");
    const std::string path = dir ? dir : CUDAMUX_MOCK_PLUGIN_PATH;
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      std::fprintf(stderr, "cannot load %s: %s\n", path.c_str(), dlerror());
      std::exit(1);
    }
    using Create = be::Backend* (*)(const be::PluginHost&, std::string&);
    auto create = reinterpret_cast<Create>(dlsym(lib, be::kCreateSymbol));
    be::PluginHost host;
    host.logger = std::make_shared<spdlog::logger>("bench", std::make_shared<spdlog::sinks::null_sink_mt>());
    std::string error;
    backend = create ? create(host, error) : nullptr;
    if (!backend) {
      std::fprintf(stderr, "mock backend did not start: %s\n", error.c_str());
      std::exit(1);
    }
    if (!backend->open_context(0, 0, ctx).ok() || !ctx->create_queue(CU_STREAM_NON_BLOCKING, 0, queue).ok()) {
      std::fprintf(stderr, "mock backend: no context/queue\n");
      std::exit(1);
    }
  }
};
DirectState& direct() {
  static DirectState s;
  return s;
}

// --- NVIDIA's driver called directly: the baseline for the cuda backend ---
// Loaded by full path (CUDAMUX_BENCH_NVIDIA_DRIVER, set by scripts/gpu-run.sh) like the
// cuda backend does; the BM_Nvidia_* benchmarks skip themselves when it is not set.
// It uses device 0's primary context, as the cuda backend does by default, so making
// it current here agrees with what the backend caches per thread.

struct NvidiaDirect {
  std::string error;
  CUresult (*cuStreamQuery)(CUstream) = nullptr;
  CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void*, std::size_t) = nullptr;
  CUresult (*cuMemcpyDtoH_v2)(void*, CUdeviceptr, std::size_t) = nullptr;
  CUstream stream{};
  CUdeviceptr device{};
  std::vector<unsigned char> host;

  NvidiaDirect() {
    const char* path = std::getenv("CUDAMUX_BENCH_NVIDIA_DRIVER");
    if (!path || !*path) {
      error = "CUDAMUX_BENCH_NVIDIA_DRIVER not set (no NVIDIA driver)";
      return;
    }
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!lib) {
      error = std::string("cannot load NVIDIA's driver: ") + dlerror();
      return;
    }
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn && error.empty()) error = std::string("NVIDIA's driver lacks ") + name;
    };
    CUresult (*init)(unsigned) = nullptr;
    CUresult (*retain)(CUcontext*, CUdevice) = nullptr;
    CUresult (*set_current)(CUcontext) = nullptr;
    CUresult (*create)(CUstream*, unsigned) = nullptr;
    CUresult (*alloc)(CUdeviceptr*, std::size_t) = nullptr;
    sym(init, "cuInit");
    sym(retain, "cuDevicePrimaryCtxRetain");
    sym(set_current, "cuCtxSetCurrent");
    sym(create, "cuStreamCreate");
    sym(alloc, "cuMemAlloc_v2");
    sym(cuStreamQuery, "cuStreamQuery");
    sym(cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2");
    sym(cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2");
    if (!error.empty()) return;
    CUcontext ctx{};
    if (init(0) || retain(&ctx, 0) || set_current(ctx) || create(&stream, CU_STREAM_NON_BLOCKING) ||
        alloc(&device, DriverState::kCopyBytes)) {
      error = "NVIDIA's driver: setup failed";
      return;
    }
    host.assign(DriverState::kCopyBytes, 0x5a);
  }
};
NvidiaDirect& nvidia() {
  static NvidiaDirect s;
  return s;
}

void BM_Nvidia_cuStreamQuery(benchmark::State& state) {
  auto& n = nvidia();
  if (!n.error.empty()) return state.SkipWithError(n.error.c_str());
  for (auto _ : state) benchmark::DoNotOptimize(n.cuStreamQuery(n.stream));
}
void BM_Nvidia_cuMemcpyHtoD_64MiB(benchmark::State& state) {
  auto& n = nvidia();
  if (!n.error.empty()) return state.SkipWithError(n.error.c_str());
  for (auto _ : state) check(n.cuMemcpyHtoD_v2(n.device, n.host.data(), DriverState::kCopyBytes), "cuMemcpyHtoD");
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * DriverState::kCopyBytes));
}
void BM_Nvidia_cuMemcpyDtoH_64MiB(benchmark::State& state) {
  auto& n = nvidia();
  if (!n.error.empty()) return state.SkipWithError(n.error.c_str());
  for (auto _ : state) check(n.cuMemcpyDtoH_v2(n.host.data(), n.device, DriverState::kCopyBytes), "cuMemcpyDtoH");
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * DriverState::kCopyBytes));
}

// --- per-call overhead ---

void BM_Direct_QueueQuery(benchmark::State& state) {
  auto& q = *direct().queue;
  for (auto _ : state) benchmark::DoNotOptimize(q.query());
}
void BM_Cudamux_cuStreamQuery(benchmark::State& state) {
  CUstream s = driver().stream;
  for (auto _ : state) benchmark::DoNotOptimize(cuStreamQuery(s));
}
void BM_Direct_ContextOrdinal(benchmark::State& state) {
  auto& c = *direct().ctx;
  for (auto _ : state) benchmark::DoNotOptimize(c.ordinal());
}
void BM_Cudamux_cuCtxGetDevice(benchmark::State& state) {
  (void)driver();
  CUdevice d{};
  for (auto _ : state) {
    benchmark::DoNotOptimize(cuCtxGetDevice(&d));
    benchmark::DoNotOptimize(d);
  }
}

// --- 64 MiB copies ---

void BM_Memcpy_64MiB(benchmark::State& state) {
  auto& s = driver();
  auto* dst = reinterpret_cast<void*>(s.device);
  for (auto _ : state) {
    std::memcpy(dst, s.host.data(), DriverState::kCopyBytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * DriverState::kCopyBytes));
}
void BM_Cudamux_cuMemcpyHtoD_64MiB(benchmark::State& state) {
  auto& s = driver();
  for (auto _ : state) check(cuMemcpyHtoD(s.device, s.host.data(), DriverState::kCopyBytes), "cuMemcpyHtoD");
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * DriverState::kCopyBytes));
}
void BM_Cudamux_cuMemcpyDtoH_64MiB(benchmark::State& state) {
  auto& s = driver();
  for (auto _ : state) check(cuMemcpyDtoH(s.host.data(), s.device, DriverState::kCopyBytes), "cuMemcpyDtoH");
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * DriverState::kCopyBytes));
}

BENCHMARK(BM_Direct_QueueQuery);
BENCHMARK(BM_Cudamux_cuStreamQuery);
BENCHMARK(BM_Direct_ContextOrdinal);
BENCHMARK(BM_Cudamux_cuCtxGetDevice);
BENCHMARK(BM_Memcpy_64MiB)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Cudamux_cuMemcpyHtoD_64MiB)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Cudamux_cuMemcpyDtoH_64MiB)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Nvidia_cuStreamQuery);
BENCHMARK(BM_Nvidia_cuMemcpyHtoD_64MiB)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Nvidia_cuMemcpyDtoH_64MiB)->Unit(benchmark::kMillisecond)->UseRealTime();

// Remembers each benchmark's time per iteration (ns) for the summary table.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.iterations == 0) continue;
      ns_[run.benchmark_name()] = run.GetAdjustedRealTime() * multiplier(run.time_unit);
    }
    ConsoleReporter::ReportRuns(runs);
  }
  [[nodiscard]] double ns(const std::string& name) const {
    auto it = ns_.find(name);
    return it == ns_.end() ? 0.0 : it->second;
  }

 private:
  static double multiplier(benchmark::TimeUnit unit) {
    switch (unit) {
      case benchmark::kNanosecond: return 1.0;
      case benchmark::kMicrosecond: return 1e3;
      case benchmark::kMillisecond: return 1e6;
      case benchmark::kSecond: return 1e9;
    }
    return 1.0;
  }
  std::map<std::string, double> ns_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  auto overhead = [&](const char* label, const char* ours, const char* base) {
    const double a = reporter.ns(ours), b = reporter.ns(base);
    if (a == 0 || b == 0) return;
    std::printf("  %-34s %8.1f ns vs %6.1f ns direct: %+7.1f ns added (target <= 20 ns) %s\n", label, a, b,
                a - b, a - b <= 20.0 ? "OK" : "MISSED");
  };
  auto ratio = [&](const char* label, const char* ours, const char* base) {
    const double a = reporter.ns(ours), b = reporter.ns(base);
    if (a == 0 || b == 0) return;
    std::printf("  %-34s %8.2f ms vs %6.2f ms memcpy: %5.2fx of memcpy speed (target >= 0.9x) %s\n", label,
                a / 1e6, b / 1e6, b / a, b / a >= 0.9 ? "OK" : "MISSED");
  };
  std::printf("\nSummary (baselines measured in this run)\n");
  overhead("cuStreamQuery (idle stream)", "BM_Cudamux_cuStreamQuery", "BM_Direct_QueueQuery");
  overhead("cuCtxGetDevice", "BM_Cudamux_cuCtxGetDevice", "BM_Direct_ContextOrdinal");
  ratio("cuMemcpyHtoD 64 MiB", "BM_Cudamux_cuMemcpyHtoD_64MiB/real_time", "BM_Memcpy_64MiB/real_time");
  ratio("cuMemcpyDtoH 64 MiB", "BM_Cudamux_cuMemcpyDtoH_64MiB/real_time", "BM_Memcpy_64MiB/real_time");
  // The cuda backend against NVIDIA's driver called directly (issue 7: >= 0.98x, <= 50 ns).
  auto vs_nvidia = [&](const char* label, const char* ours, const char* base, bool per_call) {
    const double a = reporter.ns(ours), b = reporter.ns(base);
    if (a == 0 || b == 0) return;
    if (per_call) {
      std::printf("  %-34s %8.1f ns vs %6.1f ns NVIDIA direct: %+7.1f ns added (target <= 50 ns) %s\n",
                  label, a, b, a - b, a - b <= 50.0 ? "OK" : "MISSED");
    } else {
      std::printf("  %-34s %8.2f ms vs %6.2f ms NVIDIA direct: %5.3fx (target >= 0.98x) %s\n", label,
                  a / 1e6, b / 1e6, b / a, b / a >= 0.98 ? "OK" : "MISSED");
    }
  };
  vs_nvidia("cuStreamQuery (idle stream)", "BM_Cudamux_cuStreamQuery", "BM_Nvidia_cuStreamQuery", true);
  vs_nvidia("cuMemcpyHtoD 64 MiB pageable", "BM_Cudamux_cuMemcpyHtoD_64MiB/real_time",
            "BM_Nvidia_cuMemcpyHtoD_64MiB/real_time", false);
  vs_nvidia("cuMemcpyDtoH 64 MiB pageable", "BM_Cudamux_cuMemcpyDtoH_64MiB/real_time",
            "BM_Nvidia_cuMemcpyDtoH_64MiB/real_time", false);
  benchmark::Shutdown();
  return 0;
}
