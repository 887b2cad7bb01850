// Timings of the mock backend: copy_sync against plain memcpy, submission latency, allocation.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "cudamux/backend.hpp"

namespace be = cudamux::backend;

namespace {

struct Env {
  std::unique_ptr<be::Backend> backend;
  std::unique_ptr<be::DeviceContext> ctx;
  std::unique_ptr<be::Queue> queue;

  static Env& get() {
    static Env env = [] {
      Env e;
      void* h = ::dlopen(CUDAMUX_MOCK_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
      if (h == nullptr) throw std::runtime_error(::dlerror());
      auto create = reinterpret_cast<be::Backend* (*)(const be::PluginHost&, std::string&)>(
          ::dlsym(h, be::kCreateSymbol));
      be::PluginHost host;
      host.logger = std::make_shared<spdlog::logger>(
          "bench", std::make_shared<spdlog::sinks::null_sink_mt>());
      std::string error;
      e.backend.reset(create(host, error));
      if (!e.backend) throw std::runtime_error(error);
      e.backend->open_context(0, 0, e.ctx);
      e.ctx->create_queue(0, 0, e.queue);
      return e;
    }();
    return env;
  }
};

be::CopyDesc copy_1d(void* dst, const void* src, std::size_t n) {
  be::CopyDesc d;
  d.dst = dst;
  d.src = src;
  d.width_bytes = n;
  d.dst_kind = be::MemKind::device;
  d.dst_device = 0;
  return d;
}

void BM_HostMemcpy(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<char> a(n, 1), b(n, 2);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n));
}

void* device_buffer(std::size_t n) {
  void* d = nullptr;
  Env::get().ctx->allocate(n, &d);
  std::memset(d, 0, n);  // fault the pages in, as the host buffers are
  return d;
}

void BM_CopySyncHtoD(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<char> a(n, 1);
  void* d = device_buffer(n);
  for (auto _ : state) Env::get().queue->copy_sync(copy_1d(d, a.data(), n));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n));
  Env::get().ctx->free(d);
}

void BM_CopyAsyncThenSynchronize(benchmark::State& state) {  // the worker-thread path
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<char> a(n, 1);
  void* d = device_buffer(n);
  for (auto _ : state) {
    Env::get().queue->copy(copy_1d(d, a.data(), n));
    Env::get().queue->synchronize();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n));
  Env::get().ctx->free(d);
}

void BM_HostFunctionRoundTrip(benchmark::State& state) {
  for (auto _ : state) {
    Env::get().queue->host_function([](void*) {}, nullptr);
    Env::get().queue->synchronize();
  }
}

void BM_SubmitThroughput(benchmark::State& state) {  // 1000 tiny fills, then one sync
  void* d = device_buffer(256);
  be::FillDesc f;
  f.dst = d;
  f.elem_size = 4;
  f.width_elems = 64;
  for (auto _ : state) {
    for (int i = 0; i < 1000; ++i) Env::get().queue->fill(f);
    Env::get().queue->synchronize();
  }
  state.SetItemsProcessed(state.iterations() * 1000);
  Env::get().ctx->free(d);
}

void BM_AllocFree(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    void* p = nullptr;
    Env::get().ctx->allocate(n, &p);
    Env::get().ctx->free(p);
  }
}

constexpr std::int64_t k64MiB = 64 << 20;
BENCHMARK(BM_HostMemcpy)->Arg(k64MiB)->Arg(1 << 16)->UseRealTime();
BENCHMARK(BM_CopySyncHtoD)->Arg(k64MiB)->Arg(1 << 16)->UseRealTime();
BENCHMARK(BM_CopyAsyncThenSynchronize)->Arg(k64MiB)->Arg(1 << 16)->UseRealTime();
BENCHMARK(BM_HostFunctionRoundTrip)->UseRealTime();
BENCHMARK(BM_SubmitThroughput)->UseRealTime();
BENCHMARK(BM_AllocFree)->Arg(4096)->Arg(64 << 20)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
