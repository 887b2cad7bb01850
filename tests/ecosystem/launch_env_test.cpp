// CUDA_LAUNCH_BLOCKING and CUDA_MODULE_LOADING through the driver API on the mock, with a
// kernel compiled by NVRTC. Registered twice by CMakeLists.txt: with CUDA_LAUNCH_BLOCKING=1
// and CUDA_MODULE_LOADING=EAGER, and with neither; each test reads which one it is in.
#include <cuda.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace {

bool blocking() {
  const char* v = std::getenv("CUDA_LAUNCH_BLOCKING");
  return v && std::string(v) == "1";
}

// No #include <assert.h>: NVRTC defines assert itself and, without -I, finds no system header.
const char* kSource = R"(
extern "C" __global__ void fails(int* flag) {
  flag[0] = 1;
  assert(flag[1] == 12345);  // flag[1] is 0: every thread fails
}
extern "C" __global__ void marks(volatile int* flag, int value) {
  for (volatile int spin = 0; spin < 2000000; ++spin) {}  // long enough to be seen running
  flag[0] = value;
}
)";

class LaunchEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDeviceGet(&dev_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxCreate(&ctx_, nullptr, 0, dev_), CUDA_SUCCESS);
    nvrtcProgram prog;
    ASSERT_EQ(nvrtcCreateProgram(&prog, kSource, "env.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
    const char* opts[] = {"--gpu-architecture=compute_90"};
    const nvrtcResult compiled = nvrtcCompileProgram(prog, 1, opts);
    if (compiled != NVRTC_SUCCESS) {
      size_t n = 0;
      nvrtcGetProgramLogSize(prog, &n);
      std::string log(n, '\0');
      nvrtcGetProgramLog(prog, log.data());
      FAIL() << "compile failed: " << log;
    }
    size_t size = 0;
    ASSERT_EQ(nvrtcGetPTXSize(prog, &size), NVRTC_SUCCESS);
    std::vector<char> image(size);
    ASSERT_EQ(nvrtcGetPTX(prog, image.data()), NVRTC_SUCCESS);
    nvrtcDestroyProgram(&prog);
    ASSERT_EQ(cuModuleLoadData(&mod_, image.data()), CUDA_SUCCESS);
    ASSERT_EQ(cuModuleGetFunction(&fails_, mod_, "fails"), CUDA_SUCCESS);
    ASSERT_EQ(cuModuleGetFunction(&marks_, mod_, "marks"), CUDA_SUCCESS);
    void* host = nullptr;
    ASSERT_EQ(cuMemHostAlloc(&host, 2 * sizeof(int), CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
    flag_ = static_cast<volatile int*>(host);
    flag_[0] = 0;
    flag_[1] = 0;
    ASSERT_EQ(cuMemHostGetDevicePointer(&dflag_, host, 0), CUDA_SUCCESS);
  }
  void TearDown() override {
    if (ctx_) cuCtxDestroy(ctx_);
  }
  CUdevice dev_{};
  CUcontext ctx_{};
  CUmodule mod_{};
  CUfunction fails_{}, marks_{};
  volatile int* flag_ = nullptr;
  CUdeviceptr dflag_{};
};

TEST_F(LaunchEnv, KernelErrorSurfacesAtTheLaunchWhenBlocking) {
  void* args[] = {&dflag_};
  ::testing::internal::CaptureStderr();  // the device-side assertion message
  const CUresult launched = cuLaunchKernel(fails_, 1, 1, 1, 4, 1, 1, 0, nullptr, args, nullptr);
  if (blocking()) {
    EXPECT_EQ(launched, CUDA_ERROR_ASSERT);
    EXPECT_EQ(flag_[0], 1);  // the kernel ran before the launch returned
  } else {
    EXPECT_EQ(launched, CUDA_SUCCESS);
  }
  // Either way the error sticks to the context afterwards.
  EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_ASSERT);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("Assertion"), std::string::npos) << err;
}

TEST_F(LaunchEnv, BlockingLaunchHasFinishedOnReturn) {
  if (!blocking()) GTEST_SKIP() << "only meaningful with CUDA_LAUNCH_BLOCKING=1";
  CUstream s;
  ASSERT_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  int value = 42;
  void* args[] = {&dflag_, &value};
  ASSERT_EQ(cuLaunchKernel(marks_, 1, 1, 1, 1, 1, 1, 0, s, args, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(flag_[0], 42);                    // written before the launch returned
  EXPECT_EQ(cuStreamQuery(s), CUDA_SUCCESS);  // nothing left running
  EXPECT_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_F(LaunchEnv, ModuleLoadingModeFollowsTheEnvironment) {
  CUmoduleLoadingMode mode{};
  ASSERT_EQ(cuModuleGetLoadingMode(&mode), CUDA_SUCCESS);
  const char* v = std::getenv("CUDA_MODULE_LOADING");
  EXPECT_EQ(mode,
            v && std::string(v) == "EAGER" ? CU_MODULE_EAGER_LOADING : CU_MODULE_LAZY_LOADING);
}

}  // namespace
