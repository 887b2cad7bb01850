// The mock's PTX back end (issue 15): IR -> one C++ translation unit that the mock's compiler
// builds with its prelude (plugins/mock/device) like an NVRTC program, plus the kernel table
// (cudamux_module_desc) the mock loads. Instructions the back end cannot execute become a
// call that fails the launch with CUDA_ERROR_ILLEGAL_INSTRUCTION and names the instruction and
// its line; they are also listed in `unsupported` so the loader can log them once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cudamux/ptx/ir.hpp"

namespace cudamux::ptx {

struct EmitOptions {
  bool split_barriers = true;       // kernels whose barriers can be split run as one call per block
  std::string module_name = "ptx";  // used in #line directives and diagnostics
  // Functions only, no kernel table: the inline PTX statements of an NVRTC program, compiled
  // into that program (which has its own table).
  bool library = false;
  // Lazy compilation (the mock compiles each kernel at its first launch): only this function
  // (a Module::functions index, a kernel) and the functions it reaches by calls or addresses;
  // -1: every function. Shared-memory offsets stay the module's, so separately compiled
  // kernels agree with each other.
  std::int64_t only_function = -1;
  // .global/.const variables live outside the translation unit (module storage on the host,
  // shared by all the module's kernels, globals.hpp): the code reaches the k-th of them
  // through the exported table `char* cudamux_ptx_globals[]`, which the loader fills before
  // any kernel runs. Modules whose initialisers take function addresses need the eager form.
  bool external_globals = false;
  // Only the module-wide facts (shared layout, kernel_shared_used), no source: what a loader
  // needs to answer kernel attributes without compiling.
  bool layout_only = false;
  // Kernels that reach no barrier, warp collective or yield point also get a per-block "flat"
  // twin: the body as a loop over the block's threads with threadIdx a local (no TLS store per
  // thread), which g++ can vectorise. Off by default; the mock turns it on outside memcheck.
  bool flat_kernels = false;
  // Split twins whose regions total more than this many bytes of C++ keep each region a
  // function of its own and run every round through the per-thread dispatch (no inlined
  // uniform loops, which g++ vectorises but compiles in time that grows faster than the
  // size): kernels unrolled around hundreds of warp points (CUB's radix sort, wmma GEMMs).
  std::size_t outline_regions_above = 64 * 1024;
  // No twin at all above this much region text: the kernel stays on fibers. A wmma GEMM
  // unrolled around 2,181 warp points (cudaTensorCoreGemm) makes a 26 MB twin that g++ takes
  // many minutes on, where the kernel as written compiles in about a minute.
  std::size_t max_split_region_bytes = 8 * 1024 * 1024;
};

struct EmitResult {
  std::string source;                       // the translation unit (includes "cudamux/ptx_ops.h")
  std::vector<Diagnostic> unsupported;      // one per distinct unsupported instruction form
  std::vector<std::string> function_names;  // the C++ name of each Module::functions entry
  // Bytes of static .shared memory each block needs (module-wide layout); the window of a
  // block is [static shared][dynamic shared].
  std::uint64_t static_shared_bytes = 0;
  // Per Module::functions entry: bytes of .shared a kernel reaches (0 for .func).
  std::vector<std::uint64_t> kernel_shared_used;
  // Per Module::functions entry: whether its translation is in `source` (only_function).
  std::vector<bool> emitted;
};

EmitResult emit_cpp(const Module& m, const EmitOptions& options = {});

// Whether `name`, declared `.extern .func` and defined by no module, is one the generated code
// provides (the device runtime's vprintf, __assertfail, malloc, free, cudaGraphSetConditional).
bool provides_external_function(std::string_view name);

}  // namespace cudamux::ptx
