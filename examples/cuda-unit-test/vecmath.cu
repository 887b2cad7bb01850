#include "vecmath.h"

namespace {

__global__ void axpy_kernel(float a, const float* x, float* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = a * x[i] + y[i];
}

__global__ void sum_kernel(const int* v, std::size_t n, unsigned long long* total) {
  __shared__ long long warp_sums[32];
  long long s = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    s += v[i];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    long long b = 0;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) b += warp_sums[w];
    atomicAdd(total, static_cast<unsigned long long>(b));
  }
}

__global__ void scan_kernel(const int* v, std::size_t n, int* out) {
  __shared__ int buf[2][256];
  const std::size_t i = blockIdx.x * 256 + threadIdx.x;
  int cur = 0;
  buf[0][threadIdx.x] = i < n ? v[i] : 0;
  __syncthreads();
  for (unsigned d = 1; d < 256; d <<= 1) {
    const int x = buf[cur][threadIdx.x];
    buf[1 - cur][threadIdx.x] = threadIdx.x >= d ? x + buf[cur][threadIdx.x - d] : x;
    cur = 1 - cur;
    __syncthreads();
  }
  if (i < n) out[i] = buf[cur][threadIdx.x];
}

template <class T>
struct Device {
  T* p = nullptr;
  cudaError_t alloc(std::size_t n) { return cudaMalloc(&p, n * sizeof(T)); }
  ~Device() { cudaFree(p); }
};

#define TRY(call)                            \
  do {                                       \
    const cudaError_t e_ = (call);           \
    if (e_ != cudaSuccess) return e_;        \
  } while (0)

}  // namespace

cudaError_t vec_axpy(float a, const float* x, float* y, std::size_t n) {
  Device<float> dx, dy;
  TRY(dx.alloc(n));
  TRY(dy.alloc(n));
  TRY(cudaMemcpy(dx.p, x, n * sizeof(float), cudaMemcpyHostToDevice));
  TRY(cudaMemcpy(dy.p, y, n * sizeof(float), cudaMemcpyHostToDevice));
  axpy_kernel<<<32, 128>>>(a, dx.p, dy.p, n);
  TRY(cudaGetLastError());
  return cudaMemcpy(y, dy.p, n * sizeof(float), cudaMemcpyDeviceToHost);
}

cudaError_t vec_sum(const int* v, std::size_t n, long long* sum) {
  Device<int> dv;
  Device<unsigned long long> dt;
  TRY(dv.alloc(n));
  TRY(dt.alloc(1));
  TRY(cudaMemcpy(dv.p, v, n * sizeof(int), cudaMemcpyHostToDevice));
  TRY(cudaMemset(dt.p, 0, sizeof(unsigned long long)));
  sum_kernel<<<16, 256>>>(dv.p, n, dt.p);
  TRY(cudaGetLastError());
  unsigned long long t = 0;
  TRY(cudaMemcpy(&t, dt.p, sizeof t, cudaMemcpyDeviceToHost));
  *sum = static_cast<long long>(t);
  return cudaSuccess;
}

cudaError_t vec_block_scan(const int* v, std::size_t n, int* out) {
  Device<int> dv, dout;
  TRY(dv.alloc(n));
  TRY(dout.alloc(n));
  TRY(cudaMemcpy(dv.p, v, n * sizeof(int), cudaMemcpyHostToDevice));
  scan_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(dv.p, n, dout.p);
  TRY(cudaGetLastError());
  return cudaMemcpy(out, dout.p, n * sizeof(int), cudaMemcpyDeviceToHost);
}
