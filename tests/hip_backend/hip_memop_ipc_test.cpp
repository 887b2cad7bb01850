// Stream memory operations and IPC on the hip backend over the fake HIP runtime (issue 17): the
// HIP calls each CUDA call makes (conditions, widths, masks and flags translated through the
// tables), waits that hold their stream until the memory says otherwise, and what HIP answers
// for handles it cannot open. The other process's side runs in the conformance suite
// (conformance.hip.Ipc.*) and in hip_runtime_ipc_test.cpp.
#include <cuda.h>
#define __HIP_PLATFORM_AMD__
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <hip/hip_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "fake_hip_hooks.hpp"

namespace {

using namespace fake_hip_hooks;

#define ASSERT_CU(call) ASSERT_EQ((call), CUDA_SUCCESS) << #call

std::string line_with(const std::string& needle) {
  const std::string log = fake_log();
  const auto at = log.find(needle);
  if (at == std::string::npos) return {};
  return log.substr(at, log.find('\n', at) - at);
}

// The stream is idle within a generous bound (a wait that never ends fails the test instead of
// hanging it).
bool drains(CUstream s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < until) {
    if (cuStreamQuery(s) != CUDA_ERROR_NOT_READY) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

std::string hex_value(unsigned long long v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", v);
  return buf;
}

class HipMemOpIpc : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(fake_library(), nullptr) << "the fake HIP runtime is not loaded";
    ASSERT_CU(cuInit(0));
    ASSERT_CU(cuDeviceGet(&dev, 0));
    ASSERT_CU(cuCtxCreate(&ctx, nullptr, 0, dev));
    ASSERT_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    fake_clear();
  }
  void TearDown() override {
    if (stream) {
      EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
    }
    if (ctx) {
      EXPECT_EQ(cuCtxDestroy(ctx), CUDA_SUCCESS);
    }
  }
  // A wait that never ends: the context is left as it is, destroying it would wait forever.
  void abandon() {
    ctx = nullptr;
    stream = nullptr;
  }
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
};

// Page-locked host memory the host writes while a wait on the stream watches it.
struct HostWords {
  std::uint32_t* host = nullptr;
  CUdeviceptr dev = 0;
  HostWords() {
    void* p = nullptr;
    EXPECT_EQ(cuMemHostAlloc(&p, 4096, CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
    host = static_cast<std::uint32_t*>(p);
    if (host) {
      std::memset(host, 0, 4096);
      EXPECT_EQ(cuMemHostGetDevicePointer(&dev, host, 0), CUDA_SUCCESS);
    }
  }
  ~HostWords() {
    if (host) {
      EXPECT_EQ(cuMemFreeHost(host), CUDA_SUCCESS);
    }
  }
  void store(std::size_t at, std::uint32_t v) { std::atomic_ref(host[at]).store(v); }
  std::uint32_t load(std::size_t at) { return std::atomic_ref(host[at]).load(); }
};

// Each CUDA condition becomes HIP's, with every bit of the mask; the work behind the wait does
// not run until the host writes a value that satisfies it.
TEST_F(HipMemOpIpc, EachWaitConditionReachesHipAndHoldsTheStream) {
  HostWords words;
  ASSERT_NE(words.host, nullptr);
  struct Case {
    unsigned cuda;
    unsigned hip;
    std::uint32_t before, value, release;
  };
  const Case cases[] = {
      {CU_STREAM_WAIT_VALUE_GEQ, hipStreamWaitValueGte, 3, 5, 7},
      {CU_STREAM_WAIT_VALUE_EQ, hipStreamWaitValueEq, 1, 9, 9},
      {CU_STREAM_WAIT_VALUE_AND, hipStreamWaitValueAnd, 0x0f, 0x30, 0x10},
      {CU_STREAM_WAIT_VALUE_NOR, hipStreamWaitValueNor, 0xffffffffu, 0, 0xfffffffeu},
      // HIP compares unsigned where CUDA is cyclic: 2 is below 0xfffffff0 on HIP (CUDA would
      // not wait), docs/backends/hip.md.
      {CU_STREAM_WAIT_VALUE_GEQ, hipStreamWaitValueGte, 2, 0xfffffff0u, 0xfffffff0u},
  };
  std::uint32_t marker = 100;
  for (const Case& c : cases) {
    SCOPED_TRACE("CUDA condition " + std::to_string(c.cuda) + ", value " + hex_value(c.value));
    words.store(0, c.before);
    fake_clear();
    ASSERT_CU(cuStreamWaitValue32_v2(stream, words.dev, c.value, c.cuda));
    ASSERT_CU(cuStreamWriteValue32_v2(stream, words.dev + 4, ++marker, 0));
    EXPECT_TRUE(logged(", " + hex_value(c.value) + ", " + std::to_string(c.hip) +
                       ", 0xffffffff) -> hipSuccess"))
        << fake_log();
    EXPECT_TRUE(logged("hipStreamWaitValue32(")) << fake_log();
    EXPECT_EQ(cuStreamQuery(stream), CUDA_ERROR_NOT_READY);
    EXPECT_NE(words.load(1), marker) << "the write behind the wait ran";
    words.store(0, c.release);
    if (!drains(stream)) {
      abandon();
      words.host = nullptr;  // freeing it would wait for the stream too
      FAIL() << "the wait did not end: " << fake_log();
    }
    EXPECT_EQ(words.load(1), marker);
  }
}

// 64-bit waits and writes, released from another stream; writes go with flags 0 whatever CUDA's
// flags (HIP 5.2's are reserved).
TEST_F(HipMemOpIpc, SixtyFourBitOperationsAndWriteFlags) {
  int wide = 0;
  ASSERT_CU(cuDeviceGetAttribute(&wide, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev));
  EXPECT_EQ(wide, 1) << "hipDeviceAttributeCanUseStreamWaitValue is 1 on the fake";
  CUdeviceptr d = 0;
  ASSERT_CU(cuMemAlloc(&d, 64));
  ASSERT_CU(cuMemsetD8(d, 0, 64));
  ASSERT_CU(cuCtxSynchronize());  // the memset is asynchronous to the non-blocking streams
  CUstream other = nullptr;
  ASSERT_CU(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
  const std::uint64_t key = 0x1122334455667788ull;
  ASSERT_CU(cuStreamWaitValue64_v2(stream, d, key, CU_STREAM_WAIT_VALUE_EQ));
  // The v1 entry point (cuda.h names the _v2 one): NO_MEMORY_BARRIER is allowed there.
  using WriteValue32 = CUresult(CUstream, CUdeviceptr, cuuint32_t, unsigned);
  auto* write_v1 = reinterpret_cast<WriteValue32*>(dlsym(RTLD_DEFAULT, "cuStreamWriteValue32"));
  ASSERT_NE(write_v1, nullptr);
  ASSERT_CU(write_v1(stream, d + 8, 3, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER));
  EXPECT_TRUE(logged(", 0x1122334455667788, " + std::to_string(hipStreamWaitValueEq) +
                     ", 0xffffffffffffffff) -> hipSuccess"))
      << fake_log();
  EXPECT_TRUE(logged(", 0x3, 0) -> hipSuccess")) << "flags 0 to HIP:\n" << fake_log();
  EXPECT_EQ(cuStreamQuery(stream), CUDA_ERROR_NOT_READY);
  ASSERT_CU(cuStreamWriteValue64_v2(other, d, key, 0));
  EXPECT_TRUE(logged("hipStreamWriteValue64(")) << fake_log();
  if (!drains(stream)) {
    abandon();
    FAIL() << "the wait did not end: " << fake_log();
  }
  std::uint32_t out[3] = {};
  ASSERT_CU(cuMemcpyDtoH(out, d, sizeof out));
  EXPECT_EQ(out[2], 3u);
  ASSERT_CU(cuStreamDestroy(other));
  ASSERT_CU(cuMemFree(d));
}

// HIP's errors come back as CUDA's; nothing is left queued.
TEST_F(HipMemOpIpc, HipErrorsOfMemoryOperationsAreCudaErrors) {
  CUdeviceptr d = 0;
  ASSERT_CU(cuMemAlloc(&d, 64));
  fake_fn<void(const char*, int, int)>("fakehip_inject")("hipStreamWaitValue32",
                                                         hipErrorInvalidValue, 1);
  EXPECT_EQ(cuStreamWaitValue32_v2(stream, d, 1, CU_STREAM_WAIT_VALUE_EQ),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamQuery(stream), CUDA_SUCCESS);
  ASSERT_CU(cuMemFree(d));
}

// CUDA's IPC memory handle is HIP's (64 bytes both), for the whole allocation whatever pointer
// into it is given; this process cannot open its own (CUDA_ERROR_INVALID_CONTEXT) and HIP is
// not asked.
TEST_F(HipMemOpIpc, MemoryHandlesAreHipsAndNotForThisProcess) {
  CUdeviceptr d = 0;
  ASSERT_CU(cuMemAlloc(&d, 4096));
  fake_clear();
  CUipcMemHandle h{};
  ASSERT_CU(cuIpcGetMemHandle(&h, d + 16));
  EXPECT_EQ(count_of("hipIpcGetMemHandle(dev"), 1u) << fake_log();
  EXPECT_EQ(line_with("hipIpcGetMemHandle(").find('+'), std::string::npos)
      << "not the allocation's base:\n"
      << fake_log();
  EXPECT_EQ(std::memcmp(h.reserved, "fakehip", 8), 0) << "not HIP's handle";
  std::uint64_t size = 0, offset = 1;
  std::memcpy(&size, h.reserved + 32, sizeof size);  // ROCm's psize, then poffset
  std::memcpy(&offset, h.reserved + 40, sizeof offset);
  EXPECT_EQ(size, 4096u);
  EXPECT_EQ(offset, 0u);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
            CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(count_of("hipIpcOpenMemHandle("), 0u) << fake_log();
  // Once the allocation is freed its handle is no longer this process's: HIP is asked, and
  // cannot attach memory that is gone.
  ASSERT_CU(cuMemFree(d));
  EXPECT_EQ(cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(
      logged("hipIpcOpenMemHandle({size 4096, offset 0}, 0x0) -> "
             "hipErrorInvalidDevicePointer"))
      << fake_log();
}

// A handle HIP made elsewhere (here: by HIP directly, so the plugin did not export it) opens
// onto the same memory at another address, with HIP's flag for CUDA's; opened twice it is one
// mapping, closed when the last reference goes; a handle into the middle of an allocation
// opens there with the rest of it as its size.
TEST_F(HipMemOpIpc, ForeignHandlesOpenOntoTheSameMemory) {
  auto hip_malloc = fake_fn<hipError_t(void**, size_t)>("hipMalloc");
  auto hip_free = fake_fn<hipError_t(void*)>("hipFree");
  auto hip_get = fake_fn<hipError_t(hipIpcMemHandle_t*, void*)>("hipIpcGetMemHandle");
  void* mem = nullptr;
  ASSERT_EQ(hip_malloc(&mem, 8192), hipSuccess);
  auto* words = static_cast<std::uint32_t*>(mem);
  for (unsigned i = 0; i < 2048; ++i) words[i] = 0xa0000000u + i;
  hipIpcMemHandle_t hh{};
  ASSERT_EQ(hip_get(&hh, mem), hipSuccess);
  CUipcMemHandle h{};
  std::memcpy(&h, &hh, sizeof h);
  fake_clear();
  CUdeviceptr p = 0, again = 0;
  ASSERT_CU(cuIpcOpenMemHandle_v2(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  EXPECT_TRUE(logged("hipIpcOpenMemHandle({size 8192, offset 0}, 0x0) -> hipSuccess"))
      << fake_log();
  EXPECT_TRUE(logged("hipMemGetAddressRange(")) << fake_log();
  EXPECT_NE(reinterpret_cast<void*>(p), mem) << "a mapping of its own";
  ASSERT_CU(cuIpcOpenMemHandle(&again, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  EXPECT_EQ(again, p);
  EXPECT_EQ(count_of("hipIpcOpenMemHandle("), 1u) << "one mapping:\n" << fake_log();
  CUdeviceptr base = 0;
  size_t bytes = 0;
  ASSERT_CU(cuMemGetAddressRange(&base, &bytes, p + 100));
  EXPECT_EQ(base, p);
  EXPECT_EQ(bytes, 8192u);
  std::uint32_t got[4] = {};
  ASSERT_CU(cuMemcpyDtoH(got, p + 16, sizeof got));
  EXPECT_EQ(got[0], 0xa0000004u);
  EXPECT_EQ(got[3], 0xa0000007u);
  const std::uint32_t reply = 0x5eed;
  ASSERT_CU(cuMemcpyHtoD(p + 40, &reply, sizeof reply));
  EXPECT_EQ(std::atomic_ref(words[10]).load(), 0x5eedu) << "not the same memory";
  ASSERT_CU(cuIpcCloseMemHandle(p));
  EXPECT_EQ(count_of("hipIpcCloseMemHandle("), 0u) << "closed with a reference left";
  ASSERT_CU(cuIpcCloseMemHandle(again));
  EXPECT_EQ(count_of("hipIpcCloseMemHandle(ipc"), 1u) << fake_log();
  EXPECT_EQ(cuIpcCloseMemHandle(p), CUDA_ERROR_INVALID_VALUE);

  // Into the middle: offset 4096 of 8192.
  ASSERT_EQ(hip_get(&hh, static_cast<char*>(mem) + 4096), hipSuccess);
  std::memcpy(&h, &hh, sizeof h);
  ASSERT_CU(cuIpcOpenMemHandle_v2(&p, h, 0));
  EXPECT_TRUE(logged("hipIpcOpenMemHandle({size 8192, offset 4096}, 0x0) -> hipSuccess"))
      << fake_log();
  ASSERT_CU(cuMemGetAddressRange(&base, &bytes, p));
  EXPECT_EQ(bytes, 4096u);
  ASSERT_CU(cuMemcpyDtoH(got, p, sizeof got));
  EXPECT_EQ(got[0], 0xa0000400u);
  ASSERT_CU(cuIpcCloseMemHandle(p));
  ASSERT_EQ(hip_free(mem), hipSuccess);
}

// Handles HIP cannot open: its codes, as CUDA's.
TEST_F(HipMemOpIpc, HandlesHipCannotOpenGetHipsErrors) {
  CUipcMemHandle junk{};
  std::memset(&junk, 0x5a, sizeof junk);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuIpcOpenMemHandle_v2(&p, junk, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(logged("-> hipErrorInvalidDevicePointer")) << fake_log();
  CUipcMemHandle empty{};  // psize 0: ROCm's invalid value
  fake_clear();
  EXPECT_EQ(cuIpcOpenMemHandle_v2(&p, empty, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(logged("hipIpcOpenMemHandle({size 0, offset 0}, 0x0) -> hipErrorInvalidValue"))
      << fake_log();
  // Memory HIP has no handle for (pinned host memory) is refused by the core first.
  void* host = nullptr;
  ASSERT_CU(cuMemHostAlloc(&host, 4096, 0));
  CUipcMemHandle h{};
  EXPECT_EQ(cuIpcGetMemHandle(&h, reinterpret_cast<CUdeviceptr>(host)), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuMemFreeHost(host));
}

// Interprocess events: HIP's handle; opened in the process that made it HIP answers
// hipErrorInvalidContext, which the program sees as CUDA_ERROR_INVALID_CONTEXT.
TEST_F(HipMemOpIpc, EventHandlesAreHipsAndNotForThisProcess) {
  CUevent e = nullptr;
  ASSERT_CU(cuEventCreate(&e, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
  fake_clear();
  CUipcEventHandle h{};
  ASSERT_CU(cuIpcGetEventHandle(&h, e));
  EXPECT_TRUE(logged("hipIpcGetEventHandle(event")) << fake_log();
  EXPECT_EQ(std::memcmp(h.reserved, "fakehip", 8), 0) << "not HIP's handle";
  CUevent opened = nullptr;
  EXPECT_EQ(cuIpcOpenEventHandle(&opened, h), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_TRUE(logged("-> hipErrorInvalidContext")) << fake_log();
  // The exporter's records still work.
  ASSERT_CU(cuEventRecord(e, stream));
  ASSERT_CU(cuEventSynchronize(e));
  EXPECT_EQ(cuEventQuery(e), CUDA_SUCCESS);
  ASSERT_CU(cuEventDestroy(e));
}

}  // namespace
