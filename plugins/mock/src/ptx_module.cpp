// NVIDIA PTX on the mock (issue 15): PTX text -> the front end's IR (ptx/) -> C++ from the
// mock's back end (ptx/emit_cpp) -> the mock compiler (cached on disk like NVRTC programs,
// keyed on the generated source, hence on the PTX and the translator) -> a loaded module.
#include <spdlog/spdlog.h>

#include <cstring>
#include <string>

#include "cudamux/ptx/emit_cpp.hpp"
#include "cudamux/ptx/ir.hpp"
#include "kernels.hpp"

namespace cudamux::mock {
namespace {
constexpr be::Status status(CUresult r) { return be::Status{static_cast<std::int32_t>(r)}; }
}  // namespace

be::Status translate_ptx(const be::ModuleImage& image, MockCompiler& compiler, spdlog::logger& log,
                         std::vector<char>& native) {
  if (image.data == nullptr) return status(CUDA_ERROR_INVALID_VALUE);
  const char* text = static_cast<const char*>(image.data);
  // Images from fat binaries come with their size; cuModuleLoadData's PTX is NUL-terminated.
  std::size_t size = image.size != 0 ? image.size : std::strlen(text);
  while (size > 0 && text[size - 1] == '\0') --size;
  std::vector<ptx::Diagnostic> diagnostics;
  const auto module = ptx::parse(std::string_view(text, size), diagnostics);
  if (!module) {
    for (std::size_t i = 0; i < diagnostics.size() && i < 5; ++i)
      log.error("mock backend: PTX line {}:{}: {}", diagnostics[i].loc.line,
                diagnostics[i].loc.column, diagnostics[i].message);
    if (diagnostics.empty()) log.error("mock backend: the PTX does not parse");
    return status(CUDA_ERROR_INVALID_PTX);
  }
  ptx::EmitOptions options;
  options.module_name = "ptx";
  // Barrier splitting follows loop fission's switch ([mock] fission, CUDAMUX_MOCK_FISSION; off
  // under memcheck, which must see every barrier).
  options.split_barriers = compiler.settings().fission;
  const ptx::EmitResult emitted = ptx::emit_cpp(*module, options);
  for (const auto& d : emitted.unsupported)
    log.warn(
        "mock backend: PTX line {}: {}; a kernel that reaches it fails with "
        "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        d.loc.line, d.message);
  be::CompileRequest request;
  request.source = emitted.source;
  request.name = "ptx";
  request.options.arch = static_cast<int>(module->arch);
  // PTX says exactly where multiplies and adds fuse (fma, mad): g++ must not fuse others
  // (`mul.rn` + `add.rn` stay two roundings).
  request.options.fmad = false;
  be::CompileResult result;
  if (const auto st = compiler.compile_generated(request, result); !st.ok()) return st;
  if (!result.success) {
    // The translation is ours: a compile error here is a cudamux bug, reported as such.
    log.error(
        "mock backend: the C++ translated from this PTX does not compile (a cudamux bug; please "
        "report it with the PTX): {}",
        result.log.substr(0, 2000));
    return status(CUDA_ERROR_INVALID_PTX);
  }
  native = std::move(result.image);
  return be::kOk;
}

be::Status load_ptx_module(const be::ModuleImage& image, MockCompiler& compiler,
                           spdlog::logger& log, std::unique_ptr<be::Module>& out) {
  std::vector<char> native;
  if (const auto st = translate_ptx(image, compiler, log, native); !st.ok()) return st;
  return load_module_image(native.data(), log, out);
}

}  // namespace cudamux::mock
