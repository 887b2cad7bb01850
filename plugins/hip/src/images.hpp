// CUDA arrays, texture and surface objects of the hip backend (issue 17) over HIP 5.2's own:
// hipArray3DCreate / hipMipmappedArrayCreate, hipDrvMemcpy3DAsync with array ends,
// hipTexObjectCreate, hipCreateSurfaceObject. Every enum and flag goes through the mapping
// tables; what HIP 5.2 lacks is CUDA_ERROR_NOT_SUPPORTED with a log line
// (docs/backends/hip.md, "CUDA arrays, textures and surfaces"). An array handle is HIP's
// hipArray_t (hipMipmappedArray_t for a mipmapped array) as it is.
#pragma once

#include <spdlog/spdlog.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "cudamux/backend.hpp"
#include "hip_api.hpp"

namespace cudamux::hip {

class HipImages final : public backend::Images {
 public:
  HipImages(const HipApi& api, spdlog::logger& log) : api_(api), log_(log) {}
  ~HipImages() override;
  HipImages(const HipImages&) = delete;
  HipImages& operator=(const HipImages&) = delete;
  // Whether the runtime exports every function this needs.
  static bool available(const HipApi& api) noexcept { return api.images_missing.empty(); }

  backend::Status create_array(int ordinal, const CUDA_ARRAY3D_DESCRIPTOR& desc,
                               unsigned mip_levels, std::uint64_t& handle) override;
  backend::Status destroy_array(std::uint64_t handle) override;
  backend::Status mip_level(std::uint64_t mipmapped, unsigned level,
                            std::uint64_t& level_handle) override;
  backend::Status create_texture(const CUDA_RESOURCE_DESC& resource,
                                 const CUDA_TEXTURE_DESC& texture,
                                 const CUDA_RESOURCE_VIEW_DESC* view,
                                 std::uint64_t& object) override;
  backend::Status destroy_texture(std::uint64_t object) override;
  backend::Status create_surface(const CUDA_RESOURCE_DESC& resource,
                                 std::uint64_t& object) override;
  backend::Status destroy_surface(std::uint64_t object) override;

  // A copy with an array end (Queue::copy), as hipDrvMemcpy3DAsync on `stream`.
  backend::Status copy(const backend::CopyDesc& d, hipStream_t stream);

 private:
  struct ArrayRecord {
    int ordinal = 0;
    CUDA_ARRAY3D_DESCRIPTOR desc{};  // the CUDA descriptor (of the level, for a level)
    bool mipmapped = false;
    bool level = false;                 // a level of a mipmapped array: dies with it
    std::vector<std::uint64_t> levels;  // mipmapped: HIP's level arrays, 0 until asked
  };
  // The record of a live array or level; nullopt when the handle is none of ours.
  std::optional<ArrayRecord> find(std::uint64_t handle);

  const HipApi& api_;
  spdlog::logger& log_;
  std::mutex mu_;
  std::unordered_map<std::uint64_t, ArrayRecord> arrays_;  // arrays, mipmapped arrays, levels
};

}  // namespace cudamux::hip
