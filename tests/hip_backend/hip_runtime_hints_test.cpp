// The runtime API's managed memory hints on the hip backend over the fake HIP runtime (issue 17):
// cudaMemAdvise and cudaMemPrefetchAsync reach hipMemAdvise and hipMemPrefetchAsync with HIP's
// advice and device argument. A file of its own: cuda_runtime_api.h and HIP's headers do not mix
// in one translation unit.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "fake_hip_hooks.hpp"

namespace {

using namespace fake_hip_hooks;

#define ASSERT_RT(call) ASSERT_EQ((call), cudaSuccess) << #call

cudaMemLocation location(cudaMemLocationType type, int id) {
  cudaMemLocation l{};
  l.type = type;
  l.id = id;
  return l;
}

TEST(HipRuntimeHints, AdviceAndPrefetchesReachHip) {
  int count = 0;
  ASSERT_RT(cudaGetDeviceCount(&count));
  if (count < 2) GTEST_SKIP() << "needs FAKE_HIP_DEVICES=2";
  ASSERT_RT(cudaSetDevice(0));
  constexpr size_t kBytes = 3 * 4096;  // a size no other case uses, to find its log lines
  void* p = nullptr;
  ASSERT_RT(cudaMallocManaged(&p, kBytes, cudaMemAttachGlobal));
  cudaStream_t s = nullptr;
  ASSERT_RT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  ASSERT_RT(cudaMemAdvise(p, kBytes, cudaMemAdviseSetPreferredLocation,
                          location(cudaMemLocationTypeDevice, 1)));
  EXPECT_TRUE(logged("12288, hipMemAdviseSetPreferredLocation, 1) -> hipSuccess")) << fake_log();
  ASSERT_RT(
      cudaMemAdvise(p, kBytes, cudaMemAdviseSetAccessedBy, location(cudaMemLocationTypeHost, 0)));
  EXPECT_TRUE(logged("12288, hipMemAdviseSetAccessedBy, -1) -> hipSuccess")) << fake_log();
  ASSERT_RT(cudaMemPrefetchAsync(p, kBytes, location(cudaMemLocationTypeHost, 0), 0, s));
  ASSERT_RT(cudaMemPrefetchAsync(p, kBytes, location(cudaMemLocationTypeDevice, 1), 0, s));
  ASSERT_RT(cudaStreamSynchronize(s));
  EXPECT_TRUE(logged("12288, -1, stream")) << fake_log();
  EXPECT_TRUE(logged("12288, 1, stream")) << fake_log();

  EXPECT_EQ(cudaMemAdvise(p, kBytes, cudaMemAdviseSetPreferredLocation,
                          location(cudaMemLocationTypeHostNuma, 0)),
            cudaErrorNotSupported);
  ASSERT_RT(cudaStreamDestroy(s));
  ASSERT_RT(cudaFree(p));
}

}  // namespace
