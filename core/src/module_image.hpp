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
#include "cudamux/fatbin.hpp"

namespace cudamux::core {

struct ResolvedImage {
  backend::ModuleImage image;      // what the backend gets
  std::vector<std::byte> storage;  // a decompressed fat binary entry, when one was picked
  std::string holds;               // what a fat binary holds ("sm_75 ELF, compute_75 PTX"), or ""
  // A program linked from relocatable device code (nvcc -rdc): its fat binary holds only the
  // linked SASS, and the fat binary of each object it was linked from sits in the same ELF
  // file's __nv_relfatbin section. For a backend that runs PTX, the objects' PTX (one per
  // object, decompressed) is what to link and load instead of `image`; `link_error` is the
  // line to log when the backend cannot link them.
  std::vector<std::vector<std::byte>> relocatable;
  std::vector<backend::ModuleImage> link_inputs;
  std::string link_error;
};

// The relocatable objects' fat binaries of the loaded ELF file holding `image` (its
// __nv_relfatbin section, read from the file into `section`; `entries` point into it). False
// when `image` is in no loaded object or the file has no such section, or with `why` when the
// section is damaged.
bool relocatable_fat_binaries(const void* image, std::vector<std::byte>& section,
                              std::vector<fatbin::Entry>& entries, std::string& why);

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
