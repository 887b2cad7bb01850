// Runtime API: memory (allocation, copies for every cudaMemcpyKind, memsets, pointer
// attributes, the default stream-ordered pool), on the driver's memory functions.
#include <spdlog/spdlog.h>

#include <cstring>
#include <mutex>
#include <shared_mutex>

#include "cudamux/driver_impl.hpp"
#include "cudamux/log.hpp"
#include "cudamux/runtime_impl.hpp"
#include "rt_internal.hpp"

namespace cudamux::rt {
namespace {

namespace drv = cudamux::impl;

CUdeviceptr dptr(const void* p) noexcept { return reinterpret_cast<CUdeviceptr>(p); }

// What the allocation registry knows about a pointer, for checking a copy kind.
enum class Mem { pageable, pinned, device, managed };
Mem classify(const void* p) noexcept {
  core::Core& c = core::Core::get();
  std::shared_lock lock(c.alloc_mutex);
  const core::Allocation* a = c.find_allocation(reinterpret_cast<std::uintptr_t>(p));
  if (!a) return Mem::pageable;
  switch (a->kind) {
    case core::AllocKind::device:
      return Mem::device;
    case core::AllocKind::managed:
      return Mem::managed;
    default:
      return Mem::pinned;
  }
}

// CUDA trusts a copy kind only as far as the pointers agree with it: a host side that
// is device memory, or a device side that the device cannot reach, is an invalid value.
cudaError_t check_kind(void* dst, const void* src, cudaMemcpyKind kind, const char* fn) noexcept {
  if (static_cast<unsigned>(kind) > cudaMemcpyDefault)
    return reject(cudaErrorInvalidMemcpyDirection, fn, "not a cudaMemcpyKind");
  if (kind == cudaMemcpyDefault) return cudaSuccess;
  const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  const Mem d = classify(dst), s = classify(src);
  if (dst_dev ? d == Mem::pageable : d == Mem::device)
    return reject(cudaErrorInvalidValue, fn,
                  dst_dev ? "destination is not device-accessible memory"
                          : "destination is device memory but the kind says host");
  if (src_dev ? s == Mem::pageable : s == Mem::device)
    return reject(cudaErrorInvalidValue, fn,
                  src_dev ? "source is not device-accessible memory"
                          : "source is device memory but the kind says host");
  return cudaSuccess;
}

// The driver entry point for the sides' kinds, so device sides get the driver's bounds
// checks against their allocation (cuMemcpy would take an out-of-range device pointer
// for host memory).
cudaError_t copy(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind,
                 cudaStream_t stream, bool async, bool pt, const char* fn) noexcept {
  if (cudaError_t e = enter()) return e;
  // Nothing to copy: nothing to check either. Programs pass one-past-the-end pointers with a
  // zero count (NVIDIA's mergeSort sample does), which NVIDIA's runtime accepts.
  if (count == 0 && !async) return cudaSuccess;
  if (count != 0) {
    if (cudaError_t e = check_kind(dst, src, kind, fn)) return e;
  }
  const bool dd = classify(dst) != Mem::pageable, sd = classify(src) != Mem::pageable;
  const CUdeviceptr d = dptr(dst), s = dptr(src);
  if (!async) {
    if (dd && sd)
      return map(pt ? drv::cuMemcpyDtoD_v2_ptds(d, s, count) : drv::cuMemcpyDtoD_v2(d, s, count));
    if (dd)
      return map(pt ? drv::cuMemcpyHtoD_v2_ptds(d, src, count)
                    : drv::cuMemcpyHtoD_v2(d, src, count));
    if (sd)
      return map(pt ? drv::cuMemcpyDtoH_v2_ptds(dst, s, count)
                    : drv::cuMemcpyDtoH_v2(dst, s, count));
    return map(pt ? drv::cuMemcpy_ptds(d, s, count) : drv::cuMemcpy(d, s, count));
  }
  if (dd && sd)
    return map(pt ? drv::cuMemcpyDtoDAsync_v2_ptsz(d, s, count, stream)
                  : drv::cuMemcpyDtoDAsync_v2(d, s, count, stream));
  if (dd)
    return map(pt ? drv::cuMemcpyHtoDAsync_v2_ptsz(d, src, count, stream)
                  : drv::cuMemcpyHtoDAsync_v2(d, src, count, stream));
  if (sd)
    return map(pt ? drv::cuMemcpyDtoHAsync_v2_ptsz(dst, s, count, stream)
                  : drv::cuMemcpyDtoHAsync_v2(dst, s, count, stream));
  return map(pt ? drv::cuMemcpyAsync_ptsz(d, s, count, stream)
                : drv::cuMemcpyAsync(d, s, count, stream));
}

// Sets one side of a CUDA_MEMCPY2D/3D: device-accessible memory as a device pointer (the
// driver checks it against its allocation), anything else as host memory.
template <class P>
void set_side(const void* ptr, CUmemorytype& type, CUdeviceptr& device, P& host) noexcept {
  if (classify(ptr) != Mem::pageable) {
    type = CU_MEMORYTYPE_DEVICE;
    device = dptr(ptr);
  } else {
    type = CU_MEMORYTYPE_HOST;
    host = ptr;
  }
}

cudaError_t copy_2d(void* dst, std::size_t dpitch, const void* src, std::size_t spitch,
                    std::size_t width, std::size_t height, cudaMemcpyKind kind, cudaStream_t stream,
                    bool async, bool pt, const char* fn) noexcept {
  if (cudaError_t e = enter()) return e;
  if (cudaError_t e = check_kind(dst, src, kind, fn)) return e;
  if (width > dpitch || width > spitch)
    return reject(cudaErrorInvalidPitchValue, fn, "width exceeds a pitch");
  if ((width == 0 || height == 0) && !async) return cudaSuccess;
  CUDA_MEMCPY2D p;
  std::memset(&p, 0, sizeof p);
  set_side(src, p.srcMemoryType, p.srcDevice, p.srcHost);
  const void* dst_host = nullptr;
  set_side(dst, p.dstMemoryType, p.dstDevice, dst_host);
  p.dstHost = const_cast<void*>(dst_host);
  p.srcPitch = spitch;
  p.dstPitch = dpitch;
  p.WidthInBytes = width;
  p.Height = height;
  if (!async) return map(pt ? drv::cuMemcpy2D_v2_ptds(&p) : drv::cuMemcpy2D_v2(&p));
  return map(pt ? drv::cuMemcpy2DAsync_v2_ptsz(&p, stream) : drv::cuMemcpy2DAsync_v2(&p, stream));
}

cudaError_t copy_3d(const cudaMemcpy3DParms* p, cudaStream_t stream, bool async, bool pt,
                    const char* fn) noexcept {
  if (!p) return reject(cudaErrorInvalidValue, fn, "null parameters");
  if (cudaError_t e = enter()) return e;
  if (p->srcArray || p->dstArray) return array_copy_3d(*p, stream, async, pt, fn);  // issue 17
  if (cudaError_t e = check_kind(p->dstPtr.ptr, p->srcPtr.ptr, p->kind, fn)) return e;
  CUDA_MEMCPY3D d;
  std::memset(&d, 0, sizeof d);
  set_side(p->srcPtr.ptr, d.srcMemoryType, d.srcDevice, d.srcHost);
  const void* dst_host = nullptr;
  set_side(p->dstPtr.ptr, d.dstMemoryType, d.dstDevice, dst_host);
  d.dstHost = const_cast<void*>(dst_host);
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
  if (!async) return map(pt ? drv::cuMemcpy3D_v2_ptds(&d) : drv::cuMemcpy3D_v2(&d));
  return map(pt ? drv::cuMemcpy3DAsync_v2_ptsz(&d, stream) : drv::cuMemcpy3DAsync_v2(&d, stream));
}

cudaError_t memset_2d(void* p, std::size_t pitch, int value, std::size_t width, std::size_t height,
                      cudaStream_t stream, bool async, bool pt, const char* fn) noexcept {
  if (cudaError_t e = enter()) return e;
  if (width > pitch && height > 1)
    return reject(cudaErrorInvalidValue, fn, "width exceeds the pitch");
  if ((width == 0 || height == 0) && !async) return cudaSuccess;
  const auto v = static_cast<unsigned char>(value);
  if (!async)
    return map(pt ? drv::cuMemsetD2D8_v2_ptds(dptr(p), pitch, v, width, height)
                  : drv::cuMemsetD2D8_v2(dptr(p), pitch, v, width, height));
  return map(pt ? drv::cuMemsetD2D8Async_ptsz(dptr(p), pitch, v, width, height, stream)
                : drv::cuMemsetD2D8Async(dptr(p), pitch, v, width, height, stream));
}

cudaError_t memset_3d(cudaPitchedPtr ptr, int value, cudaExtent extent, cudaStream_t stream,
                      bool async, bool pt, const char* fn) noexcept {
  if (cudaError_t e = enter()) return e;
  if (extent.width == 0 || extent.height == 0 || extent.depth == 0) return cudaSuccess;
  if (extent.width > ptr.pitch) return reject(cudaErrorInvalidValue, fn, "width exceeds the pitch");
  if (extent.depth > 1 && ptr.ysize < extent.height)
    return reject(cudaErrorInvalidValue, fn, "slice height smaller than the extent");
  std::size_t slice = 0;
  if (__builtin_mul_overflow(ptr.pitch, extent.depth > 1 ? ptr.ysize : extent.height, &slice))
    return reject(cudaErrorInvalidValue, fn, "sizes overflow");
  for (std::size_t z = 0; z < extent.depth; ++z) {
    std::size_t off = 0;
    if (__builtin_mul_overflow(z, slice, &off))
      return reject(cudaErrorInvalidValue, fn, "sizes overflow");
    void* plane = static_cast<char*>(ptr.ptr) + off;
    if (cudaError_t e =
            memset_2d(plane, ptr.pitch, value, extent.width, extent.height, stream, async, pt, fn))
      return e;
  }
  return cudaSuccess;
}

cudaError_t memset_1d(void* p, int value, std::size_t count, cudaStream_t stream, bool async,
                      bool pt) noexcept {
  if (cudaError_t e = enter()) return e;
  if (count == 0 && !async) return cudaSuccess;  // async: the driver still checks the stream
  const auto v = static_cast<unsigned char>(value);
  if (!async)
    return map(pt ? drv::cuMemsetD8_v2_ptds(dptr(p), v, count)
                  : drv::cuMemsetD8_v2(dptr(p), v, count));
  return map(pt ? drv::cuMemsetD8Async_ptsz(dptr(p), v, count, stream)
                : drv::cuMemsetD8Async(dptr(p), v, count, stream));
}

// cudaMemcpyToSymbol / FromSymbol: the symbol's device copy on the current context.
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
                      cudaMemcpyKind kind, cudaStream_t stream, bool async, bool pt,
                      const char* fn) noexcept {
  if (cudaError_t e = enter()) return e;
  if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice &&
      kind != cudaMemcpyDefault)
    return reject(cudaErrorInvalidMemcpyDirection, fn, "kind must copy to the device");
  void* dst = nullptr;
  if (cudaError_t e = symbol_range(symbol, count, offset, dst, fn)) return e;
  return copy(dst, src, count, kind, stream, async, pt, fn);
}

cudaError_t from_symbol(void* dst, const void* symbol, std::size_t count, std::size_t offset,
                        cudaMemcpyKind kind, cudaStream_t stream, bool async, bool pt,
                        const char* fn) noexcept {
  if (cudaError_t e = enter()) return e;
  if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice &&
      kind != cudaMemcpyDefault)
    return reject(cudaErrorInvalidMemcpyDirection, fn, "kind must copy from the device");
  void* src = nullptr;
  if (cudaError_t e = symbol_range(symbol, count, offset, src, fn)) return e;
  return copy(dst, src, count, kind, stream, async, pt, fn);
}

}  // namespace
}  // namespace cudamux::rt

namespace cudamux::rt::impl {

namespace drv = cudamux::impl;
using cudamux::rt::dptr;

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  if (!devPtr) return reject(cudaErrorInvalidValue, "cudaMalloc", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  if (size == 0) {  // CUDA: success and a null pointer
    *devPtr = nullptr;
    return cudaSuccess;
  }
  CUdeviceptr p = 0;
  if (const CUresult r = drv::cuMemAlloc_v2(&p, size)) return map(r);
  *devPtr = reinterpret_cast<void*>(p);
  return cudaSuccess;
}

cudaError_t cudaFree(void* devPtr) {
  if (cudaError_t e = enter()) return e;  // cudaFree(0) is the idiom that initialises the context
  if (!devPtr) return cudaSuccess;
  return map(drv::cuMemFree_v2(dptr(devPtr)));
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  if (!ptr) return reject(cudaErrorInvalidValue, "cudaMallocHost", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  return map(drv::cuMemAllocHost_v2(ptr, size));
}

cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  if (!pHost) return reject(cudaErrorInvalidValue, "cudaHostAlloc", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  return map(drv::cuMemHostAlloc(pHost, size, flags));  // flag bits equal CU_MEMHOSTALLOC_*
}

cudaError_t cudaFreeHost(void* ptr) {
  if (cudaError_t e = enter()) return e;
  if (!ptr) return cudaSuccess;
  return map(drv::cuMemFreeHost(ptr));
}

cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuMemHostRegister_v2(ptr, size, flags));  // flag bits equal CU_MEMHOSTREGISTER_*
}

cudaError_t cudaHostUnregister(void* ptr) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuMemHostUnregister(ptr));
}

cudaError_t cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int flags) {
  if (!pDevice)
    return reject(cudaErrorInvalidValue, "cudaHostGetDevicePointer", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  CUdeviceptr d = 0;
  if (const CUresult r = drv::cuMemHostGetDevicePointer_v2(&d, pHost, flags)) return map(r);
  *pDevice = reinterpret_cast<void*>(d);
  return cudaSuccess;
}

cudaError_t cudaHostGetFlags(unsigned int* pFlags, void* pHost) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuMemHostGetFlags(pFlags, pHost));
}

cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  if (!devPtr) return reject(cudaErrorInvalidValue, "cudaMallocManaged", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  CUdeviceptr p = 0;
  if (const CUresult r = drv::cuMemAllocManaged(&p, size, flags)) return map(r);
  *devPtr = reinterpret_cast<void*>(p);
  return cudaSuccess;
}

cudaError_t cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
  if (!devPtr || !pitch)
    return reject(cudaErrorInvalidValue, "cudaMallocPitch", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  CUdeviceptr p = 0;
  // The runtime allows any element size; 4 bytes gives the driver's usual alignment.
  if (const CUresult r = drv::cuMemAllocPitch_v2(&p, pitch, width, height, 4)) return map(r);
  *devPtr = reinterpret_cast<void*>(p);
  return cudaSuccess;
}

cudaError_t cudaMalloc3D(cudaPitchedPtr* pitchedDevPtr, cudaExtent extent) {
  if (!pitchedDevPtr) return reject(cudaErrorInvalidValue, "cudaMalloc3D", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  std::size_t rows = 0;
  if (__builtin_mul_overflow(extent.height, extent.depth, &rows))
    return reject(cudaErrorMemoryAllocation, "cudaMalloc3D", "extent overflows");
  cudaPitchedPtr out{nullptr, 0, extent.width, extent.height};
  if (extent.width && rows) {
    CUdeviceptr p = 0;
    if (const CUresult r = drv::cuMemAllocPitch_v2(&p, &out.pitch, extent.width, rows, 4))
      return map(r);
    out.ptr = reinterpret_cast<void*>(p);
  }
  *pitchedDevPtr = out;
  return cudaSuccess;
}

// Managed memory hints: the runtime's location type is the driver's under another name.
static_assert(sizeof(cudaMemLocation) == sizeof(CUmemLocation));
static CUmemLocation driver_location(cudaMemLocation l) {
  CUmemLocation out{};
  out.type = static_cast<CUmemLocationType>(l.type);
  out.id = l.id;
  return out;
}
cudaError_t cudaMemAdvise(const void* devPtr, size_t count, cudaMemoryAdvise advice,
                          cudaMemLocation location) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuMemAdvise_v2(reinterpret_cast<CUdeviceptr>(devPtr), count,
                                 static_cast<CUmem_advise>(advice), driver_location(location)));
}
cudaError_t cudaMemPrefetchAsync(const void* devPtr, size_t count, cudaMemLocation location,
                                 unsigned int flags, cudaStream_t stream) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuMemPrefetchAsync_v2(reinterpret_cast<CUdeviceptr>(devPtr), count,
                                        driver_location(location), flags, stream));
}
cudaError_t cudaMemPrefetchAsync_ptsz(const void* devPtr, size_t count, cudaMemLocation location,
                                      unsigned int flags, cudaStream_t stream) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuMemPrefetchAsync_v2_ptsz(reinterpret_cast<CUdeviceptr>(devPtr), count,
                                             driver_location(location), flags, stream));
}
cudaError_t cudaMemRangeGetAttribute(void* data, size_t dataSize, cudaMemRangeAttribute attribute,
                                     const void* devPtr, size_t count) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuMemRangeGetAttribute(data, dataSize,
                                         static_cast<CUmem_range_attribute>(attribute),
                                         reinterpret_cast<CUdeviceptr>(devPtr), count));
}
cudaError_t cudaMemRangeGetAttributes(void** data, size_t* dataSizes,
                                      cudaMemRangeAttribute* attributes, size_t numAttributes,
                                      const void* devPtr, size_t count) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuMemRangeGetAttributes(
      data, dataSizes, reinterpret_cast<CUmem_range_attribute*>(attributes), numAttributes,
      reinterpret_cast<CUdeviceptr>(devPtr), count));
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuMemGetInfo_v2(free, total));
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return copy(dst, src, count, kind, nullptr, false, false, "cudaMemcpy");
}
cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return copy(dst, src, count, kind, nullptr, false, true, "cudaMemcpy");
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return copy(dst, src, count, kind, stream, true, false, "cudaMemcpyAsync");
}
cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                                 cudaStream_t stream) {
  return copy(dst, src, count, kind, stream, true, true, "cudaMemcpyAsync");
}

cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                         size_t height, cudaMemcpyKind kind) {
  return copy_2d(dst, dpitch, src, spitch, width, height, kind, nullptr, false, false,
                 "cudaMemcpy2D");
}
cudaError_t cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind) {
  return copy_2d(dst, dpitch, src, spitch, width, height, kind, nullptr, false, true,
                 "cudaMemcpy2D");
}
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind,
                              cudaStream_t stream) {
  return copy_2d(dst, dpitch, src, spitch, width, height, kind, stream, true, false,
                 "cudaMemcpy2DAsync");
}
cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch,
                                   size_t width, size_t height, cudaMemcpyKind kind,
                                   cudaStream_t stream) {
  return copy_2d(dst, dpitch, src, spitch, width, height, kind, stream, true, true,
                 "cudaMemcpy2DAsync");
}

cudaError_t cudaMemcpy3D(const cudaMemcpy3DParms* p) {
  return copy_3d(p, nullptr, false, false, "cudaMemcpy3D");
}
cudaError_t cudaMemcpy3D_ptds(const cudaMemcpy3DParms* p) {
  return copy_3d(p, nullptr, false, true, "cudaMemcpy3D");
}
cudaError_t cudaMemcpy3DAsync(const cudaMemcpy3DParms* p, cudaStream_t stream) {
  return copy_3d(p, stream, true, false, "cudaMemcpy3DAsync");
}
cudaError_t cudaMemcpy3DAsync_ptsz(const cudaMemcpy3DParms* p, cudaStream_t stream) {
  return copy_3d(p, stream, true, true, "cudaMemcpy3DAsync");
}

namespace {
cudaError_t peer_copy(void* dst, int dstDevice, const void* src, int srcDevice, size_t count,
                      cudaStream_t stream, bool async, bool pt, const char* fn) {
  if (cudaError_t e = enter()) return e;
  CUcontext dc = nullptr, sc = nullptr;
  if (!core::Core::get().valid_device(dstDevice) || !core::Core::get().valid_device(srcDevice))
    return reject(cudaErrorInvalidDevice, fn, "no such device");
  if (cudaError_t e = primary_context(dstDevice, dc)) return e;
  if (cudaError_t e = primary_context(srcDevice, sc)) return e;
  if (count == 0) return cudaSuccess;
  if (!async)
    return map(pt ? drv::cuMemcpyPeer_ptds(dptr(dst), dc, dptr(src), sc, count)
                  : drv::cuMemcpyPeer(dptr(dst), dc, dptr(src), sc, count));
  return map(pt ? drv::cuMemcpyPeerAsync_ptsz(dptr(dst), dc, dptr(src), sc, count, stream)
                : drv::cuMemcpyPeerAsync(dptr(dst), dc, dptr(src), sc, count, stream));
}
}  // namespace

cudaError_t cudaMemcpyPeer(void* dst, int dstDevice, const void* src, int srcDevice, size_t count) {
  return peer_copy(dst, dstDevice, src, srcDevice, count, nullptr, false, false, "cudaMemcpyPeer");
}
cudaError_t cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src, int srcDevice,
                                size_t count, cudaStream_t stream) {
  return peer_copy(dst, dstDevice, src, srcDevice, count, stream, true, false,
                   "cudaMemcpyPeerAsync");
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  return memset_1d(devPtr, value, count, nullptr, false, false);
}
cudaError_t cudaMemset_ptds(void* devPtr, int value, size_t count) {
  return memset_1d(devPtr, value, count, nullptr, false, true);
}
cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return memset_1d(devPtr, value, count, stream, true, false);
}
cudaError_t cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return memset_1d(devPtr, value, count, stream, true, true);
}
cudaError_t cudaMemset2D(void* devPtr, size_t pitch, int value, size_t width, size_t height) {
  return memset_2d(devPtr, pitch, value, width, height, nullptr, false, false, "cudaMemset2D");
}
cudaError_t cudaMemset2D_ptds(void* devPtr, size_t pitch, int value, size_t width, size_t height) {
  return memset_2d(devPtr, pitch, value, width, height, nullptr, false, true, "cudaMemset2D");
}
cudaError_t cudaMemset2DAsync(void* devPtr, size_t pitch, int value, size_t width, size_t height,
                              cudaStream_t stream) {
  return memset_2d(devPtr, pitch, value, width, height, stream, true, false, "cudaMemset2DAsync");
}
cudaError_t cudaMemset2DAsync_ptsz(void* devPtr, size_t pitch, int value, size_t width,
                                   size_t height, cudaStream_t stream) {
  return memset_2d(devPtr, pitch, value, width, height, stream, true, true, "cudaMemset2DAsync");
}
cudaError_t cudaMemset3D(cudaPitchedPtr p, int value, cudaExtent extent) {
  return memset_3d(p, value, extent, nullptr, false, false, "cudaMemset3D");
}
cudaError_t cudaMemset3D_ptds(cudaPitchedPtr p, int value, cudaExtent extent) {
  return memset_3d(p, value, extent, nullptr, false, true, "cudaMemset3D");
}
cudaError_t cudaMemset3DAsync(cudaPitchedPtr p, int value, cudaExtent extent, cudaStream_t stream) {
  return memset_3d(p, value, extent, stream, true, false, "cudaMemset3DAsync");
}
cudaError_t cudaMemset3DAsync_ptsz(cudaPitchedPtr p, int value, cudaExtent extent,
                                   cudaStream_t stream) {
  return memset_3d(p, value, extent, stream, true, true, "cudaMemset3DAsync");
}

cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                               cudaMemcpyKind kind) {
  return to_symbol(symbol, src, count, offset, kind, nullptr, false, false, "cudaMemcpyToSymbol");
}
cudaError_t cudaMemcpyToSymbol_ptds(const void* symbol, const void* src, size_t count,
                                    size_t offset, cudaMemcpyKind kind) {
  return to_symbol(symbol, src, count, offset, kind, nullptr, false, true, "cudaMemcpyToSymbol");
}
cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count,
                                    size_t offset, cudaMemcpyKind kind, cudaStream_t stream) {
  return to_symbol(symbol, src, count, offset, kind, stream, true, false,
                   "cudaMemcpyToSymbolAsync");
}
cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void* symbol, const void* src, size_t count,
                                         size_t offset, cudaMemcpyKind kind, cudaStream_t stream) {
  return to_symbol(symbol, src, count, offset, kind, stream, true, true, "cudaMemcpyToSymbolAsync");
}
cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                                 cudaMemcpyKind kind) {
  return from_symbol(dst, symbol, count, offset, kind, nullptr, false, false,
                     "cudaMemcpyFromSymbol");
}
cudaError_t cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol, size_t count, size_t offset,
                                      cudaMemcpyKind kind) {
  return from_symbol(dst, symbol, count, offset, kind, nullptr, false, true,
                     "cudaMemcpyFromSymbol");
}
cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset,
                                      cudaMemcpyKind kind, cudaStream_t stream) {
  return from_symbol(dst, symbol, count, offset, kind, stream, true, false,
                     "cudaMemcpyFromSymbolAsync");
}
cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* symbol, size_t count,
                                           size_t offset, cudaMemcpyKind kind,
                                           cudaStream_t stream) {
  return from_symbol(dst, symbol, count, offset, kind, stream, true, true,
                     "cudaMemcpyFromSymbolAsync");
}

cudaError_t cudaGetSymbolAddress(void** devPtr, const void* symbol) {
  if (!devPtr) return reject(cudaErrorInvalidValue, "cudaGetSymbolAddress", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  CUdeviceptr p = 0;
  std::size_t size = 0;
  if (cudaError_t e = symbol_address(symbol, p, size))
    return reject(e, "cudaGetSymbolAddress", "unknown symbol");
  *devPtr = reinterpret_cast<void*>(p);
  return cudaSuccess;
}

cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
  if (!size) return reject(cudaErrorInvalidValue, "cudaGetSymbolSize", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  CUdeviceptr p = 0;
  if (cudaError_t e = symbol_address(symbol, p, *size))
    return reject(e, "cudaGetSymbolSize", "unknown symbol");
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  if (!attributes)
    return reject(cudaErrorInvalidValue, "cudaPointerGetAttributes", "null out-pointer");
  if (cudaError_t e = enter()) return e;
  unsigned type = 0;
  int ordinal = -2;
  CUdeviceptr dev = 0;
  void* host = nullptr;
  int managed = 0;
  CUpointer_attribute which[] = {
      CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
      CU_POINTER_ATTRIBUTE_DEVICE_POINTER, CU_POINTER_ATTRIBUTE_HOST_POINTER,
      CU_POINTER_ATTRIBUTE_IS_MANAGED};
  void* data[] = {&type, &ordinal, &dev, &host, &managed};
  if (const CUresult r = drv::cuPointerGetAttributes(5, which, data, dptr(ptr))) return map(r);
  cudaPointerAttributes a{};
  if (managed) {
    a.type = cudaMemoryTypeManaged;
  } else if (type == CU_MEMORYTYPE_DEVICE) {
    a.type = cudaMemoryTypeDevice;
  } else if (type == CU_MEMORYTYPE_HOST) {
    a.type = cudaMemoryTypeHost;
  } else {
    // Memory CUDA does not know: unregistered, as NVIDIA's runtime reports it since 11.0.
    a.type = cudaMemoryTypeUnregistered;
    a.device = cudaInvalidDeviceId;
    a.hostPointer = const_cast<void*>(ptr);
    *attributes = a;
    return cudaSuccess;
  }
  a.device = ordinal;
  a.devicePointer = reinterpret_cast<void*>(dev);
  a.hostPointer = a.type == cudaMemoryTypeDevice ? nullptr : host;
  *attributes = a;
  return cudaSuccess;
}

// --- stream-ordered allocation: the driver's pools (core/src/mempool.cpp) ---
// The runtime's enums and structs of pools equal the driver's (values and layouts).

namespace {
cudaError_t malloc_async(void** p, size_t size, cudaMemPool_t pool, cudaStream_t stream, bool pt,
                         const char* fn) {
  if (!p) return reject(cudaErrorInvalidValue, fn, "null out-pointer");
  if (cudaError_t e = enter()) return e;
  CUdeviceptr d = 0;
  CUresult r = CUDA_SUCCESS;
  if (pool) {
    r = pt ? drv::cuMemAllocFromPoolAsync_ptsz(&d, size, pool, stream)
           : drv::cuMemAllocFromPoolAsync(&d, size, pool, stream);
  } else {
    r = pt ? drv::cuMemAllocAsync_ptsz(&d, size, stream) : drv::cuMemAllocAsync(&d, size, stream);
  }
  if (r) return map(r);
  *p = reinterpret_cast<void*>(d);
  return cudaSuccess;
}
cudaError_t free_async(void* p, cudaStream_t stream, bool pt) {
  if (cudaError_t e = enter()) return e;
  return map(pt ? drv::cuMemFreeAsync_ptsz(dptr(p), stream) : drv::cuMemFreeAsync(dptr(p), stream));
}
}  // namespace

cudaError_t cudaMallocAsync(void** p, size_t size, cudaStream_t stream) {
  return malloc_async(p, size, nullptr, stream, false, "cudaMallocAsync");
}
cudaError_t cudaMallocAsync_ptsz(void** p, size_t size, cudaStream_t stream) {
  return malloc_async(p, size, nullptr, stream, true, "cudaMallocAsync");
}
cudaError_t cudaMallocFromPoolAsync(void** p, size_t size, cudaMemPool_t pool,
                                    cudaStream_t stream) {
  if (!pool) return reject(cudaErrorInvalidValue, "cudaMallocFromPoolAsync", "null pool");
  return malloc_async(p, size, pool, stream, false, "cudaMallocFromPoolAsync");
}
cudaError_t cudaMallocFromPoolAsync_ptsz(void** p, size_t size, cudaMemPool_t pool,
                                         cudaStream_t stream) {
  if (!pool) return reject(cudaErrorInvalidValue, "cudaMallocFromPoolAsync", "null pool");
  return malloc_async(p, size, pool, stream, true, "cudaMallocFromPoolAsync");
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t stream) { return free_async(p, stream, false); }
cudaError_t cudaFreeAsync_ptsz(void* p, cudaStream_t stream) { return free_async(p, stream, true); }

cudaError_t cudaMemPoolCreate(cudaMemPool_t* memPool, const cudaMemPoolProps* poolProps) {
  if (cudaError_t e = ensure_init()) return e;
  return map(drv::cuMemPoolCreate(memPool, reinterpret_cast<const CUmemPoolProps*>(poolProps)));
}
cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool) {
  if (cudaError_t e = ensure_init()) return e;
  return map(drv::cuMemPoolDestroy(memPool));
}
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
  if (cudaError_t e = ensure_init()) return e;
  return map(drv::cuMemPoolSetAttribute(memPool, static_cast<CUmemPool_attribute>(attr), value));
}
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
  if (cudaError_t e = ensure_init()) return e;
  return map(drv::cuMemPoolGetAttribute(memPool, static_cast<CUmemPool_attribute>(attr), value));
}
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
  if (cudaError_t e = ensure_init()) return e;
  return map(drv::cuMemPoolTrimTo(memPool, minBytesToKeep));
}
cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool, const cudaMemAccessDesc* descList,
                                 size_t count) {
  if (cudaError_t e = ensure_init()) return e;
  return map(
      drv::cuMemPoolSetAccess(memPool, reinterpret_cast<const CUmemAccessDesc*>(descList), count));
}
cudaError_t cudaMemPoolGetAccess(cudaMemAccessFlags* flags, cudaMemPool_t memPool,
                                 cudaMemLocation* location) {
  if (cudaError_t e = ensure_init()) return e;
  return map(drv::cuMemPoolGetAccess(reinterpret_cast<CUmemAccess_flags*>(flags), memPool,
                                     reinterpret_cast<CUmemLocation*>(location)));
}
cudaError_t cudaMemPoolExportToShareableHandle(void* shareableHandle, cudaMemPool_t memPool,
                                               cudaMemAllocationHandleType handleType,
                                               unsigned int flags) {
  if (cudaError_t e = ensure_init()) return e;
  return map(drv::cuMemPoolExportToShareableHandle(
      shareableHandle, memPool, static_cast<CUmemAllocationHandleType>(handleType), flags));
}
cudaError_t cudaMemPoolImportFromShareableHandle(cudaMemPool_t* memPool, void* shareableHandle,
                                                 cudaMemAllocationHandleType handleType,
                                                 unsigned int flags) {
  if (cudaError_t e = ensure_init()) return e;
  return map(drv::cuMemPoolImportFromShareableHandle(
      memPool, shareableHandle, static_cast<CUmemAllocationHandleType>(handleType), flags));
}
cudaError_t cudaMemPoolExportPointer(cudaMemPoolPtrExportData* exportData, void* ptr) {
  if (cudaError_t e = ensure_init()) return e;
  return map(drv::cuMemPoolExportPointer(reinterpret_cast<CUmemPoolPtrExportData*>(exportData),
                                         dptr(ptr)));
}
cudaError_t cudaMemPoolImportPointer(void** ptr, cudaMemPool_t memPool,
                                     cudaMemPoolPtrExportData* exportData) {
  if (!ptr) return reject(cudaErrorInvalidValue, "cudaMemPoolImportPointer", "null out-pointer");
  if (cudaError_t e = ensure_init()) return e;
  CUdeviceptr d = 0;
  if (const CUresult r = drv::cuMemPoolImportPointer(
          &d, memPool, reinterpret_cast<CUmemPoolPtrExportData*>(exportData)))
    return map(r);
  *ptr = reinterpret_cast<void*>(d);
  return cudaSuccess;
}
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
  if (cudaError_t e = ensure_init()) return e;
  return map(drv::cuDeviceGetDefaultMemPool(memPool, device));
}
cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* memPool, int device) {
  if (cudaError_t e = ensure_init()) return e;
  return map(drv::cuDeviceGetMemPool(memPool, device));
}
cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool) {
  if (cudaError_t e = ensure_init()) return e;
  return map(drv::cuDeviceSetMemPool(device, memPool));
}
cudaError_t cudaMemGetDefaultMemPool(cudaMemPool_t* memPool, cudaMemLocation* location,
                                     cudaMemAllocationType type) {
  if (cudaError_t e = ensure_init()) return e;
  return map(drv::cuMemGetDefaultMemPool(memPool, reinterpret_cast<CUmemLocation*>(location),
                                         static_cast<CUmemAllocationType>(type)));
}
cudaError_t cudaMemGetMemPool(cudaMemPool_t* memPool, cudaMemLocation* location,
                              cudaMemAllocationType type) {
  if (cudaError_t e = ensure_init()) return e;
  return map(drv::cuMemGetMemPool(memPool, reinterpret_cast<CUmemLocation*>(location),
                                  static_cast<CUmemAllocationType>(type)));
}
cudaError_t cudaMemSetMemPool(cudaMemLocation* location, cudaMemAllocationType type,
                              cudaMemPool_t memPool) {
  if (cudaError_t e = ensure_init()) return e;
  return map(drv::cuMemSetMemPool(reinterpret_cast<CUmemLocation*>(location),
                                  static_cast<CUmemAllocationType>(type), memPool));
}

}  // namespace cudamux::rt::impl
