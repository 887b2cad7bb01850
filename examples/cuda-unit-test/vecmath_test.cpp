#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "vecmath.h"

TEST(VecMath, AxpyMatchesTheHostComputation) {
  std::vector<float> x(5000), y(5000), expect(5000);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = 0.25f * static_cast<float>(i);
    y[i] = 1000.0f - static_cast<float>(i);
    expect[i] = std::fma(-1.5f, x[i], y[i]);  // nvcc contracts a * x + y into an fma
  }
  ASSERT_EQ(vec_axpy(-1.5f, x.data(), y.data(), y.size()), cudaSuccess);
  EXPECT_EQ(y, expect);
}

TEST(VecMath, SumOfManyValues) {
  std::vector<int> v(100003);
  long long expect = 0;
  for (std::size_t i = 0; i < v.size(); ++i) expect += v[i] = static_cast<int>(i % 1000) - 400;
  long long sum = 0;
  ASSERT_EQ(vec_sum(v.data(), v.size(), &sum), cudaSuccess);
  EXPECT_EQ(sum, expect);
}

TEST(VecMath, BlockScanRestartsAtEachBlock) {
  std::vector<int> v(700), out(700);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int>(i * 7 % 13);
  ASSERT_EQ(vec_block_scan(v.data(), v.size(), out.data()), cudaSuccess);
  int running = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    running = (i % 256 == 0 ? 0 : running) + v[i];
    ASSERT_EQ(out[i], running) << "at " << i;
  }
}

TEST(VecMath, ErrorsComeBackAsCudaErrors) {
  // An invalid pointer: the copy fails the way CUDA says (no crash, no hang).
  EXPECT_EQ(cudaMemcpy(reinterpret_cast<void*>(16), reinterpret_cast<void*>(32), 4,
                       cudaMemcpyDeviceToDevice),
            cudaErrorInvalidValue);
}
