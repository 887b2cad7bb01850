#include "compiler.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "config.hpp"
#include "nvidia_status.hpp"

namespace cudamux::cuda {
namespace {

namespace be = cudamux::backend;

// NVRTC's own failures (not compile errors) as the CUresult-valued codes of this backend.
be::Status failure(nvrtcResult r) {
  switch (r) {
    case NVRTC_ERROR_OUT_OF_MEMORY:
      return status(CUDA_ERROR_OUT_OF_MEMORY);
    case NVRTC_ERROR_INVALID_OPTION:
    case NVRTC_ERROR_INVALID_INPUT:
    case NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID:
      return status(CUDA_ERROR_INVALID_VALUE);
    default:
      return status(CUDA_ERROR_UNKNOWN);
  }
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += "\n  " + l;
  return out;
}

}  // namespace

std::vector<std::string> nvrtc_options(const be::CompileOptions& o) {
  std::vector<std::string> out;
  const bool arch_variant = std::any_of(o.extra.begin(), o.extra.end(), [](const std::string& e) {
    return e.starts_with("--gpu-architecture=");
  });
  if (o.arch > 0 && !arch_variant) {
    out.push_back(std::string("--gpu-architecture=") + (o.real_arch ? "sm_" : "compute_") +
                  std::to_string(o.arch));
  }
  if (!o.fmad) out.emplace_back("--fmad=false");
  if (o.device_debug) out.emplace_back("--device-debug");
  if (o.line_info) out.emplace_back("--generate-line-info");
  if (o.default_device) out.emplace_back("--device-as-default-execution-space");
  if (o.relocatable) out.emplace_back("--relocatable-device-code=true");
  if (!o.std.empty()) out.push_back("--std=" + o.std);
  for (const auto& [name, value] : o.defines) out.push_back("--define-macro=" + name + "=" + value);
  for (const auto& name : o.undefines) out.push_back("--undefine-macro=" + name);
  for (const auto& dir : o.include_paths) out.push_back("--include-path=" + dir);
  for (const auto& file : o.pre_includes) out.push_back("--pre-include=" + file);
  out.insert(out.end(), o.extra.begin(), o.extra.end());
  return out;
}

NvidiaCompiler::NvidiaCompiler(OpenedNvrtc nvrtc) : nvrtc_(std::move(nvrtc)) {
  int n = 0;
  if (nvrtc_.api.nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0) {
    archs_.resize(static_cast<std::size_t>(n));
    if (nvrtc_.api.nvrtcGetSupportedArchs(archs_.data()) != NVRTC_SUCCESS) archs_.clear();
  }
}

be::Status NvidiaCompiler::compile(const be::CompileRequest& request, be::CompileResult& result) {
  const NvrtcApi& api = nvrtc_.api;
  auto describe = [&](const char* fn, nvrtcResult r) {
    const char* text = api.nvrtcGetErrorString(r);
    result.log += std::string("NVIDIA's NVRTC (") + nvrtc_.path + "): " + fn + " returned " +
                  (text != nullptr ? text : "?") + "\n";
    return failure(r);
  };
  // NVRTC wants C strings: the source and names arrive as views.
  const std::string source(request.source);
  const std::string name(request.name);
  std::vector<const char*> header_texts;
  std::vector<const char*> header_names;
  for (const auto& [include_name, text] : request.headers) {
    header_names.push_back(include_name.c_str());
    header_texts.push_back(text.c_str());
  }
  nvrtcProgram prog = nullptr;
  if (const nvrtcResult r = api.nvrtcCreateProgram(
          &prog, source.c_str(), name.empty() ? nullptr : name.c_str(),
          static_cast<int>(header_texts.size()), header_texts.data(), header_names.data());
      r != NVRTC_SUCCESS) {
    return describe("nvrtcCreateProgram", r);
  }
  struct Destroy {
    const NvrtcApi& api;
    nvrtcProgram& p;
    ~Destroy() { (void)api.nvrtcDestroyProgram(&p); }
  } destroy{api, prog};

  for (const auto& expr : request.name_expressions) {
    if (const nvrtcResult r = api.nvrtcAddNameExpression(prog, expr.c_str()); r != NVRTC_SUCCESS)
      return describe("nvrtcAddNameExpression", r);
  }
  const std::vector<std::string> options = nvrtc_options(request.options);
  std::vector<const char*> argv;
  argv.reserve(options.size());
  for (const auto& o : options) argv.push_back(o.c_str());
  const nvrtcResult compiled =
      api.nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());

  std::size_t log_size = 0;
  if (api.nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    std::string text(log_size, '\0');
    if (api.nvrtcGetProgramLog(prog, text.data()) == NVRTC_SUCCESS) {
      text.resize(log_size - 1);  // NVRTC counts its NUL
      result.log += text;
    }
  }
  if (compiled == NVRTC_ERROR_COMPILATION) {
    result.success = false;
    return be::kOk;  // a program with errors: the log says which
  }
  if (compiled != NVRTC_SUCCESS) return describe("nvrtcCompileProgram", compiled);

  // CUBIN for a real architecture (sm_XX); none (size 0) for a virtual one.
  std::size_t cubin_size = 0;
  if (api.nvrtcGetCUBINSize(prog, &cubin_size) == NVRTC_SUCCESS && cubin_size > 0) {
    result.cubin.resize(cubin_size);
    if (const nvrtcResult r = api.nvrtcGetCUBIN(prog, result.cubin.data()); r != NVRTC_SUCCESS)
      return describe("nvrtcGetCUBIN", r);
  }
  // PTX, NUL included (NVRTC counts it), so that the image is self-delimiting; a program
  // compiled for a real architecture with no PTX kept loads from its CUBIN instead.
  std::size_t ptx_size = 0;
  if (api.nvrtcGetPTXSize(prog, &ptx_size) == NVRTC_SUCCESS && ptx_size > 1) {
    result.image.resize(ptx_size);
    if (const nvrtcResult r = api.nvrtcGetPTX(prog, result.image.data()); r != NVRTC_SUCCESS)
      return describe("nvrtcGetPTX", r);
    if (result.image.back() != '\0') result.image.push_back('\0');
  } else {
    result.image = result.cubin;
  }
  for (const auto& expr : request.name_expressions) {
    const char* lowered = nullptr;
    if (api.nvrtcGetLoweredName(prog, expr.c_str(), &lowered) == NVRTC_SUCCESS &&
        lowered != nullptr) {
      result.lowered_names.emplace_back(expr, lowered);
    }
  }
  result.success = true;
  return be::kOk;
}

std::unique_ptr<NvidiaCompiler> find_compiler(const CudaConfig& config, spdlog::logger& log) {
  if (config.nvrtc) {
    std::string why;
    auto n = open_nvrtc(*config.nvrtc, why);
    if (!n) {
      log.warn("cuda backend: {}: [cuda] key 'nvrtc': {} {}: no NVRTC on this backend",
               config.nvrtc_origin, *config.nvrtc, why);
      return nullptr;
    }
    log.debug("cuda backend: NVIDIA's NVRTC {}", n->path);
    return std::make_unique<NvidiaCompiler>(std::move(*n));
  }
  const auto dirs = config.nvrtc_search ? *config.nvrtc_search : default_nvrtc_search_dirs();
  NvrtcSearchResult found = search_nvrtc(dirs);
  for (const auto& line : found.tried) log.debug("cuda backend: skipped {}", line);
  if (!found.nvrtc) {
    log.warn(
        "cuda backend: no NVIDIA NVRTC found ({} not in any searched folder, or not usable); "
        "set [cuda] nvrtc to its full path. Searched:{}",
        kNvrtcFileName, join(found.tried));
    return nullptr;
  }
  log.debug("cuda backend: NVIDIA's NVRTC {}", found.nvrtc->path);
  return std::make_unique<NvidiaCompiler>(std::move(*found.nvrtc));
}

}  // namespace cudamux::cuda
