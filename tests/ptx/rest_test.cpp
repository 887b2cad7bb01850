// ptx-rest (issue 15 items 2 and 4): what the mock offers NVRTC kernels holds for kernels from
// nvcc's PTX (data/rest/rest.cu, compute_75/80/90, made by data/rest/make_fixtures.sh), and
// the instructions added for them. Through our libcuda.so.1 on the mock. The executable is
// registered three times (tests/ptx/CMakeLists.txt): plain (CUDAMUX_MEMCHECK=0), with
// CUDAMUX_MEMCHECK=1 (suite PtxMemcheck; the others skip) and with a [[mock.faults]] config
// (suite PtxFaults; the others skip).
#include <cuda.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "cudamux/ptx/emit_cpp.hpp"
#include "cudamux/ptx/ir.hpp"

namespace {

#define ASSERT_OK(x) ASSERT_EQ(CUDA_SUCCESS, (x)) << #x
#define EXPECT_OK(x) EXPECT_EQ(CUDA_SUCCESS, (x)) << #x

std::string mode() {
  const char* m = std::getenv("CUDAMUX_PTX_REST_MODE");
  return m ? m : "plain";
}

// rest.cu's PTX; `name` "mbarrier": mbarrier.cu's (kernels of the mbarrier twins).
std::string fixture(int arch, const char* name = "rest") {
  std::ifstream in(std::string(CUDAMUX_PTX_DATA) + "/rest/" + name + ".compute_" +
                   std::to_string(arch) + ".ptx");
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// A fresh primary context per test (sticky errors end a context).
class PtxRest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (mode() != expected_mode())
      GTEST_SKIP() << "runs in the " << expected_mode() << " registration";
    ASSERT_OK(cuInit(0));
    ASSERT_OK(cuDeviceGet(&dev_, 0));
    ASSERT_OK(cuDevicePrimaryCtxRetain(&ctx_, dev_));
    ASSERT_OK(cuCtxSetCurrent(ctx_));
    const std::string ptx = fixture(GetParam());
    ASSERT_FALSE(ptx.empty()) << "missing fixture";
    ASSERT_OK(cuModuleLoadData(&module_, ptx.c_str()));
  }
  void TearDown() override {
    if (ctx_ != nullptr) {
      cuDevicePrimaryCtxRelease(dev_);
      cuDevicePrimaryCtxReset(dev_);  // sticky errors of a test stay in it
    }
  }
  virtual std::string expected_mode() const { return "plain"; }
  CUfunction fn(const char* name) {
    CUfunction f = nullptr;
    EXPECT_OK(cuModuleGetFunction(&f, module_, name));
    return f;
  }
  // A kernel of mbarrier.cu's module, loaded at first use.
  CUfunction mbarrier_fn(const char* name) {
    if (mbarrier_module_ == nullptr) {
      const std::string ptx = fixture(GetParam(), "mbarrier");
      EXPECT_FALSE(ptx.empty()) << "missing fixture";
      EXPECT_OK(cuModuleLoadData(&mbarrier_module_, ptx.c_str()));
    }
    CUfunction f = nullptr;
    EXPECT_OK(cuModuleGetFunction(&f, mbarrier_module_, name));
    return f;
  }
  template <class T>
  CUdeviceptr upload(const std::vector<T>& v) {
    CUdeviceptr p = 0;
    EXPECT_OK(cuMemAlloc(&p, std::max<size_t>(v.size() * sizeof(T), 4)));
    if (!v.empty()) {
      EXPECT_OK(cuMemcpyHtoD(p, v.data(), v.size() * sizeof(T)));
    }
    return p;
  }
  template <class T>
  std::vector<T> download(CUdeviceptr p, size_t n) {
    std::vector<T> v(n);
    EXPECT_OK(cuMemcpyDtoH(v.data(), p, n * sizeof(T)));
    return v;
  }
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  CUmodule module_ = nullptr;
  CUmodule mbarrier_module_ = nullptr;
};

class PtxMemcheck : public PtxRest {
  std::string expected_mode() const override { return "memcheck"; }
};
class PtxFaults : public PtxRest {
  std::string expected_mode() const override { return "faults"; }
};

// ---- item 4: printf, assert and sticky errors ----
TEST_P(PtxRest, AssertIsStickyAndPrintfPrints) {
#if defined(__SANITIZE_ADDRESS__)
  // The case passes under ASan, but LeakSanitizer's exit scan then takes SIGSEGV in the mock's
  // device memory (0x200000830) of the context the assert left unusable (seen 2026-11-26).
  GTEST_SKIP() << "LeakSanitizer's exit scan faults after a sticky assert (ASan builds only)";
#endif
  CUdeviceptr v = upload(std::vector<int>{11, 22, 33});
  const CUfunction check = fn("check_value");
  int no_block = -1, bad = 5, block1 = 1;
  void* ok_args[] = {&v, &no_block, &bad};
  testing::internal::CaptureStdout();
  ASSERT_OK(cuLaunchKernel(check, 3, 1, 1, 32, 1, 1, 0, nullptr, ok_args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  const std::string out = testing::internal::GetCapturedStdout();
  for (int b = 0; b < 3; ++b)
    EXPECT_NE(out.find("check_value block " + std::to_string(b) + " sees " +
                       std::to_string(11 * (b + 1)) + "\n"),
              std::string::npos)
        << out;
  void* bad_args[] = {&v, &block1, &bad};
  testing::internal::CaptureStderr();
  ASSERT_OK(cuLaunchKernel(check, 3, 1, 1, 32, 1, 1, 0, nullptr, bad_args, nullptr));
  EXPECT_EQ(CUDA_ERROR_ASSERT, cuCtxSynchronize());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("block: [1,0,0], thread: [5,0,0] Assertion"), std::string::npos) << err;
  // Sticky: the context is unusable afterwards.
  EXPECT_EQ(CUDA_ERROR_ASSERT,
            cuLaunchKernel(check, 1, 1, 1, 1, 1, 1, 0, nullptr, ok_args, nullptr));
  CUdeviceptr p = 0;
  EXPECT_EQ(CUDA_ERROR_ASSERT, cuMemAlloc(&p, 16));
}

// ---- item 4: cooperative launches and grid.sync() ----
TEST_P(PtxRest, GridSyncInCooperativeLaunch) {
  const int blocks = 6, rounds = 3;
  CUdeviceptr slots = upload(std::vector<int>(blocks)),
              sums = upload(std::vector<int>(blocks * rounds));
  int r = rounds;
  void* args[] = {&slots, &sums, &r};
  ASSERT_OK(cuLaunchCooperativeKernel(fn("grid_rounds"), blocks, 1, 1, 64, 1, 1, 0, nullptr, args));
  ASSERT_OK(cuCtxSynchronize());
  const auto s = download<int>(sums, blocks * rounds);
  int total = 0;
  for (int k = 0; k < rounds; ++k) {
    for (int b = 0; b < blocks; ++b) total += b + k;
    for (int b = 0; b < blocks; ++b)
      EXPECT_EQ(s[k * blocks + b], total) << "round " << k << " block " << b;
  }
}

TEST_P(PtxRest, GridSyncOutsideCooperativeLaunchTraps) {
  CUdeviceptr slots = upload(std::vector<int>(2)), sums = upload(std::vector<int>(2));
  int r = 1;
  void* args[] = {&slots, &sums, &r};
  ASSERT_OK(cuLaunchKernel(fn("grid_rounds"), 2, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
  EXPECT_EQ(CUDA_ERROR_LAUNCH_FAILED, cuCtxSynchronize());
}

TEST_P(PtxRest, BlockWaitsForALaterBlockInCooperativeLaunch) {
  CUdeviceptr flag = upload(std::vector<int>(1)), out = upload(std::vector<int>(1));
  void* args[] = {&flag, &out};
  ASSERT_OK(
      cuLaunchCooperativeKernel(fn("wait_for_last_block"), 5, 1, 1, 32, 1, 1, 0, nullptr, args));
  ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(download<int>(out, 1)[0], 1004);
}

// ---- item 2: cuda::barrier (software on compute_75, mbarrier on 80/90) ----
TEST_P(PtxRest, CudaBarrierArriveWaitAndDrop) {
  const int blocks = 2, n = 128;
  CUdeviceptr out = upload(std::vector<int>(blocks * n));
  void* args[] = {&out};
  ASSERT_OK(cuLaunchKernel(fn("aw_barrier"), blocks, 1, 1, n, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  const auto o = download<int>(out, blocks * n);
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < n; ++t) {
      int v = ((t + 1) % n) * 3 + b;
      if (t % 2 == 0) v += 2 * (((t + 2) % n + 1) % n * 3 + b);
      EXPECT_EQ(o[b * n + t], v) << b << " " << t;
    }
}

// ---- item 2: spin-waits and nanosleep are yield points ----
TEST_P(PtxRest, SpinWaitsOnFlagsOfLaterThreads) {
  CUdeviceptr out = upload(std::vector<int>(2));
  void* args[] = {&out};
  ASSERT_OK(cuLaunchKernel(fn("spin_flags"), 3, 1, 1, 96, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  const auto o = download<int>(out, 2);
  EXPECT_EQ(o[0], 42);
  EXPECT_EQ(o[1], 7);
}

// ---- item 2: bar.arrive / barrier.arrive with counts ----
TEST_P(PtxRest, NamedBarriersProducerConsumer) {
  CUdeviceptr out = upload(std::vector<int>(96));
  void* args[] = {&out};
  ASSERT_OK(cuLaunchKernel(fn("producer_consumer"), 2, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  const auto o = download<int>(out, 96);
  for (int l = 0; l < 32; ++l) {
    EXPECT_EQ(o[l], (31 - l) * (31 - l) + 1) << l;
    EXPECT_EQ(o[64 + l], 100 + l) << l;
  }
}

// ---- item 2: exit inside a .func ----
TEST_P(PtxRest, ExitInsideDeviceFunctionEndsTheThread) {
  CUdeviceptr out = upload(std::vector<int>(64));
  void* args[] = {&out};
  ASSERT_OK(cuLaunchKernel(fn("quit_early"), 1, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  const auto o = download<int>(out, 64);
  for (int t = 0; t < 64; ++t) EXPECT_EQ(o[t], t % 2 ? 1 : 2) << t;
}

// ---- item 2: mbarrier forms ----
TEST_P(PtxRest, MbarrierForms) {
  const int n = 64;
  CUdeviceptr out = upload(std::vector<unsigned long long>(n));
  void* args[] = {&out};
  ASSERT_OK(cuLaunchKernel(fn("mbarrier_forms"), 1, 1, 1, n, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  const auto o = download<unsigned long long>(out, n);
  std::vector<unsigned> pending;
  for (int t = 0; t < n; ++t) {
    pending.push_back(static_cast<unsigned>(o[t] & 0xffff));
    // Not complete while 16 transaction bytes are pending; complete after complete_tx; the
    // phase of parity 0 completed, the one of parity 1 (the current one) did not.
    EXPECT_EQ(o[t] >> 16, 0b0110u) << t;
  }
  std::sort(pending.begin(), pending.end());
  for (int t = 0; t < n; ++t)
    EXPECT_EQ(pending[t], static_cast<unsigned>(t));  // after each arrival
}

// ---- item 2: mbarrier waits on split twins (compute_80/90; software barrier on 75) ----
// 1024 threads on one barrier: fibers need a stack per thread, the twin one slot per thread.
TEST_P(PtxRest, BlockOf1024ThreadsOnOneBarrier) {
  const int blocks = 3, n = 1024, rounds = 3;
  CUdeviceptr out = upload(std::vector<unsigned>(blocks * n));
  int r = rounds;
  void* args[] = {&out, &r};
  ASSERT_OK(cuLaunchKernel(mbarrier_fn("mbarrier_wide"), blocks, 1, 1, n, 1, 1, 0, nullptr, args,
                           nullptr));
  ASSERT_OK(cuCtxSynchronize());
  const auto o = download<unsigned>(out, blocks * n);
  for (int b = 0; b < blocks; ++b) {
    std::vector<unsigned> v(n), next(n);
    for (int t = 0; t < n; ++t) v[t] = t + b * 10000u;
    for (int k = 0; k < rounds; ++k) {
      for (int t = 0; t < n; ++t) next[t] = v[t] + v[(t + 1) % n];
      v = next;
    }
    for (int t = 0; t < n; ++t) ASSERT_EQ(o[b * n + t], v[t]) << b << " " << t;
  }
}

// The wait in a .func the kernel calls: such kernels keep the fibers (device functions are
// not split) and still wait correctly.
TEST_P(PtxRest, WaitInsideADeviceFunction) {
  const int blocks = 2, n = 96;
  CUdeviceptr out = upload(std::vector<int>(blocks * n));
  void* args[] = {&out};
  ASSERT_OK(cuLaunchKernel(mbarrier_fn("mbarrier_in_func"), blocks, 1, 1, n, 1, 1, 0, nullptr, args,
                           nullptr));
  ASSERT_OK(cuCtxSynchronize());
  const auto o = download<int>(out, blocks * n);
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < n; ++t) EXPECT_EQ(o[b * n + t], (t + 1) % n * 7 + b) << b << " " << t;
}

// Blocks whose threads wait on a barrier that never completes, in a cooperative launch whose
// last block traps: the launch fails (a trap ends the whole grid on a GPU) and does not hang,
// on the twins as on the fibers (whose scheduler ends a block when another block failed).
TEST_P(PtxRest, NeverCompletingWaitEndsWhenAnotherBlockTraps) {
#if defined(__SANITIZE_ADDRESS__)
  // On fibers, the blocks abandoned when the other block traps leave ASan's shadow of their
  // worker threads' stacks stale: the next sigaltstack() there is reported (stack-use-after-scope,
  // seen 2026-11-27). The split twin runs the case under ASan; the fiber case in plain builds.
  if (const char* f = std::getenv("CUDAMUX_MOCK_FISSION"); f && std::string(f) == "0")
    GTEST_SKIP() << "abandoned fibers confuse ASan's stack shadow (ASan builds only)";
#endif
  const int blocks = 3;
  CUdeviceptr reached = upload(std::vector<int>(blocks));
  void* args[] = {&reached};
  ASSERT_OK(cuLaunchCooperativeKernel(mbarrier_fn("wait_forever_or_trap"), blocks, 1, 1, 64, 1, 1,
                                      0, nullptr, args));
  EXPECT_EQ(CUDA_ERROR_LAUNCH_FAILED, cuCtxSynchronize());
}

// ---- item 2: video instructions ----
TEST_P(PtxRest, VideoAbsDiff) {
  const int n = 64;
  std::vector<unsigned> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = 0x9e3779b9u * (i + 1);
    b[i] = 0x7f4a7c15u * (i + 3) ^ (i << 13);
  }
  CUdeviceptr da = upload(a), db = upload(b), dout = upload(std::vector<unsigned>(n * 4));
  void* args[] = {&da, &db, &dout};
  ASSERT_OK(cuLaunchKernel(fn("video"), 1, 1, 1, n, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  const auto o = download<unsigned>(dout, n * 4);
  auto lanes = [](unsigned x, unsigned y, int w, bool sgn, bool sum) {
    unsigned r = 0, s = 0;
    for (int i = 0; i < 32 / w; ++i) {
      const unsigned m = (1u << w) - 1, ux = (x >> (i * w)) & m, uy = (y >> (i * w)) & m;
      const int sx = sgn ? static_cast<int>(ux << (32 - w)) >> (32 - w) : static_cast<int>(ux);
      const int sy = sgn ? static_cast<int>(uy << (32 - w)) >> (32 - w) : static_cast<int>(uy);
      const unsigned d = static_cast<unsigned>(std::abs(sx - sy));
      s += d;
      r |= (d & m) << (i * w);
    }
    return sum ? s : r;
  };
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(o[i * 4 + 0], lanes(a[i], b[i], 8, false, false)) << i;
    EXPECT_EQ(o[i * 4 + 1], lanes(a[i], b[i], 8, true, false)) << i;
    EXPECT_EQ(o[i * 4 + 2], lanes(a[i], b[i], 16, false, true)) << i;
    EXPECT_EQ(o[i * 4 + 3], lanes(a[i], b[i], 8, false, true)) << i;
  }
}

// ---- item 4: memcheck (CUDAMUX_MEMCHECK=1) ----
TEST_P(PtxMemcheck, OutOfBoundsReadIsReportedWithKernelBlockThreadAndAddress) {
  CUdeviceptr a = upload(std::vector<int>(100)), out = upload(std::vector<int>(128));
  int n = 101;  // one past the end of a
  void* args[] = {&a, &out, &n};
  testing::internal::CaptureStderr();
  ASSERT_OK(cuLaunchKernel(fn("read_n"), 2, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr));
  EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
  const std::string err = testing::internal::GetCapturedStderr();
  char where[64];
  std::snprintf(where, sizeof where, "at 0x%llx", static_cast<unsigned long long>(a + 400));
  EXPECT_NE(err.find("invalid read of 4 byte(s) " + std::string(where)), std::string::npos) << err;
  EXPECT_NE(err.find("kernel 'read_n', block (1,0,0), thread (36,0,0)"), std::string::npos) << err;
  EXPECT_NE(err.find("400-byte device allocation"), std::string::npos) << err;
}

TEST_P(PtxMemcheck, UseAfterFreeIsReported) {
  CUdeviceptr a = upload(std::vector<int>(1024)), out = upload(std::vector<int>(64));
  ASSERT_OK(cuMemFree(a));
  int n = 64;
  void* args[] = {&a, &out, &n};
  testing::internal::CaptureStderr();
  ASSERT_OK(cuLaunchKernel(fn("read_n"), 1, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr));
  EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("use after free"), std::string::npos) << err;
  EXPECT_NE(err.find("kernel 'read_n', block (0,0,0), thread (0,0,0)"), std::string::npos) << err;
}

TEST_P(PtxMemcheck, CorrectKernelsPassIncludingGridSyncAndBarriers) {
  CUdeviceptr a = upload(std::vector<int>{1, 2, 3, 4}), out = upload(std::vector<int>(4));
  int n = 4;
  void* args[] = {&a, &out, &n};
  ASSERT_OK(cuLaunchKernel(fn("read_n"), 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(download<int>(out, 4), (std::vector<int>{2, 3, 4, 5}));
  CUdeviceptr slots = upload(std::vector<int>(3)), sums = upload(std::vector<int>(3));
  int r = 1;
  void* gargs[] = {&slots, &sums, &r};
  ASSERT_OK(cuLaunchCooperativeKernel(fn("grid_rounds"), 3, 1, 1, 32, 1, 1, 0, nullptr, gargs));
  ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(download<int>(sums, 3), (std::vector<int>{3, 3, 3}));
  CUdeviceptr aw = upload(std::vector<int>(64));
  void* awargs[] = {&aw};
  ASSERT_OK(cuLaunchKernel(fn("aw_barrier"), 1, 1, 1, 64, 1, 1, 0, nullptr, awargs, nullptr));
  ASSERT_OK(cuCtxSynchronize());
}

// ---- item 4: fault injection (tests/ptx/data/rest/faults.toml: the second launch fails) ----
TEST_P(PtxFaults, InjectedLaunchFaultReachesPtxKernels) {
  CUdeviceptr a = upload(std::vector<int>{5}), out = upload(std::vector<int>(1));
  int n = 1;
  void* args[] = {&a, &out, &n};
  ASSERT_OK(cuLaunchKernel(fn("read_n"), 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(download<int>(out, 1)[0], 6);
  const CUresult second = cuLaunchKernel(fn("read_n"), 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr);
  const CUresult sync = cuCtxSynchronize();
  EXPECT_TRUE(second == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES ||
              sync == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
      << second << " " << sync;
  // count = 1: the third launch runs again (the error was not sticky).
  const int five = 9;
  ASSERT_OK(cuMemcpyHtoD(a, &five, sizeof five));
  ASSERT_OK(cuLaunchKernel(fn("read_n"), 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(download<int>(out, 1)[0], 10);
  // The second load of the PTX fails once, where the module is first used (lazy loading),
  // and the third works.
  const std::string ptx = fixture(GetParam());
  CUmodule m2 = nullptr;
  CUfunction f2 = nullptr;
  CUresult r = cuModuleLoadData(&m2, ptx.c_str());
  if (r == CUDA_SUCCESS) r = cuModuleGetFunction(&f2, m2, "read_n");
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, r);
  if (m2 != nullptr) cuModuleUnload(m2);
  CUmodule m3 = nullptr;
  ASSERT_OK(cuModuleLoadData(&m3, ptx.c_str()));
  ASSERT_OK(cuModuleGetFunction(&f2, m3, "read_n"));
  ASSERT_OK(cuLaunchKernel(f2, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(download<int>(out, 1)[0], 10);
  cuModuleUnload(m3);
}

// Yield points are stops of the split twins: the spin-wait kernels (a volatile shared flag of
// a later thread, __nanosleep, grid sync's and the cooperative wait's acquire polls) get a
// twin, so the runs above use it (the ptx.rest_fibers family runs them with
// CUDAMUX_MOCK_FISSION=0).
TEST_P(PtxRest, SpinWaitKernelsGetSplitTwinsWithYieldStops) {
  std::vector<cudamux::ptx::Diagnostic> d;
  const auto m = cudamux::ptx::parse(fixture(GetParam()), d);
  ASSERT_TRUE(m.has_value());
  const auto e = cudamux::ptx::emit_cpp(*m);
  for (const char* k : {"spin_flags", "wait_for_last_block", "grid_rounds"})
    EXPECT_NE(e.source.find("::cudamux::detail::entry<&cudamux_e_" + std::string(k) + ", 3u, &"),
              std::string::npos)
        << k;
  EXPECT_NE(e.source.find("op = 10u"), std::string::npos);
  cudamux::ptx::EmitOptions off;
  off.split_barriers = false;
  EXPECT_EQ(cudamux::ptx::emit_cpp(*m, off).source.find("op = 10u"), std::string::npos);
}

// mbarrier waits (cuda::barrier's test_wait on compute_80, try_wait on 90, every form of
// mbarrier_forms) are yield stops too: those kernels get twins, so the runs above use them; a
// kernel whose wait is inside a .func it calls keeps the fibers (no twin, flags 0). On
// compute_75 cuda::barrier is the software barrier (polls and nanosleep): split as well.
TEST_P(PtxRest, MbarrierKernelsGetSplitTwins) {
  cudamux::ptx::EmitOptions off;
  off.split_barriers = false;
  for (const char* file : {"rest", "mbarrier"}) {
    std::vector<cudamux::ptx::Diagnostic> d;
    const std::string ptx = fixture(GetParam(), file);
    const auto m = cudamux::ptx::parse(ptx, d);
    ASSERT_TRUE(m.has_value()) << file;
    if (GetParam() >= 80) {
      EXPECT_NE(ptx.find("mbarrier.t"), std::string::npos);  // test_wait / try_wait
    }
    const auto split = cudamux::ptx::emit_cpp(*m).source;
    const auto unsplit = cudamux::ptx::emit_cpp(*m, off).source;
    const auto twins = std::string(file) == "rest"
                           ? std::vector<std::string>{"aw_barrier", "mbarrier_forms"}
                           : std::vector<std::string>{"mbarrier_wide", "wait_forever_or_trap"};
    for (const auto& k : twins) {
      EXPECT_NE(split.find("::cudamux::detail::entry<&cudamux_e_" + k + ", 3u, &"),
                std::string::npos)
          << k;
      EXPECT_NE(unsplit.find("::cudamux::detail::entry<&cudamux_e_" + k + ", 0u>"),
                std::string::npos)
          << k;
    }
    if (std::string(file) == "mbarrier") {
      EXPECT_NE(split.find("::cudamux::detail::entry<&cudamux_e_mbarrier_in_func, 0u>"),
                std::string::npos);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Arch, PtxRest, ::testing::Values(75, 80, 90),
                         [](const auto& i) { return "compute_" + std::to_string(i.param); });
INSTANTIATE_TEST_SUITE_P(Arch, PtxMemcheck, ::testing::Values(75, 80),
                         [](const auto& i) { return "compute_" + std::to_string(i.param); });
INSTANTIATE_TEST_SUITE_P(Arch, PtxFaults, ::testing::Values(80),
                         [](const auto& i) { return "compute_" + std::to_string(i.param); });

}  // namespace
