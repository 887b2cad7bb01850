// Runtime API: kernels. Launches, function attributes, occupancy, libraries and kernel
// handles, on the driver's module/launch entry points (module.cpp, launch.cpp).
//
// A `const void* func` argument may be (CUDA 12+):
//  - a host stub nvcc registered (__cudaRegisterFunction), or CUDA 13's kernel handle for one
//    (__cudaGetKernel): found by exact address in the registry (rt_module.cpp), whose fat
//    binary is loaded into the current context on first use; a backend that runs nothing in
//    it answers cudaErrorNoKernelImageForDevice with a log line;
//  - a cudaKernel_t (CUkernel, cudaLibraryGetKernel) or a CUfunction cast to `const void*`:
//    found in the core's handle tables, which decode the value (tag, slot, generation)
//    without ever dereferencing it, so a garbage pointer is just "not found".
// Registered stubs are looked up first: they are exact addresses, while a stub's address
// could in principle decode as a live handle.
#include <array>
#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>

#include "cudamux/driver_impl.hpp"
#include "cudamux/runtime_impl.hpp"
#include "rt_internal.hpp"

namespace cudamux::rt {
namespace {

namespace drv = cudamux::impl;

// The runtime's and the driver's launch attributes are one layout (same ids, same value
// union); cudaLaunchKernelExC hands the array over as is.
static_assert(sizeof(cudaLaunchAttribute) == sizeof(CUlaunchAttribute));
static_assert(offsetof(cudaLaunchAttribute, val) == offsetof(CUlaunchAttribute, value));
static_assert(static_cast<int>(cudaLaunchAttributeCooperative) ==
                  static_cast<int>(CU_LAUNCH_ATTRIBUTE_COOPERATIVE) &&
              static_cast<int>(cudaLaunchAttributeClusterDimension) ==
                  static_cast<int>(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION));
static_assert(offsetof(cudaLaunchAttributeValue, clusterDim.z) ==
              offsetof(CUlaunchAttributeValue, clusterDim.z));
static_assert(static_cast<int>(cudaFuncAttributeMaxDynamicSharedMemorySize) ==
                  static_cast<int>(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) &&
              static_cast<int>(cudaFuncAttributeClusterSchedulingPolicyPreference) ==
                  static_cast<int>(CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE));
static_assert(static_cast<int>(cudaFuncCachePreferEqual) ==
              static_cast<int>(CU_FUNC_CACHE_PREFER_EQUAL));
static_assert(static_cast<int>(cudaJitPositionIndependentCode) ==
              static_cast<int>(CU_JIT_POSITION_INDEPENDENT_CODE));
static_assert(static_cast<int>(cudaLibraryBinaryIsPreserved) ==
              static_cast<int>(CU_LIBRARY_BINARY_IS_PRESERVED));

// What a `const void* func` names.
struct Target {
  const void* record = nullptr;   // a registered nvcc kernel
  CUkernel kernel = nullptr;      // a cudaKernel_t
  CUfunction function = nullptr;  // a CUfunction, or the CUkernel cast to one (the driver's
                                  // launches and occupancy calls accept both)
};

cudaError_t resolve(const void* func, Target& t, const char* api) noexcept {
  if (!func) return reject(cudaErrorInvalidDeviceFunction, api, "null function");
  if ((t.record = registered(func))) return cudaSuccess;
  const auto value = reinterpret_cast<std::uintptr_t>(func);
  core::Core& core = core::Core::get();
  if (core.kernels.find(value)) {
    t.kernel = reinterpret_cast<CUkernel>(const_cast<void*>(func));
    t.function = reinterpret_cast<CUfunction>(const_cast<void*>(func));
    return cudaSuccess;
  }
  if (core.functions.find(value)) {
    t.function = reinterpret_cast<CUfunction>(const_cast<void*>(func));
    return cudaSuccess;
  }
  return reject(cudaErrorInvalidDeviceFunction, api,
                "neither a registered kernel, a cudaKernel_t nor a CUfunction");
}

// The CUfunction of `t` in the current context (a kernel's is loaded on demand).
cudaError_t function_here(const Target& t, CUfunction& out, const char* api) noexcept {
  if (t.record) return registered_function(t.record, out, api);
  if (t.kernel) return map(drv::cuKernelGetFunction(&out, t.kernel));
  out = t.function;
  return cudaSuccess;
}

// Launch limits of a device, read once (they never change while the process runs).
struct DeviceLimits {
  unsigned long long block[3]{}, grid[3]{}, threads = 0, shared_optin = 0;
};
DeviceLimits read_limits(int dev) noexcept {
  auto get = [dev](CUdevice_attribute a) -> unsigned long long {
    int v = 0;
    return drv::cuDeviceGetAttribute(&v, a, dev) == CUDA_SUCCESS && v > 0
               ? static_cast<unsigned long long>(v)
               : ULLONG_MAX;  // unknown: let the driver decide
  };
  DeviceLimits l;
  l.block[0] = get(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
  l.block[1] = get(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
  l.block[2] = get(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
  l.grid[0] = get(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  l.grid[1] = get(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  l.grid[2] = get(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
  l.threads = get(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  l.shared_optin = get(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  if (l.shared_optin == ULLONG_MAX)
    l.shared_optin = get(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  return l;
}
// Read on every launch: one acquire load once known (std::call_once cost a library call).
const DeviceLimits& device_limits(int dev) noexcept {
  constexpr int kCached = 64;
  static std::array<std::atomic<const DeviceLimits*>, kCached> cache{};
  if (dev < 0 || dev >= kCached) {
    thread_local DeviceLimits uncached;
    uncached = read_limits(dev);
    return uncached;
  }
  auto& slot = cache[static_cast<std::size_t>(dev)];
  if (const DeviceLimits* hit = slot.load(std::memory_order_acquire)) return *hit;
  const auto* fresh = new (std::nothrow) DeviceLimits(read_limits(dev));  // lives for the process
  if (!fresh) {
    thread_local DeviceLimits unstored;
    unstored = read_limits(dev);
    return unstored;
  }
  const DeviceLimits* expected = nullptr;
  if (!slot.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
    delete fresh;  // another thread published the same values first
    return *expected;
  }
  return *fresh;
}

}  // namespace

void warm_launch_limits(int device) noexcept { (void)device_limits(device); }

namespace {

// The runtime's configuration errors (NVIDIA documents cudaErrorInvalidConfiguration for
// zero or too large dimensions, too many threads, and more shared memory per block than the
// device has). The driver would say CUDA_ERROR_INVALID_VALUE for these. Dynamic shared memory
// within the device's opt-in maximum but above the kernel's current limit is left to the
// driver: cudaErrorInvalidValue until cudaFuncSetAttribute raises the limit.
cudaError_t check_config(dim3 grid, dim3 block, std::size_t shared, const char* api) noexcept {
  const unsigned g[3] = {grid.x, grid.y, grid.z}, b[3] = {block.x, block.y, block.z};
  const DeviceLimits& l = device_limits(current_device());
  unsigned long long threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (g[i] == 0 || b[i] == 0)
      return reject(cudaErrorInvalidConfiguration, api, "a grid or block dimension is 0");
    if (b[i] > l.block[i])
      return reject(cudaErrorInvalidConfiguration, api,
                    "a block dimension above the device's maximum");
    if (g[i] > l.grid[i])
      return reject(cudaErrorInvalidConfiguration, api,
                    "a grid dimension above the device's maximum");
    threads *= b[i];
  }
  if (threads > l.threads)
    return reject(cudaErrorInvalidConfiguration, api,
                  "more threads per block than the device allows");
  if (shared > l.shared_optin || shared > UINT_MAX)
    return reject(cudaErrorInvalidConfiguration, api,
                  "more dynamic shared memory per block than the device has");
  return cudaSuccess;
}

// Launches `t` after the runtime's checks; `cooperative` picks cuLaunchCooperativeKernel.
cudaError_t launch(const char* api, const void* func, dim3 grid, dim3 block, void** args,
                   std::size_t shared, cudaStream_t stream, bool pt, bool cooperative) noexcept {
  if (cudaError_t e = enter()) return e;
  Target t;
  if (cudaError_t e = resolve(func, t, api)) return e;
  if (cudaError_t e = check_config(grid, block, shared, api)) return e;
  if (t.record) {
    if (cudaError_t e = registered_function(t.record, t.function, api)) return e;
  }
  const auto sh = static_cast<unsigned>(shared);  // <= UINT_MAX: checked above
  CUresult r;
  if (cooperative) {
    r = pt ? drv::cuLaunchCooperativeKernel_ptsz(t.function, grid.x, grid.y, grid.z, block.x,
                                                 block.y, block.z, sh, stream, args)
           : drv::cuLaunchCooperativeKernel(t.function, grid.x, grid.y, grid.z, block.x, block.y,
                                            block.z, sh, stream, args);
  } else {
    r = pt ? drv::cuLaunchKernel_ptsz(t.function, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                      sh, stream, args, nullptr)
           : drv::cuLaunchKernel(t.function, grid.x, grid.y, grid.z, block.x, block.y, block.z, sh,
                                 stream, args, nullptr);
  }
  return map(r);
}

cudaError_t launch_ex(const cudaLaunchConfig_t* config, const void* func, void** args,
                      bool pt) noexcept {
  const char* api = "cudaLaunchKernelExC";
  if (cudaError_t e = enter()) return e;
  if (!config) return reject(cudaErrorInvalidValue, api, "null config");
  if (config->numAttrs > 0 && !config->attrs)
    return reject(cudaErrorInvalidValue, api, "attributes counted but the array is null");
  Target t;
  if (cudaError_t e = resolve(func, t, api)) return e;
  if (cudaError_t e =
          check_config(config->gridDim, config->blockDim, config->dynamicSmemBytes, api))
    return e;
  if (t.record) {
    if (cudaError_t e = registered_function(t.record, t.function, api)) return e;
  }
  // The driver honours cooperative launches and the scheduling/cache hints; it checks
  // cluster dimensions against the grid and passes them to a backend that runs clusters
  // (CUDA_ERROR_NOT_SUPPORTED, with a warning, on the others).
  CUlaunchConfig c{};
  c.gridDimX = config->gridDim.x;
  c.gridDimY = config->gridDim.y;
  c.gridDimZ = config->gridDim.z;
  c.blockDimX = config->blockDim.x;
  c.blockDimY = config->blockDim.y;
  c.blockDimZ = config->blockDim.z;
  c.sharedMemBytes = static_cast<unsigned>(config->dynamicSmemBytes);
  c.hStream = config->stream;
  c.attrs = reinterpret_cast<CUlaunchAttribute*>(config->attrs);
  c.numAttrs = config->numAttrs;
  return map(pt ? drv::cuLaunchKernelEx_ptsz(&c, t.function, args, nullptr)
                : drv::cuLaunchKernelEx(&c, t.function, args, nullptr));
}

// Resolves `func` after enter(), loading a registered kernel's code (occupancy and attributes
// need code the backend runs): t.function is then set for every kind of target.
cudaError_t runnable(const void* func, Target& t, const char* api) noexcept {
  if (cudaError_t e = enter()) return e;
  if (cudaError_t e = resolve(func, t, api)) return e;
  return t.record ? registered_function(t.record, t.function, api) : cudaSuccess;
}

}  // namespace
}  // namespace cudamux::rt

namespace cudamux::rt::impl {

namespace drv = cudamux::impl;

// --- launches ---

cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                             size_t sharedMem, cudaStream_t stream) {
  return launch("cudaLaunchKernel", func, gridDim, blockDim, args, sharedMem, stream, false, false);
}
cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                  size_t sharedMem, cudaStream_t stream) {
  return launch("cudaLaunchKernel", func, gridDim, blockDim, args, sharedMem, stream, true, false);
}
cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                        size_t sharedMem, cudaStream_t stream) {
  return launch("cudaLaunchCooperativeKernel", func, gridDim, blockDim, args, sharedMem, stream,
                false, true);
}
cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim,
                                             void** args, size_t sharedMem, cudaStream_t stream) {
  return launch("cudaLaunchCooperativeKernel", func, gridDim, blockDim, args, sharedMem, stream,
                true, true);
}
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  return launch_ex(config, func, args, false);
}
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func,
                                     void** args) {
  return launch_ex(config, func, args, true);
}

// --- function attributes ---

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  const char* api = "cudaFuncGetAttributes";
  if (!attr) return reject(cudaErrorInvalidValue, api, "null out-pointer");
  Target t;
  if (cudaError_t e = runnable(func, t, api)) return e;
  CUfunction f = nullptr;
  if (cudaError_t e = function_here(t, f, api)) return e;
  cudaFuncAttributes a{};
  int v = 0;
  auto get = [&](CUfunction_attribute which) {
    v = 0;
    return map(drv::cuFuncGetAttribute(&v, which, f));
  };
  // Each field from the driver's attribute of the same meaning.
#define CUDAMUX_RT_FIELD(field, which, type) \
  if (cudaError_t e = get(which)) return e;  \
  a.field = static_cast<type>(v);
  CUDAMUX_RT_FIELD(sharedSizeBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, std::size_t)
  CUDAMUX_RT_FIELD(constSizeBytes, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, std::size_t)
  CUDAMUX_RT_FIELD(localSizeBytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, std::size_t)
  CUDAMUX_RT_FIELD(maxThreadsPerBlock, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, int)
  CUDAMUX_RT_FIELD(numRegs, CU_FUNC_ATTRIBUTE_NUM_REGS, int)
  CUDAMUX_RT_FIELD(ptxVersion, CU_FUNC_ATTRIBUTE_PTX_VERSION, int)
  CUDAMUX_RT_FIELD(binaryVersion, CU_FUNC_ATTRIBUTE_BINARY_VERSION, int)
  CUDAMUX_RT_FIELD(cacheModeCA, CU_FUNC_ATTRIBUTE_CACHE_MODE_CA, int)
  CUDAMUX_RT_FIELD(maxDynamicSharedSizeBytes, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int)
  CUDAMUX_RT_FIELD(preferredShmemCarveout, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, int)
  CUDAMUX_RT_FIELD(clusterDimMustBeSet, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, int)
  CUDAMUX_RT_FIELD(requiredClusterWidth, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, int)
  CUDAMUX_RT_FIELD(requiredClusterHeight, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, int)
  CUDAMUX_RT_FIELD(requiredClusterDepth, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, int)
  CUDAMUX_RT_FIELD(clusterSchedulingPolicyPreference,
                   CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, int)
  CUDAMUX_RT_FIELD(nonPortableClusterSizeAllowed,
                   CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, int)
#undef CUDAMUX_RT_FIELD
  *attr = a;
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  const char* api = "cudaFuncSetAttribute";
  Target t;
  if (cudaError_t e = runnable(func, t, api)) return e;
  if (attr < cudaFuncAttributeMaxDynamicSharedMemorySize || attr >= cudaFuncAttributeMax)
    return reject(cudaErrorInvalidValue, api, "not a cudaFuncAttribute");
  const auto which = static_cast<CUfunction_attribute>(attr);
  // A kernel's value applies to its function in every context of the device (the driver
  // remembers it for contexts loaded later).
  if (t.kernel) return map(drv::cuKernelSetAttribute(which, value, t.kernel, current_device()));
  return map(drv::cuFuncSetAttribute(t.function, which, value));
}

cudaError_t cudaFuncSetCacheConfig(const void* func, cudaFuncCache cacheConfig) {
  const char* api = "cudaFuncSetCacheConfig";
  Target t;
  if (cudaError_t e = runnable(func, t, api)) return e;
  const auto config = static_cast<CUfunc_cache>(cacheConfig);
  if (t.kernel) return map(drv::cuKernelSetCacheConfig(t.kernel, config, current_device()));
  return map(drv::cuFuncSetCacheConfig(t.function, config));
}

cudaError_t cudaFuncGetName(const char** name, const void* func) {
  const char* api = "cudaFuncGetName";
  if (!name) return reject(cudaErrorInvalidValue, api, "null out-pointer");
  if (cudaError_t e = enter()) return e;
  Target t;
  if (cudaError_t e = resolve(func, t, api)) return e;
  // A registered kernel's name is known without its code.
  if (t.record) {
    *name = registered_name(t.record);
    return cudaSuccess;
  }
  if (t.kernel) return map(drv::cuKernelGetName(name, t.kernel));
  return map(drv::cuFuncGetName(name, t.function));
}

// --- occupancy ---

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, const void* func,
                                                          int blockSize, size_t dynamicSMemSize) {
  Target t;
  if (cudaError_t e = runnable(func, t, "cudaOccupancyMaxActiveBlocksPerMultiprocessor")) return e;
  return map(drv::cuOccupancyMaxActiveBlocksPerMultiprocessor(numBlocks, t.function, blockSize,
                                                              dynamicSMemSize));
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks, const void* func,
                                                                   int blockSize,
                                                                   size_t dynamicSMemSize,
                                                                   unsigned int flags) {
  Target t;
  if (cudaError_t e = runnable(func, t, "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags"))
    return e;
  // cudaOccupancyDefault / cudaOccupancyDisableCachingOverride are the driver's values.
  return map(drv::cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
      numBlocks, t.function, blockSize, dynamicSMemSize, flags));
}
cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t* dynamicSmemSize, const void* func,
                                                      int numBlocks, int blockSize) {
  Target t;
  if (cudaError_t e = runnable(func, t, "cudaOccupancyAvailableDynamicSMemPerBlock")) return e;
  return map(drv::cuOccupancyAvailableDynamicSMemPerBlock(dynamicSmemSize, t.function, numBlocks,
                                                          blockSize));
}

// --- libraries and kernel handles ---

cudaError_t cudaLibraryLoadData(cudaLibrary_t* library, const void* code, cudaJitOption* jitOptions,
                                void** jitOptionsValues, unsigned int numJitOptions,
                                cudaLibraryOption* libraryOptions, void** libraryOptionValues,
                                unsigned int numLibraryOptions) {
  if (cudaError_t e = enter()) return e;
  // cudaJitOption and cudaLibraryOption are subsets of the driver's enums, same values.
  return map(drv::cuLibraryLoadData(
      library, code, reinterpret_cast<CUjit_option*>(jitOptions), jitOptionsValues, numJitOptions,
      reinterpret_cast<CUlibraryOption*>(libraryOptions), libraryOptionValues, numLibraryOptions));
}
cudaError_t cudaLibraryLoadFromFile(cudaLibrary_t* library, const char* fileName,
                                    cudaJitOption* jitOptions, void** jitOptionsValues,
                                    unsigned int numJitOptions, cudaLibraryOption* libraryOptions,
                                    void** libraryOptionValues, unsigned int numLibraryOptions) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuLibraryLoadFromFile(
      library, fileName, reinterpret_cast<CUjit_option*>(jitOptions), jitOptionsValues,
      numJitOptions, reinterpret_cast<CUlibraryOption*>(libraryOptions), libraryOptionValues,
      numLibraryOptions));
}
cudaError_t cudaLibraryUnload(cudaLibrary_t library) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuLibraryUnload(library));
}
cudaError_t cudaLibraryGetKernel(cudaKernel_t* pKernel, cudaLibrary_t library, const char* name) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuLibraryGetKernel(pKernel, library, name));
}
cudaError_t cudaLibraryGetKernelCount(unsigned int* count, cudaLibrary_t lib) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuLibraryGetKernelCount(count, lib));
}
cudaError_t cudaLibraryEnumerateKernels(cudaKernel_t* kernels, unsigned int numKernels,
                                        cudaLibrary_t lib) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuLibraryEnumerateKernels(kernels, numKernels, lib));
}
cudaError_t cudaLibraryGetGlobal(void** dptr, size_t* bytes, cudaLibrary_t library,
                                 const char* name) {
  if (cudaError_t e = enter()) return e;
  if (!dptr && !bytes)
    return reject(cudaErrorInvalidValue, "cudaLibraryGetGlobal", "both out-pointers null");
  CUdeviceptr p = 0;
  if (cudaError_t e = map(drv::cuLibraryGetGlobal(&p, bytes, library, name))) return e;
  if (dptr) *dptr = reinterpret_cast<void*>(p);
  return cudaSuccess;
}

cudaError_t cudaKernelSetAttributeForDevice(cudaKernel_t kernel, cudaFuncAttribute attr, int value,
                                            int device) {
  const char* api = "cudaKernelSetAttributeForDevice";
  Target t;
  if (cudaError_t e = runnable(kernel, t, api)) return e;
  if (!t.kernel) return reject(cudaErrorInvalidDeviceFunction, api, "not a cudaKernel_t");
  if (attr < cudaFuncAttributeMaxDynamicSharedMemorySize || attr >= cudaFuncAttributeMax)
    return reject(cudaErrorInvalidValue, api, "not a cudaFuncAttribute");
  const auto which = static_cast<CUfunction_attribute>(attr);
  if (device == current_device())
    return map(drv::cuKernelSetAttribute(which, value, t.kernel, device));
  // The driver sets a kernel's attribute through a context on that device: the device's
  // primary context, current for the duration of the call.
  CUcontext ctx = nullptr;
  if (cudaError_t e = primary_context(device, ctx)) return e;
  if (cudaError_t e = map(drv::cuCtxPushCurrent_v2(ctx))) return e;
  const cudaError_t e = map(drv::cuKernelSetAttribute(which, value, t.kernel, device));
  CUcontext popped = nullptr;
  (void)drv::cuCtxPopCurrent_v2(&popped);
  return e;
}

cudaError_t cudaGetFuncBySymbol(cudaFunction_t* functionPtr, const void* symbolPtr) {
  const char* api = "cudaGetFuncBySymbol";
  if (!functionPtr) return reject(cudaErrorInvalidValue, api, "null out-pointer");
  Target t;
  if (cudaError_t e = runnable(symbolPtr, t, api)) return e;
  CUfunction f = nullptr;
  if (cudaError_t e = function_here(t, f, api)) return e;
  *functionPtr = f;
  return cudaSuccess;
}

cudaError_t cudaGetKernel(cudaKernel_t* kernelPtr, const void* entryFuncAddr) {
  const char* api = "cudaGetKernel";
  if (!kernelPtr) return reject(cudaErrorInvalidValue, api, "null out-pointer");
  Target t;
  if (cudaError_t e = resolve(entryFuncAddr, t, api)) return e;
  // A registered stub's kernel handle is its registry record (as __cudaGetKernel gives);
  // a cudaKernel_t is its own.
  if (t.record) {
    *kernelPtr = reinterpret_cast<cudaKernel_t>(const_cast<void*>(t.record));
    return cudaSuccess;
  }
  if (t.kernel) {
    *kernelPtr = t.kernel;
    return cudaSuccess;
  }
  return reject(cudaErrorInvalidDeviceFunction, api, "a CUfunction has no kernel handle");
}

}  // namespace cudamux::rt::impl
