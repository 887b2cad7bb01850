// CUDA arrays, texture and surface objects on the CPU (issue 17). An array is device memory of
// the mock laid out as cudamux_image describes (plugins/mock/device/abi/cudamux/image_abi.h);
// a texture or surface object is the address of a cudamux_texture / cudamux_surface that
// kernels read directly. Arrays are in images_array.cpp, textures and surfaces in
// images_texture.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cudamux/backend.hpp"
#include "cudamux/image_abi.h"
#include "memory.hpp"

namespace cudamux::mock {

class MockImages final : public backend::Images {
 public:
  // The device memory of each ordinal (nullptr for an invalid one).
  explicit MockImages(std::function<DeviceArena*(int)> arena_of) : arena_of_(std::move(arena_of)) {}
  ~MockImages() override;

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

  // The storage of a live array handle (plain, mipmapped or a level of one), else nullptr:
  // for array ends of copies and for texture and surface objects.
  [[nodiscard]] const cudamux_image* find_array(std::uint64_t handle) const;

 private:
  std::function<DeviceArena*(int)> arena_of_;
  mutable std::mutex mu_;
  // Owned by the array side (images_array.cpp) and the texture side (images_texture.cpp).
  struct ArrayState {
    int ordinal = 0;
    cudamux_image image{};
    void* storage = nullptr;   // the arena allocation (null for a level: its parent's)
    std::uint64_t parent = 0;  // a level of a mipmapped array: that array's handle
    std::vector<std::uint64_t> level_handles;  // mip_level's handles, per level (0: none yet)
  };
  // Arrays have a lock of their own, so that the texture side may call find_array while it
  // holds mu_.
  mutable std::mutex arrays_mu_;
  std::unordered_map<std::uint64_t, std::unique_ptr<ArrayState>> arrays_;
  std::unordered_map<std::uint64_t, std::unique_ptr<cudamux_texture>> textures_;
  std::unordered_map<std::uint64_t, std::unique_ptr<cudamux_surface>> surfaces_;
};

}  // namespace cudamux::mock
