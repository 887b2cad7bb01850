// The cuda backend's Compiler: NVIDIA's NVRTC (libnvrtc.so.13, nvrtc_locator.hpp), given
// the options the core parsed, rebuilt as NVRTC command-line options.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cudamux/backend.hpp"
#include "nvrtc_locator.hpp"

namespace spdlog {
class logger;
}

namespace cudamux::cuda {

struct CudaConfig;

// NVRTC options for `o`, in NVRTC's long spelling. The `extra` list is already canonical
// and goes last, verbatim; an architecture variant in it (--gpu-architecture=sm_90a)
// replaces the one built from o.arch.
std::vector<std::string> nvrtc_options(const backend::CompileOptions& o);

class NvidiaCompiler final : public backend::Compiler {
 public:
  explicit NvidiaCompiler(OpenedNvrtc nvrtc);
  backend::Status compile(const backend::CompileRequest& request,
                          backend::CompileResult& result) override;
  [[nodiscard]] std::vector<int> supported_archs() const override { return archs_; }
  [[nodiscard]] const std::string& path() const noexcept { return nvrtc_.path; }

 private:
  OpenedNvrtc nvrtc_;
  std::vector<int> archs_;
};

// Finds NVIDIA's NVRTC per `config` ([cuda] nvrtc, else nvrtc_search_path or the default
// folders); nullptr when there is none, with the reason logged once as a warning.
std::unique_ptr<NvidiaCompiler> find_compiler(const CudaConfig& config, spdlog::logger& log);

}  // namespace cudamux::cuda
