#include "nvrtc_locator.hpp"

#include <dlfcn.h>
#include <glob.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "driver_locator.hpp"

namespace cudamux::cuda {
namespace {

namespace fs = std::filesystem;

int open_flags() {
  // As for the driver (driver_locator.cpp): NVIDIA's NVRTC binds to itself, not to ours.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return RTLD_NOW | RTLD_LOCAL;
#else
  return RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
#endif
}

}  // namespace

std::vector<std::string> default_nvrtc_search_dirs() {
  std::vector<std::string> out;
  if (const char* ld = std::getenv("LD_LIBRARY_PATH")) {
    std::string_view rest = ld;
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      const std::string_view entry = rest.substr(0, colon);
      if (!entry.empty()) out.emplace_back(entry);
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
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
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    why = "does not exist";
    return std::nullopt;
  }
  std::string elf_error;
  const auto marked = elf_has_section(path, kNvrtcIdentitySection, elf_error);
  if (!marked) {
    why = elf_error;
    return std::nullopt;
  }
  if (*marked) {
    why = std::string("is cudamux's own libnvrtc.so.13 (it has the ") + kNvrtcIdentitySection +
          " section), not NVIDIA's";
    return std::nullopt;
  }
  if (is_loaded_library(path, "nvrtcCompileProgram")) {
    why = "is the libnvrtc.so.13 this process already runs on (cudamux's own), not NVIDIA's";
    return std::nullopt;
  }
  OpenedNvrtc n;
  n.path = path;
  n.handle = ::dlopen(path.c_str(), open_flags());
  if (n.handle == nullptr) {
    const char* e = ::dlerror();
    why = std::string("cannot be loaded: ") + (e != nullptr ? e : "unknown dlopen error");
    return std::nullopt;
  }
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
  std::set<std::string> seen;
  for (const std::string& dir : dirs) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(dir, ec);
    if (!seen.insert(ec ? dir : canonical.string()).second) continue;
    const std::string candidate = (fs::path(dir) / kNvrtcFileName).string();
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
