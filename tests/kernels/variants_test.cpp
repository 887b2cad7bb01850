// The per-thread-default-stream (_ptsz) launch variants and the remaining entry points,
// called under their exported names (hence __CUDA_API_VERSION_INTERNAL, as in the driver
// conformance suite), on the ktest backend.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "cu_expect.hpp"
#include "ktest_record.h"

namespace {

const char kImage[] = "cudamux-ktest-module\nkernel record1 4\nglobal record 1024\n";

TEST(KernelVariants, PerThreadLaunchesAndRemainingEntryPoints) {
  ASSERT_CU(CUDA_SUCCESS, cuInit(0));
  CUcontext ctx = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuCtxCreate_v2(&ctx, 0, 0));
  CUmodule m = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuModuleLoadFatBinary(&m, kImage));
  CUfunction f = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuModuleGetFunction(&f, m, "record1"));
  CUfunctionLoadingState state{};
  EXPECT_CU(CUDA_SUCCESS, cuFuncIsLoaded(&state, f));
  EXPECT_EQ(CU_FUNCTION_LOADING_STATE_LOADED, state);
  EXPECT_CU(CUDA_SUCCESS, cuFuncLoad(f));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuFuncLoad(nullptr));

  int v = 3;
  void* args[] = {&v};
  ASSERT_CU(CUDA_SUCCESS, cuLaunchKernel_ptsz(f, 1, 1, 1, 8, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_CU(CUDA_SUCCESS, cuLaunchCooperativeKernel_ptsz(f, 2, 1, 1, 8, 1, 1, 0, nullptr, args));
  CUlaunchConfig cfg = {};
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 16, cfg.blockDimY = cfg.blockDimZ = 1;
  ASSERT_CU(CUDA_SUCCESS, cuLaunchKernelEx_ptsz(&cfg, f, args, nullptr));
  ASSERT_CU(CUDA_SUCCESS, cuStreamSynchronize_ptsz(nullptr));  // all three went to the per-thread stream
  CUdeviceptr p = 0;
  size_t bytes = 0;
  ASSERT_CU(CUDA_SUCCESS, cuModuleGetGlobal_v2(&p, &bytes, m, "record"));
  KtestRecord r{};
  ASSERT_CU(CUDA_SUCCESS, cuMemcpyDtoH_v2(&r, p, sizeof r));
  EXPECT_EQ(3u, r.launches);
  EXPECT_EQ(16u, r.block[0]);
  EXPECT_EQ(0u, r.cooperative);

  char path[] = "/tmp/cudamux-ktest-lib-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  FILE* fp = fdopen(fd, "w");
  std::fputs(kImage, fp);
  std::fclose(fp);
  CUlibrary lib = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuLibraryLoadFromFile(&lib, path, nullptr, nullptr, 0, nullptr, nullptr, 0));
  std::remove(path);  // the library keeps what it read
  EXPECT_CU(CUDA_ERROR_FILE_NOT_FOUND,
            cuLibraryLoadFromFile(&lib, "/nonexistent/lib.cubin", nullptr, nullptr, 0, nullptr, nullptr, 0));
  CUkernel k = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuLibraryGetKernel(&k, lib, "record1"));
  EXPECT_CU(CUDA_SUCCESS, cuKernelSetCacheConfig(k, CU_FUNC_CACHE_PREFER_SHARED, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuKernelSetCacheConfig(k, static_cast<CUfunc_cache>(7), 0));
  EXPECT_CU(CUDA_SUCCESS, cuLibraryUnload(lib));
  EXPECT_CU(CUDA_SUCCESS, cuCtxDestroy_v2(ctx));
}

}  // namespace
