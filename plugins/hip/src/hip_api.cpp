#include "hip_api.hpp"

#include <dlfcn.h>
#include <link.h>

namespace cudamux::hip {
namespace {

std::optional<OpenedLibrary> open_library(const std::string& name, std::string& why) {
  // RTLD_LOCAL: ROCm's symbols must not interpose on the program's or ours.
  void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    why = "cannot open " + name + ": " + (e != nullptr ? e : "unknown dlopen error");
    return std::nullopt;
  }
  OpenedLibrary lib{h, name};
  link_map* map = nullptr;
  if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      *map->l_name != '\0' && name != map->l_name) {
    lib.path = name + " (" + map->l_name + ")";
  }
  return lib;
}

template <class Fn>
bool resolve(void* handle, const char* symbol, Fn& out, const std::string& lib, std::string& why) {
  void* p = dlsym(handle, symbol);
  if (p == nullptr) {
    why = lib + " has no " + symbol;
    return false;
  }
  out = reinterpret_cast<Fn>(p);
  return true;
}

}  // namespace

std::optional<OpenedLibrary> open_runtime(const std::string& name, HipApi& api, std::string& why) {
  auto lib = open_library(name, why);
  if (!lib) return std::nullopt;
#define HIP_FN(fn, params) \
  if (!resolve(lib->handle, #fn, api.fn, lib->path, why)) return std::nullopt;
#include "hip_functions.inc"
#undef HIP_FN
  std::string missing;
#define HIP_IMAGE_FN(fn, symbol, params)                                            \
  if (missing.empty() && !resolve(lib->handle, symbol, api.fn, lib->path, missing)) \
    api.fn = nullptr;
#include "hip_image_functions.inc"
#undef HIP_IMAGE_FN
  if (!missing.empty()) {
#define HIP_IMAGE_FN(fn, symbol, params) api.fn = nullptr;
#include "hip_image_functions.inc"
#undef HIP_IMAGE_FN
    api.images_missing = missing;
  }
  return lib;
}

std::optional<OpenedLibrary> open_hiprtc(const std::string& name, HiprtcApi& api,
                                         std::string& why) {
  auto lib = open_library(name, why);
  if (!lib) return std::nullopt;
#define RTC_FN(fn) \
  if (!resolve(lib->handle, #fn, api.fn, lib->path, why)) return std::nullopt;
  RTC_FN(hiprtcVersion)
  RTC_FN(hiprtcCreateProgram)
  RTC_FN(hiprtcDestroyProgram)
  RTC_FN(hiprtcAddNameExpression)
  RTC_FN(hiprtcCompileProgram)
  RTC_FN(hiprtcGetProgramLogSize)
  RTC_FN(hiprtcGetProgramLog)
  RTC_FN(hiprtcGetCodeSize)
  RTC_FN(hiprtcGetCode)
  RTC_FN(hiprtcGetLoweredName)
#undef RTC_FN
  return lib;
}

}  // namespace cudamux::hip
