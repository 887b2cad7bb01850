// CUDA arrays, texture and surface objects of the hip backend (issue 17). What HIP 5.2 does
// with each call was read in ROCm 5.2.3's hipamd sources (src/hip_memory.cpp,
// src/hip_texture.cpp, src/hip_surface.cpp, src/hip_conversions.hpp); the places where it
// would silently differ from CUDA are refused here with a log line.
#include "images.hpp"

#include <algorithm>
#include <climits>

#include "common.hpp"
#include "mapping.hpp"

namespace cudamux::hip {
namespace {

namespace be = cudamux::backend;
using mapping::Table;

// Bytes of one element of an array whose format the tables map (the plain formats).
std::size_t element_bytes(const CUDA_ARRAY3D_DESCRIPTOR& d) {
  switch (d.Format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return d.NumChannels;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2 * std::size_t{d.NumChannels};
    default:
      return 4 * std::size_t{d.NumChannels};
  }
}

// The descriptor of level `l` of a mipmapped array, as the core computes it: each size halves
// (never below 1); the layers of layered arrays stay.
CUDA_ARRAY3D_DESCRIPTOR level_desc(const CUDA_ARRAY3D_DESCRIPTOR& d, unsigned l) {
  CUDA_ARRAY3D_DESCRIPTOR out = d;
  auto half = [l](std::size_t v) -> std::size_t {
    return v ? std::max<std::size_t>(1, v >> l) : 0;
  };
  out.Width = half(d.Width);
  out.Height = half(d.Height);
  if (!(d.Flags & CUDA_ARRAY3D_LAYERED)) out.Depth = half(d.Depth);
  return out;
}

// How many texture coordinates address an array: HIP 5.2 applies addressMode[0] to all of
// them (ROCclr's sampler has one addressing mode).
int coordinates(const CUDA_ARRAY3D_DESCRIPTOR& d) {
  if (d.Height == 0) return 1;  // 1D, layered or not
  if (d.Depth == 0 || (d.Flags & CUDA_ARRAY3D_LAYERED)) return 2;
  return 3;
}

hipArray_t hip_array(std::uint64_t h) { return reinterpret_cast<hipArray_t>(h); }

}  // namespace

HipImages::~HipImages() {
  // Arrays the core did not destroy (it destroys them with their contexts): HIP frees its
  // images at exit.
}

std::optional<HipImages::ArrayRecord> HipImages::find(std::uint64_t handle) {
  std::lock_guard lock(mu_);
  auto it = arrays_.find(handle);
  if (it == arrays_.end()) return std::nullopt;
  return it->second;
}

be::Status HipImages::create_array(int ordinal, const CUDA_ARRAY3D_DESCRIPTOR& desc,
                                   unsigned mip_levels, std::uint64_t& handle) {
  const auto format = mapping::to_hip(Table::array_format, desc.Format);
  if (!format) return unmapped_argument(log_, Table::array_format, desc.Format, "cuArray3DCreate");
  // HIP 5.2 refuses hipArraySurfaceLoadStore (hipArray3DCreate: hipErrorNotSupported), yet
  // every array it makes is a read-write image that hipCreateSurfaceObject binds: the bit is
  // CUDA's permission, which the core checks when a surface is made, and never reaches HIP.
  const unsigned cuda_flags = desc.Flags & ~unsigned{CUDA_ARRAY3D_SURFACE_LDST};
  unsigned flags = 0;
  if (auto st = map_flags(log_, Table::array3d_flag, cuda_flags, flags, "cuArray3DCreate");
      !st.ok())
    return st;
  // HIP 5.2 makes only 1D, 2D and 3D images and layered 1D and 2D ones: hipArray3DCreate
  // answers hipErrorNotSupported for cubemaps and texture gather, and its mipmapped arrays
  // take no flag but hipArrayLayered (anything else is an internal assertion in HIP).
  if (flags & ~unsigned{hipArrayLayered}) {
    log_.warn(
        "hip backend: cuArray3DCreate: flags 0x{:x} (cubemap / texture gather): HIP 5.2 has no "
        "such arrays: returning not supported",
        desc.Flags);
    return kNotSupported;
  }
  HIP_ARRAY3D_DESCRIPTOR h{};
  h.Width = desc.Width;
  h.Height = desc.Height;
  h.Depth = desc.Depth;
  h.Format = static_cast<hipArray_Format>(*format);
  h.NumChannels = desc.NumChannels;
  h.Flags = flags;
  if (auto st = use_device(api_, ordinal); !st.ok()) return st;
  if (mip_levels == 0) {
    hipArray_t a = nullptr;
    if (const hipError_t e = api_.hipArray3DCreate(&a, &h)) return status(e);
    handle = reinterpret_cast<std::uint64_t>(a);
  } else {
    hipMipmappedArray_t m = nullptr;
    if (const hipError_t e = api_.hipMipmappedArrayCreate(&m, &h, mip_levels)) return status(e);
    handle = reinterpret_cast<std::uint64_t>(m);
  }
  ArrayRecord rec;
  rec.ordinal = ordinal;
  rec.desc = desc;
  rec.mipmapped = mip_levels != 0;
  rec.levels.assign(mip_levels, 0);
  std::lock_guard lock(mu_);
  arrays_[handle] = std::move(rec);
  return be::kOk;
}

be::Status HipImages::destroy_array(std::uint64_t handle) {
  ArrayRecord rec;
  {
    std::lock_guard lock(mu_);
    auto it = arrays_.find(handle);
    if (it == arrays_.end() || it->second.level) return kInvalidValue;
    rec = std::move(it->second);
    arrays_.erase(it);
    for (std::uint64_t level : rec.levels)
      if (level != 0) arrays_.erase(level);
  }
  if (auto st = use_device(api_, rec.ordinal); !st.ok()) return st;
  if (!rec.mipmapped) return status(api_.hipArrayDestroy(hip_array(handle)));
  // HIP 5.2's hipMipmappedArrayGetLevel makes a new hipArray (an image view) per call that
  // nothing else frees; hipArrayDestroy releases the view and the struct.
  for (std::uint64_t level : rec.levels)
    if (level != 0) (void)api_.hipArrayDestroy(hip_array(level));
  return status(api_.hipMipmappedArrayDestroy(reinterpret_cast<hipMipmappedArray_t>(handle)));
}

be::Status HipImages::mip_level(std::uint64_t mipmapped, unsigned level,
                                std::uint64_t& level_handle) {
  std::lock_guard lock(mu_);  // held across HIP's call: one level array per level
  auto it = arrays_.find(mipmapped);
  if (it == arrays_.end() || !it->second.mipmapped || level >= it->second.levels.size())
    return kInvalidValue;
  if (it->second.levels[level] != 0) {
    level_handle = it->second.levels[level];
    return be::kOk;
  }
  if (auto st = use_device(api_, it->second.ordinal); !st.ok()) return st;
  hipArray_t a = nullptr;
  if (const hipError_t e = api_.hipMipmappedArrayGetLevel(
          &a, reinterpret_cast<hipMipmappedArray_t>(mipmapped), level))
    return status(e);
  level_handle = reinterpret_cast<std::uint64_t>(a);
  it->second.levels[level] = level_handle;
  ArrayRecord rec;
  rec.ordinal = it->second.ordinal;
  rec.desc = level_desc(it->second.desc, level);
  rec.level = true;
  arrays_[level_handle] = rec;
  return be::kOk;
}

be::Status HipImages::create_texture(const CUDA_RESOURCE_DESC& resource,
                                     const CUDA_TEXTURE_DESC& texture,
                                     const CUDA_RESOURCE_VIEW_DESC* view, std::uint64_t& object) {
  const char* fn = "cuTexObjectCreate";
  HIP_RESOURCE_DESC r{};
  const auto type = mapping::to_hip(Table::resource_type, resource.resType);
  if (!type) return unmapped_argument(log_, Table::resource_type, resource.resType, fn);
  r.resType = static_cast<HIPresourcetype>(*type);
  int coords = 0;  // texture coordinates whose address modes HIP applies
  std::optional<ArrayRecord> array;
  switch (resource.resType) {
    case CU_RESOURCE_TYPE_ARRAY: {
      const auto h = reinterpret_cast<std::uint64_t>(resource.res.array.hArray);
      array = find(h);
      if (!array) return kInvalidValue;
      r.res.array.hArray = hip_array(h);
      coords = coordinates(array->desc);
      break;
    }
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
      // hip_texture.cpp of ROCm 5.2: "Mipmaps are currently not supported".
      log_.warn(
          "hip backend: {}: texture objects over mipmapped arrays: HIP 5.2 has none (its levels "
          "are arrays: cuMipmappedArrayGetLevel): returning not supported",
          fn);
      return kNotSupported;
    case CU_RESOURCE_TYPE_LINEAR: {
      const auto f = mapping::to_hip(Table::array_format, resource.res.linear.format);
      if (!f) return unmapped_argument(log_, Table::array_format, resource.res.linear.format, fn);
      r.res.linear.devPtr = reinterpret_cast<hipDeviceptr_t>(resource.res.linear.devPtr);
      r.res.linear.format = static_cast<hipArray_Format>(*f);
      r.res.linear.numChannels = resource.res.linear.numChannels;
      r.res.linear.sizeInBytes = resource.res.linear.sizeInBytes;
      break;
    }
    case CU_RESOURCE_TYPE_PITCH2D: {
      const auto f = mapping::to_hip(Table::array_format, resource.res.pitch2D.format);
      if (!f) return unmapped_argument(log_, Table::array_format, resource.res.pitch2D.format, fn);
      r.res.pitch2D.devPtr = reinterpret_cast<hipDeviceptr_t>(resource.res.pitch2D.devPtr);
      r.res.pitch2D.format = static_cast<hipArray_Format>(*f);
      r.res.pitch2D.numChannels = resource.res.pitch2D.numChannels;
      r.res.pitch2D.width = resource.res.pitch2D.width;
      r.res.pitch2D.height = resource.res.pitch2D.height;
      r.res.pitch2D.pitchInBytes = resource.res.pitch2D.pitchInBytes;
      coords = 2;
      break;
    }
  }

  HIP_TEXTURE_DESC t{};
  for (int i = 0; i < 3; ++i) {
    const auto m = mapping::to_hip(Table::address_mode, texture.addressMode[i]);
    if (!m) return unmapped_argument(log_, Table::address_mode, texture.addressMode[i], fn);
    t.addressMode[i] = static_cast<HIPaddress_mode>(*m);
  }
  for (int i = 1; i < coords; ++i) {
    if (texture.addressMode[i] != texture.addressMode[0]) {
      log_.warn(
          "hip backend: {}: address modes differ between coordinates ({} for x, {} for "
          "coordinate {}): HIP 5.2 applies one mode to all: returning not supported",
          fn, static_cast<int>(texture.addressMode[0]), static_cast<int>(texture.addressMode[i]),
          i);
      return kNotSupported;
    }
  }
  const auto filter = mapping::to_hip(Table::filter_mode, texture.filterMode);
  if (!filter) return unmapped_argument(log_, Table::filter_mode, texture.filterMode, fn);
  t.filterMode = static_cast<HIPfilter_mode>(*filter);
  const auto mip_filter = mapping::to_hip(Table::filter_mode, texture.mipmapFilterMode);
  if (!mip_filter) return unmapped_argument(log_, Table::filter_mode, texture.mipmapFilterMode, fn);
  t.mipmapFilterMode = static_cast<HIPfilter_mode>(*mip_filter);
  if (auto st = map_flags(log_, Table::texture_flag, texture.flags, t.flags, fn); !st.ok())
    return st;
  t.maxAnisotropy = texture.maxAnisotropy;
  t.mipmapLevelBias = texture.mipmapLevelBias;
  t.minMipmapLevelClamp = texture.minMipmapLevelClamp;
  t.maxMipmapLevelClamp = texture.maxMipmapLevelClamp;
  std::copy(std::begin(texture.borderColor), std::end(texture.borderColor), t.borderColor);

  // HIP 5.2 honours a view's format only (hip_texture.cpp: "ROCclr currently right now can
  // only change the format of the image"): a view of part of the array is refused, one of
  // the whole array in the array's own format is no view.
  HIP_RESOURCE_VIEW_DESC v{};
  const HIP_RESOURCE_VIEW_DESC* hip_view = nullptr;
  if (view != nullptr && array) {
    const auto& d = array->desc;
    const std::size_t last_layer =
        (d.Flags & CUDA_ARRAY3D_LAYERED) ? std::max<std::size_t>(d.Depth, 1) - 1 : 0;
    if (view->firstMipmapLevel != 0 || view->lastMipmapLevel != 0 || view->firstLayer != 0 ||
        view->lastLayer != last_layer) {
      log_.warn(
          "hip backend: {}: a resource view of levels {}..{}, layers {}..{}: HIP 5.2 views "
          "only change the format: returning not supported",
          fn, view->firstMipmapLevel, view->lastMipmapLevel, view->firstLayer, view->lastLayer);
      return kNotSupported;
    }
    if (view->format != CU_RES_VIEW_FORMAT_NONE) {
      const auto f = mapping::to_hip(Table::resource_view_format, view->format);
      if (!f) return unmapped_argument(log_, Table::resource_view_format, view->format, fn);
      v.format = static_cast<HIPresourceViewFormat>(*f);
      v.width = view->width;
      v.height = view->height;
      v.depth = view->depth;
      v.firstMipmapLevel = view->firstMipmapLevel;
      v.lastMipmapLevel = view->lastMipmapLevel;
      v.firstLayer = view->firstLayer;
      v.lastLayer = view->lastLayer;
      hip_view = &v;
    }
  }

  // Objects over arrays are made on the array's device; over linear memory on the device
  // this thread last used (the context's, for the core's calls).
  if (array)
    if (auto st = use_device(api_, array->ordinal); !st.ok()) return st;
  hipTextureObject_t o = nullptr;
  const hipError_t e = api_.hipTexObjectCreate(&o, &r, &t, hip_view);
  if (e == hipErrorNotSupported) {
    log_.warn(
        "hip backend: {}: hipTexObjectCreate answered hipErrorNotSupported (HIP 5.2 programs no "
        "anisotropy, mipmap level bias or level clamps)",
        fn);
  }
  if (e != hipSuccess) return status(e);
  object = reinterpret_cast<std::uint64_t>(o);
  return be::kOk;
}

be::Status HipImages::destroy_texture(std::uint64_t object) {
  return status(api_.hipTexObjectDestroy(reinterpret_cast<hipTextureObject_t>(object)));
}

be::Status HipImages::create_surface(const CUDA_RESOURCE_DESC& resource, std::uint64_t& object) {
  // The core passes arrays only (made with CUDA_ARRAY3D_SURFACE_LDST); hipCreateSurfaceObject
  // takes the runtime's descriptor, whose only surface resource is an array.
  const auto h = reinterpret_cast<std::uint64_t>(resource.res.array.hArray);
  const auto array = find(h);
  if (resource.resType != CU_RESOURCE_TYPE_ARRAY || !array) return kInvalidValue;
  hipResourceDesc r{};
  r.resType = hipResourceTypeArray;
  r.res.array.array = hip_array(h);
  if (auto st = use_device(api_, array->ordinal); !st.ok()) return st;
  hipSurfaceObject_t o = nullptr;
  if (const hipError_t e = api_.hipCreateSurfaceObject(&o, &r)) return status(e);
  object = reinterpret_cast<std::uint64_t>(o);
  return be::kOk;
}

be::Status HipImages::destroy_surface(std::uint64_t object) {
  return status(api_.hipDestroySurfaceObject(reinterpret_cast<hipSurfaceObject_t>(object)));
}

be::Status HipImages::copy(const be::CopyDesc& d, hipStream_t stream) {
  if (d.src_array != 0 && d.dst_array != 0) {
    // HIP 5.2 converts both arrays' byte offsets and the width with the source's element
    // size (ihipMemcpyAtoAValidate): arrays of different element sizes would be misplaced.
    const auto src = find(d.src_array), dst = find(d.dst_array);
    if (!src || !dst) return kInvalidValue;
    if (element_bytes(src->desc) != element_bytes(dst->desc)) {
      log_.warn(
          "hip backend: array-to-array copy between elements of {} and {} bytes: HIP 5.2 "
          "counts both in the source's elements: returning not supported",
          element_bytes(src->desc), element_bytes(dst->desc));
      return kNotSupported;
    }
  }
  // HIP_MEMCPY3D holds positions, pitches and sizes in 32 bits.
  bool fits = true;
  auto narrow = [&fits](std::size_t v) {
    fits = fits && v <= UINT_MAX;
    return static_cast<unsigned>(v);
  };
  const auto array_type = mapping::to_hip(Table::memory_type, CU_MEMORYTYPE_ARRAY);
  const auto src_type = mapping::to_hip(Table::memory_type, cuda_memory_type(d.src_kind));
  const auto dst_type = mapping::to_hip(Table::memory_type, cuda_memory_type(d.dst_kind));
  if (!array_type || !src_type || !dst_type) return kNotSupported;  // the tables map all four
  HIP_MEMCPY3D p{};
  p.WidthInBytes = narrow(d.width_bytes);
  p.Height = narrow(d.height);
  p.Depth = narrow(d.depth);
  if (d.src_array != 0) {
    p.srcMemoryType = static_cast<hipMemoryType>(*array_type);
    p.srcArray = hip_array(d.src_array);
    p.srcXInBytes = narrow(d.src_x_bytes);
    p.srcY = narrow(d.src_y);
    p.srcZ = narrow(d.src_z);
  } else {
    // Both pointers set: HIP 5.2 takes the host one for pageable memory and the device one
    // once it finds the memory is its own (pinned host memory included).
    p.srcMemoryType = static_cast<hipMemoryType>(*src_type);
    p.srcHost = d.src;
    p.srcDevice = const_cast<void*>(d.src);
    p.srcPitch = narrow(d.src_pitch != 0 ? d.src_pitch : d.width_bytes);
    p.srcHeight =
        narrow(d.src_pitch != 0 && d.src_slice != 0 ? d.src_slice / d.src_pitch : d.height);
  }
  if (d.dst_array != 0) {
    p.dstMemoryType = static_cast<hipMemoryType>(*array_type);
    p.dstArray = hip_array(d.dst_array);
    p.dstXInBytes = narrow(d.dst_x_bytes);
    p.dstY = narrow(d.dst_y);
    p.dstZ = narrow(d.dst_z);
  } else {
    p.dstMemoryType = static_cast<hipMemoryType>(*dst_type);
    p.dstHost = d.dst;
    p.dstDevice = d.dst;
    p.dstPitch = narrow(d.dst_pitch != 0 ? d.dst_pitch : d.width_bytes);
    p.dstHeight =
        narrow(d.dst_pitch != 0 && d.dst_slice != 0 ? d.dst_slice / d.dst_pitch : d.height);
  }
  if (!fits) {
    log_.warn(
        "hip backend: a copy with an array end of {} x {} x {} bytes (pitches {} and {}): HIP "
        "5.2's HIP_MEMCPY3D holds 32-bit sizes: returning not supported",
        d.width_bytes, d.height, d.depth, d.src_pitch, d.dst_pitch);
    return kNotSupported;
  }
  return status(api_.hipDrvMemcpy3DAsync(&p, stream));
}

}  // namespace cudamux::hip
