// Finding and opening NVIDIA's libnvrtc.so.13, as driver_locator.hpp does for the driver:
// ours carries the same soname and symbols, so a candidate marked with our ELF section
// (api/src/nvrtc_identity_note.cpp), or the very file this process already runs on, is
// skipped, and one lacking any function the compiler needs is refused.
#pragma once

#include <nvrtc.h>

#include <optional>
#include <string>
#include <vector>

namespace cudamux::cuda {

inline constexpr const char* kNvrtcFileName = "libnvrtc.so.13";
inline constexpr const char* kNvrtcIdentitySection = ".note.cudamux.libnvrtc";

#define CUDAMUX_NVRTC_FUNCTIONS(X)                                                              \
  X(nvrtcGetErrorString)                                                                        \
  X(nvrtcVersion)                                                                               \
  X(nvrtcGetNumSupportedArchs) X(nvrtcGetSupportedArchs) X(nvrtcCreateProgram)                  \
      X(nvrtcDestroyProgram) X(nvrtcCompileProgram) X(nvrtcGetPTXSize) X(nvrtcGetPTX)           \
          X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) \
              X(nvrtcAddNameExpression) X(nvrtcGetLoweredName)

struct NvrtcApi {
#define CUDAMUX_NVRTC_MEMBER(name) decltype(&::name) name = nullptr;
  CUDAMUX_NVRTC_FUNCTIONS(CUDAMUX_NVRTC_MEMBER)
#undef CUDAMUX_NVRTC_MEMBER
};

struct OpenedNvrtc {
  void* handle = nullptr;  // never closed (it may have loaded its builtins library)
  std::string path;
  NvrtcApi api;
};

// LD_LIBRARY_PATH entries, then /usr/local/cuda/lib64, /usr/local/cuda-13*/lib64 (newest
// first), /usr/lib/x86_64-linux-gnu, /usr/lib64.
std::vector<std::string> default_nvrtc_search_dirs();

// Checks and opens one candidate; on refusal nullopt with `why` set.
std::optional<OpenedNvrtc> open_nvrtc(const std::string& path, std::string& why);

struct NvrtcSearchResult {
  std::optional<OpenedNvrtc> nvrtc;
  std::vector<std::string> tried;  // "<path>: <why it was not used>"
};

// The first acceptable <dir>/libnvrtc.so.13 of `dirs` (duplicates skipped).
NvrtcSearchResult search_nvrtc(const std::vector<std::string>& dirs);

}  // namespace cudamux::cuda
