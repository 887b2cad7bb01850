// Maps the machine code of cudamux's own libraries into the process's page tables at
// initialisation (issue 14, first-launch time). A program's first kernel load runs code of the
// core, the API libraries and the backend plugin that nothing has run before: on the GPU
// machine each first touch of a code page was a page fault, about 75 us of a ~300 us first
// launch in all (docs/performance.md). cuInit already costs ~100 ms; populating ~3 MiB of code
// there costs ~0.2 ms.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>

namespace cudamux::core {

struct PrefaultResult {
  std::size_t objects = 0;  // loaded objects found in the folders
  std::size_t bytes = 0;    // bytes of executable segments populated
  bool supported = true;    // false: MADV_POPULATE_READ refused (EINVAL: Linux < 5.14)
};

// Populates (MADV_POPULATE_READ) the executable segments of every loaded object whose file lies
// in one of `folders` (compared with symlinks resolved). Never fails: what cannot be populated
// stays as it was, to be faulted in on first use as without this.
PrefaultResult prefault_code(std::span<const std::filesystem::path> folders) noexcept;

}  // namespace cudamux::core
