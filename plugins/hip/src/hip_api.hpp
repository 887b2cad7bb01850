// HIP's types (from ROCm's headers, build time only) and the runtime's functions, resolved
// at run time from a library opened by name or path, so that the plugin loads on machines
// without ROCm and says what is missing.
#pragma once

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>
#include <hip/hiprtc.h>

#include <optional>
#include <string>

namespace cudamux::hip {

struct HipApi {
#define HIP_FN(name, params) hipError_t(*name) params = nullptr;
#include "hip_functions.inc"
#undef HIP_FN
  // Optional: all set, or all null with images_missing naming the first symbol not found.
#define HIP_IMAGE_FN(name, symbol, params) hipError_t(*name) params = nullptr;
#include "hip_image_functions.inc"
#undef HIP_IMAGE_FN
  std::string images_missing;
};

// hipRTC: inside libamdhip64.so.5 on ROCm 5.2; opened separately so that tests can pair
// the fake runtime with the real compiler.
struct HiprtcApi {
  hiprtcResult (*hiprtcVersion)(int*, int*) = nullptr;
  hiprtcResult (*hiprtcCreateProgram)(hiprtcProgram*, const char*, const char*, int, const char**,
                                      const char**) = nullptr;
  hiprtcResult (*hiprtcDestroyProgram)(hiprtcProgram*) = nullptr;
  hiprtcResult (*hiprtcAddNameExpression)(hiprtcProgram, const char*) = nullptr;
  hiprtcResult (*hiprtcCompileProgram)(hiprtcProgram, int, const char**) = nullptr;
  hiprtcResult (*hiprtcGetProgramLogSize)(hiprtcProgram, size_t*) = nullptr;
  hiprtcResult (*hiprtcGetProgramLog)(hiprtcProgram, char*) = nullptr;
  hiprtcResult (*hiprtcGetCodeSize)(hiprtcProgram, size_t*) = nullptr;
  hiprtcResult (*hiprtcGetCode)(hiprtcProgram, char*) = nullptr;
  hiprtcResult (*hiprtcGetLoweredName)(hiprtcProgram, const char*, const char**) = nullptr;
};

struct OpenedLibrary {
  void* handle = nullptr;  // never closed: objects from it may outlive any owner
  std::string path;        // as given, and where dlinfo found it
};

// dlopen(name_or_path) and dlsym every function; on failure nullopt and `why` says which
// library or symbol is missing.
std::optional<OpenedLibrary> open_runtime(const std::string& name, HipApi& api, std::string& why);
std::optional<OpenedLibrary> open_hiprtc(const std::string& name, HiprtcApi& api, std::string& why);

}  // namespace cudamux::hip
