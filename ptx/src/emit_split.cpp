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
    // Warp collectives and the rest of the rendezvous family stay on fibers.
    switch (in.op) {
      case Opcode::shfl:
      case Opcode::vote:
      case Opcode::match:
      case Opcode::redux:
      case Opcode::activemask:
      case Opcode::bar_warp_sync:
      case Opcode::elect:
      case Opcode::wmma_load:
      case Opcode::wmma_store:
      case Opcode::wmma_mma:
      case Opcode::mma:
      case Opcode::mma_sp:
      case Opcode::ldmatrix:
      case Opcode::stmatrix:
      case Opcode::movmatrix:
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

  // Barriers, numbered from 1 (0: the kernel's start), and what each one keeps.
  std::vector<std::uint32_t> barrier_of(f.body.size(), 0);
  std::vector<std::vector<std::uint32_t>> kept(1);
  std::vector<bool> slot(nregs, false);
  for (std::size_t i = 0; i < f.body.size(); ++i) {
    if (!is_cta_barrier(f.body[i])) continue;
    barrier_of[i] = static_cast<std::uint32_t>(kept.size());
    std::vector<std::uint32_t> regs;
    const std::uint32_t b = i < cfg.block_of.size() ? cfg.block_of[i] : UINT32_MAX;
    const bool at_end = b < cfg.blocks.size() && cfg.blocks[b].end == i + 1;
    for (std::size_t r = 0; r < nregs; ++r)
      if (!at_end || live.live_out[b][r]) {  // not a block end (never, by the CFG): keep all
        regs.push_back(static_cast<std::uint32_t>(r));
        slot[r] = true;
      }
    kept.push_back(std::move(regs));
  }

  std::ostringstream o;
  o << "static __attribute__((used)) void " << twin << "(" << k.params << ") {\n";
  o << k.prologue;
  // Per-thread slots: the resume point, the registers some barrier keeps, the .local arrays.
  o << "  struct cudamux_slot {\n    u32 pc;\n";
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
       "  for (unsigned t = 0; t < cudamux_n; ++t) cudamux_st[t].pc = 0;\n"
       "  unsigned cudamux_live = cudamux_n;\n"
       "  // bar.red: each round accumulates the arrivals' predicates; the next reads them.\n"
       "  [[maybe_unused]] u32 cudamux_red_popc = 0;\n"
       "  [[maybe_unused]] bool cudamux_red_and = true, cudamux_red_or = false;\n"
       "  while (cudamux_live != 0) {\n"
       "    [[maybe_unused]] u32 cudamux_acc_popc = 0;\n"
       "    [[maybe_unused]] bool cudamux_acc_and = true, cudamux_acc_or = false;\n"
       "    unsigned cudamux_x = 0, cudamux_y = 0, cudamux_z = 0;\n"
       "    for (unsigned cudamux_t = 0; cudamux_t < cudamux_n; ++cudamux_t) {\n"
       "      cudamux_slot& cudamux_s = cudamux_st[cudamux_t];\n"
       "      if (cudamux_s.pc == 0xffffffffu) goto cudamux_next;\n"
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
    if (v.space == Space::param)  // call sequences: never live across a barrier
      o << "      alignas(" << k.local_align[l] << ") unsigned char " << k.local_names[l] << "["
        << k.local_size[l] << "];\n";
    else
      o << "      auto& " << k.local_names[l] << " = cudamux_s." << k.local_names[l] << ";\n";
  }
  // Resume: restore what the barrier kept, then continue after it.
  o << "      switch (cudamux_s.pc) {\n        case 0:\n          break;\n";
  for (std::size_t b = 1; b < kept.size(); ++b) {
    o << "        case " << b << ":\n";
    for (auto r : kept[b])
      o << "          __builtin_memcpy(&" << k.reg_names[r] << ", &cudamux_s." << k.reg_names[r]
        << ", sizeof " << k.reg_names[r] << ");\n";
    // bar.red's result is the reduction over the round that just ended.
    for (std::size_t i = 0; i < f.body.size(); ++i)
      if (barrier_of[i] == b && is_reduction(f.body[i])) {
        const auto& in = f.body[i];
        if (in.boolop == BoolOp::popc)
          o << "          " << k.wr(in.operands[0], Type::u32, "cudamux_red_popc") << "\n";
        else
          o << "          "
            << k.wr(in.operands[0], Type::pred,
                    in.boolop == BoolOp::and_ ? "cudamux_red_and" : "cudamux_red_or")
            << "\n";
      }
    o << "          goto cudamux_resume_" << b << ";\n";
  }
  o << "        default:\n          __builtin_unreachable();\n      }\n";

  for (std::size_t i = 0; i <= f.body.size(); ++i) {
    for (auto l : k.labels_at[i]) o << "L_" << l << ":;\n";
    if (i == f.body.size()) break;
    const auto& in = f.body[i];
    std::string s;
    if (const auto b = barrier_of[i]) {
      s = "{ ";
      if (is_reduction(in)) {
        const std::string p = k.rd(in.operands.back(), Type::pred);
        s += "{ const bool p_ = " + p +
             "; cudamux_acc_popc += p_ ? 1u : 0u; cudamux_acc_and = cudamux_acc_and && p_; "
             "cudamux_acc_or = cudamux_acc_or || p_; } ";
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
    if (const auto b = barrier_of[i]) o << "cudamux_resume_" << b << ":;\n";
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
       "    }\n"
       "    cudamux_red_popc = cudamux_acc_popc;\n"
       "    cudamux_red_and = cudamux_acc_and;\n"
       "    cudamux_red_or = cudamux_acc_or;\n"
       "  }\n"
       "}\n";
  return o.str();
}

}  // namespace cudamux::ptx::detail
