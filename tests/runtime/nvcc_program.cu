// A CUDA program as nvcc builds it (`nvcc -cudart shared`, NVIDIA's headers): its host
// code must run on our libcudart.so.13 on the mock. Memory, streams, events and
// __device__/__constant__ variables work, and the kernel runs from the fat binary's PTX
// (issue 15).
#include <cstdio>
#include <cstring>

__device__ int scale_factor = 3;
__constant__ float coefficients[4];

__global__ void scale(int* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= scale_factor;
}

static int failures = 0;
#define EXPECT(cond)                                                 \
  do {                                                               \
    if (!(cond)) {                                                   \
      std::fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                    \
    }                                                                \
  } while (0)
#define OK(call) EXPECT((call) == cudaSuccess)

int main() {
  constexpr int n = 64;
  int host[n];
  for (int i = 0; i < n; ++i) host[i] = i;
  int* dev = nullptr;
  cudaStream_t stream;
  cudaEvent_t start, stop;
  OK(cudaMalloc(&dev, sizeof host));
  OK(cudaStreamCreate(&stream));
  OK(cudaEventCreate(&start));
  OK(cudaEventCreate(&stop));
  OK(cudaEventRecord(start, stream));
  OK(cudaMemcpyAsync(dev, host, sizeof host, cudaMemcpyHostToDevice, stream));
  OK(cudaMemsetAsync(dev, 0, sizeof(int) * 8, stream));
  OK(cudaMemcpyAsync(host, dev, sizeof host, cudaMemcpyDeviceToHost, stream));
  OK(cudaEventRecord(stop, stream));
  OK(cudaStreamSynchronize(stream));
  float ms = -1;
  OK(cudaEventElapsedTime(&ms, start, stop));
  EXPECT(ms >= 0);
  for (int i = 0; i < n; ++i) EXPECT(host[i] == (i < 8 ? 0 : i));

  // __device__ and __constant__ variables through the symbol API.
  // (Initial values live in the fat binary, which cudamux does not read yet: write first.)
  int factor = 5;
  OK(cudaMemcpyToSymbol(scale_factor, &factor, sizeof factor));
  factor = 0;
  OK(cudaMemcpyFromSymbol(&factor, scale_factor, sizeof factor));
  EXPECT(factor == 5);
  const float c[4] = {1.5f, 2.5f, 3.5f, 4.5f};
  float back[4] = {};
  OK(cudaMemcpyToSymbolAsync(coefficients, c, sizeof c, 0, cudaMemcpyHostToDevice, stream));
  OK(cudaMemcpyFromSymbolAsync(back, coefficients, sizeof back, 0, cudaMemcpyDeviceToHost, stream));
  OK(cudaStreamSynchronize(stream));
  EXPECT(std::memcmp(c, back, sizeof c) == 0);
  EXPECT(cudaMemcpyToSymbol(coefficients, c, sizeof c + 4) == cudaErrorInvalidValue);
  (void)cudaGetLastError();

  // The launch: the kernel reads the __device__ variable written above.
  scale<<<1, n, 0, stream>>>(dev, n);
  const cudaError_t launch = cudaGetLastError();
  EXPECT(launch == cudaSuccess);
  std::printf("kernel launch: %s (%s)\n", cudaGetErrorName(launch), cudaGetErrorString(launch));
  OK(cudaMemcpyAsync(host, dev, sizeof host, cudaMemcpyDeviceToHost, stream));
  OK(cudaStreamSynchronize(stream));
  for (int i = 0; i < n; ++i) EXPECT(host[i] == (i < 8 ? 0 : i * 5));

  OK(cudaEventDestroy(start));
  OK(cudaEventDestroy(stop));
  OK(cudaStreamDestroy(stream));
  OK(cudaFree(dev));
  std::printf("nvcc program on cudamux: %s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
