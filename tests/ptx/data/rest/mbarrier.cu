// Fixture (h-mbarrier, issue 15): kernels whose mbarrier waits (cuda::barrier on compute_80/90;
// the software barrier on 75) run on split twins, in a file of their own so that rest.cu's PTX
// (and the shape nvcc gives its cuda::barrier waits there) stays as it was. nvcc 13.0,
// make_fixtures.sh.
#include <cuda/barrier>

// A block of up to 1024 threads on one cuda::barrier (mbarrier on compute_80/90): each round
// every thread publishes its value, waits, adds its right neighbour's, and waits again.
extern "C" __global__ void mbarrier_wide(unsigned* out, int rounds) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  __shared__ unsigned buf[1024];
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  unsigned v = threadIdx.x + blockIdx.x * 10000u;
  for (int r = 0; r < rounds; ++r) {
    buf[threadIdx.x] = v;
    bar.arrive_and_wait();
    v += buf[(threadIdx.x + 1) % blockDim.x];
    bar.arrive_and_wait();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// The wait inside a device function that the kernel calls (not inlined).
__device__ __noinline__ void arrive_and_wait_in_func(cuda::barrier<cuda::thread_scope_block>& bar) {
  bar.arrive_and_wait();
}
extern "C" __global__ void mbarrier_in_func(int* out) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  __shared__ int buf[256];
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  buf[threadIdx.x] = threadIdx.x * 7 + blockIdx.x;
  arrive_and_wait_in_func(bar);
  out[blockIdx.x * blockDim.x + threadIdx.x] = buf[(threadIdx.x + 1) % blockDim.x];
}

// Cooperative launch: the first blocks wait on a barrier that expects one arrival more than
// their threads make (it never completes); the last block traps, which ends the launch.
extern "C" __global__ void wait_forever_or_trap(int* reached) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (blockIdx.x == gridDim.x - 1) {
    if (threadIdx.x == 0) __trap();
    return;
  }
  if (threadIdx.x == 0) init(&bar, blockDim.x + 1);
  __syncthreads();
  bar.arrive_and_wait();
  reached[blockIdx.x] = 1;
}
