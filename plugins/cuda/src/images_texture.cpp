// Texture and surface objects of the cuda backend (issue 17): not passed through yet.
#include "images.hpp"

namespace cudamux::cuda {
namespace {
constexpr backend::Status status(CUresult r) {
  return backend::Status{static_cast<std::int32_t>(r)};
}
}  // namespace

backend::Status NvidiaImages::create_texture(const CUDA_RESOURCE_DESC&, const CUDA_TEXTURE_DESC&,
                                             const CUDA_RESOURCE_VIEW_DESC*, std::uint64_t&) {
  return status(CUDA_ERROR_NOT_SUPPORTED);
}
backend::Status NvidiaImages::destroy_texture(std::uint64_t) {
  return status(CUDA_ERROR_INVALID_VALUE);
}
backend::Status NvidiaImages::create_surface(const CUDA_RESOURCE_DESC&, std::uint64_t&) {
  return status(CUDA_ERROR_NOT_SUPPORTED);
}
backend::Status NvidiaImages::destroy_surface(std::uint64_t) {
  return status(CUDA_ERROR_INVALID_VALUE);
}

}  // namespace cudamux::cuda
