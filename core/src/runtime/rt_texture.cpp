// Runtime API: texture and surface objects (issue 17), over the driver's (texture.cpp). The
// descriptors map the way NVIDIA's runtime maps them: a cudaChannelFormatDesc names a
// CUarray_format and channel count (the non-zero sizes of x, y, z, w are the channels, all of
// one size; the kind and that size the format; the normalized kinds a format of their own);
// cudaReadModeElementType is CU_TRSF_READ_AS_INTEGER, normalizedCoords, sRGB,
// disableTrilinearOptimization and seamlessCubemap are the CU_TRSF_* flags of those names.
#include <spdlog/spdlog.h>

#include <cstring>

#include "cudamux/driver_impl.hpp"
#include "cudamux/log.hpp"
#include "cudamux/runtime_impl.hpp"
#include "rt_internal.hpp"

namespace cudamux::rt {
namespace {

namespace drv = cudamux::impl;

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
  if (d.f != cudaChannelFormatKindSigned && d.f != cudaChannelFormatKindUnsigned &&
      d.f != cudaChannelFormatKindFloat)
    return reject(cudaErrorInvalidChannelDescriptor, fn,
                  "not a channel format kind for linear textures");
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
  switch (d.f) {
    case cudaChannelFormatKindFloat:
      if (bits == 16)
        format = CU_AD_FORMAT_HALF;
      else if (bits == 32)
        format = CU_AD_FORMAT_FLOAT;
      else
        return reject(cudaErrorInvalidChannelDescriptor, fn, "float channels are 16 or 32 bits");
      return cudaSuccess;
    case cudaChannelFormatKindSigned:
    case cudaChannelFormatKindUnsigned: {
      const bool s = d.f == cudaChannelFormatKindSigned;
      if (bits == 8)
        format = s ? CU_AD_FORMAT_SIGNED_INT8 : CU_AD_FORMAT_UNSIGNED_INT8;
      else if (bits == 16)
        format = s ? CU_AD_FORMAT_SIGNED_INT16 : CU_AD_FORMAT_UNSIGNED_INT16;
      else if (bits == 32)
        format = s ? CU_AD_FORMAT_SIGNED_INT32 : CU_AD_FORMAT_UNSIGNED_INT32;
      else
        return reject(cudaErrorInvalidChannelDescriptor, fn,
                      "integer channels are 8, 16 or 32 bits");
      return cudaSuccess;
    }
    default:
      return cudaErrorInvalidChannelDescriptor;
  }
}

cudaChannelFormatDesc from_format(CUarray_format format, unsigned channels) noexcept {
  cudaChannelFormatDesc d{};
  for (const NormalizedKind& n : kNormalized)
    if (n.format == format) {
      d.x = n.bits;
      d.y = n.channels >= 2 ? n.bits : 0;
      d.z = d.w = n.channels >= 4 ? n.bits : 0;
      d.f = n.kind;
      return d;
    }
  int bits = 32;
  cudaChannelFormatKind kind = cudaChannelFormatKindFloat;
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
      bits = 8, kind = cudaChannelFormatKindUnsigned;
      break;
    case CU_AD_FORMAT_UNSIGNED_INT16:
      bits = 16, kind = cudaChannelFormatKindUnsigned;
      break;
    case CU_AD_FORMAT_UNSIGNED_INT32:
      bits = 32, kind = cudaChannelFormatKindUnsigned;
      break;
    case CU_AD_FORMAT_SIGNED_INT8:
      bits = 8, kind = cudaChannelFormatKindSigned;
      break;
    case CU_AD_FORMAT_SIGNED_INT16:
      bits = 16, kind = cudaChannelFormatKindSigned;
      break;
    case CU_AD_FORMAT_SIGNED_INT32:
      bits = 32, kind = cudaChannelFormatKindSigned;
      break;
    case CU_AD_FORMAT_HALF:
      bits = 16;
      break;
    default:
      break;
  }
  d.x = bits;
  d.y = channels >= 2 ? bits : 0;
  d.z = d.w = channels >= 4 ? bits : 0;
  d.f = kind;
  return d;
}

cudaError_t to_driver(const cudaResourceDesc& in, CUDA_RESOURCE_DESC& out, const char* fn) {
  std::memset(&out, 0, sizeof out);
  out.resType = static_cast<CUresourcetype>(in.resType);
  out.flags = in.flags;
  switch (in.resType) {
    case cudaResourceTypeArray:
      out.res.array.hArray = reinterpret_cast<CUarray>(in.res.array.array);
      return cudaSuccess;
    case cudaResourceTypeMipmappedArray:
      out.res.mipmap.hMipmappedArray = reinterpret_cast<CUmipmappedArray>(in.res.mipmap.mipmap);
      return cudaSuccess;
    case cudaResourceTypeLinear: {
      unsigned ch = 0;
      if (cudaError_t e = to_format(in.res.linear.desc, out.res.linear.format, ch, fn)) return e;
      out.res.linear.numChannels = ch;
      out.res.linear.devPtr = reinterpret_cast<CUdeviceptr>(in.res.linear.devPtr);
      out.res.linear.sizeInBytes = in.res.linear.sizeInBytes;
      return cudaSuccess;
    }
    case cudaResourceTypePitch2D: {
      unsigned ch = 0;
      if (cudaError_t e = to_format(in.res.pitch2D.desc, out.res.pitch2D.format, ch, fn)) return e;
      out.res.pitch2D.numChannels = ch;
      out.res.pitch2D.devPtr = reinterpret_cast<CUdeviceptr>(in.res.pitch2D.devPtr);
      out.res.pitch2D.width = in.res.pitch2D.width;
      out.res.pitch2D.height = in.res.pitch2D.height;
      out.res.pitch2D.pitchInBytes = in.res.pitch2D.pitchInBytes;
      return cudaSuccess;
    }
    default:
      return reject(cudaErrorInvalidValue, fn, "unknown resource type");
  }
}

void from_driver(const CUDA_RESOURCE_DESC& in, cudaResourceDesc& out) {
  std::memset(&out, 0, sizeof out);
  out.resType = static_cast<cudaResourceType>(in.resType);
  out.flags = in.flags;
  switch (in.resType) {
    case CU_RESOURCE_TYPE_ARRAY:
      out.res.array.array = reinterpret_cast<cudaArray_t>(in.res.array.hArray);
      break;
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
      out.res.mipmap.mipmap = reinterpret_cast<cudaMipmappedArray_t>(in.res.mipmap.hMipmappedArray);
      break;
    case CU_RESOURCE_TYPE_LINEAR:
      out.res.linear.devPtr = reinterpret_cast<void*>(in.res.linear.devPtr);
      out.res.linear.desc = from_format(in.res.linear.format, in.res.linear.numChannels);
      out.res.linear.sizeInBytes = in.res.linear.sizeInBytes;
      break;
    case CU_RESOURCE_TYPE_PITCH2D:
      out.res.pitch2D.devPtr = reinterpret_cast<void*>(in.res.pitch2D.devPtr);
      out.res.pitch2D.desc = from_format(in.res.pitch2D.format, in.res.pitch2D.numChannels);
      out.res.pitch2D.width = in.res.pitch2D.width;
      out.res.pitch2D.height = in.res.pitch2D.height;
      out.res.pitch2D.pitchInBytes = in.res.pitch2D.pitchInBytes;
      break;
    default:
      break;
  }
}

CUDA_TEXTURE_DESC to_driver(const cudaTextureDesc& t) {
  CUDA_TEXTURE_DESC d{};
  for (int i = 0; i < 3; ++i) d.addressMode[i] = static_cast<CUaddress_mode>(t.addressMode[i]);
  d.filterMode = static_cast<CUfilter_mode>(t.filterMode);
  if (t.readMode == cudaReadModeElementType) d.flags |= CU_TRSF_READ_AS_INTEGER;
  if (t.normalizedCoords) d.flags |= CU_TRSF_NORMALIZED_COORDINATES;
  if (t.sRGB) d.flags |= CU_TRSF_SRGB;
  if (t.disableTrilinearOptimization) d.flags |= CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION;
  if (t.seamlessCubemap) d.flags |= CU_TRSF_SEAMLESS_CUBEMAP;
  d.maxAnisotropy = t.maxAnisotropy;
  d.mipmapFilterMode = static_cast<CUfilter_mode>(t.mipmapFilterMode);
  d.mipmapLevelBias = t.mipmapLevelBias;
  d.minMipmapLevelClamp = t.minMipmapLevelClamp;
  d.maxMipmapLevelClamp = t.maxMipmapLevelClamp;
  for (int i = 0; i < 4; ++i) d.borderColor[i] = t.borderColor[i];
  return d;
}

cudaTextureDesc from_driver(const CUDA_TEXTURE_DESC& d) {
  cudaTextureDesc t{};
  for (int i = 0; i < 3; ++i)
    t.addressMode[i] = static_cast<cudaTextureAddressMode>(d.addressMode[i]);
  t.filterMode = static_cast<cudaTextureFilterMode>(d.filterMode);
  t.readMode =
      (d.flags & CU_TRSF_READ_AS_INTEGER) ? cudaReadModeElementType : cudaReadModeNormalizedFloat;
  t.normalizedCoords = (d.flags & CU_TRSF_NORMALIZED_COORDINATES) ? 1 : 0;
  t.sRGB = (d.flags & CU_TRSF_SRGB) ? 1 : 0;
  t.disableTrilinearOptimization = (d.flags & CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION) ? 1 : 0;
  t.seamlessCubemap = (d.flags & CU_TRSF_SEAMLESS_CUBEMAP) ? 1 : 0;
  t.maxAnisotropy = d.maxAnisotropy;
  t.mipmapFilterMode = static_cast<cudaTextureFilterMode>(d.mipmapFilterMode);
  t.mipmapLevelBias = d.mipmapLevelBias;
  t.minMipmapLevelClamp = d.minMipmapLevelClamp;
  t.maxMipmapLevelClamp = d.maxMipmapLevelClamp;
  for (int i = 0; i < 4; ++i) t.borderColor[i] = d.borderColor[i];
  return t;
}

// The resource view enums and fields are the driver's, value for value.
static_assert(sizeof(cudaResourceViewDesc) == sizeof(CUDA_RESOURCE_VIEW_DESC));
static_assert(static_cast<int>(cudaResViewFormatFloat4) ==
              static_cast<int>(CU_RES_VIEW_FORMAT_FLOAT_4X32));

}  // namespace
}  // namespace cudamux::rt

namespace cudamux::rt::impl {
namespace drv = cudamux::impl;

cudaError_t cudaCreateTextureObject(cudaTextureObject_t* pTexObject,
                                    const cudaResourceDesc* pResDesc,
                                    const cudaTextureDesc* pTexDesc,
                                    const cudaResourceViewDesc* pResViewDesc) {
  const char* fn = "cudaCreateTextureObject";
  if (cudaError_t e = enter()) return e;
  if (!pTexObject || !pResDesc || !pTexDesc)
    return reject(cudaErrorInvalidValue, fn, "null argument");
  CUDA_RESOURCE_DESC res{};
  if (cudaError_t e = to_driver(*pResDesc, res, fn)) return e;
  const CUDA_TEXTURE_DESC tex = to_driver(*pTexDesc);
  CUDA_RESOURCE_VIEW_DESC view{};
  if (pResViewDesc) std::memcpy(&view, pResViewDesc, sizeof view);
  CUtexObject o = 0;
  const cudaError_t e = map(drv::cuTexObjectCreate(&o, &res, &tex, pResViewDesc ? &view : nullptr));
  if (e == cudaSuccess) *pTexObject = o;
  return e;
}

cudaError_t cudaDestroyTextureObject(cudaTextureObject_t texObject) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuTexObjectDestroy(texObject));
}

cudaError_t cudaGetTextureObjectResourceDesc(cudaResourceDesc* pResDesc,
                                             cudaTextureObject_t texObject) {
  if (cudaError_t e = enter()) return e;
  if (!pResDesc)
    return reject(cudaErrorInvalidValue, "cudaGetTextureObjectResourceDesc", "null pResDesc");
  CUDA_RESOURCE_DESC d{};
  if (cudaError_t e = map(drv::cuTexObjectGetResourceDesc(&d, texObject))) return e;
  from_driver(d, *pResDesc);
  return cudaSuccess;
}

cudaError_t cudaGetTextureObjectTextureDesc(cudaTextureDesc* pTexDesc,
                                            cudaTextureObject_t texObject) {
  if (cudaError_t e = enter()) return e;
  if (!pTexDesc)
    return reject(cudaErrorInvalidValue, "cudaGetTextureObjectTextureDesc", "null pTexDesc");
  CUDA_TEXTURE_DESC d{};
  if (cudaError_t e = map(drv::cuTexObjectGetTextureDesc(&d, texObject))) return e;
  *pTexDesc = from_driver(d);
  return cudaSuccess;
}

cudaError_t cudaGetTextureObjectResourceViewDesc(cudaResourceViewDesc* pResViewDesc,
                                                 cudaTextureObject_t texObject) {
  if (cudaError_t e = enter()) return e;
  if (!pResViewDesc)
    return reject(cudaErrorInvalidValue, "cudaGetTextureObjectResourceViewDesc",
                  "null pResViewDesc");
  CUDA_RESOURCE_VIEW_DESC d{};
  if (cudaError_t e = map(drv::cuTexObjectGetResourceViewDesc(&d, texObject))) return e;
  std::memcpy(pResViewDesc, &d, sizeof d);
  return cudaSuccess;
}

cudaError_t cudaCreateSurfaceObject(cudaSurfaceObject_t* pSurfObject,
                                    const cudaResourceDesc* pResDesc) {
  const char* fn = "cudaCreateSurfaceObject";
  if (cudaError_t e = enter()) return e;
  if (!pSurfObject || !pResDesc) return reject(cudaErrorInvalidValue, fn, "null argument");
  CUDA_RESOURCE_DESC res{};
  if (cudaError_t e = to_driver(*pResDesc, res, fn)) return e;
  CUsurfObject o = 0;
  const cudaError_t e = map(drv::cuSurfObjectCreate(&o, &res));
  if (e == cudaSuccess) *pSurfObject = o;
  return e;
}

cudaError_t cudaDestroySurfaceObject(cudaSurfaceObject_t surfObject) {
  if (cudaError_t e = enter()) return e;
  return map(drv::cuSurfObjectDestroy(surfObject));
}

cudaError_t cudaGetSurfaceObjectResourceDesc(cudaResourceDesc* pResDesc,
                                             cudaSurfaceObject_t surfObject) {
  if (cudaError_t e = enter()) return e;
  if (!pResDesc)
    return reject(cudaErrorInvalidValue, "cudaGetSurfaceObjectResourceDesc", "null pResDesc");
  CUDA_RESOURCE_DESC d{};
  if (cudaError_t e = map(drv::cuSurfObjectGetResourceDesc(&d, surfObject))) return e;
  from_driver(d, *pResDesc);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetTexture1DLinearMaxWidth(size_t* maxWidthInElements,
                                                 const cudaChannelFormatDesc* fmtDesc, int device) {
  const char* fn = "cudaDeviceGetTexture1DLinearMaxWidth";
  if (cudaError_t e = ensure_init()) return e;
  if (!maxWidthInElements || !fmtDesc) return reject(cudaErrorInvalidValue, fn, "null argument");
  CUarray_format format{};
  unsigned channels = 0;
  if (cudaError_t e = to_format(*fmtDesc, format, channels, fn)) return e;
  return map(drv::cuDeviceGetTexture1DLinearMaxWidth(maxWidthInElements, format, channels, device));
}

}  // namespace cudamux::rt::impl
