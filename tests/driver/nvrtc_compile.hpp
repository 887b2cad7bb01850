// NVRTC through whichever libnvrtc the test runs with (cudamux's over the backend's compiler,
// or NVIDIA's in the oracle run): the conformance cases that build their own kernels.
#pragma once

#include <nvrtc.h>

#include <string>
#include <vector>

namespace conformance {

// `source` compiled with `options` into `image` (PTX or the backend's own image); false with
// NVRTC's result and log in `log` on failure.
inline bool compile_ptx(const char* source, const char* name, std::string& image, std::string& log,
                        const std::vector<std::string>& options = {}) {
  nvrtcProgram prog = nullptr;
  if (nvrtcCreateProgram(&prog, source, name, 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    log = "nvrtcCreateProgram failed";
    return false;
  }
  std::vector<const char*> opts;
  for (const auto& o : options) opts.push_back(o.c_str());
  const nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  size_t size = 0;
  if (nvrtcGetProgramLogSize(prog, &size) == NVRTC_SUCCESS && size > 1) {
    log.assign(size, '\0');
    (void)nvrtcGetProgramLog(prog, log.data());
  }
  bool ok = r == NVRTC_SUCCESS && nvrtcGetPTXSize(prog, &size) == NVRTC_SUCCESS;
  if (ok) {
    image.assign(size, '\0');
    ok = nvrtcGetPTX(prog, image.data()) == NVRTC_SUCCESS;
  }
  if (!ok) log = std::string(nvrtcGetErrorString(r)) + ": " + log;
  (void)nvrtcDestroyProgram(&prog);
  return ok;
}

}  // namespace conformance
