// Load (issue 9): 16 host threads x 1,000 iterations of allocate / copy / memset / launch /
// free on streams of their own and on the default streams, in one context. Every result is
// checked exactly, device memory returns to where it started, and a watchdog fails the test
// (instead of letting CTest's timeout kill a hung process) if the threads do not finish.
#include <cuda.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 16;
constexpr int kIterations = 1000;

std::string name_of(CUresult r) {
  const char* n = nullptr;
  return cuGetErrorName(r, &n) == CUDA_SUCCESS ? n : "CUresult " + std::to_string(r);
}

// Bound on the whole run; generous for sanitizer builds on a loaded 2-core machine.
int watchdog_seconds() {
  const char* v = std::getenv("CUDAMUX_LOAD_WATCHDOG_S");
  return v != nullptr ? std::atoi(v) : 600;
}

constexpr const char* kKernel = R"(
extern "C" __global__ void add(unsigned* p, unsigned n, unsigned v) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += v;
}
)";

// The kernel through NVRTC and cuModuleLoadData, or null with the reason in `why`.
CUfunction build_kernel(std::string& why) {
  nvrtcProgram prog = nullptr;
  if (nvrtcCreateProgram(&prog, kKernel, "load.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    why = "nvrtcCreateProgram failed";
    return nullptr;
  }
  const nvrtcResult cr = nvrtcCompileProgram(prog, 0, nullptr);
  std::string image;
  if (cr == NVRTC_SUCCESS) {
    std::size_t size = 0;
    nvrtcGetPTXSize(prog, &size);
    image.resize(size);
    nvrtcGetPTX(prog, image.data());
  } else {
    why = std::string("nvrtcCompileProgram: ") + nvrtcGetErrorString(cr);
  }
  nvrtcDestroyProgram(&prog);
  if (image.empty()) return nullptr;
  CUmodule mod = nullptr;
  if (CUresult r = cuModuleLoadData(&mod, image.data()); r != CUDA_SUCCESS) {
    why = "cuModuleLoadData: " + name_of(r);
    return nullptr;
  }
  CUfunction f = nullptr;
  if (CUresult r = cuModuleGetFunction(&f, mod, "add"); r != CUDA_SUCCESS) {
    why = "cuModuleGetFunction: " + name_of(r);
    return nullptr;
  }
  return f;
}

struct Worker {
  int t;
  CUcontext ctx;
  CUfunction kernel;  // null: no launches
  std::atomic<int>* progress;
  std::string error;

  void run() { error = loop(); }

  std::string loop() {
    auto fail = [this](int it, const char* what, CUresult r) {
      return "thread " + std::to_string(t) + " iteration " + std::to_string(it) + ": " + what +
             " -> " + name_of(r);
    };
#define LOAD_CHECK(call)                                \
  do {                                                  \
    const CUresult r_ = (call);                         \
    if (r_ != CUDA_SUCCESS) return fail(it, #call, r_); \
  } while (0)
    int it = -1;
    LOAD_CHECK(cuCtxSetCurrent(ctx));
    CUstream own = nullptr;
    LOAD_CHECK(cuStreamCreate(&own, t % 2 ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT));
    // Pinned buffers (async copies really are asynchronous) sized for the largest iteration.
    constexpr std::size_t kMaxWords = 2048;
    unsigned* in = nullptr;
    unsigned* out = nullptr;
    LOAD_CHECK(cuMemAllocHost(reinterpret_cast<void**>(&in), kMaxWords * 4));
    LOAD_CHECK(cuMemAllocHost(reinterpret_cast<void**>(&out), kMaxWords * 4));
    std::string result;
    for (it = 0; it < kIterations && result.empty(); ++it) {
      // Own stream on most iterations, the legacy and per-thread default streams on others.
      const CUstream s = it % 4 == 1 ? CU_STREAM_LEGACY : it % 4 == 3 ? CU_STREAM_PER_THREAD : own;
      const std::size_t words = 1 + (static_cast<std::size_t>(t) * 131 + it * 17) % kMaxWords;
      const unsigned seed = 0x9e3779b9u * static_cast<unsigned>(t * kIterations + it + 1);
      CUdeviceptr a = 0, b = 0;
      LOAD_CHECK(cuMemAlloc(&a, words * 4));
      LOAD_CHECK(cuMemAlloc(&b, words * 4));
      for (std::size_t i = 0; i < words; ++i) in[i] = seed ^ static_cast<unsigned>(i * 2654435761u);
      // b := fill; a := in; b[0, half) := a[0, half); b += add (kernel); out := b.
      const unsigned fill = seed >> 3;
      const std::size_t half = words / 2;
      const unsigned add = static_cast<unsigned>(t + it);
      LOAD_CHECK(cuMemsetD32Async(b, fill, words, s));
      LOAD_CHECK(cuMemcpyHtoDAsync(a, in, words * 4, s));
      LOAD_CHECK(cuMemcpyDtoDAsync(b, a, half * 4, s));
      if (kernel != nullptr) {
        unsigned n = static_cast<unsigned>(words);
        unsigned v = add;
        void* args[] = {&b, &n, &v};
        LOAD_CHECK(cuLaunchKernel(kernel, static_cast<unsigned>((words + 127) / 128), 1, 1, 128, 1,
                                  1, 0, s, args, nullptr));
      }
      LOAD_CHECK(cuMemcpyDtoHAsync(out, b, words * 4, s));
      LOAD_CHECK(cuStreamSynchronize(s));
      const unsigned plus = kernel != nullptr ? add : 0;
      for (std::size_t i = 0; i < words; ++i) {
        const unsigned want = (i < half ? in[i] : fill) + plus;
        if (out[i] != want) {
          char msg[200];
          std::snprintf(msg, sizeof msg,
                        "thread %d iteration %d: word %zu of %zu is %08x, want %08x", t, it, i,
                        words, out[i], want);
          result = msg;
          break;
        }
      }
      // Freed while other threads are mid-copy on other streams: must touch only ours.
      LOAD_CHECK(cuMemFree(a));
      LOAD_CHECK(cuMemFree(b));
      progress->fetch_add(1, std::memory_order_relaxed);
    }
    it = kIterations;
    LOAD_CHECK(cuStreamDestroy(own));
    LOAD_CHECK(cuMemFreeHost(in));
    LOAD_CHECK(cuMemFreeHost(out));
    return result;
#undef LOAD_CHECK
  }
};

TEST(Load, SixteenThreadsThousandIterations) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  CUdevice dev = 0;
  ASSERT_EQ(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  CUcontext ctx = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);

  std::string why;
  CUfunction kernel = build_kernel(why);
  if (kernel == nullptr) {
    // Only acceptable when the backend says it cannot (no compiler, launches unsupported).
    std::printf("load: no kernel launches (%s)\n", why.c_str());
    EXPECT_TRUE(why.find("NOT_SUPPORTED") != std::string::npos ||
                why.find("nvrtcCompileProgram") != std::string::npos)
        << why;
  }

  std::size_t free_before = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo(&free_before, &total), CUDA_SUCCESS);

  std::atomic<int> progress{0};
  std::vector<Worker> workers;
  for (int t = 0; t < kThreads; ++t) workers.push_back({t, ctx, kernel, &progress, {}});
  std::atomic<int> finished{0};
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (Worker& w : workers) {
    threads.emplace_back([&w, &finished] {
      w.run();
      finished.fetch_add(1);
    });
  }
  // The watchdog: a deadlock cannot be joined, so it ends the process with a failure.
  const auto deadline = start + std::chrono::seconds(watchdog_seconds());
  while (finished.load() < kThreads) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr,
                   "load: watchdog: %d of %d threads finished after %d s, %d of %d iterations "
                   "done; deadlock or livelock\n",
                   finished.load(), kThreads, watchdog_seconds(), progress.load(),
                   kThreads * kIterations);
      std::fflush(stderr);
      std::_Exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (std::thread& th : threads) th.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const Worker& w : workers) EXPECT_EQ(w.error, "");
  EXPECT_EQ(progress.load(), kThreads * kIterations);
  std::printf("load: %d threads x %d iterations in %.2f s (%s)\n", kThreads, kIterations, seconds,
              kernel != nullptr ? "with launches" : "no launches");

  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  std::size_t free_after = 0;
  ASSERT_EQ(cuMemGetInfo(&free_after, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_after, free_before) << "device memory not returned";
  EXPECT_EQ(cuDevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
}

}  // namespace
