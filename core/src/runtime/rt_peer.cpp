// Runtime API (issue 17): peer copies, P2P link queries and batch copies, on the driver's.
#include <spdlog/spdlog.h>

#include <cstring>

#include "cudamux/driver_impl.hpp"
#include "cudamux/runtime_impl.hpp"
#include "rt_internal.hpp"

namespace cudamux::rt {
namespace {

namespace drv = cudamux::impl;

// The runtime's batch structures are the driver's, field for field.
static_assert(sizeof(cudaMemcpyAttributes) == sizeof(CUmemcpyAttributes));
static_assert(sizeof(cudaMemcpy3DBatchOp) == sizeof(CUDA_MEMCPY3D_BATCH_OP));
static_assert(sizeof(cudaMemcpy3DOperand) == sizeof(CUmemcpy3DOperand));
static_assert(sizeof(void*) == sizeof(CUdeviceptr));

cudaError_t check_device(int device, const char* fn) noexcept {
  if (cudaError_t e = ensure_init()) return e;
  if (!core::Core::get().valid_device(device))
    return reject(cudaErrorInvalidDevice, fn, "no such device");
  return cudaSuccess;
}

cudaError_t copy_3d_peer(const cudaMemcpy3DPeerParms* p, cudaStream_t stream, bool async, bool pt,
                         const char* fn) noexcept {
  if (!p) return reject(cudaErrorInvalidValue, fn, "null parameters");
  if (cudaError_t e = enter()) return e;
  if (cudaError_t e = check_device(p->srcDevice, fn)) return e;
  if (cudaError_t e = check_device(p->dstDevice, fn)) return e;
  CUDA_MEMCPY3D_PEER d;
  std::memset(&d, 0, sizeof d);
  if (cudaError_t e = primary_context(p->srcDevice, d.srcContext)) return e;
  if (cudaError_t e = primary_context(p->dstDevice, d.dstContext)) return e;
  if (p->srcArray || p->dstArray) {  // issue 17: array ends (rt_array.cpp)
    CUDA_MEMCPY3D a;
    if (cudaError_t e = array_params_3d(p->srcArray, p->srcPos, p->srcPtr, p->dstArray, p->dstPos,
                                        p->dstPtr, p->extent, cudaMemcpyDefault, true, a, fn))
      return e;
    d.srcXInBytes = a.srcXInBytes;
    d.srcY = a.srcY;
    d.srcZ = a.srcZ;
    d.srcMemoryType = a.srcMemoryType;
    d.srcDevice = a.srcDevice;
    d.srcArray = a.srcArray;
    d.srcPitch = a.srcPitch;
    d.srcHeight = a.srcHeight;
    d.dstXInBytes = a.dstXInBytes;
    d.dstY = a.dstY;
    d.dstZ = a.dstZ;
    d.dstMemoryType = a.dstMemoryType;
    d.dstDevice = a.dstDevice;
    d.dstArray = a.dstArray;
    d.dstPitch = a.dstPitch;
    d.dstHeight = a.dstHeight;
    d.WidthInBytes = a.WidthInBytes;
    d.Height = a.Height;
    d.Depth = a.Depth;
    if (!async) return map(pt ? drv::cuMemcpy3DPeer_ptds(&d) : drv::cuMemcpy3DPeer(&d));
    return map(pt ? drv::cuMemcpy3DPeerAsync_ptsz(&d, stream)
                  : drv::cuMemcpy3DPeerAsync(&d, stream));
  }
  // Unified addressing: each pointer names its own memory (device memory of either device,
  // or host memory).
  d.srcMemoryType = d.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  d.srcDevice = reinterpret_cast<CUdeviceptr>(p->srcPtr.ptr);
  d.dstDevice = reinterpret_cast<CUdeviceptr>(p->dstPtr.ptr);
  d.srcPitch = p->srcPtr.pitch;
  d.srcHeight = p->srcPtr.ysize;
  d.srcXInBytes = p->srcPos.x;  // without arrays, positions and widths are in bytes
  d.srcY = p->srcPos.y;
  d.srcZ = p->srcPos.z;
  d.dstPitch = p->dstPtr.pitch;
  d.dstHeight = p->dstPtr.ysize;
  d.dstXInBytes = p->dstPos.x;
  d.dstY = p->dstPos.y;
  d.dstZ = p->dstPos.z;
  d.WidthInBytes = p->extent.width;
  d.Height = p->extent.height;
  d.Depth = p->extent.depth;
  if ((d.srcPitch && d.WidthInBytes > d.srcPitch) || (d.dstPitch && d.WidthInBytes > d.dstPitch))
    return reject(cudaErrorInvalidPitchValue, fn, "width exceeds a pitch");
  if (!async) return map(pt ? drv::cuMemcpy3DPeer_ptds(&d) : drv::cuMemcpy3DPeer(&d));
  return map(pt ? drv::cuMemcpy3DPeerAsync_ptsz(&d, stream) : drv::cuMemcpy3DPeerAsync(&d, stream));
}

cudaError_t batch_1d(void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count,
                     cudaMemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                     cudaStream_t stream, bool pt) noexcept {
  if (cudaError_t e = enter()) return e;
  // The driver takes the same arrays (pointers as CUdeviceptr) and does not write them.
  auto* d = reinterpret_cast<CUdeviceptr*>(const_cast<void**>(dsts));
  auto* s = reinterpret_cast<CUdeviceptr*>(const_cast<void**>(srcs));
  auto* n = const_cast<size_t*>(sizes);
  auto* a = reinterpret_cast<CUmemcpyAttributes*>(attrs);
  return map(pt ? drv::cuMemcpyBatchAsync_v2_ptsz(d, s, n, count, a, attrsIdxs, numAttrs, stream)
                : drv::cuMemcpyBatchAsync_v2(d, s, n, count, a, attrsIdxs, numAttrs, stream));
}

cudaError_t batch_3d(size_t numOps, cudaMemcpy3DBatchOp* opList, unsigned long long flags,
                     cudaStream_t stream, bool pt) noexcept {
  if (cudaError_t e = enter()) return e;
  if (opList) {
    for (size_t i = 0; i < numOps; ++i) {
      if (opList[i].src.type == cudaMemcpyOperandTypeArray ||
          opList[i].dst.type == cudaMemcpyOperandTypeArray)
        return reject(cudaErrorNotSupported, "cudaMemcpy3DBatchAsync",
                      "CUDA array operands are not supported yet");
    }
  }
  auto* ops = reinterpret_cast<CUDA_MEMCPY3D_BATCH_OP*>(opList);
  return map(pt ? drv::cuMemcpy3DBatchAsync_v2_ptsz(numOps, ops, flags, stream)
                : drv::cuMemcpy3DBatchAsync_v2(numOps, ops, flags, stream));
}

}  // namespace
}  // namespace cudamux::rt

namespace cudamux::rt::impl {
namespace drv = cudamux::impl;
using cudamux::rt::batch_1d;
using cudamux::rt::batch_3d;
using cudamux::rt::check_device;
using cudamux::rt::copy_3d_peer;

cudaError_t cudaMemcpy3DPeer(const cudaMemcpy3DPeerParms* p) {
  return copy_3d_peer(p, nullptr, false, false, "cudaMemcpy3DPeer");
}
cudaError_t cudaMemcpy3DPeer_ptds(const cudaMemcpy3DPeerParms* p) {
  return copy_3d_peer(p, nullptr, false, true, "cudaMemcpy3DPeer");
}
cudaError_t cudaMemcpy3DPeerAsync(const cudaMemcpy3DPeerParms* p, cudaStream_t stream) {
  return copy_3d_peer(p, stream, true, false, "cudaMemcpy3DPeerAsync");
}
cudaError_t cudaMemcpy3DPeerAsync_ptsz(const cudaMemcpy3DPeerParms* p, cudaStream_t stream) {
  return copy_3d_peer(p, stream, true, true, "cudaMemcpy3DPeerAsync");
}

cudaError_t cudaMemcpyBatchAsync(void* const* dsts, const void* const* srcs, const size_t* sizes,
                                 size_t count, cudaMemcpyAttributes* attrs, size_t* attrsIdxs,
                                 size_t numAttrs, cudaStream_t stream) {
  return batch_1d(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream, false);
}
cudaError_t cudaMemcpyBatchAsync_ptsz(void* const* dsts, const void* const* srcs,
                                      const size_t* sizes, size_t count,
                                      cudaMemcpyAttributes* attrs, size_t* attrsIdxs,
                                      size_t numAttrs, cudaStream_t stream) {
  return batch_1d(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream, true);
}
cudaError_t cudaMemcpy3DBatchAsync(size_t numOps, cudaMemcpy3DBatchOp* opList,
                                   unsigned long long flags, cudaStream_t stream) {
  return batch_3d(numOps, opList, flags, stream, false);
}
cudaError_t cudaMemcpy3DBatchAsync_ptsz(size_t numOps, cudaMemcpy3DBatchOp* opList,
                                        unsigned long long flags, cudaStream_t stream) {
  return batch_3d(numOps, opList, flags, stream, true);
}

cudaError_t cudaDeviceGetP2PAttribute(int* value, cudaDeviceP2PAttr attr, int srcDevice,
                                      int dstDevice) {
  constexpr const char* fn = "cudaDeviceGetP2PAttribute";
  if (!value) return reject(cudaErrorInvalidValue, fn, "null out-pointer");
  if (cudaError_t e = check_device(srcDevice, fn)) return e;
  if (cudaError_t e = check_device(dstDevice, fn)) return e;
  return map(drv::cuDeviceGetP2PAttribute(value, static_cast<CUdevice_P2PAttribute>(attr),
                                          srcDevice, dstDevice));
}

cudaError_t cudaDeviceGetP2PAtomicCapabilities(unsigned int* capabilities,
                                               const cudaAtomicOperation* operations,
                                               unsigned int count, int srcDevice, int dstDevice) {
  constexpr const char* fn = "cudaDeviceGetP2PAtomicCapabilities";
  if (!capabilities || !operations || count == 0)
    return reject(cudaErrorInvalidValue, fn, "null array or count 0");
  if (cudaError_t e = check_device(srcDevice, fn)) return e;
  if (cudaError_t e = check_device(dstDevice, fn)) return e;
  static_assert(sizeof(cudaAtomicOperation) == sizeof(CUatomicOperation));
  return map(drv::cuDeviceGetP2PAtomicCapabilities(
      capabilities, reinterpret_cast<const CUatomicOperation*>(operations), count, srcDevice,
      dstDevice));
}

}  // namespace cudamux::rt::impl
