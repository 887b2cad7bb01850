// Modules, libraries, functions, kernels, launches and occupancy. Bad input everywhere; the
// load-and-launch tests need a backend that loads PTX (not the mock yet).
#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "conformance.hpp"
#include "nvrtc_compile.hpp"

namespace conformance {
namespace {

using Module = Driver;

// extern "C" __global__ void fill(unsigned* p, unsigned v, unsigned n) { p[i] = v for i < n }
// plus a global `counter`. Checked with ptxas for sm_90.
constexpr char kFillPtx[] = R"(
.version 7.0
.target sm_75
.address_size 64
.visible .global .align 4 .u32 counter;
.visible .entry fill(.param .u64 fill_p, .param .u32 fill_v, .param .u32 fill_n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<7>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [fill_p];
  ld.param.u32 %r1, [fill_v];
  ld.param.u32 %r2, [fill_n];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r6, %r3, %r4, %r5;
  setp.ge.u32 %p1, %r6, %r2;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r6, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r1;
DONE:
  ret;
}
)";

template <class T>
T bogus() {
  return reinterpret_cast<T>(std::uintptr_t{0xdead00});
}

TEST_F(Module, LoadingMode) {
  CUmoduleLoadingMode mode{};
  ASSERT_OK(cuModuleGetLoadingMode(&mode));
  EXPECT_TRUE(mode == CU_MODULE_EAGER_LOADING || mode == CU_MODULE_LAZY_LOADING) << mode;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleGetLoadingMode(nullptr));
}

TEST_F(Module, LoadBadArguments) {
  CUmodule m = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleLoadData(nullptr, kFillPtx));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleLoadData(&m, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleLoadDataEx(&m, nullptr, 0, nullptr, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleLoadDataEx(nullptr, kFillPtx, 0, nullptr, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleLoadFatBinary(&m, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleLoad(nullptr, "x.ptx"));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleLoad(&m, nullptr));
  EXPECT_CU(CUDA_ERROR_FILE_NOT_FOUND, cuModuleLoad(&m, "/nonexistent/cudamux/module.ptx"));
  CUlibrary l = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuLibraryLoadData(nullptr, kFillPtx, nullptr, nullptr, 0, nullptr, nullptr, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuLibraryLoadData(&l, nullptr, nullptr, nullptr, 0, nullptr, nullptr, 0));
  // Options without a value array are accepted (cuBLAS 13 passes CU_LIBRARY_BINARY_IS_PRESERVED
  // that way); what is left to refuse here is the image.
  CUlibraryOption preserved = CU_LIBRARY_BINARY_IS_PRESERVED;
  static const char kNotAnImage[] = "neither PTX nor an ELF nor a fat binary";
  EXPECT_CU(CUDA_ERROR_INVALID_IMAGE,
            cuLibraryLoadData(&l, kNotAnImage, nullptr, nullptr, 0, &preserved, nullptr, 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuLibraryLoadData(&l, kNotAnImage, nullptr, nullptr, 0, nullptr, nullptr, 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuLibraryLoadFromFile(&l, nullptr, nullptr, nullptr, 0, nullptr, nullptr, 0));
  EXPECT_CU(CUDA_ERROR_FILE_NOT_FOUND,
            cuLibraryLoadFromFile(&l, "/nonexistent/cudamux/lib.ptx", nullptr, nullptr, 0, nullptr,
                                  nullptr, 0));
  std::thread([&] {
    CUmodule mm = nullptr;
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuModuleLoadData(&mm, kFillPtx));
  }).join();
}

TEST_F(Module, InvalidHandles) {
  CUmodule m = nullptr;
  CUfunction f = nullptr;
  CUlibrary l = nullptr;
  CUkernel k = nullptr;
  CUdeviceptr d = 0;
  size_t bytes = 0, off = 0;
  unsigned count = 0;
  int value = 0;
  const char* name = nullptr;
  CUfunctionLoadingState state{};
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuModuleUnload(bogus<CUmodule>()));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuModuleGetFunction(&f, bogus<CUmodule>(), "fill"));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleGetFunction(nullptr, bogus<CUmodule>(), "fill"));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuModuleGetFunctionCount(&count, bogus<CUmodule>()));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleGetFunctionCount(nullptr, bogus<CUmodule>()));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuModuleEnumerateFunctions(&f, 1, bogus<CUmodule>()));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleEnumerateFunctions(nullptr, 1, bogus<CUmodule>()));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuModuleGetGlobal_v2(&d, &bytes, bogus<CUmodule>(), "counter"));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleGetGlobal_v2(&d, &bytes, bogus<CUmodule>(), nullptr));

  EXPECT_CU(
      CUDA_ERROR_INVALID_HANDLE,
      cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, bogus<CUfunction>()));
  EXPECT_CU(
      CUDA_ERROR_INVALID_VALUE,
      cuFuncGetAttribute(nullptr, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, bogus<CUfunction>()));
  EXPECT_CU(
      CUDA_ERROR_INVALID_HANDLE,
      cuFuncSetAttribute(bogus<CUfunction>(), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuFuncSetCacheConfig(bogus<CUfunction>(), CU_FUNC_CACHE_PREFER_L1));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuFuncSetSharedMemConfig(bogus<CUfunction>(), CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuFuncGetModule(&m, bogus<CUfunction>()));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuFuncGetModule(nullptr, bogus<CUfunction>()));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuFuncGetName(&name, bogus<CUfunction>()));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuFuncGetName(nullptr, bogus<CUfunction>()));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuFuncGetParamInfo(bogus<CUfunction>(), 0, &off, &bytes));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuFuncIsLoaded(&state, bogus<CUfunction>()));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuFuncIsLoaded(nullptr, bogus<CUfunction>()));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuFuncLoad(bogus<CUfunction>()));

  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuLibraryUnload(bogus<CUlibrary>()));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuLibraryGetKernel(&k, bogus<CUlibrary>(), "fill"));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLibraryGetKernel(nullptr, bogus<CUlibrary>(), "fill"));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuLibraryGetKernelCount(&count, bogus<CUlibrary>()));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLibraryGetKernelCount(nullptr, bogus<CUlibrary>()));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuLibraryEnumerateKernels(&k, 1, bogus<CUlibrary>()));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLibraryEnumerateKernels(nullptr, 1, bogus<CUlibrary>()));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuLibraryGetModule(&m, bogus<CUlibrary>()));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLibraryGetModule(nullptr, bogus<CUlibrary>()));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuLibraryGetGlobal(&d, &bytes, bogus<CUlibrary>(), "counter"));

  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuKernelGetFunction(&f, bogus<CUkernel>()));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuKernelGetFunction(nullptr, bogus<CUkernel>()));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuKernelGetLibrary(&l, bogus<CUkernel>()));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuKernelGetLibrary(nullptr, bogus<CUkernel>()));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuKernelGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, bogus<CUkernel>(), dev));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuKernelGetAttribute(nullptr, CU_FUNC_ATTRIBUTE_NUM_REGS, bogus<CUkernel>(), dev));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 0,
                                 bogus<CUkernel>(), dev));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuKernelSetCacheConfig(bogus<CUkernel>(), CU_FUNC_CACHE_PREFER_L1, dev));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuKernelGetName(&name, bogus<CUkernel>()));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuKernelGetName(nullptr, bogus<CUkernel>()));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuKernelGetParamInfo(bogus<CUkernel>(), 0, &off, &bytes));

  // Launches and occupancy of a function that does not exist.
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuLaunchKernel(bogus<CUfunction>(), 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuLaunchKernel_ptsz(bogus<CUfunction>(), 1, 1, 1, 1, 1, 1, 0,
                                                           nullptr, nullptr, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuLaunchCooperativeKernel(bogus<CUfunction>(), 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr));
  EXPECT_CU(
      CUDA_ERROR_INVALID_HANDLE,
      cuLaunchCooperativeKernel_ptsz(bogus<CUfunction>(), 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr));
  CUlaunchConfig config{};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = config.blockDimY = config.blockDimZ = 1;
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuLaunchKernelEx(&config, bogus<CUfunction>(), nullptr, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuLaunchKernelEx_ptsz(&config, bogus<CUfunction>(), nullptr, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuLaunchKernelEx(nullptr, bogus<CUfunction>(), nullptr, nullptr));
  int blocks = 0, min_grid = 0, block = 0;
  size_t smem = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, bogus<CUfunction>(), 32, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
                                           &blocks, bogus<CUfunction>(), 32, 0, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuOccupancyMaxPotentialBlockSize(
                                           &min_grid, &block, bogus<CUfunction>(), nullptr, 0, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuOccupancyMaxPotentialBlockSizeWithFlags(&min_grid, &block, bogus<CUfunction>(),
                                                      nullptr, 0, 0, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuOccupancyAvailableDynamicSMemPerBlock(&smem, bogus<CUfunction>(), 1, 32));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuOccupancyMaxActiveBlocksPerMultiprocessor(nullptr, bogus<CUfunction>(), 32, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuOccupancyMaxPotentialBlockSize(nullptr, &block, bogus<CUfunction>(), nullptr, 0, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuOccupancyAvailableDynamicSMemPerBlock(nullptr, bogus<CUfunction>(), 1, 32));
}

// --- with a loaded module ---

TEST_F(Module, LoadQueryLaunchUnload) {
  CUDAMUX_KNOWN_DIFFERENCE(
      "hip", "PTX images: hip loads AMDGPU code objects (tests/hip_backend covers modules)");
  CUmodule m = nullptr;
  ASSERT_OK(cuModuleLoadData(&m, kFillPtx));
  CUfunction f = nullptr;
  ASSERT_OK(cuModuleGetFunction(&f, m, "fill"));
  CUfunction none = nullptr;
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuModuleGetFunction(&none, m, "no_such_kernel"));
  unsigned count = 0;
  ASSERT_OK(cuModuleGetFunctionCount(&count, m));
  EXPECT_EQ(count, 1u);
  CUfunction listed = nullptr;
  ASSERT_OK(cuModuleEnumerateFunctions(&listed, 1, m));
  CUfunction two[2] = {};
  EXPECT_OK(cuModuleEnumerateFunctions(two, 2, m)) << "room for more is no error (NVIDIA's 580)";
  EXPECT_EQ(two[0], listed);
  const char* name = nullptr;
  ASSERT_OK(cuFuncGetName(&name, listed));
  EXPECT_STREQ(name, "fill");
  CUmodule owner = nullptr;
  ASSERT_OK(cuFuncGetModule(&owner, f));
  EXPECT_EQ(owner, m);
  ASSERT_OK(cuFuncLoad(f));
  CUfunctionLoadingState state{};
  ASSERT_OK(cuFuncIsLoaded(&state, f));
  EXPECT_EQ(state, CU_FUNCTION_LOADING_STATE_LOADED);
  size_t off = 99, size = 99;
  ASSERT_OK(cuFuncGetParamInfo(f, 0, &off, &size));
  EXPECT_EQ(off, 0u);
  EXPECT_EQ(size, 8u);
  ASSERT_OK(cuFuncGetParamInfo(f, 2, &off, &size));
  EXPECT_EQ(off, 12u);
  EXPECT_EQ(size, 4u);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuFuncGetParamInfo(f, 3, &off, &size));
  CUdeviceptr global = 0;
  size_t global_size = 0;
  ASSERT_OK(cuModuleGetGlobal_v2(&global, &global_size, m, "counter"));
  EXPECT_EQ(global_size, 4u);
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuModuleGetGlobal_v2(&global, &global_size, m, "nothing"));
  int threads = 0;
  ASSERT_OK(cuFuncGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
  EXPECT_GT(threads, 0);
  ASSERT_OK(cuFuncSetCacheConfig(f, CU_FUNC_CACHE_PREFER_L1));
  ASSERT_OK(cuFuncSetSharedMemConfig(f, CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE));
  ASSERT_OK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1024));

  // Launch it four ways; each fills its own quarter of the buffer.
  const unsigned n = 1000;
  DeviceBuffer buf(4 * n * sizeof(unsigned));
  ASSERT_OK(cuMemsetD32_v2(buf.ptr, 0, 4 * n));
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, 0));
  CUdeviceptr q0 = buf.ptr, q1 = buf.ptr + n * 4, q2 = buf.ptr + 2 * n * 4,
              q3 = buf.ptr + 3 * n * 4;
  unsigned v0 = 11, v1 = 22, v2 = 33, v3 = 44, count_n = n;
  void* args0[] = {&q0, &v0, &count_n};
  ASSERT_OK(cuLaunchKernel(f, (n + 127) / 128, 1, 1, 128, 1, 1, 0, s, args0, nullptr));
  void* args1[] = {&q1, &v1, &count_n};
  ASSERT_OK(cuLaunchKernel_ptsz(f, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, args1, nullptr));
  struct {
    CUdeviceptr p;
    unsigned v, n;
  } packed{q2, v2, n};
  size_t packed_size = sizeof packed;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &packed_size, CU_LAUNCH_PARAM_END};
  ASSERT_OK(cuLaunchKernel(f, (n + 63) / 64, 1, 1, 64, 1, 1, 0, s, nullptr, extra));
  CUlaunchConfig config{};
  config.gridDimX = (n + 31) / 32;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 32;
  config.blockDimY = config.blockDimZ = 1;
  config.hStream = s;
  void* args3[] = {&q3, &v3, &count_n};
  ASSERT_OK(cuLaunchKernelEx(&config, f, args3, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  std::vector<unsigned> out(4 * n);
  ASSERT_OK(cuMemcpyDtoH_v2(out.data(), buf.ptr, out.size() * 4));
  for (unsigned i = 0; i < 4 * n; ++i) ASSERT_EQ(out[i], (i / n + 1) * 11u) << i;
  // Cooperative and _ptsz forms.
  int coop = 0;
  ASSERT_OK(cuDeviceGetAttribute(&coop, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, dev));
  if (coop) {
    unsigned v = 55, one = 1;
    void* a[] = {&q0, &v, &one};
    ASSERT_OK(cuLaunchCooperativeKernel(f, 1, 1, 1, 32, 1, 1, 0, s, a));
    ASSERT_OK(cuLaunchCooperativeKernel_ptsz(f, 1, 1, 1, 32, 1, 1, 0, s, a));
  }
  config.hStream = nullptr;
  ASSERT_OK(cuLaunchKernelEx_ptsz(&config, f, args3, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  // Bad launch configurations.
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 0, 1, 1, 32, 1, 1, 0, s, args0, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 4096, 1, 1, 0, s, args0, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args0, extra));
  // Occupancy.
  int blocks = 0, min_grid = 0, block = 0;
  ASSERT_OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 128, 0));
  EXPECT_GE(blocks, 1);
  ASSERT_OK(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, f, 128, 0,
                                                                 CU_OCCUPANCY_DEFAULT));
  EXPECT_GE(blocks, 1);
  ASSERT_OK(cuOccupancyMaxPotentialBlockSize(&min_grid, &block, f, nullptr, 0, 0));
  EXPECT_GE(min_grid, 1);
  EXPECT_GT(block, 0);
  EXPECT_LE(block, threads);
  ASSERT_OK(cuOccupancyMaxPotentialBlockSizeWithFlags(&min_grid, &block, f, nullptr, 0, 256,
                                                      CU_OCCUPANCY_DEFAULT));
  EXPECT_LE(block, 256);
  size_t smem = 0;
  ASSERT_OK(cuOccupancyAvailableDynamicSMemPerBlock(&smem, f, 1, 128));
  EXPECT_GT(smem, 0u);
  EXPECT_OK(cuStreamDestroy_v2(s));
  ASSERT_OK(cuModuleUnload(m));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuModuleUnload(m));
}

TEST_F(Module, LibraryAndKernels) {
  CUDAMUX_KNOWN_DIFFERENCE(
      "hip", "PTX images: hip loads AMDGPU code objects (tests/hip_backend covers modules)");
  CUlibrary l = nullptr;
  CUlibraryOption preserved = CU_LIBRARY_BINARY_IS_PRESERVED;
  ASSERT_OK(cuLibraryLoadData(&l, kFillPtx, nullptr, nullptr, 0, &preserved, nullptr, 1))
      << "an option without a value array (cuBLAS 13 loads its kernels so)";
  ASSERT_OK(cuLibraryUnload(l));
  ASSERT_OK(cuLibraryLoadData(&l, kFillPtx, nullptr, nullptr, 0, nullptr, nullptr, 0));
  unsigned count = 0;
  ASSERT_OK(cuLibraryGetKernelCount(&count, l));
  EXPECT_EQ(count, 1u);
  CUkernel k = nullptr, listed = nullptr;
  ASSERT_OK(cuLibraryGetKernel(&k, l, "fill"));
  ASSERT_OK(cuLibraryEnumerateKernels(&listed, 1, l));
  const char* name = nullptr;
  ASSERT_OK(cuKernelGetName(&name, listed));
  EXPECT_STREQ(name, "fill");
  CUlibrary owner = nullptr;
  ASSERT_OK(cuKernelGetLibrary(&owner, k));
  EXPECT_EQ(owner, l);
  size_t off = 0, size = 0;
  ASSERT_OK(cuKernelGetParamInfo(k, 1, &off, &size));
  EXPECT_EQ(off, 8u);
  EXPECT_EQ(size, 4u);
  int regs = -1;
  ASSERT_OK(cuKernelGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k, dev));
  EXPECT_GE(regs, 0);
  ASSERT_OK(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 512, k, dev));
  ASSERT_OK(cuKernelSetCacheConfig(k, CU_FUNC_CACHE_PREFER_SHARED, dev));
  CUmodule m = nullptr;
  ASSERT_OK(cuLibraryGetModule(&m, l));
  EXPECT_CU(CUDA_ERROR_NOT_PERMITTED, cuModuleUnload(m))
      << "a library's module belongs to it (NVIDIA's 580 answer)";
  CUdeviceptr global = 0;
  size_t bytes = 0;
  ASSERT_OK(cuLibraryGetGlobal(&global, &bytes, l, "counter"));
  EXPECT_EQ(bytes, 4u);
  CUfunction f = nullptr;
  ASSERT_OK(cuKernelGetFunction(&f, k));
  DeviceBuffer buf(64 * 4);
  unsigned v = 7, n = 64;
  void* args[] = {&buf.ptr, &v, &n};
  ASSERT_OK(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr));
  std::vector<unsigned> out(64);
  ASSERT_OK(cuMemcpyDtoH_v2(out.data(), buf.ptr, 64 * 4));
  for (unsigned x : out) ASSERT_EQ(x, 7u);
  ASSERT_OK(cuLibraryUnload(l));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuLibraryUnload(l));
}

// A kernel that stores its argument in its module's global: which context's module ran it
// shows in that context's copy of `mark_value`.
constexpr char kMarkPtx[] = R"(
.version 7.0
.target sm_75
.address_size 64
.visible .global .align 4 .u32 mark_value;
.visible .entry mark(.param .u32 mark_v)
{
  .reg .b32 %r<2>;
  ld.param.u32 %r1, [mark_v];
  st.global.u32 [mark_value], %r1;
  ret;
}
)";

// A CUkernel cast to CUfunction launches in the current context, loading the library there
// first (how CUDA 13's runtime launches registered kernels). The core remembers a kernel's last
// function for the next launch (issue 14): switching contexts, destroying one and making a new
// one in its place, and reloading the library must each still run the current context's module.
TEST_F(Module, KernelHandleLaunchesInTheContextOfEachLaunch) {
  CUDAMUX_KNOWN_DIFFERENCE(
      "hip", "PTX images: hip loads AMDGPU code objects (tests/hip_backend covers modules)");
  CUlibrary l = nullptr;
  ASSERT_OK(cuLibraryLoadData(&l, kMarkPtx, nullptr, nullptr, 0, nullptr, nullptr, 0));
  CUkernel k = nullptr;
  ASSERT_OK(cuLibraryGetKernel(&k, l, "mark"));
  // Launches the kernel handle in the current context and reads that context's mark_value.
  auto mark_here = [&](unsigned value, unsigned& seen) {
    void* args[] = {&value};
    ASSERT_OK(cuLaunchKernel(reinterpret_cast<CUfunction>(k), 1, 1, 1, 1, 1, 1, 0, nullptr, args,
                             nullptr));
    CUdeviceptr global = 0;
    size_t bytes = 0;
    ASSERT_OK(cuLibraryGetGlobal(&global, &bytes, l, "mark_value"));
    ASSERT_EQ(bytes, sizeof(unsigned));
    ASSERT_OK(cuMemcpyDtoH_v2(&seen, global, sizeof seen));
  };
  unsigned seen = 0;
  ASSERT_NO_FATAL_FAILURE(mark_here(1, seen));
  EXPECT_EQ(seen, 1u);
  CUcontext second = nullptr;
  ASSERT_OK(cuCtxCreate_v2(&second, 0, dev));
  ASSERT_NO_FATAL_FAILURE(mark_here(2, seen));
  EXPECT_EQ(seen, 2u) << "in a second context";
  ASSERT_OK(cuCtxSetCurrent(ctx));
  ASSERT_NO_FATAL_FAILURE(mark_here(3, seen));
  EXPECT_EQ(seen, 3u) << "back in the first context";
  ASSERT_OK(cuCtxSetCurrent(second));
  ASSERT_NO_FATAL_FAILURE(mark_here(4, seen));
  EXPECT_EQ(seen, 4u) << "in the second context again";
  ASSERT_OK(cuCtxDestroy_v2(second));
  CUcontext third = nullptr;  // may take the place the second one left
  ASSERT_OK(cuCtxCreate_v2(&third, 0, dev));
  ASSERT_NO_FATAL_FAILURE(mark_here(5, seen));
  EXPECT_EQ(seen, 5u) << "in a context made after one the kernel ran in was destroyed";
  ASSERT_OK(cuCtxDestroy_v2(third));
  ASSERT_OK(cuCtxSetCurrent(ctx));
  ASSERT_OK(cuLibraryUnload(l));
  ASSERT_OK(cuLibraryLoadData(&l, kMarkPtx, nullptr, nullptr, 0, nullptr, nullptr, 0));
  ASSERT_OK(cuLibraryGetKernel(&k, l, "mark"));
  ASSERT_NO_FATAL_FAILURE(mark_here(6, seen));
  EXPECT_EQ(seen, 6u) << "after the library was loaded again";
  ASSERT_OK(cuLibraryUnload(l));
}

// --- thread block clusters (cuLaunchKernelEx, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) ---

constexpr char kEmptySource[] = R"(extern "C" __global__ void empty() {}
)";

// Each block writes its rank within its cluster. Through cooperative groups first; the same
// value from the PTX special register where NVRTC finds no cooperative_groups.h.
constexpr char kClusterRankSource[] = R"(#include <cooperative_groups.h>
extern "C" __global__ void cluster_rank(unsigned* out) {
  if (threadIdx.x == 0) out[blockIdx.x] = cooperative_groups::this_cluster().block_rank();
}
)";
constexpr char kClusterRankAsmSource[] = R"(extern "C" __global__ void cluster_rank(unsigned* out) {
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  if (threadIdx.x == 0) out[blockIdx.x] = rank;
}
)";

// NVRTC through the libnvrtc the test runs with; false with the log on failure.
bool compile(const char* source, const std::vector<std::string>& options, std::string& image,
             std::string& log) {
  return compile_ptx(source, "cluster.cu", image, log, options);
}

CUlaunchConfig cluster_config(unsigned grid_x, CUlaunchAttribute& cluster, unsigned cluster_x) {
  cluster = {};
  cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cluster.value.clusterDim.x = cluster_x;
  cluster.value.clusterDim.y = cluster.value.clusterDim.z = 1;
  CUlaunchConfig c{};
  c.gridDimX = grid_x;
  c.gridDimY = c.gridDimZ = 1;
  c.blockDimX = 32;
  c.blockDimY = c.blockDimZ = 1;
  c.attrs = &cluster;
  c.numAttrs = 1;
  return c;
}

// On the GPU machine's cuda backend (sm_90): clusters of two blocks reach NVIDIA's driver and
// each block sees its rank, 0 or 1. Backends without clusters answer CUDA_ERROR_NOT_SUPPORTED
// (skipped); every backend refuses a cluster that does not divide the grid.
TEST_F(Module, ThreadBlockClusters) {
  int major = 0, cluster_launch = 1;
  ASSERT_OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  // hip cannot answer it (CUDA_ERROR_NOT_SUPPORTED): then the launch's answer decides.
  (void)cuDeviceGetAttribute(&cluster_launch, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, dev);
  if (major < 9 || !cluster_launch)
    GTEST_SKIP() << "thread block clusters need compute capability 9.0 (device: " << major
                 << ".x, CLUSTER_LAUNCH " << cluster_launch << ")";
  const std::vector<std::string> sm90 = {"--gpu-architecture=sm_90"};
  std::string image, log;
  if (!compile(kEmptySource, sm90, image, log)) {
    ASSERT_NE(backend(), "cuda") << log;
    GTEST_SKIP() << "the " << backend() << " backend's NVRTC compiled no sm_90 kernel: " << log;
  }
  CUmodule m = nullptr;
  ASSERT_OK(cuModuleLoadData(&m, image.data()));
  CUfunction empty = nullptr;
  ASSERT_OK(cuModuleGetFunction(&empty, m, "empty"));
  CUlaunchAttribute cluster{};
  CUlaunchConfig c = cluster_config(3, cluster, 2);
  // NVIDIA's driver (580, H200) answers both with CUDA_ERROR_INVALID_CLUSTER_SIZE.
  EXPECT_CU(CUDA_ERROR_INVALID_CLUSTER_SIZE, cuLaunchKernelEx(&c, empty, nullptr, nullptr))
      << "a cluster of 2 does not divide a grid of 3";
  c = cluster_config(4, cluster, 0);
  EXPECT_CU(CUDA_ERROR_INVALID_CLUSTER_SIZE, cuLaunchKernelEx(&c, empty, nullptr, nullptr));
  c = cluster_config(4, cluster, 2);
  // Issue 14: the occupancy of clusters (cuBLAS asks for it), refused alike where clusters are.
  int clusters = -1, cluster_size = -1;
  const CUresult occupancy = cuOccupancyMaxActiveClusters(&clusters, empty, &c);
  const CUresult potential = cuOccupancyMaxPotentialClusterSize(&cluster_size, empty, &c);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuOccupancyMaxActiveClusters(nullptr, empty, &c));
  const CUresult r = cuLaunchKernelEx(&c, empty, nullptr, nullptr);
  if (r == CUDA_ERROR_NOT_SUPPORTED) {
    EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, occupancy);
    EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, potential);
    EXPECT_OK(cuModuleUnload(m));
    GTEST_SKIP() << "the " << backend() << " backend has no thread block clusters";
  }
  ASSERT_OK(r);
  ASSERT_OK(occupancy);
  ASSERT_OK(potential);
  EXPECT_GE(clusters, 1) << "clusters of 2 empty blocks fit";
  EXPECT_GE(cluster_size, 8) << "portable clusters reach 8 blocks";
  ASSERT_OK(cuCtxSynchronize());
  EXPECT_OK(cuModuleUnload(m));

  // NVRTC may need the toolkit's include directory for cooperative_groups.h.
  std::vector<std::string> options = sm90;
  std::vector<std::string> roots = {"/usr/local/cuda"};
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = std::getenv(var)) roots.emplace_back(root);
  }
  for (const auto& root : roots) {
    if (std::filesystem::exists(root + "/include/cooperative_groups.h"))
      options.push_back("--include-path=" + root + "/include");
  }
  std::string cg_log;
  if (!compile(kClusterRankSource, options, image, cg_log)) {
    ASSERT_TRUE(compile(kClusterRankAsmSource, sm90, image, log)) << cg_log << "\n" << log;
    std::printf("cluster_rank: cooperative_groups.h not found, %%cluster_ctarank used\n");
  }
  ASSERT_OK(cuModuleLoadData(&m, image.data()));
  CUfunction rank = nullptr;
  ASSERT_OK(cuModuleGetFunction(&rank, m, "cluster_rank"));
  constexpr unsigned kBlocks = 8;
  DeviceBuffer out(kBlocks * sizeof(unsigned));
  ASSERT_OK(cuMemsetD32_v2(out.ptr, 0xffffffffu, kBlocks));
  void* args[] = {&out.ptr};
  c = cluster_config(kBlocks, cluster, 2);
  ASSERT_OK(cuLaunchKernelEx(&c, rank, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  std::vector<unsigned> ranks(kBlocks);
  ASSERT_OK(cuMemcpyDtoH_v2(ranks.data(), out.ptr, kBlocks * sizeof(unsigned)));
  for (unsigned b = 0; b < kBlocks; ++b) EXPECT_EQ(ranks[b], b % 2) << "block " << b;
  EXPECT_OK(cuModuleUnload(m));
}

}  // namespace
}  // namespace conformance
