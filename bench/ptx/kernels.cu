// The kernels of bench/ptx_bench.cpp; kernels.compute_75.ptx is nvcc's PTX of this file
// (make_ptx.sh; nvcc is not needed to build or run the benchmark).
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void block_sum(const float* in, float* out) {
  __shared__ float s[256];
  const unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * 256 + t];
  __syncthreads();
  for (unsigned d = 128; d > 0; d /= 2) {
    if (t < d) s[t] += s[t + d];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}
#define TILE 16
extern "C" __global__ void matmul(const float* a, const float* b, float* c, int n) {
  __shared__ float ta[TILE][TILE];
  __shared__ float tb[TILE][TILE];
  const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (int k0 = 0; k0 < n; k0 += TILE) {
    ta[threadIdx.y][threadIdx.x] = a[row * n + k0 + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = b[(k0 + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  c[row * n + col] = acc;
}
