// Memcheck on the mock (issue 9): kernels with deliberate out-of-bounds accesses, use after
// free, wild pointers and shared-memory hazards, each reported precisely; and, without
// memcheck, faulting kernels that fail their launch instead of killing the process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kernel_fixture.hpp"

namespace cudamux::mock::test {
namespace {

using ::testing::HasSubstr;

// Whether this CPU and kernel give us memory protection keys (x86 PKU), which memcheck needs to
// make host accesses to device memory fault; the rest of memcheck works without them.
bool have_protection_keys() {
  const int key = ::pkey_alloc(0, 0);
  if (key < 0) return false;
  ::pkey_free(key);
  return true;
}

// Memcheck's findings in a log: invalid-access reports ("memcheck: invalid ...") and hazard
// hints ("memcheck hint: ..."). Other lines that mention memcheck (the warning on CPUs without
// protection keys) are not findings.
int memcheck_findings(const std::string& log) {
  int n = 0;
  const std::string_view text = log;
  for (std::size_t at = text.find("memcheck"); at != std::string_view::npos;
       at = text.find("memcheck", at + 1)) {
    const std::string_view rest = text.substr(at);
    n += rest.starts_with("memcheck hint:") || rest.starts_with("memcheck: invalid");
  }
  return n;
}

std::string hex(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%#llx",
                static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(p)));
  return text;
}

class Memcheck : public KernelTest {
 protected:
  std::string config() override { return "[mock]\nmemory = 268435456\nmemcheck = true\n"; }

  be::Function* kernel(std::unique_ptr<be::Module>& m, const std::string& source,
                       const char* name) {
    m = build(source);
    if (!m) return nullptr;
    be::Function* f = m->function(name);
    EXPECT_NE(f, nullptr) << name;
    return f;
  }
  // Log lines written since the last call.
  std::string new_log() {
    std::string all = log_text();
    std::string fresh = all.substr(std::min(seen_, all.size()));
    // MEMCHECK_TEST_ECHO=1 shows the reports while working on them.
    if (std::getenv("MEMCHECK_TEST_ECHO") != nullptr) std::fprintf(stderr, "%s", fresh.c_str());
    seen_ = all.size();
    return fresh;
  }
  std::size_t seen_ = 0;
};

const char kReadPastEnd[] = R"(
extern "C" __global__ void read_past_end(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) y[i % n] = x[i];  // i == n reads one element too far
}
)";

TEST_F(Memcheck, ReadPastTheEndNamesKernelBlockThreadAddressSizeAndAllocation) {
  std::unique_ptr<be::Module> m;
  be::Function* f = kernel(m, kReadPastEnd, "read_past_end");
  ASSERT_NE(f, nullptr);
  const int n = 200;  // 4 blocks of 64: i == 200 is block 3, thread 8
  float* x = dev<float>(n);
  float* y = dev<float>(n);
  auto q = queue();
  EXPECT_EQ(launch(*q, f, 4, 64, 0, static_cast<const float*>(x), y, n), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_ERROR_ILLEGAL_ADDRESS);
  const std::string log = new_log();
  EXPECT_THAT(log, HasSubstr("invalid read of 4 byte(s) at " + hex(x + n)));
  EXPECT_THAT(log, HasSubstr("kernel 'read_past_end', block (3,0,0), thread (8,0,0)"));
  EXPECT_THAT(log,
              HasSubstr("0 byte(s) after the end of the 800-byte device allocation at " + hex(x)));
}

TEST_F(Memcheck, WriteStraddlingTheEndIsCaught) {
  std::unique_ptr<be::Module> m;
  be::Function* f = kernel(m, R"(
extern "C" __global__ void straddle(char* p, int offset) {
  *reinterpret_cast<unsigned long long*>(p + offset) = 1;  // 8 bytes, the last 4 outside
}
)",
                           "straddle");
  ASSERT_NE(f, nullptr);
  char* p = dev<char>(100);
  auto q = queue();
  EXPECT_EQ(launch(*q, f, 1, 1, 0, p, 96), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_THAT(new_log(), HasSubstr("invalid write of 8 byte(s) at " + hex(p + 96) +
                                   " by kernel 'straddle', block (0,0,0), thread (0,0,0): the "
                                   "access runs 4 byte(s) past the end of the 100-byte device "
                                   "allocation"));
}

TEST_F(Memcheck, UseAfterFreeIsReportedAsSuch) {
  std::unique_ptr<be::Module> m;
  be::Function* f = kernel(m, R"(
extern "C" __global__ void touch(int* p) { p[threadIdx.x] += 1; }
)",
                           "touch");
  ASSERT_NE(f, nullptr);
  void* p = nullptr;
  ASSERT_EQ(cu(ctx->allocate(4096, &p)), CUDA_SUCCESS);
  ASSERT_EQ(cu(ctx->free(p)), CUDA_SUCCESS);
  auto q = queue();
  EXPECT_EQ(launch(*q, f, 1, 32, 0, static_cast<int*>(p)), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_ERROR_ILLEGAL_ADDRESS);
  const std::string log = new_log();
  EXPECT_THAT(log, HasSubstr("invalid read of 4 byte(s) at " + hex(p)));
  EXPECT_THAT(log, HasSubstr("use after free: inside a 4096-byte device allocation at " + hex(p) +
                             " that was freed"));
}

TEST_F(Memcheck, WildPointerAndTheQueueStaysUsable) {
  std::unique_ptr<be::Module> m;
  be::Function* f = kernel(m, R"(
extern "C" __global__ void wild(int* p, int v) { p[threadIdx.x] = v; }
)",
                           "wild");
  ASSERT_NE(f, nullptr);
  auto q = queue();
  int* nowhere = reinterpret_cast<int*>(std::uintptr_t{0x10000});
  EXPECT_EQ(launch(*q, f, 2, 16, 0, nowhere, 5), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_THAT(new_log(), HasSubstr("invalid write of 4 byte(s) at 0x10000"));
  // The backend keeps working: the failed queue stays failed (the core makes the context's
  // error sticky), a new one runs the same kernel on valid memory and writes every element.
  q = queue();
  int* good = dev<int>(32);
  EXPECT_EQ(launch(*q, f, 2, 16, 0, good, 5), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  std::vector<int> host(16);
  ASSERT_EQ(cu(q->copy_sync(copy_1d(host.data(), good, 16 * sizeof(int)))), CUDA_SUCCESS);
  for (int v : host) EXPECT_EQ(v, 5);
}

TEST_F(Memcheck, ValidAccessesOfEveryKindPassWithoutReports) {
  // Globals, constants, local arrays, pinned host memory, dynamic and static shared memory
  // with barriers, atomics on shared memory, printf: nothing to report.
  std::unique_ptr<be::Module> m;
  be::Function* f = kernel(m, R"(
__device__ int table[8] = {1, 2, 3, 4, 5, 6, 7, 8};
__constant__ int scale = 3;
extern "C" __global__ void busy(const int* in, int* out, int* pinned) {
  __shared__ int tile[64];
  __shared__ int count[1];
  extern __shared__ int dyn[];
  int local[16];
  const int t = threadIdx.x;
  for (int i = 0; i < 16; ++i) local[i] = in[t] + i;
  if (t == 0) count[0] = 0;
  tile[t] = local[t % 16] * scale;
  dyn[t] = table[t % 8];
  __syncthreads();
  atomicAdd(&count[0], 1);
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = tile[63 - t] + dyn[(t + 1) % 64] + count[0];
  if (t == 0) pinned[blockIdx.x] = count[0];
}
)",
                           "busy");
  ASSERT_NE(f, nullptr);
  int* in = dev<int>(64);
  int* out = dev<int>(128);
  std::vector<int> host_in(64);
  for (int i = 0; i < 64; ++i) host_in[i] = i;
  auto q = queue();
  ASSERT_EQ(cu(q->copy_sync(copy_1d(in, host_in.data(), 64 * sizeof(int)))), CUDA_SUCCESS);
  void* pinned = nullptr;
  ASSERT_EQ(cu(ctx->allocate_host(2 * sizeof(int), 0, &pinned)), CUDA_SUCCESS);
  EXPECT_EQ(launch(*q, f, 2, 64, 64 * sizeof(int), static_cast<const int*>(in), out,
                   static_cast<int*>(pinned)),
            CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  std::vector<int> host(128);
  ASSERT_EQ(cu(q->copy_sync(copy_1d(host.data(), out, host.size() * sizeof(int)))), CUDA_SUCCESS);
  for (int b = 0; b < 2; ++b) {
    for (int t = 0; t < 64; ++t) {
      const int u = 63 - t;
      const int expected = (u + u % 16) * 3 + ((t + 1) % 64) % 8 + 1 + 64;
      ASSERT_EQ(host[b * 64 + t], expected) << b << " " << t;
    }
    EXPECT_EQ(static_cast<int*>(pinned)[b], 64);
  }
  EXPECT_EQ(memcheck_findings(new_log()), 0);
  EXPECT_EQ(cu(ctx->free_host(pinned)), CUDA_SUCCESS);
}

TEST_F(Memcheck, DynamicSharedMemoryOverrunNamesItsSize) {
  std::unique_ptr<be::Module> m;
  be::Function* f = kernel(m, R"(
extern "C" __global__ void overrun() {
  extern __shared__ float buffer[];
  buffer[threadIdx.x + 1] = 1.0f;  // the last thread writes one past the end
}
)",
                           "overrun");
  ASSERT_NE(f, nullptr);
  auto q = queue();
  EXPECT_EQ(launch(*q, f, 1, 32, 32 * sizeof(float)), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_ERROR_ILLEGAL_ADDRESS);
  const std::string log = new_log();
  EXPECT_THAT(log, HasSubstr("invalid write of 4 byte(s)"));
  EXPECT_THAT(log, HasSubstr("thread (31,0,0)"));
  EXPECT_THAT(log,
              HasSubstr("0 byte(s) after the end of the block's 128-byte dynamic shared memory"));
}

TEST_F(Memcheck, MissingSyncthreadsIsAHazardHint) {
  std::unique_ptr<be::Module> m;
  be::Function* f = kernel(m, R"(
extern "C" __global__ void rotate(const int* in, int* out) {
  __shared__ int s[64];
  const int t = threadIdx.x;
  s[t] = in[t];
  // no __syncthreads(): thread t reads what thread t-1 wrote
  out[t] = s[(t + 63) % 64];
}
)",
                           "rotate");
  ASSERT_NE(f, nullptr);
  int* in = dev<int>(64);
  int* out = dev<int>(64);
  auto q = queue();
  EXPECT_EQ(launch(*q, f, 1, 64, 0, static_cast<const int*>(in), out), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_SUCCESS);  // hints do not fail the launch
  const std::string log = new_log();
  EXPECT_THAT(log, HasSubstr("memcheck hint: kernel 'rotate', block (0,0,0), thread (1,0,0) reads "
                             "static shared memory at offset 0 that thread (0,0,0) wrote with no "
                             "__syncthreads() between (read-after-write hazard)"));
  // Thread 0 reads s[63] before thread 63 wrote it.
  EXPECT_THAT(log, HasSubstr("thread (0,0,0) reads 4 byte(s) of static shared memory at offset 252 "
                             "that no thread of the block has written"));
}

TEST_F(Memcheck, BarrierSeparatedSharedAccessesGiveNoHints) {
  std::unique_ptr<be::Module> m;
  be::Function* f = kernel(m, R"(
extern "C" __global__ void rotate_synced(const int* in, int* out) {
  __shared__ int s[64];
  const int t = threadIdx.x;
  s[t] = in[t];
  __syncthreads();
  const int v = s[(t + 63) % 64];
  __syncthreads();
  s[t] = v * 2;  // overwriting after everyone read: ordered by the barrier above
  __syncthreads();
  out[t] = s[t];
}
)",
                           "rotate_synced");
  ASSERT_NE(f, nullptr);
  int* in = dev<int>(64);
  int* out = dev<int>(64);
  std::vector<int> host(64);
  for (int i = 0; i < 64; ++i) host[i] = i;
  auto q = queue();
  ASSERT_EQ(cu(q->copy_sync(copy_1d(in, host.data(), 64 * sizeof(int)))), CUDA_SUCCESS);
  EXPECT_EQ(launch(*q, f, 1, 64, 0, static_cast<const int*>(in), out), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->copy_sync(copy_1d(host.data(), out, 64 * sizeof(int)))), CUDA_SUCCESS);
  for (int t = 0; t < 64; ++t) EXPECT_EQ(host[t], ((t + 63) % 64) * 2);
  EXPECT_EQ(memcheck_findings(new_log()), 0);
}

TEST_F(Memcheck, WriteAfterReadWithoutBarrierIsAHazardHint) {
  std::unique_ptr<be::Module> m;
  be::Function* f = kernel(m, R"(
extern "C" __global__ void war(int* out) {
  __shared__ int s[64];
  const int t = threadIdx.x;
  s[t] = t;
  __syncthreads();
  const int v = s[(t + 1) % 64];
  s[t] = v;  // thread t-1 read s[t] in this same interval
  out[t] = v;
}
)",
                           "war");
  ASSERT_NE(f, nullptr);
  int* out = dev<int>(64);
  auto q = queue();
  EXPECT_EQ(launch(*q, f, 1, 64, 0, out), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  EXPECT_THAT(new_log(), HasSubstr("(write-after-read hazard)"));
}

TEST_F(Memcheck, HostCodeTouchingDeviceMemoryFaultsAsOnAGpu) {
  int* p = dev<int>(16);
  // Managed and pinned memory stay host-accessible.
  void* managed = nullptr;
  ASSERT_EQ(cu(ctx->allocate_managed(64, CU_MEM_ATTACH_GLOBAL, &managed)), CUDA_SUCCESS);
  static_cast<int*>(managed)[3] = 7;
  EXPECT_EQ(static_cast<int*>(managed)[3], 7);
  if (have_protection_keys()) {
    EXPECT_DEATH(
        {
          volatile int* v = p;
          v[3] = 1;
        },
        "host code touched device memory at 0x[0-9a-f]+ \\(inside the 64-byte device allocation "
        "at 0x[0-9a-f]+ \\(offset 12\\)\\)");
  } else {
    // Documented for CPUs without protection keys: the backend says so once at creation, and
    // host code reaches device memory as plain memory (kernel accesses are still checked).
    EXPECT_THAT(log_text(), HasSubstr("memcheck cannot make host accesses to device memory fault "
                                      "here (no memory protection keys"));
    volatile int* v = p;
    v[3] = 1;
    EXPECT_EQ(v[3], 1);
  }
  // The mock's own copies reach it: the same memory round-trips through the queue.
  auto q = queue();
  const int in[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  int out[16] = {};
  ASSERT_EQ(cu(q->copy_sync(copy_1d(p, in, sizeof in))), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->copy_sync(copy_1d(out, p, sizeof out))), CUDA_SUCCESS);
  EXPECT_EQ(std::vector<int>(out, out + 16), std::vector<int>(in, in + 16));
  EXPECT_EQ(cu(ctx->free_managed(managed)), CUDA_SUCCESS);
}

TEST_F(Memcheck, ConcurrentLaunchesAllocationsAndFreesStayExact) {
  // Several host threads allocate, launch checked kernels, copy back and free at once: the
  // allocation table and the per-thread caches (emptied by every free) must never turn a valid
  // access into a report, and results must be exact.
  std::unique_ptr<be::Module> m;
  be::Function* f = kernel(m, R"(
extern "C" __global__ void fill(int* p, int n, int v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v + i;
}
)",
                           "fill");
  ASSERT_NE(f, nullptr);
  constexpr int kThreads = 4;
  constexpr int kRounds = 40;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto q = queue();
      for (int r = 0; r < kRounds; ++r) {
        const int n = 64 + 37 * ((t + r) % 9);
        void* p = nullptr;
        if (cu(ctx->allocate(n * sizeof(int), &p)) != CUDA_SUCCESS) {
          ++failures[t];
          continue;
        }
        if (launch(*q, f, (n + 63) / 64, 64, 0, static_cast<int*>(p), n, 1000 * t + r) !=
                CUDA_SUCCESS ||
            cu(q->synchronize()) != CUDA_SUCCESS)
          ++failures[t];
        std::vector<int> host(n);
        if (cu(q->copy_sync(copy_1d(host.data(), p, n * sizeof(int)))) != CUDA_SUCCESS)
          ++failures[t];
        for (int i = 0; i < n; ++i)
          if (host[i] != 1000 * t + r + i) ++failures[t];
        if (cu(ctx->free(p)) != CUDA_SUCCESS) ++failures[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, std::vector<int>(kThreads, 0));
  EXPECT_EQ(memcheck_findings(new_log()), 0);
}

// --- without memcheck: faults in kernel code fail the launch, the process survives ---

class KernelFaults : public Memcheck {
 protected:
  std::string config() override { return "[mock]\nmemory = 268435456\nmemcheck = false\n"; }
};

TEST_F(KernelFaults, WildWriteBecomesIllegalAddressWithAReport) {
  std::unique_ptr<be::Module> m;
  be::Function* f = kernel(m, R"(
extern "C" __global__ void wild(int* p) { p[threadIdx.x] = 1; }
)",
                           "wild");
  ASSERT_NE(f, nullptr);
  auto q = queue();
  EXPECT_EQ(launch(*q, f, 1, 8, 0, reinterpret_cast<int*>(std::uintptr_t{0x20})), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_ERROR_ILLEGAL_ADDRESS);
  const std::string log = new_log();
  EXPECT_THAT(log,
              HasSubstr("illegal memory access at 0x20 by kernel 'wild', block (0,0,0) (SIGSEGV"));
  // And again: the handler stays armed after the first fault.
  q = queue();
  EXPECT_EQ(launch(*q, f, 1, 8, 0, reinterpret_cast<int*>(std::uintptr_t{0x40})), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_THAT(new_log(), HasSubstr("illegal memory access at 0x40"));
}

TEST_F(KernelFaults, FaultInAKernelWithBarriersUnwindsEveryFiber) {
  std::unique_ptr<be::Module> m;
  be::Function* f = kernel(m, R"(
extern "C" __global__ void sync_then_fault(int* p, int bad) {
  __shared__ int s[128];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x == bad) *reinterpret_cast<volatile int*>(8) = s[0];
  __syncthreads();
  p[threadIdx.x] = s[127 - threadIdx.x];
}
)",
                           "sync_then_fault");
  ASSERT_NE(f, nullptr);
  int* p = dev<int>(128);
  auto q = queue();
  EXPECT_EQ(launch(*q, f, 4, 128, 0, p, 77), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_THAT(new_log(), HasSubstr("illegal memory access at 0x8 by kernel 'sync_then_fault'"));
  // The fibers of the failed block were unwound and are reused: the kernel runs cleanly now.
  q = queue();
  EXPECT_EQ(launch(*q, f, 4, 128, 0, p, -1), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  std::vector<int> host(128);
  ASSERT_EQ(cu(q->copy_sync(copy_1d(host.data(), p, 128 * sizeof(int)))), CUDA_SUCCESS);
  for (int t = 0; t < 128; ++t) EXPECT_EQ(host[t], 127 - t);
}

TEST_F(KernelFaults, StackOverflowIsCaught) {
  std::unique_ptr<be::Module> m;
  be::Function* f = kernel(m, R"(
__device__ __noinline__ int deep(volatile int* p, int n) {
  volatile char pad[512];
  pad[n % 512] = static_cast<char>(n);
  return n == 0 ? pad[0] : deep(p, n - 1) + pad[n % 512];
}
extern "C" __global__ void recurse(int* out, int n) {
  __syncthreads();  // runs on a fiber (fixed-size stack)
  out[threadIdx.x] = deep(out, n);
}
)",
                           "recurse");
  ASSERT_NE(f, nullptr);
  int* out = dev<int>(32);
  auto q = queue();
  EXPECT_EQ(launch(*q, f, 1, 32, 0, out, 1 << 20), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_THAT(new_log(), HasSubstr("stack overflow"));
  q = queue();
  EXPECT_EQ(launch(*q, f, 1, 32, 0, out, 4), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
}

}  // namespace
}  // namespace cudamux::mock::test
