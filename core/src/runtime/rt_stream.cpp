// Runtime API: streams and events. cudaStream_t is CUstream and cudaEvent_t is CUevent,
// so these are the driver's functions behind the runtime's context binding.
#include <cstring>

#include "cudamux/driver_impl.hpp"
#include "cudamux/runtime_impl.hpp"
#include "rt_internal.hpp"

namespace cudamux::rt::impl {

namespace drv = cudamux::impl;

// Every function here has the same shape: bind the thread's context, call the driver.
#define CUDAMUX_RT_CALL(expr)                \
  do {                                       \
    if (cudaError_t e_ = enter()) return e_; \
    return map(expr);                        \
  } while (0)

cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  if (!pStream) return reject(cudaErrorInvalidValue, "cudaStreamCreate", "null out-pointer");
  CUDAMUX_RT_CALL(drv::cuStreamCreate(pStream, CU_STREAM_DEFAULT));
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  if (!pStream)
    return reject(cudaErrorInvalidValue, "cudaStreamCreateWithFlags", "null out-pointer");
  CUDAMUX_RT_CALL(
      drv::cuStreamCreate(pStream, flags));  // cudaStreamNonBlocking == CU_STREAM_NON_BLOCKING
}
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags, int priority) {
  if (!pStream)
    return reject(cudaErrorInvalidValue, "cudaStreamCreateWithPriority", "null out-pointer");
  CUDAMUX_RT_CALL(drv::cuStreamCreateWithPriority(pStream, flags, priority));
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (cudaError_t e = enter()) return e;
  // The default streams are not objects the program owns.
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread)
    return reject(cudaErrorInvalidResourceHandle, "cudaStreamDestroy",
                  "a default stream cannot be destroyed");
  return map(drv::cuStreamDestroy_v2(stream));
}
cudaError_t cudaStreamQuery(cudaStream_t stream) { CUDAMUX_RT_CALL(drv::cuStreamQuery(stream)); }
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) {
  CUDAMUX_RT_CALL(drv::cuStreamQuery_ptsz(stream));
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  CUDAMUX_RT_CALL(drv::cuStreamSynchronize(stream));
}
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  CUDAMUX_RT_CALL(drv::cuStreamSynchronize_ptsz(stream));
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  CUDAMUX_RT_CALL(drv::cuStreamWaitEvent(stream, event, flags));
}
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  CUDAMUX_RT_CALL(drv::cuStreamWaitEvent_ptsz(stream, event, flags));
}
// cudaStreamCallback_t and CUstreamCallback differ only in the enum of their status
// argument (same values, same representation).
cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                  void* userData, unsigned int flags) {
  if (!callback) return reject(cudaErrorInvalidValue, "cudaStreamAddCallback", "null callback");
  CUDAMUX_RT_CALL(drv::cuStreamAddCallback(stream, reinterpret_cast<CUstreamCallback>(callback),
                                           userData, flags));
}
cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback,
                                       void* userData, unsigned int flags) {
  if (!callback) return reject(cudaErrorInvalidValue, "cudaStreamAddCallback", "null callback");
  CUDAMUX_RT_CALL(drv::cuStreamAddCallback_ptsz(
      stream, reinterpret_cast<CUstreamCallback>(callback), userData, flags));
}
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  CUDAMUX_RT_CALL(drv::cuLaunchHostFunc(stream, fn, userData));
}
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  CUDAMUX_RT_CALL(drv::cuLaunchHostFunc_ptsz(stream, fn, userData));
}
cudaError_t cudaStreamGetFlags(cudaStream_t s, unsigned int* flags) {
  CUDAMUX_RT_CALL(drv::cuStreamGetFlags(s, flags));
}
cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t s, unsigned int* flags) {
  CUDAMUX_RT_CALL(drv::cuStreamGetFlags_ptsz(s, flags));
}
cudaError_t cudaStreamGetPriority(cudaStream_t s, int* priority) {
  CUDAMUX_RT_CALL(drv::cuStreamGetPriority(s, priority));
}
cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t s, int* priority) {
  CUDAMUX_RT_CALL(drv::cuStreamGetPriority_ptsz(s, priority));
}
cudaError_t cudaStreamGetDevice(cudaStream_t s, int* device) {
  CUDAMUX_RT_CALL(drv::cuStreamGetDevice(s, device));
}
cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t s, int* device) {
  CUDAMUX_RT_CALL(drv::cuStreamGetDevice_ptsz(s, device));
}
cudaError_t cudaStreamGetId(cudaStream_t s, unsigned long long* id) {
  CUDAMUX_RT_CALL(drv::cuStreamGetId(s, id));
}
cudaError_t cudaStreamGetId_ptsz(cudaStream_t s, unsigned long long* id) {
  CUDAMUX_RT_CALL(drv::cuStreamGetId_ptsz(s, id));
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  if (!event) return reject(cudaErrorInvalidValue, "cudaEventCreate", "null out-pointer");
  CUDAMUX_RT_CALL(drv::cuEventCreate(event, CU_EVENT_DEFAULT));
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (!event) return reject(cudaErrorInvalidValue, "cudaEventCreateWithFlags", "null out-pointer");
  CUDAMUX_RT_CALL(drv::cuEventCreate(event, flags));  // cudaEvent* flag bits equal CU_EVENT_*
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  CUDAMUX_RT_CALL(drv::cuEventRecord(event, stream));
}
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) {
  CUDAMUX_RT_CALL(drv::cuEventRecord_ptsz(event, stream));
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  CUDAMUX_RT_CALL(drv::cuEventRecordWithFlags(event, stream, flags));
}
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream,
                                          unsigned int flags) {
  CUDAMUX_RT_CALL(drv::cuEventRecordWithFlags_ptsz(event, stream, flags));
}
cudaError_t cudaEventQuery(cudaEvent_t event) { CUDAMUX_RT_CALL(drv::cuEventQuery(event)); }
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  CUDAMUX_RT_CALL(drv::cuEventSynchronize(event));
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  CUDAMUX_RT_CALL(drv::cuEventElapsedTime_v2(ms, start, end));
}
cudaError_t cudaEventDestroy(cudaEvent_t event) { CUDAMUX_RT_CALL(drv::cuEventDestroy_v2(event)); }

// Capture status queries are the driver's (issue 16: capture.cpp); cudaStreamGetCaptureInfo
// and the rest of stream capture are in rt_graph.cpp.
static_assert(static_cast<int>(cudaStreamCaptureStatusNone) ==
              static_cast<int>(CU_STREAM_CAPTURE_STATUS_NONE));
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  CUDAMUX_RT_CALL(
      drv::cuStreamIsCapturing(stream, reinterpret_cast<CUstreamCaptureStatus*>(status)));
}
cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  CUDAMUX_RT_CALL(
      drv::cuStreamIsCapturing_ptsz(stream, reinterpret_cast<CUstreamCaptureStatus*>(status)));
}

// cudaLaunchAttributeID / cudaLaunchAttributeValue are the driver's types under the runtime's
// names: same values, same layout.
static_assert(sizeof(cudaLaunchAttributeValue) == sizeof(CUlaunchAttributeValue));
static_assert(static_cast<int>(cudaLaunchAttributeAccessPolicyWindow) ==
              CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW);
static_assert(static_cast<int>(cudaLaunchAttributeMemSyncDomain) ==
              CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN);
cudaError_t cudaStreamSetAttribute(cudaStream_t s, cudaLaunchAttributeID attr,
                                   const cudaLaunchAttributeValue* value) {
  CUDAMUX_RT_CALL(drv::cuStreamSetAttribute(s, static_cast<CUstreamAttrID>(attr),
                                            reinterpret_cast<const CUstreamAttrValue*>(value)));
}
cudaError_t cudaStreamSetAttribute_ptsz(cudaStream_t s, cudaLaunchAttributeID attr,
                                        const cudaLaunchAttributeValue* value) {
  CUDAMUX_RT_CALL(drv::cuStreamSetAttribute_ptsz(
      s, static_cast<CUstreamAttrID>(attr), reinterpret_cast<const CUstreamAttrValue*>(value)));
}
cudaError_t cudaStreamGetAttribute(cudaStream_t s, cudaLaunchAttributeID attr,
                                   cudaLaunchAttributeValue* value) {
  CUDAMUX_RT_CALL(drv::cuStreamGetAttribute(s, static_cast<CUstreamAttrID>(attr),
                                            reinterpret_cast<CUstreamAttrValue*>(value)));
}
cudaError_t cudaStreamGetAttribute_ptsz(cudaStream_t s, cudaLaunchAttributeID attr,
                                        cudaLaunchAttributeValue* value) {
  CUDAMUX_RT_CALL(drv::cuStreamGetAttribute_ptsz(s, static_cast<CUstreamAttrID>(attr),
                                                 reinterpret_cast<CUstreamAttrValue*>(value)));
}
cudaError_t cudaStreamCopyAttributes(cudaStream_t dst, cudaStream_t src) {
  CUDAMUX_RT_CALL(drv::cuStreamCopyAttributes(dst, src));
}
cudaError_t cudaStreamCopyAttributes_ptsz(cudaStream_t dst, cudaStream_t src) {
  CUDAMUX_RT_CALL(drv::cuStreamCopyAttributes_ptsz(dst, src));
}

#undef CUDAMUX_RT_CALL

// --- IPC and managed memory attachment (issue 17): the handles have the driver's layout ---
#define RT_IPC_CALL(expr)                    \
  do {                                       \
    if (cudaError_t e_ = enter()) return e_; \
    return map(expr);                        \
  } while (0)
static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(CUipcMemHandle));
static_assert(sizeof(cudaIpcEventHandle_t) == sizeof(CUipcEventHandle));

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* devPtr) {
  if (!handle) return reject(cudaErrorInvalidValue, "cudaIpcGetMemHandle", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  CUipcMemHandle h{};
  if (const CUresult r = drv::cuIpcGetMemHandle(&h, reinterpret_cast<CUdeviceptr>(devPtr)))
    return map(r);
  std::memcpy(handle, &h, sizeof h);
  return cudaSuccess;
}
cudaError_t cudaIpcOpenMemHandle(void** devPtr, cudaIpcMemHandle_t handle, unsigned int flags) {
  if (!devPtr) return reject(cudaErrorInvalidValue, "cudaIpcOpenMemHandle", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  CUipcMemHandle h{};
  std::memcpy(&h, &handle, sizeof h);
  CUdeviceptr p = 0;
  if (const CUresult r = drv::cuIpcOpenMemHandle_v2(&p, h, flags)) return map(r);
  *devPtr = reinterpret_cast<void*>(p);
  return cudaSuccess;
}
cudaError_t cudaIpcCloseMemHandle(void* devPtr) {
  RT_IPC_CALL(drv::cuIpcCloseMemHandle(reinterpret_cast<CUdeviceptr>(devPtr)));
}
cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t* handle, cudaEvent_t event) {
  if (!handle) return reject(cudaErrorInvalidValue, "cudaIpcGetEventHandle", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  CUipcEventHandle h{};
  if (const CUresult r = drv::cuIpcGetEventHandle(&h, event)) return map(r);
  std::memcpy(handle, &h, sizeof h);
  return cudaSuccess;
}
cudaError_t cudaIpcOpenEventHandle(cudaEvent_t* event, cudaIpcEventHandle_t handle) {
  if (!event) return reject(cudaErrorInvalidValue, "cudaIpcOpenEventHandle", "null out-pointer");
  CUipcEventHandle h{};
  std::memcpy(&h, &handle, sizeof h);
  RT_IPC_CALL(drv::cuIpcOpenEventHandle(event, h));
}
cudaError_t cudaStreamAttachMemAsync(cudaStream_t stream, void* devPtr, size_t length,
                                     unsigned int flags) {
  RT_IPC_CALL(
      drv::cuStreamAttachMemAsync(stream, reinterpret_cast<CUdeviceptr>(devPtr), length, flags));
}
cudaError_t cudaStreamAttachMemAsync_ptsz(cudaStream_t stream, void* devPtr, size_t length,
                                          unsigned int flags) {
  RT_IPC_CALL(drv::cuStreamAttachMemAsync_ptsz(stream, reinterpret_cast<CUdeviceptr>(devPtr),
                                               length, flags));
}

#undef RT_IPC_CALL

}  // namespace cudamux::rt::impl
