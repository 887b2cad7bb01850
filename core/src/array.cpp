// CUDA arrays and mipmapped arrays (issue 17): descriptors checked against CUDA's rules and
// the device's limits, handles of the core that own the backend's storage
// (backend::Images), and the Get* calls answered from the descriptor. Copies with array ends
// are in memory.cpp.
#include "array.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>
#include <mutex>

#include "core.hpp"
#include "cudamux/driver_impl.hpp"
#include "graph.hpp"

namespace cudamux::core {
namespace {

HandleTable<Array>& arrays() {
  static HandleTable<Array> table{0xca};
  return table;
}
HandleTable<MipmappedArray>& mipmapped_arrays() {
  static HandleTable<MipmappedArray> table{0xcb};
  return table;
}
// Serialises creation and destruction against context teardown and level creation.
std::mutex& registry_mutex() {
  static std::mutex mu;
  return mu;
}

constexpr unsigned kKnownFlags =
    CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_CUBEMAP |
    CUDA_ARRAY3D_TEXTURE_GATHER | CUDA_ARRAY3D_DEPTH_TEXTURE | CUDA_ARRAY3D_COLOR_ATTACHMENT |
    CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING | CUDA_ARRAY3D_VIDEO_ENCODE_DECODE;

// Formats CUDA knows that cudamux does not store: block-compressed and YUV ones.
bool known_unstored_format(unsigned f) noexcept {
  return (f >= CU_AD_FORMAT_BC1_UNORM && f <= CU_AD_FORMAT_P010) ||
         (f >= CU_AD_FORMAT_P016 && f <= CU_AD_FORMAT_Y410) ||
         (f >= CU_AD_FORMAT_NV12 && f <= CU_AD_FORMAT_YUV444_16bit_SemiPlanar);
}

int attr(const Context& ctx, CUdevice_attribute a) noexcept {
  return device_attribute_or(ctx.device, a, INT_MAX);  // unknown: no limit of ours
}

// Whether w x h x d (layers apart) fits the device's limits for this kind of array.
bool within_limits(const Context& ctx, const CUDA_ARRAY3D_DESCRIPTOR& d, bool mipmapped) {
  using A = CUdevice_attribute;
  const bool surface = d.Flags & CUDA_ARRAY3D_SURFACE_LDST;
  const bool layered = d.Flags & CUDA_ARRAY3D_LAYERED;
  const bool cube = d.Flags & CUDA_ARRAY3D_CUBEMAP;
  const std::size_t w = d.Width, h = d.Height, depth = d.Depth;
  // Limits on one size: the texture limit, and the surface limit too for SURFACE_LDST arrays.
  auto fits = [&](std::size_t v, A tex, A surf) {
    if (v > static_cast<std::size_t>(attr(ctx, tex))) return false;
    return !surface || v <= static_cast<std::size_t>(attr(ctx, surf));
  };
  if (cube) {
    if (layered)
      return fits(w, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH,
                  CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH) &&
             fits(depth / 6, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS,
                  CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS);
    return fits(w, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH);
  }
  if (layered && h == 0)
    return fits(w, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH) &&
           fits(depth, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS);
  if (layered)
    return fits(w, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH) &&
           fits(h, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT) &&
           fits(depth, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS);
  if (h == 0)
    return fits(w,
                mipmapped ? CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH
                          : CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH);
  if (depth == 0) {
    if (d.Flags & CUDA_ARRAY3D_TEXTURE_GATHER)
      return fits(w, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH,
                  CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH) &&
             fits(h, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT,
                  CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT);
    return fits(w,
                mipmapped ? CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH
                          : CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH) &&
           fits(h,
                mipmapped ? CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT
                          : CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT);
  }
  // 3D: the regular limits, or the alternate set (wide and flat vs. deep).
  const bool regular = fits(w, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH,
                            CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH) &&
                       fits(h, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT,
                            CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT) &&
                       fits(depth, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH,
                            CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH);
  if (regular || surface || mipmapped) return regular;
  return w <= static_cast<std::size_t>(
                  attr(ctx, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE)) &&
         h <= static_cast<std::size_t>(
                  attr(ctx, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE)) &&
         depth <= static_cast<std::size_t>(
                      attr(ctx, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE));
}

// CUDA's checks of an array descriptor, in the order of its errors.
CUresult validate(const Context& ctx, const CUDA_ARRAY3D_DESCRIPTOR& d, bool mipmapped,
                  const char* fn) {
  if (d.Flags & ~kKnownFlags) return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown flags");
  const auto format = static_cast<unsigned>(d.Format);
  if (array_element_bytes(d.Format, d.NumChannels) == 0) {
    if (known_unstored_format(format))
      return reject(CUDA_ERROR_NOT_SUPPORTED, fn,
                    "block-compressed and YUV array formats are not supported by cudamux");
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid format or channel count");
  }
  if (d.Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING))
    return reject(CUDA_ERROR_NOT_SUPPORTED, fn,
                  "sparse and deferred-mapping arrays are not supported by cudamux");
  if (d.Flags & CUDA_ARRAY3D_VIDEO_ENCODE_DECODE)
    return reject(CUDA_ERROR_NOT_SUPPORTED, fn,
                  "video encode/decode arrays are not supported by cudamux");
  const bool layered = d.Flags & CUDA_ARRAY3D_LAYERED;
  const bool cube = d.Flags & CUDA_ARRAY3D_CUBEMAP;
  if (d.Width == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "zero width");
  if (d.Height == 0 && d.Depth != 0 && !layered)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "depth without height");
  if (layered && d.Depth == 0)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "layered array without layers (depth 0)");
  if (cube) {
    if (d.Width != d.Height)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "cubemap faces must be square");
    if (layered ? d.Depth % 6 != 0 : d.Depth != 6)
      return reject(CUDA_ERROR_INVALID_VALUE, fn,
                    "cubemap depth must be 6 (a multiple of 6 when layered)");
  }
  if ((d.Flags & CUDA_ARRAY3D_TEXTURE_GATHER) && (d.Height == 0 || d.Depth != 0))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "texture gather needs a 2D array");
  if (!within_limits(ctx, d, mipmapped))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "size exceeds the device's limits");
  return CUDA_SUCCESS;
}

backend::Images* images(const char* fn, CUresult& r) {
  backend::Images* im = Core::get().backend().images();
  r = im ? CUDA_SUCCESS : reject(CUDA_ERROR_NOT_SUPPORTED, fn, "the backend has no CUDA arrays");
  return im;
}

CUresult create(const CUDA_ARRAY3D_DESCRIPTOR& d, unsigned levels, std::uint64_t& impl,
                Context*& ctx, const char* fn) {
  if (CUresult r = unsafe_call(fn)) return r;  // issue 16: not while capturing
  if (CUresult r = current_context(ctx)) return r;
  if (CUresult r = validate(*ctx, d, levels != 0, fn)) return r;
  CUresult r = CUDA_SUCCESS;
  backend::Images* im = images(fn, r);
  if (!im) return r;
  Core& core = Core::get();
  return core.map(im->create_array(core.backend_ordinal(ctx->device), d, levels, impl), fn);
}

// The descriptor of level `l` of a mipmapped array: each size halves (never below 1); the
// layers of layered and cubemap arrays stay.
CUDA_ARRAY3D_DESCRIPTOR level_desc(const CUDA_ARRAY3D_DESCRIPTOR& d, unsigned l) {
  CUDA_ARRAY3D_DESCRIPTOR out = d;
  auto half = [l](std::size_t v) -> std::size_t {
    return v ? std::max<std::size_t>(1, v >> l) : 0;
  };
  out.Width = half(d.Width);
  out.Height = half(d.Height);
  if (!(d.Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP))) out.Depth = half(d.Depth);
  return out;
}

unsigned max_levels(const CUDA_ARRAY3D_DESCRIPTOR& d) {
  std::size_t m = std::max<std::size_t>(d.Width, d.Height);
  if (!(d.Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)))
    m = std::max<std::size_t>(m, d.Depth);
  unsigned n = 1;
  while (m >>= 1) ++n;
  return n;
}

// Frees a mipmapped array's level objects and handles; the registry lock is held.
void drop_levels(MipmappedArray& m) noexcept {
  for (Array* a : m.level_arrays) {
    if (!a) continue;
    arrays().erase(reinterpret_cast<std::uintptr_t>(a->handle));
    delete a;
  }
  m.level_arrays.clear();
}

}  // namespace

Array* array_of(CUarray h) noexcept { return arrays().find(reinterpret_cast<std::uintptr_t>(h)); }
MipmappedArray* mipmapped_array_of(CUmipmappedArray h) noexcept {
  return mipmapped_arrays().find(reinterpret_cast<std::uintptr_t>(h));
}

CUarray array_for_backend(std::uint64_t impl) noexcept {
  if (impl == 0) return nullptr;
  for (Array* a : arrays().live())
    if (a->impl == impl) return a->handle;
  return nullptr;
}

unsigned array_element_bytes(CUarray_format format, unsigned channels) noexcept {
  auto plain = [channels](unsigned size) -> unsigned {
    return channels == 1 || channels == 2 || channels == 4 ? size * channels : 0;
  };
  // The normalized formats carry their channel count in the format.
  auto fixed = [channels](unsigned want, unsigned bytes) -> unsigned {
    return channels == want ? bytes : 0;
  };
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return plain(1);
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return plain(2);
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return plain(4);
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1:
      return fixed(1, 1);
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
      return fixed(2, 2);
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
      return fixed(4, 4);
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1:
      return fixed(1, 2);
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
      return fixed(2, 4);
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4:
      return fixed(4, 8);
    case CU_AD_FORMAT_UNORM_INT_101010_2:
      return fixed(4, 4);
    default:
      return 0;
  }
}

void destroy_context_arrays(Context& ctx) noexcept {
  backend::Images* im = Core::get().backend().images();
  std::lock_guard lock(registry_mutex());
  for (MipmappedArray* m : mipmapped_arrays().live()) {
    if (m->ctx != &ctx) continue;
    drop_levels(*m);
    mipmapped_arrays().erase(reinterpret_cast<std::uintptr_t>(m->handle));
    if (im) (void)im->destroy_array(m->impl);
    delete m;
  }
  for (Array* a : arrays().live()) {
    if (a->ctx != &ctx || a->parent) continue;
    arrays().erase(reinterpret_cast<std::uintptr_t>(a->handle));
    if (im) (void)im->destroy_array(a->impl);
    delete a;
  }
}

}  // namespace cudamux::core

namespace cudamux::impl {
using core::Array;
using core::Context;
using core::Core;
using core::MipmappedArray;
using core::reject;

namespace {

CUresult create_array(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR& d, const char* fn) {
  std::uint64_t impl = 0;
  Context* ctx = nullptr;
  if (CUresult r = core::create(d, 0, impl, ctx, fn)) return r;
  auto a = std::make_unique<Array>();
  a->ctx = ctx;
  a->impl = impl;
  a->desc = d;
  a->element_bytes = core::array_element_bytes(d.Format, d.NumChannels);
  std::lock_guard lock(core::registry_mutex());
  const std::uintptr_t h = core::arrays().insert(a.get());
  if (h == 0) {
    (void)Core::get().backend().images()->destroy_array(impl);
    return reject(CUDA_ERROR_OUT_OF_MEMORY, fn, "too many arrays");
  }
  a->handle = reinterpret_cast<CUarray>(h);
  *out = a.release()->handle;
  return CUDA_SUCCESS;
}

// Waits for work that may still use an array before its storage goes (cuArrayDestroy
// synchronises, as cuMemFree does).
void quiesce() { core::quiesce_all_contexts(); }

}  // namespace

CUresult cuArrayCreate_v2(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* pAllocateArray) {
  const char* fn = "cuArrayCreate";
  if (!pHandle || !pAllocateArray)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer or descriptor");
  CUDA_ARRAY3D_DESCRIPTOR d{};
  d.Width = pAllocateArray->Width;
  d.Height = pAllocateArray->Height;
  d.Format = pAllocateArray->Format;
  d.NumChannels = pAllocateArray->NumChannels;
  return create_array(pHandle, d, fn);
}

CUresult cuArray3DCreate_v2(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pAllocateArray) {
  const char* fn = "cuArray3DCreate";
  if (!pHandle || !pAllocateArray)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer or descriptor");
  return create_array(pHandle, *pAllocateArray, fn);
}

CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR* pArrayDescriptor, CUarray hArray) {
  const char* fn = "cuArrayGetDescriptor";
  if (!pArrayDescriptor) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  const Array* a = core::array_of(hArray);
  if (!a) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "not a live CUDA array");
  pArrayDescriptor->Width = a->desc.Width;
  pArrayDescriptor->Height = a->desc.Height;
  pArrayDescriptor->Format = a->desc.Format;
  pArrayDescriptor->NumChannels = a->desc.NumChannels;
  return CUDA_SUCCESS;
}

CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR* pArrayDescriptor, CUarray hArray) {
  const char* fn = "cuArray3DGetDescriptor";
  if (!pArrayDescriptor) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  const Array* a = core::array_of(hArray);
  if (!a) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "not a live CUDA array");
  *pArrayDescriptor = a->desc;
  return CUDA_SUCCESS;
}

CUresult cuArrayDestroy(CUarray hArray) {
  const char* fn = "cuArrayDestroy";
  if (CUresult r = core::unsafe_call(fn)) return r;  // issue 16: not while capturing
  Array* a = nullptr;
  {
    std::lock_guard lock(core::registry_mutex());
    a = core::array_of(hArray);
    if (!a) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "not a live CUDA array");
    if (a->parent)
      return reject(CUDA_ERROR_INVALID_VALUE, fn,
                    "a level of a mipmapped array (destroy the mipmapped array)");
    core::arrays().erase(reinterpret_cast<std::uintptr_t>(hArray));
  }
  quiesce();
  const CUresult r = Core::get().map(Core::get().backend().images()->destroy_array(a->impl), fn);
  delete a;
  return r;
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray* pHandle,
                                const CUDA_ARRAY3D_DESCRIPTOR* pMipmappedArrayDesc,
                                unsigned int numMipmapLevels) {
  const char* fn = "cuMipmappedArrayCreate";
  if (!pHandle || !pMipmappedArrayDesc)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer or descriptor");
  const CUDA_ARRAY3D_DESCRIPTOR& d = *pMipmappedArrayDesc;
  // CUDA clamps the level count to [1, 1 + floor(log2(largest size))].
  const unsigned levels = std::clamp(numMipmapLevels, 1u, d.Width ? core::max_levels(d) : 1u);
  std::uint64_t impl = 0;
  Context* ctx = nullptr;
  if (CUresult r = core::create(d, levels, impl, ctx, fn)) return r;
  auto m = std::make_unique<MipmappedArray>();
  m->ctx = ctx;
  m->impl = impl;
  m->desc = d;
  m->element_bytes = core::array_element_bytes(d.Format, d.NumChannels);
  m->levels = levels;
  m->level_arrays.assign(levels, nullptr);
  std::lock_guard lock(core::registry_mutex());
  const std::uintptr_t h = core::mipmapped_arrays().insert(m.get());
  if (h == 0) {
    (void)Core::get().backend().images()->destroy_array(impl);
    return reject(CUDA_ERROR_OUT_OF_MEMORY, fn, "too many mipmapped arrays");
  }
  m->handle = reinterpret_cast<CUmipmappedArray>(h);
  *pHandle = m.release()->handle;
  return CUDA_SUCCESS;
}

CUresult cuMipmappedArrayGetLevel(CUarray* pLevelArray, CUmipmappedArray hMipmappedArray,
                                  unsigned int level) {
  const char* fn = "cuMipmappedArrayGetLevel";
  if (!pLevelArray) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  std::lock_guard lock(core::registry_mutex());
  MipmappedArray* m = core::mipmapped_array_of(hMipmappedArray);
  if (!m) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "not a live mipmapped array");
  if (level >= m->levels)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "level beyond the array's levels");
  if (Array* a = m->level_arrays[level]) {  // one handle per level, as long as the array lives
    *pLevelArray = a->handle;
    return CUDA_SUCCESS;
  }
  std::uint64_t impl = 0;
  Core& core = Core::get();
  if (CUresult r = core.map(core.backend().images()->mip_level(m->impl, level, impl), fn)) return r;
  auto a = std::make_unique<Array>();
  a->ctx = m->ctx;
  a->impl = impl;
  a->desc = core::level_desc(m->desc, level);
  a->element_bytes = m->element_bytes;
  a->parent = m;
  a->level = level;
  const std::uintptr_t h = core::arrays().insert(a.get());
  if (h == 0) return reject(CUDA_ERROR_OUT_OF_MEMORY, fn, "too many arrays");
  a->handle = reinterpret_cast<CUarray>(h);
  m->level_arrays[level] = a.get();
  *pLevelArray = a.release()->handle;
  return CUDA_SUCCESS;
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  const char* fn = "cuMipmappedArrayDestroy";
  if (CUresult r = core::unsafe_call(fn)) return r;  // issue 16: not while capturing
  MipmappedArray* m = nullptr;
  {
    std::lock_guard lock(core::registry_mutex());
    m = core::mipmapped_array_of(hMipmappedArray);
    if (!m) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "not a live mipmapped array");
    core::drop_levels(*m);
    core::mipmapped_arrays().erase(reinterpret_cast<std::uintptr_t>(hMipmappedArray));
  }
  quiesce();
  const CUresult r = Core::get().map(Core::get().backend().images()->destroy_array(m->impl), fn);
  delete m;
  return r;
}

// cudamux makes neither deferred-mapping nor sparse arrays (cuArray3DCreate refuses the flags),
// so every array gets CUDA's answer for one made without them.
CUresult cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* memoryRequirements,
                                      CUarray array, CUdevice device) {
  const char* fn = "cuArrayGetMemoryRequirements";
  if (!memoryRequirements) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (!core::array_of(array)) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "not a live CUDA array");
  if (!Core::get().valid_device(device))
    return reject(CUDA_ERROR_INVALID_DEVICE, fn, "no such device");
  return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a CUDA_ARRAY3D_DEFERRED_MAPPING array");
}

CUresult cuMipmappedArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* memoryRequirements,
                                               CUmipmappedArray mipmap, CUdevice device) {
  const char* fn = "cuMipmappedArrayGetMemoryRequirements";
  if (!memoryRequirements) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (!core::mipmapped_array_of(mipmap))
    return reject(CUDA_ERROR_INVALID_HANDLE, fn, "not a live mipmapped array");
  if (!Core::get().valid_device(device))
    return reject(CUDA_ERROR_INVALID_DEVICE, fn, "no such device");
  return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a CUDA_ARRAY3D_DEFERRED_MAPPING array");
}

CUresult cuArrayGetSparseProperties(CUDA_ARRAY_SPARSE_PROPERTIES* sparseProperties, CUarray array) {
  const char* fn = "cuArrayGetSparseProperties";
  if (!sparseProperties) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (!core::array_of(array)) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "not a live CUDA array");
  return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a CUDA_ARRAY3D_SPARSE array");
}

CUresult cuMipmappedArrayGetSparseProperties(CUDA_ARRAY_SPARSE_PROPERTIES* sparseProperties,
                                             CUmipmappedArray mipmap) {
  const char* fn = "cuMipmappedArrayGetSparseProperties";
  if (!sparseProperties) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (!core::mipmapped_array_of(mipmap))
    return reject(CUDA_ERROR_INVALID_HANDLE, fn, "not a live mipmapped array");
  return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a CUDA_ARRAY3D_SPARSE array");
}

// Only multi-planar (YUV) formats have planes, and cudamux stores none of them.
CUresult cuArrayGetPlane(CUarray* pPlaneArray, CUarray hArray, unsigned int planeIdx) {
  const char* fn = "cuArrayGetPlane";
  (void)planeIdx;
  if (!pPlaneArray) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (!core::array_of(hArray))
    return reject(CUDA_ERROR_INVALID_HANDLE, fn, "not a live CUDA array");
  return reject(CUDA_ERROR_INVALID_VALUE, fn, "the array does not have a multi-planar format");
}

}  // namespace cudamux::impl
