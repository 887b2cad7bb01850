// Facts about PTX types, spaces and opcodes, and the sizes of declarations.
#include <array>
#include <limits>

#include "cudamux/ptx/ir.hpp"

namespace cudamux::ptx {

unsigned size_of(Type t) noexcept {
  switch (t) {
    case Type::none:
      return 0;
    case Type::pred:
    case Type::b8:
    case Type::u8:
    case Type::s8:
    case Type::e4m3:
    case Type::e5m2:
    case Type::s4:
    case Type::u4:
    case Type::b1:
      return 1;
    case Type::b16:
    case Type::u16:
    case Type::s16:
    case Type::f16:
    case Type::bf16:
    case Type::e4m3x2:
    case Type::e5m2x2:
    case Type::e2m1x2:
    case Type::e2m3x2:
    case Type::e3m2x2:
    case Type::ue8m0x2:
      return 2;
    case Type::b32:
    case Type::u32:
    case Type::s32:
    case Type::f32:
    case Type::f16x2:
    case Type::bf16x2:
    case Type::tf32:
      return 4;
    case Type::b64:
    case Type::u64:
    case Type::s64:
    case Type::f64:
      return 8;
    case Type::b128:
      return 16;
  }
  return 0;
}

bool is_float(Type t) noexcept {
  switch (t) {
    case Type::f16:
    case Type::f16x2:
    case Type::bf16:
    case Type::bf16x2:
    case Type::tf32:
    case Type::f32:
    case Type::f64:
    case Type::e4m3:
    case Type::e5m2:
    case Type::e4m3x2:
    case Type::e5m2x2:
      return true;
    default:
      return false;
  }
}

bool is_signed(Type t) noexcept {
  return t == Type::s8 || t == Type::s16 || t == Type::s32 || t == Type::s64;
}

const char* name_of(Type t) noexcept {
  static constexpr std::array<const char*, 36> names = {
      "",       "pred",   "b8",      "b16", "b32",  "b64",  "b128",   "u8",     "u16",
      "u32",    "u64",    "s8",      "s16", "s32",  "s64",  "f16",    "f16x2",  "bf16",
      "bf16x2", "tf32",   "f32",     "f64", "e4m3", "e5m2", "e4m3x2", "e5m2x2", "e2m1x2",
      "e2m3x2", "e3m2x2", "ue8m0x2", "s4",  "u4",   "b1",   "",       "",       ""};
  auto i = static_cast<std::size_t>(t);
  return i < names.size() ? names[i] : "";
}

const char* name_of(Space s) noexcept {
  switch (s) {
    case Space::generic:
      return "generic";
    case Space::reg:
      return "reg";
    case Space::sreg:
      return "sreg";
    case Space::const_:
      return "const";
    case Space::global:
      return "global";
    case Space::local:
      return "local";
    case Space::param:
      return "param";
    case Space::shared:
      return "shared";
    case Space::shared_cluster:
      return "shared::cluster";
    case Space::tex:
      return "tex";
  }
  return "";
}

const char* name_of(Opcode op) noexcept {
  // In enum order (ir.hpp); PTX spelling.
  static constexpr const char* names[] = {"add",
                                          "sub",
                                          "mul",
                                          "mad",
                                          "mul24",
                                          "mad24",
                                          "sad",
                                          "div",
                                          "rem",
                                          "abs",
                                          "neg",
                                          "min",
                                          "max",
                                          "popc",
                                          "clz",
                                          "bfind",
                                          "fns",
                                          "brev",
                                          "bmsk",
                                          "bfe",
                                          "bfi",
                                          "dp4a",
                                          "dp2a",
                                          "addc",
                                          "subc",
                                          "madc",
                                          "fma",
                                          "rcp",
                                          "sqrt",
                                          "rsqrt",
                                          "sin",
                                          "cos",
                                          "lg2",
                                          "ex2",
                                          "tanh",
                                          "copysign",
                                          "testp",
                                          "set",
                                          "setp",
                                          "selp",
                                          "slct",
                                          "and",
                                          "or",
                                          "xor",
                                          "not",
                                          "cnot",
                                          "lop3",
                                          "shf",
                                          "shl",
                                          "shr",
                                          "prmt",
                                          "mov",
                                          "shfl",
                                          "ld",
                                          "ldu",
                                          "st",
                                          "prefetch",
                                          "prefetchu",
                                          "isspacep",
                                          "cvta",
                                          "cvt",
                                          "cvt.pack",
                                          "mapa",
                                          "getctarank",
                                          "cp.async",
                                          "cp.async.commit_group",
                                          "cp.async.wait_group",
                                          "cp.async.wait_all",
                                          "cp.async.bulk",
                                          "cp.reduce.async.bulk",
                                          "stmatrix",
                                          "ldmatrix",
                                          "movmatrix",
                                          "multimem",
                                          "tex",
                                          "tld4",
                                          "txq",
                                          "suld",
                                          "sust",
                                          "sured",
                                          "suq",
                                          "istypep",
                                          "bra",
                                          "brx.idx",
                                          "call",
                                          "ret",
                                          "exit",
                                          "bar",
                                          "barrier",
                                          "bar.warp.sync",
                                          "bar.red",
                                          "membar",
                                          "fence",
                                          "atom",
                                          "red",
                                          "vote",
                                          "match",
                                          "activemask",
                                          "redux",
                                          "mbarrier",
                                          "griddepcontrol",
                                          "elect",
                                          "nanosleep",
                                          "setmaxnreg",
                                          "wmma.load",
                                          "wmma.store",
                                          "wmma.mma",
                                          "mma",
                                          "mma.sp",
                                          "wgmma",
                                          "trap",
                                          "brkpt",
                                          "pmevent",
                                          "alloca",
                                          "stacksave",
                                          "stackrestore",
                                          "video"};
  auto i = static_cast<std::size_t>(op);
  return i < std::size(names) ? names[i] : "";
}

namespace {
std::uint64_t mul_sat(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a)
    return std::numeric_limits<std::uint64_t>::max();
  return a * b;
}
}  // namespace

std::uint64_t Variable::size_bytes() const noexcept {
  std::uint64_t n = mul_sat(size_of(type), vec ? vec : 1);
  for (auto d : dims) n = mul_sat(n, d);
  return n;
}

std::uint64_t Param::size_bytes() const noexcept {
  std::uint64_t n = size_of(type);
  for (auto d : dims) n = mul_sat(n, d);
  return n;
}

}  // namespace cudamux::ptx
