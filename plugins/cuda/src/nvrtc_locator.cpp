#include "nvrtc_locator.hpp"

#include <dlfcn.h>
#include <glob.h>

#include <algorithm>
#include <cstdlib>

#include "driver_locator.hpp"

namespace cudamux::cuda {

std::vector<std::string> default_nvrtc_search_dirs() {
  std::vector<std::string> out = ld_library_path_dirs();
  out.emplace_back("/usr/local/cuda/lib64");
  glob_t g{};
  if (::glob("/usr/local/cuda-13*/lib64", 0, nullptr, &g) == 0) {
    std::vector<std::string> versions(g.gl_pathv, g.gl_pathv + g.gl_pathc);
    std::sort(versions.rbegin(), versions.rend());  // newest first (13.2 before 13.0)
    out.insert(out.end(), versions.begin(), versions.end());
  }
  ::globfree(&g);
  for (const char* d : {"/usr/lib/x86_64-linux-gnu", "/usr/lib64"}) out.emplace_back(d);
  return out;
}

std::optional<OpenedNvrtc> open_nvrtc(const std::string& path, std::string& why) {
  OpenedNvrtc n;
  n.path = path;
  n.handle =
      open_foreign_library(path, kNvrtcIdentitySection, "nvrtcCompileProgram", kNvrtcFileName, why);
  if (n.handle == nullptr) return std::nullopt;
  const char* missing = nullptr;
#define CUDAMUX_NVRTC_RESOLVE(name)                                                \
  if (missing == nullptr) {                                                        \
    n.api.name = reinterpret_cast<decltype(n.api.name)>(::dlsym(n.handle, #name)); \
    if (n.api.name == nullptr) missing = #name;                                    \
  }
  CUDAMUX_NVRTC_FUNCTIONS(CUDAMUX_NVRTC_RESOLVE)
#undef CUDAMUX_NVRTC_RESOLVE
  if (missing != nullptr) {
    ::dlclose(n.handle);
    why = std::string("is not NVIDIA's NVRTC: it does not export ") + missing;
    return std::nullopt;
  }
  return n;
}

NvrtcSearchResult search_nvrtc(const std::vector<std::string>& dirs) {
  NvrtcSearchResult result;
  for (const std::string& candidate : candidate_paths(dirs, kNvrtcFileName)) {
    std::string why;
    if (auto n = open_nvrtc(candidate, why)) {
      result.nvrtc = std::move(n);
      return result;
    }
    result.tried.push_back(candidate + ": " + why);
  }
  return result;
}

}  // namespace cudamux::cuda
