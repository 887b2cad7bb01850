#include "driver_locator.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

namespace cudamux::cuda {
namespace {

namespace fs = std::filesystem;

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {};
  struct stat sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

int open_flags() {
  // RTLD_DEEPBIND: NVIDIA's library must bind its own cu* references to itself, not to
  // ours (first in the global scope). The sanitizer runtimes refuse RTLD_DEEPBIND (they
  // must interpose malloc & co.); sanitizer builds only ever load test stand-ins,
  // which bind to themselves anyway (linked -Bsymbolic).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return RTLD_NOW | RTLD_LOCAL;
#else
  return RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
#endif
}

}  // namespace

std::optional<bool> elf_has_section(const std::string& path, const char* section,
                                    std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot be read";
    return std::nullopt;
  }
  Elf64_Ehdr eh{};
  if (!in.read(reinterpret_cast<char*>(&eh), sizeof eh) ||
      std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) {
    error = "is not a 64-bit ELF shared object";
    return std::nullopt;
  }
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shstrndx >= eh.e_shnum) {
    return false;  // no section table (stripped of it): cannot carry our section
  }
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  in.seekg(static_cast<std::streamoff>(eh.e_shoff));
  if (!in.read(reinterpret_cast<char*>(sh.data()),
               static_cast<std::streamsize>(sh.size() * sizeof(Elf64_Shdr)))) {
    error = "has a truncated section table";
    return std::nullopt;
  }
  const Elf64_Shdr& strtab = sh[eh.e_shstrndx];
  std::string names(strtab.sh_size, '\0');
  in.seekg(static_cast<std::streamoff>(strtab.sh_offset));
  if (!in.read(names.data(), static_cast<std::streamsize>(names.size()))) {
    error = "has a truncated section name table";
    return std::nullopt;
  }
  for (const Elf64_Shdr& s : sh) {
    if (s.sh_name < names.size() && std::strcmp(names.c_str() + s.sh_name, section) == 0) {
      return true;
    }
  }
  return false;
}

bool is_loaded_libcuda(const std::string& path) { return is_loaded_library(path, "cuInit"); }

bool is_loaded_library(const std::string& path, const char* symbol) {
  void* sym = ::dlsym(RTLD_DEFAULT, symbol);
  Dl_info info{};
  if (sym == nullptr || ::dladdr(sym, &info) == 0 || info.dli_fname == nullptr) return false;
  return same_file(info.dli_fname, path);
}

std::vector<std::string> ld_library_path_dirs() {
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
  return out;
}

std::vector<std::string> candidate_paths(const std::vector<std::string>& dirs,
                                         const char* file_name) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& dir : dirs) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(dir, ec);
    if (!seen.insert(ec ? dir : canonical.string()).second) continue;
    out.push_back((fs::path(dir) / file_name).string());
  }
  return out;
}

void* open_foreign_library(const std::string& path, const char* identity_section,
                           const char* own_symbol, const char* what, std::string& why) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    why = "does not exist";
    return nullptr;
  }
  std::string elf_error;
  const auto marked = elf_has_section(path, identity_section, elf_error);
  if (!marked) {
    why = elf_error;
    return nullptr;
  }
  if (*marked) {
    why = std::string("is cudamux's own ") + what + " (it has the " + identity_section +
          " section), not NVIDIA's";
    return nullptr;
  }
  if (is_loaded_library(path, own_symbol)) {
    why = std::string("is the ") + what +
          " this process already runs on (cudamux's own), not NVIDIA's";
    return nullptr;
  }
  void* handle = ::dlopen(path.c_str(), open_flags());
  if (handle == nullptr) {
    const char* e = ::dlerror();
    why = std::string("cannot be loaded: ") + (e != nullptr ? e : "unknown dlopen error");
  }
  return handle;
}

std::vector<std::string> default_search_dirs() {
  std::vector<std::string> out = ld_library_path_dirs();
  for (const char* d :
       {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib"}) {
    out.emplace_back(d);
  }
  return out;
}

std::optional<OpenedDriver> open_driver(const std::string& path, std::string& why) {
  OpenedDriver d;
  d.path = path;
  d.handle = open_foreign_library(path, kIdentitySection, "cuInit", kDriverFileName, why);
  if (d.handle == nullptr) return std::nullopt;
  const char* missing = nullptr;
#define CUDAMUX_NVIDIA_RESOLVE(name)                                               \
  if (missing == nullptr) {                                                        \
    d.api.name = reinterpret_cast<decltype(d.api.name)>(::dlsym(d.handle, #name)); \
    if (d.api.name == nullptr) missing = #name;                                    \
  }
  CUDAMUX_NVIDIA_FUNCTIONS(CUDAMUX_NVIDIA_RESOLVE)
#undef CUDAMUX_NVIDIA_RESOLVE
  if (missing != nullptr) {
    ::dlclose(d.handle);
    why = std::string("is not NVIDIA's driver: it does not export ") + missing;
    return std::nullopt;
  }
#define CUDAMUX_NVIDIA_RESOLVE_OPTIONAL(name) \
  d.api.name = reinterpret_cast<decltype(d.api.name)>(::dlsym(d.handle, #name));
  CUDAMUX_NVIDIA_OPTIONAL_FUNCTIONS(CUDAMUX_NVIDIA_RESOLVE_OPTIONAL)
#undef CUDAMUX_NVIDIA_RESOLVE_OPTIONAL
  return d;
}

SearchResult search_driver(const std::vector<std::string>& dirs) {
  SearchResult result;
  for (const std::string& candidate : candidate_paths(dirs, kDriverFileName)) {
    std::string why;
    if (auto d = open_driver(candidate, why)) {
      result.driver = std::move(d);
      return result;
    }
    result.tried.push_back(candidate + ": " + why);
  }
  return result;
}

}  // namespace cudamux::cuda
