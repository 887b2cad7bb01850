// Finding and opening NVIDIA's libcuda.so.1. Ours has the same soname and symbol names,
// so every candidate is checked before it is loaded: cudamux's own library (marked by
// an ELF section, or the very file this process already loaded) is skipped, and a
// library lacking any function the backend needs is refused as not NVIDIA's.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nvidia_api.hpp"

namespace cudamux::cuda {

inline constexpr const char* kDriverFileName = "libcuda.so.1";
// Section our libcuda.so.1 carries (api/src/identity_note.cpp).
inline constexpr const char* kIdentitySection = ".note.cudamux.libcuda";

struct OpenedDriver {
  void* handle = nullptr;  // never closed: NVIDIA's driver is not made to be unloaded
  std::string path;        // as found (config value or <dir>/libcuda.so.1)
  NvidiaApi api;
};

// Whether the ELF file at `path` has a section named `section`; nullopt (with `error`)
// when the file cannot be read as a 64-bit ELF object.
std::optional<bool> elf_has_section(const std::string& path, const char* section,
                                    std::string& error);

// True when `path` is the same file (device and inode) as the libcuda.so.1 that
// defines cuInit in this process's global scope (cudamux's own, when a program runs
// on cudamux).
bool is_loaded_libcuda(const std::string& path);
// The same for any library: `path` is the file defining `symbol` in the global scope.
bool is_loaded_library(const std::string& path, const char* symbol);

// Shared with the NVRTC locator (nvrtc_locator.cpp), whose library has the same problem.
// LD_LIBRARY_PATH's entries, in order.
std::vector<std::string> ld_library_path_dirs();
// <dir>/<file_name> for each of `dirs`, in order, folders naming the same place skipped.
std::vector<std::string> candidate_paths(const std::vector<std::string>& dirs,
                                         const char* file_name);
// dlopens `path` (RTLD_LOCAL, and RTLD_DEEPBIND so it binds to itself) when it is the
// vendor's `what` rather than cudamux's own library of the same soname: it exists, has no
// `identity_section`, and is not the file defining `own_symbol` in this process. Otherwise
// nullptr, with `why` saying which check refused it.
void* open_foreign_library(const std::string& path, const char* identity_section,
                           const char* own_symbol, const char* what, std::string& why);

// The folders searched when no driver is configured: each LD_LIBRARY_PATH entry, then
// /usr/lib/x86_64-linux-gnu, /usr/lib64, /usr/local/nvidia/lib64, /usr/lib/wsl/lib.
std::vector<std::string> default_search_dirs();

// Checks and opens one candidate. On refusal returns nullopt and sets `why` (for example
// "is cudamux's own libcuda.so.1" or "is not NVIDIA's driver: it does not export cuInit").
std::optional<OpenedDriver> open_driver(const std::string& path, std::string& why);

struct SearchResult {
  std::optional<OpenedDriver> driver;
  std::vector<std::string>
      tried;  // "<path>: <why it was not used>" for every candidate passed over
};

// The first acceptable <dir>/libcuda.so.1 of `dirs`, in order (duplicates skipped).
SearchResult search_driver(const std::vector<std::string>& dirs);

}  // namespace cudamux::cuda
