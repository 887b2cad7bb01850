// NVRTC over hipRTC: CUDA options (parsed by the core) become hipRTC options, a prelude
// gives common CUDA device spellings, and the result is the AMDGPU code object.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cudamux/backend.hpp"
#include "hip_api.hpp"

namespace cudamux::hip {

// The offload archs the installed hipRTC compiles for (offload_archs.inc). Anything else
// aborts the process inside hipRTC 5.2, so it never reaches hipRTC.
const std::vector<std::string>& supported_offload_archs();
// "gfx90a", "gfx90a:xnack-", "gfx90a:sramecc+:xnack-": a supported base and known features.
bool valid_offload_arch(const std::string& arch);
std::string supported_offload_archs_text();

// Native codes the compiler returns for its own failures (hipError_t values).
struct CompilerCodes {
  std::int32_t not_supported;
  std::int32_t invalid_value;
  std::int32_t unknown;
};

class HiprtcCompiler final : public backend::Compiler {
 public:
  // `device_arch` says which arch to compile for: the current AMD device's or the
  // configured one; called per compile (devices may differ per thread).
  HiprtcCompiler(const HiprtcApi& api, std::function<std::string()> device_arch,
                 std::shared_ptr<spdlog::logger> log, CompilerCodes codes);
  backend::Status compile(const backend::CompileRequest& request,
                          backend::CompileResult& result) override;
  [[nodiscard]] std::vector<int> supported_archs() const override;

  // The hipRTC option list a request becomes (exposed for tests).
  static std::vector<std::string> translate(const backend::CompileOptions& o,
                                            const std::string& arch);
  static std::string prelude(const backend::CompileOptions& o);

 private:
  const HiprtcApi& api_;
  std::function<std::string()> device_arch_;
  std::shared_ptr<spdlog::logger> log_;
  CompilerCodes codes_;
};

}  // namespace cudamux::hip
