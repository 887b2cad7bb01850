// Barrier splitting for the mock's C++ back end (issue 15, "Barriers without fibers"): a
// kernel whose CTA barriers can be split also gets a per-block twin that runs all threads of
// the block itself, as a state machine driven by the CFG (docs/ptx.md). Private to ptx/src:
// emit_cpp.cpp hands over what it has already translated (one statement per instruction).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cudamux/ptx/ir.hpp"

namespace cudamux::ptx::detail {

// Whether kernel `fi` can run as a split twin: it has a CTA barrier of its own, and neither
// it nor what it calls reaches a warp collective, another barrier, or per-thread stack
// tricks (alloca, module-scope .local). reaches_sync: per function, whether it reaches any
// barrier or collective (the emitter's analysis).
// yields: per instruction of the kernel, a yield point before it (nanosleep, spin-wait polls):
// stops of the state machine too.
bool splittable(const Module& m, std::size_t fi, const std::vector<bool>& reaches_sync,
                const std::vector<bool>& yields = {});

// Whether barrier-free kernel `f` can run as a flat twin (a loop over the block's threads in
// one frame): not with per-thread stack allocation (alloca/stacksave), which would pile up
// over the loop's threads.
bool flattenable(const Function& f);

struct SplitKernel {
  const Function* f = nullptr;
  std::string params;    // the kernel's parameter list, as in its definition ("u64 kp0, ...")
  std::string prologue;  // statements every function body starts with (cudamux_w ...)
  std::string kernel;    // the kernel as written (its C++ name), and its call's arguments
  std::string args;      // ("kp0, kp1, ...")
  bool uses_carry = false;
  std::vector<std::string> reg_names, reg_storage;  // per Function::registers
  std::vector<std::string> local_names;             // per Function::locals
  std::vector<std::uint64_t> local_size, local_align;
  std::vector<std::string> stmts;                     // per instruction, unguarded
  std::vector<std::vector<std::uint32_t>> labels_at;  // instruction index -> used labels
  std::vector<bool> yield_before;  // per instruction: a yield point before it (a stop)
  std::function<std::string(const Operand&, Type)> rd;
  std::function<std::string(const Operand&, Type, const std::string&)> wr;
  std::function<std::string(const Operand&, Space)> addr;  // char* expression of an address
  std::function<std::string(const SourceLoc&)> line;
  std::size_t outline_regions_above = 0;   // EmitOptions::outline_regions_above
  std::size_t max_split_region_bytes = 0;  // EmitOptions::max_split_region_bytes
};

// The twin's definition (a static function named `twin`, the kernel's parameter types), or
// "" when its regions exceed k.max_split_region_bytes (the kernel then stays on fibers).
std::string emit_split(const SplitKernel& k, const std::string& twin);

// The flat twin of a kernel that reaches no barrier (flattenable): the body once per thread
// in a z/y/x loop over the block, threadIdx a local (stored to TLS only for kernels that read
// it there: calls, trap, %laneid...). Same parameters as emit_split.
std::string emit_flat(const SplitKernel& k, const std::string& twin);

}  // namespace cudamux::ptx::detail
