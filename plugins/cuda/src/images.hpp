// CUDA arrays, texture and surface objects of the cuda backend (issue 17): NVIDIA's own. An
// array handle is NVIDIA's CUarray (CUmipmappedArray for a mipmapped array) as it is, so the
// array ends of copies and texture resources pass through unchanged. Arrays live in NVIDIA's
// primary context of their device, retained while they exist; NVIDIA's arrays are usable
// from every context of the device.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cudamux/backend.hpp"
#include "nvidia_api.hpp"

namespace cudamux::cuda {

class NvidiaImages final : public backend::Images {
 public:
  // `devices`: NVIDIA's CUdevice per backend ordinal.
  NvidiaImages(const NvidiaApi& api, std::vector<CUdevice> devices)
      : api_(api), devices_(std::move(devices)) {}
  ~NvidiaImages() override;
  // Whether the driver has every function this needs (else the backend offers no images).
  static bool available(const NvidiaApi& api) noexcept;

  backend::Status create_array(int ordinal, const CUDA_ARRAY3D_DESCRIPTOR& desc,
                               unsigned mip_levels, std::uint64_t& handle) override;
  backend::Status destroy_array(std::uint64_t handle) override;
  backend::Status mip_level(std::uint64_t mipmapped, unsigned level,
                            std::uint64_t& level_handle) override;
  // Texture and surface objects: images_texture.cpp.
  backend::Status create_texture(const CUDA_RESOURCE_DESC& resource,
                                 const CUDA_TEXTURE_DESC& texture,
                                 const CUDA_RESOURCE_VIEW_DESC* view,
                                 std::uint64_t& object) override;
  backend::Status destroy_texture(std::uint64_t object) override;
  backend::Status create_surface(const CUDA_RESOURCE_DESC& resource,
                                 std::uint64_t& object) override;
  backend::Status destroy_surface(std::uint64_t object) override;

 private:
  struct ArrayRecord {
    CUdevice device = 0;
    bool mipmapped = false;
  };
  // Runs `fn` with the device's primary context current (pushed, then popped: what the thread
  // had current stays so).
  template <class F>
  CUresult in_primary(CUdevice device, F&& fn);
  // Runs `fn` in the context a texture or surface object over `resource` belongs in.
  template <class F>
  CUresult in_resource_context(const CUDA_RESOURCE_DESC& resource, F&& fn);

  const NvidiaApi& api_;
  const std::vector<CUdevice> devices_;
  std::mutex mu_;
  std::unordered_map<std::uint64_t, ArrayRecord> arrays_;  // plain and mipmapped arrays
};

template <class F>
CUresult NvidiaImages::in_primary(CUdevice device, F&& fn) {
  CUcontext primary = nullptr;
  if (CUresult r = api_.cuDevicePrimaryCtxRetain(&primary, device)) return r;
  CUresult r = api_.cuCtxPushCurrent_v2(primary);
  if (r == CUDA_SUCCESS) {
    r = fn();
    CUcontext popped = nullptr;
    (void)api_.cuCtxPopCurrent_v2(&popped);
  }
  // The retain stays with a created array (released by destroy_array), else goes now.
  return r;
}

}  // namespace cudamux::cuda
