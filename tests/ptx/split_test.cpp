// Barrier splitting (ptx/src/emit_split.cpp): nvcc's PTX of kernels with barriers
// (data/split/split.cu) is translated three times, split (per-block twins, no fibers), split
// with every twin outlined (each region a function, every round through the per-thread
// dispatch: what large twins get) and unsplit (EmitOptions::split_barriers off: fibers), built
// like the mock builds modules, run through the device runtime's cudamux_run_block, and all are
// compared with plain C++.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cudamux/device_abi.h"
#include "cudamux/ptx/emit_cpp.hpp"
#include "ptx_harness.hpp"

using namespace cudamux::ptx;

namespace {

using namespace ptx_harness;

std::unique_ptr<Loaded> build(const std::string& source) {
  return ptx_harness::build(source, CUDAMUX_SPLIT_CACHE, "split");
}

// The fixture's module, split and unsplit, built once for the suite.
struct Variant {
  EmitResult emitted;
  std::unique_ptr<Loaded> mod;
};
enum Kind { kFibers = 0, kSplit = 1, kOutlined = 2 };
Variant* g_variants[3] = {nullptr, nullptr, nullptr};  // by Kind

class Split : public ::testing::TestWithParam<int> {
 public:
  static void SetUpTestSuite() {
    std::ifstream in(std::string(CUDAMUX_PTX_DATA) + "/split/split.compute_80.ptx");
    std::stringstream ss;
    ss << in.rdbuf();
    std::vector<Diagnostic> diags;
    const auto m = parse(ss.str(), diags);
    ASSERT_TRUE(m.has_value()) << (diags.empty() ? "" : diags[0].message);
    for (int s = kFibers; s <= kOutlined; ++s) {
      auto* v = new Variant;
      EmitOptions o;
      o.split_barriers = s != kFibers;
      if (s == kOutlined) o.outline_regions_above = 0;
      o.module_name = "split.ptx";
      v->emitted = emit_cpp(*m, o);
      v->mod = build(v->emitted.source);
      g_variants[s] = v;
    }
  }
  static void TearDownTestSuite() {
    for (auto*& v : g_variants) {
      delete v;
      v = nullptr;
    }
  }

 protected:
  const cudamux_kernel_desc* kernel(const char* name) {
    Variant* v = g_variants[GetParam()];
    if (!v || !v->mod->desc) {
      ADD_FAILURE() << (v ? v->mod->error : "no module");
      return nullptr;
    }
    const auto* k = v->mod->kernel(name);
    EXPECT_NE(k, nullptr) << name;
    return k;
  }
  std::uint64_t shared() const { return g_variants[GetParam()]->emitted.static_shared_bytes; }
  // Split: the per-block twin runs the block (no fibers); unsplit: the fibers.
  void expect_split(const cudamux_kernel_desc* k, bool splittable = true) {
    if (!k) return;
    if (GetParam() != kFibers && splittable)
      EXPECT_EQ(k->flags, unsigned{CUDAMUX_KERNEL_NO_BARRIERS | CUDAMUX_KERNEL_PER_BLOCK});
    else
      EXPECT_EQ(k->flags, 0u);
  }
};

TEST_P(Split, BarriersInALoopWithSharedMemoryReusedEveryRound) {
  const auto* k = kernel("smooth");
  ASSERT_TRUE(k);
  expect_split(k);
  const int n = 64, blocks = 3, steps = 5;
  std::vector<float> in(n * blocks), out(n * blocks, -1.0f);
  for (int i = 0; i < n * blocks; ++i) in[i] = static_cast<float>((i * 37) % 11);
  ASSERT_EQ(
      launch(k, {blocks, 1, 1}, {n, 1, 1}, {ptr(in.data()), ptr(out.data()), arg(steps)}, shared()),
      0);
  for (int b = 0; b < blocks; ++b) {
    std::vector<float> v(in.begin() + b * n, in.begin() + (b + 1) * n), w(n);
    for (int s = 0; s < steps; ++s) {
      for (int t = 0; t < n; ++t)
        w[t] = 0.25f * v[(t + n - 1) % n] + 0.5f * v[t] + 0.25f * v[(t + 1) % n];
      v = w;
    }
    for (int t = 0; t < n; ++t) ASSERT_FLOAT_EQ(out[b * n + t], v[t]) << b << " " << t;
  }
}

TEST_P(Split, DivergentBarriersAndEarlyExits) {
  const auto* k = kernel("divergent");
  ASSERT_TRUE(k);
  expect_split(k);
  const int bs = 32, n = 80;  // the last block has 16 threads that exit at once
  std::vector<int> in(n), out(n, 0);
  for (int i = 0; i < n; ++i) in[i] = (i % 7 == 3) ? -i : i * 13;
  ASSERT_EQ(launch(k, {3, 1, 1}, {bs, 1, 1}, {ptr(in.data()), ptr(out.data()), arg(n)}, shared()),
            0);
  for (int b = 0; b < 3; ++b) {
    const int lo = b * bs, cnt = std::min(bs, n - lo);
    std::vector<int> ref(cnt), s(bs);
    for (int t = 0; t < cnt; ++t) s[t] = in[lo + t];
    for (int t = 0; t < cnt; ++t)
      ref[t] = (t & 1) ? s[t] + s[t ^ 1] : s[t] - s[(t ^ 1) < bs ? t ^ 1 : t];
    // Threads with negative input left; the others overwrite their slot.
    std::vector<int> s2 = s;
    for (int t = 0; t < cnt; ++t)
      if (in[lo + t] >= 0) s2[t] = ref[t] * 2;
    for (int t = 0; t < cnt; ++t)
      if (in[lo + t] >= 0) ref[t] += s2[(t + 2) % bs] > 1000 ? 1 : 0;
    for (int t = 0; t < cnt; ++t) {
      // Slots of threads that never existed or left early hold what the block's shared memory
      // held: only compare threads whose reads are defined.
      const int r = (t + 2) % bs;
      if (in[lo + t] >= 0 && r >= cnt) continue;
      ASSERT_EQ(out[lo + t], ref[t]) << "block " << b << " thread " << t;
    }
  }
}

TEST_P(Split, BlockReductionWithDynamicSharedMemory) {
  const auto* k = kernel("reduce");
  ASSERT_TRUE(k);
  expect_split(k);
  const int n = 1000, bs = 128, blocks = (n + 2 * bs - 1) / (2 * bs);
  std::vector<float> in(n), out(blocks, 0.0f);
  for (int i = 0; i < n; ++i) in[i] = static_cast<float>(i % 17) - 8.0f;
  ASSERT_EQ(launch(k, {blocks, 1, 1}, {bs, 1, 1}, {ptr(in.data()), ptr(out.data()), arg(n)},
                   shared(), bs * 4),
            0);
  for (int b = 0; b < blocks; ++b) {
    float ref = 0;
    for (int i = b * 2 * bs; i < std::min(n, (b + 1) * 2 * bs); ++i) ref += in[i];
    ASSERT_FLOAT_EQ(out[b], ref) << b;
  }
}

TEST_P(Split, InclusiveScan) {
  const auto* k = kernel("scan");
  ASSERT_TRUE(k);
  expect_split(k);
  const int bs = 256;
  std::vector<int> in(2 * bs), out(2 * bs, 0);
  for (int i = 0; i < 2 * bs; ++i) in[i] = (i * 7) % 5 - 1;
  ASSERT_EQ(launch(k, {2, 1, 1}, {bs, 1, 1}, {ptr(in.data()), ptr(out.data())}, shared()), 0);
  for (int b = 0; b < 2; ++b) {
    int acc = 0;
    for (int t = 0; t < bs; ++t) {
      acc += in[b * bs + t];
      ASSERT_EQ(out[b * bs + t], acc) << b << " " << t;
    }
  }
}

TEST_P(Split, TiledMatmul) {
  const auto* k = kernel("matmul");
  ASSERT_TRUE(k);
  expect_split(k);
  const int n = 48;
  std::vector<float> A(n * n), B(n * n), C(n * n, 0.0f);
  for (int i = 0; i < n * n; ++i) {
    A[i] = static_cast<float>(i % 7) * 0.5f;
    B[i] = static_cast<float>(i % 5) - 2.0f;
  }
  ASSERT_EQ(launch(k, {n / 16, n / 16, 1}, {16, 16, 1},
                   {ptr(A.data()), ptr(B.data()), ptr(C.data()), arg(n)}, shared()),
            0);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c) {
      float ref = 0;
      for (int j = 0; j < n; ++j) ref += A[r * n + j] * B[j * n + c];
      ASSERT_NEAR(C[r * n + c], ref, 1e-3f) << r << " " << c;
    }
}

TEST_P(Split, RegistersOfEveryTypeLiveAcrossBarriers) {
  const auto* k = kernel("live_types");
  ASSERT_TRUE(k);
  expect_split(k);
  const int bs = 96;
  std::vector<double> d(bs), out(bs, 0.0);
  std::vector<int> x(bs);
  std::vector<long long> lo(bs, 0);
  for (int i = 0; i < bs; ++i) {
    d[i] = 0.1 * i - 3.0;
    x[i] = (i * 29) % 41 - 10;
  }
  ASSERT_EQ(launch(k, {1, 1, 1}, {bs, 1, 1},
                   {ptr(d.data()), ptr(x.data()), ptr(out.data()), ptr(lo.data())}, shared()),
            0);
  for (int t = 0; t < bs; ++t) {
    const double a = d[t] * 1.5;
    const bool odd = (x[t] & 1) != 0;
    const float h = static_cast<float>(x[t]) * 0.5f;  // exact in half for these values
    const unsigned char c = static_cast<unsigned char>(x[t] * 7);
    const int other = x[(t + 1) % bs];
    const int s = x[(t + 5 + 1) % bs] * 3;
    ASSERT_DOUBLE_EQ(out[t], (odd ? a : -a) + h + c + s) << t;
    ASSERT_EQ(lo[t], (static_cast<long long>(x[t]) << 40) + other) << t;
  }
}

TEST_P(Split, SyncthreadsCountAndOr) {
  const auto* k = kernel("votes");
  ASSERT_TRUE(k);
  expect_split(k);
  const int bs = 64;
  std::vector<int> x(3 * bs), out(3 * bs, 0);
  for (int i = 0; i < bs; ++i) {
    x[i] = i % 3 == 0 ? -1 : i;        // some not positive
    x[bs + i] = 1 + i;                 // all positive, none > 100
    x[2 * bs + i] = i == 5 ? 500 : 7;  // all positive, one > 100
  }
  ASSERT_EQ(launch(k, {3, 1, 1}, {bs, 1, 1}, {ptr(x.data()), ptr(out.data())}, shared()), 0);
  for (int b = 0; b < 3; ++b) {
    int cnt = 0, all = 1, any = 0;
    for (int i = 0; i < bs; ++i) {
      cnt += x[b * bs + i] > 0;
      all &= x[b * bs + i] > 0;
      any |= x[b * bs + i] > 100;
    }
    for (int i = 0; i < bs; ++i) ASSERT_EQ(out[b * bs + i], cnt * 100 + all * 10 + any) << b;
  }
}

TEST_P(Split, WarpShufflesMixedWithBarriers) {
  const auto* k = kernel("shfl_mix");
  ASSERT_TRUE(k);
  expect_split(k);
  const int bs = 96;
  std::vector<int> x(bs), out(bs, 0);
  for (int i = 0; i < bs; ++i) x[i] = i * 3 - 50;
  ASSERT_EQ(launch(k, {1, 1, 1}, {bs, 1, 1}, {ptr(x.data()), ptr(out.data())}, shared()), 0);
  int total = 0;
  for (int v : x) total += v;
  for (int t = 0; t < bs; ++t) ASSERT_EQ(out[t], total + (t & 31)) << t;
}

TEST_P(Split, WarpVotesShufflesAndMatchInDivergentCode) {
  const auto* k = kernel("warp_ops");
  ASSERT_TRUE(k);
  expect_split(k);
  const int bs = 64, blocks = 2, n = bs * blocks;
  std::vector<int> x(n);
  std::vector<unsigned> out(n, 0);
  for (int i = 0; i < n; ++i) x[i] = (i * 37) % 61 - 20 + (i >= bs ? 30 : 0);
  ASSERT_EQ(launch(k, {blocks, 1, 1}, {bs, 1, 1}, {ptr(x.data()), ptr(out.data())}, shared()), 0);
  for (int b = 0; b < blocks; ++b) {
    std::vector<unsigned> s(bs);
    for (int t = 0; t < bs; ++t) {
      const int w = t & ~31, lane = t & 31;
      auto v = [&](int l) { return x[b * bs + w + l]; };
      unsigned ballot = 0;
      bool all = true, any = false;
      for (int l = 0; l < 32; ++l) {
        ballot |= v(l) > 0 ? 1u << l : 0u;
        all = all && v(l) > -100;
        any = any || v(l) > 50;
      }
      unsigned r = ballot + (all ? 1000u : 0u) + (any ? 2000u : 0u);
      r += static_cast<unsigned>(lane % 8 >= 3 ? v(lane - 3) : v(lane)) * 7u;
      r += static_cast<unsigned>(v(lane ^ 5)) * 11u;
      s[t] = r;
    }
    for (int t = 0; t < bs; ++t) {
      const int w = t & ~31, lane = t & 31;
      unsigned m = 0;
      if (lane & 1)
        for (int l = 1; l < 32; l += 2)
          if ((x[b * bs + w + l] & 3) == (x[b * bs + t] & 3)) m |= 1u << l;
      ASSERT_EQ(out[b * bs + t], s[(t + 32) % bs] + m * 3u) << "block " << b << " thread " << t;
    }
  }
}

TEST_P(Split, ActivemaskOfAPartialWarp) {
  const auto* k = kernel("active");
  ASSERT_TRUE(k);
  expect_split(k);
  std::vector<unsigned> out(48, 0);
  ASSERT_EQ(launch(k, {1, 1, 1}, {48, 1, 1}, {ptr(out.data())}, shared()), 0);
  for (int t = 0; t < 48; ++t) ASSERT_EQ(out[t], t < 32 ? 0xffffffffu : 0xffffu) << t;
}

TEST_P(Split, WarpReductions) {
  const auto* k = kernel("warp_reduce");
  ASSERT_TRUE(k);
  expect_split(k);
  const int bs = 64;
  std::vector<int> x(bs), out(bs * 5, 0);
  for (int i = 0; i < bs; ++i) x[i] = (i * 7919) % 201 - 100;
  ASSERT_EQ(launch(k, {1, 1, 1}, {bs, 1, 1}, {ptr(x.data()), ptr(out.data())}, shared()), 0);
  for (int t = 0; t < bs; ++t) {
    const int w = t & ~31;
    int add = 0, mn = x[w], half = 0;
    unsigned mx = 0, xr = 0;
    for (int l = 0; l < 32; ++l) {
      const int v = x[w + l];
      add += v;
      mn = std::min(mn, v);
      mx = std::max(mx, static_cast<unsigned>(v));
      xr ^= static_cast<unsigned>(v);
      if (l < 16) half += v;
    }
    ASSERT_EQ(out[t * 5 + 0], add) << t;
    ASSERT_EQ(out[t * 5 + 1], mn) << t;
    ASSERT_EQ(static_cast<unsigned>(out[t * 5 + 2]), mx) << t;
    ASSERT_EQ(static_cast<unsigned>(out[t * 5 + 3]), xr) << t;
    ASSERT_EQ(out[t * 5 + 4], (t & 31) < 16 ? half : 0) << t;
  }
}

TEST_P(Split, TrapAfterABarrierFailsTheLaunch) {
  const auto* k = kernel("trap_after_barrier");
  ASSERT_TRUE(k);
  expect_split(k);
  std::vector<int> x(32, 1), out(32, 0);
  ASSERT_EQ(launch(k, {1, 1, 1}, {32, 1, 1}, {ptr(x.data()), ptr(out.data())}, shared()), 0);
  EXPECT_EQ(out[31], 1);
  x[20] = -1;  // thread 19 traps
  std::string msg;
  EXPECT_NE(launch(k, {1, 1, 1}, {32, 1, 1}, {ptr(x.data()), ptr(out.data())}, shared(), 0, &msg),
            0);
  // The runtime is still usable afterwards.
  x[20] = 5;
  EXPECT_EQ(launch(k, {1, 1, 1}, {32, 1, 1}, {ptr(x.data()), ptr(out.data())}, shared()), 0);
  EXPECT_EQ(out[20], 5);
}

TEST_P(Split, ThreeDimensionalBlocksSeeTheirThreadIdx) {
  const auto* k = kernel("dims3");
  ASSERT_TRUE(k);
  expect_split(k);
  std::vector<int> out(8 * 4 * 4, -1);
  ASSERT_EQ(launch(k, {1, 1, 1}, {8, 4, 4}, {ptr(out.data())}, shared()), 0);
  for (int z = 0; z < 4; ++z)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 8; ++x)
        ASSERT_EQ(out[(z * 4 + y) * 8 + x],
                  ((7 - x) + 10 * (3 - y) + 100 * (3 - z)) * 1000 + x + 10 * y + 100 * z);
}

// A trap in a split block fails the launch (and frees the block's slots: no crash, no hang).
TEST(SplitEmit, TwinOnlyForKernelsWithBarriersAndOptionOff) {
  const char* ptx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, %tid.x;
  bar.sync 0;
  st.global.u32 [%rd1], %r1;
  ret;
}
.visible .entry nob(.param .u64 p)
{
  ret;
}
)";
  std::vector<Diagnostic> d;
  const auto m = parse(ptx, d);
  ASSERT_TRUE(m.has_value());
  const auto on = emit_cpp(*m, {true, "t"});
  EXPECT_NE(on.source.find("::cudamux::detail::entry<&cudamux_e_k, 3u, &cudamux_split_0>"),
            std::string::npos)
      << on.source;
  EXPECT_NE(on.source.find("::cudamux::detail::entry<&cudamux_e_nob, 1u>"), std::string::npos);
  const auto off = emit_cpp(*m, {false, "t"});
  EXPECT_EQ(off.source.find("cudamux_split_"), std::string::npos);
  EXPECT_NE(off.source.find("::cudamux::detail::entry<&cudamux_e_k, 0u>"), std::string::npos);
}

// An mbarrier wait is a yield stop of the twin: the thread stops before mbarrier.try_wait, the
// block's other runnable threads run, then it tests again. A relay makes every wait fail many
// times: thread t (but the last) waits for mbarrier t, which only thread t + 1 arrives at, after
// its own wait; the last thread starts the chain. So the twin needs a pass per thread, and
// each thread's value is its right neighbour's plus one. The arrival is in a .func: an arrive
// never blocks, so calling it does not keep the kernel off the twin. A nanosleep that no
// thread can reach twice without passing another stop is no stop (a region each, compile
// time): the one outside any loop and the back-off inside the wait loop; the twin has 4 regions
// (the start, behind bar.sync, behind the mbarrier query, behind the looping wait).
TEST(SplitEmit, MbarrierWaitIsAYieldStop) {
  const char* ptx = R"(.version 8.0
.target sm_80
.address_size 64
.func pass_on(.param .b32 a)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.b32 %r1, [a];
  mbarrier.arrive.shared.b64 %rd1, [%r1];
  ret;
}
.visible .entry relay(.param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<6>;
  .shared .align 8 .b64 mb[64];
  .shared .align 4 .u32 val[64];
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, mb;
  shl.b32 %r4, %r1, 3;
  add.s32 %r5, %r3, %r4;
  mbarrier.init.shared.b64 [%r5], 1;
  bar.sync 0;
  nanosleep.u32 20;
  mbarrier.test_wait.parity.shared.b64 %p3, [%r5], 1;
  add.s32 %r6, %r1, 1;
  mov.u32 %r7, val;
  shl.b32 %r8, %r1, 2;
  add.s32 %r9, %r7, %r8;
  mov.u32 %r10, %ctaid.x;
  mad.lo.s32 %r10, %r10, 100, 1000;
  setp.lt.u32 %p1, %r6, %r2;
  @!%p1 bra PUBLISH;
WAIT:
  mbarrier.try_wait.parity.shared.b64 %p2, [%r5], 0;
  @%p2 bra GO;
  nanosleep.u32 100;
  bra.uni WAIT;
GO:
  ld.shared.u32 %r11, [%r9+4];
  add.s32 %r10, %r11, 1;
PUBLISH:
  st.shared.u32 [%r9], %r10;
  mov.u32 %r12, %ctaid.x;
  mad.lo.s32 %r13, %r12, %r2, %r1;
  mul.wide.u32 %rd2, %r13, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r10;
  setp.eq.u32 %p3, %r1, 0;
  @%p3 bra DONE;
  add.s32 %r14, %r5, -8;
  {
  .param .b32 a0;
  st.param.b32 [a0], %r14;
  call.uni pass_on, (a0);
  }
DONE:
  ret;
}
)";
  std::vector<Diagnostic> d;
  const auto m = parse(ptx, d);
  ASSERT_TRUE(m.has_value()) << (d.empty() ? std::string() : d.front().message);
  for (const bool split : {true, false}) {
    EmitOptions o;
    o.split_barriers = split;
    o.module_name = "relay.ptx";
    const EmitResult e = emit_cpp(*m, o);
    ASSERT_TRUE(e.unsupported.empty());
    // The yield stop: a warp point of the lane alone (op 10), only in the twin.
    EXPECT_EQ(e.source.find("op = 10u") != std::string::npos, split);
    std::size_t regions = 0;
    for (auto at = e.source.find("const auto cudamux_region_"); at != std::string::npos;
         at = e.source.find("const auto cudamux_region_", at + 1))
      ++regions;
    EXPECT_EQ(regions, split ? 4u : 0u);
    auto l = build(e.source);
    ASSERT_TRUE(l->desc) << l->error;
    const auto* k = l->kernel("relay");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->flags,
              split ? unsigned{CUDAMUX_KERNEL_NO_BARRIERS | CUDAMUX_KERNEL_PER_BLOCK} : 0u);
    const unsigned n = 64, blocks = 2;
    std::vector<unsigned> out(n * blocks, 0);
    ASSERT_EQ(launch(k, {blocks, 1, 1}, {n, 1, 1}, {ptr(out.data())}, e.static_shared_bytes), 0)
        << (split ? "split" : "fibers");
    for (unsigned b = 0; b < blocks; ++b)
      for (unsigned t = 0; t < n; ++t)
        ASSERT_EQ(out[b * n + t], 1000 + 100 * b + (n - 1 - t)) << split << " " << b << " " << t;
  }
}

// Each region of a twin declares, loads and stores only the registers it names: with every
// region declaring the whole register file, CUB's onesweep radix sort (8,035 registers, 621
// warp points) became a 5-million-line twin. A chain of shuffles whose intermediate values live
// in one region each: %r3 and %r7 are declared once, in the region that uses them, whether the
// twin is inlined or outlined, and both give the chain's values. The kernel as written is a
// stub that only names the kernel (the runtime runs split kernels through their twin).
constexpr const char* kShuffleChain = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry chain(.param .u64 out)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %tid.x;
  shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;
  add.s32 %r3, %r2, 7;
  shfl.sync.bfly.b32 %r4, %r3, 2, 31, -1;
  add.s32 %r5, %r4, %r1;
  shfl.sync.bfly.b32 %r6, %r5, 4, 31, -1;
  mul.lo.s32 %r7, %r6, 3;
  shfl.sync.bfly.b32 %r8, %r7, 8, 31, -1;
  add.s32 %r9, %r8, %r1;
  shfl.sync.bfly.b32 %r10, %r9, 16, 31, -1;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r10;
  ret;
}
)";

// What kShuffleChain writes for thread t of a 64-thread block.
std::vector<unsigned> shuffle_chain_values(unsigned n) {
  std::vector<unsigned> want(n);
  for (unsigned t = 0; t < n; ++t) {
    const auto lane = [&](unsigned x, unsigned bit) { return (x & ~31u) | ((x & 31u) ^ bit); };
    const auto r3 = [&](unsigned x) { return lane(x, 1) + 7; };
    const auto r5 = [&](unsigned x) { return r3(lane(x, 2)) + x; };
    const auto r7 = [&](unsigned x) { return r5(lane(x, 4)) * 3; };
    const auto r9 = [&](unsigned x) { return r7(lane(x, 8)) + x; };
    want[t] = r9(lane(t, 16));
  }
  return want;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(SplitEmit, RegionsDeclareOnlyTheRegistersTheyName) {
  std::vector<Diagnostic> d;
  const auto m = parse(kShuffleChain, d);
  ASSERT_TRUE(m.has_value()) << (d.empty() ? std::string() : d.front().message);
  const auto count = occurrences;
  const unsigned n = 64;
  const std::vector<unsigned> want = shuffle_chain_values(n);
  for (const bool outlined : {false, true}) {
    EmitOptions o;
    o.module_name = "chain.ptx";
    if (outlined) o.outline_regions_above = 0;
    const EmitResult e = emit_cpp(*m, o);
    ASSERT_TRUE(e.unsupported.empty());
    EXPECT_EQ(count(e.source, "const auto cudamux_region_"), 6u);  // the start and 5 shuffles
    EXPECT_EQ(count(e.source, "u32 r__r3{}"), 1u) << outlined;
    EXPECT_EQ(count(e.source, "u32 r__r7{}"), 1u) << outlined;
    EXPECT_EQ(count(e.source, "a split kernel's per-thread body ran"), 1u);
    // Outlined: each region a function that the dispatch calls (no inlined copy).
    EXPECT_EQ(count(e.source, "__attribute__((always_inline)) {"), outlined ? 0u : 6u);
    EXPECT_EQ(count(e.source, "const auto& cudamux_slow_"), outlined ? 6u : 0u);
    auto l = build(e.source);
    ASSERT_TRUE(l->desc) << l->error;
    const auto* k = l->kernel("chain");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->flags, unsigned{CUDAMUX_KERNEL_NO_BARRIERS | CUDAMUX_KERNEL_PER_BLOCK});
    std::vector<unsigned> out(n, 0);
    ASSERT_EQ(launch(k, {1, 1, 1}, {n, 1, 1}, {ptr(out.data())}, e.static_shared_bytes), 0);
    for (unsigned t = 0; t < n; ++t) ASSERT_EQ(out[t], want[t]) << outlined << " " << t;
  }
}

// Above EmitOptions::max_split_region_bytes no twin is made (a wmma GEMM's would be 26 MB of
// C++): the kernel keeps its body as written, is registered for the fibers (flags 0) and gives
// the same values.
TEST(SplitEmit, TwinOverTheSizeCapLeavesTheKernelOnFibers) {
  std::vector<Diagnostic> d;
  const auto m = parse(kShuffleChain, d);
  ASSERT_TRUE(m.has_value()) << (d.empty() ? std::string() : d.front().message);
  EmitOptions o;
  o.module_name = "chain.ptx";
  o.max_split_region_bytes = 100;  // the chain's regions are a few KB
  const EmitResult e = emit_cpp(*m, o);
  ASSERT_TRUE(e.unsupported.empty());
  EXPECT_EQ(occurrences(e.source, "cudamux_split_"), 0u);
  EXPECT_EQ(occurrences(e.source, "a split kernel's per-thread body ran"), 0u);
  auto l = build(e.source);
  ASSERT_TRUE(l->desc) << l->error;
  const auto* k = l->kernel("chain");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->flags, 0u);
  const unsigned n = 64;
  std::vector<unsigned> out(n, 0);
  ASSERT_EQ(launch(k, {1, 1, 1}, {n, 1, 1}, {ptr(out.data())}, e.static_shared_bytes), 0);
  EXPECT_EQ(out, shuffle_chain_values(n));
}

INSTANTIATE_TEST_SUITE_P(Ptx, Split, ::testing::Values(kFibers, kSplit, kOutlined),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return i.param == kFibers  ? std::string("fibers")
                                  : i.param == kSplit ? std::string("split")
                                                      : std::string("outlined");
                         });

}  // namespace
