// NVIDIA's CUresult as the backend interface's status: the cuda backend's native codes are
// CUresult values, which the core maps with the identity (docs/backends/cuda.md).
#pragma once

#include <cuda.h>

#include <cstdint>

#include "cudamux/backend.hpp"

namespace cudamux::cuda {

constexpr backend::Status status(CUresult r) {
  return backend::Status{static_cast<std::int32_t>(r)};
}

}  // namespace cudamux::cuda
