// Unit tests of vecops.cpp on cudamux's mock backend (CUDAMUX_BACKEND=mock, set by
// CMakeLists.txt for ctest). The same tests run unchanged on a real GPU.
#include "vecops.h"

#include <gtest/gtest.h>

#include <vector>

TEST(VecScale, ScalesEveryElement) {
  std::vector<float> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  ASSERT_EQ(vec_scale(v.data(), v.size(), 3.0f, 0), CUDA_SUCCESS);
  for (size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(v[i], 3.0f * static_cast<float>(i)) << "element " << i;
}

TEST(VecScale, PartialLastBlockLeavesNothingOut) {
  std::vector<float> v(257, 2.0f);  // one full block of 256 and one thread more
  ASSERT_EQ(vec_scale(v.data(), v.size(), -0.5f, 0), CUDA_SUCCESS);
  for (float x : v) ASSERT_EQ(x, -1.0f);
}

TEST(VecScale, RejectsNullData) {
  EXPECT_EQ(vec_scale(nullptr, 4, 1.0f, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST(VecScale, EmptyVectorIsANoOp) { EXPECT_EQ(vec_scale(nullptr, 0, 1.0f, 0), CUDA_SUCCESS); }

TEST(VecScale, MissingDeviceIsReported) {
  int count = 0;
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  ASSERT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  float x = 1.0f;
  EXPECT_EQ(vec_scale(&x, 1, 2.0f, count), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(x, 1.0f);
}
