// The core's module, launch, occupancy and sticky-error rules, driven through our
// libcuda.so.1 on the deterministic "ktest" backend (ktest_backend.cpp).
#include <cuda.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cu_expect.hpp"
#include "ktest_record.h"

namespace {

const char kImage[] =
    "cudamux-ktest-module\n"
    "kernel record3 4 8 1\n"  // int, pointer, char: offsets 0, 8, 16
    "kernel record_noargs\n"
    "kernel record_big regs=128\n"  // 128 regs x 1024 threads > 65536 per block
    "kernel record_small maxthreads=128\n"
    "kernel record_shared 4 shared=4096\n"
    "kernel axpy 4 8 8 4\n"
    "kernel fault_assert\n"
    "kernel fault_illegal\n"
    "global record 1024\n"
    "global table 64\n";

class Kernels : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_CU(CUDA_SUCCESS, cuInit(0));
    ASSERT_CU(CUDA_SUCCESS, cuCtxCreate(&ctx_, nullptr, 0, 0));
    ASSERT_CU(CUDA_SUCCESS, cuModuleLoadData(&mod_, kImage));
  }
  void TearDown() override {
    if (ctx_) cuCtxDestroy(ctx_);
  }
  CUfunction fn(const char* name) {
    CUfunction f = nullptr;
    EXPECT_CU(CUDA_SUCCESS, cuModuleGetFunction(&f, mod_, name));
    return f;
  }
  KtestRecord record() {
    KtestRecord r{};
    CUdeviceptr p = 0;
    size_t bytes = 0;
    EXPECT_CU(CUDA_SUCCESS, cuCtxSynchronize());
    EXPECT_CU(CUDA_SUCCESS, cuModuleGetGlobal(&p, &bytes, mod_, "record"));
    EXPECT_CU(CUDA_SUCCESS, cuMemcpyDtoH(&r, p, sizeof r));
    return r;
  }
  CUcontext ctx_ = nullptr;
  CUmodule mod_ = nullptr;
};

TEST_F(Kernels, ModuleHandlesAndLookups) {
  CUfunction f = fn("record3"), again = fn("record3");
  EXPECT_EQ(f, again);  // one handle per name
  CUfunction missing = nullptr;
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuModuleGetFunction(&missing, mod_, "nope"));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleGetFunction(nullptr, mod_, "record3"));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleGetFunction(&missing, mod_, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuModuleGetFunction(&missing, nullptr, "record3"));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuModuleGetFunction(&missing, reinterpret_cast<CUmodule>(ctx_), "record3"));
  const char* name = nullptr;
  EXPECT_CU(CUDA_SUCCESS, cuFuncGetName(&name, f));
  EXPECT_STREQ("record3", name);
  CUmodule owner = nullptr;
  EXPECT_CU(CUDA_SUCCESS, cuFuncGetModule(&owner, f));
  EXPECT_EQ(mod_, owner);
  unsigned count = 0;
  EXPECT_CU(CUDA_SUCCESS, cuModuleGetFunctionCount(&count, mod_));
  EXPECT_EQ(8u, count);
  std::vector<CUfunction> all(count);
  EXPECT_CU(CUDA_SUCCESS, cuModuleEnumerateFunctions(all.data(), count, mod_));
  EXPECT_EQ(f, all[0]);
  all.push_back(nullptr);  // room for more than there is: no error on NVIDIA's 580
  EXPECT_CU(CUDA_SUCCESS, cuModuleEnumerateFunctions(all.data(), count + 1, mod_));
  EXPECT_EQ(all[count], nullptr) << "cudamux leaves the spare entry as it was";
  size_t offset = 0, size = 0;
  EXPECT_CU(CUDA_SUCCESS, cuFuncGetParamInfo(f, 1, &offset, &size));
  EXPECT_EQ(8u, offset);
  EXPECT_EQ(8u, size);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuFuncGetParamInfo(f, 3, &offset, &size));
  CUmoduleLoadingMode mode{};
  EXPECT_CU(CUDA_SUCCESS, cuModuleGetLoadingMode(&mode));
  EXPECT_EQ(CU_MODULE_LAZY_LOADING, mode);  // CUDA's default since 12.2 (CUDA_MODULE_LOADING unset)
}

TEST_F(Kernels, BadImagesAndFiles) {
  CUmodule m = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_IMAGE, cuModuleLoadData(&m, "not a module"));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleLoadData(&m, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleLoadData(nullptr, kImage));
  EXPECT_CU(CUDA_ERROR_FILE_NOT_FOUND, cuModuleLoad(&m, "/nonexistent/cudamux.ptx"));
  char path[] = "/tmp/cudamux-ktest-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  FILE* fp = fdopen(fd, "w");
  std::fputs(kImage, fp);
  std::fclose(fp);
  EXPECT_CU(CUDA_SUCCESS, cuModuleLoad(&m, path));
  std::remove(path);
  EXPECT_CU(CUDA_SUCCESS, cuModuleUnload(m));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuModuleUnload(m));
}

TEST_F(Kernels, LoadDataExFillsLogsAndRejectsBadOptions) {
  char info[128] = {}, error[128] = {};
  CUjit_option opts[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_OPTIMIZATION_LEVEL};
  void* vals[] = {info, reinterpret_cast<void*>(sizeof info), error,
                  reinterpret_cast<void*>(sizeof error), reinterpret_cast<void*>(3)};
  CUmodule m = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_IMAGE, cuModuleLoadDataEx(&m, "garbage", 5, opts, vals));
  EXPECT_NE(nullptr, std::strstr(error, "CUDA_ERROR_INVALID_IMAGE")) << error;
  EXPECT_EQ(std::strlen(error) + 1, reinterpret_cast<size_t>(vals[3]));
  vals[1] = reinterpret_cast<void*>(sizeof info);
  vals[3] = reinterpret_cast<void*>(sizeof error);
  EXPECT_CU(CUDA_SUCCESS, cuModuleLoadDataEx(&m, kImage, 5, opts, vals));
  EXPECT_NE(nullptr, std::strstr(info, "ktest")) << info;
  CUjit_option bad = static_cast<CUjit_option>(9999);
  void* bad_val = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleLoadDataEx(&m, kImage, 1, &bad, &bad_val));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleLoadDataEx(&m, kImage, 1, nullptr, nullptr));
}

TEST_F(Kernels, UnloadInvalidatesFunctionsAndContextDestroyUnloads) {
  CUmodule m = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuModuleLoadData(&m, kImage));
  CUfunction f = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuModuleGetFunction(&f, m, "record_noargs"));
  ASSERT_CU(CUDA_SUCCESS, cuModuleUnload(m));
  int v = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
  CUfunction g = fn("record_noargs");
  ASSERT_CU(CUDA_SUCCESS, cuCtxDestroy(ctx_));
  ctx_ = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, g));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuModuleUnload(mod_));
}

TEST_F(Kernels, KernelParamsArePackedAndCopiedAtLaunch) {
  CUfunction f = fn("record3");
  // Hold the stream so that the launch is still queued when we overwrite the arguments.
  struct Gate {
    static void CUDA_CB wait(void* p) {
      while (!static_cast<std::atomic<bool>*>(p)->load()) std::this_thread::yield();
    }
  };
  std::atomic<bool> open{false};
  ASSERT_CU(CUDA_SUCCESS, cuLaunchHostFunc(nullptr, &Gate::wait, &open));
  int a = 0x11223344;
  void* b = reinterpret_cast<void*>(0x5566778899aabbccULL);
  char c = 'z';
  void* params[] = {&a, &b, &c};
  ASSERT_CU(CUDA_SUCCESS, cuLaunchKernel(f, 2, 3, 4, 5, 6, 7, 96, nullptr, params, nullptr));
  a = 0, b = nullptr, c = 0;  // CUDA: the caller may reuse its storage at once
  open = true;
  const KtestRecord r = record();
  EXPECT_EQ(1u, r.launches);
  EXPECT_EQ(2u, r.grid[0]);
  EXPECT_EQ(4u, r.grid[2]);
  EXPECT_EQ(5u, r.block[0]);
  EXPECT_EQ(7u, r.block[2]);
  EXPECT_EQ(96u, r.shared_bytes);
  EXPECT_EQ(17u, r.args_size);
  int ra;
  void* rb;
  std::memcpy(&ra, r.args, 4);
  std::memcpy(&rb, r.args + 8, 8);
  EXPECT_EQ(0x11223344, ra);
  EXPECT_EQ(reinterpret_cast<void*>(0x5566778899aabbccULL), rb);
  EXPECT_EQ('z', static_cast<char>(r.args[16]));
}

TEST_F(Kernels, ExtraBufferAndItsErrors) {
  CUfunction f = fn("record3");
  unsigned char buf[24] = {};
  const int a = 42;
  std::memcpy(buf, &a, 4);
  buf[16] = 'q';
  size_t size = sizeof buf;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  ASSERT_CU(CUDA_SUCCESS, cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, extra));
  const KtestRecord r = record();
  int ra;
  std::memcpy(&ra, r.args, 4);
  EXPECT_EQ(42, ra);
  EXPECT_EQ('q', static_cast<char>(r.args[16]));
  void* p = &ra;
  void* params[] = {p, p, p};
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, params, extra));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
  void* no_size[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_END};
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, no_size));
  size_t small = 4;
  void* too_small[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &small,
                       CU_LAUNCH_PARAM_END};
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, too_small));
  // A kernel without parameters needs neither.
  EXPECT_CU(CUDA_SUCCESS,
            cuLaunchKernel(fn("record_noargs"), 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
  EXPECT_EQ(2u, record().launches);
}

TEST_F(Kernels, LaunchLimitsFromTheDevice) {
  CUfunction f = fn("record_noargs");
  auto L = [&](unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
               unsigned sh) {
    return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, sh, nullptr, nullptr, nullptr);
  };
  EXPECT_CU(CUDA_SUCCESS, L(1, 1, 1, 1024, 1, 1, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, L(1, 1, 1, 1025, 1, 1, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, L(1, 1, 1, 32, 32, 2, 0));  // 2048 threads
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, L(1, 1, 1, 1, 1, 65, 0));   // z > 64
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, L(0, 1, 1, 1, 1, 1, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, L(1, 1, 1, 0, 1, 1, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, L(1, 65536, 1, 1, 1, 1, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, L(1, 1, 65536, 1, 1, 1, 0));
  EXPECT_CU(CUDA_SUCCESS, L(2147483647u, 65535, 65535, 1, 1, 1, 0));
  EXPECT_CU(CUDA_SUCCESS, L(1, 1, 1, 1, 1, 1, 48 * 1024));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, L(1, 1, 1, 1, 1, 1, 48 * 1024 + 1));
  int v = 0;
  EXPECT_CU(CUDA_SUCCESS,
            cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f));
  EXPECT_EQ(48 * 1024, v);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 99 * 1024 + 1));
  EXPECT_CU(CUDA_SUCCESS,
            cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024));
  EXPECT_CU(CUDA_SUCCESS, L(1, 1, 1, 1, 1, 1, 64 * 1024));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, L(1, 1, 1, 1, 1, 1, 64 * 1024 + 1));
  // Static shared memory counts against the opt-in limit.
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuFuncSetAttribute(fn("record_shared"), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               99 * 1024 - 4095));
  // Per-kernel limits: registers and __launch_bounds__.
  EXPECT_CU(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
            cuLaunchKernel(fn("record_big"), 1, 1, 1, 1024, 1, 1, 0, nullptr, nullptr, nullptr));
  EXPECT_CU(CUDA_SUCCESS,
            cuLaunchKernel(fn("record_big"), 1, 1, 1, 512, 1, 1, 0, nullptr, nullptr, nullptr));
  EXPECT_CU(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
            cuLaunchKernel(fn("record_small"), 1, 1, 1, 129, 1, 1, 0, nullptr, nullptr, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NUM_REGS, 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 101));
  EXPECT_CU(CUDA_SUCCESS,
            cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 50));
  EXPECT_CU(CUDA_SUCCESS,
            cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, f));
  EXPECT_EQ(50, v);
  EXPECT_CU(CUDA_SUCCESS, cuFuncSetCacheConfig(f, CU_FUNC_CACHE_PREFER_L1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuFuncSetCacheConfig(f, static_cast<CUfunc_cache>(9)));
  EXPECT_CU(CUDA_SUCCESS, cuFuncSetSharedMemConfig(f, CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuFuncGetAttribute(&v, static_cast<CUfunction_attribute>(999), f));
}

TEST_F(Kernels, LaunchesAreOrderedBetweenAsyncCopies) {
  const int n = 1 << 16;
  std::vector<float> x(n), y(n), out(n);
  for (int i = 0; i < n; ++i) x[i] = float(i), y[i] = float(2 * i);
  CUdeviceptr dx, dy;
  ASSERT_CU(CUDA_SUCCESS, cuMemAlloc(&dx, n * 4));
  ASSERT_CU(CUDA_SUCCESS, cuMemAlloc(&dy, n * 4));
  CUstream s;
  ASSERT_CU(CUDA_SUCCESS, cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  ASSERT_CU(CUDA_SUCCESS, cuMemcpyHtoDAsync(dx, x.data(), n * 4, s));
  ASSERT_CU(CUDA_SUCCESS, cuMemcpyHtoDAsync(dy, y.data(), n * 4, s));
  float a = 2.0f;
  int count = n;
  void* args[] = {&a, &dx, &dy, &count};
  ASSERT_CU(CUDA_SUCCESS,
            cuLaunchKernel(fn("axpy"), n / 256, 1, 1, 256, 1, 1, 0, s, args, nullptr));
  ASSERT_CU(CUDA_SUCCESS,
            cuLaunchKernel(fn("axpy"), n / 256, 1, 1, 256, 1, 1, 0, s, args, nullptr));
  ASSERT_CU(CUDA_SUCCESS, cuMemcpyDtoHAsync(out.data(), dy, n * 4, s));
  ASSERT_CU(CUDA_SUCCESS, cuStreamSynchronize(s));
  for (int i = 0; i < n; ++i) ASSERT_EQ(float(2 * i) + 4.0f * float(i), out[i]) << i;
  cuStreamDestroy(s);
  cuMemFree(dx);
  cuMemFree(dy);
}

TEST_F(Kernels, CooperativeLaunchMustFitCoResidency) {
  CUfunction f = fn("record_noargs");
  int per_sm = 0;
  ASSERT_CU(CUDA_SUCCESS, cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, 256, 0));
  EXPECT_EQ(6, per_sm);                                    // 1536 threads per SM / 256
  const unsigned fit = static_cast<unsigned>(per_sm) * 4;  // 4 SMs
  EXPECT_CU(CUDA_SUCCESS, cuLaunchCooperativeKernel(f, fit, 1, 1, 256, 1, 1, 0, nullptr, nullptr));
  EXPECT_EQ(1u, record().cooperative);
  EXPECT_CU(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
            cuLaunchCooperativeKernel(f, fit + 1, 1, 1, 256, 1, 1, 0, nullptr, nullptr));
}

TEST_F(Kernels, LaunchKernelExAttributes) {
  CUfunction f = fn("record3");
  int a = 7;
  void* b = nullptr;
  char c = 1;
  void* params[] = {&a, &b, &c};
  CUlaunchAttribute attrs[2] = {};
  attrs[0].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  attrs[0].value.priority = 1;
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attrs[1].value.cooperative = 1;
  CUlaunchConfig cfg = {};
  cfg.gridDimX = 3, cfg.gridDimY = 1, cfg.gridDimZ = 1;
  cfg.blockDimX = 32, cfg.blockDimY = 1, cfg.blockDimZ = 1;
  cfg.attrs = attrs;
  cfg.numAttrs = 2;
  ASSERT_CU(CUDA_SUCCESS, cuLaunchKernelEx(&cfg, f, params, nullptr));
  KtestRecord r = record();
  EXPECT_EQ(3u, r.grid[0]);
  EXPECT_EQ(1u, r.cooperative);
  // Programmatic dependent launch (CUB and Thrust use it) runs serialized: still a launch.
  unsigned before = record().launches;
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attrs[1].value.programmaticStreamSerializationAllowed = 1;
  ASSERT_CU(CUDA_SUCCESS, cuLaunchKernelEx(&cfg, f, params, nullptr));
  EXPECT_EQ(before + 1, record().launches);
  // A launch completion event is recorded behind the kernel.
  CUevent done = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
  attrs[1].value.launchCompletionEvent.event = done;
  attrs[1].value.launchCompletionEvent.flags = 0;
  ASSERT_CU(CUDA_SUCCESS, cuLaunchKernelEx(&cfg, f, params, nullptr));
  ASSERT_CU(CUDA_SUCCESS, cuEventSynchronize(done));
  EXPECT_EQ(before + 2, record().launches);
  ASSERT_CU(CUDA_SUCCESS, cuEventDestroy(done));
  attrs[1].value.launchCompletionEvent.event = done;  // destroyed
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuLaunchKernelEx(&cfg, f, params, nullptr));
  EXPECT_EQ(before + 2, record().launches) << "refused before the launch";
  // Graph-only attributes are not for stream launches.
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE;
  EXPECT_NE(CUDA_SUCCESS, cuLaunchKernelEx(&cfg, f, params, nullptr));
  // Clusters: checked against the grid (3x1x1) first, then refused for a backend that cannot
  // run them (ktest keeps the default launches_clusters() false): the launch never reaches it.
  const unsigned launches = record().launches;
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attrs[1].value.clusterDim.x = 2, attrs[1].value.clusterDim.y = 1, attrs[1].value.clusterDim.z = 1;
  EXPECT_CU(CUDA_ERROR_INVALID_CLUSTER_SIZE, cuLaunchKernelEx(&cfg, f, params, nullptr));
  attrs[1].value.clusterDim.x = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_CLUSTER_SIZE, cuLaunchKernelEx(&cfg, f, params, nullptr));
  attrs[1].value.clusterDim.x = 1, attrs[1].value.clusterDim.y = 2;
  EXPECT_CU(CUDA_ERROR_INVALID_CLUSTER_SIZE, cuLaunchKernelEx(&cfg, f, params, nullptr));
  attrs[1].value.clusterDim.x = 3, attrs[1].value.clusterDim.y = 1;
  EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuLaunchKernelEx(&cfg, f, params, nullptr));
  EXPECT_EQ(launches, record().launches);
  attrs[1].value.clusterDim.x = 1;  // 1x1x1 is no cluster: an ordinary launch
  ASSERT_CU(CUDA_SUCCESS, cuLaunchKernelEx(&cfg, f, params, nullptr));
  EXPECT_EQ(launches + 1, record().launches);
  attrs[1].id = static_cast<CUlaunchAttributeID>(999);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLaunchKernelEx(&cfg, f, params, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLaunchKernelEx(nullptr, f, params, nullptr));
  cfg.numAttrs = 0;
  cfg.blockDimX = 2048;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLaunchKernelEx(&cfg, f, params, nullptr));
}

size_t CUDA_CB smem_for(int block_size) { return static_cast<size_t>(block_size) * 64; }

TEST_F(Kernels, OccupancyCalculator) {
  CUfunction f = fn("record_noargs");
  int n = 0;
  EXPECT_CU(CUDA_SUCCESS, cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, 1024, 0));
  EXPECT_EQ(1, n);
  EXPECT_CU(CUDA_SUCCESS, cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, 32, 0));
  EXPECT_EQ(16, n);  // the blocks-per-SM limit
  // Shared memory: 100 KiB per SM, 1 KiB reserved per block: 20 KiB blocks -> 4.
  EXPECT_CU(CUDA_SUCCESS,
            cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&n, f, 64, 20 * 1024, 0));
  EXPECT_EQ(4, n);
  // Registers: 128 per thread, 256 threads -> 32768 per block -> 2 per SM.
  EXPECT_CU(CUDA_SUCCESS,
            cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn("record_big"), 256, 0));
  EXPECT_EQ(2, n);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&n, f, 64, 0, 8));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuOccupancyMaxActiveBlocksPerMultiprocessor(nullptr, f, 64, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, nullptr, 64, 0));
  int grid = 0, block = 0;
  EXPECT_CU(CUDA_SUCCESS, cuOccupancyMaxPotentialBlockSize(&grid, &block, f, nullptr, 0, 0));
  EXPECT_EQ(768, block);  // the largest size reaching all 1536 threads per SM
  EXPECT_EQ(2 * 4, grid);
  EXPECT_CU(CUDA_SUCCESS, cuOccupancyMaxPotentialBlockSize(&grid, &block, f, nullptr, 0, 100));
  EXPECT_EQ(96, block);  // warp multiples below the limit: 96 x 16 blocks
  EXPECT_EQ(16 * 4, grid);
  // 64 bytes of dynamic shared memory per thread: 100 KiB per SM bounds the threads.
  EXPECT_CU(CUDA_SUCCESS,
            cuOccupancyMaxPotentialBlockSizeWithFlags(&grid, &block, f, &smem_for, 0, 0, 0));
  int blocks = 0;
  EXPECT_CU(CUDA_SUCCESS,
            cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, block, smem_for(block)));
  EXPECT_EQ(blocks * 4, grid);
  for (int size = 32; size <= 1024; size += 32) {  // no other size keeps more threads resident
    int other = 0;
    if (smem_for(size) > 48 * 1024) continue;
    ASSERT_CU(CUDA_SUCCESS,
              cuOccupancyMaxActiveBlocksPerMultiprocessor(&other, f, size, smem_for(size)));
    EXPECT_LE(other * size, blocks * block) << size;
  }
  size_t avail = 0;
  EXPECT_CU(CUDA_SUCCESS, cuOccupancyAvailableDynamicSMemPerBlock(&avail, f, 4, 128));
  EXPECT_EQ(size_t(25 * 1024 - 1024), avail);
  EXPECT_CU(CUDA_SUCCESS, cuOccupancyAvailableDynamicSMemPerBlock(&avail, f, 1, 128));
  EXPECT_EQ(size_t(48 * 1024), avail);  // capped by the kernel's dynamic limit
}

// cuLibraryGetKernel before anything listed the library's kernels asks the module for that one
// name (a library of thousands of kernels is not enumerated for it); the count comes later.
// A missing name, then "record3" found by name before the count of kImage's 8 kernels is asked.
void expect_lookup_then_count(CUlibrary lib, CUkernel& k) {
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuLibraryGetKernel(&k, lib, "nope"));
  ASSERT_CU(CUDA_SUCCESS, cuLibraryGetKernel(&k, lib, "record3"));
  unsigned count = 0;
  EXPECT_CU(CUDA_SUCCESS, cuLibraryGetKernelCount(&count, lib));
  EXPECT_EQ(8u, count);
}

TEST_F(Kernels, LibraryKernelLookupByNameAlone) {
  CUlibrary lib = nullptr;
  ASSERT_CU(CUDA_SUCCESS,
            cuLibraryLoadData(&lib, kImage, nullptr, nullptr, 0, nullptr, nullptr, 0));
  CUkernel k = nullptr;
  ASSERT_NO_FATAL_FAILURE(expect_lookup_then_count(lib, k));
  CUkernel again = nullptr;
  EXPECT_CU(CUDA_SUCCESS, cuLibraryGetKernel(&again, lib, "record3"));
  EXPECT_EQ(k, again);
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuLibraryGetKernel(&again, lib, "nope"));
  EXPECT_CU(CUDA_SUCCESS, cuLibraryUnload(lib));
}

// Library and kernel queries need no current context (CUDA 12; cuda.core asks for a kernel and
// its attributes before making one current): the device's primary context answers them.
TEST_F(Kernels, LibraryQueriesWithoutACurrentContext) {
  std::thread([] {
    CUcontext none = nullptr;
    ASSERT_CU(CUDA_SUCCESS, cuCtxGetCurrent(&none));
    ASSERT_EQ(nullptr, none);
    CUlibrary lib = nullptr;
    ASSERT_CU(CUDA_SUCCESS,
              cuLibraryLoadData(&lib, kImage, nullptr, nullptr, 0, nullptr, nullptr, 0));
    CUkernel k = nullptr;
    ASSERT_NO_FATAL_FAILURE(expect_lookup_then_count(lib, k));
    int threads = 0;
    EXPECT_CU(CUDA_SUCCESS,
              cuKernelGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k, 0));
    EXPECT_GT(threads, 0);
    EXPECT_CU(CUDA_ERROR_INVALID_DEVICE,
              cuKernelGetAttribute(&threads, CU_FUNC_ATTRIBUTE_NUM_REGS, k, 7));
    ASSERT_CU(CUDA_SUCCESS, cuCtxGetCurrent(&none));
    EXPECT_EQ(nullptr, none) << "a query makes no context current";
    EXPECT_CU(CUDA_SUCCESS, cuLibraryUnload(lib));
  }).join();
}

TEST_F(Kernels, LibrariesAndContextIndependentKernels) {
  CUlibrary lib = nullptr;
  std::string copy = kImage;  // freed before use: the library must keep its own copy
  ASSERT_CU(CUDA_SUCCESS,
            cuLibraryLoadData(&lib, copy.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  copy.assign(copy.size(), 'x');
  unsigned count = 0;
  EXPECT_CU(CUDA_SUCCESS, cuLibraryGetKernelCount(&count, lib));
  EXPECT_EQ(8u, count);
  CUkernel k = nullptr, k2 = nullptr;
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuLibraryGetKernel(&k, lib, "nope"));
  ASSERT_CU(CUDA_SUCCESS, cuLibraryGetKernel(&k, lib, "record3"));
  EXPECT_CU(CUDA_SUCCESS, cuLibraryGetKernel(&k2, lib, "record3"));
  EXPECT_EQ(k, k2);
  const char* name = nullptr;
  EXPECT_CU(CUDA_SUCCESS, cuKernelGetName(&name, k));
  EXPECT_STREQ("record3", name);
  CUlibrary owner = nullptr;
  EXPECT_CU(CUDA_SUCCESS, cuKernelGetLibrary(&owner, k));
  EXPECT_EQ(lib, owner);
  size_t off = 0, size = 0;
  EXPECT_CU(CUDA_SUCCESS, cuKernelGetParamInfo(k, 2, &off, &size));
  EXPECT_EQ(16u, off);
  std::vector<CUkernel> all(count);
  EXPECT_CU(CUDA_SUCCESS, cuLibraryEnumerateKernels(all.data(), count, lib));
  EXPECT_EQ(k, all[0]);

  CUfunction f1 = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuKernelGetFunction(&f1, k));
  CUmodule m1 = nullptr, fm = nullptr;
  EXPECT_CU(CUDA_SUCCESS, cuLibraryGetModule(&m1, lib));
  EXPECT_CU(CUDA_SUCCESS, cuFuncGetModule(&fm, f1));
  EXPECT_EQ(m1, fm);
  EXPECT_CU(CUDA_ERROR_NOT_PERMITTED, cuModuleUnload(m1));  // owned by the library
  EXPECT_CU(CUDA_SUCCESS,
            cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 60000, k, 0));
  int v = 0;
  EXPECT_CU(CUDA_SUCCESS,
            cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k, 0));
  EXPECT_EQ(60000, v);
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, k, 7));

  // A CUkernel cast to CUfunction launches in the current context.
  int a = 5;
  void* b = nullptr;
  char c = 0;
  void* params[] = {&a, &b, &c};
  ASSERT_CU(CUDA_SUCCESS, cuLaunchKernel(reinterpret_cast<CUfunction>(k), 1, 1, 1, 1, 1, 1, 50000,
                                         nullptr, params, nullptr));
  ASSERT_CU(CUDA_SUCCESS, cuCtxSynchronize());
  CUdeviceptr rec = 0;
  size_t bytes = 0;
  ASSERT_CU(CUDA_SUCCESS, cuLibraryGetGlobal(&rec, &bytes, lib, "record"));
  KtestRecord r{};
  ASSERT_CU(CUDA_SUCCESS, cuMemcpyDtoH(&r, rec, sizeof r));
  EXPECT_EQ(1u, r.launches);
  EXPECT_EQ(50000u, r.shared_bytes);

  // Another context gets its own module and function, with the kernel's attributes.
  CUcontext other = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuCtxCreate(&other, nullptr, 0, 0));
  CUfunction f2 = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuKernelGetFunction(&f2, k));
  EXPECT_NE(f1, f2);
  EXPECT_CU(CUDA_SUCCESS,
            cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f2));
  EXPECT_EQ(60000, v);
  ASSERT_CU(CUDA_SUCCESS, cuCtxDestroy(other));  // its module goes; the library stays
  EXPECT_CU(CUDA_SUCCESS, cuKernelGetFunction(&f2, k));
  EXPECT_EQ(f1, f2);

  EXPECT_CU(CUDA_SUCCESS, cuLibraryUnload(lib));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuLibraryUnload(lib));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuKernelGetFunction(&f2, k));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f1));
  EXPECT_CU(CUDA_ERROR_INVALID_IMAGE,
            cuLibraryLoadData(&lib, "garbage", nullptr, nullptr, 0, nullptr, nullptr, 0));
}

TEST_F(Kernels, StickyErrorsPoisonTheContextUntilDestroyed) {
  CUdeviceptr p = 0;
  ASSERT_CU(CUDA_SUCCESS, cuMemAlloc(&p, 64));
  CUstream s = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuStreamCreate(&s, 0));
  CUevent e = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuEventCreate(&e, 0));
  CUfunction rec = fn("record_noargs");
  ASSERT_CU(CUDA_SUCCESS,
            cuLaunchKernel(fn("fault_assert"), 1, 1, 1, 1, 1, 1, 0, s, nullptr, nullptr));
  EXPECT_CU(CUDA_ERROR_ASSERT, cuStreamSynchronize(s));
  // Every later use of the context reports the same error.
  EXPECT_CU(CUDA_ERROR_ASSERT, cuCtxSynchronize());
  CUdeviceptr q = 0;
  EXPECT_CU(CUDA_ERROR_ASSERT, cuMemAlloc(&q, 64));
  EXPECT_CU(CUDA_ERROR_ASSERT, cuStreamQuery(s));
  EXPECT_CU(CUDA_ERROR_ASSERT, cuEventRecord(e, s));
  EXPECT_CU(CUDA_ERROR_ASSERT, cuEventQuery(e));
  EXPECT_CU(CUDA_ERROR_ASSERT, cuLaunchKernel(rec, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
  CUmodule m = nullptr;
  EXPECT_CU(CUDA_ERROR_ASSERT, cuModuleLoadData(&m, kImage));
  CUfunction f = nullptr;
  EXPECT_CU(CUDA_ERROR_ASSERT, cuModuleGetFunction(&f, mod_, "record3"));
  // A later fault of another kind does not replace the first.
  EXPECT_CU(CUDA_ERROR_ASSERT, cuStreamSynchronize(nullptr));
  // A new context works.
  CUcontext fresh = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuCtxCreate(&fresh, nullptr, 0, 0));
  EXPECT_CU(CUDA_SUCCESS, cuMemAlloc(&q, 64));
  EXPECT_CU(CUDA_SUCCESS, cuMemFree(q));
  ASSERT_CU(CUDA_SUCCESS, cuCtxDestroy(fresh));
  EXPECT_CU(CUDA_SUCCESS, cuCtxDestroy(ctx_));  // destroying the poisoned one works
  ctx_ = nullptr;
}

TEST_F(Kernels, StickyErrorOnThePrimaryContextIsClearedByReset) {
  CUcontext primary = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&primary, 0));
  ASSERT_CU(CUDA_SUCCESS, cuCtxPushCurrent(primary));
  CUmodule m = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuModuleLoadData(&m, kImage));
  CUfunction f = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuModuleGetFunction(&f, m, "fault_illegal"));
  ASSERT_CU(CUDA_SUCCESS, cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
  EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
  CUdeviceptr p = 0;
  EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemAlloc(&p, 16));
  ASSERT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxReset(0));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuModuleUnload(m));  // reset unloaded it
  CUcontext again = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&again, 0));
  CUcontext popped = nullptr;
  cuCtxPopCurrent(&popped);
  ASSERT_CU(CUDA_SUCCESS, cuCtxPushCurrent(again));
  EXPECT_CU(CUDA_SUCCESS, cuMemAlloc(&p, 16));
  EXPECT_CU(CUDA_SUCCESS, cuMemFree(p));
  cuCtxPopCurrent(&popped);
  cuDevicePrimaryCtxRelease(0);
  cuDevicePrimaryCtxRelease(0);
}

}  // namespace
