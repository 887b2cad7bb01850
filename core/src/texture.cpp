// Texture and surface objects (issue 17): cuTexObject* / cuSurfObject* and
// cuDeviceGetTexture1DLinearMaxWidth. The core checks the descriptors against CUDA's rules,
// hands them to the backend (Images::create_texture / create_surface, with CUarray handles
// translated to the backend's) and keeps what the program gave for the Get* calls. The
// CUtexObject / CUsurfObject value is the backend's object itself, which kernels use directly.
#include <spdlog/spdlog.h>

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "array.hpp"
#include "core.hpp"
#include "cudamux/driver_impl.hpp"

namespace cudamux::core {

// Until the array family (array.cpp) is linked in, no CUarray is live: these weak fallbacks
// answer "no such array" and are overridden by array.cpp's definitions.
__attribute__((weak)) Array* array_of(CUarray) noexcept { return nullptr; }
__attribute__((weak)) MipmappedArray* mipmapped_array_of(CUmipmappedArray) noexcept {
  return nullptr;
}

namespace {

struct TextureRecord {
  Context* ctx = nullptr;
  CUDA_RESOURCE_DESC resource{};
  CUDA_TEXTURE_DESC texture{};
  CUDA_RESOURCE_VIEW_DESC view{};
  bool has_view = false;
};
struct SurfaceRecord {
  Context* ctx = nullptr;
  CUDA_RESOURCE_DESC resource{};
};

std::mutex g_mu;
std::unordered_map<std::uint64_t, TextureRecord>& textures() {
  static auto* m = new std::unordered_map<std::uint64_t, TextureRecord>;
  return *m;
}
std::unordered_map<std::uint64_t, SurfaceRecord>& surfaces() {
  static auto* m = new std::unordered_map<std::uint64_t, SurfaceRecord>;
  return *m;
}

// Bytes of one channel of a format textures read from linear memory; 0: not such a format.
unsigned channel_bytes(CUarray_format f) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return 4;
    default:
      return 0;
  }
}

// The element size of a linear / pitch2D resource, or 0 after logging why it is invalid.
unsigned linear_element(CUarray_format format, unsigned channels, const char* fn) {
  const unsigned b = channel_bytes(format);
  if (b == 0) {
    reject(CUDA_ERROR_INVALID_VALUE, fn, "format not usable for linear memory");
    return 0;
  }
  if (channels != 1 && channels != 2 && channels != 4) {
    reject(CUDA_ERROR_INVALID_VALUE, fn, "numChannels must be 1, 2 or 4");
    return 0;
  }
  return b * channels;
}

bool valid_address_mode(CUaddress_mode m) {
  return m == CU_TR_ADDRESS_MODE_WRAP || m == CU_TR_ADDRESS_MODE_CLAMP ||
         m == CU_TR_ADDRESS_MODE_MIRROR || m == CU_TR_ADDRESS_MODE_BORDER;
}
bool valid_filter(CUfilter_mode m) {
  return m == CU_TR_FILTER_MODE_POINT || m == CU_TR_FILTER_MODE_LINEAR;
}

// The backend's copy of `resource`: CUarray / CUmipmappedArray values replaced by the backend's
// handles. Checks everything CUDA checks of a resource description.
CUresult translate_resource(const Context& ctx, const CUDA_RESOURCE_DESC& in,
                            CUDA_RESOURCE_DESC& out, bool surface, const char* fn) {
  out = in;
  if (in.flags != 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "resource flags must be 0");
  switch (in.resType) {
    case CU_RESOURCE_TYPE_ARRAY: {
      Array* a = array_of(in.res.array.hArray);
      if (!a) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "not a live CUarray");
      if (surface && !(a->desc.Flags & CUDA_ARRAY3D_SURFACE_LDST))
        return reject(CUDA_ERROR_INVALID_VALUE, fn,
                      "the array was not created with CUDA_ARRAY3D_SURFACE_LDST");
      out.res.array.hArray = reinterpret_cast<CUarray>(static_cast<std::uintptr_t>(a->impl));
      return CUDA_SUCCESS;
    }
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY: {
      if (surface)
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "a surface's resource must be an array");
      MipmappedArray* m = mipmapped_array_of(in.res.mipmap.hMipmappedArray);
      if (!m) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "not a live CUmipmappedArray");
      out.res.mipmap.hMipmappedArray =
          reinterpret_cast<CUmipmappedArray>(static_cast<std::uintptr_t>(m->impl));
      return CUDA_SUCCESS;
    }
    case CU_RESOURCE_TYPE_LINEAR:
    case CU_RESOURCE_TYPE_PITCH2D: {
      if (surface)
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "a surface's resource must be an array");
      const int dev = ctx.device;
      const auto align = static_cast<std::uintptr_t>(
          device_attribute_or(dev, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512));
      if (in.resType == CU_RESOURCE_TYPE_LINEAR) {
        const auto& l = in.res.linear;
        if (l.devPtr == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null devPtr");
        if (align && l.devPtr % align != 0)
          return reject(CUDA_ERROR_INVALID_VALUE, fn,
                        "devPtr not aligned to CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT");
        const unsigned elem = linear_element(l.format, l.numChannels, fn);
        if (elem == 0) return CUDA_ERROR_INVALID_VALUE;
        if (l.sizeInBytes == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "sizeInBytes is 0");
        const auto max = static_cast<std::size_t>(
            device_attribute_or(dev, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH, 1 << 27));
        if (l.sizeInBytes / elem > max)
          return reject(CUDA_ERROR_INVALID_VALUE, fn,
                        "more elements than CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH");
      } else {
        const auto& p = in.res.pitch2D;
        if (p.devPtr == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null devPtr");
        if (align && p.devPtr % align != 0)
          return reject(CUDA_ERROR_INVALID_VALUE, fn,
                        "devPtr not aligned to CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT");
        const unsigned elem = linear_element(p.format, p.numChannels, fn);
        if (elem == 0) return CUDA_ERROR_INVALID_VALUE;
        const auto pitch_align = static_cast<std::size_t>(
            device_attribute_or(dev, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 32));
        if (pitch_align && p.pitchInBytes % pitch_align != 0)
          return reject(
              CUDA_ERROR_INVALID_VALUE, fn,
              "pitchInBytes not a multiple of CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT");
        if (p.width == 0 || p.height == 0)
          return reject(CUDA_ERROR_INVALID_VALUE, fn, "zero width or height");
        if (p.width * elem > p.pitchInBytes)
          return reject(CUDA_ERROR_INVALID_VALUE, fn, "width * element size exceeds the pitch");
        const auto max_w = static_cast<std::size_t>(
            device_attribute_or(dev, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH, 131072));
        const auto max_h = static_cast<std::size_t>(
            device_attribute_or(dev, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT, 65000));
        const auto max_p = static_cast<std::size_t>(device_attribute_or(
            dev, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH, 2 * 1024 * 1024));
        if (p.width > max_w || p.height > max_h || p.pitchInBytes > max_p)
          return reject(CUDA_ERROR_INVALID_VALUE, fn,
                        "larger than the device's 2D linear texture limits");
      }
      return CUDA_SUCCESS;
    }
    default:
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown resource type");
  }
}

CUresult check_texture_desc(const CUDA_TEXTURE_DESC& t, const char* fn) {
  for (int i = 0; i < 3; ++i)
    if (!valid_address_mode(t.addressMode[i]))
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown address mode");
  if (!valid_filter(t.filterMode) || !valid_filter(t.mipmapFilterMode))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown filter mode");
  constexpr unsigned kKnown = CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES |
                              CU_TRSF_SRGB | CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION |
                              CU_TRSF_SEAMLESS_CUBEMAP;
  if (t.flags & ~kKnown) return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown texture flags");
  return CUDA_SUCCESS;
}

// A resource view applies to arrays and mipmapped arrays only, within their levels and layers.
CUresult check_view(const CUDA_RESOURCE_DESC& res, const CUDA_RESOURCE_VIEW_DESC& v,
                    const char* fn) {
  if (res.resType != CU_RESOURCE_TYPE_ARRAY && res.resType != CU_RESOURCE_TYPE_MIPMAPPED_ARRAY)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "a resource view needs an array resource");
  if (v.firstMipmapLevel > v.lastMipmapLevel)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "firstMipmapLevel above lastMipmapLevel");
  if (v.firstLayer > v.lastLayer)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "firstLayer above lastLayer");
  const CUDA_ARRAY3D_DESCRIPTOR* d = nullptr;
  unsigned levels = 1;
  if (res.resType == CU_RESOURCE_TYPE_ARRAY) {
    if (Array* a = array_of(res.res.array.hArray)) d = &a->desc;
    if (v.firstMipmapLevel != 0 || v.lastMipmapLevel != 0)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "mipmap levels in a view of a plain array");
  } else if (MipmappedArray* m = mipmapped_array_of(res.res.mipmap.hMipmappedArray)) {
    d = &m->desc;
    levels = m->levels;
  }
  if (!d) return CUDA_SUCCESS;  // translate_resource reports the handle
  if (v.lastMipmapLevel >= levels)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "lastMipmapLevel beyond the array's levels");
  if (d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) {
    std::size_t layers = d->Depth ? d->Depth : 1;
    if (d->Flags & CUDA_ARRAY3D_CUBEMAP) layers /= 6;
    if (v.lastLayer >= layers)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "lastLayer beyond the array's layers");
  } else if (v.firstLayer != 0 || v.lastLayer != 0) {
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "layers in a view of an unlayered array");
  }
  return CUDA_SUCCESS;
}

CUresult images_or_unsupported(backend::Images*& out, const char* fn) {
  out = Core::get().backend().images();
  if (out) return CUDA_SUCCESS;
  Core::get().log().warn("{}: the '{}' backend has no texture or surface objects", fn,
                         Core::get().backend().name());
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace
}  // namespace cudamux::core

namespace cudamux::impl {
using core::reject;

CUresult cuTexObjectCreate(CUtexObject* pTexObject, const CUDA_RESOURCE_DESC* pResDesc,
                           const CUDA_TEXTURE_DESC* pTexDesc,
                           const CUDA_RESOURCE_VIEW_DESC* pResViewDesc) {
  const char* fn = "cuTexObjectCreate";
  if (!pTexObject || !pResDesc || !pTexDesc)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "null argument");
  core::Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  if (CUresult r = core::check_texture_desc(*pTexDesc, fn)) return r;
  if (pResViewDesc)
    if (CUresult r = core::check_view(*pResDesc, *pResViewDesc, fn)) return r;
  CUDA_RESOURCE_DESC backend_res{};
  if (CUresult r = core::translate_resource(*ctx, *pResDesc, backend_res, false, fn)) return r;
  backend::Images* images = nullptr;
  if (CUresult r = core::images_or_unsupported(images, fn)) return r;
  std::uint64_t object = 0;
  if (CUresult r = core::Core::get().map(
          images->create_texture(backend_res, *pTexDesc, pResViewDesc, object), fn))
    return r;
  core::TextureRecord rec;
  rec.ctx = ctx;
  rec.resource = *pResDesc;
  rec.texture = *pTexDesc;
  if (pResViewDesc) {
    rec.view = *pResViewDesc;
    rec.has_view = true;
  }
  {
    std::lock_guard lock(core::g_mu);
    core::textures()[object] = rec;
  }
  *pTexObject = object;
  return CUDA_SUCCESS;
}

CUresult cuTexObjectDestroy(CUtexObject texObject) {
  const char* fn = "cuTexObjectDestroy";
  {
    std::lock_guard lock(core::g_mu);
    if (core::textures().erase(texObject) == 0)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a live texture object");
  }
  backend::Images* images = nullptr;
  if (CUresult r = core::images_or_unsupported(images, fn)) return r;
  return core::Core::get().map(images->destroy_texture(texObject), fn);
}

namespace {
template <class F>
CUresult with_texture(CUtexObject tex, const char* fn, F&& f) {
  std::lock_guard lock(core::g_mu);
  auto it = core::textures().find(tex);
  if (it == core::textures().end())
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a live texture object");
  return f(it->second);
}
}  // namespace

CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc, CUtexObject texObject) {
  const char* fn = "cuTexObjectGetResourceDesc";
  if (!pResDesc) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null pResDesc");
  return with_texture(texObject, fn, [&](const core::TextureRecord& r) {
    *pResDesc = r.resource;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC* pTexDesc, CUtexObject texObject) {
  const char* fn = "cuTexObjectGetTextureDesc";
  if (!pTexDesc) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null pTexDesc");
  return with_texture(texObject, fn, [&](const core::TextureRecord& r) {
    *pTexDesc = r.texture;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC* pResViewDesc,
                                        CUtexObject texObject) {
  const char* fn = "cuTexObjectGetResourceViewDesc";
  if (!pResViewDesc) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null pResViewDesc");
  return with_texture(texObject, fn, [&](const core::TextureRecord& r) {
    // CUDA: "If no resource view was set for texObject, the CUDA_ERROR_INVALID_VALUE is returned."
    if (!r.has_view) return reject(CUDA_ERROR_INVALID_VALUE, fn, "the object has no view");
    *pResViewDesc = r.view;
    return CUDA_SUCCESS;
  });
}

CUresult cuSurfObjectCreate(CUsurfObject* pSurfObject, const CUDA_RESOURCE_DESC* pResDesc) {
  const char* fn = "cuSurfObjectCreate";
  if (!pSurfObject || !pResDesc) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null argument");
  core::Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  if (pResDesc->resType != CU_RESOURCE_TYPE_ARRAY)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "a surface's resource must be an array");
  CUDA_RESOURCE_DESC backend_res{};
  if (CUresult r = core::translate_resource(*ctx, *pResDesc, backend_res, true, fn)) return r;
  backend::Images* images = nullptr;
  if (CUresult r = core::images_or_unsupported(images, fn)) return r;
  std::uint64_t object = 0;
  if (CUresult r = core::Core::get().map(images->create_surface(backend_res, object), fn)) return r;
  {
    std::lock_guard lock(core::g_mu);
    core::surfaces()[object] = core::SurfaceRecord{ctx, *pResDesc};
  }
  *pSurfObject = object;
  return CUDA_SUCCESS;
}

CUresult cuSurfObjectDestroy(CUsurfObject surfObject) {
  const char* fn = "cuSurfObjectDestroy";
  {
    std::lock_guard lock(core::g_mu);
    if (core::surfaces().erase(surfObject) == 0)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a live surface object");
  }
  backend::Images* images = nullptr;
  if (CUresult r = core::images_or_unsupported(images, fn)) return r;
  return core::Core::get().map(images->destroy_surface(surfObject), fn);
}

CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc, CUsurfObject surfObject) {
  const char* fn = "cuSurfObjectGetResourceDesc";
  if (!pResDesc) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null pResDesc");
  std::lock_guard lock(core::g_mu);
  auto it = core::surfaces().find(surfObject);
  if (it == core::surfaces().end())
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a live surface object");
  *pResDesc = it->second.resource;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetTexture1DLinearMaxWidth(size_t* maxWidthInElements, CUarray_format format,
                                            unsigned numChannels, CUdevice dev) {
  const char* fn = "cuDeviceGetTexture1DLinearMaxWidth";
  if (!maxWidthInElements) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (!core::Core::get().valid_device(dev))
    return reject(CUDA_ERROR_INVALID_DEVICE, fn, "invalid device");
  if (core::linear_element(format, numChannels, fn) == 0) return CUDA_ERROR_INVALID_VALUE;
  // The device's limit in elements, whatever their size (as NVIDIA's attribute describes it).
  *maxWidthInElements = static_cast<std::size_t>(
      core::device_attribute_or(dev, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH, 1 << 27));
  return CUDA_SUCCESS;
}

}  // namespace cudamux::impl
