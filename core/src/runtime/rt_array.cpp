// Runtime API: CUDA arrays and mipmapped arrays and the copies with array ends (issue 17), over
// the driver's (array.cpp, memory.cpp). cudaArray_t and cudaMipmappedArray_t are the driver's
// CUarray and CUmipmappedArray, as with NVIDIA's runtime. A cudaChannelFormatDesc maps to a
// CUarray_format and channel count the way NVIDIA's runtime maps it: the non-zero sizes of
// x, y, z, w name the channels (1, 2 or 4, all of one size), the kind and that size the
// format; the normalized kinds name a format of their own.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <shared_mutex>

#include "../array.hpp"
#include "cudamux/driver_impl.hpp"
#include "cudamux/log.hpp"
#include "cudamux/runtime_impl.hpp"
#include "rt_internal.hpp"

namespace cudamux::rt {
namespace {

namespace drv = cudamux::impl;

CUarray cu(cudaArray_const_t a) noexcept {
  return reinterpret_cast<CUarray>(const_cast<cudaArray*>(a));
}
CUmipmappedArray cu(cudaMipmappedArray_const_t m) noexcept {
  return reinterpret_cast<CUmipmappedArray>(const_cast<cudaMipmappedArray*>(m));
}

struct NormalizedKind {
  cudaChannelFormatKind kind;
  CUarray_format format;
  unsigned channels;
  int bits;
};
constexpr NormalizedKind kNormalized[] = {
    {cudaChannelFormatKindUnsignedNormalized8X1, CU_AD_FORMAT_UNORM_INT8X1, 1, 8},
    {cudaChannelFormatKindUnsignedNormalized8X2, CU_AD_FORMAT_UNORM_INT8X2, 2, 8},
    {cudaChannelFormatKindUnsignedNormalized8X4, CU_AD_FORMAT_UNORM_INT8X4, 4, 8},
    {cudaChannelFormatKindUnsignedNormalized16X1, CU_AD_FORMAT_UNORM_INT16X1, 1, 16},
    {cudaChannelFormatKindUnsignedNormalized16X2, CU_AD_FORMAT_UNORM_INT16X2, 2, 16},
    {cudaChannelFormatKindUnsignedNormalized16X4, CU_AD_FORMAT_UNORM_INT16X4, 4, 16},
    {cudaChannelFormatKindSignedNormalized8X1, CU_AD_FORMAT_SNORM_INT8X1, 1, 8},
    {cudaChannelFormatKindSignedNormalized8X2, CU_AD_FORMAT_SNORM_INT8X2, 2, 8},
    {cudaChannelFormatKindSignedNormalized8X4, CU_AD_FORMAT_SNORM_INT8X4, 4, 8},
    {cudaChannelFormatKindSignedNormalized16X1, CU_AD_FORMAT_SNORM_INT16X1, 1, 16},
    {cudaChannelFormatKindSignedNormalized16X2, CU_AD_FORMAT_SNORM_INT16X2, 2, 16},
    {cudaChannelFormatKindSignedNormalized16X4, CU_AD_FORMAT_SNORM_INT16X4, 4, 16},
};

cudaError_t to_format(const cudaChannelFormatDesc& d, CUarray_format& format, unsigned& channels,
                      const char* fn) noexcept {
  for (const NormalizedKind& n : kNormalized) {
    if (d.f != n.kind) continue;
    format = n.format;
    channels = n.channels;
    return cudaSuccess;
  }
  if (d.f == cudaChannelFormatKindUnsignedNormalized1010102) {
    format = CU_AD_FORMAT_UNORM_INT_101010_2;
    channels = 4;
    return cudaSuccess;
  }
  if (d.f == cudaChannelFormatKindNV12 ||
      (d.f >= cudaChannelFormatKindUnsignedBlockCompressed1 &&
       d.f <= cudaChannelFormatKindUnsignedBlockCompressed7SRGB))
    return reject(cudaErrorNotSupported, fn,
                  "block-compressed and YUV channel formats are not supported by cudamux");
  if (d.f != cudaChannelFormatKindSigned && d.f != cudaChannelFormatKindUnsigned &&
      d.f != cudaChannelFormatKindFloat)
    return reject(cudaErrorInvalidChannelDescriptor, fn, "not a channel format kind for arrays");
  // The channels present are x, then y, then z and w: 1, 2 or 4 of them, of one size.
  const int bits = d.x;
  if (bits <= 0 || d.y < 0 || d.z < 0 || d.w < 0)
    return reject(cudaErrorInvalidChannelDescriptor, fn, "channel x must have a size");
  if (d.y == 0 && d.z == 0 && d.w == 0)
    channels = 1;
  else if (d.y == bits && d.z == 0 && d.w == 0)
    channels = 2;
  else if (d.y == bits && d.z == bits && d.w == bits)
    channels = 4;
  else
    return reject(cudaErrorInvalidChannelDescriptor, fn,
                  "channels must be x, xy or xyzw, all of one size");
  const bool sig = d.f == cudaChannelFormatKindSigned;
  switch (d.f == cudaChannelFormatKindFloat ? bits + 1000 : bits) {
    case 8:
      format = sig ? CU_AD_FORMAT_SIGNED_INT8 : CU_AD_FORMAT_UNSIGNED_INT8;
      return cudaSuccess;
    case 16:
      format = sig ? CU_AD_FORMAT_SIGNED_INT16 : CU_AD_FORMAT_UNSIGNED_INT16;
      return cudaSuccess;
    case 32:
      format = sig ? CU_AD_FORMAT_SIGNED_INT32 : CU_AD_FORMAT_UNSIGNED_INT32;
      return cudaSuccess;
    case 1016:
      format = CU_AD_FORMAT_HALF;
      return cudaSuccess;
    case 1032:
      format = CU_AD_FORMAT_FLOAT;
      return cudaSuccess;
    default:
      return reject(cudaErrorInvalidChannelDescriptor, fn, "no array format of that channel size");
  }
}

cudaChannelFormatDesc from_format(CUarray_format format, unsigned channels) noexcept {
  cudaChannelFormatDesc d{};
  auto set = [&](int bits, cudaChannelFormatKind kind) {
    d.x = bits;
    d.y = channels >= 2 ? bits : 0;
    d.z = channels >= 4 ? bits : 0;
    d.w = channels >= 4 ? bits : 0;
    d.f = kind;
  };
  for (const NormalizedKind& n : kNormalized)
    if (n.format == format) {
      set(n.bits, n.kind);
      return d;
    }
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
      set(8, cudaChannelFormatKindUnsigned);
      break;
    case CU_AD_FORMAT_UNSIGNED_INT16:
      set(16, cudaChannelFormatKindUnsigned);
      break;
    case CU_AD_FORMAT_UNSIGNED_INT32:
      set(32, cudaChannelFormatKindUnsigned);
      break;
    case CU_AD_FORMAT_SIGNED_INT8:
      set(8, cudaChannelFormatKindSigned);
      break;
    case CU_AD_FORMAT_SIGNED_INT16:
      set(16, cudaChannelFormatKindSigned);
      break;
    case CU_AD_FORMAT_SIGNED_INT32:
      set(32, cudaChannelFormatKindSigned);
      break;
    case CU_AD_FORMAT_HALF:
      set(16, cudaChannelFormatKindFloat);
      break;
    case CU_AD_FORMAT_FLOAT:
      set(32, cudaChannelFormatKindFloat);
      break;
    case CU_AD_FORMAT_UNORM_INT_101010_2:
      d = {10, 10, 10, 2, cudaChannelFormatKindUnsignedNormalized1010102};
      break;
    default:
      d.f = cudaChannelFormatKindNone;
      break;
  }
  return d;
}

// The runtime's array flags are the driver's CUDA_ARRAY3D_* bits.
static_assert(cudaArrayLayered == CUDA_ARRAY3D_LAYERED &&
              cudaArraySurfaceLoadStore == CUDA_ARRAY3D_SURFACE_LDST &&
              cudaArrayCubemap == CUDA_ARRAY3D_CUBEMAP &&
              cudaArrayTextureGather == CUDA_ARRAY3D_TEXTURE_GATHER &&
              cudaArraySparse == CUDA_ARRAY3D_SPARSE &&
              cudaArrayDeferredMapping == CUDA_ARRAY3D_DEFERRED_MAPPING);

cudaError_t descriptor(const cudaChannelFormatDesc* desc, cudaExtent extent, unsigned flags,
                       CUDA_ARRAY3D_DESCRIPTOR& d, const char* fn) noexcept {
  if (!desc) return reject(cudaErrorInvalidValue, fn, "null channel descriptor");
  std::memset(&d, 0, sizeof d);
  unsigned channels = 0;
  if (cudaError_t e = to_format(*desc, d.Format, channels, fn)) return e;
  d.NumChannels = channels;
  d.Width = extent.width;
  d.Height = extent.height;
  d.Depth = extent.depth;
  d.Flags = flags;
  return cudaSuccess;
}

// Device-side memory in the allocation registry (device, managed or pinned): what the driver
// takes as a device pointer; anything else is host memory.
bool device_accessible(const void* p, bool& device_only) noexcept {
  core::Core& c = core::Core::get();
  std::shared_lock lock(c.alloc_mutex);
  const core::Allocation* a = c.find_allocation(reinterpret_cast<std::uintptr_t>(p));
  device_only = a && a->kind == core::AllocKind::device;
  return a != nullptr;
}

// The linear end of a copy whose other end is an array, as cudaMemcpyKind says it is and as far
// as the pointer agrees (CUDA's rule: device memory named host memory is an invalid value).
template <class H>
cudaError_t linear_end(const void* ptr, cudaMemcpyKind kind, bool is_src, CUmemorytype& type,
                       CUdeviceptr& dev, H& host, const char* fn) noexcept {
  bool device_only = false;
  const bool accessible = device_accessible(ptr, device_only);
  const bool says_device =
      kind == cudaMemcpyDeviceToDevice ||
      (is_src ? kind == cudaMemcpyDeviceToHost : kind == cudaMemcpyHostToDevice);
  if (kind != cudaMemcpyDefault) {
    if (says_device && !accessible)
      return reject(cudaErrorInvalidValue, fn, "the kind says device memory, the pointer is not");
    if (!says_device && device_only)
      return reject(cudaErrorInvalidValue, fn, "the kind says host memory, the pointer is device");
  }
  if (accessible) {
    type = CU_MEMORYTYPE_DEVICE;
    dev = reinterpret_cast<CUdeviceptr>(ptr);
  } else {
    type = CU_MEMORYTYPE_HOST;
    host = static_cast<H>(const_cast<void*>(ptr));
  }
  return cudaSuccess;
}

cudaError_t check_kind(cudaMemcpyKind kind, bool dst_array, bool src_array,
                       const char* fn) noexcept {
  if (static_cast<unsigned>(kind) > cudaMemcpyDefault)
    return reject(cudaErrorInvalidMemcpyDirection, fn, "not a cudaMemcpyKind");
  if (kind == cudaMemcpyDefault) return cudaSuccess;
  const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if ((dst_array && !dst_dev) || (src_array && !src_dev))
    return reject(cudaErrorInvalidMemcpyDirection, fn, "an array end is device memory");
  return cudaSuccess;
}

unsigned element_bytes(cudaArray_const_t a) noexcept {
  const core::Array* arr = core::array_of(cu(a));
  return arr ? arr->element_bytes : 1;
}

cudaError_t run_2d(const CUDA_MEMCPY2D& p, cudaStream_t stream, bool async, bool pt) noexcept {
  if (!async) return map(pt ? drv::cuMemcpy2D_v2_ptds(&p) : drv::cuMemcpy2D_v2(&p));
  return map(pt ? drv::cuMemcpy2DAsync_v2_ptsz(&p, stream) : drv::cuMemcpy2DAsync_v2(&p, stream));
}

// One end of a 2D copy: an array box start, or linear memory with its pitch.
struct End {
  cudaArray_const_t array = nullptr;
  std::size_t x = 0, y = 0;  // array: the box start (x in bytes)
  const void* ptr = nullptr;
  std::size_t pitch = 0;
};

cudaError_t copy_2d(const End& dst, const End& src, std::size_t width, std::size_t height,
                    cudaMemcpyKind kind, cudaStream_t stream, bool async, bool pt,
                    const char* fn) noexcept {
  if (cudaError_t e = enter()) return e;
  if (cudaError_t e = check_kind(kind, dst.array != nullptr, src.array != nullptr, fn)) return e;
  if ((!dst.array && width > dst.pitch) || (!src.array && width > src.pitch))
    return reject(cudaErrorInvalidPitchValue, fn, "width exceeds a pitch");
  if ((width == 0 || height == 0) && !async) return cudaSuccess;
  CUDA_MEMCPY2D p;
  std::memset(&p, 0, sizeof p);
  if (src.array) {
    p.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    p.srcArray = cu(src.array);
    p.srcXInBytes = src.x;
    p.srcY = src.y;
  } else {
    if (cudaError_t e =
            linear_end(src.ptr, kind, true, p.srcMemoryType, p.srcDevice, p.srcHost, fn))
      return e;
    p.srcPitch = src.pitch;
  }
  if (dst.array) {
    p.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    p.dstArray = cu(dst.array);
    p.dstXInBytes = dst.x;
    p.dstY = dst.y;
  } else {
    if (cudaError_t e =
            linear_end(dst.ptr, kind, false, p.dstMemoryType, p.dstDevice, p.dstHost, fn))
      return e;
    p.dstPitch = dst.pitch;
  }
  p.WidthInBytes = width;
  p.Height = height;
  return run_2d(p, stream, async, pt);
}

// The deprecated cudaMemcpy{To,From}Array / ArrayToArray: `count` bytes from a byte offset in
// row `y`, going on at the start of the next row when a row is full (rows of an array are
// Width * element bytes long). Done as one 2D copy per run of bytes that no row end splits.
cudaError_t copy_linear(cudaArray_const_t dst_array, std::size_t dst_x, std::size_t dst_y,
                        void* dst, cudaArray_const_t src_array, std::size_t src_x,
                        std::size_t src_y, const void* src, std::size_t count, cudaMemcpyKind kind,
                        cudaStream_t stream, bool async, bool pt, const char* fn) noexcept {
  if (cudaError_t e = enter()) return e;
  auto row_bytes = [](cudaArray_const_t a) -> std::size_t {
    const core::Array* arr = core::array_of(cu(a));
    return arr ? static_cast<std::size_t>(arr->desc.Width) * arr->element_bytes : 0;
  };
  const std::size_t dst_row = dst_array ? row_bytes(dst_array) : 0;
  const std::size_t src_row = src_array ? row_bytes(src_array) : 0;
  if ((dst_array && dst_row == 0) || (src_array && src_row == 0))
    return reject(cudaErrorInvalidResourceHandle, fn, "not a live CUDA array");
  if (count == 0 && !async) return cudaSuccess;
  std::size_t done = 0;
  do {
    std::size_t chunk = count - done;
    if (dst_array) {
      if (dst_x >= dst_row) return reject(cudaErrorInvalidValue, fn, "offset beyond the row");
      chunk = std::min(chunk, dst_row - dst_x);
    }
    if (src_array) {
      if (src_x >= src_row) return reject(cudaErrorInvalidValue, fn, "offset beyond the row");
      chunk = std::min(chunk, src_row - src_x);
    }
    End d{dst_array, dst_x, dst_y, dst ? static_cast<char*>(dst) + done : nullptr, chunk};
    End s{src_array, src_x, src_y, src ? static_cast<const char*>(src) + done : nullptr, chunk};
    if (cudaError_t e = copy_2d(d, s, chunk, 1, kind, stream, async, pt, fn)) return e;
    done += chunk;
    dst_x += chunk;
    src_x += chunk;
    if (dst_array && dst_x == dst_row) dst_x = 0, ++dst_y;
    if (src_array && src_x == src_row) src_x = 0, ++src_y;
  } while (done < count);
  return cudaSuccess;
}

}  // namespace

cudaError_t array_params_3d(const cudaArray* src_array, cudaPos src_pos, cudaPitchedPtr src_ptr,
                            const cudaArray* dst_array, cudaPos dst_pos, cudaPitchedPtr dst_ptr,
                            cudaExtent extent, cudaMemcpyKind kind, bool peer, CUDA_MEMCPY3D& d,
                            const char* fn) noexcept {
  if ((src_array && src_ptr.ptr) || (dst_array && dst_ptr.ptr))
    return reject(cudaErrorInvalidValue, fn, "an end names both an array and a pointer");
  if (!peer) {
    if (cudaError_t e = check_kind(kind, dst_array != nullptr, src_array != nullptr, fn)) return e;
  }
  std::memset(&d, 0, sizeof d);
  // With an array end, extents and array positions count that array's elements; linear
  // positions count bytes.
  const unsigned elem = src_array ? element_bytes(src_array) : element_bytes(dst_array);
  d.WidthInBytes = extent.width * elem;
  d.Height = extent.height;
  d.Depth = extent.depth;
  if (src_array) {
    d.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    d.srcArray = cu(src_array);
    d.srcXInBytes = src_pos.x * elem;
  } else {
    if (peer) {
      d.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
      d.srcDevice = reinterpret_cast<CUdeviceptr>(src_ptr.ptr);
    } else if (cudaError_t e = linear_end(src_ptr.ptr, kind, true, d.srcMemoryType, d.srcDevice,
                                          d.srcHost, fn)) {
      return e;
    }
    d.srcXInBytes = src_pos.x;
    d.srcPitch = src_ptr.pitch;
    d.srcHeight = src_ptr.ysize;
    if (d.WidthInBytes > d.srcPitch)
      return reject(cudaErrorInvalidPitchValue, fn, "width exceeds the source pitch");
  }
  d.srcY = src_pos.y;
  d.srcZ = src_pos.z;
  if (dst_array) {
    d.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    d.dstArray = cu(dst_array);
    d.dstXInBytes = dst_pos.x * (src_array ? element_bytes(dst_array) : elem);
  } else {
    if (peer) {
      d.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
      d.dstDevice = reinterpret_cast<CUdeviceptr>(dst_ptr.ptr);
    } else {
      const void* host = nullptr;
      if (cudaError_t e =
              linear_end(dst_ptr.ptr, kind, false, d.dstMemoryType, d.dstDevice, host, fn))
        return e;
      d.dstHost = const_cast<void*>(host);
    }
    d.dstXInBytes = dst_pos.x;
    d.dstPitch = dst_ptr.pitch;
    d.dstHeight = dst_ptr.ysize;
    if (d.WidthInBytes > d.dstPitch)
      return reject(cudaErrorInvalidPitchValue, fn, "width exceeds the destination pitch");
  }
  d.dstY = dst_pos.y;
  d.dstZ = dst_pos.z;
  return cudaSuccess;
}

cudaError_t array_copy_3d(const cudaMemcpy3DParms& p, cudaStream_t stream, bool async, bool pt,
                          const char* fn) noexcept {
  CUDA_MEMCPY3D d;
  if (cudaError_t e = array_params_3d(p.srcArray, p.srcPos, p.srcPtr, p.dstArray, p.dstPos,
                                      p.dstPtr, p.extent, p.kind, false, d, fn))
    return e;
  if (!async) return map(pt ? drv::cuMemcpy3D_v2_ptds(&d) : drv::cuMemcpy3D_v2(&d));
  return map(pt ? drv::cuMemcpy3DAsync_v2_ptsz(&d, stream) : drv::cuMemcpy3DAsync_v2(&d, stream));
}

}  // namespace cudamux::rt

namespace cudamux::rt::impl {
using rt::reject;

namespace {
namespace drv = cudamux::impl;
}

cudaError_t cudaMallocArray(cudaArray_t* array, const cudaChannelFormatDesc* desc, size_t width,
                            size_t height, unsigned int flags) {
  const char* fn = "cudaMallocArray";
  if (cudaError_t e = enter()) return e;
  if (!array) return reject(cudaErrorInvalidValue, fn, "null out-pointer");
  CUDA_ARRAY3D_DESCRIPTOR d;
  if (cudaError_t e = descriptor(desc, {width, height, 0}, flags, d, fn)) return e;
  CUarray a = nullptr;
  if (cudaError_t e = map(drv::cuArray3DCreate_v2(&a, &d))) return e;
  *array = reinterpret_cast<cudaArray_t>(a);
  return cudaSuccess;
}

cudaError_t cudaMalloc3DArray(cudaArray_t* array, const cudaChannelFormatDesc* desc,
                              cudaExtent extent, unsigned int flags) {
  const char* fn = "cudaMalloc3DArray";
  if (cudaError_t e = enter()) return e;
  if (!array) return reject(cudaErrorInvalidValue, fn, "null out-pointer");
  CUDA_ARRAY3D_DESCRIPTOR d;
  if (cudaError_t e = descriptor(desc, extent, flags, d, fn)) return e;
  CUarray a = nullptr;
  if (cudaError_t e = map(drv::cuArray3DCreate_v2(&a, &d))) return e;
  *array = reinterpret_cast<cudaArray_t>(a);
  return cudaSuccess;
}

cudaError_t cudaMallocMipmappedArray(cudaMipmappedArray_t* mipmappedArray,
                                     const cudaChannelFormatDesc* desc, cudaExtent extent,
                                     unsigned int numLevels, unsigned int flags) {
  const char* fn = "cudaMallocMipmappedArray";
  if (cudaError_t e = enter()) return e;
  if (!mipmappedArray) return reject(cudaErrorInvalidValue, fn, "null out-pointer");
  CUDA_ARRAY3D_DESCRIPTOR d;
  if (cudaError_t e = descriptor(desc, extent, flags, d, fn)) return e;
  CUmipmappedArray m = nullptr;
  if (cudaError_t e = map(drv::cuMipmappedArrayCreate(&m, &d, numLevels))) return e;
  *mipmappedArray = reinterpret_cast<cudaMipmappedArray_t>(m);
  return cudaSuccess;
}

cudaError_t cudaGetMipmappedArrayLevel(cudaArray_t* levelArray,
                                       cudaMipmappedArray_const_t mipmappedArray,
                                       unsigned int level) {
  if (cudaError_t e = enter()) return e;
  CUarray a = nullptr;
  if (cudaError_t e = map(drv::cuMipmappedArrayGetLevel(&a, cu(mipmappedArray), level))) return e;
  *levelArray = reinterpret_cast<cudaArray_t>(a);
  return cudaSuccess;
}

// Freeing null does nothing, as with cudaFree.
cudaError_t cudaFreeArray(cudaArray_t array) {
  if (cudaError_t e = enter()) return e;
  if (!array) return cudaSuccess;
  return map(drv::cuArrayDestroy(cu(array)));
}
cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray) {
  if (cudaError_t e = enter()) return e;
  if (!mipmappedArray) return cudaSuccess;
  return map(drv::cuMipmappedArrayDestroy(cu(mipmappedArray)));
}

// Any of desc, extent and flags may be null.
cudaError_t cudaArrayGetInfo(cudaChannelFormatDesc* desc, cudaExtent* extent, unsigned int* flags,
                             cudaArray_t array) {
  if (cudaError_t e = enter()) return e;
  CUDA_ARRAY3D_DESCRIPTOR d;
  if (cudaError_t e = map(drv::cuArray3DGetDescriptor_v2(&d, cu(array)))) return e;
  if (desc) *desc = from_format(d.Format, d.NumChannels);
  if (extent) *extent = {d.Width, d.Height, d.Depth};
  if (flags) *flags = d.Flags;
  return cudaSuccess;
}

cudaError_t cudaGetChannelDesc(cudaChannelFormatDesc* desc, cudaArray_const_t array) {
  if (cudaError_t e = enter()) return e;
  if (!desc) return reject(cudaErrorInvalidValue, "cudaGetChannelDesc", "null out-pointer");
  CUDA_ARRAY3D_DESCRIPTOR d;
  if (cudaError_t e = map(drv::cuArray3DGetDescriptor_v2(&d, cu(array)))) return e;
  *desc = from_format(d.Format, d.NumChannels);
  return cudaSuccess;
}

cudaError_t cudaArrayGetPlane(cudaArray_t* pPlaneArray, cudaArray_t hArray, unsigned int planeIdx) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuArrayGetPlane(reinterpret_cast<CUarray*>(pPlaneArray), cu(hArray), planeIdx));
}

static_assert(sizeof(cudaArrayMemoryRequirements) == sizeof(CUDA_ARRAY_MEMORY_REQUIREMENTS));
static_assert(sizeof(cudaArraySparseProperties) == sizeof(CUDA_ARRAY_SPARSE_PROPERTIES));

cudaError_t cudaArrayGetMemoryRequirements(cudaArrayMemoryRequirements* memoryRequirements,
                                           cudaArray_t array, int device) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuArrayGetMemoryRequirements(
      reinterpret_cast<CUDA_ARRAY_MEMORY_REQUIREMENTS*>(memoryRequirements), cu(array), device));
}
cudaError_t cudaMipmappedArrayGetMemoryRequirements(cudaArrayMemoryRequirements* memoryRequirements,
                                                    cudaMipmappedArray_t mipmap, int device) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuMipmappedArrayGetMemoryRequirements(
      reinterpret_cast<CUDA_ARRAY_MEMORY_REQUIREMENTS*>(memoryRequirements), cu(mipmap), device));
}
cudaError_t cudaArrayGetSparseProperties(cudaArraySparseProperties* sparseProperties,
                                         cudaArray_t array) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuArrayGetSparseProperties(
      reinterpret_cast<CUDA_ARRAY_SPARSE_PROPERTIES*>(sparseProperties), cu(array)));
}
cudaError_t cudaMipmappedArrayGetSparseProperties(cudaArraySparseProperties* sparseProperties,
                                                  cudaMipmappedArray_t mipmap) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuMipmappedArrayGetSparseProperties(
      reinterpret_cast<CUDA_ARRAY_SPARSE_PROPERTIES*>(sparseProperties), cu(mipmap)));
}

// --- 2D copies with array ends ---

#define CUDAMUX_RT_ARRAY_2D(suffix, pt)                                                            \
  cudaError_t cudaMemcpy2DToArray##suffix(cudaArray_t dst, size_t wOffset, size_t hOffset,         \
                                          const void* src, size_t spitch, size_t width,            \
                                          size_t height, cudaMemcpyKind kind) {                    \
    return copy_2d({dst, wOffset, hOffset, nullptr, 0}, {nullptr, 0, 0, src, spitch}, width,       \
                   height, kind, nullptr, false, pt, "cudaMemcpy2DToArray");                       \
  }                                                                                                \
  cudaError_t cudaMemcpy2DFromArray##suffix(void* dst, size_t dpitch, cudaArray_const_t src,       \
                                            size_t wOffset, size_t hOffset, size_t width,          \
                                            size_t height, cudaMemcpyKind kind) {                  \
    return copy_2d({nullptr, 0, 0, dst, dpitch}, {src, wOffset, hOffset, nullptr, 0}, width,       \
                   height, kind, nullptr, false, pt, "cudaMemcpy2DFromArray");                     \
  }                                                                                                \
  cudaError_t cudaMemcpy2DArrayToArray##suffix(                                                    \
      cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src,                \
      size_t wOffsetSrc, size_t hOffsetSrc, size_t width, size_t height, cudaMemcpyKind kind) {    \
    return copy_2d({dst, wOffsetDst, hOffsetDst, nullptr, 0},                                      \
                   {src, wOffsetSrc, hOffsetSrc, nullptr, 0}, width, height, kind, nullptr, false, \
                   pt, "cudaMemcpy2DArrayToArray");                                                \
  }                                                                                                \
  cudaError_t cudaMemcpyToArray##suffix(cudaArray_t dst, size_t wOffset, size_t hOffset,           \
                                        const void* src, size_t count, cudaMemcpyKind kind) {      \
    return copy_linear(dst, wOffset, hOffset, nullptr, nullptr, 0, 0, src, count, kind, nullptr,   \
                       false, pt, "cudaMemcpyToArray");                                            \
  }                                                                                                \
  cudaError_t cudaMemcpyFromArray##suffix(void* dst, cudaArray_const_t src, size_t wOffset,        \
                                          size_t hOffset, size_t count, cudaMemcpyKind kind) {     \
    return copy_linear(nullptr, 0, 0, dst, src, wOffset, hOffset, nullptr, count, kind, nullptr,   \
                       false, pt, "cudaMemcpyFromArray");                                          \
  }                                                                                                \
  cudaError_t cudaMemcpyArrayToArray##suffix(                                                      \
      cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src,                \
      size_t wOffsetSrc, size_t hOffsetSrc, size_t count, cudaMemcpyKind kind) {                   \
    return copy_linear(dst, wOffsetDst, hOffsetDst, nullptr, src, wOffsetSrc, hOffsetSrc, nullptr, \
                       count, kind, nullptr, false, pt, "cudaMemcpyArrayToArray");                 \
  }

#define CUDAMUX_RT_ARRAY_2D_ASYNC(suffix, pt)                                                     \
  cudaError_t cudaMemcpy2DToArrayAsync##suffix(                                                   \
      cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t spitch,            \
      size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t stream) {                    \
    return copy_2d({dst, wOffset, hOffset, nullptr, 0}, {nullptr, 0, 0, src, spitch}, width,      \
                   height, kind, stream, true, pt, "cudaMemcpy2DToArrayAsync");                   \
  }                                                                                               \
  cudaError_t cudaMemcpy2DFromArrayAsync##suffix(                                                 \
      void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset,            \
      size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t stream) {                    \
    return copy_2d({nullptr, 0, 0, dst, dpitch}, {src, wOffset, hOffset, nullptr, 0}, width,      \
                   height, kind, stream, true, pt, "cudaMemcpy2DFromArrayAsync");                 \
  }                                                                                               \
  cudaError_t cudaMemcpyToArrayAsync##suffix(cudaArray_t dst, size_t wOffset, size_t hOffset,     \
                                             const void* src, size_t count, cudaMemcpyKind kind,  \
                                             cudaStream_t stream) {                               \
    return copy_linear(dst, wOffset, hOffset, nullptr, nullptr, 0, 0, src, count, kind, stream,   \
                       true, pt, "cudaMemcpyToArrayAsync");                                       \
  }                                                                                               \
  cudaError_t cudaMemcpyFromArrayAsync##suffix(void* dst, cudaArray_const_t src, size_t wOffset,  \
                                               size_t hOffset, size_t count, cudaMemcpyKind kind, \
                                               cudaStream_t stream) {                             \
    return copy_linear(nullptr, 0, 0, dst, src, wOffset, hOffset, nullptr, count, kind, stream,   \
                       true, pt, "cudaMemcpyFromArrayAsync");                                     \
  }

CUDAMUX_RT_ARRAY_2D(, false)
CUDAMUX_RT_ARRAY_2D(_ptds, true)
CUDAMUX_RT_ARRAY_2D_ASYNC(, false)
CUDAMUX_RT_ARRAY_2D_ASYNC(_ptsz, true)

}  // namespace cudamux::rt::impl
