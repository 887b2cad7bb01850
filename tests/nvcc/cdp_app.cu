// Dynamic parallelism (nvcc -rdc=true -lcudadevrt): kernels launch child grids from device
// code, two levels deep, from several blocks, with arguments, dynamic shared memory and a
// device-side printf. Prints "PASS" and exits 0 when every value is right. On the mock, the
// children run after their parent grid (CUDA guarantees only that they finish before it does).
#include <cuda_runtime.h>

#include <cstdio>

constexpr int kParents = 4;
constexpr int kPerParent = 8;  // threads of each child grid, each launching kPerChild grids
constexpr int kPerChild = 2;

__global__ void grandchild(int* out, int base) {
  extern __shared__ int scratch[];
  scratch[threadIdx.x] = base + static_cast<int>(threadIdx.x);
  __syncthreads();
  out[base + threadIdx.x] = scratch[blockDim.x - 1 - threadIdx.x] * 2;
}

__global__ void child(int* out, int* counts, int parent) {
  const int slot = parent * kPerParent + static_cast<int>(threadIdx.x);
  atomicAdd(&counts[parent], 1);
  for (int g = 0; g < kPerChild; ++g) {
    const int base = (slot * kPerChild + g) * 32;
    grandchild<<<1, 32, 32 * sizeof(int)>>>(out, base);
  }
}

__global__ void parent(int* out, int* counts) {
  if (threadIdx.x == 0) {
    child<<<1, kPerParent>>>(out, counts, static_cast<int>(blockIdx.x));
    if (blockIdx.x == 0) printf("cdp_app: parent block 0 launched its children\n");
  }
}

int main() {
  constexpr int n = kParents * kPerParent * kPerChild * 32;
  int *out = nullptr, *counts = nullptr;
  if (cudaMalloc(&out, n * sizeof(int)) != cudaSuccess ||
      cudaMalloc(&counts, kParents * sizeof(int)) != cudaSuccess ||
      cudaMemset(out, 0xff, n * sizeof(int)) != cudaSuccess ||
      cudaMemset(counts, 0, kParents * sizeof(int)) != cudaSuccess) {
    std::printf("FAIL: setup\n");
    return 1;
  }
  parent<<<kParents, 32>>>(out, counts);
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    std::printf("FAIL: %s\n", cudaGetErrorString(e));
    return 1;
  }
  static int h[n];
  int hc[kParents];
  cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
  cudaMemcpy(hc, counts, sizeof hc, cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int p = 0; p < kParents; ++p) bad += hc[p] != kPerParent;
  for (int slot = 0; slot < kParents * kPerParent; ++slot)
    for (int g = 0; g < kPerChild; ++g)
      for (int t = 0; t < 32; ++t) {
        const int base = (slot * kPerChild + g) * 32;
        bad += h[base + t] != (base + 31 - t) * 2;
      }
  std::printf("%s (%d wrong)\n", bad == 0 ? "PASS" : "FAIL", bad);
  return bad == 0 ? 0 : 1;
}
