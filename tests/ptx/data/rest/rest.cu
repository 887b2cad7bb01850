// Fixture (ptx-rest, issue 15 items 2 and 4): kernels whose PTX (nvcc 13.0, make_fixtures.sh)
// exercises memcheck, assert/printf, grid sync in cooperative launches, cuda::barrier
// (software on compute_75, mbarrier on compute_80/90), spin-waits, nanosleep, named barriers
// with bar.arrive, exit inside a device function, mbarrier forms and video instructions.
#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cassert>
#include <cstdio>
namespace cg = cooperative_groups;

// Memcheck: reads a[0..n) where a may hold fewer elements; out[i] = a[i] + 1.
extern "C" __global__ void read_n(const int* a, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + 1;
}

// Device printf and assert: thread `bad` of block `bad_block` fails.
extern "C" __global__ void check_value(const int* v, int bad_block, int bad) {
  const int t = threadIdx.x;
  if (t == 0) printf("check_value block %d sees %d\n", blockIdx.x, v[blockIdx.x]);
  assert(!(blockIdx.x == bad_block && t == bad));
}

// Cooperative launch: every round, each block adds its index to its slot, then the grid
// syncs and every block checks (and records) the sum of all slots.
extern "C" __global__ void grid_rounds(int* slots, int* sums, int rounds) {
  cg::grid_group grid = cg::this_grid();
  for (int r = 0; r < rounds; ++r) {
    if (threadIdx.x == 0) slots[blockIdx.x] += blockIdx.x + r;
    grid.sync();
    if (threadIdx.x == 0) {
      int s = 0;
      for (unsigned b = 0; b < gridDim.x; ++b) s += slots[b];
      sums[r * gridDim.x + blockIdx.x] = s;
    }
    grid.sync();
  }
}

// cuda::barrier: neighbours exchange through shared memory; arrive/wait, arrive_and_wait and
// arrive_and_drop (odd threads leave the barrier for the last phase).
extern "C" __global__ void aw_barrier(int* out) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  __shared__ int buf[256];
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  buf[threadIdx.x] = threadIdx.x * 3 + blockIdx.x;
  auto token = bar.arrive();
  bar.wait(std::move(token));
  int v = buf[(threadIdx.x + 1) % blockDim.x];
  bar.arrive_and_wait();
  buf[threadIdx.x] = v * 2;
  if (threadIdx.x % 2) {
    bar.arrive_and_drop();
  } else {
    bar.arrive_and_wait();
    v += buf[(threadIdx.x + 2) % blockDim.x];
    bar.arrive_and_wait();  // only the even threads take part now
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// Spin-waits: thread 0 waits for a flag the block's last thread sets (volatile shared flag, no
// nanosleep), then thread 1 for one set by thread 0 with __nanosleep between polls.
extern "C" __global__ void spin_flags(int* out) {
  __shared__ volatile int flag;
  __shared__ volatile int flag2;
  if (threadIdx.x == 0) {
    flag2 = 0;
    flag = 0;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    while (flag == 0) {
    }
    out[0] = flag;
    flag2 = 7;
  } else if (threadIdx.x == 1) {
    while (flag2 == 0) __nanosleep(100);
    out[1] = flag2;
  } else if (threadIdx.x == blockDim.x - 1) {
    flag = 42;
  }
}

// Cooperative launch, no grid.sync(): block 0 spins on a flag the last block sets.
extern "C" __global__ void wait_for_last_block(volatile int* flag, int* out) {
  if (threadIdx.x != 0) return;
  if (blockIdx.x == 0) {
    while (*flag == 0) {
    }
    out[0] = *flag;
  } else if (blockIdx.x == gridDim.x - 1) {
    *flag = 1000 + blockIdx.x;
  }
}

// Named barriers: warp 0 produces into shared memory and arrives at barrier 1; warp 1
// consumes after bar.sync 1, 64. Then warp 1 produces for warp 0 through barrier 2.
extern "C" __global__ void producer_consumer(int* out) {
  __shared__ int data[64];
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  if (w == 0) {
    data[l] = l * l;
    asm volatile("bar.arrive 1, 64;" ::: "memory");
    asm volatile("bar.sync 2, 64;" ::: "memory");
    out[64 + l] = data[32 + l];
  } else {
    asm volatile("bar.sync 1, 64;" ::: "memory");
    out[l] = data[31 - l] + 1;
    data[32 + l] = 100 + l;
    asm volatile("barrier.arrive 2, 64;" ::: "memory");
  }
}

// exit inside a device function ends the thread: odd threads never write 2.
__device__ __noinline__ void maybe_quit(int* out, int t) {
  out[t] = 1;
  if (t % 2) asm volatile("exit;");
}
extern "C" __global__ void quit_early(int* out) {
  const int t = threadIdx.x;
  maybe_quit(out, t);
  out[t] += 1;
}

// mbarrier forms through inline PTX: init, arrive (count), expect_tx/complete_tx,
// test_wait with a state and with .parity, pending_count, inval.
extern "C" __global__ void mbarrier_forms(unsigned long long* out) {
  __shared__ unsigned long long mb;
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(&mb));
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(a), "r"(blockDim.x));
  __syncthreads();
  unsigned long long state;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(a), "r"(16));
  }
  __syncthreads();
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(a) : "memory");
  unsigned pending;
  asm volatile("mbarrier.pending_count.b64 %0, %1;" : "=r"(pending) : "l"(state));
  __syncthreads();
  unsigned done_before = 0;
  asm volatile(
      "{ .reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
      : "=r"(done_before) : "r"(a), "l"(state) : "memory");
  __syncthreads();
  if (threadIdx.x == 0)
    asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(a), "r"(16));
  __syncthreads();
  unsigned done_after = 0, parity0 = 0, parity1 = 0;
  asm volatile(
      "{ .reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
      : "=r"(done_after) : "r"(a), "l"(state) : "memory");
  asm volatile(
      "{ .reg .pred p; mbarrier.test_wait.parity.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
      : "=r"(parity0) : "r"(a), "r"(0) : "memory");
  asm volatile(
      "{ .reg .pred p; mbarrier.test_wait.parity.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
      : "=r"(parity1) : "r"(a), "r"(1) : "memory");
  __syncthreads();
  if (threadIdx.x == 0) asm volatile("mbarrier.inval.shared.b64 [%0];" ::"r"(a));
  out[threadIdx.x] = pending | (done_before << 16) | (done_after << 17) | (parity0 << 18) |
                     (parity1 << 19);
}

// Video instructions as nvcc emits them (__vabsdiffu4/s4 -> vabsdiff4, __vsadu2/__vsads4 ->
// vabsdiff2/4 .add).
extern "C" __global__ void video(const unsigned* a, const unsigned* b, unsigned* out) {
  const int i = threadIdx.x;
  const unsigned x = a[i], y = b[i];
  out[i * 4 + 0] = __vabsdiffu4(x, y);
  out[i * 4 + 1] = __vabsdiffs4(x, y);
  out[i * 4 + 2] = __vsadu2(x, y);
  out[i * 4 + 3] = __vsadu4(x, y);
}
