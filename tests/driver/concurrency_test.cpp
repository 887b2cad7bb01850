// Many host threads using one context at once, with exact result checks and a time bound.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <vector>

#include "conformance.hpp"

namespace conformance {
namespace {

using Concurrency = Driver;

constexpr int kThreads = 8;
constexpr int kIterations = 40;

// One thread's loop. Threads 0 and 1 use the shared legacy stream, 2 and 3 their per-thread
// stream, the rest streams of their own (blocking and non-blocking). Returns "" or a failure.
std::string worker(CUcontext ctx, int t) {
  auto fail = [t](const char* what, CUresult r) {
    return "thread " + std::to_string(t) + ": " + what + " -> " + name_of(r);
  };
#define CHECK_CU(call)                              \
  do {                                              \
    const CUresult r_ = (call);                     \
    if (r_ != CUDA_SUCCESS) return fail(#call, r_); \
  } while (0)
  CHECK_CU(cuCtxSetCurrent(ctx));
  CUstream s = nullptr;
  bool own = false;
  if (t < 2) {
    s = CU_STREAM_LEGACY;
  } else if (t < 4) {
    s = CU_STREAM_PER_THREAD;
  } else {
    CHECK_CU(cuStreamCreate(&s, t % 2 ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT));
    own = true;
  }
  const size_t words = 4096 + 512 * static_cast<size_t>(t);
  unsigned* in = nullptr;
  unsigned* out = nullptr;
  CHECK_CU(cuMemAllocHost_v2(reinterpret_cast<void**>(&in), words * 4));
  CHECK_CU(cuMemAllocHost_v2(reinterpret_cast<void**>(&out), words * 4));
  CUevent e = nullptr;
  CHECK_CU(cuEventCreate(&e, t % 3 ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING));
  std::string error;
  for (int it = 0; it < kIterations && error.empty(); ++it) {
    const unsigned fill = 0x01000000u * static_cast<unsigned>(t) + static_cast<unsigned>(it);
    CUdeviceptr a = 0, b = 0;
    CHECK_CU(cuMemAlloc_v2(&a, words * 4));
    CHECK_CU(cuMemAlloc_v2(&b, words * 4));
    for (size_t i = 0; i < words; ++i) in[i] = fill ^ static_cast<unsigned>(i * 2654435761u);
    // b = fill everywhere; then the first half of b is replaced by `in` via a.
    CHECK_CU(cuMemsetD32Async(b, fill, words, s));
    CHECK_CU(cuMemcpyHtoDAsync_v2(a, in, words * 4, s));
    CHECK_CU(cuMemcpyDtoDAsync_v2(b, a, words * 2, s));
    CHECK_CU(cuEventRecord(e, s));
    CHECK_CU(cuMemcpyDtoHAsync_v2(out, b, words * 4, s));
    if (it % 2) {
      CHECK_CU(cuStreamSynchronize(s));
    } else {
      CUevent done = nullptr;
      CHECK_CU(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
      CHECK_CU(cuEventRecord(done, s));
      CHECK_CU(cuEventSynchronize(done));
      CHECK_CU(cuEventDestroy_v2(done));
    }
    const CUresult q = cuEventQuery(e);
    if (q != CUDA_SUCCESS) return fail("cuEventQuery after synchronisation", q);
    for (size_t i = 0; i < words; ++i) {
      const unsigned want = i < words / 2 ? in[i] : fill;
      if (out[i] != want) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "thread %d iteration %d word %zu: got 0x%08x, want 0x%08x",
                      t, it, i, out[i], want);
        error = buf;
        break;
      }
    }
    // Synchronous calls interleaved with everyone else's work.
    CHECK_CU(cuMemsetD8_v2(a, static_cast<unsigned char>(t), 64));
    unsigned char back[64];
    CHECK_CU(cuMemcpyDtoH_v2(back, a, 64));
    for (unsigned char c : back)
      if (c != static_cast<unsigned char>(t))
        error = "thread " + std::to_string(t) + ": memset lost";
    CHECK_CU(cuMemFree_v2(a));
    CHECK_CU(cuMemFree_v2(b));
  }
  CHECK_CU(cuEventDestroy_v2(e));
  CHECK_CU(cuMemFreeHost(in));
  CHECK_CU(cuMemFreeHost(out));
  if (own) CHECK_CU(cuStreamDestroy_v2(s));
  CHECK_CU(cuCtxPopCurrent_v2(nullptr));
#undef CHECK_CU
  return error;
}

TEST_F(Concurrency, EightThreadsWithExactResults) {
  std::vector<std::future<std::string>> results;
  for (int t = 0; t < kThreads; ++t)
    results.push_back(std::async(std::launch::async, worker, ctx, t));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int t = 0; t < kThreads; ++t) {
    if (results[t].wait_until(deadline) != std::future_status::ready) {
      // A deadlock must fail the test, not hang the suite (the futures cannot be abandoned).
      std::fprintf(stderr, "Concurrency: thread %d did not finish within 60 s (deadlock?)\n", t);
      std::_Exit(1);
    }
    EXPECT_EQ(results[t].get(), "") << "thread " << t;
  }
}

TEST_F(Concurrency, ContextsCreatedAndDestroyedInParallel) {
  std::vector<std::future<std::string>> results;
  for (int t = 0; t < kThreads; ++t) {
    results.push_back(std::async(std::launch::async, [this, t]() -> std::string {
      for (int i = 0; i < 10; ++i) {
        CUcontext c = nullptr;
        if (cuCtxCreate_v2(&c, 0, dev) != CUDA_SUCCESS) return "create failed";
        CUdeviceptr p = 0;
        CUstream s = nullptr;
        if (cuMemAlloc_v2(&p, 4096 * (t + 1)) != CUDA_SUCCESS) return "alloc failed";
        if (cuStreamCreate(&s, 0) != CUDA_SUCCESS) return "stream failed";
        if (cuMemsetD8Async(p, static_cast<unsigned char>(i), 4096, s) != CUDA_SUCCESS)
          return "memset";
        unsigned char b = 0xff;
        if (cuMemcpyDtoH_v2(&b, p, 1) != CUDA_SUCCESS) return "copy failed";
        if (b != static_cast<unsigned char>(i)) return "wrong value";
        // Destroying the context frees the allocation and the stream with it.
        if (cuCtxDestroy_v2(c) != CUDA_SUCCESS) return "destroy failed";
      }
      return "";
    }));
  }
  for (auto& r : results) {
    ASSERT_EQ(r.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    EXPECT_EQ(r.get(), "");
  }
}

}  // namespace
}  // namespace conformance
