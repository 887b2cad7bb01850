// Issue 9 through our libcuda.so.1 on the mock: a kernel's illegal access is a sticky
// CUDA_ERROR_ILLEGAL_ADDRESS for its context, as on a GPU, and a reset gives a working one.
// Registered twice: with CUDAMUX_MEMCHECK=1 (checked accesses) and =0 (the fault handler).
#include <cuda.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cu_expect.hpp"

namespace {

const char kSource[] = R"(
extern "C" __global__ void store(int* p, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = 3 * i;
}
)";

std::vector<char> compile() {
  nvrtcProgram prog;
  EXPECT_EQ(NVRTC_SUCCESS, nvrtcCreateProgram(&prog, kSource, "store.cu", 0, nullptr, nullptr));
  EXPECT_EQ(NVRTC_SUCCESS, nvrtcCompileProgram(prog, 0, nullptr));
  size_t size = 0;
  EXPECT_EQ(NVRTC_SUCCESS, nvrtcGetPTXSize(prog, &size));
  std::vector<char> image(size);
  EXPECT_EQ(NVRTC_SUCCESS, nvrtcGetPTX(prog, image.data()));
  nvrtcDestroyProgram(&prog);
  return image;
}

// Loads the module in the current context and launches `store` over `n` ints at `p`.
CUresult run_store(const std::vector<char>& image, CUdeviceptr p, int n, CUmodule* out) {
  CUmodule m = nullptr;
  if (CUresult r = cuModuleLoadData(&m, image.data()); r != CUDA_SUCCESS) return r;
  *out = m;
  CUfunction f = nullptr;
  if (CUresult r = cuModuleGetFunction(&f, m, "store"); r != CUDA_SUCCESS) return r;
  void* args[] = {&p, &n};
  if (CUresult r = cuLaunchKernel(f, (n + 63) / 64, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr);
      r != CUDA_SUCCESS)
    return r;
  return cuCtxSynchronize();
}

TEST(KernelMemoryErrors, IllegalAccessIsStickyUntilThePrimaryContextIsReset) {
  ASSERT_CU(CUDA_SUCCESS, cuInit(0));
  const std::vector<char> image = compile();
  CUdevice dev = 0;
  ASSERT_CU(CUDA_SUCCESS, cuDeviceGet(&dev, 0));
  CUcontext ctx = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&ctx, dev));
  ASSERT_CU(CUDA_SUCCESS, cuCtxSetCurrent(ctx));
  CUdeviceptr p = 0;
  ASSERT_CU(CUDA_SUCCESS, cuMemAlloc(&p, 100 * sizeof(int)));
  CUmodule m = nullptr;
  // 101 threads write 100 ints: one past the end with memcheck; without it the stray write
  // lands in the arena's granule unseen, so aim far outside instead.
  const char* mode = std::getenv("CUDAMUX_MEMCHECK");
  const bool memcheck = mode != nullptr && std::string(mode) == "1";
  const CUdeviceptr target = memcheck ? p : CUdeviceptr{0x1000};
  EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, run_store(image, target, 101, &m));
  // Sticky: every later call in this context reports it.
  CUdeviceptr q = 0;
  EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemAlloc(&q, 64));
  EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
  EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(nullptr));
  // A reset clears it: the re-created primary context runs the kernel correctly.
  ASSERT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxRelease(dev));
  ASSERT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxReset(dev));
  ASSERT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&ctx, dev));
  ASSERT_CU(CUDA_SUCCESS, cuCtxSetCurrent(ctx));
  ASSERT_CU(CUDA_SUCCESS, cuMemAlloc(&p, 100 * sizeof(int)));
  ASSERT_CU(CUDA_SUCCESS, run_store(image, p, 100, &m));
  std::vector<int> host(100);
  ASSERT_CU(CUDA_SUCCESS, cuMemcpyDtoH(host.data(), p, host.size() * sizeof(int)));
  for (int i = 0; i < 100; ++i) ASSERT_EQ(host[i], 3 * i) << i;
  EXPECT_CU(CUDA_SUCCESS, cuMemFree(p));
  EXPECT_CU(CUDA_SUCCESS, cuModuleUnload(m));
  EXPECT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxRelease(dev));
}

TEST(KernelMemoryErrors, AnotherContextIsUnaffectedAndANewOneWorks) {
  ASSERT_CU(CUDA_SUCCESS, cuInit(0));
  const std::vector<char> image = compile();
  CUdevice dev = 0;
  ASSERT_CU(CUDA_SUCCESS, cuDeviceGet(&dev, 0));
  CUcontext bystander = nullptr;
  CUcontext victim = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuCtxCreate(&bystander, nullptr, 0, dev));
  ASSERT_CU(CUDA_SUCCESS, cuCtxCreate(&victim, nullptr, 0, dev));
  CUmodule m = nullptr;
  EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, run_store(image, CUdeviceptr{0x2000}, 64, &m));
  EXPECT_CU(CUDA_SUCCESS, cuCtxDestroy(victim));
  ASSERT_CU(CUDA_SUCCESS, cuCtxSetCurrent(bystander));
  CUdeviceptr p = 0;
  ASSERT_CU(CUDA_SUCCESS, cuMemAlloc(&p, 64 * sizeof(int)));
  ASSERT_CU(CUDA_SUCCESS, run_store(image, p, 64, &m));
  std::vector<int> host(64);
  ASSERT_CU(CUDA_SUCCESS, cuMemcpyDtoH(host.data(), p, host.size() * sizeof(int)));
  for (int i = 0; i < 64; ++i) ASSERT_EQ(host[i], 3 * i) << i;
  EXPECT_CU(CUDA_SUCCESS, cuMemFree(p));
  EXPECT_CU(CUDA_SUCCESS, cuCtxDestroy(bystander));
}

}  // namespace
