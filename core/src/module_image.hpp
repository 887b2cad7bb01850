// Module images as programs hand them over (cuModuleLoadData, cuLibraryLoadData,
// cuModuleLoadFatBinary, the runtime's registered fat binaries) turned into what a backend
// runs (issue 14): NVIDIA's formats are told apart here, once, and a fat binary is either
// passed whole (a backend that takes them, e.g. NVIDIA's driver) or opened and the entry for
// the device picked and decompressed.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "cudamux/backend.hpp"

namespace cudamux::core {

struct ResolvedImage {
  backend::ModuleImage image;      // what the backend gets
  std::vector<std::byte> storage;  // a decompressed fat binary entry, when one was picked
  std::string holds;               // what a fat binary holds ("sm_75 ELF, compute_75 PTX"), or ""
};

// What `image` is: kind, arch and size (a fat binary wrapper is unwrapped to its container).
// CUDA_ERROR_INVALID_IMAGE with `why` for a malformed NVIDIA image.
CUresult classify_image(const void* image, backend::ModuleImage& out, std::string& why) noexcept;

// Classifies `image` and makes it loadable by `backend` on its device `device` (the compute
// capability is read only when an entry must be picked: module loads are on the first-launch
// path, issue 14). Errors, each logged with `fn`: CUDA_ERROR_INVALID_VALUE (null),
// CUDA_ERROR_INVALID_IMAGE (malformed), CUDA_ERROR_NO_BINARY_FOR_GPU (a fat binary with no
// entry this backend runs for this device; the log line says what it holds and what the
// backend needs).
CUresult resolve_image(const void* image, backend::Backend& backend, int device, ResolvedImage& out,
                       const char* fn) noexcept;

}  // namespace cudamux::core
