// End to end on the mock backend: NVRTC compiles CUDA C++, the driver loads and launches it.
// Skipped while the mock has no compiler (Backend::compiler() == nullptr); lights up when it lands.
#include <cuda.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nvrtc_test_support.hpp"

namespace {

#define ASSERT_CU(x) ASSERT_EQ((x), CUDA_SUCCESS)

class NvrtcMock : public testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    if (nvrtcGetNumSupportedArchs(&n) == NVRTC_ERROR_INTERNAL_ERROR)
      GTEST_SKIP() << "mock compiler not available yet";
    ASSERT_GT(n, 0);
    ASSERT_CU(cuInit(0));
    ASSERT_CU(cuDeviceGet(&dev_, 0));
    ASSERT_CU(cuCtxCreate(&ctx_, nullptr, 0, dev_));
  }
  void TearDown() override {
    if (ctx_) cuCtxDestroy(ctx_);
  }
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
};

constexpr const char* kSaxpy = R"(
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
)";

// The seed program: SAXPY with a = 2, compiled with --fmad=false for the device's compute
// capability, loaded with cuModuleLoadData and launched on a stream between async copies.
TEST_F(NvrtcMock, SeedSaxpy) {
  int major = 0, minor = 0;
  ASSERT_CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev_));
  ASSERT_CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev_));
  const std::string arch =
      "--gpu-architecture=compute_" + std::to_string(major) + std::to_string(minor);
  nvrtc_test::Program prog(kSaxpy, "saxpy.cu");
  ASSERT_EQ(prog.compile({"--fmad=false", arch.c_str()}), NVRTC_SUCCESS) << prog.log();
  size_t ptx_size = 0;
  ASSERT_EQ(nvrtcGetPTXSize(prog.get(), &ptx_size), NVRTC_SUCCESS);
  std::vector<char> ptx(ptx_size);
  ASSERT_EQ(nvrtcGetPTX(prog.get(), ptx.data()), NVRTC_SUCCESS);

  CUmodule mod = nullptr;
  CUfunction fn = nullptr;
  ASSERT_CU(cuModuleLoadData(&mod, ptx.data()));
  ASSERT_CU(cuModuleGetFunction(&fn, mod, "saxpy"));
  constexpr unsigned kThreads = 512, kBlocks = 1024;  // the seed uses 32768 blocks; same code path
  const size_t n = size_t{kThreads} * kBlocks;
  std::vector<float> x(n), y(n), out(n, -1.0f);
  for (size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i) * 0.5f;
    y[i] = static_cast<float>(n - i) / 3.0f;
  }
  CUdeviceptr dx = 0, dy = 0, dout = 0;
  const size_t bytes = n * sizeof(float);
  ASSERT_CU(cuMemAlloc(&dx, bytes));
  ASSERT_CU(cuMemAlloc(&dy, bytes));
  ASSERT_CU(cuMemAlloc(&dout, bytes));
  CUstream stream = nullptr;
  ASSERT_CU(cuStreamCreate(&stream, CU_STREAM_DEFAULT));
  ASSERT_CU(cuMemcpyHtoDAsync(dx, x.data(), bytes, stream));
  ASSERT_CU(cuMemcpyHtoDAsync(dy, y.data(), bytes, stream));
  float a = 2.0f;
  void* args[] = {&a, &dx, &dy, &dout, const_cast<size_t*>(&n)};
  ASSERT_CU(cuLaunchKernel(fn, kBlocks, 1, 1, kThreads, 1, 1, 0, stream, args, nullptr));
  ASSERT_CU(cuMemcpyDtoHAsync(out.data(), dout, bytes, stream));
  ASSERT_CU(cuStreamSynchronize(stream));
  for (size_t i = 0; i < n; ++i) {
    const volatile float prod = a * x[i];  // no contraction: --fmad=false must match exactly
    ASSERT_EQ(out[i], prod + y[i]) << "at " << i;
  }
  ASSERT_CU(cuStreamDestroy(stream));
  ASSERT_CU(cuMemFree(dx));
  ASSERT_CU(cuMemFree(dy));
  ASSERT_CU(cuMemFree(dout));
  ASSERT_CU(cuModuleUnload(mod));
}

// CUDA's abs overloads without any include, and beside the host library's <cstdlib> and
// <ctime> (which define std::abs for the same types and declare clock()), plus inline PTX.
TEST_F(NvrtcMock, AbsAndClockBesideTheHostLibrary) {
  nvrtc_test::Program prog(R"(
#include <cstdlib>
#include <ctime>
#include <cmath>
extern "C" __global__ void k(double* out) {
  const long l = -3 - (long)threadIdx.x;
  out[0] = abs(l) + abs(-2LL) + abs(-1.5f) + abs(-0.25) + abs(-4) + std::abs(-8L) + std::abs(-0.5);
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  out[1] = clock() >= 0 ? 1.0 + lane : -1.0;
}
)",
                           "abs.cu");
  const std::string inc = "-I" + std::filesystem::temp_directory_path().string();
  ASSERT_EQ(prog.compile({inc.c_str()}), NVRTC_SUCCESS) << prog.log();
  const std::string ptx = prog.ptx();
  CUmodule mod = nullptr;
  CUfunction fn = nullptr;
  ASSERT_CU(cuModuleLoadData(&mod, ptx.data()));
  ASSERT_CU(cuModuleGetFunction(&fn, mod, "k"));
  CUdeviceptr d = 0;
  ASSERT_CU(cuMemAlloc(&d, 2 * sizeof(double)));
  void* args[] = {&d};
  ASSERT_CU(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  double out[2] = {};
  ASSERT_CU(cuMemcpyDtoH(out, d, sizeof out));
  EXPECT_DOUBLE_EQ(out[0], 3 + 2 + 1.5 + 0.25 + 4 + 8 + 0.5);
  EXPECT_DOUBLE_EQ(out[1], 1.0);
  ASSERT_CU(cuMemFree(d));
  ASSERT_CU(cuModuleUnload(mod));
}

TEST_F(NvrtcMock, NameExpressionsGiveNamesTheModuleAccepts) {
  nvrtc_test::Program prog(
      "template <class T> __global__ void fill(T* p, T v) { p[threadIdx.x] = v; }\n", "t.cu");
  ASSERT_EQ(nvrtcAddNameExpression(prog.get(), "fill<int>"), NVRTC_SUCCESS);
  ASSERT_EQ(prog.compile({}), NVRTC_SUCCESS) << prog.log();
  const char* lowered = nullptr;
  ASSERT_EQ(nvrtcGetLoweredName(prog.get(), "fill<int>", &lowered), NVRTC_SUCCESS);
  EXPECT_STREQ(lowered, "_Z4fillIiEvPT_S0_");  // Itanium mangling, as NVIDIA's NVRTC gives
  const std::string ptx = prog.ptx();
  CUmodule mod = nullptr;
  CUfunction fn = nullptr;
  ASSERT_CU(cuModuleLoadData(&mod, ptx.data()));
  ASSERT_CU(cuModuleGetFunction(&fn, mod, lowered));
  CUdeviceptr d = 0;
  ASSERT_CU(cuMemAlloc(&d, 32 * sizeof(int)));
  int v = 7;
  void* args[] = {&d, &v};
  ASSERT_CU(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
  std::vector<int> host(32);
  ASSERT_CU(cuMemcpyDtoH(host.data(), d, 32 * sizeof(int)));
  EXPECT_EQ(host, std::vector<int>(32, 7));
  ASSERT_CU(cuMemFree(d));
  ASSERT_CU(cuModuleUnload(mod));
}

// Runs `src`'s kernel k(int*) on one thread and returns what it stored.
int run_one(const std::string& ptx) {
  CUmodule mod = nullptr;
  CUfunction fn = nullptr;
  int out = -1;
  CUdeviceptr d = 0;
  if (cuModuleLoadData(&mod, ptx.data()) != CUDA_SUCCESS) return -2;
  if (cuModuleGetFunction(&fn, mod, "k") == CUDA_SUCCESS &&
      cuMemAlloc(&d, sizeof(int)) == CUDA_SUCCESS) {
    void* args[] = {&d};
    if (cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr) == CUDA_SUCCESS)
      cuMemcpyDtoH(&out, d, sizeof(int));
    cuMemFree(d);
  }
  cuModuleUnload(mod);
  return out;
}

// As NVIDIA's samples expect: `#include "x.h"` finds x.h beside the program's file (here the
// current directory, the program's name having no folder). The compiled program is cached;
// editing the header must not give the old module back.
TEST_F(NvrtcMock, QuotedIncludeBesideTheProgramAndItsEdits) {
  namespace fs = std::filesystem;
  std::string tmpl = (fs::temp_directory_path() / "cudamux-nvrtc-cwd-XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const fs::path old = fs::current_path();
  fs::current_path(tmpl);
  const char* src =
      "#include \"value.h\"\nextern \"C\" __global__ void k(int* o) { *o = VALUE; }\n";
  std::ofstream("value.h") << "#define VALUE 1\n";
  {
    nvrtc_test::Program prog(src, "kernel.cu");
    ASSERT_EQ(prog.compile({}), NVRTC_SUCCESS) << prog.log();
    EXPECT_EQ(run_one(prog.ptx()), 1);
  }
  std::ofstream("value.h", std::ios::trunc) << "#define VALUE 2222\n";  // size differs too
  {
    nvrtc_test::Program prog(src, "kernel.cu");
    ASSERT_EQ(prog.compile({}), NVRTC_SUCCESS) << prog.log();
    EXPECT_EQ(run_one(prog.ptx()), 2222);
  }
  fs::current_path(old);
  fs::remove_all(tmpl);
}

TEST_F(NvrtcMock, CompileErrorsNameTheUsersFileAndLine) {
  nvrtc_test::Program prog(
      "__global__ void k(int* p) {\n  int a = 1;\n  p[0] = undeclared_thing;\n}\n",
      "user_kernel.cu");
  EXPECT_EQ(prog.compile({}), NVRTC_ERROR_COMPILATION);
  const std::string log = prog.log();
  EXPECT_NE(log.find("user_kernel.cu"), std::string::npos) << log;
  EXPECT_TRUE(log.find("(3)") != std::string::npos || log.find(":3:") != std::string::npos) << log;
  EXPECT_NE(log.find("undeclared_thing"), std::string::npos) << log;
}

}  // namespace

int main(int argc, char** argv) {
  // The mock from this build tree's plugin folder; no user config.
  nvrtc_test::use_backend("mock", "");
  // A compile cache of this run's own (QuotedIncludeBesideTheProgramAndItsEdits needs one).
  std::string cache =
      (std::filesystem::temp_directory_path() / "cudamux-nvrtc-cache-XXXXXX").string();
  if (::mkdtemp(cache.data()) != nullptr) setenv("CUDA_CACHE_PATH", cache.c_str(), 1);
  testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  std::error_code ec;
  if (const char* c = std::getenv("CUDA_CACHE_PATH"); c != nullptr && cache == c)
    std::filesystem::remove_all(cache, ec);
  return rc;
}
