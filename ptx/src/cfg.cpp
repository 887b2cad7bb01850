// Passes over the IR: basic blocks and edges, register liveness (iterative backward dataflow)
// and what each function reaches through its call graph.
#include "cudamux/ptx/cfg.hpp"

#include <algorithm>

namespace cudamux::ptx {
namespace {

// A block-wide rendezvous: the mock's emitter splits kernels here (bar.arrive does not wait).
bool is_cta_barrier(const Instruction& in) {
  if (in.op == Opcode::bar_red) return true;
  if (in.op == Opcode::bar || in.op == Opcode::barrier) return in.mode != Mode::arrive;
  return false;
}

bool is_warp_collective(Opcode op) {
  switch (op) {
    case Opcode::shfl:
    case Opcode::vote:
    case Opcode::match:
    case Opcode::redux:
    case Opcode::bar_warp_sync:
    case Opcode::activemask:
    case Opcode::elect:
    case Opcode::wmma_load:
    case Opcode::wmma_store:
    case Opcode::wmma_mma:
    case Opcode::mma:
    case Opcode::mma_sp:
    case Opcode::wgmma:
    case Opcode::ldmatrix:
    case Opcode::stmatrix:
    case Opcode::movmatrix:
      return true;
    default:
      return false;
  }
}

// Opcodes whose first operand, even a register, is read (no destination operand).
bool has_no_destination(Opcode op) {
  switch (op) {
    case Opcode::bar:
    case Opcode::barrier:
    case Opcode::bar_warp_sync:
    case Opcode::bra:
    case Opcode::brx_idx:
    case Opcode::ret:
    case Opcode::exit:
    case Opcode::membar:
    case Opcode::fence:
    case Opcode::nanosleep:
    case Opcode::trap:
    case Opcode::brkpt:
    case Opcode::pmevent:
    case Opcode::setmaxnreg:
    case Opcode::griddepcontrol:
    case Opcode::stackrestore:
    case Opcode::prefetch:
    case Opcode::prefetchu:
    case Opcode::st:
    case Opcode::red:
    case Opcode::sust:
    case Opcode::sured:
    case Opcode::wmma_store:
    case Opcode::stmatrix:
    case Opcode::cp_async:
    case Opcode::cp_async_commit_group:
    case Opcode::cp_async_wait_group:
    case Opcode::cp_async_wait_all:
    case Opcode::cp_async_bulk:
    case Opcode::cp_reduce_async_bulk:
      return true;
    default:
      return false;
  }
}

void collect_regs(const Operand& o, std::vector<std::uint32_t>& out) {
  switch (o.kind) {
    case Operand::Kind::reg:
      out.push_back(o.reg);
      break;
    case Operand::Kind::address:
      if (o.base_is_reg) out.push_back(o.reg);
      for (auto& e : o.elems) collect_regs(e, out);
      break;
    case Operand::Kind::vector:
      for (auto& e : o.elems) collect_regs(e, out);
      break;
    default:
      break;
  }
}

std::vector<std::uint32_t> label_blocks(const Function& f, const Cfg& cfg) {
  std::vector<std::uint32_t> out(f.labels.size(), UINT32_MAX);
  for (std::size_t i = 0; i < f.labels.size(); ++i)
    if (f.labels[i].instruction < cfg.block_of.size())
      out[i] = cfg.block_of[f.labels[i].instruction];
  return out;
}

}  // namespace

void uses_and_defs(const Instruction& in, std::vector<std::uint32_t>& uses,
                   std::vector<std::uint32_t>& defs) {
  uses.clear();
  defs.clear();
  if (in.guarded) uses.push_back(in.guard_reg);
  std::size_t first_src = 0;
  if (in.op == Opcode::call) {
    // [returns, target, arguments, prototype]: returns are written (registers in the old
    // register-passing convention; .param symbols otherwise).
    if (!in.operands.empty()) collect_regs(in.operands[0], defs);
    first_src = 1;
  } else if (!has_no_destination(in.op) && !in.operands.empty()) {
    auto k = in.operands[0].kind;
    if (k == Operand::Kind::reg || k == Operand::Kind::vector || k == Operand::Kind::sink) {
      std::size_t n = in.dest_pair ? 2 : 1;
      for (std::size_t i = 0; i < n && i < in.operands.size(); ++i)
        collect_regs(in.operands[i], defs);
      first_src = std::min(n, in.operands.size());
      // wgmma's accumulator is read and written.
      if (in.op == Opcode::wgmma) collect_regs(in.operands[0], uses);
    }
  }
  for (std::size_t i = first_src; i < in.operands.size(); ++i) collect_regs(in.operands[i], uses);
}

Cfg build_cfg(const Function& f) {
  Cfg cfg;
  const auto n = static_cast<std::uint32_t>(f.body.size());
  std::vector<bool> leader(n + 1, false);
  leader[0] = true;
  for (auto& l : f.labels)
    if (l.instruction < n) leader[l.instruction] = true;
  for (std::uint32_t i = 0; i < n; ++i) {
    const Instruction& in = f.body[i];
    switch (in.op) {
      case Opcode::bra:
      case Opcode::brx_idx:
      case Opcode::ret:
      case Opcode::exit:
      case Opcode::trap:
        leader[i + 1] = true;
        break;
      default:
        if (is_cta_barrier(in)) leader[i + 1] = true;
        break;
    }
  }
  cfg.block_of.assign(n, 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (leader[i]) cfg.blocks.push_back({i, i, {}, {}, false});
    cfg.blocks.back().end = i + 1;
    cfg.block_of[i] = static_cast<std::uint32_t>(cfg.blocks.size() - 1);
  }
  if (cfg.blocks.empty()) cfg.blocks.push_back({0, 0, {}, {}, false});  // an empty body
  auto lb = label_blocks(f, cfg);
  auto add_edge = [&](std::uint32_t from, std::uint32_t to) {
    auto& s = cfg.blocks[from].succs;
    if (std::find(s.begin(), s.end(), to) == s.end()) {
      s.push_back(to);
      cfg.blocks[to].preds.push_back(from);
    }
  };
  const auto nb = static_cast<std::uint32_t>(cfg.blocks.size());
  for (std::uint32_t b = 0; b < nb; ++b) {
    BasicBlock& bb = cfg.blocks[b];
    bool falls_through = true;
    if (bb.end > bb.first) {
      const Instruction& last = f.body[bb.end - 1];
      bb.ends_in_barrier = is_cta_barrier(last);
      if (last.op == Opcode::bra || last.op == Opcode::brx_idx) {
        falls_through = last.guarded;
        const Operand* target = nullptr;
        for (auto& o : last.operands)
          if (o.kind == Operand::Kind::symbol && o.sym.kind == SymbolRef::Kind::label) target = &o;
        if (last.op == Opcode::bra && target) {
          if (lb[target->sym.index] != UINT32_MAX) add_edge(b, lb[target->sym.index]);
        } else {
          // brx.idx: its .branchtargets list, or (unknown list) every labelled block.
          const Function::TargetList* list = nullptr;
          if (target)
            for (auto& t : f.target_lists)
              if (t.label == target->sym.index && !t.calls) list = &t;
          if (list) {
            for (auto l : list->targets)
              if (l < lb.size() && lb[l] != UINT32_MAX) add_edge(b, lb[l]);
          } else {
            for (auto l : lb)
              if (l != UINT32_MAX) add_edge(b, l);
          }
        }
      } else if (last.op == Opcode::ret || last.op == Opcode::exit || last.op == Opcode::trap) {
        falls_through = last.guarded;
      }
    }
    if (falls_through && b + 1 < nb) add_edge(b, b + 1);
  }
  return cfg;
}

Liveness compute_liveness(const Function& f, const Cfg& cfg) {
  const std::size_t nr = f.registers.size(), nb = cfg.blocks.size();
  Liveness lv;
  lv.live_in.assign(nb, std::vector<bool>(nr, false));
  lv.live_out.assign(nb, std::vector<bool>(nr, false));
  // Per block: use (read before any write in the block) and def sets.
  std::vector<std::vector<bool>> use(nb, std::vector<bool>(nr, false)), def = use;
  std::vector<std::uint32_t> u, d;
  for (std::size_t b = 0; b < nb; ++b) {
    for (std::uint32_t i = cfg.blocks[b].first; i < cfg.blocks[b].end; ++i) {
      uses_and_defs(f.body[i], u, d);
      for (auto r : u)
        if (r < nr && !def[b][r]) use[b][r] = true;
      // A guarded instruction may not write: its destinations do not kill liveness.
      if (!f.body[i].guarded)
        for (auto r : d)
          if (r < nr) def[b][r] = true;
    }
  }
  // Backward dataflow to a fixed point; visiting blocks in reverse converges fast.
  bool changed = true;
  while (changed) {
    changed = false;
    for (std::size_t k = nb; k-- > 0;) {
      auto& out = lv.live_out[k];
      for (auto s : cfg.blocks[k].succs)
        for (std::size_t r = 0; r < nr; ++r)
          if (lv.live_in[s][r] && !out[r]) {
            out[r] = true;
            changed = true;
          }
      auto& in = lv.live_in[k];
      for (std::size_t r = 0; r < nr; ++r) {
        bool v = use[k][r] || (out[r] && !def[k][r]);
        if (v && !in[r]) {
          in[r] = true;
          changed = true;
        }
      }
    }
  }
  return lv;
}

std::vector<Reach> analyse_reach(const Module& m) {
  const std::size_t nf = m.functions.size();
  std::vector<Reach> reach(nf);
  std::vector<std::vector<std::uint32_t>> callees(nf);
  std::vector<bool> indirect(nf, false);
  for (std::size_t i = 0; i < nf; ++i) {
    const Function& f = m.functions[i];
    for (auto& in : f.body) {
      if (in.op == Opcode::bar || in.op == Opcode::barrier || in.op == Opcode::bar_red)
        reach[i].cta_barrier = true;
      if (is_warp_collective(in.op)) reach[i].warp_collective = true;
      for (auto& o : in.operands)
        // Cooperative groups' grid.sync() is inline code that reads the grid workspace
        // handle from %envreg1/%envreg2 (nvcc 12/13).
        if (o.kind == Operand::Kind::special && o.special == SpecialReg::envreg &&
            (o.component == 1 || o.component == 2))
          reach[i].grid_sync = true;
      if (in.op == Opcode::call && in.operands.size() >= 2) {
        const Operand& t = in.operands[1];
        if (t.kind == Operand::Kind::symbol && t.sym.kind == SymbolRef::Kind::function) {
          callees[i].push_back(t.sym.index);
        } else {
          // An indirect call through a `.calltargets` list reaches only the listed functions.
          const Function::TargetList* list = nullptr;
          if (in.operands.size() >= 4 && in.operands[3].sym.kind == SymbolRef::Kind::label)
            for (auto& tl : f.target_lists)
              if (tl.calls && tl.label == in.operands[3].sym.index) list = &tl;
          if (list) {
            callees[i].insert(callees[i].end(), list->targets.begin(), list->targets.end());
          } else {
            indirect[i] = true;
          }
        }
      }
    }
  }
  // An indirect call may reach anything any function reaches directly.
  Reach any;
  for (auto& r : reach) {
    any.cta_barrier |= r.cta_barrier;
    any.warp_collective |= r.warp_collective;
    any.grid_sync |= r.grid_sync;
  }
  for (std::size_t i = 0; i < nf; ++i)
    if (indirect[i]) {
      reach[i].cta_barrier |= any.cta_barrier;
      reach[i].warp_collective |= any.warp_collective;
      reach[i].grid_sync |= any.grid_sync;
    }
  // Closure over direct calls (handles recursion).
  bool changed = true;
  while (changed) {
    changed = false;
    for (std::size_t i = 0; i < nf; ++i)
      for (auto c : callees[i]) {
        if (c >= nf) continue;
        Reach before = reach[i];
        reach[i].cta_barrier |= reach[c].cta_barrier;
        reach[i].warp_collective |= reach[c].warp_collective;
        reach[i].grid_sync |= reach[c].grid_sync;
        if (before.cta_barrier != reach[i].cta_barrier ||
            before.warp_collective != reach[i].warp_collective ||
            before.grid_sync != reach[i].grid_sync)
          changed = true;
      }
  }
  return reach;
}

}  // namespace cudamux::ptx
