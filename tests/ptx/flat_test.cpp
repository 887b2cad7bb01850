// Flat twins (ptx/src/emit_split.cpp, emit_flat): nvcc's PTX of barrier-free kernels
// (data/flat/flat.cu) is translated with EmitOptions::flat_kernels on (a per-block twin: the
// body in a loop over the block's threads, threadIdx a local) and off (the kernel as written,
// called per thread from the thunk's loop), built like the mock builds modules, and run through
// the device runtime's cudamux_run_block. Every case runs both and compares them with each
// other and with plain C++.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

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
  return ptx_harness::build(source, CUDAMUX_SPLIT_CACHE, "flat");
}

// The fixture's module with and without flat twins, built once for the suite.
struct Variant {
  EmitResult emitted;
  std::unique_ptr<Loaded> mod;
};
Variant* g_variants[2] = {nullptr, nullptr};  // [0] thread loop, [1] flat twins

class Flat : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    std::ifstream in(std::string(CUDAMUX_PTX_DATA) + "/flat/flat.compute_80.ptx");
    std::stringstream ss;
    ss << in.rdbuf();
    std::vector<Diagnostic> diags;
    const auto m = parse(ss.str(), diags);
    ASSERT_TRUE(m.has_value()) << (diags.empty() ? "" : diags[0].message);
    for (int s = 0; s < 2; ++s) {
      auto* v = new Variant;
      EmitOptions o;
      o.flat_kernels = s == 1;
      o.module_name = "flat.ptx";
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
  const cudamux_kernel_desc* kernel(int variant, const char* name) {
    Variant* v = g_variants[variant];
    if (!v || !v->mod->desc) {
      ADD_FAILURE() << (v ? v->mod->error : "no module");
      return nullptr;
    }
    const auto* k = v->mod->kernel(name);
    EXPECT_NE(k, nullptr) << name;
    return k;
  }
  // Runs `run` with the kernel of each variant (thread loop, then flat) and returns what each
  // produced; asserts that the flat variant took the flat twin (flat = false: that neither
  // variant has one, and both register the kernel alike).
  template <class Out>
  std::vector<Out> both(const char* name, const std::function<Out(const cudamux_kernel_desc*)>& run,
                        bool flat = true) {
    std::vector<Out> r;
    for (int v = 0; v < 2; ++v) {
      const auto* k = kernel(v, name);
      const auto* k0 = kernel(0, name);
      if (!k || !k0) return {};
      const bool twin = v == 1 && flat;
      EXPECT_EQ(k->flags, twin   ? unsigned{CUDAMUX_KERNEL_NO_BARRIERS | CUDAMUX_KERNEL_PER_BLOCK}
                          : flat ? unsigned{CUDAMUX_KERNEL_NO_BARRIERS}
                                 : k0->flags)
          << name << " variant " << v;
      const std::string entry =
          "::cudamux::detail::entry<&cudamux_e_" + std::string(name) + ", 3u, &cudamux_flat_";
      EXPECT_EQ(g_variants[v]->emitted.source.find(entry) != std::string::npos, twin) << name;
      r.push_back(run(k));
    }
    return r;
  }
};

TEST_F(Flat, TwinsOnlyWhereAsked) {
  for (int v = 0; v < 2; ++v) {
    ASSERT_TRUE(g_variants[v] && g_variants[v]->mod->desc) << g_variants[v]->mod->error;
    const std::string& s = g_variants[v]->emitted.source;
    EXPECT_EQ(s.find("cudamux_flat_") != std::string::npos, v == 1);
    for (const char* k : {"saxpy", "early_exit", "coords3d", "calls", "lanes", "tickets", "poke",
                          "trap_at", "write2d"}) {
      const std::string twin = "::cudamux::detail::entry<&cudamux_e_" + std::string(k) + ", 3u, &";
      const std::string loop = "::cudamux::detail::entry<&cudamux_e_" + std::string(k) + ", 1u>";
      EXPECT_NE(s.find(v == 1 ? twin : loop), std::string::npos) << k << " variant " << v;
    }
    // An indirect call may reach anything (a barrier): the kernel stays on fibers, as before.
    EXPECT_NE(s.find("::cudamux::detail::entry<&cudamux_e_indirect, 0u>"), std::string::npos);
    // alloca: the thread loop, as before.
    EXPECT_NE(s.find("::cudamux::detail::entry<&cudamux_e_with_alloca, 1u>"), std::string::npos);
  }
}

TEST_F(Flat, Saxpy) {
  const unsigned n = 1000;  // a partial last block
  std::vector<float> x(n);
  for (unsigned i = 0; i < n; ++i) x[i] = static_cast<float>(i % 13) * 0.25f;
  const auto r = both<std::vector<float>>("saxpy", [&](const cudamux_kernel_desc* k) {
    std::vector<float> y(n + 8, 1.5f);
    EXPECT_EQ(
        launch(k, {4, 1, 1}, {256, 1, 1}, {arg(2.5f), ptr(x.data()), ptr(y.data()), arg(n)}, 0), 0);
    return y;
  });
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], r[1]);
  for (unsigned i = 0; i < n + 8; ++i) ASSERT_EQ(r[1][i], i < n ? 2.5f * x[i] + 1.5f : 1.5f) << i;
}

TEST_F(Flat, EarlyExitsOfSomeThreads) {
  const int n = 200, bs = 64;  // 4 blocks, 56 threads of the last one leave at once
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = i % 5 == 2 ? -i : (i * 7) % 23;
  const auto r = both<std::vector<int>>("early_exit", [&](const cudamux_kernel_desc* k) {
    std::vector<int> out(4 * bs, 7);
    EXPECT_EQ(launch(k, {4, 1, 1}, {bs, 1, 1}, {ptr(in.data()), ptr(out.data()), arg(n)}, 0), 0);
    return out;
  });
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], r[1]);
  for (int i = 0; i < 4 * bs; ++i) {
    int ref = 7;
    if (i < n) {
      if (in[i] < 0) {
        ref = -1;
      } else {
        int acc = 0;
        bool left = false;
        for (int k = 0; k < in[i] && !left; ++k) {
          acc += k * 3 + i;
          left = acc > 500;
        }
        ref = left ? acc : acc + 1000000;
      }
    }
    ASSERT_EQ(r[1][i], ref) << i;
  }
}

TEST_F(Flat, ThreeDimensionalBlocksAndGrid) {
  const cudamux_u3 grid{2, 2, 3}, block{5, 3, 2};
  const unsigned threads = 2 * 2 * 3 * 5 * 3 * 2;
  const auto r = both<std::vector<unsigned>>("coords3d", [&](const cudamux_kernel_desc* k) {
    std::vector<unsigned> out(2 * threads, 0xdeadu);
    EXPECT_EQ(launch(k, grid, block, {ptr(out.data())}, 0), 0);
    return out;
  });
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], r[1]);
  unsigned i = 0;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx)
        for (unsigned z = 0; z < block.z; ++z)
          for (unsigned y = 0; y < block.y; ++y)
            for (unsigned x = 0; x < block.x; ++x, ++i) {
              ASSERT_EQ(r[1][2 * i], x | (y << 10) | (z << 20)) << i;
              ASSERT_EQ(r[1][2 * i + 1], bx | (by << 10) | (bz << 20)) << i;
            }
}

// .func helpers: one reads threadIdx itself (so the twin stores the thread-local copy for each
// thread), one recurses.
TEST_F(Flat, KernelCallingDeviceFunctionsIncludingRecursion) {
  const unsigned bx = 8, by = 4, blocks = 3, n = bx * by * blocks;
  std::vector<unsigned> in(n);
  for (unsigned i = 0; i < n; ++i) in[i] = i * 5 + 1;
  const auto r = both<std::vector<unsigned>>("calls", [&](const cudamux_kernel_desc* k) {
    std::vector<unsigned> out(n, 0);
    EXPECT_EQ(launch(k, {blocks, 1, 1}, {bx, by, 1}, {ptr(in.data()), ptr(out.data())}, 0), 0);
    return out;
  });
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], r[1]);
  const std::function<unsigned(unsigned)> fib = [&](unsigned k) {
    return k < 2 ? k : fib(k - 1) + fib(k - 2);
  };
  for (unsigned i = 0; i < n; ++i) {
    const unsigned t = i % (bx * by), x = t % bx, y = t / bx;
    ASSERT_EQ(r[1][i], in[i] * 31u + x + 7u * y + fib(in[i] % 12u)) << i;
  }
}

TEST_F(Flat, IndirectCallsKeepTheirPath) {
  const unsigned n = 96;
  std::vector<unsigned> in(n);
  for (unsigned i = 0; i < n; ++i) in[i] = i * 3 + 1;
  const auto r = both<std::vector<unsigned>>(
      "indirect",
      [&](const cudamux_kernel_desc* k) {
        std::vector<unsigned> out(n, 0);
        EXPECT_EQ(launch(k, {3, 1, 1}, {32, 1, 1}, {ptr(in.data()), ptr(out.data())}, 0), 0);
        return out;
      },
      false);
  ASSERT_EQ(r.size(), 2u);
  for (unsigned i = 0; i < n; ++i) ASSERT_EQ(r[1][i], (in[i] & 1u) ? 3u * in[i] : 2u * in[i]) << i;
}

TEST_F(Flat, LaneWarpAndClockRegisters) {
  const unsigned bx = 24, by = 3, n = bx * by * 2;  // warps straddle rows of the block
  const auto r = both<std::vector<unsigned>>("lanes", [&](const cudamux_kernel_desc* k) {
    std::vector<unsigned> out(n, 0);
    EXPECT_EQ(launch(k, {2, 1, 1}, {bx, by, 1}, {ptr(out.data())}, 0), 0);
    return out;
  });
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], r[1]);
  for (unsigned i = 0; i < n; ++i) {
    const unsigned t = i % (bx * by);
    ASSERT_EQ(r[1][i], (t & 31u) | ((t / 32u) << 8) | (1u << 16)) << i;
  }
}

// Threads of a block run in linear order (x fastest), as the thread loop runs them.
TEST_F(Flat, AtomicsInThreadOrder) {
  const unsigned bx = 16, by = 4, blocks = 3, n = bx * by * blocks;
  const auto r = both<std::vector<unsigned>>("tickets", [&](const cudamux_kernel_desc* k) {
    unsigned counter = 100;
    std::vector<unsigned> order(n, 0);
    EXPECT_EQ(launch(k, {blocks, 1, 1}, {bx, by, 1}, {ptr(&counter), ptr(order.data())}, 0), 0);
    EXPECT_EQ(counter, 100u + n);
    return order;
  });
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], r[1]);
  for (unsigned i = 0; i < n; ++i) ASSERT_EQ(r[1][i], 100u + i) << i;
}

// A fault in one thread of a flat twin (compiled without -fnon-call-exceptions) unwinds and
// fails the launch as it does in the thread loop; the runtime stays usable.
TEST_F(Flat, FaultInOneThreadFailsTheLaunch) {
  const unsigned bx = 16, by = 2, n = bx * by * 2;
  const auto r = both<std::string>("poke", [&](const cudamux_kernel_desc* k) {
    std::vector<int> ok(n, 0);
    std::string message;
    const int rc =
        launch(k, {2, 1, 1}, {bx, by, 1},
               {ptr(ok.data()), ptr(reinterpret_cast<int*>(0x1000)), arg(5)}, 0, 0, &message);
    EXPECT_NE(rc, 0);
    // Thread 5 of block 0 faulted: the threads before it ran.
    for (unsigned i = 0; i < 5; ++i) EXPECT_EQ(ok[i], 2) << i;
    // Afterwards the same kernel runs to completion.
    std::vector<int> bad(n, 0);
    EXPECT_EQ(launch(k, {2, 1, 1}, {bx, by, 1}, {ptr(ok.data()), ptr(bad.data()), arg(5)}, 0), 0);
    for (unsigned i = 0; i < n; ++i)
      EXPECT_EQ(i % (bx * by) == 5 ? bad[i] : ok[i], i % (bx * by) == 5 ? 1 : 2) << i;
    return std::to_string(rc) + " " + message;
  });
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], r[1]);
  EXPECT_NE(r[1].find("illegal memory access at 0x1014"), std::string::npos) << r[1];
}

TEST_F(Flat, TrapInOneThreadFailsTheLaunch) {
  const unsigned bx = 8, by = 4, n = bx * by;
  const auto r = both<std::string>("trap_at", [&](const cudamux_kernel_desc* k) {
    std::vector<int> out(n, 0);
    std::string message;
    const int rc = launch(k, {1, 1, 1}, {bx, by, 1}, {ptr(out.data()), arg(9)}, 0, 0, &message);
    EXPECT_NE(rc, 0);
    for (unsigned i = 0; i < 9; ++i) EXPECT_EQ(out[i], 3) << i;
    EXPECT_EQ(out[9], 0);
    return std::to_string(rc) + " " + message;
  });
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], r[1]);
  EXPECT_NE(r[1].find("trap"), std::string::npos) << r[1];
}

// Past 2^31 threads in a grid dimension (blockIdx.x * blockDim.x = 2^31) the twin runs the
// kernel as written for each thread, where 32-bit thread indices wrap as PTX says: the same
// results. write2d's i = (blockIdx.x * 4 + y) * 8 + x wraps to the thread's index in the block.
TEST_F(Flat, BlocksPastTwoToTheThirtyFirstThreads) {
  const unsigned bx = 8, by = 4, block = 1u << 28;
  const auto r = both<std::vector<unsigned>>("write2d", [&](const cudamux_kernel_desc* k) {
    std::vector<unsigned> out(bx * by, 0);
    const auto base = reinterpret_cast<unsigned long long>(out.data());
    std::vector<unsigned char> buf(k->args_size + 1);
    std::memcpy(buf.data() + k->param_offsets[0], &base, sizeof base);
    volatile int abort_flag = 0;
    cudamux_launch L{};
    L.loop = k->loop;
    L.args = buf.data();
    L.grid = {block + 1, 1, 1};
    L.block = {bx, by, 1};
    L.abort = &abort_flag;
    L.flags = k->flags;
    L.kernel_fn = k->fn;
    L.args_size = k->args_size;
    alignas(64) static unsigned char shared[1024];
    char msg[256] = {};
    EXPECT_EQ(cudamux_run_block(&L, cudamux_u3{block, 0, 0}, shared, msg, sizeof msg), 0) << msg;
    return out;
  });
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], r[1]);
  for (unsigned t = 0; t < bx * by; ++t) ASSERT_EQ(r[1][t], t) << t;
}

TEST_F(Flat, AllocaKeepsTheThreadLoop) {
  const auto r = both<std::vector<int>>(
      "with_alloca",
      [&](const cudamux_kernel_desc* k) {
        std::vector<int> out(64, 0);
        EXPECT_EQ(launch(k, {2, 1, 1}, {32, 1, 1}, {ptr(out.data()), arg(5)}, 0), 0);
        return out;
      },
      false);
  ASSERT_EQ(r.size(), 2u);
  for (unsigned i = 0; i < 64; ++i) ASSERT_EQ(r[1][i], 4 * static_cast<int>(i)) << i;
}

}  // namespace
