// CUDA arrays and mipmapped arrays (issue 17, array.cpp): core objects that own the backend's
// handle (Images::create_array) and the descriptor the program gave, so that the Get* calls,
// copies with array ends and texture / surface objects find both.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace cudamux::core {

struct Context;
struct MipmappedArray;

struct Array {
  Context* ctx = nullptr;
  CUarray handle = nullptr;
  std::uint64_t impl = 0;  // the backend's handle
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  unsigned element_bytes = 0;  // one element (all its channels)
  // A level of a mipmapped array (cuMipmappedArrayGetLevel): owned by it, not destroyable.
  MipmappedArray* parent = nullptr;
  unsigned level = 0;
};

struct MipmappedArray {
  Context* ctx = nullptr;
  CUmipmappedArray handle = nullptr;
  std::uint64_t impl = 0;
  CUDA_ARRAY3D_DESCRIPTOR desc{};  // of level 0
  unsigned element_bytes = 0;
  unsigned levels = 0;
  std::vector<Array*> level_arrays;  // made on first request, one per level (null until then)
};

// The live array / mipmapped array of a handle, else nullptr. Valid while the caller keeps
// the object alive (the program must not destroy it concurrently, as with CUDA).
Array* array_of(CUarray h) noexcept;
MipmappedArray* mipmapped_array_of(CUmipmappedArray h) noexcept;

// The CUarray whose backend handle is `impl` (for copies recorded from a CopyDesc), or null.
CUarray array_for_backend(std::uint64_t impl) noexcept;

// The size of one element of `format` with `channels` channels; 0 when cudamux does not
// store that format (block-compressed and YUV formats) or the channel count does not fit it.
unsigned array_element_bytes(CUarray_format format, unsigned channels) noexcept;

// Rows of one slice and slices (layers, cube faces) of an array: 1 when Height / Depth is 0.
inline std::size_t array_rows(const CUDA_ARRAY3D_DESCRIPTOR& d) noexcept {
  return d.Height ? d.Height : 1;
}
inline std::size_t array_slices(const CUDA_ARRAY3D_DESCRIPTOR& d) noexcept {
  return d.Depth ? d.Depth : 1;
}

// Destroys every array and mipmapped array of `ctx` (its context is being destroyed; its
// queues are idle).
void destroy_context_arrays(Context& ctx) noexcept;

}  // namespace cudamux::core
