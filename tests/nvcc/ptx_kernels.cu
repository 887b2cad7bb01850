// Kernels as nvcc builds them (issue 15): on the mock they run from the fat binary's PTX,
// translated by cudamux's PTX front end. Each case computes on the device and checks the
// result on the host against the same algorithm in plain C++; the program prints one line per
// case and exits non-zero when any fails. Built by tests/nvcc/CMakeLists.txt with nvcc's
// defaults (sm_75 SASS + compute_75 PTX) and both runtimes.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

int failures = 0;

void report(const char* name, bool ok, const char* detail = "") {
  std::printf("%s: %s%s%s\n", name, ok ? "ok" : "FAIL", detail[0] ? " " : "", detail);
  if (!ok) ++failures;
}

#define CHECK_CUDA(call)                                                                     \
  do {                                                                                       \
    const cudaError_t e_ = (call);                                                           \
    if (e_ != cudaSuccess) {                                                                 \
      std::printf("%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      return false;                                                                          \
    }                                                                                        \
  } while (0)

template <class T>
struct DeviceBuffer {
  T* p = nullptr;
  explicit DeviceBuffer(std::size_t n) { cudaMalloc(&p, n * sizeof(T)); }
  ~DeviceBuffer() { cudaFree(p); }
};

// ---- kernels ----
__global__ void saxpy(int n, float a, const float* x, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void block_sum(const int* in, int* out, int n) {
  __shared__ int partial[256];
  const unsigned t = threadIdx.x;
  const unsigned i = blockIdx.x * blockDim.x + t;
  partial[t] = i < static_cast<unsigned>(n) ? in[i] : 0;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) partial[t] += partial[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}

__global__ void warp_sum(const int* in, int* out) {
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const unsigned ballot = __ballot_sync(0xffffffffu, (threadIdx.x & 1) != 0);
  if ((threadIdx.x & 31) == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = v + (ballot == 0xaaaaaaaau ? 0 : 1000000);
}

__global__ void histogram(const unsigned char* in, int n, unsigned* bins) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&bins[in[i] % 16], 1u);
}

__device__ __noinline__ unsigned long long fib(unsigned n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
__global__ void recursion(unsigned long long* out) { out[threadIdx.x] = fib(threadIdx.x); }

struct Params {
  float scale;
  int offset;
  double bias[2];
};
__constant__ float c_table[4] = {1.5f, -2.0f, 0.25f, 8.0f};
__device__ int d_counter = 7;
__global__ void by_value(Params p, float* out) {
  const int t = threadIdx.x;
  out[t] = p.scale * c_table[t % 4] + static_cast<float>(p.offset + p.bias[t % 2]) + d_counter;
}

__global__ void dynamic_shared(float* data) {
  extern __shared__ float tile[];
  const unsigned t = threadIdx.x;
  tile[blockDim.x - 1 - t] = data[blockIdx.x * blockDim.x + t];
  __syncthreads();
  data[blockIdx.x * blockDim.x + t] = tile[t];
}

__global__ void math(const float* x, float* out, double* out_d, int* out_i) {
  const int t = threadIdx.x;
  const float v = x[t];
  out[4 * t + 0] = sqrtf(fabsf(v));
  out[4 * t + 1] = fminf(v, 0.5f) + fmaxf(v, -0.5f);
  out[4 * t + 2] = floorf(v * 3.0f) - ceilf(v);
  out[4 * t + 3] = v / (1.0f + fabsf(v));
  out_d[t] = static_cast<double>(v) * 1e-3 + sqrt(static_cast<double>(t));
  out_i[t] = static_cast<int>(v * 100.0f) / 7 + __popc(static_cast<unsigned>(t) * 2654435761u) +
             __clz(t + 1);
}

__global__ void local_array(const int* in, int* out) {
  int scratch[24];
  for (int i = 0; i < 24; ++i) scratch[i] = in[(i * 5 + threadIdx.x) % 24];
  int s = 0;
  for (int i = 0; i < 24; i += 1 + (threadIdx.x & 3)) s += scratch[i] * i;
  out[threadIdx.x] = s;
}

__global__ void printer(int v) {
  if (threadIdx.x == 0) printf("device printf: %d %s %.2f\n", v, "text", 1.25);
}

// ---- cases ----
bool case_saxpy() {
  const int n = 10000;
  std::vector<float> x(n), y(n), expect(n);
  for (int i = 0; i < n; ++i) {
    x[i] = 0.5f * static_cast<float>(i);
    y[i] = static_cast<float>(n - i);
    expect[i] = std::fma(3.0f, x[i], y[i]);  // nvcc contracts a * x + y into one fma
  }
  DeviceBuffer<float> dx(n), dy(n);
  CHECK_CUDA(cudaMemcpy(dx.p, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dy.p, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  saxpy<<<(n + 255) / 256, 256>>>(n, 3.0f, dx.p, dy.p);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpy(y.data(), dy.p, n * sizeof(float), cudaMemcpyDeviceToHost));
  return y == expect;
}

bool case_block_sum() {
  const int n = 5000, blocks = (n + 255) / 256;
  std::vector<int> in(n), out(blocks);
  for (int i = 0; i < n; ++i) in[i] = (i * 37) % 101 - 50;
  DeviceBuffer<int> din(n), dout(blocks);
  CHECK_CUDA(cudaMemcpy(din.p, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  block_sum<<<blocks, 256>>>(din.p, dout.p, n);
  CHECK_CUDA(cudaMemcpy(out.data(), dout.p, blocks * sizeof(int), cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b) {
    int s = 0;
    for (int i = b * 256; i < n && i < (b + 1) * 256; ++i) s += in[i];
    if (out[b] != s) return false;
  }
  return true;
}

bool case_warp_sum() {
  const int n = 256;
  std::vector<int> in(n), out(n / 32);
  for (int i = 0; i < n; ++i) in[i] = i * i % 17;
  DeviceBuffer<int> din(n), dout(n / 32);
  CHECK_CUDA(cudaMemcpy(din.p, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  warp_sum<<<2, 128>>>(din.p, dout.p);
  CHECK_CUDA(cudaMemcpy(out.data(), dout.p, out.size() * sizeof(int), cudaMemcpyDeviceToHost));
  for (int w = 0; w < n / 32; ++w) {
    int s = 0;
    for (int i = 0; i < 32; ++i) s += in[w * 32 + i];
    if (out[w] != s) return false;
  }
  return true;
}

bool case_histogram() {
  const int n = 100000;
  std::vector<unsigned char> in(n);
  std::vector<unsigned> expect(16, 0), bins(16);
  for (int i = 0; i < n; ++i) {
    in[i] = static_cast<unsigned char>((i * 7919) >> 3);
    ++expect[in[i] % 16];
  }
  DeviceBuffer<unsigned char> din(n);
  DeviceBuffer<unsigned> dbins(16);
  CHECK_CUDA(cudaMemcpy(din.p, in.data(), n, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(dbins.p, 0, 16 * sizeof(unsigned)));
  histogram<<<8, 128>>>(din.p, n, dbins.p);
  CHECK_CUDA(cudaMemcpy(bins.data(), dbins.p, 16 * sizeof(unsigned), cudaMemcpyDeviceToHost));
  return bins == expect;
}

bool case_recursion() {
  DeviceBuffer<unsigned long long> d(20);
  recursion<<<1, 20>>>(d.p);
  std::vector<unsigned long long> out(20);
  CHECK_CUDA(cudaMemcpy(out.data(), d.p, 20 * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  unsigned long long a = 0, b = 1;
  for (int i = 0; i < 20; ++i) {
    if (out[i] != a) return false;
    const unsigned long long c = a + b;
    a = b;
    b = c;
  }
  return true;
}

bool case_by_value() {
  const float table[4] = {1.5f, -2.0f, 0.25f, 8.0f};
  Params p{2.0f, 3, {0.5, -1.0}};
  DeviceBuffer<float> d(32);
  by_value<<<1, 32>>>(p, d.p);
  std::vector<float> out(32);
  CHECK_CUDA(cudaMemcpy(out.data(), d.p, 32 * sizeof(float), cudaMemcpyDeviceToHost));
  for (int t = 0; t < 32; ++t)
    if (out[t] != p.scale * table[t % 4] + static_cast<float>(p.offset + p.bias[t % 2]) + 7)
      return false;
  // The module's variables: cudaMemcpyFromSymbol reads the initial value and a write sticks.
  int counter = 0;
  CHECK_CUDA(cudaMemcpyFromSymbol(&counter, d_counter, sizeof counter));
  return counter == 7;
}

bool case_dynamic_shared() {
  const int threads = 64, blocks = 3, n = threads * blocks;
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  DeviceBuffer<float> d(n);
  CHECK_CUDA(cudaMemcpy(d.p, v.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  dynamic_shared<<<blocks, threads, threads * sizeof(float)>>>(d.p);
  CHECK_CUDA(cudaMemcpy(v.data(), d.p, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < threads; ++t)
      if (v[b * threads + t] != static_cast<float>(b * threads + threads - 1 - t)) return false;
  return true;
}

bool case_math() {
  const int n = 64;
  std::vector<float> x(n), out(4 * n);
  std::vector<double> out_d(n);
  std::vector<int> out_i(n);
  for (int i = 0; i < n; ++i) x[i] = (static_cast<float>(i) - 31.5f) * 0.37f;
  DeviceBuffer<float> dx(n), dout(4 * n);
  DeviceBuffer<double> dd(n);
  DeviceBuffer<int> di(n);
  CHECK_CUDA(cudaMemcpy(dx.p, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  math<<<1, n>>>(dx.p, dout.p, dd.p, di.p);
  CHECK_CUDA(cudaMemcpy(out.data(), dout.p, 4 * n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(out_d.data(), dd.p, n * sizeof(double), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(out_i.data(), di.p, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int t = 0; t < n; ++t) {
    const float v = x[t];
    // sqrtf and the division are correctly rounded in CUDA's default mode: exact equality.
    if (out[4 * t + 0] != std::sqrt(std::fabs(v))) return false;
    if (out[4 * t + 1] != std::fmin(v, 0.5f) + std::fmax(v, -0.5f)) return false;
    if (out[4 * t + 2] != std::floor(v * 3.0f) - std::ceil(v)) return false;
    if (out[4 * t + 3] != v / (1.0f + std::fabs(v))) return false;
    if (out_d[t] != std::fma(static_cast<double>(v), 1e-3, std::sqrt(static_cast<double>(t))))
      return false;
    const unsigned h = static_cast<unsigned>(t) * 2654435761u;
    const int expect = static_cast<int>(v * 100.0f) / 7 + __builtin_popcount(h) +
                       __builtin_clz(static_cast<unsigned>(t + 1));
    if (out_i[t] != expect) return false;
  }
  return true;
}

bool case_local_array() {
  std::vector<int> in(24), out(32);
  for (int i = 0; i < 24; ++i) in[i] = i * 3 - 20;
  DeviceBuffer<int> din(24), dout(32);
  CHECK_CUDA(cudaMemcpy(din.p, in.data(), 24 * sizeof(int), cudaMemcpyHostToDevice));
  local_array<<<1, 32>>>(din.p, dout.p);
  CHECK_CUDA(cudaMemcpy(out.data(), dout.p, 32 * sizeof(int), cudaMemcpyDeviceToHost));
  for (int t = 0; t < 32; ++t) {
    int scratch[24];
    for (int i = 0; i < 24; ++i) scratch[i] = in[(i * 5 + t) % 24];
    int s = 0;
    for (int i = 0; i < 24; i += 1 + (t & 3)) s += scratch[i] * i;
    if (out[t] != s) return false;
  }
  return true;
}

bool case_printf() {
  printer<<<1, 32>>>(42);
  CHECK_CUDA(cudaDeviceSynchronize());
  return true;  // the test's pattern checks the line the device printed
}

}  // namespace

int main() {
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    std::printf("no device\n");
    return 2;
  }
  std::printf("device: %s\n", prop.name);
  report("saxpy", case_saxpy());
  report("block_sum", case_block_sum());
  report("warp_sum", case_warp_sum());
  report("histogram", case_histogram());
  report("recursion", case_recursion());
  report("by_value", case_by_value());
  report("dynamic_shared", case_dynamic_shared());
  report("math", case_math());
  report("local_array", case_local_array());
  report("printf", case_printf());
  const cudaError_t last = cudaDeviceSynchronize();
  report("no sticky error", last == cudaSuccess, cudaGetErrorString(last));
  std::printf("%s: %d failure(s)\n", failures == 0 ? "PASS" : "FAIL", failures);
  return failures == 0 ? 0 : 1;
}
