// The cost cudamux (generated entry points, core, cuda backend) adds per call on top of
// NVIDIA's driver, measured without a GPU (issue 7): the driver underneath is the stand-in
// of tests/cuda_backend (fake_nvidia.cpp, quiet), whose functions return almost at once.
// Both sides run in one process on the same loaded stand-in:
//   Direct/<op>   calls the stand-in's function, resolved with dlsym (a program on
//                 NVIDIA's driver);
//   Cudamux/<op>  makes the same CUDA call through our libcuda.so.1 and the cuda backend.
// The difference of the medians is what cudamux adds. Each Cudamux run also counts the
// stand-in calls per operation (counter drv_calls, label: which functions), to show
// driver work cudamux adds beyond the one call the program asked for. Run:
//   build/bin/cudamux_bench_passthrough
// CUDAMUX_BENCH_STANDIN names the stand-in's file where it is not the build tree's (a
// packed tree, scripts/gpu-run.sh).
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "bench_passthrough: %s\n", what.c_str());
  std::exit(1);
}
void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) fail(std::string(what) + " returned " + std::to_string(r));
}

// The stand-in's module format: one kernel taking one pointer.
const char kImage[] = "fake-module\nfunction empty 8@0\n";

// The stand-in called directly.
struct Direct {
  void* lib = nullptr;
  decltype(&::cuLaunchKernel) launch = nullptr;
  decltype(&::cuStreamQuery) stream_query = nullptr;
  decltype(&::cuEventRecord) event_record = nullptr;
  decltype(&::cuEventQuery) event_query = nullptr;
  decltype(&::cuStreamWaitEvent) stream_wait_event = nullptr;
  decltype(&::cuCtxGetCurrent) ctx_get_current = nullptr;
  decltype(&::cuMemAllocFromPoolAsync) alloc_from_pool = nullptr;
  decltype(&::cuMemFreeAsync) free_async = nullptr;
  CUmemoryPool pool{};
  const char* (*call_counts)() = nullptr;
  void (*set_busy)(int) = nullptr;
  CUstream non_blocking{}, blocking{};
  CUfunction empty{};
  CUevent event{};
  CUdeviceptr buffer{};
};

template <class F>
void sym(void* lib, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) fail(std::string("the stand-in lacks ") + name);
}

const char* standin_path() {
  const char* env = std::getenv("CUDAMUX_BENCH_STANDIN");
  return env && *env ? env : CUDAMUX_FAKE_NVIDIA;
}

Direct& direct() {
  static Direct d = [] {
    Direct x;
    // As the cuda backend opens NVIDIA's driver (driver_locator.cpp): the same file, so
    // the same loaded instance serves both sides.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    x.lib = dlopen(standin_path(), RTLD_NOW | RTLD_LOCAL);  // sanitizers refuse DEEPBIND
#else
    x.lib = dlopen(standin_path(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
#endif
    if (!x.lib) fail(dlerror());
    decltype(&::cuInit) init = nullptr;
    decltype(&::cuDeviceGet) device_get = nullptr;
    decltype(&::cuDevicePrimaryCtxRetain) retain = nullptr;
    decltype(&::cuCtxSetCurrent) set_current = nullptr;
    decltype(&::cuStreamCreateWithPriority) stream_create = nullptr;
    decltype(&::cuModuleLoadData) module_load = nullptr;
    decltype(&::cuModuleGetFunction) get_function = nullptr;
    decltype(&::cuEventCreate) event_create = nullptr;
    decltype(&::cuMemAlloc_v2) mem_alloc = nullptr;
    sym(x.lib, init, "cuInit");
    sym(x.lib, device_get, "cuDeviceGet");
    sym(x.lib, retain, "cuDevicePrimaryCtxRetain");
    sym(x.lib, set_current, "cuCtxSetCurrent");
    sym(x.lib, stream_create, "cuStreamCreateWithPriority");
    sym(x.lib, module_load, "cuModuleLoadData");
    sym(x.lib, get_function, "cuModuleGetFunction");
    sym(x.lib, event_create, "cuEventCreate");
    sym(x.lib, mem_alloc, "cuMemAlloc_v2");
    sym(x.lib, x.launch, "cuLaunchKernel");
    sym(x.lib, x.stream_query, "cuStreamQuery");
    sym(x.lib, x.event_record, "cuEventRecord");
    sym(x.lib, x.event_query, "cuEventQuery");
    sym(x.lib, x.stream_wait_event, "cuStreamWaitEvent");
    sym(x.lib, x.ctx_get_current, "cuCtxGetCurrent");
    sym(x.lib, x.alloc_from_pool, "cuMemAllocFromPoolAsync");
    sym(x.lib, x.free_async, "cuMemFreeAsync");
    decltype(&::cuDeviceGetDefaultMemPool) default_pool = nullptr;
    sym(x.lib, default_pool, "cuDeviceGetDefaultMemPool");
    sym(x.lib, x.call_counts, "fake_nvidia_call_counts");
    sym(x.lib, x.set_busy, "fake_nvidia_set_busy");
    CUdevice dev{};
    CUcontext ctx{};
    CUmodule m{};
    check(init(0), "stand-in cuInit");
    check(device_get(&dev, 0), "stand-in cuDeviceGet");
    check(retain(&ctx, dev), "stand-in cuDevicePrimaryCtxRetain");
    check(set_current(ctx), "stand-in cuCtxSetCurrent");
    check(stream_create(&x.non_blocking, CU_STREAM_NON_BLOCKING, 0), "stand-in cuStreamCreate");
    check(stream_create(&x.blocking, CU_STREAM_DEFAULT, 0), "stand-in cuStreamCreate");
    check(module_load(&m, kImage), "stand-in cuModuleLoadData");
    check(get_function(&x.empty, m, "empty"), "stand-in cuModuleGetFunction");
    check(event_create(&x.event, CU_EVENT_DISABLE_TIMING), "stand-in cuEventCreate");
    check(mem_alloc(&x.buffer, 4096), "stand-in cuMemAlloc");
    check(default_pool(&x.pool, dev), "stand-in cuDeviceGetDefaultMemPool");
    return x;
  }();
  return d;
}

// The same objects made through cudamux, in device 0's primary context (the cuda
// backend's default: NVIDIA's primary context underneath).
struct Ours {
  CUstream non_blocking{}, blocking{};
  CUfunction empty{};
  CUevent event{};
  CUdeviceptr buffer{};
};
Ours& ours() {
  static Ours o = [] {
    Ours x;
    CUdevice dev{};
    CUcontext ctx{};
    CUmodule m{};
    check(cuInit(0), "cuInit");
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    check(cuStreamCreate(&x.non_blocking, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check(cuStreamCreate(&x.blocking, CU_STREAM_DEFAULT), "cuStreamCreate");
    check(cuModuleLoadData(&m, kImage), "cuModuleLoadData");
    check(cuModuleGetFunction(&x.empty, m, "empty"), "cuModuleGetFunction");
    check(cuEventCreate(&x.event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    check(cuMemAlloc(&x.buffer, 4096), "cuMemAlloc");
    return x;
  }();
  return o;
}

using Counts = std::map<std::string, unsigned long long>;
Counts call_counts() {
  Counts out;
  std::istringstream in(direct().call_counts());
  std::string name;
  unsigned long long n = 0;
  while (in >> name >> n) out[name] = n;
  return out;
}

// Stand-in calls per operation of the last Cudamux run of each benchmark, for the summary.
std::map<std::string, std::string> g_calls;

// Times `op` (one operation per iteration) and, around the loop, counts the stand-in
// calls it made.
void run(benchmark::State& state, const std::string& name, const std::function<CUresult()>& op) {
  const Counts before = call_counts();
  CUresult failed = CUDA_SUCCESS;  // NOT_READY is what the busy-stream query expects
  for (auto _ : state) {
    if (const CUresult r = op(); r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY) failed = r;
  }
  const Counts after = call_counts();
  if (failed != CUDA_SUCCESS) {
    state.SkipWithError(("a call returned CUresult " + std::to_string(failed)).c_str());
    return;
  }
  const double iterations = static_cast<double>(state.iterations());
  double total = 0;
  std::string label;
  for (const auto& [fn, n] : after) {
    const auto it = before.find(fn);
    const double per_op =
        static_cast<double>(n - (it == before.end() ? 0 : it->second)) / iterations;
    if (per_op < 0.001) continue;
    total += per_op;
    char part[96];
    std::snprintf(part, sizeof part, "%s%s x%.3g", label.empty() ? "" : ", ", fn.c_str(), per_op);
    label += part;
  }
  state.counters["drv_calls"] = total;
  if (label.empty()) label = "no driver call";
  state.SetLabel(label);
  if (name.starts_with("Cudamux/")) g_calls[name.substr(8)] = label;
}

struct Op {
  const char* name;
  int calls;  // CUDA calls per operation (for "added per call")
  std::function<CUresult()> direct;
  std::function<CUresult()> ours;
};

std::vector<Op> ops() {
  static void* direct_params[1];
  static void* our_params[1];
  direct_params[0] = &direct().buffer;
  our_params[0] = &ours().buffer;
  const Direct& d = direct();
  const Ours& o = ours();
  auto direct_launch = [&d](CUstream s) {
    return d.launch(d.empty, 1, 1, 1, 1, 1, 1, 0, s, direct_params, nullptr);
  };
  auto our_launch = [&o](CUstream s) {
    return cuLaunchKernel(o.empty, 1, 1, 1, 1, 1, 1, 0, s, our_params, nullptr);
  };
  // The event waited on has been recorded once (cudamux skips never-recorded events).
  check(d.event_record(d.event, d.non_blocking), "stand-in cuEventRecord");
  check(cuEventRecord(o.event, o.non_blocking), "cuEventRecord");
  return {
      {"cuLaunchKernel/non-blocking stream", 1, [=] { return direct_launch(d.non_blocking); },
       [=] { return our_launch(o.non_blocking); }},
      {"cuLaunchKernel/blocking stream", 1, [=] { return direct_launch(d.blocking); },
       [=] { return our_launch(o.blocking); }},
      {"cuLaunchKernel/legacy stream (0)", 1, [=] { return direct_launch(nullptr); },
       [=] { return our_launch(nullptr); }},
      {"cuLaunchKernel/per-thread stream", 1, [=] { return direct_launch(CU_STREAM_PER_THREAD); },
       [=] { return our_launch(CU_STREAM_PER_THREAD); }},
      // Legacy-stream semantics at work: each launch orders against the other stream's.
      {"cuLaunchKernel/blocking then legacy", 2,
       [=] {
         const CUresult r = direct_launch(d.blocking);
         return r != CUDA_SUCCESS ? r : direct_launch(nullptr);
       },
       [=] {
         const CUresult r = our_launch(o.blocking);
         return r != CUDA_SUCCESS ? r : our_launch(nullptr);
       }},
      {"cuStreamQuery", 1, [&d] { return d.stream_query(d.non_blocking); },
       [&o] { return cuStreamQuery(o.non_blocking); }},
      // CUDA_ERROR_NOT_READY: a failed status goes through the core's error mapping.
      {"cuStreamQuery/busy stream", 1,
       [&d] {
         d.set_busy(1);
         const CUresult r = d.stream_query(d.non_blocking);
         d.set_busy(0);
         return r == CUDA_ERROR_NOT_READY ? r : CUDA_ERROR_UNKNOWN;
       },
       [&d, &o] {
         d.set_busy(1);
         const CUresult r = cuStreamQuery(o.non_blocking);
         d.set_busy(0);
         return r == CUDA_ERROR_NOT_READY ? r : CUDA_ERROR_UNKNOWN;
       }},
      {"cuStreamQuery/legacy stream", 1, [&d] { return d.stream_query(nullptr); },
       [] { return cuStreamQuery(nullptr); }},
      {"cuEventRecord", 1, [&d] { return d.event_record(d.event, d.non_blocking); },
       [&o] { return cuEventRecord(o.event, o.non_blocking); }},
      {"cuStreamWaitEvent", 1, [&d] { return d.stream_wait_event(d.non_blocking, d.event, 0); },
       [&o] { return cuStreamWaitEvent(o.non_blocking, o.event, 0); }},
      {"cuEventQuery", 1, [&d] { return d.event_query(d.event); },
       [&o] { return cuEventQuery(o.event); }},
      // Stream-ordered allocation from the device's default pool (NVIDIA's, issue 16).
      {"cuMemAllocAsync+cuMemFreeAsync", 2,
       [&d] {
         CUdeviceptr p = 0;
         const CUresult r = d.alloc_from_pool(&p, 256, d.pool, d.non_blocking);
         return r != CUDA_SUCCESS ? r : d.free_async(p, d.non_blocking);
       },
       [&o] {
         CUdeviceptr p = 0;
         const CUresult r = cuMemAllocAsync(&p, 256, o.non_blocking);
         return r != CUDA_SUCCESS ? r : cuMemFreeAsync(p, o.non_blocking);
       }},
      {"cuCtxGetCurrent", 1,
       [&d] {
         CUcontext c{};
         const CUresult r = d.ctx_get_current(&c);
         benchmark::DoNotOptimize(c);
         return r;
       },
       [] {
         CUcontext c{};
         const CUresult r = cuCtxGetCurrent(&c);
         benchmark::DoNotOptimize(c);
         return r;
       }},
  };
}

// Keeps each benchmark's median CPU time per iteration (ns).
class MedianReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs) {
      if (run.run_type == Run::RT_Aggregate && run.aggregate_name == "median" && run.iterations > 0)
        ns_[run.run_name.function_name] = run.GetAdjustedCPUTime();  // reported in ns
    }
    ConsoleReporter::ReportRuns(runs);
  }
  [[nodiscard]] double ns(const std::string& key) const {
    auto it = ns_.find(key);
    return it == ns_.end() ? 0.0 : it->second;
  }

 private:
  std::map<std::string, double> ns_;
};

}  // namespace

int main(int argc, char** argv) {
  // The cuda backend over the stand-in, quiet, hermetic (only the config written here).
  char config[] = "/tmp/cudamux-bench-passthrough-XXXXXX";
  const int fd = mkstemp(config);
  if (fd < 0) fail("cannot create a config file");
  const std::string text =
      std::string("backend = \"cuda\"\n[cuda]\ndriver = \"") + standin_path() + "\"\n";
  if (write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) fail("write");
  close(fd);
  setenv("CUDAMUX_BACKEND", "cuda", 1);
  setenv("CUDAMUX_CONFIG", config, 1);
  setenv("FAKE_NVIDIA_QUIET", "1", 1);
  setenv("XDG_CONFIG_HOME", "/nonexistent", 0);

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  (void)ours();  // cuInit loads the stand-in: set both sides up before any timing
  (void)direct();
  unlink(config);
  const std::vector<Op> all = ops();
  for (const Op& op : all) {
    for (const char* side : {"Direct/", "Cudamux/"}) {
      const std::string name = side + std::string(op.name);
      const auto& fn = side[0] == 'D' ? op.direct : op.ours;
      benchmark::RegisterBenchmark(name.c_str(),
                                   [name, fn](benchmark::State& s) { run(s, name, fn); })
          ->Repetitions(5)
          ->ReportAggregatesOnly(true)
          ->MinTime(0.2);
    }
  }
  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  std::printf(
      "\nSummary: cudamux (cuda backend) over the stand-in driver vs the stand-in called directly,"
      "\nmedians of CPU time per operation\n");
  std::printf("  %-36s %10s %10s %12s  %s\n", "operation", "direct", "cudamux", "added/call",
              "stand-in calls per operation through cudamux");
  for (const Op& op : all) {
    const double a = reporter.ns(std::string("Cudamux/") + op.name);
    const double b = reporter.ns(std::string("Direct/") + op.name);
    if (a == 0 || b == 0) continue;
    std::printf("  %-36s %8.1fns %8.1fns %+10.1fns  %s\n", op.name, b, a, (a - b) / op.calls,
                g_calls[op.name].c_str());
  }
  benchmark::Shutdown();
  return 0;
}
