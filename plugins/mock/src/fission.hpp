// Loop fission at barriers (issue 3, "Execution, and speed"): a source-level transform of a
// kernel body whose __syncthreads() sit in block-uniform, structured control flow into a
// "twin" function that runs the whole block: the code between barriers becomes loops over the
// block's threads, variables live across a barrier become per-thread arrays.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cudamux::mock {

struct FissionInput {
  std::string_view body;       // the kernel body's text, between its braces (exclusive)
  std::string_view body_code;  // the same with comments/strings blanked (same offsets)
  std::string_view params;     // the parameter list as written
  std::vector<std::string> uniform_macros;  // object-like macros whose bodies are constants
  std::string file;                         // quoted program name, for #line
  unsigned first_line = 1;                  // source line of body[0]
  std::string twin_name;                    // name of the generated function
  // Code outside kernel bodies (helpers, operators, macros) names threadIdx or assert: every
  // region stores threadIdx. Otherwise only regions that name it or call something do.
  bool thread_idx_read_outside = true;
};

struct FissionResult {
  bool ok = false;
  std::string code;    // the twin's definition (when ok)
  std::string reason;  // why not (when !ok), for the debug log
};

// Never throws; anything it cannot prove safe gives ok = false (the kernel keeps the fiber path).
FissionResult fission(const FissionInput& in);

// Kernel launches in device code (dynamic parallelism): every `k<<<grid, block[, shared[,
// stream]]>>>(args...)` of `text` becomes `::cudamux::detail::device_launch<(&k)>(grid,
// block, shared, stream, args...)` (prelude.h), with the replaced text's line breaks kept after
// it.
// `code` is `text` with comments and literals blanked (the same offsets): only code is read.
// The kernel expression is the qualified name (template arguments included) before `<<<`.
// Returns how many were rewritten; a launch it cannot read is left as written (g++ then
// refuses it, and the compiler's log says why).
std::size_t rewrite_device_launches(std::string& text, const std::string& code);

// Whitespace-normalised text: runs of white space become one space, none at either end
// (shared with the compiler's source analysis).
std::string squash(std::string_view s);

}  // namespace cudamux::mock
