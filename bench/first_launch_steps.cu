// Issue 14: where the first launch of a registered kernel spends its time, step by step, in an
// ordinary nvcc-built program. Run once on NVIDIA's driver directly and once with cudamux's
// libraries first on the library path; each run prints one line per step (microseconds):
//   attributes_us  cudaFuncGetAttributes of a kernel never launched (loads the module)
//   launch_us      its first <<<>>> launch, without waiting
//   sync_us        the synchronize after it
//   second_us      first launch + synchronize of another kernel of the same module
//   steady_us      one more launch + synchronize of that kernel (the floor)
// bench_registered_launch.cu measures the whole first launch; this one says which part of it
// a difference comes from.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>

__global__ void first_kernel(int* out) {
  if (out != nullptr) *out = 1;
}
__global__ void second_kernel(int* out) {
  if (out != nullptr) *out = 2;
}

namespace {
using Clock = std::chrono::steady_clock;
double since_us(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}
}  // namespace

int main() {
  if (cudaFree(nullptr) != cudaSuccess) {  // runtime and context initialised outside the timing
    std::printf("no device\n");
    return 1;
  }
  cudaFuncAttributes attributes{};
  auto t0 = Clock::now();
  if (cudaFuncGetAttributes(&attributes, first_kernel) != cudaSuccess) return 1;
  const double attributes_us = since_us(t0);

  t0 = Clock::now();
  first_kernel<<<1, 1>>>(nullptr);
  const double launch_us = since_us(t0);
  t0 = Clock::now();
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  const double sync_us = since_us(t0);

  t0 = Clock::now();
  second_kernel<<<1, 1>>>(nullptr);
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  const double second_us = since_us(t0);

  t0 = Clock::now();
  second_kernel<<<1, 1>>>(nullptr);
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  const double steady_us = since_us(t0);

  std::printf("attributes_us %.1f\nlaunch_us %.1f\nsync_us %.1f\nsecond_us %.1f\nsteady_us %.1f\n",
              attributes_us, launch_us, sync_us, second_us, steady_us);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
