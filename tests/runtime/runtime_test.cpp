// The runtime API (our libcudart.so.13) on the mock: flows, mixing with the driver API,
// error-state rules, bad input, symbols and registered kernels.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cudamux/runtime_support.hpp"  // cudamux::rt::record: the entry points' error recorder

// The registration hooks nvcc-generated code calls (declared by NVIDIA in C++-only
// internal headers; exported by libcudart.so.13).
extern "C" {
void** __cudaRegisterFatBinary(void* fatCubin);
void __cudaRegisterFatBinaryEnd(void** handle);
void __cudaUnregisterFatBinary(void** handle);
void __cudaRegisterFunction(void** handle, const char* hostFun, char* deviceFun,
                            const char* deviceName, int threadLimit, uint3* tid, uint3* bid,
                            dim3* bDim, dim3* gDim, int* wSize);
void __cudaRegisterVar(void** handle, char* hostVar, char* deviceAddress, const char* deviceName,
                       int ext, size_t size, int constant, int global);
unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared, CUstream_st* stream);
cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared, void* stream);
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* func);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                               size_t shared, cudaStream_t stream);
// Per-thread-default-stream forms (declared by cuda_runtime_api.h only under
// CUDA_API_PER_THREAD_DEFAULT_STREAM; exported by libcudart.so.13).
cudaError_t cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t stream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, cudaMemPool_t pool,
                                         cudaStream_t stream);
cudaError_t cudaFreeAsync_ptsz(void* devPtr, cudaStream_t stream);
}

namespace {

#define ASSERT_RT(call) ASSERT_EQ((call), cudaSuccess) << #call
#define EXPECT_RT(call) EXPECT_EQ((call), cudaSuccess) << #call

class Runtime : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_RT(cudaSetDevice(0));
    (void)cudaGetLastError();
  }
  void TearDown() override {
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a test left an error behind";
  }
};

// The runtime's stream attributes are the driver's under the runtime's names.
TEST_F(Runtime, StreamAttributesRoundTrip) {
  cudaStream_t a = nullptr, b = nullptr;
  ASSERT_RT(cudaStreamCreate(&a));
  ASSERT_RT(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  cudaLaunchAttributeValue v{};
  v.syncPolicy = cudaSyncPolicySpin;
  ASSERT_RT(cudaStreamSetAttribute(a, cudaLaunchAttributeSynchronizationPolicy, &v));
  cudaLaunchAttributeValue read{};
  ASSERT_RT(cudaStreamGetAttribute(a, cudaLaunchAttributeSynchronizationPolicy, &read));
  EXPECT_EQ(read.syncPolicy, cudaSyncPolicySpin);
  ASSERT_RT(cudaStreamCopyAttributes(b, a));
  read = {};
  ASSERT_RT(cudaStreamGetAttribute(b, cudaLaunchAttributeSynchronizationPolicy, &read));
  EXPECT_EQ(read.syncPolicy, cudaSyncPolicySpin);
  EXPECT_EQ(cudaStreamSetAttribute(a, cudaLaunchAttributeCooperative, &v), cudaErrorInvalidValue);
  EXPECT_EQ(cudaStreamGetAttribute(a, cudaLaunchAttributeSynchronizationPolicy, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue) << "the refusals set the last error";
  ASSERT_RT(cudaStreamDestroy(a));
  ASSERT_RT(cudaStreamDestroy(b));
}

// Managed memory hints through the runtime (cudaMemLocation forms of CUDA 13).
TEST_F(Runtime, ManagedHintsRoundTrip) {
  float* m = nullptr;
  ASSERT_RT(cudaMallocManaged(reinterpret_cast<void**>(&m), 1 << 20, cudaMemAttachGlobal));
  cudaMemLocation device{};
  device.type = cudaMemLocationTypeDevice;
  device.id = 0;
  ASSERT_RT(cudaMemAdvise(m, 1 << 20, cudaMemAdviseSetReadMostly, device));
  ASSERT_RT(cudaMemPrefetchAsync(m, 1 << 20, device, 0, nullptr));
  ASSERT_RT(cudaDeviceSynchronize());
  int read_mostly = 0, last = -5;
  ASSERT_RT(cudaMemRangeGetAttribute(&read_mostly, sizeof read_mostly,
                                     cudaMemRangeAttributeReadMostly, m, 1 << 20));
  EXPECT_EQ(read_mostly, 1);
  void* data[1] = {&last};
  size_t sizes[1] = {sizeof last};
  cudaMemRangeAttribute which[1] = {cudaMemRangeAttributeLastPrefetchLocation};
  ASSERT_RT(cudaMemRangeGetAttributes(data, sizes, which, 1, m, 1 << 20));
  EXPECT_EQ(last, 0);
  ASSERT_RT(cudaFree(m));
}

TEST_F(Runtime, InteropFlowZeroesEveryElement) {
  constexpr int n = 100;
  std::vector<int> host(n);
  for (int i = 0; i < n; ++i) host[i] = i + 1;
  int* dev = nullptr;
  cudaStream_t s = nullptr;
  ASSERT_RT(cudaMalloc(reinterpret_cast<void**>(&dev), n * sizeof(int)));
  ASSERT_RT(cudaStreamCreate(&s));
  ASSERT_RT(cudaMemcpyAsync(dev, host.data(), n * sizeof(int), cudaMemcpyHostToDevice, s));
  ASSERT_RT(cudaMemsetAsync(dev, 0, n * sizeof(int), s));
  ASSERT_RT(cudaMemcpyAsync(host.data(), dev, n * sizeof(int), cudaMemcpyDeviceToHost, s));
  ASSERT_RT(cudaStreamSynchronize(s));
  ASSERT_RT(cudaStreamDestroy(s));
  ASSERT_RT(cudaFree(dev));
  for (int i = 0; i < n; ++i) EXPECT_EQ(host[i], 0) << "element " << i;
}

TEST_F(Runtime, PrimaryContextIsSharedWithTheDriver) {
  CUcontext current = nullptr, primary = nullptr;
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&primary, 0), CUDA_SUCCESS);
  EXPECT_EQ(current, primary);
  unsigned flags = 0;
  int active = 0;
  ASSERT_EQ(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(active, 1);
  // Runtime memory, driver memset, runtime copy back.
  void* p = nullptr;
  ASSERT_RT(cudaMalloc(&p, 64));
  CUcontext owner = nullptr;
  ASSERT_EQ(
      cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, reinterpret_cast<CUdeviceptr>(p)),
      CUDA_SUCCESS);
  EXPECT_EQ(owner, primary);
  ASSERT_EQ(cuMemsetD8_v2(reinterpret_cast<CUdeviceptr>(p), 0x5a, 64), CUDA_SUCCESS);
  unsigned char out[64] = {};
  ASSERT_RT(cudaMemcpy(out, p, 64, cudaMemcpyDeviceToHost));
  for (unsigned char c : out) EXPECT_EQ(c, 0x5a);
  ASSERT_RT(cudaFree(p));
  ASSERT_EQ(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
}

TEST_F(Runtime, DriverStreamsAndEventsAreRuntimeHandles) {
  CUstream s = nullptr;
  ASSERT_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  unsigned flags = 99;
  ASSERT_RT(cudaStreamGetFlags(s, &flags));
  EXPECT_EQ(flags, static_cast<unsigned>(cudaStreamNonBlocking));
  cudaEvent_t e = nullptr;
  ASSERT_RT(cudaEventCreate(&e));
  ASSERT_EQ(cuEventRecord(e, s), CUDA_SUCCESS);
  ASSERT_RT(cudaStreamWaitEvent(nullptr, e, 0));
  ASSERT_RT(cudaEventSynchronize(e));
  EXPECT_EQ(cuEventQuery(e), CUDA_SUCCESS);
  ASSERT_RT(cudaEventDestroy(e));
  ASSERT_EQ(cuStreamDestroy_v2(s), CUDA_SUCCESS);
}

TEST_F(Runtime, ADriverContextMadeCurrentIsUsedByTheRuntime) {
  CUcontext mine = nullptr;
  ASSERT_EQ(cuCtxCreate_v4(&mine, nullptr, 0, 0), CUDA_SUCCESS);
  void* p = nullptr;
  ASSERT_RT(cudaMalloc(&p, 16));
  CUcontext owner = nullptr;
  ASSERT_EQ(
      cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, reinterpret_cast<CUdeviceptr>(p)),
      CUDA_SUCCESS);
  EXPECT_EQ(owner, mine);
  ASSERT_RT(cudaFree(p));
  ASSERT_EQ(cuCtxDestroy_v2(mine), CUDA_SUCCESS);
  // With the driver context gone, the runtime binds the primary context again.
  int dev = -1;
  ASSERT_RT(cudaGetDevice(&dev));
  EXPECT_EQ(dev, 0);
  CUcontext current = nullptr;
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_NE(current, nullptr);
}

TEST_F(Runtime, LastErrorIsReturnedAndClearedPerThread) {
  EXPECT_EQ(cudaSetDevice(1 << 20), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidDevice) << "peek does not clear";
  cudaError_t other = cudaErrorUnknown;
  std::thread([&] { other = cudaGetLastError(); }).join();
  EXPECT_EQ(other, cudaSuccess) << "the last error is per thread";
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "cudaGetLastError clears a non-sticky error";
  // A successful call does not clear it; the next failure replaces it.
  EXPECT_EQ(cudaMalloc(nullptr, 4), cudaErrorInvalidValue);
  int d = 0;
  EXPECT_RT(cudaGetDevice(&d));
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

TEST_F(Runtime, NotReadyIsNotAnError) {
  cudaStream_t s = nullptr;
  ASSERT_RT(cudaStreamCreate(&s));
  std::atomic<bool> release{false};
  ASSERT_RT(cudaLaunchHostFunc(
      s,
      [](void* flag) {
        while (!static_cast<std::atomic<bool>*>(flag)->load()) std::this_thread::yield();
      },
      &release));
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  release = true;
  ASSERT_RT(cudaStreamSynchronize(s));
  EXPECT_RT(cudaStreamQuery(s));
  ASSERT_RT(cudaStreamDestroy(s));
}

TEST_F(Runtime, UnsupportedFunctionsSayNotSupportedAndSetTheLastError) {
  // External semaphores have no driver support.
  EXPECT_EQ(cudaDestroyExternalSemaphore(nullptr), cudaErrorNotSupported);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNotSupported);
}

TEST(RuntimeSticky, StickyErrorsSurviveGetLastErrorUntilDeviceReset) {
  ASSERT_RT(cudaSetDevice(0));
  void* p = nullptr;
  ASSERT_RT(cudaMalloc(&p, 16));
  // The entry points record every failed result through this function; a kernel fault
  // would arrive here as cudaErrorIllegalAddress (the mock runs no kernels to fault).
  EXPECT_EQ(cudamux::rt::record(cudaErrorIllegalAddress), cudaErrorIllegalAddress);
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress) << "a sticky error is not cleared";
  void* q = nullptr;
  EXPECT_EQ(cudaMalloc(&q, 16), cudaErrorIllegalAddress) << "the context is unusable";
  cudaError_t other = cudaSuccess;
  std::thread([&] { other = cudaStreamQuery(nullptr); }).join();
  EXPECT_EQ(other, cudaErrorIllegalAddress) << "on every thread";
  ASSERT_RT(cudaDeviceReset());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_RT(cudaMalloc(&q, 16));  // (p died with the reset context)
  ASSERT_RT(cudaFree(q));
}

TEST(RuntimeErrors, EveryCodeHasItsNameAndADescription) {
  struct Row {
    int value;
    const char* name;
  };
#define CUDAMUX_RT_ERROR_NAME(V, N) Row{V, N},
  const Row rows[] = {
#include <cudamux/runtime_errors.inc>
  };
#undef CUDAMUX_RT_ERROR_NAME
  ASSERT_GT(std::size(rows), 100u);
  for (const Row& r : rows) {
    const auto e = static_cast<cudaError_t>(r.value);
    EXPECT_STREQ(cudaGetErrorName(e), r.name);
    EXPECT_STRNE(cudaGetErrorString(e), "unrecognized error code") << r.name;
  }
  EXPECT_STREQ(cudaGetErrorString(static_cast<cudaError_t>(12345)), "unrecognized error code");
  EXPECT_STREQ(cudaGetErrorName(cudaErrorInvalidMemcpyDirection),
               "cudaErrorInvalidMemcpyDirection");
}

TEST_F(Runtime, DevicePropertiesComeFromTheDeviceAttributes) {
  cudaDeviceProp p{};
  ASSERT_RT(cudaGetDeviceProperties(&p, 0));
  char name[256] = {};
  ASSERT_EQ(cuDeviceGetName(name, sizeof name, 0), CUDA_SUCCESS);
  EXPECT_STREQ(p.name, name);
  size_t total = 0;
  ASSERT_EQ(cuDeviceTotalMem_v2(&total, 0), CUDA_SUCCESS);
  EXPECT_EQ(p.totalGlobalMem, total);
  const std::pair<int, CUdevice_attribute> checks[] = {
      {p.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
      {p.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
      {p.multiProcessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
      {p.warpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE},
      {p.maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
      {p.maxGridSize[0], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X},
      {p.l2CacheSize, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE},
      {p.pciBusID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID},
      {p.managedMemory, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY},
      {p.clusterLaunch, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH}};
  for (const auto& [value, attr] : checks) {
    int expected = -1, via_runtime = -2;
    ASSERT_EQ(cuDeviceGetAttribute(&expected, attr, 0), CUDA_SUCCESS);
    EXPECT_EQ(value, expected) << "attribute " << attr;
    ASSERT_RT(cudaDeviceGetAttribute(&via_runtime, static_cast<cudaDeviceAttr>(attr), 0));
    EXPECT_EQ(via_runtime, expected) << "attribute " << attr;
  }
  EXPECT_EQ(p.warpSize, 32);
  EXPECT_GT(p.major, 0);
  int chosen = -1;
  ASSERT_RT(cudaChooseDevice(&chosen, &p));
  EXPECT_EQ(chosen, 0);
}

TEST_F(Runtime, DeviceManagementAnswers) {
  int n = 0, v = 0;
  ASSERT_RT(cudaGetDeviceCount(&n));
  EXPECT_GE(n, 1);
  ASSERT_RT(cudaRuntimeGetVersion(&v));
  EXPECT_EQ(v, CUDART_VERSION);
  ASSERT_RT(cudaDriverGetVersion(&v));
  EXPECT_GE(v, 13000);
  ASSERT_RT(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 1 << 22));
  size_t limit = 0;
  ASSERT_RT(cudaDeviceGetLimit(&limit, cudaLimitMallocHeapSize));
  EXPECT_EQ(limit, size_t{1} << 22);
  ASSERT_RT(cudaDeviceSetCacheConfig(cudaFuncCachePreferShared));
  cudaFuncCache c = cudaFuncCachePreferNone;
  ASSERT_RT(cudaDeviceGetCacheConfig(&c));
  EXPECT_EQ(c, cudaFuncCachePreferShared);
  ASSERT_RT(cudaDeviceSetCacheConfig(cudaFuncCachePreferNone));
  char bus[32] = {};
  ASSERT_RT(cudaDeviceGetPCIBusId(bus, sizeof bus, 0));
  int back = -1;
  ASSERT_RT(cudaDeviceGetByPCIBusId(&back, bus));
  EXPECT_EQ(back, 0);
  ASSERT_RT(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
  unsigned flags = 0;
  ASSERT_RT(cudaGetDeviceFlags(&flags));
  EXPECT_EQ(flags & cudaDeviceScheduleMask, static_cast<unsigned>(cudaDeviceScheduleBlockingSync));
  ASSERT_RT(cudaSetDeviceFlags(0));
  int least = 0, greatest = 0;
  ASSERT_RT(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  EXPECT_LE(greatest, least);
  ASSERT_RT(cudaDeviceSynchronize());
  size_t free = 0, total = 0;
  ASSERT_RT(cudaMemGetInfo(&free, &total));
  EXPECT_GT(total, 0u);
  EXPECT_LE(free, total);
}

TEST_F(Runtime, EveryMemcpyKindCopies) {
  int host_a[8], host_b[8] = {};
  for (int i = 0; i < 8; ++i) host_a[i] = 10 + i;
  int *d1 = nullptr, *d2 = nullptr, *pinned = nullptr, *managed = nullptr;
  ASSERT_RT(cudaMalloc(reinterpret_cast<void**>(&d1), sizeof host_a));
  ASSERT_RT(cudaMalloc(reinterpret_cast<void**>(&d2), sizeof host_a));
  ASSERT_RT(cudaHostAlloc(reinterpret_cast<void**>(&pinned), sizeof host_a, cudaHostAllocMapped));
  ASSERT_RT(
      cudaMallocManaged(reinterpret_cast<void**>(&managed), sizeof host_a, cudaMemAttachGlobal));
  ASSERT_RT(cudaMemcpy(d1, host_a, sizeof host_a, cudaMemcpyHostToDevice));
  ASSERT_RT(cudaMemcpy(d2, d1, sizeof host_a, cudaMemcpyDeviceToDevice));
  ASSERT_RT(cudaMemcpy(pinned, d2, sizeof host_a, cudaMemcpyDeviceToHost));
  ASSERT_RT(cudaMemcpy(managed, pinned, sizeof host_a, cudaMemcpyDefault));
  ASSERT_RT(cudaMemcpy(host_b, managed, sizeof host_a, cudaMemcpyHostToHost));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(host_b[i], 10 + i);
  // Managed memory is host-visible on the mock.
  EXPECT_EQ(managed[3], 13);
  unsigned flags = 0;
  ASSERT_RT(cudaHostGetFlags(&flags, pinned));
  EXPECT_TRUE(flags & cudaHostAllocMapped);
  void* mapped = nullptr;
  ASSERT_RT(cudaHostGetDevicePointer(&mapped, pinned, 0));
  EXPECT_NE(mapped, nullptr);
  ASSERT_RT(cudaFree(d1));
  ASSERT_RT(cudaFree(d2));
  ASSERT_RT(cudaFreeHost(pinned));
  ASSERT_RT(cudaFree(managed));
}

TEST_F(Runtime, PitchedAnd3DCopiesAndMemsets) {
  void* d = nullptr;
  size_t pitch = 0;
  ASSERT_RT(cudaMallocPitch(&d, &pitch, 10, 4));
  EXPECT_GE(pitch, 10u);
  ASSERT_RT(cudaMemset2D(d, pitch, 7, 10, 4));
  unsigned char rows[4][10];
  ASSERT_RT(cudaMemcpy2D(rows, 10, d, pitch, 10, 4, cudaMemcpyDeviceToHost));
  for (auto& r : rows)
    for (unsigned char c : r) EXPECT_EQ(c, 7);
  ASSERT_RT(cudaFree(d));

  cudaPitchedPtr pp{};
  const cudaExtent ext{8, 3, 2};
  ASSERT_RT(cudaMalloc3D(&pp, ext));
  ASSERT_NE(pp.ptr, nullptr);
  ASSERT_RT(cudaMemset3D(pp, 0x11, ext));
  unsigned char box[2][3][8];
  std::memset(box, 0, sizeof box);
  cudaMemcpy3DParms p{};
  p.srcPtr = pp;
  p.dstPtr = cudaPitchedPtr{box, 8, 8, 3};
  p.extent = ext;
  p.kind = cudaMemcpyDeviceToHost;
  ASSERT_RT(cudaMemcpy3D(&p));
  for (auto& plane : box)
    for (auto& r : plane)
      for (unsigned char c : r) EXPECT_EQ(c, 0x11);
  ASSERT_RT(cudaFree(pp.ptr));
}

TEST_F(Runtime, PointerAttributes) {
  void *d = nullptr, *h = nullptr, *m = nullptr;
  int stack = 0;
  ASSERT_RT(cudaMalloc(&d, 32));
  ASSERT_RT(cudaMallocHost(&h, 32));
  ASSERT_RT(cudaMallocManaged(&m, 32, cudaMemAttachGlobal));
  cudaPointerAttributes a{};
  ASSERT_RT(cudaPointerGetAttributes(&a, d));
  EXPECT_EQ(a.type, cudaMemoryTypeDevice);
  EXPECT_EQ(a.device, 0);
  EXPECT_EQ(a.devicePointer, d);
  ASSERT_RT(cudaPointerGetAttributes(&a, h));
  EXPECT_EQ(a.type, cudaMemoryTypeHost);
  EXPECT_EQ(a.hostPointer, h);
  ASSERT_RT(cudaPointerGetAttributes(&a, m));
  EXPECT_EQ(a.type, cudaMemoryTypeManaged);
  ASSERT_RT(cudaPointerGetAttributes(&a, &stack));
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered);
  ASSERT_RT(cudaFree(d));
  ASSERT_RT(cudaFreeHost(h));
  ASSERT_RT(cudaFree(m));
}

TEST_F(Runtime, HostRegistrationAndStreamOrderedPool) {
  std::vector<int> buf(256, 3);
  ASSERT_RT(cudaHostRegister(buf.data(), buf.size() * sizeof(int), cudaHostRegisterDefault));
  EXPECT_EQ(cudaHostRegister(buf.data(), 16, 0), cudaErrorHostMemoryAlreadyRegistered);
  ASSERT_RT(cudaHostUnregister(buf.data()));
  EXPECT_EQ(cudaHostUnregister(buf.data()), cudaErrorHostMemoryNotRegistered);
  (void)cudaGetLastError();
  cudaStream_t s = nullptr;
  ASSERT_RT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* p = nullptr;
  ASSERT_RT(cudaMallocAsync(&p, 1024, s));
  ASSERT_RT(cudaMemsetAsync(p, 1, 1024, s));
  unsigned char out[1024];
  ASSERT_RT(cudaMemcpyAsync(out, p, sizeof out, cudaMemcpyDeviceToHost, s));
  ASSERT_RT(cudaFreeAsync(p, s));
  ASSERT_RT(cudaStreamSynchronize(s));
  for (unsigned char c : out) ASSERT_EQ(c, 1);
  ASSERT_RT(cudaStreamDestroy(s));
}

// The runtime's pools are the driver's (core/src/mempool.cpp) under the runtime's names.
TEST_F(Runtime, MemoryPoolsOnTheDriverPools) {
  cudaMemPool_t dflt = nullptr, current = nullptr, pool = nullptr;
  ASSERT_RT(cudaDeviceGetDefaultMemPool(&dflt, 0));
  ASSERT_RT(cudaDeviceGetMemPool(&current, 0));
  EXPECT_EQ(current, dflt);
  cudaMemLocation loc{cudaMemLocationTypeDevice, 0};
  ASSERT_RT(cudaMemGetDefaultMemPool(&current, &loc, cudaMemAllocationTypePinned));
  EXPECT_EQ(current, dflt);

  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location = loc;
  ASSERT_RT(cudaMemPoolCreate(&pool, &props));
  unsigned long long keep_all = ~0ull;
  ASSERT_RT(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
  cudaMemAccessDesc desc{loc, cudaMemAccessFlagsProtReadWrite};
  ASSERT_RT(cudaMemPoolSetAccess(pool, &desc, 1));
  cudaMemAccessFlags flags = cudaMemAccessFlagsProtNone;
  ASSERT_RT(cudaMemPoolGetAccess(&flags, pool, &loc));
  EXPECT_EQ(flags, cudaMemAccessFlagsProtReadWrite);

  cudaStream_t s = nullptr;
  ASSERT_RT(cudaStreamCreate(&s));
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_RT(cudaMallocFromPoolAsync(&a, 4096, pool, s));
  ASSERT_RT(cudaMallocFromPoolAsync_ptsz(&b, 4096, pool, cudaStreamPerThread));
  unsigned long long used = 0;
  ASSERT_RT(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  EXPECT_EQ(used, 8192u);
  ASSERT_RT(cudaMemsetAsync(a, 9, 4096, s));
  unsigned char byte = 0;
  ASSERT_RT(cudaMemcpyAsync(&byte, static_cast<char*>(a) + 4095, 1, cudaMemcpyDeviceToHost, s));
  ASSERT_RT(cudaFreeAsync(a, s));
  ASSERT_RT(cudaFreeAsync_ptsz(b, cudaStreamPerThread));
  ASSERT_RT(cudaStreamSynchronize(s));
  ASSERT_RT(cudaStreamSynchronize(cudaStreamPerThread));
  EXPECT_EQ(byte, 9);
  unsigned long long reserved = 0;
  ASSERT_RT(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
  EXPECT_EQ(reserved, 8192u);
  ASSERT_RT(cudaMemPoolTrimTo(pool, 0));
  ASSERT_RT(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
  EXPECT_EQ(reserved, 0u);

  // The current pool serves cudaMallocAsync.
  ASSERT_RT(cudaDeviceSetMemPool(0, pool));
  ASSERT_RT(cudaMemGetMemPool(&current, &loc, cudaMemAllocationTypePinned));
  EXPECT_EQ(current, pool);
  ASSERT_RT(cudaMallocAsync_ptsz(&a, 512, cudaStreamPerThread));
  ASSERT_RT(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  EXPECT_EQ(used, 512u);
  ASSERT_RT(cudaFreeAsync(a, cudaStreamPerThread));
  ASSERT_RT(cudaMemSetMemPool(&loc, cudaMemAllocationTypePinned, dflt));
  ASSERT_RT(cudaStreamSynchronize(cudaStreamPerThread));
  ASSERT_RT(cudaMemPoolDestroy(pool));
  ASSERT_RT(cudaStreamDestroy(s));
}

TEST_F(Runtime, MemoryPoolSharingAndRefusals) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypePosixFileDescriptor;
  props.location = {cudaMemLocationTypeDevice, 0};
  cudaMemPool_t pool = nullptr, imported = nullptr;
  ASSERT_RT(cudaMemPoolCreate(&pool, &props));
  void* a = nullptr;
  ASSERT_RT(cudaMallocFromPoolAsync(&a, 256, pool, nullptr));
  int fd = -1;
  ASSERT_RT(cudaMemPoolExportToShareableHandle(&fd, pool, cudaMemHandleTypePosixFileDescriptor, 0));
  ASSERT_RT(cudaMemPoolImportFromShareableHandle(&imported,
                                                 reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                                 cudaMemHandleTypePosixFileDescriptor, 0));
  cudaMemPoolPtrExportData data{};
  ASSERT_RT(cudaMemPoolExportPointer(&data, a));
  void* b = nullptr;
  ASSERT_RT(cudaMemPoolImportPointer(&b, imported, &data));
  EXPECT_EQ(a, b) << "one address space";
  ASSERT_RT(cudaFreeAsync(b, nullptr));
  ASSERT_RT(cudaFreeAsync(a, nullptr));
  ASSERT_RT(cudaDeviceSynchronize());
  close(fd);
  ASSERT_RT(cudaMemPoolDestroy(imported));

  void* p = nullptr;
  EXPECT_EQ(cudaMallocFromPoolAsync(&p, 0, pool, nullptr), cudaSuccess);  // NVIDIA 580 too
  EXPECT_EQ(cudaMallocFromPoolAsync(&p, 16, nullptr, nullptr), cudaErrorInvalidValue);
  unsigned long long five = 5;
  EXPECT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &five),
            cudaErrorInvalidValue);
  props.location.id = 9999;
  EXPECT_EQ(cudaMemPoolCreate(&imported, &props), cudaErrorInvalidValue);
  EXPECT_EQ(cudaDeviceGetDefaultMemPool(&imported, 9999), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  ASSERT_RT(cudaMemPoolDestroy(pool));
  EXPECT_EQ(cudaMemPoolDestroy(pool), cudaErrorInvalidValue);
  (void)cudaGetLastError();
}

TEST_F(Runtime, StreamsEventsAndCallbacks) {
  cudaStream_t s = nullptr;
  ASSERT_RT(cudaStreamCreateWithPriority(&s, 0, -1));
  int prio = 0;
  ASSERT_RT(cudaStreamGetPriority(s, &prio));
  EXPECT_EQ(prio, -1);
  int dev = -1;
  ASSERT_RT(cudaStreamGetDevice(s, &dev));
  EXPECT_EQ(dev, 0);
  unsigned long long id = 0;
  ASSERT_RT(cudaStreamGetId(s, &id));
  EXPECT_NE(id, 0u);
  cudaEvent_t start = nullptr, stop = nullptr;
  ASSERT_RT(cudaEventCreate(&start));
  ASSERT_RT(cudaEventCreateWithFlags(&stop, cudaEventBlockingSync));
  ASSERT_RT(cudaEventRecord(start, s));
  static std::atomic<int> calls{0};
  static std::atomic<int> status{-1};
  calls = 0;
  ASSERT_RT(cudaStreamAddCallback(
      s, [](cudaStream_t, cudaError_t st, void*) { status = st, ++calls; }, nullptr, 0));
  ASSERT_RT(cudaLaunchHostFunc(
      s, [](void*) { ++calls; }, nullptr));
  ASSERT_RT(cudaEventRecordWithFlags(stop, s, cudaEventRecordDefault));
  ASSERT_RT(cudaEventSynchronize(stop));
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(status.load(), cudaSuccess);
  EXPECT_RT(cudaEventQuery(stop));
  float ms = -1;
  ASSERT_RT(cudaEventElapsedTime(&ms, start, stop));
  EXPECT_GE(ms, 0.0f);
  ASSERT_RT(cudaEventDestroy(start));
  ASSERT_RT(cudaEventDestroy(stop));
  ASSERT_RT(cudaStreamDestroy(s));
  // Per-thread default stream handle works as a stream argument.
  ASSERT_RT(cudaStreamSynchronize(cudaStreamPerThread));
  ASSERT_RT(cudaStreamSynchronize(cudaStreamLegacy));
  ASSERT_RT(cudaStreamQuery(cudaStreamLegacy));
}

TEST_F(Runtime, DriverEntryPointsComeFromOurLibcuda) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  ASSERT_RT(cudaGetDriverEntryPoint("cuMemAlloc", &fn, cudaEnableDefault, &q));
  EXPECT_EQ(q, cudaDriverEntryPointSuccess);
  ASSERT_NE(fn, nullptr);
  CUdeviceptr p = 0;
  ASSERT_EQ(reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(fn)(&p, 64), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(p), CUDA_SUCCESS);
  ASSERT_RT(cudaGetDriverEntryPointByVersion("cuStreamQuery", &fn, 13000, cudaEnableDefault, &q));
  EXPECT_EQ(q, cudaDriverEntryPointSuccess);
  // A missing symbol is reported through the status, with a null pointer.
  EXPECT_RT(cudaGetDriverEntryPoint("cuNoSuchFunction", &fn, cudaEnableDefault, &q));
  EXPECT_EQ(q, cudaDriverEntryPointSymbolNotFound);
  EXPECT_EQ(fn, nullptr);
  (void)cudaGetLastError();
}

TEST_F(Runtime, PeerAccessBookkeeping) {
  int n = 0;
  ASSERT_RT(cudaGetDeviceCount(&n));
  int can = -1;
  ASSERT_RT(cudaDeviceCanAccessPeer(&can, 0, 0));
  EXPECT_EQ(cudaDeviceEnablePeerAccess(0, 0), cudaErrorInvalidDevice)
      << "a device is not its own peer";
  EXPECT_EQ(cudaDeviceDisablePeerAccess(0), cudaErrorPeerAccessNotEnabled);
  (void)cudaGetLastError();
  if (n < 2) GTEST_SKIP() << "one device configured";
  ASSERT_RT(cudaDeviceEnablePeerAccess(1, 0));
  EXPECT_EQ(cudaDeviceEnablePeerAccess(1, 0), cudaErrorPeerAccessAlreadyEnabled);
  ASSERT_RT(cudaDeviceDisablePeerAccess(1));
  (void)cudaGetLastError();
}

// --- bad input: every implemented function answers with the runtime's error code ---

TEST_F(Runtime, BadInputGetsTheRuntimesErrorCodes) {
  EXPECT_EQ(cudaGetDeviceCount(nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetDevice(nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaSetDevice(-1), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetDeviceProperties(nullptr, 0), cudaErrorInvalidValue);
  cudaDeviceProp prop{};
  EXPECT_EQ(cudaGetDeviceProperties(&prop, 4096), cudaErrorInvalidDevice);
  int v = 0;
  EXPECT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, -3), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaDeviceGetAttribute(&v, static_cast<cudaDeviceAttr>(100000), 0),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaDeviceGetByPCIBusId(&v, "not-a-bus-id"), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaSetDeviceFlags(0x1000), cudaErrorInvalidValue);
  EXPECT_EQ(cudaDeviceSetLimit(static_cast<cudaLimit>(0x99), 1), cudaErrorUnsupportedLimit);
  EXPECT_EQ(cudaChooseDevice(nullptr, &prop), cudaErrorInvalidValue);
  EXPECT_EQ(cudaRuntimeGetVersion(nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaDriverGetVersion(nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMalloc(nullptr, 8), cudaErrorInvalidValue);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, ~size_t{0}), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaMallocHost(nullptr, 8), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMallocPitch(&p, nullptr, 8, 8), cudaErrorInvalidValue);
  int stack = 0;
  EXPECT_EQ(cudaFree(&stack), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeHost(&stack), cudaErrorInvalidValue);
  (void)cudaGetLastError();
}

TEST_F(Runtime, BadCopiesAndMemsets) {
  void* d = nullptr;
  ASSERT_RT(cudaMalloc(&d, 64));
  char host[128] = {};
  // Wrong kinds: a host side that is device memory, a device side that is pageable host memory.
  EXPECT_EQ(cudaMemcpy(d, host, 64, static_cast<cudaMemcpyKind>(7)),
            cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaMemcpy(host, d, 64, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(d, host, 64, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(host, host + 64, 64, cudaMemcpyDeviceToDevice), cudaErrorInvalidValue);
  // Sizes that overflow the allocation.
  EXPECT_EQ(cudaMemcpy(d, host, 128, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset(d, 0, 65), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset(static_cast<char*>(d) + 60, 0, ~size_t{0} - 8), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy2D(d, 8, host, 16, 16, 2, cudaMemcpyHostToDevice),
            cudaErrorInvalidPitchValue);
  EXPECT_EQ(cudaMemcpy3D(nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset2D(d, 8, 0, 16, 2), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(nullptr, host, 8, cudaMemcpyDefault), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpyPeer(d, 4096, host, 0, 8), cudaErrorInvalidDevice);
  (void)cudaGetLastError();
  ASSERT_RT(cudaFree(d));
}

TEST_F(Runtime, DestroyedStreamsAndEventsAreRejected) {
  cudaStream_t s = nullptr;
  cudaEvent_t e = nullptr;
  ASSERT_RT(cudaStreamCreate(&s));
  ASSERT_RT(cudaEventCreate(&e));
  ASSERT_RT(cudaStreamDestroy(s));
  ASSERT_RT(cudaEventDestroy(e));
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaMemsetAsync(nullptr, 0, 0, s), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventQuery(e), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventRecord(e, nullptr), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventDestroy(e), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamDestroy(nullptr), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamCreate(nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaEventCreate(nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMallocAsync(nullptr, 8, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeAsync(nullptr, nullptr), cudaSuccess);  // as NVIDIA's driver 580
  (void)cudaGetLastError();
}

// --- registration: what nvcc-generated host code does at start-up ---

int g_shadow[4] = {1, 2, 3, 4};  // the host shadow of a __device__ int[4]
void kernel_stub() {}            // a kernel's host stub
void other_kernel_stub() {}      // another program's

// What nvcc emits for a program with one kernel: a fat binary container holding its PTX
// (compute_75, uncompressed) and the wrapper __cudaRegisterFatBinary gets. The mock runs the
// PTX (issue 15); with the entry marked as sm_75 SASS (kind 2) instead, it has nothing it can
// run, and launches answer cudaErrorNoKernelImageForDevice.
constexpr char kPtx[] =
    ".version 9.0\n.target sm_75\n.address_size 64\n.visible .entry _Z6kernelv()\n{\n ret;\n}\n";
struct alignas(8) OnePtxFatbin {
  // Container header: magic, version, header size, size of what follows.
  std::uint32_t magic = 0xBA55ED50u;
  std::uint16_t version = 1, header_size = 16;
  std::uint64_t entries_size = 64 + sizeof payload;
  // Entry header (64 bytes): kind 1 = PTX, version, header size, payload size, compressed size,
  // options offset, code version minor/major, arch, identifier offset/size, flags (64-bit,
  // Linux), reserved, uncompressed size.
  std::uint16_t kind = 1, entry_version = 0x0101;
  std::uint32_t entry_header_size = 64;
  std::uint64_t payload_size = sizeof payload;
  std::uint32_t compressed_size = 0, options_offset = 0;
  std::uint16_t code_minor = 0, code_major = 9;
  std::uint32_t arch = 75, identifier_offset = 0, identifier_size = 0;
  std::uint64_t flags = 0x11, reserved = 0, uncompressed_size = 0;
  char payload[(sizeof kPtx + 7) / 8 * 8] = {};
  OnePtxFatbin() { std::memcpy(payload, kPtx, sizeof kPtx); }
};
struct FatbinWrapper {
  std::int32_t magic = 0x466243B1, version = 1;
  const void* data = nullptr;
  void* filename = nullptr;
};

class Registered : public Runtime {
 protected:
  void SetUp() override {
    Runtime::SetUp();
    register_program();
  }
  // What nvcc's registration code does at program start.
  void register_program() {
    fatbin.kind = entry_kind;
    wrapper.data = &fatbin;
    handle = __cudaRegisterFatBinary(&wrapper);
    __cudaRegisterFunction(handle, reinterpret_cast<const char*>(&kernel_stub),
                           const_cast<char*>("_Z6kernelv"), "_Z6kernelv", -1, nullptr, nullptr,
                           nullptr, nullptr, nullptr);
    __cudaRegisterVar(handle, reinterpret_cast<char*>(g_shadow), reinterpret_cast<char*>(g_shadow),
                      "g_shadow", 0, sizeof g_shadow, 0, 0);
    __cudaRegisterFatBinaryEnd(handle);
  }
  void TearDown() override {
    __cudaUnregisterFatBinary(handle);
    Runtime::TearDown();
  }
  std::uint16_t entry_kind = 2;  // SASS only: nothing the mock runs
  OnePtxFatbin fatbin;
  FatbinWrapper wrapper;
  void** handle = nullptr;
};

// The same program with its PTX: the mock translates and runs it (issue 15).
class RegisteredPtx : public Registered {
 protected:
  void SetUp() override {
    entry_kind = 1;
    Registered::SetUp();
  }
};

TEST_F(RegisteredPtx, KernelsRunFromThePtx) {
  const void* stub = reinterpret_cast<const void*>(&kernel_stub);
  ASSERT_RT(cudaLaunchKernel(stub, dim3(2), dim3(32), nullptr, 0, nullptr));
  ASSERT_RT(cudaDeviceSynchronize());
  cudaFuncAttributes attr{};
  ASSERT_RT(cudaFuncGetAttributes(&attr, stub));
  EXPECT_EQ(attr.sharedSizeBytes, 0u);
  EXPECT_GE(attr.maxThreadsPerBlock, 1024);
  cudaFunction_t f = nullptr;
  ASSERT_RT(cudaGetFuncBySymbol(&f, stub));
  EXPECT_NE(f, nullptr);
  int blocks = 0;
  ASSERT_RT(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, stub, 32, 0));
  EXPECT_GT(blocks, 0);
  // Symbols the PTX does not define keep their host shadow's storage.
  int out[4] = {};
  ASSERT_RT(cudaMemcpyFromSymbol(out, g_shadow, sizeof out));
  EXPECT_EQ(out[2], 3);
}

// Launch loops find their kernel through a per-thread memo (issue 14); a kernel whose fat
// binary went (a library unloaded with dlclose) must not be found through it, and the one
// registered in its place must be.
TEST_F(RegisteredPtx, UnregisteredKernelsAreGoneAndRegisteringAgainBringsThemBack) {
  // A second program stays registered throughout, as in a process with other libraries.
  FatbinWrapper other_wrapper;
  other_wrapper.data = &fatbin;
  void** other = __cudaRegisterFatBinary(&other_wrapper);
  __cudaRegisterFunction(other, reinterpret_cast<const char*>(&other_kernel_stub),
                         const_cast<char*>("_Z6kernelv"), "_Z6kernelv", -1, nullptr, nullptr,
                         nullptr, nullptr, nullptr);
  __cudaRegisterFatBinaryEnd(other);
  const void* stub = reinterpret_cast<const void*>(&kernel_stub);
  ASSERT_RT(cudaLaunchKernel(stub, dim3(1), dim3(32), nullptr, 0, nullptr));
  ASSERT_RT(cudaDeviceSynchronize());
  __cudaUnregisterFatBinary(handle);
  EXPECT_EQ(cudaLaunchKernel(stub, dim3(1), dim3(32), nullptr, 0, nullptr),
            cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDeviceFunction);
  register_program();
  ASSERT_RT(cudaLaunchKernel(stub, dim3(1), dim3(32), nullptr, 0, nullptr));
  ASSERT_RT(cudaLaunchKernel(reinterpret_cast<const void*>(&other_kernel_stub), dim3(1), dim3(32),
                             nullptr, 0, nullptr));
  ASSERT_RT(cudaDeviceSynchronize());
  __cudaUnregisterFatBinary(other);
}

TEST_F(Registered, MemcpyToAndFromSymbol) {
  int out[4] = {};
  ASSERT_RT(cudaMemcpyFromSymbol(out, g_shadow, sizeof out));
  EXPECT_EQ(out[2], 3) << "the device copy starts from the host shadow's bytes";
  const int in[2] = {70, 80};
  ASSERT_RT(cudaMemcpyToSymbol(g_shadow, in, sizeof in, sizeof(int)));
  ASSERT_RT(cudaMemcpyFromSymbol(out, g_shadow, sizeof out));
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(out[1], 70);
  EXPECT_EQ(out[2], 80);
  EXPECT_EQ(g_shadow[1], 2) << "the host shadow is not the device copy";
  void* addr = nullptr;
  size_t size = 0;
  ASSERT_RT(cudaGetSymbolAddress(&addr, g_shadow));
  ASSERT_RT(cudaGetSymbolSize(&size, g_shadow));
  EXPECT_EQ(size, sizeof g_shadow);
  int third = 0;
  ASSERT_RT(cudaMemcpy(&third, static_cast<int*>(addr) + 2, sizeof third, cudaMemcpyDeviceToHost));
  EXPECT_EQ(third, 80);
  cudaStream_t s = nullptr;
  ASSERT_RT(cudaStreamCreate(&s));
  ASSERT_RT(cudaMemcpyToSymbolAsync(g_shadow, in, sizeof(int), 0, cudaMemcpyHostToDevice, s));
  ASSERT_RT(cudaMemcpyFromSymbolAsync(out, g_shadow, sizeof(int), 0, cudaMemcpyDeviceToHost, s));
  ASSERT_RT(cudaStreamSynchronize(s));
  EXPECT_EQ(out[0], 70);
  ASSERT_RT(cudaStreamDestroy(s));
}

TEST_F(Registered, BadSymbolCopies) {
  int unregistered = 0, buf[8] = {};
  EXPECT_EQ(cudaMemcpyToSymbol(&unregistered, buf, 4), cudaErrorInvalidSymbol);
  EXPECT_EQ(cudaMemcpyToSymbol(g_shadow, buf, sizeof buf), cudaErrorInvalidValue)
      << "past the variable";
  EXPECT_EQ(cudaMemcpyToSymbol(g_shadow, buf, 4, ~size_t{0}), cudaErrorInvalidValue)
      << "offset overflow";
  EXPECT_EQ(cudaMemcpyToSymbol(g_shadow, buf, 4, 0, cudaMemcpyDeviceToHost),
            cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaMemcpyFromSymbol(buf, g_shadow, 4, 0, cudaMemcpyHostToDevice),
            cudaErrorInvalidMemcpyDirection);
  void* addr = nullptr;
  EXPECT_EQ(cudaGetSymbolAddress(&addr, &unregistered), cudaErrorInvalidSymbol);
  (void)cudaGetLastError();
}

TEST_F(Registered, LaunchingARegisteredKernelExplainsWhyItCannotRun) {
  EXPECT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&kernel_stub), dim3(1), dim3(32),
                             nullptr, 0, nullptr),
            cudaErrorNoKernelImageForDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNoKernelImageForDevice);
  int not_a_kernel = 0;
  EXPECT_EQ(cudaLaunchKernel(&not_a_kernel, dim3(1), dim3(1), nullptr, 0, nullptr),
            cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&kernel_stub), dim3(0), dim3(32),
                             nullptr, 0, nullptr),
            cudaErrorInvalidConfiguration);
  // The CUDA 13 launch path of nvcc-generated code.
  cudaKernel_t k = nullptr;
  ASSERT_RT(__cudaGetKernel(&k, reinterpret_cast<const void*>(&kernel_stub)));
  EXPECT_EQ(__cudaLaunchKernel(k, dim3(1), dim3(1), nullptr, 0, nullptr),
            cudaErrorNoKernelImageForDevice);
  EXPECT_EQ(__cudaGetKernel(&k, &not_a_kernel), cudaErrorInvalidDeviceFunction);
  (void)cudaGetLastError();
}

TEST_F(Registered, KernelFunctionsOnARegisteredStub) {
  const void* stub = reinterpret_cast<const void*>(&kernel_stub);
  const char* name = nullptr;
  ASSERT_RT(cudaFuncGetName(&name, stub));
  EXPECT_STREQ(name, "_Z6kernelv") << "the name nvcc registered, known without the code";
  cudaKernel_t k = nullptr, hook = nullptr;
  ASSERT_RT(cudaGetKernel(&k, stub));
  ASSERT_RT(__cudaGetKernel(&hook, stub));
  EXPECT_EQ(k, hook) << "cudaGetKernel and nvcc's hook give one handle";
  cudaKernel_t same = nullptr;
  ASSERT_RT(cudaGetKernel(&same, k));
  EXPECT_EQ(same, k);
  ASSERT_RT(cudaFuncGetName(&name, k));
  EXPECT_STREQ(name, "_Z6kernelv");
  // Everything that needs the kernel's code explains that it cannot run here.
  cudaFuncAttributes attr;
  EXPECT_EQ(cudaFuncGetAttributes(&attr, stub), cudaErrorNoKernelImageForDevice);
  EXPECT_EQ(cudaFuncSetAttribute(stub, cudaFuncAttributeMaxDynamicSharedMemorySize, 0),
            cudaErrorNoKernelImageForDevice);
  EXPECT_EQ(cudaFuncSetCacheConfig(stub, cudaFuncCachePreferL1), cudaErrorNoKernelImageForDevice);
  cudaFunction_t f = nullptr;
  EXPECT_EQ(cudaGetFuncBySymbol(&f, stub), cudaErrorNoKernelImageForDevice);
  int blocks = 0;
  EXPECT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, stub, 32, 0),
            cudaErrorNoKernelImageForDevice);
  EXPECT_EQ(cudaLaunchCooperativeKernel(stub, dim3(1), dim3(1), nullptr, 0, nullptr),
            cudaErrorNoKernelImageForDevice);
  EXPECT_EQ(cudaLaunchKernel(k, dim3(1), dim3(1), nullptr, 0, nullptr),
            cudaErrorNoKernelImageForDevice)
      << "the __cudaGetKernel handle through cudaLaunchKernel";
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(1);
  config.blockDim = dim3(1);
  EXPECT_EQ(cudaLaunchKernelExC(&config, stub, nullptr), cudaErrorNoKernelImageForDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNoKernelImageForDevice);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "not sticky";
  int not_a_kernel = 0;
  EXPECT_EQ(cudaGetKernel(&k, &not_a_kernel), cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(cudaGetKernel(nullptr, stub), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFuncGetName(nullptr, stub), cudaErrorInvalidValue);
  (void)cudaGetLastError();
}

TEST(RuntimeLaunchConfig, PushAndPopCallConfiguration) {
  dim3 g, b;
  size_t shared = 0;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(0x1);
  EXPECT_EQ(__cudaPopCallConfiguration(&g, &b, &shared, &s), cudaErrorMissingConfiguration);
  EXPECT_EQ(__cudaPushCallConfiguration(dim3(4, 2), dim3(64), 128, nullptr), 0u);
  ASSERT_RT(__cudaPopCallConfiguration(&g, &b, &shared, &s));
  EXPECT_EQ(g.x, 4u);
  EXPECT_EQ(g.y, 2u);
  EXPECT_EQ(g.z, 1u);
  EXPECT_EQ(b.x, 64u);
  EXPECT_EQ(shared, 128u);
  EXPECT_EQ(s, nullptr);
}

}  // namespace
