// Runtime API: graphs, executable graphs, stream capture and user objects (issue 16), as thin
// layers over the driver's entry points (graph.cpp, graph_exec.cpp, capture.cpp).
// cudaGraph_t, cudaGraphNode_t, cudaGraphExec_t and cudaUserObject_t are the driver's handles;
// the runtime's enums (node types, capture modes and statuses, update and instantiate results,
// user object flags) have the driver's values, and cudaGraphEdgeData,
// cudaGraphInstantiateParams and cudaGraphExecUpdateResultInfo its layouts (checked below).
// What differs is converted field by field here:
//  - cudaKernelNodeParams(V2).func is a registered host stub, CUDA 13's kernel handle of one,
//    a cudaKernel_t or a CUfunction (as for cudaLaunchKernel, rt_kernel.cpp). A registered
//    kernel becomes the CUfunction of its module in the current context, and GetParams gives
//    back what the program gave for it (remembered per CUfunction); a cudaKernel_t goes to the
//    driver as the node's CUkernel and comes back as itself. Kernel nodes captured from a
//    launch of a registered kernel that no graph call ever named report the CUfunction.
//  - cudaMemcpy3DParms (pitched pointers, positions and extents in bytes; with an array end,
//    in that array's elements, issue 17) becomes CUDA_MEMCPY3D; the
//    cudaMemcpyKind picks the sides' memory types (cudaMemcpyDefault: unified addressing,
//    CU_MEMORYTYPE_UNIFIED on both sides), and GetParams derives the kind back from them.
//    GetParams reports a side's cudaPitchedPtr.xsize as the copy's width in bytes (the driver
//    keeps no other).
//  - cudaMemsetParams / cudaHostNodeParams / cudaGraphNodeParams: the driver's structs with a
//    context (the current one) or a different union member layout.
#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "../array.hpp"
#include "cudamux/driver_impl.hpp"
#include "cudamux/log.hpp"
#include "cudamux/runtime_impl.hpp"
#include "rt_internal.hpp"

namespace cudamux::rt {
namespace {

namespace drv = cudamux::impl;

// --- the runtime's types against the driver's ---

static_assert(sizeof(cudaGraphEdgeData) == sizeof(CUgraphEdgeData) &&
              offsetof(cudaGraphEdgeData, from_port) == offsetof(CUgraphEdgeData, from_port) &&
              offsetof(cudaGraphEdgeData, to_port) == offsetof(CUgraphEdgeData, to_port) &&
              offsetof(cudaGraphEdgeData, type) == offsetof(CUgraphEdgeData, type));
static_assert(static_cast<int>(cudaGraphNodeTypeKernel) == CU_GRAPH_NODE_TYPE_KERNEL &&
              static_cast<int>(cudaGraphNodeTypeMemcpy) == CU_GRAPH_NODE_TYPE_MEMCPY &&
              static_cast<int>(cudaGraphNodeTypeMemset) == CU_GRAPH_NODE_TYPE_MEMSET &&
              static_cast<int>(cudaGraphNodeTypeHost) == CU_GRAPH_NODE_TYPE_HOST &&
              static_cast<int>(cudaGraphNodeTypeGraph) == CU_GRAPH_NODE_TYPE_GRAPH &&
              static_cast<int>(cudaGraphNodeTypeEmpty) == CU_GRAPH_NODE_TYPE_EMPTY &&
              static_cast<int>(cudaGraphNodeTypeWaitEvent) == CU_GRAPH_NODE_TYPE_WAIT_EVENT &&
              static_cast<int>(cudaGraphNodeTypeEventRecord) == CU_GRAPH_NODE_TYPE_EVENT_RECORD &&
              static_cast<int>(cudaGraphNodeTypeExtSemaphoreSignal) ==
                  CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL &&
              static_cast<int>(cudaGraphNodeTypeExtSemaphoreWait) ==
                  CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT &&
              static_cast<int>(cudaGraphNodeTypeMemAlloc) == CU_GRAPH_NODE_TYPE_MEM_ALLOC &&
              static_cast<int>(cudaGraphNodeTypeMemFree) == CU_GRAPH_NODE_TYPE_MEM_FREE &&
              static_cast<int>(cudaGraphNodeTypeConditional) == CU_GRAPH_NODE_TYPE_CONDITIONAL);
static_assert(static_cast<int>(cudaStreamCaptureModeGlobal) == CU_STREAM_CAPTURE_MODE_GLOBAL &&
              static_cast<int>(cudaStreamCaptureModeThreadLocal) ==
                  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
              static_cast<int>(cudaStreamCaptureModeRelaxed) == CU_STREAM_CAPTURE_MODE_RELAXED);
static_assert(sizeof(cudaStreamCaptureMode) == sizeof(CUstreamCaptureMode));
static_assert(static_cast<int>(cudaStreamCaptureStatusNone) == CU_STREAM_CAPTURE_STATUS_NONE &&
              static_cast<int>(cudaStreamCaptureStatusActive) == CU_STREAM_CAPTURE_STATUS_ACTIVE &&
              static_cast<int>(cudaStreamCaptureStatusInvalidated) ==
                  CU_STREAM_CAPTURE_STATUS_INVALIDATED);
static_assert(static_cast<int>(cudaStreamAddCaptureDependencies) ==
                  CU_STREAM_ADD_CAPTURE_DEPENDENCIES &&
              static_cast<int>(cudaStreamSetCaptureDependencies) ==
                  CU_STREAM_SET_CAPTURE_DEPENDENCIES);
static_assert(static_cast<int>(cudaGraphExecUpdateSuccess) == CU_GRAPH_EXEC_UPDATE_SUCCESS &&
              static_cast<int>(cudaGraphExecUpdateErrorTopologyChanged) ==
                  CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED &&
              static_cast<int>(cudaGraphExecUpdateErrorNodeTypeChanged) ==
                  CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED &&
              static_cast<int>(cudaGraphExecUpdateErrorFunctionChanged) ==
                  CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED &&
              static_cast<int>(cudaGraphExecUpdateErrorParametersChanged) ==
                  CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED &&
              static_cast<int>(cudaGraphExecUpdateErrorNotSupported) ==
                  CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED &&
              static_cast<int>(cudaGraphExecUpdateErrorUnsupportedFunctionChange) ==
                  CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE &&
              static_cast<int>(cudaGraphExecUpdateErrorAttributesChanged) ==
                  CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED);
static_assert(static_cast<int>(cudaGraphInstantiateSuccess) == CUDA_GRAPH_INSTANTIATE_SUCCESS &&
              static_cast<int>(cudaGraphInstantiateInvalidStructure) ==
                  CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE &&
              static_cast<int>(cudaGraphInstantiateNodeOperationNotSupported) ==
                  CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED &&
              static_cast<int>(cudaGraphInstantiateConditionalHandleUnused) ==
                  CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED);
static_assert(static_cast<int>(cudaGraphInstantiateFlagAutoFreeOnLaunch) ==
                  CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH &&
              static_cast<int>(cudaGraphInstantiateFlagUpload) ==
                  CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD &&
              static_cast<int>(cudaGraphInstantiateFlagDeviceLaunch) ==
                  CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH &&
              static_cast<int>(cudaGraphInstantiateFlagUseNodePriority) ==
                  CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY);
static_assert(static_cast<int>(cudaGraphChildGraphOwnershipClone) ==
                  CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE &&
              static_cast<int>(cudaGraphChildGraphOwnershipMove) ==
                  CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE);
static_assert(static_cast<int>(cudaUserObjectNoDestructorSync) ==
                  CU_USER_OBJECT_NO_DESTRUCTOR_SYNC &&
              static_cast<int>(cudaGraphUserObjectMove) == CU_GRAPH_USER_OBJECT_MOVE);
static_assert(static_cast<int>(cudaGraphDebugDotFlagsVerbose) == CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE &&
              static_cast<int>(cudaGraphDebugDotFlagsHandles) == CU_GRAPH_DEBUG_DOT_FLAGS_HANDLES);
static_assert(static_cast<int>(cudaGraphDependencyTypeProgrammatic) ==
              CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC);
// Kernel node attributes are launch attributes (rt_stream.cpp / rt_kernel.cpp check those).
static_assert(sizeof(cudaLaunchAttributeValue) == sizeof(CUkernelNodeAttrValue));
static_assert(static_cast<int>(cudaLaunchAttributePriority) == CU_LAUNCH_ATTRIBUTE_PRIORITY);

const CUgraphEdgeData* edges_in(const cudaGraphEdgeData* d) noexcept {
  return reinterpret_cast<const CUgraphEdgeData*>(d);
}
CUgraphEdgeData* edges_out(cudaGraphEdgeData* d) noexcept {
  return reinterpret_cast<CUgraphEdgeData*>(d);
}

// A refusal for something cudamux does not do at all (worth a warning, not a debug line).
cudaError_t unsupported(const char* fn, const char* why) noexcept {
  try {
    log::get()->warn("{}: {}: returning cudaErrorNotSupported", fn, why);
  } catch (...) {
  }
  return cudaErrorNotSupported;
}

// --- kernels ---

// What the program gave as a kernel node's func, per CUfunction it was resolved to (registered
// kernels only: a cudaKernel_t or CUfunction is its own answer).
struct GivenFuncs {
  std::mutex mutex;
  std::unordered_map<CUfunction, const void*> by_function;
};
GivenFuncs& given_funcs() {
  static auto* g = new GivenFuncs();  // never destroyed: graphs may outlive static destructors
  return *g;
}

// cudaKernelNodeParams.func -> the driver's func / kern (after enter()).
cudaError_t kernel_target(const void* func, CUDA_KERNEL_NODE_PARAMS& out, const char* fn) noexcept {
  if (!func) return reject(cudaErrorInvalidDeviceFunction, fn, "null function");
  if (const void* record = registered(func)) {
    CUfunction f = nullptr;
    if (cudaError_t e = registered_function(record, f, fn)) return e;
    out.func = f;
    GivenFuncs& g = given_funcs();
    std::lock_guard lock(g.mutex);
    try {
      g.by_function[f] = func;
    } catch (...) {
      // GetParams then reports the CUfunction: not worth failing the call for.
    }
    return cudaSuccess;
  }
  const auto value = reinterpret_cast<std::uintptr_t>(func);
  core::Core& core = core::Core::get();
  if (core.kernels.find(value)) {
    out.kern = reinterpret_cast<CUkernel>(const_cast<void*>(func));
    return cudaSuccess;
  }
  if (core.functions.find(value)) {
    out.func = reinterpret_cast<CUfunction>(const_cast<void*>(func));
    return cudaSuccess;
  }
  return reject(cudaErrorInvalidDeviceFunction, fn,
                "neither a registered kernel, a cudaKernel_t nor a CUfunction");
}

// cudaKernelNodeParams and cudaKernelNodeParamsV2 have the same fields.
template <class P>
cudaError_t kernel_in(const P& p, CUDA_KERNEL_NODE_PARAMS& out, const char* fn) noexcept {
  out = CUDA_KERNEL_NODE_PARAMS{};
  if (cudaError_t e = kernel_target(p.func, out, fn)) return e;
  out.gridDimX = p.gridDim.x;
  out.gridDimY = p.gridDim.y;
  out.gridDimZ = p.gridDim.z;
  out.blockDimX = p.blockDim.x;
  out.blockDimY = p.blockDim.y;
  out.blockDimZ = p.blockDim.z;
  out.sharedMemBytes = p.sharedMemBytes;
  out.kernelParams = p.kernelParams;
  out.extra = p.extra;
  out.ctx = nullptr;  // the current context
  return cudaSuccess;
}

void* given_func(const CUDA_KERNEL_NODE_PARAMS& d) noexcept {
  if (d.kern) return d.kern;
  GivenFuncs& g = given_funcs();
  std::lock_guard lock(g.mutex);
  const auto it = g.by_function.find(d.func);
  // Only while the stub is still registered (its fat binary may have gone since).
  if (it != g.by_function.end() && registered(it->second)) return const_cast<void*>(it->second);
  return d.func;
}

void kernel_out(const CUDA_KERNEL_NODE_PARAMS& d, cudaKernelNodeParams& p) noexcept {
  p = cudaKernelNodeParams{};
  p.func = given_func(d);
  p.gridDim = dim3(d.gridDimX, d.gridDimY, d.gridDimZ);
  p.blockDim = dim3(d.blockDimX, d.blockDimY, d.blockDimZ);
  p.sharedMemBytes = d.sharedMemBytes;
  p.kernelParams = d.kernelParams;
  p.extra = d.extra;
}

// --- copies ---

// Device memory (not managed, not host memory the device maps) at `p`, per the allocations.
bool is_device_memory(const void* p) noexcept {
  core::Core& c = core::Core::get();
  std::shared_lock lock(c.alloc_mutex);
  const core::Allocation* a = c.find_allocation(reinterpret_cast<std::uintptr_t>(p));
  return a && a->kind == core::AllocKind::device;
}

// One side of a copy, as cudaMemcpyKind says it is.
cudaError_t side_in(const void* ptr, bool device, bool unified, CUmemorytype& type,
                    CUdeviceptr& dev, const void*& host, const char* fn,
                    const char* what) noexcept {
  if (unified || device) {
    type = unified ? CU_MEMORYTYPE_UNIFIED : CU_MEMORYTYPE_DEVICE;
    dev = reinterpret_cast<CUdeviceptr>(ptr);
    return cudaSuccess;
  }
  // CUDA trusts the kind only as far as the pointers agree with it.
  if (is_device_memory(ptr)) return reject(cudaErrorInvalidValue, fn, what);
  type = CU_MEMORYTYPE_HOST;
  host = ptr;
  return cudaSuccess;
}

cudaError_t copy_in(const cudaMemcpy3DParms& p, CUDA_MEMCPY3D& d, const char* fn) noexcept {
  if (p.srcArray || p.dstArray)  // issue 17: array ends (rt_array.cpp)
    return array_params_3d(p.srcArray, p.srcPos, p.srcPtr, p.dstArray, p.dstPos, p.dstPtr, p.extent,
                           p.kind, false, d, fn);
  if (static_cast<unsigned>(p.kind) > cudaMemcpyDefault)
    return reject(cudaErrorInvalidMemcpyDirection, fn, "not a cudaMemcpyKind");
  const bool unified = p.kind == cudaMemcpyDefault;
  const bool dst_dev = p.kind == cudaMemcpyHostToDevice || p.kind == cudaMemcpyDeviceToDevice;
  const bool src_dev = p.kind == cudaMemcpyDeviceToHost || p.kind == cudaMemcpyDeviceToDevice;
  std::memset(&d, 0, sizeof d);
  const void* src_host = nullptr;
  const void* dst_host = nullptr;
  if (cudaError_t e = side_in(p.srcPtr.ptr, src_dev, unified, d.srcMemoryType, d.srcDevice,
                              src_host, fn, "source is device memory but the kind says host"))
    return e;
  if (cudaError_t e = side_in(p.dstPtr.ptr, dst_dev, unified, d.dstMemoryType, d.dstDevice,
                              dst_host, fn, "destination is device memory but the kind says host"))
    return e;
  d.srcHost = src_host;
  d.dstHost = const_cast<void*>(dst_host);
  d.srcPitch = p.srcPtr.pitch;
  d.srcHeight = p.srcPtr.ysize;
  d.srcXInBytes = p.srcPos.x;  // without arrays, positions and widths are in bytes
  d.srcY = p.srcPos.y;
  d.srcZ = p.srcPos.z;
  d.dstPitch = p.dstPtr.pitch;
  d.dstHeight = p.dstPtr.ysize;
  d.dstXInBytes = p.dstPos.x;
  d.dstY = p.dstPos.y;
  d.dstZ = p.dstPos.z;
  d.WidthInBytes = p.extent.width;
  d.Height = p.extent.height;
  d.Depth = p.extent.depth;
  if ((d.srcPitch && d.WidthInBytes > d.srcPitch) || (d.dstPitch && d.WidthInBytes > d.dstPitch))
    return reject(cudaErrorInvalidPitchValue, fn, "width exceeds a pitch");
  return cudaSuccess;
}

void copy_out(const CUDA_MEMCPY3D& d, cudaMemcpy3DParms& p) noexcept {
  std::memset(&p, 0, sizeof p);
  auto ptr = [](CUmemorytype t, const void* host, CUdeviceptr dev) {
    return t == CU_MEMORYTYPE_HOST ? const_cast<void*>(host) : reinterpret_cast<void*>(dev);
  };
  p.srcPtr.ptr = ptr(d.srcMemoryType, d.srcHost, d.srcDevice);
  p.srcPtr.pitch = d.srcPitch;
  p.srcPtr.xsize = d.WidthInBytes;
  p.srcPtr.ysize = d.srcHeight;
  p.srcPos = {d.srcXInBytes, d.srcY, d.srcZ};
  p.dstPtr.ptr = ptr(d.dstMemoryType, d.dstHost, d.dstDevice);
  p.dstPtr.pitch = d.dstPitch;
  p.dstPtr.xsize = d.WidthInBytes;
  p.dstPtr.ysize = d.dstHeight;
  p.dstPos = {d.dstXInBytes, d.dstY, d.dstZ};
  p.extent = {d.WidthInBytes, d.Height, d.Depth};
  // issue 17: array ends count the array's elements (positions and the extent's width).
  auto elem = [](CUarray a) -> std::size_t {
    const core::Array* arr = core::array_of(a);
    return arr ? arr->element_bytes : 1;
  };
  const std::size_t unit = d.srcMemoryType == CU_MEMORYTYPE_ARRAY   ? elem(d.srcArray)
                           : d.dstMemoryType == CU_MEMORYTYPE_ARRAY ? elem(d.dstArray)
                                                                    : 1;
  if (d.srcMemoryType == CU_MEMORYTYPE_ARRAY) {
    p.srcArray = reinterpret_cast<cudaArray_t>(d.srcArray);
    p.srcPtr = {};
    p.srcPos.x = d.srcXInBytes / elem(d.srcArray);
  }
  if (d.dstMemoryType == CU_MEMORYTYPE_ARRAY) {
    p.dstArray = reinterpret_cast<cudaArray_t>(d.dstArray);
    p.dstPtr = {};
    p.dstPos.x = d.dstXInBytes / elem(d.dstArray);
  }
  p.extent.width = d.WidthInBytes / unit;
  const bool src_dev =
      d.srcMemoryType == CU_MEMORYTYPE_DEVICE || d.srcMemoryType == CU_MEMORYTYPE_ARRAY;
  const bool dst_dev =
      d.dstMemoryType == CU_MEMORYTYPE_DEVICE || d.dstMemoryType == CU_MEMORYTYPE_ARRAY;
  if (d.srcMemoryType == CU_MEMORYTYPE_UNIFIED || d.dstMemoryType == CU_MEMORYTYPE_UNIFIED)
    p.kind = cudaMemcpyDefault;
  else if (src_dev)
    p.kind = dst_dev ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
  else
    p.kind = dst_dev ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost;
}

// cudaGraph*MemcpyNode*1D: a one-row copy of `count` bytes.
cudaMemcpy3DParms linear(void* dst, const void* src, std::size_t count,
                         cudaMemcpyKind kind) noexcept {
  cudaMemcpy3DParms p;
  std::memset(&p, 0, sizeof p);
  p.srcPtr = {const_cast<void*>(src), count, count, 1};
  p.dstPtr = {dst, count, count, 1};
  p.extent = {count, 1, 1};
  p.kind = kind;
  return p;
}

// A registered variable's bytes [offset, offset + count) on the current device (after enter()).
cudaError_t symbol_range(const void* symbol, std::size_t count, std::size_t offset, void*& out,
                         const char* fn) noexcept {
  CUdeviceptr base = 0;
  std::size_t size = 0;
  if (cudaError_t e = symbol_address(symbol, base, size))
    return reject(e, fn, "not a registered device variable");
  std::size_t end = 0;
  if (__builtin_add_overflow(offset, count, &end) || end > size)
    return reject(cudaErrorInvalidValue, fn, "offset + count exceeds the variable's size");
  out = reinterpret_cast<void*>(base + offset);
  return cudaSuccess;
}

cudaError_t to_symbol(const void* symbol, const void* src, std::size_t count, std::size_t offset,
                      cudaMemcpyKind kind, CUDA_MEMCPY3D& d, const char* fn) noexcept {
  if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice &&
      kind != cudaMemcpyDefault)
    return reject(cudaErrorInvalidMemcpyDirection, fn, "kind must copy to the device");
  void* dst = nullptr;
  if (cudaError_t e = symbol_range(symbol, count, offset, dst, fn)) return e;
  return copy_in(linear(dst, src, count, kind), d, fn);
}

cudaError_t from_symbol(void* dst, const void* symbol, std::size_t count, std::size_t offset,
                        cudaMemcpyKind kind, CUDA_MEMCPY3D& d, const char* fn) noexcept {
  if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice &&
      kind != cudaMemcpyDefault)
    return reject(cudaErrorInvalidMemcpyDirection, fn, "kind must copy from the device");
  void* src = nullptr;
  if (cudaError_t e = symbol_range(symbol, count, offset, src, fn)) return e;
  return copy_in(linear(dst, src, count, kind), d, fn);
}

// --- memsets and host nodes ---

template <class P>
CUDA_MEMSET_NODE_PARAMS memset_in(const P& p) noexcept {
  return {reinterpret_cast<CUdeviceptr>(p.dst), p.pitch, p.value, p.elementSize, p.width, p.height};
}
template <class P>
CUDA_HOST_NODE_PARAMS host_in(const P& p) noexcept {
  return {p.fn, p.userData};
}

// --- the generic node parameters (cudaGraphAddNode, cudaGraph[Exec]NodeSetParams) ---

cudaError_t node_params_in(const cudaGraphNodeParams& p, CUgraphNodeParams& d,
                           const char* fn) noexcept {
  std::memset(&d, 0, sizeof d);
  d.type = static_cast<CUgraphNodeType>(p.type);
  std::memcpy(d.reserved0, p.reserved0, sizeof d.reserved0);  // the driver insists on zeros
  d.reserved2 = p.reserved2;
  switch (p.type) {
    case cudaGraphNodeTypeKernel: {
      CUDA_KERNEL_NODE_PARAMS k;
      if (cudaError_t e = kernel_in(p.kernel, k, fn)) return e;
      d.kernel.func = k.func;
      d.kernel.kern = k.kern;
      d.kernel.ctx = k.ctx;
      d.kernel.gridDimX = k.gridDimX;
      d.kernel.gridDimY = k.gridDimY;
      d.kernel.gridDimZ = k.gridDimZ;
      d.kernel.blockDimX = k.blockDimX;
      d.kernel.blockDimY = k.blockDimY;
      d.kernel.blockDimZ = k.blockDimZ;
      d.kernel.sharedMemBytes = k.sharedMemBytes;
      d.kernel.kernelParams = k.kernelParams;
      d.kernel.extra = k.extra;
      return cudaSuccess;
    }
    case cudaGraphNodeTypeMemcpy:
      d.memcpy.flags = p.memcpy.flags;
      d.memcpy.copyCtx = nullptr;
      return copy_in(p.memcpy.copyParams, d.memcpy.copyParams, fn);
    case cudaGraphNodeTypeMemset: {
      const CUDA_MEMSET_NODE_PARAMS m = memset_in(p.memset);
      d.memset = {m.dst, m.pitch, m.value, m.elementSize, m.width, m.height, nullptr};
      return cudaSuccess;
    }
    case cudaGraphNodeTypeHost:
      d.host = {p.host.fn, p.host.userData};
      return cudaSuccess;
    case cudaGraphNodeTypeGraph:
      d.graph = {p.graph.graph, static_cast<CUgraphChildGraphNodeOwnership>(p.graph.ownership)};
      return cudaSuccess;
    case cudaGraphNodeTypeEmpty:
      return cudaSuccess;
    case cudaGraphNodeTypeWaitEvent:
      d.eventWait.event = p.eventWait.event;
      return cudaSuccess;
    case cudaGraphNodeTypeEventRecord:
      d.eventRecord.event = p.eventRecord.event;
      return cudaSuccess;
    case cudaGraphNodeTypeExtSemaphoreSignal:
    case cudaGraphNodeTypeExtSemaphoreWait:
      return unsupported(fn, "external semaphore nodes are not supported");
    case cudaGraphNodeTypeMemAlloc:
    case cudaGraphNodeTypeMemFree:
      return unsupported(fn, "memory allocation nodes are not supported");
    case cudaGraphNodeTypeConditional:
      // The runtime's parameters name no context: the node is the current context's.
      d.conditional.handle = p.conditional.handle;
      d.conditional.type = static_cast<CUgraphConditionalNodeType>(p.conditional.type);
      d.conditional.size = p.conditional.size;
      d.conditional.phGraph_out = nullptr;
      d.conditional.ctx = nullptr;
      return cudaSuccess;
    default:
      return reject(cudaErrorInvalidValue, fn, "unknown node type");
  }
}

}  // namespace
}  // namespace cudamux::rt

namespace cudamux::rt::impl {

namespace drv = cudamux::impl;

// Bind the thread's context, call the driver.
#define CUDAMUX_RT_CALL(expr)                \
  do {                                       \
    if (cudaError_t e_ = enter()) return e_; \
    return map(expr);                        \
  } while (0)

// --- stream capture ---

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  CUDAMUX_RT_CALL(drv::cuStreamBeginCapture_v2(stream, static_cast<CUstreamCaptureMode>(mode)));
}
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, cudaStreamCaptureMode mode) {
  CUDAMUX_RT_CALL(
      drv::cuStreamBeginCapture_v2_ptsz(stream, static_cast<CUstreamCaptureMode>(mode)));
}
cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
                                          const cudaGraphNode_t* dependencies,
                                          const cudaGraphEdgeData* dependencyData,
                                          size_t numDependencies, cudaStreamCaptureMode mode) {
  CUDAMUX_RT_CALL(drv::cuStreamBeginCaptureToGraph(stream, graph, dependencies,
                                                   edges_in(dependencyData), numDependencies,
                                                   static_cast<CUstreamCaptureMode>(mode)));
}
cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph,
                                               const cudaGraphNode_t* dependencies,
                                               const cudaGraphEdgeData* dependencyData,
                                               size_t numDependencies, cudaStreamCaptureMode mode) {
  CUDAMUX_RT_CALL(drv::cuStreamBeginCaptureToGraph_ptsz(stream, graph, dependencies,
                                                        edges_in(dependencyData), numDependencies,
                                                        static_cast<CUstreamCaptureMode>(mode)));
}
cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  if (!mode)
    return reject(cudaErrorInvalidValue, "cudaThreadExchangeStreamCaptureMode", "null mode");
  if (cudaError_t e = enter()) return e;
  auto m = static_cast<CUstreamCaptureMode>(*mode);
  if (CUresult r = drv::cuThreadExchangeStreamCaptureMode(&m)) return map(r);
  *mode = static_cast<cudaStreamCaptureMode>(m);
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  CUDAMUX_RT_CALL(drv::cuStreamEndCapture(stream, pGraph));
}
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t* pGraph) {
  CUDAMUX_RT_CALL(drv::cuStreamEndCapture_ptsz(stream, pGraph));
}

namespace {
cudaError_t capture_info(cudaStream_t stream, cudaStreamCaptureStatus* status,
                         unsigned long long* id, cudaGraph_t* graph, const cudaGraphNode_t** deps,
                         const cudaGraphEdgeData** edges, size_t* count, bool pt) noexcept {
  if (!status) return reject(cudaErrorInvalidValue, "cudaStreamGetCaptureInfo", "null status");
  if (cudaError_t e = enter()) return e;
  CUstreamCaptureStatus s = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t i = 0;
  const CUgraphEdgeData* ed = nullptr;
  const CUresult r = pt ? drv::cuStreamGetCaptureInfo_v3_ptsz(stream, &s, id ? &i : nullptr, graph,
                                                              deps, edges ? &ed : nullptr, count)
                        : drv::cuStreamGetCaptureInfo_v3(stream, &s, id ? &i : nullptr, graph, deps,
                                                         edges ? &ed : nullptr, count);
  if (r != CUDA_SUCCESS) return map(r);
  *status = static_cast<cudaStreamCaptureStatus>(s);
  if (id) *id = i;
  if (edges) *edges = reinterpret_cast<const cudaGraphEdgeData*>(ed);
  return cudaSuccess;
}
}  // namespace

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
                                     cudaStreamCaptureStatus* captureStatus_out,
                                     unsigned long long* id_out, cudaGraph_t* graph_out,
                                     const cudaGraphNode_t** dependencies_out,
                                     const cudaGraphEdgeData** edgeData_out,
                                     size_t* numDependencies_out) {
  return capture_info(stream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                      numDependencies_out, false);
}
cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream,
                                          cudaStreamCaptureStatus* captureStatus_out,
                                          unsigned long long* id_out, cudaGraph_t* graph_out,
                                          const cudaGraphNode_t** dependencies_out,
                                          const cudaGraphEdgeData** edgeData_out,
                                          size_t* numDependencies_out) {
  return capture_info(stream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                      numDependencies_out, true);
}
cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream, cudaGraphNode_t* dependencies,
                                                const cudaGraphEdgeData* dependencyData,
                                                size_t numDependencies, unsigned int flags) {
  CUDAMUX_RT_CALL(drv::cuStreamUpdateCaptureDependencies_v2(
      stream, dependencies, edges_in(dependencyData), numDependencies, flags));
}
cudaError_t cudaStreamUpdateCaptureDependencies_ptsz(cudaStream_t stream,
                                                     cudaGraphNode_t* dependencies,
                                                     const cudaGraphEdgeData* dependencyData,
                                                     size_t numDependencies, unsigned int flags) {
  CUDAMUX_RT_CALL(drv::cuStreamUpdateCaptureDependencies_v2_ptsz(
      stream, dependencies, edges_in(dependencyData), numDependencies, flags));
}

// --- graphs and their structure ---

cudaError_t cudaGraphCreate(cudaGraph_t* pGraph, unsigned int flags) {
  CUDAMUX_RT_CALL(drv::cuGraphCreate(pGraph, flags));
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) { CUDAMUX_RT_CALL(drv::cuGraphDestroy(graph)); }
cudaError_t cudaGraphClone(cudaGraph_t* pGraphClone, cudaGraph_t originalGraph) {
  CUDAMUX_RT_CALL(drv::cuGraphClone(pGraphClone, originalGraph));
}
cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t* pNode, cudaGraphNode_t originalNode,
                                     cudaGraph_t clonedGraph) {
  CUDAMUX_RT_CALL(drv::cuGraphNodeFindInClone(pNode, originalNode, clonedGraph));
}
cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, cudaGraphNodeType* pType) {
  if (!pType) return reject(cudaErrorInvalidValue, "cudaGraphNodeGetType", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  CUgraphNodeType t = CU_GRAPH_NODE_TYPE_EMPTY;
  if (CUresult r = drv::cuGraphNodeGetType(node, &t)) return map(r);
  *pType = static_cast<cudaGraphNodeType>(t);
  return cudaSuccess;
}
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* numNodes) {
  CUDAMUX_RT_CALL(drv::cuGraphGetNodes(graph, nodes, numNodes));
}
cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t* pRootNodes,
                                  size_t* pNumRootNodes) {
  CUDAMUX_RT_CALL(drv::cuGraphGetRootNodes(graph, pRootNodes, pNumRootNodes));
}
cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t* from, cudaGraphNode_t* to,
                              cudaGraphEdgeData* edgeData, size_t* numEdges) {
  CUDAMUX_RT_CALL(drv::cuGraphGetEdges_v2(graph, from, to, edges_out(edgeData), numEdges));
}
cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t* pDependencies,
                                         cudaGraphEdgeData* edgeData, size_t* pNumDependencies) {
  CUDAMUX_RT_CALL(drv::cuGraphNodeGetDependencies_v2(node, pDependencies, edges_out(edgeData),
                                                     pNumDependencies));
}
cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t* pDependentNodes,
                                           cudaGraphEdgeData* edgeData,
                                           size_t* pNumDependentNodes) {
  CUDAMUX_RT_CALL(drv::cuGraphNodeGetDependentNodes_v2(node, pDependentNodes, edges_out(edgeData),
                                                       pNumDependentNodes));
}
cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                     const cudaGraphNode_t* to, const cudaGraphEdgeData* edgeData,
                                     size_t numDependencies) {
  CUDAMUX_RT_CALL(
      drv::cuGraphAddDependencies_v2(graph, from, to, edges_in(edgeData), numDependencies));
}
cudaError_t cudaGraphRemoveDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                        const cudaGraphNode_t* to,
                                        const cudaGraphEdgeData* edgeData, size_t numDependencies) {
  CUDAMUX_RT_CALL(
      drv::cuGraphRemoveDependencies_v2(graph, from, to, edges_in(edgeData), numDependencies));
}
cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node) {
  CUDAMUX_RT_CALL(drv::cuGraphDestroyNode(node));
}
cudaError_t cudaGraphDebugDotPrint(cudaGraph_t graph, const char* path, unsigned int flags) {
  CUDAMUX_RT_CALL(drv::cuGraphDebugDotPrint(graph, path, flags));
}

// --- kernel nodes ---

cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                   const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                   const cudaKernelNodeParams* pNodeParams) {
  const char* fn = "cudaGraphAddKernelNode";
  if (!pNodeParams) return reject(cudaErrorInvalidValue, fn, "null parameters");
  if (cudaError_t e = enter()) return e;
  CUDA_KERNEL_NODE_PARAMS d;
  if (cudaError_t e = kernel_in(*pNodeParams, d, fn)) return e;
  return map(drv::cuGraphAddKernelNode_v2(pGraphNode, graph, pDependencies, numDependencies, &d));
}
cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, cudaKernelNodeParams* pNodeParams) {
  if (!pNodeParams)
    return reject(cudaErrorInvalidValue, "cudaGraphKernelNodeGetParams", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  CUDA_KERNEL_NODE_PARAMS d{};
  if (CUresult r = drv::cuGraphKernelNodeGetParams_v2(node, &d)) return map(r);
  kernel_out(d, *pNodeParams);
  return cudaSuccess;
}
cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node,
                                         const cudaKernelNodeParams* pNodeParams) {
  const char* fn = "cudaGraphKernelNodeSetParams";
  if (!pNodeParams) return reject(cudaErrorInvalidValue, fn, "null parameters");
  if (cudaError_t e = enter()) return e;
  CUDA_KERNEL_NODE_PARAMS d;
  if (cudaError_t e = kernel_in(*pNodeParams, d, fn)) return e;
  return map(drv::cuGraphKernelNodeSetParams_v2(node, &d));
}
cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                             const cudaKernelNodeParams* pNodeParams) {
  const char* fn = "cudaGraphExecKernelNodeSetParams";
  if (!pNodeParams) return reject(cudaErrorInvalidValue, fn, "null parameters");
  if (cudaError_t e = enter()) return e;
  CUDA_KERNEL_NODE_PARAMS d;
  if (cudaError_t e = kernel_in(*pNodeParams, d, fn)) return e;
  return map(drv::cuGraphExecKernelNodeSetParams_v2(hGraphExec, node, &d));
}
cudaError_t cudaGraphKernelNodeCopyAttributes(cudaGraphNode_t hDst, cudaGraphNode_t hSrc) {
  CUDAMUX_RT_CALL(drv::cuGraphKernelNodeCopyAttributes(hDst, hSrc));
}
cudaError_t cudaGraphKernelNodeGetAttribute(cudaGraphNode_t hNode, cudaLaunchAttributeID attr,
                                            cudaLaunchAttributeValue* value_out) {
  CUDAMUX_RT_CALL(
      drv::cuGraphKernelNodeGetAttribute(hNode, static_cast<CUkernelNodeAttrID>(attr),
                                         reinterpret_cast<CUkernelNodeAttrValue*>(value_out)));
}
cudaError_t cudaGraphKernelNodeSetAttribute(cudaGraphNode_t hNode, cudaLaunchAttributeID attr,
                                            const cudaLaunchAttributeValue* value) {
  CUDAMUX_RT_CALL(
      drv::cuGraphKernelNodeSetAttribute(hNode, static_cast<CUkernelNodeAttrID>(attr),
                                         reinterpret_cast<const CUkernelNodeAttrValue*>(value)));
}

// --- memcpy nodes ---

cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                   const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                   const cudaMemcpy3DParms* pCopyParams) {
  const char* fn = "cudaGraphAddMemcpyNode";
  if (!pCopyParams) return reject(cudaErrorInvalidValue, fn, "null parameters");
  if (cudaError_t e = enter()) return e;
  CUDA_MEMCPY3D d;
  if (cudaError_t e = copy_in(*pCopyParams, d, fn)) return e;
  return map(
      drv::cuGraphAddMemcpyNode(pGraphNode, graph, pDependencies, numDependencies, &d, nullptr));
}
cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                     const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                     void* dst, const void* src, size_t count,
                                     cudaMemcpyKind kind) {
  if (cudaError_t e = enter()) return e;
  CUDA_MEMCPY3D d;
  if (cudaError_t e = copy_in(linear(dst, src, count, kind), d, "cudaGraphAddMemcpyNode1D"))
    return e;
  return map(
      drv::cuGraphAddMemcpyNode(pGraphNode, graph, pDependencies, numDependencies, &d, nullptr));
}
cudaError_t cudaGraphAddMemcpyNodeToSymbol(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                           const cudaGraphNode_t* pDependencies,
                                           size_t numDependencies, const void* symbol,
                                           const void* src, size_t count, size_t offset,
                                           cudaMemcpyKind kind) {
  if (cudaError_t e = enter()) return e;
  CUDA_MEMCPY3D d;
  if (cudaError_t e =
          to_symbol(symbol, src, count, offset, kind, d, "cudaGraphAddMemcpyNodeToSymbol"))
    return e;
  return map(
      drv::cuGraphAddMemcpyNode(pGraphNode, graph, pDependencies, numDependencies, &d, nullptr));
}
cudaError_t cudaGraphAddMemcpyNodeFromSymbol(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                             const cudaGraphNode_t* pDependencies,
                                             size_t numDependencies, void* dst, const void* symbol,
                                             size_t count, size_t offset, cudaMemcpyKind kind) {
  if (cudaError_t e = enter()) return e;
  CUDA_MEMCPY3D d;
  if (cudaError_t e =
          from_symbol(dst, symbol, count, offset, kind, d, "cudaGraphAddMemcpyNodeFromSymbol"))
    return e;
  return map(
      drv::cuGraphAddMemcpyNode(pGraphNode, graph, pDependencies, numDependencies, &d, nullptr));
}
cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node, cudaMemcpy3DParms* pNodeParams) {
  if (!pNodeParams)
    return reject(cudaErrorInvalidValue, "cudaGraphMemcpyNodeGetParams", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  CUDA_MEMCPY3D d;
  std::memset(&d, 0, sizeof d);
  if (CUresult r = drv::cuGraphMemcpyNodeGetParams(node, &d)) return map(r);
  copy_out(d, *pNodeParams);
  return cudaSuccess;
}
cudaError_t cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node,
                                         const cudaMemcpy3DParms* pNodeParams) {
  const char* fn = "cudaGraphMemcpyNodeSetParams";
  if (!pNodeParams) return reject(cudaErrorInvalidValue, fn, "null parameters");
  if (cudaError_t e = enter()) return e;
  CUDA_MEMCPY3D d;
  if (cudaError_t e = copy_in(*pNodeParams, d, fn)) return e;
  return map(drv::cuGraphMemcpyNodeSetParams(node, &d));
}
cudaError_t cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void* dst, const void* src,
                                           size_t count, cudaMemcpyKind kind) {
  if (cudaError_t e = enter()) return e;
  CUDA_MEMCPY3D d;
  if (cudaError_t e = copy_in(linear(dst, src, count, kind), d, "cudaGraphMemcpyNodeSetParams1D"))
    return e;
  return map(drv::cuGraphMemcpyNodeSetParams(node, &d));
}
cudaError_t cudaGraphMemcpyNodeSetParamsToSymbol(cudaGraphNode_t node, const void* symbol,
                                                 const void* src, size_t count, size_t offset,
                                                 cudaMemcpyKind kind) {
  if (cudaError_t e = enter()) return e;
  CUDA_MEMCPY3D d;
  if (cudaError_t e =
          to_symbol(symbol, src, count, offset, kind, d, "cudaGraphMemcpyNodeSetParamsToSymbol"))
    return e;
  return map(drv::cuGraphMemcpyNodeSetParams(node, &d));
}
cudaError_t cudaGraphMemcpyNodeSetParamsFromSymbol(cudaGraphNode_t node, void* dst,
                                                   const void* symbol, size_t count, size_t offset,
                                                   cudaMemcpyKind kind) {
  if (cudaError_t e = enter()) return e;
  CUDA_MEMCPY3D d;
  if (cudaError_t e = from_symbol(dst, symbol, count, offset, kind, d,
                                  "cudaGraphMemcpyNodeSetParamsFromSymbol"))
    return e;
  return map(drv::cuGraphMemcpyNodeSetParams(node, &d));
}
cudaError_t cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                             const cudaMemcpy3DParms* pNodeParams) {
  const char* fn = "cudaGraphExecMemcpyNodeSetParams";
  if (!pNodeParams) return reject(cudaErrorInvalidValue, fn, "null parameters");
  if (cudaError_t e = enter()) return e;
  CUDA_MEMCPY3D d;
  if (cudaError_t e = copy_in(*pNodeParams, d, fn)) return e;
  return map(drv::cuGraphExecMemcpyNodeSetParams(hGraphExec, node, &d, nullptr));
}
cudaError_t cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                               void* dst, const void* src, size_t count,
                                               cudaMemcpyKind kind) {
  if (cudaError_t e = enter()) return e;
  CUDA_MEMCPY3D d;
  if (cudaError_t e =
          copy_in(linear(dst, src, count, kind), d, "cudaGraphExecMemcpyNodeSetParams1D"))
    return e;
  return map(drv::cuGraphExecMemcpyNodeSetParams(hGraphExec, node, &d, nullptr));
}
cudaError_t cudaGraphExecMemcpyNodeSetParamsToSymbol(cudaGraphExec_t hGraphExec,
                                                     cudaGraphNode_t node, const void* symbol,
                                                     const void* src, size_t count, size_t offset,
                                                     cudaMemcpyKind kind) {
  if (cudaError_t e = enter()) return e;
  CUDA_MEMCPY3D d;
  if (cudaError_t e = to_symbol(symbol, src, count, offset, kind, d,
                                "cudaGraphExecMemcpyNodeSetParamsToSymbol"))
    return e;
  return map(drv::cuGraphExecMemcpyNodeSetParams(hGraphExec, node, &d, nullptr));
}
cudaError_t cudaGraphExecMemcpyNodeSetParamsFromSymbol(cudaGraphExec_t hGraphExec,
                                                       cudaGraphNode_t node, void* dst,
                                                       const void* symbol, size_t count,
                                                       size_t offset, cudaMemcpyKind kind) {
  if (cudaError_t e = enter()) return e;
  CUDA_MEMCPY3D d;
  if (cudaError_t e = from_symbol(dst, symbol, count, offset, kind, d,
                                  "cudaGraphExecMemcpyNodeSetParamsFromSymbol"))
    return e;
  return map(drv::cuGraphExecMemcpyNodeSetParams(hGraphExec, node, &d, nullptr));
}

// --- memset nodes ---

cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                   const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                   const cudaMemsetParams* pMemsetParams) {
  if (!pMemsetParams)
    return reject(cudaErrorInvalidValue, "cudaGraphAddMemsetNode", "null parameters");
  if (cudaError_t e = enter()) return e;
  const CUDA_MEMSET_NODE_PARAMS d = memset_in(*pMemsetParams);
  return map(
      drv::cuGraphAddMemsetNode(pGraphNode, graph, pDependencies, numDependencies, &d, nullptr));
}
cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t node, cudaMemsetParams* pNodeParams) {
  if (!pNodeParams)
    return reject(cudaErrorInvalidValue, "cudaGraphMemsetNodeGetParams", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  CUDA_MEMSET_NODE_PARAMS d{};
  if (CUresult r = drv::cuGraphMemsetNodeGetParams(node, &d)) return map(r);
  *pNodeParams = cudaMemsetParams{};
  pNodeParams->dst = reinterpret_cast<void*>(d.dst);
  pNodeParams->pitch = d.pitch;
  pNodeParams->value = d.value;
  pNodeParams->elementSize = d.elementSize;
  pNodeParams->width = d.width;
  pNodeParams->height = d.height;
  return cudaSuccess;
}
cudaError_t cudaGraphMemsetNodeSetParams(cudaGraphNode_t node,
                                         const cudaMemsetParams* pNodeParams) {
  if (!pNodeParams)
    return reject(cudaErrorInvalidValue, "cudaGraphMemsetNodeSetParams", "null parameters");
  if (cudaError_t e = enter()) return e;
  const CUDA_MEMSET_NODE_PARAMS d = memset_in(*pNodeParams);
  return map(drv::cuGraphMemsetNodeSetParams(node, &d));
}
cudaError_t cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                             const cudaMemsetParams* pNodeParams) {
  if (!pNodeParams)
    return reject(cudaErrorInvalidValue, "cudaGraphExecMemsetNodeSetParams", "null parameters");
  if (cudaError_t e = enter()) return e;
  const CUDA_MEMSET_NODE_PARAMS d = memset_in(*pNodeParams);
  return map(drv::cuGraphExecMemsetNodeSetParams(hGraphExec, node, &d, nullptr));
}

// --- host nodes ---

cudaError_t cudaGraphAddHostNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                 const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                 const cudaHostNodeParams* pNodeParams) {
  if (!pNodeParams) return reject(cudaErrorInvalidValue, "cudaGraphAddHostNode", "null parameters");
  if (cudaError_t e = enter()) return e;
  const CUDA_HOST_NODE_PARAMS d = host_in(*pNodeParams);
  return map(drv::cuGraphAddHostNode(pGraphNode, graph, pDependencies, numDependencies, &d));
}
cudaError_t cudaGraphHostNodeGetParams(cudaGraphNode_t node, cudaHostNodeParams* pNodeParams) {
  if (!pNodeParams)
    return reject(cudaErrorInvalidValue, "cudaGraphHostNodeGetParams", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  CUDA_HOST_NODE_PARAMS d{};
  if (CUresult r = drv::cuGraphHostNodeGetParams(node, &d)) return map(r);
  pNodeParams->fn = d.fn;
  pNodeParams->userData = d.userData;
  return cudaSuccess;
}
cudaError_t cudaGraphHostNodeSetParams(cudaGraphNode_t node,
                                       const cudaHostNodeParams* pNodeParams) {
  if (!pNodeParams)
    return reject(cudaErrorInvalidValue, "cudaGraphHostNodeSetParams", "null parameters");
  if (cudaError_t e = enter()) return e;
  const CUDA_HOST_NODE_PARAMS d = host_in(*pNodeParams);
  return map(drv::cuGraphHostNodeSetParams(node, &d));
}
cudaError_t cudaGraphExecHostNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                           const cudaHostNodeParams* pNodeParams) {
  if (!pNodeParams)
    return reject(cudaErrorInvalidValue, "cudaGraphExecHostNodeSetParams", "null parameters");
  if (cudaError_t e = enter()) return e;
  const CUDA_HOST_NODE_PARAMS d = host_in(*pNodeParams);
  return map(drv::cuGraphExecHostNodeSetParams(hGraphExec, node, &d));
}

// --- child graph, empty and event nodes ---

cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                       const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                       cudaGraph_t childGraph) {
  CUDAMUX_RT_CALL(
      drv::cuGraphAddChildGraphNode(pGraphNode, graph, pDependencies, numDependencies, childGraph));
}
cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t* pGraph) {
  CUDAMUX_RT_CALL(drv::cuGraphChildGraphNodeGetGraph(node, pGraph));
}
cudaError_t cudaGraphExecChildGraphNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                 cudaGraph_t childGraph) {
  CUDAMUX_RT_CALL(drv::cuGraphExecChildGraphNodeSetParams(hGraphExec, node, childGraph));
}
cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                  const cudaGraphNode_t* pDependencies, size_t numDependencies) {
  CUDAMUX_RT_CALL(drv::cuGraphAddEmptyNode(pGraphNode, graph, pDependencies, numDependencies));
}
cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                        const cudaGraphNode_t* pDependencies,
                                        size_t numDependencies, cudaEvent_t event) {
  CUDAMUX_RT_CALL(
      drv::cuGraphAddEventRecordNode(pGraphNode, graph, pDependencies, numDependencies, event));
}
cudaError_t cudaGraphEventRecordNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* event_out) {
  CUDAMUX_RT_CALL(drv::cuGraphEventRecordNodeGetEvent(node, event_out));
}
cudaError_t cudaGraphEventRecordNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
  CUDAMUX_RT_CALL(drv::cuGraphEventRecordNodeSetEvent(node, event));
}
cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                      const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                      cudaEvent_t event) {
  CUDAMUX_RT_CALL(
      drv::cuGraphAddEventWaitNode(pGraphNode, graph, pDependencies, numDependencies, event));
}
cudaError_t cudaGraphEventWaitNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* event_out) {
  CUDAMUX_RT_CALL(drv::cuGraphEventWaitNodeGetEvent(node, event_out));
}
cudaError_t cudaGraphEventWaitNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
  CUDAMUX_RT_CALL(drv::cuGraphEventWaitNodeSetEvent(node, event));
}
cudaError_t cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                                 cudaEvent_t event) {
  CUDAMUX_RT_CALL(drv::cuGraphExecEventRecordNodeSetEvent(hGraphExec, hNode, event));
}
cudaError_t cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                               cudaEvent_t event) {
  CUDAMUX_RT_CALL(drv::cuGraphExecEventWaitNodeSetEvent(hGraphExec, hNode, event));
}

// --- generic node parameters ---

cudaError_t cudaGraphAddNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                             const cudaGraphNode_t* pDependencies,
                             const cudaGraphEdgeData* dependencyData, size_t numDependencies,
                             cudaGraphNodeParams* nodeParams) {
  const char* fn = "cudaGraphAddNode";
  if (!nodeParams) return reject(cudaErrorInvalidValue, fn, "null parameters");
  if (cudaError_t e = enter()) return e;
  CUgraphNodeParams d;
  if (cudaError_t e = node_params_in(*nodeParams, d, fn)) return e;
  const cudaError_t r = map(drv::cuGraphAddNode_v2(pGraphNode, graph, pDependencies,
                                                   edges_in(dependencyData), numDependencies, &d));
  // A conditional node's bodies, created by the call (the array lives with the node).
  if (r == cudaSuccess && nodeParams->type == cudaGraphNodeTypeConditional)
    nodeParams->conditional.phGraph_out = d.conditional.phGraph_out;
  return r;
}

cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle* pHandle_out,
                                             cudaGraph_t graph, unsigned int defaultLaunchValue,
                                             unsigned int flags) {
  // The handle belongs to the current context (the runtime's call names none).
  CUDAMUX_RT_CALL(
      drv::cuGraphConditionalHandleCreate(reinterpret_cast<CUgraphConditionalHandle*>(pHandle_out),
                                          graph, nullptr, defaultLaunchValue, flags));
}
cudaError_t cudaGraphNodeSetParams(cudaGraphNode_t node, cudaGraphNodeParams* nodeParams) {
  const char* fn = "cudaGraphNodeSetParams";
  if (!nodeParams) return reject(cudaErrorInvalidValue, fn, "null parameters");
  if (cudaError_t e = enter()) return e;
  CUgraphNodeParams d;
  if (cudaError_t e = node_params_in(*nodeParams, d, fn)) return e;
  return map(drv::cuGraphNodeSetParams(node, &d));
}
cudaError_t cudaGraphExecNodeSetParams(cudaGraphExec_t graphExec, cudaGraphNode_t node,
                                       cudaGraphNodeParams* nodeParams) {
  const char* fn = "cudaGraphExecNodeSetParams";
  if (!nodeParams) return reject(cudaErrorInvalidValue, fn, "null parameters");
  if (cudaError_t e = enter()) return e;
  CUgraphNodeParams d;
  if (cudaError_t e = node_params_in(*nodeParams, d, fn)) return e;
  return map(drv::cuGraphExecNodeSetParams(graphExec, node, &d));
}

// --- executable graphs ---

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                 unsigned long long flags) {
  CUDAMUX_RT_CALL(drv::cuGraphInstantiateWithFlags(pGraphExec, graph, flags));
}
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                          unsigned long long flags) {
  CUDAMUX_RT_CALL(drv::cuGraphInstantiateWithFlags(pGraphExec, graph, flags));
}

namespace {
cudaError_t instantiate_with_params(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                    cudaGraphInstantiateParams* p, bool pt) noexcept {
  if (!p) return reject(cudaErrorInvalidValue, "cudaGraphInstantiateWithParams", "null parameters");
  if (cudaError_t e = enter()) return e;
  CUDA_GRAPH_INSTANTIATE_PARAMS d{};
  d.flags = p->flags;
  d.hUploadStream = p->uploadStream;
  const CUresult r = pt ? drv::cuGraphInstantiateWithParams_ptsz(pGraphExec, graph, &d)
                        : drv::cuGraphInstantiateWithParams(pGraphExec, graph, &d);
  p->errNode_out = d.hErrNode_out;
  p->result_out = static_cast<cudaGraphInstantiateResult>(d.result_out);
  return map(r);
}
}  // namespace

cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                           cudaGraphInstantiateParams* instantiateParams) {
  return instantiate_with_params(pGraphExec, graph, instantiateParams, false);
}
cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                                cudaGraphInstantiateParams* instantiateParams) {
  return instantiate_with_params(pGraphExec, graph, instantiateParams, true);
}
cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t graphExec, unsigned long long* flags) {
  if (!flags) return reject(cudaErrorInvalidValue, "cudaGraphExecGetFlags", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  cuuint64_t f = 0;
  if (CUresult r = drv::cuGraphExecGetFlags(graphExec, &f)) return map(r);
  *flags = f;
  return cudaSuccess;
}
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
                                cudaGraphExecUpdateResultInfo* resultInfo) {
  if (cudaError_t e = enter()) return e;
  CUgraphExecUpdateResultInfo info{};
  const CUresult r = drv::cuGraphExecUpdate_v2(hGraphExec, hGraph, &info);
  if (resultInfo) {
    resultInfo->result = static_cast<cudaGraphExecUpdateResult>(info.result);
    resultInfo->errorNode = info.errorNode;
    resultInfo->errorFromNode = info.errorFromNode;
  }
  return map(r);
}
cudaError_t cudaGraphNodeSetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                    unsigned int isEnabled) {
  CUDAMUX_RT_CALL(drv::cuGraphNodeSetEnabled(hGraphExec, hNode, isEnabled));
}
cudaError_t cudaGraphNodeGetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                    unsigned int* isEnabled) {
  CUDAMUX_RT_CALL(drv::cuGraphNodeGetEnabled(hGraphExec, hNode, isEnabled));
}
cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream) {
  CUDAMUX_RT_CALL(drv::cuGraphUpload(graphExec, stream));
}
cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream) {
  CUDAMUX_RT_CALL(drv::cuGraphUpload_ptsz(graphExec, stream));
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  CUDAMUX_RT_CALL(drv::cuGraphLaunch(graphExec, stream));
}
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream) {
  CUDAMUX_RT_CALL(drv::cuGraphLaunch_ptsz(graphExec, stream));
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  CUDAMUX_RT_CALL(drv::cuGraphExecDestroy(graphExec));
}

// --- user objects ---

cudaError_t cudaUserObjectCreate(cudaUserObject_t* object_out, void* ptr, cudaHostFn_t destroy,
                                 unsigned int initialRefcount, unsigned int flags) {
  CUDAMUX_RT_CALL(drv::cuUserObjectCreate(object_out, ptr, destroy, initialRefcount, flags));
}
cudaError_t cudaUserObjectRetain(cudaUserObject_t object, unsigned int count) {
  CUDAMUX_RT_CALL(drv::cuUserObjectRetain(object, count));
}
cudaError_t cudaUserObjectRelease(cudaUserObject_t object, unsigned int count) {
  CUDAMUX_RT_CALL(drv::cuUserObjectRelease(object, count));
}
cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object,
                                      unsigned int count, unsigned int flags) {
  CUDAMUX_RT_CALL(drv::cuGraphRetainUserObject(graph, object, count, flags));
}
cudaError_t cudaGraphReleaseUserObject(cudaGraph_t graph, cudaUserObject_t object,
                                       unsigned int count) {
  CUDAMUX_RT_CALL(drv::cuGraphReleaseUserObject(graph, object, count));
}

// --- graph memory nodes (the runtime's structs are the driver's, field for field) ---

static_assert(sizeof(cudaMemAllocNodeParams) == sizeof(CUDA_MEM_ALLOC_NODE_PARAMS));
static_assert(static_cast<int>(cudaGraphMemAttrUsedMemCurrent) ==
              static_cast<int>(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT));
static_assert(static_cast<int>(cudaGraphMemAttrReservedMemHigh) ==
              static_cast<int>(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH));

cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                     const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                     cudaMemAllocNodeParams* nodeParams) {
  if (!nodeParams)
    return reject(cudaErrorInvalidValue, "cudaGraphAddMemAllocNode", "null parameters");
  CUDA_MEM_ALLOC_NODE_PARAMS p{};
  std::memcpy(&p, nodeParams, sizeof p);
  if (cudaError_t e = enter()) return e;
  const cudaError_t e =
      map(drv::cuGraphAddMemAllocNode(pGraphNode, graph, pDependencies, numDependencies, &p));
  if (e == cudaSuccess) nodeParams->dptr = reinterpret_cast<void*>(p.dptr);
  return e;
}
cudaError_t cudaGraphMemAllocNodeGetParams(cudaGraphNode_t node,
                                           cudaMemAllocNodeParams* params_out) {
  if (!params_out)
    return reject(cudaErrorInvalidValue, "cudaGraphMemAllocNodeGetParams", "null out-pointer");
  CUDA_MEM_ALLOC_NODE_PARAMS p{};
  if (cudaError_t e = enter()) return e;
  const cudaError_t e = map(drv::cuGraphMemAllocNodeGetParams(node, &p));
  if (e == cudaSuccess) std::memcpy(params_out, &p, sizeof p);
  return e;
}
cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                    const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                    void* dptr) {
  CUDAMUX_RT_CALL(drv::cuGraphAddMemFreeNode(pGraphNode, graph, pDependencies, numDependencies,
                                             reinterpret_cast<CUdeviceptr>(dptr)));
}
cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node, void* dptr_out) {
  CUDAMUX_RT_CALL(drv::cuGraphMemFreeNodeGetParams(node, static_cast<CUdeviceptr*>(dptr_out)));
}
cudaError_t cudaDeviceGraphMemTrim(int device) {
  CUDAMUX_RT_CALL(drv::cuDeviceGraphMemTrim(device));
}
cudaError_t cudaDeviceGetGraphMemAttribute(int device, cudaGraphMemAttributeType attr,
                                           void* value) {
  CUDAMUX_RT_CALL(
      drv::cuDeviceGetGraphMemAttribute(device, static_cast<CUgraphMem_attribute>(attr), value));
}
cudaError_t cudaDeviceSetGraphMemAttribute(int device, cudaGraphMemAttributeType attr,
                                           void* value) {
  CUDAMUX_RT_CALL(
      drv::cuDeviceSetGraphMemAttribute(device, static_cast<CUgraphMem_attribute>(attr), value));
}

#undef CUDAMUX_RT_CALL

}  // namespace cudamux::rt::impl
