// Warp-level matrix instructions in the mock's C++ back end (issue 15 item 2): mma.sync,
// ldmatrix, stmatrix, movmatrix and wmma.{load,store,mma} become calls of ptx_ops.h's
// "ptx-mma" helpers (cudamux::ptx::mma_ops). Kept apart from emit_cpp.cpp, which reaches it
// through emit_mma() with its operand readers and writers.
#pragma once

#include <functional>
#include <string>

#include "cudamux/ptx/ir.hpp"

namespace cudamux::ptx::detail {

struct MmaEmitEnv {
  std::function<std::string(const Operand&, Type)> rd;  // value of an operand as a C++ expression
  std::function<std::string(const Operand&, Type, const std::string&)> wr;  // statement
  std::function<std::string(const Operand&, Space)> addr;                   // char* expression
  std::function<void(const std::string&)> fail;  // the instruction cannot run here (why)
};

bool is_mma_op(Opcode op) noexcept;

// A warp-collective matrix instruction in three parts (mma, ldmatrix, stmatrix, movmatrix,
// wmma.mma), for the split back end: statements filling `u32 in_[]`, the per-lane helper
// (`&::cudamux::ptx::mma_ops::..._lane<...>`, type void(const u32* const*, unsigned, u32*)),
// statements writing the destinations from `const u32 out_[]`. ok is false for other
// instructions and forms the back end does not execute.
struct MmaParts {
  bool ok = false;
  std::string gather, lane_fn, scatter;
};
MmaParts emit_mma_parts(const Instruction& ins, const MmaEmitEnv& env);
// The statement for one instruction (calls env.fail for forms it does not execute).
std::string emit_mma(const Instruction& ins, const MmaEmitEnv& env);

}  // namespace cudamux::ptx::detail
