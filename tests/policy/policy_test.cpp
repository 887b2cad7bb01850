// The enum policy through the public API: a backend error CUDA has no name for, seen
// strictly and hallucinated (docs/policy.md).
#include <cuda.h>
#include <cudamux.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

// Every CUresult value our cuda.h defines (the ABI test proves it equals NVIDIA's).
const std::set<long long>& defined_cuda_results() {
  static const std::set<long long> values = [] {
    std::set<long long> v;
#define CUDAMUX_ENUM_TYPE(NAME, OUTPUT, ...)                              \
  if (std::strcmp(#NAME, "CUresult") == 0) {                              \
    for (long long x : {__VA_ARGS__}) v.insert(x);                        \
  }
#include "cudamux/enum_types.inc"
#undef CUDAMUX_ENUM_TYPE
    return v;
  }();
  return values;
}

class Policy : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    CUdevice dev{};
    ASSERT_EQ(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxCreate(&ctx_, nullptr, 0, dev), CUDA_SUCCESS);
  }
  void TearDown() override { ASSERT_EQ(cudamuxSetHallucinate("CUresult", 0), CUDA_SUCCESS); }
  static CUresult alloc(size_t bytes) {
    CUdeviceptr p = 0;
    const CUresult r = cuMemAlloc(&p, bytes);
    if (r == CUDA_SUCCESS) cuMemFree(p);
    return r;
  }
  static inline CUcontext ctx_{};
};

TEST_F(Policy, StrictIsTheDefaultAndGivesTheGenericValue) {
  int enabled = -1;
  ASSERT_EQ(cudamuxGetHallucinate("CUresult", &enabled), CUDA_SUCCESS);
  EXPECT_EQ(enabled, 0);
  EXPECT_EQ(alloc(1001), CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(alloc(1002), CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(alloc(64), CUDA_SUCCESS);  // mapped values pass through untouched
}

TEST_F(Policy, HallucinatedValuesAreStableDistinctAndCollideWithNothingCudaDefines) {
  ASSERT_EQ(cudamuxSetHallucinate("CUresult", 1), CUDA_SUCCESS);
  const CUresult a = alloc(1001);
  const CUresult b = alloc(1002);
  EXPECT_NE(a, CUDA_SUCCESS);
  EXPECT_NE(a, b);
  EXPECT_EQ(defined_cuda_results().count(a), 0u) << a;
  EXPECT_EQ(defined_cuda_results().count(b), 0u) << b;
  EXPECT_EQ(alloc(1001), a);  // same backend value, same invented value
  std::vector<CUresult> seen(8);
  std::vector<std::thread> threads;
  for (auto& r : seen)
    threads.emplace_back([&r] {
      cuCtxSetCurrent(ctx_);
      r = alloc(1002);
    });
  for (auto& t : threads) t.join();
  for (CUresult r : seen) EXPECT_EQ(r, b);
  // Switching back to strict applies at once.
  ASSERT_EQ(cudamuxSetHallucinate("CUresult", 0), CUDA_SUCCESS);
  EXPECT_EQ(alloc(1001), CUDA_ERROR_UNKNOWN);
  ASSERT_EQ(cudamuxSetHallucinate("CUresult", 1), CUDA_SUCCESS);
  EXPECT_EQ(alloc(1001), a);  // remembered for the process's life
}

TEST_F(Policy, InventedConstantsHaveNamesAndDescriptions) {
  ASSERT_EQ(cudamuxSetHallucinate("CUresult", 1), CUDA_SUCCESS);
  const CUresult a = alloc(1001);
  const char* name = nullptr;
  const char* text = nullptr;
  ASSERT_EQ(cuGetErrorName(a, &name), CUDA_SUCCESS);
  ASSERT_EQ(cuGetErrorString(a, &text), CUDA_SUCCESS);
  EXPECT_STREQ(name, "CUDA_ERROR_CUDAMUX_unmapped_UNMAPPED_A");
  EXPECT_NE(std::string(text).find("backend 'unmapped' reported UNMAPPED_A (1001)"), std::string::npos) << text;
  // A value nobody invented is still unknown.
  EXPECT_EQ(cuGetErrorName(static_cast<CUresult>(a + 1000), &name), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Policy, ArgumentOnlyAndUnknownTypesAreRefused) {
  // CUdevice_attribute only flows from the program to the backend (rule 5).
  EXPECT_EQ(cudamuxSetHallucinate("CUdevice_attribute", 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cudamuxSetHallucinate("NoSuchType", 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cudamuxSetHallucinate(nullptr, 1), CUDA_ERROR_INVALID_VALUE);
  int enabled = 0;
  EXPECT_EQ(cudamuxGetHallucinate("NoSuchType", &enabled), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cudamuxGetHallucinate("CUresult", nullptr), CUDA_ERROR_INVALID_VALUE);
  // Turning an argument-only type *off* is harmless and allowed.
  EXPECT_EQ(cudamuxSetHallucinate("CUdevice_attribute", 0), CUDA_SUCCESS);
}

}  // namespace
