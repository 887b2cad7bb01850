// A tiny deterministic backend for the NVRTC API-surface tests: its Compiler compiles nothing,
// it describes what it was asked (so tests can see how options were parsed) and fails on
// markers in the source. Built twice: "nvrtctest" (with the compiler) and "nvrtcnocomp"
// (compiler() == nullptr).
#include <spdlog/logger.h>

#include <cstdint>
#include <string>

#include "cudamux/backend.hpp"

namespace be = cudamux::backend;

namespace {

constexpr std::int32_t kCompilerCrashed = 7;

class Errors final : public be::ErrorDomain {
 public:
  std::optional<CUresult> to_cuda(std::int32_t native) const noexcept override {
    if (native == 0) return CUDA_SUCCESS;
    return std::nullopt;
  }
  std::string_view native_name(std::int32_t native) const noexcept override {
    return native == kCompilerCrashed ? "testCompilerCrashed" : "testError";
  }
  be::Status not_ready() const noexcept override { return {1}; }
  be::Status not_supported() const noexcept override { return {2}; }
  be::Status out_of_memory() const noexcept override { return {3}; }
  be::Status invalid_value() const noexcept override { return {4}; }
};

class Devices final : public be::Devices {
 public:
  int count() const noexcept override { return 0; }
  be::Status properties(int, be::DeviceProperties&) const override { return {2}; }
  be::Status attribute(int, CUdevice_attribute, int&) const override { return {2}; }
  be::Status memory_info(int, std::size_t&, std::size_t&) const override { return {2}; }
  bool can_access_peer(int, int) const noexcept override { return false; }
};

// 1-based line of the first occurrence of `marker` in `text`, 0 when absent.
int line_of(std::string_view text, std::string_view marker) {
  const auto pos = text.find(marker);
  if (pos == std::string_view::npos) return 0;
  int line = 1;
  for (std::size_t i = 0; i < pos; ++i) line += text[i] == '\n';
  return line;
}

class Compiler final : public be::Compiler {
 public:
  be::Status compile(const be::CompileRequest& rq, be::CompileResult& out) override {
    if (rq.source.find("COMPILER_CRASH") != std::string_view::npos) {
      out.log = "test compiler: simulated crash\n";
      return {kCompilerCrashed};
    }
    if (int line = line_of(rq.source, "COMPILE_ERROR")) {
      out.success = false;
      out.log =
          std::string(rq.name) + "(" + std::to_string(line) + "): error: COMPILE_ERROR found\n";
      return be::kOk;
    }
    for (const auto& e : rq.name_expressions) {
      if (e.starts_with("nope")) {
        out.success = false;
        out.log = "name expression '" + e + "' is not valid\n";
        return be::kOk;
      }
    }
    const be::CompileOptions& o = rq.options;
    // A readable "image" that ends in a NUL (self-delimiting, like a real one would be).
    std::string img = "cudamux-test-image\n";
    img += "name=" + std::string(rq.name) + "\n";
    img += "arch=" + std::to_string(o.arch) + " real=" + std::to_string(o.real_arch) +
           " fmad=" + std::to_string(o.fmad) + " G=" + std::to_string(o.device_debug) +
           " lineinfo=" + std::to_string(o.line_info) +
           " default_device=" + std::to_string(o.default_device) +
           " rdc=" + std::to_string(o.relocatable) + " std=" + o.std + "\n";
    for (const auto& [n, v] : o.defines) img += "define " + n + "=" + v + "\n";
    for (const auto& n : o.undefines) img += "undefine " + n + "\n";
    for (const auto& n : o.include_paths) img += "include_path " + n + "\n";
    for (const auto& n : o.pre_includes) img += "pre_include " + n + "\n";
    for (const auto& n : o.extra) img += "extra " + n + "\n";
    for (const auto& [n, src] : rq.headers)
      img += "header " + n + " (" + std::to_string(src.size()) + " bytes)\n";
    img += "source_bytes=" + std::to_string(rq.source.size()) + "\n";
    out.image.assign(img.begin(), img.end());
    out.image.push_back('\0');
    if (o.real_arch) {
      const std::string cubin = "test-cubin sm_" + std::to_string(o.arch);
      out.cubin.assign(cubin.begin(), cubin.end());
    }
    for (const auto& e : rq.name_expressions)
      out.lowered_names.emplace_back(e, "_lowered_" + std::to_string(e.size()) + "_" + e);
    if (rq.source.find("WARN_ME") != std::string_view::npos)
      out.log = std::string(rq.name) + ": warning: WARN_ME\n";
    out.success = true;
    return be::kOk;
  }
  std::vector<int> supported_archs() const override { return {75, 80, 86, 89, 90, 100, 120}; }
};

class Backend final : public be::Backend {
 public:
  std::string_view name() const noexcept override { return CUDAMUX_TEST_BACKEND_NAME; }
  const be::ErrorDomain& errors() const noexcept override { return errors_; }
  be::Devices& devices() noexcept override { return devices_; }
  be::Status open_context(int, unsigned, std::unique_ptr<be::DeviceContext>&) override {
    return {2};
  }
  be::Compiler* compiler() noexcept override {
#if CUDAMUX_TEST_WITH_COMPILER
    return &compiler_;
#else
    return nullptr;
#endif
  }

 private:
  Errors errors_;
  Devices devices_;
  Compiler compiler_;
};

}  // namespace

CUDAMUX_PLUGIN_EXPORT std::uint32_t cudamux_backend_abi_version() { return be::kAbiVersion; }
CUDAMUX_PLUGIN_EXPORT be::Backend* cudamux_backend_create(const be::PluginHost& host,
                                                          std::string& error) {
  if (host.abi_version != be::kAbiVersion) {
    error = "bad PluginHost";
    return nullptr;
  }
  return new Backend();
}
