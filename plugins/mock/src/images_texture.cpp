#include "images.hpp"

namespace cudamux::mock {
namespace {
backend::Status st(CUresult r) noexcept { return {static_cast<std::int32_t>(r)}; }
}  // namespace

backend::Status MockImages::create_texture(const CUDA_RESOURCE_DESC&, const CUDA_TEXTURE_DESC&,
                                           const CUDA_RESOURCE_VIEW_DESC*, std::uint64_t&) {
  return st(CUDA_ERROR_NOT_SUPPORTED);  // issue 17: texture objects land here
}
backend::Status MockImages::destroy_texture(std::uint64_t) { return st(CUDA_ERROR_INVALID_VALUE); }
backend::Status MockImages::create_surface(const CUDA_RESOURCE_DESC&, std::uint64_t&) {
  return st(CUDA_ERROR_NOT_SUPPORTED);
}
backend::Status MockImages::destroy_surface(std::uint64_t) { return st(CUDA_ERROR_INVALID_VALUE); }

}  // namespace cudamux::mock
