// Fixture of the lazy compilation tests (tests/ptx/lazy_test.cpp): kernels compiled one by one
// at their first launch share the module's variables.
__device__ int counter = 5;
__device__ int table[4] = {10, 20, 30, 40};
__device__ int* tp = &table[1];  // initialised with another variable's address
__constant__ float scale = 2.0f;

__device__ __noinline__ int helper(int x) { return x * 3 + table[x & 3]; }

extern "C" __global__ void bump(int by) { atomicAdd(&counter, by); }
extern "C" __global__ void read_counter(int* out) {
  out[0] = counter;
  out[1] = *tp;
}
extern "C" __global__ void apply(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = helper(i) * scale;
}
extern "C" __global__ void add_const(int* out) { out[threadIdx.x] = threadIdx.x + 1234567; }
extern "C" __global__ void __launch_bounds__(128) bounded(float* out) {
  __shared__ float s[64];
  s[threadIdx.x & 63] = out[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = s[(threadIdx.x + 1) & 63];
}
