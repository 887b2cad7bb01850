// Managed memory hints on the hip backend over the fake HIP runtime (issue 17): cuMemAdvise and
// cuMemPrefetchAsync reach hipMemAdvise and hipMemPrefetchAsync with the advice and the device
// argument translated through the tables (a device's ordinal, hipCpuDeviceId for the host), in
// stream order for prefetches; what HIP 5.2 cannot express is CUDA_ERROR_NOT_SUPPORTED. What HIP
// was told is read back from the fake with hipMemRangeGetAttribute (HIP's own query).
#include <cuda.h>
// The first API's forms (a CUdevice, CU_DEVICE_CPU for the host), which cuda.h renames to _v2.
#undef cuMemAdvise
#undef cuMemPrefetchAsync
extern "C" CUresult CUDAAPI cuMemAdvise(CUdeviceptr, size_t, CUmem_advise, CUdevice);
extern "C" CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr, size_t, CUdevice, CUstream);
#define __HIP_PLATFORM_AMD__
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <hip/hip_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fake_hip_hooks.hpp"

namespace {

using namespace fake_hip_hooks;

#define ASSERT_CU(call) ASSERT_EQ((call), CUDA_SUCCESS) << #call

// What the fake HIP holds for a range: one int, or the accessed-by list.
int hip_range_int(hipMemRangeAttribute attribute, CUdeviceptr p, size_t bytes) {
  int v = 12345;
  EXPECT_EQ(
      fake_fn<hipError_t(void*, size_t, hipMemRangeAttribute, const void*, size_t)>(
          "hipMemRangeGetAttribute")(&v, sizeof v, attribute, reinterpret_cast<void*>(p), bytes),
      hipSuccess);
  return v;
}
std::vector<int> hip_accessed_by(CUdeviceptr p, size_t bytes) {
  std::vector<int> v(4, 12345);
  EXPECT_EQ(fake_fn<hipError_t(void*, size_t, hipMemRangeAttribute, const void*, size_t)>(
                "hipMemRangeGetAttribute")(v.data(), v.size() * sizeof(int),
                                           hipMemRangeAttributeAccessedBy,
                                           reinterpret_cast<void*>(p), bytes),
            hipSuccess);
  return v;
}
// What the core records (and a program sees).
int cuda_range_int(CUmem_range_attribute attribute, CUdeviceptr p, size_t bytes) {
  int v = 12345;
  EXPECT_EQ(cuMemRangeGetAttribute(&v, sizeof v, attribute, p, bytes), CUDA_SUCCESS);
  return v;
}

CUmemLocation location(CUmemLocationType type, int id) {
  CUmemLocation l{};
  l.type = type;
  l.id = id;
  return l;
}

class HipManagedHints : public ::testing::Test {
 protected:
  static constexpr size_t kBytes = size_t{1} << 16;
  static constexpr size_t kHalf = kBytes / 2;
  void SetUp() override {
    ASSERT_NE(fake_library(), nullptr) << "the fake HIP runtime is not loaded";
    ASSERT_CU(cuInit(0));
    int count = 0;
    ASSERT_CU(cuDeviceGetCount(&count));
    if (count < 2) GTEST_SKIP() << "needs FAKE_HIP_DEVICES=2";
    ASSERT_CU(cuDeviceGet(&dev, 0));
    ASSERT_CU(cuCtxCreate(&ctx, nullptr, 0, dev));
    ASSERT_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    ASSERT_CU(cuMemAllocManaged(&m, kBytes, CU_MEM_ATTACH_GLOBAL));
    fake_clear();
  }
  void TearDown() override {
    if (m) {
      EXPECT_EQ(cuMemFree(m), CUDA_SUCCESS);
    }
    if (stream) {
      EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
    }
    if (ctx) {
      EXPECT_EQ(cuCtxDestroy(ctx), CUDA_SUCCESS);
    }
  }
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr m = 0;
};

TEST_F(HipManagedHints, AdviceReachesHipTranslated) {
  // Advice that names no location: CUDA ignores the device (even one that does not exist),
  // HIP gets hipCpuDeviceId, which it accepts for every advice.
  ASSERT_CU(cuMemAdvise(m, kBytes, CU_MEM_ADVISE_SET_READ_MOSTLY, 4096));
  EXPECT_TRUE(logged("65536, hipMemAdviseSetReadMostly, -1) -> hipSuccess")) << fake_log();
  EXPECT_EQ(hip_range_int(hipMemRangeAttributeReadMostly, m, kBytes), 1);
  ASSERT_CU(cuMemAdvise(m + kHalf, kHalf, CU_MEM_ADVISE_UNSET_READ_MOSTLY, dev));
  EXPECT_EQ(hip_range_int(hipMemRangeAttributeReadMostly, m, kHalf), 1);
  EXPECT_EQ(hip_range_int(hipMemRangeAttributeReadMostly, m + kHalf, kHalf), 0);
  EXPECT_EQ(cuda_range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, kHalf), 1);

  // Preferred locations: device 1 by location, the host by CU_DEVICE_CPU and by location.
  ASSERT_CU(cuMemAdvise_v2(m, kHalf, CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
                           location(CU_MEM_LOCATION_TYPE_DEVICE, 1)));
  EXPECT_TRUE(logged("32768, hipMemAdviseSetPreferredLocation, 1) -> hipSuccess")) << fake_log();
  ASSERT_CU(cuMemAdvise(m + kHalf, kHalf, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, CU_DEVICE_CPU));
  EXPECT_EQ(hip_range_int(hipMemRangeAttributePreferredLocation, m, kHalf), 1);
  EXPECT_EQ(hip_range_int(hipMemRangeAttributePreferredLocation, m + kHalf, kHalf), hipCpuDeviceId);
  EXPECT_EQ(hip_range_int(hipMemRangeAttributePreferredLocation, m, kBytes), hipInvalidDeviceId);
  EXPECT_EQ(cuda_range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, kHalf), 1);
  ASSERT_CU(cuMemAdvise_v2(m, kBytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
                           location(CU_MEM_LOCATION_TYPE_HOST, 0)));
  EXPECT_EQ(hip_range_int(hipMemRangeAttributePreferredLocation, m, kBytes), hipCpuDeviceId);
  ASSERT_CU(cuMemAdvise(m, kBytes, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, dev));
  EXPECT_TRUE(logged("65536, hipMemAdviseUnsetPreferredLocation, -1) -> hipSuccess")) << fake_log();
  EXPECT_EQ(hip_range_int(hipMemRangeAttributePreferredLocation, m, kBytes), hipInvalidDeviceId);

  // Accessed-by, for both devices and the host.
  ASSERT_CU(cuMemAdvise(m, kBytes, CU_MEM_ADVISE_SET_ACCESSED_BY, 0));
  ASSERT_CU(cuMemAdvise(m, kBytes, CU_MEM_ADVISE_SET_ACCESSED_BY, 1));
  ASSERT_CU(cuMemAdvise_v2(m, kBytes, CU_MEM_ADVISE_SET_ACCESSED_BY,
                           location(CU_MEM_LOCATION_TYPE_HOST, 0)));
  EXPECT_EQ(hip_accessed_by(m, kBytes),
            (std::vector<int>{0, 1, hipCpuDeviceId, hipInvalidDeviceId}));
  ASSERT_CU(cuMemAdvise(m, kBytes, CU_MEM_ADVISE_UNSET_ACCESSED_BY, 1));
  EXPECT_TRUE(logged("65536, hipMemAdviseUnsetAccessedBy, 1) -> hipSuccess")) << fake_log();
  EXPECT_EQ(hip_accessed_by(m, kBytes),
            (std::vector<int>{0, hipCpuDeviceId, hipInvalidDeviceId, hipInvalidDeviceId}));
  // The host's UNSET_ACCESSED_BY is not passed: ROCm 5.2 would unset GPU 0's instead.
  const std::size_t advised = count_of("hipMemAdvise(");
  ASSERT_CU(cuMemAdvise(m, kBytes, CU_MEM_ADVISE_UNSET_ACCESSED_BY, CU_DEVICE_CPU));
  EXPECT_EQ(count_of("hipMemAdvise("), advised);
  EXPECT_EQ(hip_accessed_by(m, kBytes),
            (std::vector<int>{0, hipCpuDeviceId, hipInvalidDeviceId, hipInvalidDeviceId}));
  int accessed[2] = {};
  ASSERT_CU(cuMemRangeGetAttribute(accessed, sizeof accessed, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m,
                                   kBytes));
  EXPECT_EQ(accessed[0], 0);
  EXPECT_EQ(accessed[1], CU_DEVICE_INVALID) << "the program sees the host's advice undone";
}

TEST_F(HipManagedHints, WhatHip52LacksIsNotSupportedAndHipsErrorsSurface) {
  EXPECT_EQ(cuMemAdvise_v2(m, kBytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
                           location(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0)),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(cuMemAdvise_v2(m, kBytes, CU_MEM_ADVISE_SET_ACCESSED_BY,
                           location(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0)),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(
      cuMemPrefetchAsync_v2(m, kBytes, location(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0), 0, stream),
      CUDA_ERROR_NOT_SUPPORTED);
  ASSERT_CU(cuStreamSynchronize(stream));
  EXPECT_FALSE(logged("hipMemAdvise(")) << fake_log();
  EXPECT_FALSE(logged("hipMemPrefetchAsync(")) << fake_log();
  // Nothing was recorded for the refused calls.
  EXPECT_EQ(cuda_range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, kBytes),
            CU_DEVICE_INVALID);
  EXPECT_EQ(cuda_range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, kBytes),
            CU_DEVICE_INVALID);

  // HIP's refusal is the program's, and the core records nothing then either.
  fake_fn<void(const char*, int, int)>("fakehip_inject")("hipMemAdvise", hipErrorInvalidValue, 1);
  EXPECT_EQ(cuMemAdvise(m, kBytes, CU_MEM_ADVISE_SET_READ_MOSTLY, dev), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuda_range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, kBytes), 0);
}

TEST_F(HipManagedHints, PrefetchesReachHipInStreamOrder) {
  ASSERT_CU(cuMemsetD8Async(m, 0x5a, kBytes, stream));
  // A word in pinned memory holds the stream until the host writes 1.
  void* word = nullptr;
  ASSERT_CU(cuMemHostAlloc(&word, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
  auto* gate = static_cast<std::uint32_t*>(word);
  std::atomic_ref(*gate).store(0);
  CUdeviceptr gate_dev = 0;
  ASSERT_CU(cuMemHostGetDevicePointer(&gate_dev, word, 0));
  ASSERT_CU(cuStreamWaitValue32(stream, gate_dev, 1, CU_STREAM_WAIT_VALUE_EQ));
  ASSERT_CU(cuMemPrefetchAsync_v2(m, kBytes, location(CU_MEM_LOCATION_TYPE_DEVICE, 1), 0, stream));
  EXPECT_TRUE(logged("65536, 1, stream")) << fake_log();
  // Behind the wait, HIP has not moved the pages yet.
  EXPECT_EQ(hip_range_int(hipMemRangeAttributeLastPrefetchLocation, m, kBytes), hipInvalidDeviceId);
  std::atomic_ref(*gate).store(1);
  ASSERT_CU(cuStreamSynchronize(stream));
  EXPECT_EQ(hip_range_int(hipMemRangeAttributeLastPrefetchLocation, m, kBytes), 1);

  ASSERT_CU(cuMemPrefetchAsync(m, kHalf, CU_DEVICE_CPU, stream));
  ASSERT_CU(
      cuMemPrefetchAsync_v2(m + kHalf, kHalf, location(CU_MEM_LOCATION_TYPE_DEVICE, 0), 0, stream));
  ASSERT_CU(cuStreamSynchronize(stream));
  EXPECT_TRUE(logged("32768, -1, stream")) << fake_log();
  EXPECT_EQ(hip_range_int(hipMemRangeAttributeLastPrefetchLocation, m, kHalf), hipCpuDeviceId);
  EXPECT_EQ(hip_range_int(hipMemRangeAttributeLastPrefetchLocation, m + kHalf, kHalf), 0);
  EXPECT_EQ(cuda_range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, kHalf), CU_DEVICE_CPU);
  EXPECT_EQ(cuda_range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m + kHalf, kHalf), 0);
  EXPECT_EQ(reinterpret_cast<volatile unsigned char*>(m)[kBytes - 1], 0x5a);
  ASSERT_CU(cuMemFreeHost(word));
}

}  // namespace
