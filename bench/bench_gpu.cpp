// GPU benchmarks of the cuda backend (issue 7): the same code runs twice in one process,
// once through cudamux (our libcuda.so.1, core, cuda backend) and once on NVIDIA's driver
// called directly (loaded by full path from CUDAMUX_BENCH_NVIDIA_DRIVER, as the backend
// loads it). Every result is a ratio of the two, measured in the same run (medians of
// repetitions, after a warm-up):
//   * empty-kernel launches: 10,000 cuLaunchKernel then one cuStreamSynchronize;
//   * cuStreamQuery on an idle stream;
//   * cuMemcpyHtoD / cuMemcpyDtoH of 256 MiB, pinned and pageable host memory;
//   * SAXPY of 2^26 floats end to end (two copies in, the kernel, one copy out);
//   * stream-ordered allocation: 100 x (cuMemAllocAsync of 1 MiB, cuMemFreeAsync) on a stream,
//     then cuStreamSynchronize (issue 16: NVIDIA's pools on the cuda backend);
//   * the same with 64 live allocations of mixed sizes (256 B to 48 MiB, as a framework's
//     temporaries), all freed, then cuStreamSynchronize.
// Targets: >= 0.98x of NVIDIA's speed, <= 50 ns added per call.
// The kernels are compiled once by NVRTC through our libnvrtc.so.13 (NVIDIA's NVRTC on the
// cuda backend), and the same PTX is loaded by both sides.
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

namespace {

constexpr int kLaunchesPerSync = 10000;
constexpr std::size_t kCopyBytes = std::size_t{256} << 20;
constexpr std::size_t kSaxpyN = std::size_t{1} << 26;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "bench_gpu: %s\n", what.c_str());
  std::exit(1);
}
void check(CUresult r, const char* what, const char* side) {
  if (r != CUDA_SUCCESS) fail(std::string(side) + ": " + what + " returned " + std::to_string(r));
}

// The driver functions the benchmarks call, from one side or the other.
struct Api {
  const char* side = "";
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primary_retain = nullptr;
  decltype(&::cuCtxSetCurrent) set_current = nullptr;
  decltype(&::cuStreamCreate) stream_create = nullptr;
  decltype(&::cuStreamQuery) stream_query = nullptr;
  decltype(&::cuStreamSynchronize) stream_sync = nullptr;
  decltype(&::cuMemAlloc_v2) mem_alloc = nullptr;
  decltype(&::cuMemAllocHost_v2) mem_alloc_host = nullptr;
  decltype(&::cuMemcpyHtoD_v2) htod = nullptr;
  decltype(&::cuMemcpyDtoH_v2) dtoh = nullptr;
  decltype(&::cuMemcpyHtoDAsync_v2) htod_async = nullptr;
  decltype(&::cuMemcpyDtoHAsync_v2) dtoh_async = nullptr;
  decltype(&::cuModuleLoadData) module_load = nullptr;
  decltype(&::cuModuleGetFunction) get_function = nullptr;
  decltype(&::cuLaunchKernel) launch = nullptr;
  decltype(&::cuMemAllocAsync) alloc_async = nullptr;
  decltype(&::cuMemFreeAsync) free_async = nullptr;
};

Api cudamux_api() {
  Api a;
  a.side = "cudamux";
  a.init = &::cuInit;
  a.device_get = &::cuDeviceGet;
  a.primary_retain = &::cuDevicePrimaryCtxRetain;
  a.set_current = &::cuCtxSetCurrent;
  a.stream_create = &::cuStreamCreate;
  a.stream_query = &::cuStreamQuery;
  a.stream_sync = &::cuStreamSynchronize;
  a.mem_alloc = &::cuMemAlloc_v2;
  a.mem_alloc_host = &::cuMemAllocHost_v2;
  a.htod = &::cuMemcpyHtoD_v2;
  a.dtoh = &::cuMemcpyDtoH_v2;
  a.htod_async = &::cuMemcpyHtoDAsync_v2;
  a.dtoh_async = &::cuMemcpyDtoHAsync_v2;
  a.module_load = &::cuModuleLoadData;
  a.get_function = &::cuModuleGetFunction;
  a.launch = &::cuLaunchKernel;
  a.alloc_async = &::cuMemAllocAsync;
  a.free_async = &::cuMemFreeAsync;
  return a;
}

// NVIDIA's driver by full path; empty `error` when loaded.
Api nvidia_api(std::string& error) {
  Api a;
  a.side = "NVIDIA";
  const char* path = std::getenv("CUDAMUX_BENCH_NVIDIA_DRIVER");
  if (!path || !*path) {
    error = "CUDAMUX_BENCH_NVIDIA_DRIVER not set (no NVIDIA driver)";
    return a;
  }
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (!lib) {
    error = std::string("cannot load NVIDIA's driver: ") + dlerror();
    return a;
  }
  auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (!fn && error.empty()) error = std::string("NVIDIA's driver lacks ") + name;
  };
  sym(a.init, "cuInit");
  sym(a.device_get, "cuDeviceGet");
  sym(a.primary_retain, "cuDevicePrimaryCtxRetain");
  sym(a.set_current, "cuCtxSetCurrent");
  sym(a.stream_create, "cuStreamCreate");
  sym(a.stream_query, "cuStreamQuery");
  sym(a.stream_sync, "cuStreamSynchronize");
  sym(a.mem_alloc, "cuMemAlloc_v2");
  sym(a.mem_alloc_host, "cuMemAllocHost_v2");
  sym(a.htod, "cuMemcpyHtoD_v2");
  sym(a.dtoh, "cuMemcpyDtoH_v2");
  sym(a.htod_async, "cuMemcpyHtoDAsync_v2");
  sym(a.dtoh_async, "cuMemcpyDtoHAsync_v2");
  sym(a.module_load, "cuModuleLoadData");
  sym(a.get_function, "cuModuleGetFunction");
  sym(a.launch, "cuLaunchKernel");
  sym(a.alloc_async, "cuMemAllocAsync");
  sym(a.free_async, "cuMemFreeAsync");
  return a;
}

const char* kSource = R"(
extern "C" __global__ void empty() {}
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
)";

// PTX for device 0's architecture, through our libnvrtc.so.13.
std::string compile_ptx() {
  CUdevice dev{};
  int major = 0, minor = 0;
  check(cuInit(0), "cuInit", "cudamux");
  check(cuDeviceGet(&dev, 0), "cuDeviceGet", "cudamux");
  check(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "attr",
        "cudamux");
  check(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "attr",
        "cudamux");
  nvrtcProgram p{};
  if (nvrtcCreateProgram(&p, kSource, "bench.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS)
    fail("nvrtcCreateProgram");
  const std::string arch = "--gpu-architecture=compute_" + std::to_string(major * 10 + minor);
  const char* opts[] = {arch.c_str(), "--fmad=false"};
  if (const nvrtcResult r = nvrtcCompileProgram(p, 2, opts); r != NVRTC_SUCCESS) {
    std::size_t n = 0;
    nvrtcGetProgramLogSize(p, &n);
    std::string log(n, '\0');
    nvrtcGetProgramLog(p, log.data());
    fail(std::string("nvrtcCompileProgram: ") + nvrtcGetErrorString(r) + "\n" + log);
  }
  std::size_t n = 0;
  nvrtcGetPTXSize(p, &n);
  std::string ptx(n, '\0');
  nvrtcGetPTX(p, ptx.data());
  nvrtcDestroyProgram(&p);
  return ptx;
}

const std::string& ptx() {
  static const std::string s = compile_ptx();
  return s;
}

// One side's state: its primary context, a stream, the kernels and the buffers.
struct Side {
  Api api;
  CUstream stream{};
  CUfunction empty{}, saxpy{};
  CUdeviceptr device{}, x{}, y{}, out{};
  void* pinned = nullptr;
  std::vector<unsigned char> pageable;
  float* hx = nullptr;  // pinned SAXPY buffers
  float* hy = nullptr;
  float* hout = nullptr;

  explicit Side(Api a) : api(a) {
    const char* s = api.side;
    CUdevice dev{};
    CUcontext ctx{};
    check(api.init(0), "cuInit", s);
    check(api.device_get(&dev, 0), "cuDeviceGet", s);
    check(api.primary_retain(&ctx, dev), "cuDevicePrimaryCtxRetain", s);
    check(api.set_current(ctx), "cuCtxSetCurrent", s);
    check(api.stream_create(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate", s);
    CUmodule m{};
    check(api.module_load(&m, ptx().c_str()), "cuModuleLoadData", s);
    check(api.get_function(&empty, m, "empty"), "cuModuleGetFunction", s);
    check(api.get_function(&saxpy, m, "saxpy"), "cuModuleGetFunction", s);
    check(api.mem_alloc(&device, kCopyBytes), "cuMemAlloc", s);
    check(api.mem_alloc_host(&pinned, kCopyBytes), "cuMemAllocHost", s);
    std::memset(pinned, 0x5a, kCopyBytes);
    pageable.assign(kCopyBytes, 0x5a);
    const std::size_t bytes = kSaxpyN * sizeof(float);
    check(api.mem_alloc(&x, bytes), "cuMemAlloc", s);
    check(api.mem_alloc(&y, bytes), "cuMemAlloc", s);
    check(api.mem_alloc(&out, bytes), "cuMemAlloc", s);
    void* p = nullptr;
    check(api.mem_alloc_host(&p, bytes), "cuMemAllocHost", s);
    hx = static_cast<float*>(p);
    check(api.mem_alloc_host(&p, bytes), "cuMemAllocHost", s);
    hy = static_cast<float*>(p);
    check(api.mem_alloc_host(&p, bytes), "cuMemAllocHost", s);
    hout = static_cast<float*>(p);
    for (std::size_t i = 0; i < kSaxpyN; ++i) {
      hx[i] = static_cast<float>(i % 1000) * 0.5f;
      hy[i] = static_cast<float>(i % 77);
    }
    saxpy_once();
    for (std::size_t i = 0; i < kSaxpyN; i += 4099) {
      if (hout[i] != 2.0f * hx[i] + hy[i])
        fail(std::string(s) + ": SAXPY result wrong at " + std::to_string(i));
    }
  }

  void saxpy_once() {
    const char* s = api.side;
    const std::size_t bytes = kSaxpyN * sizeof(float);
    check(api.htod_async(x, hx, bytes, stream), "cuMemcpyHtoDAsync", s);
    check(api.htod_async(y, hy, bytes, stream), "cuMemcpyHtoDAsync", s);
    float a = 2.0f;
    std::size_t n = kSaxpyN;
    void* params[] = {&a, &x, &y, &out, &n};
    const unsigned blocks = static_cast<unsigned>((kSaxpyN + 255) / 256);
    check(api.launch(saxpy, blocks, 1, 1, 256, 1, 1, 0, stream, params, nullptr), "cuLaunchKernel",
          s);
    check(api.dtoh_async(hout, out, bytes, stream), "cuMemcpyDtoHAsync", s);
    check(api.stream_sync(stream), "cuStreamSynchronize", s);
  }
};

Side& cudamux() {
  static Side s(cudamux_api());
  return s;
}
Side* nvidia() {
  static std::string error;
  static Side* s = [] {
    Api a = nvidia_api(error);
    return error.empty() ? new Side(a) : nullptr;
  }();
  return s;
}
Side* side(const benchmark::State& state) { return state.range(0) == 0 ? &cudamux() : nvidia(); }

void BM_Launch10k(benchmark::State& state) {
  Side* s = side(state);
  if (!s) return state.SkipWithError("no NVIDIA driver (CUDAMUX_BENCH_NVIDIA_DRIVER)");
  for (auto _ : state) {
    for (int i = 0; i < kLaunchesPerSync; ++i) {
      check(s->api.launch(s->empty, 1, 1, 1, 1, 1, 1, 0, s->stream, nullptr, nullptr),
            "cuLaunchKernel", s->api.side);
    }
    check(s->api.stream_sync(s->stream), "cuStreamSynchronize", s->api.side);
  }
  state.SetItemsProcessed(state.iterations() * kLaunchesPerSync);
}
void BM_StreamQuery(benchmark::State& state) {
  Side* s = side(state);
  if (!s) return state.SkipWithError("no NVIDIA driver (CUDAMUX_BENCH_NVIDIA_DRIVER)");
  check(s->api.stream_sync(s->stream), "cuStreamSynchronize", s->api.side);
  for (auto _ : state) benchmark::DoNotOptimize(s->api.stream_query(s->stream));
}
void copy_256mib(benchmark::State& state, bool to_device, bool pinned_host) {
  Side* s = side(state);
  if (!s) return state.SkipWithError("no NVIDIA driver (CUDAMUX_BENCH_NVIDIA_DRIVER)");
  void* host = pinned_host ? s->pinned : s->pageable.data();
  for (auto _ : state) {
    if (to_device) {
      check(s->api.htod(s->device, host, kCopyBytes), "cuMemcpyHtoD", s->api.side);
    } else {
      check(s->api.dtoh(host, s->device, kCopyBytes), "cuMemcpyDtoH", s->api.side);
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kCopyBytes));
}
void BM_HtoDPinned256MiB(benchmark::State& state) { copy_256mib(state, true, true); }
void BM_DtoHPinned256MiB(benchmark::State& state) { copy_256mib(state, false, true); }
void BM_HtoDPageable256MiB(benchmark::State& state) { copy_256mib(state, true, false); }
void BM_DtoHPageable256MiB(benchmark::State& state) { copy_256mib(state, false, false); }
void BM_Saxpy2e26(benchmark::State& state) {
  Side* s = side(state);
  if (!s) return state.SkipWithError("no NVIDIA driver (CUDAMUX_BENCH_NVIDIA_DRIVER)");
  for (auto _ : state) s->saxpy_once();
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kSaxpyN));
}

constexpr int kPoolRounds = 100;
void BM_PoolAllocFree100(benchmark::State& state) {
  Side* s = side(state);
  if (!s) return state.SkipWithError("no NVIDIA driver (CUDAMUX_BENCH_NVIDIA_DRIVER)");
  const char* side_name = s->api.side;
  for (auto _ : state) {
    for (int i = 0; i < kPoolRounds; ++i) {
      CUdeviceptr p = 0;
      check(s->api.alloc_async(&p, std::size_t{1} << 20, s->stream), "cuMemAllocAsync", side_name);
      check(s->api.free_async(p, s->stream), "cuMemFreeAsync", side_name);
    }
    check(s->api.stream_sync(s->stream), "cuStreamSynchronize", side_name);
  }
  state.SetItemsProcessed(state.iterations() * kPoolRounds);
}

constexpr int kMixedLive = 64;
void BM_PoolMixedSizes64(benchmark::State& state) {
  Side* s = side(state);
  if (!s) return state.SkipWithError("no NVIDIA driver (CUDAMUX_BENCH_NVIDIA_DRIVER)");
  const char* side_name = s->api.side;
  std::vector<std::size_t> sizes;
  std::uint32_t x = 12345;  // the same sizes on both sides
  for (int i = 0; i < kMixedLive; ++i) {
    x = x * 1664525u + 1013904223u;
    sizes.push_back(std::size_t{256} << ((x >> 8) % 18));  // 256 B .. 32 MiB
  }
  std::vector<CUdeviceptr> live(kMixedLive);
  for (auto _ : state) {
    for (int i = 0; i < kMixedLive; ++i)
      check(s->api.alloc_async(&live[i], sizes[i], s->stream), "cuMemAllocAsync", side_name);
    for (int i = 0; i < kMixedLive; ++i)
      check(s->api.free_async(live[i], s->stream), "cuMemFreeAsync", side_name);
    check(s->api.stream_sync(s->stream), "cuStreamSynchronize", side_name);
  }
  state.SetItemsProcessed(state.iterations() * kMixedLive);
}

// Arg 0: cudamux, 1: NVIDIA direct. Each side's pair runs back to back, 7 repetitions.
#define CUDAMUX_GPU_BENCH(fn, ...)                                                         \
  BENCHMARK(fn)->Arg(0)->Arg(1)->Repetitions(7)->ReportAggregatesOnly(true)->UseRealTime() \
      __VA_ARGS__
CUDAMUX_GPU_BENCH(BM_Launch10k, ->Unit(benchmark::kMillisecond));
CUDAMUX_GPU_BENCH(BM_StreamQuery);
CUDAMUX_GPU_BENCH(BM_HtoDPinned256MiB, ->Unit(benchmark::kMillisecond));
CUDAMUX_GPU_BENCH(BM_DtoHPinned256MiB, ->Unit(benchmark::kMillisecond));
CUDAMUX_GPU_BENCH(BM_HtoDPageable256MiB, ->Unit(benchmark::kMillisecond));
CUDAMUX_GPU_BENCH(BM_DtoHPageable256MiB, ->Unit(benchmark::kMillisecond));
CUDAMUX_GPU_BENCH(BM_Saxpy2e26, ->Unit(benchmark::kMillisecond));
CUDAMUX_GPU_BENCH(BM_PoolAllocFree100, ->Unit(benchmark::kMicrosecond));
CUDAMUX_GPU_BENCH(BM_PoolMixedSizes64, ->Unit(benchmark::kMicrosecond));

// Keeps each benchmark's median time per iteration (ns), by name and argument.
class MedianReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs) {
      if (run.run_type == Run::RT_Aggregate && run.aggregate_name == "median" && run.iterations > 0)
        ns_[run.run_name.function_name + "/" + run.run_name.args] =
            run.GetAdjustedRealTime() * unit(run.time_unit);
    }
    ConsoleReporter::ReportRuns(runs);
  }
  [[nodiscard]] double ns(const std::string& key) const {
    auto it = ns_.find(key);
    return it == ns_.end() ? 0.0 : it->second;
  }

 private:
  static double unit(benchmark::TimeUnit u) {
    switch (u) {
      case benchmark::kNanosecond:
        return 1.0;
      case benchmark::kMicrosecond:
        return 1e3;
      case benchmark::kMillisecond:
        return 1e6;
      case benchmark::kSecond:
        return 1e9;
    }
    return 1.0;
  }
  std::map<std::string, double> ns_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  (void)cudamux();  // set up (and check SAXPY) before any timing, NVIDIA's side too
  (void)nvidia();
  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  std::printf("\nSummary: cudamux (cuda backend) vs NVIDIA's driver direct, medians of this run\n");
  bool all = true;
  auto compare = [&](const char* label, const std::string& fn, double calls_per_iteration) {
    const double a = reporter.ns(fn + "/0"), b = reporter.ns(fn + "/1");
    if (a == 0 || b == 0) {
      std::printf("  %-32s not measured\n", label);
      return;
    }
    const double speed = b / a;
    const double added = (a - b) / calls_per_iteration;
    const bool ok = speed >= 0.98 || added <= 50.0;
    all = all && ok;
    std::printf(
        "  %-32s %12.1f ns vs %12.1f ns: %6.3fx, %+8.1f ns per call (targets >= 0.98x, <= 50 ns) "
        "%s\n",
        label, a, b, speed, added, ok ? "OK" : "MISSED");
  };
  compare("launch empty kernel (per 10k)", "BM_Launch10k", kLaunchesPerSync);
  compare("cuStreamQuery (idle)", "BM_StreamQuery", 1);
  compare("cuMemcpyHtoD 256 MiB pinned", "BM_HtoDPinned256MiB", 1);
  compare("cuMemcpyDtoH 256 MiB pinned", "BM_DtoHPinned256MiB", 1);
  compare("cuMemcpyHtoD 256 MiB pageable", "BM_HtoDPageable256MiB", 1);
  compare("cuMemcpyDtoH 256 MiB pageable", "BM_DtoHPageable256MiB", 1);
  compare("SAXPY 2^26 floats end to end", "BM_Saxpy2e26", 5);
  compare("pool alloc+free 1 MiB (per 100)", "BM_PoolAllocFree100", 2 * kPoolRounds);
  compare("pool 64 mixed sizes live", "BM_PoolMixedSizes64", 2 * kMixedLive);
  std::printf("  %s\n", all ? "all targets met" : "some targets MISSED");
  benchmark::Shutdown();
  return 0;
}
