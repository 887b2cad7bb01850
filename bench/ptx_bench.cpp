// PTX kernels on the mock (issue 15 item 3): nvcc's PTX (bench/ptx/kernels.cu) loaded as a PTX
// image, translated by ptx/ and run; every result is printed as a ratio against plain
// multithreaded C++ doing the same work on the same cores, measured in the same run:
//   * SAXPY of 2^24 floats                                    (target >= 0.8x)
//   * 256-thread block sum reduction with bar.sync            (target >= 0.25x)
//   * 512x512 16x16-tiled matmul vs the same tiling in C++     (target >= 0.5x)
// Each barrier kernel also runs with barrier splitting off ([mock] fission = false: fibers),
// to show what splitting buys, and SAXPY also without its flat twin (CUDAMUX_MOCK_PTX_FLAT=0:
// the kernel as written in the thunk's thread loop). The block sum also runs with
// cuda::barrier's arrive_and_wait (bench/ptx/mbarrier.cu, compute_80: mbarrier.arrive and
// test_wait, whose waits are yield stops of the split twin, and libcu++'s back-off, which reads
// %globaltimer at every wait) and with cuda::ptx's mbarrier instructions (a bare test_wait
// loop), on the twin and on fibers; their split/fibers ratios are printed too. Run:
// build/bin/cudamux_bench_ptx
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cudamux/backend.hpp"
#include "mock_backend.hpp"

namespace be = cudamux::backend;

namespace {

[[noreturn]] void die(const std::string& what) { cudamux::bench::die("bench_ptx", what); }

std::unique_ptr<be::Backend> make_backend(const std::string& toml_text) {
  return cudamux::bench::make_mock_backend("bench_ptx", toml_text);
}

std::string ptx_text(const char* path) {
  std::ifstream in(path);
  if (!in) die(std::string("cannot read ") + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Env {
  std::unique_ptr<be::Backend> backend;
  std::unique_ptr<be::DeviceContext> ctx;
  std::unique_ptr<be::Queue> queue;
  std::unique_ptr<be::Module> module;
  explicit Env(const char* extra_config = "", const char* ptx_path = CUDAMUX_BENCH_PTX,
               unsigned arch = 75) {
    // [mock] fission also switches barrier splitting of PTX kernels.
    backend = make_backend(std::string("[mock]\nmemory = 2147483648\n") + extra_config);
    if (!backend->open_context(0, 0, ctx).ok()) die("open_context");
    if (!ctx->create_queue(CU_STREAM_NON_BLOCKING, 0, queue).ok()) die("create_queue");
    const std::string text = ptx_text(ptx_path);
    be::ModuleImage im{be::ImageKind::ptx, text.c_str(), text.size() + 1, arch};
    if (!ctx->load_module(im, module).ok()) die("load_module (PTX)");
  }
  template <class... A>
  void launch(const char* name, unsigned gx, unsigned gy, unsigned bx, unsigned by, A... args) {
    be::Function* f = module->function(name);
    if (f == nullptr) die(std::string("no kernel ") + name);
    std::vector<std::byte> buf;
    const void* values[] = {&args...};
    const std::size_t sizes[] = {sizeof(A)...};
    for (std::size_t i = 0; i < f->params().size(); ++i) {
      const auto& p = f->params()[i];
      buf.resize(std::max(buf.size(), p.offset + p.size));
      std::memcpy(buf.data() + p.offset, values[i], sizes[i]);
    }
    be::LaunchDesc d;
    d.function = f;
    d.grid[0] = gx;
    d.grid[1] = gy;
    d.block[0] = bx;
    d.block[1] = by;
    d.args = buf.data();
    d.args_size = buf.size();
    if (!queue->launch(d).ok()) die(std::string("launch ") + name);
    if (!queue->synchronize().ok()) die(std::string("kernel ") + name);
  }
};
Env& split_env() {
  static Env e;
  return e;
}
Env& fiber_env() {
  static Env e("fission = false\n");
  return e;
}
Env& mbarrier_split_env() {
  static Env e("", CUDAMUX_BENCH_PTX_MBARRIER, 80);
  return e;
}
Env& mbarrier_fiber_env() {
  static Env e("fission = false\n", CUDAMUX_BENCH_PTX_MBARRIER, 80);
  return e;
}
// The mock reads CUDAMUX_MOCK_PTX_FLAT when the backend is created.
Env& thread_loop_env() {
  static Env* e = [] {
    const char* was = std::getenv("CUDAMUX_MOCK_PTX_FLAT");
    const std::string saved = was ? was : "";
    setenv("CUDAMUX_MOCK_PTX_FLAT", "0", 1);
    auto* env = new Env;
    if (was)
      setenv("CUDAMUX_MOCK_PTX_FLAT", saved.c_str(), 1);
    else
      unsetenv("CUDAMUX_MOCK_PTX_FLAT");
    return env;
  }();
  return *e;
}

// CPU time of the whole process (all threads): on a machine shared with other work, wall
// time penalises long runs (the scheduler's share shrinks), so both ratios are printed.
double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}
struct CpuMeter {
  benchmark::State& state;
  double start = process_cpu_ms();
  ~CpuMeter() {
    state.counters["proc_cpu_ms"] = benchmark::Counter(
        (process_cpu_ms() - start) /
        static_cast<double>(std::max<benchmark::IterationCount>(state.iterations(), 1)));
  }
};

unsigned cores() { return std::max(1u, std::thread::hardware_concurrency()); }

template <class F>
void parallel_for(std::size_t n, F f) {
  const unsigned t = cores();
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < t; ++i) threads.emplace_back([&, i] { f(n * i / t, n * (i + 1) / t); });
  for (auto& th : threads) th.join();
}

constexpr unsigned kSaxpyN = 1u << 24;

void saxpy_ptx(benchmark::State& state, Env& e) {
  float *x = nullptr, *y = nullptr;
  e.ctx->allocate(kSaxpyN * 4, reinterpret_cast<void**>(&x));
  e.ctx->allocate(kSaxpyN * 4, reinterpret_cast<void**>(&y));
  std::fill(x, x + kSaxpyN, 1.0f);
  std::fill(y, y + kSaxpyN, 2.0f);
  CpuMeter meter{state};
  for (auto _ : state)
    e.launch("saxpy", kSaxpyN / 512, 1, 512, 1, 2.0f, static_cast<const float*>(x), y, kSaxpyN);
  benchmark::DoNotOptimize(y[kSaxpyN - 1]);
  e.ctx->free(x);
  e.ctx->free(y);
}
void BM_Saxpy_Ptx(benchmark::State& state) { saxpy_ptx(state, split_env()); }
void BM_Saxpy_PtxThreadLoop(benchmark::State& state) { saxpy_ptx(state, thread_loop_env()); }
void BM_Saxpy_Baseline(benchmark::State& state) {
  std::vector<float> x(kSaxpyN, 1.0f), y(kSaxpyN, 2.0f);
  CpuMeter meter{state};
  for (auto _ : state) {
    parallel_for(kSaxpyN, [&](std::size_t b, std::size_t end) {
      for (std::size_t i = b; i < end; ++i) y[i] = 2.0f * x[i] + y[i];
    });
  }
  benchmark::DoNotOptimize(y[kSaxpyN - 1]);
}

constexpr unsigned kSumBlocks = 4096;

void block_sum_on(benchmark::State& state, Env& e, const char* kernel = "block_sum") {
  float *in = nullptr, *out = nullptr;
  e.ctx->allocate(kSumBlocks * 256 * 4, reinterpret_cast<void**>(&in));
  e.ctx->allocate(kSumBlocks * 4, reinterpret_cast<void**>(&out));
  std::fill(in, in + kSumBlocks * 256, 1.0f);
  // Untimed: the first launch compiles the module (lazily), which would be the whole of a
  // one-iteration run of a slow variant.
  e.launch(kernel, 1, 1, 256, 1, static_cast<const float*>(in), out);
  CpuMeter meter{state};
  for (auto _ : state) e.launch(kernel, kSumBlocks, 1, 256, 1, static_cast<const float*>(in), out);
  if (out[0] != 256.0f || out[kSumBlocks - 1] != 256.0f) die(std::string(kernel) + " result");
  e.ctx->free(in);
  e.ctx->free(out);
}
void BM_BlockSum_Ptx(benchmark::State& state) { block_sum_on(state, split_env()); }
void BM_BlockSum_PtxFibers(benchmark::State& state) { block_sum_on(state, fiber_env()); }
void BM_BlockSum_PtxMbarrier(benchmark::State& state) {
  block_sum_on(state, mbarrier_split_env(), "block_sum_mbarrier");
}
void BM_BlockSum_PtxMbarrierFibers(benchmark::State& state) {
  block_sum_on(state, mbarrier_fiber_env(), "block_sum_mbarrier");
}
void BM_BlockSum_PtxMbarrierRaw(benchmark::State& state) {
  block_sum_on(state, mbarrier_split_env(), "block_sum_mbarrier_ptx");
}
void BM_BlockSum_PtxMbarrierRawFibers(benchmark::State& state) {
  block_sum_on(state, mbarrier_fiber_env(), "block_sum_mbarrier_ptx");
}
void BM_BlockSum_Baseline(benchmark::State& state) {
  std::vector<float> in(kSumBlocks * 256, 1.0f), out(kSumBlocks);
  CpuMeter meter{state};
  for (auto _ : state) {
    parallel_for(kSumBlocks, [&](std::size_t b, std::size_t end) {
      for (std::size_t blk = b; blk < end; ++blk) {
        float s = 0;
        for (unsigned t = 0; t < 256; ++t) s += in[blk * 256 + t];
        out[blk] = s;
      }
    });
  }
  benchmark::DoNotOptimize(out[0]);
}

constexpr int kN = 512, kT = 16;

void matmul_on(benchmark::State& state, Env& e) {
  float *a = nullptr, *b = nullptr, *c = nullptr;
  e.ctx->allocate(kN * kN * 4, reinterpret_cast<void**>(&a));
  e.ctx->allocate(kN * kN * 4, reinterpret_cast<void**>(&b));
  e.ctx->allocate(kN * kN * 4, reinterpret_cast<void**>(&c));
  std::fill(a, a + kN * kN, 1.0f);
  std::fill(b, b + kN * kN, 0.5f);
  CpuMeter meter{state};
  for (auto _ : state)
    e.launch("matmul", kN / kT, kN / kT, kT, kT, static_cast<const float*>(a),
             static_cast<const float*>(b), c, kN);
  if (c[kN * kN - 1] != 0.5f * kN) die("matmul result");
  e.ctx->free(a);
  e.ctx->free(b);
  e.ctx->free(c);
}
void BM_Matmul_Ptx(benchmark::State& state) { matmul_on(state, split_env()); }
void BM_Matmul_PtxFibers(benchmark::State& state) { matmul_on(state, fiber_env()); }
// The same tiling in plain C++: per 16x16 output tile, stage 16x16 tiles of a and b, then
// multiply them; tiles split over the cores.
void BM_Matmul_Baseline(benchmark::State& state) {
  std::vector<float> a(kN * kN, 1.0f), b(kN * kN, 0.5f), c(kN * kN);
  constexpr int tiles = kN / kT;
  CpuMeter meter{state};
  for (auto _ : state) {
    parallel_for(tiles * tiles, [&](std::size_t t0, std::size_t t1) {
      for (std::size_t t = t0; t < t1; ++t) {
        const int by = static_cast<int>(t) / tiles, bx = static_cast<int>(t) % tiles;
        float acc[kT][kT] = {};
        for (int k0 = 0; k0 < kN; k0 += kT) {
          float ta[kT][kT], tb[kT][kT];
          for (int y = 0; y < kT; ++y)
            for (int x = 0; x < kT; ++x) {
              ta[y][x] = a[(by * kT + y) * kN + k0 + x];
              tb[y][x] = b[(k0 + y) * kN + bx * kT + x];
            }
          for (int y = 0; y < kT; ++y)
            for (int x = 0; x < kT; ++x)
              for (int k = 0; k < kT; ++k) acc[y][x] += ta[y][k] * tb[k][x];
        }
        for (int y = 0; y < kT; ++y)
          for (int x = 0; x < kT; ++x) c[(by * kT + y) * kN + bx * kT + x] = acc[y][x];
      }
    });
  }
  benchmark::DoNotOptimize(c[0]);
}

BENCHMARK(BM_Saxpy_Baseline)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_Saxpy_Ptx)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_Saxpy_PtxThreadLoop)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_BlockSum_Baseline)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_BlockSum_Ptx)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_BlockSum_PtxFibers)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_BlockSum_PtxMbarrier)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_BlockSum_PtxMbarrierFibers)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(1.0);
BENCHMARK(BM_BlockSum_PtxMbarrierRaw)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_BlockSum_PtxMbarrierRawFibers)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(1.0);
BENCHMARK(BM_Matmul_Baseline)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_Matmul_Ptx)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_Matmul_PtxFibers)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);

// Prints ratio lines after the table: baseline time / PTX time (higher is better).
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) {
      times_[r.benchmark_name()] = r.GetAdjustedRealTime();
      const auto c = r.counters.find("proc_cpu_ms");
      if (c != r.counters.end()) cpu_[r.benchmark_name()] = c->second.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\nPTX kernels on the mock, speed relative to plain %u-thread C++ (same run):\n",
                cores());
    ratio("SAXPY 2^24 floats (flat twin)", "BM_Saxpy", "_Ptx", 0.8);
    ratio("SAXPY, thread loop (flat twin off)", "BM_Saxpy", "_PtxThreadLoop", 0);
    ratio("block sum, 256 threads, bar.sync (split)", "BM_BlockSum", "_Ptx", 0.25);
    ratio("block sum, fibers (splitting off)", "BM_BlockSum", "_PtxFibers", 0);
    ratio("block sum, cuda::barrier (mbarrier, split)", "BM_BlockSum", "_PtxMbarrier", 0);
    ratio("block sum, cuda::barrier, fibers", "BM_BlockSum", "_PtxMbarrierFibers", 0);
    ratio("block sum, cuda::ptx mbarrier (split)", "BM_BlockSum", "_PtxMbarrierRaw", 0);
    ratio("block sum, cuda::ptx mbarrier, fibers", "BM_BlockSum", "_PtxMbarrierRawFibers", 0);
    ratio("512x512 tiled matmul vs same tiling (split)", "BM_Matmul", "_Ptx", 0.5);
    ratio("tiled matmul, fibers (splitting off)", "BM_Matmul", "_PtxFibers", 0);
    std::printf("\nSplit twins against fibers (fibers time / split time, same run):\n");
    versus("block sum, bar.sync", "BM_BlockSum_PtxFibers", "BM_BlockSum_Ptx");
    versus("block sum, cuda::barrier (mbarrier waits)", "BM_BlockSum_PtxMbarrierFibers",
           "BM_BlockSum_PtxMbarrier");
    versus("block sum, cuda::ptx mbarrier.test_wait loop", "BM_BlockSum_PtxMbarrierRawFibers",
           "BM_BlockSum_PtxMbarrierRaw");
  }

 private:
  static double find(const std::map<std::string, double>& m, const std::string& name) {
    const auto it = m.find(name);
    if (it != m.end()) return it->second;
    for (const auto& [k, v] : m)  // names may carry suffixes (/min_time:...)
      if (k.rfind(name + "/", 0) == 0) return v;
    return 0;
  }
  void ratio(const char* what, const std::string& base, const char* variant, double target) {
    const double b = find(times_, base + "_Baseline"), m = find(times_, base + variant);
    const double cb = find(cpu_, base + "_Baseline"), cm = find(cpu_, base + variant);
    if (b <= 0 || m <= 0) return;
    std::printf("  %-46s wall %.3fx, process CPU %.3fx", what, b / m, cm > 0 ? cb / cm : 0.0);
    if (target > 0) std::printf(" (target >= %.2fx)", target);
    std::printf("\n");
  }
  void versus(const char* what, const std::string& slow, const std::string& fast) {
    const double s = find(times_, slow), f = find(times_, fast);
    const double cs = find(cpu_, slow), cf = find(cpu_, fast);
    if (s <= 0 || f <= 0) return;
    std::printf("  %-46s wall %.2fx, process CPU %.2fx\n", what, s / f, cf > 0 ? cs / cf : 0.0);
  }
  std::map<std::string, double> times_, cpu_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
