// Runtime API: device management, on the driver's device and context functions.
#include <dlfcn.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "cudamux/driver_impl.hpp"
#include "cudamux/log.hpp"
#include "cudamux/runtime_impl.hpp"
#include "rt_internal.hpp"

namespace cudamux::rt {
namespace {

namespace drv = cudamux::impl;

// The runtime reports a missing symbol through driverStatus, not its result (its
// documented results are success, invalid value and not supported).
cudaError_t entry_point_result(CUresult r, void** funcPtr) noexcept {
  if (r == CUDA_ERROR_NOT_FOUND) {
    if (funcPtr) *funcPtr = nullptr;
    return cudaSuccess;
  }
  return map(r);
}

// cuGetProcAddress lives in libcuda.so.1 (its table holds libcuda's entry points), so
// the runtime asks our libcuda beside this core library, never another one on the path.
using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);
GetProcAddress driver_get_proc_address() noexcept {
  static const GetProcAddress fn = []() -> GetProcAddress {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&driver_get_proc_address), &info) || !info.dli_fname)
      return nullptr;
    std::string path = info.dli_fname;
    path = path.substr(0, path.find_last_of('/') + 1) + "libcuda.so.1";
    void* lib = dlopen(path.c_str(),
                       RTLD_NOW | RTLD_GLOBAL);  // never closed: its entry points are handed out
    if (!lib) {
      try {
        log::get()->error("cudaGetDriverEntryPoint: cannot load {}: {}", path, dlerror());
      } catch (...) {
      }
      return nullptr;
    }
    return reinterpret_cast<GetProcAddress>(dlsym(lib, "cuGetProcAddress_v2"));
  }();
  return fn;
}

cudaError_t valid_device(int device, const char* fn) noexcept {
  if (cudaError_t e = ensure_init()) return e;
  if (!core::Core::get().valid_device(device))
    return reject(cudaErrorInvalidDevice, fn, "no such device");
  return cudaSuccess;
}

}  // namespace
}  // namespace cudamux::rt

namespace cudamux::rt::impl {

namespace drv = cudamux::impl;

cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return reject(cudaErrorInvalidValue, "cudaGetDeviceCount", "null out-pointer");
  if (cudaError_t e = ensure_init()) {
    *count = 0;
    return e;
  }
  return map(drv::cuDeviceGetCount(count));
}

cudaError_t cudaSetDevice(int device) {
  if (cudaError_t e = valid_device(device, "cudaSetDevice")) return e;
  CUcontext h = nullptr;
  if (cudaError_t e = primary_context(device, h)) return e;
  // Like NVIDIA's runtime: the device's primary context replaces the current one.
  core::set_current_context(h);
  detail::t_state.device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (!device) return reject(cudaErrorInvalidValue, "cudaGetDevice", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  // enter() left a live context current: one handle lookup answers.
  if (const core::Context* ctx = core::context_of(core::current_context_handle())) [[likely]] {
    *device = ctx->device;
    return cudaSuccess;
  }
  *device = current_device();
  return cudaSuccess;
}

cudaError_t cudaInitDevice(int device, unsigned int deviceFlags, unsigned int flags) {
  if (flags != 0) return reject(cudaErrorInvalidValue, "cudaInitDevice", "flags must be 0");
  if (cudaError_t e = valid_device(device, "cudaInitDevice")) return e;
  if (deviceFlags != 0) {
    if (const CUresult r = drv::cuDevicePrimaryCtxSetFlags_v2(device, deviceFlags)) return map(r);
  }
  CUcontext h = nullptr;
  return primary_context(device, h);
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (!prop) return reject(cudaErrorInvalidValue, "cudaGetDeviceProperties", "null out-pointer");
  if (cudaError_t e = valid_device(device, "cudaGetDeviceProperties")) return e;
  cudaDeviceProp p;
  std::memset(&p, 0, sizeof p);
  CUresult failed = CUDA_SUCCESS;
  auto A = [&](CUdevice_attribute attr) {
    int v = 0;
    if (const CUresult r = drv::cuDeviceGetAttribute(&v, attr, device); r && !failed) failed = r;
    return v;
  };
  auto Z = [&](CUdevice_attribute attr) { return static_cast<std::size_t>(A(attr)); };
  auto U = [&](CUdevice_attribute attr) { return static_cast<unsigned>(A(attr)); };
  if (const CUresult r = drv::cuDeviceGetName(p.name, sizeof p.name, device)) return map(r);
  CUuuid uuid{};
  if (const CUresult r = drv::cuDeviceGetUuid_v2(&uuid, device)) return map(r);
  std::memcpy(&p.uuid, &uuid, sizeof uuid);
  if (const CUresult r = drv::cuDeviceTotalMem_v2(&p.totalGlobalMem, device)) return map(r);
  p.sharedMemPerBlock = Z(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  p.regsPerBlock = A(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  p.warpSize = A(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  p.memPitch = Z(CU_DEVICE_ATTRIBUTE_MAX_PITCH);
  p.maxThreadsPerBlock = A(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  p.maxThreadsDim[0] = A(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
  p.maxThreadsDim[1] = A(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
  p.maxThreadsDim[2] = A(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
  p.maxGridSize[0] = A(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  p.maxGridSize[1] = A(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  p.maxGridSize[2] = A(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
  p.totalConstMem = Z(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY);
  p.major = A(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  p.minor = A(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  p.textureAlignment = Z(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT);
  p.texturePitchAlignment = Z(CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT);
  p.multiProcessorCount = A(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  p.integrated = A(CU_DEVICE_ATTRIBUTE_INTEGRATED);
  p.canMapHostMemory = A(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY);
  p.maxTexture1D = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH);
  p.maxTexture1DMipmap = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH);
  p.maxTexture2D[0] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH);
  p.maxTexture2D[1] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT);
  p.maxTexture2DMipmap[0] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH);
  p.maxTexture2DMipmap[1] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT);
  p.maxTexture2DLinear[0] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH);
  p.maxTexture2DLinear[1] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT);
  p.maxTexture2DLinear[2] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH);
  p.maxTexture2DGather[0] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH);
  p.maxTexture2DGather[1] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT);
  p.maxTexture3D[0] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH);
  p.maxTexture3D[1] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT);
  p.maxTexture3D[2] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH);
  p.maxTexture3DAlt[0] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE);
  p.maxTexture3DAlt[1] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE);
  p.maxTexture3DAlt[2] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE);
  p.maxTextureCubemap = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH);
  p.maxTexture1DLayered[0] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH);
  p.maxTexture1DLayered[1] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS);
  p.maxTexture2DLayered[0] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH);
  p.maxTexture2DLayered[1] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT);
  p.maxTexture2DLayered[2] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS);
  p.maxTextureCubemapLayered[0] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH);
  p.maxTextureCubemapLayered[1] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS);
  p.maxSurface1D = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH);
  p.maxSurface2D[0] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH);
  p.maxSurface2D[1] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT);
  p.maxSurface3D[0] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH);
  p.maxSurface3D[1] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT);
  p.maxSurface3D[2] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH);
  p.maxSurface1DLayered[0] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH);
  p.maxSurface1DLayered[1] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS);
  p.maxSurface2DLayered[0] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH);
  p.maxSurface2DLayered[1] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT);
  p.maxSurface2DLayered[2] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS);
  p.maxSurfaceCubemap = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH);
  p.maxSurfaceCubemapLayered[0] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH);
  p.maxSurfaceCubemapLayered[1] = A(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS);
  p.surfaceAlignment = Z(CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT);
  p.concurrentKernels = A(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS);
  p.ECCEnabled = A(CU_DEVICE_ATTRIBUTE_ECC_ENABLED);
  p.pciBusID = A(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
  p.pciDeviceID = A(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
  p.pciDomainID = A(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
  p.tccDriver = A(CU_DEVICE_ATTRIBUTE_TCC_DRIVER);
  p.asyncEngineCount = A(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT);
  p.unifiedAddressing = A(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING);
  p.memoryBusWidth = A(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  p.l2CacheSize = A(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  p.persistingL2CacheMaxSize = A(CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE);
  p.maxThreadsPerMultiProcessor = A(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  p.streamPrioritiesSupported = A(CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED);
  p.globalL1CacheSupported = A(CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED);
  p.localL1CacheSupported = A(CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED);
  p.sharedMemPerMultiprocessor = Z(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  p.regsPerMultiprocessor = A(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  p.managedMemory = A(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY);
  p.isMultiGpuBoard = A(CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD);
  p.multiGpuBoardGroupID = A(CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID);
  p.hostNativeAtomicSupported = A(CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED);
  p.pageableMemoryAccess = A(CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS);
  p.concurrentManagedAccess = A(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS);
  p.computePreemptionSupported = A(CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED);
  p.canUseHostPointerForRegisteredMem =
      A(CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM);
  p.cooperativeLaunch = A(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH);
  p.sharedMemPerBlockOptin = Z(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  p.pageableMemoryAccessUsesHostPageTables =
      A(CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES);
  p.directManagedMemAccessFromHost = A(CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST);
  p.maxBlocksPerMultiProcessor = A(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  p.accessPolicyMaxWindowSize = A(CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE);
  p.reservedSharedMemPerBlock = Z(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
  p.hostRegisterSupported = A(CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED);
  p.sparseCudaArraySupported = A(CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED);
  p.hostRegisterReadOnlySupported = A(CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED);
  p.timelineSemaphoreInteropSupported = A(CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED);
  p.memoryPoolsSupported = A(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED);
  p.gpuDirectRDMASupported = A(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED);
  p.gpuDirectRDMAFlushWritesOptions = U(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS);
  p.gpuDirectRDMAWritesOrdering = A(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING);
  p.memoryPoolSupportedHandleTypes = U(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES);
  p.deferredMappingCudaArraySupported =
      A(CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED);
  p.ipcEventSupported = A(CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED);
  p.clusterLaunch = A(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH);
  p.unifiedFunctionPointers = A(CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS);
  p.deviceNumaConfig = A(CU_DEVICE_ATTRIBUTE_NUMA_CONFIG);
  p.deviceNumaId = A(CU_DEVICE_ATTRIBUTE_NUMA_ID);
  p.mpsEnabled = A(CU_DEVICE_ATTRIBUTE_MPS_ENABLED);
  p.hostNumaId = A(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID);
  p.gpuPciDeviceID = U(CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID);
  p.gpuPciSubsystemID = U(CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID);
  p.hostNumaMultinodeIpcSupported = A(CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED);
  if (failed) return map(failed);
  *prop = p;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (!value) return reject(cudaErrorInvalidValue, "cudaDeviceGetAttribute", "null out-pointer");
  if (cudaError_t e = valid_device(device, "cudaDeviceGetAttribute")) return e;
  // cudaDeviceAttr and CUdevice_attribute share their numbering (checked by a test).
  return map(drv::cuDeviceGetAttribute(value, static_cast<CUdevice_attribute>(attr), device));
}

cudaError_t cudaChooseDevice(int* device, const cudaDeviceProp* prop) {
  if (!device || !prop) return reject(cudaErrorInvalidValue, "cudaChooseDevice", "null pointer");
  if (cudaError_t e = ensure_init()) return e;
  // The closest compute capability at or above the requested one, else the highest.
  int best = 0, best_score = -1;
  for (int d = 0; d < core::Core::get().device_count(); ++d) {
    int major = 0, minor = 0;
    (void)drv::cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
    (void)drv::cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
    const int cc = major * 10 + minor, want = prop->major * 10 + prop->minor;
    const int score = cc >= want ? 100000 - (cc - want) : cc;
    if (score > best_score) best = d, best_score = score;
  }
  *device = best;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuCtxSynchronize());
}

cudaError_t cudaDeviceReset() {
  if (cudaError_t e = ensure_init()) return e;
  core::Context* ctx = nullptr;
  const int device =
      core::current_context(ctx) == CUDA_SUCCESS && ctx ? ctx->device : detail::t_state.device;
  // Destroys the primary context and everything in it (streams, events, memory); the
  // next runtime call on any thread creates it anew.
  if (const CUresult r = drv::cuDevicePrimaryCtxReset_v2(device)) return map(r);
  after_reset(device);
  // The sticky error this thread recorded died with the context.
  if (is_sticky(detail::t_state.last_error)) detail::t_state.last_error = cudaSuccess;
  return cudaSuccess;
}

cudaError_t cudaSetDeviceFlags(unsigned int flags) {
  constexpr unsigned kValid =
      cudaDeviceScheduleMask | cudaDeviceMapHost | cudaDeviceLmemResizeToMax | cudaDeviceSyncMemops;
  if (flags & ~kValid)
    return reject(cudaErrorInvalidValue, "cudaSetDeviceFlags", "unknown flag bits");
  if (cudaError_t e = ensure_init()) return e;
  core::Context* ctx = nullptr;
  const int device =
      core::current_context(ctx) == CUDA_SUCCESS && ctx ? ctx->device : detail::t_state.device;
  // The flag bits are the driver's context flags; applies to the active primary context too.
  return map(drv::cuDevicePrimaryCtxSetFlags_v2(device, flags));
}

cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  if (!flags) return reject(cudaErrorInvalidValue, "cudaGetDeviceFlags", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  return map(drv::cuCtxGetFlags(flags));
}

cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int device) {
  if (!pciBusId || len <= 0)
    return reject(cudaErrorInvalidValue, "cudaDeviceGetPCIBusId", "null buffer or length");
  if (cudaError_t e = valid_device(device, "cudaDeviceGetPCIBusId")) return e;
  return map(drv::cuDeviceGetPCIBusId(pciBusId, len, device));
}

cudaError_t cudaDeviceGetByPCIBusId(int* device, const char* pciBusId) {
  if (!device || !pciBusId)
    return reject(cudaErrorInvalidValue, "cudaDeviceGetByPCIBusId", "null pointer");
  if (cudaError_t e = ensure_init()) return e;
  const CUresult r = drv::cuDeviceGetByPCIBusId(device, pciBusId);
  // An id no device has is an invalid device for the runtime.
  return r == CUDA_ERROR_INVALID_VALUE
             ? reject(cudaErrorInvalidDevice, "cudaDeviceGetByPCIBusId", "no such bus id")
             : map(r);
}

// The runtime's cudaLimit names fewer limits than the driver's CUlimit: past them, the
// runtime's own documented answer.
constexpr unsigned kRuntimeLimits = cudaLimitPersistingL2CacheSize + 1;

cudaError_t cudaDeviceSetLimit(cudaLimit limit, size_t value) {
  if (static_cast<unsigned>(limit) >= kRuntimeLimits)
    return reject(cudaErrorUnsupportedLimit, "cudaDeviceSetLimit", "unknown limit");
  if (cudaError_t e = enter()) return e;
  return map(drv::cuCtxSetLimit(static_cast<CUlimit>(limit), value));
}

cudaError_t cudaDeviceGetLimit(size_t* pValue, cudaLimit limit) {
  if (!pValue) return reject(cudaErrorInvalidValue, "cudaDeviceGetLimit", "null out-pointer");
  if (static_cast<unsigned>(limit) >= kRuntimeLimits)
    return reject(cudaErrorUnsupportedLimit, "cudaDeviceGetLimit", "unknown limit");
  if (cudaError_t e = enter()) return e;
  return map(drv::cuCtxGetLimit(pValue, static_cast<CUlimit>(limit)));
}

cudaError_t cudaCtxResetPersistingL2Cache() {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuCtxResetPersistingL2Cache());
}

cudaError_t cudaDeviceGetCacheConfig(cudaFuncCache* pCacheConfig) {
  if (!pCacheConfig)
    return reject(cudaErrorInvalidValue, "cudaDeviceGetCacheConfig", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  CUfunc_cache c = CU_FUNC_CACHE_PREFER_NONE;
  if (const CUresult r = drv::cuCtxGetCacheConfig(&c)) return map(r);
  *pCacheConfig = static_cast<cudaFuncCache>(c);
  return cudaSuccess;
}

cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache cacheConfig) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuCtxSetCacheConfig(static_cast<CUfunc_cache>(cacheConfig)));
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuCtxGetStreamPriorityRange(leastPriority, greatestPriority));
}

cudaError_t cudaDeviceCanAccessPeer(int* canAccessPeer, int device, int peerDevice) {
  if (!canAccessPeer)
    return reject(cudaErrorInvalidValue, "cudaDeviceCanAccessPeer", "null out-pointer");
  if (cudaError_t e = valid_device(device, "cudaDeviceCanAccessPeer")) return e;
  if (cudaError_t e = valid_device(peerDevice, "cudaDeviceCanAccessPeer")) return e;
  return map(drv::cuDeviceCanAccessPeer(canAccessPeer, device, peerDevice));
}

cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags) {
  if (flags != 0)
    return reject(cudaErrorInvalidValue, "cudaDeviceEnablePeerAccess", "flags must be 0");
  if (cudaError_t e = enter()) return e;
  if (cudaError_t e = valid_device(peerDevice, "cudaDeviceEnablePeerAccess")) return e;
  if (peerDevice == current_device())
    return reject(cudaErrorInvalidDevice, "cudaDeviceEnablePeerAccess",
                  "a device is not its own peer");
  // The current context reaches the peer device's primary context (the runtime's own), as
  // NVIDIA's runtime does; the driver records the pair and checks the rest.
  CUcontext peer = nullptr;
  if (cudaError_t e = primary_context(peerDevice, peer)) return e;
  return map(drv::cuCtxEnablePeerAccess(peer, 0));
}

cudaError_t cudaDeviceDisablePeerAccess(int peerDevice) {
  if (cudaError_t e = enter()) return e;
  if (cudaError_t e = valid_device(peerDevice, "cudaDeviceDisablePeerAccess")) return e;
  CUcontext peer = nullptr;
  if (cudaError_t e = primary_context(peerDevice, peer)) return e;
  return map(drv::cuCtxDisablePeerAccess(peer));
}

cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** funcPtr, unsigned long long flags,
                                    cudaDriverEntryPointQueryResult* driverStatus) {
  if (cudaError_t e = ensure_init()) return e;
  const GetProcAddress get = driver_get_proc_address();
  if (!get)
    return reject(cudaErrorNotSupported, "cudaGetDriverEntryPoint",
                  "libcuda.so.1 not found beside the core");
  return entry_point_result(get(symbol, funcPtr, CUDART_VERSION, flags,
                                reinterpret_cast<CUdriverProcAddressQueryResult*>(driverStatus)),
                            funcPtr);
}
cudaError_t cudaGetDriverEntryPoint_ptsz(const char* symbol, void** funcPtr,
                                         unsigned long long flags,
                                         cudaDriverEntryPointQueryResult* driverStatus) {
  // Per-thread mode: a query that names no stream flavor asks for the per-thread one.
  if ((flags & (cudaEnableLegacyStream | cudaEnablePerThreadDefaultStream)) == 0)
    flags |= cudaEnablePerThreadDefaultStream;
  return cudamux::rt::impl::cudaGetDriverEntryPoint(symbol, funcPtr, flags, driverStatus);
}

cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** funcPtr,
                                             unsigned int cudaVersion, unsigned long long flags,
                                             cudaDriverEntryPointQueryResult* driverStatus) {
  if (cudaError_t e = ensure_init()) return e;
  const GetProcAddress get = driver_get_proc_address();
  if (!get)
    return reject(cudaErrorNotSupported, "cudaGetDriverEntryPointByVersion",
                  "libcuda.so.1 not found beside the core");
  return entry_point_result(get(symbol, funcPtr, static_cast<int>(cudaVersion), flags,
                                reinterpret_cast<CUdriverProcAddressQueryResult*>(driverStatus)),
                            funcPtr);
}
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char* symbol, void** funcPtr,
                                                  unsigned int cudaVersion,
                                                  unsigned long long flags,
                                                  cudaDriverEntryPointQueryResult* driverStatus) {
  if ((flags & (cudaEnableLegacyStream | cudaEnablePerThreadDefaultStream)) == 0)
    flags |= cudaEnablePerThreadDefaultStream;
  return cudamux::rt::impl::cudaGetDriverEntryPointByVersion(symbol, funcPtr, cudaVersion, flags,
                                                             driverStatus);
}

cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w, cudaChannelFormatKind f) {
  cudaChannelFormatDesc d;
  d.x = x;
  d.y = y;
  d.z = z;
  d.w = w;
  d.f = f;
  return d;
}

}  // namespace cudamux::rt::impl

namespace cudamux::rt::impl {
cudaError_t cudaProfilerStart() {
  if (cudaError_t e = enter()) return e;
  return map(cudamux::impl::cuProfilerStart());
}
cudaError_t cudaProfilerStop() {
  if (cudaError_t e = enter()) return e;
  return map(cudamux::impl::cuProfilerStop());
}
// Error log management: one log for the driver and the runtime, kept by the driver.
cudaError_t cudaLogsRegisterCallback(cudaLogsCallback_t callbackFunc, void* userData,
                                     cudaLogsCallbackHandle* callback_out) {
  if (cudaError_t e = enter()) return e;
  return map(cudamux::impl::cuLogsRegisterCallback(reinterpret_cast<CUlogsCallback>(callbackFunc),
                                                   userData, callback_out));
}

cudaError_t cudaLogsUnregisterCallback(cudaLogsCallbackHandle callback) {
  if (cudaError_t e = enter()) return e;
  return map(cudamux::impl::cuLogsUnregisterCallback(callback));
}

cudaError_t cudaLogsCurrent(cudaLogIterator* iterator_out, unsigned int flags) {
  if (cudaError_t e = enter()) return e;
  return map(cudamux::impl::cuLogsCurrent(iterator_out, flags));
}

cudaError_t cudaLogsDumpToFile(cudaLogIterator* iterator, const char* pathToFile,
                               unsigned int flags) {
  if (cudaError_t e = enter()) return e;
  return map(cudamux::impl::cuLogsDumpToFile(iterator, pathToFile, flags));
}

cudaError_t cudaLogsDumpToMemory(cudaLogIterator* iterator, char* buffer, size_t* size,
                                 unsigned int flags) {
  if (cudaError_t e = enter()) return e;
  return map(cudamux::impl::cuLogsDumpToMemory(iterator, buffer, size, flags));
}
}  // namespace cudamux::rt::impl
