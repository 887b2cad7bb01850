// Relocatable device code (nvcc -rdc=true), part 1 of 2 (see rdc_lib.cu): a program of two
// files whose device code calls across them, built as CMake's CUDA_SEPARABLE_COMPILATION
// builds it (each file -rdc=true -c, then one nvcc link with its device link step). On the
// mock, the linked fat binary holds only SASS; the objects' PTX (in __nv_relfatbin) is
// linked and run. Prints "PASS" and exits 0 when every value is right.
#include <cuda_runtime.h>

#include <cstdio>

extern __device__ int bias;               // defined in rdc_lib.cu
static __device__ int own_value = 30000;  // this file's own (rdc_lib.cu has one too)
__device__ int transformed(int i);        // defined in rdc_lib.cu
__global__ void fill_from_lib(int* out, int n);

__device__ int scale_of(int i) { return 3 * i; }

__global__ void fill_here(int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = transformed(i) + bias + own_value;
  if (i == 0) printf("rdc_main: fill_here ran\n");
}

#define CHECK(x)                                                                          \
  do {                                                                                    \
    const cudaError_t e = (x);                                                            \
    if (e != cudaSuccess) {                                                               \
      std::printf("FAIL: %s: %s (%s)\n", #x, cudaGetErrorName(e), cudaGetErrorString(e)); \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

int main() {
  constexpr int n = 300;
  int* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(int)));
  // The variable of rdc_lib.cu, written from this file through its extern declaration.
  const int new_bias = 11;
  CHECK(cudaMemcpyToSymbol(bias, &new_bias, sizeof new_bias));
  int h[n];
  int bad = 0;
  fill_from_lib<<<(n + 127) / 128, 128>>>(d, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) bad += h[i] != 3 * i + 11 + 2000;
  fill_here<<<(n + 127) / 128, 128>>>(d, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) bad += h[i] != 3 * i + 11 + 2000 + 11 + 30000;
  int read_back = 0;
  CHECK(cudaMemcpyFromSymbol(&read_back, bias, sizeof read_back));
  bad += read_back != new_bias;
  CHECK(cudaFree(d));
  std::printf("%s (%d wrong)\n", bad == 0 ? "PASS" : "FAIL", bad);
  return bad == 0 ? 0 : 1;
}
