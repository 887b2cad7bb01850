// The mbarrier kernel of bench/ptx_bench.cpp; mbarrier.compute_80.ptx is nvcc's PTX of this
// file (make_ptx.sh; nvcc is not needed to build or run the benchmark). compute_80: there
// cuda::barrier is mbarrier.arrive + mbarrier.test_wait (compute_75 has no mbarrier).
#include <cuda/barrier>
#include <cuda/ptx>

// kernels.cu's block_sum with cuda::barrier's arrive_and_wait instead of __syncthreads.
extern "C" __global__ void block_sum_mbarrier(const float* in, float* out) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  __shared__ float s[256];
  const unsigned t = threadIdx.x;
  if (t == 0) init(&bar, blockDim.x);
  __syncthreads();
  s[t] = in[blockIdx.x * 256 + t];
  bar.arrive_and_wait();
  for (unsigned d = 128; d > 0; d /= 2) {
    if (t < d) s[t] += s[t + d];
    bar.arrive_and_wait();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// The same with cuda::ptx's mbarrier instructions (init, arrive, a test_wait loop): no back-off
// and no %globaltimer reads (cuda::barrier reads the timer at every wait).
__device__ __forceinline__ void arrive_and_wait(cuda::std::uint64_t* mb) {
  const cuda::std::uint64_t state = cuda::ptx::mbarrier_arrive(mb);
  while (!cuda::ptx::mbarrier_test_wait(mb, state)) {
  }
}
extern "C" __global__ void block_sum_mbarrier_ptx(const float* in, float* out) {
  __shared__ cuda::std::uint64_t mb;
  __shared__ float s[256];
  const unsigned t = threadIdx.x;
  if (t == 0) cuda::ptx::mbarrier_init(&mb, blockDim.x);
  __syncthreads();
  s[t] = in[blockIdx.x * 256 + t];
  arrive_and_wait(&mb);
  for (unsigned d = 128; d > 0; d /= 2) {
    if (t < d) s[t] += s[t + d];
    arrive_and_wait(&mb);
  }
  if (t == 0) out[blockIdx.x] = s[0];
}
