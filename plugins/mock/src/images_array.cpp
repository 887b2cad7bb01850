// CUDA arrays of the mock (issue 17): device memory of the ordinal's arena, laid out as
// cudamux_image says (levels one after another, each row-major with packed rows and slices),
// so copies, memcheck and kernels treat it as device memory.
#include <algorithm>

#include "images.hpp"

namespace cudamux::mock {
namespace {
backend::Status st(CUresult r) noexcept { return {static_cast<std::int32_t>(r)}; }

// Bytes of one element; 0 for formats the core does not pass (it validated the descriptor).
unsigned element_bytes(CUarray_format f, unsigned channels) noexcept {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return channels;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2 * channels;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return 4 * channels;
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1:
      return 1;
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1:
      return 2;
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
    case CU_AD_FORMAT_UNORM_INT_101010_2:
      return 4;
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4:
      return 8;
    default:
      return 0;
  }
}

constexpr std::size_t kLevelAlignment = 256;  // each level starts as cuMemAlloc memory does
}  // namespace

MockImages::~MockImages() {
  // Arrays the core did not destroy (it destroys them with their context): hand back storage.
  for (auto& [handle, a] : arrays_) {
    if (a->storage)
      if (DeviceArena* arena = arena_of_(a->ordinal))
        (void)arena->free(a->storage, DeviceArena::Kind::device);
  }
}

backend::Status MockImages::create_array(int ordinal, const CUDA_ARRAY3D_DESCRIPTOR& desc,
                                         unsigned mip_levels, std::uint64_t& handle) {
  DeviceArena* arena = arena_of_(ordinal);
  if (!arena) return st(CUDA_ERROR_INVALID_DEVICE);
  const unsigned elem = element_bytes(desc.Format, desc.NumChannels);
  if (elem == 0 || desc.Width == 0) return st(CUDA_ERROR_INVALID_VALUE);
  const unsigned levels = std::max(1u, mip_levels);
  if (levels > CUDAMUX_MAX_MIP_LEVELS) return st(CUDA_ERROR_INVALID_VALUE);
  const bool layers = desc.Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);

  auto a = std::make_unique<ArrayState>();
  a->ordinal = ordinal;
  cudamux_image& im = a->image;
  im.format = static_cast<unsigned>(desc.Format);
  im.channels = desc.NumChannels;
  im.element_bytes = elem;
  // Of one layer: a cubemap face is 2D, a layered 1D array's layers are 1D.
  im.dims = desc.Height == 0 ? 1 : (desc.Depth == 0 || layers ? 2 : 3);
  im.flags = desc.Flags;
  im.num_levels = levels;
  std::size_t offsets[CUDAMUX_MAX_MIP_LEVELS] = {};
  std::size_t total = 0;
  for (unsigned l = 0; l < levels; ++l) {
    auto half = [l](std::size_t v) { return std::max<std::size_t>(1, v >> l); };
    cudamux_image_level& lv = im.levels[l];
    lv.width = half(desc.Width);
    lv.height = desc.Height ? half(desc.Height) : 1;
    lv.depth = desc.Depth == 0 ? 1 : (layers ? desc.Depth : half(desc.Depth));
    lv.row_pitch = lv.width * elem;
    lv.slice_pitch = lv.row_pitch * lv.height;
    std::size_t bytes = 0;
    offsets[l] = total;
    if (__builtin_mul_overflow(lv.slice_pitch, lv.depth, &bytes) ||
        __builtin_add_overflow(total, bytes, &total) ||
        __builtin_add_overflow(total, kLevelAlignment - 1, &total))
      return st(CUDA_ERROR_OUT_OF_MEMORY);
    total &= ~(kLevelAlignment - 1);  // the next level starts aligned
  }
  void* storage = nullptr;
  if (CUresult r = arena->allocate(total, DeviceArena::Kind::device, &storage)) return st(r);
  for (unsigned l = 0; l < levels; ++l)
    im.levels[l].data = static_cast<std::byte*>(storage) + offsets[l];
  a->storage = storage;
  a->level_handles.assign(mip_levels ? levels : 0, 0);
  handle = reinterpret_cast<std::uint64_t>(a.get());
  std::lock_guard lock(arrays_mu_);
  arrays_.emplace(handle, std::move(a));
  return backend::kOk;
}

backend::Status MockImages::destroy_array(std::uint64_t handle) {
  std::unique_ptr<ArrayState> a;
  {
    std::lock_guard lock(arrays_mu_);
    auto it = arrays_.find(handle);
    if (it == arrays_.end() || it->second->parent != 0) return st(CUDA_ERROR_INVALID_VALUE);
    a = std::move(it->second);
    arrays_.erase(it);
    for (std::uint64_t level : a->level_handles)
      if (level) arrays_.erase(level);
  }
  DeviceArena* arena = arena_of_(a->ordinal);
  if (!arena) return st(CUDA_ERROR_INVALID_VALUE);
  return st(arena->free(a->storage, DeviceArena::Kind::device));
}

backend::Status MockImages::mip_level(std::uint64_t mipmapped, unsigned level,
                                      std::uint64_t& level_handle) {
  std::lock_guard lock(arrays_mu_);
  auto it = arrays_.find(mipmapped);
  if (it == arrays_.end() || it->second->parent != 0) return st(CUDA_ERROR_INVALID_HANDLE);
  ArrayState& m = *it->second;
  if (level >= m.level_handles.size()) return st(CUDA_ERROR_INVALID_VALUE);
  if (m.level_handles[level] != 0) {
    level_handle = m.level_handles[level];
    return backend::kOk;
  }
  // A level is an array of its own to copies, textures and surfaces: one level, the parent's.
  auto a = std::make_unique<ArrayState>();
  a->ordinal = m.ordinal;
  a->parent = mipmapped;
  a->image = m.image;
  a->image.num_levels = 1;
  a->image.levels[0] = m.image.levels[level];
  for (unsigned l = 1; l < CUDAMUX_MAX_MIP_LEVELS; ++l) a->image.levels[l] = cudamux_image_level{};
  level_handle = reinterpret_cast<std::uint64_t>(a.get());
  m.level_handles[level] = level_handle;
  arrays_.emplace(level_handle, std::move(a));
  return backend::kOk;
}

const cudamux_image* MockImages::find_array(std::uint64_t handle) const {
  std::lock_guard lock(arrays_mu_);
  auto it = arrays_.find(handle);
  return it == arrays_.end() ? nullptr : &it->second->image;
}

}  // namespace cudamux::mock
