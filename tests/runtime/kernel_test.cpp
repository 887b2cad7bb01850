// The runtime's kernel functions (issue 4) on the mock: kernels compiled by NVRTC, loaded with
// cudaLibraryLoadData and launched through cudaLaunchKernel / cudaLaunchKernelExC /
// cudaLaunchCooperativeKernel as a cudaKernel_t or a CUfunction; attributes and occupancy
// against the driver's answers; bad input.
#include <cuda.h>
#include <cuda_runtime.h>  // the typed wrappers and the block-size calculator templates
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
// Per-thread-default-stream variants (declared by the header only in that mode).
cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 grid, dim3 block, void** args,
                                  size_t shared, cudaStream_t stream);
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func,
                                     void** args);
}

namespace {

#define ASSERT_RT(call) ASSERT_EQ((call), cudaSuccess) << #call
#define EXPECT_RT(call) EXPECT_EQ((call), cudaSuccess) << #call

const char* kSource = R"(
extern "C" __global__ void axpb(int* out, const int* in, int a, int b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * in[i] + b;
}
// Each block reverses its slice through dynamic shared memory; `pad` ints of the dynamic
// buffer past the slice are written too, so the launch really needs all of its bytes.
extern "C" __global__ void reverse(int* out, const int* in, int pad) {
  extern __shared__ int s[];
  int t = threadIdx.x, base = blockIdx.x * blockDim.x;
  s[t] = in[base + t];
  for (int k = t; k < pad; k += blockDim.x) s[blockDim.x + k] = k;
  __syncthreads();
  int extra = pad > 0 ? s[blockDim.x + pad - 1] - (pad - 1) : 0;
  out[base + t] = s[blockDim.x - 1 - t] + extra;
}
extern "C" __global__ void count_blocks(unsigned* counter) {
  if (threadIdx.x == 0) atomicAdd(counter, 1u);
}
__device__ int table[4] = {11, 22, 33, 44};
)";

std::vector<char> compile_ptx() {
  nvrtcProgram prog;
  EXPECT_EQ(nvrtcCreateProgram(&prog, kSource, "rt_kernels.cu", 0, nullptr, nullptr),
            NVRTC_SUCCESS);
  const char* opts[] = {"--gpu-architecture=compute_90"};
  if (nvrtcCompileProgram(prog, 1, opts) != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    nvrtcGetProgramLog(prog, log.data());
    ADD_FAILURE() << "compile failed: " << log;
    nvrtcDestroyProgram(&prog);
    return {};
  }
  size_t size = 0;
  EXPECT_EQ(nvrtcGetPTXSize(prog, &size), NVRTC_SUCCESS);
  std::vector<char> ptx(size);
  EXPECT_EQ(nvrtcGetPTX(prog, ptx.data()), NVRTC_SUCCESS);
  nvrtcDestroyProgram(&prog);
  return ptx;
}

int device_attr(cudaDeviceAttr a) {
  int v = 0;
  EXPECT_EQ(cudaDeviceGetAttribute(&v, a, 0), cudaSuccess);
  return v;
}

class RuntimeKernels : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ptx_ = new std::vector<char>(compile_ptx()); }
  static void TearDownTestSuite() {
    delete ptx_;
    ptx_ = nullptr;
  }
  void SetUp() override {
    ASSERT_FALSE(ptx_->empty());
    ASSERT_RT(cudaSetDevice(0));
    (void)cudaGetLastError();
    ASSERT_RT(cudaLibraryLoadData(&lib_, ptx_->data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    ASSERT_RT(cudaLibraryGetKernel(&axpb_, lib_, "axpb"));
    ASSERT_RT(cudaLibraryGetKernel(&reverse_, lib_, "reverse"));
    ASSERT_RT(cudaLibraryGetKernel(&count_, lib_, "count_blocks"));
  }
  void TearDown() override {
    if (lib_) {
      EXPECT_RT(cudaLibraryUnload(lib_));
    }
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a test left an error behind";
  }
  // Runs axpb over n ints through `func` and checks every element exactly.
  void run_axpb(const void* func, bool per_thread = false) {
    constexpr int n = 1000, a = 3, b = -7;
    std::vector<int> in(n), out(n, 0);
    for (int i = 0; i < n; ++i) in[i] = i * 5 - 400;
    int *din = nullptr, *dout = nullptr;
    ASSERT_RT(cudaMalloc(reinterpret_cast<void**>(&din), n * sizeof(int)));
    ASSERT_RT(cudaMalloc(reinterpret_cast<void**>(&dout), n * sizeof(int)));
    ASSERT_RT(cudaMemcpy(din, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    ASSERT_RT(cudaMemset(dout, 0, n * sizeof(int)));
    int av = a, bv = b, nv = n;
    void* args[] = {&dout, &din, &av, &bv, &nv};
    const dim3 grid((n + 127) / 128), block(128);
    if (per_thread) {
      ASSERT_RT(cudaLaunchKernel_ptsz(func, grid, block, args, 0, nullptr));
    } else {
      ASSERT_RT(cudaLaunchKernel(func, grid, block, args, 0, nullptr));
    }
    ASSERT_RT(cudaMemcpy(out.data(), dout, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], a * in[i] + b) << "element " << i;
    EXPECT_RT(cudaFree(din));
    EXPECT_RT(cudaFree(dout));
  }
  static std::vector<char>* ptx_;
  cudaLibrary_t lib_ = nullptr;
  cudaKernel_t axpb_ = nullptr, reverse_ = nullptr, count_ = nullptr;
};
std::vector<char>* RuntimeKernels::ptx_ = nullptr;

TEST_F(RuntimeKernels, LibraryKernelLaunchesWithExactResults) {
  run_axpb(axpb_);
  run_axpb(axpb_, /*per_thread=*/true);
  unsigned count = 0;
  ASSERT_RT(cudaLibraryGetKernelCount(&count, lib_));
  EXPECT_EQ(count, 3u);
  std::vector<cudaKernel_t> all(count);
  ASSERT_RT(cudaLibraryEnumerateKernels(all.data(), count, lib_));
  int found = 0;
  for (cudaKernel_t k : all) found += (k == axpb_) + (k == reverse_) + (k == count_);
  EXPECT_EQ(found, 3) << "the enumerated handles are the ones cudaLibraryGetKernel gives";
  const char* name = nullptr;
  ASSERT_RT(cudaFuncGetName(&name, axpb_));
  EXPECT_STREQ(name, "axpb");
  cudaKernel_t same = nullptr;
  ASSERT_RT(cudaGetKernel(&same, axpb_));
  EXPECT_EQ(same, axpb_);
}

TEST_F(RuntimeKernels, ACUfunctionCastToAPointerLaunchesToo) {
  cudaFunction_t f = nullptr;
  ASSERT_RT(cudaGetFuncBySymbol(&f, axpb_));
  CUfunction from_driver = nullptr;
  ASSERT_EQ(cuKernelGetFunction(&from_driver, reinterpret_cast<CUkernel>(axpb_)), CUDA_SUCCESS);
  EXPECT_EQ(f, from_driver) << "the kernel's function in the current context";
  run_axpb(reinterpret_cast<const void*>(f));
  const char* name = nullptr;
  ASSERT_RT(cudaFuncGetName(&name, f));
  EXPECT_STREQ(name, "axpb");
  cudaFunction_t again = nullptr;
  ASSERT_RT(cudaGetFuncBySymbol(&again, f));
  EXPECT_EQ(again, f);
  cudaKernel_t k = nullptr;
  EXPECT_EQ(cudaGetKernel(&k, f), cudaErrorInvalidDeviceFunction);
  (void)cudaGetLastError();
}

TEST_F(RuntimeKernels, LaunchKernelExCWithDynamicSharedMemory) {
  constexpr int threads = 64, blocks = 8, n = threads * blocks;
  const int optin = device_attr(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  const int per_block = device_attr(cudaDevAttrMaxSharedMemoryPerBlock);
  // Beyond the default limit when the device allows opting in to more.
  const int pad_bytes = (optin > per_block ? per_block + 4096 : per_block) - threads * 4;
  int pad = pad_bytes / 4;
  const size_t dyn = (threads + pad) * sizeof(int);
  std::vector<int> in(n), out(n);
  for (int i = 0; i < n; ++i) in[i] = i * i - 3;
  int *din = nullptr, *dout = nullptr;
  ASSERT_RT(cudaMalloc(reinterpret_cast<void**>(&din), n * sizeof(int)));
  ASSERT_RT(cudaMalloc(reinterpret_cast<void**>(&dout), n * sizeof(int)));
  ASSERT_RT(cudaMemcpy(din, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  void* args[] = {&dout, &din, &pad};

  cudaLaunchAttribute attrs[2] = {};
  attrs[0].id = cudaLaunchAttributePriority;  // a scheduling hint: honoured by running
  attrs[0].val.priority = 0;
  attrs[1].id = cudaLaunchAttributeIgnore;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = dyn;
  config.stream = nullptr;
  config.attrs = attrs;
  config.numAttrs = 2;
  if (dyn > static_cast<size_t>(per_block)) {
    // Above the kernel's default limit: refused until the program opts in.
    EXPECT_EQ(cudaLaunchKernelExC(&config, reverse_, args), cudaErrorInvalidValue);
    EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
    ASSERT_RT(cudaFuncSetAttribute(reverse_, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(dyn)));
  }
  ASSERT_RT(cudaLaunchKernelExC(&config, reverse_, args));
  ASSERT_RT(cudaMemcpy(out.data(), dout, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int blk = 0; blk < blocks; ++blk)
    for (int t = 0; t < threads; ++t)
      ASSERT_EQ(out[blk * threads + t], in[blk * threads + threads - 1 - t])
          << "block " << blk << " thread " << t;

  // The per-thread variant, on the per-thread default stream.
  ASSERT_RT(cudaMemset(dout, 0, n * sizeof(int)));
  ASSERT_RT(cudaLaunchKernelExC_ptsz(&config, reverse_, args));
  ASSERT_RT(cudaMemcpy(out.data(), dout, n * sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_EQ(out[0], in[threads - 1]);

  // Attributes the mock cannot honour are refused, not ignored.
  cudaLaunchAttribute cluster = {};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = 2;
  cluster.val.clusterDim.y = 1;
  cluster.val.clusterDim.z = 1;
  config.attrs = &cluster;
  config.numAttrs = 1;
  EXPECT_EQ(cudaLaunchKernelExC(&config, reverse_, args), cudaErrorNotSupported);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNotSupported);
  // A cluster that does not divide the grid (8 blocks) is refused as invalid before the
  // backend is asked, as on NVIDIA's driver.
  cluster.val.clusterDim.x = 3;
  EXPECT_EQ(cudaLaunchKernelExC(&config, reverse_, args), cudaErrorInvalidClusterSize);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidClusterSize);
  EXPECT_EQ(cudaLaunchKernelExC(nullptr, reverse_, args), cudaErrorInvalidValue);
  config.attrs = nullptr;
  EXPECT_EQ(cudaLaunchKernelExC(&config, reverse_, args), cudaErrorInvalidValue)
      << "attributes counted, array null";
  (void)cudaGetLastError();
  EXPECT_RT(cudaFree(din));
  EXPECT_RT(cudaFree(dout));
}

TEST_F(RuntimeKernels, CooperativeLaunchesAndTooLargeGrids) {
  if (!device_attr(cudaDevAttrCooperativeLaunch)) GTEST_SKIP() << "no cooperative launches";
  unsigned* counter = nullptr;
  ASSERT_RT(cudaMalloc(reinterpret_cast<void**>(&counter), sizeof(unsigned)));
  ASSERT_RT(cudaMemset(counter, 0, sizeof(unsigned)));
  void* args[] = {&counter};
  const int sms = device_attr(cudaDevAttrMultiProcessorCount);
  int per_sm = 0;
  ASSERT_RT(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, count_, 256, 0));
  ASSERT_GT(per_sm, 0);
  const unsigned fit = static_cast<unsigned>(per_sm * sms);
  ASSERT_RT(cudaLaunchCooperativeKernel(count_, dim3(fit), dim3(256), args, 0, nullptr));
  unsigned host = 0;
  ASSERT_RT(cudaMemcpy(&host, counter, sizeof host, cudaMemcpyDeviceToHost));
  EXPECT_EQ(host, fit) << "every block of the largest co-resident grid ran once";

  EXPECT_EQ(cudaLaunchCooperativeKernel(count_, dim3(fit + 1), dim3(256), args, 0, nullptr),
            cudaErrorCooperativeLaunchTooLarge);
  // A launch error is not sticky: it is returned once and the device stays usable.
  EXPECT_EQ(cudaGetLastError(), cudaErrorCooperativeLaunchTooLarge);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);

  // The cooperative attribute of cudaLaunchKernelExC is the same launch.
  cudaLaunchAttribute coop = {};
  coop.id = cudaLaunchAttributeCooperative;
  coop.val.cooperative = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(fit + 1);
  config.blockDim = dim3(256);
  config.attrs = &coop;
  config.numAttrs = 1;
  EXPECT_EQ(cudaLaunchKernelExC(&config, count_, args), cudaErrorCooperativeLaunchTooLarge);
  (void)cudaGetLastError();
  config.gridDim = dim3(fit);
  ASSERT_RT(cudaLaunchKernelExC(&config, count_, args));
  ASSERT_RT(cudaMemcpy(&host, counter, sizeof host, cudaMemcpyDeviceToHost));
  EXPECT_EQ(host, 2 * fit);
  EXPECT_RT(cudaFree(counter));
}

// Every field of cudaFuncAttributes against cuFuncGetAttribute of the same function.
void expect_matches_driver(const cudaFuncAttributes& a, CUfunction f) {
  auto drv = [f](CUfunction_attribute which) {
    int v = -12345;
    EXPECT_EQ(cuFuncGetAttribute(&v, which, f), CUDA_SUCCESS) << which;
    return v;
  };
  EXPECT_EQ(a.sharedSizeBytes, static_cast<size_t>(drv(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)));
  EXPECT_EQ(a.constSizeBytes, static_cast<size_t>(drv(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)));
  EXPECT_EQ(a.localSizeBytes, static_cast<size_t>(drv(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)));
  EXPECT_EQ(a.maxThreadsPerBlock, drv(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  EXPECT_EQ(a.numRegs, drv(CU_FUNC_ATTRIBUTE_NUM_REGS));
  EXPECT_EQ(a.ptxVersion, drv(CU_FUNC_ATTRIBUTE_PTX_VERSION));
  EXPECT_EQ(a.binaryVersion, drv(CU_FUNC_ATTRIBUTE_BINARY_VERSION));
  EXPECT_EQ(a.cacheModeCA, drv(CU_FUNC_ATTRIBUTE_CACHE_MODE_CA));
  EXPECT_EQ(a.maxDynamicSharedSizeBytes, drv(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES));
  EXPECT_EQ(a.preferredShmemCarveout, drv(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT));
  EXPECT_EQ(a.clusterDimMustBeSet, drv(CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET));
  EXPECT_EQ(a.requiredClusterWidth, drv(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH));
  EXPECT_EQ(a.requiredClusterHeight, drv(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT));
  EXPECT_EQ(a.requiredClusterDepth, drv(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH));
  EXPECT_EQ(a.clusterSchedulingPolicyPreference,
            drv(CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE));
  EXPECT_EQ(a.nonPortableClusterSizeAllowed,
            drv(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED));
}

TEST_F(RuntimeKernels, FuncAttributesAreTheDriversFunctionAttributes) {
  CUfunction f = nullptr;
  ASSERT_EQ(cuKernelGetFunction(&f, reinterpret_cast<CUkernel>(reverse_)), CUDA_SUCCESS);
  cudaFuncAttributes a;
  std::memset(&a, 0x5a, sizeof a);
  ASSERT_RT(cudaFuncGetAttributes(&a, reverse_));
  expect_matches_driver(a, f);
  EXPECT_GT(a.maxThreadsPerBlock, 0);
  EXPECT_GT(a.maxDynamicSharedSizeBytes, 0);
  for (int r : a.reserved) EXPECT_EQ(r, 0) << "reserved fields are cleared";
  cudaFuncAttributes through_function;
  ASSERT_RT(cudaFuncGetAttributes(&through_function, f));
  expect_matches_driver(through_function, f);

  // A value set through the runtime is the driver's value, for the kernel and a CUfunction.
  const int smaller = a.maxDynamicSharedSizeBytes / 2;
  ASSERT_RT(cudaFuncSetAttribute(reverse_, cudaFuncAttributeMaxDynamicSharedMemorySize, smaller));
  ASSERT_RT(cudaFuncGetAttributes(&a, reverse_));
  EXPECT_EQ(a.maxDynamicSharedSizeBytes, smaller);
  expect_matches_driver(a, f);
  ASSERT_RT(cudaFuncSetAttribute(f, cudaFuncAttributePreferredSharedMemoryCarveout, 50));
  ASSERT_RT(cudaFuncGetAttributes(&a, f));
  EXPECT_EQ(a.preferredShmemCarveout, 50);
  ASSERT_RT(cudaKernelSetAttributeForDevice(reverse_, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            1024, 0));
  ASSERT_RT(cudaFuncGetAttributes(&a, reverse_));
  EXPECT_EQ(a.maxDynamicSharedSizeBytes, 1024);
  EXPECT_RT(cudaFuncSetCacheConfig(reverse_, cudaFuncCachePreferShared));
  EXPECT_RT(cudaFuncSetCacheConfig(f, cudaFuncCachePreferL1));

  // Bad attribute values get the driver's answer in the runtime's words.
  EXPECT_EQ(cudaFuncSetAttribute(reverse_, cudaFuncAttributePreferredSharedMemoryCarveout, 101),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaFuncSetAttribute(reverse_, static_cast<cudaFuncAttribute>(3), 1),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaFuncSetAttribute(reverse_, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 device_attr(cudaDevAttrMaxSharedMemoryPerBlockOptin) + 1),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaFuncSetCacheConfig(reverse_, static_cast<cudaFuncCache>(9)), cudaErrorInvalidValue);
  EXPECT_EQ(cudaKernelSetAttributeForDevice(reverse_, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            1024, 999),
            cudaErrorInvalidDevice);
  EXPECT_EQ(cudaKernelSetAttributeForDevice(reinterpret_cast<cudaKernel_t>(f),
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, 1024, 0),
            cudaErrorInvalidDeviceFunction)
      << "a CUfunction is not a kernel handle";
  EXPECT_EQ(cudaFuncGetAttributes(nullptr, reverse_), cudaErrorInvalidValue);
  (void)cudaGetLastError();
}

TEST_F(RuntimeKernels, OccupancyIsTheDriversOccupancy) {
  CUfunction f = nullptr;
  ASSERT_EQ(cuKernelGetFunction(&f, reinterpret_cast<CUkernel>(reverse_)), CUDA_SUCCESS);
  const int max_threads = device_attr(cudaDevAttrMaxThreadsPerBlock);
  bool varies = false;
  int first = -1;
  for (int block = 32; block <= max_threads; block += 96) {
    for (size_t dyn : {size_t{0}, size_t{4096}, size_t{20000}}) {
      int ours = -1, theirs = -2;
      ASSERT_RT(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ours, reverse_, block, dyn));
      ASSERT_EQ(cuOccupancyMaxActiveBlocksPerMultiprocessor(&theirs, f, block, dyn), CUDA_SUCCESS);
      EXPECT_EQ(ours, theirs) << "block " << block << " dyn " << dyn;
      ASSERT_RT(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
          &ours, f, block, dyn, cudaOccupancyDisableCachingOverride));
      EXPECT_EQ(ours, theirs);
      if (first < 0) first = ours;
      varies |= ours != first;
    }
    size_t avail = 1, drv_avail = 2;
    ASSERT_RT(cudaOccupancyAvailableDynamicSMemPerBlock(&avail, reverse_, 2, block));
    ASSERT_EQ(cuOccupancyAvailableDynamicSMemPerBlock(&drv_avail, f, 2, block), CUDA_SUCCESS);
    EXPECT_EQ(avail, drv_avail) << "block " << block;
  }
  EXPECT_TRUE(varies) << "occupancy depends on the block size and shared memory";
  int n = 0;
  EXPECT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(nullptr, reverse_, 64, 0),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, reverse_, 0, 0),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&n, reverse_, 64, 0, 8u),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, nullptr, 64, 0),
            cudaErrorInvalidDeviceFunction);
  (void)cudaGetLastError();
}

size_t smem_per_block(int block) { return static_cast<size_t>(block) * 24; }

TEST_F(RuntimeKernels, BlockSizeCalculatorAgreesWithTheDriver) {
  CUfunction f = nullptr;
  ASSERT_EQ(cuKernelGetFunction(&f, reinterpret_cast<CUkernel>(reverse_)), CUDA_SUCCESS);
  for (size_t dyn : {size_t{0}, size_t{4096}, size_t{40000}}) {
    for (int limit : {0, 200, 96}) {
      int grid = -1, block = -1, drv_grid = -2, drv_block = -2;
      ASSERT_RT(cudaOccupancyMaxPotentialBlockSize(&grid, &block, reverse_, dyn, limit));
      ASSERT_EQ(cuOccupancyMaxPotentialBlockSize(&drv_grid, &drv_block, f, nullptr, dyn, limit),
                CUDA_SUCCESS);
      EXPECT_EQ(block, drv_block) << "dyn " << dyn << " limit " << limit;
      EXPECT_EQ(grid, drv_grid) << "dyn " << dyn << " limit " << limit;
      EXPECT_GT(block, 0);
      if (limit > 0) {
        EXPECT_LE(block, limit);
      }
    }
  }
  int grid = 0, block = 0, drv_grid = 0, drv_block = 0;
  ASSERT_RT(cudaOccupancyMaxPotentialBlockSizeVariableSMem(&grid, &block, f, smem_per_block));
  ASSERT_EQ(cuOccupancyMaxPotentialBlockSize(&drv_grid, &drv_block, f, smem_per_block, 0, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(block, drv_block);
  EXPECT_EQ(grid, drv_grid);
  EXPECT_EQ(cudaOccupancyMaxPotentialBlockSize(nullptr, &block, reverse_), cudaErrorInvalidValue);
  int local = 0;
  EXPECT_EQ(cudaOccupancyMaxPotentialBlockSize(&grid, &block, &local),
            cudaErrorInvalidDeviceFunction);
  (void)cudaGetLastError();
}

TEST_F(RuntimeKernels, LibraryGlobals) {
  void* p = nullptr;
  size_t bytes = 0;
  ASSERT_RT(cudaLibraryGetGlobal(&p, &bytes, lib_, "table"));
  EXPECT_EQ(bytes, 4 * sizeof(int));
  int host[4] = {};
  ASSERT_RT(cudaMemcpy(host, p, sizeof host, cudaMemcpyDeviceToHost));
  EXPECT_EQ(host[0], 11);
  EXPECT_EQ(host[3], 44);
  EXPECT_EQ(cudaLibraryGetGlobal(&p, &bytes, lib_, "no_such_variable"), cudaErrorSymbolNotFound);
  EXPECT_EQ(cudaLibraryGetGlobal(nullptr, nullptr, lib_, "table"), cudaErrorInvalidValue);
  (void)cudaGetLastError();
}

TEST_F(RuntimeKernels, BadLaunchesGetTheRuntimesErrorCodes) {
  int* dout = nullptr;
  ASSERT_RT(cudaMalloc(reinterpret_cast<void**>(&dout), 4096));
  int v = 0;
  void* args[] = {&dout, &dout, &v, &v, &v};
  auto launch = [&](const void* func, dim3 grid, dim3 block, size_t shared = 0,
                    void** a = nullptr) {
    return cudaLaunchKernel(func, grid, block, a ? a : args, shared, nullptr);
  };
  EXPECT_EQ(launch(nullptr, 1, 1), cudaErrorInvalidDeviceFunction);
  int local = 0;
  EXPECT_EQ(launch(&local, 1, 1), cudaErrorInvalidDeviceFunction) << "a pointer to host data";
  EXPECT_EQ(launch(reinterpret_cast<const void*>(std::uintptr_t{0xdeadbeefc7}), 1, 1),
            cudaErrorInvalidDeviceFunction)
      << "a garbage value with a kernel handle's tag";
  EXPECT_EQ(launch(reinterpret_cast<const void*>(std::uintptr_t{0x10}), 1, 1),
            cudaErrorInvalidDeviceFunction);
  // Configuration errors.
  const int max_threads = device_attr(cudaDevAttrMaxThreadsPerBlock);
  EXPECT_EQ(launch(axpb_, 1, dim3(max_threads + 1)), cudaErrorInvalidConfiguration);
  EXPECT_EQ(launch(axpb_, 1, dim3(32, 32, 2)), cudaErrorInvalidConfiguration);
  EXPECT_EQ(launch(axpb_, 1, dim3(1, 1, device_attr(cudaDevAttrMaxBlockDimZ) + 1)),
            cudaErrorInvalidConfiguration);
  EXPECT_EQ(launch(axpb_, dim3(1, device_attr(cudaDevAttrMaxGridDimY) + 1), 1),
            cudaErrorInvalidConfiguration);
  EXPECT_EQ(launch(axpb_, dim3(0), 1), cudaErrorInvalidConfiguration);
  EXPECT_EQ(launch(axpb_, 1, dim3(1, 0)), cudaErrorInvalidConfiguration);
  const size_t optin = static_cast<size_t>(device_attr(cudaDevAttrMaxSharedMemoryPerBlockOptin));
  EXPECT_EQ(launch(reverse_, 1, 32, optin + 1), cudaErrorInvalidConfiguration)
      << "more shared memory than the device has";
  EXPECT_EQ(launch(reverse_, 1, 32, size_t{1} << 40), cudaErrorInvalidConfiguration);
  if (optin > static_cast<size_t>(device_attr(cudaDevAttrMaxSharedMemoryPerBlock))) {
    EXPECT_EQ(launch(reverse_, 1, 32, optin), cudaErrorInvalidValue)
        << "within the device's opt-in limit but above the kernel's: not opted in";
  }
  // Arguments.
  EXPECT_EQ(cudaLaunchKernel(axpb_, 1, 1, nullptr, 0, nullptr), cudaErrorInvalidValue)
      << "a kernel with parameters and no arguments";
  cudaStream_t s = nullptr;
  ASSERT_RT(cudaStreamCreate(&s));
  ASSERT_RT(cudaStreamDestroy(s));
  EXPECT_EQ(cudaLaunchKernel(axpb_, 1, 1, args, 0, s), cudaErrorInvalidResourceHandle)
      << "a destroyed stream";
  // Each failure was the last error, and none is sticky: a good launch still runs.
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  run_axpb(axpb_);
  EXPECT_RT(cudaFree(dout));
}

TEST_F(RuntimeKernels, UnloadedLibrariesAndTheirKernelsAreRejected) {
  cudaKernel_t stale = axpb_;
  CUfunction f = nullptr;
  ASSERT_EQ(cuKernelGetFunction(&f, reinterpret_cast<CUkernel>(axpb_)), CUDA_SUCCESS);
  ASSERT_RT(cudaLibraryUnload(lib_));
  const cudaLibrary_t gone = lib_;
  lib_ = nullptr;
  EXPECT_EQ(cudaLibraryUnload(gone), cudaErrorInvalidResourceHandle);
  cudaKernel_t k = nullptr;
  EXPECT_EQ(cudaLibraryGetKernel(&k, gone, "axpb"), cudaErrorInvalidResourceHandle);
  int v = 0;
  void* args[] = {&v, &v, &v, &v, &v};
  EXPECT_EQ(cudaLaunchKernel(stale, 1, 1, args, 0, nullptr), cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(cudaLaunchKernel(f, 1, 1, args, 0, nullptr), cudaErrorInvalidDeviceFunction);
  cudaFuncAttributes a;
  EXPECT_EQ(cudaFuncGetAttributes(&a, stale), cudaErrorInvalidDeviceFunction);
  const char* name = nullptr;
  EXPECT_EQ(cudaFuncGetName(&name, stale), cudaErrorInvalidDeviceFunction);
  // Loading: garbage images, missing kernels, null arguments.
  const char garbage[] = "this is not PTX, a cubin or a fat binary";
  cudaLibrary_t bad = nullptr;
  EXPECT_NE(cudaLibraryLoadData(&bad, garbage, nullptr, nullptr, 0, nullptr, nullptr, 0),
            cudaSuccess);
  EXPECT_EQ(cudaLibraryLoadData(nullptr, ptx_->data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
            cudaErrorInvalidValue);
  EXPECT_NE(cudaLibraryLoadFromFile(&bad, "/nonexistent/kernels.ptx", nullptr, nullptr, 0, nullptr,
                                    nullptr, 0),
            cudaSuccess);
  ASSERT_RT(cudaLibraryLoadData(&lib_, ptx_->data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  EXPECT_EQ(cudaLibraryGetKernel(&k, lib_, "no_such_kernel"), cudaErrorSymbolNotFound);
  EXPECT_EQ(cudaLibraryGetKernel(nullptr, lib_, "axpb"), cudaErrorInvalidValue);
  unsigned count = 0;
  EXPECT_EQ(cudaLibraryGetKernelCount(nullptr, lib_), cudaErrorInvalidValue);
  ASSERT_RT(cudaLibraryGetKernelCount(&count, lib_));
  std::vector<cudaKernel_t> all(count + 1);
  EXPECT_EQ(cudaLibraryEnumerateKernels(all.data(), count + 1, lib_), cudaErrorInvalidValue);
  cudaFunction_t fn = nullptr;
  EXPECT_EQ(cudaGetFuncBySymbol(nullptr, stale), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetFuncBySymbol(&fn, &v), cudaErrorInvalidDeviceFunction);
  (void)cudaGetLastError();
}

TEST_F(RuntimeKernels, LibraryLoadedFromAFile) {
  char path[] = "/tmp/cudamux_rt_kernels_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  FILE* file = fdopen(fd, "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(std::fwrite(ptx_->data(), 1, ptx_->size(), file), ptx_->size());
  std::fclose(file);
  cudaLibrary_t from_file = nullptr;
  const cudaError_t loaded =
      cudaLibraryLoadFromFile(&from_file, path, nullptr, nullptr, 0, nullptr, nullptr, 0);
  std::remove(path);
  ASSERT_EQ(loaded, cudaSuccess);
  cudaKernel_t k = nullptr;
  ASSERT_RT(cudaLibraryGetKernel(&k, from_file, "axpb"));
  run_axpb(k);
  EXPECT_RT(cudaLibraryUnload(from_file));
}

}  // namespace
