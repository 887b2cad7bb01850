// Passes over the IR (issue 15): the control flow graph of a function, register liveness,
// and the barrier analysis the mock's emitter needs to split kernels at their barriers.
#pragma once

#include <cstdint>
#include <vector>

#include "cudamux/ptx/ir.hpp"

namespace cudamux::ptx {

struct BasicBlock {
  std::uint32_t first = 0;  // index of its first instruction in Function::body
  std::uint32_t end = 0;    // one past its last
  std::vector<std::uint32_t> succs, preds;  // block indices
  bool ends_in_barrier = false;  // its last instruction is a CTA barrier (bar.sync, barrier.sync, bar.red)
};

// Blocks start at labels, after branches, returns, exits and barriers (a barrier always ends
// its block, so the regions between barriers are unions of blocks). Block 0 is the entry.
struct Cfg {
  std::vector<BasicBlock> blocks;
  std::vector<std::uint32_t> block_of;  // instruction index -> block index
};
Cfg build_cfg(const Function& f);

// Per block: registers live on entry and on exit (bit sets over Function::registers).
struct Liveness {
  std::vector<std::vector<bool>> live_in, live_out;
};
Liveness compute_liveness(const Function& f, const Cfg& cfg);

// Registers an instruction reads and writes (guard included; address bases; vector elements).
void uses_and_defs(const Instruction& ins, std::vector<std::uint32_t>& uses,
                   std::vector<std::uint32_t>& defs);

// What a function reaches, directly or through calls (indirect calls: anything).
struct Reach {
  bool cta_barrier = false;      // bar/barrier/bar.red (block-wide rendezvous)
  bool warp_collective = false;  // shfl/vote/match/redux/bar.warp.sync/activemask/wmma/mma ...
  bool grid_sync = false;        // cooperative-groups grid sync (through its runtime call)
};
std::vector<Reach> analyse_reach(const Module& m);  // index: Module::functions

}  // namespace cudamux::ptx
