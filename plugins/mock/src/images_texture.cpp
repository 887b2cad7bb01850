// Texture and surface objects of the mock (issue 17): a cudamux_texture / cudamux_surface the
// plugin owns, whose address is the CUtexObject / CUsurfObject kernels receive; the sampler that
// reads them is the device runtime's (plugins/mock/device/texture.cpp). The core has validated
// the descriptors against CUDA's rules.
#include <cstring>

#include "images.hpp"

namespace cudamux::mock {
namespace {
backend::Status st(CUresult r) noexcept { return {static_cast<std::int32_t>(r)}; }

// Bytes of one channel of the formats the sampler reads; 0 for the others (block-compressed,
// video formats), which the mock does not sample.
unsigned channel_bytes(unsigned format) {
  switch (format) {
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

// A resource view's format as CUarray_format and channels; false for formats the mock does not
// sample (block-compressed views).
bool view_format(CUresourceViewFormat f, unsigned& format, unsigned& channels) {
  if (f >= CU_RES_VIEW_FORMAT_UINT_1X8 && f <= CU_RES_VIEW_FORMAT_FLOAT_4X32) {
    static constexpr unsigned kFormats[8] = {CU_AD_FORMAT_UNSIGNED_INT8,  CU_AD_FORMAT_SIGNED_INT8,
                                             CU_AD_FORMAT_UNSIGNED_INT16, CU_AD_FORMAT_SIGNED_INT16,
                                             CU_AD_FORMAT_UNSIGNED_INT32, CU_AD_FORMAT_SIGNED_INT32,
                                             CU_AD_FORMAT_HALF,           CU_AD_FORMAT_FLOAT};
    const unsigned i = static_cast<unsigned>(f) - 1;
    format = kFormats[i / 3];
    channels = 1u << (i % 3);
    return true;
  }
  return false;
}

// The storage of `resource` as one image: an array's own, or linear memory seen as a 1D or
// pitched 2D image.
backend::Status image_of(const MockImages& images, const CUDA_RESOURCE_DESC& resource,
                         cudamux_image& out) {
  out = cudamux_image{};
  switch (resource.resType) {
    case CU_RESOURCE_TYPE_ARRAY:
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY: {
      const std::uint64_t handle =
          resource.resType == CU_RESOURCE_TYPE_ARRAY
              ? reinterpret_cast<std::uint64_t>(resource.res.array.hArray)
              : reinterpret_cast<std::uint64_t>(resource.res.mipmap.hMipmappedArray);
      const cudamux_image* img = images.find_array(handle);
      if (img == nullptr) return st(CUDA_ERROR_INVALID_HANDLE);
      out = *img;
      return backend::kOk;
    }
    case CU_RESOURCE_TYPE_LINEAR:
    case CU_RESOURCE_TYPE_PITCH2D: {
      const bool linear = resource.resType == CU_RESOURCE_TYPE_LINEAR;
      const unsigned format = linear ? resource.res.linear.format : resource.res.pitch2D.format;
      const unsigned channels =
          linear ? resource.res.linear.numChannels : resource.res.pitch2D.numChannels;
      const unsigned bytes = channel_bytes(format);
      if (bytes == 0) return st(CUDA_ERROR_NOT_SUPPORTED);
      out.format = format;
      out.channels = channels;
      out.element_bytes = bytes * channels;
      out.dims = linear ? 1 : 2;
      out.num_levels = 1;
      cudamux_image_level& l = out.levels[0];
      if (linear) {
        l.data = reinterpret_cast<void*>(resource.res.linear.devPtr);
        l.width = resource.res.linear.sizeInBytes / out.element_bytes;
        l.height = 1;
        l.row_pitch = resource.res.linear.sizeInBytes;
      } else {
        l.data = reinterpret_cast<void*>(resource.res.pitch2D.devPtr);
        l.width = resource.res.pitch2D.width;
        l.height = resource.res.pitch2D.height;
        l.row_pitch = resource.res.pitch2D.pitchInBytes;
      }
      l.depth = 1;
      l.slice_pitch = l.row_pitch * l.height;
      return backend::kOk;
    }
    default:
      return st(CUDA_ERROR_INVALID_VALUE);
  }
}

// Applies a resource view: another format of the same element size, a range of mip levels,
// a range of layers.
backend::Status apply_view(const CUDA_RESOURCE_VIEW_DESC& view, cudamux_image& img) {
  if (view.format != CU_RES_VIEW_FORMAT_NONE) {
    unsigned format = 0, channels = 0;
    if (!view_format(view.format, format, channels)) return st(CUDA_ERROR_NOT_SUPPORTED);
    img.format = format;
    img.channels = channels;
  }
  if (view.firstMipmapLevel != 0 || view.lastMipmapLevel != 0) {
    const unsigned first = view.firstMipmapLevel;
    const unsigned last = view.lastMipmapLevel;
    if (first > last || last >= img.num_levels) return st(CUDA_ERROR_INVALID_VALUE);
    for (unsigned l = first; l <= last; ++l) img.levels[l - first] = img.levels[l];
    img.num_levels = last - first + 1;
  }
  if (img.flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) {
    const unsigned per = (img.flags & CUDA_ARRAY3D_CUBEMAP) ? 6 : 1;
    const unsigned first = view.firstLayer * per;
    const unsigned count = (view.lastLayer - view.firstLayer + 1) * per;
    for (unsigned l = 0; l < img.num_levels; ++l) {
      cudamux_image_level& lv = img.levels[l];
      if (first + count > lv.depth) return st(CUDA_ERROR_INVALID_VALUE);
      lv.data = static_cast<unsigned char*>(lv.data) + first * lv.slice_pitch;
      lv.depth = count;
    }
  }
  return backend::kOk;
}

}  // namespace

backend::Status MockImages::create_texture(const CUDA_RESOURCE_DESC& resource,
                                           const CUDA_TEXTURE_DESC& texture,
                                           const CUDA_RESOURCE_VIEW_DESC* view,
                                           std::uint64_t& object) {
  auto tex = std::make_unique<cudamux_texture>();
  std::memset(tex.get(), 0, sizeof *tex);
  if (backend::Status s = image_of(*this, resource, tex->image); !s.ok()) return s;
  if (channel_bytes(tex->image.format) == 0 && !(tex->image.format >= CU_AD_FORMAT_UNORM_INT8X1 &&
                                                 tex->image.format <= CU_AD_FORMAT_SNORM_INT16X4))
    return st(CUDA_ERROR_NOT_SUPPORTED);  // block-compressed and video formats
  if (view != nullptr)
    if (backend::Status s = apply_view(*view, tex->image); !s.ok()) return s;
  tex->resource_type = resource.resType;
  for (int i = 0; i < 3; ++i) tex->address_mode[i] = texture.addressMode[i];
  tex->filter_mode = texture.filterMode;
  tex->mipmap_filter_mode = texture.mipmapFilterMode;
  tex->flags = texture.flags;
  tex->max_anisotropy = texture.maxAnisotropy;
  tex->mipmap_level_bias = texture.mipmapLevelBias;
  tex->min_mipmap_level_clamp = texture.minMipmapLevelClamp;
  tex->max_mipmap_level_clamp = texture.maxMipmapLevelClamp;
  for (int i = 0; i < 4; ++i) tex->border_color[i] = texture.borderColor[i];
  tex->magic = CUDAMUX_TEXTURE_MAGIC;
  object = reinterpret_cast<std::uint64_t>(tex.get());
  std::lock_guard lock(mu_);
  textures_.emplace(object, std::move(tex));
  return backend::kOk;
}

backend::Status MockImages::destroy_texture(std::uint64_t object) {
  std::unique_ptr<cudamux_texture> dead;
  {
    std::lock_guard lock(mu_);
    auto it = textures_.find(object);
    if (it == textures_.end()) return st(CUDA_ERROR_INVALID_VALUE);
    dead = std::move(it->second);
    textures_.erase(it);
  }
  dead->magic = 0;  // a kernel still holding the handle traps instead of reading freed state
  return backend::kOk;
}

backend::Status MockImages::create_surface(const CUDA_RESOURCE_DESC& resource,
                                           std::uint64_t& object) {
  if (resource.resType != CU_RESOURCE_TYPE_ARRAY) return st(CUDA_ERROR_INVALID_VALUE);
  auto surf = std::make_unique<cudamux_surface>();
  std::memset(surf.get(), 0, sizeof *surf);
  if (backend::Status s = image_of(*this, resource, surf->image); !s.ok()) return s;
  surf->magic = CUDAMUX_SURFACE_MAGIC;
  object = reinterpret_cast<std::uint64_t>(surf.get());
  std::lock_guard lock(mu_);
  surfaces_.emplace(object, std::move(surf));
  return backend::kOk;
}

backend::Status MockImages::destroy_surface(std::uint64_t object) {
  std::unique_ptr<cudamux_surface> dead;
  {
    std::lock_guard lock(mu_);
    auto it = surfaces_.find(object);
    if (it == surfaces_.end()) return st(CUDA_ERROR_INVALID_VALUE);
    dead = std::move(it->second);
    surfaces_.erase(it);
  }
  dead->magic = 0;
  return backend::kOk;
}

}  // namespace cudamux::mock
