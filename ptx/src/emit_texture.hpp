// Textures and surfaces in the mock's C++ back end (issue 15 / 17): tex, tld4, txq, suld,
// sust, sured and suq become calls of the device runtime's sampler (cudamux/image_abi.h) and
// the helpers of ptx_ops.h's "ptx-tex" section. Kept apart from emit_cpp.cpp, which reaches it
// through emit_texture() with its operand readers and writers.
#pragma once

#include <functional>
#include <string>

#include "cudamux/ptx/ir.hpp"

namespace cudamux::ptx::detail {

struct TextureEmitEnv {
  std::function<std::string(const Operand&, Type)> rd;  // value of an operand as a C++ expression
  std::function<std::string(const Operand&, Type, const std::string&)> wr;  // statement
  std::function<void(const std::string&)> fail;  // the instruction cannot run here (why)
};

bool is_texture_op(Opcode op) noexcept;
// The statement for one texture/surface instruction (calls env.fail for unsupported forms).
std::string emit_texture(const Instruction& ins, const TextureEmitEnv& env);

}  // namespace cudamux::ptx::detail
