// Warp collectives: vote, shuffle, match, reductions; full and partial warps; cooperative groups.
#include <algorithm>

#include "kernel_fixture.hpp"

namespace cudamux::mock::test {
namespace {

using MockWarp = KernelTest;

const char* kWarpKernels = R"(
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void votes(unsigned* out) {
  const unsigned t = threadIdx.x, lane = t % 32;
  unsigned* o = out + 8 * t;
  o[0] = __ballot_sync(0xffffffffu, lane % 3 == 0);
  o[1] = __any_sync(0xffffffffu, lane == 7);
  o[2] = __all_sync(0xffffffffu, lane < 40);
  o[3] = __all_sync(0xffffffffu, lane < 31);
  o[4] = __activemask();
  o[5] = __match_any_sync(0xffffffffu, lane / 8);
  int pred = 0;
  o[6] = __match_all_sync(0xffffffffu, 5, &pred);
  o[7] = pred;
}
extern "C" __global__ void shuffles(int* out) {
  const int t = threadIdx.x, lane = t % 32;
  int* o = out + 6 * t;
  o[0] = __shfl_sync(0xffffffffu, t * 10, 3);          // lane 3's value
  o[1] = __shfl_up_sync(0xffffffffu, t, 2);            // lanes 0,1 keep their own
  o[2] = __shfl_down_sync(0xffffffffu, t, 4);
  o[3] = __shfl_xor_sync(0xffffffffu, t, 1);
  o[4] = __shfl_down_sync(0xffffffffu, lane, 1, 8);    // width 8: segments of 8 lanes
  double d = __shfl_sync(0xffffffffu, 0.5 * t, 0);     // 8-byte values
  o[5] = (int)(d * 2);
}
extern "C" __global__ void warp_sum(const int* in, int* out) {
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);
  if (threadIdx.x % 32 == 0) atomicAdd(out, v);
  __syncwarp();
  out[1 + blockIdx.x * blockDim.x + threadIdx.x] = __reduce_add_sync(0xffffffffu, 1) * 100 +
      __reduce_max_sync(0xffffffffu, (int)(threadIdx.x % 32)) - __reduce_min_sync(0xffffffffu, -3);
}
extern "C" __global__ void tiles(int* out) {
  cg::thread_block block = cg::this_thread_block();
  auto tile = cg::tiled_partition<8>(block);
  int v = (int)block.thread_rank();
  int sum = cg::reduce(tile, v, cg::plus<int>());
  int first = tile.shfl(v, 0);
  tile.sync();
  block.sync();
  out[block.thread_rank()] = sum * 1000 + first * 10 + (int)tile.thread_rank() +
                             (tile.meta_group_rank() == block.thread_rank() / 8 ? 0 : 1000000);
}
)";

TEST_F(MockWarp, VotesOnFullAndPartialWarps) {
  auto m = build(kWarpKernels);
  ASSERT_TRUE(m);
  constexpr unsigned kT = 48;  // one full warp and a partial one of 16 lanes
  auto* out = dev<unsigned>(8 * kT);
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("votes"), {1}, {kT}, 0, out), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (unsigned t = 0; t < kT; ++t) {
    const bool partial = t >= 32;
    const unsigned lanes = partial ? 16 : 32;
    const unsigned all = partial ? 0xFFFFu : 0xFFFFFFFFu;
    unsigned ballot = 0;
    for (unsigned l = 0; l < lanes; ++l) ballot |= (l % 3 == 0 ? 1u : 0u) << l;
    const unsigned* o = out + 8 * t;
    EXPECT_EQ(o[0], ballot) << t;
    EXPECT_EQ(o[1], 1u) << t;
    EXPECT_EQ(o[2], 1u) << t;
    EXPECT_EQ(o[3], partial ? 1u : 0u) << t;  // lane 31 does not exist in the partial warp
    EXPECT_EQ(o[4], all) << t;
    EXPECT_EQ(o[5], (0xFFu << (8 * ((t % 32) / 8))) & all) << t;
    EXPECT_EQ(o[6], all) << t;
    EXPECT_EQ(o[7], 1u) << t;
  }
}

TEST_F(MockWarp, ShufflesOnFullAndPartialWarps) {
  auto m = build(kWarpKernels);
  ASSERT_TRUE(m);
  constexpr int kT = 40;
  auto* out = dev<int>(6 * kT);
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("shuffles"), {1}, {kT}, 0, out), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (int t = 0; t < kT; ++t) {
    const int lane = t % 32, base = t - lane, lanes = t < 32 ? 32 : kT - 32;
    const int* o = out + 6 * t;
    EXPECT_EQ(o[0], (base + 3) * 10) << t;
    EXPECT_EQ(o[1], lane >= 2 ? t - 2 : t) << t;
    EXPECT_EQ(o[2], lane + 4 < lanes ? t + 4 : t) << t;  // no lane there: own value
    EXPECT_EQ(o[3], (lane ^ 1) < lanes ? base + (lane ^ 1) : t) << t;
    EXPECT_EQ(o[4], lane % 8 < 7 && lane + 1 < lanes ? lane + 1 : lane) << t;
    EXPECT_EQ(o[5], base) << t;
  }
}

TEST_F(MockWarp, WarpReductionsConcurrentBlocks) {
  auto m = build(kWarpKernels);
  ASSERT_TRUE(m);
  constexpr int kBlocks = 64, kT = 128;
  auto* in = dev<int>(kBlocks * kT);
  auto* out = dev<int>(1 + kBlocks * kT);
  long long expect = 0;
  for (int i = 0; i < kBlocks * kT; ++i) {
    in[i] = i % 97 - 40;
    expect += in[i];
  }
  out[0] = 0;
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("warp_sum"), {kBlocks}, {kT}, 0, static_cast<const int*>(in), out),
            CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(out[0], expect);
  for (int i = 0; i < kBlocks * kT; ++i) ASSERT_EQ(out[1 + i], 32 * 100 + 31 + 3) << i;
}

TEST_F(MockWarp, CooperativeGroupsTiles) {
  auto m = build(kWarpKernels);
  ASSERT_TRUE(m);
  constexpr int kT = 64;
  auto* out = dev<int>(kT);
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("tiles"), {1}, {kT}, 0, out), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (int t = 0; t < kT; ++t) {
    const int first = t / 8 * 8;
    const int sum = 8 * first + 28;
    EXPECT_EQ(out[t], sum * 1000 + first * 10 + t % 8) << t;
  }
}

TEST_F(MockWarp, BarrierNeverReachedByOthersFailsInsteadOfHanging) {
  auto m = build(R"(
extern "C" __global__ void k(int* p) {
  // Lanes 0-15 wait at the block barrier for lanes 16-31, which wait at a warp barrier
  // for lanes 0-15: neither can complete.
  if (threadIdx.x < 16) { __syncthreads(); } else if (threadIdx.x < 32) { __syncwarp(); }
  p[threadIdx.x] = 1;
}
)");
  ASSERT_TRUE(m);
  auto* p = dev<int>(64);
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("k"), {1}, {64}, 0, p), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_NE(log_text().find("never reach"), std::string::npos) << log_text();
}

}  // namespace
}  // namespace cudamux::mock::test
