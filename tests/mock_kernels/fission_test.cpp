// Loop fission at barriers: each kernel runs once through fission (when the compiler proves it
// safe) and once on fibers only (`[mock] fission = false`); results must be identical, and the
// log says which path each kernel took. Kernels the transform must not touch fall back.
#include <cstdlib>
#include <numeric>

#include "kernel_fixture.hpp"

namespace cudamux::mock::test {
namespace {

struct Outcome {
  bool compiled = false;
  CUresult rc = CUDA_ERROR_UNKNOWN;
  std::vector<int> out;
  std::string log;
};

class MockFission : public ::testing::Test {
 protected:
  struct Dim {
    unsigned v[3];
    Dim(unsigned x, unsigned y = 1, unsigned z = 1) : v{x, y, z} {}
  };

  // Every test kernel is `k(const int* in, int* out, int n)`.
  static Outcome run(bool fission, const std::string& source, const char* kernel, Dim grid,
                     Dim block, const std::vector<int>& in, std::size_t out_n, int n,
                     unsigned shared = 0) {
    Outcome o;
    // No compile cache: the log must show this compile's decisions.
    ::setenv("CUDA_CACHE_DISABLE", "1", 1);
    Created c = create_backend(std::string("[mock]\nmemory = 268435456\nfission = ") +
                               (fission ? "true" : "false") + "\n");
    ::unsetenv("CUDA_CACHE_DISABLE");
    EXPECT_TRUE(c.backend) << c.error;
    if (!c.backend) return o;
    std::unique_ptr<be::DeviceContext> ctx;
    EXPECT_EQ(cu(c.backend->open_context(0, 0, ctx)), CUDA_SUCCESS);
    be::CompileRequest r;
    r.source = source;
    r.name = "fission.cu";
    be::CompileResult res;
    EXPECT_TRUE(c.backend->compiler()->compile(r, res).ok());
    o.log = c.log->str();
    if (!res.success) {
      ADD_FAILURE() << res.log;
      return o;
    }
    o.compiled = true;
    std::unique_ptr<be::Module> m;
    EXPECT_EQ(cu(ctx->load_module(be::native_image(res.image.data()), m)), CUDA_SUCCESS);
    if (!m) return o;
    be::Function* f = m->function(kernel);
    EXPECT_NE(f, nullptr);
    if (f == nullptr) return o;
    int* din = nullptr;
    int* dout = nullptr;
    EXPECT_EQ(cu(ctx->allocate(std::max<std::size_t>(1, in.size()) * sizeof(int),
                               reinterpret_cast<void**>(&din))),
              CUDA_SUCCESS);
    EXPECT_EQ(cu(ctx->allocate(out_n * sizeof(int), reinterpret_cast<void**>(&dout))),
              CUDA_SUCCESS);
    std::copy(in.begin(), in.end(), din);
    std::fill(dout, dout + out_n, -7);
    std::unique_ptr<be::Queue> q;
    EXPECT_EQ(cu(ctx->create_queue(CU_STREAM_NON_BLOCKING, 0, q)), CUDA_SUCCESS);
    struct {
      const int* in;
      int* out;
      int n;
    } args{din, dout, n};
    be::LaunchDesc d;
    d.function = f;
    for (int i = 0; i < 3; ++i) {
      d.grid[i] = grid.v[i];
      d.block[i] = block.v[i];
    }
    d.shared_bytes = shared;
    d.args = &args;
    d.args_size = sizeof args;
    o.rc = cu(q->launch(d));
    if (o.rc == CUDA_SUCCESS) o.rc = cu(q->synchronize());
    o.out.assign(dout, dout + out_n);
    o.log = c.log->str();
    q.reset();
    ctx->free(din);
    ctx->free(dout);
    return o;
  }

  static bool fissioned(const Outcome& o, const std::string& kernel) {
    return o.log.find("kernel " + kernel + " runs fissioned") != std::string::npos;
  }

  // Runs both ways; expects identical results and success; returns the fission outcome.
  static Outcome both(const std::string& source, const char* kernel, Dim grid, Dim block,
                      const std::vector<int>& in, std::size_t out_n, int n, unsigned shared = 0) {
    Outcome a = run(true, source, kernel, grid, block, in, out_n, n, shared);
    Outcome b = run(false, source, kernel, grid, block, in, out_n, n, shared);
    EXPECT_EQ(a.rc, CUDA_SUCCESS) << a.log;
    EXPECT_EQ(b.rc, CUDA_SUCCESS) << b.log;
    EXPECT_EQ(a.out, b.out);
    EXPECT_FALSE(fissioned(b, kernel)) << "fission = false must keep fibers";
    return a;
  }
};

std::vector<int> iota(std::size_t n, int from = 1) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

TEST_F(MockFission, BlockReductionMatchesFibersAndHost) {
  const char* src = R"(
extern "C" __global__ void k(const int* in, int* out, int n) {
  __shared__ int s[256];
  const unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * 256 + t];
  __syncthreads();
  for (unsigned d = blockDim.x / 2; d > 0; d >>= 1) {
    if (t < d) s[t] += s[t + d];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}
)";
  const auto in = iota(64 * 256);
  Outcome o = both(src, "k", {64}, {256}, in, 64, 0);
  EXPECT_TRUE(fissioned(o, "k")) << o.log;
  for (int b = 0; b < 64; ++b) {
    const int expect = std::accumulate(in.begin() + b * 256, in.begin() + (b + 1) * 256, 0);
    EXPECT_EQ(o.out[static_cast<std::size_t>(b)], expect) << "block " << b;
  }
}

TEST_F(MockFission, TiledMatmulWith2DBlocksMatchesFibersAndHost) {
  const char* src = R"(
#define TILE 8
extern "C" __global__ void k(const int* a, int* c, int n) {
  __shared__ int ta[TILE][TILE];
  __shared__ int tb[TILE][TILE];
  const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  int acc = 0;
  for (int k0 = 0; k0 < n; k0 += TILE) {
    ta[threadIdx.y][threadIdx.x] = a[row * n + k0 + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = a[n * n + (k0 + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  c[row * n + col] = acc;
}
)";
  const int n = 24;
  std::vector<int> in(2 * n * n);
  for (int i = 0; i < 2 * n * n; ++i) in[static_cast<std::size_t>(i)] = (i * 7) % 11 - 5;
  Outcome o = both(src, "k", {n / 8, n / 8}, {8, 8}, in, n * n, n);
  EXPECT_TRUE(fissioned(o, "k")) << o.log;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      int acc = 0;
      for (int k = 0; k < n; ++k) acc += in[i * n + k] * in[n * n + k * n + j];
      EXPECT_EQ(o.out[static_cast<std::size_t>(i * n + j)], acc);
    }
}

TEST_F(MockFission, ThreadIndexValuesAreRecomputedSharedReadsAreKept) {
  // i and i2 are pure functions of threadIdx (recomputed in every region, issue 18); j reads a
  // __shared__ value that a later phase overwrites, so it must be kept per thread, as must a
  // value modified after its declaration. 3-D blocks, an early return, a shadowing scope.
  const char* src = R"(
extern "C" __global__ void k(const int* in, int* out, int n) {
  __shared__ int base;
  const int i = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const int i2 = i * 2 + threadIdx.z;
  if (i == 0) base = in[blockIdx.x];
  __syncthreads();
  const int j = base + i;
  int m = i;
  m += 3;
  __syncthreads();
  if (i == 0) base = 1000;
  __syncthreads();
  if (i >= n) return;
  __syncthreads();
  {
    const int i = 5;
    __syncthreads();
    out[blockIdx.x * 64 + i2] = j * 100 + m * 10 + i + base;
  }
}
)";
  const std::vector<int> in = {7, 11, 13};
  const int n = 28;  // of 32 threads per block
  Outcome o = both(src, "k", {3}, {4, 4, 2}, in, 3 * 64, n);
  EXPECT_TRUE(fissioned(o, "k")) << o.log;
  for (int b = 0; b < 3; ++b)
    for (int z = 0; z < 2; ++z)
      for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 4; ++x) {
          const int i = x + 4 * (y + 4 * z);
          const int at = b * 64 + i * 2 + z;
          const int expect =
              i < n ? (in[static_cast<std::size_t>(b)] + i) * 100 + (i + 3) * 10 + 5 + 1000 : -7;
          EXPECT_EQ(o.out[static_cast<std::size_t>(at)], expect)
              << "block " << b << " thread " << i;
        }
}

TEST_F(MockFission, RegionsCallingDeviceFunctionsSeeThreadIdx) {
  // A helper reads the global threadIdx: regions that call it must store it per thread.
  const char* src = R"(
__device__ int lane_of() { return threadIdx.x + 100 * threadIdx.y; }
extern "C" __global__ void k(const int* in, int* out, int n) {
  __shared__ int s[64];
  const int t = threadIdx.x + blockDim.x * threadIdx.y;
  s[t] = lane_of();
  __syncthreads();
  out[blockIdx.x * 64 + t] = s[(t + 1) % (blockDim.x * blockDim.y)] + in[0] * lane_of();
}
)";
  Outcome o = both(src, "k", {2}, {8, 8}, {2}, 128, 0);
  EXPECT_TRUE(fissioned(o, "k")) << o.log;
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 64; ++t) {
      const int u = (t + 1) % 64;
      const int expect = (u % 8 + 100 * (u / 8)) + 2 * (t % 8 + 100 * (t / 8));
      EXPECT_EQ(o.out[static_cast<std::size_t>(b * 64 + t)], expect) << "thread " << t;
    }
}

TEST_F(MockFission, EarlyReturnCountsAsArrival) {
  // Threads at or past n return before the barriers; the rest still meet there.
  const char* src = R"(
extern "C" __global__ void k(const int* in, int* out, int n) {
  __shared__ int s[128];
  __shared__ int arrived;
  const int t = threadIdx.x;
  if (t == 0) arrived = 0;
  __syncthreads();
  if (t >= n) return;
  s[t] = in[t] * 2;
  atomicAdd(&arrived, 1);
  __syncthreads();
  out[t] = s[n - 1 - t] + 1000 * arrived;
}
)";
  Outcome o = both(src, "k", {1}, {128}, iota(128), 128, 100);
  EXPECT_TRUE(fissioned(o, "k")) << o.log;
  for (int t = 0; t < 100; ++t)
    EXPECT_EQ(o.out[static_cast<std::size_t>(t)], 2 * (100 - t) + 100000);
  for (int t = 100; t < 128; ++t) EXPECT_EQ(o.out[static_cast<std::size_t>(t)], -7);
}

TEST_F(MockFission, SyncthreadsCountAndOr) {
  const char* src = R"(
extern "C" __global__ void k(const int* in, int* out, int n) {
  const int t = threadIdx.x;
  if (t >= n) return;
  int c = __syncthreads_count(in[t] % 3 == 0);
  const int a = __syncthreads_and(in[t] > 0);
  int o;
  o = __syncthreads_or(in[t] == 5);
  const int none = __syncthreads_or(in[t] < 0);
  out[t] = c * 1000 + a * 100 + o * 10 + none;
}
)";
  Outcome o = both(src, "k", {1}, {96}, iota(96), 96, 90);
  EXPECT_TRUE(fissioned(o, "k")) << o.log;
  // Threads 0..89 live: values 1..90, 30 multiples of 3, all positive, one 5, none negative.
  for (int t = 0; t < 90; ++t)
    EXPECT_EQ(o.out[static_cast<std::size_t>(t)], 30 * 1000 + 100 + 10 + 0);
  EXPECT_EQ(o.out[90], -7);
}

TEST_F(MockFission, DynamicSharedMemoryAndThreadIdxPerPhase3D) {
  const char* src = R"(
extern "C" __global__ void k(const int* in, int* out, int n) {
  extern __shared__ int sh[];
  const unsigned lin = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned total = blockDim.x * blockDim.y * blockDim.z;
  int mine = in[lin] + 100 * threadIdx.z;
  sh[lin] = mine;
  __syncthreads();
  int other = sh[total - 1 - lin];
  __syncthreads();
  sh[lin] = threadIdx.x + 10 * threadIdx.y + 100 * threadIdx.z;
  __syncthreads();
  out[blockIdx.x * total + lin] = other * 10000 + sh[lin] + n * mine * 0;
}
)";
  Outcome o = both(src, "k", {3}, {4, 3, 2}, iota(24, 0), 72, 1, 24 * sizeof(int));
  EXPECT_TRUE(fissioned(o, "k")) << o.log;
  for (unsigned b = 0; b < 3; ++b)
    for (unsigned z = 0; z < 2; ++z)
      for (unsigned y = 0; y < 3; ++y)
        for (unsigned x = 0; x < 4; ++x) {
          const unsigned lin = x + 4 * (y + 3 * z);
          const unsigned mirror = 23 - lin;
          const int other = static_cast<int>(mirror + 100 * (mirror / 12));
          EXPECT_EQ(o.out[b * 24 + lin], other * 10000 + static_cast<int>(x + 10 * y + 100 * z));
        }
}

TEST_F(MockFission, UniformIfAndNestedLoops) {
  const char* src = R"(
#define ROUNDS 3
extern "C" __global__ void k(const int* in, int* out, int n) {
  __shared__ int s[64];
  const int t = threadIdx.x;
  int v = in[t];
  for (int r = 0; r < ROUNDS; ++r) {
    s[t] = v;
    __syncthreads();
    if (n > 1) {
      for (int step = 1; step < 64; step *= 2) {
        int left = t >= step ? s[t - step] : 0;
        __syncthreads();
        s[t] += left;
        __syncthreads();
      }
    } else {
      __syncthreads();
    }
    v = s[t] % 1000;
    __syncthreads();
  }
  out[t] = v;
}
)";
  Outcome o = both(src, "k", {1}, {64}, iota(64), 64, 2);
  EXPECT_TRUE(fissioned(o, "k")) << o.log;
  std::vector<int> v = iota(64);
  for (int r = 0; r < 3; ++r) {
    std::partial_sum(v.begin(), v.end(), v.begin());
    for (auto& x : v) x %= 1000;
  }
  EXPECT_EQ(o.out, v);
}

// Kernels the transform must leave to fibers; results still identical.
TEST_F(MockFission, BarrierInDivergentCodeFallsBack) {
  const char* src = R"(
extern "C" __global__ void k(const int* in, int* out, int n) {
  __shared__ int s[32];
  const int t = threadIdx.x;
  if (t < n) {
    s[t] = in[t];
    __syncthreads();
    out[t] = s[n - 1 - t];
  }
}
)";
  Outcome o = both(src, "k", {1}, {64}, iota(64), 64, 32);
  EXPECT_FALSE(fissioned(o, "k"));
  EXPECT_NE(o.log.find("kernel k keeps fibers"), std::string::npos) << o.log;
  for (int t = 0; t < 32; ++t) EXPECT_EQ(o.out[static_cast<std::size_t>(t)], 32 - t);
}

TEST_F(MockFission, GotoFallsBack) {
  const char* src = R"(
extern "C" __global__ void k(const int* in, int* out, int n) {
  __shared__ int s[32];
  const int t = threadIdx.x;
  int v = in[t];
  if (v > n) goto skip;
  v *= 2;
skip:
  s[t] = v;
  __syncthreads();
  out[t] = s[31 - t];
}
)";
  Outcome o = both(src, "k", {1}, {32}, iota(32), 32, 10);
  EXPECT_FALSE(fissioned(o, "k"));
  for (int t = 0; t < 32; ++t) {
    const int v = 32 - t;
    EXPECT_EQ(o.out[static_cast<std::size_t>(t)], v > 10 ? v : 2 * v);
  }
}

TEST_F(MockFission, BarrierInHelperKeepsEveryKernelOnFibers) {
  // The helper reaches a barrier from a kernel body the scan cannot see into: no kernel of the
  // program may skip fibers, not even the barrier-free one.
  const char* src = R"(
__device__ void sync_helper() { __syncthreads(); }
extern "C" __global__ void k(const int* in, int* out, int n) {
  __shared__ int s[32];
  s[threadIdx.x] = in[threadIdx.x] + n;
  sync_helper();
  out[threadIdx.x] = s[31 - threadIdx.x];
}
extern "C" __global__ void plain(const int* in, int* out, int n) { out[threadIdx.x] = in[threadIdx.x]; }
)";
  Outcome o = both(src, "k", {1}, {32}, iota(32), 32, 5);
  EXPECT_FALSE(fissioned(o, "k"));
  EXPECT_NE(o.log.find("all kernels use fibers"), std::string::npos) << o.log;
  for (int t = 0; t < 32; ++t) EXPECT_EQ(o.out[static_cast<std::size_t>(t)], 32 - t + 5);
}

TEST_F(MockFission, WarpCollectivesFallBackMacrosAndConditionalsAreSplit) {
  const char* shfl = R"(
extern "C" __global__ void k(const int* in, int* out, int n) {
  __shared__ int s[64];
  int v = __shfl_down_sync(0xffffffffu, in[threadIdx.x], 1) + n;
  s[threadIdx.x] = v;
  __syncthreads();
  out[threadIdx.x] = s[63 - threadIdx.x];
}
)";
  Outcome a = both(shfl, "k", {1}, {64}, iota(64), 64, 0);
  EXPECT_FALSE(fissioned(a, "k"));
  EXPECT_EQ(a.out[0], 64);  // lane 31 of warp 1 keeps its own value (64)
  const char* macro = R"(
#define BAIL(c) if (c) return
extern "C" __global__ void k(const int* in, int* out, int n) {
  __shared__ int s[64];
  BAIL(threadIdx.x >= n);
  s[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = s[n - 1 - threadIdx.x];
}
)";
  // Kernels are analysed after preprocessing: the macro's early return is seen, and the
  // kernel is split with it (the same results as on fibers, compared by both()).
  Outcome b = both(macro, "k", {1}, {64}, iota(64), 64, 40);
  EXPECT_TRUE(fissioned(b, "k"));
  EXPECT_EQ(b.out[0], 40);
  EXPECT_EQ(b.out[39], 1);
  EXPECT_EQ(b.out[40], -7);
  const char* ifdef = R"(
extern "C" __global__ void k(const int* in, int* out, int n) {
  __shared__ int s[64];
#ifdef NOT_DEFINED
  s[threadIdx.x] = 0;
#else
  s[threadIdx.x] = in[threadIdx.x] + n;
#endif
  __syncthreads();
  out[threadIdx.x] = s[63 - threadIdx.x];
}
)";
  Outcome c = both(ifdef, "k", {1}, {64}, iota(64), 64, 1);  // the branch taken only
  EXPECT_TRUE(fissioned(c, "k"));
  EXPECT_EQ(c.out[0], 65);
}

TEST_F(MockFission, UncompilableTransformIsRetriedAsWritten) {
  // A declaration whose type starts with decltype(...) reads as an expression statement to
  // the fission parser: the twin does not compile (v is not visible after the barrier), so the
  // program is compiled without fission.
  const char* src = R"(
extern "C" __global__ void k(const int* in, int* out, int n) {
  __shared__ int s[32];
  decltype(in[0] * 3) v = in[threadIdx.x] * 3;
  s[threadIdx.x] = v;
  __syncthreads();
  out[threadIdx.x] = s[31 - threadIdx.x] + v * n;
}
)";
  Outcome o = both(src, "k", {1}, {32}, iota(32), 32, 0);
  EXPECT_NE(o.log.find("retrying without fission"), std::string::npos) << o.log;
  for (int t = 0; t < 32; ++t) EXPECT_EQ(o.out[static_cast<std::size_t>(t)], 3 * (32 - t));
}

TEST_F(MockFission, BarrierFreeKernelsAreStillCorrectWithAssertAndTrap) {
  // Barrier-free kernels run without fibers; assert and __trap still fail the launch.
  const char* src = R"(
extern "C" __global__ void k(const int* in, int* out, int n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  assert(in[i] != n);
  out[i] = in[i] * 2;
}
)";
  Outcome ok = run(true, src, "k", {4}, {32}, iota(128), 128, -1);
  EXPECT_EQ(ok.rc, CUDA_SUCCESS);
  for (int i = 0; i < 128; ++i) EXPECT_EQ(ok.out[static_cast<std::size_t>(i)], 2 * (i + 1));
  Outcome bad = run(true, src, "k", {4}, {32}, iota(128), 128, 77);
  EXPECT_EQ(bad.rc, CUDA_ERROR_ASSERT);
}

TEST_F(MockFission, FlatBarrierFreeKernelsMatchThreadIdxInTls) {
  // Barrier-free kernels whose program reads threadIdx only in kernel bodies run "flat"
  // (threadIdx a parameter of a twin); a helper reading it (here through a macro) keeps the
  // thread-local threadIdx. Same results, 1-D and 3-D blocks, early return.
  const std::string body = R"(
extern "C" __global__ void k(const int* in, int* out, int n) {
  const unsigned lin = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned i = (blockIdx.y * gridDim.x + blockIdx.x) * (blockDim.x * blockDim.y * blockDim.z) + lin;
  if (i >= static_cast<unsigned>(n)) return;
  out[i] = in[i] * 3 + static_cast<int>(threadIdx.z * 100 + threadIdx.y * 10 + threadIdx.x);
}
)";
  const std::string helper =
      "#define TX threadIdx.x\n__device__ unsigned tx_helper() { return TX; }\n";
  for (const Dim block : {Dim(64), Dim(4, 3, 2)}) {
    const unsigned threads = block.v[0] * block.v[1] * block.v[2];
    const int n = static_cast<int>(threads * 6 - 5);
    Outcome flat = run(true, body, "k", {3, 2}, block, iota(threads * 6), threads * 6, n);
    Outcome tls = run(true, helper + body, "k", {3, 2}, block, iota(threads * 6), threads * 6, n);
    EXPECT_NE(flat.log.find("kernel k runs flat"), std::string::npos) << flat.log;
    EXPECT_EQ(tls.log.find("kernel k runs flat"), std::string::npos) << tls.log;
    EXPECT_EQ(flat.rc, CUDA_SUCCESS);
    EXPECT_EQ(tls.rc, CUDA_SUCCESS);
    EXPECT_EQ(flat.out, tls.out);
    for (unsigned i = 0; i < threads * 6; ++i) {
      const unsigned lin = i % threads;
      const unsigned x = lin % block.v[0], y = (lin / block.v[0]) % block.v[1],
                     z = lin / (block.v[0] * block.v[1]);
      const int expect =
          i < static_cast<unsigned>(n) ? static_cast<int>((i + 1) * 3 + z * 100 + y * 10 + x) : -7;
      EXPECT_EQ(flat.out[i], expect) << "i " << i;
    }
  }
}

TEST_F(MockFission, RegionsSetThreadIdxWhenHelpersCanReadIt) {
  // The last region names neither threadIdx nor a call, but the operator it uses reads
  // threadIdx: every region must still set it.
  const char* src = R"(
struct V { int v; };
__device__ V operator*(V a, int k) { return V{a.v * k + 1000 * static_cast<int>(threadIdx.x)}; }
extern "C" __global__ void k(const int* in, int* out, int n) {
  __shared__ int s[64];
  const unsigned t = threadIdx.x;
  s[t] = in[t];
  __syncthreads();
  V r;
  r.v = s[63 - t];
  __syncthreads();
  out[t] = (r * n).v;
}
)";
  Outcome o = both(src, "k", {1}, {64}, iota(64), 64, 2);
  EXPECT_TRUE(fissioned(o, "k")) << o.log;
  for (int t = 0; t < 64; ++t)
    EXPECT_EQ(o.out[static_cast<std::size_t>(t)], (64 - t) * 2 + 1000 * t);
}

TEST_F(MockFission, LargePerThreadStateFallsBackToFibers) {
  // 2 KiB of per-thread state live across a barrier would need 1024 copies on the worker's
  // stack: the twin does not compile (static_assert) and the program is compiled as written.
  const char* src = R"(
extern "C" __global__ void k(const int* in, int* out, int n) {
  __shared__ int s[64];
  int big[512];
  for (int i = 0; i < 512; ++i) big[i] = in[threadIdx.x] + i;
  s[threadIdx.x] = big[n];
  __syncthreads();
  out[threadIdx.x] = s[63 - threadIdx.x] + big[511];
}
)";
  Outcome o = both(src, "k", {1}, {64}, iota(64), 64, 3);
  EXPECT_NE(o.log.find("retrying without fission"), std::string::npos) << o.log;
  for (int t = 0; t < 64; ++t)
    EXPECT_EQ(o.out[static_cast<std::size_t>(t)], (64 - t) + 3 + (t + 1) + 511);
}

TEST_F(MockFission, ParameterModifiedThroughAReferenceIsNotShared) {
  // Each GPU thread has its own copy of `n`; the twin has one per block. The helper's write is
  // invisible to the token scan, so the twin's const copy must make it fail to compile.
  const char* src = R"(
__device__ void bump(int& x) { x += 1; }
extern "C" __global__ void k(const int* in, int* out, int n) {
  __shared__ int s[32];
  bump(n);
  s[threadIdx.x] = n + in[threadIdx.x] * 0;
  __syncthreads();
  out[threadIdx.x] = s[31 - threadIdx.x] + n;
}
)";
  Outcome o = both(src, "k", {1}, {32}, iota(32), 32, 5);
  EXPECT_NE(o.log.find("retrying without fission"), std::string::npos) << o.log;
  for (int t = 0; t < 32; ++t) EXPECT_EQ(o.out[static_cast<std::size_t>(t)], 12);
}

TEST_F(MockFission, ImageForAnotherCpuIsRefusedNotRun) {
  // Modules are built with -march=native: an image from another CPU must not load (it could
  // die with SIGILL), it gets CUDA_ERROR_NO_BINARY_FOR_GPU and a log line.
  Created c = create_backend("[mock]\nmemory = 268435456\n");
  ASSERT_TRUE(c.backend) << c.error;
  std::unique_ptr<be::DeviceContext> ctx;
  ASSERT_EQ(cu(c.backend->open_context(0, 0, ctx)), CUDA_SUCCESS);
  be::CompileRequest r;
  r.source = "extern \"C\" __global__ void k(int* p) { p[threadIdx.x] = 1; }\n";
  r.name = "cpu.cu";
  be::CompileResult res;
  ASSERT_TRUE(c.backend->compiler()->compile(r, res).ok());
  ASSERT_TRUE(res.success) << res.log;
  std::string image(res.image.data());
  const auto at = image.find(" cpu=");
  ASSERT_NE(at, std::string::npos) << image.substr(0, 80);
  std::unique_ptr<be::Module> m;
  EXPECT_EQ(cu(ctx->load_module(be::native_image(image.c_str()), m)), CUDA_SUCCESS);
  m.reset();
  image[at + 5] = image[at + 5] == '0' ? '1' : '0';
  EXPECT_EQ(cu(ctx->load_module(be::native_image(image.c_str()), m)), CUDA_ERROR_NO_BINARY_FOR_GPU);
  EXPECT_NE(c.log->str().find("compiled for another CPU"), std::string::npos) << c.log->str();
}

}  // namespace
}  // namespace cudamux::mock::test
