// Shared pieces of the backend-parameterized driver conformance suite.
//
// The suite is written once against the CUDA driver API (our api/include/cuda.h,
// compiled with __CUDA_API_VERSION_INTERNAL so that every exported symbol is
// declared under its real name: cuMemAlloc_v2, cuMemcpyHtoD_v2_ptds, ...) and
// CTest runs it once per backend with CUDAMUX_BACKEND=<name>. Nothing here knows
// which backend is underneath, except CUDAMUX_KNOWN_DIFFERENCE.
#pragma once

#include <cuda.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace conformance {

// The backend this run targets (CUDAMUX_BACKEND, as set by CTest; "mock" by default).
inline std::string backend() {
  const char* b = std::getenv("CUDAMUX_BACKEND");
  return b && *b ? b : "mock";
}

inline std::string name_of(CUresult r) {
  const char* name = nullptr;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
    return "CUresult(" + std::to_string(r) + ")";
  return name;
}

inline ::testing::AssertionResult cu_equal(const char* expected_expr, const char* actual_expr,
                                           CUresult expected, CUresult actual) {
  if (expected == actual) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << actual_expr << " returned " << name_of(actual) << ", expected " << name_of(expected)
         << " (" << expected_expr << ")";
}

// How long a correct implementation may take for anything the suite waits on; a
// wrong one (a deadlock, a lost wake-up) fails after this instead of hanging.
inline constexpr auto kTimeout = std::chrono::seconds(10);

// Waits until `pred` holds or kTimeout passes; returns whether it held.
template <class Pred>
bool eventually(Pred&& pred, std::chrono::milliseconds limit = kTimeout) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// A gate a host function (cuLaunchHostFunc) blocks on until the test opens it, so
// that work queued behind it is observably incomplete. The host function never
// waits longer than kTimeout, so a test that forgets to open it cannot hang.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::atomic<bool> entered{false};
  std::atomic<bool> timed_out{false};

  void release() {
    {
      std::lock_guard lock(mu);
      open = true;
    }
    cv.notify_all();
  }
  static void CUDA_CB block(void* p) {
    auto* g = static_cast<Gate*>(p);
    g->entered = true;
    std::unique_lock lock(g->mu);
    if (!g->cv.wait_for(lock, kTimeout, [g] { return g->open; })) g->timed_out = true;
  }
};

// Counts host-function invocations.
inline void CUDA_CB count_call(void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(1); }

// Fixture: cuInit once per process, a fresh context (cuCtxCreate) per test, destroyed
// afterwards, and a check that nothing leaked: device memory back to the level a
// fresh context saw before the first test, no context left current on this thread.
class Driver : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  void SetUp() override;
  void TearDown() override;

  // Device memory free in a fresh context (measured once per process).
  static size_t baseline_free();

  CUdevice dev = 0;
  CUcontext ctx = nullptr;
};

// A device buffer freed at scope exit.
struct DeviceBuffer {
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

}  // namespace conformance

// EXPECT_CU(expected, call): compares CUresults and prints their names.
#define EXPECT_CU(expected, call) EXPECT_PRED_FORMAT2(::conformance::cu_equal, expected, call)
#define ASSERT_CU(expected, call) ASSERT_PRED_FORMAT2(::conformance::cu_equal, expected, call)
// The oracle run (NVIDIA's driver directly, CUDAMUX_ORACLE=1 set by the GPU script): cases
// whose call sequence crashes NVIDIA's driver 580 skip themselves there.
#define CUDAMUX_SKIP_ON_ORACLE(why)                        \
  do {                                                     \
    const char* oracle_ = std::getenv("CUDAMUX_ORACLE");   \
    if (oracle_ && *oracle_ == '1') GTEST_SKIP() << (why); \
  } while (0)

// Checks of what NVIDIA's driver leaves undefined (null pointers it dereferences, destroyed or
// freed objects it does not track): cudamux answers them; the oracle run (CUDAMUX_BACKEND=cuda
// against NVIDIA's driver directly) skips them.
#define EXPECT_CU_CUDAMUX(expected, call)     \
  do {                                        \
    if (::conformance::backend() != "cuda") { \
      EXPECT_CU(expected, call);              \
    }                                         \
  } while (0)
#define EXPECT_OK(call) EXPECT_CU(CUDA_SUCCESS, call)
#define ASSERT_OK(call) ASSERT_CU(CUDA_SUCCESS, call)

// Marks a known difference of one backend: put it first in a test; on that backend
// the test is skipped with the reason (shown by ctest --output-on-failure and listed
// in docs/conformance.md), on every other backend the test runs normally.
//   TEST_F(Driver, Something) { CUDAMUX_KNOWN_DIFFERENCE("hip", "why hip differs"); ... }
#define CUDAMUX_KNOWN_DIFFERENCE(BACKEND, REASON)                                        \
  do {                                                                                   \
    if (::conformance::backend() == (BACKEND))                                           \
      GTEST_SKIP() << "known difference on backend '" << (BACKEND) << "': " << (REASON); \
  } while (0)
