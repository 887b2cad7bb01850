// Barrier splitting (the work-item loops of PoCL and CuPBoP, driven by the CFG): the twin of a
// kernel runs a whole block as rounds. In a round every thread that has not exited runs from
// its resume point to its next CTA barrier (saving the registers live across it, from
// ptx::compute_liveness, into its slot) or to its exit. A round always ends with every live
// thread waiting, so the block then starts the next round: any barrier placement works,
// divergent ones included, and nothing can deadlock (warp collectives are not split: kernels
// that reach them keep the fibers). No fiber, no stack per thread: the runtime runs the twin
// like a barrier-free kernel (CUDAMUX_KERNEL_NO_BARRIERS | CUDAMUX_KERNEL_PER_BLOCK).
#include "emit_split.hpp"

#include <algorithm>
#include <sstream>
#include <string_view>

#include "cudamux/ptx/cfg.hpp"
#include "emit_mma.hpp"

namespace cudamux::ptx::detail {
namespace {

bool is_cta_barrier(const Instruction& in) {
  if (in.op == Opcode::bar_red) return true;
  if (in.op == Opcode::bar || in.op == Opcode::barrier) return in.mode != Mode::arrive;
  return false;
}

// mbarrier.test_wait / try_wait with its predicate in a register: a yield point (find_yields).
bool mbarrier_wait(const Instruction& in) {
  return in.op == Opcode::mbarrier && in.mode == Mode::wait && !in.operands.empty() &&
         in.operands[0].kind == Operand::Kind::reg;
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
            // The waiting lanes' predicates, gathered once: a vote is then one AND per lane
            // (CUB's radix sort ranks keys with a ballot per digit bit, so votes dominate its
            // warp points). A reduction's total is reused by the lanes of the same member set.
            u32 votes = 0;
            for (u32 l = 0; l < 32; ++l)
              if (((in >> l) & 1u) && w[l]->v != 0) votes |= 1u << l;
            u32 redux_op = 0, redux_e = 0;
            u64 redux_r = 0;
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
                  const u32 ballot = votes & e;
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
                  if (me.op >= 16 && me.op < 32 && me.op == redux_op && e == redux_e) {
                    r = redux_r;
                  } else if (me.op >= 16 && me.op < 32) {  // redux: 16 + (0 add, 1 min, 2 max, 5
                                                           // and, 6 or, 7 xor), +8 signed
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
                    redux_op = me.op;
                    redux_e = e;
                    redux_r = r;
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

bool splittable(const Module& m, std::size_t fi, const std::vector<bool>& reaches_sync,
                const std::vector<bool>& yields) {
  if (fi >= m.functions.size()) return false;
  const Function& f = m.functions[fi];
  if (!f.is_entry || !f.has_body) return false;
  bool barrier = false;
  for (std::size_t i = 0; i < f.body.size(); ++i) {
    const auto& in = f.body[i];
    // A yield point is a stop (yield stops, emit_split): the spinning thread parks for one
    // pass while the block's other threads run.
    if (i < yields.size() && yields[i]) barrier = true;
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
    // mbarrier: its waits (test_wait/try_wait) are yield points, stops above; init, arrive,
    // arrive_drop, expect_tx, complete_tx, pending_count and inval never block.
    switch (in.op) {
      case Opcode::elect:
      case Opcode::mma_sp:
      case Opcode::wgmma:
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

namespace {

// Whether the kernel body (not the device functions it calls, which read the TLS themselves)
// can see threadIdx only through the twin's local copy: calls and the lane/warp special
// registers read the thread-local threadIdx, so those kernels store it for every thread.
bool reads_tls_thread(const Function& f) {
  for (const auto& in : f.body) {
    if (in.op == Opcode::call || in.op == Opcode::trap) return true;
    // wmma.load/store are per lane, not warp points: mma_ops' wmma_load/wmma_store find their
    // fragment elements by laneid(), from the thread-local threadIdx. Without it every lane
    // of a twin read and wrote the elements of whichever thread last stored it.
    if (in.op == Opcode::wmma_load || in.op == Opcode::wmma_store) return true;
    for (const auto& o : in.operands) {
      if (o.kind != Operand::Kind::special) continue;
      switch (o.special) {
        case SpecialReg::tid:
        case SpecialReg::ntid:
        case SpecialReg::ctaid:
        case SpecialReg::nctaid:
        case SpecialReg::clusterid:
        case SpecialReg::nclusterid:
          break;
        default:
          return true;
      }
    }
  }
  return false;
}

// Instructions whose result depends only on their operands (no memory but kernel parameters,
// no carry, no per-thread hidden state).
bool pure_op(const Instruction& in) {
  if (in.cc || in.guarded || in.dest_pair) return false;
  switch (in.op) {
    case Opcode::add:
    case Opcode::sub:
    case Opcode::mul:
    case Opcode::mad:
    case Opcode::shl:
    case Opcode::shr:
    case Opcode::and_:
    case Opcode::or_:
    case Opcode::xor_:
    case Opcode::not_:
    case Opcode::neg:
    case Opcode::mov:
    case Opcode::cvt:
    case Opcode::cvta:
    case Opcode::setp:
      return true;
    case Opcode::ld:
      return in.space == Space::param;  // a kernel's parameters are read-only
    default:
      return false;
  }
}

// Sources a recomputed value may read: constants, launch geometry, addresses of variables
// and parameters, and registers that are recomputed themselves.
bool pure_source(const Function& f, const Operand& o, const std::vector<bool>& remat) {
  switch (o.kind) {
    case Operand::Kind::reg:
      return o.reg < remat.size() && remat[o.reg];
    case Operand::Kind::imm_int:
    case Operand::Kind::imm_float:
      return true;
    case Operand::Kind::special:
      return o.special == SpecialReg::tid || o.special == SpecialReg::ntid ||
             o.special == SpecialReg::ctaid || o.special == SpecialReg::nctaid;
    case Operand::Kind::symbol:
      // Not a function's .local arrays: each thread has its own.
      return o.sym.kind == SymbolRef::Kind::param || o.sym.kind == SymbolRef::Kind::global ||
             (o.sym.kind == SymbolRef::Kind::local && o.sym.index < f.locals.size() &&
              f.locals[o.sym.index].space == Space::shared);
    case Operand::Kind::address:
      return !o.base_is_reg && o.sym.kind == SymbolRef::Kind::param;
    default:
      return false;
  }
}

}  // namespace

// The opening both kinds of twin share, up to the body. Without -fnon-call-exceptions, g++ may
// if-convert and vectorise the thread loops (a load that can throw cannot be made
// conditional). A fault still ends the launch: the signal handler's exception unwinds through
// the twin by its CFI, because the twin has nothing to clean up (no destructors, so no LSDA
// that would have to cover the faulting instruction); thread slots on the heap (large blocks)
// are then not freed. The launch's geometry becomes locals: the body reads it after stores
// through pointers, which could alias thread-local variables, so TLS reads would be repeated
// for every thread. `pragmas` go after the options push.
void open_twin(std::ostream& o, const SplitKernel& k, const std::string& twin,
               std::string_view pragmas) {
  o << "#pragma GCC push_options\n#pragma GCC optimize(\"no-non-call-exceptions\")\n" << pragmas;
  o << "static __attribute__((used)) void " << twin << "(" << k.params << ") {\n";
  o << k.prologue;
  o << "  const uint3 cudamux_bd = ::blockDim;\n"
       "  [[maybe_unused]] const uint3 blockDim = cudamux_bd;\n"
       "  [[maybe_unused]] const uint3 blockIdx = ::blockIdx;\n"
       "  [[maybe_unused]] const uint3 gridDim = ::gridDim;\n"
       "  [[maybe_unused]] const unsigned cudamux_n = cudamux_bd.x * cudamux_bd.y * "
       "cudamux_bd.z;\n"
       // The runtime refuses blocks of more than 1024 threads (plugins/mock/src/pool.cpp);
       // knowing it, g++ sees 32-bit thread-indexed offsets as affine (no wrap).
       "  if (cudamux_n > 1024u || cudamux_bd.x > 1024u || cudamux_bd.y > 1024u || cudamux_bd.z > "
       "1024u)\n    __builtin_unreachable();\n";
}

bool flattenable(const Function& f) {
  if (!f.is_entry || !f.has_body) return false;
  for (const auto& in : f.body) {
    // A thread's allocations would live on in the twin's frame until the block ends.
    if (in.op == Opcode::alloca || in.op == Opcode::stacksave || in.op == Opcode::stackrestore)
      return false;
  }
  return true;
}

// A kernel that reaches no barrier, collective or yield point runs each thread from start to
// exit, in linear order: exactly what the thunk's thread loop does with the kernel as written,
// but here the body is inlined into the loop with threadIdx a local instead of a TLS store per
// thread, and compiled without -fnon-call-exceptions (as split twins are: nothing to clean up,
// so a fault still unwinds by the CFI alone), so g++ can if-convert and vectorise across
// threadIdx.x.
std::string emit_flat(const SplitKernel& k, const std::string& twin) {
  const Function& f = *k.f;
  const std::size_t n_ins = f.body.size();
  const bool tls = reads_tls_thread(f);
  std::ostringstream o;
  // AMD Zen 1-3 (GCC's -march=native names them) microcode AVX2's masked stores (vpmaskmov,
  // one every ~10 cycles): there, a guarded store (`if (i < n) y[i] = ...`) if-converted into
  // a vectorised loop made SAXPY ~2x slower than the scalar loop (performance.md, "Flat twins").
  // Loops without guarded code still vectorise.
  open_twin(o, k, twin,
            "#if defined(__znver1__) || defined(__znver2__) || defined(__znver3__)\n"
            "#pragma GCC optimize(\"no-tree-loop-if-convert\")\n"
            "#endif\n");
  // One thread from start to exit: `ret`, `exit` and the traps' `return` end the thread.
  o << "  const auto cudamux_thread = [=](const uint3 cudamux_tid) __attribute__((always_inline)) "
       "{\n";
  // Calls, trap and %laneid/%warpid read the thread-local threadIdx (the callee, printf's and
  // assert's reports, the runtime).
  if (tls) o << "    ::threadIdx = cudamux_tid;\n    CUDAMUX_THREAD_STORED();\n";
  o << "    [[maybe_unused]] const uint3 threadIdx = cudamux_tid;\n";
  if (k.uses_carry) o << "    [[maybe_unused]] bool cudamux_carry = false;\n";
  for (std::size_t r = 0; r < f.registers.size(); ++r) {
    o << "    [[maybe_unused]] " << k.reg_storage[r] << " " << k.reg_names[r];
    if (f.registers[r].vec > 1) o << "[" << unsigned(f.registers[r].vec) << "]";
    o << "{};\n";
  }
  for (std::size_t l = 0; l < f.locals.size(); ++l) {
    if (f.locals[l].space == Space::shared) continue;
    o << "    [[maybe_unused]] alignas(" << k.local_align[l] << ") unsigned char "
      << k.local_names[l] << "[" << k.local_size[l] << "];\n";
  }
  for (std::size_t i = 0; i < n_ins; ++i) {
    for (auto l : k.labels_at[i]) o << "L_" << l << ":;\n";
    const auto& in = f.body[i];
    o << k.line(in.loc);
    if (in.guarded && in.guard_reg < k.reg_names.size())
      o << "if (" << (in.guard_negated ? "!" : "") << k.reg_names[in.guard_reg] << ") { "
        << k.stmts[i] << " }\n";
    else
      o << k.stmts[i] << "\n";
  }
  for (auto l : k.labels_at[n_ins]) o << "L_" << l << ":;\n";
  o << "  };\n";
  // Linear thread order, the innermost loop over threadIdx.x (the one g++ vectorises). When
  // no blockIdx * blockDim product reaches 2^31 - 4096 (every grid of fewer than 2^31 threads
  // per dimension), `blockIdx.c * blockDim.c + threadIdx.c` wraps neither as u32 nor as s32:
  // g++ learns it from the test and sees the usual thread-indexed addresses as affine (zero- or
  // sign-extended), so the loop vectorises. Larger grids run the kernel as written, per thread
  // with threadIdx in TLS, as the thunk's loop does (no second inlined copy of the body).
  o << "  if (blockIdx.x * cudamux_bd.x <= 0x7ffff000u && blockIdx.y * cudamux_bd.y <= "
       "0x7ffff000u && blockIdx.z * cudamux_bd.z <= 0x7ffff000u) {\n"
       "    for (unsigned z = 0; z < cudamux_bd.z; ++z)\n"
       "      for (unsigned y = 0; y < cudamux_bd.y; ++y)\n"
       "        for (unsigned x = 0; x < cudamux_bd.x; ++x)\n"
       "          cudamux_thread(uint3{x, y, z});\n"
       "    return;\n"
       "  }\n"
       "  for (unsigned z = 0; z < cudamux_bd.z; ++z)\n"
       "    for (unsigned y = 0; y < cudamux_bd.y; ++y)\n"
       "      for (unsigned x = 0; x < cudamux_bd.x; ++x) {\n"
       "        ::threadIdx = uint3{x, y, z};\n"
       "        CUDAMUX_THREAD_STORED();\n"
       "        "
    << k.kernel << "(" << k.args << ");\n"
    << "      }\n"
       "}\n"
       "#pragma GCC pop_options\n";
  return o.str();
}

namespace {

// Whether a thread can come back to instruction i without running an unguarded instruction
// marked in `wall` (i itself aside): a cycle of the CFG through i that avoids the walls.
bool on_cycle_avoiding(const Function& f, const Cfg& cfg, std::size_t i,
                       const std::vector<bool>& wall) {
  if (i >= cfg.block_of.size() || cfg.block_of[i] >= cfg.blocks.size()) return true;
  const auto blocks = [&](std::size_t from, std::size_t to) {
    for (std::size_t j = from; j < to; ++j)
      if (wall[j] && !f.body[j].guarded) return true;
    return false;
  };
  const std::uint32_t home = cfg.block_of[i];
  if (blocks(i + 1, cfg.blocks[home].end)) return false;
  std::vector<bool> seen(cfg.blocks.size(), false);
  std::vector<std::uint32_t> work(cfg.blocks[home].succs.begin(), cfg.blocks[home].succs.end());
  while (!work.empty()) {
    const std::uint32_t b = work.back();
    work.pop_back();
    if (b >= cfg.blocks.size() || seen[b]) continue;
    seen[b] = true;
    if (b == home) {
      if (!blocks(cfg.blocks[b].first, i)) return true;
      continue;
    }
    if (blocks(cfg.blocks[b].first, cfg.blocks[b].end)) continue;
    work.insert(work.end(), cfg.blocks[b].succs.begin(), cfg.blocks[b].succs.end());
  }
  return false;
}

}  // namespace

std::string emit_split(const SplitKernel& k, const std::string& twin) {
  const Function& f = *k.f;
  const Cfg cfg = build_cfg(f);
  const Liveness live = compute_liveness(f, cfg);
  const std::size_t nregs = f.registers.size();
  const std::size_t n_ins = f.body.size();

  // Which yield points are stops. mbarrier waits and spin-wait polls always are. A nanosleep
  // is one only when a thread can come back to it without passing another stop (a CTA
  // barrier, a warp point, a wait or poll): libcu++'s cuda::barrier wait has two nanosleeps of
  // back-off in the loop around its test, which only cost regions (compile time: 1.5 s of g++
  // for aw_barrier's twin with them, 0.5 s without), since every turn of that loop stops at the
  // test already. A nanosleep that is not a stop does nothing in the twin (the ISA allows a
  // sleep of 0 ns; the block's other threads could not run while this one slept). Fibers keep
  // every yield point.
  std::vector<bool> yield_stop(n_ins, false), wall(n_ins, false);
  for (std::size_t i = 0; i < n_ins; ++i) {
    const auto& in = f.body[i];
    const bool y = i < k.yield_before.size() && k.yield_before[i];
    yield_stop[i] = y && in.op != Opcode::nanosleep && !is_cta_barrier(in) && !is_warp_point(in);
    wall[i] = is_cta_barrier(in) || is_warp_point(in) || yield_stop[i];
  }
  for (std::size_t i = 0; i < n_ins; ++i)
    if (i < k.yield_before.size() && k.yield_before[i] && f.body[i].op == Opcode::nanosleep)
      yield_stop[i] = on_cycle_avoiding(f, cfg, i, wall);

  // Stops (CTA barriers and warp points), numbered from 1 (0: the kernel's start), and the
  // registers live after each, which the thread keeps in its slot while it waits there.
  std::vector<std::uint32_t> stop_of(n_ins, 0);
  std::vector<std::size_t> stop_at(1, 0);  // stop number -> instruction index
  std::vector<std::vector<std::uint32_t>> kept(1), live_regs(1);
  std::vector<bool> slot(nregs, false);
  bool warp = false;
  std::vector<std::uint32_t> uses, defs;
  const auto yield_at = [&](std::size_t i) { return yield_stop[i]; };
  for (std::size_t i = 0; i < n_ins; ++i) {
    const bool y = yield_at(i);
    const bool w = is_warp_point(f.body[i]) || y;
    if (!is_cta_barrier(f.body[i]) && !w) continue;
    warp = warp || w;
    stop_of[i] = static_cast<std::uint32_t>(kept.size());
    stop_at.push_back(i);
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
    if (y) {
      // A yield stop comes before its instruction, which runs when the thread resumes: what
      // it reads is live too (what it writes is simply kept once more).
      uses_and_defs(f.body[i], uses, defs);
      for (auto u : uses)
        if (u < nregs) after[u] = true;
      if (f.body[i].guarded && f.body[i].guard_reg < nregs) after[f.body[i].guard_reg] = true;
    }
    std::vector<std::uint32_t> regs;
    for (std::size_t r = 0; r < nregs; ++r)
      if (after[r]) {
        regs.push_back(static_cast<std::uint32_t>(r));
        slot[r] = true;
      }
    live_regs.push_back(regs);
    kept.push_back(std::move(regs));
  }

  // Registers recomputed at a resume point rather than kept: defined once, by an unguarded
  // pure instruction from thread-independent or threadIdx-derived sources (addresses, indices,
  // parameters). g++ hoists their uniform parts out of the thread loops and sees the
  // thread-indexed addresses as affine, so the loops can vectorise.
  std::vector<bool> remat(nregs, false);
  std::vector<std::vector<std::uint32_t>> closure(nregs);  // defining instructions, in order
  {
    std::vector<std::uint32_t> ndefs(nregs, 0);
    for (const auto& in : f.body) {
      uses_and_defs(in, uses, defs);
      for (auto d : defs)
        if (d < nregs) ++ndefs[d];
    }
    for (std::size_t i = 0; i < n_ins; ++i) {
      const auto& in = f.body[i];
      if (!pure_op(in) || in.operands.empty() || in.operands[0].kind != Operand::Kind::reg)
        continue;
      const std::uint32_t d = in.operands[0].reg;
      if (d >= nregs || ndefs[d] != 1 || f.registers[d].vec > 1) continue;
      bool ok = true;
      std::vector<std::uint32_t> c;
      for (std::size_t x = 1; x < in.operands.size() && ok; ++x) {
        ok = pure_source(f, in.operands[x], remat);
        if (ok && in.operands[x].kind == Operand::Kind::reg)
          c.insert(c.end(), closure[in.operands[x].reg].begin(), closure[in.operands[x].reg].end());
      }
      if (!ok) continue;
      c.push_back(static_cast<std::uint32_t>(i));
      std::sort(c.begin(), c.end());
      c.erase(std::unique(c.begin(), c.end()), c.end());
      if (c.size() > 8) continue;  // keep the recomputation cheap
      remat[d] = true;
      closure[d] = std::move(c);
    }
    for (auto& regs : kept)
      regs.erase(std::remove_if(regs.begin(), regs.end(), [&](auto r) { return remat[r]; }),
                 regs.end());
    std::fill(slot.begin(), slot.end(), false);
    for (const auto& regs : kept)
      for (auto r : regs) slot[r] = true;
  }
  // What stop b recomputes on resuming: the union of the closures of the registers live there.
  std::vector<std::vector<std::uint32_t>> recompute(kept.size());
  for (std::size_t b = 1; b < kept.size(); ++b) {
    const auto& live_after = live_regs[b];
    std::vector<std::uint32_t> c;
    for (auto r : live_after)
      if (remat[r]) c.insert(c.end(), closure[r].begin(), closure[r].end());
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    recompute[b] = std::move(c);
  }

  // Regions: the instructions a thread can run from a resume point (the start, or behind a
  // stop) to its next stop or exit, found on the CFG. Each becomes its own thread loop.
  const auto region = [&](std::size_t start) {
    std::vector<bool> mark(n_ins, false);
    if (start >= n_ins) return mark;
    std::vector<bool> entered(cfg.blocks.size(), false);
    std::vector<std::pair<std::uint32_t, std::size_t>> work{{cfg.block_of[start], start}};
    while (!work.empty()) {
      const auto [b, from] = work.back();
      work.pop_back();
      bool stopped = false;
      for (std::size_t i = from; i < cfg.blocks[b].end; ++i) {
        mark[i] = true;
        if (stop_of[i] != 0) {
          stopped = true;
          break;
        }
      }
      if (stopped) continue;
      for (auto s : cfg.blocks[b].succs)
        if (!entered[s]) {
          entered[s] = true;
          work.emplace_back(s, cfg.blocks[s].first);
        }
    }
    return mark;
  };
  const bool tls = reads_tls_thread(f);

  // The opening of the twin, up to the regions. Per-thread state, structure of arrays (one
  // array per kept register, [register][thread]): the resume point, what the thread waits for
  // (1: a warp point, 2: a CTA barrier), the registers some stop keeps, the .local arrays, a
  // warp point's deposit. An outlined twin (below) computes the kept registers' offsets in a
  // loop over a table and each region makes the pointers it uses: one local per kept register
  // in the twin's own frame (CUB's onesweep kernel keeps ~1,500), each copied into every
  // region that names it, made that frame a 200 KB function g++ took most of a minute on.
  std::vector<std::size_t> slot_index(nregs, 0);
  std::size_t n_slots = 0;
  for (std::size_t r = 0; r < nregs; ++r)
    if (slot[r]) slot_index[r] = n_slots++;
  const auto slot_type = [&](std::size_t r) {
    std::string ty = k.reg_storage[r];
    if (f.registers[r].vec > 1) ty += "[" + std::to_string(unsigned(f.registers[r].vec)) + "]";
    return ty;
  };
  const auto emit_opening = [&](std::ostringstream& o, bool outlined) {
    if (warp) o << kWarpHelpers;
    open_twin(o, k, twin, "");
    o << "  unsigned long cudamux_size = 0;\n"
         "  const auto cudamux_take = [&](unsigned long bytes, unsigned long align) {\n"
         "    cudamux_size = (cudamux_size + align - 1) / align * align;\n"
         "    const unsigned long at = cudamux_size;\n"
         "    cudamux_size += bytes;\n"
         "    return at;\n"
         "  };\n"
         "  const unsigned long cudamux_o_pc = cudamux_take(4ul * cudamux_n, 64);\n"
         "  const unsigned long cudamux_o_wait = cudamux_take(4ul * cudamux_n, 64);\n";
    if (warp)
      o << "  const unsigned long cudamux_o_w = cudamux_take(sizeof(::cudamux_split::W) * "
           "cudamux_n, 64);\n";
    for (std::size_t r = 0; r < nregs; ++r)
      if (slot[r]) {
        o << "  using cudamux_t_" << k.reg_names[r] << " = " << slot_type(r) << ";\n";
        if (!outlined)
          o << "  const unsigned long cudamux_o_" << k.reg_names[r]
            << " = cudamux_take(sizeof(cudamux_t_" << k.reg_names[r] << ") * cudamux_n, 64);\n";
      }
    if (outlined && n_slots != 0) {
      o << "  static constexpr unsigned long cudamux_slot_bytes[" << n_slots << "] = {";
      for (std::size_t r = 0; r < nregs; ++r)
        if (slot[r])
          o << (slot_index[r] != 0 ? ", " : "") << "sizeof(cudamux_t_" << k.reg_names[r] << ")";
      o << "};\n"
           "  unsigned long cudamux_slot_at["
        << n_slots
        << "];\n"
           "  for (unsigned long i = 0; i < sizeof cudamux_slot_bytes / sizeof "
           "*cudamux_slot_bytes; "
           "++i)\n"
           "    cudamux_slot_at[i] = cudamux_take(cudamux_slot_bytes[i] * cudamux_n, 64);\n";
    }
    for (std::size_t l = 0; l < f.locals.size(); ++l)
      if (f.locals[l].space != Space::shared && f.locals[l].space != Space::param) {
        const std::uint64_t a = std::max<std::uint64_t>(k.local_align[l], 1);
        const std::uint64_t stride = (k.local_size[l] + a - 1) / a * a;
        o << "  const unsigned long cudamux_o_" << k.local_names[l] << " = cudamux_take(" << stride
          << "ul * cudamux_n, " << std::max<std::uint64_t>(a, 64) << ");\n";
      }
    // Small states (the usual case) live on the worker's stack; large ones on the heap.
    o << "  const bool cudamux_heap = cudamux_size > 65536ul;\n"
         "  void* const cudamux_mem = cudamux_heap ? malloc(cudamux_size + 64) : "
         "__builtin_alloca_with_align(cudamux_size + 64, 512);\n"
         "  if (!cudamux_mem) { ::cudamux::ptx::trap(\"out of memory for the block's thread "
         "slots\"); return; }\n"
         "  char* const cudamux_base = reinterpret_cast<char*>((reinterpret_cast<unsigned long>("
         "cudamux_mem) + 63) / 64 * 64);\n"
         "  u32* const cudamux_pc = reinterpret_cast<u32*>(cudamux_base + cudamux_o_pc);\n"
         "  u32* const cudamux_wait = reinterpret_cast<u32*>(cudamux_base + cudamux_o_wait);\n";
    if (warp)
      o << "  ::cudamux_split::W* const cudamux_wd = "
           "reinterpret_cast<::cudamux_split::W*>(cudamux_base + cudamux_o_w);\n";
    if (!outlined)
      for (std::size_t r = 0; r < nregs; ++r)
        if (slot[r])
          o << "  cudamux_t_" << k.reg_names[r] << "* const cudamux_k_" << k.reg_names[r]
            << " = reinterpret_cast<cudamux_t_" << k.reg_names[r] << "*>(cudamux_base + cudamux_o_"
            << k.reg_names[r] << ");\n";
    o << "  __builtin_memset(cudamux_pc, 0, 4ul * cudamux_n);\n"
         "  __builtin_memset(cudamux_wait, 0, 4ul * cudamux_n);\n"
         "  unsigned cudamux_live = cudamux_n;\n"
         "  // Stops reached in a round: all equal exactly when their AND equals their OR.\n"
         "  u32 cudamux_and = 0xffffffffu, cudamux_or = 0;\n"
         "  // bar.red: arrivals add their predicates; the threads released read the totals.\n"
         "  [[maybe_unused]] u32 cudamux_red_popc = 0, cudamux_acc_popc = 0;\n"
         "  [[maybe_unused]] bool cudamux_red_and = true, cudamux_red_or = false;\n"
         "  [[maybe_unused]] bool cudamux_acc_and = true, cudamux_acc_or = false;\n"
         "  // Whether a pass got anywhere: a thread resumed from other than a yield stop, or an\n"
         "  // mbarrier wait succeeded (see the pass's end).\n"
         "  [[maybe_unused]] bool cudamux_progress = false;\n";
  };

  // One lambda per resume point: runs thread cudamux_t from there to its next stop or exit.
  std::vector<std::uint32_t> single_end(kept.size(), 0);
  std::vector<std::string> region_text;
  std::vector<std::vector<std::uint32_t>> region_slots;  // kept registers each region names
  std::size_t region_bytes = 0;
  for (std::size_t b = 0; b < kept.size(); ++b) {
    const std::size_t start = b == 0 ? 0 : stop_at[b] + 1;
    const std::vector<bool> mark = region(start);
    {
      // Where a thread of this region can end: one stop and never an exit lets the uniform
      // loop skip the per-thread resume points (they are all that stop).
      std::uint32_t end = 0;
      bool several = start >= n_ins || !k.labels_at[n_ins].empty() || mark[n_ins - 1];
      for (std::size_t i = 0; i < n_ins && !several; ++i) {
        if (!mark[i]) continue;
        const auto op = f.body[i].op;
        if (op == Opcode::ret || op == Opcode::exit || op == Opcode::trap) several = true;
        if (const auto c = stop_of[i]) {
          if (end != 0 && end != c) several = true;
          end = c;
        }
      }
      single_end[b] = several ? 0 : end;
    }
    // Registers the region may write: a kept register in the slot on entry and never written
    // still has its value there, so its stops need not store it again (nor the entry load it).
    // Registers the region names: only those are declared, loaded from the slots and
    // recomputed in it. Every region declaring all of the kernel's registers and loading all
    // that its stop keeps made CUB's onesweep kernel (8,035 registers, 621 stops) a
    // 5-million-line twin that g++ could not compile in minutes (performance.md).
    std::vector<bool> written(nregs, false), named(nregs, false);
    for (std::size_t i = 0; i < n_ins; ++i) {
      // The stop it resumes from writes its results (shfl, vote, bar.red) at the entry.
      if (!mark[i] && !(b != 0 && i == stop_at[b])) continue;
      uses_and_defs(f.body[i], uses, defs);
      for (auto d : defs)
        if (d < nregs) written[d] = named[d] = true;
      // A warp point's or barrier's operands were deposited before the stop; a yield stop's
      // instruction runs again on resuming and reads them.
      if (mark[i] || yield_at(i))
        for (auto u : uses)
          if (u < nregs) named[u] = true;
    }
    // Kept registers the region reads or writes are loaded (a guarded or partial write leaves
    // the rest of the value as it was); the others stay in the slot untouched.
    std::vector<bool> in_slot(nregs, false);
    std::vector<std::uint32_t> loaded;
    for (auto r : kept[b]) {
      in_slot[r] = true;
      if (named[r]) loaded.push_back(r);
    }
    // Recomputed registers the region needs, and what those read in turn (the closure is in
    // program order: a definition comes before its readers).
    std::vector<std::uint32_t> recomputed;
    for (auto it = recompute[b].rbegin(); it != recompute[b].rend(); ++it) {
      uses_and_defs(f.body[*it], uses, defs);
      bool needed = false;
      for (auto d : defs) needed = needed || (d < nregs && named[d]);
      if (!needed) continue;
      recomputed.insert(recomputed.begin(), *it);
      for (auto u : uses)
        if (u < nregs) named[u] = true;
    }
    // A stop the region reaches stores what that stop keeps and the slot may not hold: a
    // register the region neither loads nor writes is stored as declared (zero), as before.
    std::vector<bool> slot_used(nregs, false);
    for (auto r : loaded) slot_used[r] = true;
    for (std::size_t i = 0; i < n_ins; ++i)
      if (mark[i] && stop_of[i] != 0)
        for (auto r : kept[stop_of[i]])
          if (!in_slot[r] || written[r]) named[r] = slot_used[r] = true;
    std::vector<std::uint32_t> slots_named;
    for (std::size_t r = 0; r < nregs; ++r)
      if (slot_used[r]) slots_named.push_back(static_cast<std::uint32_t>(r));
    region_slots.push_back(std::move(slots_named));
    std::ostringstream
        ro;  // the region's body; its opening is written once the twin's size is known
    if (tls) ro << "    ::threadIdx = cudamux_tid;\n    CUDAMUX_THREAD_STORED();\n";
    ro << "    [[maybe_unused]] const uint3 threadIdx = cudamux_tid;\n";
    if (k.uses_carry) ro << "    [[maybe_unused]] bool cudamux_carry = false;\n";
    for (std::size_t r = 0; r < nregs; ++r) {
      if (!named[r]) continue;
      ro << "    [[maybe_unused]] " << k.reg_storage[r] << " " << k.reg_names[r];
      if (f.registers[r].vec > 1) ro << "[" << unsigned(f.registers[r].vec) << "]";
      ro << "{};\n";
    }
    for (std::size_t l = 0; l < f.locals.size(); ++l) {
      const auto& v = f.locals[l];
      if (v.space == Space::shared) continue;
      if (v.space == Space::param) {  // call sequences: never live across a stop
        ro << "    alignas(" << k.local_align[l] << ") unsigned char " << k.local_names[l] << "["
           << k.local_size[l] << "];\n";
      } else {
        const std::uint64_t a = std::max<std::uint64_t>(k.local_align[l], 1);
        const std::uint64_t stride = (k.local_size[l] + a - 1) / a * a;
        ro << "    [[maybe_unused]] auto& " << k.local_names[l]
           << " = *reinterpret_cast<unsigned char(*)[" << k.local_size[l]
           << "]>(cudamux_base + cudamux_o_" << k.local_names[l] << " + " << stride
           << "ul * cudamux_t);\n";
      }
    }
    if (b != 0) {
      // Resume: restore what the stop kept, write its results.
      for (auto r : loaded) {
        if (f.registers[r].vec > 1)
          ro << "    __builtin_memcpy(&" << k.reg_names[r] << ", &cudamux_k_" << k.reg_names[r]
             << "[cudamux_t], sizeof " << k.reg_names[r] << ");\n";
        else
          ro << "    " << k.reg_names[r] << " = cudamux_k_" << k.reg_names[r] << "[cudamux_t];\n";
      }
      for (auto i : recomputed) ro << "    " << k.stmts[i] << "\n";
      const auto& in = f.body[stop_at[b]];
      if (yield_at(stop_at[b])) {
        // The instruction the thread yielded before (its guard held: it stopped under it).
        if (in.op != Opcode::nanosleep) ro << "    " << k.stmts[stop_at[b]] << "\n";
        // An mbarrier wait that succeeds is the block's progress; one that fails loops back to
        // this stop (nvcc's wait loops), as a spin-wait's poll does.
        if (mbarrier_wait(in))
          ro << "    if (" << k.rd(in.operands[0], Type::pred) << ") cudamux_progress = true;\n";
      } else if (is_cta_barrier(in)) {
        // bar.red's result is the reduction over the arrivals just released.
        if (is_reduction(in)) {
          if (in.boolop == BoolOp::popc)
            ro << "    " << k.wr(in.operands[0], Type::u32, "cudamux_red_popc") << "\n";
          else
            ro << "    "
               << k.wr(in.operands[0], Type::pred,
                       in.boolop == BoolOp::and_ ? "cudamux_red_and" : "cudamux_red_or")
               << "\n";
        }
      } else {
        const std::string res = "static_cast<u32>(cudamux_wd[cudamux_t].res)";
        const std::string wp = "cudamux_wd[cudamux_t].p";
        std::size_t first = 0;
        switch (warp_kind(in)) {
          case 0: {
            const auto dst = destinations(in, in.sync ? 4 : 3, first);
            if (!dst.empty()) ro << "    " << k.wr(*dst[0], Type::u32, res) << "\n";
            if (dst.size() > 1) ro << "    " << k.wr(*dst[1], Type::pred, wp) << "\n";
            break;
          }
          case 1:
          case 2:
          case 3:
            ro << "    " << k.wr(in.operands[0], Type::pred, "cudamux_wd[cudamux_t].res != 0")
               << "\n";
            break;
          case 4:
          case 7:
            ro << "    " << k.wr(in.operands[0], Type::u32, res) << "\n";
            break;
          case 5:
          case 6: {
            const auto dst = destinations(in, 2, first);
            if (!dst.empty()) ro << "    " << k.wr(*dst[0], Type::u32, res) << "\n";
            if (dst.size() > 1) ro << "    " << k.wr(*dst[1], Type::pred, wp) << "\n";
            break;
          }
          case 9:
            ro << "    { const u32* out_ = cudamux_wd[cudamux_t].out; (void)out_; "
               << matrix_parts(in, &k).scatter << "}\n";
            break;
          default:
            if (warp_kind(in) >= 16) ro << "    " << k.wr(in.operands[0], in.types[0], res) << "\n";
            break;
        }
      }
    }
    if (start < n_ins) ro << "    goto cudamux_start;\n";
    for (std::size_t i = 0; i < n_ins; ++i) {
      if (!mark[i]) continue;
      for (auto l : k.labels_at[i]) ro << "L_" << l << ":;\n";
      if (i == start) ro << "cudamux_start:;\n";
      const auto& in = f.body[i];
      std::string s;
      if (const auto c = stop_of[i]) {
        s = "{ ";
        if (is_cta_barrier(in)) {
          if (is_reduction(in)) {
            const std::string p = k.rd(in.operands.back(), Type::pred);
            s += "{ const bool p_ = " + p +
                 "; cudamux_acc_popc += p_ ? 1u : 0u; cudamux_acc_and = cudamux_acc_and && p_; "
                 "cudamux_acc_or = cudamux_acc_or || p_; } ";
          }
          // Only warp passes tell threads at a CTA barrier from those a warp released.
          if (warp) s += "cudamux_wait[cudamux_t] = 2u; ";
        } else if (yield_at(i)) {
          // A yield stop: a warp point of the lane alone (op 10), resolved after the pass.
          s += "cudamux_wd[cudamux_t].mask = 1u << (cudamux_t & 31u); cudamux_wd[cudamux_t].op = "
               "10u; cudamux_wait[cudamux_t] = 1u; ";
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
            s += "{ bool p_ = false; cudamux_wd[cudamux_t].j = ::cudamux_split::shfl_lane<" +
                 std::to_string(mode) + ">(cudamux_t & 31u, " + op(first + 1) + ", " +
                 op(first + 2) + ", p_); cudamux_wd[cudamux_t].p = p_; } ";
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
            s += "{ u32* in_ = cudamux_wd[cudamux_t].in; " + mp.gather +
                 "} cudamux_wd[cudamux_t].fn = " + mp.lane_fn + "; ";
          } else if (kind >= 16) {  // redux.sync d, a, membermask
            v = k.rd(in.operands[1], Type::u32);
            if (in.operands.size() > 2) mask = k.rd(in.operands[2], Type::u32);
          }
          s += "cudamux_wd[cudamux_t].v = static_cast<u64>(" + v +
               "); cudamux_wd[cudamux_t].mask = " + mask +
               "; cudamux_wd[cudamux_t].op = " + std::to_string(kind) +
               "u; cudamux_wait[cudamux_t] = 1u; ";
        }
        for (auto r : kept[c]) {
          if (in_slot[r] && !written[r]) continue;
          if (f.registers[r].vec > 1)
            s += "__builtin_memcpy(&cudamux_k_" + k.reg_names[r] + "[cudamux_t], &" +
                 k.reg_names[r] + ", sizeof " + k.reg_names[r] + "); ";
          else
            s += "cudamux_k_" + k.reg_names[r] + "[cudamux_t] = " + k.reg_names[r] + "; ";
        }
        s += "cudamux_c = " + std::to_string(c) + "u; return; }";
      } else if (in.op == Opcode::ret || in.op == Opcode::exit) {
        s = "goto cudamux_exit;";
      } else if (in.op == Opcode::nanosleep) {
        s = ";";  // not a stop (above): no sleep while the block's other threads cannot run
      } else {
        s = k.stmts[i];
      }
      ro << k.line(in.loc);
      if (in.guarded && in.guard_reg < k.reg_names.size())
        ro << "if (" << (in.guard_negated ? "!" : "") << k.reg_names[in.guard_reg] << ") { " << s
           << " }\n";
      else
        ro << s << "\n";
    }
    for (auto l : k.labels_at[n_ins]) ro << "L_" << l << ":;\n";
    ro << "  cudamux_exit:\n"
          "    cudamux_c = 0xffffffffu;\n"
          "  };\n";
    region_bytes += static_cast<std::size_t>(ro.tellp());
    region_text.push_back(std::move(ro).str());
  }
  // A twin whose regions are large in all (kernels unrolled around many warp points: CUB's
  // onesweep radix sort has 621 stops, a wmma GEMM 2,181) keeps each region a function of its
  // own and runs every round through the per-thread dispatch: g++'s time grows faster than
  // the size of one function, and inlining every region into its uniform loop (and once more
  // out of line) took minutes there (performance.md). Smaller twins (those of the split tests
  // and benchmarks are a few KB to ~100 KB) keep the inlined uniform loops, which g++
  // vectorises.
  if (region_bytes > k.max_split_region_bytes) return {};
  const bool outlined = region_bytes > k.outline_regions_above;
  std::ostringstream o;
  emit_opening(o, outlined);
  for (std::size_t b = 0; b < kept.size(); ++b) {
    o << "  const auto cudamux_region_" << b
      << " = [=, &cudamux_red_popc, &cudamux_red_and, &cudamux_red_or, &cudamux_acc_popc, "
         "&cudamux_acc_and, &cudamux_acc_or, &cudamux_progress"
      << (outlined && n_slots != 0 ? ", &cudamux_slot_at" : "")
      << "](const unsigned cudamux_t, const uint3 cudamux_tid, u32& cudamux_c) __attribute__(("
      << (outlined ? "noinline" : "always_inline") << ")) {\n";
    if (outlined)
      for (auto r : region_slots[b])
        o << "    cudamux_t_" << k.reg_names[r] << "* const cudamux_k_" << k.reg_names[r]
          << " = reinterpret_cast<cudamux_t_" << k.reg_names[r]
          << "*>(cudamux_base + cudamux_slot_at[" << slot_index[r] << "]);\n";
    o << region_text[b];
    if (outlined) {
      o << "  const auto& cudamux_slow_" << b << " = cudamux_region_" << b << ";\n";
    } else {
      // The generic rounds call the region out of line: one copy of it is inlined in the
      // uniform loop, where it matters.
      o << "  const auto cudamux_slow_" << b
        << " = [=](const unsigned cudamux_t, const uint3 cudamux_tid, u32& cudamux_c) "
           "__attribute__((noinline)) { cudamux_region_"
        << b << "(cudamux_t, cudamux_tid, cudamux_c); };\n";
    }
  }
  region_text.clear();

  // What a thread's run ends with: its resume point (or exit), and whether the round stays
  // uniform.
  const auto done = [](const std::string& call) {
    return "{ u32 c_ = 0xffffffffu; " + call.substr(0, call.size() - 1) +
           ", c_); cudamux_pc[t] = c_; if (c_ == 0xffffffffu) { --cudamux_live; } else { "
           "cudamux_and "
           "&= c_; cudamux_or |= c_; } }";
  };
  // Rounds. When no thread has exited and all resume at the same point (the usual case:
  // uniform barriers), the round is that region's loop over the threads, without dispatch or
  // checks. Otherwise (blocks where some threads returned early, divergent barriers) each
  // thread runs its region out of line, from its stored resume point: every round that
  // leads there stored them (a thread exits only from a region with several ends).
  // Resuming from anything but a yield stop (the start, a barrier, a warp point) is progress.
  const auto progress_from = [&](std::size_t b) {
    return b == 0 || !yield_at(stop_at[b]) ? "cudamux_progress = true; " : "";
  };
  o << "  bool cudamux_uniform = true;\n"
       "  u32 cudamux_upc = 0;\n"
       "  while (cudamux_live != 0) {\n"
       "    cudamux_and = 0xffffffffu;\n"
       "    cudamux_or = 0;\n"
       "    cudamux_progress = false;\n"
       "    bool cudamux_full = true;  // every live thread ran in this round\n"
    // Outlined twins have no uniform loops: every round takes the dispatch below.
    << (outlined ? "    if (false) {\n"
                 : "    if (cudamux_uniform && cudamux_live == cudamux_n) {\n")
    << "      switch (cudamux_upc) {\n";
  for (std::size_t b = 0; b < (outlined ? 0 : kept.size()); ++b) {
    // Threads in linear order as nested loops: the innermost one, over threadIdx.x, is the
    // one g++ vectorises.
    const auto loops = [](const std::string& body) {
      return "            for (unsigned z = 0; z < cudamux_bd.z; ++z)\n"
             "              for (unsigned y = 0; y < cudamux_bd.y; ++y) {\n"
             "                const unsigned tb = (z * cudamux_bd.y + y) * cudamux_bd.x;\n"
             "                for (unsigned x = 0; x < cudamux_bd.x; ++x) {\n"
             "                  const unsigned t = tb + x;\n"
             "                  " +
             body +
             "\n"
             "                }\n"
             "              }\n";
    };
    std::string run;
    if (const auto c = single_end[b]) {
      // Every thread ends at stop c: no resume point to store, the round's summary is known.
      run = "{ u32 c_; cudamux_region_" + std::to_string(b) + "(t, uint3{x, y, z}, c_); }";
    } else {
      run = done("cudamux_region_" + std::to_string(b) + "(t, uint3{x, y, z})");
    }
    o << "        case " << b << ":\n" << loops(run);
    if (const auto c = single_end[b]) o << "          cudamux_and = cudamux_or = " << c << "u;\n";
    o << "          " << progress_from(b) << "break;\n";
  }
  o << "        default:\n"
       "          __builtin_unreachable();\n"
       "      }\n"
       "    } else {\n"
       "      unsigned x = 0, y = 0, z = 0;\n"
       "      for (unsigned t = 0; t < cudamux_n; ++t) {\n"
       "        if (cudamux_pc[t] != 0xffffffffu) {\n"
       "          if (cudamux_wait[t] != 0) {\n"
       "            cudamux_full = false;\n"
       "          } else {\n"
       "            switch (cudamux_pc[t]) {\n";
  for (std::size_t b = 0; b < kept.size(); ++b)
    o << "              case " << b << ":\n                " << progress_from(b)
      << done("cudamux_slow_" + std::to_string(b) + "(t, uint3{x, y, z})")
      << "\n                break;\n";
  o << "              default:\n"
       "                __builtin_unreachable();\n"
       "            }\n"
       "          }\n"
       "        }\n"
       "        if (++x == cudamux_bd.x) {\n"
       "          x = 0;\n"
       "          if (++y == cudamux_bd.y) {\n"
       "            y = 0;\n"
       "            ++z;\n"
       "          }\n"
       "        }\n"
       "      }\n"
       "    }\n"
       "    // The next round is uniform when every live thread ran and stopped at one place.\n"
       "    cudamux_uniform = cudamux_full && cudamux_and == cudamux_or;\n"
       "    cudamux_upc = cudamux_or;\n";
  if (warp) {
    // Warps whose lanes wait at warp points resolve first (those lanes go on in the next
    // pass); exited lanes and lanes waiting at a CTA barrier do not take part.
    o << "    bool cudamux_warped = false, cudamux_spun = false;\n"
         "    for (unsigned wb = 0; wb < cudamux_n; wb += 32) {\n"
         "      ::cudamux_split::W cudamux_none{};\n"
         "      ::cudamux_split::W* ws[32];\n"
         "      u32 in = 0;\n"
         "      for (unsigned l = 0; l < 32; ++l) {\n"
         "        const unsigned t = wb + l;\n"
         "        ws[l] = t < cudamux_n ? &cudamux_wd[t] : &cudamux_none;\n"
         "        if (t < cudamux_n && cudamux_wait[t] == 1u) in |= 1u << l;\n"
         "      }\n"
         "      if (in == 0) continue;\n"
         "      cudamux_warped = true;\n"
         "      for (unsigned l = 0; l < 32; ++l)\n"
         "        if (((in >> l) & 1u) && ws[l]->op == 10u) cudamux_spun = true;\n"
         "      ::cudamux_split::resolve(ws, in);\n"
         "      for (unsigned l = 0; l < 32; ++l)\n"
         "        if ((in >> l) & 1u) cudamux_wait[wb + l] = 0;\n"
         "    }\n"
         // A thread spun at a yield point and the pass did nothing else (only polls ran, no
         // mbarrier wait succeeded): the awaited write can only come from another block (a
         // grid sync, a flag, an mbarrier in global memory), so let other blocks' OS threads
         // run, as a fiber's yield does when it is alone in its block's ready queue. The
         // runtime's yield also ends the block when another block failed the launch, as the
         // fibers' scheduler does. A pass that made progress goes on without a system call.
         "    if (cudamux_spun && !cudamux_progress) ::cudamux::ptx::yield();\n"
         "    if (cudamux_warped) continue;\n";
  }
  // Every live thread waits at a CTA barrier: release the block.
  if (warp) o << "    __builtin_memset(cudamux_wait, 0, 4ul * cudamux_n);\n";
  o << "    cudamux_red_popc = cudamux_acc_popc;\n"
       "    cudamux_red_and = cudamux_acc_and;\n"
       "    cudamux_red_or = cudamux_acc_or;\n"
       "    cudamux_acc_popc = 0;\n"
       "    cudamux_acc_and = true;\n"
       "    cudamux_acc_or = false;\n"
       "  }\n"
       "  if (cudamux_heap) free(cudamux_mem);\n"
       "}\n"
       "#pragma GCC pop_options\n";
  return o.str();
}

}  // namespace cudamux::ptx::detail
