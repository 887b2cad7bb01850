// Kernels on the mock backend (issue 3). Each result is printed as a ratio against a plain
// multithreaded C++ loop doing the same work on the same cores, measured in the same run:
//   * SAXPY of 2^24 floats                       (target >= 0.8x)
//   * 256-thread block sum reduction, __syncthreads (target >= 0.05x; issue 18: >= 0.25x)
//   * 512x512 tiled shared-memory matmul vs a naive triple loop (target >= 0.1x) and vs the
//     same 16x16 tiling in plain C++ threads (target >= 0.5x, issue 18)
//   * compile of SAXPY: first (no cache) and cached (targets <= 300 ms / <= 2 ms; issue 18:
//     first <= 150 ms)
// Run: build/bin/cudamux_bench_kernels
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cudamux/backend.hpp"
#include "mock_backend.hpp"

namespace be = cudamux::backend;

namespace {

[[noreturn]] void die(const std::string& what) { cudamux::bench::die("bench_kernels", what); }

std::unique_ptr<be::Backend> make_backend(const std::string& toml_text) {
  return cudamux::bench::make_mock_backend("bench_kernels", toml_text);
}

const char* kSource = R"(
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void block_sum(const float* in, float* out) {
  __shared__ float s[256];
  const unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * 256 + t];
  __syncthreads();
  for (unsigned d = 128; d > 0; d /= 2) {
    if (t < d) s[t] += s[t + d];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}
#define TILE 16
extern "C" __global__ void matmul(const float* a, const float* b, float* c, int n) {
  __shared__ float ta[TILE][TILE];
  __shared__ float tb[TILE][TILE];
  const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (int k0 = 0; k0 < n; k0 += TILE) {
    ta[threadIdx.y][threadIdx.x] = a[row * n + k0 + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = b[(k0 + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  c[row * n + col] = acc;
}
)";

struct Env {
  std::unique_ptr<be::Backend> backend;
  std::unique_ptr<be::DeviceContext> ctx;
  std::unique_ptr<be::Queue> queue;
  std::unique_ptr<be::Module> module;
  explicit Env(const char* extra_config = "") {
    backend = make_backend(std::string("[mock]\nmemory = 2147483648\n") + extra_config);
    if (!backend->open_context(0, 0, ctx).ok()) die("open_context");
    if (!ctx->create_queue(CU_STREAM_NON_BLOCKING, 0, queue).ok()) die("create_queue");
    be::CompileRequest r;
    r.source = kSource;
    r.name = "bench.cu";
    be::CompileResult res;
    if (!backend->compiler()->compile(r, res).ok() || !res.success) die("compile: " + res.log);
    if (!ctx->load_module(be::native_image(res.image.data()), module).ok()) die("load_module");
  }
  // Host <-> device through the queue: in memcheck mode host code may not touch device memory.
  void copy(void* dst, const void* src, std::size_t bytes) {
    be::CopyDesc d;
    d.dst = dst;
    d.src = src;
    d.width_bytes = bytes;
    if (!queue->copy_sync(d).ok()) die("copy");
  }
  template <class... A>
  void launch(const char* name, unsigned gx, unsigned gy, unsigned bx, unsigned by, A... args) {
    be::Function* f = module->function(name);
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
Env& env() {
  static Env e;
  return e;
}
// The same kernels in memcheck mode (issue 9): every access checked, barriers on fibers.
Env& memcheck_env() {
  static Env e("memcheck = true\n");
  return e;
}

unsigned cores() { return std::max(1u, std::thread::hardware_concurrency()); }

// The baseline: the same work split over one thread per core, threads created per run
// (as cheap as a pool for these sizes: a few microseconds against milliseconds).
template <class F>
void parallel_for(std::size_t n, F f) {
  const unsigned t = cores();
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < t; ++i) threads.emplace_back([&, i] { f(n * i / t, n * (i + 1) / t); });
  for (auto& th : threads) th.join();
}

constexpr unsigned kSaxpyN = 1u << 24;

void saxpy_on(benchmark::State& state, Env& e) {
  float* x = nullptr;
  float* y = nullptr;
  e.ctx->allocate(kSaxpyN * 4, reinterpret_cast<void**>(&x));
  e.ctx->allocate(kSaxpyN * 4, reinterpret_cast<void**>(&y));
  std::vector<float> host(kSaxpyN, 1.0f);
  e.copy(x, host.data(), kSaxpyN * 4);
  std::fill(host.begin(), host.end(), 2.0f);
  e.copy(y, host.data(), kSaxpyN * 4);
  for (auto _ : state)
    e.launch("saxpy", kSaxpyN / 512, 1, 512, 1, 2.0f, static_cast<const float*>(x), y, kSaxpyN);
  e.copy(host.data(), y, kSaxpyN * 4);
  benchmark::DoNotOptimize(host[kSaxpyN - 1]);
  e.ctx->free(x);
  e.ctx->free(y);
}
void BM_Saxpy_Mock(benchmark::State& state) { saxpy_on(state, env()); }
void BM_Saxpy_Memcheck(benchmark::State& state) { saxpy_on(state, memcheck_env()); }
void BM_Saxpy_Baseline(benchmark::State& state) {
  std::vector<float> x(kSaxpyN, 1.0f), y(kSaxpyN, 2.0f);
  for (auto _ : state) {
    parallel_for(kSaxpyN, [&](std::size_t b, std::size_t end) {
      for (std::size_t i = b; i < end; ++i) y[i] = 2.0f * x[i] + y[i];
    });
  }
  benchmark::DoNotOptimize(y[kSaxpyN - 1]);
}

constexpr unsigned kSumBlocks = 4096;

void block_sum_on(benchmark::State& state, Env& e) {
  float* in = nullptr;
  float* out = nullptr;
  e.ctx->allocate(kSumBlocks * 256 * 4, reinterpret_cast<void**>(&in));
  e.ctx->allocate(kSumBlocks * 4, reinterpret_cast<void**>(&out));
  const std::vector<float> ones(kSumBlocks * 256, 1.0f);
  e.copy(in, ones.data(), ones.size() * 4);
  for (auto _ : state)
    e.launch("block_sum", kSumBlocks, 1, 256, 1, static_cast<const float*>(in), out);
  float first = 0;
  e.copy(&first, out, sizeof first);
  if (first != 256.0f) die("block_sum result");
  e.ctx->free(in);
  e.ctx->free(out);
}
void BM_BlockSum_Mock(benchmark::State& state) { block_sum_on(state, env()); }
void BM_BlockSum_Memcheck(benchmark::State& state) { block_sum_on(state, memcheck_env()); }
void BM_BlockSum_Baseline(benchmark::State& state) {
  std::vector<float> in(kSumBlocks * 256, 1.0f), out(kSumBlocks);
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

constexpr int kN = 512;

void BM_Matmul_Mock(benchmark::State& state) {
  auto& e = env();
  float *a = nullptr, *b = nullptr, *c = nullptr;
  e.ctx->allocate(kN * kN * 4, reinterpret_cast<void**>(&a));
  e.ctx->allocate(kN * kN * 4, reinterpret_cast<void**>(&b));
  e.ctx->allocate(kN * kN * 4, reinterpret_cast<void**>(&c));
  std::fill(a, a + kN * kN, 1.0f);
  std::fill(b, b + kN * kN, 0.5f);
  for (auto _ : state)
    e.launch("matmul", kN / 16, kN / 16, 16, 16, static_cast<const float*>(a),
             static_cast<const float*>(b), c, kN);
  if (c[kN * kN - 1] != 0.5f * kN) die("matmul result");
  e.ctx->free(a);
  e.ctx->free(b);
  e.ctx->free(c);
}
void BM_Matmul_Baseline(benchmark::State& state) {  // naive triple loop, rows split over cores
  std::vector<float> a(kN * kN, 1.0f), b(kN * kN, 0.5f), c(kN * kN);
  for (auto _ : state) {
    parallel_for(kN, [&](std::size_t r0, std::size_t r1) {
      for (std::size_t i = r0; i < r1; ++i)
        for (int j = 0; j < kN; ++j) {
          float acc = 0;
          for (int k = 0; k < kN; ++k) acc += a[i * kN + k] * b[k * kN + j];
          c[i * kN + j] = acc;
        }
    });
  }
  benchmark::DoNotOptimize(c[0]);
}

// The same algorithm as the kernel, in plain C++: 16x16 output tiles, each computed from
// 16x16 tiles of a and b copied to local arrays (the kernel's shared memory), tiles split over
// one thread per core. The fair reference for the mock's matmul (the naive loop above walks b
// by columns and is no reference for a tiled kernel).
void BM_MatmulTiled_Baseline(benchmark::State& state) {
  constexpr int T = 16;
  std::vector<float> a(kN * kN, 1.0f), b(kN * kN, 0.5f), c(kN * kN);
  const int tiles = kN / T;
  for (auto _ : state) {
    parallel_for(static_cast<std::size_t>(tiles) * tiles, [&](std::size_t t0, std::size_t t1) {
      for (std::size_t tile = t0; tile < t1; ++tile) {
        const int by = static_cast<int>(tile) / tiles, bx = static_cast<int>(tile) % tiles;
        float acc[T][T] = {};
        for (int k0 = 0; k0 < kN; k0 += T) {
          float ta[T][T], tb[T][T];
          for (int y = 0; y < T; ++y)
            for (int x = 0; x < T; ++x) {
              ta[y][x] = a[(by * T + y) * kN + k0 + x];
              tb[y][x] = b[(k0 + y) * kN + bx * T + x];
            }
          for (int y = 0; y < T; ++y)
            for (int x = 0; x < T; ++x)
              for (int k = 0; k < T; ++k) acc[y][x] += ta[y][k] * tb[k][x];
        }
        for (int y = 0; y < T; ++y)
          for (int x = 0; x < T; ++x) c[(by * T + y) * kN + bx * T + x] = acc[y][x];
      }
    });
  }
  if (c[kN * kN - 1] != 0.5f * kN) die("tiled matmul baseline result");
  benchmark::DoNotOptimize(c[0]);
}

const char* kSaxpyOnly = R"(
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

void compile_saxpy(be::Backend& b) {
  be::CompileRequest r;
  r.source = kSaxpyOnly;
  r.name = "saxpy.cu";
  r.options.fmad = false;
  be::CompileResult res;
  if (!b.compiler()->compile(r, res).ok() || !res.success) die("compile saxpy: " + res.log);
}

// CPU time of finished child processes (the compiler runs), in ms: on a machine shared with
// other work, wall time mostly measures the load; this is what a compile costs.
double children_cpu_ms() {
  rusage u{};
  ::getrusage(RUSAGE_CHILDREN, &u);
  auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  return ms(u.ru_utime) + ms(u.ru_stime);
}

void BM_CompileSaxpy_First(benchmark::State& state) {
  ::setenv("CUDA_CACHE_DISABLE", "1", 1);
  auto b = make_backend("");
  ::unsetenv("CUDA_CACHE_DISABLE");
  // Once untimed: builds the precompiled prelude if this machine has none yet (once per
  // compiler, CPU, headers and flags; kept with CUDA_CACHE_DISABLE=1, which turns off the
  // cache of compiled programs). Every timed compile is then a first compile of the program.
  compile_saxpy(*b);
  const double cpu0 = children_cpu_ms();
  for (auto _ : state) compile_saxpy(*b);
  state.counters["compiler_cpu_ms"] =
      (children_cpu_ms() - cpu0) / static_cast<double>(state.iterations());
}
void BM_CompileSaxpy_Cached(benchmark::State& state) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("cudamux-bench-cache-" + std::to_string(::getpid()));
  auto b = make_backend("[mock]\ncache_dir = \"" + dir.string() + "\"\n");
  compile_saxpy(*b);  // fills the cache
  for (auto _ : state) compile_saxpy(*b);
  std::filesystem::remove_all(dir);
}

BENCHMARK(BM_Saxpy_Baseline)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_Saxpy_Mock)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_Saxpy_Memcheck)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_BlockSum_Baseline)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_BlockSum_Mock)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_BlockSum_Memcheck)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_Matmul_Baseline)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_MatmulTiled_Baseline)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_Matmul_Mock)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_CompileSaxpy_First)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(10);
BENCHMARK(BM_CompileSaxpy_Cached)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.5);

// Prints ratio lines after the table: baseline time / mock time (higher is better).
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) {
      times_[r.benchmark_name()] = r.GetAdjustedRealTime();
      if (auto c = r.counters.find("compiler_cpu_ms"); c != r.counters.end())
        first_cpu_ = c->second;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\nKernels on the mock, speed relative to a plain %u-thread C++ loop (same run):\n",
                cores());
    ratio("SAXPY 2^24 floats", "BM_Saxpy", 0.8);
    ratio("block sum, 256 threads, __syncthreads", "BM_BlockSum", 0.25);
    ratio("512x512 tiled matmul vs naive loop", "BM_Matmul", 0.1);
    ratio("512x512 tiled matmul vs same tiling in C++", "BM_MatmulTiled", 0.5, "BM_Matmul_Mock");
    auto first = find("BM_CompileSaxpy_First"), cached = find("BM_CompileSaxpy_Cached");
    std::printf(
        "  compile SAXPY: first %.1f ms (target <= 150; compiler CPU %.1f ms), cached "
        "%.3f ms (target <= 2)\n",
        first, first_cpu_, cached);
  }

 private:
  double find(const std::string& prefix) {
    for (const auto& [k, v] : times_)
      if (k.rfind(prefix, 0) == 0) return v;
    return 0;
  }
  void ratio(const char* what, const std::string& base, double target,
             const std::string& mock = {}) {
    const double b = find(base + "_Baseline"), m = find(mock.empty() ? base + "_Mock" : mock);
    if (b > 0 && m > 0) std::printf("  %-42s %.3fx (target >= %.2fx)\n", what, b / m, target);
  }
  std::map<std::string, double> times_;
  double first_cpu_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
