// Assertions on CUresult that print error names, for the tests of this folder.
#pragma once

#include <cuda.h>
#include <gtest/gtest.h>

#include <string>

inline std::string name_of(CUresult r) {
  const char* n = nullptr;
  return cuGetErrorName(r, &n) == CUDA_SUCCESS && n ? n : std::to_string(r);
}
#define EXPECT_CU(expected, call) EXPECT_EQ(name_of(expected), name_of(call))
#define ASSERT_CU(expected, call) ASSERT_EQ(name_of(expected), name_of(call))
