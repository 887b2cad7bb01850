// Issue 14: a registered kernel's <<<>>> launch rate and first-launch (lazy module load) time,
// in an ordinary nvcc-built program. Run it twice in one session, once on NVIDIA's driver
// directly and once with cudamux's libraries first on the library path (scripts/gpu-run.sh
// step "nvcc" does both and prints the ratios); each run prints its own numbers:
//   first_launch_us <time of the first launch + synchronize, which loads the module>
//   launches_per_s  <median of 7 rounds of 20000 empty launches + one synchronize>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

__global__ void empty_kernel(int) {}

int main() {
  using clock = std::chrono::steady_clock;
  if (cudaFree(nullptr) != cudaSuccess) {  // runtime and context initialised outside the timing
    std::printf("no device\n");
    return 1;
  }
  const auto t0 = clock::now();
  empty_kernel<<<1, 1>>>(0);
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  const double first_us = std::chrono::duration<double, std::micro>(clock::now() - t0).count();
  constexpr int kLaunches = 20000;
  std::vector<double> rates;
  for (int round = 0; round < 7; ++round) {
    const auto start = clock::now();
    for (int i = 0; i < kLaunches; ++i) empty_kernel<<<1, 32>>>(i);
    if (cudaDeviceSynchronize() != cudaSuccess) return 1;
    rates.push_back(kLaunches / std::chrono::duration<double>(clock::now() - start).count());
  }
  std::sort(rates.begin(), rates.end());
  std::printf("first_launch_us %.1f\nlaunches_per_s %.0f\n", first_us, rates[3]);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
