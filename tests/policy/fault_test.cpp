// Faults injected into the mock ([[mock.faults]], issue 6) through the driver, runtime and
// NVRTC APIs: the enum policy for CUresult, cudaError_t and nvrtcResult on the same
// unmapped backend error, after/count, and CUDA's sticky rules. Each test runs in its own
// process with the config its CTest entry names (tests/policy/CMakeLists.txt).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudamux.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#ifdef CUDAMUX_HAVE_NVIDIA_HEADERS
// tests/policy/nvidia_enum_values.py: every enumerator of NVIDIA's headers, by value.
std::vector<long long> nvidia_enum_values(std::string_view type);
#endif

namespace {

// Every value our headers define for `type` (generated tables; the ABI tests prove them
// equal to NVIDIA's), plus NVIDIA's own when the toolkit was found.
std::set<long long> defined_values(std::string_view type) {
  std::set<long long> v;
  if (type == "CUresult") {
#define CUDAMUX_ENUM_TYPE(NAME, OUTPUT, ...)       \
  if (std::strcmp(#NAME, "CUresult") == 0) {       \
    for (long long x : {__VA_ARGS__}) v.insert(x); \
  }
#include "cudamux/enum_types.inc"
#undef CUDAMUX_ENUM_TYPE
  } else if (type == "cudaError_t") {
#define CUDAMUX_RT_ERROR_NAME(V, N) v.insert(V);
#include "cudamux/runtime_errors.inc"
#undef CUDAMUX_RT_ERROR_NAME
  } else if (type == "nvrtcResult") {
    constexpr std::pair<int, const char*> kResults[] = {
#include "cudamux/nvrtc_results.inc"
    };
    for (const auto& r : kResults) v.insert(r.first);
  }
#ifdef CUDAMUX_HAVE_NVIDIA_HEADERS
  const auto nvidia = nvidia_enum_values(type);
  EXPECT_FALSE(nvidia.empty()) << type;
  v.insert(nvidia.begin(), nvidia.end());
#endif
  EXPECT_GT(v.size(), 10u) << type;
  return v;
}

template <class F>
std::vector<long long> on_threads(int n, F f) {
  std::vector<long long> out(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] { out[static_cast<std::size_t>(i)] = f(); });
  for (auto& t : threads) t.join();
  return out;
}

class Faults : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    CUdevice dev{};
    ASSERT_EQ(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx_, dev), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
  }
  CUresult alloc() {
    CUdeviceptr p = 0;
    const CUresult r = cuMemAlloc(&p, 256);
    if (r == CUDA_SUCCESS) {
      EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
    }
    return r;
  }
  CUresult alloc_host() {
    void* p = nullptr;
    const CUresult r = cuMemAllocHost(&p, 256);
    if (r == CUDA_SUCCESS) {
      EXPECT_EQ(cuMemFreeHost(p), CUDA_SUCCESS);
    }
    return r;
  }
  static cudaError_t rt_alloc() {
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, 256);
    if (e == cudaSuccess) {
      EXPECT_EQ(cudaFree(p), cudaSuccess);
    }
    return e;
  }
  static cudaError_t rt_alloc_host() {
    void* p = nullptr;
    const cudaError_t e = cudaMallocHost(&p, 256);
    if (e == cudaSuccess) {
      EXPECT_EQ(cudaFreeHost(p), cudaSuccess);
    }
    return e;
  }
  static nvrtcResult compile(
      const char* source = "extern \"C\" __global__ void k(int* p) { if (p) *p = 1; }\n") {
    nvrtcProgram prog = nullptr;
    EXPECT_EQ(nvrtcCreateProgram(&prog, source, "k.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
    const nvrtcResult r = nvrtcCompileProgram(prog, 0, nullptr);
    EXPECT_EQ(nvrtcDestroyProgram(&prog), NVRTC_SUCCESS);
    return r;
  }
  // A kernel compiled by NVRTC and loaded in the current context.
  CUfunction kernel() {
    nvrtcProgram prog = nullptr;
    EXPECT_EQ(
        nvrtcCreateProgram(&prog, "extern \"C\" __global__ void k(int* p) { if (p) *p = 1; }\n",
                           "k.cu", 0, nullptr, nullptr),
        NVRTC_SUCCESS);
    EXPECT_EQ(nvrtcCompileProgram(prog, 0, nullptr), NVRTC_SUCCESS);
    size_t size = 0;
    EXPECT_EQ(nvrtcGetPTXSize(prog, &size), NVRTC_SUCCESS);
    std::vector<char> ptx(size);
    EXPECT_EQ(nvrtcGetPTX(prog, ptx.data()), NVRTC_SUCCESS);
    EXPECT_EQ(nvrtcDestroyProgram(&prog), NVRTC_SUCCESS);
    EXPECT_EQ(cuModuleLoadData(&module_, ptx.data()), CUDA_SUCCESS);
    CUfunction f = nullptr;
    EXPECT_EQ(cuModuleGetFunction(&f, module_, "k"), CUDA_SUCCESS);
    return f;
  }
  static CUresult launch(CUfunction f) {
    int* p = nullptr;
    void* args[] = {&p};
    return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr);
  }
  CUcontext ctx_{};
  CUmodule module_{};
};

// --- config unmapped.toml: allocations fail with MOCK_ERROR_UNMAPPED (device) and
// MOCK_ERROR_UNMAPPED_2 (pinned host), compiles with MOCK_ERROR_UNMAPPED 4 times, then _2 ---

TEST_F(Faults, CUresultStrictGivesTheGenericValue) {
  EXPECT_EQ(alloc(), CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(alloc_host(), CUDA_ERROR_UNKNOWN);
  const char* name = nullptr;
  ASSERT_EQ(cuGetErrorName(alloc(), &name), CUDA_SUCCESS);
  EXPECT_STREQ(name, "CUDA_ERROR_UNKNOWN");
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);  // not sticky: the context stays usable
}

TEST_F(Faults, CUresultHallucinated) {
  ASSERT_EQ(cudamuxSetHallucinate("CUresult", 1), CUDA_SUCCESS);
  const CUresult a = alloc();
  const CUresult b = alloc_host();
  const auto defined = defined_values("CUresult");
  EXPECT_EQ(defined.count(a), 0u) << a;
  EXPECT_EQ(defined.count(b), 0u) << b;
  EXPECT_NE(a, b);  // two backend values, two invented values
  EXPECT_EQ(alloc(), a);
  for (long long r : on_threads(8, [&] {
         cuCtxSetCurrent(ctx_);
         return static_cast<long long>(alloc());
       }))
    EXPECT_EQ(r, a);
  const char* name = nullptr;
  const char* text = nullptr;
  ASSERT_EQ(cuGetErrorName(a, &name), CUDA_SUCCESS);
  EXPECT_STREQ(name, "CUDA_ERROR_CUDAMUX_mock_MOCK_ERROR_UNMAPPED");
  ASSERT_EQ(cuGetErrorName(b, &name), CUDA_SUCCESS);
  EXPECT_STREQ(name, "CUDA_ERROR_CUDAMUX_mock_MOCK_ERROR_UNMAPPED_2");
  ASSERT_EQ(cuGetErrorString(a, &text), CUDA_SUCCESS);
  EXPECT_NE(std::string(text).find("backend 'mock' reported MOCK_ERROR_UNMAPPED"),
            std::string::npos)
      << text;
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
}

TEST_F(Faults, CudaErrorStrictGivesCudaErrorUnknown) {
  EXPECT_EQ(rt_alloc(), cudaErrorUnknown);
  EXPECT_EQ(cudaGetLastError(), cudaErrorUnknown);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // not sticky
  EXPECT_EQ(rt_alloc_host(), cudaErrorUnknown);
  EXPECT_STREQ(cudaGetErrorName(cudaErrorUnknown), "cudaErrorUnknown");
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// cudaError_t hallucinated while CUresult stays strict: the runtime recovers the backend
// value behind the driver's CUDA_ERROR_UNKNOWN.
TEST_F(Faults, CudaErrorHallucinatedWithCUresultStrict) {
  ASSERT_EQ(cudamuxSetHallucinate("cudaError_t", 1), CUDA_SUCCESS);
  const cudaError_t a = rt_alloc();
  const cudaError_t b = rt_alloc_host();
  const auto defined = defined_values("cudaError_t");
  EXPECT_EQ(defined.count(a), 0u) << a;
  EXPECT_EQ(defined.count(b), 0u) << b;
  EXPECT_NE(a, b);
  EXPECT_EQ(cudaGetLastError(), b);
  EXPECT_EQ(rt_alloc(), a);
  for (long long r : on_threads(8, [] { return static_cast<long long>(rt_alloc()); }))
    EXPECT_EQ(r, a);
  EXPECT_STREQ(cudaGetErrorName(a), "cudaErrorCudamux_mock_MOCK_ERROR_UNMAPPED");
  EXPECT_STREQ(cudaGetErrorName(b), "cudaErrorCudamux_mock_MOCK_ERROR_UNMAPPED_2");
  EXPECT_NE(std::string(cudaGetErrorString(a)).find("backend 'mock' reported MOCK_ERROR_UNMAPPED"),
            std::string::npos)
      << cudaGetErrorString(a);
  // The driver API still sees the generic value (its own setting).
  EXPECT_EQ(alloc(), CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// Both hallucinated: the runtime asks the policy with the backend value behind the invented
// CUresult, so the cudaError_t is the same as with CUresult strict.
TEST_F(Faults, CudaErrorHallucinatedFromAnInventedCUresult) {
  ASSERT_EQ(cudamuxSetHallucinate("cudaError_t", 1), CUDA_SUCCESS);
  const cudaError_t via_strict = rt_alloc();
  ASSERT_EQ(cudamuxSetHallucinate("CUresult", 1), CUDA_SUCCESS);
  const cudaError_t via_invented = rt_alloc();
  EXPECT_EQ(via_invented, via_strict);
  EXPECT_EQ(defined_values("cudaError_t").count(via_invented), 0u);
  // And cudaError_t strict again, with CUresult hallucinated: the generic value.
  ASSERT_EQ(cudamuxSetHallucinate("cudaError_t", 0), CUDA_SUCCESS);
  EXPECT_EQ(rt_alloc(), cudaErrorUnknown);
}

TEST_F(Faults, NvrtcResultStrictGivesInternalError) {
  EXPECT_EQ(compile(), NVRTC_ERROR_INTERNAL_ERROR);
  EXPECT_STREQ(nvrtcGetErrorString(NVRTC_ERROR_INTERNAL_ERROR), "NVRTC_ERROR_INTERNAL_ERROR");
}

TEST_F(Faults, NvrtcResultHallucinated) {
  ASSERT_EQ(cudamuxSetHallucinate("nvrtcResult", 1), CUDA_SUCCESS);
  const nvrtcResult a = compile();  // compiles 1-4: MOCK_ERROR_UNMAPPED
  const auto defined = defined_values("nvrtcResult");
  EXPECT_EQ(defined.count(a), 0u) << a;
  for (long long r : on_threads(3, [] { return static_cast<long long>(compile()); }))
    EXPECT_EQ(r, a);
  const nvrtcResult b = compile();  // then MOCK_ERROR_UNMAPPED_2
  EXPECT_EQ(defined.count(b), 0u) << b;
  EXPECT_NE(a, b);
  EXPECT_EQ(compile(), b);
  EXPECT_STREQ(nvrtcGetErrorString(a), "NVRTC_ERROR_CUDAMUX_mock_MOCK_ERROR_UNMAPPED");
  EXPECT_STREQ(nvrtcGetErrorString(b), "NVRTC_ERROR_CUDAMUX_mock_MOCK_ERROR_UNMAPPED_2");
}

// Rule 4: a CUDA constant the mock cannot honour is refused, never hallucinated.
TEST_F(Faults, ArgumentsAreNeverHallucinated) {
  ASSERT_EQ(cudamuxSetHallucinate("default", 1), CUDA_SUCCESS);
  int hallucinating = 0;
  ASSERT_EQ(cudamuxGetHallucinate("CUresult", &hallucinating), CUDA_SUCCESS);
  ASSERT_EQ(hallucinating, 1);
  CUdevice dev{};
  ASSERT_EQ(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  int refused = 0;
  for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; ++a) {
    int value = 0;
    const CUresult r = cuDeviceGetAttribute(&value, static_cast<CUdevice_attribute>(a), dev);
    if (r == CUDA_SUCCESS) continue;
    ++refused;
    EXPECT_TRUE(r == CUDA_ERROR_NOT_SUPPORTED || r == CUDA_ERROR_INVALID_VALUE)
        << "attribute " << a << ": " << r;
    int rt_value = 0;
    const cudaError_t e = cudaDeviceGetAttribute(&rt_value, static_cast<cudaDeviceAttr>(a), 0);
    EXPECT_TRUE(e == cudaErrorNotSupported || e == cudaErrorInvalidValue)
        << "attribute " << a << ": " << e;
    cudaGetLastError();
  }
  EXPECT_GT(refused, 0) << "the mock answers every attribute: nothing left to refuse";
}

// --- config faults.toml: CUDA errors with after/count ---

TEST_F(Faults, DriverAllocationAfterAndCountNotSticky) {
  EXPECT_EQ(alloc(), CUDA_SUCCESS);  // after = 1
  EXPECT_EQ(alloc(), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(alloc(), CUDA_ERROR_OUT_OF_MEMORY);  // count = 2
  EXPECT_EQ(alloc(), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
}

TEST_F(Faults, DriverSynchronizeIllegalAddressIsSticky) {
  CUstream s = nullptr;
  ASSERT_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);  // after = 1
  EXPECT_EQ(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
  // count = 1, but the context is unusable now (CUDA's sticky rule).
  EXPECT_EQ(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc(&p, 64), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
}

TEST_F(Faults, DriverLaunchNonStickyThenSticky) {
  CUfunction f = kernel();
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(launch(f), CUDA_SUCCESS);
  EXPECT_EQ(launch(f), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);  // not sticky
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(launch(f), CUDA_SUCCESS);
  EXPECT_EQ(launch(f), CUDA_ERROR_ILLEGAL_ADDRESS);  // sticky
  EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(launch(f), CUDA_ERROR_ILLEGAL_ADDRESS);
}

TEST_F(Faults, RuntimeAllocationAfterAndCount) {
  EXPECT_EQ(rt_alloc(), cudaSuccess);
  EXPECT_EQ(rt_alloc(), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(rt_alloc(), cudaErrorMemoryAllocation);
  EXPECT_EQ(rt_alloc(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST_F(Faults, RuntimeSynchronizeIllegalAddressIsStickyUntilReset) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorIllegalAddress);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 64), cudaErrorIllegalAddress);
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress);  // the device's state, not the thread's
  EXPECT_EQ(cudaDeviceReset(), cudaSuccess);
  EXPECT_EQ(rt_alloc(), cudaSuccess);  // the 1st allocation of this config's cuMemAlloc fault
}

TEST_F(Faults, NvrtcCompileAfterAndCount) {
  EXPECT_EQ(compile(), NVRTC_SUCCESS);              // after = 1
  EXPECT_EQ(compile(), NVRTC_ERROR_OUT_OF_MEMORY);  // CUDA_ERROR_OUT_OF_MEMORY, count = 1
  EXPECT_EQ(compile("extern \"C\" __global__ void k2() {}\n"), NVRTC_SUCCESS);
}

}  // namespace
