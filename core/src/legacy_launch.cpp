// The legacy launch API (deprecated, still exported by NVIDIA's driver; issue 17):
// cuFuncSetBlockShape, cuFuncSetSharedSize, cuParamSetSize, cuParamSeti, cuParamSetf,
// cuParamSetv, cuLaunch, cuLaunchGrid, cuLaunchGridAsync. The block shape, dynamic shared
// memory and argument buffer are state of the CUfunction (Function::legacy_*); a launch passes
// them to cuLaunchKernel as an `extra` argument buffer.
#include <spdlog/spdlog.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "core.hpp"
#include "cudamux/driver_impl.hpp"

namespace cudamux::impl {
using core::Function;
using core::reject;

namespace {

// NVIDIA's limit on a kernel's parameters (CUDA 12.1+: 32764 bytes).
constexpr std::size_t kMaxParamBytes = 32764;

CUresult function(CUfunction h, Function*& out, const char* fn) {
  out = core::Core::get().functions.find(reinterpret_cast<std::uintptr_t>(h));
  if (!out) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "invalid function");
  return core::sticky_error(*out->module->ctx);
}

CUresult set_param(CUfunction h, int offset, const void* bytes, std::size_t n, const char* fn) {
  Function* f = nullptr;
  if (CUresult r = function(h, f, fn)) return r;
  if (offset < 0 || static_cast<std::size_t>(offset) + n > kMaxParamBytes)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "outside the parameter buffer");
  if (n > 0 && !bytes) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null value");
  std::lock_guard lock(f->legacy_mutex);
  const std::size_t end = static_cast<std::size_t>(offset) + n;
  if (f->legacy_params.size() < end) f->legacy_params.resize(end);
  if (n > 0) std::memcpy(f->legacy_params.data() + offset, bytes, n);
  return CUDA_SUCCESS;
}

CUresult launch_grid(CUfunction h, int width, int height, CUstream stream, const char* fn) {
  Function* f = nullptr;
  if (CUresult r = function(h, f, fn)) return r;
  if (width <= 0 || height <= 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "empty grid");
  int block[3];
  unsigned shared = 0;
  std::vector<std::byte> params;
  {
    std::lock_guard lock(f->legacy_mutex);
    std::copy(std::begin(f->legacy_block), std::end(f->legacy_block), block);
    shared = f->legacy_shared;
    params.assign(f->legacy_param_size, std::byte{0});
    std::memcpy(params.data(), f->legacy_params.data(),
                std::min(f->legacy_params.size(), params.size()));
  }
  if (block[0] <= 0)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "no block shape (cuFuncSetBlockShape)");
  std::size_t size = params.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, params.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &size, CU_LAUNCH_PARAM_END};
  return impl::cuLaunchKernel(h, static_cast<unsigned>(width), static_cast<unsigned>(height), 1,
                              static_cast<unsigned>(block[0]), static_cast<unsigned>(block[1]),
                              static_cast<unsigned>(block[2]), shared, stream, nullptr,
                              size > 0 ? extra : nullptr);
}

}  // namespace

CUresult cuFuncSetBlockShape(CUfunction hfunc, int x, int y, int z) {
  const char* fn = "cuFuncSetBlockShape";
  Function* f = nullptr;
  if (CUresult r = function(hfunc, f, fn)) return r;
  if (x <= 0 || y <= 0 || z <= 0)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "block dimensions must be positive");
  std::lock_guard lock(f->legacy_mutex);
  f->legacy_block[0] = x;
  f->legacy_block[1] = y;
  f->legacy_block[2] = z;
  return CUDA_SUCCESS;
}

CUresult cuFuncSetSharedSize(CUfunction hfunc, unsigned int bytes) {
  Function* f = nullptr;
  if (CUresult r = function(hfunc, f, "cuFuncSetSharedSize")) return r;
  std::lock_guard lock(f->legacy_mutex);
  f->legacy_shared = bytes;  // checked against the device's limit at launch, as in CUDA
  return CUDA_SUCCESS;
}

CUresult cuParamSetSize(CUfunction hfunc, unsigned int numbytes) {
  const char* fn = "cuParamSetSize";
  Function* f = nullptr;
  if (CUresult r = function(hfunc, f, fn)) return r;
  if (numbytes > kMaxParamBytes)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "larger than a kernel's parameters may be");
  std::lock_guard lock(f->legacy_mutex);
  f->legacy_param_size = numbytes;
  return CUDA_SUCCESS;
}

CUresult cuParamSeti(CUfunction hfunc, int offset, unsigned int value) {
  return set_param(hfunc, offset, &value, sizeof value, "cuParamSeti");
}
CUresult cuParamSetf(CUfunction hfunc, int offset, float value) {
  return set_param(hfunc, offset, &value, sizeof value, "cuParamSetf");
}
CUresult cuParamSetv(CUfunction hfunc, int offset, void* ptr, unsigned int numbytes) {
  return set_param(hfunc, offset, ptr, numbytes, "cuParamSetv");
}

CUresult cuLaunch(CUfunction f) { return launch_grid(f, 1, 1, nullptr, "cuLaunch"); }
CUresult cuLaunchGrid(CUfunction f, int grid_width, int grid_height) {
  return launch_grid(f, grid_width, grid_height, nullptr, "cuLaunchGrid");
}
CUresult cuLaunchGridAsync(CUfunction f, int grid_width, int grid_height, CUstream hStream) {
  return launch_grid(f, grid_width, grid_height, hStream, "cuLaunchGridAsync");
}

}  // namespace cudamux::impl
