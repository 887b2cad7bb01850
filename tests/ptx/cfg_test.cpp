// The front end's passes (issue 15): CFG, liveness, uses/defs and call-graph reach, on small
// hand-written PTX and on nvcc fixtures.
#include "cudamux/ptx/cfg.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace cudamux::ptx;

namespace {

Module parse_ok(std::string_view body_text) {
  std::string text = ".version 8.5\n.target sm_75\n.address_size 64\n";
  text += body_text;
  std::vector<Diagnostic> d;
  auto m = parse(text, d);
  EXPECT_TRUE(m.has_value()) << (d.empty() ? "" : d[0].message);
  return m ? std::move(*m) : Module{};
}

Module fixture(const char* name) {
  std::ifstream in(std::filesystem::path(CUDAMUX_PTX_DATA) / name);
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<Diagnostic> d;
  auto m = parse(ss.str(), d);
  EXPECT_TRUE(m.has_value());
  return m ? std::move(*m) : Module{};
}

std::uint32_t reg(const Function& f, std::string_view name) {
  for (std::uint32_t i = 0; i < f.registers.size(); ++i)
    if (f.registers[i].name == name) return i;
  ADD_FAILURE() << "no register " << name;
  return 0;
}

std::vector<std::string> live_names(const Function& f, const std::vector<bool>& set) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < set.size(); ++i)
    if (set[i]) out.push_back(f.registers[i].name);
  return out;
}

using V = std::vector<std::uint32_t>;
using S = std::vector<std::string>;

}  // namespace

TEST(Cfg, StraightLineIsOneBlock) {
  Module m = parse_ok(R"(.visible .entry k() {
  .reg .b32 %r<3>;
  mov.u32 %r1, 1;
  add.u32 %r2, %r1, 1;
  ret;
})");
  Cfg c = build_cfg(m.functions[0]);
  ASSERT_EQ(c.blocks.size(), 1u);
  EXPECT_EQ(c.blocks[0].first, 0u);
  EXPECT_EQ(c.blocks[0].end, 3u);
  EXPECT_TRUE(c.blocks[0].succs.empty());
  EXPECT_EQ(c.block_of, (V{0, 0, 0}));
}

TEST(Cfg, EmptyBodyHasAnEntryBlock) {
  Module m = parse_ok(".visible .entry k() { }");
  Cfg c = build_cfg(m.functions[0]);
  ASSERT_EQ(c.blocks.size(), 1u);
  EXPECT_EQ(c.blocks[0].first, c.blocks[0].end);
  Liveness l = compute_liveness(m.functions[0], c);
  EXPECT_EQ(l.live_in.size(), 1u);
}

TEST(Cfg, DiamondEdgesAndLiveness) {
  // B0: setp; @p bra ELSE   B1: then; bra.uni JOIN   B2 (ELSE): else   B3 (JOIN): use
  Module m = parse_ok(R"(.visible .entry k(.param .u64 out) {
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 16;
  @%p1 bra ELSE;
  add.u32 %r2, %r1, 1;
  bra.uni JOIN;
ELSE:
  add.u32 %r2, %r1, 2;
JOIN:
  st.global.u32 [%rd1], %r2;
  ret;
})");
  const Function& f = m.functions[0];
  Cfg c = build_cfg(f);
  ASSERT_EQ(c.blocks.size(), 4u);
  EXPECT_EQ(c.blocks[0].succs, (V{2, 1}));
  EXPECT_EQ(c.blocks[1].succs, (V{3}));
  EXPECT_EQ(c.blocks[2].succs, (V{3}));
  EXPECT_TRUE(c.blocks[3].succs.empty());
  std::vector<std::uint32_t> p3 = c.blocks[3].preds;
  std::sort(p3.begin(), p3.end());
  EXPECT_EQ(p3, (V{1, 2}));
  Liveness l = compute_liveness(f, c);
  EXPECT_TRUE(live_names(f, l.live_in[0]).empty());  // nothing live on entry
  EXPECT_EQ(live_names(f, l.live_out[0]), (S{"%r1", "%rd1"}));
  EXPECT_EQ(live_names(f, l.live_in[3]), (S{"%r2", "%rd1"}));
  EXPECT_EQ(live_names(f, l.live_out[1]), (S{"%r2", "%rd1"}));
  EXPECT_TRUE(live_names(f, l.live_out[3]).empty());
}

TEST(Cfg, LoopCarriesLivenessAroundTheBackEdge) {
  Module m = parse_ok(R"(.visible .entry k(.param .u64 out) {
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<2>;
  mov.u32 %r1, 0;
  mov.u32 %r2, 0;
LOOP:
  add.u32 %r2, %r2, %r1;
  add.u32 %r1, %r1, 1;
  setp.lt.u32 %p1, %r1, 10;
  @%p1 bra LOOP;
  ld.param.u64 %rd1, [out];
  st.global.u32 [%rd1], %r2;
  ret;
})");
  const Function& f = m.functions[0];
  Cfg c = build_cfg(f);
  ASSERT_EQ(c.blocks.size(), 3u);
  EXPECT_EQ(c.blocks[1].succs, (V{1, 2}));  // the back edge, then the exit
  Liveness l = compute_liveness(f, c);
  EXPECT_EQ(live_names(f, l.live_in[1]), (S{"%r1", "%r2"}));
  EXPECT_EQ(live_names(f, l.live_out[1]), (S{"%r1", "%r2"}));
  EXPECT_EQ(live_names(f, l.live_in[2]), (S{"%r2"}));
}

TEST(Cfg, GuardedDefinitionDoesNotKill) {
  Module m = parse_ok(R"(.visible .entry k(.param .u64 out) {
  .reg .pred %p<2>;
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  ld.global.u32 %r1, [%rd1];
  setp.eq.u32 %p1, %r1, 0;
  bar.sync 0;
  @%p1 mov.u32 %r1, 7;
  st.global.u32 [%rd1], %r1;
  ret;
})");
  const Function& f = m.functions[0];
  Cfg c = build_cfg(f);
  ASSERT_EQ(c.blocks.size(), 2u);
  Liveness l = compute_liveness(f, c);
  // %r1's old value reaches the store when %p1 is false.
  EXPECT_EQ(live_names(f, l.live_in[1]), (S{"%p1", "%r1", "%rd1"}));
}

TEST(Cfg, BarriersEndBlocks) {
  Module m = parse_ok(R"(.visible .entry k() {
  .reg .b32 %r<3>;
  mov.u32 %r1, 1;
  bar.sync 0;
  mov.u32 %r1, 2;
  bar.arrive 1, 64;
  barrier.sync.aligned 1;
  bar.red.popc.u32 %r2, 0, 1;
  mov.u32 %r1, 3;
  ret;
})");
  Cfg c = build_cfg(m.functions[0]);
  ASSERT_EQ(c.blocks.size(), 4u);
  EXPECT_EQ(c.blocks[0].end, 2u);
  EXPECT_TRUE(c.blocks[0].ends_in_barrier);
  EXPECT_EQ(c.blocks[1].end, 5u);  // bar.arrive does not wait: no split after it
  EXPECT_TRUE(c.blocks[1].ends_in_barrier);
  EXPECT_TRUE(c.blocks[2].ends_in_barrier);  // bar.red
  EXPECT_FALSE(c.blocks[3].ends_in_barrier);
  EXPECT_EQ(c.blocks[0].succs, (V{1}));
  EXPECT_EQ(c.blocks[2].succs, (V{3}));
}

TEST(Cfg, ReturnsExitsAndUnreachableCode) {
  Module m = parse_ok(R"(.visible .entry k() {
  .reg .pred %p<2>;
  .reg .b32 %r<2>;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 ret;
  exit;
  mov.u32 %r1, 1;
  ret;
})");
  Cfg c = build_cfg(m.functions[0]);
  ASSERT_EQ(c.blocks.size(), 3u);
  EXPECT_EQ(c.blocks[0].succs, (V{1}));  // guarded ret falls through
  EXPECT_TRUE(c.blocks[1].succs.empty());
  EXPECT_TRUE(c.blocks[2].preds.empty());
}

TEST(Cfg, IndirectBranchUsesItsTargetList) {
  Module m = parse_ok(R"(.visible .entry k() {
  .reg .b32 %r<3>;
  mov.u32 %r1, 1;
  brx.idx %r1, TBL;
TBL: .branchtargets A, C;
A:
  mov.u32 %r2, 1;
B:
  mov.u32 %r2, 2;
C:
  ret;
})");
  const Function& f = m.functions[0];
  Cfg c = build_cfg(f);
  ASSERT_EQ(c.blocks.size(), 4u);
  EXPECT_EQ(c.blocks[0].succs, (V{1, 3}));
  std::vector<std::uint32_t> u, d;
  uses_and_defs(f.body[1], u, d);
  EXPECT_EQ(u, (V{reg(f, "%r1")}));
  EXPECT_TRUE(d.empty());
}

TEST(UsesDefs, OperandRoles) {
  Module m = parse_ok(R"(.visible .entry k() {
  .reg .pred %p<3>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  .reg .f32 %f<5>;
  @!%p0 setp.lt.and.s32 %p1|%p2, %r1, %r2, %p0;
  st.global.v2.u32 [%rd1+8], {%r3, %r4};
  ld.global.v4.f32 {%f1, %f2, _, %f4}, [%rd2];
  atom.global.cas.b32 %r5, [%rd3], %r6, %r7;
  tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f1, %f2}];
  shfl.sync.down.b32 %r1|%p1, %r2, 1, 31, -1;
  mov.b64 {%r1, %r2}, %rd1;
  bar.sync %r1, %r2;
  ret;
})");
  const Function& f = m.functions[0];
  auto R = [&](std::initializer_list<const char*> names) {
    V out;
    for (auto n : names) out.push_back(reg(f, n));
    return out;
  };
  std::vector<std::uint32_t> u, d;
  uses_and_defs(f.body[0], u, d);
  EXPECT_EQ(u, R({"%p0", "%r1", "%r2", "%p0"}));
  EXPECT_EQ(d, R({"%p1", "%p2"}));
  uses_and_defs(f.body[1], u, d);
  EXPECT_EQ(u, R({"%rd1", "%r3", "%r4"}));
  EXPECT_TRUE(d.empty());
  uses_and_defs(f.body[2], u, d);
  EXPECT_EQ(u, R({"%rd2"}));
  EXPECT_EQ(d, R({"%f1", "%f2", "%f4"}));
  uses_and_defs(f.body[3], u, d);
  EXPECT_EQ(u, R({"%rd3", "%r6", "%r7"}));
  EXPECT_EQ(d, R({"%r5"}));
  uses_and_defs(f.body[4], u, d);
  EXPECT_EQ(u, R({"%rd1", "%f1", "%f2"}));
  EXPECT_EQ(d, R({"%f1", "%f2", "%f3", "%f4"}));
  uses_and_defs(f.body[5], u, d);
  EXPECT_EQ(u, R({"%r2"}));
  EXPECT_EQ(d, R({"%r1", "%p1"}));
  uses_and_defs(f.body[6], u, d);
  EXPECT_EQ(u, R({"%rd1"}));
  EXPECT_EQ(d, R({"%r1", "%r2"}));
  uses_and_defs(f.body[7], u, d);
  EXPECT_EQ(u, R({"%r1", "%r2"}));
  EXPECT_TRUE(d.empty());
}

TEST(Reach, ClosureOverCallsRecursionAndIndirectCalls) {
  Module m = parse_ok(R"(
.func leaf_bar() { bar.sync 0; ret; }
.func leaf_warp() { .reg .b32 %r<2>; activemask.b32 %r1; ret; }
.func mid() {
  call.uni leaf_bar, ();
  ret;
}
.func rec() {
  call.uni rec, ();
  call.uni leaf_warp, ();
  ret;
}
.func plain() { ret; }
.visible .entry direct() { call.uni mid, (); ret; }
.visible .entry recursive() { call.uni rec, (); ret; }
.visible .entry none() { call.uni plain, (); ret; }
.visible .entry indirect() {
  .reg .b64 %rd<2>;
  proto: .callprototype _ ();
  call %rd1, (), proto;
  ret;
}
)");
  auto r = analyse_reach(m);
  ASSERT_EQ(r.size(), m.functions.size());
  auto at = [&](std::string_view n) {
    for (std::size_t i = 0; i < m.functions.size(); ++i)
      if (m.functions[i].name == n) return r[i];
    ADD_FAILURE() << n;
    return Reach{};
  };
  EXPECT_TRUE(at("leaf_bar").cta_barrier);
  EXPECT_FALSE(at("leaf_bar").warp_collective);
  EXPECT_TRUE(at("mid").cta_barrier);
  EXPECT_TRUE(at("direct").cta_barrier);
  EXPECT_FALSE(at("direct").warp_collective);
  EXPECT_TRUE(at("recursive").warp_collective);
  EXPECT_FALSE(at("recursive").cta_barrier);
  EXPECT_FALSE(at("none").cta_barrier);
  EXPECT_FALSE(at("none").warp_collective);
  EXPECT_TRUE(at("indirect").cta_barrier);
  EXPECT_TRUE(at("indirect").warp_collective);
  EXPECT_FALSE(at("indirect").grid_sync);
}

TEST(Reach, FixturesGridSyncAndBarriers) {
  Module cg = fixture("cg.compute_75.ptx");
  auto r = analyse_reach(cg);
  ASSERT_EQ(r.size(), cg.functions.size());
  bool found = false;
  for (std::size_t i = 0; i < r.size(); ++i)
    if (cg.functions[i].name == "cg_kernel") {
      found = true;
      EXPECT_TRUE(r[i].grid_sync);
      EXPECT_TRUE(r[i].cta_barrier);
      EXPECT_TRUE(r[i].warp_collective);  // the tile reduction
    }
  EXPECT_TRUE(found);
  Module sx = fixture("saxpy.compute_75.ptx");
  auto rs = analyse_reach(sx);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_FALSE(rs[0].cta_barrier || rs[0].warp_collective || rs[0].grid_sync);
}

TEST(Liveness, CorpusScaleFunctionConverges) {
  // The largest fixture kernel: the fixed point holds (live_out is the union of the successors'
  // live_in).
  Module m = fixture("cg.compute_75.ptx");
  for (const Function& f : m.functions) {
    if (!f.has_body) continue;
    Cfg c = build_cfg(f);
    Liveness l = compute_liveness(f, c);
    for (std::size_t b = 0; b < c.blocks.size(); ++b) {
      std::vector<bool> out(f.registers.size(), false);
      for (auto s : c.blocks[b].succs)
        for (std::size_t r = 0; r < out.size(); ++r) out[r] = out[r] || l.live_in[s][r];
      EXPECT_EQ(out, l.live_out[b]) << f.name << " block " << b;
    }
    // Nothing is live into a kernel (registers start undefined).
    if (f.is_entry) {
      EXPECT_TRUE(live_names(f, l.live_in[0]).empty()) << f.name;
    }
  }
}

TEST(Reach, CallTargetsListLimitsAnIndirectCall) {
  Module m = parse_ok(R"(
.func with_bar() { bar.sync 0; ret; }
.func plain() { ret; }
.visible .entry listed() {
  .reg .b64 %rd<2>;
  tgts: .calltargets plain;
  call %rd1, (), tgts;
  ret;
}
)");
  auto r = analyse_reach(m);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(r[0].cta_barrier);
  EXPECT_FALSE(r[2].cta_barrier);  // only `plain` can be called
  ASSERT_EQ(m.functions[2].target_lists.size(), 1u);
  EXPECT_TRUE(m.functions[2].target_lists[0].calls);
  EXPECT_EQ(m.functions[2].target_lists[0].targets, (V{1}));
}
