// Texture and surface objects of the cuda backend (issue 17): NVIDIA's own. A resource's
// CUarray / CUmipmappedArray is NVIDIA's handle already (images.hpp); objects over arrays are
// made in the array's device's primary context, objects over linear memory in the context
// current on the calling thread (the plugin keeps the context of the program's last call
// current), or the first device's primary context when none is. The object value NVIDIA
// returns is what kernels receive.
#include "images.hpp"
#include "nvidia_status.hpp"

namespace cudamux::cuda {
template <class F>
CUresult NvidiaImages::in_resource_context(const CUDA_RESOURCE_DESC& resource, F&& fn) {
  if (resource.resType == CU_RESOURCE_TYPE_ARRAY ||
      resource.resType == CU_RESOURCE_TYPE_MIPMAPPED_ARRAY) {
    const std::uint64_t handle =
        resource.resType == CU_RESOURCE_TYPE_ARRAY
            ? reinterpret_cast<std::uint64_t>(resource.res.array.hArray)
            : reinterpret_cast<std::uint64_t>(resource.res.mipmap.hMipmappedArray);
    CUdevice device = 0;
    {
      std::lock_guard lock(mu_);
      auto it = arrays_.find(handle);
      if (it == arrays_.end()) return CUDA_ERROR_INVALID_HANDLE;
      device = it->second.device;
    }
    const CUresult r = in_primary(device, fn);
    (void)api_.cuDevicePrimaryCtxRelease_v2(device);  // in_primary's retain
    return r;
  }
  CUcontext current = nullptr;
  if (api_.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != nullptr) return fn();
  if (devices_.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  const CUresult r = in_primary(devices_[0], fn);
  (void)api_.cuDevicePrimaryCtxRelease_v2(devices_[0]);
  return r;
}

backend::Status NvidiaImages::create_texture(const CUDA_RESOURCE_DESC& resource,
                                             const CUDA_TEXTURE_DESC& texture,
                                             const CUDA_RESOURCE_VIEW_DESC* view,
                                             std::uint64_t& object) {
  CUtexObject o = 0;
  const CUresult r = in_resource_context(
      resource, [&] { return api_.cuTexObjectCreate(&o, &resource, &texture, view); });
  if (r == CUDA_SUCCESS) object = o;
  return status(r);
}
backend::Status NvidiaImages::destroy_texture(std::uint64_t object) {
  return status(api_.cuTexObjectDestroy(object));
}
backend::Status NvidiaImages::create_surface(const CUDA_RESOURCE_DESC& resource,
                                             std::uint64_t& object) {
  CUsurfObject o = 0;
  const CUresult r =
      in_resource_context(resource, [&] { return api_.cuSurfObjectCreate(&o, &resource); });
  if (r == CUDA_SUCCESS) object = o;
  return status(r);
}
backend::Status NvidiaImages::destroy_surface(std::uint64_t object) {
  return status(api_.cuSurfObjectDestroy(object));
}

}  // namespace cudamux::cuda
