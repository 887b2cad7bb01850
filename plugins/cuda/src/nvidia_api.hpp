// NVIDIA's driver functions the cuda backend calls, resolved by dlsym from a handle to
// NVIDIA's libcuda.so.1 (never through the global symbol scope, where ours live).
#pragma once

#include <cuda.h>

namespace cudamux::cuda {

// Every function the backend calls, by its exported (versioned) name. A library that
// lacks one of these is not a usable NVIDIA driver.
#define CUDAMUX_NVIDIA_FUNCTIONS(X)                                                                \
  X(cuInit)                                                                                        \
  X(cuDriverGetVersion)                                                                            \
  X(cuGetErrorName)                                                                                \
  X(cuGetErrorString)                                                                              \
  X(cuDeviceGetCount)                                                                              \
  X(cuDeviceGet)                                                                                   \
  X(cuDeviceGetName)                                                                               \
  X(cuDeviceGetUuid_v2)                                                                            \
  X(cuDeviceTotalMem_v2)                                                                           \
  X(cuDeviceGetAttribute)                                                                          \
  X(cuDeviceCanAccessPeer) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease_v2)             \
      X(cuDevicePrimaryCtxSetFlags_v2) X(cuDevicePrimaryCtxGetState) X(cuCtxCreate_v4) X(          \
          cuCtxDestroy_v2) X(cuCtxSetCurrent) X(cuCtxPopCurrent_v2) X(cuMemGetInfo_v2)             \
          X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemAllocManaged) \
              X(cuMemHostRegister_v2) X(cuMemHostUnregister) X(cuMemHostGetDevicePointer_v2)       \
                  X(cuStreamCreateWithPriority) X(cuStreamDestroy_v2) X(cuStreamQuery)             \
                      X(cuStreamSynchronize) X(cuStreamWaitEvent) X(cuLaunchHostFunc)              \
                          X(cuEventCreate) X(cuEventDestroy_v2) X(cuEventRecord) X(cuEventQuery)   \
                              X(cuEventSynchronize) X(cuEventElapsedTime_v2) X(cuMemcpyAsync)      \
                                  X(cuMemcpy2DAsync_v2) X(cuMemcpy3DAsync_v2) X(cuMemsetD8Async)   \
                                      X(cuMemsetD16Async) X(cuMemsetD32Async) X(cuMemsetD2D8Async) \
                                          X(cuMemsetD2D16Async) X(cuMemsetD2D32Async)              \
                                              CUDAMUX_NVIDIA_MODULE_FUNCTIONS(X)                   \
                                                  CUDAMUX_NVIDIA_SYNC_COPY_FUNCTIONS(X)

// Modules and launches (issue 7). cuModuleEnumerateFunctions and cuFuncGetParamInfo
// arrived with CUDA 12.4: older drivers are refused (cudamux presents CUDA 13.0).
#define CUDAMUX_NVIDIA_MODULE_FUNCTIONS(X)                \
  X(cuModuleLoadData)                                     \
  X(cuModuleUnload)                                       \
  X(cuModuleGetFunction)                                  \
  X(cuModuleGetGlobal_v2)                                 \
  X(cuModuleGetFunctionCount)                             \
  X(cuModuleEnumerateFunctions)                           \
  X(cuFuncGetName)                                        \
  X(cuFuncGetParamInfo)                                   \
  X(cuFuncGetAttribute)                                   \
  X(cuFuncSetAttribute)                                   \
  X(cuLaunchKernel)                                       \
  X(cuLaunchCooperativeKernel)                            \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags) \
  X(cuOccupancyAvailableDynamicSMemPerBlock)              \
  X(cuCtxGetLimit)                                        \
  X(cuCtxSetLimit)

// NVIDIA's synchronous copies, for large pageable host-to-device copies on an idle queue
// (NvidiaQueue::copy_sync).
#define CUDAMUX_NVIDIA_SYNC_COPY_FUNCTIONS(X) \
  X(cuMemcpyHtoD_v2)                          \
  X(cuMemcpy2D_v2)                            \
  X(cuMemcpy3D_v2)

// Resolved when the driver has them, null otherwise; the backend works without them.
// cuLaunchKernelEx (CUDA 12.0): thread block cluster launches (NvidiaQueue::launch); without
// it the backend reports no cluster support and the core refuses cluster launches.
// cuOccupancyMaxActiveClusters / MaxPotentialClusterSize (12.0) likewise; cuStreamSetAttribute
// (11.0): without it stream attributes stay the core's record only.
#define CUDAMUX_NVIDIA_OPTIONAL_FUNCTIONS(X)                                     \
  X(cuLaunchKernelEx)                                                            \
  X(cuOccupancyMaxActiveClusters)                                                \
  X(cuOccupancyMaxPotentialClusterSize)                                          \
  X(cuStreamSetAttribute)                                                        \
  X(cuCtxResetPersistingL2Cache)                                                 \
  X(cuMemAdvise_v2)                                                              \
  X(cuMemPrefetchAsync_v2)                                                       \
  CUDAMUX_NVIDIA_VMM_FUNCTIONS(X)                                                \
  CUDAMUX_NVIDIA_HOST_FUNCTIONS(X) CUDAMUX_NVIDIA_GRAPH_FUNCTIONS(X)             \
      CUDAMUX_NVIDIA_CONDITIONAL_FUNCTIONS(X) CUDAMUX_NVIDIA_LINK_FUNCTIONS(X)   \
          CUDAMUX_NVIDIA_PEER_FUNCTIONS(X) CUDAMUX_NVIDIA_MEMOP_IPC_FUNCTIONS(X) \
              CUDAMUX_NVIDIA_IMAGE_FUNCTIONS(X) CUDAMUX_NVIDIA_POOL_FUNCTIONS(X) \
                  X(cuMemGetDefaultMemPool)

// NVIDIA's linker (cuLink*, NvidiaContext::link); without one of them the backend has none.
#define CUDAMUX_NVIDIA_LINK_FUNCTIONS(X) \
  X(cuLinkCreate_v2) X(cuLinkAddData_v2) X(cuLinkComplete) X(cuLinkDestroy)

// Stream memory operations (11.7 for the _v2 forms) and IPC (issue 17), passed through; without
// one the backend answers that it has none (the core returns CUDA_ERROR_NOT_SUPPORTED).
#define CUDAMUX_NVIDIA_MEMOP_IPC_FUNCTIONS(X) \
  X(cuStreamWaitValue32_v2)                   \
  X(cuStreamWaitValue64_v2)                   \
  X(cuStreamWriteValue32_v2)                  \
  X(cuStreamWriteValue64_v2)                  \
  X(cuIpcGetMemHandle)                        \
  X(cuIpcOpenMemHandle_v2)                    \
  X(cuIpcCloseMemHandle) X(cuIpcGetEventHandle) X(cuIpcOpenEventHandle) X(cuMemGetAddressRange_v2)

// Stream-ordered memory pools (11.2), NVIDIA's own (issue 16: NvidiaPools, pools.cpp); without
// any one of them the core's pools serve. cuMemGetDefaultMemPool (13.0, optional on its own)
// names the default pools of the host and of managed memory.
#define CUDAMUX_NVIDIA_POOL_FUNCTIONS(X) \
  X(cuMemPoolCreate)                     \
  X(cuMemPoolDestroy)                    \
  X(cuDeviceGetDefaultMemPool)           \
  X(cuMemPoolSetAttribute)               \
  X(cuMemPoolGetAttribute)               \
  X(cuMemPoolTrimTo)                     \
  X(cuMemPoolSetAccess)                  \
  X(cuMemPoolGetAccess)                  \
  X(cuMemPoolExportToShareableHandle)    \
  X(cuMemPoolImportFromShareableHandle)  \
  X(cuMemPoolExportPointer) X(cuMemPoolImportPointer) X(cuMemAllocFromPoolAsync) X(cuMemFreeAsync)

// CUDA arrays (issue 17: NvidiaImages, images.cpp); without any one of them the backend offers
// no images. cuCtxPushCurrent_v2 / cuCtxPopCurrent_v2 lend a context without disturbing what
// the thread has current.
#define CUDAMUX_NVIDIA_IMAGE_FUNCTIONS(X) \
  X(cuArray3DCreate_v2)                   \
  X(cuArrayDestroy)                       \
  X(cuMipmappedArrayCreate)               \
  X(cuMipmappedArrayGetLevel)             \
  X(cuMipmappedArrayDestroy)              \
  X(cuCtxPushCurrent_v2)                  \
  X(cuTexObjectCreate)                    \
  X(cuTexObjectDestroy) X(cuSurfObjectCreate) X(cuSurfObjectDestroy) X(cuCtxGetCurrent)

// CUDA graphs run by NVIDIA (issue 16: NvidiaQueue::capture_graph); without any one of them the
// core replays graphs itself.
#define CUDAMUX_NVIDIA_GRAPH_FUNCTIONS(X) \
  X(cuStreamBeginCapture_v2)              \
  X(cuStreamEndCapture)                   \
  X(cuGraphInstantiateWithFlags)          \
  X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy) X(cuEventRecordWithFlags)

// Conditional nodes run by NVIDIA (NvidiaContext::create_cond_scope, NvidiaQueue::conditional):
// NVIDIA's kernels set NVIDIA's handles, so the handles, the graph they belong to and the
// nodes must all be NVIDIA's. Without any one of them the backend has no conditional nodes.
#define CUDAMUX_NVIDIA_CONDITIONAL_FUNCTIONS(X) \
  X(cuGraphCreate)                              \
  X(cuGraphConditionalHandleCreate)             \
  X(cuGraphAddNode_v2)                          \
  X(cuGraphGetNodes)                            \
  X(cuGraphDestroyNode)                         \
  X(cuStreamGetCaptureInfo_v3)                  \
  X(cuStreamUpdateCaptureDependencies_v2) X(cuStreamBeginCaptureToGraph)

// Peer access between NVIDIA contexts and the P2P link queries (issue 17:
// NvidiaContext::enable_peer_access, NvidiaDevices::p2p_attribute); without them peer access
// is the core's record only and link attributes are derived from cuDeviceCanAccessPeer.
#define CUDAMUX_NVIDIA_PEER_FUNCTIONS(X) \
  X(cuCtxEnablePeerAccess)               \
  X(cuCtxDisablePeerAccess) X(cuDeviceGetP2PAttribute) X(cuDeviceGetP2PAtomicCapabilities)

// Host-only encoders handed to the core as they are (Backend::native_host_function).
#define CUDAMUX_NVIDIA_HOST_FUNCTIONS(X) \
  X(cuTensorMapEncodeTiled)              \
  X(cuTensorMapEncodeIm2col) X(cuTensorMapEncodeIm2colWide) X(cuTensorMapReplaceAddress)

// Virtual memory management (10.2), passed through whole (NvidiaVirtualMemory); without any
// one of them the backend offers none.
#define CUDAMUX_NVIDIA_VMM_FUNCTIONS(X) \
  X(cuMemGetAllocationGranularity)      \
  X(cuMemAddressReserve)                \
  X(cuMemAddressFree)                   \
  X(cuMemCreate)                        \
  X(cuMemRelease)                       \
  X(cuMemMap)                           \
  X(cuMemUnmap)                         \
  X(cuMemSetAccess)                     \
  X(cuMemExportToShareableHandle)       \
  X(cuMemImportFromShareableHandle) X(cuMemGetAllocationPropertiesFromHandle)

struct NvidiaApi {
#define CUDAMUX_NVIDIA_MEMBER(name) decltype(&::name) name = nullptr;
  CUDAMUX_NVIDIA_FUNCTIONS(CUDAMUX_NVIDIA_MEMBER)
  CUDAMUX_NVIDIA_OPTIONAL_FUNCTIONS(CUDAMUX_NVIDIA_MEMBER)
#undef CUDAMUX_NVIDIA_MEMBER
};

}  // namespace cudamux::cuda
