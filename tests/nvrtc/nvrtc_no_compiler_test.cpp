// A backend without a compiler ("nvrtcnocomp"): NVRTC answers NVRTC_ERROR_INTERNAL_ERROR
// where a compiler is needed, says why in the program log, and still does what needs none.
#include <cuda.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include "nvrtc_test_support.hpp"

namespace {

TEST(NvrtcNoCompiler, CompilationIsAnInternalErrorNamingTheBackend) {
  nvrtc_test::Program p;
  ASSERT_EQ(p.created(), NVRTC_SUCCESS);
  EXPECT_EQ(p.compile({"-arch=compute_90"}), NVRTC_ERROR_INTERNAL_ERROR);
  EXPECT_NE(p.log().find("backend 'nvrtcnocomp' has no compiler"), std::string::npos) << p.log();
  int n = -1;
  EXPECT_EQ(nvrtcGetNumSupportedArchs(&n), NVRTC_ERROR_INTERNAL_ERROR);
  EXPECT_EQ(n, -1);
  int archs[4] = {};
  EXPECT_EQ(nvrtcGetSupportedArchs(archs), NVRTC_ERROR_INTERNAL_ERROR);
}

TEST(NvrtcNoCompiler, WhatNeedsNoCompilerStillWorks) {
  int major = 0, minor = -1;
  EXPECT_EQ(nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
  EXPECT_EQ(major, 13);
  nvrtc_test::Program p;
  EXPECT_EQ(nvrtcAddNameExpression(p.get(), "k"), NVRTC_SUCCESS);
  EXPECT_STREQ(nvrtcGetErrorString(NVRTC_ERROR_COMPILATION), "NVRTC_ERROR_COMPILATION");
}

// NVRTC loaded the backend without cuInit; cuInit then uses that same plugin and its result
// (the test backend reports no devices).
TEST(NvrtcNoCompiler, CuInitAfterNvrtcSharesTheLoadedBackend) {
  int major = 0, minor = 0;
  ASSERT_EQ(nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
  EXPECT_EQ(cuInit(0), CUDA_ERROR_NO_DEVICE);
  int count = -1;
  EXPECT_EQ(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
}

}  // namespace

int main(int argc, char** argv) {
  nvrtc_test::use_backend(
      getenv("CUDAMUX_NVRTC_TEST_BACKEND") ? getenv("CUDAMUX_NVRTC_TEST_BACKEND") : "nvrtcnocomp",
      CUDAMUX_NVRTC_TEST_PLUGIN_DIR);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
