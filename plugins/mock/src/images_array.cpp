#include "images.hpp"

namespace cudamux::mock {
namespace {
backend::Status st(CUresult r) noexcept { return {static_cast<std::int32_t>(r)}; }
}  // namespace

MockImages::~MockImages() = default;

backend::Status MockImages::create_array(int, const CUDA_ARRAY3D_DESCRIPTOR&, unsigned,
                                         std::uint64_t&) {
  return st(CUDA_ERROR_NOT_SUPPORTED);  // issue 17: arrays land here
}
backend::Status MockImages::destroy_array(std::uint64_t) { return st(CUDA_ERROR_INVALID_VALUE); }
backend::Status MockImages::mip_level(std::uint64_t, unsigned, std::uint64_t&) {
  return st(CUDA_ERROR_NOT_SUPPORTED);
}
const cudamux_image* MockImages::find_array(std::uint64_t) const { return nullptr; }

}  // namespace cudamux::mock
