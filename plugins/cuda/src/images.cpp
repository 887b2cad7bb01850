// CUDA arrays of the cuda backend (issue 17): NVIDIA's cuArray3DCreate / cuMipmappedArrayCreate.
#include "images.hpp"

#include "nvidia_status.hpp"

namespace cudamux::cuda {
bool NvidiaImages::available(const NvidiaApi& api) noexcept {
  bool complete = true;
#define CUDAMUX_NVIDIA_HAS(name) complete = complete && api.name != nullptr;
  CUDAMUX_NVIDIA_IMAGE_FUNCTIONS(CUDAMUX_NVIDIA_HAS)
#undef CUDAMUX_NVIDIA_HAS
  return complete;
}

NvidiaImages::~NvidiaImages() {
  // Arrays the core did not destroy: only their retains of primary contexts are ours to drop
  // (NVIDIA frees the arrays with the contexts).
  for (const auto& [handle, rec] : arrays_) (void)api_.cuDevicePrimaryCtxRelease_v2(rec.device);
}

backend::Status NvidiaImages::create_array(int ordinal, const CUDA_ARRAY3D_DESCRIPTOR& desc,
                                           unsigned mip_levels, std::uint64_t& handle) {
  if (ordinal < 0 || static_cast<std::size_t>(ordinal) >= devices_.size())
    return status(CUDA_ERROR_INVALID_DEVICE);
  const CUdevice device = devices_[static_cast<std::size_t>(ordinal)];
  const CUresult r = in_primary(device, [&] {
    if (mip_levels == 0) {
      CUarray a = nullptr;
      const CUresult c = api_.cuArray3DCreate_v2(&a, &desc);
      handle = reinterpret_cast<std::uint64_t>(a);
      return c;
    }
    CUmipmappedArray m = nullptr;
    const CUresult c = api_.cuMipmappedArrayCreate(&m, &desc, mip_levels);
    handle = reinterpret_cast<std::uint64_t>(m);
    return c;
  });
  if (r != CUDA_SUCCESS) {
    (void)api_.cuDevicePrimaryCtxRelease_v2(device);
    return status(r);
  }
  std::lock_guard lock(mu_);
  arrays_[handle] = {device, mip_levels != 0};
  return backend::kOk;
}

backend::Status NvidiaImages::destroy_array(std::uint64_t handle) {
  ArrayRecord rec;
  {
    std::lock_guard lock(mu_);
    auto it = arrays_.find(handle);
    if (it == arrays_.end()) return status(CUDA_ERROR_INVALID_VALUE);
    rec = it->second;
    arrays_.erase(it);
  }
  const CUresult r = in_primary(rec.device, [&] {
    return rec.mipmapped ? api_.cuMipmappedArrayDestroy(reinterpret_cast<CUmipmappedArray>(handle))
                         : api_.cuArrayDestroy(reinterpret_cast<CUarray>(handle));
  });
  (void)api_.cuDevicePrimaryCtxRelease_v2(rec.device);  // in_primary's retain
  (void)api_.cuDevicePrimaryCtxRelease_v2(rec.device);  // create_array's retain
  return status(r);
}

backend::Status NvidiaImages::mip_level(std::uint64_t mipmapped, unsigned level,
                                        std::uint64_t& level_handle) {
  ArrayRecord rec;
  {
    std::lock_guard lock(mu_);
    auto it = arrays_.find(mipmapped);
    if (it == arrays_.end() || !it->second.mipmapped) return status(CUDA_ERROR_INVALID_HANDLE);
    rec = it->second;
  }
  const CUresult r = in_primary(rec.device, [&] {
    CUarray a = nullptr;
    const CUresult c =
        api_.cuMipmappedArrayGetLevel(&a, reinterpret_cast<CUmipmappedArray>(mipmapped), level);
    level_handle = reinterpret_cast<std::uint64_t>(a);
    return c;
  });
  (void)api_.cuDevicePrimaryCtxRelease_v2(rec.device);
  return status(r);
}

}  // namespace cudamux::cuda
