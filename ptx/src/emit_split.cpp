// Barrier splitting (the work-item loops of PoCL and CuPBoP, driven by the CFG): the twin of a
// kernel runs a whole block as rounds. In a round every thread that has not exited runs from
// its resume point to its next CTA barrier (saving the registers live across it, from
// ptx::compute_liveness, into its slot) or to its exit. A round always ends with every live
// thread waiting, so the block then starts the next round: any barrier placement works,
// divergent ones included, and nothing can deadlock (warp collectives are not split: kernels
// that reach them keep the fibers). No fiber, no stack per thread: the runtime runs the twin
// like a barrier-free kernel (CUDAMUX_KERNEL_NO_BARRIERS | CUDAMUX_KERNEL_PER_BLOCK).
#include "emit_split.hpp"

#include <sstream>

#include "cudamux/ptx/cfg.hpp"
#include "emit_mma.hpp"

namespace cudamux::ptx::detail {
namespace {

bool is_cta_barrier(const Instruction& in) {
  if (in.op == Opcode::bar_red) return true;
  if (in.op == Opcode::bar || in.op == Opcode::barrier) return in.mode != Mode::arrive;
  return false;
}

bool is_reduction(const Instruction& in) {
  return in.op == Opcode::bar_red || in.boolop != BoolOp::none;
}

bool is_warp_point(const Instruction& in) {
  switch (in.op) {
    case Opcode::shfl:
    case Opcode::vote:
    case Opcode::match:
    case Opcode::redux:
    case Opcode::activemask:
    case Opcode::bar_warp_sync:
    case Opcode::mma:  // warp-matrix collectives: op 9, through mma_ops' _lane helpers
    case Opcode::ldmatrix:
    case Opcode::stmatrix:
    case Opcode::movmatrix:
    case Opcode::wmma_mma:
      return true;
    default:
      return false;
  }
}

// The matrix collective's parts, from text the twin emits with the kernel's own readers
// (`probe`: only whether the form is executed).
MmaParts matrix_parts(const Instruction& in, const SplitKernel* k) {
  MmaEmitEnv env;
  if (k != nullptr) {
    env.rd = k->rd;
    env.wr = k->wr;
    env.addr = k->addr;
  } else {
    env.rd = [](const Operand&, Type) { return std::string("0u"); };
    env.wr = [](const Operand&, Type, const std::string&) { return std::string(";"); };
    env.addr = [](const Operand&, Space) { return std::string("((char*)nullptr)"); };
  }
  env.fail = [](const std::string&) {};
  return emit_mma_parts(in, env);
}

bool int_type(Type t) {
  switch (t) {
    case Type::b32:
    case Type::u32:
    case Type::s32:
    case Type::b64:
    case Type::u64:
    case Type::s64:
      return true;
    default:
      return false;
  }
}

// The runtime helpers' operation code of a warp point (cudamux_split::W::op), or -1 when the
// form is not modelled (the kernel then stays on fibers).
int warp_kind(const Instruction& in) {
  switch (in.op) {
    case Opcode::mma:
    case Opcode::ldmatrix:
    case Opcode::stmatrix:
    case Opcode::movmatrix:
    case Opcode::wmma_mma:
      return matrix_parts(in, nullptr).ok ? 9 : -1;
    case Opcode::shfl:
      return in.mode >= Mode::up && in.mode <= Mode::idx ? 0 : -1;
    case Opcode::vote:
      switch (in.mode) {
        case Mode::all:
          return 1;
        case Mode::any:
          return 2;
        case Mode::uni:
          return 3;
        case Mode::ballot:
          return 4;
        default:
          return -1;
      }
    case Opcode::match:
      if (in.types.empty() || !int_type(in.types[0])) return -1;
      return in.mode == Mode::any ? 5 : in.mode == Mode::all ? 6 : -1;
    case Opcode::activemask:
      return 7;
    case Opcode::bar_warp_sync:
      return 8;
    case Opcode::redux: {
      // redux.sync.{add,min,max,and,or,xor}.{u32,s32,b32}: 16 + op (+ 8 when signed)
      if (in.types.empty() || size_of(in.types[0]) != 4 || !int_type(in.types[0])) return -1;
      const int opi = static_cast<int>(in.mode) - static_cast<int>(Mode::add);
      if (in.mode < Mode::add || in.mode > Mode::xor_ || opi == 3 || opi == 4) return -1;
      return 16 + opi + (is_signed(in.types[0]) ? 8 : 0);
    }
    default:
      return -1;
  }
}

// Destination operands and the index of the first source (shfl/match: `d|p` pairs).
std::vector<const Operand*> destinations(const Instruction& in, std::size_t srcs, std::size_t& k) {
  std::vector<const Operand*> dst;
  k = 0;
  if (in.operands.empty()) return dst;
  if (in.operands[0].kind == Operand::Kind::vector) {
    for (const auto& e : in.operands[0].elems) dst.push_back(&e);
    k = 1;
    return dst;
  }
  const std::size_t nd = in.dest_pair                ? 2
                         : in.operands.size() > srcs ? in.operands.size() - srcs
                                                     : 1;
  for (; k < nd && k < in.operands.size(); ++k) dst.push_back(&in.operands[k]);
  return dst;
}

// Shared by every twin of the translation unit: a warp's deposits and their resolution.
constexpr const char* kWarpHelpers =
    R"CPP(#ifndef CUDAMUX_SPLIT_WARP_HELPERS
#define CUDAMUX_SPLIT_WARP_HELPERS
          namespace cudamux_split {
          // One lane's deposit at a warp point, and its result.
          struct W {
            u64 v;     // the value (shfl, match) or predicate (vote) it brings
            u32 mask;  // membermask
            u32 j;     // shfl: source lane
            u32 op;    // 0 shfl, 1 all, 2 any, 3 uni, 4 ballot, 5 match.any, 6 match.all, 7
                       // activemask, 8 sync
            bool p;    // shfl: in range; match.all: the predicate result
            u64 res;
            // 9: a warp-matrix instruction: its input words, its output words, and the
            // mma_ops helper that computes one lane's outputs from all lanes' inputs.
            u32 in[24];
            u32 out[8];
            void (*fn)(const u32* const*, unsigned, u32*);
          };
          template <int Mode>
          inline u32 shfl_lane(u32 lane_u, u32 b, u32 c, bool& in_range) {
            const int lane = static_cast<int>(lane_u);
            const int bval = static_cast<int>(b & 31u);
            const int cval = static_cast<int>(c & 31u);
            const int seg = static_cast<int>((c >> 8) & 31u);
            const int max_lane = (lane & seg) | (cval & ~seg);
            const int min_lane = lane & seg;
            int j;
            bool p;
            if (Mode == 0) {
              j = lane - bval;
              p = j >= max_lane;
            } else if (Mode == 1) {
              j = lane + bval;
              p = j <= max_lane;
            } else if (Mode == 2) {
              j = lane ^ bval;
              p = j <= max_lane;
            } else {
              j = min_lane | (bval & ~seg);
              p = j <= max_lane;
            }
            if (!p) j = lane;
            in_range = p;
            return static_cast<u32>(j);
          }
          // Resolves one warp: `in` has a bit per lane waiting at a warp point (they all take
          // part). A lane's partners are the waiting lanes of its membermask; a shuffle from a lane
          // outside them reads 0, as the device runtime does.
          inline void resolve(W* const* w, u32 in) {
            for (u32 i = 0; i < 32; ++i) {
              if (!((in >> i) & 1u)) continue;
              W& me = *w[i];
              const u32 e = in & me.mask;
              u64 r = 0;
              switch (me.op) {
                case 0:
                  r = ((e >> me.j) & 1u) ? (w[me.j]->v & 0xffffffffu) : 0u;
                  break;
                case 1:
                case 2:
                case 3:
                case 4: {
                  u32 ballot = 0;
                  for (u32 l = 0; l < 32; ++l)
                    if (((e >> l) & 1u) && w[l]->v != 0) ballot |= 1u << l;
                  if (me.op == 1)
                    r = ballot == e;
                  else if (me.op == 2)
                    r = ballot != 0;
                  else if (me.op == 3)
                    r = ballot == 0 || ballot == e;
                  else
                    r = ballot;
                  break;
                }
                case 5:
                case 6: {
                  u32 same = 0;
                  for (u32 l = 0; l < 32; ++l)
                    if (((e >> l) & 1u) && w[l]->v == me.v) same |= 1u << l;
                  if (me.op == 5) {
                    r = same;
                  } else {
                    me.p = same == e;
                    r = me.p ? e : 0u;
                  }
                  break;
                }
                case 7:
                  r = in;
                  break;
                case 9: {
                  const u32* t[32];
                  for (u32 l = 0; l < 32; ++l) t[l] = ((e >> l) & 1u) ? w[l]->in : nullptr;
                  me.fn(t, i, me.out);
                  break;
                }
                default:
                  if (me.op >= 16 &&
                      me.op <
                          32) {  // redux: 16 + (0 add, 1 min, 2 max, 5 and, 6 or, 7 xor), +8 signed
                    const u32 k = me.op & 7u;
                    const bool sg = (me.op & 8u) != 0;
                    u32 acc = k == 1   ? (sg ? 0x7fffffffu : 0xffffffffu)
                              : k == 2 ? (sg ? 0x80000000u : 0u)
                              : k == 5 ? 0xffffffffu
                                       : 0u;
                    for (u32 l = 0; l < 32; ++l) {
                      if (!((e >> l) & 1u)) continue;
                      const u32 x = static_cast<u32>(w[l]->v);
                      if (k == 0)
                        acc += x;
                      else if (k == 1)
                        acc = sg ? (static_cast<s32>(x) < static_cast<s32>(acc) ? x : acc)
                                 : (x < acc ? x : acc);
                      else if (k == 2)
                        acc = sg ? (static_cast<s32>(x) > static_cast<s32>(acc) ? x : acc)
                                 : (x > acc ? x : acc);
                      else if (k == 5)
                        acc &= x;
                      else if (k == 6)
                        acc |= x;
                      else
                        acc ^= x;
                    }
                    r = acc;
                  }
                  break;
              }
              me.res = r;
            }
          }
          }  // namespace cudamux_split
#endif
    )CPP";

}  // namespace

bool splittable(const Module& m, std::size_t fi, const std::vector<bool>& reaches_sync) {
  if (fi >= m.functions.size()) return false;
  const Function& f = m.functions[fi];
  if (!f.is_entry || !f.has_body) return false;
  bool barrier = false;
  for (const auto& in : f.body) {
    switch (in.op) {
      case Opcode::bar:
      case Opcode::barrier:
      case Opcode::bar_red:
        if (in.mode == Mode::arrive) return false;  // arrival counting is not modelled here
        if (is_reduction(in) &&
            (in.boolop == BoolOp::none || in.boolop == BoolOp::xor_ || in.operands.size() < 3))
          return false;
        barrier = true;
        break;
      case Opcode::call: {
        if (in.operands.size() < 2) return false;
        const auto& t = in.operands[1];
        if (t.kind != Operand::Kind::symbol || t.sym.kind != SymbolRef::Kind::function ||
            t.sym.index >= reaches_sync.size() || reaches_sync[t.sym.index])
          return false;  // indirect, or the callee waits somewhere itself
        break;
      }
      case Opcode::alloca:
      case Opcode::stacksave:
      case Opcode::stackrestore:
        return false;  // per-thread stack memory would outlive the thread's round
      default:
        break;
    }
    // shfl/vote/match/activemask/bar.warp.sync are warp rendezvous points of the state machine;
    // the rest of the rendezvous family stays on fibers.
    if (is_warp_point(in)) {
      if (warp_kind(in) < 0) return false;
      barrier = true;  // a stop of the state machine too
      continue;
    }
    switch (in.op) {
      case Opcode::elect:
      case Opcode::mma_sp:
      case Opcode::wgmma:
      case Opcode::mbarrier:
        return false;
      default:
        break;
    }
    // Module-scope .local is per OS thread: all threads of a twin share one.
    for (const auto& o : in.operands) {
      const SymbolRef* s =
          (o.kind == Operand::Kind::symbol || (o.kind == Operand::Kind::address && !o.base_is_reg))
              ? &o.sym
              : nullptr;
      if (s && s->kind == SymbolRef::Kind::global && s->index < m.globals.size() &&
          m.globals[s->index].space == Space::local)
        return false;
    }
  }
  return barrier;
}

std::string emit_split(const SplitKernel& k, const std::string& twin) {
  const Function& f = *k.f;
  const Cfg cfg = build_cfg(f);
  const Liveness live = compute_liveness(f, cfg);
  const std::size_t nregs = f.registers.size();

  // Stops (CTA barriers and warp points), numbered from 1 (0: the kernel's start), and the
  // registers live after each, which the thread keeps in its slot while it waits there.
  std::vector<std::uint32_t> stop_of(f.body.size(), 0);
  std::vector<std::vector<std::uint32_t>> kept(1);
  std::vector<bool> slot(nregs, false);
  bool warp = false;
  std::vector<std::uint32_t> uses, defs;
  for (std::size_t i = 0; i < f.body.size(); ++i) {
    const bool w = is_warp_point(f.body[i]);
    if (!is_cta_barrier(f.body[i]) && !w) continue;
    warp = warp || w;
    stop_of[i] = static_cast<std::uint32_t>(kept.size());
    const std::uint32_t b = i < cfg.block_of.size() ? cfg.block_of[i] : UINT32_MAX;
    std::vector<bool> after(nregs, true);  // unknown block: keep everything
    if (b < cfg.blocks.size() && cfg.blocks[b].end > i) {
      // Live after i: the block's live-out, walked back over the instructions after i.
      after = live.live_out[b];
      for (std::size_t j = cfg.blocks[b].end; j-- > i + 1;) {
        uses_and_defs(f.body[j], uses, defs);
        if (!f.body[j].guarded)
          for (auto d : defs)
            if (d < nregs) after[d] = false;
        for (auto u : uses)
          if (u < nregs) after[u] = true;
      }
    }
    std::vector<std::uint32_t> regs;
    for (std::size_t r = 0; r < nregs; ++r)
      if (after[r]) {
        regs.push_back(static_cast<std::uint32_t>(r));
        slot[r] = true;
      }
    kept.push_back(std::move(regs));
  }

  std::ostringstream o;
  if (warp) o << kWarpHelpers;
  o << "static __attribute__((used)) void " << twin << "(" << k.params << ") {\n";
  o << k.prologue;
  // Per-thread slots: the resume point, what the thread waits for (1: a warp point, 2: a CTA
  // barrier), the registers some stop keeps, the .local arrays, a warp point's deposit.
  o << "  struct cudamux_slot {\n    u32 pc;\n    u32 wait;\n";
  if (warp) o << "    ::cudamux_split::W w;\n";
  for (std::size_t r = 0; r < nregs; ++r)
    if (slot[r]) {
      o << "    " << k.reg_storage[r] << " " << k.reg_names[r];
      if (f.registers[r].vec > 1) o << "[" << unsigned(f.registers[r].vec) << "]";
      o << ";\n";
    }
  for (std::size_t l = 0; l < f.locals.size(); ++l)
    if (f.locals[l].space != Space::shared && f.locals[l].space != Space::param)
      o << "    alignas(" << k.local_align[l] << ") unsigned char " << k.local_names[l] << "["
        << k.local_size[l] << "];\n";
  o << "  };\n";
  o << "  const uint3 cudamux_bd = blockDim;\n"
       "  const unsigned cudamux_n = cudamux_bd.x * cudamux_bd.y * cudamux_bd.z;\n"
       "  // Freed when the block ends, by return or by the unwinding of a trap.\n"
       "  struct cudamux_mem {\n    void* p;\n    ~cudamux_mem() { free(p); }\n"
       "  } cudamux_m{malloc(sizeof(cudamux_slot) * (cudamux_n ? cudamux_n : 1))};\n"
       "  if (!cudamux_m.p) { ::cudamux::ptx::trap(\"out of memory for the block's thread "
       "slots\"); return; }\n"
       "  cudamux_slot* const cudamux_st = static_cast<cudamux_slot*>(cudamux_m.p);\n"
       "  for (unsigned t = 0; t < cudamux_n; ++t) {\n"
       "    cudamux_st[t].pc = 0;\n"
       "    cudamux_st[t].wait = 0;\n"
       "  }\n"
       "  unsigned cudamux_live = cudamux_n;\n"
       "  // bar.red: arrivals add their predicates; the threads released read the totals.\n"
       "  [[maybe_unused]] u32 cudamux_red_popc = 0, cudamux_acc_popc = 0;\n"
       "  [[maybe_unused]] bool cudamux_red_and = true, cudamux_red_or = false;\n"
       "  [[maybe_unused]] bool cudamux_acc_and = true, cudamux_acc_or = false;\n"
       "  while (cudamux_live != 0) {\n"
       "    unsigned cudamux_x = 0, cudamux_y = 0, cudamux_z = 0;\n"
       "    for (unsigned cudamux_t = 0; cudamux_t < cudamux_n; ++cudamux_t) {\n"
       "      cudamux_slot& cudamux_s = cudamux_st[cudamux_t];\n"
       "      if (cudamux_s.pc == 0xffffffffu || cudamux_s.wait != 0) goto cudamux_next;\n"
       "      threadIdx = uint3{cudamux_x, cudamux_y, cudamux_z};\n"
       "      CUDAMUX_THREAD_STORED();\n"
       "      {\n";
  if (k.uses_carry) o << "      bool cudamux_carry = false;\n";
  for (std::size_t r = 0; r < nregs; ++r) {
    o << "      " << k.reg_storage[r] << " " << k.reg_names[r];
    if (f.registers[r].vec > 1) o << "[" << unsigned(f.registers[r].vec) << "]";
    o << "{};\n";
  }
  for (std::size_t l = 0; l < f.locals.size(); ++l) {
    const auto& v = f.locals[l];
    if (v.space == Space::shared) continue;
    if (v.space == Space::param)  // call sequences: never live across a stop
      o << "      alignas(" << k.local_align[l] << ") unsigned char " << k.local_names[l] << "["
        << k.local_size[l] << "];\n";
    else
      o << "      auto& " << k.local_names[l] << " = cudamux_s." << k.local_names[l] << ";\n";
  }
  // Resume: restore what the stop kept, write its results, continue after it.
  o << "      switch (cudamux_s.pc) {\n        case 0:\n          break;\n";
  for (std::size_t b = 1; b < kept.size(); ++b) {
    o << "        case " << b << ":\n";
    for (auto r : kept[b])
      o << "          __builtin_memcpy(&" << k.reg_names[r] << ", &cudamux_s." << k.reg_names[r]
        << ", sizeof " << k.reg_names[r] << ");\n";
    for (std::size_t i = 0; i < f.body.size(); ++i) {
      if (stop_of[i] != b) continue;
      const auto& in = f.body[i];
      if (is_cta_barrier(in)) {
        // bar.red's result is the reduction over the arrivals just released.
        if (!is_reduction(in)) continue;
        if (in.boolop == BoolOp::popc)
          o << "          " << k.wr(in.operands[0], Type::u32, "cudamux_red_popc") << "\n";
        else
          o << "          "
            << k.wr(in.operands[0], Type::pred,
                    in.boolop == BoolOp::and_ ? "cudamux_red_and" : "cudamux_red_or")
            << "\n";
        continue;
      }
      const std::string res = "static_cast<u32>(cudamux_s.w.res)";
      std::size_t first = 0;
      switch (warp_kind(in)) {
        case 0: {
          const auto dst = destinations(in, in.sync ? 4 : 3, first);
          if (!dst.empty()) o << "          " << k.wr(*dst[0], Type::u32, res) << "\n";
          if (dst.size() > 1)
            o << "          " << k.wr(*dst[1], Type::pred, "cudamux_s.w.p") << "\n";
          break;
        }
        case 1:
        case 2:
        case 3:
          o << "          " << k.wr(in.operands[0], Type::pred, "cudamux_s.w.res != 0") << "\n";
          break;
        case 4:
        case 7:
          o << "          " << k.wr(in.operands[0], Type::u32, res) << "\n";
          break;
        case 5:
        case 6: {
          const auto dst = destinations(in, 2, first);
          if (!dst.empty()) o << "          " << k.wr(*dst[0], Type::u32, res) << "\n";
          if (dst.size() > 1)
            o << "          " << k.wr(*dst[1], Type::pred, "cudamux_s.w.p") << "\n";
          break;
        }
        case 9:
          o << "          { const u32* out_ = cudamux_s.w.out; (void)out_; "
            << matrix_parts(in, &k).scatter << "}\n";
          break;
        default:
          if (warp_kind(in) >= 16)
            o << "          " << k.wr(in.operands[0], in.types[0], res) << "\n";
          break;
      }
    }
    o << "          goto cudamux_resume_" << b << ";\n";
  }
  o << "        default:\n          __builtin_unreachable();\n      }\n";

  for (std::size_t i = 0; i <= f.body.size(); ++i) {
    for (auto l : k.labels_at[i]) o << "L_" << l << ":;\n";
    if (i == f.body.size()) break;
    const auto& in = f.body[i];
    std::string s;
    if (const auto b = stop_of[i]) {
      s = "{ ";
      if (is_cta_barrier(in)) {
        if (is_reduction(in)) {
          const std::string p = k.rd(in.operands.back(), Type::pred);
          s += "{ const bool p_ = " + p +
               "; cudamux_acc_popc += p_ ? 1u : 0u; cudamux_acc_and = cudamux_acc_and && p_; "
               "cudamux_acc_or = cudamux_acc_or || p_; } ";
        }
        s += "cudamux_s.wait = 2u; ";
      } else {
        // The deposit: what the warp's resolution needs from this lane.
        const int kind = warp_kind(in);
        const std::string full = "0xffffffffu";
        std::string v = "0u", mask = full;
        std::size_t first = 0;
        if (kind == 0) {
          destinations(in, in.sync ? 4 : 3, first);
          const int mode = static_cast<int>(in.mode) - static_cast<int>(Mode::up);
          const auto op = [&](std::size_t x) {
            return x < in.operands.size() ? k.rd(in.operands[x], Type::u32) : std::string("0u");
          };
          v = op(first);
          if (in.sync) mask = op(first + 3);
          s += "{ bool p_ = false; cudamux_s.w.j = ::cudamux_split::shfl_lane<" +
               std::to_string(mode) + ">(cudamux_t & 31u, " + op(first + 1) + ", " + op(first + 2) +
               ", p_); cudamux_s.w.p = p_; } ";
        } else if (kind >= 1 && kind <= 4) {
          v = "(" + k.rd(in.operands[1], Type::pred) + " ? 1u : 0u)";
          if (in.sync && in.operands.size() > 2) mask = k.rd(in.operands[2], Type::u32);
        } else if (kind == 5 || kind == 6) {
          destinations(in, 2, first);
          const Type ut = size_of(in.types[0]) == 8 ? Type::u64 : Type::u32;
          if (first < in.operands.size()) v = k.rd(in.operands[first], ut);
          if (first + 1 < in.operands.size()) mask = k.rd(in.operands[first + 1], Type::u32);
        } else if (kind == 8) {
          if (!in.operands.empty()) mask = k.rd(in.operands[0], Type::u32);
        } else if (kind == 9) {
          const MmaParts mp = matrix_parts(in, &k);
          s += "{ u32* in_ = cudamux_s.w.in; " + mp.gather + "} cudamux_s.w.fn = " + mp.lane_fn +
               "; ";
        } else if (kind >= 16) {  // redux.sync d, a, membermask
          v = k.rd(in.operands[1], Type::u32);
          if (in.operands.size() > 2) mask = k.rd(in.operands[2], Type::u32);
        }
        s += "cudamux_s.w.v = static_cast<u64>(" + v + "); cudamux_s.w.mask = " + mask +
             "; cudamux_s.w.op = " + std::to_string(kind) + "u; cudamux_s.wait = 1u; ";
      }
      for (auto r : kept[b])
        s += "__builtin_memcpy(&cudamux_s." + k.reg_names[r] + ", &" + k.reg_names[r] +
             ", sizeof " + k.reg_names[r] + "); ";
      s += "cudamux_s.pc = " + std::to_string(b) + "u; goto cudamux_next; }";
    } else if (in.op == Opcode::ret || in.op == Opcode::exit) {
      s = "goto cudamux_exit;";
    } else {
      s = k.stmts[i];
    }
    o << k.line(in.loc);
    if (in.guarded && in.guard_reg < k.reg_names.size())
      o << "if (" << (in.guard_negated ? "!" : "") << k.reg_names[in.guard_reg] << ") { " << s
        << " }\n";
    else
      o << s << "\n";
    if (const auto b = stop_of[i]) o << "cudamux_resume_" << b << ":;\n";
  }
  o << "      }\n"
       "    cudamux_exit:\n"
       "      cudamux_s.pc = 0xffffffffu;\n"
       "      --cudamux_live;\n"
       "    cudamux_next:\n"
       "      if (++cudamux_x == cudamux_bd.x) {\n"
       "        cudamux_x = 0;\n"
       "        if (++cudamux_y == cudamux_bd.y) {\n"
       "          cudamux_y = 0;\n"
       "          ++cudamux_z;\n"
       "        }\n"
       "      }\n"
       "    }\n";
  if (warp) {
    // Warps whose lanes wait at warp points resolve first (those lanes go on in the next
    // pass); exited lanes and lanes waiting at a CTA barrier do not take part.
    o << "    bool cudamux_warped = false;\n"
         "    for (unsigned wb = 0; wb < cudamux_n; wb += 32) {\n"
         "      ::cudamux_split::W cudamux_none{};\n"
         "      ::cudamux_split::W* ws[32];\n"
         "      u32 in = 0;\n"
         "      for (unsigned l = 0; l < 32; ++l) {\n"
         "        const unsigned t = wb + l;\n"
         "        ws[l] = t < cudamux_n ? &cudamux_st[t].w : &cudamux_none;\n"
         "        if (t < cudamux_n && cudamux_st[t].wait == 1u) in |= 1u << l;\n"
         "      }\n"
         "      if (in == 0) continue;\n"
         "      cudamux_warped = true;\n"
         "      ::cudamux_split::resolve(ws, in);\n"
         "      for (unsigned l = 0; l < 32; ++l)\n"
         "        if ((in >> l) & 1u) cudamux_st[wb + l].wait = 0;\n"
         "    }\n"
         "    if (cudamux_warped) continue;\n";
  }
  // Every live thread waits at a CTA barrier: release the block.
  o << "    for (unsigned t = 0; t < cudamux_n; ++t) cudamux_st[t].wait = 0;\n"
       "    cudamux_red_popc = cudamux_acc_popc;\n"
       "    cudamux_red_and = cudamux_acc_and;\n"
       "    cudamux_red_or = cudamux_acc_or;\n"
       "    cudamux_acc_popc = 0;\n"
       "    cudamux_acc_and = true;\n"
       "    cudamux_acc_or = false;\n"
       "  }\n"
       "}\n";
  return o.str();
}

}  // namespace cudamux::ptx::detail
