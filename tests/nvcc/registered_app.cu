// An ordinary nvcc-built CUDA program (issue 14): kernels in a fat binary registered with
// __cudaRegisterFatBinary, launched with <<<>>>, device variables with initial values reached
// through cudaMemcpyToSymbol / FromSymbol / cudaGetSymbolAddress, function attributes and
// occupancy of a registered kernel. Built by the tests with nvcc (-cudart shared and static).
//
//   registered_app run        every call must succeed and every result be exact (exit 0)
//   registered_app no-image   the backend runs no code from the fat binary: launches and
//                             attribute queries answer cudaErrorNoKernelImageForDevice, while
//                             host-side work and device variables still work (exit 0): what
//                             cudamux's runtime does (-cudart shared)
//   registered_app no-image-static
//                             the same through NVIDIA's static runtime, which needs the module
//                             for variables too: they answer cudaErrorNoKernelImageForDevice
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__device__ int counter = 42;
__constant__ float coefficients[4] = {1.5f, 2.5f, 3.5f, 4.5f};

static int failures = 0;
#define EXPECT(cond)                                                        \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                           \
    }                                                                       \
  } while (0)
#define EXPECT_OK(call) EXPECT_CODE(call, cudaSuccess)
#define EXPECT_CODE(call, code)                                                              \
  do {                                                                                       \
    const cudaError_t e_ = (call);                                                           \
    if (e_ != (code)) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s gave %s, expected %s\n", __FILE__, __LINE__, #call,   \
                   cudaGetErrorName(e_), cudaGetErrorName(code));                            \
      ++failures;                                                                            \
    }                                                                                        \
  } while (0)

int main(int argc, char** argv) {
  const bool runs = argc > 1 && std::strcmp(argv[1], "run") == 0;
  const bool variables = runs || (argc > 1 && std::strcmp(argv[1], "no-image") == 0);
  const cudaError_t launch_code = runs ? cudaSuccess : cudaErrorNoKernelImageForDevice;
  const cudaError_t variable_code = variables ? cudaSuccess : cudaErrorNoKernelImageForDevice;

  int devices = 0;
  EXPECT_OK(cudaGetDeviceCount(&devices));
  EXPECT(devices > 0);

  // Device variables: initial values from the program, writes and reads back.
  int value = 0;
  float coeff[4] = {};
  const int seven = 7;
  void* address = nullptr;
  size_t size = 0;
  EXPECT_CODE(cudaMemcpyFromSymbol(&value, counter, sizeof value), variable_code);
  EXPECT_CODE(cudaMemcpyFromSymbol(coeff, coefficients, sizeof coeff), variable_code);
  if (variables) {
    EXPECT(value == 42);
    EXPECT(coeff[0] == 1.5f && coeff[3] == 4.5f);
    EXPECT_OK(cudaMemcpyToSymbol(counter, &seven, sizeof seven));
    EXPECT_OK(cudaMemcpyFromSymbol(&value, counter, sizeof value));
    EXPECT(value == 7);
    EXPECT_OK(cudaGetSymbolAddress(&address, counter));
    EXPECT_OK(cudaGetSymbolSize(&size, coefficients));
    EXPECT(address != nullptr && size == sizeof coeff);
  }
  (void)cudaGetLastError();

  // A kernel: <<<>>> and cudaLaunchKernel.
  const int n = 1000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f;
  }
  float *dx = nullptr, *dy = nullptr;
  EXPECT_OK(cudaMalloc(&dx, n * sizeof(float)));
  EXPECT_OK(cudaMalloc(&dy, n * sizeof(float)));
  EXPECT_OK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  EXPECT_OK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  saxpy<<<(n + 127) / 128, 128>>>(n, 2.0f, dx, dy);
  EXPECT_CODE(cudaGetLastError(), launch_code);
  int nn = n;
  float a = 3.0f;
  void* args[] = {&nn, &a, &dx, &dy};
  EXPECT_CODE(cudaLaunchKernel(reinterpret_cast<const void*>(saxpy), dim3((n + 127) / 128),
                               dim3(128), args, 0, nullptr),
              launch_code);
  EXPECT_OK(cudaDeviceSynchronize());
  EXPECT_OK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  if (runs) {
    int wrong = 0;
    for (int i = 0; i < n; ++i) wrong += y[i] != 1.0f + 5.0f * static_cast<float>(i);
    EXPECT(wrong == 0);
  } else {
    EXPECT(y[10] == 1.0f);  // nothing ran
  }

  // Attributes and occupancy of a registered kernel.
  cudaFuncAttributes attributes{};
  EXPECT_CODE(cudaFuncGetAttributes(&attributes, saxpy), launch_code);
  int blocks = 0;
  EXPECT_CODE(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, saxpy, 128, 0), launch_code);
  if (runs) EXPECT(attributes.maxThreadsPerBlock >= 128 && blocks >= 1);

  EXPECT_OK(cudaFree(dx));
  EXPECT_OK(cudaFree(dy));
  std::printf("registered_app %s: %s\n", argc > 1 ? argv[1] : "?", failures == 0 ? "PASS" : "FAIL");
  return failures == 0 ? 0 : 1;
}
