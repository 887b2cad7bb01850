// The CUDA device language on the CPU: barriers, shared memory, atomics, intrinsics,
// printf/assert, templates, built-in variables.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernel_fixture.hpp"

namespace cudamux::mock::test {
namespace {

using MockLanguage = KernelTest;

TEST_F(MockLanguage, BlockReductionWithSyncthreads) {
  auto m = build(R"(
extern "C" __global__ void __launch_bounds__(256) reduce(const int* in, int* out) {
  __shared__ int s[256];
  const unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned d = blockDim.x / 2; d > 0; d /= 2) {
    if (t < d) s[t] += s[t + d];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}
)");
  ASSERT_TRUE(m);
  constexpr int kBlocks = 37;
  auto* in = dev<int>(kBlocks * 256);
  auto* out = dev<int>(kBlocks);
  for (int i = 0; i < kBlocks * 256; ++i) in[i] = (i * 7919) % 1000 - 500;
  auto q = queue();
  ASSERT_EQ(
      launch(*q, m->function("reduce"), {kBlocks}, {256}, 0, static_cast<const int*>(in), out),
      CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (int b = 0; b < kBlocks; ++b)
    EXPECT_EQ(out[b], std::accumulate(in + b * 256, in + (b + 1) * 256, 0)) << b;
  int v = 0;
  ASSERT_TRUE(m->function("reduce")->attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, v).ok());
  EXPECT_EQ(v, 256);
}

TEST_F(MockLanguage, ReturnedThreadsCountAsArrivedAndSyncthreadsCount) {
  auto m = build(R"(
extern "C" __global__ void k(int* out, int limit) {
  const unsigned t = threadIdx.x + blockDim.x * threadIdx.y;
  if (t >= (unsigned)limit) return;  // these never reach the barriers
  int c = __syncthreads_count(t % 3 == 0);
  int a = __syncthreads_and(t < 1000);
  int o = __syncthreads_or(t == 5);
  int none = __syncthreads_or(0);
  __syncthreads();
  out[t] = c * 1000 + a * 100 + o * 10 + none;
}
)");
  ASSERT_TRUE(m);
  auto* out = dev<int>(200);
  std::fill(out, out + 200, -1);
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("k"), {2}, {10, 20}, 0, out, 150), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (int t = 0; t < 200; ++t) {
    if (t < 150) {
      EXPECT_EQ(out[t], 50 * 1000 + 100 + 10) << t;  // 0,3,...,147: 50 threads
    } else {
      EXPECT_EQ(out[t], -1) << t;
    }
  }
}

TEST_F(MockLanguage, DynamicSharedMemoryOfSeveralTypesAliasesOneBuffer) {
  auto m = build(R"(
extern __shared__ float fbuf[];
extern "C" __global__ void k(unsigned* out) {
  extern __shared__ __align__(16) unsigned char bytes[];
  extern __shared__ unsigned words[];
  const unsigned t = threadIdx.x;
  fbuf[t] = 1.0f;                  // same storage as words[t]
  __syncthreads();
  out[t] = words[t];
  __syncthreads();
  if (t == 0) {
    for (unsigned i = 0; i < 4 * blockDim.x; ++i) bytes[i] = (unsigned char)(i + blockIdx.x);
  }
  __syncthreads();
  out[blockDim.x + t] = words[t];
  out[2 * blockDim.x + t] = (unsigned)(((char*)(unsigned*)words) == (char*)(float*)fbuf);
}
)");
  ASSERT_TRUE(m);
  constexpr unsigned kT = 64;
  auto* out = dev<unsigned>(3 * kT * 2);
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("k"), {1}, {kT}, kT * 4, out), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (unsigned t = 0; t < kT; ++t) {
    EXPECT_EQ(out[t], 0x3f800000u);
    const unsigned b = 4 * t;
    EXPECT_EQ(out[kT + t], b | (b + 1) << 8 | (b + 2) << 16 | (b + 3u) << 24);
    EXPECT_EQ(out[2 * kT + t], 1u);
  }
}

TEST_F(MockLanguage, AtomicsAreAtomicAcrossConcurrentBlocks) {
  auto m = build(R"(
extern "C" __global__ void k(int* i, unsigned* u, unsigned long long* ull, float* f, double* d,
                             int* mn, int* mx, unsigned* bits) {
  atomicAdd(i, 1);
  atomicSub(i + 1, 2);
  atomicAdd(u, 3u);
  atomicAdd(ull, 1ull << 33);
  atomicAdd(f, 0.5f);
  atomicAdd(d, 0.25);
  const int id = blockIdx.x * blockDim.x + threadIdx.x;
  atomicMin(mn, 1000 - id);
  atomicMax(mx, id - 7);
  atomicOr(bits, 1u << (id % 32));
  atomicXor(bits + 1, 1u);
  atomicAnd(bits + 2, ~(1u << (id % 16)));
  atomicAdd_block(i + 2, 1);
  atomicAdd_system(i + 3, 1);
}
)");
  ASSERT_TRUE(m);
  auto* i = dev<int>(4);
  auto* u = dev<unsigned>(1);
  auto* ull = dev<unsigned long long>(1);
  auto* f = dev<float>(1);
  auto* d = dev<double>(1);
  auto* mn = dev<int>(1);
  auto* mx = dev<int>(1);
  auto* bits = dev<unsigned>(3);
  std::fill(i, i + 4, 0);
  *u = 0;
  *ull = 0;
  *f = 0;
  *d = 0;
  *mn = 1 << 30;
  *mx = -(1 << 30);
  bits[0] = 0;
  bits[1] = 0;
  bits[2] = 0xFFFFFFFFu;
  constexpr int kBlocks = 200, kThreads = 128, kN = kBlocks * kThreads;
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("k"), {kBlocks}, {kThreads}, 0, i, u, ull, f, d, mn, mx, bits),
            CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(i[0], kN);
  EXPECT_EQ(i[1], -2 * kN);
  EXPECT_EQ(i[2], kN);
  EXPECT_EQ(i[3], kN);
  EXPECT_EQ(*u, 3u * kN);
  EXPECT_EQ(*ull, static_cast<unsigned long long>(kN) << 33);
  EXPECT_EQ(*f, 0.5f * kN);  // exact: multiples of 0.5 below 2^24
  EXPECT_EQ(*d, 0.25 * kN);
  EXPECT_EQ(*mn, 1000 - (kN - 1));
  EXPECT_EQ(*mx, kN - 1 - 7);
  EXPECT_EQ(bits[0], 0xFFFFFFFFu);
  EXPECT_EQ(bits[1], static_cast<unsigned>(kN % 2));
  EXPECT_EQ(bits[2], 0xFFFF0000u);
}

TEST_F(MockLanguage, AtomicIncDecWrapAndCasExch) {
  auto m = build(R"(
extern "C" __global__ void k(unsigned* r) {
  // Single thread: exact sequences of CUDA's wrap rules.
  unsigned x = 0;
  for (int i = 0; i < 7; ++i) r[i] = atomicInc(&x, 2u);        // 0 1 2 0 1 2 0
  r[7] = x;                                                    // 1
  unsigned y = 1;
  for (int i = 0; i < 5; ++i) r[8 + i] = atomicDec(&y, 2u);    // 1 0 2 1 0
  r[13] = y;                                                   // 2
  unsigned z = 9;
  r[14] = atomicDec(&z, 3u);                                   // 9 (> 3: set to 3)
  r[15] = z;                                                   // 3
  int c = 5;
  r[16] = (unsigned)atomicCAS(&c, 4, 7);                       // 5, unchanged
  r[17] = (unsigned)atomicCAS(&c, 5, 7);                       // 5, now 7
  r[18] = (unsigned)c;
  float f = 1.5f;
  r[19] = (unsigned)atomicExch(&f, 2.5f);                      // 1
  r[20] = (unsigned)(f * 2);                                   // 5
  unsigned long long big = 10;
  r[21] = (unsigned)atomicExch(&big, 1ull << 40);
  r[22] = (unsigned)(big >> 40);
}
)");
  ASSERT_TRUE(m);
  auto* r = dev<unsigned>(23);
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("k"), {1}, {1}, 0, r), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  const unsigned expect[23] = {0, 1, 2, 0, 1, 2, 0, 1, 1, 0,  2, 1,
                               0, 2, 9, 3, 5, 5, 7, 1, 5, 10, 1};
  for (int i = 0; i < 23; ++i) EXPECT_EQ(r[i], expect[i]) << i;
}

TEST_F(MockLanguage, ConcurrentAtomicIncWrapsExactly) {
  auto m = build(R"(
extern "C" __global__ void k(unsigned* counter, unsigned* hist) {
  const unsigned old = atomicInc(counter, 9u);  // values cycle 0..9
  atomicAdd(&hist[old], 1u);
}
)");
  ASSERT_TRUE(m);
  auto* c = dev<unsigned>(1);
  auto* hist = dev<unsigned>(10);
  *c = 0;
  std::fill(hist, hist + 10, 0u);
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("k"), {100}, {100}, 0, c, hist), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(hist[i], 1000u) << i;
  EXPECT_EQ(*c, 0u);
}

TEST_F(MockLanguage, IntegerIntrinsics) {
  auto m = build(R"(
extern "C" __global__ void k(unsigned* r) {
  r[0] = __popc(0xF0F0u);
  r[1] = __clz(1);
  r[2] = __clz(0);
  r[3] = __ffs(0);
  r[4] = __ffs(0x80);
  r[5] = __brev(1u);
  r[6] = __umul24(0x1000001u, 3u);
  r[7] = (unsigned)__mul24(-2, 3);
  r[8] = (unsigned)__mulhi(0x40000000, 8);
  r[9] = __umulhi(0xFFFFFFFFu, 0xFFFFFFFFu);
  r[10] = __byte_perm(0x33221100u, 0x77665544u, 0x5140u);
  r[11] = __funnelshift_l(0x80000000u, 0x1u, 1);
  r[12] = __funnelshift_r(0x1u, 0x3u, 1);
  r[13] = (unsigned)__popcll(~0ull);
  r[14] = (unsigned)__clzll(1ll);
  r[15] = __float_as_uint(1.0f);
  r[16] = (unsigned)__float2int_rn(2.5f);
  r[17] = (unsigned)__float2int_rn(3.5f);
  r[18] = (unsigned)(int)(__saturatef(1.5f) * 10 + __saturatef(-1.0f));
  r[19] = __ldg(r);
}
)");
  ASSERT_TRUE(m);
  auto* r = dev<unsigned>(20);
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("k"), {1}, {1}, 0, r), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  const unsigned expect[20] = {
      8, 31,          32,          0, 8,           0x80000000u, 3,  static_cast<unsigned>(-6),
      2, 0xFFFFFFFEu, 0x55114400u, 3, 0x80000000u, 64,          63, 0x3f800000u,
      2, 4,           10,          8};
  for (int i = 0; i < 20; ++i) EXPECT_EQ(r[i], expect[i]) << i;
}

TEST_F(MockLanguage, MathFunctionsAndOverloads) {
  auto m = build(R"(
extern "C" __global__ void k(float* f, double* d) {
  f[0] = sqrtf(16.0f);
  f[1] = sqrt(9.0f);           // float overload
  f[2] = __expf(0.0f) + expf(0.0f);
  f[3] = rsqrtf(4.0f);
  f[4] = __fdividef(1.0f, 4.0f);
  f[5] = fminf(2.0f, -3.0f) + fmaxf(2.0f, -3.0f);
  f[6] = min(3, 7) + max(2.5f, 1.0f);
  f[7] = __fmaf_rn(2.0f, 3.0f, 1.0f);
  f[8] = floorf(-1.5f) + ceilf(1.2f);
  f[9] = sinf(0.0f) + cosf(0.0f) + __sinf(0.0f);
  f[10] = fabsf(-2.0f) + powf(2.0f, 10.0f);
  f[11] = isnan(sqrtf(-1.0f)) ? 1.0f : 0.0f;
  d[0] = sqrt(2.0) * sqrt(2.0);
  d[1] = exp(1.0);
  d[2] = atan2(1.0, 1.0);
  d[3] = rsqrt(16.0);
}
)");
  ASSERT_TRUE(m);
  auto* f = dev<float>(12);
  auto* d = dev<double>(4);
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("k"), {1}, {1}, 0, f, d), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  const float ef[12] = {4, 3, 2, 0.5f, 0.25f, -1, 5.5f, 7, 0, 1, 1026, 1};
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(f[i], ef[i]) << i;
  EXPECT_DOUBLE_EQ(d[0], 2.0000000000000004);
  EXPECT_DOUBLE_EQ(d[1], std::exp(1.0));
  EXPECT_DOUBLE_EQ(d[2], std::atan2(1.0, 1.0));
  EXPECT_DOUBLE_EQ(d[3], 0.25);
}

TEST_F(MockLanguage, BuiltInVariablesIn3D) {
  auto m = build(R"(
extern "C" __global__ void k(uint4* out) {
  const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned n = blockDim.x * blockDim.y * blockDim.z;
  dim3 g = gridDim;
  out[b * n + t] = make_uint4(threadIdx.x + 10 * threadIdx.y + 100 * threadIdx.z,
                              blockIdx.x + 10 * blockIdx.y + 100 * blockIdx.z,
                              g.x * g.y * g.z, warpSize);
}
)");
  ASSERT_TRUE(m);
  constexpr unsigned kB = 2 * 3 * 2, kT = 4 * 3 * 5;
  auto* out = dev<unsigned>(4 * kB * kT);
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("k"), {2, 3, 2}, {4, 3, 5}, 0, out), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 3; ++by)
      for (unsigned bx = 0; bx < 2; ++bx)
        for (unsigned tz = 0; tz < 5; ++tz)
          for (unsigned ty = 0; ty < 3; ++ty)
            for (unsigned tx = 0; tx < 4; ++tx) {
              const unsigned b = bx + 2 * (by + 3 * bz), t = tx + 4 * (ty + 3 * tz);
              const unsigned* o = out + 4 * (b * kT + t);
              ASSERT_EQ(o[0], tx + 10 * ty + 100 * tz);
              ASSERT_EQ(o[1], bx + 10 * by + 100 * bz);
              ASSERT_EQ(o[2], kB);
              ASSERT_EQ(o[3], 32u);
            }
}

TEST_F(MockLanguage, PrintfReachesStdout) {
  auto m = build(R"(
#include <cstdio>
extern "C" __global__ void k(int v) {
  if (threadIdx.x == 1) printf("hello from block %d thread %d: %d %.2f %s\n", blockIdx.x, threadIdx.x, v, 1.5, "ok");
}
)");
  ASSERT_TRUE(m);
  auto q = queue();
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(launch(*q, m->function("k"), {2}, {4}, 0, 42), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("hello from block 0 thread 1: 42 1.50 ok\n"), std::string::npos) << out;
  EXPECT_NE(out.find("hello from block 1 thread 1: 42 1.50 ok\n"), std::string::npos) << out;
}

TEST_F(MockLanguage, AssertFailsTheLaunchWithItsMessage) {
  auto m = build(R"(
// assert needs no include with NVRTC (and <assert.h> would need an -I folder)
extern "C" __global__ void k(int* p) {
  __syncthreads();
  assert(p[threadIdx.x] < 5);
  atomicAdd(p + 100, 1);
}
)",
                 {}, {});
  ASSERT_TRUE(m);
  auto* p = dev<int>(101);
  std::fill(p, p + 101, 0);
  p[3] = 7;
  auto q = queue();
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(launch(*q, m->function("k"), {1}, {8}, 0, p), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_ERROR_ASSERT);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("test.cu:5: "), std::string::npos) << err;
  EXPECT_NE(err.find("block: [0,0,0], thread: [3,0,0] Assertion `p[threadIdx.x] < 5` failed."),
            std::string::npos)
      << err;
  EXPECT_EQ(cu(q->query()), CUDA_ERROR_ASSERT);  // sticky
  EXPECT_EQ(cu(q->synchronize()), CUDA_ERROR_ASSERT);
  EXPECT_EQ(cu(ctx->synchronize()), CUDA_ERROR_ASSERT);
  EXPECT_NE(log_text().find("Assertion"), std::string::npos);
}

// -DNDEBUG given to the compile turns assert off, as in NVIDIA's NVRTC, although the precompiled
// prelude is built without the program's own macros (under g++ and clang++ alike).
TEST_F(MockLanguage, NdebugOptionTurnsAssertOff) {
  be::CompileOptions o;
  o.defines.emplace_back("NDEBUG", "");
  auto m = build(R"(
extern "C" __global__ void k(int* p) {
  assert(p[0] == 1);
  p[1] = 2;
}
)",
                 o);
  ASSERT_TRUE(m);
  auto* p = dev<int>(2);
  p[0] = 0;
  p[1] = 0;
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("k"), {1}, {1}, 0, p), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(p[1], 2);
}

TEST_F(MockLanguage, AssertSkipsTheRemainingBlocks) {
  auto m = build(R"(
extern "C" __global__ void k(int* count) {
  assert(blockIdx.x != 0);
  if (threadIdx.x == 0) atomicAdd(count, 1);
}
)");
  ASSERT_TRUE(m);
  auto* count = dev<int>(1);
  *count = 0;
  auto q = queue();
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(launch(*q, m->function("k"), {100000}, {1}, 0, count), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_ERROR_ASSERT);
  ::testing::internal::GetCapturedStderr();
  EXPECT_LT(*count, 100000 - 1);  // not every later block ran
}

TEST_F(MockLanguage, TemplatesAndDeviceFunctions) {
  auto m = build(R"(
template <class T> __device__ __forceinline__ T square(T v) { return v * v; }
struct Pair { int a; double b; };
namespace outer { namespace {
__global__ void k(Pair p, double* out, char c) { out[0] = square(p.a) + square(p.b) + c; }
} }
)",
                 {}, {"outer::k"});
  ASSERT_TRUE(m);
  ASSERT_EQ(lowered.size(), 1u);
  auto* f = m->function(lowered[0].second);
  ASSERT_NE(f, nullptr) << lowered[0].second;
  EXPECT_EQ(lowered[0].second, "_ZN5outer12_GLOBAL__N_11kE4PairPdc");
  ASSERT_EQ(f->params().size(), 3u);
  EXPECT_EQ(f->params()[0].size, 16u);
  EXPECT_EQ(f->params()[1].offset, 16u);
  EXPECT_EQ(f->params()[2].offset, 24u);
  auto* out = dev<double>(1);
  auto q = queue();
  struct Pair {
    int a;
    double b;
  };
  ASSERT_EQ(launch(*q, f, {1}, {1}, 0, Pair{3, 0.5}, out, static_cast<char>(1)), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(out[0], 9 + 0.25 + 1);
}

TEST_F(MockLanguage, HalfAndBfloat16Basics) {
  auto m = build(R"(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void k(__half* h, float* f, __nv_bfloat16* b) {
  __half x = __float2half(1.5f);
  __half y = __hadd(x, __float2half(0.25f));
  h[0] = y * __float2half(2.0f);
  f[0] = __half2float(h[0]);
  f[1] = __half2float(__float2half(65504.0f * 2));  // overflows to inf
  b[0] = __float2bfloat16(3.140625f);
  f[2] = __bfloat162float(b[0] + __float2bfloat16(1.0f));
  half2 p = __floats2half2_rn(1.0f, 2.0f);
  f[3] = __high2float(__hmul2(p, p));
}
)");
  ASSERT_TRUE(m);
  auto* h = dev<std::uint16_t>(1);
  auto* f = dev<float>(4);
  auto* b = dev<std::uint16_t>(1);
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("k"), {1}, {1}, 0, h, f, b), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(h[0], 0x4300u);  // 3.5 in binary16
  EXPECT_EQ(f[0], 3.5f);
  EXPECT_TRUE(std::isinf(f[1]));
  EXPECT_EQ(b[0], 0x4049u);  // 3.140625 in bfloat16
  EXPECT_EQ(f[2], 4.125f);   // 4.140625 rounds (ties to even) to bfloat16's 4.125
  EXPECT_EQ(f[3], 4.0f);
}

TEST_F(MockLanguage, HalfAndBfloat16MathFunctions) {
  // tinygrad's half kernels call these (hrcp, hlog2, hexp2, hsin, hsqrt); values exact in both.
  auto m = build(R"(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void k(float* f) {
  f[0] = __half2float(hrcp(__float2half(4.0f)));
  f[1] = __half2float(hlog2(__float2half(8.0f)));
  f[2] = __half2float(hexp2(__float2half(3.0f)));
  f[3] = __half2float(hsin(__float2half(0.0f)));
  f[4] = __half2float(hfloor(__float2half(-1.5f)));
  f[5] = __half2float(hrint(__float2half(2.5f)));
  f[6] = __bfloat162float(hsqrt(__float2bfloat16(16.0f)));
  f[7] = __bfloat162float(hrcp(__float2bfloat16(0.5f)));
  f[8] = __bfloat162float(hlog2(__float2bfloat16(0.25f)));
  f[9] = __half2float(hrcp(__float2half(3.0f)));
  f[10] = __high2float(make_half2(__float2half(1.0f), __float2half(5.0f)));
  f[11] = __bfloat162float(make_bfloat162(__float2bfloat16(1.0f), __float2bfloat16(6.0f)).y);
}
)");
  ASSERT_TRUE(m);
  auto* f = dev<float>(12);
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("k"), {1}, {1}, 0, f), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  const float expected[] = {0.25f, 3.0f, 8.0f, 0.0f, -2.0f, 2.0f, 4.0f, 2.0f, -2.0f};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(f[i], expected[i]) << i;
  EXPECT_EQ(f[9], 0.333251953125f);  // 1/3 rounded to binary16
  EXPECT_EQ(f[10], 5.0f);
  EXPECT_EQ(f[11], 6.0f);
}

TEST_F(MockLanguage, TypePunningThroughWordPointersKeepsTheStores) {
  // CUB's ShuffleDown/ShuffleIndex move a struct through `unsigned*` aliases of it; nvcc keeps
  // those stores, so must the mock's compiler (CuPy's CUB reduction of float64 max lost every
  // lane but lane 0 of each warp under g++'s strict aliasing).
  auto m = build(R"(
struct ValueAndIndex { double value; int index; };
__device__ ValueAndIndex shuffle_down(ValueAndIndex in, int offset) {
  ValueAndIndex out;
  unsigned* out_words = reinterpret_cast<unsigned*>(&out);
  unsigned* in_words = reinterpret_cast<unsigned*>(&in);
  for (int w = 0; w < 4; ++w) out_words[w] = __shfl_down_sync(0xffffffffu, in_words[w], offset);
  return out;
}
extern "C" __global__ void warp_max(const double* in, double* out) {
  ValueAndIndex v{in[threadIdx.x], int(threadIdx.x)};
  for (int offset = 16; offset > 0; offset /= 2) {
    const ValueAndIndex other = shuffle_down(v, offset);
    if (threadIdx.x + offset < 32 && other.value > v.value) v = other;
  }
  if (threadIdx.x == 0) { out[0] = v.value; out[1] = v.index; }
}
)");
  ASSERT_TRUE(m);
  auto* in = dev<double>(32);
  for (int i = 0; i < 32; ++i) in[i] = (i * 7) % 32;  // maximum 31 at lane 9
  auto* out = dev<double>(2);
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("warp_max"), {1}, {32}, 0, in, out), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(out[0], 31.0);
  EXPECT_EQ(out[1], 9.0);
}

TEST_F(MockLanguage, ClockSpinWaitsAcrossABlockEndAndClocksOnlyGrow) {
  // NVIDIA's samples wait with `while (clock() - start < n)` in every thread. The mock runs a
  // block's threads one after another, so its clock advances at least 1024 cycles per reading
  // (backends/mock.md): each thread still sees a delta of at least n and a clock that grows.
  auto m = build(R"(
extern "C" __global__ void spin(long long cycles, long long* waited, int* grew) {
  const long long start = clock64();
  long long now = start, last = start;
  bool monotonic = true;
  while (now - start < cycles) {
    now = clock64();
    monotonic = monotonic && now > last;
    last = now;
  }
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  waited[t] = now - start;
  grew[t] = monotonic;
}
)");
  ASSERT_TRUE(m);
  constexpr int kThreads = 4 * 256;
  auto* waited = dev<long long>(kThreads);
  auto* grew = dev<int>(kThreads);
  auto q = queue();
  constexpr long long kCycles = 2000000;  // 1 ms at 2 GHz on a GPU, per thread
  ASSERT_EQ(launch(*q, m->function("spin"), {4}, {256}, 0, kCycles, waited, grew), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_GE(waited[t], kCycles) << t;
    EXPECT_EQ(grew[t], 1) << t;
  }
}

}  // namespace
}  // namespace cudamux::mock::test
