// Flat twins (issue 15 item 3) through our libcuda.so.1 on the mock: nvcc's PTX of barrier-free
// kernels (data/flat/flat.cu). Registered three times (tests/ptx/CMakeLists.txt): with flat twins
// (the default), with CUDAMUX_MOCK_PTX_FLAT=0 (the kernels as written in the thunk's thread
// loop; the same assertions hold) and with CUDAMUX_MEMCHECK=1 (suite FlatMemcheck; the others
// skip), where the twins are off and reports must name the thread.
#include <cuda.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

#define ASSERT_OK(x) ASSERT_EQ(CUDA_SUCCESS, (x)) << #x
#define EXPECT_OK(x) EXPECT_EQ(CUDA_SUCCESS, (x)) << #x

bool memcheck() {
  const char* m = std::getenv("CUDAMUX_MEMCHECK");
  return m != nullptr && std::string(m) == "1";
}

// A fresh primary context per test (faults and traps are sticky).
class FlatRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (memcheck() != expect_memcheck())
      GTEST_SKIP() << "runs in the " << (expect_memcheck() ? "memcheck" : "plain")
                   << " registration";
    ASSERT_OK(cuInit(0));
    ASSERT_OK(cuDeviceGet(&dev_, 0));
    ASSERT_OK(cuDevicePrimaryCtxRetain(&ctx_, dev_));
    ASSERT_OK(cuCtxSetCurrent(ctx_));
    std::ifstream in(std::string(CUDAMUX_PTX_DATA) + "/flat/flat.compute_80.ptx");
    const std::string ptx((std::istreambuf_iterator<char>(in)), {});
    ASSERT_FALSE(ptx.empty()) << "missing fixture";
    ASSERT_OK(cuModuleLoadData(&module_, ptx.c_str()));
  }
  void TearDown() override {
    if (ctx_ != nullptr) {
      cuDevicePrimaryCtxRelease(dev_);
      cuDevicePrimaryCtxReset(dev_);
    }
  }
  virtual bool expect_memcheck() const { return false; }
  CUfunction fn(const char* name) {
    CUfunction f = nullptr;
    EXPECT_OK(cuModuleGetFunction(&f, module_, name));
    return f;
  }
  template <class T>
  CUdeviceptr upload(const std::vector<T>& v) {
    CUdeviceptr p = 0;
    EXPECT_OK(cuMemAlloc(&p, std::max<size_t>(v.size() * sizeof(T), 4)));
    if (!v.empty()) {
      EXPECT_OK(cuMemcpyHtoD(p, v.data(), v.size() * sizeof(T)));
    }
    return p;
  }
  template <class T>
  std::vector<T> download(CUdeviceptr p, size_t n) {
    std::vector<T> v(n);
    EXPECT_OK(cuMemcpyDtoH(v.data(), p, n * sizeof(T)));
    return v;
  }
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  CUmodule module_ = nullptr;
};

class FlatMemcheck : public FlatRun {
  bool expect_memcheck() const override { return true; }
};

TEST_F(FlatRun, EarlyExitsAndThreeDimensionalBlocks) {
  const int n = 200, bs = 64;
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = i % 5 == 2 ? -i : (i * 7) % 23;
  CUdeviceptr din = upload(in), dout = upload(std::vector<int>(4 * bs, 7));
  int nn = n;
  void* args[] = {&din, &dout, &nn};
  ASSERT_OK(cuLaunchKernel(fn("early_exit"), 4, 1, 1, bs, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  const auto out = download<int>(dout, 4 * bs);
  for (int i = 0; i < 4 * bs; ++i) {
    int ref = 7;
    if (i < n) {
      if (in[i] < 0) {
        ref = -1;
      } else {
        int acc = 0;
        bool left = false;
        for (int k = 0; k < in[i] && !left; ++k) {
          acc += k * 3 + i;
          left = acc > 500;
        }
        ref = left ? acc : acc + 1000000;
      }
    }
    ASSERT_EQ(out[i], ref) << i;
  }
  const unsigned threads = 2 * 2 * 3 * 5 * 3 * 2;
  CUdeviceptr c = upload(std::vector<unsigned>(2 * threads));
  void* cargs[] = {&c};
  ASSERT_OK(cuLaunchKernel(fn("coords3d"), 2, 2, 3, 5, 3, 2, 0, nullptr, cargs, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  const auto co = download<unsigned>(c, 2 * threads);
  unsigned i = 0;
  for (unsigned bz = 0; bz < 3; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 2; ++bx)
        for (unsigned z = 0; z < 2; ++z)
          for (unsigned y = 0; y < 3; ++y)
            for (unsigned x = 0; x < 5; ++x, ++i) {
              ASSERT_EQ(co[2 * i], x | (y << 10) | (z << 20)) << i;
              ASSERT_EQ(co[2 * i + 1], bx | (by << 10) | (bz << 20)) << i;
            }
}

TEST_F(FlatRun, PrintfNamesTheThread) {
  int who = 11;  // thread (3,1) of each 8x2 block
  void* args[] = {&who};
  testing::internal::CaptureStdout();
  ASSERT_OK(cuLaunchKernel(fn("say"), 2, 1, 1, 8, 2, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("flat thread (3,1) of block 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("flat thread (3,1) of block 1\n"), std::string::npos) << out;
  // Exactly those two lines; blocks run in parallel, so in either order.
  std::size_t lines = 0;
  for (auto at = out.find("flat thread ("); at != std::string::npos;
       at = out.find("flat thread (", at + 1))
    ++lines;
  EXPECT_EQ(lines, 2u) << out;
}

TEST_F(FlatRun, FaultAndTrapFailTheLaunch) {
  const unsigned n = 64;
  CUdeviceptr ok = upload(std::vector<int>(n));
  CUdeviceptr bad = 0x1000;
  int who = 5;
  void* args[] = {&ok, &bad, &who};
  CUresult r = cuLaunchKernel(fn("poke"), 2, 1, 1, 16, 2, 1, 0, nullptr, args, nullptr);
  if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
  EXPECT_EQ(r, CUDA_ERROR_ILLEGAL_ADDRESS);
  // A new context: the trap.
  cuDevicePrimaryCtxRelease(dev_);
  cuDevicePrimaryCtxReset(dev_);
  ctx_ = nullptr;
  SetUp();
  CUdeviceptr out = upload(std::vector<int>(32));
  int at = 9;
  void* targs[] = {&out, &at};
  r = cuLaunchKernel(fn("trap_at"), 1, 1, 1, 8, 4, 1, 0, nullptr, targs, nullptr);
  if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
  EXPECT_EQ(r, CUDA_ERROR_LAUNCH_FAILED);
}

// Memcheck: the twins are off (reports read the running thread from the runtime), and an
// out-of-bounds write of a barrier-free kernel with 2-D blocks names its block and thread.
TEST_F(FlatMemcheck, OutOfBoundsWriteNamesBlockAndThread) {
  CUdeviceptr out = upload(std::vector<int>(50));  // 2 blocks of 8x4 write 64
  void* args[] = {&out};
  testing::internal::CaptureStderr();
  ASSERT_OK(cuLaunchKernel(fn("write2d"), 2, 1, 1, 8, 4, 1, 0, nullptr, args, nullptr));
  EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
  const std::string err = testing::internal::GetCapturedStderr();
  char where[64];
  std::snprintf(where, sizeof where, "at 0x%llx", static_cast<unsigned long long>(out + 200));
  // Element 50: block 1, linear thread 18 = (2,2,0).
  EXPECT_NE(err.find("invalid write of 4 byte(s) " + std::string(where)), std::string::npos) << err;
  EXPECT_NE(err.find("kernel 'write2d', block (1,0,0), thread (2,2,0)"), std::string::npos) << err;
}

TEST_F(FlatMemcheck, InBoundsKernelsPass) {
  CUdeviceptr out = upload(std::vector<int>(64));
  void* args[] = {&out};
  ASSERT_OK(cuLaunchKernel(fn("write2d"), 2, 1, 1, 8, 4, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  const auto o = download<int>(out, 64);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(o[i], i);
}

}  // namespace
