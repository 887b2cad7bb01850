// Issue 14, GPU machine: cuBLAS (NVIDIA's library, through the static runtime) multiplies
// random matrices on whatever libcuda comes first; scripts/gpu-nvcc.sh runs it on NVIDIA's
// driver and through cudamux. Picks kernels by cluster occupancy on sm_90, so it checks that
// cudamux answers occupancy as the device does. Prints the status of each step and the
// largest error against a double-precision reference.
//   cublas_gemm <n>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 256;
  std::mt19937 rng(42);
  std::normal_distribution<float> normal;
  std::vector<float> a(static_cast<size_t>(n) * n), b(a.size()), c(a.size());
  for (float& v : a) v = normal(rng);
  for (float& v : b) v = normal(rng);
  cublasHandle_t handle = nullptr;
  cublasStatus_t st = cublasCreate(&handle);
  std::printf("cublasCreate %d\n", static_cast<int>(st));
  if (st != CUBLAS_STATUS_SUCCESS) return 1;
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  const size_t bytes = a.size() * sizeof(float);
  if (cudaMalloc(&da, bytes) || cudaMalloc(&db, bytes) || cudaMalloc(&dc, bytes)) return 2;
  cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice);
  const float one = 1, zero = 0;
  st = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, da, n, db, n, &zero, dc, n);
  std::printf("cublasSgemm %d\n", static_cast<int>(st));
  const cudaError_t sync = cudaDeviceSynchronize();
  std::printf("cudaDeviceSynchronize %d\n", static_cast<int>(sync));
  cudaMemcpy(c.data(), dc, bytes, cudaMemcpyDeviceToHost);
  double worst = 0;
  for (int i = 0; i < n; i += std::max(1, n / 64)) {  // column-major: c[i + j*n]
    for (int j = 0; j < n; j += std::max(1, n / 64)) {
      double ref = 0;
      for (int k = 0; k < n; ++k) ref += double(a[i + size_t(k) * n]) * b[k + size_t(j) * n];
      worst = std::max(worst, std::fabs(ref - c[i + size_t(j) * n]));
    }
  }
  const bool ok = st == CUBLAS_STATUS_SUCCESS && sync == cudaSuccess && worst < 1e-2;
  std::printf("n %d max_error_below_1e-2 %s\n", n, ok ? "true" : "false");
  cublasDestroy(handle);
  return ok ? 0 : 3;
}
