// The mock's PTX back end (issue 15): IR -> one C++ translation unit that the mock's compiler
// builds with its prelude (plugins/mock/device) like an NVRTC program, plus the kernel table
// (cudamux_module_desc) the mock loads. Instructions the back end cannot execute become a
// call that fails the launch with CUDA_ERROR_ILLEGAL_INSTRUCTION and names the instruction and
// its line; they are also listed in `unsupported` so the loader can log them once.
#pragma once

#include <string>
#include <vector>

#include "cudamux/ptx/ir.hpp"

namespace cudamux::ptx {

struct EmitOptions {
  bool split_barriers = true;       // kernels whose barriers can be split run as one call per block
  std::string module_name = "ptx";  // used in #line directives and diagnostics
  // Functions only, no kernel table: the inline PTX statements of an NVRTC program, compiled
  // into that program (which has its own table).
  bool library = false;
};

struct EmitResult {
  std::string source;                       // the translation unit (includes "cudamux/ptx_ops.h")
  std::vector<Diagnostic> unsupported;      // one per distinct unsupported instruction form
  std::vector<std::string> function_names;  // the C++ name of each Module::functions entry
  // Bytes of static .shared memory each block needs (module-wide layout); the window of a
  // block is [static shared][dynamic shared].
  std::uint64_t static_shared_bytes = 0;
};

EmitResult emit_cpp(const Module& m, const EmitOptions& options = {});

}  // namespace cudamux::ptx
